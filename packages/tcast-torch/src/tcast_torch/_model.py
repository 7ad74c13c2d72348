"""Fake quantization of a model's ``nn.Linear`` and ``nn.Conv2d`` layers, reversible.

``quantize_model(model, rules)`` gives each layer the first :class:`QuantRule` whose pattern
matches its name (``model.named_modules()``) and casts, virtually, the layer's weight (a
``torch.nn.utils.parametrize`` parametrization: the float master weight stays the parameter,
so QAT updates it through the straight-through estimator) and/or its input (a forward
pre-hook). :meth:`QuantHandle.remove` takes every parametrization and hook off again: the
state_dict, the parameter objects and the outputs are those of before.

Scaling axis. A datatype's tiles apply to a *canonical view* of each tensor, which puts the
GEMM reduction axis last (so 1-D tiles, which default to the last dimension, run along it):

===============  =====================  ==============  ===============================
tensor           canonical view         1-D blocks      2-D tiles (dims -2, -1)
===============  =====================  ==============  ===============================
Linear weight    ``[out, in]``          in-features     ``(out, in)``
Linear input     ``[..., in]``          features        ``(tokens, features)``
Conv2d weight    ``[kh, kw, out, in]``  in-channels     ``(out, in)`` at each kernel tap
Conv2d input     ``[N, H, W, C]``       channels        ``(W, C)``
===============  =====================  ==============  ===============================

Conv2d weights are blocked along in-channels (not over ``in*kh*kw``) because that is the
reduction an implicit-GEMM convolution in channels-last layout runs in blocks: its K index is
``(kh, kw, c)`` with ``c`` innermost, and the input is blocked along ``C`` at every pixel, so
weight and input blocks cover the same K indices, as a block-scaled (MX) GEMM needs. Explicit
tile dimensions in a datatype code (``t16d0``) also refer to the canonical view; a grouped
convolution's blocks run along the in-channels of its group (weight dim 1). Stochastic
rounding draws its Philox bits by the C-order flat index of the canonical view.

Engine. Tensors the ``triton`` engine takes (CUDA tensors, when tcast-triton is installed)
are cast by its kernels, with the same bits and the same gradients (``grad``) as this
engine's; everything else (CPU, meta tensors) by this engine.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn.utils import parametrize

from tcast import (
    DataType,
    RoundMode,
    ScaleMode,
    SpecError,
    TcastError,
    UnsupportedError,
    check_random_source,
    datatype,
    round_mode,
    scale_mode,
)
from tcast.engine import load_engine
from tcast.kit import GIVEN_PARTS, GivenScales, normalize_args, normalize_seed

from ._api import cast
from ._autograd import GRAD_MODES

__all__ = [
    "SUPPORTED_LAYERS",
    "AlreadyQuantizedError",
    "QuantHandle",
    "QuantRule",
    "QuantizedLayer",
    "quantize_model",
]

#: The layer types quantize_model quantizes (subclasses included).
SUPPORTED_LAYERS: tuple[type[nn.Module], ...] = (nn.Linear, nn.Conv2d)
#: The tensors of a layer that a rule can quantize.
ROLES = ("weight", "input")


class AlreadyQuantizedError(TcastError, RuntimeError):
    """The model already carries tcast_torch quantization (remove it first)."""


@dataclass(frozen=True)
class QuantRule:
    """How to fake-quantize the layers whose names match ``pattern``.

    A rule with neither ``weight`` nor ``input`` keeps the layers it matches in float (put
    it before a broader rule to exclude them: the first matching rule wins).

    Attributes:
        pattern: a glob matched against the whole module name with ``fnmatch.fnmatchcase``
            (``*`` matches any characters, dots included: ``"layers.*.mlp.*"``), or a
            compiled ``re.Pattern`` that must match the whole name (``re.fullmatch``).
        weight: the weight's datatype (DataType or catalog name/code), or None.
        input: the input activation's datatype, or None.
        roundmode: even, away, zero, trunc or stochastic (normalized to a RoundMode).
        scalemode: floor, ceil, midmax, option3 or topbinade (normalized to a ScaleMode).
        seed: stochastic rounding only, required there: the base seed from which every
            layer and tensor gets its own seed (see :meth:`QuantHandle.seed`).
        saturate: unscaled datatypes: overflow to +-max (True) or IEEE Inf/NaN.
        grad: ``"ste"`` (straight through) or ``"saturate"`` (zero where the cast clipped).
        engine: which engine casts: None (default) the ``triton`` engine for the tensors it
            takes (CUDA tensors, tcast-triton installed), else this one; ``"torch"`` always
            this one (the same bits and gradients either way).

    Raises:
        SpecError: a pattern that is neither a string nor a re.Pattern; an unknown datatype,
            round mode, scale mode, grad option or engine; a seed without stochastic rounding
            or stochastic rounding without a seed; a seed outside [0, 2**64); a non-bool
            saturate.
        UnsupportedError: a datatype tcast defines but does not support yet (codebooks).
    """

    pattern: str | re.Pattern[str]
    weight: DataType | str | None = None
    input: DataType | str | None = None
    roundmode: RoundMode | str = "even"
    scalemode: ScaleMode | str = "floor"
    seed: int | None = None
    saturate: bool = True
    grad: str = "ste"
    engine: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, (str, re.Pattern)):
            raise SpecError(
                f"QuantRule pattern must be a glob string or a compiled re.Pattern, "
                f"got {type(self.pattern).__name__} {self.pattern!r}"
            )
        for role in ROLES:
            value = getattr(self, role)
            if value is None:
                continue
            if not isinstance(value, (DataType, str)):
                raise SpecError(
                    f"QuantRule {role} must be a DataType, a datatype name or None, "
                    f"got {type(value).__name__} {value!r}"
                )
            object.__setattr__(self, role, datatype(value))
        rmode = round_mode(self.roundmode)
        object.__setattr__(self, "roundmode", rmode)
        object.__setattr__(self, "scalemode", scale_mode(self.scalemode))
        check_random_source(rmode, self.seed, None)
        object.__setattr__(self, "seed", normalize_seed(self.seed))
        if not isinstance(self.saturate, bool):
            raise SpecError(f"saturate must be True or False, got {self.saturate!r}")
        if self.grad not in GRAD_MODES:
            raise SpecError(f"grad {self.grad!r} is not defined; valid: {', '.join(GRAD_MODES)}")
        if self.engine not in (None, "torch"):
            raise SpecError(
                f"QuantRule engine {self.engine!r} is not defined; valid: None (the Triton "
                f"engine for CUDA tensors when installed, else torch) or 'torch'"
            )

    def matches(self, name: str) -> bool:
        """Whether this rule's pattern matches the module name ``name`` (the whole name)."""
        if isinstance(self.pattern, str):
            return fnmatch.fnmatchcase(name, self.pattern)
        return self.pattern.fullmatch(name) is not None

    @property
    def pattern_text(self) -> str:
        """The pattern as written (the regex source for a compiled pattern)."""
        return self.pattern if isinstance(self.pattern, str) else f"re:{self.pattern.pattern}"

    def describe(self) -> str:
        """One line: pattern, datatypes and the modes that differ from the defaults."""
        parts = [
            f"{self.pattern_text!r}",
            f"weight={_dt_name(self.weight)}",
            f"input={_dt_name(self.input)}",
        ]
        if self.roundmode is not RoundMode.EVEN:
            parts.append(f"roundmode={self.roundmode.value}")
        if self.scalemode is not ScaleMode.FLOOR:
            parts.append(f"scalemode={self.scalemode.value}")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        if not self.saturate:
            parts.append("saturate=False")
        if self.grad != "ste":
            parts.append(f"grad={self.grad}")
        if self.engine is not None:
            parts.append(f"engine={self.engine}")
        return ", ".join(parts)


