package runtimes

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
)

// The breakages that are not a flipped weight (each model's
// "flipped-weight" subtest in TestExecuTorch*, TestLiteRT and TestLlamaCpp
// has those): a flipped byte of a delegate's blob, and a GGUF tensor whose
// offset moved by one block. Each runs in its runtime beside the good
// repack and goes through repack --check against the original, and says
// which caught it; --check must.

// TestBrokenDelegateBlob flips a byte in the middle of stories260k-qnn's
// QNN blob in its --align 16KiB repack. The portable runtime has no QNN
// backend, so the methods that run the blob fail alike on both files:
// repack --check, which compares delegate blobs, must name it.
func TestBrokenDelegateBlob(t *testing.T) {
	py := Python(t)
	dir := t.TempDir()
	orig := File{Path: filepath.Join(testmodels.Dir(t), "pte", "stories260k-qnn.pte")}
	good := File{Path: filepath.Join(dir, "stories260k-qnn.align.pte")}
	if msg, ok := Repack(t, "--align", "16KiB", orig.Path, good.Path); !ok {
		t.Fatal(msg)
	}
	m, err := loader.Open(good.Path)
	if err != nil {
		t.Fatal(err)
	}
	bu, ok := m.Impl().(format.BlobUser)
	if !ok {
		m.Close()
		t.Fatal("a program does not list its delegate blobs")
	}
	blobs := bu.GroupBlobs("")
	m.Close()
	if len(blobs) == 0 {
		t.Fatal("no delegate blob in stories260k-qnn")
	}
	blob := blobs[0]
	at := blob.Data.Offset() + blob.Data.Len()/2
	b := Breakage{
		What:  blob.Name + ": its middle byte XOR 0xC0, at offset " + itoa(at),
		Names: []string{blob.Name},
		File:  File{Path: CopyBroken(t, dir, good.Path, []int64{at}, func(x byte) byte { return x ^ 0xC0 })},
	}
	runBreakage(t, py, "pte", orig, good, b)
}

// TestShiftedGGUFTensor moves the offset of a tensor of llama2-tiny-random's
// --align 16KiB repack by one block of its type (the tensor FlipWeight
// would break: the first weight it uses that is not an embedding), in the
// tensor info of the header, found by its name as GGUF writes it (a uint64
// length and the bytes) and read as the format lays it out: n_dims
// (uint32), the dims (uint64 each), the type (uint32), the offset
// (uint64).
func TestShiftedGGUFTensor(t *testing.T) {
	py := Python(t)
	dir := t.TempDir()
	orig := File{Path: filepath.Join(testmodels.Dir(t), "gguf", "llama2-tiny-random.gguf")}
	good := File{Path: filepath.Join(dir, "llama2-tiny-random.align.gguf")}
	if msg, ok := Repack(t, "--align", "16KiB", orig.Path, good.Path); !ok {
		t.Fatal(msg)
	}
	flip, ok := FlipWeight(t, dir, good)
	if !ok {
		t.Fatal("no weight in llama2-tiny-random")
	}
	m, err := loader.Open(good.Path)
	if err != nil {
		t.Fatal(err)
	}
	tn, ok := m.Tensor(flip.Names[0])
	if !ok {
		m.Close()
		t.Fatalf("no tensor %q", flip.Names[0])
	}
	_, block := tn.DType.Block()
	m.Close()
	data, err := os.ReadFile(good.Path)
	if err != nil {
		t.Fatal(err)
	}
	key := binary.LittleEndian.AppendUint64(nil, uint64(len(flip.Names[0])))
	key = append(key, flip.Names[0]...)
	at := bytes.Index(data, key)
	if at < 0 || bytes.Contains(data[at+1:], key) {
		t.Fatalf("the tensor info of %q is not found exactly once in the file", flip.Names[0])
	}
	p := at + len(key)
	ndims := int(binary.LittleEndian.Uint32(data[p:]))
	p += 4 + 8*ndims + 4 // n_dims, dims, type: the offset follows
	old := binary.LittleEndian.Uint64(data[p:])
	binary.LittleEndian.PutUint64(data[p:], old+uint64(block))
	shifted := filepath.Join(dir, "shifted-llama2-tiny-random.gguf")
	if err := os.WriteFile(shifted, data, 0o644); err != nil {
		t.Fatal(err)
	}
	b := Breakage{
		What:  "tensor " + flip.Names[0] + " (" + tn.DType.String() + "): its offset moved by one block, " + itoa(int64(block)) + " bytes, from " + itoa(int64(old)),
		Names: flip.Names,
		File:  File{Path: shifted},
	}
	runBreakage(t, py, "gguf", orig, good, b)
}

// runBreakage runs the original, the good repack and the broken copy with
// the driver's command on every input set, requires the good repack to
// give the original's results, and reports which checks caught the broken
// copy; repack --check must.
func runBreakage(t *testing.T, py, command string, orig, good File, b Breakage) caught {
	t.Helper()
	var job []any
	for _, r := range []struct {
		name string
		f    File
	}{{"original", orig}, {"good", good}, {"broken", b.File}} {
		if command == "pte" {
			job = append(job, PTERun{Name: r.name, Program: r.f.Path, Data: r.f.datum(), Iterations: 1, Seeds: Seeds})
		} else {
			job = append(job, map[string]any{"name": r.name, "model": r.f.Path, "seeds": Seeds})
		}
	}
	var res struct{ Runs []Run }
	Driver(t, py, command, map[string]any{"runs": job}, &res)
	if len(res.Runs) != 3 {
		t.Fatalf("%d runs reported", len(res.Runs))
	}
	s := subject{file: orig, orig: res.Runs[0], runs: map[string]Run{"good": res.Runs[1], "broken": res.Runs[2]}, cannot: "what the runtime cannot run of it"}
	if len(s.orig.Ran()) == 0 {
		t.Fatalf("the original does not run: %s", s.orig.Why())
	}
	checkVariant(t, s, variant{name: "good", file: good})
	if t.Failed() {
		t.FailNow()
	}
	c := checkBreakage(t, s, variant{name: "broken", file: b.File, flip: &b})
	if r := res.Runs[2]; r.LoadError != "" || r.Error != "" {
		t.Logf("the runtime on the broken copy: %s", clip(res.Runs[2].Why(), 600))
	}
	return c
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
