package repack

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strconv"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Difference is one way two files differ.
type Difference struct {
	// Name is the tensor's name, or for bytes that are not a tensor their
	// kind and name ("delegate forward/0", "named data tokenizer",
	// "segment 3").
	Name string
	// What says what differs: "only in A", "only in B", "dtype", "shape",
	// "size", "sha256", "count" (the name occurs a different number of
	// times), or "unresolved" (an external tensor whose data was not
	// given).
	What string
	A, B string // the two files' values, where they have one
}

// String returns the difference as one line.
func (d Difference) String() string {
	if d.A == "" && d.B == "" {
		return fmt.Sprintf("%s: %s", d.Name, d.What)
	}
	return fmt.Sprintf("%s: %s %s != %s", d.Name, d.What, d.A, d.B)
}

// TensorSum is what Check compares of a tensor.
type TensorSum struct {
	Name   string
	DType  string
	Shape  []int64
	SHA256 string // hex; empty for an unresolved external tensor
}

// BlobSum is what Check compares of bytes that carry meaning without
// being a tensor: a delegate's blob, named data, a segment no tensor, blob
// or named data lies in.
type BlobSum struct {
	// Name is the kind and the format's name for it: "delegate
	// forward/0", "named data KEY", "segment N" (N the format's index of
	// the segment).
	Name   string
	Size   int64
	SHA256 string // hex
}

// Summary is everything Check compares of a model.
type Summary struct {
	Tensors []TensorSum
	Blobs   []BlobSum
}

// Summarize returns what Check compares of m: every tensor's name, dtype,
// shape and SHA-256, and the size and SHA-256 of every delegate blob,
// named data entry and segment that holds none of them. It reads every
// byte of each once, fault-safe.
func Summarize(m *loader.Model) (*Summary, error) { return summarize(m, sha) }

