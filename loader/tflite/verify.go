package tflite

import (
	"encoding/binary"
	"sync"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/region"
	"github.com/edgeload/edgeload/mmapfile"
)

// firstRegion is the length of the FlatBuffer region verified first: the
// FlatBuffer has no length of its own, so a region that does not hold every
// object is verified again four times longer, up to the whole file or the
// 2 GiB FlatBuffer limit.
const firstRegion = 4 << 20

// verify views the FlatBuffer region of m's file (m.fb) and verifies every
// table, vector and string, as LiteRT's Verifier does, the operators' and
// tensor parameters' tables aside: those are left to their first use,
// which verifies them with the same walk (m.walk). It returns what the
// walk collected and the bytes of the strings and vectors it reached (as
// often as it reached them: fbverify.Walk.VectorBytes).
//
// head, if not empty, is the file's first bytes, already read. A file of
// at most smallFile bytes is read whole (with head, one read at most) into
// a pooled buffer (m.region) the model keeps until Close: the mapping,
// which only the tensors' views point into, is not touched. A file of at
// most sparseFile bytes and sparseBuffers buffers is read into a pooled
// buffer of its size (m.sparse) only as far as the walk reads it
// (fbverify.Options.Fetch): the pages of its tables, strings and vectors,
// not the bytes of its constants. On error the caller puts m.region back.
func (m *Model) verify(head []byte) (c *collected, copies int64, err error) {
	mf := m.mf
	size := mf.Len()
	if size < 8 {
		return nil, 0, format.Wrapf(format.ErrTruncated, formatName, "", 0,
			"file of %d bytes is shorter than the 8-byte FlatBuffer prefix (root offset and %q)", size, Identifier)
	}
	if size <= smallFile && mf.Mode() != mmapfile.ModeMemory {
		h, hbuf, err := region.Head(mf, head)
		if err == nil {
			m.fb, m.region, err = region.Range(mf, h, hbuf, 0, size)
		}
		if err != nil {
			return nil, 0, format.Wrapf(format.ErrTruncated, formatName, "", 0, "reading the %d-byte file: %v", size, err)
		}
		return m.verifyRegion(true, nil)
	}
	if size <= sparseFile && mf.Mode() != mmapfile.ModeMemory {
		if len(head) < region.HeadLen {
			h, hbuf, err := region.Head(mf, head)
			if err != nil {
				return nil, 0, format.Wrapf(format.ErrTruncated, formatName, "", 0, "reading the file's first page: %v", err)
			}
			defer region.Put(hbuf)
			head = h
		}
		if bufferCount(mf, head) <= sparseBuffers {
			return m.verifySparse(head)
		}
	}
	limit := min(size, int64(fbverify.MaxSize))
	for n := min(limit, firstRegion); ; n = min(limit, 4*n) {
		if m.fb, err = mf.View(0, n); err != nil {
			return nil, 0, format.Wrapf(format.ErrTruncated, formatName, "", 0, "viewing the FlatBuffer region [0, %d): %v", n, err)
		}
		c, copies, err = m.verifyRegion(n == size, nil)
		if err == nil || n == limit {
			return c, copies, err
		}
		if c != nil {
			c.release()
		}
	}
}

// verifySparse verifies the FlatBuffer of m's file, of at most sparseFile
// bytes and whose first page is head, in a pooled buffer of the file's
// size that the walk fills as it reads it.
func (m *Model) verifySparse(head []byte) (*collected, int64, error) {
	size := m.mf.Len()
	buf, _ := images.Get().(*[]byte)
	if buf == nil || int64(len(*buf)) < size {
		b := make([]byte, size)
		buf = &b
	}
	fb := (*buf)[:size:size]
	m.fb, m.region, m.sparse = fb, buf, true
	fetch := func(lo, hi int64) error {
		lo += int64(copy(fb[lo:hi], head[min(lo, int64(len(head))):]))
		if lo < hi {
			if _, err := m.mf.ReadAt(fb[lo:hi], lo); err != nil {
				return format.Wrapf(format.ErrTruncated, formatName, "", lo, "reading bytes [%d, %d) of the FlatBuffer: %v", lo, hi, err)
			}
		}
		return nil
	}
	copy(fb, head[:8]) // the identifier, which verifyRegion checks first
	c, copies, err := m.verifyRegion(true, fetch)
	head = nil // the walk has read the first page: the first uses' fetches read the file
	return c, copies, err
}

// smallFile is the size up to which a file is read rather than mapped for
// its tables.
const smallFile = 64 << 10

// sparseFile is the size up to which a file's tables are read into a
// buffer as the walk reads them rather than through the mapping.
const sparseFile = 1 << 20

// sparseBuffers is the most buffers a file read sparsely has: the walk
// reads a page for each buffer's length.
const sparseBuffers = 16

