package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/signing"
	"github.com/edgeload/edgeload/stream"
)

// signatureFlags are the flags that check a model against its OMS
// signature (package signing); verify and stream take the same ones.
type signatureFlags struct {
	sig, key, certChain, trustedRoot string
	identity, issuer                 string
	ignoreUnsigned                   bool
	ignorePaths                      stringList
}

// addSignatureFlags adds the signature flags to fs.
func addSignatureFlags(fs *flag.FlagSet) *signatureFlags {
	f := &signatureFlags{}
	fs.StringVar(&f.sig, "signature", "", "check the model against its OMS signature `BUNDLE` (model-signing's .sig)")
	fs.StringVar(&f.key, "key", "", "the signer's public key (`PEM`), for a bundle signed with a key")
	fs.StringVar(&f.certChain, "cert-chain", "", "the CA certificates to trust (`PEM`), for a bundle signed with a certificate chain")
	fs.StringVar(&f.trustedRoot, "trusted-root", "", "a Sigstore trusted root (`JSON`: trusted_root.json, or a client trust config), for a bundle signed with Sigstore, verified offline")
	fs.StringVar(&f.identity, "identity", "", "with --trusted-root: the signer's identity the certificate must name (`EMAIL` or URI)")
	fs.StringVar(&f.issuer, "identity-provider", "", "with --trusted-root: the OIDC issuer (`URL`) that vouched for --identity")
	fs.BoolVar(&f.ignoreUnsigned, "ignore-unsigned-files", false, "accept files the signature does not list (they are not read)")
	fs.Var(&f.ignorePaths, "ignore-paths", "leave `PATH` out of a folder model (repeatable)")
	return f
}

// given reports whether --signature was given.
func (f *signatureFlags) given() bool { return f.sig != "" }

// usage returns what is wrong with the flags, or "".
func (f *signatureFlags) usage() string {
	n := 0
	for _, s := range []string{f.key, f.certChain, f.trustedRoot} {
		if s != "" {
			n++
		}
	}
	switch {
	case !f.given() && (n > 0 || f.identity != "" || f.issuer != "" || f.ignoreUnsigned || len(f.ignorePaths) > 0):
		return "--key, --cert-chain, --trusted-root, --identity, --identity-provider, --ignore-unsigned-files and --ignore-paths need --signature"
	case !f.given():
		return ""
	case n != 1:
		return "--signature needs one of --key PEM, --cert-chain PEM and --trusted-root JSON"
	case f.trustedRoot != "" && (f.identity == "" || f.issuer == ""):
		return "--trusted-root needs --identity and --identity-provider"
	case f.trustedRoot == "" && (f.identity != "" || f.issuer != ""):
		return "--identity and --identity-provider go with --trusted-root"
	}
	return ""
}

// verified reads the bundle and the trust material the flags name, and
// verifies the bundle's signature.
func (f *signatureFlags) verified() (*signing.Bundle, *signing.Manifest, error) {
	b, err := signing.ReadBundle(f.sig)
	if err != nil {
		return nil, nil, fmt.Errorf("--signature %s: %w", f.sig, err)
	}
	t := &signing.Trust{Identity: f.identity, Issuer: f.issuer}
	var flagName, file string
	var parse func([]byte) error
	switch {
	case f.key != "":
		flagName, file = "key", f.key
		parse = func(b []byte) (err error) { t.PublicKey, err = signing.ParsePublicKey(b); return }
	case f.certChain != "":
		flagName, file = "cert-chain", f.certChain
		parse = func(b []byte) (err error) { t.Roots, err = signing.ParseCertificates(b); return }
	case f.trustedRoot != "":
		flagName, file = "trusted-root", f.trustedRoot
		parse = func(b []byte) (err error) { t.TrustedRoot, err = signing.ParseTrustedRoot(b); return }
	}
	if parse != nil {
		data, err := os.ReadFile(file)
		if err == nil && len(data) > signing.MaxBundleSize {
			err = errors.New("too large")
		}
		if err == nil {
			err = parse(data)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("--%s %s: %w", flagName, file, err)
		}
	}
	m, err := b.Verify(t)
	if err != nil {
		return b, nil, noTrustHint(b, err)
	}
	return b, m, nil
}

