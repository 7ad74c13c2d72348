"""The ``ref`` engine object registered under the ``tcast.engines`` entry-point group."""

from __future__ import annotations

from typing import Any

import numpy as np

from tcast import CastModes, CastResult, DataType

from ._cast import cast, upcast

__all__ = ["RefEngine", "engine"]


class RefEngine:
    """The bit-exact NumPy reference engine: supports everything SEMANTICS.md defines."""

    name = "ref"
    priority = 0

    def accepts(self, x: Any) -> bool:
        """NumPy arrays (of any dtype: unsupported dtypes are refused by ``cast`` with a reason)."""
        return isinstance(x, np.ndarray)

    def supports(self, dtype: DataType, modes: CastModes) -> bool:
        """Every valid datatype under every mode (codebooks cannot be built as DataTypes yet)."""
        return isinstance(dtype, DataType) and isinstance(modes, CastModes)

    def cast(self, x: Any, dtype: DataType, **kwargs: Any) -> np.ndarray | CastResult:
        """Cast with :func:`tcast_ref.cast`."""
        return cast(x, dtype, **kwargs)

    def upcast(self, result: CastResult) -> np.ndarray:
        """Decode with :func:`tcast_ref.upcast`."""
        return upcast(result)

    def __repr__(self) -> str:
        return "tcast_ref.engine"


#: The engine instance (the entry point loads this).
engine = RefEngine()
