"""Fixtures of the cross-engine tests."""

import numpy as np
import pytest


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
