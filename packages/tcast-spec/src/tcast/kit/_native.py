"""A CastResult's codes viewed as the ecosystem's dtypes (:func:`tcast.native`), for any engine.

Which dtype name a part's codes have is tcast's rule (``tcast._native``: the dtype that
decodes every code as tcast does). The engine's result operations add one optional method,
:meth:`NativeOps.native_view`, that views an array of codes as its library's dtype of that
name, or says it has none; a part no dtype fits keeps its codes, and :class:`NativeParts`
says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from .._native import PACKED_NAMES, native_name
from ..engine import CastResult
from ..modes import CastMode
from ..number import Kind

__all__ = ["NativeOps", "NativeParts", "native_parts"]

#: The parts whose codes are numbers (mask and metadata are flags and indices).
_CODE_PARTS = ("data", "scale", "zero", "tenscale")


class NativeOps(Protocol):
    """The optional result operation behind :func:`tcast.native` (on an engine's ``result_ops``)."""

    def native_view(self, a: Any, name: str) -> Any:
        """``a``'s codes viewed (no copy) as the library's dtype ``name``, or None if it has none.

        ``name`` is one of :data:`tcast._native.NATIVE_NAMES` or a packing dtype
        (``float4_e2m1fn_x2``); ``a`` holds codes of that dtype's width, or, for a compress
        stream (1-D uint8), their bytes, and the view then has one element per code (or per
        packed byte).
        """
        ...


@dataclass(frozen=True, eq=False)
class NativeParts:
    """A result's parts in the ecosystem's dtypes where one holds their codes as they are.

    Each array part is a view of the result's array (they share memory; writing one writes
    the other) in the dtype ``dtype_names`` names, or the result's own array of codes where
    no dtype of the engine's library fits (``dtype_names`` None, ``notes`` says why).

    Attributes:
        data: element codes: ``float8_e4m3fn``, ``int8``, ... (actual: the input's shape;
            compress: the stream, one element per code or per packed byte).
        scale: scale codes in the scale shape (``float8_e8m0fnu`` for E8M0), else None.
        zero: zero-point codes, else None.
        tenscale: the tensor-scale code (0-d; ``float32`` for NVFP4's), else None.
        mask: the result's keep-mask as it is (flags, not numbers), else None.
        meta: the result's metadata codes as they are (indices), else None.
        dtype_names: per part the result has, of data, scale, zero and tenscale: the dtype
            name of its view (``"float8_e4m3fn"``), or None where it keeps its codes.
        notes: per part that keeps its codes, why; for data viewed as a dtype whose reading
            is not the element value, what to apply (MXINT codes are fixed point).
    """

    data: Any
    scale: Any = None
    zero: Any = None
    tenscale: Any = None
    mask: Any = None
    meta: Any = None
    dtype_names: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}))
    notes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def codes_kept(self) -> tuple[str, ...]:
        """The parts that keep their unsigned codes, in field order."""
        return tuple(p for p in _CODE_PARTS if p in self.dtype_names and not self.dtype_names[p])


def _part_spec(result: CastResult, part: str) -> Any:
    dt = result.dtype
    if part == "data":
        return dt.nspec
    if part == "scale":
        return None if dt.sspec is None else dt.sspec.scale
    return getattr(dt, part)  # zero, tenscale


def _why_none(spec: Any, packed: bool) -> str:
    """Why a part whose spec has no dtype name (for this form) keeps its codes."""
    code = getattr(spec, "code", str(spec))
    one = native_name(spec)
    if packed and one is not None:
        return (
            f"the compress stream packs {spec.bits}-bit {code} codes and no dtype holds that "
            f"stream; the codes of an actual cast, one per byte, are ml_dtypes.{one}"
        )
    return f"{code} codes: no dtype of torch, NumPy or ml_dtypes decodes them as tcast does"


def _value_note(result: CastResult, spec: Any, name: str) -> str | None:
    """How element values differ from the dtype's reading of the codes, or None."""
    dt = result.dtype
    said = []
    if spec.kind is Kind.INT and dt.sspec is not None and dt.sspec.scale.kind is Kind.EXPONENT:
        said.append(
            f"{name} codes are fixed point under the power-of-two scale: the value is "
            f"code * 2**{2 - spec.bits} * scale (SEMANTICS.md §5.4)"
        )
    if dt.meta_bits:
        said.append("the values also depend on the metadata (subtile exponent offsets, meta)")
    return "; ".join(said) or None


def native_parts(result: CastResult, ops: Any, library: str = "the engine") -> NativeParts:
    """View a checked actual or compress result's code parts as the ecosystem's dtypes.

    ``ops`` is the engine's result operations; without :meth:`NativeOps.native_view` every
    part keeps its codes. The result must have been checked (``EngineBase.check_result``).

    Args:
        result: an actual or compress CastResult, checked.
        ops: the engine's ``result_ops``.
        library: how notes name the engine ("tcast_torch").
    """
    view = getattr(ops, "native_view", None)
    packed_data = result.castmode is CastMode.COMPRESS
    parts: dict[str, Any] = {}
    names: dict[str, str | None] = {}
    notes: dict[str, str] = {}
    for part in _CODE_PARTS:
        a = getattr(result, part)
        spec = _part_spec(result, part)
        parts[part] = a
        if a is None or spec is None:
            continue
        packed = packed_data and part == "data"
        name = native_name(spec, packed=packed)
        out = None if name is None or view is None else view(a, name)
        if out is None:
            names[part] = None
            if name is None:
                notes[part] = _why_none(spec, packed)
            elif view is None:
                notes[part] = f"{library} gives no views in other dtypes (no native_view)"
            elif packed:
                notes[part] = (
                    f"{library} has no {name} dtype for the compress stream of {spec.code} "
                    f"codes; the codes of an actual cast, one per byte, are "
                    f"ml_dtypes.{native_name(spec)}"
                )
            else:
                notes[part] = f"{spec.code} codes: {library} has no {name} dtype to view them as"
                if name in PACKED_NAMES:  # torch: FP4 only in pairs
                    notes[part] += (
                        f"; the data of a compress cast is {PACKED_NAMES[name]} (two codes a byte)"
                    )
            continue
        parts[part] = out
        names[part] = name
        if part == "data" and (note := _value_note(result, spec, name)):
            notes[part] = note
    return NativeParts(
        mask=result.mask,
        meta=result.meta,
        dtype_names=MappingProxyType(names),
        notes=MappingProxyType(notes),
        **parts,
    )
