"""Reading a golden set from disk, trusting nothing in it.

``tcast_ref.golden.header_digest`` is public and unkeyed: a header whose fields were edited and
whose digests were recomputed is as intact as a generated one. So every header field that
``tcast verify`` uses is checked for type and range; the column layout must be the one this
tcast derives from the set's settings (an output relabelled as an input, or left out, is
refused); the files must be plain files of the set's own names inside the set's directory, read
no further than the sizes the header gives; the arrays of ``vectors.npz`` must fit the layout;
their inputs must be the ones the settings generate (so a set cut down or with edited inputs is
refused); and ``vectors.txt``, ``vectors.memh`` and the packed files must be byte for byte what
the generator writes from those arrays, so every form of the set says the same.
"""

from __future__ import annotations

import io
import json
import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tcast import Hadamard, SpecError, TcastError, datatype
from tcast.kit import quote

from .._codec import code_dtype
from ._cases import MAX_RANDOM_ELEMENTS
from ._files import HEADER, MAX_HEADER_BYTES, SET_FILES, header_digest, sha256
from ._flags import FLAGS
from ._generate import (
    SCHEMA_VERSION,
    Settings,
    cast_inputs,
    decode_inputs,
    hadamard_of_text,
    header_outputs,
    header_rules,
    set_files,
    set_given_inputs,
    set_layout,
)
from ._geometry import geometry
from ._layout import Layout

__all__ = ["MAX_FILE_BYTES", "MAX_HEADER_BYTES", "GoldenSetError", "LoadedSet", "load"]

#: The largest file of a set read (the largest generated ones are a few hundred megabytes).
MAX_FILE_BYTES = 1 << 32
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
            not match its size and SHA-256, arrays that do not fit the layout, inputs other
            than the ones its settings generate, or text and packed files that say
            something else than ``vectors.npz``.
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
        _check_inputs(header, st, columns)
        _check_description(header, st, layout, columns)
        for name, expected in set_files(st, layout, columns).items():
            if data[name] != expected:
                raise _Malformed(
                    f"{name} is not the generator's canonical form of vectors.npz (not "
                    "byte for byte what the generator writes from its arrays)"
                )
    except _Malformed as err:
        raise GoldenSetError(f"{path}: malformed set: {err}; regenerate it") from None
    except GoldenSetError:
        raise
    except TcastError as err:  # settings this tcast refuses (a bad code, an unknown mode)
        raise GoldenSetError(f"{path}: malformed set: {err}; regenerate it") from None
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
    got = header.get("schema_version") if isinstance(header, dict) else None
    if got is not None and (not isinstance(got, int) or isinstance(got, bool)):
        raise GoldenSetError(
            f"{hpath}: schema_version must be an integer, not {quote(got)}: the set is damaged; "
            "regenerate it"
        )
    if not isinstance(header, dict) or got != SCHEMA_VERSION:
        raise GoldenSetError(
            f"{hpath}: schema version {quote(got)}; this tcast reads schema version "
            f"{SCHEMA_VERSION}"
        )
    if header.get("header_sha256") != header_digest(header):
        raise GoldenSetError(
            f"{hpath}: the header does not match its header_sha256 (it was edited): the set is "
            "damaged; regenerate it"
        )
    return header


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
        raise _Malformed(f"{'.'.join(keys)} must be {names}, not {quote(v)}")
    return v


