"""The catalog of named datatypes, upstream name coverage, and combinations()."""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from pathlib import Path

import pytest

import tcast
from tcast import (
    ALIASES,
    CATALOG,
    DESCRIPTIONS,
    NOT_YET_SUPPORTED,
    PREVIEW_CATALOG,
    DataType,
    SpecError,
    UnsupportedError,
    datatype,
    number,
    scale,
)

PRIMARY = [name for name in CATALOG if name not in ALIASES]


# ------------------------------------------------------------- structure
def test_every_catalog_name_maps_to_a_datatype():
    for name, dt in CATALOG.items():
        assert isinstance(dt, DataType), name
        assert datatype(name) is dt, name
        # re-validating the specs gives an equal datatype
        assert DataType(dt.nspec, dt.sspec) == dt


def test_primary_names_unique_and_name_equals_key():
    assert len(PRIMARY) == len(set(PRIMARY))
    for name in PRIMARY:
        assert CATALOG[name].name == name, name
    # aliases point at primaries, never at other aliases, and never shadow a primary
    for alias, primary in ALIASES.items():
        assert primary in PRIMARY, alias
        assert alias not in PRIMARY, alias
        assert CATALOG[alias] is CATALOG[primary], alias
        assert CATALOG[alias].name == primary
    assert set(DESCRIPTIONS) == set(PRIMARY) | set(PREVIEW_CATALOG)
    assert not set(CATALOG) & set(NOT_YET_SUPPORTED)
    assert not set(CATALOG) & set(PREVIEW_CATALOG)


def test_primary_names_denote_distinct_datatypes_except_documented_twins():
    # Equality ignores the name; two primaries with equal specs are the same cast.
    # bfp16t16 (block floating point, int8 + e8m0 per 16) and mxint8t16 coincide
    # under tcast's semantics; any other coincidence should be an alias instead.
    groups = defaultdict(list)
    for name in PRIMARY:
        groups[CATALOG[name]].append(name)
    twins = sorted(sorted(names) for names in groups.values() if len(names) > 1)
    assert twins == [["bfp16t16", "mxint8t16"]]


def test_module_attributes_for_every_primary_name():
    for name in PRIMARY:
        assert getattr(tcast, name) is CATALOG[name], name
        assert name in tcast.__all__, name
    for name in tcast.__all__:
        assert hasattr(tcast, name), name
    assert len(tcast.__all__) == len(set(tcast.__all__))


def test_catalog_name_that_is_a_number_code_means_that_code_unscaled():
    checked = 0
    for name, dt in CATALOG.items():
        try:
            n = number(name)
        except SpecError:
            continue
        assert dt == DataType(n), name
        assert dt.is_unscaled
        checked += 1
    assert checked >= 20  # float32, e4m3fn, fp8, float8_e4m3fnuz, binary8p*, ...


def test_catalog_name_that_is_a_code_pair_means_that_pair():
    for name, dt in CATALOG.items():
        head, _, rest = name.partition("_")
        if not rest:
            continue
        try:
            pair = DataType(number(head), scale(rest))
        except (SpecError, UnsupportedError):
            continue
        assert pair == dt, name


def test_catalog_codes_round_trip():
    for name, dt in CATALOG.items():
        assert datatype(dt.code) == dt, name
        if dt.sspec is not None:
            assert datatype(dt.nspec.code, dt.sspec.code) == dt, name


# ------------------------------------------------------------- OCP / NV
OCP_MX = {
    "mxfp8": "e4m3fn",
    "mxfp8e5": "e5m2",
    "mxfp6e2": "e2m3f",
    "mxfp6e3": "e3m2f",
    "mxfp4": "e2m1f",
    "mxint8": "int8",
    "mxint4": "int4",
}


@pytest.mark.parametrize("name", sorted(OCP_MX))
def test_mx_formats_use_ocp_elements_and_e8m0_t32(name):
    dt = CATALOG[name]
    assert dt.nspec == number(OCP_MX[name])
    assert dt.sspec == scale("e8m0_t32")
    assert dt.sspec.scale == number("float8_e8m0fnu")
    assert dt.sspec.tiles[0].size == 32 and dt.sspec.tiles[0].dim is None
    # 16-element and 2-D variants
    assert CATALOG[name + "t16"] == DataType(number(OCP_MX[name]), scale("e8m0_t16"))
    assert CATALOG[name + "_2d"] == DataType(number(OCP_MX[name]), scale("e8m0_t32_t32"))


