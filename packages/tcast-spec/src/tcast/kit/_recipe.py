"""The float32 arithmetic of scales, zero points and elements as ordered steps (SEMANTICS §5).

A :class:`Recipe` is a tuple of :class:`Step`: ``out = op(args)``, where each argument is the
name of an input, of an earlier step's output or of a constant of :class:`~tcast.kit.CastRules`
(``rules.constants``), and every arithmetic step rounds once to float32 (SEMANTICS.md §0).
An engine evaluates a recipe with :func:`run_recipe` and an object providing the operations on
its arrays (:class:`RecipeOps`); a kernel generator can unroll the same steps at compile time.

The operations:

==============  ================================================================================
``div mul``     ``fl32(a / b)``, ``fl32(a * b)``, ``fl32(a + b)``, ``fl32(a - b)``: one correctly
``add sub``     rounded float32 operation (no fused multiply-add, no approximate division)
``min``         the smaller of two (``a`` when equal; no NaN reaches it)
``scale_code``  ``RNE_S(clamp(v, smallest_normal_S, max_S))`` as codes, NaN -> ``max_S``
                (SEMANTICS.md §5.5); args ``(v, "scale" | "tenscale")``
``exp_code``    the power-of-two scale code of ``v >= 0`` by ``rules.exponent``: 0 for 0,
                ``max_code`` for +Inf
``ceil_code``   a given scale ``v >= 0`` into an exponent format: the smallest power of two
                ``2**e >= v``, code ``clamp(e + bias, 0, max_code)``, 0 for 0 (SEMANTICS.md
                §5.12; the rule :func:`~tcast.kit.given_exponent_rule`); args ``(v, "scale")``
``zero_code``   the zero-point code: ``v`` rounded to nearest even into the zero-point format,
                saturating
``decode``      the float32 value of codes; args ``(codes, "scale" | "tenscale" | "zero")``
==============  ================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "ELEMENT_DECODE",
    "ELEMENT_DECODE_FIXED",
    "ELEMENT_DECODE_ZERO",
    "ELEMENT_ENCODE",
    "ELEMENT_ENCODE_FIXED",
    "ELEMENT_ENCODE_ZERO",
    "EXPONENT_DECODE",
    "EXPONENT_SCALE",
    "FLOAT_SCALE",
    "GIVEN_EXPONENT_SCALE",
    "GIVEN_FLOAT_SCALE",
    "GIVEN_TENSOR_SCALE",
    "GIVEN_TILE_SCALE",
    "GIVEN_TWO_LEVEL_SCALES",
    "GIVEN_UINT_EXPONENT_SCALE",
    "GIVEN_UINT_EXPONENT_SCALE_ZERO",
    "GIVEN_UINT_EXPONENT_ZERO",
    "GIVEN_UINT_FLOAT_SCALE",
    "GIVEN_UINT_FLOAT_SCALE_ZERO",
    "GIVEN_UINT_FLOAT_ZERO",
    "OPERATIONS",
    "TWO_LEVEL_DECODE",
    "TWO_LEVEL_SCALE",
    "UINT_DECODE",
    "UINT_EXPONENT_SCALE",
    "UINT_FLOAT_SCALE",
    "Recipe",
    "RecipeOps",
    "Step",
    "run_recipe",
]

#: The operations a step may name, with their argument counts.
OPERATIONS = {
    "div": 2,
    "mul": 2,
    "add": 2,
    "sub": 2,
    "min": 2,
    "scale_code": 2,
    "exp_code": 1,
    "ceil_code": 2,
    "zero_code": 1,
    "decode": 2,
}


@dataclass(frozen=True)
class Step:
    """``out = op(*args)``: one step of a recipe."""

    out: str
    op: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.out} = {self.op}({', '.join(self.args)})"


@dataclass(frozen=True)
class Recipe:
    """Ordered float32 steps from named inputs to named outputs.

    Attributes:
        name: what the recipe computes.
        inputs: names the caller provides (arrays or Python floats).
        steps: the steps, in order.
        outputs: the names the caller reads back.
    """

    name: str
    inputs: tuple[str, ...]
    steps: tuple[Step, ...]
    outputs: tuple[str, ...]

    def __str__(self) -> str:
        return "; ".join(str(s) for s in self.steps)


def _recipe(name: str, inputs: str, text: str, outputs: str) -> Recipe:
    steps = []
    for line in filter(str.strip, text.splitlines()):
        out, call = (p.strip() for p in line.split("="))
        op, rest = call.split("(")
        args = tuple(a.strip() for a in rest.rstrip(")").split(","))
        steps.append(Step(out, op.strip(), args))
    return Recipe(name, tuple(inputs.split()), tuple(steps), tuple(outputs.split()))


class RecipeOps(Protocol):
    """The operations an engine provides to :func:`run_recipe` (arrays or Python floats)."""

    def div(self, a: Any, b: Any) -> Any: ...
    def mul(self, a: Any, b: Any) -> Any: ...
    def add(self, a: Any, b: Any) -> Any: ...
    def sub(self, a: Any, b: Any) -> Any: ...
    def min(self, a: Any, b: Any) -> Any: ...
    def scale_code(self, v: Any, which: str) -> Any: ...
    def exp_code(self, v: Any) -> Any: ...
    def ceil_code(self, v: Any, which: str) -> Any: ...
    def zero_code(self, v: Any) -> Any: ...
    def decode(self, codes: Any, which: str) -> Any: ...


def run_recipe(
    recipe: Recipe, ops: Any, constants: tuple[tuple[str, float], ...], **inputs: Any
) -> dict:
    """Evaluate ``recipe`` with an engine's ``ops``; returns every named value.

    Args:
        recipe: the recipe.
        ops: an object with the methods of :class:`RecipeOps`.
        constants: ``(name, value)`` pairs of float32 constants (``CastRules.constants``).
        **inputs: the recipe's inputs.

    Raises:
        KeyError: for an input the caller did not give (a programming error in an engine).
    """
    env: dict[str, Any] = dict(constants)
    env.update(inputs)
    for name in recipe.inputs:
        if name not in inputs:
            raise KeyError(f"recipe {recipe.name} needs input {name!r}")
    for step in recipe.steps:
        if step.op in ("scale_code", "ceil_code", "decode"):
            env[step.out] = getattr(ops, step.op)(env[step.args[0]], step.args[1])
        else:
            env[step.out] = getattr(ops, step.op)(*(env[a] for a in step.args))
    return env


# Pieces of the scale recipes, each a few steps, joined in order (one definition each).
_DEC_RECIP = """
    dec = decode(scale, scale)
    recip = div(ONE, dec)
