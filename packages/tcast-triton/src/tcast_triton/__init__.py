"""tcast_triton: the Triton GPU engine of tcast (bit-exact with tcast_ref, at copy speed).

``cast`` and ``upcast`` take CUDA tensors (CPU tensors under ``TRITON_INTERPRET=1``); the
engine registers as ``triton`` in the ``tcast.engines`` entry-point group and outranks
``torch`` for the tensors it accepts. See the package README and docs/triton.md.
"""

from ._api import cast, cast_dual, upcast
from ._engine import TritonEngine, engine

__version__ = "0.1.0"

__all__ = ["TritonEngine", "__version__", "cast", "cast_dual", "engine", "upcast"]
