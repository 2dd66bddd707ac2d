package signing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
)

// The identity the spec's Sigstore test vector was signed with (its
// certificate's SAN and OIDC issuer; model-transparency's
// scripts/tests/test-verify-v1.1.0-sigstore.sh verifies it with these).
const (
	vectorIdentity = "stefanb@us.ibm.com"
	vectorIssuer   = "https://sigstore.verify.ibm.com/oauth2"
)

// publicGood reads Sigstore's public-good trusted root (testdata/sigstore).
func publicGood(t *testing.T) *TrustedRoot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sigstore", "public-good.trusted_root.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := ParseTrustedRoot(b)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// vectorModel writes the model the spec's Sigstore vector signs: its two
// files' digests are those of the texts "signme-1" and "signme-2".
func vectorModel(t *testing.T) string {
	dir := t.TempDir()
	for _, n := range []string{"signme-1", "signme-2"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestSigstoreVector(t *testing.T) {
	path := filepath.Join(testmodels.Dir(t), "oms", "test-vectors", "v1.0", "valid", "sigstore.bundle.json")
	b, err := ReadBundle(path)
	if err != nil {
		t.Fatal(err)
	}
	trust := &Trust{TrustedRoot: publicGood(t), Identity: vectorIdentity, Issuer: vectorIssuer}
	dir := vectorModel(t)
	res, err := Verify(context.Background(), b, trust, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 2 {
		t.Errorf("verified %d files, want 2", res.Files)
	}
	if err := os.WriteFile(filepath.Join(dir, "signme-2"), []byte("signme-3"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(context.Background(), b, trust, dir, nil); !errors.Is(err, ErrDigest) {
		t.Errorf("a changed file: %v, want ErrDigest", err)
	}
}

// mutate decodes the bundle JSON raw, lets f change it, and parses the result.
func mutate(t *testing.T, raw []byte, f func(b map[string]any)) *Bundle {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseBundle(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// flip64 flips one bit of the byte at i of a base64 string's decoded bytes.
func flip64(s string, i int) string {
	b, _ := base64.StdEncoding.DecodeString(s)
	b[i%len(b)] ^= 1
	return base64.StdEncoding.EncodeToString(b)
}

// TestSigstoreTampered changes one thing in the vector at a time; each
// must be refused, for the reason the test names.
func TestSigstoreTampered(t *testing.T) {
	path := filepath.Join(testmodels.Dir(t), "oms", "test-vectors", "v1.0", "valid", "sigstore.bundle.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := publicGood(t)
	entry := func(b map[string]any) map[string]any {
		return b["verificationMaterial"].(map[string]any)["tlogEntries"].([]any)[0].(map[string]any)
	}
	proof := func(b map[string]any) map[string]any { return entry(b)["inclusionProof"].(map[string]any) }
	cases := []struct {
		name   string
		change func(b map[string]any)
		trust  *Trust
		want   error
		says   string
	}{
		{"SET", func(b map[string]any) {
			p := entry(b)["inclusionPromise"].(map[string]any)
			p["signedEntryTimestamp"] = flip64(p["signedEntryTimestamp"].(string), 40)
		}, nil, ErrUntrusted, "signed entry timestamp"},
		{"integrated time", func(b map[string]any) { entry(b)["integratedTime"] = "1760062341" }, nil, ErrUntrusted, "signed entry timestamp"},
		{"log index", func(b map[string]any) { entry(b)["logIndex"] = "598151087" }, nil, ErrUntrusted, "signed entry timestamp"},
		{"proof hash", func(b map[string]any) {
			h := proof(b)["hashes"].([]any)
			h[1] = flip64(h[1].(string), 3)
		}, nil, ErrUntrusted, "inclusion proof"},
		{"proof index", func(b map[string]any) { proof(b)["logIndex"] = "476246823" }, nil, ErrUntrusted, "inclusion proof"},
		{"proof root", func(b map[string]any) { proof(b)["rootHash"] = flip64(proof(b)["rootHash"].(string), 0) }, nil, ErrUntrusted, "inclusion proof"},
		{"checkpoint", func(b map[string]any) {
			cp := proof(b)["checkpoint"].(map[string]any)
			cp["envelope"] = strings.Replace(cp["envelope"].(string), "476246825\n", "476246826\n", 1)
		}, nil, ErrUntrusted, "checkpoint"},
		{"payload", func(b map[string]any) {
			env := b["dsseEnvelope"].(map[string]any)
			p, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
			env["payload"] = base64.StdEncoding.EncodeToString(bytes.Replace(p, []byte("signme-2"), []byte("signme-3"), 1))
		}, nil, ErrSignature, "DSSE"},
		{"identity", nil, &Trust{TrustedRoot: tr, Identity: "someone@example.com", Issuer: vectorIssuer}, ErrUntrusted, "identity"},
		{"issuer", nil, &Trust{TrustedRoot: tr, Identity: vectorIdentity, Issuer: "https://accounts.google.com"}, ErrUntrusted, "OIDC issuer"},
		{"no trusted root", nil, &Trust{Identity: vectorIdentity, Issuer: vectorIssuer}, ErrNoTrust, "trusted root"},
		{"no identity", nil, &Trust{TrustedRoot: tr}, ErrNoTrust, "identity"},
		{"Rekor v2 entry", func(b map[string]any) { delete(entry(b), "inclusionPromise") }, nil, ErrUnsupported, "RFC 3161"},
		{"kind", func(b map[string]any) { entry(b)["kindVersion"] = map[string]any{"kind": "intoto", "version": "0.0.2"} }, nil, ErrUnsupported, "dsse 0.0.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := mutate(t, raw, func(m map[string]any) {
				if c.change != nil {
					c.change(m)
				}
			})
			trust := c.trust
			if trust == nil {
				trust = &Trust{TrustedRoot: tr, Identity: vectorIdentity, Issuer: vectorIssuer}
			}
			_, err := b.Verify(trust)
			if !errors.Is(err, c.want) || err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error %v, want %v saying %q", err, c.want, c.says)
			}
			t.Log(err)
		})
	}
}

// TestSigstoreTrustedRoot changes the trusted root: each step must find
// the key or certificate it needs there, valid at the signing time.
func TestSigstoreTrustedRoot(t *testing.T) {
	dir := filepath.Join(testmodels.Dir(t), "oms")
	b, err := ReadBundle(filepath.Join(dir, "test-vectors", "v1.0", "valid", "sigstore.bundle.json"))
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(filepath.Join(dir, "keys", "ca.cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	otherCA, err := ParseCertificates(pem)
	if err != nil {
		t.Fatal(err)
	}
	when := time.Unix(b.tlog.integratedTime, 0)
	cases := []struct {
		name   string
		change func(tr *TrustedRoot)
		says   string
	}{
		{"another CA", func(tr *TrustedRoot) { tr.fulcio = []authority{{certs: otherCA}} }, "Fulcio root"},
		{"CA retired before", func(tr *TrustedRoot) {
			for i := range tr.fulcio {
				tr.fulcio[i].end = when.Add(-time.Second)
			}
		}, "Fulcio root"},
		{"Rekor key from after", func(tr *TrustedRoot) {
			for i := range tr.rekor {
				tr.rekor[i].start = when.Add(time.Second)
			}
		}, "not a Rekor log"},
		{"another Rekor key", func(tr *TrustedRoot) {
			for i := range tr.rekor {
				tr.rekor[i].key = otherCA[0].PublicKey
			}
		}, "signed entry timestamp"},
		{"another CT key", func(tr *TrustedRoot) {
			for i := range tr.ct {
				tr.ct[i].key = otherCA[0].PublicKey
			}
		}, "SCT"},
		{"no CT log", func(tr *TrustedRoot) { tr.ct = nil }, "SCT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := publicGood(t)
			c.change(tr)
			_, err := b.Verify(&Trust{TrustedRoot: tr, Identity: vectorIdentity, Issuer: vectorIssuer})
			if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error %v, want ErrUntrusted saying %q", err, c.says)
			}
			t.Log(err)
		})
	}
}

// TestSigstoreSCTIssuer checks that the SCT binds the issuer: the same
// certificate presented under another issuer's key does not verify.
func TestSigstoreSCTIssuer(t *testing.T) {
	b, err := ReadBundle(filepath.Join(testmodels.Dir(t), "oms", "test-vectors", "v1.0", "valid", "sigstore.bundle.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr := publicGood(t)
	chain, err := tr.verifyChain(b.Certificates[0], time.Unix(b.tlog.integratedTime, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.verifySCT(b.Certificates[0], chain); err != nil {
		t.Fatal(err)
	}
	wrong := []*x509.Certificate{chain[0], chain[len(chain)-1]} // the root as the issuer
	if err := tr.verifySCT(b.Certificates[0], wrong); err == nil {
		t.Fatal("an SCT verified under the wrong issuer")
	}
}

// TestSigstoreEntryBody checks that the log entry must record this
// envelope: its payload hash and its signature with this certificate.
func TestSigstoreEntryBody(t *testing.T) {
	b, err := ReadBundle(filepath.Join(testmodels.Dir(t), "oms", "test-vectors", "v1.0", "valid", "sigstore.bundle.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.checkEntryBody(); err != nil {
		t.Fatal(err)
	}
	body := b.tlog.body
	for _, c := range []struct{ name, old, new string }{
		{"payload hash", `"value":"1dc6`, `"value":"1dc7`},
		{"signature", `"signature":"MEUCIBjO`, `"signature":"MEUCIBjP`},
		{"kind", `"kind":"dsse"`, `"kind":"intoto"`},
	} {
		if !bytes.Contains(body, []byte(c.old)) {
			t.Fatalf("%s: %q not in the entry body", c.name, c.old)
		}
		b.tlog.body = bytes.Replace(body, []byte(c.old), []byte(c.new), 1)
		if err := b.checkEntryBody(); !errors.Is(err, ErrUntrusted) && !errors.Is(err, ErrMalformed) {
			t.Errorf("%s changed: %v, want a refusal", c.name, err)
		}
	}
	b.tlog.body = body
	other := *b.Certificates[0]
	other.Raw = append([]byte(nil), other.Raw...)
	other.Raw[len(other.Raw)-1] ^= 1
	b.Certificates[0] = &other
	if err := b.checkEntryBody(); !errors.Is(err, ErrUntrusted) {
		t.Errorf("another certificate: %v, want ErrUntrusted", err)
	}
}

// rfc6962 is RFC 6962's definition of a Merkle tree over leaves: its root
// (MTH) and the audit path of leaf m (PATH), written from the RFC's text.
func rfc6962(leaves [][]byte) (root func(d [][]byte) []byte, path func(m int, d [][]byte) [][]byte) {
	hash := func(b ...[]byte) []byte {
		h := sha256.New()
		for _, x := range b {
			h.Write(x)
		}
		return h.Sum(nil)
	}
	split := func(n int) int { // the largest power of two smaller than n
		k := 1
		for k*2 < n {
			k *= 2
		}
		return k
	}
	var mth func(d [][]byte) []byte
	mth = func(d [][]byte) []byte {
		if len(d) == 1 {
			return hash([]byte{0}, d[0])
		}
		k := split(len(d))
		return hash([]byte{1}, mth(d[:k]), mth(d[k:]))
	}
	var p func(m int, d [][]byte) [][]byte
	p = func(m int, d [][]byte) [][]byte {
		if len(d) == 1 {
			return nil
		}
		k := split(len(d))
		if m < k {
			return append(p(m, d[:k]), mth(d[k:]))
		}
		return append(p(m-k, d[k:]), mth(d[:k]))
	}
	return mth, p
}

// TestInclusionRoot checks inclusionRoot against RFC 6962's definition for
// every leaf of trees of 1 to 40 leaves, and that a wrong path fails.
func TestInclusionRoot(t *testing.T) {
	for n := 1; n <= 40; n++ {
		var leaves [][]byte
		for i := range n {
			leaves = append(leaves, []byte(fmt.Sprintf("leaf %d", i)))
		}
		mth, path := rfc6962(leaves)
		want := mth(leaves)
		for m := range n {
			p := path(m, leaves)
			lh := sha256.Sum256(append([]byte{0}, leaves[m]...))
			got, err := inclusionRoot(uint64(m), uint64(n), lh[:], p)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("tree of %d, leaf %d: %x %v, want %x", n, m, got, err, want)
			}
			if m+1 < n {
				if got, err := inclusionRoot(uint64(m+1), uint64(n), lh[:], p); err == nil && bytes.Equal(got, want) {
					t.Fatalf("tree of %d: leaf %d's path proves it at %d", n, m, m+1)
				}
			}
		}
	}
}

// TestSigstoreCheckpoint checks that the signed checkpoint must carry the
// proof's tree size and root hash.
func TestSigstoreCheckpoint(t *testing.T) {
	b, err := ReadBundle(filepath.Join(testmodels.Dir(t), "oms", "test-vectors", "v1.0", "valid", "sigstore.bundle.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr := publicGood(t)
	k, ok := findLog(tr.rekor, b.tlog.logID, time.Unix(b.tlog.integratedTime, 0))
	if !ok {
		t.Fatal("no Rekor key")
	}
	e := *b.tlog
	if err := e.verifyCheckpoint(k); err != nil {
		t.Fatal(err)
	}
	e.treeSize++
	if err := e.verifyCheckpoint(k); !errors.Is(err, ErrUntrusted) {
		t.Errorf("another tree size: %v", err)
	}
	e = *b.tlog
	e.rootHash = append([]byte{e.rootHash[0] ^ 1}, e.rootHash[1:]...)
	if err := e.verifyCheckpoint(k); !errors.Is(err, ErrUntrusted) {
		t.Errorf("another root: %v", err)
	}
}
