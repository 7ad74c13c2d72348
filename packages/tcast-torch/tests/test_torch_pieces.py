"""Eager CPU casts of large tensors run their element stage and packing in pieces of rows
(``_pieces``): with pieces of a few blocks, every cast mode gives tcast_ref's raw bits."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import torch

import tcast
import tcast_ref
import tcast_torch
from tcast_torch import _philox, _pieces

CASES = [
    ("mxfp4", {}),  # the fast path (RNE, last-dimension tiles)
    ("mxfp4", {"roundmode": "stochastic", "seed": 2**63 + 9}),  # general path, Philox runs
    ("mxfp4", {"roundmode": "stochastic", "rbits": True}),  # explicit bits, cut like the rows
    ("bfloat16_e8m0_t32", {"roundmode": "stochastic", "seed": 13, "stream": 1}),  # K = 16
    ("mxfp8", {"roundmode": "trunc"}),
    ("mxint8", {"scalemode": "ceil"}),
    ("nvfp4", {}),  # two-level: one tensor scale over every piece
    ("mxfp6e3", {"roundmode": "away"}),  # 6-bit codes: packs of three bytes per four codes
    ("uint4_Fic", {}),  # zero points, channel tiles
    ("mxfp8_2d", {"roundmode": "zero"}),  # 2-D tiles: rows are not input rows
    ("mxfp8_2d", {"roundmode": "stochastic", "seed": 11}),  # 2-D: Philox of the rows' range
    ("e2m1f_e8m0_t32d0", {"roundmode": "stochastic", "seed": 7}),  # rows are input columns
    ("e2m1f_e8m0_t32n2m4", {}),  # sparsity: a keep mask per piece
    ("e2m1f_e8m0_t32n2m4", {"roundmode": "stochastic", "seed": 5}),
    ("uint4_float32_int8_t32n2m4", {}),  # sparsity with a zero point: kept min and max
    ("e4m3fn_e8m0_t64", {"roundmode": "stochastic", "seed": 3}),  # padded tiles (96 of 128)
]


@pytest.fixture
def stage_calls(monkeypatch) -> list[slice]:
    """Pieces of 64 elements, and the slices every element stage of the engine ran over."""
    monkeypatch.setattr(_pieces, "PIECE", 64)
    calls: list[slice] = []
    real = _pieces.by_pieces

    def spy(like, length, stage):
        def counted(s: slice):
            calls.append(s)
            return stage(s)

        return real(like, length, counted)

    for name, mod in list(sys.modules.items()):
        if name.startswith("tcast_torch.") and getattr(mod, "by_pieces", None) is real:
            monkeypatch.setattr(mod, "by_pieces", spy)
    return calls


def _raw(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        a = a.contiguous()
        a = a.view({1: torch.uint8, 2: torch.int16, 4: torch.int32}[a.element_size()]).numpy()
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.itemsize])


def _parts(out) -> list[np.ndarray]:
    if isinstance(out, (torch.Tensor, np.ndarray)):
        return [_raw(out)]
    parts = (out.data, out.scale, out.zero, out.tenscale, out.mask)
    return [_raw(p) for p in parts if p is not None]


@pytest.mark.parametrize(("name", "kw"), CASES)
def test_casts_in_pieces_give_the_reference_bits(stage_calls, name, kw):
    """Pieces of 64 elements (two to a few blocks) over a 48 x 96 input: virtual values,
    actual codes and scales, compressed bytes as tcast_ref gives them; the stages did run
    in pieces."""
    x = torch.randn(48, 96, generator=torch.Generator().manual_seed(6)) * 3
    x[5, 7] = float("nan")
    x[9] = 0.0
    xn = x.numpy()
    tkw, rkw = dict(kw), dict(kw)
    if kw.get("rbits"):  # K-bit integers: uint8 for an 8-bit element format
        bits = torch.randint(0, 256, x.shape, generator=torch.Generator().manual_seed(8))
        tkw["rbits"] = bits.to(torch.uint8)
        rkw["rbits"] = bits.numpy().astype(np.uint8)
    for castmode in ("virtual", "actual", "compress"):
        stage_calls.clear()
        got = tcast_torch.cast(x, name, castmode=castmode, compile=False, **tkw)
        want = tcast_ref.cast(xn, name, castmode=castmode, **rkw)
        for g, w in zip(_parts(got), _parts(want), strict=True):
            np.testing.assert_array_equal(g, w, err_msg=f"{name} {castmode} {kw}")
        assert any(s.start is not None for s in stage_calls), f"{name} {castmode}: one piece"


def test_pieces_cover_every_row_once():
    """by_pieces with a short last piece: every row once and in place (a 32nd of the
    elements a piece, twelve of 100 rows here), and one call when the stage fits in one
    piece."""
    rows = torch.arange(100 * 16, dtype=torch.int32).reshape(100, 16)
    calls = []

    def stage(s: slice) -> torch.Tensor:
        calls.append(s)
        return rows[s] * 2

    orig = _pieces.PIECE
    try:
        _pieces.PIECE = 1536  # pieces of at least 192 elements: 12 rows
        assert torch.equal(_pieces.by_pieces(rows, 16, stage), rows * 2)
        assert [(c.start, c.stop) for c in calls] == [(lo, lo + 12) for lo in range(0, 100, 12)]
        calls.clear()
        _pieces.PIECE = 1 << 18  # 1600 elements: under the smallest piece
        assert torch.equal(_pieces.by_pieces(rows, 16, stage), rows * 2)
        assert calls == [slice(None)]
    finally:
        _pieces.PIECE = orig


def test_pieces_are_a_32nd_of_the_input_between_2_15_and_2_18_elements():
    """The temporaries of a piece (about 27 of its size) stay under the input's size from
    2**20 elements; pieces are at most 2**18 elements and at least 2**15."""
    assert _pieces.piece_elements(1 << 22) == 1 << 17
    assert _pieces.piece_elements(1 << 20) == 1 << 15
    assert _pieces.piece_elements(1 << 18) == 1 << 15
    assert _pieces.piece_elements(1 << 24) == 1 << 18
    assert _pieces.piece_elements(1 << 26) == 1 << 18


def test_seeded_bits_are_made_piece_by_piece(monkeypatch):
    """A seeded stochastic cast cut into pieces asks Philox for each piece's words only,
    never for the whole input's stream at once."""
    monkeypatch.setattr(_pieces, "PIECE", 1 << 14)  # pieces of 2048 elements, 8 of them
    sizes = []
    real = _philox._stream_words

    def spy(key0, key1, first, calls, stream, device):
        sizes.append(calls)
        return real(key0, key1, first, calls, stream, device)

    monkeypatch.setattr(_philox, "_stream_words", spy)
    x = torch.randn(256, 64, generator=torch.Generator().manual_seed(3))
    for name in ("mxfp4", "mxfp8_2d"):  # a 2-D piece: two 32 x 32 tiles, one run of indices
        sizes.clear()
        got = tcast_torch.cast(x, name, roundmode="stochastic", seed=9, compile=False)
        want = tcast_ref.cast(x.numpy(), name, roundmode="stochastic", seed=9)
        np.testing.assert_array_equal(_raw(got), _raw(want), err_msg=name)
        # 16 elements of an 8-bit format per Philox call
        assert len(sizes) == 8 and max(sizes) * 16 == 2048, f"{name}: Philox calls {sizes}"


