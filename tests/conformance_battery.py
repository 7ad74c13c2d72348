"""The conformance machinery, ``tcast_ref.conformance``, under a path of its own.

The Triton engine's tests load this file by path (``packages/tcast-triton/tests/conftest.py``);
other code imports ``tcast_ref.conformance``.
"""

from tcast_ref.conformance import *  # noqa: F403
from tcast_ref.conformance import __all__  # noqa: F401
