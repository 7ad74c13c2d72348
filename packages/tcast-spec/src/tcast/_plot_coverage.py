"""What a golden set exercises, for the ``coverage`` picture.

The set is read with the public reader of tcast-ref (:func:`tcast_ref.golden.load`, which
refuses a damaged or edited set); every word is then classified here with the spec alone
(:func:`tcast.exact.decode` and the formats of the set's datatype), never with the engine
that made the set nor with the set's FLAGS column.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from ._dyadic import floor_log2
from ._plot_values import CLASSES, code_class
from .codebook import CodebookSpec
from .datatype import DataType
from .errors import UnsupportedError
from .exact import decode, f32
from .kit import element_max
from .number import NumberSpec, number

__all__ = ["INPUT_CLASSES", "Coverage", "coverage_data", "load_set", "output_classes"]

#: Classes of the inputs, after the classes of the outputs (:data:`CLASSES`).
#: ``beyond max``: a kept finite input whose magnitude exceeds the largest value the
#: element format reaches at the line's scale (the element maximum times the scale): it
#: saturates. (A subtile's exponent offset or a codebook mapping with a smaller top entry
#: saturates smaller inputs too; the FLAGS overflow bit counts those as well.)
INPUT_CLASSES = ("zero input", "beyond max", "Inf input", "NaN input", "pruned")


@dataclass(frozen=True)
class Coverage:
    """Counts of a golden set's words by class."""

    #: The set's name and settings, for a title.
    title: str
    #: What the output classes classify (``element codes of e2m1f``, ...).
    output_of: str
    #: Elements per class, outputs (those of :data:`CLASSES` the format has) then inputs
    #: (:data:`INPUT_CLASSES`; ``pruned`` in sparse sets only), zero counts included.
    classes: dict[str, int]
    #: Tile sets: per class, the count at each element position of a line (C order of the
    #: tile); None for unscaled and decode sets.
    positions: dict[str, list[int]] | None
    #: Scaled sets: lines per scale exponent (floor(log2(scale))), ``NaN`` for NaN scales,
    #: ``zero`` for a zero scale.
    scale_exponents: dict[int | str, int] | None
    #: The element format's codes and how often each is an output (at most 8-bit
    #: elements), or None.
    code_hits: list[int] | None


def load_set(path: str | Path) -> Any:
    """Load a golden set with tcast-ref's reader.

    Raises:
        UnsupportedError: without tcast-ref installed.
        TcastError: (tcast_ref.golden.GoldenSetError) for a missing, damaged or edited set.
    """
    try:
        from tcast_ref.golden import load
    except ImportError as err:
        raise UnsupportedError(
            "a golden set's coverage needs tcast-ref to read the set (pip install tcast-ref): "
            f"{err}"
        ) from None
    return load(path)


