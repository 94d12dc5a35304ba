"""The package's import graph, read from the source with ``ast``: every ``import`` of a package
module, at module level or inside a function. Imports go one way: the graph has no cycle,
and nothing loads a package module by a name computed at run time.

A package import inside a function is a late import: declared below with its reason
(``LATE_IMPORTS``), never sprinkled. What the package and the command line load at import
(module-level imports followed from them) imports none of the heavy or optional libraries
(``HEAVY``), and a causal run in a fresh interpreter loads none of them either."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from tests.util import blk, diagram, pin, record, wire

PACKAGE = Path(__file__).resolve().parents[2] / "nflow_compat"

# Package imports inside functions, each declared with its reason: module -> what it loads late.
HANDLER_MODULES = {f"blocks.{name}" for name in ("source", "sink", "math", "logic", "nonlinear", "discrete",
                                                  "continuous", "utility", "mechanical", "lookup", "dashboard",
                                                  "userdefined", "fmi", "modelica")}
LATE_IMPORTS = {
    "sweeps": {"sweeps.run"},                    # needs pandas and pyarrow (the 'sweep' extra)
    "sweeps.run": {"sweeps.cluster"},            # needs dask.distributed (the 'sweep' extra)
    "blocks.handlers": HANDLER_MODULES,          # the lazy registry: a module when a diagram uses its types
    "engine.run": {"engine.solver_driven"},      # the solver-driven loop (scipy): plans with continuous parts
    "cli": {"blocks.fmi", "blocks.modelica", ""},  # the FMU / Modelica handler modules: fmu-info, fmu-block,
                                                 # modelica-block;
                                                 # the package's version (its metadata), for --version only
    "api": {"engine.linearize"},
    "engine.columns": {"physical.nodes"},        # the nodes an acausal sensor senses (scipy): physical links only                 # linmod / trim: the plan as a hybrid system (scipy)
}

# Libraries nothing loads at import: optional extras, and what only some diagrams need (scipy:
# loops, solvers, physical networks; jsonschema: explaining an invalid diagram).
HEAVY = ("scipy", "dask", "distributed", "fmpy", "matplotlib", "pandas", "pyarrow", "jsonschema")

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


def _module_level_imports(tree) -> list:
    """The import statements a module runs when imported (not those inside functions, nor
    under ``if TYPE_CHECKING:``, which only type checkers read)."""
    found, stack = [], list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            stack.extend(node.orelse)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return found


def test_importing_the_package_or_the_command_line_loads_no_heavy_library():
    modules = _modules()
    trees = {name: ast.parse(path.read_text()) for name, path in modules.items()}
    loaded, todo = set(), ["", "cli", "__main__"]
    while todo:        # every package module imported at module level from the entry points
        name = todo.pop()
        if name in loaded:
            continue
        loaded.add(name)
        for node in _module_level_imports(trees[name]):
            todo += [m for m in _imported(name, modules[name], node, modules) if m in modules]
    assert "blocks.handlers" in loaded and "blocks.math" not in loaded and "physical.islands" not in loaded
    for name in sorted(loaded):
        for node in _module_level_imports(trees[name]):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if node.level == 0 else []
            heavy = [n for n in names if n.split(".")[0] in HEAVY]
            assert not heavy, f"{name} imports {heavy} at module level"


RUN_CAUSAL = """
import json, sys
import nflow_compat as nc
from nflow_compat.cli import main
text = open(sys.argv[1], "rb").read()
assert json.loads(nc.simulate_json(text))["status"] == "ok"
assert main(["run", sys.argv[1], "-o", sys.argv[2]]) == 0
print(json.dumps(sorted(sys.modules)))
"""


def _loaded_by(tmp_path, diagram: dict) -> set:
    path = tmp_path / "diagram.json"
    path.write_text(json.dumps(diagram))
    out = subprocess.run([sys.executable, "-c", RUN_CAUSAL, str(path), str(tmp_path / "result.json")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout))


def test_a_causal_run_loads_no_heavy_library(tmp_path):
    quickstart = json.loads((PACKAGE.parent / "examples" / "quickstart" / "diagram.json").read_text())
    loaded = _loaded_by(tmp_path, quickstart)
    assert {m.split(".")[0] for m in loaded} & set(HEAVY) == set()
    assert "nflow_compat.physical" not in loaded and "nflow_compat.blocks.source" in loaded
    assert "nflow_compat.blocks.fmi" not in loaded and "nflow_compat.engine.solver_driven" not in loaded


def test_the_late_imports_load_what_a_diagram_needs(tmp_path):
    # the same check sees the physical layer and scipy arrive with an acausal block
    loaded = _loaded_by(tmp_path, diagram([blk("g", "Fixed"), blk("m", "Mass", m=1.0), blk("s", "PositionSensor"),
                                           record()],
                                          [wire("s", "w"), pin("g", "flange", "m", "flange"),
                                           pin("s", "flange", "m", "flange")], solver="ode45"))
    assert {"nflow_compat.physical.islands", "nflow_compat.engine.solver_driven", "scipy.integrate"} <= loaded
    assert "nflow_compat.blocks.fmi" not in loaded and "jsonschema" not in loaded
