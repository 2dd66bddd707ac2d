package repack_test

import (
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptdfb"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/repack"
)

// TestConvert converts the real .ptd of a program to safetensors and back:
// each step holds the tensors the independent reader lists (names, dtypes,
// shapes, SHA-256), and the program links to the .ptd made from
// safetensors with the same bytes.
func TestConvert(t *testing.T) {
	in := testmodels.Path(t, "ptd/addmul-external.ptd")
	prog := testmodels.Path(t, "pte/addmul-external.pte")
	want := expectedSums(testmodels.Load(t, in).Tensors)
	dir := t.TempDir()
	st := filepath.Join(dir, "w.safetensors")
	if _, err := repack.Repack(in, st, repack.Options{To: "safetensors"}); err != nil {
		t.Fatal(err)
	}
	if f, _ := loader.SniffFile(st); f != "safetensors" {
		t.Fatalf("%s sniffs as %s", st, f)
	}
	sameSums(t, "to safetensors", sums(t, st), want)
	back := filepath.Join(dir, "w.ptd")
	if _, err := repack.Repack(st, back, repack.Options{To: "ptd", Align: 4096}); err != nil {
		t.Fatal(err)
	}
	sameSums(t, "back to ptd", sums(t, back), want)
	m, err := loader.Open(prog, loader.WithData(back))
	if err != nil {
		t.Fatalf("the program does not link to the converted .ptd: %v", err)
	}
	defer m.Close()
	for _, w := range want {
		tn, ok := m.Tensor(w.Name)
		if !ok || !tn.Resolved() {
			t.Fatalf("%s not resolved", w.Name)
		}
		sum, err := tn.Data.SHA256()
		if err != nil || hex.EncodeToString(sum[:]) != w.SHA256 || tn.Offset%4096 != 0 {
			t.Errorf("%s: sha %x at %d (%v), want %s on 4096", w.Name, sum, tn.Offset, err, w.SHA256)
		}
	}
	checkWithPython(t, st, want)
}

// checkWithPython reads a safetensors file with Hugging Face's own reader
// and compares each tensor's bytes with want.
func checkWithPython(t *testing.T, path string, want []repack.TensorSum) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import safetensors, numpy").Run()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with safetensors and numpy is required under CI: %v", err)
		}
		t.Skipf("python3 with safetensors and numpy not installed (%v)", err)
	}
	out, err := exec.Command(py, "-c", `
import sys, hashlib
from safetensors import safe_open
with safe_open(sys.argv[1], "np") as f:
    for k in f.keys():
        print(k, hashlib.sha256(f.get_tensor(k).tobytes()).hexdigest())
`, path).Output()
	if err != nil {
		t.Fatalf("safetensors reads %s: %v", path, err)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(l, " ")
		got[k] = v
	}
	for _, w := range want {
		if got[w.Name] != w.SHA256 {
			t.Errorf("safetensors reads %s as %s, want %s", w.Name, got[w.Name], w.SHA256)
		}
	}
}

// TestConvertRefuses: what a target cannot hold is an error, not a lossy
// file: GGUF's quantized blocks have no safetensors dtype.
func TestConvertRefuses(t *testing.T) {
	in := testmodels.Path(t, "gguf/devstral-slice-q4k-q6k.gguf")
	out := filepath.Join(t.TempDir(), "x.safetensors")
	_, err := repack.Repack(in, out, repack.Options{To: "safetensors"})
	if err == nil || !strings.Contains(err.Error(), "q4_k") {
		t.Fatalf("converting q4_k blocks: %v, want an error naming q4_k", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused conversion left %s: %v", out, err)
	}
	if _, err := repack.Repack(in, out, repack.Options{To: "onnx"}); err == nil {
		t.Error("an unknown target was accepted")
	}
}

// TestExternalizeNoConstants: a program without constants externalizes to
// a .ptd whose segment and named-data vectors are present and empty, as
// ExecuTorch's reader requires (it refuses a .ptd without named_data).
func TestExternalizeNoConstants(t *testing.T) {
	in := testmodels.Path(t, "pte/apple-add-noheader.pte")
	dir := t.TempDir()
	ptd := filepath.Join(dir, "w.ptd")
	if _, err := repack.Repack(in, filepath.Join(dir, "o.pte"), repack.Options{Externalize: ptd}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ptd)
	if err != nil {
		t.Fatal(err)
	}
	ft := ptdfb.GetRootAsFlatTensor(b, 0)
	tab := ft.Table()
	for name, vt := range map[string]flatbuffers.VOffsetT{"segments": 6, "named_data": 8} {
		if tab.Offset(vt) == 0 {
			t.Errorf("the .ptd has no %s vector", name)
		}
	}
}
