package stream

import (
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/loader"
)

// A tensor of no bytes on an aligned offset takes no room in the direct
// reader's buffer and is handed out empty, with its neighbour's bytes
// intact.
func TestEmptyTensorAligned(t *testing.T) {
	hdr := `{"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"U8","shape":[4096],"data_offsets":[0,4096]}}`
	hdr += strings.Repeat(" ", 4096-8-len(hdr))
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	b = append(b, hdr...)
	for i := range 4096 {
		b = append(b, byte(i*7))
	}
	p := filepath.Join(t.TempDir(), "empty.safetensors")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := loader.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, r := range readers {
		t.Run(r.String(), func(t *testing.T) {
			s := newPasses(t, m, r)
			var got []string
			for {
				it, err := s.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				p, err := it.Data.Bytes()
				if err != nil {
					t.Fatal(err)
				}
				if it.Name == "b" && (len(p) != 4096 || p[4095] != byte(4095*7%256)) {
					t.Errorf("b: %d bytes, last %d", len(p), p[len(p)-1])
				}
				if it.Name == "a" && (len(p) != 0 || it.Data.File() != m.TensorData(0).File()) {
					t.Errorf("a: %d bytes in %v, want an empty view of the model's file", len(p), it.Data.File())
				}
				got = append(got, it.Name)
			}
			if strings.Join(got, " ") != "a b" {
				t.Errorf("items %v, want a b", got)
			}
		})
	}
}
