"""One process of the DTensor tests (test_torch_dtensor.py): every case of one world size.

Run as ``python dtensor_worker.py RANK WORLD STORE OUT [GROUPS] [--engine triton]
[--device cuda] [--backend nccl] [--part J/K]``: joins a process group (gloo by default)
through a FileStore, then for every case casts a DTensor and compares, as raw bits, the
``full_tensor()`` of every part of the result (and of its upcast) with the cast of the whole
tensor in this one process by the same engine (its ordinary path, eager for the torch engine
on CUDA, judged against the reference by the conformance suite). Each rank writes
``{"checked": N, "failures": [...]}`` to OUT.RANK as JSON. The ``given`` group (casts with
given scale parts) casts by the torch engine whatever ``--engine`` says and compares with
``tcast_ref``'s cast of the whole tensor.

``--engine triton`` casts by ``tcast_triton`` (the Triton engine's DTensor path; CPU tensors
under ``TRITON_INTERPRET=1``); ``--device cuda`` holds the tensors on the GPU (with gloo,
several processes may share one GPU: gloo reduces CUDA tensors, and the tests' own scatters,
gathers and redistributions go through a CPU mesh of the same processes). Gloo gathers no
CUDA tensors (its all_gather segfaults), so with gloo on CUDA the cases whose cast itself
gathers the whole tensor (sparsity groups cut by a shard boundary) are left to NCCL
(``--backend nccl``, one GPU per process) and to the CPU runs.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import torch.distributed as dist

import tcast
import tcast_ref
import tcast_torch
from tcast import UnsupportedError
from tcast_ref import conformance as cb

PARTS = ("data", "scale", "zero", "tenscale", "mask")
#: The engine under test and where the tensors live (set by main).
E = SimpleNamespace(
    cast=tcast_torch.cast,
    cast_dual=tcast_torch.cast_dual,
    upcast=tcast_torch.upcast,
    device=torch.device("cpu"),
    cpu_meshes={},
)
INPUT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
#: The groups of cases, in the order a run without GROUPS takes them.
GROUPS = (
    "placements",
    "conformance",
    "communication",
    "refusals",
    "dual",
    "layouts",
    "views",
    "gradients",
    "fsdp",
    "given",
)


def bits(t: torch.Tensor) -> torch.Tensor:
    """Raw bits of a plain tensor, as a signed integer tensor of the same width."""
    if t.dtype == torch.bool:
        return t.to(torch.int8)
    width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.detach().contiguous().view(width)


def on_cpu_mesh(t):
    """A DTensor on a CPU mesh of the same processes (gloo scatters and gathers no CUDA
    tensors); ``t`` itself on the CPU."""
    from torch.distributed.tensor import DTensor

    cpu = E.cpu_meshes.get(tuple(t.device_mesh.shape))
    if t.device.type == "cpu" or cpu is None:
        return t
    return DTensor.from_local(
        t.to_local().cpu(), cpu, t.placements, run_check=False, shape=t.shape, stride=t.stride()
    )


def gathers_cuda() -> bool:
    """Whether casts may gather the whole of a CUDA DTensor (not with gloo: see above)."""
    return not E.cpu_meshes


def redistribute(t, placements):
    """``t.redistribute(placements=...)``, through the CPU mesh when gloo holds CUDA tensors."""
    from torch.distributed.tensor import DTensor

    c = on_cpu_mesh(t)
    if c is t:
        return t.redistribute(placements=placements)
    moved = c.redistribute(placements=placements)
    return DTensor.from_local(
        moved.to_local().to(t.device),
        t.device_mesh,
        moved.placements,
        run_check=False,
        shape=t.shape,
        stride=t.stride(),
    )


def full(t):
    """The whole tensor of a DTensor (gloo gathers no 16-bit integers and no uint32)."""
    from torch.distributed.tensor import DTensor

    if not isinstance(t, DTensor):
        return t
    if t.device.type != "cpu" and E.cpu_meshes:
        return full(on_cpu_mesh(t)).to(t.device)
    signed = {torch.uint16: torch.int16, torch.uint32: torch.int32}.get(t.dtype)
    if signed is None:
        return t.full_tensor()
    local = t.to_local().view(signed).to(torch.int32)  # 16-bit codes widened, sign-extended
    wide = DTensor.from_local(local, t.device_mesh, t.placements, shape=t.shape, stride=t.stride())
    return wide.full_tensor().to(signed).view(t.dtype)


def inputs(shape: tuple[int, ...], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """A finite input of varied magnitudes, and one with NaN, Inf, zero rows, subnormals."""
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(shape, generator=g)
    x = x * torch.exp2(torch.randint(-6, 7, (shape[0],) + (1,) * (len(shape) - 1), generator=g))
    edge = x.clone()
    edge[1] = 0.0
    edge[2, 3] = float("nan")
    edge[3, -5] = float("-inf")
    edge[4, : shape[-1] // 2] *= 2.0**-140  # float32 subnormals (16-bit inputs: zeros)
    return {"finite": x.to(E.device, dtype), "edge": edge.to(E.device, dtype)}


class Checker:
    def __init__(self, rank: int):
        self.rank = rank
        self.checked = 0
        self.failures: list[str] = []

    def equal(self, what: str, got, want) -> None:
        self.checked += 1
        if got is None or want is None:
            if got is not want:
                self.failures.append(f"{what}: one side is None")
            return
        got, want = full(got), full(want)
        if tuple(got.shape) != tuple(want.shape) or got.dtype != want.dtype:
            self.failures.append(
                f"{what}: {tuple(got.shape)} {got.dtype} != {tuple(want.shape)} {want.dtype}"
            )
        elif not torch.equal(bits(got), bits(want)):
            n = int((bits(got) != bits(want)).sum())
            self.failures.append(f"{what}: {n} elements differ")

    def result(self, what: str, got, want) -> None:
        """:meth:`equal` of a virtual cast's tensor, or of every part of a CastResult."""
        if isinstance(want, torch.Tensor):
            self.equal(what, got, want)
            return
        for part in PARTS:
            self.equal(f"{what} {part}", getattr(got, part), getattr(want, part))

    def fail(self, what: str, why: str) -> None:
        self.failures.append(f"{what}: {why}")


