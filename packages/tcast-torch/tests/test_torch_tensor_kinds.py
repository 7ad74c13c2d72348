"""Which tensors the torch engine takes: plain strided tensors, subclasses that leave torch's
operations alone, and DTensors (cast shard by shard, test_torch_dtensor.py); other
dispatching subclasses, nested and sparse tensors, and DTensors of Partial placements are
refused with ``UnsupportedError`` naming the conversion (never wrong values without an
error, never a raw torch error).
"""

from __future__ import annotations

import dataclasses
import warnings

import pytest
import torch

import tcast
import tcast_torch
from tcast import SpecError, UnsupportedError

NAMES = ["float8_e4m3fn", "mxfp8", "nvfp4"]
CASTS = [tcast_torch.cast, tcast.cast]  # the engine's function and the front door


def _x() -> torch.Tensor:
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(1))
    x[0, 0] = -0.3
    return x


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().as_subclass(torch.Tensor).contiguous().view(torch.int32)


@pytest.mark.parametrize("placement", ["shard0", "replicate"])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("cast", CASTS)
def test_dtensor_of_one_process_casts_like_its_tensor(mesh, cast, name, placement):
    """World size 1, Shard(0) or Replicate(): a DTensor result (or CastResult of DTensors)
    with the input's placements, the bits of the plain cast (test_torch_dtensor.py runs 2
    and 4 processes)."""
    from torch.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor

    x = _x()
    placements = [Shard(0) if placement == "shard0" else Replicate()]
    d = distribute_tensor(x, mesh, placements)
    v = cast(d, name)
    assert isinstance(v, DTensor) and list(v.placements) == placements
    assert torch.equal(_bits(v.to_local()), _bits(tcast_torch.cast(x, name)))
    a = cast(d, name, castmode="actual")
    want = tcast_torch.cast(x, name, castmode="actual")
    for part in ("data", "scale", "tenscale"):
        got, ref = getattr(a, part), getattr(want, part)
        assert (got is None) == (ref is None)
        if got is not None:
            assert isinstance(got, DTensor)
            assert torch.equal(got.to_local(), ref), part
    up = tcast.upcast(a)
    assert isinstance(up, DTensor)
    assert torch.equal(_bits(up.to_local()), _bits(tcast_torch.upcast(want)))


def test_dtensor_partial_placement_is_refused_naming_the_conversion(mesh):
    from torch.distributed.tensor import DTensor, Partial

    p = DTensor.from_local(_x(), mesh, [Partial()], run_check=False)
    for cast in CASTS:
        with pytest.raises(UnsupportedError, match=r"Partial.*redistribute"):
            cast(p, "mxfp8")


def test_kernels_that_cannot_split_dtensors_still_refuse_them(mesh):
    """``tensor_refusal`` (the Triton engine's refusal) names a DTensor's conversion: only
    the torch engine's own refusal lets DTensors through to its shard-by-shard path."""
    from torch.distributed.tensor import Replicate, distribute_tensor

    from tcast_torch._accept import tensor_refusal

    d = distribute_tensor(_x(), mesh, [Replicate()])
    assert "DTensor" in tensor_refusal(d) and ".to_local()" in tensor_refusal(d)
    assert tcast_torch.engine.refusal(d) is None


def test_dtensor_rbits_of_a_plain_input_and_mixed_result_parts_are_refused(mesh):
    from torch.distributed.tensor import Replicate, distribute_tensor

    x = _x()
    rbits = torch.randint(0, 256, x.shape, dtype=torch.uint8)  # K = 8 bits, the right dtype
    d_rbits = distribute_tensor(rbits, mesh, [Replicate()])
    with pytest.raises(SpecError, match=r"rbits is a DTensor: it must be sharded like x"):
        tcast_torch.cast(x, "mxfp8", roundmode="stochastic", rbits=d_rbits)
    r = tcast_torch.cast(x, "mxfp8", castmode="actual")
    bad = dataclasses.replace(r, scale=distribute_tensor(r.scale, mesh, [Replicate()]))
    for upcast in (tcast_torch.upcast, tcast.upcast):
        with pytest.raises(SpecError, match=r"DTensor and plain tensor parts"):
            upcast(bad)


def _sparse_and_nested() -> dict[str, torch.Tensor]:
    x = _x()
    with warnings.catch_warnings():  # torch's beta/prototype notices for these layouts
        warnings.simplefilter("ignore", UserWarning)
        return {
            "sparse_coo": x.to_sparse(),
            "sparse_csr": x.to_sparse_csr(),
            "sparse_csc": x.to_sparse_csc(),
            "sparse_bsr": x.to_sparse_bsr((4, 4)),
            "nested (strided)": torch.nested.nested_tensor([x[0], x[1]]),
            "nested (jagged)": torch.nested.nested_tensor([x[0], x[1, :16]], layout=torch.jagged),
        }


