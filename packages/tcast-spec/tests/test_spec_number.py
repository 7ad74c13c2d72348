"""The number grammar (tcast.number) and the meaning of every named number format.

* Every ml_dtypes float name (and its torch spelling) decodes, code by code, to
  exactly what ml_dtypes decodes; finfo fields agree with ml_dtypes / numpy.
* IEEE P3109 binary8pP and the OCP formats decode exactly as gfloat decodes them.
* The eXmY[bZ][suffix] grammar is enumerated: a code is rejected only when the
  format it names has a value outside float32 (or is degenerate, see below).
* Hand-derived attribute tables for a few formats, each value derived in a comment.
"""

from __future__ import annotations

import math
from fractions import Fraction

import gfloat
import ml_dtypes
import numpy as np
import pytest
from gfloat.formats import (
    format_info_ocp_e2m1,
    format_info_ocp_e2m3,
    format_info_ocp_e3m2,
    format_info_ocp_e4m3,
    format_info_ocp_e5m2,
    format_info_ocp_e8m0,
    format_info_p3109,
)

from tcast import Kind, NumberSpec, SpecError, Style, number
from tcast.exact import decode

# ml_dtypes float name -> storage bits.
ML_FLOATS = {
    "float8_e4m3fn": 8,
    "float8_e5m2": 8,
    "float8_e4m3fnuz": 8,
    "float8_e5m2fnuz": 8,
    "float8_e4m3b11fnuz": 8,
    "float8_e3m4": 8,
    "float8_e4m3": 8,
    "float8_e8m0fnu": 8,
    "float6_e2m3fn": 6,
    "float6_e3m2fn": 6,
    "float4_e2m1fn": 4,
}

# What each ml_dtypes name means in the tcast grammar (SEMANTICS: ml_dtypes names
# have the ml_dtypes meaning).
ML_MEANING = {
    "float8_e4m3fn": "e4m3fn",
    "float8_e5m2": "e5m2",
    "float8_e4m3fnuz": "e4m3b8fnuz",
    "float8_e5m2fnuz": "e5m2b16fnuz",
    "float8_e4m3b11fnuz": "e4m3b11fnuz",
    "float8_e3m4": "e3m4",
    "float8_e4m3": "e4m3",
    "float8_e8m0fnu": "e8m0",
    "float6_e2m3fn": "e2m3f",
    "float6_e3m2fn": "e3m2f",
    "float4_e2m1fn": "e2m1f",
}

SUFFIX_STYLE = {
    "": Style.IEEE,
    "fn": Style.FN,
    "fnuz": Style.FNUZ,
    "uz": Style.UZ,
    "f": Style.FINITE,
}


# ---------------------------------------------------------------- helpers
def ml_table(name: str) -> np.ndarray:
    """The float32 value of every code of an ml_dtypes type, indexed by code.

    ml_dtypes stores every element in one byte (sub-byte types too: float4/float6
    keep the code in the low bits), so ``np.arange(2**bits, dtype=uint8).view(T)``
    has element i == code i. test_ml_table_is_the_code_table proves this
    independently (anchors, bijection and astype round trip), so the table can be
    neither shifted nor masked without a test failing.
    """
    dt = getattr(ml_dtypes, name)
    bits = ML_FLOATS[name]
    return np.arange(1 << bits, dtype=np.uint8).view(dt).astype(np.float32)


def tcast_values(spec: NumberSpec, codes) -> np.ndarray:
    """tcast.exact.decode of each code, as float64 (every value is exact in float64)."""
    return np.array([decode(int(c), spec) for c in codes], dtype=np.float64)


def assert_same_f32(got: np.ndarray, want: np.ndarray, nan_sign: bool, what: str) -> None:
    """got (float64 from tcast) equals want (float32 reference) bit for bit.

    NaN compares as "both NaN" (payloads may differ); with ``nan_sign`` the NaN
    signs must agree too. Non-NaN values must be exact float32 values and have the
    same float32 bits (so -0 and +0 are distinguished).
    """
    want = np.asarray(want, dtype=np.float32)
    assert got.shape == want.shape
    wnan = np.isnan(want)
    gnan = np.isnan(got)
    bad = np.flatnonzero(wnan != gnan)
    assert bad.size == 0, f"{what}: NaN mismatch at codes {bad[:8].tolist()}"
    if nan_sign:
        bad = np.flatnonzero(wnan & (np.signbit(want) != np.signbit(got)))
        assert bad.size == 0, f"{what}: NaN sign mismatch at codes {bad[:8].tolist()}"
    fin = ~wnan
    g = got[fin]
    with np.errstate(over="ignore"):
        g32 = g.astype(np.float32)
    assert np.array_equal(g32.astype(np.float64), g), f"{what}: tcast value not a float32"
    gb = g32.view(np.uint32)
    wb = want[fin].view(np.uint32)
    bad = np.flatnonzero(gb != wb)
    if bad.size:
        codes = np.flatnonzero(fin)[bad]
        c = int(codes[0])
        pytest.fail(
            f"{what}: {bad.size} codes differ, first code {c:#x}: "
            f"tcast {got[c]!r} vs reference {float(want[c])!r}"
        )