def _dt_name(dt: DataType | str | None) -> str:
    return "-" if dt is None else str(dt)


@dataclass(frozen=True)
class QuantizedLayer:
    """One layer that :func:`quantize_model` quantized.

    Attributes:
        name: the module's name in ``model.named_modules()`` (``""`` for the model itself).
        kind: the layer type's name before parametrization (``"Linear"``, ``"Conv2d"``).
        rule: the rule that applies (the first whose pattern matches ``name``).
        rule_index: its position in the rules given to :func:`quantize_model`.
    """

    name: str
    kind: str
    rule: QuantRule
    rule_index: int

    @property
    def weight(self) -> DataType | None:
        """The weight's datatype, or None when the weight stays in float."""
        return self.rule.weight  # type: ignore[return-value]

    @property
    def input(self) -> DataType | None:
        """The input's datatype, or None when the input stays in float."""
        return self.rule.input  # type: ignore[return-value]


# ----------------------------------------------------------------- canonical views
def _is_conv(module: nn.Module) -> bool:
    return isinstance(module, nn.Conv2d)


def _weight_in_view(w: torch.Tensor, conv: bool, fn: Callable[[torch.Tensor], torch.Tensor]):
    """Apply fn to the weight's canonical view; the result has the weight's layout."""
    if not conv:
        return fn(w)
    # [out, in, kh, kw] -> [kh, kw, out, in]; the permutation (2, 3, 0, 1) is its own inverse
    return fn(w.permute(2, 3, 0, 1)).permute(2, 3, 0, 1).contiguous()


