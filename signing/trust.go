package signing

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Trust is what a signature is verified against: the material for the
// bundle's method. A bundle whose method has no material here is refused
// with ErrNoTrust.
type Trust struct {
	// PublicKey verifies the key method: the signer's ECDSA public key.
	PublicKey crypto.PublicKey
	// Roots verify the certificate method: the certificates trusted as
	// anchors of the bundle's chain (model_signing's --certificate_chain).
	Roots []*x509.Certificate
	// TrustedRoot verifies the Sigstore method, offline: the Fulcio, Rekor
	// and CT keys of a Sigstore instance.
	TrustedRoot *TrustedRoot
	// Identity and Issuer are what the Sigstore method's certificate must
	// name: a subject alternative name (an email or URI) and the OIDC
	// issuer that vouched for it. Both are required with TrustedRoot.
	Identity, Issuer string
	// Now is the time the certificate method checks the chain's validity
	// at; zero means time.Now().
	Now time.Time
}

// Verify checks the bundle's signature against trust and returns the
// statement it signs. For the key method, the bundle's key hint (or, in
// older bundles, its raw key) must name trust.PublicKey; for the
// certificate method, the chain must lead to one of trust.Roots with every
// certificate valid now; for the Sigstore method, see TrustedRoot. The
// statement is parsed only once the signature holds.
func (b *Bundle) Verify(trust *Trust) (*Manifest, error) {
	if trust == nil {
		trust = &Trust{}
	}
	var err error
	switch b.Method {
	case MethodKey:
		err = b.verifyKey(trust)
	case MethodCertificate:
		err = b.verifyCertificate(trust)
	case MethodSigstore:
		err = b.verifySigstore(trust)
	default:
		err = errorf("bundle", ErrMalformed, "no signing method")
	}
	if err != nil {
		return nil, err
	}
	return parseStatement(b.Payload)
}

// verifyKey checks the key method.
func (b *Bundle) verifyKey(t *Trust) error {
	const op = "key"
	if t.PublicKey == nil {
		return errorf(op, ErrNoTrust, "the bundle is signed with a key, and no public key was given")
	}
	if b.KeyHint != "" {
		want, err := KeyHint(t.PublicKey)
		if err != nil {
			return errorf(op, ErrUnsupported, "%v", err)
		}
		if b.KeyHint != want {
			return errorf(op, ErrUntrusted, "the bundle was signed by key %.16s…, not by the given key %.16s… (SHA-256 of the key's PEM)", b.KeyHint, want)
		}
	}
	if b.RawKey != nil {
		der, err := x509.MarshalPKIXPublicKey(t.PublicKey)
		if err != nil {
			return errorf(op, ErrUnsupported, "%v", err)
		}
		if !bytes.Equal(der, b.RawKey) {
			return errorf(op, ErrUntrusted, "the bundle's public key is not the given key")
		}
	}
	return b.verifyEnvelope(t.PublicKey)
}

// KeyHint returns the hint the key method's bundles name pub by: the
// lowercase hex SHA-256 of its PEM text (SubjectPublicKeyInfo, 64-column
// base64, final newline), as model-signing computes it.
func KeyHint(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	return hex.EncodeToString(sum[:]), nil
}

// verifyCertificate checks the certificate method: the chain leads to a
// trusted root, every certificate in it valid now, and the leaf may sign.
func (b *Bundle) verifyCertificate(t *Trust) error {
	const op = "certificate"
	if len(t.Roots) == 0 {
		return errorf(op, ErrNoTrust, "the bundle is signed with a certificate chain, and no CA certificate was given")
	}
	leaf := b.Certificates[0]
	now := t.Now
	if now.IsZero() {
		now = time.Now()
	}
	if _, err := verifyLeaf(leaf, t.Roots, b.Certificates[1:], now, x509.ExtKeyUsageAny); err != nil {
		var inv x509.CertificateInvalidError
		if errors.As(err, &inv) && inv.Reason == x509.Expired {
			return errorf(op, ErrUntrusted, "%s: a certificate of the chain is expired or not yet valid at %s (the leaf is valid from %s to %s)",
				certName(leaf), now.UTC().Format(time.RFC3339), leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
		}
		return errorf(op, ErrUntrusted, "%s: the chain does not lead to a trusted root: %v", certName(leaf), err)
	}
	if err := canSign(leaf); err != nil {
		return errorf(op, ErrUntrusted, "%s: %v", certName(leaf), err)
	}
	return b.verifyEnvelope(leaf.PublicKey)
}

// canSign checks that a leaf certificate may sign: KeyUsage
// digitalSignature, or ExtKeyUsage codeSigning (model-signing's rule).
func canSign(c *x509.Certificate) error {
	if c.KeyUsage&x509.KeyUsageDigitalSignature != 0 || slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageCodeSigning) {
		return nil
	}
	return fmt.Errorf("the certificate allows neither digitalSignature (KeyUsage) nor codeSigning (ExtKeyUsage)")
}

// verifyLeaf checks that leaf chains through inter to one of roots at t,
// for usage, and returns the chains.
func verifyLeaf(leaf *x509.Certificate, roots, inter []*x509.Certificate, t time.Time, usage x509.ExtKeyUsage) ([][]*x509.Certificate, error) {
	rp, ip := x509.NewCertPool(), x509.NewCertPool()
	for _, c := range roots {
		rp.AddCert(c)
	}
	for _, c := range inter {
		ip.AddCert(c)
	}
	return leaf.Verify(x509.VerifyOptions{Roots: rp, Intermediates: ip, CurrentTime: t, KeyUsages: []x509.ExtKeyUsage{usage}})
}

// certName names a certificate in errors.
func certName(c *x509.Certificate) string {
	if s := c.Subject.String(); s != "" {
		return "leaf " + quoteShort(s)
	}
	return fmt.Sprintf("leaf (serial %s)", c.SerialNumber)
}

// ParsePublicKey parses a PEM public key (PUBLIC KEY, SubjectPublicKeyInfo)
// for Trust.PublicKey.
func ParsePublicKey(pemBytes []byte) (crypto.PublicKey, error) {
	blk, _ := pem.Decode(pemBytes)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		return nil, errors.New("want a PEM block of type PUBLIC KEY")
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, err
	}
	if _, err := ecdsaKey(k); err != nil {
		return nil, err
	}
	return k, nil
}

// ParseCertificates parses every PEM CERTIFICATE block in pemBytes, for
// Trust.Roots.
func ParseCertificates(pemBytes []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, pemBytes = pem.Decode(pemBytes)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return out, nil
}
