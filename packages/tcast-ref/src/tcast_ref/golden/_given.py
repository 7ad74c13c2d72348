"""Golden sets whose scales are given inputs (SEMANTICS.md 5.12).

A set made with given parts has input columns GSCALE (one code of the scale format per line),
GZERO (one code of the zero-point format, uint data) and GTENSCALE (one code of the tensor
scale format, two-level datatypes: the same for every line of a tensor). Each code stands for
the value it decodes to, which the cast takes as the given part; the SCALE, ZERO and TENSCALE
outputs hold the codes the cast used (a given value is encoded by the rule of 5.12, so a
GSCALE of a float format's +0 or of a subnormal scale gives the smallest normal scale).

The codes are a function of the settings: from the codes the same set computes without given
parts, moved by a draw of the set's Philox stream at counters from :data:`GIVEN_STREAM`
(:func:`given_inputs`, the rule in :data:`GIVEN_RULE`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import tcast
from tcast import DataType, NumberSpec
from tcast.exact import decode as exact_decode
from tcast.exact import encode as exact_encode
from tcast.exact import given_scale_code, given_zero_code

from .._codec import code_dtype, decode
from ._geometry import Geometry
from ._random import Stream

__all__ = ["GIVEN_COLUMNS", "GIVEN_RULE", "GIVEN_STREAM", "given_inputs", "given_kwargs"]

#: The first Philox counter of the given parts' draws: word ``GIVEN_STREAM + p * lines + i``
#: is line ``i``'s draw for part ``p`` (0 scale, 1 zero point, 2 tensor scale).
GIVEN_STREAM = 2 << 40
#: The input column of each given part.
GIVEN_COLUMNS = {"scale": "GSCALE", "zero": "GZERO", "tensor_scale": "GTENSCALE"}
#: How the given codes are chosen (the header's ``given.rule``).
GIVEN_RULE = (
    "w = word 0 of Philox at counter given_stream + part * lines + line (part 0 GSCALE, 1 "
    "GZERO, 2 GTENSCALE), r = w mod 16. GSCALE: from c, the scale code of the line in the "
    "actual cast of the same lines without given parts (the code of 1.0 where that block is "
    "NaN): r = 0 gives code 0, r = 1 "
    "the largest finite non-negative code, otherwise clamp(c + (r mod 7) - 3) to those codes. "
    "GZERO: from z, the value of the computed ZERO (0 where NaN): r = 0 gives the zero "
    "format's smallest value, r = 1 its largest, otherwise z + (r mod 7) - 3, encoded as a "
    "given zero point (5.12). GTENSCALE, one per tensor (the lines cast together, the draw of "
    "its first line): from t, the value of the computed tensor scale (1.0 where NaN), "
    "fl32(t * 2**((w mod 5) - 2)) encoded as a given scale (5.12), or t itself where that "
    "product is not finite"
)


def _largest_finite_code(s: NumberSpec) -> int:
    """The largest code of a non-negative finite value of ``s`` (scale formats)."""
    if s.is_exponent:
        return s.max_code
    return exact_encode(float(s.max_value), s, "even", saturate=True)


def _moved(base: np.ndarray, words: np.ndarray, hi: int) -> np.ndarray:
    r = words % 16
    moved = np.clip(base + (r % 7) - 3, 0, hi)
    return np.where(r == 0, 0, np.where(r == 1, hi, moved))


def given_inputs(
    st: Any, geo: Geometry, computed: Any, runs: list[tuple[int, int]]
) -> dict[str, np.ndarray]:
    """The given part columns of a set (``st.given``): one word per line each.

    Args:
        st: the set's Settings (its ``given`` parts, datatype and seed).
        geo: the set's geometry.
        computed: the cast of the same lines without given parts (``scale``, ``zero``,
            ``tenscale`` per line).
        runs: the ``[lo, hi)`` lines cast together (a tensor of a two-level datatype).
    """
    dt: DataType = st.dtype
    n = len(computed.scale)
    out: dict[str, np.ndarray] = {}
    words = Stream(st.seed, GIVEN_STREAM).words(3 * n).astype(np.int64).reshape(3, n)
    if "scale" in st.given:
        s = dt.sspec.scale
        hi = _largest_finite_code(s)
        base = computed.scale.astype(np.int64)
        base = np.where(base == s.nan_code, exact_encode(1.0, s, "even"), base)
        out["GSCALE"] = _moved(np.clip(base, 0, hi), words[0], hi).astype(code_dtype(s.bits))
    if "zero" in st.given:
        z = dt.zero
        vals = decode(computed.zero, z).astype(np.float64)
        vals = np.where(np.isnan(vals), 0.0, vals)
        r = words[1] % 16
        hi_v = float(z.max_value)
        lo_v = float(z.minint) if z.is_integer else -hi_v
        target = np.where(r == 0, lo_v, np.where(r == 1, hi_v, vals + (r % 7) - 3))
        codes = [given_zero_code(float(np.float32(v)), z) for v in target]
        out["GZERO"] = np.array(codes, code_dtype(z.bits))
    if "tensor_scale" in st.given:
        t = dt.tenscale
        codes = np.zeros(n, code_dtype(t.bits))
        for lo, hi in runs:
            v = float(exact_decode(int(computed.tenscale[lo]), t))
            v = 1.0 if math.isnan(v) else v
            scaled = float(np.float32(v * 2.0 ** (int(words[2][lo] % 5) - 2)))
            codes[lo:hi] = given_scale_code(scaled if math.isfinite(scaled) else v, t)
        out["GTENSCALE"] = codes
    return out


def given_kwargs(
    dt: DataType, geo: Geometry, cols: dict[str, np.ndarray], lo: int, hi: int, shape: tuple
) -> dict[str, Any]:
    """The given parts of lines ``[lo, hi)`` cast as an array of ``shape``, as cast takes them.

    Each GSCALE/GZERO word's value goes to its line's block of the scale array (the block
    order of ``geo.scales_from_array``, inverted); GTENSCALE's value of the first line serves
    the tensor.
    """
    out: dict[str, Any] = {}
    sshape = tcast.block_layout(shape, dt).scale_shape
    count = int(np.prod(sshape))
    for part, col, spec in (("scale", "GSCALE", dt.sspec.scale), ("zero", "GZERO", dt.zero)):
        if col in cols:
            where = geo.scales_from_array(np.arange(count).reshape(sshape))
            vals = np.empty(count, np.float32)
            vals[where] = decode(cols[col][lo:hi].reshape(-1), spec)
            # one tensor scale: a number (a 0-d array would not survive every engine's copy)
            out[part] = vals.reshape(sshape) if sshape else float(vals[0])
    if "GTENSCALE" in cols:
        out["tensor_scale"] = float(
            decode(cols["GTENSCALE"][lo : lo + 1].reshape(-1), dt.tenscale)[0]
        )
    return out
