"""Byte-reproducible files and atomic set directories.

``vectors.npz`` is written here rather than with ``numpy.savez``: ``savez`` stamps every zip
member with the current time, so two runs would differ. Members are stored uncompressed with
the fixed date 1980-01-01 00:00:00, and each ``.npy`` member uses format version 1.0 with the
header written by this module (so no NumPy version changes a byte).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import secrets
import stat
import tempfile
import zipfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

from tcast.kit import quote

__all__ = [
    "HEADER",
    "MAX_HEADER_BYTES",
    "PARTIAL",
    "SET_FILES",
    "check_destination",
    "header_bytes",
    "header_digest",
    "npy_bytes",
    "npz_bytes",
    "read_npz",
    "sha256",
    "write_set",
]

#: The header file of every set.
HEADER = "header.json"
#: The largest ``header.json`` read (generated headers are a few kilobytes).
MAX_HEADER_BYTES = 1 << 24
_DATE = (1980, 1, 1, 0, 0, 0)


def sha256(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def npy_bytes(a: np.ndarray) -> bytes:
    """The ``.npy`` (format 1.0) bytes of a little-endian numeric or bool array, C order."""
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    descr = a.dtype.str if a.dtype != np.bool_ else "|b1"
    shape = "(" + "".join(f"{d}, " for d in a.shape)
    shape = shape[:-2] + ",)" if len(a.shape) == 1 else shape[:-2] + ")" if a.shape else "()"
    head = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"
    total = 10 + len(head) + 1
    head += " " * ((64 - total % 64) % 64) + "\n"
    return (
        b"\x93NUMPY\x01\x00"
        + len(head).to_bytes(2, "little")
        + head.encode("latin1")
        + (a.tobytes())
    )


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """A deterministic ``.npz`` (uncompressed zip of ``.npy`` members, sorted by name)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        for name in sorted(arrays):
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_DATE)
            info.external_attr = 0o644 << 16
            info.create_system = 3
            z.writestr(info, npy_bytes(arrays[name]))
    return buf.getvalue()


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """Load every array of an ``.npz`` (no pickles)."""
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def header_bytes(header: dict) -> bytes:
    """Canonical JSON: sorted keys, two-space indent, ASCII, trailing newline."""
    return (json.dumps(header, indent=2, sort_keys=True, ensure_ascii=True) + "\n").encode()


def header_digest(header: dict) -> str:
    """SHA-256 of the canonical header without its own ``header_sha256`` entry."""
    return sha256(header_bytes({k: v for k, v in header.items() if k != "header_sha256"}))


#: Every file name a set may hold. A header listing any other name is not a tcast set's, so
#: a hand-edited header can never make the writer replace (or verify read) another file.
SET_FILES = (
    HEADER,
    "vectors.txt",
    "vectors.memh",
    "vectors.npz",
    "packed.bin",
    "packed_mask.bin",
    "packed_meta.bin",
)
#: Written first into every directory a write fills and removed last: it marks a write in
#: progress, so what a killed run left is recognized as this module's and nobody else's.
PARTIAL = ".tcast-golden-partial"
#: The next contents of a :data:`PARTIAL` marker, written in a scratch directory and moved
#: into place whole. A marker records the name, size and SHA-256 of every file the write may
#: leave in DIR (the old set's and the new one's), so what a killed or stuck write left is
#: told from a file someone put there under a set file's name.
_RECORD = ".tcast-golden-record"
#: Scratch directories of a write in progress, inside the destination DIR:
#: ``.tcast-golden-tmp-<pid>-<token>-<random>`` (the new set) and
#: ``.tcast-golden-old-<pid>-<token>-<random>`` (the files of the set it replaces). Inside DIR,
#: every move stays on DIR's file system (DIR may be a mount point) and needs no permission on
#: DIR's parent. The token tells this process's writes from those of an earlier process that
#: had the same pid.
_SCRATCH = re.compile(r"\.tcast-golden-(tmp|old)-(\d{1,10})-([0-9a-f]{8})-[^/]*")
_TOKEN = secrets.token_hex(4)


def _plain_file(p: Path) -> bool:
    return p.is_file() and not p.is_symlink()