def distribute(x: torch.Tensor, mesh, placements):
    from torch.distributed.tensor import DTensor, distribute_tensor

    cpu = E.cpu_meshes.get(tuple(mesh.shape))
    if x.device.type == "cpu" or cpu is None:
        return distribute_tensor(x, mesh, placements)
    d = distribute_tensor(x.cpu(), cpu, placements)
    return DTensor.from_local(
        d.to_local().to(x.device),
        mesh,
        placements,
        run_check=False,
        shape=x.shape,
        stride=x.stride(),
    )


def check_cast(chk: Checker, name: str, x, mesh, placements, dt, castmode, cast, **kw) -> None:
    """One DTensor cast against the cast of the whole tensor (and its upcast)."""
    from torch.distributed.tensor import DTensor

    d = distribute(x, mesh, placements)
    rbits = kw.pop("rbits", None)
    # explicit K-bit bits (uint8/int8 or uint16/int16) as a DTensor sharded like x, or a
    # plain whole tensor
    rbits_kind = kw.pop("rbits_kind", "sharded")
    want = E.cast(x, dt, castmode=castmode, rbits=rbits, **kw)
    if rbits is not None and rbits_kind != "plain":
        # gloo scatters no 16-bit integers: the bits scattered as int32 values in [0, 2**K),
        # each shard narrowed back to rbits' dtype
        unsigned = {torch.int8: torch.uint8, torch.int16: torch.uint16}.get(rbits.dtype)
        wide = rbits.view(unsigned).to(torch.int32) if unsigned else rbits.to(torch.int32)
        wide = distribute(wide, mesh, placements)
        local = wide.to_local().to(unsigned or rbits.dtype)
        rbits = DTensor.from_local(
            local.view(rbits.dtype) if unsigned else local,
            mesh,
            wide.placements,
            shape=wide.shape,
            stride=wide.stride(),
        )
    got = cast(d, dt, castmode=castmode, rbits=rbits, **kw)
    if castmode == "virtual":
        if not isinstance(got, DTensor) or tuple(got.placements) != tuple(d.placements):
            where = getattr(got, "placements", "")
            chk.fail(name, f"virtual result is {type(got).__name__} {where}")
        chk.equal(name, got, want)
        return
    for part in PARTS:
        g, w = getattr(got, part), getattr(want, part)
        if g is not None and not isinstance(g, DTensor):
            chk.fail(f"{name} {part}", f"a {type(g).__name__}, not a DTensor")
        chk.equal(f"{name} {part}", g, w)
    # a compress stream is the whole tensor's, in every process (SEMANTICS.md §9.1)
    from torch.distributed.tensor import Replicate

    every = (Replicate(),) * len(d.placements)
    want_pl = every if castmode == "compress" else tuple(d.placements)
    if tuple(got.data.placements) != want_pl:
        chk.fail(name, f"data placements {got.data.placements}")
    if kw.get("scale_layout") == "blocked" and any(p.is_shard() for p in d.placements):
        if tuple(got.scale.placements) != every:  # blocked scales: whole, replicated
            chk.fail(name, f"blocked scale placements {got.scale.placements}")
    chk.equal(f"{name} upcast", tcast.upcast(got), E.upcast(want))


def conformance_sample(chk: Checker, mesh, world: int, part: tuple[int, int] = (0, 1)) -> None:
    """The smoke tier's cases (every axis value of the conformance space) on Shard(0),
    Shard(1) and Shard(-1)-of-3-D placements, virtual and actual, two inputs.

    ``part`` ``(j, k)`` takes the cases whose index is j modulo k (each case's placement,
    input dtype and front door still follow its index in the whole sample), so that k
    worlds can share the sample.
    """
    from torch.distributed.tensor import Replicate, Shard

    cases = cb.smoke_cases(cb.pairwise_cases(list(tcast.conformance_space())))
    # subtile metadata and codebooks: the reference engine's only (the torch engine refuses)
    cases = [c for c in cases if not (c.dtype.has_meta or c.dtype.nspec.is_codebook)]
    placements = [[Shard(0)], [Shard(1)]]
    j, k = part
    for i, case in enumerate(cases):
        if i % k != j:
            continue
        dt = case.dtype
        idt = INPUT_DTYPES[i % 3]
        shape = (10, 72)
        xs = inputs(shape, idt)
        kw = dict(
            roundmode=case.roundmode,
            scalemode=case.scalemode,
            # scaled casts always saturate: False there only warns (SEMANTICS.md §5.2)
            saturate=case.saturate or dt.sspec is not None,
            transpose_scale=case.transpose_scale,
        )
        pl = placements[i % 2] if i % 7 else [Replicate()]
        for which, x in xs.items():
            if i % 2 and which == "edge":
                continue
            for castmode in ("virtual", "actual"):
                args = dict(kw)
                if case.rsource == "seed":
                    args["seed"] = 1000 + i
                elif case.rsource == "rbits":
                    # K-bit integers (SEMANTICS.md §3.3), unsigned or the same bits signed
                    g = torch.Generator().manual_seed(i)
                    width = tcast.rbits_width(dt)
                    r = torch.randint(0, 1 << width, shape, dtype=torch.int32, generator=g)
                    unsigned = r.to(torch.uint8 if width == 8 else torch.uint16)
                    signed = unsigned.view(torch.int8 if width == 8 else torch.int16)
                    args["rbits"] = (unsigned, signed, unsigned)[i % 3].to(E.device)
                    args["rbits_kind"] = ("plain", "sharded", "sharded")[i % 3]
                cast = tcast.cast if i % 2 else E.cast
                name = f"{dt.name or dt.code} {which} {idt} {pl} {castmode} {case.label}"
                try:
                    check_cast(chk, name, x, mesh, pl, dt, castmode, cast, **args)
                except Exception:
                    chk.fail(name, traceback.format_exc(limit=4))


