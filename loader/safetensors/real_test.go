package safetensors_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/safetensors"
	"github.com/edgeload/edgeload/mmapfile"
)

// stExpected is the part of an expected file testmodels.Expected lacks.
type stExpected struct {
	HeaderSize int64             `json:"header_size"`
	Metadata   map[string]string `json:"metadata"`
}

// TestRealFiles opens every real safetensors file and compares what it
// reads with the expected values of an independent reader; the malformed
// one must be refused.
func TestRealFiles(t *testing.T) {
	for _, path := range testmodels.Files(t, "safetensors") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want := testmodels.Load(t, path)
			mf, err := mmapfile.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer mf.Close()
			head := make([]byte, min(mf.Len(), 4096))
			mf.ReadAt(head, 0)
			f, err := safetensors.NewFile(mf)
			if want.ExitCode != 0 {
				var fe *format.FormatError
				if err == nil || !errors.As(err, &fe) || fe.Format != "safetensors" {
					t.Fatalf("NewFile = %v; want a safetensors FormatError (%s)", err, want.Error)
				}
				t.Logf("refused: %v (expected reader: %s)", err, want.Error)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !safetensors.Sniff(head) {
				t.Error("Sniff refuses the file")
			}
			raw, _ := os.ReadFile(filepath.Join(testmodels.Dir(t), "expected", filepath.Base(path)+".json"))
			var extra stExpected
			if err := json.Unmarshal(raw, &extra); err != nil {
				t.Fatal(err)
			}
			if want.Format != "safetensors" || want.FileSize != f.Size() {
				t.Errorf("format %q size %d; file %d", want.Format, want.FileSize, f.Size())
			}
			if f.HeaderSize() != extra.HeaderSize || f.DataOffset() != 8+extra.HeaderSize {
				t.Errorf("header size %d, data at %d; want %d", f.HeaderSize(), f.DataOffset(), extra.HeaderSize)
			}
			got := map[string]string{}
			for _, kv := range f.Metadata() {
				got[kv.Key] = kv.Value
				if v, ok := f.MetadataValue(kv.Key); !ok || v != kv.Value {
					t.Errorf("MetadataValue(%q) = %q, %v", kv.Key, v, ok)
				}
			}
			if !reflect.DeepEqual(got, extra.Metadata) {
				t.Errorf("metadata %v, want %v", got, extra.Metadata)
			}
			for _, fl := range f.ReportFields() {
				b, _ := json.Marshal(fl.Value)
				var w any
				switch fl.Key {
				case "header_size":
					w = extra.HeaderSize
				case "metadata":
					w = extra.Metadata
				}
				wb, _ := json.Marshal(w)
				if string(b) != string(wb) {
					t.Errorf("report %s = %s, want %s", fl.Key, b, wb)
				}
			}
			segs := f.Segments()
			if len(segs) != len(want.Segments) {
				t.Fatalf("%d segments, want %d", len(segs), len(want.Segments))
			}
			for i, s := range segs {
				if w := want.Segments[i]; s.Offset() != w.Offset || s.Len() != w.Size || w.Index != i {
					t.Errorf("segment %d [%d,+%d), want %+v", i, s.Offset(), s.Len(), w)
				}
			}
			if len(f.NamedData()) != 0 || len(want.NamedData) != 0 {
				t.Errorf("named data %v, want %v", f.NamedData(), want.NamedData)
			}
			if f.NumTensors() != len(want.Tensors) {
				t.Fatalf("%d tensors, want %d", f.NumTensors(), len(want.Tensors))
			}
			for _, w := range want.Tensors {
				i, ok := f.Lookup(w.Name)
				if !ok {
					t.Errorf("tensor %q missing", w.Name)
					continue
				}
				g := f.TensorAt(i)
				if g.DType.String() != w.DType || !slices.Equal(g.Shape, w.Shape) || g.Location.String() != w.Location ||
					w.Offset == nil || g.Offset != *w.Offset || g.NBytes != w.NBytes || !g.NameExplicit {
					t.Errorf("tensor %q: %v %v %v at %d, %d bytes; want %+v (offset %v)", w.Name, g.DType, g.Shape, g.Location, g.Offset, g.NBytes, w, *w.Offset)
				}
				sum, err := f.TensorData(i).SHA256()
				if err != nil || hex.EncodeToString(sum[:]) != w.SHA256 {
					t.Errorf("tensor %q: sha256 %x, %v; want %s", w.Name, sum, err, w.SHA256)
				}
			}
			// file order is data order
			order, err := f.UseOrder("")
			if err != nil || len(order) != f.NumTensors() {
				t.Fatalf("UseOrder = %v, %v", order, err)
			}
			for k := 1; k < len(order); k++ {
				if f.TensorAt(order[k]).Offset < f.TensorAt(order[k-1]).Offset {
					t.Errorf("use order not in data order at %d", k)
				}
			}
			if _, err := f.UseOrder("forward"); !errors.Is(err, format.ErrNotFound) {
				t.Errorf("UseOrder(forward) = %v, want ErrNotFound", err)
			}
		})
	}
}
