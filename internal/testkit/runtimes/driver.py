"""Runs model files in the upstream runtimes for edgeload's runtime checks.

The Go tests of package runtimes start this script with the interpreter of
the runtimes' virtual environment (EDGELOAD_RUNTIMES_PYTHON) as

    python driver.py COMMAND < job.json > result.json

and compare what it reports for an original file and for its repacked
variants. Every command reads one JSON job on standard input and writes one
JSON result on standard output; the runtimes' own logs go to standard error.
Outputs are reported as digests of their raw bytes (sha256), so "same output"
means bit-identical.

Commands:
  versions   the versions of the installed runtimes
  pte        load programs with ExecuTorch's portable runtime (pybindings)
             and run each method on fixed inputs
  bundled    run the test suites of bundled programs (.bpte), optionally
             with the embedded program replaced by another one
  time-load  time ExecuTorch's Program::load through the bindings
  tflite     run .tflite models with LiteRT's interpreter
  gguf       load .gguf models with llama.cpp and evaluate fixed tokens
"""

import hashlib
import json
import os
import sys
import time
import traceback
import warnings

warnings.simplefilter("ignore")
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def digest_value(v):
    """Describes one output: a tensor by dtype, shape and the sha256 of its bytes."""
    import torch

    if isinstance(v, torch.Tensor):
        t = v.detach().contiguous().cpu()
        raw = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""
        return {
            "kind": "tensor",
            "dtype": str(t.dtype).replace("torch.", ""),
            "shape": list(t.shape),
            "sha256": hashlib.sha256(raw).hexdigest(),
            "head": [float(x) for x in t.flatten()[:4].to(torch.float64).tolist()]
            if t.dtype != torch.bool
            else [bool(x) for x in t.flatten()[:4].tolist()],
        }
    return {"kind": type(v).__name__, "repr": repr(v)}


# ExecuTorch ScalarType codes (runtime/core/portable_type/scalar_type.h).
SCALAR = {
    0: "uint8",
    1: "int8",
    2: "int16",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "float64",
    11: "bool",
    15: "bfloat16",
}


def make_input(torch, sizes, code, seed):
    """A fixed input: the same sizes, dtype and seed give the same bytes."""
    g = torch.Generator().manual_seed(seed)
    name = SCALAR.get(code)
    if name is None:
        raise ValueError("input dtype code %d not supported by the driver" % code)
    dt = getattr(torch, name)
    if dt.is_floating_point:
        return (torch.randn(sizes, generator=g, dtype=torch.float32) * 2).to(dt)
    if dt == torch.bool:
        return torch.randint(0, 2, sizes, generator=g).to(torch.bool)
    return torch.randint(0, 8, sizes, generator=g, dtype=torch.int64).to(dt)


def method_inputs(torch, meta, method, seed):
    ins = []
    for i in range(meta.num_inputs()):
        ti = meta.input_tensor_meta(i)
        s = int(hashlib.sha256(("%d/%s/%d" % (seed, method, i)).encode()).hexdigest()[:8], 16)
        ins.append(make_input(torch, list(ti.sizes()), int(ti.dtype()), s))
    return ins


def cmd_versions(job):
    out = {}
    for mod in ("torch", "executorch", "ai_edge_litert", "llama_cpp", "gguf"):
        try:
            m = __import__(mod)
            out[mod] = getattr(m, "__version__", "installed")
        except Exception as e:  # noqa: BLE001
            out[mod] = "absent: %s" % e
    if out.get("executorch", "").startswith("installed"):
        from executorch.version import __version__

        out["executorch"] = __version__
    if out.get("ai_edge_litert", "").startswith("installed"):
        from importlib.metadata import version

        out["ai_edge_litert"] = version("ai-edge-litert")
    return out


