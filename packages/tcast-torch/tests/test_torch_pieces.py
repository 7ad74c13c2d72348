"""Eager CPU casts of large tensors run their element stage and packing in pieces of rows
(``_pieces``): with pieces of a few blocks, every cast mode gives tcast_ref's raw bits."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tcast_ref
import tcast_torch
from tcast_torch import _pieces

CASES = [
    ("mxfp4", {}),  # the fast path (RNE, last-dimension tiles)
    ("mxfp4", {"roundmode": "stochastic", "seed": 2**63 + 9}),  # general path, Philox
    ("mxfp8", {"roundmode": "trunc"}),
    ("mxint8", {"scalemode": "ceil"}),
    ("nvfp4", {}),  # two-level: one tensor scale over every piece
    ("mxfp6e3", {"roundmode": "away"}),  # 6-bit codes: packs of three bytes per four codes
    ("mxfp8_2d", {"roundmode": "zero"}),  # 2-D tiles: rows are not input rows
    ("e2m1f_e8m0_t32n2m4", {}),  # sparsity: a keep mask per piece
    ("e4m3fn_e8m0_t64", {"roundmode": "stochastic", "seed": 3}),  # padded tiles (96 of 128)
]


def _raw(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        a = a.contiguous()
        a = a.view({1: torch.uint8, 2: torch.int16, 4: torch.int32}[a.element_size()]).numpy()
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.itemsize])


def _parts(out) -> list[np.ndarray]:
    if isinstance(out, (torch.Tensor, np.ndarray)):
        return [_raw(out)]
    return [_raw(p) for p in (out.data, out.scale, out.tenscale, out.mask) if p is not None]


@pytest.mark.parametrize(("name", "kw"), CASES)
def test_casts_in_pieces_give_the_reference_bits(monkeypatch, name, kw):
    """Pieces of 64 elements (two to a few blocks) over a 48 x 96 input: virtual values,
    actual codes and scales, compressed bytes as tcast_ref gives them."""
    monkeypatch.setattr(_pieces, "PIECE", 64)
    x = torch.randn(48, 96, generator=torch.Generator().manual_seed(6)) * 3
    x[5, 7] = float("nan")
    x[9] = 0.0
    xn = x.numpy()
    for castmode in ("virtual", "actual", "compress"):
        got = tcast_torch.cast(x, name, castmode=castmode, compile=False, **kw)
        want = tcast_ref.cast(xn, name, castmode=castmode, **kw)
        for g, w in zip(_parts(got), _parts(want), strict=True):
            np.testing.assert_array_equal(g, w, err_msg=f"{name} {castmode} {kw}")


def test_pieces_cover_every_row_once():
    """by_pieces with a short last piece: every row once and in place (an eighth of the rows
    a piece, twelve of 100 here), and one call when the stage fits in one piece."""
    rows = torch.arange(100 * 4, dtype=torch.int32).reshape(100, 4)
    calls = []

    def stage(s: slice) -> torch.Tensor:
        calls.append(s)
        return rows[s] * 2

    orig = _pieces.PIECE
    try:
        _pieces.PIECE = 96
        assert torch.equal(_pieces.by_pieces(rows, 4, stage), rows * 2)
        assert [(c.start, c.stop) for c in calls] == [(lo, lo + 12) for lo in range(0, 100, 12)]
        calls.clear()
        _pieces.PIECE = 400
        assert _pieces.piece_elements(400) == 400 >> 3 and len(calls) == 0
        _pieces.PIECE = 1 << 20  # 400 elements: under the smallest piece
        assert torch.equal(_pieces.by_pieces(rows, 4, stage), rows * 2)
        assert calls == [slice(None)]
    finally:
        _pieces.PIECE = orig
