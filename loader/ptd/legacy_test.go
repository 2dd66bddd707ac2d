package ptd

import (
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/schema/ptdfb"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
)

// flatBuffer returns the FlatBuffer region of a .ptd image.
func flatBuffer(t *testing.T, b []byte) []byte {
	t.Helper()
	h, err := parseHeader(b, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return b[:h.FlatBufferLen()]
}

// readAs parses the FlatBuffer of b with the given layout, bypassing
// detection: what a reader that guessed would see.
func readAs(t *testing.T, b []byte, legacy bool) (*File, error) {
	t.Helper()
	mf := mmapfile.NewBytes(b)
	h, err := parseHeader(b, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	fb := b[:h.FlatBufferLen()]
	f := &File{mf: mf, size: int64(len(b)), hdr: h, legacy: legacy}
	verify, read := ptdfb.VerifyFlatTensor, f.readCurrent
	if legacy {
		verify, read = ptdfb.VerifyLegacyFlatTensor, f.readLegacy
	}
	if err := fbverify.NewWalk(fb, fbverify.Options{Format: formatName}).Verify("FlatTensor", verify); err != nil {
		return nil, err
	}
	return f, read(fb)
}

// TestLegacyMisread: the real legacy file read with the current layout
// fails or yields none of its tensors; the detection picks legacy.
func TestLegacyMisread(t *testing.T) {
	b, err := os.ReadFile(testmodels.Path(t, "ptd/linear-legacy-2025.ptd"))
	if err != nil {
		t.Fatal(err)
	}
	fb := flatBuffer(t, b)
	raw, err := fbverify.RootFieldSlots(fb, fbverify.Options{})
	if err != nil || raw != 4 {
		t.Fatalf("RootFieldSlots = %d, %v; the real legacy file has 4 (named_data absent)", raw, err)
	}
	if n, err := effectiveRootSlots(fb); err != nil || n != 4 {
		t.Fatalf("effectiveRootSlots = %d, %v; want 4", n, err)
	}
	if f, err := readAs(t, b, false); err == nil {
		// A guess that verifies still must not show the legacy tensors.
		for _, k := range []string{"linear.weight", "linear.bias"} {
			if _, ok := f.Entry(k); ok {
				t.Errorf("the current layout found %q in a legacy file", k)
			}
		}
		t.Logf("current layout over the legacy file: %d segments, %d named data (garbage)", len(f.segs), len(f.named))
	} else {
		t.Logf("current layout over the legacy file: %v", err)
	}
	f, err := readAs(t, b, true)
	if err != nil {
		t.Fatalf("legacy layout: %v", err)
	}
	if _, ok := f.Entry("linear.weight"); !ok {
		t.Error("legacy layout did not find linear.weight")
	}
	g, err := NewFile(mmapfile.NewBytes(b))
	if err != nil || !g.Legacy() {
		t.Fatalf("detection: Legacy %v, %v", g != nil && g.Legacy(), err)
	}
}

// TestCurrentMisreadAsLegacy: the real current file read with the legacy
// layout fails or gives garbage, and detection picks current.
func TestCurrentMisreadAsLegacy(t *testing.T) {
	b, err := os.ReadFile(testmodels.Path(t, "ptd/addmul-external.ptd"))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := effectiveRootSlots(flatBuffer(t, b)); err != nil || n != 3 {
		t.Fatalf("effectiveRootSlots = %d, %v; want 3", n, err)
	}
	if f, err := readAs(t, b, true); err == nil {
		if _, ok := f.Entry("a"); ok && len(f.tensors) == 2 && f.segs[0].Len() == 16 {
			t.Error("the legacy layout read the current file as if it were legacy")
		}
	}
	g, err := NewFile(mmapfile.NewBytes(b))
	if err != nil || g.Legacy() {
		t.Fatalf("detection: Legacy %v, %v", g != nil && g.Legacy(), err)
	}
}

// TestDetection runs the rule over writer-made files of both layouts,
// including the trailing-slot cases.
func TestDetection(t *testing.T) {
	entries := []writer.PTDEntry{
		{Key: "t", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{2}}, Data: make([]byte, 8)},
		{Key: "blob", Data: []byte("x")},
	}
	for _, tc := range []struct {
		name   string
		p      writer.PTD
		legacy bool
		slots  int // effective root slots
	}{
		{"current", writer.PTD{Entries: entries}, false, 3},
		{"current version 0 omitted", writer.PTD{Entries: entries, Version: 0}, false, 3},
		{"current empty", writer.PTD{}, false, 3},
		{"current empty omitted", writer.PTD{OmitEmptyVectors: true}, false, 0},
		{"current blob only", writer.PTD{Entries: entries[1:]}, false, 3},
		// A writer that keeps trailing absent slots: 3 + 2 raw slots, 3 counted.
		{"current padded vtable", writer.PTD{Entries: entries, RootVTablePad: 2}, false, 3},
		{"current empty padded", writer.PTD{OmitEmptyVectors: true, RootVTablePad: 4}, false, 0},
		{"legacy", writer.PTD{Legacy: true, Entries: entries}, true, 5},
		{"legacy no named data", writer.PTD{Legacy: true, Entries: entries[:1], OmitEmptyVectors: true}, true, 4},
		{"legacy blob only", writer.PTD{Legacy: true, Entries: entries[1:], OmitEmptyVectors: true}, true, 5},
		{"legacy empty (as upstream: empty lists written)", writer.PTD{Legacy: true}, true, 5},
		{"legacy padded", writer.PTD{Legacy: true, Entries: entries, RootVTablePad: 3}, true, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.p.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			fb := flatBuffer(t, b)
			n, err := effectiveRootSlots(fb)
			if err != nil || n != tc.slots {
				t.Errorf("effective slots %d, %v; want %d", n, err, tc.slots)
			}
			if tc.p.RootVTablePad > 0 {
				raw, _ := fbverify.RootFieldSlots(fb, fbverify.Options{})
				if raw <= n {
					t.Errorf("padded vtable has %d raw slots, not more than %d", raw, n)
				}
			}
			f, err := NewFile(mmapfile.NewBytes(b))
			if err != nil {
				t.Fatal(err)
			}
			if f.Legacy() != tc.legacy {
				t.Errorf("Legacy %v, want %v", f.Legacy(), tc.legacy)
			}
			want := 0
			for _, e := range tc.p.Entries {
				if _, ok := f.Entry(e.Key); ok {
					want++
				}
			}
			if want != len(tc.p.Entries) {
				t.Errorf("found %d of %d keys", want, len(tc.p.Entries))
			}
		})
	}
}

