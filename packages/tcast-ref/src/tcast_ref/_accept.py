"""Which NumPy arrays the reference engine casts, and as what (``RefEngine.refusal``).

Plain ``np.ndarray`` (views, read-only and non-contiguous arrays included), ``np.memmap``
(a file-backed plain array) and subclasses without hooks of their own, each cast as the plain
array it holds (:func:`plain_array`: a subclass may still override methods such as
``reshape`` or ``__getitem__``, which the engine's arithmetic must not call). Refused, with the
conversion to apply (tcast.kit._arrays): ``np.ma.MaskedArray`` (its mask would be dropped),
``np.matrix`` (always 2-D: reshapes do not mean what they do on arrays) and other subclasses
that define ``__array_finalize__``, ``__array_wrap__``, ``__array_ufunc__`` or
``__array_function__`` (they carry state or change operations the engine cannot honour).
"""

from __future__ import annotations

import numpy as np

from tcast.kit import own_hooks

__all__ = ["array_refusal", "plain_array"]

_HOOKS = ("__array_finalize__", "__array_wrap__", "__array_ufunc__", "__array_function__")


def array_refusal(x: np.ndarray) -> str | None:
    """Why the reference engine cannot use ``x`` as it is, with the conversion, or None."""
    cls = type(x)
    if cls is np.ndarray or isinstance(x, np.memmap):
        return None
    if isinstance(x, np.ma.MaskedArray):
        return (
            "a numpy.ma.MaskedArray, whose mask a cast would drop; cast its data "
            "(np.ma.getdata(x), masked values included, or x.filled(value)) and apply "
            "the mask to the result"
        )
    if isinstance(x, np.matrix):
        return "a numpy.matrix; cast np.asarray(x)"
    hooks = own_hooks(cls, np.ndarray, _HOOKS)
    if hooks:
        return (
            f"a {cls.__module__}.{cls.__qualname__}, an ndarray subclass with its own "
            f"{', '.join(hooks)}; cast np.asarray(x)"
        )
    return None


def plain_array(a: object) -> object:
    """``a`` as a plain ``np.ndarray`` (a view, no copy) when the engine takes it as one.

    Subclasses :func:`array_refusal` accepts are viewed as their base class, by
    ``np.ndarray.view`` itself (never a method the subclass may override), so that every
    operation the engine applies is NumPy's own. Anything else is returned as it is: a plain
    array, a refused subclass (refused later, with its reason) or something not an array.
    """
    if type(a) is np.ndarray or not isinstance(a, np.ndarray) or array_refusal(a) is not None:
        return a
    return np.ndarray.view(a, np.ndarray)
