"""The torch cast and upcast (SEMANTICS.md §4-§8), structured like tcast_ref's.

A scaled cast views the tensor as a matrix of blocks (``_tiles``), reduces every block to
its scale (``_scale.make_plan``), then encodes and decodes every element with its block's
scale in int32 bit operations (``_codec``). The whole path is tensor operations branching
in Python only on shapes, dtypes and the datatype, so it runs on any device and traces
into one graph.
"""

from __future__ import annotations

import math
from typing import Any

import torch

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

from ._bits import NAN_BITS, SIGN, nan_like_bits, to_bits, to_f32, unsigned_codes, widen_codes
from ._codec import decode, encode, round_even_applies, round_even_values
from ._compiled import call_compiled, compiled_cast, use_compiled
from ._fast import fast_path_applies, fast_scaled
from ._fast import result as fast_result
from ._pack import pack_codes, pack_mask, unpack_codes, unpack_mask
from ._philox import _check_seed, philox_stream
from ._scale import Plan, make_plan
from ._tiles import Tiling, tiling

__all__ = ["INPUT_DTYPES", "cast", "check_cast_args", "to_input_dtype", "upcast"]

#: Accepted input dtypes by name (SEMANTICS.md §9).
INPUT_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
#: Canonical quiet NaN bits of the 16-bit input dtypes (SEMANTICS.md §2).
_NAN16 = {torch.float16: 0x7E00, torch.bfloat16: 0x7FC0}


def _input_name(x: torch.Tensor) -> str:
    for name, dt in INPUT_DTYPES.items():
        if x.dtype == dt:
            return name
    raise UnsupportedError(
        f"tcast_torch casts float32, float16 and bfloat16 tensors, not {x.dtype}; convert "
        f"first (float64 is not accepted: SEMANTICS.md §9)"
    )


