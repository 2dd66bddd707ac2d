package format

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"testing"
)

func TestDTypeNamesRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for d := Invalid + 1; d < numDTypes; d++ {
		name := d.String()
		if seen[name] {
			t.Fatalf("duplicate name %q", name)
		}
		seen[name] = true
		if got, ok := ParseDType(name); !ok || got != d {
			t.Errorf("ParseDType(%q) = %v, %v; want %v", name, got, ok, d)
		}
		if e, b := d.Block(); (e == 0) != (d == String) || !d.Valid() || (d.Size() != 0) != (e == 1) {
			t.Errorf("%v: block %d/%d size %d valid %v", d, e, b, d.Size(), d.Valid())
		}
	}
	if _, ok := ParseDType("complex32"); ok {
		t.Error("ParseDType accepted complex32")
	}
	if Invalid.Valid() || DType(200).Valid() || DType(200).Size() != 0 {
		t.Error("invalid dtypes reported valid")
	}
	// The sizes the JSON output relies on.
	for d, want := range map[DType]int{Float16: 2, BFloat16: 2, Float32: 4, Float64: 8, Int64: 8, Bool: 1, QUInt4x2: 1, QInt32: 4, Bits16: 2, Float8E4M3FN: 1} {
		if d.Size() != want {
			t.Errorf("%v.Size() = %d, want %d", d, d.Size(), want)
		}
	}
	// Packed and block types: bytes for a count of elements (FORMATS-gguf.md's
	// type table; int4 two to a byte, rounded up).
	for _, c := range []struct {
		d     DType
		dims  []int64
		bytes int64
	}{{Q4_0, []int64{2, 64}, 2 * 2 * 18}, {Q6_K, []int64{256}, 210}, {Int4, []int64{3}, 2}, {Float6E2M3FN, []int64{8}, 6}, {MXFP4, []int64{32}, 17}} {
		if _, n, ok := Numel(c.dims, c.d, math.MaxInt64); !ok || n != c.bytes {
			t.Errorf("Numel(%v, %v) = %d, %v; want %d", c.dims, c.d, n, ok, c.bytes)
		}
	}
}

func TestNumel(t *testing.T) {
	cases := []struct {
		dims          []int64
		d             DType
		max           int64
		numel, nbytes int64
		ok            bool
	}{
		{nil, Float32, math.MaxInt64, 1, 4, true},
		{[]int64{2, 3}, Float32, math.MaxInt64, 6, 24, true},
		{[]int64{0, 1 << 62}, Float32, math.MaxInt64, 0, 0, true},
		{[]int64{-1, 2}, Float32, math.MaxInt64, 0, 0, false},
		{[]int64{1 << 32, 1 << 32}, Int8, math.MaxInt64, 0, 0, false}, // numel overflows
		{[]int64{1 << 62}, Float32, math.MaxInt64, 0, 0, false},       // nbytes overflows
		{[]int64{1024}, Float32, 4095, 0, 0, false},                   // larger than the bound
		{[]int64{1024}, Float32, 4096, 1024, 4096, true},
		{[]int64{4}, Invalid, math.MaxInt64, 0, 0, false},
	}
	for _, c := range cases {
		n, b, ok := Numel(c.dims, c.d, c.max)
		if ok != c.ok || (ok && (n != c.numel || b != c.nbytes)) {
			t.Errorf("Numel(%v, %v, %d) = %d, %d, %v; want %d, %d, %v", c.dims, c.d, c.max, n, b, ok, c.numel, c.nbytes, c.ok)
		}
	}
}

func TestFormatError(t *testing.T) {
	e := Errorf("pte", "Program.segments[2].offset", 0x1c8, "segment ends at %d, past the end of the file (%d bytes)", 900, 800)
	want := "pte: Program.segments[2].offset at offset 0x1c8: segment ends at 900, past the end of the file (800 bytes)"
	if e.Error() != want {
		t.Errorf("got %q\nwant %q", e.Error(), want)
	}
	if !errors.Is(e, ErrMalformed) || errors.Is(e, ErrTruncated) {
		t.Error("Errorf should wrap ErrMalformed only")
	}
	w := Wrapf(ErrTruncated, "ptd", "", -1, "file is %d bytes, header says %d", 10, 20)
	if w.Error() != "ptd: file is 10 bytes, header says 20" || !errors.Is(w, ErrTruncated) {
		t.Errorf("Wrapf: %q", w.Error())
	}
	if got := Errorf("rten", "graph", -1, "x").Error(); got != "rten: graph: x" {
		t.Errorf("field without offset: %q", got)
	}
	if got := Errorf("rten", "", 16, "x").Error(); got != "rten: at offset 0x10: x" {
		t.Errorf("offset without field: %q", got)
	}
	var fe *FormatError
	if !errors.As(error(w), &fe) || fe.Format != "ptd" {
		t.Error("errors.As failed")
	}
}

func TestLocationStrings(t *testing.T) {
	for l, s := range map[Location]string{LocSegment: "segment", LocInline: "inline", LocMutable: "mutable", LocExternal: "external", LocNone: "none"} {
		if l.String() != s {
			t.Errorf("%d: %q want %q", l, l.String(), s)
		}
	}
}

// TestFieldsJSON: Fields marshal as an object in order, with <, > and &
// kept for an Encoder that does not escape them.
func TestFieldsJSON(t *testing.T) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	fs := Fields{{Key: "z<", Value: "<f4"}, {Key: "a", Value: Fields{{Key: "n", Value: 1}, {Key: "&", Value: []int{2}}}}}
	if err := enc.Encode(fs); err != nil {
		t.Fatal(err)
	}
	if want := `{"z<":"<f4","a":{"n":1,"&":[2]}}` + "\n"; b.String() != want {
		t.Errorf("Fields encode as %s, want %s", b.String(), want)
	}
	if _, err := json.Marshal(Fields{{Key: "f", Value: func() {}}}); err == nil {
		t.Error("a field that cannot be marshalled gives no error")
	}
}
