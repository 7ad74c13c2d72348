"""Exact model of one scaled block (SEMANTICS.md §5-§8)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from .._dyadic import floor_log2 as _floor_log2
from .._lookup import datatype
from .._text import quote
from ..datatype import DataType
from ..errors import SpecError
from ..kit._rules import element_max
from ..modes import RoundMode, ScaleMode, round_mode, scale_mode
from ..number import NumberSpec
from . import _f32
from ._codebook import choose_mapping
from ._given import check_given_parts, f32_value, given_scale_code, given_value, given_zero_code
from ._msfp import subtile_offset
from ._scalar import _check_rbits, decode, encode, round_magnitude

__all__ = ["BlockResult", "cast_block", "exponent_scale", "sparsity_mask"]

_NAN = math.nan


@dataclass(frozen=True)
class BlockResult:
    """The exact result of casting one block.

    Attributes:
        codes: element codes (unsigned bit patterns; 0 where pruned or the block is NaN).
        values: the decoded float32 values (the virtual result before it is rounded
            to the input dtype); NaN where the block is NaN, +0 where pruned.
        scale: the scale code (None when unscaled).
        zero: the zero-point code (uint data), else None.
        tenscale: the tensor-scale code (two-level scaling), else None.
        mask: True where an element is kept (sparsity), else None.
        meta: one metadata code per subtile (an exponent offset, SEMANTICS.md §5.8, or a
            mapping index, §5.9), in the order of the subtiles; None when the datatype has
            no metadata.
    """

    codes: tuple[int, ...]
    values: tuple[float, ...]
    scale: int | None = None
    zero: int | None = None
    tenscale: int | None = None
    mask: tuple[bool, ...] | None = None
    meta: tuple[int, ...] | None = None


def items(xs: object, what: str) -> list:
    """The items of a sequence argument of the exact model, as a list.

    Any iterable but text, bytes and mappings (whose items are not the values they look
    like).

    Raises:
        SpecError: naming ``what`` (say, "block values must be a sequence of numbers") and
            the type it got.
    """
    if not isinstance(xs, str | bytes | bytearray | Mapping):
        try:
            return list(xs)  # type: ignore[call-overload]
        except TypeError:
            pass
    raise SpecError(f"{what}, got {type(xs).__name__} {quote(xs)}")


def _check_inputs(xs: Sequence[float]) -> list[float]:
    out = []
    for x in items(xs, "block values must be a sequence of numbers (float32 values)"):
        out.append(f32_value(x, "block value", "block values must be real numbers"))
    return out


def sparsity_mask(xs: Sequence[float], n: int, m: int) -> tuple[bool, ...]:
    """Which elements N-of-M sparsity keeps, group by group (SEMANTICS.md §6).

    Each run of ``m`` consecutive elements (the last run may be shorter) keeps
    its ``n`` largest magnitudes; NaN ranks above +Inf; equal magnitudes keep
    the lower index.
    """
    keep = [False] * len(xs)
    for start in range(0, len(xs), m):
        idx = list(range(start, min(start + m, len(xs))))
        idx.sort(key=lambda i: (0 if math.isnan(xs[i]) else 1, -abs(xs[i]), i))
        for i in idx[:n]:
            keep[i] = True
    return tuple(keep)


def exponent_scale(amax: float, elem_max: Fraction, precision: int, mode: ScaleMode | str) -> int:
    """The unclamped power-of-two exponent e (scale 2**e) for a finite amax > 0.

    Args:
        amax: the block's largest magnitude (a positive float32).
        elem_max: the element format's largest value (fixed-point view for ints).
        precision: significant bits of the element grid (option3).
        mode: the scale mode (enum or name).

    Returns:
        floor(log2 amax) - emax, plus one where the mode says so.

    Raises:
        SpecError: for an unknown mode or an amax that is not finite and positive.
    """
    mode = scale_mode(mode)
    if not (isinstance(amax, float | int) and math.isfinite(amax) and amax > 0):
        raise SpecError(f"exponent_scale needs a finite amax > 0, got {amax!r}")
    elem_max = Fraction(elem_max)
    if elem_max <= 0 or not isinstance(precision, int) or precision < 1:
        raise SpecError(
            f"exponent_scale needs elem_max > 0 and precision >= 1, got {elem_max}, {precision!r}"
        )
    a = Fraction(amax)
    big_e = _floor_log2(a)  # exact, from the bits: never a float log2
    sig = a / Fraction(2) ** big_e  # in [1, 2)
    emax = _floor_log2(elem_max)
    top = elem_max / Fraction(2) ** emax  # scaled max, in [1, 2)
    if mode is ScaleMode.FLOOR:
        bump = False
    elif mode is ScaleMode.CEIL:
        bump = sig > 1
    elif mode is ScaleMode.MIDMAX:
        bump = sig > (top + 2) / 2
    elif mode is ScaleMode.TOPBINADE:
        bump = sig > top
    else:  # OPTION3: amax rounded (to nearest even) to the element precision
        ulp = Fraction(1, 1 << (precision - 1))
        bump = round_magnitude(sig, ulp, RoundMode.EVEN, None) == 2
    return big_e - emax + (1 if bump else 0)


def _float_scale(value: float, s: NumberSpec) -> int:
    # A float scale is clamped to [smallest normal, max] of its format (so that its
    # float32 reciprocal is finite) and rounded to nearest even.
    lo, hi = s.smallest_normal, s.maxfloat
    v = value if value == value else hi
    v = min(max(v, lo), hi)
    return encode(v, s, "even", saturate=True)


def cast_block(
    xs: Sequence[float],
    dtype: DataType | str,
    *,
    roundmode: RoundMode | str = "even",
    scalemode: ScaleMode | str = "floor",
    rbits: Sequence[int] | None = None,
    saturate: bool = True,
    tensor_amax: float | None = None,
    keep: Sequence[bool] | None = None,
    subtiles: Sequence[Sequence[int]] | None = None,
    scale: float | None = None,
    zero: float | None = None,
    tensor_scale: float | None = None,
) -> BlockResult:
    """Cast one block of float32 values exactly.

    The block is the set of elements that share one scale, in any order; with
    sparsity, each run of M consecutive elements of ``xs`` is a sparsity group.
    An unscaled datatype casts each element independently.

    Args:
        xs: the block's values (Python floats that are float32 values).
        dtype: the datatype (a DataType or a catalog name).
        roundmode: the element round mode.
        scalemode: how a power-of-two scale is chosen.
        rbits: one random integer per element (stochastic rounding), of the element
            format's ``rbits_width`` bits.
        saturate: unscaled casts only: overflow to +-max (True) or IEEE-style.
        tensor_amax: two-level scaling: the whole tensor's amax (default: the block's).
        keep: sparsity: the keep-mask, when the caller forms the groups itself
            (:func:`cast_array` does, along the sparse dimension); default: runs of M.
        subtiles: datatypes with metadata (subtile offsets, codebooks): the block's
            subtiles, each a list of positions in ``xs`` in the subtile's C order
            (:func:`cast_array` forms them from the tile geometry); default: runs of S
            consecutive elements for a 1-D subtile of length S, the whole block in the
            order of ``xs`` for a codebook without subtiles.
        scale: a given block scale value (SEMANTICS.md §5.12), encoded into the scale
            format; default: computed from the block.
        zero: a given zero point value (uint data), encoded into the zero format.
        tensor_scale: a given tensor scale value (two-level datatypes); then no tensor amax
            is used (``tensor_amax`` must be None).

    Returns:
        The codes, decoded values, scale codes and metadata.

    Raises:
        SpecError: for bad inputs or modes (stochastic rounding of a codebook datatype
            among them).
    """
    dt = dtype if isinstance(dtype, DataType) else datatype(dtype)
    mode = round_mode(roundmode)
    smode = scale_mode(scalemode)
    vals = _check_inputs(xs)
    n, s = dt.nspec, dt.sspec
    check_codebook_mode(dt, mode)
    rs = _check_block_rbits(mode, rbits, len(vals), n)
    groups = _subtiles(dt, subtiles, len(vals))
    if tensor_amax is not None and not dt.is_multiscale:
        raise SpecError(f"tensor_amax is for two-level datatypes; {dt.name} has one scale level")
    check_given_parts(dt, scale, zero, tensor_scale)
    if tensor_amax is not None and tensor_scale is not None:
        raise SpecError(
            "give tensor_amax or tensor_scale, not both (a given tensor scale is used as is)"
        )
    given = _Given(
        None
        if scale is None
        else given_scale_code(given_value(scale, "scale", signed=False), s.scale),
        None if zero is None else given_zero_code(given_value(zero, "zero", signed=True), dt.zero),
        None
        if tensor_scale is None
        else given_scale_code(given_value(tensor_scale, "tensor_scale", signed=False), dt.tenscale),
    )
    if s is None:
        codes = tuple(encode(x, n, mode, r, saturate) for x, r in zip(vals, rs, strict=True))
        values = tuple(
            math.copysign(_NAN, x) if math.isnan(x) and not n.has_nan else decode(c, n)
            for c, x in zip(codes, vals, strict=True)
        )
        return BlockResult(codes, values)
    sparse = next((t for t in s.tiles if t.is_sparse), None)
    if sparse is None:
        if keep is not None:
            raise SpecError(f"keep is for sparse datatypes; {dt.name} has no sparsity")
        mask = None
    elif keep is not None:
        flags = items(keep, "keep must be a sequence of bools, one per value")
        if len(flags) != len(vals):
            raise SpecError(f"keep has {len(flags)} flags for {len(vals)} values")
        mask = tuple(bool(k) for k in flags)
    else:
        mask = sparsity_mask(vals, sparse.sparse_n, sparse.sparse_m)
    kept = [x for i, x in enumerate(vals) if mask is None or mask[i]]
    finite = all(math.isfinite(x) for x in kept)
    if n.is_uint:
        res = _uint_block(vals, kept, finite, dt, mode, rs, given)
    else:
        res = _signed_block(vals, kept, finite, dt, mode, smode, rs, tensor_amax, groups, given)
    if mask is None:
        return res
    codes = tuple(c if k else 0 for c, k in zip(res.codes, mask, strict=True))
    # Pruned elements decode to +0, except in a non-finite block (its own NaN/Inf, or a
    # non-finite tensor amax), which is NaN throughout: a NaN never becomes a number.
    nan_block = res.scale == s.scale.nan_code
    values = tuple(v if k or nan_block else 0.0 for v, k in zip(res.values, mask, strict=True))
    return BlockResult(codes, values, res.scale, res.zero, res.tenscale, mask)


def check_codebook_mode(dt: DataType, mode: RoundMode) -> None:
    """Refuse stochastic rounding of a codebook datatype (SEMANTICS.md §5.9).

    Raises:
        SpecError: naming the datatype and the modes to use instead.
    """
    if dt.nspec.is_codebook and mode is RoundMode.STOCHASTIC:
        raise SpecError(
            f"stochastic rounding is not defined for codebook datatypes such as {dt.name} "
            f"(their entries are not evenly spaced): use even, away, zero or trunc"
        )


def _check_block_rbits(
    mode: RoundMode, rbits: Sequence[int] | None, size: int, n: NumberSpec
) -> list:
    if mode is RoundMode.STOCHASTIC:
        words = None if rbits is None else items(rbits, "rbits must be a sequence of ints")
        if words is None or len(words) != size:
            raise SpecError(f"stochastic rounding needs one rbits value per element ({size})")
        return [_check_rbits(mode, r, n) for r in words]
    if rbits is not None:
        raise SpecError(f"rbits are only used by stochastic rounding, not by {mode.value!r}")
    return [None] * size


def _subtiles(
    dt: DataType, subtiles: Sequence[Sequence[int]] | None, size: int
) -> list[list[int]] | None:
    """The block's subtiles as lists of positions (None for datatypes without them)."""
    s = dt.sspec
    has_groups = dt.nspec.is_codebook or (s is not None and s.offset_bits > 0)
    if not has_groups:
        if subtiles is not None:
            raise SpecError(f"subtiles are for datatypes with metadata; {dt.name} has none")
        return None
    if subtiles is None:
        assert s is not None  # codebooks and offsets are scaled (the datatype checks it)
        sizes = [k for k in s.subtile_sizes if k]
        if not sizes:
            return [list(range(size))]
        if len(s.tiles) != 1:
            raise SpecError(
                f"{dt.name} has 2-D subtiles: pass subtiles= (tcast.exact.cast_array forms them)"
            )
        return [list(range(i, min(i + sizes[0], size))) for i in range(0, size, sizes[0])]
    groups = [
        [_position(p, size) for p in items(g, "each subtile must be a sequence of positions")]
        for g in items(subtiles, "subtiles must be a sequence of position sequences")
    ]
    seen = sorted(p for g in groups for p in g)
    if seen != list(range(size)) or any(not g for g in groups):
        raise SpecError(
            f"subtiles must hold every position 0..{size - 1} once, in non-empty subtiles"
        )
    return groups


