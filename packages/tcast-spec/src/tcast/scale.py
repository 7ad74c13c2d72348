"""Scale specs: which scales a datatype carries and over which elements each is shared.

Grammar (segments joined by ``_``)::

    <scale nspec> [_<second nspec>] [_<tile>] [_<tile>]
    tile := t[<T>][s<S>[o<B>]][n<N>m<M>][d<D>]

* zero tiles: one scale for the whole tensor; one tile: 1-D tiles along one
  dimension (the last unless ``d<D>`` says otherwise); two tiles: 2-D tiles, the
  first segment along the second-to-last dimension and the second along the last
  (again unless ``d<D>``).
* ``T`` is a power of two in 2..1024; ``t`` or ``t0`` is a channel: the tile spans
  the whole dimension. A 2-D tile has at most one channel segment.
* ``s<S>`` is a subtile: ``S`` a power of two, ``2 <= S < T`` (any power of two >= 2 for
  a channel). Codebook datatypes choose a mapping per subtile; ``o<B>`` (``B`` in 1..4,
  only after ``s<S>``) gives each subtile a ``B``-bit exponent offset (MSFP:
  ``int8_e8m0_t16s2o1``). In a 2-D tile at most one segment carries ``o<B>`` (the offset
  belongs to the 2-D subtile); a segment without ``s<S>`` spans its whole tile. Subtiles
  and sparsity do not mix.
* ``n<N>m<M>``: keep the N largest magnitudes of every M consecutive elements
  along that dimension (at most one segment may be sparse).
* ``d<D>``: the dimension, Python-style (``d0`` first, ``d-1`` last, ``d-2`` ...).
* The second number spec is the zero point when the data is uint, and a tensor
  scale over tile scales otherwise (see :class:`tcast.DataType`).

Numbers inside a scale code must be spelled without underscores (``e4m3fn``,
not ``float8_e4m3fn``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ._text import check_field, code_int, quote
from .errors import SpecError
from .number import NumberSpec, number

__all__ = ["ScaleSpec", "TileSpec", "scale"]

_TILE_RE = re.compile(
    # o<B> is matched without s<S> too, so that TileSpec says what is missing
    r"t([0-9]*)(?:s([0-9]+))?(?:o([0-9]+))?(?:n([0-9]+)m([0-9]+))?(?:d(-?[0-9]+))?"
)
_MAX_TILE = 1024
#: The widest subtile exponent offset (``o4``).
MAX_OFFSET_BITS = 4


@dataclass(frozen=True)
class TileSpec:
    """One tile segment: the extent of a scale's tile along one dimension.

    Attributes:
        size: tile length, a power of two in 2..1024, or 0 for a channel
            (the whole dimension).
        subtile: subtile length (0: none): codebook mappings and exponent offsets are
            chosen per subtile.
        sparse_n: kept elements per sparsity group (0: dense).
        sparse_m: sparsity group length (0: dense).
        dim: the dimension (Python-style index), or None for the default.
        offset: width in bits of each subtile's exponent offset (0: none; 1..4, only
            with a subtile).
    """

    size: int = 0
    subtile: int = 0
    sparse_n: int = 0
    sparse_m: int = 0
    dim: int | None = None
    offset: int = 0

    def __post_init__(self) -> None:
        _validate_tile(self)

    @property
    def is_channel(self) -> bool:
        """True when the tile spans the whole dimension (``t0``)."""
        return self.size == 0

    @property
    def is_sparse(self) -> bool:
        """True when the segment carries N-of-M sparsity."""
        return self.sparse_m > 0

    @property
    def code(self) -> str:
        """The canonical segment code (``t32``, ``t0``, ``t16n2m4``, ``t32d0``, ``t16s2o1``)."""
        out = f"t{self.size}"
        if self.subtile:
            out += f"s{self.subtile}"
        if self.offset:
            out += f"o{self.offset}"
        if self.is_sparse:
            out += f"n{self.sparse_n}m{self.sparse_m}"
        if self.dim is not None:
            out += f"d{self.dim}"
        return out

    def __str__(self) -> str:
        return self.code

    def __repr__(self) -> str:
        return f"TileSpec({self.code!r})"


def _is_pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def _validate_tile(t: TileSpec) -> None:
    for name in ("size", "subtile", "sparse_n", "sparse_m", "offset"):
        value = getattr(t, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise SpecError(f"tile {name} must be a non-negative int, got {quote(value)}")
        check_field(f"tile {name}", value)
    if t.dim is not None and (not isinstance(t.dim, int) or isinstance(t.dim, bool)):
        raise SpecError(f"tile dim must be an int or None, got {quote(t.dim)}")
    if t.dim is not None:
        check_field("tile dim", t.dim)
    if t.size and not (_is_pow2(t.size) and 2 <= t.size <= _MAX_TILE):
        raise SpecError(f"tile size {t.size} must be 0 (channel) or a power of two in 2..1024")
    if t.subtile and not (
        _is_pow2(t.subtile) and t.subtile >= 2 and (t.size == 0 or t.subtile < t.size)
    ):
        below = "" if t.size == 0 else f" below tile {t.size}"
        raise SpecError(f"subtile s{t.subtile} must be a power of two >= 2{below}")
    if t.offset and not t.subtile:
        raise SpecError(
            f"offset width o{t.offset} needs a subtile before it (t<T>s<S>o<B>, as t16s2o1)"
        )
    if t.offset > MAX_OFFSET_BITS:
        raise SpecError(f"offset width o{t.offset} must be in 1..{MAX_OFFSET_BITS} bits")
    if t.subtile and (t.sparse_n or t.sparse_m):
        raise SpecError(
            f"subtile s{t.subtile} and sparsity n{t.sparse_n}m{t.sparse_m} do not mix "
            f"(subtiles with sparsity are not defined)"
        )
    if bool(t.sparse_n) != bool(t.sparse_m):
        raise SpecError("sparsity needs both n<N> and m<M>")
    if t.sparse_m:
        if not (_is_pow2(t.sparse_m) and 2 <= t.sparse_m <= _MAX_TILE):
            raise SpecError(f"sparsity group m{t.sparse_m} must be a power of two in 2..1024")
        if not 1 <= t.sparse_n < t.sparse_m:
            raise SpecError(f"sparsity n{t.sparse_n}m{t.sparse_m} needs 1 <= N < M")
        if t.size and t.sparse_m > t.size:
            raise SpecError(f"sparsity group m{t.sparse_m} is longer than tile t{t.size}")


@dataclass(frozen=True)
class ScaleSpec:
    """The scales of a datatype: their number formats and their tiles.

    Attributes:
        scale: number spec of the primary scale (a float or exponent type with a NaN code).
        second: optional second number spec: a zero point for uint data,
            otherwise a tensor scale applied over the tile scales.
        tiles: zero (tensor), one (1-D) or two (2-D) tile segments.
    """

    scale: NumberSpec
    second: NumberSpec | None = None
    tiles: tuple[TileSpec, ...] = ()

    def __post_init__(self) -> None:
        _validate_scale(self)
        # A dimension equal to its segment's default is dropped, so that `t32d-1`
        # and `t32` are one spec with one canonical code.
        defaults = (-1,) if len(self.tiles) == 1 else (-2, -1)
        tiles = tuple(
            replace(t, dim=None) if t.dim == d else t
            for t, d in zip(self.tiles, defaults, strict=False)
        )
        object.__setattr__(self, "tiles", tiles)

    @property
    def is_tensor(self) -> bool:
        """True for one scale over the whole tensor."""
        return len(self.tiles) == 0  # len(): dynamo (torch 2.13) cannot trace "not" of a tuple

    @property
    def is_2d(self) -> bool:
        """True for 2-D tiles."""
        return len(self.tiles) == 2

    @property
    def is_sparse(self) -> bool:
        """True when a segment carries N-of-M sparsity."""
        return any(t.is_sparse for t in self.tiles)

    @property
    def has_subtile(self) -> bool:
        """True when a segment names a subtile (codebook mappings or exponent offsets)."""
        return any(t.subtile for t in self.tiles)

    @property
    def offset_bits(self) -> int:
        """Width of each subtile's exponent offset (``B`` of ``o<B>``), 0 when none."""
        # a loop, not max(generator, default=0): dynamo (torch 2.13) cannot trace the latter
        bits = 0
        for t in self.tiles:
            if t.offset > bits:
                bits = t.offset
        return bits

    @property
    def subtile_sizes(self) -> tuple[int, ...]:
        """Per segment: its subtile length ``S``, or 0 where the subtile is the whole tile."""
        return tuple(t.subtile for t in self.tiles)

    def dims(self, ndim: int, transpose: bool = False) -> tuple[int, ...]:
        """The non-negative dimension of each tile segment for an array of ``ndim`` dims.

        Args:
            ndim: rank of the array being cast.
            transpose: swap the two segments of a 2-D tile (transposed scaling).

        Returns:
            One dimension per tile segment, in segment order.

        Raises:
            SpecError: if a dimension is out of range for ``ndim`` or two segments
                land on the same dimension.
        """
        defaults = (-1,) if len(self.tiles) == 1 else (-2, -1)
        out = []
        for tile, default in zip(self.tiles, defaults, strict=False):
            d = default if tile.dim is None else tile.dim
            if not -ndim <= d < ndim:
                raise SpecError(
                    f"scale {self.code!r}: dimension {d} does not exist in a {ndim}-d array"
                )
            out.append(d % ndim)
        if transpose and len(out) == 2:
            out.reverse()
        if len(set(out)) != len(out):
            raise SpecError(f"scale {self.code!r}: both tile segments fall on dimension {out[0]}")
        return tuple(out)

    @property
    def code(self) -> str:
        """The canonical code: ``scale(s.code) == s``."""
        parts = [self.scale.code]
        if self.second is not None:
            parts.append(self.second.code)
        parts.extend(t.code for t in self.tiles)
        return "_".join(parts)

    def __str__(self) -> str:
        return self.code

    def __repr__(self) -> str:
        return f"ScaleSpec({self.code!r})"


