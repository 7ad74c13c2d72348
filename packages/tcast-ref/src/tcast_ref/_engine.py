"""The ``ref`` engine object registered under the ``tcast.engines`` entry-point group."""

from __future__ import annotations

import dataclasses
from typing import Any

import ml_dtypes
import numpy as np

from tcast import CastModes, CastResult, DataType, Hadamard
from tcast.kit import CastRequest, EngineBase, GivenScales

from ._accept import array_refusal, plain_array
from ._cast import OPS, check_rbits, run_cast, run_upcast
from ._given import check_given
from ._hadamard import hadamard

__all__ = ["RefEngine", "engine"]

#: The NumPy dtypes of the input dtypes narrower than float32.
_INPUT_DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
#: The array parts of a CastResult.
_PARTS = ("data", "scale", "zero", "tenscale", "mask", "meta")


class RefEngine(EngineBase):
    """The bit-exact NumPy reference engine: supports everything SEMANTICS.md defines."""

    name = "ref"
    priority = 0
    array_type = np.ndarray
    array_what = "NumPy arrays"
    array_one = "a NumPy array"
    result_ops = OPS
    subtiles_and_codebooks = True
    transforms = True
    given_scales = True

    def refusal(self, a: np.ndarray) -> str | None:
        """Masked arrays, matrices and subclasses with hooks of their own (``_accept``)."""
        return array_refusal(a)

    def request(
        self,
        x: Any,
        dtype: DataType,
        modes: CastModes,
        seed: int | None,
        rbits: Any,
        given: GivenScales | None = None,
    ) -> CastRequest:
        """``EngineBase.request`` of the plain array of ``x`` (``_accept.plain_array``)."""
        return super().request(plain_array(x), dtype, modes, seed, rbits, given)

    def cast(self, x: Any, request: CastRequest) -> np.ndarray | CastResult:
        """``EngineBase.cast`` of the plain array of ``x``.

        An accepted subclass casts as the array it holds, whatever methods it overrides.
        """
        return super().cast(plain_array(x), request)

    def upcast(self, result: CastResult) -> np.ndarray:
        """``EngineBase.upcast`` of the result with its parts as plain arrays."""
        if isinstance(result, CastResult):
            plain = {p: plain_array(getattr(result, p)) for p in _PARTS}
            if any(plain[p] is not getattr(result, p) for p in _PARTS):
                result = dataclasses.replace(result, **plain)
        return super().upcast(result)

    def check_rbits(self, x: Any, rbits: Any, width: int) -> np.ndarray:
        """A uint8 (``width`` 8) or uint16 (16) NumPy array of x's shape, as codec words.

        An accepted subclass as its plain array (``_cast.check_rbits``).
        """
        return check_rbits(x, plain_array(rbits), width)

    def check_given(self, x: Any, part: Any, name: str, *, signed: bool) -> np.ndarray:
        """A given part as a float32 array (``_given.check_given``; subclasses as plain)."""
        return check_given(
            plain_array(part) if isinstance(part, np.ndarray) else part, name, signed=signed
        )

    def run(self, x: np.ndarray, request: CastRequest) -> np.ndarray | CastResult:
        """The cast, by :func:`tcast_ref._cast.run_cast`."""
        return run_cast(x, request)

    def run_upcast(self, result: CastResult) -> np.ndarray:
        """The decode, by :func:`tcast_ref._cast.run_upcast`."""
        return run_upcast(result)

    def hadamard(self, x: np.ndarray, h: Hadamard, dim: int, inverse: bool) -> np.ndarray:
        """:func:`tcast_ref.hadamard` (SEMANTICS.md §5.10)."""
        return hadamard(x, h, dim, inverse)

    def round_to_input(self, v: np.ndarray, input_dtype: str) -> np.ndarray:
        """float32 values rounded to nearest even in the input dtype (NumPy's and ml_dtypes')."""
        if input_dtype == "float32":
            return v
        with np.errstate(over="ignore"):  # IEEE overflow to Inf is the rule (§9)
            return v.astype(_INPUT_DTYPES[input_dtype])

    def widen(self, v: np.ndarray) -> np.ndarray:
        """An array of an input dtype as float32 (exact)."""
        return v.astype(np.float32)

    def __repr__(self) -> str:
        return "tcast_ref.engine"


#: The engine instance (the entry point loads this).
engine = RefEngine()
