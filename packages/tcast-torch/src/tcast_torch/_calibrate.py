"""Post-training quantization: prepare a model with observers, calibrate, convert.

``prepare_model(model, rules, weight=..., input=...)`` puts an observer (SEMANTICS.md §5.13)
on the input of every layer a :class:`QuantRule` quantizes, and leaves the model in float;
running calibration batches through the model feeds them. :meth:`Calibration.convert`
calibrates each weight from the weight itself, takes the inputs' observers off, and fake-
quantizes the layers as :func:`quantize_model` does, with the calibrated scales given to
every cast (static scales, §5.12).

Which scales become static:

* weights: every scale part of every scaled datatype (per channel, per block, two-level);
* inputs with one scale per tensor (``int8_float32``, ``e4m3fn_float32``): that scale;
* inputs of two-level datatypes (``nvfp4``): the tensor scale; each cast computes its tile
  scales under it (one pass over the input);
* other inputs (per-token or per-block scales, which follow each batch's shape): no
  observer; each cast computes its own scales, as without calibration.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from tcast import SpecError
from tcast import observe as ob

from ._model import QuantHandle, QuantizedLayer, QuantRule, quantize_model
from ._observe import Observer

__all__ = ["Calibration", "prepare_model"]


def _input_view(x: torch.Tensor, conv: bool) -> torch.Tensor:
    """The input's canonical view (channels last for Conv2d), as quantize_model casts it."""
    return x.movedim(-3, -1) if conv else x


def _weight_view(w: torch.Tensor, conv: bool) -> torch.Tensor:
    return w.permute(2, 3, 0, 1) if conv else w


def _input_observer(dt, method: ob.ObserverSpec, scalemode) -> Observer | None:
    """The observer of a layer input, or None where its scales follow each batch."""
    s = dt.sspec
    if s is None:
        return None
    if s.is_tensor:
        return Observer(dt, method, scalemode=scalemode)
    if dt.is_multiscale:
        return Observer(dt, method, scalemode=scalemode, tensor_scale_only=True)
    return None