def test_mx_element_formats_are_the_ocp_ones():
    # OCP MX v1.0: FP8 E4M3 max 448 with NaN, E5M2 IEEE-like, FP6/FP4 finite-only.
    assert tcast.mxfp8.nspec.maxfloat == 448 and tcast.mxfp8.nspec.has_nan
    assert tcast.mxfp8e5.nspec.has_inf
    assert tcast.mxfp6e2.nspec.maxfloat == 7.5 and not tcast.mxfp6e2.nspec.has_nan
    assert tcast.mxfp6e3.nspec.maxfloat == 28 and not tcast.mxfp6e3.nspec.has_nan
    assert tcast.mxfp4.nspec.maxfloat == 6 and not tcast.mxfp4.nspec.has_nan
    # MXINT8: symmetric int8
    assert (tcast.mxint8.nspec.maxint, tcast.mxint8.nspec.minint) == (127, -127)


def test_mxint8_is_int8_with_e8m0_t32():
    assert tcast.mxint8 == datatype("int8", "e8m0_t32")


def test_nvfp4_is_e2m1f_e4m3fn_t16_float32_tensor_scale():
    nv = tcast.nvfp4
    assert nv.nspec == number("e2m1f")
    assert nv.sspec.scale == number("e4m3fn")
    assert nv.sspec.second == number("float32")
    assert nv.sspec.tiles == (tcast.TileSpec(16),)
    assert nv.is_multiscale and nv.tenscale == number("float32")
    assert tcast.nvf4 == datatype("e2m1f", "e4m3fn_t16")


def test_bfp_formats():
    assert tcast.bfp16 == datatype("int8", "e8m0_t8")
    assert tcast.bfp16t16 == datatype("int8", "e8m0_t16")


ELEMENT = {
    "uint8": "uint8",
    "uint4": "uint4",
    "int8": "int8",
    "int4": "int4",
    "bf8": "e5m2",
    "bf8n": "e5m2b16fnuz",
    "fp8": "e4m3fn",
    "fp8n": "e4m3b8fnuz",
}
LETTER = {"F": "float32", "f": "float16", "b": "bfloat16", "n": "e4m3fn", "e": "e8m0", "i": "int8"}


def test_upstream_short_names_follow_the_letter_code():
    # Upstream letters: F float32, f float16, b bfloat16, n e4m3fn, e e8m0,
    # i int8 (zero point); trailing c: channel scale along the last dim (t0).
    pat = re.compile(r"(uint8|uint4|int8|int4|bf8n|bf8|fp8n|fp8)_([Ffbnei]{1,2})(c?)")
    seen = 0
    for name in PRIMARY:
        m = pat.fullmatch(name)
        if not m:
            continue
        letters = [LETTER[c] for c in m[2]]
        scode = "_".join(letters + (["t0"] if m[3] else []))
        assert CATALOG[name] == DataType(number(ELEMENT[m[1]]), scale(scode)), name
        seen += 1
    assert seen == 16 + 8 + 10 + 5 + 20 + 20


def test_unscaled_named_formats():
    assert tcast.float8_e4m3fnuz == datatype("e4m3b8fnuz")
    assert tcast.float8_e5m2fnuz == datatype("e5m2b16fnuz")
    assert tcast.float4_e2m1fn == datatype("e2m1f")
    assert tcast.e2m1fnuz.nspec == number("e2m1fnuz") and tcast.e2m1fnuz.nspec.bias == 1
    for p in range(1, 8):
        assert CATALOG[f"binary8p{p}"] == datatype(f"binary8p{p}")


