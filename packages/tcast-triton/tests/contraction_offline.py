"""Compile every kernel the engine launches with and without FMA contraction (sm_90, no GPU).

Run by ``test_offline_contraction.py`` as a script in a process without ``TRITON_INTERPRET``
(Triton chooses the interpreter when it is imported). The engine launches its kernels with
``enable_fp_fusion=False``; a compiler that keeps Triton's default (torch Inductor compiling
them as user kernels) contracts a product and the sum it feeds into one fused multiply-add,
one rounding instead of two (SEMANTICS.md §0), unless the kernel's arithmetic is written so
that nothing can be contracted. For each case this builds the plan the engine would build on
an sm_90 GPU (``hw_fp8`` answered True), compiles its kernel with the specializations a
launch gets (``_offline.compile_sass``) once with ``enable_fp_fusion=False`` and once with
``True``, and prints one JSON line: the case, the kernel, whether the two SASS listings are
identical, and each listing's FFMA and scaled FMUL (``FMUL.M4``) counts. Exit status 0 when
every case is identical.

    python contraction_offline.py            # the cases below: every kernel, every variant
                                             # of its arithmetic that could contract
    python contraction_offline.py --full     # also more variants, and every catalog
                                             # datatype x cast mode (rows, columns), upcast
    python contraction_offline.py --dump DIR # and each listing without contraction to DIR
    python contraction_offline.py --full --shard 0/4  # a quarter of the sweep (4 processes)
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

import tcast
from tcast.kit import cast_rules, column_datatype, make_request
from tcast_triton import _launch, _launch_2d, _launch_dual, _pack, _upcast
from tcast_triton._engine import TritonEngine
from tcast_triton._given import given_bits
from tcast_triton._offline import compile_sass

# how the kernels read x (``_launch.bits_of``) and write a virtual result (its bits)
_X = {torch.float32: torch.float32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
_BITS = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
_CODES = {0: None, 1: torch.uint8, 2: torch.uint16, 4: torch.uint32}
_FFMA = re.compile(r"\bFFMA\b")
_SCALED = re.compile(r"\bFMUL\.[MD]\d")  # a product times 2, 4 or 8 (or 1/2, 1/4, 1/8)

#: (label, kernel, run-time arguments by name, compile-time arguments) of one compile.
Compile = tuple[str, object, dict, dict]


def _t(dtype: torch.dtype) -> torch.Tensor:
    """A one-element CPU tensor standing for a pointer of ``dtype``."""
    return torch.empty(1, dtype=dtype)


def _request(
    code: str | tcast.DataType,
    shape: tuple,
    dtype: torch.dtype = torch.bfloat16,
    castmode: str = "actual",
    roundmode: str = "even",
    layout: str = "plain",
    transform: tcast.Hadamard | None = None,
):
    dt = code if isinstance(code, tcast.DataType) else tcast.datatype(code)
    modes = tcast.CastModes.of(
        castmode=castmode, roundmode=roundmode, scale_layout=layout, transform=transform
    )
    seed = 0 if roundmode == "stochastic" else None
    return make_request(dt, modes, seed, None, shape, str(dtype)[6:], cast_rules(dt))


def _rs(req, rs: int | None) -> int:
    """The random source: none, or a Philox seed unless ``rs`` says explicit bits (2)."""
    if rs is not None:
        return rs
    return 1 if req.roundmode is tcast.RoundMode.STOCHASTIC else 0


def _parts(plan, xc: torch.Tensor, rs: int, given: tuple[str, ...] = ()) -> dict:
    """The pointer arguments of a 1-D or N-d cast plan, typed as ``_launch._launch`` passes them.

    ``given``: the given scale parts (float32 arrays; the others None, as a launch without
    them leaves them).
    """
    x, bits = _t(_X[xc.dtype]), _t(_BITS[xc.dtype])
    if getattr(plan, "packed", False):
        out = _t(torch.uint8)
    else:
        out = _t(_CODES[plan.out_bytes]) if plan.out_bytes else bits
    scale = _t(_CODES[plan.scale_bytes]) if plan.scale_bytes else bits
    zero = _t(_CODES[plan.zero_bytes]) if plan.zero_bytes else scale
    tcode = _t(_CODES[plan.tcode_bytes]) if plan.tcode_bytes else scale
    stats = _t(torch.int32) if plan.amax_grid or plan.kw.get("GIVEN") else scale
    # given bits: K-bit integers (the cases' formats have at most 8 bits: uint8)
    rb = _t(torch.uint8) if rs == 2 else x
    parts = {f"g{n}_ptr": _t(torch.float32) if p in given else None for n, p in _GIVEN}
    return dict(
        x_ptr=x, rb_ptr=rb, out_ptr=out, scale_ptr=scale, zero_ptr=zero, tcode_ptr=tcode,
        stats_ptr=stats, keep_ptr=_t(torch.uint8), seed=0, rstream=0, **parts,
    )  # fmt: skip


#: The kernels' pointers of given scale parts (``g<name>_ptr``) and the parts they hold.
_GIVEN = (("scale", "scale"), ("zero", "zero"), ("tens", "tensor_scale"))


def single(
    label: str,
    code,
    shape: tuple,
    dtype: torch.dtype = torch.bfloat16,
    castmode: str = "actual",
    roundmode: str = "even",
    *,
    rs: int | None = None,
    given: bool = False,
    stats: bool = False,
    amax: bool = False,
    transform: tcast.Hadamard | None = None,
    parts: tuple[str, ...] = (),
) -> Iterator[Compile]:
    """The kernel the engine launches for one cast (``_launch_2d`` or ``_launch``).

    ``given``: ``_cast_tiles`` reading given tile statistics; ``stats``: the plan's
    ``_tile_stats`` instead; ``amax``: its tensor-amax pass instead; ``transform``: a fused
    Hadamard transform (the butterfly's adds and subtracts, then its normalizing product);
    ``parts``: the given scale parts the kernel reads (SEMANTICS.md §5.12).
    """
    req = _request(code, shape, dtype, castmode, roundmode, transform=transform)
    xc = torch.empty(shape, dtype=dtype, device="meta")
    src = _rs(req, rs)
    gp = given_bits(tcast.kit.GivenScales(*(p in parts or None for p in tcast.kit.GIVEN_PARTS)))
    if _launch.uses_nd(req):
        plan = _launch_2d._plan(req, xc, src, gp)
        args = _parts(plan, xc, src, parts)
        names = ("A", "L1", "B", "L2", "NC", "T1", "T2", "n1", "n2", "nq")
        args.update(zip(names, plan.sizes, strict=True))
        launch = plan.amax_launch if amax else plan.launch
    elif req.layout is None:
        plan = _launch._unscaled_plan(req, xc, src)
        args = _parts(plan, xc, src)
        args["n"] = xc.numel()
        launch = plan.launch
    else:
        # the tile statistics serve a cast reading them (``_launch.tile_stats``)
        plan = _launch._tiled_plan(req, xc, src, True, given or stats, gp)
        args = _parts(plan, xc, src, parts)
        names = ("outer", "L", "inner", "T", "nt", "ntiles")
        args.update(zip(names, plan.sizes, strict=True))
        launch = plan.stats_launch if stats else plan.amax_launch if amax else plan.launch
    if amax:
        args["n"] = xc.numel()
    yield label, launch.kernel, args, launch.kw


def dual(
    label: str,
    code,
    shape: tuple,
    dtype: torch.dtype = torch.bfloat16,
    castmode: str = "actual",
    roundmode: str = "even",
    transposed: bool = False,
    layout: str = "plain",
    kernel: str = "",
) -> Iterator[Compile]:
    """The dual cast's kernel (Triton or Gluon); ``kernel``: the one the plan must take."""
    req = _request(code, shape, dtype, castmode, roundmode, layout)
    xc = torch.empty(shape, dtype=dtype, device="meta")
    plan = _launch_dual._build(req, xc, _rs(req, None), transposed)
    k = plan.launch.kernel
    if kernel and k.__name__ != kernel:
        raise AssertionError(f"{label}: the plan takes {k.__name__}, not {kernel}")
    x, bits = _t(_X[dtype]), _t(_BITS[dtype])
    kw = plan.kw
    out = _t(_CODES[kw["CB"]]) if not req.virtual else bits
    scale = _t(_CODES[kw["SCB"]])
    zero = _t(_CODES[kw["ZCB"]]) if req.dtype.zero is not None else scale
    tcode = _t(_CODES[kw["TCB"]]) if req.dtype.tenscale is not None else scale
    args = dict(
        x_ptr=x, rb_ptr=x, out_r=out, out_c=out, scale_r=scale, scale_c=scale,
        zero_r=zero, zero_c=zero, tcode_ptr=tcode, stats_ptr=_t(torch.int32),
        outer=math.prod(shape[:-2]), M=shape[-2], N=shape[-1], seed=0, stream_r=0,
        stream_c=1,
    )  # fmt: skip
    yield label, k, args, kw


class _Recorder:
    """Stands for ``_upcast._upcast_kernel``: records the launch instead of running it."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple, dict]] = []

    def __getitem__(self, grid):
        return lambda *args, **kw: self.calls.append((args, kw))


def upcast(label: str, code, shape: tuple, castmode: str = "actual") -> Iterator[Compile]:
    """The upcast kernel's launch for a result of ``code`` (cast on the CPU by tcast_torch)."""
    x = torch.randn(shape, dtype=torch.float32)
    result = tcast.cast(x, code, castmode=castmode, engine="torch")
    rec = _Recorder()
    kernel, device_ok = _upcast._upcast_kernel, _upcast.kernel_device
    _upcast._upcast_kernel, _upcast.kernel_device = rec, lambda t: True
    try:
        _upcast.run_upcast(result)
    finally:
        _upcast._upcast_kernel, _upcast.kernel_device = kernel, device_ok
    ((args, kw),) = rec.calls
    run = [p.name for p in kernel.params if not p.is_constexpr]
    yield label, kernel, dict(zip(run, args, strict=True)), kw


def pack(label: str, bits: int, n: int = 1 << 20) -> Iterator[Compile]:
    """The pack and unpack kernels for codes of ``bits``, as ``_pack`` launches them."""
    nbytes = _pack.packed_bytes(bits, n)
    kw = dict(W=bits, G=_pack.GROUPS, I64=False, num_warps=4)
    args = dict(codes_ptr=_t(torch.int32), out_ptr=_t(torch.uint8), n=n, nbytes=nbytes)
    yield f"{label} pack", _pack._pack_kernel, args, kw
    args = dict(data_ptr=_t(torch.uint8), out_ptr=_t(torch.int32), n=n, nbytes=nbytes)
    yield f"{label} unpack", _pack._unpack_kernel, args, kw


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
ROWS, ODD = (256, 512), (200, 1030)


def cases() -> Iterator[Compile]:
    """Every kernel, in each variant of its arithmetic where a product feeds a sum.

    The float rounding (its round modes' corrections, stochastic rounding), float and
    two-level scales, zero points, fixed point by a factor of 4 (``ptxas`` folds a product
    times 2, 4 or 8 into one scaled multiplication); and each kernel without these once.
    """
    # _cast_unscaled: the rounding's corrections (away), stochastic rounding, virtual values
    yield from single("e2m1f actual away", "e2m1f", ODD, F32, roundmode="away")
    yield from single("e4m3fn virtual stochastic", "e4m3fn", ROWS, F32, "virtual", "stochastic")
    # _cast_tiles: two-level (rows), zero points, float scales in channels (columns,
    # looped), a tensor scale, stochastic rounding by Philox runs, fixed point (packed)
    yield from single("nvfp4 actual", "nvfp4", ROWS)
    yield from single("uint4 zero virtual", "uint4_float32_float32_t32", ODD, F16, "virtual")
    yield from single("int8 channel columns (loop)", column_datatype(
        tcast.datatype("int8_float32_t0")), (2048, 16), F32)  # fmt: skip
    yield from single("e4m3fn tensor scale", "e4m3fn_float32", ROWS, castmode="virtual")
    yield from single("mxfp6e3 stochastic (runs)", "mxfp6e3", ROWS, roundmode="stochastic")
    yield from single("mxint4 compress", "mxint4", ROWS, castmode="compress")
    # _cast_row_pieces: zero points, fixed point, virtual float rounding, bfloat16 pairs
    yield from single("uint4 zero actual", "uint4_float32_float32_t32", ROWS)
    yield from single("mxint4 actual", "mxint4", ROWS)
    yield from single("mxfp8 virtual", "mxfp8", ROWS, castmode="virtual")
    yield from single("mxfp4 actual (pairs)", "mxfp4", ROWS)
    yield from single("nvfp4 actual RHT-16 (tile per thread)", "nvfp4", ROWS,
                      transform=tcast.Hadamard.te_wgrad())  # fmt: skip
    # the tile statistics and the tensor-amax pass
    yield from single("uint4 tile stats", "uint4_float32_float32_t32", ROWS, stats=True)
    yield from single("nvfp4 amax pass", "nvfp4", ROWS, amax=True)
    # _cast_nd: 2-D tiles (two-level, zero points), sparsity (fixed point)
    yield from single("e2m1f two-level 2-D virtual", "e2m1f_e4m3fn_float32_t16_t16", ODD, F32,
                      "virtual")  # fmt: skip
    yield from single("uint4 zero 2-D virtual", "uint4_float32_float32_t16_t16", ROWS,
                      castmode="virtual")  # fmt: skip
    yield from single("int4 sparse actual", "int4_e8m0_t32n2m4", ROWS)
    # given scale parts (SEMANTICS.md §5.12): exponent, float, two-level and zero-point
    # recipes, row pieces and tiles, the N-d kernel
    yield from single("mxfp8 given scale", "mxfp8", ROWS, parts=("scale",))
    yield from single("int8 channel given scale virtual", "int8_float32_t0", ROWS, F32, "virtual",
                      parts=("scale",))  # fmt: skip
    yield from single("nvfp4 given tensor scale", "nvfp4", ROWS, parts=("tensor_scale",))
    yield from single("nvfp4 given scales virtual", "nvfp4", ROWS, castmode="virtual",
                      parts=("scale", "tensor_scale"))  # fmt: skip
    yield from single("uint4 given zero virtual", "uint4_float32_float32_t32", ODD, F16,
                      "virtual", parts=("zero",))  # fmt: skip
    yield from single("uint4 given scale 2-D", "uint4_float32_float32_t16_t16", ROWS,
                      parts=("scale",))  # fmt: skip
    # the dual kernels: Triton (two-level, zero points), Gluon (pairs, hardware FP8)
    yield from dual("nvfp4 dual transposed", "nvfp4", ROWS, transposed=True, kernel="_cast_dual")
    yield from dual("mxfp4 dual gluon", "mxfp4", ROWS, transposed=True, layout="blocked",
                    kernel="_cast_dual_gl")  # fmt: skip
    yield from dual("mxfp8 dual gluon", "mxfp8", ROWS, kernel="_cast_dual_gl_hw")
    # the upcast kernel: two-level, zero points (uint32 codes decode in two halves), fixed
    # point in columns
    yield from upcast("nvfp4 upcast", "nvfp4", ROWS)
    yield from upcast("uint32 zero upcast", "uint32_float32_float32_t32", ROWS)
    yield from upcast("mxint4 upcast columns", column_datatype(tcast.datatype("mxint4")), ROWS)
    # packing (integer arithmetic only)
    yield from pack("4-bit", 4)


def more_cases() -> Iterator[Compile]:
    """Further variants of the kernels (``--full``): modes, layouts, sources, geometries."""
    yield from single("e3m2f actual", "e3m2f", ROWS)
    yield from single("mxint8 virtual", "mxint8", ROWS, castmode="virtual")
    yield from single("e2m1f sparse actual", "e2m1f_e8m0_t32n4m8", ROWS)
    yield from single("uint32 zero virtual", "uint32_float32_float32_t32", ROWS, F32, "virtual")
    yield from single("e5m2 virtual trunc", "e5m2", ROWS, F16, "virtual", "trunc")
    yield from single("e2m1f compress", "e2m1f", ROWS, castmode="compress")
    yield from single("nvfp4 virtual columns", column_datatype(tcast.datatype("nvfp4")), ODD,
                      F32, "virtual")  # fmt: skip
    yield from single("e2m1f_float32_t16 stochastic bits", "e2m1f_float32_t16", ROWS, F32,
                      roundmode="stochastic", rs=2)  # fmt: skip
    yield from single("nvfp4 given", "nvfp4", ROWS, castmode="virtual", given=True)
    yield from single("mxfp4 compress", "mxfp4", ROWS, castmode="compress")
    yield from single("mxfp8 actual", "mxfp8", ROWS)
    h32 = tcast.Hadamard.seeded(32, 0)
    yield from single("nvfp4 amax pass RHT-16", "nvfp4", ROWS, amax=True,
                      transform=tcast.Hadamard.te_wgrad())  # fmt: skip
    yield from single("mxfp4 compress RHT-32", "mxfp4", ROWS, castmode="compress", transform=h32)
    yield from single("mxfp4 columns RHT-32", column_datatype(tcast.datatype("mxfp4")), ROWS,
                      transform=h32)  # fmt: skip
    yield from single("mxfp6e3 actual", "mxfp6e3", ROWS, F32)
    yield from single("mxfp8_2d actual", "mxfp8_2d", ROWS)
    yield from single("int8 sparse columns virtual", column_datatype(
        tcast.datatype("int8_float32_t16n2m8")), ROWS, F32, "virtual")  # fmt: skip
    yield from dual("uint4 zero dual virtual", "uint4_float32_float32_t32", ROWS, F16, "virtual",
                    kernel="_cast_dual")  # fmt: skip
    yield from dual("mxfp6e3 dual", "mxfp6e3", ODD, F32, kernel="_cast_dual")
    yield from dual("mxfp4 dual stochastic", "mxfp4", ROWS, F32, roundmode="stochastic",
                    kernel="_cast_dual")  # fmt: skip
    yield from upcast("uint4 zero upcast", "uint4_float32_float32_t32", ROWS)
    yield from upcast("mxint8 upcast columns", column_datatype(tcast.datatype("mxint8")), ROWS)
    yield from upcast("int8 channel upcast", "int8_float32_t0", (4, 2048))
    yield from upcast("e4m3fn tensor scale upcast", "e4m3fn_float32", ROWS)
    yield from upcast("e2m1f compress upcast", "e2m1f", ROWS, "compress")
    yield from pack("3-bit", 3)


def full_cases() -> Iterator[Compile]:
    """Every catalog datatype the engine supports x cast mode, rows and columns, bfloat16.

    And the upcast of each actual and compress result.
    """
    engine = TritonEngine()
    for name in tcast.CATALOG:
        with warnings.catch_warnings():  # names that warn of a likelier spelling
            warnings.simplefilter("ignore")
            dt = tcast.datatype(name)
        for castmode in ("virtual", "actual", "compress"):
            if not engine.supports(dt, tcast.CastModes.of(castmode)):
                continue
            tiles = dt.sspec is not None and len(dt.sspec.tiles) == 1
            yield from single(f"{name} {castmode}", dt, ROWS, castmode=castmode)
            if tiles:
                col = column_datatype(dt)
                yield from single(f"{name} {castmode} columns", col, ODD, castmode=castmode)
            if castmode != "virtual" and _upcast.upcast_supported(dt):
                yield from upcast(f"{name} {castmode} upcast", dt, ROWS, castmode)
                if tiles:
                    col = column_datatype(dt)
                    yield from upcast(f"{name} {castmode} upcast columns", col, ROWS, castmode)


def _key(kernel, args: dict, kw: dict) -> tuple:
    """What a compile depends on: a case that compiles the same thing again is skipped."""
    a = tuple((k, str(v.dtype) if isinstance(v, torch.Tensor) else v) for k, v in args.items())
    return (kernel.__name__, a, tuple(sorted((k, repr(v)) for k, v in kw.items())))


def run(sources: list[Callable[[], Iterator[Compile]]], dump: str = "", shard: str = "0/1") -> int:
    """Compile each case both ways and print its line; the number of cases that differ.

    A case that compiles what an earlier one compiled is skipped. ``dump``: a folder to
    write each case's listing without contraction to (``case.sass``), to compare kernels
    before and after a change. ``shard``: ``k/n`` compiles the ``k``-th of every ``n``
    distinct cases (``n`` processes share a sweep).
    """
    k, n = (int(v) for v in shard.split("/"))
    failed = 0
    seen: set = set()
    for label, kernel, args, kw in (case for source in sources for case in source()):
        key = _key(kernel, args, kw)
        if key in seen:
            continue
        seen.add(key)
        if (len(seen) - 1) % n != k:
            continue
        row = {"case": label, "kernel": kernel.__name__}
        start = time.perf_counter()
        try:
            # a run-time argument left out would be compiled as a constant (its default)
            missing = [p.name for p in kernel.params if not p.is_constexpr and p.name not in args]
            if missing:
                raise AssertionError(f"run-time arguments not given: {missing}")
            off = compile_sass(kernel, args, {**kw, "enable_fp_fusion": False}, kw["num_warps"])
            on = compile_sass(kernel, args, {**kw, "enable_fp_fusion": True}, kw["num_warps"])
        except Exception as err:  # report every case, then fail
            failed += 1
            lines = [line for line in str(err).splitlines() if line.strip()] or [""]
            row["error"] = f"{type(err).__name__}: {lines[-1][:300]}"
            print(json.dumps(row), flush=True)
            continue
        if dump:
            name = re.sub(r"[^\w.-]+", "_", label)
            Path(dump, f"{name}.sass").write_text(off)
        row["same"] = off == on
        row["ffma"] = [len(_FFMA.findall(off)), len(_FFMA.findall(on))]
        row["scaled_fmul"] = [len(_SCALED.findall(off)), len(_SCALED.findall(on))]
        row["instructions"] = [off.count("\n"), on.count("\n")]
        row["seconds"] = round(time.perf_counter() - start, 1)
        failed += not row["same"]
        print(json.dumps(row), flush=True)
    return failed


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true", help="also every catalog datatype")
    ap.add_argument("--dump", default="", help="write the listings without contraction here")
    ap.add_argument("--shard", default="0/1", help="k/n: the k-th of every n cases")
    a = ap.parse_args()
    if a.dump:
        Path(a.dump).mkdir(parents=True, exist_ok=True)
    # the launchers' answer on an sm_90 GPU, without one
    for module in (_launch, _launch_2d, _launch_dual):
        module.hw_fp8 = lambda device: True
    sources = [cases, more_cases, full_cases] if a.full else [cases]
    return 1 if run(sources, a.dump, a.shard) else 0


if __name__ == "__main__":
    sys.exit(main())
