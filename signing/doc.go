// Package signing verifies OpenSSF Model Signing (OMS v1.0) signatures:
// a detached Sigstore bundle (a model's .sig) whose DSSE envelope signs an
// in-toto statement listing the digest of every file of a model, or of
// every fixed-size shard of them, as model-signing writes it. It checks
// the signature against a public key, a certificate chain or, offline, a
// Sigstore trusted root (Bundle.Verify), then a model against the
// statement: a single file, or a folder such as a .pte beside its .ptd or
// a safetensors index beside its shards (Verify, Manifest.VerifyModel).
// Files and shards are hashed in parallel, each worker reading through
// one fixed buffer. A reader that checks a model while it reads it uses Check.
//
// It imports only the standard library and works offline. It sits beside
// package loader and knows files and digests, nothing of model formats.
//
// # What it accepts
//
// It follows the spec, and accepts what model-signing 1.1.1 writes where
// the spec allows it:
//
//   - mediaType: any Sigstore bundle type (the schema's prefix); the bundle
//     has exactly mediaType, verificationMaterial and dsseEnvelope, the
//     envelope exactly payload, payloadType (the in-toto type) and
//     signatures. JSON members are matched by their exact name.
//   - key: publicKey.hint, the SHA-256 of the key's PEM text, must name the
//     given key; older bundles' publicKey.rawBytes must be it. An empty
//     tlogEntries (model-signing) or none (Go writers) is accepted.
//   - The first DSSE signature is the one verified, as model-signing does:
//     ECDSA P-256, P-384 or P-521 with SHA-256, -384 or -512 over the
//     DSSE v1 pre-authentication encoding. model-signing's pre-1.0 encoding
//     is not retried, and the pre-1.0 predicate (Digests/v0.1) is refused
//     with ErrUnsupported.
//   - shards: shard_size may be written as a float if its value is an
//     integer (1.1.1 writes 100000.0), and a resource's algorithm may be
//     "<hash_type>-sharded-<shard_size>" (1.1.1) as well as the hash type.
//     A shard name splits at its last two colons, so a path may hold
//     colons (1.1.1 cannot verify those). Resources are looked up by name,
//     in any order (1.1.1 orders shards by number); a file's shards must
//     tile it from 0, each shard_size long but the last.
//   - The subject's root digest is recomputed over the resources in the
//     statement's order and must match.
//   - A single-file model's resource may be named "." (1.1.1) or by the
//     file's base name (the spec).
//   - hash_type sha256 only: blake2b and blake3 are refused with
//     ErrUnsupported.
//   - certificate: the chain (the bundle's certificates after the leaf
//     are intermediates) must lead to one of the given roots with every
//     certificate valid at Trust.Now, so an expired leaf is refused as the
//     spec requires (1.1.1 checks the chain at the leaf's notBefore and
//     accepts it); the leaf must allow digitalSignature or codeSigning.
//   - sigstore: see TrustedRoot.
//
// # Which files belong to a model
//
// A folder's regular files, recursively, named by their "/"-separated
// path from the folder; the folder itself may be a symbolic link. Left
// out: .git, .gitattributes, .github and .gitignore at the top level only
// (a subfolder's .git is signed), each of the statement's ignore_paths
// (an exact path; a folder leaves out what is under it) and the caller's
// (the signature file, when it lies inside); what is left out is not
// looked at. A symbolic link inside the model is an error unless the
// statement allows them (allow_symlinks); then a link to a file is read
// as that file under the link's name, and a link to a folder is not
// followed, as model-signing does. A name that is not valid UTF-8, or a
// file that is neither regular nor a folder, is an error. A file the
// statement lists that the model lacks is ErrMissing; a file of the model
// the statement does not list is ErrUnsigned, unless Options.IgnoreUnsigned
// (it is then not read); with shards, an empty file has no shard and is
// not unsigned. A shard file of another size than its shards cover is
// ErrDigest.
//
// # Errors
//
// Every failure is an *Error naming what failed (the bundle, the
// statement, the key, the certificate, the Sigstore material, the
// signature, a file, a shard [start, end) of a file) and wrapping a
// sentinel (ErrDigest, ErrSignature, ...). With several, Verify reports
// the first in the model's order.
package signing