def _settings(header: dict) -> Settings:
    code = _get(header, "datatype", "code", kind=str)
    name = _get(header, "datatype", "name", kind=str)
    for what, text in (("datatype.code", code), ("datatype.name", name)):
        if not text or len(text) > _MAX_CODE:
            raise _Malformed(f"{what} must be 1 to {_MAX_CODE} characters, not {quote(text)}")
    modes = {k: _get(header, "modes", k, kind=str) for k in ("castmode", "roundmode", "scalemode")}
    level = _get(header, "level", kind=str)
    count = None
    if level != "exhaustive":  # the size of the random part; the rest follows from the level
        key = (
            "random_values"
            if "random_values" in _get(header, "cases", "inputs", kind=dict)
            else "random_tiles"
        )
        count = _get(header, "cases", "inputs", key, kind=int)
        if not 0 <= count <= MAX_RANDOM_ELEMENTS:
            raise _Malformed(
                f"cases.inputs.{key} must lie in 0 to {MAX_RANDOM_ELEMENTS}, not {quote(count)}"
            )
    st = Settings.of(
        code,
        **modes,
        saturate=_get(header, "modes", "saturate", kind=bool),
        level=level,
        seed=_get(header, "random", "seed", kind=int),
        input_dtype=_get(header, "input_dtype", kind=str),
        count=count,
        transform=_transform(header),
        given=_given(header),
    )
    _check_name(name, st)
    if _get(header, "operation", kind=str) != st.operation:
        raise _Malformed(f"operation {quote(header['operation'])} is not {st.operation!r}")
    return st


def _given(header: dict) -> tuple[str, ...]:
    """The set's given parts (``given.parts``), or none without the key."""
    if "given" not in header:
        return ()
    parts = _get(header, "given", "parts", kind=list)
    if len(parts) > 3 or not all(isinstance(p, str) for p in parts):
        raise _Malformed(f"given.parts must list at most 3 part names, not {quote(parts)}")
    return tuple(parts)


def _transform(header: dict) -> Hadamard | None:
    """The set's transform (``transform.size`` and ``.signs``), or None without the key."""
    if "transform" not in header:
        return None
    size = _get(header, "transform", "size", kind=int)
    signs = _get(header, "transform", "signs", kind=str)
    if len(signs) > 1024:
        raise _Malformed(f"transform.signs must be at most 1024 characters, not {len(signs)}")
    try:
        return hadamard_of_text(size, signs)
    except SpecError as err:
        raise _Malformed(f"transform: {err}") from None


def _check_name(name: str, st: Settings) -> None:
    """Refuse a datatype name that is not the set's code or a name of the same datatype.

    The name labels the set in verify's output, so it must say what the code says.
    """
    if name == st.dtype.code:
        return
    try:
        same = datatype(name).code == st.dtype.code
    except SpecError:
        same = False
    if not same:
        raise _Malformed(
            f"datatype.name {quote(name)} is not a name of its datatype {st.dtype.code!r}"
        )


def _layout(header: dict, st: Settings) -> Layout:
    """The layout this tcast derives from the settings, refused unless the header's is it."""
    layout = set_layout(st)
    given = _get(header, "layout", "fields", kind=list)
    want = [f.describe() for f in layout.fields]
    if given != want:
        raise _Malformed(
            f"its layout is not the layout of {st.dtype.code} {st.operation} sets "
            f"({[f.name for f in layout.fields]}): {_first_difference(given, want)}"
        )
    return layout


def _first_difference(given: list, want: list[dict]) -> str:
    """Where the header's layout fields first differ from the derived ones, in words."""
    if len(given) != len(want):
        names = [f.get("name") if isinstance(f, dict) else None for f in given]
        return f"it has {len(given)} fields {quote(names, 120)}, the set {len(want)}"
    for g, w in zip(given, want, strict=True):
        if g == w:
            continue
        if not isinstance(g, dict):
            return f"field {w.get('name')!r} is {quote(g)}"
        keys = sorted(str(k) for k in set(g) | set(w) if g.get(k) != w.get(k))
        k = keys[0]
        return f"field {w.get('name')!r} has {k} {quote(g.get(k))}, not {quote(w.get(k))}"
    return "the fields differ"