def _validate_scale(s: ScaleSpec) -> None:
    if not isinstance(s.scale, NumberSpec):
        raise SpecError(f"scale must be a NumberSpec, got {quote(s.scale)}")
    if not (s.scale.is_float or s.scale.is_exponent):
        raise SpecError(
            f"scale number {s.scale.code!r} must be a float or exponent type (ints serve "
            f"only as zero points)"
        )
    if not s.scale.has_nan:
        raise SpecError(
            f"scale number {s.scale.code!r} has no NaN code; a block holding NaN or Inf "
            f"must be able to store a NaN scale"
        )
    if s.scale.is_float and s.scale.emin < -127:
        raise SpecError(
            f"float scale {s.scale.code!r} has normal values down to 2**{s.scale.emin}; the "
            f"float32 reciprocal of every scale must be finite (smallest normal >= 2**-127)"
        )
    if s.second is not None and not isinstance(s.second, NumberSpec):
        raise SpecError(f"second number must be a NumberSpec or None, got {quote(s.second)}")
    if not isinstance(s.tiles, tuple) or not all(isinstance(t, TileSpec) for t in s.tiles):
        raise SpecError("tiles must be a tuple of TileSpec")
    if len(s.tiles) > 2:
        raise SpecError(f"a scale has at most two tile segments, got {len(s.tiles)}")
    if len(s.tiles) == 2:
        if all(t.is_channel for t in s.tiles):
            raise SpecError("a 2-D tile has at most one channel segment (t0_t0 is a tensor scale)")
        a, b = s.tiles
        da, db = (-2 if a.dim is None else a.dim), (-1 if b.dim is None else b.dim)
        if da == db:
            raise SpecError(f"both tile segments fall on dimension {da}")
    if sum(t.is_sparse for t in s.tiles) > 1:
        raise SpecError("at most one tile segment may carry sparsity")
    if sum(bool(t.offset) for t in s.tiles) > 1:
        raise SpecError(
            "at most one tile segment may carry an offset width o<B> (the offset belongs "
            "to the 2-D subtile as a whole)"
        )
    if any(t.subtile for t in s.tiles) and any(t.is_sparse for t in s.tiles):
        raise SpecError("subtiles and sparsity do not mix on one scale (not defined)")