def fits_f32(x: Fraction) -> bool:
    """True when x is exactly a float32 value, from the float32 definition alone.

    float32 values are 0 and +-odd * 2**s with odd < 2**24, s >= -149, and
    magnitude <= (2**24 - 1) * 2**104.
    """
    x = abs(x)
    if x == 0:
        return True
    k = x * Fraction(2) ** 149
    if k.denominator != 1:
        return False
    odd = k.numerator
    while odd % 2 == 0:
        odd //= 2
    return odd < (1 << 24) and x <= (2**24 - 1) * Fraction(2) ** 104


def field_value(e: int, m: int, bias: int, mag: int) -> Fraction:
    """Value of a magnitude code of an eXmY float, straight from the field definition."""
    field, frac = mag >> m, mag & ((1 << m) - 1)
    if field == 0:
        return frac * Fraction(2) ** (1 - bias - m)
    return ((1 << m) + frac) * Fraction(2) ** (field - bias - m)


def largest_finite_mag(e: int, m: int, style: Style) -> int:
    """Magnitude code of the largest finite value, from the style definitions."""
    allones = (1 << (e + m)) - 1
    if style is Style.IEEE:
        return (((1 << e) - 1) << m) - 1  # top exponent field is Inf/NaN
    if style in (Style.FN, Style.UZ):
        return allones - 1  # all-ones magnitude is NaN (fn) or Inf (uz)
    return allones  # fnuz and f: every magnitude is a number


def float_is_valid(e: int, m: int, bias: int, style: Style) -> bool:
    """The grammar rule for signed floats, computed from first principles.

    Valid iff: 1 <= e <= 8, 0 <= m <= 23; not IEEE with m == 0 (no NaN code);
    the format has a nonzero finite value (e1m0fn/e1m0uz have only +-0 and NaN/Inf);
    and every finite value is a float32 value. Every value is a multiple of the
    smallest positive value and has at most m + 1 <= 24 significant bits, so all of
    them fit iff the smallest positive and the largest finite value fit.
    """
    if not (1 <= e <= 8 and 0 <= m <= 23) or (style is Style.IEEE and m == 0):
        return False
    top = largest_finite_mag(e, m, style)
    if top == 0:
        return False
    return fits_f32(field_value(e, m, bias, 1)) and fits_f32(field_value(e, m, bias, top))


def exponent_is_valid(e: int, bias: int) -> bool:
    """Exponent types eXm0: X in 4..8; SEMANTICS §1.2: every power 2**(c - bias), c in
    0 .. 2**X - 2, and its reciprocal are float32 values, i.e. powers in -127..127."""
    if not 4 <= e <= 8:
        return False
    lo, hi = -bias, (1 << e) - 2 - bias
    return all(fits_f32(Fraction(2) ** p) for p in (lo, hi, -lo, -hi))


def check_round_trip(code: str, spec: NumberSpec) -> None:
    assert number(spec.code) == spec, code
    assert number(number(code).code) == number(code), code
    assert number(spec.code).code == spec.code, code  # the canonical code is a fixed point
    assert hash(number(spec.code)) == hash(spec)


