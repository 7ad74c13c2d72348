"""tcast_ref: the bit-exact NumPy reference engine of tcast.

Implements every rule of tcast's SEMANTICS.md on NumPy arrays (float32,
float16, ``ml_dtypes.bfloat16``) and is checked against the exact model
(``tcast.exact``) and independent implementations (ml_dtypes, torchao,
gfloat). Registered as the ``ref`` engine, so ``tcast.cast(numpy_array, ...)``
reaches it.
"""

from ._api import cast, cast_dual, upcast
from ._cast import INPUT_DTYPES
from ._codec import code_dtype, decode, encode
from ._engine import RefEngine, engine
from ._hadamard import hadamard
from ._observe import Observer
from ._pack import pack_codes, pack_mask, unpack_codes, unpack_mask
from ._philox import random_bits

__version__ = "0.1.0"

__all__ = [
    "INPUT_DTYPES",
    "Observer",
    "RefEngine",
    "__version__",
    "cast",
    "cast_dual",
    "code_dtype",
    "decode",
    "encode",
    "engine",
    "hadamard",
    "pack_codes",
    "pack_mask",
    "random_bits",
    "unpack_codes",
    "unpack_mask",
    "upcast",
]
