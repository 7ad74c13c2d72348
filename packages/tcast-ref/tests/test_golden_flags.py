"""The FLAGS column: named cases for every flag, and the whole column of real sets recomputed
from the definitions with exact arithmetic (``fractions``) and the exact model's decode."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from tcast import datatype, exact, number
from tcast_ref.golden import FLAGS, Settings, generate
from tcast_ref.golden._flags import flags
from tcast_ref.golden._geometry import geometry

INEXACT, UNDER, OVER = FLAGS["inexact"], FLAGS["underflow"], FLAGS["overflow"]
ABSENT = FLAGS["absent"]
INVALID, INF, NANBLOCK, PRUNED = (FLAGS[k] for k in ("invalid", "infinite", "nanblock", "pruned"))
FLT_MAX = Fraction(float(np.finfo(np.float32).max))


def _unscaled_flags(code: str, values: list[float], **kw) -> list[int]:
    import tcast_ref

    dt = datatype(code)
    x = np.array(values, np.float32)
    r = tcast_ref.cast(x, dt, castmode="actual", **kw)
    return flags(x, r.data, tcast_ref.upcast(r), dt).tolist()


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (448.0, 0),  # the max, exact
        (1.0, 0),
        (1.0625, INEXACT),  # a tie, rounds to 1
        (450.0, INEXACT | OVER),  # above max: saturated, flagged though RNE gives 448 anyway
        (470.0, INEXACT | OVER),  # rounds beyond max: saturated
        (2.0**-10, INEXACT | UNDER),  # half the smallest subnormal: ties to 0
        (3 * 2.0**-11, INEXACT | UNDER),  # rounds to the smallest subnormal 2^-9
        (2.0**-9, 0),  # the smallest subnormal, exact: tiny but not inexact
        (5.5 * 2.0**-9, INEXACT | UNDER),  # a tie between subnormals 5 and 6 * 2^-9
        (6 * 2.0**-9, 0),  # a subnormal, exact
        (2.0**-6, 0),  # the smallest normal
        (float("nan"), INVALID),
        (float("inf"), INF),  # saturates to 448: not 'overflow' (the input was not finite)
        (-0.0, 0),
    ],
)
def test_named_unscaled_e4m3fn_flags(value, want):
    assert _unscaled_flags("e4m3fn", [value])[0] == want


def test_ieee_overflow_flags_nan_and_inf_results():
    assert _unscaled_flags("e4m3fn", [470.0], saturate=False) == [INEXACT | OVER]  # NaN code
    assert _unscaled_flags("e5m2", [65536.0], saturate=False) == [INEXACT | OVER]  # Inf
    assert _unscaled_flags("e5m2", [float("-inf")], saturate=False) == [INF]


def test_finite_only_nan_is_invalid_only():
    assert _unscaled_flags("e2m1f", [float("nan"), 7.0, 0.2]) == [
        INVALID,
        INEXACT | OVER,
        INEXACT | UNDER,
    ]


def test_block_flags_nanblock_and_pruned():
    import tcast_ref

    dt = datatype("e2m1f_e8m0_t8n2m4")
    x = np.array([[1, 2, 3, 4, 0.5, 0.25, 6, 8], [1, np.nan, 3, 4, 5, 6, 7, 8]], np.float32)
    r = tcast_ref.cast(x, dt, castmode="actual")
    f = flags(
        x,
        r.data,
        tcast_ref.upcast(r),
        dt,
        np.repeat((r.scale.reshape(-1) == 0xFF)[:, None], 8, axis=1),
        r.mask,
    )
    assert f[0].tolist() == [PRUNED, PRUNED, 0, 0, PRUNED, PRUNED, 0, 0]
    # keep 2 of 4 by magnitude, NaN ranking highest: [1, NaN, 3, 4] keeps NaN and 4
    assert f[1].tolist() == [
        NANBLOCK | PRUNED,
        NANBLOCK | INVALID,
        NANBLOCK | PRUNED,
        NANBLOCK,
        NANBLOCK | PRUNED,
        NANBLOCK | PRUNED,
        NANBLOCK,
        NANBLOCK,
    ]


# --------------------------------------------------------------- exact recomputation
def _exact_flags(x: float, code: int, d: Fraction | float, n, nanblock: bool) -> int:
    """The flag definitions of header.json, in exact arithmetic."""
    f = 0
    if math.isnan(x):
        f |= INVALID
    if math.isinf(x):
        f |= INF
    if nanblock:
        return f | NANBLOCK
    if not math.isfinite(x):
        return f
    xv = Fraction(x)
    d_inf = isinstance(d, float) and not math.isfinite(d)
    inexact = d_inf or d != xv
    if inexact:
        f |= INEXACT
    mag = code & (n.sign_bit - 1)
    if inexact and xv != 0 and (mag >> n.mbits) == 0:
        f |= UNDER
    if d_inf or (mag == n.max_code and abs(xv) > abs(d)):
        f |= OVER
    return f


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz"])
def test_unscaled_flags_column_equals_the_exact_definition(name):
    gs = generate(Settings.of(name))
    n = gs.header["datatype"]["element"]
    spec = number(n["code"])
    x = gs.columns["IN"].reshape(-1).astype(np.uint32).view(np.float32)
    codes = gs.columns["OUT"].reshape(-1)
    got = gs.columns["FLAGS"].reshape(-1)
    for xi, c, g in zip(x.tolist(), codes.tolist(), got.tolist(), strict=True):
        v = exact.decode(int(c), spec)
        d = v if not math.isfinite(v) else Fraction(v)
        assert g == _exact_flags(xi, int(c), d, spec, False), (xi, c)


def test_mxfp8_flags_column_equals_the_exact_definition():
    gs = generate(Settings.of("mxfp8"))
    spec = number("e4m3fn")
    x = gs.columns["IN"].astype(np.uint32).view(np.float32)
    codes, scale, got = gs.columns["OUT"], gs.columns["SCALE"].reshape(-1), gs.columns["FLAGS"]
    live = _live(gs, "mxfp8")
    assert not live.all()  # partial tiles are there
    for i in range(x.shape[0]):
        s = int(scale[i])
        for j in range(x.shape[1]):
            if not live[i, j]:  # beyond a partial tile: absent, nothing else
                assert int(got[i, j]) == ABSENT and int(codes[i, j]) == 0, (i, j)
                continue
            v = exact.decode(int(codes[i, j]), spec)
            d = Fraction(v) * Fraction(2) ** (s - 127) if s != 255 else float("nan")
            if isinstance(d, Fraction) and abs(d) > FLT_MAX:
                d = math.copysign(math.inf, d)
            want = _exact_flags(float(x[i, j]), int(codes[i, j]), d, spec, s == 255)
            assert int(got[i, j]) == want, (i, j)


def _live(gs, name: str) -> np.ndarray:
    """Which elements of each line are present (from the LEN column of a tile set)."""
    return geometry(datatype(name)).live(gs.columns["LEN"])


def _column_flags(x, codes, d, nanblock, maxmag, tiny) -> np.ndarray:
    """The header's flag definitions on arrays (numpy float64 comparisons, exact here)."""
    xf = x.astype(np.float64)
    dd = d.astype(np.float64)
    finite = np.isfinite(xf) & ~nanblock
    with np.errstate(invalid="ignore"):
        inexact = finite & (dd != xf)
        under = inexact & (xf != 0) & tiny
        over = finite & (~np.isfinite(dd) | (maxmag & (np.abs(xf) > np.abs(dd))))
    f = np.zeros(x.shape, np.int64)
    for mask, bit in (
        (inexact, INEXACT),
        (under, UNDER),
        (over, OVER),
        (np.isnan(xf), INVALID),
        (np.isinf(xf), INF),
        (nanblock, NANBLOCK),
    ):
        f |= np.where(mask, bit, 0)
    return f


