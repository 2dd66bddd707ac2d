package segment

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/memstat"
	"github.com/edgeload/edgeload/mmapfile"
)

// Truncating the file after mapping it turns the fault-safe reads into
// ErrTruncated instead of a SIGBUS crash.
func TestTruncated(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f, _, path := openFile(t, pattern(1<<20), m.opts...)
			ps := int64(f.PageSize())
			s, err := New(f, 3*ps+128, 200*ps)
			if err != nil {
				t.Fatal(err)
			}
			head, _ := New(f, 0, 100)
			if _, err := s.Bytes(); err != nil { // map the window before truncating
				t.Fatal(err)
			}
			if err := os.Truncate(path, 2*ps); err != nil {
				t.Fatal(err)
			}
			dst := make([]byte, s.Len())
			n, err := s.CopyTo(dst)
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("CopyTo = %d, %v; want ErrTruncated", n, err)
			}
			t.Logf("CopyTo: %v", err)
			if err := s.Checksum(sha256.New()); !errors.Is(err, ErrTruncated) {
				t.Fatalf("Checksum = %v, want ErrTruncated", err)
			}
			if _, err := s.SHA256(); !errors.Is(err, ErrTruncated) {
				t.Fatalf("SHA256 = %v, want ErrTruncated", err)
			}
			if f.Mode() == mmapfile.ModeCopy {
				return // views are copies read with pread; nothing more can fault
			}
			if err := s.Touch(); !errors.Is(err, ErrTruncated) {
				t.Fatalf("Touch = %v, want ErrTruncated", err)
			}
			if _, _, err := s.Bool(); !errors.Is(err, ErrTruncated) {
				t.Fatalf("Bool = %v, want ErrTruncated", err)
			}
			odd, _ := s.Sub(1, 4*1000)
			if _, _, err := odd.Float32(); !errors.Is(err, ErrTruncated) {
				t.Fatalf("Float32 (copying) = %v, want ErrTruncated", err)
			}
			// The part that is still in the file reads fine.
			if sum, err := head.SHA256(); err != nil || sum != sha256.Sum256(pattern(100)) {
				t.Fatalf("SHA256 of the remaining head: %v", err)
			}
		})
	}
}

// The error names the file offset of a byte that faulted: one in the pages
// past the new end of the file (which one depends on the copy routine).
// File.ReadAt does not fault: it reads what is left.
func TestTruncatedOffset(t *testing.T) {
	f, _, path := openFile(t, pattern(1<<20), mmapfile.WithMode(mmapfile.ModeWhole))
	if !f.ZeroCopy() {
		t.Skip("no zero-copy mapping on this platform")
	}
	ps := int64(f.PageSize())
	s, _ := New(f, 128, 10*ps)
	if err := os.Truncate(path, 3*ps+5); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		var fe *mmapfile.FaultError
		if !errors.As(err, &fe) || !errors.Is(err, ErrTruncated) {
			t.Fatalf("%s = %v, want a *mmapfile.FaultError wrapping ErrTruncated", what, err)
		}
		if fe.Addr == 0 {
			// qemu-user delivers SIGBUS without si_addr; File.Guard then
			// recognises the fault by the file's new size.
			if e := memstat.Emulator(); e != "" {
				t.Logf("%s: fault address not reported under %s: %v", what, e, err)
				return
			}
			t.Fatalf("%s: fault without an address: %v", what, err)
		}
		var at int64
		i := strings.Index(err.Error(), "at file offset ")
		if i < 0 {
			t.Fatalf("%s error %q names no offset", what, err)
		}
		if _, err := fmt.Sscanf(err.Error()[i:], "at file offset %d:", &at); err != nil {
			t.Fatal(err)
		}
		if at < 4*ps || at >= s.Offset()+s.Len() {
			t.Fatalf("%s faulted at file offset %d, want in [%d, %d)", what, at, 4*ps, s.Offset()+s.Len())
		}
	}
	check("Touch", s.Touch())
	// CopyTo and ReadAt read through the descriptor (pread): no fault, a
	// short read.
	if n, err := s.CopyTo(make([]byte, s.Len())); !errors.Is(err, ErrTruncated) || n >= int(s.Len()) {
		t.Fatalf("CopyTo = %d, %v; want a short read and ErrTruncated", n, err)
	}
	n, err := f.ReadAt(make([]byte, 2*ps), 3*ps)
	var fe *mmapfile.FaultError
	if n != 5 || !errors.Is(err, ErrTruncated) || errors.As(err, &fe) {
		t.Fatalf("ReadAt = %d, %v; want the 5 bytes left and an ErrTruncated that is no fault", n, err)
	}
}
