"""The engine protocol, engine discovery and the result of a non-virtual cast.

An engine is any object implementing :class:`Engine`, published under the
``tcast.engines`` entry-point group (the entry point loads either the engine or
a zero-argument factory that returns it), and says in ``tcast.engine_arrays`` which
library's arrays it takes (the top-level module of their type), so that the front door
imports only the engine that will run::

    [project.entry-points."tcast.engines"]
    ref = "tcast_ref:engine"

    [project.entry-points."tcast.engine_arrays"]
    ref = "numpy"

A third-party engine registers the same way (most simply as a subclass of
:class:`tcast.kit.EngineBase`) and is then reached by :func:`tcast.cast` and tested by
the conformance suite with no edit to tcast. An engine without an ``engine_arrays``
entry is loaded for arrays of every library. An engine may also offer named variants of
itself (an optional ``variants`` mapping of names to engines, say the same kernels run
eagerly and compiled), reached as ``"NAME:VARIANT"`` wherever an engine is named
(:func:`load_engine`, ``tcast.cast(..., engine=)``, ``tcast conformance --engine``) and
never chosen by the front door on its own. See docs/engines.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from importlib.metadata import entry_points
from typing import Any, ClassVar, Protocol, runtime_checkable

from ._text import quote
from .datatype import DataType
from .errors import SpecError
from .hadamard import Hadamard
from .modes import (
    CastMode,
    RoundMode,
    ScaleLayout,
    ScaleMode,
    cast_mode,
    round_mode,
    scale_mode,
)
from .modes import scale_layout as _scale_layout
from .number import number
from .philox import check_stream
from .scale import scale

__all__ = [
    "ARRAYS_GROUP",
    "ENTRY_POINT_GROUP",
    "CastModes",
    "CastResult",
    "Engine",
    "LoadedEngines",
    "engine_array_modules",
    "engine_names",
    "engine_variants",
    "engines",
    "engines_for",
    "failure",
    "load_engine",
    "load_engines",
    "refresh_engines",
]

#: The enum type of each mode field of :class:`CastModes`.
_MODE_TYPES = {
    "castmode": CastMode,
    "roundmode": RoundMode,
    "scalemode": ScaleMode,
    "scale_layout": ScaleLayout,
}

#: The entry-point group engines register under.
ENTRY_POINT_GROUP = "tcast.engines"
#: The entry-point group where an engine names the module of the arrays it takes.
ARRAYS_GROUP = "tcast.engine_arrays"


@dataclass(frozen=True)
class CastModes:
    """The modes of one cast, as an engine's ``supports`` receives them."""

    castmode: CastMode = CastMode.VIRTUAL
    roundmode: RoundMode = RoundMode.EVEN
    scalemode: ScaleMode = ScaleMode.FLOOR
    saturate: bool = True
    transpose_scale: bool = False
    scale_layout: ScaleLayout = ScaleLayout.PLAIN
    #: a transform applied along the scaled dimension before the cast (SEMANTICS.md §5.11)
    transform: Hadamard | None = None
    #: the Philox stream of seeded stochastic rounding (SEMANTICS.md §3.3), in [0, 2**32)
    stream: int = 0

    def __post_init__(self) -> None:
        if type(self.stream) is not int:
            object.__setattr__(self, "stream", check_stream(self.stream))
        elif not 0 <= self.stream < (1 << 32):
            check_stream(self.stream)
        if self.transform is not None and not isinstance(self.transform, Hadamard):
            raise SpecError(
                f"transform must be a tcast.Hadamard or None, got {quote(self.transform)}; "
                f"build one with tcast.Hadamard.of, .seeded or .te_wgrad"
            )
        # modes given as strings become their enum members (an engine compares members by
        # identity, and a str equal to a member would share its hash in every memo)
        for name, parse in (
            ("castmode", cast_mode),
            ("roundmode", round_mode),
            ("scalemode", scale_mode),
            ("scale_layout", _scale_layout),
        ):
            value = getattr(self, name)
            if type(value) is not _MODE_TYPES[name]:
                object.__setattr__(self, name, parse(value))

    def __str__(self) -> str:
        """The modes as a call writes them, defaults left out: ``castmode='actual', ...``."""
        said = [
            f"{f.name}={_plain(getattr(self, f.name))!r}"
            for f in fields(self)
            if getattr(self, f.name) != f.default
        ]
        return ", ".join(said) if said else "the default modes"

    @property
    def virtual_mode(self) -> bool:
        """Whether the cast mode is virtual."""
        return self.castmode is CastMode.VIRTUAL

    @classmethod
    def of(
        cls,
        castmode: CastMode | str = "virtual",
        roundmode: RoundMode | str = "even",
        scalemode: ScaleMode | str = "floor",
        saturate: bool = True,
        transpose_scale: bool = False,
        scale_layout: ScaleLayout | str = "plain",
        transform: Hadamard | None = None,
        stream: int = 0,
    ) -> CastModes:
        """Build from enums or strings (aliases allowed).

        Raises:
            SpecError: for an unknown mode or a non-bool flag, the blocked scale layout
                with a virtual cast (it has no scales to lay out), a transform that is not
                a :class:`tcast.Hadamard`, or a stream that is not an int in [0, 2**32).
        """
        for flag, value in (("saturate", saturate), ("transpose_scale", transpose_scale)):
            if not isinstance(value, bool):
                raise SpecError(f"{flag} must be True or False, got {quote(value)}")
        cm, sl = cast_mode(castmode), _scale_layout(scale_layout)
        if sl is ScaleLayout.BLOCKED and cm is CastMode.VIRTUAL:
            raise SpecError(
                "scale_layout='blocked' applies to actual and compress casts; a virtual "
                "cast returns values, not scales"
            )
        return cls(
            cm,
            round_mode(roundmode),
            scale_mode(scalemode),
            saturate,
            transpose_scale,
            sl,
            transform,
            check_stream(stream),
        )


