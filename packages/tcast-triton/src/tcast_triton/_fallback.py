"""Results of the torch engine's casts where the kernels step aside, labelled as this engine's.

Empty inputs, grids past CUDA's limit and the DTensor windows the kernels do not take are cast
by ``tcast_torch`` (the same bits); their results say ``triton``, so ``tcast.upcast`` comes
back to this engine.
"""

from __future__ import annotations

import dataclasses

import torch

from tcast import CastResult
from tcast.kit import CastRequest, cast_transformed
from tcast_torch import engine as torch_engine

__all__ = ["relabel", "torch_cast"]


def torch_cast(x: torch.Tensor, request: CastRequest) -> torch.Tensor | CastResult:
    """The torch engine's cast of a checked request, its transform (§5.11) composed around."""
    if request.modes.transform is None:
        return torch_engine.run(x, request)
    return cast_transformed(torch_engine, torch_engine.run, x, request)


def relabel(out: torch.Tensor | CastResult) -> torch.Tensor | CastResult:
    """A result of this engine's cast says so (a virtual tensor is returned as it is)."""
    if isinstance(out, CastResult):
        return dataclasses.replace(out, engine="triton")
    return out
