"""Subtiles and exponent offsets: the t<T>s<S>o<B> grammar, its datatype rules, its layout."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tcast
import tcast.engine as engine_mod
from tcast import (
    CastModes,
    EngineBase,
    SpecError,
    TileSpec,
    UnsupportedError,
    block_layout,
    datatype,
    scale,
)
from tcast.cli import info_text


def test_canonical_code_writes_subtile_then_offset():
    assert TileSpec(16, 2, offset=1).code == "t16s2o1"
    assert TileSpec(0, 8, dim=0, offset=4).code == "t0s8o4d0"
    assert scale("e8m0_t16s2o1").code == "e8m0_t16s2o1"
    # offset is the last field: positional constructions keep their meaning
    assert TileSpec(32, 4, 0, 0, None, 2) == TileSpec(size=32, subtile=4, offset=2)


def test_scale_properties_offset_bits_and_subtile_sizes():
    s = scale("e8m0_t16s2o1")
    assert (s.has_subtile, s.offset_bits, s.subtile_sizes) == (True, 1, (2,))
    s = scale("e8m0_t32s4o3_t16")
    assert (s.has_subtile, s.offset_bits, s.subtile_sizes) == (True, 3, (4, 0))
    s = scale("e8m0_t32")
    assert (s.has_subtile, s.offset_bits, s.subtile_sizes) == (False, 0, (0,))
    assert scale("float32").subtile_sizes == ()


def test_a_channel_takes_any_power_of_two_subtile():
    assert scale("e8m0_t0s2048o1").tiles[0].subtile == 2048
    assert scale("e8m0_ts2").code == "e8m0_t0s2"


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("e8m0_t16s3", "subtile s3 must be a power of two >= 2 below tile 16"),
        ("e8m0_t16s1", "subtile s1 must be a power of two >= 2 below tile 16"),
        ("e8m0_t16s16", "subtile s16 must be a power of two >= 2 below tile 16"),
        ("e8m0_t0s6", "subtile s6 must be a power of two >= 2"),
        ("e8m0_t16s0", "subtile s0 must be a power of two >= 2 (leave s<S> out for none)"),
        ("e8m0_t16o1", "offset width o1 needs a subtile before it"),
        ("e8m0_t16s2o5", "offset width o5 must be in 1..4 bits"),
        ("e8m0_t16s2o0", "offset width o0 must be in 1..4 bits"),
        ("e8m0_t16s2o01", "a number has a leading zero"),
        ("e8m0_t16s2o1_t16s2o1", "at most one tile segment may carry an offset width o<B>"),
        ("e8m0_t16s2n2m4", "subtile s2 and sparsity n2m4 do not mix"),
        ("e8m0_t16s2_t16n2m4", "subtiles and sparsity do not mix on one scale"),
        ("e8m0_t16s2o1d0_t8n1m2", "subtiles and sparsity do not mix on one scale"),
    ],
)
def test_bad_subtile_codes_raise_spec_error_naming_the_part(code, message):
    with pytest.raises(SpecError) as info:
        scale(code)
    assert message in str(info.value)


def test_tilespec_constructor_checks_offset_like_the_parser():
    with pytest.raises(SpecError, match="offset width o2 needs a subtile"):
        TileSpec(16, offset=2)
    with pytest.raises(SpecError, match="tile offset must be a non-negative int"):
        TileSpec(16, 2, offset=-1)


SUB_TILES = st.sampled_from(["t16s2o1", "t32s4", "t0s8o2", "t16s8o4d0", "t1024s512o3", "t32"])


@settings(derandomize=True, max_examples=80, deadline=None)
@given(
    st.sampled_from(["int8", "int5", "int3", "e2m1f", "e4m3fn"]),
    st.sampled_from(["e8m0", "e4m3fn_float32", "bfloat16"]),
    st.lists(SUB_TILES, min_size=1, max_size=2),
)
def test_subtile_codes_round_trip_or_raise_spec_error(ncode, scode, tiles):
    code = "_".join([ncode, scode, *tiles])
    try:
        dt = datatype(code)
    except SpecError:
        return
    assert dt.code == code
    assert datatype(dt.code) == dt
    assert scale(dt.sspec.code) == dt.sspec


# --------------------------------------------------------------- datatype rules
@pytest.mark.parametrize(
    ("code", "meta_bits"),
    [
        ("int8_e8m0_t16s2o1", 1),  # MSFP MX9
        ("int3_e8m0_t16s2o1", 1),  # MSFP MX4
        ("e2m1f_e8m0_t32s4o2", 2),  # float data
        ("int8_float32_t16s2o1", 1),  # a float tile scale
        ("e2m1f_e4m3fn_float32_t16s2o3", 3),  # two-level
        ("int8_e8m0_t16s2o1_t16s2", 1),  # 2-D subtile, offset on one segment
        ("int8_e8m0_t16", 0),
    ],
)
def test_offset_datatypes_and_their_meta_bits(code, meta_bits):
    dt = datatype(code)
    assert dt.meta_bits == meta_bits and dt.has_meta == (meta_bits > 0)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (
            "int8_e8m0_t16s2",
            "a subtile needs codebook data or an offset width o<B> (MSFP: int8_e8m0_t16s2o1)",
        ),
        ("e2m1f_e8m0_t16s2_t16", "a subtile needs codebook data or an offset width o<B>"),
        ("uint8_float32_int8_t16s2o1", "exponent offsets o<B> need float or int data, not uint8"),
    ],
)
def test_offset_datatype_refusals(code, message):
    with pytest.raises(SpecError) as info:
        datatype(code)
    assert message in str(info.value)


# ---------------------------------------------------------------------- layout
@pytest.mark.parametrize(
    ("code", "shape", "transpose", "sub_sizes", "meta_shape"),
    [
        ("int8_e8m0_t16s2o1", (3, 37), False, (2,), (3, 19)),
        ("int8_e8m0_t16s2o1_t16s4", (33, 20), False, (2, 4), (17, 5)),
        # transposed scaling moves each segment's subtile with it
        ("int8_e8m0_t16s2o1_t16s4", (33, 20), True, (2, 4), (9, 10)),
        ("int8_e8m0_t16s2o1_t8", (33, 20), False, (2, 8), (17, 3)),
        ("int8_e8m0_t0_t16s2o1", (6, 20), False, (6, 2), (1, 10)),
        ("cb41fi_e2m2fnuz_e8m0_t0s8", (5, 20), False, (8,), (5, 3)),
        ("cb41fi_e2m2fnuz_e8m0_t32", (2, 70), False, (32,), (2, 3)),  # a mapping per block
        ("cb40_float32_nf4_float32_t64s8", (2, 70), False, (8,), ()),  # M = 0: no meta
        ("int8_e8m0_t32", (2, 70), False, (32,), ()),
        ("cb41fi_e2m2fnuz_float32", (2, 70), False, (), ()),  # tensor scale: one value
        ("int8_e8m0_t16s2o1d0", (37, 3), False, (2,), (19, 3)),
        ("int8_e8m0_t16s2o1", (3, 0), False, (2,), (3, 0)),
    ],
)
def test_block_layout_sub_sizes_and_meta_shape(code, shape, transpose, sub_sizes, meta_shape):
    lay = block_layout(shape, datatype(code), transpose)
    assert lay.sub_sizes == sub_sizes
    assert lay.meta_shape == meta_shape


# --------------------------------------------------------------------- engines
class _Kit(EngineBase):
    name = "kit"


@pytest.mark.parametrize(
    ("name", "plain"),
    [("mx9", False), ("mxfi4", False), ("nf4", False), ("mxfp4", True), ("nvfp4", True)],
)
def test_enginebase_refuses_subtiles_and_codebooks_unless_it_implements_them(name, plain):
    modes = CastModes()
    assert _Kit().supports(datatype(name), modes) is plain
    able = type("Able", (_Kit,), {"subtiles_and_codebooks": True})()
    assert able.supports(datatype(name), modes) is True


@dataclass
class _Fake:
    name: str
    kind: type
    codebooks: bool

    def accepts(self, x):
        return isinstance(x, self.kind)

    priority: int = 0

    def supports(self, dtype, modes):
        return self.codebooks or not (dtype.has_meta or dtype.nspec.is_codebook)

    def request(self, x, dtype, modes, seed, rbits):
        raise AssertionError("the front door refuses before a request")

    cast = upcast = request


@dataclass
class _Point:
    name: str
    obj: object
    value: str = "fake:engine"

    def load(self):
        return self.obj


@pytest.fixture
def two_engines(monkeypatch):
    """'lists' takes lists and no codebooks; 'tuples' takes tuples and casts everything."""
    eps = [
        _Point("lists", _Fake("lists", list, False)),
        _Point("tuples", _Fake("tuples", tuple, True)),
    ]
    groups = {tcast.ENTRY_POINT_GROUP: eps, tcast.ARRAYS_GROUP: []}
    monkeypatch.setattr(engine_mod, "entry_points", lambda group: groups[group])
    tcast.refresh_engines()
    yield
    monkeypatch.undo()
    tcast.refresh_engines()


def test_front_door_names_the_engine_that_casts_a_refused_datatype(two_engines):
    with pytest.raises(UnsupportedError) as info:
        tcast.cast([1.0, 2.0], "mx9")
    text = str(info.value)
    assert text.startswith("no engine (lists) supports mx9 with")
    assert text.endswith(
        "; mx9 is cast by the 'tuples' engine (its arrays): "
        "tcast.cast(x as one of its arrays, 'mx9', ...)"
    )
    with pytest.raises(UnsupportedError, match="nf4 is cast by the 'tuples' engine"):
        tcast.cast([1.0], "nf4", engine="lists")
    # nothing else casts it: no hint
    with pytest.raises(UnsupportedError) as info:
        tcast.cast((1.0,), "mx9", engine="lists")
    assert "is cast by" not in str(info.value)


_TILE16 = ["8 (tile of 16)", "1 offset bit per subtile x 8"]


@pytest.mark.parametrize(
    ("name", "layout"),
    [
        ("mx9", ["8", *_TILE16, "9 = (8 + 1 x 8 + 16 x 8) / 16"]),
        ("mx6", ["5", *_TILE16, "6 = (8 + 1 x 8 + 16 x 5) / 16"]),
        ("mx4", ["3", *_TILE16, "4 = (8 + 1 x 8 + 16 x 3) / 16"]),
        (
            "mxfp4e",
            [
                "4",
                "8 (tile of 32)",
                "2 mapping bits per subtile x 4",
                "4.5 = (8 + 2 x 4 + 32 x 4) / 32",
            ],
        ),
    ],
)
def test_tcast_info_prints_the_bit_layout(name, layout):
    lines = info_text(name).splitlines()
    start = lines.index("bit layout:")
    assert [line.split(":", 1)[1].strip() for line in lines[start + 1 : start + 5]] == layout