def _position(p: object, size: int) -> int:
    if isinstance(p, int) and not isinstance(p, bool) and 0 <= p < size:
        return p
    raise SpecError(f"a subtile position must be an int in 0..{size - 1}, got {quote(p)}")


def _nan_block(size: int, **scales: int | None) -> BlockResult:
    return BlockResult((0,) * size, (_NAN,) * size, **scales)


@dataclass(frozen=True)
class _Given:
    """The codes of a block's given parts (SEMANTICS.md §5.12), None where computed."""

    scale: int | None = None
    zero: int | None = None
    tenscale: int | None = None


@dataclass(frozen=True)
class _Elements:
    """How a block's (non-codebook) elements encode and decode once its scale is known.

    ``encode(x', r)`` gives the element code of a scaled input, ``decode(code)`` its value in
    the scaled domain (value = fl32(decode(code) * X), X the decode multiplier).
    """

    encode: Callable[[float, int | None], int]
    decode: Callable[[int], float]


def _signed_block(
    vals: list[float],
    kept: list[float],
    finite: bool,
    dt: DataType,
    mode: RoundMode,
    smode: ScaleMode,
    rs: list,
    tensor_amax: float | None,
    groups: list[list[int]] | None,
    given: _Given,
) -> BlockResult:
    n, s = dt.nspec, dt.sspec
    assert s is not None
    snum = s.scale
    meta_zeros = None if groups is None or not dt.meta_bits else (0,) * len(groups)
    amax = max((abs(x) for x in kept), default=0.0) if finite else _NAN
    tcode = given.tenscale
    if dt.is_multiscale and tcode is None:
        tspec = dt.tenscale
        t_amax = (
            amax
            if tensor_amax is None
            else f32_value(tensor_amax, "tensor_amax", "tensor_amax must be a real number")
        )
        if t_amax == t_amax and t_amax < 0:
            raise SpecError(f"tensor_amax {quote(tensor_amax)} must not be negative")
        if not math.isfinite(t_amax):
            return _nan_block(
                len(vals), scale=snum.nan_code, tenscale=tspec.nan_code, meta=meta_zeros
            )
        # M_S and M as float32 operands (maxint of a wide int rounds: SEMANTICS.md §0)
        denom = _f32.mul(_f32.f32(snum.max_value), _f32.f32(element_max(n, False)))
        tcode = _float_scale(_f32.div(t_amax, denom), tspec)
    if not finite:
        return _nan_block(len(vals), scale=snum.nan_code, tenscale=tcode, meta=meta_zeros)

    if snum.is_exponent:
        elem_max = element_max(n, True)
        if given.scale is not None:
            code = given.scale
        elif amax == 0:
            code = 0
        else:
            e = exponent_scale(amax, elem_max, n.precision, smode)
            code = min(max(e + snum.bias, 0), snum.max_code)
        scale_val = decode(code, snum)
        recip = _f32.f32(1 / Fraction(scale_val))  # a power of two: exact
        dec = scale_val
    else:
        # float scale: s = amax / max, clamped to the normal range and rounded (RNE).
        elem_max = _f32.f32(element_max(n, False))
        if dt.is_multiscale:
            tval = decode(tcode, dt.tenscale)
            code = (
                _float_scale(_f32.div(_f32.div(amax, elem_max), tval), snum)
                if given.scale is None
                else given.scale
            )
            sval = decode(code, snum)
            # The encode multiplier is kept finite: with a tiny tensor scale and a tiny
            # tile scale the float32 reciprocal would overflow, and 0 * Inf is NaN.
            recip = min(_f32.div(_f32.div(1.0, tval), sval), _f32.F32_MAX)
            dec = _f32.mul(tval, sval)
        else:
            code = (
                _float_scale(_f32.div(amax, elem_max), snum) if given.scale is None else given.scale
            )
            sval = decode(code, snum)
            recip = _f32.div(1.0, sval)
            dec = sval
    scaled = [_f32.mul(x, recip) for x in vals]
    if n.is_codebook:
        assert groups is not None  # every codebook block has its mapping groups
        codes, values, meta = _codebook_elements(scaled, groups, n, mode, dec)
    else:
        elements = _elements(n, snum.is_exponent, mode)
        if groups is None:
            codes = [elements.encode(xs, r) for xs, r in zip(scaled, rs, strict=True)]
            values = [_f32.mul(elements.decode(c), dec) for c in codes]
            return BlockResult(tuple(codes), tuple(values), code, None, tcode)
        emax = _floor_log2(element_max(n, snum.is_exponent))
        codes, values, meta = _offset_elements(
            scaled, groups, emax, s.offset_bits, rs, elements, dec
        )
    return BlockResult(
        tuple(codes), tuple(values), code, None, tcode, None, tuple(meta) if dt.meta_bits else None
    )


