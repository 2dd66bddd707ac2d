# model-signing 1.1.1's API verify of a shard bundle, with the shard size
# passed in: its CLI re-hashes whole files, and its API reads shard_size back
# as a float and fails, so this is the only way 1.1.1 verifies shards.
# usage: verify_shards.py MODEL SIG PUBLIC_KEY [SHARD_SIZE]
import pathlib, sys
import model_signing
size = int(sys.argv[4]) if len(sys.argv) > 4 else 1_000_000_000
(model_signing.verifying.Config()
 .use_elliptic_key_verifier(public_key=pathlib.Path(sys.argv[3]))
 .set_hashing_config(model_signing.hashing.Config().use_shard_serialization(shard_size=size))
 .verify(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])))
print("Verification succeeded")
