"""The upcast kernel: actual and compress results decoded to float32 (SEMANTICS.md §2, §5, §8).

``run_upcast`` decodes a checked :class:`~tcast.CastResult` with one launch of
:func:`_upcast_kernel`, reading the stored codes as they are: element codes (packed ones
unpacked in the kernel), scale codes, zero points and the tensor-scale code. Per block it
forms the decode multiplier from the *stored* codes by the kit's upcast recipes, as
``tcast_ref`` and ``tcast_torch`` do:

* one scale level (exponent or float scale): ``dec = decode(scale)``;
* two levels (NVFP4): ``dec = fl32(decode(tenscale) * decode(scale))``;
* uint data: ``dec = decode(scale)``, ``zval = decode(zero)``;

then every element ``q = decode(code)`` becomes ``fl32(q * dec)``, ``fl32(fl32(q * INV_FIXED)
* dec)`` (int data under a power-of-two scale) or ``fl32(fl32(q - zval) * dec)`` (uint data),
and every element of a non-finite block (its scale code the scale format's NaN code, or a
NaN tensor scale) the canonical NaN ``0x7FC00000``. Unscaled results decode code by code.

Geometry: the input shape is read as the canonical view ``[outer, L, inner]`` along the
tiled dimension (``tcast_triton._kernels``), blocks of it as in the cast:

* ``GEO_ROWS``: tiles along the last dimension (``inner == 1``), a ``[BL, TP]`` block of
  ``BL`` tiles, one scale per row of the block;
* ``GEO_COLS``: tiles along another dimension, a ``[TP, BL]`` block of one tile position
  for ``BL`` neighbouring columns of ``inner``, one scale per column;
* ``GEO_FLAT``: elementwise over the flat index, for unscaled results, a tensor scale (one
  block) and tiles longer than :data:`MAX_TILE` (channels), whose block index is computed
  per element.

Not covered, decoded by ``tcast_torch.upcast`` instead (:func:`upcast_supported`): 2-D
tiles and several tile segments, M-of-N sparsity, and tensors the kernels cannot read
(CPU tensors when Triton does not interpret).
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from tcast import CastMode, CastResult, DataType
from tcast.kit import cast_rules
from tcast.layout import block_layout

from ._codec import F_NANC, NAN_BITS, bits_of, decode
from ._env import quiet_numpy
from ._formats import fmt
from ._kernels import _geometry
from ._launch import _LAUNCH_OPTS, _NO_FORMAT, MAX_PROGRAMS, _code_bytes
from ._pack import kernel_device

__all__ = ["MAX_TILE", "run_upcast", "upcast_supported"]

#: The longest tile read as a 2-D block; longer tiles (channels) go elementwise.
MAX_TILE = 1024
#: Elements per program.
BLOCK_ELEMS = 4096

GEO_FLAT = tl.constexpr(0)
GEO_ROWS = tl.constexpr(1)
GEO_COLS = tl.constexpr(2)
# where an element's block (lane) comes from in the flat geometry
LN_NONE = tl.constexpr(0)  # unscaled
LN_ONE = tl.constexpr(1)  # one block: a tensor scale
LN_CALC = tl.constexpr(2)  # from the flat index
# scale kinds of the upcast
SK_NONE = tl.constexpr(0)
SK_ONE = tl.constexpr(1)
SK_TWO = tl.constexpr(2)
SK_UINT = tl.constexpr(3)
# element decode recipes (the kit's ELEMENT_DECODE, _FIXED, _ZERO)
EK_PLAIN = tl.constexpr(0)
EK_FIXED = tl.constexpr(1)
EK_ZERO = tl.constexpr(2)

_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32}


def upcast_supported(dt: DataType) -> bool:
    """Whether :func:`run_upcast` decodes ``dt``: unscaled, or at most one dense tile segment."""
    ss = dt.sspec
    return ss is None or (len(ss.tiles) <= 1 and not ss.is_sparse)


@triton.jit
def _load_u(ptr, offs, mask, CB: tl.constexpr):
    """Unsigned codes of CB bytes (uint8, or int16/int32 views of uint16/uint32) as int32."""
    if CB == 1:
        c = tl.load(ptr + offs, mask=mask, other=0).to(tl.int32)
    elif CB == 2:
        c = tl.load(ptr + offs, mask=mask, other=0).to(tl.int32) & 0xFFFF
    else:
        c = tl.load(ptr + offs, mask=mask, other=0)
    return c


@triton.jit
def _load_first(ptr, CB: tl.constexpr):
    """The first code of a part (a tensor scale, its zero point) as an int32 scalar."""
    c = tl.load(ptr).to(tl.int32)
    if CB == 2:
        c = c & 0xFFFF
    return c


@triton.jit
def _load_codes(
    data_ptr, idx, mask, nbytes, W: tl.constexpr, PACKED: tl.constexpr, CB: tl.constexpr
):
    """Element codes at flat indices ``idx``: stored, or from the packed bit stream.

    Code ``i`` of ``W < 8`` bits sits at stream bit ``W*i``: byte ``(i >> 3) * W +
    ((i & 7) * W >> 3)`` (no product of the index that could pass int32), at bit
    ``(i & 7) * W & 7`` of it, spilling into the next byte unless ``W`` divides 8.
    """
    if PACKED:
        r = (idx & 7).to(tl.int32) * W
        byte0 = (idx >> 3) * W + (r >> 3)
        sh = r & 7
        word = tl.load(data_ptr + byte0, mask=mask, other=0).to(tl.int32)
        if 8 % W != 0:
            nxt = tl.load(data_ptr + byte0 + 1, mask=mask & (byte0 + 1 < nbytes), other=0)
            word = word | (nxt.to(tl.int32) << 8)
        c = (word >> sh) & ((1 << W) - 1)
    else:
        c = _load_u(data_ptr, idx, mask, CB)
    return c


@triton.jit
def _block_multipliers(
    sc, zc, tc, SK: tl.constexpr, S: tl.constexpr, TS: tl.constexpr, Z: tl.constexpr
):
    """(dec, zval, non-finite) of blocks from their stored codes (the kit's upcast recipes)."""
    sval = decode(sc, S)
    bad = sc == S[F_NANC]
    zval = tl.zeros(sval.shape, tl.float32)
    if SK == SK_TWO:
        tval = decode(tc, TS)
        dec = tval * sval
        bad = bad | (tval != tval)
    else:
        dec = sval
    if SK == SK_UINT:
        zval = decode(zc, Z)
    return dec, zval, bad


@triton.jit
def _element_values(q, dec, zval, bad, EK: tl.constexpr, INV_FIXED: tl.constexpr):
    """float32 values of decoded codes ``q`` with their blocks' multipliers (one rounding each)."""
    if EK == EK_FIXED:
        v = (q * INV_FIXED) * dec
    elif EK == EK_ZERO:
        v = (q - zval) * dec
    else:
        v = q * dec
    # SEMANTICS.md §8: a NaN is the element's own (its decoded, canonical bits) or +0x7FC00000;
    # the GPU's arithmetic would give 0x7FFFFFFF (out-of-range scale or zero-point codes)
    nanb = tl.where(q != q, bits_of(q), NAN_BITS)
    return tl.where(bad, NAN_BITS, tl.where(v != v, nanb, bits_of(v)))


# tile and program counts only decompose program ids and bound masks: Triton's divisibility
# and ==1 specializations of them would add compiled variants per shape and speed nothing
@triton.jit(do_not_specialize=["outer", "nt", "ntiles"])
def _upcast_kernel(
    data_ptr,
    scale_ptr,
    zero_ptr,
    tcode_ptr,
    out_ptr,
    n,
    nbytes,
    outer,
    L,
    inner,
    T,
    nt,
    ntiles,
    GEO: tl.constexpr,
    LANES: tl.constexpr,
    TP: tl.constexpr,
    BL: tl.constexpr,
    TK: tl.constexpr,
    FLAT: tl.constexpr,
    BLOCK: tl.constexpr,
    I64: tl.constexpr,
    SK: tl.constexpr,
    E: tl.constexpr,
    S: tl.constexpr,
    TS: tl.constexpr,
    Z: tl.constexpr,
    EK: tl.constexpr,
    INV_FIXED: tl.constexpr,
    W: tl.constexpr,
    PACKED: tl.constexpr,
    CB: tl.constexpr,
    SCB: tl.constexpr,
    ZCB: tl.constexpr,
    TCB: tl.constexpr,
):
    """Decode one block of elements to float32 bits (see the module docstring)."""
    pid = tl.program_id(0)
    if GEO == GEO_FLAT:
        if I64:
            offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        else:
            offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        q = decode(_load_codes(data_ptr, offs, mask, nbytes, W, PACKED, CB), E)
        if LANES == LN_NONE:
            out = bits_of(q)
        else:
            if LANES == LN_ONE:
                zl = tl.zeros(offs.shape, tl.int32)
                sc = zl + _load_first(scale_ptr, SCB)
                zc = zl
                if SK == SK_UINT:
                    zc = zl + _load_first(zero_ptr, ZCB)
            else:
                # no product of two sizes: it could pass int32 where the offsets do not
                line = offs // inner
                i = offs - line * inner
                o = line // L
                pos = line - o * L
                lanes = (o * nt + pos // T) * inner + i
                sc = _load_u(scale_ptr, lanes, mask, SCB)
                zc = sc
                if SK == SK_UINT:
                    zc = _load_u(zero_ptr, lanes, mask, ZCB)
            tc = sc
            if SK == SK_TWO:
                tc = tl.zeros(offs.shape, tl.int32) + _load_first(tcode_ptr, TCB)
            dec, zval, bad = _block_multipliers(sc, zc, tc, SK, S, TS, Z)
            out = _element_values(q, dec, zval, bad, EK, INV_FIXED)
        tl.store(out_ptr + offs, out, mask=mask)
    else:
        AXIS: tl.constexpr = 1 if GEO == GEO_ROWS else 0
        # the cast's geometry at tile position 0 (TK: the tile, at most MAX_TILE; masked)
        offs, mask, lanes, lane_ok, _ = _geometry(
            pid, 0, outer, L, inner, T, nt, ntiles, AXIS, TP, BL, TK, FLAT, False, I64, False
        )
        sc = _load_u(scale_ptr, lanes, lane_ok, SCB)
        zc = sc
        if SK == SK_UINT:
            zc = _load_u(zero_ptr, lanes, lane_ok, ZCB)
        tc = sc
        if SK == SK_TWO:
            tc = tl.zeros(lanes.shape, tl.int32) + _load_first(tcode_ptr, TCB)
        dec, zval, bad = _block_multipliers(sc, zc, tc, SK, S, TS, Z)
        q = decode(_load_codes(data_ptr, offs, mask, nbytes, W, PACKED, CB), E)
        out = _element_values(
            q,
            tl.expand_dims(dec, AXIS),
            tl.expand_dims(zval, AXIS),
            tl.expand_dims(bad, AXIS),
            EK,
            INV_FIXED,
        )
        tl.store(out_ptr + offs, out, mask=mask)


def _as_codes(a: torch.Tensor, nbytes: int) -> torch.Tensor:
    """A flat contiguous view of stored codes the kernel loads (uint8 / int16 / int32)."""
    flat = a.reshape(-1)
    if nbytes == 1:
        return flat.contiguous()
    if flat.dtype == torch.uint8:  # packed 2- or 4-byte codes: a little-endian byte view
        if not flat.is_contiguous() or flat.storage_offset() % nbytes:
            flat = flat.clone()  # a view of wider elements must start aligned
    else:
        flat = flat.contiguous()
    return flat.view(_VIEW[nbytes])


def run_upcast(result: CastResult) -> torch.Tensor | None:
    """Decode a checked result to float32 by the kernel; None where it does not apply.

    None (the caller decodes with ``tcast_torch``) for datatypes :func:`upcast_supported`
    refuses (2-D tiles, several tile segments, sparsity), for parts on a device the
    kernels cannot read, and where the kernel would need more than ``MAX_PROGRAMS`` programs.
    """
    dt = result.dtype
    data = result.data
    if not (upcast_supported(dt) and kernel_device(data)):
        return None
    shape = tuple(result.shape)
    numel = math.prod(shape)
    out = torch.empty(shape, dtype=torch.float32, device=data.device)
    if numel == 0:
        return out
    n = dt.nspec
    bits = n.bits
    packed = result.castmode is CastMode.COMPRESS and bits < 8
    cb = _code_bytes(bits)
    codes = data.reshape(-1).contiguous() if packed else _as_codes(data, cb)
    nbytes = codes.numel() if packed else numel * cb
    i64 = 4 * numel >= 2**31 - 65536
    kw = dict(E=fmt(n), W=bits, PACKED=packed, CB=cb, I64=i64)
    sizes = (1, numel, 1, numel, 1, 1)
    ss = dt.sspec
    scale = zero = tcode = codes
    if ss is None:
        geo, lanes, tp, bl, tile, flat = 0, 0, 1, 1, 1, False
        kw.update(
            SK=0,
            S=_NO_FORMAT,
            TS=_NO_FORMAT,
            Z=_NO_FORMAT,
            EK=0,
            INV_FIXED=1.0,
            SCB=1,
            ZCB=1,
            TCB=1,
        )
        grid = triton.cdiv(numel, BLOCK_ELEMS)
    else:
        rules = cast_rules(dt)
        lay = block_layout(shape, dt, result.transpose_scale)
        scb = _code_bytes(ss.scale.bits)
        scale = _as_codes(result.scale, scb)
        zcb = tcb = 1
        if result.zero is not None:
            zcb = _code_bytes(dt.zero.bits)
            zero = _as_codes(result.zero, zcb)
        if result.tenscale is not None:
            tcb = _code_bytes(dt.tenscale.bits)
            tcode = _as_codes(result.tenscale, tcb)
        consts = dict(rules.constants)
        kw.update(
            SK=3 if n.is_uint else 2 if dt.is_multiscale else 1,
            S=fmt(ss.scale),
            TS=fmt(dt.tenscale) if dt.tenscale is not None else _NO_FORMAT,
            Z=fmt(dt.zero) if dt.zero is not None else _NO_FORMAT,
            EK=1 if rules.fixed is not None else 2 if n.is_uint else 0,
            INV_FIXED=float(consts.get("INV_FIXED", 1.0)),
            SCB=scb,
            ZCB=zcb,
            TCB=tcb,
        )
        if not lay.dims:  # a tensor scale: one block
            geo, lanes, tp, bl, tile, flat = 0, 1, 1, 1, 1, False
            grid = triton.cdiv(numel, BLOCK_ELEMS)
        else:
            (d,) = lay.dims
            outer, length, inner = math.prod(shape[:d]), shape[d], math.prod(shape[d + 1 :])
            tile = lay.sizes[0]
            nt = triton.cdiv(length, tile)
            sizes = (outer, length, inner, tile, nt, outer * nt)
            flat = inner == 1 and length % tile == 0
            if tile > MAX_TILE:
                geo, lanes, tp, bl = 0, 2, 1, 1
                grid = triton.cdiv(numel, BLOCK_ELEMS)
            elif inner == 1:
                geo, lanes, tp = 1, 0, triton.next_power_of_2(tile)
                bl = max(1, BLOCK_ELEMS // tp)
                grid = triton.cdiv(outer * nt, bl)
            else:
                geo, lanes, tp = 2, 0, triton.next_power_of_2(tile)
                bl = min(max(1, min(BLOCK_ELEMS // tp, 256)), triton.next_power_of_2(inner))
                grid = outer * nt * triton.cdiv(inner, bl)
            tile = tile if tile <= MAX_TILE else 1
    if grid > MAX_PROGRAMS:
        return None
    kw.update(GEO=geo, LANES=lanes, TP=tp, BL=bl, TK=tile, FLAT=flat, BLOCK=BLOCK_ELEMS)
    kw.update(_LAUNCH_OPTS, num_warps=8)
    with quiet_numpy():
        _upcast_kernel[(grid,)](
            codes, scale, zero, tcode, out.view(torch.int32), numel, nbytes, *sizes, **kw
        )
    return out
