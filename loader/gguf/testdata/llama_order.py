"""Records the order in which llama.cpp uses a GGUF model's weights.

It loads each model with llama.cpp (llama-cpp-python's low-level API),
decodes one token with an evaluation callback (cb_eval, which the scheduler
calls for every graph node as it computes it), and lists the model's
tensors in the order the computed nodes first name them as sources. That
is the use order the runtime itself follows, with no knowledge of
edgeload's rules; loader/gguf's TestRealUseOrder compares UseOrder with it.

Run with the runtimes' Python (requirements-runtimes.txt, llama-cpp-python
0.3.36):

    $EDGELOAD_RUNTIMES_PYTHON llama_order.py MODEL.gguf... > llama_order.json

It prints {"MODEL.gguf": [tensor names]} (base names). Only models llama.cpp
can run give an entry.
"""

import ctypes
import json
import os
import sys

import llama_cpp as L

# Offsets of src[] and name[] in struct ggml_tensor (ggml.h) on a 64-bit
# host: type, buffer, ne[4], nb[4], op, op_params[16], flags, then
# src[GGML_MAX_SRC = 10], view_src, view_offs, data, name[64].
OFF_SRC, MAX_SRC, OFF_NAME = 152, 10, 256


def tensor_name(p):
    return ctypes.string_at(p + OFF_NAME, 64).split(b"\0")[0].decode()


def weights(path):
    """The model's tensor names, read with gguf-py when it is there (else
    every name the graph uses that is not an intermediate is kept)."""
    try:
        import gguf
    except ImportError:
        return None
    return {t.name for t in gguf.GGUFReader(path).tensors}


def trace(path):
    mp = L.llama_model_default_params()
    model = L.llama_model_load_from_file(path.encode(), mp)
    if not model:
        return None
    order, seen = [], set()

    @L.ggml_backend_sched_eval_callback
    def cb(t, ask, _):
        if ask:
            return True  # observe every node
        p = ctypes.cast(t, ctypes.c_void_p).value
        for i in range(MAX_SRC):
            s = ctypes.c_void_p.from_address(p + OFF_SRC + 8 * i).value
            if s:
                n = tensor_name(s)
                if n not in seen:
                    seen.add(n)
                    order.append(n)
        return True

    cp = L.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_ubatch = 16, 4, 4
    cp.cb_eval = cb
    ctx = L.llama_init_from_model(model, cp)
    if not ctx:
        return None
    tok = (L.llama_token * 1)(1)
    if L.llama_decode(ctx, L.llama_batch_get_one(tok, 1)) != 0:
        return None
    names = weights(path)
    L.llama_free(ctx)
    L.llama_model_free(model)
    return [n for n in order if names is None or n in names]


def main():
    L.llama_backend_init()
    out = {}
    for path in sys.argv[1:]:
        o = trace(path)
        if o:
            out[os.path.basename(path)] = o
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
