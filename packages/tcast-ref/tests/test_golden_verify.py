"""`tcast verify`: integrity checks, results files, engines, NaN rule, exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tcast.cli import main
from tcast_ref import RefEngine
from tcast_ref.golden import Settings, _verify, describe_word, generate, load, write
from tcast_ref.golden._verify import GoldenSetError


@pytest.fixture(scope="module")
def sets(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sets")
    out = {}
    for name, kw in {
        "float8_e4m3fn": {},
        "mxfp8": {},
        "e5m2": {"castmode": "virtual"},
        "nvfp4": {"roundmode": "stochastic", "seed": 1},
    }.items():
        out[name] = root / name
        write(generate(Settings.of(name, **kw)), out[name])
    return out


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


class _AlteredRef(RefEngine):
    """The reference engine with ``alter(result, castmode)`` applied to its results."""

    def __init__(self, name, alter):
        self.name, self.alter = name, alter

    def run(self, x, request):
        r = super().run(x, request)
        self.alter(r, request.castmode.value)
        return r


def _install(monkeypatch, engine) -> None:
    """Make ``engine`` visible to ``tcast verify --engine`` beside the installed ones."""
    import tcast

    loaded = tcast.load_engines()
    fake = type(loaded)({**loaded.engines, engine.name: engine}, loaded.failures)
    monkeypatch.setattr(tcast, "load_engines", lambda: fake)  # --engine all
    real = _verify.load_engine  # --engine NAME loads that engine only
    monkeypatch.setattr(_verify, "load_engine", lambda n: engine if n == engine.name else real(n))


# ------------------------------------------------------------------ integrity
@pytest.mark.parametrize("victim", ["vectors.txt", "vectors.memh", "vectors.npz"])
def test_a_damaged_file_is_refused_before_anything_else(sets, tmp_path, capsys, victim):
    d = _copy(sets["mxfp8"], tmp_path)
    data = bytearray((d / victim).read_bytes())
    data[len(data) // 2] ^= 0x01
    (d / victim).write_bytes(bytes(data))
    assert main(["verify", str(d)]) == 2
    err = capsys.readouterr().err
    assert f"{victim} does not match its SHA-256" in err and "damaged" in err


def test_a_truncated_or_missing_file_is_refused(sets, tmp_path, capsys):
    d = _copy(sets["float8_e4m3fn"], tmp_path)
    (d / "vectors.memh").write_bytes((d / "vectors.memh").read_bytes()[:-10])
    assert main(["verify", str(d)]) == 2
    assert "vectors.memh does not match" in capsys.readouterr().err
    (d / "vectors.memh").unlink()
    assert main(["verify", str(d)]) == 2
    assert "vectors.memh is missing" in capsys.readouterr().err


def test_a_bad_header_is_refused(sets, tmp_path, capsys):
    d = _copy(sets["float8_e4m3fn"], tmp_path)
    h = json.loads((d / "header.json").read_text())
    h["schema_version"] = 99
    (d / "header.json").write_text(json.dumps(h))
    assert main(["verify", str(d)]) == 2
    assert "schema version 99" in capsys.readouterr().err
    (d / "header.json").write_text("{ not json")
    assert main(["verify", str(d)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert main(["verify", str(tmp_path / "nowhere")]) == 2
    assert "nowhere: no such file or directory" in capsys.readouterr().err


# ---------------------------------------------------------------- results files
def test_an_intact_results_file_matches(sets, capsys):
    d = sets["mxfp8"]
    for name in ("vectors.txt", "vectors.memh"):
        assert main(["verify", str(d), "--actual", str(d / name)]) == 0
        assert "match" in capsys.readouterr().out


def test_one_flipped_output_bit_is_reported_exactly(sets, tmp_path, capsys):
    """Flip bit 0 of OUT[5] of case 40 of an mxfp8 results file: exit 1, exactly that word."""
    d = sets["mxfp8"]
    h = json.loads((d / "header.json").read_text())
    off = {f["name"]: i for i, f in enumerate(h["layout"]["fields"])}
    assert off["OUT"] == 3
    lines = _lines(d / "vectors.txt")
    words = lines[40].split(" ")
    col = 32 + 1 + 1 + 5  # IN[0..31], LEN, SCALE, then OUT[5]
    before = words[col]
    words[col] = f"{int(before, 16) ^ 1:02X}"
    lines[40] = " ".join(words)
    act = tmp_path / "results.txt"
    act.write_text("\n".join(lines) + "\n")
    assert main(["verify", str(d), "--actual", str(act)]) == 1
    out = capsys.readouterr().out
    c = h["counts"]  # OUT and FLAGS of each element, SCALE of each line; absent ones aside
    compared = (c["elements"] - c["flagged"]["absent"]) * 2 + c["lines"]
    assert c["flagged"]["absent"] > 0
    assert f": 1 of {compared} output words differ" in out
    assert f"(in 1 of {h['counts']['lines']} cases)" in out
    assert "case 40: " in out and "OUT[5] observed " + words[col] in out
    assert f"expected {before}" in out
    assert out.count("case ") == 1
    # the same in memh syntax
    mlines = _lines(d / "vectors.memh")
    mwords = mlines[40].split("_")
    mwords[col] = words[col]
    mlines[40] = "_".join(mwords)
    act2 = tmp_path / "results.memh"
    act2.write_text("\n".join(mlines) + "\n")
    assert main(["verify", str(d), "--actual", str(act2)]) == 1
    assert "case 40: " in capsys.readouterr().out


def test_failures_show_inputs_and_split_fields(sets, tmp_path, capsys):
    d = sets["float8_e4m3fn"]
    lines = _lines(d / "vectors.txt")
    i = next(k for k, ln in enumerate(lines) if ln.startswith("3F800000 "))  # 1.0
    assert lines[i] == "3F800000 38 00"
    lines[i] = "3F800000 39 00"
    act = tmp_path / "r.txt"
    act.write_text("\n".join(lines) + "\n")
    assert main(["verify", str(d), "--actual", str(act)]) == 1
    out = capsys.readouterr().out
    assert (
        f"case {i}: IN=3F800000 [0 01111111 00000000000000000000000 = 1] => OUT observed 39 "
        "[0 0111 001 = 1.125], expected 38 [0 0111 000 = 1]"
    ) in out


def test_max_errors_limits_the_printout(sets, tmp_path, capsys):
    d = sets["float8_e4m3fn"]
    lines = _lines(d / "vectors.txt")
    changed = 0
    for k in range(1, len(lines)):
        w = lines[k].split(" ")
        if w[2] == "00" and w[1] != "7F" and w[1] != "FF":
            w[1] = f"{int(w[1], 16) ^ 0x10:02X}"
            lines[k] = " ".join(w)
            changed += 1
        if changed == 30:
            break
    act = tmp_path / "r.txt"
    act.write_text("\n".join(lines) + "\n")
    assert main(["verify", str(d), "--actual", str(act), "--max-errors", "3"]) == 1
    out = capsys.readouterr().out
    assert out.count("  case ") == 3 and "... 27 more" in out


def _replace_first_out(d: Path, tmp_path: Path, old: str, new: str) -> Path:
    """A results file equal to an unscaled set's, with the first OUT word ``old`` -> ``new``."""
    lines = _lines(d / "vectors.txt")
    i = next(k for k, ln in enumerate(lines) if ln.split(" ")[1:2] == [old])
    w = lines[i].split(" ")
    w[1] = new
    lines[i] = " ".join(w)
    act = tmp_path / "r.txt"
    act.write_text("\n".join(lines) + "\n")
    return act


