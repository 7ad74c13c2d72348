from importlib.metadata import requires, version

import tcast


def test_version_matches_the_installed_metadata():
    assert tcast.__version__ == version("tcast-spec")


def test_the_spec_declares_no_runtime_dependency():
    assert not [r for r in (requires("tcast-spec") or []) if "extra ==" not in r]


def test_every_public_name_is_exported():
    missing = [n for n in tcast.__all__ if not hasattr(tcast, n)]
    assert missing == []
    assert len(tcast.__all__) == len(set(tcast.__all__))
