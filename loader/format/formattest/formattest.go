// Package formattest checks that a model format keeps the contract of
// format.Model, as testing/fstest checks a file system: [TestFile] opens a
// file of the format and makes every check on it. A format package's tests
// call it on the format's real and generated files; a format written
// outside this module can do the same.
package formattest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Names no file holds, for lookups that must find nothing.
const (
	noTensor = "formattest: no tensor has this name\x00"
	noGroup  = "formattest: no group has this name\x00"
)

// TestFile checks that the model in the file at path, of a format
// registered with format.Register (as its package does when imported),
// keeps the contract of format.Model and of the optional interfaces of
// package format it implements:
//
//   - index and name lookups agree: TensorAt, TensorData and Lookup give the
//     same tensor, Lookup the first of a name, nothing for a name the file
//     lacks;
//   - every view (of a tensor, segment, named data, group blob, auxiliary
//     tensor) lies inside its file, and a tensor's matches its Offset and
//     NBytes;
//   - UseOrder names only real tensors, each once, for every group, and
//     every tensor for group "", the same on every call; UsedOrder is a
//     prefix of it; a group the model lacks wraps format.ErrNotFound;
//   - Check accepts the file, and loader's Verify of the file read through an
//     io.ReaderAt reads every byte of every view the file holds, and sees the
//     tensors Open of the mapped file does;
//   - Open of the file cut short at many lengths, called directly, returns a
//     model that passes the checks above, or a *format.FormatError wrapping
//     one of package format's sentinels, and never panics;
//   - Close is idempotent.
//
// opts are passed to loader.Open (loader.WithData, loader.WithMmapOptions);
// WithDataFiles, WithSection and WithZipEntry do not apply. TestFile
// returns the problems found, joined, or nil.
func TestFile(path string, opts ...loader.Option) error {
	c := &checker{}
	m, err := loader.Open(path, opts...)
	if err != nil {
		return fmt.Errorf("formattest: %s: %w", path, err)
	}
	defer m.Close()
	i := slices.IndexFunc(format.Registered(), func(r format.Registration) bool { return r.Name == string(m.Format()) })
	if i < 0 {
		return fmt.Errorf("formattest: %s: format %q is not registered", path, m.Format())
	}
	reg := format.Registered()[i]
	files := modelFiles(m.Impl())
	for _, d := range m.DataFiles() {
		files = append(files, d.MappedFile())
	}
	c.model("", m.Impl(), files)
	c.guard("check", func() {
		if err := m.Impl().Check(); err != nil {
			c.fail("check: Check rejects the file: %v", err)
		}
	})
	c.guard("verify", func() { c.verifyReads(path, m, opts) })
	c.truncations(path, reg, m)
	c.guard("close", func() { c.closeTwice(path, reg) })
	if len(c.errs) == 0 {
		return nil
	}
	if c.more > 0 {
		c.errs = append(c.errs, fmt.Errorf("and %d more", c.more))
	}
	return fmt.Errorf("formattest: %s: %w", path, errors.Join(c.errs...))
}

// checker collects the problems found.
type checker struct {
	errs []error
	more int
}

func (c *checker) fail(msg string, args ...any) {
	if len(c.errs) >= 20 {
		c.more++
		return
	}
	c.errs = append(c.errs, fmt.Errorf(msg, args...))
}

// guard runs fn, turning a panic into a problem of the named check.
func (c *checker) guard(what string, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			c.fail("%s: panic: %v", what, r)
		}
	}()
	fn()
}

// modelFiles returns the files a model's own views may point into.
func modelFiles(impl format.Model) []*mmapfile.File {
	files := []*mmapfile.File{impl.MappedFile()}
	if mf, ok := impl.(format.MultiFile); ok {
		files = append(files, mf.Files()...)
	}
	return files
}

// model checks what needs no file of its own: lookups, views, use orders
// and the optional interfaces. where prefixes each problem ("truncated to
// 100 bytes: ").
func (c *checker) model(where string, impl format.Model, files []*mmapfile.File) {
	c.guard(where+"lookup", func() { c.lookups(where, impl) })
	c.guard(where+"view", func() { c.views(where, impl, files) })
	c.guard(where+"use order", func() { c.orders(where, impl, files) })
	c.guard(where+"optional interfaces", func() { c.optional(where, impl, files) })
}

