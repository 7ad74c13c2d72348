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
    "HEADER", "header_bytes", "header_digest", "npy_bytes", "npz_bytes", "read_npz", "sha256",
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
    return b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head.encode("latin1") + (
        a.tobytes()
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


def write_set(out: Path, files: dict[str, bytes], header: dict) -> None:
    """Write a set atomically: into a temporary sibling directory, then renamed into place.

    ``header["files"]`` receives the size and SHA-256 of every file, and
    ``header["header_sha256"]`` the digest of the header itself (without that entry). An
    existing ``out`` is replaced only when it is a golden set (has ``header.json``) or empty;
    the old set is removed only after the new one is in place, so a failure at any point
    leaves either the old set or the new one, never a mix, and no temporary directory.

    Raises:
        FileExistsError: when ``out`` exists and is not a golden set.
    """
    out = Path(out)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / HEADER).exists())):
        raise FileExistsError(f"{out} exists and is not a golden-vector set; not replacing it")
    out.parent.mkdir(parents=True, exist_ok=True)
    header = dict(header)
    header["files"] = {
        name: {"bytes": len(data), "sha256": sha256(data)} for name, data in sorted(files.items())
    }
    header["header_sha256"] = header_digest(header)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
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
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
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
