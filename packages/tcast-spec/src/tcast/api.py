"""The front door: :func:`cast` and :func:`upcast` dispatch to an installed engine.

Discovery reads the entry points once per process and imports only the engines registered
for the array's library (``tcast.engine_arrays``): casting a NumPy array never imports torch.
Arguments are checked once (:func:`tcast.kit.normalize_args`), the engine builds the
request for its array, and the engine's ``cast`` runs it.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any

from ._similar import did_you_mean
from ._text import quote
from .datatype import DataType
from .engine import (
    CastModes,
    CastResult,
    Engine,
    _engine_name,
    engine_array_modules,
    engine_names,
    engine_registry,
    engines_for,
    failure,
    load_engine,
)
from .errors import ArgumentWarning, EngineNotFoundError, SpecError, UnsupportedError
from .hadamard import Hadamard
from .kit._check import with_int_shape
from .kit._dual import check_transposed, column_datatype, dual_args, dual_givens, run_dual
from .kit._given import given_or_none
from .kit._native import NativeParts, native_parts
from .kit._request import arguments_key, normalize_args, normalize_seed
from .kit._trace import tracing
from .modes import (
    ROUND_MODE_MEANINGS,
    SCALE_MODE_MEANINGS,
    CastMode,
    RoundMode,
    ScaleLayout,
    ScaleMode,
    mode_meanings_text,
)

__all__ = ["cast", "cast_dual", "native", "select_engine", "upcast"]

#: Engine and checked (datatype, modes) of :func:`cast` calls without a random source or a
#: named engine, by the array's type and device and the arguments as given: checking and
#: selecting cost more host time than a small cast. Bounded: emptied when full.
_CHOSEN: dict[tuple, tuple[Engine, DataType, CastModes]] = {}
_MAX_CHOSEN = 1024
# the engines' call objects (EngineBase.call_for) by a _CHOSEN key, the engine, x's shape
# and dtype
_CALLS: dict[tuple, Any] = {}

# Which wheel provides an engine for arrays from which module.
_WHEEL_FOR_MODULE = {"numpy": "tcast-ref", "torch": "tcast-torch"}
# How to make an array of a module's from other data (a list, a float, a scalar).
_CONVERT = {
    "numpy": "np.asarray(x, dtype=np.float32)",
    "torch": "torch.as_tensor(x, dtype=torch.float32)",
}
_ANY_ENGINE = "tcast-ref (NumPy), tcast-torch (PyTorch) or tcast-triton (GPU)"


def _takes_no(x: Any, loaded: list[Engine]) -> str:
    """Why no engine takes ``x`` and what to pass instead; "install" only what is missing.

    ``loaded``: the engines loaded for ``x``'s library (they refused ``x`` itself).
    """
    module = type(x).__module__.split(".")[0]
    what = type(x).__name__ if module == "builtins" else f"{module}.{type(x).__name__}"
    if loaded:  # engines for this library, but x is not one of their arrays (a NumPy scalar)
        eng = loaded[0]
        return (
            f"engine {eng.name!r} casts {getattr(eng, 'array_what', 'its arrays')}, not a "
            f"{what}: pass {_CONVERT.get(module, getattr(eng, 'array_one', 'one of its arrays'))}"
        )
    modules = engine_array_modules()
    for name, mod in modules.items():  # registered for x's library, yet not loaded
        if mod == module and failure(name) is not None:
            return f"engine {name!r} takes {module} arrays but failed to load: {failure(name)}"
    wheel = _WHEEL_FOR_MODULE.get(module)
    if wheel is not None:
        return f"no installed engine takes {module} arrays: install {wheel} (pip install {wheel})"
    ways = [_CONVERT[m] for m in dict.fromkeys(modules.values()) if m in _CONVERT]
    if ways:
        return f"tcast casts arrays, not a {what}: pass {' or '.join(ways)}"
    return f"no engine is installed: install one of {_ANY_ENGINE}"


def select_engine(
    x: Any,
    dtype: DataType,
    modes: CastModes,
    engine: str | None = None,
    also: DataType | None = None,
    given: bool = False,
) -> Engine:
    """Pick the engine for an array, a datatype and modes.

    Args:
        x: the array (its type and device decide).
        dtype: the datatype.
        modes: the modes.
        engine: a name to force one engine.
        also: a second datatype the engine must support too (``cast_dual``'s column tiling).
        given: whether the cast has given scale parts (SEMANTICS.md §5.12): only engines
            that set ``given_scales`` (``tcast.kit.EngineBase``) are picked.

    Returns:
        The engine: the highest priority among those that take ``x`` and support the
        request, preferring one whose ``refusal`` (``tcast.kit.EngineBase``) takes ``x`` as
        it is (an engine that refuses ``x``'s kind of array yields to one that casts it).

    Raises:
        SpecError: if ``engine`` is not a str.
        EngineNotFoundError: if no installed engine takes arrays like ``x`` (or
            ``engine`` is not installed); the message names the wheel to install.
        UnsupportedError: if engines take ``x`` but none supports the request.
    """
    if engine is not None:
        engine = _engine_name(engine)
        eng = load_engine(engine)
        if eng is None:
            why = failure(engine)
            base = engine.partition(":")[0]
            if base != engine and why is not None and failure(base) is None:
                raise EngineNotFoundError(why)  # installed, without that variant
            if base in engine_names() and why is not None:
                raise EngineNotFoundError(f"engine {base!r} is installed but failed to load: {why}")
            detail = f" (it failed to load: {why})" if why else ""
            names = ", ".join(n for n in engine_names() if failure(n) is None) or "none"
            raise EngineNotFoundError(
                f"engine {quote(engine)} is not installed{detail}; installed: {names}"
                f"{did_you_mean(base, engine_names())}"
            )
        if not eng.accepts(x):
            raise UnsupportedError(f"engine {engine!r} does not take {type(x).__name__} inputs")
        for dt in (dtype, also):
            if dt is not None and not eng.supports(dt, modes):
                raise UnsupportedError(
                    f"engine {engine!r} does not support {dt.name} with {modes}"
                    f"{_elsewhere(x, dt, modes, {engine.partition(':')[0]})}"
                )
        if given and not getattr(eng, "given_scales", False):
            raise UnsupportedError(_no_given(engine))
        return eng
    loaded = engines_for(x)
    takers = [e for e in loaded if e.accepts(x)]
    if not takers:
        raise EngineNotFoundError(_takes_no(x, loaded))
    able = [
        e for e in takers if e.supports(dtype, modes) and (also is None or e.supports(also, modes))
    ]
    if not able:
        names = ", ".join(e.name for e in takers)
        missing = dtype if not all(e.supports(dtype, modes) for e in takers) else also
        hint = "" if missing is None else _elsewhere(x, missing, modes, {e.name for e in takers})
        raise UnsupportedError(f"no engine ({names}) supports {dtype.name} with {modes}{hint}")
    if given:
        able = [e for e in able if getattr(e, "given_scales", False)]
        if not able:
            raise UnsupportedError(_no_given(", ".join(e.name for e in takers)))
        # engines that take given parts for some arrays only give way to one that takes x's
        willing = [e for e in able if _given_refusal(e, x) is None]
        if not willing:
            raise UnsupportedError(_given_refusal(_first_of_highest(able), x))
        able = willing
    best = _first_of_highest(able)
    if _refuses(best, x):
        # an engine that takes x's type but not x as it is (the Triton engine and a DTensor)
        # gives way to one that takes it; if every one refuses, the best one says why
        willing = [e for e in able if not _refuses(e, x)]
        if willing:
            best = _first_of_highest(willing)
    return best


def _given_refusal(eng: Engine, x: Any) -> str | None:
    check = getattr(eng, "given_refusal", None)
    return None if check is None else check(x)


def _no_given(names: str) -> str:
    return (
        f"no engine ({names}) casts with given scales, zero points or tensor scales "
        f"(SEMANTICS.md §5.12): 'ref' (NumPy arrays), 'torch' (torch tensors and DTensors, "
        f"eager or compiled) and 'triton' (CUDA tensors) do"
    )


def _elsewhere(x: Any, dtype: DataType, modes: CastModes, tried: set[str]) -> str:
    """Where a refused request would run: an installed engine for other arrays that supports it.

    Only on the way to an error: it loads the engines not yet tried (importing their
    array libraries). Returns ``''`` when none supports the request.
    """
    for name in engine_names():
        if name in tried or failure(name) is not None:
            continue
        eng = load_engine(name)
        if eng is None or not eng.supports(dtype, modes):
            continue
        what = getattr(eng, "array_what", "its arrays")
        return (
            f"; {dtype.name} is cast by the {name!r} engine ({what}): "
            f"tcast.cast({_converted(x, eng)}, {dtype.name!r}, ...)"
        )
    return ""


def _converted(x: Any, eng: Engine) -> str:
    """How to hand ``x`` to ``eng``: ``x.cpu().numpy()`` from torch to NumPy, say."""
    types = getattr(eng, "array_type", ())
    first = types[0] if isinstance(types, tuple) and types else types
    target = getattr(first, "__module__", "").split(".")[0]
    source = type(x).__module__.split(".")[0]
    if source == "torch" and target == "numpy":
        return "x.cpu().numpy()"
    if source == "numpy" and target == "torch":
        return "torch.from_numpy(x)"
    return f"x as {getattr(eng, 'array_one', 'one of its arrays')}"


def _first_of_highest(engines: list[Engine]) -> Engine:
    # a loop, not max(key=...): torch.compile traces the front door
    best = engines[0]
    for e in engines[1:]:
        if e.priority > best.priority:
            best = e
    return best


def _refuses(eng: Engine, x: Any) -> bool:
    """Whether an engine's optional ``refusal`` (``tcast.kit.EngineBase``) refuses ``x``."""
    refusal = getattr(eng, "refusal", None)
    return refusal is not None and refusal(x) is not None


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
    scale_layout: ScaleLayout | str = "plain",
    transform: Hadamard | None = None,
    engine: str | None = None,
    stream: int = 0,
    scale: Any = None,
    zero: Any = None,
    tensor_scale: Any = None,
) -> Any:
    """Cast an array to a datatype with an installed engine.

    Works inside ``torch.compile(fullgraph=True)`` on torch tensors. A DataType that is an
    argument of the compiled function (rather than a name, a global or a module's attribute)
    needs ``dynamic=False``: from its second datatype on, Dynamo would turn the specs'
    integers into symbols, which the spec arithmetic cannot take.

    Args:
        x: a float32, float16 or bfloat16 array of an engine's library.
        dtype: a DataType or a catalog name.
        castmode: virtual (fake quantization, returns an array of x's dtype),
            actual or compress (return a :class:`CastResult`).
        roundmode: how a value between two codes is rounded (SEMANTICS.md §3.2):
            {round modes}
        scalemode: how a power-of-two scale is chosen (SEMANTICS.md §5.3; float scales
            and uint data ignore it):
            {scale modes}
        seed: stochastic rounding: seed of the Philox bits (SEMANTICS.md §3.3), any integer
            type in [0, 2**64).
        rbits: stochastic rounding: explicit random integers, one per element, of
            :func:`tcast.rbits_width` bits (uint8 for formats of at most 8 bits, uint16
            for wider ones).
        saturate: unscaled casts: overflow to +-max (default) or IEEE Inf/NaN. Scaled casts
            always saturate: ``False`` there has no effect and issues an
            :class:`~tcast.ArgumentWarning`.
        transpose_scale: swap the two segments of a 2-D tile.
        scale_layout: actual and compress casts of one fixed-length tile segment (MX,
            NVFP4): ``"plain"`` (the scale array, SEMANTICS.md §5.1) or ``"blocked"`` (the
            128 x 4 layout cuBLAS/CUTLASS block-scaled GEMMs and ``torch._scaled_mm`` read,
            zero-padded; §8.1).
        transform: a :class:`tcast.Hadamard` applied to groups along the datatype's one
            tiled dimension before the amax and scale (SEMANTICS.md §5.11): the codes are
            those of the transformed values; the virtual values, and the upcast of a
            result (which records the transform), are the inverse transform of the decoded
            values rounded to x's dtype.
        engine: the engine's name, to bypass automatic selection.
        stream: stochastic rounding from a seed: the Philox stream, an int in [0, 2**32)
            (the second result of :func:`cast_dual` draws stream 1).
        scale: given block scales (SEMANTICS.md §5.12) instead of scales computed from the
            blocks: an array of the engine's (float32, float16 or bfloat16) shaped like the
            scale array (a real number for a tensor scale); each value is encoded into the
            scale format (float formats: clamped and rounded to even; exponent formats: the
            smallest power of two not below it). Engines that set
            ``tcast.kit.EngineBase.given_scales`` take given parts (``ref``; ``torch`` for
            tensors and DTensors, eager or compiled; ``triton`` for CUDA tensors), and the
            front door picks one of them.
        zero: given zero points of uint data, laid out as ``scale``.
        tensor_scale: a given tensor scale of a two-level datatype (NVFP4): the tile scales
            are computed from it, with no pass for the tensor amax.

    Returns:
        The virtual array, or a CastResult.

    Raises:
        SpecError: for bad codes, modes, a seed given with rbits, or an engine that is not
            named by a str; the blocked layout for a virtual cast or a datatype without one
            fixed-length tile segment; a transform that is not a Hadamard, or one the
            datatype and shape do not take (one tiled dimension, a multiple of its size).
        EngineNotFoundError: when no engine is installed for ``x``.
        UnsupportedError: when no engine supports the request, or ``x`` is not of an
            accepted dtype.
    """
    given = given_or_none(scale, zero, tensor_scale)
    if rbits is None and given is None and not tracing():
        # the host path: a repeated call (same array kind, datatype, modes, engine asked for
        # and a seed's presence) reuses the checked arguments and the engine chosen for them;
        # a seed's value is checked on every call
        key = (
            # what the selection read: the registry (refresh_engines replaces it) and the
            # functions that select (replaced where a caller or a test substitutes them)
            engine_registry(),
            select_engine,
            engines_for,
            engine,
            seed is None,
            type(x),
            getattr(x, "device", None),
            *arguments_key(
                dtype,
                castmode,
                roundmode,
                scalemode,
                saturate,
                transpose_scale,
                scale_layout,
                transform,
                stream,
            ),
        )
        try:
            known = _CHOSEN.get(key)
        except TypeError:  # an unhashable argument or device: the checks below
            known = key = None
        if known is not None:
            eng, dt, modes = known
            refusal = getattr(eng, "refusal", None)
            # an engine may take arrays by more than type and device, and refuse some kinds:
            # either way the selection is made afresh
            if eng.accepts(x) and (refusal is None or refusal(x) is None):
                _warn_ignored(dt, modes)
                if seed is not None:
                    seed = normalize_seed(seed)
                if modes.transform is None:
                    out = _repeat_call((key, eng), eng, dt, modes, x, seed)
                    if out is not _NO_CALL:
                        return _honoured(eng, modes, out)
                return _honoured(eng, modes, eng.cast(x, eng.request(x, dt, modes, seed, None)))
    else:
        key = None
    dt, modes, seed = normalize_args(
        dtype,
        castmode,
        roundmode,
        scalemode,
        seed,
        rbits,
        saturate,
        transpose_scale,
        scale_layout,
        transform,
        stream,
    )
    _warn_ignored(dt, modes)
    eng = select_engine(x, dt, modes, engine, given=given is not None)
    _transforms(eng, modes.transform)
    if key is not None:
        if len(_CHOSEN) >= _MAX_CHOSEN:
            _CHOSEN.clear()
            _CALLS.clear()
        _CHOSEN[key] = (eng, dt, modes)
    if given is not None:  # an engine with given_scales (select_engine)
        return _honoured(eng, modes, eng.cast(x, eng.request(x, dt, modes, seed, rbits, given)))
    return _honoured(eng, modes, eng.cast(x, eng.request(x, dt, modes, seed, rbits)))


_NO_CALL = object()


def _repeat_call(key: tuple, eng: Engine, dt: DataType, modes: CastModes, x: Any, seed: Any) -> Any:
    """The cast by the engine's call object for arrays like ``x``, or ``_NO_CALL``.

    ``x`` is an array ``eng`` accepts and does not refuse, ``seed`` checked. The call object
    (``EngineBase.call_for``; engines of the protocol alone have none) is kept by ``key``,
    x's shape and dtype, and asked for again when it does not take ``x`` (the engine may
    answer None for this array and make one for the next).
    """
    calls = (key, getattr(x, "shape", None), getattr(x, "dtype", None))
    try:
        call = _CALLS.get(calls)
    except TypeError:  # an unhashable shape or dtype
        return _NO_CALL
    if call is None or not call.takes(x):
        maker = getattr(eng, "call_for", None)
        call = maker(x, dt, modes, seed) if maker is not None else None
        if call is None or not call.takes(x):
            return _NO_CALL
        if len(_CALLS) >= _MAX_CHOSEN:
            _CALLS.clear()
        _CALLS[calls] = call
    return call(x) if seed is None else call(x, seed)


def _with_mode_meanings(doc: str | None) -> str | None:
    """``doc`` with the meaning of every round and scale mode in place of its placeholders."""
    if doc is None:  # python -OO
        return None
    indent = " " * 12
    return doc.replace(
        f"{indent}{{round modes}}", mode_meanings_text(ROUND_MODE_MEANINGS, f"{indent}* ")
    ).replace(f"{indent}{{scale modes}}", mode_meanings_text(SCALE_MODE_MEANINGS, f"{indent}* "))


cast.__doc__ = _with_mode_meanings(cast.__doc__)


def _warn_ignored(dt: DataType, modes: CastModes) -> None:
    """Warn of ``saturate=False`` on a scaled datatype: its elements always saturate (§5.2)."""
    if not modes.saturate and dt.sspec is not None and not tracing():
        warnings.warn(
            f"saturate=False has no effect on {dt.name}: the elements of a scaled cast always "
            f"saturate to the element format's max (SEMANTICS.md §5.2); only unscaled casts "
            f"overflow to Inf or NaN. Leave saturate out for scaled datatypes",
            ArgumentWarning,
            stacklevel=3,
        )


def _transforms(eng: Engine, transform: Any) -> None:
    """Refuse a transform for an engine that does not declare ``transforms`` (§5.11).

    An engine of the protocol alone could otherwise ignore ``modes.transform`` and return
    values of the untransformed cast.

    Raises:
        UnsupportedError: naming the engine.
    """
    if transform is not None and not getattr(eng, "transforms", False):
        raise UnsupportedError(
            f"engine {eng.name!r} does not implement casts with a transform (it does not set "
            f"transforms = True; SEMANTICS.md §5.11): use tcast_ref, tcast_torch or tcast_triton"
        )


def _honoured(eng: Engine, modes: CastModes, out: Any) -> Any:
    """``out``, unless an engine returned plain scales for a blocked request.

    Raises:
        UnsupportedError: naming the engine (a protocol engine that ignores scale_layout).
    """
    if (
        modes.scale_layout is ScaleLayout.BLOCKED
        and isinstance(out, CastResult)
        and out.scale_layout is not ScaleLayout.BLOCKED
    ):
        raise UnsupportedError(
            f"engine {eng.name!r} returned {out.scale_layout!r} scales for a "
            f"scale_layout='blocked' request: it does not implement the blocked layout"
        )
    if (
        modes.transform is not None
        and isinstance(out, CastResult)
        and out.transform != modes.transform
    ):
        raise UnsupportedError(
            f"engine {eng.name!r} returned a result without the requested transform: it "
            f"does not implement casts with a transform (SEMANTICS.md §5.11)"
        )
    return out


def cast_dual(
    x: Any,
    dtype: DataType | str,
    *,
    castmode: CastMode | str = "actual",
    roundmode: RoundMode | str = "even",
    scalemode: ScaleMode | str = "floor",
    seed: int | None = None,
    rbits: Any = None,
    saturate: bool = True,
    transposed: bool = False,
    scale_layout: ScaleLayout | str = "plain",
    row_transform: Hadamard | None = None,
    column_transform: Hadamard | None = None,
    engine: str | None = None,
    row_scale: Any = None,
    column_scale: Any = None,
    row_zero: Any = None,
    column_zero: Any = None,
    tensor_scale: Any = None,
) -> tuple[Any, Any]:
    """Cast ``x`` twice: with the datatype's tiles along its rows, and along its columns.

    Training casts each tensor for the forward GEMM (tiles along the last dimension) and
    for the backward one (along the second-to-last). Each result is bit for bit the single
    :func:`cast` (``cast(x, dtype)`` and ``cast(x, tcast.kit.column_datatype(dtype))``), the
    same random word per element under stochastic rounding. The Triton engine reads ``x``
    once and writes both in one kernel; other engines run two casts.

    Args:
        x: a float32, float16 or bfloat16 array of rank 2 or more.
        dtype: a datatype with one tile segment along the last dimension (``mxfp8``,
            ``nvfp4``, ``int8_e8m0_t32``, a channel ``t0``).
        castmode: actual (the default here, unlike :func:`cast`), compress or virtual.
        roundmode: as :func:`cast`.
        scalemode: as :func:`cast`.
        seed: as :func:`cast`: by ``x``'s flat indices, the first result from Philox stream
            0, the second from stream 1 (SEMANTICS.md §8.2): the second equals
            ``cast(x, column datatype, seed=seed, stream=1)``.
        rbits: as :func:`cast` (one integer per element of ``x``, used by both casts).
        saturate: as :func:`cast`.
        scale_layout: as :func:`cast`, for both results.
        engine: as :func:`cast`; the engine must support both tilings.
        transposed: store the second result for ``xᵀ`` (the last two dimensions swapped,
            C-contiguous: what the backward GEMM reads): the transpose of the plain second
            result in every part, a result of ``dtype`` over ``xᵀ``'s shape (its scales in
            the blocked layout of ``xᵀ`` when asked).
        row_transform: a :class:`tcast.Hadamard` for the row cast only (along the last
            dimension), as :func:`cast`'s ``transform``.
        column_transform: one for the column cast only (along the second-to-last
            dimension; with ``transposed``, recorded by the result for ``xᵀ``, whose last
            dimension it runs along). NVIDIA's NVFP4 recipe transforms the Wgrad GEMM's
            operands, the column casts: ``column_transform=tcast.Hadamard.te_wgrad()``.
        row_scale: given block scales of the first result (SEMANTICS.md §5.12), shaped as
            its scale array, as :func:`cast`'s ``scale``.
        column_scale: given block scales of the second result, shaped as its scale array
            (with ``transposed``, the scale array of the result for ``xᵀ``).
        row_zero: given zero points of the first result (uint data).
        column_zero: given zero points of the second result, laid out as ``column_scale``.
        tensor_scale: a given tensor scale (two-level datatypes), for both results.

    Returns:
        ``(rows, cols)``: two virtual arrays or two CastResults.

    Raises:
        SpecError: as :func:`cast`, and for ``x`` of rank below 2 or a datatype without one
            tile segment along the last dimension.
        EngineNotFoundError, UnsupportedError: as :func:`cast`.
    """
    transposed = check_transposed(transposed)
    dt, modes, seed, transforms = dual_args(
        dtype, castmode, roundmode, scalemode, seed, rbits, saturate, scale_layout,
        row_transform, column_transform,
    )  # fmt: skip
    _warn_ignored(dt, modes)
    givens = dual_givens(row_scale, column_scale, row_zero, column_zero, tensor_scale)
    # the engine must take each side's transform (and given parts) too
    eng = select_engine(
        x, dt, replace(modes, transform=transforms[0] or transforms[1]), engine,
        also=column_datatype(dt), given=givens != (None, None),
    )  # fmt: skip
    _transforms(eng, transforms[0] or transforms[1])
    first, second = run_dual(eng, x, dt, modes, seed, rbits, transposed, transforms, givens)
    return (
        _honoured(eng, replace(modes, transform=transforms[0]), first),
        _honoured(eng, replace(modes, transform=transforms[1]), second),
    )


def upcast(result: CastResult, *, engine: str | None = None) -> Any:
    """Decode an actual or compress result to float32 with the engine that made it.

    Raises:
        SpecError: if ``result`` is not a CastResult, its shape is not a tuple of integer
            sizes, or ``engine`` is not a str.
        EngineNotFoundError: if the engine is not installed.
    """
    if not isinstance(result, CastResult):
        raise SpecError(f"upcast takes a CastResult, got {type(result).__name__}")
    result = with_int_shape(result)  # engines read the shape as Python ints
    eng = _result_engine(result, engine)
    _transforms(eng, result.transform)
    return eng.upcast(result)


def native(result: CastResult, *, engine: str | None = None) -> NativeParts:
    """A result's codes viewed, without a copy, as the ecosystem's dtypes that hold them.

    Each part whose format a dtype of the engine's library decodes exactly as tcast does is
    viewed as that dtype: torch ``float8_e4m3fn``, ``float8_e5m2``, ``float8_e4m3fnuz``
    (tcast ``e4m3b8fnuz``), ``float8_e5m2fnuz``, ``float8_e8m0fnu`` (E8M0 scales),
    ``float4_e2m1fn_x2`` (compress e2m1f data), ``int8``, ``bfloat16``, ``float16``,
    ``float32`` (NVFP4's tensor scale); on NumPy, the ml_dtypes dtypes of those and
    ``float4_e2m1fn``, ``float6_*``, ``int4`` ... (one code per byte, actual data). Other
    parts keep their unsigned codes and :attr:`NativeParts.notes` says why; it also says
    where a view's reading is not the element value (MXINT codes are fixed point: value =
    code * 2**(2-K) * scale). The :class:`CastResult` stays codes: golden vectors, packing
    and upcast read codes.

    Args:
        result: the CastResult of an actual or compress cast.
        engine: the engine whose arrays the result holds (default: the one that made it).

    Returns:
        A :class:`tcast.kit.NativeParts`: the views, the dtype name of each, and notes.

    Raises:
        SpecError: if ``result`` is not a valid actual or compress CastResult.
        UnsupportedError: for parts the engine refuses (a DTensor ...).
        EngineNotFoundError: if the engine is not installed.
    """
    if not isinstance(result, CastResult) or result.castmode is CastMode.VIRTUAL:
        got = type(result).__name__ if not isinstance(result, CastResult) else "a virtual one"
        raise SpecError(
            f"native takes the CastResult of an actual or compress cast, got {got}; cast with "
            f"castmode='actual'"
        )
    result = with_int_shape(result)
    eng = _result_engine(result, engine)
    check = getattr(eng, "check_result", None)
    ops = getattr(eng, "result_ops", None)
    if check is not None and ops is not None:
        check(result)  # a view of a valid result only
    else:  # an engine not built on tcast.kit.EngineBase: nothing to view with
        ops = None
    return native_parts(result, ops, getattr(eng, "label", f"engine {eng.name!r}"))


def _result_engine(result: CastResult, engine: str | None) -> Engine:
    """The engine that decodes ``result``: ``engine``, else the result's own, else its data's.

    Raises:
        SpecError: if ``engine`` is not a str.
        EngineNotFoundError: if no installed engine takes the result.
    """
    if engine is not None:
        name = _engine_name(engine)
    else:  # a result's own engine name is a hint: one that is no name falls back to the data
        name = result.engine if isinstance(result.engine, str) else None
    if name:
        eng = load_engine(name)
        if eng is not None:
            return eng
    loaded = engines_for(result.data)
    for eng in sorted(loaded, key=lambda e: -e.priority):
        if eng.accepts(result.data):
            return eng
    raise EngineNotFoundError(
        f"no installed engine can upcast a result made by {name or 'an unknown engine'}: "
        f"{_takes_no(result.data, loaded)}"
    )
