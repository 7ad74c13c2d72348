"""A progress bar on standard error (tqdm) for long generation and verification."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["progress"]


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> _Silent:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def progress(total: int, desc: str, quiet: bool) -> Any:
    """A context-managed bar with ``update(n)``; silent with ``quiet`` or off a terminal."""
    if quiet:
        return _Silent()
    from tqdm import tqdm

    # disable=None: no bar when standard error is not a terminal (logs, CI, pipes)
    return tqdm(total=total, desc=desc, unit="line", file=sys.stderr, disable=None, leave=False)