// summarize is Summarize with the digest digest writes in the SHA256
// fields (Repack's read-back, which keeps its summaries to itself, uses a
// faster one: keyedDigest).
func summarize(m *loader.Model, digest func(segment.Segment) (string, error)) (*Summary, error) {
	s := &Summary{Tensors: make([]TensorSum, m.NumTensors())}
	for i := range s.Tensors {
		t := m.TensorAt(i)
		s.Tensors[i] = TensorSum{Name: t.Name, DType: t.DType.String(), Shape: slices.Clone(t.Shape)}
		if t.Resolved() {
			sum, err := digest(t.Data)
			if err != nil {
				return nil, fmt.Errorf("%s: tensor %q: %w", m.Name(), t.Name, err)
			}
			s.Tensors[i].SHA256 = sum
		}
	}
	// What lies in a segment: tensors, blobs, named data.
	cov := coverage{ids: map[*mmapfile.File]int{}}
	for i := range m.NumTensors() {
		cov.add(m.TensorData(i))
	}
	type blobKey struct {
		f      *mmapfile.File
		lo, hi int64
	}
	sums := map[blobKey]string{} // a blob read by several names is read once
	blob := func(name string, d segment.Segment) error {
		k := blobKey{d.File(), d.Offset(), d.Offset() + d.Len()}
		sum, ok := sums[k]
		if !ok {
			var err error
			if sum, err = digest(d); err != nil {
				return fmt.Errorf("%s: %s: %w", m.Name(), name, err)
			}
			sums[k] = sum
		}
		s.Blobs = append(s.Blobs, BlobSum{Name: name, Size: d.Len(), SHA256: sum})
		return nil
	}
	if bu, ok := m.Impl().(format.BlobUser); ok {
		for _, b := range bu.GroupBlobs("") {
			if err := blob(b.Name, b.Data); err != nil {
				return nil, err
			}
			cov.add(b.Data)
		}
	}
	for _, nd := range m.NamedData() {
		if err := blob("named data "+nd.Key, nd.Data); err != nil {
			return nil, err
		}
		cov.add(nd.Data)
	}
	cov.sort()
	idx, _ := m.Impl().(format.SegmentIndexer)
	for i, seg := range m.Segments() {
		if seg.Len() == 0 || cov.overlaps(seg) {
			continue
		}
		k := i
		if idx != nil {
			k = idx.SegmentIndex(i)
		}
		if err := blob("segment "+strconv.Itoa(k), seg); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// fspan is a byte range [lo, hi) of a file, the file numbered by the
// coverage it is in.
type fspan struct {
	f      int
	lo, hi int64
}

// coverage is a set of spans that answers whether a segment overlaps any.
type coverage struct {
	ids   map[*mmapfile.File]int
	spans []fspan
	reach []int64 // reach[i]: the largest hi of spans[:i+1] of spans[i]'s file
}

func (c *coverage) id(f *mmapfile.File) int {
	id, ok := c.ids[f]
	if !ok {
		id = len(c.ids)
		c.ids[f] = id
	}
	return id
}

func (c *coverage) add(d segment.Segment) {
	if d.Len() > 0 {
		c.spans = append(c.spans, fspan{c.id(d.File()), d.Offset(), d.Offset() + d.Len()})
	}
}

// sort sorts the spans by file and start; add no more after it.
func (c *coverage) sort() {
	slices.SortFunc(c.spans, c.cmp)
	c.reach = make([]int64, len(c.spans))
	for i, sp := range c.spans {
		c.reach[i] = sp.hi
		if i > 0 && c.spans[i-1].f == sp.f {
			c.reach[i] = max(sp.hi, c.reach[i-1])
		}
	}
}

func (c *coverage) cmp(a, b fspan) int {
	return cmp.Or(cmp.Compare(a.f, b.f), cmp.Compare(a.lo, b.lo))
}

// overlaps reports whether a span overlaps d.
func (c *coverage) overlaps(d segment.Segment) bool {
	lo, hi := d.Offset(), d.Offset()+d.Len()
	// The spans of d's file that start before hi: the last of them reaches
	// furthest of all.
	f := c.id(d.File())
	i, _ := slices.BinarySearchFunc(c.spans, fspan{f, hi, hi}, c.cmp)
	return i > 0 && c.spans[i-1].f == f && c.reach[i-1] > lo
}

func sha(d segment.Segment) (string, error) {
	sum, err := d.SHA256()
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum[:]), nil
}

// keyedDigest returns a digest of hash/maphash under a seed of its own:
// several times faster than SHA-256, and, keyed with a seed no file can
// know, as sure to tell two different byte strings of one process apart
// as a 64-bit hash can be. Repack compares the input and its output with
// it.
func keyedDigest() func(segment.Segment) (string, error) {
	seed := maphash.MakeSeed()
	return func(d segment.Segment) (string, error) {
		var h maphash.Hash
		h.SetSeed(seed)
		if err := d.Checksum(&h); err != nil {
			return "", err
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
}

// openModel opens the model at path, a file or ARCHIVE!/ENTRY
// (mmapfile.OpenPath), linked to the data files (each a file or
// ARCHIVE!/ENTRY) when its format links data and link is set.
func openModel(path string, data []string, link bool) (*loader.Model, error) {
	mf, err := mmapfile.OpenPath(path)
	if err != nil {
		return nil, err
	}
	var maps []*mmapfile.File
	if link && len(data) > 0 {
		head := make([]byte, min(mf.Len(), 4096))
		k, _ := mf.ReadAt(head, 0)
		if loader.Sniff(head[:k]).LinksData() {
			for _, d := range data {
				dm, err := mmapfile.OpenPath(d)
				if err != nil {
					closeAll(maps)
					mf.Close()
					return nil, fmt.Errorf("data file %s: %w", d, err)
				}
				maps = append(maps, dm)
			}
		}
	}
	return loader.New(mf, loader.WithDataFiles(maps...))
}

func closeAll(mfs []*mmapfile.File) {
	for _, mf := range mfs {
		mf.Close()
	}
}

// Sums opens the model at path (linking a program to the .ptd files in
// data), verifies it, and returns every tensor's name, dtype, shape and the
// SHA-256 of its bytes, in the file's tensor order.
func Sums(path string, data ...string) ([]TensorSum, error) {
	s, err := SummarizeFile(path, data...)
	if err != nil {
		return nil, err
	}
	return s.Tensors, nil
}

// SummarizeFile opens the model at path (linking a program to the .ptd
// files in data), verifies it, and summarizes it (Summarize).
func SummarizeFile(path string, data ...string) (*Summary, error) {
	m, err := openModel(path, data, true)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if _, err := m.Verify(); err != nil {
		return nil, err
	}
	return Summarize(m)
}

// Check proves that the models at a and b hold the same bytes wherever
// they carry meaning: the same tensor names, each with the same dtype,
// shape and SHA-256 of its bytes (a name that occurs several times is
// compared occurrence by occurrence), and the same delegate blobs, named
// data and segments without tensors, by name, size and SHA-256. It
// returns every difference found, tensors first, each part in name order;
// none means the files are the same. data lists .ptd files linked to
// either file when it is a program.
func Check(a, b string, data ...string) ([]Difference, error) {
	sa, err := SummarizeFile(a, data...)
	if err != nil {
		return nil, err
	}
	sb, err := SummarizeFile(b, data...)
	if err != nil {
		return nil, err
	}
	return Diff(sa, sb), nil
}

// Diff compares two summaries: their tensors (Compare), then their blobs
// by name, size and SHA-256.
func Diff(a, b *Summary) []Difference {
	diffs := Compare(a.Tensors, b.Tensors)
	key := func(s BlobSum) string { return s.Name }
	return append(diffs, compareBy(a.Blobs, b.Blobs, key, func(n string, x, y BlobSum) []Difference {
		switch {
		case x.Size != y.Size:
			return []Difference{{Name: n, What: "size", A: strconv.FormatInt(x.Size, 10), B: strconv.FormatInt(y.Size, 10)}}
		case x.SHA256 != y.SHA256:
			return []Difference{{Name: n, What: "sha256", A: x.SHA256, B: y.SHA256}}
		}
		return nil
	})...)
}

// Compare compares two lists of tensor sums by name (see Check).
func Compare(a, b []TensorSum) []Difference {
	key := func(s TensorSum) string { return s.Name }
	return compareBy(a, b, key, func(n string, x, y TensorSum) []Difference {
		var diffs []Difference
		if x.DType != y.DType {
			diffs = append(diffs, Difference{Name: n, What: "dtype", A: x.DType, B: y.DType})
		}
		if !slices.Equal(x.Shape, y.Shape) {
			diffs = append(diffs, Difference{Name: n, What: "shape", A: fmt.Sprint(x.Shape), B: fmt.Sprint(y.Shape)})
		}
		switch {
		case x.SHA256 == "" || y.SHA256 == "":
			if x.SHA256 != y.SHA256 {
				diffs = append(diffs, Difference{Name: n, What: "unresolved"})
			}
		case x.SHA256 != y.SHA256:
			diffs = append(diffs, Difference{Name: n, What: "sha256", A: x.SHA256, B: y.SHA256})
		}
		return diffs
	})
}

// compareBy pairs the elements of a and b by name, occurrence by
// occurrence, in name order, and reports those only one list has, names
// that occur a different number of times, and what same compares.
func compareBy[T any](a, b []T, name func(T) string, same func(n string, x, y T) []Difference) []Difference {
	byName := func(s []T) map[string][]T {
		m := make(map[string][]T)
		for _, t := range s {
			m[name(t)] = append(m[name(t)], t)
		}
		return m
	}
	ma, mb := byName(a), byName(b)
	all := maps.Clone(ma)
	maps.Copy(all, mb)
	names := slices.Sorted(maps.Keys(all))
	var diffs []Difference
	for _, n := range names {
		ta, tb := ma[n], mb[n]
		switch {
		case len(tb) == 0:
			diffs = append(diffs, Difference{Name: n, What: "only in A"})
			continue
		case len(ta) == 0:
			diffs = append(diffs, Difference{Name: n, What: "only in B"})
			continue
		case len(ta) != len(tb):
			diffs = append(diffs, Difference{Name: n, What: "count", A: strconv.Itoa(len(ta)), B: strconv.Itoa(len(tb))})
		}
		for i := range min(len(ta), len(tb)) {
			diffs = append(diffs, same(n, ta[i], tb[i])...)
		}
	}
	return diffs
}
