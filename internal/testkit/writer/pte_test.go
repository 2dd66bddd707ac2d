package writer_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// pteFromProgram describes a program with the same methods and tensors as
// p (read through the loader), for the writer to write again.
func pteFromProgram(t *testing.T, p *pte.Program) *writer.PTE {
	t.Helper()
	w := &writer.PTE{Legacy: p.Legacy()}
	for _, m := range p.Methods() {
		wm := writer.PTEMethod{Name: m.Name}
		for _, pt := range p.Tensors() {
			if pt.Method != m.Name {
				continue
			}
			data, err := pt.Data.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			wt := writer.PTETensor{ScalarType: pt.ScalarType, DimOrder: pt.DimOrder, Data: data}
			if pt.NameExplicit {
				wt.Name = pt.Name
			}
			for _, s := range pt.Shape {
				wt.Sizes = append(wt.Sizes, int32(s))
			}
			switch pt.Location {
			case format.LocMutable:
				wt.Kind = writer.PTEMutable
			case format.LocExternal:
				wt.Kind, wt.Data = writer.PTEExternal, nil
			}
			wm.Tensors = append(wm.Tensors, wt)
		}
		w.Methods = append(w.Methods, wm)
	}
	return w
}

// TestPTERoundTripRealFiles writes programs with the tensors of two real
// files and reads them back: dtype, shape and bytes must be identical.
func TestPTERoundTripRealFiles(t *testing.T) {
	for _, name := range []string{"arduino-add.pte", "arduino-keyword-spotting.pte", "linear-inline-constant-buffer.pte"} {
		t.Run(name, func(t *testing.T) {
			orig, err := pte.NewFile(mapFile(t, testmodels.Path(t, "pte/"+name)))
			if err != nil {
				t.Fatal(err)
			}
			defer orig.Close()
			w := pteFromProgram(t, orig)
			path := filepath.Join(t.TempDir(), name)
			info, err := w.WriteFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pte.NewFile(mapFile(t, path))
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close()
			if got.FileSize() != info.FileSize {
				t.Errorf("file size %d, writer says %d", got.FileSize(), info.FileSize)
			}
			a, b := orig.Tensors(), got.Tensors()
			if len(a) != len(b) || len(a) == 0 {
				t.Fatalf("%d tensors written, %d read back", len(a), len(b))
			}
			for i := range a {
				ab, err := a[i].Data.Bytes()
				if err != nil {
					t.Fatal(err)
				}
				bb, err := b[i].Data.Bytes()
				if err != nil {
					t.Fatal(err)
				}
				if a[i].DType != b[i].DType || !pteEqualShape(a[i].Shape, b[i].Shape) || !bytes.Equal(ab, bb) ||
					a[i].Location != b[i].Location || a[i].Name != b[i].Name {
					t.Errorf("tensor %d: wrote %s %s %v %s (%d bytes), read %s %s %v %s (%d bytes)", i,
						a[i].Name, a[i].DType, a[i].Shape, a[i].Location, len(ab), b[i].Name, b[i].DType, b[i].Shape, b[i].Location, len(bb))
				}
				if b[i].Offset != info.Tensors[0][i].Offset {
					t.Errorf("tensor %d at %d, writer placed it at %d", i, b[i].Offset, info.Tensors[0][i].Offset)
				}
				if !orig.Legacy() && b[i].Offset%16 != 0 {
					t.Errorf("tensor %d at %d: not 16-aligned", i, b[i].Offset)
				}
			}
		})
	}
}

func pteEqualShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPTELayoutKnobs checks the header, alignment and sparse-hole knobs
// against the bytes written.
func TestPTELayoutKnobs(t *testing.T) {
	for _, tc := range []struct {
		hlen  uint32
		align int64
	}{{24, 0}, {32, 4096}, {40, 16384}} {
		w := &writer.PTE{
			HeaderLength:     tc.hlen,
			SegmentAlignment: tc.align,
			Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{
				{ScalarType: writer.PTEFloat32, Sizes: []int32{1 << 20}}, // 4 MiB hole
				{ScalarType: writer.PTEInt8, Sizes: []int32{3}, Data: []byte{1, 2, 3}},
			}}},
			NamedData: []writer.PTEBlob{{Key: "k", Data: []byte("blob")}},
		}
		path := filepath.Join(t.TempDir(), "p.pte")
		info, err := w.WriteFile(path)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(raw)) != info.FileSize || string(raw[4:8]) != "ET12" || string(raw[8:12]) != "eh00" {
			t.Fatalf("hlen %d: bad prefix %q or size %d != %d", tc.hlen, raw[:12], len(raw), info.FileSize)
		}
		align := tc.align
		if align == 0 {
			align = 128
		}
		if info.SegmentBase%align != 0 || info.SegmentBase < info.ProgramSize {
			t.Errorf("segment base %d not %d-aligned after program %d", info.SegmentBase, align, info.ProgramSize)
		}
		for _, s := range info.Segments {
			if s[0]%align != 0 {
				t.Errorf("segment at %d not %d-aligned", s[0], align)
			}
		}
		if got := raw[info.Tensors[0][1].Offset : info.Tensors[0][1].Offset+3]; !bytes.Equal(got, []byte{1, 2, 3}) {
			t.Errorf("tensor bytes %v", got)
		}
		if got := raw[info.NamedData[0].Offset : info.NamedData[0].Offset+4]; string(got) != "blob" {
			t.Errorf("named data bytes %q", got)
		}
		if disk, ok := writer.DiskUsage(path); ok && disk > 1<<20 {
			t.Errorf("the 4 MiB hole takes %d bytes on disk: not sparse", disk)
		}
	}
}

// TestPTETensorAlignment: constants sit at TensorAlignment-aligned offsets
// inside the constant segment, and the loader finds each one there.
func TestPTETensorAlignment(t *testing.T) {
	for _, align := range []int64{1, 16, 64, 256} {
		w := &writer.PTE{TensorAlignment: align, Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{
			{ScalarType: writer.PTEInt8, Sizes: []int32{3}, Data: []byte{1, 2, 3}},
			{ScalarType: writer.PTEInt8, Sizes: []int32{5}, Data: []byte{4, 5, 6, 7, 8}},
			{ScalarType: writer.PTEInt8, Sizes: []int32{1}, Data: []byte{9}},
		}}}}
		raw, err := w.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		p, err := pte.NewFile(mmapfile.NewBytes(raw))
		if err != nil {
			t.Fatal(err)
		}
		base := p.Segments()[0].Offset()
		var prev int64 = -1
		for i, tt := range p.Tensors() {
			rel := tt.Offset - base
			if rel%align != 0 || rel <= prev {
				t.Errorf("align %d: tensor %d at segment offset %d", align, i, rel)
			}
			prev = rel
			b, _ := tt.Data.Bytes()
			if !bytes.Equal(b, w.Methods[0].Tensors[i].Data) {
				t.Errorf("align %d: tensor %d reads %v", align, i, b)
			}
		}
		p.Close()
	}
}
