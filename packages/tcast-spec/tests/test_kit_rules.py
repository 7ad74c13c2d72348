"""The engine kit's rules (tcast.kit) against the exact model, which keeps its own definitions.

* every scale mode's integer threshold (``ExponentScaleRule``) against
  ``tcast.exact.exponent_scale``: every float16 significand, the significands next to each
  threshold, hypothesis float32 values, and every positive bfloat16 value for MX formats;
* the uint range rule against the exact model's smallest power of two;
* the float-scale, two-level and zero-point recipes, evaluated in exact float32 arithmetic,
  against ``tcast.exact.cast_block``'s scale, tensor-scale and zero-point codes;
* the recipes' structure (known operations, names defined before use).
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tcast
from tcast import ScaleMode, exact
from tcast.exact import _f32
from tcast.kit import (
    NEVER,
    OPERATIONS,
    cast_rules,
    element_max,
    exponent_scale_rule,
    given_exponent_rule,
    given_scale_recipe,
    nan_keeps_sign,
    range_scale_rule,
    run_recipe,
    scale_bounds,
    sig24,
)
from tcast.kit import _recipe as recipes

ELEMENTS = [
    "e4m3fn",
    "e5m2",
    "e2m3f",
    "e3m2f",
    "e2m1f",
    "e4m3fnuz",
    "e5m2fnuz",
    "e3m4",
    "binary8p3",
    "e2m1b5",
    "e8m0",
    "int8",
    "int4",
    "int2",
    "e8m23",
    "bfloat16",
]
SCALE = tcast.number("e8m0")


def _f(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _exact_code(a: float, n, s, mode) -> int:
    if a == 0:
        return 0
    e = exact.exponent_scale(a, element_max(n, True), n.precision, mode)
    return min(max(e + s.bias, 0), s.max_code)


def _sig_values(rule) -> list[float]:
    """Values in [1, 2) with every float16 significand and the significands at the threshold."""
    sigs = {(1 << 23) | (m << 13) for m in range(1024)}
    if rule.threshold < NEVER:
        sigs |= {
            t
            for t in (rule.threshold - 1, rule.threshold, rule.threshold + 1)
            if (1 << 23) <= t < (1 << 24)
        }
    sigs |= {(1 << 23), (1 << 24) - 1}
    return [s / float(1 << 23) for s in sorted(sigs)]


@pytest.mark.parametrize("mode", list(ScaleMode))
@pytest.mark.parametrize("elem", ELEMENTS)
def test_threshold_rule_equals_exact_scale_mode_on_every_significand(elem, mode):
    n = tcast.number(elem)
    rule = exponent_scale_rule(n, SCALE, mode)
    for v in _sig_values(rule):
        for k in (-3, 0, 5):
            a = math.ldexp(v, k)
            assert rule.code(a) == _exact_code(a, n, SCALE, mode), (elem, mode, a)


@pytest.mark.parametrize("mode", list(ScaleMode))
@pytest.mark.parametrize("elem", ["e4m3fn", "e2m1f", "int8"])
def test_threshold_rule_equals_exact_on_every_positive_bfloat16(elem, mode):
    n = tcast.number(elem)
    rule = exponent_scale_rule(n, SCALE, mode)
    for hi in range(0x0001, 0x7F80, 3):  # every third positive finite bfloat16 (CI time)
        a = _f(hi << 16)
        assert rule.code(a) == _exact_code(a, n, SCALE, mode), (elem, mode, hex(hi))


@given(
    bits=st.integers(1, 0x7F7FFFFF),
    elem=st.sampled_from(ELEMENTS),
    mode=st.sampled_from(list(ScaleMode)),
    scale=st.sampled_from(["e8m0", "e5m0", "e4m0b3", "e6m0b40", "e4m0b120"]),
)
def test_threshold_rule_equals_exact_on_float32(bits, elem, mode, scale):
    n, s = tcast.number(elem), tcast.number(scale)
    a = _f(bits)
    assert exponent_scale_rule(n, s, mode).code(a) == _exact_code(a, n, s, mode)


@pytest.mark.parametrize("scale", ["e8m0", "e5m0", "e4m0b3", "e6m0b40", "e4m0b120", "e5m0b0"])
@pytest.mark.parametrize("mode", list(ScaleMode))
@pytest.mark.parametrize("elem", ["e4m3fn", "e5m2", "e2m1f", "e2m1b5", "int8"])
def test_field_exact_means_subnormals_clamp_to_zero(elem, mode, scale):
    """Where the rule says the exponent field may be read directly, every zero or float32
    subnormal amax gets code 0 from the exact model."""
    n, s = tcast.number(elem), tcast.number(scale)
    rule = exponent_scale_rule(n, s, mode)
    if not rule.field_exact:
        assert -127 + rule.offset + (rule.threshold < NEVER) > 0
        return
    for bits in (1, 2, 3, 0x400000, 0x7FFFFF):
        assert _exact_code(_f(bits), n, s, mode) == 0


def test_thresholds_are_the_documented_constants():
    # mxfp8: M = 448 = 1.75 * 2**8: topbinade > 1.75, midmax > 1.875, option3 (p=4)
    # rounds up to 2 from 2 - 2**-5
    n = tcast.number("e4m3fn")
    got = {m: exponent_scale_rule(n, SCALE, m).threshold for m in ScaleMode}
    assert got == {
        ScaleMode.FLOOR: NEVER,
        ScaleMode.CEIL: 1 << 23,
        ScaleMode.MIDMAX: int(1.875 * 2**23),
        ScaleMode.TOPBINADE: int(1.75 * 2**23),
        ScaleMode.OPTION3: (1 << 24) - (1 << 19) - 1,
    }
    assert exponent_scale_rule(n, SCALE, ScaleMode.FLOOR).offset == 127 - 8


def _exact_range_code(rng: float, maxint: int, s) -> int:
    # the smallest power of two 2**e with rng <= maxint * 2**e, written directly
    if rng == 0:
        return 0
    if math.isinf(rng):
        return s.max_code
    q = Fraction(rng) / maxint
    e = q.numerator.bit_length() - q.denominator.bit_length()
    while Fraction(2) ** e < q:
        e += 1
    while Fraction(2) ** (e - 1) >= q:
        e -= 1
    return min(max(e + s.bias, 0), s.max_code)


@pytest.mark.parametrize(
    "elem", ["uint2", "uint4", "uint8", "uint16", "uint24", "uint25", "uint31", "uint32"]
)
def test_range_rule_equals_smallest_power_of_two(elem):
    n = tcast.number(elem)
    rule = range_scale_rule(n, SCALE)
    values = [0.0, math.inf, _f(1), _f(0x7F7FFFFF), _f32.f32(n.maxint), _f32.f32(2 * n.maxint)]
    values += [_f(hi << 16) for hi in range(0x0001, 0x7F80, 7)]
    for v in values:
        code = 0 if v == 0 else SCALE.max_code if math.isinf(v) else rule.code(v)
        assert code == _exact_range_code(v, n.maxint, SCALE), (elem, v)


@given(bits=st.integers(1, 0x7F7FFFFF), b=st.integers(2, 32))
def test_range_rule_on_float32(bits, b):
    n = tcast.number(f"uint{b}")
    v = _f(bits)
    assert range_scale_rule(n, SCALE).code(v) == _exact_range_code(v, n.maxint, SCALE)


def test_sig24_normalizes_subnormals():
    assert sig24(1.0) == (0, 1 << 23)
    assert sig24(_f(1)) == (-149, 1 << 23)
    assert sig24(_f(0x7FFFFF)) == (-127, 0x7FFFFF << 1)
    assert sig24(_f(0x7F7FFFFF)) == (127, (1 << 24) - 1)


# ----------------------------------------------------------------- recipes
class _ExactOps:
    """Recipe operations in exact float32 arithmetic (tcast.exact), on Python floats."""

    def __init__(self, dt):
        self.dt = dt
        self.specs = {"scale": dt.sspec.scale, "tenscale": dt.tenscale, "zero": dt.zero}

    def div(self, a, b):
        return _f32.div(a, b)

    def mul(self, a, b):
        return _f32.mul(a, b)

    def add(self, a, b):
        return _f32.add(a, b)

    def sub(self, a, b):
        return _f32.sub(a, b)

    def min(self, a, b):
        return min(a, b)

    def scale_code(self, v, which):
        s = self.specs[which]
        lo, hi = scale_bounds(s)
        v = hi if v != v else min(max(v, lo), hi)
        return exact.encode(v, s, "even", saturate=True)

    def exp_code(self, v):
        rule = cast_rules(self.dt).exponent
        return 0 if v == 0 else self.specs["scale"].max_code if math.isinf(v) else rule.code(v)

    def zero_code(self, v):
        return exact.encode(v, self.specs["zero"], "even", saturate=True)

    def ceil_code(self, v, which):
        return given_exponent_rule(self.specs[which]).code(v)

    def decode(self, code, which):
        return exact.decode(code, self.specs[which])


BLOCKS = [
    [1.0, -3.0, 0.5, 2.0**-20],
    [448.0, 1e-30, -7.25, 0.0],
    [3e38, -1e-40, 2.0**-126, 5.0],
    [0.0, 0.0, 0.0, 0.0],
    [-0.1, -0.2, -0.3, -1e-8],
    [1e-44, 2e-45, 0.0, 1e-45],
]
FLOAT_SCALED = [
    "bfloat16_e4m3fn_t4",
    "e2m1f_e4m3fn_t4",
    "e4m3fn_float16_t4",
    "int8_float32_t4",
    "e2m1f_e4m3fn_float32_t4",
    "e3m2f_e5m2_float32_t4",
    "uint8_float32_int8_t4",
    "uint4_bfloat16_int8_t4",
    "uint8_e8m0_int8_t4",
    "uint4_e5m0_int4_t4",
    "mxint8",
    "mxfp4",
]


def _check_elements(dt, rules, ops, env, xs, want):
    """The element recipes reproduce the exact values (RNE codes from the exact model)."""
    for x, code_, v in zip(xs, want.codes, want.values, strict=True):
        cols = {k: env[k] for k in ("recip", "dec", "zval") if k in env}
        xs_env = run_recipe(rules.encode, ops, rules.constants, x=x, **cols)
        assert exact.encode(xs_env["xs"], dt.nspec, "even") == code_
        q = float(exact.decode(code_, dt.nspec))
        got = run_recipe(rules.decode, ops, rules.constants, q=q, **cols)["v"]
        assert _f32.bits32(got) == _f32.bits32(v) or (got == 0 == v and dt.nspec.is_integer)


@pytest.mark.parametrize("code", FLOAT_SCALED)
@pytest.mark.parametrize("block", range(len(BLOCKS)))
def test_scale_recipes_in_exact_arithmetic_equal_the_exact_model(code, block):
    """The recipes give cast_block's scale, tensor-scale and zero-point codes."""
    dt = tcast.datatype(code)
    xs = [_f32.f32(v) for v in BLOCKS[block]]
    if dt.sspec.tiles and dt.sspec.tiles[0].size:
        xs = xs[: dt.sspec.tiles[0].size] + [0.0] * (dt.sspec.tiles[0].size - len(xs))
    want = exact.cast_block(xs, dt)
    rules = cast_rules(dt)
    ops = _ExactOps(dt)
    if dt.nspec.is_uint:
        inputs = {"lo": min(min(xs), 0.0), "hi": max(max(xs), 0.0)}
    else:
        amax = max(abs(v) for v in xs)
        inputs = {"amax": amax, "tamax": amax}
    env = run_recipe(rules.scale, ops, rules.constants, **inputs)
    assert env["scale"] == want.scale
    if dt.is_multiscale:
        assert env["tenscale"] == want.tenscale
    if dt.zero is not None:
        assert env["zero"] == want.zero
    _check_elements(dt, rules, ops, env, xs, want)


