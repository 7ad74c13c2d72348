"""tcast_ref's API: bad input, layouts, ranks, dimensions, and ml_dtypes views of the codes.

* Bad input to ``tcast_ref.cast`` and through ``tcast.cast(numpy_array)``: the right
  ``TcastError`` subclass, a message naming the problem, nothing cast halfway (the input,
  and the random bits, unchanged).
* Non-contiguous views (steps, transposes, negative strides, broadcasts) give the bits of
  their contiguous copies; any rank 0..4 and scaling along any dimension agree with the
  exact model.
* ``CastResult`` codes are viewable as the matching ml_dtypes dtype (SEMANTICS.md §8):
  ``data.view(<ml_dtypes type>)`` decoded and multiplied by the scale (viewed likewise)
  equals ``upcast``, bit for bit.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tcast
import tcast_ref
from tcast import EngineNotFoundError, SpecError, TcastError, UnsupportedError
from tcast.exact import block_indices, cast_array

CASTS = {"tcast_ref.cast": tcast_ref.cast, "tcast.cast": tcast.cast}


def _bits(a: np.ndarray) -> np.ndarray:
    """The raw bytes of an array, C order (copies: a later write to ``a`` cannot change it)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8).copy()


def _x(shape=(4, 64), seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 2.0 ** rng.integers(-8, 8, shape)).astype(np.float32)


# ------------------------------------------------------------ bad input dtypes (§9)
BAD_DTYPES = [
    np.float64,
    np.int32,
    np.int8,
    np.uint8,
    np.int64,
    np.complex64,
    np.complex128,
    np.bool_,
    np.longdouble,
    ml_dtypes.float8_e4m3fn,
    ml_dtypes.int4,
]


