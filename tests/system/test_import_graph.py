"""The package's import graph, read from the source with ``ast``: every ``import`` of a package
module, at module level or inside a function, and the handler modules the block registry
loads by name (``blocks.load_all``). The parse layer has no cycle; the cycles left are a
known set that may only shrink."""
from __future__ import annotations

import ast
from pathlib import Path

from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

PACKAGE = Path(__file__).resolve().parents[2] / "nflow_compat"

# Cycles left (issue 13, item 2), each a set of modules (package-relative names):
KNOWN_CYCLES = [
    # the block registry: blocks/__init__ loads every handler module, which import its Phases
    # and @block
    {"blocks", "blocks.continuous", "blocks.dashboard", "blocks.discrete", "blocks.fmi", "blocks.logic",
     "blocks.lookup", "blocks.math", "blocks.mechanical", "blocks.nonlinear", "blocks.sink", "blocks.source",
     "blocks.userdefined", "blocks.utility"},
]

# Package imports inside functions, each for an optional dependency: module -> what it loads late.
LATE_IMPORTS = {
    "sweeps": {"sweeps.run"},                    # needs dask (the 'sweep' extra)
    "engine.continuous": {"physical.islands"},   # (to go: the reader metadata, issue 13 item 4)
}

# Modules in no cycle at all: parsing, checking and flattening a diagram, the group scheduler.
ACYCLIC = ("diagram", "normalize", "flatten", "shape", "schema", "api", "errors", "manifests", "expr",
           "engine.groups", "engine.context", "parts", "files", "sweeps.outcomes")


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


def _registry(modules: dict) -> set:
    """The handler modules ``blocks.load_all`` imports: the names in ``blocks.MODULES``."""
    tree = ast.parse(modules["blocks"].read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MODULES" for t in node.targets):
            return {"blocks." + ast.literal_eval(node.value)[i] for i in range(len(node.value.elts))}
    raise AssertionError("blocks.MODULES not found")


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
    graph["blocks"] |= _registry(modules)
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


def test_the_graph_sees_imports_inside_functions_and_the_registry():
    graph = import_graph()
    assert "sweeps.run" in graph["sweeps"]      # imported inside a function
    assert "blocks.gain" not in graph and "blocks.math" in graph["blocks"]
    assert "flatten" in graph["diagram"] and "normalize" in graph["flatten"]


def test_cycles_only_shrink():
    found = cycles(import_graph())
    grown = [sorted(c) for c in found if not any(c <= known for known in KNOWN_CYCLES)]
    assert not grown, f"new import cycles: {grown}"


def test_the_parse_layer_and_the_group_scheduler_are_in_no_cycle():
    in_cycles = set().union(*cycles(import_graph()))
    assert not in_cycles & set(ACYCLIC), sorted(in_cycles & set(ACYCLIC))


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
