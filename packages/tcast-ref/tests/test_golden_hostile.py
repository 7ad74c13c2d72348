"""`tcast verify` on sets whose header was edited and re-digested: refused, never trusted.

``tcast_ref.golden.header_digest`` is public, so a tampered set can carry matching digests.
Each tampering here recomputes every file's size and SHA-256 and the header's own digest, then
checks that verify refuses the set (exit 2, a message saying why) and still checks the next set
given; a tampered decode set is checked against its own cases as a results file (``--actual``).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tcast.cli import main
from tcast_ref.golden import header_digest, load
from tcast_ref.golden._files import header_bytes, npy_bytes, npz_bytes, sha256
from tcast_ref.golden._generate import set_files

GOLDEN = Path(__file__).resolve().parents[3] / "tests" / "golden"


def _copy(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    shutil.copytree(GOLDEN / name, d)
    return d


def _header(d: Path) -> dict:
    return json.loads((d / "header.json").read_text())


def _redigest(d: Path, h: dict, after: Callable[[dict], None] | None = None) -> None:
    """Write ``h`` with every listed file's size and SHA-256 and its own digest recomputed.

    ``after`` edits the header once the files' sizes and digests are in, before its own.
    """
    for name, meta in h.get("files", {}).items():
        p = d / name
        if isinstance(meta, dict) and p.is_file() and not p.is_symlink():
            data = p.read_bytes()
            meta["bytes"], meta["sha256"] = len(data), sha256(data)
    if after is not None:
        after(h)
    h["header_sha256"] = header_digest(h)
    (d / "header.json").write_bytes(header_bytes(h))


def _arrays(d: Path) -> dict[str, np.ndarray]:
    with np.load(d / "vectors.npz") as z:
        return {k: z[k] for k in z.files}


def _rewrite(d: Path, h: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write every file but the header again from ``arrays``, as the generator would.

    ``counts.lines`` of ``h`` follows the arrays; ``_redigest`` then writes the header.
    """
    lset = load(d)
    cols = {f.name: arrays[f.name.lower()] for f in lset.layout.fields}
    for name, data in set_files(lset.settings(), lset.layout, cols).items():
        (d / name).write_bytes(data)
    h["counts"]["lines"] = int(next(iter(arrays.values())).shape[0])


# each tampering edits set d (mxfp8, or the decode set) and its header h; _redigest follows
def _set(keys: str, value) -> Callable[[Path, dict], None]:
    def edit(d: Path, h: dict) -> None:
        *path, last = keys.split(".")
        node = h
        for k in path:
            node = node[k]
        node[last] = value

    return edit


def _drop(keys: str) -> Callable[[Path, dict], None]:
    def edit(d: Path, h: dict) -> None:
        *path, last = keys.split(".")
        node = h
        for k in path:
            node = node[k]
        del node[last]

    return edit


def _file_entry_text(d: Path, h: dict) -> None:
    h["files"]["vectors.txt"] = "x"


def _garbage_npz(d: Path, h: dict) -> None:
    (d / "vectors.npz").write_bytes(b"PK\x03\x04 not a zip at all")


def _pickled_npz(d: Path, h: dict) -> None:
    buf = io.BytesIO()
    np.savez(buf, **{**_arrays(d), "out": np.array([{"a": 1}], dtype=object)})
    (d / "vectors.npz").write_bytes(buf.getvalue())


def _compressed_npz(d: Path, h: dict) -> None:
    buf = io.BytesIO()
    np.savez_compressed(buf, **_arrays(d))
    (d / "vectors.npz").write_bytes(buf.getvalue())


def _no_outputs(d: Path, h: dict) -> None:
    h["layout"]["fields"] = [f for f in h["layout"]["fields"] if f["role"] == "input"]
    kept = {f["name"].lower() for f in h["layout"]["fields"]}
    (d / "vectors.npz").write_bytes(npz_bytes({k: v for k, v in _arrays(d).items() if k in kept}))


def _outputs_as_inputs(d: Path, h: dict) -> None:
    for f in h["layout"]["fields"]:
        f["role"] = "input"


def _text_word(name: str) -> Callable[[Path, dict], None]:
    def edit(d: Path, h: dict) -> None:
        lines = (d / name).read_text().splitlines(keepends=True)
        # the last OUT word of case 1 (mxfp8 txt: IN x32, LEN, SCALE, OUT x32, FLAGS x32)
        if name == "vectors.txt":
            words = lines[1].split(" ")
            words[65] = f"{int(words[65], 16) ^ 1:02X}"
            lines[1] = " ".join(words)
        else:
            digits = list(lines[1])
            i = len(lines[1].rstrip("\n").replace("_", "")) - 64 - 1  # OUT[31]'s low digit
            pos = [j for j, c in enumerate(digits) if c not in "_\n"][i]
            digits[pos] = "1" if digits[pos] == "0" else "0"
            lines[1] = "".join(digits)
        (d / name).write_text("".join(lines))

    return edit


