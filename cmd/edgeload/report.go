package main

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strings"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/platform"
	"github.com/edgeload/edgeload/segment"
)

// inspection is what inspect learns about a model before it writes a byte:
// everything that can fail on a bad file (each tensor's SHA-256, the use
// orders, the format's own report), so that an invalid file gives an error
// and no output. It holds no copy of the tensor list: the report is
// written from the model tensor by tensor.
//
// The JSON report's keys are, in order: "format", "file_size", "segments",
// "named_data" and "tensors" (the stable interface), then the members the
// format adds (format.Reporter), "data_files", "use_order" and "warnings".
type inspection struct {
	m        *loader.Model
	sums     [][sha256.Size]byte // with --sha256, by tensor; zero where unresolved
	segments []segmentRep
	fields   []rawField   // the format's JSON members, marshalled
	text     []byte       // the format's text sections
	orders   []groupOrder // the use order of each group
	warnings []string
}

// rawField is a member of the JSON report, its value marshalled.
type rawField struct {
	key   string
	value json.RawMessage
}

// groupOrder is a group's use order: tensor indices.
type groupOrder struct {
	group string
	order []int
}

// inspect reads what the report of m needs (see inspection). With sums it
// reads every resolved tensor's bytes for their SHA-256; asJSON selects
// which of the format's reports (fields or text) to prepare.
func inspect(m *loader.Model, sums, asJSON bool) (*inspection, error) {
	in := &inspection{m: m, segments: segmentReps(m), warnings: []string{}}
	if sums {
		in.sums = make([][sha256.Size]byte, m.NumTensors())
		for i := range in.sums {
			t := m.TensorAt(i)
			if !t.Resolved() {
				continue
			}
			sum, err := t.Data.SHA256()
			if err != nil {
				return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
			}
			in.sums[i] = sum
		}
	}
	if rep, ok := m.Impl().(format.Reporter); ok {
		if asJSON {
			for _, f := range rep.ReportFields() {
				b, err := marshal(f.Value)
				if err != nil {
					return nil, fmt.Errorf("report field %q: %w", f.Key, err)
				}
				in.fields = append(in.fields, rawField{f.Key, b})
			}
		} else {
			var b bytes.Buffer
			b.WriteByte('\n') // each section after a blank line
			if err := rep.ReportText(&b); err != nil {
				return nil, err
			}
			in.text = b.Bytes()
			if bytes.HasPrefix(in.text, []byte("\n\n")) {
				in.text = in.text[1:]
			}
		}
	}
	var err error
	if in.orders, err = useOrders(m); err != nil {
		return nil, err
	}
	if w, ok := m.Impl().(format.Warner); ok {
		in.warnings = append(in.warnings, w.Warnings()...)
	}
	in.warnings = append(in.warnings, alignmentWarnings(m.Segments())...)
	return in, nil
}

// segmentReps describes m's segments, with what each holds where the
// format says (format.SegmentKinder) and the index it gives each
// (format.SegmentIndexer: a TFLite buffer's).
func segmentReps(m *loader.Model) []segmentRep {
	var kinds []string
	if k, ok := m.Impl().(format.SegmentKinder); ok {
		kinds = k.SegmentKinds()
	}
	segs := m.Segments()
	out := make([]segmentRep, len(segs))
	ix, _ := m.Impl().(format.SegmentIndexer)
	for i, s := range segs {
		out[i] = segmentRep{Index: i, Offset: s.Offset(), Size: s.Len(), Align: alignOf(s.Offset())}
		if ix != nil {
			out[i].Index = ix.SegmentIndex(i)
		}
		if i < len(kinds) {
			out[i].Kind = kinds[i]
		}
	}
	if ix != nil {
		// by the format's own index (a TFLite buffer's), as readers list them
		slices.SortStableFunc(out, func(a, b segmentRep) int { return cmp.Compare(a.Index, b.Index) })
	}
	return out
}

