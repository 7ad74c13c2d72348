"""The fast path (``_fast``) gives the general path's bits, on every datatype it takes."""

from __future__ import annotations

import itertools

import pytest
import torch

import tcast
import tcast_torch
from tcast.kit import normalize_args
from tcast_torch._bits import clamp_finite
from tcast_torch._fast import (
    _grid_codes,
    _grid_values,
    block_amax,
    codes_from_values,
    fast_path_applies,
    small_grid,
)
from tcast_torch._run import cast_checked

F32 = torch.float32


def _inputs(dtype: torch.dtype) -> torch.Tensor:
    """Blocks of every kind: random spreads, ties at the scale, huge/tiny, zeros, NaN, Inf."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn(48, 64, generator=g) * torch.exp2(
        torch.randint(-20, 20, (48, 1), generator=g).float()
    )
    x[1] = 0.0
    x[2, 5] = float("nan")
    x[3, 40] = float("inf")
    x[4, 7] = -float("inf")
    x[5] = torch.tensor([2.0**k for k in range(-130, -66)])  # float32 subnormals up
    x[6] = 3.4e38
    x[7, ::2] = -0.0
    x[8] = torch.arange(64) * 0.0625 + 0.03125  # ties on a fine grid
    x[9] = 2.0**-140
    return x.to(dtype)


FAST = [
    "mxfp8",
    "mxfp8e5",
    "mxfp6e2",
    "mxfp6e3",
    "mxfp4",
    "nvfp4",
    "e4m3fn_e8m0_t16",
    "e2m1f_e8m0_t64",
    "e4m3fnuz_e8m0_t32",
    "e5m2_float16_t32",
    "e2m1f_bfloat16_t16",
    "e3m2f_e4m3fn_float32_t32",
    "e2m1fnuz_e8m0_t32",
    "e2m1_e8m0_t32",
]


@pytest.mark.parametrize("name", FAST)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("castmode", ["virtual", "actual"])
@pytest.mark.parametrize("scalemode", ["floor", "ceil", "midmax", "option3", "topbinade"])
def test_fast_equals_general(name, dtype, castmode, scalemode):
    x = _inputs(dtype)
    req = _request(x, name, castmode=castmode, scalemode=scalemode)
    assert fast_path_applies(x, req)
    fast = cast_checked(x, req, True)
    slow = cast_checked(x, req, False)
    if castmode == "virtual":
        assert fast.dtype == slow.dtype and fast.shape == slow.shape
        assert torch.equal(
            fast.view(torch.int16 if dtype != F32 else torch.int32),
            slow.view(torch.int16 if dtype != F32 else torch.int32),
        )
    else:
        for part in ("data", "scale", "tenscale"):
            a, b = getattr(fast, part), getattr(slow, part)
            assert (a is None) == (b is None), part
            if a is not None:
                assert a.dtype == b.dtype and a.shape == b.shape, part
                assert torch.equal(a, b), part
        assert fast.mask is None and slow.mask is None and fast.zero is None


@pytest.mark.parametrize(
    "name", ["mxfp8", "mxint8", "uint8_eic", "e2m1f_e8m0_t32n2m4", "mxfp8_2d", "e4m3fn_e8m0_t32d0"]
)
def test_fast_path_declines_what_it_does_not_cover(name):
    x = _inputs(torch.float32)
    for castmode, rmode in (("actual", "stochastic"), ("compress", "even"), ("virtual", "even")):
        if name == "mxfp8" and castmode == "virtual":
            continue  # the one case the fast path takes
        seed = 1 if rmode == "stochastic" else None
        req = _request(x, name, castmode=castmode, roundmode=rmode, seed=seed)
        assert not fast_path_applies(x, req)
    odd = torch.zeros(4, 48)  # 48 is not a multiple of 32
    assert not fast_path_applies(odd, _request(odd, "mxfp8"))


def _request(x, name, **kw):
    dt, modes, seed = normalize_args(name, **kw)
    return tcast_torch.engine.request(x, dt, modes, seed, None)


@pytest.mark.parametrize(
    "code",
    [
        "e4m3fn",
        "e5m2",
        "e2m3f",
        "e3m2f",
        "e2m1f",
        "e4m3b8fnuz",
        "e5m2b16fnuz",
        "e3m4",
        "e4m3",
        "binary8p3",
    ],
)
def test_codes_from_values_inverts_decode_on_every_finite_code(code):
    """Every finite code's value (from the exact model, not this package) maps back to it."""
    n = tcast.number(code)
    codes, values = [], []
    for c in range(1 << n.bits):
        v = tcast.exact.decode(c, n)
        if v == v and abs(v) != float("inf"):
            codes.append(c)
            values.append(v)
    got = codes_from_values(torch.tensor(values, dtype=F32), n)
    want = torch.tensor(codes, dtype=torch.int32)
    if not n.has_negzero:  # fnuz/uz: -0 is the NaN code; zero decodes to +0 only
        assert 0 in codes
    assert torch.equal(got, want)


