package main

import (
	"os"
	"syscall"
	"testing"
	"unsafe"

	gguf_parser "github.com/gpustack/gguf-parser-go"
	nlpst "github.com/nlpodyssey/safetensors"

	"github.com/edgeload/edgeload/loader/gguf"
	"github.com/edgeload/edgeload/loader/safetensors"
	"github.com/edgeload/edgeload/mmapfile"
)

// TestPeersAgree checks that every generated file is read alike by
// edgeload and the Go peer of its format: the same tensors, each with the
// same shape and data offset, the sizes gen promises, and that every Go
// peer finds the tensor a load looks up.
func TestPeersAgree(t *testing.T) {
	files, err := generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"gguf-300": 300, "st-300": len(stModel()), "st-10000": 10000}
	for _, f := range files {
		t.Run(f.Case, func(t *testing.T) {
			mf, err := mmapfile.Open(f.Path)
			if err != nil {
				t.Fatal(err)
			}
			defer mf.Close()
			if f.Case == "gguf-300" {
				checkGGUF(t, mf, f, want[f.Case])
			} else {
				checkST(t, mf, f, want[f.Case])
			}
			for _, spec := range caseSpecs(f, "self", "", "") {
				name := spec.Name
				p := goPeers[name]
				if p.prepare != nil {
					if err := p.prepare(f.Path); err != nil {
						t.Fatal(err)
					}
				}
				cl, err := p.open(f.Path, f.Tensor)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				cl()
				if _, err := p.open(f.Path, "no.such.tensor"); err == nil {
					t.Errorf("%s finds a tensor that is not there", name)
				}
			}
		})
	}
}

func checkGGUF(t *testing.T, mf *mmapfile.File, f genFile, n int) {
	ef, err := gguf.NewFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := gguf_parser.ParseGGUFFile(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	if ef.NumTensors() != n || len(pf.TensorInfos) != n {
		t.Fatalf("tensors: edgeload %d, gguf-parser-go %d, want %d", ef.NumTensors(), len(pf.TensorInfos), n)
	}
	if ef.DataOffset() != pf.TensorDataStartOffset {
		t.Errorf("data offset: edgeload %d, gguf-parser-go %d", ef.DataOffset(), pf.TensorDataStartOffset)
	}
	for _, pt := range pf.TensorInfos {
		et, ok := ef.Tensor(pt.Name)
		if !ok {
			t.Fatalf("edgeload has no %s", pt.Name)
		}
		if uint64(et.RelOffset) != pt.Offset || uint32(et.Type) != uint32(pt.Type) || et.NDims != int(pt.NDimensions) {
			t.Errorf("%s: edgeload %d %v %d, gguf-parser-go %d %v %d", pt.Name, et.RelOffset, et.Type, et.NDims, pt.Offset, pt.Type, pt.NDimensions)
		}
		for i, d := range pt.Dimensions {
			if uint64(et.NE[i]) != d {
				t.Errorf("%s: dimension %d: edgeload %d, gguf-parser-go %d", pt.Name, i, et.NE[i], d)
			}
		}
	}
	tok, ok := ef.MetaArray("tokenizer.ggml.tokens")
	if !ok || tok.Len() != 150000 {
		t.Errorf("vocabulary: %v %d, want 150000 tokens", ok, tok.Len())
	}
	if st, _ := os.Stat(f.Path); st.Size() < 1<<30 {
		t.Errorf("file is %d bytes, want more than 1 GiB", st.Size())
	}
}

func checkST(t *testing.T, mf *mmapfile.File, f genFile, n int) {
	ef, err := safetensors.NewFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	b, err := mmapBytes(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	pf, err := nlpst.Deserialize(b)
	if err != nil {
		t.Fatal(err)
	}
	if ef.NumTensors() != n || pf.Len() != n {
		t.Fatalf("tensors: edgeload %d, nlpodyssey %d, want %d", ef.NumTensors(), pf.Len(), n)
	}
	for _, nt := range pf.Tensors() {
		et, ok := ef.Tensor(nt.Name)
		if !ok {
			t.Fatalf("edgeload has no %s", nt.Name)
		}
		v := nt.TensorView
		if off := uintptr(unsafe.Pointer(unsafe.SliceData(v.Data()))) - uintptr(unsafe.Pointer(&b[0])); int64(off) != et.Offset {
			t.Errorf("%s: data at %d, nlpodyssey %d", nt.Name, et.Offset, off)
		}
		if int64(v.DataLen()) != et.NBytes || len(v.Shape()) != len(et.Shape) {
			t.Errorf("%s: edgeload %d bytes %v, nlpodyssey %d bytes %v", nt.Name, et.NBytes, et.Shape, v.DataLen(), v.Shape())
		}
		for i, d := range v.Shape() {
			if int64(d) != et.Shape[i] {
				t.Errorf("%s: shape %v, nlpodyssey %v", nt.Name, et.Shape, v.Shape())
			}
		}
	}
}
