"""CastResults survive ``pickle`` and ``torch.save``/``torch.load(weights_only=True)``.

torch cannot unpickle uint16/uint32 tensors, the parts of every two-level result (NVFP4's
tensor scale), 16-bit codes and float32 scales: inside a result they pickle as signed views
(``tcast_torch._pickling``). A loaded result equals the original in every part's dtype and
raw bits, in its datatype, modes and notes, and upcasts to the same bits. NumPy results
(``tcast_ref``) pickle the same way.
"""

from __future__ import annotations

import copy
import io
import pickle

import numpy as np
import pytest
import torch

import tcast
import tcast_torch
from tcast import CastResult, SpecError
from tcast_torch._pickling import unsigned_view

PARTS = ("data", "scale", "zero", "tenscale", "mask")

#: (datatype, cast options): every part dtype a result holds (uint8/uint16/uint32 codes,
#: uint16/uint32 scales, a uint32 tensor scale, bool and packed masks, zero points) and the
#: blocked and transposed scale forms.
CASES = {
    "nvfp4": ("nvfp4", {}),
    "bfloat16": ("bfloat16", {}),
    "int8_Fc": ("int8_Fc", {}),
    "uint4_FFc": ("uint4_FFc", {}),
    "sparse": ("e4m3fn_e8m0_t32n2m4", {}),
    "mxfp6e2": ("mxfp6e2", {}),
    "blocked": ("mxfp8", {"scale_layout": "blocked"}),
    "2d": ("mxfp8_2d", {"transpose_scale": True}),
}


def _x() -> torch.Tensor:
    return torch.randn(128, 64, generator=torch.Generator().manual_seed(5))


def _raw(t: torch.Tensor) -> torch.Tensor:
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32}
    return t if t.dtype is torch.bool else t.contiguous().view(ints[t.element_size()])


def _assert_same_result(got: CastResult, want: CastResult) -> None:
    assert isinstance(got, CastResult)
    for part in PARTS:
        g, w = getattr(got, part), getattr(want, part)
        assert (g is None) == (w is None), part
        if w is not None:
            assert g.dtype == w.dtype and g.shape == w.shape, part
            assert torch.equal(_raw(g), _raw(w)), part
    assert got.dtype == want.dtype and got.dtype.name == want.dtype.name
    assert got.castmode is want.castmode and got.scale_layout is want.scale_layout
    for field in ("shape", "input_dtype", "transpose_scale", "engine", "extra", "meta"):
        assert getattr(got, field) == getattr(want, field), field
    assert torch.equal(_raw(tcast.upcast(got)), _raw(tcast.upcast(want)))


def _torch_round_trip(r: CastResult) -> CastResult:
    buf = io.BytesIO()
    torch.save({"result": r}, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)["result"]


@pytest.mark.parametrize("mode", ["actual", "compress"])
@pytest.mark.parametrize("case", list(CASES))
def test_results_round_trip_through_pickle_and_torch_save_in_raw_bits(case, mode):
    name, kw = CASES[case]
    r = tcast_torch.cast(_x().to(torch.bfloat16), name, castmode=mode, **kw)
    _assert_same_result(pickle.loads(pickle.dumps(r)), r)
    _assert_same_result(_torch_round_trip(r), r)


def test_nvfp4_tensor_scale_is_a_uint32_part_and_survives():
    """The two-level case the rule exists for: a 0-d uint32 tensor scale."""
    r = tcast_torch.cast(_x(), "nvfp4", castmode="actual", roundmode="stochastic", seed=2)
    assert r.tenscale.dtype is torch.uint32 and r.tenscale.ndim == 0
    loaded = pickle.loads(pickle.dumps(r, protocol=pickle.HIGHEST_PROTOCOL))
    assert loaded.tenscale.dtype is torch.uint32
    _assert_same_result(loaded, r)


def test_results_of_a_variant_and_of_meta_tensors_round_trip():
    r = tcast.cast(_x(), "nvfp4", castmode="actual", engine="torch:eager")
    _assert_same_result(_torch_round_trip(r), r)
    m = pickle.loads(pickle.dumps(tcast.cast(_x().to("meta"), "nvfp4", castmode="actual")))
    assert m.tenscale.device.type == "meta" and m.tenscale.dtype is torch.uint32


def test_numpy_results_round_trip_through_pickle():
    x = _x().numpy()
    for name, kw in CASES.values():
        r = tcast.cast(x, name, castmode="actual", **kw)
        got = pickle.loads(pickle.dumps(r))
        for part in PARTS:
            g, w = getattr(got, part), getattr(r, part)
            assert (g is None) == (w is None), part
            if w is not None:
                assert g.dtype == w.dtype and np.array_equal(g, w), part
        assert got.dtype == r.dtype and got.castmode is r.castmode
        assert np.array_equal(tcast.upcast(got).view(np.int32), tcast.upcast(r).view(np.int32))


def test_copies_hold_the_tensors_themselves():
    r = tcast_torch.cast(_x(), "nvfp4", castmode="actual")
    shallow = copy.copy(r)
    assert shallow.tenscale is r.tenscale and shallow.data is r.data
    deep = copy.deepcopy(r)
    assert deep.tenscale is not r.tenscale
    _assert_same_result(deep, r)


def test_weights_only_loading_allowlists_exactly_the_result_and_the_unsigned_view():
    ours = {
        g
        for g in torch.serialization.get_safe_globals()
        if getattr(g, "__module__", "").startswith(("tcast", "tcast_torch"))
    }
    assert ours == {CastResult, unsigned_view}


def test_a_pickled_state_of_other_fields_is_refused_naming_them():
    r = tcast_torch.cast(_x(), "mxfp8", castmode="actual")
    state = r.__getstate__()
    del state["scale_layout"]
    bad = object.__new__(CastResult)
    with pytest.raises(SpecError, match=r"not a pickled CastResult"):
        bad.__setstate__(state)
    with pytest.raises(SpecError, match=r"not a pickled CastResult"):
        bad.__setstate__([1, 2])


def test_unsigned_view_refuses_other_names_and_widths():
    with pytest.raises(SpecError, match=r"not a pickled unsigned tensor"):
        unsigned_view(torch.zeros(2, dtype=torch.int16), "uint32")
    with pytest.raises(SpecError, match=r"not a pickled unsigned tensor"):
        unsigned_view(torch.zeros(2, dtype=torch.int32), "float32")
    assert unsigned_view(torch.tensor([-1], dtype=torch.int32), "uint32").dtype is torch.uint32
