"""Names that look like a torch/ml_dtypes format but mean another one: the note and the warning.

The bare grammar reads ``e2m1`` as the IEEE-style e2m1 (Inf and NaN, max 3), while OCP FP4
(torch/ml_dtypes ``float4_e2m1fn``) is ``e2m1f`` (finite-only, max 6); bare ``e4m3fnuz`` has
bias 7, torch's ``float8_e4m3fnuz`` bias 8 (docs/names.md). The rule, from the libraries'
names alone: text ``eXmY<s>`` written without a bias *looks like* a foreign dtype
``floatN_eXmY<s'>`` when ``s' == s`` or ``s`` is empty (the suffix left off); it warns when such
a look-alike is another format, unless torch has a dtype of exactly these letters that is the
same format (``e5m2`` is torch's ``float8_e5m2``; ``e4m3fn`` torch's ``float8_e4m3fn``).

Writing the bias (``e2m1b1``, ``e4m3b7fnuz``) or a library's own name (``float8_e4m3``) says
what is meant, and never warns.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Iterable

from .errors import NameWarning
from .number import NumberSpec, Style, number

__all__ = ["FOREIGN_FLOATS", "lookalike_note", "lookalike_notes", "warn_lookalikes"]

#: The sub-byte and 8-bit float dtypes of torch and ml_dtypes, by library (a test checks these
#: lists against the installed libraries). Each name is one of tcast's spellings.
FOREIGN_FLOATS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "torch",
        (
            "float8_e4m3fn",
            "float8_e5m2",
            "float8_e4m3fnuz",
            "float8_e5m2fnuz",
            "float8_e8m0fnu",
            "float4_e2m1fn_x2",
        ),
    ),
    (
        "ml_dtypes",
        (
            "float8_e4m3fn",
            "float8_e5m2",
            "float8_e4m3fnuz",
            "float8_e5m2fnuz",
            "float8_e4m3b11fnuz",
            "float8_e3m4",
            "float8_e4m3",
            "float8_e8m0fnu",
            "float6_e2m3fn",
            "float6_e3m2fn",
            "float4_e2m1fn",
        ),
    ),
)

#: ``eXmY`` and a suffix, no bias: the letters a name is compared by.
_LETTERS = re.compile(r"(e\d+m\d+)(fnuz|fnu|fn|uz|f)?")
#: A library name: ``floatN_`` before the letters, ``_x2`` (torch's packing) after.
_FOREIGN = re.compile(r"float\d+_(e\d+m\d+)(fnuz|fnu|fn|uz|f)?(?:_x2)?")
#: A segment of a code that is a library name's ``floatN`` prefix.
_PREFIX = re.compile(r"float\d+")


class _Foreign:
    """One foreign dtype: its letters, its library and name, and its tcast format."""

    __slots__ = ("base", "label", "spec", "suffix")

    def __init__(self, library: str, name: str) -> None:
        found = _FOREIGN.fullmatch(name)
        assert found is not None, name  # the table above is ours
        self.base, self.suffix = found.group(1), found.group(2) or ""
        self.label = f"{library} {name}"
        self.spec = number(name)


#: Every foreign dtype written without a bias (``float8_e4m3b11fnuz`` looks like no bare name).
_FOREIGNS = tuple(
    _Foreign(lib, name) for lib, names in FOREIGN_FLOATS for name in names if "b" not in name[5:]
)

_STYLE_WORDS = {
    Style.IEEE: "Inf and NaN",
    Style.FN: "NaN at the all-ones magnitude, no Inf",
    Style.FNUZ: "NaN at -0, no Inf",
    Style.UZ: "Inf, NaN at -0",
    Style.FINITE: "finite-only",
}

#: The names warned about in this process (once each).
_WARNED: set[str] = set()


def _describe(spec: NumberSpec) -> str:
    top = spec.maxfloat
    shown = str(int(top)) if top.is_integer() else repr(top)
    return f"{spec.code} (bias {spec.bias}, max {shown}, {_STYLE_WORDS[spec.style]})"


def lookalike_note(text: str) -> str | None:
    """What a number code means and which same-looking foreign dtype it is not; else None.

    Args:
        text: one number code as the user wrote it (``e2m1``, ``E4M3FNUZ``).

    Returns:
        The note (``'e2m1' is e2m1 (bias 1, max 3, Inf and NaN), not ...``), or None
        when ``text`` looks like no foreign dtype of another format.
    """
    key = text.strip().lower()
    found = _LETTERS.fullmatch(key)
    if found is None:
        return None
    base, suffix = found.group(1), found.group(2) or ""
    alike = [f for f in _FOREIGNS if f.base == base and (f.suffix == suffix or not suffix)]
    if not alike:
        return None
    spec = number(key)
    if any(f.suffix == suffix and f.spec == spec and f.label.startswith("torch ") for f in alike):
        return None  # torch's own name of this very format
    other = [f for f in alike if f.spec != spec]
    if not other:
        return None
    by_code: dict[str, list[_Foreign]] = {}
    for f in other:
        by_code.setdefault(f.spec.code, []).append(f)
    nots = ", nor ".join(
        f"{_labels(fs)}, which is {_describe(fs[0].spec)}" for fs in by_code.values()
    )
    codes = " or ".join(repr(code) for code in by_code)
    those = "that" if len(by_code) == 1 else "those"
    same = [f for f in alike if f.spec == spec]
    also = f" as {_labels(same)}" if same else ""
    keep = repr(f"{base}b{spec.bias}{suffix}")
    if same:
        keep += f" (or {same[0].label.partition(' ')[2]!r})"
    return (
        f"{text!r} is {_describe(spec)}{also}, not {nots}: write {codes} for {those}, or "
        f"{keep} for {spec.code} without this warning"
    )


def _labels(foreigns: list[_Foreign]) -> str:
    """``torch/ml_dtypes float8_e4m3fnuz`` for one name in two libraries, else each label."""
    names = {f.label.partition(" ")[2] for f in foreigns}
    if len(names) == 1:
        libs = "/".join(f.label.partition(" ")[0] for f in foreigns)
        return f"{libs} {names.pop()}"
    return " / ".join(f.label for f in foreigns)


def _segments(text: str) -> list[str]:
    """The number codes of a name or code: each ``_`` segment not after a ``floatN`` prefix."""
    parts = text.removeprefix("torch.").split("_")
    return [p for i, p in enumerate(parts) if not (i and _PREFIX.fullmatch(parts[i - 1].lower()))]


def lookalike_notes(texts: Iterable[str | None]) -> list[str]:
    """The notes of every number code in ``texts`` (names, codes, code pairs; None skipped)."""
    out = []
    for text in texts:
        if text is None or len(text) > 200:  # no code that long is a look-alike
            continue
        for part in _segments(text):
            note = lookalike_note(part)
            if note is not None and note not in out:
                out.append(note)
    return out


def warn_lookalikes(texts: Iterable[str | None]) -> None:
    """Issue a :class:`~tcast.NameWarning` for each look-alike code in ``texts``, once per code.

    Callers never call this while ``torch.compile`` traces: dynamo turns a warning into a
    graph break (:func:`tcast.datatype` calls it only when it parses text for its cache,
    which tracing bypasses).
    """
    for note in lookalike_notes(texts):
        key = note.partition(" is ")[0]
        if key in _WARNED:
            continue
        _WARNED.add(key)
        warnings.warn(note, NameWarning, stacklevel=_caller_level())


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside tcast and its engines (``tcast_*``).

    The warning points at user code, also when an engine's own ``cast`` parsed the name.
    """
    frame, level = sys._getframe(1), 1
    while frame is not None and _ours(frame.f_globals.get("__name__", "")):
        frame, level = frame.f_back, level + 1
    return level


def _ours(module: str) -> bool:
    top = module.partition(".")[0]
    return top == "tcast" or top.startswith("tcast_")
