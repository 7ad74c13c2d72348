"""The model helper: ``tcast_torch.quantize_model`` and ``QuantRule``.

* Outputs equal a manual computation, bit for bit: every weight and input cast with
  ``tcast_torch.cast`` in the documented canonical view, then ``F.linear``/``F.conv2d``.
* Where the blocks run (Linear: in-features; Conv2d weights: in-channels of every kernel tap;
  Conv2d inputs: channels), checked against casts of single blocks.
* ``remove()`` restores the state_dict (keys, order, bits), the parameter objects, the module
  classes, the hooks and the outputs; a user's own parametrization survives.
* Patterns (globs that cross dots, whole-name regexes, first match wins, exclusion rules),
  per-layer datatypes, errors, inference mode, seeded stochastic rounding.
* Gradients as values: under the straight-through estimator the master weight's gradient is
  the gradient with respect to the quantized weight, elementwise and bit for bit.
* The example script runs and its table has the sanity property mxfp8 < mxfp4.
"""

from __future__ import annotations

import copy
import importlib.util
import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parametrize

import tcast_torch
from tcast import SpecError, TcastError, UnsupportedError
from tcast_torch import AlreadyQuantizedError, QuantRule, quantize_model

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "quantize_small_model.py"
NAMES = ["mxfp8", "mxfp4", "nvfp4", "float8_e4m3fn", "mxint8"]
LAYERS = [
    "conv1",
    "conv2",
    "proj",
    "layers.0.mlp.fc1",
    "layers.0.mlp.fc2",
    "layers.1.mlp.fc1",
    "layers.1.mlp.fc2",
    "head",
]


