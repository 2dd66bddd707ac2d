package formats_test

import (
	"os"
	"regexp"
	"slices"
	"testing"

	_ "github.com/edgeload/edgeload/formats"
	"github.com/edgeload/edgeload/loader/format"
)

// TestBuiltIn: importing formats registers the built-in formats, each with
// the phrases the command's help shows, and the README's table lists
// exactly them.
func TestBuiltIn(t *testing.T) {
	var names []string
	for _, r := range format.Registered() {
		names = append(names, r.Name)
		if r.Files == "" || r.Order == "" {
			t.Errorf("%s: Files %q, Order %q; the help needs both", r.Name, r.Files, r.Order)
		}
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var table []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9]+)` \\|").FindAllSubmatch(readme, -1) {
		table = append(table, string(m[1]))
	}
	slices.Sort(table)
	if !slices.Equal(names, table) {
		t.Errorf("registered formats %v; the README's table lists %v", names, table)
	}
}
