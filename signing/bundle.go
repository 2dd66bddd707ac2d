package signing

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxBundleSize is the largest bundle ParseBundle and ReadBundle accept:
// a shard bundle of a large model lists one digest per shard.
const MaxBundleSize = 64 << 20

// maxChain is the most certificates a bundle's chain may hold.
const maxChain = 16

// The media and payload types OMS v1.0 uses.
const (
	bundleMediaPrefix = "application/vnd.dev.sigstore.bundle"
	inTotoPayloadType = "application/vnd.in-toto+json"
)

// Method is how a bundle was signed, which decides what verifies it.
type Method int

// The signing methods of OMS v1.0.
const (
	// MethodKey: a bare public key; the bundle names it by a hint.
	MethodKey Method = iota + 1
	// MethodCertificate: an X.509 chain, leaf first, to a root the verifier trusts.
	MethodCertificate
	// MethodSigstore: a Fulcio certificate and a Rekor transparency log entry.
	MethodSigstore
)

// String returns the method's name as model_signing's commands spell it.
func (m Method) String() string {
	if m >= MethodKey && m <= MethodSigstore {
		return [...]string{"key", "certificate", "sigstore"}[m-MethodKey]
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// Bundle is a parsed OMS signature: a Sigstore bundle whose DSSE envelope
// carries the signed in-toto statement. Nothing in it is trusted until
// Verify has checked the signature.
type Bundle struct {
	MediaType string
	Method    Method
	// KeyHint is the key method's publicKey.hint: the lowercase hex SHA-256
	// of the signer's public key as PEM text; "" when absent.
	KeyHint string
	// RawKey is the key method's publicKey.rawBytes, which bundles of
	// model-signing before 1.1.0 carry instead of a hint (DER
	// SubjectPublicKeyInfo); nil when absent.
	RawKey []byte
	// Certificates holds the certificate method's chain, leaf first, or
	// the Sigstore method's one Fulcio leaf.
	Certificates []*x509.Certificate
	// PayloadType is the DSSE payload type (always the in-toto one).
	PayloadType string
	// Payload is the decoded DSSE payload: the statement's JSON bytes.
	Payload []byte
	// Signatures are the decoded DSSE signatures; the first is the one
	// verified, as model_signing does.
	Signatures [][]byte

	tlog *tlogEntry // the Sigstore method's log entry
}

// ReadBundle reads and parses the bundle in the named file (a model's
// .sig), refusing one larger than MaxBundleSize.
func ReadBundle(name string) (*Bundle, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxBundleSize+1))
	if err != nil {
		return nil, err
	}
	return ParseBundle(data)
}

// ParseBundle parses an OMS bundle: the Sigstore bundle JSON, its
// verification material and its DSSE envelope. It checks their form (a
// Sigstore bundle media type, the in-toto payload type, no member outside
// the schema's in the bundle and its envelope, one signing method, base64,
// certificates that parse) but no signature, and does not read the
// statement: see Bundle.Verify and Bundle.Statement.
func ParseBundle(data []byte) (*Bundle, error) {
	d := &decoder{op: "bundle"}
	if len(data) > MaxBundleSize {
		return nil, errorf(d.op, ErrMalformed, "%d bytes, more than the %d a bundle may have", len(data), MaxBundleSize)
	}
	top := d.object("", data)
	top.only("mediaType", "verificationMaterial", "dsseEnvelope")
	b := &Bundle{MediaType: top.str("mediaType")}
	if !strings.HasPrefix(b.MediaType, bundleMediaPrefix) {
		d.fail(ErrMalformed, "mediaType %s is not a Sigstore bundle's (%s…)", quoteShort(b.MediaType), bundleMediaPrefix)
	}
	b.parseMaterial(top.obj("verificationMaterial"))
	b.parseEnvelope(top.obj("dsseEnvelope"))
	if d.err != nil {
		return nil, d.err
	}
	return b, nil
}

// parseMaterial reads verificationMaterial: exactly one of publicKey,
// x509CertificateChain and certificate says the method.
func (b *Bundle) parseMaterial(vm object) {
	d := vm.d
	var found []string
	for _, k := range []string{"publicKey", "x509CertificateChain", "certificate"} {
		if vm.has(k) {
			found = append(found, k)
		}
	}
	if len(found) != 1 {
		d.fail(ErrMalformed, "%s: want one of publicKey, x509CertificateChain and certificate, found %d", vm.where, len(found))
		return
	}
	var entries []json.RawMessage
	if vm.has("tlogEntries") {
		entries = vm.list("tlogEntries")
	}
	switch found[0] {
	case "publicKey":
		b.Method = MethodKey
		pk := vm.obj("publicKey")
		b.KeyHint = pk.optStr("hint")
		if raw := pk.optStr("rawBytes"); raw != "" {
			b.RawKey = d.decode64(pk.where+".rawBytes", raw)
		}
	case "x509CertificateChain":
		b.Method = MethodCertificate
		ch := vm.obj("x509CertificateChain")
		certs := ch.list("certificates")
		if len(certs) == 0 || len(certs) > maxChain {
			d.fail(ErrMalformed, "%s: %d certificates, want 1 to %d", ch.where, len(certs), maxChain)
			return
		}
		for i, raw := range certs {
			b.Certificates = append(b.Certificates, d.cert(fmt.Sprintf("%s.certificates[%d]", ch.where, i), raw))
		}
	case "certificate":
		b.Method = MethodSigstore
		b.Certificates = []*x509.Certificate{d.cert(vm.where+".certificate", vm.m["certificate"])}
		switch {
		case len(entries) == 0:
			d.fail(ErrMalformed, "%s: a Sigstore certificate needs a transparency log entry (tlogEntries)", vm.where)
		case len(entries) != 1:
			d.fail(ErrUnsupported, "%s: %d transparency log entries, want one", vm.where, len(entries))
		default:
			b.tlog = parseTlogEntry(d, entries[0])
		}
	}
}

// cert reads {"rawBytes": base64 DER} as a certificate.
func (d *decoder) cert(where string, raw json.RawMessage) *x509.Certificate {
	der := d.object(where, raw).b64("rawBytes")
	if d.err != nil {
		return nil
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		d.fail(ErrMalformed, "%s: %v", where, err)
	}
	return c
}

// parseEnvelope reads the DSSE envelope.
func (b *Bundle) parseEnvelope(env object) {
	d := env.d
	env.only("payload", "payloadType", "signatures")
	if b.PayloadType = env.str("payloadType"); b.PayloadType != inTotoPayloadType {
		d.fail(ErrMalformed, "%s.payloadType %s, want %s", env.where, quoteShort(b.PayloadType), inTotoPayloadType)
	}
	b.Payload = env.b64("payload")
	sigs := env.list("signatures")
	if len(sigs) == 0 {
		d.fail(ErrMalformed, "%s.signatures: empty", env.where)
	}
	for i, raw := range sigs {
		o := d.object(fmt.Sprintf("%s.signatures[%d]", env.where, i), raw)
		o.only("sig", "keyid")
		o.optStr("keyid")
		sig := o.b64("sig")
		if len(sig) == 0 {
			d.fail(ErrMalformed, "%s.sig: empty", o.where)
		}
		b.Signatures = append(b.Signatures, sig)
	}
}
