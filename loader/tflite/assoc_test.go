package tflite_test

import (
	"bytes"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
)

// TestAssociatedFiles finds labels.txt, stored, in the zip TFLite Support
// appended to the mobilenet model (FORMATS-tflite.md §6: stored at 498184,
// its local header: 30 bytes and the 10-byte name before the data).
func TestAssociatedFiles(t *testing.T) {
	m := openFile(t, testmodels.Path(t, "tflite/support-mobilenet-v1-quant-metadata.tflite"))
	as := m.AssociatedFiles()
	if len(as) != 1 || as[0].Name != "labels.txt" || as[0].Method != 0 || as[0].Data.Offset() != 498184+30+10 || as[0].Size != as[0].Data.Len() {
		t.Fatalf("associated files %+v, want labels.txt stored at 498184", as)
	}
	nd := m.NamedData()
	if len(nd) != 1 || nd[0].Key != "labels.txt" || nd[0].Segment != -1 || nd[0].Data != as[0].Data {
		t.Fatalf("named data %+v", nd)
	}
	b, err := nd[0].Data.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("background\n")) || !bytes.Contains(b, []byte("\ntench\n")) {
		t.Errorf("labels.txt begins %q", b[:min(len(b), 40)])
	}
	if v := m.MinRuntimeVersion(); v != "" {
		t.Errorf("MinRuntimeVersion %q, want none", v)
	}
}
