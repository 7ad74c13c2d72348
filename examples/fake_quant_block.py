"""Fake-quantized training steps of a small transformer block, timed (not a test).

A pre-norm transformer block (attention and MLP, bfloat16) whose Linear layers have their
weights and inputs fake-quantized with ``tcast_torch.quantize_model`` (MXFP8 or NVFP4,
straight-through gradients), trained with AdamW. One step is forward, backward and the
optimizer's update. It reports the median step time of:

* no quantization (the baseline), eager and ``torch.compile``d;
* tcast with ``QuantRule(engine="torch")``: the tcast_torch engine (eager PyTorch ops, its own
  compiled kernels for the fast-path casts of CUDA tensors);
* tcast with the default rule: the Triton engine's kernels for CUDA tensors, eager and
  ``torch.compile``d (the casts are custom ops in the graph);
* torchao 0.18's MX and NVFP4 quantization (``MXDynamicActivationMXWeightConfig`` with the
  emulated kernel, floor scales; ``NVFP4DynamicActivationNVFP4WeightConfig`` without its
  Triton kernel) where a training step runs with it; otherwise the table says why not.

    python examples/fake_quant_block.py [--dim 1024] [--tokens 8192] [--steps 20]
    python examples/fake_quant_block.py --device cpu --dim 64 --tokens 64 --steps 2  # a smoke run
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
import warnings

import torch
import torch.nn.functional as F
from torch import nn

import tcast_torch


class Block(nn.Module):
    """A pre-norm transformer block: causal self-attention and a GELU MLP."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block on ``[batch, sequence, dim]``."""
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (a.view(b, t, self.heads, d // self.heads).transpose(1, 2) for a in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


def _torchao(model: nn.Module, dtype: str) -> str | None:
    """Apply torchao's quantization of ``dtype`` to the Linear layers; None, or why not."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torchao.prototype.mx_formats import (
                MXDynamicActivationMXWeightConfig,
                NVFP4DynamicActivationNVFP4WeightConfig,
            )
            from torchao.prototype.mx_formats.config import ScaleCalculationMode
            from torchao.quantization import quantize_
            from torchao.quantization.quantize_.common.kernel_preference import (
                KernelPreference,
            )
        if dtype == "mxfp8":
            config = MXDynamicActivationMXWeightConfig(
                kernel_preference=KernelPreference.EMULATED,
                scaling_mode=ScaleCalculationMode.FLOOR,
            )
        elif dtype == "nvfp4":
            config = NVFP4DynamicActivationNVFP4WeightConfig(use_triton_kernel=False)
        else:
            return "no torchao config for this format"
        quantize_(model, config)
    except Exception as err:  # torchao missing or its API differs: say why
        return f"{type(err).__name__}: {(str(err) or '-').splitlines()[0][:70]}"
    return None


def _step_fn(model: nn.Module, x: torch.Tensor, mode: str | None):
    """One training step; ``mode``: None (eager) or a ``torch.compile`` mode."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    fwd = model if mode is None else torch.compile(model, mode=mode)
    graphs = mode in ("reduce-overhead", "max-autotune")  # the modes that use CUDA graphs

    def step() -> None:
        if graphs:  # CUDA graph trees: a new step may overwrite the last step's outputs
            torch.compiler.cudagraph_mark_step_begin()
        loss = fwd(x).float().square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def _median_ms(step, steps: int, device: str) -> float:
    for _ in range(3):  # warm-up (and compilation)
        step()
    times = []
    for _ in range(steps):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> None:
    """Time every configuration and print the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=8192, help="batch x sequence (sequence 1024)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--dtypes", default="mxfp8,nvfp4")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument(
        "--modes",
        default="default",
        help="torch.compile modes, one column each (e.g. default,reduce-overhead)",
    )
    ap.add_argument("--no-torch-engine", action="store_true", help="leave out tcast_torch rows")
    args = ap.parse_args()
    dev = args.device
    seq = min(1024, args.tokens)
    torch.manual_seed(0)
    base = Block(args.dim, args.heads).to(dev, torch.bfloat16)
    x = torch.randn(args.tokens // seq, seq, args.dim, device=dev, dtype=torch.bfloat16)
    name = torch.cuda.get_device_name() if dev == "cuda" else dev
    print(
        f"{name}; torch {torch.__version__}; block dim {args.dim}, {args.heads} heads, "
        f"{args.tokens} tokens (sequence {seq}), bfloat16, AdamW; median of {args.steps} steps"
    )
    modes: list[str | None] = [None] + ([] if args.no_compile else args.modes.split(","))
    heads = ["eager ms"] + [f"compiled ({m}) ms" for m in modes[1:]]
    print("\n| configuration | " + " | ".join(heads) + " |")
    print("|---|" + "---:|" * len(heads))

    def row(label: str, make, compile_too: bool = True) -> None:
        cells = []
        for mode in modes:
            if mode is not None and not compile_too:
                cells.append("—")
                continue
            model = make()
            if isinstance(model, str):
                cells.append(f"n/a ({model})")
                continue
            torch._dynamo.reset()
            try:
                cells.append(f"{_median_ms(_step_fn(model, x, mode), args.steps, dev):.2f}")
            except Exception as err:  # a peer that cannot train this way: say why
                cells.append(
                    f"n/a ({type(err).__name__}: {(str(err) or '-').splitlines()[0][:60]})"
                )
        print(f"| {label} | " + " | ".join(cells) + " |")

    row("no quantization", lambda: copy.deepcopy(base))
    for dt in args.dtypes.split(","):
        engines = [(None, "tcast, Triton engine"), ("torch", "tcast_torch engine")]
        for engine, label in engines[:1] if args.no_torch_engine else engines:
            rule = tcast_torch.QuantRule("*", weight=dt, input=dt, engine=engine)

            def make(rule=rule):
                model = copy.deepcopy(base)
                tcast_torch.quantize_model(model, rule)
                return model

            row(f"{dt} weights + inputs, {label}", make, compile_too=engine is None)

        def make_ao(dt=dt):
            model = copy.deepcopy(base)
            why = _torchao(model, dt)
            return why or model

        row(f"{dt}, torchao quantize_ (emulated)", make_ao)


if __name__ == "__main__":
    main()
