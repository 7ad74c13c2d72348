"""Where a slow cast's time goes: the engine timed with one piece swapped out (not a test).

Each variant runs in a fresh process with one of the engine's ``@triton.jit`` helpers
replaced in its module before anything compiles (Triton resolves a kernel's helpers by name
when it compiles, so the replacement is what the kernel calls). The replacements give wrong
bits on purpose: the point is the time without the piece. On the GPU, 16384 x 16384
bfloat16, ``do_bench`` medians beside a device-to-device copy measured in the same process.

Variants (stochastic rounding, MXFP8 and MXFP4 actual from a seed):

* ``base``: the engine as it is (also prints each kernel's share from the profiler);
* ``no-pieces``: row tiles always in ``_cast_tiles``'s ``[BL, TP]`` block (a tile over
  several threads, each computing its scale) instead of ``_cast_row_pieces``;
* ``hash-words``: the Philox words replaced by a multiplicative hash of the flat index
  (same layout, no generator): what the generator and the interleave of its words cost;
* ``philox-each``: one ``randint4x`` per element instead of per four, no interleave
  (four times the generator's work): whether the interleave costs more than the generator;
* ``plain-div`` (float block scales): ``tl.div_rn`` in the block-scale recipe replaced by
  the approximate ``/``: what the correctly rounded divisions per tile cost.

The base variant also times E2M1 with an E8M0 or an E4M3 block scale over 16 or 32 elements
(no tensor scale): the cost of the per-tile scale work apart from NVFP4's amax pass.

    python packages/tcast-triton/bench/where_time.py [--size 16384] [--variants base,...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

CASTS = [
    (
        "mxfp8 actual stochastic",
        "mxfp8",
        {"castmode": "actual", "roundmode": "stochastic", "seed": 7},
    ),
    (
        "mxfp4 actual stochastic",
        "mxfp4",
        {"castmode": "actual", "roundmode": "stochastic", "seed": 7},
    ),
    ("mxfp8 actual even", "mxfp8", {"castmode": "actual"}),
    ("mxfp4 actual even", "mxfp4", {"castmode": "actual"}),
    ("mxfp4 virtual even", "mxfp4", {"castmode": "virtual"}),
    ("mxfp6 e2m3 actual", "e2m3f_e8m0_t32", {"castmode": "actual"}),
    ("mxint8 actual", "mxint8", {"castmode": "actual"}),
    ("mxfp8 actual trunc", "mxfp8", {"castmode": "actual", "roundmode": "trunc"}),
    ("nvfp4 virtual", "nvfp4", {"castmode": "virtual"}),
    ("nvfp4 actual", "nvfp4", {"castmode": "actual"}),
    # the block-scale work per tile, apart from NVFP4's tensor-scale pass
    ("e2m1 e8m0 t16 actual", "e2m1f_e8m0_t16", {"castmode": "actual"}),
    ("e2m1 e4m3 t16 actual", "e2m1f_e4m3fn_t16", {"castmode": "actual"}),
    ("e2m1 e4m3 t32 actual", "e2m1f_e4m3fn_t32", {"castmode": "actual"}),
]
VARIANTS = ("base", "no-pieces", "hash-words", "philox-each", "plain-div")


@triton.jit
def _hash_runs(seed, starts, N: tl.constexpr):
    w = (starts[:, None] + tl.arange(0, N)[None, :]).to(tl.int32)
    return (w * -1640531535) ^ seed


@triton.jit
def _philox_each(seed, starts, N: tl.constexpr):
    r0, _, _, _ = tl.randint4x(seed, starts[:, None] + tl.arange(0, N)[None, :])
    return r0.to(tl.int32, bitcast=True)


@triton.jit
def _plain_div(a, b):
    return a / b


def _patch(variant: str) -> None:
    from tcast_triton import _kernels, _launch, _scales

    if variant == "no-pieces":
        _launch.ROW_PIECES = False
    elif variant == "hash-words":
        _kernels.random_runs = _hash_runs
    elif variant == "philox-each":
        _kernels.random_runs = _philox_each
    elif variant == "plain-div":
        _scales._div = _plain_div


def _kernel_shares(fn) -> str:
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
    parts = [
        f"{e.key[:24]} {e.device_time_total / e.count / 1000:.3f} ms"
        for e in prof.key_averages()
        if e.device_time_total > 0 and e.count >= 20
    ]
    return "; ".join(parts)


def _one(variant: str, size: int, rep: int) -> None:
    _patch(variant)
    import tcast_triton

    x = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    copy = do_bench(lambda: x.clone(), rep=rep, return_mode="median")
    for label, code, kw in CASTS:
        if variant == "plain-div" and "stochastic" in label:
            continue
        if variant in ("hash-words", "philox-each") and "stochastic" not in label:
            continue

        def fn(code=code, kw=kw):
            return tcast_triton.cast(x, code, **kw)

        t = do_bench(fn, rep=rep, return_mode="median")
        extra = f"  [{_kernel_shares(fn)}]" if variant == "base" else ""
        print(f"| {variant} | {label} | {t:.4f} | {copy:.4f} | {copy / t:.2f} |{extra}")


def main() -> None:
    """Run each variant in its own process and print one table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=16384)
    ap.add_argument("--rep", type=int, default=100)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--one", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        _one(a.one, a.size, a.rep)
        return
    print(
        f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}"
    )
    print(f"# {a.size}x{a.size} bfloat16, do_bench rep {a.rep} ms, median; copy = x.clone()")
    print("| variant | cast | ms | copy ms | copy/cast time |")
    print("|---|---|---|---|---|")
    for v in a.variants.split(","):
        args = [sys.executable, __file__, "--one", v, "--size", str(a.size), "--rep", str(a.rep)]
        subprocess.run(args, check=False)


if __name__ == "__main__":
    main()