@pytest.mark.parametrize("castmode", ["virtual", "actual", "compress"])
@pytest.mark.parametrize("dtype", BAD_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("entry", list(CASTS))
def test_rejects_input_dtypes_other_than_float32_float16_bfloat16(entry, dtype, castmode):
    x = np.ones((2, 32)).astype(dtype)
    before = _bits(x)
    for dt in ("mxfp8", "float8_e4m3fn"):
        name = np.dtype(dtype).name
        with pytest.raises(UnsupportedError, match=f"of dtype {name}:") as info:
            CASTS[entry](x, dt, castmode=castmode)
        assert isinstance(info.value, TcastError)
        # each rejected dtype is named: float64 only in float64's own message
        assert ("float64" in str(info.value)) == (name == "float64")
    assert np.array_equal(_bits(x), before)  # nothing cast halfway


@pytest.mark.parametrize(
    "bad",
    [[1.0] * 32, (1.0,) * 32, 1.0, np.float32(1.0), "1.0", None],
    ids=["list", "tuple", "float", "np.float32", "str", "None"],
)
def test_rejects_non_numpy_input(bad):
    with pytest.raises(UnsupportedError, match="NumPy arrays"):
        tcast_ref.cast(bad, "mxfp8")
    # the front door finds no engine for it and says what to pass instead (tcast-ref is
    # installed: nothing to install)
    with pytest.raises(EngineNotFoundError, match=r"pass np\.asarray\(x, dtype=np\.float32\)"):
        tcast.cast(bad, "mxfp8")


# ------------------------------------------------------------ random bits (§3.3)
@pytest.mark.parametrize("entry", list(CASTS))
def test_seed_together_with_rbits_is_a_spec_error(entry):
    x = _x()
    rb = np.zeros(x.shape, np.uint8)  # well-formed K = 8 bits for mxfp8
    before, rb_before = _bits(x), _bits(rb)
    with pytest.raises(SpecError, match="not both"):
        CASTS[entry](x, "mxfp8", roundmode="stochastic", seed=1, rbits=rb)
    assert np.array_equal(_bits(x), before) and np.array_equal(_bits(rb), rb_before)


@pytest.mark.parametrize("entry", list(CASTS))
def test_seed_or_rbits_without_stochastic_rounding_is_a_spec_error(entry):
    x = _x()
    for kw in ({"seed": 1}, {"rbits": np.zeros(x.shape, np.uint8)}):
        with pytest.raises(SpecError, match="stochastic"):
            CASTS[entry](x, "mxfp8", roundmode="even", **kw)


def test_stochastic_without_seed_or_rbits_is_a_spec_error():
    with pytest.raises(SpecError, match="seed or rbits"):
        tcast_ref.cast(_x(), "mxfp8", roundmode="stochastic")


@pytest.mark.parametrize(
    "rbits",
    [
        np.zeros((64, 4), np.uint8),  # transposed shape (the right dtype: K = 8, uint8)
        np.zeros(256, np.uint8),  # flat
        np.zeros((1, 64), np.uint8),  # broadcastable, not equal
        np.zeros((4, 64, 1), np.uint8),
        np.zeros((4, 64), np.int64),  # wrong dtypes
        np.zeros((4, 64), np.uint64),
        np.zeros((4, 64), np.int32),
        np.zeros((4, 64), np.float32),
        np.zeros((4, 64), np.uint16),
        np.zeros((4, 64), np.uint32),  # the 32-bit words of schema versions 1-3
        np.zeros((4, 64), np.int8),
        [[0] * 64] * 4,  # not an array
    ],
    ids=[
        "transposed",
        "flat",
        "broadcastable",
        "extra-dim",
        "int64",
        "uint64",
        "int32",
        "float32",
        "uint16",
        "uint32",
        "int8",
        "list",
    ],
)
@pytest.mark.parametrize("entry", list(CASTS))
def test_rbits_of_the_wrong_shape_or_dtype_is_a_spec_error(entry, rbits):
    x = _x()
    before = _bits(x)
    for dt in ("mxfp8", "float8_e4m3fn", "int8_Fc"):
        with pytest.raises(SpecError, match="rbits"):
            CASTS[entry](x, dt, roundmode="stochastic", rbits=rbits)
    assert np.array_equal(_bits(x), before)


@pytest.mark.parametrize(
    ("dtype", "rbits_dtype", "want"),
    [
        ("mxfp8", np.uint32, "uint8"),
        ("float8_e4m3fn", np.int8, "uint8"),
        ("mxfp4", np.uint16, "uint8"),
        ("e8m7", np.uint8, "uint16"),  # bfloat16: K = 16
        ("bfloat16_e8m0_t32", np.uint32, "uint16"),
    ],
)
@pytest.mark.parametrize("entry", list(CASTS))
def test_rbits_of_the_wrong_dtype_are_refused_naming_the_needed_dtype(
    entry, dtype, rbits_dtype, want
):
    """uint8 for element formats of at most 8 bits, uint16 for wider ones (SEMANTICS.md §3.3)."""
    x = _x()
    assert tcast.rbits_width(dtype) == np.dtype(want).itemsize * 8
    with pytest.raises(SpecError, match=f"rbits must be a {want} NumPy array"):
        CASTS[entry](x, dtype, roundmode="stochastic", rbits=np.zeros(x.shape, rbits_dtype))
    if entry == "tcast_ref.cast" and dtype == "mxfp8":  # a dual cast checks them the same way
        bad = np.zeros(x.shape, rbits_dtype)
        with pytest.raises(SpecError, match=f"rbits must be a {want} NumPy array"):
            tcast_ref.cast_dual(x, dtype, roundmode="stochastic", rbits=bad)
    # the right dtype is taken
    ok = np.zeros(x.shape, want)
    CASTS[entry](x, dtype, roundmode="stochastic", rbits=ok)


@pytest.mark.parametrize("entry", list(CASTS))
def test_a_stream_without_a_seed_or_out_of_range_is_a_spec_error(entry):
    x = _x()
    rb = np.zeros(x.shape, np.uint8)
    for kw in (
        {"roundmode": "stochastic", "rbits": rb, "stream": 1},  # given rbits have no stream
        {"roundmode": "stochastic", "stream": 1},
        {"stream": 1},
    ):
        with pytest.raises(SpecError, match="seed"):  # a non-zero stream needs a seed
            CASTS[entry](x, "mxfp8", **kw)
    for stream in (True, -1, 2**32, 1.0, "1", None):
        with pytest.raises(SpecError, match="stream"):
            CASTS[entry](x, "mxfp8", roundmode="stochastic", seed=3, stream=stream)
    # 0 without a seed is the default: fine; the last stream, 2**32 - 1, is taken
    CASTS[entry](x, "mxfp8", stream=0)
    CASTS[entry](x, "mxfp8", roundmode="stochastic", rbits=rb, stream=0)
    CASTS[entry](x, "mxfp8", roundmode="stochastic", seed=3, stream=np.uint32(2**32 - 1))


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, "7", True])
def test_seed_out_of_range_or_not_an_int_is_a_spec_error(seed):
    with pytest.raises(SpecError, match="seed"):
        tcast_ref.cast(_x(), "mxfp8", roundmode="stochastic", seed=seed)


