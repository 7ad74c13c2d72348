"""The normalized request: every argument of a cast, checked once (SEMANTICS.md §3.3, §9).

``tcast.cast`` and every engine's public ``cast`` build a :class:`CastRequest` the same way
(:func:`normalize_args`, then the engine's ``request``), so an argument is checked exactly
once per call and every engine accepts and refuses the same arguments.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

from .._lookup import datatype
from .._text import quote
from ..datatype import DataType
from ..engine import CastModes
from ..errors import SpecError, UnsupportedError
from ..hadamard import Hadamard, group_dim
from ..layout import BlockedScales, BlockLayout, block_layout, blocked_refusal, blocked_scales
from ..modes import CastMode, RoundMode, ScaleLayout, ScaleMode
from ..philox import check_random_source
from ._given import GIVEN_PARTS, GivenScales, check_given_parts, given_shapes
from ._rules import CastRules, cast_rules

__all__ = [
    "INPUT_DTYPE_NAMES",
    "CastRequest",
    "arguments_key",
    "as_datatype",
    "input_dtype_name",
    "normalize_args",
    "normalize_seed",
    "transform_dim",
]

#: The input dtypes every engine accepts (SEMANTICS.md §9), by name.
INPUT_DTYPE_NAMES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class CastRequest:
    """One cast, normalized: what an engine's ``cast`` receives.

    Attributes:
        dtype: the datatype.
        modes: the cast, round and scale modes and the two flags.
        seed: the Philox seed (an int in [0, 2**64)) or None.
        rbits: the explicit random bits (the engine's array, checked by the engine) or None.
        shape: the input's shape.
        input_dtype: the input's dtype name (float32, float16 or bfloat16).
        layout: the blocks over ``shape`` (scaled datatypes), else None.
        rules: every rule of the datatype under the scale mode (:func:`tcast.kit.cast_rules`).
        given: the given scale parts (SEMANTICS.md §5.12: the engine's checked arrays), or
            None where every part is computed.
    """

    dtype: DataType
    modes: CastModes
    seed: int | None
    rbits: Any
    shape: tuple[int, ...]
    input_dtype: str
    layout: BlockLayout | None
    rules: CastRules
    given: GivenScales | None = None

    @property
    def castmode(self) -> CastMode:
        """The cast mode."""
        return self.modes.castmode

    @property
    def roundmode(self) -> RoundMode:
        """The round mode."""
        return self.modes.roundmode

    @property
    def scalemode(self) -> ScaleMode:
        """The scale mode."""
        return self.modes.scalemode

    @property
    def saturate(self) -> bool:
        """Unscaled casts: overflow to +-max (True) or IEEE-style."""
        return self.modes.saturate

    @property
    def transpose_scale(self) -> bool:
        """Whether the two segments of a 2-D tile are swapped."""
        return self.modes.transpose_scale

    @property
    def blocked(self) -> BlockedScales | None:
        """The blocked scale matrix when the scales are stored blocked (§8.1), else None."""
        if self.modes.scale_layout is not ScaleLayout.BLOCKED:
            return None
        return blocked_scales(self.layout, self.dtype)

    @property
    def virtual(self) -> bool:
        """Whether the result is an array of the input dtype."""
        return self.modes.castmode is CastMode.VIRTUAL

    @property
    def transform(self) -> Hadamard | None:
        """The transform applied before the cast (SEMANTICS.md §5.11), or None."""
        return self.modes.transform


def transform_dim(dtype: DataType, layout: BlockLayout | None, h: Hadamard) -> int:
    """The dimension a cast's transform runs along: the datatype's one tiled dimension.

    SEMANTICS.md §5.11: the scaled dimension, whose length must be a multiple of the
    transform's group size (:func:`tcast.group_dim`).

    Raises:
        SpecError: for an unscaled or tensor-scaled datatype, tiles along several
            dimensions, or a length that is not a multiple of the group size.
    """
    if layout is None or len(layout.dims) != 1:
        what = (
            "is unscaled"
            if layout is None
            else "has one tensor scale"
            if not layout.dims
            else f"is tiled along {len(layout.dims)} dimensions"
        )
        raise SpecError(
            f"a cast's transform runs along the datatype's one tiled dimension, and "
            f"{dtype.name} {what}; transform x along the dimension you choose "
            f"(tcast_ref.hadamard, tcast_torch.hadamard) and cast the result instead"
        )
    return group_dim(layout.shape, layout.dims[0], h)


def as_datatype(dtype: DataType | str) -> DataType:
    """A DataType from itself or a catalog name or code.

    Raises:
        SpecError: for a name or code tcast does not define.
    """
    return dtype if isinstance(dtype, DataType) else datatype(dtype)


def normalize_seed(seed: object) -> int | None:
    """The seed as an int in [0, 2**64), or None.

    Any integer type is accepted (``numpy.int64(7)`` as well as ``7``); bool is not.

    Raises:
        SpecError: for a non-integer or out-of-range seed.
    """
    if seed is None:
        return None
    # numbers.Integral: Python and NumPy integers, not bool, not 0-d arrays or tensors
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise SpecError(f"seed {quote(seed)} must be an int in [0, 2**64)")
    value = int(seed)
    if not 0 <= value < 1 << 64:
        raise SpecError(f"seed {quote(seed)} must be an int in [0, 2**64)")
    return value


def arguments_key(
    dtype: object,
    castmode: object,
    roundmode: object,
    scalemode: object,
    saturate: object,
    transpose_scale: object,
    scale_layout: object,
    transform: object = None,
    stream: object = 0,
) -> tuple:
    """A cache key of a cast's arguments as given (without a random source).

    Two calls with equal keys have the same :func:`normalize_args` result and the same
    labels: the datatype's name is in the key (equal datatypes may carry other names), and
    so are the flags' types (``True`` and ``1`` are equal, but only ``True`` is accepted).
    The key may be unhashable (a list for a datatype): the caller then checks the arguments
    without a cache.
    """
    return (
        dtype,
        getattr(dtype, "name", None),
        castmode,
        roundmode,
        scalemode,
        saturate,
        transpose_scale,
        scale_layout,
        type(saturate),
        type(transpose_scale),
        transform,
        stream,
        type(stream),
    )


def normalize_args(
    dtype: DataType | str,
    castmode: CastMode | str = "virtual",
    roundmode: RoundMode | str = "even",
    scalemode: ScaleMode | str = "floor",
    seed: object = None,
    rbits: Any = None,
    saturate: bool = True,
    transpose_scale: bool = False,
    scale_layout: ScaleLayout | str = "plain",
    transform: Hadamard | None = None,
    stream: int = 0,
) -> tuple[DataType, CastModes, int | None]:
    """Check the arguments that do not depend on the array: datatype, modes, random source.

    Returns:
        ``(datatype, modes, seed)``, the seed normalized.

    Raises:
        SpecError: for a bad datatype, mode, flag or seed; both or neither of seed and rbits
            under stochastic rounding, or either without it; the blocked scale layout for a
            virtual cast or a datatype it does not apply to (:func:`tcast.blocked_refusal`);
            a transform that is not a :class:`tcast.Hadamard`; a stream that is not an int
            in [0, 2**32), or a non-zero one without a seed (SEMANTICS.md §3.3).
    """
    dt = as_datatype(dtype)
    modes = CastModes.of(
        castmode, roundmode, scalemode, saturate, transpose_scale, scale_layout, transform, stream
    )
    if modes.scale_layout is ScaleLayout.BLOCKED:
        why = blocked_refusal(dt)
        if why:
            raise SpecError(f"scale_layout='blocked' does not apply to {dt.name}: {why}")
    check_random_source(modes.roundmode, seed, rbits, modes.stream)
    return dt, modes, normalize_seed(seed)


def input_dtype_name(x: Any, engine: str = "tcast", what: str = "arrays") -> str:
    """The input dtype name of a NumPy-like array: ``x.dtype`` printed, its module dropped.

    Engines whose arrays print their dtype otherwise override ``EngineBase.input_dtype``.

    Raises:
        UnsupportedError: naming the dtype, for anything but float32, float16 and bfloat16.
    """
    name = str(getattr(x, "dtype", type(x).__name__)).rsplit(".", 1)[-1]
    if name not in INPUT_DTYPE_NAMES:
        why = (
            ": float64 is refused rather than rounded twice behind your back; round it to "
            "float32 yourself"
            if name == "float64"
            else ""
        )
        raise UnsupportedError(
            f"{engine} does not cast {what} of dtype {name}: the input dtypes are float32, "
            f"float16 and bfloat16 (SEMANTICS.md §9); convert first{why}"
        )
    return name


def make_request(
    dt: DataType,
    modes: CastModes,
    seed: int | None,
    rbits: Any,
    shape: tuple[int, ...],
    input_dtype: str,
    rules: CastRules | None = None,
    given: GivenScales | None = None,
) -> CastRequest:
    """The request from checked arguments and the array's shape and dtype name.

    ``rules`` are ``cast_rules(dt, modes.scalemode)`` when the caller has them already (a
    compiled function built for one datatype holds them). ``given``: parts the engine has
    checked (``EngineBase.request``); their datatype and shapes are checked here.

    Raises:
        SpecError: for a tile segment naming a dimension the shape lacks, a transform
            the datatype and shape do not take (:func:`transform_dim`), or given parts the
            datatype has no place for or of the wrong shape (SEMANTICS.md §5.12).
    """
    if modes.scale_layout is ScaleLayout.BLOCKED:
        # CastModes.of and normalize_args refuse these; a CastModes built by hand does not
        why = "a virtual cast has no scales" if modes.virtual_mode else blocked_refusal(dt)
        if why:
            raise SpecError(f"scale_layout='blocked' does not apply to {dt.name}: {why}")
    layout = None if dt.sspec is None else block_layout(shape, dt, modes.transpose_scale)
    if modes.transform is not None:
        transform_dim(dt, layout, modes.transform)
    if given is not None:
        check_given_parts(dt, *(getattr(given, n) for n in GIVEN_PARTS))
        assert layout is not None  # a scaled datatype (check_given_parts)
        want = given_shapes(layout)
        for name, part in given.items():
            got = tuple(getattr(part, "shape", ()))
            if got != want[name]:
                raise SpecError(
                    f"{name} has shape {got}; casting shape {shape} to {dt.name} needs "
                    f"{want[name]} (one value per block, SEMANTICS.md §5.1)"
                )
    if rules is None:
        rules = cast_rules(dt, modes.scalemode)
    return CastRequest(dt, modes, seed, rbits, shape, input_dtype, layout, rules, given)
