"""`tcast verify` and `tcast conformance` refuse a device they cannot use: exit 2, a message."""

from __future__ import annotations

from pathlib import Path

import pytest

from tcast.cli import main
from tcast_ref.conformance import DEVICE_ENV

pytest.importorskip("torch")

SET = str(Path(__file__).resolve().parents[3] / "tests" / "golden" / "mxfp8")
SMOKE = ["conformance", "--tier", "smoke", "--datatypes", "mxfp8", "--quiet"]


@pytest.mark.parametrize(
    ("device", "why"),
    [
        ("meta", "tensors on the meta device hold no data"),
        ("nope", "'nope' is not a torch device"),
        ("cuda:99", "is not usable"),
    ],
)
def test_verify_refuses_a_device_it_cannot_read_results_from(capsys, device, why):
    assert main(["verify", SET, "--engine", "torch", "--device", device]) == 2
    err = capsys.readouterr().err
    assert why in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("engine", "device", "why"),
    [
        ("torch", "meta", "tensors on the meta device hold no data"),
        ("torch", "nope", "'nope' is not a torch device"),
        ("ref", "nope", "'nope' is not a torch device"),
        ("torch", "cuda:99", "is not usable on this machine"),
        ("torch", "x" * 5000, "is not a torch device"),
    ],
)
def test_conformance_refuses_a_bad_device_before_any_cast(capsys, engine, device, why):
    assert main([*SMOKE, "--engine", engine, "--device", device]) == 2
    captured = capsys.readouterr()
    assert why in captured.err and "Traceback" not in captured.err
    assert captured.out == "" and len(captured.err) < 500


def test_conformance_refuses_a_bad_device_from_the_environment(capsys, monkeypatch):
    monkeypatch.setenv(DEVICE_ENV, "meta")
    assert main([*SMOKE, "--engine", "torch"]) == 2
    assert "meta device" in capsys.readouterr().err


def test_verify_checks_the_device_once_not_once_per_set(capsys):
    assert main(["verify", SET, SET, "--engine", "torch", "--device", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("is not a torch device") == 1, err
