"""Exact model of a whole (small) array cast: tiling, random bits, virtual rounding, packing.

This is the array-level form of SEMANTICS.md: it partitions an N-d array into
blocks (§5.1: tensor, channel, 1-D and 2-D tiles along any dimensions, partial
tiles, transposed scaling) and subtiles (§5.8), forms sparsity groups along the
sparse dimension (§6), draws the Philox bits by flat index (§3.3), casts every
block with :func:`cast_block`, gathers the metadata of subtile offsets and codebook
mappings (§5.8, §5.9), rounds the virtual result to the input dtype (§7) and packs
compress results (§8). Engines are checked against it on small arrays.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from .._lookup import datatype
from .._text import quote
from ..datatype import DataType
from ..errors import SpecError
from ..hadamard import Hadamard
from ..kit._request import normalize_seed, transform_dim
from ..layout import block_layout
from ..modes import RoundMode, ScaleMode, round_mode, scale_mode
from ..number import NumberSpec, number
from ..philox import check_random_source, random_bits
from ._block import cast_block, check_codebook_mode, items, sparsity_mask
from ._given import check_given_parts, given_value
from ._hadamard import hadamard_array
from ._pack import pack_codes, pack_mask
from ._scalar import decode, encode

__all__ = [
    "INPUT_DTYPES",
    "ArrayResult",
    "block_indices",
    "cast_array",
    "subtile_indices",
    "to_input_dtype",
]

#: The accepted input dtypes (SEMANTICS.md §9), read-only.
INPUT_DTYPES: Mapping[str, NumberSpec] = MappingProxyType(
    {
        "float32": number("float32"),
        "float16": number("float16"),
        "bfloat16": number("bfloat16"),
    }
)


def to_input_dtype(v: float, input_dtype: str) -> float:
    """Round a float32 value to the input dtype (RNE, IEEE overflow; NaN stays NaN with its sign).

    Raises:
        SpecError: for an input dtype tcast does not accept.
    """
    spec = _input_spec(input_dtype)
    if input_dtype == "float32" or math.isnan(v):
        return v
    return decode(encode(v, spec, "even", saturate=False), spec)


def _input_spec(input_dtype: str) -> NumberSpec:
    if input_dtype not in INPUT_DTYPES:
        raise SpecError(
            f"input dtype {input_dtype!r} is not accepted; valid: {', '.join(INPUT_DTYPES)}"
        )
    return INPUT_DTYPES[input_dtype]


@dataclass(frozen=True)
class ArrayResult:
    """The exact result of casting an array (all sequences in C order).

    Attributes:
        shape: the array's shape.
        input_dtype: float32, float16 or bfloat16.
        values: the virtual result, rounded to the input dtype.
        codes: one element code per element (0 where pruned or in a NaN block).
        scale: scale codes in C order of ``scale_shape`` (None when unscaled).
        scale_shape: the scale array's shape (``()`` for a tensor scale).
        zero: zero-point codes, shaped like the scale (uint data), else None.
        tenscale: the tensor-scale code (two-level scaling), else None.
        mask: the keep-mask (sparsity), else None.
        bits: the element code width.
        meta: the metadata codes (subtile offsets or mapping indices) in C order of
            ``meta_shape``, else None (SEMANTICS.md §8).
        meta_shape: the metadata array's shape, else None.
        meta_bits: the metadata code width (0 without metadata).
        transform: the transform the codes were cast after (SEMANTICS.md §5.11), else None;
            :func:`tcast.exact.upcast` inverts it.
    """

    shape: tuple[int, ...]
    input_dtype: str
    values: tuple[float, ...]
    codes: tuple[int, ...]
    scale: tuple[int, ...] | None
    scale_shape: tuple[int, ...] | None
    zero: tuple[int, ...] | None
    tenscale: int | None
    mask: tuple[bool, ...] | None
    bits: int
    meta: tuple[int, ...] | None = None
    meta_shape: tuple[int, ...] | None = None
    meta_bits: int = 0
    transform: Hadamard | None = None

    def packed(self) -> bytes:
        """The compress data: the kept codes, packed (SEMANTICS.md §8)."""
        keep = self.mask or (True,) * len(self.codes)
        return pack_codes([c for c, k in zip(self.codes, keep, strict=True) if k], self.bits)

    def packed_mask(self) -> bytes | None:
        """The compress mask: eight keep-bits per byte, or None without sparsity."""
        return None if self.mask is None else pack_mask(self.mask)

    def packed_meta(self) -> bytes | None:
        """The compress metadata: the meta codes in C order packed as ``meta_bits``-bit codes."""
        return None if self.meta is None else pack_codes(self.meta, self.meta_bits)


def _strides(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def _grid(
    shape: Sequence[int], dtype: DataType | str, transpose_scale: bool, what: str, subtiles: bool
) -> tuple[DataType, tuple[int, ...], tuple | None]:
    """The grid of blocks (or of subtiles) of ``dtype`` over ``shape``.

    Returns the datatype, the shape, and (None for a tensor scale) the tiled dimensions, the
    unit length along each (the tile, or with ``subtiles`` the subtile where a segment has one;
    a channel: the whole dimension) and the grid's shape: ``ceil(n / unit)`` along a tiled
    dimension (none for an empty one), ``n`` elsewhere.
    """
    dt = dtype if isinstance(dtype, DataType) else datatype(dtype)
    if dt.sspec is None:
        raise SpecError(f"{dt.name} is unscaled: it has no {what}")
    shape = tuple(shape)
    tiles = dt.sspec.tiles
    if not tiles:
        return dt, shape, None
    dims = dt.sspec.dims(len(shape), transpose_scale)
    units = {
        d: ((t.subtile if subtiles else 0) or t.size or shape[d])
        for d, t in zip(dims, tiles, strict=True)
    }
    grid_shape = tuple(
        (-(-n // units[d]) if n else 0) if d in units else n for d, n in enumerate(shape)
    )
    return dt, shape, (dims, units, grid_shape)


def block_indices(
    shape: Sequence[int], dtype: DataType | str, transpose_scale: bool = False
) -> tuple[tuple[int, ...], list[tuple[tuple[int, ...], list[int]]]]:
    """Partition an array into blocks (SEMANTICS.md §5.1).

    Args:
        shape: the array shape.
        dtype: a scaled datatype.
        transpose_scale: swap the two segments of a 2-D tile.

    Returns:
        The scale shape, and for each scale position (C order) the flat C-order
        indices of its elements, ordered with the sparse dimension (if any, else
        the last tiled dimension) varying fastest.

    Raises:
        SpecError: for an unscaled datatype or a dimension the shape lacks.
    """
    dt, shape, grid = _grid(shape, dtype, transpose_scale, "blocks", subtiles=False)
    if grid is None:
        return (), [((), list(range(math.prod(shape))))]
    dims, sizes, scale_shape = grid
    nd = len(shape)
    tiles = dt.sspec.tiles
    sparse_dims = [d for d, t in zip(dims, tiles, strict=True) if t.is_sparse]
    inner = sparse_dims[0] if sparse_dims else dims[-1]
    order = [d for d in range(nd) if d != inner] + [inner]
    strides = _strides(shape)
    blocks: dict[tuple[int, ...], list[int]] = {}
    for pos in itertools.product(*(range(shape[d]) for d in order)):
        idx = [0] * nd
        for d, i in zip(order, pos, strict=True):
            idx[d] = i
        key = tuple(idx[d] // sizes[d] if d in sizes else idx[d] for d in range(nd))
        blocks.setdefault(key, []).append(sum(i * s for i, s in zip(idx, strides, strict=True)))
    keys = list(itertools.product(*(range(n) for n in scale_shape)))
    return scale_shape, [(k, blocks.get(k, [])) for k in keys]


def subtile_indices(
    shape: Sequence[int], dtype: DataType | str, transpose_scale: bool = False
) -> tuple[tuple[int, ...], list[tuple[tuple[int, ...], list[int]]]]:
    """Partition an array into subtiles, the units sharing one metadata code (SEMANTICS.md §5.8).

    A segment ``t<T>s<S>`` has subtiles of ``S`` elements along its dimension (the last one of a
    partial tile shorter); a segment without ``s`` contributes its whole tile length (a channel:
    the whole dimension), so a codebook without subtiles has one subtile per block, and a tensor
    scale one subtile in all.

    Args:
        shape: the array shape.
        dtype: a scaled datatype.
        transpose_scale: swap the two segments of a 2-D tile (subtiles move with their segment).

    Returns:
        The metadata shape (``ceil(size_d / sub_d)`` along tiled dimensions, ``size_d``
        elsewhere; ``()`` for a tensor scale), and for each metadata position (C order) the flat
        indices of its elements in C order.

    Raises:
        SpecError: for an unscaled datatype or a dimension the shape lacks.
    """
    _, shape, grid = _grid(shape, dtype, transpose_scale, "subtiles", subtiles=True)
    if grid is None:
        return (), [((), list(range(math.prod(shape))))]
    _, subs, meta_shape = grid
    groups: dict[tuple[int, ...], list[int]] = {}
    for flat, idx in enumerate(itertools.product(*(range(n) for n in shape))):
        key = tuple(i // subs[d] if d in subs else i for d, i in enumerate(idx))
        groups.setdefault(key, []).append(flat)
    keys = itertools.product(*(range(n) for n in meta_shape))
    return meta_shape, [(k, groups.get(k, [])) for k in keys]


def _block_subtiles(
    shape: tuple[int, ...], dt: DataType, transpose: bool, blocks: list[list[int]]
) -> tuple[tuple[int, ...], list[list[list[int]]], list[list[int]]]:
    """Each block's subtiles as positions in its element list, and their metadata positions.

    Returns the metadata shape, per block its subtiles (positions into the block's index list,
    each in C order) and per block the flat metadata index of each of its subtiles.
    """
    meta_shape, subtiles = subtile_indices(shape, dt, transpose)
    where: dict[int, tuple[int, int]] = {}
    for b, idx in enumerate(blocks):
        for p, flat in enumerate(idx):
            where[flat] = (b, p)
    per_block: list[list[list[int]]] = [[] for _ in blocks]
    meta_pos: list[list[int]] = [[] for _ in blocks]
    for m, (_, idx) in enumerate(subtiles):
        if idx:
            b = where[idx[0]][0]
            per_block[b].append([where[i][1] for i in idx])
            meta_pos[b].append(m)
    return meta_shape, per_block, meta_pos


def _sparse_keep(
    values: list[float], shape: tuple[int, ...], dt: DataType, transpose: bool
) -> list[bool] | None:
    sspec = dt.sspec
    if sspec is None or not sspec.is_sparse:
        return None
    dims = sspec.dims(len(shape), transpose)
    (d, tile) = next((d, t) for d, t in zip(dims, sspec.tiles, strict=True) if t.is_sparse)
    strides = _strides(shape)
    keep = [False] * len(values)
    # groups: runs of M along dimension d, aligned to index 0 of d (tiles start at
    # multiples of T, and M divides T); the last run may be shorter.
    others = [range(n) if k != d else range(1) for k, n in enumerate(shape)]
    for base in itertools.product(*others):
        start = sum(i * s for i, s in zip(base, strides, strict=True))
        line = [start + j * strides[d] for j in range(shape[d])]
        for g in range(0, len(line), tile.sparse_m):
            group = line[g : g + tile.sparse_m]
            flags = sparsity_mask([values[i] for i in group], tile.sparse_n, tile.sparse_m)
            for i, f in zip(group, flags, strict=True):
                keep[i] = f
    return keep


def cast_array(
    values: Sequence[float],
    shape: Sequence[int],
    dtype: DataType | str,
    *,
    input_dtype: str = "float32",
    roundmode: RoundMode | str = "even",
    scalemode: ScaleMode | str = "floor",
    seed: int | None = None,
    rbits: Sequence[int] | None = None,
    saturate: bool = True,
    transpose_scale: bool = False,
    transform: Hadamard | None = None,
    stream: int = 0,
    scale: Sequence[float] | None = None,
    zero: Sequence[float] | None = None,
    tensor_scale: float | None = None,
) -> ArrayResult:
    """Cast a small array exactly.

    Args:
        values: the elements in C order (Python floats representable in ``input_dtype``).
        shape: the array shape.
        dtype: the datatype (DataType, catalog name or code pair).
        input_dtype: float32, float16 or bfloat16.
        roundmode: the round mode.
        scalemode: the scale mode.
        seed: stochastic rounding: Philox seed (bits drawn by flat index, SEMANTICS.md §3.3).
        rbits: stochastic rounding: one integer per element, C order, of the element
            format's ``rbits_width`` bits (8 or 16).
        saturate: unscaled casts: saturate (True) or IEEE overflow.
        transpose_scale: swap the two tile segments.
        transform: a Hadamard transform along the datatype's tiled dimension before the
            cast (SEMANTICS.md §5.11): the codes are those of the transformed float32
            values, the virtual values the inverse transform of their decoded values.
        stream: the Philox stream of the seed's bits (a dual cast's column result: 1).
        scale: given block scale values (SEMANTICS.md §5.12), one per block in C order of
            the scale array's shape (after ``transpose_scale``); default: computed.
        zero: given zero point values (uint data), laid out as ``scale``.
        tensor_scale: a given tensor scale value (two-level datatypes): no tensor amax.

    Returns:
        The ArrayResult (with the metadata in C order of its ``meta_shape`` for datatypes
        that have it).

    Raises:
        SpecError: for bad arguments (including seed together with rbits, stochastic
            rounding of a codebook datatype, and a transform the datatype and shape do not
            take).
    """
    dt = dtype if isinstance(dtype, DataType) else datatype(dtype)
    spec_in = _input_spec(input_dtype)
    mode = round_mode(roundmode)
    check_codebook_mode(dt, mode)
    smode = scale_mode(scalemode)
    shape = _shape(shape)
    vals = [_value(v) for v in items(values, "values must be a sequence of numbers")]
    if len(vals) != math.prod(shape):
        raise SpecError(f"{len(vals)} values do not fill shape {shape}")
    for v in vals:
        if not math.isnan(v) and decode(encode(v, spec_in, "even", saturate=False), spec_in) != v:
            raise SpecError(f"value {v!r} is not a {input_dtype} value")
    check_given_parts(dt, scale, zero, tensor_scale)
    if transform is not None:
        return _cast_transformed(
            vals, shape, dt, input_dtype, transform, mode, smode, seed, rbits, saturate,
            transpose_scale, stream, (scale, zero, tensor_scale),
        )  # fmt: skip
    rs = _rbits(mode, seed, rbits, len(vals), dt, stream)
    codes: list[int] = [0] * len(vals)
    out: list[float] = [0.0] * len(vals)
    if dt.sspec is None:
        res = cast_block(vals, dt, roundmode=mode, rbits=rs, saturate=saturate)
        vals32 = res.values
        return ArrayResult(
            shape,
            input_dtype,
            tuple(to_input_dtype(v, input_dtype) for v in vals32),
            res.codes,
            None,
            None,
            None,
            None,
            None,
            dt.nspec.bits,
        )
    keep = _sparse_keep(vals, shape, dt, transpose_scale)
    tensor_amax = None
    if dt.is_multiscale and tensor_scale is None:
        tensor_amax = max((abs(v) for v in vals), default=0.0)
        if any(math.isnan(v) for v in vals):
            tensor_amax = math.nan
    scale_shape, blocks = block_indices(shape, dt, transpose_scale)
    given_scales = _given_blocks(scale, "scale", len(blocks), scale_shape)
    given_zeros = _given_blocks(zero, "zero", len(blocks), scale_shape)
    grouped = dt.nspec.is_codebook or dt.sspec.offset_bits > 0
    if grouped:
        meta_shape, block_subs, meta_pos = _block_subtiles(
            shape, dt, transpose_scale, [idx for _, idx in blocks]
        )
        meta = [0] * math.prod(meta_shape)
    scales: list[int] = []
    zeros: list[int] = []
    tcode = None
    for b, (_, idx) in enumerate(blocks):
        res = cast_block(
            [vals[i] for i in idx],
            dt,
            roundmode=mode,
            scalemode=smode,
            rbits=None if rs is None else [rs[i] for i in idx],
            tensor_amax=tensor_amax,
            keep=None if keep is None else [keep[i] for i in idx],
            subtiles=block_subs[b] if grouped else None,
            scale=given_scales[b],
            zero=given_zeros[b],
            tensor_scale=tensor_scale,
        )
        for i, c, v in zip(idx, res.codes, res.values, strict=True):
            codes[i] = c
            out[i] = v
        if res.meta is not None:
            for m, code in zip(meta_pos[b], res.meta, strict=True):
                meta[m] = code
        scales.append(res.scale)
        if res.zero is not None:
            zeros.append(res.zero)
        tcode = res.tenscale if res.tenscale is not None else tcode
    if dt.is_multiscale and tcode is None:  # no blocks: the tensor scale of amax 0, or given
        amax0 = None if tensor_scale is not None else 0.0
        tcode = cast_block([], dt, tensor_amax=amax0, tensor_scale=tensor_scale).tenscale
    return ArrayResult(
        shape,
        input_dtype,
        tuple(to_input_dtype(v, input_dtype) for v in out),
        tuple(codes),
        tuple(scales),
        scale_shape,
        None if dt.zero is None else tuple(zeros),
        tcode,
        None if keep is None else tuple(keep),
        dt.nspec.bits,
        tuple(meta) if dt.meta_bits else None,
        meta_shape if dt.meta_bits else None,
        dt.meta_bits,
    )


def transform_axis(shape: tuple[int, ...], dt: DataType, transpose_scale: bool, h: object) -> int:
    """The dimension a cast's transform runs along (SEMANTICS.md §5.11).

    Raises:
        SpecError: for a transform that is not a Hadamard, or one the datatype and shape
            do not take.
    """
    if not isinstance(h, Hadamard):
        raise SpecError(f"transform must be a tcast.Hadamard or None, got {quote(h)}")
    layout = None if dt.sspec is None else block_layout(shape, dt, transpose_scale)
    return transform_dim(dt, layout, h)


def _cast_transformed(
    vals: list[float],
    shape: tuple[int, ...],
    dt: DataType,
    input_dtype: str,
    h: Hadamard,
    mode: RoundMode,
    smode: ScaleMode,
    seed: int | None,
    rbits: Sequence[int] | None,
    saturate: bool,
    transpose_scale: bool,
    stream: int,
    given: tuple,
) -> ArrayResult:
    """§5.11: cast the transformed float32 values; virtual values transformed back."""
    d = transform_axis(shape, dt, transpose_scale, h)
    inner = cast_array(
        hadamard_array(vals, shape, d, h),
        shape,
        dt,
        input_dtype="float32",
        roundmode=mode,
        scalemode=smode,
        seed=seed,
        rbits=rbits,
        saturate=saturate,
        transpose_scale=transpose_scale,
        stream=stream,
        scale=given[0],
        zero=given[1],
        tensor_scale=given[2],
    )
    back = hadamard_array(inner.values, shape, d, h, inverse=True)
    return replace(
        inner,
        input_dtype=input_dtype,
        values=tuple(to_input_dtype(v, input_dtype) for v in back),
        transform=h,
    )


def _given_blocks(given: object, what: str, count: int, scale_shape: tuple[int, ...]) -> list:
    """One given value (or None) per block, in C order of the scale shape.

    ``given``: values in the scale array's shape (nested sequences, or an array with
    ``tolist``), a flat C-order sequence of them, or a number for the shape ``()``.
    """
    if given is None:
        return [None] * count
    if hasattr(given, "tolist"):  # a NumPy-like array (a 0-d one gives a number)
        given = given.tolist()
    if not scale_shape and not _is_seq(given) and hasattr(given, "__float__"):
        given = [given]
    vals = items(given, f"{what} must be values in the scale shape {scale_shape} (or flat)")
    if vals and _is_seq(vals[0]):
        vals = _flatten(vals, scale_shape, what)
    if len(vals) != count:
        raise SpecError(
            f"{what} has {len(vals)} values for the {count} blocks of scale shape {scale_shape}"
        )
    return [given_value(v, f"{what}[{i}]", signed=what == "zero") for i, v in enumerate(vals)]


def _is_seq(v: object) -> bool:
    return hasattr(v, "__iter__") and not isinstance(v, str | bytes)


def _flatten(vals: list, shape: tuple[int, ...], what: str) -> list:
    """Nested sequences of ``shape``, flat in C order, or a SpecError naming ``what``."""
    if not shape or len(vals) != shape[0] or (len(shape) == 1 and any(map(_is_seq, vals))):
        raise SpecError(
            f"{what} must be laid out in the scale shape {shape}: a level of {len(vals)} "
            f"values does not fit it"
        )
    if len(shape) == 1:
        return vals
    out = []
    for v in vals:
        out.extend(_flatten(items(v, f"{what} must be nested sequences"), shape[1:], what))
    return out


def _shape(shape: object) -> tuple[int, ...]:
    """``shape`` as a tuple of ints ``>= 0`` (any integer type; never bools or floats)."""
    sizes = []
    for n in items(shape, "shape must be a sequence of int sizes"):
        try:
            k = None if isinstance(n, bool) else operator.index(n)
        except TypeError:
            k = None
        if k is None:
            raise SpecError(f"shape sizes must be ints, got {quote(n)} ({type(n).__name__})")
        if k < 0:
            raise SpecError(f"shape {quote(shape)} has a negative dimension")
        sizes.append(k)
    return tuple(sizes)


def _value(v: object) -> float:
    """An array value as a float (its dtype is checked after)."""
    if isinstance(v, bool | str) or not hasattr(v, "__float__"):
        raise SpecError(f"values must be real numbers, got {quote(v)}")
    try:
        return float(v)  # type: ignore[arg-type]
    except (OverflowError, TypeError, ValueError):
        raise SpecError(f"value {quote(v)} is not a real number of a float dtype") from None


def _rbits(
    mode: RoundMode,
    seed: int | None,
    rbits: Sequence[int] | None,
    n: int,
    dt: DataType,
    stream: int,
):
    check_random_source(mode, seed, rbits, stream)
    if mode is not RoundMode.STOCHASTIC:
        return None
    if seed is not None:
        return random_bits(normalize_seed(seed), range(n), dt.nspec.rbits_width, stream=stream)
    words = items(rbits, "rbits must be a sequence of ints")
    if len(words) != n:
        raise SpecError(f"rbits has {len(words)} values for {n} elements")
    return words
