"""Which dtype of the ecosystem (torch, NumPy, ml_dtypes) holds a tcast format's codes as they are.

A ``CastResult`` holds unsigned codes. Where torch or ml_dtypes has a dtype whose bit layout
is a format's code layout, and which decodes every code to the value tcast decodes it to,
the codes can be viewed as that dtype without a copy (:func:`tcast.native`). This module
names that dtype, by its library's name, once for every engine; engines map the name to
their library's dtype object or say they have none.

The names are the ml_dtypes/torch spellings the number grammar reads (``docs/names.md``), so
a name is a twin exactly when the grammar parses it to the same :class:`~tcast.NumberSpec`:
``float8_e4m3fnuz`` is ``e4m3b8fnuz`` (bias 8), and bare ``e4m3fnuz`` (bias 7) has no twin.
"""

from __future__ import annotations

from .number import NumberSpec, number

__all__ = ["NATIVE_NAMES", "PACKED_NAMES", "native_name"]

#: The ecosystem dtypes that hold one code per element, by their library's name. Sub-byte
#: ones (ml_dtypes ``float4_e2m1fn``, ``int4`` ...) hold one code in the low bits of a byte,
#: which is how an actual result stores them.
NATIVE_NAMES: tuple[str, ...] = (
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e4m3b11fnuz",
    "float8_e4m3",
    "float8_e3m4",
    "float8_e8m0fnu",
    "float6_e2m3fn",
    "float6_e3m2fn",
    "float4_e2m1fn",
    "bfloat16",
    "float16",
    "float32",
    "int2",
    "int4",
    "int8",
    "int16",
    "int32",
    "uint2",
    "uint4",
    "uint8",
    "uint16",
    "uint32",
)

#: Dtypes that pack several sub-byte codes in a byte, by the name of the one-code dtype:
#: torch's ``float4_e2m1fn_x2`` holds two e2m1f codes, element 2i in the low nibble, which
#: is the compress stream of e2m1f codes (SEMANTICS.md §8).
PACKED_NAMES: dict[str, str] = {"float4_e2m1fn": "float4_e2m1fn_x2"}

_TWINS: dict[NumberSpec, str] = {}


def _twins() -> dict[NumberSpec, str]:
    """Each twin's spec to its name, parsed once (the first name of a spec wins)."""
    if not _TWINS:
        for name in NATIVE_NAMES:
            _TWINS.setdefault(number(name), name)
    return _TWINS


def native_name(spec: NumberSpec | str, *, packed: bool = False) -> str | None:
    """The ecosystem dtype name that holds ``spec``'s codes as they are, or None.

    Args:
        spec: a number spec or code.
        packed: name the dtype of the compress stream of these codes (SEMANTICS.md §8)
            rather than of one code per element: the same name for whole-byte codes (the
            stream is their little-endian bytes), a packing dtype (``float4_e2m1fn_x2``)
            for sub-byte ones where one exists.

    Returns:
        ``"float8_e4m3fn"`` for e4m3fn, ``"float8_e8m0fnu"`` for e8m0, ``"int8"`` for int8
        (two's complement codes are the values) ...; None for a format no library has
        (e3m2fnuz, int5, bare e4m3fnuz) and for codebook formats.

    Raises:
        SpecError: for a code that is no number spec.
    """
    spec = number(spec)
    name = _twins().get(spec)
    if name is None or not packed or spec.bits % 8 == 0:
        return name
    return PACKED_NAMES.get(name)