def _scratch_dir(p: Path) -> re.Match | None:
    """The name's parts when ``p`` is a scratch directory of this module (a real directory)."""
    m = _SCRATCH.fullmatch(p.name)
    return m if m and p.is_dir() and not p.is_symlink() else None


def _read_small(p: Path) -> bytes:
    """At most :data:`MAX_HEADER_BYTES` + 1 bytes of the plain file ``p``."""
    with open(p, "rb") as f:
        return f.read(MAX_HEADER_BYTES + 1)


class _Ours(NamedTuple):
    """A file of a set: its status and SHA-256."""

    stat: os.stat_result
    sha256: str


#: What a set file may be: (size, SHA-256) pairs by name.
_Records = dict[str, set[tuple[int, str]]]


def _header_records(d: Path) -> tuple[_Records | None, str]:
    """The files the ``header.json`` in ``d`` lists (and the header itself), when it is a set's.

    Returns:
        The records (None when the header is not a tcast set's) and why it is not.
    """
    why = f"its {HEADER} is not the header of a tcast golden-vector set"
    try:
        raw = _read_small(d / HEADER)
        header = json.loads(raw.decode("utf-8")) if len(raw) <= MAX_HEADER_BYTES else None
        ours = (
            isinstance(header, dict)
            and str(header.get("semantics", "")).startswith("tcast SEMANTICS.md")
            and isinstance(header.get("files"), dict)
            and set(header["files"]) <= set(SET_FILES) - {HEADER}
            and header.get("header_sha256") == header_digest(header)
        )
        if not ours:
            return None, why
        records: _Records = {HEADER: {(len(raw), sha256(raw))}}
        for name, meta in header["files"].items():
            records[name] = {(int(meta["bytes"]), str(meta["sha256"]))}
    except (OSError, ValueError, TypeError, KeyError, RecursionError):
        return None, why
    return records, ""


