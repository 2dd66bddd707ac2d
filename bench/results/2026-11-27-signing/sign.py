# Signs a model with model-signing 1.1.1's API, key method, files or shards
# serialization (the 1.1.1 CLI cannot make shard bundles).
# usage: sign.py MODEL SIG PRIVATE_KEY (files | shards [SHARD_SIZE])
import pathlib, sys
import model_signing
model, sig, key, method = sys.argv[1:5]
h = model_signing.hashing.Config()
if method == "shards":
    size = int(sys.argv[5]) if len(sys.argv) > 5 else 1_000_000_000
    h = h.use_shard_serialization(shard_size=size)
else:
    h = h.use_file_serialization()
(model_signing.signing.Config()
 .use_elliptic_key_signer(private_key=pathlib.Path(key))
 .set_hashing_config(h)
 .sign(pathlib.Path(model), pathlib.Path(sig)))
print("Signing succeeded")
