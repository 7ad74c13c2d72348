"""Eager CPU casts take at most 3x the input's bytes in peak memory growth (full tier).

Each cell runs ``bench/bench_memory.py``'s measurement in fresh processes (peak resident
memory growth of the first cast, output included, over the input's bytes; the median of
three, as the bench reports it). Pieces of a 32nd of the input, 2-D tiles made from boxes of
the input, and sparse masks selected and packed in pieces keep every cast mode under 3x.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_memory.py"

CELLS = [
    ("mxfp8_2d", "virtual", 22, "even"),  # 2-D tiles: block rows and result in the input
    ("mxfp8_2d", "compress", 22, "stochastic"),
    ("mxfp4", "virtual", 22, "stochastic"),  # small inputs: a 32nd of them a piece
    ("mxfp4", "compress", 22, "even"),
    ("e2m1f_e8m0_t32n2m4", "virtual", 22, "even"),  # sparsity: masks in pieces
    ("e2m1f_e8m0_t32n2m4", "compress", 24, "even"),  # kept codes selected in pieces
]


@pytest.mark.full
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize(("dtype", "castmode", "log2n", "roundmode"), CELLS)
def test_cpu_cast_peak_memory_is_at_most_3x_the_input(dtype, castmode, log2n, roundmode):
    spec = ["torch", castmode, log2n, dtype, 0, 1, roundmode]
    extra = []
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, str(BENCH), "--child", json.dumps(spec)],
            capture_output=True,
            text=True,
            check=True,
        )
        run = json.loads(out.stdout.strip().splitlines()[-1])
        assert run["peak_exact"], "the peak could not be reset"
        extra.append(run["extra_over_input"])
    assert statistics.median(extra) <= 3.0, f"{dtype} {castmode} 2**{log2n} {roundmode}: {extra}"
