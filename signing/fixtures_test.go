package signing

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/omscases"
)

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

// caseTrust reads the case's key or CA.
func caseTrust(t *testing.T, c omscases.Case) *Trust {
	tr := &Trust{}
	if c.Key != "" {
		b, err := os.ReadFile(c.Key)
		if err != nil {
			t.Fatal(err)
		}
		if tr.PublicKey, err = ParsePublicKey(b); err != nil {
			t.Fatal(err)
		}
	}
	if c.CA != "" {
		b, err := os.ReadFile(c.CA)
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
	cases := omscases.Cases(t)
	shardRange := regexp.MustCompile(`shard \.:(\d+):(\d+)`)
	for _, c := range cases {
		t.Run(c.ID, func(t *testing.T) {
			b, err := ReadBundle(c.Signature)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Verify(context.Background(), b, caseTrust(t, c), c.Model, &Options{IgnoreUnsigned: c.IgnoreUnsigned})
			want := wantSentinel(t, c.Expected)
			if want == nil {
				if err != nil {
					t.Fatalf("%s: %v, want success (%s)", c.Command, err, c.Expected)
				}
				if res.Files == 0 || res.Bytes == 0 {
					t.Errorf("verified %d files, %d bytes", res.Files, res.Bytes)
				}
				return
			}
			if !errors.Is(err, want) {
				t.Fatalf("%s: error %v, want %v (%s)", c.Command, err, want, c.Expected)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not an *Error", err)
			}
			if m := shardRange.FindStringSubmatch(c.Expected); m != nil {
				if !e.Shard || itoa(e.Start) != m[1] || itoa(e.End) != m[2] {
					t.Errorf("error names shard %v [%d, %d), want [%s, %s): %v", e.Shard, e.Start, e.End, m[1], m[2], err)
				}
			}
			t.Logf("%s: %v", c.ID, err)
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
