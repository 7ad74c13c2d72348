"""``tcast_torch.random_bits`` (and the stream behind seeded casts) refuse what has no bits:
a negative or non-integer shape, a negative start, indices past 2**63, a seed outside
[0, 2**64), a width other than 8 or 16, a stream outside [0, 2**32); with a SpecError that
names the value, never a raw torch error or garbage."""

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
        tcast_torch.random_bits(5, shape, width=8)
    assert repr(shape) in str(info.value)


@pytest.mark.parametrize(("start", "count"), [(-1, 4), (2**63 - 2, 4), (2**70, 1), (1.5, 2)])
def test_random_bits_refuses_indices_outside_the_stream(start, count):
    with pytest.raises(tcast.SpecError, match=r"start|2\*\*63"):
        tcast_torch.random_bits(5, count, start=start, width=16)


@pytest.mark.parametrize("width", [0, 4, 32, True, "8", None])
def test_random_bits_refuses_a_width_other_than_8_or_16(width):
    with pytest.raises(tcast.SpecError, match="width") as info:
        tcast_torch.random_bits(5, 4, width=width)
    assert repr(width) in str(info.value)


def test_random_bits_needs_the_width_as_a_keyword():
    with pytest.raises(TypeError, match="width"):
        tcast_torch.random_bits(5, 4)
    with pytest.raises(TypeError):
        tcast_torch.random_bits(5, 4, 0, None, 8)  # keyword only


@pytest.mark.parametrize("stream", [-1, 2**32, 1.0, True, "1"])
def test_random_bits_refuses_a_stream_outside_0_to_2_32(stream):
    with pytest.raises(tcast.SpecError, match="stream") as info:
        tcast_torch.random_bits(5, 4, width=8, stream=stream)
    assert repr(stream) in str(info.value)


@pytest.mark.parametrize(("seed", "start"), [(2**64, 0), (-1, 0), (5, -4)])
def test_philox_stream_checks_its_arguments(seed, start):
    """The stream's operators take any int64 and return garbage for keys of 33 bits or a
    negative counter: their entry refuses those."""
    with pytest.raises(tcast.SpecError):
        _philox.philox_stream(seed, start, 8)


@pytest.mark.parametrize(("width", "dtype"), [(8, torch.uint8), (16, torch.uint16)])
def test_random_bits_takes_integer_types_and_matches_the_reference(width, dtype):
    got = tcast_torch.random_bits(
        np.uint64(2**64 - 1),
        (np.int64(3), 5),
        start=np.int64(2**62),
        width=width,
        stream=np.uint32(2**32 - 1),
    )
    assert got.shape == (3, 5) and got.dtype == dtype
    want = tcast_ref.random_bits(2**64 - 1, 15, start=2**62, width=width, stream=2**32 - 1)
    unsigned = torch.uint8 if width == 8 else torch.int16  # numpy reads no torch.uint16
    np.testing.assert_array_equal(got.view(unsigned).numpy().view(want.dtype), want.reshape(3, 5))
    assert tcast_torch.random_bits(1, 0, width=width).shape == (0,)
