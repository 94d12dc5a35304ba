"""nflow's ``modelica`` block: a Modelica model, compiled when the plan is, run as a
continuous part of the diagram (``modelica.runtime.ModelicaPart``).

nflow compiles the model to an FMU with OpenModelica. Here rumoca (the optional extra
``modelica``) parses and flattens it and the package's own pipeline lowers and runs it
(``nflow_compat.modelica``): no FMU, no C compiler. What the block takes, as nflow's:

* ``source`` (inline Modelica text) or ``file`` (a ``.mo`` file relative to the base
  directory, confined like fileSource's), and ``modelName`` (empty: the file's base name,
  or the first class the source declares, nflow's rule);
* ``libraries``: library roots or package files (relative to the base directory, like
  ``file``) searched before the directories of ``MODELICAPATH``;
* ports: input port k is the model's k-th top-level ``input``, output port k its k-th
  top-level ``output``, in declaration order (the fmu block's rule; declare ``inputs`` /
  ``outputs``, ``nflow-sim modelica-block`` prints them). An unconnected input keeps its
  start value;
* every other param names a parameter of the model and overrides its binding (checked:
  a parameter that shapes the flat model, ``structural`` for rumoca, cannot be set here).

The model runs as model exchange would: its states join the solver's state vector under
every solver (as ``fmuMe``: RK4 between grid points under discrete), its relations are
event functions, its when-equations run at events, its outputs are read at the solver's
state. Errors name the model's source line: rumoca's compile errors
(``modelica_compile_failed``), what the lowering does not take (``modelica_unsupported``),
and failures while running (``modelica_singular``, ``modelica_unsolvable``,
``modelica_initialization``, ``modelica_assert``, ``event_iteration``).
"""
from __future__ import annotations

import math
import re
from pathlib import Path

from ..errors import DiagramError, SimulationError, did_you_mean
from ..files import BASE_DIR_KEY, confined_path
from ..manifests import ParamSpec
from ..modelica import frontend, runtime, structure
from ..modelica.symbolic import ModelicaUnsupported
from ..normalize import normalize_param
from . import Phases, block, scalar_out

