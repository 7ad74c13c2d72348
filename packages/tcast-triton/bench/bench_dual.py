"""Benchmark of ``cast_dual`` and blocked scales on a GPU (not a test).

For each size (bfloat16, square), timed with ``triton.testing.do_bench`` (median ms) in one
run: a device-to-device copy of the input (the baseline), ``tcast_triton.cast_dual`` (one
kernel), two separate ``tcast_triton.cast`` calls (row tiles, then column tiles ``d-2``) and
torchao's Triton kernels ``triton_to_mxfp8_dim0`` + ``triton_to_mxfp8_dim1`` (the sm_100 gate
patched so they compile on Hopper; dim1 writes the transposed layout, as ``transposed=True``
does). "of copy" is the dual cast's bandwidth counting the bytes it must move (the input
once, both results written) over the copy's (read + write of the input). Each dual row says
whether its bits equal the two single casts'. Then the Gluon kernels against the Triton
kernel (``_launch_dual.GLUON_ENABLED`` off; MXFP8 through both Gluon kernels, one layout and
two) for the casts they serve, the scale stores' L2 eviction policy against none, the cost
of blocked scales (single and dual casts, plain vs ``scale_layout="blocked"``), and with
``--sweep``, ``--sweep-pairs``, ``--sweep-gluon`` the kernels' block and warp tunables.

    python packages/tcast-triton/bench/bench_dual.py [--sizes 8192,16384] [--rep 100] [--sweep]
        [--sweep-pairs] [--sweep-gluon one|hw|pairs [--gluon-configs ...]] [--no-pairs]
        [--no-gluon] [--two-level]
"""

from __future__ import annotations

import argparse
import itertools
import platform

import torch
import triton
from triton.testing import do_bench

import tcast
import tcast_triton
from tcast_triton import _launch, _launch_dual

DUALS = [
    ("mxfp8 actual", "mxfp8", {}),
    ("mxfp8 actual, transposed", "mxfp8", {"transposed": True}),
    ("mxfp4 actual", "mxfp4", {}),
    ("mxfp4 actual, transposed", "mxfp4", {"transposed": True}),
    ("nvfp4 actual", "nvfp4", {}),
    ("nvfp4 actual, transposed", "nvfp4", {"transposed": True}),
    ("mxfp8 virtual", "mxfp8", {"castmode": "virtual"}),
    # seeded stochastic rounding: rows draw Philox stream 0, columns stream 1
    ("mxfp8 actual, stochastic seed", "mxfp8", {"roundmode": "stochastic", "seed": 1}),
    ("mxfp4 actual, stochastic seed", "mxfp4", {"roundmode": "stochastic", "seed": 1}),
    ("nvfp4 actual, stochastic seed", "nvfp4", {"roundmode": "stochastic", "seed": 1}),
]
BLOCKED = [
    ("mxfp8 actual", "mxfp8"),
    ("mxfp4 actual", "mxfp4"),
    ("nvfp4 actual", "nvfp4"),
]


def _parts(out) -> list[torch.Tensor]:
    outs = out if isinstance(out, tuple) else (out,)
    parts = []
    for o in outs:
        if isinstance(o, torch.Tensor):
            parts.append(o)
        else:
            parts += [p for p in (o.data, o.scale, o.zero, o.tenscale, o.mask) if p is not None]
    return parts


def _bytes(out) -> int:
    return sum(p.numel() * p.element_size() for p in _parts(out))


def _same(a, b) -> bool:
    pa = [p.reshape(-1).contiguous().view(torch.uint8) for p in _parts(a)]
    pb = [p.reshape(-1).contiguous().view(torch.uint8) for p in _parts(b)]
    return len(pa) == len(pb) and all(torch.equal(p, q) for p, q in zip(pa, pb, strict=True))


def _ms(fn, rep: int) -> float:
    return do_bench(fn, warmup=25, rep=rep, return_mode="median")


def _torchao():
    """(version, dim0, dim1) with the sm_100 gate of torchao's Triton kernels patched."""
    try:
        import torchao
        import torchao.utils as ao_utils
    except ImportError:
        return "not installed", None, None
    real = ao_utils.is_sm_at_least_100
    ao_utils.is_sm_at_least_100 = lambda: True
    try:
        from torchao.prototype.mx_formats import kernels
    finally:
        ao_utils.is_sm_at_least_100 = real
    return (
        torchao.__version__,
        getattr(kernels, "triton_to_mxfp8_dim0", None),
        getattr(kernels, "triton_to_mxfp8_dim1", None),
    )