def placements_and_scales(chk: Checker, mesh, world: int, mesh2, lean: bool = False) -> None:
    """Every placement kind against the scale kinds: tiles (aligned, cut), channels,
    tensor scales, two-level (NVFP4), 2-D tiles, uneven shards, a 3-D Shard(-1), 2-D mesh.

    ``lean`` (an engine whose casts are slow here, e.g. Triton's interpreter): every scale
    kind with Shard(0) on the uneven rows, Shard(-1) and Replicate on the cut tiles (the
    aligned shape and Shard(1), the same placement as Shard(-1) on a 2-D tensor, are left
    out)."""
    from torch.distributed.tensor import Replicate, Shard

    dtypes = [
        "mxfp8",
        "mxfp4",
        "mxint8",
        "nvfp4",
        "float8_e4m3fn",
        "e4m3fn_float32",  # tensor scale
        "int8_float32_t0",  # channel along the last dimension
        "int8_float32_t0d0",  # channel along the first
        "uint8_float32_uint8_t0",  # zero points, channel
        "uint4_e8m0_int8_t16",
        "mxfp8_2d",
        "e2m1f_e4m3fn_float32_t16_t16",
        "e4m3fn_e8m0_t32n2m4",  # sparsity
    ]
    shapes = [((6, 64), "uneven rows"), ((8, 96), "cut tiles"), ((8, 128), "aligned")]
    placements = [[Shard(0)], [Shard(1)], [Shard(-1)], [Replicate()]]
    pairs = [(sh, pl) for sh in shapes for pl in placements]
    if lean:  # rows cut unevenly by Shard(0); tiles cut by Shard(-1), and whole
        pairs = [(shapes[0], placements[0])] + [(shapes[1], pl) for pl in placements[2:]]
    for dt in dtypes:
        for (shape, what), pl in pairs:
            x = inputs(shape, torch.float32)["finite"]
            for castmode in ("virtual", "actual"):
                name = f"{dt} {shape} {what} {pl} {castmode}"
                try:
                    check_cast(chk, name, x, mesh, pl, dt, castmode, E.cast)
                except Exception:
                    chk.fail(name, traceback.format_exc(limit=4))
    x3 = inputs((5, 6, 40), torch.bfloat16)["finite"]
    for dt in ("mxfp4", "nvfp4", "int8_float32_t0", "e4m3fn_float32"):
        for pl in ([Shard(-1)], [Shard(1)]):
            name = f"{dt} 3-D {pl} seeded"
            try:
                check_cast(
                    chk,
                    name,
                    x3,
                    mesh,
                    pl,
                    dt,
                    "virtual",
                    E.cast,
                    roundmode="stochastic",
                    seed=77,
                )
                check_cast(chk, name + " actual", x3, mesh, pl, dt, "actual", E.cast)
            except Exception:
                chk.fail(name, traceback.format_exc(limit=4))
    # stream 1 (a dual cast's column stream), K = 8 and 16: a run of flat indices (Shard(0))
    # and the per-index bits of a cut window (Shard(-1))
    for dt in ("mxfp4", "bfloat16_e8m0_t32"):
        for pl in ([Shard(0)], [Shard(-1)]):
            name = f"{dt} 3-D {pl} seeded stream 1"
            try:
                check_cast(
                    chk,
                    name,
                    x3,
                    mesh,
                    pl,
                    dt,
                    "virtual",
                    E.cast,
                    roundmode="stochastic",
                    seed=77,
                    stream=1,
                )
            except Exception:
                chk.fail(name, traceback.format_exc(limit=4))
    if mesh2 is not None:
        x = inputs((10, 72), torch.float32)["finite"]
        for dt in ("mxfp8", "nvfp4", "mxfp8_2d", "int8_float32_t0", "e4m3fn_float32"):
            for pl in ([Shard(0), Shard(1)], [Replicate(), Shard(1)], [Shard(1), Replicate()]):
                for castmode in ("virtual", "actual"):
                    name = f"{dt} 2-D mesh {pl} {castmode}"
                    try:
                        check_cast(
                            chk,
                            name,
                            x,
                            mesh2,
                            pl,
                            dt,
                            castmode,
                            E.cast,
                            roundmode="stochastic",
                            seed=5,
                        )
                    except Exception:
                        chk.fail(name, traceback.format_exc(limit=4))


def communication(chk: Checker, mesh, mesh2) -> None:
    """What communicates when (the package README's table): all_reduce calls per cast."""
    from torch.distributed.tensor import Replicate, Shard

    calls = []
    real = dist.all_reduce

    def counting(*args, **kwargs):
        calls.append(kwargs.get("group"))
        return real(*args, **kwargs)

    x128 = inputs((8, 128), torch.float32)["finite"]
    x96 = inputs((8, 96), torch.float32)["finite"]
    x72 = inputs((10, 72), torch.float32)["finite"]
    x90 = inputs((8, 90), torch.float32)["finite"]
    cases = [  # (input, mesh, placements, datatype, extra, virtual, actual, upcast calls)
        (x128, mesh, [Shard(0)], "mxfp8", {}, 0, 0, 0),  # rows are separate blocks
        (x128, mesh, [Shard(1)], "mxfp8", {}, 0, 0, 0),  # shards of whole tiles
        (x128, mesh, [Replicate()], "nvfp4", {}, 0, 0, 0),
        (x96, mesh, [Shard(1)], "float8_e4m3fn", {"roundmode": "stochastic", "seed": 3}, 0, 0, 0),
        (x96, mesh, [Shard(1)], "mxfp8", {}, 1, 2, 0),  # cut tiles; their scales gathered
        (x128, mesh, [Shard(0)], "nvfp4", {}, 1, 1, 0),  # the tensor amax
        (x128, mesh, [Shard(0)], "e4m3fn_float32", {}, 1, 1, 0),  # a tensor scale
        (x96, mesh, [Shard(1)], "int8_float32_t0", {}, 1, 2, 0),  # a channel along the shards
        (x96, mesh, [Shard(0)], "int8_float32_t0", {}, 0, 0, 0),
        # zero points: the range in one all_reduce; scale and zero codes gathered apart
        (x96, mesh, [Shard(1)], "uint8_float32_uint8_t0", {}, 1, 3, 0),
        (x72, mesh, [Shard(1)], "uint4_e8m0_int8_t16", {}, 1, 3, 0),
        # sparsity groups cut (90 columns): the refusal flag's all_reduce, then full_tensor()
        # gathers (not counted); an actual cast gathers its scale codes, its upcast gathers
        # every part after the flag's all_reduce
        (x90, mesh, [Shard(1)], "e4m3fn_e8m0_t32n2m4", {}, 1, 2, 1),
    ]
    if not gathers_cuda():
        cases = [c for c in cases if c[0] is not x90]
    if mesh2 is not None:
        cases += [
            (x72, mesh2, [Shard(0), Shard(1)], "mxfp8", {}, 1, 2, 0),
            # the tensor amax along both mesh dimensions, scale codes along the columns' only
            (x72, mesh2, [Shard(0), Shard(1)], "nvfp4", {}, 2, 3, 0),
            # 16 x 16 tiles cut along both: statistics and scale codes along each
            (x72, mesh2, [Shard(0), Shard(1)], "e4m3fn_float32_t16_t16", {}, 2, 4, 0),
        ]
    dist.all_reduce = counting
    try:
        for x, m, pl, dt, kw, n_virtual, n_actual, n_upcast in cases:
            for castmode, want in (("virtual", n_virtual), ("actual", n_actual)):
                d = distribute(x, m, pl)
                calls.clear()
                got = E.cast(d, dt, castmode=castmode, **kw)
                chk.checked += 1
                if len(calls) != want:
                    chk.fail(f"all_reduce calls {dt} {pl} {castmode}", f"{len(calls)} != {want}")
                if castmode == "actual":
                    calls.clear()
                    tcast.upcast(got)
                    chk.checked += 1
                    if len(calls) != n_upcast:
                        chk.fail(
                            f"all_reduce calls {dt} {pl} upcast", f"{len(calls)} != {n_upcast}"
                        )
    finally:
        dist.all_reduce = real