def to_input_dtype(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """float32 values rounded to the input dtype (RNE, overflow to Inf), NaN canonical (§7).

    torch's own conversion keeps neither the sign nor the payload of NaN in every case (the
    CPU gives 0xFFFF for any NaN into bfloat16), so NaN bits are set here.
    """
    if dtype == torch.float32:
        return v
    out = v.to(dtype).view(torch.int16)
    canon = _NAN16[dtype]
    nan_bits = torch.where(to_bits(v) < 0, canon - 0x10000 + 0x8000, canon).to(torch.int16)
    return torch.where(torch.isnan(v), nan_bits, out).view(dtype)


# ----------------------------------------------------------------- arguments
def _check_rbits(rmode: RoundMode, seed: Any, rbits: Any, x: torch.Tensor):
    """Validate the random source; return ``("seed", seed)``, ``("rbits", int32)`` or None."""
    check_random_source(rmode, seed, rbits)
    if rmode is not RoundMode.STOCHASTIC:
        return None
    if seed is not None:
        return ("seed", _check_seed(seed))
    if not isinstance(rbits, torch.Tensor) or rbits.dtype not in (torch.uint32, torch.int32):
        raise SpecError(
            f"rbits must be a torch.uint32 (or int32 bit-pattern) tensor, got "
            f"{type(rbits).__name__} {getattr(rbits, 'dtype', '')}".rstrip()
        )
    if tuple(rbits.shape) != tuple(x.shape):
        raise SpecError(f"rbits has shape {tuple(rbits.shape)}, the input has shape "
                        f"{tuple(x.shape)}")
    if rbits.device != x.device:
        raise SpecError(f"rbits is on {rbits.device}, the input on {x.device}")
    return ("rbits", rbits.view(torch.int32))


def check_cast_args(x, dtype, castmode, roundmode, scalemode, seed, rbits, saturate,
                    transpose_scale):
    """Validate every argument before any work (nothing is cast halfway).

    Returns:
        (datatype, castmode, roundmode, scalemode, input dtype name, random source, tiling).

    Raises:
        SpecError: bad datatype, mode, flag, random source or tile dimension.
        UnsupportedError: x is not a float32/float16/bfloat16 tensor.
    """
    dt = dtype if isinstance(dtype, DataType) else datatype(dtype)
    cmode, rmode, smode = cast_mode(castmode), round_mode(roundmode), scale_mode(scalemode)
    for flag, value in (("saturate", saturate), ("transpose_scale", transpose_scale)):
        if not isinstance(value, bool):
            raise SpecError(f"{flag} must be True or False, got {value!r}")
    if not isinstance(x, torch.Tensor):
        raise UnsupportedError(f"tcast_torch casts torch tensors, not {type(x).__name__}")
    in_name = _input_name(x)
    rsrc = _check_rbits(rmode, seed, rbits, x)
    til = None if dt.sspec is None else tiling(tuple(x.shape), dt, transpose_scale)
    return dt, cmode, rmode, smode, in_name, rsrc, til


def _random_source_bits(rsrc, x: torch.Tensor) -> torch.Tensor | None:
    """int32 random bits in x's (logical) shape: explicit, or Philox by flat C-order index."""
    if rsrc is None:
        return None
    kind, value = rsrc
    if kind == "rbits":
        return value
    return philox_stream(value, 0, x.numel(), x.device).reshape(x.shape)


# ----------------------------------------------------------------- the cast
def cast(
    x: torch.Tensor,
    dtype: DataType | str,
    *,
    castmode: CastMode | str = "virtual",
    roundmode: RoundMode | str = "even",
    scalemode: ScaleMode | str = "floor",
    seed: int | None = None,
    rbits: torch.Tensor | None = None,
    saturate: bool = True,
    transpose_scale: bool = False,
    grad: str = "ste",
    compile: bool | None = None,
) -> torch.Tensor | CastResult:
    """Cast a torch tensor bit-exactly as SEMANTICS.md defines (the same bits as tcast_ref).

    Args:
        x: float32, float16 or bfloat16 tensor of any rank, any strides, on any device.
        dtype: a DataType, catalog name or code pair.
        castmode: virtual (a tensor of x's dtype), actual or compress (a CastResult).
        roundmode: even, away (nearest), zero, trunc, stochastic.
        scalemode: floor, ceil, midmax, option3, topbinade (rceil).
        seed: stochastic rounding: Philox seed (bits by flat C-order index).
        rbits: stochastic rounding: torch.uint32 (or int32) tensor of x's shape and device.
        saturate: unscaled casts: overflow to +-max, or IEEE (Inf/NaN).
        transpose_scale: swap the two segments of a 2-D tile.
        grad: the gradient of a virtual cast of a tensor that requires grad: ``"ste"``
            (straight through, the default) or ``"saturate"`` (zero where the cast clipped
            the input; see ``tcast_torch._autograd``).
        compile: run a ``torch.compile``d version of the cast (one or two fused kernels
            instead of tens; the first call of each datatype, modes and input rank
            compiles, a few seconds): ``None`` (default) for the fast-path casts (round to
            nearest even, MX or NVFP4-style tiles along the last dimension that divide it,
            block scales narrower than float32) of CUDA tensors when Triton is installed,
            falling back to eager with a warning if compiling fails; ``True`` for every cast
            that can be compiled (compiler errors raise); ``False`` never. The compiled
            kernels use :func:`exact_inductor_options` and give the eager bits (the CUDA
            conformance runs in the package README); ``tcast_torch._compiled`` lists the
            calls that always run eagerly.

    Returns:
        The virtual tensor, or a CastResult whose tensors live on x's device.

    Raises:
        UnsupportedError: for input that is not a float32/float16/bfloat16 tensor.
        SpecError: for bad datatypes, modes, random bits, or tile dimensions.
    """
    dt, cmode, rmode, smode, in_name, rsrc, til = check_cast_args(
        x, dtype, castmode, roundmode, scalemode, seed, rbits, saturate, transpose_scale)
    if grad not in ("ste", "saturate"):
        raise SpecError(f"grad {grad!r} is not defined; valid: ste, saturate")
    if compile is not None and not isinstance(compile, bool):
        raise SpecError(f"compile must be True, False or None, got {compile!r}")
    if cmode is CastMode.VIRTUAL and x.requires_grad and torch.is_grad_enabled():
        from ._autograd import virtual_with_grad

        return virtual_with_grad(x, dt, rmode, smode, rsrc, saturate, til, grad)
    with torch.no_grad():
        def eager():
            return cast_checked(x, dt, cmode, rmode, smode, rsrc, saturate, til, in_name,
                                transpose_scale)

        fast = til is not None and fast_path_applies(x, dt, til, cmode, rmode)
        if use_compiled(x, compile, rsrc, fast=fast, padded=til is not None and til.padded,
                        scale_bits=0 if dt.sspec is None else dt.sspec.scale.bits):
            rb = None if rsrc is None else rsrc[1]
            fn = compiled_cast(dt, cmode, rmode, smode, saturate, transpose_scale, in_name,
                               x.ndim)
            return call_compiled(fn, x, rb, eager, required=compile is True)
        return eager()


def cast_checked(x, dt, cmode, rmode, smode, rsrc, saturate, til, in_name, transpose,
                 fast: bool = True):
    """The cast after :func:`check_cast_args` (no validation here).

    ``fast=False`` skips the fast path (``_fast``); the tests use it to compare the two.
    """
    rb = _random_source_bits(rsrc, x)
    if til is None:
        return _unscaled(x, dt, cmode, rmode, rb, saturate, in_name)
    if fast:
        nan = torch.full((), float("nan"), dtype=x.dtype, device=x.device)  # canonical bits
        out = fast_scaled(x, dt, til, cmode, rmode, smode, in_name, nan)
        if isinstance(out, torch.Tensor):
            return out
        if out is not None:
            return fast_result(dt, cmode, in_name, tuple(x.shape), transpose, *out)
    return _scaled(x, dt, til, cmode, rmode, smode, rb, in_name, transpose)


def _f32_keeping_nan_sign(x: torch.Tensor) -> torch.Tensor:
    """X as float32; NaN keeps its sign (CUDA converts a 16-bit NaN to +0x7FFFFFFF)."""
    x32 = x.to(torch.float32)
    if x.dtype == torch.float32:
        return x32
    neg_nan = torch.isnan(x32) & (x.view(torch.int16) < 0)
    return to_f32(torch.where(neg_nan, to_bits(x32) | SIGN, to_bits(x32)))


def _unscaled(x, dt, cmode, rmode, rb, saturate, in_name):
    n = dt.nspec
    x32 = _f32_keeping_nan_sign(x)  # the sign of an input NaN reaches the code (§4.2)
    virtual = cmode is CastMode.VIRTUAL
    if virtual and rmode is RoundMode.EVEN and saturate and round_even_applies(n):
        values = round_even_values(x32, n)
        signed = n.style is not Style.FNUZ and n.style is not Style.UZ
        nan_bits = nan_like_bits(to_bits(x32) < 0) if signed else NAN_BITS
        values = to_f32(torch.where(torch.isnan(x32), nan_bits, to_bits(values)))
        return to_input_dtype(values, x.dtype).contiguous()
    codes = encode(x32, n, rmode, rb, saturate)
    if not virtual:
        return _result(dt, cmode, in_name, tuple(x.shape), False, None, None, codes)
    values = decode(codes, n)
    if not n.has_nan:  # §4.2/§7: an input NaN stays NaN in the virtual result
        nan_bits = nan_like_bits(to_bits(x32) < 0)
        values = to_f32(torch.where(torch.isnan(x32), nan_bits, to_bits(values)))
    return to_input_dtype(values, x.dtype).contiguous()


def _scaled_inputs(rows: torch.Tensor, plan: Plan) -> torch.Tensor:
    """fl32(x * r) [+ zero point] [* 2**(K-2)], one rounding per step."""
    xs = rows * plan.recip[:, None]
    if plan.zval is not None:
        xs = xs + plan.zval[:, None]
    if plan.fixed is not None:
        xs = xs * plan.fixed
    return xs


def _finish(v: torch.Tensor, plan: Plan) -> torch.Tensor:
    """NaN throughout non-finite blocks, +0 where pruned (SEMANTICS.md §5.2, §6)."""
    nonfinite = plan.nonfinite[:, None]
    b = torch.where(nonfinite, NAN_BITS, to_bits(v))
    if plan.keep is not None:
        b = torch.where(plan.keep | nonfinite, b, 0)
    return to_f32(b)


def _virtual_fast(rows: torch.Tensor, plan: Plan, n: NumberSpec) -> torch.Tensor | None:
    """Round-to-nearest-even virtual values without forming codes, or None.

    Same bits as decoding the codes (checked by the tests over every combination).
    """
    if n.is_integer and n.bits > 24:
        return None
    if not n.is_integer and not round_even_applies(n):
        return None
    xs = _scaled_inputs(rows, plan)
    if n.is_integer:
        lo = 0.0 if n.is_uint else float(-n.maxint)
        v = torch.clamp(torch.round(xs), lo, float(n.maxint))
        if plan.zval is not None:
            v = v - plan.zval[:, None]
        elif plan.fixed is not None:
            v = v * (1.0 / plan.fixed)
        v = v * plan.dec[:, None]
        v = torch.where(v == 0, 0.0, v)  # integers have no -0
    else:
        v = round_even_values(xs, n) * plan.dec[:, None]
    return _finish(v, plan)


def _decode_rows(codes: torch.Tensor, plan: Plan, n: NumberSpec) -> torch.Tensor:
    """Decoded float32 values of block rows (the virtual result before the input dtype)."""
    q = decode(codes, n)
    if plan.zval is not None:
        v = (q - plan.zval[:, None]) * plan.dec[:, None]
    elif plan.fixed is not None:
        v = (q * (1.0 / plan.fixed)) * plan.dec[:, None]
    else:
        v = q * plan.dec[:, None]
    return _finish(v, plan)


def _scaled(x, dt, til: Tiling, cmode, rmode, smode, rb, in_name, transpose):
    blocks = til.to_blocks(x.to(torch.float32))
    length = blocks.shape[-1]
    rows = blocks.reshape(-1, length)
    plan = make_plan(rows, dt, til, smode)
    virtual = cmode is CastMode.VIRTUAL
    n = dt.nspec
    out = None
    if virtual and rmode is RoundMode.EVEN:
        out = _virtual_fast(rows, plan, n)
    if out is None:
        rrows = None if rb is None else til.to_blocks(rb).reshape(rows.shape)
        codes = encode(_scaled_inputs(rows, plan), n, rmode, rrows, True)
        zero_out = plan.nonfinite[:, None]
        if plan.keep is not None:
            zero_out = zero_out | ~plan.keep
        codes = torch.where(zero_out, 0, codes)
        out = _decode_rows(codes, plan, n) if virtual else codes
    full = til.from_blocks(out.reshape(blocks.shape))
    if virtual:
        return to_input_dtype(full, x.dtype).contiguous()
    return _result(dt, cmode, in_name, tuple(x.shape), transpose, til, plan, full)


# ----------------------------------------------------------------- results
def _select_kept(flat: torch.Tensor, keep: torch.Tensor, count: int) -> torch.Tensor:
    """The kept codes in C order; ``count`` (the number kept) is known from the shapes."""
    pos = torch.cumsum(keep.to(torch.int32), 0) - 1
    idx = torch.where(keep, pos, count)  # pruned codes go to a scratch slot past the end
    out = flat.new_zeros(count + 1)
    return out.scatter_(0, idx, flat)[:count]


def _result(dt, cmode, in_name, shape, transpose, til, plan, codes) -> CastResult:
    n = dt.nspec
    scale = zero = tens = mask = None
    if plan is not None:
        counts = til.scale_counts_shape
        scale = unsigned_codes(
            til.scales_from_blocks(plan.scale.reshape(counts)).contiguous(), dt.sspec.scale.bits)
        if plan.zero is not None:
            zero = unsigned_codes(
                til.scales_from_blocks(plan.zero.reshape(counts)).contiguous(), dt.zero.bits)
        if plan.tenscale is not None:
            tens = unsigned_codes(plan.tenscale, dt.tenscale.bits)
        if plan.keep is not None:
            keep = plan.keep.reshape(*counts, plan.keep.shape[-1])
            mask = til.from_blocks(keep).contiguous()
    if cmode is CastMode.COMPRESS:
        flat = codes.reshape(-1)
        if mask is not None:
            flat = _select_kept(flat, mask.reshape(-1), til.kept_count)
            mask = pack_mask(mask)
        data = pack_codes(flat, n.bits)
    else:
        data = unsigned_codes(codes.contiguous(), n.bits)
    return CastResult(
        data=data, scale=scale, zero=zero, tenscale=tens, mask=mask, meta=None, dtype=dt,
        shape=tuple(shape), castmode=cmode, input_dtype=in_name, transpose_scale=transpose,
        engine="torch", extra={"bits": n.bits},
    )


# ----------------------------------------------------------------- upcast
def upcast(result: CastResult) -> torch.Tensor:
    """Decode an actual or compress result to float32 (equal to the virtual cast in float32).

    Raises:
        SpecError: if ``result`` is not an actual/compress CastResult of torch tensors that
            fit its datatype and shape.
    """
    if not isinstance(result, CastResult) or result.castmode is CastMode.VIRTUAL:
        raise SpecError("upcast takes the CastResult of an actual or compress cast")
    _check_result(result)
    dt, shape = result.dtype, tuple(result.shape)
    n = dt.nspec
    count = math.prod(shape)
    mask = result.mask
    til = None if dt.sspec is None else tiling(shape, dt, result.transpose_scale)
    with torch.no_grad():
        if result.castmode is CastMode.COMPRESS:
            if mask is not None:
                mask = unpack_mask(mask, count).reshape(shape)
                kept = unpack_codes(result.data, n.bits, til.kept_count)
                codes = torch.zeros(count, dtype=torch.int32, device=kept.device)
                codes = codes.masked_scatter(mask.reshape(-1), kept)
            else:
                codes = unpack_codes(result.data, n.bits, count)
            codes = codes.reshape(shape)
        else:
            codes = widen_codes(result.data).reshape(shape)
        if til is None:
            return decode(codes, n)
        return _upcast_scaled(result, dt, til, codes, mask)


def _check_result(r: CastResult) -> None:
    """Refuse a CastResult whose parts do not fit its datatype and shape."""
    r.check_parts(torch.Tensor, "a torch tensor")
    if r.data.dtype not in (torch.uint8, torch.uint16, torch.uint32):
        raise SpecError("CastResult.data must be a torch tensor of unsigned codes "
                        "(uint8, uint16 or uint32)")


def _upcast_scaled(result, dt: DataType, til: Tiling, codes, mask) -> torch.Tensor:
    snum = dt.sspec.scale
    scale = widen_codes(til.scales_to_blocks(result.scale)).reshape(-1)
    nonfinite = scale == snum.nan_code
    blocks = til.to_blocks(codes)
    rows = blocks.reshape(-1, blocks.shape[-1])
    keep = None if mask is None else til.to_blocks(mask.to(torch.bool)).reshape(rows.shape)
    n = dt.nspec
    zval = fixed = None
    if n.is_uint:
        zc = widen_codes(til.scales_to_blocks(result.zero)).reshape(-1)
        zval = decode(zc, dt.zero)
        dec = decode(scale, snum)
    elif dt.is_multiscale:
        tval = decode(widen_codes(result.tenscale).reshape(1), dt.tenscale)
        dec = tval * decode(scale, snum)
        nonfinite = nonfinite | torch.isnan(tval)
    else:
        dec = decode(scale, snum)
        if snum.is_exponent and n.is_int:
            fixed = float(1 << (n.bits - 2))
    plan = Plan(scale, None, None, nonfinite, dec, zval, dec, fixed, keep)
    out = _decode_rows(rows, plan, n)
    return til.from_blocks(out.reshape(blocks.shape)).contiguous()
