"""Per-block scales of a scaled cast (SEMANTICS.md §5.2-§5.7, §6): the plan.

A scaled cast views the tensor as a matrix of blocks (one row per block, ``_tiles``); the
plan reduces every row to its amax (or range) and sparsity mask and derives the scale
codes, the float32 encode multiplier and the decode multiplier of each row. All of it is
tensor arithmetic (no host synchronisation): rows whose data is non-finite are carried as a
mask and overwritten at the end.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from fractions import Fraction

import torch

from tcast import DataType, NumberSpec, RoundMode, ScaleMode

from ._bits import F32_MAX_BITS, floor_log2_small, pow2, split_f32, to_bits
from ._codec import decode, encode
from ._tiles import Tiling

__all__ = ["Plan", "div", "f32", "make_plan"]

_F32_MAX = struct.unpack("<f", struct.pack("<i", F32_MAX_BITS))[0]
#: The smallest magnitude that rounds to Inf in float32: halfway from the max to 2**128
#: (a tie, and the max's significand is odd, so it rounds up).
_F32_OVERFLOW = 2.0**128 - 2.0**103
#: Sparsity groups up to this length rank by pairwise comparison, longer ones by a sort.
PAIRWISE_MAX_M = 16


def f32(v: float | Fraction) -> float:
    """A value rounded once to float32 (format maxima are exact; wide int maxima round).

    Overflow gives +-Inf, as float32 arithmetic does (SEMANTICS.md §0).
    """
    # Fraction -> float as the integer quotient (what float() does; torch 2.11 cannot trace it)
    v = v.numerator / v.denominator if isinstance(v, Fraction) else float(v)
    if abs(v) >= _F32_OVERFLOW:  # tested first: torch.compile cannot trace the pack's error
        return math.copysign(math.inf, v)
    return struct.unpack("<f", struct.pack("<f", v))[0]


def div(a: torch.Tensor, b: float | torch.Tensor) -> torch.Tensor:
    """fl32(a / b) of float32 operands, correctly rounded on every device and compiler.

    Computed in float64 and rounded once to float32: for float32 operands the float64
    quotient rounded to float32 is the correctly rounded float32 quotient (53 >= 2 * 24 + 2:
    double rounding of a division is innocuous, Figueroa 1995). This holds where float32
    division itself is not exact: CUDA divides by a host scalar through its reciprocal,
    Triton divides approximately, and Inductor may turn a division by a constant into a
    multiplication. Only per-block values are divided, so the float64 work is small.
    """
    if not isinstance(b, torch.Tensor):
        b = torch.full((), b, dtype=torch.float64, device=a.device)
    return (a.to(torch.float64) / b.to(torch.float64)).to(torch.float32)


def recip(a: torch.Tensor) -> torch.Tensor:
    """fl32(1 / a), correctly rounded (through float64, as :func:`div`)."""
    return (1.0 / a.to(torch.float64)).to(torch.float32)


def elem_max(n: NumberSpec, power_of_two: bool) -> Fraction:
    """The element max M (SEMANTICS.md §0): MXINT is fixed point under a power-of-two scale."""
    if n.is_int and power_of_two:
        return Fraction(n.maxint, 1 << (n.bits - 2))
    return n.max_value


@dataclass
class Plan:
    """Per-block (row) scales of a scaled cast and how to apply them.

    Attributes:
        scale: int32 scale codes per row.
        zero: int32 zero-point codes per row (uint data), else None.
        tenscale: 0-d int32 tensor-scale code (two-level), else None.
        nonfinite: bool per row: the block holds NaN or Inf (decodes to NaN).
        recip: float32 encode multiplier per row.
        zval: float32 zero point per row (uint data), added after the multiply, else None.
        dec: float32 decode multiplier per row.
        fixed: int data under a power-of-two scale: 2**(K-2) (else None).
        keep: sparsity keep-mask, rows x block length, or None.
    """

    scale: torch.Tensor
    zero: torch.Tensor | None
    tenscale: torch.Tensor | None
    nonfinite: torch.Tensor
    recip: torch.Tensor
    zval: torch.Tensor | None
    dec: torch.Tensor
    fixed: float | None
    keep: torch.Tensor | None


# ----------------------------------------------------------------- scale rules
def exponent_codes(amax: torch.Tensor, n: NumberSpec, s: NumberSpec, mode: ScaleMode):
    """Exponent-scale codes for finite amax >= 0 (SEMANTICS.md §5.3), exactly from the bits."""
    m = elem_max(n, True)
    num, den = m.numerator, m.denominator  # integers only below: torch.compile traces them
    emax = num.bit_length() - den.bit_length()
    if ((den << emax) > num) if emax >= 0 else (den > (num << -emax)):
        emax -= 1
    # tau = M / 2**emax = num / tden; the bump thresholds are floor(t * 2**23)
    tden = den << emax if emax >= 0 else den
    tnum = num if emax >= 0 else num << -emax
    if mode is ScaleMode.FLOOR and s.bias - 127 - emax <= 0:
        # floor(log2 amax) is the exponent field minus 127 for normal amax; zero and float32
        # subnormal amax (field 0) would need a smaller code than that, and both clamp to 0
        e = ((to_bits(amax) >> 23) & 0xFF) - 127 - emax
        return torch.clamp(e + s.bias, 0, s.max_code)
    _, _, _, _, sig, q = split_f32(amax)
    zero = sig == 0
    sig = torch.clamp_min(sig, 1)
    lg = floor_log2_small(sig)
    big_e = lg + q
    norm = sig << (23 - lg)  # sigma * 2**23, in [2**23, 2**24)
    if mode is ScaleMode.FLOOR:
        bump = None
    elif mode is ScaleMode.CEIL:
        bump = norm > (1 << 23)
    elif mode is ScaleMode.MIDMAX:
        bump = norm > ((tnum + 2 * tden) << 22) // tden  # (tau + 2) / 2
    elif mode is ScaleMode.TOPBINADE:
        bump = norm > (tnum << 23) // tden
    else:  # OPTION3: round sigma to p significant bits (ties to even); bump on reaching 2
        p = n.precision
        sh = 24 - p
        if sh <= 0:
            bump = None
        else:
            top = norm >> sh
            rem = norm - (top << sh)
            half = 1 << (sh - 1)
            up = (rem > half) | ((rem == half) & ((top & 1) == 1))
            bump = (top + up.to(torch.int32)) == (1 << p)
    e = big_e - emax
    if bump is not None:
        e = e + bump.to(torch.int32)
    code = torch.clamp(e + s.bias, 0, s.max_code)
    return torch.where(zero, 0, code)


def float_scale(v: torch.Tensor, s: NumberSpec) -> torch.Tensor:
    """RNE_S(clamp(v, smallest_normal_S, max_S)) as int32 codes (SEMANTICS.md §5.5)."""
    lo, hi = s.smallest_normal, f32(s.max_value)
    v = torch.where(torch.isnan(v), hi, v)
    return encode(torch.clamp(v, lo, hi), s, RoundMode.EVEN, None, True)


def pow2_scale_exponent(rng: torch.Tensor, maxint: int) -> torch.Tensor:
    """Smallest e with rng <= maxint * 2**e, exactly (rng > 0 finite float32).

    With rng = S * 2**q, L = bit length of S and B that of maxint, the answer is
    e0 = q + L - B or e0 + 1: e0 iff S * 2**(B - L) <= maxint (compared in 64 bits).
    """
    _, _, _, _, sig, q = split_f32(rng)
    sig = torch.clamp_min(sig, 1)
    big_l = floor_log2_small(sig) + 1
    big_b = maxint.bit_length()
    e0 = q + big_l - big_b
    lhs = sig.to(torch.int64) << torch.clamp_min(big_b - big_l, 0).to(torch.int64)
    rhs = torch.full_like(lhs, maxint) << torch.clamp_min(big_l - big_b, 0).to(torch.int64)
    return e0 + (lhs > rhs).to(torch.int32)


# ----------------------------------------------------------------- sparsity
def keep_mask(rows: torch.Tensor, til: Tiling) -> torch.Tensor:
    """N-of-M sparsity keep-mask of block rows (SEMANTICS.md §6).

    Rank by the magnitude bits: NaN (all payloads alike) above +-Inf above every finite
    value; ties keep the lower index.
    """
    g, back = til.groups(rows)
    key = torch.clamp_max(g.view(torch.int32) & 0x7FFFFFFF, 0x7F800001)
    m = til.sparse_m
    if m <= PAIRWISE_MAX_M:
        ki, kj = key.unsqueeze(-1), key.unsqueeze(-2)  # element i against element j
        idx = torch.arange(m, device=rows.device)
        earlier = idx.unsqueeze(0) < idx.unsqueeze(1)  # [i, j]: j comes before i
        rank = ((kj > ki) | ((kj == ki) & earlier)).sum(-1)
    else:
        order = torch.argsort(-key, dim=-1, stable=True)  # ties: lower index first
        pos = torch.arange(m, device=rows.device).expand_as(order)
        rank = torch.empty_like(order).scatter_(-1, order, pos)
    return back(rank < til.sparse_n)


# ----------------------------------------------------------------- the plan
def make_plan(rows: torch.Tensor, dt: DataType, til: Tiling, smode: ScaleMode, *,
              amax: torch.Tensor | None = None) -> Plan:
    """Reduce every row (block) to its scale (SEMANTICS.md §5).

    ``amax`` is the rows' max magnitude when the caller has it already (the fast path);
    it is ignored (recomputed) where sparsity or unsigned elements change what is reduced.
    """
    n, snum = dt.nspec, dt.sspec.scale
    keep = None
    if til.sparse_m:
        keep = keep_mask(rows, til)
        rows = torch.where(keep, rows, 0.0)
    if n.is_uint:
        # the range always holds 0 (§5.7); NaN propagates through both reductions
        lo = torch.clamp_max(rows.amin(-1), 0.0)
        hi = torch.clamp_min(rows.amax(-1), 0.0)
        return _uint_plan(lo, hi, dt, keep)
    if amax is None or keep is not None:
        amax = rows.abs().amax(-1)
    nonfinite = ~torch.isfinite(amax)
    amax = torch.where(nonfinite, 0.0, amax)
    tcode = None
    fixed = None
    if snum.is_exponent:
        scale = exponent_codes(amax, n, snum, smode)
        rcp = pow2(snum.bias - scale)  # 2**-(code - bias): exponent types span 2**-127..2**127
        dec = decode(scale, snum)
        if n.is_int:
            fixed = float(1 << (n.bits - 2))
    else:
        m = f32(elem_max(n, False))
        if dt.is_multiscale:
            t_spec = dt.tenscale
            if amax.numel():
                t_amax = torch.where(nonfinite, torch.inf, amax).amax()
            else:
                t_amax = amax.new_zeros(())
            all_bad = ~torch.isfinite(t_amax)
            denom = f32(f32(snum.max_value) * m)
            tq = div(torch.where(all_bad, 0.0, t_amax), denom).reshape(1)
            tcode = float_scale(tq, t_spec)
            tval = decode(tcode, t_spec)
            scale = float_scale(div(div(amax, m), tval), snum)
            sval = decode(scale, snum)
            rcp = torch.clamp_max(div(recip(tval), sval), _F32_MAX)
            dec = tval * sval
            nonfinite = nonfinite | all_bad
            tcode = torch.where(all_bad, t_spec.nan_code, tcode).reshape(())
        else:
            scale = float_scale(div(amax, m), snum)
            dec = decode(scale, snum)
            rcp = recip(dec)
    scale = torch.where(nonfinite, snum.nan_code, scale)
    return Plan(scale, None, tcode, nonfinite, rcp, None, dec, fixed, keep)


def _uint_plan(lo, hi, dt: DataType, keep) -> Plan:
    n, snum, z = dt.nspec, dt.sspec.scale, dt.zero
    nonfinite = ~(torch.isfinite(lo) & torch.isfinite(hi))
    lo = torch.where(nonfinite, 0.0, lo)
    hi = torch.where(nonfinite, 0.0, hi)
    rng = hi - lo
    if snum.is_exponent:
        e = pow2_scale_exponent(rng, n.maxint)
        code = torch.clamp(e + snum.bias, 0, snum.max_code)
        code = torch.where(rng == 0, 0, torch.where(torch.isinf(rng), snum.max_code, code))
    else:
        code = float_scale(div(rng, f32(n.maxint)), snum)
    sval = decode(code, snum)
    rcp = recip(sval)
    # fl32(0 - lo): +0 for lo = +-0 (a negated +0 would be -0)
    zcode = encode((torch.zeros_like(lo) - lo) * rcp, z, RoundMode.EVEN, None, True)
    zval = decode(zcode, z)
    code = torch.where(nonfinite, snum.nan_code, code)
    zcode = torch.where(nonfinite, z.nan_code if z.has_nan else 0, zcode)
    return Plan(code, zcode, None, nonfinite, rcp, zval, sval, None, keep)
