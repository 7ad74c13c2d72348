"""Instructions per element of the cast kernels, compiled for a GPU without one (not a test).

Builds the launch plans the engine would use on an sm_90 GPU (hardware FP8 conversion, no
FMA contraction), compiles each kernel for ``GPUTarget("cuda", 90, 32)`` with the
specializations a launch on a 16384 x 16384 bfloat16 tensor gets (16-byte aligned
pointers, sizes divisible by 16, an ``inner`` of 1 as a constant), disassembles it with the
``cuobjdump`` Triton ships and counts the SASS instructions per element by kind, as
``sass_count.py`` does on the GPU. It answers "how many instructions does the dual kernel
issue per element, against the two single casts?" on a machine without a GPU; the issue time
is ``elements * per_element / 32 / (132 SMs * 4 * 1.98 GHz)`` on an H200.

    python packages/tcast-triton/bench/sass_offline.py [--size 16384] [--dtypes mxfp8,mxfp4,nvfp4]
"""

from __future__ import annotations

import argparse
import math
import os
import sys

if os.environ.get("TRITON_INTERPRET"):
    sys.exit("run without TRITON_INTERPRET: the kernels are compiled, not interpreted")

import torch
from sass_count import _count

import tcast
from tcast.kit import cast_rules, column_datatype, make_request
from tcast_triton import _launch, _launch_dual
from tcast_triton._offline import compile_sass

H200_ISSUE = 132 * 4 * 1.98e9  # warp instructions per second


def _compile(kernel, args: dict, kw: dict, num_warps: int) -> str:
    """SASS of ``kernel`` with run-time ``args`` (name -> tensor or int) and constexprs ``kw``."""
    return compile_sass(kernel, args, kw, num_warps)


def _request(code, shape, castmode="actual"):
    dt = code if isinstance(code, tcast.DataType) else tcast.datatype(code)
    modes = tcast.CastModes.of(castmode)
    return make_request(dt, modes, None, None, shape, "bfloat16", cast_rules(dt))


def _row(label: str, sass: str, elems: int, numel: int, warps: int) -> None:
    c = _count(sass)
    per = elems / (warps * 32)  # elements per thread
    pe = {k: v / per for k, v in c.items()}
    issue = numel * pe["all"] / 32 / H200_ISSUE * 1e3
    print(
        f"| {label} | {warps} | {per:g} | {pe['all']:.1f} | {pe.get('int', 0):.1f} | "
        f"{pe.get('float', 0):.1f} | {pe.get('convert', 0):.1f} | {pe.get('memory', 0):.1f} "
        f"| {issue:.3f} |"
    )


def _single(code, shape, xc, label):
    req = _request(code, shape)
    plan = _launch._tiled_plan(req, xc, 0)
    n = req.layout.scale_shape
    scale = torch.empty(max(1, math.prod(n) // math.prod(n)), dtype=torch.uint8)
    names = ("outer", "L", "inner", "T", "nt", "ntiles")
    bits = torch.empty(1, dtype=torch.int16)  # the kernels read bfloat16 as int16 bits
    args = dict(
        x_ptr=bits,
        rb_ptr=bits,
        out_ptr=torch.empty(1, dtype=torch.uint8),
        scale_ptr=scale,
        zero_ptr=scale,
        tcode_ptr=scale,
        stats_ptr=torch.empty(3, dtype=torch.int32) if plan.amax_grid else scale,
        seed=0,
        **dict(zip(names, plan.sizes, strict=True)),
    )
    kw = plan.kw
    elems = kw["BL"] * kw["TP"]
    _row(
        label, _compile(plan.kernel, args, kw, kw["num_warps"]), elems, xc.numel(), kw["num_warps"]
    )


def _dual(code, shape, xc, transposed):
    rows = _request(code, shape)
    plan = _launch_dual._build(rows, xc, 0, transposed)
    kw = plan.kw
    u8 = torch.empty(16, dtype=torch.uint8)
    bits = torch.empty(1, dtype=torch.int16)
    args = dict(
        x_ptr=bits,
        rb_ptr=bits,
        out_r=u8,
        out_c=u8,
        scale_r=u8,
        scale_c=u8,
        zero_r=u8,
        zero_c=u8,
        tcode_ptr=u8,
        stats_ptr=torch.empty(3, dtype=torch.int32),
        outer=1,
        M=shape[0],
        N=shape[1],
        seed=0,
    )
    elems = kw["T"] * kw["BN"]
    label = f"{code} dual{' transposed' if transposed else ''}"
    _row(
        label,
        _compile(plan.launch.kernel, args, kw, kw["num_warps"]),  # Gluon or Triton
        elems,
        xc.numel(),
        kw["num_warps"],
    )


def main() -> None:
    """Print one row per kernel: the single row and column casts, the dual casts."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=16384)
    ap.add_argument("--dtypes", default="mxfp8,mxfp4,nvfp4")
    a = ap.parse_args()
    _launch.hw_fp8 = lambda device: True  # what an sm_90 GPU gets (_launch.hw_fp8)
    _launch_dual.hw_fp8 = lambda device: True
    shape = (a.size, a.size)
    # only shapes and dtypes matter to the plans: meta tensors stand for x
    xc = torch.empty(shape, dtype=torch.bfloat16, device="meta")
    print(f"# compiled for sm_90 without a GPU; {a.size}x{a.size} bfloat16; issue time on an H200")
    print(
        "| kernel | warps | elems/thread | instr/elem | int | float | convert | memory | issue ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for code in a.dtypes.split(","):
        dt = tcast.datatype(code)
        _single(dt, shape, xc, f"{code} row cast")
        _single(column_datatype(dt), shape, xc, f"{code} column cast (d-2)")
        for tr in (False, True):
            _dual(code, shape, xc, tr)


if __name__ == "__main__":
    main()
