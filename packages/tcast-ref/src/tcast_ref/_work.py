"""Reusable scratch buffers for one cast.

Allocating fresh chunk-sized temporaries on every piece makes the C allocator map and
unmap pages each time (glibc returns large blocks to the system), which costs more than
the arithmetic; a cast keeps its scratch arrays in one Workspace instead.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Workspace"]


class Workspace:
    """Named scratch arrays, grown on demand and reused across the pieces of one cast."""

    def __init__(self) -> None:
        self._bufs: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
        """A writable array of ``shape`` and ``dtype`` (contents undefined)."""
        dtype = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64))
        buf = self._bufs.get(name)
        if buf is None or buf.size < n or buf.dtype != dtype:
            buf = np.empty(max(n, 1), dtype)
            self._bufs[name] = buf
        return buf[:n].reshape(shape)
