"""Building and taking apart a :class:`~tcast.CastResult` (SEMANTICS.md §8), for any engine.

The engine gives the arrays and an :class:`ArrayOps` object for the few array operations
that differ between libraries (making unsigned codes, packing, selecting kept codes, the
reductions that check a result); the shape of the result, which parts it has and how
compress data is formed are decided here and in ``_check``.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from ..engine import CastResult
from ..errors import SpecError
from ..layout import block_layout
from ..modes import CastMode
from ._blocked import to_blocked
from ._request import CastRequest

__all__ = ["ArrayOps", "UpcastParts", "build_result", "upcast_parts"]


class ArrayOps(Protocol):
    """The array operations result assembly needs from an engine."""

    def unsigned(self, codes: Any, bits: int) -> Any:
        """Codes as the narrowest unsigned array of ``bits`` (uint8/16/32), contiguous."""
        ...

    def flatten(self, a: Any) -> Any:
        """A one-dimensional view or copy in C order."""
        ...

    def select(self, flat: Any, keep: Any, count: int) -> Any:
        """The elements of ``flat`` where ``keep`` (``count`` of them), in order."""
        ...

    def pack_codes(self, codes: Any, bits: int) -> Any:
        """Dense little-endian bit stream of codes (SEMANTICS.md §8)."""
        ...

    def pack_mask(self, mask: Any) -> Any:
        """Eight keep-bits per byte (SEMANTICS.md §8)."""
        ...

    def unpack_codes(self, data: Any, bits: int, count: int) -> Any:
        """``count`` codes from a packed stream (refusing a stream of the wrong length)."""
        ...

    def unpack_mask(self, data: Any, count: int) -> Any:
        """``count`` keep-flags from packed bits."""
        ...

    def scatter(self, kept: Any, keep: Any, count: int) -> Any:
        """A flat code array of ``count`` with ``kept`` where ``keep``, zeros elsewhere."""
        ...

    def reshape(self, a: Any, shape: tuple[int, ...]) -> Any:
        """``a`` in ``shape``."""
        ...

    def count(self, keep: Any) -> int:
        """How many flags of ``keep`` are set (a Python int)."""
        ...

    def dtype_name(self, a: Any) -> str:
        """The name of ``a``'s dtype as NumPy spells it ("uint8", "bool", "float32")."""
        ...

    def code_max(self, a: Any) -> int:
        """The largest element of an unsigned integer array (a Python int; 0 when empty)."""
        ...

    def last(self, a: Any) -> int:
        """The last element of a non-empty 1-D unsigned integer array (a Python int)."""
        ...

    def permute(self, a: Any, order: tuple[int, ...]) -> Any:
        """``a`` with its axes permuted (``order[i]`` becomes axis ``i``), C-contiguous.

        Used only for blocked scale layouts and ``cast_dual``'s transposed results.
        """
        ...

    def pad(self, a: Any, shape: tuple[int, ...]) -> Any:
        """A zero array of ``shape`` with ``a`` at its start (``a.shape <= shape``)."""
        ...

    def crop(self, a: Any, shape: tuple[int, ...]) -> Any:
        """The leading ``shape`` part of ``a``, C-contiguous."""
        ...


