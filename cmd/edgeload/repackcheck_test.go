package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
)

// repack --check on a repacked file with one byte of one weight flipped:
// exit 1, the sha256 line of that weight with the SHA-256 of its bytes
// before and after (computed here), nothing about the other weights, and
// one error line. The weight is found in the repacked file by its bytes,
// not by edgeload's reading of it.
func TestRepackCheckFlippedByte(t *testing.T) {
	dir := t.TempDir()
	data := [][]byte{make([]byte, 24), make([]byte, 40), make([]byte, 12)}
	names := []string{"w.first", "w.second", "w.third"}
	ts := make([]writer.PTETensor, len(data))
	for i, d := range data {
		for k := range d {
			d[k] = byte(i*59 + k*13 + 1)
		}
		ts[i] = writer.PTETensor{ScalarType: writer.PTEFloat32, Sizes: []int32{int32(len(d) / 4)}, Data: d, Name: names[i]}
	}
	in := filepath.Join(dir, "in.pte")
	if _, err := (&writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: ts}}}).WriteFile(in); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.pte")
	if code, stdout, stderr := runCmd("repack", "--align", "4096", "--tensor-align", "64", in, out); code != exitOK {
		t.Fatalf("repack: exit %d, %q %q", code, stdout, stderr)
	}
	if code, stdout, stderr := runCmd("repack", "--check", in, out); code != exitOK || !strings.Contains(stdout, "hold the same tensors") {
		t.Fatalf("repack --check of the repacked file: exit %d, %q %q", code, stdout, stderr)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(raw, data[1])
	if at < 0 || bytes.Contains(raw[at+1:], data[1]) {
		t.Fatalf("the second weight's bytes are at %d in the repacked file (want exactly one place)", at)
	}
	raw[at+5] ^= 0x40
	bad := filepath.Join(dir, "bad.pte")
	if err := os.WriteFile(bad, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(data[1])
	before := hex.EncodeToString(h[:])
	data[1][5] ^= 0x40
	h = sha256.Sum256(data[1])
	after := hex.EncodeToString(h[:])

	code, stdout, stderr := runCmd("repack", "--check", in, bad)
	if want := "w.second: sha256 " + before + " != " + after + "\n"; code != exitInvalid || stdout != want {
		t.Fatalf("repack --check of the flipped copy: exit %d, stdout %q; want exit %d, stdout %q", code, stdout, exitInvalid, want)
	}
	checkFailLine(t, stderr)
	if !strings.Contains(stderr, "differ in 1 place") {
		t.Errorf("stderr %q", stderr)
	}
}

// repack --check compares what is not a tensor too: a flipped byte in a
// delegate's blob (the QNN blob of stories260k-qnn, which two methods
// share), in an associated file of a TFLite model, and in a TFLite buffer
// no tensor reads each give the lines of what they are in, with the
// SHA-256 of its bytes before and after (computed here), and nothing else.
// Where the bytes lie comes from the independent reader's expected/ values
// and Go's archive/zip, not from edgeload.
func TestRepackCheckNonTensorBytes(t *testing.T) {
	type flip struct {
		model string
		lo, n int64    // the range holding the flipped byte
		names []string // what the range is to repack --check
	}
	var flips []flip
	qnn := testmodels.Path(t, "pte/stories260k-qnn.pte")
	for _, s := range testmodels.Load(t, qnn).Segments {
		if s.Size > 0 {
			flips = append(flips, flip{model: qnn, lo: s.Offset, n: s.Size, names: []string{"delegate kv_forward/0", "delegate prefill_forward/0"}})
		}
	}
	tfl := testmodels.Path(t, "tflite/support-mobilenet-v1-quant-metadata.tflite")
	raw, err := os.ReadFile(tfl)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		off, err := f.DataOffset()
		if err != nil {
			t.Fatal(err)
		}
		flips = append(flips, flip{model: tfl, lo: off, n: int64(f.UncompressedSize64), names: []string{"named data " + f.Name}})
	}
	exp := testmodels.Load(t, tfl)
	for _, s := range exp.Segments {
		held := false
		for _, tn := range exp.Tensors {
			held = held || tn.Offset != nil && *tn.Offset >= s.Offset && *tn.Offset < s.Offset+s.Size
		}
		if !held && s.Size > 0 {
			flips = append(flips, flip{model: tfl, lo: s.Offset, n: s.Size, names: []string{"segment " + strconv.Itoa(s.Index)}})
		}
	}
	if len(flips) < 3 {
		t.Fatalf("%d ranges to flip, want a delegate blob, an associated file and buffers without tensors", len(flips))
	}
	dir := t.TempDir()
	for _, f := range flips {
		b, err := os.ReadFile(f.model)
		if err != nil {
			t.Fatal(err)
		}
		before := sha256.Sum256(b[f.lo : f.lo+f.n])
		b[f.lo+f.n/2] ^= 0x10
		after := sha256.Sum256(b[f.lo : f.lo+f.n])
		bad := filepath.Join(dir, "bad-"+filepath.Base(f.model))
		if err := os.WriteFile(bad, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var want string
		for _, n := range f.names {
			want += n + ": sha256 " + hex.EncodeToString(before[:]) + " != " + hex.EncodeToString(after[:]) + "\n"
		}
		code, stdout, stderr := runCmd("repack", "--check", f.model, bad)
		if code != exitInvalid || stdout != want {
			t.Errorf("%s, byte %d of [%d, +%d) flipped: exit %d, stdout %q, stderr %q; want exit %d, stdout %q",
				filepath.Base(f.model), f.lo+f.n/2, f.lo, f.n, code, stdout, stderr, exitInvalid, want)
		}
	}
}
