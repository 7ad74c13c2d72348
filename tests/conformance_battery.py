"""The conformance machinery, by its old path: it lives in ``tcast_ref.conformance`` now.

Kept for the Triton engine's tests, which load this file by path
(``packages/tcast-triton/tests/conftest.py``); new code imports ``tcast_ref.conformance``.
"""

from tcast_ref.conformance import *  # noqa: F403
from tcast_ref.conformance import __all__  # noqa: F401