def _elements(n: NumberSpec, exponent_scale: bool, mode: RoundMode) -> _Elements:
    if n.is_int and exponent_scale:
        # MXINT: fixed point with K-2 fraction bits (SEMANTICS.md §5.4)
        fixed = 1 << (n.bits - 2)
        return _Elements(
            lambda x, r: encode(_f32.mul(x, float(fixed)), n, mode, r),
            lambda c: _f32.f32(Fraction(decode(c, n)) / fixed, negative_zero=False),
        )
    return _Elements(lambda x, r: encode(x, n, mode, r), lambda c: decode(c, n))


def _offset_elements(
    scaled: list[float],
    groups: list[list[int]],
    emax: int,
    offset_bits: int,
    rs: list,
    elements: _Elements,
    multiplier: float,
) -> tuple[list[int], list[float], list[int]]:
    """Codes, values and offsets of a block with subtile exponent offsets (SEMANTICS.md §5.8)."""
    codes = [0] * len(scaled)
    values = [0.0] * len(scaled)
    meta = []
    for g in groups:
        d = subtile_offset([scaled[i] for i in g], emax, offset_bits)
        up, down = float(1 << d), float(Fraction(1, 1 << d))
        for i in g:
            c = elements.encode(_f32.mul(scaled[i], up), rs[i])
            codes[i] = c
            values[i] = _f32.mul(_f32.mul(elements.decode(c), down), multiplier)
        meta.append(d)
    return codes, values, meta