def scale(code: str | ScaleSpec) -> ScaleSpec:
    """Parse a scale code into a :class:`ScaleSpec`.

    Args:
        code: e.g. ``"e8m0_t32"``, ``"float16_int8_t16n2m4"``, ``"e4m3fn_float32_t16"``,
            or a ScaleSpec (returned unchanged).

    Returns:
        The ScaleSpec.

    Raises:
        SpecError: if ``code`` is not a valid scale code; the message names the bad segment.
    """
    if isinstance(code, ScaleSpec):
        return code
    if not isinstance(code, str):
        raise SpecError(f"a scale code must be a str or ScaleSpec, got {type(code).__name__}")
    segments = code.split("_")
    numbers: list[NumberSpec] = []
    tiles: list[TileSpec] = []
    for seg in segments:
        if m := _TILE_RE.fullmatch(seg):
            tiles.append(_tile(m, seg, code))
            continue
        if tiles:
            raise SpecError(f"{quote(code)}: number spec {quote(seg)} after a tile segment")
        try:
            numbers.append(number(seg))
        except SpecError as err:
            hint = " (write numbers without the float8_ prefix)" if seg == "float8" else ""
            # the number's message quotes the segment; the whole code only when it is more
            where = "" if seg == code else f"{quote(code)}: "
            raise SpecError(
                f"{where}a segment is neither a number nor a tile{hint}: {err}"
            ) from None
    if not numbers or len(numbers) > 2:
        raise SpecError(f"{quote(code)}: a scale code has one or two number specs, then 0-2 tiles")
    try:
        return ScaleSpec(numbers[0], numbers[1] if len(numbers) == 2 else None, tuple(tiles))
    except SpecError as err:
        raise SpecError(f"{quote(code)}: {err}") from None


def _tile(m: re.Match[str], seg: str, code: str) -> TileSpec:
    def num(g: str | None) -> int:
        if g is None or g == "":
            return 0
        if (g.lstrip("-").startswith("0") and g.lstrip("-") != "0") or g == "-0":
            raise SpecError("a number has a leading zero")
        return code_int(g)

    try:
        if m[2] is not None and num(m[2]) == 0:
            raise SpecError("subtile s0 must be a power of two >= 2 (leave s<S> out for none)")
        if m[3] is not None and num(m[3]) == 0:
            raise SpecError(f"offset width o0 must be in 1..{MAX_OFFSET_BITS} bits")
        return TileSpec(
            size=num(m[1]),
            subtile=num(m[2]),
            sparse_n=num(m[4]),
            sparse_m=num(m[5]),
            dim=None if m[6] is None else num(m[6]),
            offset=num(m[3]),
        )
    except SpecError as err:
        where = "" if seg == code else f" segment {quote(seg)}:"
        raise SpecError(f"{quote(code)}:{where} {err}") from None
