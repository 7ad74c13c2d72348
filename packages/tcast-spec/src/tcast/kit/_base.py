"""The engine base class: what every engine shares, so that an engine implements array work only.

A subclass sets ``name``, ``array_type`` (and ``array_what`` for messages) and
``result_ops`` (its :class:`~tcast.kit.ArrayOps`), and implements :meth:`EngineBase.run` (the
cast of a normalized request), :meth:`EngineBase.run_upcast` (the decode of a checked result)
and :meth:`EngineBase.check_rbits`; :meth:`EngineBase.check_result_arrays` may add checks of
its own arrays (torch: one device), and overrides :meth:`EngineBase.refusal` for array
subclasses and layouts it cannot cast as they are (``tcast.kit._arrays``). The base gives
the protocol's ``accepts``, ``supports``, ``request``, ``cast`` and ``upcast``, and
:meth:`EngineBase.cast_args`, the body of an engine's public ``cast`` function. See
docs/engines.md.
"""

from __future__ import annotations

from typing import Any

from ..datatype import DataType
from ..engine import CastModes, CastResult
from ..errors import SpecError, UnsupportedError
from ..modes import CastMode, RoundMode, ScaleLayout, ScaleMode
from ..philox import check_random_source
from ._blocked import plain_result
from ._check import check_result_codes, check_result_parts, with_int_shape
from ._dual import dual_by_casts, dual_with
from ._given import GivenScales, check_given_parts, given_or_none
from ._request import CastRequest, input_dtype_name, make_request, normalize_args
from ._results import ArrayOps
from ._rules import CastRules, cast_rules
from ._trace import tracing
from ._transform import cast_transformed, upcast_transformed

__all__ = ["EngineBase", "cast_with"]


def cast_with(
    engine: Any,
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
    transform: Any = None,
    stream: int = 0,
    scale: Any = None,
    zero: Any = None,
    tensor_scale: Any = None,
) -> Any:
    """Cast with one engine through its protocol, from keyword arguments.

    The arguments are checked once (:func:`normalize_args`), the engine builds the request
    for ``x`` (with the given ``scale``, ``zero`` and ``tensor_scale`` parts, SEMANTICS.md
    §5.12, where any is given) and casts it. An engine's public ``cast`` function, the
    golden-vector verifier and the conformance suite call engines this way.

    Raises:
        SpecError, UnsupportedError: as the engine's ``request`` and ``cast`` do.
    """
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
    given = given_or_none(scale, zero, tensor_scale)
    if given is None:
        return engine.cast(x, engine.request(x, dt, modes, seed, rbits))
    return engine.cast(x, engine.request(x, dt, modes, seed, rbits, given))


def _has_subtile_or_codebook(dtype: DataType) -> bool:
    # loops, not any(generator): this runs while torch.compile traces a cast
    if dtype.nspec.is_codebook:
        return True
    if dtype.sspec is not None:
        for t in dtype.sspec.tiles:
            if t.subtile:
                return True
    return False