func (c *checker) lookups(where string, impl format.Model) {
	n := impl.NumTensors()
	first := make(map[string]int, n)
	for i := range n {
		t := impl.TensorAt(i)
		if t == nil {
			c.fail("%slookup: TensorAt(%d) is nil", where, i)
			return
		}
		if impl.TensorAt(i) != t {
			c.fail("%slookup: TensorAt(%d) gives another pointer on a second call", where, i)
		}
		if !sameView(impl.TensorData(i), t.Data) {
			c.fail("%slookup: TensorData(%d) is %v, TensorAt(%d).Data %v", where, i, impl.TensorData(i), i, t.Data)
		}
		if _, ok := first[t.Name]; !ok {
			first[t.Name] = i
			if j, ok := impl.Lookup(t.Name); !ok || j != i {
				c.fail("%slookup: Lookup(%q) = %d, %v; want %d, the first tensor of that name", where, t.Name, j, ok, i)
			}
		}
	}
	if j, ok := impl.Lookup(noTensor); ok {
		c.fail("%slookup: Lookup of a name no tensor has finds tensor %d", where, j)
	}
	if l, ok := impl.(format.TensorLister); ok {
		ts := l.Tensors()
		if len(ts) != n {
			c.fail("%slookup: Tensors has %d tensors, NumTensors says %d", where, len(ts), n)
			return
		}
		for i := range ts {
			if t := impl.TensorAt(i); t != &ts[i] {
				c.fail("%slookup: TensorAt(%d) is not &Tensors()[%d]", where, i, i)
				return
			}
		}
	}
}

func sameView(a, b segment.Segment) bool {
	return a.File() == b.File() && a.Offset() == b.Offset() && a.Len() == b.Len()
}

// view checks that s lies inside its file, and that the file is one of
// files (any file when files is nil).
func (c *checker) view(where, what string, s segment.Segment, files []*mmapfile.File) {
	f := s.File()
	switch {
	case f == nil && s.Len() != 0:
		c.fail("%sview: %s: a %d-byte view of no file", where, what, s.Len())
	case f == nil:
	case files != nil && !slices.Contains(files, f):
		c.fail("%sview: %s: a view of %q, which is none of the model's files", where, what, f.Name())
	case s.Offset() < 0 || s.Len() < 0 || s.Offset() > f.Len()-s.Len():
		c.fail("%sview: %s: [%d, +%d) is outside the %d-byte file", where, what, s.Offset(), s.Len(), f.Len())
	}
}

func (c *checker) views(where string, impl format.Model, files []*mmapfile.File) {
	for i := range impl.NumTensors() {
		t := impl.TensorAt(i)
		what := fmt.Sprintf("tensor %d %q", i, t.Name)
		if !t.Resolved() {
			if t.Data.Len() != 0 {
				c.fail("%sview: %s has no data (%v) but a %d-byte view", where, what, t.Location, t.Data.Len())
			}
			continue
		}
		c.view(where, what, t.Data, files)
		if t.Data.Offset() != t.Offset || t.Data.Len() != t.NBytes {
			c.fail("%sview: %s: view [%d, +%d), but Offset %d and NBytes %d", where, what, t.Data.Offset(), t.Data.Len(), t.Offset, t.NBytes)
		}
	}
	segs := impl.Segments()
	for i, s := range segs {
		c.view(where, fmt.Sprintf("segment %d", i), s, files)
	}
	for _, nd := range impl.NamedData() {
		what := fmt.Sprintf("named data %q", nd.Key)
		c.view(where, what, nd.Data, files)
		switch {
		case nd.Segment == -1:
		case nd.Segment < 0 || nd.Segment >= len(segs):
			c.fail("%sview: %s: segment %d of %d", where, what, nd.Segment, len(segs))
		case !within(nd.Data, segs[nd.Segment]):
			c.fail("%sview: %s is not inside its segment %d", where, what, nd.Segment)
		}
	}
	if aux, ok := impl.(format.AuxTensors); ok {
		for _, t := range aux.AuxTensors() {
			c.view(where, fmt.Sprintf("auxiliary tensor %q", t.Name), t.Data, nil)
		}
	}
}

func within(s, outer segment.Segment) bool {
	return s.File() == outer.File() && s.Offset() >= outer.Offset() && s.Offset()-outer.Offset() <= outer.Len()-s.Len()
}

