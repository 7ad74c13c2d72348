"""Which dual-cast plans take the Gluon kernel (``_launch_dual.gluon_takes``): plans only.

The Gluon kernel runs on sm_90 GPUs (``test_gpu_dual_gluon.py``) and compiles offline
(``test_gluon_offline.py``); here the plans are built as such a GPU would get them
(``hw_fp8`` patched), with nothing launched, so the rule runs in every tier: 32-element
tiles, codes, exponent scales, nearest even, no zero point, by the hardware FP8 conversion
(``_cast_dual_gl_hw``) or the bfloat16 pair encoder (``_cast_dual_gl``); never under the
interpreter.
"""

from __future__ import annotations

import importlib

import pytest
import torch

import tcast
from tcast.kit import cast_rules, make_request

launch = importlib.import_module("tcast_triton._launch")
dual_launch = importlib.import_module("tcast_triton._launch_dual")
formats = importlib.import_module("tcast_triton._formats")


def _plan(code, dtype=torch.bfloat16, shape=(64, 256), transposed=False, **modes):
    dt = tcast.datatype(code)
    modes.setdefault("castmode", "actual")
    x = torch.zeros(shape, dtype=dtype)
    req = make_request(dt, tcast.CastModes.of(**modes), None, None, shape, str(dtype)[6:],
                       cast_rules(dt))  # fmt: skip
    return dual_launch._build(req, x, 0, transposed)


@pytest.fixture
def sm90(monkeypatch):
    """Plans as an sm_90 GPU gets them (the formats' hardware conversion included)."""
    monkeypatch.setattr(launch, "hw_fp8", lambda device: True)
    monkeypatch.setattr(dual_launch, "hw_fp8", lambda device: True)
    monkeypatch.setattr(formats, "INTERPRETING", False)


@pytest.mark.parametrize(
    ("code", "dtype", "kw"),
    [
        ("mxfp8", torch.bfloat16, {}),
        ("mxfp8", torch.float16, {}),
        ("mxfp8", torch.float32, {"transposed": True}),
        ("mxfp8e5", torch.bfloat16, {"castmode": "compress"}),
        ("mxfp8", torch.bfloat16, {"scale_layout": "blocked", "transposed": True}),
        ("mxfp4", torch.bfloat16, {}),
        ("mxfp4", torch.bfloat16, {"castmode": "compress", "transposed": True}),
        ("mxfp6e2", torch.bfloat16, {"scale_layout": "blocked"}),
        ("mxfp6e3", torch.bfloat16, {"scalemode": "ceil"}),
    ],
)
def test_the_training_casts_take_the_gluon_kernel(sm90, code, dtype, kw):
    plan = _plan(code, dtype, **kw)
    assert plan.gluon
    hw = code.startswith("mxfp8")  # the FP8 conversion, else the pair encoder
    assert plan.kw["PAIRS"] == (not hw)
    assert plan.one_layout == hw
    kernel = dual_launch._cast_dual_gl_hw if hw else dual_launch._cast_dual_gl
    assert plan.launch.kernel is kernel
    assert plan.kw["W"] == plan.kw["num_warps"]
    tunables = dual_launch.GLUON_HW_ONE if hw else dual_launch.GLUON_PAIRS
    assert plan.kw["BN"] == tunables[0]
    # row scales kept in L2 until whole; column scales too where they are one byte per xᵀ row
    assert plan.kw["REV"] == dual_launch.GLUON_SCALE_EVICT
    assert plan.kw["CEV"] == (dual_launch.GLUON_SCALE_EVICT if kw.get("transposed") else "")


def test_the_one_layout_switch(sm90, monkeypatch):
    """Off: the FP8 conversion's casts take ``_cast_dual_gl`` with its own tunables."""
    monkeypatch.setattr(dual_launch, "GLUON_ONE_LAYOUT", False)
    plan = _plan("mxfp8")
    assert plan.gluon
    assert not plan.one_layout
    assert plan.launch.kernel is dual_launch._cast_dual_gl
    assert plan.kw["BN"] == dual_launch.GLUON_HW[0]
    assert plan.kw["RV"] == dual_launch.GLUON_HW[4]


@pytest.mark.parametrize(
    ("code", "dtype", "kw"),
    [
        ("mxfp8", torch.bfloat16, {"castmode": "virtual"}),
        ("mxfp8", torch.bfloat16, {"roundmode": "stochastic"}),
        ("mxfp8", torch.bfloat16, {"roundmode": "away"}),
        ("mxfp8t16", torch.bfloat16, {}),  # 16-element tiles
        ("mxint8", torch.bfloat16, {}),  # neither conversion
        ("mxfp4", torch.float32, {}),  # the pair encoder reads bfloat16 only
        ("nvfp4", torch.bfloat16, {"transposed": True}),  # E4M3 and tensor scales
        ("uint8_float32_uint8_t32", torch.bfloat16, {}),  # zero point
        ("e4m3fn_bfloat16_t32", torch.bfloat16, {}),  # a float scale
    ],
)
def test_other_dual_casts_take_the_triton_kernel(sm90, code, dtype, kw):
    plan = _plan(code, dtype, **kw)
    assert not plan.gluon
    assert not plan.one_layout
    assert plan.launch.kernel is dual_launch._cast_dual
    assert "W" not in plan.kw


def test_the_switch_turns_the_gluon_kernel_off(sm90, monkeypatch):
    monkeypatch.setattr(dual_launch, "GLUON_ENABLED", False)
    assert not _plan("mxfp8").gluon


def test_no_gluon_without_an_sm90_gpu():
    """Here (the interpreter, or a CPU tensor) ``hw_fp8`` is False: the Triton kernel."""
    assert not _plan("mxfp8").gluon
    assert not _plan("mxfp4").gluon
