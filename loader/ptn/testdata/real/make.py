"""Make real .ptn packages with ExecuTorch's own writer, and expected.json.

Run with a Python that has executorch (1.5.1, which ships exir/_serialize/_ptn.py
and exir/native) and torch:

    python3 make.py            # writes *.ptn and expected.json here
    python3 make.py NAME...    # remakes the named packages only

(the safetensors package, if importable, lets it round-trip each package through
ExecuTorch's read_ptn too). Reruns change only the zip timestamps of the packages.

Each package comes from a tiny torch model lowered by executorch.exir.native.to_native
and saved by NativeProgramManager.save (write_ptn). quant.ptn is the exception: no
lowering pass sets TensorMeta.quant yet, so its Program is built from ExecuTorch's
schema dataclasses and serialized by ExecuTorch's own serializer (flatc with the
shipped native_graph.fbs), then written by write_ptn.

expected.json is computed on the torch/ExecuTorch side, never by edgeload:
  members   each zip member's data offset (past its local header) and size,
            from Python's zipfile and the local header bytes;
  tensors   every data key (owners and aliases): safetensors dtype, shape, the
            sha256 of the tensor's bytes as torch holds them before saving, and
            the absolute offset and length in the package of its (owner's)
            bytes, from the local header and the safetensors header (checked
            here to hold those bytes);
  aliases   alias -> owner, as the written aliases.json says (checked here to
            hold byte-identical immutable tensors);
  methods   per method, from the NPTG Program object (deserialize_program of the
            bytes ExecuTorch produced): constants in declaration order (data key,
            placeholder name, kind, mutated), mutable buffers, and "reads": the data
            keys its top-level non-placeholder nodes read, in first-read order
            (TensorArg, TensorListArg, present OptionalTensorListArg names that are
            constant placeholders; each data key followed by its AffineGroup keys).
"""

import hashlib
import json
import os
import sys
import zipfile

import torch
import torch.nn as nn

from executorch.backends.native.serialization import graph_serialize as gs
from executorch.backends.native.serialization.schema import (
    AffineGroup,
    Argument,
    Dim,
    Graph,
    InputKind,
    Method,
    NamedArgument,
    NamedTensorRef,
    Node,
    OpKind,
    Output,
    OptionalTensorListArg,
    Program,
    QuantSpec,
    ScalarType,
    TensorArg,
    TensorListArg,
    TensorMeta,
    TensorValue,
)
from executorch.exir._serialize._ptn import _DTYPE_CODES, read_ptn, write_ptn
from executorch.exir.native import to_native

HERE = os.path.dirname(os.path.abspath(__file__))


def sha(t: torch.Tensor) -> str:
    t = t.detach().cpu().contiguous()
    return hashlib.sha256(t.flatten().view(torch.uint8).numpy().tobytes()).hexdigest()


def reads(method) -> list[str]:
    by_name = {c.name: c for c in (method.constants or [])}
    out: list[str] = []

    def add(c):
        keys = [c.data_key]
        q = c.meta.quant
        if q is not None and isinstance(q.scheme, AffineGroup):
            keys.append(q.scheme.scale_data_key)
            if q.scheme.zero_point_data_key:
                keys.append(q.scheme.zero_point_data_key)
        for k in keys:
            if k not in out:
                out.append(k)

    for node in method.graph.nodes:
        if node.op_kind == OpKind.PLACEHOLDER:
            continue
        for na in node.inputs or []:
            v = na.arg.value
            if isinstance(v, TensorArg):
                names = [v.name]
            elif isinstance(v, TensorListArg):
                names = list(v.names)
            elif isinstance(v, OptionalTensorListArg):
                names = [n for n, h in zip(v.names, v.has_value) if h]
            else:
                names = []
            for n in names:
                if n in by_name:
                    add(by_name[n])
    return out


