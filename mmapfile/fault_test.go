package mmapfile

import (
	"errors"
	"os"
	"testing"

	"github.com/edgeload/edgeload/platform"
)

// Truncating the file under the mapping must turn reads past the new end
// into ErrTruncated, not SIGBUS.
func TestReadAtTruncated(t *testing.T) {
	if !platform.ZeroCopy {
		t.Skip("no mappings on this platform")
	}
	ps := platform.PageSize()
	for _, mode := range []Mode{ModeWhole, ModeWindowed, ModeCopy} {
		t.Run(mode.String(), func(t *testing.T) {
			path, _ := writeFile(t, pattern(8*ps))
			f, err := Open(path, WithMode(mode))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			v, err := f.View(int64(6*ps), int64(ps))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, int64(ps)); err != nil {
				t.Fatal(err)
			}
			p := make([]byte, 100)
			if n, err := f.ReadAt(p, 10); n != 100 || err != nil {
				t.Fatalf("ReadAt inside the remaining page = %d, %v", n, err)
			}
			_, err = f.ReadAt(p, int64(6*ps))
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("ReadAt past the new end = %v, want ErrTruncated", err)
			}
			t.Log(err)
			if mode != ModeCopy {
				var b byte
				err = f.Guard(func() { b = v[10] })
				_ = b
				if !errors.Is(err, ErrTruncated) {
					t.Fatalf("f.Guard(read of a view past the new end) = %v, want ErrTruncated", err)
				}
			}
		})
	}
}

func TestGuard(t *testing.T) {
	if err := Guard(func() {}); err != nil {
		t.Fatalf("Guard(no-op) = %v", err)
	}
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want the original panic", r)
		}
	}()
	_ = Guard(func() { panic("boom") })
	t.Fatal("Guard swallowed a non-fault panic")
}

// File.Guard turns an address-less fault into ErrTruncated only when the
// file really shrank; otherwise the panic propagates.
func TestFileGuardAddressless(t *testing.T) {
	path, _ := writeFile(t, pattern(3*platform.PageSize()))
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var nilp *int
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("a nil dereference in an unshrunk file's Guard did not panic")
			}
		}()
		_ = f.Guard(func() { _ = *nilp })
	}()
	if err := os.Truncate(path, 10); err != nil {
		t.Fatal(err)
	}
	err = f.Guard(func() { _ = *nilp })
	var fe *FaultError
	if !errors.As(err, &fe) || fe.Addr != 0 || !errors.Is(err, ErrTruncated) {
		t.Fatalf("Guard after truncation = %v, want an address-less FaultError", err)
	}
	if fe.Offset([]byte{1}) != -1 {
		t.Fatal("Offset of an address-less fault")
	}
}
