"""No package imports itself in a circle: the import graph of every package's ``src/`` is acyclic.

The graph is read with ``ast`` (nothing is imported). An edge runs from a module to each module
of the same top-level package that it imports, at module level or inside a function: an import
deferred into a function body to dodge a cycle still is one. Only imports under
``if TYPE_CHECKING:`` are left out (they never run). ``from . import x`` names the submodule ``x``
when there is one, else the package's ``__init__``; importing ``a.b.c`` also runs ``a.b`` (but
not the top-level package, which is always loaded first), so it is an edge to that ``__init__``
too.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for p in (ROOT / "packages").glob("*/src/*") if (p / "__init__.py").is_file())


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST):
    """Every import statement of ``tree``, except those in the body of ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and _type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def import_graph(package_dir: Path) -> dict[str, dict[str, int]]:
    """Module name -> {imported module of the same package: line of the first such import}."""
    src, top = package_dir.parent, package_dir.name
    files = {_module_name(p, src): p for p in sorted(package_dir.rglob("*.py"))}
    packages = {name for name, p in files.items() if p.name == "__init__.py"}

    def targets(name: str, importer: str) -> list[str]:
        """The module ``name`` and the subpackages it runs on the way (not those that hold the
        importer: they were loaded before it)."""
        parts = name.split(".")
        chain = [".".join(parts[:i]) for i in range(2, len(parts))]
        held = {importer.rsplit(".", i)[0] for i in range(1, importer.count(".") + 1)}
        return [m for m in chain if m in files and m not in held] + [name] * (name in files)

    graph: dict[str, dict[str, int]] = {}
    for name, path in files.items():
        edges = graph.setdefault(name, {})
        here = name if name in packages else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(), str(path))):
            found: list[str] = []
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == top:
                        found += targets(alias.name, name)
            else:
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                if module.split(".")[0] != top:
                    continue
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    if sub in files:
                        found += targets(sub, name)
                    else:
                        found += targets(module, name)
            for target in found:
                if target != name:
                    edges[target] = min(edges.get(target, node.lineno), node.lineno)
    return graph


def groups(graph: dict[str, dict[str, int]]) -> list[set[str]]:
    """The strongly connected groups of two or more modules (Tarjan): each holds a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while not group or w != v:
                w = stack.pop()
                group.add(w)
            if len(group) > 1:
                found.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found, key=min)


def shortest_cycle(group: set[str], graph: dict[str, dict[str, int]]) -> list[str]:
    """A shortest cycle through the group's first module (breadth first), closed on itself."""
    start = min(group)
    paths = {start: [start]}
    queue = [start]
    for v in queue:
        for w in sorted(graph[v]):
            if w == start:
                return [*paths[v], start]
            if w in group and w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    raise AssertionError(f"no cycle through {start} in {sorted(group)}")


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One shortest cycle per strongly connected group."""
    return [shortest_cycle(g, graph) for g in groups(graph)]


def _describe(group: set[str], graph: dict[str, dict[str, int]]) -> str:
    """A cycle of the group, then every import between its modules (all its cycles)."""
    edges = [
        f"    {a} line {line} imports {b}"
        for a in sorted(group)
        for b, line in sorted(graph[a].items())
        if b in group
    ]
    return " -> ".join(shortest_cycle(group, graph)) + "\n" + "\n".join(edges)


def test_every_package_src_is_found():
    assert {p.name for p in SOURCES} >= {"tcast", "tcast_ref", "tcast_torch", "tcast_triton"}


def test_no_package_imports_itself_in_a_circle():
    problems = []
    for package_dir in SOURCES:
        graph = import_graph(package_dir)
        problems += [_describe(g, graph) for g in groups(graph)]
    assert not problems, "import cycles (move the shared code to a module both import):\n" + (
        "\n".join(problems)
    )


# The detector itself, on small packages written for the purpose


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_two_module_cycle_is_reported(tmp_path):
    root = _package(tmp_path, {"a.py": "from .b import f\n", "b.py": "import pkg.a\n"})
    assert cycles(import_graph(root)) == [["pkg.a", "pkg.b", "pkg.a"]]


def test_an_import_deferred_into_a_function_still_closes_a_cycle(tmp_path):
    root = _package(
        tmp_path,
        {
            "a.py": "from pkg import b\n",
            "b.py": "from . import c\n",
            "c.py": "def f():\n    from .a import g\n    return g\n",
        },
    )
    assert cycles(import_graph(root)) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]


def test_type_checking_imports_and_one_way_imports_are_no_cycle(tmp_path):
    root = _package(
        tmp_path,
        {
            "a.py": "from . import b\nfrom .b import f\nimport os\nfrom typing import Any\n",
            "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n",
        },
    )
    graph = import_graph(root)
    assert graph["pkg.a"] == {"pkg.b": 1}
    assert cycles(graph) == []


def test_a_name_from_a_package_init_is_an_edge_to_the_init(tmp_path):
    root = _package(
        tmp_path,
        {
            "sub/__init__.py": "from .x import y\n",
            "sub/x.py": "from ..a import z\n",
            "a.py": "from .sub import y\n",
        },
    )
    assert cycles(import_graph(root)) == [["pkg.a", "pkg.sub", "pkg.sub.x", "pkg.a"]]
