"""Launcher of the dual cast kernels: ``tcast.cast_dual`` in one launch.

``_kernels_dual_gl_hw`` (Gluon; codes by the hardware FP8 conversion) and ``_kernels_dual_gl``
(Gluon; the bfloat16 pair encoder) on sm_90 and later GPUs for what they serve
(:func:`gluon_takes`), ``_kernels_dual`` (Triton) for the rest and under the interpreter.

Takes the checked row and column requests of ``tcast.kit.run_dual``, forms the canonical
view ``[outer, M, N]``, allocates both results' parts, runs the tensor-amax pass (two-level
scaling: one amax serves both casts) and the kernel, and assembles the two results with the
kit (a compress result is packed from the kernel's codes by ``build_result``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import torch
import triton

from tcast import CastResult
from tcast.kit import CastRequest, build_result, transposed_request

from ._codec import F_HW, F_KIND, K_EXP
from ._env import quiet_numpy
from ._fastlaunch import Launch
from ._kernels import _amax_pass
from ._kernels_dual import _cast_dual
from ._kernels_dual_gl import _cast_dual_gl
from ._kernels_dual_gl_hw import _cast_dual_gl_hw
from ._launch import (
    _BITS_VIEW,
    _CODE_DTYPES,
    _IN_CODES,
    _LAUNCH_OPTS,
    AMAX_BLOCK,
    MAX_PROGRAMS,
    _code_bytes,
    _needs_i64,
    _random_source,
    amax_pass_kw,
    cached_plan,
    hw_fp8,
    pairs_ok,
    scaled_kw,
    word_aligned,
)
from ._pack import OPS
from ._scales import SK_EXP

__all__ = ["dual_kernel_takes", "dual_supported", "gluon_takes", "run_dual"]

#: The largest tile the kernel holds (a block is T rows of at least T columns).
DUAL_MAX_TILE = 128
#: The Triton kernel's tunables, measured on the MX casts of 32-element tiles, which the
#: Gluon kernels take on sm_90 and later (the Triton kernel serves the other tiles, virtual
#: casts, other scales, older GPUs and the interpreter). Elements of a program's block
#: (``T`` rows of ``DUAL_ELEMS / T`` columns, at least ``T``) and warps per program for
#: tiles of 32 and more, and narrower.
#: H200 sweep (bench/bench_dual.py --sweep, 16384^2 bfloat16, actual, transposed), ms for
#: MXFP8 / MXFP4 / NVFP4: 2048 elements, 1 warp 0.464 / 0.570 / 1.143; 2 warps 0.504 / 0.572 /
#: 1.037; 4096, 2 warps 0.480 / 0.573 / 1.146; 4 and 8 warps, and 8192 elements, slower.
DUAL_ELEMS = 2048
#: The same for the casts to codes by the hardware FP8 conversion, whose lean registers
#: take a block twice as wide: MXFP8 0.327 / 0.433 ms (plain / transposed) at 2048,
#: 0.306 / 0.400 at 4096 (H200, bench_dual.py --sweep).
DUAL_ELEMS_HW = 4096
DUAL_WARPS = 1
DUAL_WARPS_NARROW = 2
#: Block elements and warps of the pair path (benchmark tunables). H200, 16384^2 bfloat16,
#: MXFP4 plain / transposed ms (bench_dual.py --sweep-pairs): 2048 elements, 1 warp 0.355 /
#: 0.431; 2 warps 0.423 / 0.437; 4096, 1 warp 0.493 / 0.410; 2 warps 0.353 / 0.392.
DUAL_ELEMS_PAIRS = 4096
DUAL_WARPS_PAIRS = 2
#: Whether datatypes with a tensor scale over their tile scales (two-level: NVFP4) take the
#: dual kernel for codes in x's layout with plain scales. They do not: their tile scales
#: (three correctly rounded divisions and an E4M3 rounding per 16 elements) are computed in
#: every thread of a column reduction there, and the engine's row and column single kernels
#: after one amax pass both share (``TritonEngine.cast_dual_eager``; the same bits) are
#: faster. H200, 16384^2 bfloat16, NVFP4 (``bench_dual.py --two-level``), dual kernel / shared
#: amax and single kernels, ms: actual 0.962 / 0.713; virtual 0.717 / 0.760; transposed
#: 0.977 / 2.401 and blocked transposed 0.789 / 2.457 (xᵀ's parts permuted after the column
#: cast), so virtual, transposed and blocked casts keep the kernel. A switch for tests and
#: benchmarks.
DUAL_TWO_LEVEL = False
#: Whether :func:`gluon_takes` may choose the Gluon kernels (``_kernels_dual_gl_hw``,
#: ``_kernels_dual_gl``): a switch for tests and benchmarks.
GLUON_ENABLED = True
#: ``_kernels_dual_gl``'s tunables (H200 benchmark), for the pair encoder and for the
#: hardware FP8 conversion (``GLUON_HW``: only with ``GLUON_ONE_LAYOUT`` off; measured without
#: the scale stores' eviction policy): block columns BN, warps W, the column phase's threads
#: along a column CT and elements (words of two, pairs) a thread holds along a row CV, the
#: row phase's elements (words) a thread holds of a row tile RV. H200, 16384^2 bfloat16,
#: plain / transposed ms (bench/bench_dual.py --sweep-gluon, column phase from the row
#: phase's registers), MXFP8
#: (BN, W, CT, CV, RV) = 256, 4, 4, 8, 8: 0.282 / 0.373; 256, 4, 4, 8, 16: 0.281 / 0.373;
#: 512, 8, 4, 8, 16: 0.294 / 0.377; 256, 2, 4, 8, 16: 0.293 / 0.394; 128, 2, 4, 8, 8: 0.289
#: / 0.383. MXFP4 512, 4, 4, 4, 4: 0.275 / 0.371; 512, 4, 4, 4, 8: 0.273 / 0.369; 256, 4,
#: 4, 4, 8: 0.278 / 0.373; 512, 8, 4, 4, 8: 0.272 / 0.385; one warp: 0.29-0.36. (The Triton
#: kernel: 0.307 / 0.399 and 0.353 / 0.390.)
GLUON_PAIRS = (512, 4, 4, 4, 8)
GLUON_HW = (256, 4, 4, 8, 16)
#: Whether codes by the hardware FP8 conversion take ``_kernels_dual_gl_hw`` (both casts in
#: one layout) rather than ``_kernels_dual_gl`` (tunables ``GLUON_HW``): a switch for tests
#: and benchmarks. H200, 16384^2 bfloat16 MXFP8, plain / transposed ms, same run
#: (bench/bench_dual.py, both with the scale stores' eviction policy below): 0.268 / 0.360
#: against 0.273 / 0.362; 15.2 against 17.3 SASS instructions per element (sm_90, plain,
#: bench/sass_offline.py).
GLUON_ONE_LAYOUT = True
#: ``_kernels_dual_gl_hw``'s tunables: block columns BN, warps W, threads of a warp along
#: the block's row tiles TT, elements a thread holds of a row tile VC (W * TT = BN / 32).
#: H200, 16384^2 bfloat16 MXFP8, plain / transposed ms, with the scale stores' eviction
#: policy (bench/bench_dual.py --sweep-gluon one): 256, 4, 2, 8: 0.268 / 0.364; 256, 4, 2,
#: 16: 0.271 / 0.361; 512, 8, 2, 8: 0.274 / 0.357; 512, 8, 2, 16: 0.280 / 0.359. Without
#: it (another run): 256, 4, 2, 8: 0.277 / 0.379; 256, 4, 2, 16: 0.281 / 0.375; 512, 8,
#: 2, 8: 0.280 / 0.371; 256, 4, 2, 4: 0.300 / 0.378; 512, 4, 4, 16: 0.353 / 0.382; 256, 4,
#: 1, 16 and 512, 8, 1, 16: 0.351 / 0.425 and 0.503 / 0.594.
GLUON_HW_ONE = (256, 4, 2, 8)
#: Whether the Gluon kernel's column phase takes the row phase's registers (rearranged
#: through shared memory) rather than reading the block again from L2 (benchmark tunable;
#: H200, 16384^2 bfloat16, ``bench/bench_dual.py --sweep-gluon`` with ONCE 0 and 1 in
#: ``--gluon-configs``, tunables BN, W, CT, CV = 256, 4, 4, 8 and RV 16 bytes, ms from L2 /
#: from registers: MXFP8 0.284 / 0.282, MXFP4 0.285 / 0.278, transposed 0.384 /
#: 0.372).
#: Launch plans are cached (``_PLANS``): clear them after changing a switch or tunable.
GLUON_ONCE = True
#: The L2 eviction policy (a Triton ``eviction_policy``) of the Gluon kernels' row-scale
#: stores, and of the column-scale stores of transposed casts (one byte per row of xᵀ); plain
#: column scales (whole sectors) take the default. ``_kernels_dual_gl_hw`` says why. Blocked
#: column scales (the same slots plain or transposed) showed no difference either way (MXFP8
#: one layout, columns default / ``evict_last``: 0.270 / 0.271 ms, transposed 0.322 /
#: 0.321), so they follow ``transposed``. H200,
#: 16384^2 bfloat16, plain / transposed ms, without / with the policy (bench/bench_dual.py,
#: same run): MXFP8 (one layout) 0.277 / 0.271 and 0.372 / 0.361; MXFP4 0.270 / 0.263 and
#: 0.367 / 0.356.
GLUON_SCALE_EVICT = "evict_last"
#: Launch plans, by the single-cast key and ``transposed`` (``_launch.cached_plan``).
_PLANS: dict[tuple, _DualPlan] = {}


def dual_supported(rows: CastRequest) -> bool:
    """Whether the kernel casts this row request's datatype both ways.

    One dense tile segment of a power-of-two length up to :data:`DUAL_MAX_TILE` (MX,
    NVFP4, any scale format, zero points, a tensor scale over tile scales); actual, compress
    or virtual. Others (channels, sparsity, longer tiles) are two casts.
    """
    ss = rows.dtype.sspec
    if ss is None or len(ss.tiles) != 1 or ss.is_sparse or ss.has_subtile:
        return False
    t = ss.tiles[0].size
    return 0 < t <= DUAL_MAX_TILE and t & (t - 1) == 0


def dual_kernel_takes(rows: CastRequest, transposed: bool) -> bool:
    """Whether :func:`run_dual` launches the kernel for a supported datatype.

    Not for the codes of two-level datatypes in x's layout with plain scales, unless
    :data:`DUAL_TWO_LEVEL`.
    """
    plain_codes = not (transposed or rows.virtual or rows.blocked is not None)
    return DUAL_TWO_LEVEL or not rows.dtype.is_multiscale or not plain_codes


def gluon_takes(rows: CastRequest, scaled: dict, xc: torch.Tensor, pairs: bool) -> bool:
    """Whether a Gluon kernel casts this request: what they serve.

    ``_kernels_dual_gl`` for the pair encoder, ``_kernels_dual_gl_hw`` for the hardware FP8
    conversion (``_kernels_dual_gl`` with :data:`GLUON_ONE_LAYOUT` off).

    On sm_90 and later GPUs (``hw_fp8``; never the interpreter, which does not run Gluon;
    measured and tested on an H200), 32-element tiles, codes encoded by the bfloat16 pair
    encoder (``pairs``: ``_launch.pairs_ok`` already asks for codes, nearest even, exponent
    scales and nothing else) or by the hardware FP8 conversion (which asks for nearest even
    and codes) with power-of-two exponent scales (E8M0), no zero point, fixed point or tensor
    scale. The rest takes ``_cast_dual``.
    """
    if not (GLUON_ENABLED and rows.layout.sizes[0] == 32 and hw_fp8(xc.device)):
        return False
    return pairs or bool(
        scaled["E"][F_HW.value] != 0
        and scaled["CB"] == 1
        and scaled["SK"] == SK_EXP.value
        and scaled["S"][F_KIND.value] == K_EXP.value
        and scaled["EK"] == 0
        and rows.dtype.zero is None
    )


@dataclass(frozen=True)
class _DualPlan:
    """One launch of the dual kernel: everything that depends only on the cache key."""

    grid: tuple[int, ...]
    kw: dict
    amax_kw: dict
    gluon: bool = False
    one_layout: bool = False

    @cached_property
    def launch(self) -> Launch:
        """The kernel with its compile-time arguments."""
        if self.one_layout:
            return Launch(_cast_dual_gl_hw, self.kw)
        return Launch(_cast_dual_gl if self.gluon else _cast_dual, self.kw)

    @cached_property
    def amax_launch(self) -> Launch:
        """The tensor-amax pass (two-level scaling)."""
        return Launch(_amax_pass, self.amax_kw)


def _build(
    rows: CastRequest, xc: torch.Tensor, rs: int, transposed: bool, word4: bool = True
) -> _DualPlan:
    shape = rows.shape
    m, n = shape[-2], shape[-1]
    outer = math.prod(shape[:-2])
    t = rows.layout.sizes[0]
    scaled = scaled_kw(rows, _IN_CODES[xc.dtype], rs, hw_fp8(xc.device))
    pairs = _pairs(rows, scaled, xc, n, word4)
    gluon = gluon_takes(rows, scaled, xc, pairs)
    extra = {}
    one_layout = gluon and not pairs and GLUON_ONE_LAYOUT
    evict = {"REV": GLUON_SCALE_EVICT, "CEV": GLUON_SCALE_EVICT if transposed else ""}
    if one_layout:
        bn, warps, tt, vc = GLUON_HW_ONE
        extra = {"W": warps, "TT": tt, "VC": vc, **evict}
    elif gluon:
        bn, warps, ct, cv, rv = GLUON_PAIRS if pairs else GLUON_HW
        extra = {"W": warps, "CT": ct, "CV": cv, "RV": rv, "ONCE": GLUON_ONCE, **evict}
    else:
        warps = DUAL_WARPS if t >= 32 else DUAL_WARPS_NARROW
        if pairs:
            elems, warps = DUAL_ELEMS_PAIRS, DUAL_WARPS_PAIRS
        elif scaled["E"][F_HW.value] and not rows.virtual:
            elems = DUAL_ELEMS_HW
        else:
            elems = DUAL_ELEMS
        bn = max(elems // t, t)
        # seeded bits by runs: tiles, block rows and rows start at multiples of 128 / K
        per_call = 128 // rows.dtype.nspec.rbits_width
        aligned = all(v % per_call == 0 for v in (t, n, bn))
        extra = {"RV": rs == 1 and not pairs and aligned}
    kw = dict(
        T=t,
        BN=bn,
        # 16-byte pieces of a row tile (one piece for tiles narrower than 16 bytes)
        NP=max(t * xc.element_size() // 16, 1),
        TRANS=transposed,
        BLK=rows.blocked is not None,
        PAIRS=pairs,
        FULL=m % t == 0 and n % bn == 0,
        I64=_needs_i64(xc),
        **scaled,
        **extra,
        num_warps=warps,
        **_LAUNCH_OPTS,
    )
    amax_kw = amax_pass_kw(rows.dtype, xc) if rows.dtype.is_multiscale else {}
    grid = outer * triton.cdiv(m, t) * triton.cdiv(n, bn)
    return _DualPlan((grid,), kw, amax_kw, gluon, one_layout)


def _pairs(rows: CastRequest, scaled: dict, xc: torch.Tensor, n: int, word4: bool) -> bool:
    """Whether the kernel reads bfloat16 pairs (``_launch.pairs_ok``)."""
    return pairs_ok(rows, scaled, xc, n, word4)


def _scale_buffers(req: CastRequest, dev: torch.device) -> tuple:
    """(scale, zero) buffers of one result in their stored shape (plain or blocked)."""
    dt = req.dtype
    bs = req.blocked
    if bs is None:
        shape, alloc = tuple(req.layout.scale_shape), torch.empty
    else:
        # the padding slots of the blocked layout are zero codes; the kernel writes the rest
        padded = bs.padded_rows * bs.padded_cols != bs.rows * bs.cols
        shape, alloc = bs.shape, torch.zeros if padded else torch.empty
    scale = alloc(shape, dtype=_CODE_DTYPES[_code_bytes(dt.sspec.scale.bits)], device=dev)
    zero = None
    if dt.zero is not None:
        zero = alloc(shape, dtype=_CODE_DTYPES[_code_bytes(dt.zero.bits)], device=dev)
    return scale, zero


def run_dual(
    x: torch.Tensor, rows: CastRequest, cols: CastRequest, transposed: bool
) -> tuple[torch.Tensor | CastResult, torch.Tensor | CastResult] | None:
    """Both casts of ``tcast.cast_dual`` in one kernel; None when the kernel does not apply.

    None (nothing launched) for a datatype :func:`dual_supported` refuses, an empty input,
    or a grid past CUDA's limit: the engine then runs two casts.
    """
    if not dual_supported(rows) or x.numel() == 0 or not dual_kernel_takes(rows, transposed):
        return None
    xc = x.contiguous()
    xin = xc.view(_BITS_VIEW[xc.dtype]) if xc.dtype != torch.float32 else xc
    rs, seed, rb = _random_source(rows, xc)
    plan = cached_plan(_PLANS, rows, xc, rs, _build, transposed, word_aligned(xc))
    if plan.grid[0] > MAX_PROGRAMS:
        return None
    second = transposed_request(rows, cols) if transposed else cols
    dev = xc.device
    if rows.virtual:
        out_r = torch.empty_like(xc)
        out_c = torch.empty(second.shape, dtype=xc.dtype, device=dev)
        view_r, view_c = (o.view(_BITS_VIEW[xc.dtype]) for o in (out_r, out_c))
        sr = sc = zr = zc = None
    else:
        code = _CODE_DTYPES[_code_bytes(rows.dtype.nspec.bits)]
        out_r = view_r = torch.empty(rows.shape, dtype=code, device=dev)
        out_c = view_c = torch.empty(second.shape, dtype=code, device=dev)
        sr, zr = _scale_buffers(rows, dev)
        sc, zc = _scale_buffers(second, dev)
    tcode = None
    if rows.dtype.is_multiscale:
        tcode = torch.empty(
            1, dtype=_CODE_DTYPES[_code_bytes(rows.dtype.tenscale.bits)], device=dev
        )
    stats = view_r
    if plan.amax_kw:
        stats = torch.zeros(3, dtype=torch.int32, device=dev)
        plan.amax_launch((triton.cdiv(xc.numel(), AMAX_BLOCK),), xin, stats, xc.numel())
    shape = rows.shape
    some = view_r  # a pointer for the parts a datatype lacks (never written)
    with quiet_numpy():
        plan.launch(
            plan.grid,
            xin,
            rb,
            view_r,
            view_c,
            some if sr is None else sr,
            some if sc is None else sc,
            some if zr is None else zr,
            some if zc is None else zc,
            some if tcode is None else tcode,
            stats,
            math.prod(shape[:-2]),
            shape[-2],
            shape[-1],
            seed,
            rows.modes.stream,
            cols.modes.stream,
        )
    if rows.virtual:
        return out_r, out_c
    ten = None if tcode is None else tcode.reshape(())
    blocked = rows.blocked is not None
    first = build_result(
        rows, out_r, OPS, "triton", scale=sr, zero=zr, tenscale=ten, scale_blocked=blocked
    )
    other = build_result(
        second,
        out_c,
        OPS,
        "triton",
        scale=sc,
        zero=zc,
        tenscale=None if ten is None else ten.clone(),
        scale_blocked=blocked,
    )
    return first, other
