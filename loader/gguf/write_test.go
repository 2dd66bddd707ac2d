package gguf_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile/ggufcheck"
	"github.com/edgeload/edgeload/loader/format"
)

// TestWriteAligned rewrites the generated files with several alignments:
// the layout is the one Relayout gives, and the copy reads back with the
// same metadata and tensor bytes, every tensor on the new boundary.
func TestWriteAligned(t *testing.T) {
	for _, s := range ggufcheck.Generated() {
		f, err := open(s.Data)
		if err != nil {
			t.Fatal(err)
		}
		for _, align := range []int64{8, 32, 64, 4096} {
			var buf bytes.Buffer
			n, err := f.WriteAligned(&buf, align)
			if err != nil || n != int64(buf.Len()) {
				t.Fatalf("%s: WriteAligned(%d) = %d, %v", s.Name, align, n, err)
			}
			l, _ := f.Relayout(format.RelayoutOptions{Align: align})
			g, err := open(buf.Bytes())
			if err != nil {
				t.Fatalf("%s at %d: %v", s.Name, align, err)
			}
			if int64(buf.Len()) != l.Size || !bytes.Equal(buf.Bytes()[:len(l.Head)], l.Head) || g.DataOffset() != int64(len(l.Head)) {
				t.Errorf("%s at %d: %d bytes, layout %d, header %d, data at %d", s.Name, align, buf.Len(), l.Size, len(l.Head), g.DataOffset())
			}
			for i := range g.NumTensors() {
				if g.TensorAt(i).Offset != l.Pieces[i].Offset {
					t.Errorf("%s at %d: tensor %d at %d, layout says %d", s.Name, align, i, g.TensorAt(i).Offset, l.Pieces[i].Offset)
				}
			}
			if err := ggufcheck.Same(f, g, align); err != nil {
				t.Errorf("%s at %d: %v", s.Name, align, err)
			}
		}
	}
	f, _ := open(ggufcheck.Generated()[0].Data)
	for _, bad := range []int64{0, 1, 4, 48, 1 << 32} {
		if _, err := f.WriteAligned(&bytes.Buffer{}, bad); err == nil {
			t.Errorf("alignment %d accepted", bad)
		}
	}
}

