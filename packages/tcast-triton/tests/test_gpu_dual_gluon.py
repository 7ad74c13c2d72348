"""The Gluon dual kernels on a GPU (sm_90): what they serve, bit for bit.

``_kernels_dual_gl_hw`` (codes by the hardware FP8 conversion, both casts in one layout) and
``_kernels_dual_gl`` (the bfloat16 pair encoder; the FP8 conversion too with
``GLUON_ONE_LAYOUT`` off). Gluon kernels do not run under the interpreter (the CPU tier
compiles them for sm_90 in ``test_gluon_offline.py``), so these tests run only on CUDA:
every datatype, input dtype, shape, layout and cast mode the kernels serve against single
``tcast_ref`` casts (``dual_checks``), each asserting which kernel the plan launched, again
through the cached launch, and the same inputs through ``_cast_dual`` (the switch off) for
the same bits.
"""

from __future__ import annotations

import importlib

import dual_checks as dc
import ml_dtypes
import numpy as np
import pytest
import torch

import tcast
from tcast_triton._env import INTERPRETING

dual_launch = importlib.import_module("tcast_triton._launch_dual")

pytestmark = pytest.mark.skipif(
    INTERPRETING or not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0),
    reason="Gluon kernels need a GPU (the launcher takes this one on sm_90)",
)

#: Datatypes the Gluon kernel serves: the hardware FP8 conversion (any input dtype) and the
#: bfloat16 pair encoder (bfloat16 only).
HW_DTYPES = ("mxfp8", "mxfp8e5", "e4m3fn_e8m0_t32", "e4m3fn_e5m0_t32")
PAIR_DTYPES = ("mxfp4", "mxfp6e2", "mxfp6e3", "e3m4_e8m0_t32")
SHAPES = {
    "whole": (256, 512),
    "partial": (200, 1030),
    "batched": (3, 96, 288),
    "batched-partial": (3, 70, 288),  # a matrix's last row tile ends inside the block
    "odd": (70, 1031),  # odd rows: no pairs (mxfp4 takes the Triton kernel, mxfp8 Gluon)
}
TORCH_DTYPES = {
    np.float32: torch.float32,
    np.float16: torch.float16,
    ml_dtypes.bfloat16: torch.bfloat16,
}