"""
# two-level: the tensor scale from the tensor amax, its value, and the tile scale relative to it
_TENSOR_FROM_AMAX = """
    tq = div(tamax, MS_M)
    tenscale = scale_code(tq, tenscale)
"""
_TVAL = "tval = decode(tenscale, tenscale)"
_TILE_UNDER_T = """
    q1 = div(amax, M)
    q = div(q1, tval)
    scale = scale_code(q, scale)
"""
# two-level: the encode multiplier (kept finite) and the decode multiplier
_TWO_LEVEL_TAIL = """
    sval = decode(scale, scale)
    r1 = div(ONE, tval)
    r2 = div(r1, sval)
    recip = min(r2, F32_MAX)
    dec = mul(tval, sval)
"""
# uint data (SEMANTICS.md §5.7): the scale from the range [lo, hi], which always holds 0
_UINT_FLOAT_CODE = """
    rng = sub(hi, lo)
    q = div(rng, M)
    scale = scale_code(q, scale)
"""
_UINT_EXPONENT_CODE = """
    rng = sub(hi, lo)
    scale = exp_code(rng)
"""
# uint data: from the scale to the encode multiplier and the zero point, fl32(0 - lo) (+0,
# never -0) times the multiplier, rounded into the zero-point format
_ZERO_POINT = (
    _DEC_RECIP
    + """
    nlo = sub(ZERO, lo)
    zraw = mul(nlo, recip)
    zero = zero_code(zraw)
    zval = decode(zero, zero)
