"""An example third-party tcast engine: the engine kit's structure around borrowed arithmetic.

A real engine replaces the bodies of ``run`` and ``run_upcast`` with its own array code (a
simulator, a device runtime, a kernel library; docs/engines.md §3); everything around them
(argument checks, the request, result validation, refusals) is the kit's ``EngineBase``. Here
the arithmetic is borrowed from the reference engine, so that the example passes
``tcast conformance --engine example`` as written.

Set ``TCAST_ENGINE_EXAMPLE_FLIP=1`` to flip the lowest bit of the first element of every
virtual result: a broken engine, for showing what a failing conformance run reports.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tcast import CastResult
from tcast.kit import CastRequest, EngineBase
from tcast_ref import engine as _reference

__version__ = "0.1.0"
__all__ = ["FLIP_ENV", "ExampleEngine", "engine"]

#: Set to 1 to break the engine on purpose (one bit of every virtual result).
FLIP_ENV = "TCAST_ENGINE_EXAMPLE_FLIP"


class ExampleEngine(EngineBase):
    """Casts NumPy arrays; below the reference engine's priority, so it runs when named."""

    name = "example"
    priority = -10
    array_type = np.ndarray
    array_what = "NumPy arrays"
    result_ops = _reference.result_ops  # build, check and unpack results (tcast.kit.ArrayOps)

    def check_rbits(self, x: Any, rbits: Any, width: int) -> np.ndarray:
        """Explicit random bits: ``width``-bit integers (uint8 or uint16) of x's shape."""
        return _reference.check_rbits(x, rbits, width)

    def run(self, x: np.ndarray, request: CastRequest) -> np.ndarray | CastResult:
        """The cast of a checked request (your array code goes here)."""
        out = _reference.run(x, request)
        if isinstance(out, CastResult):
            out.engine = self.name  # a result names the engine that made it
        if os.environ.get(FLIP_ENV) == "1" and isinstance(out, np.ndarray) and out.size:
            out = out.copy()
            out.reshape(-1).view(np.uint8)[0] ^= 1  # the deliberate bug
        return out

    def run_upcast(self, result: CastResult) -> np.ndarray:
        """The decode of a checked result (your array code goes here)."""
        return _reference.run_upcast(result)


#: The instance the ``tcast.engines`` entry point loads.
engine = ExampleEngine()
