"""The blockwise randomized Hadamard transform (SEMANTICS.md §5.10) and its exact model.

Oracles written here, apart from the model: the Sylvester matrix built by Kronecker products
(NumPy integers: small integer inputs make every float32 operation exact), and a float32
butterfly in NumPy's IEEE float32 arithmetic (each operation rounded to nearest even) for
inputs whose operations round, overflow, underflow or meet non-finite values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tcast
from tcast import Hadamard, SpecError, exact

SIZES = [2, 4, 8, 16, 32, 64, 128]


def _sylvester(n: int) -> np.ndarray:
    h = np.array([[1]], dtype=np.int64)
    while h.shape[0] < n:
        h = np.kron(np.array([[1, 1], [1, -1]], dtype=np.int64), h)
    return h


def _np_forward(x: np.ndarray, signs, shift: int) -> np.ndarray:
    """The butterfly in NumPy float32 (a second implementation, not the model's)."""
    v = (x.astype(np.float32) * np.asarray(signs, np.float32)).astype(np.float32)
    n, h = v.size, 1
    with np.errstate(over="ignore", invalid="ignore"):
        while h < n:
            v = v.reshape(-1, 2, h)  # [pairs of half-blocks, the two halves, h]
            a, b = v[:, 0, :].copy(), v[:, 1, :].copy()
            v = np.stack([a + b, a - b], axis=1).reshape(n)
            h *= 2
        return (v * np.float32(2.0**-shift)).astype(np.float32)


def _same_bits(got, want) -> bool:
    g = np.asarray(got, np.float32)
    w = np.asarray(want, np.float32)
    nan = np.isnan(w)
    # NaN: any NaN (NumPy's invalid operations give the processor's NaN, the model +NaN)
    return bool((np.isnan(g) == nan).all() and (g.view(np.uint32) == w.view(np.uint32))[~nan].all())


@pytest.mark.parametrize("n", SIZES)
def test_integer_groups_are_the_sylvester_matrix_times_the_signed_group(n):
    rng = np.random.default_rng(n)
    h = Hadamard.seeded(n, 1000 + n)
    x = rng.integers(-1000, 1001, n)
    want = (_sylvester(n) @ (np.asarray(h.signs) * x)).astype(np.float64) * 2.0**-h.shift
    got = exact.hadamard([float(v) for v in x], h)
    assert got == list(want)
    # and the inverse gives the integers back (no operation of either rounds)
    assert exact.hadamard_inverse(got, h) == [float(v) for v in x]


def test_the_forward_scale_is_one_over_root_n_for_even_stages_and_a_power_of_two_else():
    assert [Hadamard.of(n).shift for n in SIZES] == [1, 1, 2, 2, 3, 3, 4]
    assert [Hadamard.of(n).inverse_shift for n in SIZES] == [0, 1, 1, 2, 2, 3, 3]
    # an all-ones group of 16 goes to (4, 0, ..., 0): H16 / 4 is orthonormal
    assert exact.hadamard([1.0] * 16, Hadamard.of(16)) == [4.0] + [0.0] * 15


_F32 = st.floats(width=32, allow_nan=True, allow_infinity=True)


@settings(max_examples=300, deadline=None)
@given(
    n=st.sampled_from([2, 4, 16, 32]),
    data=st.data(),
    seed=st.integers(0, 2**64 - 1),
)
def test_float32_groups_equal_an_ieee_float32_butterfly(n, data, seed):
    xs = data.draw(st.lists(_F32, min_size=n, max_size=n))
    h = Hadamard.seeded(n, seed)
    got = exact.hadamard(xs, h)
    assert _same_bits(got, _np_forward(np.array(xs, np.float32), h.signs, h.shift))
    inv = exact.hadamard_inverse(got, h)
    want = _np_forward(np.array(got, np.float32), [1] * n, h.inverse_shift)
    assert _same_bits(inv, want * np.asarray(h.signs, np.float32))


def test_rounding_overflow_underflow_and_signed_zeros_follow_float32():
    h = Hadamard.of(4)
    big = float(np.finfo(np.float32).max)
    tiny = float(np.float32(2.0**-149))
    cases = [
        [1.0, 2.0**-30, 3.0, 2.0**-24],  # sums that round
        [big, big, 1.0, 1.0],  # overflow to +Inf inside the butterfly
        [tiny, tiny, -tiny, 0.0],  # subnormal sums, a half-ulp product rounds to even
        [0.0, -0.0, -0.0, -0.0],  # exact zeros: +0 unless both are -0
        [math.inf, 1.0, math.inf, 2.0],  # Inf - Inf is NaN
        [math.nan, 1.0, 2.0, 3.0],
    ]
    for xs in cases:
        got = exact.hadamard(xs, h)
        assert _same_bits(got, _np_forward(np.array(xs, np.float32), h.signs, h.shift)), xs
    assert math.copysign(1.0, exact.hadamard([-0.0] * 4, h)[0]) < 0
    nan = exact.hadamard([math.inf, 1.0, math.inf, 2.0], h)
    assert math.isnan(nan[2]) and math.copysign(1.0, nan[2]) > 0
    # every NaN of a result is +NaN, whatever the input NaN's sign and the signs applied
    for xs in ([-math.nan, 1.0, 2.0, 3.0], [1.0, -math.nan, 2.0, 3.0]):
        for f in (exact.hadamard, exact.hadamard_inverse):
            out = f(xs, Hadamard.of(4, [1, -1, -1, 1]))
            assert all(math.isnan(y) and math.copysign(1.0, y) > 0 for y in out), (xs, out)


def test_an_array_is_transformed_group_by_group_along_its_dimension():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((3, 32, 5)) * 100).astype(np.float32)
    h = Hadamard.seeded(16, 9)
    for dim in (1, -2):
        got = np.array(exact.hadamard_array(x.ravel().tolist(), x.shape, dim, h), np.float32)
        want = np.empty_like(x)
        for i in range(3):
            for k in range(5):
                for g in (0, 16):
                    want[i, g : g + 16, k] = _np_forward(x[i, g : g + 16, k], h.signs, h.shift)
        assert _same_bits(got.reshape(x.shape), want)
        back = exact.hadamard_array(got.tolist(), x.shape, dim, h, inverse=True)
        assert np.allclose(np.array(back).reshape(x.shape), x, rtol=1e-5, atol=1e-3)


