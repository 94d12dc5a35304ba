"""The block reference: one Markdown page per library, generated from the manifests.

``python -m nflow_compat.docs --write docs/blocks`` writes the pages; ``--check`` exits 1
when the checked-in pages are stale (a test runs it). Each block lists its signal ports and
physical pins (with the across and through quantities of the pin's domain), its params
(default, unit, range and meaning: the manifest's ``paramInfo``; whether a value out of
range is refused, by the diagram check or when the plan is compiled), the phases nflow
declares, the solvers it runs under (read from the handlers' declarations and the engine's
rules, not written per block), and the golden fixtures that exercise it. The pages are
plain Markdown for mkdocs: one ``##`` heading per block type (its anchor is the type's
name, lower-cased), tables, and no links but the index's to the pages.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .blocks import NOT_RUNNABLE, REGISTRY
from .blocks.fmi import INTERFACES
from .blocks.handlers import supported_types
from .engine.groups import FUNCTION_CALL_SOLVERS
from .engine.run import FIXED_STEP_SOLVERS
from .engine.solver_driven import METHOD
from .engine.solvers import METHODS
from .manifests import COMPILE_CHECKED, UNITS, block_types, libraries, parse_range
from .normalize import SOLVERS
from .parts import SOLVER_OWNED
from .physical.acausal import DOMAINS

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
REFERENCE = FIXTURES / "reference"   # reference data (MSL results, nflow's examples), not diagrams
FIXTURES_SHOWN = 6

# what each integration method is, by its class (engine.solvers.METHODS)
_METHOD_TEXT = {"ForwardEuler": "forward Euler", "ClassicalRK4": "classical RK4",
                "RK45": "Dormand-Prince RK45, variable step", "LSODA": "LSODA, Adams or BDF, variable step"}

# the units of each domain's across and through quantities (physical.acausal.DOMAINS names
# them); a planar frame carries a position and an angle, a force and a torque
_PIN_UNITS = {"electrical": ("V", "A"), "thermal": ("K", "W"), "translational": ("m", "N"),
              "rotational": ("rad", "N.m")}
_PLANAR_PIN = ("x, y (m) and phi (rad)", "fx, fy (N) and t (N·m)")

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def unit_text(unit) -> str:
    """A unit in Modelica's syntax as the page prints it: ``N.m.s2/rad2`` -> ``N·m·s²/rad²``."""
    if isinstance(unit, tuple):
        return "columns: " + ", ".join(unit_text(u) or "1" for u in unit)
    if unit.startswith("[") or unit == "mixed":
        return unit.replace(".", "·")
    out = re.sub(r"(?<=[A-Za-z])(-?\d+)", lambda m: m.group(1).translate(_SUPERSCRIPT), unit)
    return out.replace("Ohm", "Ω").replace(".", "·")


def _pin_quantities(domain: str) -> tuple:
    """(across, through) of a pin of ``domain``, each with its unit."""
    if domain not in DOMAINS:
        return _PLANAR_PIN
    d, (across, through) = DOMAINS[domain], _PIN_UNITS[domain]
    return f"{d.across} ({unit_text(across)})", f"{d.through} ({unit_text(through)})"


def _markdown(text: str, cell: bool = False) -> str:
    """Plain text as Markdown that renders it as written: characters Markdown would read as
    emphasis, links or HTML escaped (not inside `code`), and in a table cell the bar."""
    parts = re.split(r"(`[^`]*`)", text)
    for i in range(0, len(parts), 2):
        part = re.sub(r"([\\*\[\]])", r"\\\1", parts[i]).replace("<", "&lt;")
        parts[i] = part.replace("|", "\\|") if cell else part
    return "".join(parts)


def _code(value) -> str:
    """A default as JSON in a code span (a table's bars inside one do not split the cell)."""
    text = json.dumps(value)
    return f"`{text}`" if "`" not in text else _markdown(text, cell=True)


def _fixture_index() -> dict:
    """block type -> [(fixture path relative to the repository, its solver)] of the
    fixtures that use it."""
    index: dict = {}
    if not FIXTURES.is_dir():
        return index
    for path in sorted(FIXTURES.rglob("*.json")):
        if REFERENCE in path.parents:
            continue
        d = json.loads(path.read_text())["diagram"]
        blocks = d["blocks"]
        use = (f"fixtures/{path.relative_to(FIXTURES).as_posix()}", d.get("solver") or "discrete")
        for b in blocks if isinstance(blocks, list) else [blocks]:
            index.setdefault(b["type"], [])
            if use not in index[b["type"]]:
                index[b["type"]].append(use)
    return index


# ----------------------------------------------------------------------------- solvers

