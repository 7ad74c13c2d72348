"""Untrusted text in the grammar: reading the numbers of a code, quoting input in messages.

A code comes from users, files and command lines, so it may be of any length: messages
quote a bounded prefix of it, and a number in it has a bounded count of digits (Python's
``int`` refuses strings of more than 4,300 digits with its own ``ValueError``).
"""

from __future__ import annotations

from .errors import SpecError

__all__ = ["MAX_DIGITS", "QUOTE_LIMIT", "check_field", "code_int", "quote"]

#: The most digits a number in a code may have: more than any field needs (widths, biases,
#: tile sizes and dimensions are all below 10**4), far below Python's own limit.
MAX_DIGITS = 9
#: The most characters of an input a message quotes.
QUOTE_LIMIT = 60


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)``, cut to its first ``limit`` characters for long values.

    A string longer than ``limit`` is quoted as the ``repr`` of its first ``limit``
    characters followed by ``... (N characters)``; any other value whose ``repr`` is longer
    is cut likewise. The result is short however long ``value`` is (at most about ten times
    ``limit``, the escape of one character being at most ten).
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}... ({len(value)} characters)"
    if isinstance(value, int) and value.bit_length() > 4 * limit:
        # past 4,300 digits Python refuses even to write an int out
        return f"an int of {value.bit_length()} bits"
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def code_int(digits: str, code: str | None = None) -> int:
    """The int a code spells with ``digits`` (ASCII digits, an optional leading ``-``).

    Raises:
        SpecError: for more than :data:`MAX_DIGITS` digits; the message quotes ``code``
            when given (a caller that names the code itself leaves it out).
    """
    count = len(digits.lstrip("-"))
    if count > MAX_DIGITS:
        where = "" if code is None else f"{quote(code)}: "
        raise SpecError(
            f"{where}a number in a code has at most {MAX_DIGITS} digits, this one has {count}"
        )
    return int(digits)


def check_field(what: str, value: object) -> int:
    """``value`` if it is an int (not a bool) of at most :data:`MAX_DIGITS` digits.

    Fields that large are wrong in every spec, and refusing them here keeps messages that
    print a field short.

    Raises:
        SpecError: naming ``what`` and quoting ``value``.
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise SpecError(f"{what} must be an int, got {quote(value)}")
    if abs(value) >= 10**MAX_DIGITS:
        raise SpecError(f"{what} {quote(value)} is out of range (at most {MAX_DIGITS} digits)")
    return value
