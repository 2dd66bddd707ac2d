package signing

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"path"
	"sort"
)

// Range is a byte range [Start, End) of a file and the digest its bytes
// must hash to: a shard, or the whole file with the files serialization.
type Range struct {
	Start, End int64
	Digest     []byte
}

// Check verifies one file's bytes for a reader that checks a model while
// it reads it, in either of two ways:
//
//   - in order: Write hands over the file's bytes from offset 0, and each
//     signed range is checked the moment its last byte arrives; Verified
//     says up to where the bytes written are proven (with the shards
//     serialization, each shard's end in turn; with files, 0 until the
//     file's last byte);
//   - by range: CheckRange reads one range's bytes and checks them, in any
//     order, for a reader that jumps about the file; Covering names the
//     ranges a byte span touches and Proven says whether they all matched.
//
// No digest is compared twice: a range proven one way is not hashed again
// the other way. A Check is not safe for concurrent use.
type Check struct {
	File   string  // the file, as the signature names it
	Size   int64   // the file's size, which the ranges tile
	Ranges []Range // the signed ranges, in order, tiling [0, Size)
	Method string  // SerializeFiles or SerializeShards

	h      hash.Hash
	at     int64  // bytes written
	next   int    // the range Write is hashing
	ok     []bool // which ranges matched
	prefix int    // ranges [0, prefix) all matched
	err    error  // the first failure, returned from then on
	shown  string
}

// NewCheck returns the check of the file name (relative to the model's
// folder, "/"-separated) whose size is size. A single-file model's file
// may be named by its base name or "."; a manifest that signs one file
// named "." (a single-file signature) matches any name. It fails when the
// manifest does not sign the file (ErrUnsigned), or signs shards that do
// not end where the file does (ErrDigest).
func (m *Manifest) NewCheck(name string, size int64) (*Check, error) {
	f, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	return m.newCheck(f, name, size)
}

// newCheck returns the check of f, a file of size bytes shown as name.
func (m *Manifest) newCheck(f *fileDigests, name string, size int64) (*Check, error) {
	rs := make([]Range, len(f.ranges))
	for i, r := range f.ranges {
		rs[i] = Range{r.Start, r.End, r.Digest}
	}
	if m.Serialization.Method == SerializeFiles {
		rs[0].End = size
	} else if end := rs[len(rs)-1].End; end != size {
		return nil, &Error{Op: "file", File: name, Msg: fmt.Sprintf("digest mismatch: the file is %d bytes, its signed shards cover %d", size, end), Err: ErrDigest}
	}
	c := &Check{File: f.path, Size: size, Ranges: rs, Method: m.Serialization.Method, h: sha256.New(), ok: make([]bool, len(rs)), shown: name}
	c.settle()
	return c, c.err
}

// lookup finds the digests of the file name.
func (m *Manifest) lookup(name string) (*fileDigests, error) {
	if f := m.files[name]; f != nil {
		return f, nil
	}
	if f := m.files["."]; f != nil && len(m.files) == 1 {
		return f, nil
	}
	return nil, &Error{Op: "file", File: name, Msg: "not covered by the signature (the model holds it, the signature does not list it)", Err: ErrUnsigned}
}

// Write hashes p, the file's next bytes, and checks every range that
// ends inside it. At the first range whose digest differs it returns the
// bytes consumed up to that range's end and an *Error (ErrDigest) naming
// the range, and every later Write returns the same error. Bytes past
// Size are an error too.
func (c *Check) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n := 0
	for len(p) > 0 {
		if c.next == len(c.Ranges) {
			c.err = &Error{Op: "file", File: c.shown, Msg: fmt.Sprintf("digest mismatch: more than the %d bytes signed", c.Size), Err: ErrDigest}
			return n, c.err
		}
		k := min(int64(len(p)), c.Ranges[c.next].End-c.at)
		if !c.ok[c.next] {
			hashLines(c.h, p[:k])
		}
		c.at += k
		n += int(k)
		p = p[k:]
		c.settle()
		if c.err != nil {
			return n, c.err
		}
	}
	return n, nil
}

// settle checks every range that has all its bytes.
func (c *Check) settle() {
	for c.err == nil && c.next < len(c.Ranges) && c.at == c.Ranges[c.next].End {
		if !c.ok[c.next] {
			c.err = compareDigest(c.shown, c.Method, c.Ranges[c.next], c.h.Sum(nil))
			c.prove(c.next)
		}
		c.h.Reset()
		c.next++
	}
}

