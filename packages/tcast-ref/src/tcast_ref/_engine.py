"""The ``ref`` engine object registered under the ``tcast.engines`` entry-point group."""

from __future__ import annotations

from typing import Any

import numpy as np

from tcast import CastResult
from tcast.kit import CastRequest, EngineBase

from ._accept import array_refusal
from ._cast import OPS, check_rbits, run_cast, run_upcast

__all__ = ["RefEngine", "engine"]


class RefEngine(EngineBase):
    """The bit-exact NumPy reference engine: supports everything SEMANTICS.md defines."""

    name = "ref"
    priority = 0
    array_type = np.ndarray
    array_what = "NumPy arrays"
    array_one = "a NumPy array"
    result_ops = OPS

    def refusal(self, a: np.ndarray) -> str | None:
        """Masked arrays, matrices and subclasses with hooks of their own (``_accept``)."""
        return array_refusal(a)

    def check_rbits(self, x: Any, rbits: Any) -> np.ndarray:
        """A uint32 NumPy array of x's shape."""
        return check_rbits(x, rbits)

    def run(self, x: np.ndarray, request: CastRequest) -> np.ndarray | CastResult:
        """The cast, by :func:`tcast_ref._cast.run_cast`."""
        return run_cast(x, request)

    def run_upcast(self, result: CastResult) -> np.ndarray:
        """The decode, by :func:`tcast_ref._cast.run_upcast`."""
        return run_upcast(result)

    def __repr__(self) -> str:
        return "tcast_ref.engine"


#: The engine instance (the entry point loads this).
engine = RefEngine()
