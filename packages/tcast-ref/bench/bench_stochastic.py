"""Speed of seeded stochastic rounding and of the Philox streams, NumPy reference and PyTorch CPU.

Times, on a float32 4096 x 1024 input: ``cast(x, "mxfp8", roundmode="stochastic", seed=1)``
and the unscaled ``cast(x, "float8_e4m3fn", ...)`` through tcast_ref and tcast_torch (CPU,
eager), and ``random_bits(1, 2**22, width=K)`` of both engines (K = 8 and 16). Prints the
configuration, then the median of ``--repeat`` runs (``time.perf_counter``, after one
warm-up call) per case. Not a test: run it by hand::

    .venv/bin/python packages/tcast-ref/bench/bench_stochastic.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

import tcast
import tcast_ref
import tcast_torch

SHAPE = (4096, 1024)
FORMATS = ("mxfp8", "float8_e4m3fn")
SEED = 1


def _median_seconds(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` calls of ``fn``, after one untimed warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    """Print the configuration, then one line per timed case."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per case (median)")
    args = ap.parse_args()

    x_np = np.random.default_rng(0).standard_normal(SHAPE, dtype=np.float32)
    x_t = torch.from_numpy(x_np.copy())
    n = 1 << 22
    cases: list[tuple[str, Callable[[], object]]] = []
    for fmt in FORMATS:
        cases.append(
            (
                f"tcast_ref.cast {fmt} stochastic seed={SEED}",
                lambda f=fmt: tcast_ref.cast(x_np, f, roundmode="stochastic", seed=SEED),
            )
        )
        cases.append(
            (
                f"tcast_torch.cast {fmt} stochastic seed={SEED} (CPU, eager)",
                lambda f=fmt: tcast_torch.cast(
                    x_t, f, roundmode="stochastic", seed=SEED, compile=False
                ),
            )
        )
    for k in (8, 16):  # K random bits per element: 16 or 8 elements per Philox call
        cases.append(
            (
                f"tcast_ref.random_bits(1, 2**22, width={k})",
                lambda k=k: tcast_ref.random_bits(SEED, n, width=k),
            )
        )
        cases.append(
            (
                f"tcast_torch.random_bits(1, 2**22, width={k})",
                lambda k=k: tcast_torch.random_bits(SEED, n, width=k),
            )
        )

    print(
        f"tcast {tcast.__version__}, numpy {np.__version__}, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads), python {platform.python_version()}"
    )
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; input float32 "
        f"{SHAPE[0]} x {SHAPE[1]}; median of {args.repeat} runs after 1 warm-up"
    )
    for name, fn in cases:
        sec = _median_seconds(fn, args.repeat)
        print(f"{name:<62} {sec * 1e3:9.1f} ms")


if __name__ == "__main__":
    main()
