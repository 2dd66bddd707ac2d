package signing

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TrustedRoot is the keys of a Sigstore instance, as its trusted root
// (trusted_root.json, application/vnd.dev.sigstore.trustedroot+json) lists
// them: the Fulcio certificate authorities, the Rekor transparency logs
// and the certificate transparency logs. A bundle signed with Sigstore is
// verified offline against it:
//
//   - the log entry's signed entry timestamp (SET) holds under the Rekor
//     key, and its integrated time is the signing time;
//   - its inclusion proof leads to the root hash of a checkpoint the same
//     key signed;
//   - the certificate chains to a Fulcio root at the signing time, its
//     one embedded SCT holds under a CT log key, it allows
//     digitalSignature and codeSigning, and it names Trust.Identity (an
//     email or URI SAN) and Trust.Issuer (the OIDC issuer extension);
//   - the DSSE signature holds under the certificate's key, and the log
//     entry (dsse 0.0.1) records this payload's hash and these signatures.
//
// RFC 3161 timestamps in a bundle are not checked and not used, so an
// entry without a SET (Rekor v2) is refused with ErrUnsupported.
type TrustedRoot struct {
	fulcio []authority
	rekor  []logKey
	ct     []logKey
}

// authority is a certificate authority: its chain, root last.
type authority struct {
	certs      []*x509.Certificate
	start, end time.Time
}

// logKey is a transparency log's key and when it was in use.
type logKey struct {
	id         []byte
	key        crypto.PublicKey
	start, end time.Time
}

// The JSON of a trusted root.
type (
	jsonRoot struct {
		MediaType   string          `json:"mediaType"`
		TrustedRoot json.RawMessage `json:"trustedRoot"`
		Tlogs       []jsonLog       `json:"tlogs"`
		Ctlogs      []jsonLog       `json:"ctlogs"`
		CAs         []jsonCA        `json:"certificateAuthorities"`
	}
	jsonLog struct {
		LogID struct {
			KeyID []byte `json:"keyId"`
		} `json:"logId"`
		PublicKey struct {
			RawBytes []byte    `json:"rawBytes"`
			ValidFor jsonRange `json:"validFor"`
		} `json:"publicKey"`
	}
	jsonCA struct {
		CertChain struct {
			Certificates []struct {
				RawBytes []byte `json:"rawBytes"`
			} `json:"certificates"`
		} `json:"certChain"`
		ValidFor jsonRange `json:"validFor"`
	}
	jsonRange struct {
		Start time.Time `json:"start"`
		End   time.Time `json:"end"`
	}
)

// ParseTrustedRoot parses a Sigstore trusted root, or a client trust
// configuration (model_signing's --trust_config) holding one.
func ParseTrustedRoot(data []byte) (*TrustedRoot, error) {
	if len(data) > MaxBundleSize {
		return nil, errors.New("trusted root: too large")
	}
	var j jsonRoot
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("trusted root: %w", err)
	}
	if strings.HasPrefix(j.MediaType, "application/vnd.dev.sigstore.clienttrustconfig") && len(j.TrustedRoot) > 0 {
		return ParseTrustedRoot(j.TrustedRoot)
	}
	if !strings.HasPrefix(j.MediaType, "application/vnd.dev.sigstore.trustedroot") {
		return nil, fmt.Errorf("trusted root: mediaType %s is not a Sigstore trusted root's", quoteShort(j.MediaType))
	}
	tr := &TrustedRoot{}
	for i, ca := range j.CAs {
		a := authority{start: ca.ValidFor.Start, end: ca.ValidFor.End}
		for _, c := range ca.CertChain.Certificates {
			cert, err := x509.ParseCertificate(c.RawBytes)
			if err != nil {
				return nil, fmt.Errorf("trusted root: certificateAuthorities[%d]: %w", i, err)
			}
			a.certs = append(a.certs, cert)
		}
		if len(a.certs) > 0 {
			tr.fulcio = append(tr.fulcio, a)
		}
	}
	for _, l := range []struct {
		name string
		in   []jsonLog
		out  *[]logKey
	}{{"tlogs", j.Tlogs, &tr.rekor}, {"ctlogs", j.Ctlogs, &tr.ct}} {
		for i, lg := range l.in {
			k, err := x509.ParsePKIXPublicKey(lg.PublicKey.RawBytes)
			if err != nil {
				return nil, fmt.Errorf("trusted root: %s[%d]: %w", l.name, i, err)
			}
			*l.out = append(*l.out, logKey{id: lg.LogID.KeyID, key: k, start: lg.PublicKey.ValidFor.Start, end: lg.PublicKey.ValidFor.End})
		}
	}
	if len(tr.fulcio) == 0 || len(tr.rekor) == 0 || len(tr.ct) == 0 {
		return nil, errors.New("trusted root: want Fulcio certificate authorities, Rekor logs and CT logs")
	}
	return tr, nil
}

