package gguf_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile/ggufcheck"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/gguf"
	"github.com/edgeload/edgeload/mmapfile"
)

// realFiles returns the real GGUF files of ../shared/models/gguf.
func realFiles(t *testing.T) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(testmodels.Dir(t), "gguf", "*.gguf"))
	if len(m) == 0 {
		t.Fatal("no .gguf files in ../shared/models/gguf")
	}
	return m
}

// expectedGGUF is an expected/ file's GGUF members besides the shared ones.
type expectedGGUF struct {
	Version   uint32          `json:"version"`
	Alignment int64           `json:"alignment"`
	KVCount   int             `json:"kv_count"`
	Metadata  json.RawMessage `json:"metadata"`
}

// TestRealFiles reads every real file and compares it with its expected/
// JSON: segments, named data, tensors (with the SHA-256 of their bytes),
// version, alignment, kv_count and the metadata report; the v1 file must
// be refused as an unsupported version.
func TestRealFiles(t *testing.T) {
	for _, p := range realFiles(t) {
		t.Run(filepath.Base(p), func(t *testing.T) {
			e := testmodels.Load(t, p)
			mf, err := mmapfile.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer mf.Close()
			f, err := gguf.NewFile(mf)
			if e.ExitCode != 0 {
				var fe *format.FormatError
				if err == nil || !errors.As(err, &fe) || fe.Format != "gguf" || !errors.Is(err, format.ErrUnsupportedVersion) {
					t.Fatalf("opened a file the expected values refuse (%s): err = %v", e.Error, err)
				}
				if !strings.Contains(err.Error(), "version 1") {
					t.Errorf("error %q does not say it is version 1", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Format != "gguf" || e.FileSize != f.Size() {
				t.Errorf("format %q size %d, file has %d bytes", e.Format, e.FileSize, f.Size())
			}
			var segs []testmodels.Segment
			for i, s := range f.Segments() {
				segs = append(segs, testmodels.Segment{Index: i, Offset: s.Offset(), Size: s.Len()})
			}
			if !reflect.DeepEqual(segs, e.Segments) {
				t.Errorf("segments %v, want %v", segs, e.Segments)
			}
			if len(f.NamedData()) != 0 || len(e.NamedData) != 0 {
				t.Errorf("named data %v, want %v", f.NamedData(), e.NamedData)
			}
			if len(e.Tensors) != f.NumTensors() {
				t.Fatalf("%d tensors, want %d", f.NumTensors(), len(e.Tensors))
			}
			for _, et := range e.Tensors {
				tt, ok := f.Tensor(et.Name)
				if !ok {
					t.Errorf("tensor %q missing", et.Name)
					continue
				}
				sum, err := tt.Data.SHA256()
				if err != nil {
					t.Fatal(err)
				}
				if tt.DType.String() != et.DType || !reflect.DeepEqual(tt.Shape, et.Shape) || tt.Location.String() != et.Location ||
					et.Offset == nil || tt.Offset != *et.Offset || tt.NBytes != et.NBytes || hex.EncodeToString(sum[:]) != et.SHA256 {
					t.Errorf("tensor %q: %v %v %v at %d, %d bytes, sha %x; want %+v", et.Name, tt.DType, tt.Shape, tt.Location, tt.Offset, tt.NBytes, sum, et)
				}
			}
			raw, err := os.ReadFile(filepath.Join(testmodels.Dir(t), "expected", filepath.Base(p)+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var eg expectedGGUF
			if err := json.Unmarshal(raw, &eg); err != nil {
				t.Fatal(err)
			}
			rep := map[string]any{}
			for _, fl := range f.ReportFields() {
				rep[fl.Key] = fl.Value
			}
			if rep["version"] != eg.Version || rep["alignment"] != eg.Alignment || rep["kv_count"] != eg.KVCount || f.Version() != eg.Version {
				t.Errorf("version %v alignment %v kv_count %v; want %d %d %d", rep["version"], rep["alignment"], rep["kv_count"], eg.Version, eg.Alignment, eg.KVCount)
			}
			got, err := json.Marshal(rep["metadata"])
			if err != nil {
				t.Fatal(err)
			}
			if err := sameJSON(got, eg.Metadata); err != nil {
				t.Errorf("metadata: %v", err)
			}
			if err := ggufcheck.File(f); err != nil {
				t.Error(err)
			}
		})
	}
}

// sameJSON compares two JSON objects key by key in order, numbers by value
// (integers exactly, others as float64).
func sameJSON(got, want []byte) error {
	g, err := orderedDecode(got)
	if err != nil {
		return err
	}
	w, err := orderedDecode(want)
	if err != nil {
		return err
	}
	if len(g) != len(w) {
		return fmt.Errorf("%d keys, want %d", len(g), len(w))
	}
	for i := range w {
		if g[i].key != w[i].key {
			return fmt.Errorf("key %d is %q, want %q", i, g[i].key, w[i].key)
		}
		if !sameValue(g[i].val, w[i].val) {
			return fmt.Errorf("%q = %v, want %v", w[i].key, g[i].val, w[i].val)
		}
	}
	return nil
}

type member struct {
	key string
	val any
}

// orderedDecode decodes a JSON object's members in order.
func orderedDecode(b []byte) ([]member, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	var out []member
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, err
		}
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{k.(string), v})
	}
	return out, nil
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		if strings.ContainsAny(string(x)+string(y), ".eE") {
			fx, _ := x.Float64()
			fy, _ := y.Float64()
			return fx == fy || (math.IsNaN(fx) && math.IsNaN(fy))
		}
		return false
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k := range x {
			if !sameValue(x[k], y[k]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// TestRealUseOrder compares UseOrder("") of every real GGUF file with an
// order derived without edgeload: for the files llama.cpp runs, the order
// in which its scheduler computes with their weights
// (testdata/llama_order.json, recorded by testdata/llama_order.py from
// llama.cpp's evaluation callback); for the others, written here from that
// recorded order's rules (a layer's norm, then Q, V, K; names llama.cpp
// does not use keep file order). A real file with tensors that neither
// covers fails the test.
func TestRealUseOrder(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "llama_order.json"))
	if err != nil {
		t.Fatal(err)
	}
	var traced map[string][]string
	if err := json.Unmarshal(b, &traced); err != nil {
		t.Fatal(err)
	}
	byHand := map[string][]string{
		// A slice of layer 0: its attention norm, K and V (the order
		// llama.cpp computes them in: V before K).
		"devstral-slice-q4k-q6k.gguf": {"blk.0.attn_norm.weight", "blk.0.attn_v.weight", "blk.0.attn_k.weight"},
		// Names no llama.cpp graph uses: file order.
		"ratchet-all-value-types.gguf": {"tensor_0", "tensor_1", "tensor_2", "tensor_3", "tensor_4", "tensor_5", "tensor_6", "tensor_7", "tensor_8", "tensor_9"},
	}
	covered := 0
	for _, p := range realFiles(t) {
		name := filepath.Base(p)
		mf, err := mmapfile.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := gguf.NewFile(mf)
		if err != nil {
			mf.Close()
			continue // the v1 file, refused (TestRealFiles)
		}
		want, ok := traced[name]
		if !ok {
			want, ok = byHand[name]
		}
		order, err := f.UseOrder("")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, i := range order {
			got = append(got, f.TensorAt(i).Name)
		}
		switch {
		case !ok && f.NumTensors() > 0:
			t.Errorf("%s: %d tensors and no use order derived for it: trace it with testdata/llama_order.py or write it here", name, f.NumTensors())
		case ok && !slices.Equal(got, want):
			t.Errorf("%s: use order\n %q\nwant\n %q", name, got, want)
		case ok:
			covered++
		}
		mf.Close()
	}
	if covered < 3 {
		t.Errorf("%d real files compared, want 3 (llama2-tiny-random traced, two written here)", covered)
	}
}
