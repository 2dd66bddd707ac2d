"""Greedy decoding in llama.cpp (llama-cpp-python, mmap on), timed token by
token, for bench/cmd/decodebench: the anchor (c).

    python3 llamacpp.py MODEL IDS N THREADS

prints the generated token ids on one line and then one JSON line:
{"pass_ms": [...]} with the milliseconds of each pass (the prompt's, then
one per generated token but the last, as examples/llama counts them).

llama.cpp runs with its weights memory-mapped and multiplied in place: its
extra buffer types are off (llama_model_params.use_extra_bufts), as in
examples/llama/testdata/llamacpp.py, which says why (on this machine the
AMX buffer type crashes; others would copy the weights out of the mapping).
"""

import json
import sys
import time

import numpy as np
import llama_cpp
import llama_cpp.llama

_default_params = llama_cpp.llama_model_default_params


def _model_params():
    p = _default_params()
    p.use_extra_bufts = False
    return p


llama_cpp.llama.llama_cpp.llama_model_default_params = _model_params
Llama = llama_cpp.Llama


def main():
    path, ids, n, threads = sys.argv[1], [int(x) for x in sys.argv[2].split(",")], int(sys.argv[3]), int(sys.argv[4])
    llm = Llama(model_path=path, n_ctx=max(64, len(ids) + n + 1), n_batch=max(8, len(ids)), n_threads=threads,
                n_threads_batch=threads, use_mmap=True, use_mlock=False, logits_all=True, verbose=False)
    out, ms = [], []
    tok = None
    for i in range(n):
        feed = ids if i == 0 else [tok]
        t0 = time.perf_counter()
        llm.eval(feed)
        logits = np.asarray(llm.scores[llm.n_tokens - 1])
        tok = int(np.argmax(logits))
        ms.append((time.perf_counter() - t0) * 1000)
        out.append(tok)
    print(" ".join(str(t) for t in out))
    print(json.dumps({"pass_ms": ms}))


main()
