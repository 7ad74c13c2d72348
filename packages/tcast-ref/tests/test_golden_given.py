"""Golden sets whose scale parts are given inputs (SEMANTICS.md 5.12): the GSCALE, GZERO and
GTENSCALE columns, the exact model on their lines, verification, the header and refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tcast
from tcast import SpecError
from tcast.cli import main
from tcast.exact import cast_block, decode
from tcast_ref.golden import Settings, generate, load, write
from tcast_ref.golden._read import _check_inputs

# (datatype, given parts, options): every line is cast on its own given its parts
SETS = [
    ("mxfp8", ("scale",), {}),
    ("nvfp4", ("tensor_scale",), {"roundmode": "stochastic"}),
    ("nvfp4", ("scale", "tensor_scale"), {}),
    ("uint8_e8m0_int8_t16", ("scale", "zero"), {}),
    ("e4m3fn_float32", ("scale",), {"castmode": "compress"}),
]


@pytest.fixture(
    scope="module", params=range(len(SETS)), ids=[f"{c}-{'+'.join(p)}" for c, p, _ in SETS]
)
def gset(request, tmp_path_factory):
    code, parts, kw = SETS[request.param]
    d = tmp_path_factory.mktemp("given") / code
    write(generate(Settings.of(code, given=parts, count=6, **kw)), d)
    return d, code, parts


def test_every_whole_line_is_the_exact_cast_with_its_given_parts(gset):
    d, code, _ = gset
    lset = load(d)
    dt = tcast.datatype(code)
    cols = lset.columns
    x = np.ascontiguousarray(cols["IN"]).view(np.float32)
    live = (
        np.ones(len(x), bool) if "LEN" not in cols else (cols["LEN"] == cols["LEN"].max(0)).all(1)
    )
    checked = 0
    for i in np.flatnonzero(live):
        kw = {}
        if "GSCALE" in cols:
            kw["scale"] = decode(int(cols["GSCALE"][i, 0]), dt.sspec.scale)
        if "GZERO" in cols:
            kw["zero"] = decode(int(cols["GZERO"][i, 0]), dt.zero)
        if "GTENSCALE" in cols:
            kw["tensor_scale"] = decode(int(cols["GTENSCALE"][i, 0]), dt.tenscale)
        rb = None if "RBITS" not in cols else cols["RBITS"][i].tolist()
        mode = "stochastic" if rb is not None else "even"
        want = cast_block(x[i].tolist(), dt, roundmode=mode, rbits=rb, **kw)
        if "OUT" in cols and lset.settings().castmode.value == "actual":
            assert cols["OUT"][i].tolist() == list(want.codes), i
        assert int(cols["SCALE"][i, 0]) == want.scale, i
        if "ZERO" in cols:
            assert int(cols["ZERO"][i, 0]) == want.zero, i
        if "TENSCALE" in cols and "GTENSCALE" in cols:
            assert int(cols["TENSCALE"][i, 0]) == want.tenscale, i
        checked += 1
    assert checked >= 100


def test_given_sets_state_their_parts_and_verify_through_the_reference(gset, capsys):
    d, _, parts = gset
    header = json.loads((d / "header.json").read_text())
    assert header["given"]["parts"] == list(parts)
    names = [f["name"] for f in header["layout"]["fields"]]
    given = {"scale": "GSCALE", "zero": "GZERO", "tensor_scale": "GTENSCALE"}
    assert [n for n in names if n.startswith("G")] == [given[p] for p in parts]
    assert all(
        f["role"] == "input" for f in header["layout"]["fields"] if f["name"].startswith("G")
    )
    assert load(d).settings().given == parts
    assert main(["verify", str(d), "--engine", "ref", "--quiet"]) == 0
    assert main(["verify", str(d), "--actual", str(d / "vectors.txt"), "--quiet"]) == 0
    capsys.readouterr()


def test_given_codes_follow_the_computed_ones_and_reach_the_extremes():
    st = Settings.of("mxfp8", given=("scale",), count=40)
    cols = generate(st).columns
    plain = generate(Settings.of("mxfp8", count=40)).columns
    g = cols["GSCALE"][:, 0].astype(int)
    c = plain["SCALE"][:, 0].astype(int)
    base = np.where(c == 255, 127, c)  # a NaN block's: the code of 1.0
    near = np.abs(g - base) <= 3
    assert ((g == 0) | (g == 254) | near).all()
    assert (g != base).any() and (g == base).any()
    assert 0 in g and 254 in g  # code 0 and the largest finite code (255 is NaN)
    # the outputs: the codes the cast used (a NaN block keeps e8m0's NaN code)
    assert ((cols["SCALE"][:, 0] == g) | (cols["SCALE"][:, 0] == 255)).all()


def test_a_set_whose_given_words_were_edited_is_refused():
    st = Settings.of("mxfp8", given=("scale",), count=4)
    gs = generate(st)
    cols = dict(gs.columns)
    cols["GSCALE"] = cols["GSCALE"] ^ 1
    with pytest.raises(Exception, match="GSCALE words are not the inputs"):
        _check_inputs(gs.header, st, cols)


@pytest.mark.parametrize(
    ("code", "given", "match"),
    [
        ("e4m3fn", ("scale",), "unscaled"),
        ("mxfp8", ("zero",), "no zero point"),
        ("mxfp8", ("tensor_scale",), "one scale level"),
        ("mx9", ("scale",), "not defined"),
        ("mxfp8", ("offset",), "is not one"),
        ("mxfp8", "scale", "sequence of part names"),
        ("mxfp8", None, "sequence of part names"),
        ("mxfp8", 123, "sequence of part names"),
    ],
)
def test_settings_refuse_given_parts_a_datatype_has_no_place_for(code, given, match):
    with pytest.raises(SpecError, match=match):
        Settings.of(code, given=given)
    with pytest.raises(SpecError, match="levels 1 and 2"):
        Settings.of("mxfp8", given=("scale",), level="exhaustive")


def test_given_parts_from_an_iterator_are_read_once():
    assert Settings.of("mxfp8", given=iter(["scale"])).given == ("scale",)