def test_nan_payloads_match_unless_strict(sets, tmp_path, capsys):
    """e4m3fn NaN codes 0x7F and 0xFF are both NaN: equal by default, not with --strict-nan."""
    d = sets["float8_e4m3fn"]
    act = _replace_first_out(d, tmp_path, "7F", "FF")
    assert main(["verify", str(d), "--actual", str(act)]) == 0
    capsys.readouterr()
    assert main(["verify", str(d), "--actual", str(act), "--strict-nan"]) == 1
    assert "observed FF" in capsys.readouterr().out


def test_virtual_float32_nan_payloads(sets, tmp_path, capsys):
    d = sets["e5m2"]
    act = _replace_first_out(d, tmp_path, "7FC00000", "7FC00123")
    assert main(["verify", str(d), "--actual", str(act)]) == 0
    assert main(["verify", str(d), "--actual", str(act), "--strict-nan"]) == 1


def test_flags_are_compared_unless_ignored(sets, tmp_path, capsys):
    d = sets["float8_e4m3fn"]
    lines = _lines(d / "vectors.txt")
    lines[5] = lines[5][:-2] + "00" if not lines[5].endswith("00") else lines[5][:-2] + "01"
    act = tmp_path / "r.txt"
    act.write_text("\n".join(lines) + "\n")
    assert main(["verify", str(d), "--actual", str(act)]) == 1
    assert "FLAGS observed" in capsys.readouterr().out
    assert main(["verify", str(d), "--actual", str(act), "--ignore-flags"]) == 0


