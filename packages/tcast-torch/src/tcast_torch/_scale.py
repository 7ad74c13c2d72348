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

from tcast import NumberSpec, RoundMode
from tcast.kit import (
    NEVER,
    CastRequest,
    CastRules,
    ExponentScaleRule,
    GivenScales,
    given_exponent_rule,
    given_scale_recipe,
    run_recipe,
    scale_bounds,
)

from ._bits import floor_log2_small, split_f32, to_bits
from ._codec import decode, encode
from ._given import bad_values
from ._pieces import BlockRows, by_pieces
from ._tiles import Tiling

__all__ = [
    "Given",
    "Ops",
    "Plan",
    "block_stats",
    "div",
    "exponent_codes",
    "f32",
    "float_scale",
    "make_plan",
    "recip",
    "round_f32",
    "unusable_given",
]

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
    return round_f32(a.to(torch.float64) / b.to(torch.float64))


def recip(a: torch.Tensor) -> torch.Tensor:
    """fl32(1 / a), correctly rounded (through float64, as :func:`div`)."""
    return round_f32(1.0 / a.to(torch.float64))


def round_f32(q: torch.Tensor) -> torch.Tensor:
    """``q`` rounded to float32, a rounding the compiler cannot drop.

    Inductor (CUDA, torch 2.11) removes ``q.to(float32)`` when the next division reads the
    value back with ``.to(float64)``, keeping the float64 quotient: two-level scales would lose
    the float32 rounding of ``amax / M``, coarse where it is a float32 subnormal (a tile of
    float32 subnormals would get a bfloat16 scale 9 ulps off: the generated kernel divides
    the unrounded float64 product). A bitcast pair alone is folded too; an integer operation on
    the float32 bits (xor with 0) is not, and costs one op per block.
    """
    bits = q.to(torch.float32).view(torch.int32)
    return (bits ^ torch.zeros_like(bits)).view(torch.float32)


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
        keep: sparsity keep-mask, rows x block length, or None.
    """

    scale: torch.Tensor
    zero: torch.Tensor | None
    tenscale: torch.Tensor | None
    nonfinite: torch.Tensor
    recip: torch.Tensor
    zval: torch.Tensor | None
    dec: torch.Tensor
    keep: torch.Tensor | None

    def columns(self, names: tuple[str, ...]) -> dict:
        """The per-row values an element recipe reads, as columns."""
        cols = {"recip": self.recip, "dec": self.dec, "zval": self.zval}
        return {k: cols[k][:, None] for k in names if k in cols}

    def rows(self, s: slice) -> Plan:
        """The plan of the rows ``s`` (the tensor scale is the whole tensor's)."""

        def cut(a: torch.Tensor | None) -> torch.Tensor | None:
            return None if a is None else a[s]

        return Plan(
            self.scale[s],
            cut(self.zero),
            self.tenscale,
            self.nonfinite[s],
            self.recip[s],
            cut(self.zval),
            self.dec[s],
            cut(self.keep),
        )


# ----------------------------------------------------------------- rule operations
def exponent_codes(v: torch.Tensor, rule: ExponentScaleRule) -> torch.Tensor:
    """Power-of-two scale codes of float32 ``v >= 0`` by the kit's rule (SEMANTICS.md §5.3).

    ``floor(log2 v)`` and the 24-bit significand come from the bits; where the rule allows
    (``field_exact``) straight from the exponent and mantissa fields. 0 gives code 0 and
    +Inf (a uint range that overflowed) the largest code.
    """
    if rule.field_exact:
        b = to_bits(v)
        big_e = ((b >> 23) & 0xFF) - 127  # zero and subnormals clamp to code 0 either way
        sig = (b & 0x7FFFFF) | 0x800000
        zero = None
    else:
        _, _, _, _, sig, q = split_f32(v)
        zero = sig == 0
        sig = torch.clamp_min(sig, 1)
        lg = floor_log2_small(sig)
        big_e = lg + q
        sig = sig << (23 - lg)  # sigma * 2**23, in [2**23, 2**24)
    e = big_e + rule.offset
    if rule.threshold < NEVER:
        e = e + (sig > rule.threshold).to(torch.int32)
    code = torch.clamp(e, 0, rule.max_code)
    if zero is not None:
        code = torch.where(zero, 0, code)
    return torch.where(torch.isinf(v), rule.max_code, code)


def float_scale(v: torch.Tensor, s: NumberSpec) -> torch.Tensor:
    """RNE_S(clamp(v, smallest_normal_S, max_S)) as int32 codes, NaN -> max (SEMANTICS §5.5)."""
    lo, hi = scale_bounds(s)
    v = torch.where(torch.isnan(v), hi, v)
    return encode(torch.clamp(v, lo, hi), s, RoundMode.EVEN, None, True)


def _tensor(a: torch.Tensor | float, like: torch.Tensor) -> torch.Tensor:
    return a if isinstance(a, torch.Tensor) else torch.full_like(like, a)


class Ops:
    """The kit's recipe operations on float32 tensors (each one rounding, on any device)."""

    def __init__(self, rules: CastRules) -> None:
        dt = rules.dtype
        self.rules = rules
        self.specs = {
            "scale": dt.sspec.scale if dt.sspec else None,
            "tenscale": dt.tenscale,
            "zero": dt.zero,
        }

    def div(self, a, b):
        if isinstance(a, torch.Tensor):
            return div(a, b)
        return recip(b) if a == 1.0 else div(_tensor(a, b), b)

    def mul(self, a, b):
        return a * b

    def add(self, a, b):
        return a + b

    def sub(self, a, b):
        return _tensor(a, b) - b

    def min(self, a, b):
        return torch.clamp_max(a, b) if not isinstance(b, torch.Tensor) else torch.minimum(a, b)

    def scale_code(self, v, which):
        return float_scale(v, self.specs[which])

    def exp_code(self, v):
        return exponent_codes(v, self.rules.exponent)

    def ceil_code(self, v, which):
        return exponent_codes(v, given_exponent_rule(self.specs[which]))

    def zero_code(self, v):
        return encode(v, self.specs["zero"], RoundMode.EVEN, None, True)

    def decode(self, codes, which):
        return decode(codes, self.specs[which])


def _given_rows(given: GivenScales, til: Tiling) -> dict[str, torch.Tensor]:
    """Given parts as recipe inputs: one float32 value per block row (``gtenscale``: one)."""
    out = {}
    for name, key in (("scale", "gscale"), ("zero", "gzero")):
        part = getattr(given, name)
        if part is not None:
            out[key] = til.scales_to_blocks(part).reshape(-1)
    if given.tensor_scale is not None:
        out["gtenscale"] = given.tensor_scale.reshape(1)
    return out


def unusable_given(
    parts: dict[str, torch.Tensor],
) -> tuple[dict[str, torch.Tensor], torch.Tensor | None, torch.Tensor | None]:
    """Given values that ``check_given`` would refuse, as non-finite blocks (SEMANTICS.md §5.12).

    Values are checked before a cast wherever they can be read (``_given``); inside a
    torch.compile graph they cannot be without breaking it, so a NaN, an infinity or a
    negative scale given there reaches the cast. It is taken as a non-finite block would
    be (§5.2): the block (a tensor scale's: every block) gets the NaN scale code and
    decodes to NaN, as a NaN amax computed from the data does, so that a bad value never
    becomes a number. No value a check accepted is affected.

    Returns:
        The recipe inputs with each unusable value replaced by 0 (every step then works on
        values of its domain), True per row whose given scale or zero point is unusable
        (None: no such part), and True (shape ``(1,)``) if the given tensor scale is (None:
        not given).
    """
    usable, rows, tensor = {}, None, None
    for key, g in parts.items():
        bad = bad_values(g, signed=key == "gzero")
        usable[key] = torch.where(bad, 0.0, g)
        if key == "gtenscale":
            tensor = bad
        else:
            rows = bad if rows is None else rows | bad
    return usable, rows, tensor


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
@dataclass(frozen=True)
class Given:
    """Block statistics reduced elsewhere (across the shards of a DTensor), per row.

    Attributes:
        hi: float32 per row: the amax of the kept elements, or for uint data
            ``max(max, 0)``; NaN where the block holds NaN or Inf. None: the rows' own (no
            block is shared; only ``tamax`` comes from elsewhere).
        lo: float32 per row for uint data, ``min(min, 0)`` (NaN as ``hi``), else None.
        tamax: float32 0-d, the whole tensor's amax (two-level scaling), else None.
    """

    hi: torch.Tensor | None
    lo: torch.Tensor | None = None
    tamax: torch.Tensor | None = None


def _magnitude_bits(v: torch.Tensor) -> torch.Tensor:
    """|v| as int32 bits: ordered like |v|, NaN above Inf (an exact integer MAX reduces it)."""
    return to_bits(v) & 0x7FFFFFFF


def block_stats(
    rows: torch.Tensor, req: CastRequest, til: Tiling
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per row: the magnitude bits of what :func:`make_plan` reduces (``hi``, ``lo``).

    ``hi`` is the amax of the kept elements (uint data: ``max(max, 0)``), ``lo`` for uint
    data ``|min(min, 0)|``; as int32 magnitude bits (:func:`_magnitude_bits`), so that
    the statistics of a block split over shards reduce exactly by an integer MAX and come
    back as float32 by a bit view (``Given``).
    """
    if til.sparse_m:
        rows = torch.where(keep_mask(rows, til), rows, 0.0)
    if req.dtype.nspec.is_uint:
        lo = torch.clamp_max(rows.amin(-1), 0.0)
        hi = torch.clamp_min(rows.amax(-1), 0.0)
        return _magnitude_bits(hi), _magnitude_bits(lo)
    return _magnitude_bits(rows.abs().amax(-1)), None


def _sparse_rows(
    rows: torch.Tensor | BlockRows, til: Tiling, uint: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """The keep-mask of the rows and what the plan reduces of their kept elements.

    Per row the amax of the kept elements, or for uint data ``(min(min, 0), max(max, 0))``
    as two columns. In pieces of rows on the CPU: the mask's pairwise comparisons and the
    masked rows are temporaries several times a piece's size.
    """
    length = rows.shape[-1]
    keep = by_pieces(rows, length, lambda s: keep_mask(rows[s], til))

    def reduce(s: slice) -> torch.Tensor:
        kept = torch.where(keep[s], rows[s], 0.0)
        if uint:
            lo = torch.clamp_max(kept.amin(-1), 0.0)
            return torch.stack((lo, torch.clamp_min(kept.amax(-1), 0.0)), dim=-1)
        return kept.abs().amax(-1)

    return keep, by_pieces(rows, length, reduce)


def _reduced(rows: torch.Tensor | BlockRows, reduce) -> torch.Tensor:
    """``reduce`` of every row, in pieces of rows on the CPU (no temporary of the input's size)."""
    return by_pieces(rows, rows.shape[1], lambda s: reduce(rows[s]))


def make_plan(
    rows: torch.Tensor | BlockRows,
    req: CastRequest,
    til: Tiling,
    *,
    amax: torch.Tensor | None = None,
    given: Given | None = None,
) -> Plan:
    """Reduce every row (block) to its scale (SEMANTICS.md §5), by the kit's recipe.

    ``amax`` is the rows' max magnitude when the caller has it already (the fast path);
    it is ignored (recomputed) where sparsity or unsigned elements change what is reduced.
    ``given`` replaces every reduction (the statistics of whole blocks of which ``rows``
    hold a part: a shard of a DTensor); the sparsity mask is still the rows' own.
    """
    dt, rules = req.dtype, req.rules
    n, snum = dt.nspec, dt.sspec.scale
    ops = Ops(rules)
    # given parts (SEMANTICS.md §5.12): the kit's recipe for them, the given values per row
    parts, bad_rows, bad_tensor = {}, None, None
    if req.given is not None:
        parts, bad_rows, bad_tensor = unusable_given(_given_rows(req.given, til))
    recipe = rules.scale if req.given is None else given_scale_recipe(rules, *req.given.parts)
    keep = None
    if til.sparse_m:
        keep, kept_amax = _sparse_rows(rows, til, n.is_uint)
    if n.is_uint:
        # the range always holds 0 (§5.7); NaN propagates through both reductions
        if given is not None and given.hi is not None:
            lo, hi = -given.lo, given.hi
        elif keep is not None:
            lo, hi = kept_amax[:, 0], kept_amax[:, 1]
        else:
            lo = _reduced(rows, lambda r: torch.clamp_max(r.amin(-1), 0.0))
            hi = _reduced(rows, lambda r: torch.clamp_min(r.amax(-1), 0.0))
        nonfinite = ~(torch.isfinite(lo) & torch.isfinite(hi))
        out = run_recipe(
            recipe,
            ops,
            rules.constants,
            lo=torch.where(nonfinite, 0.0, lo),
            hi=torch.where(nonfinite, 0.0, hi),
            **parts,
        )
        if bad_rows is not None:
            nonfinite = nonfinite | bad_rows
        z = dt.zero
        return Plan(
            torch.where(nonfinite, snum.nan_code, out["scale"]),
            torch.where(nonfinite, z.nan_code if z.has_nan else 0, out["zero"]),
            None,
            nonfinite,
            out["recip"],
            out["zval"],
            out["dec"],
            keep,
        )
    if given is not None and given.hi is not None:
        amax = given.hi
    elif keep is not None:
        amax = kept_amax
    elif amax is None:
        amax = _reduced(rows, lambda r: r.abs().amax(-1))
    nonfinite = ~torch.isfinite(amax)
    inputs = {"amax": torch.where(nonfinite, 0.0, amax), **parts}
    all_bad = None
    if dt.is_multiscale and "gtenscale" not in parts:  # a given tensor scale: no tensor amax
        if given is not None and given.tamax is not None:
            t_amax = given.tamax.reshape(())
        elif amax.numel():
            t_amax = torch.where(nonfinite, torch.inf, amax).amax()
        else:
            t_amax = amax.new_zeros(())
        all_bad = ~torch.isfinite(t_amax)  # a non-finite tensor: every block is NaN (§5.6)
        inputs["tamax"] = torch.where(all_bad, 0.0, t_amax).reshape(1)
        nonfinite = nonfinite | all_bad
    elif bad_tensor is not None:  # an unusable given tensor scale: as a non-finite tensor
        all_bad = bad_tensor.reshape(())
        nonfinite = nonfinite | all_bad
    if bad_rows is not None:
        nonfinite = nonfinite | bad_rows
    out = run_recipe(recipe, ops, rules.constants, **inputs)
    tcode = None
    if all_bad is not None:
        tcode = torch.where(all_bad, dt.tenscale.nan_code, out["tenscale"]).reshape(())
    elif dt.is_multiscale:
        tcode = out["tenscale"].reshape(())
    return Plan(
        torch.where(nonfinite, snum.nan_code, out["scale"]),
        None,
        tcode,
        nonfinite,
        out["recip"],
        None,
        out["dec"],
        keep,
    )
