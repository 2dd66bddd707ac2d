package tflite_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader/tflite"
	"github.com/edgeload/edgeload/mmapfile"
)

// expected is the part of an expected/*.tflite.json file the test compares.
type expected struct {
	Format      string `json:"format"`
	FileSize    int64  `json:"file_size"`
	Version     uint32 `json:"version"`
	Description string `json:"description"`
	Subgraphs   []struct {
		Name            string   `json:"name"`
		Tensors         int      `json:"tensors"`
		Operators       int      `json:"operators"`
		UseOrder        []string `json:"use_order"`
		UseOrderTensors []int    `json:"use_order_tensors"`
		Unused          []string `json:"unused"`
	} `json:"subgraphs"`
	Segments []struct {
		Index  int   `json:"index"`
		Offset int64 `json:"offset"`
		Size   int64 `json:"size"`
	} `json:"segments"`
	Tensors []struct {
		Name         string  `json:"name"`
		DType        string  `json:"dtype"`
		Shape        []int64 `json:"shape"`
		Location     string  `json:"location"`
		Offset       int64   `json:"offset"`
		NBytes       int64   `json:"nbytes"`
		Buffer       int     `json:"buffer"`
		NameExplicit bool    `json:"name_explicit"`
		Subgraph     int     `json:"subgraph"`
		TensorIndex  int     `json:"tensor_index"`
		Sparse       bool    `json:"sparse"`
		SHA256       string  `json:"sha256"`
	} `json:"tensors"`
	Metadata []struct {
		Name   string `json:"name"`
		Buffer int    `json:"buffer"`
	} `json:"metadata"`
	SignatureDefs []struct {
		Key      string `json:"key"`
		Subgraph int    `json:"subgraph"`
		Inputs   int    `json:"inputs"`
		Outputs  int    `json:"outputs"`
	} `json:"signature_defs"`
}

func loadExpected(t *testing.T, path string) expected {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(path)), "expected", filepath.Base(path)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func openFile(t testing.TB, path string) *tflite.Model {
	t.Helper()
	mf, err := mmapfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mf.Close() })
	m, err := tflite.NewFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRealFiles reads every real .tflite file and compares what it lists
// with the independent reader's expected/ values.
func TestRealFiles(t *testing.T) {
	for _, path := range testmodels.Files(t, "tflite") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			exp := loadExpected(t, path)
			m := openFile(t, path)
			checkExpected(t, m, exp)
		})
	}
}

