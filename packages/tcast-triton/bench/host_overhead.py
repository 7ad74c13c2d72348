"""Host time per call of Triton-engine casts, and whether a call synchronizes (not a test).

For each cast: host microseconds per call (the median over rounds of 200 calls queued
without synchronizing, every cell timed in every round so that the host's drift falls on all
alike; the GPU keeps up at 4096 x 4096), then one call under
``torch.cuda.set_sync_debug_mode("warn")``, which reports any operation that waits for the
GPU (a ``.item()``, a host copy): a cast should never wait. Also the same figures for
torchao's Triton dim0 kernel.

    python packages/tcast-triton/bench/host_overhead.py [--size 4096] [--rounds 9]
"""

from __future__ import annotations

import argparse
import itertools
import warnings

import torch
from _timing import host_us_interleaved

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
    ap.add_argument("--rounds", type=int, default=9)
    args_ = ap.parse_args()
    x = torch.randn(args_.size, args_.size, device="cuda", dtype=torch.bfloat16)
    print(f"{torch.cuda.get_device_name()}, {args_.size}^2 bfloat16: host us per call; syncs")
    print(
        "cast: tcast_triton.cast with a DataType / the name or code; tcast.cast with a "
        "DataType / the name or code"
    )
    cells, labels, syncs = [], [], []
    for code, kw in CASTS:
        dt = tcast.datatype(code)

        seeds = itertools.count(2**40) if kw.get("seed") == "per call" else None

        def args(kw=kw, seeds=seeds):
            return dict(kw, seed=next(seeds)) if seeds is not None else kw

        def tri(d, args=args):
            return lambda: tcast_triton.cast(x, d, **args())

        def front(d, args=args):
            return lambda: tcast.cast(x, d, **args())

        cells.append([tri(dt), tri(code), front(dt), front(code)])
        labels.append(f"{code} {kw}")
        syncs.append(_syncs(tri(dt)) or "none")
    try:
        import torchao.utils as ao_utils

        ao_utils.is_sm_at_least_100 = lambda: True
        from torchao.prototype.mx_formats import kernels

        def dim0():
            return kernels.triton_to_mxfp8_dim0(x, 32, "floor")

        cells.append([dim0])
        labels.append("torchao triton_to_mxfp8_dim0")
        syncs.append(_syncs(dim0) or "none")
    except Exception as err:  # the peer did not run here: say why
        print(f"- torchao triton_to_mxfp8_dim0: n/a ({type(err).__name__}: {err})")
    # every cell in every round: the host's drift over the run falls on all alike
    flat = host_us_interleaved([f for row in cells for f in row], rounds=args_.rounds)
    for label, row, sync in zip(labels, cells, syncs, strict=True):
        times, flat = flat[: len(row)], flat[len(row) :]
        print(f"- {label}: " + " / ".join(f"{t:.1f}" for t in times) + f"; syncs: {sync}")


if __name__ == "__main__":
    main()