# ------------------------------------------------- ml_dtypes and torch names
def test_ml_table_is_the_code_table():
    # Anchors from the format definitions (OCP MX spec tables):
    # FP4 E2M1: code 0b0111 = 1.5 * 2**2 = 6, code 0b1000 = -0.
    t = ml_table("float4_e2m1fn")
    assert t[7] == 6.0 and t[8] == 0.0 and np.signbit(t[8]) and t[1] == 0.5
    # FP6 E2M3: 0b011111 = 1.875 * 2**2 = 7.5; FP6 E3M2: 0b011111 = 1.75 * 2**4 = 28.
    assert ml_table("float6_e2m3fn")[0x1F] == 7.5
    assert ml_table("float6_e3m2fn")[0x1F] == 28.0
    assert ml_table("float6_e3m2fn")[0x20] == 0.0 and np.signbit(ml_table("float6_e3m2fn")[0x20])
    # E8M0: code c = 2**(c - 127), 255 = NaN.
    e8 = ml_table("float8_e8m0fnu")
    assert e8[127] == 1.0 and e8[254] == 2.0**127 and np.isnan(e8[255])
    for name, bits in ML_FLOATS.items():
        t = ml_table(name)
        assert t.shape == (1 << bits,)
        dt = getattr(ml_dtypes, name)
        keep = np.flatnonzero(~np.isnan(t))
        # Bijection: distinct non-NaN codes have distinct float32 bit patterns ...
        assert len(set(t[keep].view(np.uint32).tolist())) == keep.size, name
        # ... and astype back to the type stores exactly the code in the byte.
        back = t[keep].astype(dt).view(np.uint8)
        assert np.array_equal(back, keep.astype(np.uint8)), name


@pytest.mark.parametrize("name", sorted(ML_FLOATS))
def test_ml_dtypes_name_decodes_every_code_as_ml_dtypes(name):
    spec = number(name)
    assert spec.bits == ML_FLOATS[name]
    codes = range(1 << spec.bits)
    signed_nan = spec.is_float and spec.style in (Style.IEEE, Style.FN)
    assert_same_f32(tcast_values(spec, codes), ml_table(name), signed_nan, name)


@pytest.mark.parametrize("name", sorted(ML_FLOATS))
def test_ml_dtypes_name_means_documented_code(name):
    assert number(name) == number(ML_MEANING[name])
    assert number("torch." + name) == number(name)


