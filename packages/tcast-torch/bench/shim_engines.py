"""``torchc`` and ``torche``: the torch engine with ``compile`` forced on or off.

Registered by ``gpu_entry_points.py`` (not by the package), for the conformance harness:
the engine ``torch`` runs its compiled kernels on CUDA tensors by default (``compile=None``)
and eagerly on the CPU; these two let the harness judge either way on any device, exactly as
it judges the default engine.
"""

from __future__ import annotations

from typing import Any

import tcast
from tcast_torch._cast import run_cast
from tcast_torch._engine import TorchEngine


class _ForcedTorchEngine(TorchEngine):
    """The torch engine with a fixed ``compile`` argument."""

    compile: bool = False

    def run(self, x: Any, request: tcast.CastRequest) -> Any:
        """Cast with this engine's ``compile``; results name this engine."""
        out = run_cast(x, request, compile=self.compile)
        if isinstance(out, tcast.CastResult):
            out.engine = self.name
        return out


class CompiledTorchEngine(_ForcedTorchEngine):
    """Always through the compiled kernels (``compile=True``)."""

    name = "torchc"
    compile = True


class EagerTorchEngine(_ForcedTorchEngine):
    """Always eager, one PyTorch kernel per operation (``compile=False``)."""

    name = "torche"
    compile = False


#: The engine instances (the entry points load these).
compiled = CompiledTorchEngine()
eager = EagerTorchEngine()
