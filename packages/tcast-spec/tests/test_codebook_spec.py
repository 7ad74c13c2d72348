"""Codebook number specs (tcast.CodebookSpec): implicit patterns, given tables, the cb grammar.

Every expected table here is written out by hand from the pattern rules (magnitude codes of
the compute format worked out on paper), never computed by the code under test.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import struct
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tcast
from tcast import CodebookSpec, DataType, NumberSpec, SpecError, codebook, datatype, number
from tcast.cli import info_text

E2M1 = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def positives(spec: CodebookSpec) -> list[tuple[float, ...]]:
    """The positive entries v_1..v_P of each mapping of a symmetric codebook."""
    half = 1 << (spec.index_bits - 1)
    return [row[1:half] for row in spec.tables]


# ------------------------------------------------------------ the worked checks
def test_mxfp4f4_offsets_1_3_4_6_below_the_top_of_e2m3fnuz():
    # e2m3fnuz: K = 31; e2m1's 6.0 is magnitude code 28, so the pure pattern is offset 3
    cb = number("cb42f1346_e2m3fnuz")
    assert positives(cb) == [
        (0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0),  # offset 1: codes 6, 10, ..., 30
        E2M1,  # offset 3: exactly e2m1
        (0.375, 0.875, 1.375, 1.875, 2.75, 3.75, 5.5),  # offset 4: codes 3, 7, ..., 27
        (0.125, 0.625, 1.125, 1.625, 2.25, 3.25, 4.5),  # offset 6: codes 1, 5, ..., 25
    ]
    assert (cb.index_bits, cb.meta_bits, cb.mappings, cb.bits) == (4, 2, 4, 4)


def test_mxfi4_f_default_is_e2m1_and_i_default_is_one_to_seven():
    cb = number("cb41fi_e2m2fnuz")
    assert positives(cb) == [E2M1, (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)]
    assert cb.max_value == 7 and cb.emax == 2


def test_mxfp4m_offset_0_is_the_top_and_offset_1_is_e2m1():
    cb = number("cb41f01_e2m2fnuz")
    assert positives(cb) == [(0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0), E2M1]


def test_mxfp4e_exponent_offsets_halve_the_top_placed_e2m1():
    # e3m2fnuz (max 28): e2m1 placed at the top is e2m1 * 4; e0..e3 divide by 1, 2, 4, 8.
    # Up to that common power of two (absorbed by the block scale) these are e2m1 / 1, 2, 4, 8.
    cb = number("cb42fe0123_e3m2fnuz")
    assert positives(cb) == [
        (2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0),
        (1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0),
        E2M1,
        (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0),
    ]
    assert cb.max_value == 24 and cb.emax == 4


def test_progressive_patterns_p1_p2_on_e2m3fnuz():
    # p1 distances 0,1,3,6,10,15,21 -> codes 31,30,28,25,21,16,10
    # p2 distances 0,2,5,9,14,20,27 -> codes 31,29,26,22,17,11,4
    cb = number("cb41p1p2_e2m3fnuz")
    assert positives(cb) == [
        (1.25, 2.0, 3.25, 4.5, 6.0, 7.0, 7.5),
        (0.5, 1.375, 2.25, 3.5, 5.0, 6.5, 7.5),
    ]
    assert cb.max_value == pytest.approx(7.5, abs=0)


def test_static_pattern_and_bare_p_and_e2m0_and_int2():
    assert positives(number("cb30s2_int8")) == [(123.0, 125.0, 127.0)]  # K=127, s2: 0,2,4
    assert positives(number("cb30s_int8")) == [(125.0, 126.0, 127.0)]  # bare s = s1
    assert positives(number("cb30p_e2m1f")) == [(2.0, 4.0, 6.0)]  # codes 7,6,4 of e2m1f
    assert positives(number("cb30p13_e2m1f")) == [(0.5, 1.5, 2.0)]  # p1, offset 3: codes 4,3,1
    assert positives(number("cb30f_e2m1f")) == [(1.0, 2.0, 4.0)]  # e2m0 at the top: a = 0
    assert number("cb20i_int4").tables == ((0.0, 4.0, -0.0, -4.0),)  # {1} * 4 <= 7


def test_symmetric_layout_zero_signs_and_negatives():
    row = number("cb41fi_e2m2fnuz").tables[0]
    assert row == (0.0, *E2M1, 0.0, *[-v for v in E2M1])
    assert math.copysign(1.0, row[0]) == 1.0
    assert math.copysign(1.0, row[8]) == -1.0  # code 8: sign bit, k = 0 -> -0.0


@pytest.mark.parametrize(
    ("code", "tables"),
    [
        # e2m3 (IEEE, max 3.75): the int5 pattern k/8 placed at the top is k/4; e -> /1, /2
        ("cb51ie_e2m3", ([k / 4 for k in range(1, 16)], [k / 8 for k in range(1, 16)])),
        ("cb81ie_int9", ([2.0 * k for k in range(1, 128)], [1.0 * k for k in range(1, 128)])),
        ("cb51ie_int7", ([4.0 * k for k in range(1, 16)], [2.0 * k for k in range(1, 16)])),
        ("cb31ie_int5", ([4.0, 8.0, 12.0], [2.0, 4.0, 6.0])),
    ],
)
def test_upstream_msfp_spellings_parse_as_codebooks(code, tables):
    cb = number(code)
    assert isinstance(cb, CodebookSpec)
    assert positives(cb) == [tuple(t) for t in tables]


# ---------------------------------------------------------------- NF4
NF4_BITS = [
    0xBF800000, 0xBF3239B1, 0xBF066B30, 0xBECA32A0, 0xBE91A24D, 0xBE3D353F, 0xBDBA7871, 0x00000000,
    0x3DA2FAFF, 0x3E24CAE3, 0x3E7C04DD, 0x3EAD033A, 0x3EE1A4B8, 0x3F1007AB, 0x3F3913B3, 0x3F800000,
]  # fmt: skip


def test_nf4_is_bitsandbytes_table_as_float32_bits():
    cb = number("cb40_float32_nf4")
    # bitsandbytes get_4bit_type("nf4"), as written there
    assert cb.tables == (
        (
            -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
            -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
            0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
            0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
            0.7229568362236023, 1.0,
        ),
    )  # fmt: skip
    assert [struct.unpack("<I", struct.pack("<f", v))[0] for v in cb.tables[0]] == NF4_BITS
    assert (cb.code, cb.label, cb.desc, cb.symmetric) == ("cb40_float32_nf4", "nf4", "", False)
    assert cb.max_value == 1 and cb.emax == 0 and cb.precision == 24 and cb.meta_bits == 0


# ------------------------------------------------------------ spec properties
def test_codebook_duck_types_and_number_spec_is_codebook_false():
    cb = number("cb41fi_e2m2fnuz")
    assert cb.is_codebook and not number("e2m1f").is_codebook
    flags = (cb.is_float, cb.is_int, cb.is_uint, cb.is_exponent, cb.has_nan, cb.has_inf)
    assert flags == (False,) * 6
    assert cb.precision == 3  # e2m2fnuz: 2 mantissa bits + 1
    assert cb.compute == number("e2m2fnuz")
    assert hash(cb) == hash(number("cb41fi_e2m2fnuz")) and cb == number("cb41fi_e2m2fnuz")
    assert number(cb) is cb
    assert repr(cb) == "CodebookSpec('cb41fi_e2m2fnuz')"


def test_given_table_shape_gives_i_and_m_and_default_label_is_sha256():
    rows = [[-6.0, -2.0, -1.0, 0.0], [-4.0, -1.0, 0.0, 1.0]]
    cb = codebook(rows, "e2m1f")
    text = "-0x1.8000000000000p+2,-0x1.0000000000000p+1,-0x1.0000000000000p+0,0x0.0p+0|"
    text += "-0x1.0000000000000p+2,-0x1.0000000000000p+0,0x0.0p+0,0x1.0000000000000p+0"
    label = "t" + hashlib.sha256(text.encode()).hexdigest()[:8]
    assert (cb.index_bits, cb.meta_bits, cb.label) == (2, 1, label)
    assert cb.code == f"cb21_e2m1f_{label}"
    assert cb.max_value == 6
    one = codebook([-1, 0, 1, 2], number("int3"), label="mine")
    assert one.tables == ((-1.0, 0.0, 1.0, 2.0),) and one.code == "cb20_int3_mine"


def test_given_symmetric_table_keeps_negative_zero():
    cb = codebook([0.0, 1.0, -0.0, -1.0], "int3", label="sym", symmetric=True)
    assert math.copysign(1.0, cb.tables[0][2]) == -1.0 and cb.symmetric


@pytest.mark.parametrize(
    "table",
    [
        [-0.0, 1.0, 0.0, -1.0],  # the zeros swapped: a positive input would decode to -0.0
        [0.0, 1.0, 0.0, -1.0],  # the sign code's zero is +0.0
        [-0.0, 1.0, -0.0, -1.0],
    ],
)
def test_a_symmetric_table_has_plus_zero_at_code_0_and_minus_zero_at_the_sign_code(table):
    with pytest.raises(SpecError, match=r"symmetric layout is 0\.0, v_1\.\.v_P, -0\.0"):
        codebook(table, "float32", label="sym", symmetric=True)


# ------------------------------------------------------------ datatype codes
@pytest.mark.parametrize(
    ("code", "ncode", "scode"),
    [
        ("cb41fi_e2m2fnuz_e8m0_t32s4", "cb41fi_e2m2fnuz", "e8m0_t32s4"),
        ("cb40_float32_nf4_float32_t64", "cb40_float32_nf4", "float32_t64"),
        ("cb41fi_e2m2fnuz_mxfi4_e8m0_t32s4", "cb41fi_e2m2fnuz_mxfi4", "e8m0_t32s4"),
        ("cb41fi_e2m2fnuz_float32", "cb41fi_e2m2fnuz", "float32"),
        ("cb42fe0123_e3m2fnuz_e4m3fn_float32_t32s8", "cb42fe0123_e3m2fnuz", "e4m3fn_float32_t32s8"),
    ],
)
def test_datatype_code_takes_two_or_three_segments_for_a_codebook(code, ncode, scode):
    dt = datatype(code)
    assert dt.nspec == number(ncode) and dt.sspec == tcast.scale(scode)
    assert dt.code == code and datatype(dt.code) == dt
    assert dt.nspec.is_codebook


def test_codebook_meta_bits():
    assert datatype("cb42f1346_e2m3fnuz_e8m0_t32s8").meta_bits == 2
    assert datatype("cb41fi_e2m2fnuz_e8m0_t32").meta_bits == 1  # one mapping per block
    nf4 = datatype("cb40_float32_nf4_float32_t64")
    assert nf4.meta_bits == 0 and not nf4.has_meta


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("cb91i_int8", "index bits must be an int in 2..8, got 9"),
        ("cb45i_int8", "metadata bits must be an int in 0..4, got 5"),
        ("cb60f_float32", "'f' patterns are e2m0, e2m1 or e2m2 (index bits 3..5)"),
        ("cb40f_int3", "clause 'f': its base values are not all values of int3 at any one"),
        ("cb40f9_e2m3fnuz", "clause 'f9', mapping 0: it reaches below the smallest nonzero"),
        ("cb41f1f9_e2m3fnuz", "clause 'f9', mapping 1: it reaches below"),
        ("cb41ie_int4", "clause 'ie', mapping 1: its values divided by 2**1 are not all values"),
        ("cb41fe4_e2m3fnuz", "exponent offsets are digits 0..3, got '4'"),
        ("cb42f13_e2m3fnuz", "cb42f13_e2m3fnuz describes 2 mappings, metadata bits 2 need 4"),
        ("cb40x_int8", "'x' is not a clause"),
        ("cb40p0_int8", "clause 'p0': the interval is a digit 1..9, got 0"),
        ("cb40i_uint8", "compute format must be a float or int NumberSpec"),
        ("cb40i_e8m0", "compute format must be a float or int NumberSpec"),
        ("cb40i_e9m9", "the compute format:"),
        ("cb40_float32", "needs a description or the label of given tables"),
        (
            "cb40_float32_foo",
            "the tables of codebook 'foo' are unknown: build it with "
            "tcast.codebook(tables, compute)",
        ),
        ("cb41_float32_nf4", "codebook 'nf4' is cb40_float32_nf4, not cb41_float32_nf4"),
        ("cb40i_int8_e4m3fn", "codebook label 'e4m3fn' is a number code"),
        ("cb40i_int8_lab_x", "is not a codebook code"),
        ("cb4", "is not a codebook code"),
        ("cb41fi_e2m2fnuz_", "the label after the compute format is empty"),
        ("cbX0i_int8", "is not a codebook code"),
    ],
)
def test_bad_codebook_codes_raise_spec_error_naming_the_part(code, message):
    with pytest.raises(SpecError) as info:
        number(code)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("tables", "compute", "kwargs", "message"),
    [
        ([0.0, 1.0, 2.0], "int4", {}, "the number of entries 3 is not a power of two"),
        ([[0.0, 1.0]] * 3, "int4", {}, "the number of mappings 3 is not a power of two"),
        ([0.0, 0.3, 1.0, 2.0], "e2m1f", {}, "index 1: 0.3 is not a value of e2m1f"),
        ([0.0, math.inf, 1.0, 2.0], "float32", {}, "index 1: inf is not a finite float"),
        ([0.0, math.nan, 1.0, 2.0], "float32", {}, "index 1: nan is not a finite float"),
        ([1.0, 0.0, 2.0, 3.0], "int4", {}, "given tables are strictly ascending by value"),
        ([-0.0, 0.0, 2.0, 3.0], "int4", {}, "given tables are strictly ascending by value"),
        ([0.0, 1.0, -0.0, 1.0], "int4", {"symmetric": True}, "the symmetric layout is 0"),
        ([0.0, 2.0, 1.0, 3.0] * 2, "int4", {"symmetric": True}, "the symmetric layout is 0"),
        ([0.0, 0.0, -0.0, -0.0], "int4", {"symmetric": True}, "must increase"),
        ([True, 1.0], "int4", {}, "codebook entries are numbers, got True"),
        ([0.0, 1.0, 2.0, 3.0], "int4", {"label": "a_b"}, "letters and digits, a letter first"),
        ([0.0, 1.0, 2.0, 3.0], "int4", {"label": "int8"}, "label 'int8' is a number code"),
        ([0.0, 1.0, 2.0, 3.0], "uint4", {}, "compute format must be a float or int NumberSpec"),
        ([0.0, 0.0, 1.0, 2.0], "int4", {}, "strictly ascending"),
        ([[0.0] * 512], "float32", {}, "index bits must be an int in 2..8, got 9"),
        ("0123", "int4", {}, "codebook tables must be a sequence"),
    ],
)
def test_bad_given_tables_raise_spec_error(tables, compute, kwargs, message):
    with pytest.raises(SpecError) as info:
        codebook(tables, compute, **kwargs)
    assert message in str(info.value)


def test_given_table_label_unknown_to_the_parser_names_the_fix():
    cb = codebook([-1.0, 0.0, 1.0, 2.0], "int4", label="mine")
    with pytest.raises(SpecError, match=r"build it with tcast\.codebook"):
        number(cb.code)


def test_constructor_checks_tables_against_the_description():
    good = number("cb41fi_e2m2fnuz")
    swapped = (good.tables[1], good.tables[0])
    with pytest.raises(SpecError, match="differ from those description 'fi' gives"):
        CodebookSpec(4, 1, good.compute, swapped, "fi", "", True)
    with pytest.raises(SpecError, match="needs a label"):
        CodebookSpec(2, 0, number("int4"), ((-1.0, 0.0, 1.0, 2.0),))


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("cb41fi_e2m2fnuz", "needs a scale spec"),
        ("cb41fi_e2m2fnuz_e8m0_t32n2m4", "does not mix with sparsity"),
        ("cb41fi_e2m2fnuz_e8m0_t32s4o1", "exponent offsets o<B> need float or int data"),
        ("cb41fi_e2m2fnuz_e8m0_float32_t32", "two-level scaling"),
        ("cb41fi_e2m2fnuz_e4m3fn_float32", "needs tiles under the tensor scale"),
        ("cb41fi_e2m2fnuz__e8m0_t32s4", "the label after the compute format is empty"),
    ],
)
def test_codebook_datatype_refusals(code, message):
    with pytest.raises(SpecError) as info:
        datatype(code)
    assert message in str(info.value)


# ------------------------------------------------------------- round trips
IMPLICIT = [
    "cb41fi_e2m2fnuz",
    "cb41f01_e2m2fnuz",
    "cb42fe0123_e3m2fnuz",
    "cb42f1346_e2m3fnuz",
    "cb41p1p2_e2m3fnuz",
    "cb51ie_e2m3",
    "cb31ie_int5",
    "cb30s2_int8",
    "cb20i_int4",
    "cb40_float32_nf4",
]


@settings(derandomize=True, max_examples=60, deadline=None)
@given(
    st.sampled_from(IMPLICIT),
    st.sampled_from(["", "_lab", "_X9"]),
    st.sampled_from(["e8m0_t32", "e8m0_t32s4", "e4m3fn_float32_t16s2_t16", "float32", "e5m0_t0s8"]),
)
def test_codebook_codes_round_trip(ncode, label, scode):
    if "nf4" in ncode and label:
        return  # a given table has exactly one label
    spec = number(ncode + label)
    assert isinstance(spec, CodebookSpec) and not isinstance(spec, NumberSpec)
    assert spec.code == ncode + label and number(spec.code) == spec
    dt = datatype(f"{ncode}{label}_{scode}")
    assert isinstance(dt, DataType)
    assert dt.code == f"{ncode}{label}_{scode}" and datatype(dt.code) == dt


# ------------------------------------------------------------------ the docs
NAMES_MD = Path(__file__).resolve().parents[3] / "docs" / "names.md"


def test_names_md_codebook_examples_parse_as_written():
    if not NAMES_MD.exists():
        pytest.skip("docs/ is not beside this checkout")
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in NAMES_MD.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `cb")
    ]
    assert len(rows) >= 7
    for code, m, entries, _meaning in rows:
        cb = number(code.strip("`"))
        assert str(cb.meta_bits) == m, code
        written = [tuple(float(v) for v in part.split()) for part in entries.split("/")]
        assert positives(cb) == written, code


def test_tcast_info_prints_each_mapping_index_compute_code_and_value():
    text = info_text("cb31ie_int5")
    lines = text.splitlines()
    start = lines.index("  mapping 1: index, int5 code, value")
    assert [line.split() for line in lines[start + 1 : start + 9]] == [
        ["0", "0x00", "0"],
        ["1", "0x02", "2"],
        ["2", "0x04", "4"],
        ["3", "0x06", "6"],
        ["4", "0x00", "-0"],
        ["5", "0x1E", "-2"],
        ["6", "0x1C", "-4"],
        ["7", "0x1A", "-6"],
    ]
    nf4 = info_text("nf4")
    assert "      1  0xBF3239B1  -0.6961928009986877" in nf4
    assert "bits per value:      4.5 = (32 + 0 x 1 + 64 x 4) / 64" in nf4


def test_named_tables_are_read_only_and_entry_code_checks_its_range():
    from tcast.codebook import GIVEN_TABLES

    for table in (tcast.PREVIEW_CATALOG, GIVEN_TABLES):
        with pytest.raises(TypeError):
            table["nf4"] = None  # type: ignore[index]
    cb = number("cb31ie_int5")
    with pytest.raises(SpecError, match=r"index 8 is not in 0\.\.7"):
        cb.entry_code(0, 8)
    with pytest.raises(SpecError, match=r"mapping 2 is not in 0\.\.1"):
        cb.entry_code(2, 0)
    # -0.0 keeps the sign bit only where the compute format has a negative zero
    assert number("cb30f_e2m1f").entry_code(0, 4) == 0x8
    assert number("cb30f_e2m1fnuz").entry_code(0, 4) == 0x0


# ------------------------------------------------------------ hostile input
def test_a_description_counts_its_mappings_before_building_any_table(monkeypatch):
    # A code of thousands of offset digits must fail at once on its count, not build a table
    # per digit first (that took seconds per thousand digits).
    def no_tables(*args, **kwargs):
        raise AssertionError("a table was built for a description of the wrong count")

    module = importlib.import_module("tcast.codebook")  # tcast.codebook is the function
    monkeypatch.setattr(module, "_clause_mappings", no_tables)
    for code in ("cb81i" + "0" * 3000 + "e0123_float32", "cb41" + "f" * 3000 + "_e2m3fnuz"):
        with pytest.raises(SpecError, match=r"describes \d+ mappings, metadata bits 1 need 2"):
            number(code)


@pytest.mark.parametrize(
    "code",
    [
        "cb40_float32_" + "9" * 300,
        "cb40_float32_" + "a" * 300,
        "cb41p1" + "9" * 300 + "_e2m3fnuz",
        "cb41f" + "9" * 300 + "_e2m3fnuz",
        "cb41fi_e2m2fnuz_" + "x" * 300,
        "cb41fi_e2m2fnuz_" + "x" * 300 + "_e8m0_t32s4",
    ],
)
def test_messages_about_long_codes_quote_them_cut(code):
    for parse in (number, datatype):
        with pytest.raises(SpecError) as info:
            parse(code)
        assert len(str(info.value)) < 400, str(info.value)[:100]


def test_a_label_has_at_most_32_characters():
    table = [0.0, 1.0, 2.0, 3.0]
    assert codebook(table, "int4", label="a" * 32).label == "a" * 32
    with pytest.raises(SpecError, match="at most 32 characters"):
        codebook(table, "int4", label="a" * 33)
    with pytest.raises(SpecError, match="at most 32 characters"):
        number("cb41fi_e2m2fnuz_" + "x" * 33)


def test_given_tables_take_any_real_number_type_whose_value_is_a_float():
    np = pytest.importorskip("numpy")
    want = (-1.0, -0.5, 0.0, 1.0)
    for tables in (
        np.array(want, dtype=np.float32),
        np.array([want], dtype=np.float16),
        [np.float32(-1), np.int64(0), Fraction(1, 2), 1],
    ):
        got = codebook(tables, "float32", label="x")
        assert got.tables[0][::3] == (-1.0, 1.0) and all(type(v) is float for v in got.tables[0])
    assert codebook(np.array([-1, 0, 1, 2], dtype=np.int8), "int4").tables == (
        (-1.0, 0.0, 1.0, 2.0),
    )
    for bad, message in (
        ([np.bool_(True), 1.0, 2.0, 3.0], "codebook entries are numbers"),
        ([0, 1, 2, 10**400], "is not a float"),  # float() overflows
        ([0, 1, 2, 2**60 + 1], "is not a float"),  # float() would round it to 2**60
        ([0, 1, 2, Fraction(1, 3)], "is not a float"),
    ):
        with pytest.raises(SpecError, match=message):
            codebook(bad, "float32")


def test_tables_differing_only_in_the_sign_of_a_zero_are_different_codebooks():
    plus = codebook([-1.0, 0.0, 0.5, 1.0], "float32", label="z")
    minus = codebook([-1.0, -0.0, 0.5, 1.0], "float32", label="z")
    assert minus.entry_code(0, 1) != plus.entry_code(0, 1)
    assert plus != minus and len({plus, minus}) == 2
    assert plus == codebook([-1.0, 0.0, 0.5, 1.0], "float32", label="z")
    assert hash(plus) == hash(codebook([-1.0, 0.0, 0.5, 1.0], "float32", label="z"))


def test_every_entry_is_a_float32_value():
    # int32 has values float32 cannot hold; tables of them are refused, wherever they come from
    for code in ("cb40s_int32", "cb40i0_int32", "cb80s_int32"):
        with pytest.raises(SpecError, match="is not a float32 value"):
            number(code)
    with pytest.raises(SpecError, match=r"33554433\.0 is not a float32 value"):
        codebook([0.0, 1.0, 2.0, 2.0**25 + 1], "int32")
    # multiples of 2**28 are float32 values: the i pattern at the top of int32 is 2**28 * k
    assert positives(number("cb40i_int32")) == [tuple(float(k << 28) for k in range(1, 8))]
    assert number("cb40s_int25").max_value == 2**24 - 1


def test_specs_pickle_and_copy_to_equal_specs():
    import copy
    import pickle

    specs = [number(code) for code in IMPLICIT]
    specs.append(codebook([-1.0, -0.0, 0.5, 1.0], "float32", label="z"))
    specs.extend(datatype(name) for name in ("mx9", "mxfi4", "mxfp4f4", "nf4"))
    for spec in specs:
        for back in (pickle.loads(pickle.dumps(spec)), copy.deepcopy(spec)):
            assert back == spec and hash(back) == hash(spec) and back.code == spec.code
