"""Probe of the dual kernel's store costs on a GPU (not a test; the bits are not checked).

Times ``cast_dual`` MXFP8 16384 x 16384 bfloat16 (CUDA-graph replay, median ms) plain,
transposed, and both with blocked scales, and single MXFP8 / MXFP4 / NVFP4 casts plain and
blocked; with ``--no-scale-stores`` the kernels are compiled with their scale stores
removed (wrong results: it isolates what the stores cost).

    python packages/tcast-triton/bench/probe_dual.py [--no-scale-stores]
"""

from __future__ import annotations

import argparse

import torch
import triton
import triton.language as tl
from _timing import graph_ms

import tcast_triton
from tcast_triton import _kernels, _kernels_dual


@triton.jit
def _no_lane_store(
    scale_ptr, zero_ptr, tcode_ptr, lanes, slots, lane_ok, scale, zcode, tcode, pid,
    SK: tl.constexpr, U: tl.constexpr, SCB: tl.constexpr, ZCB: tl.constexpr,
    TCB: tl.constexpr,
):  # fmt: skip
    """``_kernels._store_lane_codes`` (the single casts' scale stores) without the stores."""


@triton.jit
def _no_store(
    scale_ptr, zero_ptr, tcode_ptr, slots, lane_ok, scale, zcode, tcode, pid,
    STORE_T: tl.constexpr, SK: tl.constexpr, U: tl.constexpr, SCB: tl.constexpr,
    ZCB: tl.constexpr, TCB: tl.constexpr,
):  # fmt: skip
    """``_kernels_dual._store_scales`` without the stores."""


def main() -> None:
    """Print one line per variant."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-scale-stores", action="store_true")
    a = ap.parse_args()
    if a.no_scale_stores:
        _kernels_dual._store_scales = _no_store
        _kernels._store_lane_codes = _no_lane_store
    x = torch.randn(16384, 16384, device="cuda").to(torch.bfloat16)
    for label, kw in (
        ("plain", {}),
        ("transposed", {"transposed": True}),
        ("transposed, blocked", {"transposed": True, "scale_layout": "blocked"}),
        ("blocked", {"scale_layout": "blocked"}),
    ):
        ms = graph_ms(lambda kw=kw: tcast_triton.cast_dual(x, "mxfp8", **kw))
        print(f"mxfp8 dual {label}{' (no scale stores)' if a.no_scale_stores else ''}: {ms:.3f}")
    for code in ("mxfp8", "mxfp4", "nvfp4"):
        for lay in ("plain", "blocked"):
            ms = graph_ms(
                lambda c=code, s=lay: tcast_triton.cast(x, c, castmode="actual", scale_layout=s)
            )
            print(
                f"{code} single {lay}{' (no scale stores)' if a.no_scale_stores else ''}: {ms:.3f}"
            )


if __name__ == "__main__":
    main()
