"""The engine protocol, engine discovery and the result of a non-virtual cast.

An engine is any object implementing :class:`Engine`, published under the
``tcast.engines`` entry-point group (the entry point loads either the engine or
a zero-argument factory that returns it)::

    [project.entry-points."tcast.engines"]
    ref = "tcast_ref:engine"

A third-party engine registers the same way and is then reached by
:func:`tcast.cast` and tested by the conformance suite with no edit to tcast.
Engines validate ``seed``/``rbits`` with :func:`tcast.check_random_source` and
take their bits from the Philox stream of :func:`tcast.random_bits`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from .datatype import DataType
from .errors import SpecError
from .layout import block_layout
from .modes import CastMode, RoundMode, ScaleMode, cast_mode, round_mode, scale_mode

__all__ = ["ENTRY_POINT_GROUP", "CastModes", "CastResult", "Engine", "engines", "load_engines"]

#: The entry-point group engines register under.
ENTRY_POINT_GROUP = "tcast.engines"


@dataclass(frozen=True)
class CastModes:
    """The modes of one cast, as an engine's ``supports`` receives them."""

    castmode: CastMode = CastMode.VIRTUAL
    roundmode: RoundMode = RoundMode.EVEN
    scalemode: ScaleMode = ScaleMode.FLOOR
    saturate: bool = True
    transpose_scale: bool = False

    @classmethod
    def of(
        cls,
        castmode: CastMode | str = "virtual",
        roundmode: RoundMode | str = "even",
        scalemode: ScaleMode | str = "floor",
        saturate: bool = True,
        transpose_scale: bool = False,
    ) -> CastModes:
        """Build from enums or strings (aliases allowed).

        Raises:
            SpecError: for an unknown mode or a non-bool flag.
        """
        for flag, value in (("saturate", saturate), ("transpose_scale", transpose_scale)):
            if not isinstance(value, bool):
                raise SpecError(f"{flag} must be True or False, got {value!r}")
        return cls(
            cast_mode(castmode), round_mode(roundmode), scale_mode(scalemode), saturate,
            transpose_scale,
        )


