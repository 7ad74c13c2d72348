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
    return host_us_interleaved([fn], calls, repeats)[0]


def host_us_interleaved(fns: list, calls: int = 200, rounds: int = 9) -> list[float]:
    """:func:`host_us` of each of ``fns``, measured round by round, all in every round.

    The host's speed drifts over a run (other processes, clocks): one function measured
    after another would carry the drift into their comparison. Here each round times
    ``calls`` calls of every function in turn; each gets the median over the rounds.
    """
    for fn in fns:
        for _ in range(10):
            fn()
    runs: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, times in zip(fns, runs, strict=True):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            times.append((t1 - t0) / calls * 1e6)
    return [statistics.median(times) for times in runs]
