package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader"
)

// manyKeysPTD is a .ptd of n float32 tensors of shape [2 3] (their bytes a
// sparse hole), keyed like a model's layers.
func manyKeysPTD(n int) *writer.PTD {
	p := &writer.PTD{Entries: make([]writer.PTDEntry, n)}
	for i := range p.Entries {
		p.Entries[i] = writer.PTDEntry{
			Key:    fmt.Sprintf("model.layers.%d.mlp.w%d.weight", i/4, i%4),
			Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{2, 3}},
		}
	}
	return p
}

// writeManyKeys writes manyKeysPTD(n) to a temporary file and returns its
// path and layout.
func writeManyKeys(t testing.TB, n int) (string, writer.PTDLayoutInfo) {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("keys%d.ptd", n))
	info, err := manyKeysPTD(n).WriteFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, info
}

// TestWriteManyKeysPTD writes the 200,000-key .ptd of the memory
// measurement to $EDGELOAD_MANYKEYS (see docs in runInspect's report);
// skipped without it.
func TestWriteManyKeysPTD(t *testing.T) {
	path := os.Getenv("EDGELOAD_MANYKEYS")
	if path == "" {
		t.Skip("set EDGELOAD_MANYKEYS=FILE to write the 200,000-key .ptd")
	}
	if _, err := manyKeysPTD(200_000).WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

// topKeys returns the keys of the JSON object doc, in order.
func topKeys(t *testing.T, doc []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %v %v", tok, err)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// inspect --json of a .ptd with many keys lists every key as a tensor and
// as named data, where the writer put its bytes, in the report's key order,
// as valid indented JSON.
func TestInspectManyKeys(t *testing.T) {
	const n = 5000
	path, info := writeManyKeys(t, n)
	code, out, errOut := runCmd("inspect", "--json", "--sha256", path)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := []string{"format", "file_size", "segments", "named_data", "tensors", "header", "use_order", "warnings"}
	if got := topKeys(t, []byte(out)); !slices.Equal(got, want) {
		t.Errorf("keys %q, want %q", got, want)
	}
	var doc struct {
		Format    string
		FileSize  int64 `json:"file_size"`
		Segments  []struct{ Offset, Size int64 }
		NamedData []struct {
			Key          string
			Offset, Size int64
		} `json:"named_data"`
		Tensors []struct {
			Name   string
			DType  string
			Shape  []int64
			Offset *int64
			NBytes int64
			SHA256 string
		}
		UseOrder map[string][]string `json:"use_order"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	// The same document as encoding/json indents it.
	var re bytes.Buffer
	if err := json.Indent(&re, []byte(out), "", "  "); err != nil || re.String() != out {
		t.Errorf("the output is not indented as json.Indent would (err %v)", err)
	}
	if doc.Format != "ptd" || doc.FileSize != info.FileSize || len(doc.Segments) != n || len(doc.NamedData) != n || len(doc.Tensors) != n {
		t.Fatalf("format %q size %d (want %d), %d segments, %d named data, %d tensors; want %d each",
			doc.Format, doc.FileSize, info.FileSize, len(doc.Segments), len(doc.NamedData), len(doc.Tensors), n)
	}
	entries := manyKeysPTD(n).Entries
	// The SHA-256 of 24 zero bytes.
	const zeros24 = "9d908ecfb6b256def8b49a7c504e6c889c4b0e41fe6ce3e01863dd7b61a20aa0"
	for i, e := range entries {
		p, tr, nd := info.Entries[i], doc.Tensors[i], doc.NamedData[i]
		if tr.Name != e.Key || tr.DType != "float32" || !slices.Equal(tr.Shape, []int64{2, 3}) || tr.NBytes != 24 ||
			tr.Offset == nil || *tr.Offset != p.Offset || tr.SHA256 != zeros24 {
			t.Fatalf("tensor %d: %+v, want %s at %d", i, tr, e.Key, p.Offset)
		}
		if nd.Key != e.Key || nd.Offset != p.Offset || nd.Size != p.Size {
			t.Fatalf("named data %d: %+v, want %+v", i, nd, p)
		}
	}
	order := doc.UseOrder[""]
	if len(doc.UseOrder) != 1 || len(order) != n || order[0] != entries[0].Key || order[n-1] != entries[n-1].Key {
		t.Errorf("use_order: %d groups, %d names", len(doc.UseOrder), len(order))
	}
}

// heapSampler is an io.Writer that discards what it is given and, every
// few writes, measures the live heap (after a collection): the peak of
// the live heap while inspect writes its report.
type heapSampler struct {
	every, writes int
	bytes         int64
	first, peak   uint64 // at the first write, and the most
}

func (h *heapSampler) Write(p []byte) (int, error) {
	if h.writes%h.every == 0 {
		live := liveHeap()
		if h.writes == 0 {
			h.first = live
		}
		h.peak = max(h.peak, live)
	}
	h.writes++
	h.bytes += int64(len(p))
	return len(p), nil
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// inspect --json holds the model's metadata and its use order, never the
// document: the live heap above what it was before stays within 1.5 times
// what the opened model itself holds, and grows by less than a twentieth
// of the output while the output is written (a report built in memory,
// then marshalled, then copied, holds the output three times over).
func TestInspectJSONMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 20,000-key file")
	}
	const n = 20_000
	path, _ := writeManyKeys(t, n)

	// What the opened model holds: its tensors and named data, built.
	base := liveHeap()
	m, err := loader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m.Tensors()
	m.NamedData()
	meta := int64(liveHeap()) - int64(base)
	m.Close()
	m = nil

	h := &heapSampler{every: 10}
	var errOut bytes.Buffer
	base = liveHeap()
	if code := run([]string{"inspect", "--json", path}, h, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	peak, growth := int64(h.peak)-int64(base), int64(h.peak)-int64(h.first)
	t.Logf("%d keys: model metadata %d KiB; live heap at the first write %d KiB, at most %d KiB; output %d KiB in %d writes",
		n, meta>>10, (int64(h.first)-int64(base))>>10, peak>>10, h.bytes>>10, h.writes)
	if h.writes < 10 {
		t.Fatalf("only %d writes: the output is not streamed", h.writes)
	}
	if peak > meta*3/2 || growth > h.bytes/20 {
		t.Errorf("peak live heap %d bytes (%d more than at the first write): more than 1.5 times the model's %d, or growing by more than a twentieth of the %d-byte output",
			peak, growth, meta, h.bytes)
	}
}

// failWriter fails every write after the first n bytes.
type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k := f.n
		f.n = 0
		return k, errors.New("no space left on device")
	}
	f.n -= len(p)
	return len(p), nil
}

// An error writing the report stops it: exit 1, one line naming the error,
// and no more writes.
func TestInspectWriteError(t *testing.T) {
	path, _ := writeManyKeys(t, 2000)
	for _, args := range [][]string{{"inspect", "--json", path}, {"inspect", path}} {
		var errOut bytes.Buffer
		fw := &failWriter{n: 100 << 10}
		code := run(args, fw, &errOut)
		if code != exitInvalid || !strings.Contains(errOut.String(), "writing output: no space left on device") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut.String())
		}
		checkFailLine(t, errOut.String())
	}
	// A reader that stops: io.ErrClosedPipe as a closed pipe gives it.
	var errOut bytes.Buffer
	if code := run([]string{"inspect", "--json", path}, closedPipe{}, &errOut); code != exitInvalid {
		t.Errorf("closed pipe: exit %d", code)
	}
}

type closedPipe struct{}

func (closedPipe) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }
