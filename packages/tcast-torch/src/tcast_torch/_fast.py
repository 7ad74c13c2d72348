"""The fast path of the most common scaled casts: same bits as the general path, fewer ops.

MX-style casts (float elements, a power-of-two scale, 1-D tiles along the last dimension
that divide it, round to nearest even, no sparsity) and float-scaled ones (NVFP4) are
computed on ``x.reshape(-1, T)`` directly: one row reduction, then per element a multiply and
the rounding, then either a multiply by the decode scale (virtual) or the code (actual).

Each step is chosen for the instructions it becomes in the one fused kernel that
``torch.compile`` makes of it (measured on an H200, packages/tcast-torch/README.md):

* the block amax is an integer max of the input's magnitude bits (:func:`block_amax`), one
  instruction per element where a float max that propagates NaN takes four;
* clamps are compare-and-selects when compiled (:func:`tcast_torch._bits.clamp_finite`);
* the two FP8 types with a hardware conversion (:data:`NATIVE_FLOAT8`) use it, and their
  codes are the converted bytes;
* formats of at most eight magnitudes (FP4 e2m1) round by counting the rounding thresholds
  below ``|x|`` (:func:`small_grid`): seven comparisons, where the bit-level rounding takes
  about thirty integer operations;
* nothing reinterprets a full-size computed tensor as a dtype of another width, which would
  make Inductor write it to memory and split the kernel.

The general path handles everything else; the tests compare the two bit for bit.
"""

from __future__ import annotations

from functools import lru_cache

import torch

from tcast import CastMode, NumberSpec, RoundMode
from tcast.kit import CastRequest

from ._bits import clamp_finite, pow2, to_bits, unsigned_codes
from ._codec import round_even_applies, round_even_values
from ._pieces import by_pieces
from ._scale import Given, exponent_codes, make_plan
from ._tiles import Tiling

__all__ = [
    "NATIVE_FLOAT8",
    "block_amax",
    "codes_from_values",
    "fast_path_applies",
    "fast_scaled",
    "small_grid",
]

