"""DTensor casts across 2 and 4 gloo processes on the CPU, bit for bit the whole tensor's cast.

Each world size is one launch of ``dtensor_worker.py`` processes running every case
(process start-up and gloo set-up dominate a case's cost): every placement kind
(Shard(0), Shard(1), Shard(-1), Replicate, a 2 x 2 mesh), uneven shards (6 rows over 4
processes), tiles cut by shard boundaries, channel and tensor scales along sharded
dimensions, two-level scaling (NVFP4), 2-D tiles, sparsity groups cut by a boundary, seeded
and explicit-bit stochastic rounding, virtual and actual casts and their upcasts, the
conformance space's smoke sample (every axis value), refusals, gradients, an FSDP2
(``fully_shard``) training step of a model fake-quantized by ``quantize_model``, and casts
with given scale parts (plain and DTensor parts, compared with ``tcast_ref``'s cast of the
whole tensor). Each process compares the ``full_tensor()`` of every part with the
single-process cast as raw bits and reports its failures; the test fails on any failure, a
crash or a hang.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch.distributed as dist

WORKER = Path(__file__).with_name("dtensor_worker.py")
#: The groups of cases each world size runs: 4 processes (on CI's 2 cores, start-up is most
#: of their cost) run the groups whose cases differ with 4 shards or a 2 x 2 mesh, not the
#: conformance sample, views or gradients, which 2 processes cover.
GROUPS = {2: [], 4: ["placements,communication,refusals,dual,layouts,fsdp,given"]}
#: Fewer checks than this means a group of cases stopped early.
MIN_CHECKS = {2: 2700, 4: 1700}


def _worker():
    spec = importlib.util.spec_from_file_location("dtensor_worker", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")
@pytest.mark.parametrize("world", [2, 4])
def test_dtensor_casts_equal_the_cast_of_the_whole_tensor(world, tmp_path):
    for report in _worker().run_world(world, tmp_path, *GROUPS[world]):
        assert not report["failures"], "\n".join(report["failures"][:20])
        assert report["checked"] >= MIN_CHECKS[world], report["checked"]
