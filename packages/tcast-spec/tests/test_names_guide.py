"""Names that mean what users expect: look-alike warnings, any-case catalog names, suggestions.

* A name that looks like a torch/ml_dtypes format but means another warns once, naming the
  format meant (``e2m1`` is not OCP FP4); catalog and library names, explicit biases and
  DataType objects never warn, nor does anything while ``torch.compile`` traces.
* Catalog names are found in any case unless the case tells two apart; codes too.
* An unknown name is answered with the nearest known names.
* Every round and scale mode has one meaning text, shown by the enums' and ``tcast.cast``'s
  docstrings.

Expected maxima and biases are the formats' facts (docs/names.md), written out here.
"""

from __future__ import annotations

import re
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

import tcast
from tcast import NameWarning, SpecError, _lookalike, _lookup, cli


@pytest.fixture(autouse=True)
def fresh_names(monkeypatch):
    """Nothing warned yet and nothing parsed yet in this test."""
    monkeypatch.setattr(_lookalike, "_WARNED", set())
    monkeypatch.setattr(_lookup, "_PARSED", {})


def _warnings_of(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NameWarning)
        fn(*args)
    return [w for w in caught if issubclass(w.category, NameWarning)]


# name, what tcast reads (its max), the format it is taken for, and that format's max
LOOKALIKES = [
    ("e2m1", "max 3", "e2m1f", "max 6"),  # IEEE-style e2m1 vs OCP FP4
    ("e2m1fn", "max 4", "e2m1f", "max 6"),  # tcast fn = NaN at 0x7 vs ml_dtypes' finite-only
    ("e2m3", "max 3.75", "e2m3f", "max 7.5"),  # vs OCP FP6 E2M3
    ("e3m2", "max 14", "e3m2f", "max 28"),  # vs OCP FP6 E3M2
    ("e2m3fn", "max 7", "e2m3f", "max 7.5"),
    ("e3m2fn", "max 24", "e3m2f", "max 28"),
    ("e4m3fnuz", "bias 7", "e4m3b8fnuz", "bias 8"),  # torch float8_e4m3fnuz has bias 8
    ("e5m2fnuz", "bias 15", "e5m2b16fnuz", "bias 16"),
    ("e4m3", "max 240", "e4m3fn", "max 448"),  # IEEE e4m3 vs torch float8_e4m3fn
]


@pytest.mark.parametrize(("name", "own", "meant", "meant_fact"), LOOKALIKES)
def test_a_lookalike_name_warns_naming_the_format_it_is_taken_for(name, own, meant, meant_fact):
    (w,) = _warnings_of(tcast.datatype, name)
    text = str(w.message)
    assert text.startswith(f"{name!r} is ") and own in text
    assert f"write {meant!r}" in text or f"{meant!r} or" in text
    assert meant_fact in text
    assert w.filename == __file__  # points at the caller, not at tcast


@pytest.mark.parametrize(("name", "own", "meant", "meant_fact"), LOOKALIKES)
def test_tcast_info_prints_the_lookalike_note(capsys, name, own, meant, meant_fact):
    assert cli.main(["info", name]) == 0
    out, err = capsys.readouterr()
    note = next(line for line in out.splitlines() if line.startswith("note: "))
    assert own in note and meant in note and meant_fact in note
    assert err == ""


def test_a_lookalike_warns_once_per_name_and_in_code_pairs():
    assert len(_warnings_of(tcast.datatype, "e2m1")) == 1
    assert _warnings_of(tcast.datatype, "e2m1") == []
    assert _warnings_of(tcast.datatype, "e2m1_e8m0_t32") == []  # e2m1 said once already
    (w,) = _warnings_of(tcast.datatype, "e3m2", "e8m0_t32")
    assert "'e3m2'" in str(w.message)
    (w,) = _warnings_of(tcast.datatype, "e2m3f_e4m3_t16")  # a scale number is a name too
    assert "'e4m3'" in str(w.message)


