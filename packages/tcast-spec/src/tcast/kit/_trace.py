"""Whether torch.compile is tracing the current call, asked without importing torch."""

from __future__ import annotations

import sys

__all__ = ["tracing"]


def tracing() -> bool:
    """True while torch.compile traces (torch imported and compiling); dynamo folds it.

    The kit memoizes rules and derived datatypes on each datatype, but never while a trace
    runs: a store there is a side effect dynamo must replay, and it cannot rebuild the
    frozen dataclasses made during the trace.
    """
    torch = sys.modules.get("torch")
    # a torch that another thread is still importing may lack ``compiler`` (or its
    # ``is_compiling``) for a while; it cannot be compiling this call yet
    is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    return is_compiling is not None and bool(is_compiling())
