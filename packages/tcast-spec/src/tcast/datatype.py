"""Datatypes: a number spec for the elements plus an optional scale spec."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._foreign import foreign_dtype
from ._summary import datatype_summary
from .errors import SpecError, UnsupportedError
from .number import NumberSpec, number
from .scale import ScaleSpec, scale

__all__ = ["DataType", "datatype"]


@dataclass(frozen=True)
class DataType:
    """A cast target: element format and (optionally) how elements are scaled.

    Two datatypes are equal when their specs are equal; the name is a label.

    Attributes:
        nspec: the element number spec.
        sspec: the scale spec, or None for an unscaled cast.
        name: a display name (defaults to :attr:`code`).
    """

    nspec: NumberSpec
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
    def summary(self) -> str:
        """One line for people: ``e2m1f elements, e8m0 scale per 32``."""
        return datatype_summary(self)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"DataType({self.name}: {self.summary})"


def _validate(dt: DataType) -> None:
    n, s = dt.nspec, dt.sspec
    if not isinstance(n, NumberSpec):
        raise SpecError(f"nspec must be a NumberSpec, got {n!r}")
    if s is not None and not isinstance(s, ScaleSpec):
        raise SpecError(f"sspec must be a ScaleSpec or None, got {s!r}")
    if n.is_exponent:
        raise SpecError(f"{n.code!r} is an exponent type: it can scale data but not be data")
    if s is None:
        if not n.is_float:
            raise SpecError(f"{n.code!r} data needs a scale spec: only floats can be cast unscaled")
        return
    if s.has_subtile:
        raise UnsupportedError(
            f"scale {s.code!r} has a subtile: subtiles belong to codebook datatypes, "
            f"which are not supported yet"
        )
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


def datatype(
    nspec: str | NumberSpec | DataType,
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
        UnsupportedError: for datatypes tcast defines but does not support yet
            (codebooks).
    """
    from .catalog import CATALOG, NOT_YET_SUPPORTED

    foreign = None if isinstance(nspec, (str, NumberSpec)) else foreign_dtype(nspec)
    if foreign is not None and foreign[0] in CATALOG:
        nspec = foreign[0]  # torch.float8_e4m3fn is the catalog's float8_e4m3fn
    if isinstance(nspec, DataType):
        if sspec is not None:
            raise SpecError("datatype(DataType, sspec): a DataType already has its scale spec")
        return nspec if name is None else DataType(nspec.nspec, nspec.sspec, name)
    if isinstance(nspec, str) and sspec is None:
        if nspec in CATALOG:
            found = CATALOG[nspec]
            return found if name is None else DataType(found.nspec, found.sspec, name)
        if nspec in NOT_YET_SUPPORTED:
            raise UnsupportedError(f"{nspec!r}: {NOT_YET_SUPPORTED[nspec]}")
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