def build_result(
    req: CastRequest,
    codes: Any,
    ops: ArrayOps,
    engine: str,
    *,
    scale: Any = None,
    zero: Any = None,
    tenscale: Any = None,
    mask: Any = None,
    meta: Any = None,
    packed: bool = False,
    scale_blocked: bool = False,
) -> CastResult:
    """The CastResult of an actual or compress cast.

    Args:
        req: the request.
        codes: element codes in the input's shape (any integer array; 0 where pruned).
        ops: the engine's array operations.
        engine: the engine's name.
        scale: scale codes in the scale shape (scaled datatypes).
        zero: zero-point codes in the scale shape (uint data).
        tenscale: the tensor-scale code, a 0-d array (two-level scaling).
        mask: the keep-mask in the input's shape (sparsity).
        meta: the metadata codes in the layout's ``meta_shape`` (datatypes with
            ``meta_bits > 0``: subtile exponent offsets, codebook mapping indices); kept
            plain (actual: uint8, compress: packed with ``meta_bits`` bits each, C order)
            whatever the scale layout.
        packed: ``codes`` already is the compress byte stream (§8) of a dense datatype, as
            an engine's kernel wrote it (``ceil(n * bits / 8)`` bytes, 1-D uint8), not
            packed again.
        scale_blocked: ``scale`` and ``zero`` already are in the blocked layout the request
            asks for (a kernel wrote them so); otherwise plain scales of a blocked request
            are laid out here (SEMANTICS.md §8.1).

    Raises:
        SpecError: ``packed`` for an actual cast or a sparse datatype.
    """
    dt = req.dtype
    bits = dt.nspec.bits
    if scale is not None:
        scale = ops.unsigned(scale, dt.sspec.scale.bits)
    if zero is not None:
        zero = ops.unsigned(zero, dt.zero.bits)
    if tenscale is not None:
        tenscale = ops.unsigned(tenscale, dt.tenscale.bits)
    if meta is not None:
        if req.castmode is CastMode.COMPRESS:
            meta = ops.pack_codes(ops.flatten(meta), dt.meta_bits)
        else:
            meta = ops.unsigned(meta, 8)
    blocked = req.blocked
    if blocked is not None and not scale_blocked:
        scale = to_blocked(scale, blocked, ops)
        if zero is not None:
            zero = to_blocked(zero, blocked, ops)
    if packed:
        if req.castmode is not CastMode.COMPRESS or mask is not None:
            raise SpecError("only the codes of a dense compress cast arrive packed")
        data = codes
    elif req.castmode is CastMode.COMPRESS:
        flat = ops.flatten(codes)
        if mask is not None:
            flat = ops.select(flat, ops.flatten(mask), req.layout.kept_count)
            mask = ops.pack_mask(mask)
        data = ops.pack_codes(flat, bits)
    else:
        data = ops.unsigned(codes, bits)
    return CastResult(
        data=data,
        scale=scale,
        zero=zero,
        tenscale=tenscale,
        mask=mask,
        meta=meta,
        dtype=dt,
        shape=req.shape,
        castmode=req.castmode,
        input_dtype=req.input_dtype,
        transpose_scale=req.transpose_scale and req.layout is not None,
        engine=engine,
        extra={"bits": bits},
        scale_layout=req.modes.scale_layout,
        transform=req.modes.transform,
    )


class UpcastParts:
    """The element codes, keep-mask and metadata of a checked result, unpacked.

    Attributes:
        codes: one code per element, in the result's shape.
        mask: the keep-mask in the result's shape (sparsity), else None.
        meta: the metadata codes in the layout's ``meta_shape`` (uint8), else None.
    """

    __slots__ = ("codes", "mask", "meta")

    def __init__(self, codes: Any, mask: Any, meta: Any = None) -> None:
        self.codes = codes
        self.mask = mask
        self.meta = meta


def upcast_parts(result: CastResult, ops: ArrayOps) -> UpcastParts:
    """Unpack the codes and mask of a checked result.

    ``EngineBase.upcast`` checks it first (:func:`check_result_parts`,
    :func:`check_result_codes`): every part has its form, so unpacking cannot fail.
    """
    dt, shape = result.dtype, tuple(result.shape)
    bits = dt.nspec.bits
    count = math.prod(shape)
    mask, meta = result.mask, result.meta
    if result.castmode is CastMode.COMPRESS:
        if meta is not None:
            mshape = block_layout(shape, dt, result.transpose_scale).meta_shape
            meta = ops.reshape(ops.unpack_codes(meta, dt.meta_bits, math.prod(mshape)), mshape)
        if mask is not None:
            keep = ops.unpack_mask(mask, count)
            kept = block_layout(shape, dt, result.transpose_scale).kept_count
            codes = ops.scatter(ops.unpack_codes(result.data, bits, kept), keep, count)
            mask = ops.reshape(keep, shape)
        else:
            codes = ops.unpack_codes(result.data, bits, count)
        return UpcastParts(ops.reshape(codes, shape), mask, meta)
    return UpcastParts(ops.reshape(result.data, shape), mask, meta)
