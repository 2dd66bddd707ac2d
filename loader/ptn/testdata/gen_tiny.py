"""Writes testdata/tiny.ptn as ExecuTorch's exir/_serialize/_ptn.py lays a
package out: a ZIP_STORED zip (allowZip64) of program.ptg written with
writestr, program.safetensors streamed through ZipFile.open(name, "w")
(owners in sorted key order, header space-padded to a multiple of 8) and
aliases.json (json.dumps(indent=2, sort_keys=True)). program.ptg is
compiled by flatc from tiny.json with edgeload's internal/schema/nptg.fbs.

    pip install safetensors numpy    (flatc from the distribution)
    python3 gen_tiny.py
"""
import json
import os
import subprocess
import tempfile
import zipfile

import numpy as np
from safetensors.numpy import save

here = os.path.dirname(os.path.abspath(__file__))
schema = os.path.join(here, "..", "..", "..", "internal", "schema", "nptg.fbs")

with tempfile.TemporaryDirectory() as tmp:
    subprocess.run(["flatc", "-b", "-o", tmp, schema, os.path.join(here, "tiny.json")], check=True)
    ptg = open(os.path.join(tmp, "tiny.bin"), "rb").read()

# The constants, owners only, in sorted key order; "w2" repeats "w"'s bytes
# and goes to aliases.json, as _dedup does.
consts = {
    "b": np.array([0.5, -0.5], dtype=np.float32),
    "step": np.array(3, dtype=np.int64),
    "w": np.arange(6, dtype=np.float32).reshape(2, 3),
}
st = save(dict(sorted(consts.items())))
aliases = {"w2": "w"}

with zipfile.ZipFile(os.path.join(here, "tiny.ptn"), "w", zipfile.ZIP_STORED, allowZip64=True) as z:
    z.writestr("program.ptg", ptg)
    with z.open("program.safetensors", "w") as f:
        f.write(st)
    z.writestr("aliases.json", json.dumps(aliases, indent=2, sort_keys=True))

# What the test compares with, computed from the zip's own local header and
# the safetensors header: each tensor's absolute offset, size, dtype code,
# shape and sha256 (an alias with its owner's bytes).
import hashlib
import struct

raw = open(os.path.join(here, "tiny.ptn"), "rb").read()
with zipfile.ZipFile(os.path.join(here, "tiny.ptn")) as z:
    info = z.getinfo("program.safetensors")
n, m = struct.unpack_from("<HH", raw, info.header_offset + 26)
start = info.header_offset + 30 + n + m
(hlen,) = struct.unpack_from("<Q", raw, start)
header = json.loads(raw[start + 8 : start + 8 + hlen])
want = {}
for name, t in header.items():
    if name == "__metadata__":
        continue
    b, e = t["data_offsets"]
    off = start + 8 + hlen + b
    want[name] = {"dtype": t["dtype"], "shape": t["shape"], "offset": off, "nbytes": e - b,
                  "sha256": hashlib.sha256(raw[off : off + e - b]).hexdigest()}
for alias, owner in aliases.items():
    want[alias] = want[owner]
with open(os.path.join(here, "tiny.expected.json"), "w") as f:
    json.dump(want, f, indent=1, sort_keys=True)
