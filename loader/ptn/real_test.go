package ptn_test

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	_ "github.com/edgeload/edgeload/formats" // every built-in format
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptn"
	"github.com/edgeload/edgeload/loader/safetensors"
	"github.com/edgeload/edgeload/mmapfile"
)

// realExpected is one package of testdata/real/expected.json, which
// testdata/real/make.py computed from torch and ExecuTorch's own objects.
type realExpected struct {
	Version string       `json:"version"`
	Members []ptn.Member `json:"members"`
	Tensors map[string]struct {
		DType  string  `json:"dtype"`
		Shape  []int64 `json:"shape"`
		SHA256 string  `json:"sha256"`
		Offset int64   `json:"offset"`
		NBytes int64   `json:"nbytes"`
	} `json:"tensors"`
	Aliases map[string]string `json:"aliases"`
	Methods []struct {
		Name      string `json:"name"`
		Constants []struct {
			Name    string `json:"name"`
			DataKey string `json:"data_key"`
			Kind    uint8  `json:"kind"`
			Mutated bool   `json:"mutated"`
		} `json:"constants"`
		MutableBuffers []struct {
			Name string `json:"name"`
			FQN  string `json:"fqn"`
		} `json:"mutable_buffers"`
		Reads []string `json:"reads"`
	} `json:"methods"`
}

func readRealExpected(t *testing.T) map[string]realExpected {
	t.Helper()
	b, err := os.ReadFile("testdata/real/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]realExpected
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("expected.json lists no package")
	}
	return want
}

func sha256Hex(t *testing.T, tn *format.Tensor) string {
	t.Helper()
	sum, err := tn.Data.SHA256()
	if err != nil {
		t.Fatalf("%q: %v", tn.Name, err)
	}
	return hex.EncodeToString(sum[:])
}

// jsonEqual reports whether the JSON b holds the map want.
func jsonEqual(b []byte, want map[string]string) bool {
	var got map[string]string
	if json.Unmarshal(b, &got) != nil || len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// wantOrder is a method's use order as FORMATS-safetensors-ptn.md §7
// gives it: the keys its nodes read in first-read order, then its unread
// constants in declaration order; nothing else (expected.json's reads and
// constants come from ExecuTorch's own objects, make.py).
func wantOrder(e *realExpected, mi int) []string {
	m := &e.Methods[mi]
	o := slices.Clone(m.Reads)
	for _, c := range m.Constants {
		if !slices.Contains(o, c.DataKey) {
			o = append(o, c.DataKey)
		}
	}
	return o
}

// checkOrder checks that order (tensor indices) is want (a method's order:
// n is len(want)), or (group "": n the number of tensors) starts with want
// and then lists every other tensor once, in tensor order.
func checkOrder(t *testing.T, what string, order []int, name func(int) string, n int, want []string) {
	t.Helper()
	if len(order) != n {
		var got []string
		for _, i := range order {
			got = append(got, name(i))
		}
		t.Errorf("%s: %d tensors %q, want %d", what, len(order), got, n)
		return
	}
	var got []string
	for _, i := range order {
		got = append(got, name(i))
	}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Errorf("%s: use order %q, want it to start %q", what, got, want)
		return
	}
	rest := order[len(want):]
	if !sort.IntsAreSorted(rest) {
		t.Errorf("%s: the tensors no node reads are not in tensor order: %v", what, rest)
	}
	seen := map[int]bool{}
	for _, i := range order {
		if seen[i] {
			t.Errorf("%s: tensor %d listed twice", what, i)
		}
		seen[i] = true
	}
}

