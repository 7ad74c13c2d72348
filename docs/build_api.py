"""Build the HTML API reference of every tcast package from its docstrings (pdoc).

``make docs`` runs it::

    .venv/bin/python docs/build_api.py site     # site/index.html
    .venv/bin/python docs/build_api.py site tcast tcast_ref   # only these modules

The reference covers the public modules: ``tcast`` (with ``tcast.kit`` and ``tcast.exact``),
``tcast_ref`` (with ``tcast_ref.golden`` and ``tcast_ref.conformance``), ``tcast_torch`` and
``tcast_triton``. Triton is imported under its CPU interpreter (``TRITON_INTERPRET=1``), so no
GPU is needed. Any warning pdoc gives (a name in ``__all__`` that does not resolve, a
docstring it cannot parse, a module that fails to import) is printed and makes the build fail
(exit status 1): the reference never ships with holes. ``tests/test_docs_build.py`` builds
``tcast`` the same way.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

MODULES = (
    "tcast",
    "tcast_ref",
    "tcast_ref.golden",
    "tcast_ref.conformance",
    "tcast_torch",
    "tcast_triton",
)
"""The modules whose pages the reference holds (their public submodules come with them)."""

DOCFORMAT = "google"


def build(out: Path, modules: Sequence[str] = MODULES) -> list[str]:
    """Render the API reference of ``modules`` into ``out``.

    Args:
        out: the output directory (created if missing; existing pages are overwritten).
        modules: importable module names.

    Returns:
        The text of every warning pdoc gave while rendering, in order (empty when clean).
    """
    import pdoc
    import pdoc.render

    from tcast import __version__

    pdoc.render.configure(
        docformat=DOCFORMAT,
        footer_text=f"tcast {__version__}",
        search=True,
        show_source=True,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*modules, output_directory=Path(out))
    return [f"{w.category.__name__}: {w.message}" for w in caught]


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``build_api.py OUT [MODULE ...]``; exit 1 on any pdoc warning."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="output directory (e.g. site)")
    parser.add_argument("modules", nargs="*", default=list(MODULES), help="modules to document")
    args = parser.parse_args(argv)
    # Triton reads the interpreter switch when it is first imported; set here, not at import,
    # so that a process importing this module (the docs test) keeps its own Triton mode
    os.environ.setdefault("TRITON_INTERPRET", "1")
    problems = build(args.out, args.modules)
    for line in problems:
        print(f"pdoc warning: {line}", file=sys.stderr)
    if problems:
        print(f"{len(problems)} warning(s): fix the docstrings above", file=sys.stderr)
        return 1
    print(f"{args.out / 'index.html'}: API reference of {', '.join(args.modules)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
