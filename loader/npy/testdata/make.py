"""Writes the .npy fixtures of loader/npy with NumPy's own writer, and
expected.json with what NumPy's reader says of each: dtype, shape, where
the data starts, and the SHA-256 of the array's bytes in C order; for the
files edgeload refuses, why.

Run from this folder: python3 make.py (numpy 1.17 or later).
"""
import hashlib
import io
import json

import numpy as np
from numpy.lib import format as npformat

arrays = {
    "f32.npy": np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
    "f16.npy": np.linspace(-2, 2, 5).astype(np.float16),
    "f64-scalar.npy": np.array(3.5),
    "i8-3d.npy": (np.arange(12) - 6).astype(np.int8).reshape(2, 3, 2),
    "u8.npy": np.arange(7, dtype=np.uint8),
    "i16.npy": np.array([-300, 7, 300], dtype=np.int16),
    "u32.npy": np.array([1, 2**31, 2**32 - 1], dtype=np.uint32),
    "i64-empty.npy": np.zeros((0, 3), dtype=np.int64),
    "bool.npy": np.array([True, False, True, True]),
    "c64.npy": np.array([1 + 2j, -3.5j], dtype=np.complex64),
}
versions = {
    "f32-v2.npy": (np.arange(6, dtype=np.float32), (2, 0)),
    "f32-v3.npy": (np.arange(6, dtype=np.float32), (3, 0)),
}
refused = {
    "f32-big-endian.npy": (np.arange(4, dtype=">f4"), "big-endian"),
    "fortran.npy": (np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)), "Fortran-order"),
    "structured.npy": (np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")]), "structured dtype"),
    "unicode.npy": (np.array(["ab", "c"]), "only numbers and booleans"),
}


def write(name, a, version=None):
    with open(name, "wb") as f:
        if version is None:
            np.save(f, a)
        else:
            npformat.write_array(f, a, version=version)


def describe(name):
    with open(name, "rb") as f:
        major, minor = npformat.read_magic(f)
        read = npformat.read_array_header_1_0 if major == 1 else npformat.read_array_header_2_0
        shape, fortran, dtype = read(f)
        data = f.tell()
    a = np.load(name)
    return {
        "version": f"{major}.{minor}",
        "dtype": a.dtype.name,
        "shape": list(shape),
        "offset": data,
        "nbytes": a.nbytes,
        "sha256": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest(),
    }


expected = {}
for name, a in arrays.items():
    write(name, a)
    expected[name] = describe(name)
for name, (a, version) in versions.items():
    write(name, a, version)
    expected[name] = describe(name)
for name, (a, why) in refused.items():
    write(name, a)
    expected[name] = {"refused": why}
with open("expected.json", "w") as f:
    json.dump(expected, f, indent=1, sort_keys=True)
    f.write("\n")