def _method(solver: str) -> str:
    return _METHOD_TEXT[METHODS[METHOD[solver]].__name__]


def _names(solvers) -> str:
    solvers = list(solvers)
    return solvers[0] if len(solvers) == 1 else ", ".join(solvers[:-1]) + " and " + solvers[-1]


def _interface(fmu_type: str) -> str:
    """``CoSimulation`` -> ``co-simulation``."""
    return re.sub(r"(?<!^)([A-Z])", r"-\1", INTERFACES[fmu_type]).lower()


def solver_line(bt, runs: bool) -> str:
    """Which solvers the block runs under and what each does with it, from the rules the
    handlers declare (``Handler.solvers``, ``Handler.solver_role``) and the engine's."""
    if not runs:
        return "none (validates only)"
    handler = REGISTRY.get(bt.type)
    role = "part" if bt.acausal else handler.solver_role
    solvers = SOLVERS if bt.acausal else handler.solvers
    owned = [s for s in SOLVER_OWNED if s in solvers]
    fixed = [s for s in FIXED_STEP_SOLVERS if s in solvers]
    if role == "part":
        whose = "its island" if bt.acausal else f"the {_interface(bt.type)} FMU's continuous states"
        text = (", ".join(f"{s} ({_method(s)})" for s in solvers)
                + f": the method that integrates {whose} between grid points")
    elif role == "state":
        text = (f"{_names(solvers)}: under {_names(fixed)} nflow's fixed-step update advances its "
                f"state (UPDATE), under {_names(owned)} the solver integrates it")
    elif role == "crossings":
        text = f"{_names(solvers)}: under {_names(owned)} its switching points are zero-crossing events"
    elif role == "algebraic":
        text = f"{_names(solvers)}: its output is an algebraic unknown, solved for at every evaluation"
    elif bt.type in INTERFACES:
        text = (f"{_names(solvers)}, the same under each: the {_interface(bt.type)} FMU steps itself "
                "from one grid point to the next")
    else:
        text = f"{_names(solvers)}, the same under each"
    if bt.type == "subsystem":
        text += (f"; a function-call subsystem (controlPort functionCall) only under "
                 f"{_names(FUNCTION_CALL_SOLVERS)}")
    elif handler is not None and (handler.calls or handler.routes_calls):
        text += f"; the function-call subsystems it drives run only under {_names(FUNCTION_CALL_SOLVERS)}"
    return text


# ----------------------------------------------------------------------------- pages

def _range_cell(spec) -> str:
    """The param's range, and whether a value outside it is refused: a bound or choice
    that ``paramTypes`` checks, or a range the handler checks when the plan is compiled
    (the manifest tests check both claims)."""
    text = spec.range.removesuffix(COMPILE_CHECKED).replace(">=", "≥").replace("<=", "≤")
    stated = parse_range(spec.range)
    if (spec.range.endswith(COMPILE_CHECKED)
            or (spec.minimum is not None or spec.exclusive_minimum is not None) and stated.lower is not None
            or spec.enum is not None and stated.choices is not None):
        text += " (checked)"
    return _markdown(text, cell=True) or "–"


def _unit_cell(spec) -> str:
    if spec.unit is None:
        return "?"
    if spec.unit == "":
        return "1" if spec.kind in ("number", "numeric", "vector", "matrix") else "–"
    return _markdown(unit_text(spec.unit), cell=True)


def _units_used(bts) -> list:
    used = set()
    for bt in bts:
        for spec in bt.params.values():
            if spec.unit is not None:
                used.update(spec.unit if isinstance(spec.unit, tuple) else (spec.unit,))
    return [u for u in UNITS if u in used]


