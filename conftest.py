"""Test-wide settings shared by every package's tests and the root suite."""

import os

from hypothesis import settings

# CI must be reproducible: hypothesis draws the same examples on every run.
settings.register_profile("ci", derandomize=True, deadline=None, max_examples=200)
settings.register_profile("dev", deadline=None, max_examples=200)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("TCAST_HYPOTHESIS", "ci"))