class Calibration:
    """Observers on a model's layer inputs, until :meth:`convert` or :meth:`remove`.

    Attributes:
        layers: the layers the rules quantize (as :func:`quantize_model` would).
        passes: 2 when an input method needs a second pass (:class:`tcast.observe.Mse`),
            else 1.
    """

    def __init__(
        self,
        model: nn.Module,
        rules: list[QuantRule],
        layers: tuple[QuantizedLayer, ...],
        weight: ob.ObserverSpec,
        input: ob.ObserverSpec,
    ) -> None:
        self._model: nn.Module | None = model
        self._rules = rules
        self.layers = layers
        self._weight_method = weight
        self._observers: dict[str, Observer] = {}
        self._hooks: list[Any] = []
        self._pass = 1
        modules = dict(model.named_modules())
        for q in layers:
            if q.input is None:
                continue
            obs = _input_observer(q.input, input, q.rule.scalemode)
            if obs is None:
                continue
            self._observers[q.name] = obs
            conv = isinstance(modules[q.name], nn.Conv2d)
            hook = modules[q.name].register_forward_pre_hook(
                self._observe(q.name, conv), with_kwargs=True
            )
            self._hooks.append(hook)
        self.passes = 2 if input.two_pass and self._observers else 1

    def _observe(self, name: str, conv: bool):
        def hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
            x = args[0] if args else kwargs.get("input")
            if not isinstance(x, torch.Tensor) or (conv and x.dim() not in (3, 4)):
                return  # not an input the layer takes: let the layer raise its own error
            obs = self._observers[name]
            view = _input_view(x.detach(), conv)
            if self._pass == 1:
                obs.update(view)
            else:
                obs.search(view)

        return hook

    @property
    def observers(self) -> dict[str, Observer]:
        """The input observers by layer name (layers whose input scales are calibrated)."""
        return dict(self._observers)

    def next_pass(self) -> None:
        """Start the second pass (run the calibration batches again after this).

        Raises:
            SpecError: when the input method has one pass, or after the second began.
        """
        if self.passes < 2 or self._pass == 2:
            raise SpecError(
                f"next_pass(): the calibration has {self.passes} pass(es) and is in pass "
                f"{self._pass}"
            )
        self._pass = 2

    def remove(self) -> None:
        """Take the observers off; the model is as before. Idempotent."""
        for h in self._hooks:
            h.remove()
        self._hooks.clear()
        self._model = None

    def convert(self) -> QuantHandle:
        """Quantize the model with the calibrated scales (the observers come off).

        Returns:
            The :class:`QuantHandle` of :func:`quantize_model`, with every calibrated scale
            given to its cast; ``remove()`` restores the float model, and
            ``calibration_state()`` gives the scales to save (``torch.save``) and pass back
            as ``quantize_model(model, rules, calibration=state)``.

        Raises:
            SpecError: after :meth:`remove`, before the passes are done, or for an input
                observer that saw no batch (name the layer: run calibration batches through
                it, or exclude it by a rule).
        """
        model = self._model
        if model is None:
            raise SpecError("convert(): this calibration was removed or converted already")
        if self._pass < self.passes:
            raise SpecError("convert(): call next_pass() and run the batches again first")
        unseen = [n for n, o in self._observers.items() if o.batches == 0]
        if unseen:
            raise SpecError(
                f"convert(): no calibration batch reached the input of {', '.join(unseen[:5])}"
            )
        given = {f"{n}:input": o.scales() for n, o in self._observers.items()}
        modules = dict(model.named_modules())
        for q in self.layers:
            if q.weight is None:
                continue
            module = modules[q.name]
            w = _weight_view(module.weight.detach(), isinstance(module, nn.Conv2d))
            obs = Observer(q.weight, self._weight_method, scalemode=q.rule.scalemode)
            obs.update(w)
            if self._weight_method.two_pass:
                obs.search(w)
            given[f"{q.name}:weight"] = obs.scales()
        self.remove()
        return quantize_model(model, self._rules, strict=False, calibration=given)


def prepare_model(
    model: nn.Module,
    rules: QuantRule | Iterable[QuantRule],
    *,
    weight: ob.ObserverSpec | None = None,
    input: ob.ObserverSpec | None = None,
    strict: bool = True,
) -> Calibration:
    """Put calibration observers on the inputs of the layers ``rules`` quantize.

    The model stays in float while it is calibrated. Then ``cal.convert()`` quantizes it with
    static scales: weights calibrated by ``weight`` from themselves, inputs by ``input`` from
    the batches the model saw (see the module docstring for which input scales are static).

    >>> cal = tcast_torch.prepare_model(model, rules, weight=Mse(), input=Percentile(99.9))
    >>> with torch.no_grad():
    ...     for batch in calibration_batches:
    ...         model(batch)
    >>> handle = cal.convert()

    Args:
        model: the module (in place).
        rules: as :func:`quantize_model` takes them.
        weight: the weights' method (``tcast.observe``); default MinMax (the cast's own
            scales).
        input: the inputs' method; default MinMax.
        strict: as :func:`quantize_model`.

    Raises:
        SpecError: a method a rule's datatype cannot be calibrated with; everything
            :func:`quantize_model` raises for the rules.
    """
    weight = ob.MinMax() if weight is None else weight
    input = ob.MinMax() if input is None else input
    rule_list = [rules] if isinstance(rules, QuantRule) else list(rules)
    # quantize_model checks the rules and the weights, then is taken off at once: the model
    # stays float while it is calibrated
    probe = quantize_model(model, rule_list, strict=strict)
    layers = probe.layers
    probe.remove()
    for q in layers:
        if q.weight is not None:
            ob.check_observer(q.weight, weight)
        s = None if q.input is None else q.input.sspec
        if s is not None and (s.is_tensor or q.input.is_multiscale):
            ob.check_observer(q.input, input, not s.is_tensor)
    return Calibration(model, rule_list, layers, weight, input)