def _file_names(header: dict, st: Settings) -> list[str]:
    """The set's files, refused unless the header lists exactly the ones the set has."""
    files = _get(header, "files", kind=dict)
    for name in files:
        if name not in SET_FILES or name == HEADER:
            raise _Malformed(
                f"files lists {quote(name)}: a set holds only {', '.join(SET_FILES[1:])}, "
                "in its own directory"
            )
        size = _get(header, "files", name, "bytes", kind=int)
        digest = _get(header, "files", name, "sha256", kind=str)
        if not 0 <= size <= MAX_FILE_BYTES:
            raise _Malformed(
                f"files.{name}.bytes must lie in 0 to {MAX_FILE_BYTES}, not {quote(size)}"
            )
        if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
            raise _Malformed(
                f"files.{name}.sha256 must be 64 lowercase hex digits, not {quote(digest)}"
            )
    compress = st.castmode.value == "compress" and st.operation == "cast"
    want = {"vectors.txt", "vectors.memh", "vectors.npz"}
    if compress:
        want.add("packed.bin")
        if st.dtype.sspec is not None and st.dtype.sspec.is_sparse:
            want.add("packed_mask.bin")
        if set_layout(st).field("META") is not None:
            want.add("packed_meta.bin")
    if set(files) != want:
        raise _Malformed(f"files lists {sorted(files)}; this set has {sorted(want)}")
    return sorted(files)


# ------------------------------------------------------------------------- files
def _read_file(path: Path, name: str, meta: dict) -> bytes:
    """A plain file of the set, read only when its size is the header's, then hashed."""
    f = path / name
    if not os.path.lexists(f):
        raise GoldenSetError(f"{path}: {name} is missing; the set is damaged")
    size = meta["bytes"]
    try:
        fd = os.open(f, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        if f.is_symlink():
            raise GoldenSetError(
                f"{path}: {name} is not a plain file; the set is damaged"
            ) from None
        raise GoldenSetError(f"{path}: cannot read {name} ({err})") from None
    try:  # before fdopen, which refuses a directory with a raw IsADirectoryError
        st = os.fstat(fd)
        plain = stat.S_ISREG(st.st_mode) and not f.is_symlink()
    except OSError:
        plain = False
    if not plain:
        os.close(fd)
        raise GoldenSetError(f"{path}: {name} is not a plain file; the set is damaged")
    with os.fdopen(fd, "rb") as fh:
        if st.st_size != size:
            raise GoldenSetError(
                f"{path}: {name} does not match its size in {HEADER} ({st.st_size} bytes; "
                f"the header says {size}): the set is damaged; regenerate it"
            )
        try:
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
                raise _Malformed(f"vectors.npz holds {quote(sorted(got), 120)}, not {sorted(want)}")
            if any(i.compress_type != zipfile.ZIP_STORED for i in infos):
                raise _Malformed("vectors.npz has compressed members; a set's are stored")
            for f in layout.fields:
                _check_member(z, f, lines)
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except _Malformed:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError, TypeError) as err:
        raise _Malformed(f"vectors.npz is not a set's zip of arrays ({quote(str(err))})") from None
    except MemoryError:  # the checks above bound every array by the file's size; never trust
        raise _Malformed("vectors.npz declares arrays larger than memory") from None
    cols = {}
    for f in layout.fields:
        a = arrays[f.name.lower()]
        if f.bits < 8 * a.itemsize and a.size and int(a.max()) >> f.bits:
            raise _Malformed(f"vectors.npz: {f.name.lower()} has words wider than {f.bits} bits")
        cols[f.name] = a
    return cols


def _check_member(z: zipfile.ZipFile, f: Any, lines: int) -> None:
    """Refuse a ``.npy`` member whose header is not ``f``'s dtype and (lines, count) shape.

    Read from the member's header before any array is built, so a member that declares a
    huge shape is refused without allocating it; its size must be the header's plus exactly
    the data that shape and dtype take.
    """
    key = f.name.lower()
    dtype = np.dtype(np.uint64) if f.name == "MASK" else code_dtype(f.bits)
    info = z.getinfo(f"{key}.npy")
    with z.open(info) as m:
        version = np.lib.format.read_magic(m)
        read = {
            (1, 0): np.lib.format.read_array_header_1_0,
            (2, 0): np.lib.format.read_array_header_2_0,
        }
        if version not in read:
            raise _Malformed(f"vectors.npz: {key} is .npy version {version}, not 1.0")
        shape, fortran, got = read[version](m, max_header_size=10000)
        offset = m.tell()
    if got != dtype or fortran:
        raise _Malformed(f"vectors.npz: {key} has dtype {quote(str(got))}, not {dtype} in C order")
    if shape != (lines, f.count):
        raise _Malformed(
            f"vectors.npz: {key} has shape {quote(shape)}, but counts.lines and the layout say "
            f"({lines}, {f.count})"
        )
    nbytes = lines * f.count * dtype.itemsize
    if info.file_size != offset + nbytes:
        raise _Malformed(
            f"vectors.npz: {key} holds {info.file_size - offset} bytes of data, not {nbytes}"
        )


