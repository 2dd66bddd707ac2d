package signing

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
)

// bundleSeeds returns the bundles of ../shared/models/oms (none when the
// folder is absent, except under CI=true, where that fails) and of
// testdata/oms.
func bundleSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		testmodels.Dir(tb)
	}
	shared := filepath.Join(testmodels.Root(), "..", "shared", "models", "oms")
	var paths []string
	for _, pat := range []string{
		filepath.Join(shared, "*", "*.sig"),
		filepath.Join(shared, "test-vectors", "v1.0", "*", "*.json"),
		filepath.Join("testdata", "oms", "*.sig"),
	} {
		m, _ := filepath.Glob(pat)
		sort.Strings(m)
		paths = append(paths, m...)
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// checkError fails unless err is an *Error wrapping one of the sentinels.
func checkError(t *testing.T, err error) {
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not an *Error", err, err)
	}
	for _, s := range []error{ErrMalformed, ErrUnsupported, ErrSignature, ErrUntrusted, ErrNoTrust, ErrDigest, ErrMissing, ErrUnsigned} {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error %v wraps no sentinel", err)
}

// FuzzParseBundle parses arbitrary bytes as a bundle: it gives a bundle or
// an *Error, never a panic; a bundle's statement parses or fails the same
// way, and verifying it against a key and Sigstore's public-good root does
// too.
func FuzzParseBundle(f *testing.F) {
	for _, b := range bundleSeeds(f) {
		f.Add(b)
	}
	pemKey, err := os.ReadFile(filepath.Join("testdata", "oms", "keys", "ec-p256.pub.pem"))
	if err != nil {
		f.Fatal(err)
	}
	key, err := ParsePublicKey(pemKey)
	if err != nil {
		f.Fatal(err)
	}
	root, err := os.ReadFile(filepath.Join("testdata", "sigstore", "public-good.trusted_root.json"))
	if err != nil {
		f.Fatal(err)
	}
	tr, err := ParseTrustedRoot(root)
	if err != nil {
		f.Fatal(err)
	}
	trust := &Trust{PublicKey: key, TrustedRoot: tr, Identity: vectorIdentity, Issuer: vectorIssuer}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBundle(data)
		if err != nil {
			checkError(t, err)
			return
		}
		if len(b.Signatures) == 0 || b.Method == 0 || (b.Method == MethodSigstore) != (b.tlog != nil) {
			t.Fatalf("a parsed bundle without its parts: %+v", b)
		}
		if m, err := b.Statement(); err != nil {
			checkError(t, err)
		} else if len(m.Resources) == 0 || len(m.Paths()) == 0 {
			t.Fatal("a statement without resources")
		}
		if _, err := b.Verify(trust); err != nil {
			checkError(t, err)
		}
	})
}

// FuzzParseStatement parses arbitrary bytes as a statement (a bundle's
// decoded payload): a manifest whose shards tile every file, or an *Error.
func FuzzParseStatement(f *testing.F) {
	for _, data := range bundleSeeds(f) {
		if b, err := ParseBundle(data); err == nil {
			f.Add(b.Payload)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseStatement(data)
		if err != nil {
			checkError(t, err)
			return
		}
		for _, p := range m.Paths() {
			size := int64(1)
			if m.Serialization.Method == SerializeShards {
				rs := m.files[p].ranges
				size = rs[len(rs)-1].End
			}
			c, err := m.NewCheck(p, size)
			if err != nil || len(c.Ranges) == 0 || c.Ranges[len(c.Ranges)-1].End != size {
				t.Fatalf("%s: %v %+v", p, err, c)
			}
		}
	})
}
