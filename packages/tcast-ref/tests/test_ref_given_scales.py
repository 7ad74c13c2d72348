"""tcast_ref casts with given scales, zero points and tensor scales (SEMANTICS.md §5.12)
against the exact model, bit for bit, and the refusals of given parts."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tcast
import tcast.exact as ex
import tcast_ref
from tcast import SpecError

_NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}

# (datatype, shape, parts given, cast keywords)
CASES = [
    ("mxfp8", (3, 64), ("scale",), {}),
    ("mxfp4", (2, 40), ("scale",), {"roundmode": "stochastic", "seed": 5}),  # partial tile
    ("mxint8", (2, 32), ("scale",), {"roundmode": "away"}),
    ("e4m3fn_e8m0_t8_t16", (20, 36), ("scale",), {"transpose_scale": True}),  # 2-D swapped: (2, 5)
    ("e4m3fn_e8m0_t8d1", (3, 17, 5), ("scale",), {}),  # a middle dimension, a partial tile
    ("e2m1f_e4m3fn_t16", (4, 32), ("scale",), {}),  # float scale
    ("int8_float32_t0", (5, 12), ("scale",), {}),  # channel
    ("e2m1f_e8m0_t8n2m4", (2, 16), ("scale",), {}),  # sparsity
    ("e4m3fn_e8m0_t32d0", (64, 3), ("scale",), {}),  # down the columns
    ("e3m2f_float32", (5, 7), ("scale",), {}),  # one tensor scale, shape ()
    ("nvfp4", (4, 32), ("tensor_scale",), {}),
    ("nvfp4", (4, 32), ("scale",), {}),
    ("nvfp4", (4, 32), ("scale", "tensor_scale"), {"roundmode": "stochastic", "seed": 1}),
    ("uint8_float32_uint8_t0", (4, 9), ("scale",), {}),
    ("uint8_float32_uint8_t0", (4, 9), ("zero",), {}),
    ("uint4_e5m0_int4_t8", (2, 16), ("scale", "zero"), {}),  # exponent scale, signed zero
]


def _x(shape, specials: bool) -> np.ndarray:
    x = (np.random.default_rng(7).standard_t(3, shape) * 4.0).astype(np.float32)
    if specials:
        x.reshape(-1)[[1, -1]] = (np.nan, -np.inf)  # two non-finite blocks (first and last)
    return x


def _given(code, shape, parts, kw) -> dict:
    """Given values: the computed ones halved or doubled, and arbitrary float32 values."""
    dt = tcast.datatype(code)
    layout = tcast.block_layout(shape, dt, kw.get("transpose_scale", False))
    rng = np.random.default_rng(11)
    out = {}
    if "scale" in parts:
        v = np.exp2(rng.integers(-4, 4, layout.scale_shape)) * rng.uniform(0.5, 1.5)
        out["scale"] = v.astype(np.float32).reshape(layout.scale_shape)
    if "zero" in parts:
        out["zero"] = rng.integers(-3, 12, layout.scale_shape).astype(np.float32)
    if "tensor_scale" in parts:
        out["tensor_scale"] = 0.375  # a real number for a part of shape ()
    return out


def _exact_kw(given: dict) -> dict:
    out = {}
    for name in ("scale", "zero"):
        if name in given:
            out[name] = np.asarray(given[name], np.float32).reshape(-1).tolist()
    if "tensor_scale" in given:
        out["tensor_scale"] = given["tensor_scale"]
    return out


@pytest.mark.parametrize("specials", [False, True])
@pytest.mark.parametrize(("code", "shape", "parts", "kw"), CASES)
def test_casts_with_given_parts_equal_the_exact_model(code, shape, parts, kw, specials):
    x = _x(shape, specials)
    given = _given(code, shape, parts, kw)
    want = ex.cast_array(x.reshape(-1).tolist(), shape, code, **kw, **_exact_kw(given))
    got = tcast_ref.cast(x, code, castmode="actual", **kw, **given)
    np.testing.assert_array_equal(got.data.reshape(-1), np.asarray(want.codes))
    np.testing.assert_array_equal(got.scale.reshape(-1), np.asarray(want.scale))
    if want.zero is not None:
        np.testing.assert_array_equal(got.zero.reshape(-1), np.asarray(want.zero))
    if want.tenscale is not None:
        assert int(got.tenscale) == want.tenscale
    virtual = tcast_ref.cast(x, code, **kw, **given)
    np.testing.assert_array_equal(
        virtual.reshape(-1).view(np.uint32), np.asarray(want.values, np.float32).view(np.uint32)
    )
    # the result decodes as any other: its scales are the codes the cast used
    np.testing.assert_array_equal(tcast_ref.upcast(got).view(np.uint32), virtual.view(np.uint32))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_given_parts_of_narrower_float_dtypes_widen_exactly(dtype):
    x = _x((2, 64), False)
    scale = np.array([[0.75, 3.0], [1.0, 0.0]], _NP[dtype])
    got = tcast_ref.cast(x, "mxfp8", castmode="actual", scale=scale)
    want = tcast_ref.cast(x, "mxfp8", castmode="actual", scale=scale.astype(np.float32))
    np.testing.assert_array_equal(got.scale, want.scale)
    np.testing.assert_array_equal(got.data, want.data)


def test_the_front_door_takes_given_parts_through_the_reference_engine():
    x = _x((2, 32), False)
    a = tcast.cast(x, "nvfp4", castmode="actual", tensor_scale=2.0, scale=np.ones((2, 2), "f4"))
    b = tcast_ref.cast(x, "nvfp4", castmode="actual", tensor_scale=2.0, scale=np.ones((2, 2), "f4"))
    assert int(a.tenscale) == int(b.tenscale) == 0x40000000
    np.testing.assert_array_equal(a.data, b.data)


@pytest.mark.parametrize(
    ("code", "given", "err", "match"),
    [
        ("mxfp8", {"scale": np.ones((2, 2), np.float32)}, SpecError, r"shape \(2, 2\).*\(2, 1\)"),
        ("mxfp8", {"scale": np.ones((2, 1))}, SpecError, "float32, float16 or bfloat16"),
        ("nvfp4", {"tensor_scale": 10**400}, SpecError, "not a float32 value"),
        ("mxfp8", {"scale": np.array([[1.0], [-2.0]], "f4")}, SpecError, r"scale\[1, 0\] is -2.0"),
        ("mxfp8", {"scale": np.array([[np.nan], [1]], "f4")}, SpecError, r"scale\[0, 0\] is nan"),
        ("mxfp8", {"zero": np.zeros((2, 1), "f4")}, SpecError, "no zero point"),
        ("mxfp8", {"tensor_scale": 1.0}, SpecError, "one scale level"),
        ("e4m3fn", {"scale": 1.0}, SpecError, "unscaled"),
        ("mx6", {"scale": np.ones((2, 2), "f4")}, SpecError, "not defined"),
        ("nvfp4", {"tensor_scale": 0.1}, SpecError, "not a float32 value"),
        ("nvfp4", {"tensor_scale": np.ones(1, "f4")}, SpecError, r"shape \(1,\)"),
        ("uint8_float32_uint8_t0", {"zero": np.full((2, 1), np.inf, "f4")}, SpecError, "finite"),
    ],
)
def test_bad_given_parts_are_refused_naming_the_part(code, given, err, match):
    x = _x((2, 32), False)
    with pytest.raises(err, match=match):
        tcast.cast(x, code, castmode="actual", **given)
    with pytest.raises(err, match=match):
        tcast_ref.cast(x, code, castmode="actual", **given)
