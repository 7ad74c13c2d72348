"""The exact model: SEMANTICS.md as executable, pure-Python code.

Integers and fractions only (float32 rounding is done exactly), slow and
obviously right: this is the oracle the NumPy reference engine is checked
against, value by value and block by block.

* :func:`encode` / :func:`decode`: one value into / out of one format.
* :func:`cast_block`: one block of float32 values into a scaled datatype.
* :func:`cast_array`: a whole small array: tiling, sparsity groups, Philox bits,
  the virtual result in the input dtype, and packing (:func:`pack_codes`).
* :func:`subtile_indices`: the subtiles that share one metadata code (§5.8).
* :func:`subtile_offset`: the exponent offset of one subtile (§5.8, MSFP).
* :func:`round_to_table`, :func:`mapping_error`, :func:`choose_mapping`: codebook
  rounding and mapping choice (§5.9).
* :func:`upcast`: the float32 values of a result's stored parts (§8).
* :func:`exponent_scale`: the power-of-two scale rule of every scale mode.
* :func:`given_scale_code`, :func:`given_zero_code`: the codes of given scales and zero
  points (§5.12); :func:`cast_block` and :func:`cast_array` take given values.
* :func:`philox4x32` / :func:`random_bits`: the documented random bits for a seed.
* :func:`hadamard`, :func:`hadamard_inverse`, :func:`hadamard_array`: the blockwise
  randomized Hadamard transform and its inverse (§5.10).
"""

from ..philox import philox4x32, random_bits
from ._array import (
    INPUT_DTYPES,
    ArrayResult,
    block_indices,
    cast_array,
    subtile_indices,
    to_input_dtype,
)
from ._block import BlockResult, cast_block, exponent_scale, sparsity_mask
from ._codebook import choose_mapping, mapping_error, round_to_table
from ._f32 import bits32, f32, from_bits32
from ._given import given_scale_code, given_zero_code
from ._hadamard import hadamard, hadamard_array, hadamard_inverse
from ._msfp import subtile_offset
from ._pack import pack_codes, pack_mask, storage_bytes, unpack_codes, unpack_mask
from ._scalar import decode, decode_exact, encode
from ._upcast import upcast

__all__ = [
    "INPUT_DTYPES",
    "ArrayResult",
    "BlockResult",
    "bits32",
    "block_indices",
    "cast_array",
    "cast_block",
    "choose_mapping",
    "decode",
    "decode_exact",
    "encode",
    "exponent_scale",
    "f32",
    "from_bits32",
    "given_scale_code",
    "given_zero_code",
    "hadamard",
    "hadamard_array",
    "hadamard_inverse",
    "mapping_error",
    "pack_codes",
    "pack_mask",
    "philox4x32",
    "random_bits",
    "round_to_table",
    "sparsity_mask",
    "storage_bytes",
    "subtile_indices",
    "subtile_offset",
    "to_input_dtype",
    "unpack_codes",
    "unpack_mask",
    "upcast",
]
