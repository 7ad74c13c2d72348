"""The blockwise randomized Hadamard transform's parameters (SEMANTICS.md §5.10).

A :class:`Hadamard` names a group size ``n`` (a power of two, 2 to 128) and one sign per
position of a group: the transform of a group ``x`` of ``n`` float32 values is
``2^-c · H_n · (s ∘ x)`` with ``H_n`` the Sylvester-ordered Hadamard matrix, ``s`` the signs
and ``c = ⌈log2(n) / 2⌉``, computed by the float32 butterfly SEMANTICS.md states
(:func:`tcast.exact.hadamard` is its exact model). The signs are given, drawn from a seed on
their own Philox stream (:meth:`Hadamard.seeded`), or a preset:
:meth:`Hadamard.te_wgrad` is TransformerEngine's NVFP4 Wgrad sign vector.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._text import quote
from .errors import SpecError
from .philox import philox4x32

__all__ = [
    "HADAMARD_SIZES",
    "RHT_STREAM",
    "TE_WGRAD_SIGNS",
    "Hadamard",
    "group_dim",
    "hadamard_signs",
]

#: The group sizes of a transform: powers of two whose signs one Philox call draws.
HADAMARD_SIZES = (2, 4, 8, 16, 32, 64, 128)
#: The fourth Philox counter word of the sign stream (ASCII "RHT"): no element stream of
#: SEMANTICS.md §3.3 sets it, so the signs never reuse an element's random word.
RHT_STREAM = 0x00524854
#: TransformerEngine's sign vector of the 16-point transform of its NVFP4 recipe's Wgrad
#: operands (arXiv 2509.25149; TransformerEngine ``NVFP4BlockScaling``), by position.
TE_WGRAD_SIGNS = (1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1)


def hadamard_signs(size: int, seed: int) -> tuple[int, ...]:
    """The signs a seed draws for groups of ``size``.

    Position ``i`` is −1 where bit ``i mod 32`` of word ``⌊i / 32⌋`` of
    ``Philox4x32-10(counter = (0, 0, 0, RHT_STREAM), key = (seed mod 2^32, ⌊seed / 2^32⌋))``
    is set, else +1.

    Raises:
        SpecError: for a size not in :data:`HADAMARD_SIZES` or a seed outside [0, 2**64).
    """
    _check_size(size)
    if not _integer(seed) or not 0 <= seed < 1 << 64:
        raise SpecError(f"seed {quote(seed)} must be an int in [0, 2**64)")
    seed = int(seed)
    words = philox4x32((0, 0, 0, RHT_STREAM), (seed & 0xFFFFFFFF, seed >> 32))
    return tuple(-1 if words[i // 32] >> (i % 32) & 1 else 1 for i in range(size))


def _integer(v: object) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _check_size(size: object) -> int:
    if not _integer(size) or size not in HADAMARD_SIZES:
        sizes = ", ".join(map(str, HADAMARD_SIZES))
        raise SpecError(f"Hadamard group size {quote(size)} is not one of {sizes}")
    return int(size)  # type: ignore[call-overload]


@dataclass(frozen=True)
class Hadamard:
    """A blockwise randomized Hadamard transform: group size and signs (SEMANTICS.md §5.10).

    Build it with :meth:`of`, :meth:`seeded` or :meth:`te_wgrad` (which check their
    arguments); the fields are then a size of :data:`HADAMARD_SIZES` and that many signs.

    Attributes:
        size: ``n``, the number of consecutive elements one transform mixes.
        signs: ``s``, one of +1 or −1 per position of a group, applied before the matrix.
    """

    size: int
    signs: tuple[int, ...]

    def __post_init__(self) -> None:
        _check_size(self.size)
        if not isinstance(self.signs, tuple):  # a list or array: the hashable tuple of ints
            try:
                if isinstance(self.signs, (str, bytes)):
                    raise TypeError
                items = tuple(int(s) if _integer(s) else s for s in self.signs)
            except TypeError:
                raise SpecError(
                    f"Hadamard signs must be a sequence of 1 and -1, not {quote(self.signs)}"
                ) from None
            object.__setattr__(self, "signs", items)
        if len(self.signs) != self.size or any(
            type(s) is not int or s not in (1, -1) for s in self.signs
        ):
            raise SpecError(
                f"a Hadamard transform of size {self.size} needs {self.size} signs, each 1 or "
                f"-1; got {quote(self.signs)}"
            )

    @classmethod
    def of(cls, size: int, signs: Any = None) -> Hadamard:
        """The transform of groups of ``size`` with the given signs (all +1 when None).

        Raises:
            SpecError: for a size not in :data:`HADAMARD_SIZES` or signs that are not
                ``size`` values of 1 or -1.
        """
        n = _check_size(size)
        # a sequence, or a 1-D array of NumPy or torch: made a tuple of ints by the check
        return cls(n, (1,) * n if signs is None else signs)

    @classmethod
    def seeded(cls, size: int, seed: int) -> Hadamard:
        """The transform of groups of ``size`` with the signs ``seed`` draws.

        The signs are :func:`hadamard_signs`'s.
        """
        return cls(_check_size(size), hadamard_signs(size, seed))

    @classmethod
    def te_wgrad(cls) -> Hadamard:
        """TransformerEngine's 16-point Wgrad transform (:data:`TE_WGRAD_SIGNS`)."""
        return cls(16, TE_WGRAD_SIGNS)

    @property
    def stages(self) -> int:
        """``k = log2(n)``: the butterfly's stages."""
        return self.size.bit_length() - 1

    @property
    def shift(self) -> int:
        """``c = ⌈k / 2⌉``: the forward transform scales by ``2^-c``.

        Exactly ``1/√n`` for even ``k``; for odd ``k``, ``1/√(2n)``: a power of two, which a
        block scale absorbs.
        """
        return (self.stages + 1) // 2

    @property
    def inverse_shift(self) -> int:
        """``k − c``: the inverse scales by ``2^-(k−c)`` (``H_n · H_n = n · I``)."""
        return self.stages - self.shift


def group_dim(shape: Sequence[int], dim: object, h: object) -> int:
    """The dimension (counted from 0) along which ``h`` transforms an array of ``shape``.

    The argument rule every engine applies (SEMANTICS.md §5.10): ``h`` is a
    :class:`Hadamard`, ``dim`` an int naming a dimension of ``shape`` (negative from the
    end), and that dimension's length a multiple of the group size.

    Raises:
        SpecError: naming the bad transform, dimension or length.
    """
    if not isinstance(h, Hadamard):
        raise SpecError(f"expected a tcast.Hadamard, got {type(h).__name__}")
    shape = tuple(shape)
    nd = len(shape)
    if not _integer(dim) or not -nd <= dim < nd:  # type: ignore[operator]
        raise SpecError(f"dimension {quote(dim)} is not a dimension of shape {shape}")
    d = int(dim) % nd  # type: ignore[call-overload]
    if shape[d] % h.size:
        raise SpecError(
            f"dimension {dim} of shape {shape} has {shape[d]} elements, not a multiple of the "
            f"transform's group size {h.size}"
        )
    return d
