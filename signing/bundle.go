package signing

import (
	"crypto/x509"
	"encoding/base64"
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
	switch m {
	case MethodKey:
		return "key"
	case MethodCertificate:
		return "certificate"
	case MethodSigstore:
		return "sigstore"
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
// verification material and its DSSE envelope. It checks their form
// (media type, payload type, one signing method, base64, certificates that
// parse) but no signature, and does not read the statement: see
// Bundle.Verify and Bundle.Statement.
func ParseBundle(data []byte) (*Bundle, error) {
	const op = "bundle"
	if len(data) > MaxBundleSize {
		return nil, errorf(op, ErrMalformed, "%d bytes, more than the %d a bundle may have", len(data), MaxBundleSize)
	}
	top, err := parseObject(op, "", data)
	if err != nil {
		return nil, err
	}
	if err := top.only(op, "", "mediaType", "verificationMaterial", "dsseEnvelope"); err != nil {
		return nil, err
	}
	b := &Bundle{}
	if b.MediaType, err = top.str(op, "", "mediaType"); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(b.MediaType, bundleMediaPrefix) {
		return nil, errorf(op, ErrMalformed, "mediaType %s is not a Sigstore bundle's (%s…)", quoteShort(b.MediaType), bundleMediaPrefix)
	}
	vm, err := top.obj(op, "", "verificationMaterial")
	if err != nil {
		return nil, err
	}
	if err := b.parseMaterial(vm); err != nil {
		return nil, err
	}
	env, err := top.obj(op, "", "dsseEnvelope")
	if err != nil {
		return nil, err
	}
	if err := b.parseEnvelope(env); err != nil {
		return nil, err
	}
	return b, nil
}

// parseMaterial reads verificationMaterial: exactly one of publicKey,
// x509CertificateChain and certificate says the method.
func (b *Bundle) parseMaterial(vm object) error {
	const op, where = "bundle", "verificationMaterial"
	var found []string
	for _, k := range []string{"publicKey", "x509CertificateChain", "certificate"} {
		if vm.has(k) {
			found = append(found, k)
		}
	}
	if len(found) != 1 {
		return errorf(op, ErrMalformed, "%s: want one of publicKey, x509CertificateChain and certificate, found %d", where, len(found))
	}
	var entries []json.RawMessage
	if vm.has("tlogEntries") {
		var err error
		if entries, err = vm.list(op, where, "tlogEntries"); err != nil {
			return err
		}
	}
	switch found[0] {
	case "publicKey":
		b.Method = MethodKey
		pk, err := vm.obj(op, where, "publicKey")
		if err != nil {
			return err
		}
		if b.KeyHint, err = pk.optStr(op, where+".publicKey", "hint"); err != nil {
			return err
		}
		raw, err := pk.optStr(op, where+".publicKey", "rawBytes")
		if err != nil {
			return err
		}
		if raw != "" {
			if b.RawKey, err = decode64(op, where+".publicKey.rawBytes", raw); err != nil {
				return err
			}
		}
	case "x509CertificateChain":
		b.Method = MethodCertificate
		ch, err := vm.obj(op, where, "x509CertificateChain")
		if err != nil {
			return err
		}
		certs, err := ch.list(op, where+".x509CertificateChain", "certificates")
		if err != nil {
			return err
		}
		if len(certs) == 0 || len(certs) > maxChain {
			return errorf(op, ErrMalformed, "%s.x509CertificateChain: %d certificates, want 1 to %d", where, len(certs), maxChain)
		}
		for i, raw := range certs {
			c, err := parseCert(op, fmt.Sprintf("%s.x509CertificateChain.certificates[%d]", where, i), raw)
			if err != nil {
				return err
			}
			b.Certificates = append(b.Certificates, c)
		}
	case "certificate":
		b.Method = MethodSigstore
		c, err := parseCert(op, where+".certificate", vm["certificate"])
		if err != nil {
			return err
		}
		b.Certificates = []*x509.Certificate{c}
		if len(entries) == 0 {
			return errorf(op, ErrMalformed, "%s: a Sigstore certificate needs a transparency log entry (tlogEntries)", where)
		}
		if len(entries) != 1 {
			return errorf(op, ErrUnsupported, "%s: %d transparency log entries, want one", where, len(entries))
		}
		if b.tlog, err = parseTlogEntry(entries[0]); err != nil {
			return err
		}
	}
	return nil
}

// parseCert reads {"rawBytes": base64 DER} as a certificate.
func parseCert(op, where string, raw json.RawMessage) (*x509.Certificate, error) {
	o, err := parseObject(op, where, raw)
	if err != nil {
		return nil, err
	}
	s, err := o.str(op, where, "rawBytes")
	if err != nil {
		return nil, err
	}
	der, err := decode64(op, where+".rawBytes", s)
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, errorf(op, ErrMalformed, "%s: %v", where, err)
	}
	return c, nil
}

// parseEnvelope reads the DSSE envelope.
func (b *Bundle) parseEnvelope(env object) error {
	const op, where = "bundle", "dsseEnvelope"
	if err := env.only(op, where, "payload", "payloadType", "signatures"); err != nil {
		return err
	}
	var err error
	if b.PayloadType, err = env.str(op, where, "payloadType"); err != nil {
		return err
	}
	if b.PayloadType != inTotoPayloadType {
		return errorf(op, ErrMalformed, "%s.payloadType %s, want %s", where, quoteShort(b.PayloadType), inTotoPayloadType)
	}
	p, err := env.str(op, where, "payload")
	if err != nil {
		return err
	}
	if b.Payload, err = decode64(op, where+".payload", p); err != nil {
		return err
	}
	sigs, err := env.list(op, where, "signatures")
	if err != nil {
		return err
	}
	if len(sigs) == 0 {
		return errorf(op, ErrMalformed, "%s.signatures: empty", where)
	}
	for i, raw := range sigs {
		w := fmt.Sprintf("%s.signatures[%d]", where, i)
		o, err := parseObject(op, w, raw)
		if err != nil {
			return err
		}
		if err := o.only(op, w, "sig", "keyid"); err != nil {
			return err
		}
		if _, err := o.optStr(op, w, "keyid"); err != nil {
			return err
		}
		s, err := o.str(op, w, "sig")
		if err != nil {
			return err
		}
		sig, err := decode64(op, w+".sig", s)
		if err != nil {
			return err
		}
		if len(sig) == 0 {
			return errorf(op, ErrMalformed, "%s.sig: empty", w)
		}
		b.Signatures = append(b.Signatures, sig)
	}
	return nil
}

// decode64 decodes standard base64, padded or not.
func decode64(op, where, s string) ([]byte, error) {
	enc := base64.StdEncoding
	if len(s)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	b, err := enc.DecodeString(s)
	if err != nil {
		return nil, errorf(op, ErrMalformed, "%s: bad base64: %v", where, err)
	}
	return b, nil
}