def refusals(chk: Checker, mesh, mesh2) -> None:
    """Compress of sharded tensors, blocked scales, Partial: UnsupportedError naming why."""
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

    x = inputs((8, 64), torch.float32)["finite"]
    d = distribute(x, mesh, [Shard(0)])
    p = DTensor.from_local(x, mesh, [Partial()], run_check=False)
    chk.checked += 1
    try:
        E.cast(p, "mxfp8")
        chk.fail("Partial", "no error")
    except UnsupportedError as e:
        if "Partial" not in str(e):
            chk.fail("Partial", str(e))
    if mesh2 is not None:
        chk.checked += 1
        try:
            E.cast(distribute(x, mesh2, [Shard(0), Shard(0)]), "mxfp8")
            chk.fail("Shard(0) twice", "no error")
        except UnsupportedError as e:
            if "sharded twice along dimension 0" not in str(e):
                chk.fail("Shard(0) twice", str(e))
    # parts placed otherwise than the cast places them: SpecError naming the part, never
    # wrong values or a torch error (a Shard(1) scale is Replicate with 4 processes, whose
    # 16 columns cut the 32-element tiles, and Shard(1) with 2)
    import dataclasses

    got = E.cast(distribute(x, mesh, [Shard(1)]), "mxfp8", castmode="actual")
    moved = [Replicate()] if got.scale.placements[0].is_shard() else [Shard(1)]
    sparse = E.cast(d, "e4m3fn_e8m0_t32n2m4", castmode="actual")
    for name, bad in (
        ("scale", dataclasses.replace(got, scale=redistribute(got.scale, moved))),
        (
            "mask",
            dataclasses.replace(sparse, mask=redistribute(sparse.mask, [Replicate()])),
        ),
    ):
        chk.checked += 1
        try:
            tcast.upcast(bad)
            chk.fail(f"misplaced {name}", "no error")
        except tcast.SpecError as e:
            if f"CastResult.{name} is placed" not in str(e) or "redistribute" not in str(e):
                chk.fail(f"misplaced {name}", str(e))
        except Exception as e:
            chk.fail(f"misplaced {name}", f"{type(e).__name__}: {e}")
    # local shards not of DTensor's split (from_local), known to some processes only: every
    # process raises the same UnsupportedError, none waits in a collective for the others
    # (nvfp4: the tensor amax's all_reduce, also with stochastic rounding; 66 columns cut by
    # 17: sparsity groups cut, the full_tensor() path)
    world = mesh.size()
    seeded = {"roundmode": "stochastic", "seed": 3}
    one_wrong = (2, 2, 2, 1) if world == 4 else (4, 3)  # the last process's alone
    whole = [{"castmode": "compress"}, {"scale_layout": "blocked"}] if gathers_cuda() else []
    for dt, dim, shape, sizes, kw in (
        ("nvfp4", 0, (8, 64), (3, 1, 2, 2) if world == 4 else (5, 3), {}),
        ("nvfp4", 0, (8, 64), (1, 3, 2, 2) if world == 4 else (3, 5), seeded),
        # no collective in the cast itself, then the whole tensor's layout gathers
        *(("mxfp8", 0, (8, 64), one_wrong, k) for k in whole),
        ("e4m3fn", 0, (8, 64), one_wrong, {"castmode": "compress"}),
        ("e4m3fn_e8m0_t32n2m4", 1, (8, 66), (18, 16, 16, 16) if world == 4 else (34, 32), {}),
    )[: None if gathers_cuda() else 2]:
        w = inputs(shape, torch.float32)["finite"]
        start = sum(sizes[: dist.get_rank()])
        own = w.narrow(dim, start, sizes[dist.get_rank()])
        bad = DTensor.from_local(
            own, mesh, [Shard(dim)], run_check=False, shape=w.shape, stride=w.stride()
        )
        chk.checked += 1
        try:
            E.cast(bad, dt, **{"castmode": "actual", **kw})
            chk.fail(f"misshapen shards {sizes} {dt} {kw}", "no error")
        except UnsupportedError as e:
            if "has another shape than DTensor's Shard split" not in str(e):
                chk.fail(f"misshapen shards {sizes} {dt}", str(e))
        except Exception as e:
            chk.fail(f"misshapen shards {sizes} {dt}", f"{type(e).__name__}: {e}")
    # a torch whose DTensor split differed from tcast's (chunk_starts made to differ): every
    # process raises, none computes windows at the wrong places
    from tcast_torch import _shards

    real_starts = _shards.chunk_starts
    _shards._SPECS.clear()  # the specs computed with the real split are cached
    _shards.chunk_starts = lambda size, parts: tuple(min(k * 3, size) for k in range(parts))
    chk.checked += 1
    try:
        E.cast(distribute(x, mesh, [Shard(0)]), "nvfp4")
        chk.fail("another split", "no error")
    except UnsupportedError as e:
        if "lies elsewhere than tcast's split" not in str(e):
            chk.fail("another split", str(e))
    except Exception as e:
        chk.fail("another split", f"{type(e).__name__}: {e}")
    finally:
        _shards.chunk_starts = real_starts
        _shards._SPECS.clear()
    # a replicated DTensor compresses: the whole tensor is in every process
    r = distribute(x, mesh, [Replicate()])
    got = tcast.cast(r, "mxfp4", castmode="compress")
    want = E.cast(x, "mxfp4", castmode="compress")
    chk.equal("replicated compress data", got.data, want.data)
    chk.equal("replicated compress upcast", tcast.upcast(got), E.upcast(want))