func (c *checker) orders(where string, impl format.Model, files []*mmapfile.File) {
	n := impl.NumTensors()
	groups := impl.Groups()
	for i, g := range groups {
		if slices.Contains(groups[:i], g) {
			c.fail("%suse order: Groups names %q twice", where, g)
		}
	}
	for _, g := range append(slices.Clip(groups), "") {
		o, err := impl.UseOrder(g)
		if err != nil {
			c.fail("%suse order: UseOrder(%q): %v", where, g, err)
			continue
		}
		seen := make([]bool, n)
		for _, i := range o {
			if i < 0 || i >= n {
				c.fail("%suse order: UseOrder(%q) names tensor %d of %d", where, g, i, n)
				break
			}
			if seen[i] {
				c.fail("%suse order: UseOrder(%q) names tensor %d %q twice", where, g, i, impl.TensorAt(i).Name)
				break
			}
			seen[i] = true
		}
		if g == "" && len(o) != n {
			c.fail("%suse order: UseOrder(\"\") names %d of the %d tensors; it must name every one", where, len(o), n)
		}
		if again, _ := impl.UseOrder(g); !slices.Equal(o, again) {
			c.fail("%suse order: UseOrder(%q) differs from one call to the next", where, g)
		}
		if u, ok := impl.(format.UsedOrderer); ok {
			if used, err := u.UsedOrder(g); err != nil || len(used) > len(o) || !slices.Equal(used, o[:len(used)]) {
				c.fail("%suse order: UsedOrder(%q) is not a prefix of UseOrder (%v)", where, g, err)
			}
		}
		if b, ok := impl.(format.BlobUser); ok {
			for _, blob := range b.GroupBlobs(g) {
				c.view(where, "blob "+blob.Name, blob.Data, files)
			}
		}
	}
	if _, err := impl.UseOrder(noGroup); !errors.Is(err, format.ErrNotFound) {
		c.fail("%suse order: UseOrder of a group the model lacks: %v, want an error wrapping format.ErrNotFound", where, err)
	}
}

// generic are the keys of the command's JSON report that a Reporter's
// fields must not take.
var generic = []string{"format", "file_size", "segments", "named_data", "tensors", "data_files", "use_order", "warnings"}

func (c *checker) optional(where string, impl format.Model, files []*mmapfile.File) {
	segs := impl.Segments()
	if k, ok := impl.(format.SegmentKinder); ok && len(k.SegmentKinds()) != len(segs) {
		c.fail("%sSegmentKinds: %d kinds for %d segments", where, len(k.SegmentKinds()), len(segs))
	}
	if x, ok := impl.(format.SegmentIndexer); ok {
		seen := map[int]bool{}
		for i := range segs {
			if j := x.SegmentIndex(i); j < 0 || seen[j] {
				c.fail("%sSegmentIndex(%d) = %d: negative or given twice", where, i, j)
			} else {
				seen[j] = true
			}
		}
	}
	if r, ok := impl.(format.Reporter); ok {
		var keys []string
		for _, f := range r.ReportFields() {
			if slices.Contains(generic, f.Key) || slices.Contains(keys, f.Key) {
				c.fail("%sReportFields: key %q is a generic one or given twice", where, f.Key)
			}
			keys = append(keys, f.Key)
			if _, err := json.Marshal(f.Value); err != nil {
				c.fail("%sReportFields: %q: %v", where, f.Key, err)
			}
		}
		if err := r.ReportText(io.Discard); err != nil {
			c.fail("%sReportText: %v", where, err)
		}
	}
	if w, ok := impl.(format.Warner); ok {
		_ = w.Warnings()
	}
	if r, ok := impl.(format.Relayouter); ok {
		c.layout(where, r, files)
	}
}

// layout checks the Layout a Relayouter gives for 4 KiB: pieces in offset
// order, after the head and each other, inside Size, views of the model's
// files (or of sections of them, or bytes the relayout made).
func (c *checker) layout(where string, r format.Relayouter, files []*mmapfile.File) {
	l, err := r.Relayout(format.RelayoutOptions{Align: 4096})
	if err != nil {
		return // a format may refuse what it cannot lay out anew
	}
	end := int64(len(l.Head))
	for i, p := range l.Pieces {
		// A piece may also be bytes the relayout made (a memory file) or
		// a view of a section of one of the model's files (the same
		// descriptor).
		pf := p.Data.File()
		if pf != nil && pf.Mode() == mmapfile.ModeMemory {
			c.view(where+"Relayout: ", fmt.Sprintf("piece %d", i), p.Data, nil)
		} else {
			own := files
			for _, f := range files {
				if pf != nil && pf != f && pf.Fd() != ^uintptr(0) && pf.Fd() == f.Fd() {
					own = append(slices.Clone(files), pf)
					break
				}
			}
			c.view(where+"Relayout: ", fmt.Sprintf("piece %d", i), p.Data, own)
		}
		if p.Offset < end || p.Data.Len() > l.Size-p.Offset {
			c.fail("%sRelayout: piece %d at [%d, +%d) overlaps what comes before (up to %d) or runs past Size %d", where, i, p.Offset, p.Data.Len(), end, l.Size)
			return
		}
		end = p.Offset + p.Data.Len()
	}
}

