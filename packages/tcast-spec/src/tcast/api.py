"""The front door: :func:`cast` and :func:`upcast` dispatch to an installed engine.

Discovery reads the entry points once per process and imports only the engines registered
for the array's library (``tcast.engine_arrays``): casting a NumPy array never imports torch.
Arguments are checked once (:func:`tcast.kit.normalize_args`), the engine builds the
request for its array, and the engine's ``cast`` runs it.
"""

from __future__ import annotations

from typing import Any

from .datatype import DataType
from .engine import CastModes, CastResult, Engine, engine_names, engines_for, failure, load_engine
from .errors import EngineNotFoundError, SpecError, UnsupportedError
from .kit._request import normalize_args
from .modes import CastMode, RoundMode, ScaleMode

__all__ = ["cast", "select_engine", "upcast"]

# Which wheel provides an engine for arrays from which module.
_WHEEL_FOR_MODULE = {"numpy": "tcast-ref", "torch": "tcast-torch"}


def _wheel_hint(x: Any) -> str:
    module = type(x).__module__.split(".")[0]
    wheel = _WHEEL_FOR_MODULE.get(module)
    if wheel:
        return f"install {wheel} (pip install {wheel})"
    return "install an engine: tcast-ref (NumPy), tcast-torch (PyTorch) or tcast-triton (GPU)"


def select_engine(x: Any, dtype: DataType, modes: CastModes, engine: str | None = None) -> Engine:
    """Pick the engine for an array, a datatype and modes.

    Args:
        x: the array (its type and device decide).
        dtype: the datatype.
        modes: the modes.
        engine: a name to force one engine.

    Returns:
        The engine.

    Raises:
        EngineNotFoundError: if no installed engine takes arrays like ``x`` (or
            ``engine`` is not installed); the message names the wheel to install.
        UnsupportedError: if engines take ``x`` but none supports the request.
    """
    if engine is not None:
        eng = load_engine(engine)
        if eng is None:
            why = failure(engine)
            detail = f" (it failed to load: {why})" if why else ""
            names = ", ".join(n for n in engine_names() if failure(n) is None) or "none"
            raise EngineNotFoundError(
                f"engine {engine!r} is not installed{detail}; installed: {names}"
            )
        if not eng.accepts(x):
            raise UnsupportedError(f"engine {engine!r} does not take {type(x).__name__} inputs")
        if not eng.supports(dtype, modes):
            raise UnsupportedError(f"engine {engine!r} does not support {dtype.name} with {modes}")
        return eng
    takers = [e for e in engines_for(x) if e.accepts(x)]
    if not takers:
        raise EngineNotFoundError(f"no installed engine takes {type(x).__name__}: {_wheel_hint(x)}")
    best = None
    for e in takers:
        if e.supports(dtype, modes) and (best is None or e.priority > best.priority):
            best = e
    if best is None:
        names = ", ".join(e.name for e in takers)
        raise UnsupportedError(f"no engine ({names}) supports {dtype.name} with {modes}")
    return best


def cast(
    x: Any,
    dtype: DataType | str,
    *,
    castmode: CastMode | str = "virtual",
    roundmode: RoundMode | str = "even",
    scalemode: ScaleMode | str = "floor",
    seed: int | None = None,
    rbits: Any = None,
    saturate: bool = True,
    transpose_scale: bool = False,
    engine: str | None = None,
) -> Any:
    """Cast an array to a datatype with an installed engine.

    Works inside ``torch.compile(fullgraph=True)`` on torch tensors.

    Args:
        x: a float32, float16 or bfloat16 array of an engine's library.
        dtype: a DataType or a catalog name.
        castmode: virtual (fake quantization, returns an array of x's dtype),
            actual or compress (return a :class:`CastResult`).
        roundmode: even, away (nearest), zero, trunc or stochastic.
        scalemode: floor, ceil, midmax, option3, topbinade (rceil).
        seed: stochastic rounding: seed of the Philox bits (SEMANTICS.md §3.3), any integer
            type in [0, 2**64).
        rbits: stochastic rounding: explicit 32-bit random integers, one per element.
        saturate: unscaled casts: overflow to +-max (default) or IEEE Inf/NaN.
        transpose_scale: swap the two segments of a 2-D tile.
        engine: the engine's name, to bypass automatic selection.

    Returns:
        The virtual array, or a CastResult.

    Raises:
        SpecError: for bad codes, modes, or a seed given with rbits.
        EngineNotFoundError: when no engine is installed for ``x``.
        UnsupportedError: when no engine supports the request, or ``x`` is not of an
            accepted dtype.
    """
    dt, modes, seed = normalize_args(
        dtype, castmode, roundmode, scalemode, seed, rbits, saturate, transpose_scale
    )
    eng = select_engine(x, dt, modes, engine)
    return eng.cast(x, eng.request(x, dt, modes, seed, rbits))


def upcast(result: CastResult, *, engine: str | None = None) -> Any:
    """Decode an actual or compress result to float32 with the engine that made it.

    Raises:
        SpecError: if ``result`` is not a CastResult.
        EngineNotFoundError: if the engine is not installed.
    """
    if not isinstance(result, CastResult):
        raise SpecError(f"upcast takes a CastResult, got {type(result).__name__}")
    name = engine or result.engine
    if name:
        eng = load_engine(name)
        if eng is not None:
            return eng.upcast(result)
    for eng in sorted(engines_for(result.data), key=lambda e: -e.priority):
        if eng.accepts(result.data):
            return eng.upcast(result)
    raise EngineNotFoundError(
        f"no installed engine can upcast a result made by {name or 'an unknown engine'}: "
        f"{_wheel_hint(result.data)}"
    )