@pytest.mark.parametrize(("width", "stream"), [(8, 0), (16, 1)])
def test_philox_gather_is_the_word_of_each_index(width, stream):
    """Indices within a compact range (taken from the stream) or scattered (one Philox call
    each) get the codec word ``r << (32 - K)`` of their flat index's bits (tcast_ref's)."""
    seed = 2**40 + 3
    r = tcast_ref.random_bits(seed, 4096, width=width, stream=stream).astype(np.int64)
    words = torch.from_numpy((r << (32 - width)).astype(np.uint32).view(np.int32))
    compact = torch.arange(1000, 1600).reshape(20, 30).flip(0)
    scattered = torch.tensor([[4095, 0, 17], [2048, 5, 3]])
    for index in (compact, scattered):
        got = _philox.philox_gather(seed, index, width, stream)
        assert got.dtype == torch.int32
        np.testing.assert_array_equal(got.numpy(), words[index].numpy())


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("mxfp8_2d", (70, 96)),  # 2-D tiles, padded rows
        ("e2m1f_e8m0_t32d0", (3, 40, 5)),  # column tiles: rows are input columns
        ("e4m3fn_e8m0_t64", (4, 2, 96)),  # padded tiles along the last dimension
        ("uint4_Fic", (6, 10)),  # channel tiles
        ("e4m3fn_e8m0_t16_t16", (2, 33, 40)),  # 2-D tiles after a batch dimension
    ],
)
def test_boxes_hold_the_block_rows_in_order(name, shape):
    """The boxes of every piece size make, one after another, exactly the block rows of
    the whole tensor (padding included)."""
    til = tcast_torch._tiles.tiling(shape, tcast.datatype(name))
    a = torch.arange(1, math.prod(shape) + 1, dtype=torch.float32).reshape(shape)
    whole = til.to_blocks(a).reshape(-1, til.block_len)
    for rows in (1, 2, 3, 7, whole.shape[0]):
        boxes = til.boxes(rows)
        assert [lo for lo, _, _ in boxes] == [0] + [hi for _, hi, _ in boxes[:-1]]
        assert boxes[-1][1] == whole.shape[0]
        for lo, hi, box in boxes:
            got = til.within(box).to_blocks(a[box]).reshape(-1, til.block_len)
            assert torch.equal(got, whole[lo:hi]), f"{name} {rows} rows: box {box}"


def test_two_d_tiles_make_no_block_copy_of_the_input(monkeypatch):
    """Eager CPU casts of 2-D tiles make their block rows from boxes of the input, one piece
    at a time: no tensor of the input's size is cut into blocks, and every cast mode gives
    tcast_ref's bits."""
    monkeypatch.setattr(_pieces, "PIECE", 1 << 12)  # boxes of 32 input rows
    sizes = []
    real = tcast_torch._tiles.Tiling.to_blocks

    def spy(self, a):
        sizes.append(a.numel())
        return real(self, a)

    monkeypatch.setattr(tcast_torch._tiles.Tiling, "to_blocks", spy)
    x = torch.randn(256, 96, generator=torch.Generator().manual_seed(4))
    for castmode, kw in [("virtual", {}), ("actual", {"roundmode": "stochastic", "seed": 3})]:
        for mode in (castmode, "compress"):
            sizes.clear()
            got = tcast_torch.cast(x, "mxfp8_2d", castmode=mode, compile=False, **kw)
            want = tcast_ref.cast(x.numpy(), "mxfp8_2d", castmode=mode, **kw)
            for g, w in zip(_parts(got), _parts(want), strict=True):
                np.testing.assert_array_equal(g, w, err_msg=f"{mode} {kw}")
            assert sizes and max(sizes) <= x.numel() // 8, f"{mode} {kw}: blocks of {sizes}"
