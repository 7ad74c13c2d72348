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
    return torch is not None and torch.compiler.is_compiling()