@pytest.mark.parametrize("damage", ["input", "count", "syntax", "width"])
def test_results_of_another_set_or_bad_syntax_exit_2(sets, tmp_path, capsys, damage):
    d = sets["float8_e4m3fn"]
    lines = _lines(d / "vectors.txt")
    if damage == "input":
        lines[3] = "3F800001" + lines[3][8:]
        want = "does not belong to this set"
    elif damage == "count":
        lines = lines[:-1]
        want = "cases, but the set has"
    elif damage == "syntax":
        lines[3] = lines[3].replace(" ", "  Z ", 1)
        want = "expected 3 words"
    else:
        lines[3] = lines[3][:-2] + "000"
        want = "must have 2 hex digits"
    act = tmp_path / "r.txt"
    act.write_text("\n".join(lines) + "\n")
    assert main(["verify", str(d), "--actual", str(act)]) == 2
    assert want in capsys.readouterr().err


# ---------------------------------------------------------------------- engines
def test_all_engines_reports_an_installed_engine_that_fails_to_load_and_exits_2(
    sets, capsys, monkeypatch
):
    # an engine that fails to load is reported, never skipped: a run whose summary lists only
    # ref must not read as every engine verified
    import tcast

    loaded = tcast.load_engines()
    broken = type(loaded)(
        loaded.engines, {**loaded.failures, "broken": "ImportError: No module named 'triton'"}
    )
    monkeypatch.setattr(tcast, "load_engines", lambda: broken)
    d = str(next(iter(sets.values())))
    assert main(["verify", d, "--engine", "all", "--quiet"]) == 2
    captured = capsys.readouterr()
    assert "engine 'broken' is installed but failed to load: ImportError" in captured.err
    assert "failed to load" in captured.out  # and in the summary table
    assert "ref" in captured.out  # the engines that load are still verified


def test_every_installed_engine_passes_and_a_missing_one_exits_2(sets, capsys):
    dirs = [str(p) for p in sets.values()]
    assert main(["verify", *dirs, "--engine", "all"]) == 0
    out = capsys.readouterr().out
    assert "datatype" in out and "mismatches" in out
    assert main(["verify", dirs[0], "--engine", "nosuch"]) == 2
    assert "'nosuch' is not installed" in capsys.readouterr().err


def test_an_engine_that_disagrees_is_reported(sets, monkeypatch, capsys):
    """A fake engine that flips one code: verify names that case (engine path, not a file)."""

    def flip(r, castmode):
        if castmode == "actual":
            r.data = r.data.copy()
            r.data.reshape(-1)[7] ^= 1

    _install(monkeypatch, _AlteredRef("off", flip))
    assert main(["verify", str(sets["float8_e4m3fn"]), "--engine", "off"]) == 1
    out = capsys.readouterr().out
    assert "case 8: " in out and "OUT observed" in out


def test_load_refuses_and_describe_splits(sets):
    with pytest.raises(GoldenSetError):
        load(sets["mxfp8"] / "nope")
    assert describe_word(0x38, "e4m3fn") == "0 0111 000 = 1"
    assert describe_word(0x7F, "e8m0") == "01111111 = 1"
    assert describe_word(0x81, "int8") == "10000001 = -127"
    assert describe_word(0x05, "flags8") == "inexact|overflow"
    assert describe_word(0x3F800000, "float32") == "0 01111111 00000000000000000000000 = 1"


def test_an_edited_header_is_refused(sets, tmp_path, capsys):
    """Policy text or layout edited by hand: the header's own digest no longer matches."""
    d = _copy(sets["mxfp8"], tmp_path)
    text = (d / "header.json").read_text()
    (d / "header.json").write_text(text.replace('"castmode": "actual"', '"castmode": "virtual"'))
    assert main(["verify", str(d)]) == 2
    assert "does not match its header_sha256" in capsys.readouterr().err