def _plain(value: object) -> object:
    """A mode's value as a user writes it: the str of an enum member, else itself."""
    return value.value if isinstance(value, StrEnum) else value


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
        extra: engine notes (``bits``: the element width).
        scale_layout: how ``scale`` and ``zero`` are stored: plain (the scale array's
            shape) or blocked (SEMANTICS.md §8.1).
        transform: the Hadamard transform the elements were cast after (SEMANTICS.md
            §5.11), else None: the codes are those of the transformed values, and upcast
            inverts the transform.

    A result pickles (``pickle``, ``torch.save``) with its datatype as codes and its modes as
    names, so that loading it needs no class but this one (``torch.load(weights_only=True)``
    allowlists exactly that); arrays whose own pickling does not round-trip are stored in
    a portable form their engine registers (:meth:`register_pickling`).
    """

    #: Per array type, how an array of it pickles inside a result (:meth:`register_pickling`).
    _pickling: ClassVar[dict[type, Callable[[Any], Any]]] = {}

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
    scale_layout: ScaleLayout = ScaleLayout.PLAIN
    transform: Hadamard | None = None

    def __repr__(self) -> str:
        # never the arrays themselves: a result of a large tensor prints in one line
        parts = [
            f"{name}={_array_summary(a)}"
            for name in _ARRAY_PARTS
            if (a := getattr(self, name)) is not None
        ]
        dt = getattr(self.dtype, "name", self.dtype)
        mode = getattr(self.castmode, "value", self.castmode)
        head = f"{dt}, {mode}, shape {tuple(self.shape)!r}, {self.input_dtype}"
        if self.transpose_scale:
            head += ", scale transposed"
        if self.scale_layout is ScaleLayout.BLOCKED:
            head += ", scale blocked"
        if self.transform is not None:
            head += f", {self.transform.size}-point Hadamard transform"
        if self.engine:
            head += f", engine {self.engine}"
        return f"CastResult({head}: {', '.join(parts)})"

    @classmethod
    def register_pickling(cls, array_type: type, portable: Callable[[Any], Any]) -> None:
        """Say how arrays of ``array_type`` (and its subclasses) pickle inside a result.

        An engine whose arrays do not all survive a pickle round trip registers this when it
        is imported (tcast_torch: torch cannot unpickle uint16 and uint32 tensors).

        Args:
            array_type: the array class.
            portable: returns the array itself, or an object that pickles in its place and
                unpickles as an array equal to it in dtype, shape and bits.
        """
        cls._pickling[array_type] = portable

    def __getstate__(self) -> dict[str, Any]:
        state = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in _ARRAY_PARTS:
            state[name] = _portable(state[name])
        dt = self.dtype
        if isinstance(dt, DataType):
            state["dtype"] = (dt.nspec.code, None if dt.sspec is None else dt.sspec.code, dt.name)
        for name in ("castmode", "scale_layout"):
            state[name] = getattr(state[name], "value", state[name])
        h = state["transform"]
        if isinstance(h, Hadamard):  # plain data: a loader needs no class but this one
            state["transform"] = (h.size, h.signs)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        names = {f.name for f in fields(self)}
        if isinstance(state, dict) and "transform" not in state:
            state = {**state, "transform": None}  # pickled before results recorded transforms
        if not isinstance(state, dict) or set(state) != names:
            got = (
                sorted(repr(k)[:40] for k in state)
                if isinstance(state, dict)
                else [type(state).__name__]
            )
            raise SpecError(
                f"not a pickled CastResult: its state must have the fields {sorted(names)}, "
                f"got {', '.join(got)[:300]}"
            )
        state = dict(state)
        dt = state["dtype"]
        if isinstance(dt, tuple) and len(dt) == 3:
            ncode, scode, name = dt
            state["dtype"] = DataType(number(ncode), None if scode is None else scale(scode), name)
        state["castmode"] = cast_mode(state["castmode"])
        state["scale_layout"] = _scale_layout(state["scale_layout"])
        h = state["transform"]
        if isinstance(h, tuple) and len(h) == 2:
            state["transform"] = Hadamard.of(*h)
        self.__dict__.update(state)

    def __copy__(self) -> CastResult:
        # the pickled state holds portable stand-ins (``__getstate__``), not the arrays
        return replace(self)


#: The parts of a result that hold arrays.
_ARRAY_PARTS = ("data", "scale", "zero", "tenscale", "mask", "meta")


def _portable(a: Any) -> Any:
    """The form ``a`` pickles in: its type's registered ``portable`` (the nearest class)."""
    for cls in type(a).__mro__:
        fn = CastResult._pickling.get(cls)
        if fn is not None:
            return fn(a)
    return a


