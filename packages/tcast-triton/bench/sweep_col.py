"""Launch-size sweep of the column kernel on a GPU (not a test), and the NVFP4 passes apart.

Times the casts alone (CUDA-graph replay, ``do_bench`` median) for each column launch bucket
(``_launch.COL_ELEMS``, ``COL_MAX_BL``, ``COL_WARPS``) beside a device-to-device copy, then
the tensor-amax pre-pass of NVFP4 alone, to place the time of the two-pass casts.

    python packages/tcast-triton/bench/sweep_col.py [--size 16384] [--nd | --vector]

``--vector`` sweeps the elements a thread holds in column casts with a fused transform
(``_launch.COL_FUSED_ELEMS``) with the block size instead, each result's bits checked
against the compiler's own layout (``COL_FUSED_ELEMS = 0``).
"""

from __future__ import annotations

import argparse

import torch
from _timing import graph_ms

import tcast_triton
from tcast_triton import _launch
from tcast_triton._kernels import _amax_pass

CASTS = [
    ("e4m3fn_e8m0_t32d0", "actual"),
    ("e2m1f_e8m0_t32d0", "actual"),
    ("e4m3fn_e8m0_t32d0", "virtual"),
    ("mxfp8_2d", "actual"),
]


def main() -> None:
    """Print one row per launch bucket, then the NVFP4 passes."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=16384)
    ap.add_argument("--nd", action="store_true", help="sweep the 2-D tile kernel instead")
    ap.add_argument("--vector", action="store_true", help="sweep COL_FUSED_ELEMS instead")
    args = ap.parse_args()
    x = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    copy = graph_ms(lambda: x.clone())
    print(
        f"{torch.cuda.get_device_name()}, {args.size}^2 bfloat16, copy {copy:.3f} ms; "
        "kernel ms (CUDA graph replay) / ratio to copy"
    )
    if args.vector:
        _sweep_vector(x, copy)
        return
    print("| elems | max BL | warps | " + " | ".join(f"{c} {m}" for c, m in CASTS) + " |")
    print("|---|---|---|" + "---|" * len(CASTS))
    if args.nd:
        _sweep_nd(x, copy)
        return
    for elems in (4096, 8192, 16384):
        for max_bl in (128, 256, 512):
            for warps in (1, 2, 4):
                if elems // 32 < max_bl // 2:
                    continue
                _launch.COL_ELEMS, _launch.COL_MAX_BL, _launch.COL_WARPS = elems, max_bl, warps
                _launch._PLANS.clear()
                cells = []
                for code, cm in CASTS:
                    try:
                        t = graph_ms(
                            lambda code=code, cm=cm: tcast_triton.cast(x, code, castmode=cm)
                        )
                        cells.append(f"{t:.3f} ({t / copy:.2f})")
                    except Exception as err:  # a launch size the compiler refuses
                        cells.append(f"n/a ({type(err).__name__})")
                print(f"| {elems} | {max_bl} | {warps} | " + " | ".join(cells) + " |", flush=True)
    stats = torch.zeros(3, dtype=torch.int32, device="cuda")
    xi = x.view(torch.int16)
    n = x.numel()
    for block, warps in ((4096, 8), (8192, 8), (16384, 16)):

        def amax(block=block, warps=warps):
            _amax_pass[(-(-n // block),)](
                xi, stats, n, IN=2, U=False, BLOCK=block, I64=False, num_warps=warps
            )

        t = graph_ms(amax)
        print(f"amax pass alone, BLOCK {block}, {warps} warps: {t:.3f} ms ({t / copy:.2f} of copy)")
    for cm in ("actual", "virtual"):
        t = graph_ms(lambda cm=cm: tcast_triton.cast(x, "nvfp4", castmode=cm))
        print(f"nvfp4 {cm} (both passes): {t:.3f} ms ({t / copy:.2f} of copy)")
    for code in ("int8_float32_t0", "int8_e8m0_t0"):
        t = graph_ms(lambda code=code: tcast_triton.cast(x, code, castmode="actual"))
        print(f"{code} actual: {t:.3f} ms ({t / copy:.2f} of copy)")


def _bits(out) -> list[torch.Tensor]:
    parts = [getattr(out, name, None) for name in ("data", "scale")]
    return [p.contiguous().view(torch.uint8) for p in parts if isinstance(p, torch.Tensor)]


def _sweep_vector(x: torch.Tensor, copy: float) -> None:
    """Elements per thread of fused column casts by block size, bits checked."""
    import tcast

    casts = [
        ("e2m1f_e8m0_t32d0", "actual", tcast.Hadamard.seeded(32, 1)),
        ("e2m1f_e8m0_t16d0", "actual", tcast.Hadamard.te_wgrad()),
        ("e2m1f_e8m0_t32d0", "virtual", tcast.Hadamard.seeded(32, 1)),
        ("e4m3fn_e8m0_t32d0", "actual", tcast.Hadamard.seeded(32, 1)),
        ("e2m1f_e4m3fn_float32_t16d0", "actual", tcast.Hadamard.te_wgrad()),
    ]
    names = [f"{c} {m}" + (f" RHT-{h.size}" if h else "") for c, m, h in casts]
    want = {}
    for i, (code, cm, h) in enumerate(casts):
        _launch.COL_FUSED_ELEMS = 0
        _launch._PLANS.clear()
        want[i] = _bits(tcast_triton.cast(x, code, castmode=cm, transform=h))
    print("| elements | max BL | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(casts))
    for elems in (0, 32, 64, 128):
        for max_bl in (64, 128, 256):
            _launch.COL_FUSED_ELEMS, _launch.COL_ELEMS = elems, 32 * max_bl
            _launch.COL_MAX_BL = max_bl
            _launch._PLANS.clear()
            cells = []
            for i, (code, cm, h) in enumerate(casts):
                try:

                    def run(code=code, cm=cm, h=h):
                        return tcast_triton.cast(x, code, castmode=cm, transform=h)

                    got = _bits(run())
                    same = all(torch.equal(a, b) for a, b in zip(got, want[i], strict=True))
                    t = graph_ms(run)
                    cells.append(f"{t:.3f} ({t / copy:.2f}){'' if same else ' BITS DIFFER'}")
                except Exception as err:  # a launch size the compiler refuses
                    cells.append(f"n/a ({type(err).__name__})")
            print(f"| {elems} | {max_bl} | " + " | ".join(cells) + " |", flush=True)


def _sweep_nd(x: torch.Tensor, copy: float) -> None:
    """The 2-D tile kernel's launch buckets (``_launch_2d.ND_ELEMS``, ``ND_WARPS``)."""
    from tcast_triton import _launch_2d

    casts = [("mxfp8_2d", "actual"), ("mxfp8_2d", "virtual"), ("e2m1f_e8m0_t32_t32", "actual")]
    print("| elems | warps | " + " | ".join(f"{c} {m}" for c, m in casts) + " |")
    print("|---|---|" + "---|" * len(casts))
    for elems in (2048, 4096, 8192):
        for warps in (1, 2, 4, 8):
            _launch_2d.ND_ELEMS, _launch_2d.ND_WARPS = elems, warps
            _launch_2d._PLANS.clear()
            cells = []
            for code, cm in casts:
                try:
                    t = graph_ms(lambda code=code, cm=cm: tcast_triton.cast(x, code, castmode=cm))
                    cells.append(f"{t:.3f} ({t / copy:.2f})")
                except Exception as err:  # a launch size the compiler refuses
                    cells.append(f"n/a ({type(err).__name__})")
            print(f"| {elems} | {warps} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
