"""`tcast golden --out DIR`: what a user puts into DIR while a set is written is never lost."""

from __future__ import annotations

import errno
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
        if Path(dst).name == "vectors.txt" and ".tcast-golden-old-" in str(dst):
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
        if dst.name == "header.json" and ".tcast-golden-tmp-" in str(src):  # not the undo
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


def _scratch(d: Path, kind: str, pid: int, token: str = "0123abcd", *files: str) -> Path:
    s = d / f".tcast-golden-{kind}-{pid}-{token}-x{len(list(d.iterdir()))}"
    s.mkdir()
    for name in files:
        (s / name).write_bytes(b"0" * 1000)
    return s


def test_a_killed_runs_partial_scratch_is_cleaned_and_foreign_ones_are_kept(tmp_path, capsys):
    d = _old_set(tmp_path)
    # a run killed while writing: the marker, then a partial vectors.txt, no header yet
    partial = _scratch(d, "tmp", DEAD, "0123abcd", _files.PARTIAL, "vectors.txt")
    # an earlier process that had this pid: dead too
    reused = _scratch(d, "tmp", os.getpid(), "0123abcd", _files.PARTIAL, "vectors.npz")
    # the same pattern holding a file that is not a set's
    foreign = _scratch(d, "tmp", DEAD, "0123abcd", _files.PARTIAL, "notes.txt")
    # a live process's write in progress, and another thread's of this process
    live = _scratch(d, "tmp", os.getppid(), "0123abcd", _files.PARTIAL)
    thread = _scratch(d, "tmp", os.getpid(), _files._TOKEN, _files.PARTIAL, "vectors.txt")
    # a run killed during the swap: the only copy of the set it replaced is kept and named
    old = _scratch(d, "old", DEAD, "0123abcd", _files.PARTIAL, "header.json")
    assert _golden(d) == 0
    assert "kept " + str(old) in capsys.readouterr().err
    assert not partial.exists() and not reused.exists()
    assert sorted(p.name for p in d.iterdir() if p.is_dir()) == sorted(
        p.name for p in (foreign, live, thread, old)
    )
    assert (foreign / "notes.txt").exists() and (old / "header.json").exists()
    load(d)  # the scratch directories do not stop the set from being one


def test_scratch_lives_inside_dir_and_no_move_leaves_it(tmp_path, monkeypatch):
    """Every rename and link stays inside DIR (DIR may be a mount point: EXDEV otherwise)."""
    d = _old_set(tmp_path)
    new = tmp_path / "new"
    moves = []

    def inside(*paths) -> bool:
        return all(Path(p).resolve().is_relative_to(out) for p in paths)

    def guard(real):
        def move(src, dst, *a, **kw):
            moves.append((src, dst))
            if not inside(src, dst):
                raise OSError(errno.EXDEV, "Invalid cross-device link")
            return real(src, dst, *a, **kw)

        return move

    monkeypatch.setattr(_files.os, "rename", guard(os.rename))
    monkeypatch.setattr(_files.os, "link", guard(os.link))
    for out in (d, new):  # an existing set and a new DIR
        moves.clear()
        assert _golden(out) == 0
        assert moves and all(inside(*m) for m in moves)
        load(out)
        assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


def test_undoing_a_swap_never_replaces_a_file_that_appeared(tmp_path, monkeypatch, capsys):
    d = _old_set(tmp_path)
    old_txt = (d / "vectors.txt").read_bytes()
    real = os.rename

    def rename_then_user_writes(src, dst):
        real(src, dst)
        if Path(src) == d / "vectors.txt" and Path(dst).parent != d:  # moved aside
            (d / "vectors.txt").write_text("precious\n")  # the user's, in the gap

    monkeypatch.setattr(_files.os, "rename", rename_then_user_writes)
    assert _golden(d) == 2
    err = capsys.readouterr().err
    assert (d / "vectors.txt").read_text() == "precious\n"
    kept = [p for p in tmp_path.rglob("vectors.txt") if p.read_bytes() == old_txt]
    assert len(kept) == 1 and str(kept[0].parent) in err  # the old file, kept and named
    monkeypatch.undo()
    assert _golden(d) == 2  # the next run: the user's file is not the set's, so DIR is refused
    assert "'vectors.txt'" in capsys.readouterr().err
    assert (d / "vectors.txt").read_text() == "precious\n"


class _Killed(BaseException):
    """A run killed at a chosen point (nothing of the write is undone)."""


def test_a_set_left_half_swapped_by_a_killed_run_is_replaced(tmp_path, monkeypatch):
    d = _old_set(tmp_path)
    real = _files._move_no_replace

    def killed_at_header(src, dst):
        if dst.name == "header.json" and ".tcast-golden-tmp-" in str(src):
            raise _Killed
        real(src, dst)

    monkeypatch.setattr(_files, "_move_no_replace", killed_at_header)
    monkeypatch.setattr(_files, "_undo", lambda *a: ["nothing undone"])
    with pytest.raises(_Killed):
        _golden(d)
    monkeypatch.undo()
    assert (d / _files.PARTIAL).exists() and not (d / "header.json").exists()
    assert _golden(d) == 0  # the marker records the new files the killed run moved in
    assert not (d / _files.PARTIAL).exists()
    load(d)


def _user_file(d: Path) -> None:
    (d / "vectors.txt").write_text("precious\n")


def _edited(d: Path) -> None:
    with open(d / "vectors.txt", "ab") as f:
        f.write(b"# a note\n")


def _empty_marker(d: Path) -> None:  # a marker that records nothing vouches for nothing
    (d / "header.json").unlink()
    (d / _files.PARTIAL).touch()


def _marker_and_user_file(d: Path) -> None:  # the header vouches only for its own files
    (d / _files.PARTIAL).touch()
    _user_file(d)


@pytest.mark.parametrize("change", [_user_file, _edited, _empty_marker, _marker_and_user_file])
def test_a_file_of_a_set_name_that_is_not_the_sets_is_refused_and_kept(tmp_path, capsys, change):
    d = _old_set(tmp_path)
    change(d)
    before = _tree(d)
    assert _golden(d) == 2
    assert "move them away" in capsys.readouterr().err
    assert _tree(d) == before


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
