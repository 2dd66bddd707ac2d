"""Runs model files in the upstream runtimes for edgeload's runtime checks.

The Go tests of package runtimes start this script with the interpreter of
the runtimes' virtual environment (EDGELOAD_RUNTIMES_PYTHON) as

    python driver.py COMMAND < job.json > result.json

and compare what it reports for an original file and for its repacked
variants. Every command reads one JSON job on standard input and writes one
JSON result on standard output; the runtimes' own logs go to standard error.
Outputs are reported as digests of their raw bytes (sha256), so "same output"
means bit-identical. Every model runs on several input sets (the job's
"seeds", default 1, 2, 3), each made deterministically from its seed, so that
a weight which one input leaves unused, or a quantized output one input
saturates, still shows in the outputs of another.

Commands:
  versions   the versions of the installed runtimes
  pte        load programs with ExecuTorch's portable runtime (pybindings)
             and run each method on each input set
  bundled    run the test suites of bundled programs (.bpte), optionally
             with the embedded program replaced by another one
  time-load  time ExecuTorch's Program::load through the bindings
  tflite     run .tflite models with LiteRT's interpreter on each input set
  gguf       load .gguf models with llama.cpp and evaluate each token set
             (tokenize each text, for a vocabulary-only file)

Each file runs in a forked child with a time limit, its standard output and
error captured: a runtime that crashes or hangs on one file is reported as
that file's error, and where a run fails the tail of the runtime's log
comes back with it ("log"), since the runtimes say why only there (llama.cpp
in particular, whose loader logs its reason and raises a bare "Failed to
load model").
"""

import hashlib
import json
import math
import os
import signal
import sys
import tempfile
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
            "head": head(t.flatten()[:4].tolist()),
        }
    return {"kind": type(v).__name__, "repr": repr(v)}


def head(values):
    """The first values of an output, for the logs: numbers, with the
    non-finite ones as strings (JSON has no NaN)."""
    out = []
    for v in values:
        v = float(v) if not isinstance(v, bool) else v
        out.append(v if isinstance(v, bool) or math.isfinite(v) else repr(v))
    return out


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
            r["sets"] = []
            for seed in seeds(run):
                ins = method_inputs(torch, meta, name, seed)
                st = {"inputs": [digest_value(x)["sha256"] for x in ins], "outputs": []}
                r["sets"].append(st)
                for _ in range(run.get("iterations", 1)):
                    outs = m.run_method(name, [x.clone() for x in ins])
                    st["outputs"].append([digest_value(o) for o in outs])
        except Exception as e:  # noqa: BLE001
            r["error"] = str(e)
    return res


def seeds(run):
    """The seeds of a run's input sets."""
    return run.get("seeds") or [1, 2, 3]


def isolated(fn, run):
    """Runs fn(run) in a forked child, so that a runtime that crashes on one
    file, or runs longer than run["timeout"] seconds (default 120), is
    reported as that file's error instead of ending the driver. The child's
    standard output and error go to a file; when the run fails, its last
    lines are the result's "log"."""
    log("driver: %s" % run.get("name"))
    timeout = int(run.get("timeout", 120))
    logf = tempfile.TemporaryFile()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(logf.fileno(), 1)
        os.dup2(logf.fileno(), 2)
        signal.alarm(timeout)
        try:
            res = fn(run)
        except Exception:  # noqa: BLE001
            res = {"name": run.get("name"), "error": traceback.format_exc()}
        sys.stdout.flush()
        sys.stderr.flush()
        with os.fdopen(w, "w") as f:
            json.dump(res, f)
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) or not data:
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM:
            why = "timed out after %d s" % timeout
        elif os.WIFSIGNALED(status):
            why = "crashed (signal %d)" % os.WTERMSIG(status)
        else:
            why = "crashed (status %d)" % os.WEXITSTATUS(status)
        res = {"name": run.get("name"), "load_error": "the runtime " + why, "error": why}
    else:
        res = json.loads(data)
    if failed(res):
        logf.seek(0)
        res["log"] = logf.read()[-6000:].decode("utf-8", "replace")
    logf.close()
    return res


