"""Benchmark of tcast-torch on a GPU (not a test): virtual and actual MXFP8, MXFP4, NVFP4.

For each size (bfloat16, 8192 x 8192 and 16384 x 16384) and cast, times tcast_torch.cast
called eagerly with the default ``compile=None`` (on CUDA: the package's own compiled
kernels), called eagerly with ``compile=False`` (one PyTorch kernel per operation), and
inside the caller's ``torch.compile``, with ``triton.testing.do_bench`` (median, L2 flushed
between runs), beside, in the same run, a device-to-device copy of the input and the peer:
torchao's ``to_mx`` (MXFP8, MXFP4) and ``nvfp4_quantize`` with a per-tensor scale (NVFP4),
compiled on the same input. GB/s counts bytes read (the input once) plus bytes written (the
result's tensors: values, or one code per byte plus scales). Prints the configuration, a
check that every way of calling gives the same bits, then a Markdown table.

    python packages/tcast-torch/bench/bench_torch.py [--sizes 8192,16384] [--rep 200]
        [--casts mxfp4:virtual,mxfp4:actual] [--roundmode stochastic]

``--roundmode stochastic`` times seeded stochastic rounding (seed 5; the peers round to
nearest even, so their column is left out).
"""

from __future__ import annotations

import argparse
import platform

import torch
import triton
from triton.testing import do_bench

import tcast_torch

CASTS = [
    ("mxfp8", "virtual"),
    ("mxfp8", "actual"),
    ("mxfp4", "virtual"),
    ("mxfp4", "actual"),
    ("nvfp4", "virtual"),
    ("nvfp4", "actual"),
]


def _written(out) -> int:
    """Bytes a cast writes: the tensors of its result."""
    parts = [out] if isinstance(out, torch.Tensor) else [out.data, out.scale, out.tenscale]
    return sum(p.numel() * p.element_size() for p in parts if p is not None)


def _peer(name: str):
    """The compiled peer of a cast (torchao), or None with the reason."""
    try:
        if name == "nvfp4":
            from torchao.prototype.mx_formats.nvfp4_tensor import (
                nvfp4_quantize,
                per_tensor_amax_to_scale,
            )

            def run(v):
                return nvfp4_quantize(v, 16, per_tensor_amax_to_scale(v.abs().amax()))
        else:
            from torchao.prototype.mx_formats.mx_tensor import to_mx

            elem = torch.float8_e4m3fn if name == "mxfp8" else torch.float4_e2m1fn_x2

            def run(v):
                return to_mx(v, elem, 32)

        return torch.compile(run), None
    except Exception as err:  # the peer is optional: report why it is missing
        return None, f"{type(err).__name__}: {err}"


def _special(size: int) -> torch.Tensor:
    """Inputs that exercise every rule: random spreads, zeros, NaN/Inf blocks, ties, tiny."""
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(size, size, device="cuda", generator=g)
    x = x * torch.exp2(torch.randint(-30, 30, (size, 1), device="cuda", generator=g).float())
    x[0, 3], x[1, 40], x[2] = float("nan"), float("inf"), 0.0
    x[3] = 2.0**-135
    x[4] = (torch.arange(size, device="cuda") % 64) * 0.0625 + 0.03125
    return x.to(torch.bfloat16)


def _bits(out) -> list[torch.Tensor]:
    parts = [out] if isinstance(out, torch.Tensor) else [out.data, out.scale, out.tenscale]
    return [p.reshape(-1).contiguous().view(torch.uint8) for p in parts if p is not None]


def _ms(fn, x, rep: int) -> float:
    return do_bench(lambda: fn(x), warmup=25, rep=rep, return_mode="median")


def main() -> None:
    """Time every cast and print the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="8192,16384")
    ap.add_argument("--rep", type=int, default=200, help="do_bench repetition time, ms")
    ap.add_argument("--casts", default=",".join(f"{n}:{m}" for n, m in CASTS))
    ap.add_argument("--roundmode", default="even", choices=("even", "stochastic"))
    args = ap.parse_args()
    casts = [tuple(c.split(":")) for c in args.casts.split(",")]
    modes = {"roundmode": args.roundmode}
    if args.roundmode == "stochastic":
        modes["seed"] = 5
    try:
        import torchao

        ao_version = torchao.__version__
    except ImportError:  # the peer is optional
        ao_version = "not installed"
    print(
        f"GPU {torch.cuda.get_device_name()}; torch {torch.__version__}; triton "
        f"{triton.__version__}; torchao {ao_version}; tcast-torch "
        f"{tcast_torch.__version__}; Python {platform.python_version()}"
    )
    print(
        f"timing: triton.testing.do_bench median (ms); input bfloat16, torch.randn; "
        f"modes {modes}; casts {args.casts}"
    )
    print(
        "same bits on special inputs, every cast: default (compiled kernels) == "
        "compile=False == inside torch.compile: ",
        end="",
    )
    xs = _special(1024)
    same = []
    for name, castmode in casts:

        def probe(v, name=name, castmode=castmode, compile=None):
            return tcast_torch.cast(v, name, castmode=castmode, compile=compile, **modes)

        torch._dynamo.reset()
        a, b = _bits(probe(xs)), _bits(probe(xs, compile=False))
        c = _bits(torch.compile(probe)(xs))
        same.append(
            all(torch.equal(p, q) and torch.equal(p, r) for p, q, r in zip(a, b, c, strict=True))
        )
    print("yes" if all(same) else f"NO: {same}")
    print(
        "| size | cast | eager (default) ms | eager, compile=False ms | compiled ms | "
        "compiled GB/s | compiled vs copy | eager (default) / compiled | peer compiled ms | "
        "peer / tcast compiled |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    peers = {name: _peer(name) for name in ("mxfp8", "mxfp4", "nvfp4")}
    for size in (int(s) for s in args.sizes.split(",")):
        x = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        n = x.numel()
        t_copy = _ms(lambda v: v.clone(), x, args.rep)
        for name, castmode in casts:

            def run(v, name=name, castmode=castmode):
                return tcast_torch.cast(v, name, castmode=castmode, **modes)

            def plain(v, name=name, castmode=castmode):
                return tcast_torch.cast(v, name, castmode=castmode, compile=False, **modes)

            t_default = _ms(run, x, args.rep)
            t_plain = _ms(plain, x, args.rep)
            torch._dynamo.reset()  # a fresh static-shape graph per cast and size
            t_comp = _ms(torch.compile(run), x, args.rep)
            gbs = (x.numel() * x.element_size() + _written(run(x))) / (t_comp * 1e-3) / 1e9
            peer_ms = ratio = "—"
            fn, why = peers[name]
            if args.roundmode != "even":
                pass  # the peers round to nearest even only
            elif castmode == "actual" and fn is not None:
                torch._dynamo.reset()
                fn = _peer(name)[0]
                t_peer = _ms(fn, x, args.rep)
                peer_ms, ratio = f"{t_peer:.3f}", f"{t_peer / t_comp:.2f}"
            elif castmode == "actual":
                peer_ms = f"unavailable ({why})"
            print(
                f"| {size}² | {name} {castmode} | {t_default:.3f} | {t_plain:.3f} | "
                f"{t_comp:.3f} | {gbs:.0f} | "
                f"{t_comp / t_copy:.2f}x | {t_default / t_comp:.2f}x | {peer_ms} | {ratio} |",
                flush=True,
            )
        print(
            f"| {size}² | d2d copy | {t_copy:.3f} | | | {2 * 2 * n / (t_copy * 1e-3) / 1e9:.0f} "
            f"| 1.00x | | | |",
            flush=True,
        )
        del x
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