# ------------------------------------------------------------ tiles vs rank (§5.1)
@pytest.mark.parametrize(
    ("dtype", "shape", "match"),
    [
        ("mxfp8", (), "does not exist"),
        ("mxfp8_2d", (64,), "does not exist"),
        ("int8_Fc", (), "does not exist"),
        ("e4m3fn_e8m0_t8d2", (8, 8), "does not exist"),
        ("e4m3fn_e8m0_t8d-3", (8, 8), "does not exist"),
        ("e4m3fn_e8m0_t8d0_t8d-2", (8, 8), "both tile segments"),
        ("e4m3fn_e8m0_t8_t8d3", (2, 8, 8), "does not exist"),
    ],
)
@pytest.mark.parametrize("entry", list(CASTS))
def test_tile_dimensions_beyond_the_rank_are_a_spec_error(entry, dtype, shape, match):
    x = np.ones(shape, np.float32)
    for castmode in ("virtual", "actual", "compress"):
        with pytest.raises(SpecError, match=match):
            CASTS[entry](x, dtype, castmode=castmode)
        with pytest.raises(SpecError, match=match):
            CASTS[entry](x, dtype, castmode=castmode, transpose_scale=True)
    assert (x == 1).all()


# ------------------------------------------------------------ modes and flags (§10)
@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"roundmode": "banana"}, "round mode"),
        ({"roundmode": "rne"}, "round mode"),
        ({"scalemode": "round"}, "scale mode"),
        ({"castmode": "packed"}, "cast mode"),
        ({"castmode": ""}, "cast mode"),
        ({"saturate": "yes"}, "saturate"),
        ({"saturate": 1}, "saturate"),
        ({"transpose_scale": None}, "transpose"),
    ],
)
@pytest.mark.parametrize("entry", list(CASTS))
def test_unknown_modes_and_bad_flags_are_a_spec_error(entry, kw, match):
    x = _x()
    before = _bits(x)
    with pytest.raises(SpecError, match=match):
        CASTS[entry](x, "mxfp8", **kw)
    assert np.array_equal(_bits(x), before)


# ------------------------------------------------------------ subtiles without metadata
@pytest.mark.parametrize(
    "spelling",
    [
        ("e2m1f", "e8m0_t32s4"),
        ("e2m1f_e8m0_t32s4",),
        ("int4", "e8m0_t16s2"),
    ],
)
def test_subtile_without_codebook_or_offset_is_a_spec_error(spelling):
    with pytest.raises(SpecError, match="a subtile needs codebook data or an offset width"):
        tcast.datatype(*spelling)
    if len(spelling) == 1:
        x = _x()
        before = _bits(x)
        with pytest.raises(SpecError, match="a subtile needs"):
            tcast_ref.cast(x, spelling[0])
        with pytest.raises(SpecError, match="a subtile needs"):
            tcast.cast(x, spelling[0])
        assert np.array_equal(_bits(x), before)


