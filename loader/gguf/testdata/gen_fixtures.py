#!/usr/bin/env python3
"""Writes the GGUF fixtures of loader/gguf/testdata with gguf-py's GGUFWriter
(pip install gguf numpy; made with gguf 0.19.0, numpy 2.x) and expected.json,
the values this script gave the writer: per file the version, alignment,
metadata (key, value type, value or array summary), and per tensor the name,
ggml type id, numpy shape, nbytes, the offset relative to the data section
(the running padded sum the writer documents) and the SHA-256 of the bytes
given to the writer. The data section's start is taken from gguf-py's
GGUFReader, and every tensor's absolute offset and bytes are checked against
it here.

Run from this folder: python3 gen_fixtures.py
"""
import hashlib
import json
import os

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T, GGUFValueType as V

# gguf-py 0.19 gives q8_1 40 bytes a block; ggml's block_q8_1
# (ggml-common.h: two ggml_half and 32 int8) has 36, as FORMATS-gguf.md says.
gguf.GGML_QUANT_SIZES[T.Q8_1] = (32, 36)

rng = np.random.default_rng(36)
QUANTIZABLE = {T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.BF16, T.TQ1_0, T.TQ2_0, T.MXFP4}
NUMPY = {T.F32: np.float32, T.F16: np.float16, T.F64: np.float64,
         T.I8: np.int8, T.I16: np.int16, T.I32: np.int32, T.I64: np.int64}


def pad(x, a):
    return (x + a - 1) // a * a


class Fixture:
    def __init__(self, name, alignment=32, version=3):
        self.name, self.alignment, self.version = name, alignment, version
        self.w = gguf.GGUFWriter(name, arch=None)
        if alignment != 32:
            self.w.add_custom_alignment(alignment)
        self.kvs = []  # (key, type, value or summary)
        self.tensors = []
        self.pos = 0
        if alignment != 32:
            self.kvs.append(["general.alignment", "uint32", alignment])

    def kv(self, key, vtype, val, sub=None):
        self.w.add_key_value(key, val, vtype, sub_type=sub)
        self.kvs.append([key, vtype.name.lower(), summary(val, vtype, sub)])

    def tensor(self, name, qtype, shape):
        blk, size = gguf.GGML_QUANT_SIZES[qtype]
        if qtype in NUMPY:
            data = (rng.standard_normal(shape) * 100).astype(NUMPY[qtype])
            self.w.add_tensor(name, data)
            raw = data.tobytes()
        elif qtype in QUANTIZABLE:
            data = gguf.quants.quantize(rng.standard_normal(shape).astype(np.float32), qtype)
            self.w.add_tensor(name, data, raw_shape=data.shape, raw_dtype=qtype)
            raw = data.tobytes()
        else:  # no quantizer in gguf-py: raw blocks of random bytes
            nbytes = int(np.prod(shape[:-1])) * shape[-1] // blk * size
            data = rng.integers(0, 256, size=(*shape[:-1], shape[-1] // blk * size), dtype=np.uint8)
            self.w.add_tensor(name, data, raw_shape=data.shape, raw_dtype=qtype)
            raw = data.tobytes()
            assert len(raw) == nbytes
        self.tensors.append({"name": name, "type": int(qtype), "shape": list(shape),
                             "nbytes": len(raw), "rel_offset": self.pos,
                             "sha256": hashlib.sha256(raw).hexdigest()})
        self.pos = pad(self.pos + len(raw), self.alignment)

    def write(self):
        w = self.w
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        if self.version != 3:  # v2 and v3 files are the same bytes but the version
            with open(self.name, "r+b") as f:
                f.seek(4)
                f.write(self.version.to_bytes(4, "little"))
        r = gguf.GGUFReader(self.name) if self.version in (2, 3) else None
        start = None
        for t, rt in zip(self.tensors, r.tensors if r else []):
            if start is None:
                start = rt.data_offset - t["rel_offset"]
            assert rt.name == t["name"] and rt.data_offset == start + t["rel_offset"]
            assert hashlib.sha256(bytes(rt.data.tobytes())).hexdigest() == t["sha256"]
        size = os.path.getsize(self.name)
        assert size < 200 << 10, (self.name, size)
        return {"version": self.version, "alignment": self.alignment, "file_size": size,
                "data_start": start, "kv": self.kvs, "tensors": self.tensors}


def summary(val, vtype, sub):
    if vtype != V.ARRAY:
        return val
    if len(val) > 16:
        return {"type": (sub if sub is not None else V.get_type(val[0])).name.lower(), "len": len(val)}
    return [summary(v, V.get_type(v), None) for v in val]


def every_type(name, version):
    f = Fixture(name, version=version)
    f.kv("general.architecture", V.STRING, "test")
    for i, qt in enumerate(gguf.GGML_QUANT_SIZES):
        blk, _ = gguf.GGML_QUANT_SIZES[qt]
        f.tensor(f"t{i}.{qt.name.lower()}", qt, (3, blk * 2))
    return f.write()


def main():
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    out = {}
    out["types-v3.gguf"] = every_type("types-v3.gguf", 3)
    out["types-v2.gguf"] = every_type("types-v2.gguf", 2)

    f = Fixture("values-align64.gguf", alignment=64)
    f.kv("general.architecture", V.STRING, "llama")
    f.kv("v.u8", V.UINT8, 200); f.kv("v.i8", V.INT8, -100)
    f.kv("v.u16", V.UINT16, 60000); f.kv("v.i16", V.INT16, -30000)
    f.kv("v.u32", V.UINT32, 4000000000); f.kv("v.i32", V.INT32, -2000000000)
    f.kv("v.f32", V.FLOAT32, 1e-5); f.kv("v.bool", V.BOOL, True)
    f.kv("v.str", V.STRING, "h\u00e9llo \ufffd"); f.kv("v.u64", V.UINT64, 0x123456789ABCDEF0)
    f.kv("v.i64", V.INT64, -0x123456789ABCDEF0); f.kv("v.f64", V.FLOAT64, 0.1)
    f.kv("v.arr.i16", V.ARRAY, [1, -2, 3], sub=V.INT16)
    f.kv("v.arr.str", V.ARRAY, ["a", "", "ccc"])
    f.kv("v.arr.nested", V.ARRAY, [[1, 2], [3]], sub=V.ARRAY)
    f.kv("v.arr.long", V.ARRAY, list(range(40)), sub=V.UINT8)
    f.tensor("token_embd.weight", T.Q8_0, (4, 64))
    f.tensor("output.weight", T.F32, (3,))
    out[f.name] = f.write()

    f = Fixture("vocab-10k.gguf")
    f.kv("general.architecture", V.STRING, "llama")
    toks = [f"t{i}" for i in range(10000)]
    f.kv("tokenizer.ggml.tokens", V.ARRAY, toks, sub=V.STRING)
    f.kv("tokenizer.ggml.scores", V.ARRAY, [float(-i) for i in range(10000)], sub=V.FLOAT32)
    f.tensor("token_embd.weight", T.F16, (10, 8))
    out[f.name] = f.write()

    # Alignment 1 is a power of two (ggml accepts it) but not a multiple
    # of 8 (the spec): the reader refuses it.
    f = Fixture("align1.gguf", alignment=1)
    f.tensor("a", T.F32, (3,))
    f.tensor("b", T.F32, (5,))
    f.write()
    out["align1.gguf"] = {"refused": "alignment 1"}

    with open("expected.json", "w") as fp:
        json.dump(out, fp, indent=1, sort_keys=True)
        fp.write("\n")


if __name__ == "__main__":
    main()
