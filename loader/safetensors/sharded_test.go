package safetensors_test

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/safetensors"
	"github.com/edgeload/edgeload/mmapfile"
)

const shardedIndex = "testdata/sharded/model.safetensors.index.json"

// shardedWant reads what testdata/gen_sharded.py gave each tensor.
func shardedWant(t *testing.T) map[string]struct {
	File   string  `json:"file"`
	DType  string  `json:"dtype"`
	Shape  []int64 `json:"shape"`
	SHA256 string  `json:"sha256"`
} {
	b, err := os.ReadFile("testdata/sharded-expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]struct {
		File   string  `json:"file"`
		DType  string  `json:"dtype"`
		Shape  []int64 `json:"shape"`
		SHA256 string  `json:"sha256"`
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestSharded opens the checkpoint huggingface_hub split into shards, by
// OpenIndex and through the registration as package loader does, and
// finds every tensor in the shard the generator put it in, with its bytes.
func TestSharded(t *testing.T) {
	want := shardedWant(t)
	head, err := os.ReadFile(shardedIndex)
	if err != nil {
		t.Fatal(err)
	}
	if !safetensors.Sniff(head) {
		t.Fatal("Sniff refuses the index")
	}
	viaOpen := func() (format.Model, func(), error) {
		m, err := safetensors.OpenIndex(shardedIndex)
		return m, func() {}, err
	}
	viaFormat := func() (format.Model, func(), error) {
		mf, err := mmapfile.Open(shardedIndex)
		if err != nil {
			return nil, nil, err
		}
		m, err := safetensors.Format.Open(mf, &format.Config{Head: head, Name: shardedIndex})
		return m, func() { mf.Close() }, err
	}
	for _, openf := range []func() (format.Model, func(), error){viaOpen, viaFormat} {
		m, done, err := openf()
		if err != nil {
			t.Fatal(err)
		}
		if m.NumTensors() != len(want) {
			t.Errorf("%d tensors, want %d", m.NumTensors(), len(want))
		}
		for name, w := range want {
			i, ok := m.Lookup(name)
			if !ok {
				t.Errorf("%q missing", name)
				continue
			}
			g := m.TensorAt(i)
			sum, err := m.TensorData(i).SHA256()
			if err != nil || hex.EncodeToString(sum[:]) != w.SHA256 || safetensors.Code(g.DType) != w.DType ||
				!slices.Equal(g.Shape, w.Shape) || filepath.Base(g.DataFile) != w.File || g.Data.File().Name() != g.DataFile {
				t.Errorf("%q: %v %v in %s, sha %x, %v; want %+v", name, g.DType, g.Shape, g.DataFile, sum, err, w)
			}
		}
		if n := len(m.Segments()); n != 4 {
			t.Errorf("%d segments, want one per shard (4)", n)
		}
		order, err := m.UseOrder("")
		if err != nil || len(order) != len(want) {
			t.Errorf("UseOrder: %v, %v", order, err)
		}
		sh := m.(*safetensors.Sharded)
		for k, s := range sh.Shards() {
			if k > 0 && s.Name <= sh.Shards()[k-1].Name {
				t.Errorf("shards out of order: %s after %s", s.Name, sh.Shards()[k-1].Name)
			}
			if v, _ := s.File.MetadataValue("format"); v != "pt" {
				t.Errorf("shard %s: metadata format %q", s.Name, v)
			}
		}
		var sb strings.Builder
		if err := sh.ReportText(&sb); err != nil || !strings.Contains(sb.String(), "4 shards") {
			t.Errorf("ReportText: %q, %v", sb.String(), err)
		}
		if err := m.Close(); err != nil {
			t.Error(err)
		}
		done()
	}
}

// TestShardedErrors breaks a copy of the checkpoint in each way an index
// can disagree with its shards.
func TestShardedErrors(t *testing.T) {
	src := filepath.Dir(shardedIndex)
	index, err := os.ReadFile(shardedIndex)
	if err != nil {
		t.Fatal(err)
	}
	const (
		s1 = "model-00001-of-00004.safetensors"
		s2 = "model-00002-of-00004.safetensors"
		q0 = `"model.layers.0.attn.q_proj.weight"`
	)
	cases := []struct {
		name   string
		index  string
		remove string
		want   string // in the message
		is     error
	}{
		{"missing shard", string(index), s2, s2, fs.ErrNotExist},
		{"wrong shard", strings.Replace(string(index), q0+`: "`+s1, q0+`: "`+s2, 1), "", "model.layers.0.attn.q_proj.weight", format.ErrMalformed},
		{"not in its shard", strings.Replace(string(index), `"weight_map": {`, `"weight_map": {"ghost": "`+s1+`",`, 1), "", "ghost", format.ErrMalformed},
		{"not in the index", strings.Replace(string(index), q0+`: "`+s1+`",`, "", 1), "", "model.layers.0.attn.q_proj.weight", format.ErrMalformed},
		{"outside the folder", strings.Replace(string(index), `"weight_map": {`, `"weight_map": {"x": "../`+s1+`",`, 1), "", "not a file name beside the index", format.ErrMalformed},
		{"repeated name", strings.Replace(string(index), `"weight_map": {`, `"weight_map": {`+q0+`: "`+s1+`",`, 1), "", "appears twice", format.ErrMalformed},
		{"no weight_map", `{"metadata": {}}`, "", "weight_map", format.ErrMalformed},
		{"not JSON", `{"weight_map": {"a": 1}}`, "", "want a string", format.ErrMalformed},
	}
	for _, c := range cases {
		dir := t.TempDir()
		ents, _ := os.ReadDir(src)
		for _, e := range ents {
			if e.Name() == c.remove {
				continue
			}
			b, _ := os.ReadFile(filepath.Join(src, e.Name()))
			os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644)
		}
		p := filepath.Join(dir, "model.safetensors.index.json")
		os.WriteFile(p, []byte(c.index), 0o644)
		m, err := safetensors.OpenIndex(p)
		if err == nil {
			m.Close()
			t.Errorf("%s: opened", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.is) {
			t.Errorf("%s: %v; want %q wrapping %v", c.name, err, c.want, c.is)
		}
		t.Logf("%s: %v", c.name, err)
	}
	// without a path the shards cannot be found
	mf := mmapfile.NewBytes(index)
	if _, err := safetensors.Format.Open(mf, &format.Config{}); err == nil || !strings.Contains(err.Error(), "path") {
		t.Errorf("index without a path: %v", err)
	}
}

// shardFileOrder lists the tensors of the shards of dir in the order the
// package documents: shard by shard in the order of their names, each
// shard's tensors by their data offsets (file order). It reads the shards'
// headers with encoding/json, not with the package.
func shardFileOrder(t *testing.T, dir string, shards []string) []string {
	t.Helper()
	shards = slices.Sorted(slices.Values(shards))
	var out []string
	for _, s := range shards {
		b, err := os.ReadFile(filepath.Join(dir, s))
		if err != nil {
			t.Fatal(err)
		}
		n := int(binary.LittleEndian.Uint64(b))
		var h map[string]json.RawMessage
		if err := json.Unmarshal(b[8:8+n], &h); err != nil {
			t.Fatal(err)
		}
		type entry struct {
			name string
			off  int64
		}
		var es []entry
		for k, v := range h {
			if k == "__metadata__" {
				continue
			}
			var e struct {
				Offsets [2]int64 `json:"data_offsets"`
			}
			if err := json.Unmarshal(v, &e); err != nil {
				t.Fatal(err)
			}
			es = append(es, entry{k, e.Offsets[0]})
		}
		slices.SortFunc(es, func(a, b entry) int { return int(a.off - b.off) })
		for _, e := range es {
			out = append(out, e.name)
		}
	}
	return out
}

// TestShardedIndexOrder: an index whose weight_map names the shards out of
// order (last shard first) lists the same tensors in the same order as one
// that names them in order: shard by shard in the order of their names,
// each shard's in file order, each tensor in its own shard. The order is
// derived from the shards' headers (shardFileOrder).
func TestShardedIndexOrder(t *testing.T) {
	var idx struct {
		Metadata  json.RawMessage   `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	raw, err := os.ReadFile(shardedIndex)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		t.Fatal(err)
	}
	// The weight_map in reverse file order: the last shard's tensors first.
	src := filepath.Dir(shardedIndex)
	var shards []string
	for _, f := range idx.WeightMap {
		if !slices.Contains(shards, f) {
			shards = append(shards, f)
		}
	}
	want := shardFileOrder(t, src, shards)
	var b strings.Builder
	b.WriteString(`{"metadata": ` + string(idx.Metadata) + `, "weight_map": {`)
	for i := len(want) - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "%q: %q", want[i], idx.WeightMap[want[i]])
		if i > 0 {
			b.WriteString(", ")
		}
	}
	b.WriteString("}}")
	dir := t.TempDir()
	for _, s := range shards {
		if err := os.Symlink(filepath.Join(testmodelsAbs(t, src), s), filepath.Join(dir, s)); err != nil {
			t.Fatal(err)
		}
	}
	reversed := filepath.Join(dir, "model.safetensors.index.json")
	if err := os.WriteFile(reversed, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{shardedIndex, reversed} {
		m, err := safetensors.OpenIndex(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		order, err := m.UseOrder("")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for k, i := range order {
			tt := m.TensorAt(i)
			got = append(got, tt.Name)
			if i != k {
				t.Errorf("%s: UseOrder[%d] = %d: want the tensors' own order", path, k, i)
			}
			if filepath.Base(tt.DataFile) != idx.WeightMap[tt.Name] {
				t.Errorf("%s: %q in %s, want %s", path, tt.Name, tt.DataFile, idx.WeightMap[tt.Name])
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: tensors in the order\n %q\nwant\n %q", path, got, want)
		}
		var names []string
		for _, s := range m.Shards() {
			names = append(names, s.Name)
		}
		if !slices.Equal(names, slices.Sorted(slices.Values(shards))) {
			t.Errorf("%s: shards %q, want them in the order of their names", path, names)
		}
		m.Close()
	}
}

// testmodelsAbs returns dir as an absolute path.
func testmodelsAbs(t *testing.T, dir string) string {
	a, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
