"""Reading a golden set from disk, trusting nothing in it.

``header_digest`` is public and unkeyed: a header whose fields were edited and whose digests
were recomputed is as intact as a generated one. So every header field that ``tcast verify``
uses is checked for type and range; the column layout must be the one this tcast derives from
the set's settings (an output relabelled as an input, or left out, is refused); the files must
be plain files of the set's own names inside the set's directory, read no further than the
sizes the header gives; the arrays of ``vectors.npz`` must fit the layout; and
``vectors.txt``, ``vectors.memh`` and the packed files must be byte for byte what the
generator writes from those arrays, so every form of the set says the same.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tcast import TcastError

from .._codec import code_dtype
from ._files import HEADER, SET_FILES, header_digest, sha256
from ._flags import FLAGS
from ._generate import SCHEMA_VERSION, Settings, set_files, set_layout
from ._geometry import geometry
from ._layout import Layout

__all__ = ["MAX_HEADER_BYTES", "GoldenSetError", "LoadedSet", "load"]

#: The largest ``header.json`` read (generated headers are a few kilobytes).
MAX_HEADER_BYTES = 1 << 24
#: The longest datatype code or name a header may give.
_MAX_CODE = 200


class GoldenSetError(TcastError):
    """A golden set or a results file that cannot be used (damaged, wrong set, bad syntax)."""


class _Malformed(Exception):
    """A header field or file that is not what a generated set holds (the message says why)."""


@dataclass
class LoadedSet:
    """A verified-intact set: header, layout and expected columns."""

    path: Path
    header: dict
    layout: Layout
    columns: dict[str, np.ndarray]

    @property
    def lines(self) -> int:
        """Number of cases (lines)."""
        return int(self.header["counts"]["lines"])

    def settings(self) -> Settings:
        """The options the set was generated with."""
        return _settings(self.header)


def load(path: Path | str) -> LoadedSet:
    """Load a set, refusing it unless every part of it is what the generator writes.

    Raises:
        GoldenSetError: for a missing, unreadable or malformed header, an unknown schema
            version, a file that is missing, not a plain file of the set's directory, or does
            not match its size and SHA-256, arrays that do not fit the layout, or text and
            packed files that say something else than ``vectors.npz``.
    """
    path = Path(path)
    hpath = path / HEADER
    if not hpath.is_file():
        raise GoldenSetError(f"{path}: no {HEADER}: not a golden-vector set")
    header = _read_header(hpath)
    try:
        st = _settings(header)
        layout = _layout(header, st)
        lines = _get(header, "counts", "lines", kind=int)
        if lines < 1:
            raise _Malformed(f"counts.lines must be 1 or more, not {lines}")
        names = _file_names(header, st)
        data = {name: _read_file(path, name, header["files"][name]) for name in names}
        columns = _columns(data["vectors.npz"], layout, lines)
        _check_values(st, layout, columns)
        for name, expected in set_files(st, layout, columns).items():
            if data[name] != expected:
                raise _Malformed(
                    f"{name} says something else than vectors.npz (it is not what the "
                    "generator writes from the arrays)"
                )
    except _Malformed as err:
        raise GoldenSetError(f"{path}: malformed set: {err}; regenerate it") from None
    except GoldenSetError:
        raise
    except TcastError as err:  # settings this tcast refuses (a bad code, an unknown mode)
        raise GoldenSetError(f"{path}: malformed set: {err}") from None
    return LoadedSet(path, header, layout, columns)


# ------------------------------------------------------------------------ header
def _read_header(hpath: Path) -> dict:
    if hpath.is_symlink():
        raise GoldenSetError(f"{hpath}: a symbolic link; a set's files are plain files")
    try:
        with open(hpath, "rb") as f:
            raw = f.read(MAX_HEADER_BYTES + 1)
    except OSError as err:
        raise GoldenSetError(f"{hpath}: cannot read it ({err})") from None
    if len(raw) > MAX_HEADER_BYTES:
        raise GoldenSetError(
            f"{hpath}: more than {MAX_HEADER_BYTES} bytes, not the header of a golden-vector set"
        )
    try:
        header = json.loads(raw.decode("ascii"))
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise GoldenSetError(f"{hpath}: not valid JSON ({err}); the set is damaged") from None
    if not isinstance(header, dict) or header.get("schema_version") != SCHEMA_VERSION:
        got = header.get("schema_version") if isinstance(header, dict) else None
        raise GoldenSetError(
            f"{hpath}: schema version {_short(got)}; this tcast reads schema version "
            f"{SCHEMA_VERSION}"
        )
    if header.get("header_sha256") != header_digest(header):
        raise GoldenSetError(
            f"{hpath}: the header does not match its header_sha256 (it was edited): the set is "
            "damaged; regenerate it"
        )
    return header


def _short(v: Any, limit: int = 60) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _get(header: dict, *keys: str, kind: type | tuple[type, ...]) -> Any:
    """``header[k0][k1]...``, refused unless present and of ``kind`` (a bool is no int)."""
    v: Any = header
    for i, k in enumerate(keys):
        if not isinstance(v, dict) or k not in v:
            where = ".".join(keys[:i]) or "the header"
            raise _Malformed(f"{where} has no {k!r}")
        v = v[k]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(v, kinds) or (isinstance(v, bool) and bool not in kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise _Malformed(f"{'.'.join(keys)} must be {names}, not {_short(v)}")
    return v


def _settings(header: dict) -> Settings:
    code = _get(header, "datatype", "code", kind=str)
    name = _get(header, "datatype", "name", kind=str)
    for what, text in (("datatype.code", code), ("datatype.name", name)):
        if not text or len(text) > _MAX_CODE:
            raise _Malformed(f"{what} must be 1 to {_MAX_CODE} characters, not {_short(text)}")
    modes = {k: _get(header, "modes", k, kind=str) for k in ("castmode", "roundmode", "scalemode")}
    st = Settings.of(
        code,
        **modes,
        saturate=_get(header, "modes", "saturate", kind=bool),
        level=_get(header, "level", kind=str),
        seed=_get(header, "random", "seed", kind=int),
        input_dtype=_get(header, "input_dtype", kind=str),
    )
    if _get(header, "operation", kind=str) != st.operation:
        raise _Malformed(f"operation {_short(header['operation'])} is not {st.operation!r}")
    return st


def _layout(header: dict, st: Settings) -> Layout:
    """The layout this tcast derives from the settings, refused unless the header's is it."""
    layout = set_layout(st)
    given = _get(header, "layout", "fields", kind=list)
    want = [f.describe() for f in layout.fields]
    if given != want:
        names = [f.get("name") if isinstance(f, dict) else None for f in given]
        raise _Malformed(
            f"its layout (fields {_short(names, 120)}) is not the layout of "
            f"{st.dtype.code} {st.operation} sets ({[f.name for f in layout.fields]}, with "
            "their roles, widths and formats)"
        )
    return layout