@pytest.mark.parametrize(
    ("name", "ref"), [("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16)]
)
def test_16bit_floats_decode_every_code_as_numpy(name, ref):
    codes = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    want = codes.view(ref).astype(np.float32)
    assert_same_f32(tcast_values(number(name), codes), want, True, name)
    for alias in {"float16": ("fp16", "half"), "bfloat16": ("bf16",)}[name]:
        assert number(alias) == number(name)


def test_float32_decodes_sampled_codes_as_numpy():
    rng = np.random.default_rng(1234)
    special = [
        0,
        1,
        2,
        0x007FFFFF,
        0x00800000,
        0x3F800000,
        0x7F7FFFFF,
        0x7F800000,
        0x7F800001,
        0x7FC00000,
        0x7FFFFFFF,
    ]
    codes = np.array(
        special + [c | 0x80000000 for c in special] + rng.integers(0, 2**32, 20000).tolist(),
        dtype=np.uint64,
    ).astype(np.uint32)
    want = codes.view(np.float32)
    assert_same_f32(tcast_values(number("float32"), codes), want, True, "float32")
    assert number("float32") == number("fp32") == number("float") == number("e8m23")


TORCH_NAMES = [
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
]


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_torch_dtype_string_parses_to_ml_dtypes_meaning_and_decodes_as_torch(name):
    torch = pytest.importorskip("torch")
    tdt = getattr(torch, name)
    spec = number(str(tdt))  # "torch.float8_e4m3fn"
    assert str(tdt).startswith("torch.")
    assert spec == number(name) == number(ML_MEANING[name])
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    want = codes.view(tdt).to(torch.float32).numpy()
    signed_nan = spec.is_float and spec.style in (Style.IEEE, Style.FN)
    assert_same_f32(tcast_values(spec, range(256)), want, signed_nan, str(tdt))


def test_torch_prefix_on_other_names():
    torch = pytest.importorskip("torch")
    for tdt in (torch.float32, torch.float16, torch.bfloat16, torch.half, torch.float):
        assert number(str(tdt)) == number(str(tdt).removeprefix("torch."))
    # torch's packed FP4 pair names the element format.
    assert number(str(torch.float4_e2m1fn_x2)) == number("e2m1f")
    assert number("torch.e4m3fn") == number("e4m3fn")
    for bad in ("torch.", "torch.torch.e4m3fn", "torch", "torch_e4m3fn", "Torch.e4m3fn"):
        with pytest.raises(SpecError):
            number(bad)


# ------------------------------------------------------------------ finfo
@pytest.mark.parametrize("name", [*sorted(ML_FLOATS), "bfloat16"])
def test_finfo_fields_match_ml_dtypes_finfo(name):
    spec = number(name)
    fi = ml_dtypes.finfo(getattr(ml_dtypes, name))
    assert spec.bits == fi.bits
    assert spec.maxfloat == float(fi.max)
    assert spec.smallest_normal == float(fi.tiny) == float(fi.smallest_normal)
    assert spec.smallest_subnormal == float(fi.smallest_subnormal)
    assert spec.eps == float(fi.eps)
    assert spec.emax == fi.maxexp - 1
    assert spec.emin == fi.minexp
    assert spec.mbits == fi.nmant
    assert spec.ebits == fi.nexp


@pytest.mark.parametrize(("name", "ref"), [("float16", np.float16), ("float32", np.float32)])
def test_finfo_fields_match_numpy_finfo(name, ref):
    spec = number(name)
    fi = np.finfo(ref)
    assert spec.bits == fi.bits
    assert spec.maxfloat == float(fi.max)
    assert spec.smallest_normal == float(fi.tiny)
    assert spec.smallest_subnormal == float(fi.smallest_subnormal)
    assert spec.eps == float(fi.eps)
    assert (spec.emax, spec.emin) == (fi.maxexp - 1, fi.minexp)
    assert (spec.mbits, spec.ebits) == (fi.nmant, fi.nexp)
    assert spec.has_inf and spec.has_nan and spec.has_negzero


# ------------------------------------------------------------------ gfloat
def gfloat_check(spec: NumberSpec, fi, signed_nan: bool) -> None:
    assert spec.bits == fi.k
    for code in range(1 << fi.k):
        ref = gfloat.decode_float(fi, code)
        got = decode(code, spec)
        if math.isnan(ref.fval):
            assert math.isnan(got), (spec.code, code)
            if signed_nan:
                assert (math.copysign(1.0, got) < 0) == bool(ref.signbit), (spec.code, code)
        else:
            assert got == ref.fval, (spec.code, code, got, ref.fval)
            assert math.copysign(1.0, got) == math.copysign(1.0, ref.fval), (spec.code, code)


@pytest.mark.parametrize("p", range(1, 8))
def test_p3109_binary8p_decodes_as_gfloat(p):
    spec = number(f"binary8p{p}")
    # binary8pP = e(8-P)m(P-1), bias 2**(7-P), style uz.
    assert spec == NumberSpec(Kind.FLOAT, 8 - p, p - 1, 2 ** (7 - p), Style.UZ)
    assert spec.code == f"binary8p{p}"
    assert number(f"e{8 - p}m{p - 1}b{2 ** (7 - p)}uz") == spec
    gfloat_check(spec, format_info_p3109(8, p), signed_nan=False)


@pytest.mark.parametrize(
    ("code", "fi"),
    [
        ("e2m1f", format_info_ocp_e2m1),
        ("e2m3f", format_info_ocp_e2m3),
        ("e3m2f", format_info_ocp_e3m2),
        ("e4m3fn", format_info_ocp_e4m3),
        ("e5m2", format_info_ocp_e5m2),
    ],
)
def test_ocp_formats_decode_as_gfloat(code, fi):
    spec = number(code)
    gfloat_check(spec, fi, signed_nan=spec.style in (Style.IEEE, Style.FN))


def test_ocp_e8m0_decodes_as_gfloat():
    spec = number("e8m0")
    assert spec.is_exponent
    for code in range(256):
        ref = gfloat.decode_float(format_info_ocp_e8m0, code).fval
        got = decode(code, spec)
        assert (math.isnan(got) and math.isnan(ref)) or got == ref, code


# ------------------------------------------------------------- the grammar
@pytest.mark.parametrize("suffix", ["", "fn", "fnuz", "uz", "f"])
def test_grammar_every_eXmY_with_default_bias_parses_iff_values_fit_float32(suffix):
    style = SUFFIX_STYLE[suffix]
    for e in range(1, 9):
        bias = (1 << (e - 1)) - 1
        for m in range(24):
            code = f"e{e}m{m}{suffix}"
            if m == 0 and suffix == "":
                expect, kind = exponent_is_valid(e, bias), Kind.EXPONENT
            else:
                expect, kind = float_is_valid(e, m, bias, style), Kind.FLOAT
            if not expect:
                with pytest.raises(SpecError):
                    number(code)
                continue
            spec = number(code)
            assert (spec.kind, spec.ebits, spec.mbits, spec.bias) == (kind, e, m, bias), code
            assert spec.style is (style if kind is Kind.FLOAT else Style.IEEE)
            check_round_trip(code, spec)
            # the explicit default bias is the same spec
            assert number(f"e{e}m{m}b{bias}{suffix}") == spec


def _interesting_biases(e: int, m: int) -> list[int]:
    d = (1 << (e - 1)) - 1
    cands = {
        0,
        1,
        d - 1,
        d,
        d + 1,
        2 * d,
        126,
        127,
        128,
        149 - m,
        150 - m,
        151 - m,
        (1 << e) + 125,
        (1 << e) + 126,
        (1 << e) + 127,
        (1 << e) + 128,
        255,
        300,
    }
    return sorted(b for b in cands if b >= 0)


def test_grammar_explicit_bias_float_rejected_only_outside_float32():
    wrong = []
    for suffix, style, e in ((x, SUFFIX_STYLE[x], e) for x in SUFFIX_STYLE for e in range(1, 9)):
        for m in range(1 if suffix == "" else 0, 24):
            for b in _interesting_biases(e, m):
                code = f"e{e}m{m}b{b}{suffix}"
                expect = float_is_valid(e, m, b, style)
                try:
                    spec = number(code)
                except SpecError:
                    if expect:
                        wrong.append(f"{code} rejected (all values are float32)")
                    continue
                if not expect:
                    wrong.append(f"{code} accepted (a value is outside float32)")
                    continue
                assert (spec.ebits, spec.mbits, spec.bias, spec.style) == (e, m, b, style)
                check_round_trip(code, spec)
    assert not wrong, f"{len(wrong)} codes: {wrong[:6]}"


def test_grammar_explicit_bias_exponent_rejected_unless_power_and_reciprocal_are_float32():
    wrong = []
    for e in range(4, 9):
        for b in sorted({0, 1, 7, 15, 31, 63, 126, 127, 128, 129, 135, 140, 149, 150, 200}):
            code = f"e{e}m0b{b}"
            expect = exponent_is_valid(e, b)
            try:
                spec = number(code)
            except SpecError:
                if expect:
                    wrong.append(f"{code} rejected (2**-{b}..2**{(1 << e) - 2 - b} in range)")
                continue
            if not expect:
                wrong.append(f"{code} accepted")
                continue
            assert spec.is_exponent and (spec.ebits, spec.bias) == (e, b)
            check_round_trip(code, spec)
    assert not wrong, f"{len(wrong)} codes: {wrong[:6]}"


def test_grammar_exponent_types_eXm0_for_X_4_to_8():
    for e in range(4, 9):
        spec = number(f"e{e}m0")
        assert spec.is_exponent and not spec.is_float
        assert (spec.ebits, spec.mbits, spec.bias, spec.bits) == (e, 0, (1 << (e - 1)) - 1, e)
        assert spec.nan_code == (1 << e) - 1 and spec.max_code == (1 << e) - 2
        assert math.isnan(decode((1 << e) - 1, spec))
        assert spec.code == f"e{e}m0"
    for e in (0, 1, 2, 3, 9, 10):
        with pytest.raises(SpecError):
            number(f"e{e}m0")


def test_grammar_e3m0_without_suffix_is_error_but_signed_suffix_parses():
    with pytest.raises(SpecError):
        number("e3m0")
    for suffix in ("fn", "fnuz", "uz", "f"):
        spec = number(f"e3m0{suffix}")
        assert spec.is_float and spec.mbits == 0 and spec.style is SUFFIX_STYLE[suffix]


def test_grammar_out_of_range_widths_are_errors():
    for code in (
        "e0m3",
        "e9m2",
        "e9m2fn",
        "e4m24",
        "e1m24f",
        "e10m5",
        "e4m3b",
        "em3",
        "e4m",
        "e4m3fnz",
        "e4m3u",
        "e4m3F",
        "E4M3",
        "e4m3 ",
        " e4m3",
        "e4m3fnfn",
        "e-4m3",
    ):
        with pytest.raises(SpecError):
            number(code)


def test_grammar_int_and_uint_widths_2_to_32():
    for k in range(2, 33):
        i, u = number(f"int{k}"), number(f"uint{k}")
        assert i.kind is Kind.INT and i.bits == k and i.mbits == k - 1
        assert i.maxint == 2 ** (k - 1) - 1 and i.minint == -(2 ** (k - 1) - 1)
        assert u.kind is Kind.UINT and u.bits == k and u.mbits == k
        assert u.maxint == 2**k - 1 and u.minint == 0
        assert i.code == f"int{k}" and u.code == f"uint{k}"
        check_round_trip(f"int{k}", i)
        check_round_trip(f"uint{k}", u)
        assert not (i.has_nan or i.has_inf or u.has_nan or u.has_inf)


def test_grammar_int_width_errors():
    for code in (
        "int1",
        "int0",
        "int33",
        "int64",
        "uint0",
        "uint1",
        "uint33",
        "int",
        "uint",
        "int-8",
        "uint+8",
        "sint8",
        "Int8",
    ):
        with pytest.raises(SpecError):
            number(code)


def test_grammar_leading_zeros_rejected():
    for code in (
        "e04m3",
        "e4m03",
        "e4m3b07",
        "e4m3b00",
        "e08m0",
        "e4m00fn",
        "int08",
        "uint04",
        "int008",
        "binary8p04",
        "float8_e04m3fn",
        "e4m3b011fnuz",
    ):
        with pytest.raises(SpecError):
            number(code)
    assert number("e4m3b0").bias == 0  # a single zero is a number, not a leading zero
    assert number("e3m0f").mbits == 0


def test_grammar_non_ascii_digits_rejected():
    # The grammar's digits are 0-9; other Unicode decimal digits (which Python's
    # re \d and int() accept) must not spell a code.
    for code in (
        "e\u0664m\u0663fn",
        "e\uff14m\uff13",
        "int\uff18",
        "e4m3b\u0667",
        "binary8p\u0664",
        "uint\u0664",
    ):
        with pytest.raises(SpecError):
            number(code)


def test_grammar_float8_prefix_requires_8bit_format():
    for body in (
        "e4m3fn",
        "e5m2",
        "e3m4",
        "e2m5",
        "e4m3b11fnuz",
        "e5m2b16fnuz",
        "binary8p3",
        "e8m0",
        "e6m1f",
    ):
        assert number("float8_" + body) == number(body)
        assert number("torch.float8_" + body) == number(body)
    # not 8 bits, not a grammar body, or an integer (float8_ names a float format)
    for body in (
        "e2m1f",
        "e3m2f",
        "e5m10",
        "e4m4",
        "binary8p9",
        "float16",
        "float8_e4m3fn",
        "int8",
        "uint8",
        "int4",
    ):
        with pytest.raises(SpecError):
            number("float8_" + body)


def test_grammar_binary8p_out_of_range():
    for code in ("binary8p0", "binary8p8", "binary8p", "binary16p4", "binary8p-1"):
        with pytest.raises(SpecError):
            number(code)


def test_grammar_non_string_inputs_are_spec_errors():
    spec = number("e4m3fn")
    assert number(spec) is spec
    for bad in (None, 8, 4.5, b"e4m3fn", ["e4m3fn"]):
        with pytest.raises(SpecError):
            number(bad)


def test_numberspec_constructor_validates_like_the_parser():
    assert NumberSpec(Kind.FLOAT, 4, 3, 7, Style.FN) == number("e4m3fn")
    for args in [
        (Kind.FLOAT, 4, 0, 7, Style.IEEE),
        (Kind.FLOAT, 9, 1, 7, Style.IEEE),
        (Kind.INT, 0, 0, 0, Style.IEEE),
        (Kind.INT, 0, 32, 0, Style.IEEE),
        (Kind.UINT, 0, 1, 0, Style.IEEE),
        (Kind.EXPONENT, 3, 0, 3, Style.IEEE),
        (Kind.EXPONENT, 8, 1, 127, Style.IEEE),
        (Kind.INT, 1, 7, 0, Style.IEEE),
        (Kind.FLOAT, 4, 3, -1, Style.FN),
        (Kind.FLOAT, 4, 3, True, Style.FN),
        ("float", 4, 3, 7, Style.FN),
        (Kind.FLOAT, 4, 3, 7, "fn"),
    ]:
        with pytest.raises(SpecError):
            NumberSpec(*args)


# ------------------------------------------------- hand-derived attributes
P = Fraction(2)

# Each row: code -> expected attributes, derived by hand from the format definition.
HAND_TABLE = {
    # OCP FP4 E2M1, finite-only: bias 2**(2-1)-1 = 1; top code 0b111 = field 3, frac 1:
    # 1.5 * 2**(3-1) = 6. Smallest normal 2**(1-1) = 1; subnormal 0.5 * 2**0 = 0.5;
    # eps 2**-1. Integers 0,1,2,3,4 are values (5 is not): maxint 4. midmax (6+8)/2 = 7.
    "e2m1f": dict(
        bits=4,
        maxfloat=6.0,
        emax=2,
        emin=0,
        smallest_normal=1.0,
        smallest_subnormal=0.5,
        eps=0.5,
        maxint=4,
        minint=-4,
        midmax=7.0,
        has_inf=False,
        has_nan=False,
        has_negzero=True,
        max_code=7,
        nan_code=None,
        inf_code=None,
        precision=2,
    ),
    # Bare e2m1fn: NaN at the all-ones magnitude 0b111, so the max is 0b110 =
    # field 3, frac 0: 2**(3-1) = 4 (not OCP FP4).
    "e2m1fn": dict(
        bits=4,
        maxfloat=4.0,
        emax=2,
        emin=0,
        max_code=6,
        nan_code=7,
        has_inf=False,
        has_nan=True,
        has_negzero=True,
        maxint=4,
    ),
    # e2m1fnuz: no -0; the -0 code 0b1000 is the NaN; all-ones 0b111 is 6.
    "e2m1fnuz": dict(maxfloat=6.0, nan_code=8, has_negzero=False, has_inf=False, max_code=7),
    # OCP FP6 E2M3 (finite): top 0b11111 = field 3, frac 7: 1.875 * 2**2 = 7.5; tiny 2**0;
    # subnormal 2**-3.
    "e2m3f": dict(bits=6, maxfloat=7.5, emax=2, emin=0, smallest_subnormal=0.125, eps=0.125),
    # OCP FP6 E3M2 (finite): bias 3; top = field 7, frac 3: 1.75 * 2**4 = 28;
    # tiny 2**-2; subnormal 2**-4.
    "e3m2f": dict(
        bits=6, maxfloat=28.0, emax=4, emin=-2, smallest_normal=0.25, smallest_subnormal=0.0625
    ),
    # OCP FP8 E4M3 (fn): bias 7; 0x7f is NaN so max = 0x7e = field 15, frac 6:
    # 1.75 * 2**8 = 448; tiny 2**-6; subnormal 2**-9; integers exact up to 2**4 = 16.
    # midmax (448 + 512)/2 = 480.
    "e4m3fn": dict(
        bits=8,
        maxfloat=448.0,
        emax=8,
        emin=-6,
        smallest_normal=2.0**-6,
        smallest_subnormal=2.0**-9,
        eps=0.125,
        maxint=16,
        minint=-16,
        midmax=480.0,
        max_code=0x7E,
        nan_code=0x7F,
        inf_code=None,
        has_inf=False,
        has_nan=True,
        has_negzero=True,
        precision=4,
    ),
    # OCP FP8 E5M2 (IEEE): bias 15; field 31 is Inf/NaN, max = field 30, frac 3:
    # 1.75 * 2**15 = 57344; +Inf 0x7c; canonical quiet NaN 0x7e.
    "e5m2": dict(
        bits=8,
        maxfloat=57344.0,
        emax=15,
        emin=-14,
        smallest_normal=2.0**-14,
        smallest_subnormal=2.0**-16,
        eps=0.25,
        max_code=0x7B,
        inf_code=0x7C,
        nan_code=0x7E,
        has_inf=True,
        has_nan=True,
        has_negzero=True,
        maxint=8,
    ),
    # IEEE e4m3 (ml_dtypes float8_e4m3): field 15 reserved, max = field 14, frac 7:
    # 1.875 * 2**7 = 240.
    "e4m3": dict(maxfloat=240.0, emax=7, emin=-6, inf_code=0x78, nan_code=0x7C),
    # Bare e4m3fnuz keeps the grammar default bias 7: every magnitude is a number,
    # max = 0x7f = 1.875 * 2**(15-7) = 480; NaN is the -0 code 0x80.
    "e4m3fnuz": dict(
        bias=7, maxfloat=480.0, emin=-6, nan_code=0x80, max_code=0x7F, has_negzero=False
    ),
    # torch/ml_dtypes float8_e4m3fnuz: bias 8: max 1.875 * 2**7 = 240, tiny 2**-7.
    "float8_e4m3fnuz": dict(bias=8, maxfloat=240.0, emin=-7, nan_code=0x80, has_negzero=False),
    # fnuz spends no magnitude on NaN, so the max is field 31, frac 3. Bare e5m2fnuz
    # (bias 15): 1.75 * 2**16 = 114688; torch float8_e5m2fnuz (bias 16): 1.75 * 2**15 = 57344.
    "e5m2fnuz": dict(bias=15, maxfloat=114688.0, emin=-14),
    "float8_e5m2fnuz": dict(bias=16, maxfloat=57344.0, emin=-15),
    # float8_e4m3b11fnuz: bias 11, max 0x7f = 1.875 * 2**(15-11) = 30.
    "float8_e4m3b11fnuz": dict(bias=11, maxfloat=30.0, emin=-10),
    # P3109 binary8p4 = e4m3b8uz: max = 0x7e = 1.75 * 2**(15-8) = 224; Inf 0x7f; NaN 0x80.
    "binary8p4": dict(
        bits=8,
        bias=8,
        maxfloat=224.0,
        emin=-7,
        max_code=0x7E,
        inf_code=0x7F,
        nan_code=0x80,
        has_inf=True,
        has_nan=True,
        has_negzero=False,
    ),
    # binary8p1 = e7m0b64uz: max = field 126: 2**(126-64) = 2**62; smallest positive is
    # field 1: 2**(1-64).
    "binary8p1": dict(
        ebits=7,
        mbits=0,
        bias=64,
        maxfloat=2.0**62,
        smallest_subnormal=2.0**-63,
        emin=-63,
        nan_code=0x80,
        inf_code=0x7F,
    ),
    # OCP E8M0: bias 127, codes 0..254 are 2**(c-127): max 2**127, min 2**-127, NaN 255.
    "e8m0": dict(
        bits=8,
        bias=127,
        maxfloat=2.0**127,
        emax=127,
        emin=-127,
        smallest_normal=2.0**-127,
        smallest_subnormal=2.0**-127,
        eps=1.0,
        max_code=254,
        nan_code=255,
        has_nan=True,
        has_inf=False,
        has_negzero=False,
    ),
    # e4m0: bias 7, codes 0..14 are 2**-7 .. 2**7, NaN 15.
    "e4m0": dict(bits=4, bias=7, maxfloat=128.0, emax=7, emin=-7, max_code=14, nan_code=15),
    # int8: symmetric two's complement: maxint 2**7 - 1 = 127, minint -127.
    "int8": dict(
        bits=8,
        maxint=127,
        minint=-127,
        maxfloat=127.0,
        precision=7,
        has_nan=False,
        has_inf=False,
        is_int=True,
        is_uint=False,
    ),
    "int4": dict(bits=4, maxint=7, minint=-7),
    # uint4: 0 .. 2**4 - 1 = 15.
    "uint4": dict(bits=4, maxint=15, minint=0, is_uint=True, is_int=False),
    # float32: max (2 - 2**-23) * 2**127; subnormal 2**-149.
    "float32": dict(
        bits=32,
        maxfloat=float((2 - P**-23) * P**127),
        emax=127,
        emin=-126,
        smallest_subnormal=2.0**-149,
        eps=2.0**-23,
        nan_code=0x7FC00000,
        inf_code=0x7F800000,
    ),
}


@pytest.mark.parametrize("code", sorted(HAND_TABLE))
def test_hand_derived_attribute_table(code):
    spec = number(code)
    for attr, want in HAND_TABLE[code].items():
        assert getattr(spec, attr) == want, (code, attr, getattr(spec, attr), want)
    if spec.is_float or spec.is_exponent:
        assert decode(spec.max_code, spec) == spec.maxfloat
    if spec.is_float and spec.nan_code is not None:
        assert math.isnan(decode(spec.nan_code, spec))
    if spec.is_float and spec.inf_code is not None:
        assert decode(spec.inf_code, spec) == math.inf
        assert decode(spec.inf_code | spec.sign_bit, spec) == -math.inf


def test_fnuz_bias_rules():
    # Bare fnuz codes take the grammar default bias; ml_dtypes/torch names their own.
    assert number("e4m3fnuz").bias == 7
    assert number("e5m2fnuz").bias == 15
    assert number("float8_e4m3fnuz") == number("e4m3b8fnuz") == number("fp8n")
    assert number("float8_e5m2fnuz") == number("e5m2b16fnuz") == number("bf8n")
    assert number("torch.float8_e4m3fnuz").bias == 8
    assert number("float8_e4m3fnuz").code == "e4m3b8fnuz"
    assert number("e4m3fnuz") != number("float8_e4m3fnuz")


def test_binary8p4_is_e4m3b8uz():
    assert number("binary8p4") == number("e4m3b8uz")
    assert number("e4m3b8uz").code == "binary8p4"


def test_short_aliases():
    assert number("fp8") == number("e4m3fn")
    assert number("bf8") == number("e5m2")
    assert number("e8m0fnu") == number("float8_e8m0fnu") == number("e8m0")
    assert number("float4_e2m1fn_x2") == number("e2m1f")


def test_canonical_codes_of_standard_formats():
    assert number("e8m23").code == "float32"
    assert number("e5m10").code == "float16"
    assert number("e8m7").code == "bfloat16"
    assert number("float6_e2m3fn").code == "e2m3f"
    assert number("float8_e4m3fn").code == "e4m3fn"
    assert number("e4m3b7fn").code == "e4m3fn"  # default bias is not written
    assert str(number("e4m3b11fnuz")) == "e4m3b11fnuz"
