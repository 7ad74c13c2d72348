"""Launchers: validate, form the canonical view and the grid, launch, assemble the result.

The kernels (``_kernels``) take compile-time formats, modes and tile sizes; sizes are
run-time arguments, so a new shape never recompiles. Launch sizes come from static shape
buckets (:func:`_row_block`, :func:`_col_block`), never from autotuning.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import torch
import triton
from torch.fx.experimental.symbolic_shapes import statically_known_true

from tcast import CastMode, CastResult, DataType, Hadamard, RoundMode, TcastError
from tcast.kit import CastRequest, CastRules, build_result, scale_bounds
from tcast_torch.toolkit import traced_launches

from ._codec import F_HW, F_KIND, F_PAIR, K_EXP
from ._env import INTERPRETING
from ._fastlaunch import Launch
from ._formats import ROUND_CODES, fmt
from ._given import given_bits, given_kw, given_pointers, recipe_given, rule_fields
from ._kernels import _amax_pass, _cast_row_pieces, _cast_tiles, _cast_unscaled, _tile_stats
from ._pack import OPS, packed_bytes
from ._scales import GP_TENSOR, SK_EXP, SK_UEXP, SK_UFLOAT

__all__ = [
    "bits_of",
    "interpreting",
    "launch_scaled",
    "run_cast_1d",
    "tensor_amax",
    "tensor_maxima",
    "tile_stats",
    "uses_nd",
]

#: The largest tile held in registers at once along a column (dim 0 or a middle
#: dimension); longer tiles (channels) loop.
MAX_TILE = 1024
#: The largest channel held in registers at once along the last dimension (one program per
#: row, one pass over the input); longer rows loop (a max pass and an encode pass).
MAX_ROW_CHANNEL = 16384
_IN_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_BITS_VIEW = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
_CODE_DTYPES = {1: torch.uint8, 2: torch.uint16, 4: torch.uint32}
# a format tuple for roles a datatype lacks (never read)
_NO_FORMAT = (0,) * 18 + (0, 1.0, 1.0, 0, 0, 1.0, 1.0, 0.0, 1.0, 1.0, 0)


def interpreting() -> bool:
    """Whether Triton runs in its CPU interpreter (``TRITON_INTERPRET=1``).

    Read once, at import: ``triton.jit`` reads the variable when the kernels are defined,
    so a later change could not take effect anyway.
    """
    return INTERPRETING


def _code_bytes(bits: int) -> int:
    return 1 if bits <= 8 else 2 if bits <= 16 else 4


def _random_source(req: CastRequest, x: torch.Tensor):
    """(kind, seed, rbits pointer tensor): 0 none, 1 Philox seed, 2 explicit bits.

    Without explicit bits the pointer is ``x``, unread: the launches pass the kernel's own
    input tensor (its bits view), the one placeholder a traced launch replaces by a buffer
    of its own (``_fastlaunch._distinct``).
    """
    if req.roundmode is not RoundMode.STOCHASTIC:
        return 0, 0, x
    if req.seed is not None:
        return 1, req.seed, x
    return 2, 0, req.rbits.contiguous()


# no FMA contraction: x * r + z must round twice (SEMANTICS.md §0)
_LAUNCH_OPTS: dict = {} if INTERPRETING else {"enable_fp_fusion": False}
#: Launch plans by (datatype, modes, shape, input dtype, random source).
_PLANS: dict[tuple, _Plan] = {}
_MAX_PLANS = 4096


#: CUDA's limit on a grid's x dimension: a plan needing more programs (column tiles of a
#: tiny inner size past ~8.6e9 elements) is not launched; the engine casts it by tcast_torch
MAX_PROGRAMS = 2**31 - 1
#: CUDA's limit on a grid's y dimension (the patches of blocked row scales)
MAX_GRID_Y = 65535


def bits_of(xc: torch.Tensor) -> torch.Tensor:
    """A contiguous input as the kernels read it: float32 as it is, 16-bit floats as int16."""
    if xc.dtype == torch.float32 or traced_launches():
        # traced for Inductor, which cannot view a fused buffer as another dtype: the
        # kernels read either through _kernels.value_ptr
        return xc
    return xc.view(_BITS_VIEW[xc.dtype])


def uses_nd(req: CastRequest) -> bool:
    """Whether ``req`` is cast by the N-d kernel (``_launch_2d``: 2-D tiles, sparsity)."""
    ss = req.dtype.sspec
    return req.layout is not None and (len(ss.tiles) > 1 or ss.is_sparse)


def run_cast_1d(
    xc: torch.Tensor, xin: torch.Tensor, req: CastRequest, given: torch.Tensor | None = None
):
    """The cast by ``_cast_unscaled`` or ``_cast_tiles`` (at most one dense segment).

    ``xin``: ``xc``'s bits as the kernels read them (:func:`bits_of`); ``given`` and the
    result as ``_cast_launch.run_cast`` takes and gives them. The request's given scale
    parts (SEMANTICS.md §5.12) are read by the cast kernel (:func:`launch_scaled`).
    """
    rs, seed, rb = _random_source(req, xin)
    build = _unscaled_plan if req.layout is None else _tiled_plan
    extra: tuple = (word_aligned(xc),)
    if req.layout is not None:
        extra += (given is not None and given.numel() > 3,)
        if req.given is not None:  # given scale parts (a key of their own)
            extra += (given_bits(req.given),)
    plan = cached_plan(_PLANS, req, xc, rs, build, *extra)
    if plan.grid[0] > MAX_PROGRAMS:
        return None
    return _launch(plan, xc, xin, req, seed, rb, given)


def tensor_maxima(x: torch.Tensor, req: CastRequest) -> torch.Tensor:
    """The amax pass over ``x``: int32 ``[mx, hi, lo]`` (hi, lo: uint data; else 0)."""
    xc = x.contiguous()
    xin = bits_of(xc)
    buf = torch.zeros(3, dtype=torch.int32, device=xc.device)
    if xc.numel():
        kw = amax_pass_kw(req.dtype, xc, req.modes.transform, transform_inner(req))
        key = tuple(sorted(kw.items()))
        launch = _AMAX_LAUNCHES.get(key)
        if launch is None:
            launch = _AMAX_LAUNCHES[key] = Launch(_amax_pass, kw)
        launch((amax_programs(kw, xc.numel()),), xin, buf, xc.numel())
    return buf


#: The amax passes :func:`tensor_maxima` launched, by compile-time arguments (a few).
_AMAX_LAUNCHES: dict[tuple, Launch] = {}


def tile_stats(x: torch.Tensor, req: CastRequest) -> torch.Tensor | None:
    """The statistics of every tile of ``x`` as ``_cast_tiles`` reduces them.

    An int32 buffer ``[0, 0, 0, mx (n), hi (n), lo (n)]`` (``n`` scales) for ``run_cast``'s
    ``given`` (``_kernels._tile_stats``), tiles in the plain scale array's order; None for
    a request without tiles (unscaled, a tensor scale) or one :func:`uses_nd` takes, or a
    grid past :data:`MAX_PROGRAMS`.
    """
    if req.layout is None or not req.layout.dims or uses_nd(req):
        return None
    xc = x.contiguous()
    xin = bits_of(xc)
    plan = cached_plan(_PLANS, req, xc, 0, _tiled_plan, word_aligned(xc), True)
    if plan.grid[0] > MAX_PROGRAMS:
        return None
    outer, _, inner, _, nt, _ = plan.sizes
    buf = torch.zeros(3 + 3 * outer * nt * inner, dtype=torch.int32, device=xc.device)
    if plan.grid[0]:
        plan.stats_launch(plan.grid, xin, buf, *plan.sizes)
    return buf


def cached_plan(
    plans: dict, req: CastRequest, xc: torch.Tensor, rs: int, build, *extra: Any
) -> Any:
    """The launch plan of (datatype, modes, shape, input dtype, random source, device).

    ``build(req, xc, rs, *extra)`` makes a missing one (``extra``: more of the key); the
    cache is emptied when it is full.
    """
    key = (req.dtype, req.modes, req.shape, xc.dtype, rs, xc.device, *extra)
    plan = plans.get(key)
    if plan is None:
        if len(plans) >= _MAX_PLANS:
            plans.clear()
        plan = plans[key] = build(req, xc, rs, *extra)
    return plan


#: Whether each CUDA device (by index) converts float32 to FP8 in one rounding.
_HW_FP8: dict[int, bool] = {}


def hw_fp8(device: torch.device) -> bool:
    """Whether ``device`` may use the hardware e4m3fn / e5m2 conversion (``_formats._hardware``).

    sm_90 and later: ``cvt.rn.satfinite`` rounds once (proved on all 2**32 float32 inputs
    by ``tests/test_gpu_hardware_fp8.py`` on an H200). sm_89 rounds through float16 first
    (double rounding, triton PR #11753) and older GPUs emulate the conversion; the
    interpreter emulates it too. Those use the integer encoder.
    """
    if INTERPRETING or device.type != "cuda":
        return False
    index = device.index if device.index is not None else torch.cuda.current_device()
    ok = _HW_FP8.get(index)
    if ok is None:
        ok = _HW_FP8[index] = torch.cuda.get_device_capability(index) >= (9, 0)
    return ok


#: Elements past a tensor's end that a program's block may reach (at least every block size
#: of the kernels: the amax pass's AMAX_BLOCK is the largest).
I64_MARGIN = 2**16


def _blocked_size(req: CastRequest) -> int:
    """Codes in the blocked scale layout of ``req`` (its rows and columns padded)."""
    b = req.blocked
    return triton.cdiv(b.rows, 128) * 128 * triton.cdiv(b.cols, 4) * 4


def _needs_i64(x: torch.Tensor) -> bool:
    """Whether element offsets (and tile indices) may pass int32.

    :data:`I64_MARGIN` covers the last program's block past the end: its masked offsets
    must not wrap around either.
    """
    return x.numel() >= 2**31 - I64_MARGIN


@dataclass(frozen=True)
class _Plan:
    """Everything about one launch that depends only on the cache key.

    Attributes:
        kernel: the kernel.
        grid: its grid.
        sizes: the run-time size arguments, in the kernel's order.
        kw: compile-time arguments and launch options.
        out_bytes: bytes per stored code (0: a virtual cast, the input dtype).
        scale_bytes, zero_bytes, tcode_bytes: bytes per scale, zero, tensor-scale code
            (0: none).
        scale_count: scales (and zero points) stored.
        scale_shape: the result's scale shape.
        amax_grid: the grid of the amax pre-pass (empty: none).
        amax_kw: its compile-time arguments.
        packed: the kernel writes the compress stream itself (codes of 1..7 bits packed).
        blocked: the shape of blocked scales the kernel writes (SEMANTICS.md §8.1; ``()``:
            plain scales).
        padded: blocked scales have padding slots the kernel never writes (zeroed first).
    """

    kernel: object
    grid: tuple[int, ...]
    sizes: tuple[int, ...]
    kw: dict
    out_bytes: int
    scale_bytes: int = 0
    zero_bytes: int = 0
    tcode_bytes: int = 0
    scale_count: int = 0
    scale_shape: tuple[int, ...] = ()
    amax_grid: tuple[int, ...] = ()
    amax_kw: dict = field(default_factory=dict)
    packed: bool = False
    blocked: tuple[int, ...] = ()
    padded: bool = False

    @cached_property
    def launch(self) -> Launch:
        """The kernel with its compile-time arguments (compiled once per specialization)."""
        return Launch(self.kernel, self.kw)

    @cached_property
    def amax_launch(self) -> Launch:
        """The amax pre-pass likewise."""
        return Launch(_amax_pass, self.amax_kw)

    @cached_property
    def stats_launch(self) -> Launch:
        """The tile statistics of a ``_cast_tiles`` plan (:func:`tile_stats`) likewise."""
        kw = self.kw
        names = ("AXIS", "TP", "BL", "TK", "FLAT", "FULL", "I64", "LOOP", "IN", "num_warps")
        stats_kw = {k: kw[k] for k in names}
        stats_kw["U"] = kw["SK"] in (SK_UFLOAT.value, SK_UEXP.value)
        return Launch(_tile_stats, stats_kw)


def _unscaled_plan(req: CastRequest, xc: torch.Tensor, rs: int, word4: bool = True) -> _Plan:
    n = req.dtype.nspec
    numel = xc.numel()
    block = 1024
    pack = _pack_bits(req) if numel % block == 0 else 0
    kw = dict(
        E=fmt(n, req.roundmode, req.saturate, hardware=hw_fp8(xc.device) and not req.virtual),
        MODE=ROUND_CODES[req.roundmode],
        IN=_IN_CODES[xc.dtype],
        RS=rs,
        VIRTUAL=req.virtual,
        CB=_code_bytes(n.bits),
        BLOCK=block,
        I64=_needs_i64(xc),
        PACK=pack,
        num_warps=4,
        **_LAUNCH_OPTS,
    )
    return _Plan(
        _cast_unscaled,
        (triton.cdiv(numel, block),),
        (numel,),
        kw,
        0 if req.virtual else _code_bytes(n.bits),
        packed=bool(pack),
    )


def _pack_bits(req: CastRequest) -> int:
    """The code width of a compress cast the kernels may write packed (1..7), else 0."""
    bits = req.dtype.nspec.bits
    return bits if req.castmode is CastMode.COMPRESS and bits < 8 else 0


def pack_group(bits: int) -> int:
    """Codes of ``bits`` (1..7) that fill whole bytes: the kernels pack runs of multiples."""
    return 8 // math.gcd(bits, 8)


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


#: Elements per program in the row geometry, and warps per program (benchmark tunables).
ROW_ELEMS = 4096
ROW_WARPS = 8
#: The same for row tiles of 16 elements (NVFP4) in ``_cast_tiles``, codes and values:
#: several tiles a thread rather than one amortize each thread's fixed work (program ids,
#: offsets, two-level scaling's tensor scale). H200, 16384^2 bfloat16, NVFP4 with its amax
#: pass (``bench/sweep_row.py --t16``, CUDA graphs), ms: actual 4096 / 8 warps 0.382,
#: 8192 / 4 0.366, 4096 / 2 0.364, 2048 / 2 0.370; virtual 4096 / 8 0.423, 8192 / 4 0.438,
#: 2048 / 2 0.410.
ROW_ELEMS_T16 = 8192
ROW_WARPS_T16 = 4
ROW_ELEMS_T16_VIRTUAL = 2048
ROW_WARPS_T16_VIRTUAL = 2
#: Elements per program, most columns per program and warps (actual casts; virtual) in
#: the column geometry. The H200 sweep (bench/sweep_col.py, 16384^2 bfloat16, t32d0): a
#: [32, 128] block per program; 1 warp for codes (0.23 ms), 2 for values (0.29 ms); more
#: warps reduce across warps through shared memory and run slower (4: 0.42 ms, 8: 0.73).
COL_ELEMS = 4096
COL_MAX_BL = 128
COL_WARPS = 1
COL_WARPS_VIRTUAL = 2
#: Column casts with a fused transform: each thread loads runs of COL_FUSED_ELEMS / tile
#: contiguous columns (the compiler's own choice, 16-byte vectors, spreads a tile's rows over
#: threads and the butterfly's stages across them), so the tile's rows sit in its registers;
#: warps along the columns. H100, 16384^2 bfloat16, MXFP4 t32d0 RHT-32 / t16d0 RHT-16, time
#: over a copy's (``bench/sweep_col.py --vector``): the compiler's layout 1.20 / 1.08; 64
#: elements a thread 0.73 / 0.65; 128 0.88 / 0.72 (register pressure). Tiles longer than
#: half of it (and 0) keep the compiler's layout.
COL_FUSED_ELEMS = 64
#: Flat row tiles of ROW_PIECES_TILE elements wider than one 16-byte load: one tile per
#: thread (``_cast_row_pieces``), its scale computed once rather than in each thread holding
#: a vector of it. H200, 16384^2 bfloat16 (bench/where_time.py and its no-pieces variant),
#: ms without / with pieces: 32-wide tiles gain 3-10% (MXFP8 actual 0.217 / 0.203, trunc
#: 0.285 / 0.258); 16-wide tiles lose (NVFP4 actual 0.438 / 0.490, more instructions per
#: element), so they keep _cast_tiles.
ROW_PIECES = True
ROW_PIECES_TILE = 32
#: Tiles of at least STREAM_MIN elements whose scale parts are all given (a per-token scale
#: of a long row, SEMANTICS.md §5.12) are cast in one read, by chunks of STREAM_ROW (rows)
#: or 64 (columns) elements (``_cast_tiles``' ``STREAM``): no maxima are needed first. H200,
#: 16384^2 bfloat16, int8_float32_t0 with a given scale, ms: the whole row as one block
#: 0.260; one read by chunks of 512 / 1024 / 2048 / 4096 (4 warps) 0.202 / 0.199 / 0.197 /
#: 0.195 (a copy of x 0.259).
STREAM_MIN = 2048
STREAM_ROW = 2048
#: Blocked scales of flat row tiles: each program casts a patch of 8 rows whose scale codes
#: fill whole 32-byte sectors of the layout (``_kernels.patch_lanes``), not BL tiles of the
#: flattened rows (4 bytes in each of BL / 4 sectors 512 bytes apart, each lane's row found
#: by a run-time division). H200, 16384^2 bfloat16, blocked scales' cost over plain ones,
#: flat lanes / patches: MXFP8 +3.5% / +0.1%, MXFP4 (pair encoder) +2.9% / +0.3%, NVFP4
#: +4.6% / +1.7% (``bench/bench_dual.py``). Each lane's slot is found without divisions or int64
#: arithmetic: with them, patches cost the issue-bound encoders (MXFP4, NVFP4) more than
#: the whole sectors save. Matrices under 128 rows or BL / 8 tiles a row keep flat lanes.
#: "all": wherever the shape allows; "none": flat lanes (tests, benchmarks).
BLOCKED_PATCHES = "all"
#: Elements and warps per program of the tensor-amax pass. H200, 16384^2, ms (a sweep of
#: these two with ``triton.testing.do_bench``): bfloat16 16384 / 16 warps 0.143, 32768 / 16
#: 0.135, 32768 / 8 0.132, 65536 / 8 0.131; float32 16384 / 16 0.256, 32768 / 8 0.248.
AMAX_BLOCK = 32768
#: Elements per program of an amax pass that transforms its values (a fused transform; H200,
#: 16384^2 bfloat16 NVFP4 with RHT-16, whole cast: 4096 0.451 ms, 8192 0.431, 16384 0.421,
#: 32768 0.448).
AMAX_BLOCK_FUSED = 16384
AMAX_WARPS = 8


def _row_block(tp: int, virtual: bool = False) -> tuple[int, int]:
    """Tiles and warps per program in the row geometry.

    About ROW_ELEMS elements per program; 16-element tiles take the ``ROW_*_T16`` tunables.
    """
    if tp == 16:
        if virtual:
            return ROW_ELEMS_T16_VIRTUAL // tp, ROW_WARPS_T16_VIRTUAL
        return ROW_ELEMS_T16 // tp, ROW_WARPS_T16
    bl = max(1, ROW_ELEMS // tp)
    return bl, _warps(1, tp * bl)


def _col_block(tp: int, inner: int) -> int:
    """Columns per program in the column geometry."""
    bl = max(1, min(COL_ELEMS // tp, COL_MAX_BL))
    return min(bl, triton.next_power_of_2(inner))


def _warps(axis: int, elems: int, virtual: bool = False) -> int:
    """Warps per program: the tunables for full-size blocks, 4 for small, 16 for channels.

    Columns reduce along axis 0, across the warps: fewer warps per program pay off there.
    """
    if axis == 0:
        return COL_WARPS_VIRTUAL if virtual else COL_WARPS
    if elems > ROW_ELEMS:
        return 16
    if elems < 4096:
        return 4
    return ROW_WARPS


def scaled_kw(req: CastRequest, in_code: int, rs: int, hw: bool) -> dict:
    """The compile-time arguments every scaled-cast kernel takes: formats, recipes, modes.

    Element, scale, tensor-scale and zero-point formats (``fmt``; ``hw``: the device's FP8
    conversion may serve, :func:`hw_fp8`), the scale recipe's kind, rule and constants,
    the round mode, the element multiplier (fixed-point ints, zero points), input dtype,
    random source, cast mode and the bytes of each stored code.
    """
    dt, rules = req.dtype, req.rules
    n, ss = dt.nspec, dt.sspec
    fixed = rules.fixed
    return dict(
        SK=_scale_kind(rules),
        E=fmt(n, req.roundmode, True, hardware=hw and not req.virtual),
        # scale codes by the integer encoder: they are decoded again in the kernel, the use
        # of a hardware-converted byte Triton mislowers (see _formats.fmt); with the hardware
        # conversion an H200 gives wrong e5m2 scale codes and element signs for
        # e4m3fn_e5m2_t32 under the round mode zero with transposed scales (conformance smoke
        # tier), the interpreter right ones
        S=fmt(ss.scale, hardware=False),
        TS=fmt(dt.tenscale, hardware=False) if dt.tenscale is not None else _NO_FORMAT,
        Z=fmt(dt.zero) if dt.zero is not None else _NO_FORMAT,
        RULE=rule_fields(rules.exponent),
        C=_constants(rules),
        MODE=ROUND_CODES[req.roundmode],
        EK=1 if fixed is not None else 2 if n.is_uint else 0,
        FIXED=float(fixed or 1),
        INV_FIXED=1.0 / (fixed or 1),
        IN=in_code,
        RS=rs,
        VIRTUAL=req.virtual,
        CB=_code_bytes(n.bits),
        SCB=_code_bytes(ss.scale.bits),
        ZCB=_code_bytes(dt.zero.bits) if dt.zero is not None else 1,
        TCB=_code_bytes(dt.tenscale.bits) if dt.tenscale is not None else 1,
    )


# _cast_tiles' compile-time arguments that _cast_row_pieces does without
_NOT_PIECES = ("AXIS", "TK", "FLAT", "LOOP", "PRE", "RV", "RUN", "PACK", "GIVEN", "CV", "STREAM")


#: Whether casts that qualify take the bfloat16-pair encoder (:func:`pairs_ok`; a switch for
#: tests and benchmarks).
PAIRS_ENABLED = True


def word_aligned(xc: torch.Tensor) -> bool:
    """Whether ``xc``'s data starts on a 4-byte boundary (a plan-cache key: see pairs_ok).

    While the cast op is traced (``tcast_torch.toolkit.traced_launches``: fake tensors, no
    address): whether its storage offset is provably a multiple of 16 bytes. Inductor
    allocates its buffers 16-byte aligned, and clones at run time a CUDA graph input
    traced at such an offset whose data is not aligned
    (``torch._inductor.utils.copy_misaligned_inputs``).
    """
    if traced_launches():
        return statically_known_true(xc.storage_offset() * xc.element_size() % 16 == 0)
    return xc.data_ptr() % 4 == 0


def pairs_ok(req: CastRequest, scaled: dict, xc: torch.Tensor, n: int, word4: bool) -> bool:
    """Whether a row-tile kernel reads bfloat16 pairs and encodes them by ``_codec.pair_codes``.

    Casts to codes (actual, compress) of bfloat16 on sm_90 (``hw_fp8``: not under the
    interpreter, whose NumPy cannot run PTX) to a format of ``_formats._pair_fields`` that
    the hardware FP8 conversion does not serve, nearest even, with power-of-two scales
    (exponent scale codes: the products are exact) and nothing else (no zero point, fixed
    point or tensor scale), one dense tile segment of an even size and an even row length
    ``n`` (a word never straddles two tiles or rows) and
    data on a 4-byte boundary (``word4``, :func:`word_aligned`: the words are 4-byte loads;
    a view that starts at an odd element would fault).
    """
    e, s = scaled["E"], scaled["S"]
    return bool(
        PAIRS_ENABLED
        and word4
        and xc.dtype == torch.bfloat16
        and not req.virtual
        and hw_fp8(xc.device)
        and e[F_PAIR.value]
        and not e[F_HW.value]
        and scaled["MODE"] == ROUND_CODES[RoundMode.EVEN]
        and scaled["SK"] == SK_EXP.value
        and s[F_KIND.value] == K_EXP.value
        and scaled["EK"] == 0
        and req.dtype.zero is None
        and req.layout is not None
        and len(req.layout.sizes) == 1  # one tile segment, and no sparsity (no keep mask)
        and not req.dtype.sspec.is_sparse
        and req.layout.sizes[0] % 2 == 0
        and n % 2 == 0
    )


def _tiled_plan(
    req: CastRequest,
    xc: torch.Tensor,
    rs: int,
    word4: bool = True,
    given: bool = False,
    gp: int = 0,
) -> _Plan:
    """The plan of a tiled cast; ``given``: ``_cast_tiles`` reading given tile statistics.

    ``gp``: the given scale parts the kernel reads (``_given.given_bits``; 0: none).
    """
    dt, lay = req.dtype, req.layout
    ss = dt.sspec
    numel = xc.numel()
    in_code = _IN_CODES[xc.dtype]
    # the blocked layout pads rows to 128: its offsets can pass int32 where x's do not
    i64 = _needs_i64(xc) or (req.blocked is not None and _blocked_size(req) >= 2**31 - I64_MARGIN)
    pre = not lay.dims
    rht = rht_kw(req.modes.transform)
    fused = rht["RHT_G"] > 0
    stream = False
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
        loop = tile > (MAX_ROW_CHANNEL if axis == 1 else MAX_TILE)
        stream = streamed(req, gp, given or fused, tile, loop)
        loop = loop or stream
        row_chunk = STREAM_ROW if stream else 1024
        tp = triton.next_power_of_2(tile) if not loop else (row_chunk if axis == 1 else 64)
    # a channel's length is a tensor size: never a compile-time constant
    channel = not pre and ss.tiles[0].size == 0
    nt = triton.cdiv(length, tile)
    if axis == 1:
        bl, warps = (1, _warps(axis, tp)) if loop else _row_block(tp, req.virtual)
        grid = triton.cdiv(outer * nt, bl)
    else:
        bl = _col_block(tp, inner) if not loop else min(64, triton.next_power_of_2(inner))
        warps = _warps(axis, tp * bl, req.virtual)
        grid = outer * nt * triton.cdiv(inner, bl)
    flat = axis == 1 and not loop and length % tile == 0
    if loop:
        full = False
    elif axis == 1:
        full = flat and tp == tile and not channel and (outer * nt) % bl == 0
    else:
        full = tp == tile and not channel and length % tile == 0 and inner % bl == 0
    scaled = scaled_kw(req, in_code, rs, hw_fp8(xc.device))
    patch = _patches(req, axis == 1 and flat and inner == 1 and not given, bl, nt, outer)
    if patch:
        grid = (triton.cdiv(nt, bl // 8), triton.cdiv(outer, 128) * 16)
        full = full and outer % 128 == 0 and nt % (bl // 8) == 0
    run = tp if axis == 1 else bl
    pack = _pack_bits(req)
    if not (flat and tp == tile and not channel and pack and tile % pack_group(pack) == 0):
        pack = 0
    whole = flat if axis == 1 else length % tile == 0 and not loop
    if fused and not (whole and tp == tile and not (channel or given or pre)):
        raise TcastError(f"no fused transform for {req.dtype.name} over {lay.shape}")
    cv = 0
    if fused and axis == 0 and COL_FUSED_ELEMS // tp >= 2:  # longer tiles: 16-byte vectors
        cv = COL_FUSED_ELEMS // tp
        warps = max(1, bl // (32 * cv))
    # a Philox call serves E = 128 / K elements (SEMANTICS.md §3.3): runs from multiples of E
    per_call = 128 // req.dtype.nspec.rbits_width
    if axis == 1:
        aligned = tile % per_call == 0 and (flat or length % per_call == 0)
    else:
        aligned = inner % per_call == 0
    kw = dict(
        AXIS=axis,
        TP=tp,
        BL=bl,
        # the tile length as a compile-time constant where it is one (not for channels)
        TK=0 if channel else tile,
        FLAT=flat,
        # every block whole: unmasked loads and stores
        FULL=full,
        I64=i64,
        LOOP=loop,
        PRE=pre,
        **scaled,
        # Philox bits by aligned runs of RUN elements (one call per 128 / K elements)
        RV=rs == 1 and aligned and run % per_call == 0,
        RUN=run,
        PACK=pack,
        BLK=req.blocked is not None,
        PATCH=patch,
        GIVEN=given,
        **rht,
        CV=cv,
        **given_kw(dt, gp),
        STREAM=stream,
        num_warps=warps,
        **_LAUNCH_OPTS,
    )
    kernel = _cast_tiles
    pieces = tp * xc.element_size() // 16
    if (
        ROW_PIECES
        and not given
        and flat
        and not (loop or pre or channel or pack)
        # a transform's groups, or a seeded cast's Philox calls, inside one thread: tiles of
        # any size (ROW_PIECES_TILE otherwise)
        and tp == tile == (tile if fused or rs == 1 else ROW_PIECES_TILE)
        and pieces > 1
        and bl >= 32
        and (rs != 1 or tile % per_call == 0)  # Philox calls inside a tile
    ):
        kernel = _cast_row_pieces
        kw = {k: v for k, v in kw.items() if k not in _NOT_PIECES}
        outer_rows = fused or rs == 1
        pairs = not outer_rows and pairs_ok(req, scaled, xc, length, word4)
        # a tile in one thread (H200: as fast as the [NP, BL, V] block for actual casts
        # without a transform, slower for virtual ones)
        kw.update(NP=pieces, num_warps=min(bl // 32, 8), PAIRS=pairs, ROWS_OUTER=outer_rows)
    return _Plan(
        kernel,
        (grid if isinstance(grid, tuple) else (grid,)) if numel else (0,),
        (outer, length, inner, tile, nt, outer * nt),
        kw,
        packed=bool(pack),
        **scaled_fields(req, xc, amax=pre or tensor_amax(dt, gp)),
    )


def streamed(req: CastRequest, gp: int, other: bool, tile: int, loop: bool) -> bool:
    """Whether tiles of ``tile`` elements are cast in one read (``_cast_tiles``' ``STREAM``).

    Every part of the scale recipe given (``gp``, :func:`_given.recipe_given`) and long
    tiles (looped anyway, or :data:`STREAM_MIN` elements and more); ``other``: the plan
    reads tile statistics from elsewhere or fuses a transform (whole tiles only), and
    takes neither.
    """
    return recipe_given(req.dtype, gp) and not other and (loop or tile >= STREAM_MIN)


def tensor_amax(dt: DataType, gp: int) -> bool:
    """Whether a tiled cast of ``dt`` takes the tensor amax (an amax pass first).

    Two-level scaling, unless the tensor scale is given (``gp``, ``_given.given_bits``: a
    one-pass cast, SEMANTICS.md §5.12).
    """
    return dt.is_multiscale and not gp & GP_TENSOR.value


def _patches(req: CastRequest, row_tiles: bool, bl: int, nt: int, outer: int) -> bool:
    """Whether blocked row-tile scales are cast in patches of 8 rows (:data:`BLOCKED_PATCHES`).

    ``row_tiles``: flat row tiles of ``outer`` rows of ``nt`` tiles, ``bl`` a program.
    """
    if BLOCKED_PATCHES not in ("all", "none"):
        raise ValueError(f"BLOCKED_PATCHES is {BLOCKED_PATCHES!r}: 'all' or 'none'")
    return (
        BLOCKED_PATCHES == "all"
        and req.blocked is not None
        and row_tiles
        and bl % 32 == 0
        # a patch is 8 rows x bl / 8 tiles of 128-row groups: narrower or shorter matrices
        # would leave most of its lanes idle
        and nt >= bl // 8
        and outer >= 128
        and triton.cdiv(outer, 128) * 16 <= MAX_GRID_Y
    )


def amax_pass_kw(
    dt: DataType, xc: torch.Tensor, transform: Hadamard | None = None, inner: int = 1
) -> dict:
    """The compile-time arguments of the tensor-amax pass (``_amax_pass``) over ``xc``.

    ``transform``: the maxima of the transformed values (a fused transform, :func:`rht_kw`);
    ``inner`` > 1: its groups run down the columns of rows ``inner`` long (tiles along
    another dimension): one warp a ``[G, 32 * 64 / G]`` block (``RHT_INNER``).
    """
    if transform is not None and inner > 1:
        return dict(
            IN=_IN_CODES[xc.dtype],
            U=dt.nspec.is_uint,
            BLOCK=32 * 64,
            I64=_needs_i64(xc),
            num_warps=1,
            **rht_kw(transform),
            RHT_V=1,
            RHT_INNER=inner,
            **_LAUNCH_OPTS,
        )
    return dict(
        IN=_IN_CODES[xc.dtype],
        U=dt.nspec.is_uint,
        BLOCK=AMAX_BLOCK if transform is None else AMAX_BLOCK_FUSED,
        I64=_needs_i64(xc),
        num_warps=AMAX_WARPS,
        **rht_kw(transform),
        # a group's pieces: 16-byte vectors of the input
        RHT_V=1 if transform is None else min(transform.size, 16 // xc.element_size()),
        RHT_INNER=0,  # every parameter: torch.compile passes None for one a launch omits
        **(_LAUNCH_OPTS if transform is not None else {}),  # the butterfly: no contraction
    )


def amax_programs(kw: dict, numel: int) -> int:
    """The grid of an amax pass of compile-time arguments ``kw`` over ``numel`` elements."""
    inner = kw.get("RHT_INNER", 0)
    if inner:
        g = kw["RHT_G"]
        return numel // inner // g * triton.cdiv(inner, kw["BLOCK"] // g)
    return triton.cdiv(numel, kw["BLOCK"])


def transform_inner(req: CastRequest) -> int:
    """The row length down whose columns a fused transform's groups run (1: along rows)."""
    lay = req.layout
    if req.modes.transform is None or lay is None or len(lay.dims) != 1:
        return 1
    return math.prod(lay.shape[lay.dims[0] + 1 :])


#: The largest group a cast kernel transforms itself (its signs one compile-time int32 mask).
MAX_FUSED_TRANSFORM = 32


def rht_kw(h: Hadamard | None) -> dict:
    """The compile-time arguments of a transform fused into a kernel (``RHT_G`` 0: none).

    Always all of them: ``torch.compile`` passes None for a kernel parameter a launch omits,
    whatever its default.
    """
    if h is None:
        return dict(RHT_G=0, RHT_STAGES=0, RHT_SIGNS=0, RHT_SCALE=1.0)
    signs = sum(1 << i for i, s in enumerate(h.signs) if s < 0)
    signs -= (signs >> 31) << 32  # as int32 (Triton types the constant so): bit 31 its sign
    return dict(RHT_G=h.size, RHT_STAGES=h.stages, RHT_SIGNS=signs, RHT_SCALE=2.0**-h.shift)


def fused_transform(req: CastRequest) -> bool:
    """Whether the cast kernel applies ``req``'s transform itself (SEMANTICS.md §5.11).

    Actual and compress casts of dense 1-D tiles, whole (the tiled dimension a multiple of
    the tile), of a power-of-two length that is a multiple of the group size, groups of at
    most :data:`MAX_FUSED_TRANSFORM`: tiles along the last dimension of at most
    :data:`MAX_ROW_CHANNEL` elements, or along another dimension (the column geometry) of at
    most :data:`MAX_TILE` (two-level scales too: the amax pass transforms groups down the
    columns, ``RHT_INNER``). Other transforms are composed (``tcast.kit.cast_transformed``).
    """
    h, lay = req.modes.transform, req.layout
    if h is None or h.size > MAX_FUSED_TRANSFORM or req.virtual or lay is None:
        return False
    if len(lay.dims) != 1 or lay.sparse is not None or req.dtype.sspec.tiles[0].size == 0:
        return False
    (d,) = lay.dims
    tile = lay.sizes[0]
    rows = math.prod(lay.shape[d + 1 :]) == 1  # the row geometry: groups are contiguous
    return (
        (tile <= MAX_ROW_CHANNEL if rows else tile <= MAX_TILE)
        and tile & (tile - 1) == 0
        and lay.shape[d] % tile == 0
        and tile % h.size == 0
    )


def scaled_fields(
    req: CastRequest, xc: torch.Tensor, amax: bool, kernel_blocked: bool = True
) -> dict:
    """The plan fields every scaled cast has.

    Bytes per code of each part, the scale count and shape, and the tensor-amax pre-pass
    (``amax``: tensor and two-level scales). ``kernel_blocked``: the kernel writes the
    blocked scales a request asks for (else it writes plain ones, laid out by the kit).
    """
    dt, lay = req.dtype, req.layout
    numel = xc.numel()
    amax_grid: tuple[int, ...] = ()
    amax_kw: dict = {}
    blocked, padded, count = (), False, math.prod(lay.scale_shape)
    bs = req.blocked if kernel_blocked else None
    if bs is not None:
        blocked, count = bs.shape, bs.padded_rows * bs.padded_cols
        padded = count != bs.rows * bs.cols
    if amax and numel:
        amax_kw = amax_pass_kw(dt, xc, req.modes.transform, transform_inner(req))
        amax_grid = (amax_programs(amax_kw, numel),)
    return dict(
        out_bytes=0 if req.virtual else _code_bytes(dt.nspec.bits),
        scale_bytes=_code_bytes(dt.sspec.scale.bits),
        zero_bytes=_code_bytes(dt.zero.bits) if dt.zero is not None else 0,
        tcode_bytes=_code_bytes(dt.tenscale.bits) if dt.tenscale is not None else 0,
        scale_count=count,
        scale_shape=blocked or tuple(lay.scale_shape),
        amax_grid=amax_grid,
        amax_kw=amax_kw,
        blocked=blocked,
        padded=padded,
    )


def element_output(plan: Any, xc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(result, kernel view): codes (or the packed compress stream), or values of x's dtype."""
    if getattr(plan, "packed", False):
        nbytes = packed_bytes(plan.kw["PACK"], xc.numel())
        out = torch.empty(nbytes, dtype=torch.uint8, device=xc.device)
        return out, out
    if plan.out_bytes:
        out = torch.empty(xc.shape, dtype=_CODE_DTYPES[plan.out_bytes], device=xc.device)
        return out, out
    result = torch.empty_like(xc)
    # the kernels write a virtual cast's bits (_kernels.value_ptr): an integer view, or the
    # values' own tensor while traced (see bits_of)
    return result, result if traced_launches() else result.view(_BITS_VIEW[xc.dtype])


def _launch(
    plan: _Plan, xc, xin, req: CastRequest, seed: int, rb, given: torch.Tensor | None = None
) -> torch.Tensor | CastResult:
    """Allocate the outputs, run the plan's kernels, assemble the result."""
    result, out = element_output(plan, xc)
    if plan.kernel is _cast_unscaled:
        if plan.grid[0]:
            plan.launch(plan.grid, xin, rb, out, *plan.sizes, seed, req.modes.stream)
        if req.virtual:
            return result
        return build_result(req, result, OPS, "triton", packed=plan.packed)
    scale, zero, tcode, stats = scaled_parts(plan, xc, xin, given)
    if plan.grid[0]:
        args = (
            xin,
            rb,
            out,
            scale,
            scale if zero is None else zero,
            scale if tcode is None else tcode,
            stats,
            *plan.sizes,
            seed,
            req.modes.stream,
        )
        launch_scaled(plan, args, req)
    return scaled_result(plan, req, result, scale, zero, tcode, packed=plan.packed)


def launch_scaled(plan: Any, args: tuple, req: CastRequest) -> None:
    """Launch a scaled plan's kernel; the request's given scale parts as its last arguments."""
    if req.given is None:
        plan.launch(plan.grid, *args)
    else:
        plan.launch.call_with(plan.grid, args, given_pointers(req.given))


def scaled_parts(
    plan: Any, xc: torch.Tensor, xin: torch.Tensor, given: torch.Tensor | None = None
) -> tuple:
    """(scale, zero, tensor-scale, stats) buffers of a scaled plan; runs its amax pass.

    ``zero`` and the tensor scale are None where the datatype has none; ``stats`` holds the
    tensor's magnitude maxima after the amax pass (the scale buffer, unread, without one),
    or is ``given`` (block statistics from elsewhere, see ``_cast_launch.run_cast``) with no pass.
    """
    dev = xc.device
    count = max(plan.scale_count, 1)
    # blocked scales' padding slots are zero codes (§8.1): the kernels write real slots only
    alloc = torch.zeros if plan.padded else torch.empty
    scale = alloc(count, dtype=_CODE_DTYPES[plan.scale_bytes], device=dev)
    zero = tcode = None
    if plan.zero_bytes:
        zero = alloc(count, dtype=_CODE_DTYPES[plan.zero_bytes], device=dev)
    if plan.tcode_bytes:
        tcode = torch.empty(1, dtype=_CODE_DTYPES[plan.tcode_bytes], device=dev)
    stats = scale
    if given is not None:
        stats = given
    elif plan.amax_grid:
        stats = torch.zeros(3, dtype=torch.int32, device=dev)
        plan.amax_launch(plan.amax_grid, xin, stats, xc.numel())
    return scale, zero, tcode, stats


def scaled_result(
    plan: Any, req: CastRequest, result, scale, zero, tcode, *, mask=None, packed=False
) -> torch.Tensor | CastResult:
    """The virtual tensor, or the CastResult of a scaled plan's buffers."""
    if req.virtual:
        return result
    n = plan.scale_count
    return build_result(
        req,
        result,
        OPS,
        "triton",
        scale=scale[:n].reshape(plan.scale_shape),
        zero=None if zero is None else zero[:n].reshape(plan.scale_shape),
        tenscale=None if tcode is None else tcode.reshape(()),
        mask=mask,
        packed=packed,
        scale_blocked=bool(plan.blocked),
    )