// tensorRep returns tensor i as the report shows it.
func (in *inspection) tensorRep(i int) tensorRep {
	t := in.m.TensorAt(i)
	tr := tensorRep{
		Name: t.Name, DType: t.DType.String(), Shape: t.Shape, Location: t.Location.String(),
		NBytes: t.NBytes, NameExplicit: t.NameExplicit, DataFile: t.DataFile,
	}
	if tr.Shape == nil {
		tr.Shape = []int64{}
	}
	if t.Resolved() {
		off := t.Offset
		tr.Offset = &off
		if in.sums != nil {
			tr.SHA256 = hex.EncodeToString(in.sums[i][:])
		}
	}
	return tr
}

// writeJSON writes the report as one indented JSON object, as it goes:
// tensors and use orders element by element, never the whole document in
// memory. It returns the first error writing w.
func (in *inspection) writeJSON(w io.Writer) error {
	ew := &errWriter{w: w}
	j := &jsonOut{w: bufio.NewWriterSize(ew, 64<<10), ew: ew}
	m := in.m
	j.begin('{')
	j.member("format", m.Format().String())
	j.member("file_size", m.Size())
	j.list("segments", len(in.segments), func(i int) any { return in.segments[i] })
	named := m.NamedData()
	j.list("named_data", len(named), func(i int) any {
		nd := named[i]
		return namedRep{Key: nd.Key, Segment: nd.Segment, Offset: nd.Data.Offset(), Size: nd.Data.Len()}
	})
	j.list("tensors", m.NumTensors(), func(i int) any { return in.tensorRep(i) })
	for _, f := range in.fields {
		j.key(f.key)
		j.raw(f.value)
	}
	if ds := m.DataFiles(); len(ds) > 0 {
		j.list("data_files", len(ds), func(i int) any { return ds[i].MappedFile().Name() })
	}
	j.key("use_order")
	j.begin('{')
	for _, o := range in.orders {
		j.list(o.group, len(o.order), func(i int) any { return m.TensorAt(o.order[i]).Name })
	}
	j.end('}')
	j.member("warnings", in.warnings)
	j.end('}')
	j.w.WriteByte('\n')
	return j.flush()
}

// jsonOut writes indented JSON (as json.MarshalIndent with two spaces) one
// member or element at a time.
type jsonOut struct {
	w       *bufio.Writer
	ew      *errWriter
	counts  []int // the members written so far in each open object or array
	scratch bytes.Buffer
	err     error // the first error marshalling a value
}

// errWriter remembers the first error writing w.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// failed reports whether writing or marshalling failed: what follows is
// not written.
func (j *jsonOut) failed() bool { return j.err != nil || j.ew.err != nil }

func (j *jsonOut) flush() error {
	if err := j.w.Flush(); err != nil {
		return err
	}
	return j.err
}

func (j *jsonOut) newline() {
	j.w.WriteByte('\n')
	for range len(j.counts) {
		j.w.WriteString("  ")
	}
}

// begin opens an object ('{') or array ('[').
func (j *jsonOut) begin(c byte) {
	j.w.WriteByte(c)
	j.counts = append(j.counts, 0)
}

// end closes the innermost object ('}') or array (']').
func (j *jsonOut) end(c byte) {
	n := j.counts[len(j.counts)-1]
	j.counts = j.counts[:len(j.counts)-1]
	if n > 0 {
		j.newline()
	}
	j.w.WriteByte(c)
}

// next starts the next member or element of the innermost object or array.
func (j *jsonOut) next() {
	k := len(j.counts) - 1
	if j.counts[k] > 0 {
		j.w.WriteByte(',')
	}
	j.counts[k]++
	j.newline()
}

// key starts an object member.
func (j *jsonOut) key(k string) {
	j.next()
	j.value(k)
	j.w.WriteString(": ")
}

// member writes an object member.
func (j *jsonOut) member(k string, v any) {
	j.key(k)
	j.value(v)
}

