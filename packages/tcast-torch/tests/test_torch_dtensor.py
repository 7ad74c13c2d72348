"""DTensor casts across 2 and 4 gloo processes on the CPU, bit for bit the whole tensor's cast.

Each world size is one launch of ``dtensor_worker.py`` processes running every case
(process start-up and gloo set-up dominate a case's cost): every placement kind
(Shard(0), Shard(1), Shard(-1), Replicate, a 2 x 2 mesh), uneven shards (6 rows over 4
processes), tiles cut by shard boundaries, channel and tensor scales along sharded
dimensions, two-level scaling (NVFP4), 2-D tiles, sparsity groups cut by a boundary, seeded
and explicit-bit stochastic rounding, virtual and actual casts and their upcasts, the
conformance space's smoke sample (every axis value), refusals, gradients, and an FSDP2
(``fully_shard``) training step of a model fake-quantized by ``quantize_model``. Each
process compares the ``full_tensor()`` of every part with the single-process cast as raw
bits and reports its failures; the test fails on any failure, a crash or a hang.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch.distributed as dist

WORKER = Path(__file__).with_name("dtensor_worker.py")
#: A hang (a process waiting for a collective its peers never join) fails the test here.
TIMEOUT_S = 400
#: Fewer checks than this means a group of cases stopped early.
MIN_CHECKS = {2: 2300, 4: 2400}


@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")
@pytest.mark.parametrize("world", [2, 4])
def test_dtensor_casts_equal_the_cast_of_the_whole_tensor(world, tmp_path):
    store, out = tmp_path / "store", tmp_path / "out"
    logs = [open(tmp_path / f"log.{r}", "w") for r in range(world)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(r), str(world), str(store), str(out)],
            stdout=logs[r],
            stderr=subprocess.STDOUT,
        )
        for r in range(world)
    ]
    deadline = time.monotonic() + TIMEOUT_S
    hung = False
    try:
        for p in procs:
            p.wait(timeout=max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        hung = True
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for f in logs:
            f.close()
    if hung:  # the workers' logs say where each one waited
        tails = [
            f"process {r}:\n{(tmp_path / f'log.{r}').read_text()[-3000:]}" for r in range(world)
        ]
        pytest.fail(f"the workers did not finish in {TIMEOUT_S} s\n" + "\n".join(tails))
    for r in range(world):
        result = out.with_name(f"out.{r}")
        log = (tmp_path / f"log.{r}").read_text()[-4000:]
        assert procs[r].returncode == 0 and result.exists(), f"process {r} failed:\n{log}"
        report = json.loads(result.read_text())
        assert not report["failures"], "\n".join(report["failures"][:20])
        assert report["checked"] >= MIN_CHECKS[world], report["checked"]