# --------------------------------------------------- upstream name coverage
# The bullet lists of "## Predefined Datatypes" in upstream-api.md (the upstream
# tensorcast API document, /work/shared/reference/upstream-api.md), copied here so the
# test runs without that directory; test_upstream_copy_matches_reference checks the copy.
UPSTREAM_BULLETS = """\
- float32 (alias fp32)
- float16 (alias fp16)
- bfloat16 (alias bf16)
- float8_e5m2 (alises bf8, e5m2)
- float8_e5m2fnuz (aliases bf8n, e5m2fnuz)
- float8_e4m3fn (alias fp8, e4m3fn)
- float8_e4m3fnuz (aliases fp8n, e4m3fnuz)
- binary8p1, binary8p2, binary8p3, binary8p4, binary8p5, binary8p6
- uint8_FF, uint8_FFc (fp32 scale and zero point)
- uint8_Fi, uint8_Fic (fp32 scale, int8 zero point)
- uint8_ff, uint8_ffc (fp16 scale and zero point)
- uint8_fi, uint8_fic (fp16 scale, int8 zero point)
- uint8_bb, uint8_bbc (bf16 scale and zero point)
- uint8_bi, uint8_bic (bf16 scale, int8 zero point)
- uint8_ni, uint8_bic (e4m3 scale, int8 zero point)
- uint8_ei, uint8_bic (e8m0 scale, int8 zero point)
- uint4_FFc (fp32 scale and zero point)
- uint4_Fic (fp32 scale, int8 zero point)
- uint4_ffc (fp16 scale and zero point)
- uint4_fic (fp16 scale, int8 zero point)
- uint4_bbc (bf16 scale and zero point)
- uint4_bic (bf16 scale, int8 zero point)
- uint4_nic (e4m3 scale, int8 zero point)
- uint4_eic (e8m0 scale, int8 zero point)
- int8_F, int8_Fc (fp32 scale)
- int8_f, int8_fc (fp16 scale)
- int8_b, int8_bc (bf16 scale)
- int8_n, int8_nc (e4m3 scale)
- int8_e, int8_ec (e8m0 scale)
- int4_Fc (fp32 scale)
- int4_fc (fp16 scale)
- iint4_bc (bf16 scale)
- int4_nc (e4m3 scale)
- int4_ec (e8m0 scale)
- bf8_F, bf8_Fc, bf8n_F, bf8n_Fc (fp32 scale bf8 and bf8 nanoo, tensor and channel)
- bf8_f, bf8_fc, bf8n_f, bf8n_fc (fp16 scale bf8 and bf8 nanoo, tensor and channel)
- bf8_b, bf8_bc, bf8n_b, bf8n_bc (bf16 scale bf8 and bf8 nanoo, tensor and channel)
- bf8_n, bf8_nc, bf8n_n, bf8n_nc (e4m3 scale bf8 and bf8 nanoo, tensor and channel)
- bf8_e, bf8_ec, bf8n_e, bf8n_ec (e8m0 scale bf8 and bf8 nanoo, tensor and channel)
- fp8_F, fp8_Fc, fp8n_F, fp8n_Fc (fp32 scale fp8 and fp8 nanoo, tensor and channel)
- fp8_f, fp8_fc, fp8n_f, fp8n_fc (fp16 scale fp8 and fp8 nanoo, tensor and channel)
- fp8_b, fp8_bc, fp8n_b, fp8n_bc (bf16 scale fp8 and fp8 nanoo, tensor and channel)
- fp8_n, fp8_nc, fp8n_n, fp8n_nc (e4m3 scale fp8 and fp8 nanoo, tensor and channel)
- fp8_e, fp8_ec, fp8n_e, fp8n_ec (e8m0 scale fp8 and fp8 nanoo, tensor and channel)
- mxbf8 (alias mxfp8e5)
- mxfp8 (alias mxfp8e4)
- mxbf6 (alias mxfp6e3)
- mxbfp (alias mxfp6e2)
- mxfp4 (alias mxfp4e2)
- mxint8
- mxint4
- mxbf8t16, mxfp8t16, mxbf6t16, mxbfpt16, mxfp4t16, mxint8t16, mxint4t16
- nvf4 (maybe others to come?)
- mx9, mx6, mx4
- bfp16, bfp16t16
- mxfi4 (alternates MXINT4 and MXFP4 patterns, tile 32, subtile 4, cb41fi_e2m2fnuz)
- mxfp4m (MXFP4 patterns with additional trailing mantissa bit, tile 32, subtile 4, cb41f01_e2m2fnuz)
- mxfp4e (MXFP4 patterns four different starting exponents, tile 32, subtile 8, cb42fe0123_e3m2fnuz)
- mxfp4f4 (mxfp4 shifted 4 times up or down the number line, tile 32, subtile 8, cb42f1346_e2m3fnuz)
"""  # noqa: E501

