"""``torchc``: the torch engine with ``compile=True``, for the conformance harness.

Registered by ``gpu_entry_points.py`` (not by the package): it lets the harness judge the
compiled kernels of ``tcast_torch.cast(..., compile=True)`` against the reference exactly as
it judges the eager engine.
"""

from __future__ import annotations

from typing import Any

import tcast
import tcast_torch
from tcast_torch._engine import TorchEngine


class CompiledTorchEngine(TorchEngine):
    """The torch engine, casting through its compiled kernels."""

    name = "torchc"

    def cast(self, x: Any, dtype: tcast.DataType, **kwargs: Any) -> Any:
        """Cast with ``compile=True``; results name this engine."""
        out = tcast_torch.cast(x, dtype, compile=True, **kwargs)
        if isinstance(out, tcast.CastResult):
            out.engine = self.name
        return out


#: The engine instance (the entry point loads this).
engine = CompiledTorchEngine()
