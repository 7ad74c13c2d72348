"""The reference cast and upcast (SEMANTICS.md §4-§8), vectorized and processed in chunks.

A scaled cast views the array as a matrix of blocks (one row per block, see
``_tiles``) and runs two passes over pieces of at most ``CHUNK`` elements:
the first reduces each row to its amax (or range) and sparsity mask, the
second encodes and decodes the elements with the row's scale. Peak extra
memory is the output plus a few chunk-sized temporaries.
"""

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
    Style,
    UnsupportedError,
    cast_mode,
    check_random_source,
    datatype,
    round_mode,
    scale_mode,
)

from ._codec import code_dtype, decode, encode, floor_log2, round_even_values, split_f32
from ._pack import pack_codes, pack_mask, unpack_codes, unpack_mask
from ._philox import random_bits
from ._tiles import Tiling, tiling
from ._work import Workspace

__all__ = ["CHUNK", "INPUT_DTYPES", "cast", "upcast"]

#: Accepted input dtypes by name (SEMANTICS.md §9).
INPUT_DTYPES = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
}
#: Elements per processing piece (bounds the temporaries).
CHUNK = 1 << 18
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


def _elem_max(n: NumberSpec, power_of_two: bool) -> Fraction:
    if n.is_int and power_of_two:
        return Fraction(n.maxint, 1 << (n.bits - 2))
    return n.max_value


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


def _float_scale(v: np.ndarray, s: NumberSpec) -> np.ndarray:
    """RNE_S(clamp(v, smallest_normal_S, max_S)) as codes (SEMANTICS.md §5.5)."""
    lo, hi = np.float32(s.smallest_normal), _f32(s.max_value)
    v = np.where(np.isnan(v), hi, v)
    return encode(np.clip(v, lo, hi).astype(np.float32), s, RoundMode.EVEN, None, True)


def _pow2_scale_exponent(rng: np.ndarray, maxint: int) -> np.ndarray:
    """Smallest e with rng <= maxint * 2**e, exactly (rng > 0 finite float32)."""
    _, _, _, sig, q = split_f32(rng)
    sig = np.where(sig == 0, 1, sig)
    e = floor_log2(sig) - (maxint.bit_length() - 1) + q - 1  # never above the answer
    for _ in range(3):  # the answer is at most two steps up
        d = e - q  # rng <= maxint * 2**e  <=>  S <= maxint * 2**d
        lhs = sig << np.clip(-d, 0, 62).astype(np.uint64)
        rhs = np.uint64(maxint) << np.clip(d, 0, 40).astype(np.uint64)
        fits = np.where(d > 40, True, np.where(d < -62, False, lhs <= rhs))
        e = np.where(fits, e, e + 1)
    return e


# ----------------------------------------------------------------- the plan
@dataclass
class _Plan:
    """Per-block (row) scales of a scaled cast and how to apply them.

    Attributes:
        scale: scale codes per row.
        zero: zero-point codes per row (uint data).
        tenscale: tensor-scale code (two-level).
        nonfinite: rows holding NaN or Inf (decode to NaN).
        recip: float32 encode multiplier per row.
        zval: float32 zero point per row (uint data), added after the multiply.
        dec: float32 decode multiplier per row.
        fixed: int data under a power-of-two scale: 2**(K-2) (else None).
        keep: sparsity keep-mask, rows x block length, or None.
    """

    scale: np.ndarray
    zero: np.ndarray | None
    tenscale: int | None
    nonfinite: np.ndarray
    recip: np.ndarray
    zval: np.ndarray | None
    dec: np.ndarray
    fixed: np.float32 | None
    keep: np.ndarray | None