def _present(length: list[int] | None, shape: list[int], count: int) -> list[bool]:
    """Which element positions of a line lie inside its extent (LEN)."""
    if length is None:
        return [True] * count
    if len(shape) == 1:
        return [i < length[0] for i in range(count)]
    cols = shape[1]
    return [i // cols < length[0] and i % cols < length[1] for i in range(count)]


def _element_class(code: int, spec: NumberSpec | CodebookSpec) -> str:
    if isinstance(spec, NumberSpec):
        return code_class(code, spec)
    if spec.symmetric:  # code s*2**(I-1) + k: k = 0 a zero, the top k the largest entry
        k = code & ((1 << (spec.bits - 1)) - 1)
        return "zero" if k == 0 else "max" if k == (1 << (spec.bits - 1)) - 1 else "value"
    if code in (0, (1 << spec.bits) - 1):  # an ascending table: its ends saturate
        return "max"
    return "zero" if spec.tables[0][code] == 0 else "value"


def output_classes(spec: NumberSpec | CodebookSpec, scaled: bool) -> tuple[str, ...]:
    """The classes of :data:`CLASSES` a format's codes can fall in.

    Every scaled format has ``nan``: a non-finite block decodes to NaN.
    """
    if isinstance(spec, CodebookSpec):
        found = {"zero", "value", "max"}
    elif spec.is_float:
        found = {"zero", "normal", "max"} | ({"subnormal"} if spec.mbits else set())
        found |= {"inf"} if spec.has_inf else set()
        found |= {"nan"} if spec.has_nan else set()
    elif spec.is_exponent:
        found = {"value", "max", "nan"}
    else:
        found = {"zero", "value", "max"} | ({"unproduced"} if spec.is_int else set())
    if scaled:
        found.add("nan")
    return tuple(c for c in CLASSES if c in found)


def _scale_value(dt: DataType, code: int, tcode: int | None) -> float:
    assert dt.sspec is not None
    s = decode(code, dt.sspec.scale)
    if tcode is not None and dt.tenscale is not None:  # the float32 product decoding uses
        s = f32(s * Fraction(decode(tcode, dt.tenscale))) if math.isfinite(s) else s
    return s


def _exponent(s: float) -> int | str:
    if math.isnan(s) or math.isinf(s):
        return "NaN"
    if s == 0:
        return "zero"
    return floor_log2(Fraction(s))


def coverage_data(lset: Any) -> Coverage:
    """Count a loaded golden set's elements by class (see :class:`Coverage`).

    Args:
        lset: a set loaded by :func:`load_set`.

    Returns:
        The counts.
    """
    st = lset.settings()
    dt: DataType = st.dtype
    header = lset.header
    cols = {k: v.tolist() for k, v in lset.columns.items()}
    decode_set = header.get("operation") == "decode"
    virtual = st.castmode.value == "virtual"
    in_spec = number(st.input_dtype)
    elem = dt.nspec
    out_spec: NumberSpec | CodebookSpec = in_spec if virtual else elem
    out_key = "CODE" if decode_set else "OUT"
    count = len(cols[out_key][0])
    shape = header["cases"]["geometry"].get("tile_shape") or [count]
    tiled = not decode_set and dt.sspec is not None and count > 1
    has_scale = "SCALE" in cols
    # The largest magnitude an element reaches at the line's scale, in units of that scale;
    # unknown where the set holds no scale (virtual casts) or a zero point shifts the range.
    limit: Fraction | None = None
    if not virtual and "ZERO" not in cols:
        limit = element_max(elem, dt.sspec is not None and dt.sspec.scale.is_exponent)

    classes: Counter[str] = Counter()
    positions = {c: [0] * count for c in (*CLASSES, *INPUT_CLASSES)} if tiled else None
    scales: Counter[int | str] = Counter()
    hits = [0] * (1 << elem.bits) if elem.bits <= 8 and not virtual else None
    for line in range(len(cols[out_key])):
        length = cols["LEN"][line] if "LEN" in cols else None
        present = _present(length, shape, count)
        scale = None
        if has_scale:
            tcode = cols["TENSCALE"][line][0] if "TENSCALE" in cols else None
            scale = _scale_value(dt, cols["SCALE"][line][0], tcode)
            scales[_exponent(scale)] += 1
        mask = cols["MASK"][line] if "MASK" in cols else None
        for i in range(count):
            if not present[i]:
                continue
            found = []
            code = cols[out_key][line][i]
            if scale is not None and math.isnan(scale) and not decode_set:
                found.append("nan")  # a non-finite block: every element decodes to NaN
            else:
                found.append(_element_class(code, out_spec))
            if hits is not None:
                hits[code] += 1
            pruned = mask is not None and not (mask[i // 32] >> (i % 32)) & 1
            if "IN" in cols:  # a pruned element is not cast: it cannot saturate
                bound = None if pruned else limit
                found += _input_classes(cols["IN"][line][i], in_spec, bound, scale)
            if pruned:
                found.append("pruned")
            for c in found:
                classes[c] += 1
                if positions is not None:
                    positions[c][i] += 1
    inputs = [c for c in INPUT_CLASSES if c != "pruned" or "MASK" in cols]
    if limit is None:
        inputs.remove("beyond max")
    if "IN" not in cols:
        inputs = []
    what = f"{in_spec.code} values (virtual cast)" if virtual else f"element codes of {elem.code}"
    nan_blocks = has_scale and not decode_set
    name = header["datatype"].get("name", dt.code)
    settings = f"{st.castmode.value}, {st.roundmode.value}, level {st.level}"
    return Coverage(
        title=f"{name} ({dt.code}): {lset.lines} lines, {settings}",
        output_of=("decoded " if decode_set else "") + what,
        classes={c: classes[c] for c in (*output_classes(out_spec, nan_blocks), *inputs)},
        positions=positions,
        scale_exponents=dict(sorted(scales.items(), key=lambda kv: (isinstance(kv[0], str), kv[0])))
        if has_scale
        else None,
        code_hits=hits,
    )


def _input_classes(
    bits: int, spec: NumberSpec, limit: Fraction | None, scale: float | None
) -> list[str]:
    x = decode(bits, spec)
    if math.isnan(x):
        return ["NaN input"]
    if math.isinf(x):
        return ["Inf input"]
    if x == 0:
        return ["zero input"]
    if limit is None or (scale is not None and not math.isfinite(scale)):
        return []
    # the largest magnitude as decoded: the element maximum times the scale, in float32
    bound = f32(limit * Fraction(scale)) if scale is not None else limit
    return ["beyond max"] if abs(x) > bound else []
