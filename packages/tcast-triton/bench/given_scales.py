"""Casts with given scale parts (SEMANTICS.md §5.12) beside a device copy (not a test).

For each size (bfloat16, square): MXFP8, MXFP4 and int8 per-token (``int8_float32_t0``) with
a given block scale, NVFP4 with a given tensor scale (one pass over the input: no tensor
amax) and with both scales given; actual casts, each timed with ``triton.testing.do_bench``
(median ms, L2 flushed between runs) beside, in the same run, a copy of the input
(``x.clone()``) and the same cast with computed scales. The given values are those the
computed cast chose, decoded (so the casts are the usual ones, their scales read instead of
derived). Two times per cast:

* ``engine ms``: ``tcast_triton.engine.cast(x, request)`` of a request made once, whose
  given values were checked when it was made: the kernels and the result;
* ``cast ms``: ``tcast_triton.cast(x, ..., scale=...)``, which checks the given values on
  every call (finite, not negative: a reduction read back, so the host waits for the GPU).

GB/s: the input and the given parts read plus the result's tensors written, over the engine
time; ``vs copy``: that over the copy's (the input read and written). Each row says whether
the result has the bits of ``tcast_torch.cast`` with the same given parts.

Without a GPU the script runs on CPU tensors under the Triton interpreter (it sets
``TRITON_INTERPRET=1`` before triton is imported) and times by the host clock: a check that
the script runs, not a benchmark.

    python packages/tcast-triton/bench/given_scales.py [--sizes 16384] [--rep 100]
    python packages/tcast-triton/bench/given_scales.py --sizes 64       # no GPU: a smoke run
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # after TRITON_INTERPRET is chosen
from triton.testing import do_bench

import tcast
import tcast_torch
import tcast_triton

# (label, datatype, the parts given)
CASTS: list[tuple[str, str, tuple[str, ...]]] = [
    ("mxfp8 actual, given scale", "mxfp8", ("scale",)),
    ("mxfp4 actual, given scale", "mxfp4", ("scale",)),
    ("int8 per-token (t0) actual, given scale", "int8_float32_t0", ("scale",)),
    ("nvfp4 actual, given tensor scale", "nvfp4", ("tensor_scale",)),
    ("nvfp4 actual, given scale and tensor scale", "nvfp4", ("scale", "tensor_scale")),
]


def _ms(fn, rep: int, cuda: bool) -> float:
    """Median ms of ``fn``: do_bench on a GPU, the host clock under the interpreter."""
    if cuda:
        return do_bench(fn, warmup=25, rep=rep, return_mode="median")
    fn()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


#: torch's dtypes of the float scale formats of :data:`CASTS` (their codes viewed as values)
_FLOAT_VIEWS = {"float32": torch.float32, "e4m3fn": torch.float8_e4m3fn}


def _values(codes: torch.Tensor, nspec: tcast.NumberSpec) -> torch.Tensor:
    """float32 values of scale codes of an exponent format (e8m0) or of :data:`_FLOAT_VIEWS`."""
    if nspec.is_exponent:
        return torch.exp2(codes.to(torch.float32) - nspec.bias)
    flat = codes.reshape(-1).view(_FLOAT_VIEWS[nspec.code])
    return flat.to(torch.float32).reshape(codes.shape)


def _given(x: torch.Tensor, code: str, parts: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """The given parts: the values of the scales the computed cast chose."""
    dt = tcast.datatype(code)
    r = tcast_triton.cast(x, dt, castmode="actual")
    out = {}
    if "scale" in parts:
        out["scale"] = _values(r.scale, dt.sspec.scale)
    if "tensor_scale" in parts:
        out["tensor_scale"] = _values(r.tenscale, dt.tenscale)
    return out


def _parts(out) -> list[torch.Tensor]:
    return [p for p in (out.data, out.scale, out.zero, out.tenscale) if p is not None]


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def _same(a, b) -> bool:
    pa, pb = _parts(a), _parts(b)
    return len(pa) == len(pb) and all(
        torch.equal(p.reshape(-1).view(torch.uint8), q.reshape(-1).view(torch.uint8))
        for p, q in zip(pa, pb, strict=True)
    )


def _table(x: torch.Tensor, rep: int, cuda: bool, torch_too: bool) -> None:
    nbytes = _nbytes([x])
    t_copy = _ms(lambda: x.clone(), rep, cuda)
    copy_gbs = 2 * nbytes / (t_copy * 1e-3) / 1e9
    print(
        f"\n### {x.shape[0]} x {x.shape[1]} bfloat16: copy {t_copy:.3f} ms = {copy_gbs:.0f} GB/s\n"
    )
    print(
        "| cast | engine ms | GB/s | vs copy | cast ms | computed scales ms | "
        "same bits as tcast_torch |"
    )
    print("|---|---|---|---|---|---|---|")
    eng = tcast_triton.engine
    for label, code, parts in CASTS:
        dt = tcast.datatype(code)
        given = _given(x, code, parts)
        modes = tcast.CastModes(castmode=tcast.CastMode.ACTUAL)
        req = eng.request(x, dt, modes, None, None, tcast.kit.GivenScales(**given))
        out = eng.cast(x, req)
        t = _ms(lambda req=req: eng.cast(x, req), rep, cuda)
        gbs = (nbytes + _nbytes(given.values()) + _nbytes(_parts(out))) / (t * 1e-3) / 1e9
        t_call = _ms(
            lambda code=code, given=given: tcast_triton.cast(x, code, castmode="actual", **given),
            rep,
            cuda,
        )
        t_computed = _ms(lambda code=code: tcast_triton.cast(x, code, castmode="actual"), rep, cuda)
        same = "not run"
        if torch_too:
            want = tcast_torch.cast(x, code, castmode="actual", compile=False, **given)
            same = "yes" if _same(out, want) else "NO"
        print(
            f"| {label} | {t:.3f} | {gbs:.0f} | {gbs / copy_gbs:.2f} | {t_call:.3f} | "
            f"{t_computed:.3f} | {same} |",
            flush=True,
        )
        del out


def main() -> None:
    """Print the configuration and one table per size."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16384")
    ap.add_argument("--rep", type=int, default=100, help="do_bench repetition time, ms")
    ap.add_argument("--no-torch", action="store_true", help="skip the bit check by tcast_torch")
    args = ap.parse_args()
    cuda = torch.cuda.is_available()
    where = torch.cuda.get_device_name() if cuda else "CPU, Triton interpreter (not a benchmark)"
    print(
        f"{where}; torch {torch.__version__}; triton {triton.__version__}; tcast-triton "
        f"{tcast_triton.__version__}; Python {platform.python_version()}"
    )
    timing = "triton.testing.do_bench median" if cuda else "host clock, median of 3"
    print(f"timing: {timing} (ms); input bfloat16 torch.randn * 2^k rows; actual casts")
    device = "cuda" if cuda else "cpu"
    for size in (int(s) for s in args.sizes.split(",")):
        g = torch.Generator(device=device).manual_seed(0)
        x = torch.randn(size, size, device=device, generator=g)
        x = x * torch.exp2(torch.randint(-20, 20, (size, 1), device=device, generator=g))
        _table(x.to(torch.bfloat16), args.rep, cuda, not args.no_torch)
        del x
        if cuda:
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
