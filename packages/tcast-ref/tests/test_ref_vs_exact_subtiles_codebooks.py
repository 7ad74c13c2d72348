"""tcast_ref against the exact model for datatypes with metadata, raw bits (SEMANTICS §5.8, §5.9).

Subtile exponent offsets (MSFP MX9/MX6/MX4 and other ``o<B>`` datatypes) and codebooks (the
implicit ones of upstream's catalog, NF4, given tables): every check casts one array with
``tcast_ref.cast`` in all three cast modes and compares, in raw bits, with one
``tcast.exact.cast_array`` of the same values: the virtual result, the element codes, scale
codes, tensor-scale code and metadata (shape and codes), the packed data and packed metadata,
and both upcasts. The arrays are adversarial: every tile holds its element maximum (so the
scaled inputs are the chosen values), table entries, midpoints between neighbours (ties) and
their float32 neighbours, grid points of the offset formats at every offset and the values
that round up to the next binade, powers of two and the float32 just below, zeros and -0,
all-equal tiles, float32 subnormals, NaN and Inf, Gaussian tiles, and a partial last tile
with a partial subtile. The kit's result form learns metadata: each refusal has a test.

The exact model costs about 0.2 ms per element here: the arrays are small (about 6 CPU-seconds
for the module). Under ``-m full``, random datatypes of the whole subtile and codebook grammar
with random arrays and modes (about 40 s).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import tcast
import tcast_ref
import tcast_ref._cast
from tcast import CastMode, SpecError, exact
from tcast.kit import element_max, result_form

#: The named datatypes with metadata and their codes (the catalog pins them:
#: test_spec_catalog.py).
NAMED = {name: dt.code for name, dt in tcast.PREVIEW_CATALOG.items()}
DETERMINISTIC = ["even", "away", "zero", "trunc"]
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}
_IN = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def _raw(a) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.reshape(-1).view(_UINT[a.dtype.itemsize])


# ------------------------------------------------------------------ the comparison
def check(x: np.ndarray, dt: tcast.DataType, **modes) -> None:
    """Cast ``x`` in every cast mode and compare every part with the exact model."""
    in_name = np.dtype(x.dtype).name
    ex = exact.cast_array(
        [float(v) for v in x.reshape(-1)], x.shape, dt, input_dtype=in_name, **modes
    )
    exact32 = np.array(ex.values, np.float64).astype(np.float32)
    virtual = tcast_ref.cast(x, dt, **modes)
    assert virtual.dtype == x.dtype and virtual.shape == x.shape
    np.testing.assert_array_equal(_raw(virtual), _raw(exact32.astype(x.dtype)), "virtual")
    actual = tcast_ref.cast(x, dt, castmode="actual", **modes)
    np.testing.assert_array_equal(actual.data.reshape(-1), np.array(ex.codes), "codes")
    np.testing.assert_array_equal(np.asarray(actual.scale).reshape(-1), ex.scale, "scale")
    assert actual.scale.shape == tuple(ex.scale_shape)
    if ex.tenscale is not None:
        assert int(actual.tenscale) == ex.tenscale
    if dt.meta_bits:
        assert actual.meta.dtype == np.uint8 and actual.meta.shape == tuple(ex.meta_shape)
        np.testing.assert_array_equal(actual.meta.reshape(-1), np.array(ex.meta), "meta")
    else:
        assert actual.meta is None and ex.meta is None
    compress = tcast_ref.cast(x, dt, castmode="compress", **modes)
    assert bytes(compress.data) == ex.packed()
    if dt.meta_bits:
        assert bytes(compress.meta) == ex.packed_meta()
    else:
        assert compress.meta is None
    for result in (actual, compress):
        up = tcast_ref.upcast(result)
        if in_name == "float32":
            np.testing.assert_array_equal(_raw(up), _raw(exact32), "upcast")
        else:  # rounded to the input dtype as the virtual result is (overflow: +-Inf)
            with np.errstate(over="ignore"):
                back = up.astype(x.dtype)
            np.testing.assert_array_equal(_raw(back), _raw(virtual), "upcast")


# ------------------------------------------------------------------ adversarial arrays
def _nudged(vals: list[float]) -> list[float]:
    """``vals`` and their float32 neighbours (a tie, and just off it on either side)."""
    v = np.array(vals, np.float32)
    return [*v.tolist(), *np.nextafter(v, np.float32(0)).tolist(), *np.nextafter(v, np.inf)]


def _classes(dt: tcast.DataType) -> tuple[list[float], list[float]]:
    """(values worth hitting, ties) as magnitudes of the scaled inputs ``x'``."""
    n, s = dt.nspec, dt.sspec
    if n.is_codebook:
        entries = sorted({abs(v) for t in n.tables for v in t})
        ties = []
        for t in n.tables:
            keys = sorted(abs(v) for v in t[: len(t) // 2]) if n.symmetric else sorted(t)
            ties += [
                abs(float((Fraction(a) + Fraction(b)) / 2)) for a, b in itertools.pairwise(keys)
            ]
        return entries, ties
    # offsets: the element grid (in x', the scale's domain) at every offset d, its midpoints;
    # the midpoint below the top of each binade rounds up out of it
    top = (1 << s.offset_bits) - 1
    if n.is_int:
        fixed = 1 << (n.bits - 2) if s.scale.is_exponent else 1
        grid = [Fraction(k, fixed) for k in range(n.maxint + 1)]
    else:
        vals = (exact.decode(c, n) for c in range(1 << n.bits))
        grid = sorted({abs(Fraction(v)) for v in vals if math.isfinite(v)})
    rng = np.random.default_rng(len(grid))
    pick = sorted(rng.choice(len(grid) - 1, min(12, len(grid) - 1), replace=False).tolist())
    ties, points = [], []
    for d in range(top + 1):
        for k in {*pick, len(grid) - 2}:
            a, b = grid[k], grid[k + 1]
            points.append(float(b / 2**d))
            ties.append(float((a + b) / 2 / 2**d))
    return points, ties


def _candidates(dt: tcast.DataType) -> tuple[list[float], list[float]]:
    """(every class with the ties' float32 neighbours, the ties)."""
    points, ties = _classes(dt)
    return points + _nudged(ties), ties


def _tiles(dt: tcast.DataType, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Twelve tiles of ``size`` float32 values, each a kind of trouble."""
    cands, ties = _candidates(dt)
    m = float(element_max(dt.nspec, dt.sspec.scale.is_exponent))

    def signed(vals) -> np.ndarray:
        v = np.array(vals, np.float32)
        return np.where(rng.random(v.shape) < 0.5, -v, v).astype(np.float32)

    def anchored(vals) -> np.ndarray:
        t = signed(vals)
        t[rng.integers(size)] = m  # the block maximum: scale 2**0, x' = x
        return t

    sub = next((t.subtile for t in dt.sspec.tiles if t.subtile), 4)
    per_sub = np.zeros(size, np.float32)  # subtiles all zero or one value: mapping ties
    per_sub[::sub] = rng.choice(cands, size // sub)
    per_sub[0] = m
    zeros = np.where(rng.random(size) < 0.5, np.float32(-0.0), np.float32(0.0))
    binades = np.exp2(-rng.integers(0, 14, size)).astype(np.float32)
    just_below = np.nextafter(binades, np.float32(0))
    nan = anchored(rng.choice(cands, size))
    nan[rng.integers(size)] = np.nan
    inf = anchored(rng.choice(cands, size))
    inf[rng.integers(size)] = -np.inf
    subnormal = signed(rng.integers(0, 1 << 20, size) * 2.0**-149)
    gauss = rng.standard_normal(size) * np.exp2(rng.integers(-20, 20))
    return [
        anchored(rng.choice(cands, size)),
        zeros.astype(np.float32),
        anchored(rng.choice(ties, size)),
        np.full(size, rng.choice(cands), np.float32),
        nan,
        subnormal,
        anchored(binades),
        per_sub,
        inf,
        anchored(just_below),
        gauss.astype(np.float32),
        signed(rng.choice(cands, size) * np.float32(2.0**-60)),
    ]


def adversarial(dt: tcast.DataType, seed: int = 0) -> np.ndarray:
    """Six rows of two tiles each along the last dimension, the second one partial.

    The partial tile holds one whole subtile and one element of the next.
    """
    t = dt.sspec.tiles[-1]
    size = t.size or 16
    tiles = _tiles(dt, size, np.random.default_rng(seed))
    rows = np.stack([np.concatenate(tiles[i : i + 2]) for i in range(0, 12, 2)])
    return np.ascontiguousarray(rows[:, : size + (t.subtile or size // 2) + 1])


# ------------------------------------------------------------------ the named datatypes
@pytest.mark.parametrize("roundmode", DETERMINISTIC)
@pytest.mark.parametrize("name", list(NAMED))
def test_named_datatypes_match_exact_on_adversarial_tiles(name, roundmode):
    dt = tcast.datatype(name)
    assert dt == tcast.datatype(NAMED[name])
    check(adversarial(dt), dt, roundmode=roundmode)


@pytest.mark.parametrize("name", ["mx9", "mx6", "mx4"])
def test_msfp_stochastic_rounding_by_seed_matches_exact(name):
    dt = tcast.datatype(NAMED[name])
    check(adversarial(dt, 1), dt, roundmode="stochastic", seed=12345)


def test_msfp_stochastic_rounding_by_explicit_bits_matches_exact():
    dt = tcast.datatype(NAMED["mx6"])
    x = adversarial(dt, 2)
    assert dt.nspec.rbits_width == 8  # uint8 random bits (SEMANTICS.md §3.3)
    rbits = np.random.default_rng(3).integers(0, 1 << 8, x.shape, dtype=np.uint8)
    ex = exact.cast_array(
        x.reshape(-1).tolist(), x.shape, dt, roundmode="stochastic", rbits=rbits.reshape(-1)
    )
    got = tcast_ref.cast(x, dt, castmode="actual", roundmode="stochastic", rbits=rbits)
    np.testing.assert_array_equal(got.data.reshape(-1), np.array(ex.codes))
    np.testing.assert_array_equal(got.meta.reshape(-1), np.array(ex.meta))


def test_mx4_pairs_of_every_magnitude_class_match_exact():
    """Every pair of int3 classes (grid points at both offsets, ties, their neighbours, 0, -0)."""
    dt = tcast.datatype(NAMED["mx4"])
    points, ties = _classes(dt)
    mags = {*points, *ties}
    classes = sorted({*mags, *(-c for c in mags), 0.0, -0.0})
    pairs = [(a, b) for a in classes for b in classes]
    pairs += [(0.0, 0.0)] * (-len(pairs) % 7)
    m = float(element_max(dt.nspec, True))
    tiles = [[m, 0.0, *(v for p in pairs[i : i + 7] for v in p)] for i in range(0, len(pairs), 7)]
    check(np.array(tiles, np.float32), dt, roundmode="even")


@pytest.mark.parametrize("name", ["mxfi4", "mxfp4e"])
def test_codebook_single_values_of_every_class_match_exact(name):
    """Every entry, midpoint and neighbour alone in its subtile, both signs (ties to even)."""
    dt = tcast.datatype(NAMED[name])
    cands, _ = _candidates(dt)
    vals = sorted({*cands, *(-c for c in cands)})
    sub = dt.sspec.tiles[0].subtile
    per_tile = 32 // sub - 1
    vals += [0.0] * (-len(vals) % per_tile)
    m = float(element_max(dt.nspec, True))
    tiles = []
    for i in range(0, len(vals), per_tile):
        tile = np.zeros((32 // sub, sub), np.float32)
        tile[0, 0] = m
        tile[1:, 0] = vals[i : i + per_tile]
        tiles.append(tile.reshape(-1))
    check(np.array(tiles), dt, roundmode="even")


# ------------------------------------------------------------------ grammar variants
_VARIANTS = [
    # 2-D subtiles, the offset on either segment, plain and transposed, partial tiles
    ("int8_e8m0_t8s2o1_t8s4", (12, 21), {}),
    ("int8_e8m0_t8s2o1_t8s4", (12, 21), {"transpose_scale": True, "roundmode": "away"}),
    ("int5_e8m0_t8s2_t8s4o2", (9, 13), {"transpose_scale": True}),
    ("cb41fi_e2m2fnuz_e8m0_t8s2_t8s4", (12, 21), {"transpose_scale": True}),
    ("cb42fe0123_e3m2fnuz_e8m0_t8s4_t8s2", (12, 21), {"roundmode": "zero"}),
    ("cb42fe0123_e3m2fnuz_e8m0_t8_t8", (12, 21), {"transpose_scale": True}),
    # offsets under float scales, float data, other scale modes
    ("e2m3fn_e4m3_t16s4o2", (4, 37), {}),
    ("int8_e4m3_t16s2o1", (4, 37), {"roundmode": "trunc"}),
    ("int8_bfloat16_t16s2o1", (4, 37), {"scalemode": "ceil"}),
    ("e4m3fn_e8m0_t32s8o3", (4, 37), {"scalemode": "midmax"}),
    ("int8_e8m0_t16s2o1", (4, 37), {"scalemode": "option3"}),
    # two-level codebooks, a tensor scale, channels with a partial subtile
    ("cb41fi_e2m2fnuz_e4m3_float32_t16s4", (4, 37), {}),
    ("cb42fe0123_e3m2fnuz_e4m3_float32_t32s8", (4, 37), {"roundmode": "away"}),
    ("cb41fi_e2m2fnuz_e8m0", (4, 10), {}),
    ("cb41fi_e2m2fnuz_float32", (4, 10), {"roundmode": "trunc"}),
    ("cb41fi_e2m2fnuz_e8m0_t0s4d0", (10, 6), {}),
    ("int8_e8m0_t0s4o1", (6, 10), {}),
    # one mapping per block of 128: the error sums run past the position loop
    ("cb41f01_e2m2fnuz_e8m0_t128", (2, 200), {}),
    # scale modes of the codebook scale (M = the largest entry, option3: compute precision)
    ("cb42f1346_e2m3fnuz_e8m0_t32s8", (3, 40), {"scalemode": "option3"}),
    ("cb41fi_e2m2fnuz_e8m0_t32s4", (3, 40), {"scalemode": "topbinade"}),
    ("cb40_float32_nf4_float32_t64", (2, 3, 40), {"roundmode": "away"}),
]


@pytest.mark.parametrize(("code", "shape", "modes"), _VARIANTS)
def test_grammar_variants_match_exact(code, shape, modes):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-6, 6, shape))
    x.reshape(-1)[::7] = 0.0  # zero subtiles and mapping ties among them
    check(x.astype(np.float32), tcast.datatype(code), **modes)


@pytest.mark.parametrize(
    ("code", "shape", "modes"),
    [
        ("int8_e8m0_t0s2o1", (3, 37), {"roundmode": "stochastic", "seed": 3}),
        ("cb41fi_e2m2fnuz_e8m0_t0s4", (3, 37), {}),
        ("cb41fi_e2m2fnuz_e8m0_t8s2_t8s4", (9, 20), {"transpose_scale": True}),
        ("cb41fi_e2m2fnuz_e8m0", (5, 7), {}),
    ],
)
def test_pieces_cut_on_subtile_boundaries_match_exact(monkeypatch, code, shape, modes):
    """Rows longer than a piece are cut on whole subtiles (blocks, where the meta is per block)."""
    monkeypatch.setattr(tcast_ref._cast, "CHUNK", 16)
    rng = np.random.default_rng(len(code))
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-5, 5, shape))
    check(x.astype(np.float32), tcast.datatype(code), **modes)


@pytest.mark.parametrize(("name", "in_dtype"), [("mx6", "float16"), ("mxfp4m", "bfloat16")])
def test_sixteen_bit_inputs_match_exact(name, in_dtype):
    dt = tcast.datatype(NAMED[name])
    check(adversarial(dt, 4).astype(_IN[in_dtype]), dt, roundmode="even")


def test_given_tables_without_zero_ignore_the_padding_of_partial_tiles():
    """Padding is no element: a zero there would add error to a table without 0 (§5.9)."""
    cb = tcast.codebook([[-1.0, -0.5, 0.5, 1.0], [-2.0, -1.0, 1.0, 2.0]], "e2m1fn", label="nz")
    dt = tcast.datatype(cb, "e8m0_t8s4")
    # scale 1 (amax 2 = the largest entry). Subtile errors, mapping 0 vs 1: [2, .25, .25, .25]
    # 1 + 3/16 vs 0 + 3 * 9/16; [1, 1, 1, 1] 0 vs 0 (tie: 0); [2, 1, 1, 1] 1 vs 0; the partial
    # [2] 1 vs 0, where three padded zeros would add 3/4 vs 3 and turn the choice to 0
    x = np.array([[2.0, 0.25, 0.25, 0.25, 1.0, 1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0, 2.0]])
    check(x.astype(np.float32), dt)
    got = tcast_ref.cast(x.astype(np.float32), dt, castmode="actual")
    assert got.meta.tolist() == [[0, 0, 1, 1]]


@pytest.mark.parametrize("roundmode", DETERMINISTIC)
def test_given_table_midpoints_beyond_float64_and_equal_magnitude_ties_match_exact(roundmode):
    """A midpoint float64 cannot hold (2**-60 and 1: 0.5 + 2**-61) is no tie for t = 0.5;
    t = +-0 between -0.5 and 0.5 ties at equal magnitudes: the even index in every mode."""
    far = tcast.codebook([[-1.0, 2.0**-60, 1.0, 2.0]], "float32", label="far")
    pm = tcast.codebook([[-2.0, -0.5, 0.5, 2.0]], "float32", label="pm")
    x = np.array([[2.0, 0.5, -0.5, 0.75, 0.0, -0.0, -1.25, 1.25]], np.float32)
    for cb, want in ((far, 1), (pm, 2)):
        dt = tcast.datatype(cb, "e8m0_t8")
        check(x, dt, roundmode=roundmode)
        got = tcast_ref.cast(x, dt, castmode="actual", roundmode=roundmode)
        if roundmode != "trunc":
            assert got.data[0, 1 if cb is far else 4] == want


def test_blocked_scale_layout_leaves_meta_plain():
    dt = tcast.datatype(NAMED["mxfp4e"])
    x = adversarial(dt, 5)
    plain = tcast_ref.cast(x, dt, castmode="actual")
    for castmode in ("actual", "compress"):
        blocked = tcast_ref.cast(x, dt, castmode=castmode, scale_layout="blocked")
        ref = tcast_ref.cast(x, dt, castmode=castmode)
        assert _raw(blocked.meta).tolist() == _raw(ref.meta).tolist()
        np.testing.assert_array_equal(_raw(tcast_ref.upcast(blocked)), _raw(tcast_ref.upcast(ref)))
    assert plain.meta.shape == (6, 6)


def test_a_scaled_input_overflowing_float32_saturates_to_the_largest_entry():
    """t = fl32(x * r) can overflow to Inf (§5.9): it lies above v_P and saturates.

    The s pattern on bfloat16 puts v_P at bfloat16's largest value M = 0x7F7F. A block maximum
    of 1.05 * M / 2**10 gives the e5m3 scale 2**-10 (1.05 rounds to 1.0 in three mantissa
    bits: code 5 << 3 = 40), so t = 1.05 * M overflows float32. Both mappings then have the
    error Inf and mapping 0 stays; the code is P = 7 and the value M * 2**-10.
    """
    dt = tcast.datatype("cb41ss2_bfloat16_e5m3_t8s4")
    top = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    x = np.zeros((1, 8), np.float32)
    x[0, 0] = top * 1.05 / 1024
    x[0, 5] = -top * 1.05 / 1024
    got = tcast_ref.cast(x, dt, castmode="actual")
    assert got.data.tolist() == [[7, 0, 0, 0, 0, 15, 0, 0]]
    assert got.scale.tolist() == [[40]] and got.meta.tolist() == [[0, 0]]
    want = np.float32([top / 1024, 0, 0, 0, 0, -top / 1024, 0, 0])
    np.testing.assert_array_equal(_raw(tcast_ref.cast(x, dt)), _raw(want[None]))
    check(x, dt)


def test_an_offset_of_a_scaled_input_overflowing_float32_is_zero():
    """x' = fl32(x * r) can overflow to Inf (§5.8): it lies above every binade, d = 0.

    bfloat16 data (M = 0x7F7F) under an e4m3 scale: a block maximum of 1.05 * M / 2**6 gives
    the scale 2**-6 (code 1 << 3 = 8), so x' = 1.05 * M overflows float32 and saturates to
    M (code 0x7F7F) with offset 0; -3 * 2**-6 shares its subtile (x' = -3: code 0xC040).
    The second subtile's largest x' is 1.0: d = clamp(127 - 0, 0, 1) = 1.
    """
    dt = tcast.datatype("bfloat16_e4m3_t8s4o1")
    top = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    x = np.zeros((1, 8), np.float32)
    x[0, :2] = top * 1.05 / 64, -3.0 / 64
    x[0, 5] = 1.0 / 64
    got = tcast_ref.cast(x, dt, castmode="actual")
    assert got.data.tolist() == [[0x7F7F, 0xC040, 0, 0, 0, 0x4000, 0, 0]]
    assert got.scale.tolist() == [[8]] and got.meta.tolist() == [[0, 1]]
    want = np.float32([top / 64, -3.0 / 64, 0, 0, 0, 1.0 / 64, 0, 0])
    np.testing.assert_array_equal(_raw(tcast_ref.cast(x, dt)), _raw(want[None]))
    check(x, dt)


# ------------------------------------------------------------------ refusals
def test_stochastic_rounding_of_a_codebook_is_a_spec_error_naming_it():
    x = np.ones((2, 32), np.float32)
    with pytest.raises(SpecError, match=r"stochastic rounding is not defined for codebook.*mxfi4"):
        tcast_ref.cast(
            x, tcast.datatype(NAMED["mxfi4"], name="mxfi4"), roundmode="stochastic", seed=1
        )


# ------------------------------------------------------------------ the error sum
def test_unit_errors_sum_sequentially_not_pairwise():
    """1 + 2**-24 rounds back to 1 at every step: the sequential sum is exactly 1."""
    from tcast_ref._codebook import unit_errors

    for length in (33, 200):  # the position loop, and ufunc.accumulate
        terms = np.full((1, 1, length), np.float32(2.0**-24))
        terms[..., 0] = 1.0
        assert unit_errors(terms).tolist() == [[1.0]]
        assert np.sum(terms, dtype=np.float32) > 1.0  # pairwise summation differs


# ------------------------------------------------------------------ the result form
def test_result_form_of_metadata_actual_and_compress():
    dt = tcast.datatype("int8_e8m0_t16s2o1")
    actual = result_form(dt, (3, 20), CastMode.ACTUAL)["meta"]
    assert (actual.dtype, actual.shape, actual.code_bits) == ("uint8", (3, 10), 1)
    packed = result_form(dt, (3, 20), CastMode.COMPRESS)["meta"]
    assert (packed.dtype, packed.shape, packed.tail_bits) == ("uint8", (4,), 6)  # 30 bits
    e = tcast.datatype(NAMED["mxfp4e"])
    two = result_form(e, (5, 40), CastMode.COMPRESS)["meta"]
    assert (two.shape, two.tail_bits) == ((7,), 2)  # 5 x 5 subtiles x 2 bits = 50 bits
    assert "meta" not in result_form(tcast.datatype(NAMED["nf4"]), (2, 64), CastMode.ACTUAL)


def _result(code: str, castmode: str = "actual") -> tcast.CastResult:
    x = np.random.default_rng(9).standard_normal((3, 40)).astype(np.float32)
    return tcast_ref.cast(x, tcast.datatype(code), castmode=castmode)


_ACTUAL_REFUSALS = [
    ({"meta": None}, r"needs meta \(metadata codes of 2 bits\)"),
    ({"meta": np.zeros((3, 5), np.uint16)}, "meta must be uint8 .* not uint16"),
    ({"meta": np.zeros((3, 4), np.uint8)}, r"shape \(3, 4\), expected \(3, 5\)"),
    ({"meta": np.full((3, 5), 4, np.uint8)}, "holds code 0x4, but metadata codes of 2 bits"),
    ({"meta": [[0] * 5] * 3}, "meta must be a NumPy array of metadata codes of 2 bits, got list"),
]


@pytest.mark.parametrize(("change", "match"), _ACTUAL_REFUSALS)
def test_upcast_refuses_bad_actual_meta(change, match):
    r = dataclasses.replace(_result(NAMED["mxfp4e"]), **change)
    with pytest.raises(SpecError, match=match):
        tcast_ref.upcast(r)


def test_upcast_refuses_bad_compress_meta():
    r = _result(NAMED["mxfp4e"], "compress")  # 3 x 5 subtiles x 2 bits: 30 bits in 4 bytes
    assert r.meta.shape == (4,)
    with pytest.raises(SpecError, match=r"shape \(3,\), expected \(4,\)"):
        tcast_ref.upcast(dataclasses.replace(r, meta=r.meta[:3]))
    tail = r.meta.copy()
    tail[-1] |= 0x40
    with pytest.raises(SpecError, match=r"ends in byte .* bits 6..7 are past the end"):
        tcast_ref.upcast(dataclasses.replace(r, meta=tail))


@pytest.mark.parametrize("code", [NAMED["nf4"], "e4m3fn_e8m0_t32"])
def test_upcast_refuses_meta_of_a_datatype_without_metadata(code):
    r = dataclasses.replace(_result(code), meta=np.zeros(1, np.uint8))
    with pytest.raises(SpecError, match=r"must not have meta: .* has no metadata"):
        tcast_ref.upcast(r)


# ------------------------------------------------------------------ subtile element order
def test_transposed_2d_subtiles_visit_their_elements_in_the_arrays_c_order():
    """The error sum's order (§5.9): C order of the array, whichever segment comes first."""
    from tcast_ref._subtiles import Units
    from tcast_ref._tiles import tiling

    dt = tcast.datatype("cb41fi_e2m2fnuz_e8m0_t8s4_t4s2")
    flat = np.arange(64, dtype=np.float32).reshape(8, 8)
    for transpose, first in (
        (False, [0, 1, 8, 9, 16, 17, 24, 25]),
        (True, [0, 1, 2, 3, 8, 9, 10, 11]),
    ):
        til = tiling(flat.shape, dt, transpose)
        rows = til.to_blocks(flat).reshape(-1, til.block_len)
        units = Units(til, til.sub_sizes).to_units(rows)
        assert units[0, 0].tolist() == first
        # every unit ascends (C order), and the units cover the block once
        assert all(np.all(np.diff(u) > 0) for u in units.reshape(-1, 8))
        assert sorted(units[0].reshape(-1).tolist()) == sorted(rows[0].tolist())


def test_a_cast_sums_a_2d_block_in_c_order_under_transposed_scaling():
    """The order of the error sum chooses the mapping here (worked by hand).

    Ascending tables B = (-4096 + 2**-11, 0, 4096, 8192), A = (-4096, 1, 4096, 8192) (M = 8192:
    the float32 scale is 1), one 2 x 2 tile [[0, -8192], [0, 0]]. A's terms in C order are
    1, 2**24, 1, 1: 1 + 2**24 ties back to 2**24, so E_A = 2**24 < E_B = 2**24 + 4 (B's one
    term, (4096 + 2**-11)**2 rounded): A. The transposed block lists the elements column by
    column, 1 + 1 + 2**24 + 1 = 2**24 + 4 = E_B, which would keep B.
    """
    b = (-4096.0 + 2.0**-11, 0.0, 4096.0, 8192.0)
    a = (-4096.0, 1.0, 4096.0, 8192.0)
    dt = tcast.datatype(tcast.codebook((b, a), "float32", label="order"), "float32_t2_t2")
    x = np.array([[0.0, -8192.0], [0.0, 0.0]], np.float32)
    for transpose in (False, True):
        got = tcast_ref.cast(x, dt, castmode="actual", transpose_scale=transpose)
        assert got.meta.tolist() == [[1]]
        assert got.data.tolist() == [[1, 0], [1, 1]]
        check(x, dt, transpose_scale=transpose)


# ------------------------------------------------------------------ cast_dual
@pytest.mark.parametrize("castmode", ["virtual", "actual", "compress"])
@pytest.mark.parametrize("name", ["mx9", "mxfp4e"])
def test_cast_dual_keeps_offsets_and_transposes_meta(name, castmode):
    """The column cast keeps o<B> with its tile; a transposed result is xᵀ's row cast."""
    x = np.random.default_rng(11).standard_normal((24, 40)).astype(np.float32)
    dt = tcast.datatype(name)
    cols_dt = tcast.kit.column_datatype(dt)
    assert cols_dt.meta_bits == dt.meta_bits
    for transposed, want_x, want_dt in ((False, x, cols_dt), (True, x.T.copy(), dt)):
        _, second = tcast_ref.cast_dual(x, dt, castmode=castmode, transposed=transposed)
        want = tcast_ref.cast(want_x, want_dt, castmode=castmode)
        if castmode == "virtual":
            np.testing.assert_array_equal(_raw(second), _raw(want))
            continue
        for part in ("data", "scale", "meta"):
            np.testing.assert_array_equal(getattr(second, part), getattr(want, part), part)
        np.testing.assert_array_equal(_raw(tcast_ref.upcast(second)), _raw(tcast_ref.upcast(want)))


def test_a_masked_array_as_metadata_is_refused_like_every_other_part():
    """SEMANTICS §9: a MaskedArray part would lose its mask; meta is a part like the others."""
    x = np.linspace(-1.0, 1.0, 32, dtype=np.float32).reshape(1, 32)
    r = tcast.cast(x, "mx9", castmode="actual")
    bad = dataclasses.replace(r, meta=np.ma.MaskedArray(r.meta))
    with pytest.raises(tcast.UnsupportedError, match=r"CastResult\.meta"):
        tcast.upcast(bad)


# ------------------------------------------------------------------ random grammar
# bfloat16 twice: its largest value near float32's makes scaled inputs overflow
_COMPUTES = ["e2m3fnuz", "e3m2fnuz", "e2m2fnuz", "e4m3fn", "e5m2", "int8", "bfloat16", "bfloat16"]
_FLOATS = ["e2m1fn", "e2m3fn", "e3m2fn", "e4m3fn", "e5m2", "e2m1fnuz", "bfloat16", "bfloat16"]
_SCALES = ["e8m0", "e8m0", "e4m3", "e5m3", "bfloat16", "float32", "e4m3fn"]


def _clause(r: random.Random) -> tuple[str, int]:
    """One implicit clause and the number of mappings it describes."""
    kind = r.choice("fips")
    text, offsets, eoffsets = kind, 1, 1
    if kind in "ps" and r.random() < 0.7:
        text += str(r.randint(1, 3))
    if r.random() < 0.5:
        digits = "".join(str(r.randint(0, 6)) for _ in range(r.randint(1, 3)))
        text, offsets = text + digits, len(digits)
    if kind in "fi" and r.random() < 0.3:
        digits = "".join(str(r.randint(0, 3)) for _ in range(r.randint(0, 2)))
        text, eoffsets = text + "e" + digits, len(digits) or 2
    return text, offsets * eoffsets


def _number(r: random.Random):
    pick = r.random()
    if pick < 0.3:
        return f"int{r.randint(2, 8)}"
    if pick < 0.45:
        return r.choice(_FLOATS)
    if pick < 0.55:
        return _given(r)
    clauses = [_clause(r) for _ in range(r.choice([1, 1, 2, 3]))]
    n = sum(c[1] for c in clauses)
    if n not in (1, 2, 4, 8):
        return "cb41fi_e2m2fnuz"
    bits = r.randint(3, 5) if any(c[0][0] == "f" for c in clauses) else r.randint(2, 6)
    return f"cb{bits}{n.bit_length() - 1}{''.join(c[0] for c in clauses)}_{r.choice(_COMPUTES)}"


def _given(r: random.Random):
    """A given table of e4m3fn or int8 values, ascending or symmetric."""
    compute = tcast.number(r.choice(["e4m3fn", "int8"]))
    vals = sorted(
        {float(exact.decode(c, compute)) for c in range(256)} - {math.nan, math.inf, -math.inf}
    )
    vals = [v for v in vals if math.isfinite(v)]
    bits, meta = r.randint(2, 4), r.choice([0, 0, 1])
    symmetric = r.random() < 0.4
    tables = []
    for _ in range(1 << meta):
        if symmetric:
            pos = sorted(r.sample([v for v in vals if v > 0], (1 << (bits - 1)) - 1))
            tables.append([0.0, *pos, -0.0, *(-v for v in pos)])
        else:
            tables.append(sorted(r.sample(vals, 1 << bits)))
    return tcast.codebook(tables, compute, label="fuzz", symmetric=symmetric)


def _segment(r: random.Random, offset: bool, channel: bool = True) -> str:
    size = r.choice([0, 8, 16, 32] if channel else [4, 8, 16])
    subs = [2**k for k in range(1, 5) if size == 0 or 2**k < size]
    text = f"t{size}s{r.choice(subs)}" if r.random() < 0.85 else f"t{size}"
    if offset and "s" in text:
        text += f"o{r.randint(1, 4)}"
    return text


def _datatype(r: random.Random) -> tcast.DataType | None:
    try:
        number = _number(r)
    except SpecError:  # a given table the compute type cannot hold
        return None
    codebook = not isinstance(number, str) or number.startswith("cb")
    scale = r.choice(_SCALES)
    if r.random() < 0.2 and scale != "e8m0":
        scale += "_float32"
    if r.random() < 0.3:
        first = _segment(r, not codebook, channel=False)
        second = _segment(r, not codebook and "o" not in first, channel=False)
        scale += f"_{first}_{second}"
    else:
        scale += f"_{_segment(r, not codebook)}"
    try:
        return tcast.datatype(number, scale)
    except SpecError:
        return None


def _array(r: random.Random, dt: tcast.DataType) -> np.ndarray:
    rank = max(len(dt.sspec.tiles), r.choice([1, 2, 2, 3]))
    shape = (*(r.randint(1, 9) for _ in range(rank - 1)), r.randint(1, 40))
    rng = np.random.default_rng(r.randrange(2**32))
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-8, 8, shape)) * 2.0 ** r.randint(-40, 40)
    if dt.nspec.is_codebook and r.random() < 0.5:  # table entries: ties and exact hits
        entries = [v for t in dt.nspec.tables for v in t]
        x = rng.choice(entries, shape) * 2.0 ** r.randint(-3, 3)
    if r.random() < 0.15:  # amax 5% above M times a scale: a float scale rounds down, and
        # x' = fl32(x * r) lies above M (past float32's max where M is near it: bfloat16)
        n = dt.nspec
        top = n.max_value if n.is_codebook else element_max(n, dt.sspec.scale.is_exponent)
        x = x / max(np.abs(x).max(), 1e-30) * float(top) * 1.05 * 2.0 ** -r.randint(0, 6)
    x[rng.random(shape) < 0.1] = 0.0
    x[rng.random(shape) < 0.05] = -0.0
    if r.random() < 0.05:
        x.reshape(-1)[rng.integers(x.size)] = r.choice([math.nan, math.inf, -math.inf])
    with np.errstate(over="ignore"):
        return x.astype(np.float32).astype(
            _IN[r.choice(["float32", "float32", "float16", "bfloat16"])]
        )


def _modes(r: random.Random, x: np.ndarray) -> dict:
    modes = {
        "roundmode": r.choice(["even", "away", "zero", "trunc", "stochastic"]),
        "scalemode": r.choice(["floor", "ceil", "midmax", "option3", "topbinade"]),
        "transpose_scale": x.ndim >= 2 and r.random() < 0.4,
    }
    if modes["roundmode"] == "stochastic":
        modes["seed"] = r.randrange(2**31)
    return modes


@pytest.mark.full
@pytest.mark.parametrize("seed", range(16))
def test_random_grammar_datatypes_match_exact(seed):
    """Random datatypes of the grammar, arrays and modes (under -m full: about a minute).

    Each case draws a datatype (int or float data with offsets, implicit codebooks of random
    clauses on random compute types, given tables, 1-D, channel and 2-D tiles, exponent,
    float and two-level scales), a small array (partial tiles, 16-bit inputs, zeros of both
    signs, values near float32's top so that scaled inputs overflow) and modes; codes the
    grammar refuses are drawn again, and a codebook must refuse stochastic rounding.
    """
    r = random.Random(seed)
    done = 0
    while done < 60:
        dt = _datatype(r)
        if dt is None:
            continue
        x = _array(r, dt)
        modes = _modes(r, x)
        if dt.nspec.is_codebook and modes["roundmode"] == "stochastic":
            with pytest.raises(SpecError, match="stochastic rounding is not defined"):
                tcast_ref.cast(x, dt, **modes)
        else:
            check(x, dt, **modes)
        done += 1