// valid reports whether t lies in [start, end), an open end when zero.
func valid(t, start, end time.Time) bool {
	return !t.Before(start) && (end.IsZero() || t.Before(end))
}

// findLog returns the key of the log id in use at t.
func findLog(keys []logKey, id []byte, t time.Time) (logKey, bool) {
	for _, k := range keys {
		if bytes.Equal(k.id, id) && valid(t, k.start, k.end) {
			return k, true
		}
	}
	return logKey{}, false
}

// verifyLogSig checks a log's signature over msg: ECDSA or RSA over its
// SHA-256, or Ed25519 over msg itself.
func verifyLogSig(key crypto.PublicKey, msg, sig []byte) bool {
	d := sha256.Sum256(msg)
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		return ecdsa.VerifyASN1(k, d[:], sig)
	case *rsa.PublicKey:
		return rsa.VerifyPKCS1v15(k, crypto.SHA256, d[:], sig) == nil
	case ed25519.PublicKey:
		return ed25519.Verify(k, msg, sig)
	}
	return false
}

// tlogEntry is a bundle's Rekor log entry.
type tlogEntry struct {
	logIndex       int64
	logID          []byte
	kind, version  string
	integratedTime int64
	set            []byte // inclusionPromise.signedEntryTimestamp; nil when absent
	body           []byte // canonicalizedBody
	proofIndex     int64
	treeSize       int64
	rootHash       []byte
	hashes         [][]byte
	checkpoint     string
}

// parseTlogEntry reads one verificationMaterial.tlogEntries[] member.
func parseTlogEntry(d *decoder, raw json.RawMessage) *tlogEntry {
	o := d.object("tlogEntries[0]", raw)
	e := &tlogEntry{logIndex: o.integer("logIndex")}
	e.logID = o.obj("logId").b64("keyId")
	kv := o.obj("kindVersion")
	e.kind = kv.str("kind")
	e.version = kv.str("version")
	if o.has("integratedTime") {
		e.integratedTime = o.integer("integratedTime")
	}
	if o.has("inclusionPromise") {
		e.set = o.obj("inclusionPromise").b64("signedEntryTimestamp")
	}
	e.body = o.b64("canonicalizedBody")
	pr := o.obj("inclusionProof")
	e.proofIndex = pr.integer("logIndex")
	e.treeSize = pr.integer("treeSize")
	e.rootHash = pr.b64("rootHash")
	hs := pr.list("hashes")
	if len(hs) > 64 {
		d.fail(ErrMalformed, "%s.hashes: %d hashes, more than a 64-bit tree needs", pr.where, len(hs))
		return e
	}
	for i, h := range hs {
		w := fmt.Sprintf("%s.hashes[%d]", pr.where, i)
		var s string
		if json.Unmarshal(h, &s) != nil {
			d.fail(ErrMalformed, "%s: want a string", w)
		}
		e.hashes = append(e.hashes, d.decode64(w, s))
	}
	e.checkpoint = pr.obj("checkpoint").str("envelope")
	return e
}