#: Element formats whose torch dtype rounds like tcast (to nearest even) on finite values in
#: range: after clamping to +-max, ``.to(dtype)`` gives tcast's saturating RNE result, and on
#: GPUs Inductor lowers it to one conversion instruction (the fnuz types have no such
#: instruction on NVIDIA GPUs and take the integer route).
NATIVE_FLOAT8 = {"e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}

#: Integer views of the input dtypes and the mask of their magnitude bits.
_MAGNITUDE = {
    torch.float32: (torch.int32, 0x7FFFFFFF),
    torch.float16: (torch.int16, 0x7FFF),
    torch.bfloat16: (torch.int16, 0x7FFF),
}


def block_amax(rows: torch.Tensor) -> torch.Tensor:
    """float32 max of |x| along the last dimension of the input ``rows`` (the blocks).

    The max of the magnitude bits read as integers: for non-negative floats the integer order
    is the value order, and NaN patterns lie above Inf's, so a block holding a NaN gets a NaN
    amax (as ``abs().amax()`` gives). The view is of the input, whose width it keeps.
    """
    ib, mask = _MAGNITUDE[rows.dtype]
    mags = rows.view(ib) & mask
    return mags.amax(-1).view(rows.dtype).to(torch.float32)


def small_grid(n: NumberSpec) -> tuple[tuple[float, bool, float], ...] | None:
    """The rounding thresholds of a float format of at most eight finite magnitudes.

    Memoized per spec for eager calls (the exact arithmetic costs tens of microseconds);
    computed directly while torch.compile traces (dynamo warns about cached functions).

    Returns:
        For each pair of neighbouring magnitudes ``a < b``: the midpoint, whether a value
        equal to it rounds up (to nearest, ties to the even code), and ``b - a``; None for
        formats with more magnitudes. ``|x|`` rounds to the magnitude code that counts the
        thresholds it passes, saturating at the largest. All values are exact in float32.
    """
    if torch.compiler.is_compiling():
        return _thresholds(n)
    return _thresholds_cached(n)


def _thresholds(n: NumberSpec) -> tuple[tuple[float, bool, float], ...] | None:
    if not n.is_float or n.max_code > 7:
        return None
    vals = [n.magnitude_value(c) for c in range(n.max_code + 1)]
    out = []
    for c in range(n.max_code):
        a, b = vals[c], vals[c + 1]
        mid, step = (a + b) / 2, b - a
        # integer quotients: torch.compile traces them (not float() of a Fraction)
        out.append(
            (mid.numerator / mid.denominator, (c + 1) % 2 == 0, step.numerator / step.denominator)
        )
    return tuple(out)


_thresholds_cached = lru_cache(maxsize=64)(_thresholds)


def _passed(m: torch.Tensor, grid) -> torch.Tensor:
    """How many thresholds of ``grid`` the magnitudes ``m`` pass: their int32 codes."""
    code = None
    for mid, up, _ in grid:
        hit = ((m >= mid) if up else (m > mid)).to(torch.int32)
        code = hit if code is None else code + hit
    return code


def _grid_values(xs: torch.Tensor, n: NumberSpec, grid) -> torch.Tensor:
    """The rounded values of float32 ``xs`` (finite) on a small grid, with xs's sign."""
    m = xs.abs()
    val = None
    for mid, up, step in grid:
        add = torch.where((m >= mid) if up else (m > mid), step, 0.0)
        val = add if val is None else val + add  # sums of a few dyadics: exact
    val = torch.copysign(val, xs)
    if not n.has_negzero:
        val = torch.where(val == 0, 0.0, val)
    return val


def _grid_codes(xs: torch.Tensor, n: NumberSpec, grid) -> torch.Tensor:
    """int32 codes of float32 ``xs`` (finite) on a small grid; the sign bit from xs's."""
    code = _passed(xs.abs(), grid)
    sign = (to_bits(xs) >> (32 - n.bits)) & n.sign_bit  # xs's sign bit, moved to the code's
    if not n.has_negzero:
        sign = torch.where(code == 0, 0, sign)
    return code | sign


def fast_path_applies(x: torch.Tensor, req: CastRequest) -> bool:
    """Whether :func:`fast_scaled` takes this cast (shapes, datatype and modes only).

    Round to nearest even, virtual or actual, float elements with a power-of-two or float
    scale, one tile along the last dimension that divides it, no sparsity, no zero point,
    no given scale parts (SEMANTICS.md §5.12: the general path reads them).
    """
    dt, til = req.dtype, req.layout
    ss, n = dt.sspec, dt.nspec
    if ss is None or req.roundmode is not RoundMode.EVEN or req.castmode is CastMode.COMPRESS:
        return False
    if req.given is not None:
        return False
    if x.ndim == 0:
        return False
    if len(ss.tiles) != 1 or ss.is_sparse or ss.tiles[0].is_channel or not n.is_float:
        return False
    if n.is_uint or dt.zero is not None:
        return False
    t = ss.tiles[0].size
    if til.dims != (x.ndim - 1,) or x.shape[-1] % t or x.numel() == 0:
        return False
    return round_even_applies(n)


def codes_from_values(v: torch.Tensor, n: NumberSpec) -> torch.Tensor:
    """int32 codes of float32 values that lie on ``n``'s finite grid (RNE results).

    Normal values take the exponent field and the top mantissa bits of their float32 bits;
    subnormal ones are whole multiples of the smallest subnormal 2**(emin - mbits): the
    code is the float32 significand shifted right to that spacing. (A float32 product by
    2**(mbits - emin) would overflow to Inf for 8-bit exponents, emin = -126, and turn zeros
    into NaN, whose int32 conversion gives 0x80000000.)
    """
    b = to_bits(v)
    mag = b & 0x7FFFFFFF
    e32 = mag >> 23
    normal = ((e32 - (127 - n.bias)) << n.mbits) | ((mag >> (23 - n.mbits)) & ((1 << n.mbits) - 1))
    # |v| = sig * 2**(max(e32, 1) - 150) with sig < 2**24; the grid spacing 2**(emin - mbits)
    # is at least that ulp for every |v| below 2**emin (emin >= -126, mbits < 23), so the
    # shift is exact and non-negative
    sig = torch.where(e32 > 0, (mag & 0x7FFFFF) | 0x800000, mag)
    shift = (n.emin - n.mbits + 150) - torch.clamp_min(e32, 1)
    sub = sig >> torch.clamp(shift, 0, 31)
    small_bits = (n.emin + 127) << 23  # float32 bits of the smallest normal of n
    code = torch.where(mag >= small_bits, normal, sub)
    neg = b < 0
    if not n.has_negzero:
        neg = neg & (code != 0)
    return torch.where(neg, code | n.sign_bit, code)


def fast_scaled(
    x: torch.Tensor, req: CastRequest, til: Tiling, tamax: torch.Tensor | None = None
) -> torch.Tensor | tuple:
    """The fast cast, where :func:`fast_path_applies` (the caller decided).

    ``tamax``: two-level scaling's tensor amax from elsewhere (float32, 0-d: the whole
    tensor's, of which ``x`` is a shard's window), else x's own.

    Returns:
        The virtual tensor; or for actual casts ``(codes, scale, tenscale)``: unsigned codes
        in x's shape, unsigned scale codes in the scale shape, the int32 tensor-scale code.
    """
    dt = req.dtype
    ss, n = dt.sspec, dt.nspec
    t = ss.tiles[0].size
    blocks = x.reshape(-1, t)
    rows = blocks.to(torch.float32)
    amax = block_amax(blocks)
    if ss.scale.is_exponent and not dt.is_multiscale:
        nonfinite = ~torch.isfinite(amax)
        scale = exponent_codes(torch.where(nonfinite, 0.0, amax), req.rules.exponent)
        rcp = pow2(ss.scale.bias - scale)
        dec = pow2(scale - ss.scale.bias)
        tcode = None
    else:
        given = None if tamax is None else Given(None, None, tamax)
        plan = make_plan(rows, req, til, amax=amax, given=given)
        scale, nonfinite, rcp, dec, tcode = (
            plan.scale,
            plan.nonfinite,
            plan.recip,
            plan.dec,
            plan.tenscale,
        )
    virtual = req.virtual
    native = NATIVE_FLOAT8.get(n.code)
    grid = small_grid(n)

    def stage(s: slice) -> torch.Tensor:
        """The virtual values (x's dtype) or the unsigned codes of the rows ``s``."""
        xs = rows[s] * rcp[s, None]
        bad = nonfinite[s, None]
        # every full-size result is narrowed while still in the row layout: a conversion
        # after the reshape is a node of another shape, which Inductor does not fuse into
        # the reduction
        if native is not None:
            if not virtual:
                xs = torch.where(bad, 0.0, xs)  # code 0 in non-finite blocks
            q = clamp_finite(xs, n.maxfloat).to(native)
            if not virtual:
                # the codes are the float8 bytes, read through int8 (a uint8 view of a
                # computed float8 tensor splits the fused kernel under torch.compile; int8
                # does not)
                return q.view(torch.int8).to(torch.uint8)
            v = q.to(torch.float32)
        elif grid is not None:
            if not virtual:
                return unsigned_codes(torch.where(bad, 0, _grid_codes(xs, n, grid)), n.bits)
            v = _grid_values(xs, n, grid)
        else:
            v = round_even_values(xs, n)
            if not virtual:
                return unsigned_codes(torch.where(bad, 0, codes_from_values(v, n)), n.bits)
        out = (v * dec[s, None]).to(x.dtype)
        nan = torch.full((), float("nan"), dtype=x.dtype, device=x.device)  # canonical bits
        return torch.where(bad, nan, out)

    out = by_pieces(rows, t, stage).reshape(x.shape)
    if virtual:
        return out
    sc = unsigned_codes(torch.where(nonfinite, ss.scale.nan_code, scale), ss.scale.bits)
    return out, sc.reshape(til.scale_shape), tcode