# every valid combination of given parts (scale, zero, tenscale) of a datatype
def _given_parts(dt):
    if dt.nspec.is_uint:
        return [(True, False, False), (False, True, False), (True, True, False)]
    if dt.is_multiscale:
        return [(True, False, False), (False, False, True), (True, False, True)]
    return [(True, False, False)]


GIVEN_VALUES = [0.0, 2.0**-140, 0.3125, 1.0, 3.0, 17.0, 1000.0, 3e38]


@pytest.mark.parametrize("code", [*FLOAT_SCALED, "mxfp8", "nvfp4"])
@pytest.mark.parametrize("block", range(len(BLOCKS)))
def test_given_scale_recipes_in_exact_arithmetic_equal_the_exact_model(code, block):
    """The given-scale recipes give cast_block's codes for given parts (SEMANTICS.md §5.12)."""
    dt = tcast.datatype(code)
    xs = [_f32.f32(v) for v in BLOCKS[block]]
    size = dt.sspec.tiles[0].size if dt.sspec.tiles and dt.sspec.tiles[0].size else 4
    xs = xs[:size] + [0.0] * (size - len(xs))
    rules = cast_rules(dt)
    ops = _ExactOps(dt)
    for k, (scale, zero, tens) in enumerate(_given_parts(dt)):
        g = [_f32.f32(GIVEN_VALUES[(block + k + i) % len(GIVEN_VALUES)]) for i in range(3)]
        gzero = -g[1] if block % 2 else g[1]
        want = exact.cast_block(
            xs,
            dt,
            scale=g[0] if scale else None,
            zero=gzero if zero else None,
            tensor_scale=g[2] if tens else None,
        )
        recipe = given_scale_recipe(rules, scale, zero, tens)
        inputs = {"gscale": g[0], "gzero": gzero, "gtenscale": g[2]}
        if dt.nspec.is_uint:
            inputs |= {"lo": min(min(xs), 0.0), "hi": max(max(xs), 0.0)}
        else:
            inputs |= {"amax": max(abs(v) for v in xs), "tamax": max(abs(v) for v in xs)}
        env = run_recipe(recipe, ops, rules.constants, **{k: inputs[k] for k in recipe.inputs})
        assert set(recipe.outputs) == set(rules.scale.outputs)
        assert env["scale"] == want.scale, (scale, zero, tens)
        if dt.is_multiscale:
            assert env["tenscale"] == want.tenscale
        if dt.zero is not None:
            assert env["zero"] == want.zero
        _check_elements(dt, rules, ops, env, xs, want)


