package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/toyformat"
)

// TestToyFormat runs inspect --json, verify and stream on a file of a
// format registered by a test-only package (importing it registers it): the command's generic report shows
// its tensors, its use order (the toy's is reverse file order) and the
// member its Reporter adds, with nothing changed outside the test.
func TestToyFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.toy")
	if err := os.WriteFile(path, toyformat.Write([]string{"a", "b"}, [][]float32{{1, 2, 3}, {4}}), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd("inspect", "--json", "--sha256", path)
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, errOut)
	}
	var doc struct {
		Format  string `json:"format"`
		Tensors []struct {
			Name   string  `json:"name"`
			DType  string  `json:"dtype"`
			Shape  []int64 `json:"shape"`
			Offset int64   `json:"offset"`
			NBytes int64   `json:"nbytes"`
		} `json:"tensors"`
		UseOrder map[string][]string `json:"use_order"`
		Toy      struct {
			Tensors int `json:"tensors"`
		} `json:"toy"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Format != "toy" || len(doc.Tensors) != 2 || doc.Tensors[0].Name != "a" || doc.Tensors[0].NBytes != 12 ||
		!slices.Equal(doc.Tensors[0].Shape, []int64{3}) || doc.Tensors[1].Offset != doc.Tensors[0].Offset+12 || doc.Toy.Tensors != 2 {
		t.Errorf("inspect --json: %s", out)
	}
	if got := doc.UseOrder[""]; !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("use_order %q, want [b a]", got)
	}
	if code, out, errOut := runCmd("verify", path); code != 0 || !strings.Contains(out, "toy, 2 tensors") {
		t.Errorf("verify: exit %d %q %q", code, out, errOut)
	}
	// The stream reads b, then a: its CRC-32C covers their bytes in that
	// order.
	var want []byte
	for _, v := range []float32{4, 1, 2, 3} {
		want = binary.LittleEndian.AppendUint32(want, math.Float32bits(v))
	}
	code, out, errOut = runCmd("stream", "--json", path)
	var st struct {
		Tensors int    `json:"tensors"`
		Bytes   int64  `json:"bytes"`
		CRC     string `json:"crc32c"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Tensors != 2 || st.Bytes != 16 ||
		st.CRC != fmt.Sprintf("%08x", crc32.Checksum(want, crc32.MakeTable(crc32.Castagnoli))) {
		t.Errorf("stream: exit %d %q %q", code, out, errOut)
	}
}
