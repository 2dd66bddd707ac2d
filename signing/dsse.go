package signing

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"strconv"
)

// pae is DSSE v1's pre-authentication encoding of a payload, the bytes the
// signature covers: "DSSEv1 len(type) type len(payload) payload", lengths
// in decimal.
func pae(payloadType string, payload []byte) []byte {
	b := make([]byte, 0, 32+len(payloadType)+len(payload))
	b = append(b, "DSSEv1 "...)
	b = strconv.AppendInt(b, int64(len(payloadType)), 10)
	b = append(b, ' ')
	b = append(b, payloadType...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(payload)), 10)
	b = append(b, ' ')
	return append(b, payload...)
}

// ecdsaKey returns pub as an ECDSA key on one of the curves OMS v1.0
// signs with (P-256, P-384, P-521).
func ecdsaKey(pub crypto.PublicKey) (*ecdsa.PublicKey, error) {
	k, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("a %T key; OMS v1.0 signs with ECDSA P-256, P-384 or P-521", pub)
	}
	switch k.Curve {
	case elliptic.P256(), elliptic.P384(), elliptic.P521():
		return k, nil
	}
	return nil, fmt.Errorf("an ECDSA key on %s; OMS v1.0 signs with P-256, P-384 or P-521", k.Curve.Params().Name)
}

// verifyECDSA checks an ASN.1 DER ECDSA signature over msg, hashed with
// the hash that goes with the key's curve (SHA-256, SHA-384, SHA-512).
func verifyECDSA(k *ecdsa.PublicKey, msg, sig []byte) bool {
	var digest []byte
	switch k.Curve {
	case elliptic.P384():
		d := sha512.Sum384(msg)
		digest = d[:]
	case elliptic.P521():
		d := sha512.Sum512(msg)
		digest = d[:]
	default:
		d := sha256.Sum256(msg)
		digest = d[:]
	}
	return ecdsa.VerifyASN1(k, digest, sig)
}

// verifyEnvelope checks the bundle's first DSSE signature with pub.
func (b *Bundle) verifyEnvelope(pub crypto.PublicKey) error {
	k, err := ecdsaKey(pub)
	if err != nil {
		return errorf("signature", ErrUnsupported, "the signer's key is %v", err)
	}
	if !verifyECDSA(k, pae(b.PayloadType, b.Payload), b.Signatures[0]) {
		return errorf("signature", ErrSignature, "the ECDSA %s signature over the DSSE envelope does not verify with the signer's key (the statement was altered, or another key signed it)", k.Curve.Params().Name)
	}
	return nil
}