def run_pte(pl, torch, run):
    res = {"name": run["name"], "methods": {}}
    try:
        m = pl._load_for_executorch(run["program"], data_path=run.get("data"))
        names = sorted(m.method_names())
    except Exception as e:  # noqa: BLE001
        res["load_error"] = str(e)
        return res
    only = run.get("methods")
    for name in names:
        if only and name not in only:
            continue
        r = {}
        res["methods"][name] = r
        try:
            meta = m.method_meta(name)
            r["meta"] = repr(meta)
            ins = method_inputs(torch, meta, name, run.get("seed", 1))
            r["inputs"] = [digest_value(x)["sha256"] for x in ins]
            r["outputs"] = []
            for _ in range(run.get("iterations", 1)):
                outs = m.run_method(name, [x.clone() for x in ins])
                r["outputs"].append([digest_value(o) for o in outs])
        except Exception as e:  # noqa: BLE001
            r["error"] = str(e)
    return res


def isolated(fn, run):
    """Runs fn(run) in a forked child, so that a runtime that crashes on one
    file is reported as that file's error instead of ending the driver."""
    log("driver: %s" % run.get("name"))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            res = fn(run)
        except Exception:  # noqa: BLE001
            res = {"name": run.get("name"), "error": traceback.format_exc()}
        with os.fdopen(w, "w") as f:
            json.dump(res, f)
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) or not data:
        why = "signal %d" % os.WTERMSIG(status) if os.WIFSIGNALED(status) else "status %d" % os.WEXITSTATUS(status)
        return {"name": run.get("name"), "load_error": "the runtime crashed (%s)" % why, "error": "crashed"}
    return json.loads(data)


def cmd_pte(job):
    import torch
    from executorch.extension.pybindings import portable_lib as pl

    return {"runs": [isolated(lambda r: run_pte(pl, torch, r), run) for run in job["runs"]]}


def run_bundled(pl, torch, run):
    from executorch.devtools.bundled_program.serialize import (
        _bundled_program_schema_to_flatbuffer,
        deserialize_from_flatbuffer_to_bundled_program,
    )

    res = {"name": run["name"], "cases": []}
    raw = open(run["bpte"], "rb").read()
    bp = deserialize_from_flatbuffer_to_bundled_program(raw)
    res["embedded_program_sha256"] = hashlib.sha256(bytes(bp.program)).hexdigest()
    if run.get("extract_to"):
        with open(run["extract_to"], "wb") as f:
            f.write(bytes(bp.program))
    if run.get("program"):
        bp.program = open(run["program"], "rb").read()
        raw = _bundled_program_schema_to_flatbuffer(bp)
    res["program_sha256"] = hashlib.sha256(bytes(bp.program)).hexdigest()
    try:
        bm = pl._load_bundled_program_from_buffer(raw)
    except Exception as e:  # noqa: BLE001
        res["load_error"] = str(e)
        return res
    for suite in bp.method_test_suites:
        for i, case in enumerate(suite.test_cases):
            c = {"method": suite.method_name, "index": i}
            try:
                outs = bm.verify_result_with_bundled_expected_output(suite.method_name, i)
                c["outputs"] = [digest_value(o) for o in outs]
                # Beside the runtime's tolerance check: the outputs equal the
                # bundled expected outputs bit for bit.
                want = [_expected_sha(x) for x in case.expected_outputs]
                c["exact"] = want == [digest_value(o).get("sha256") for o in outs]
                c["ok"] = True
            except Exception as e:  # noqa: BLE001
                c["ok"] = False
                c["error"] = str(e)
            res["cases"].append(c)
    return res


def _expected_sha(value):
    """The sha256 of a bundled expected output's bytes (a schema Value)."""
    data = getattr(getattr(value, "val", None), "data", None)
    return hashlib.sha256(bytes(data)).hexdigest() if data is not None else repr(value)


def cmd_bundled(job):
    import torch
    from executorch.extension.pybindings import portable_lib as pl

    return {"runs": [isolated(lambda r: run_bundled(pl, torch, r), run) for run in job["runs"]]}


