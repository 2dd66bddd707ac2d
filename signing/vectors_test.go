package signing

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
)

// vectorsDir is the spec's test vectors, copied to ../shared/models/oms.
func vectorsDir(t *testing.T) string {
	return filepath.Join(testmodels.Dir(t), "oms", "test-vectors", "v1.0")
}

// TestVectorsValid reads the spec's valid vectors at the schema level
// (they come with no key or CA), and checks what can be checked without
// them: the statement against the model its digests describe, and the
// certificate vector's signature against its own leaf.
func TestVectorsValid(t *testing.T) {
	for _, c := range []struct {
		file   string
		method Method
		model  map[string]string // the files the digests are of
	}{
		{"key.bundle.json", MethodKey, map[string]string{"signme-1": "signme-1\n", "signme-2": "signme-2", "ignore-me": "x"}},
		{"certificate.bundle.json", MethodCertificate, map[string]string{"signme-1": "signme-1\n", "signme-2": "signme-2"}},
		{"sigstore.bundle.json", MethodSigstore, map[string]string{"signme-1": "signme-1", "signme-2": "signme-2"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			b, err := ReadBundle(filepath.Join(vectorsDir(t), "valid", c.file))
			if err != nil {
				t.Fatal(err)
			}
			if b.Method != c.method {
				t.Errorf("method %v, want %v", b.Method, c.method)
			}
			m, err := b.Statement()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(m.Paths(), " "); got != "signme-1 signme-2" {
				t.Errorf("signed files %q", got)
			}
			dir := t.TempDir()
			for n, s := range c.model {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			md, err := m.Model(dir)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.VerifyModel(context.Background(), md, nil); err != nil {
				t.Fatal(err)
			}
			switch b.Method {
			case MethodCertificate:
				if len(b.Certificates) != 2 {
					t.Errorf("%d certificates, want 2", len(b.Certificates))
				}
				if err := b.verifyEnvelope(b.Certificates[0].PublicKey); err != nil {
					t.Errorf("signature with the leaf's own key: %v", err)
				}
			case MethodKey:
				if len(b.KeyHint) != 64 {
					t.Errorf("key hint %q", b.KeyHint)
				}
			}
		})
	}
}

// TestVectorsInvalid checks that the spec's invalid vectors are refused:
// those of invalid/ as bundles, that of invalid-payload/ as a statement.
func TestVectorsInvalid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(vectorsDir(t), "invalid", "*.json"))
	if err != nil || len(files) != 4 {
		t.Fatalf("invalid vectors: %v %v", files, err)
	}
	for _, f := range files {
		_, err := ReadBundle(f)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", filepath.Base(f), err)
		}
		t.Logf("%s: %v", filepath.Base(f), err)
	}
	b, err := ReadBundle(filepath.Join(vectorsDir(t), "invalid-payload", "wrong-predicate.bundle.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Statement(); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "predicateType") {
		t.Errorf("wrong predicate: %v, want ErrMalformed naming predicateType", err)
	}
}
