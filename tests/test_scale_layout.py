"""``scale_layout="blocked"`` (SEMANTICS.md §8.1) in every engine, against torchao's layout.

torchao's ``to_blocked`` (``torchao.prototype.mx_formats.utils``, the layout its MX and
NVFP4 GEMMs hand to ``torch._scaled_mm``) is the independent oracle: every engine's blocked
scales equal ``to_blocked`` of its plain scales for MX and NVFP4 datatypes over shapes with
partial row and column blocks. A hand-worked case pins the layout by value; upcasts of
blocked results equal those of plain ones; malformed blocked results are refused.
"""

from __future__ import annotations

import dataclasses
import warnings

import dual_checks as dc
import ml_dtypes
import numpy as np
import pytest

import tcast
import tcast_ref

torch = pytest.importorskip("torch")


def _to_blocked():
    with warnings.catch_warnings():  # torchao warns while loading its CUDA extensions
        warnings.simplefilter("ignore")
        from torchao.prototype.mx_formats.utils import to_blocked
    return to_blocked


def _engines():
    return [
        n
        for n, e in sorted(tcast.load_engines().engines.items())
        if e.accepts(np.zeros(1, np.float32)) or e.accepts(torch.zeros(1))
    ]


def _input(eng, x: np.ndarray):
    if eng.accepts(x):
        return x
    if x.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(x)


SHAPES = [(1, 32), (128, 128), (130, 200), (300, 96), (2, 70, 64), (5, 33)]
CODES = ["mxfp8", "mxfp4", "mxint8", "nvfp4", "mxfp6e2", "uint4_e8m0_int8_t16"]


@pytest.mark.parametrize("engine_name", _engines())
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("code", CODES)
def test_blocked_scales_are_torchaos_to_blocked(engine_name, shape, code):
    eng = tcast.load_engines().engines[engine_name]
    rng = np.random.default_rng(len(shape) * 1000 + shape[-1])
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-8, 8, shape))).astype(np.float32)
    xi = _input(eng, x)
    for cm in ("actual", "compress"):
        plain = tcast.cast(xi, code, castmode=cm, engine=engine_name)
        blocked = tcast.cast(xi, code, castmode=cm, scale_layout="blocked", engine=engine_name)
        assert blocked.scale_layout is tcast.ScaleLayout.BLOCKED
        assert not dc.differences(blocked.data, dc.to_numpy(plain.data), "data")
        for part in ("scale", "zero"):
            p = dc.to_numpy(getattr(plain, part))
            if p is None:
                continue
            mat = torch.from_numpy(p.reshape(-1, p.shape[-1]).astype(np.int32))
            want = _to_blocked()(mat).numpy().astype(p.dtype)
            got = dc.to_numpy(getattr(blocked, part))
            rows, cols = mat.shape
            assert got.shape == (-(-rows // 128) * 128, -(-cols // 4) * 4)
            assert np.array_equal(got.reshape(-1), want), f"{part} of {code} {shape}"
            assert np.array_equal(got, dc.blocked_by_offsets(p, p.ndim - 1))
        up_b, up_p = tcast.upcast(blocked), tcast.upcast(plain)
        assert not dc.differences(up_b, dc.to_numpy(up_p), "upcast")


def test_a_blocked_layout_worked_by_hand():
    """Three rows of two MXFP8 blocks; block (r, c) holds 2**(2r + c): scale code 119 + 2r + c.

    e4m3fn's largest power of two is 2**8, so amax 2**k takes the scale 2**(k - 8): code
    127 + k - 8. Row r, column c of the scale matrix sits at 16 r + c of the (128, 4) array.
    """
    x = np.zeros((3, 64), np.float32)
    for r in range(3):
        for c in range(2):
            x[r, 32 * c : 32 * c + 32] = 2.0 ** (2 * r + c)
    want = np.zeros(512, np.uint8)
    want[[0, 1, 16, 17, 32, 33]] = [119, 120, 121, 122, 123, 124]
    for engine_name in _engines():
        eng = tcast.load_engines().engines[engine_name]
        got = tcast.cast(
            _input(eng, x), "mxfp8", castmode="actual", scale_layout="blocked", engine=engine_name
        )
        assert np.array_equal(dc.to_numpy(got.scale), want.reshape(128, 4)), engine_name


def test_middle_dimension_tiles_are_laid_out_by_their_matrix():
    """A tile along dimension 1 of a 3-D array: rows are (dim 0, dim 2) in C order."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 64, 8)).astype(np.float32)
    plain = tcast_ref.cast(x, "e4m3fn_e8m0_t32d1", castmode="actual")
    blocked = tcast_ref.cast(x, "e4m3fn_e8m0_t32d1", castmode="actual", scale_layout="blocked")
    assert plain.scale.shape == (4, 2, 8) and blocked.scale.shape == (128, 4)
    mat = np.moveaxis(plain.scale, 1, -1).reshape(32, 2)
    want = _to_blocked()(torch.from_numpy(mat.astype(np.int32))).numpy().astype(np.uint8)
    assert np.array_equal(blocked.scale.reshape(-1), want)


def test_malformed_blocked_results_are_refused():
    x = np.random.default_rng(0).standard_normal((130, 64)).astype(np.float32)
    r = tcast_ref.cast(x, "mxfp8", castmode="actual", scale_layout="blocked")
    plain_shape = dataclasses.replace(r, scale=np.zeros((130, 2), np.uint8))
    with pytest.raises(tcast.SpecError, match=r"shape \(130, 2\), expected \(256, 4\)"):
        tcast.upcast(plain_shape)
    with pytest.raises(tcast.SpecError, match="scale_layout must be ScaleLayout"):
        tcast.upcast(dataclasses.replace(r, scale_layout="blocked"))
    tensor = tcast_ref.cast(x, "e4m3fn_e8m0", castmode="actual")
    with pytest.raises(tcast.SpecError, match=r"does not apply to .*tensor scale"):
        tcast.upcast(dataclasses.replace(tensor, scale_layout=tcast.ScaleLayout.BLOCKED))
    # padding codes are not read: a hand-made result with junk there decodes the same
    junk = r.scale.copy()
    junk[200:, :] = 0x55
    assert np.array_equal(
        tcast.upcast(dataclasses.replace(r, scale=junk)).view(np.uint32),
        tcast.upcast(r).view(np.uint32),
    )
    assert "scale blocked" in repr(r)


def test_the_front_door_refuses_an_engine_that_ignores_the_blocked_layout(monkeypatch):
    """A protocol engine that returns plain scales for a blocked request is caught."""

    class Ignores(tcast_ref.RefEngine):
        name = "ignores-layout"

        def run(self, x, request):
            plain = dataclasses.replace(
                request,
                modes=dataclasses.replace(request.modes, scale_layout=tcast.ScaleLayout.PLAIN),
            )
            return super().run(x, plain)

    monkeypatch.setattr(tcast.api, "select_engine", lambda *a, **k: Ignores())
    x = np.ones((4, 64), np.float32)
    with pytest.raises(tcast.UnsupportedError, match="does not implement the blocked layout"):
        tcast.cast(x, "mxfp8", castmode="actual", scale_layout="blocked")
    with pytest.raises(tcast.UnsupportedError, match="ignores-layout"):
        tcast.cast_dual(x, "mxfp8", scale_layout="blocked")
