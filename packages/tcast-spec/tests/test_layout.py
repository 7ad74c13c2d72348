"""tcast.block_layout (the engines' shared shape arithmetic) against the exact model's blocks."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tcast
from tcast import SpecError, block_layout, exact

CODES = [
    "mxfp8",
    "nvfp4",
    "mxint8_2d",
    "uint8_Fic",
    "int8_F",
    "e2m1f_e8m0_t32n2m4",
    "e4m3fn_e8m0_t8d0",
    "e2m1f_e8m0_t16n2m4_t8",
    "e2m1f_e8m0_t8_t16n1m4",
    "e4m3fn_e8m0_t0n2m4",
]


def _exact_kept(shape, dt, transpose) -> int:
    """Kept elements per the exact model's sparsity rule on an all-distinct input."""
    values = [float(i + 1) for i in range(math.prod(shape))]
    res = exact.cast_array(values, shape, dt, transpose_scale=transpose)
    return sum(res.mask) if res.mask is not None else len(values)


@settings(max_examples=60, deadline=None)
@given(
    code=st.sampled_from(CODES),
    d0=st.integers(1, 20),
    d1=st.integers(1, 70),
    transpose=st.booleans(),
)
def test_scale_shape_and_blocks_match_the_exact_model(code, d0, d1, transpose):
    dt = tcast.datatype(code)
    shape = (d0, d1)
    lay = block_layout(shape, dt, transpose)
    scale_shape, blocks = exact.block_indices(shape, dt, transpose)
    assert lay.scale_shape == tuple(scale_shape)
    assert math.prod(lay.scale_counts_shape) == len(blocks)
    longest = max(len(idx) for _, idx in blocks)
    assert longest <= lay.block_len
    if dt.sspec.is_sparse:
        assert lay.kept_count == _exact_kept(shape, dt, transpose)
    else:
        assert lay.kept_count == d0 * d1


def test_layout_fields_for_named_cases():
    lay = block_layout((3, 100), tcast.mxfp8)
    assert (lay.dims, lay.sizes, lay.counts, lay.rest) == ((1,), (32,), (4,), (3,))
    assert lay.scale_shape == (3, 4) and lay.scale_counts_shape == (3, 4) and lay.block_len == 32
    t = block_layout((5, 6), tcast.datatype("int8_F"))
    assert t.dims == () and t.scale_shape == () and t.scale_counts_shape == (1,)
    assert t.block_len == 30
    ch = block_layout((4, 10), tcast.datatype("e4m3fn_e8m0_t0n2m4"))
    assert ch.sizes == (12,) and ch.kept_count == 4 * (2 + 2 + 2)  # groups 4, 4 and 2 real


def test_unscaled_and_missing_dims_are_spec_errors():
    with pytest.raises(SpecError, match="unscaled"):
        block_layout((4,), tcast.datatype("e4m3fn"))
    with pytest.raises(SpecError, match="does not exist"):
        block_layout((4,), tcast.datatype("mxfp8_2d"))