@dataclass
class CastResult:
    """The result of an ``actual`` or ``compress`` cast, independent of the array library.

    Arrays are whatever the engine works in (NumPy arrays, torch tensors).

    Attributes:
        data: element codes: one unsigned code per element (actual), or the
            packed byte stream (compress; pruned elements removed).
        scale: scale codes (None when unscaled).
        zero: zero-point codes (uint data), else None.
        tenscale: tensor-scale code (two-level scaling), else None.
        mask: sparsity keep-mask (bool per element, or packed bits), else None.
        meta: codebook metadata (not used yet), else None.
        dtype: the datatype cast to.
        shape: the logical shape of the input.
        castmode: actual or compress.
        input_dtype: name of the input's float dtype (float32, float16, bfloat16).
        transpose_scale: whether the 2-D tile segments were swapped.
        engine: name of the engine that produced the result.
    """

    data: Any
    scale: Any
    zero: Any
    tenscale: Any
    mask: Any
    meta: Any
    dtype: DataType
    shape: tuple[int, ...]
    castmode: CastMode
    input_dtype: str = "float32"
    transpose_scale: bool = False
    engine: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def check_parts(self, array_type: type | tuple[type, ...], what: str) -> None:
        """Refuse a result whose parts do not fit its datatype and shape (before decoding).

        Checks what any engine's ``upcast`` needs, whatever its arrays: the datatype and
        shape are valid, every part the datatype needs is there (and no other), each is an
        ``array_type``, actual data holds one code per element, and scale, zero and mask
        have their shapes. Engines check the dtype of their own arrays themselves.

        Args:
            array_type: the engine's array type(s) (``np.ndarray``, ``torch.Tensor``).
            what: how error messages name it ("a NumPy array", "a torch tensor").

        Raises:
            SpecError: naming the first part that does not fit.
        """
        dt, shape = self.dtype, tuple(self.shape)
        if not isinstance(dt, DataType) or any(not isinstance(k, int) or k < 0 for k in shape):
            raise SpecError(f"CastResult has dtype {dt!r} and shape {shape!r}")
        if not isinstance(self.data, array_type):
            raise SpecError(f"CastResult.data must be {what} of unsigned codes")
        count = math.prod(shape)
        held = math.prod(self.data.shape)
        if self.castmode is CastMode.ACTUAL and held != count:
            raise SpecError(f"CastResult.data holds {held} codes for shape {shape}")
        parts = {"scale": self.scale, "zero": self.zero, "tenscale": self.tenscale,
                 "mask": self.mask}
        sspec = dt.sspec
        wanted = {
            "scale": sspec is not None,
            "zero": dt.zero is not None,
            "tenscale": dt.is_multiscale,
            "mask": sspec is not None and sspec.is_sparse,
        }
        for name, want in wanted.items():
            if want != (parts[name] is not None):
                state = "needs" if want else "must not have"
                raise SpecError(f"a {dt.name} CastResult {state} {name}")
            if parts[name] is not None and not isinstance(parts[name], array_type):
                raise SpecError(f"CastResult.{name} must be {what}")
        if sspec is None:
            return
        scale_shape = block_layout(shape, dt, self.transpose_scale).scale_shape
        for name in ("scale", "zero"):
            part = parts[name]
            if part is not None and tuple(part.shape) != scale_shape:
                raise SpecError(f"CastResult.{name} has shape {tuple(part.shape)}, "
                                f"expected {scale_shape}")
        if self.castmode is CastMode.ACTUAL and self.mask is not None:
            if tuple(self.mask.shape) != shape:
                raise SpecError(f"CastResult.mask has shape {tuple(self.mask.shape)}, "
                                f"expected {shape}")


@runtime_checkable
class Engine(Protocol):
    """What an engine provides.

    Attributes:
        name: the engine's name (its entry-point name).
        priority: when several engines take an array, the highest priority wins.
    """

    name: str
    priority: int

    def accepts(self, x: Any) -> bool:
        """True when ``x`` is an array this engine works on (its type and device)."""
        ...

    def supports(self, dtype: DataType, modes: CastModes) -> bool:
        """True when this engine implements ``dtype`` under ``modes``."""
        ...

    def cast(
        self,
        x: Any,
        dtype: DataType,
        *,
        castmode: CastMode,
        roundmode: RoundMode,
        scalemode: ScaleMode,
        seed: int | None,
        rbits: Any,
        saturate: bool,
        transpose_scale: bool,
    ) -> Any:
        """Cast ``x``; virtual returns an array, actual/compress a CastResult.

        Raises ``UnsupportedError`` for anything ``supports`` rejects.
        """
        ...

    def upcast(self, result: CastResult) -> Any:
        """Decode an actual or compress result to float32, equal to the virtual cast."""
        ...


@dataclass(frozen=True)
class LoadedEngines:
    """Engines found under the entry-point group, and those that failed to load."""

    engines: dict[str, Engine]
    failures: dict[str, str]


def load_engines() -> LoadedEngines:
    """Load every engine registered under ``tcast.engines``.

    An entry point that fails to import (say, tcast-triton without triton) is
    recorded in ``failures`` with its error instead of breaking the others.
    """
    found: dict[str, Engine] = {}
    failures: dict[str, str] = {}
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            obj = ep.load()
            eng = obj() if callable(obj) and not isinstance(obj, Engine) else obj
        except Exception as err:
            failures[ep.name] = f"{type(err).__name__}: {err}"
            continue
        if not isinstance(eng, Engine):
            failures[ep.name] = f"{ep.value} does not implement tcast.Engine"
            continue
        found[ep.name] = eng
    return LoadedEngines(found, failures)


def engines() -> dict[str, Engine]:
    """The installed engines by name."""
    return load_engines().engines
