"""``datatype()``: a DataType from a catalog name, a code, specs or a foreign dtype.

It sits above :mod:`tcast.catalog` (it looks names up there) and :mod:`tcast.datatype`
(whose DataType the catalog is made of).
"""

from __future__ import annotations

import sys

from ._foreign import foreign_dtype
from .catalog import CATALOG, NOT_YET_SUPPORTED, PREVIEW_CATALOG
from .codebook import CodebookSpec
from .datatype import DataType
from .errors import SpecError, UnsupportedError
from .number import NumberSpec, number
from .scale import ScaleSpec, scale

__all__ = ["datatype"]

#: DataTypes built from text (catalog names, codes), by ``(nspec, sspec, name)``: parsing a
#: code takes tens of microseconds, more than a small cast's kernel. Bounded: emptied when full.
_PARSED: dict[tuple[str, str | None, str | None], DataType] = {}
_MAX_PARSED = 4096


def _split_codebook(code: str) -> tuple[str, str | None]:
    """``(nspec code, scale code or None)`` of a datatype code whose data is a codebook.

    The codebook takes ``cb...`` and the compute segment, and a third segment when that one
    is not a number code (a label: a scale code always starts with a number code).
    """
    segments = code.split("_")
    take = 2
    if len(segments) > 2:
        try:
            number(segments[2])
        except SpecError:
            take = 3
    rest = "_".join(segments[take:])
    return "_".join(segments[:take]), rest or None


def datatype(
    nspec: str | NumberSpec | CodebookSpec | DataType,
    sspec: str | ScaleSpec | None = None,
    name: str | None = None,
) -> DataType:
    """Build (or look up) a datatype.

    ``datatype("mxfp4")`` returns the catalog entry; ``datatype("e2m1f",
    "e8m0_t32")`` builds one from codes; ``datatype("e4m3fn")`` an unscaled one.

    Args:
        nspec: a number code or NumberSpec, a catalog name, a DataType, or a torch, NumPy
            or ml_dtypes dtype whose bits are one tcast format's (``torch.float8_e4m3fn``,
            ``ml_dtypes.int4``; docs/names.md).
        sspec: a scale code or ScaleSpec, or None.
        name: display name (defaults to the catalog name or the code pair).

    Returns:
        The DataType.

    Raises:
        SpecError: for bad codes or an invalid combination.
        UnsupportedError: for named datatypes of upstream tensorcast that tcast does not
            define (:data:`tcast.NOT_YET_SUPPORTED`).
    """
    if isinstance(nspec, str) and (sspec is None or isinstance(sspec, str)) and not _tracing():
        key = (nspec, sspec, name)
        found = _PARSED.get(key)
        if found is None:
            if len(_PARSED) >= _MAX_PARSED:
                _PARSED.clear()
            found = _PARSED[key] = _build(nspec, sspec, name)
        return found
    return _build(nspec, sspec, name)


def _tracing() -> bool:
    """Whether ``torch.compile`` is tracing this call (never imports torch).

    While Dynamo traces, the cache is bypassed: a compiled function that read or filled it
    would be guarded on the cache's contents and recompile when another datatype is parsed.
    The uncached parse is constant-folded into the graph.
    """
    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()


def _build(
    nspec: str | NumberSpec | CodebookSpec | DataType,
    sspec: str | ScaleSpec | None,
    name: str | None,
) -> DataType:
    """:func:`datatype` without the cache."""
    foreign = None if isinstance(nspec, (str, NumberSpec, CodebookSpec)) else foreign_dtype(nspec)
    if foreign is not None and foreign[0] in CATALOG:
        nspec = foreign[0]  # torch.float8_e4m3fn is the catalog's float8_e4m3fn
    if isinstance(nspec, DataType):
        if sspec is not None:
            raise SpecError("datatype(DataType, sspec): a DataType already has its scale spec")
        return nspec if name is None else DataType(nspec.nspec, nspec.sspec, name)
    if isinstance(nspec, str) and sspec is None:
        if nspec in CATALOG or nspec in PREVIEW_CATALOG:
            found = CATALOG[nspec] if nspec in CATALOG else PREVIEW_CATALOG[nspec]
            return found if name is None else DataType(found.nspec, found.sspec, name)
        if nspec in NOT_YET_SUPPORTED:
            raise UnsupportedError(f"{nspec!r}: {NOT_YET_SUPPORTED[nspec]}")
    if isinstance(nspec, str) and nspec.startswith("cb"):
        ncode, scode = _split_codebook(nspec)
        if scode is not None and sspec is not None:
            raise SpecError(f"datatype({nspec!r}, {sspec!r}): the code already has a scale")
        given = scode if scode is not None else sspec
        return DataType(number(ncode), None if given is None else scale(given), name or "")
    if isinstance(nspec, str) and sspec is None and "_" in nspec:
        try:
            n = number(nspec)
        except SpecError:
            # a code pair "<nspec>_<sspec>", as DataType.code writes it
            head, _, rest = nspec.partition("_")
            return DataType(number(head), scale(rest), name or "")
        return DataType(n, None, name or "")
    n = number(nspec)
    s = None if sspec is None else scale(sspec)
    return DataType(n, s, name or "")
