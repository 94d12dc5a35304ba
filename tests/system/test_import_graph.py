"""The package's import graph, read from the source with ``ast``: every ``import`` of a package
module, at module level or inside a function. Imports go one way: the graph has no cycle,
and nothing loads a package module by a name computed at run time."""
from __future__ import annotations

import ast
from pathlib import Path

from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

PACKAGE = Path(__file__).resolve().parents[2] / "nflow_compat"

# Package imports inside functions, each for an optional dependency: module -> what it loads late.
LATE_IMPORTS = {
    "sweeps": {"sweeps.run"},                    # needs pandas and pyarrow (the 'sweep' extra)
    "sweeps.run": {"sweeps.cluster"},            # needs dask.distributed (the 'sweep' extra)
}

def _modules() -> dict:
    """package-relative module name -> its file."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imported(name: str, path: Path, node, modules: dict) -> list:
    """The package modules one import statement of module ``name`` loads."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    elif node.level == 0:
        targets = [node.module]
    else:
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        base = here[:len(here) - (node.level - 1)] if node.level > 1 else here
        module = ".".join(base + ([node.module] if node.module else []))
        targets = [f"{module}.{alias.name}".lstrip(".") if f"{module}.{alias.name}".lstrip(".") in modules
                   else module for alias in node.names]
    return [t.removeprefix("nflow_compat.") if t.startswith("nflow_compat.") else t for t in targets]


def import_graph() -> dict:
    """module -> the package modules it imports (``""`` is the package itself)."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.update(m for m in _imported(name, path, node, modules) if m in modules and m != name)
        graph[name] = found
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module."""
    names = sorted(graph)
    index = {n: i for i, n in enumerate(names)}
    rows = [index[a] for a in names for _ in graph[a]]
    cols = [index[b] for a in names for b in sorted(graph[a])]
    matrix = csr_matrix(([1] * len(rows), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(matrix, directed=True, connection="strong")
    groups: dict = {}
    for name, label in zip(names, labels):
        groups.setdefault(label, set()).add(name)
    return [group for group in groups.values() if len(group) > 1]


def test_the_graph_sees_imports_inside_functions_and_the_handler_modules():
    graph = import_graph()
    assert "sweeps.run" in graph["sweeps"]      # imported inside a function
    assert "blocks.gain" not in graph and "blocks.math" in graph["blocks.handlers"]
    assert "flatten" in graph["diagram"] and "normalize" in graph["flatten"]


def test_cycles_are_seen():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_nothing_is_imported_by_a_computed_name():
    for name, path in _modules().items():
        text = path.read_text()
        assert "import_module" not in text and "__import__" not in text, name


def test_sink_and_source_do_not_import_each_other_both_ways():
    graph = import_graph()
    assert not ("blocks.source" in graph["blocks.sink"] and "blocks.sink" in graph["blocks.source"])
    assert "blocks.sink" not in graph["blocks.source"]


def test_package_imports_inside_functions_are_only_the_optional_ones():
    modules = _modules()
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        late = {target for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                for node in ast.walk(fn) if isinstance(node, (ast.Import, ast.ImportFrom))
                for target in _imported(name, path, node, modules) if target in modules}
        assert late <= LATE_IMPORTS.get(name, set()), f"{name}: package imports inside functions: {sorted(late)}"