// OIDs of the Sigstore certificate profile.
var (
	oidSCTList      = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11129, 2, 4, 2}
	oidIssuer       = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
	oidIssuerV2     = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
	oidPrecertIssue = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11129, 2, 4, 4}
)

// verifySigstore checks the Sigstore method offline (see TrustedRoot).
func (b *Bundle) verifySigstore(t *Trust) error {
	const op = "sigstore"
	tr := t.TrustedRoot
	if tr == nil {
		return errorf(op, ErrNoTrust, "the bundle is signed with Sigstore, and no trusted root was given to verify it offline")
	}
	if t.Identity == "" || t.Issuer == "" {
		return errorf(op, ErrNoTrust, "the bundle is signed with Sigstore, and the signer's identity and OIDC issuer were not given")
	}
	e, leaf := b.tlog, b.Certificates[0]
	if e.kind != "dsse" || e.version != "0.0.1" {
		return errorf(op, ErrUnsupported, "log entry of kind %s %s; this verifier reads dsse 0.0.1 entries (Rekor v1)", quoteShort(e.kind), quoteShort(e.version))
	}
	if e.set == nil || e.integratedTime == 0 {
		return errorf(op, ErrUnsupported, "the log entry has no signed entry timestamp, so its signing time rests on RFC 3161 timestamps, which this verifier does not check")
	}
	when := time.Unix(e.integratedTime, 0).UTC()
	rekor, ok := findLog(tr.rekor, e.logID, when)
	if !ok {
		return errorf(op, ErrUntrusted, "the log entry's log %x is not a Rekor log of the trusted root at %s", e.logID, when.Format(time.RFC3339))
	}
	if err := e.verifySET(rekor); err != nil {
		return err
	}
	if err := e.verifyInclusion(rekor); err != nil {
		return err
	}
	chain, err := tr.verifyChain(leaf, when)
	if err != nil {
		return err
	}
	if err := tr.verifySCT(leaf, chain); err != nil {
		return err
	}
	if err := checkIdentity(leaf, t.Identity, t.Issuer); err != nil {
		return err
	}
	if err := b.verifyEnvelope(leaf.PublicKey); err != nil {
		return err
	}
	return b.checkEntryBody()
}

// verifySET checks the signed entry timestamp: the log's signature over
// the canonical JSON of the entry's body, integrated time, log ID and index.
func (e *tlogEntry) verifySET(k logKey) error {
	msg, err := json.Marshal(struct {
		Body           string `json:"body"`
		IntegratedTime int64  `json:"integratedTime"`
		LogID          string `json:"logID"`
		LogIndex       int64  `json:"logIndex"`
	}{base64.StdEncoding.EncodeToString(e.body), e.integratedTime, hex.EncodeToString(e.logID), e.logIndex})
	if err != nil {
		return err
	}
	if !verifyLogSig(k.key, msg, e.set) {
		return errorf("sigstore", ErrUntrusted, "the log entry's signed entry timestamp does not verify with the Rekor key (the entry, its time or its index was altered)")
	}
	return nil
}

// verifyInclusion checks the RFC 6962 inclusion proof of the entry's body
// and the checkpoint that signs the proof's root.
func (e *tlogEntry) verifyInclusion(k logKey) error {
	const op = "sigstore"
	if e.proofIndex >= e.treeSize {
		return errorf(op, ErrMalformed, "inclusion proof: index %d outside a tree of %d", e.proofIndex, e.treeSize)
	}
	leaf := sha256.Sum256(append([]byte{0}, e.body...))
	h, err := inclusionRoot(uint64(e.proofIndex), uint64(e.treeSize), leaf[:], e.hashes)
	if err != nil {
		return errorf(op, ErrUntrusted, "inclusion proof: %v", err)
	}
	if !bytes.Equal(h, e.rootHash) {
		return errorf(op, ErrUntrusted, "inclusion proof: the entry hashes to root %x, the proof says %x", h, e.rootHash)
	}
	return e.verifyCheckpoint(k)
}

