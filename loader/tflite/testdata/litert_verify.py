"""Asks LiteRT whether mutated copies of a .tflite file load. Used by
loader/tflite's TestLiteRTVerifierSweep.

Usage: python3 litert_verify.py FILE < MUTATIONS

Each input line is one mutation of FILE: "OFFSET HEX" (the bytes HEX written
at OFFSET) or "cut N" (the first N bytes). For each it builds
Interpreter(model_content=...), which runs the FlatBuffer verifier
(FlatBufferModel::VerifyAndBuildFromBuffer: flatbuffers::Verifier with its
default options over the whole buffer, then the model's own checks) and
the InterpreterBuilder, and prints one line, flushed:

  ok               the interpreter was built
  flatbuffer       the FlatBuffer verifier refused the buffer
  build MESSAGE    the verifier accepted it; building the interpreter failed
"""
import sys

from ai_edge_litert.interpreter import Interpreter


def main():
    base = open(sys.argv[1], "rb").read()
    for line in sys.stdin:
        f = line.split()
        if f[0] == "cut":
            b = base[: int(f[1])]
        else:
            off, data = int(f[0]), bytes.fromhex(f[1])
            b = base[:off] + data + base[off + len(data):]
        try:
            Interpreter(model_content=b)
            out = "ok"
        except Exception as e:  # ValueError from the wrapper, RuntimeError
            msg = " ".join(str(e).split())
            out = "flatbuffer" if "not a valid Flatbuffer buffer" in msg else "build " + msg[:200]
        sys.stdout.write(out + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