# ------------------------------------------------------------ the input is never written
@pytest.mark.parametrize("castmode", ["virtual", "actual", "compress"])
@pytest.mark.parametrize(
    "dtype",
    [
        "float8_e4m3fn",
        "mxfp8",
        "nvfp4",
        "uint8_FFc",
        "int8_Fc",
        "e4m3fn_e8m0_t32n2m4",
        "mxfp4_2d",
        "bfloat16",
    ],
)
def test_a_successful_cast_leaves_its_input_unchanged(dtype, castmode):
    x = _x((64, 64))
    x[3, 5] = np.nan
    x[7, :] = 0.0
    for arr in (x, x.T, x[::2, ::-1]):
        before = _bits(arr)
        k = tcast.rbits_width(dtype)  # K-bit random integers: uint8 or uint16 (§3.3)
        rb = (np.arange(arr.size) % (1 << k)).astype(f"uint{k}").reshape(arr.shape)
        rb_before = _bits(rb)
        tcast_ref.cast(arr, dtype, castmode=castmode)
        tcast_ref.cast(arr, dtype, castmode=castmode, roundmode="stochastic", rbits=rb)
        assert np.array_equal(_bits(arr), before) and np.array_equal(_bits(rb), rb_before)


# ------------------------------------------------------------ views == contiguous copies
def _same(a, b) -> None:
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(_bits(a), _bits(b))
        return
    for field in ("data", "scale", "zero", "tenscale", "mask"):
        fa, fb = getattr(a, field), getattr(b, field)
        assert (fa is None) == (fb is None), field
        if fa is not None:
            fa, fb = np.asarray(fa), np.asarray(fb)
            assert fa.shape == fb.shape and fa.dtype == fb.dtype, field
            assert np.array_equal(fa, fb), field
    assert a.shape == b.shape and a.input_dtype == b.input_dtype


VIEW_DTYPES = [
    "float8_e4m3fn",
    "mxfp8",
    "mxfp4_2d",
    "nvfp4",
    "int8_Fc",
    "uint8_FFc",
    "e4m3fn_e8m0_t32n2m4",
    "e4m3fn_e8m0_t8d0",
    "uint4_float32_int8_t16_t16",
]


def _views(base: np.ndarray) -> dict[str, np.ndarray]:
    return {
        "step": base[::2, ::3],
        "transpose": base.T,
        "negative": base[::-1, ::-2],
        "swapaxes-3d": base.reshape(8, 12, 16).swapaxes(0, 2),
        "column": base[:, 5:69:2],
        "broadcast": np.broadcast_to(base[:1, :64], (4, 64)),
        "fortran": np.asfortranarray(base),
    }


@pytest.mark.parametrize(
    "in_dtype", [np.float32, np.float16, ml_dtypes.bfloat16], ids=["float32", "float16", "bfloat16"]
)
@pytest.mark.parametrize("dtype", VIEW_DTYPES)
def test_non_contiguous_views_give_the_bits_of_their_contiguous_copies(dtype, in_dtype):
    base = _x((16, 96), seed=4).astype(in_dtype)
    for name, view in _views(base).items():
        assert not view.flags.c_contiguous or name == "fortran", name
        copy = np.ascontiguousarray(view)
        for castmode in ("virtual", "actual", "compress"):
            for kw in ({}, {"roundmode": "stochastic", "seed": 12345}, {"scalemode": "ceil"}):
                _same(
                    tcast_ref.cast(view, dtype, castmode=castmode, **kw),
                    tcast_ref.cast(copy, dtype, castmode=castmode, **kw),
                )
        if dtype == "mxfp4_2d":
            _same(
                tcast_ref.cast(view, dtype, castmode="actual", transpose_scale=True),
                tcast_ref.cast(copy, dtype, castmode="actual", transpose_scale=True),
            )