// inclusionRoot returns the root of a tree of size leaves that an RFC
// 6962 inclusion proof of the leaf hash at index leads to.
func inclusionRoot(index, size uint64, leaf []byte, proof [][]byte) ([]byte, error) {
	inner := bits.Len64(index ^ (size - 1))
	border := bits.OnesCount64(index >> inner)
	if len(proof) != inner+border {
		return nil, fmt.Errorf("%d hashes, a tree of %d needs %d for index %d", len(proof), size, inner+border, index)
	}
	node := func(l, r []byte) []byte {
		h := sha256.New()
		h.Write([]byte{1})
		h.Write(l)
		h.Write(r)
		return h.Sum(nil)
	}
	h := leaf
	for i, p := range proof {
		if i < inner && (index>>i)&1 == 0 {
			h = node(h, p)
		} else {
			h = node(p, h)
		}
	}
	return h, nil
}

// verifyCheckpoint checks the signed note carrying the log's checkpoint:
// a signature by the log's key over the note's text, whose tree size and
// root hash are the proof's.
func (e *tlogEntry) verifyCheckpoint(k logKey) error {
	const op = "sigstore"
	note := e.checkpoint
	i := strings.Index(note, "\n\n")
	if i < 0 || strings.Count(note, "\n\n") != 1 || !strings.HasSuffix(note, "\n") {
		return errorf(op, ErrMalformed, "checkpoint: not a signed note")
	}
	text, sigs := note[:i+1], note[i+2:]
	found := false
	for _, line := range strings.Split(strings.TrimSuffix(sigs, "\n"), "\n") {
		f := strings.Fields(strings.TrimPrefix(line, "\u2014 "))
		if !strings.HasPrefix(line, "\u2014 ") || len(f) != 2 {
			return errorf(op, ErrMalformed, "checkpoint: bad signature line %s", quoteShort(line))
		}
		s, err := base64.StdEncoding.DecodeString(f[1])
		if err != nil || len(s) < 5 || len(e.logID) < 4 || !bytes.Equal(s[:4], e.logID[:4]) {
			continue
		}
		if !verifyLogSig(k.key, []byte(text), s[4:]) {
			return errorf(op, ErrUntrusted, "checkpoint: the signature does not verify with the Rekor key")
		}
		found = true
	}
	if !found {
		return errorf(op, ErrUntrusted, "checkpoint: no signature by log %x", e.logID)
	}
	lines := strings.Split(text, "\n")
	if len(lines) < 4 {
		return errorf(op, ErrMalformed, "checkpoint: want an origin, a tree size and a root hash")
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || lines[1] != strconv.FormatInt(e.treeSize, 10) || !bytes.Equal(root, e.rootHash) {
		return errorf(op, ErrUntrusted, "checkpoint: tree %s with root %s is not the proof's tree %d with root %x", quoteShort(lines[1]), quoteShort(lines[2]), e.treeSize, e.rootHash)
	}
	return nil
}

// verifyChain checks that leaf chains to a Fulcio root valid at when, and
// returns the chain.
func (tr *TrustedRoot) verifyChain(leaf *x509.Certificate, when time.Time) ([]*x509.Certificate, error) {
	var roots, inter []*x509.Certificate
	for _, a := range tr.fulcio {
		if valid(when, a.start, a.end) {
			roots = append(roots, a.certs[len(a.certs)-1])
			inter = append(inter, a.certs[:len(a.certs)-1]...)
		}
	}
	chains, err := verifyLeaf(leaf, roots, inter, when, x509.ExtKeyUsageCodeSigning)
	if err != nil {
		return nil, errorf("sigstore", ErrUntrusted, "the certificate does not chain to a Fulcio root of the trusted root at the signing time %s: %v", when.Format(time.RFC3339), err)
	}
	if leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		return nil, errorf("sigstore", ErrUntrusted, "the certificate does not allow digitalSignature")
	}
	return chains[0], nil
}

