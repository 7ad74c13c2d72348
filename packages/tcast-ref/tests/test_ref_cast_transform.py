"""tcast_ref casts with a transform (SEMANTICS.md §5.11) against the exact model, bit for bit."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tcast
import tcast.exact as ex
import tcast_ref
from tcast import Hadamard, SpecError

_NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}

CASES = [
    ("nvfp4", (3, 32), Hadamard.te_wgrad(), "bfloat16", {}),
    ("mxfp4", (2, 64), Hadamard.seeded(32, 3), "float32", {"scalemode": "ceil"}),
    ("mxfp6e2", (2, 64), Hadamard.seeded(64, 8), "float16", {"roundmode": "zero"}),
    ("e4m3fn_e8m0_t32d0", (64, 3), Hadamard.seeded(16, 1), "float32", {}),
    ("mxint8", (1, 64), Hadamard.of(8), "float32", {"roundmode": "stochastic", "seed": 9}),
    ("uint4_float32_float32_t32", (2, 32), Hadamard.seeded(4, 2), "bfloat16", {}),
]


def _x(shape, in_dtype: str, specials: bool = False) -> np.ndarray:
    x = np.random.default_rng(3).standard_t(3, shape) * 2.0  # heavy tails
    if specials:
        x.reshape(-1)[:3] = (np.nan, np.inf, -0.0)
    return x.astype(_NP[in_dtype])


@pytest.mark.parametrize(("code", "shape", "h", "in_dtype", "kw"), CASES)
def test_casts_with_a_transform_equal_the_exact_model(code, shape, h, in_dtype, kw):
    x = _x(shape, in_dtype)
    want = ex.cast_array(
        x.astype(np.float32).reshape(-1).tolist(), shape, code, input_dtype=in_dtype,
        transform=h, **kw,
    )  # fmt: skip
    virtual = tcast_ref.cast(x, code, transform=h, **kw)
    assert virtual.dtype == x.dtype
    np.testing.assert_array_equal(
        virtual.astype(np.float32).reshape(-1).view(np.uint32),
        np.asarray(want.values, np.float32).view(np.uint32),
    )
    for mode in ("actual", "compress"):
        got = tcast_ref.cast(x, code, castmode=mode, transform=h, **kw)
        assert got.transform == h and got.input_dtype == in_dtype
        if mode == "actual":
            np.testing.assert_array_equal(got.data.reshape(-1), np.asarray(want.codes))
            np.testing.assert_array_equal(got.scale.reshape(-1), np.asarray(want.scale))
        # upcast: the virtual cast's values as float32
        np.testing.assert_array_equal(
            tcast_ref.upcast(got).view(np.uint32), virtual.astype(np.float32).view(np.uint32)
        )


def test_specials_pass_through_the_transform_as_the_exact_model_says():
    h = Hadamard.seeded(16, 2)
    x = _x((2, 32), "float32", specials=True)  # a NaN, an Inf and -0 in the first group
    want = ex.cast_array(x.reshape(-1).tolist(), (2, 32), "nvfp4", transform=h)
    got = tcast_ref.cast(x, "nvfp4", castmode="actual", transform=h)
    np.testing.assert_array_equal(got.data.reshape(-1), np.asarray(want.codes))
    np.testing.assert_array_equal(got.scale.reshape(-1), np.asarray(want.scale))
    assert int(got.tenscale) == want.tenscale


def test_a_transform_the_datatype_cannot_take_is_refused():
    x = np.zeros((2, 48), np.float32)
    with pytest.raises(SpecError, match="multiple"):
        tcast_ref.cast(x, "mxfp4", transform=Hadamard.of(32))
    with pytest.raises(SpecError, match="unscaled"):
        tcast.cast(x, "e4m3fn", transform=Hadamard.of(16), engine="ref")


@pytest.mark.parametrize("transposed", [False, True])
def test_cast_dual_transforms_one_side_as_its_single_cast(transposed):
    """The column side alone: the single cast of the column tiling with the transform."""
    h = Hadamard.te_wgrad()
    x = _x((32, 48), "bfloat16")
    rows, cols = tcast_ref.cast_dual(
        x, "nvfp4", transposed=transposed, column_transform=h, scale_layout="blocked"
    )
    assert rows.transform is None and cols.transform == h
    want_rows = tcast_ref.cast(x, "nvfp4", castmode="actual", scale_layout="blocked")
    np.testing.assert_array_equal(rows.data, want_rows.data)
    col_dt = tcast.kit.column_datatype(tcast.datatype("nvfp4"))
    want = tcast_ref.cast(x, col_dt, castmode="actual", transform=h)
    values = tcast_ref.upcast(want)
    if transposed:  # the result for xᵀ: its last dimension is the transformed one
        assert cols.shape == (48, 32)
        np.testing.assert_array_equal(cols.data, want.data.T)
        values = values.T
    else:
        np.testing.assert_array_equal(cols.data, want.data)
    np.testing.assert_array_equal(tcast_ref.upcast(cols).view(np.uint32), values.view(np.uint32))
    with pytest.raises(SpecError, match=r"tcast\.Hadamard"):
        tcast_ref.cast_dual(x, "nvfp4", row_transform="te_wgrad")


def test_an_engine_without_transforms_refuses_to_cast_or_decode_with_one():
    from tcast import UnsupportedError
    from tcast_ref._engine import RefEngine

    class NoTransforms(RefEngine):
        name = "no-transforms"
        transforms = False

    eng, h = NoTransforms(), Hadamard.of(32)
    x = _x((2, 64), "float32")
    result = tcast_ref.cast(x, "mxfp4", castmode="actual", transform=h)
    with pytest.raises(UnsupportedError, match="transform"):
        eng.upcast(result)
    with pytest.raises(UnsupportedError, match="does not support"):
        tcast.kit.cast_with(eng, x, "mxfp4", castmode="actual", transform=h)