# ------------------------------------------------------------ ranks and dimensions
def _against_exact(x: np.ndarray, dtype: str, **kw) -> None:
    """tcast_ref against the exact model: codes, scale, zero, tenscale, mask, virtual bits."""
    res = tcast_ref.cast(x, dtype, castmode="actual", **kw)
    virt = tcast_ref.cast(x, dtype, **kw)
    ex = cast_array(
        [float(v) for v in x.astype(np.float32).reshape(-1)],
        x.shape,
        dtype,
        input_dtype="float32",
        **kw,
    )
    assert res.data.shape == x.shape
    assert res.data.reshape(-1).tolist() == list(ex.codes)
    if ex.scale is not None:
        assert res.scale.shape == ex.scale_shape
        assert res.scale.reshape(-1).tolist() == list(ex.scale)
    if ex.zero is not None:
        assert res.zero.reshape(-1).tolist() == list(ex.zero)
    if ex.tenscale is not None:
        assert int(res.tenscale) == ex.tenscale
    if ex.mask is not None:
        assert res.mask.reshape(-1).tolist() == list(ex.mask)
    want = np.array(ex.values, np.float64).astype(np.float32)
    assert np.array_equal(_bits(virt), _bits(want))
    assert np.array_equal(_bits(tcast_ref.upcast(res)), _bits(virt))


RANK_SHAPES = [(), (7,), (3, 40), (2, 3, 33), (2, 2, 3, 20)]


@pytest.mark.parametrize("shape", RANK_SHAPES, ids=lambda s: f"rank{len(s)}")
@pytest.mark.parametrize(
    "dtype",
    [
        "float8_e4m3fn",
        "bfloat16",
        "int8_F",
        "fp8_F",
        "uint8_FF",
        "int8_Fc",
        "mxfp8",
        "mxint4",
        "nvfp4",
        "mxfp8_2d",
        "e4m3fn_e8m0_t32n2m4",
    ],
)
def test_any_rank_0_to_4(dtype, shape):
    x = _x(shape, seed=len(shape)) if shape else np.array(-3.25, np.float32)
    tiles = tcast.datatype(dtype).sspec.tiles if tcast.datatype(dtype).sspec else ()
    if len(tiles) > len(shape):
        with pytest.raises(SpecError, match="does not exist"):
            tcast_ref.cast(x, dtype)
        return
    _against_exact(x, dtype)


@pytest.mark.parametrize("shape", [(0,), (2, 0, 5), (0, 33)], ids=str)
@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "mxfp8", "int8_F", "nvfp4", "uint8_FFc"])
def test_empty_arrays(dtype, shape):
    _against_exact(np.zeros(shape, np.float32), dtype)
    res = tcast_ref.cast(np.zeros(shape, np.float32), dtype, castmode="compress")
    assert tcast_ref.upcast(res).shape == shape


@pytest.mark.parametrize("d", [-3, -2, -1, 0, 1, 2])
@pytest.mark.parametrize(
    ("scale", "other"),
    [
        ("e8m0_t4d{d}", None),
        ("e8m0_t0d{d}", None),  # a channel along d
        ("float32_t8d{d}", None),
        ("e8m0_t4d{d}_t8", 2),  # the second segment defaults to dimension -1
        ("e8m0_t2_t4d{d}", 1),  # the first segment defaults to dimension -2
        ("e8m0_t4n2m4d{d}", None),  # sparsity groups along d
    ],
)
def test_scaling_along_any_dimension(scale, other, d):
    x = _x((6, 10, 12), seed=9)
    code = "e4m3fn_" + scale.format(d=d)
    if other is not None and d % 3 == other:
        with pytest.raises(SpecError, match="both tile segments"):
            tcast_ref.cast(x, code)
        return
    _against_exact(x, code)
    if other is not None:
        _against_exact(x, code, transpose_scale=True)


def test_scaling_along_a_dimension_equals_scaling_the_moved_axis():
    # t8d0 on (16, 5, 7) is t8 (last dimension) on the array with axis 0 moved last.
    x = _x((16, 5, 7), seed=10)
    a = tcast_ref.cast(x, "e4m3fn_e8m0_t8d0", castmode="actual")
    b = tcast_ref.cast(np.moveaxis(x, 0, -1), "e4m3fn_e8m0_t8", castmode="actual")
    assert np.array_equal(np.moveaxis(b.data, -1, 0), a.data)
    assert np.array_equal(np.moveaxis(b.scale, -1, 0), a.scale)


