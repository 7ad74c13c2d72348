"""tcast_torch.hadamard against tcast_ref.hadamard (itself the exact model's), bit for bit."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

import tcast
import tcast_ref
import tcast_torch
from tcast import Hadamard, SpecError

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
_F32 = np.finfo(np.float32)
_SPECIALS = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, _F32.max, -_F32.max, 2.0**-149, 2.0**-126],
    np.float32,
)


def _inputs(shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-140, 120, shape))
    with np.errstate(over="ignore"):
        x = x.astype(np.float32)
    flat = x.reshape(-1)
    spots = rng.choice(flat.size, flat.size // 8, replace=False)
    flat[spots] = rng.choice(_SPECIALS, spots.size)
    return x


def _bits(t: torch.Tensor) -> np.ndarray:
    return t.cpu().contiguous().view(torch.int32).numpy().view(np.uint32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", tcast.HADAMARD_SIZES)
def test_every_size_equals_the_reference_forward_and_inverse(n, device):
    x = _inputs((4, 3 * n, 2), n)
    h = Hadamard.seeded(n, 5 + n)
    for dim in (1, -2):
        got = tcast_torch.hadamard(torch.from_numpy(x).to(device), h, dim)
        want = tcast_ref.hadamard(x, h, dim)
        assert got.dtype == torch.float32 and got.device.type == device
        np.testing.assert_array_equal(_bits(got), want.view(np.uint32))
        back = tcast_torch.hadamard(got, h, dim, inverse=True)
        np.testing.assert_array_equal(
            _bits(back), tcast_ref.hadamard(want, h, dim, inverse=True).view(np.uint32)
        )
    # the last dimension, and a transposed (strided) view along its first
    xl = _inputs((3, 2 * n), n)
    want = tcast_ref.hadamard(xl, h, -1)
    t = torch.from_numpy(xl).to(device)
    np.testing.assert_array_equal(_bits(tcast_torch.hadamard(t, h, -1)), want.view(np.uint32))
    np.testing.assert_array_equal(_bits(tcast_torch.hadamard(t.t(), h, 0)), want.T.view(np.uint32))


@pytest.mark.parametrize("device", DEVICES)
def test_narrow_input_dtypes_are_widened_exactly(device):
    h = Hadamard.te_wgrad()
    with np.errstate(over="ignore"):
        x = _inputs((3, 32), 9)
    for tdt, ndt in ((torch.bfloat16, ml_dtypes.bfloat16), (torch.float16, np.float16)):
        with np.errstate(over="ignore"):
            narrow = x.astype(ndt)
        t = torch.from_numpy(narrow.view(np.int16)).view(tdt).to(device)
        got = tcast_torch.hadamard(t, h)
        np.testing.assert_array_equal(_bits(got), tcast_ref.hadamard(narrow, h).view(np.uint32))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: tcast_torch.hadamard(torch.zeros(2, 12), Hadamard.of(8)), "multiple"),
        (lambda: tcast_torch.hadamard(torch.zeros(2, 8), Hadamard.of(8), 2), "dimension 2"),
        (
            lambda: tcast_torch.hadamard(torch.zeros(2, 8, dtype=torch.float64), Hadamard.of(8)),
            "float64",
        ),
        (lambda: tcast_torch.hadamard(np.zeros((2, 8), np.float32), Hadamard.of(8)), "ndarray"),
        (lambda: tcast_torch.hadamard(torch.zeros(2, 8), 8), "tcast.Hadamard"),
        (lambda: tcast_torch.hadamard(torch.zeros(()), Hadamard.of(2), 0), "dimension 0"),
        (lambda: tcast_torch.hadamard(torch.zeros(2, 8), Hadamard.of(8), 1.0), "dimension"),
    ],
)
def test_bad_arguments_are_refused(call, match):
    with pytest.raises(SpecError, match=match):
        call()
