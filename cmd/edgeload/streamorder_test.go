package main

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
)

// streamJSON runs stream --json with args and decodes its report.
func streamJSON(t *testing.T, args ...string) streamReport {
	t.Helper()
	code, out, errOut := runCmd(append([]string{"stream", "--json"}, args...)...)
	if code != 0 || errOut != "" {
		t.Fatalf("stream %q: exit %d: %s", args, code, errOut)
	}
	var r streamReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// crcOf returns the CRC-32C, as stream prints it, of the byte ranges of b
// taken in the order given.
func crcOf(b []byte, ranges [][2]int64) string {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	for _, r := range ranges {
		h.Write(b[r[0] : r[0]+r[1]])
	}
	return fmt.Sprintf("%08x", h.Sum32())
}

// The CRC-32C stream prints covers every byte in the order the stream
// reads it, so that it checks the order too. The model's instructions use
// its weights in the order 3, 4, 1, 5, 0, 2: chain 0 a KernelCall of w3, a
// TensorList (w4, w1) and w3, then a KernelCall of an Int and w5; chain 1
// a KernelCall of w0; w2 unused. The expected CRC is that of the fill
// pattern of each tensor taken in that order.
func TestStreamOrder(t *testing.T) {
	sizes := []int64{7000, 12000, 5000, 150000, 9000, 11000}
	order := []int{3, 4, 1, 5, 0, 2}
	ts := make([]writer.PTETensor, len(sizes))
	pattern := make([][]byte, len(sizes))
	for i, n := range sizes {
		ts[i] = writer.PTETensor{Kind: writer.PTEConstant, ScalarType: writer.PTEUint8, Sizes: []int32{int32(n)},
			Fill: func(p []byte, off int64) { streamFill(i, p, off) }}
		pattern[i] = make([]byte, n)
		streamFill(i, pattern[i], 0)
	}
	w := &writer.PTE{TensorAlignment: 16, Methods: []writer.PTEMethod{{
		Name:      "forward",
		Tensors:   ts,
		Values:    []writer.PTEValue{{Kind: writer.PTETensorList, Items: []int32{4, 1}}, {Kind: writer.PTEInt, Int: 1}},
		Operators: []string{"aten::linear", "aten::add"},
		Instructions: []writer.PTEInstruction{
			{Kind: writer.PTEKernelCall, A: 0, Args: []int32{3, 6, 3}},
			{Kind: writer.PTEKernelCall, A: 1, Args: []int32{7, 5}},
		},
		MoreChains: [][]writer.PTEInstruction{{{Kind: writer.PTEKernelCall, A: 1, Args: []int32{0}}}},
	}}}
	path := filepath.Join(t.TempDir(), "order.pte")
	if _, err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	sum := func(order []int) string {
		var all []byte
		var ranges [][2]int64
		for _, i := range order {
			ranges = append(ranges, [2]int64{int64(len(all)), sizes[i]})
			all = append(all, pattern[i]...)
		}
		return crcOf(all, ranges)
	}
	want := sum(order)
	if want == sum([]int{0, 1, 2, 3, 4, 5}) {
		t.Fatal("the use order's CRC is that of index order: the test would not see the order")
	}
	r := streamJSON(t, "--budget", "64KiB", path)
	if r.Tensors != len(sizes) || r.Checksum != want {
		t.Fatalf("stream: %d tensors, crc32c %s; want %d tensors in the order %v, crc32c %s (index order gives %s)",
			r.Tensors, r.Checksum, len(sizes), order, want, sum([]int{0, 1, 2, 3, 4, 5}))
	}
}

// keywordSpottingUsed is the weights the instructions of the real
// arduino-keyword-spotting.pte use, in first-use order, as value indices
// (tensor "forward/values/N"), read without edgeload by
// stream/testdata/useorder.py (flatc's JSON of the program, KernelCall
// arguments walked in order). The weights no instruction uses follow in
// value order.
var keywordSpottingUsed = []int{
	39, 40, 38, 37, 44, 45, 43, 42, 49, 50, 48, 47, 54, 55, 53, 52, 59, 60, 58, 57,
	64, 65, 63, 62, 69, 70, 68, 67, 74, 75, 73, 72, 79, 80, 78, 77, 81, 82,
}

// stream --json on the real keyword-spotting model: the CRC-32C of every
// tensor's bytes (offsets and sizes from the expected values) taken in the
// independently read use order.
func TestStreamRealOrder(t *testing.T) {
	path := testmodels.Path(t, "pte/arduino-keyword-spotting.pte")
	exp := testmodels.Load(t, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := make(map[string][2]int64)
	for _, et := range exp.Tensors {
		if et.Offset == nil {
			t.Fatalf("%s has no offset", et.Name)
		}
		at[et.Name] = [2]int64{*et.Offset, et.NBytes}
	}
	var names []string
	for _, v := range keywordSpottingUsed {
		names = append(names, fmt.Sprintf("forward/values/%d", v))
	}
	for v := range len(exp.Tensors) {
		if !slices.Contains(keywordSpottingUsed, v) {
			names = append(names, fmt.Sprintf("forward/values/%d", v))
		}
	}
	var ranges, index [][2]int64
	for _, n := range names {
		r, ok := at[n]
		if !ok {
			t.Fatalf("the expected values have no tensor %s", n)
		}
		ranges = append(ranges, r)
	}
	for _, et := range exp.Tensors {
		index = append(index, at[et.Name])
	}
	want := crcOf(b, ranges)
	if want == crcOf(b, index) {
		t.Fatal("the use order's CRC is that of index order: the test would not see the order")
	}
	r := streamJSON(t, "--budget", "16KiB", path)
	if r.Tensors != len(names) || r.Checksum != want {
		t.Fatalf("stream: %d tensors, crc32c %s; want %d tensors, crc32c %s in use order (index order gives %s)",
			r.Tensors, r.Checksum, len(names), want, crcOf(b, index))
	}
}

// A safetensors file records no order of use: stream says it reads file
// order, and the CRC-32C covers the tensors by their offsets (from the
// expected values) in that order.
func TestStreamFileOrder(t *testing.T) {
	path := testmodels.Path(t, "safetensors/burn-mnist.safetensors")
	exp := testmodels.Load(t, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ranges [][2]int64
	for _, et := range exp.Tensors {
		ranges = append(ranges, [2]int64{*et.Offset, et.NBytes})
	}
	slices.SortFunc(ranges, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	for _, passes := range []string{"1", "2"} {
		r := streamJSON(t, "--passes", passes, path)
		if r.Order != "file" || r.Checksum != crcOf(b, ranges) {
			t.Fatalf("--passes %s: order %q, crc32c %s; want file order, %s", passes, r.Order, r.Checksum, crcOf(b, ranges))
		}
	}
	code, out, _ := runCmd("stream", path)
	if code != 0 || !strings.Contains(out, "file order") {
		t.Fatalf("exit %d: %q does not say it streamed in file order", code, out)
	}
}
