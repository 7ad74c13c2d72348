"""Whether Triton interprets on the CPU (``TRITON_INTERPRET=1``), read once at import.

``triton.jit`` reads the variable when a kernel is defined, so a later change could not take
effect anyway; code paths that use GPU-only instructions are chosen from this flag.
"""

from __future__ import annotations

import os

INTERPRETING: bool = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
