"""The tcast error hierarchy.

Every error tcast raises on purpose is a :class:`TcastError`. Bad spelling of a
format, scale or datatype is a :class:`SpecError` (also a ``ValueError``); a valid
request that an engine does not implement is an :class:`UnsupportedError`.

Warnings are :class:`TcastWarning`: a :class:`NameWarning` when a name means another format
than the same-looking torch/ml_dtypes/OCP one, an :class:`ArgumentWarning` when an argument
has no effect on the cast it was given to. Silence one kind with
``warnings.filterwarnings("ignore", category=tcast.NameWarning)``.
"""

from __future__ import annotations

__all__ = [
    "ArgumentWarning",
    "EngineNotFoundError",
    "NameWarning",
    "SpecError",
    "TcastError",
    "TcastWarning",
    "UnsupportedError",
]


class TcastError(Exception):
    """Base class of every error raised on purpose by tcast and its engines."""


class SpecError(TcastError, ValueError):
    """A code, mode or combination that tcast does not define.

    The message names the bad token and says what would be valid.
    """


class UnsupportedError(TcastError):
    """A valid datatype, mode or input that the chosen engine does not implement."""


class EngineNotFoundError(TcastError, LookupError):
    """No installed engine can take the request (the message names the wheel to install)."""


class TcastWarning(UserWarning):
    """Base class of every warning tcast issues."""


class NameWarning(TcastWarning):
    """A name or code that means another format than the same-looking torch/ml_dtypes one.

    ``"e2m1"`` is the IEEE-style e2m1 (Inf and NaN, max 3), not OCP FP4 (``e2m1f``, max 6).
    Issued once per name and process, where text enters (:func:`tcast.datatype` given a str,
    and so :func:`tcast.cast` and the command line); the message says what to write instead.
    """


class ArgumentWarning(TcastWarning):
    """An argument that has no effect on the cast it was given to.

    ``saturate=False`` on a scaled datatype: its elements always saturate (SEMANTICS.md §5.2).
    """
