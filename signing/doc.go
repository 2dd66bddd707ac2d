// Package signing verifies OpenSSF Model Signing (OMS v1.0) signatures:
// a detached Sigstore bundle (a model's .sig) whose DSSE envelope signs an
// in-toto statement listing the digest of every file of the model, or of
// every fixed-size shard of them. It checks the signature against a key,
// a certificate chain or, offline, a Sigstore trusted root, and then the
// model (a file, or a folder such as a .pte beside its .ptd, or a
// safetensors index beside its shards) against the statement.
//
// It imports only the standard library and sits beside package loader,
// below stream: it knows files and digests, nothing of model formats.
package signing
