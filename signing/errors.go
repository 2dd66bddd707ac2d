package signing

import (
	"errors"
	"fmt"
)

// Sentinel errors, usable with errors.Is on any error the package returns.
var (
	// ErrMalformed: the bundle, its envelope or its statement is not what
	// the OMS v1.0 spec says it must be.
	ErrMalformed = errors.New("malformed signature bundle")
	// ErrUnsupported: the bundle is well formed but uses something this
	// package does not verify (a hash type other than sha256, the legacy
	// v0.1 predicate, a Rekor v2 entry).
	ErrUnsupported = errors.New("unsupported")
	// ErrSignature: the DSSE signature does not verify with the signer's key.
	ErrSignature = errors.New("signature does not verify")
	// ErrUntrusted: the signer is not the one the caller trusts (a key
	// hint that names another key, a certificate chain that does not lead
	// to a trusted root, a Sigstore identity or log proof that does not hold).
	ErrUntrusted = errors.New("signer not trusted")
	// ErrNoTrust: the bundle's method needs trust material the caller did
	// not give (a public key, CA certificates or a Sigstore trusted root).
	ErrNoTrust = errors.New("no trust material for the bundle's method")
	// ErrDigest: a file's or a shard's bytes do not hash to the signed digest.
	ErrDigest = errors.New("digest mismatch")
	// ErrMissing: a file or shard the signature lists is not in the model,
	// or a file is shorter or longer than its signed shards.
	ErrMissing = errors.New("missing from the model")
	// ErrUnsigned: the model holds a file the signature does not cover.
	ErrUnsigned = errors.New("not covered by the signature")
)

// Error is a verification failure: what was being checked, which file and
// byte range of the model when it is about one, and why.
type Error struct {
	Op    string // what failed: "bundle", "statement", "key", "certificate", "sigstore", "signature", "model", "file"
	File  string // the model file, as the signature names it; "" when the error is about no file
	Start int64  // with Shard, the shard's byte range [Start, End)
	End   int64
	Shard bool   // the error is about the shard [Start, End) of File
	Msg   string // what was wrong; the sentinel's text when empty
	Err   error  // the sentinel the error wraps
}

// Error formats the error as
// "signing: file model.ptd shard [0, 100000): digest mismatch: sha256 ab12… read, cd34… signed".
func (e *Error) Error() string {
	s := "signing: " + e.Op
	if e.File != "" {
		s += " " + e.File
	}
	if e.Shard {
		s += fmt.Sprintf(" shard [%d, %d)", e.Start, e.End)
	}
	if e.Msg == "" && e.Err != nil {
		return s + ": " + e.Err.Error()
	}
	return s + ": " + e.Msg
}

// Unwrap returns the sentinel the error belongs to.
func (e *Error) Unwrap() error { return e.Err }

// errorf builds an *Error about no file.
func errorf(op string, sentinel error, format string, args ...any) *Error {
	return &Error{Op: op, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}