# shared/ sits beside the repository checkout (in development and in CI).
REFERENCE = Path(__file__).resolve().parents[3].parent / "shared" / "reference" / "upstream-api.md"

# Upstream typos: "iint4_bc" is int4_bc; "uint8_bic" is listed three times, the
# second and third meaning uint8_nic and uint8_eic (their lines are e4m3 / e8m0).
TYPO_FIX = {"iint4_bc": "int4_bc"}

# Upstream aliases whose spelling is a number code of the grammar: the grammar
# wins (SEMANTICS: bare e4m3fnuz has the default bias 7, e5m2fnuz 15), so they are
# not catalog names; datatype() gives the grammar's unscaled format for them.
GRAMMAR_WINS = {"e4m3fnuz": "float8_e4m3fnuz", "e5m2fnuz": "float8_e5m2fnuz"}


def upstream_names(text: str) -> list[str]:
    """Names (and aliases) in the bullet lists of the Predefined Datatypes section."""
    if "## Predefined Datatypes" in text:
        text = text.split("## Predefined Datatypes", 1)[1].split("\n---", 1)[0]
    names = []
    for line in text.splitlines():
        if not line.startswith("- "):
            continue
        head, _, paren = line[2:].partition("(")
        row = [n.strip() for n in head.split(",") if n.strip()]
        if len(row) == 2 and row[1] == "uint8_bic" and row[0] in ("uint8_ni", "uint8_ei"):
            row[1] = row[0] + "c"
        names += [TYPO_FIX.get(n, n) for n in row]
        m = re.match(r"\s*(?:alias|aliases|alises)\s+([^)]*)\)", paren)
        if m:
            names += [n.strip() for n in m[1].split(",")]
    return names


def test_upstream_copy_matches_reference():
    if not REFERENCE.exists():
        pytest.skip(f"{REFERENCE} is not present here")
    assert upstream_names(REFERENCE.read_text()) == upstream_names(UPSTREAM_BULLETS)


def test_upstream_parse_sanity():
    names = upstream_names(UPSTREAM_BULLETS)
    assert "int4_bc" in names and "iint4_bc" not in names
    assert {"uint8_bic", "uint8_nic", "uint8_eic"} <= set(names)
    assert {"fp32", "bf8", "e5m2", "mxfp8e4", "mxfp4e2", "mx9", "mxfp4f4"} <= set(names)
    assert len(names) == len(set(names))  # no name listed twice


def test_every_upstream_name_is_in_catalog_or_not_yet_supported():
    missing = []
    for name in upstream_names(UPSTREAM_BULLETS):
        if name in GRAMMAR_WINS:
            # the grammar code, unscaled, default bias; not the torch fnuz type
            n = number(name)
            assert datatype(name) == DataType(n)
            assert n.bias == (1 << (n.ebits - 1)) - 1
            assert datatype(name) != CATALOG[GRAMMAR_WINS[name]]
            assert name not in CATALOG
            continue
        if name in NOT_YET_SUPPORTED:
            with pytest.raises(UnsupportedError):
                datatype(name)
        elif name in PREVIEW_CATALOG:
            assert datatype(name) is PREVIEW_CATALOG[name]
        elif name in CATALOG:
            assert datatype(name) is CATALOG[name]
        else:
            missing.append(name)
    assert not missing, missing


