"""Exports the small ExecuTorch programs in this folder with the installed
executorch (see requirements-runtimes.txt at the repository root).

    $EDGELOAD_RUNTIMES_PYTHON testdata/executorch/make.py [OUTDIR]

Weights come from fixed seeds, so a re-run with the same torch and
executorch writes the same programs. The files:

  mlp.pte                 Linear-ReLU-Linear, constants in the program
  conv.pte                Conv2d-ReLU-Conv2d(depthwise)-mean-Linear
  mlp-external.pte/.ptd   the MLP with every constant in a .ptd
                          (ExecutorchBackendConfig external_constants=True)
  lora-base.pte           a LoRA-style pair: the base model and the same
  lora-adapted.pte        model with a low-rank adapter; both read their
  lora-foundation.ptd     base weights from one shared lora-foundation.ptd
                          and the adapted one keeps its adapter in the .pte
  lora-split.pte          the adapted model with the foundation weights in
  lora-split-adapter.ptd  lora-foundation.ptd and the adapter weights in a
                          second file: a pair of .ptd files for one program
  counter.pte             mutable buffers: a running sum and a step count
                          updated by every call, with non-zero initial data
"""

import os
import sys
import warnings

warnings.simplefilter("ignore")

import torch  # noqa: E402
from executorch.exir import (  # noqa: E402
    ExecutorchBackendConfig,
    to_edge_transform_and_lower,
)
from executorch.exir.passes.external_constants_pass import (  # noqa: E402,F401
    delegate_external_constants_pass_unlifted,
)

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = self.c2(y).mean(dim=(2, 3))
        return self.fc(y)


class LoRALinear(torch.nn.Module):
    def __init__(self, base, rank, adapted):
        super().__init__()
        self.base = base
        self.adapted = adapted
        if adapted:
            self.lora_a = torch.nn.Linear(base.in_features, rank, bias=False)
            self.lora_b = torch.nn.Linear(rank, base.out_features, bias=False)
            torch.nn.init.normal_(self.lora_b.weight, std=0.5)

    def forward(self, x):
        y = self.base(x)
        if self.adapted:
            y = y + self.lora_b(self.lora_a(x))
        return y


class LoRAModel(torch.nn.Module):
    def __init__(self, adapted):
        super().__init__()
        torch.manual_seed(3)
        self.l1 = LoRALinear(torch.nn.Linear(16, 16), 2, False)
        self.l2 = LoRALinear(torch.nn.Linear(16, 8), 2, False)
        if adapted:
            torch.manual_seed(4)
            self.l1 = LoRALinear(self.l1.base, 2, True)
            self.l2 = LoRALinear(self.l2.base, 2, True)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.arange(4, dtype=torch.float32) + 0.5)
        self.register_buffer("steps", torch.tensor([7], dtype=torch.int64))

    def forward(self, x):
        self.total.add_(x)
        self.steps.add_(1)
        return self.total * 2, self.steps.clone()


def export(model, example, name, external=None):
    """Writes NAME.pte (and the .ptd files an external tagger names)."""
    model.eval()
    ep = torch.export.export(model, example, strict=True)
    cfg = ExecutorchBackendConfig()
    if external is not None:
        cfg = ExecutorchBackendConfig(external_constants=external)
    prog = to_edge_transform_and_lower(ep).to_executorch(cfg)
    with open(os.path.join(OUT, name + ".pte"), "wb") as f:
        f.write(prog.buffer)
    if external is not None:
        prog.write_tensor_data_to_file(OUT)
    print("wrote", name, len(prog.buffer), "bytes")


def foundation_or_adapter(adapter_file):
    """Tags base weights for lora-foundation.ptd, adapter weights for
    adapter_file (None: the adapter stays in the program)."""

    def tag(node):
        name = str(node.target) if node.op == "get_attr" else node.name
        if "lora" in name:
            return adapter_file
        return "lora-foundation"

    return tag


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(1)
    export(MLP(), (torch.randn(2, 16),), "mlp")
    torch.manual_seed(2)
    export(Conv(), (torch.randn(1, 3, 12, 12),), "conv")
    torch.manual_seed(1)
    export(MLP(), (torch.randn(2, 16),), "mlp-external", external=True)
    # mlp-external's data file is named after the default tag: rename it.
    os.replace(os.path.join(OUT, "_default_external_constant.ptd"), os.path.join(OUT, "mlp-external.ptd"))
    x = (torch.randn(2, 16),)
    export(LoRAModel(False), x, "lora-base", external=foundation_or_adapter(None))
    export(LoRAModel(True), x, "lora-adapted", external=foundation_or_adapter(None))
    export(LoRAModel(True), x, "lora-split", external=foundation_or_adapter("lora-split-adapter"))
    export(Counter(), (torch.ones(4),), "counter")


if __name__ == "__main__":
    main()
