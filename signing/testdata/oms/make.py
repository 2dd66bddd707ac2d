# Makes the OMS fixtures of this folder with model-signing 1.1.1 and records
# what model_signing says of each variant (verdicts.json).
#
#   python3 -m venv /tmp/oms && /tmp/oms/bin/pip install model-signing==1.1.1 pyopenssl
#   cd signing/testdata/oms && /tmp/oms/bin/python make.py
#
# cases.json describes each case: the model (its regular files are written
# to models/CASE/; names git cannot hold, such as .git/ and symbolic links,
# are the case's "extra" entries, made at test time), how it is signed
# (CASE.sig) and its variants: changes made to the signed model, each with
# the verdict the OMS v1.0 spec requires ("spec"). make.py applies every
# variant, runs model_signing verify on it and writes its exit status and
# message to verdicts.json. Rerunning makes new keys and signatures.
import base64, json, os, pathlib, shutil, struct, subprocess, sys, tempfile

import model_signing
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

HERE = pathlib.Path(__file__).resolve().parent
CLI = str(pathlib.Path(sys.executable).parent / "model_signing")


def safetensors(tensors):
    """A safetensors file: u64 header length, JSON header, data."""
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def f32(n, seed):
    return b"".join(struct.pack("<f", ((i * 37 + seed) % 101) / 7.0) for i in range(n))


def st_index():
    s1 = safetensors({"embed.weight": ("F32", [16, 32], f32(512, 1))})
    s2 = safetensors({"lm_head.weight": ("F32", [16, 40], f32(640, 2)), "norm.weight": ("F32", [32], f32(32, 3))})
    n1, n2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    index = {"metadata": {"total_size": 4 * (512 + 640 + 32)},
             "weight_map": {"embed.weight": n1, "lm_head.weight": n2, "norm.weight": n2}}
    return {n1: s1, n2: s2, "model.safetensors.index.json": json.dumps(index, indent=2).encode() + b"\n",
            "config.json": b'{"model_type": "tiny"}\n'}


def build(root, files, extra):
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    for e in extra:
        apply(root, e)


def apply(root, op):
    p = root / op["path"]
    kind = op["op"]
    if kind == "write":
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.is_symlink():
            p.unlink()
        p.write_bytes(op["data"].encode())
    elif kind == "flip":
        b = bytearray(p.read_bytes())
        b[op["offset"]] ^= 1
        p.write_bytes(bytes(b))
    elif kind == "remove":
        p.unlink()
    elif kind == "truncate":
        os.truncate(p, op["size"])
    elif kind == "link":
        p.parent.mkdir(parents=True, exist_ok=True)
        p.symlink_to(op["target"])
    else:
        raise SystemExit(f"unknown op {kind}")


def sign(case, root, sig):
    s = case["sign"]
    h = model_signing.hashing.Config()
    if s["serialization"] == "shards":
        h = h.use_shard_serialization(shard_size=s["shard_size"], allow_symlinks=s.get("allow_symlinks", False))
    else:
        h = h.use_file_serialization(allow_symlinks=s.get("allow_symlinks", False))
    h = h.set_ignored_paths(paths=s.get("ignore_paths", []))
    h.set_allow_symlinks(s.get("allow_symlinks", False))
    (model_signing.signing.Config()
     .use_elliptic_key_signer(private_key=HERE / "keys" / f"{s['key']}.priv.pem")
     .set_hashing_config(h)
     .sign(root, sig))


def verify(case, root, sig, variant):
    """model_signing's verdict: the CLI for files; for shards, which the 1.1.1
    CLI cannot verify, the API with the shard size passed in."""
    s = case["sign"]
    pub = HERE / "keys" / f"{s['key']}.pub.pem"
    unsigned = variant.get("ignore_unsigned", False)
    if s["serialization"] == "files":
        cmd = [CLI, "verify", "key", str(root), "--signature", str(sig), "--public_key", str(pub)]
        if unsigned:
            cmd.append("--ignore_unsigned_files")
        if s.get("allow_symlinks"):
            cmd.append("--allow_symlinks")
        r = subprocess.run(cmd, capture_output=True, text=True)
        return r.returncode, (r.stdout + r.stderr).strip()
    try:
        (model_signing.verifying.Config()
         .use_elliptic_key_verifier(public_key=pub)
         .set_hashing_config(model_signing.hashing.Config().use_shard_serialization(
             shard_size=s["shard_size"], allow_symlinks=s.get("allow_symlinks", False)))
         .set_ignore_unsigned_files(unsigned)
         .verify(root, sig))
        return 0, "Verification succeeded (API, shard size given)"
    except Exception as e:
        return 1, f"Verification failed with error (API, shard size given): {e}"


def keys():
    d = HERE / "keys"
    d.mkdir(exist_ok=True)
    for name, curve in [("ec-p256", ec.SECP256R1()), ("ec-p384", ec.SECP384R1()), ("ec-p521", ec.SECP521R1())]:
        k = ec.generate_private_key(curve)
        (d / f"{name}.priv.pem").write_bytes(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        (d / f"{name}.pub.pem").write_bytes(k.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))


MODELS = {
    "st-index": st_index,
    "tree": lambda: {"weights/a.bin": f32(300, 4), "weights/b.bin": f32(200, 5),
                     "sub/notes.txt": b"signed\n", "logs/run.txt": b"ignored at signing\n", "empty.txt": b""},
    "single": lambda: {"tiny.bin": f32(700, 6)},
    "colon": lambda: {"a:b:c.bin": f32(600, 7), "plain.bin": f32(10, 8)},
    "links": lambda: {"weights.bin": f32(400, 9), "dir/inner.bin": f32(50, 10)},
}


def main():
    cases = json.loads((HERE / "cases.json").read_text())
    keys()
    shutil.rmtree(HERE / "models", ignore_errors=True)
    verdicts = {}
    for case in cases:
        name = case["name"]
        files = MODELS[case["model"]]()
        mdir = HERE / "models" / case["model"]
        if not mdir.exists():
            build(mdir, files, [])
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp) / case["model"]
            build(root, files, case.get("extra", []))
            target = root / case["single"] if "single" in case else root
            sig = HERE / f"{name}.sig"
            sign(case, target, sig)
            for v in case["variants"]:
                with tempfile.TemporaryDirectory() as vtmp:
                    vroot = pathlib.Path(vtmp) / case["model"]
                    shutil.copytree(root, vroot, symlinks=True)
                    for op in v.get("ops", []):
                        apply(vroot, op)
                    vtarget = vroot / case["single"] if "single" in case else vroot
                    rc, msg = verify(case, vtarget, sig, v)
                    verdicts[f"{name}/{v['name']}"] = {"model_signing_rc": rc, "model_signing": msg[:400], "spec": v["spec"]}
                    print(f"{name}/{v['name']}: rc {rc} (spec: {v['spec']}) {msg[:160]}")
    (HERE / "verdicts.json").write_text(json.dumps(verdicts, indent=1, sort_keys=True) + "\n")


main()