// verifySignature checks the model argument (a file, a folder or
// ARCHIVE!/ENTRY) against the signature the flags name. progress, when
// not nil, sees the bytes hashed.
func (f *signatureFlags) verifySignature(ctx context.Context, model string, progress func(done, total int64)) (*signing.Bundle, *signing.Result, error) {
	b, m, err := f.verified()
	if err != nil {
		return b, nil, err
	}
	opts := &signing.Options{IgnoreUnsigned: f.ignoreUnsigned, Progress: progress}
	var md *signing.Model
	if a, e, ok := mmapfile.SplitArchivePath(model); ok {
		af, err := os.Open(a)
		if err != nil {
			return b, nil, err
		}
		defer af.Close()
		fi, err := af.Stat()
		if err != nil {
			return b, nil, err
		}
		off, n, err := mmapfile.ZipEntry(af, fi.Size(), a, e)
		if err != nil {
			return b, nil, err
		}
		md = signing.NewFileModel(path.Base(e), io.NewSectionReader(af, off, n), n)
	} else {
		if md, err = m.Model(model, f.ignored(model)...); err != nil {
			return b, nil, err
		}
	}
	res, err := m.VerifyModel(ctx, md, opts)
	return b, res, err
}

// ignored returns the paths a folder model leaves out (the bundle and
// --ignore-paths) that lie inside it, relative to it and "/"-separated.
func (f *signatureFlags) ignored(model string) []string {
	root, err := filepath.Abs(model)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range append([]string{f.sig}, f.ignorePaths...) {
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

// noTrustHint names the flag a bundle's method needs when the trust given
// does not fit it.
func noTrustHint(b *signing.Bundle, err error) error {
	if !errors.Is(err, signing.ErrNoTrust) {
		return err
	}
	switch b.Method {
	case signing.MethodKey:
		return fmt.Errorf("%w: give --key PUBLIC.pem", err)
	case signing.MethodCertificate:
		return fmt.Errorf("%w: give --cert-chain CA.pem", err)
	}
	return fmt.Errorf("%w: give --trusted-root trusted_root.json (the Sigstore instance's) with --identity and --identity-provider", err)
}

// signerOf describes who signed a verified bundle.
func signerOf(b *signing.Bundle, f *signatureFlags) string {
	switch b.Method {
	case signing.MethodKey:
		if b.KeyHint != "" {
			return fmt.Sprintf("key %.16s…", b.KeyHint)
		}
		return "key " + f.key
	case signing.MethodCertificate:
		return "certificate " + b.Certificates[0].Subject.String()
	}
	return fmt.Sprintf("Sigstore identity %s (%s)", f.identity, f.issuer)
}

// streamChecks verifies the signature the flags name for the model
// argument the stream reads (a file or ARCHIVE!/ENTRY), opened as m, and
// returns the check each of m's files must pass as the stream reads it.
// The signed model is the file itself when the signature lists one file,
// else the folder the file is in; its other files (a checkpoint's index, a
// config) are checked here, whole, before the stream starts.
func (f *signatureFlags) streamChecks(model string, m *loader.Model) (map[*mmapfile.File]*signing.Check, *signing.Bundle, error) {
	b, man, err := f.verified()
	if err != nil {
		return nil, b, err
	}
	if _, e, ok := mmapfile.SplitArchivePath(model); ok {
		c, err := man.NewCheck(path.Base(e), m.File().Len())
		if err != nil {
			return nil, b, err
		}
		return map[*mmapfile.File]*signing.Check{m.File(): c}, b, nil
	}
	root := model
	if len(man.Paths()) > 1 {
		root = filepath.Dir(model)
	}
	checks, err := stream.SignatureChecks(m, man, &signing.Options{IgnorePaths: f.ignored(root), IgnoreUnsigned: f.ignoreUnsigned})
	return checks, b, err
}