OWN_PARAMS = ("source", "file", "modelName", "libraries")
MAX_SOURCE_BYTES = 16 * 2 ** 20
_FIRST_CLASS = re.compile(r"^\s*(?:(?:encapsulated|partial|final|expandable|operator|pure|impure)\s+)*"
                          r"(?:model|block|class|package|connector|record)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)


class ModelicaUnit:
    """The model of one block, compiled and lowered when the plan is compiled."""

    def __init__(self, io):
        self.block_id = io.id
        self.label = f"block {io.id!r} (modelica)"
        params = io.params
        source, file = params.get("source") or "", params.get("file") or ""
        if bool(source.strip()) == bool(str(file).strip()):
            io.fail("modelica_no_model", "give the model as inline 'source' or as a 'file' (one of them)",
                    "source" if not source.strip() else "file")
        self.param = "source" if source.strip() else "file"
        base = io.ctx.shared.get(BASE_DIR_KEY)
        roots = [self._confined(base, name, "libraries", "library", io) for name in params.get("libraries") or ()]
        if source.strip():
            text, filename = source, f"{io.id}.mo"
        else:
            path = self._confined(base, file, "file", "Modelica file", io)
            text, filename = self._read(path, file, io), Path(file).name
        name = (params.get("modelName") or "").strip() or default_model_name(text, file)
        if not name:
            io.fail("modelica_no_model", "the source declares no model, block or class (set 'modelName')",
                    "modelName")
        self.model_name = name
        where = io.block.where(self.param)
        self.loaded = load(text, filename, name, frontend.library_roots(roots), self.label, where)
        self.overrides = self._overrides(io, self.loaded.flat)
        self.structure, self.program = lowered(self.loaded, self.overrides, name, self.label, io.id, where)
        self._check_ports(io)

    @staticmethod
    def _confined(base, name, param, what, io):
        where = io.block.where(param)
        if base is None:
            raise DiagramError("file_access_disabled", f"block {io.id!r} (modelica) reads {what} {name!r} but file "
                               "access is off: pass base_dir= (the CLI uses the diagram's directory)", **where)
        path = confined_path(base, name, where, what=what)
        if not path.exists():
            raise DiagramError("modelica_file_missing", f"block {io.id!r} (modelica): {what} {name!r} does not "
                               "exist", **where)
        return path

    @staticmethod
    def _read(path, name, io) -> str:
        where = io.block.where("file")
        try:
            if path.stat().st_size > MAX_SOURCE_BYTES or not path.is_file():
                raise DiagramError("file_unreadable", f"block {io.id!r} (modelica): {name!r} is not a regular file "
                                   f"of at most {MAX_SOURCE_BYTES} bytes", **where)
            return path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise DiagramError("file_unreadable", f"block {io.id!r} (modelica): cannot read {name!r}: "
                               f"{getattr(exc, 'strerror', None) or exc}", **where) from None

    def _overrides(self, io, flat) -> dict:
        """name -> float for the params beyond the block's own: parameters of the model."""
        out = {}
        names = [n for n, v in flat.variables.items() if v.variability == "parameter"]
        for name, value in io.params.items():
            if name in OWN_PARAMS:
                continue
            where = io.block.where(name)
            var = flat.variables.get(name)
            if var is None or var.variability != "parameter":
                kind = "a constant" if var is not None and var.variability == "constant" else \
                    "not a parameter" if var is not None else "no such parameter"
                raise DiagramError("modelica_unknown_parameter", f"{self.label}: model {self.model_name!r} has "
                                   f"{'no parameter ' + repr(name) if var is None else repr(name) + ' (' + kind + ')'}"
                                   + (did_you_mean(name, names + list(OWN_PARAMS)) if var is None else ""), **where)
            if self.loaded.parameter_kinds.get(name) == "structural":
                raise DiagramError("modelica_structural_parameter", f"{self.label}: parameter {name!r} shapes the "
                                   "flattened model (a structural parameter) and cannot be set by the block; "
                                   "change it in the source", **where)
            if var.type == "String":
                raise DiagramError("param_type", f"{self.label}: parameter {name!r} is a String", **where)
            kind = "boolean" if var.type == "Boolean" and isinstance(value, bool) else "number"
            number = normalize_param(ParamSpec(name, kind, None), value, io.variables, where)
            number = float(number)
            if var.type in ("Integer", "Boolean") and number != int(number) or not math.isfinite(number):
                raise DiagramError("param_type", f"{self.label}: parameter {name!r} ({var.type}) cannot be "
                                   f"{number:g}", **where)
            out[name] = number
        return out

    def _check_ports(self, io):
        st = self.structure
        for declared, found, what, pointer in ((io.block.inputs, st.inputs, "input", "/inputs"),
                                               (io.block.outputs, [n for n, _ in st.outputs], "output", "/outputs")):
            if declared > len(found):
                raise DiagramError("modelica_ports", f"{self.label} declares {declared} {what} port(s) but model "
                                   f"{self.model_name!r} has {len(found)} top-level {what}(s)"
                                   + (f": {', '.join(found)}" if found else ""),
                                   block=io.id, path=io.block.path + pointer)
        for port, width in enumerate(io.in_widths[:len(st.inputs)]):
            if width > 1:
                io.fail("modelica_port_width", f"input {port} ({st.inputs[port]!r}) is a scalar of the model but its "
                        f"signal has width {width}")


def default_model_name(text: str, file: str) -> str:
    """nflow's rule for an empty modelName: the file's base name, else the first class the
    source declares ("" if none)."""
    if file:
        return Path(file).stem
    found = _FIRST_CLASS.search(text)
    return found.group(1) if found else ""


def load(text, filename, name, roots, label, where):
    """``frontend.load`` with its failures as typed errors at ``where``."""
    try:
        return frontend.load(text, filename, name, roots)
    except RecursionError:
        raise DiagramError("modelica_unsupported", f"{label}: model {name!r} nests too deeply to be read", **where) \
            from None
    except frontend.CompileFailed as exc:
        at = f" (line {exc.line})" if exc.line else ""
        raise DiagramError("modelica_compile_failed", f"{label}: rumoca could not compile model {name!r}{at}: "
                           f"{exc.message}", **where) from None
    except SimulationError as err:
        raise SimulationError(err.code, f"{label}: {err.message}", **where) from None
    except ModelicaUnsupported as exc:
        raise unsupported(exc, getattr(exc, "loaded", None), name, label, where) from None


def lowered(loaded, overrides, name, label, block_id, where):
    """(structure, program) of a loaded model with ``overrides``, failures typed."""
    try:
        st = structure.lower(loaded.flat, overrides)
        return st, runtime.Program(st, loaded.describe, label, block_id)
    except RecursionError:
        raise DiagramError("modelica_unsupported", f"{label}: model {name!r}: its equations nest too deeply to be "
                           "lowered", **where) from None
    except ModelicaUnsupported as exc:
        raise unsupported(exc, loaded, name, label, where) from None


def unsupported(exc, loaded, name, label, where) -> DiagramError:
    """``modelica_unsupported`` naming the source line of what the lowering refused."""
    place = loaded.describe(exc.pos) if loaded is not None and exc.pos is not None else None
    at = f" ({place})" if place else ""
    return DiagramError("modelica_unsupported", f"{label}: model {name!r}{at}: {exc.message}", **where)


def block_entry(path: Path, model_name: str | None = None, libraries=()) -> dict:
    """A library.json block entry for the model ``model_name`` of the Modelica file ``path``
    (what ``nflow-sim modelica-block`` prints): its ports and its settable parameters with
    their values."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DiagramError("file_unreadable", f"cannot read {str(path)!r}: {getattr(exc, 'strerror', None) or exc}") \
            from None
    name = model_name or default_model_name(text, str(path))
    label = f"model file {path.name!r}"
    loaded = load(text, path.name, name, frontend.library_roots([Path(p).resolve() for p in libraries]), label, {})
    st, _ = lowered(loaded, {}, name, label, None, {})

    def port(name):
        var = st.variables[name]
        return {"name": name, **({"description": var.description} if var.description else {})}
    params = {"file": str(path), "modelName": name}
    params.update({n: st.parameters[n] for n, v in st.variables.items()
                   if v.variability == "parameter" and n in st.parameters
                   and loaded.parameter_kinds.get(n) != "structural"})
    return {"type": "modelica", "label": name, "inputs": [port(n) for n in st.inputs],
            "outputs": [port(n) for n, _ in st.outputs], "defaultParams": params}


def _feedthrough(unit, io) -> frozenset:
    program = unit.program
    connected = [k for k in range(min(io.block.inputs, len(unit.structure.inputs))) if io.ins[k] is not None]
    if not any(program.output_inputs[:io.block.outputs]):
        return frozenset()
    return frozenset(connected)


@block("modelica", widths=scalar_out, feedthrough=False, solver_role="part", reads_files=True)
def modelica(io):
    """See the module docstring: OUTPUT emits the outputs that do not read an input, at the
    state the solver gives; ALGEBRAIC the others, with the current inputs; committed
    evaluations also check the model's asserts."""
    unit = ModelicaUnit(io)
    ctx, S = io.ctx, io.S
    n_in = min(io.block.inputs, len(unit.structure.inputs))
    slots = [io.ins[k] for k in range(n_in)] + [None] * (len(unit.structure.inputs) - n_in)

    def read_inputs():
        return [None if slot is None else S[slot] for slot in slots]

    part = runtime.ModelicaPart(unit.program, io.id, ctx, read_inputs)
    n_out = min(io.block.outputs, len(unit.structure.outputs))
    fed = [k for k in range(n_out) if unit.program.output_inputs[k]]
    plain = [k for k in range(n_out) if not unit.program.output_inputs[k]]
    targets_plain = [(k, io.outs[k]) for k in plain]
    targets_fed = [(k, io.outs[k]) for k in fed]

    def started():
        if not part.started and not ctx.side_effect_free:
            # a committed evaluation before the solver started
            part.x = part.initialize(ctx.t, part.x0)

    def output():
        started()
        values = part.outputs(state_only=True)
        for k, slot in targets_plain:
            S[slot] = values[k]
        if not ctx.side_effect_free and not fed:
            part.check_asserts()

    def algebraic():
        started()
        values = part.outputs(state_only=False)
        for k, slot in targets_fed:
            S[slot] = values[k]
        if not ctx.side_effect_free:
            part.check_asserts()

    return Phases(init=part.reset, output=output if plain or not fed else None,
                  algebraic=algebraic if fed else None, part=part, feedthrough=_feedthrough(unit, io))