// recorder is an io.ReaderAt that records the byte ranges read through it.
type recorder struct {
	r     io.ReaderAt
	spans [][2]int64
}

func (r *recorder) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.r.ReadAt(p, off)
	r.spans = append(r.spans, [2]int64{off, off + int64(n)})
	return n, err
}

// covered reports whether every byte of [off, off+n) was read.
func (r *recorder) covered(off, n int64) bool {
	end := off + n
	for off < end {
		next := off
		for _, s := range r.spans {
			if s[0] <= off && s[1] > next {
				next = s[1]
			}
		}
		if next == off {
			return false
		}
		off = next
	}
	return true
}

// verifyReads opens the file again through a recorder (mmapfile.ModeCopy:
// every view's bytes are read through it), checks that the model is the
// same, and that Verify reads every byte of every view into the file.
func (c *checker) verifyReads(path string, m *loader.Model, opts []loader.Option) {
	f, err := os.Open(path)
	if err != nil {
		c.fail("verify: %v", err)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		c.fail("verify: %v", err)
		return
	}
	rec := &recorder{r: f}
	whole := mmapfile.NewReaderAt(rec, st.Size())
	defer whole.Close()
	mf, err := whole.Sub(0, st.Size(), mmapfile.WithName(path))
	if err != nil {
		c.fail("verify: %v", err)
		return
	}
	m2, err := loader.New(mf, opts...)
	if err != nil {
		c.fail("verify: Open of the file read through an io.ReaderAt: %v", err)
		return
	}
	defer m2.Close()
	if m2.NumTensors() != m.NumTensors() || len(m2.Segments()) != len(m.Segments()) {
		c.fail("verify: read through an io.ReaderAt, the file has %d tensors and %d segments; mapped, %d and %d",
			m2.NumTensors(), len(m2.Segments()), m.NumTensors(), len(m.Segments()))
		return
	}
	for i := range m.NumTensors() {
		if a, b := m.TensorAt(i), m2.TensorAt(i); a.Name != b.Name || a.Offset != b.Offset || a.NBytes != b.NBytes {
			c.fail("verify: tensor %d is %q at %d (%d bytes) read through an io.ReaderAt, %q at %d (%d bytes) mapped", i, b.Name, b.Offset, b.NBytes, a.Name, a.Offset, a.NBytes)
			return
		}
	}
	rec.spans = nil
	if _, err := m2.Verify(); err != nil {
		c.fail("verify: Verify: %v", err)
		return
	}
	for _, v := range fileViews(m) {
		if !rec.covered(v.off, v.n) {
			c.fail("verify: Verify does not read every byte of %s, [%d, +%d) of the file", v.what, v.off, v.n)
		}
	}
}

// fileView is a view of the model, at its offset in the file at path.
type fileView struct {
	what   string
	off, n int64
}

// fileViews lists the views Verify must read (every resolved tensor's,
// segment's, named data's and auxiliary tensor's) that lie in the model's
// file: a section of it (the program inside a bundle) shares its
// descriptor; a data file's or a shard's does not.
func fileViews(m *loader.Model) []fileView {
	fd := m.File().Fd()
	var vs []fileView
	add := func(what string, s segment.Segment) {
		if fd != ^uintptr(0) && s.File() != nil && s.File().Fd() == fd {
			base, _ := s.File().Section()
			vs = append(vs, fileView{what, base + s.Offset(), s.Len()})
		}
	}
	for i := range m.NumTensors() {
		if t := m.TensorAt(i); t.Resolved() {
			add(fmt.Sprintf("tensor %q", t.Name), t.Data)
		}
	}
	for i, s := range m.Segments() {
		add(fmt.Sprintf("segment %d", i), s)
	}
	for _, nd := range m.NamedData() {
		add(fmt.Sprintf("named data %q", nd.Key), nd.Data)
	}
	if aux, ok := m.Impl().(format.AuxTensors); ok {
		for _, t := range aux.AuxTensors() {
			add(fmt.Sprintf("auxiliary tensor %q", t.Name), t.Data)
		}
	}
	return vs
}

