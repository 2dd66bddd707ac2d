package tflite

import (
	"encoding/binary"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
)

// The FlatBuffer's structure is checked by tflitefb.VerifyModel, generated
// from internal/schema/tflite.fbs (fbgen), which follows every offset with
// 64-bit arithmetic; this file picks the region it verifies. The reader
// (read.go) reads only fields the schema does not mark (unread), after the
// verifier has accepted the buffer; the meaning of the values (indices,
// byte ranges) is checked where they are read, through inRange and
// fileRange below.

// firstRegion is the length of the FlatBuffer region verified first.
// The FlatBuffer has no length of its own: it starts at byte 0 and may be
// followed by appended buffers or a zip archive. A region that does not
// hold every object is verified again four times longer, up to the whole
// file or the 2 GiB FlatBuffer limit, so that a large-model file with a
// small FlatBuffer (the only kind that exceeds 2 GiB) is viewed only as far
// as its tables go (in windowed mode, on 32-bit systems, that matters).
const firstRegion = 4 << 20

// Verify views the FlatBuffer region of mf and verifies every table,
// vector and string the reader reaches. It returns the region.
func verify(mf *mmapfile.File) ([]byte, error) {
	size := mf.Len()
	if size < 8 {
		return nil, format.Wrapf(format.ErrTruncated, formatName, "", 0,
			"file of %d bytes is shorter than the 8-byte FlatBuffer prefix (root offset and %q)", size, Identifier)
	}
	var id [8]byte
	if _, err := mf.ReadAt(id[:], 0); err != nil {
		return nil, format.Wrapf(format.ErrTruncated, formatName, "", 0, "reading the FlatBuffer prefix: %v", err)
	}
	if string(id[4:8]) != Identifier {
		return nil, format.Wrapf(format.ErrUnknownFormat, formatName, "file_identifier", 4,
			"identifier %q, want %q", id[4:8], Identifier)
	}
	limit := min(size, int64(fbverify.MaxSize))
	for n := min(limit, firstRegion); ; n = min(limit, 4*n) {
		fb, err := mf.View(0, n)
		if err != nil {
			return nil, format.Wrapf(format.ErrTruncated, formatName, "", 0, "viewing the FlatBuffer region [0, %d): %v", n, err)
		}
		err = fbverify.NewWalk(fb, verifyOptions(len(fb), n == size)).Verify("Model", tflitefb.VerifyModel)
		if err == nil || n == limit {
			return fb, err
		}
	}
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

// Union tags the reader follows (generated from internal/schema/tflite.fbs).
const (
	tagCustomQuantization    = uint8(tflitefb.QuantizationDetailsCustomQuantization)
	tagBlockwiseQuantization = uint8(tflitefb.QuantizationDetailsBlockwiseQuantization)

	tagInt32Vector  = uint8(tflitefb.SparseIndexVectorInt32Vector)
	tagUint16Vector = uint8(tflitefb.SparseIndexVectorUint16Vector)
	tagUint8Vector  = uint8(tflitefb.SparseIndexVectorUint8Vector)

	tagCallOptions     = uint8(tflitefb.BuiltinOptionsCallOptions)
	tagIfOptions       = uint8(tflitefb.BuiltinOptionsIfOptions)
	tagWhileOptions    = uint8(tflitefb.BuiltinOptionsWhileOptions)
	tagCallOnceOptions = uint8(tflitefb.BuiltinOptionsCallOnceOptions)

	tagStableHLOCompositeOptions = uint8(tflitefb.BuiltinOptions2StableHLOCompositeOptions) // in builtin_options_2
)
