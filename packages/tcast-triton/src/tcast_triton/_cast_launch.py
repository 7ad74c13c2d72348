"""The launch of one cast: the 1-D tile launcher (``_launch``) or the N-d one (``_launch_2d``).

Both launchers share the plans, limits and result assembly of ``_launch``; this module,
above both, picks one per request.
"""

from __future__ import annotations

import torch

from tcast import CastResult, DataType
from tcast.kit import CastRequest

from ._env import INTERPRETING, quiet_numpy
from ._launch import bits_of, run_cast_1d, uses_nd
from ._launch_2d import nd_supported, run_cast_nd

__all__ = ["run_cast", "tiled_supported"]


def tiled_supported(dt: DataType) -> bool:
    """Whether the kernels cast this scaled datatype.

    At most one dense tile segment (``_cast_tiles``), or two segments or sparsity
    (``_launch_2d``); no subtiles (codebooks).
    """
    ss = dt.sspec
    return ss is None or (len(ss.tiles) <= 1 and not ss.is_sparse) or nd_supported(dt)


def run_cast(
    x: torch.Tensor, req: CastRequest, given: torch.Tensor | None = None
) -> torch.Tensor | CastResult | None:
    """The cast of a checked request on a CUDA tensor (or a CPU one under the interpreter).

    ``given``: block statistics from elsewhere (a DTensor shard's window, ``_local``), an
    int32 buffer: ``[tensor maxima (3)]`` replaces the tensor-amax pass (two-level and
    tensor scales); ``[3 + 3 * tiles]`` (as ``_launch.tile_stats`` writes it, the first three
    as before) replaces every tile's statistics too (not for ``_launch.uses_nd`` requests).

    None (nothing launched) when a kernel would need more than ``_launch.MAX_PROGRAMS`` programs.
    """
    xc = x.contiguous()
    xin = bits_of(xc)
    # 2-D tiles and sparsity: the N-d kernel
    launch = run_cast_nd if uses_nd(req) else run_cast_1d
    if INTERPRETING:
        with quiet_numpy():
            return launch(xc, xin, req, given)
    return launch(xc, xin, req, given)