def test_the_presets_and_seeded_signs():
    # TransformerEngine's NVFP4 Wgrad signs (arXiv 2509.25149), as published
    published = [1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1]
    assert Hadamard.te_wgrad() == Hadamard.of(16, published)
    assert tcast.TE_WGRAD_SIGNS == tuple(published)
    # seeded signs: bit i mod 32 of word i // 32 of the sign stream's one Philox call
    seed = 2**40 + 12345
    words = tcast.philox4x32((0, 0, 0, 0x00524854), (seed & 0xFFFFFFFF, seed >> 32))
    bits = [words[i // 32] >> (i % 32) & 1 for i in range(128)]
    assert Hadamard.seeded(128, seed).signs == tuple(-1 if b else 1 for b in bits)
    assert Hadamard.seeded(16, seed).signs == Hadamard.seeded(128, seed).signs[:16]
    assert Hadamard.seeded(32, 1) != Hadamard.seeded(32, 2)
    assert tcast.hadamard_signs(8, np.uint64(7)) == Hadamard.seeded(8, 7).signs
    assert hash(Hadamard.of(4, [1, -1, 1, -1])) == hash(Hadamard.of(4, np.array([1, -1, 1, -1])))
    # built directly from a list, the signs are the hashable tuple of ints
    assert Hadamard(4, [1, -1, 1, -1]) == Hadamard.of(4, (1, -1, 1, -1))
    assert tcast.RHT_STREAM == 0x00524854


def test_signed_zero_differences_and_subnormal_scaling_follow_ieee():
    h2 = Hadamard.of(2)
    # (a + b, a - b) with a - b = a + (-b): (-0) + (+0) = +0 and (-0) - (+0) = -0 ...
    got = exact.hadamard([-0.0, 0.0], h2)
    assert [math.copysign(1.0, y) for y in got] == [1.0, -1.0]
    got = exact.hadamard([-0.0, -0.0], h2)  # ... (-0) + (-0) = -0 and (-0) - (-0) = +0
    assert [math.copysign(1.0, y) for y in got] == [-1.0, 1.0]
    # the final scaling rounds a subnormal: 2^-149 / 2 ties to even (+0), 3 * 2^-149 / 2 to 2
    tiny = 2.0**-149
    assert exact.hadamard([tiny, 0.0], h2) == [0.0, 0.0]
    assert exact.hadamard([3 * tiny, 0.0], h2) == [2 * tiny, 2 * tiny]


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Hadamard.of(3), "size 3"),
        (lambda: Hadamard.of(256), "size 256"),
        (lambda: Hadamard.of(True), "size True"),
        (lambda: Hadamard.of(4, [1, -1, 1]), "needs 4 signs"),
        (lambda: Hadamard.of(4, [1, -1, 1, 0]), "each 1 or -1"),
        (lambda: Hadamard.of(4, [1, -1, 1, True]), "each 1 or -1"),
        (lambda: Hadamard.of(4, [1, -1, 1, 1.0]), "each 1 or -1"),
        (lambda: Hadamard.of(2, "+-"), "sequence of 1 and -1"),
        (lambda: Hadamard.seeded(16, -1), "seed -1"),
        (lambda: Hadamard.seeded(16, 2**64), "seed"),
        (lambda: Hadamard.seeded(16, True), "seed True"),
        (lambda: exact.hadamard([1.0] * 8, Hadamard.of(16)), "holds 16 values, not 8"),
        (lambda: exact.hadamard([0.1] * 2, Hadamard.of(2)), "not a float32 value"),
        (lambda: exact.hadamard([1.0] * 2, 2), "expected a tcast.Hadamard"),
        (lambda: exact.hadamard_array([0.0] * 24, (2, 12), 1, Hadamard.of(8)), "multiple"),
        (lambda: exact.hadamard_array([0.0] * 24, (2, 12), 2, Hadamard.of(4)), "dimension 2"),
        (lambda: exact.hadamard_array([0.0] * 20, (2, 12), 1, Hadamard.of(4)), "do not fill"),
        (lambda: exact.hadamard_array([0.0] * 24, (2, 12), 1, 4), "expected a tcast.Hadamard"),
        (lambda: exact.hadamard_array([0.0] * 24, (2, 12), 1.0, Hadamard.of(4)), "dimension"),
        (lambda: exact.hadamard(["a", "b"], Hadamard.of(2)), "float32 values"),
        (lambda: Hadamard(4, "++--"), "sequence of 1 and -1"),
    ],
)
def test_bad_arguments_are_refused_naming_the_value(make, match):
    with pytest.raises(SpecError, match=match):
        make()
