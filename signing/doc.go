// Package signing verifies OpenSSF Model Signing (OMS v1.0) signatures:
// a detached Sigstore bundle (a model's .sig) whose DSSE envelope signs an
// in-toto statement listing the SHA-256 of every file of a model, or of
// every fixed-size shard of them, as model-signing writes it.
//
// Bundle.Verify checks the signature against a public key, a certificate
// chain or, offline, a Sigstore trusted root (see TrustedRoot); Verify and
// Manifest.VerifyModel then check a single file or a folder against the
// statement (which files make up a folder is Manifest.Model's doc),
// hashing files and shards in parallel; Check checks a model while a
// reader reads it. It imports only the standard library and knows files
// and digests, nothing of model formats.
//
// It follows the spec, and accepts what model-signing 1.1.1 writes where
// the spec allows it: a shard_size written as an integral float, a shard
// algorithm "<hash_type>-sharded-<shard_size>", a single file's resource
// named "." or by its base name, resources in any order. It is stricter
// where the spec is: JSON members are matched by their exact name, an
// expired certificate is refused, and blake2b, blake3 and the pre-1.0
// predicate are ErrUnsupported. docs/SIGNING.md lists each choice.
//
// Every failure is an *Error naming what failed (the bundle, the
// statement, the key, the certificate, the Sigstore material, the
// signature, a file, a shard [start, end) of a file) and wrapping a
// sentinel (ErrDigest, ErrSignature, ...). With several, Verify reports
// the first in the model's order.
package signing
