"""Runs greedy decoding in llama.cpp (llama-cpp-python) for examples/llama's
tests: reads a JSON job on standard input,

    {"model": PATH, "ids": [1, 2, 3], "n": 32, "logits": PATH}

evaluates the prompt as one batch, then n-1 generated tokens one at a time,
each the argmax of the last logits; writes the logits of every position
(prompt and generated, as float32 rows of the vocabulary size) to the
logits path and prints {"tokens": [...], "rows": N, "vocab": V}.

llama.cpp runs as llama-cpp-python configures it by default (memory-mapped
weights, an f16 KV cache, no flash attention) but for one setting: its extra
buffer types are off (llama_model_params.use_extra_bufts), so that the
weights are multiplied by ggml's CPU kernels in place. With them, a build on
a CPU that reports AMX repacks quantized weights for AMX tiles, and on a
virtual machine that does not let a process use them the first quantized
product crashes (SIGSEGV in ggml_backend_amx_mul_mat).
"""

import json
import sys

import numpy as np
import llama_cpp
import llama_cpp.llama

_default_params = llama_cpp.llama_model_default_params


def _model_params():
    p = _default_params()
    p.use_extra_bufts = False
    return p


# Llama() takes its model parameters from this function; it has no argument
# for use_extra_bufts.
llama_cpp.llama.llama_cpp.llama_model_default_params = _model_params
Llama = llama_cpp.Llama


def main():
    job = json.load(sys.stdin)
    ids, n = job["ids"], job["n"]
    llm = Llama(model_path=job["model"], n_ctx=len(ids) + n, n_batch=len(ids), n_threads=1,
                logits_all=True, verbose=False, seed=1)
    llm.eval(ids)
    tokens = []
    for i in range(n):
        tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        tokens.append(tok)
        if i < n - 1:
            llm.eval([tok])
    scores = np.ascontiguousarray(llm.scores[: llm.n_tokens], dtype=np.float32)
    scores.tofile(job["logits"])
    json.dump({"tokens": tokens, "rows": int(scores.shape[0]), "vocab": int(scores.shape[1])}, sys.stdout)


if __name__ == "__main__":
    main()
