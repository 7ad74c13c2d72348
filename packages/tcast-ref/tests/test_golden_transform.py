"""Golden sets with a Hadamard transform (SEMANTICS.md 5.11): T column, header, refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tcast_ref
from tcast import Hadamard, SpecError
from tcast.cli import main
from tcast_ref.golden import Settings, generate, load, write

H8 = Hadamard.seeded(8, 3)


@pytest.fixture(scope="module")
def tset(tmp_path_factory):
    """A small MXFP4 compress set with an 8-point transform, stochastic rounding."""
    d = tmp_path_factory.mktemp("rht") / "mxfp4_rht8"
    st = Settings.of("mxfp4", castmode="compress", roundmode="stochastic", transform=H8, count=4)
    write(generate(st), d)
    return d


def test_a_transform_set_states_its_transform_and_reads_back(tset):
    lset = load(tset)
    assert lset.settings().transform == H8
    header = json.loads((tset / "header.json").read_text())
    assert header["transform"]["signs"] == "".join("+" if s > 0 else "-" for s in H8.signs)
    names = [f["name"] for f in header["layout"]["fields"]]
    assert names == ["IN", "RBITS", "T", "SCALE", "OUT", "FLAGS"]  # no LEN: whole tiles
    # T is the reference's transform of IN, and the codes are those of T's cast
    x = np.ascontiguousarray(lset.columns["IN"]).view(np.float32)
    t = np.ascontiguousarray(lset.columns["T"]).view(np.float32)
    want = tcast_ref.hadamard(x, H8, -1)
    assert np.array_equal(t.view(np.uint32), want.view(np.uint32))
    r = tcast_ref.cast(
        x, "mxfp4", castmode="actual", roundmode="stochastic", rbits=lset.columns["RBITS"],
        transform=H8,
    )  # fmt: skip
    assert np.array_equal(np.asarray(r.data), lset.columns["OUT"])


def test_every_engine_verifies_and_a_wrong_T_word_is_reported(tset, tmp_path, capsys):
    assert main(["verify", str(tset), "--engine", "ref", "--engine", "torch", "--quiet"]) == 0
    assert "(compress, stochastic, RHT-8)" in capsys.readouterr().out
    header = json.loads((tset / "header.json").read_text())
    lines = (tset / "vectors.txt").read_text().splitlines()
    words = lines[5].split(" ")  # case 5: IN[0..31], RBITS[0..31], then T[2]
    words[64 + 2] = f"{int(words[64 + 2], 16) ^ 1:08X}"
    lines[5] = " ".join(words)
    act = tmp_path / "results.txt"
    act.write_text("\n".join(lines) + "\n")
    assert main(["verify", str(tset), "--actual", str(act)]) == 1
    out = capsys.readouterr().out
    assert "1 of " in out and "differ (in 1 of" in out
    assert "=> T[2] observed " in out and out.count("case ") == 1 and "case 5: " in out
    assert header["counts"]["lines"] > 5


@pytest.mark.parametrize(
    ("code", "kw", "why"),
    [
        ("e4m3fn", {}, "has none"),  # unscaled: no line of tiles
        ("mxfp8_2d", {}, "has none"),  # 2-D tiles
        ("mxfp8", {"level": "exhaustive"}, "exhaustive"),
        ("nvfp4", {"transform": Hadamard.seeded(32, 0)}, "does not divide the 16-element"),
        ("mxfp4", {"transform": "te_wgrad"}, "tcast.Hadamard"),
    ],
)
def test_a_transform_a_set_cannot_carry_is_refused(code, kw, why):
    kw = {"transform": H8, **kw}
    with pytest.raises(SpecError, match=why):
        Settings.of(code, **kw)


def test_the_command_line_takes_a_transform(tmp_path, capsys):
    out = tmp_path / "s"
    assert (
        main(["golden", "nvfp4", "--transform", "te_wgrad", "--count", "2", "--out", str(out)]) == 0
    )
    assert load(out).settings().transform == Hadamard.te_wgrad()
    for bad in ("3:0", "4:+-", "32", "foo:1"):
        assert main(["golden", "mxfp4", "--transform", bad, "--out", str(tmp_path / "x")]) == 2
        assert "is not a transform" in capsys.readouterr().err
    assert main(["golden", "--core", "--transform", "4:0", "--out", str(tmp_path / "c")]) == 2
    assert "the core sets name their own" in capsys.readouterr().err