class Block(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.mlp = nn.Sequential()
        self.mlp.add_module("fc1", nn.Linear(d, 2 * d))
        self.mlp.add_module("act", nn.GELU())
        self.mlp.add_module("fc2", nn.Linear(2 * d, d, bias=False))

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Net(nn.Module):
    """Linear and Conv2d layers; channel and feature counts that are not whole blocks."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 40, 3, stride=2, bias=False)
        self.proj = nn.Linear(40 * 4, 48)
        self.layers = nn.ModuleList([Block(48), Block(48)])
        self.head = nn.Linear(48, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.adaptive_avg_pool2d(x, 2).flatten(1)
        x = self.proj(x)
        for blk in self.layers:
            x = blk(x)
        return self.head(x)


def _net(seed=0, dtype=torch.float32):
    torch.manual_seed(seed)
    return Net().to(dtype)


def _batch(seed=1, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 9, 9, generator=g) * 2).to(dtype)


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().contiguous().view({4: torch.int32, 2: torch.int16}[t.element_size()])


def assert_same_bits(a: torch.Tensor, b: torch.Tensor):
    assert a.shape == b.shape and a.dtype == b.dtype
    assert torch.equal(_bits(a), _bits(b))


# ------------------------------------------------------- the manual computation
def q_linear_weight(w, dt, **kw):
    return tcast_torch.cast(w, dt, **kw)  # blocks along in-features, the last dim


def q_conv_weight(w, dt, **kw):
    # [out, in, kh, kw] -> [kh, kw, out, in]: blocks along in-channels, 2-D tiles (out, in)
    return tcast_torch.cast(w.permute(2, 3, 0, 1), dt, **kw).permute(2, 3, 0, 1).contiguous()


def q_conv_input(x, dt, **kw):
    # [N, C, H, W] -> [N, H, W, C]: blocks along channels
    return tcast_torch.cast(x.permute(0, 2, 3, 1), dt, **kw).permute(0, 3, 1, 2).contiguous()


def manual_forward(net: Net, x, cfg):
    """Net.forward written out with functional calls; cfg: name -> {"weight", "input", kw}."""
    mods = dict(net.named_modules())

    def layer(name, h):
        m, c = mods[name], cfg.get(name, {})
        w = m.weight
        conv = isinstance(m, nn.Conv2d)
        if c.get("input") is not None:
            kw = c.get("input_kw", {})
            h = q_conv_input(h, c["input"], **kw) if conv else tcast_torch.cast(h, c["input"], **kw)
        if c.get("weight") is not None:
            kw = c.get("weight_kw", {})
            w = (q_conv_weight if conv else q_linear_weight)(w, c["weight"], **kw)
        if conv:
            return F.conv2d(h, w, m.bias, m.stride, m.padding, m.dilation, m.groups)
        return F.linear(h, w, m.bias)

    h = F.relu(layer("conv1", x))
    h = F.relu(layer("conv2", h))
    h = F.adaptive_avg_pool2d(h, 2).flatten(1)
    h = layer("proj", h)
    for i, blk in enumerate(net.layers):
        a = F.gelu(layer(f"layers.{i}.mlp.fc1", blk.norm(h)))
        h = h + layer(f"layers.{i}.mlp.fc2", a)
    return layer("head", h)


def _snapshot(net: nn.Module):
    sd = net.state_dict()
    return {
        "keys": list(sd),
        "bits": {k: _bits(v).clone() for k, v in sd.items()},
        "params": [(n, id(p)) for n, p in net.named_parameters()],
        "classes": [(n, type(m)) for n, m in net.named_modules()],
        "hooks": [
            (n, len(m._forward_pre_hooks), len(m._forward_hooks)) for n, m in net.named_modules()
        ],
    }


# ------------------------------------------------------- outputs, bit for bit
@pytest.mark.parametrize("name", NAMES)
def test_outputs_equal_the_manual_casts_then_functional_layers(name):
    net, x = _net(), _batch()
    master = copy.deepcopy(net)
    h = quantize_model(net, QuantRule("*", weight=name, input=name))
    assert [q.name for q in h.layers] == LAYERS
    cfg = {n: {"weight": name, "input": name} for n in LAYERS}
    with torch.no_grad():
        assert_same_bits(net(x), manual_forward(master, x, cfg))
        mods = dict(net.named_modules())
        assert_same_bits(mods["conv2"].weight, q_conv_weight(master.conv2.weight, name))
        assert_same_bits(mods["head"].weight, q_linear_weight(master.head.weight, name))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_16_bit_models_keep_their_dtype_and_the_manual_bits(dtype):
    net, x = _net(dtype=dtype), _batch(dtype=dtype)
    master = copy.deepcopy(net)
    quantize_model(net, [QuantRule("conv*", input="mxfp8"), QuantRule("*", weight="nvfp4")])
    cfg = {n: ({"input": "mxfp8"} if n.startswith("conv") else {"weight": "nvfp4"}) for n in LAYERS}
    with torch.no_grad():
        y = net(x)
        assert y.dtype == dtype
        assert_same_bits(y, manual_forward(master, x, cfg))


def test_per_layer_datatypes_first_matching_rule_wins():
    net, x = _net(), _batch()
    master = copy.deepcopy(net)
    rules = [
        QuantRule("layers.0.*", weight="mxfp4"),
        QuantRule("layers.*.mlp.*", weight="mxfp8", input="mxfp6e2"),
        QuantRule("conv?", weight="nvfp4"),
        QuantRule(re.compile(r"head|proj"), input="float8_e4m3fn", saturate=False),
    ]
    h = quantize_model(net, rules)
    got = {
        q.name: (q.rule_index, q.kind, q.weight and q.weight.name, q.input and q.input.name)
        for q in h.layers
    }
    assert got == {
        "conv1": (2, "Conv2d", "nvfp4", None),
        "conv2": (2, "Conv2d", "nvfp4", None),
        "proj": (3, "Linear", None, "float8_e4m3fn"),
        "layers.0.mlp.fc1": (0, "Linear", "mxfp4", None),
        "layers.0.mlp.fc2": (0, "Linear", "mxfp4", None),
        "layers.1.mlp.fc1": (1, "Linear", "mxfp8", "mxfp6e2"),
        "layers.1.mlp.fc2": (1, "Linear", "mxfp8", "mxfp6e2"),
        "head": (3, "Linear", None, "float8_e4m3fn"),
    }
    cfg = {
        "conv1": {"weight": "nvfp4"},
        "conv2": {"weight": "nvfp4"},
        "proj": {"input": "float8_e4m3fn", "input_kw": {"saturate": False}},
        "head": {"input": "float8_e4m3fn", "input_kw": {"saturate": False}},
        "layers.0.mlp.fc1": {"weight": "mxfp4"},
        "layers.0.mlp.fc2": {"weight": "mxfp4"},
        "layers.1.mlp.fc1": {"weight": "mxfp8", "input": "mxfp6e2"},
        "layers.1.mlp.fc2": {"weight": "mxfp8", "input": "mxfp6e2"},
    }
    with torch.no_grad():
        assert_same_bits(net(x), manual_forward(master, x, cfg))
    assert "layers.0.mlp.fc1" in h.summary() and "#3 re:head|proj" in h.summary()


def test_glob_stars_cross_dots_and_regexes_match_the_whole_name():
    def chosen(pattern):
        h = quantize_model(_net(), QuantRule(pattern, weight="mxfp8"), strict=False)
        return [q.name for q in h.layers]

    assert chosen("layers.*") == LAYERS[3:7]  # '*' crosses the dots of 'layers.0.mlp.fc1'
    assert chosen("*fc2") == ["layers.0.mlp.fc2", "layers.1.mlp.fc2"]
    assert chosen("layers.[1].mlp.fc1") == ["layers.1.mlp.fc1"]
    assert chosen("Head") == []  # case-sensitive
    assert chosen(re.compile(r"fc\d")) == []  # a regex must match the whole name
    assert chosen(re.compile(r".*\.fc\d")) == LAYERS[3:7]
    assert chosen("*") == LAYERS


def test_a_rule_without_datatypes_keeps_its_layers_in_float():
    net, x = _net(), _batch()
    master = copy.deepcopy(net)
    h = quantize_model(
        net, [QuantRule("head"), QuantRule("conv1"), QuantRule("*", weight="mxfp4", input="mxfp4")]
    )
    assert [q.name for q in h.layers] == [n for n in LAYERS if n not in ("head", "conv1")]
    assert not parametrize.is_parametrized(net.head) and not net.head._forward_pre_hooks
    cfg = {n: {"weight": "mxfp4", "input": "mxfp4"} for n in LAYERS if n not in ("head", "conv1")}
    with torch.no_grad():
        assert_same_bits(net(x), manual_forward(master, x, cfg))


# ------------------------------------------------------- where the blocks run
def test_linear_blocks_run_along_in_features():
    w = torch.randn(6, 64) * torch.exp2(torch.randint(-6, 6, (6, 64)))
    x = torch.randn(3, 5, 64) * torch.exp2(torch.randint(-6, 6, (3, 5, 64)))
    lin = nn.Linear(64, 6)
    with torch.no_grad():
        lin.weight.copy_(w)
    quantize_model(lin, QuantRule("*", weight="mxfp4", input="mxfp4"))
    with torch.no_grad():
        qw = lin.weight
        for o in range(6):
            for b in range(2):  # every 32 in-features of a row are one block
                blk = w[o, 32 * b : 32 * b + 32]
                assert_same_bits(qw[o, 32 * b : 32 * b + 32], tcast_torch.cast(blk, "mxfp4"))
        seen = {}
        lin.register_forward_pre_hook(lambda m, a: seen.setdefault("x", a[0]))
        lin(x)
        rows = x.reshape(-1, 64)
        for r in range(rows.shape[0]):
            assert_same_bits(seen["x"].reshape(-1, 64)[r], tcast_torch.cast(rows[r], "mxfp4"))


def test_conv2d_weight_blocks_run_along_in_channels_at_every_kernel_tap():
    conv = nn.Conv2d(40, 4, 3)
    g = torch.Generator().manual_seed(2)
    w = torch.randn(4, 40, 3, 3, generator=g)
    w[0, 5, 1, 1] = 1000.0  # one outlier: only the block (out 0, tap (1, 1), in 0..31) sees it
    with torch.no_grad():
        conv.weight.copy_(w)
    quantize_model(conv, QuantRule("", weight="mxfp4"))
    with torch.no_grad():
        qw = conv.weight
        for o in range(4):
            for i in range(3):
                for j in range(3):
                    for lo, hi in ((0, 32), (32, 40)):  # 40 channels: a full and a short block
                        want = tcast_torch.cast(w[o, lo:hi, i, j].contiguous(), "mxfp4")
                        assert_same_bits(qw[o, lo:hi, i, j], want)
    assert torch.count_nonzero(qw[0, :32, 1, 1]) == 1  # the outlier flushed its block
    assert torch.count_nonzero(qw[0, :32, 0, 0]) > 16  # its neighbours at other taps did not


def test_conv2d_inputs_are_blocked_along_channels_and_keep_their_memory_format():
    conv = nn.Conv2d(32, 4, 1)
    quantize_model(conv, QuantRule("", input="mxfp4"))
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 32, 5, 5, generator=g)
    seen = []
    conv.register_forward_pre_hook(lambda m, a: seen.append(a[0]))
    with torch.no_grad():
        y = conv(x)
        y_cl = conv(x.contiguous(memory_format=torch.channels_last))
        y_3d = conv(x[1])  # unbatched [C, H, W]
    assert seen[0].is_contiguous()
    assert seen[1].is_contiguous(memory_format=torch.channels_last)
    for n in range(2):
        for i in range(5):
            for j in range(5):
                assert_same_bits(seen[0][n, :, i, j], tcast_torch.cast(x[n, :, i, j], "mxfp4"))
    assert_same_bits(seen[1], seen[0])
    assert_same_bits(seen[2], seen[0][1])
    # the quantized inputs are the same bits (above); the conv kernels may differ
    torch.testing.assert_close(y_cl, y, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(y_3d, y[1], rtol=1e-6, atol=1e-6)


def test_an_input_given_by_keyword_is_quantized_too():
    lin = nn.Linear(32, 4)
    x = torch.randn(3, 32)
    quantize_model(lin, QuantRule("*", input="mxfp4"))
    with torch.no_grad():
        assert_same_bits(lin(input=x), lin(x))
        assert_same_bits(lin(x), F.linear(tcast_torch.cast(x, "mxfp4"), lin.weight, lin.bias))


# ------------------------------------------------------- removal
def test_remove_restores_state_dict_parameters_classes_hooks_and_outputs_bit_exactly():
    net, x = _net(), _batch()
    before = _snapshot(net)
    with torch.no_grad():
        y0 = net(x)
    h = quantize_model(net, QuantRule("*", weight="mxfp4", input="nvfp4"))
    assert h.active
    assert "conv1.parametrizations.weight.original" in net.state_dict()
    with torch.no_grad():
        assert not torch.equal(net(x), y0)
    h.remove()
    assert not h.active and repr(h) == "<QuantHandle removed: 8 layers>"
    after = _snapshot(net)
    assert after["keys"] == before["keys"]  # the same keys in the same order
    assert all(torch.equal(after["bits"][k], before["bits"][k]) for k in before["keys"])
    assert after["params"] == before["params"]  # the same Parameter objects, same order
    assert after["classes"] == before["classes"] and after["hooks"] == before["hooks"]
    with torch.no_grad():
        assert_same_bits(net(x), y0)
    h.remove()  # idempotent


def test_the_handle_is_a_context_manager_and_the_model_can_be_quantized_again():
    net, x = _net(), _batch()
    with torch.no_grad():
        y0 = net(x)
        with quantize_model(net, QuantRule("*", weight="mxfp8")):
            y8 = net(x)
        assert_same_bits(net(x), y0)
        with quantize_model(net, QuantRule("*", weight="mxfp8")):
            assert_same_bits(net(x), y8)


def test_remove_takes_off_only_its_own_parametrization():
    class Double(nn.Module):
        def forward(self, w):
            return 2 * w

    net, x = _net(), _batch()
    parametrize.register_parametrization(net.head, "weight", Double())
    keys = list(net.state_dict())
    with torch.no_grad():
        y0 = net(x)
    h = quantize_model(net, QuantRule("head", weight="mxfp4"))
    with torch.no_grad():
        assert_same_bits(
            net.head.weight,
            tcast_torch.cast(2 * net.head.parametrizations.weight.original, "mxfp4"),
        )
    h.remove()
    assert len(net.head.parametrizations.weight) == 1
    assert isinstance(net.head.parametrizations.weight[0], Double)
    assert list(net.state_dict()) == keys
    with torch.no_grad():
        assert_same_bits(net(x), y0)


def test_parametrize_cached_gives_the_same_bits():
    net, x = _net(), _batch()
    quantize_model(net, QuantRule("*", weight="mxfp4", input="mxfp8"))
    with torch.no_grad():
        y = net(x)
        with parametrize.cached():
            assert_same_bits(net(x), y)


# ------------------------------------------------------- errors
def test_quantizing_a_quantized_model_again_is_refused():
    net = _net()
    h = quantize_model(net, QuantRule("head", input="mxfp8"))
    with pytest.raises(AlreadyQuantizedError, match=r"head \(input\).*remove\(\)"):
        quantize_model(net, QuantRule("conv1", weight="mxfp8"))
    twin = copy.deepcopy(net)  # a copy carries the quantization, not the handle
    with pytest.raises(AlreadyQuantizedError, match="head"):
        quantize_model(twin, QuantRule("*", weight="mxfp8"))
    h.remove()
    assert isinstance(AlreadyQuantizedError("x"), TcastError)
    quantize_model(net, QuantRule("*", weight="mxfp8")).remove()


def test_strict_refuses_rules_that_select_no_layer():
    net = _net()
    with pytest.raises(
        SpecError,
        match=r"rule 1 \('layer.0.\*'\) matches no module name.*"
        r"'conv1'",
    ):
        quantize_model(
            net, [QuantRule("head", weight="mxfp8"), QuantRule("layer.0.*", weight="mxfp8")]
        )
    with pytest.raises(SpecError, match=r"rule 1 \('head'\).*taken by an earlier rule"):
        quantize_model(net, [QuantRule("*", weight="mxfp8"), QuantRule("head", weight="mxfp4")])
    with pytest.raises(UnsupportedError, match=r"layers.0.norm \(LayerNorm\)"):
        quantize_model(net, QuantRule("*.norm", weight="mxfp8"))
    assert not any(parametrize.is_parametrized(m) for m in net.modules())  # nothing halfway
    h = quantize_model(net, QuantRule("nothing*", weight="mxfp8"), strict=False)
    assert h.layers == ()
    h.remove()


def test_an_unsupported_layer_named_exactly_is_refused_even_when_not_strict():
    net = nn.Sequential(nn.Conv1d(4, 4, 3), nn.Linear(2, 2))
    with pytest.raises(
        UnsupportedError,
        match=r"rule 0 names layer '0', a Conv1d.*Linear and "
        r"Conv2d",
    ):
        quantize_model(net, QuantRule("0", weight="mxfp8"), strict=False)


def test_the_input_of_a_multihead_attention_out_proj_is_refused():
    model = nn.ModuleDict({"attn": nn.MultiheadAttention(32, 2), "fc": nn.Linear(32, 32)})
    with pytest.raises(UnsupportedError, match=r"'attn.out_proj'.*MultiheadAttention"):
        quantize_model(model, QuantRule("*", weight="mxfp8", input="mxfp8"))
    quantize_model(model, QuantRule("*", weight="mxfp8")).remove()  # its weight is fine


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"weight": "mxfp5"}, SpecError, "mxfp5"),
        ({"input": 8}, SpecError, "input must be a DataType"),
        ({"weight": "mxfp8", "roundmode": "sideways"}, SpecError, "sideways"),
        ({"weight": "mxfp8", "scalemode": "up"}, SpecError, "up"),
        ({"weight": "mxfp8", "roundmode": "stochastic"}, SpecError, "needs a seed"),
        ({"weight": "mxfp8", "seed": 3}, SpecError, "not 'even'"),
        ({"weight": "mxfp8", "roundmode": "stochastic", "seed": -1}, SpecError, "seed -1"),
        ({"weight": "mxfp8", "saturate": 1}, SpecError, "saturate must be"),
        ({"weight": "mxfp8", "grad": "straight"}, SpecError, "straight"),
    ],
)
def test_bad_rules_raise_naming_the_bad_value(kwargs, error, match):
    with pytest.raises(error, match=match):
        QuantRule("*", **kwargs)


def test_bad_arguments_of_quantize_model():
    with pytest.raises(SpecError, match=r"glob string or a compiled re\.Pattern"):
        QuantRule(3, weight="mxfp8")
    with pytest.raises(UnsupportedError, match="not dict"):
        quantize_model({}, QuantRule("*", weight="mxfp8"))
    with pytest.raises(SpecError, match="at least one"):
        quantize_model(_net(), [])
    with pytest.raises(SpecError, match=r"rules\[1\] is a str"):
        quantize_model(_net(), [QuantRule("*", weight="mxfp8"), "head"])


def test_a_datatype_that_does_not_fit_a_weight_is_refused_before_any_change():
    net = _net()
    before = _snapshot(net)
    # tiles along dim 3: the Conv2d weights' canonical view has it, Linear weights do not
    with pytest.raises(SpecError, match=r"layer 'proj' weight \(48, 160\).*dimension 3"):
        quantize_model(net, QuantRule("*", weight="e2m1f_e8m0_t16d3"))
    with pytest.raises(UnsupportedError, match="float64"):
        quantize_model(_net(dtype=torch.float64), QuantRule("*", weight="mxfp8"))
    after = _snapshot(net)
    assert after["keys"] == before["keys"] and after["classes"] == before["classes"]


def test_an_input_the_engine_refuses_names_the_layer():
    lin = nn.Linear(32, 4)
    quantize_model(lin, QuantRule("*", input="mxfp4_2d"))  # 2-D tiles need rank >= 2
    with pytest.raises(SpecError, match=r"layer '' input \(32,\) \(mxfp4_2d\)"):
        lin(torch.randn(32))


# ------------------------------------------------------- inference mode, stochastic rounding
def test_inference_mode_gives_the_same_bits():
    net, x = _net(), _batch()
    quantize_model(net, QuantRule("*", weight="mxfp4", input="mxfp8", grad="saturate"))
    y_grad = net(x)
    assert y_grad.requires_grad
    with torch.inference_mode():
        y = net(x)
    assert y.is_inference() and not y.requires_grad
    assert_same_bits(y, y_grad)


def test_stochastic_rounding_draws_per_layer_seeds_that_reseed_changes():
    net, x = _net(), _batch()
    master = copy.deepcopy(net)
    rule = QuantRule("*", weight="mxfp4", input="mxfp4", roundmode="stochastic", seed=11)
    h = quantize_model(net, rule)
    seeds = {(n, r): h.seed(n, r) for n in LAYERS for r in ("weight", "input")}
    assert len(set(seeds.values())) == len(seeds)  # no two tensors share a Philox stream
    assert all(0 <= s < 2**64 for s in seeds.values())

    def cfg():
        return {
            n: {
                "weight": "mxfp4",
                "input": "mxfp4",
                "weight_kw": {"roundmode": "stochastic", "seed": h.seed(n, "weight")},
                "input_kw": {"roundmode": "stochastic", "seed": h.seed(n, "input")},
            }
            for n in LAYERS
        }

    with torch.no_grad():
        y = net(x)
        assert_same_bits(net(x), y)  # fixed bits: the same output at every call
        assert_same_bits(y, manual_forward(master, x, cfg()))
        h.reseed(1)
        assert h.seed("head", "weight") != seeds[("head", "weight")]
        y1 = net(x)
        assert not torch.equal(y1, y)
        assert_same_bits(y1, manual_forward(master, x, cfg()))
        h.reseed(0)
        assert_same_bits(net(x), y)
    h.remove()
    h2 = quantize_model(net, rule)  # the seeds depend on the rule and the names only
    assert {(n, r): h2.seed(n, r) for n, r in seeds} == seeds
    with pytest.raises(SpecError, match="no quantized input in layer 'nope'"):
        h2.seed("nope", "input")
    with pytest.raises(SpecError, match="step -1"):
        h2.reseed(-1)


# ------------------------------------------------------- gradients (QAT)
@pytest.mark.parametrize("grad", ["ste", "saturate"])
def test_linear_master_weight_gradient_is_the_gradient_wrt_the_quantized_weight(grad):
    g = torch.Generator().manual_seed(4)
    lin = nn.Linear(64, 16)
    with torch.no_grad():
        lin.weight.mul_(5000.0)  # some weights beyond e4m3fn's 448: clipped
    w0 = lin.weight.detach().clone()
    x = (torch.randn(5, 64, generator=g) * 500).requires_grad_()
    gy = torch.randn(5, 16, generator=g)
    quantize_model(lin, QuantRule("*", weight="float8_e4m3fn", input="float8_e4m3fn", grad=grad))
    (lin(x) * gy).sum().backward()
    master = lin.parametrizations.weight.original

    # the same loss on leaves that are the quantized tensors themselves
    qw = tcast_torch.cast(w0, "float8_e4m3fn").requires_grad_()
    qx = tcast_torch.cast(x.detach(), "float8_e4m3fn").requires_grad_()
    (F.linear(qx, qw, lin.bias.detach()) * gy).sum().backward()
    torch.testing.assert_close(qw.grad, gy.t() @ qx.detach(), rtol=1e-5, atol=1e-3)
    w_in, x_in = w0.abs() <= 448, x.detach().abs() <= 448
    assert not w_in.all() and not x_in.all()  # the clipping case is exercised
    if grad == "ste":  # straight through, elementwise, bit for bit
        assert_same_bits(master.grad, qw.grad)
        assert_same_bits(x.grad, qx.grad)
    else:  # zero exactly where the cast clipped
        assert_same_bits(master.grad, torch.where(w_in, qw.grad, 0.0))
        assert_same_bits(x.grad, torch.where(x_in, qx.grad, 0.0))
    assert_same_bits(lin.bias.grad, gy.sum(0))


def test_conv2d_master_weight_gradient_passes_the_canonical_view_unchanged():
    g = torch.Generator().manual_seed(5)
    conv = nn.Conv2d(8, 6, 3, padding=1)
    w0 = conv.weight.detach().clone()
    x = torch.randn(2, 8, 6, 6, generator=g).requires_grad_()
    gy = torch.randn(2, 6, 6, 6, generator=g)
    quantize_model(conv, QuantRule("", weight="mxfp4", input="mxfp8"))
    (conv(x) * gy).sum().backward()
    qw = q_conv_weight(w0, "mxfp4").requires_grad_()
    qx = q_conv_input(x.detach(), "mxfp8").requires_grad_()
    (F.conv2d(qx, qw, conv.bias.detach(), padding=1) * gy).sum().backward()
    assert_same_bits(conv.parametrizations.weight.original.grad, qw.grad)
    assert_same_bits(x.grad, qx.grad)


def test_a_qat_step_updates_the_master_weight_which_remove_keeps():
    net, x = _net(), _batch()
    params = list(net.parameters())
    # the optimizer is created before quantization: it holds the same parameter objects
    opt = torch.optim.SGD(params, lr=0.1, foreach=False)
    before = net.head.weight.detach().clone()
    h = quantize_model(net, QuantRule("*", weight="mxfp4", input="mxfp8"))
    assert {id(p) for p in net.parameters()} == {id(p) for p in params}  # order may differ
    net(x).square().sum().backward()
    grad = net.head.parametrizations.weight.original.grad.clone()
    assert torch.isfinite(grad).all() and grad.abs().sum() > 0
    opt.step()
    h.remove()
    # the trained float master weight stays
    assert_same_bits(net.head.weight, before.add(grad, alpha=-0.1))


# ------------------------------------------------------- the example script
def _example():
    spec = importlib.util.spec_from_file_location("quantize_small_model", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_reports_finite_errors_for_every_datatype(capsys):
    ex = _example()
    rows = ex.main("cpu")
    out = capsys.readouterr().out
    assert out.startswith(f"torch {torch.__version__}, tcast_torch ") and "device cpu" in out
    assert [r["datatype"] for r in rows] == list(ex.DATATYPES)
    assert ex.DATATYPES == (
        "mxfp8",
        "mxfp8e5",
        "mxfp6e2",
        "mxfp6e3",
        "mxfp4",
        "mxint8",
        "nvfp4",
        "float8_e4m3fn",
    )
    for r in rows:
        assert f"| {r['datatype']} |" in out
        for key in ("mlp_rel_l2", "mlp_max_abs", "cnn_rel_l2", "cnn_max_abs"):
            assert math.isfinite(r[key]) and 0 < r[key] < 1, (r["datatype"], key, r[key])
    by = {r["datatype"]: r for r in rows}
    # Not a theorem for a whole network, but the elementwise property below makes every
    # quantized operand of the first layer at least as close in MXFP8 as in MXFP4; with
    # about 4x smaller elementwise errors the margin is wide (and the run is deterministic).
    for m in ("mlp", "cnn"):
        assert by["mxfp8"][f"{m}_rel_l2"] < by["mxfp4"][f"{m}_rel_l2"] / 2
        assert by["mxint8"][f"{m}_rel_l2"] < by["mxfp4"][f"{m}_rel_l2"] / 2


@pytest.mark.parametrize("shape", [(64, 96), (4, 40, 3, 3)])
def test_mxfp8_is_elementwise_at_least_as_close_as_mxfp4(shape):
    """Why mxfp8 < mxfp4 must hold: with the same E8M0 floor scale (both put the block's
    amax in the element's top binade, E = floor(log2 amax)), MXFP4's grid 2**E * {0, 1/8,
    1/4, 3/8, 1/2, 3/4, 1, 1.5} is a subset of MXFP8's 2**(E-8) * e4m3 values, and both round
    to the nearest grid point (saturating to the largest), so no element is farther off."""
    g = torch.Generator().manual_seed(6)
    x = torch.randn(shape, generator=g) * torch.exp2(torch.randint(-10, 10, shape, generator=g))
    e8 = (tcast_torch.cast(x, "mxfp8") - x).abs()
    e4 = (tcast_torch.cast(x, "mxfp4") - x).abs()
    assert (e8 <= e4).all()
    assert e8.sum() < e4.sum() / 4
