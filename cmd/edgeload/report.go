package main

import (
	"encoding/hex"
	"fmt"
	"math/bits"
	"sort"
	"strings"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/platform"
	"github.com/edgeload/edgeload/segment"
)

// report is what inspect shows: the JSON document of --json, from which
// the text output is printed too. The keys "format", "file_size",
// "segments", "named_data" and "tensors" are the stable interface; the
// others are extras.
type report struct {
	Format    string       `json:"format"`
	Legacy    bool         `json:"legacy,omitempty"` // a 2025-legacy .ptd
	FileSize  int64        `json:"file_size"`
	Segments  []segmentRep `json:"segments"`
	NamedData []namedRep   `json:"named_data"`
	Tensors   []tensorRep  `json:"tensors"`

	Header    []field       `json:"-"` // printed as text; in JSON as header
	HeaderMap orderedFields `json:"header"`
	Methods   []methodRep   `json:"methods,omitempty"`
	Delegates []delegateRep `json:"delegates,omitempty"`
	Graph     *graphRep     `json:"graph,omitempty"`
	Metadata  orderedFields `json:"metadata,omitempty"`
	DataFiles []string      `json:"data_files,omitempty"`
	UseOrder  useOrderRep   `json:"use_order"`
	Bundle    *bundleRep    `json:"bundle,omitempty"` // the bundled program the model came from
	Warnings  []string      `json:"warnings"`
}

// field is a named header value, kept in order for the text output.
type field struct {
	Name  string
	Value any
}

// orderedFields marshals as a JSON object with its keys in order.
type orderedFields []field

