"""The nearest known names to a mistyped one, for error messages ("did you mean ...?").

One helper for every door that takes a name: :func:`tcast.datatype` (and so ``tcast.cast``
and ``tcast golden``), ``tcast info``, ``tcast verify --engine`` and ``tcast conformance``
(through the public :func:`tcast.nearest_names`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from ._text import QUOTE_LIMIT

__all__ = ["did_you_mean", "nearest_names"]

#: How alike a name must be to be suggested (difflib's ratio): one wrong or missing character
#: in a name of six passes, an unrelated word does not.
_CUTOFF = 0.7


def nearest_names(token: str, names: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``names`` closest to ``token``, closest first; case is ignored.

    What every door of tcast and its engines suggests for a mistyped name (``mxfp44``:
    ``mxfp4``, ...), so that all suggest alike.

    A token longer than any name could be (``QUOTE_LIMIT``) has no near names: nothing is
    compared, so a long hostile input costs nothing.
    """
    if len(token) > QUOTE_LIMIT:
        return []
    by_fold: dict[str, str] = {}
    for name in names:
        by_fold.setdefault(name.casefold(), name)
    close = difflib.get_close_matches(token.casefold(), by_fold, n=n, cutoff=_CUTOFF)
    return [by_fold[c] for c in close]


def did_you_mean(token: str, names: Iterable[str], sep: str = "; ") -> str:
    """``sep`` + ``"did you mean: a, b?"`` for the names nearest ``token``; ``""`` if none is."""
    close = nearest_names(token, names)
    return f"{sep}did you mean: {', '.join(close)}?" if close else ""
