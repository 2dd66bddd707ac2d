"""Runs the LiteRT interpreter on pairs of .tflite files (an original and
its relaid copy) with the same random inputs and compares the outputs bit
for bit. Used by loader/tflite's TestRelayoutLiteRT.

Usage: python3 litert_check.py ORIG COPY [ORIG COPY ...]
Prints one line per pair: "same NAME", "skip NAME: reason" (the original
does not run here), or "DIFF NAME: reason"; exits 1 when any pair differs.
"""
import sys

import numpy as np
from ai_edge_litert.interpreter import Interpreter


def run(path, seed):
    it = Interpreter(model_path=path)
    it.allocate_tensors()
    rng = np.random.default_rng(seed)
    for d in it.get_input_details():
        shape = [max(int(x), 1) for x in d["shape"]]
        dt = np.dtype(d["dtype"])
        if dt.kind == "f":
            v = rng.standard_normal(shape).astype(dt)
        elif dt.kind == "b":
            v = rng.integers(0, 2, shape).astype(dt)
        else:
            info = np.iinfo(dt)
            v = rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dt)
        if list(d["shape"]) != shape:
            it.resize_tensor_input(d["index"], shape)
            it.allocate_tensors()
        it.set_tensor(d["index"], v)
    it.invoke()
    return [it.get_tensor(d["index"]).tobytes() for d in it.get_output_details()]


def main(args):
    bad = False
    for orig, copy in zip(args[0::2], args[1::2]):
        try:
            want = run(orig, 7)
        except Exception as e:  # the original does not run here
            print("skip %s: %s" % (orig, str(e).splitlines()[0] if str(e) else type(e).__name__))
            continue
        try:
            got = run(copy, 7)
        except Exception as e:
            print("DIFF %s: the copy does not run: %s" % (orig, e))
            bad = True
            continue
        if got != want:
            print("DIFF %s: outputs differ" % orig)
            bad = True
        else:
            print("same %s (%d outputs)" % (orig, len(want)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