// MarshalJSON writes the fields as an object, keys in order.
func (o orderedFields) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(f.Name)
		if err != nil {
			return nil, err
		}
		v, err := marshal(f.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
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

type methodRep struct {
	Name         string `json:"name"`
	Values       int    `json:"values"`
	Inputs       int    `json:"inputs"`
	Outputs      int    `json:"outputs"`
	Operators    int    `json:"operators"`
	Chains       int    `json:"chains"`
	Instructions int    `json:"instructions"`
	Delegates    int    `json:"delegates"`
}

type delegateRep struct {
	Method       string `json:"method"`
	Index        int    `json:"index"`
	ID           string `json:"id"`
	Location     string `json:"location"`
	Segment      *int   `json:"segment"` // nil for an inline blob
	Offset       int64  `json:"offset"`
	Size         int64  `json:"size"`
	CompileSpecs int    `json:"compile_specs"`
}

type graphRep struct {
	Nodes     int            `json:"nodes"`
	Operators int            `json:"operators"`
	Constants int            `json:"constants"`
	Values    int            `json:"values"`
	Inputs    int            `json:"inputs"`
	Outputs   int            `json:"outputs"`
	Subgraphs int            `json:"subgraphs"`
	OpTypes   map[string]int `json:"op_types"`
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

// buildReport describes m. With sums, each tensor whose bytes are available
// gets the SHA-256 of its bytes (read fault-safe).
func buildReport(m *loader.Model, sums bool) (*report, error) {
	r := &report{
		Format:    m.Format().String(),
		FileSize:  m.Size(),
		Segments:  []segmentRep{},
		NamedData: []namedRep{},
		Tensors:   []tensorRep{},
		Warnings:  []string{},
	}
	kinds := segmentKinds(m)
	for i, s := range m.Segments() {
		r.Segments = append(r.Segments, segmentRep{Index: i, Offset: s.Offset(), Size: s.Len(), Align: alignOf(s.Offset()), Kind: kinds[i]})
	}
	for _, nd := range m.NamedData() {
		r.NamedData = append(r.NamedData, namedRep{Key: nd.Key, Segment: nd.Segment, Offset: nd.Data.Offset(), Size: nd.Data.Len()})
	}
	for i := range m.Tensors() {
		t := &m.Tensors()[i]
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
			if sums {
				sum, err := t.Data.SHA256()
				if err != nil {
					return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
				}
				tr.SHA256 = hex.EncodeToString(sum[:])
			}
		}
		r.Tensors = append(r.Tensors, tr)
	}
	for _, d := range m.DataFiles() {
		r.DataFiles = append(r.DataFiles, d.MappedFile().Name())
	}
	switch {
	case m.Program() != nil:
		describePTE(r, m.Program())
	case m.DataFile() != nil:
		f := m.DataFile()
		h := f.Header()
		r.Legacy = f.Legacy()
		r.Header = []field{
			{"identifier", "FT01"},
			{"header_length", h.Length},
			{"flatbuffer_offset", h.FlatBufferOffset},
			{"flatbuffer_size", h.FlatBufferSize},
			{"segment_base_offset", h.SegmentBaseOffset},
			{"segment_data_size", h.SegmentDataSize},
			{"version", f.Version()},
			{"legacy_layout", f.Legacy()},
		}
		if f.Legacy() {
			r.Header = append(r.Header, field{"tensor_alignment", f.TensorAlignment()})
		}
	case m.RTen() != nil:
		describeRTen(r, m.RTen())
	}
	r.Bundle = describeBundle(m)
	r.HeaderMap = orderedFields(r.Header)
	var err error
	if r.UseOrder, err = useOrders(m); err != nil {
		return nil, err
	}
	r.Warnings = append(r.Warnings, alignmentWarnings(m.Segments())...)
	return r, nil
}

// segmentKinds says what each of a program's segments holds, from the
// tensors, delegates and named data that point into it.
func segmentKinds(m *loader.Model) []string {
	kinds := make([]string, len(m.Segments()))
	add := func(i int, k string) {
		if i < 0 || i >= len(kinds) || strings.Contains(kinds[i], k) {
			return
		}
		if kinds[i] != "" {
			kinds[i] += "+"
		}
		kinds[i] += k
	}
	switch {
	case m.Program() != nil:
		p := m.Program()
		for i := range p.Tensors() {
			t := &p.Tensors()[i]
			switch t.Location {
			case format.LocSegment:
				add(t.Segment, "constant")
			case format.LocMutable:
				add(t.Segment, "mutable")
			}
		}
		for _, d := range p.Delegates() {
			if d.Location == pte.DelegateSegment {
				add(d.SegmentIndex, "delegate")
			}
		}
		for _, nd := range p.NamedData() {
			add(nd.Segment, "named_data")
		}
	case m.DataFile() != nil:
		for _, nd := range m.NamedData() {
			add(nd.Segment, "named_data")
		}
		if m.DataFile().Legacy() {
			for i := range kinds {
				if kinds[i] == "" {
					kinds[i] = "tensors"
				}
			}
		}
	case m.RTen() != nil:
		for i := range kinds {
			kinds[i] = "tensor_data"
		}
	}
	return kinds
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

func describePTE(r *report, p *pte.Program) {
	h := p.Header()
	r.Header = []field{
		{"identifier", h.Identifier},
		{"root_offset", h.RootOffset},
		{"extended_header", h.Extended},
	}
	if h.Extended {
		r.Header = append(r.Header,
			field{"extended_header_length", h.Length},
			field{"program_size", h.ProgramSize},
			field{"segment_base_offset", h.SegmentBase})
		if h.SegmentDataSizeKnown {
			r.Header = append(r.Header, field{"segment_data_size", h.SegmentDataSize})
		}
	} else {
		r.Header = append(r.Header, field{"program_size", h.ProgramSize})
	}
	r.Header = append(r.Header,
		field{"version", p.Version()},
		field{"legacy_constant_buffer", p.Legacy()})
	for _, me := range p.Methods() {
		mr := methodRep{Name: me.Name, Values: me.NumValues(), Inputs: len(me.Inputs), Outputs: len(me.Outputs),
			Operators: len(me.Operators), Chains: len(me.Chains), Delegates: len(me.Delegates)}
		for _, c := range me.Chains {
			mr.Instructions += c.Instructions
		}
		r.Methods = append(r.Methods, mr)
	}
	for _, d := range p.Delegates() {
		dr := delegateRep{Method: d.Method, Index: d.Index, ID: d.ID, Location: d.Location.String(),
			Offset: d.Data.Offset(), Size: d.Data.Len(), CompileSpecs: len(d.CompileSpecs)}
		if d.Location == pte.DelegateSegment {
			s := d.SegmentIndex
			dr.Segment = &s
		}
		r.Delegates = append(r.Delegates, dr)
	}
	if total, unresolved := p.External(); unresolved > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d of %d external tensors are not resolved: pass the .ptd file that holds them with --data", unresolved, total))
	}
}

func describeRTen(r *report, m *rten.Model) {
	h := m.Header()
	r.Header = []field{{"version", h.Version}, {"model_offset", h.ModelOffset}, {"model_len", h.ModelLen}}
	if h.Version >= 2 {
		r.Header = append(r.Header, field{"tensor_data_offset", h.TensorDataOffset})
	}
	g := &graphRep{OpTypes: map[string]int{}}
	m.Graph().Walk(func(gr *rten.Graph) bool {
		if gr != m.Graph() {
			g.Subgraphs++
		}
		for _, n := range gr.Nodes {
			g.Nodes++
			switch n.Kind {
			case rten.KindOperator:
				g.Operators++
				if n.Op != nil {
					g.OpTypes[n.Op.Type.String()]++
				}
			case rten.KindConstant:
				g.Constants++
			case rten.KindValue:
				g.Values++
			}
		}
		return true
	})
	g.Inputs, g.Outputs = len(m.Graph().Inputs), len(m.Graph().Outputs)
	r.Graph = g
	md := m.Metadata()
	for _, f := range []field{
		{"onnx_hash", md.ONNXHash}, {"description", md.Description}, {"license", md.License},
		{"commit", md.Commit}, {"code_repository", md.CodeRepository}, {"model_repository", md.ModelRepository},
		{"run_id", md.RunID}, {"run_url", md.RunURL},
	} {
		if f.Value != "" {
			r.Metadata = append(r.Metadata, f)
		}
	}
	r.Warnings = append(r.Warnings, m.Warnings()...)
}

// opSummary lists operator types by count, most frequent first.
func opSummary(ops map[string]int) string {
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range ops {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].v != l[j].v {
			return l[i].v > l[j].v
		}
		return l[i].k < l[j].k
	})
	var parts []string
	for _, e := range l {
		parts = append(parts, fmt.Sprintf("%s×%d", e.k, e.v))
	}
	return strings.Join(parts, " ")
}

// sizeName writes a byte count as "1.3 MiB", "512 B", "16 KiB".
func sizeName(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	suffix := "KMGTPE"[exp : exp+1]
	if n%div == 0 {
		return fmt.Sprintf("%d %siB", n/div, suffix)
	}
	return fmt.Sprintf("%.1f %siB", v, suffix)
}
