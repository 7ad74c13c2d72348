"""Time of an observer's update against reading its input (a benchmark, not a test).

For each datatype and calibration method, ``tcast_torch.Observer.update`` on a bfloat16
tensor of ``size x size`` on the GPU (rows marked "scales() after each" read the scales after
every update, as delayed scaling does), timed with CUDA events two ways: one update alone
(the median of ``--repeat`` after twelve warm-up calls, the host's work included: a single
calibration batch) and ``--repeat`` updates back to back (their mean, after two whole rounds
of an amax history: calibration over many batches, where the host queues the next update
while the GPU runs this one); beside a device copy of the same tensor in the same run. The
copy reads and writes the bytes once; reading alone takes about half of it, so the ratios
are ``(copy / 2) / update``: 1.0 is an update as fast as reading the input once.

    python packages/tcast-torch/bench/bench_observers.py [--size 16384] [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics

import torch

import tcast
import tcast_torch
from tcast import observe as ob

#: (datatype, method, whether each update is followed by a read of the scales: delayed
#: scaling reads them every step)
CASES = [
    ("e4m3fn_float32", ob.MinMax(), False),
    ("mxfp8", ob.MinMax(), False),
    ("int8_float32_t0", ob.MinMax(), False),
    ("uint8_float32_uint8_t0", ob.MinMax(), False),
    ("uint8_float32_uint8_t32", ob.MinMax(), False),
    ("uint8_float32_uint8_t32", ob.MinMax(momentum=0.01), False),
    ("mxfp8", ob.MinMax(momentum=0.01), False),
    ("mxfp8", ob.AmaxHistory(length=16), False),
    ("e4m3fn_float32", ob.AmaxHistory(length=1024), False),
    ("e4m3fn_float32", ob.AmaxHistory(length=1024), True),
    ("mxfp8", ob.AmaxHistory(length=16), True),
    ("nvfp4", ob.MinMax(), False),
    ("mxfp8", ob.Mse(), False),
    ("e4m3fn_float32", ob.HistogramPercentile(), False),
    ("e4m3fn_float32", ob.Percentile(), False),
]


def _step(obs, x, read: bool) -> None:
    obs.update(x)
    if read:
        obs.scales()


def _time(fn, repeat: int) -> float:
    """Median milliseconds of fn() over ``repeat`` calls.

    Twelve warm-up calls first: the first reads of scales run eagerly, the later ones
    compiled.
    """
    for _ in range(12):
        fn()
    times = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def _back_to_back(fn, repeat: int, warm: int = 2) -> float:
    """Mean milliseconds of fn() over ``repeat`` calls queued back to back (``warm`` first)."""
    for _ in range(warm):
        fn()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(repeat):
        fn()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / repeat


def main() -> None:
    """Time every case against a copy and print the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", type=int, default=16384)
    p.add_argument("--repeat", type=int, default=20)
    a = p.parse_args()
    x = torch.randn(a.size, a.size, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    for _ in range(200):  # the GPU's clocks up before anything is timed
        out.copy_(x)
    copy = _time(lambda: out.copy_(x), a.repeat)
    print(
        f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, tcast {tcast.__version__};"
        f" {a.size}x{a.size} bfloat16, median of {a.repeat}; copy {copy:.3f} ms"
    )
    print("| datatype | method | one update ms | ratio | back to back ms | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for name, method, read in CASES:
        obs = tcast_torch.Observer(name, method)
        ms = _time(lambda obs=obs, r=read: _step(obs, x, r), a.repeat)
        # a history's rounds: warm-ups of two whole rounds (its end-of-round fold compiled);
        # the 32 timed updates hold two folds of a 16-long history, none of a 1024-long one
        # (one fold per 1024 updates: about 1/16 of one update's time)
        rounds = getattr(method, "length", 0)
        tb = _back_to_back(
            lambda obs=obs, r=read: _step(obs, x, r), max(a.repeat, 32), 2 * rounds + 2
        )
        label = f"{method}, scales() after each" if read else f"{method}"
        print(
            f"| {name} | {label} | {ms:.3f} | {copy / 2 / ms:.2f} | {tb:.3f} | "
            f"{copy / 2 / tb:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
