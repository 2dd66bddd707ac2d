package main

import (
	"archive/zip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/omscases"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
)

// caseArgs turns a README case into the command's arguments.
func caseArgs(c omscases.Case) []string {
	args := []string{"verify", "--signature", c.Signature}
	if c.Key != "" {
		args = append(args, "--key", c.Key)
	}
	if c.CA != "" {
		args = append(args, "--cert-chain", c.CA)
	}
	if c.IgnoreUnsigned {
		args = append(args, "--ignore-unsigned-files")
	}
	return append(args, c.Model)
}

// TestVerifySignature runs verify --signature on the 22 cases of
// ../shared/models/oms: exit 0 and an "ok" line when the spec says the
// model verifies, otherwise exit 1 and one "edgeload:" line naming what
// failed.
func TestVerifySignature(t *testing.T) {
	for _, c := range omscases.Cases(t) {
		t.Run(c.ID, func(t *testing.T) {
			code, out, errOut := runCmd(caseArgs(c)...)
			if c.Pass() {
				if code != exitOK || !strings.HasPrefix(out, "ok    ") || errOut != "" {
					t.Fatalf("exit %d, stdout %q, stderr %q; want success (%s)", code, out, errOut, c.Expected)
				}
				return
			}
			if code != exitInvalid || out != "" {
				t.Fatalf("exit %d, stdout %q; want exit 1 (%s)", code, out, c.Expected)
			}
			checkFailLine(t, errOut)
			var says string
			switch {
			case strings.Contains(c.Expected, "shard"):
				says = "shard [1200000, 1300000): digest mismatch"
			case strings.HasPrefix(c.Expected, "fail: digest"):
				says = "digest mismatch"
			case strings.HasPrefix(c.Expected, "fail: signature"):
				says = "signature: the ECDSA P-256 signature over the DSSE envelope does not verify"
			case strings.HasPrefix(c.Expected, "fail: key hint"):
				says = "not by the given key"
			case strings.HasPrefix(c.Expected, "fail: unsigned"):
				says = "file extra.txt: not covered by the signature"
			case strings.HasPrefix(c.Expected, "fail: missing"):
				says = "file addmul-external.ptd: missing"
			case strings.HasPrefix(c.Expected, "fail: chain"):
				says = "does not lead to a trusted root"
			case strings.HasPrefix(c.Expected, "fail per spec"):
				says = "expired"
			case strings.HasPrefix(c.Expected, "fail (wrong method)"):
				says = "--cert-chain"
			}
			if says == "" || !strings.Contains(errOut, says) {
				t.Errorf("stderr %q does not say %q (%s)", errOut, says, c.Expected)
			}
		})
	}
}

// TestVerifySignatureArchive checks a model stored in a zip archive
// (ARCHIVE!/ENTRY) against its signature, as a file of its own.
func TestVerifySignatureArchive(t *testing.T) {
	dir := omscases.Dir(t)
	key := filepath.Join(dir, "keys", "ec-p256.pub.pem")
	tmp := t.TempDir()
	archive := func(name, model string, method uint16) string {
		p := filepath.Join(tmp, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		zw := zip.NewWriter(f)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: "assets/llama2-tiny-random.gguf", Method: method})
		if err != nil {
			t.Fatal(err)
		}
		src, err := os.Open(model)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		if _, err := io.Copy(w, src); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p + "!/assets/llama2-tiny-random.gguf"
	}
	good := archive("good.apk", filepath.Join(dir, "gguf", "llama2-tiny-random.gguf"), zip.Store)
	flipped := archive("flipped.apk", filepath.Join(dir, "gguf-flipped", "llama2-tiny-random.gguf"), zip.Store)
	deflated := archive("deflated.apk", filepath.Join(dir, "gguf", "llama2-tiny-random.gguf"), zip.Deflate)
	for _, sig := range []string{"key-files", "key-shards-100000"} {
		s := filepath.Join(dir, "gguf", "llama2-tiny-random.gguf."+sig+".sig")
		if code, out, errOut := runCmd("verify", "--signature", s, "--key", key, good); code != exitOK {
			t.Errorf("%s, stored entry: exit %d %q %q", sig, code, out, errOut)
		}
		code, _, errOut := runCmd("verify", "--signature", s, "--key", key, flipped)
		if code != exitInvalid || !strings.Contains(errOut, "digest mismatch") {
			t.Errorf("%s, flipped entry: exit %d %q", sig, code, errOut)
		}
		checkFailLine(t, errOut)
		code, _, errOut = runCmd("verify", "--signature", s, "--key", key, deflated)
		if code != exitInvalid || !strings.Contains(errOut, "compressed") {
			t.Errorf("%s, compressed entry: exit %d %q", sig, code, errOut)
		}
	}
}

