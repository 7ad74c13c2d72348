"""Which arrays an engine casts as they are: its library's plain arrays (SEMANTICS.md §9).

An engine's arithmetic is its library's plain array operations. An array subclass that
changes what those operations mean (a distributed tensor, a masked array, a matrix) would be
cast on the wrong data, or lose what it adds (a mask), so engines refuse it with
``UnsupportedError`` naming the conversion to apply, before any work; the same for layouts an
engine does not compute on (sparse, nested). A subclass that only adds Python attributes
(``torch.nn.Parameter``, a ``np.ndarray`` subclass without hooks of its own) is its plain
array. Each engine names its library's hooks and conversions in ``EngineBase.refusal``; this
module holds the part that is the same for every library.
"""

from __future__ import annotations

__all__ = ["own_hooks"]


def own_hooks(
    cls: type, base: type, hooks: tuple[str, ...], inert: tuple[object, ...] = ()
) -> tuple[str, ...]:
    """The operation hooks that ``cls``, a subclass of ``base``, defines below ``base``.

    A hook whose value is one of ``inert`` does not count: torch's
    ``_disabled_torch_function_impl``, which ``nn.Parameter`` sets to switch the hook off.

    Args:
        cls: the array's type.
        base: the library's plain array type (``np.ndarray``, ``torch.Tensor``).
        hooks: the names of the hooks by which a subclass changes the library's operations
            (``__torch_dispatch__``; ``__array_finalize__`` ...).
        inert: hook values that leave the operations as they are.

    Returns:
        The names found, in ``hooks`` order; empty for ``base`` itself.
    """
    found = []
    for name in hooks:
        for c in cls.__mro__:
            if c is base:
                break
            if name in c.__dict__:
                value = c.__dict__[name]
                value = getattr(value, "__func__", value)  # classmethod and staticmethod
                if not any(value is v for v in inert):
                    found.append(name)
                break
    return tuple(found)