def test_mxint8_flags_column_equals_the_definition():
    """d = fl32(fl32(code / 64) * 2**(scale - 127)) in NumPy float32; ints are tiny at 0."""
    gs = generate(Settings.of("mxint8"))
    x = gs.columns["IN"].astype(np.uint32).view(np.float32)
    codes = gs.columns["OUT"].astype(np.int64)
    ival = np.where(codes >= 128, codes - 256, codes)
    scale = gs.columns["SCALE"].astype(np.int64)
    with np.errstate(over="ignore", invalid="ignore"):  # scale 255 (NaN blocks): 0 * Inf
        sval = np.ldexp(np.float32(1), (scale - 127).astype(np.int32)).astype(np.float32)
        d = (ival / 64).astype(np.float32) * sval
    nanblock = np.broadcast_to(scale == 255, x.shape)
    want = _column_flags(x, codes, d, nanblock, np.abs(ival) == 127, d == 0)
    want = np.where(_live(gs, "mxint8"), want, ABSENT)
    assert np.array_equal(gs.columns["FLAGS"].astype(np.int64), want)


def test_nvfp4_flags_column_equals_the_definition():
    """d = fl32(e2m1(code) * fl32(t * s)) with ml_dtypes decoding and NumPy float32 products."""
    import ml_dtypes

    gs = generate(Settings.of("nvfp4"))
    x = gs.columns["IN"].astype(np.uint32).view(np.float32)
    codes = gs.columns["OUT"].astype(np.uint8)
    elem = codes.view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    s = gs.columns["SCALE"].astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    t = gs.columns["TENSCALE"].astype(np.uint32).view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        d = elem * (t * s)
    nanblock = np.broadcast_to(np.isnan(s) | np.isnan(t), x.shape)
    maxmag = (codes & 0x7) == 0x7
    tiny = ((codes & 0x7) >> 1) == 0
    want = _column_flags(x, codes, d, nanblock, maxmag, tiny)
    want = np.where(_live(gs, "nvfp4"), want, ABSENT)
    assert np.array_equal(gs.columns["FLAGS"].astype(np.int64), want)