def _file_names(header: dict, st: Settings) -> list[str]:
    """The set's files, refused unless the header lists exactly the ones the set has."""
    files = _get(header, "files", kind=dict)
    for name in files:
        if name not in SET_FILES or name == HEADER:
            raise _Malformed(
                f"files lists {_short(name)}: a set holds only {', '.join(SET_FILES[1:])}, "
                "in its own directory"
            )
        size = _get(header, "files", name, "bytes", kind=int)
        digest = _get(header, "files", name, "sha256", kind=str)
        if size < 0 or len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
            raise _Malformed(f"files.{name} needs a size and a hex SHA-256")
    compress = st.castmode.value == "compress" and st.operation == "cast"
    want = {"vectors.txt", "vectors.memh", "vectors.npz"}
    if compress:
        want.add("packed.bin")
        if st.dtype.sspec is not None and st.dtype.sspec.is_sparse:
            want.add("packed_mask.bin")
    if set(files) != want:
        raise _Malformed(f"files lists {sorted(files)}; this set has {sorted(want)}")
    return sorted(files)


# ------------------------------------------------------------------------- files
def _read_file(path: Path, name: str, meta: dict) -> bytes:
    """A plain file of the set, read no further than its size in the header, then hashed."""
    f = path / name
    if f.is_symlink() or (f.exists() and not f.is_file()):
        raise GoldenSetError(f"{path}: {name} is not a plain file; the set is damaged")
    if not f.is_file():
        raise GoldenSetError(f"{path}: {name} is missing; the set is damaged")
    size = meta["bytes"]
    try:
        with open(f, "rb") as fh:
            data = fh.read(size + 1)
    except OSError as err:
        raise GoldenSetError(f"{path}: cannot read {name} ({err})") from None
    if len(data) != size or sha256(data) != meta["sha256"]:
        found = f"{len(data)} bytes" if len(data) <= size else f"more than {size} bytes"
        raise GoldenSetError(
            f"{path}: {name} does not match its SHA-256 in {HEADER} "
            f"(expected {meta['sha256']}, {size} bytes; found {found}"
            + (f", {sha256(data)}" if len(data) <= size else "")
            + "): the set is damaged; regenerate it"
        )
    return data


