package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
