"""The reference cast and upcast (SEMANTICS.md §4-§8), vectorized over blocks."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np

from tcast import (
    CastMode,
    CastResult,
    DataType,
    NumberSpec,
    RoundMode,
    ScaleMode,
    SpecError,
    UnsupportedError,
    cast_mode,
    datatype,
    round_mode,
    scale_mode,
)

from ._codec import code_dtype, decode, encode, floor_log2, split_f32
from ._pack import pack_codes, pack_mask, unpack_codes, unpack_mask
from ._philox import random_bits
from ._tiles import Tiling, tiling

__all__ = ["INPUT_DTYPES", "cast", "upcast"]

#: Accepted input dtypes by name (SEMANTICS.md §9).
INPUT_DTYPES = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
}
_NAN32 = np.uint32(0x7FC00000).view(np.float32)
_F32_MAX = np.float32(np.finfo(np.float32).max)


def _input_name(x: np.ndarray) -> str:
    for name, dt in INPUT_DTYPES.items():
        if x.dtype == dt:
            return name
    raise UnsupportedError(
        f"tcast_ref casts float32, float16 and bfloat16 arrays, not {x.dtype}; convert first "
        f"(float64 is not accepted: SEMANTICS.md §9)"
    )


def _f32(v: float | Fraction) -> np.float32:
    """A value rounded to float32 (format maxima are exact; wide int maxima round)."""
    return np.float32(float(v))


@dataclass
class _Blocks:
    """Per-block scales and element codes of a scaled cast, in block layout."""

    codes: np.ndarray  # (*blocks, K) uint32
    scale: np.ndarray  # (*blocks) uint32
    zero: np.ndarray | None
    tenscale: int | None
    keep: np.ndarray | None  # (*blocks, K) bool
    nonfinite: np.ndarray  # (*blocks) bool


# ----------------------------------------------------------------- scale rules
def _exponent_codes(amax: np.ndarray, n: NumberSpec, s: NumberSpec, mode: ScaleMode) -> np.ndarray:
    """Exponent-scale codes for finite amax (SEMANTICS.md §5.3), exactly from the bits."""
    elem_max = _elem_max(n, True)
    emax = elem_max.numerator.bit_length() - elem_max.denominator.bit_length()
    if Fraction(2) ** emax > elem_max:
        emax -= 1
    tau = elem_max / Fraction(2) ** emax
    _, _, _, sig, q = split_f32(amax)
    zero = sig == 0
    sig = np.where(zero, 1, sig)
    lg = floor_log2(sig)
    big_e = lg + q
    norm = sig << (23 - lg).astype(np.uint64)  # sigma * 2**23, in [2**23, 2**24)
    if mode is ScaleMode.FLOOR:
        bump = np.zeros(amax.shape, bool)
    elif mode is ScaleMode.CEIL:
        bump = norm > (1 << 23)
    elif mode is ScaleMode.MIDMAX:
        bump = norm > int((tau + 2) / 2 * (1 << 23))
    elif mode is ScaleMode.TOPBINADE:
        bump = norm > int(tau * (1 << 23))
    else:  # OPTION3: round sigma to p significant bits (ties to even); bump on reaching 2
        p = n.precision
        sh = 24 - p
        if sh <= 0:
            bump = np.zeros(amax.shape, bool)
        else:
            top = norm >> np.uint64(sh)
            rem = norm - (top << np.uint64(sh))
            half = np.uint64(1 << (sh - 1))
            up = (rem > half) | ((rem == half) & (top & np.uint64(1)).astype(bool))
            bump = (top + up.astype(np.uint64)) == (1 << p)
    e = big_e - emax + bump.astype(np.int64)
    code = np.clip(e + s.bias, 0, s.max_code)
    return np.where(zero, 0, code).astype(np.uint32)


def _elem_max(n: NumberSpec, power_of_two: bool) -> Fraction:
    if n.is_int and power_of_two:
        return Fraction(n.maxint, 1 << (n.bits - 2))
    return n.max_value


def _float_scale(v: np.ndarray, s: NumberSpec) -> np.ndarray:
    """RNE_S(clamp(v, smallest_normal_S, max_S)) as codes (SEMANTICS.md §5.5)."""
    lo, hi = np.float32(s.smallest_normal), _f32(s.max_value)
    v = np.where(np.isnan(v), hi, v)
    return encode(np.clip(v, lo, hi).astype(np.float32), s, RoundMode.EVEN, None, True)


# ----------------------------------------------------------------- the cast
def _check_rbits(
    mode: RoundMode, seed: int | None, rbits: Any, shape: tuple[int, ...]
) -> np.ndarray | None:
    if seed is not None and rbits is not None:
        raise SpecError("give either seed or rbits for stochastic rounding, not both")
    if mode is not RoundMode.STOCHASTIC:
        if seed is not None or rbits is not None:
            raise SpecError(f"seed and rbits are for stochastic rounding, not {mode.value!r}")
        return None
    if seed is not None:
        return random_bits(seed, int(np.prod(shape, dtype=np.int64))).reshape(shape)
    if rbits is None:
        raise SpecError("stochastic rounding needs a seed or rbits")
    if not isinstance(rbits, np.ndarray) or rbits.dtype != np.uint32:
        raise SpecError(
            f"rbits must be a uint32 NumPy array, got "
            f"{type(rbits).__name__} {getattr(rbits, 'dtype', '')}".rstrip()
        )
    if rbits.shape != shape:
        raise SpecError(f"rbits has shape {rbits.shape}, the input has shape {shape}")
    return rbits


def cast(
    x: np.ndarray,
    dtype: DataType | str,
    *,
    castmode: CastMode | str = "virtual",
    roundmode: RoundMode | str = "even",
    scalemode: ScaleMode | str = "floor",
    seed: int | None = None,
    rbits: np.ndarray | None = None,
    saturate: bool = True,
    transpose_scale: bool = False,
) -> np.ndarray | CastResult:
    """Cast a NumPy array bit-exactly as SEMANTICS.md defines.

    Args:
        x: float32, float16 or ``ml_dtypes.bfloat16`` array of any rank (views allowed).
        dtype: a DataType, catalog name or code pair.
        castmode: virtual (an array of x's dtype), actual or compress (a CastResult).
        roundmode: even, away (nearest), zero, trunc, stochastic.
        scalemode: floor, ceil, midmax, option3, topbinade (rceil).
        seed: stochastic rounding: Philox seed (bits by flat C-order index).
        rbits: stochastic rounding: uint32 array of x's shape.
        saturate: unscaled casts: overflow to +-max, or IEEE (Inf/NaN).
        transpose_scale: swap the two segments of a 2-D tile.

    Returns:
        The virtual array, or a CastResult.

    Raises:
        UnsupportedError: for input dtypes other than float32/float16/bfloat16.
        SpecError: for bad datatypes, modes, random bits, or tile dimensions.
    """
    dt = dtype if isinstance(dtype, DataType) else datatype(dtype)
    cmode, rmode, smode = cast_mode(castmode), round_mode(roundmode), scale_mode(scalemode)
    for flag, value in (("saturate", saturate), ("transpose_scale", transpose_scale)):
        if not isinstance(value, bool):
            raise SpecError(f"{flag} must be True or False, got {value!r}")
    if not isinstance(x, np.ndarray):
        raise UnsupportedError(f"tcast_ref casts NumPy arrays, not {type(x).__name__}")
    in_name = _input_name(x)
    shape = tuple(x.shape)
    rb = _check_rbits(rmode, seed, rbits, shape)
    x32 = np.ascontiguousarray(x, dtype=np.float32) if x.dtype != np.float32 else x
    # float32 overflow to Inf is part of the semantics (§0), not an accident to warn about
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        return _cast(x, x32, dt, cmode, rmode, smode, rb, saturate, transpose_scale, in_name)


def _cast(x, x32, dt, cmode, rmode, smode, rb, saturate, transpose_scale, in_name):
    shape = tuple(x.shape)
    if dt.sspec is None:
        codes = encode(x32, dt.nspec, rmode, rb, saturate)
        values = decode(codes, dt.nspec)
        if not dt.nspec.has_nan:  # §4.2/§7: an input NaN stays NaN in the virtual result
            nan = np.isnan(x32)
            values = np.where(nan, np.copysign(_NAN32, x32), values)
        blocks = None
        til = None
    else:
        til = tiling(shape, dt, transpose_scale)
        blocks = _cast_blocks(x32, dt, til, rmode, smode, rb)
        values = til.from_blocks(_dequantize(blocks, dt))
    if cmode is CastMode.VIRTUAL:
        return np.asarray(values, np.float32).astype(x.dtype)
    return _result(dt, cmode, in_name, shape, transpose_scale, til, blocks,
                   codes if blocks is None else None)


def _cast_blocks(
    x32: np.ndarray, dt: DataType, til: Tiling, rmode: RoundMode, smode: ScaleMode,
    rb: np.ndarray | None,
) -> _Blocks:
    n, sspec = dt.nspec, dt.sspec
    assert sspec is not None
    b = til.to_blocks(x32)
    rbb = None if rb is None else til.to_blocks(rb)
    keep = None
    if til.sparse_m:
        g, back = til.groups(b)
        key = np.where(np.isnan(g), -np.inf, -np.abs(g))  # NaN first, then by magnitude
        order = np.argsort(key, axis=-1, kind="stable")  # ties: lower index first
        ranks = np.empty_like(order)
        np.put_along_axis(ranks, order, np.arange(til.sparse_m)[None], axis=-1)
        keep = back(ranks < til.sparse_n)
    kept = b if keep is None else np.where(keep, b, np.float32(0))
    absb = np.abs(kept)
    nonfinite = ~np.isfinite(absb).all(axis=-1)
    snum = sspec.scale
    if n.is_uint:
        return _uint_blocks(b, kept, keep, nonfinite, dt, rmode, rbb)
    amax = np.where(nonfinite, np.float32(0), absb.max(axis=-1, initial=np.float32(0)))
    amax = amax.astype(np.float32)
    tcode = None
    if snum.is_exponent:
        scale = _exponent_codes(amax, n, snum, smode)
        # 2**-(code - bias): a float32 power of two (exponent types span 2**-127..2**127)
        recip = np.ldexp(np.float64(1.0), (snum.bias - scale.astype(np.int64)).astype(np.int32))
        recip = recip.astype(np.float32)
        xs = (b * recip[..., None]).astype(np.float32)
        if n.is_int:
            xs = (xs * np.float32(1 << (n.bits - 2))).astype(np.float32)
        codes = encode(xs, n, rmode, rbb, True)
    else:
        m = _f32(_elem_max(n, False))
        if dt.is_multiscale:
            t_spec = dt.tenscale
            t_amax = np.abs(x32).max(initial=np.float32(0)) if x32.size else np.float32(0)
            if not np.isfinite(t_amax):
                nb = amax.shape
                return _Blocks(np.zeros(b.shape, np.uint32),
                               np.full(nb, snum.nan_code, np.uint32), None, t_spec.nan_code,
                               keep, np.ones(nb, bool))
            denom = np.float32(_f32(snum.max_value) * m)
            tcode = int(_float_scale(np.float32(t_amax / denom).reshape(1), t_spec)[0])
            tval = decode(np.array([tcode]), t_spec)[0]
            scale = _float_scale(((amax / m).astype(np.float32) / tval).astype(np.float32), snum)
            sval = decode(scale, snum)
            recip = ((np.float32(1) / tval) / sval).astype(np.float32)
            recip = np.minimum(recip, _F32_MAX)
        else:
            scale = _float_scale((amax / m).astype(np.float32), snum)
            sval = decode(scale, snum)
            recip = (np.float32(1) / sval).astype(np.float32)
        codes = encode((b * recip[..., None]).astype(np.float32), n, rmode, rbb, True)
    codes = np.where(nonfinite[..., None], 0, codes).astype(np.uint32)
    if keep is not None:
        codes = np.where(keep, codes, 0).astype(np.uint32)
    scale = np.where(nonfinite, snum.nan_code, scale).astype(np.uint32)
    return _Blocks(codes, scale, None, tcode, keep, nonfinite)


def _uint_blocks(b, kept, keep, nonfinite, dt, rmode, rbb) -> _Blocks:
    n, snum, z = dt.nspec, dt.sspec.scale, dt.zero
    lo = np.minimum(np.where(nonfinite[..., None], 0, kept).min(axis=-1), np.float32(0))
    hi = np.maximum(np.where(nonfinite[..., None], 0, kept).max(axis=-1), np.float32(0))
    rng = (hi - lo).astype(np.float32)
    maxint = n.maxint
    if snum.is_exponent:
        # smallest e with rng <= maxint * 2**e, exactly: rng = S * 2**q
        _, _, inf, sig, q = split_f32(rng)
        zero = sig == 0
        # e >= ceil(log2(rng / maxint)); test the candidate c = floor(log2(S/maxint)) + q ..
        lg = floor_log2(np.where(zero, 1, sig)) - (maxint.bit_length() - 1)
        e = lg + q - 1
        for _ in range(3):  # at most three steps to the smallest sufficient exponent
            fits = _fits(sig, q, maxint, e)
            e = np.where(fits, e, e + 1)
        code = np.clip(e + snum.bias, 0, snum.max_code)
        code = np.where(zero, 0, np.where(inf, snum.max_code, code)).astype(np.uint32)
    else:
        code = _float_scale((rng / np.float32(maxint)).astype(np.float32), snum)
    sval = decode(code, snum)
    recip = (np.float32(1) / sval).astype(np.float32)
    zraw = ((np.float32(0) - lo) * recip).astype(np.float32)
    zcode = encode(zraw, z, RoundMode.EVEN, None, True)
    zval = decode(zcode, z)
    xs = ((b * recip[..., None]).astype(np.float32) + zval[..., None]).astype(np.float32)
    codes = encode(xs, n, rmode, rbb, True)
    codes = np.where(nonfinite[..., None], 0, codes)
    if keep is not None:
        codes = np.where(keep, codes, 0)
    code = np.where(nonfinite, snum.nan_code, code).astype(np.uint32)
    zcode = np.where(nonfinite, z.nan_code if z.has_nan else 0, zcode).astype(np.uint32)
    return _Blocks(codes.astype(np.uint32), code, zcode, None, keep, nonfinite)


def _fits(sig: np.ndarray, q: np.ndarray, maxint: int, e: np.ndarray) -> np.ndarray:
    """S * 2**q <= maxint * 2**e, exactly, on integers."""
    d = e - q  # compare S <= maxint * 2**d
    pos = np.clip(d, 0, 40).astype(np.uint64)
    neg = np.clip(-d, 0, 62).astype(np.uint64)
    lhs = sig.astype(np.uint64) << neg  # S * 2**-d when d < 0
    rhs = np.uint64(maxint) << pos
    return np.where(d > 40, True, np.where(d < -62, False, lhs <= rhs))


# ----------------------------------------------------------------- decoding
def _dequantize(blk: _Blocks, dt: DataType) -> np.ndarray:
    """Decoded float32 values in block layout (the virtual result before the input dtype)."""
    n, sspec = dt.nspec, dt.sspec
    snum = sspec.scale
    sval = decode(blk.scale, snum)[..., None]
    q = decode(blk.codes, n)
    if n.is_uint:
        zval = decode(blk.zero, dt.zero)[..., None]
        v = ((q - zval).astype(np.float32) * sval).astype(np.float32)
    elif snum.is_exponent:
        if n.is_int:
            q = (q * np.float32(2.0 ** (2 - n.bits))).astype(np.float32)
        v = (q * sval).astype(np.float32)
    elif dt.is_multiscale:
        tval = decode(np.array([blk.tenscale], np.uint32), dt.tenscale)[0]
        d = (tval * sval).astype(np.float32)
        v = (q * d).astype(np.float32)
    else:
        v = (q * sval).astype(np.float32)
    v = np.where(blk.nonfinite[..., None], _NAN32, v)
    if blk.keep is not None:
        v = np.where(blk.keep | blk.nonfinite[..., None], v, np.float32(0))
    return v.astype(np.float32)


# ----------------------------------------------------------------- results
def _result(dt, cmode, in_name, shape, transpose, til, blk, codes) -> CastResult:
    n = dt.nspec
    scale = zero = tens = mask = None
    if blk is not None:
        codes = til.from_blocks(blk.codes)
        sd = code_dtype(dt.sspec.scale.bits)
        scale = til.scales_from_blocks(blk.scale).astype(sd)
        if blk.zero is not None:
            zero = til.scales_from_blocks(blk.zero).astype(code_dtype(dt.zero.bits))
        if blk.tenscale is not None:
            tens = np.array(blk.tenscale, dtype=code_dtype(dt.tenscale.bits))
        if blk.keep is not None:
            mask = til.from_blocks(blk.keep)
    data = np.ascontiguousarray(codes).astype(code_dtype(n.bits))
    extra: dict[str, Any] = {"bits": n.bits}
    if blk is not None:
        extra["nonfinite"] = til.scales_from_blocks(blk.nonfinite)
    if cmode is CastMode.COMPRESS:
        flat = data.reshape(-1)
        if mask is not None:
            flat = flat[mask.reshape(-1)]
            mask = pack_mask(mask)
        data = pack_codes(flat, n.bits)
    return CastResult(
        data=data, scale=scale, zero=zero, tenscale=tens, mask=mask, meta=None, dtype=dt,
        shape=tuple(shape), castmode=cmode, input_dtype=in_name, transpose_scale=transpose,
        engine="ref", extra=extra,
    )


def upcast(result: CastResult) -> np.ndarray:
    """Decode an actual or compress result to float32 (equal to the virtual cast in float32).

    Raises:
        SpecError: if ``result`` is not an actual/compress CastResult of NumPy arrays.
    """
    if not isinstance(result, CastResult) or result.castmode is CastMode.VIRTUAL:
        raise SpecError("upcast takes the CastResult of an actual or compress cast")
    dt, shape = result.dtype, tuple(result.shape)
    n = dt.nspec
    count = int(np.prod(shape, dtype=np.int64))
    mask = result.mask
    if result.castmode is CastMode.COMPRESS:
        if mask is not None:
            mask = unpack_mask(mask, count).reshape(shape)
            kept = unpack_codes(result.data, n.bits, int(mask.sum()))
            codes = np.zeros(count, np.uint32)
            codes[mask.reshape(-1)] = kept
        else:
            codes = unpack_codes(result.data, n.bits, count)
        codes = codes.reshape(shape)
    else:
        codes = np.asarray(result.data).astype(np.uint32).reshape(shape)
    if dt.sspec is None:
        return decode(codes, n)
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        return _upcast_scaled(result, dt, shape, codes, mask)


def _upcast_scaled(result, dt, shape, codes, mask):
    til = tiling(shape, dt, result.transpose_scale)
    scale = til.scales_to_blocks(np.asarray(result.scale).astype(np.uint32))
    nonfinite = scale == dt.sspec.scale.nan_code
    blk = _Blocks(
        codes=til.to_blocks(codes),
        scale=scale,
        zero=None if result.zero is None else til.scales_to_blocks(
            np.asarray(result.zero).astype(np.uint32)),
        tenscale=None if result.tenscale is None else int(result.tenscale),
        keep=None if mask is None else til.to_blocks(np.asarray(mask, bool)),
        nonfinite=nonfinite,
    )
    return til.from_blocks(_dequantize(blk, dt))