def _columns(data: bytes, layout: Layout, lines: int) -> dict[str, np.ndarray]:
    """The arrays of ``vectors.npz``, refused unless they are the layout's, (lines, count)."""
    want = {f"{f.name.lower()}.npy" for f in layout.fields}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
            got = {i.filename for i in infos}
            if got != want:
                raise _Malformed(
                    f"vectors.npz holds {_short(sorted(got), 120)}, not {sorted(want)}"
                )
            if any(i.compress_type != zipfile.ZIP_STORED for i in infos):
                raise _Malformed("vectors.npz has compressed members; a set's are stored")
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except _Malformed:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError, TypeError) as err:
        raise _Malformed(f"vectors.npz is not a set's zip of arrays ({_short(str(err))})") from None
    cols = {}
    for f in layout.fields:
        a = arrays[f.name.lower()]
        dtype = np.dtype(np.uint64) if f.name == "MASK" else code_dtype(f.bits)
        if a.dtype != dtype:
            raise _Malformed(f"vectors.npz: {f.name.lower()} has dtype {a.dtype}, not {dtype}")
        if a.shape != (lines, f.count):
            raise _Malformed(
                f"vectors.npz: {f.name.lower()} has shape {a.shape}, but counts.lines and the "
                f"layout say ({lines}, {f.count})"
            )
        if f.bits < 8 * a.itemsize and a.size and int(a.max()) >> f.bits:
            raise _Malformed(f"vectors.npz: {f.name.lower()} has words wider than {f.bits} bits")
        cols[f.name] = a
    return cols


def _check_values(st: Settings, layout: Layout, cols: dict[str, np.ndarray]) -> None:
    """Refuse partial-tile extents out of range and absent flags that do not follow them."""
    if st.operation != "cast" or st.dtype.sspec is None:
        return
    geo = geometry(st.dtype)
    lens = cols.get("LEN")
    if lens is not None:
        top = np.array(geo.tile_shape)
        if lens.size and ((lens < 1) | (lens > top)).any():
            raise _Malformed(f"LEN words must lie in 1 to the tile's {list(geo.tile_shape)}")
    if "FLAGS" in cols:
        absent = (cols["FLAGS"] & FLAGS["absent"]) != 0
        want = np.zeros_like(absent) if lens is None else ~geo.live(lens.astype(np.int64))
        if not np.array_equal(absent, want):
            raise _Malformed("the absent flags do not mark exactly the elements beyond LEN")