// TestLegacyWithoutSegments documents the one ambiguous case: a legacy
// root whose segments and named_data are both absent has at most three
// slots and is read as the current layout. Such a file holds no data; the
// reading must not invent any (it fails, or shows nothing).
func TestLegacyWithoutSegments(t *testing.T) {
	for _, align := range []int64{16, 128, 4, 1 << 20} {
		p := writer.PTD{Legacy: true, OmitEmptyVectors: true, Alignment: align}
		b, err := p.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := effectiveRootSlots(flatBuffer(t, b)); n > currentRootFields {
			t.Fatalf("align %d: %d slots", align, n)
		}
		f, err := NewFile(mmapfile.NewBytes(b))
		if err != nil {
			t.Logf("align %d: rejected: %v", align, err)
			continue
		}
		if len(f.segs) != 0 || len(f.entries) != 0 {
			t.Errorf("align %d: tensor_alignment read as a segments offset gave %d segments, %d entries", align, len(f.segs), len(f.entries))
		}
	}
}

// TestLegacyTensorOffsetPastSegment: an offset beyond the segment is an
// error naming the key and pointing at the offset field.
func TestLegacyTensorOffsetPastSegment(t *testing.T) {
	for _, off := range []uint64{5, 1 << 40, 1<<64 - 1} {
		p := writer.PTD{Legacy: true, Entries: []writer.PTDEntry{
			{Key: "x", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{1}}, Size: 4, LegacyOffset: &off},
		}}
		b, err := p.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewFile(mmapfile.NewBytes(b))
		var fe *format.FormatError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), `"x"`) {
			t.Fatalf("offset %d: %v, want a FormatError naming x", off, err)
		}
		if off > 4 && (fe.Field != "FlatTensor.tensors[0].offset" || binary.LittleEndian.Uint64(b[fe.Offset:]) != off) {
			t.Errorf("offset %d: field %q at %#x does not hold the offset", off, fe.Field, fe.Offset)
		}
	}
}
