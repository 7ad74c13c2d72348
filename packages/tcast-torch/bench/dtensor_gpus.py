"""DTensor casts on several GPUs over NCCL (not a test): bits, then timing.

Spawns one process per GPU (a FileStore in a temporary folder), distributes bfloat16 tensors
over a 1-D CUDA mesh and casts them with each engine of ``--engines`` (``triton``, the
default of ``tcast.cast`` for CUDA tensors, and ``torch:eager``; DTensor casts run eagerly):

1. bits: ``full_tensor()`` of every result part against the eager torch engine's cast of the
   whole tensor on one GPU, raw bits, for MXFP8 / MXFP4 / NVFP4, ``Shard(0)``,
   ``Shard(1)``, ``Replicate()``, virtual and actual, whole and uneven shapes;
2. timing: the sharded actual cast of a ``--rows`` x ``--size`` tensor (``Shard(0)``;
   MXFP8 also ``Shard(1)``) against the same engine's cast of one shard as a plain tensor
   on one GPU (the target: within 5% where nothing communicates; NVFP4 all-reduces its
   tensor amax). A fixed number of iterations timed with CUDA events, the same on every
   process (a collective in the cast must be entered by all).

``--world 1`` runs on one GPU: a mesh of one process (the shard is the whole tensor; NCCL's
all_reduce of one rank), which measures what the DTensor path itself costs beside the cast
(host work, the statistics pass) without a peer.

    python packages/tcast-torch/bench/dtensor_gpus.py [--world 2] [--size 16384] [--iters 50]
"""

from __future__ import annotations

import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

CODES = ("mxfp8", "mxfp4", "nvfp4")
PARTS = ("data", "scale", "zero", "tenscale", "mask")


def _bits(t: torch.Tensor) -> torch.Tensor:
    t = t.contiguous()
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.view(view) if t.dtype != torch.bool else t


def _whole(t):
    from torch.distributed.tensor import DTensor

    return t.full_tensor() if isinstance(t, DTensor) else t


def _same(got, want) -> bool:
    if isinstance(want, torch.Tensor):
        return torch.equal(_bits(_whole(got)), _bits(want))
    for n in PARTS:
        g, w = getattr(got, n), getattr(want, n)
        if (g is None) != (w is None):
            return False
        if w is not None and not torch.equal(_bits(_whole(g)), _bits(w)):
            return False
    return True


def _ms(fn, iters: int) -> float:
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def _worker(
    rank: int, world: int, store: str, rows: int, size: int, iters: int, engines: list[str]
) -> None:
    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl",
        store=dist.FileStore(store, world),
        rank=rank,
        world_size=world,
        device_id=torch.device("cuda", rank),
    )
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    import tcast

    mesh = init_device_mesh("cuda", (world,))
    g = torch.Generator().manual_seed(0)
    bad, checked = [], 0
    for shape in ((1024, 2048), (1000, 1030)):
        scale = torch.exp2(torch.randint(-8, 8, (shape[0], 1), generator=g).float())
        x = (torch.randn(shape, generator=g) * scale).to(torch.bfloat16).cuda()
        for code in CODES:
            for cm in ("virtual", "actual"):
                want = tcast.cast(x, code, castmode=cm, engine="torch:eager")
                for pl in (Shard(0), Shard(1), Replicate()):
                    for eng in engines:
                        d = distribute_tensor(x, mesh, [pl])
                        got = tcast.cast(d, code, castmode=cm, engine=eng)
                        checked += 1
                        if not _same(got, want):
                            bad.append(f"{eng} {code} {cm} {pl} {shape}")
    if rank == 0:
        print(f"bits: {checked} casts per process, {len(bad)} differ: {bad[:10]}", flush=True)
    x = torch.randn(rows, size, device="cuda", dtype=torch.bfloat16)
    table = []
    for code, pl in (("mxfp8", Shard(0)), ("mxfp8", Shard(1)), ("nvfp4", Shard(0))):
        d = distribute_tensor(x, mesh, [pl])
        local = d.to_local().clone()
        for eng in engines:

            def cast(t, c=code, e=eng):
                return tcast.cast(t, c, castmode="actual", engine=e)

            sharded = _ms(lambda f=cast, t=d: f(t), iters)
            one = _ms(lambda f=cast, t=local: f(t), iters)
            table.append((eng, code, pl, tuple(local.shape), sharded, one))
    if rank == 0:
        name = torch.cuda.get_device_name()
        print(f"\n{world} x {name}, {rows} x {size} bfloat16, actual, {iters} iters, CUDA events")
        print("| engine | datatype | placement | shard | sharded cast ms | one shard ms | ratio |")
        print("|---|---|---|---|---:|---:|---:|")
        for eng, code, pl, shard, s, o in table:
            print(f"| {eng} | {code} | {pl} | {shard} | {s:.3f} | {o:.3f} | {s / o:.3f} |")
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    """Spawn the processes and run both parts."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=torch.cuda.device_count())
    ap.add_argument("--size", type=int, default=16384, help="columns")
    ap.add_argument("--rows", type=int, default=0, help="rows (default: --size)")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--engines", default="triton,torch:eager")
    a = ap.parse_args()
    if a.world < 1 or a.world > torch.cuda.device_count():
        raise SystemExit(f"--world {a.world}: needs 1..{torch.cuda.device_count()} GPUs")
    engines = a.engines.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        args = (a.world, store, a.rows or a.size, a.size, a.iters, engines)
        mp.spawn(_worker, args=args, nprocs=a.world, join=True)


if __name__ == "__main__":
    main()
