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
import shutil
import tempfile
import zipfile
from pathlib import Path

import numpy as np

__all__ = [
    "HEADER",
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


#: Temporary directories of a write in progress: ``.<name>.tmp-<pid>-<random>`` (the new set)
#: and ``.<name>.old-<pid>-<random>`` (the set it replaces), siblings of the destination.
_SCRATCH = ("tmp", "old")


def _is_golden_set(d: Path) -> tuple[bool, str]:
    """Whether directory ``d`` holds a tcast set and nothing else, and if not, why."""
    entries = sorted(p.name for p in d.iterdir())
    if not entries:
        return True, ""
    if HEADER not in entries:
        return False, f"it is not empty and has no {HEADER}"
    try:
        header = json.loads((d / HEADER).read_text(encoding="utf-8"))
        ours = (
            isinstance(header, dict)
            and str(header.get("semantics", "")).startswith("tcast SEMANTICS.md")
            and isinstance(header.get("files"), dict)
            and header.get("header_sha256") == header_digest(header)
        )
    except (OSError, ValueError, TypeError):
        ours = False
    if not ours:
        return False, f"its {HEADER} is not the header of a tcast golden-vector set"
    known = {HEADER, *header["files"]}
    extra = [n for n in entries if n not in known or not (d / n).is_file() or (d / n).is_symlink()]
    if extra:
        shown = ", ".join(extra[:5]) + (" ..." if len(extra) > 5 else "")
        return False, f"it holds files that are not part of the set ({shown})"
    return True, ""


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
        ok, why = _is_golden_set(out)
        if not ok:
            raise FileExistsError(
                f"{out} exists and {why}; not replacing it (a set is written only into a new "
                f"or empty directory, or over an earlier set with nothing added to it)"
            )
    return out


def _clean_stale_scratch(out: Path) -> None:
    """Remove the temporary directories of earlier writes to ``out`` whose process is gone."""
    for kind in _SCRATCH:
        for d in out.parent.glob(f".{out.name}.{kind}-*"):
            pid = d.name[len(f".{out.name}.{kind}-") :].split("-", 1)[0]
            if not pid.isdigit() or not d.is_dir() or d.is_symlink():
                continue
            if _alive(int(pid)) or not _is_golden_set(d)[0]:
                continue
            shutil.rmtree(d, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # an earlier write of this process has finished or failed
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by another user
    return True


def write_set(out: Path, files: dict[str, bytes], header: dict) -> None:
    """Write a set atomically: into a temporary sibling directory, then renamed into place.

    ``header["files"]`` receives the size and SHA-256 of every file, and
    ``header["header_sha256"]`` the digest of the header itself (without that entry). An
    existing ``out`` is replaced only under the rules of :func:`check_destination`; the old
    set is removed only after the new one is in place, so a failure at any point leaves either
    the old set or the new one, never a mix. Temporary directories carry the writer's process
    id; those left by a killed run are removed by the next write to the same destination.

    Raises:
        FileExistsError: when ``out`` may not be replaced (:func:`check_destination`).
    """
    out = check_destination(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    _clean_stale_scratch(out)
    header = dict(header)
    header["files"] = {
        name: {"bytes": len(data), "sha256": sha256(data)} for name, data in sorted(files.items())
    }
    header["header_sha256"] = header_digest(header)
    pid = os.getpid()
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-{pid}-", dir=out.parent))
    old = None
    try:
        # mkdtemp makes the directory private (0700); a set is as readable as any new folder
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)
        for name, data in {**files, HEADER: header_bytes(header)}.items():
            with open(tmp / name, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-{pid}-", dir=out.parent))
            os.rmdir(old)
            os.rename(out, old)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not out.exists():
            os.rename(old, out)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