def failed(res):
    """Whether a run's result holds an error anywhere."""
    if res.get("error") or res.get("load_error"):
        return True
    if any(m.get("error") for m in res.get("methods", {}).values()):
        return True
    return any(not c.get("ok", True) for c in res.get("cases", []))


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


def tflite_input(np, rng, d):
    """One input of a set: normal floats; the whole range of an 8- or 16-bit
    integer (quantized activations); 0..7 for wider integers, which index or
    count."""
    dt = np.dtype(d["dtype"])
    shape = [int(s) for s in d["shape"]]
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(dt)
    if dt.itemsize <= 2:
        info = np.iinfo(dt)
        return rng.integers(int(info.min), int(info.max) + 1, shape).astype(dt)
    return rng.integers(0, 8, shape).astype(dt)


def run_tflite(run):
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    r = {"name": run["name"]}
    try:
        it = Interpreter(model_path=run["model"])
        it.allocate_tensors()
        r["sets"] = []
        for seed in seeds(run):
            rng = np.random.default_rng(seed)
            st = {"inputs": [], "outputs": []}
            r["sets"].append(st)
            for d in it.get_input_details():
                x = tflite_input(np, rng, d)
                it.set_tensor(d["index"], x)
                st["inputs"].append(hashlib.sha256(x.tobytes()).hexdigest())
            it.invoke()
            outs = []
            for d in it.get_output_details():
                y = it.get_tensor(d["index"])
                outs.append(
                    {
                        "kind": "tensor",
                        "dtype": str(y.dtype),
                        "shape": list(y.shape),
                        "sha256": hashlib.sha256(np.ascontiguousarray(y).tobytes()).hexdigest(),
                        "head": head(np.ravel(y)[:4].tolist()),
                    }
                )
            st["outputs"].append(outs)
    except Exception as e:  # noqa: BLE001
        r["error"] = str(e)
    return r


def cmd_gguf(job):
    return {"runs": [isolated(run_gguf, run) for run in job["runs"]]}


# The texts a vocabulary-only file tokenizes, one an input set.
TEXTS = [
    "Hello, world! 123",
    "The quick brown fox jumps over the lazy dog; 3.14159 != 2.71828.",
    "  leading spaces, tabs\tand\nnewlines, ünïcödé, 日本語, emoji \U0001F600",
]


def run_gguf(run):
    """Loads a GGUF model in llama.cpp (verbose: its log is the isolated
    child's, returned when the load fails) and evaluates each token set from
    a fresh state: a few tokens drawn from the vocabulary by the set's seed,
    every position's logits digested. A vocabulary-only file tokenizes the
    texts instead."""
    import numpy as np
    from llama_cpp import Llama

    r = {"name": run["name"], "sets": []}
    try:
        if run.get("vocab_only"):
            llm = Llama(model_path=run["model"], vocab_only=True, verbose=True)
            for i, _ in enumerate(seeds(run)):
                text = TEXTS[i % len(TEXTS)]
                toks = llm.tokenize(text.encode())
                r["sets"].append({"inputs": [text], "outputs": [[{"kind": "tokens", "repr": repr(toks)}]]})
            return r
        llm = Llama(model_path=run["model"], n_ctx=64, n_threads=1, logits_all=True, verbose=True, seed=1)
        for seed in seeds(run):
            rng = np.random.default_rng(seed)
            toks = [int(t) for t in rng.integers(0, llm.n_vocab(), run.get("n_tokens", 4))]
            llm.reset()
            llm.eval(toks)
            logits = np.ascontiguousarray(np.array(llm.scores[: len(toks)], dtype=np.float32))
            out = {
                "kind": "tensor",
                "dtype": "float32",
                "shape": list(logits.shape),
                "sha256": hashlib.sha256(logits.tobytes()).hexdigest(),
                "head": head(logits.ravel()[:4].tolist()),
            }
            r["sets"].append({"inputs": [repr(toks)], "outputs": [[out]]})
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
