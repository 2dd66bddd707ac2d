package signing

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
)

// omsCase is one row of the verdict table of ../shared/models/oms/README.md.
type omsCase struct {
	id, command, expected string
	method                string // key or certificate
	model, sig, key, ca   string
	ignoreUnsigned        bool
}

// omsCases parses the README's verdict table: its command column says what
// to verify with what, its expected column what a conforming verifier says.
func omsCases(t *testing.T) (dir string, cases []omsCase) {
	t.Helper()
	dir = filepath.Join(testmodels.Dir(t), "oms")
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| (V\\d\\d) \\| [^|]* \\| `([^`]*)` \\| [^|]* \\| ([^|]*) \\|")
	for _, line := range strings.Split(string(readme), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		c := omsCase{id: m[1], command: m[2], expected: strings.TrimSpace(m[3])}
		args := strings.Fields(strings.ReplaceAll(c.command, " K", " --public_key keys/ec-p256.pub.pem"))
		if len(args) < 4 || args[0] != "model_signing" || args[1] != "verify" {
			t.Fatalf("%s: command %q is not model_signing verify", c.id, c.command)
		}
		c.method = args[2]
		for i := 3; i < len(args); i++ {
			switch args[i] {
			case "--signature":
				i++
				c.sig = args[i]
			case "--public_key":
				i++
				c.key = args[i]
			case "--certificate_chain":
				i++
				c.ca = args[i]
			case "--ignore_unsigned_files":
				c.ignoreUnsigned = true
			default:
				c.model = args[i]
			}
		}
		cases = append(cases, c)
	}
	if len(cases) != 22 {
		t.Fatalf("found %d cases in the README's verdict table, want 22", len(cases))
	}
	return dir, cases
}

// wantSentinel maps the README's expected verdict to the error it means.
func wantSentinel(t *testing.T, expected string) error {
	switch {
	case strings.HasPrefix(expected, "pass"):
		return nil
	case strings.HasPrefix(expected, "fail: digest"):
		return ErrDigest
	case strings.HasPrefix(expected, "fail: signature"):
		return ErrSignature
	case strings.HasPrefix(expected, "fail: key hint"), strings.HasPrefix(expected, "fail: chain"), strings.HasPrefix(expected, "fail per spec §8.2"):
		return ErrUntrusted
	case strings.HasPrefix(expected, "fail: unsigned file"):
		return ErrUnsigned
	case strings.HasPrefix(expected, "fail: missing file"):
		return ErrMissing
	case strings.HasPrefix(expected, "fail (wrong method)"):
		return ErrNoTrust
	}
	t.Fatalf("unknown verdict %q", expected)
	return nil
}

// trustFor reads the case's key or CA.
func (c omsCase) trust(t *testing.T, dir string) *Trust {
	tr := &Trust{}
	if c.key != "" {
		b, err := os.ReadFile(filepath.Join(dir, c.key))
		if err != nil {
			t.Fatal(err)
		}
		if tr.PublicKey, err = ParsePublicKey(b); err != nil {
			t.Fatal(err)
		}
	}
	if c.ca != "" {
		b, err := os.ReadFile(filepath.Join(dir, c.ca))
		if err != nil {
			t.Fatal(err)
		}
		if tr.Roots, err = ParseCertificates(b); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// TestFixtures verifies each of the 22 cases and compares the verdict with
// the one the README's table says a conforming verifier gives.
func TestFixtures(t *testing.T) {
	dir, cases := omsCases(t)
	shardRange := regexp.MustCompile(`shard \.:(\d+):(\d+)`)
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			b, err := ReadBundle(filepath.Join(dir, c.sig))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Verify(context.Background(), b, c.trust(t, dir), filepath.Join(dir, c.model), &Options{IgnoreUnsigned: c.ignoreUnsigned})
			want := wantSentinel(t, c.expected)
			if want == nil {
				if err != nil {
					t.Fatalf("%s: %v, want success (%s)", c.command, err, c.expected)
				}
				if res.Files == 0 || res.Bytes == 0 {
					t.Errorf("verified %d files, %d bytes", res.Files, res.Bytes)
				}
				return
			}
			if !errors.Is(err, want) {
				t.Fatalf("%s: error %v, want %v (%s)", c.command, err, want, c.expected)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not an *Error", err)
			}
			if m := shardRange.FindStringSubmatch(c.expected); m != nil {
				if !e.Shard || itoa(e.Start) != m[1] || itoa(e.End) != m[2] {
					t.Errorf("error names shard %v [%d, %d), want [%s, %s): %v", e.Shard, e.Start, e.End, m[1], m[2], err)
				}
			}
			t.Logf("%s: %v", c.id, err)
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
