"""A cast of more than 2**31 elements on the GPU, compared with tcast_ref on slices.

Element, byte and tile offsets pass int32 there (the kernels switch to int64 offsets); the
first and last rows of every cast (whole tiles, so the reference tiles them alike) are
compared bit for bit with tcast_ref, and the upcast of each result with the reference's
upcast of the same slice. The input holds one element larger than any other in its first
and in its last row, so that each slice holds the tensor amax (two-level and tensor
scales). GPU only: about 25 GB of device memory; the interpreter would need hours.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

import tcast
import tcast_ref
from tcast_triton._env import INTERPRETING

pytestmark = pytest.mark.skipif(
    INTERPRETING or not torch.cuda.is_available(), reason="2**31 elements: run on a GPU"
)

ROWS, COLS = 65537, 32768  # 2**31 + 32768 elements
EDGE = 64  # rows compared at each end (a whole number of 32-row column tiles)


@pytest.fixture(scope="module")
def big() -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(2)
    x = torch.randn(ROWS, COLS, device="cuda", dtype=torch.bfloat16, generator=g)
    x[0, 5] = 1e4
    x[-1, -7] = -1e4
    assert x.numel() > 2**31
    return x


def _slices(x: torch.Tensor) -> list[tuple[slice, np.ndarray]]:
    """(row slice, bfloat16 NumPy copy) of the first rows and of the last tile-aligned rows."""
    head = slice(0, EDGE)
    tail = slice(ROWS - 1 - EDGE, ROWS)  # the partial last column tile (1 row) and two whole
    return [
        (s, x[s].cpu().view(torch.int16).numpy().view(ml_dtypes.bfloat16)) for s in (head, tail)
    ]


def _codes(r, s: slice, shape: tuple[int, int]) -> np.ndarray:
    """The data of rows ``s`` of a full result (unpacked for 4-bit compress)."""
    d = r.data
    if d.dim() == 1:  # 4-bit compress: two codes per byte, row-major
        lo = s.start * shape[1] // 2
        hi = s.stop * shape[1] // 2
        return d[lo:hi].cpu().numpy()
    return d[s].cpu().numpy()


@pytest.mark.parametrize(
    ("code", "castmode"),
    [
        ("mxfp8", "actual"),
        ("mxfp4", "compress"),
        ("nvfp4", "actual"),
        ("e4m3fn_e8m0_t32d0", "actual"),
        ("e4m3fn", "actual"),
        ("e4m3fn_float32", "actual"),
    ],
)
def test_more_than_two_to_the_31_elements_equal_reference_on_slices(big, code, castmode):
    r = tcast.cast(big, code, castmode=castmode, engine="triton")
    assert r.engine == "triton"
    dt = tcast.datatype(code)
    for s, xs in _slices(big):
        want = tcast_ref.cast(xs, code, castmode=castmode)
        np.testing.assert_array_equal(
            _codes(r, s, tuple(big.shape)), np.asarray(want.data), err_msg=f"{code} rows {s}"
        )
        if dt.sspec is not None and dt.sspec.tiles:
            if code.endswith("d0"):
                scale = r.scale[s.start // 32 : -(-s.stop // 32)]
            else:
                scale = r.scale[s]
            np.testing.assert_array_equal(scale.cpu().numpy(), np.asarray(want.scale))
        elif dt.sspec is not None:  # a tensor scale
            assert int(r.scale) == int(want.scale)
        if want.tenscale is not None:
            assert int(r.tenscale) == int(want.tenscale)
    up = tcast.upcast(r)
    assert up.shape == big.shape
    for s, xs in _slices(big):
        want = tcast_ref.upcast(tcast_ref.cast(xs, code, castmode=castmode))
        np.testing.assert_array_equal(
            up[s].cpu().numpy().view(np.uint32), np.asarray(want).view(np.uint32)
        )
    del r, up
    torch.cuda.empty_cache()


def test_virtual_cast_of_more_than_two_to_the_31_elements_equals_reference_on_slices(big):
    v = tcast.cast(big, "mxfp4", engine="triton")
    for s, xs in _slices(big):
        want = tcast_ref.cast(xs, "mxfp4")
        np.testing.assert_array_equal(
            v[s].cpu().view(torch.int16).numpy(), np.asarray(want).view(np.int16)
        )