@pytest.mark.parametrize("kind", list(_sparse_and_nested()))
@pytest.mark.parametrize("cast", CASTS)
def test_sparse_and_nested_tensors_are_refused_naming_the_conversion(cast, kind):
    t = _sparse_and_nested()[kind]
    want = r"to_dense\(\)" if kind.startswith("sparse") else r"nested tensor.*unbind\(\)"
    for castmode in ("virtual", "actual", "compress"):
        with pytest.raises(UnsupportedError, match=want):
            cast(t, "mxfp8", castmode=castmode)


def test_masked_tensor_is_refused_not_cast_without_its_mask():
    x = _x()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        m = torch.masked.masked_tensor(x, x > 0)
    for cast in CASTS:
        with pytest.raises(UnsupportedError, match=r"MaskedTensor.*__torch_dispatch__"):
            cast(m, "mxfp8")


class _Dispatching(torch.Tensor):
    """A wrapper subclass with its own ``__torch_dispatch__`` (values of its own choosing)."""

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return NotImplemented


class _Attributes(torch.Tensor):
    """A subclass that only adds Python attributes: torch's operations as they are."""

    note = "calibrated"


def test_subclass_with_its_own_dispatch_is_refused_naming_its_hooks():
    t = torch.Tensor._make_subclass(_Dispatching, _x())
    for cast in CASTS:
        with pytest.raises(UnsupportedError, match=r"_Dispatching.*own __torch_dispatch__"):
            cast(t, "mxfp8")


@pytest.mark.parametrize("name", NAMES)
def test_parameters_buffers_and_attribute_only_subclasses_cast_like_plain_tensors(name):
    """nn.Parameter (requires grad: the autograd path), nn.Buffer and a ``_make_subclass``
    subclass that adds attributes give the plain tensor's bits, virtual and actual."""
    x = _x()
    want_v = _bits(tcast_torch.cast(x, name))
    want_a = tcast_torch.cast(x, name, castmode="actual")
    kinds = [
        torch.nn.Parameter(x.clone()),
        torch.nn.Parameter(x.clone(), requires_grad=False),
        torch.nn.Buffer(x.clone()),
        torch.Tensor._make_subclass(_Attributes, x.clone()),
    ]
    for t in kinds:
        for cast in CASTS:
            assert torch.equal(_bits(cast(t, name)), want_v), type(t)
            a = cast(t, name, castmode="actual")
            assert torch.equal(a.data.as_subclass(torch.Tensor), want_a.data), type(t)
            assert torch.equal(_bits(tcast_torch.upcast(a)), _bits(tcast_torch.upcast(want_a)))
    p = kinds[0]
    tcast_torch.cast(p, name).sum().backward()
    assert p.grad is not None and torch.equal(p.grad, torch.ones_like(x))  # straight through


def test_non_contiguous_views_and_tracing_stand_ins_are_taken():
    """Strided views of any strides; FakeTensors (torch.compile's and torch.export's inputs)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = _x()
    v = x.t()[:, ::2]
    assert torch.equal(
        _bits(tcast_torch.cast(v, "mxfp8")), _bits(tcast_torch.cast(v.contiguous(), "mxfp8"))
    )
    with FakeTensorMode() as mode:
        r = tcast_torch.cast(mode.from_tensor(x), "nvfp4", castmode="actual")
        assert r.data.shape == x.shape and r.scale.shape == (16, 2)


def test_export_and_functionalized_traces_run_the_cast():
    """torch.export (FakeTensor and FunctionalTensor inputs) gives the eager bits."""

    class Cast(torch.nn.Module):
        def forward(self, v):
            return tcast_torch.cast(v, "mxfp8", compile=False)

    x = _x()
    ep = torch.export.export(Cast(), (x,))
    assert torch.equal(_bits(ep.module()(x)), _bits(tcast_torch.cast(x, "mxfp8")))


@pytest.mark.filterwarnings("ignore:.*should not be instantiated:DeprecationWarning")
def test_parameter_casts_under_fullgraph_compile():
    """The refusal check of a subclass is a constant to dynamo: a module's weight (a
    Parameter) traces in one graph, through tcast_torch.cast and the front door."""
    lin = torch.nn.Linear(32, 8)

    def fn(v):
        w = tcast.cast(lin.weight, "mxfp8")
        return tcast_torch.cast(v, "mxfp8", compile=False) @ w.t()

    x = _x()
    torch._dynamo.reset()
    traced = torch.compile(fn, fullgraph=True, backend="eager")
    assert torch.equal(_bits(traced(x)), _bits(fn(x)))