def describe(name: str, ptg: bytes, constants: dict, path: str) -> dict:
    program = gs.deserialize_program(ptg)
    with open(path, "rb") as fh:
        raw = fh.read()
    members = []
    with zipfile.ZipFile(path) as z:
        aliases = json.loads(z.read("aliases.json")) if "aliases.json" in z.namelist() else {}
        for zi in z.infolist():
            lh = raw[zi.header_offset : zi.header_offset + 30]
            assert lh[:4] == b"PK\x03\x04"
            start = zi.header_offset + 30 + int.from_bytes(lh[26:28], "little") + int.from_bytes(lh[28:30], "little")
            members.append({"name": zi.filename, "offset": start, "size": zi.file_size})
    st = next(m for m in members if m["name"] == "program.safetensors")
    hlen = int.from_bytes(raw[st["offset"] : st["offset"] + 8], "little")
    header = json.loads(raw[st["offset"] + 8 : st["offset"] + 8 + hlen])
    tensors = {}
    for k, t in sorted(constants.items()):
        entry = header[aliases.get(k, k)]
        off = st["offset"] + 8 + hlen + entry["data_offsets"][0]
        nbytes = entry["data_offsets"][1] - entry["data_offsets"][0]
        tensors[k] = {
            "dtype": _DTYPE_CODES[t.dtype],
            "shape": list(t.shape),
            "sha256": sha(t),
            "offset": off,
            "nbytes": nbytes,
        }
        assert hashlib.sha256(raw[off : off + nbytes]).hexdigest() == tensors[k]["sha256"], k
    for a, o in aliases.items():
        assert tensors[a] == tensors[o], (a, o)
    # ExecuTorch's own reader (it needs the safetensors package) gives back
    # every key with the same bytes.
    try:
        back_ptg, back = read_ptn(path)
    except ModuleNotFoundError as e:
        print(f"{name}: read_ptn round trip skipped: {e}", file=sys.stderr)
    else:
        assert back_ptg == ptg and sorted(back) == sorted(tensors), name
        for k, t in back.items():
            assert sha(t) == tensors[k]["sha256"] and _DTYPE_CODES[t.dtype] == tensors[k]["dtype"], (name, k)
    methods = []
    for m in program.methods:
        methods.append(
            {
                "name": m.name,
                "constants": [
                    {"name": c.name, "data_key": c.data_key, "kind": int(c.kind), "mutated": bool(c.mutated)}
                    for c in (m.constants or [])
                ],
                "mutable_buffers": [{"name": b.name, "fqn": b.fqn} for b in (m.mutable_buffers or [])],
                "reads": reads(m),
            }
        )
    assert sorted(gs.collect_data_keys(program)) == sorted(constants), name
    return {
        "version": program.version,
        "members": members,
        "tensors": tensors,
        "aliases": dict(sorted(aliases.items())),
        "methods": methods,
    }


def save_native(name: str, programs) -> dict:
    native = to_native(programs)
    path = os.path.join(HERE, name + ".ptn")
    native.save(path)
    return describe(name, native._ptg, native._constants, path)


