"""``datatype()``: a DataType from a catalog name, a code, specs or a foreign dtype.

It sits above :mod:`tcast.catalog` (it looks names up there) and :mod:`tcast.datatype`
(whose DataType the catalog is made of).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import MappingProxyType

from ._foreign import foreign_dtype
from ._lookalike import warn_lookalikes
from ._similar import did_you_mean
from ._text import quote
from .catalog import CATALOG, NOT_YET_SUPPORTED, PREVIEW_CATALOG
from .codebook import CodebookSpec
from .datatype import DataType
from .errors import SpecError, UnsupportedError
from .number import NAMES, NumberSpec, number
from .scale import ScaleSpec, scale

__all__ = ["datatype", "known_names", "resolve_name"]

#: DataTypes built from text (catalog names, codes), by ``(nspec, sspec, name)``: parsing a
#: code takes tens of microseconds, more than a small cast's kernel. Bounded: emptied when full.
_PARSED: dict[tuple[str, str | None, str | None], DataType] = {}
_MAX_PARSED = 4096


def _folded() -> Mapping[str, tuple[str, ...]]:
    folded: dict[str, list[str]] = {}
    for name in (*CATALOG, *PREVIEW_CATALOG, *NOT_YET_SUPPORTED):
        folded.setdefault(name.casefold(), []).append(name)
    return MappingProxyType({k: tuple(v) for k, v in folded.items()})


#: Every catalog name (preview and not-yet-supported ones included) by its casefold: names
#: are found whatever their case, unless two differ only in case (``uint8_FF``, ``uint8_ff``).
_FOLDED = _folded()


def known_names() -> tuple[str, ...]:
    """Every name :func:`datatype` knows, for suggestions: catalog names and named numbers."""
    return tuple(dict.fromkeys([*CATALOG, *PREVIEW_CATALOG, *NOT_YET_SUPPORTED, *NAMES]))


def resolve_name(text: str) -> str | None:
    """The catalog name ``text`` spells (exactly, else in another case), or None.

    Preview and not-yet-supported names count as catalog names.

    Raises:
        SpecError: when ``text`` matches, in another case, two names that differ only in
            case (the upstream short names: ``F`` is float32, ``f`` float16).
    """
    if text in CATALOG or text in PREVIEW_CATALOG or text in NOT_YET_SUPPORTED:
        return text
    found = _FOLDED.get(text.casefold(), ())
    if len(found) > 1:
        raise SpecError(
            f"{quote(text)} matches the catalog names {', '.join(found)}, which differ only in "
            f"case (in upstream short names F is float32, f float16): write one exactly"
        )
    return found[0] if found else None


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

    Catalog names are found in any case (``"MXFP4"``) unless the case tells two apart
    (``uint8_FF``, ``uint8_ff``); codes, lower case in the grammar, are read in upper case
    too. Text that looks like a torch/ml_dtypes format but means another (``"e2m1"`` is not
    OCP FP4) issues a :class:`~tcast.NameWarning`, once per name (docs/names.md).

    Args:
        nspec: a number code or NumberSpec, a catalog name, a DataType, or a torch, NumPy
            or ml_dtypes dtype whose bits are one tcast format's (``torch.float8_e4m3fn``,
            ``ml_dtypes.int4``; docs/names.md).
        sspec: a scale code or ScaleSpec, or None.
        name: display name (defaults to the catalog name or the code pair).

    Returns:
        The DataType.

    Raises:
        SpecError: for bad codes or an invalid combination (naming the nearest known names),
            or a name in a case that matches two catalog names.
        UnsupportedError: for named datatypes of upstream tensorcast that tcast does not
            define (:data:`tcast.NOT_YET_SUPPORTED`).
    """
    # while torch.compile traces, the cache is bypassed: a compiled function that read or
    # filled it would be guarded on its contents and recompile when another datatype is
    # parsed; the uncached parse is constant-folded into the graph
    if name is not None and not isinstance(name, str):
        raise SpecError(f"name {quote(name)} must be a str (or None: the code or catalog name)")
    if isinstance(nspec, str) and (sspec is None or isinstance(sspec, str)) and not _tracing():
        key = (nspec, sspec, name)
        found = _PARSED.get(key)
        if found is None:
            if len(_PARSED) >= _MAX_PARSED:
                _PARSED.clear()
            found = _PARSED[key] = _build(nspec, sspec, name)
            warn_lookalikes((nspec, sspec))  # catalog names too: the alias e4m3 is a code
        return found
    return _build(nspec, sspec, name)


def _tracing() -> bool:
    """Whether ``torch.compile`` is tracing this call (never imports torch).

    As ``tcast.kit``'s ``tracing``, which this module cannot import (the kit imports it): a
    torch still being imported by another thread may lack ``compiler.is_compiling``.
    """
    torch = sys.modules.get("torch")
    is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    return is_compiling is not None and bool(is_compiling())


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
        known = resolve_name(nspec)
        if known is not None:
            if known in NOT_YET_SUPPORTED:
                raise UnsupportedError(f"{known!r}: {NOT_YET_SUPPORTED[known]}")
            found = CATALOG[known] if known in CATALOG else PREVIEW_CATALOG[known]
            return found if name is None else DataType(found.nspec, found.sspec, name)
        return _from_code(nspec, name)
    return _parse(nspec, sspec, name)


def _from_code(text: str, name: str | None) -> DataType:
    """The datatype of a code that is no catalog name; lower-case codes in another case too.

    Raises:
        SpecError: naming ``text`` whole, why it is no code, and the nearest known names.
    """
    try:
        return _parse(text, None, name)
    except SpecError as err:
        if text.lower() != text:
            try:
                return _parse(text.lower(), None, name)
            except SpecError:
                pass
        said = quote(text)
        why = str(err)
        if why.startswith(said):  # the parser named the code already: once is enough
            why = why[len(said) :].lstrip(": ")
        raise SpecError(
            f"{said} is not a catalog name (tcast info --catalog) or a "
            f"{'datatype' if '_' in text else 'number'} code: {why}"
            f"{did_you_mean(text, known_names())}"
        ) from None


def _parse(
    nspec: str | NumberSpec | CodebookSpec,
    sspec: str | ScaleSpec | None,
    name: str | None,
) -> DataType:
    """A DataType from codes or specs (no catalog name)."""
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