def _outside(name: str) -> Callable[[Path, dict], None]:
    def edit(d: Path, h: dict) -> None:
        h["files"][name] = dict(h["files"]["vectors.txt"])

    return edit


def _symlinked_npz(d: Path, h: dict) -> None:
    elsewhere = d.parent / "elsewhere.npz"
    shutil.move(d / "vectors.npz", elsewhere)
    (d / "vectors.npz").symlink_to(elsewhere)


def _directory(name: str) -> Callable[[Path, dict], None]:
    def edit(d: Path, h: dict) -> None:
        (d / name).unlink()
        (d / name).mkdir()

    return edit


def _zero_len(d: Path, h: dict) -> None:
    a = _arrays(d)
    a["len"] = a["len"].copy()
    a["len"][0] = 0
    _rewrite(d, h, a)


def _all_absent(d: Path, h: dict) -> None:
    a = _arrays(d)
    a["flags"] = np.full_like(a["flags"], 0x80)
    _rewrite(d, h, a)


def _size(value: int) -> Callable[[Path, dict], Callable[[dict], None]]:
    def edit(d: Path, h: dict) -> Callable[[dict], None]:
        return lambda h: h["files"]["vectors.txt"].update(bytes=value)

    return edit


def _huge_npy_shape(d: Path, h: dict) -> None:
    """flags.npy declares 2**40 elements and holds 64 bytes; the zip is consistent."""
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        head, {"descr": "|u1", "fortran_order": False, "shape": (2**40,)}
    )
    members = {f"{k}.npy": npy_bytes(v) for k, v in _arrays(d).items()}
    members["flags.npy"] = head.getvalue() + bytes(64)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        for name, data in sorted(members.items()):
            z.writestr(name, data)
    (d / "vectors.npz").write_bytes(buf.getvalue())


def _cut(lines: int) -> Callable[[Path, dict], None]:
    def edit(d: Path, h: dict) -> None:
        _rewrite(d, h, {k: v[:lines] for k, v in _arrays(d).items()})

    return edit


def _word(name: str, line: int, index: int) -> Callable[[Path, dict], None]:
    """Flip the low bit of one input word; every form of the set follows."""

    def edit(d: Path, h: dict) -> None:
        a = _arrays(d)
        a[name] = a[name].copy()
        a[name][line, index] ^= 1
        _rewrite(d, h, a)

    return edit


LONG = "x" * 100000
#: The decode set tampered with: every code of e2m1 under every code of a 4-bit exponent scale.
DECODE = "e2m1_e4m0_t32"

TAMPERINGS = {
    "bytes_2_40": (_size(2**40), "files.vectors.txt.bytes must lie in 0 to"),
    "bytes_10_9": (_size(10**9), "vectors.txt does not match its size"),
    "bytes_2_70": (_size(2**70), "files.vectors.txt.bytes must lie in 0 to"),
    "huge_npy_shape": (_huge_npy_shape, "flags has shape (1099511627776,)"),
    "name_other": (_set("datatype.name", "nvfp4"), "'nvfp4' is not a name of its datatype"),
    "name_surrogate": (_set("datatype.name", "\ud800"), "datatype.name '\\ud800' is not"),
    "name_newline": (_set("datatype.name", "mxfp8\nforged"), "'mxfp8\\nforged' is not"),
    "long_name": (_set("datatype.name", LONG), "datatype.name must be 1 to 200"),
    "long_level": (_set("level", LONG), "(100000 characters)"),
    "long_input_dtype": (_set("input_dtype", LONG), "(100000 characters)"),
    "long_castmode": (_set("modes.castmode", LONG), "xxxxx"),
    "long_roundmode": (_set("modes.roundmode", LONG), "xxxxx"),
    "long_scalemode": (_set("modes.scalemode", LONG), "xxxxx"),
    "long_operation": (_set("operation", LONG), "(100000 characters)"),
    "long_sha256": (
        lambda d, h: lambda h: h["files"]["vectors.txt"].update(sha256=LONG),
        "64 lowercase hex digits, not 'xxx",
    ),
    "cut_to_one_case": (_cut(1), "its IN words are not the inputs this tcast generates"),
    "in_word": (_word("in", 3, 5), "its IN words are not the inputs"),
    "random_tiles": (_set("cases.inputs.random_tiles", 127), "its IN words are not the inputs"),
    "cases_text": (_set("cases.inputs.order", "anything"), "its cases entry does not describe"),
    "lines": (_set("counts.lines", 275), "shape"),
    "lines_text": (_set("counts.lines", "276"), "counts.lines must be int"),
    "no_modes": (_drop("modes"), "has no 'modes'"),
    "no_random": (_drop("random"), "has no 'random'"),
    "no_code": (_drop("datatype.code"), "datatype has no 'code'"),
    "huge_code": (_set("datatype.code", "e4m3fn" * 2000), "1 to 200 characters"),
    "seed_text": (_set("random.seed", "0"), "random.seed must be int"),
    "seed_negative": (_set("random.seed", -1), "-1; regenerate it"),
    "input_dtype_other": (_set("input_dtype", "int8"), "'int8'; regenerate it"),
    "schema_true": (_set("schema_version", True), "schema_version must be an integer, not True"),
    "saturate_text": (_set("modes.saturate", "yes"), "modes.saturate must be bool"),
    "float16": (_set("input_dtype", "float16"), "field 'IN' has bits 32, not 16"),
    "file_entry_text": (_file_entry_text, "files.vectors.txt has no 'bytes'"),
    "garbage_npz": (_garbage_npz, "vectors.npz is not a set's zip"),
    "pickled_npz": (_pickled_npz, "vectors.npz"),
    "compressed_npz": (_compressed_npz, "compressed members"),
    "no_outputs": (_no_outputs, "is not the layout"),
    "outputs_as_inputs": (_outputs_as_inputs, "is not the layout"),
    "txt_word": (_text_word("vectors.txt"), "vectors.txt is not the generator's canonical"),
    "memh_word": (_text_word("vectors.memh"), "vectors.memh is not the generator's canonical"),
    "parent_path": (_outside("../../other/vectors.txt"), "files lists '../../other"),
    "absolute_path": (_outside("/etc/hostname"), "files lists '/etc/hostname'"),
    "symlink": (_symlinked_npz, "vectors.npz is not a plain file"),
    "txt_directory": (_directory("vectors.txt"), "vectors.txt is not a plain file"),
    "npz_directory": (_directory("vectors.npz"), "vectors.npz is not a plain file"),
    "zero_len": (_zero_len, "LEN words"),
    "all_absent": (_all_absent, "absent flags"),
    # decode sets, verified against a results file made for the tampered set (--actual), so
    # only the check that the inputs are the ones the settings generate can refuse them
    "decode_cut_to_one_case": (_cut(1), "its CODE words are not the inputs", DECODE),
    "decode_code_word": (_word("code", 37, 0), "its CODE words are not the inputs", DECODE),
    "decode_scale_word": (_word("scale", 200, 0), "its SCALE words are not the inputs", DECODE),
    "decode_cases_text": (
        _set("cases.inputs.element_codes", "anything"),
        "its cases entry does not describe",
        DECODE,
    ),
}


