"""The engine kit: every rule that is not array arithmetic, once, for every engine.

* :class:`CastRequest` and :func:`normalize_args`: a cast's arguments, checked once;
* :func:`cast_rules`: per datatype and scale mode, the element maximum and limits, the
  power-of-two scale rule as two integers (:class:`ExponentScaleRule`), and the float-scale,
  two-level, zero-point, element and upcast arithmetic as ordered float32 steps
  (:class:`Recipe`, evaluated by :func:`run_recipe` with an engine's array operations);
* :func:`special_codes`: per element format, round mode and ``saturate``, the codes of
  overflowing, infinite, NaN and zero inputs and which codes decode to ±Inf or NaN
  (:class:`SpecialCodes`);
* :func:`build_result` / :func:`upcast_parts`: CastResult assembly and unpacking;
  :func:`to_blocked` / :func:`from_blocked`: scales in the blocked GEMM layout (§8.1);
* :func:`run_dual` and :func:`dual_by_casts`: ``tcast.cast_dual``'s rules (row and column
  tilings of one datatype, the transposed second result);
* :func:`result_form`, :func:`check_result_parts`, :func:`check_result_codes`: what a valid
  CastResult is, checked before an upcast decodes it (:func:`with_int_shape`: its shape
  as Python ints first);
* :func:`shard_blocks`, :func:`cut_blocks`, :func:`groups_cut`, :func:`part_grid_starts`:
  which blocks of a sharded array its parts share (SEMANTICS.md §9.1), for engines that cast
  shards (tcast_torch's DTensor path);
* :func:`native_parts` / :class:`NativeParts`: a result's codes viewed as the ecosystem's
  dtypes (``tcast.native``), through the optional ``native_view`` of an engine's result
  operations (:class:`NativeOps`); :func:`native_name`: which dtype that is, by name;
* :class:`EngineBase`: the engine protocol's plumbing, so an engine implements array work only;
  :func:`own_hooks`: which array subclasses an engine casts as they are (``EngineBase.refusal``);
* :func:`quote`: untrusted input (codes, header fields, arguments) quoted in a message, cut
  to a bounded prefix.

Pure Python with no dependencies; docs/engines.md shows how to write an engine on it.
"""

from .._native import NATIVE_NAMES, PACKED_NAMES, native_name
from .._text import quote
from ._arrays import own_hooks
from ._base import EngineBase, cast_with
from ._blocked import from_blocked, plain_result, to_blocked
from ._check import (
    PartForm,
    check_result_codes,
    check_result_parts,
    code_dtype_name,
    result_form,
    result_shape,
    with_int_shape,
)
from ._dual import (
    check_transposed,
    column_datatype,
    dual_args,
    dual_by_casts,
    dual_givens,
    dual_requests,
    dual_with,
    run_dual,
    transposed_request,
)
from ._given import (
    GIVEN_PARTS,
    GivenScales,
    bad_given_value,
    check_given_parts,
    given_number,
    given_or_none,
    given_shapes,
    given_type_error,
    is_given_number,
)
from ._native import NativeOps, NativeParts, native_parts
from ._recipe import OPERATIONS, Recipe, RecipeOps, Step, run_recipe
from ._request import (
    INPUT_DTYPE_NAMES,
    CastRequest,
    arguments_key,
    as_datatype,
    input_dtype_name,
    make_request,
    normalize_args,
    normalize_seed,
    transform_dim,
)
from ._results import ArrayOps, UpcastParts, build_result, upcast_parts
from ._rules import (
    F32_MAX,
    NEVER,
    CastRules,
    ExponentScaleRule,
    cast_rules,
    element_max,
    exponent_scale_rule,
    given_exponent_rule,
    given_scale_recipe,
    nan_keeps_sign,
    range_scale_rule,
    scale_bounds,
    sig24,
)
from ._shards import (
    ShardBlocks,
    cut_blocks,
    groups_cut,
    pad_keeps,
    part_grid_starts,
    shard_blocks,
)
from ._specials import SpecialCodes, special_codes
from ._transform import TransformOps, cast_transformed, inner_request, upcast_transformed

__all__ = [
    "F32_MAX",
    "GIVEN_PARTS",
    "INPUT_DTYPE_NAMES",
    "NATIVE_NAMES",
    "NEVER",
    "OPERATIONS",
    "PACKED_NAMES",
    "ArrayOps",
    "CastRequest",
    "CastRules",
    "EngineBase",
    "ExponentScaleRule",
    "GivenScales",
    "NativeOps",
    "NativeParts",
    "PartForm",
    "Recipe",
    "RecipeOps",
    "ShardBlocks",
    "SpecialCodes",
    "Step",
    "TransformOps",
    "UpcastParts",
    "arguments_key",
    "as_datatype",
    "bad_given_value",
    "build_result",
    "cast_rules",
    "cast_transformed",
    "cast_with",
    "check_given_parts",
    "check_result_codes",
    "check_result_parts",
    "check_transposed",
    "code_dtype_name",
    "column_datatype",
    "cut_blocks",
    "dual_args",
    "dual_by_casts",
    "dual_givens",
    "dual_requests",
    "dual_with",
    "element_max",
    "exponent_scale_rule",
    "from_blocked",
    "given_exponent_rule",
    "given_number",
    "given_or_none",
    "given_scale_recipe",
    "given_shapes",
    "given_type_error",
    "groups_cut",
    "inner_request",
    "input_dtype_name",
    "is_given_number",
    "make_request",
    "nan_keeps_sign",
    "native_name",
    "native_parts",
    "normalize_args",
    "normalize_seed",
    "own_hooks",
    "pad_keeps",
    "part_grid_starts",
    "plain_result",
    "quote",
    "range_scale_rule",
    "result_form",
    "result_shape",
    "run_dual",
    "run_recipe",
    "scale_bounds",
    "shard_blocks",
    "sig24",
    "special_codes",
    "to_blocked",
    "transform_dim",
    "transposed_request",
    "upcast_parts",
    "upcast_transformed",
    "with_int_shape",
]