# ------------------------------------------------------------ ml_dtypes views (§8)
def _element_scales(res, values: np.ndarray) -> np.ndarray:
    """Per-element copies of per-block values (shaped like res.scale), via the exact model's
    block partition."""
    shape = tuple(res.shape)
    _, blocks = block_indices(shape, res.dtype, res.transpose_scale)
    flat = np.asarray(values).reshape(-1)
    out = np.empty(int(np.prod(shape, dtype=np.int64)), flat.dtype)
    for j, (_, idx) in enumerate(blocks):
        out[idx] = flat[j]
    return out.reshape(shape)


VIEWS = {
    # datatype: (element view, element factor, scale view)
    "mxfp8": (ml_dtypes.float8_e4m3fn, 1.0, ml_dtypes.float8_e8m0fnu),
    "mxfp8e5": (ml_dtypes.float8_e5m2, 1.0, ml_dtypes.float8_e8m0fnu),
    "e4m3b8fnuz_e8m0_t32": (ml_dtypes.float8_e4m3fnuz, 1.0, ml_dtypes.float8_e8m0fnu),
    "e5m2b16fnuz_e8m0_t32": (ml_dtypes.float8_e5m2fnuz, 1.0, ml_dtypes.float8_e8m0fnu),
    "mxfp6e2": (ml_dtypes.float6_e2m3fn, 1.0, ml_dtypes.float8_e8m0fnu),
    "mxfp6e3": (ml_dtypes.float6_e3m2fn, 1.0, ml_dtypes.float8_e8m0fnu),
    "mxfp4": (ml_dtypes.float4_e2m1fn, 1.0, ml_dtypes.float8_e8m0fnu),
    "mxfp4_2d": (ml_dtypes.float4_e2m1fn, 1.0, ml_dtypes.float8_e8m0fnu),
    # MXINT: fixed point, code * 2^(2-K) (§5.4)
    "mxint8": (np.int8, 2.0**-6, ml_dtypes.float8_e8m0fnu),
    "mxint4": (ml_dtypes.int4, 2.0**-2, ml_dtypes.float8_e8m0fnu),
    "int2_e8m0_t32": (ml_dtypes.int2, 1.0, ml_dtypes.float8_e8m0fnu),
    # float scales: plain integers / floats times the scale
    "int8_Fc": (np.int8, 1.0, np.float32),
    "int4_bc": (ml_dtypes.int4, 1.0, ml_dtypes.bfloat16),
    "fp8_nc": (ml_dtypes.float8_e4m3fn, 1.0, ml_dtypes.float8_e4m3fn),
    "e2m1f_float16_t32": (ml_dtypes.float4_e2m1fn, 1.0, np.float16),
}
# uint data: value = (code - zero) * scale (§5.7): element view, scale view, zero view
UINT_VIEWS = {
    "uint8_FFc": (np.uint8, np.float32, np.float32),
    "uint4_float32_float32_t32": (ml_dtypes.uint4, np.float32, np.float32),
    "uint2_float32_float32_t32": (ml_dtypes.uint2, np.float32, np.float32),
    "uint4_Fic": (ml_dtypes.uint4, np.float32, np.int8),
    "uint8_bbc": (np.uint8, ml_dtypes.bfloat16, ml_dtypes.bfloat16),
    "uint8_eic": (np.uint8, ml_dtypes.float8_e8m0fnu, np.int8),
}
UNSCALED_VIEWS = {
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "float8_e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz,
    "float8_e3m4": ml_dtypes.float8_e3m4,
    "float8_e4m3": ml_dtypes.float8_e4m3,
    "float6_e2m3fn": ml_dtypes.float6_e2m3fn,
    "float6_e3m2fn": ml_dtypes.float6_e3m2fn,
    "float4_e2m1fn": ml_dtypes.float4_e2m1fn,
    "bfloat16": ml_dtypes.bfloat16,
    "float16": np.float16,
}


def _view_input() -> np.ndarray:
    x = _x((8, 96), seed=21)
    x[0, :32] = 0.0  # an all-zero block
    x[1, 40] = np.inf  # a non-finite block (scale NaN code)
    x[2, ::7] = -0.0
    x[3, :] *= np.float32(2.0**-120)  # tiny blocks (scale code 0 region)
    return x