"""
)
# given parts (SEMANTICS.md §5.12) arrive as the inputs gscale, gzero and gtenscale (float32)
# and are encoded by the rule of their format (a given zero point plus +0 first: never the -0
# code); every later step is the computed recipe's
_GIVEN_SCALE = "scale = scale_code(gscale, scale)"
_GIVEN_EXPONENT = "scale = ceil_code(gscale, scale)"
_GIVEN_TENSOR = "tenscale = scale_code(gtenscale, tenscale)"
_GIVEN_ZERO = (
    _DEC_RECIP
    + """
    gz = add(gzero, ZERO)
    zero = zero_code(gz)
    zval = decode(zero, zero)
"""
)
_SIGNED_OUT = "scale recip dec"
_TWO_LEVEL_OUT = "tenscale scale recip dec"
_UINT_OUT = "scale zero recip zval dec"


def _steps(*pieces: str) -> str:
    return "\n".join(pieces)


#: Power-of-two scale of signed data; ``recip`` is exact (a power of two within float32).
EXPONENT_SCALE = _recipe(
    "exponent scale", "amax", _steps("scale = exp_code(amax)", _DEC_RECIP), _SIGNED_OUT
)

#: Float scale of signed data: ``s = RNE_S(clamp(fl32(amax / M)))``, encode multiplies by
#: ``fl32(1 / s)`` (SEMANTICS.md §5.5).
FLOAT_SCALE = _recipe(
    "float scale",
    "amax",
    _steps("q = div(amax, M)", "scale = scale_code(q, scale)", _DEC_RECIP),
    _SIGNED_OUT,
)

#: Two-level scaling (NVFP4, SEMANTICS.md §5.6): a tensor scale from the tensor amax, block
#: scales relative to it; the encode multiplier is kept finite.
TWO_LEVEL_SCALE = _recipe(
    "two-level scale",
    "amax tamax",
    _steps(_TENSOR_FROM_AMAX, _TVAL, _TILE_UNDER_T, _TWO_LEVEL_TAIL),
    _TWO_LEVEL_OUT,
)

#: uint data, float scale (SEMANTICS.md §5.7): the range ``[lo, hi]`` always holds 0.
UINT_FLOAT_SCALE = _recipe(
    "uint float scale", "lo hi", _steps(_UINT_FLOAT_CODE, _ZERO_POINT), _UINT_OUT
)

#: uint data, power-of-two scale (SEMANTICS.md §5.7).
UINT_EXPONENT_SCALE = _recipe(
    "uint exponent scale", "lo hi", _steps(_UINT_EXPONENT_CODE, _ZERO_POINT), _UINT_OUT
)

#: A given power-of-two scale of signed data.
GIVEN_EXPONENT_SCALE = _recipe(
    "given exponent scale", "gscale", _steps(_GIVEN_EXPONENT, _DEC_RECIP), _SIGNED_OUT
)
#: A given float scale of signed data.
GIVEN_FLOAT_SCALE = _recipe(
    "given float scale", "gscale", _steps(_GIVEN_SCALE, _DEC_RECIP), _SIGNED_OUT
)
#: Two-level scaling with a given tensor scale: the tile scales from it (a one-pass cast).
GIVEN_TENSOR_SCALE = _recipe(
    "given tensor scale",
    "amax gtenscale",
    _steps(_GIVEN_TENSOR, _TVAL, _TILE_UNDER_T, _TWO_LEVEL_TAIL),
    _TWO_LEVEL_OUT,
)
#: Two-level scaling with given tile scales: the tensor scale from the tensor amax.
GIVEN_TILE_SCALE = _recipe(
    "given tile scales",
    "tamax gscale",
    _steps(_TENSOR_FROM_AMAX, _TVAL, _GIVEN_SCALE, _TWO_LEVEL_TAIL),
    _TWO_LEVEL_OUT,
)
#: Two-level scaling with both scales given.
GIVEN_TWO_LEVEL_SCALES = _recipe(
    "given two-level scales",
    "gscale gtenscale",
    _steps(_GIVEN_TENSOR, _TVAL, _GIVEN_SCALE, _TWO_LEVEL_TAIL),
    _TWO_LEVEL_OUT,
)
#: uint data with a given float scale: the zero point from it and the block's minimum.
GIVEN_UINT_FLOAT_SCALE = _recipe(
    "given uint float scale", "lo gscale", _steps(_GIVEN_SCALE, _ZERO_POINT), _UINT_OUT
)
#: uint data with a given power-of-two scale.
GIVEN_UINT_EXPONENT_SCALE = _recipe(
    "given uint exponent scale", "lo gscale", _steps(_GIVEN_EXPONENT, _ZERO_POINT), _UINT_OUT
)
#: uint data with a given zero point: the float scale from the block's range.
GIVEN_UINT_FLOAT_ZERO = _recipe(
    "given uint zero point (float scale)",
    "lo hi gzero",
    _steps(_UINT_FLOAT_CODE, _GIVEN_ZERO),
    _UINT_OUT,
)
#: uint data with a given zero point: the power-of-two scale from the block's range.
GIVEN_UINT_EXPONENT_ZERO = _recipe(
    "given uint zero point (exponent scale)",
    "lo hi gzero",
    _steps(_UINT_EXPONENT_CODE, _GIVEN_ZERO),
    _UINT_OUT,
)
#: uint data with a given float scale and zero point.
GIVEN_UINT_FLOAT_SCALE_ZERO = _recipe(
    "given uint float scale and zero point",
    "gscale gzero",
    _steps(_GIVEN_SCALE, _GIVEN_ZERO),
    _UINT_OUT,
)
#: uint data with a given power-of-two scale and zero point.
GIVEN_UINT_EXPONENT_SCALE_ZERO = _recipe(
    "given uint exponent scale and zero point",
    "gscale gzero",
    _steps(_GIVEN_EXPONENT, _GIVEN_ZERO),
    _UINT_OUT,
)

#: Element before rounding (float data, or ints under a float scale).
ELEMENT_ENCODE = _recipe("element encode", "x recip", "xs = mul(x, recip)", "xs")
#: intK under a power-of-two scale: fixed point with K-2 fraction bits.
ELEMENT_ENCODE_FIXED = _recipe(
    "element encode (fixed point)",
    "x recip",
    """
    x1 = mul(x, recip)
    xs = mul(x1, FIXED)