class EngineBase:
    """Shared plumbing of an engine (subclass it; see the module docstring).

    Attributes:
        name: the engine's name (its entry-point name).
        priority: the highest priority wins when several engines take an array.
        array_type: the array type(s) the engine casts.
        array_what: how messages name those arrays ("NumPy arrays").
        array_one: how messages name one of them ("a NumPy array").
        result_ops: the engine's array operations for CastResults (build, check, unpack).
        subtiles_and_codebooks: whether the engine implements subtiles (exponent offsets,
            SEMANTICS.md §5.8) and codebook data (§5.9); :meth:`supports` refuses them
            when False.
        transforms: whether the engine casts with a transform (SEMANTICS.md §5.11): it
            implements :meth:`hadamard`, :meth:`round_to_input` and :meth:`widen`, and the
            base composes the cast and the decode from them; :meth:`supports` refuses
            transforms when False.
        given_scales: whether the engine casts with given scales, zero points and tensor
            scales (SEMANTICS.md §5.12): it implements :meth:`check_given` and applies
            ``request.given`` (:func:`~tcast.kit.given_scale_recipe`); :meth:`request`
            refuses given parts when False.
    """

    name: str = ""
    priority: int = 0
    array_type: type | tuple[type, ...] = ()
    array_what: str = "arrays"
    array_one: str = "an array"
    result_ops: ArrayOps | None = None
    subtiles_and_codebooks: bool = False
    transforms: bool = False
    given_scales: bool = False

    # ------------------------------------------------------------- the protocol
    def accepts(self, x: Any) -> bool:
        """Arrays of ``array_type`` (unsupported dtypes are refused by ``cast`` with a reason)."""
        return isinstance(x, self.array_type)

    def supports(self, dtype: DataType, modes: CastModes) -> bool:
        """Every valid datatype under every mode (override to refuse some).

        Subtiles and codebook data only where :attr:`subtiles_and_codebooks` is True, a
        transform only where :attr:`transforms` is True.
        """
        if not (isinstance(dtype, DataType) and isinstance(modes, CastModes)):
            return False
        if modes.transform is not None and not self.transforms:
            return False
        return self.subtiles_and_codebooks or not _has_subtile_or_codebook(dtype)

    def request(
        self,
        x: Any,
        dtype: DataType,
        modes: CastModes,
        seed: int | None,
        rbits: Any,
        given: GivenScales | None = None,
    ) -> CastRequest:
        """The normalized request for ``x`` from checked arguments (:func:`normalize_args`).

        ``given``: given scale parts (SEMANTICS.md §5.12), each checked by
        :meth:`check_given` and against the datatype and the scale array's shape.

        Raises:
            UnsupportedError: ``x`` is not an array of this engine or of an accepted dtype,
                or ``x``, ``rbits`` or a given part is an array subclass or layout the engine
                refuses (:meth:`refusal`), or ``dtype`` has subtiles or codebook data and the
                engine does not set :attr:`subtiles_and_codebooks`, or parts are given to an
                engine that does not set :attr:`given_scales`.
            SpecError: bad rbits or given parts, or a tile segment naming a dimension ``x``
                lacks.
        """
        if not self.accepts(x):
            raise UnsupportedError(f"{self.label} casts {self.array_what}, not {type(x).__name__}")
        if not self.subtiles_and_codebooks and _has_subtile_or_codebook(dtype):
            # an engine's own cast() builds its request here without asking supports(): an
            # engine that does not read metadata must not cast these as if they had none
            raise UnsupportedError(
                f"{self.label} does not cast {dtype.name}: subtile and codebook datatypes are "
                f"cast by engines that set subtiles_and_codebooks (the reference engine 'ref', "
                f"on NumPy arrays)"
            )
        self.check_array(x, "x")
        in_name = self.input_dtype(x)
        if rbits is not None:
            if self.accepts(rbits):
                self.check_array(rbits, "rbits")
            rbits = self.check_rbits(x, rbits, dtype.nspec.rbits_width)
        if given is not None:
            given = self._checked_given(x, dtype, given)
        return make_request(
            dtype, modes, seed, rbits, tuple(x.shape), in_name, self.rules(dtype, modes), given
        )

    def _checked_given(self, x: Any, dtype: DataType, given: GivenScales) -> GivenScales:
        if not self.given_scales:
            raise UnsupportedError(
                f"{self.label} does not cast with given scales, zero points or tensor scales "
                f"(SEMANTICS.md §5.12): 'ref' (NumPy arrays), 'torch' (torch tensors and DTensors, "
                f"eager or compiled) and 'triton' (CUDA tensors) do"
            )
        if not isinstance(given, GivenScales):
            raise SpecError(f"given must be a tcast.kit.GivenScales, got {type(given).__name__}")
        check_given_parts(dtype, given.scale, given.zero, given.tensor_scale)
        parts = {}
        for name, part in given.items():
            if self.accepts(part):
                self.check_array(part, name)
            parts[name] = self.check_given(x, part, name, signed=name == "zero")
        return GivenScales(**parts)

    def cast(self, x: Any, request: CastRequest) -> Any:
        """Cast ``x`` as ``request`` says: the virtual array, or a CastResult.

        Raises:
            UnsupportedError: for a request ``supports`` refuses, or an ``x`` that
                :meth:`refusal` refuses.
            SpecError: for a request not made for ``x``.
        """
        self.check_request(x, request)
        if request.modes.transform is not None:
            return cast_transformed(self, self.run, x, request)
        return self.run(x, request)

    def check_request(self, x: Any, request: Any) -> None:
        """What :meth:`cast` checks before running a request.

        Raises:
            UnsupportedError: for a request ``supports`` refuses, or an ``x`` that
                :meth:`refusal` refuses.
            SpecError: for something else than a CastRequest, one not made for ``x``, or
                one whose random source does not fit its round mode (SEMANTICS.md §3.3).
        """
        if not isinstance(request, CastRequest):
            raise SpecError(
                f"{self.label}: cast takes x and a tcast.kit.CastRequest, got "
                f"{type(request).__name__}; build one with engine.request(...)"
            )
        check_random_source(request.roundmode, request.seed, request.rbits, request.modes.stream)
        if not self.supports(request.dtype, request.modes):
            raise UnsupportedError(
                f"engine {self.name!r} does not support {request.dtype.name} with {request.modes}"
            )
        if not self.accepts(x) or tuple(x.shape) != request.shape:
            raise SpecError(
                f"{self.label}: the request was made for an input of shape "
                f"{request.shape}, not this {type(x).__name__}"
            )
        self.check_array(x, "x")
        if self.input_dtype(x) != request.input_dtype:
            raise SpecError(
                f"{self.label}: the request was made for a {request.input_dtype} input, not "
                f"{self.input_dtype(x)}; make one for this x with engine.request(x, ...)"
            )

    def upcast(self, result: CastResult) -> Any:
        """Decode an actual or compress result to float32 (equal to the virtual cast).

        The result is checked whole first (:meth:`check_result`), so that a malformed result
        never reaches the decode.

        Raises:
            SpecError: if ``result`` is not a valid result of this engine's arrays
                (:meth:`check_result`).
            UnsupportedError: for a part that :meth:`refusal` refuses, or a result with a
                transform on an engine that does not set :attr:`transforms`.
        """
        result = with_int_shape(result) if isinstance(result, CastResult) else result
        self.check_result(result)
        plain = plain_result(result, self.result_ops)
        if plain.transform is not None:
            if not self.transforms:
                raise UnsupportedError(
                    f"{self.label} does not decode results cast with a transform (SEMANTICS.md "
                    f"§5.11): upcast it with an engine that sets transforms (tcast_ref, "
                    f"tcast_torch)"
                )
            return upcast_transformed(self, self.run_upcast, plain)
        return self.run_upcast(plain)

    def check_result(self, result: CastResult) -> None:
        """Refuse anything but a valid actual or compress result of this engine's arrays.

        In order (SEMANTICS.md §8, "A valid result"): array parts :meth:`refusal` refuses;
        the parts' types, dtypes and shapes (:func:`~tcast.kit.check_result_parts`); the
        engine's own array checks (:meth:`check_result_arrays`); then their codes
        (:func:`~tcast.kit.check_result_codes`), where the arrays hold values
        (:meth:`holds_values`).

        Raises:
            SpecError: if ``result`` is not an actual/compress CastResult whose parts are
                arrays of this engine that fit its datatype and shape and hold codes of its
                formats, naming the first part that does not.
            UnsupportedError: for a part that :meth:`refusal` refuses.
        """
        if not isinstance(result, CastResult) or result.castmode is CastMode.VIRTUAL:
            raise SpecError("upcast takes the CastResult of an actual or compress cast")
        ops = self.result_ops
        if ops is None:
            raise NotImplementedError(f"{self.label} sets no result_ops (tcast.kit.ArrayOps)")
        for part in ("data", "scale", "zero", "tenscale", "mask", "meta"):
            a = getattr(result, part)
            if isinstance(a, self.array_type):
                self.check_array(a, f"CastResult.{part}")
        forms = check_result_parts(result, ops, self.array_type, self.array_one)
        self.check_result_arrays(result)
        if self.holds_values(result):
            check_result_codes(result, ops, forms)

    def holds_values(self, result: CastResult) -> bool:
        """Whether ``result``'s arrays hold values whose codes can be read (default True).

        An engine whose arrays may carry only dtypes and shapes (torch's meta device)
        returns False for such a result: its parts are checked, its codes are not.
        """
        return True

    def cast_dual(
        self, x: Any, rows: CastRequest, cols: CastRequest, transposed: bool
    ) -> tuple[Any, Any]:
        """The two casts of ``tcast.cast_dual``, by default two casts (``dual_by_casts``).

        ``rows`` and ``cols`` are checked requests of one datatype's row and column tilings.
        An engine with a kernel that reads ``x`` once overrides this (the same bits).
        """
        return dual_by_casts(self, x, rows, cols, transposed)

    # ------------------------------------------------------------- public functions
    def cast_args(self, x: Any, dtype: DataType | str, **kwargs: Any) -> Any:
        """The body of an engine's public ``cast(x, dtype, **modes)``: :func:`cast_with`."""
        return cast_with(self, x, dtype, **kwargs)

    def cast_dual_args(self, x: Any, dtype: DataType | str, **kwargs: Any) -> tuple[Any, Any]:
        """The body of an engine's public ``cast_dual``: :func:`~tcast.kit.dual_with`."""
        return dual_with(self, x, dtype, **kwargs)

    def rules(self, dtype: DataType, modes: CastModes) -> CastRules:
        """The request's rules (:func:`tcast.kit.cast_rules`), not memoized while traced.

        While torch.compile traces (torch imported and compiling), missing rules are
        computed without storing them: a store would be a side effect dynamo must replay.
        """
        return cast_rules(dtype, modes.scalemode, remember=not tracing())

    def check_array(self, a: Any, role: str) -> None:
        """Refuse an array of ``array_type`` that :meth:`refusal` refuses.

        Raises:
            UnsupportedError: naming ``role`` (``x``, ``rbits``, a CastResult part), the
                reason and the conversion to apply first.
        """
        why = self.refusal(a)
        if why is not None:
            raise UnsupportedError(f"{self.label} does not take {role}: it is {why}")

    def call_for(self, x: Any, dtype: DataType, modes: CastModes, seed: int | None) -> Any:
        """A call object for repeated casts like this one, or None (the base: None).

        Optional host-time path of :func:`tcast.cast`: for a call it has seen before (the
        same kind of array, datatype, modes and engine), the front door asks once per
        shape and dtype of ``x`` and keeps the answer. A call object has ``takes(x)``, True
        only for arrays the engine accepts, does not refuse and would cast just as this
        request (it may check more: the front door then takes the general path), and
        ``call(x)`` or ``call(x, seed)`` (a checked seed, for stochastic rounding from a
        seed; ``seed`` here is the first call's) giving the cast's result. Only called
        outside a trace, without ``rbits`` and without a transform.
        """
        return None

    def given_refusal(self, x: Any) -> str | None:
        """Why this engine cannot cast ``x`` with given scale parts, or None when it can.

        For engines that set :attr:`given_scales` but take given parts for some arrays only
        (the Triton engine and DTensors): the front door then picks another engine that
        takes them. The base refuses nothing.
        """
        return None

    def refusal(self, a: Any) -> str | None:
        """Why an array of ``array_type`` cannot be used as it is, or None when it can.

        Engines override this for array subclasses and layouts whose operations are not
        their library's plain ones (``tcast.kit._arrays``): the reason names the array and
        the conversion to apply ("a DTensor; cast x.to_local() ..."). The base refuses
        nothing. It must stay traceable (an engine's cast may run under a compiler).
        """
        return None

    def input_dtype(self, x: Any) -> str:
        """The name of x's dtype (float32, float16 or bfloat16).

        Raises:
            UnsupportedError: naming any other dtype.
        """
        return input_dtype_name(x, self.label, self.array_what)

    @property
    def label(self) -> str:
        """How messages name the engine: its package (and variant: ``tcast_torch (compiled)``)."""
        base, sep, variant = self.name.partition(":")
        if not base:
            return type(self).__name__
        return f"tcast_{base} ({variant})" if sep else f"tcast_{base}"

    # ------------------------------------------------------------- for subclasses
    def check_rbits(self, x: Any, rbits: Any, width: int) -> Any:
        """Check explicit random bits against ``x`` (type, dtype, shape, device); return them.

        ``width``: ``K`` (SEMANTICS.md §3.2), the bits of each integer: the array's dtype
        must be the engine's unsigned (or same-width signed) integer type of ``K`` bits.

        Raises:
            SpecError: for rbits that do not fit.
        """
        raise NotImplementedError

    def check_given(self, x: Any, part: Any, name: str, *, signed: bool) -> Any:
        """Check one given scale part (engines that set :attr:`given_scales`); return it.

        ``part``: an array of the engine's (or a real number, for a part of shape ``()``)
        whose values are float32 values (float32, float16 or bfloat16), finite, and not
        negative unless ``signed`` (zero points); on ``x``'s device. Its shape is checked by
        :func:`~tcast.kit.make_request`. Returns what the engine's cast reads (float32).

        Raises:
            SpecError: naming ``name`` and the first bad value or the dtype to use instead.
        """
        raise NotImplementedError

    def check_result_arrays(self, result: CastResult) -> None:
        """Checks of the engine's own between the kit's (none by default).

        The kit has checked the parts' presence, types, dtypes and shapes, and checks their
        codes afterwards; an engine refuses here what only its arrays can get wrong (torch:
        parts on different devices).

        Raises:
            SpecError: for arrays the engine cannot decode together.
        """

    def run(self, x: Any, request: CastRequest) -> Any:
        """The cast itself (arguments are checked)."""
        raise NotImplementedError

    def run_upcast(self, result: CastResult) -> Any:
        """The decode itself (the result is checked, its scales in the plain layout)."""
        raise NotImplementedError

    # ------------------------------------------------------------- transforms (§5.11)
    def hadamard(self, x: Any, h: Any, dim: int, inverse: bool) -> Any:
        """The transform of ``x`` along ``dim`` as a float32 array (engines with transforms)."""
        raise NotImplementedError

    def round_to_input(self, v: Any, input_dtype: str) -> Any:
        """float32 values rounded to nearest even in ``input_dtype`` (engines with transforms)."""
        raise NotImplementedError

    def widen(self, v: Any) -> Any:
        """An array of an input dtype as float32, exactly (engines with transforms)."""
        raise NotImplementedError
