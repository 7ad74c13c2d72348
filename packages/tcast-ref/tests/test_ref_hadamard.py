"""tcast_ref.hadamard against the exact model (SEMANTICS.md §5.10), bit for bit."""

from __future__ import annotations

import math
import warnings

import ml_dtypes
import numpy as np
import pytest

import tcast
import tcast_ref
from tcast import Hadamard, SpecError

_F32 = np.finfo(np.float32)
_SPECIALS = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, _F32.max, -_F32.max, 2.0**-149, 2.0**-126],
    np.float32,
)


def _inputs(shape, seed: int) -> np.ndarray:
    """Values of every magnitude (subnormals to float32's max), signed zeros and specials."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-140, 120, shape))
    with np.errstate(over="ignore"):
        x = x.astype(np.float32)
    flat = x.reshape(-1)
    spots = rng.choice(flat.size, min(flat.size // 8, 40), replace=False)
    flat[spots] = rng.choice(_SPECIALS, spots.size)
    return x


def _bits(a) -> np.ndarray:
    return np.asarray(a, np.float32).view(np.uint32)


@pytest.mark.parametrize("n", tcast.HADAMARD_SIZES)
def test_every_size_equals_the_exact_model_forward_and_inverse(n):
    x = _inputs((3, 2 * n), n)
    h = Hadamard.seeded(n, 77 + n)
    for dim in (-1, 1):
        got = tcast_ref.hadamard(x, h, dim)
        want = tcast.exact.hadamard_array(x.ravel().tolist(), x.shape, dim, h)
        np.testing.assert_array_equal(_bits(got).ravel(), _bits(want))
        back = tcast_ref.hadamard(got, h, dim, inverse=True)
        want_back = tcast.exact.hadamard_array(want, x.shape, dim, h, inverse=True)
        np.testing.assert_array_equal(_bits(back).ravel(), _bits(want_back))


def test_groups_along_a_leading_dimension_and_narrow_input_dtypes():
    h = Hadamard.te_wgrad()
    for dtype in (np.float16, ml_dtypes.bfloat16):
        with np.errstate(over="ignore"):
            x = _inputs((32, 3), 5).astype(dtype)
        got = tcast_ref.hadamard(x, h, 0)
        assert got.dtype == np.float32 and got.shape == x.shape
        wide = x.astype(np.float32)
        want = tcast.exact.hadamard_array(wide.ravel().tolist(), x.shape, 0, h)
        np.testing.assert_array_equal(_bits(got).ravel(), _bits(want))


def test_every_nan_is_positive_and_the_input_is_not_changed():
    x = np.array([[-np.nan, 1, 2, 3], [np.inf, 1, np.inf, 2]], np.float32)
    keep = x.copy()
    out = tcast_ref.hadamard(x, Hadamard.of(4, [1, -1, -1, 1]))
    nan = np.isnan(out)
    # row 1, signed (inf, -1, -inf, 2): stage 1 gives (inf, inf, -inf, -inf), stage 2
    # (inf + -inf, inf + -inf, inf - -inf, inf - -inf)
    assert nan[0].all() and nan[1, :2].all() and not nan[1, 2:].any()
    assert (_bits(out)[nan] == 0x7FC00000).all()
    assert math.isinf(out[1, 2]) and out[1, 2] > 0
    np.testing.assert_array_equal(_bits(x), _bits(keep))
    # a signalling NaN input is the rule's too: no warning (the suite runs with -W error)
    snan = np.array([0x7F800001, 0, 0, 0], np.uint32).view(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (_bits(tcast_ref.hadamard(snan, Hadamard.of(4, [-1, 1, 1, 1]))) == 0x7FC00000).all()


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: tcast_ref.hadamard(np.zeros((2, 12), np.float32), Hadamard.of(8)), "multiple"),
        (
            lambda: tcast_ref.hadamard(np.zeros((2, 8), np.float32), Hadamard.of(8), 2),
            "dimension 2",
        ),
        (lambda: tcast_ref.hadamard(np.zeros((2, 8)), Hadamard.of(8)), "float64"),
        (lambda: tcast_ref.hadamard(np.zeros((2, 8), np.float32), 8), "tcast.Hadamard"),
    ],
)
def test_bad_arguments_are_refused(call, match):
    with pytest.raises(SpecError, match=match):
        call()
