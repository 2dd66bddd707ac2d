// Package omscases gives tests the 22 verdicts of
// ../shared/models/oms/README.md: each case's model_signing command (what
// is verified with what) and the verdict the OMS v1.0 spec requires.
package omscases

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
)

// Case is one row of the README's verdict table; paths are absolute.
type Case struct {
	ID       string // "V01"
	Command  string // the model_signing command, as the README gives it
	Expected string // the verdict column: "pass", "fail: digest", ...
	Method   string // "key" or "certificate"

	Model, Signature, Key, CA string
	IgnoreUnsigned            bool
}

// Pass reports whether the spec requires the case to verify.
func (c Case) Pass() bool { return strings.HasPrefix(c.Expected, "pass") }

// Dir returns ../shared/models/oms (skipping the test without it).
func Dir(tb testing.TB) string {
	return filepath.Join(testmodels.Dir(tb), "oms")
}

// Cases parses the README's verdict table.
func Cases(tb testing.TB) []Case {
	tb.Helper()
	dir := Dir(tb)
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		tb.Fatal(err)
	}
	row := regexp.MustCompile("^\\| (V\\d\\d) \\| [^|]* \\| `([^`]*)` \\| [^|]* \\| ([^|]*) \\|")
	var cases []Case
	for _, line := range strings.Split(string(readme), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		c := Case{ID: m[1], Command: m[2], Expected: strings.TrimSpace(m[3])}
		// K stands for --public_key keys/ec-p256.pub.pem.
		args := strings.Fields(strings.ReplaceAll(c.Command, " K", " --public_key keys/ec-p256.pub.pem"))
		if len(args) < 4 || args[0] != "model_signing" || args[1] != "verify" {
			tb.Fatalf("%s: command %q is not model_signing verify", c.ID, c.Command)
		}
		c.Method = args[2]
		abs := func(p string) string { return filepath.Join(dir, p) }
		for i := 3; i < len(args); i++ {
			switch args[i] {
			case "--signature":
				i++
				c.Signature = abs(args[i])
			case "--public_key":
				i++
				c.Key = abs(args[i])
			case "--certificate_chain":
				i++
				c.CA = abs(args[i])
			case "--ignore_unsigned_files":
				c.IgnoreUnsigned = true
			default:
				c.Model = abs(args[i])
			}
		}
		cases = append(cases, c)
	}
	if len(cases) != 22 {
		tb.Fatalf("found %d cases in the README's verdict table, want 22", len(cases))
	}
	return cases
}
