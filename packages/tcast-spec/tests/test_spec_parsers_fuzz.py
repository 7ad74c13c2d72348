"""Fuzzing the three parsers: any text gives a spec or a SpecError, never a crash.

tcast.number and tcast.scale may only raise SpecError; tcast.datatype may also
raise UnsupportedError (NOT_YET_SUPPORTED names). Whatever parses round-trips
through its canonical code.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

import tcast
from tcast import (
    NOT_YET_SUPPORTED,
    CodebookSpec,
    DataType,
    NumberSpec,
    ScaleSpec,
    SpecError,
    UnsupportedError,
    datatype,
    number,
    scale,
)

GRAMMAR_ALPHABET = "em0123456789bfnuzt_sd-intx."

grammar_text = st.text(alphabet=GRAMMAR_ALPHABET, max_size=40)

# Texts shaped like codes, so that many of them are valid and the accept paths
# are exercised too (free text almost never is).
number_like = st.one_of(
    st.from_regex(
        r"(torch\.)?(float8_)?e[0-9]{1,2}m[0-9]{1,2}(b[0-9]{1,3})?(fnuz|fn|uz|f)?", fullmatch=True
    ),
    st.from_regex(r"(torch\.)?u?int[0-9]{1,2}", fullmatch=True),
    st.from_regex(r"binary8p[0-9]{1,2}", fullmatch=True),
    # codebooks: clauses, offsets and eoffsets, compute formats, labels (nf4's tables known)
    st.from_regex(
        r"cb[0-9]{2}([fips][0-9]{0,3}(e[0-9]{0,2})?){0,3}"
        r"_(e2m[1-3]fnuz|e2m3|e3m2fnuz|int[2-9]|int32|float32)(_[a-z][a-z0-9]{0,3}|_nf4)?",
        fullmatch=True,
    ),
    st.sampled_from(
        [
            "float32",
            "fp16",
            "bfloat16",
            "float8_e4m3fnuz",
            "torch.float8_e5m2fnuz",
            "float8_e8m0fnu",
            "float4_e2m1fn",
            "float6_e3m2fn",
            "fp8n",
            "bf8",
            "cb41fi_e2m2fnuz",
            "cb42f1346_e2m3fnuz",
            "cb41p1p2_e2m3fnuz_lab",
            "cb40_float32_nf4",
            "cb51ie_e2m3",
            "cb30s2_int8",
        ]
    ),
)
tile_like = st.one_of(
    st.from_regex(
        r"t[0-9]{0,4}(s[0-9]{1,2}(o[0-9])?)?(n[0-9]m[0-9]{1,2})?(d-?[0-9])?", fullmatch=True
    ),
    st.from_regex(
        r"t(|0|2|4|8|16|32|64|1024)(s[24](o[1-5])?)?(n[1-3]m[248])?(d-?[0-3])?", fullmatch=True
    ),
)
scale_number = st.one_of(
    st.sampled_from(
        [
            "e8m0",
            "e4m0",
            "float32",
            "float16",
            "bfloat16",
            "e4m3fn",
            "e5m2",
            "binary8p3",
            "int8",
            "uint4",
            "e2m1f",
        ]
    ),
    number_like,
)
good_tile = st.from_regex(r"t(|0|2|4|8|16|32|64|1024)(n[1-3]m[248])?(d-?[0-3])?", fullmatch=True)
scale_like = st.one_of(
    st.builds(
        lambda nums, tiles: "_".join(nums + tiles),
        st.lists(scale_number, min_size=0, max_size=3),
        st.lists(tile_like, min_size=0, max_size=3),
    ),
    st.builds(
        lambda num, second, tiles: "_".join([num, *second, *tiles]),
        st.sampled_from(["e8m0", "float32", "e4m3fn", "bfloat16", "e5m0b3"]),
        st.lists(st.sampled_from(["float32", "int8", "float16"]), max_size=1),
        st.lists(good_tile, max_size=2),
    ),
)
datatype_like = st.one_of(
    st.builds(lambda n, s: f"{n}_{s}", number_like, scale_like),
    st.sampled_from(sorted(tcast.CATALOG) + sorted(NOT_YET_SUPPORTED)),
)

any_text = st.one_of(st.text(max_size=40), grammar_text)


def check_number(text: str) -> None:
    try:
        spec = number(text)
    except SpecError:
        return
    assert isinstance(spec, (NumberSpec, CodebookSpec))
    assert number(spec.code) == spec
    assert number(spec.code).code == spec.code
    assert text.isascii(), f"non-ASCII text {text!r} accepted as {spec.code!r}"


def check_scale(text: str) -> None:
    try:
        spec = scale(text)
    except SpecError:
        return
    assert isinstance(spec, ScaleSpec)
    assert scale(spec.code) == spec
    assert scale(spec.code).code == spec.code


def check_datatype(text: str, sspec: str | None = None) -> None:
    try:
        dt = datatype(text, sspec)
    except (SpecError, UnsupportedError):
        return
    assert isinstance(dt, DataType)
    assert datatype(dt.code) == dt
    assert datatype(dt.code).code == dt.code


@given(any_text)
@example("")
@example("e4m3fn")
@example("e99999999999999999999m3")
@example("int99999999999999999999")
@example("torch.")
@example("float8_")
@example("\x00")
def test_number_arbitrary_text_gives_spec_or_spec_error(text):
    check_number(text)


@given(number_like)
def test_number_code_like_text_gives_spec_or_spec_error(text):
    check_number(text)


@given(any_text)
@example("e8m0_t99999999999999999999")
@example("e8m0_t32d-99999999999999999999")
@example("e8m0_t32n99999999999999m99999999999999999")
@example("___")
@example("float8")
def test_scale_arbitrary_text_gives_spec_or_spec_error(text):
    check_scale(text)


@given(scale_like)
def test_scale_code_like_text_gives_spec_or_spec_error(text):
    check_scale(text)


@given(any_text)
@example("mx9")
@example("int8_e8m0_t16s2")
@example("uint8_float32_int8_t0")
def test_datatype_arbitrary_text_gives_datatype_or_spec_or_unsupported_error(text):
    check_datatype(text)


@given(datatype_like)
def test_datatype_code_like_text_gives_datatype_or_spec_or_unsupported_error(text):
    check_datatype(text)


@given(st.one_of(number_like, any_text), st.one_of(scale_like, any_text))
def test_datatype_two_texts_give_datatype_or_spec_or_unsupported_error(ntext, stext):
    check_datatype(ntext, stext)


@given(
    st.one_of(
        st.none(),
        st.integers(),
        st.floats(),
        st.binary(max_size=8),
        st.lists(st.text(max_size=4), max_size=2),
    )
)
def test_non_text_inputs_give_spec_error(value):
    for parse in (number, scale, datatype):
        try:
            parse(value)
        except SpecError:
            continue
        raise AssertionError(f"{parse.__name__}({value!r}) did not raise SpecError")