// verifySCT checks the certificate's one embedded signed certificate
// timestamp (RFC 6962, precertificate entry) against the CT logs.
func (tr *TrustedRoot) verifySCT(leaf *x509.Certificate, chain []*x509.Certificate) error {
	const op = "sigstore"
	bad := func(format string, args ...any) error {
		return errorf(op, ErrUntrusted, "SCT: "+format, args...)
	}
	var list []byte
	for _, x := range leaf.Extensions {
		if x.Id.Equal(oidSCTList) {
			if rest, err := asn1.Unmarshal(x.Value, &list); err != nil || len(rest) > 0 {
				return bad("the extension is not an OCTET STRING")
			}
		}
	}
	if list == nil {
		return bad("the certificate embeds no signed certificate timestamp")
	}
	// SignedCertificateTimestampList: u16 length, then u16-prefixed SCTs.
	if len(list) < 4 || int(binary.BigEndian.Uint16(list)) != len(list)-2 {
		return bad("bad list length")
	}
	n := int(binary.BigEndian.Uint16(list[2:]))
	sct := list[4:]
	if n != len(sct) {
		return bad("want exactly one timestamp")
	}
	// SCT v1: version, log ID, timestamp, extensions, hash and signature
	// algorithms, signature.
	if len(sct) < 1+32+8+2 || sct[0] != 0 {
		return bad("not a v1 timestamp")
	}
	logID, ts := sct[1:33], binary.BigEndian.Uint64(sct[33:41])
	extLen := int(binary.BigEndian.Uint16(sct[41:43]))
	if len(sct) < 43+extLen+4 {
		return bad("truncated")
	}
	ext, rest := sct[43:43+extLen], sct[43+extLen:]
	hashAlg, sigLen := rest[0], int(binary.BigEndian.Uint16(rest[2:4]))
	sig := rest[4:]
	if hashAlg != 4 || sigLen != len(sig) {
		return bad("want a SHA-256 signature filling the timestamp")
	}
	when := time.UnixMilli(int64(ts)).UTC()
	ctKey, ok := findLog(tr.ct, logID, when)
	if !ok {
		return bad("log %x is not a CT log of the trusted root at %s", logID, when.Format(time.RFC3339))
	}
	issuer := chain[1]
	if len(chain) > 2 && slices.ContainsFunc(issuer.UnknownExtKeyUsage, oidPrecertIssue.Equal) {
		issuer = chain[2]
	}
	tbs, err := removeExtension(leaf.RawTBSCertificate, oidSCTList)
	if err != nil || len(tbs) >= 1<<24 {
		return bad("cannot rebuild the precertificate: %v", err)
	}
	ikh := sha256.Sum256(issuer.RawSubjectPublicKeyInfo)
	msg := []byte{0, 0} // sct_version v1, signature_type certificate_timestamp
	msg = binary.BigEndian.AppendUint64(msg, ts)
	msg = append(msg, 0, 1) // entry_type precert_entry
	msg = append(msg, ikh[:]...)
	msg = append(msg, byte(len(tbs)>>16), byte(len(tbs)>>8), byte(len(tbs)))
	msg = append(msg, tbs...)
	msg = binary.BigEndian.AppendUint16(msg, uint16(extLen))
	msg = append(msg, ext...)
	if !verifyLogSig(ctKey.key, msg, sig) {
		return bad("the signature does not verify with the CT log's key")
	}
	return nil
}

