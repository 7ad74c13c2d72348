"""Pickling of CastResults of torch tensors (``pickle``, ``torch.save``/``torch.load``).

torch cannot unpickle tensors of its unsigned dtypes wider than a byte (``pickle.loads``
of a ``torch.uint16`` or ``torch.uint32`` tensor raises ``AttributeError``), and a
two-level result's tensor scale is always uint32. Inside a CastResult such a tensor pickles
as its signed view of the same bits and the unsigned dtype's name; :func:`unsigned_view`
restores it on loading (:meth:`tcast.CastResult.register_pickling`).

``torch.load(weights_only=True)`` rebuilds only allowlisted globals: importing tcast_torch
allowlists :class:`tcast.CastResult` (whose pickled state is codes, names and tensors) and
:func:`unsigned_view`, nothing else.
"""

from __future__ import annotations

import torch

from tcast import CastResult, SpecError

__all__ = ["portable", "unsigned_view"]

#: The unsigned dtypes torch cannot unpickle, and the signed dtype of the same width.
_SIGNED = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}
_BY_NAME = {str(u).removeprefix("torch."): (u, s) for u, s in _SIGNED.items()}


class _Unsigned:
    """A stand-in that pickles as ``unsigned_view(signed, name)``."""

    __slots__ = ("name", "signed")

    def __init__(self, signed: torch.Tensor, name: str) -> None:
        self.signed = signed
        self.name = name

    def __reduce__(self) -> tuple:
        return (unsigned_view, (self.signed, self.name))


def portable(t: torch.Tensor) -> torch.Tensor | _Unsigned:
    """The form ``t`` pickles in inside a CastResult: itself, or its signed view."""
    pair = _SIGNED.get(t.dtype)
    if pair is None:
        return t
    return _Unsigned(t.view(pair), str(t.dtype).removeprefix("torch."))


def unsigned_view(signed: torch.Tensor, name: str) -> torch.Tensor:
    """The unsigned tensor of the same bits as ``signed`` (the inverse of :func:`portable`).

    Raises:
        SpecError: for a name that is not a uint16/uint32/uint64 dtype or a tensor of
            another width.
    """
    pair = _BY_NAME.get(name) if isinstance(name, str) else None
    if pair is None or not isinstance(signed, torch.Tensor) or signed.dtype is not pair[1]:
        got = getattr(signed, "dtype", type(signed).__name__)
        raise SpecError(
            f"not a pickled unsigned tensor: {str(name)[:40]!r} of a {got}; expected one "
            f"of {', '.join(f'{n} of a {s}' for n, (_, s) in _BY_NAME.items())}"
        )
    return signed.view(pair[0])


CastResult.register_pickling(torch.Tensor, portable)
torch.serialization.add_safe_globals([CastResult, unsigned_view])
