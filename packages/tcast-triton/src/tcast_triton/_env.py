"""Whether Triton interprets on the CPU (``TRITON_INTERPRET=1``), read once at import.

``triton.jit`` reads the variable when a kernel is defined, so a later change could not take
effect anyway; code paths that use GPU-only instructions are chosen from this flag.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

__all__ = ["INTERPRETING", "quiet_numpy"]

INTERPRETING: bool = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def quiet_numpy() -> contextlib.AbstractContextManager[Any]:
    """NumPy's floating-point warnings off while the interpreter runs a kernel (else nothing).

    The interpreter computes in NumPy, where a product that overflows to Inf (intended:
    SEMANTICS.md §5.3) or a NaN operand would warn.
    """
    if INTERPRETING:
        import numpy

        return numpy.errstate(all="ignore")
    return contextlib.nullcontext()
