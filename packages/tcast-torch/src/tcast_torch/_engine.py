"""The ``torch`` engine object registered under the ``tcast.engines`` entry-point group."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from tcast import CastModes, CastResult, DataType, Hadamard, SpecError
from tcast.kit import GIVEN_PARTS, CastRequest, CastRules, EngineBase, cast_rules

from . import _pickling  # noqa: F401  (registers how torch results pickle)
from ._accept import is_dtensor, resolved, tensor_refusal
from ._cast import run_cast
from ._given import check_given
from ._run import OPS, check_rbits, run_upcast
from ._shard_given import check_dtensor_given
from ._shards import (
    dtensor_refusal,
    dtensor_result,
    dual_dtensor,
    same_sharding,
    upcast_dtensor,
)
from ._transform import TORCH_TRANSFORMS, cast_transformed_grad

__all__ = ["TorchEngine", "engine"]


class TorchEngine(EngineBase):
    """The bit-exact PyTorch engine: everything SEMANTICS.md defines, on CPU and CUDA.

    The registered engine (``torch``) runs each cast as :func:`tcast_torch.cast` does by
    default (``compile=None``: the fast-path casts of CUDA tensors compiled, the rest eager).
    Its :attr:`variants` fix that choice, so that the conformance suite can check each way
    on its own: ``torch:eager`` (``compile=False``) and ``torch:compiled`` (``compile=True``:
    every cast that can be compiled; CPU casts with partial tiles stay eager, see
    ``tcast_torch._compiled.use_compiled``).

    Args:
        compile: the ``compile`` option of every cast this engine runs.
        name: the engine's name (``torch``, or ``torch:VARIANT`` for a variant).
    """

    priority = 0
    array_type = torch.Tensor
    array_what = "torch tensors"
    array_one = "a torch tensor"
    result_ops = OPS
    transforms = True
    given_scales = True

    def __init__(self, compile: bool | None = None, name: str = "torch") -> None:
        self.name = name
        self._compile = compile
        self._variants: dict[str, TorchEngine] | None = None

    @property
    def variants(self) -> dict[str, TorchEngine]:
        """``eager`` and ``compiled`` (of the registered engine; a variant has none)."""
        if self.name != "torch":
            return {}
        if self._variants is None:
            self._variants = {
                "eager": TorchEngine(False, "torch:eager"),
                "compiled": TorchEngine(True, "torch:compiled"),
            }
        return dict(self._variants)

    def rules(self, dtype: DataType, modes: CastModes) -> CastRules:
        """The kit's rules, not memoized while torch.compile traces (see ``cast_rules``)."""
        return cast_rules(dtype, modes.scalemode, remember=not torch.compiler.is_compiling())

    def refusal(self, a: torch.Tensor) -> str | None:
        """Dispatching subclasses, nested, sparse tensors; DTensors ``_shards`` cannot split."""
        if is_dtensor(a):
            return dtensor_refusal(a)
        return tensor_refusal(a)

    def check_rbits(self, x: Any, rbits: Any, width: int) -> torch.Tensor:
        """A ``width``-bit integer tensor of x's shape and device, as the codec's int32 words.

        ``width`` 8: torch.uint8 (or int8); 16: torch.uint16 (or int16) (SEMANTICS.md §3.3).
        For a DTensor ``x``: a DTensor of its mesh and placements, or a plain tensor of its
        whole shape; a DTensor ``rbits`` needs a DTensor ``x`` sharded alike. Bits with the
        negative bit are the bits of the negated values (``_accept.resolved``).
        """
        if isinstance(rbits, torch.Tensor):
            if rbits.dtype in (torch.int8, torch.int16, torch.uint8):
                rbits = resolved(rbits)  # no-op without the negative bit
            elif (
                rbits.dtype is torch.uint16
                and not torch.compiler.is_compiling()  # dynamo cannot trace is_neg
                and rbits.is_neg()
            ):
                # torch negates no uint16 tensor (nor copies one with the negative bit)
                raise SpecError(
                    "rbits is a torch.uint16 tensor with a pending negation (the negative "
                    "bit), which torch cannot apply to uint16; pass the negated bits as int16"
                )
        if is_dtensor(rbits) and not (is_dtensor(x) and same_sharding(x, rbits)):
            raise SpecError(
                "rbits is a DTensor: it must be sharded like x (a DTensor of the same mesh "
                "and placements), or be a plain tensor of x's whole shape"
            )
        return check_rbits(x, rbits, width)

    def check_given(self, x: Any, part: Any, name: str, *, signed: bool) -> torch.Tensor:
        """A given scale part as a float32 tensor on x's device (SEMANTICS.md §5.12).

        Plain tensors and numbers: ``_given.check_given``. For a DTensor ``x`` a part holds
        the whole scale array: a plain tensor (the same in every process), or a DTensor on
        x's mesh of any placements (``_shard_given.check_dtensor_given``, which agrees on
        the check across processes). Inside a torch.compile graph values are not checked:
        an unusable one makes its block non-finite (``_scale.unusable_given``).
        """
        if is_dtensor(part):
            return check_dtensor_given(x, part, name, signed=signed)
        return check_given(x, part, name, signed=signed)

    def check_array(self, a: Any, role: str) -> None:
        """``EngineBase.check_array``, but a DTensor given part may have any placements.

        The cast reads a given part's values, cut to each shard's blocks or gathered
        (``_shard_given``), never casts it by shards.
        """
        if role in GIVEN_PARTS and is_dtensor(a):
            return
        super().check_array(a, role)

    def cast_dual(
        self, x: Any, rows: CastRequest, cols: CastRequest, transposed: bool
    ) -> tuple[Any, Any]:
        """Two casts (``dual_by_casts``); a DTensor's by ``_shards.dual_dtensor``."""
        if is_dtensor(x):
            return dual_dtensor(self.cast, x, rows, cols, transposed)
        return super().cast_dual(x, rows, cols, transposed)

    def upcast(self, result: CastResult) -> torch.Tensor:
        """Decode a result; a DTensor cast's result (parts DTensors) to a DTensor.

        Raises:
            SpecError: as ``EngineBase.upcast``; a result mixing DTensor and plain parts.
            UnsupportedError: as ``EngineBase.upcast``.
        """
        if dtensor_result(result):
            return upcast_dtensor(result, super().upcast)
        return super().upcast(result)

    def holds_values(self, result: CastResult) -> bool:
        """False for a result on the meta device, whose codes cannot be read.

        Meta tensors have dtypes and shapes but no values: a result of meta tensors (a cast
        of a meta tensor) is checked as any other except for its codes, and its upcast is a
        float32 meta tensor.
        """
        return not _on_meta(result.data)

    def check_result_arrays(self, result: CastResult) -> None:
        """Every part on the device of ``data`` and with no pending negation.

        The kit checked dtypes and shapes. A part with the negative bit set
        (``_neg_view()``) is refused: codes are bit patterns, never negated, and torch
        negates no uint16/uint32 tensor.
        """
        device = result.data.device
        for part in _PARTS:
            arr = getattr(result, part)
            if arr is None:
                continue
            if arr.device != device:
                raise SpecError(
                    f"CastResult.{part} is on {arr.device}, CastResult.data on "
                    f"{device}: every part must be on one device"
                )
            if arr.is_neg():
                raise SpecError(
                    f"CastResult.{part} has a pending negation (the negative bit of "
                    f"_neg_view()): codes are bit patterns, not numbers to negate; pass the "
                    f"codes the cast returned"
                )

    def cast(self, x: Any, request: CastRequest) -> torch.Tensor | CastResult:
        """``EngineBase.cast``; with a transform, the straight-through gradient exactly."""
        if isinstance(request, CastRequest) and request.modes.transform is not None:
            self.check_request(x, request)
            return cast_transformed_grad(self, self.run, x, request, "ste")
        return super().cast(x, request)

    def run(self, x: torch.Tensor, request: CastRequest) -> torch.Tensor | CastResult:
        """The cast (straight-through gradient, this engine's ``compile``)."""
        out = run_cast(x, request, compile=self._compile)
        if isinstance(out, CastResult) and out.engine != self.name:
            # a variant's results name it, so that tcast.upcast comes back to it
            out = dataclasses.replace(out, engine=self.name)
        return out

    def run_upcast(self, result: CastResult) -> torch.Tensor:
        """The decode, by :func:`tcast_torch._run.run_upcast`."""
        return run_upcast(result)

    def hadamard(self, x: torch.Tensor, h: Hadamard, dim: int, inverse: bool) -> torch.Tensor:
        """:func:`tcast_torch.hadamard` (a cast's transform, SEMANTICS.md §5.11)."""
        return TORCH_TRANSFORMS.hadamard(x, h, dim, inverse)

    def round_to_input(self, v: torch.Tensor, input_dtype: str) -> torch.Tensor:
        """float32 values rounded to nearest even in the input dtype."""
        return TORCH_TRANSFORMS.round_to_input(v, input_dtype)

    def widen(self, v: torch.Tensor) -> torch.Tensor:
        """A tensor of an input dtype as float32."""
        return TORCH_TRANSFORMS.widen(v)

    def __repr__(self) -> str:
        if self.name == "torch":
            return "tcast_torch.engine"
        return f"tcast_torch.engine.variants[{self.name.partition(':')[2]!r}]"


#: The parts of a CastResult that hold tensors.
_PARTS = ("data", "scale", "zero", "tenscale", "mask")


def _on_meta(a: object) -> bool:
    """Whether ``a`` is a tensor on the meta device (dtype and shape, no values)."""
    return isinstance(a, torch.Tensor) and a.device.type == "meta"


#: The engine instance (the entry point loads this).
engine = TorchEngine()
