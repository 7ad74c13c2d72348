"""Which launch plans take the bfloat16-pair encoder (``_launch.pairs_ok``): plans only.

The encoder's PTX runs on an sm_90 GPU (``test_gpu_pairs.py``); here the plans are built as
such a GPU would get them (``hw_fp8`` patched), with nothing launched, so the rules run in
every tier: bfloat16 only, to codes, nearest even, exponent scales, even rows, and data on a
4-byte boundary (the plan caches key on it: a view starting at an odd element must not
reuse an aligned tensor's plan).
"""

from __future__ import annotations

import importlib

import pytest
import torch

import tcast
from tcast.kit import cast_rules, make_request
from tcast_triton._codec import F_HW

launch = importlib.import_module("tcast_triton._launch")
dual_launch = importlib.import_module("tcast_triton._launch_dual")


@pytest.fixture(autouse=True)
def _sm90(monkeypatch):
    monkeypatch.setattr(launch, "hw_fp8", lambda device: True)


def _plan(code, x, word4=True, **modes):
    dt = tcast.datatype(code)
    modes.setdefault("castmode", "actual")
    req = make_request(dt, tcast.CastModes.of(**modes), None, None, x.shape, str(x.dtype)[6:],
                       cast_rules(dt))  # fmt: skip
    return launch._tiled_plan(req, x, 0, word4), dual_launch._build(req, x, 0, False, word4)


@pytest.mark.parametrize("code", ["mxfp4", "mxfp6e2", "mxfp6e3"])
def test_bfloat16_mx_fp4_fp6_codes_take_pairs(code):
    single, dual = _plan(code, torch.zeros(64, 256, dtype=torch.bfloat16))
    assert single.kernel.fn.__name__ == "_cast_row_pieces"
    assert single.kw["PAIRS"] and dual.kw["PAIRS"]


@pytest.mark.parametrize(
    ("code", "dtype", "shape", "modes", "word4"),
    [
        ("mxfp4", torch.float32, (64, 256), {}, True),  # not bfloat16
        ("mxfp4", torch.float16, (64, 256), {}, True),
        ("mxfp4", torch.bfloat16, (64, 256), {"castmode": "virtual"}, True),
        ("mxfp4", torch.bfloat16, (64, 256), {"roundmode": "stochastic"}, True),
        ("mxfp4", torch.bfloat16, (64, 256), {"roundmode": "zero"}, True),
        ("mxfp4", torch.bfloat16, (64, 256), {}, False),  # misaligned data
        ("nvfp4", torch.bfloat16, (64, 256), {}, True),  # E4M3 scales, tensor scale
        ("mxint8", torch.bfloat16, (64, 256), {}, True),
    ],
)
def test_other_casts_do_not_take_pairs(code, dtype, shape, modes, word4):
    single, dual = _plan(code, torch.zeros(shape, dtype=dtype), word4, **modes)
    assert not single.kw.get("PAIRS") and not dual.kw["PAIRS"]


def test_an_odd_row_length_keeps_the_dual_off_pairs():
    dt = tcast.datatype("mxfp4")
    x = torch.zeros(64, 250, dtype=torch.bfloat16)
    req = make_request(dt, tcast.CastModes.of(castmode="actual"), None, None, x.shape, "bfloat16",
                       cast_rules(dt))  # fmt: skip
    assert dual_launch._build(req, x, 0, False, True).kw["PAIRS"]
    x = torch.zeros(64, 251, dtype=torch.bfloat16)
    req = make_request(dt, tcast.CastModes.of(castmode="actual"), None, None, x.shape, "bfloat16",
                       cast_rules(dt))  # fmt: skip
    assert not dual_launch._build(req, x, 0, False, True).kw["PAIRS"]


def test_the_plan_caches_key_on_word_alignment():
    flat = torch.zeros(64 * 256 + 1, dtype=torch.bfloat16)
    aligned, odd = flat[:-1].view(64, 256), flat[1:].view(64, 256)
    assert launch.word_aligned(aligned) and not launch.word_aligned(odd)
    dt = tcast.datatype("mxfp4")
    req = make_request(dt, tcast.CastModes.of(castmode="actual"), None, None, (64, 256),
                       "bfloat16", cast_rules(dt))  # fmt: skip
    plans: dict = {}
    build = launch._tiled_plan
    a = launch.cached_plan(plans, req, aligned, 0, build, launch.word_aligned(aligned))
    b = launch.cached_plan(plans, req, odd, 0, build, launch.word_aligned(odd))
    assert a.kw["PAIRS"] and not b.kw["PAIRS"] and len(plans) == 2


def test_formats_of_the_hardware_conversion_do_not_take_pairs():
    """e4m3fn and e5m2 qualify as formats, but sm_90 converts them in hardware (F_HW)."""
    dt = tcast.datatype("mxfp8")
    x = torch.zeros(64, 256, dtype=torch.bfloat16)
    req = make_request(dt, tcast.CastModes.of(castmode="actual"), None, None, x.shape,
                       "bfloat16", cast_rules(dt))  # fmt: skip
    scaled = launch.scaled_kw(req, launch._IN_CODES[x.dtype], 0, True)
    assert launch.pairs_ok(req, scaled, x, 256, True) == (scaled["E"][F_HW.value] == 0)
    e = list(scaled["E"])
    e[F_HW.value] = 1
    assert not launch.pairs_ok(req, {**scaled, "E": tuple(e)}, x, 256, True)


def test_a_sparse_or_two_dimensional_tiling_never_takes_pairs():
    """The kernels' pair path has no keep mask of pruned elements (the N-d kernel takes
    those requests today; pairs_ok refuses them anyway)."""
    x = torch.zeros(64, 256, dtype=torch.bfloat16)
    for code in ("e2m1f_e8m0_t32n2m4", "e2m1f_e8m0_t32_t32"):
        dt = tcast.datatype(code)
        req = make_request(dt, tcast.CastModes.of(castmode="actual"), None, None, x.shape,
                           "bfloat16", cast_rules(dt))  # fmt: skip
        scaled = launch.scaled_kw(req, launch._IN_CODES[x.dtype], 0, True)
        assert not launch.pairs_ok(req, scaled, x, 256, True), code
