"""Results of the torch engine's casts where the kernels step aside, labelled as this engine's.

Empty inputs, grids past CUDA's limit and the DTensor windows the kernels do not take are cast
by ``tcast_torch`` (the same bits); their results say ``triton``, so ``tcast.upcast`` comes
back to this engine.
"""

from __future__ import annotations

import dataclasses

import torch

from tcast import CastResult

__all__ = ["relabel"]


def relabel(out: torch.Tensor | CastResult) -> torch.Tensor | CastResult:
    """A result of this engine's cast says so (a virtual tensor is returned as it is)."""
    if isinstance(out, CastResult):
        return dataclasses.replace(out, engine="triton")
    return out
