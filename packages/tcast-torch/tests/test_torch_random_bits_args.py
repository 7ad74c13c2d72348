"""``tcast_torch.random_bits`` (and the stream behind seeded casts) refuse what has no words:
a negative or non-integer shape, a negative start, indices past 2**63, a seed outside
[0, 2**64); with a SpecError that names the value, never a raw torch error or garbage."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tcast
import tcast_ref
import tcast_torch
from tcast_torch import _philox


@pytest.mark.parametrize("shape", [-4, (2, -1), "ab", 2.0, (3, True), None])
def test_random_bits_refuses_a_bad_shape_naming_it(shape):
    with pytest.raises(tcast.SpecError, match="shape") as info:
        tcast_torch.random_bits(5, shape)
    assert repr(shape) in str(info.value)


@pytest.mark.parametrize(("start", "count"), [(-1, 4), (2**63 - 2, 4), (2**70, 1), (1.5, 2)])
def test_random_bits_refuses_indices_outside_the_stream(start, count):
    with pytest.raises(tcast.SpecError, match=r"start|2\*\*63"):
        tcast_torch.random_bits(5, count, start=start)


@pytest.mark.parametrize(("seed", "start"), [(2**64, 0), (-1, 0), (5, -4)])
def test_philox_stream_checks_its_arguments(seed, start):
    """The stream's operators take any int64 and return garbage for keys of 33 bits or a
    negative counter: their entry refuses those."""
    with pytest.raises(tcast.SpecError):
        _philox.philox_stream(seed, start, 8)


def test_random_bits_takes_integer_types_and_matches_the_reference():
    got = tcast_torch.random_bits(np.uint64(2**64 - 1), (np.int64(3), 5), start=np.int64(2**62))
    assert got.shape == (3, 5) and got.dtype == torch.uint32
    want = tcast_ref.random_bits(2**64 - 1, 15, start=2**62).reshape(3, 5)
    np.testing.assert_array_equal(got.view(torch.int32).numpy().view(np.uint32), want)
    assert tcast_torch.random_bits(1, 0).shape == (0,)
