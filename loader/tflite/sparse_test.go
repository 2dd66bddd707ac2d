package tflite_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/tflite"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// describe renders what m hands out, its views as offsets and lengths, and
// its Relayout when relayout.
func describe(m *tflite.Model, relayout bool) string {
	var b strings.Builder
	p := func(a ...any) { fmt.Fprintln(&b, a...) }
	p(m.Version(), m.Description(), m.MinRuntimeVersion(), m.FlatBufferLen(), m.Check())
	if err := m.ReportText(&b); err != nil {
		p(err)
	}
	for _, sg := range m.Subgraphs() {
		p(sg.Index, sg.Name, sg.Group, sg.Inputs, sg.Outputs, sg.NumOperators)
		for _, t := range sg.Tensors {
			q, qerr := m.Quantization(&t)
			s, serr := m.Sparsity(&t)
			off, n := t.Data.Offset(), t.Data.Len()
			t.Data = segment.Segment{}
			p(fmt.Sprintf("%+v", t), off, n)
			if q != nil && q.Blockwise != nil {
				p(fmt.Sprintf("%+v", *q.Blockwise))
				q.Blockwise = nil
			}
			p(fmt.Sprintf("%+v %v %+v %v", q, qerr, s, serr))
		}
	}
	for _, g := range append(m.Groups(), "") {
		o, err := m.UseOrder(g)
		p(g, o, err)
	}
	p(fmt.Sprintf("%+v %+v %+v", m.OperatorCodes(), m.SignatureDefs(), m.ExternalBuffers()))
	for _, md := range m.Metadata() {
		p(md.Name, md.Buffer, md.Data.Offset(), md.Data.Len())
	}
	for _, f := range m.AssociatedFiles() {
		p(f.Name, f.Method, f.Size, f.Data.Offset(), f.Data.Len())
	}
	for _, bf := range m.Buffers() {
		p(bf.Kind, bf.Data.Offset(), bf.Data.Len())
	}
	if !relayout {
		return b.String()
	}
	if l, err := m.Relayout(format.RelayoutOptions{Align: 64}); err != nil {
		p(err)
	} else {
		p(l.Size, fmt.Sprintf("%x", sha256.Sum256(l.Head)))
		for _, pc := range l.Pieces {
			p(pc.Offset, pc.Data.Offset(), pc.Data.Len())
		}
	}
	return b.String()
}

// sparseSize is a size the package reads sparsely: 64 KiB + 1.
const sparseSize = 64<<10 + 1

// compareFile opens b, padded with zeros to sparseSize when shorter, from a
// file (the pooled buffer of sparse reads poisoned) and in memory (read in
// place), and fails unless both give the same error or the same model. It
// reports whether the file's FlatBuffer was read sparsely.
func compareFile(t *testing.T, b []byte, relayout bool) bool {
	t.Helper()
	if len(b) < sparseSize {
		b = append(b[:len(b):len(b)], make([]byte, sparseSize-len(b))...)
	}
	path := filepath.Join(t.TempDir(), "m.tflite")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	mf, err := mmapfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	tflite.PoisonImages()
	fm, ferr := tflite.NewFile(mf)
	mm, merr := open(b)
	if fmt.Sprint(ferr) != fmt.Sprint(merr) {
		t.Fatalf("from the file: %v; in memory: %v", ferr, merr)
	}
	if ferr != nil {
		return false
	}
	defer fm.Close()
	defer mm.Close()
	if f, m := describe(fm, relayout), describe(mm, relayout); f != m {
		t.Fatalf("the file gives\n%s\nmemory gives\n%s", f, m)
	}
	return tflite.Sparse(fm)
}

// TestSparseRead: a file read sparsely (its pages as the walk reads them,
// into a buffer whose other bytes are poison) gives the model its bytes give
// in memory: the real files, and the generated ones padded, three of them
// at least read sparsely, with pages of 4 KiB and of a byte (every byte a
// reader reads fetched).
func TestSparseRead(t *testing.T) {
	inputs := hostile.RealSeeds("tflite")
	for _, s := range generated() {
		inputs = append(inputs, s.Data)
	}
	sparse := 0
	for _, shift := range []int{fbverify.FetchPageShift, 0} {
		defer func(s int) { fbverify.FetchPageShift = s }(fbverify.FetchPageShift)
		fbverify.FetchPageShift = shift
		for _, b := range inputs {
			if compareFile(t, b, true) {
				sparse++
			}
		}
	}
	if sparse < 6 {
		t.Errorf("%d of %d files read sparsely, want at least 3", sparse/2, len(inputs))
	}
}

// FuzzSparseRead is compareFile's check of arbitrary bytes, read sparsely a
// byte at a time: FuzzOpen's, from small seeds only (the generated files)
// and without Relayout, which a fuzzer runs faster.
func FuzzSparseRead(f *testing.F) {
	for _, s := range generated() {
		f.Add(s.Data)
	}
	defer func(s int) { fbverify.FetchPageShift = s }(fbverify.FetchPageShift)
	fbverify.FetchPageShift = 0
	f.Fuzz(func(t *testing.T, b []byte) { compareFile(t, b, false) })
}
