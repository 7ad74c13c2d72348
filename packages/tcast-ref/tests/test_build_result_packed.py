"""``tcast.kit.build_result(packed=True)``: a kernel's own compress stream, taken as it is.

Checked with the reference engine's array operations: the stream an engine packed itself
gives the same result as the one ``build_result`` packs, and it is refused for an actual
cast or with a sparsity mask (the kept codes must be selected before packing).
"""

from __future__ import annotations

import numpy as np
import pytest

import tcast
import tcast_ref
from tcast.kit import build_result
from tcast_ref._cast import OPS
from tcast_ref._pack import pack_codes


def _request(code: str, castmode: str):
    x = np.linspace(-3, 3, 4 * 32, dtype=np.float32).reshape(4, 32)
    engine = tcast.load_engines().engines["ref"]
    dt = tcast.datatype(code)
    modes = tcast.CastModes(castmode=tcast.CastMode(castmode))
    return x, engine.request(x, dt, modes, None, None)


def test_a_packed_stream_gives_the_result_build_result_packs_itself():
    x, req = _request("mxfp4", "compress")
    actual = tcast_ref.cast(x, "mxfp4", castmode="actual")
    codes = np.asarray(actual.data)
    scale = np.asarray(actual.scale)
    want = build_result(req, codes, OPS, "ref", scale=scale)
    got = build_result(req, pack_codes(codes.reshape(-1), 4), OPS, "ref", scale=scale, packed=True)
    np.testing.assert_array_equal(np.asarray(got.data), np.asarray(want.data))
    np.testing.assert_array_equal(
        np.asarray(got.data), np.asarray(tcast_ref.cast(x, "mxfp4", castmode="compress").data)
    )


def test_packed_is_refused_for_an_actual_cast_or_with_a_mask():
    x, req = _request("mxfp4", "actual")
    codes = np.zeros(x.shape, np.uint8)
    with pytest.raises(tcast.SpecError, match="packed"):
        build_result(req, codes, OPS, "ref", scale=np.zeros((4, 1), np.uint8), packed=True)
    x, req = _request("mxfp4", "compress")
    with pytest.raises(tcast.SpecError, match="packed"):
        build_result(
            req,
            codes,
            OPS,
            "ref",
            scale=np.zeros((4, 1), np.uint8),
            mask=np.ones(x.shape, bool),
            packed=True,
        )
