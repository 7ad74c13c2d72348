"""Named edge cases of the semantics, on tcast_ref: virtual, actual and upcast bits.

Every expected code and value is derived by hand in the comments (SEMANTICS.md section
cited); each cast is also checked against the exact model (``tcast.exact.cast_array``) as
a second oracle, and ``upcast(actual)`` against the virtual result in float32, bit for bit.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tcast
import tcast_ref
from tcast import CastMode, CastResult
from tcast.exact import cast_array

PNAN, NNAN = "+nan", "-nan"  # the canonical quiet NaNs 0x7FC00000 / 0xFFC00000
FINITE_ONLY = ("e2m1f", "e2m3f", "e3m2f")
ONES = np.uint8(0xFF)  # all ones of K = 8 random bits (formats of at most 8 bits, §3.2)


def f32(*vals) -> np.ndarray:
    out = np.array(vals, np.float64).astype(np.float32)
    ok = np.isnan(out) | (out.astype(np.float64) == np.array(vals, np.float64))
    assert ok.all(), "test input not exactly a float32 value"
    return out


def vbits(vals) -> list[int]:
    """float32 bit patterns of exactly representable expected values (and the NaN markers)."""
    out = []
    for v in vals:
        if isinstance(v, str):
            out.append(0x7FC00000 if v == PNAN else 0xFFC00000)
            continue
        b = np.float32(v)
        assert float(b) == v, f"expected value {v!r} is not a float32 value"
        out.append(int(b.view(np.uint32)))
    return out


def bits(a: np.ndarray) -> list[int]:
    a = np.ascontiguousarray(np.asarray(a, np.float32))
    return a.view(np.uint32).reshape(-1).tolist()


def check(
    x, dtype, *, codes=None, scale=None, values=None, zero=None, tenscale=None, oracle=True, **kw
):
    """Cast x (actual, virtual, upcast) and compare with the expected codes and values.

    ``codes``, ``scale``, ``zero``: flat lists of codes; ``values``: the virtual values (floats
    or NaN markers). Returns (CastResult, virtual array).
    """
    dt = tcast.datatype(dtype)
    res = tcast_ref.cast(x, dt, castmode="actual", **kw)
    virt = tcast_ref.cast(x, dt, **kw)
    up = tcast_ref.upcast(res)
    assert virt.dtype == x.dtype and virt.shape == x.shape and up.shape == x.shape
    # §8: upcast equals the virtual cast in float32 (an unscaled NaN into a finite-only
    # format has no code to decode: upcast gives +0 there)
    v32 = np.asarray(virt, np.float32)
    if dt.sspec is None and dt.nspec.code in FINITE_ONLY:
        nan = np.isnan(np.asarray(x, np.float32))
        assert (np.asarray(up)[nan].view(np.uint32) == 0).all()
        v32 = np.where(nan, np.float32(0), v32)
    assert bits(up) == bits(v32), (bits(up), bits(v32))
    if codes is not None:
        assert res.data.reshape(-1).tolist() == list(codes), [hex(c) for c in res.data.ravel()]
    if scale is not None:
        assert np.asarray(res.scale).reshape(-1).tolist() == list(scale), res.scale
    if zero is not None:
        assert np.asarray(res.zero).reshape(-1).tolist() == list(zero), res.zero
    if tenscale is not None:
        assert int(res.tenscale) == tenscale, hex(int(res.tenscale))
    if values is not None:
        got = bits(np.asarray(virt, np.float32))  # exact widening of 16-bit results
        assert got == vbits(values), [hex(b) for b in got]
    if oracle:
        _against_exact(x, dt, res, virt, kw)
    return res, virt


def _input_name(x: np.ndarray) -> str:
    return {
        np.dtype(np.float32): "float32",
        np.dtype(np.float16): "float16",
        np.dtype(ml_dtypes.bfloat16): "bfloat16",
    }[x.dtype]


def _against_exact(x, dt, res, virt, kw):
    kw = dict(kw)
    if kw.get("rbits") is not None:
        kw["rbits"] = [int(r) for r in np.asarray(kw["rbits"]).reshape(-1)]
    ex = cast_array(
        [float(v) for v in np.asarray(x, np.float32).reshape(-1)],
        x.shape,
        dt,
        input_dtype=_input_name(x),
        **kw,
    )
    assert res.data.reshape(-1).tolist() == list(ex.codes)
    if ex.scale is not None:
        assert np.asarray(res.scale).reshape(-1).tolist() == list(ex.scale)
    if ex.zero is not None:
        assert np.asarray(res.zero).reshape(-1).tolist() == list(ex.zero)
    if ex.tenscale is not None:
        assert int(res.tenscale) == ex.tenscale
    want = np.array(ex.values, np.float64).astype(np.float32)
    assert bits(np.asarray(virt, np.float32)) == bits(want)


def block(*head, n=32, fill=0.0) -> np.ndarray:
    """A float32 block: the given values, then ``fill`` up to n elements."""
    return f32(*head, *([fill] * (n - len(head))))


# ------------------------------------------------------------ all-zero block (§5.3 step 1)
@pytest.mark.parametrize(
    ("dtype", "scale", "negzero", "negvalue"),
    [
        # e8m0 scale code 0 (2^-127); -0 keeps its sign where the element format has -0 (§4.2)
        ("mxfp8", 0, 0x80, -0.0),
        ("mxfp8e5", 0, 0x80, -0.0),
        ("mxfp6e2", 0, 0x20, -0.0),
        ("mxfp6e3", 0, 0x20, -0.0),
        ("mxfp4", 0, 0x8, -0.0),
        # ints have no -0: code 0, value +0
        ("mxint8", 0, 0x00, 0.0),
        ("mxint4", 0, 0x0, 0.0),
        # fnuz has no -0 (§1.1)
        ("e4m3b8fnuz_e8m0_t32", 0, 0x00, 0.0),
        # float scale: the smallest normal of the scale format (§5.5 step 1): float32 2^-126
        ("e4m3fn_float32_t32", 0x00800000, 0x80, -0.0),
        ("e4m3fn_bfloat16_t32", 0x0080, 0x80, -0.0),
        ("e4m3fn_e4m3fn_t32", 0x08, 0x80, -0.0),  # e4m3fn smallest normal 2^-6
        ("int8_e4m3fn_t32", 0x08, 0x00, 0.0),
    ],
)
def test_all_zero_block_with_mixed_signed_zeros(dtype, scale, negzero, negvalue):
    x = f32(*([0.0, -0.0] * 16))
    check(x, dtype, codes=[0, negzero] * 16, scale=[scale], values=[0.0, negvalue] * 16)


def test_all_zero_nvfp4_tensor_clamps_both_scales_to_their_smallest_normals():
    # §5.6: t = RNE_f32(clamp(0 / 2688, 2^-126, max)) = 2^-126 (0x00800000); s = RNE_e4m3(
    # clamp(0, 2^-6, 448)) = 2^-6 (0x08); r = min(fl32(fl32(2^126) / 2^-6), FLT_MAX) =
    # FLT_MAX; elements +-0 -> 0x0 / 0x8, values +-0.
    x = f32(*([0.0, -0.0] * 16))
    check(
        x,
        "nvfp4",
        codes=[0, 0x8] * 16,
        scale=[0x08, 0x08],
        tenscale=0x00800000,
        values=[0.0, -0.0] * 16,
    )


def test_all_zero_uint_block_has_zero_range_and_a_plus_zero_zero_point():
    # §5.7: lo = min(min, 0) = 0, hi = 0, range 0 -> s = clamp(0 / 255) = 2^-126 (float32
    # 0x00800000); z = encode(fl32(0 - lo) * r) = +0; codes round(+-0 * r + 0) = 0; values +0.
    x = f32(*([0.0, -0.0] * 4))
    check(x, "uint8_FF", codes=[0] * 8, scale=[0x00800000], zero=[0], values=[0.0] * 8)


# ------------------------------------------------------------ non-finite blocks (§5.2)
@pytest.mark.parametrize("bad", [np.nan, -np.nan])
@pytest.mark.parametrize(
    ("dtype", "nan_scale", "nan_zero"),
    [
        ("mxfp8", 0xFF, None),
        ("mxint8", 0xFF, None),
        ("e4m3fn_float32_t32", 0x7FC00000, None),  # float scale: its canonical NaN
        ("e4m3fn_bfloat16_t32", 0x7FC0, None),
        ("int8_e4m3fn_t32", 0x7F, None),
        ("uint8_float32_int8_t32", 0x7FC00000, 0),  # an int zero point has no NaN: 0
        ("uint8_float32_float32_t32", 0x7FC00000, 0x7FC00000),
    ],
)
def test_one_nan_in_a_finite_block_makes_that_block_nan(dtype, nan_scale, nan_zero, bad):
    # Block 0 holds one NaN: scale = NaN code, codes 0, all values +NaN (§5.2, §7 '+ for a
    # NaN block'). Block 1 (all 1.0) is unaffected: its codes are checked by the oracle.
    x = np.concatenate([block(1.0, 2.0, 3.0, bad), block(fill=1.0)])
    res, virt = check(x, dtype)
    assert np.asarray(res.scale).reshape(-1)[0] == nan_scale
    if nan_zero is not None:
        assert np.asarray(res.zero).reshape(-1)[0] == nan_zero
    assert (res.data[:32] == 0).all()
    assert bits(virt[:32]) == vbits([PNAN] * 32)
    assert not np.isnan(virt[32:]).any()


def test_one_nan_in_a_bfloat16_block_gives_the_bfloat16_canonical_nan():
    # §7: a NaN block's virtual result is the input dtype's canonical quiet NaN (0x7FC0).
    x = np.concatenate([block(1.0, -np.nan), block(fill=0.5)]).astype(ml_dtypes.bfloat16)
    res, virt = check(x, "mxfp8")
    assert res.scale.tolist() == [0xFF, 126 - 8]  # block 1: amax 0.5 = 2^-1 -> 127 - 1 - 8
    assert virt[:32].view(np.uint16).tolist() == [0x7FC0] * 32


def test_one_nan_in_an_nvfp4_tensor_makes_every_block_nan():
    # §5.6 step 1: tensor_amax is NaN -> t is float32's NaN code, every block non-finite.
    x = np.concatenate([block(1.0, np.nan, n=16), block(2.0, n=16)])
    check(x, "nvfp4", codes=[0] * 32, scale=[0x7F, 0x7F], tenscale=0x7FC00000, values=[PNAN] * 32)


@pytest.mark.parametrize("inf", [np.inf, -np.inf])
@pytest.mark.parametrize("dtype", ["mxfp8e5", "mxfp8", "mxfp6e2", "mxfp6e3", "mxfp4"])
def test_inf_in_a_block_makes_the_block_nan(dtype, inf):
    # §5.2: +-Inf makes the block non-finite for every element format (e5m2 has an Inf code,
    # but scaled elements never take it): scale 0xFF, codes 0, values +NaN.
    x = np.concatenate([block(0.5, inf, -3.0), block(1.0)])
    res, virt = check(x, dtype)
    assert res.scale.tolist()[0] == 0xFF and (res.data[:32] == 0).all()
    assert bits(virt[:32]) == vbits([PNAN] * 32)


@pytest.mark.parametrize(
    ("dtype", "sat", "ieee"),
    [
        # §4.1: +-Inf -> +-max saturating; IEEE option: +-Inf / NaN / +-max
        ("float8_e5m2", (0x7B, 0xFB), (0x7C, 0xFC)),  # max 57344; Inf 0x7C
        ("float8_e4m3fn", (0x7E, 0xFE), (0x7F, 0xFF)),  # max 448; no Inf: NaN 0x7F
        ("float6_e2m3fn", (0x1F, 0x3F), (0x1F, 0x3F)),  # finite-only: max 7.5 either way
        ("float6_e3m2fn", (0x1F, 0x3F), (0x1F, 0x3F)),  # max 28
        ("float4_e2m1fn", (0x7, 0xF), (0x7, 0xF)),  # max 6
    ],
)
def test_unscaled_inf_saturates_or_follows_the_ieee_option(dtype, sat, ieee):
    x = f32(np.inf, -np.inf)
    check(x, dtype, codes=sat, saturate=True)
    check(x, dtype, codes=ieee, saturate=False)


# ------------------------------------------------------------ NaN into FP4/FP6 (§4.2, §5.2)
@pytest.mark.parametrize("dtype", ["float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"])
def test_nan_and_negative_nan_into_unscaled_fp4_fp6_give_code_zero_and_stay_nan(dtype):
    # §4.2: no NaN code -> code 0 (+0); §7: the virtual result is NaN with the input's sign;
    # §8: upcast gives +0 (checked in check()).
    x = f32(np.nan, -np.nan, 1.0)
    for saturate in (True, False):
        res, _ = check(x, dtype, values=[PNAN, NNAN, 1.0], saturate=saturate)
        assert res.data.tolist()[:2] == [0, 0]


@pytest.mark.parametrize("dtype", ["mxfp4", "mxfp6e2", "mxfp6e3"])
def test_nan_and_negative_nan_into_scaled_fp4_fp6_give_a_nan_block(dtype):
    # §5.2: scale 0xFF, codes 0, every value +NaN (the NaN's sign is not kept: §7).
    x = np.concatenate([block(np.nan, 1.0), block(-np.nan, 1.0)])
    check(x, dtype, codes=[0] * 64, scale=[0xFF, 0xFF], values=[PNAN] * 64)


# ------------------------------------------------------------ amax at 2^k (§0, §5.3)
@pytest.mark.parametrize("k", [0, 7, -30, 60])
@pytest.mark.parametrize("mode", ["floor", "ceil", "midmax", "option3", "topbinade"])
def test_amax_exactly_a_power_of_two(mode, k):
    # amax = 2^k: E = k, sigma = 1: no mode bumps. mxfp8 (emax 8): code 127 + k - 8,
    # x' = 256 = 0x78. mxfp4 (emax 2): code 127 + k - 2, x' = 4 = 0x6. Values 2^k.
    a = 2.0**k
    check(
        block(a, -a / 2),
        "mxfp8",
        scalemode=mode,
        scale=[127 + k - 8],
        codes=[0x78, 0xF0] + [0] * 30,
        values=[a, -a / 2] + [0.0] * 30,
    )
    check(
        block(a, -a / 2),
        "mxfp4",
        scalemode=mode,
        scale=[127 + k - 2],
        codes=[0x6, 0xC] + [0] * 30,
        values=[a, -a / 2] + [0.0] * 30,
    )


@pytest.mark.parametrize("k", [0, 7, -30, 60])
def test_amax_largest_float32_below_a_power_of_two_floor(k):
    # a = (2 - 2^-23) 2^(k-1): floor_log2 from the bits is k - 1 (a float log2 gives k).
    # mxfp8: code 127 + k - 9, x' = 512 - 2^-15 rounds to 512 > 448: saturates to 0x7E,
    # value 448 * 2^(k-9) = 0.875 * 2^k. mxfp4: code 127 + k - 3, x' = 8 - 2^-21 -> 8 > 6:
    # saturates to 0x7, value 6 * 2^(k-3) = 0.75 * 2^k.
    a = float(np.nextafter(np.float32(2.0**k), np.float32(0)))
    check(
        block(a),
        "mxfp8",
        scale=[127 + k - 9],
        codes=[0x7E] + [0] * 31,
        values=[0.875 * 2.0**k] + [0.0] * 31,
    )
    check(
        block(a),
        "mxfp4",
        scale=[127 + k - 3],
        codes=[0x7] + [0] * 31,
        values=[0.75 * 2.0**k] + [0.0] * 31,
    )


@pytest.mark.parametrize("k", [0, 7, -30, 60])
@pytest.mark.parametrize("mode", ["ceil", "midmax", "option3", "topbinade"])
def test_amax_largest_float32_below_a_power_of_two_bumps(mode, k):
    # sigma = 2 - 2^-23: above 1 (ceil), above (tau + 2) / 2 (midmax), rounds to 2 at any
    # precision (option3), above tau (topbinade): e = (k - 1) - emax + 1.
    # mxfp8: code 127 + k - 8, x' = 256 - 2^-16 -> 256 = 0x78 (value 2^k).
    # mxfp4: code 127 + k - 2, x' = 4 - 2^-22 -> 4 = 0x6 (value 2^k).
    a = float(np.nextafter(np.float32(2.0**k), np.float32(0)))
    check(
        block(a),
        "mxfp8",
        scalemode=mode,
        scale=[127 + k - 8],
        codes=[0x78] + [0] * 31,
        values=[2.0**k] + [0.0] * 31,
    )
    check(
        block(a),
        "mxfp4",
        scalemode=mode,
        scale=[127 + k - 2],
        codes=[0x6] + [0] * 31,
        values=[2.0**k] + [0.0] * 31,
    )


# ------------------------------------------------------------ scaled amax above max (§5.3)
@pytest.mark.parametrize("amax", [480.0, 500.0, float(np.nextafter(np.float32(512), 0))])
def test_e4m3_scaled_amax_in_448_512_saturates_to_448_not_nan(amax):
    # floor: E = 8 -> code 127 (scale 1); x' = amax in (448, 512) rounds to 480 or 512 > 448:
    # saturates to 448 = 0x7E (§5.2 'elements always saturate'), never the NaN code 0x7F.
    for mode in ("even", "away", "zero", "trunc"):
        check(
            block(amax, -amax),
            "mxfp8",
            roundmode=mode,
            scale=[127],
            codes=[0x7E, 0xFE] + [0] * 30,
            values=[448.0, -448.0] + [0.0] * 30,
        )


def test_e4m3_scaled_amax_above_max_bumps_under_topbinade():
    # topbinade: sigma = 480/256 = 1.875 > tau = 1.75 -> code 128 (scale 2); x' = 240 =
    # 1.875 * 2^7 = 0x77 (value 480). 500: x' = 250 in [128, 256), grid 16: 250 - 240 = 10 >
    # 8 -> 256 = 0x78 (value 512).
    check(
        block(480.0),
        "mxfp8",
        scalemode="topbinade",
        scale=[128],
        codes=[0x77] + [0] * 31,
        values=[480.0] + [0.0] * 31,
    )
    check(
        block(500.0),
        "mxfp8",
        scalemode="topbinade",
        scale=[128],
        codes=[0x78] + [0] * 31,
        values=[512.0] + [0.0] * 31,
    )


@pytest.mark.parametrize("k", [0, 5, -40])
@pytest.mark.parametrize("mode", ["even", "away", "zero", "trunc"])
def test_e2m1_scaled_amax_1_75_times_2k_saturates_under_floor(mode, k):
    # floor: E = k -> code 127 + k - 2; x' = 7: between 6 and 8 (8 > 6 = max): every mode
    # ends at 6 = 0x7 (even/away: 8 then saturate; zero/trunc: 6). Value 1.5 * 2^k.
    a = 1.75 * 2.0**k
    check(
        block(a, -a),
        "mxfp4",
        roundmode=mode,
        scale=[127 + k - 2],
        codes=[0x7, 0xF] + [0] * 30,
        values=[1.5 * 2.0**k, -1.5 * 2.0**k] + [0.0] * 30,
    )


@pytest.mark.parametrize(("mode", "code"), [("even", 0x6), ("away", 0x6), ("zero", 0x5)])
def test_e2m1_scaled_amax_1_75_times_2k_under_topbinade(mode, code):
    # tau = 6/4 = 1.5 < 1.75 -> bump: code 127 + 0 - 2 + 1 = 126; x' = 3.5: tie between
    # 3 (0x5, odd) and 4 (0x6): even -> 0x6, away -> 0x6, zero -> 0x5.
    value = {0x6: 4.0, 0x5: 3.0}[code] * 0.5
    check(
        block(1.75),
        "mxfp4",
        scalemode="topbinade",
        roundmode=mode,
        scale=[126],
        codes=[code] + [0] * 31,
        values=[value] + [0.0] * 31,
    )


# ------------------------------------------------------------ e4m3fn overflow (§4.1)
def test_e4m3_464_ties_to_448_and_464_01_overflows():
    # 464 is the tie between 448 (0x7E, odd) and 480 (beyond max): even -> 448 (0x7E).
    # f32(464.01) > 464 rounds to 480 > 448: 448 saturating, the NaN code 0x7F otherwise.
    above = float(np.float32(464.01))  # 464.0078125
    x = f32(464.0, -464.0, above, -above)
    check(x, "float8_e4m3fn", codes=[0x7E, 0xFE, 0x7E, 0xFE], values=[448, -448, 448, -448])
    check(
        x,
        "float8_e4m3fn",
        saturate=False,
        codes=[0x7E, 0xFE, 0x7F, 0xFF],
        values=[448.0, -448.0, PNAN, NNAN],
    )  # §7: -NaN code 0xFF decodes to -NaN
    # ties away: 464 -> 480 -> overflow; ties toward zero: 448
    check(x, "float8_e4m3fn", roundmode="away", saturate=False, codes=[0x7F, 0xFF, 0x7F, 0xFF])
    check(x, "float8_e4m3fn", roundmode="zero", saturate=False, codes=[0x7E, 0xFE, 0x7F, 0xFF])


def test_trunc_in_480_512_never_gives_the_e4m3fn_nan_code():
    # §4.1 (IEEE 754 §7.4): round toward zero of a finite input gives the largest finite
    # value, never Inf/NaN, even with saturate=False. Inf inputs still give the NaN code.
    x = f32(480.0, 500.0, float(np.nextafter(np.float32(512), 0)), 2.0**100, -480.0, np.inf)
    check(
        x,
        "float8_e4m3fn",
        roundmode="trunc",
        saturate=False,
        codes=[0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0x7F],
        values=[448.0, 448.0, 448.0, 448.0, -448.0, PNAN],
    )
    check(
        f32(2.0**100, -(2.0**100)),
        "float8_e5m2",
        roundmode="trunc",
        saturate=False,
        codes=[0x7B, 0xFB],
        values=[57344.0, -57344.0],
    )


def test_e5m2_61440_saturating_and_not():
    # 61440 is the tie between 57344 (0x7B, odd) and 65536 (beyond max): even -> 65536,
    # an overflow: 57344 saturating, Inf (0x7C) otherwise. The float32 below it -> 57344.
    below = float(np.nextafter(np.float32(61440), 0))
    x = f32(61440.0, -61440.0, below)
    check(x, "float8_e5m2", codes=[0x7B, 0xFB, 0x7B], values=[57344.0, -57344.0, 57344.0])
    check(
        x,
        "float8_e5m2",
        saturate=False,
        codes=[0x7C, 0xFC, 0x7B],
        values=[np.inf, -np.inf, 57344.0],
    )
    check(x, "float8_e5m2", roundmode="zero", saturate=False, codes=[0x7B, 0xFB, 0x7B])


# ------------------------------------------------------------ subnormal ties (§3.2)
@pytest.mark.parametrize(
    ("mode", "codes"),
    [
        # e4m3fn subnormal grid 2^-9: 2^-10 is the tie 0 | 0x01; 3*2^-10 the tie 0x01 | 0x02
        ("even", [0x00, 0x02, 0x80, 0x82]),
        ("away", [0x01, 0x02, 0x81, 0x82]),
        ("zero", [0x00, 0x01, 0x80, 0x81]),
        ("trunc", [0x00, 0x01, 0x80, 0x81]),
    ],
)
def test_e4m3_subnormal_ties(mode, codes):
    x = f32(2.0**-10, 3 * 2.0**-10, -(2.0**-10), -3 * 2.0**-10)
    values = [(c & 0x7F) * 2.0**-9 * (-1 if c & 0x80 else 1) for c in codes]
    values = [-0.0 if c == 0x80 else v for c, v in zip(codes, values, strict=True)]
    check(x, "float8_e4m3fn", roundmode=mode, codes=codes, values=values)


@pytest.mark.parametrize(
    ("mode", "codes", "values"),
    [
        # e2m1 subnormal grid 0.5: 0.25 is the tie 0 | 0x1 (0.5)
        ("even", [0x0, 0x8], [0.0, -0.0]),
        ("away", [0x1, 0x9], [0.5, -0.5]),
        ("zero", [0x0, 0x8], [0.0, -0.0]),
        ("trunc", [0x0, 0x8], [0.0, -0.0]),
    ],
)
def test_e2m1_subnormal_tie_0_25(mode, codes, values):
    check(f32(0.25, -0.25), "float4_e2m1fn", roundmode=mode, codes=codes, values=values)


E2M1_TIES = [0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
# e2m1 values by code: 0, 0.5, 1, 1.5, 2, 3, 4, 6 (codes 0..7)
E2M1_TIE_CODES = {
    # 0.75: 0.5|1 (0x1|0x2); 1.25: 1|1.5 (0x2|0x3); 1.75: 1.5|2 (0x3|0x4);
    # 2.5: 2|3 (0x4|0x5); 3.5: 3|4 (0x5|0x6); 5: 4|6 (0x6|0x7)
    "even": [0x2, 0x2, 0x4, 0x4, 0x6, 0x6],  # the even code of the pair
    "away": [0x2, 0x3, 0x4, 0x5, 0x6, 0x7],  # the larger magnitude
    "zero": [0x1, 0x2, 0x3, 0x4, 0x5, 0x6],  # the smaller magnitude
}
E2M1_VALUE = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


@pytest.mark.parametrize("mode", list(E2M1_TIE_CODES))
def test_e2m1_tie_table_for_every_nearest_mode(mode):
    codes = E2M1_TIE_CODES[mode]
    neg = [c | 0x8 for c in codes]
    values = [E2M1_VALUE[c] for c in codes] + [-E2M1_VALUE[c] for c in codes]
    x = f32(*E2M1_TIES, *[-t for t in E2M1_TIES])
    check(x, "float4_e2m1fn", roundmode=mode, codes=codes + neg, values=values)
    # scaled: amax 5 -> E = 2 = emax -> scale code 127 (1.0): the same ties
    xb = np.concatenate([x, np.zeros(20, np.float32)])
    check(
        xb,
        "mxfp4",
        roundmode=mode,
        scale=[127],
        codes=codes + neg + [0] * 20,
        values=values + [0.0] * 20,
    )


def test_sticky_bit_just_above_a_subnormal_tie():
    # The float32 just above 2^-10 (e4m3fn) / 0.25 (e2m1) is above the tie: every nearest mode
    # rounds up (0x01 = 2^-9; 0x1 = 0.5); just below the tie, every nearest mode rounds down.
    up = [float(np.nextafter(np.float32(v), np.float32(1))) for v in (2.0**-10, 3 * 2.0**-10)]
    dn = [float(np.nextafter(np.float32(v), np.float32(0))) for v in (2.0**-10, 3 * 2.0**-10)]
    for mode in ("even", "away", "zero"):
        check(
            f32(*up, *dn),
            "float8_e4m3fn",
            roundmode=mode,
            codes=[0x01, 0x02, 0x00, 0x01],
            values=[2.0**-9, 2.0**-8, 0.0, 2.0**-9],
        )
        e2 = float(np.nextafter(np.float32(0.25), np.float32(1)))
        e2d = float(np.nextafter(np.float32(0.25), np.float32(0)))
        check(
            f32(e2, e2d, -e2),
            "float4_e2m1fn",
            roundmode=mode,
            codes=[0x1, 0x0, 0x9],
            values=[0.5, 0.0, -0.5],
        )


# ------------------------------------------------------------ carries (§3.1)
def test_carry_into_the_next_binade():
    # e4m3fn: 1.9375 is the tie 1.875 (0x3F, odd) | 2.0 (0x40): even -> 0x40, the mantissa
    # carries into the exponent. 1.96875 > the tie -> 0x40 under zero too. Scaled: block
    # amax 256 -> scale code 127, the same element.
    check(
        f32(1.9375, 1.96875, -1.9375),
        "float8_e4m3fn",
        codes=[0x40, 0x40, 0xC0],
        values=[2.0, 2.0, -2.0],
    )
    check(
        f32(1.9375, 1.96875),
        "float8_e4m3fn",
        roundmode="zero",
        codes=[0x3F, 0x40],
        values=[1.875, 2.0],
    )
    check(
        block(256.0, 1.9375),
        "mxfp8",
        scale=[127],
        codes=[0x78, 0x40] + [0] * 30,
        values=[256.0, 2.0] + [0.0] * 30,
    )


def test_carry_from_the_largest_subnormal_to_the_smallest_normal():
    # e4m3fn: largest subnormal 7 * 2^-9 (0x07), smallest normal 2^-6 = 8 * 2^-9 (0x08);
    # 7.5 * 2^-9 is the tie: even (0x07 odd) and away -> 0x08, zero -> 0x07.
    # e5m2: 3 * 2^-16 (0x03) | 2^-14 (0x04): 3.5 * 2^-16 -> 0x04. e2m1: 0.5 (0x1) | 1.0
    # (0x2): 0.75 -> 0x2.
    t = 7.5 * 2.0**-9
    check(f32(t, -t), "float8_e4m3fn", codes=[0x08, 0x88], values=[2.0**-6, -(2.0**-6)])
    check(f32(t), "float8_e4m3fn", roundmode="away", codes=[0x08])
    check(f32(t), "float8_e4m3fn", roundmode="zero", codes=[0x07], values=[7 * 2.0**-9])
    check(f32(3.5 * 2.0**-16), "float8_e5m2", codes=[0x04], values=[2.0**-14])
    check(f32(0.75), "float4_e2m1fn", codes=[0x2], values=[1.0])


# ------------------------------------------------------------ float32 subnormal inputs
def test_float32_subnormal_inputs_unscaled():
    # far below e4m3fn's smallest subnormal 2^-9: zero magnitude, the sign kept (§4.2)
    x = f32(2.0**-149, -(2.0**-149), 2.0**-127, float(np.float32(2.0**-126) - 2.0**-149))
    check(x, "float8_e4m3fn", codes=[0x00, 0x80, 0x00, 0x00], values=[0.0, -0.0, 0.0, 0.0])
    # bfloat16 keeps them (bfloat16 has float32's exponent range): 2^-127 -> 0x0040
    check(
        f32(2.0**-127, -(2.0**-133)),
        "bfloat16",
        codes=[0x0040, 0x8001],
        values=[2.0**-127, -(2.0**-133)],
    )


def test_float32_subnormal_inputs_scaled():
    # amax = largest float32 subnormal (2^23 - 1) 2^-149: floor_log2 = -127 -> e = -135 ->
    # clamped to code 0 (2^-127). x' = x 2^127: (2^23 - 1) 2^-22 = 2 - 2^-22 -> 2.0 (0x40);
    # 2^-130 -> 2^-3 (0x20); 2^-149 -> 2^-22 -> 0; -3 * 2^-140 -> -3 * 2^-13 -> 0x80 (below
    # the half of 2^-9). Values: 2 * 2^-127 = 2^-126, 2^-130, 0, -0.
    big = float(np.float32(2.0**-126) - np.float32(2.0**-149))
    x = block(big, 2.0**-130, 2.0**-149, -3 * 2.0**-140)
    check(
        x,
        "mxfp8",
        scale=[0],
        codes=[0x40, 0x20, 0x00, 0x80] + [0] * 28,
        values=[2.0**-126, 2.0**-130, 0.0, -0.0] + [0.0] * 28,
    )
    # the same block in bfloat16: 2^-133 (bfloat16 subnormal) -> 2^-6 = 0x18
    xb = block(2.0**-130, 2.0**-133).astype(ml_dtypes.bfloat16)
    check(xb, "mxfp8", scale=[0], codes=[0x20, 0x08] + [0] * 30)


def test_scale_underflow_all_elements_2_to_minus_139():
    # amax 2^-139: floor e = -139 - emax < -127 -> code 0 (2^-127); x' = 2^-12:
    # e4m3fn (smallest subnormal 2^-9): 0 / -0; e2m1 (0.5): 0 / -0; MXINT8 2^-12 * 64 = 2^-6
    # -> 0 (no -0). Every value +-0.
    x = block(*([2.0**-139, -(2.0**-139)] * 16))
    check(x, "mxfp8", scale=[0], codes=[0x00, 0x80] * 16, values=[0.0, -0.0] * 16)
    check(x, "mxfp4", scale=[0], codes=[0x0, 0x8] * 16, values=[0.0, -0.0] * 16)
    check(x, "mxint8", scale=[0], codes=[0, 0] * 16, values=[0.0, 0.0] * 16)


# ------------------------------------------------------------ decoding scales (§5.3, §2)
def _result(dtype: str, codes, scale, shape) -> CastResult:
    dt = tcast.datatype(dtype)
    return CastResult(
        data=np.asarray(codes, np.uint8).reshape(shape),
        scale=np.asarray(scale, np.uint8),
        zero=None,
        tenscale=None,
        mask=None,
        meta=None,
        dtype=dt,
        shape=tuple(shape),
        castmode=CastMode.ACTUAL,
        input_dtype="float32",
        engine="ref",
    )


def test_decoding_scale_0x00_and_0xfe_times_448():
    # value = fl32(dec(code) * 2^(scale - 127)) (§5.3 step 4):
    # scale 0x00: 448 * 2^-127 = 1.75 * 2^-119 (normal); 2^-9 * 2^-127 = 2^-136 (float32
    # subnormal, exact); -448 -> -1.75 * 2^-119; +0 -> 0.
    # scale 0xFE: 448 * 2^127 = 1.75 * 2^135 > float32 max -> +Inf (overflow of the product);
    # -448 -> -Inf; 2^-9 * 2^127 = 2^118; 1.0 (0x38) -> 2^127.
    codes = [0x7E, 0x01, 0xFE, 0x00] + [0] * 28 + [0x7E, 0xFE, 0x01, 0x38] + [0] * 28
    res = _result("mxfp8", codes, [0x00, 0xFE], (64,))
    want = vbits(
        [1.75 * 2.0**-119, 2.0**-136, -1.75 * 2.0**-119, 0.0]
        + [0.0] * 28
        + [np.inf, -np.inf, 2.0**118, 2.0**127]
        + [0.0] * 28
    )
    assert bits(tcast_ref.upcast(res)) == want
    assert bits(tcast.upcast(res)) == want


def test_ceil_scale_of_float32_max_decodes_to_inf():
    # §5.3 step 3: ceil on amax = float32 max with MXFP4: E = 127, sigma > 1 -> e = 127 - 2 +
    # 1 = 126 -> code 253 (0xFD); x' = (2 - 2^-23) * 2 = 4 - 2^-22 -> 4 (0x6); value
    # 4 * 2^126 = 2^128 -> +Inf in float32.
    mx = float(np.finfo(np.float32).max)
    check(
        block(mx, -mx),
        "mxfp4",
        scalemode="ceil",
        scale=[0xFD],
        codes=[0x6, 0xE] + [0] * 30,
        values=[np.inf, -np.inf] + [0.0] * 30,
    )


@pytest.mark.parametrize(
    ("dtype", "bits_", "ml"),
    [
        ("mxfp8", 8, ml_dtypes.float8_e4m3fn),
        ("mxfp8e5", 8, ml_dtypes.float8_e5m2),
        ("mxfp6e2", 6, ml_dtypes.float6_e2m3fn),
        ("mxfp6e3", 6, ml_dtypes.float6_e3m2fn),
        ("mxfp4", 4, ml_dtypes.float4_e2m1fn),
        ("mxint8", 8, np.int8),
    ],
)
def test_scale_0xff_decodes_every_element_code_to_nan(dtype, bits_, ml):
    # §2 / §5.2: e8m0 code 0xFF is NaN; NaN times any element value is NaN: every code of
    # the element format decodes to +NaN under it. A second group of blocks with scale 127
    # (2^0) decodes each code to its own value (ml_dtypes as the oracle; MXINT8 code * 2^-6).
    n = 1 << bits_
    count = max(n, 32)
    codes = np.arange(count) % n
    res = _result(
        dtype,
        np.concatenate([codes, codes]),
        [0xFF] * (count // 32) + [127] * (count // 32),
        (2 * count,),
    )
    up = tcast_ref.upcast(res)
    assert bits(up[:count]) == [0x7FC00000] * count
    own = codes.astype(np.uint8).view(ml).astype(np.float32)
    if dtype == "mxint8":
        own = own * np.float32(2.0**-6)
    finite = ~np.isnan(own)
    assert bits(up[count:][finite]) == bits(own[finite])
    assert np.isnan(up[count:][~finite]).all()


# ------------------------------------------------------------ fnuz (§1.1, §2, §4.2)
def test_fnuz_nan_and_negative_zero():
    # e4m3b8fnuz: one NaN (0x80), no -0: NaN and -NaN -> 0x80 (+NaN); -0 and a negative
    # value rounding to zero (-2^-12 < half of 2^-10) -> 0x00 (+0). Overflow: +-max 240
    # (0x7F / 0xFF) saturating, NaN (0x80) under the IEEE option; Inf likewise.
    x = f32(np.nan, -np.nan, -0.0, -(2.0**-12), 2.0**30, -(2.0**30), np.inf, -np.inf)
    check(
        x,
        "float8_e4m3fnuz",
        codes=[0x80, 0x80, 0, 0, 0x7F, 0xFF, 0x7F, 0xFF],
        values=[PNAN, PNAN, 0.0, 0.0, 240.0, -240.0, 240.0, -240.0],
    )
    check(
        x,
        "float8_e4m3fnuz",
        saturate=False,
        codes=[0x80, 0x80, 0, 0] + [0x80] * 4,
        values=[PNAN, PNAN, 0.0, 0.0] + [PNAN] * 4,
    )
    # e5m2b16fnuz: max 57344 (0x7F)
    check(
        f32(np.nan, -0.0, -(2.0**30)),
        "float8_e5m2fnuz",
        codes=[0x80, 0x00, 0xFF],
        values=[PNAN, 0.0, -57344.0],
    )
    # scaled with an fnuz element: amax 1 -> E = 0, emax 7 -> code 120; x' = 128 (0x78);
    # -0 and -2^-100 * 2^7 (underflow) -> +0.
    check(
        block(-0.0, 1.0, -(2.0**-100)),
        "e4m3b8fnuz_e8m0_t32",
        scale=[120],
        codes=[0x00, 0x78, 0x00] + [0] * 29,
        values=[0.0, 1.0, 0.0] + [0.0] * 29,
    )


def test_e4m3fn_to_e4m3fnuz_is_not_a_bit_copy():
    # Every e4m3fn value re-encoded into e4m3fnuz (bias 8: one exponent step lower).
    # Magnitude code m of e4m3fn, sign s:
    #  normal 0x08..0x77: the same value one exponent field higher: m + 0x08;
    #  subnormal 0x01..0x07 (m * 2^-9 = 2m * 2^-10): code 2m (fnuz subnormal/normal boundary);
    #  0x78..0x7E (256..448 > 240): saturate to 0x7F; 0x00 (+-0): 0x00 (no -0);
    #  0x7F (NaN): 0x80.
    src = np.arange(256, dtype=np.uint8)
    x = src.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    want = []
    for c in src.tolist():
        s, m = c & 0x80, c & 0x7F
        if m == 0x7F:
            want.append(0x80)
        elif m == 0:
            want.append(0x00)
        elif m < 0x08:
            want.append(s | 2 * m)
        elif m <= 0x77:
            want.append(s | (m + 0x08))
        else:
            want.append(s | 0x7F)
    res, _ = check(x, "float8_e4m3fnuz", codes=want)
    assert (res.data != src).sum() >= 250


# ------------------------------------------------------------ MXINT8 (§5.4)
@pytest.mark.parametrize("k", [0, 20, -100])
def test_mxint8_clamps_at_plus_minus_127_over_64(k):
    # amax = 511/256 * 2^k: E = k -> code 127 + k; x' * 64 = +-127.75 -> +-128 -> clamp
    # +-127 (0x7F / 0x81): values +-127/64 * 2^k; never the code -128 (0x80). 1 -> 0x40,
    # -1 -> -64 = 0xC0; 127/64 -> 127 = 0x7F.
    s = 2.0**k
    x = block(511 / 256 * s, -511 / 256 * s, 1.0 * s, -1.0 * s, 127 / 64 * s)
    want = [0x7F, 0x81, 0x40, 0xC0, 0x7F] + [0] * 27
    values = [127 / 64 * s, -127 / 64 * s, s, -s, 127 / 64 * s] + [0.0] * 27
    for mode in ("even", "away", "zero", "trunc"):
        check(x, "mxint8", roundmode=mode, scale=[127 + k], codes=want, values=values)


def test_mxint8_never_produces_code_minus_128_on_random_negative_blocks():
    rng = np.random.default_rng(8)
    x = -np.abs(rng.standard_normal((64, 32))).astype(np.float32)
    x[:, 0] = -2.0 + np.float32(2.0**-8) * rng.integers(0, 3, 64)  # near -2 * 2^E
    res = tcast_ref.cast(x, "mxint8", castmode="actual")
    assert not (res.data == 0x80).any()


# ------------------------------------------------------------ stochastic rounding (§3.2)
def test_stochastic_rounding_with_8_bit_rbits_all_zeros_and_all_ones():
    # K = 8 for e4m3fn: up iff floor(frac 2^8) + r >= 2^8. On the e4m3fn grid 2^-3 around 1,
    # 1 + 2^-11 has frac 2^-8 (floor(frac 2^8) = 1) and 1 + 2^-12 has frac 2^-9 (floor 0).
    # r = 0: never up (truncation). r = 2^8 - 1: up for every frac >= 2^-8, so 1 + 2^-11 goes
    # up and 1 + 2^-12 stays (the bias below 2^-K ulp). 1.125 (0x39) and 0 are exact: never
    # move. Subnormal grid 2^-9: 2^-17 has frac 2^-8 -> up with all ones to 0x01; 2^-18 has
    # frac 2^-9 -> never up. 464 (frac 1/2 between 448 and 480) with all ones -> 480 > max:
    # saturates to 0x7E (saturate=True).
    x = f32(
        1 + 2.0**-11, -(1 + 2.0**-11), 1.125, -1.125, 1 + 2.0**-12, 0.0, 2.0**-17, 2.0**-18, 464.0
    )
    zeros = np.zeros(x.shape, np.uint8)
    ones = np.full(x.shape, ONES, np.uint8)
    check(
        x,
        "float8_e4m3fn",
        roundmode="stochastic",
        rbits=zeros,
        codes=[0x38, 0xB8, 0x39, 0xB9, 0x38, 0x00, 0x00, 0x00, 0x7E],
    )
    check(
        x,
        "float8_e4m3fn",
        roundmode="stochastic",
        rbits=ones,
        codes=[0x39, 0xB9, 0x39, 0xB9, 0x38, 0x00, 0x01, 0x00, 0x7E],
    )
    # the IEEE option: 464 rounded up to 480 overflows to the NaN code
    check(
        x[-1:],
        "float8_e4m3fn",
        roundmode="stochastic",
        rbits=ones[-1:],
        saturate=False,
        codes=[0x7F],
    )
    # 2^-17 with r = 2^8 - 2: floor(2^-8 * 2^8) + r = 2^8 - 1 < 2^8: stays 0. 1 + 2^-4 (frac
    # 1/2, floor 128): up with r = 0x80 (128 + 128 = 2^8), down with r = 0x7F.
    check(
        f32(2.0**-17, 1 + 2.0**-4, 1 + 2.0**-4),
        "float8_e4m3fn",
        roundmode="stochastic",
        rbits=np.array([0xFE, 0x80, 0x7F], np.uint8),
        codes=[0x00, 0x39, 0x38],
    )


def test_stochastic_rounding_of_16_bit_formats_takes_16_random_bits():
    # K = 16 for bfloat16 and float16: up iff floor(frac 2^16) + r >= 2^16.
    # bfloat16, grid 2^-7 around 1: 1 + 2^-23 has frac 2^-16 (floor 1): up only for
    # r = 0xFFFF (to 1 + 2^-7, 0x3F81); r = 0xFFFE stays at 1.0 (0x3F80).
    x = f32(1 + 2.0**-23, 1 + 2.0**-23, -(1 + 2.0**-23))
    rb = np.array([0xFFFF, 0xFFFE, 0xFFFF], np.uint16)
    check(x, "bfloat16", roundmode="stochastic", rbits=rb, codes=[0x3F81, 0x3F80, 0xBF81])
    # float16, grid 2^-10 around 1: 1 + 2^-23 has frac 2^-13 (floor(frac 2^16) = 8): up iff
    # r >= 2^16 - 8 (0xFFF8 -> 0x3C01), down for 0xFFF7; 1 + 2^-11 (frac 1/2, floor 2^15):
    # up iff r >= 2^15.
    x = f32(1 + 2.0**-23, 1 + 2.0**-23, 1 + 2.0**-11, 1 + 2.0**-11)
    rb = np.array([0xFFF8, 0xFFF7, 0x8000, 0x7FFF], np.uint16)
    check(x, "float16", roundmode="stochastic", rbits=rb, codes=[0x3C01, 0x3C00, 0x3C01, 0x3C00])


def test_stochastic_exactly_representable_inputs_never_move():
    # Every e4m3fn value (finite codes) is exact: any random bits leave it unchanged.
    src = np.arange(256, dtype=np.uint8)
    x = src.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    keep = ~np.isnan(x)
    x, src = x[keep], src[keep]
    rng = np.random.default_rng(3)
    for rb in (
        np.zeros(x.shape, np.uint8),
        np.full(x.shape, ONES, np.uint8),
        rng.integers(0, 1 << 8, x.shape, dtype=np.uint8),
    ):
        res, virt = check(x, "float8_e4m3fn", roundmode="stochastic", rbits=rb)
        assert res.data.tolist() == src.tolist()
        assert bits(virt) == bits(x)


def test_stochastic_in_a_scaled_block():
    # amax 256 -> scale code 127 (1.0): the elements round as unscaled (see above), with
    # K = 8 random bits: 1 + 2^-11 goes up with all ones, 1 + 2^-12 never.
    x = block(256.0, 1 + 2.0**-11, 1.125, -(1 + 2.0**-11), 1 + 2.0**-12)
    ones = np.full(32, ONES, np.uint8)
    check(
        x,
        "mxfp8",
        roundmode="stochastic",
        rbits=np.zeros(32, np.uint8),
        scale=[127],
        codes=[0x78, 0x38, 0x39, 0xB8, 0x38] + [0] * 27,
    )
    check(
        x,
        "mxfp8",
        roundmode="stochastic",
        rbits=ones,
        scale=[127],
        codes=[0x78, 0x39, 0x39, 0xB9, 0x38] + [0] * 27,
    )


# ------------------------------------------------------------ partial tiles (§5.1)
def test_partial_last_tile_uses_only_its_real_elements():
    # 40 elements, t32: blocks [0, 32) and [32, 40). Block 0: 1.0 -> E = 0, code 119,
    # x' = 256 (0x78). Block 1 (8 elements): amax 3 -> E = 1, code 120; x' = x * 2^7:
    # 384 = 1.5 * 2^8 (0x7C), 192 (0x74), -96 (0xEC), 0.
    x = np.concatenate([np.ones(32, np.float32), f32(3.0, 1.5, -0.75, 0, 0, 0, 0, 0)])
    res, _ = check(
        x,
        "mxfp8",
        scale=[119, 120],
        codes=[0x78] * 32 + [0x7C, 0x74, 0xEC] + [0] * 5,
        values=[1.0] * 32 + [3.0, 1.5, -0.75] + [0.0] * 5,
    )
    assert res.scale.shape == (2,)
    # negative-only partial tile: a padding zero must not become the maximum of a uint range
    # (the range includes 0 anyway, §5.7) nor the amax (checked by the oracle)
    check(-np.abs(x), "uint8_float32_int8_t32")


@pytest.mark.parametrize(
    ("dtype", "shape"),
    [
        ("mxfp8_2d", (40, 36)),
        ("e4m3fn_e8m0_t16_t16", (17, 33)),
        ("e4m3fn_e8m0_t32n2m4", (3, 34)),  # the last sparsity group has 2 elements: both kept
        ("uint4_float32_int8_t32", (2, 45)),
        ("nvfp4", (3, 20)),
    ],
)
def test_partial_tiles_against_the_exact_model(dtype, shape):
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(shape) * 2.0 ** rng.integers(-6, 6, shape)).astype(np.float32)
    res, _ = check(x, dtype)
    if "n2m4" in dtype:
        assert res.mask[:, 32:].all()  # min(N, group size) of a short group


# ------------------------------------------------------------ packing odd counts (§8)
def test_odd_element_count_packed_as_fp4():
    # codes 1, 2, 3, 4, 7 (0.5, 1, 1.5, 2, 6); element 2i in the low nibble of byte i:
    # 0x21, 0x43, then 0x07 (the unused high nibble is 0).
    x = f32(0.5, 1.0, 1.5, 2.0, 6.0)
    check(x, "float4_e2m1fn", codes=[1, 2, 3, 4, 7])
    res = tcast_ref.cast(x, "float4_e2m1fn", castmode="compress")
    assert res.data.tolist() == [0x21, 0x43, 0x07]
    assert bits(tcast_ref.upcast(res)) == bits(x)
    # scaled MXFP4, 33 elements of 4.0 (amax 4 -> scale code 127, code 0x6): 16 bytes 0x66
    # and a last byte 0x06
    xs = np.full(33, 4.0, np.float32)
    res = tcast_ref.cast(xs, "mxfp4", castmode="compress")
    assert res.data.tolist() == [0x66] * 16 + [0x06]
    assert res.scale.tolist() == [127, 127]
    assert bits(tcast_ref.upcast(res)) == bits(xs)


@pytest.mark.parametrize("dtype", ["float6_e2m3fn", "mxfp6e2"])
def test_odd_element_count_packed_as_fp6(dtype):
    # e2m3 (bias 1, 3 mantissa bits): 1.0 = 0b001000 (0x08), 2.0 = 0x10, 0.125 = subnormal
    # 1 * 2^-3 (0x01), 7.5 = max (0x1F), -1.0 = 0x28. (Scaled: amax 7.5 -> E = 2 = emax ->
    # scale 1.0, the same codes.) Element i in stream bits [6i, 6i + 6):
    # 0x08 | 0x10 << 6 | 0x01 << 12 | 0x1F << 18 | 0x28 << 24 = 0x287C1408: bytes
    # 08 14 7C 28 (the two unused top bits are 0).
    x = f32(1.0, 2.0, 0.125, 7.5, -1.0)
    check(x, dtype, codes=[0x08, 0x10, 0x01, 0x1F, 0x28])
    res = tcast_ref.cast(x, dtype, castmode="compress")
    assert res.data.tolist() == [0x08, 0x14, 0x7C, 0x28]
    assert bits(tcast_ref.upcast(res)) == bits(x)


# ------------------------------------------------------------ uint with a zero point (§5.7)
@pytest.mark.parametrize(
    ("mode", "codes"),
    [
        # lo = 0, hi = 255: s = 1, r = 1, z = 0; code = round(x): .5 ties
        ("even", [0, 255, 0, 2, 2, 4, 254]),
        ("away", [0, 255, 1, 2, 3, 4, 255]),
        ("zero", [0, 255, 0, 1, 2, 3, 254]),
        ("trunc", [0, 255, 0, 1, 2, 3, 254]),
    ],
)
def test_uint_zero_point_half_ties(mode, codes):
    x = f32(0.0, 255.0, 0.5, 1.5, 2.5, 3.5, 254.5)
    check(
        x,
        "uint8_FF",
        roundmode=mode,
        codes=codes,
        scale=[0x3F800000],
        zero=[0],
        values=[float(c) for c in codes],
    )


def test_uint_zero_point_negative_inputs():
    # lo = -10, hi = 245: range 255 -> s = 1 (0x3F800000); z = encode(fl32(0 - -10) * 1) =
    # 10.0 (float32 0x41200000). code = round(x + 10): -10 -> 0, 245 -> 255, 0 -> 10,
    # -9.5 -> 0.5 -> 0 (even), 100.25 -> 110.25 -> 110. value = (code - 10) * 1.
    x = f32(-10.0, 245.0, 0.0, -9.5, 100.25)
    check(
        x,
        "uint8_FF",
        codes=[0, 255, 10, 0, 110],
        scale=[0x3F800000],
        zero=[0x41200000],
        values=[-10.0, 245.0, 0.0, -10.0, 100.0],
    )
    # uint4, channel scale: lo = -15, hi = 0 -> s = 1, z = 15; -7.5 -> 7.5 and -6.5 -> 8.5:
    # even 8, 8; away 8, 9; zero 7, 8.
    x4 = f32(-15.0, 0.0, -7.5, -6.5).reshape(1, 4)
    for mode, c in (("even", [8, 8]), ("away", [8, 9]), ("zero", [7, 8])):
        check(
            x4,
            "uint4_FFc",
            roundmode=mode,
            codes=[0, 15, *c],
            scale=[0x3F800000],
            zero=[0x41700000],
            values=[-15.0, 0.0] + [v - 15.0 for v in c],
        )


def test_uint_unsigned_zero_point_does_not_clamp():
    # the clamping case below with a uint8 zero point: lo = -200, hi = 55, s = 1,
    # z = encode(200, uint8) = 200 (code 0xC8, no clamp). code = round(x + 200): 0, 255, 200,
    # 100; values (code - 200) * 1 are exact.
    x = f32(-200.0, 55.0, 0.0, -100.0)
    check(
        x,
        "uint8_float32_uint8",
        codes=[0, 255, 200, 100],
        scale=[0x3F800000],
        zero=[200],
        values=[-200.0, 55.0, 0.0, -100.0],
    )


def test_uint_zero_point_clamping():
    # int8 zero point: lo = -200, hi = 55, range 255 -> s = 1; z = encode(200, int8) ->
    # clamped to 127 (0x7F). code = clamp(round(x + 127), 0, 255): -200 -> -73 -> 0,
    # 55 -> 182, 0 -> 127, -100 -> 27; values (code - 127) * 1: -127 (saturated), 55, 0, -100.
    x = f32(-200.0, 55.0, 0.0, -100.0)
    check(
        x,
        "uint8_Fi",
        codes=[0, 182, 127, 27],
        scale=[0x3F800000],
        zero=[0x7F],
        values=[-127.0, 55.0, 0.0, -100.0],
    )
    # e4m3fn scale: range 300 -> 300/255 = 1.1765 -> RNE_e4m3 = 1.125 (0x39; 1.25 is farther);
    # r = fl32(1/1.125) = 0.8888889; 300 r = 266.67 -> clamp 255; value 255 * 1.125 = 286.875.
    check(
        f32(0.0, 300.0), "uint8_ni", codes=[0, 255], scale=[0x39], zero=[0], values=[0.0, 286.875]
    )