@given(st.integers(0, 0x7F7FFFFF), st.sampled_from(["e8m0", "e5m0", "e4m0"]))
def test_given_exponent_rule_is_the_smallest_power_of_two_not_below(b, code):
    s = tcast.number(code)
    v = _f(b)
    want = exact.given_scale_code(v, s)
    assert given_exponent_rule(s).code(v) == want
    e = want - s.bias
    if v > 0 and want not in (0, s.max_code):
        # 2**(code - bias) >= v > 2**(code - bias - 1)
        assert Fraction(2) ** e >= Fraction(v) > Fraction(2) ** (e - 1)
    elif want == 0:  # clamped up: the smallest power of two not below v is at most 2**-bias
        assert Fraction(v) <= Fraction(2) ** e
    else:  # clamped down: it is at least 2**(max_code - bias)
        assert Fraction(v) > Fraction(2) ** (e - 1)


def test_given_scale_recipe_refuses_parts_a_datatype_lacks():
    with pytest.raises(tcast.SpecError, match="zero point"):
        given_scale_recipe(cast_rules(tcast.mxfp8), True, True)
    with pytest.raises(tcast.SpecError, match="one scale level"):
        given_scale_recipe(cast_rules(tcast.mxfp8), False, False, True)
    with pytest.raises(tcast.SpecError, match="no given"):
        given_scale_recipe(cast_rules(tcast.mxfp8), False)
    for code in ("mx9", "mxfi4", "nf4"):  # metadata chosen with the scales (§5.12)
        with pytest.raises(tcast.SpecError, match="not defined"):
            given_scale_recipe(cast_rules(tcast.datatype(code)), True)
    with pytest.raises(tcast.SpecError, match="unscaled"):
        given_scale_recipe(cast_rules(tcast.float8_e4m3fn), True)