def whole_layouts(chk: Checker, mesh, mesh2) -> None:
    """Compress casts and blocked scales of sharded tensors: the whole tensor's layouts.

    Packed streams of 4-, 6- and 16-bit codes (uneven shards, cut tiles, zero points, a
    tensor scale, a sparsity mask, a 2 x 2 mesh) and blocked scales (rows past one 128-row
    block; MX and NVFP4), each gathered part against the single-process cast, and upcasts.
    """
    from torch.distributed.tensor import Shard

    cases = [
        ("mxfp4", (6, 64)),
        ("mxfp4", (8, 96)),
        ("e3m2f_e8m0_t32", (8, 96)),
        ("bfloat16_e8m0_t32", (6, 64)),
        ("uint4_e8m0_int8_t16", (8, 48)),
        ("nvfp4", (8, 64)),
        ("e4m3fn_float32", (6, 20)),
        ("e4m3fn_e8m0_t32n2m4", (8, 64)),
        ("int8_float32_t0", (8, 40)),
    ]
    for dt, shape in cases:
        x = inputs(shape, torch.bfloat16)["edge"]
        for pl in ([Shard(0)], [Shard(1)]):
            name = f"{dt} {shape} {pl} compress"
            try:
                check_cast(
                    chk, name, x, mesh, pl, dt, "compress", E.cast, roundmode="stochastic", seed=21
                )
            except Exception:
                chk.fail(name, traceback.format_exc(limit=4))
    for dt, shape in (("mxfp8", (130, 96)), ("mxfp4", (8, 64)), ("nvfp4", (200, 48))):
        x = inputs(shape, torch.float32)["finite"]
        for castmode in ("actual", "compress"):
            for pl in ([Shard(0)], [Shard(1)]):
                name = f"{dt} {shape} {pl} {castmode} blocked"
                try:
                    check_cast(chk, name, x, mesh, pl, dt, castmode, E.cast, scale_layout="blocked")
                except Exception:
                    chk.fail(name, traceback.format_exc(limit=4))
    if mesh2 is not None:
        x = inputs((10, 72), torch.float32)["finite"]
        for dt, kw in (("mxfp4", {}), ("nvfp4", {"scale_layout": "blocked"})):
            for castmode in ("actual", "compress"):
                if castmode == "actual" and not kw:
                    continue
                name = f"{dt} 2-D mesh {castmode} {kw}"
                try:
                    check_cast(
                        chk, name, x, mesh2, [Shard(0), Shard(1)], dt, castmode, E.cast, **kw
                    )
                except Exception:
                    chk.fail(name, traceback.format_exc(limit=4))


def dual(chk: Checker, mesh) -> None:
    """tcast.cast_dual of a DTensor: both results, plain and transposed, as the whole's.

    Every part, the results' datatype, shape and layout, and their upcasts; compress and
    blocked results too (their layouts gathered whole), through ``tcast.cast_dual`` and the
    engine's own ``cast_dual``.
    """
    from torch.distributed.tensor import Shard

    x = inputs((8, 96), torch.float32)["finite"]
    modes = [("actual", {}), ("virtual", {})]
    if gathers_cuda():
        modes += [("compress", {}), ("actual", {"scale_layout": "blocked"})]
    k = 0
    for dt in ("mxfp8", "nvfp4"):
        for pl in ([Shard(0)], [Shard(1)]):
            d = distribute(x, mesh, pl)
            for transposed in (False, True):
                for castmode, kw in modes:
                    k += 1
                    name = f"dual {dt} {pl} transposed={transposed} {castmode} {kw}"
                    dual_api = tcast.cast_dual if k % 2 else E.cast_dual
                    try:
                        got = dual_api(d, dt, castmode=castmode, transposed=transposed, **kw)
                        want = E.cast_dual(x, dt, castmode=castmode, transposed=transposed, **kw)
                        for j, (g, w) in enumerate(zip(got, want, strict=True)):
                            chk.result(f"{name} [{j}]", g, w)
                            if castmode == "virtual":
                                continue
                            meta = ("dtype", "shape", "castmode", "scale_layout")
                            if any(getattr(g, m) != getattr(w, m) for m in meta):
                                chk.fail(f"{name} [{j}]", "datatype, shape or layout differ")
                            chk.equal(f"{name} [{j}] upcast", tcast.upcast(g), E.upcast(w))
                    except Exception:
                        chk.fail(name, traceback.format_exc(limit=4))


def views(chk: Checker, mesh) -> None:
    """A transposed DTensor (non-contiguous shards, Shard(1) of a Shard(0)) casts like the
    transposed tensor."""
    from torch.distributed.tensor import Shard

    x = inputs((12, 80), torch.bfloat16)["finite"]
    d = distribute(x, mesh, [Shard(0)]).t()
    for dt in ("mxfp8", "nvfp4", "int8_float32_t0d0"):
        for castmode in ("virtual", "actual"):
            got = E.cast(d, dt, castmode=castmode, roundmode="stochastic", seed=11)
            want = E.cast(x.t(), dt, castmode=castmode, roundmode="stochastic", seed=11)
            chk.result(f"transposed {dt} {castmode}", got, want)


def gradients(chk: Checker, mesh) -> None:
    """Virtual casts of a DTensor that requires grad: the single-process gradients."""
    from torch.distributed.tensor import Shard

    finite = inputs((8, 96), torch.float32)["edge"].nan_to_num(0.0, 0.0, 0.0) * 1e3
    edge = inputs((8, 96), torch.float32)["edge"] * 1e3  # NaN and -Inf: the saturate mask
    for grad, dt, x in (
        *(("ste", dt, finite) for dt in ("mxfp4", "nvfp4", "uint8_float32_uint8_t0")),
        *(("saturate", dt, finite) for dt in ("mxfp4", "nvfp4", "uint8_float32_uint8_t0")),
        ("saturate", "uint8_float32_uint8_t0", edge),
        ("saturate", "uint4_e8m0_int8_t16", edge),
        ("saturate", "mxfp4", edge),
    ):
        ref = x.clone().requires_grad_(True)
        (E.cast(ref, dt, grad=grad) * torch.arange(96.0, device=E.device)).sum().backward()
        d = distribute(x.clone(), mesh, [Shard(1)]).requires_grad_(True)
        y = E.cast(d, dt, grad=grad)
        (full(y) * torch.arange(96.0, device=E.device)).sum().backward()
        chk.equal(f"grad {grad} {dt}", d.grad, ref.grad)