// open calls the format's Open on mf, as loader does, turning a panic
// into an error.
func open(reg format.Registration, mf *mmapfile.File, name string) (impl format.Model, err error) {
	defer func() {
		if r := recover(); r != nil {
			impl, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	head := make([]byte, min(mf.Len(), 4096))
	if _, err := mf.ReadAt(head, 0); err != nil {
		return nil, err
	}
	return reg.Open(mf, &format.Config{Head: head, Name: name})
}

// maxCuts bounds the lengths truncations tries.
const maxCuts = 200

// truncations opens the file cut short at lengths that end inside its
// headers, at powers of two and inside its views: each must give a model
// that keeps the contract, or a *format.FormatError with a sentinel.
func (c *checker) truncations(path string, reg format.Registration, m *loader.Model) {
	full, err := mmapfile.Open(path)
	if err != nil {
		c.fail("truncated: %v", err)
		return
	}
	defer full.Close()
	for _, n := range cuts(full.Len(), m) {
		mf, err := full.Sub(0, n)
		if err != nil {
			c.fail("truncated to %d bytes: %v", n, err)
			continue
		}
		where := fmt.Sprintf("truncated to %d bytes: ", n)
		impl, err := open(reg, mf, path)
		if err == nil {
			c.model(where, impl, modelFiles(impl))
			c.guard(where+"close", func() { impl.Close() })
		} else if e := contractError(err); e != "" {
			c.fail("%serror: %s: %v", where, e, err)
		}
		mf.Close()
	}
}

// sentinels are the errors a format's error may wrap.
var sentinels = []error{format.ErrMalformed, format.ErrTruncated, format.ErrUnsupportedVersion,
	format.ErrUnknownFormat, format.ErrCompressed, format.ErrNotFound}

// contractError says how err fails to be a *format.FormatError naming a
// format and wrapping a sentinel, or returns "".
func contractError(err error) string {
	var fe *format.FormatError
	switch {
	case !errors.As(err, &fe):
		return fmt.Sprintf("a %T, not a *format.FormatError", err)
	case fe.Format == "" || fe.Msg == "":
		return "a *format.FormatError without its format or message"
	case !slices.ContainsFunc(sentinels, func(s error) bool { return errors.Is(err, s) }):
		return "a *format.FormatError wrapping none of package format's sentinels"
	}
	return ""
}

// cuts returns the lengths, below size, to truncate the file to: the first
// 16, powers of two, the half, the last, and the start, middle and last
// byte of every view into the file, at most maxCuts of them, evenly
// chosen.
func cuts(size int64, m *loader.Model) []int64 {
	var at []int64
	for n := range min(size, 16) {
		at = append(at, n)
	}
	for n := int64(16); n < size; n *= 2 {
		at = append(at, n)
	}
	at = append(at, size/2, size-1)
	for _, v := range fileViews(m) {
		if v.n > 0 {
			at = append(at, v.off, v.off+v.n/2, v.off+v.n-1)
		}
	}
	at = slices.DeleteFunc(at, func(n int64) bool { return n < 0 || n >= size })
	slices.Sort(at)
	at = slices.Compact(at)
	if len(at) <= maxCuts {
		return at
	}
	out := make([]int64, 0, maxCuts)
	for i := range maxCuts {
		out = append(out, at[int(math.Round(float64(i)*float64(len(at)-1)/float64(maxCuts-1)))])
	}
	return slices.Compact(out)
}

// closeTwice opens the file with the format's Open and closes the model
// twice: the second Close must do nothing and return nil.
func (c *checker) closeTwice(path string, reg format.Registration) {
	mf, err := mmapfile.Open(path)
	if err != nil {
		c.fail("close: %v", err)
		return
	}
	defer mf.Close()
	impl, err := open(reg, mf, path)
	if err != nil {
		c.fail("close: the format's Open, called directly: %v", err)
		return
	}
	if err := impl.Close(); err != nil {
		c.fail("close: Close: %v", err)
	}
	if err := impl.Close(); err != nil {
		c.fail("close: a second Close: %v", err)
	}
}
