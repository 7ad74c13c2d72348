"""The toolkit for engines that cast torch tensors: what ``tcast_torch`` does around the kernels.

An engine with its own kernels for torch tensors (``tcast_triton``, or a third party's) needs
more than the kernels: the arguments accepted and refused as every engine does, gradients,
DTensors, ``torch.compile`` and result assembly. This module is that plumbing, public and
stable across ``tcast_torch`` releases of one minor version; an engine built on it gives the
same bits, gradients and errors as ``tcast_torch`` wherever it reuses these pieces.
docs/engines.md builds a GPU engine from them step by step.

Argument acceptance
    :func:`tensor_refusal` (sparse, nested and dispatching tensors, with the conversion to
    apply), :func:`is_dtensor`, :func:`resolved` (a pending negation applied),
    :func:`check_run_options` (the ``grad`` option).

Straight-through autograd
    :func:`virtual_with_grad` wraps an engine's values of a virtual cast in the gradient
    ``tcast_torch`` defines (``"ste"`` or ``"saturate"``, :data:`GRAD_MODES`).

DTensor sharding
    :func:`cast_dtensor`, :func:`dual_dtensor` and :func:`upcast_dtensor` do the sharding
    (windows, collectives, placements) and call the engine's :class:`LocalCast` for the
    array work on one process's window; :data:`TORCH_LOCAL` is the torch engine's, which an
    engine may delegate to (:func:`given_rows` turns reduced :class:`BlockStats` into the
    rows the saturate gradient reads). :func:`dtensor_refusal` and :func:`dtensor_result`
    answer the engine's refusal and upcast questions. :class:`DTensorCalls` keeps a
    :class:`DTensorCall` per kind of repeated cast whose plan makes no collective: it does
    only the local cast and the wrapping of its parts (``cast_dtensor``'s results).

Registration for ``torch.compile``
    :class:`CastOps` registers ``<namespace>::cast`` and ``<namespace>::cast_dual`` custom
    ops with fake implementations, so that a compiled graph holds one node per cast and no
    graph break (given scale parts are optional tensor inputs of both); with
    ``triton=True`` the cast op is a ``torch.library.triton_op`` whose Triton kernels
    Inductor sees and compiles with the rest of the graph, launched through
    ``torch.library.wrap_triton`` while :func:`traced_launches` says so.
    :func:`modes_text`, :func:`modes_of`, :func:`seed_arg`, :func:`seed_of` encode their
    arguments.

Transforms
    :data:`TORCH_TRANSFORMS` (a :class:`TorchTransformOps`): the Hadamard transform, its
    inverse and the rounding to an input dtype on torch tensors, the steps an engine that
    sets ``transforms`` supplies to ``tcast.kit.cast_transformed`` (SEMANTICS.md §5.11);
    :func:`cast_transformed_grad` composes it with a virtual cast's gradient option.

Results and packing
    :data:`TORCH_OPS` (a :class:`TorchResultOps`) is the kit's ``ArrayOps`` on torch
    tensors (``tcast.kit.build_result``): subclass it to pack with your own kernels;
    :func:`~tcast_torch.pack_codes` and friends are the byte layout of SEMANTICS.md §8.
    :data:`PARTS` names a result's tensors in the order the ops return them.

The torch engine itself is :data:`tcast_torch.engine`: an engine may fall back to it for the
requests its kernels do not cover (``engine.run(x, request)``, the same bits).
"""

from ._accept import is_dtensor, resolved, tensor_refusal
from ._autograd import GRAD_MODES, virtual_with_grad
from ._cast import check_run_options
from ._compile_ops import (
    PARTS,
    CastOps,
    EagerEngine,
    modes_of,
    modes_text,
    seed_arg,
    seed_of,
    traced_launches,
)
from ._dtensor_calls import DTensorCall, DTensorCalls
from ._local import TORCH_LOCAL, given_rows
from ._run import OPS as TORCH_OPS
from ._run import TorchResultOps
from ._shards import (
    BlockStats,
    LocalCast,
    cast_dtensor,
    dtensor_refusal,
    dtensor_result,
    dual_dtensor,
    upcast_dtensor,
)
from ._transform import TORCH_TRANSFORMS, TorchTransformOps, cast_transformed_grad

__all__ = [
    "GRAD_MODES",
    "PARTS",
    "TORCH_LOCAL",
    "TORCH_OPS",
    "TORCH_TRANSFORMS",
    "BlockStats",
    "CastOps",
    "DTensorCall",
    "DTensorCalls",
    "EagerEngine",
    "LocalCast",
    "TorchResultOps",
    "TorchTransformOps",
    "cast_dtensor",
    "cast_transformed_grad",
    "check_run_options",
    "dtensor_refusal",
    "dtensor_result",
    "dual_dtensor",
    "given_rows",
    "is_dtensor",
    "modes_of",
    "modes_text",
    "resolved",
    "seed_arg",
    "seed_of",
    "tensor_refusal",
    "traced_launches",
    "upcast_dtensor",
    "virtual_with_grad",
]
