"""Repeated DTensor casts go through a call object (``toolkit.DTensorCall``) with the same results.

A DTensor cast whose plan makes no collective is served, from its first call on, by a call
object that casts the local shard and wraps the parts with specs made once. Its results must
be ``toolkit.cast_dtensor``'s part for part: the DTensor's placements, global shape and
strides, and the local tensors' bits and dtypes. Casts it does not take (a tensor that
requires grad, seeded rounding, another mesh) go the general way. Across processes (shards
of other offsets, cut tiles, collectives) ``test_triton_dtensor.py`` covers the same path.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.distributed as dist
from triton_checks import same_bytes

import tcast
import tcast_triton
from tcast_torch import toolkit
from tcast_triton._engine import TRITON_LOCAL, engine
from tcast_triton._launch import interpreting

DEVICE = "cpu" if interpreting() else "cuda"

# (datatype, cast arguments, whether a sharded cast's plan is local on a one-process mesh): a
# two-level cast reduces its tensor amax over the mesh (an all_reduce, even of one process);
# compress and blocked casts of a sharded tensor are laid out whole (gathered)
CASES = [
    ("mxfp8", {"castmode": "actual"}, True),
    ("mxfp8", {"castmode": "virtual"}, True),
    ("mxfp8", {"castmode": "actual", "scale_layout": "blocked"}, False),
    ("mxfp4", {"castmode": "compress"}, False),
    ("nvfp4", {"castmode": "actual"}, False),
    ("e4m3fn_float32", {"castmode": "actual"}, True),  # a tensor scale: no block is cut
    ("int8_float32_t0", {"castmode": "actual"}, True),  # channels
    ("uint4_e8m0_int8_t16", {"castmode": "actual"}, True),  # zero points
    ("mxfp8_2d", {"castmode": "actual", "transpose_scale": True}, True),
]


@pytest.fixture(scope="module")
def mesh(tmp_path_factory):
    """A world of one process and its 1-D mesh (gloo on the CPU, NCCL on a GPU)."""
    if not dist.is_available():
        pytest.skip("torch.distributed is not available in this torch build")
    from torch.distributed.device_mesh import init_device_mesh

    store = dist.FileStore(str(tmp_path_factory.mktemp("dist") / "store"), 1)
    if DEVICE == "cuda":
        dist.init_process_group(
            "nccl", store=store, rank=0, world_size=1, device_id=torch.device("cuda", 0)
        )
    else:
        dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        yield init_device_mesh(DEVICE, (1,))
    finally:
        dist.destroy_process_group()


@pytest.fixture
def served(monkeypatch):
    """The number of casts each call object served (by request), counted."""
    counts = {"calls": 0}
    call = toolkit.DTensorCall.__call__

    def counted(self, x):
        counts["calls"] += 1
        return call(self, x)

    monkeypatch.setattr(toolkit.DTensorCall, "__call__", counted)
    return counts


def _same_dtensor(got, want, what):
    assert type(got) is type(want), what
    assert got.placements == want.placements and got.device_mesh is want.device_mesh, what
    assert got.shape == want.shape and got.stride() == want.stride(), what
    assert got.dtype == want.dtype, what
    assert same_bytes(got.to_local(), want.to_local()), what


def _same_result(got, want, what):
    if isinstance(want, torch.Tensor):
        _same_dtensor(got, want, what)
        return
    for name in ("data", "scale", "zero", "tenscale", "mask", "meta"):
        g, w = getattr(got, name), getattr(want, name)
        assert (g is None) == (w is None), (what, name)
        if w is not None:
            _same_dtensor(g, w, (what, name))
    for name in ("dtype", "shape", "castmode", "input_dtype", "transpose_scale", "engine"):
        assert getattr(got, name) == getattr(want, name), (what, name)
    assert got.dtype.name == want.dtype.name and got.extra == want.extra, what
    assert got.scale_layout == want.scale_layout, what


@pytest.mark.parametrize(("code", "kw", "local"), CASES)
def test_repeated_dtensor_casts_take_the_call_object_and_give_the_general_result(
    mesh, served, code, kw, local
):
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    x = torch.randn(8, 64, generator=torch.Generator().manual_seed(5)).to(DEVICE)
    plain = tcast_triton.cast(x, code, **kw)
    for placements in ([Shard(0)], [Shard(1)], [Replicate()]):
        d = distribute_tensor(x, mesh, placements)
        req = engine.request(d, tcast.datatype(code), tcast.CastModes.of(**kw), None, None)
        want = toolkit.cast_dtensor(d, req, TRITON_LOCAL)
        before = served["calls"]
        for door in (tcast_triton.cast, tcast.cast):
            for _ in range(2):
                got = door(d, code, **kw)
                _same_result(got, want, (code, kw, placements, door.__module__))
        taken = local or placements == [Replicate()]
        assert served["calls"] == before + (4 if taken else 0), (code, placements)
        # one process holds the whole tensor: every part's local tensor is the plain cast's,
        # and a part is the DTensor of its own whole shape
        assert same_bytes(_local(want), plain), (code, kw, placements)
        for part in (want,) if isinstance(want, torch.Tensor) else _parts(want).values():
            assert part.shape == part.to_local().shape, (code, kw, placements)
        if kw["castmode"] != "virtual":
            assert same_bytes(_local(tcast_triton.upcast(want)), tcast_triton.upcast(plain))


def _parts(result) -> dict:
    names = ("data", "scale", "zero", "tenscale", "mask")
    return {n: a for n in names if (a := getattr(result, n)) is not None}


def _local(out):
    """A DTensor result with each part's local tensor in its place."""
    if isinstance(out, torch.Tensor):
        return out.to_local()
    return dataclasses.replace(out, **{n: a.to_local() for n, a in _parts(out).items()})


