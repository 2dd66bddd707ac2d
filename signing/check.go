package signing

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash"
	"path"
)

// Range is a byte range [Start, End) of a file and the digest its bytes
// must hash to: a shard, or the whole file with the files serialization.
type Range struct {
	Start, End int64
	Digest     []byte
}

// Check verifies one file's bytes as a reader hands them over in order,
// from offset 0, for a reader that checks a model while it reads it:
// each signed range is checked the moment its last byte arrives, and
// Verified says up to where the bytes read so far are proven. With the
// shards serialization that is each shard's end in turn; with files, it
// is 0 until the file's last byte. A Check is not safe for concurrent use.
type Check struct {
	File   string  // the file, as the signature names it
	Size   int64   // the file's size, which the ranges tile
	Ranges []Range // the signed ranges, in order, tiling [0, Size)
	Method string  // SerializeFiles or SerializeShards

	h      hash.Hash
	at     int64 // bytes fed
	next   int   // the range being hashed
	proven int64 // the end of the last range that matched
	err    error // the first failure, returned from then on
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
	c := &Check{File: f.path, Size: size, Method: m.Serialization.Method, h: sha256.New(), shown: name}
	if err := m.ranges(f, name, size, &c.Ranges); err != nil {
		return nil, err
	}
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

// ranges sets out to f's ranges for a file of size bytes (shown as name).
func (m *Manifest) ranges(f *fileDigests, name string, size int64, out *[]Range) error {
	rs := make([]Range, len(f.ranges))
	for i, r := range f.ranges {
		rs[i] = Range{r.Start, r.End, r.Digest}
	}
	if m.Serialization.Method == SerializeFiles {
		rs[0].End = size
	} else {
		var end int64
		if len(rs) > 0 {
			end = rs[len(rs)-1].End
		}
		if end != size {
			return &Error{Op: "file", File: name, Msg: fmt.Sprintf("digest mismatch: the file is %d bytes, its signed shards cover %d", size, end), Err: ErrDigest}
		}
	}
	*out = rs
	return nil
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
		c.h.Write(p[:k])
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
		r := c.Ranges[c.next]
		c.err = compareDigest(c.shown, c.Method, r, c.h.Sum(nil))
		if c.err == nil {
			c.proven = r.End
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

// Verified returns the end of the bytes proven so far: every byte below
// it has been fed and its range's digest matched.
func (c *Check) Verified() int64 { return c.proven }

// Next returns the range being hashed, so that a reader can end a read
// where a range ends; ok is false once every range has been checked.
func (c *Check) Next() (r Range, ok bool) {
	if c.next == len(c.Ranges) {
		return Range{}, false
	}
	return c.Ranges[c.next], true
}

// Close returns the first failure, or an error if bytes are missing:
// nil only when every byte of the file was fed and matched.
func (c *Check) Close() error {
	if c.err != nil {
		return c.err
	}
	if c.next < len(c.Ranges) {
		return &Error{Op: "file", File: c.shown, Msg: fmt.Sprintf("missing bytes: it ended at byte %d of the %d signed", c.at, c.Size), Err: ErrMissing}
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