@pytest.fixture(scope="module")
def decode_set(tmp_path_factory) -> Path:
    """A small decode set (16 element codes x 16 scale codes), as ``tcast golden`` writes it."""
    d = tmp_path_factory.mktemp("golden") / DECODE
    assert main(["golden", DECODE, "--level", "exhaustive", "--out", str(d), "--quiet"]) == 0
    return d


@pytest.mark.parametrize("tamper", sorted(TAMPERINGS))
def test_a_redigested_tampering_is_refused_and_the_next_set_still_checked(
    tmp_path, capsys, request, tamper
):
    edit, why, *decode = TAMPERINGS[tamper]
    if decode:
        d = tmp_path / DECODE
        shutil.copytree(request.getfixturevalue("decode_set"), d)
    else:
        d = _copy(tmp_path, "mxfp8")
    h = _header(d)
    after = edit(d, h)
    _redigest(d, h, after)
    good = GOLDEN / "float8_e5m2"
    if decode:  # the tampered set's own cases as a device's results: every word agrees
        results = tmp_path / "results.txt"
        shutil.copyfile(d / "vectors.txt", results)
        args = [str(d), "--actual", str(results)]
    else:
        args = [str(d), str(good)]
    assert main(["verify", *args]) == 2
    captured = capsys.readouterr()
    assert why in captured.err, captured.err
    assert "Traceback" not in captured.err
    if not decode:  # --actual checks one set
        assert f"{good}: ref: all 4092 output words of 2046 cases match" in captured.out
    assert len(captured.err) < 2000  # a message, not the tampered value


def test_a_set_of_no_cases_is_refused_not_passed(tmp_path, capsys):
    d = _copy(tmp_path, "float8_e5m2")
    a = {k: v[:0] for k, v in _arrays(d).items()}
    h = _header(d)
    h["counts"]["lines"] = 0
    (d / "vectors.npz").write_bytes(npz_bytes(a))
    for name in ("vectors.txt", "vectors.memh"):  # the legend line only
        (d / name).write_text((d / name).read_text().splitlines()[0] + "\n")
    _redigest(d, h)
    assert main(["verify", str(d)]) == 2
    assert "counts.lines must be 1 or more" in capsys.readouterr().err


def test_a_results_file_longer_than_the_set_allows_is_not_read_to_the_end(tmp_path, capsys):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    d = GOLDEN / "float8_e5m2"
    assert main(["verify", str(d), "--actual", "/dev/zero"]) == 2  # endless: read is bounded
    err = capsys.readouterr().err
    assert "longer than any results file of this set" in err
    assert err.count("/dev/zero") == 1  # the path is said once


def test_the_committed_sets_load_and_their_forms_agree():
    for d in sorted(GOLDEN.iterdir()):
        assert load(d).lines > 0
