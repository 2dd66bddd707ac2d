package executorch

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/edgeload/edgeload/loader/format"
)

func TestHeaderRoom(t *testing.T) {
	fb := []byte{12, 0, 0, 0, 'E', 'T', '1', '2', 1, 2, 3, 4, 5, 6}
	got := HeaderRoom(fb, 16)
	if len(got) != len(fb)+16 || binary.LittleEndian.Uint32(got) != 12+16 || string(got[4:8]) != "ET12" ||
		!bytes.Equal(got[8:24], make([]byte, 16)) || !bytes.Equal(got[24:], fb[8:]) {
		t.Errorf("HeaderRoom = %v", got)
	}
}

func TestScalarTypes(t *testing.T) {
	known := 0
	for st := -128; st < 128; st++ {
		d, msg := ScalarTypeDType(int8(st))
		if (msg == "") != d.Valid() {
			t.Errorf("ScalarTypeDType(%d) = %v, %q", st, d, msg)
		}
		if msg != "" {
			continue
		}
		known++
		if back, ok := DTypeScalarType(d); !ok || back != int8(st) {
			t.Errorf("DTypeScalarType(%v) = %d, %v; want %d", d, back, ok, st)
		}
	}
	if known != 23 {
		t.Errorf("%d ScalarTypes known, want 23 (0-7, 11-17, 22-29)", known)
	}
	if _, ok := DTypeScalarType(format.Q4_0); ok {
		t.Error("a GGUF block type has an ExecuTorch ScalarType")
	}
}
