"""A finite, documented space of datatypes for conformance testing.

:func:`combinations` enumerates every *valid* datatype in the cartesian
product of a :class:`CombinationSpace` — invalid pairs (say, an exponent
tensor scale over tile scales) are skipped — in a fixed order. The default
space, :data:`DEFAULT_SPACE`, is what the conformance suite walks; see
SEMANTICS.md §9 for its statement.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .datatype import DataType
from .errors import SpecError
from .number import number
from .scale import scale

__all__ = ["DEFAULT_SPACE", "CombinationSpace", "combinations"]


@dataclass(frozen=True)
class CombinationSpace:
    """The axes of the space, as codes.

    Attributes:
        floats: float element formats (cast unscaled and scaled).
        unscaled_only: float formats cast unscaled only.
        ints: signed integer element formats.
        uints: unsigned integer element formats.
        scales: scale formats (float or exponent).
        wide: float element formats of 16 to 31 bits, cast under every scale with
            ``wide_tiles`` only (their codes need more than one byte, and their subnormals
            reach far below float32's under float scales).
        wide_tiles: tile segment strings for ``wide`` data.
        zeros: zero-point formats for uint data.
        tenscales: tensor-scale formats over float tile scales.
        tiles: tile segment strings ("" is a tensor scale; "t0_t32" a 2-D tile).
    """

    floats: tuple[str, ...] = (
        "e4m3fn", "e5m2", "e4m3b8fnuz", "e5m2b16fnuz", "e4m3b11fnuz", "e3m4",
        "e3m2f", "e2m3f", "e2m1f", "e2m1fnuz", "binary8p3",
    )
    unscaled_only: tuple[str, ...] = ("bfloat16", "float16")
    ints: tuple[str, ...] = ("int8", "int4")
    uints: tuple[str, ...] = ("uint8", "uint4")
    scales: tuple[str, ...] = ("e8m0", "float32", "bfloat16", "e4m3fn")
    wide: tuple[str, ...] = ("bfloat16", "e8m15", "e8m22")
    wide_tiles: tuple[str, ...] = ("", "t2", "t32")
    zeros: tuple[str, ...] = ("int8", "uint8", "float32")
    tenscales: tuple[str, ...] = ("float32",)
    tiles: tuple[str, ...] = ("", "t0", "t32", "t16", "t8d0", "t0_t32", "t16_t16", "t32n2m4")


#: The space the conformance suite walks.
DEFAULT_SPACE = CombinationSpace()


def _join(*parts: str) -> str:
    return "_".join(p for p in parts if p)


def combinations(space: CombinationSpace = DEFAULT_SPACE) -> Iterator[DataType]:
    """Yield every valid datatype of ``space``, each once, in a fixed order.

    Order: unscaled floats; then float and int data under each scale and tile;
    then two-level scaling (float data and int data, float tile scale, tensor
    scale); then uint data under each scale, zero point and tile; then wide float
    data under each scale and wide tile.

    Raises:
        SpecError: if a code of the space itself is malformed.
    """
    seen: set[DataType] = set()

    def emit(ncode: str, scode: str | None) -> Iterator[DataType]:
        n = number(ncode)
        try:
            dt = DataType(n, None if scode is None else scale(scode))
        except SpecError:
            return
        if dt not in seen:
            seen.add(dt)
            yield dt

    for code in space.floats + space.unscaled_only:
        yield from emit(code, None)
    for data in space.floats + space.ints:
        for s in space.scales:
            for t in space.tiles:
                yield from emit(data, _join(s, t))
    for data in space.floats + space.ints:
        for s in space.scales:
            if not number(s).is_float:
                continue
            for ts in space.tenscales:
                for t in space.tiles:
                    if t:
                        yield from emit(data, _join(s, ts, t))
    for data in space.uints:
        for s in space.scales:
            for z in space.zeros:
                for t in space.tiles:
                    yield from emit(data, _join(s, z, t))
    for data in space.wide:
        for s in space.scales:
            for t in space.wide_tiles:
                yield from emit(data, _join(s, t))
