"""DTensor casts by the Triton engine across 2 and 4 processes, bit for bit the whole's.

The DTensor cases of ``tcast-torch/tests/dtensor_worker.py`` (its module docstring) with
``tcast_triton.cast`` as the engine under test and as the single-process cast compared
against: every placement kind, uneven shards, cut tiles, channel and tensor scales, NVFP4's
tensor amax, 2-D tiles and sparsity, stochastic rounding, the conformance smoke sample,
``cast_dual``, gradients, refusals and the all_reduce counts, and the FSDP2 step of a model
quantize_model fake-quantizes (the casts by the Triton engine). CPU tensors under the
interpreter on gloo; on a GPU the processes share it (gloo reduces CUDA tensors; the FSDP2
step needs NCCL and its GPUs: ``bench/dtensor_gpus.py``, the two-GPU machine).
"""

from __future__ import annotations

import dtensor_worker
import pytest
import torch.distributed as dist

from tcast_triton._launch import interpreting

# Under the interpreter (CI, where every kernel launch is slow): 2 processes, every group but
# the conformance sample (its DTensor logic is the engines' shared _shards, which the torch
# engine's run covers over the sample; this engine's kernels are checked against tcast_ref
# over it single-process), the placements lean (every scale kind, fewer shapes and
# placements); 4 processes, the 2 x 2 mesh's collectives (the torch engine's run covers its
# layouts). On a GPU (processes sharing it over gloo): not the conformance sample (minutes
# of kernel compiles), the whole-tensor layouts (gathered: gloo's CUDA all_gather
# segfaults) nor FSDP2 (NCCL).
GROUPS = {
    2: ["placements,communication,refusals,layouts,dual,views,gradients,fsdp", "--lean"],
    4: ["communication"],
}
if not interpreting():
    GROUPS = {
        2: ["placements,communication,refusals,dual,views,gradients"],
        4: ["placements,communication,refusals"],
    }
#: Fewer checks than this means a group of cases stopped early.
MIN_CHECKS = {2: 850, 4: 30} if interpreting() else {2: 1250, 4: 1300}


@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")
@pytest.mark.parametrize("world", [2, 4])
def test_triton_dtensor_casts_equal_the_cast_of_the_whole_tensor(world, tmp_path):
    device = "cpu" if interpreting() else "cuda"
    options = [*GROUPS[world], "--engine", "triton", "--device", device]
    for report in dtensor_worker.run_world(world, tmp_path, *options, timeout=600):
        assert not report["failures"], "\n".join(report["failures"][:20])
        assert report["checked"] >= MIN_CHECKS[world], report["checked"]
