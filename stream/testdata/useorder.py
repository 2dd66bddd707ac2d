#!/usr/bin/env python3
"""Prints the use order of a .pte's first method without edgeload's code:
the weights (tensor values with data_buffer_idx > 0) in the order the
KernelCall and DelegateCall arguments of its chains first name them (the
items of a TensorList or OptionalTensorList argument included), then the
weights no instruction uses, in value order.

    python3 stream/testdata/useorder.py ../shared/models/pte/arduino-keyword-spotting.pte

needs flatc (flatbuffers-compiler) and reads internal/schema/program.fbs.
The value indices it prints are the N of the tensor names
"forward/values/N" (TestRealUseOrder, cmd/edgeload TestStreamRealOrder).
"""
import json, os, struct, subprocess, sys, tempfile

path = sys.argv[1]
schema = os.path.join(os.path.dirname(__file__), "..", "..", "internal", "schema", "program.fbs")
b = open(path, "rb").read()
assert b[4:8] == b"ET12" and b[8:12] == b"eh00", "an ET12 program with an eh00 header"
program_size = struct.unpack_from("<Q", b, 16)[0]
with tempfile.TemporaryDirectory() as d:
    open(os.path.join(d, "prog.bin"), "wb").write(b[:program_size])
    subprocess.check_call(["flatc", "--json", "--strict-json", "--raw-binary", "-o", d, schema, "--", os.path.join(d, "prog.bin")])
    prog = json.load(open(os.path.join(d, "prog.json")))
plan = prog["execution_plan"][0]
values = plan["values"]
weights = [i for i, v in enumerate(values) if v.get("val_type") == "Tensor" and v["val"].get("data_buffer_idx", 0) > 0]
order = []

def use(a):
    v = values[a]
    if v.get("val_type") == "Tensor":
        if a in weights and a not in order:
            order.append(a)
    elif v.get("val_type") in ("TensorList", "OptionalTensorList"):
        for x in v["val"].get("items", []):
            if x >= 0:
                use(x)

for chain in plan["chains"]:
    for ins in chain["instructions"]:
        if ins["instr_args_type"] in ("KernelCall", "DelegateCall"):
            for a in ins["instr_args"].get("args", []):
                use(a)
print(plan["name"], "used:", order)
print(plan["name"], "unused:", [i for i in weights if i not in order])