def _check_inputs(header: dict, st: Settings, cols: dict[str, np.ndarray]) -> None:
    """Refuse a set whose inputs are not the ones its settings generate.

    The inputs of a set are a function of its settings (cast sets: datatype, level, seed,
    count, input dtype, round mode; decode sets: datatype and seed): they are generated
    again and compared word for word, so a set cut down, reordered or with edited inputs is
    refused, and so is a ``cases`` entry that does not describe them.
    """
    if st.operation == "decode":
        want, info = decode_inputs(st)
    else:
        x2, rbits, lens, info = cast_inputs(st)
        given = {}
        if st.given:  # given parts: from the reference's cast of the same lines without them
            geo = geometry(st.dtype)
            xin = x2.reshape(-1) if geo.kind == "unscaled" else x2
            given = set_given_inputs(st, geo, xin, rbits, lens)
        x2 = np.ascontiguousarray(x2).view(cols["IN"].dtype)
        want = {"IN": x2, "RBITS": rbits, "LEN": lens, **given}
        want = {k: v.reshape(len(x2), -1) for k, v in want.items() if v is not None}
    for name, words in want.items():
        if words.shape != cols[name].shape or not np.array_equal(words, cols[name]):
            raise _Malformed(
                f"its {name} words are not the inputs this tcast generates for the set's "
                "settings (datatype, level, seed, count, input dtype): the set was cut or edited"
            )
    if json.loads(json.dumps(info)) != header.get("cases"):
        raise _Malformed("its cases entry does not describe the inputs its settings generate")


def _check_description(
    header: dict, st: Settings, layout: Layout, cols: dict[str, np.ndarray]
) -> None:
    """Refuse a header whose description of the set is not the one this tcast derives.

    A testbench decodes with the header alone (formats, codebook tables, rules, bit ranges,
    flag bits, counts): each entry is derived again from the settings and the columns and
    compared, so a re-digested header that tells another story is refused.
    """
    want = json.loads(json.dumps({**header_rules(st, layout), **header_outputs(layout, cols)}))
    want["datatype"]["name"] = header["datatype"]["name"]  # any name of it: _check_name
    for key, value in want.items():
        where = _first_path(header.get(key), value, key)
        if where is not None:
            raise _Malformed(
                f"its header's {where} is not what this tcast derives from the set's settings "
                "and columns"
            )


def _first_path(given: Any, want: Any, path: str) -> str | None:
    """The first place (a dotted path) where ``given`` differs from ``want``, or None."""
    if given == want and type(given) is type(want):
        return None
    if isinstance(given, dict) and isinstance(want, dict):
        for k in sorted(set(given) | set(want), key=str):
            sub = _first_path(given.get(k), want.get(k), f"{path}.{k}")
            if sub is not None:
                return sub
    if isinstance(given, list) and isinstance(want, list) and len(given) == len(want):
        for i, (g, w) in enumerate(zip(given, want, strict=True)):
            sub = _first_path(g, w, f"{path}[{i}]")
            if sub is not None:
                return sub
    return path


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
    if "META" in cols:
        gone = ~geo.meta_live(lens, len(cols["META"]))
        if cols["META"][gone].any():
            raise _Malformed("a META word of a subtile beyond LEN is not 0")
