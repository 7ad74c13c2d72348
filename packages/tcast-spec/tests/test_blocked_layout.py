"""The blocked scale layout's rule (SEMANTICS.md §8.1) as tcast states it: pure arithmetic.

``tcast.blocked_offset`` against hand-worked offsets; ``BlockedScales``' view and swizzle
against ``blocked_offset`` (a pure-Python permutation of a small matrix); the arguments it
refuses. Engines' blocked scales are checked against torchao's ``to_blocked`` in
``tests/test_scale_layout.py``.
"""

from __future__ import annotations

import itertools
import math

import pytest

import tcast
from tcast import CastModes, ScaleLayout, SpecError
from tcast.kit import normalize_args, result_form
from tcast.layout import BlockedScales, block_layout, blocked_refusal, blocked_scales


@pytest.mark.parametrize(
    ("row", "col", "cols", "offset"),
    [
        (0, 0, 4, 0),
        (0, 1, 4, 1),
        (0, 3, 4, 3),
        (1, 0, 4, 16),  # rows 0..31 step 16 codes
        (31, 0, 4, 496),
        (32, 0, 4, 4),  # rows 32..63 sit 4 codes after rows 0..31
        (64, 2, 4, 10),
        (96, 3, 4, 15),
        (127, 3, 4, 511),  # the block's last code
        (33, 2, 4, 16 + 4 + 2),
        (0, 4, 8, 512),  # the next block along the row
        (0, 4, 5, 512),  # 5 columns pad to 8: two blocks per row of blocks
        (128, 0, 8, 2 * 512),  # the next row of blocks after both column blocks
        (128, 0, 4, 512),
        (130, 5, 8, 3 * 512 + 2 * 16 + 1),
    ],
)
def test_blocked_offsets_worked_by_hand(row, col, cols, offset):
    assert tcast.blocked_offset(row, col, cols) == offset


def _swizzled(bs: BlockedScales) -> list[int]:
    """Where each code of the padded matrix goes, by the view and swizzle (pure Python)."""
    view = bs.view
    strides_in = [math.prod(view[k + 1 :]) for k in range(5)]
    out_shape = [view[a] for a in bs.swizzle]
    strides_out = [math.prod(out_shape[k + 1 :]) for k in range(5)]
    dest = [0] * (bs.padded_rows * bs.padded_cols)
    for idx in itertools.product(*(range(n) for n in view)):
        src = sum(i * s for i, s in zip(idx, strides_in, strict=True))
        moved = [idx[a] for a in bs.swizzle]
        dest[src] = sum(i * s for i, s in zip(moved, strides_out, strict=True))
    return dest


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (128, 4), (130, 5), (256, 12), (3, 9)])
def test_view_and_swizzle_put_every_scale_at_its_offset(rows, cols):
    bs = BlockedScales((rows, cols), 1)
    assert bs.shape == (-(-rows // 128) * 128, -(-cols // 4) * 4)
    dest = _swizzled(bs)
    for r in range(rows):
        for c in range(cols):
            assert dest[r * bs.padded_cols + c] == tcast.blocked_offset(r, c, cols)
    assert sorted(dest) == list(range(len(dest)))  # a permutation: padding fills the rest
    # the blocked view swizzled again is the padded matrix: an inverse
    inverse = BlockedScales((rows, cols), 1)
    assert inverse.blocked_view == tuple(bs.view[a] for a in bs.swizzle)


@pytest.mark.parametrize(
    ("shape", "code", "dim", "rows", "cols"),
    [
        ((300, 200), "mxfp8", 1, 300, 7),
        ((2, 33, 70), "nvfp4", 2, 66, 5),
        ((64, 48), "e4m3fn_e8m0_t32d0", 0, 48, 2),  # a tile along the first dimension
        ((4, 64, 8), "e4m3fn_e8m0_t32d1", 1, 32, 2),  # along a middle one: rows (4, 8)
        ((0, 64), "mxfp8", 1, 0, 2),
    ],
)
def test_the_scale_matrix_of_a_layout(shape, code, dim, rows, cols):
    dt = tcast.datatype(code)
    bs = blocked_scales(block_layout(shape, dt), dt)
    assert (bs.dim, bs.rows, bs.cols) == (dim, rows, cols)
    assert bs.moved_shape == tuple(bs.scale_shape[d] for d in bs.order)
    assert tuple(bs.order[i] for i in bs.inverse_order) == tuple(range(len(shape)))


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("e4m3fn", "unscaled"),
        ("e4m3fn_e8m0", "a tensor scale"),
        ("mxfp8_2d", "2-D tiles"),
        ("e4m3fn_float32_t0", "channels"),
    ],
)
def test_the_blocked_layout_is_refused_where_it_does_not_apply(code, why):
    dt = tcast.datatype(code)
    assert why in blocked_refusal(dt)
    with pytest.raises(SpecError, match=f"does not apply to {dt.name}: .*{why}"):
        normalize_args(code, "actual", scale_layout="blocked")


