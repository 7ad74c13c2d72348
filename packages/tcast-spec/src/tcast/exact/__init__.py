"""The exact model: SEMANTICS.md as executable, pure-Python code.

Integers and fractions only (float32 rounding is done exactly), slow and
obviously right: this is the oracle the NumPy reference engine is checked
against, value by value and block by block.

* :func:`encode` / :func:`decode`: one value into / out of one format.
* :func:`cast_block`: one block of float32 values into a scaled datatype.
* :func:`exponent_scale`: the power-of-two scale rule of every scale mode.
* :func:`philox4x32` / :func:`random_bits`: the documented random bits for a seed.
"""

from ..philox import philox4x32, random_bits
from ._block import BlockResult, cast_block, exponent_scale, sparsity_mask
from ._f32 import bits32, f32, from_bits32
from ._scalar import RBITS_WIDTH, decode, decode_exact, encode

__all__ = [
    "RBITS_WIDTH",
    "BlockResult",
    "bits32",
    "cast_block",
    "decode",
    "decode_exact",
    "encode",
    "exponent_scale",
    "f32",
    "from_bits32",
    "philox4x32",
    "random_bits",
    "sparsity_mask",
]