def test_msfp_and_codebook_names_are_preview_catalog_entries():
    assert not NOT_YET_SUPPORTED
    assert {n: dt.code for n, dt in PREVIEW_CATALOG.items()} == {
        "mx9": "int8_e8m0_t16s2o1",
        "mx6": "int5_e8m0_t16s2o1",
        "mx4": "int3_e8m0_t16s2o1",
        "mxfi4": "cb41fi_e2m2fnuz_e8m0_t32s4",
        "mxfp4m": "cb41f01_e2m2fnuz_e8m0_t32s4",
        "mxfp4e": "cb42fe0123_e3m2fnuz_e8m0_t32s8",
        "mxfp4f4": "cb42f1346_e2m3fnuz_e8m0_t32s8",
        "nf4": "cb40_float32_nf4_float32_t64",
    }
    for name, dt in PREVIEW_CATALOG.items():
        assert datatype(name) is dt and getattr(tcast, name) is dt and dt.name == name
        assert datatype(dt.code) == dt


# ------------------------------------------------------------- combinations
def _all_combinations() -> list[DataType]:
    it = tcast.combinations()
    items = list(itertools.islice(it, 100_000))
    assert next(it, None) is None, "combinations() did not stop within 100000 items"
    return items


def test_combinations_finite_deterministic_unique_valid():
    first = _all_combinations()
    second = _all_combinations()
    assert first == second
    assert [d.name for d in first] == [d.name for d in second]
    assert len(first) == len(set(first))
    assert len({d.code for d in first}) == len(first)
    for dt in first:
        assert isinstance(dt, DataType)
        assert DataType(dt.nspec, dt.sspec) == dt  # re-validates
        assert datatype(dt.code) == dt
    assert len(first) > 100


def test_combinations_default_space_touches_every_feature():
    items = _all_combinations()
    scaled = [d for d in items if d.sspec is not None]
    assert any(d.is_unscaled for d in items)
    # element kinds
    assert any(d.nspec.is_float for d in scaled)
    assert any(d.nspec.is_int for d in scaled)
    assert any(d.nspec.is_uint for d in scaled)
    # scale kinds
    assert any(d.sspec.scale.is_exponent for d in scaled)
    assert any(d.sspec.scale.is_float for d in scaled)
    # tiles: tensor, channel, 1-D tile, 2-D, non-default dim, sparsity
    assert any(d.sspec.is_tensor for d in scaled)
    assert any(len(d.sspec.tiles) == 1 and d.sspec.tiles[0].is_channel for d in scaled)
    assert any(len(d.sspec.tiles) == 1 and not d.sspec.tiles[0].is_channel for d in scaled)
    assert any(d.sspec.is_2d for d in scaled)
    assert any(t.dim is not None for d in scaled for t in d.sspec.tiles)
    assert any(d.sspec.is_sparse for d in scaled)
    # two-level scaling, float and int zero points
    assert any(d.is_multiscale for d in scaled)
    assert any(d.is_multiscale and d.nspec.is_int for d in scaled)
    assert any(d.zero is not None and d.zero.is_float for d in scaled)
    assert any(d.zero is not None and d.zero.is_int for d in scaled)
    assert any(d.zero is not None and d.zero.is_uint for d in scaled)
    # element codes of 16 to 31 bits under every scale kind: the space checks that engines keep
    # bit 31 of wide +-0 codes clear and do not flush float32 subnormals under float scales
    wide = [d for d in scaled if d.nspec.is_float and 16 <= d.nspec.bits < 32]
    assert {d.nspec.bits for d in wide} >= {16, 24, 31}
    assert any(d.sspec.scale.is_float for d in wide)
    assert any(d.sspec.scale.is_exponent for d in wide)
    # element styles
    styles = {d.nspec.style for d in items if d.nspec.is_float}
    assert styles == set(tcast.Style)


def test_combinations_custom_space_skips_invalid_pairs():
    space = tcast.CombinationSpace(
        floats=("e2m1f",),
        unscaled_only=(),
        ints=("int4",),
        uints=("uint4",),
        scales=("e8m0", "e4m3fn"),
        zeros=("int8",),
        tenscales=("float32",),
        tiles=("", "t32"),
    )
    items = list(tcast.combinations(space))
    codes = [d.code for d in items]
    assert "e2m1f_e4m3fn_float32_t32" in codes
    assert "e2m1f_e4m3fn_float32" not in codes  # two-level without tiles: skipped
    assert not any(c.startswith("e2m1f_e8m0_float32") for c in codes)  # exponent tile scale
    assert "uint4_e8m0_int8_t32" in codes
    assert len(codes) == len(set(codes))
