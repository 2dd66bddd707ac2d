"""Writes testdata/sharded: a checkpoint split into shards as
huggingface_hub.save_torch_state_dict splits and indexes one, with numpy
arrays in place of torch tensors (torch is not needed).

    pip install safetensors huggingface_hub numpy
    python3 gen_sharded.py
"""
import json
import os

import numpy as np
from huggingface_hub import split_state_dict_into_shards_factory
from safetensors.numpy import save_file

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sharded")
os.makedirs(out, exist_ok=True)

rng = np.random.default_rng(33)
state = {}
for layer in range(3):
    p = f"model.layers.{layer}."
    state[p + "attn.q_proj.weight"] = rng.standard_normal((16, 16)).astype(np.float32)
    state[p + "attn.k_proj.weight"] = rng.standard_normal((16, 16)).astype(np.float16)
    state[p + "norm.weight"] = rng.standard_normal((16,)).astype(np.float32)
    state[p + "mlp.bias"] = rng.integers(-100, 100, size=(7,)).astype(np.int8)
state["model.embed_tokens.weight"] = rng.standard_normal((32, 16)).astype(np.float32)
state["model.step"] = np.array(5, dtype=np.int64)
state["lm_head.mask"] = rng.integers(0, 2, size=(5,)).astype(np.bool_)

split = split_state_dict_into_shards_factory(
    state,
    get_storage_size=lambda t: t.nbytes,
    filename_pattern="model{suffix}.safetensors",
    max_shard_size=2500,
)
assert split.is_sharded
# as save_torch_state_dict saves them
for filename, names in split.filename_to_tensors.items():
    save_file({n: state[n] for n in names}, os.path.join(out, filename), metadata={"format": "pt"})
index = {"metadata": {**split.metadata}, "weight_map": split.tensor_to_filename}
with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
    json.dump(index, f, indent=2)
print(len(split.filename_to_tensors), "shards")

# What the test compares with: each tensor's shard, dtype code, shape and
# the sha256 of the bytes it was given.
import hashlib

codes = {np.float32: "F32", np.float16: "F16", np.int8: "I8", np.int64: "I64", np.bool_: "BOOL"}
want = {
    n: {
        "file": split.tensor_to_filename[n],
        "dtype": codes[a.dtype.type],
        "shape": list(a.shape),
        "sha256": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest(),
    }
    for n, a in state.items()
}
with open(os.path.join(os.path.dirname(out), "sharded-expected.json"), "w") as f:
    json.dump(want, f, indent=1, sort_keys=True)