def fsdp_step(chk: Checker, mesh, world: int) -> None:
    """quantize_model, then fully_shard: one SGD step equals the single-process step.

    Every process takes the same batch: FSDP2 all-gathers the whole weights before the
    forward (the weight casts see plain tensors, the single-process ones), so each process's
    gradient is the single-process gradient g, bit for bit. FSDP2 reduce-scatters them with
    AVG (float32): with 2 processes g + g = 2g; with 4 in any order of additions the partial
    sums are exact, fl(fl(3g) + g) included (for a 24-bit significand m, 3m rounds by at most
    2 units of 4m's last place, and where it is exactly 2 (3m = 2 mod 4) m is even, so the
    tie goes back to 4m); the division by a power of two is exact. Data-parallel batches
    (a different batch per process) would sum other addends than the single-process
    backward's and cannot be compared bit for bit.
    """
    from torch.distributed.fsdp import fully_shard

    def model():
        torch.manual_seed(3)
        seq = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16))
        return seq.to(E.device)  # made on the CPU first: the same weights on every device

    rules = [
        tcast_torch.QuantRule("0", weight="mxfp4", input="mxfp8"),
        tcast_torch.QuantRule("2", weight="nvfp4", input="mxfp8", roundmode="stochastic", seed=9),
    ]
    x = inputs((8, 64), torch.float32)["finite"]
    ref = model()
    tcast_torch.quantize_model(ref, rules)
    sharded = model()
    tcast_torch.quantize_model(sharded, rules)
    fully_shard(sharded, mesh=mesh)
    losses = []
    for m in (ref, sharded):
        opt = torch.optim.SGD(m.parameters(), lr=0.01)
        loss = m(x).square().mean()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    chk.equal("fsdp loss", losses[1], losses[0])
    for (n, p), (_, q) in zip(sharded.named_parameters(), ref.named_parameters(), strict=True):
        chk.equal(f"fsdp updated {n}", p.detach(), q.detach())
    with torch.no_grad():
        chk.equal("fsdp next forward", sharded(x), ref(x))
    late = model()
    fully_shard(late, mesh=mesh)
    chk.checked += 1
    try:
        tcast_torch.quantize_model(late, rules)
        chk.fail("quantize_model after fully_shard", "no error")
    except UnsupportedError as e:
        if "then fully_shard" not in str(e):
            chk.fail("quantize_model after fully_shard", str(e))


def _given_values(dt: tcast.DataType, shape: tuple[int, ...], parts: tuple[str, ...]) -> dict:
    """Given parts over ``shape`` as NumPy arrays: block i's scale 1.25 * 2**(i % 7 - 3)."""
    import numpy as np

    sshape = tcast.block_layout(shape, dt).scale_shape
    i = np.arange(int(np.prod(sshape)))
    out = {}
    if "scale" in parts:
        out["scale"] = (np.exp2(i % 7 - 3) * 1.25).astype(np.float32).reshape(sshape)
    if "zero" in parts:
        out["zero"] = (i % 5 - 1).astype(np.float32).reshape(sshape)
    if "tensor_scale" in parts:
        out["tensor_scale"] = np.float32(0.375)
    return out


def _check_against_ref(chk: Checker, name: str, got, x: torch.Tensor, dt, castmode, given):
    """Every part of a DTensor cast against tcast_ref's cast of the whole tensor, as bits."""
    xn = x.cpu().numpy()
    want = tcast_ref.cast(xn, dt, castmode=castmode, **given)
    if castmode == "virtual":
        chk.equal(name, got, torch.from_numpy(want.view(np.int32)).view(torch.float32))
        return
    for part in ("data", "scale", "zero", "tenscale"):
        w = getattr(want, part)
        g = getattr(got, part)
        chk.checked += 1
        if (w is None) != (g is None):
            chk.fail(f"{name} {part}", "one side is None")
        elif w is not None and not np.array_equal(
            np.asarray(full(g).cpu().numpy(), np.int64), np.asarray(w, np.int64)
        ):
            chk.fail(f"{name} {part}", "codes differ from tcast_ref's")
    values = torch.from_numpy(tcast_ref.upcast(want).view(np.int32)).view(torch.float32)
    chk.equal(f"{name} upcast", tcast.upcast(got), values)