NEVER_WARN = [
    "e5m2",  # torch float8_e5m2
    "e4m3fn",  # torch float8_e4m3fn
    "e3m4",  # ml_dtypes float8_e3m4, no other e3m4
    "e2m1f_e8m0fnu_t32",  # e8m0fnu is e8m0 (torch float8_e8m0fnu)
    "e2m1f",
    "e4m3f",  # a suffix no library uses: no look-alike
    "e2m1b1",  # the bias written: the user means it
    "e4m3b7fnuz",
    "e4m3b8fnuz",
    "float8_e4m3",
    "float8_e4m3fnuz",
    "torch.float4_e2m1fn_x2",
    "float4_e2m1fn",
    "e2m1f_e8m0_t32",
    "e2m1fnuz_e8m0_t32",
]


# every catalog name but the alias e4m3, which is the code e4m3 (IEEE, not float8_e4m3fn)
CATALOG_NAMES = [n for n in (*tcast.CATALOG, *tcast.PREVIEW_CATALOG) if n != "e4m3"]


@pytest.mark.parametrize("name", [*NEVER_WARN, *CATALOG_NAMES])
def test_library_catalog_and_biased_names_never_warn(name):
    assert _warnings_of(tcast.datatype, name) == []


def test_objects_and_specs_never_warn():
    spec = tcast.number("e2m1")  # the grammar itself does not warn
    dt = tcast.DataType(spec, tcast.scale("e8m0_t32"))
    assert _warnings_of(tcast.datatype, spec) == []
    assert _warnings_of(tcast.datatype, dt) == []


def test_no_warning_while_torch_compile_traces(monkeypatch):
    # dynamo turns a warning into a graph break: nothing is warned (nor remembered) while
    # tracing, and the name still warns in eager code afterwards
    compiler = types.SimpleNamespace(is_compiling=lambda: True)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(compiler=compiler))
    assert _warnings_of(tcast.datatype, "e2m1") == []
    compiler.is_compiling = lambda: False
    assert len(_warnings_of(tcast.datatype, "e2m1")) == 1


def test_the_front_door_warns_for_a_lookalike_code():
    x = np.ones((1, 32), np.float32)
    with pytest.warns(NameWarning, match="'e2m1' is e2m1"):
        tcast.cast(x, "e2m1_e8m0_t32")


def test_foreign_float_lists_match_the_installed_libraries():
    # the look-alike rule is derived from these names: they must be the libraries' own
    for library, names in _lookalike.FOREIGN_FLOATS:
        mod = pytest.importorskip(library)
        have = {n for n in dir(mod) if n.startswith("float") and "_e" in n}
        assert set(names) == have, library


# ---------------------------------------------------------------- names in any case
@pytest.mark.parametrize(
    ("text", "name"),
    [("MXFP4", "mxfp4"), ("mxfp8_2D", "mxfp8_2d"), ("NVFP4", "nvfp4"), ("Float8_E4M3FN", None)],
)
def test_catalog_names_are_found_in_any_case(text, name):
    found = tcast.datatype(text)
    assert found is tcast.CATALOG[name or "float8_e4m3fn"]


def test_cast_takes_a_catalog_name_in_another_case():
    x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(2, 32)
    got = tcast.cast(x, "mxfp8_2D")
    assert np.array_equal(got.view(np.uint32), tcast.cast(x, "mxfp8_2d").view(np.uint32))


def test_names_that_differ_only_in_case_are_refused_in_a_third_case():
    # upstream's F (float32) and f (float16) scale letters
    assert tcast.datatype("uint8_FF").sspec.scale.code == "float32"
    assert tcast.datatype("uint8_ff").sspec.scale.code == "float16"
    with pytest.raises(SpecError, match="uint8_FF, uint8_ff"):
        tcast.datatype("UINT8_FF")


def test_codes_are_read_in_any_case():
    assert tcast.datatype("E4M3FN_E8M0_T32") == tcast.datatype("e4m3fn_e8m0_t32")
    assert tcast.datatype("E2M1F") == tcast.datatype("e2m1f")


