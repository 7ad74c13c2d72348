"""Run the Triton engine's tests on CPU tensors through the Triton interpreter without a GPU.

``TRITON_INTERPRET`` must be set before ``triton`` is imported (``triton.jit`` reads it when
a kernel is decorated); ``make test`` sets it for the invocation that runs these tests.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

if "triton" not in sys.modules and "TRITON_INTERPRET" not in os.environ:
    import torch

    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"


def _load(name: str, path: Path):
    """Import ``path`` as module ``name`` once (importlib import mode: no test folder on path)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


# the conformance battery of the repository's ``tests/`` (one definition of the cases), then
# this folder's helpers, which use it
_here = Path(__file__).resolve().parent
_load("conformance_battery", _here.parents[2] / "tests" / "conformance_battery.py")
_load("dual_checks", _here.parents[2] / "tests" / "dual_checks.py")
_load("triton_checks", _here / "triton_checks.py")
# the DTensor cases (tcast-torch's worker script; test_triton_dtensor runs it by this engine)
_load("dtensor_worker", _here.parents[1] / "tcast-torch" / "tests" / "dtensor_worker.py")


@pytest.fixture(scope="session")
def device() -> str:
    """``cuda`` on a GPU machine, else ``cpu`` under the interpreter (else skip)."""
    from tcast_triton._launch import interpreting

    if interpreting():
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    pytest.skip("the Triton engine needs a CUDA GPU or TRITON_INTERPRET=1 set before import")
