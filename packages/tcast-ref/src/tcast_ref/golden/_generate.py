"""Build a golden set in memory: inputs, reference outputs, flags, files and header."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

import tcast
from tcast import (
    CastMode,
    CastResult,
    DataType,
    Hadamard,
    RoundMode,
    ScaleMode,
    ScaleSpec,
    SpecError,
    TileSpec,
    UnsupportedError,
    cast_mode,
    datatype,
    round_mode,
    scale_mode,
)
from tcast.kit import GIVEN_PARTS, check_given_parts, quote

from .._api import cast, upcast
from .._codec import code_dtype, encode
from .._hadamard import hadamard
from .._pack import pack_codes, pack_mask, unpack_codes, unpack_mask
from ._cases import (
    DEFAULT_COUNT,
    INPUT_TYPES,
    LEVELS,
    MAX_RANDOM_ELEMENTS,
    PARTIAL_PATTERNS,
    PATTERNS,
    SINGLE_TILES,
    exhaustive_inputs,
    grid_rule,
    partial_extents,
    partial_inputs,
    random_tiles,
    tile_inputs,
    tile_plan,
    unscaled_inputs,
)
from ._describe import datatype_description, policies
from ._files import npz_bytes, sha256, write_set
from ._flags import FLAGS, flag_docs, flags
from ._geometry import Geometry, geometry
from ._given import GIVEN_COLUMNS, GIVEN_RULE, GIVEN_STREAM, given_inputs, given_kwargs
from ._layout import Field, Layout
from ._meta_cases import meta_patterns, meta_tile_maker
from ._progress import progress
from ._random import Stream

__all__ = [
    "SCHEMA_VERSION",
    "GoldenSet",
    "Settings",
    "cast_inputs",
    "decode_inputs",
    "generate",
    "set_given_inputs",
    "write",
]

#: Version of the set format and of the semantics it encodes (SEMANTICS.md schema version).
SCHEMA_VERSION = 4
#: Philox counter offset of the random-bits stream (inputs use counters from 0).
RBITS_STREAM = 1 << 40
#: Largest decode set (lines) the exhaustive level writes.
MAX_DECODE_LINES = 1 << 22
_CHUNK_LINES = 4096


@dataclass(frozen=True)
class Settings:
    """Everything that determines a set (the command-line options)."""

    dtype: DataType
    roundmode: RoundMode = RoundMode.EVEN
    scalemode: ScaleMode = ScaleMode.FLOOR
    castmode: CastMode = CastMode.ACTUAL
    saturate: bool = True
    level: str = "1"
    seed: int = 0
    input_dtype: str = "float32"
    count: int | None = None
    #: a Hadamard transform before the cast (SEMANTICS.md 5.11), along each line's elements
    transform: Hadamard | None = None
    #: given scale parts (SEMANTICS.md 5.12): input columns GSCALE, GZERO, GTENSCALE
    given: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        dtype: DataType | str,
        *,
        roundmode: RoundMode | str = "even",
        scalemode: ScaleMode | str = "floor",
        castmode: CastMode | str = "actual",
        saturate: bool = True,
        level: str | int = "1",
        seed: int = 0,
        input_dtype: str = "float32",
        count: int | None = None,
        transform: Hadamard | None = None,
        given: tuple[str, ...] | list[str] = (),
    ) -> Settings:
        """Validate and normalize options.

        Raises:
            SpecError: for a bad datatype, mode, level, seed, count or input dtype, or a
                transform where the set has no line of tiles to run along (SEMANTICS.md 5.11);
                given parts (``scale``, ``zero``, ``tensor_scale``) the datatype has no place
                for, or with the exhaustive level of a scaled datatype (a decode set).
            UnsupportedError: for datatypes tcast cannot build yet (codebooks).
        """
        dt = dtype if isinstance(dtype, DataType) else datatype(dtype)
        level = level if isinstance(level, str) else str(level)
        if level not in LEVELS:
            raise SpecError(f"level must be one of {', '.join(LEVELS)}, got {quote(level)}")
        if not isinstance(input_dtype, str) or input_dtype not in INPUT_TYPES:
            raise SpecError(
                f"input dtype must be one of {', '.join(INPUT_TYPES)}, got {quote(input_dtype)}"
            )
        if not isinstance(seed, int) or not 0 <= seed < 1 << 64:
            raise SpecError(f"seed must be an integer in [0, 2**64), got {quote(seed)}")
        if count is not None and (
            not isinstance(count, int)
            or isinstance(count, bool)
            or not 0 <= count <= MAX_RANDOM_ELEMENTS
        ):
            raise SpecError(
                f"count must be an integer in [0, {MAX_RANDOM_ELEMENTS}] (2**24 random "
                f"elements at most), got {quote(count)}"
            )
        if not isinstance(saturate, bool):
            raise SpecError(f"saturate must be True or False, got {quote(saturate)}")
        if not saturate and dt.sspec is not None:
            raise SpecError(
                f"--ieee-overflow applies to unscaled casts; {dt.code} is scaled and its "
                "elements always saturate (SEMANTICS.md 5.2)"
            )
        if count is not None and level == "exhaustive":
            raise SpecError(
                "count sets the random part of levels 1 and 2; the exhaustive level has none"
            )
        _check_transform(dt, level, transform)
        given = _check_given(dt, level, given)
        return cls(
            dt,
            round_mode(roundmode),
            scale_mode(scalemode),
            cast_mode(castmode),
            saturate,
            level,
            seed,
            input_dtype,
            count,
            transform,
            given,
        )

    @property
    def operation(self) -> str:
        """``cast``, or ``decode`` for the exhaustive level of a scaled datatype."""
        return "decode" if self.level == "exhaustive" and self.dtype.sspec is not None else "cast"


def _check_given(dt: DataType, level: str, given: object) -> tuple[str, ...]:
    """The given parts in their order, refused where the set has no place for them."""
    try:
        names = None if isinstance(given, str) else tuple(given)  # an iterator read once
    except TypeError:
        names = None
    if names is None or not all(isinstance(p, str) for p in names):
        raise SpecError(f"given must be a sequence of part names, got {quote(given)}")
    parts = tuple(dict.fromkeys(names))
    bad = [p for p in parts if p not in GIVEN_PARTS]
    if bad:
        raise SpecError(
            f"given parts are {', '.join(GIVEN_PARTS)}; {', '.join(map(quote, bad))} is not one"
        )
    if not parts:
        return ()
    check_given_parts(dt, *((True if p in parts else None) for p in GIVEN_PARTS))
    if level == "exhaustive":
        raise SpecError(
            "given parts go with levels 1 and 2; the exhaustive level of a scaled datatype "
            "is a decode set (its scales are inputs already)"
        )
    return tuple(p for p in GIVEN_PARTS if p in parts)


def _check_transform(dt: DataType, level: str, h: Hadamard | None) -> None:
    """Refuse a transform a set cannot carry: lines of 1-D tiles or channels only."""
    if h is None:
        return
    if not isinstance(h, Hadamard):
        raise SpecError(
            f"transform must be a tcast.Hadamard or None, got {quote(h)}; build one with "
            "tcast.Hadamard.of, .seeded or .te_wgrad"
        )
    geo = geometry(dt)
    if level == "exhaustive" or geo.kind not in ("tile1d", "channel"):
        what = "the exhaustive level" if level == "exhaustive" else f"{dt.code}"
        raise SpecError(
            f"a transform runs along the lines of a set of 1-D tiles or channels (SEMANTICS.md "
            f"5.11); {what} has none: give a datatype with one tiled dimension (mxfp4, nvfp4, "
            "mxfp8 ...) at level 1 or 2"
        )
    if geo.size % h.size:
        raise SpecError(
            f"a transform of {h.size} elements does not divide the {geo.size}-element lines of "
            f"{dt.code}; give a size that divides {geo.size}"
        )


def partial_lines(st: Settings, geo: Geometry) -> bool:
    """Whether the set has partial-tile lines (a LEN column): tile sets without a transform.

    A transform needs whole groups, and its groups divide whole tiles only.
    """
    return geo.has_partial_tiles and st.transform is None


@dataclass
class GoldenSet:
    """A generated set: its header, column layout, arrays and file contents."""

    header: dict
    layout: Layout
    columns: dict[str, np.ndarray]
    files: dict[str, bytes] = field(default_factory=dict)


# ------------------------------------------------------------------------ casting
@dataclass
class _Cast:
    codes: np.ndarray
    decoded: np.ndarray
    virtual: np.ndarray | None
    scale: np.ndarray | None = None
    zero: np.ndarray | None = None
    tenscale: np.ndarray | None = None
    mask: np.ndarray | None = None
    meta: np.ndarray | None = None
    nanblock: np.ndarray | None = None
    transformed: np.ndarray | None = None


def _runs(lens: np.ndarray | None, n: int, per: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` groups of lines cast together: runs of equal extents, ``per`` at most."""
    if lens is None or n == 0:
        return [(lo, min(lo + per, n)) for lo in range(0, n, per)]
    change = np.flatnonzero((lens[1:] != lens[:-1]).any(axis=1)) + 1
    bounds = [0, *change.tolist(), n]
    return [
        (lo, min(lo + per, hi)) for a, hi in itertools.pairwise(bounds) for lo in range(a, hi, per)
    ]