def _input(shape: tuple[int, ...], np_dtype, seed: int) -> np.ndarray:
    """Blocks under every E8M0 scale the input dtype reaches, zeros, -0, Inf and NaN blocks."""
    rng = np.random.default_rng(seed)
    rows = int(np.prod(shape[:-1]))
    cols = shape[-1]
    # every E8M0 scale a bfloat16 / float32 block can need (subnormal blocks included);
    # float16 reaches 2**-24 .. 65504 only (its Inf elements are placed below)
    span = (-20, 12) if np_dtype == np.float16 else (-140, 124)
    top = rng.integers(*span, size=(-(-rows // 32), -(-cols // 32)))
    top = np.repeat(np.repeat(top, 32, 0), 32, 1)[:rows, :cols]
    x = rng.standard_normal((rows, cols)) * np.exp2(top.astype(np.float64))
    x[rng.random((rows, cols)) < 0.02] = 0.0
    x[rng.random((rows, cols)) < 0.01] = -0.0
    x = x.astype(np_dtype)
    x[3, 5] = np.inf
    x[40, 100] = np.nan
    x[rows - 1, cols - 1] = -np.inf
    return x.reshape(shape)


def _run(x: np.ndarray, code: str, monkeypatch, gluon: bool, one_layout: bool = True, **kw):
    """Both results, and which kernel each plan took: ``(gluon, one_layout)``."""
    monkeypatch.setattr(dual_launch, "_PLANS", {})
    monkeypatch.setattr(dual_launch, "GLUON_ENABLED", gluon)
    monkeypatch.setattr(dual_launch, "GLUON_ONE_LAYOUT", one_layout)
    xt = torch.from_numpy(x.view(np.int16) if x.dtype == ml_dtypes.bfloat16 else x)
    xt = xt.view(TORCH_DTYPES[x.dtype.type]).cuda()
    got = tcast.cast_dual(xt, code, engine="triton", **kw)
    taken = [(p.gluon, p.one_layout) for p in dual_launch._PLANS.values()]
    # the second call takes the cached plan's compiled kernel (``_fastlaunch.Launch``)
    again = tcast.cast_dual(xt, code, engine="triton", **kw)
    for a, b in ((got[0], again[0]), (got[1], again[1])):
        _assert_same(a, b)
    return got, taken


def _check(code, x, monkeypatch, **kw):
    pairs = code not in HW_DTYPES
    gluon = not (pairs and x.shape[-1] % 2)  # the pair encoder needs even rows
    want = dc.expected_dual(x, code, **kw)
    # the Triton kernel on the same input: the same bits
    other, taken = _run(x, code, monkeypatch, False, **kw)
    assert taken == [(False, False)]
    # the FP8 conversion's casts through both Gluon kernels
    for one_layout in (True,) if pairs else (True, False):
        got, taken = _run(x, code, monkeypatch, True, one_layout, **kw)
        expected = (gluon, gluon and one_layout and not pairs)
        assert taken == [expected], f"{code}: kernels taken {taken}, expected {expected}"
        problems = dc.differences(got[0], want[0], "rows")
        problems += dc.differences(got[1], want[1], "cols")
        assert not problems, f"{code} {x.shape} {x.dtype} {kw}:\n" + "\n".join(problems)
        for a, b in ((got[0], other[0]), (got[1], other[1])):
            _assert_same(a, b)


def _assert_same(a, b) -> None:
    """Two results' parts (or two virtual results) are the same bits, compared as bytes."""
    if isinstance(a, torch.Tensor):
        assert torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))
        return
    for part in dc.PARTS:
        pa, pb = getattr(a, part), getattr(b, part)
        assert (pa is None) == (pb is None), part
        if pa is not None:
            ba = pa.contiguous().view(-1).view(torch.uint8)
            bb = pb.contiguous().view(-1).view(torch.uint8)
            assert torch.equal(ba, bb), part


@pytest.mark.parametrize("code", HW_DTYPES + PAIR_DTYPES)
@pytest.mark.parametrize("shape", list(SHAPES.values()), ids=list(SHAPES))
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("layout", ["plain", "blocked"])
def test_gluon_dual_equals_single_reference_casts(code, shape, transposed, layout, monkeypatch):
    x = _input(shape, ml_dtypes.bfloat16, seed=sum(shape))
    _check(code, x, monkeypatch, transposed=transposed, scale_layout=layout)


@pytest.mark.parametrize("code", HW_DTYPES)
@pytest.mark.parametrize("np_dtype", [np.float32, np.float16], ids=["float32", "float16"])
@pytest.mark.parametrize("transposed", [False, True])
def test_gluon_dual_of_other_input_dtypes(code, np_dtype, transposed, monkeypatch):
    x = _input(SHAPES["partial"], np_dtype, seed=7)
    _check(code, x, monkeypatch, transposed=transposed)


@pytest.mark.parametrize("code", ["mxfp8", "mxfp4"])
@pytest.mark.parametrize("transposed", [False, True])
def test_gluon_dual_compress(code, transposed, monkeypatch):
    x = _input(SHAPES["partial"], ml_dtypes.bfloat16, seed=11)
    _check(code, x, monkeypatch, transposed=transposed, castmode="compress")


@pytest.mark.parametrize("code", ["mxfp8", "mxfp4"])
@pytest.mark.parametrize("scalemode", dc.SCALE_MODES)
def test_gluon_dual_takes_every_scale_rule(code, scalemode, monkeypatch):
    x = _input(SHAPES["whole"], ml_dtypes.bfloat16, seed=13)
    _check(code, x, monkeypatch, scalemode=scalemode)


def test_gluon_dual_of_the_benchmark_size(monkeypatch):
    """16384 x 16384 bfloat16 (the benchmark's shape): the Gluon and Triton kernels agree."""
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(16384, 16384, device="cuda", generator=g).to(torch.bfloat16)
    x[5, 7] = float("inf")
    x[100, 4000] = float("nan")
    for code in ("mxfp8", "mxfp4"):
        for transposed in (False, True):
            for layout in ("plain", "blocked"):
                outs = []
                for gluon, one_layout in ((True, True), (True, False), (False, False)):
                    monkeypatch.setattr(dual_launch, "_PLANS", {})
                    monkeypatch.setattr(dual_launch, "GLUON_ENABLED", gluon)
                    monkeypatch.setattr(dual_launch, "GLUON_ONE_LAYOUT", one_layout)
                    outs.append(
                        tcast.cast_dual(
                            x, code, engine="triton", transposed=transposed, scale_layout=layout
                        )
                    )
                    plans = list(dual_launch._PLANS.values())
                    assert [p.gluon for p in plans] == [gluon]
                    assert [p.one_layout for p in plans] == [one_layout and code == "mxfp8"]
                for out in outs[1:]:
                    for i in (0, 1):
                        _assert_same(outs[0][i], out[i])


@pytest.mark.parametrize(
    ("code", "kw"),
    [
        ("mxfp8", {"castmode": "virtual"}),
        ("mxfp8", {"roundmode": "stochastic", "seed": 3}),
        ("mxfp8", {"roundmode": "away"}),
        ("mxfp8t16", {}),
        ("mxint8", {}),
        ("nvfp4", {"transposed": True}),
        ("uint8_float32_uint8_t32", {}),
    ],
)
def test_what_the_gluon_kernel_does_not_serve_takes_the_triton_kernel(code, kw, monkeypatch):
    x = _input(SHAPES["partial"], ml_dtypes.bfloat16, seed=17)
    got, taken = _run(x, code, monkeypatch, True, **kw)
    assert taken == [(False, False)], f"{code} {kw}: {taken}"
    want = dc.expected_dual(x, code, **kw)
    problems = dc.differences(got[0], want[0], "rows") + dc.differences(got[1], want[1], "cols")
    assert not problems, f"{code} {kw}:\n" + "\n".join(problems)
