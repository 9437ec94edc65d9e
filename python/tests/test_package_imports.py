"""The package's modules import one another without a cycle.

The graph has an edge from a module to every gptq_mlir module it imports,
at module level or inside a function (an import inside a function hides a
cycle, it does not remove it). Run this file to print the graph:

    .venv/bin/python python/tests/test_package_imports.py
"""

import ast
import sys
from pathlib import Path
from typing import Dict, List, Optional, Set

PACKAGE = Path(__file__).resolve().parents[1] / "gptq_mlir"


def _modules(root: Path) -> Dict[str, Path]:
    """Every module of the package at ``root`` by dotted name (a package
    by its own name, for its ``__init__.py``)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(node: ast.AST, name: str, is_package: bool, modules: Dict[str, Path]) -> Set[str]:
    """The package's modules that the import ``node`` in module ``name`` loads."""
    targets = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in modules:
                targets.add(alias.name)
        return targets
    if node.level:
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    # "from P import x" loads P.x when x is a module, else takes x from P.
    for alias in node.names:
        if f"{source}.{alias.name}" in modules:
            targets.add(f"{source}.{alias.name}")
        elif source in modules:
            targets.add(source)
    return targets


def import_graph(root: Path = PACKAGE) -> Dict[str, Set[str]]:
    """For each module of the package at ``root``, the package's modules it
    imports anywhere in its body; a package's ``__init__`` is an edge only
    where a name is taken from it."""
    modules = _modules(root)
    graph = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= _imported(node, name, is_package, modules)
        edges.discard(name)
        graph[name] = edges
    return graph


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """A cycle of the graph as the modules along it, the first repeated at
    the end; None when there is none."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    path: List[str] = []

    def visit(node: str) -> Optional[List[str]]:
        state[node] = 1
        path.append(node)
        for successor in sorted(graph.get(node, ())):
            if state.get(successor) == 1:
                return path[path.index(successor):] + [successor]
            if successor not in state:
                cycle = visit(successor)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_no_import_cycle():
    graph = import_graph()
    assert "gptq_mlir.cli.commands" in graph and graph["gptq_mlir.cli.commands"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def _write(root: Path, files: Dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    root = tmp_path / "pkg"
    _write(root, {
        "__init__.py": "",
        "a/__init__.py": "",
        "a/one.py": "from ..b import two\n",
        "b/__init__.py": "",
        "b/two.py": "def f():\n    from ..a.one import thing\n",
        "c.py": "from . import VERSION\n",
    })
    graph = import_graph(root)
    assert graph["pkg.a.one"] == {"pkg.b.two"}
    assert graph["pkg.b.two"] == {"pkg.a.one"}
    assert graph["pkg.c"] == {"pkg"}
    assert find_cycle(graph) == ["pkg.a.one", "pkg.b.two", "pkg.a.one"]


def test_no_cycle_in_a_chain(tmp_path):
    root = tmp_path / "pkg"
    _write(root, {"__init__.py": "", "a.py": "import pkg.b\n", "b.py": "from .c import x\n", "c.py": "x = 1\n"})
    graph = import_graph(root)
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": set()}
    assert find_cycle(graph) is None


if __name__ == "__main__":
    for module, imported in sorted(import_graph().items()):
        short = lambda name: name.replace("gptq_mlir.", "", 1) if name != "gptq_mlir" else name  # noqa: E731
        print(f"{short(module)} -> {', '.join(sorted(map(short, imported))) or '-'}")
    cycle = find_cycle(import_graph())
    print("cycle: " + " -> ".join(cycle) if cycle else "no cycle")
    sys.exit(1 if cycle else 0)