def test_a_damaged_set_does_not_stop_the_others(sets, tmp_path, capsys):
    bad = _copy(sets["float8_e4m3fn"], tmp_path)
    (bad / "vectors.txt").write_text("x")
    assert main(["verify", str(bad), str(sets["mxfp8"])]) == 2
    captured = capsys.readouterr()
    assert "vectors.txt does not match" in captured.err
    assert "damaged" in captured.out and "mxfp8" in captured.out
    assert "all " in captured.out  # the intact set was still checked


def test_results_without_flags_are_accepted_with_ignore_flags(sets, tmp_path, capsys):
    d = sets["mxfp8"]
    lines = [" ".join(ln.split(" ")[:-32]) for ln in _lines(d / "vectors.txt")[1:]]
    act = tmp_path / "r.txt"
    act.write_text("\n".join(lines) + "\n")
    assert main(["verify", str(d), "--actual", str(act), "--ignore-flags"]) == 0
    assert main(["verify", str(d), "--actual", str(act)]) == 2
    assert "words" in capsys.readouterr().err


def test_the_summary_names_non_default_options(sets, capsys):
    assert main(["verify", str(sets["nvfp4"]), str(sets["e5m2"]), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "nvfp4 (stochastic, seed 1)" in out and "float8_e5m2 (virtual)" in out


def test_writememh_dumps_and_address_lines_are_read(sets, tmp_path, capsys):
    """A plain $writememh dump: no underscores, '@' address lines, lowercase digits."""
    d = sets["mxfp8"]
    body = [ln.replace("_", "").lower() for ln in _lines(d / "vectors.memh")[1:]]
    act = tmp_path / "dump.memh"
    act.write_text("// written by $writememh\n@0\n" + "\n".join(body) + "\n")
    assert main(["verify", str(d), "--actual", str(act)]) == 0


def test_failures_are_listed_in_column_order(sets, tmp_path, capsys):
    d = sets["mxfp8"]
    lines = _lines(d / "vectors.txt")
    w = lines[2].split(" ")
    w[33] = f"{int(w[33], 16) ^ 1:02X}"  # SCALE (after IN[0..31] and LEN)
    w[34] = f"{int(w[34], 16) ^ 1:02X}"  # OUT[0]
    w[66] = f"{int(w[66], 16) ^ 1:02X}"  # FLAGS[0]
    lines[2] = " ".join(w)
    act = tmp_path / "r.txt"
    act.write_text("\n".join(lines) + "\n")
    assert main(["verify", str(d), "--actual", str(act)]) == 1
    out = capsys.readouterr().out
    assert out.index("=> SCALE") < out.index("=> OUT[0]") < out.index("=> FLAGS[0]")


def test_negative_max_errors_is_refused(sets, capsys):
    assert main(["verify", str(sets["mxfp8"]), "--max-errors", "-1"]) == 2
    assert "--max-errors" in capsys.readouterr().err


def test_compress_sets_check_the_engines_packing(tmp_path, monkeypatch, capsys):
    """An engine whose compress output swaps the two nibbles of one byte fails a compress set,
    at exactly those two elements (its actual casts are right)."""
    d = tmp_path / "c"
    write(generate(Settings.of("mxfp4", castmode="compress")), d)
    packed = np.frombuffer((d / "packed.bin").read_bytes(), np.uint8)
    byte = int(np.argmax((packed & 0xF) != (packed >> 4)))  # the first byte with two codes
    assert (packed[byte] & 0xF) != (packed[byte] >> 4)

    swapped = []

    def swap(r, castmode):  # in the first compress call: the whole tiles (partial ones follow)
        if castmode == "compress" and not swapped:
            swapped.append(byte)
            r.data = r.data.copy()
            r.data[byte] = ((r.data[byte] & 0xF) << 4) | (r.data[byte] >> 4)

    _install(monkeypatch, _AlteredRef("badpack", swap))
    assert main(["verify", str(d), "--engine", "ref"]) == 0
    capsys.readouterr()
    assert main(["verify", str(d), "--engine", "badpack"]) == 1
    out = capsys.readouterr().out
    case, elem = divmod(2 * byte, 32)  # mxfp4 lines are 32 codes, packed two per byte
    assert f"case {case + 1}: " in out
    assert f"OUT[{elem}] observed" in out and f"OUT[{elem + 1}] observed" in out


def test_decode_sets_refuse_rows_this_tcast_does_not_enumerate(tmp_path, monkeypatch, capsys):
    d = tmp_path / "dec"
    write(generate(Settings.of("mxfp4", level="exhaustive")), d)
    assert main(["verify", str(d)]) == 0
    real = np.arange

    def shifted(*a, **k):  # the generator would enumerate element codes in another order
        out = real(*a, **k)
        return out[::-1].copy() if out.size == 16 else out

    monkeypatch.setattr("tcast_ref.golden._generate.np.arange", shifted)
    assert main(["verify", str(d)]) == 2
    assert "its CODE words are not the inputs this tcast generates" in capsys.readouterr().err


# --------------------------------------------------- results files: encodings, other sets
@pytest.mark.parametrize(
    ("bom", "codec"),
    [(b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")],
)
def test_results_file_with_a_byte_order_mark_is_read(sets, tmp_path, capsys, bom, codec):
    # UTF-8 and UTF-16 files with a byte order mark are read, never an "'ascii' codec" message
    d = sets["mxfp8"]
    text = (d / "vectors.txt").read_text()
    act = tmp_path / "r.txt"
    act.write_bytes(bom + text.encode(codec))
    assert main(["verify", str(d), "--actual", str(act)]) == 0
    assert "codec" not in capsys.readouterr().err


def test_results_file_with_non_ascii_bytes_names_the_byte(sets, tmp_path, capsys):
    d = sets["mxfp8"]
    act = tmp_path / "r.txt"
    act.write_bytes(b"# r\xe9sultats\n" + (d / "vectors.txt").read_bytes())
    assert main(["verify", str(d), "--actual", str(act)]) == 2
    err = capsys.readouterr().err
    assert "byte 3 (e9) is not ASCII" in err and "codec" not in err


def test_results_file_of_another_set_says_so(sets, tmp_path, capsys):
    # the file is named as another set's, not blamed for a word's width deep inside it
    names = sorted(sets)
    a, b = sets[names[0]], sets[names[1]]
    for suffix in ("txt", "memh"):
        act = tmp_path / f"r.{suffix}"
        act.write_bytes((b / f"vectors.{suffix}").read_bytes())
        assert main(["verify", str(a), "--actual", str(act)]) == 2
        err = capsys.readouterr().err
        assert "does not fit this set (it belongs to another set" in err, err
        assert "must have" not in err


class _GpuOnly(_AlteredRef):
    """The reference engine, but taking only arrays of a device this machine lacks."""

    def __init__(self):
        super().__init__("gpuonly", lambda r, cm: None)

    def accepts(self, a):
        return getattr(getattr(a, "device", None), "type", None) == "nosuchdevice"


def test_all_engines_reports_an_engine_without_its_device_and_still_passes(
    sets, capsys, monkeypatch
):
    # the Triton engine on a machine without a GPU: loaded, but no array here suits it

    _install(monkeypatch, _GpuOnly())
    d = str(next(iter(sets.values())))
    assert main(["verify", d, "--engine", "all", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "not run: engine 'gpuonly' takes no arrays this machine can make" in captured.err
    assert "gpuonly" in captured.out and "no device here" in captured.out
    assert captured.err.count("gpuonly") == 1  # reported once, not once per set


def test_an_engine_named_without_its_device_exits_2(sets, capsys, monkeypatch):
    _install(monkeypatch, _GpuOnly())
    d = str(next(iter(sets.values())))
    assert main(["verify", d, "--engine", "gpuonly"]) == 2
    assert "takes no arrays this machine can make" in capsys.readouterr().err


def test_device_option_runs_the_engine_on_that_device_or_says_why_not(sets, capsys):
    pytest.importorskip("torch")
    d = str(sets["mxfp8"])
    assert main(["verify", d, "--engine", "torch", "--device", "cpu", "--quiet"]) == 0
    assert main(["verify", d, "--engine", "torch", "--device", "nonsense!"]) == 2
    assert "--device 'nonsense!' is not a torch device" in capsys.readouterr().err
