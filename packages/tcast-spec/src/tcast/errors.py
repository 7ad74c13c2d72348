"""The tcast error hierarchy.

Every error tcast raises on purpose is a :class:`TcastError`. Bad spelling of a
format, scale or datatype is a :class:`SpecError` (also a ``ValueError``); a valid
request that an engine does not implement is an :class:`UnsupportedError`.
"""

from __future__ import annotations

__all__ = ["EngineNotFoundError", "SpecError", "TcastError", "UnsupportedError"]


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
