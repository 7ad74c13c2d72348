"""Packages meet only at public names: no package reaches a ``_private`` name of another.

Read with ``ast`` over every package's ``src/`` and ``tests/`` (nothing is imported): an import
of another top-level package (``tcast``, ``tcast_ref``, ``tcast_torch``, ``tcast_triton``) may
not name a module or object whose name starts with ``_`` (``from tcast_torch._shards import
x``, ``from tcast_torch import _pack``, ``import tcast._lookup``). A package's own private
modules are its business.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    p.name: p.parents[1]
    for p in (ROOT / "packages").glob("*/src/*")
    if (p / "__init__.py").is_file()
}


def _private_imports(path: Path, own: str) -> list[str]:
    """``line: import`` for each import in ``path`` of a private name of another package."""
    found = []
    tree = ast.parse(path.read_text(), str(path))
    # an attribute inside a longer chain is read with its outermost attribute
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner:
            chain = _attribute_chain(node)
            if chain and chain[0] in PACKAGES and chain[0] != own and _private(chain[1:]):
                found.append(f"{path.name}:{node.lineno}: {'.'.join(chain)}")
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            names = [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            parts, names = None, [a.name for a in node.names]
        else:
            continue
        if parts is not None:
            if parts[0] in PACKAGES and parts[0] != own:
                if any(p.startswith("_") for p in parts[1:]) or any(
                    n.startswith("_") and n != "__version__" for n in names
                ):
                    found.append(f"{path.name}:{node.lineno}: from {node.module}")
            continue
        for n in names:
            top, *rest = n.split(".")
            if top in PACKAGES and top != own and any(p.startswith("_") for p in rest):
                found.append(f"{path.name}:{node.lineno}: import {n}")
    return found


def _attribute_chain(node: ast.Attribute) -> list[str] | None:
    """``["tcast_ref", "_pack", "pack_codes"]`` of ``tcast_ref._pack.pack_codes``; None when
    the chain does not start at a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _private(names: list[str]) -> bool:
    return any(n.startswith("_") and not (n.startswith("__") and n.endswith("__")) for n in names)


def test_no_package_imports_another_packages_private_names():
    bad = []
    for top, pkg_root in PACKAGES.items():
        for sub in ("src", "tests", "bench"):
            folder = pkg_root / sub
            if folder.is_dir():
                for path in sorted(folder.rglob("*.py")):
                    bad += [
                        f"{path.parent.relative_to(ROOT)}/{b}" for b in _private_imports(path, top)
                    ]
    assert not bad, "imports of other packages' private names:\n" + "\n".join(bad)


def test_the_check_sees_a_private_import(tmp_path):
    """The checker itself flags each form of a private import (so the test above can fail)."""
    f = tmp_path / "m.py"
    f.write_text(
        "from tcast_torch._shards import BlockStats\n"
        "from tcast_torch import _pack\n"
        "import tcast_torch._run\n"
        "from tcast_torch.toolkit import BlockStats\n"
        "from tcast import __version__\n"
        "import tcast_ref\n"
        "tcast_ref._pack.pack_codes(x, 4)\n"
        "tcast_ref.pack_codes(x, 4)\n"
    )
    got = sorted(line.split(": ", 1)[1] for line in _private_imports(f, "tcast_triton"))
    assert got == sorted(
        [
            "from tcast_torch._shards",
            "from tcast_torch",
            "import tcast_torch._run",
            "tcast_ref._pack.pack_codes",
        ]
    )