// bufferCount returns the length of Model.buffers, as far as the file's
// first page (head) tells it, reading the vector's length from mf when it
// lies past the page; -1 when it cannot tell. It only chooses how verify
// reads the file: nothing it reads is trusted.
func bufferCount(mf *mmapfile.File, head []byte) int64 {
	u32 := func(p int64) int64 {
		if p < 0 || p > int64(len(head))-4 {
			return -1
		}
		return int64(le.Uint32(head[p:]))
	}
	root := u32(0)
	vto := u32(root)
	vt := root - int64(int32(vto))
	if vto < 0 || vt < 0 || vt > int64(len(head))-2 {
		return -1
	}
	const slot = 4 + 2*4 // Model.buffers, id 4
	if slot+2 > int64(le.Uint16(head[vt:])) || vt+slot+2 > int64(len(head)) {
		return 0
	}
	fo := int64(le.Uint16(head[vt+slot:]))
	off := u32(root + fo)
	if fo == 0 || off < 0 {
		return -1
	}
	vec := root + fo + off
	if n := u32(vec); n >= 0 {
		return n
	}
	var b [4]byte
	if _, err := mf.ReadAt(b[:], vec); err != nil {
		return -1
	}
	return int64(le.Uint32(b[:]))
}

// images holds the buffers of sparse reads (verifySparse).
var images sync.Pool // of *[]byte

// verifyRegion verifies the FlatBuffer region m.fb (the whole file when
// atEOF) with m.walk and returns what the walk collected and the bytes of
// strings and vectors it reached. fetch, if not nil, fills m.fb as the walk
// reads it (fbverify.Options.Fetch); the walk then fills the bytes of any
// vector the first uses verify (the custom quantization's among them).
func (m *Model) verifyRegion(atEOF bool, fetch func(lo, hi int64) error) (*collected, int64, error) {
	fb := m.fb
	if string(fb[4:8]) != Identifier {
		return nil, 0, format.Wrapf(format.ErrUnknownFormat, formatName, "file_identifier", 4,
			"identifier %q, want %q", fb[4:8], Identifier)
	}
	c := newCollected()
	opt := verifyOptions(len(fb), atEOF)
	opt.Fetch = fetch
	w := &m.walk
	w.Reset(fb, opt)
	c.w = w
	w.SetVisitor(c.visitFn)
	w.SetLazy(true) // the operators and tensor parameters: see verify
	err := w.Verify("Model", tflitefb.VerifyModel)
	w.SetVisitor(nil)
	w.FetchBytes()
	return c, w.VectorBytes(), err
}

// verifyOptions are the options of the walk over a FlatBuffer region of n
// bytes (the whole file when atEOF): the C++ Verifier's rules and limits,
// which LiteRT runs with its default options, so that a file LiteRT
// refuses is refused and one it accepts is read.
func verifyOptions(n int, atEOF bool) fbverify.Options {
	return fbverify.Options{
		Format:    formatName,
		AtEOF:     atEOF, // the region is the whole file: past it is a cut file
		CxxRules:  true,
		MaxDepth:  64,
		MaxTables: 1000000,
		// Every object of a tree-shaped buffer has 4 bytes of its own (a
		// table or vector element whose offset is 0 shares its element's):
		// the bound stops only the walks that shared tables would make out
		// of proportion to the file.
		MaxObjects: n/4 + 1024,
	}
}

// inRange checks an index read from the file against a count.
func inRange(field string, off int64, i, n int64, what string) error {
	if outOf(i, n) {
		return rangeErr(field, off, i, n, what)
	}
	return nil
}

// outOf reports whether index i is outside [0, n).
func outOf(i, n int64) bool { return i < 0 || i >= n }

// rangeErr reports index i outside [0, n).
func rangeErr(field string, off int64, i, n int64, what string) error {
	return format.Errorf(formatName, field, off, "%s index %d out of range (want 0 <= index < %d)", what, i, n)
}

// fileRange checks that [off, off+n) lies inside a file of size bytes
// (off and n as unsigned 64-bit values from the file).
func fileRange(field string, at int64, off, n uint64, size int64) error {
	if outOfFile(off, n, size) {
		return format.Wrapf(format.ErrTruncated, formatName, field, at,
			"bytes [%d, +%d) run past the end of the %d-byte file", off, n, size)
	}
	return nil
}

// outOfFile reports whether [off, off+n) runs past a file of size bytes.
func outOfFile(off, n uint64, size int64) bool { return n > uint64(size) || off > uint64(size)-n }

// le is the byte order of every FlatBuffer.
var le = binary.LittleEndian

// The vtable offsets (4 + 2 × field id) of the fields read through
// flatbuffers.Table rather than flatc's accessors: those whose presence the
// accessors do not tell apart from an empty vector, and the vectors whose
// elements a loop steps through (elems).
const (
	vtTensorShape                      = 4  // Tensor.shape, id 0
	vtTensorShapeSignature             = 18 // Tensor.shape_signature, id 7
	vtOperatorInputs                   = 6  // Operator.inputs, id 1
	vtOperatorOutputs                  = 8  // Operator.outputs, id 2
	vtSubGraphOperators                = 10 // SubGraph.operators, id 3
	vtSubGraphTensors                  = 4  // SubGraph.tensors, id 0
	vtTensorQuantization               = 12 // Tensor.quantization, id 4
	vtTensorSparsity                   = 16 // Tensor.sparsity, id 6
	vtOperatorLargeCustomOptionsOffset = 22 // Operator.large_custom_options_offset, id 9
)

// elemPos returns the position of element e of the 4-byte vector field vt
// of table t (which has it), for an error's offset.
func elemPos(t *flatbuffers.Table, vt flatbuffers.VOffsetT, e int) int64 {
	return int64(t.Vector(flatbuffers.UOffsetT(t.Offset(vt)))) + 4*int64(e)
}
