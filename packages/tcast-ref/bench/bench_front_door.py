"""The cost of the front door: ``tcast.cast`` against the engine's own function.

Times ``tcast.cast(x, dtype)`` and ``tcast_ref.cast(x, dtype)`` on a small float32 NumPy
array (default 8 x 64, where the per-call overhead shows most), and the same pair for torch
CPU tensors with ``tcast_torch.cast``. Each figure is the best of ``--repeat`` runs of
``--number`` calls (``timeit``), after a warm-up call that performs discovery. Also reports
whether casting the NumPy array imported torch (it must not). Not a test: run it by hand::

    .venv/bin/python packages/tcast-ref/bench/bench_front_door.py [--dtype mxfp4] [--shape 8 64]
"""

from __future__ import annotations

import argparse
import platform
import sys
import timeit
from importlib.metadata import version

import numpy as np

import tcast
import tcast_ref


def _best(fn, number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main() -> None:
    """Print the configuration and the timings."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtype", default="mxfp4")
    p.add_argument("--shape", type=int, nargs="+", default=[8, 64])
    p.add_argument("--number", type=int, default=300)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--no-torch", action="store_true", help="skip the torch pair")
    a = p.parse_args()
    x = np.random.default_rng(0).standard_normal(a.shape).astype(np.float32)
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, tcast "
        f"{version('tcast-spec')}, {platform.processor() or platform.machine()}; "
        f"dtype {a.dtype}, shape {tuple(a.shape)} float32, best of {a.repeat} x {a.number}"
    )
    tcast.cast(x, a.dtype)
    imported = "torch" in sys.modules
    rows = [
        (
            "numpy",
            lambda: tcast.cast(x, a.dtype),
            lambda: tcast_ref.cast(x, a.dtype),
            "tcast_ref.cast",
        )
    ]
    if not a.no_torch:
        import torch

        import tcast_torch

        t = torch.from_numpy(x)
        tcast.cast(t, a.dtype)
        rows.append(
            (
                "torch",
                lambda: tcast.cast(t, a.dtype),
                lambda: tcast_torch.cast(t, a.dtype),
                "tcast_torch.cast",
            )
        )
    print(f"{'input':6} {'tcast.cast':>12} {'engine':>18} {'ratio':>6}")
    for name, front, own, label in rows:
        f, e = _best(front, a.number, a.repeat), _best(own, a.number, a.repeat)
        print(f"{name:6} {f * 1e6:10.1f}us {label:>16} {e * 1e6:.1f}us {f / e:5.2f}x")
    print(f"casting the NumPy array imported torch: {imported}")


if __name__ == "__main__":
    main()
