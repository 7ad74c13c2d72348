"""`tcast golden`: files, layout, coverage levels, reproducibility and atomic writing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tcast
from tcast import SpecError, UnsupportedError
from tcast.cli import main
from tcast_ref import golden
from tcast_ref.golden import Settings, generate, write
from tcast_ref.golden import _files as files_mod
from tcast_ref.golden._random import Stream

F32 = np.float32


def _gen(tmp_path: Path, name: str = "float8_e4m3fn", sub: str = "s", **kw) -> Path:
    out = tmp_path / sub
    write(generate(Settings.of(name, **kw)), out)
    return out


def _words(path: Path, memh: bool) -> list[list[str]]:
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith("#") or line.startswith("//"):
            continue
        rows.append(line.split("_") if memh else line.split(" "))
    return rows


# ------------------------------------------------------------------ files & header
@pytest.mark.parametrize("name", ["float8_e4m3fn", "mxfp8", "nvfp4", "mxint8"])
def test_the_three_forms_hold_the_same_cases(tmp_path, name):
    """vectors.txt, vectors.memh and vectors.npz agree word for word with the header layout."""
    d = _gen(tmp_path, name)
    h = json.loads((d / "header.json").read_text())
    fields = h["layout"]["fields"]
    txt, memh = _words(d / "vectors.txt", False), _words(d / "vectors.memh", True)
    assert txt == memh
    assert len(txt) == h["counts"]["lines"]
    z = np.load(d / "vectors.npz")
    col = 0
    for f in fields:
        arr = z[f["name"].lower()]
        assert arr.shape == (len(txt), f["count"])
        for k in range(f["count"]):
            got = [int(r[col + k], 16) for r in txt]
            assert all(len(r[col + k]) == f["hex_digits"] for r in txt)
            assert got == arr[:, k].astype(np.int64).tolist()
        col += f["count"]
    assert col == len(txt[0]) == h["layout"]["words_per_line"]
    # one memh word = memh_word_bits / 4 hex digits, and the ranges tile it exactly
    assert all(len("".join(r)) * 4 == h["layout"]["memh_word_bits"] for r in memh)
    ranges = h["layout"]["memh_ranges"]
    assert ranges[0]["msb"] == h["layout"]["memh_word_bits"] - 1 and ranges[-1]["lsb"] == 0
    first = (d / "vectors.txt").read_text().splitlines()[0]
    assert first.startswith("# IN") and "OUT" in first and "FLAGS" in first


def test_header_names_every_setting_and_every_file_digest(tmp_path):
    d = _gen(tmp_path, "nvfp4", roundmode="stochastic", seed=5)
    h = json.loads((d / "header.json").read_text())
    assert h["schema_version"] == golden.SCHEMA_VERSION
    assert h["tcast_version"] == tcast.__version__
    assert h["operation"] == "cast"
    dt = h["datatype"]
    assert dt["code"] == "e2m1f_e4m3fn_float32_t16"
    assert dt["element"]["style"] == "finite" and dt["element"]["max"] == "6"
    assert dt["scale"]["code"] == "e4m3fn" and dt["scale"]["bias"] == 7
    assert dt["tensor_scale"]["code"] == "float32"
    assert h["modes"] == {
        "castmode": "actual",
        "roundmode": "stochastic",
        "scalemode": "floor",
        "saturate": True,
        "scalemode_applies": False,
    }
    assert h["random"]["seed"] == 5 and "Philox4x32-10" in h["random"]["generator"]
    assert {"rounding", "two_level", "float_scale", "nonfinite_block"} <= set(h["policies"])
    assert h["cases"]["geometry"]["lines_per_tensor"] == 8
    assert "padding" in h["cases"]["geometry"]
    assert set(h["flags"]) == set(golden.FLAGS)
    on_disk = sorted(p.name for p in d.iterdir() if p.name != "header.json")
    assert sorted(h["files"]) == on_disk == ["vectors.memh", "vectors.npz", "vectors.txt"]
    for name, meta in h["files"].items():
        data = (d / name).read_bytes()
        assert meta["bytes"] == len(data)
        import hashlib

        assert meta["sha256"] == hashlib.sha256(data).hexdigest()


def test_compress_sets_add_the_packed_stream(tmp_path):
    """packed.bin is the kept codes of all lines in line order, packed as SEMANTICS.md §8."""
    d = _gen(tmp_path, "mxfp4", castmode="compress")
    z = np.load(d / "vectors.npz")
    codes = z["out"].reshape(-1).astype(np.uint8)
    packed = np.frombuffer((d / "packed.bin").read_bytes(), np.uint8)
    # independent unpacking: low nibble first (torch float4_e2m1fn_x2 order)
    unpacked = np.stack([packed & 0xF, packed >> 4], axis=1).reshape(-1)
    assert np.array_equal(unpacked[: codes.size], codes)
    assert "packed.bin" in json.loads((d / "header.json").read_text())["files"]


def test_sparse_compress_sets_add_the_packed_mask(tmp_path):
    d = _gen(tmp_path, "e2m1f_e8m0_t32n2m4", castmode="compress")
    z = np.load(d / "vectors.npz")
    words = z["mask"].astype(np.uint64)
    keep = ((words[:, :, None] >> np.arange(32, dtype=np.uint64)) & 1).reshape(len(words), -1)
    keep = keep.astype(bool)
    whole = (z["len"] == 32).all(axis=1)
    assert keep[whole].sum() == keep[whole].size // 2  # 2 of every 4
    flags = z["flags"]
    absent = (flags & golden.FLAGS["absent"]) != 0
    assert absent.any() and not keep[absent].any()
    assert (flags[absent] == golden.FLAGS["absent"]).all()
    assert np.array_equal((flags & golden.FLAGS["pruned"]) != 0, ~keep & ~absent)
    assert np.all(z["out"][~keep] == 0)
    mask_bytes = np.frombuffer((d / "packed_mask.bin").read_bytes(), np.uint8)
    assert np.array_equal(
        np.unpackbits(mask_bytes, bitorder="little")[: keep.size], keep.reshape(-1)
    )
    packed = np.frombuffer((d / "packed.bin").read_bytes(), np.uint8)
    assert packed.size == keep.sum() // 2


def test_npz_is_written_without_numpy_savez_and_loads(tmp_path):
    a = {"b": np.arange(6, dtype=np.uint16).reshape(2, 3), "a": np.array([True, False])}
    data = files_mod.npz_bytes(a)
    assert data == files_mod.npz_bytes(dict(reversed(list(a.items()))))
    p = tmp_path / "x.npz"
    p.write_bytes(data)
    z = np.load(p)
    assert z["b"].dtype == np.uint16 and np.array_equal(z["b"], a["b"])
    assert np.array_equal(z["a"], a["a"])
    # the member bytes are exactly what numpy's own writer produces for these arrays
    import io

    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(a["b"]), version=(1, 0))
    assert files_mod.npy_bytes(a["b"]) == buf.getvalue()


# --------------------------------------------------------------- reproducibility
def test_same_command_same_bytes(tmp_path):
    a = _gen(tmp_path, "mxfp6e3", "a", roundmode="stochastic", seed=3)
    b = _gen(tmp_path, "mxfp6e3", "b", roundmode="stochastic", seed=3)
    for p in a.iterdir():
        assert p.read_bytes() == (b / p.name).read_bytes(), p.name


def test_seed_and_options_change_the_set(tmp_path):
    a = _gen(tmp_path, "float8_e5m2", "a", seed=1)
    b = _gen(tmp_path, "float8_e5m2", "b", seed=2)
    assert (a / "vectors.txt").read_bytes() != (b / "vectors.txt").read_bytes()


@pytest.mark.parametrize(
    ("name", "k"), [("float8_e4m3fn", 8), ("mxfp8", 8), ("bfloat16_e8m0_t32", 16)]
)
def test_stochastic_sets_hold_k_bit_rbits_from_the_documented_philox_stream(
    tmp_path, capsys, name, k
):
    """RBITS is a K-bit column (K = tcast.rbits_width: 8, ``rbits8``, 2 digits; 16,
    ``rbits16``, 4 digits) and RBITS[i] = the low K bits of word 0 of Philox at counter
    2**40 + i, i = line * elements_per_line + element (checked with tcast's pure-Python Philox,
    not the NumPy one that generated them): the case stream, not the seeded cast's rule. The
    set verifies through the reference engine."""
    assert tcast.rbits_width(name) == k
    d, seed = tmp_path / "s", 2**40 + 99
    argv = ["golden", name, "--roundmode", "stochastic", "--seed", str(seed), "--count", "1"]
    assert main([*argv, "--out", str(d), "--quiet"]) == 0
    h = json.loads((d / "header.json").read_text())
    field = next(f for f in h["layout"]["fields"] if f["name"] == "RBITS")
    assert (field["bits"], field["format"], field["hex_digits"]) == (k, f"rbits{k}", k // 4)
    assert field["role"] == "input"
    assert f"the low {k} bits of word 0 at counter {1 << 40}" in h["random"]["rbits_stream"]
    rb = np.load(d / "vectors.npz")["rbits"]
    assert rb.dtype == (np.uint8 if k == 8 else np.uint16)
    assert rb.shape == (h["counts"]["lines"], field["count"])
    key = (seed & 0xFFFFFFFF, seed >> 32)
    want = []
    for i in range(rb.size):
        c = (1 << 40) + i
        want.append(tcast.philox4x32((c & 0xFFFFFFFF, c >> 32, 0, 0), key)[0] % (1 << k))
    assert rb.reshape(-1).tolist() == want
    capsys.readouterr()
    assert main(["verify", str(d), "--engine", "ref"]) == 0
    assert "ref: all" in capsys.readouterr().out


def test_the_case_stream_is_word_0_at_consecutive_counters():
    key = (0xA4093822, 0x299F31D0)
    seed = (key[1] << 32) | key[0]
    for start in (0, 3, (1 << 32) - 5):
        want = [
            tcast.philox4x32((c & 0xFFFFFFFF, c >> 32, 0, 0), key)[0]
            for c in range(start, start + 10)
        ]
        assert Stream(seed, start).words(10).tolist() == want


# --------------------------------------------------------------------- atomicity
@pytest.mark.parametrize("out", ["set", "new/parents/set"])
def test_a_failed_write_leaves_nothing_behind(tmp_path, monkeypatch, out):
    gs = generate(Settings.of("mxfp8"))
    calls = {"n": 0}
    real = os.fsync

    def flaky(fd):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk full (simulated)")
        real(fd)

    monkeypatch.setattr(files_mod.os, "fsync", flaky)
    with pytest.raises(OSError, match="disk full"):
        write(gs, tmp_path / out)
    assert list(tmp_path.iterdir()) == []  # the parents it created, too


def test_a_failed_rewrite_keeps_the_old_set(tmp_path, monkeypatch):
    old = _gen(tmp_path, "float8_e5m2", "set")
    before = {p.name: p.read_bytes() for p in old.iterdir()}
    gs = generate(Settings.of("float8_e5m2", seed=8))

    def boom(fd):
        raise OSError("simulated")

    monkeypatch.setattr(files_mod.os, "fsync", boom)
    with pytest.raises(OSError):
        write(gs, old)
    assert {p.name: p.read_bytes() for p in old.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["set"]


def test_rewrite_replaces_a_set_and_refuses_other_directories(tmp_path):
    d = _gen(tmp_path, "float8_e5m2", "set")
    _gen(tmp_path, "float8_e5m2", "set", seed=4)
    assert json.loads((d / "header.json").read_text())["random"]["seed"] == 4
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match=r"not empty and has no header\.json"):
        write(generate(Settings.of("float8_e5m2")), other)
    assert (other / "notes.txt").read_text() == "keep me"


def _tree(d: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(d)): p.read_bytes() if p.is_file() else None for p in sorted(d.rglob("*"))
    }


def test_out_over_a_set_with_user_files_added_is_refused_and_nothing_deleted(tmp_path, capsys):
    # a DUT results file and a log folder a user put inside an old set stay, and exit 2 says why
    d = _gen(tmp_path, "float8_e5m2", "set")
    (d / "my_dut_results.txt").write_text("00 01\n")
    (d / "sim_logs").mkdir()
    (d / "sim_logs" / "run1.log").write_text("ok")
    before = _tree(tmp_path)
    assert main(["golden", "float8_e5m2", "--out", str(d), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "my_dut_results.txt" in err and "sim_logs" in err and "not replacing" in err
    assert _tree(tmp_path) == before


def test_out_over_another_tools_header_json_is_refused(tmp_path, capsys):
    # some other tool's header.json (listing a data.csv) is not a set's: nothing is replaced
    d = tmp_path / "tool"
    d.mkdir()
    (d / "header.json").write_text('{"tool": "other", "files": {"data.csv": {}}}')
    (d / "data.csv").write_text("a,b\n1,2\n")
    before = _tree(tmp_path)
    assert main(["golden", "float8_e5m2", "--out", str(d), "--quiet"]) == 2
    assert "not the header of a tcast golden-vector set" in capsys.readouterr().err
    assert _tree(tmp_path) == before


def test_out_over_a_set_whose_header_was_edited_is_refused(tmp_path, capsys):
    d = _gen(tmp_path, "float8_e5m2", "set")
    h = json.loads((d / "header.json").read_text())
    h["files"]["notes.txt"] = {"bytes": 1, "sha256": "0"}  # claims a user's file as its own
    (d / "header.json").write_text(json.dumps(h))
    (d / "notes.txt").write_text("x")
    assert main(["golden", "float8_e5m2", "--out", str(d), "--quiet"]) == 2
    assert (d / "notes.txt").read_text() == "x"


def test_out_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path):
    target = _gen(tmp_path, "float8_e5m2", "real")
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    assert main(["golden", "float8_e5m2", "--seed", "4", "--out", str(link), "--quiet"]) == 0
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert json.loads((target / "header.json").read_text())["random"]["seed"] == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]


def test_out_through_a_dangling_symlink_or_onto_a_file_is_refused(tmp_path, capsys):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "missing")
    assert main(["golden", "float8_e5m2", "--out", str(link), "--quiet"]) == 2
    assert link.is_symlink() and "symbolic link" in capsys.readouterr().err
    f = tmp_path / "file"
    f.write_text("keep")
    assert main(["golden", "float8_e5m2", "--out", str(f), "--quiet"]) == 2
    assert f.read_text() == "keep"


def test_a_killed_runs_temporary_directories_are_cleaned_by_the_next_run(tmp_path):
    d = _gen(tmp_path, "float8_e5m2", "set")
    # what a run killed mid-write leaves in DIR: a new set and an old one, with a dead pid
    dead = 2**22 + 12345  # above the default pid_max: no such process
    for kind in ("tmp", "old"):
        stale = d / f".tcast-golden-{kind}-{dead}-0123abcd-abc"
        stale.mkdir()
        for p in d.iterdir():
            if p.is_file():
                (stale / p.name).write_bytes(p.read_bytes())
    # a directory of the same pattern holding a user's file is left alone
    mine = d / f".tcast-golden-tmp-{dead}-0123abcd-mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("x")
    _gen(tmp_path, "float8_e5m2", "set", seed=4)
    # the old set's files are kept: a killed swap left there the only copy of that set
    assert sorted(p.name for p in d.iterdir() if p.is_dir()) == [
        f".tcast-golden-old-{dead}-0123abcd-abc",
        mine.name,
    ]


# ------------------------------------------------------------------------ levels
def _inputs(d: Path) -> np.ndarray:
    return np.load(d / "vectors.npz")["in"].reshape(-1).view(F32)


def test_level1_unscaled_covers_codes_midpoints_neighbours_and_specials(tmp_path):
    d = _gen(tmp_path, "float8_e4m3fn")
    x = _inputs(d)
    bits = set(x.view(np.uint32).tolist())
    # computed with ml_dtypes, not with tcast: every finite value, both signs
    vals = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    pos = np.unique(vals[np.isfinite(vals) & (vals > 0)])
    for v in np.concatenate([pos, -pos, [0.0, 448.0, 464.0, 480.0]]):
        assert np.float32(v).view(np.uint32) in bits, v
    mids = (pos[:-1] + pos[1:]) / 2
    for m in mids:
        b = int(np.float32(m).view(np.uint32))
        assert {b - 1, b, b + 1} <= bits, m
    for special in (0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0x00000001, 0x7F7FFFFF):
        assert special in bits
    # the overflow boundary (max, the tie 464, 480, 896) with its neighbours, both signs
    for edge in (464.0, 480.0, 896.0):
        for sign in (0, 0x80000000):
            b = int(np.float32(edge).view(np.uint32)) | sign
            assert {b - 1, b, b + 1} <= bits, (edge, sign)
    assert 2000 <= x.size <= 5000


def test_level1_tiles_reach_both_scale_ends_and_non_finite_blocks(tmp_path):
    d = _gen(tmp_path, "mxfp8")
    z = np.load(d / "vectors.npz")
    scale = z["scale"].reshape(-1)
    # the largest reachable code: amax = float32 max, floor_log2 127, e4m3fn emax 8, bias 127
    top = 127 - 8 + 127
    finite_codes = set(scale.tolist()) - {255}
    assert {0, 1, top - 1, top} <= finite_codes and max(finite_codes) == top
    flags = z["flags"]
    nanblock = (flags & golden.FLAGS["nanblock"]) != 0
    assert np.array_equal(nanblock.all(axis=1), scale == 255)
    assert np.array_equal(nanblock.any(axis=1), scale == 255)


def test_every_finite_nvfp4_tile_is_in_a_finite_tensor(tmp_path):
    """NaN/Inf tiles make their whole 8-line tensor non-finite; they are grouped after filler
    tiles, so no line with only finite inputs is forced to NaN."""
    d = _gen(tmp_path, "nvfp4")
    z = np.load(d / "vectors.npz")
    whole = (z["len"] == 16).all(axis=1)  # the partial tiles follow, finite, in tensors of 8
    assert not whole[np.argmin(whole) :].any() and (~whole).sum() % 8 == 0
    z = {k: z[k][whole] for k in ("in", "flags")}
    x = z["in"].view(F32)
    finite_line = np.isfinite(x).all(axis=1)
    nanblock = ((z["flags"] & golden.FLAGS["nanblock"]) != 0).any(axis=1)
    assert np.array_equal(nanblock, ~finite_line)
    first_bad = int(np.argmax(~finite_line))
    assert first_bad > 0 and first_bad % 8 == 0 and not finite_line[first_bad:].any()


def test_level2_is_larger_and_exhaustive_covers_every_16_bit_input(tmp_path):
    one = json.loads((_gen(tmp_path, "float8_e5m2", "1") / "header.json").read_text())
    two = json.loads((_gen(tmp_path, "float8_e5m2", "2", level=2) / "header.json").read_text())
    assert 10 * one["counts"]["lines"] < two["counts"]["lines"]
    d = _gen(tmp_path, "float8_e5m2", "x", level="exhaustive")
    x = _inputs(d)
    assert x.size == 2 * 65536
    every = np.arange(65536, dtype=np.uint16)
    assert np.array_equal(
        x[:65536].view(np.uint32), every.view(np.float16).astype(F32).view(np.uint32)
    )
    assert np.array_equal(
        x[65536:].view(np.uint32), every.view(ml_dtypes.bfloat16).astype(F32).view(np.uint32)
    )
    h = json.loads((d / "header.json").read_text())
    assert len(h["digests"]["outputs_sha256"]) == 64
    d16 = _gen(tmp_path, "float8_e5m2", "x16", level="exhaustive", input_dtype="bfloat16")
    assert np.array_equal(np.load(d16 / "vectors.npz")["in"].reshape(-1), every)


def test_exhaustive_decode_of_mxfp4_matches_ml_dtypes_times_the_scale(tmp_path):
    """Every element code x every e8m0 code: value = float4_e2m1fn(code) * 2**(scale - 127)
    (NaN at scale 0xFF), computed with ml_dtypes and float64, not with tcast."""
    d = _gen(tmp_path, "mxfp4", level="exhaustive")
    h = json.loads((d / "header.json").read_text())
    assert h["operation"] == "decode"
    z = np.load(d / "vectors.npz")
    code, scale = z["code"].reshape(-1), z["scale"].reshape(-1).astype(np.int64)
    assert code.size == 16 * 256
    assert set(zip(code.tolist(), scale.tolist(), strict=True)) == {
        (c, s) for c in range(16) for s in range(256)
    }
    elem = code.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    with np.errstate(over="ignore"):  # 6 * 2**127 overflows float32 to Inf (SEMANTICS 5.3)
        want = (elem * np.ldexp(1.0, scale - 127)).astype(F32)
    want[scale == 255] = np.nan
    got = z["value"].reshape(-1).view(F32)
    finite = ~np.isnan(want)
    assert np.array_equal(got[finite].view(np.uint32), want[finite].view(np.uint32))
    assert np.isnan(got[~finite]).all()


def test_exhaustive_decode_needs_an_enumerable_scale(tmp_path, capsys):
    with pytest.raises(UnsupportedError, match="at most 16 bits"):
        generate(Settings.of("int8_Fc", level="exhaustive"))


# ----------------------------------------------------------------------- options
@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"level": 3}, "level must be one of"),
        ({"input_dtype": "float64"}, "input dtype must be one of"),
        ({"seed": -1}, "seed must be"),
        ({"count": -5}, "count must be"),
        ({"roundmode": "up"}, "up"),
    ],
)
def test_bad_options_raise_spec_errors(kw, match):
    with pytest.raises(SpecError, match=match):
        Settings.of("mxfp8", **kw)


def test_cli_generates_and_reports(tmp_path, capsys):
    assert (
        main(
            [
                "golden",
                "mxfp8",
                "--out",
                str(tmp_path / "m"),
                "--count",
                "3",
                "--castmode",
                "virtual",
                "--input-dtype",
                "bfloat16",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "e4m3fn_e8m0_t32 cast level 1" in out
    h = json.loads((tmp_path / "m" / "header.json").read_text())
    assert h["modes"]["castmode"] == "virtual" and h["input_dtype"] == "bfloat16"
    assert [f["name"] for f in h["layout"]["fields"]] == ["IN", "LEN", "OUT", "FLAGS"]
    assert h["layout"]["fields"][2]["format"] == "bfloat16"
    assert (
        main(["golden", "e4m3fn", "--out", str(tmp_path / "q"), "--ieee-overflow", "--quiet"]) == 0
    )
    assert capsys.readouterr().out == ""
    assert json.loads((tmp_path / "q" / "header.json").read_text())["modes"]["saturate"] is False


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["golden", "mxfp9", "--out", "X"], "mxfp9"),
        (["golden", "--out", "X"], "DATATYPE or --core"),
        (["golden", "mxfp8", "--core", "--out", "X"], "DATATYPE or --core"),
        (["golden", "mxfp8", "--seed", "-3", "--out", "X"], "seed"),
    ],
)
def test_cli_errors_exit_2_with_a_message(tmp_path, capsys, argv, match):
    argv = [a.replace("X", str(tmp_path / "o")) for a in argv]
    assert main(argv) == 2
    assert match in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------- wide types, header, levels, options
def test_wide_destinations_sample_their_grid(tmp_path):
    """float32 as a destination: a sample of its values, named in the header (no 2**32 table)."""
    d = _gen(tmp_path, "float32")
    h = json.loads((d / "header.json").read_text())
    assert h["cases"]["inputs"]["grid"].startswith("a sample of the 2139095039 positive values")
    assert 2000 < h["counts"]["lines"] < 6000
    assert main(["verify", str(d)]) == 0


def test_sets_are_as_readable_as_any_new_directory(tmp_path):
    d = _gen(tmp_path, "float8_e5m2")
    umask = os.umask(0)
    os.umask(umask)
    assert (d.stat().st_mode & 0o777) == 0o777 & ~umask


def test_the_header_records_the_tile_order(tmp_path):
    d = _gen(tmp_path, "mxfp8")
    inputs = json.loads((d / "header.json").read_text())["cases"]["inputs"]
    assert inputs["pattern_order"] == list(golden._cases.PATTERNS)
    assert inputs["single_tile_order"] == ["zeros", "input_max"]
    # case 10*p + j + 1 is pattern j at position p: case 84 = overflow at k = 0
    k = inputs["scale_positions_k"]
    p, j = divmod(84 - 1, len(inputs["pattern_order"]))
    assert k[p] == 0 and inputs["pattern_order"][j] == "overflow"
    x = np.load(d / "vectors.npz")["in"].view(F32)
    zeros = len(k) * len(inputs["pattern_order"])
    assert np.all(x[zeros] == 0)  # the single 'zeros' tile follows the positions
    assert np.isin(np.abs(x[zeros + 1]), np.float32(np.finfo(np.float32).max)).any()


def test_float16_patterns_widen_by_integer_operations():
    """Every float16 pattern, widened with integer operations: the value equals NumPy's
    conversion, and NaN payloads (signalling bit included) are kept, shifted by 13 bits."""
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    w = golden._cases._widen_f16(every)
    ref = every.view(np.float16).astype(F32)
    nan = np.isnan(ref)
    assert np.array_equal(w[~nan].view(np.uint32), ref[~nan].view(np.uint32))
    bits = every[nan].astype(np.uint32)
    want = ((bits & 0x8000) << 16) | 0x7F800000 | ((bits & 0x3FF) << 13)
    assert np.array_equal(w[nan].view(np.uint32), want)


def test_no_stray_infinities_from_neighbour_steps(tmp_path):
    """bfloat16 inputs: a step up from the largest finite value would be Inf; it never is, so
    only the nan/inf patterns make non-finite tiles."""
    d = _gen(tmp_path, "uint8_ei", input_dtype="bfloat16")
    h = json.loads((d / "header.json").read_text())
    x = np.load(d / "vectors.npz")["in"].view(ml_dtypes.bfloat16).astype(F32)
    planned = 2 * len(h["cases"]["inputs"]["scale_positions_k"])
    assert int((~np.isfinite(x)).any(axis=1).sum()) == planned


def test_options_that_do_nothing_are_refused():
    with pytest.raises(SpecError, match="elements always saturate"):
        Settings.of("mxfp8", saturate=False)
    with pytest.raises(SpecError, match="exhaustive level has none"):
        Settings.of("float8_e4m3fn", level="exhaustive", count=5)


def test_level2_tiles_move_up_to_three_steps(tmp_path):
    h = json.loads((_gen(tmp_path, "mxfp4", level=2, count=4) / "header.json").read_text())
    assert h["cases"]["inputs"]["neighbour_steps"] == 3


@pytest.mark.parametrize("name", ["float8_e4m3fn", "mxfp8"])
def test_count_beyond_two_to_the_24_random_elements_is_refused_with_exit_2(tmp_path, capsys, name):
    # refused before any allocation, with the bound named (never a raw MemoryError)
    out = tmp_path / "o"
    assert main(["golden", name, "--count", "1000000000000", "--out", str(out)]) == 2
    assert "count must be an integer in [0, 16777216]" in capsys.readouterr().err
    assert not out.exists()


def test_count_times_tile_elements_beyond_the_bound_is_refused(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["golden", "mxfp8", "--count", str(2**20), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "give a count of at most 524288 for" in err
    assert not out.exists()


# --------------------------------------------------------- random stream buffering, progress
@pytest.mark.parametrize("start", [0, 5, 2**32 - 7, 2**64 - 9000])
def test_buffered_stream_gives_the_words_of_one_philox_call_however_split(start):
    from tcast_ref._philox import philox_word0

    rng = np.random.default_rng(start % 1000)
    sizes = [int(v) for v in rng.integers(0, 3000, 12)] + [0, 1, 4097]
    total = min(sum(sizes), 2**64 - start)
    s = Stream(0xC0FFEE, start)
    got = []
    for n in sizes:
        n = min(n, 2**64 - s.pos)
        got.append(s.words(n))
    want = philox_word0(0xC0FFEE, total, start)
    assert np.array_equal(np.concatenate(got), want)


def test_stream_refuses_words_past_counter_two_to_the_64():
    s = Stream(1, 2**64 - 3)
    assert s.words(3).size == 3
    with pytest.raises(SpecError, match="past 2\\*\\*64"):
        s.words(1)


def test_case_generation_advances_a_progress_bar(monkeypatch):
    # the input phase, the longest, shows progress from its start (a step per tile)
    from tcast_ref.golden import _generate as gen_mod

    bars = []

    class Bar:
        def __init__(self, total, desc, quiet):
            self.total, self.desc, self.done = total, desc, 0
            bars.append(self)

        def update(self, n=1):
            self.done += n

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

    monkeypatch.setattr(gen_mod, "progress", Bar)
    generate(Settings.of("mxfp8"), quiet=False)
    inputs = [b for b in bars if b.desc.startswith("inputs")]
    assert len(inputs) == 1 and inputs[0].total > 100
    assert inputs[0].done == inputs[0].total  # one step per tile, all of them
    assert bars.index(inputs[0]) == 0  # before the cast and format phases


def test_partial_tiles_follow_the_whole_tiles_and_are_cast_at_their_extent():
    """Level 1 mxfp8: extents 1, 3, 16 and 31 of the 32-element tile, four lines each, after
    the whole tiles; absent elements are IN 0, OUT 0, FLAGS absent only; each partial line is
    the cast of an array of its extent (tcast_ref), not of a zero-padded tile."""
    import tcast_ref

    gs = generate(Settings.of("mxfp8"))
    cols, inputs = gs.columns, gs.header["cases"]["inputs"]["partial_tiles"]
    lens = cols["LEN"][:, 0].astype(int)
    first = inputs["first_line"] - 1
    assert (lens[:first] == 32).all()
    assert lens[first:].tolist() == [n for n in (1, 3, 16, 31) for _ in range(4)]
    assert inputs["extents"] == [[1], [3], [16], [31]]
    absent = np.arange(32)[None, :] >= lens[:, None]
    assert (cols["IN"][absent] == 0).all() and (cols["OUT"][absent] == 0).all()
    assert (cols["FLAGS"][absent] == golden.FLAGS["absent"]).all()
    assert not (cols["FLAGS"][~absent] & golden.FLAGS["absent"]).any()
    for i in range(first, len(lens)):
        x = cols["IN"][i, : lens[i]].astype(np.uint32).view(np.float32).reshape(1, -1)
        r = tcast_ref.cast(x, tcast.mxfp8, castmode="actual")
        assert (np.asarray(r.data).reshape(-1) == cols["OUT"][i, : lens[i]]).all()
        assert int(np.asarray(r.scale).reshape(())) == int(cols["SCALE"][i, 0])


def test_partial_extents_of_2d_tiles_cover_each_segment_alone_and_both():
    from tcast_ref.golden._cases import partial_extents

    got = partial_extents((32, 32), (False, False), "1")
    assert (1, 1) in got and (31, 31) in got and (3, 32) in got and (32, 16) in got
    assert all(e != (32, 32) for e in got)
    assert partial_extents((32, 32), (True, False), "1") == [(32, 1), (32, 3), (32, 16), (32, 31)]
    assert len(partial_extents((32,), (False,), "2")) == 31
