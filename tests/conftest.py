"""Fixtures of the cross-engine tests, and their helper module ``dual_checks``."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

# importlib import mode puts no test folder on sys.path: load the helpers by path, once
if "dual_checks" not in sys.modules:
    _spec = importlib.util.spec_from_file_location(
        "dual_checks", Path(__file__).with_name("dual_checks.py")
    )
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["dual_checks"] = _module
    _spec.loader.exec_module(_module)


@pytest.fixture
def flip_one_bit_engine():
    """The reference engine under the name ``flip-one-bit``, with the lowest bit of every
    virtual result's first byte flipped: a broken engine the harness must catch."""
    tcast_ref = pytest.importorskip("tcast_ref")

    class FlipOneBit(tcast_ref.RefEngine):
        name = "flip-one-bit"
        priority = -10

        def run(self, x, request):
            r = super().run(x, request)
            if isinstance(r, np.ndarray) and r.size:
                r = r.copy()
                r.reshape(-1).view(np.uint8)[0] ^= 1
            return r

    return FlipOneBit()