def _assert_same_values(got: np.ndarray, want: np.ndarray) -> None:
    """Bit-equal where not NaN; NaN where NaN (NaN payload/sign comes from the view's decode)."""
    gn, wn = np.isnan(got), np.isnan(want)
    assert np.array_equal(gn, wn)
    assert np.array_equal(_bits(got[~gn]), _bits(want[~wn]))


@pytest.mark.parametrize("dtype", list(VIEWS))
def test_codes_view_as_ml_dtypes_and_times_the_scale_equal_upcast(dtype):
    elem, factor, sview = VIEWS[dtype]
    x = _view_input()
    res = tcast_ref.cast(x, dtype, castmode="actual")
    q = res.data.view(elem).astype(np.float32)
    if factor != 1.0:
        q = q * np.float32(factor)  # exact: a power of two
    s = np.asarray(res.scale).view(sview).astype(np.float32)
    want = q * _element_scales(res, s)
    _assert_same_values(tcast_ref.upcast(res), want)


def test_nvfp4_codes_view_as_ml_dtypes_and_times_both_scales_equal_upcast():
    # §5.6 step 4: value = fl32(dec(code) * fl32(t * s))
    x = _view_input()
    x[1, 40] = 1.0
    res = tcast_ref.cast(x, "nvfp4", castmode="actual")
    q = res.data.view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    t = np.asarray(res.tenscale).view(np.float32)
    s = res.scale.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    want = q * _element_scales(res, (t * s).astype(np.float32))
    _assert_same_values(tcast_ref.upcast(res), want)


@pytest.mark.parametrize("dtype", list(UINT_VIEWS))
def test_uint_codes_view_as_ml_dtypes_minus_zero_times_scale_equal_upcast(dtype):
    elem, sview, zview = UINT_VIEWS[dtype]
    x = _view_input()
    x[5, :] += np.float32(3.0)  # a block of positive values only
    res = tcast_ref.cast(x, dtype, castmode="actual")
    q = res.data.view(elem).astype(np.float32)
    s = _element_scales(res, np.asarray(res.scale).view(sview).astype(np.float32))
    z = _element_scales(res, np.asarray(res.zero).view(zview).astype(np.float32))
    want = ((q - z).astype(np.float32) * s).astype(np.float32)
    _assert_same_values(tcast_ref.upcast(res), want)


@pytest.mark.parametrize("dtype", list(UNSCALED_VIEWS))
def test_unscaled_codes_view_as_ml_dtypes_equal_upcast(dtype):
    x = _view_input()
    x[6, :4] = [np.nan, -np.nan, 1e9, -1e9]
    for saturate in (True, False):
        res = tcast_ref.cast(x, dtype, castmode="actual", saturate=saturate)
        want = res.data.view(UNSCALED_VIEWS[dtype]).astype(np.float32)
        _assert_same_values(tcast_ref.upcast(res), want)


def test_e8m0_scale_codes_view_as_float8_e8m0fnu():
    # §2: e8m0 code c is 2^(c - 127), 0xFF is NaN: ml_dtypes' float8_e8m0fnu is the same
    codes = np.arange(256, dtype=np.uint8)
    v = codes.view(ml_dtypes.float8_e8m0fnu).astype(np.float32)
    assert np.isnan(v[255])
    want = np.ldexp(np.float64(1.0), codes[:255].astype(np.int32) - 127).astype(np.float32)
    assert np.array_equal(_bits(v[:255]), _bits(want))
    # blocks: amax 2^-119 -> e = -119 - 8 -> code 0; amax 3 -> e = 1 - 8 -> code 120; NaN -> 0xFF
    x = np.zeros(96, np.float32)
    x[0], x[32], x[64] = 2.0**-119, 3.0, np.nan
    res = tcast_ref.cast(x, "mxfp8", castmode="actual")
    assert res.scale.dtype == np.uint8 and res.scale.tolist() == [0, 120, 0xFF]
    s = res.scale.view(ml_dtypes.float8_e8m0fnu).astype(np.float32)
    assert s[:2].view(np.uint32).tolist() == [0x00400000, 0x3C000000] and np.isnan(s[2])
