"""Timing helpers shared by the benchmark scripts of this folder (GPU only)."""

from __future__ import annotations

import statistics
import time

import torch
from triton.testing import do_bench


def graph_ms(fn, rep: int = 50) -> float:
    """Median ms of ``fn`` captured in a CUDA graph and replayed (no host overhead)."""
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return do_bench(g.replay, warmup=25, rep=rep, return_mode="median")


def host_us(fn, calls: int = 200, repeats: int = 5) -> float:
    """Host microseconds per call, ``calls`` calls queued without synchronizing.

    The median of ``repeats`` such runs: the host's speed varies from run to run.
    """
    for _ in range(10):
        fn()
    runs = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        runs.append((t1 - t0) / calls * 1e6)
    return statistics.median(runs)