def given_scales(chk: Checker, mesh, world: int, mesh2) -> None:
    """Casts of DTensors with given scale parts (SEMANTICS.md §5.12) against tcast_ref's cast
    of the whole tensor with the same parts.

    The torch engine's (the one engine that takes given parts), whatever ``--engine`` says.
    Parts as plain tensors of the whole scale array and as DTensors placed as the cast's
    scales, replicated, sharded otherwise (gathered; not with gloo on CUDA, whose all_gather
    of CUDA tensors segfaults) and Partial; tiles cut by a shard boundary (both processes use
    the whole array's value of a shared block; NaN and Inf inputs keep their blocks
    non-finite), channels and tensor scales along the sharded dimension, zero points, a
    given tensor scale (no tensor amax reduced: the all_reduce counts), sparsity groups cut
    (the whole tensor cast), compress casts, a 2 x 2 mesh, ``cast_dual``; a refused value in
    one process's shard raises the same SpecError in every process; gradients.
    """
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

    cases = [  # (datatype, shape, parts given, placements of x, mesh)
        ("mxfp8", (8, 96), ("scale",), [Shard(1)], mesh),
        ("mxfp8", (6, 64), ("scale",), [Shard(0)], mesh),
        ("nvfp4", (8, 64), ("scale", "tensor_scale"), [Shard(1)], mesh),
        ("nvfp4", (8, 64), ("tensor_scale",), [Shard(1)], mesh),
        ("uint4_e8m0_int8_t16", (8, 72), ("scale", "zero"), [Shard(1)], mesh),
        ("uint8_float32_uint8_t0", (6, 40), ("zero",), [Shard(1)], mesh),
        ("e4m3fn_float32", (6, 20), ("scale",), [Shard(0)], mesh),
        ("e2m1f_e4m3fn_float32_t16_t16", (20, 40), ("scale",), [Shard(1)], mesh),
    ]
    if gathers_cuda():
        cases.append(("e4m3fn_e8m0_t32n2m4", (8, 90), ("scale",), [Shard(1)], mesh))
    if mesh2 is not None:
        cases += [
            ("mxfp8", (10, 72), ("scale",), [Shard(0), Shard(1)], mesh2),
            ("nvfp4", (10, 72), ("scale", "tensor_scale"), [Replicate(), Shard(1)], mesh2),
        ]
    for k, (code, shape, parts, pl, m) in enumerate(cases):
        dt = tcast.datatype(code)
        # NaN and Inf (and a NaN beside the middle column, in a tile that two processes
        # share), except where they would make every block NaN (a tensor amax)
        edge = not dt.is_multiscale or "tensor_scale" in parts
        x = inputs(shape, torch.float32)["edge" if edge else "finite"]
        if edge:
            x[0, shape[-1] // 2 - 1] = float("nan")
        d = distribute(x, m, pl)
        given = _given_values(dt, shape, parts)
        plain = {n: torch.from_numpy(np.asarray(v)).to(E.device) for n, v in given.items()}
        # the placements of the cast's own scales (a previous cast's, delayed scaling)
        scale_pl = tcast_torch.cast(d, dt, castmode="actual").scale.placements
        kinds = {"plain": plain}
        every = [Replicate()] * len(pl)
        other = Shard(1) if scale_pl[0] == Shard(0) else Shard(0)
        others = [("sharded otherwise", [other, *every[1:]])] if gathers_cuda() else []
        for what, placements in (("as the scales", scale_pl), ("replicated", every), *others):
            kinds[f"DTensor {what}"] = {
                n: distribute(v, m, placements if v.ndim else every) for n, v in plain.items()
            }
        # partial sums over the first mesh dimension (exact: halves or quarters)
        kinds["Partial"] = {
            n: DTensor.from_local(v / m.size(0), m, [Partial(), *every[1:]], run_check=False)
            for n, v in plain.items()
        }
        for j, (kind, parts_t) in enumerate(kinds.items()):
            castmode = ("virtual", "actual")[j % 2]
            if kind == "plain" and k % 3 == 0:
                castmode = "compress"
            name = f"given {code} {shape} {pl} {list(parts)} {kind} {castmode}"
            try:
                got = tcast_torch.cast(d, dt, castmode=castmode, **parts_t)
                _check_against_ref(chk, name, got, x, dt, castmode, given)
            except Exception:
                chk.fail(name, traceback.format_exc(limit=4))
    _given_dual(chk, mesh)
    _given_collectives(chk, mesh)
    _given_refusals(chk, mesh, mesh2)
    _given_gradients(chk, mesh)


def _given_dual(chk: Checker, mesh) -> None:
    """cast_dual of a DTensor with each result's given scales (the second's laid out for xᵀ,
    one a DTensor): each result is tcast_ref's cast with its parts (the second transposed)."""
    from torch.distributed.tensor import Shard

    x = inputs((8, 96), torch.float32)["edge"]
    d = distribute(x, mesh, [Shard(1)])
    rows = tcast.datatype("mxfp8")
    cols = tcast.kit.column_datatype(rows)
    row = _given_values(rows, (8, 96), ("scale",))["scale"]
    col = _given_values(cols, (8, 96), ("scale",))["scale"]  # (1, 96): for x's columns
    row_t = torch.from_numpy(row).to(E.device)
    col_t = distribute(torch.from_numpy(col.T.copy()).to(E.device), mesh, [Shard(0)])
    name = "given dual transposed"
    try:
        first, second = tcast_torch.cast_dual(
            d, rows, castmode="actual", transposed=True, row_scale=row_t, column_scale=col_t
        )
        _check_against_ref(chk, f"{name} rows", first, x, rows, "actual", {"scale": row})
        want = tcast_ref.cast(x.cpu().numpy(), cols, castmode="actual", scale=col)
        for part in ("data", "scale"):
            chk.checked += 1
            got = np.asarray(full(getattr(second, part)).cpu().numpy(), np.int64)
            if not np.array_equal(got, np.asarray(getattr(want, part), np.int64).T):
                chk.fail(f"{name} columns {part}", "codes differ from tcast_ref's")
    except Exception:
        chk.fail(name, traceback.format_exc(limit=4))


def _given_collectives(chk: Checker, mesh) -> None:
    """A given tensor scale leaves no tensor amax to reduce; a sharded DTensor part's check
    agrees across processes in one all_reduce; a plain part's makes none."""
    from torch.distributed.tensor import Shard

    x = inputs((8, 64), torch.float32)["finite"]
    d = distribute(x, mesh, [Shard(0)])
    t = torch.tensor(0.5, device=E.device)
    s = torch.full((8, 4), 0.25, device=E.device)
    sharded = distribute(s, mesh, [Shard(0)])
    calls = []
    real = dist.all_reduce

    def counting(*args, **kwargs):
        calls.append(kwargs.get("group"))
        return real(*args, **kwargs)

    dist.all_reduce = counting
    try:
        for what, kw, want in (
            ("nvfp4 tensor scale given", {"tensor_scale": t}, 0),
            ("nvfp4 scale given", {"scale": s}, 1),  # the tensor amax
            ("nvfp4 both given, DTensor scale", {"tensor_scale": t, "scale": sharded}, 1),
        ):
            for castmode in ("virtual", "actual"):
                calls.clear()
                tcast_torch.cast(d, "nvfp4", castmode=castmode, **kw)
                chk.checked += 1
                if len(calls) != want:
                    chk.fail(f"all_reduce calls {what} {castmode}", f"{len(calls)} != {want}")
    finally:
        dist.all_reduce = real


def _given_refusals(chk: Checker, mesh, mesh2) -> None:
    """A NaN in one process's shard of a DTensor scale: the same SpecError, naming its index
    in the whole array, in every process; a DTensor part of a plain x, or on another mesh."""
    from torch.distributed.tensor import Shard

    x = inputs((8, 64), torch.float32)["finite"]
    d = distribute(x, mesh, [Shard(0)])
    s = torch.full((8, 2), 0.5, device=E.device)
    s[7, 1] = float("nan")  # in the last process's shard
    bad = [
        ("NaN in one shard", d, distribute(s, mesh, [Shard(0)]), r"scale\[7, 1\] is nan"),
        ("plain x", x, distribute(s, mesh, [Shard(0)]), "x a plain tensor"),
    ]
    if mesh2 is not None:
        bad.append(("another mesh", d, distribute(s, mesh2, [Shard(0), Shard(1)]), "another mesh"))
    for what, xx, part, match in bad:
        chk.checked += 1
        try:
            tcast_torch.cast(xx, "mxfp8", scale=part)
            chk.fail(f"given refusal {what}", "no error")
        except tcast.SpecError as e:
            if not re.search(match, str(e)):
                chk.fail(f"given refusal {what}", str(e))


def _given_gradients(chk: Checker, mesh) -> None:
    """A virtual cast with a given scale of a DTensor that requires grad: the single-process
    gradients (``saturate``: zero where the given scale makes the cast clip)."""
    from torch.distributed.tensor import Shard

    x = inputs((8, 96), torch.float32)["edge"].nan_to_num(0.0, 0.0, 0.0) * 1e3
    s = torch.full((8, 3), 2.0, device=E.device)
    for grad in ("ste", "saturate"):
        ref = x.clone().requires_grad_(True)
        w = torch.arange(96.0, device=E.device)
        (tcast_torch.cast(ref, "mxfp4", grad=grad, scale=s) * w).sum().backward()
        d = distribute(x.clone(), mesh, [Shard(1)]).requires_grad_(True)
        y = tcast_torch.cast(d, "mxfp4", grad=grad, scale=distribute(s, mesh, [Shard(1)]))
        (full(y) * w).sum().backward()
        chk.equal(f"given grad {grad}", d.grad, ref.grad)


def run_world(world: int, tmp: Path, *options: str, timeout: float = 400) -> list[dict]:
    """Run ``world`` worker processes with ``options``; their reports, or AssertionError.

    A hang (a process waiting for a collective its peers never join) fails after
    ``timeout`` seconds with every worker's log; so does a crash, with its log.
    """
    store, out = tmp / "store", tmp / "out"
    logs = [open(tmp / f"log.{r}", "w") for r in range(world)]
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, str(r), str(world), str(store), str(out), *options],
            stdout=logs[r],
            stderr=subprocess.STDOUT,
        )
        for r in range(world)
    ]
    deadline = time.monotonic() + timeout
    hung = False
    try:
        # a process that failed leaves its peers waiting in a collective: they are stopped
        # a few seconds after it (its log says why), not at the deadline
        while any(p.poll() is None for p in procs):
            if time.monotonic() > deadline:
                hung = True
                break
            if any(p.returncode for p in procs):
                time.sleep(5)
                break
            time.sleep(0.05)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for f in logs:
            f.close()
    if hung:  # the workers' logs say where each one waited
        tails = [f"process {r}:\n{(tmp / f'log.{r}').read_text()[-3000:]}" for r in range(world)]
        raise AssertionError(f"the workers did not finish in {timeout} s\n" + "\n".join(tails))
    # the processes that failed on their own first (the others were stopped after them)
    for r in sorted(range(world), key=lambda r: procs[r].returncode <= 0):
        log = (tmp / f"log.{r}").read_text()[-4000:]
        code = procs[r].returncode
        assert code == 0, f"process {r} failed (exit status {code}):\n{log}"
    reports = []
    for r in range(world):
        result = out.with_name(f"out.{r}")
        assert result.exists(), f"process {r} wrote no report"
        reports.append(json.loads(result.read_text()))
    return reports


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("rank", type=int)
    ap.add_argument("world", type=int)
    ap.add_argument("store")
    ap.add_argument("out")
    ap.add_argument("groups", nargs="?", default="")
    ap.add_argument("--engine", choices=("torch", "triton"), default="torch")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--backend", choices=("gloo", "nccl"), default="gloo")
    ap.add_argument("--part", default="0/1", help="J/K: the conformance sample's cases J mod K")
    ap.add_argument("--lean", action="store_true", help="fewer shapes and placements (see above)")
    a = ap.parse_args()
    j, _, k = a.part.partition("/")
    part = (int(j), int(k))
    rank, world, store, out = a.rank, a.world, a.store, a.out
    warnings.simplefilter("error")
    # the GPU machine's torch warns of its own torch.jit.script_method when torch.compile runs
    warnings.filterwarnings("ignore", message=".*script_method", category=DeprecationWarning)
    if a.engine == "triton":
        import tcast_triton

        E.cast, E.cast_dual = tcast_triton.cast, tcast_triton.cast_dual
        E.upcast = tcast_triton.upcast
    elif a.device == "cuda":
        # A DTensor is cast eagerly whatever ``compile`` says; the whole-tensor cast it is
        # compared with runs eagerly too: compiling it (the default for CUDA fast-path casts,
        # seconds per datatype and modes) would cost minutes over the conformance sample,
        # and its bits are the eager ones (the package's CUDA conformance runs).
        E.cast = functools.partial(tcast_torch.cast, compile=False)
        E.cast_dual = functools.partial(tcast_torch.cast_dual, compile=False)
    if a.device == "cuda":
        index = rank % torch.cuda.device_count()
        torch.cuda.set_device(index)
        E.device = torch.device("cuda", index)
    # NCCL is told its process's GPU (else its barrier warns, an error here)
    device_id = E.device if a.backend == "nccl" else None
    dist.init_process_group(
        a.backend,
        store=dist.FileStore(store, world),
        rank=rank,
        world_size=world,
        device_id=device_id,
    )
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh(a.device, (world,))
    mesh2 = init_device_mesh(a.device, (2, world // 2)) if world == 4 else None
    if a.device == "cuda" and a.backend == "gloo":
        E.cpu_meshes[(world,)] = init_device_mesh("cpu", (world,))
        if mesh2 is not None:
            E.cpu_meshes[(2, world // 2)] = init_device_mesh("cpu", (2, world // 2))
    chk = Checker(rank)
    groups = {
        "placements": lambda: placements_and_scales(chk, mesh, world, mesh2, a.lean),
        "conformance": lambda: conformance_sample(chk, mesh, world, part),
        "communication": lambda: communication(chk, mesh, mesh2),
        "refusals": lambda: refusals(chk, mesh, mesh2),
        "dual": lambda: dual(chk, mesh),
        "layouts": lambda: whole_layouts(chk, mesh, mesh2),
        "views": lambda: views(chk, mesh),
        "gradients": lambda: gradients(chk, mesh),
        "fsdp": lambda: fsdp_step(chk, mesh, world),
        "given": lambda: given_scales(chk, mesh, world, mesh2),
    }
    assert tuple(groups) == GROUPS  # the bench's list of groups is this one
    only = a.groups.split(",") if a.groups else list(groups)
    try:
        for name in only:
            start = time.monotonic()
            groups[name]()
            # in the log, which a hang's report shows
            print(f"{name}: {chk.checked} checks, {time.monotonic() - start:.1f} s", flush=True)
    except Exception:
        chk.fail("worker", traceback.format_exc())
    with open(f"{out}.{rank}", "w") as f:
        json.dump({"checked": chk.checked, "failures": chk.failures}, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