// TestReal reads the packages ExecuTorch 1.5.1 wrote (testdata/real,
// made by make.py) and compares every tensor, alias, method and use order
// with expected.json.
func TestReal(t *testing.T) {
	want := readRealExpected(t)
	for pkg, e := range want {
		t.Run(pkg, func(t *testing.T) {
			path := filepath.Join("testdata", "real", pkg+".ptn")
			mf, err := mmapfile.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer mf.Close()
			head := make([]byte, 512)
			n, _ := mf.ReadAt(head, 0)
			if !ptn.Sniff(head[:n]) {
				t.Error("Sniff refuses it")
			}
			f, err := ptn.NewFile(mf)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkFile(f); err != nil {
				t.Error(err)
			}
			if !slices.Equal(f.Members(), e.Members) {
				t.Errorf("members %+v, want %+v", f.Members(), e.Members)
			}
			if f.Version() != e.Version {
				t.Errorf("version %q, want %q", f.Version(), e.Version)
			}
			if f.NumTensors() != len(e.Tensors) {
				t.Errorf("%d tensors, want %d", f.NumTensors(), len(e.Tensors))
			}
			for name, w := range e.Tensors {
				i, ok := f.Lookup(name)
				if !ok {
					t.Errorf("%q missing", name)
					continue
				}
				g := f.TensorAt(i)
				if g.Name != name || safetensors.Code(g.DType) != w.DType || !slices.Equal(g.Shape, w.Shape) {
					t.Errorf("%q: %s %v %v, want %s %v", name, g.Name, g.DType, g.Shape, w.DType, w.Shape)
				}
				if g.Offset != w.Offset || g.NBytes != w.NBytes {
					t.Errorf("%q: %d bytes at %d, want %d at %d", name, g.NBytes, g.Offset, w.NBytes, w.Offset)
				}
				if s := sha256Hex(t, g); s != w.SHA256 {
					t.Errorf("%q: sha256 %s, want %s", name, s, w.SHA256)
				}
				owner, alias := f.AliasOf(i)
				wo, walias := e.Aliases[name]
				if alias != walias || (alias && f.TensorAt(owner).Name != wo) {
					t.Errorf("%q: alias of %q (%v), want %q (%v)", name, f.TensorAt(owner).Name, alias, wo, walias)
				}
				if alias && (f.TensorAt(owner).Offset != g.Offset || f.TensorAt(owner).NBytes != g.NBytes) {
					t.Errorf("%q: at %d (%d bytes), its owner %q at %d (%d bytes)", name, g.Offset, g.NBytes, wo, f.TensorAt(owner).Offset, f.TensorAt(owner).NBytes)
				}
			}
			for _, fl := range f.ReportFields() {
				if fl.Key == "aliases" {
					if got, _ := json.Marshal(fl.Value); !jsonEqual(got, e.Aliases) {
						t.Errorf("report aliases %s, want %v", got, e.Aliases)
					}
				}
			}
			var names []string
			for _, m := range e.Methods {
				names = append(names, m.Name)
			}
			if !slices.Equal(f.Groups(), names) || len(f.Methods()) != len(e.Methods) {
				t.Fatalf("methods %q, want %q", f.Groups(), names)
			}
			for mi, wm := range e.Methods {
				m, ok := f.Method(wm.Name)
				if !ok || m.Name != wm.Name {
					t.Fatalf("method %q missing", wm.Name)
				}
				if len(m.Constants) != len(wm.Constants) {
					t.Errorf("%s: %d constants, want %d", wm.Name, len(m.Constants), len(wm.Constants))
				} else {
					for ci, wc := range wm.Constants {
						c := m.Constants[ci]
						if c.Name != wc.Name || c.DataKey != wc.DataKey || c.Kind != wc.Kind || c.Mutated != wc.Mutated ||
							f.TensorAt(c.Tensor).Name != wc.DataKey {
							t.Errorf("%s constant %d: %+v, want %+v", wm.Name, ci, c, wc)
						}
					}
				}
				var bufs []string
				for _, b := range m.MutableBuffers {
					bufs = append(bufs, b.Name+"="+b.FQN)
				}
				var wbufs []string
				for _, b := range wm.MutableBuffers {
					wbufs = append(wbufs, b.Name+"="+b.FQN)
				}
				if !slices.Equal(bufs, wbufs) {
					t.Errorf("%s: mutable buffers %q, want %q", wm.Name, bufs, wbufs)
				}
				o, err := f.UseOrder(wm.Name)
				if err != nil {
					t.Fatal(err)
				}
				checkOrder(t, wm.Name, o, func(i int) string { return f.TensorAt(i).Name }, len(wantOrder(&e, mi)), wantOrder(&e, mi))
			}
			var all []string
			for mi := range e.Methods {
				for _, k := range wantOrder(&e, mi) {
					if !slices.Contains(all, k) {
						all = append(all, k)
					}
				}
			}
			o, err := f.UseOrder("")
			if err != nil {
				t.Fatal(err)
			}
			checkOrder(t, "all methods", o, func(i int) string { return f.TensorAt(i).Name }, f.NumTensors(), all)
		})
	}
}

// TestRealOpen opens the same packages through loader.Open.
func TestRealOpen(t *testing.T) {
	want := readRealExpected(t)
	for pkg, e := range want {
		t.Run(pkg, func(t *testing.T) {
			m, err := loader.Open(filepath.Join("testdata", "real", pkg+".ptn"))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.Format() != "ptn" {
				t.Errorf("format %q", m.Format())
			}
			if m.NumTensors() != len(e.Tensors) || len(m.Tensors()) != len(e.Tensors) {
				t.Errorf("%d tensors, want %d", m.NumTensors(), len(e.Tensors))
			}
			for name, w := range e.Tensors {
				g, ok := m.Tensor(name)
				if !ok {
					t.Errorf("%q missing", name)
					continue
				}
				if safetensors.Code(g.DType) != w.DType || !slices.Equal(g.Shape, w.Shape) || sha256Hex(t, g) != w.SHA256 {
					t.Errorf("%q: %v %v, want %+v", name, g.DType, g.Shape, w)
				}
			}
			var names []string
			for _, wm := range e.Methods {
				names = append(names, wm.Name)
			}
			if !slices.Equal(m.Groups(), names) {
				t.Errorf("groups %q, want %q", m.Groups(), names)
			}
			for mi, wm := range e.Methods {
				o, err := m.UseOrder(wm.Name)
				if err != nil {
					t.Fatal(err)
				}
				checkOrder(t, wm.Name, o, func(i int) string { return m.TensorAt(i).Name }, len(wantOrder(&e, mi)), wantOrder(&e, mi))
			}
			if err := m.Check(); err != nil {
				t.Error(err)
			}
			if _, err := m.Verify(); err != nil {
				t.Error(err)
			}
		})
	}
}
