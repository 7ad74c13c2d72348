"""Benchmark of the Triton engine on a GPU (not a test), beside a copy, tcast-torch and torchao.

For each size (bfloat16, square) every cast below is timed with ``triton.testing.do_bench``
(median ms, L2 flushed between runs), beside, in the same run: a device-to-device copy of the
input (``x.clone()``), ``tcast_torch.cast`` inside ``torch.compile`` on the same cast, and
torchao's compiled ``to_mx`` and its Triton kernels ``triton_to_mxfp8_dim0`` / ``dim1``
(upstream builds them only on sm_100; the gate is patched here so that they compile on
Hopper, as triton-peers.md describes). GB/s counts bytes read (the input once; twice for
the casts whose tensor-scale pass reads it again is *not* added: the figure is the
useful bytes) plus bytes written (the result's tensors). Each row also says whether the
Triton result has the same bits as tcast_torch's (the torch engine is conformance-tested
against tcast_ref). Then the upcast rows (``UPCASTS``): ``tcast_triton.upcast`` of a Triton
result beside ``tcast_torch.upcast`` of the same result (GB/s: the result's tensors read plus
the float32 output written). Ends with the per-call CPU overhead on a 4096 x 4096 input.

    python packages/tcast-triton/bench/bench_triton.py [--sizes 8192,16384] [--rep 100]
"""

from __future__ import annotations

import argparse
import platform

import torch
import triton
from _timing import host_us
from triton.testing import do_bench

import tcast
import tcast_torch
import tcast_triton

# (label, datatype, cast keyword arguments); the column cast tiles along dim 0
CASTS: list[tuple[str, str, dict]] = [
    ("mxfp8 virtual", "mxfp8", {"castmode": "virtual"}),
    ("mxfp8 actual", "mxfp8", {"castmode": "actual"}),
    ("mxfp8 compress", "mxfp8", {"castmode": "compress"}),
    ("mxfp6 e2m3 actual", "e2m3f_e8m0_t32", {"castmode": "actual"}),
    ("mxfp6 e2m3 compress", "e2m3f_e8m0_t32", {"castmode": "compress"}),
    ("mxfp4 virtual", "mxfp4", {"castmode": "virtual"}),
    ("mxfp4 actual", "mxfp4", {"castmode": "actual"}),
    ("mxfp4 compress", "mxfp4", {"castmode": "compress"}),
    ("mxint8 actual", "mxint8", {"castmode": "actual"}),
    (
        "mxfp8 actual, away/ceil",
        "mxfp8",
        {"castmode": "actual", "roundmode": "away", "scalemode": "ceil"},
    ),
    (
        "mxfp8 actual, trunc/midmax",
        "mxfp8",
        {"castmode": "actual", "roundmode": "trunc", "scalemode": "midmax"},
    ),
    (
        "mxfp4 actual, zero/topbinade",
        "mxfp4",
        {"castmode": "actual", "roundmode": "zero", "scalemode": "topbinade"},
    ),
    ("mxfp8 actual, column (t32d0)", "e4m3fn_e8m0_t32d0", {"castmode": "actual"}),
    ("mxfp4 actual, column (t32d0)", "e2m1f_e8m0_t32d0", {"castmode": "actual"}),
    ("nvfp4 virtual", "nvfp4", {"castmode": "virtual"}),
    ("nvfp4 actual", "nvfp4", {"castmode": "actual"}),
    # a Hadamard transform fused into the cast kernel (SEMANTICS.md §5.11)
    (
        "nvfp4 actual, RHT-16",
        "nvfp4",
        {"castmode": "actual", "transform": tcast.Hadamard.te_wgrad()},
    ),
    (
        "mxfp4 actual, RHT-32",
        "mxfp4",
        {"castmode": "actual", "transform": tcast.Hadamard.seeded(32, 1)},
    ),
    (
        "mxfp4 actual, column (t32d0), RHT-32",
        "e2m1f_e8m0_t32d0",
        {"castmode": "actual", "transform": tcast.Hadamard.seeded(32, 1)},
    ),
    (
        "nvfp4 actual, column (t16d0), RHT-16",
        "e2m1f_e4m3fn_float32_t16d0",
        {"castmode": "actual", "transform": tcast.Hadamard.te_wgrad()},
    ),
    (
        "mxfp8 actual, stochastic seed",
        "mxfp8",
        {"castmode": "actual", "roundmode": "stochastic", "seed": 1},
    ),
    (
        "mxfp4 actual, stochastic seed",
        "mxfp4",
        {"castmode": "actual", "roundmode": "stochastic", "seed": 1},
    ),
    (
        "nvfp4 actual, stochastic seed",
        "nvfp4",
        {"castmode": "actual", "roundmode": "stochastic", "seed": 1},
    ),
    ("int8 per-token (t0) actual", "int8_float32_t0", {"castmode": "actual"}),
    ("mxfp8 2-D 32x32 actual", "mxfp8_2d", {"castmode": "actual"}),
]
# upcast rows: (label, datatype, cast mode of the result decoded by tcast_triton.upcast)
UPCASTS: list[tuple[str, str, str]] = [
    ("mxfp8 upcast (actual)", "mxfp8", "actual"),
    ("mxfp4 upcast (actual)", "mxfp4", "actual"),
    ("mxfp4 upcast (compress)", "mxfp4", "compress"),
    ("mxfp6 e2m3 upcast (compress)", "e2m3f_e8m0_t32", "compress"),
    ("nvfp4 upcast (actual)", "nvfp4", "actual"),
]


