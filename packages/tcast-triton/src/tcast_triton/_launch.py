"""Launchers: validate, form the canonical view and the grid, launch, assemble the result.

The kernels (``_kernels``) take compile-time formats, modes and tile sizes; sizes are
run-time arguments, so a new shape never recompiles. Launch sizes come from static shape
buckets (:func:`_row_block`, :func:`_col_block`), never from autotuning.
"""

from __future__ import annotations

import math
import os

import torch
import triton

from tcast import CastResult, DataType, RoundMode
from tcast.kit import CastRequest, CastRules, build_result, scale_bounds

from ._formats import ROUND_CODES, fmt
from ._kernels import _amax_pass, _cast_tiles, _cast_unscaled

__all__ = ["interpreting", "run_cast", "tiled_supported"]

#: The largest tile held in registers at once; longer tiles (channels) loop.
MAX_TILE = 1024
_IN_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_BITS_VIEW = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
_CODE_DTYPES = {1: torch.uint8, 2: torch.uint16, 4: torch.uint32}
# a format tuple for roles a datatype lacks (never read)
_NO_FORMAT = (0,) * 18 + (0, 1.0, 1.0, 0)


def interpreting() -> bool:
    """Whether Triton runs in its CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def tiled_supported(dt: DataType) -> bool:
    """Whether the kernels cast this scaled datatype: at most one tile segment, dense."""
    ss = dt.sspec
    return ss is None or (len(ss.tiles) <= 1 and not ss.is_sparse)


def _code_bytes(bits: int) -> int:
    return 1 if bits <= 8 else 2 if bits <= 16 else 4


def _codes_like(shape, bits: int, device) -> torch.Tensor:
    return torch.empty(shape, dtype=_CODE_DTYPES[_code_bytes(bits)], device=device)


def _random_source(req: CastRequest, x: torch.Tensor):
    """(kind, seed, rbits pointer tensor): 0 none, 1 Philox seed, 2 explicit bits."""
    if req.roundmode is not RoundMode.STOCHASTIC:
        return 0, 0, x
    if req.seed is not None:
        return 1, req.seed, x
    return 2, 0, req.rbits.contiguous()


class _Quiet:
    """Under the interpreter, NumPy's float warnings (overflow to Inf is intended) off."""

    def __enter__(self):
        if interpreting():
            import numpy

            self._state = numpy.seterr(all="ignore")

    def __exit__(self, *exc):
        if interpreting():
            import numpy

            numpy.seterr(**self._state)


def _launch_opts() -> dict:
    # no FMA contraction: x * r + z must round twice (SEMANTICS.md §0)
    return {} if interpreting() else {"enable_fp_fusion": False}


def run_cast(x: torch.Tensor, req: CastRequest) -> torch.Tensor | CastResult:
    """The cast of a checked request on a CUDA tensor (or a CPU one under the interpreter)."""
    xc = x.contiguous()
    xin = xc.view(_BITS_VIEW[xc.dtype]) if xc.dtype != torch.float32 else xc
    rs, seed, rb = _random_source(req, xc)
    with _Quiet():
        if req.layout is None:
            return _unscaled(xc, xin, req, rs, seed, rb)
        return _tiled(xc, xin, req, rs, seed, rb)


def _needs_i64(x: torch.Tensor) -> bool:
    """Whether element offsets (and tile indices) may pass int32."""
    return x.numel() >= 2**31 - 4096


