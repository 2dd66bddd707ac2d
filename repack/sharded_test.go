package repack_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/repack"
)

// shardedDir is the checkpoint huggingface_hub split into four shards
// (loader/safetensors/testdata/gen_sharded.py), and shardedSums what the
// generator gave each tensor.
const shardedDir = "../loader/safetensors/testdata/sharded"

func shardedSums(t *testing.T) []repack.TensorSum {
	t.Helper()
	b, err := os.ReadFile("../loader/safetensors/testdata/sharded-expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]struct {
		DType  string  `json:"dtype"`
		Shape  []int64 `json:"shape"`
		SHA256 string  `json:"sha256"`
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	// The safetensors codes the generator wrote, by edgeload's names.
	names := map[string]string{"BOOL": "bool", "F16": "float16", "F32": "float32", "I64": "int64", "I8": "int8"}
	var out []repack.TensorSum
	for name, w := range want {
		if names[w.DType] == "" {
			t.Fatalf("%s: dtype %s", name, w.DType)
		}
		out = append(out, repack.TensorSum{Name: name, DType: names[w.DType], Shape: w.Shape, SHA256: w.SHA256})
	}
	slices.SortFunc(out, func(a, b repack.TensorSum) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// copySharded copies the sharded checkpoint to a new directory, with the
// index's metadata given a note of pad bytes (0: the index as it is), and
// returns the index's path.
func copySharded(t *testing.T, pad int) string {
	t.Helper()
	dir := t.TempDir()
	es, err := os.ReadDir(shardedDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b := mustRead(t, filepath.Join(shardedDir, e.Name()))
		if strings.HasSuffix(e.Name(), ".index.json") && pad > 0 {
			var idx map[string]any
			if err := json.Unmarshal(b, &idx); err != nil {
				t.Fatal(err)
			}
			idx["metadata"].(map[string]any)["note"] = strings.Repeat("x", pad)
			if b, err = json.MarshalIndent(idx, "", "  "); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "model.safetensors.index.json")
}

// TestConvertSharded converts a sharded checkpoint, given by its index, to
// one safetensors file and to a .ptd: every tensor holds the bytes the
// generator gave it. The index is made larger than any shard's data (a
// long metadata note), so that bytes read from the index at a tensor's
// offset would be bytes, just wrong ones.
func TestConvertSharded(t *testing.T) {
	want := shardedSums(t)
	for _, pad := range []int{0, 64 << 10} {
		in := copySharded(t, pad)
		if st, err := os.Stat(in); err != nil || pad > 0 && st.Size() < 64<<10 {
			t.Fatalf("index of %v bytes (%v)", st.Size(), err)
		}
		for _, to := range []string{"safetensors", "ptd"} {
			out := filepath.Join(t.TempDir(), "all."+to)
			if _, err := repack.Repack(in, out, repack.Options{To: to}); err != nil {
				t.Errorf("pad %d: --to %s: %v", pad, to, err)
				continue
			}
			sameSums(t, "index --to "+to, sums(t, out), want)
		}
	}
}

// TestRepackSharded repacks a sharded checkpoint given by its index: the
// index and every shard are written to the output's directory, each
// shard's data buffer on the boundary, and the output holds the tensors
// the generator wrote. Writing the shards over the input's own is
// refused, and leaves nothing.
func TestRepackSharded(t *testing.T) {
	want := shardedSums(t)
	in := copySharded(t, 0)
	dir := t.TempDir()
	out := filepath.Join(dir, "model.safetensors.index.json")
	res, err := repack.Repack(in, out, repack.Options{Align: 4096})
	if err != nil {
		t.Fatal(err)
	}
	sameSums(t, "repacked index", sums(t, out), want)
	if !bytes.Equal(mustRead(t, out), mustRead(t, in)) {
		t.Error("the index changed")
	}
	es, _ := os.ReadDir(filepath.Dir(in))
	var total int64
	for _, e := range es {
		b := mustRead(t, filepath.Join(dir, e.Name()))
		total += int64(len(b))
		if strings.HasSuffix(e.Name(), ".index.json") {
			continue
		}
		if data := 8 + int64(binary.LittleEndian.Uint64(b)); data%4096 != 0 {
			t.Errorf("%s: data buffer at %d", e.Name(), data)
		}
	}
	if res.Size != total {
		t.Errorf("Result.Size %d, want the %d bytes of the index and its shards", res.Size, total)
	}
	// The input's directory, under another name for the index: the shards
	// would replace the input's.
	if _, err := repack.Repack(in, filepath.Join(filepath.Dir(in), "other.index.json"), repack.Options{Align: 4096}); err == nil || !strings.Contains(err.Error(), "output is the input") {
		t.Errorf("writing over the input's shards: %v", err)
	}
	if es2, _ := os.ReadDir(filepath.Dir(in)); len(es2) != len(es) {
		t.Errorf("the refused repack left %d files in the input's directory, want %d", len(es2), len(es))
	}
}