def _marker_records(d: Path) -> _Records:
    """The files the :data:`PARTIAL` marker in ``d`` records (none when it records nothing)."""
    try:
        raw = _read_small(d / PARTIAL)
        marker = json.loads(raw.decode("utf-8")) if len(raw) <= MAX_HEADER_BYTES else {}
        return {
            name: {(int(size), str(digest)) for size, digest in pairs}
            for name, pairs in marker["files"].items()
            if name in SET_FILES
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return {}  # an empty or damaged marker vouches for no file


def _hash_if(p: Path, sizes: set[int]) -> _Ours | None:
    """``p``'s status and SHA-256 when it is a plain file of one of ``sizes`` bytes."""
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size not in sizes:
            return None  # not hashed: a foreign file of another size is never read
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
    finally:
        os.close(fd)
    return _Ours(st, h.hexdigest())


def _set_entries(d: Path, scratch: bool = False) -> tuple[dict[str, _Ours] | None, str]:
    """The entries of directory ``d`` with their status when all of them are a set's.

    ``d`` qualifies when it is empty, holds exactly a tcast set (a ``header.json`` whose
    digest matches, listing only names of :data:`SET_FILES`, and nothing but the files it
    lists, each of the size and SHA-256 the header gives), or holds an interrupted write of
    this module: its :data:`PARTIAL` marker and plain files each of a name, size and SHA-256
    the marker (written by the writer) or a valid ``header.json`` there records. A file of a
    set's name that is not the one recorded (a hand-edited file, the user's own) disqualifies
    ``d``: it is never the writer's to replace. This module's scratch directories are left
    out of the entries and never disqualify ``d``. With ``scratch``, ``d`` is one of them (a
    private ``mkdtemp`` directory of this module): with its marker, any plain files of set
    names in it are the writer's, partial ones of a killed run included.

    Returns:
        The entries by name (None when ``d`` does not qualify) and why it does not.
    """
    entries = {p.name: p for p in d.iterdir() if not _scratch_dir(p)}
    if not entries:
        return {}, ""
    records: _Records | None
    if PARTIAL in entries:
        records = {} if scratch else _marker_records(d)
        if HEADER in entries and not scratch:
            for name, pairs in (_header_records(d)[0] or {}).items():
                records.setdefault(name, set()).update(pairs)
    elif HEADER not in entries:
        return None, f"it is not empty and has no {HEADER}"
    else:
        records, why = _header_records(d)
        if records is None:
            return None, why
    allowed = {PARTIAL, *SET_FILES} if PARTIAL in entries else set(records)
    if scratch:
        allowed.add(_RECORD)
    extra = sorted(n for n, p in entries.items() if n not in allowed or not _plain_file(p))
    if extra:
        return None, f"it holds files that are not part of the set ({_names(extra)})"
    ours, foreign = {}, []
    for name, p in sorted(entries.items()):
        if name in (PARTIAL, _RECORD) or scratch:
            st = os.lstat(p)
            ours[name] = _Ours(st, "")
            continue
        pairs = records.get(name, set())
        got = _hash_if(p, {size for size, _ in pairs})
        if got is None or (got.stat.st_size, got.sha256) not in pairs:
            foreign.append(name)
        else:
            ours[name] = got
    if foreign:
        return None, (
            f"it holds files of a set's names that are not the files the set wrote "
            f"({_names(foreign)}: edited, or someone else's); move them away first"
        )
    return ours, ""


def _names(names: list[str]) -> str:
    return ", ".join(quote(n) for n in names[:5]) + (" ..." if len(names) > 5 else "")


def check_destination(out: Path) -> Path:
    """The directory a set for ``out`` is written to, after refusing one it may not replace.

    ``out`` may be missing, an empty directory, or a directory holding exactly a tcast set
    (its ``header.json`` and the files that header lists; nothing else), which is replaced.
    A symbolic link is followed: the set replaces the link's target directory and the link
    stays. Anything else is refused, so no file of the user's is ever deleted.

    Raises:
        FileExistsError: naming ``out`` and why it is not replaced (a file, a directory with
            other content, a dangling link).
    """
    out = Path(out)
    if out.is_symlink():
        target = out.resolve()
        if not target.is_dir():
            raise FileExistsError(
                f"{out} is a symbolic link to {target}, which is not a directory; not "
                f"replacing it (give a directory, or remove the link)"
            )
        out = target
    if out.exists():
        if not out.is_dir():
            raise FileExistsError(f"{out} exists and is not a directory; not replacing it")
        entries, why = _set_entries(out)
        if entries is None:
            raise FileExistsError(
                f"{out} exists and {why}; not replacing it (a set is written only into a new "
                f"or empty directory, or over an earlier set with nothing added to it)"
            )
    return Path(os.path.abspath(out))


def _clean_stale_scratch(out: Path) -> list[Path]:
    """Remove what earlier writes to ``out`` left, when their process is gone.

    A ``tmp`` directory holding nothing but a set's files and the write marker is removed,
    file by file. An ``old`` directory holding any file but the marker is kept: a run killed
    while it swapped the files left there the only copy of the set it was replacing.

    Returns:
        The ``old`` directories kept (for the caller to name).
    """
    kept = []
    for d in sorted(out.iterdir()):
        m = _scratch_dir(d)
        if m is None or _alive(int(m[2]), m[3]):
            continue
        entries = _set_entries(d, scratch=True)[0]
        if entries is None:
            continue  # holds something that is not ours: left alone
        if m[1] == "old" and set(entries) - {PARTIAL, _RECORD}:
            kept.append(d)
        else:
            _remove_ours(d)
    return kept


def _alive(pid: int, token: str) -> bool:
    """Whether the write that made a scratch directory may still be running."""
    if pid == os.getpid():
        return token == _TOKEN  # this process (another thread), or an earlier one of this pid
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by another user
    return True


def _remove_ours(d: Path) -> None:
    """Delete the set files and marker in scratch directory ``d``, then ``d`` if empty."""
    for name in (*SET_FILES, PARTIAL, _RECORD):
        p = d / name
        if _plain_file(p):
            p.unlink(missing_ok=True)
    try:
        d.rmdir()
    except OSError:
        pass  # gone already, or holding something that is not ours: left alone


def _scratch(out: Path, kind: str) -> Path:
    """A new private scratch directory inside ``out`` with the write marker in it."""
    prefix = f".tcast-golden-{kind}-{os.getpid()}-{_TOKEN}-"
    d = Path(tempfile.mkdtemp(prefix=prefix, dir=out))
    (d / PARTIAL).touch()
    return d


def _write_files(d: Path, contents: dict[str, bytes]) -> None:
    """Write and fsync every file of the new set into ``d``."""
    for name, data in contents.items():
        with open(d / name, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    """Whether two stats are of one unchanged file (a rename keeps all of these)."""
    return (a.st_dev, a.st_ino, a.st_size, a.st_mtime_ns) == (
        b.st_dev,
        b.st_ino,
        b.st_size,
        b.st_mtime_ns,
    )


def _move_no_replace(src: Path, dst: Path) -> None:
    """Move ``src`` to ``dst``, refusing when ``dst`` exists (a hard link cannot replace)."""
    try:
        os.link(src, dst)
    except FileExistsError:
        raise FileExistsError(
            f"{dst} appeared while the set was written; not replacing it"
        ) from None
    except OSError:  # a file system without hard links: check, then rename
        if os.path.lexists(dst):
            raise FileExistsError(
                f"{dst} appeared while the set was written; not replacing it"
            ) from None
        os.rename(src, dst)
        return
    os.unlink(src)


def _undo(
    out: Path, tmp: Path, old: Path, new_in: dict[str, os.stat_result], old_out: list[str]
) -> list[str]:
    """Put the old set's files moved to ``old`` back into ``out``, never over another file.

    Returns:
        The names that could not go back (they stay in ``old``).
    """
    for name in reversed(list(new_in)):
        try:
            if _same_file(os.lstat(out / name), new_in[name]):
                os.rename(out / name, tmp / name)
        except OSError:
            pass  # the old file of this name then cannot go back either: named below
    stuck = []
    for name in reversed(old_out):
        try:
            _move_no_replace(old / name, out / name)
        except OSError:
            stuck.append(name)
    return stuck


def _write_marker(out: Path, old: Path, entries: dict[str, _Ours], new: _Records) -> bool:
    """Put a :data:`PARTIAL` marker recording the files of both sets into ``out``.

    The files ``out`` holds now (``entries``, each checked to be the set's) and the new set's
    files (``new``) are recorded, with what an existing marker recorded for files still there.
    The marker is written in scratch directory ``old`` and moved into place whole, so no run
    killed halfway leaves a marker that vouches for files it does not name.

    Returns:
        Whether the marker is new (no marker was there).
    """
    records: _Records = {n: set(pairs) for n, pairs in new.items()}
    for name, ours in entries.items():
        if name not in (PARTIAL, _RECORD):
            records.setdefault(name, set()).add((ours.stat.st_size, ours.sha256))
    body = {"files": {n: sorted([list(p) for p in pairs]) for n, pairs in records.items()}}
    with open(old / _RECORD, "wb") as f:
        f.write((json.dumps(body, sort_keys=True) + "\n").encode())
        f.flush()
        os.fsync(f.fileno())
    if PARTIAL in entries:
        os.replace(old / _RECORD, out / PARTIAL)  # our own marker, checked above
        return False
    _move_no_replace(old / _RECORD, out / PARTIAL)
    return True


def _swap_files(out: Path, tmp: Path, names: list[str], new: _Records) -> None:
    """Replace the set in directory ``out`` by the files ``names`` of ``tmp``, file by file.

    ``out`` is checked again first: it must still hold nothing but a set (a file a user added
    while the new set was generated refuses the write, and nothing in ``out`` changes). A
    marker recording the files of both sets (``new``: the new set's names, sizes and
    SHA-256s) stays in ``out`` while ``out`` may hold a mix of them. The old files move to
    a scratch directory (``header.json`` first, so ``out`` stops being a set at once), the
    new ones move in (``header.json`` last), and only then are the old files deleted: never
    a file that is not the set's, never ``out`` itself (it may be the current directory, a
    mount point or a link's target). An error undoes every move; a file that appeared in
    ``out`` meanwhile is never replaced: the old file it stands in the way of stays in the
    scratch directory, which the error names, and the marker stays in ``out``, so the next
    write refuses ``out`` until that file is moved away.

    Raises:
        FileExistsError: when ``out`` holds or gains anything that is not the set's.
    """
    entries, why = _set_entries(out) if out.is_dir() else (None, "it is not a directory")
    if entries is None:
        raise FileExistsError(
            f"{out} changed while the new set was generated: {why}; not replacing it (the new "
            f"set is discarded; {out} is as it was)"
        )
    old = _scratch(out, "old")
    marker = out / PARTIAL
    moved_old: list[str] = []
    moved_new: dict[str, os.stat_result] = {}
    made_marker = False
    try:
        made_marker = _write_marker(out, old, entries, new)
        for name in sorted(set(entries) - {PARTIAL, _RECORD}, key=lambda n: n != HEADER):
            os.rename(out / name, old / name)
            moved_old.append(name)
            if not _same_file(os.lstat(old / name), entries[name].stat):
                raise FileExistsError(
                    f"{out / name} changed while the new set was generated; not replacing it "
                    f"(the new set is discarded; {out} is as it was)"
                )
        for name in sorted(names, key=lambda n: n == HEADER):
            _move_no_replace(tmp / name, out / name)
            moved_new[name] = os.lstat(out / name)
        marker.unlink()
    except BaseException as err:
        stuck = _undo(out, tmp, old, moved_new, moved_old)
        if not stuck:
            if made_marker:
                marker.unlink(missing_ok=True)
            _remove_ours(old)
            raise
        if not isinstance(err, Exception):
            raise  # Ctrl-C: the old files stay in the scratch directory
        raise FileExistsError(
            f"{err}; while undoing the swap, {', '.join(stuck)} could not be put back into "
            f"{out} (a file of that name appeared there), so the old set's files are kept in "
            f"{old}"
        ) from err
    _remove_ours(old)


def write_set(out: Path, files: dict[str, bytes], header: dict) -> list[Path]:
    """Write a set: into a scratch directory inside ``out``, then moved into place file by file.

    ``header["files"]`` receives the size and SHA-256 of every file, and
    ``header["header_sha256"]`` the digest of the header itself (without that entry). An
    existing ``out`` is replaced only under the rules of :func:`check_destination`, checked
    again when the new set is ready: a file added to ``out`` meanwhile refuses the write and
    nothing in ``out`` changes. A missing ``out`` is created first, with its missing parents
    (removed again, when empty, if the write fails). Its files are replaced one by one
    (``header.json`` out first and in last), the old files deleted only after the new ones
    are in place; every move stays inside ``out``. An error at any point leaves the old set;
    a run killed during the final moves leaves ``out`` without ``header.json`` (refused by
    ``verify``, replaced by the next write). Scratch directories carry the writer's process
    id; the next write to the same destination removes a killed run's partial new set, and
    keeps the old set's files it had moved aside.

    Returns:
        The scratch directories of killed runs that hold an old set's files (kept).

    Raises:
        FileExistsError: when ``out`` may not be replaced (:func:`check_destination`), or
            changed while the set was generated.
    """
    out = check_destination(out)
    created = [d for d in (out, *out.parents) if not os.path.lexists(d)]  # deepest first
    out.mkdir(parents=True, exist_ok=True)
    try:
        return _write_into(out, files, header)
    except BaseException:
        for d in created:  # made by this call and left empty: a failed write leaves nothing
            try:
                d.rmdir()
            except OSError:
                break  # not empty: something arrived meanwhile, left alone (and its parents)
        raise


def _write_into(out: Path, files: dict[str, bytes], header: dict) -> list[Path]:
    """:func:`write_set` into the existing directory ``out``."""
    kept = _clean_stale_scratch(out)
    header = dict(header)
    header["files"] = {
        name: {"bytes": len(data), "sha256": sha256(data)} for name, data in sorted(files.items())
    }
    header["header_sha256"] = header_digest(header)
    contents = {**files, HEADER: header_bytes(header)}
    tmp = _scratch(out, "tmp")
    try:
        _write_files(tmp, contents)
        new = {n: {(m["bytes"], m["sha256"])} for n, m in header["files"].items()}
        new[HEADER] = {(len(contents[HEADER]), sha256(contents[HEADER]))}
        _swap_files(out, tmp, list(contents), new)
    finally:
        if tmp.is_dir() and not tmp.is_symlink():
            _remove_ours(tmp)
    return kept
