package segment

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"unsafe"

	"github.com/edgeload/edgeload/mmapfile"
)

type myFloat float32
type myBool bool

// alignedBytes returns n bytes starting at an address aligned to 64.
func alignedBytes(n int) []byte {
	b := make([]uint64, n/8+16)
	return unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), len(b)*8)[:n]
}

// checkView checks As[T] on s against decode, which reads element i from
// little-endian bytes; wantCopy is whether a copy is expected.
func checkView[T Elem](t *testing.T, s Segment, wantCopy bool, decode func(b []byte) T) {
	t.Helper()
	v, copied, err := As[T](s)
	if err != nil {
		t.Fatalf("As[%T]: %v", *new(T), err)
	}
	if copied != wantCopy {
		t.Fatalf("As[%T] at offset %d: copied = %v, want %v", *new(T), s.Offset(), copied, wantCopy)
	}
	size := int(unsafe.Sizeof(*new(T)))
	b, _ := s.Bytes()
	if len(v) != len(b)/size {
		t.Fatalf("As[%T]: %d elements, want %d", *new(T), len(v), len(b)/size)
	}
	for i := range v {
		want := decode(b[i*size:])
		if v[i] != want && !(v[i] != v[i] && want != want) { // NaN == NaN here
			t.Fatalf("As[%T][%d] = %v, want %v", *new(T), i, v[i], want)
		}
	}
	if !copied && len(v) > 0 && unsafe.Pointer(&v[0]) != unsafe.Pointer(&b[0]) {
		t.Fatalf("As[%T] is not a view of the mapping", *new(T))
	}
}

func testTypes(t *testing.T, f *mmapfile.File, base int64, zeroCopy bool) {
	le := binary.LittleEndian
	for _, c := range []struct {
		off     int64 // relative to base
		aligned bool  // for 8-byte types
	}{{0, true}, {8, true}, {1, false}, {3, false}, {4, false}} {
		off := base + c.off
		s, err := New(f, off, 96)
		if err != nil {
			t.Fatal(err)
		}
		cp := func(align int64) bool { return !zeroCopy || !littleEndian || off%align != 0 }
		checkView(t, s, cp(4), func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) })
		checkView(t, s, cp(4), func(b []byte) myFloat { return myFloat(math.Float32frombits(le.Uint32(b))) })
		checkView(t, s, cp(int64(unsafe.Alignof(float64(0)))), func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) })
		checkView(t, s, cp(1), func(b []byte) int8 { return int8(b[0]) })
		checkView(t, s, cp(1), func(b []byte) uint8 { return b[0] })
		checkView(t, s, cp(2), func(b []byte) int16 { return int16(le.Uint16(b)) })
		checkView(t, s, cp(2), func(b []byte) uint16 { return le.Uint16(b) })
		checkView(t, s, cp(4), func(b []byte) int32 { return int32(le.Uint32(b)) })
		checkView(t, s, cp(4), func(b []byte) uint32 { return le.Uint32(b) })
		checkView(t, s, cp(int64(unsafe.Alignof(int64(0)))), func(b []byte) int64 { return int64(le.Uint64(b)) })
		checkView(t, s, cp(int64(unsafe.Alignof(uint64(0)))), func(b []byte) uint64 { return le.Uint64(b) })

		// The wrappers agree with As.
		if v, _, err := s.Float32(); err != nil || len(v) != 24 {
			t.Fatalf("Float32: %d, %v", len(v), err)
		}
		for name, fn := range map[string]func() (int, error){
			"Float64": func() (int, error) { v, _, err := s.Float64(); return len(v), err },
			"Uint16":  func() (int, error) { v, _, err := s.Uint16(); return len(v), err },
			"Int8":    func() (int, error) { v, _, err := s.Int8(); return len(v), err },
			"Int16":   func() (int, error) { v, _, err := s.Int16(); return len(v), err },
			"Int32":   func() (int, error) { v, _, err := s.Int32(); return len(v), err },
			"Int64":   func() (int, error) { v, _, err := s.Int64(); return len(v), err },
			"Uint8":   func() (int, error) { v, _, err := s.Uint8(); return len(v), err },
			"Uint32":  func() (int, error) { v, _, err := s.Uint32(); return len(v), err },
			"Uint64":  func() (int, error) { v, _, err := s.Uint64(); return len(v), err },
		} {
			if n, err := fn(); err != nil || n == 0 || int64(n)*int64(96/n) != 96 {
				t.Fatalf("%s: %d elements, %v", name, n, err)
			}
		}
		// A length that is not a multiple of the element size.
		odd, _ := New(f, off, 95)
		if _, _, err := odd.Float32(); !errors.Is(err, ErrRange) {
			t.Fatalf("Float32 of 95 bytes = %v, want ErrRange", err)
		}
		if _, _, err := odd.Uint16(); err == nil {
			t.Fatal("Uint16 of 95 bytes succeeded")
		}
	}
}

// Typed views reinterpret in place when aligned (on little-endian hosts),
// and copy, say so and decode correctly when not.
func TestTypedViews(t *testing.T) {
	data := alignedBytes(4096)
	for i := range data {
		data[i] = byte(i*37 + 11)
	}
	t.Run("bytes", func(t *testing.T) { testTypes(t, mmapfile.NewBytes(data), 0, true) })
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f, _, _ := openFile(t, data, m.opts...)
			testTypes(t, f, 128, f.ZeroCopy())
			testTypes(t, f, 4000-128, f.ZeroCopy())
		})
	}
}

func TestBoolView(t *testing.T) {
	data := alignedBytes(256)
	for i := range data {
		data[i] = byte(i % 2)
	}
	data[200] = 2
	f := mmapfile.NewBytes(data)
	s, _ := New(f, 3, 190)
	v, copied, err := s.Bool()
	if err != nil || copied || len(v) != 190 {
		t.Fatalf("Bool = %d, %v, %v", len(v), copied, err)
	}
	for i, b := range v {
		if b != ((i+3)%2 == 1) {
			t.Fatalf("Bool[%d] = %v", i, b)
		}
	}
	if w, _, err := As[myBool](s); err != nil || len(w) != 190 {
		t.Fatalf("As[myBool] = %d, %v", len(w), err)
	}
	bad, _ := New(f, 100, 101) // contains data[200] == 2
	if _, _, err := bad.Bool(); err == nil {
		t.Fatal("Bool accepted a byte 2")
	}
	if _, _, err := As[myBool](bad); err == nil {
		t.Fatal("As[myBool] accepted a byte 2")
	}
	if _, _, err := bad.Uint8(); err != nil {
		t.Fatalf("Uint8 of the same bytes: %v", err)
	}
}

func TestSwapBytes(t *testing.T) {
	b := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	swapBytes(b, 4)
	if string(b) != string([]byte{4, 3, 2, 1, 8, 7, 6, 5}) {
		t.Fatalf("swapBytes(4) = %v", b)
	}
	swapBytes(b, 8)
	if string(b) != string([]byte{5, 6, 7, 8, 1, 2, 3, 4}) {
		t.Fatalf("swapBytes(8) = %v", b)
	}
}
