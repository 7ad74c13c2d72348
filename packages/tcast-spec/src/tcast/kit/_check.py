"""What a valid :class:`~tcast.CastResult` is (SEMANTICS.md §8), checked before an upcast.

An upcast decodes whatever arrays a result holds, so a result edited by hand, stored and
reloaded wrongly, or assembled by other code must be refused before any decoding, the same
way by every engine. The rule is here, once: :func:`result_form` says, from a result's
datatype, shape, cast mode and ``transpose_scale`` alone, which parts it has and what each
must be (:class:`PartForm`); :func:`check_result_parts` compares the arrays' types, dtypes
and shapes with it (no element is read), and :func:`check_result_codes` reads the values:
one reduction per part that can hold a code out of range, one byte per packed stream, one
count per sparsity mask. The engine supplies only those array operations
(:class:`~tcast.kit.ArrayOps`).

Every code of the right width is valid: §2 decodes every bit pattern (NaN codes, the int
code ``-2^(K-1)``, float scales a cast never makes such as zero, negative or subnormal ones),
and upcast decodes it as §2 says.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from dataclasses import dataclass

from .._text import quote
from ..datatype import DataType
from ..engine import CastResult
from ..errors import SpecError
from ..layout import block_layout, blocked_scales
from ..modes import CastMode, ScaleLayout
from ._results import ArrayOps

__all__ = [
    "PartForm",
    "check_result_codes",
    "check_result_parts",
    "code_dtype_name",
    "result_form",
    "result_shape",
    "with_int_shape",
]

#: The parts of a CastResult that hold arrays, in the order they are checked.
PARTS = ("data", "scale", "zero", "tenscale", "mask", "meta")


def code_dtype_name(bits: int) -> str:
    """The dtype of unpacked codes of ``bits`` bits: the narrowest unsigned integer type."""
    return "uint8" if bits <= 8 else "uint16" if bits <= 16 else "uint32"


def _width(dtype: str) -> int:
    return {"uint8": 8, "uint16": 16, "uint32": 32}.get(dtype, 0)


@dataclass(frozen=True)
class PartForm:
    """What one array of a valid CastResult is.

    Attributes:
        what: how messages name the part's contents ("e2m1f codes", "a packed keep-mask").
        dtype: the array's dtype name ("uint8", "uint16", "uint32" or "bool").
        shape: the array's shape.
        code_bits: every element is below ``2**code_bits``; None when every value of
            ``dtype`` is (the format fills the dtype, or a bool mask).
        tail_bits: a packed stream whose last byte holds only this many bits: the byte's
            higher bits must be 0; 0 when the stream ends on a byte boundary.
        packed: ``(bits, count)`` of a packed stream of codes wider than 8 bits but not 16 or
            32, whose range is checked on the unpacked codes; else None.
        kept: a sparsity mask keeps this many elements; else None.
    """

    what: str
    dtype: str
    shape: tuple[int, ...]
    code_bits: int | None = None
    tail_bits: int = 0
    packed: tuple[int, int] | None = None
    kept: int | None = None


def _codes(what: str, bits: int, shape: tuple[int, ...]) -> PartForm:
    dtype = code_dtype_name(bits)
    return PartForm(
        f"{what} codes of {bits} bits", dtype, shape, None if bits == _width(dtype) else bits
    )


def result_form(
    dtype: DataType,
    shape: tuple[int, ...],
    castmode: CastMode,
    transpose_scale: bool = False,
    scale_layout: ScaleLayout = ScaleLayout.PLAIN,
) -> dict[str, PartForm]:
    """The parts a valid actual or compress result has, and what each must be (§8).

    Actual data holds one code per element, in the narrowest unsigned dtype of the element
    width; scale, zero-point and tensor-scale codes likewise in the scale array's shape (the
    tensor scale: shape ``()``). Compress data is the packed stream of the kept codes: a 1-D
    uint8 array of exactly the bytes they need, the unused high bits of its last byte 0.
    A keep-mask is bool in the array's shape (actual) or packed eight per byte (compress),
    and keeps as many elements as the sparsity groups do. Metadata (a datatype with
    ``meta_bits > 0``) is uint8 in the layout's ``meta_shape`` (actual) or the packed stream
    of its ``meta_bits``-bit codes in C order (compress), whatever the scale layout. Blocked
    scales and zero points (§8.1) have the padded blocked shape instead of the scale shape.

    Raises:
        SpecError: for a tile segment naming a dimension ``shape`` lacks, or the blocked
            layout for a datatype it does not apply to.
    """
    n, sspec = dtype.nspec, dtype.sspec
    count = math.prod(shape)
    layout = None if sspec is None else block_layout(shape, dtype, transpose_scale)
    kept = count if layout is None else layout.kept_count
    sparse = sspec is not None and sspec.is_sparse
    forms: dict[str, PartForm] = {}
    if castmode is CastMode.ACTUAL:
        forms["data"] = _codes(n.code, n.bits, shape)
    else:
        wide = 2 if n.bits <= 16 else 4
        size = -(-kept * n.bits // 8) if n.bits <= 8 else kept * wide
        odd = n.bits > 8 and n.bits not in (16, 32)
        forms["data"] = PartForm(
            f"{n.code} codes of {n.bits} bits packed",
            "uint8",
            (size,),
            tail_bits=kept * n.bits % 8 if n.bits < 8 else 0,
            packed=(n.bits, kept) if odd else None,
        )
    if scale_layout is ScaleLayout.BLOCKED:
        if layout is None:
            raise SpecError(f"an unscaled {dtype.name} result has no scales to lay out blocked")
        scale_shape = blocked_scales(layout, dtype).shape
    elif layout is not None:
        scale_shape = layout.scale_shape
    if layout is not None:
        forms["scale"] = _codes(sspec.scale.code, sspec.scale.bits, scale_shape)
    if dtype.zero is not None:
        forms["zero"] = _codes(dtype.zero.code, dtype.zero.bits, scale_shape)
    if dtype.tenscale is not None:
        forms["tenscale"] = _codes(dtype.tenscale.code, dtype.tenscale.bits, ())
    mbits = dtype.meta_bits
    if mbits and castmode is CastMode.ACTUAL:
        forms["meta"] = PartForm(
            f"metadata codes of {mbits} bit{'s' * (mbits != 1)}",
            "uint8",
            layout.meta_shape,
            code_bits=mbits,
        )
    elif mbits:
        mcount = math.prod(layout.meta_shape)
        forms["meta"] = PartForm(
            f"metadata codes of {mbits} bit{'s' * (mbits != 1)} packed",
            "uint8",
            (-(-mcount * mbits // 8),),
            tail_bits=mcount * mbits % 8,
        )
    if sparse and castmode is CastMode.ACTUAL:
        forms["mask"] = PartForm("a keep-mask", "bool", shape, kept=kept)
    elif sparse:
        forms["mask"] = PartForm(
            "a packed keep-mask", "uint8", (-(-count // 8),), tail_bits=count % 8, kept=kept
        )
    return forms


def _form_of(result: CastResult) -> dict[str, PartForm]:
    """The form ``result`` claims, after checking its plain attributes."""
    dt, castmode = result.dtype, result.castmode
    if not isinstance(dt, DataType):
        raise SpecError(f"CastResult.dtype must be a tcast.DataType, got {dt!r}")
    if not isinstance(castmode, CastMode) or castmode is CastMode.VIRTUAL:
        raise SpecError(
            f"CastResult.castmode must be CastMode.ACTUAL or CastMode.COMPRESS, got {castmode!r}"
        )
    if not isinstance(result.transpose_scale, bool):
        raise SpecError(
            f"CastResult.transpose_scale must be True or False, got {result.transpose_scale!r}"
        )
    shape = result_shape(result.shape)
    layout = getattr(result, "scale_layout", ScaleLayout.PLAIN)
    if not isinstance(layout, ScaleLayout):
        raise SpecError(
            f"CastResult.scale_layout must be ScaleLayout.PLAIN or ScaleLayout.BLOCKED, "
            f"got {layout!r}"
        )
    return result_form(dt, shape, castmode, result.transpose_scale, layout)


def result_shape(shape: object) -> tuple[int, ...]:
    """A CastResult's shape as a tuple of Python ints.

    A tuple or list of integer sizes ``>= 0``: Python ints or any integer type
    (``operator.index``: NumPy integers, 0-d integer tensors), never bools.

    Raises:
        SpecError: for anything else, naming the first bad size and its type.
    """
    if not isinstance(shape, tuple | list):
        raise SpecError(
            f"CastResult.shape must be a tuple of sizes >= 0 (integers), got "
            f"{type(shape).__name__} {quote(shape)}"
        )
    sizes = []
    for k in shape:
        try:
            n = None if isinstance(k, bool) else operator.index(k)
        except TypeError:
            n = None
        if n is None or n < 0:
            raise SpecError(
                f"CastResult.shape must be a tuple of sizes >= 0 (integers); {quote(shape)} "
                f"has {quote(k)} ({type(k).__name__})"
            )
        sizes.append(n)
    return tuple(sizes)


def with_int_shape(result: CastResult) -> CastResult:
    """``result``, or a copy whose shape is a tuple of Python ints (:func:`result_shape`).

    Engines read ``result.shape`` as Python ints; the front door and ``EngineBase.upcast``
    pass them a result whose shape is so.

    Raises:
        SpecError: for a shape :func:`result_shape` refuses.
    """
    shape = result.shape
    if isinstance(shape, tuple) and all(type(k) is int and k >= 0 for k in shape):
        return result
    return dataclasses.replace(result, shape=result_shape(shape))


def check_result_parts(
    result: CastResult, ops: ArrayOps, array_type: type | tuple[type, ...], what: str
) -> dict[str, PartForm]:
    """Refuse a result whose arrays are not the parts :func:`result_form` gives.

    Checks, without reading an element: the datatype, shape and cast mode are valid; every
    part the datatype needs is there and no other; each is an ``array_type`` of the form's
    dtype and shape.

    Args:
        result: the result to check.
        ops: the engine's array operations (``dtype_name``).
        array_type: the engine's array type(s) (``np.ndarray``, ``torch.Tensor``).
        what: how messages name one such array ("a NumPy array", "a torch tensor").

    Returns:
        The form of each part, for :func:`check_result_codes`.

    Raises:
        SpecError: naming the first part that does not fit and what it must be.
    """
    if not isinstance(result, CastResult):
        raise SpecError(f"upcast takes a tcast.CastResult, got {type(result).__name__}")
    forms = _form_of(result)
    name = result.dtype.name
    for part in PARTS:
        arr, form = getattr(result, part), forms.get(part)
        if form is None:
            if arr is not None:
                why = f": {name} has no metadata (meta_bits 0)" if part == "meta" else ""
                raise SpecError(f"a {name} CastResult must not have {part}{why}")
            continue
        if arr is None:
            raise SpecError(f"a {name} CastResult needs {part} ({form.what})")
        if not isinstance(arr, array_type):
            raise SpecError(
                f"CastResult.{part} must be {what} of {form.what}, got {type(arr).__name__}"
            )
        got = ops.dtype_name(arr)
        if got != form.dtype:
            raise SpecError(f"CastResult.{part} must be {form.dtype} ({form.what}), not {got}")
        if tuple(arr.shape) != form.shape:
            raise SpecError(
                f"CastResult.{part} has shape {tuple(arr.shape)}, expected "
                f"{form.shape} ({form.what})"
            )
    return forms


def check_result_codes(result: CastResult, ops: ArrayOps, forms: dict[str, PartForm]) -> None:
    """Refuse a result whose (checked) parts hold values no cast result holds.

    A code wider than its format, non-zero bits after the end of a packed stream, or a
    keep-mask that keeps another number of elements than the sparsity groups do.

    Args:
        result: a result :func:`check_result_parts` accepted.
        ops: the engine's array operations (``code_max``, ``last``, ``unpack_codes``,
            ``unpack_mask``, ``count``).
        forms: what :func:`check_result_parts` returned.

    Raises:
        SpecError: naming the part, the bad value and the valid range.
    """
    for part, form in forms.items():
        arr = getattr(result, part)
        if form.code_bits is not None:
            _check_max(part, form, ops.code_max(arr), form.code_bits)
        if form.packed is not None:
            bits, count = form.packed
            _check_max(part, form, ops.code_max(ops.unpack_codes(arr, bits, count)), bits)
        if form.tail_bits:
            last = ops.last(arr)
            if last >> form.tail_bits:
                raise SpecError(
                    f"CastResult.{part} ({form.what}) ends in byte {last:#04x}, whose bits "
                    f"{form.tail_bits}..7 are past the end of the stream and must be 0"
                )
        if form.kept is not None:
            keep = arr if form.dtype == "bool" else ops.unpack_mask(arr, math.prod(result.shape))
            got = ops.count(keep)
            if got != form.kept:
                raise SpecError(
                    f"CastResult.mask keeps {got} of {math.prod(result.shape)} elements; "
                    f"{result.dtype.name} keeps {form.kept} of a {tuple(result.shape)} array"
                )


def _check_max(part: str, form: PartForm, top: int, bits: int) -> None:
    if top >> bits:
        raise SpecError(
            f"CastResult.{part} holds code {top:#x}, but {form.what} are at most "
            f"{(1 << bits) - 1:#x}"
        )