def test_blocked_is_a_layout_of_actual_and_compress_results():
    with pytest.raises(SpecError, match="applies to actual and compress casts"):
        CastModes.of("virtual", scale_layout="blocked")
    with pytest.raises(
        SpecError, match="scale layout 'swizzle' is not defined; valid: plain, blocked"
    ):
        CastModes.of("actual", scale_layout="swizzle")
    m = CastModes.of("compress", scale_layout="BLOCKED")
    assert m.scale_layout is ScaleLayout.BLOCKED and hash(m) != hash(CastModes.of("compress"))
    assert CastModes.of("actual").scale_layout is ScaleLayout.PLAIN


def test_result_form_of_blocked_scales():
    dt = tcast.datatype("uint4_e8m0_int8_t16")  # zero points are laid out like the scales
    forms = result_form(dt, (300, 200), tcast.CastMode.ACTUAL, False, ScaleLayout.BLOCKED)
    assert forms["scale"].shape == (384, 16) and forms["zero"].shape == (384, 16)
    plain = result_form(dt, (300, 200), tcast.CastMode.ACTUAL)
    assert plain["scale"].shape == (300, 13)
    with pytest.raises(SpecError, match="no scales to lay out"):
        result_form(
            tcast.datatype("e4m3fn"), (4, 4), tcast.CastMode.ACTUAL, False, ScaleLayout.BLOCKED
        )


def test_column_datatype_moves_the_tile_to_the_second_to_last_dimension():
    col = tcast.kit.column_datatype(tcast.datatype("nvfp4"))
    assert col.code == "e2m1f_e4m3fn_float32_t16d-2"
    assert col.sspec.dims(2) == (0,) and col.sspec.dims(3) == (1,)
    with pytest.raises(SpecError, match="one tile segment along the last dimension"):
        tcast.kit.column_datatype(tcast.datatype("e4m3fn_e8m0_t32d0"))


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ((0, 5, 4), "col 5 is past the 4 columns"),
        ((-1, 0, 4), "row must be an int >= 0, got -1"),
        ((True, 1, 4), "row must be an int >= 0, got True"),
        ((0, 1.5, 4), "col must be an int >= 0, got 1.5"),
    ],
)
def test_blocked_offset_refuses_bad_positions(args, why):
    with pytest.raises(SpecError, match=why):
        tcast.blocked_offset(*args)


@pytest.mark.parametrize(
    ("code", "castmode", "why"),
    [
        ("e4m3fn", "actual", "unscaled"),
        ("e4m3fn_e8m0", "actual", "a tensor scale"),
        ("e4m3fn_float32_t0", "compress", "channels"),
        ("mxfp8", "virtual", "a virtual cast has no scales"),
    ],
)
def test_requests_built_by_hand_are_refused_too(code, castmode, why):
    """A CastModes made without CastModes.of still meets the refusal, before any work."""
    modes = CastModes(castmode=tcast.cast_mode(castmode), scale_layout=ScaleLayout.BLOCKED)
    with pytest.raises(SpecError, match=why):
        tcast.kit.make_request(tcast.datatype(code), modes, None, None, (64, 64), "float32")


def test_engines_without_the_new_array_ops_are_refused_with_a_reason():
    class OldOps:  # an ArrayOps written before permute, pad and crop existed
        def reshape(self, a, shape):
            return a

    with pytest.raises(tcast.UnsupportedError, match="lacks permute, pad"):
        tcast.kit.to_blocked(None, BlockedScales((2, 2), 1), OldOps())
    with pytest.raises(tcast.UnsupportedError, match="lacks permute, crop"):
        tcast.kit.from_blocked(None, BlockedScales((2, 2), 1), OldOps())
