"""Scale codes between the plain and the blocked layout (SEMANTICS.md §8.1), for any engine.

The layout itself is :class:`tcast.BlockedScales` (pure shape arithmetic); here it is
applied with an engine's :class:`~tcast.kit.ArrayOps` (``permute``, ``pad``, ``crop``,
``reshape``), so that every engine built on the kit stores and reads blocked scales the same
way. An engine whose kernel writes the blocked layout itself passes ``scale_blocked=True``
to :func:`~tcast.kit.build_result`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..engine import CastResult
from ..errors import UnsupportedError
from ..layout import BlockedScales, block_layout, blocked_scales
from ..modes import ScaleLayout

__all__ = ["from_blocked", "plain_result", "require_ops", "to_blocked"]


def require_ops(ops: Any, names: tuple[str, ...], what: str) -> None:
    """Refuse an engine whose ArrayOps lack methods ``what`` needs (engines written before).

    Raises:
        UnsupportedError: naming the missing methods.
    """
    missing = [n for n in names if not hasattr(ops, n)]
    if missing:
        raise UnsupportedError(
            f"{what} needs the tcast.kit.ArrayOps methods {', '.join(names)}; this engine's "
            f"result_ops lacks {', '.join(missing)}"
        )


def to_blocked(scale: Any, bs: BlockedScales, ops: Any) -> Any:
    """Plain scale codes (the scale shape) in the blocked layout, zero-padded."""
    require_ops(ops, ("permute", "pad", "reshape"), "scale_layout='blocked'")
    m = ops.reshape(ops.permute(scale, bs.order), (bs.rows, bs.cols))
    m = ops.pad(m, bs.shape)
    return ops.reshape(ops.permute(ops.reshape(m, bs.view), bs.swizzle), bs.shape)


def from_blocked(blocked: Any, bs: BlockedScales, ops: Any) -> Any:
    """Blocked scale codes back in the plain scale shape (the padding dropped)."""
    require_ops(ops, ("permute", "crop", "reshape"), "an upcast of blocked scales")
    m = ops.reshape(ops.permute(ops.reshape(blocked, bs.blocked_view), bs.swizzle), bs.shape)
    m = ops.crop(m, (bs.rows, bs.cols))
    return ops.permute(ops.reshape(m, bs.moved_shape), bs.inverse_order)


def plain_result(result: CastResult, ops: Any) -> CastResult:
    """A checked result with its scale and zero-point codes in the plain layout.

    A plain result is returned as it is; a blocked one is copied with its scale and zero
    moved back (the padding codes are not read: §8.1).
    """
    if result.scale_layout is not ScaleLayout.BLOCKED:
        return result
    shape = tuple(result.shape)
    bs = blocked_scales(block_layout(shape, result.dtype, result.transpose_scale), result.dtype)
    zero = None if result.zero is None else from_blocked(result.zero, bs, ops)
    return dataclasses.replace(
        result,
        scale=from_blocked(result.scale, bs, ops),
        zero=zero,
        scale_layout=ScaleLayout.PLAIN,
    )