def _two_casts(x, code, kw):
    """The row and the column cast of ``x`` by two single casts (column tiles ``d-2``)."""
    cols = tcast.kit.column_datatype(tcast.datatype(code))
    kw = dict(kw)
    kw.pop("transposed", None)
    cm = kw.pop("castmode", "actual")
    a = tcast_triton.cast(x, code, castmode=cm, **kw)
    # a seeded column cast draws Philox stream 1 (SEMANTICS.md §8.2)
    stream = 1 if kw.get("seed") is not None else 0
    b = tcast_triton.cast(x, cols, castmode=cm, stream=stream, **kw)
    return a, b


def _table(x: torch.Tensor, rep: int, dim0, dim1) -> None:
    nbytes = x.numel() * x.element_size()
    t_copy = _ms(lambda: x.clone(), rep)
    copy_gbs = 2 * nbytes / (t_copy * 1e-3) / 1e9
    print(
        f"\n### {x.shape[0]} x {x.shape[1]} bfloat16, {torch.cuda.get_device_name()}: copy "
        f"{t_copy:.3f} ms = {copy_gbs:.0f} GB/s\n"
    )
    print("| dual cast | ms | GB/s | of copy | two tcast_triton casts ms | speed-up | same bits |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for label, code, kw in DUALS:
        full = {"castmode": "actual", **kw}

        def dual(code=code, full=full):
            return tcast_triton.cast_dual(x, code, **full)

        def two(code=code, full=full):
            return _two_casts(x, code, full)

        out = dual()
        t = _ms(dual, rep)
        t2 = _ms(two, rep)
        ref = two()
        if full.get("transposed"):
            ref = (ref[0], _transposed(ref[1]))
        gbs = (nbytes + _bytes(out)) / (t * 1e-3) / 1e9
        print(
            f"| {label} | {t:.3f} | {gbs:.0f} | {gbs / copy_gbs:.2f} | {t2:.3f} | "
            f"{t2 / t:.2f}x | {_same(out, ref)} |"
        )
    if dim0 is not None and dim1 is not None:
        try:
            t_ao = _ms(lambda: (dim0(x, 32, "floor"), dim1(x, 32, "floor")), rep)
            t_ours = _ms(lambda: tcast_triton.cast_dual(x, "mxfp8", transposed=True), rep)
            print(
                f"\ntorchao triton_to_mxfp8_dim0 + dim1 (floor): {t_ao:.3f} ms; "
                f"tcast_triton.cast_dual mxfp8 transposed: {t_ours:.3f} ms ({t_ao / t_ours:.2f}x)"
            )
        except Exception as err:  # the peer did not run here: say why
            print(f"\ntorchao dim0 + dim1: n/a ({type(err).__name__}: {str(err)[:80]})")
    print("\n| blocked scales | plain ms | blocked ms | cost |")
    print("|---|---:|---:|---:|")
    for label, code in BLOCKED:
        tp = _ms(lambda code=code: tcast_triton.cast(x, code, castmode="actual"), rep)
        tb = _ms(
            lambda code=code: tcast_triton.cast(x, code, castmode="actual", scale_layout="blocked"),
            rep,
        )
        print(f"| {label}, single | {tp:.3f} | {tb:.3f} | {tb / tp - 1:+.1%} |")
        tp = _ms(lambda code=code: tcast_triton.cast_dual(x, code, transposed=True), rep)
        tb = _ms(
            lambda code=code: tcast_triton.cast_dual(
                x, code, transposed=True, scale_layout="blocked"
            ),
            rep,
        )
        print(f"| {label}, dual transposed | {tp:.3f} | {tb:.3f} | {tb / tp - 1:+.1%} |")


#: The casts the Gluon kernel serves, in the Gluon-against-Triton table and its sweep.
GLUON_CASTS = (
    ("mxfp8", False),
    ("mxfp8", True),
    ("mxfp4", False),
    ("mxfp4", True),
)


def _timed_plan(x, code: str, transposed: bool, rep: int, **switches):
    """(ms, result, [(gluon, one_layout)] of the plans taken) with ``_launch_dual`` switches set."""
    saved = {k: getattr(_launch_dual, k) for k in switches}
    for k, v in switches.items():
        setattr(_launch_dual, k, v)
    _launch_dual._PLANS.clear()
    try:
        f = lambda: tcast_triton.cast_dual(x, code, transposed=transposed)  # noqa: E731
        out = f()
        taken = [(p.gluon, p.one_layout) for p in _launch_dual._PLANS.values()]
        return _ms(f, rep), out, taken
    finally:
        for k, v in saved.items():
            setattr(_launch_dual, k, v)
        _launch_dual._PLANS.clear()


def _gluon_table(x: torch.Tensor, rep: int) -> None:
    """The Gluon kernels and the Triton kernel on the same casts (same bits asserted).

    MXFP8 (the hardware FP8 conversion) through both Gluon kernels: one layout
    (``_kernels_dual_gl_hw``) and two (``_kernels_dual_gl``, ``GLUON_ONE_LAYOUT`` off).
    Then the scale stores' L2 eviction policy (``GLUON_SCALE_EVICT``) against none.
    """
    print("\n| dual kernel | Gluon ms | Gluon, two layouts ms | Triton ms | Triton / Gluon "
          "| same bits |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---|")
    for code, tr in GLUON_CASTS:
        runs = [
            _timed_plan(x, code, tr, rep, GLUON_ENABLED=True),
            _timed_plan(x, code, tr, rep, GLUON_ENABLED=True, GLUON_ONE_LAYOUT=False),
            _timed_plan(x, code, tr, rep, GLUON_ENABLED=False),
        ]
        hw = code == "mxfp8"
        kernels = [[(True, hw)], [(True, False)], [(False, False)]]
        same = all(_same(runs[0][1], r[1]) for r in runs[1:])
        same = same and [r[2] for r in runs] == kernels
        label = f"{code}{', transposed' if tr else ''}"
        two = f"{runs[1][0]:.3f}" if hw else "(the same kernel)"
        print(
            f"| {label} | {runs[0][0]:.3f} | {two} | {runs[2][0]:.3f} | "
            f"{runs[2][0] / runs[0][0]:.2f}x | {same} |"
        )
    print("\n| scale stores' eviction policy | ms | ms without | cost without | same bits |")
    print("|---|---:|---:|---:|---|")
    for code, tr in GLUON_CASTS:
        t1, a, k1 = _timed_plan(x, code, tr, rep, GLUON_ENABLED=True)
        t0, b, k0 = _timed_plan(x, code, tr, rep, GLUON_ENABLED=True, GLUON_SCALE_EVICT="")
        same = _same(a, b) and k1 == k0 == [(True, code == "mxfp8")]
        label = f"{code}{', transposed' if tr else ''} ({_launch_dual.GLUON_SCALE_EVICT})"
        print(f"| {label} | {t1:.3f} | {t0:.3f} | {t0 / t1 - 1:+.1%} | {same} |")


def _sweep_gluon(x: torch.Tensor, rep: int, family: str, configs: str | None) -> None:
    """The Gluon kernels' tunables (``_launch_dual.GLUON_HW_ONE``, ``GLUON_HW``, ``GLUON_PAIRS``).

    ``family``: ``one`` (MXFP8 through ``_kernels_dual_gl_hw``: ``"BN,W,TT,VC ..."``), ``hw``
    (MXFP8 through ``_kernels_dual_gl``, ``GLUON_ONE_LAYOUT`` off) or ``pairs`` (MXFP4);
    for the last two ``configs`` is ``"BN,W,CT,CV,RV[,ONCE] ..."`` (space-separated), a sixth
    field 0 reading the column phase's block again from L2. Without ``configs``, a default
    grid. Each row's bits are compared with the Triton kernel's.
    """
    if family == "one":
        _sweep_one_layout(x, rep, configs)
        return
    code = "mxfp8" if family == "hw" else "mxfp4"
    widths = (8, 16) if family == "hw" else (4, 8)
    if configs:
        grid = [tuple(int(v) for v in c.split(",")) for c in configs.split()]
    else:
        grid = list(itertools.product((256, 512), (4, 8), (4,), widths, widths))
    print(
        f"\n| Gluon kernel ({code}) BN, W, CT, CV, RV, ONCE "
        "| plain ms | transposed ms | same bits |"
    )
    print("|---|---:|---:|---|")
    name = "GLUON_HW" if family == "hw" else "GLUON_PAIRS"
    saved = getattr(_launch_dual, name), _launch_dual.GLUON_ONCE, _launch_dual.GLUON_ENABLED
    one_layout = _launch_dual.GLUON_ONE_LAYOUT
    _launch_dual.GLUON_ONE_LAYOUT = False
    _launch_dual.GLUON_ENABLED = False
    _launch_dual._PLANS.clear()
    base = [tcast_triton.cast_dual(x, code, transposed=tr) for tr in (False, True)]
    _launch_dual.GLUON_ENABLED = True
    for cfg in grid:
        setattr(_launch_dual, name, cfg[:5])
        _launch_dual.GLUON_ONCE = bool(cfg[5]) if len(cfg) > 5 else saved[1]
        _launch_dual._PLANS.clear()
        row, same = [], True
        for tr, b in zip((False, True), base, strict=True):
            try:
                f = lambda t=tr: tcast_triton.cast_dual(x, code, transposed=t)  # noqa: E731
                same = same and _same(f(), b)
                row.append(f"{_ms(f, rep):.3f}")
            except Exception as err:  # a configuration the layouts refuse: say why
                row.append(f"n/a ({type(err).__name__})")
        if any(not c.startswith("n/a") for c in row):
            label = ", ".join(str(v) for v in cfg[:5]) + f", {_launch_dual.GLUON_ONCE}"
            print(f"| {label} | " + " | ".join(row) + f" | {same} |")
    setattr(_launch_dual, name, saved[0])
    _launch_dual.GLUON_ONCE, _launch_dual.GLUON_ENABLED = saved[1], saved[2]
    _launch_dual.GLUON_ONE_LAYOUT = one_layout
    _launch_dual._PLANS.clear()


def _sweep_one_layout(x: torch.Tensor, rep: int, configs: str | None) -> None:
    """``_kernels_dual_gl_hw``'s tunables (BN, W, TT, VC; W * TT = BN / 32), MXFP8."""
    if configs:
        grid = [tuple(int(v) for v in c.split(",")) for c in configs.split()]
    else:
        grid = [(256, 4, 2, 8), (256, 4, 2, 16), (256, 8, 1, 8), (512, 8, 2, 8), (512, 4, 4, 8)]
    print(
        "\n| Gluon one-layout kernel (mxfp8) BN, W, TT, VC | plain ms | transposed ms | same bits |"
    )
    print("|---|---:|---:|---|")
    base = [_timed_plan(x, "mxfp8", tr, 1, GLUON_ENABLED=False)[1] for tr in (False, True)]
    on = {"GLUON_ENABLED": True, "GLUON_ONE_LAYOUT": True}
    for cfg in grid:
        row, same = [], True
        for tr, b in zip((False, True), base, strict=True):
            try:
                ms, out, taken = _timed_plan(x, "mxfp8", tr, rep, GLUON_HW_ONE=cfg, **on)
                same = same and _same(out, b) and taken == [(True, True)]
                row.append(f"{ms:.3f}")
            except Exception as err:  # a configuration the layouts refuse: say why
                same = False
                row.append(f"n/a ({type(err).__name__})")
        print(f"| {', '.join(str(v) for v in cfg)} | " + " | ".join(row) + f" | {same} |")


def _transposed(r):
    import dataclasses

    return dataclasses.replace(
        r,
        data=r.data.transpose(-1, -2).contiguous(),
        scale=r.scale.transpose(-1, -2).contiguous(),
    )


def _sweep(x: torch.Tensor, rep: int) -> None:
    print(
        "\n| dual kernel elements, warps | mxfp8 ms | mxfp8 transposed ms "
        "| mxfp4 transposed ms | nvfp4 transposed ms |"
    )
    print("|---|---:|---:|---:|---:|")
    names = (
        "DUAL_ELEMS",
        "DUAL_ELEMS_HW",
        "DUAL_WARPS",
        "DUAL_WARPS_NARROW",
    )
    saved = tuple(getattr(_launch_dual, k) for k in names)
    cases = (("mxfp8", False), ("mxfp8", True), ("mxfp4", True), ("nvfp4", True))
    gluon = _launch_dual.GLUON_ENABLED
    _launch_dual.GLUON_ENABLED = False  # these tunables are the Triton kernel's
    for elems, w in itertools.product((2048, 4096, 8192), (1, 2, 4)):
        for k, v in zip(names, (elems, elems, w, w), strict=True):
            setattr(_launch_dual, k, v)
        _launch_dual._PLANS.clear()
        row = []
        for code, tr in cases:
            try:
                f = lambda c=code, t=tr: tcast_triton.cast_dual(x, c, transposed=t)  # noqa: E731
                row.append(f"{_ms(f, rep):.3f}")
            except Exception as err:  # a configuration that does not compile: say why
                row.append(f"n/a ({type(err).__name__})")
        print(f"| {elems}, {w} | " + " | ".join(row) + " |")
    for k, v in zip(names, saved, strict=True):
        setattr(_launch_dual, k, v)
    _launch_dual.GLUON_ENABLED = gluon
    _launch_dual._PLANS.clear()


def _two_level(x: torch.Tensor, rep: int) -> None:
    """NVFP4 ``cast_dual`` by the dual kernel and by one amax pass + the two single kernels."""
    print("\n| nvfp4 cast_dual | dual kernel ms | shared amax + single kernels ms | same bits |")
    print("|---|---:|---:|---|")
    saved = _launch_dual.DUAL_TWO_LEVEL, _launch_dual.dual_kernel_takes
    for label, kw in (
        ("actual", {}),
        ("virtual", {"castmode": "virtual"}),
        ("actual, transposed", {"transposed": True}),
        ("actual, transposed, blocked", {"transposed": True, "scale_layout": "blocked"}),
    ):
        cells = {}
        for kernel in (True, False):
            # the kernel, or the engine's shared path in every mode (the engine routes only
            # codes in x's layout with plain scales there: ``dual_kernel_takes``)
            _launch_dual.DUAL_TWO_LEVEL = kernel
            _launch_dual.dual_kernel_takes = saved[1] if kernel else (lambda rows, tr: False)
            _launch_dual._PLANS.clear()
            f = lambda kw=kw: tcast_triton.cast_dual(x, "nvfp4", **kw)  # noqa: E731
            cells[kernel] = (_ms(f, rep), f())
        same = _same(cells[True][1], cells[False][1])
        print(f"| {label} | {cells[True][0]:.3f} | {cells[False][0]:.3f} | {same} |")
    _launch_dual.DUAL_TWO_LEVEL, _launch_dual.dual_kernel_takes = saved
    _launch_dual._PLANS.clear()


def _sweep_pairs(x: torch.Tensor, rep: int) -> None:
    """The bfloat16-pair path's block elements and warps (MXFP4, MXFP6)."""
    print(
        "\n| pair path elements, warps | mxfp4 ms | mxfp4 transposed ms | mxfp6e2 ms | same bits |"
    )
    print("|---|---:|---:|---:|---|")
    names = ("DUAL_ELEMS_PAIRS", "DUAL_WARPS_PAIRS")
    saved = tuple(getattr(_launch_dual, k) for k in names)
    cases = (("mxfp4", False), ("mxfp4", True), ("mxfp6e2", False))
    gluon = _launch_dual.GLUON_ENABLED
    _launch_dual.GLUON_ENABLED = False  # these tunables are the Triton kernel's
    _launch.PAIRS_ENABLED = False
    _launch_dual._PLANS.clear()
    base = [tcast_triton.cast_dual(x, c, transposed=t) for c, t in cases]
    _launch.PAIRS_ENABLED = True
    for elems, w in itertools.product((2048, 4096, 8192), (1, 2, 4)):
        for k, v in zip(names, (elems, w), strict=True):
            setattr(_launch_dual, k, v)
        _launch_dual._PLANS.clear()
        row, same = [], True
        for (code, tr), b in zip(cases, base, strict=True):
            f = lambda c=code, t=tr: tcast_triton.cast_dual(x, c, transposed=t)  # noqa: E731
            same = same and _same(f(), b)
            row.append(f"{_ms(f, rep):.3f}")
        print(f"| {elems}, {w} | " + " | ".join(row) + f" | {same} |")
    for k, v in zip(names, saved, strict=True):
        setattr(_launch_dual, k, v)
    _launch_dual.GLUON_ENABLED = gluon
    _launch_dual._PLANS.clear()


def main() -> None:
    """Time every dual cast and print the tables."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="8192,16384")
    ap.add_argument("--rep", type=int, default=100, help="do_bench repetition time, ms")
    ap.add_argument("--sweep", action="store_true", help="sweep the dual kernel's tunables")
    ap.add_argument("--sweep-pairs", action="store_true", help="sweep the pair path's tunables")
    ap.add_argument(
        "--two-level",
        action="store_true",
        help="NVFP4: the dual kernel against the shared amax pass + single kernels",
    )
    ap.add_argument(
        "--no-pairs", action="store_true", help="turn the bfloat16-pair encoder off (baseline)"
    )
    ap.add_argument(
        "--sweep-gluon",
        choices=("one", "hw", "pairs"),
        help="sweep the Gluon kernels' tunables: MXFP8 one layout (one), MXFP8 two layouts "
        "(hw), MXFP4 (pairs)",
    )
    ap.add_argument(
        "--gluon-configs",
        help='with --sweep-gluon: "BN,W,TT,VC ..." (one) or "BN,W,CT,CV,RV[,ONCE] ..." '
        "instead of the default grid",
    )
    ap.add_argument(
        "--no-gluon", action="store_true", help="turn the Gluon dual kernel off (baseline)"
    )
    args = ap.parse_args()
    _launch.PAIRS_ENABLED = not args.no_pairs
    _launch_dual.GLUON_ENABLED = not args.no_gluon
    ao_version, dim0, dim1 = _torchao()
    print(
        f"GPU {torch.cuda.get_device_name()}; torch {torch.__version__}; triton "
        f"{triton.__version__}; torchao {ao_version}; tcast-triton "
        f"{tcast_triton.__version__}; Python {platform.python_version()}"
    )
    print(
        f"timing: do_bench median (ms); input bfloat16 randn * 2^k rows; dual kernel "
        f"{_launch_dual.DUAL_ELEMS} elements ({_launch_dual.DUAL_ELEMS_HW} for hardware FP8), "
        f"{_launch_dual.DUAL_WARPS} warps per program "
        f"({_launch_dual.DUAL_WARPS_NARROW} for tiles under 32); bfloat16-pair encoder "
        f"{'on' if _launch.PAIRS_ENABLED else 'off'} "
        f"({_launch_dual.DUAL_ELEMS_PAIRS} elements, {_launch_dual.DUAL_WARPS_PAIRS} warps); "
        f"Gluon kernels {'on' if _launch_dual.GLUON_ENABLED else 'off'}: hardware FP8 "
        f"{'one layout' if _launch_dual.GLUON_ONE_LAYOUT else 'two layouts'} (one layout BN, "
        f"W, TT, VC {_launch_dual.GLUON_HW_ONE}; two layouts BN, W, CT, CV, RV "
        f"{_launch_dual.GLUON_HW}), pairs {_launch_dual.GLUON_PAIRS}; column phase from "
        f"registers {_launch_dual.GLUON_ONCE}; scale stores {_launch_dual.GLUON_SCALE_EVICT!r}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        g = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(size, size, device="cuda", generator=g)
        x = x * torch.exp2(torch.randint(-20, 20, (size, 1), device="cuda", generator=g))
        x = x.to(torch.bfloat16)
        _table(x, args.rep, dim0, dim1)
        if _launch_dual.GLUON_ENABLED:
            _gluon_table(x, args.rep)
        if args.sweep and size == max(int(s) for s in args.sizes.split(",")):
            _sweep(x, args.rep)
        if args.sweep_pairs and size == max(int(s) for s in args.sizes.split(",")):
            _sweep_pairs(x, args.rep)
        if args.sweep_gluon and size == max(int(s) for s in args.sizes.split(",")):
            _sweep_gluon(x, args.rep, args.sweep_gluon, args.gluon_configs)
        if args.two_level and size == max(int(s) for s in args.sizes.split(",")):
            _two_level(x, args.rep)
        del x
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
