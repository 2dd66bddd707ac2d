package repack_test

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/repack"
)

func f32(n int, start float32) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(start+float32(i)))
	}
	return b
}

// writerProgram is a program with two methods, constants shared between
// them (under one name and under two), a mutable tensor, delegates in a
// segment, inline and sharing a segment, and named data. It returns the
// tensors a reader must find, derived from the bytes given to the writer.
func writerProgram() (*writer.PTE, []repack.TensorSum) {
	w, b, s, st := f32(16, 1), f32(3, 100), f32(4, -7), f32(5, 0.5)
	p := &writer.PTE{
		Methods: []writer.PTEMethod{{
			Name: "forward",
			Tensors: []writer.PTETensor{
				{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{4, 4}, Name: "enc.weight", Data: w},
				{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{3}, Data: b},
				{Kind: writer.PTEMutable, ScalarType: writer.PTEFloat32, Sizes: []int32{2, 2}, Name: "state", Data: s},
				{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{1, 4}},
			},
			Inputs: []int32{3}, Outputs: []int32{3},
			Operators:           []string{"aten::linear", "aten::add"},
			NonConstBufferSizes: []int64{0, 64},
			Delegates: []writer.PTEDelegate{
				{ID: "BackendA", CompileSpecs: []writer.PTECompileSpec{{Key: "k", Value: []byte{1, 2}}}, Blob: writer.PTEBlob{Data: []byte("blob A in a segment")}},
				{ID: "BackendB", Inline: true, Blob: writer.PTEBlob{Data: []byte("blob B inline")}},
			},
		}, {
			Name: "decode",
			Tensors: []writer.PTETensor{
				{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{4, 4}, Name: "enc.weight", BufferRef: 1},
				{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{5}, Name: "dec.bias", Data: st},
				{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{3}, BufferRef: 2},
				{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{1, 4}},
			},
			Inputs: []int32{3}, Outputs: []int32{3},
			NonConstBufferSizes: []int64{0, 16},
			Delegates: []writer.PTEDelegate{
				// Shares BackendA's segment (segment 2: constant 0, mutable 1).
				{ID: "BackendA", Blob: writer.PTEBlob{Ref: 3}},
			},
		}},
		NamedData: []writer.PTEBlob{
			{Key: "sha256:aa", Data: []byte("named blob one")},
			{Key: "sha256:bb", Data: make([]byte, 5000)},
		},
	}
	want := []repack.TensorSum{
		{Name: "enc.weight", DType: "float32", Shape: []int64{4, 4}, SHA256: sha(w)},
		{Name: "forward/values/1", DType: "float32", Shape: []int64{3}, SHA256: sha(b)},
		{Name: "state", DType: "float32", Shape: []int64{2, 2}, SHA256: sha(s)},
		{Name: "enc.weight", DType: "float32", Shape: []int64{4, 4}, SHA256: sha(w)},
		{Name: "dec.bias", DType: "float32", Shape: []int64{5}, SHA256: sha(st)},
		{Name: "decode/values/2", DType: "float32", Shape: []int64{3}, SHA256: sha(b)},
	}
	return p, want
}

func TestWriterProgram(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		p, want := writerProgram()
		p.Legacy = legacy
		if legacy {
			// The legacy layout has no mutable segment and no sharing by
			// BufferRef in this test.
			p.Methods[0].Tensors[2].Kind = writer.PTEPlanned
			p.Methods[0].Tensors[2].Data = nil
			want = append(want[:2:2], want[3:]...)
		}
		dir := t.TempDir()
		in := filepath.Join(dir, "in.pte")
		if _, err := p.WriteFile(in); err != nil {
			t.Fatal(err)
		}
		sameSums(t, "writer input vs expected", sums(t, in), want)
		for _, l := range layouts {
			for _, ext := range []bool{false, true} {
				name := l.name
				opts := l.opts
				if ext {
					name += "-externalize"
					opts.Externalize = filepath.Join(dir, name+".ptd")
				}
				if legacy {
					name += "-legacy"
				}
				t.Run(name, func(t *testing.T) {
					out, b := repackFile(t, in, dir, name+".pte", opts)
					var data []string
					if ext {
						data = append(data, opts.Externalize)
						checkExternalWriter(t, out, opts.Externalize)
						checkAlignment(t, opts.Externalize, mustRead(t, opts.Externalize), opts.Align, opts.TensorAlign)
					}
					sameSums(t, "output vs expected", sums(t, out, data...), want)
					checkAlignment(t, out, b, opts.Align, opts.TensorAlign)
					checkBlobs(t, in, out)
				})
			}
		}
	}
}

// checkExternalWriter checks the .ptd of writerProgram: the three distinct
// constant buffers are stored once each, under four names.
func checkExternalWriter(t *testing.T, out, data string) {
	t.Helper()
	d, err := loader.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n := len(d.Segments()); n != 3 {
		t.Errorf("%s: %d segments, want 3 (one per distinct buffer)", data, n)
	}
	names := map[string]bool{}
	for _, tt := range d.Tensors() {
		names[tt.Name] = true
	}
	for _, n := range []string{"enc.weight", "forward/values/1", "dec.bias", "decode/values/2"} {
		if !names[n] {
			t.Errorf("%s: no entry %q (has %v)", data, n, names)
		}
	}
	m, err := loader.Open(out, loader.WithData(data))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, tt := range m.Tensors() {
		if (tt.Name == "state") != (tt.Location.String() == "mutable") {
			t.Errorf("tensor %s is %s", tt.Name, tt.Location)
		}
	}
}
