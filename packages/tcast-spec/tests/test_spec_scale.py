"""The scale grammar (tcast.scale): numbers, tiles, 2-D tiles, sparsity, dimensions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tcast import ScaleSpec, SpecError, TileSpec, number, scale

SCALE_NUMBERS = [
    "e8m0",
    "e4m0",
    "e5m0b10",
    "float32",
    "float16",
    "bfloat16",
    "e4m3fn",
    "e5m2",
    "e4m3b8fnuz",
    "binary8p4",
    "e3m4",
    "e2m1fn",
]
SECONDS = [None, "float32", "int8", "e4m3fn", "bfloat16", "uint8", "e8m0"]
TILES = [
    "",
    "t",
    "t0",
    "t2",
    "t32",
    "t1024",
    "t32d0",
    "t32d-2",
    "t32d5",
    "t16n2m4",
    "t0n1m2",
    "t32n7m8d1",
    "t32n1m32",
    "t32_t32",
    "t0_t32",
    "t32_t0",
    "t32d0_t32d1",
    "t8d1_t16d0",
    "t16n2m4_t16",
    "t16_t16n2m4",
    "t32d-1",
    "t32d-2_t32d-1",
    "t16s2",
    "t0s4",
    "t32s16o2",
    "t16n2m4d0",
    "t2_t1024",
    "t32d-3_t32d-4",
]


def join(*parts: str | None) -> str:
    return "_".join(p for p in parts if p)


# ------------------------------------------------------------- parse + code
def test_scale_parse_fields():
    s = scale("e8m0_t32")
    assert s == ScaleSpec(number("e8m0"), None, (TileSpec(32),))
    assert not s.is_tensor and not s.is_2d and not s.is_sparse and not s.has_subtile
    t = scale("float32")
    assert t.is_tensor and t.tiles == () and t.second is None
    z = scale("float16_int8_t16n2m4")
    assert z.scale == number("float16") and z.second == number("int8")
    assert z.tiles == (TileSpec(16, 0, 2, 4),) and z.is_sparse
    n = scale("e4m3fn_float32_t16")
    assert n.second == number("float32") and n.tiles[0].size == 16
    d = scale("e8m0_t32_t32")
    assert d.is_2d and d.tiles == (TileSpec(32), TileSpec(32))
    assert scale("e8m0_t16s2").has_subtile and scale("e8m0_t16s2").tiles[0].subtile == 2
    assert scale(s) is s


def test_valid_scale_codes_round_trip_through_code():
    count = 0
    for num in SCALE_NUMBERS:
        for second in SECONDS:
            for tiles in TILES:
                code = join(num, second, tiles)
                s = scale(code)
                assert scale(s.code) == s, code
                assert scale(s.code).code == s.code, code  # canonical code is a fixed point
                assert hash(scale(s.code)) == hash(s)
                assert s.scale == number(num)
                assert s.second == (None if second is None else number(second))
                assert len(s.tiles) == (0 if not tiles else tiles.count("_") + 1)
                assert str(s) == s.code
                count += 1
    assert count == len(SCALE_NUMBERS) * len(SECONDS) * len(TILES)


def test_t32d_minus1_equals_t32():
    assert scale("e8m0_t32d-1") == scale("e8m0_t32")
    assert scale("e8m0_t32d-1").code == "e8m0_t32"
    assert scale("e8m0_t32d-1").tiles[0].dim is None
    assert ScaleSpec(number("e8m0"), None, (TileSpec(32, dim=-1),)) == scale("e8m0_t32")
    # 2-D defaults: first segment d-2, second d-1
    assert scale("e8m0_t32d-2_t16d-1") == scale("e8m0_t32_t16")
    assert scale("e8m0_t32d-2_t16d-1").code == "e8m0_t32_t16"
    # a non-default dim is kept
    assert scale("e8m0_t32d-2").code == "e8m0_t32d-2"
    assert scale("e8m0_t32d0").tiles[0].dim == 0


def test_t_equals_t0_channel():
    assert scale("e8m0_t") == scale("e8m0_t0")
    assert scale("e8m0_t").code == "e8m0_t0"
    assert scale("e8m0_t").tiles[0].is_channel
    assert scale("e8m0_t_t32") == scale("e8m0_t0_t32")
    assert not scale("e8m0_t32").tiles[0].is_channel


def test_tile_code_canonical_spelling():
    assert TileSpec(32).code == "t32"
    assert TileSpec(0).code == "t0"
    assert TileSpec(16, 0, 2, 4).code == "t16n2m4"
    assert TileSpec(32, dim=0).code == "t32d0"
    assert TileSpec(32, 4, dim=-2, offset=1).code == "t32s4o1d-2"
    assert TileSpec(32, 0, 1, 2, -2).code == "t32n1m2d-2"
    assert str(TileSpec(8)) == "t8"


# --------------------------------------------------------------- rejections
@pytest.mark.parametrize(
    "code",
    [
        # 2-D: at most one channel segment
        "e8m0_t0_t0",
        "e8m0_t_t",
        "e8m0_t0_t",
        "e8m0_t0d0_t0d1",
        # 2-D: the same dimension named twice
        "e8m0_t32d0_t32d0",
        "e8m0_t32d-1_t16d-1",
        "e8m0_t16d2_t8d2",
        # sparsity on both segments
        "e8m0_t16n2m4_t16n2m4",
        "e8m0_t0n1m2_t32n2m4",
        # N >= M, N = 0, M = 1, M not a power of two, M > 1024
        "e8m0_t32n4m4",
        "e8m0_t32n5m4",
        "e8m0_t32n0m4",
        "e8m0_t32n1m1",
        "e8m0_t32n2m3",
        "e8m0_t0n1m2048",
        "e8m0_t32n2m0",
        # m larger than the tile
        "e8m0_t16n2m32",
        "e8m0_t2n1m4",
        "e8m0_t32_t16n2m32",
        # tile sizes: powers of two in 2..1024
        "e8m0_t1",
        "e8m0_t3",
        "e8m0_t48",
        "e8m0_t2048",
        "e8m0_t1025",
        # subtiles: power of two >= 2 below the tile
        "e8m0_t16s16",
        "e8m0_t16s32",
        "e8m0_t16s3",
        "e8m0_t16s1",
        # leading zeros and signs
        "e8m0_t032",
        "e8m0_t00",
        "e8m0_t32d01",
        "e8m0_t32d-0",
        "e8m0_t32d-01",
        "e8m0_t16n02m4",
        "e8m0_t16n2m04",
        "e8m0_t16s02",
        "e8m0_t32d+1",
        # segment order inside a tile is s, n/m, d
        "e8m0_t32d0n2m4",
        "e8m0_t32n2m4s2",
        # too many or too few segments, misplaced numbers
        "e8m0_t32_t32_t32",
        "e8m0_float32_int8_t32",
        "t32",
        "t32_t32",
        "e8m0_t32_float32",
        "",
        "_",
        "e8m0_",
        "_e8m0",
        "e8m0__t32",
        "e8m0_t32_",
        # scale numbers must be float/exponent types with a NaN code
        "int8_t32",
        "uint8_t32",
        "e2m1f_t32",
        "e3m2f",
        "e2m3f_float32_t16",
        # numbers inside a scale code are written without the float8_ prefix
        "float8_e4m3fn_t32",
        "float8_e8m0fnu_t32",
        # junk
        "e8m0_T32",
        "e8m0_x32",
        "e8m0_t32x",
        "e8m0-t32",
        "e8m0 t32",
    ],
)
def test_invalid_scale_codes_are_spec_errors(code):
    with pytest.raises(SpecError):
        scale(code)


def test_2d_same_dim_twice_rejected_when_one_is_default():
    # The first segment of a 2-D tile defaults to d-2 and the second to d-1, so
    # these name the same dimension twice for every rank, exactly like
    # t32d-1_t32d-1: the spec can never be used and must be rejected when parsed.
    for code in ("e8m0_t32d-1_t32", "e8m0_t32_t32d-2"):
        with pytest.raises(SpecError):
            scale(code)


def test_non_string_scale_inputs_are_spec_errors():
    for bad in (None, 32, b"e8m0_t32", ("e8m0", "t32"), number("e8m0")):
        with pytest.raises(SpecError):
            scale(bad)


def test_scalespec_constructor_validates():
    e8 = number("e8m0")
    for args in [
        ("e8m0", None, ()),
        (number("int8"), None, ()),
        (number("e2m1f"), None, ()),
        (e8, "int8", ()),
        (e8, None, [TileSpec(32)]),
        (e8, None, (TileSpec(32), TileSpec(32), TileSpec(32))),
        (e8, None, ("t32",)),
    ]:
        with pytest.raises(SpecError):
            ScaleSpec(*args)
    for kwargs in [
        dict(size=3),
        dict(size=-2),
        dict(size=32, subtile=32),
        dict(sparse_n=2),
        dict(size=32, sparse_n=1, sparse_m=64),
        dict(dim=True),
        dict(size=True),
        dict(dim=1.0),
    ]:
        with pytest.raises(SpecError):
            TileSpec(**kwargs)


def test_subtile_and_sparse_flags():
    assert scale("e8m0_t32s4").has_subtile
    assert not scale("e8m0_t32").has_subtile
    assert scale("e8m0_t32_t16n2m4").is_sparse
    assert scale("e8m0_t32n2m4_t16").is_sparse
    assert scale("e8m0_t0n2m4").tiles[0].is_sparse  # a channel may carry sparsity
    assert scale("e8m0_t32n0m0") == scale("e8m0_t32")  # n0m0 is dense


# --------------------------------------------------------------------- dims
def test_dims_tensor_scale_has_no_dims():
    assert scale("float32").dims(3) == ()
    assert scale("float32").dims(0) == ()
    assert scale("float32").dims(2, transpose=True) == ()


def test_dims_1d_defaults_to_last_dim():
    s = scale("e8m0_t32")
    assert s.dims(1) == (0,)
    assert s.dims(3) == (2,)
    assert s.dims(3, transpose=True) == (2,)  # transpose swaps 2-D segments only
    with pytest.raises(SpecError):
        s.dims(0)


def test_dims_1d_explicit_dims_and_out_of_range():
    assert scale("e8m0_t32d0").dims(3) == (0,)
    assert scale("e8m0_t32d-2").dims(3) == (1,)
    assert scale("e8m0_t32d2").dims(3) == (2,)
    assert scale("e8m0_t32d-3").dims(3) == (0,)
    for code, ndim in [
        ("e8m0_t32d-2", 1),
        ("e8m0_t32d2", 2),
        ("e8m0_t32d-3", 2),
        ("e8m0_t32d0", 0),
        ("e8m0_t32d5", 5),
    ]:
        with pytest.raises(SpecError):
            scale(code).dims(ndim)


def test_dims_2d_defaults_and_transpose():
    s = scale("e8m0_t16_t32")
    assert s.dims(2) == (0, 1)
    assert s.dims(4) == (2, 3)
    assert s.dims(4, transpose=True) == (3, 2)
    assert s.dims(2, transpose=True) == (1, 0)
    with pytest.raises(SpecError):
        s.dims(1)


def test_dims_2d_explicit():
    assert scale("e8m0_t16d0_t32").dims(3) == (0, 2)
    assert scale("e8m0_t16d1_t32d0").dims(2) == (1, 0)
    assert scale("e8m0_t16d1_t32d0").dims(2, transpose=True) == (0, 1)
    assert scale("e8m0_t16d0_t32d-2").dims(3) == (0, 1)
    # two segments landing on one dimension for this rank
    with pytest.raises(SpecError):
        scale("e8m0_t16d1_t32").dims(2)
    with pytest.raises(SpecError):
        scale("e8m0_t16d0_t32d-2").dims(2)
    with pytest.raises(SpecError):
        scale("e8m0_t16d3_t32").dims(3)


# --------------------------------------------------------------- hypothesis
SIZES = ["", "0", "1", "2", "3", "16", "32", "48", "1024", "2048"]
SUBTILES = [None, "0", "2", "4", "16", "3"]
SPARSE = [
    None,
    (0, 0),
    (1, 2),
    (2, 4),
    (4, 4),
    (0, 4),
    (2, 0),
    (2, 3),
    (3, 8),
    (1, 64),
    (2, 2048),
    (7, 1024),
]
DIMS = [None, -3, -2, -1, 0, 1, 2]


def _pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


@st.composite
def tiles(draw):
    size = draw(st.sampled_from(SIZES))
    sub = draw(st.sampled_from(SUBTILES))
    sp = draw(st.sampled_from(SPARSE))
    dim = draw(st.sampled_from(DIMS))
    code = "t" + size + ("" if sub is None else f"s{sub}")
    code += "" if sp is None else f"n{sp[0]}m{sp[1]}"
    code += "" if dim is None else f"d{dim}"
    t = int(size or 0)
    s = int(sub or 0)
    n, m = sp or (0, 0)
    ok = t == 0 or (_pow2(t) and 2 <= t <= 1024)
    ok &= s == 0 or (_pow2(s) and s >= 2 and (t == 0 or s < t))
    ok &= bool(n) == bool(m)
    if m:
        ok &= _pow2(m) and 2 <= m <= 1024 and 1 <= n < m and (t == 0 or m <= t)
    return code, ok, (t, s, n, m, dim)


@given(
    st.sampled_from(["e8m0", "float32", "e4m3fn", "bfloat16", "binary8p3", "e2m1f", "int8"]),
    st.sampled_from([None, "float32", "int8", "e8m0"]),
    st.lists(tiles(), max_size=3),
)
def test_generated_scale_codes_parse_iff_valid_and_round_trip(num, second, segs):
    code = join(num, second, *(c for c, _, _ in segs))
    ok = num not in ("e2m1f", "int8") and len(segs) <= 2 and all(v for _, v, _ in segs)
    if len(segs) == 2:
        (a, b) = (f for _, _, f in segs)
        ok &= not (a[0] == 0 and b[0] == 0)
        ok &= sum(1 for f in (a, b) if f[3]) <= 1
        # the same dimension twice, explicitly or through the defaults d-2 / d-1
        ok &= (-2 if a[4] is None else a[4]) != (-1 if b[4] is None else b[4])
    try:
        s = scale(code)
    except SpecError:
        assert not ok, f"valid code {code!r} rejected"
        return
    assert ok, f"invalid code {code!r} accepted as {s.code!r}"
    assert scale(s.code) == s
    assert s.scale == number(num)
    defaults = ((), (-1,), (-2, -1))[len(segs)]
    for tile, (_, _, (t, sub, n, m, dim)), d in zip(s.tiles, segs, defaults, strict=True):
        assert (tile.size, tile.subtile) == (t, sub)
        assert (tile.sparse_n, tile.sparse_m) == ((n, m) if m else (0, 0))
        assert tile.dim == (None if dim == d else dim)