def _input_in_view(x: torch.Tensor, conv: bool, fn: Callable[[torch.Tensor], torch.Tensor]):
    """Apply fn to the input's canonical view (channels last for Conv2d); same layout out."""
    if not conv:
        return fn(x)
    channels_last = (
        x.dim() == 4
        and not x.is_contiguous()
        and x.is_contiguous(memory_format=torch.channels_last)
    )
    y = fn(x.movedim(-3, -1)).movedim(-1, -3)
    return y.contiguous(
        memory_format=torch.channels_last if channels_last else torch.contiguous_format
    )


# ----------------------------------------------------------------- sites
class _Site:
    """One quantized tensor (a layer's weight or input): what to cast it to, and how."""

    def __init__(self, name: str, role: str, conv: bool, rule: QuantRule, base_seed: int | None):
        self.name, self.role, self.conv, self.rule = name, role, conv, rule
        self.dtype: DataType = getattr(rule, role)
        self.seed: int | None = None
        # calibrated scale parts (SEMANTICS.md §5.12), given to every cast; None: computed
        self.given: dict[str, torch.Tensor] | None = None
        # the Triton engine's checked requests with the given parts, by input shape, dtype,
        # device, seed and the parts' own identity and version: static parts are checked (a
        # read back) once per kind of input, not on every forward pass, and parts changed
        # in place (calibrated() hands them out) are checked and read again
        self._given_requests: dict[tuple, Any] = {}
        self.reseed(base_seed, 0)

    def reseed(self, base: int | None, step: int) -> None:
        self.seed = None if base is None else _derive_seed(base, step, self.name, self.role)

    def cast(self, v: torch.Tensor) -> torch.Tensor:
        r = self.rule
        gpu = load_engine("triton") if r.engine is None else None
        if gpu is not None and gpu.accepts(v) and self._gpu_takes_given(gpu, v):
            # the Triton engine (CUDA tensors): the same bits and gradients, its kernels
            dt, modes, seed = normalize_args(
                self.dtype, "virtual", r.roundmode, r.scalemode, self.seed, None, r.saturate
            )
            if self.given is None:
                req = gpu.request(v, dt, modes, seed, None)
            else:
                req = self._given_request(gpu, v, dt, modes, seed)
            return gpu.cast_grad(v, req, r.grad)
        given = {} if self.given is None else {k: t.to(v.device) for k, t in self.given.items()}
        return cast(
            v,
            self.dtype,
            roundmode=r.roundmode,
            scalemode=r.scalemode,
            seed=self.seed,
            saturate=r.saturate,
            grad=r.grad,
            **given,
        )

    def _gpu_takes_given(self, gpu: Any, v: torch.Tensor) -> bool:
        """Whether the Triton engine casts ``v`` with this site's given parts (if any)."""
        if self.given is None:
            return True
        return gpu.given_scales and gpu.given_refusal(v) is None

    def _given_request(self, gpu: Any, v: torch.Tensor, dt, modes, seed) -> Any:
        """The engine's request with the given parts, checked once per kind of input."""
        key = None
        if not torch.compiler.is_compiling():  # traced, the parts are the graph's: not kept
            ids = tuple((k, id(t), t._version, t.device, t.dtype) for k, t in self.given.items())
            key = (tuple(v.shape), v.dtype, v.device, seed, ids)
            req = self._given_requests.get(key)
            if req is not None:
                return req
        parts = GivenScales(**{k: t.to(v.device) for k, t in self.given.items()})
        req = gpu.request(v, dt, modes, seed, None, parts)
        if key is not None:
            if len(self._given_requests) >= 8:  # a new seed every step: keep a few
                self._given_requests.clear()
            self._given_requests[key] = req
        return req

    def apply(self, t: torch.Tensor) -> torch.Tensor:
        """The fake-quantized tensor; engine errors name the layer."""
        view = _weight_in_view if self.role == "weight" else _input_in_view
        try:
            return view(t, self.conv, self.cast)
        except TcastError as e:
            raise type(e)(
                f"layer {self.name!r} {self.role} {tuple(t.shape)} ({self.dtype}): {e}"
            ) from e

    def describe(self) -> str:
        r = self.rule
        text = f"{self.dtype}, roundmode={r.roundmode.value}, scalemode={r.scalemode.value}"
        if self.given is not None:
            text += f", calibrated {'/'.join(self.given)}"
        if self.seed is not None:
            text += f", seed={self.seed}"
        return text + f", saturate={r.saturate}, grad={r.grad}"


