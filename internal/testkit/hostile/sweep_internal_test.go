package hostile

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/edgeload/edgeload/loader/format"
)

// collector records what a runner reports.
type collector struct{ errs, fatals []string }

func (c *collector) Errorf(f string, a ...any) { c.errs = append(c.errs, fmt.Sprintf(f, a...)) }
func (c *collector) Fatalf(f string, a ...any) { c.fatals = append(c.fatals, fmt.Sprintf(f, a...)) }

var allocSink []byte

// The runner catches each way a case can go wrong, and only those.
func TestRunnerCatches(t *testing.T) {
	ok := func() error { return nil }
	cases := []struct {
		name  string
		open  func(b []byte) (func() error, error)
		fatal bool   // reported with Fatalf (stops a sweep)
		want  string // in the report; "" for none
	}{
		{"a good error", func([]byte) (func() error, error) {
			return nil, format.Errorf("pte", "Program.version", 0x20, "version 3, want 0")
		}, false, ""},
		{"a model that passes", func([]byte) (func() error, error) { return ok, nil }, false, ""},
		{"panic in Open", func([]byte) (func() error, error) { panic("boom") }, false, "panic: boom"},
		{"panic in the exercise", func([]byte) (func() error, error) {
			return func() error { var s []int; return fmt.Errorf("%d", s[len(s)+1-1]) }, nil
		}, false, "panic"},
		{"an invariant broken", func([]byte) (func() error, error) {
			return func() error { return errors.New("tensor x has no view") }, nil
		}, false, "opened, but: tensor x has no view"},
		{"an error without a sentinel", func([]byte) (func() error, error) { return nil, errors.New("bad") }, false, "wraps no sentinel"},
		{"an error of another format", func([]byte) (func() error, error) {
			return nil, format.Errorf("ptd", "header", 8, "want FH01")
		}, false, `format "ptd", want "pte"`},
		{"an allocation out of proportion", func(b []byte) (func() error, error) {
			allocSink = make([]byte, AllocFactor*len(b)+AllocSlack+1<<20)
			return nil, format.ErrMalformed
		}, false, "allocated"},
		{"a hang", func([]byte) (func() error, error) {
			time.Sleep(300 * time.Millisecond)
			return ok, nil
		}, true, "did not finish"},
	}
	for _, c := range cases {
		var col collector
		r := newRunner(&col, Target{Format: "pte", Open: c.open})
		if c.fatal {
			// Only the hang waits for the timeout: a shorter one for the
			// other cases would fail them on a busy machine and leave their
			// goroutines running into the next case.
			r.timeout = 100 * time.Millisecond
		}
		n := ExactEvery // reach an exactly measured case too
		if c.fatal {
			n = 1
		}
		for i := 0; i < n; i++ {
			r.run(c.name, make([]byte, 1000))
		}
		got := strings.Join(append(col.errs, col.fatals...), "\n")
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: reported %q", c.name, got)
		case c.want != "" && !strings.Contains(got, c.want):
			t.Errorf("%s: reported %q, want %q", c.name, got, c.want)
		case c.fatal != (len(col.fatals) > 0):
			t.Errorf("%s: fatal %v, want %v", c.name, len(col.fatals) > 0, c.fatal)
		}
	}
}

func TestVariants(t *testing.T) {
	var buf [4]byte
	for _, c := range []struct {
		b    byte
		want string
	}{{0x00, "[255 1]"}, {0xff, "[0 254]"}, {0x10, "[0 255 17]"}, {0x01, "[0 255]"}} {
		if got := fmt.Sprint(variants(c.b, &buf)); got != c.want {
			t.Errorf("variants(%#x) = %s, want %s", c.b, got, c.want)
		}
	}
}
