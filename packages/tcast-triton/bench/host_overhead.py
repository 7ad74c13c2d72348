"""Host time per call of Triton-engine casts, and whether a call synchronizes (not a test).

For each cast: host microseconds per call (the median of 5 runs of 200 calls queued without
synchronizing; the GPU keeps up at 4096 x 4096), then one call under
``torch.cuda.set_sync_debug_mode("warn")``, which reports any operation that waits for the
GPU (a ``.item()``, a host copy): a cast should never wait. Also the same figures for
torchao's Triton dim0 kernel.

    python packages/tcast-triton/bench/host_overhead.py [--size 4096]
"""

from __future__ import annotations

import argparse
import itertools
import warnings

import torch
from _timing import host_us

import tcast
import tcast_triton

CASTS = [
    ("mxfp8", {"castmode": "actual"}),
    ("mxfp8", {"castmode": "compress"}),
    ("mxfp4", {"castmode": "compress"}),
    ("e2m3f_e8m0_t32", {"castmode": "compress"}),
    ("e4m3fn_e8m0_t32d0", {"castmode": "actual"}),
    ("nvfp4", {"castmode": "actual"}),
    ("mxfp8_2d", {"castmode": "actual"}),
    ("mxfp8", {"castmode": "virtual"}),
    ("mxfp8", {"castmode": "actual", "roundmode": "stochastic", "seed": 3}),
    ("mxfp8", {"castmode": "actual", "roundmode": "stochastic", "seed": "per call"}),
]


def _syncs(fn) -> list[str]:
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    return [str(w.message).splitlines()[0] for w in caught]


def main() -> None:
    """Print one line per cast."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    args = ap.parse_args()
    x = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    print(f"{torch.cuda.get_device_name()}, {args.size}^2 bfloat16: host us per call; syncs")
    print(
        "cast: tcast_triton.cast with a DataType / the name or code; tcast.cast with a "
        "DataType / the name or code"
    )
    for code, kw in CASTS:
        dt = tcast.datatype(code)

        seeds = itertools.count(2**40) if kw.get("seed") == "per call" else None

        def args(kw=kw, seeds=seeds):
            return dict(kw, seed=next(seeds)) if seeds is not None else kw

        def tri(d):
            return lambda: tcast_triton.cast(x, d, **args())

        def front(d):
            return lambda: tcast.cast(x, d, **args())

        cells = [host_us(f) for f in (tri(dt), tri(code), front(dt), front(code))]
        print(
            f"- {code} {kw}: "
            + " / ".join(f"{c:.1f}" for c in cells)
            + f"; syncs: {_syncs(tri(dt)) or 'none'}",
            flush=True,
        )
    try:
        import torchao.utils as ao_utils

        ao_utils.is_sm_at_least_100 = lambda: True
        from torchao.prototype.mx_formats import kernels

        def dim0():
            return kernels.triton_to_mxfp8_dim0(x, 32, "floor")

        print(f"- torchao triton_to_mxfp8_dim0: {host_us(dim0):.1f}; syncs: {_syncs(dim0)}")
    except Exception as err:  # the peer did not run here: say why
        print(f"- torchao triton_to_mxfp8_dim0: n/a ({type(err).__name__}: {err})")


if __name__ == "__main__":
    main()
