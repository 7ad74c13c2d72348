"""The array layer of the exact model: tiling (§5.1), sparsity groups (§6), Philox by flat
index (§3.3), the virtual result in the input dtype (§7) and compress packing (§8)."""

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tcast
from tcast import SpecError, exact


def f32_values(rng, n, scale=4.0):
    return [float(v) for v in (rng.standard_normal(n) * scale).astype(np.float32)]


def bits(values, dtype=np.float32):
    udt = {np.float32: np.uint32, np.float16: np.uint16, ml_dtypes.bfloat16: np.uint16}[dtype]
    return np.array(values, dtype=np.float64).astype(dtype).view(udt).tolist()


# --------------------------------------------------------------------------- tiling
def numpy_blocks(shape, t_rows, t_cols):
    """Independent partition of a 2-D array into t_rows x t_cols tiles via numpy slicing."""
    idx = np.arange(math.prod(shape)).reshape(shape)
    out = {}
    for bi in range(-(-shape[0] // t_rows)):
        for bj in range(-(-shape[1] // t_cols)):
            tile = idx[bi * t_rows : (bi + 1) * t_rows, bj * t_cols : (bj + 1) * t_cols]
            out[(bi, bj)] = sorted(tile.ravel().tolist())
    return out


@pytest.mark.parametrize(
    ("shape", "scode", "rows", "cols", "transpose"),
    [
        ((4, 8), "e8m0_t4", 1, 4, False),
        ((4, 10), "e8m0_t4", 1, 4, False),  # partial last tile along the last dim
        ((6, 8), "e8m0_t4d0", 4, 1, False),  # tiles along dim 0, partial
        ((6, 8), "e8m0_t0", 1, 8, False),  # channel: the whole last dim
        ((6, 8), "e8m0_t0d0", 6, 1, False),
        ((6, 10), "e8m0_t2_t4", 2, 4, False),
        ((6, 10), "e8m0_t2_t4", 4, 2, True),  # transposed: segments swap dimensions
        ((5, 9), "e8m0_t0_t4", 5, 4, False),  # channel x tile
        ((5, 9), "e8m0_t4d-1_t2d-2", 2, 4, False),  # explicit dims, reversed order
    ],
)
def test_blocks_are_the_tiles_of_the_array_including_partial_tiles(
    shape, scode, rows, cols, transpose
):
    scale_shape, blocks = exact.block_indices(shape, tcast.datatype("e2m1f", scode), transpose)
    expected = numpy_blocks(shape, rows, cols)
    assert scale_shape == (-(-shape[0] // rows), -(-shape[1] // cols))
    assert {k: sorted(v) for k, v in blocks} == expected
    assert [k for k, _ in blocks] == sorted(expected)  # C order of the scale array


def test_a_tensor_scale_is_one_block_with_scale_shape_empty():
    scale_shape, blocks = exact.block_indices((3, 4), "fp8_F")
    assert scale_shape == () and blocks == [((), list(range(12)))]


def test_tiles_along_a_middle_dimension_of_a_3d_array():
    scale_shape, blocks = exact.block_indices((2, 6, 3), tcast.datatype("e2m1f", "e8m0_t4d1"))
    assert scale_shape == (2, 2, 3)
    idx = np.arange(36).reshape(2, 6, 3)
    got = dict(blocks)
    assert sorted(got[(1, 1, 2)]) == sorted(idx[1, 4:6, 2].tolist())
    assert sorted(got[(0, 0, 0)]) == sorted(idx[0, 0:4, 0].tolist())


def test_dimension_outside_the_array_is_a_spec_error():
    with pytest.raises(SpecError, match="dimension"):
        exact.block_indices((4,), tcast.datatype("e2m1f", "e8m0_t2d1"))


def test_cast_array_equals_cast_block_on_each_tile():
    rng = np.random.default_rng(7)
    shape = (5, 12)
    vals = f32_values(rng, 60)
    dt = tcast.datatype("e4m3fn", "e8m0_t2_t8")
    res = exact.cast_array(vals, shape, dt)
    for (bi, bj), idx in numpy_blocks(shape, 2, 8).items():
        blk = exact.cast_block([vals[i] for i in idx], dt)
        assert res.scale[bi * res.scale_shape[1] + bj] == blk.scale
        assert [res.codes[i] for i in idx] == list(blk.codes)
        assert bits([res.values[i] for i in idx]) == bits(blk.values)


def test_a_partial_tile_is_cast_from_its_real_elements_only():
    # 6 elements, tile 4: blocks [x0..x3] and the partial [x4, x5]; the partial block's
    # scale and codes are those of cast_block on its two real elements.
    dt = tcast.datatype("e2m1f", "e8m0_t4")
    vals = [1.0, 2.0, 3.0, 4.0, 96.0, 100.0]
    res = exact.cast_array(vals, (6,), dt)
    head, tail = exact.cast_block(vals[:4], dt), exact.cast_block(vals[4:], dt)
    assert res.scale_shape == (2,)
    # amax 4: e = 2 - emax(2) = 0 -> 127; amax 100: e = 6 - 2 = 4 -> 131
    assert res.scale == (head.scale, tail.scale) == (127, 131)
    assert res.codes == head.codes + tail.codes


# ------------------------------------------------------------------------- sparsity
def test_sparsity_groups_run_along_the_sparse_dimension_not_across_rows():
    # t4n2m4 along the last dim of a (2, 5) array: groups [0..3], [4] in each row; the
    # short group keeps its only element.
    vals = [1.0, 5.0, 3.0, 2.0, -7.0, 0.5, 0.25, 8.0, 9.0, 1.0]
    res = exact.cast_array(vals, (2, 5), tcast.datatype("e2m1f", "e8m0_t4n2m4"))
    assert res.mask == (False, True, True, False, True, False, False, True, True, True)


def test_sparsity_along_dimension_zero():
    vals = [1.0, 9.0, 4.0, 2.0, 3.0, 8.0, 2.0, 1.0]  # shape (4, 2): columns [1,4,3,2], [9,2,8,1]
    res = exact.cast_array(vals, (4, 2), tcast.datatype("e2m1f", "e8m0_t4n2m4d0"))
    assert res.mask == (False, True, True, False, True, True, False, False)


def test_sparsity_ties_keep_the_lower_index_in_the_array():
    res = exact.cast_array([2.0, 2.0, 2.0, 2.0], (4,), tcast.datatype("e2m1f", "e8m0_t4n2m4"))
    assert res.mask == (True, True, False, False)
    assert res.codes[2:] == (0, 0) and bits(res.values[2:]) == [0, 0]


# ------------------------------------------------------------------- random bits, §3.3
def test_seeded_bits_are_byte_i_mod_4_of_word_of_the_philox_call_i_div_16():
    # e2m1f takes K = 8 bits: element i = 16c + 4w + b takes byte b of word w of call c
    rng = np.random.default_rng(3)
    vals = f32_values(rng, 24)
    dt = tcast.datatype("e2m1f", "e8m0_t4_t2")
    by_seed = exact.cast_array(vals, (4, 6), dt, roundmode="stochastic", seed=2**40 + 5)
    calls = [exact.philox4x32((c, 0, 0, 0), (5, 256)) for c in (0, 1)]
    rbits = [(calls[i // 16][i % 16 // 4] >> (8 * (i % 4))) & 0xFF for i in range(24)]
    by_bits = exact.cast_array(vals, (4, 6), dt, roundmode="stochastic", rbits=rbits)
    assert by_seed == by_bits


def test_seeded_bits_of_a_16_bit_format_are_half_i_mod_2_of_word_of_the_call_i_div_8():
    # bfloat16 (unscaled) takes K = 16 bits: element i = 8c + 2w + b takes half b of word w
    rng = np.random.default_rng(5)
    vals = f32_values(rng, 12)
    dt = tcast.datatype("bfloat16")
    for stream in (0, 1):
        by_seed = exact.cast_array(
            vals, (3, 4), dt, roundmode="stochastic", seed=2**40 + 5, stream=stream
        )
        calls = [exact.philox4x32((c, 0, stream, 0), (5, 256)) for c in (0, 1)]
        rbits = [(calls[i // 8][i % 8 // 2] >> (16 * (i % 2))) & 0xFFFF for i in range(12)]
        by_bits = exact.cast_array(vals, (3, 4), dt, roundmode="stochastic", rbits=rbits)
        assert by_seed == by_bits


def test_random_bits_follow_the_flat_index_under_transposed_scaling():
    # Transposed scaling changes the tiles (4x2 -> 2x4) but element i still draws the bits
    # of flat index i: the 16 elements are one Philox call of seed 9, byte i % 4 of word i // 4.
    rng = np.random.default_rng(4)
    vals = f32_values(rng, 16)
    dt = tcast.datatype("e2m1f", "e8m0_t4_t2")
    call = exact.philox4x32((0, 0, 0, 0), (9, 0))
    rbits = [(call[i // 4] >> (8 * (i % 4))) & 0xFF for i in range(16)]
    for transpose in (False, True):
        res = exact.cast_array(
            vals, (4, 4), dt, roundmode="stochastic", seed=9, transpose_scale=transpose
        )
        _, blocks = exact.block_indices((4, 4), dt, transpose)
        assert {len(idx) for _, idx in blocks} == {8}
        for k, (_, idx) in enumerate(blocks):
            blk = exact.cast_block(
                [vals[i] for i in idx], dt, roundmode="stochastic", rbits=[rbits[i] for i in idx]
            )
            assert res.scale[k] == blk.scale
            assert [res.codes[i] for i in idx] == list(blk.codes)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"roundmode": "stochastic", "seed": 1, "rbits": [0] * 4}, "not both"),
        ({"roundmode": "stochastic"}, "seed or rbits"),
        ({"roundmode": "stochastic", "rbits": [0] * 3}, "3 values for 4"),
        ({"roundmode": "stochastic", "rbits": [0, 0, 0, 256]}, r"\[0, 2\*\*8\)"),  # e2m1f: K = 8
        ({"roundmode": "stochastic", "rbits": [0] * 4, "stream": 1}, "stream"),
        ({"roundmode": "stochastic", "seed": 1, "stream": -1}, "stream"),
        ({"seed": 1}, "stochastic"),
        ({"input_dtype": "float64"}, "float64"),
    ],
)
def test_bad_arguments_are_spec_errors(kw, match):
    with pytest.raises(SpecError, match=match):
        exact.cast_array([1.0, 2.0, 3.0, 4.0], (4,), "mxfp4", **kw)


def test_values_must_belong_to_the_input_dtype_and_fill_the_shape():
    with pytest.raises(SpecError, match="not a float16 value"):
        exact.cast_array([1.0 + 2**-20], (1,), "e4m3fn", input_dtype="float16")
    with pytest.raises(SpecError, match="do not fill"):
        exact.cast_array([1.0, 2.0], (3,), "e4m3fn")


# ---------------------------------------------------------------- virtual result, §7
def test_virtual_result_is_rounded_to_bfloat16_like_ml_dtypes():
    rng = np.random.default_rng(5)
    vals = [float(v) for v in (rng.standard_normal(32) * 3).astype(ml_dtypes.bfloat16)]
    res32 = exact.cast_array(vals, (32,), "uint8_FF")
    res16 = exact.cast_array(vals, (32,), "uint8_FF", input_dtype="bfloat16")
    expect = np.array(res32.values, np.float32).astype(ml_dtypes.bfloat16)
    assert bits(res16.values, ml_dtypes.bfloat16) == expect.view(np.uint16).tolist()


def test_virtual_float16_result_can_overflow_to_inf_under_ceil():
    # 65504 (float16 max), ceil: e = 16 - 8, 65504 / 2^8 = 255.875 -> e4m3fn 256 -> 65536:
    # beyond float16, and rounding to the input dtype is IEEE (§7).
    res = exact.cast_array([65504.0], (1,), "e4m3fn_e8m0", scalemode="ceil", input_dtype="float16")
    assert res.values == (math.inf,)
    floor = exact.cast_array([65504.0], (1,), "e4m3fn_e8m0", input_dtype="float16")
    assert floor.values == (57344.0,)  # 65504 / 2^7 = 511.75 -> saturates to 448 -> 57344


def test_nan_into_a_finite_only_format_stays_nan_in_the_virtual_result():
    res = exact.cast_array([math.nan, -math.nan, 1.0], (3,), "e2m1f")
    assert res.codes == (0, 0, 2)
    assert bits(res.values[:2]) == [0x7FC00000, 0xFFC00000]


# ------------------------------------------------------------------------ packing, §8
def test_fp4_packs_element_2i_in_the_low_nibble_and_pads_an_odd_count():
    assert exact.pack_codes([0x1, 0x2, 0x3], 4) == bytes([0x21, 0x03])


def test_fp6_packs_four_codes_in_three_bytes_as_a_dense_stream():
    # codes a=0b000001, b=0b000010, c=0b000011, d=0b111111: stream (LSB first) =
    # a | b<<6 | c<<12 | d<<18 = 0xFC3081 -> bytes 81 30 FC
    assert exact.pack_codes([1, 2, 3, 63], 6) == bytes([0x81, 0x30, 0xFC])
    assert exact.pack_codes([1, 2, 3, 63, 5], 6) == bytes([0x81, 0x30, 0xFC, 0x05])


def test_two_and_three_bit_packing():
    assert exact.pack_codes([1, 2, 3, 0, 3], 2) == bytes([0b00111001, 0b11])
    assert exact.pack_codes([7, 1, 2], 3) == bytes([0b10001111, 0b0])


def test_wide_codes_are_little_endian_in_2_or_4_bytes():
    assert exact.pack_codes([0x1234], 16) == b"\x34\x12"
    assert exact.pack_codes([0x12345], 17) == b"\x45\x23\x01\x00"
    assert exact.pack_codes([0xAB], 8) == b"\xab"


def test_mask_packs_eight_per_byte_first_element_lowest():
    assert exact.pack_mask([True, False, False, True] + [False] * 4 + [True]) == b"\x09\x01"


def test_fp4_packing_matches_torch_float4_x2_layout():
    torch = pytest.importorskip("torch")
    codes = [0x1, 0x2, 0x3, 0xF]
    packed = torch.tensor(list(exact.pack_codes(codes, 4)), dtype=torch.uint8)
    as_x2 = packed.view(torch.float4_e2m1fn_x2)
    assert as_x2.view(torch.uint8).tolist() == [0x21, 0xF3]


@given(st.integers(1, 32), st.data())
def test_unpack_inverts_pack(width, data):
    codes = data.draw(st.lists(st.integers(0, 2**width - 1), max_size=40))
    assert exact.unpack_codes(exact.pack_codes(codes, width), width, len(codes)) == codes


def test_pack_rejects_codes_that_do_not_fit():
    with pytest.raises(SpecError, match="does not fit"):
        exact.pack_codes([16], 4)
    with pytest.raises(SpecError, match="fewer than"):
        exact.unpack_codes(b"\x00", 4, 3)


def test_compress_result_drops_pruned_codes():
    vals = [1.0, 5.0, 3.0, 2.0, -7.0, 0.5, 0.25, 8.0]
    res = exact.cast_array(vals, (8,), tcast.datatype("e2m1f", "e8m0_t8n2m4"))
    kept = [c for c, k in zip(res.codes, res.mask, strict=True) if k]
    assert len(kept) == 4
    assert res.packed() == exact.pack_codes(kept, 4)
    assert res.packed_mask() == bytes([0b10010110])


def test_upcast_rule_decoded_codes_times_scale_equal_the_virtual_values():
    # §8: decoding an actual result (code value x scale) gives the virtual float32 values.
    rng = np.random.default_rng(11)
    vals = f32_values(rng, 64, scale=50.0)
    for name in ("mxfp8", "mxfp6e2", "mxfp4", "mxfp8e5"):
        dt = tcast.datatype(name)
        res = exact.cast_array(vals, (2, 32), dt)
        up = [
            exact.decode(c, dt.nspec) * exact.decode(res.scale[i // 32], dt.sspec.scale)
            for i, c in enumerate(res.codes)
        ]
        assert bits(up) == bits(res.values)


# ------------------------------------------------------------------ NaN bits, §2 / §7
def test_nan_block_virtual_values_are_the_positive_canonical_nan_of_the_input_dtype():
    vals = [1.0, math.nan] + [2.0] * 30
    res32 = exact.cast_array(vals, (32,), "mxfp4")
    assert set(bits(res32.values)) == {0x7FC00000}
    res16 = exact.cast_array(vals, (32,), "mxfp4", input_dtype="float16")
    assert set(bits(res16.values, np.float16)) == {0x7E00}
    resbf = exact.cast_array(vals, (32,), "mxfp4", input_dtype="bfloat16")
    assert set(bits(resbf.values, ml_dtypes.bfloat16)) == {0x7FC0}


def test_unscaled_nan_sign_is_the_sign_the_code_carries():
    neg_nan = -math.nan
    fn = exact.cast_array([neg_nan], (1,), "e4m3fn")
    assert fn.codes == (0xFF,) and bits(fn.values) == [0xFFC00000]
    fnuz = exact.cast_array([neg_nan], (1,), "e4m3b8fnuz")  # one NaN, 0x80, decodes positive
    assert fnuz.codes == (0x80,) and bits(fnuz.values) == [0x7FC00000]
    ieee = exact.cast_array([neg_nan], (1,), "e5m2", input_dtype="float16")
    assert ieee.codes == (0xFE,) and bits(ieee.values, np.float16) == [0xFE00]


def test_a_pruned_nan_still_decodes_to_nan():
    # Group [NaN, NaN, NaN, 1] keeps two NaNs; the third NaN is pruned but the block is
    # non-finite, so every element, pruned or not, is NaN (§5.2, §6).
    res = exact.cast_array([math.nan] * 3 + [1.0], (4,), "e2m1f_e8m0_t4n2m4")
    assert res.mask == (True, True, False, False)
    assert all(math.isnan(v) for v in res.values)


def test_a_bumped_scale_near_float32_max_overflows_the_decoded_value_to_inf():
    # §5.3: ceil on amax = float32 max, MXFP4: E = 127, e = 127 + 1 - 2 = 126; x' = max/2^126
    # = 3.99.. -> e2m1 4 (code 6); 4 * 2^126 = 2^128 overflows float32.
    f32max = float(np.finfo(np.float32).max)
    res = exact.cast_array([f32max, 1.0], (2,), "mxfp4", scalemode="ceil")
    assert res.scale == (127 + 126,) and res.codes[0] == 0x6
    assert res.values[0] == math.inf
    assert exact.cast_array([f32max, 1.0], (2,), "mxfp4").values[0] == 6 * 2.0**125
