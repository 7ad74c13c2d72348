"""Datatypes: a number spec for the elements plus an optional scale spec."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._foreign import foreign_dtype
from ._summary import datatype_summary
from .codebook import CodebookSpec
from .errors import SpecError, UnsupportedError
from .number import NumberSpec, number
from .scale import ScaleSpec, scale

__all__ = ["DataType", "datatype"]


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
        _validate(self)
        if not self.name:
            object.__setattr__(self, "name", self.code)
        # the engine kit's rules of this datatype, per scale mode (tcast.kit.cast_rules): a
        # memo of its own, so that torch.compile guards on this datatype's entries only
        object.__setattr__(self, "_rules_memo", {})

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


def _split_codebook(code: str) -> tuple[str, str | None]:
    """``(nspec code, scale code or None)`` of a datatype code whose data is a codebook.

    The codebook takes ``cb...`` and the compute segment, and a third segment when that one
    is not a number code (a label: a scale code always starts with a number code).
    """
    segments = code.split("_")
    take = 2
    if len(segments) > 2:
        try:
            number(segments[2])
        except SpecError:
            take = 3
    rest = "_".join(segments[take:])
    return "_".join(segments[:take]), rest or None


def datatype(
    nspec: str | NumberSpec | CodebookSpec | DataType,
    sspec: str | ScaleSpec | None = None,
    name: str | None = None,
) -> DataType:
    """Build (or look up) a datatype.

    ``datatype("mxfp4")`` returns the catalog entry; ``datatype("e2m1f",
    "e8m0_t32")`` builds one from codes; ``datatype("e4m3fn")`` an unscaled one.

    Args:
        nspec: a number code or NumberSpec, a catalog name, a DataType, or a torch, NumPy
            or ml_dtypes dtype whose bits are one tcast format's (``torch.float8_e4m3fn``,
            ``ml_dtypes.int4``; docs/names.md).
        sspec: a scale code or ScaleSpec, or None.
        name: display name (defaults to the catalog name or the code pair).

    Returns:
        The DataType.

    Raises:
        SpecError: for bad codes or an invalid combination.
        UnsupportedError: for named datatypes of upstream tensorcast that tcast does not
            define (:data:`tcast.NOT_YET_SUPPORTED`).
    """
    from .catalog import CATALOG, NOT_YET_SUPPORTED, PREVIEW_CATALOG

    foreign = None if isinstance(nspec, (str, NumberSpec, CodebookSpec)) else foreign_dtype(nspec)
    if foreign is not None and foreign[0] in CATALOG:
        nspec = foreign[0]  # torch.float8_e4m3fn is the catalog's float8_e4m3fn
    if isinstance(nspec, DataType):
        if sspec is not None:
            raise SpecError("datatype(DataType, sspec): a DataType already has its scale spec")
        return nspec if name is None else DataType(nspec.nspec, nspec.sspec, name)
    if isinstance(nspec, str) and sspec is None:
        if nspec in CATALOG or nspec in PREVIEW_CATALOG:
            found = CATALOG[nspec] if nspec in CATALOG else PREVIEW_CATALOG[nspec]
            return found if name is None else DataType(found.nspec, found.sspec, name)
        if nspec in NOT_YET_SUPPORTED:
            raise UnsupportedError(f"{nspec!r}: {NOT_YET_SUPPORTED[nspec]}")
    if isinstance(nspec, str) and nspec.startswith("cb"):
        ncode, scode = _split_codebook(nspec)
        if scode is not None and sspec is not None:
            raise SpecError(f"datatype({nspec!r}, {sspec!r}): the code already has a scale")
        given = scode if scode is not None else sspec
        return DataType(number(ncode), None if given is None else scale(given), name or "")
    if isinstance(nspec, str) and sspec is None and "_" in nspec:
        try:
            n = number(nspec)
        except SpecError:
            # a code pair "<nspec>_<sspec>", as DataType.code writes it
            head, _, rest = nspec.partition("_")
            return DataType(number(head), scale(rest), name or "")
        return DataType(n, None, name or "")
    n = number(nspec)
    s = None if sspec is None else scale(sspec)
    return DataType(n, s, name or "")