// list writes the member k: an array of n elements, the i-th at(i), up to
// the first failure.
func (j *jsonOut) list(k string, n int, at func(i int) any) {
	j.key(k)
	j.begin('[')
	for i := 0; i < n && !j.failed(); i++ {
		j.next()
		j.value(at(i))
	}
	j.end(']')
}

// value writes v, marshalled, at the current depth.
func (j *jsonOut) value(v any) {
	b, err := marshal(v)
	j.err = cmp.Or(j.err, err)
	if err == nil {
		j.raw(b)
	}
}

// raw writes a marshalled value at the current depth.
func (j *jsonOut) raw(b []byte) {
	j.scratch.Reset()
	err := json.Indent(&j.scratch, b, strings.Repeat("  ", len(j.counts)), "  ")
	j.err = cmp.Or(j.err, err)
	if err == nil {
		j.w.Write(j.scratch.Bytes())
	}
}

// marshal is json.Marshal without its escaping of <, > and &, which the
// report is not embedded in HTML to need: a dtype "<f4" stays "<f4".
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

type segmentRep struct {
	Index  int    `json:"index"`
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	Align  int64  `json:"align"`          // largest power of two dividing Offset (capped)
	Kind   string `json:"kind,omitempty"` // what the segment holds, where known
}

type namedRep struct {
	Key     string `json:"key"`
	Segment int    `json:"segment"`
	Offset  int64  `json:"offset"`
	Size    int64  `json:"size"`
}

type tensorRep struct {
	Name         string  `json:"name"`
	DType        string  `json:"dtype"`
	Shape        []int64 `json:"shape"`
	Location     string  `json:"location"`
	Offset       *int64  `json:"offset"`
	NBytes       int64   `json:"nbytes"`
	NameExplicit bool    `json:"name_explicit"`
	DataFile     string  `json:"data_file,omitempty"`
	SHA256       string  `json:"sha256,omitempty"`
}

// maxAlign caps the alignment shown for a segment (an offset of 0 is
// aligned to everything).
const maxAlign = 1 << 16

// alignOf returns the largest power of two (up to maxAlign) dividing off.
func alignOf(off int64) int64 {
	if off == 0 {
		return maxAlign
	}
	a := int64(1) << bits.TrailingZeros64(uint64(off))
	return min(a, maxAlign)
}

// alignmentWarnings reports non-empty segments that do not start on a page
// boundary, for the host's page size and for 16 KiB pages: Release can free
// only the pages wholly inside such a segment.
func alignmentWarnings(segs []segment.Segment) []string {
	var w []string
	sizes := []int{platform.PageSize()}
	if sizes[0] < 16384 {
		sizes = append(sizes, 16384)
	}
	for k, ps := range sizes {
		var bad []string
		n := 0
		for i, s := range segs {
			if s.Len() == 0 {
				continue
			}
			n++
			// For 16 KiB pages, list only the segments the host's
			// warning did not already list.
			if s.Offset()%int64(ps) != 0 && (k == 0 || s.Offset()%int64(sizes[0]) == 0) {
				bad = append(bad, fmt.Sprint(i))
			}
		}
		if len(bad) == 0 {
			continue
		}
		list := strings.Join(bad, ", ")
		if len(bad) > 8 {
			list = strings.Join(bad[:8], ", ") + ", ..."
		}
		what, it := fmt.Sprintf("segment %s is", list), "it"
		if len(bad) > 1 {
			what, it = fmt.Sprintf("segments %s (%d of %d non-empty) are", list, len(bad), n), "them"
		}
		if k == 0 {
			w = append(w, fmt.Sprintf("%s not aligned to the %s page size: releasing %s frees only the pages wholly inside %s", what, sizeName(int64(ps)), it, it))
		} else {
			w = append(w, fmt.Sprintf("%s aligned to the host's pages but not to %s pages (Android 15+, iOS)", what, sizeName(int64(ps))))
		}
	}
	return w
}

// sizeName writes a byte count as "512 B", "16 KiB" or "1.3 MiB".
var sizeName = format.SizeName
