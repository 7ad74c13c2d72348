"""The fast path of the most common scaled casts: same bits as the general path, fewer ops.

MX-style casts (float elements, a power-of-two scale, 1-D tiles along the last dimension
that divide it, round to nearest even, no sparsity) and float-scaled ones (NVFP4) are
computed on ``x.reshape(-1, T)`` directly: one row reduction, then per element a multiply,
the float32 carry-trick rounding (``round_even_values``), and either a multiply by the
decode scale (virtual) or the code built from the rounded value's bits (actual). No step
reinterprets a full-size computed tensor as another dtype, which keeps the whole cast one
fused kernel under ``torch.compile`` (a full-size dtype view of an intermediate makes
Inductor write it to memory), and the element work stays a few integer operations, so the
cast is bound by memory, not arithmetic. The general path handles everything else; the
tests compare the two bit for bit.
"""

from __future__ import annotations

import torch

from tcast import CastMode, CastResult, DataType, NumberSpec, RoundMode, ScaleMode

from ._bits import pow2, to_bits, to_f32, unsigned_codes
from ._codec import round_even_values
from ._scale import exponent_codes, make_plan
from ._tiles import Tiling

__all__ = ["NATIVE_FLOAT8", "codes_from_values", "fast_scaled"]

#: Element formats whose torch dtype rounds like tcast (to nearest even) on finite values in
#: range: after clamping to +-max, ``.to(dtype)`` gives tcast's saturating RNE result, and on
#: GPUs Inductor lowers it to one conversion instruction (the fnuz types have no such
#: instruction on NVIDIA GPUs and take the integer route).
NATIVE_FLOAT8 = {"e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def _applies(x: torch.Tensor, dt: DataType, til: Tiling, cmode: CastMode,
             rmode: RoundMode) -> bool:
    ss, n = dt.sspec, dt.nspec
    if rmode is not RoundMode.EVEN or cmode is CastMode.COMPRESS or x.ndim == 0:
        return False
    if len(ss.tiles) != 1 or ss.is_sparse or ss.tiles[0].is_channel or not n.is_float:
        return False
    if n.is_uint or dt.zero is not None:
        return False
    t = ss.tiles[0].size
    if til.dims != (x.ndim - 1,) or x.shape[-1] % t or x.numel() == 0:
        return False
    return round_even_values(torch.zeros(0), n) is not None


def codes_from_values(v: torch.Tensor, n: NumberSpec) -> torch.Tensor:
    """int32 codes of float32 values that lie on ``n``'s finite grid (RNE results).

    Normal values take the exponent field and the top mantissa bits of their float32 bits;
    subnormal ones are whole multiples of the smallest subnormal (an exact product).
    """
    b = to_bits(v)
    mag = b & 0x7FFFFFFF
    normal = ((((mag >> 23) - (127 - n.bias)) << n.mbits)
              | ((mag >> (23 - n.mbits)) & ((1 << n.mbits) - 1)))
    sub = (to_f32(mag) * (2.0 ** (n.mbits - n.emin))).to(torch.int32)
    small_bits = (n.emin + 127) << 23  # float32 bits of the smallest normal of n
    code = torch.where(mag >= small_bits, normal, sub)
    neg = b < 0
    if not n.has_negzero:
        neg = neg & (code != 0)
    return torch.where(neg, code | n.sign_bit, code)


def fast_scaled(
    x: torch.Tensor, dt: DataType, til: Tiling, cmode: CastMode, rmode: RoundMode,
    smode: ScaleMode, in_name: str, nan: torch.Tensor,
) -> torch.Tensor | tuple | None:
    """The fast cast, or None when it does not apply.

    Returns:
        The virtual tensor; or for actual casts ``(codes, scale, tenscale)``: unsigned codes
        in x's shape, unsigned scale codes in the scale shape, the int32 tensor-scale code.
    """
    if not _applies(x, dt, til, cmode, rmode):
        return None
    ss, n = dt.sspec, dt.nspec
    t = ss.tiles[0].size
    rows = x.reshape(-1, t).to(torch.float32)
    if ss.scale.is_exponent and not dt.is_multiscale:
        amax = rows.abs().amax(-1)
        nonfinite = ~torch.isfinite(amax)
        scale = exponent_codes(torch.where(nonfinite, 0.0, amax), n, ss.scale, smode)
        rcp = pow2(ss.scale.bias - scale)
        dec = pow2(scale - ss.scale.bias)
        tcode = None
    else:
        plan = make_plan(rows, dt, til, smode)
        scale, nonfinite, rcp, dec, tcode = (plan.scale, plan.nonfinite, plan.recip, plan.dec,
                                             plan.tenscale)
    xs = rows * rcp[:, None]
    bad = nonfinite[:, None]
    native = NATIVE_FLOAT8.get(n.code)
    if native is not None:
        q = torch.clamp(xs, -n.maxfloat, n.maxfloat).to(native)
        v = q.to(torch.float32)
    else:
        v = round_even_values(xs, n)
    if cmode is CastMode.VIRTUAL:
        out = (v * dec[:, None]).to(x.dtype)
        return torch.where(bad, nan, out).reshape(x.shape)
    if native is not None:
        # the codes are the float8 bits; read through int8 (a uint8 view of a computed tensor
        # would split the fused kernel under torch.compile)
        codes = q.view(torch.int8).to(torch.int32) & 0xFF
    else:
        codes = codes_from_values(v, n)
    codes = torch.where(bad, 0, codes)
    scale = torch.where(nonfinite, ss.scale.nan_code, scale)
    # narrow to the stored dtypes while still in the row layout: a conversion after the
    # reshape is a node of another shape, which Inductor does not fuse into the reduction
    return (unsigned_codes(codes, n.bits).reshape(x.shape),
            unsigned_codes(scale, ss.scale.bits).reshape(til.scale_shape), tcode)


def result(dt: DataType, cmode: CastMode, in_name: str, shape: tuple[int, ...],
           transpose: bool, codes: torch.Tensor, scale: torch.Tensor,
           tcode: torch.Tensor | None) -> CastResult:
    """The CastResult of a fast actual cast."""
    tens = None if tcode is None else unsigned_codes(tcode.reshape(()), dt.tenscale.bits)
    return CastResult(
        data=codes, scale=scale,
        zero=None, tenscale=tens, mask=None, meta=None, dtype=dt, shape=tuple(shape),
        castmode=cmode, input_dtype=in_name, transpose_scale=transpose, engine="torch",
        extra={"bits": dt.nspec.bits},
    )