# ---------------------------------------------------------------------- suggestions
def test_an_unknown_name_names_itself_and_its_nearest_names():
    with pytest.raises(SpecError) as err:
        tcast.datatype("mxfp8_3d")
    text = str(err.value)
    assert text.startswith("'mxfp8_3d' is not a catalog name")  # not "'mxfp8' is not..."
    assert "did you mean: mxfp8_2d" in text


def test_cast_answers_a_mistyped_name_with_the_nearest_ones():
    with pytest.raises(SpecError, match=r"did you mean: .*\bmxfp4\b"):
        tcast.cast(np.ones(32, np.float32), "mxfp44")


def test_nearest_names_ignores_case_and_long_tokens():
    assert tcast.nearest_names("REFF", ["ref", "torch", "triton"]) == ["ref"]
    assert tcast.nearest_names("x" * 500, ["x" * 500]) == []
    assert tcast.nearest_names("zzzz", ["ref", "torch"]) == []


def test_cli_prints_tcast_warnings_as_its_own_lines(capsys, monkeypatch):
    # a plugin command that reads a datatype name, as tcast golden does
    def register(sub):
        p = sub.add_parser("probe")
        p.add_argument("name")
        p.set_defaults(func=lambda args: 0 if tcast.datatype(args.name) else 1)

    plugin = types.SimpleNamespace(name="probe", load=lambda: register)
    monkeypatch.setattr(cli, "_command_entry_points", lambda: [plugin])
    assert cli.main(["probe", "e2m1"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("tcast probe: warning: 'e2m1' is e2m1")


# -------------------------------------------------------------------- mode meanings
def test_every_mode_has_one_meaning_shown_by_the_docstrings():
    assert list(tcast.ROUND_MODE_MEANINGS) == [m.value for m in tcast.RoundMode]
    assert list(tcast.SCALE_MODE_MEANINGS) == [m.value for m in tcast.ScaleMode]
    cast_doc = " ".join(tcast.cast.__doc__.split())
    for enum, meanings in (
        (tcast.RoundMode, tcast.ROUND_MODE_MEANINGS),
        (tcast.ScaleMode, tcast.SCALE_MODE_MEANINGS),
    ):
        enum_doc = " ".join(enum.__doc__.split())
        for mode, text in meanings.items():
            said = " ".join(f"{mode}: {text}".split())
            assert said in enum_doc and said in cast_doc


def test_mode_meanings_name_the_peers_spellings():
    # torchao's ScaleCalculationMode EVEN rounds amax to the element precision first (our
    # option3), RCEIL is the smallest power of two with amax / s <= max (our topbinade)
    assert "torchao EVEN" in tcast.SCALE_MODE_MEANINGS["option3"]
    assert "RCEIL" in tcast.SCALE_MODE_MEANINGS["topbinade"]
    assert "torchao FLOOR" in tcast.SCALE_MODE_MEANINGS["floor"]
    assert "torchao CEIL" in tcast.SCALE_MODE_MEANINGS["ceil"]
    assert "ties toward zero" in tcast.ROUND_MODE_MEANINGS["zero"]
    assert "roundTowardZero" in tcast.ROUND_MODE_MEANINGS["trunc"]


def test_names_md_lists_the_lookalikes_as_they_warn():
    path = Path(__file__).resolve().parents[3] / "docs" / "names.md"
    if not path.exists():
        pytest.skip("docs/ is not beside this checkout")
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `e")
    ]
    rows = [r for r in rows if len(r) == 4]
    listed = [t for r in rows for t in re.findall(r"`([a-z0-9]+)`", r[0])]
    assert set(listed) == {name for name, *_ in LOOKALIKES}
    for text, _means, _looks, which in rows:
        for name in re.findall(r"`([a-z0-9]+)`", text):
            (w,) = _warnings_of(tcast.datatype, name)
            assert all(f"'{code}'" in str(w.message) for code in re.findall(r"`(\w+)`", which))