def test_a_held_request_refuses_a_dtensor_of_another_dtype_or_shape(mesh):
    from torch.distributed.tensor import Shard, distribute_tensor

    x = torch.randn(8, 64, generator=torch.Generator().manual_seed(7)).to(DEVICE)
    d = distribute_tensor(x, mesh, [Shard(0)])
    req = engine.request(d, tcast.datatype("mxfp8"), tcast.CastModes.of("actual"), None, None)
    engine.cast(d, req)  # makes the call object
    for other in (x.to(torch.bfloat16), x[:4]):
        o = distribute_tensor(other, mesh, [Shard(0)])
        with pytest.raises(tcast.SpecError):
            engine.cast(o, req)


def test_dtensor_casts_the_call_object_does_not_take_go_the_general_way(mesh, served):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    x = torch.randn(8, 64, generator=torch.Generator().manual_seed(6)).to(DEVICE)
    d = distribute_tensor(x, mesh, [Shard(0)])
    tcast_triton.cast(d, "mxfp8", castmode="actual")
    served["calls"] = 0
    # requires grad: the autograd path
    g = distribute_tensor(x.clone().requires_grad_(), mesh, [Shard(0)])
    out = tcast_triton.cast(g, "mxfp8")
    out.sum().backward()
    assert same_bytes(g.grad.to_local(), torch.ones_like(x))
    # seeded stochastic rounding: a request per seed
    for seed in (1, 2):
        want = tcast_triton.cast(x, "mxfp8", castmode="actual", roundmode="stochastic", seed=seed)
        got = tcast_triton.cast(d, "mxfp8", castmode="actual", roundmode="stochastic", seed=seed)
        assert same_bytes(got.data.to_local(), want.data), seed
    # another mesh of the same shape: a call object of its own
    other = init_device_mesh(DEVICE, (1,))
    e = distribute_tensor(x, other, [Shard(0)])
    assert tcast_triton.cast(e, "mxfp8", castmode="actual").data.device_mesh is other
    assert served["calls"] == 1  # the other mesh's, made by its first call


def test_repeated_dtensor_casts_skip_the_request_and_the_local_cast_layer(mesh, monkeypatch):
    """Host time: after the first calls, neither door makes a request or enters the local
    cast's general method; the shard goes straight to the local call object."""
    from torch.distributed.tensor import Shard, distribute_tensor

    x = torch.randn(8, 64, generator=torch.Generator().manual_seed(8)).to(DEVICE)
    d = distribute_tensor(x, mesh, [Shard(0)])
    doors = (
        lambda: tcast_triton.cast(d, "mxfp8", castmode="actual"),
        lambda: tcast.cast(d, "mxfp8", castmode="actual", engine="triton"),
    )
    want = [door() for door in doors for _ in range(2)][-1]

    def refuse(*args, **kwargs):
        raise AssertionError("a repeated DTensor cast took the general way")

    monkeypatch.setattr(type(engine), "request", refuse)
    monkeypatch.setattr(type(TRITON_LOCAL), "cast", refuse)
    for door in doors:
        _same_result(door(), want, "repeated")
    # a DTensor of other placements is not the call object's: it takes the general way
    e = distribute_tensor(x, mesh, [Shard(1)])
    with pytest.raises(AssertionError, match="general way"):
        tcast_triton.cast(e, "mxfp8", castmode="actual")


def test_a_first_shard_the_local_call_objects_do_not_take_leaves_later_ones_to_them(
    mesh, monkeypatch
):
    """A misaligned first shard is cast the general way; an aligned later one of the same
    kind still goes to the local cast's call object (asked again, not refused for good)."""
    from torch.distributed.tensor import DTensor, Shard

    x = torch.randn(8, 64, generator=torch.Generator().manual_seed(9)).to(DEVICE)
    buf = torch.empty(x.numel() + 1, dtype=x.dtype, device=DEVICE)
    buf[1:] = x.reshape(-1)
    odd = buf[1:].view(8, 64)  # 4 bytes past a 16-byte boundary
    assert odd.data_ptr() % 16 != 0
    first = tcast_triton.cast(DTensor.from_local(odd, mesh, [Shard(0)]), "mxfp8", castmode="actual")
    d = DTensor.from_local(x.clone(), mesh, [Shard(0)])
    want = tcast_triton.cast(d, "mxfp8", castmode="actual")
    _same_result(first, want, "misaligned first shard")

    def refuse(*args, **kwargs):
        raise AssertionError("a repeated DTensor cast took the general way")

    monkeypatch.setattr(type(TRITON_LOCAL), "cast", refuse)
    _same_result(tcast_triton.cast(d, "mxfp8", castmode="actual"), want, "aligned, repeated")
