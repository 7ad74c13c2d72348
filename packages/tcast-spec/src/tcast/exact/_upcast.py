"""Exact upcast: the float32 values of an actual result's parts (SEMANTICS.md §8).

The decode side of :func:`tcast.exact.cast_array`, stated apart from the cast: it reads only
the parts a result stores (element codes, scale, zero point, tensor scale, mask, metadata) and
decodes each element as §5 says, so a test can hold it against the virtual result.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction

from .._lookup import datatype
from ..datatype import DataType
from ..errors import SpecError
from ..hadamard import Hadamard
from . import _f32
from ._array import ArrayResult, block_indices, subtile_indices, to_input_dtype, transform_axis
from ._hadamard import hadamard_array
from ._scalar import decode, decode_exact

__all__ = ["upcast"]


def _negative_nan_code(code: int, n) -> bool:
    v = decode_exact(code, n)
    return isinstance(v, float) and math.isnan(v) and math.copysign(1.0, v) < 0


def upcast(
    result: ArrayResult,
    dtype: DataType | str,
    *,
    transpose_scale: bool = False,
    transform: Hadamard | None = None,
) -> tuple[float, ...]:
    """Decode an exact result to float32 values in C order.

    Args:
        result: a result of :func:`tcast.exact.cast_array` (its codes, scale, zero point,
            tensor scale, mask and metadata are read; its values are not).
        dtype: the datatype it was cast to.
        transpose_scale: the transposed scaling it was cast with.
        transform: the transform it was cast with (SEMANTICS.md §5.11; default: the one the
            result records): the decoded values are transformed back and rounded to the
            result's input dtype (the virtual cast's values).

    Returns:
        One float32 value per element: ``fl32(dec(code) * X)`` with the element decoded
        through its subtile's offset (``fl32(dec * 2**-d)``) or mapping (``table[m][code]``);
        pruned elements +0, NaN results ``+NaN`` except where the element code itself decodes
        to a negative NaN in a finite block.

    Raises:
        SpecError: when the result's parts do not fit the datatype.
    """
    dt = dtype if isinstance(dtype, DataType) else datatype(dtype)
    transform = result.transform if transform is None else transform
    if transform is not None:
        d = transform_axis(tuple(result.shape), dt, transpose_scale, transform)
        plain = replace(result, transform=None)  # its codes decoded as cast, untransformed
        decoded = upcast(plain, dt, transpose_scale=transpose_scale)
        back = hadamard_array(decoded, result.shape, d, transform, inverse=True)
        return tuple(to_input_dtype(v, result.input_dtype) for v in back)
    n, s = dt.nspec, dt.sspec
    codes = result.codes
    if len(codes) != math.prod(result.shape):
        raise SpecError(f"{len(codes)} element codes do not fill shape {result.shape}")
    if s is None:
        return tuple(decode(c, n) for c in codes)
    if n.is_uint and (result.zero is None or len(result.zero) != len(result.scale or ())):
        raise SpecError(f"a result of {dt.name} needs one zero-point code per scale code")
    if result.mask is not None and len(result.mask) != len(codes):
        raise SpecError(f"the mask has {len(result.mask)} flags for {len(codes)} elements")
    if result.scale is None:
        raise SpecError(f"a result of {dt.name} needs its scale codes")
    _, blocks = block_indices(result.shape, dt, transpose_scale)
    if len(result.scale) != len(blocks):
        raise SpecError(
            f"{len(result.scale)} scale codes for the {len(blocks)} blocks of {dt.name} "
            f"over shape {result.shape}"
        )
    snum = s.scale
    element_of = _element_decoder(result, dt, transpose_scale)
    tval = None
    if dt.is_multiscale:
        if result.tenscale is None:
            raise SpecError(f"a result of {dt.name} needs its tensor scale code")
        tval = decode(result.tenscale, dt.tenscale)
    out = [0.0] * len(codes)
    for b, (_, idx) in enumerate(blocks):
        sc = result.scale[b]
        sval = decode(sc, snum)
        finite_block = sc != snum.nan_code and (
            result.tenscale is None or result.tenscale != dt.tenscale.nan_code
        )
        if n.is_uint:
            zval = decode(result.zero[b], dt.zero)
        mult = sval if tval is None else _f32.mul(tval, sval)
        for i in idx:
            if result.mask is not None and not result.mask[i]:
                out[i] = 0.0 if finite_block else math.nan
                continue
            if n.is_uint:
                v = _f32.mul(_f32.sub(_f32.f32(codes[i]), zval), sval)
            else:
                v = _f32.mul(element_of(i), mult)
            if math.isnan(v):
                neg = finite_block and not n.is_codebook and _negative_nan_code(codes[i], n)
                v = -math.nan if neg else math.nan
            out[i] = v
    return tuple(out)


def _element_decoder(result: ArrayResult, dt: DataType, transpose: bool):
    """``i -> dec(code_i)`` in the scaled domain, through the element's offset or mapping."""
    n, s = dt.nspec, dt.sspec
    codes = result.codes
    if n.is_int and s.scale.is_exponent:
        fixed = 1 << (n.bits - 2)

        def plain(i: int) -> float:
            return _f32.f32(Fraction(decode(codes[i], n)) / fixed, negative_zero=False)
    elif n.is_codebook:

        def plain(i: int) -> float:
            return n.tables[0][codes[i]]
    else:

        def plain(i: int) -> float:
            return decode(codes[i], n)

    if not (n.is_codebook or s.offset_bits):
        return plain
    meta_of = [0] * len(codes)
    meta_shape, subtiles = subtile_indices(result.shape, dt, transpose)
    meta = result.meta if dt.meta_bits else (0,) * len(subtiles)
    if meta is None or len(meta) != len(subtiles):
        raise SpecError(
            f"a result of {dt.name} over shape {result.shape} needs {len(subtiles)} metadata "
            f"codes (shape {meta_shape})"
        )
    _check_meta(meta, max(dt.meta_bits, 1))
    for m, (_, idx) in enumerate(subtiles):
        for i in idx:
            meta_of[i] = meta[m]
    if n.is_codebook:

        def mapped(i: int) -> float:
            return n.tables[meta_of[i]][codes[i]]

        return mapped

    def shifted(i: int) -> float:
        return _f32.mul(plain(i), float(Fraction(1, 1 << meta_of[i])))

    return shifted


def _check_meta(meta: Sequence[int], bits: int) -> None:
    for c in meta:
        if not 0 <= c < (1 << bits):
            raise SpecError(f"metadata code {c} does not fit in {bits} bits")
