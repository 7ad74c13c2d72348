"""Datatypes: a number spec for the elements plus an optional scale spec.

Build them from names and codes with :func:`tcast.datatype` (in ``tcast._lookup``: it reads
the catalog, which is made of DataTypes, so it sits above both).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._summary import datatype_summary
from ._text import quote
from .codebook import CodebookSpec
from .errors import SpecError
from .number import NumberSpec
from .scale import ScaleSpec

__all__ = ["DataType"]


@dataclass(frozen=True)
class DataType:
    """A cast target: element format and (optionally) how elements are scaled.

    Two datatypes are equal when their specs are equal; the name is a label.

    Attributes:
        nspec: the element number spec (a :class:`CodebookSpec` for codebook data).
        sspec: the scale spec, or None for an unscaled cast.
        name: a display name (defaults to :attr:`code`).
    """

    nspec: NumberSpec | CodebookSpec
    sspec: ScaleSpec | None = None
    name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise SpecError(f"DataType name {quote(self.name)} must be a str")
        _validate(self)
        if not self.name:
            object.__setattr__(self, "name", self.code)
        # the engine kit's rules of this datatype, per scale mode (tcast.kit.cast_rules): a
        # memo of its own, so that torch.compile guards on this datatype's entries only
        object.__setattr__(self, "_rules_memo", {})
        # computed on first use: Dynamo cannot trace hash() of a tuple, and a datatype
        # parsed inside a compiled function is never hashed there
        object.__setattr__(self, "_hash", None)

    def __hash__(self) -> int:
        # the specs' hash, computed once: a cast looks its datatype up in several caches,
        # and hashing the nested frozen specs each time cost more than the lookups
        h = self._hash
        if h is None:
            h = hash((self.nspec, self.sspec))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict:
        # str hashes differ between processes: an unpickled datatype hashes afresh; and its
        # rules are computed by the tcast that loads it, not carried from the one that saved it
        state = dict(self.__dict__)
        del state["_hash"]
        del state["_rules_memo"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        object.__setattr__(self, "_rules_memo", {})
        object.__setattr__(self, "_hash", None)

    @property
    def code(self) -> str:
        """``<nspec code>[_<sspec code>]``; the pair of codes that defines this datatype."""
        if self.sspec is None:
            return self.nspec.code
        return f"{self.nspec.code}_{self.sspec.code}"

    @property
    def is_unscaled(self) -> bool:
        """True when there is no scale spec."""
        return self.sspec is None

    @property
    def zero(self) -> NumberSpec | None:
        """The zero-point number spec (uint data only)."""
        if self.sspec is not None and self.nspec.is_uint:
            return self.sspec.second
        return None

    @property
    def tenscale(self) -> NumberSpec | None:
        """The tensor scale applied over tile scales (non-uint data with a second spec)."""
        if self.sspec is not None and not self.nspec.is_uint:
            return self.sspec.second
        return None

    @property
    def is_multiscale(self) -> bool:
        """True for tile scales under a tensor scale (as NVFP4)."""
        return self.tenscale is not None

    @property
    def meta_bits(self) -> int:
        """Metadata bits per subtile: the offset width ``o<B>``, or the codebook's M; else 0."""
        if self.sspec is not None and self.sspec.offset_bits:
            return self.sspec.offset_bits
        return self.nspec.meta_bits if self.nspec.is_codebook else 0  # type: ignore[union-attr]

    @property
    def has_meta(self) -> bool:
        """True when the datatype stores metadata per subtile (exponent offsets, mappings)."""
        return self.meta_bits > 0

    @property
    def summary(self) -> str:
        """One line for people: ``e2m1f elements, e8m0 scale per 32``."""
        return datatype_summary(self)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"DataType({self.name}: {self.summary})"


def _validate(dt: DataType) -> None:
    n, s = dt.nspec, dt.sspec
    if not isinstance(n, (NumberSpec, CodebookSpec)):
        raise SpecError(f"nspec must be a NumberSpec or CodebookSpec, got {n!r}")
    if s is not None and not isinstance(s, ScaleSpec):
        raise SpecError(f"sspec must be a ScaleSpec or None, got {s!r}")
    if n.is_exponent:
        raise SpecError(f"{n.code!r} is an exponent type: it can scale data but not be data")
    if s is None:
        if n.is_codebook:
            raise SpecError(
                f"codebook data {n.code!r} needs a scale spec (e.g. {n.code}_e8m0_t32, or a "
                f"tensor scale {n.code}_float32)"
            )
        if not n.is_float:
            raise SpecError(f"{n.code!r} data needs a scale spec: only floats can be cast unscaled")
        return
    _validate_subtiles(n, s)
    if n.is_uint:
        z = s.second
        if z is None or not (z.is_float or z.is_integer):
            raise SpecError(
                f"uint data needs a zero point: write <scale>_<zero>[_tiles] with a float, "
                f"int or uint zero point (e.g. float32_uint8_t0), got {s.code!r}"
            )
        return
    t = s.second
    if t is None:
        return
    if not t.is_float or not t.has_nan or t.emin < -127:
        raise SpecError(
            f"{n.code!r} data with a second scale spec {t.code!r}: the tensor scale over tile "
            f"scales must be a float with a NaN code and normals no smaller than 2**-127 "
            f"(e.g. float32)"
        )
    if not s.scale.is_float:
        raise SpecError(
            f"two-level scaling {s.code!r} needs a float tile scale, not {s.scale.code!r}"
        )
    if s.is_tensor:
        raise SpecError(f"two-level scaling {s.code!r} needs tiles under the tensor scale")


def _validate_subtiles(n: NumberSpec | CodebookSpec, s: ScaleSpec) -> None:
    if s.has_subtile and not (n.is_codebook or s.offset_bits):
        raise SpecError(
            f"scale {s.code!r}: a subtile needs codebook data or an offset width o<B> "
            f"(MSFP: int8_e8m0_t16s2o1)"
        )
    if s.offset_bits and not (n.is_float or n.is_int):
        what = "codebook" if n.is_codebook else n.code
        raise SpecError(
            f"scale {s.code!r}: exponent offsets o<B> need float or int data, not {what} "
            f"data {n.code!r}"
        )
    if n.is_codebook and s.is_sparse:
        raise SpecError(f"codebook data {n.code!r} does not mix with sparsity ({s.code!r})")