// TestVerifySignatureInside checks that a signature kept inside the model's
// folder is left out of the model, and that --ignore-paths leaves out more.
func TestVerifySignatureInside(t *testing.T) {
	dir := omscases.Dir(t)
	key := filepath.Join(dir, "keys", "ec-p256.pub.pem")
	model := t.TempDir()
	for _, n := range []string{"addmul-external.pte", "addmul-external.ptd"} {
		copyFile(t, filepath.Join(dir, "pte-dir", "model", n), filepath.Join(model, n))
	}
	sig := filepath.Join(model, "model.sig")
	copyFile(t, filepath.Join(dir, "pte-dir", "model.key.sig"), sig)
	if code, out, errOut := runCmd("verify", "--signature", sig, "--key", key, model); code != exitOK {
		t.Fatalf("signature inside the model: exit %d %q %q", code, out, errOut)
	}
	notes := filepath.Join(model, "notes", "a.txt")
	if err := os.MkdirAll(filepath.Dir(notes), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notes, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd("verify", "--signature", sig, "--key", key, model)
	if code != exitInvalid || !strings.Contains(errOut, "notes/a.txt: not covered") {
		t.Errorf("an unsigned file: exit %d %q", code, errOut)
	}
	if code, out, errOut := runCmd("verify", "--signature", sig, "--key", key, "--ignore-paths", filepath.Dir(notes), model); code != exitOK {
		t.Errorf("--ignore-paths: exit %d %q %q", code, out, errOut)
	}
}

// TestVerifySignatureSigstore verifies the spec's Sigstore vector offline
// against Sigstore's public-good trusted root, on the model its digests
// describe.
func TestVerifySignatureSigstore(t *testing.T) {
	sig := filepath.Join(omscases.Dir(t), "test-vectors", "v1.0", "valid", "sigstore.bundle.json")
	root := filepath.Join(testmodels.Root(), "signing", "testdata", "sigstore", "public-good.trusted_root.json")
	model := t.TempDir()
	for _, n := range []string{"signme-1", "signme-2"} {
		if err := os.WriteFile(filepath.Join(model, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"verify", "--signature", sig, "--trusted-root", root, "--identity-provider", "https://sigstore.verify.ibm.com/oauth2"}
	code, out, errOut := runCmd(append(args, "--identity", "stefanb@us.ibm.com", model)...)
	if code != exitOK || !strings.Contains(out, "Sigstore identity stefanb@us.ibm.com") {
		t.Fatalf("exit %d %q %q", code, out, errOut)
	}
	code, _, errOut = runCmd(append(args, "--identity", "mallory@example.com", model)...)
	if code != exitInvalid || !strings.Contains(errOut, "identity") {
		t.Errorf("another identity: exit %d %q", code, errOut)
	}
	checkFailLine(t, errOut)
	code, _, errOut = runCmd("verify", "--signature", sig, "--key", filepath.Join(omscases.Dir(t), "keys", "ec-p256.pub.pem"), model)
	if code != exitInvalid || !strings.Contains(errOut, "--trusted-root") {
		t.Errorf("a Sigstore bundle with --key: exit %d %q", code, errOut)
	}
}

// TestVerifySignatureUsage checks the flag combinations refused as usage errors.
func TestVerifySignatureUsage(t *testing.T) {
	for _, args := range [][]string{
		{"verify", "--key", "k.pem", "m"},
		{"verify", "--signature", "s.sig", "m"},
		{"verify", "--signature", "s.sig", "--key", "k.pem", "--cert-chain", "c.pem", "m"},
		{"verify", "--signature", "s.sig", "--key", "k.pem", "m1", "m2"},
		{"verify", "--signature", "s.sig", "--key", "k.pem", "--data", "x.ptd", "m"},
		{"verify", "--signature", "s.sig", "--trusted-root", "r.json", "m"},
		{"verify", "--signature", "s.sig", "--key", "k.pem", "--identity", "a@b", "m"},
	} {
		if code, _, errOut := runCmd(args...); code != exitUsage || !strings.HasPrefix(errOut, "edgeload: verify: ") {
			t.Errorf("%q: exit %d %q, want a usage error", args, code, errOut)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStreamSignature runs stream --signature on the 22 cases of
// ../shared/models/oms (a folder model streamed as its .pte with the .ptd
// beside it): exit 0 only when the spec says the model verifies, otherwise
// exit 1 with one "edgeload:" line; a flipped weight byte is caught by the
// stream as it reads, in both serializations.
func TestStreamSignature(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	for _, c := range omscases.Cases(t) {
		t.Run(c.ID, func(t *testing.T) {
			args := caseArgs(c)
			args[0] = "stream"
			model := args[len(args)-1]
			if fi, err := os.Stat(model); err == nil && fi.IsDir() {
				args = args[:len(args)-1]
				ptd := filepath.Join(model, "addmul-external.ptd")
				if _, err := os.Stat(ptd); err == nil {
					args = append(args, "--data", ptd)
				}
				args = append(args, filepath.Join(model, "addmul-external.pte"))
			}
			code, out, errOut := runCmd(args...)
			if p := runtime.GOMAXPROCS(0); p != procs {
				t.Fatalf("GOMAXPROCS %d after the stream, %d before", p, procs)
			}
			if c.Pass() {
				if code != exitOK || !strings.Contains(out, "every byte matches the signature") || errOut != "" {
					t.Fatalf("%q: exit %d, stdout %q, stderr %q; want success (%s)", args, code, out, errOut, c.Expected)
				}
				return
			}
			if code != exitInvalid || out != "" {
				t.Fatalf("%q: exit %d, stdout %q; want exit 1 (%s)", args, code, out, c.Expected)
			}
			checkFailLine(t, errOut)
			if strings.HasPrefix(c.Expected, "fail: digest") && !strings.Contains(errOut, "does not match its signature") {
				t.Errorf("stderr %q: the stream did not catch the flipped byte (%s)", errOut, c.Expected)
			}
		})
	}
	if code, _, _ := runCmd("stream", "--signature", "x.sig", "--key", "k.pem", "--passes", "2", "m.gguf"); code != exitUsage {
		t.Errorf("--signature with --passes: exit %d, want %d", code, exitUsage)
	}
}

// A signed file the stream reads no item from (a .pte whose weights all
// lie in its .ptd) is still checked, whole: a byte flipped in it fails the
// stream and names the file.
func TestStreamSignatureFileWithoutItems(t *testing.T) {
	src := filepath.Join(omscases.Dir(t), "pte-dir")
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "model"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"model.key.sig", "model/addmul-external.pte", "model/addmul-external.ptd"} {
		b, err := os.ReadFile(filepath.Join(src, p))
		if err != nil {
			t.Fatal(err)
		}
		if p == "model/addmul-external.pte" {
			b[100] ^= 1
		}
		writeTemp(t, filepath.Dir(filepath.Join(dir, p)), filepath.Base(p), b)
	}
	key := filepath.Join(omscases.Dir(t), "keys", "ec-p256.pub.pem")
	code, out, errOut := runCmd("stream", "--signature", filepath.Join(dir, "model.key.sig"), "--key", key,
		"--data", filepath.Join(dir, "model", "addmul-external.ptd"), filepath.Join(dir, "model", "addmul-external.pte"))
	if code != exitInvalid || out != "" || !strings.Contains(errOut, "file addmul-external.pte: digest mismatch") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want the .pte's digest mismatch", code, out, errOut)
	}
}
