package gguf_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile/ggufcheck"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/gguf"
	"github.com/edgeload/edgeload/mmapfile"
)

// fixture is one file of testdata/expected.json, written by
// testdata/gen_fixtures.py from what it gave gguf-py's writer.
type fixture struct {
	Refused   string  `json:"refused"`
	Version   uint32  `json:"version"`
	Alignment int64   `json:"alignment"`
	FileSize  int64   `json:"file_size"`
	DataStart int64   `json:"data_start"`
	KV        [][]any `json:"kv"`
	Tensors   []struct {
		Name      string  `json:"name"`
		Type      uint32  `json:"type"`
		Shape     []int64 `json:"shape"`
		NBytes    int64   `json:"nbytes"`
		RelOffset int64   `json:"rel_offset"`
		SHA256    string  `json:"sha256"`
	} `json:"tensors"`
}

func openFile(t testing.TB, path string) *gguf.File {
	t.Helper()
	mf, err := mmapfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mf.Close() })
	f, err := gguf.NewFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFixtures reads the files gguf-py wrote (every type it can write, v2
// and v3, alignments 32 and 64, every value type, a 10,000-token
// vocabulary) and compares them with what the script gave the writer.
func TestFixtures(t *testing.T) {
	raw, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx map[string]fixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	types := map[uint32]bool{}
	for name, e := range fx {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join("testdata", name)
			if e.Refused != "" {
				b, _ := os.ReadFile(p)
				_, err := gguf.NewFile(mmapfile.NewBytes(b))
				var fe *format.FormatError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), e.Refused) {
					t.Fatalf("err = %v, want a FormatError about %q", err, e.Refused)
				}
				return
			}
			f := openFile(t, p)
			if f.Version() != e.Version || f.Alignment() != e.Alignment || f.Size() != e.FileSize || f.DataOffset() != e.DataStart {
				t.Errorf("version %d alignment %d size %d data %d; want %+v", f.Version(), f.Alignment(), f.Size(), f.DataOffset(), e)
			}
			kvs := f.KVs()
			if len(kvs) != len(e.KV) {
				t.Fatalf("%d pairs, want %d", len(kvs), len(e.KV))
			}
			for i, want := range e.KV {
				kv := kvs[i]
				if kv.Key != want[0] || kv.Value.Type().String() != want[1] {
					t.Errorf("pair %d: %q %v, want %v", i, kv.Key, kv.Value.Type(), want)
					continue
				}
				if err := sameMeta(kv.Value, want[2]); err != nil {
					t.Errorf("%q: %v", kv.Key, err)
				}
			}
			if f.NumTensors() != len(e.Tensors) {
				t.Fatalf("%d tensors, want %d", f.NumTensors(), len(e.Tensors))
			}
			for i, want := range e.Tensors {
				ti := f.TensorInfo(i)
				sum, err := ti.Data.SHA256()
				if err != nil {
					t.Fatal(err)
				}
				if ti.Name != want.Name || uint32(ti.Type) != want.Type || !reflect.DeepEqual(ti.Shape, want.Shape) ||
					ti.NBytes != want.NBytes || ti.RelOffset != want.RelOffset || ti.Offset != e.DataStart+want.RelOffset ||
					hex.EncodeToString(sum[:]) != want.SHA256 {
					t.Errorf("tensor %d: %q %v %v %d bytes at %d (+%d) sha %x; want %+v", i, ti.Name, ti.Type, ti.Shape, ti.NBytes, ti.Offset, ti.RelOffset, sum, want)
				}
				types[want.Type] = true
			}
			if err := ggufcheck.File(f); err != nil {
				t.Error(err)
			}
		})
	}
	// gguf-py 0.19 writes every live type but q2_0 (id 42), which it does
	// not know; TestGenerated covers that one.
	for _, lt := range ggufcheck.LiveTypes {
		if !types[uint32(lt.ID)] && lt.ID != 42 {
			t.Errorf("no fixture has type %v", lt.ID)
		}
	}
}

// sameMeta compares a metadata value with the script's value or summary.
func sameMeta(v gguf.Value, want any) error {
	switch w := want.(type) {
	case float64:
		switch v.Type() {
		case gguf.TypeFloat32:
			x, _ := v.AsFloat()
			if float32(x) != float32(w) {
				return fmt.Errorf("%v, want %v", x, w)
			}
		case gguf.TypeFloat64:
			x, _ := v.AsFloat()
			if x != w {
				return fmt.Errorf("%v, want %v", x, w)
			}
		default:
			if x, ok := v.AsInt(); ok && float64(x) == w {
				return nil
			}
			if x, ok := v.AsUint(); ok && float64(x) == w && (x < 1<<53 || x == 0x123456789ABCDEF0) {
				return nil
			}
			return fmt.Errorf("%v is not %v", v.Type(), w)
		}
	case bool:
		if x, ok := v.AsBool(); !ok || x != w {
			return fmt.Errorf("%v, want %v", x, w)
		}
	case string:
		if x, ok := v.AsString(); !ok || x != w {
			return fmt.Errorf("%q, want %q", x, w)
		}
	case map[string]any:
		a, ok := v.AsArray()
		if !ok || a.ElemType().String() != w["type"] || float64(a.Len()) != w["len"] {
			return fmt.Errorf("array %v × %d, want %v", a.ElemType(), a.Len(), w)
		}
	case []any:
		a, ok := v.AsArray()
		if !ok || a.Len() != int64(len(w)) {
			return fmt.Errorf("array of %d, want %v", a.Len(), w)
		}
		for i, e := range a.All() {
			if err := sameMeta(e, w[i]); err != nil {
				return fmt.Errorf("[%d]: %v", i, err)
			}
		}
	default:
		return fmt.Errorf("unexpected expected value %T", want)
	}
	return nil
}