// removeExtension returns the DER TBSCertificate tbs without the extension
// oid: the precertificate a CT log signed.
func removeExtension(tbs []byte, oid asn1.ObjectIdentifier) ([]byte, error) {
	var seq asn1.RawValue
	if rest, err := asn1.Unmarshal(tbs, &seq); err != nil || len(rest) > 0 {
		return nil, errors.New("bad TBSCertificate")
	}
	var fields []byte
	for in := seq.Bytes; len(in) > 0; {
		var f asn1.RawValue
		var err error
		if in, err = asn1.Unmarshal(in, &f); err != nil {
			return nil, err
		}
		if f.Class != asn1.ClassContextSpecific || f.Tag != 3 {
			fields = append(fields, f.FullBytes...)
			continue
		}
		var exts asn1.RawValue
		if rest, err := asn1.Unmarshal(f.Bytes, &exts); err != nil || len(rest) > 0 {
			return nil, errors.New("bad extensions")
		}
		var kept []byte
		for ein := exts.Bytes; len(ein) > 0; {
			var x struct {
				Raw asn1.RawContent
				ID  asn1.ObjectIdentifier
				Any asn1.RawValue `asn1:"optional"`
				Val asn1.RawValue `asn1:"optional"`
			}
			if ein, err = asn1.Unmarshal(ein, &x); err != nil {
				return nil, err
			}
			if !x.ID.Equal(oid) {
				kept = append(kept, x.Raw...)
			}
		}
		inner, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSequence, IsCompound: true, Bytes: kept})
		if err != nil {
			return nil, err
		}
		outer, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 3, IsCompound: true, Bytes: inner})
		if err != nil {
			return nil, err
		}
		fields = append(fields, outer...)
	}
	return asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSequence, IsCompound: true, Bytes: fields})
}

// checkIdentity checks that the certificate names identity (an email or
// URI SAN) and was issued on the word of the OIDC issuer.
func checkIdentity(c *x509.Certificate, identity, issuer string) error {
	got := ""
	for _, x := range c.Extensions {
		switch {
		case x.Id.Equal(oidIssuer):
			got = string(x.Value)
		case x.Id.Equal(oidIssuerV2) && got == "":
			var s string
			if _, err := asn1.UnmarshalWithParams(x.Value, &s, "utf8"); err == nil {
				got = s
			}
		}
	}
	if got != issuer {
		return errorf("sigstore", ErrUntrusted, "the certificate's OIDC issuer is %s, not %s", quoteShort(got), quoteShort(issuer))
	}
	var sans []string
	sans = append(sans, c.EmailAddresses...)
	for _, u := range c.URIs {
		sans = append(sans, u.String())
	}
	if slices.Contains(sans, identity) {
		return nil
	}
	return errorf("sigstore", ErrUntrusted, "the certificate's identity is %s, not %s", quoteShort(strings.Join(sans, ", ")), quoteShort(identity))
}

// checkEntryBody checks that the log entry (dsse 0.0.1) records this
// envelope: its payload's SHA-256, and its signatures with this certificate.
func (b *Bundle) checkEntryBody() error {
	d := &decoder{op: "sigstore"}
	bad := func(format string, args ...any) error {
		return errorf(d.op, ErrUntrusted, "the log entry does not record this envelope: "+format, args...)
	}
	body := d.object("log entry body", b.tlog.body)
	if d.err != nil {
		return d.err
	}
	kind := body.text("kind")
	ver := body.text("apiVersion")
	if kind != b.tlog.kind || ver != b.tlog.version {
		return bad("it is of kind %s %s", quoteShort(kind), quoteShort(ver))
	}
	spec := body.obj("spec")
	ph := spec.obj("payloadHash")
	if d.err != nil {
		return d.err
	}
	alg := ph.text("algorithm")
	val := ph.text("value")
	sum := sha256.Sum256(b.Payload)
	if alg != "sha256" || val != hex.EncodeToString(sum[:]) {
		return bad("payload hash %s:%s, the payload's is sha256:%x", quoteShort(alg), quoteShort(val), sum)
	}
	sigs := spec.list("signatures")
	if d.err != nil {
		return d.err
	}
	if len(sigs) != len(b.Signatures) {
		return bad("%d signatures, the envelope has %d", len(sigs), len(b.Signatures))
	}
	for i, raw := range sigs {
		o := d.object(body.where, raw)
		sig := o.b64("signature")
		ver := o.b64("verifier")
		if d.err != nil {
			return d.err
		}
		blk, _ := pem.Decode(ver)
		if !bytes.Equal(sig, b.Signatures[i]) || blk == nil || !bytes.Equal(blk.Bytes, b.Certificates[0].Raw) {
			return bad("signature %d or its certificate differs", i)
		}
	}
	return nil
}