def _codebook_elements(
    scaled: list[float], groups: list[list[int]], n, mode: RoundMode, multiplier: float
) -> tuple[list[int], list[float], list[int]]:
    """Codes, values and mapping indices of a codebook block (SEMANTICS.md §5.9)."""
    codes = [0] * len(scaled)
    values = [0.0] * len(scaled)
    meta = []
    for g in groups:
        m, cs = choose_mapping([scaled[i] for i in g], n.tables, n.symmetric, mode)
        table = n.tables[m]
        for i, c in zip(g, cs, strict=True):
            codes[i] = c
            values[i] = _f32.mul(table[c], multiplier)
        meta.append(m)
    return codes, values, meta


def _uint_block(
    vals: list[float],
    kept: list[float],
    finite: bool,
    dt: DataType,
    mode: RoundMode,
    rs: list,
    given: _Given,
) -> BlockResult:
    n, s, z = dt.nspec, dt.sspec, dt.zero
    assert s is not None and z is not None
    snum = s.scale
    if not finite:
        zcode = z.nan_code if z.has_nan else 0
        return _nan_block(len(vals), scale=snum.nan_code, zero=zcode)
    # The range always holds 0: an integer zero point then represents 0.0 exactly,
    # and |x| <= hi - lo keeps fl32(x * r) finite however small the range is.
    lo = min(min(kept, default=0.0), 0.0)
    hi = max(max(kept, default=0.0), 0.0)
    rng = _f32.sub(hi, lo)
    maxint = _f32.f32(n.maxint)  # the float32 operand: exact up to uint24
    if given.scale is not None:
        code = given.scale
    elif snum.is_exponent:
        # smallest power of two 2**e with range <= maxint * 2**e (exact)
        if rng == 0 or math.isinf(rng):
            code = 0 if rng == 0 else snum.max_code
        else:
            q = Fraction(rng) / n.maxint
            e = _floor_log2(q)
            e += 1 if Fraction(2) ** e < q else 0
            code = min(max(e + snum.bias, 0), snum.max_code)
    else:
        code = _float_scale(_f32.div(rng, maxint), snum)
    sval = decode(code, snum)
    recip = _f32.div(1.0, sval)
    zraw = _f32.mul(_f32.sub(0.0, lo), recip)  # 0 - lo: a zero zero point is +0, not -0
    if given.zero is not None:
        zc = given.zero
    elif z.is_integer:
        zc = encode(zraw, z, "even")
    else:
        zc = encode(zraw, z, "even", saturate=True)
    zval = decode(zc, z)
    codes, values = [], []
    for x, r in zip(vals, rs, strict=True):
        c = encode(_f32.add(_f32.mul(x, recip), zval), n, mode, r)
        codes.append(c)
        values.append(_f32.mul(_f32.sub(_f32.f32(c), zval), sval))
    return BlockResult(tuple(codes), tuple(values), code, zc)
