"""Fixtures shared by the torch engine's tests."""

from __future__ import annotations

import pytest
import torch.distributed as dist


@pytest.fixture(scope="module")
def mesh(tmp_path_factory):
    """A world of one process (gloo on the CPU, a FileStore) and its 1-D device mesh."""
    if not dist.is_available():
        pytest.skip("torch.distributed is not available in this torch build")
    from torch.distributed.device_mesh import init_device_mesh

    store = dist.FileStore(str(tmp_path_factory.mktemp("dist") / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        yield init_device_mesh("cpu", (1,))
    finally:
        dist.destroy_process_group()
