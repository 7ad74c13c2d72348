"""A finite, documented space of datatypes for conformance testing.

:func:`combinations` enumerates every *valid* datatype in the cartesian
product of a :class:`CombinationSpace` — invalid pairs (say, an exponent
tensor scale over tile scales) are skipped — in a fixed order.
:func:`conformance_space` is what the conformance suite walks: the datatypes of
:data:`DEFAULT_SPACE`, then every catalog datatype outside it, then
:data:`AXIS_SAMPLES` (a stated sample of every other supported value of each
axis). See SEMANTICS.md §9 and docs/conformance.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ._lookup import datatype
from .catalog import ALIASES, CATALOG
from .datatype import DataType
from .errors import SpecError
from .number import number
from .scale import scale

__all__ = ["AXIS_SAMPLES", "DEFAULT_SPACE", "CombinationSpace", "combinations", "conformance_space"]


@dataclass(frozen=True)
class CombinationSpace:
    """The axes of the space, as codes.

    Attributes:
        floats: float element formats (cast unscaled and scaled).
        unscaled_only: float formats cast unscaled only.
        ints: signed integer element formats.
        uints: unsigned integer element formats.
        scales: scale formats (float or exponent).
        wide: float element formats of 16 to 31 bits, cast under every scale with
            ``wide_tiles`` only (their codes need more than one byte, and their subnormals
            reach far below float32's under float scales).
        wide_tiles: tile segment strings for ``wide`` data.
        zeros: zero-point formats for uint data.
        tenscales: tensor-scale formats over float tile scales.
        tiles: tile segment strings ("" is a tensor scale; "t0_t32" a 2-D tile).
    """

    # fmt: off
    floats: tuple[str, ...] = (
        "e4m3fn", "e5m2", "e4m3b8fnuz", "e5m2b16fnuz", "e4m3b11fnuz", "e3m4",
        "e3m2f", "e2m3f", "e2m1f", "e2m1fnuz", "binary8p3",
    )
    # fmt: on
    unscaled_only: tuple[str, ...] = ("bfloat16", "float16")
    ints: tuple[str, ...] = ("int8", "int4")
    uints: tuple[str, ...] = ("uint8", "uint4")
    scales: tuple[str, ...] = ("e8m0", "float32", "bfloat16", "e4m3fn")
    wide: tuple[str, ...] = ("bfloat16", "e8m15", "e8m22")
    wide_tiles: tuple[str, ...] = ("", "t2", "t32")
    zeros: tuple[str, ...] = ("int8", "uint8", "float32")
    tenscales: tuple[str, ...] = ("float32",)
    tiles: tuple[str, ...] = ("", "t0", "t32", "t16", "t8d0", "t0_t32", "t16_t16", "t32n2m4")


#: The space the conformance suite walks.
DEFAULT_SPACE = CombinationSpace()


def _join(*parts: str) -> str:
    return "_".join(p for p in parts if p)


def combinations(space: CombinationSpace = DEFAULT_SPACE) -> Iterator[DataType]:
    """Yield every valid datatype of ``space``, each once, in a fixed order.

    Order: unscaled floats; then float and int data under each scale and tile;
    then two-level scaling (float data and int data, float tile scale, tensor
    scale); then uint data under each scale, zero point and tile; then wide float
    data under each scale and wide tile.

    Raises:
        SpecError: if a code of the space itself is malformed.
    """
    seen: set[DataType] = set()

    def emit(ncode: str, scode: str | None) -> Iterator[DataType]:
        n = number(ncode)
        try:
            dt = DataType(n, None if scode is None else scale(scode))
        except SpecError:
            return
        if dt not in seen:
            seen.add(dt)
            yield dt

    for code in space.floats + space.unscaled_only:
        yield from emit(code, None)
    for data in space.floats + space.ints:
        for s in space.scales:
            for t in space.tiles:
                yield from emit(data, _join(s, t))
    for data in space.floats + space.ints:
        for s in space.scales:
            if not number(s).is_float:
                continue
            for ts in space.tenscales:
                for t in space.tiles:
                    if t:
                        yield from emit(data, _join(s, ts, t))
    for data in space.uints:
        for s in space.scales:
            for z in space.zeros:
                for t in space.tiles:
                    yield from emit(data, _join(s, z, t))
    for data in space.wide:
        for s in space.scales:
            for t in space.wide_tiles:
                yield from emit(data, _join(s, t))


#: Per axis, datatypes that carry its other supported values (beyond DEFAULT_SPACE and the
#: catalog): each value at least once, on an element or scale that is already in the space.
# fmt: off
AXIS_SAMPLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("P3109 elements, scaled", ("binary8p1_e8m0_t32", "binary8p5_float32_t16",
                                "binary8p7_bfloat16_t32")),
    ("eXmY styles, biases and widths (to 31 bits)", (
        "e3m3", "e4m4", "e2m5", "e5m6", "e6m5fn", "e4m3b3", "e5m2b15fnuz", "e3m3_e8m0_t32",
        "e5m6_float32_t32", "e6m5fn_e8m0_t16", "e8m15_e4m3fn_float32_t16",
    )),
    ("int widths 2..32", (
        "int2_e8m0_t32", "int3_float32_t16", "int5_e8m0_t32", "int6_bfloat16_t32",
        "int7_e8m0_t8d0", "int12_e8m0_t32", "int16_float32_t32", "int24_e8m0_t32",
        "int32_e8m0_t32",
    )),
    ("uint widths 2..32", (
        "uint2_float32_float32_t32", "uint3_float32_int8_t16", "uint5_bfloat16_uint8_t32",
        "uint6_float32_float32_t8d0", "uint12_float32_float32_t32", "uint16_float32_float32_t32",
        "uint24_float32_float32_t32", "uint32_float32_float32_t32",
    )),
    ("scale formats: exponent and float kinds", (
        "e4m3fn_e5m0_t32", "e2m1f_e4m0_t16", "int8_e6m0_t32", "e4m3fn_e5m2_t32",
        "e2m1f_e4m3b8fnuz_t16", "int4_float16_t32",
    )),
    ("zero-point formats", (
        "uint4_float32_int4_t32", "uint4_float32_uint4_t32", "uint4_float32_float16_t32",
        "uint8_float32_bfloat16_t32",
    )),
    ("tensor-scale formats", ("e2m1f_e4m3fn_bfloat16_t16", "int4_float32_bfloat16_t32")),
    ("tiles 2..1024 on the last, a middle and the first dimension", (
        "e4m3fn_e8m0_t2", "e2m1f_e8m0_t4", "e4m3fn_e8m0_t64", "int8_e8m0_t128",
        "e2m1f_float32_t256", "e4m3fn_e8m0_t512", "e4m3fn_e8m0_t1024", "e4m3fn_e8m0_t16d1",
        "int8_float32_t4d1", "e2m1f_e8m0_t32d0", "e4m3fn_e8m0_t2d0",
    )),
    ("2-D tiles: tile x channel, mixed sizes and dimensions", (
        "e4m3fn_e8m0_t32_t0", "e2m1f_e8m0_t8_t4", "int8_e8m0_t16d1_t16d0",
    )),
    ("sparsity patterns", ("e4m3fn_e8m0_t16n1m2", "e2m1f_e8m0_t32n4m8", "int8_float32_t16n2m8")),
    ("subtile exponent offsets: MSFP, widths o1..o3, float data, 2-D subtiles, float scales", (
        "int8_e8m0_t16s2o1", "int5_e8m0_t16s2o1", "int3_e8m0_t16s2o1", "int8_e8m0_t16s2o2",
        "int4_e8m0_t32s4o3", "e2m1f_e8m0_t32s8o1", "int8_e8m0_t8s2o1_t8s4",
        "int8_float32_t16s2o1", "int8_bfloat16_float32_t16s2o1",
    )),
    ("codebooks: the named ones, patterns f i p s e, a given table, two-level, subtiles", (
        "cb41fi_e2m2fnuz_e8m0_t32s4", "cb41f01_e2m2fnuz_e8m0_t32s4",
        "cb42fe0123_e3m2fnuz_e8m0_t32s8", "cb42f1346_e2m3fnuz_e8m0_t32s8",
        "cb41p1p2_e2m3fnuz_e8m0_t32s8", "cb41s1s2_e2m3fnuz_e8m0_t32s8", "cb31ie_int5_e8m0_t16s2",
        "cb40_float32_nf4_float32_t64", "cb41fi_e2m2fnuz_e4m3fn_float32_t32s4",
        "cb41fi_e2m2fnuz_e8m0_t8s2_t8s4", "cb41fi_e2m2fnuz_e8m0_t32",
    )),
)
# fmt: on


def conformance_space(space: CombinationSpace = DEFAULT_SPACE) -> Iterator[DataType]:
    """Yield the datatypes the conformance suite checks, each once, in a fixed order.

    First :func:`combinations` of ``space``; then every catalog datatype (primary names, in
    catalog order) outside it; then the datatypes of :data:`AXIS_SAMPLES`, axis by axis.

    Raises:
        SpecError: if a code of the space or of the samples is malformed (a test checks that
            every sample is valid, so this is a bug).
    """
    seen: set[DataType] = set()
    extra = [CATALOG[n] for n in CATALOG if n not in ALIASES]
    extra += [datatype(code) for _, codes in AXIS_SAMPLES for code in codes]
    for dt in (*combinations(space), *extra):
        if dt not in seen:
            seen.add(dt)
            yield dt