def _virtual_out(xc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    out = torch.empty_like(xc)
    return out, out.view(_BITS_VIEW[xc.dtype])


def _unscaled(xc, xin, req: CastRequest, rs: int, seed: int, rb) -> torch.Tensor | CastResult:
    n = req.dtype.nspec
    numel = xc.numel()
    if req.virtual:
        result, out = _virtual_out(xc)
    else:
        out = result = _codes_like(xc.shape, n.bits, xc.device)
    if numel:
        block = 1024
        _cast_unscaled[(triton.cdiv(numel, block),)](
            xin,
            rb,
            out,
            numel,
            seed,
            E=fmt(n, req.roundmode, req.saturate),
            MODE=ROUND_CODES[req.roundmode],
            IN=_IN_CODES[xc.dtype],
            RS=rs,
            VIRTUAL=req.virtual,
            CB=_code_bytes(n.bits),
            NAN_KEEP=req.rules.nan_keeps_sign,
            BLOCK=block,
            I64=_needs_i64(xc),
            num_warps=4,
            **_launch_opts(),
        )
    if req.virtual:
        return result
    from tcast_torch._run import OPS

    return build_result(req, result, OPS, "triton")


def _scale_kind(rules: CastRules) -> int:
    dt = rules.dtype
    if dt.nspec.is_uint:
        return 5 if rules.exponent is not None else 4
    if rules.exponent is not None:
        return 1
    return 3 if dt.is_multiscale else 2


def _constants(rules: CastRules) -> tuple:
    dt = rules.dtype
    c = dict(rules.constants)
    slo, shi = scale_bounds(dt.sspec.scale)
    tlo, thi = scale_bounds(dt.tenscale) if dt.tenscale is not None else (0.0, 0.0)
    z = dt.zero
    znan = z.nan_code if z is not None and z.has_nan else 0
    return (c["M"], c.get("MS_M", 0.0), c["F32_MAX"], slo, shi, tlo, thi, znan)


def _rule(rules: CastRules) -> tuple:
    r = rules.exponent
    if r is None:
        return (0, 0, 0, 0, 0)
    from tcast.kit import NEVER

    return (r.offset, r.threshold, r.max_code, int(r.field_exact), int(r.threshold < NEVER))


def _row_block(tp: int) -> int:
    """Tiles per program in the row geometry: about 4096 elements per program."""
    return max(1, 4096 // tp)


def _col_block(tp: int, inner: int) -> int:
    """Columns per program in the column geometry."""
    bl = max(1, min(4096 // tp, 256))
    return min(bl, triton.next_power_of_2(inner))


def _tiled(xc, xin, req: CastRequest, rs: int, seed: int, rb) -> torch.Tensor | CastResult:
    dt, rules, lay = req.dtype, req.rules, req.layout
    n, ss = dt.nspec, dt.sspec
    dev = xc.device
    numel = xc.numel()
    virtual = req.virtual
    if virtual:
        result, out = _virtual_out(xc)
    else:
        out = result = _codes_like(xc.shape, n.bits, dev)
    scale_count = math.prod(lay.scale_shape)
    scale = _codes_like((max(scale_count, 1),), ss.scale.bits, dev)
    zero = _codes_like((max(scale_count, 1),), dt.zero.bits, dev) if dt.zero is not None else None
    tcode = _codes_like((1,), dt.tenscale.bits, dev) if dt.tenscale is not None else None
    sk = _scale_kind(rules)
    uint = n.is_uint
    in_code = _IN_CODES[xc.dtype]
    stats = None
    pre = not lay.dims
    if pre or dt.is_multiscale:
        stats = torch.zeros(3, dtype=torch.int32, device=dev)
        if numel:
            block = 4096
            _amax_pass[(triton.cdiv(numel, block),)](
                xin,
                stats,
                numel,
                IN=in_code,
                U=uint,
                BLOCK=block,
                I64=_needs_i64(xc),
                num_warps=8,
            )
    if pre:
        tp, length = 1024, max(numel, 1)
        outer, inner, tile = 1, 1, tp
        axis, loop = 1, False
    else:
        (d,) = lay.dims
        shape = lay.shape
        outer, length, inner = math.prod(shape[:d]), shape[d], math.prod(shape[d + 1 :])
        tile = lay.sizes[0]
        axis = 1 if inner == 1 else 0
        loop = tile > MAX_TILE
        tp = triton.next_power_of_2(tile) if not loop else (1024 if axis == 1 else 64)
    nt = triton.cdiv(length, tile)
    # the tile length as a compile-time constant where it is one (not for channels)
    tk = 0 if loop else tile
    flat = axis == 1 and not loop and length % tile == 0
    if axis == 1:
        bl = 1 if loop else _row_block(tp)
        grid = triton.cdiv(outer * nt, bl)
    else:
        bl = _col_block(tp, inner) if not loop else min(64, triton.next_power_of_2(inner))
        grid = outer * nt * triton.cdiv(inner, bl)
    fixed = rules.fixed
    if numel and grid:
        dummy = scale
        _cast_tiles[(grid,)](
            xin,
            rb,
            out,
            scale,
            zero if zero is not None else dummy,
            tcode if tcode is not None else dummy,
            stats if stats is not None else scale,
            outer,
            length,
            inner,
            tile,
            nt,
            outer * nt,
            seed,
            AXIS=axis,
            TP=tp,
            BL=bl,
            TK=tk,
            FLAT=flat,
            I64=_needs_i64(xc),
            LOOP=loop,
            PRE=pre,
            SK=sk,
            E=fmt(n, req.roundmode, True),
            S=fmt(ss.scale),
            TS=fmt(dt.tenscale) if dt.tenscale is not None else _NO_FORMAT,
            Z=fmt(dt.zero) if dt.zero is not None else _NO_FORMAT,
            RULE=_rule(rules),
            C=_constants(rules),
            MODE=ROUND_CODES[req.roundmode],
            EK=1 if fixed is not None else 2 if uint else 0,
            FIXED=float(fixed or 1),
            INV_FIXED=1.0 / (fixed or 1),
            IN=in_code,
            RS=rs,
            VIRTUAL=virtual,
            CB=_code_bytes(n.bits),
            SCB=_code_bytes(ss.scale.bits),
            ZCB=_code_bytes(dt.zero.bits) if dt.zero is not None else 1,
            TCB=_code_bytes(dt.tenscale.bits) if dt.tenscale is not None else 1,
            num_warps=8 if tp * bl >= 4096 else 4,
            **_launch_opts(),
        )
    if virtual:
        return result
    from tcast_torch._run import OPS

    shape = lay.scale_shape
    return build_result(
        req,
        result,
        OPS,
        "triton",
        scale=scale[:scale_count].reshape(shape),
        zero=None if zero is None else zero[:scale_count].reshape(shape),
        tenscale=None if tcode is None else tcode.reshape(()),
    )