def run_cast(
    x: np.ndarray,
    st: Settings,
    geo: Geometry,
    rbits: np.ndarray | None,
    engine: Any = None,
    quiet: bool = True,
    lens: np.ndarray | None = None,
    given: dict[str, np.ndarray] | None = None,
) -> _Cast:
    """Cast lines (``(N,)`` unscaled or ``(N, size)``) with an engine (default: the reference).

    ``engine`` is an object with ``cast_numpy(x, dt, **kw)`` and ``upcast_numpy(result)``
    (see ``_verify``); None uses ``tcast_ref`` directly. ``lens`` (``(N, segments)``, the
    LEN column) gives each line's extent: consecutive lines of one extent are cast together
    (at most ``lines_per_tensor`` of them), as an array of that extent. ``given``: the
    GSCALE/GZERO/GTENSCALE columns of a set with given parts (SEMANTICS.md 5.12).
    """
    kw = {"roundmode": st.roundmode, "scalemode": st.scalemode, "saturate": st.saturate}
    if st.transform is not None:
        kw["transform"] = st.transform
    do_cast = cast if engine is None else engine.cast_numpy
    do_up = upcast if engine is None else engine.upcast_numpy
    dt = st.dtype
    want_virtual = st.castmode is CastMode.VIRTUAL
    # a compress set takes its codes from the packed stream, so an engine's packing is checked
    mode = "compress" if st.castmode is CastMode.COMPRESS else "actual"
    if geo.kind == "unscaled":
        res = do_cast(x, dt, castmode=mode, rbits=rbits, **kw)
        virt = do_cast(x, dt, castmode="virtual", rbits=rbits, **kw) if want_virtual else None
        codes, _ = _codes_of(res, x.shape)
        return _Cast(codes, np.asarray(do_up(res)), virt)
    per = geo.lines_per_tensor or max(len(x), 1)
    parts: list[_Cast] = []
    with progress(len(x), f"cast {dt.code}", quiet) as bar:
        for lo, hi in _runs(lens, len(x), per):
            lines = x[lo:hi]
            ext = None if lens is None else tuple(int(e) for e in lens[lo])
            arr = geo.to_array(lines, ext)
            rb = None if rbits is None else geo.to_array(rbits[lo:hi], ext)
            kw_run = kw if not given else {**kw, **given_kwargs(dt, geo, given, lo, hi, arr.shape)}
            res = do_cast(arr, dt, castmode=mode, rbits=rb, **kw_run)
            codes, mask = _codes_of(res, arr.shape)
            tlines = None
            if st.transform is not None:
                # T: the values the codes encode; the flags compare them with the decoded
                # codes, before the inverse transform
                do_h = hadamard if engine is None else engine.hadamard_numpy
                tlines = geo.from_array(do_h(arr, st.transform, geo.tile_dims[0]), ext)
                res = replace(res, transform=None)
            dec = geo.from_array(np.asarray(do_up(res)), ext)
            virt = None
            if want_virtual:
                virt = do_cast(arr, dt, castmode="virtual", rbits=rb, **kw_run)
                virt = geo.from_array(np.asarray(virt), ext)
            g = len(lines)
            scale = geo.scales_from_array(res.scale)
            parts.append(
                _Cast(
                    codes=geo.from_array(codes, ext),
                    decoded=dec,
                    virtual=virt,
                    scale=scale,
                    zero=None if res.zero is None else geo.scales_from_array(res.zero),
                    tenscale=None
                    if res.tenscale is None
                    else np.full(
                        g, np.asarray(res.tenscale).reshape(()), np.asarray(res.tenscale).dtype
                    ),
                    mask=None if mask is None else geo.from_array(mask, ext),
                    meta=None
                    if not geo.meta_count or want_virtual
                    else geo.meta_from_array(_meta_of(res, geo.meta_shape(arr.shape, ext)), ext),
                    transformed=tlines,
                )
            )
            bar.update(g)
    joined = {}
    for f in fields(_Cast):
        got = [getattr(p, f.name) for p in parts]
        joined[f.name] = None if got[0] is None else np.concatenate(got)
    out = _Cast(**joined)
    s = dt.sspec.scale
    nb = out.scale.astype(np.int64) == s.nan_code
    if out.tenscale is not None and dt.tenscale.nan_code is not None:
        nb |= out.tenscale.astype(np.int64) == dt.tenscale.nan_code
    out.nanblock = np.repeat(nb[:, None], geo.size, axis=1)
    return out