def _block_section(bt, runs: set, examples: dict) -> list:
    lines = [f"## `{bt.type}`", "", f"**{_markdown(bt.label)}**: {_markdown(bt.help)}", ""]
    runs_here = bt.type in runs
    why = f": {_markdown(NOT_RUNNABLE[bt.type])}" if bt.type in NOT_RUNNABLE else ""
    lines.append(f"- runs here: {'yes' if runs_here else f'no (validates only; `unsupported_block` when run){why}'}")
    lines.append("- phases: " + (", ".join(bt.phases) if bt.phases else
                                 "none declared (lowered into a physical island)" if bt.acausal else "none"))
    lines.append(f"- solvers: {solver_line(bt, runs_here)}")
    if bt.inputs or bt.outputs:
        ins = ", ".join(f"{i} `{n}`" if n else str(i) for i, n in enumerate(bt.input_names)) or "none"
        outs = ", ".join(f"{i} `{n}`" if n else str(i) for i, n in enumerate(bt.output_names)) or "none"
        lines.append(f"- signal ports (0-based): inputs {ins}; outputs {outs}")
    if bt.pins:
        domains = dict.fromkeys(bt.pins.values())
        lines.append("- physical pins: " + ", ".join(f"`{p}` ({d})" for p, d in bt.pins.items()) + "; "
                     + "; ".join(f"{d}: across {a}, through {t}" for d in domains for a, t in [_pin_quantities(d)]))
    if bt.aliases:
        lines.append("- also accepts: " + ", ".join(f"`{a}` for `{n}`" for a, n in bt.aliases.items()))
    if bt.open_params:
        lines.append("- other params: the block's own (an FMU's variables, set by name; the handler checks them)")
    if bt.params:
        lines += ["", "| param | default | unit | range | meaning |", "|---|---|---|---|---|"]
        for spec in bt.params.values():
            lines.append(f"| `{spec.name}` | {_code(spec.default) if spec.default is not None else '–'} | "
                         f"{_unit_cell(spec)} | {_range_cell(spec)} | {_markdown(spec.meaning, cell=True)} |")
    uses = examples.get(bt.type, [])
    if uses:
        shown = ", ".join(f"`{path}` ({solver})" for path, solver in uses[:FIXTURES_SHOWN])
        more = f", and {len(uses) - FIXTURES_SHOWN} more" if len(uses) > FIXTURES_SHOWN else ""
        lines += ["", f"Fixtures: {shown}{more}"]
    lines.append("")
    return lines


def library_page(folder: str, manifest: dict, runs: set, examples: dict) -> str:
    types = block_types()
    bts = [types[entry["type"]] for entry in manifest["blocks"]]
    comment = (manifest.get("comment") or "").strip()
    lines = [f"# {manifest['title']} (`{folder}`)", ""] + ([_markdown(comment), ""] if comment else [])
    lines += [f"{sum(1 for bt in bts if bt.type in runs)} of {len(bts)} blocks run in nflow-compat. A value outside "
              "a range marked *(checked)* is refused: by the diagram check (`param_range`, `param_value`) or when "
              "the plan is compiled.", ""]
    used = _units_used(bts)
    if used:
        lines += ["Units on this page:", "", "| unit | what |", "|---|---|"]
        lines += [f"| {_markdown(unit_text(u), cell=True) or '1, –'} | {_markdown(UNITS[u], cell=True)} |"
                  for u in used]
        lines.append("")
    for bt in bts:
        lines += _block_section(bt, runs, examples)
    return "\n".join(lines).rstrip() + "\n"


def pages() -> dict:
    runs = {row["type"] for row in supported_types()}
    examples = _fixture_index()
    out = {f"{folder}.md": library_page(folder, manifest, runs, examples)
           for folder, manifest in libraries().items()}
    types = block_types()
    index = ["# Block reference", "", f"{len(types)} block types in {len(libraries())} libraries, "
             f"{sum(1 for t in types if t in runs)} of them run here (the others validate only). Each page gives "
             "a block's ports and physical pins, its parameters (default, unit, range, meaning), its phases, the "
             "solvers it runs under and the fixtures that exercise it.", "",
             "Generated from `nflow_compat/libraries/*/library.json` by "
             "`python -m nflow_compat.docs --write docs/blocks`.", "", "| library | blocks | run here |", "|---|---|---|"]
    for folder, manifest in libraries().items():
        n = len(manifest["blocks"])
        index.append(f"| [{manifest['title']}]({folder}.md) | {n} | "
                     f"{sum(1 for b in manifest['blocks'] if b['type'] in runs)} |")
    out["README.md"] = "\n".join(index) + "\n"
    return out


def stale(directory: Path) -> list:
    want = pages()
    have = {p.name for p in directory.glob("*.md")} if directory.is_dir() else set()
    bad = [name for name, text in want.items()
           if not (directory / name).is_file() or (directory / name).read_text() != text]
    return sorted(bad + [name for name in have - set(want)])


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 2 or argv[0] not in ("--write", "--check"):
        print("usage: python -m nflow_compat.docs --write|--check DIR", file=sys.stderr)
        return 2
    directory = Path(argv[1])
    if argv[0] == "--check":
        bad = stale(directory)
        for name in bad:
            print(f"stale: {directory / name}")
        return 1 if bad else 0
    directory.mkdir(parents=True, exist_ok=True)
    want = pages()
    for old in directory.glob("*.md"):
        if old.name not in want:
            old.unlink()
    for name, text in want.items():
        (directory / name).write_text(text)
    print(f"docs: {len(want)} page(s) in {directory}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