def _pieces(rows: int, cols: int, group: int) -> list[tuple[slice, slice]]:
    """Split a rows x cols matrix into pieces of about CHUNK elements (cols cut on groups)."""
    if rows == 0 or cols == 0:
        return []
    if cols <= CHUNK:
        step = max(1, CHUNK // max(cols, 1))
        return [(slice(r, min(r + step, rows)), slice(0, cols)) for r in range(0, rows, step)]
    width = max(group, (CHUNK // group) * group)
    return [
        (slice(r, r + 1), slice(c, min(c + width, cols)))
        for r in range(rows)
        for c in range(0, cols, width)
    ]


def _keep_mask(chunk: np.ndarray, til: Tiling) -> np.ndarray:
    """N-of-M sparsity over a piece of whole blocks or whole groups (SEMANTICS.md §6)."""
    g, back = til.groups(chunk) if len(til.dims) == 2 else (
        chunk.reshape(*chunk.shape[:-1], -1, til.sparse_m), lambda v: v.reshape(chunk.shape))
    # rank by magnitude bits: NaN (all payloads alike) above +-Inf above every finite value
    mag = np.minimum(np.ascontiguousarray(g).view(np.uint32) & np.uint32(0x7FFFFFFF),
                     np.uint32(0x7F800001))
    key = -mag.astype(np.int64)
    order = np.argsort(key, axis=-1, kind="stable")  # ties: lower index first
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(til.sparse_m)[None], axis=-1)
    return back(ranks < til.sparse_n)


def _f32_piece(rows: np.ndarray, rs: slice, cs: slice, ws: Workspace) -> np.ndarray:
    """A piece as float32: a view of float32 input, else converted into a scratch buffer."""
    piece = rows[rs, cs]
    if piece.dtype == np.float32:
        return piece
    out = ws.get("piece", piece.shape, np.float32)
    np.copyto(out, piece, casting="unsafe")
    return out


def _row_reduce(op: np.ufunc, a: np.ndarray) -> np.ndarray:
    """Reduce each row with ``op``, halving while the width is even, then along the axis.

    NumPy reduces short rows slowly; NaN propagates through np.maximum and np.minimum.
    """
    while a.shape[1] > 8 and a.shape[1] % 2 == 0:
        half = a.shape[1] // 2
        a = op(a[:, :half], a[:, half:])
    return op.reduce(a, axis=1)


def _plan(
    rows: np.ndarray, dt: DataType, til: Tiling, smode: ScaleMode, ws: Workspace
) -> _Plan:
    """Pass 1: reduce every row to its scale (SEMANTICS.md §5)."""
    n, sspec = dt.nspec, dt.sspec
    snum = sspec.scale
    nrows, k = rows.shape
    sparse = til.sparse_m > 0
    keep = np.empty(rows.shape, bool) if sparse else None
    if n.is_uint:
        lo = np.zeros(nrows, np.float32)  # the range always holds 0 (§5.7)
        hi = np.zeros(nrows, np.float32)
    else:
        amax = np.zeros(nrows, np.float32)
    for rs, cs in _pieces(nrows, k, _group(til, k)):
        if k == 0:
            break
        chunk = _f32_piece(rows, rs, cs, ws)
        if sparse:
            kp = _keep_mask(chunk, til)
            keep[rs, cs] = kp
            chunk = np.where(kp, chunk, np.float32(0))
        if n.is_uint:
            lo[rs] = np.minimum(lo[rs], _row_reduce(np.minimum, chunk))
            hi[rs] = np.maximum(hi[rs], _row_reduce(np.maximum, chunk))
        else:
            mag = np.abs(chunk, out=ws.get("abs", chunk.shape, np.float32))
            amax[rs] = np.maximum(amax[rs], _row_reduce(np.maximum, mag))
    if n.is_uint:
        return _uint_plan(lo, hi, dt, keep)
    nonfinite = ~np.isfinite(amax)
    amax = np.where(nonfinite, np.float32(0), amax)
    tcode = None
    fixed = None
    if snum.is_exponent:
        scale = _exponent_codes(amax, n, snum, smode)
        # 2**-(code - bias): a float32 power of two (exponent types span 2**-127..2**127)
        recip = np.ldexp(1.0, (snum.bias - scale.astype(np.int64)).astype(np.int32))
        recip = recip.astype(np.float32)
        dec = decode(scale, snum)
        if n.is_int:
            fixed = np.float32(1 << (n.bits - 2))
    else:
        m = _f32(_elem_max(n, False))
        if dt.is_multiscale:
            t_spec = dt.tenscale
            t_amax = np.max(np.where(nonfinite, np.float32(np.inf), amax), initial=np.float32(0))
            if not np.isfinite(t_amax):
                nonfinite[:] = True
                tcode = int(t_spec.nan_code)
                scale = np.zeros(nrows, np.uint32)
                recip = dec = np.zeros(nrows, np.float32)
            else:
                denom = np.float32(_f32(snum.max_value) * m)
                tcode = int(_float_scale(np.float32(t_amax / denom).reshape(1), t_spec)[0])
                tval = decode(np.array([tcode]), t_spec)[0]
                scale = _float_scale(((amax / m).astype(np.float32) / tval).astype(np.float32),
                                     snum)
                sval = decode(scale, snum)
                recip = np.minimum(((np.float32(1) / tval) / sval).astype(np.float32), _F32_MAX)
                dec = (tval * sval).astype(np.float32)
        else:
            scale = _float_scale((amax / m).astype(np.float32), snum)
            dec = decode(scale, snum)
            recip = (np.float32(1) / dec).astype(np.float32)
    scale = np.where(nonfinite, snum.nan_code, scale).astype(code_dtype(snum.bits))
    return _Plan(scale, None, tcode, nonfinite, recip, None, dec, fixed, keep)


def _uint_plan(lo: np.ndarray, hi: np.ndarray, dt: DataType, keep: np.ndarray | None) -> _Plan:
    n, snum, z = dt.nspec, dt.sspec.scale, dt.zero
    nonfinite = ~(np.isfinite(lo) & np.isfinite(hi))
    lo = np.where(nonfinite, np.float32(0), lo)
    hi = np.where(nonfinite, np.float32(0), hi)
    rng = (hi - lo).astype(np.float32)
    if snum.is_exponent:
        e = _pow2_scale_exponent(rng, n.maxint)
        code = np.clip(e + snum.bias, 0, snum.max_code)
        code = np.where(rng == 0, 0, np.where(np.isinf(rng), snum.max_code, code))
    else:
        code = _float_scale((rng / _f32(n.maxint)).astype(np.float32), snum)
    code = code.astype(np.uint32)
    sval = decode(code, snum)
    recip = (np.float32(1) / sval).astype(np.float32)
    zcode = encode(((np.float32(0) - lo) * recip).astype(np.float32), z, RoundMode.EVEN, None,
                   True).astype(np.uint32)
    zval = decode(zcode, z)
    code = np.where(nonfinite, snum.nan_code, code).astype(code_dtype(snum.bits))
    zcode = np.where(nonfinite, z.nan_code if z.has_nan else 0, zcode)
    return _Plan(code, zcode.astype(code_dtype(z.bits)), None, nonfinite, recip, zval, sval,
                 None, keep)


def _scaled_inputs(chunk, plan, rs, ws) -> np.ndarray:
    """fl32(x * r) [+ zero point] [* 2**(K-2)] for a piece, in a scratch buffer."""
    xs = np.multiply(chunk, plan.recip[rs, None], out=ws.get("xs", chunk.shape, np.float32))
    if plan.zval is not None:
        xs += plan.zval[rs, None]
    if plan.fixed is not None:
        xs *= plan.fixed
    return xs


def _encode_piece(chunk, plan, rs, cs, dt, rmode, rbits, ws) -> np.ndarray:
    """Pass 2a: element codes of a piece (SEMANTICS.md §5.3-§5.7)."""
    n = dt.nspec
    xs = _scaled_inputs(chunk, plan, rs, ws)
    codes = encode(xs, n, rmode, rbits, True, ws)
    nonfinite = plan.nonfinite[rs]
    if plan.keep is not None:
        zero_out = nonfinite[:, None] | ~plan.keep[rs, cs]
    elif nonfinite.any():
        zero_out = nonfinite[:, None]
    else:
        return codes
    return np.where(zero_out, 0, codes).astype(codes.dtype, copy=False)


def _virtual_piece_fast(chunk, plan, rs, cs, dt, ws) -> np.ndarray | None:
    """Round-to-nearest-even virtual values of a piece without forming codes, or None.

    Same bits as decoding the codes (checked by the tests over every combination).
    """
    n = dt.nspec
    if n.is_integer and n.bits > 24:
        return None
    if not n.is_integer and round_even_values(chunk[:0], n) is None:
        return None
    xs = _scaled_inputs(chunk, plan, rs, ws)
    if n.is_integer:
        lo = np.float32(0 if n.is_uint else -n.maxint)
        v = np.rint(xs, out=xs)
        np.clip(v, lo, np.float32(n.maxint), out=v)
        if plan.zval is not None:
            v -= plan.zval[rs, None]
        elif plan.fixed is not None:
            v *= np.float32(1 / float(plan.fixed))
        v *= plan.dec[rs, None]
        v += np.float32(0)  # integers have no -0
    else:
        v = round_even_values(xs, n, ws)
        v *= plan.dec[rs, None]
    return _finish(v, plan, rs, cs)


def _finish(v: np.ndarray, plan: _Plan, rs: slice, cs: slice) -> np.ndarray:
    """NaN throughout non-finite blocks, +0 where pruned (SEMANTICS.md §5.2, §6)."""
    nonfinite = plan.nonfinite[rs, None]
    if nonfinite.any():
        v = np.where(nonfinite, _NAN32, v)
    if plan.keep is not None:
        v = np.where(plan.keep[rs, cs] | nonfinite, v, np.float32(0))
    return v.astype(np.float32, copy=False)


def _decode_piece(codes, plan, rs, cs, dt) -> np.ndarray:
    """Pass 2b: decoded float32 values of a piece (the virtual result before the input dtype)."""
    n = dt.nspec
    q = decode(codes, n)
    if plan.zval is not None:
        v = (q - plan.zval[rs, None]).astype(np.float32, copy=False) * plan.dec[rs, None]
    elif plan.fixed is not None:
        v = (q * np.float32(1 / float(plan.fixed))) * plan.dec[rs, None]
    else:
        v = q * plan.dec[rs, None]
    return _finish(v, plan, rs, cs)


# ----------------------------------------------------------------- the cast
@dataclass(frozen=True)
class _SeedBits:
    """Random bits to draw from Philox by flat index, as pieces need them."""

    seed: int

    def flat(self, start: int, count: int) -> np.ndarray:
        """The bits of flat indices ``start .. start + count - 1``."""
        return random_bits(self.seed, count, start)

    def full(self, shape: tuple[int, ...]) -> np.ndarray:
        """The bits of a whole array."""
        return random_bits(self.seed, int(np.prod(shape, dtype=np.int64))).reshape(shape)


def _check_rbits(
    mode: RoundMode, seed: int | None, rbits: Any, shape: tuple[int, ...]
) -> np.ndarray | _SeedBits | None:
    check_random_source(mode, seed, rbits)
    if mode is not RoundMode.STOCHASTIC:
        return None
    if seed is not None:
        random_bits(seed, 0)  # validates the seed now; the bits are drawn piece by piece
        return _SeedBits(seed)
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
        UnsupportedError: for input that is not a float32/float16/bfloat16 NumPy array.
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
    rb = _check_rbits(rmode, seed, rbits, tuple(x.shape))
    til = None if dt.sspec is None else tiling(tuple(x.shape), dt, transpose_scale)
    # float32 overflow to Inf is part of the semantics (§0), not an accident to warn about
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        if til is None:
            return _unscaled(x, dt, cmode, rmode, rb, saturate, in_name)
        return _scaled(x, dt, til, cmode, rmode, smode, rb, in_name, transpose_scale)


def _unscaled(x, dt, cmode, rmode, rb, saturate, in_name):
    n = dt.nspec
    flat = x.reshape(-1)
    rflat = rb.reshape(-1) if isinstance(rb, np.ndarray) else None
    virtual = cmode is CastMode.VIRTUAL
    out = np.empty(flat.shape, x.dtype if virtual else code_dtype(n.bits))
    ws = Workspace()
    for lo in range(0, flat.size, CHUNK):
        sl = slice(lo, lo + CHUNK)
        x32 = _f32_piece(flat[None, :], slice(0, 1), sl, ws)[0]
        if virtual and rmode is RoundMode.EVEN and saturate:
            values = round_even_values(x32, n, ws)
            if values is not None:
                nan = np.isnan(x32)
                if nan.any():
                    signed = n.style is not Style.FNUZ and n.style is not Style.UZ
                    nanv = np.copysign(_NAN32, x32) if signed else _NAN32
                    values = np.where(nan, nanv, values)
                out[sl] = values
                continue
        bits = rflat[sl] if rflat is not None else (
            rb.flat(lo, x32.size) if isinstance(rb, _SeedBits) else None)
        codes = encode(x32, n, rmode, bits, saturate, ws)
        if not virtual:
            out[sl] = codes
            continue
        values = decode(codes, n)
        if not n.has_nan:  # §4.2/§7: an input NaN stays NaN in the virtual result
            nan = np.isnan(x32)
            if nan.any():
                values = np.where(nan, np.copysign(_NAN32, x32), values)
        out[sl] = values.astype(x.dtype, copy=False)
    out = out.reshape(x.shape)
    if virtual:
        return out
    return _result(dt, cmode, in_name, tuple(x.shape), False, None, None, out)


def _group(til: Tiling, cols: int) -> int:
    """Column pieces must hold whole sparsity groups (whole blocks for 2-D sparsity)."""
    if not til.sparse_m:
        return 1
    return til.sparse_m if len(til.dims) == 1 else cols


def _scaled(x, dt, til, cmode, rmode, smode, rb, in_name, transpose):
    blocks = til.to_blocks(x)
    rows = blocks.reshape(-1, blocks.shape[-1])
    # Seeded bits are drawn per piece when block rows are runs of flat indices (tensor
    # scales, and tiles along the last dimension without padding); otherwise the whole
    # stream is drawn and laid out like the blocks.
    shape = tuple(x.shape)
    flat_rows = not til.dims or (
        til.dims == (len(shape) - 1,) and shape[-1] % til.sizes[0] == 0)
    if isinstance(rb, _SeedBits) and not flat_rows:
        rb = rb.full(shape)
    rrows = til.to_blocks(rb).reshape(rows.shape) if isinstance(rb, np.ndarray) else None
    seed_bits = rb if isinstance(rb, _SeedBits) else None
    ws = Workspace()
    plan = _plan(rows, dt, til, smode, ws)
    virtual = cmode is CastMode.VIRTUAL
    out = np.empty(rows.shape, x.dtype if virtual else code_dtype(dt.nspec.bits))
    fast = virtual and rmode is RoundMode.EVEN
    for rs, cs in _pieces(rows.shape[0], rows.shape[1], _group(til, rows.shape[1])):
        chunk = _f32_piece(rows, rs, cs, ws)
        if fast:
            v = _virtual_piece_fast(chunk, plan, rs, cs, dt, ws)
            if v is not None:
                out[rs, cs] = v
                continue
        if seed_bits is not None:
            start = rs.start * rows.shape[1] + cs.start
            bits = seed_bits.flat(start, chunk.size).reshape(chunk.shape)
        else:
            bits = None if rrows is None else rrows[rs, cs]
        codes = _encode_piece(chunk, plan, rs, cs, dt, rmode, bits, ws)
        if virtual:
            out[rs, cs] = _decode_piece(codes, plan, rs, cs, dt).astype(x.dtype, copy=False)
        else:
            out[rs, cs] = codes
    full = til.from_blocks(out.reshape(blocks.shape))
    if virtual:
        return np.asarray(full, order="C")
    return _result(dt, cmode, in_name, tuple(x.shape), transpose, til, plan,
                   np.asarray(full, order="C"))


# ----------------------------------------------------------------- results
def _result(dt, cmode, in_name, shape, transpose, til, plan, codes) -> CastResult:
    n = dt.nspec
    scale = zero = tens = mask = None
    extra: dict[str, Any] = {"bits": n.bits}
    if plan is not None:
        counts = til.scale_counts_shape
        scale = til.scales_from_blocks(plan.scale.reshape(counts))
        if plan.zero is not None:
            zero = til.scales_from_blocks(plan.zero.reshape(counts))
        if plan.tenscale is not None:
            tens = np.array(plan.tenscale, dtype=code_dtype(dt.tenscale.bits))
        if plan.keep is not None:
            keep = plan.keep.reshape(*counts, plan.keep.shape[-1])
            mask = np.asarray(til.from_blocks(keep), order="C")
    data = codes
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
    _check_result(result)
    dt, shape = result.dtype, tuple(result.shape)
    n = dt.nspec
    count = int(np.prod(shape, dtype=np.int64))
    mask = result.mask
    if result.castmode is CastMode.COMPRESS:
        if mask is not None:
            mask = unpack_mask(mask, count).reshape(shape)
            kept = unpack_codes(result.data, n.bits, int(mask.sum()))
            codes = np.zeros(count, code_dtype(n.bits))
            codes[mask.reshape(-1)] = kept
        else:
            codes = unpack_codes(result.data, n.bits, count).astype(code_dtype(n.bits))
        codes = codes.reshape(shape)
    else:
        codes = np.asarray(result.data).astype(code_dtype(n.bits), copy=False).reshape(shape)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        if dt.sspec is None:
            return decode(codes, n)
        return _upcast_scaled(result, dt, shape, codes, mask)


def _check_result(r: CastResult) -> None:
    """Refuse a CastResult whose parts do not fit its datatype and shape."""
    r.check_parts(np.ndarray, "a NumPy array")
    if r.data.dtype.kind != "u":
        raise SpecError("CastResult.data must be a NumPy array of unsigned codes")


def _upcast_scaled(result, dt, shape, codes, mask):
    til = tiling(shape, dt, result.transpose_scale)
    snum = dt.sspec.scale
    scale = til.scales_to_blocks(np.asarray(result.scale)).reshape(-1).astype(np.uint32)
    nonfinite = scale == snum.nan_code
    blocks = til.to_blocks(codes)
    rows = blocks.reshape(-1, blocks.shape[-1])
    keep = None if mask is None else til.to_blocks(np.asarray(mask, bool)).reshape(rows.shape)
    n = dt.nspec
    zval = fixed = None
    tcode = None if result.tenscale is None else int(result.tenscale)
    if n.is_uint:
        zc = til.scales_to_blocks(np.asarray(result.zero)).reshape(-1).astype(np.uint32)
        zval = decode(zc, dt.zero)
        dec = decode(scale, snum)
    elif dt.is_multiscale:
        tval = decode(np.array([tcode], np.uint32), dt.tenscale)[0]
        dec = (tval * decode(scale, snum)).astype(np.float32)
        nonfinite = nonfinite | bool(np.isnan(tval))
    else:
        dec = decode(scale, snum)
        if snum.is_exponent and n.is_int:
            fixed = np.float32(1 << (n.bits - 2))
    plan = _Plan(scale, None, tcode, nonfinite, dec, zval, dec, fixed, keep)
    out = np.empty(rows.shape, np.float32)
    for rs, cs in _pieces(rows.shape[0], rows.shape[1], _group(til, rows.shape[1])):
        out[rs, cs] = _decode_piece(rows[rs, cs], plan, rs, cs, dt)
    return np.asarray(til.from_blocks(out.reshape(blocks.shape)), order="C")
