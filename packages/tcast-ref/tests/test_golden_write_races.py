"""`tcast golden --out DIR`: what a user puts into DIR while a set is written is never lost."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tcast.cli import main
from tcast_ref.golden import _files, load

COMMITTED = Path(__file__).resolve().parents[3] / "tests" / "golden" / "float8_e5m2"
DEAD = 2**22 + 4321  # above the default pid_max: no such process


def _tree(d: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(d)): p.read_bytes() if p.is_file() else None for p in sorted(d.rglob("*"))
    }


def _old_set(tmp_path: Path) -> Path:
    d = tmp_path / "k"
    shutil.copytree(COMMITTED, d)
    return d


def _golden(out: Path | str, *extra: str) -> int:
    return main(["golden", "float8_e5m2", "--seed", "9", "--out", str(out), "--quiet", *extra])


def _during_write(monkeypatch, action) -> None:
    """Run ``action`` after the new set's files are written, before they replace the old."""
    real = _files._write_files

    def write_then_act(d, contents):
        real(d, contents)
        action()

    monkeypatch.setattr(_files, "_write_files", write_then_act)


def test_a_file_added_to_the_old_set_while_writing_refuses_and_is_kept(
    tmp_path, monkeypatch, capsys
):
    d = _old_set(tmp_path)
    before = _tree(d)
    _during_write(monkeypatch, lambda: (d / "dut_results.txt").write_text("precious\n"))
    assert _golden(d) == 2
    err = capsys.readouterr().err
    assert "dut_results.txt" in err and "not replacing" in err
    assert (d / "dut_results.txt").read_text() == "precious\n"
    del (after := _tree(d))["dut_results.txt"]
    assert after == before  # the old set is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k"]  # no scratch left


def test_a_set_file_changed_during_the_swap_undoes_every_move(tmp_path, monkeypatch, capsys):
    d = _old_set(tmp_path)
    before = _tree(d)
    real = os.rename

    def rename_then_touch(src, dst):
        real(src, dst)
        if Path(dst).name == "vectors.txt" and ".k.old-" in str(dst):
            with open(dst, "ab") as f:  # a writer that still had the file open
                f.write(b"x")

    monkeypatch.setattr(_files.os, "rename", rename_then_touch)
    assert _golden(d) == 2
    assert "vectors.txt changed" in capsys.readouterr().err
    after = _tree(d)
    assert after.pop("vectors.txt") == before.pop("vectors.txt") + b"x"  # kept, not deleted
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k"]


def test_a_failure_while_moving_the_new_files_in_restores_the_old_set(tmp_path, monkeypatch):
    d = _old_set(tmp_path)
    before = _tree(d)
    real = _files._move_no_replace

    def fail_on_header(src, dst):
        if dst.name == "header.json":
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(_files, "_move_no_replace", fail_on_header)
    assert _golden(d) == 2
    assert _tree(d) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k"]


def test_out_dot_writes_into_the_current_directory_and_replaces_its_set(tmp_path, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert _golden(".") == 0
    first = _tree(here)
    assert sorted(first) == ["header.json", "vectors.memh", "vectors.npz", "vectors.txt"]
    assert main(["golden", "float8_e5m2", "--seed", "3", "--out", ".", "--quiet"]) == 0
    assert _tree(here)["vectors.txt"] != first["vectors.txt"]
    load(".")  # every file matches its header
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here"]


def test_a_killed_runs_partial_scratch_is_cleaned_and_foreign_ones_are_kept(tmp_path):
    d = _old_set(tmp_path)
    # a run killed while writing: the marker, then a partial vectors.txt, no header yet
    partial = tmp_path / f".k.tmp-{DEAD}-abc"
    partial.mkdir()
    (partial / _files.PARTIAL).touch()
    (partial / "vectors.txt").write_bytes(b"0" * 1000)
    # the same pattern holding a file that is not a set's, or without the marker
    foreign = tmp_path / f".k.tmp-{DEAD}-mine"
    foreign.mkdir()
    (foreign / _files.PARTIAL).touch()
    (foreign / "notes.txt").write_text("keep")
    unmarked = tmp_path / f".k.old-{DEAD}-nomark"
    unmarked.mkdir()
    (unmarked / "vectors.txt").write_text("keep")
    # a live process's write in progress
    live = tmp_path / f".k.tmp-{os.getppid()}-live"
    live.mkdir()
    (live / _files.PARTIAL).touch()
    assert _golden(d) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["k", foreign.name, unmarked.name, live.name]
    )
    assert (foreign / "notes.txt").read_text() == "keep"
    assert (unmarked / "vectors.txt").read_text() == "keep"


def test_a_set_left_half_swapped_by_a_killed_run_is_replaced(tmp_path):
    d = _old_set(tmp_path)
    (d / "header.json").unlink()  # killed after the old header moved out
    (d / _files.PARTIAL).touch()
    assert _golden(d) == 0
    assert not (d / _files.PARTIAL).exists()
    load(d)


@pytest.mark.parametrize("extra", ["notes.txt", "packed.bin"])
def test_a_half_swapped_directory_with_other_files_is_refused(tmp_path, capsys, extra):
    d = _old_set(tmp_path)
    (d / "header.json").unlink()
    (d / _files.PARTIAL).touch()
    (d / extra).mkdir()  # a folder, even under a set file's name, is not the set's
    before = _tree(d)
    assert _golden(d) == 2
    assert extra in capsys.readouterr().err
    assert _tree(d) == before