def _parts(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    return [
        p
        for p in (out.data, out.scale, out.zero, out.tenscale, out.mask)
        if isinstance(p, torch.Tensor)
    ]


def _written(out) -> int:
    return sum(p.numel() * p.element_size() for p in _parts(out))


def _bits(out) -> list[torch.Tensor]:
    return [p.reshape(-1).contiguous().view(torch.uint8) for p in _parts(out)]


def _same(a, b) -> bool:
    pa, pb = _bits(a), _bits(b)
    return len(pa) == len(pb) and all(torch.equal(p, q) for p, q in zip(pa, pb, strict=True))


def _ms(fn, rep: int) -> float:
    return do_bench(fn, warmup=25, rep=rep, return_mode="median")


def _graph_ms(fn, rep: int) -> str:
    """GPU time alone: the cast captured in a CUDA graph, replayed (no host overhead)."""
    try:
        fn()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        return f"{_ms(g.replay, rep):.3f}"
    except Exception as err:  # capture is not possible for every cast: say why
        return f"n/a ({type(err).__name__})"


def _torchao():
    """(version, to_mx, dim0, dim1) with the sm_100 gate of the Triton kernels patched."""
    try:
        import torchao
        import torchao.utils as ao_utils
    except ImportError:
        return "not installed", None, None, None
    real = ao_utils.is_sm_at_least_100
    ao_utils.is_sm_at_least_100 = lambda: True  # read once, when kernels.py is imported
    try:
        from torchao.prototype.mx_formats import kernels
        from torchao.prototype.mx_formats.mx_tensor import to_mx
    finally:
        ao_utils.is_sm_at_least_100 = real
    dim0 = getattr(kernels, "triton_to_mxfp8_dim0", None)
    dim1 = getattr(kernels, "triton_to_mxfp8_dim1", None)
    return torchao.__version__, to_mx, dim0, dim1


def _try(fn, rep: int) -> str:
    try:
        fn()
        return f"{_ms(fn, rep):.3f}"
    except Exception as err:  # a peer that does not run here: say why
        return f"n/a ({type(err).__name__}: {str(err).splitlines()[0][:60]})"


def main() -> None:
    """Time every cast and print the tables."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="8192,16384")
    ap.add_argument("--rep", type=int, default=100, help="do_bench repetition time, ms")
    ap.add_argument("--casts", default="", help="';'-separated labels to run (default: all)")
    ap.add_argument(
        "--no-torch", action="store_true", help="skip tcast_torch compiled (and its bit check)"
    )
    args = ap.parse_args()
    if args.casts:
        wanted = {c.strip() for c in args.casts.split(";")}
        CASTS[:] = [c for c in CASTS if c[0] in wanted]
        UPCASTS[:] = [c for c in UPCASTS if c[0] in wanted]
    ao_version, to_mx, dim0, dim1 = _torchao()
    print(
        f"GPU {torch.cuda.get_device_name()}; torch {torch.__version__}; triton "
        f"{triton.__version__}; torchao {ao_version}; tcast-triton "
        f"{tcast_triton.__version__}; Python {platform.python_version()}"
    )
    print("timing: triton.testing.do_bench median (ms); input bfloat16 torch.randn * 2^k rows")
    for size in (int(s) for s in args.sizes.split(",")):
        g = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(size, size, device="cuda", generator=g)
        x = x * torch.exp2(torch.randint(-20, 20, (size, 1), device="cuda", generator=g))
        _table(x.to(torch.bfloat16), args.rep, to_mx, dim0, dim1, not args.no_torch)
        del x
        torch.cuda.empty_cache()
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    print("\nper-call CPU overhead, 4096 x 4096 bfloat16 (host us per call, 200 calls):")
    print(
        f"- tcast_triton.cast mxfp8 actual: "
        f"{host_us(lambda: tcast_triton.cast(x, 'mxfp8', castmode='actual')):.1f}"
    )
    print(f"- tcast.cast mxfp8 actual (front door): {host_us(lambda: _front(x)):.1f}")
    if dim0 is not None:
        try:
            print(f"- torchao triton_to_mxfp8_dim0: {host_us(lambda: dim0(x, 32, 'floor')):.1f}")
        except Exception as err:  # the peer did not run here
            print(f"- torchao triton_to_mxfp8_dim0: n/a ({type(err).__name__})")


def _table(x: torch.Tensor, rep: int, to_mx, dim0, dim1, torch_too: bool = True) -> None:
    """One size: every cast, then the peers."""
    nbytes = x.numel() * x.element_size()
    t_copy = _ms(lambda: x.clone(), rep)
    copy_gbs = 2 * nbytes / (t_copy * 1e-3) / 1e9
    print(
        f"\n### {x.shape[0]} x {x.shape[1]} bfloat16, {torch.cuda.get_device_name()}: copy "
        f"{t_copy:.3f} ms = {copy_gbs:.0f} GB/s\n"
    )
    print(
        "| cast | triton ms | GB/s | vs copy | triton in a CUDA graph ms | "
        "same bits as tcast_torch | tcast_torch compiled ms | torch / triton |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, code, kw in CASTS:

        def tri(code=code, kw=kw):
            return tcast_triton.cast(x, code, **kw)

        try:
            out = tri()
        except Exception as err:  # a datatype the engine refuses: say so, go on
            print(f"| {label} | not run: {type(err).__name__}: {err} | | | | | | |")
            continue
        t = _ms(tri, rep)
        gbs = (nbytes + _written(out)) / (t * 1e-3) / 1e9
        t_graph = _graph_ms(tri, rep)

        def ref(code=code, kw=kw):
            return tcast_torch.cast(x, code, **kw)

        if torch_too:
            torch._dynamo.reset()
            comp = torch.compile(ref)
            same = "yes" if _same(out, comp()) else "NO"
            t_torch = _ms(comp, rep)
            vs_torch = f"{t_torch:.3f} | {t_torch / t:.2f}"
        else:
            same, vs_torch = "not run", "not run | "
        print(
            f"| {label} | {t:.3f} | {gbs:.0f} | {gbs / copy_gbs:.2f} | {t_graph} | "
            f"{same} | {vs_torch} |",
            flush=True,
        )
        del out
    _upcast_table(x, copy_gbs, rep)
    peers = []
    if to_mx is not None:
        torch._dynamo.reset()
        f8 = torch.compile(lambda: to_mx(x, torch.float8_e4m3fn, 32))
        peers.append(f"torchao to_mx mxfp8 compiled {_try(f8, rep)}")
        torch._dynamo.reset()
        f4 = torch.compile(lambda: to_mx(x, torch.float4_e2m1fn_x2, 32))
        peers.append(f"torchao to_mx mxfp4 compiled {_try(f4, rep)}")
    if dim0 is not None:
        peers.append(f"triton_to_mxfp8_dim0 {_try(lambda: dim0(x, 32, 'floor'), rep)}")
        peers.append(f"triton_to_mxfp8_dim1 {_try(lambda: dim1(x, 32, 'floor'), rep)}")
    print("\npeers on the same input (ms): " + ("; ".join(peers) or "none"), flush=True)


def _upcast_table(x: torch.Tensor, copy_gbs: float, rep: int) -> None:
    """The upcast rows: the decode of a Triton result beside tcast_torch's decode."""
    if not UPCASTS:
        return
    print(
        "\n| upcast | triton ms | GB/s | vs copy | same bits as tcast_torch | "
        "tcast_torch ms | torch / triton |"
    )
    print("|---|---|---|---|---|---|---|")
    for label, code, mode in UPCASTS:
        r = tcast_triton.cast(x, code, castmode=mode)

        def up(r=r):
            return tcast_triton.upcast(r)

        try:
            out = up()
        except Exception as err:  # a result the engine cannot decode: say so, go on
            print(f"| {label} | not run: {type(err).__name__}: {err} | | | | | |")
            continue
        t = _ms(up, rep)
        # bytes read (the result's tensors) plus bytes written (float32)
        gbs = (_written(r) + out.numel() * 4) / (t * 1e-3) / 1e9
        same = torch.equal(out.view(torch.int32), tcast_torch.upcast(r).view(torch.int32))
        t_torch = _ms(lambda r=r: tcast_torch.upcast(r), rep)
        print(
            f"| {label} | {t:.3f} | {gbs:.0f} | {gbs / copy_gbs:.2f} | "
            f"{'yes' if same else 'NO'} | {t_torch:.3f} | {t_torch / t:.2f} |",
            flush=True,
        )
        del out, r


def _front(x):
    import tcast

    return tcast.cast(x, "mxfp8", castmode="actual")


if __name__ == "__main__":
    main()
