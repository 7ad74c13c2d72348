"""Launch-size sweep of the row kernel on a GPU (not a test): elements and warps per program.

Times the cast kernels alone (CUDA-graph replay, ``do_bench`` median) for each
(``_launch.ROW_ELEMS``, ``_launch.ROW_WARPS``) pair beside a device-to-device copy, to choose
the static launch bucket; with ``--t16`` the pair for 16-element row tiles
(``_launch.ROW_ELEMS_T16``, ``_launch.ROW_WARPS_T16`` and their ``_VIRTUAL`` twins: NVFP4,
amax pass included).

    python packages/tcast-triton/bench/sweep_row.py [--size 16384] [--t16]
"""

from __future__ import annotations

import argparse

import torch
from _timing import graph_ms

import tcast_triton
from tcast_triton import _launch

CASTS = [
    ("mxfp8", "actual"),
    ("mxfp4", "actual"),
    ("mxint8", "actual"),
    ("mxfp8", "virtual"),
]  # 16-element tiles (NVFP4) take ROW_ELEMS_T16: --t16
CASTS_T16 = [
    ("nvfp4", "actual"),
    ("nvfp4", "virtual"),
    ("nvfp4", "actual, blocked"),
]


def main() -> None:
    """Print one row per launch size."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=16384)
    ap.add_argument("--t16", action="store_true", help="sweep the 16-element row tiles' pair")
    args = ap.parse_args()
    casts = CASTS_T16 if args.t16 else CASTS
    x = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    copy = graph_ms(lambda: x.clone())
    print(
        f"{torch.cuda.get_device_name()}, {args.size}^2 bfloat16, copy {copy:.3f} ms; "
        "kernel ms (CUDA graph replay) / ratio to copy"
    )
    print("| elems | warps | " + " | ".join(f"{c} {m}" for c, m in casts) + " |")
    print("|---|---|" + "---|" * len(casts))
    for elems in (2048, 4096, 8192, 16384):
        for warps in (2, 4, 8, 16) if args.t16 else (4, 8, 16):
            if args.t16:
                _launch.ROW_ELEMS_T16, _launch.ROW_WARPS_T16 = elems, warps
                _launch.ROW_ELEMS_T16_VIRTUAL, _launch.ROW_WARPS_T16_VIRTUAL = elems, warps
            else:
                _launch.ROW_ELEMS, _launch.ROW_WARPS = elems, warps
            _launch._PLANS.clear()
            cells = []
            for code, cm in casts:
                mode, _, blocked = cm.partition(", ")
                kw = {"scale_layout": "blocked"} if blocked else {}
                try:
                    t = graph_ms(
                        lambda code=code, mode=mode, kw=kw: tcast_triton.cast(
                            x, code, castmode=mode, **kw
                        )
                    )
                    cells.append(f"{t:.3f} ({t / copy:.2f})")
                except Exception as err:  # a launch size the compiler refuses
                    cells.append(f"n/a ({type(err).__name__})")
            print(f"| {elems} | {warps} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