class Dedup(nn.Module):
    """A tied weight and two byte-identical buffers."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(8, 8, bias=False)
        self.decoder = nn.Linear(8, 8, bias=False)
        self.decoder.weight = self.encoder.weight
        self.register_buffer("a", torch.ones(8))
        self.register_buffer("b", torch.ones(8))
        self.register_buffer("c", torch.full((8,), 2.0))

    def forward(self, x):
        return self.decoder(self.encoder(x)) * self.b + self.a + self.c


class Counter(nn.Module):
    """Persistent buffers mutated in forward (two of them equal, so not deduped),
    a non-persistent one read and written (a MutableBufferSpec), and a weight."""

    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(4))
        self.register_buffer("total", torch.zeros(4))
        self.register_buffer("cache", torch.zeros(4), persistent=False)
        self.scale = nn.Parameter(torch.full((4,), 0.5))

    def forward(self, x):
        self.count.add_(1.0)
        self.total.add_(x)
        self.cache.mul_(self.scale)
        self.cache.add_(x)
        return self.total / self.count + self.cache


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


class Ops(nn.Module):
    """Constants read through a tensor list (cat, in an order other than their
    declaration's) and an optional-tensor list (index with a None), an int64
    buffer, int list, int and float arguments."""

    def __init__(self):
        super().__init__()
        self.register_buffer("pad_b", torch.arange(8, dtype=torch.float32).reshape(2, 4))
        self.register_buffer("pad_a", torch.full((1, 4), 3.0))
        self.register_buffer("rows", torch.tensor([2, 0, 1], dtype=torch.int64))
        self.register_buffer("cols", torch.tensor([3, 1], dtype=torch.int64))
        self.w = nn.Parameter(torch.randn(2))

    def forward(self, x):
        y = torch.cat([x, self.pad_a, self.pad_b], dim=0)[self.rows]
        y = y.reshape(3, 2, 2).reshape(3, 4).clamp(-1.5, 1.5)
        return y[:, self.cols] * self.w


class Aliased(nn.Module):
    """Two pairs of byte-identical buffers with different contents: two
    aliases, each with its own owner (b -> a, d -> c)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("a", torch.ones(8))
        self.register_buffer("b", torch.ones(8))
        self.register_buffer("c", torch.full((8,), 2.0))
        self.register_buffer("d", torch.full((8,), 2.0))
        self.register_buffer("e", torch.full((8,), 3.0))

    def forward(self, x):
        return (x + self.d) * self.b - self.c * self.a + self.e


class EncoderDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(8, 8)
        self.decoder = nn.Linear(8, 4)

    def forward(self, x):
        return self.decoder(torch.relu(self.encoder(x)))


class EncoderOnly(nn.Module):
    """The encoder of an EncoderDecoder, under the same state-dict names."""

    def __init__(self, whole: EncoderDecoder):
        super().__init__()
        self.encoder = whole.encoder

    def forward(self, x):
        return torch.relu(self.encoder(x))


def quant_package(name: str) -> dict:
    """An int4 group-quantized linear weight (AffineGroup keys) and a constant no
    node reads, built from ExecuTorch's schema objects, serialized by ExecuTorch
    and written by write_ptn."""
    g = torch.Generator().manual_seed(1)
    qdata = torch.randint(0, 256, (4, 4), dtype=torch.uint8, generator=g)  # 4x8 int4, packed
    scale = (torch.rand(4, 2, generator=g) * 0.1).to(torch.float16)
    zp = torch.randint(0, 16, (4, 2), dtype=torch.int8, generator=g)
    bias = torch.randn(4, generator=g)
    unused = torch.arange(3, dtype=torch.int32)
    constants = {
        "lin.weight": qdata,
        "lin.weight.scale": scale,
        "lin.weight.zero_point": zp,
        "lin.bias": bias,
        "lin.unused": unused,
    }

    def meta(dtype, *sizes, quant=None):
        return TensorMeta(dtype=dtype, sizes=[Dim(min=s, max=s) for s in sizes], quant=quant)

    q = QuantSpec(
        scheme=AffineGroup(
            scale_data_key="lin.weight.scale",
            scale_dtype=ScalarType.HALF,
            quant_min=-8,
            quant_max=7,
            group_size=4,
            zero_point_data_key="lin.weight.zero_point",
            zero_point_dtype=ScalarType.CHAR,
        )
    )

    def ta(n, v):
        return NamedArgument(name=n, arg=Argument(value=TensorArg(name=v)))

    graph = Graph(
        nodes=[
            Node(name="p_lin_weight", op_kind=OpKind.PLACEHOLDER, outputs=[Output(name="p_lin_weight")]),
            Node(name="p_lin_unused", op_kind=OpKind.PLACEHOLDER, outputs=[Output(name="p_lin_unused")]),
            Node(name="p_lin_bias", op_kind=OpKind.PLACEHOLDER, outputs=[Output(name="p_lin_bias")]),
            Node(name="x", op_kind=OpKind.PLACEHOLDER, outputs=[Output(name="x")]),
            Node(
                name="dq",
                op_kind=OpKind.CALL_FUNCTION,
                target="torch.ops.native.dequantize_affine.default",
                inputs=[ta("input", "p_lin_weight")],
                outputs=[Output(name="dq")],
            ),
            Node(
                name="lin",
                op_kind=OpKind.CALL_FUNCTION,
                target="torch.ops.aten.linear.default",
                inputs=[ta("input", "x"), ta("weight", "dq"), ta("bias", "p_lin_bias")],
                outputs=[Output(name="lin")],
            ),
            Node(name="output", op_kind=OpKind.OUTPUT, inputs=[ta("", "lin")], outputs=[]),
        ],
        inputs=["x"],
        outputs=["lin"],
        tensor_values=[
            TensorValue(name="x", meta=meta(ScalarType.FLOAT, 2, 8)),
            TensorValue(name="p_lin_weight", meta=meta(ScalarType.BYTE, 4, 8, quant=q)),
            TensorValue(name="p_lin_bias", meta=meta(ScalarType.FLOAT, 4)),
            TensorValue(name="p_lin_unused", meta=meta(ScalarType.INT, 3)),
            TensorValue(name="dq", meta=meta(ScalarType.FLOAT, 4, 8)),
            TensorValue(name="lin", meta=meta(ScalarType.FLOAT, 2, 4)),
        ],
    )
    method = Method(
        name="forward",
        graph=graph,
        constants=[
            NamedTensorRef(name="p_lin_weight", data_key="lin.weight", meta=meta(ScalarType.BYTE, 4, 8, quant=q), kind=InputKind.PARAMETER),
            NamedTensorRef(name="p_lin_unused", data_key="lin.unused", meta=meta(ScalarType.INT, 3), kind=InputKind.CONSTANT_TENSOR),
            NamedTensorRef(name="p_lin_bias", data_key="lin.bias", meta=meta(ScalarType.FLOAT, 4), kind=InputKind.PARAMETER),
        ],
    )
    program = Program(version=gs.SCHEMA_VERSION, methods=[method])
    gs.validate_program(program, set(constants))
    ptg = gs._compile_to_bytes(program)
    path = os.path.join(HERE, name + ".ptn")
    write_ptn(path, ptg, constants)
    return describe(name, ptg, constants, path)


def packages():
    """The packages, by name: each a function that writes it and describes it."""
    two = TwoHeads()
    whole = EncoderDecoder()
    return {
        "mlp": lambda: save_native(
            "mlp", torch.export.export(nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4)), (torch.randn(2, 8),))
        ),
        "dedup": lambda: save_native("dedup", torch.export.export(Dedup(), (torch.randn(2, 8),))),
        "mutable": lambda: save_native("mutable", torch.export.export(Counter(), (torch.ones(4),))),
        "multi": lambda: save_native(
            "multi",
            {
                "prefill": torch.export.export(two, (torch.randn(3, 8),)),
                "decode": torch.export.export(two, (torch.randn(1, 8),)),
            },
        ),
        "ops": lambda: save_native("ops", torch.export.export(Ops(), (torch.randn(1, 4),))),
        "quant": lambda: quant_package("quant"),
        # Two aliases with different owners.
        "aliases": lambda: save_native("aliases", torch.export.export(Aliased(), (torch.randn(2, 8),))),
        # Two methods, one reading weights the other does not bind.
        "parts": lambda: save_native(
            "parts",
            {
                "forward": torch.export.export(whole, (torch.randn(2, 8),)),
                "encode": torch.export.export(EncoderOnly(whole), (torch.randn(2, 8),)),
            },
        ),
    }


def main() -> None:
    # python3 make.py [NAME...]: remake the named packages only (default:
    # all), keeping the others and their entries of expected.json.
    torch.manual_seed(0)
    path = os.path.join(HERE, "expected.json")
    expected = {}
    if sys.argv[1:] and os.path.exists(path):
        with open(path) as f:
            expected = json.load(f)
    for name, make in packages().items():
        if not sys.argv[1:] or name in sys.argv[1:]:
            expected[name] = make()
    with open(path, "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
