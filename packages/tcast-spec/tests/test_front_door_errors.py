"""Front-door errors that guide: what to pass instead, "install" only what is missing.

* ``tcast.cast`` of something no engine takes says what to pass (``np.asarray(...)``, a torch
  tensor) when an engine is installed, and names the wheel only when it is not.
* ``saturate=False`` on a scaled datatype, which it cannot change, warns.
* A refusal prints the modes as a call writes them, not a ``CastModes(...)`` repr.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tcast
from tcast import ArgumentWarning, CastModes, EngineNotFoundError, UnsupportedError, api

X = np.linspace(-4, 4, 64, dtype=np.float32).reshape(2, 32)


def test_a_numpy_scalar_is_answered_with_np_asarray_not_install():
    pytest.importorskip("tcast_ref")
    with pytest.raises(EngineNotFoundError) as err:
        tcast.cast(np.float32(1.5), "mxfp4")
    text = str(err.value)
    assert "numpy.float32" in text and "np.asarray(x" in text
    assert "install" not in text  # tcast-ref is installed


@pytest.mark.parametrize("x", [[1.0, 2.0], 1.5])
def test_python_data_is_answered_with_the_arrays_of_the_installed_engines(monkeypatch, x):
    monkeypatch.setattr(api, "engine_array_modules", lambda: {"ref": "numpy"})
    with pytest.raises(EngineNotFoundError) as err:
        tcast.cast(x, "mxfp4")
    text = str(err.value)
    assert f"not a {type(x).__name__}" in text and "np.asarray(x, dtype=np.float32)" in text
    assert "install" not in text and "torch" not in text  # only what is installed


def test_install_is_said_only_when_no_engine_is_installed(monkeypatch):
    monkeypatch.setattr(api, "engine_array_modules", dict)
    monkeypatch.setattr(api, "engines_for", lambda x: [])
    with pytest.raises(EngineNotFoundError, match="no engine is installed: install one of"):
        tcast.cast([1.0], "mxfp4")
    with pytest.raises(EngineNotFoundError, match=r"install tcast-ref \(pip install tcast-ref\)"):
        tcast.cast(X, "mxfp4")


def test_an_engine_that_failed_to_load_is_named_not_installed_again(monkeypatch):
    monkeypatch.setattr(api, "engine_array_modules", lambda: {"ref": "numpy"})
    monkeypatch.setattr(api, "engines_for", lambda x: [])
    monkeypatch.setattr(api, "failure", lambda name: "ImportError: no numpy here")
    with pytest.raises(EngineNotFoundError, match="'ref' takes numpy arrays but failed to load"):
        tcast.cast(X, "mxfp4")


def test_saturate_false_on_a_scaled_cast_warns_that_it_has_no_effect():
    pytest.importorskip("tcast_ref")
    with pytest.warns(ArgumentWarning, match="saturate=False has no effect on mxfp4"):
        tcast.cast(X, "mxfp4", saturate=False)
    with pytest.warns(ArgumentWarning, match="no effect on nvfp4"):
        tcast.cast_dual(X, "nvfp4", saturate=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ArgumentWarning)
        tcast.cast(X, "float8_e4m3fn", saturate=False)  # unscaled: it chooses Inf/NaN
        tcast.cast(X, "mxfp4")


def test_modes_print_as_a_call_writes_them():
    assert str(CastModes.of("actual", "stochastic")) == "castmode='actual', roundmode='stochastic'"
    assert str(CastModes.of(scalemode="rceil", saturate=False)) == (
        "scalemode='topbinade', saturate=False"
    )
    assert str(CastModes()) == "the default modes"


class _Refuser:
    """An engine that takes NumPy arrays and supports nothing."""

    name = "refuser"
    priority = 0

    def accepts(self, x):
        return isinstance(x, np.ndarray)

    def supports(self, dtype, modes):
        return False


def test_a_refusal_names_the_modes_as_a_call_writes_them(monkeypatch):
    monkeypatch.setattr(api, "engines_for", lambda x: [_Refuser()])
    monkeypatch.setattr(api, "engine_names", tuple)  # nothing elsewhere to suggest
    modes = CastModes.of("actual", "stochastic")
    with pytest.raises(UnsupportedError) as err:
        tcast.select_engine(X, tcast.mxfp4, modes)
    text = str(err.value)
    assert "with castmode='actual', roundmode='stochastic'" in text
    assert "CastModes(" not in text and "RoundMode." not in text


def test_a_mistyped_engine_name_is_answered_with_the_nearest():
    pytest.importorskip("tcast_ref")
    with pytest.raises(EngineNotFoundError, match=r"did you mean: ref\?"):
        tcast.cast(X, "mxfp4", engine="reff")
