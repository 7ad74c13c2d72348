"""Post-training quantization: prepare_model, calibration batches, convert (static scales)."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from torch import nn

import tcast_ref
import tcast_torch
from tcast import SpecError
from tcast import observe as ob
from tcast_torch import QuantRule


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16))


def _batches(n: int = 3) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return [torch.randn(8, 32, generator=g) * (1 + i) for i in range(n)]


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int32)


def test_static_scales_are_the_observers_of_the_inputs_and_weights() -> None:
    model = _model()
    rules = [
        QuantRule("0", weight="mxfp4", input="int8_float32"),
        QuantRule("2", weight="int8_float32_t0", input="nvfp4"),
    ]
    cal = tcast_torch.prepare_model(model, rules, weight=ob.Mse(), input=ob.Percentile(99.0))
    seen: dict[str, list[torch.Tensor]] = {"0": [], "2": []}
    taps = [
        model[int(n)].register_forward_pre_hook(lambda m, a, n=n: seen[n].append(a[0].clone()))
        for n in seen
    ]
    with torch.no_grad():
        for b in _batches():
            model(b)
    for t in taps:
        t.remove()
    handle = cal.convert()
    # the inputs: a static int8 tensor scale; nvfp4's tensor scale alone (the reference
    # engine's observers on the inputs the layers saw)
    o0 = tcast_ref.Observer("int8_float32", ob.Percentile(99.0))
    o2 = tcast_ref.Observer("nvfp4", ob.Percentile(99.0), tensor_scale_only=True)
    for x0, x2 in zip(seen["0"], seen["2"], strict=True):
        o0.update(x0.numpy())
        o2.update(x2.numpy())
    got0, got2 = handle.calibrated("0", "input"), handle.calibrated("2", "input")
    assert list(got2) == ["tensor_scale"]
    assert np.array_equal(got0["scale"].numpy(), o0.scales()["scale"])
    assert np.array_equal(got2["tensor_scale"].numpy(), o2.scales()["tensor_scale"])
    # the weights: MSE over the weight itself
    w = model[0].parametrizations.weight.original.detach()
    ow = tcast_ref.Observer("mxfp4", ob.Mse())
    ow.update(w.numpy())
    ow.search(w.numpy())
    assert np.array_equal(handle.calibrated("0", "weight")["scale"].numpy(), ow.scales()["scale"])
    # the forward pass casts with them: layer 0 by hand
    x = _batches(1)[0]
    want = nn.functional.linear(
        tcast_torch.cast(x, "int8_float32", scale=torch.from_numpy(o0.scales()["scale"])),
        tcast_torch.cast(w, "mxfp4", scale=torch.from_numpy(ow.scales()["scale"])),
        model[0].bias,
    )
    got = model[0](x)
    assert torch.equal(_bits(got.detach()), _bits(want.detach()))
    # gradients flow (QAT may follow PTQ)
    model(x).sum().backward()
    assert model[0].parametrizations.weight.original.grad is not None
    # the calibration saved and loaded again: the same forward
    buf = io.BytesIO()
    torch.save(handle.calibration_state(), buf)
    handle.remove()
    assert not hasattr(model[0], "parametrizations")
    buf.seek(0)
    again = tcast_torch.quantize_model(model, rules, calibration=torch.load(buf))
    assert torch.equal(_bits(model[0](x).detach()), _bits(got.detach()))
    again.remove()
    with pytest.raises(SpecError, match="no rule quantizes"):
        tcast_torch.quantize_model(model, rules, calibration={"1:input": {}})
    with pytest.raises(SpecError, match="parts are tensors"):
        tcast_torch.quantize_model(model, rules, calibration={"0:input": {"scale": 1.0}})
    assert not hasattr(model[0], "parametrizations")


def test_all_positive_inputs_keep_zero_in_a_uint_range() -> None:
    """Sigmoid outputs into a uint8 input: the calibrated range holds 0 (a zero point >= 0)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), nn.Sigmoid(), nn.Linear(16, 4))
    cal = tcast_torch.prepare_model(model, QuantRule("2", input="uint8_FF"))
    with torch.no_grad():
        model(torch.randn(8, 16))
    zero = cal.convert().calibrated("2", "input")["zero"]
    assert float(zero) == 0.0


def test_per_block_inputs_stay_dynamic_and_two_pass_methods() -> None:
    model = _model()
    rules = [QuantRule("0", input="mxfp8"), QuantRule("2", input="e4m3fn_float32")]
    cal = tcast_torch.prepare_model(model, rules, input=ob.Mse())
    assert list(cal.observers) == ["2"] and cal.passes == 2
    with torch.no_grad():
        for b in _batches():
            model(b)
    with pytest.raises(SpecError, match="next_pass"):
        cal.convert()
    cal.next_pass()
    with pytest.raises(SpecError, match="pass"):
        cal.next_pass()
    with torch.no_grad():
        for b in _batches():
            model(b)
    handle = cal.convert()
    assert handle.calibrated("0", "input") is None  # per-block scales follow each batch
    assert set(handle.calibrated("2", "input")) == {"scale"}
    with pytest.raises(SpecError, match="removed or converted"):
        cal.convert()


def test_conv_weights_are_calibrated_in_their_canonical_view() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(32, 8, 3))
    cal = tcast_torch.prepare_model(model, QuantRule("0", weight="mxfp8", input="mxfp8"))
    assert cal.observers == {}
    handle = cal.convert()
    w = model[0].parametrizations.weight.original.detach().permute(2, 3, 0, 1)
    assert handle.calibrated("0", "weight")["scale"].shape == (3, 3, 8, 1)
    computed = tcast_torch.cast(w, "mxfp8", castmode="compress").scale
    assert torch.equal(
        tcast_torch.cast(w, "mxfp8", castmode="compress", **handle.calibrated("0", "weight")).scale,
        computed,
    )


def test_prepare_refuses_what_cannot_be_calibrated() -> None:
    model = _model()
    with pytest.raises(SpecError, match="MinMax"):
        tcast_torch.prepare_model(
            model, QuantRule("0", weight="uint8_float32_uint8_t0"), weight=ob.Percentile()
        )
    assert not any(m._forward_pre_hooks for m in model.modules())
    cal = tcast_torch.prepare_model(model, QuantRule("0", input="int8_float32"))
    with pytest.raises(SpecError, match="no calibration batch"):
        cal.convert()
    cal.remove()
    assert not any(m._forward_pre_hooks for m in model.modules())