""",
    "xs",
)
#: uint data: the zero point is added after the multiply.
ELEMENT_ENCODE_ZERO = _recipe(
    "element encode (zero point)",
    "x recip zval",
    """
    x1 = mul(x, recip)
    xs = add(x1, zval)
""",
    "xs",
)
#: Element value from its decoded code ``q`` (before NaN blocks and pruning).
ELEMENT_DECODE = _recipe("element decode", "q dec", "v = mul(q, dec)", "v")
ELEMENT_DECODE_FIXED = _recipe(
    "element decode (fixed point)",
    "q dec",
    """
    q1 = mul(q, INV_FIXED)
    v = mul(q1, dec)
""",
    "v",
)
ELEMENT_DECODE_ZERO = _recipe(
    "element decode (zero point)",
    "q dec zval",
    """
    q1 = sub(q, zval)
    v = mul(q1, dec)
""",
    "v",
)

#: Upcast: the decode multiplier of a block from its scale code (one scale level).
EXPONENT_DECODE = _recipe("scale decode", "scale", "dec = decode(scale, scale)", "dec")
#: Upcast, two-level scaling: the tensor scale times the block scale.
TWO_LEVEL_DECODE = _recipe(
    "two-level decode",
    "scale tenscale",
    """
    tval = decode(tenscale, tenscale)
    sval = decode(scale, scale)
    dec = mul(tval, sval)
""",
    "dec",
)
#: Upcast, uint data: the scale and the zero point.
UINT_DECODE = _recipe(
    "uint decode",
    "scale zero",
    """
    dec = decode(scale, scale)
    zval = decode(zero, zero)
""",
    "dec zval",
)
