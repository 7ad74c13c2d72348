"""The ``torch`` engine object registered under the ``tcast.engines`` entry-point group."""

from __future__ import annotations

from typing import Any

import torch

from tcast import CastModes, CastResult, DataType

from ._cast import cast, upcast

__all__ = ["TorchEngine", "engine"]


class TorchEngine:
    """The bit-exact PyTorch engine: everything SEMANTICS.md defines, on CPU and CUDA."""

    name = "torch"
    priority = 0

    def accepts(self, x: Any) -> bool:
        """Torch tensors on any device (unsupported dtypes are refused by ``cast``)."""
        return isinstance(x, torch.Tensor)

    def supports(self, dtype: DataType, modes: CastModes) -> bool:
        """Every valid datatype under every mode."""
        return isinstance(dtype, DataType) and isinstance(modes, CastModes)

    def cast(self, x: Any, dtype: DataType, **kwargs: Any) -> torch.Tensor | CastResult:
        """Cast with :func:`tcast_torch.cast`."""
        return cast(x, dtype, **kwargs)

    def upcast(self, result: CastResult) -> torch.Tensor:
        """Decode with :func:`tcast_torch.upcast`."""
        return upcast(result)

    def __repr__(self) -> str:
        return "tcast_torch.engine"


#: The engine instance (the entry point loads this).
engine = TorchEngine()