func checkExpected(t *testing.T, m *tflite.Model, exp expected) {
	if m.Size() != exp.FileSize || m.Version() != exp.Version || m.Description() != exp.Description {
		t.Errorf("size %d version %d description %q, want %d %d %q", m.Size(), m.Version(), m.Description(), exp.FileSize, exp.Version, exp.Description)
	}
	// Segments: as a set keyed by buffer index.
	got := map[int][2]int64{}
	for i, s := range m.Segments() {
		got[m.SegmentIndex(i)] = [2]int64{s.Offset(), s.Len()}
		if i > 0 && s.Offset() < m.Segments()[i-1].Offset() {
			t.Errorf("segment %d at %d before segment %d at %d: want file order", i, s.Offset(), i-1, m.Segments()[i-1].Offset())
		}
	}
	if len(got) != len(exp.Segments) || len(m.Segments()) != len(exp.Segments) {
		t.Errorf("%d segments, want %d", len(m.Segments()), len(exp.Segments))
	}
	for _, es := range exp.Segments {
		if g, ok := got[es.Index]; !ok || g != [2]int64{es.Offset, es.Size} {
			t.Errorf("buffer %d: segment %v (%v), want [%d +%d)", es.Index, g, ok, es.Offset, es.Size)
		}
	}
	// Tensors: as a multiset.
	key := func(name string, explicit bool, dtype string, shape []int64, loc string, off, n int64, sum string) string {
		if !explicit {
			name = "-"
		}
		return fmt.Sprintf("%s|%s|%v|%s|%d|%d|%s", name, dtype, shape, loc, off, n, sum)
	}
	var want, have []string
	for _, et := range exp.Tensors {
		want = append(want, key(et.Name, et.NameExplicit, et.DType, et.Shape, et.Location, et.Offset, et.NBytes, et.SHA256))
	}
	for i := range m.NumTensors() {
		tt := m.TensorAt(i)
		sum, err := tt.Data.SHA256()
		if err != nil {
			t.Fatal(err)
		}
		have = append(have, key(tt.Name, tt.NameExplicit, tt.DType.String(), tt.Shape, tt.Location.String(), tt.Offset, tt.NBytes, hex.EncodeToString(sum[:])))
		if j, ok := m.Lookup(tt.Name); !ok || m.TensorAt(j).Name != tt.Name {
			t.Errorf("Lookup(%q) = %d, %v", tt.Name, j, ok)
		}
	}
	slices.Sort(want)
	slices.Sort(have)
	if !slices.Equal(want, have) {
		t.Errorf("tensors:\n got %s\nwant %s", strings.Join(have, "\n     "), strings.Join(want, "\n     "))
	}
	// Names exactly, where the expected reader names them, and the
	// TFLite-specific fields.
	ts := m.Tensors()
	for _, et := range exp.Tensors {
		var g *tflite.Tensor
		for _, tt := range ts {
			if tt.Subgraph == et.Subgraph && tt.Index == et.TensorIndex {
				g = tt
			}
		}
		if g == nil {
			t.Errorf("no tensor %d of subgraph %d", et.TensorIndex, et.Subgraph)
			continue
		}
		if g.Name != et.Name || g.NameExplicit != et.NameExplicit || g.Buffer != et.Buffer || g.Sparse != et.Sparse {
			t.Errorf("tensor %d/%d: %q explicit %v buffer %d sparse %v, want %q %v %d %v", et.Subgraph, et.TensorIndex, g.Name, g.NameExplicit, g.Buffer, g.Sparse, et.Name, et.NameExplicit, et.Buffer, et.Sparse)
		}
	}
	// Subgraphs and use order.
	sgs := m.Subgraphs()
	if len(sgs) != len(exp.Subgraphs) {
		t.Fatalf("%d subgraphs, want %d", len(sgs), len(exp.Subgraphs))
	}
	for i, es := range exp.Subgraphs {
		sg := &sgs[i]
		if sg.Name != es.Name || len(sg.Tensors) != es.Tensors || sg.NumOperators != es.Operators {
			t.Errorf("subgraph %d: %q %d tensors %d operators, want %q %d %d", i, sg.Name, len(sg.Tensors), sg.NumOperators, es.Name, es.Tensors, es.Operators)
		}
		order, err := m.UseOrder(sg.Group)
		if err != nil {
			t.Fatal(err)
		}
		used, err := m.UsedOrder(sg.Group)
		if err != nil {
			t.Fatal(err)
		}
		var names, unused []string
		var idx []int
		for k, c := range order {
			if k < len(used) {
				names = append(names, m.TensorAt(c).Name)
				idx = append(idx, ts[c].Index)
			} else {
				unused = append(unused, m.TensorAt(c).Name)
			}
		}
		if !slices.Equal(names, es.UseOrder) || !slices.Equal(idx, es.UseOrderTensors) || !slices.Equal(unused, es.Unused) {
			t.Errorf("subgraph %q use order %q %v unused %q, want %q %v %q", sg.Group, names, idx, unused, es.UseOrder, es.UseOrderTensors, es.Unused)
		}
	}
	// Metadata and signatures.
	md := m.Metadata()
	if len(md) != len(exp.Metadata) {
		t.Errorf("%d metadata, want %d", len(md), len(exp.Metadata))
	}
	for i, em := range exp.Metadata {
		if i < len(md) && (md[i].Name != em.Name || md[i].Buffer != em.Buffer) {
			t.Errorf("metadata %d: %q buffer %d, want %+v", i, md[i].Name, md[i].Buffer, em)
		}
	}
	sd := m.SignatureDefs()
	if len(sd) != len(exp.SignatureDefs) {
		t.Errorf("%d signature defs, want %d", len(sd), len(exp.SignatureDefs))
	}
	for i, es := range exp.SignatureDefs {
		if i < len(sd) && (sd[i].Key != es.Key || sd[i].Subgraph != es.Subgraph || len(sd[i].Inputs) != es.Inputs || len(sd[i].Outputs) != es.Outputs) {
			t.Errorf("signature %d: %+v, want %+v", i, sd[i], es)
		}
	}
	// Group "" holds every tensor once.
	all, err := m.UseOrder("")
	if err != nil {
		t.Fatal(err)
	}
	if s := slices.Sorted(slices.Values(all)); len(s) != m.NumTensors() || (len(s) > 0 && (s[0] != 0 || s[len(s)-1] != len(s)-1 || slices.Compact(s) != nil && len(slices.Compact(s)) != len(all))) {
		t.Errorf("UseOrder(\"\") = %v: want every tensor once", all)
	}
}