// BenchmarkWriteAligned rewrites a file with 64 MiB of tensors: the heap
// holds the header and one copy buffer.
func BenchmarkWriteAligned(b *testing.B) {
	var bl ggufcheck.Builder
	for i := range 64 {
		bl.Add(ggufcheck.Tensor{Name: "t" + string(rune('A'+i)), Type: 0, NE: []uint64{1 << 18}, Data: make([]byte, 1<<20)})
	}
	f, err := open(bl.Bytes())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.WriteAligned(discard{}, 4096); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// readerScript reads a GGUF file with gguf-py's GGUFReader and prints what
// it found as JSON. gguf-py gives q8_1 40 bytes a block where ggml's
// block_q8_1 has 36; the script uses ggml's size.
const readerScript = `
import hashlib, json, sys
import gguf
from gguf import GGMLQuantizationType as T
gguf.GGML_QUANT_SIZES[T.Q8_1] = (32, 36)
res = {}
for p in sys.argv[1:]:
    try:
        r = gguf.GGUFReader(p)
    except Exception as e:
        res[p] = {"error": repr(e)}
        continue
    res[p] = {"alignment": int(r.alignment), "data_offset": int(r.data_offset),
              "keys": [k for k in r.fields if not k.startswith("GGUF.")],
              "tensors": [{"name": t.name, "type": int(t.tensor_type), "ne": [int(x) for x in t.shape],
                           "offset": int(t.data_offset), "nbytes": int(t.n_bytes),
                           "sha256": hashlib.sha256(t.data.tobytes()).hexdigest()} for t in r.tensors]}
print(json.dumps(res))
`

// TestPythonReader rewrites the fixtures, the real files and a
// model-shaped file with alignments 64 and 4096 and reads each copy with
// gguf-py's GGUFReader: the alignment, the data section, the keys and
// every tensor's type, ne, offset and SHA-256 must be what the original
// says. It skips without python3 and gguf (and fails under CI=true).
func TestPythonReader(t *testing.T) {
	if err := exec.Command("python3", "-c", "import gguf").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with gguf is required under CI=true: %v", err)
		}
		t.Skipf("python3 with the gguf package not available: %v", err)
	}
	var files []string
	for _, s := range seeds(t) {
		// gguf-py decodes every array element into numpy objects, seconds
		// for a large vocabulary: the files above 1 MB are left out. It
		// does not know q2_0 (in gen/types-v2.gguf).
		if _, err := open(s.Data); err == nil && s.Name != "gen/types-v2.gguf" && len(s.Data) < 1<<20 {
			p := filepath.Join(t.TempDir(), filepath.Base(s.Name))
			if err := os.WriteFile(p, s.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, p)
		}
	}
	// One run of the script reads the originals and every rewrite.
	type job struct {
		orig  string
		align int64
		out   string
	}
	var jobs []job
	args := []string{"-c", readerScript}
	for i, p := range files {
		orig := openFile(t, p)
		args = append(args, p)
		for _, align := range []int64{64, 4096} {
			out := filepath.Join(t.TempDir(), sprintf("%d-%d.gguf", i, align))
			w, err := os.Create(out)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := orig.WriteAligned(w, align); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, job{p, align, out})
			args = append(args, out)
		}
	}
	cmd := exec.Command("python3", args...)
	cmd.Stderr = os.Stderr
	js, err := cmd.Output()
	if err != nil {
		t.Fatalf("gguf-py: %v", err)
	}
	type reading struct {
		Error      string   `json:"error"`
		Alignment  int64    `json:"alignment"`
		DataOffset int64    `json:"data_offset"`
		Keys       []string `json:"keys"`
		Tensors    []struct {
			Name   string   `json:"name"`
			Type   uint32   `json:"type"`
			NE     []uint64 `json:"ne"`
			Offset int64    `json:"offset"`
			NBytes int64    `json:"nbytes"`
			SHA256 string   `json:"sha256"`
		} `json:"tensors"`
	}
	var res map[string]reading
	if err := json.Unmarshal(js, &res); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		what := filepath.Base(j.orig) + " at " + itoa(j.align)
		if e := res[j.orig].Error; e != "" {
			// the real devstral slice holds keys named like gguf-py's
			// pseudo-fields (GGUF.version), which it refuses as duplicates
			t.Logf("%s: gguf-py does not read the original either (%s): skipped", what, e)
			continue
		}
		got := res[j.out]
		if got.Error != "" {
			t.Errorf("%s: gguf-py: %s", what, got.Error)
			continue
		}
		orig := openFile(t, j.orig)
		align := j.align
		l, _ := orig.Relayout(format.RelayoutOptions{Align: align})
		// gguf-py puts the data section on the boundary after the tensor
		// infos, where the first tensor is; a file without tensors ends
		// before it.
		data := (int64(len(l.Head)) + align - 1) &^ (align - 1)
		if len(l.Pieces) > 0 {
			data = l.Pieces[0].Offset
		} else if l.Size != int64(len(l.Head)) {
			t.Errorf("%s: no tensors, %d bytes, but a head of %d", what, l.Size, len(l.Head))
		}
		if got.Alignment != align || got.DataOffset != data {
			t.Errorf("%s: gguf-py reads alignment %d, data at %d; want %d, %d", what, got.Alignment, got.DataOffset, align, data)
		}
		var keys []string
		for _, kv := range orig.KVs() {
			keys = append(keys, kv.Key)
		}
		if _, had := orig.Metadata("general.alignment"); !had && align != 32 {
			keys = append(keys, "general.alignment")
		}
		gk := got.Keys
		if !equalStrings(gk, keys) {
			t.Errorf("%s: keys %q, want %q", what, gk, keys)
		}
		if len(got.Tensors) != orig.NumTensors() {
			t.Fatalf("%s: %d tensors, want %d", what, len(got.Tensors), orig.NumTensors())
		}
		for i, gt := range got.Tensors {
			ot := orig.TensorInfo(i)
			sum, _ := ot.Data.SHA256()
			ne := make([]uint64, ot.NDims)
			for j := range ne {
				ne[j] = uint64(ot.NE[j])
			}
			if gt.Name != ot.Name || gt.Type != uint32(ot.Type) || !equalU64(gt.NE, ne) || gt.Offset != l.Pieces[i].Offset ||
				gt.Offset%align != 0 || gt.NBytes != ot.NBytes || gt.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("%s: tensor %d: gguf-py reads %+v; want %q %v ne %v at %d, %d bytes, sha %x", what, i, gt, ot.Name, ot.Type, ne, l.Pieces[i].Offset, ot.NBytes, sum)
			}
		}
	}
}

func equalStrings(a, b []string) bool {
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

func equalU64(a, b []uint64) bool {
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

func itoa(x int64) string { return sprintf("%d", x) }