SMALL = [
    "e2m1f",
    "e2m1",
    "e2m1fn",
    "e2m1fnuz",
    "e2m1uz",
    "e2m1b2",
    "e1m2",
    "e1m2f",
    "e3m0f",
    "e3m0fnuz",
    "e1m1f",
    "e2m0f",
]


def _threshold_probes(n) -> torch.Tensor:
    """Every magnitude and midpoint of n, their float32 neighbours, far beyond, random; +-."""
    mags = [tcast.exact.decode(c, n) for c in range(n.max_code + 1)]
    mids = [(a + b) / 2 for a, b in itertools.pairwise(mags)]  # exact: both are tiny dyadics
    t = torch.tensor(mags + mids + [2 * mags[-1], 3.0e38, 2.0**-149], dtype=F32)
    inf = torch.full_like(t, float("inf"))
    t = torch.cat([t, torch.nextafter(t, inf), torch.nextafter(t, -inf)])
    g = torch.Generator().manual_seed(3)
    t = torch.cat([t, torch.rand(512, generator=g) * 2 * mags[-1]])
    return torch.cat([t, -t])


@pytest.mark.parametrize("code", SMALL)
def test_small_grid_rounding_equals_exact_model(code):
    """Counting thresholds gives the exact model's saturating RNE code and value."""
    n = tcast.number(code)
    grid = small_grid(n)
    assert grid is not None and len(grid) == n.max_code
    xs = _threshold_probes(n)
    want = [tcast.exact.encode(v, n, "even", saturate=True) for v in xs.tolist()]
    assert _grid_codes(xs, n, grid).tolist() == want
    values = torch.tensor([tcast.exact.decode(c, n) for c in want], dtype=F32)
    assert torch.equal(_grid_values(xs, n, grid).view(torch.int32), values.view(torch.int32))


@pytest.mark.parametrize("code", ["e4m3fn", "e3m2f", "e2m3f", "int4", "e4m0"])
def test_small_grid_only_for_small_float_formats(code):
    assert small_grid(tcast.number(code)) is None


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_block_amax_equals_abs_amax(dtype):
    """The integer max of magnitude bits is abs().amax() bit for bit: NaN, Inf, -0, tiny."""
    x = _inputs(dtype)
    x[10, 3] = -float("nan")
    want = x.to(F32).abs().amax(-1)
    got = block_amax(x)
    assert got.dtype == F32
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    keep = ~torch.isnan(want)
    assert torch.equal(got[keep].view(torch.int32), want[keep].view(torch.int32))


# Inductor's CPU code generation imports torch.jit pieces that warn about themselves
@pytest.mark.filterwarnings("ignore:.*torch.jit.*deprecated:DeprecationWarning")
def test_clamp_finite_compiled_equals_clamp():
    """The compiled compare-and-select form gives torch.clamp's bits, NaN and -0 included."""
    x = torch.tensor(
        [
            float("nan"),
            -float("nan"),
            float("inf"),
            -float("inf"),
            -0.0,
            0.0,
            448.0,
            449.0,
            -449.0,
            1e-45,
            3.0e38,
        ]
    )
    compiled = torch.compile(lambda v: clamp_finite(v, 448.0), fullgraph=True)
    want = torch.clamp(x, -448.0, 448.0)
    for got in (clamp_finite(x, 448.0), compiled(x)):
        assert torch.equal(torch.isnan(got), torch.isnan(want))
        keep = ~torch.isnan(want)
        assert torch.equal(got[keep].view(torch.int32), want[keep].view(torch.int32))


@pytest.mark.parametrize("mode", list(tcast.ScaleMode))
@pytest.mark.parametrize("scale", ["e8m0", "e5m0", "e4m0b3", "e5m0b0", "e6m0b40", "e4m0b120"])
@pytest.mark.parametrize("elem", ["e4m3fn", "e5m2", "e2m1f", "e3m2f", "e2m3f", "e2m1b5"])
def test_exponent_codes_equal_exact_model(elem, scale, mode):
    """Scale codes of every mode (the exponent-field shortcut where the kit's rule allows it)
    against the exact model: zero, float32 subnormals, every power of two and its neighbours,
    float32 max. e2m1b5 (max 3/16, emax < 0) takes the general branch under the wider-bias
    scales."""
    from tcast.kit import exponent_scale_rule
    from tcast_torch._scale import exponent_codes

    n, s = tcast.number(elem), tcast.number(scale)
    mags = [0.0, 2.0**-149, 2.0**-140, 1.5 * 2.0**-130, 3.4028234663852886e38]
    for k in range(-126, 128):
        mags += [2.0**k, 2.0**k * 1.5, 2.0**k * (2 - 2.0**-23)]
    amax = torch.tensor(mags, dtype=F32)
    want = []
    for v in amax.tolist():
        if v == 0:
            want.append(0)
            continue
        e = tcast.exact.exponent_scale(v, n.max_value, n.precision, mode)
        want.append(min(max(e + s.bias, 0), s.max_code))
    assert exponent_codes(amax, exponent_scale_rule(n, s, mode)).tolist() == want
