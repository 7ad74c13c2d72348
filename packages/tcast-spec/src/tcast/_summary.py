"""One-line summaries of datatypes, for ``repr`` (``e2m1f elements, e8m0 scale per 32``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .datatype import DataType
    from .scale import TileSpec

__all__ = ["datatype_summary"]


def _extent(t: TileSpec) -> str:
    return "channel" if t.is_channel else str(t.size)


def _where(tiles: tuple[TileSpec, ...]) -> str:
    """``per 32``, ``per channel``, ``per 32 along dim 0``, ``per 16x16 tile``."""
    if not tiles:
        return "per tensor"
    if len(tiles) == 1:
        t = tiles[0]
        out = f"per {_extent(t)}"
        if t.dim is not None:
            out += f" along dim {t.dim}"
    else:
        # a channel segment spans its whole dimension: written "*" in the tile's extent
        out = "per " + "x".join("*" if t.is_channel else str(t.size) for t in tiles) + " tile"
        dims = [t.dim for t in tiles]
        if any(d is not None for d in dims):
            out += " along dims " + ", ".join("default" if d is None else str(d) for d in dims)
    sparse = [t for t in tiles if t.is_sparse]
    for t in sparse:
        out += f", {t.sparse_n} of every {t.sparse_m} kept"
    return out


def datatype_summary(dt: DataType) -> str:
    """``<elements> elements, <scale> scale [and <zero> zero point] <where>[ under <tensor>]``.

    Examples: ``e2m1f elements, e8m0 scale per 32``; ``e4m3fn elements, unscaled``;
    ``uint8 elements, float32 scale and uint8 zero point per channel``; ``e2m1f elements,
    e4m3fn scale per 16 under a float32 tensor scale``.
    """
    head = f"{dt.nspec.code} elements"
    s = dt.sspec
    if s is None:
        return f"{head}, unscaled"
    scale = f"{s.scale.code} scale"
    if dt.zero is not None:
        scale += f" and {dt.zero.code} zero point"
    out = f"{head}, {scale} {_where(s.tiles)}"
    if dt.tenscale is not None:
        out += f" under a {dt.tenscale.code} tensor scale"
    return out