def _array_summary(a: Any) -> str:
    """``uint8[2, 32]`` (``cuda:0`` appended off the CPU), or the type of a non-array."""
    dtype, shape = getattr(a, "dtype", None), getattr(a, "shape", None)
    if dtype is None or shape is None:
        return type(a).__name__
    out = f"{str(dtype).rsplit('.', 1)[-1]}[{', '.join(str(int(d)) for d in shape)}]"
    device = getattr(a, "device", None)
    if device is not None and str(device) != "cpu":
        out += f" {device}"
    return out


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

    def request(
        self, x: Any, dtype: DataType, modes: CastModes, seed: int | None, rbits: Any
    ) -> Any:
        """The :class:`tcast.kit.CastRequest` for ``x`` from checked arguments.

        The arguments come from :func:`tcast.kit.normalize_args`; the engine checks ``x``
        and ``rbits``.
        """
        ...

    def cast(self, x: Any, request: Any) -> Any:
        """Cast ``x`` as the request says; virtual returns an array, actual/compress a CastResult.

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


class _Registry:
    """What discovery found, once per process.

    The entry points, their array modules, and the engines loaded so far (each at most once).
    """

    def __init__(self) -> None:
        self.points: dict[str, Any] | None = None
        self.arrays: dict[str, str] = {}
        self.loaded: dict[str, Engine] = {}
        self.failures: dict[str, str] = {}


_REGISTRY = _Registry()


def _discover() -> int:
    """Read the entry points (once per process); returns how many engines are registered."""
    reg = _REGISTRY
    if reg.points is None:
        reg.arrays = {ep.name: ep.value.strip() for ep in entry_points(group=ARRAYS_GROUP)}
        reg.points = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return len(reg.points)


# torch.compile cannot trace importlib.metadata; this marks _discover the way
# torch.compiler.assume_constant_result does (an attribute, so tcast needs no torch import):
# while tracing, dynamo calls it once and keeps its result as a constant, and the registry it
# filled is then read like any other Python object
_discover._dynamo_marked_constant = True  # type: ignore[attr-defined]


def engine_registry() -> object:
    """The current registry object: a new one after each :func:`refresh_engines` (a cache key)."""
    return _REGISTRY


def refresh_engines() -> None:
    """Forget what discovery found and loaded (tests; after installing an engine at runtime)."""
    global _REGISTRY
    _REGISTRY = _Registry()


def _load(name: str) -> Engine | None:
    _import_engine(name)
    return _REGISTRY.loaded.get(name)


def _import_engine(name: str) -> bool:
    """Load one registered engine (once); whether it loaded. Failures are recorded."""
    reg = _REGISTRY
    if name in reg.loaded:
        return True
    if name in reg.failures:
        return False
    ep = reg.points[name]
    try:
        obj = ep.load()
        eng = obj() if callable(obj) and not isinstance(obj, Engine) else obj
    except Exception as err:
        reg.failures[name] = f"{type(err).__name__}: {err}"
        return False
    if not isinstance(eng, Engine):
        reg.failures[name] = (
            f"{ep.value} does not implement tcast.Engine (name, priority, "
            f"accepts, supports, request, cast, upcast: docs/engines.md)"
        )
        return False
    reg.loaded[name] = eng
    return True


# importing is not traceable either: same mark as _discover
_import_engine._dynamo_marked_constant = True  # type: ignore[attr-defined]


def engine_names() -> tuple[str, ...]:
    """The names of the registered engines (nothing is imported)."""
    _discover()
    return tuple(sorted(_REGISTRY.points))


def engine_array_modules() -> dict[str, str | None]:
    """The library each registered engine takes arrays of (``tcast.engine_arrays``), by name.

    ``{"ref": "numpy", "torch": "torch", ...}``; None for an engine registered without one.
    Nothing is imported.
    """
    _discover()
    return {name: _REGISTRY.arrays.get(name) for name in sorted(_REGISTRY.points)}


def _load_for(cls: type) -> tuple[str, ...]:
    """Load (once) the engines that may take arrays of type ``cls``.

    Those registered for its library or for none. Its libraries are the top-level modules of
    ``cls`` and its bases, so that a subclass of ``np.ndarray`` or ``torch.Tensor`` defined in
    another package still reaches the NumPy or torch engines.

    Returns:
        The names of those that loaded.
    """
    modules = {getattr(c, "__module__", "").partition(".")[0] for c in cls.__mro__}
    _discover()
    reg = _REGISTRY
    names = []
    for name in sorted(reg.points):
        arrays = reg.arrays.get(name)
        if (arrays is None or arrays in modules) and _import_engine(name):
            names.append(name)
    return tuple(names)


# every import a cast may need happens inside this one call, so that while dynamo traces, the
# registry it reads afterwards no longer changes under it (a dict read before an import and
# read again after it would fail dynamo's own guards)
_load_for._dynamo_marked_constant = True  # type: ignore[attr-defined]


def engines_for(x: Any) -> list[Engine]:
    """The loaded engines that may take ``x`` (only those are imported; see ``_load_for``)."""
    names = _load_for(type(x))
    loaded = _REGISTRY.loaded
    return [loaded[name] for name in names]


def load_engine(name: str) -> Engine | None:
    """The engine registered as ``name`` (loaded on first use), or None.

    ``"NAME:VARIANT"`` is the variant ``VARIANT`` of the registered engine ``NAME`` (see
    :func:`engine_variants`). None when it is not installed, failed to load, or offers no
    such variant (:func:`failure` says which).

    Raises:
        SpecError: if ``name`` is not a str.
    """
    base, sep, variant = _engine_name(name).partition(":")
    _discover()
    eng = _load(base) if base in _REGISTRY.points else None
    if eng is None or not sep:
        return eng
    return engine_variants(eng).get(variant)


def _engine_name(name: object) -> str:
    """``name`` if it is a str, the way engines are named (``"ref"``, ``"torch:eager"``).

    Raises:
        SpecError: for anything else, quoting it.
    """
    if not isinstance(name, str):
        raise SpecError(
            f"an engine is named by a str such as 'ref', 'torch' or 'NAME:VARIANT', "
            f"got {quote(name)} ({type(name).__name__})"
        )
    return name


def engine_variants(engine: Engine) -> dict[str, Engine]:
    """The variants ``engine`` offers by name (its optional ``variants`` mapping; {} if none).

    A variant is an engine in its own right (the same protocol, named ``"NAME:VARIANT"``)
    that is reached only by its name: the front door picks among registered engines.
    """
    found = getattr(engine, "variants", None)
    return {str(k): v for k, v in found.items()} if found else {}


def load_engines() -> LoadedEngines:
    """Load every engine registered under ``tcast.engines`` (once per process).

    An entry point that fails to import (say, tcast-triton without triton) is
    recorded in ``failures`` with its error instead of breaking the others.
    """
    _discover()
    for name in sorted(_REGISTRY.points):
        _load(name)
    reg = _REGISTRY
    return LoadedEngines(dict(sorted(reg.loaded.items())), dict(sorted(reg.failures.items())))


def failure(name: str) -> str | None:
    """Why the engine ``name`` (or ``"NAME:VARIANT"``) failed to load, if it did."""
    base, sep, variant = _engine_name(name).partition(":")
    if sep and _discover() and base in _REGISTRY.points:
        _import_engine(base)  # a variant's base, loaded to see what it offers
    why = _REGISTRY.failures.get(base)
    if why is not None or not sep or base not in _REGISTRY.loaded:
        return why
    offered = engine_variants(_REGISTRY.loaded[base])
    if variant in offered:
        return None
    return (
        f"engine {quote(base)} offers no variant {quote(variant)}; its variants: "
        f"{', '.join(sorted(offered)) or 'none'}"
    )


def engines() -> dict[str, Engine]:
    """The installed engines by name."""
    return load_engines().engines