// compareDigest is the verdict on one range of file: nil, or an *Error
// naming the range (a shard) or the file.
func compareDigest(file, method string, r Range, sum []byte) error {
	if bytes.Equal(sum, r.Digest) {
		return nil
	}
	e := &Error{Op: "file", File: file, Msg: fmt.Sprintf("digest mismatch: sha256 %s read, %s signed", hexShort(sum), hexShort(r.Digest)), Err: ErrDigest}
	if method == SerializeShards {
		e.Shard, e.Start, e.End = true, r.Start, r.End
	}
	return e
}

// prove records that range i matched, unless the check has failed.
func (c *Check) prove(i int) {
	if c.err != nil {
		return
	}
	c.ok[i] = true
	for c.prefix < len(c.ok) && c.ok[c.prefix] {
		c.prefix++
	}
}

// Verified returns the end of the bytes proven from offset 0: every byte
// below it lies in a range whose digest matched.
func (c *Check) Verified() int64 {
	if c.prefix == 0 {
		return 0
	}
	return c.Ranges[c.prefix-1].End
}

// Covering returns the ranges [first, last) that hold bytes of
// [off, off+n), clipped to the file.
func (c *Check) Covering(off, n int64) (first, last int) {
	end := off + n
	if n <= 0 || off >= c.Size || end <= 0 || end < off {
		return 0, 0
	}
	first = sort.Search(len(c.Ranges), func(i int) bool { return c.Ranges[i].End > off })
	last = sort.Search(len(c.Ranges), func(i int) bool { return c.Ranges[i].Start >= end })
	return first, last
}

// Proven reports whether every byte of [off, off+n) lies in a range whose
// digest matched; bytes outside the file are never proven.
func (c *Check) Proven(off, n int64) bool {
	if n == 0 {
		return off >= 0 && off <= c.Size
	}
	if off < 0 || n < 0 || off > c.Size-n {
		return false
	}
	first, last := c.Covering(off, n)
	for i := first; i < last; i++ {
		if !c.ok[i] {
			return false
		}
	}
	return first < last
}

// CheckRange reads the bytes of range i from r (End-Start of them, through
// a small buffer) and checks their digest, unless the range has already
// matched. It returns the first failure of the check, as Write does, or a
// read error.
func (c *Check) CheckRange(i int, r io.Reader) error {
	if err := c.pending("CheckRange", i); err != nil || c.ok[i] {
		return err
	}
	rg := c.Ranges[i]
	h := sha256.New()
	n, err := io.CopyN(h, r, rg.End-rg.Start)
	if err != nil {
		if err == io.EOF {
			err = &Error{Op: "file", File: c.shown, Msg: fmt.Sprintf("missing bytes: %d of the range's %d", n, rg.End-rg.Start), Err: ErrMissing}
		}
		return err
	}
	return c.CheckSum(i, h.Sum(nil))
}

// CheckSum checks range i against sum, the SHA-256 of its bytes that the
// caller computed, with Sum for one (a reader hashing several ranges at
// once, each on a core of its own, hands their sums to their Check in
// turn). Like CheckRange it records range i as proven, or fails the check.
func (c *Check) CheckSum(i int, sum []byte) error {
	if err := c.pending("CheckSum", i); err != nil || c.ok[i] {
		return err
	}
	c.err = compareDigest(c.shown, c.Method, c.Ranges[i], sum)
	c.prove(i)
	return c.err
}

// pending returns the check's first failure, or an error when it has no
// range i.
func (c *Check) pending(method string, i int) error {
	if c.err != nil {
		return c.err
	}
	if i < 0 || i >= len(c.Ranges) {
		return fmt.Errorf("signing: %s: no range %d of %d", method, i, len(c.Ranges))
	}
	return nil
}

// Next returns the range being hashed, so that a reader can end a read
// where a range ends; ok is false once every range has been checked.
func (c *Check) Next() (r Range, ok bool) {
	if c.next == len(c.Ranges) {
		return Range{}, false
	}
	return c.Ranges[c.next], true
}

// Close returns the first failure, or an error if bytes are missing:
// nil only when every range of the file was checked and matched.
func (c *Check) Close() error {
	if c.err != nil {
		return c.err
	}
	if c.prefix < len(c.Ranges) {
		return &Error{Op: "file", File: c.shown, Msg: fmt.Sprintf("missing bytes: %d of the %d signed are proven", c.Verified(), c.Size), Err: ErrMissing}
	}
	return nil
}

// displayName is how errors name a model file: its name, or its base
// name for a single-file model.
func displayName(md *Model, f *File) string {
	if md.single {
		return path.Base(f.Name)
	}
	return f.Name
}