def _check_recipe(r):
    known = set(r.inputs) | {"ONE", "ZERO", "F32_MAX", "M", "MS_M", "FIXED", "INV_FIXED"}
    for step in r.steps:
        assert step.op in OPERATIONS, step
        arity = OPERATIONS[step.op]
        assert len(step.args) == arity, step
        named = ("scale_code", "ceil_code", "decode")
        names = step.args[:1] if step.op in named else step.args
        assert all(a in known for a in names), step
        if step.op in named:
            assert step.args[1] in ("scale", "tenscale", "zero"), step
        known.add(step.out)
    assert set(r.outputs) <= known


@pytest.mark.parametrize("name", [n for n in recipes.__all__ if n.isupper() and n != "OPERATIONS"])
def test_every_recipe_uses_known_operations_and_defined_names(name):
    _check_recipe(getattr(recipes, name))


def test_element_recipes_use_each_intermediate_once():
    """Engines may compute element steps in two alternating buffers (tcast_ref does)."""
    for r in (
        recipes.ELEMENT_ENCODE,
        recipes.ELEMENT_ENCODE_FIXED,
        recipes.ELEMENT_ENCODE_ZERO,
        recipes.ELEMENT_DECODE,
        recipes.ELEMENT_DECODE_FIXED,
        recipes.ELEMENT_DECODE_ZERO,
    ):
        produced = [s.out for s in r.steps]
        for name in produced[:-1]:
            assert sum(name in s.args for s in r.steps) == 1, (r.name, name)


def test_rules_pick_the_recipes_and_constants():
    r = cast_rules(tcast.nvfp4)
    assert r.scale is recipes.TWO_LEVEL_SCALE and r.upcast is recipes.TWO_LEVEL_DECODE
    assert dict(r.constants)["MS_M"] == 448.0 * 6.0
    r = cast_rules(tcast.mxint8, ScaleMode.CEIL)
    assert r.fixed == 64 and dict(r.constants)["FIXED"] == 64.0
    assert r.encode is recipes.ELEMENT_ENCODE_FIXED and r.exponent.threshold == 1 << 23
    r = cast_rules(tcast.datatype("uint8_float32_int8_t0"))
    assert r.scale is recipes.UINT_FLOAT_SCALE and r.int_limits == (0, 255)
    assert cast_rules(tcast.float8_e4m3fn).scale is None
    assert cast_rules(tcast.mxfp8) is cast_rules(tcast.mxfp8)  # memoized


@pytest.mark.parametrize(
    ("code", "keeps"),
    [
        ("e4m3fn", True),
        ("e5m2", True),
        ("e2m1f", True),
        ("e4m3fnuz", False),
        ("binary8p3", False),
        ("int8", True),
    ],
)
def test_nan_sign_rule(code, keeps):
    assert nan_keeps_sign(tcast.number(code)) is keeps
