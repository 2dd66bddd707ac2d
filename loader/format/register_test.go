package format

import (
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/mmapfile"
)

func TestRegister(t *testing.T) {
	open := func(*mmapfile.File, *Config) (Model, error) { return nil, nil }
	sniff := func([]byte) bool { return false }
	for _, name := range []string{"zz-test", "aa-test", "mm-test"} {
		Register(Registration{Name: name, Magic: name, Sniff: sniff, Open: open})
	}
	Register(Registration{Name: "fallback-test", Fallback: true, Open: open})
	var names []string
	for _, r := range Registered() {
		if strings.HasSuffix(r.Name, "-test") {
			names = append(names, r.Name)
		}
	}
	if want := []string{"aa-test", "fallback-test", "mm-test", "zz-test"}; !slices.Equal(names, want) {
		t.Errorf("Registered() names %v, want %v (Name order)", names, want)
	}
	for _, c := range []struct {
		what string
		r    Registration
		msg  string
	}{
		{"a second mm-test", Registration{Name: "mm-test", Magic: "x", Sniff: sniff, Open: open}, "twice for format mm-test"},
		{"no name", Registration{Magic: "x", Sniff: sniff, Open: open}, "needs a Name"},
		{"no open", Registration{Name: "x-test", Magic: "x", Sniff: sniff}, "needs a Name"},
		{"no sniff, no fallback", Registration{Name: "x-test", Open: open}, "needs a Name"},
		{"a sniff without magic", Registration{Name: "x-test", Sniff: sniff, Open: open}, "needs a Name"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), c.msg) {
					t.Errorf("Register(%s): panic %v, want one saying %q", c.what, r, c.msg)
				}
			}()
			Register(c.r)
		}()
	}
	if n := len(Registered()); n != 4 {
		t.Errorf("%d formats registered after the refused ones, want 4", n)
	}
}
