"""Throughput and peak memory of the reference engine against gfloat and ml_dtypes.

Single-threaded, float32 input of ``--elements`` elements (default 16M) laid out as rows of
4096. For each cast: tcast_ref's time per element, the same cast through gfloat's NumPy path
(``round_ndarray``, with the block scale computed in NumPy for MX formats) where gfloat has the
format, and ml_dtypes' ``astype`` round trip (to the format and back to float32) for unscaled
casts. Peak additional memory is measured with tracemalloc (NumPy reports its buffers to it)
and given as a multiple of the input's bytes. Not a test: run it by hand::

    .venv/bin/python packages/tcast-ref/bench/bench_ref.py [--elements N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import tracemalloc
from importlib.metadata import version

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import gfloat
import ml_dtypes
import numpy as np
from gfloat.formats import (
    format_info_ocp_e2m1,
    format_info_ocp_e4m3,
    format_info_ocp_e5m2,
    format_info_ocp_int8,
)

import tcast
import tcast_ref


def _time(fn, repeat: int) -> float:
    fn()  # warm up (tables, caches)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _peak(fn) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def _gfloat_mx(x: np.ndarray, fi, emax: int, block: int) -> np.ndarray:
    """MX virtual cast composed from gfloat's NumPy rounding: floor scale, round, rescale."""
    b = x.reshape(-1, block).astype(np.float64)
    amax = np.abs(b).max(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        e = np.where(amax > 0, np.floor(np.log2(amax)) - emax, -127.0)
    scale = np.exp2(np.clip(e, -127, 127))
    q = gfloat.round_ndarray(fi, b / scale, sat=True)
    return (q * scale).reshape(x.shape)


def _gfloat_int8_channel(x: np.ndarray) -> np.ndarray:
    b = x.astype(np.float64)
    scale = np.abs(b).max(axis=-1, keepdims=True) / 127.0
    return gfloat.round_ndarray(format_info_ocp_int8, b / scale, sat=True) * scale


def main() -> None:
    """Run every case and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=1 << 24)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--gfloat-elements",
        type=int,
        default=1 << 22,
        help="gfloat is slow: time it on this many elements (per-element figure)",
    )
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = args.elements - args.elements % 4096
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-6, 7, n))).astype(np.float32)
    x = x.reshape(-1, 4096)
    xg = x.reshape(-1)[: args.gfloat_elements].reshape(-1, 4096)
    print(
        f"# tcast-ref {tcast_ref.__version__}, numpy {np.__version__}, ml_dtypes "
        f"{ml_dtypes.__version__}, gfloat {version('gfloat')}, Python "
        f"{platform.python_version()}, {platform.processor() or platform.machine()}"
    )
    print(
        f"# {n} float32 elements ({x.nbytes / 2**20:.0f} MiB), rows of 4096, single thread, "
        f"best of {args.repeat}; gfloat timed on {xg.size} elements"
    )
    cases = [
        ("e5m2 (unscaled)", "float8_e5m2", {}, ml_dtypes.float8_e5m2, format_info_ocp_e5m2),
        ("e4m3fn (unscaled)", "float8_e4m3fn", {}, ml_dtypes.float8_e4m3fn, format_info_ocp_e4m3),
        ("e2m1 (unscaled)", "float4_e2m1fn", {}, ml_dtypes.float4_e2m1fn, format_info_ocp_e2m1),
        ("MXFP8 virtual", "mxfp8", {}, None, (format_info_ocp_e4m3, 8)),
        ("MXFP4 virtual", "mxfp4", {}, None, (format_info_ocp_e2m1, 2)),
        ("MXFP4 compress", "mxfp4", {"castmode": "compress"}, None, None),
        ("NVFP4 virtual", "nvfp4", {}, None, None),
        ("int8 per-channel", "int8_Fc", {}, None, "int8"),
    ]
    header = (
        "| cast | tcast-ref ns/elem | Melem/s | peak extra memory | gfloat ns/elem "
        "| speedup vs gfloat | ml_dtypes round trip ns/elem | vs ml_dtypes |"
    )
    print(header)
    print("|" + "---|" * 8)
    for label, name, kw, mltype, gf in cases:
        dt = tcast.datatype(name)
        t = _time(lambda dt=dt, kw=kw: tcast_ref.cast(x, dt, **kw), args.repeat) / n
        peak = _peak(lambda dt=dt, kw=kw: tcast_ref.cast(x, dt, **kw)) / x.nbytes
        gns = ml = None
        if mltype is not None:
            ml = _time(lambda m=mltype: x.astype(m).astype(np.float32), args.repeat) / n
            gns = _time(lambda g=gf: gfloat.round_ndarray(g, xg, sat=True), 1) / xg.size
        elif isinstance(gf, tuple):
            gns = _time(lambda g=gf: _gfloat_mx(xg, g[0], g[1], 32), 1) / xg.size
        elif gf == "int8":
            gns = _time(lambda: _gfloat_int8_channel(xg), 1) / xg.size
        g_cell = f"{gns * 1e9:.1f}" if gns else "—"
        s_cell = f"{gns / t:.1f}x" if gns else "—"
        m_cell = f"{ml * 1e9:.1f}" if ml else "—"
        v_cell = f"{ml / t:.2f}x" if ml else "—"
        print(
            f"| {label} | {t * 1e9:.1f} | {1e-6 / t:.0f} | {peak:.2f}x input | {g_cell} "
            f"| {s_cell} | {m_cell} | {v_cell} |"
        )


if __name__ == "__main__":
    main()