def _derive_seed(base: int, step: int, name: str, role: str) -> int:
    """The seed of one layer's weight or input: BLAKE2b-64 of ``base/step/name/role``."""
    digest = hashlib.blake2b(f"{base}/{step}/{name}/{role}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class _WeightCast(nn.Module):
    """The parametrization of a quantized weight (holds no tensors: state_dict unchanged)."""

    def __init__(self, site: _Site):
        super().__init__()
        self.site = site

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        return self.site.apply(w)

    def extra_repr(self) -> str:
        return self.site.describe()


class _InputCast:
    """The forward pre-hook that fake-quantizes a layer's input (positional or ``input=``)."""

    def __init__(self, site: _Site):
        self.site = site

    def __call__(self, module: nn.Module, args: tuple, kwargs: dict) -> Any:
        if args and isinstance(args[0], torch.Tensor):
            x = args[0]
            if self.site.conv and x.dim() not in (3, 4):
                return None  # not a Conv2d input: let the layer raise its own error
            return (self.site.apply(x), *args[1:]), kwargs
        if isinstance(kwargs.get("input"), torch.Tensor):
            return args, {**kwargs, "input": self.site.apply(kwargs["input"])}
        return None


def _our_sites(module: nn.Module) -> list[str]:
    """The roles of ``module`` that carry tcast_torch quantization now."""
    found = []
    plists = getattr(module, "parametrizations", None)
    if isinstance(plists, nn.ModuleDict) and "weight" in plists:
        if any(isinstance(p, _WeightCast) for p in plists["weight"]):
            found.append("weight")
    if any(isinstance(h, _InputCast) for h in module._forward_pre_hooks.values()):
        found.append("input")
    return found


# ----------------------------------------------------------------- the handle
class QuantHandle:
    """The quantization :func:`quantize_model` applied; :meth:`remove` takes it off.

    Also a context manager: ``with quantize_model(model, rules) as h: ...`` removes the
    quantization on exit.

    Attributes:
        layers: the quantized layers, in ``model.named_modules()`` order.
    """

    def __init__(self, model: nn.Module, layers: tuple[QuantizedLayer, ...]):
        self._model = model
        self.layers = layers
        self._sites: dict[tuple[str, str], _Site] = {}
        self._undo: list[Callable[[], None]] = []
        self._step = 0

    @property
    def active(self) -> bool:
        """True until :meth:`remove` runs."""
        return self._model is not None

    def seed(self, name: str, role: str) -> int | None:
        """The seed that stochastic rounding of layer ``name``'s weight or input uses now.

        Every layer and tensor gets its own seed, so no two draw the same bits: the first 8
        bytes (little endian) of ``blake2b(f"{rule.seed}/{step}/{name}/{role}")``, with
        ``step`` set by :meth:`reseed` (0 at first). The bits are fixed while the seed is: the
        same input gives the same output at every call.

        Raises:
            SpecError: ``name``/``role`` is not a quantized layer tensor.
        """
        try:
            return self._sites[(name, role)].seed
        except KeyError:
            known = ", ".join(f"{n!r}/{r}" for n, r in self._sites) or "none"
            raise SpecError(f"no quantized {role} in layer {name!r}; quantized: {known}") from None

    def reseed(self, step: int) -> None:
        """Mix ``step`` (e.g. the training step) into every stochastic seed: fresh bits.

        Raises:
            SpecError: ``step`` is not a non-negative int.
        """
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise SpecError(f"step {step!r} must be a non-negative int")
        self._step = step
        for site in self._sites.values():
            site.reseed(site.rule.seed, step)

    def calibration_state(self) -> dict[str, dict[str, torch.Tensor]]:
        """The calibrated scale parts of every tensor that has them, to save and reload.

        Returns:
            ``{"<layer>:<role>": {"scale": …, "zero": …, "tensor_scale": …}}`` (the parts
            each cast is given); ``torch.save`` it and pass it back as
            ``quantize_model(model, rules, calibration=state)``.
        """
        return {
            f"{n}:{r}": dict(site.given)
            for (n, r), site in self._sites.items()
            if site.given is not None
        }

    def calibrated(self, name: str, role: str) -> dict[str, torch.Tensor] | None:
        """The calibrated scale parts layer ``name``'s weight or input is cast with.

        None where the cast computes its own scales (no calibration, or an input whose
        scales follow each batch).

        Raises:
            SpecError: ``name``/``role`` is not a quantized layer tensor.
        """
        if (name, role) not in self._sites:
            self.seed(name, role)  # raises, naming the quantized tensors
        given = self._sites[(name, role)].given
        return None if given is None else dict(given)

    def remove(self) -> None:
        """Take every parametrization and hook off; the model is as before. Idempotent."""
        while self._undo:
            self._undo.pop()()
        self._model = None

    def summary(self) -> str:
        """A text table: one line per quantized layer with its datatypes and rule."""
        rows = [("layer", "type", "weight", "input", "rule")]
        rows += [
            (
                q.name or "<model>",
                q.kind,
                _dt_name(q.weight),
                _dt_name(q.input),
                f"#{q.rule_index} {q.rule.pattern_text}",
            )
            for q in self.layers
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        return "\n".join(
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
        )

    def __enter__(self) -> QuantHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def __repr__(self) -> str:
        state = "active" if self.active else "removed"
        return f"<QuantHandle {state}: {len(self.layers)} layers>"


# ----------------------------------------------------------------- quantize_model
@dataclass
class _Matches:
    """What one rule matched while planning."""

    taken: list[str] = field(default_factory=list)
    shadowed: list[str] = field(default_factory=list)
    unsupported: list[tuple[str, str]] = field(default_factory=list)


def quantize_model(
    model: nn.Module,
    rules: QuantRule | Iterable[QuantRule],
    *,
    strict: bool = True,
    calibration: Mapping[str, Mapping[str, torch.Tensor]] | None = None,
) -> QuantHandle:
    """Fake-quantize the weights and/or inputs of a model's Linear and Conv2d layers.

    Every ``nn.Linear``/``nn.Conv2d`` (subclasses included) gets the first rule whose
    pattern matches its name; its weight is cast through a parametrization (the parameter
    stays the float master weight, the same object, so optimizers keep working), its input
    by a forward pre-hook. Casts are virtual and differentiable (``rule.grad``), and work
    under ``torch.inference_mode``; CUDA tensors are cast by the Triton engine when
    tcast-triton is installed (the same bits and gradients). While quantized, a weight's
    state_dict key is
    ``<layer>.parametrizations.weight.original`` (torch.nn.utils.parametrize); the weight
    is cast at every forward (``with torch.nn.utils.parametrize.cached():`` casts it once).

    Args:
        model: the module to quantize (in place).
        rules: one QuantRule or an ordered sequence of them.
        strict: raise when a rule selects no layer: it matches no module name
            (``SpecError``), only modules of unsupported types (``UnsupportedError``), or
            only layers that an earlier rule took (``SpecError``).
        calibration: static scale parts by ``"<layer>:<role>"`` (``Calibration.convert``,
            :meth:`QuantHandle.calibration_state`): each such cast is given them
            (SEMANTICS.md §5.12) instead of computing its scales.

    Returns:
        The QuantHandle: ``layers`` lists what was quantized; ``remove()`` undoes it.

    Raises:
        AlreadyQuantizedError: the model already carries tcast_torch quantization.
        UnsupportedError: ``model`` is not an nn.Module, or is already wrapped by FSDP2's
            ``fully_shard`` (quantize first, then shard); a rule's pattern is the exact name
            of a module of an unsupported type; input quantization for the ``out_proj`` of
            an ``nn.MultiheadAttention`` (which never calls it); a weight of a dtype
            tcast_torch does not cast (float64); under ``strict``, see above.
        SpecError: ``rules`` is empty or holds something else than QuantRules; a datatype
            whose tiles do not fit a layer's weight; under ``strict``, see above.

    Nothing is quantized halfway: every rule and weight is checked before the model changes.
    """
    if not isinstance(model, nn.Module):
        raise UnsupportedError(
            f"quantize_model takes a torch.nn.Module, not {type(model).__name__}"
        )
    rule_list = [rules] if isinstance(rules, QuantRule) else list(rules)
    if not rule_list:
        raise SpecError("quantize_model needs at least one QuantRule")
    for i, r in enumerate(rule_list):
        if not isinstance(r, QuantRule):
            raise SpecError(f"rules[{i}] is a {type(r).__name__}, not a QuantRule")
    named = list(model.named_modules())
    already = [f"{n or '<model>'} ({'/'.join(_our_sites(m))})" for n, m in named if _our_sites(m)]
    if already:
        raise AlreadyQuantizedError(
            f"the model is already quantized by tcast_torch: {', '.join(already)}; call "
            f"remove() on its QuantHandle first"
        )
    sharded = _fsdp_wrapped(named)
    if sharded:
        raise UnsupportedError(
            f"the model is already wrapped by FSDP2's fully_shard ({', '.join(sharded[:5])}): "
            f"FSDP2 gathers the parameters it registered, which a weight parametrization "
            f"moves; call quantize_model on the model first, then fully_shard"
        )

    layers, sites = _plan(named, rule_list, strict)
    _give(sites, calibration)
    handle = QuantHandle(model, tuple(layers))
    modules = dict(named)
    try:
        for site in sites:
            handle._sites[(site.name, site.role)] = site
            _attach(modules[site.name], site, handle._undo)
    except BaseException:
        handle.remove()
        raise
    return handle


def _give(sites: list[_Site], calibration) -> None:
    """Attach calibrated parts to their sites; refuse keys of no quantized tensor."""
    if calibration is None:
        return
    by_key = {f"{s.name}:{s.role}": s for s in sites}
    for key, parts in calibration.items():
        site = by_key.get(key)
        if site is None:
            known = ", ".join(sorted(by_key)) or "none"
            raise SpecError(
                f"calibration names {key!r}, which no rule quantizes; quantized tensors: {known}"
            )
        bad = [k for k, v in parts.items() if k not in GIVEN_PARTS or not torch.is_tensor(v)]
        if bad:
            raise SpecError(
                f"calibration {key!r} holds {bad}: its parts are tensors named "
                f"{', '.join(GIVEN_PARTS)}"
            )
        site.given = dict(parts)
        site._given_requests.clear()


def _fsdp_wrapped(named) -> list[str]:
    """The modules that FSDP2's ``fully_shard`` wrapped (none unless FSDP2 is imported)."""
    fsdp = sys.modules.get("torch.distributed.fsdp")
    cls = getattr(fsdp, "FSDPModule", None)
    if cls is None:
        return []
    return [n or "<model>" for n, m in named if isinstance(m, cls)]


def _plan(named, rules: list[QuantRule], strict: bool):
    """Choose each layer's rule and check every weight's cast; change nothing."""
    mha_out = {id(m.out_proj) for _, m in named if isinstance(m, nn.MultiheadAttention)}
    matches = [_Matches() for _ in rules]
    layers: list[QuantizedLayer] = []
    sites: list[_Site] = []
    for name, module in named:
        hits = [i for i, r in enumerate(rules) if r.matches(name)]
        if not hits:
            continue
        kind = parametrize.type_before_parametrizations(module).__name__
        if not isinstance(module, SUPPORTED_LAYERS):
            for i in hits:
                if isinstance(rules[i].pattern, str) and rules[i].pattern == name:
                    raise UnsupportedError(
                        f"rule {i} names layer {name!r}, a {kind}: quantize_model quantizes "
                        f"{' and '.join(t.__name__ for t in SUPPORTED_LAYERS)} layers only"
                    )
                matches[i].unsupported.append((name, kind))
            continue
        first, rule = hits[0], rules[hits[0]]
        matches[first].taken.append(name)
        for i in hits[1:]:
            matches[i].shadowed.append(name)
        if rule.weight is None and rule.input is None:
            continue  # an exclusion rule: the layer stays in float
        if rule.input is not None and id(module) in mha_out:
            raise UnsupportedError(
                f"layer {name!r} is the out_proj of an nn.MultiheadAttention, which reads its "
                f"weight but never calls it: its input cannot be quantized by a hook "
                f"(rule {first} sets input={rule.input})"
            )
        layers.append(QuantizedLayer(name, kind, rule, first))
        for role in ROLES:
            if getattr(rule, role) is not None:
                site = _Site(name, role, _is_conv(module), rule, rule.seed)
                if role == "weight":
                    _check_weight(module, site)
                sites.append(site)
    if strict:
        _check_strict(named, rules, matches)
    return layers, sites


def _check_weight(module: nn.Module, site: _Site) -> None:
    """Cast a meta tensor like the weight: the engine's checks, no arithmetic."""
    w = module.weight
    registered = "weight" in module._parameters or parametrize.is_parametrized(module, "weight")
    if not isinstance(w, torch.Tensor) or not registered:
        raise UnsupportedError(
            f"layer {site.name!r} has no weight parameter to quantize "
            f"(weight is {type(w).__name__})"
        )
    probe = torch.empty(w.shape, dtype=w.dtype, device="meta")
    try:
        site.apply(probe)
    except TcastError:
        raise
    except Exception:  # an engine op without a meta kernel: the first forward checks
        pass


def _check_strict(named, rules: list[QuantRule], matches: list[_Matches]) -> None:
    for i, (r, m) in enumerate(zip(rules, matches, strict=True)):
        if m.taken:
            continue
        if m.shadowed:
            raise SpecError(
                f"rule {i} ({r.pattern_text!r}) selects no layer: every layer it matches "
                f"({', '.join(m.shadowed)}) was taken by an earlier rule (the first match "
                f"wins; put the narrower rule first, or pass strict=False)"
            )
        if m.unsupported:
            found = ", ".join(f"{n} ({k})" for n, k in m.unsupported[:5])
            raise UnsupportedError(
                f"rule {i} ({r.pattern_text!r}) matches only layers quantize_model does not "
                f"quantize: {found}; supported: "
                f"{' and '.join(t.__name__ for t in SUPPORTED_LAYERS)} (or pass strict=False)"
            )
        some = [n for n, mod in named if isinstance(mod, SUPPORTED_LAYERS)][:8]
        raise SpecError(
            f"rule {i} ({r.pattern_text!r}) matches no module name; quantizable layers are "
            f"e.g. {', '.join(repr(n) for n in some) or 'none'} (globs use fnmatch: '*' "
            f"matches dots too; pass strict=False to allow this)"
        )


def _attach(module: nn.Module, site: _Site, undo: list[Callable[[], None]]) -> None:
    """Put one site's parametrization or hook on the module; push how to take it off."""
    if site.role == "input":
        hook = module.register_forward_pre_hook(_InputCast(site), with_kwargs=True)
        undo.append(hook.remove)
        return
    order = list(module._parameters)
    cast_mod = _WeightCast(site)
    parametrize.register_parametrization(module, "weight", cast_mod, unsafe=True)
    undo.append(lambda: _detach_weight(module, cast_mod, order))


def _detach_weight(module: nn.Module, cast_mod: _WeightCast, order: list[str]) -> None:
    """Remove our weight parametrization only; restore the parameter order of before."""
    plist = module.parametrizations["weight"]
    if len(plist) > 1:  # another parametrization (e.g. the user's) stays
        for i, p in enumerate(plist):
            if p is cast_mod:
                del plist[i]
                return
        return
    parametrize.remove_parametrizations(module, "weight", leave_parametrized=False)
    params = module._parameters
    moved = {k: params.pop(k) for k in order if k in params}
    params.update(moved)
