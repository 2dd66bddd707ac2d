package pte_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// TestMethodNames opens programs of 2, 30 and 100 methods (Open checks
// that no name repeats with a table on the stack in the first two, a name
// index in the last) whose names share their length and their first and
// last 8 bytes, so that they differ only inside: each opens, and Method finds
// every method by name; the same with the last name repeating an earlier
// one is refused, naming the plan.
func TestMethodNames(t *testing.T) {
	for _, n := range []int{2, 30, 100} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("prefix__%03d__suffix", i)
		}
		build := func(names []string) []byte {
			w := &writer.PTE{}
			for _, s := range names {
				w.Methods = append(w.Methods, writer.PTEMethod{Name: s})
			}
			return genBytes(t, w)
		}
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			p, err := pte.NewFile(mmapfile.NewBytes(build(names)))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if p.NumMethods() != n {
				t.Fatalf("NumMethods = %d, want %d", p.NumMethods(), n)
			}
			for i, s := range names {
				if m, ok := p.Method(s); !ok || m.Name != s || m.Index != i {
					t.Fatalf("Method(%q) = %v, %v", s, m, ok)
				}
			}
			if _, ok := p.Method("prefix__999__suffix"); ok {
				t.Error("Method found a name the program lacks")
			}
			if a := testing.AllocsPerRun(100, func() { p.Method(names[n/2]) }); a != 0 {
				t.Errorf("Method allocates %.1f times a lookup, want 0", a)
			}
			for _, k := range []int{0, (n - 1) / 2, n - 2} {
				dup := append([]string(nil), names...)
				dup[n-1] = names[k]
				_, err := pte.NewFile(mmapfile.NewBytes(build(dup)))
				var fe *format.FormatError
				if !errors.As(err, &fe) || !strings.HasSuffix(fe.Field, fmt.Sprintf("execution_plan[%d].name", n-1)) || !strings.Contains(fe.Msg, "repeats") {
					t.Errorf("name %d repeating name %d: %v", n-1, k, err)
				}
			}
		})
	}
}