def _codes_of(res: CastResult, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray | None]:
    """Element codes (in ``shape``) and keep-mask of an actual or compress result."""
    bits = res.dtype.nspec.bits
    mask = None if res.mask is None else np.asarray(res.mask)
    if res.castmode is not CastMode.COMPRESS:
        return np.asarray(res.data).reshape(shape), mask
    count = int(np.prod(shape, dtype=np.int64))
    data = np.asarray(res.data)
    if mask is None:
        return unpack_codes(data, bits, count).reshape(shape), None
    keep = unpack_mask(mask, count)
    codes = np.zeros(count, code_dtype(bits))
    codes[keep] = unpack_codes(data, bits, int(keep.sum()))
    return codes.reshape(shape), keep.reshape(shape)


def _meta_of(res: CastResult, shape: tuple[int, ...]) -> np.ndarray:
    """The metadata words of an actual or compress result, in ``shape`` (C order)."""
    meta = np.asarray(res.meta)
    if res.castmode is CastMode.COMPRESS:
        count = int(np.prod(shape, dtype=np.int64))
        meta = unpack_codes(meta.reshape(-1), res.dtype.meta_bits, count)
    return meta.astype(np.uint8).reshape(shape)


def _f32(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # signaling NaN inputs widen quietly
        return x.astype(np.float32)


# ------------------------------------------------------------------------ layouts
def _input_field(st: Settings, count: int) -> Field:
    return Field("IN", count, INPUT_TYPES[st.input_dtype][2], "input", st.input_dtype)


def cast_layout(st: Settings, geo: Geometry) -> Layout:
    """The columns of a cast set."""
    dt, t = st.dtype, geo.size
    fields = [_input_field(st, t)]
    if st.roundmode is RoundMode.STOCHASTIC:
        k = dt.nspec.rbits_width  # K random bits per element (SEMANTICS.md §3.3)
        fields.append(Field("RBITS", t, k, "input", f"rbits{k}"))
    if partial_lines(st, geo):
        fields.append(Field("LEN", len(geo.tile_shape), 16, "input", "extent"))
    parts = {
        "scale": dt.sspec.scale if dt.sspec else None,
        "zero": dt.zero,
        "tensor_scale": dt.tenscale,
    }
    for part in st.given:  # given scale parts (SEMANTICS.md 5.12): codes of their formats
        spec = parts[part]
        fields.append(Field(GIVEN_COLUMNS[part], 1, spec.bits, "input", spec.code))
    if st.transform is not None:
        fields.append(Field("T", t, 32, "output", "float32"))
    virtual = st.castmode is CastMode.VIRTUAL
    if dt.sspec is not None and not virtual:
        fields.append(Field("SCALE", 1, dt.sspec.scale.bits, "output", dt.sspec.scale.code))
        if dt.zero is not None:
            fields.append(Field("ZERO", 1, dt.zero.bits, "output", dt.zero.code))
        if dt.tenscale is not None:
            fields.append(Field("TENSCALE", 1, dt.tenscale.bits, "output", dt.tenscale.code))
        if dt.sspec.is_sparse:
            fields.append(Field("MASK", (t + 31) // 32, min(t, 32), "output", "mask"))
        if geo.meta_count:
            fields.append(Field("META", geo.meta_count, dt.meta_bits, "output", meta_format(dt)))
    if virtual:
        fields.append(Field("OUT", t, INPUT_TYPES[st.input_dtype][2], "output", st.input_dtype))
    else:
        fields.append(Field("OUT", t, dt.nspec.bits, "output", dt.nspec.code))
    fields.append(Field("FLAGS", t, 8, "output", "flags8"))
    return Layout(tuple(fields))


def meta_format(dt: DataType) -> str:
    """What a META word holds: ``offset`` (subtile exponent offsets) or ``mapping`` (codebook)."""
    return "mapping" if dt.nspec.is_codebook else "offset"


def _mask_words(mask: np.ndarray) -> np.ndarray:
    n, t = mask.shape
    words = (t + 31) // 32
    padded = np.zeros((n, words * 32), np.uint64)
    padded[:, :t] = mask
    w = padded.reshape(n, words, 32) << np.arange(32, dtype=np.uint64)
    return w.sum(axis=2, dtype=np.uint64)


def _cast_set(
    st: Settings,
    quiet: bool,
    engine: Any = None,
    x2: np.ndarray | None = None,
    rbits: np.ndarray | None = None,
    lens: np.ndarray | None = None,
    given: dict[str, np.ndarray] | None = None,
) -> tuple[Layout, dict[str, np.ndarray], dict]:
    """A cast set; ``x2`` (with ``rbits``, ``lens``, ``given``) given: those cast by ``engine``."""
    geo = geometry(st.dtype)
    info: dict[str, Any] = {}
    if x2 is None:
        x2, rbits, lens, info = cast_inputs(st, quiet)
    xin = x2.reshape(-1) if geo.kind == "unscaled" else x2
    rin = None if rbits is None else (rbits.reshape(-1) if geo.kind == "unscaled" else rbits)
    if st.given and given is None:
        given = set_given_inputs(st, geo, xin, rin, lens, quiet)
    res = run_cast(xin, st, geo, rin, engine=engine, quiet=quiet, lens=lens, given=given)
    columns = _columns(st, geo, x2, rbits, res, lens)
    for name, words in (given or {}).items():
        columns[name] = words.reshape(-1, 1)
    return cast_layout(st, geo), columns, info


def set_given_inputs(
    st: Settings,
    geo: Geometry,
    xin: np.ndarray,
    rin: np.ndarray | None,
    lens: np.ndarray | None,
    quiet: bool = True,
) -> dict[str, np.ndarray]:
    """The GSCALE/GZERO/GTENSCALE words of a set with given parts.

    From the reference's cast of the same lines without them (``_given.given_inputs``).
    """
    computed = run_cast(xin, replace(st, given=()), geo, rin, quiet=quiet, lens=lens)
    per = geo.lines_per_tensor or max(len(xin), 1)
    return given_inputs(st, geo, computed, _runs(lens, len(xin), per))


def cast_inputs(
    st: Settings, quiet: bool = True
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, dict]:
    """The inputs of the cast set ``st`` describes: a function of its settings alone.

    Returns:
        The IN values (``(lines, elements per line)``, in the input dtype), the RBITS words
        (stochastic rounding) or None, the LEN extents (partial tiles) or None, and the
        header's ``cases`` entry that documents them.
    """
    dt = st.dtype
    geo = geometry(dt)
    rng = Stream(st.seed)
    info: dict[str, Any] = {"geometry": geo.describe()}
    if st.transform is not None:
        info["geometry"]["padding"] = (
            "none: every line is one whole block (a transform needs whole groups, so the set "
            "has no partial tiles; SEMANTICS.md 5.11)"
        )
    lens = rbits = None
    if geo.kind == "unscaled":
        if st.level == "exhaustive":
            x = exhaustive_inputs(st.input_dtype)
            info["inputs"] = (
                "every float16 and every bfloat16 pattern"
                if st.input_dtype == "float32"
                else f"every {st.input_dtype} pattern"
            )
        else:
            count = DEFAULT_COUNT[st.level][0] if st.count is None else st.count
            x = unscaled_inputs(dt.nspec, st.input_dtype, st.level, count, rng)
            info["inputs"] = {
                "random_values": count,
                "grid": grid_rule(dt.nspec),
                "order": "the format's values, the midpoints between neighbours and the "
                "overflow edges (both signs), their neighbours in the input dtype, the input "
                "dtype's specials, then the random values; repeated bit patterns dropped "
                "(first kept)",
            }
        x2 = x.reshape(-1, 1)
    else:
        count = DEFAULT_COUNT[st.level][1] if st.count is None else st.count
        if count * geo.size > MAX_RANDOM_ELEMENTS:
            raise SpecError(
                f"count {count} asks for {count} tiles of {geo.size} elements, more than "
                f"{MAX_RANDOM_ELEMENTS} (2**24) random elements; give a count of at most "
                f"{MAX_RANDOM_ELEMENTS // geo.size} for {dt.code}"
            )
        plan = tile_plan(dt, st.input_dtype, st.level, count)
        extra = meta_patterns(dt)  # the subtile and codebook patterns, after the others
        if extra:
            repeat = len(plan.patterns) // len(PATTERNS)
            plan = replace(plan, patterns=plan.patterns + tuple(extra) * repeat)
        special = meta_tile_maker(dt, geo, st.input_dtype) if extra else None
        n_tiles = len(plan.exponents) * len(plan.patterns) + plan.random
        with progress(n_tiles, f"inputs {dt.code}", quiet) as bar:  # tiles, not lines
            x2 = tile_inputs(dt, geo.size, st.input_dtype, plan, rng, bar, special)
        if dt.is_multiscale:
            # a NaN/Inf anywhere makes the whole tensor non-finite (5.6): such tiles go last,
            # into tensors of their own, after random finite tiles that complete the last
            # finite tensor, so that every finite tile is in a finite tensor
            bad = ~np.isfinite(x2.astype(np.float32)).all(axis=1)
            fill = -int((~bad).sum()) % geo.lines_per_tensor
            filler = random_tiles(dt, geo.size, st.input_dtype, 0, fill, rng)
            x2 = np.concatenate([x2[~bad], filler, x2[bad]])
        info["inputs"] = {
            "scale_positions_k": list(plan.exponents),
            "patterns": {p: {**PATTERNS, **extra}[p] for p in dict.fromkeys(plan.patterns)},
            "single_tiles": SINGLE_TILES,
            "tiles_per_position": len(plan.patterns),
            "random_tiles": plan.random,
            "pattern_order": list(plan.patterns),
            "single_tile_order": list(SINGLE_TILES),
            "grid": grid_rule(dt.nspec),
            "neighbour_steps": plan.reach,
            "order": "for each k of scale_positions_k, one tile per entry of pattern_order; "
            "then single_tile_order; then random_tiles random tiles"
            + (
                "; then (two-level) the finite tiles keep this order, filler_tiles follow, and "
                "the tiles holding NaN/Inf are moved last"
                if dt.is_multiscale
                else ""
            ),
        }
        if dt.is_multiscale:
            info["inputs"]["filler_tiles"] = {
                "count": fill,
                "rule": "random tiles at k = 0 after the finite tiles, so the "
                "finite tiles fill whole tensors; the tiles holding NaN/Inf come last",
            }
        if st.transform is not None:
            info["inputs"]["transform"] = (
                "the lines of the same set without a transform (no partial tiles): scale "
                "positions and patterns describe IN; the transform mixes each group, and the "
                "cast's cases arise in T"
            )
        x2, lens = _with_partial_tiles(st, geo, x2, rng, info["inputs"])
    if st.roundmode is RoundMode.STOCHASTIC:
        k = st.dtype.nspec.rbits_width  # the low K bits of each word: K-bit integers
        words = Stream(st.seed, RBITS_STREAM).words(x2.size).reshape(x2.shape)
        rbits = (words & np.uint32((1 << k) - 1)).astype(np.uint8 if k == 8 else np.uint16)
    return x2, rbits, lens, info


def _with_partial_tiles(
    st: Settings, geo: Geometry, x2: np.ndarray, rng: Stream, inputs: dict
) -> tuple[np.ndarray, np.ndarray | None]:
    """The whole tiles followed by the partial tiles, and every line's extent (LEN)."""
    if not partial_lines(st, geo):
        return x2, None
    dt = st.dtype
    channel = tuple(t.is_channel for t in dt.sspec.tiles)
    extents = partial_extents(geo.tile_shape, channel, st.level)
    repeat = geo.lines_per_tensor or len(PARTIAL_PATTERNS)
    part, part_lens = partial_inputs(dt, geo.tile_shape, extents, repeat, st.input_dtype, rng)
    whole = np.tile(np.array(geo.tile_shape, np.uint16), (x2.shape[0], 1))
    inputs["partial_tiles"] = {
        "extents": [list(e) for e in extents],
        "lines_per_extent": repeat,
        "patterns": list(PARTIAL_PATTERNS),
        "first_line": int(x2.shape[0]) + 1,
        "rule": "after the whole tiles: for each extent (LEN: the length along each tile "
        "segment), lines_per_extent lines cycling over patterns at k = 0, built on the "
        "present elements; elements beyond the extent are absent: IN +0, OUT 0, FLAGS "
        "absent (0x80), not compared"
        + (
            "; each extent's lines are one tensor of their own (two-level scaling)"
            if dt.is_multiscale
            else ""
        ),
    }
    return np.concatenate([x2, part]), np.concatenate([whole, part_lens])


def _columns(
    st: Settings,
    geo: Geometry,
    x2: np.ndarray,
    rbits: np.ndarray | None,
    res: _Cast,
    lens: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    dt = st.dtype
    n_lines = x2.shape[0]
    codes = res.codes.reshape(n_lines, -1)
    dec = res.decoded.reshape(n_lines, -1)
    ubits = INPUT_TYPES[st.input_dtype][1]
    cols: dict[str, np.ndarray] = {"IN": np.ascontiguousarray(x2).view(ubits)}
    if rbits is not None:
        cols["RBITS"] = rbits
    if lens is not None:
        cols["LEN"] = lens.astype(np.uint16)
    if res.transformed is not None:
        cols["T"] = np.ascontiguousarray(res.transformed.reshape(n_lines, -1)).view(np.uint32)
    keep = None if res.mask is None else res.mask.reshape(n_lines, -1).astype(bool)
    if dt.sspec is not None and st.castmode is not CastMode.VIRTUAL:
        cols["SCALE"] = res.scale.reshape(n_lines, 1)
        if res.zero is not None:
            cols["ZERO"] = res.zero.reshape(n_lines, 1)
        if res.tenscale is not None:
            cols["TENSCALE"] = res.tenscale.reshape(n_lines, 1)
        if keep is not None:
            cols["MASK"] = _mask_words(keep)
        if res.meta is not None:
            cols["META"] = res.meta.reshape(n_lines, -1).astype(np.uint8)
    if st.castmode is CastMode.VIRTUAL:
        cols["OUT"] = np.ascontiguousarray(res.virtual.reshape(n_lines, -1)).view(ubits)
    else:
        cols["OUT"] = codes.astype(code_dtype(dt.nspec.bits))
    nanblock = None if res.nanblock is None else res.nanblock.reshape(n_lines, -1)
    # with a transform the flags describe the cast of T (the values the codes encode)
    xf = _f32(x2) if res.transformed is None else res.transformed.reshape(n_lines, -1)
    cols["FLAGS"] = flags(xf, codes, dec, dt, nanblock, keep)
    if lens is not None:  # absent elements of partial tiles: nothing but the absent flag
        absent = ~geo.live(lens)
        cols["FLAGS"][absent] = FLAGS["absent"]
        cols["OUT"][absent] = 0
    return cols


# ------------------------------------------------------------------------- decode
def _decode_datatype(dt: DataType) -> DataType:
    """The same number specs with a channel scale: decoding does not depend on the tiles."""
    ss = dt.sspec
    return DataType(dt.nspec, ScaleSpec(ss.scale, ss.second, (TileSpec(0),)))


def _second_codes(spec, budget: int, rng: Stream) -> tuple[list[int], str]:
    """Every code of the second spec when it fits ``budget``, else a documented sample."""
    if spec.bits <= 16 and (1 << spec.bits) <= budget:
        return list(range(1 << spec.bits)), "every code"
    picks = {0, 1, spec.max_code, spec.sign_bit if spec.is_float else 0}
    values = np.array([1.0, 0.5, 2.0, spec.smallest_normal, float(spec.max_value)], np.float32)
    picks.update(int(c) for c in encode(values, spec, RoundMode.EVEN, None, True))
    extra = rng.below(1 << min(spec.bits, 31), 16)
    picks.update(int(c) for c in extra)
    codes = sorted(c for c in picks if c < (1 << spec.bits))
    return (
        codes,
        "a sample: 0, 1, the largest code, the codes of 1, 0.5, 2, the smallest normal "
        "and the max, and 16 codes drawn from the set's Philox stream",
    )


def decode_inputs(st: Settings) -> tuple[dict[str, np.ndarray], dict]:
    """The inputs of the decode set ``st`` describes: a function of its settings alone.

    Every element code under every scale code, the element code varying fastest, then the
    scale code, then the zero point or tensor scale (every code, or a sample drawn from the
    set's seed): one tensor of (scale codes, element codes) per second code.

    Returns:
        The input columns (``CODE``, ``SCALE`` and ``ZERO`` or ``TENSCALE``, each
        ``(lines, 1)`` of code words) and the header's ``cases`` entry that documents them.

    Raises:
        UnsupportedError: for a scale format of more than 16 bits, or more lines than
            ``MAX_DECODE_LINES``.
    """
    dt = st.dtype
    n, s, second = dt.nspec, dt.sspec.scale, dt.sspec.second
    if n.is_codebook or dt.meta_bits:
        what = (
            "the codebook tables (the header of a level 1 or 2 set lists them)"
            if n.is_codebook
            else "the subtile exponent offsets (META words of a level 1 or 2 set)"
        )
        raise UnsupportedError(
            f"exhaustive decode sets of {dt.code} are not generated: its values depend on "
            f"{what}; use --level 1 or 2"
        )
    if s.bits > 16:
        raise UnsupportedError(
            f"exhaustive decode of {dt.code} needs a scale format of at most 16 bits to "
            f"enumerate, not {s.code}; use --level 1 or 2"
        )
    n_codes, n_scales = 1 << n.bits, 1 << s.bits
    sec_codes: list[int] = []
    sec_rule = None
    if second is not None:
        budget = max(1, MAX_DECODE_LINES // (n_codes * n_scales))
        sec_codes, sec_rule = _second_codes(second, budget, Stream(st.seed))
    tensors = max(len(sec_codes), 1)
    lines = n_codes * n_scales * tensors
    if lines > MAX_DECODE_LINES:
        raise UnsupportedError(
            f"exhaustive decode of {dt.code} would need {lines} lines "
            f"(more than {MAX_DECODE_LINES})"
        )
    per_tensor = n_codes * n_scales
    cols = {
        "CODE": np.tile(np.arange(n_codes), n_scales * tensors).astype(code_dtype(n.bits)),
        "SCALE": np.tile(np.repeat(np.arange(n_scales), n_codes), tensors).astype(
            code_dtype(s.bits)
        ),
    }
    if second is not None:
        name = decode_layout(dt).fields[2].name  # ZERO or TENSCALE
        cols[name] = np.repeat(np.array(sec_codes, np.int64), per_tensor).astype(
            code_dtype(second.bits)
        )
    info = {
        "inputs": {
            "element_codes": "every code",
            "scale_codes": "every code",
            **({} if second is None else {"second_codes": sec_rule, "second_code_list": sec_codes}),
        },
        "geometry": {
            "kind": "decode",
            "rule": "VALUE = upcast of one element code under one "
            "scale (and zero point / tensor scale), as float32 (SEMANTICS.md 2, 5)",
        },
    }
    return {k: v.reshape(-1, 1) for k, v in cols.items()}, info


def _decode_set(
    st: Settings, quiet: bool, engine: Any = None
) -> tuple[Layout, dict[str, np.ndarray], dict]:
    """A decode set: the inputs of :func:`decode_inputs` upcast by ``engine``, tensor by tensor."""
    dt = st.dtype
    do_up = upcast if engine is None else engine.upcast_numpy
    ddt = _decode_datatype(dt)
    layout = decode_layout(dt)
    cols, info = decode_inputs(st)
    n_codes = 1 << dt.nspec.bits
    per_tensor = n_codes << dt.sspec.scale.bits
    second = layout.fields[2].name if dt.sspec.second is not None else None
    values = []
    lines = len(cols["CODE"])
    with progress(lines // per_tensor, f"decode {dt.code}", quiet) as bar:
        for lo in range(0, lines, per_tensor):
            # one tensor: a row of every element code per scale code (a channel scale)
            data = np.ascontiguousarray(cols["CODE"][lo : lo + per_tensor].reshape(-1, n_codes))
            scale = np.ascontiguousarray(cols["SCALE"][lo : lo + per_tensor : n_codes])
            zero = tens = None
            if second == "ZERO":
                zero = np.ascontiguousarray(cols["ZERO"][lo : lo + per_tensor : n_codes])
            elif second == "TENSCALE":
                tens = np.array(cols["TENSCALE"][lo, 0])
            r = CastResult(
                data=data,
                scale=scale,
                zero=zero,
                tenscale=tens,
                mask=None,
                meta=None,
                dtype=ddt,
                shape=data.shape,
                castmode=CastMode.ACTUAL,
                input_dtype="float32",
                engine="ref",
            )
            values.append(np.asarray(do_up(r), np.float32).reshape(-1).view(np.uint32))
            bar.update(1)
    cols["VALUE"] = np.concatenate(values).reshape(-1, 1)
    return layout, cols, info


def decode_layout(dt: DataType) -> Layout:
    """The columns of a decode set of scaled datatype ``dt``."""
    n, s, second = dt.nspec, dt.sspec.scale, dt.sspec.second
    fields = [Field("CODE", 1, n.bits, "input", n.code), Field("SCALE", 1, s.bits, "input", s.code)]
    if second is not None:
        name = "ZERO" if dt.zero is not None else "TENSCALE"
        fields.append(Field(name, 1, second.bits, "input", second.code))
    fields.append(Field("VALUE", 1, 32, "output", "float32"))
    return Layout(tuple(fields))


def set_layout(st: Settings) -> Layout:
    """The columns of the set that ``st`` describes."""
    if st.operation == "decode":
        return decode_layout(st.dtype)
    return cast_layout(st, geometry(st.dtype))


# ------------------------------------------------------------------------- output
def _file_bytes(
    layout: Layout, cols: dict[str, np.ndarray], st: Settings, quiet: bool, extra: dict[str, bytes]
) -> dict[str, bytes]:
    n_lines = next(iter(cols.values())).shape[0]
    txt = [f"# {layout.comment()}\n".encode("ascii")]
    memh = [f"// {layout.comment()}\n".encode("ascii")]
    with progress(n_lines, "format", quiet) as bar:
        for lo in range(0, n_lines, _CHUNK_LINES):
            part = {k: v[lo : lo + _CHUNK_LINES] for k, v in cols.items()}
            txt.append(layout.format_bytes(part, " "))
            memh.append(layout.format_bytes(part, "_"))
            bar.update(min(_CHUNK_LINES, n_lines - lo))
    arrays = {k.lower(): v for k, v in cols.items()}
    return {
        "vectors.txt": b"".join(txt),
        "vectors.memh": b"".join(memh),
        "vectors.npz": npz_bytes(arrays),
        **extra,
    }


def set_files(
    st: Settings, layout: Layout, cols: dict[str, np.ndarray], quiet: bool = True
) -> dict[str, bytes]:
    """Every file of a set but its header, from its columns.

    What :func:`generate` writes, and what ``tcast verify`` derives again from a set's
    ``vectors.npz`` to check that every form of the set says the same.
    """
    extra: dict[str, bytes] = {}
    if st.castmode is CastMode.COMPRESS and st.operation == "cast":
        codes = cols["OUT"].reshape(-1)
        keep = None
        if "MASK" in cols:
            keep = _unmask(cols["MASK"], layout.field("OUT").count).reshape(-1)
            codes = codes[keep]
            extra["packed_mask.bin"] = pack_mask(keep).tobytes()
        extra["packed.bin"] = pack_codes(codes, st.dtype.nspec.bits).tobytes()
        if "META" in cols:
            meta = cols["META"].reshape(-1)
            extra["packed_meta.bin"] = pack_codes(meta, st.dtype.meta_bits).tobytes()
    return _file_bytes(layout, cols, st, quiet, extra)


def header_rules(st: Settings, layout: Layout) -> dict:
    """The header entries that follow from a set's settings and layout alone.

    Everything a decoder reads (the formats, codebook tables, rules, column layout and bit
    ranges, flag bits): ``tcast verify`` derives them again and refuses a header that says
    anything else.
    """
    dt = st.dtype
    # a key of its own only with a transform: the headers of sets without one are unchanged
    extra = {} if st.transform is None else {"transform": transform_description(st.transform)}
    if st.given:  # a key of its own only with given parts, likewise
        extra["given"] = {
            "parts": list(st.given),
            "columns": [GIVEN_COLUMNS[p] for p in st.given],
            "given_stream": GIVEN_STREAM,
            "rule": GIVEN_RULE,
            "semantics": "each word's value is the cast's given part (SEMANTICS.md 5.12); "
            "SCALE, ZERO and TENSCALE hold the codes the cast used",
        }
    return {
        **extra,
        "schema_version": SCHEMA_VERSION,
        "semantics": f"tcast SEMANTICS.md, schema version {SCHEMA_VERSION}",
        "operation": st.operation,
        "datatype": datatype_description(dt),
        "policies": policies(dt, st.roundmode, st.scalemode, st.saturate, st.castmode),
        "modes": {
            "castmode": st.castmode.value,
            "roundmode": st.roundmode.value,
            "scalemode": st.scalemode.value,
            "saturate": st.saturate,
            "scalemode_applies": dt.sspec is not None
            and dt.sspec.scale.is_exponent
            and not dt.nspec.is_uint,
        },
        "input_dtype": st.input_dtype,
        "level": st.level,
        "random": {
            "generator": "Philox4x32-10, word 0 at consecutive counters (= Triton "
            "tl.randint(seed, counter)); not the seeded-cast rule of SEMANTICS.md 3.3",
            "seed": st.seed,
            "inputs_stream": "counters from 0: choices are word mod n, signs the low bit",
            "rbits_stream": (
                f"RBITS[i] = the low {st.dtype.nspec.rbits_width} bits of word 0 at counter "
                f"{RBITS_STREAM} + i (i = line * elements_per_line + element)"
            )
            if st.roundmode is RoundMode.STOCHASTIC
            else None,
        },
        "layout": {
            "fields": [f.describe() for f in layout.fields],
            "words_per_line": layout.words,
            "memh_word_bits": layout.memh_bits,
            "memh_ranges": layout.memh_ranges(),
            "txt": "one line per case after one '#' comment line; words separated by one "
            "space; fixed-width uppercase hex",
            "memh": "one line per case after one '//' comment line; the words of a line "
            "joined by '_' into one word of memh_word_bits bits, first word most "
            "significant",
            "npz": "one array per field, named in lower case, shape (lines, count)",
        },
        "flags": flag_docs(dt) if layout.field("FLAGS") is not None else None,
    }


def signs_text(h: Hadamard) -> str:
    """A transform's signs as a header and ``--transform`` write them: ``+`` or ``-`` each."""
    return "".join("+" if s > 0 else "-" for s in h.signs)


def hadamard_of_text(size: int, text: str) -> Hadamard:
    """The transform of ``size`` with the signs :func:`signs_text` wrote.

    Raises:
        SpecError: for a character other than ``+`` and ``-``, or signs that do not fit the
            size.
    """
    if set(text) - set("+-"):
        raise SpecError(f"signs are + and - characters, not {quote(text[:40])}")
    return Hadamard.of(size, [1 if c == "+" else -1 for c in text])


def transform_description(h: Hadamard) -> dict:
    """A set's transform as its header states it (``tcast verify`` reads it back)."""
    return {
        "kind": "hadamard",
        "size": h.size,
        "signs": signs_text(h),
        "normalization": f"2^-{h.shift}",
        "rule": "SEMANTICS.md 5.10 and 5.11: each line's elements, in groups of size "
        "consecutive elements, are widened to float32, multiplied by their signs (sign i for "
        "element i of a group), transformed by the float32 butterfly (stages h = 1, 2, ..., "
        "size/2, each add and subtract rounded to nearest even) and multiplied by the "
        "normalization; the cast encodes these values (column T). FLAGS describe the cast of T. "
        "A virtual set's OUT is the inverse transform of the decoded values, rounded to the "
        "input dtype",
    }


def header_outputs(layout: Layout, cols: dict[str, np.ndarray]) -> dict:
    """The header entries that summarize a set's columns (counts, the outputs' digest)."""
    out = "OUT" if "OUT" in cols else "VALUE"
    words = np.ascontiguousarray(cols[out])
    n_lines = words.shape[0]
    return {
        "counts": {
            "lines": int(n_lines),
            "elements": int(n_lines * layout.field(out).count),
            "flagged": _flag_counts(cols.get("FLAGS")),
        },
        "digests": {
            "outputs_sha256": sha256(
                words.astype(np.dtype(words.dtype).newbyteorder("<")).tobytes()
            )
        },
    }


def generate(st: Settings, quiet: bool = True) -> GoldenSet:
    """Generate a set in memory (nothing is written).

    Raises:
        UnsupportedError: exhaustive decode of a datatype whose scale (more than 16 bits) or
            size cannot be enumerated.
    """
    if st.operation == "decode":
        layout, cols, info = _decode_set(st, quiet)
    else:
        layout, cols, info = _cast_set(st, quiet)
    files = set_files(st, layout, cols, quiet)
    header = {
        "tcast_version": tcast.__version__,
        "cases": info,
        **header_rules(st, layout),
        **header_outputs(layout, cols),
    }
    return GoldenSet(header, layout, cols, files)


def _unmask(words: np.ndarray, t: int) -> np.ndarray:
    bits = (words.astype(np.uint64)[:, :, None] >> np.arange(32, dtype=np.uint64)) & np.uint64(1)
    return bits.reshape(words.shape[0], -1)[:, :t].astype(bool)


def _flag_counts(f: np.ndarray | None) -> dict | None:
    if f is None:
        return None
    return {name: int(np.count_nonzero(f & bit)) for name, bit in FLAGS.items()}


def write(gs: GoldenSet, out: Path | str) -> list[Path]:
    """Write a generated set into ``out``, replacing only an earlier set's files.

    Returns:
        Directories in ``out`` kept from runs killed while replacing a set: they hold that
        set's files (see :func:`write_set`).

    Raises:
        FileExistsError: when ``out`` exists and is not a golden-vector set.
        OSError: when the files cannot be written (nothing is left behind).
    """
    return write_set(Path(out), gs.files, gs.header)