def cmd_time_load(job):
    """Times Program::load through the bindings: median ns a call, and the
    median of a call that does nothing beside the binding's own overhead."""
    from executorch.extension.pybindings import portable_lib as pl

    n = job.get("iterations", 200)
    out = {"runs": []}
    for run in job["runs"]:
        r = {"name": run["name"]}
        for mode in ("Minimal", "InternalConsistency"):
            ver = getattr(pl.Verification, mode)
            samples = []
            for _ in range(n):
                t0 = time.perf_counter_ns()
                p = pl._load_program(run["program"], program_verification=ver)
                t1 = time.perf_counter_ns()
                del p
                samples.append(t1 - t0)
            samples.sort()
            r["program_load_" + mode + "_ns"] = samples[len(samples) // 2]
        out["runs"].append(r)
    base = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        pl._threadpool_get_thread_count()
        t1 = time.perf_counter_ns()
        base.append(t1 - t0)
    base.sort()
    out["binding_call_overhead_ns"] = base[len(base) // 2]
    out["iterations"] = n
    return out


def cmd_tflite(job):
    return {"runs": [isolated(run_tflite, run) for run in job["runs"]]}


def run_tflite(run):
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    r = {"name": run["name"]}
    try:
        it = Interpreter(model_path=run["model"])
        it.allocate_tensors()
        rng = np.random.default_rng(run.get("seed", 1))
        r["inputs"] = []
        for d in it.get_input_details():
            dt = np.dtype(d["dtype"])
            shape = [int(s) for s in d["shape"]]
            if dt.kind == "f":
                x = rng.standard_normal(shape).astype(dt)
            elif dt.kind == "b":
                x = rng.integers(0, 2, shape).astype(dt)
            else:
                x = rng.integers(0, 8, shape).astype(dt)
            it.set_tensor(d["index"], x)
            r["inputs"].append(hashlib.sha256(x.tobytes()).hexdigest())
        it.invoke()
        r["outputs"] = []
        for d in it.get_output_details():
            y = it.get_tensor(d["index"])
            r["outputs"].append(
                {
                    "kind": "tensor",
                    "dtype": str(y.dtype),
                    "shape": list(y.shape),
                    "sha256": hashlib.sha256(np.ascontiguousarray(y).tobytes()).hexdigest(),
                }
            )
    except Exception as e:  # noqa: BLE001
        r["error"] = str(e)
    return r


def cmd_gguf(job):
    return {"runs": [isolated(run_gguf, run) for run in job["runs"]]}


def run_gguf(run):
    import numpy as np
    from llama_cpp import Llama

    r = {"name": run["name"]}
    try:
        if run.get("vocab_only"):
            llm = Llama(model_path=run["model"], vocab_only=True, verbose=False)
            toks = llm.tokenize(run.get("text", "Hello, world! 123").encode())
            r["outputs"] = [{"kind": "tokens", "repr": repr(toks)}]
            return r
        llm = Llama(model_path=run["model"], n_ctx=64, n_threads=1, logits_all=True, verbose=False, seed=1)
        toks = run.get("tokens", [1, 2, 3, 4])
        llm.eval(toks)
        logits = np.ascontiguousarray(np.array(llm.scores[: len(toks)], dtype=np.float32))
        r["outputs"] = [
            {
                "kind": "tensor",
                "dtype": "float32",
                "shape": list(logits.shape),
                "sha256": hashlib.sha256(logits.tobytes()).hexdigest(),
            }
        ]
    except Exception as e:  # noqa: BLE001
        r["error"] = str(e)
    return r


COMMANDS = {
    "versions": cmd_versions,
    "pte": cmd_pte,
    "bundled": cmd_bundled,
    "time-load": cmd_time_load,
    "tflite": cmd_tflite,
    "gguf": cmd_gguf,
}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in COMMANDS:
        log("usage: driver.py {%s} < job.json" % ",".join(sorted(COMMANDS)))
        return 2
    job = json.load(sys.stdin) if sys.argv[1] != "versions" else {}
    # The runtimes print to file descriptor 1 from C++ too: keep it for the
    # JSON result alone by pointing it at standard error while they run.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    try:
        result = COMMANDS[sys.argv[1]](job)
    except Exception:  # noqa: BLE001
        log(traceback.format_exc())
        return 1
    json.dump(result, out)
    out.write("\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
