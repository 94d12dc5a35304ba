"""nflow's FMI library: ``fmu`` co-simulates a Functional Mock-up Unit, ``fmuMe`` integrates
a model-exchange FMU's continuous states with the diagram's solver; FMI 2.0 and 3.0, through
FMPy (the optional extra ``fmi``).

nflow documents the blocks in outline only (``nflow_blocks/fmi``, ``nflow_fmi``): the archive
is ``params.path`` (a .fmu or an extracted folder); the ports and params follow the model
description. Here input port k is the FMU's k-th variable of causality input and output port
k its k-th output, in declaration order (``fmuToBlock``'s rule); every other param names an
FMU variable (a parameter, an input's start value) and is set, type-checked against the model
description, after instantiation. What the pages leave open, and what we do:

* the path is relative to the base directory, like fileSource's (``confined_path``); the
  archive is read and extracted when the plan is compiled, instantiated at each run's INIT,
  and terminated and freed when the run ends, however it ends (``Phases.finalize``);
* ``fmu``: the outputs at t_k are the FMU's at its communication point t_k (OUTPUT); UPDATE
  sets the inputs of t_k, held over the step, and calls doStep(t_k, sampleTime). Outputs that
  the model structure says depend on an input are read again after setting the current
  inputs (ALGEBRAIC: direct feedthrough); an output without a ``dependencies`` list depends
  on every input (the FMI rule);
* ``fmuMe``: a continuous part of the diagram (``FmuPart``): its states join the solver's
  state vector, its event indicators are zero-crossing functions (relation ``z > 0``, FMI's
  domains), its ``nextEventTime`` a time event. Every event of the diagram (a state event of
  any part, a time event, an input jump) runs the FMU's event mode and its discrete-update
  fixed point, then re-reads the states it says changed. Initialization uses the inputs'
  start values; the diagram's inputs at t = 0 enter through an event iteration right after.
  An FMU that needs ``completedIntegratorStep`` gets it at every grid point.
"""
from __future__ import annotations

import collections
import contextlib
import ctypes
import functools
import math
import os
import shutil
import tempfile
import weakref
import xml.etree.ElementTree as ElementTree
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ..normalize import normalize_param
from ..errors import DiagramError, SimulationError, did_you_mean
from ..extras import install_hint
from ..files import BASE_DIR_KEY, confined_path
from ..manifests import ParamSpec, block_types
from . import Phases, block, scalar_out

INTERFACES = {"fmu": "CoSimulation", "fmuMe": "ModelExchange"}
_ATTRIBUTE = {"CoSimulation": "coSimulation", "ModelExchange": "modelExchange"}

# (FMI major version, variable type) -> (FMPy get/set suffix, Python kind of the value)
_ACCESS = {
    (2, "Real"): ("Real", float), (2, "Integer"): ("Integer", int), (2, "Enumeration"): ("Integer", int),
    (2, "Boolean"): ("Boolean", bool), (2, "String"): ("String", str),
    (3, "Float64"): ("Float64", float), (3, "Float32"): ("Float32", float),
    (3, "Int8"): ("Int8", int), (3, "UInt8"): ("UInt8", int), (3, "Int16"): ("Int16", int),
    (3, "UInt16"): ("UInt16", int), (3, "Int32"): ("Int32", int), (3, "UInt32"): ("UInt32", int),
    (3, "Int64"): ("Int64", int), (3, "UInt64"): ("UInt64", int), (3, "Enumeration"): ("Int64", int),
    (3, "Boolean"): ("Boolean", bool), (3, "String"): ("String", str),
}
# the range of each integer type (FMI 2.0 Integer and Enumeration are 32-bit)
_INT_BITS = {"Integer": (32, True), "Enumeration": (32, True), "Int8": (8, True), "UInt8": (8, False),
             "Int16": (16, True), "UInt16": (16, False), "Int32": (32, True), "UInt32": (32, False),
             "Int64": (64, True), "UInt64": (64, False)}
_PARAM_KIND = {float: "number", int: "number", bool: "boolean", str: "string"}
# Variables a param may set (before initialization): FMPy's settable_in_instantiated rule.
_SETTABLE_INITIAL = ("exact", "approx")
LOG_LINES = 5             # FMU log messages kept for an error message
MAX_EVENT_PASSES = 1000   # discrete-update passes at one event before the run stops


@functools.cache
def _fmpy():
    """FMPy's modules (an optional dependency)."""
    try:
        import fmpy
        from fmpy import fmi2, fmi3
        from fmpy.logging import addLoggerProxy
        from fmpy.model_description import read_model_description
    except ImportError:
        raise SimulationError("fmi_unavailable", "FMU blocks need the Python package fmpy (the 'fmi' extra), "
                              f"which is not installed; {install_hint('fmi')}") from None
    return SimpleNamespace(fmpy=fmpy, fmi2=fmi2, fmi3=fmi3, add_logger_proxy=addLoggerProxy,
                           read_model_description=read_model_description)


# ----------------------------------------------------------------------------- the model description

def declared_version(path: Path, name: str, where: dict) -> str:
    """The ``fmiVersion`` of the model description of the archive or folder ``path``."""
    try:
        with contextlib.ExitStack() as stack:
            if path.is_dir():
                source = stack.enter_context(open(path / "modelDescription.xml", "rb"))
            else:
                source = stack.enter_context(stack.enter_context(zipfile.ZipFile(path)).open("modelDescription.xml"))
            for _, element in ElementTree.iterparse(source, events=("start",)):
                return element.get("fmiVersion") or "(none)"
    except (OSError, KeyError, zipfile.BadZipFile, ElementTree.ParseError) as exc:
        raise DiagramError("fmu_invalid", f"{name!r} is not a readable FMU (a zip archive or folder with a "
                           f"modelDescription.xml): {type(exc).__name__}: {exc}", **where) from None
    raise DiagramError("fmu_invalid", f"{name!r}: its modelDescription.xml is empty", **where)


def read_description(path: Path, name: str, where: dict):
    """FMPy's model description of ``path``, validated: typed errors for a missing file, a
    file that is not an FMU, and an FMI version other than 2.0 / 3.x."""
    if not path.exists():
        raise DiagramError("fmu_missing", f"FMU {name!r} does not exist", **where)
    version = declared_version(path, name, where)
    if version != "2.0" and not version.startswith("3."):
        raise DiagramError("fmu_version", f"FMU {name!r} is FMI {version}; only FMI 2.0 and 3.0 are supported",
                           **where)
    read = _fmpy().read_model_description     # fmi_unavailable before FMPy's own errors
    try:
        return read(str(path), validate=True)
    except Exception as exc:   # FMPy's schema and consistency checks: any of its exceptions
        raise DiagramError("fmu_invalid", f"FMU {name!r} has an invalid modelDescription.xml: {exc}",
                           **where) from None


def major(md) -> int:
    return 2 if md.fmiVersion == "2.0" else 3


def variables(md) -> list:
    """The model variables in declaration order (FMI 3.0 aliases, which FMPy appends, left out)."""
    return [v for v in md.modelVariables if getattr(v, "alias", None) is None]


def port_variables(md, causality: str) -> list:
    return [v for v in variables(md) if v.causality == causality]


def settable(variable) -> bool:
    return (variable.causality in ("parameter", "input")
            or variable.variability != "constant" and variable.initial in _SETTABLE_INITIAL)


def _scalar(variable) -> bool:
    shape = getattr(variable, "shape", None)
    return not shape or math.prod(shape) == 1


def describe(path: Path) -> dict:
    """What ``nflow-sim fmu-info`` prints (nflow's ``fmiInfo``)."""
    md = read_description(path, str(path), {})
    return {
        "modelName": md.modelName, "modelIdentifier": _identifier(md), "fmiVersion": md.fmiVersion,
        "guid": md.guid, "description": md.description or "",
        "coSimulation": md.coSimulation is not None, "modelExchange": md.modelExchange is not None,
        "scheduledExecution": md.scheduledExecution is not None,
        "numberOfContinuousStates": md.numberOfContinuousStates,
        "numberOfEventIndicators": md.numberOfEventIndicators,
        "generationTool": md.generationTool or "", "generationDateAndTime": md.generationDateAndTime or "",
        "platforms": _fmpy().fmpy.supported_platforms(str(path)),
        "defaultExperiment": {key: _number(getattr(md.defaultExperiment, key, None))
                              for key in ("startTime", "stopTime", "tolerance", "stepSize")},
        "units": [u.name for u in md.unitDefinitions],
        "variables": [{"name": v.name, "valueReference": v.valueReference, "causality": v.causality,
                       "variability": v.variability, "type": v.type, "start": _start(v),
                       "unit": v.unit or getattr(v.declaredType, "unit", None) or "",
                       "description": v.description or ""} for v in variables(md)],
    }


def _number(text):
    """A model description's number attribute as a float (None when absent)."""
    return None if text is None else float(text)


def block_entry(path: Path, type_name: str | None = None, path_param: str | None = None) -> dict:
    """A library.json block entry for the FMU (nflow's ``fmuToBlock``): type ``fmu`` when it
    co-simulates (else ``fmuMe``, or ``type_name``), one input / output port per input /
    output variable, params ``path`` and the FMU's parameters with their start values."""
    md = read_description(path, str(path), {})
    if type_name is None:
        type_name = "fmu" if md.coSimulation is not None else "fmuMe"
    if getattr(md, _ATTRIBUTE[INTERFACES[type_name]]) is None:
        raise DiagramError("fmu_interface", f"FMU {str(path)!r} does not provide {INTERFACES[type_name]} "
                           f"(the {type_name} block needs it)")
    params = {"path": path_param if path_param is not None else str(path)}
    params.update({v.name: _start(v) for v in variables(md) if v.causality == "parameter" and v.start is not None})

    def port(v):
        return {"name": v.name, **({"description": v.description} if v.description else {})}
    return {"type": type_name, "label": md.modelName, "phases": list(block_types()[type_name].phases),
            "inputs": [port(v) for v in port_variables(md, "input")],
            "outputs": [port(v) for v in port_variables(md, "output")],
            "defaultParams": params,
            "help": md.description or f"{md.modelName} (FMI {md.fmiVersion} {INTERFACES[type_name]} FMU)"}


def _identifier(md) -> str:
    interfaces = [md.coSimulation, md.modelExchange, md.scheduledExecution]
    return next((i.modelIdentifier for i in interfaces if i is not None), md.modelName)


def _start(variable):
    """The start value as JSON has it: a number, a boolean, a string (also an FMI 3.0
    array's start list), or None."""
    text = variable.start
    if text is None or variable.type in ("String", "Binary", "Clock"):
        return text
    if variable.type == "Boolean":
        return text.strip().lower() in ("true", "1")
    try:
        return int(text) if variable.type in _INT_BITS else float(text)
    except ValueError:
        return text


# ----------------------------------------------------------------------------- one block's FMU

class FmuUnit:
    """The FMU of one block, read when the plan is compiled: its model description, the
    folder it is extracted to (removed with the unit), its ports, the params to set, and
    which outputs feed through which inputs."""

    def __init__(self, io):
        bt = io.block.type.type
        self.interface = INTERFACES[bt]
        self.label = f"block {io.id!r} ({bt})"
        self.block_id = io.id
        where = io.block.where("path")
        try:
            _fmpy()
        except SimulationError as err:
            raise SimulationError(err.code, f"{self.label}: {err.message}", **where) from None
        name = io.params.get("path")
        base = io.ctx.shared.get(BASE_DIR_KEY)
        if base is None:
            raise DiagramError("file_access_disabled", f"{self.label} reads FMU {name!r} but file access is off: "
                               "pass base_dir= (the CLI uses the diagram's directory)", **where)
        path = confined_path(base, name, where, what="FMU")
        md = self.md = read_description(path, name, where)
        self.version = major(md)
        if getattr(md, _ATTRIBUTE[self.interface]) is None:
            other = "fmuMe" if self.interface == "CoSimulation" else "fmu"
            raise DiagramError("fmu_interface", f"{self.label}: FMU {name!r} does not provide {self.interface}"
                               + (f"; use a {other} block" if getattr(md, _ATTRIBUTE[INTERFACES[other]]) else ""),
                               **where)
        self.identifier = getattr(md, _ATTRIBUTE[self.interface]).modelIdentifier
        self.inputs = self._ports(io, "input", io.block.inputs, "/inputs")
        self.outputs = self._ports(io, "output", io.block.outputs, "/outputs")
        for port, width in enumerate(io.in_widths[:len(self.inputs)]):
            if width > 1:
                io.fail("fmu_port_width", f"input {port} ({self.inputs[port].name!r}) is a scalar FMU variable but "
                        f"its signal has width {width}")
        self.params = self._params(io)
        self.nx, self.nz = md.numberOfContinuousStates, md.numberOfEventIndicators
        self.state_starts = self._state_starts()
        self.needs_completed_step = self.interface == "ModelExchange" and md.modelExchange.needsCompletedIntegratorStep
        self.feeds = self._feedthrough(io)
        self.directory = self._extract(path, name, where)

    # -- compile-time checks -------------------------------------------------------------
    def _ports(self, io, causality: str, declared: int, pointer: str) -> list:
        found = port_variables(self.md, causality)
        if declared > len(found):
            raise DiagramError("fmu_ports", f"{self.label} declares {declared} {causality} port(s) but the FMU has "
                               f"{len(found)} {causality} variable(s)" + (f": {', '.join(v.name for v in found)}"
                                                                          if found else ""),
                               block=io.id, path=io.block.path + pointer)
        used = found[:declared]
        for k, v in enumerate(used):
            kind = _ACCESS.get((self.version, v.type), (None, None))[1]
            if kind not in (float, int, bool) or not _scalar(v):
                raise DiagramError("fmu_port_type", f"{self.label}: {causality} {k} ({v.name!r}) is a {v.type} "
                                   f"{'array ' if not _scalar(v) else ''}variable; ports carry numbers (real, "
                                   "integer, boolean scalars)", block=io.id, path=io.block.path + pointer)
        return used

    def _params(self, io) -> list:
        """[(variable, value)] for every param but ``path``, checked by name and type."""
        by_name = {v.name: v for v in self.md.modelVariables}
        out = []
        for name, value in io.params.items():
            if name == "path":
                continue
            where = io.block.where(name)
            variable = by_name.get(name)
            if variable is None:
                choices = [v.name for v in variables(self.md) if settable(v)] + ["path"]
                raise DiagramError("fmu_unknown_variable", f"{self.label}: the FMU has no variable {name!r}"
                                   + did_you_mean(name, choices), **where)
            if not settable(variable):
                raise DiagramError("fmu_variable_not_settable", f"{self.label}: FMU variable {name!r} (causality "
                                   f"{variable.causality}, variability {variable.variability}) cannot be set; "
                                   "parameters, inputs and variables with an exact or approximate start value can",
                                   **where)
            out.append((variable, self._value(variable, value, io.variables, where)))
        return out

    def _value(self, variable, value, diagram_variables, where):
        access = _ACCESS.get((self.version, variable.type))
        if access is None or not _scalar(variable):
            raise DiagramError("param_type", f"{self.label}: FMU variable {variable.name!r} is of type "
                               f"{variable.type}{' (an array)' if not _scalar(variable) else ''}, which a param "
                               "cannot set", **where)
        kind = access[1]
        spec = ParamSpec(variable.name, _PARAM_KIND[kind], None)
        out = normalize_param(spec, value, diagram_variables, where)
        if kind is not int:
            return out
        bits, signed = _INT_BITS[variable.type]
        lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2 ** bits - 1)
        if not (math.isfinite(out) and out == int(out) and lo <= out <= hi):
            raise DiagramError("param_type", f"{self.label}: FMU variable {variable.name!r} is an integer "
                               f"({variable.type}, {lo}..{hi}); got {out:g}", **where)
        return int(out)

    def _state_starts(self) -> np.ndarray:
        """The start values of the continuous states (where the derivatives point)."""
        starts = []
        for unknown in self.md.derivatives:
            state = unknown.variable.derivative
            try:
                starts.append(float(state.start) if state is not None and state.start is not None else 0.0)
            except ValueError:
                starts.append(0.0)
        return np.array(starts[:self.nx] + [0.0] * (self.nx - len(starts)), dtype=float)

    def _feedthrough(self, io) -> list:
        """Per declared output, the connected input ports it depends on (the model
        structure's ``dependencies``; none listed means all)."""
        port_of = {id(v): k for k, v in enumerate(self.inputs) if io.ins[k] is not None}
        listed = {id(u.variable): u.dependencies for u in self.md.outputs}
        feeds = []
        for v in self.outputs:
            deps = listed.get(id(v))
            ports = set(port_of.values()) if deps is None else {port_of[id(d)] for d in deps if id(d) in port_of}
            feeds.append(frozenset(ports))
        return feeds

    def _extract(self, path: Path, name: str, where: dict) -> str:
        fmpy = _fmpy().fmpy
        if path.is_dir():
            directory = str(path)
        else:
            directory = tempfile.mkdtemp(prefix="nflow-fmu-")
            # the folder goes with the unit (the plan), and at exit at the latest
            weakref.finalize(self, shutil.rmtree, directory, ignore_errors=True)
            try:
                fmpy.extract(str(path), directory)
            except Exception as exc:   # a broken archive, or one FMPy refuses (absolute or '\\' paths)
                raise DiagramError("fmu_invalid", f"{self.label}: FMU {name!r} cannot be extracted: {exc}",
                                   **where) from None
        platform = fmpy.platform if self.version == 2 else fmpy.platform_tuple
        library = Path(directory, "binaries", platform, self.identifier + fmpy.sharedLibraryExtension)
        if not library.is_file():
            present = sorted(p.name for p in Path(directory, "binaries").glob("*")) if \
                Path(directory, "binaries").is_dir() else []
            raise DiagramError("fmu_platform", f"{self.label}: FMU {name!r} has no binary for this platform "
                               f"(binaries/{platform}/{library.name}); it has: {', '.join(present) or 'none'}",
                               **where)
        return directory

    # -- runtime ------------------------------------------------------------------------
    def failure(self, what: str, exc: Exception, t: float, log) -> SimulationError:
        said = f"; the FMU said: {' | '.join(log)}" if log else ""
        return SimulationError("fmu_call_failed", f"{self.label}: {what} failed at t = {t:.9g}: {exc}{said}",
                               block=self.block_id)


class FmuInstance:
    """One FMU instance for one run: the FMI calls the blocks make, the same for FMI 2.0 and
    3.0. Every FMPy failure becomes ``fmu_call_failed`` with the FMU's last log lines."""

    def __init__(self, unit: FmuUnit, ctx):
        fmi2, fmi3 = _fmpy().fmi2, _fmpy().fmi3
        self.unit, self.ctx = unit, ctx
        self.log = collections.deque(maxlen=LOG_LINES)
        self.fmu = None
        self.failed = False
        self.initialized = False
        self.v2 = unit.version == 2
        kind = {(True, "CoSimulation"): fmi2.FMU2Slave, (True, "ModelExchange"): fmi2.FMU2Model,
                (False, "CoSimulation"): fmi3.FMU3Slave, (False, "ModelExchange"): fmi3.FMU3Model}
        cwd = os.getcwd()
        try:   # FMPy changes directory while it loads the library, and not back when that fails
            self.fmu = kind[(self.v2, unit.interface)](
                guid=unit.md.guid, modelIdentifier=unit.identifier, unzipDirectory=unit.directory,
                instanceName=unit.block_id)
        except Exception as exc:
            raise unit.failure("loading the FMU's library", exc, ctx.t, self.log) from None
        finally:
            os.chdir(cwd)
        self.set_inputs = self._setter(unit.inputs)
        self.get_outputs = self._getter(unit.outputs)
        self.derivatives_call = None

    def _logger(self):
        """The FMU's log callback: messages kept for error messages, never printed."""
        log = self.log
        if self.v2:
            fmi2 = _fmpy().fmi2
            callbacks = fmi2.fmi2CallbackFunctions()
            callbacks.logger = _fmi2_logger()
            callbacks.allocateMemory = fmi2.fmi2CallbackAllocateMemoryTYPE(fmi2.calloc)
            callbacks.freeMemory = fmi2.fmi2CallbackFreeMemoryTYPE(fmi2.free)
            callbacks.componentEnvironment = id(self)
            _FMI2_LOGS[id(self)] = log
            _fmpy().add_logger_proxy(ctypes.byref(callbacks))   # formats the printf-style message for us
            self._callbacks = callbacks               # kept alive as long as the instance
            return {"callbacks": callbacks}

        def message(environment, status, category, text):
            log.append(text.decode("utf-8", "replace") if text else "")
        return {"logMessage": message}

    def _call(self, what: str, fn, *args):
        try:
            return fn(*args)
        except Exception as exc:   # FMPy's FMICallException, or a failed instantiation
            self.failed = True
            raise self.unit.failure(what, exc, self.ctx.t, self.log) from None

    def _setter(self, ports):
        """``set(values)`` writing the values to the port variables, one FMPy call per type;
        a None value (an unconnected port) is skipped."""
        groups = self._groups(ports, "set")

        def write(values):
            for fn, vrs, positions, kind in groups:
                pairs = [(vr, values[p]) for vr, p in zip(vrs, positions) if values[p] is not None]
                if not pairs:
                    continue
                try:
                    converted = [_to_fmu(kind, v) for _, v in pairs]
                except (ValueError, OverflowError):
                    raise SimulationError("fmu_bad_input", f"{self.unit.label}: a non-finite input at t = "
                                          f"{self.ctx.t:.9g} cannot go to an integer FMU variable",
                                          block=self.unit.block_id) from None
                self._call("setting the inputs", fn, [vr for vr, _ in pairs], converted)
        return write

    def _getter(self, ports):
        """``get()`` -> the port variables' values as floats, in port order."""
        groups = self._groups(ports, "get")
        n = len(ports)

        def read():
            out = [0.0] * n
            for fn, vrs, positions, _ in groups:
                for p, value in zip(positions, self._call("reading the outputs", fn, vrs)):
                    out[p] = float(value)
            return out
        return read

    def _groups(self, ports, verb: str) -> list:
        by_type = {}
        for k, v in enumerate(ports):
            suffix, kind = _ACCESS[(self.unit.version, v.type)]
            by_type.setdefault(suffix, (kind, [], []))
            by_type[suffix][1].append(v.valueReference)
            by_type[suffix][2].append(k)
        return [(getattr(self.fmu, verb + suffix), vrs, positions, kind)
                for suffix, (kind, vrs, positions) in by_type.items()]

    # -- life cycle ---------------------------------------------------------------------
    def instantiate(self):
        """Instantiate, set the params, enter initialization mode."""
        unit, fmu = self.unit, self.fmu
        options = self._logger()
        self._call("instantiate", lambda: fmu.instantiate(**options))
        for variable, value in unit.params:
            suffix, kind = _ACCESS[(unit.version, variable.type)]
            self._call(f"setting {variable.name!r}", getattr(fmu, "set" + suffix), [variable.valueReference],
                       [_to_fmu(kind, value)])
        if self.v2:
            self._call("setupExperiment", fmu.setupExperiment, None, 0.0)
            self._call("enterInitializationMode", fmu.enterInitializationMode)
        else:
            self._call("enterInitializationMode", fmu.enterInitializationMode, None, 0.0)
        self.initialized = True

    def exit_initialization(self):
        self._call("exitInitializationMode", self.fmu.exitInitializationMode)

    def free(self):
        """Terminate (unless a call failed: FMI then allows only freeing) and free the
        instance; never raises (it runs on every exit path of the run)."""
        fmu, self.fmu = self.fmu, None
        if fmu is None:
            return
        _FMI2_LOGS.pop(id(self), None)
        try:
            if self.initialized and not self.failed:
                fmu.terminate()
        except Exception:   # a failing terminate still frees
            pass
        try:
            if fmu.component is not None:
                fmu.freeInstance()
            else:
                fmu.freeLibrary()
        except Exception:
            pass

    # -- co-simulation ------------------------------------------------------------------
    def do_step(self, t: float, h: float) -> bool:
        """doStep(t, h); True when the FMU asks to end the simulation."""
        fmu = self.fmu
        if self.v2:
            try:
                fmu.doStep(t, h)
                return False
            except Exception as exc:
                if getattr(exc, "status", None) == _fmpy().fmi2.fmi2Discard and self._terminated():
                    return True
                self.failed = True
                raise self.unit.failure("doStep", exc, t, self.log) from None
        _, terminate, *_ = self._call("doStep", fmu.doStep, t, h)
        return bool(terminate)

    def _terminated(self) -> bool:
        try:
            return bool(self.fmu.getBooleanStatus(_fmpy().fmi2.fmi2Terminated))
        except Exception:
            return False

    # -- model exchange -----------------------------------------------------------------
    def prepare_model_exchange(self):
        """Buffers for the state, derivative and indicator arrays (ctypes views)."""
        unit = self.unit
        self.x = np.zeros(unit.nx)
        self.dx = np.zeros(unit.nx)
        self.z = np.zeros(unit.nz)
        pointer = ctypes.POINTER(ctypes.c_double)
        self.px, self.pdx, self.pz = (a.ctypes.data_as(pointer) for a in (self.x, self.dx, self.z))
        self.derivatives_call = self.fmu.getDerivatives if self.v2 else self.fmu.getContinuousStateDerivatives

    def set_time_and_states(self, t: float, x):
        self._call("setTime", self.fmu.setTime, t)
        if self.unit.nx:
            self.x[:] = x
            self._call("setContinuousStates", self.fmu.setContinuousStates, self.px, self.unit.nx)

    def derivatives(self) -> np.ndarray:
        self._call("getDerivatives", self.derivatives_call, self.pdx, self.unit.nx)
        return self.dx.copy()

    def indicators(self) -> np.ndarray:
        self._call("getEventIndicators", self.fmu.getEventIndicators, self.pz, self.unit.nz)
        return self.z.copy()

    def states(self) -> np.ndarray:
        if self.unit.nx:
            self._call("getContinuousStates", self.fmu.getContinuousStates, self.px, self.unit.nx)
        return self.x.copy()

    def event_iteration(self, enter: bool = True) -> tuple:
        """Event mode (``enter``; not after initialization, which is already there), the
        discrete-update fixed point, continuous-time mode. Returns (terminate, states
        changed, next event time or inf)."""
        fmu = self.fmu
        if enter:
            self._call("enterEventMode", fmu.enterEventMode)
        update = fmu.newDiscreteStates if self.v2 else fmu.updateDiscreteStates
        changed, terminate, more, next_time = False, False, True, math.inf
        passes = 0
        while more and not terminate:
            passes += 1
            if passes > MAX_EVENT_PASSES:
                raise SimulationError("fmu_event_iteration", f"{self.unit.label}: the FMU's discrete update did "
                                      f"not settle within {MAX_EVENT_PASSES} passes at t = {self.ctx.t:.9g}",
                                      block=self.unit.block_id)
            more, terminate, _, values_changed, defined, when = self._call("discrete update", update)
            changed = changed or values_changed
            next_time = when if defined else math.inf
        self._call("enterContinuousTimeMode", fmu.enterContinuousTimeMode)
        return bool(terminate), bool(changed), float(next_time)

    def completed_step(self) -> tuple:
        """completedIntegratorStep: (enter event mode, terminate)."""
        enter, terminate = self._call("completedIntegratorStep", self.fmu.completedIntegratorStep, True)
        return bool(enter), bool(terminate)


# FMPy's FMI 2.0 logger proxy formats the FMU's printf-style messages, but forwards them to ONE
# function for the whole process (the last one registered). So every instance registers the same
# function, and it routes each message by the instance's componentEnvironment token.
_FMI2_LOGS: dict = {}   # componentEnvironment token -> that instance's log


@functools.cache
def _fmi2_logger():
    fmi2 = _fmpy().fmi2

    def route(environment, instance, status, category, text):
        log = _FMI2_LOGS.get(environment or 0)
        if log is None:   # an FMU other code instantiated with FMPy's default callbacks: FMPy's behaviour
            fmi2.printLogMessage(environment, instance, status, category, text)
        else:
            log.append(text.decode("utf-8", "replace"))
    return fmi2.fmi2CallbackLoggerTYPE(route)


def _to_fmu(kind, value):
    """A signal or param value as the FMU variable's type: integers rounded half away
    from zero (ValueError / OverflowError for a non-finite one), booleans true when
    nonzero."""
    if kind is float or kind is str:
        return value
    value = float(value)
    if kind is bool:
        return value != 0.0
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


# ----------------------------------------------------------------------------- the blocks

def _input_values(io, unit):
    """A callable returning the connected inputs' current values (None for an unconnected
    port: the FMU keeps its start value there)."""
    S = io.S
    slots = [io.ins[k] for k in range(len(unit.inputs))]
    return lambda: [None if slot is None else S[slot] for slot in slots]


def _emitter(io, ports):
    """``emit(values)`` writing the given output ports' values to their slots."""
    S = io.S
    targets = [(k, io.outs[k]) for k in ports]

    def emit(values):
        for k, slot in targets:
            S[slot] = values[k]
    return emit


def _split_outputs(unit):
    """(all output ports, the ports read again after the inputs are set)."""
    ports = list(range(len(unit.outputs)))
    return ports, [k for k in ports if unit.feeds[k]]


@block("fmu", widths=scalar_out, feedthrough=False, reads_files=True)
def fmu(io):
    """Co-simulation (see the module docstring): OUTPUT emits the outputs at the current
    communication point, ALGEBRAIC (only with direct feedthrough) re-reads the outputs that
    depend on the inputs after setting them, UPDATE advances the FMU by one step."""
    unit = FmuUnit(io)
    ctx = io.ctx
    inputs = _input_values(io, unit)
    ports, fed = _split_outputs(unit)
    emit_all, emit_fed = _emitter(io, ports), _emitter(io, fed)
    state = {"instance": None, "outputs": [0.0] * len(ports)}

    def init():
        instance = state["instance"] = FmuInstance(unit, ctx)
        instance.instantiate()
        instance.exit_initialization()
        state["outputs"] = instance.get_outputs()

    def output():
        emit_all(state["outputs"])

    def algebraic():
        instance = state["instance"]
        instance.set_inputs(inputs())
        emit_fed(instance.get_outputs())

    def update():
        instance = state["instance"]
        instance.set_inputs(inputs())
        if instance.do_step(ctx.t, ctx.dt):
            ctx.stop = True
            ctx.warnings.append(f"{unit.label}: the FMU asked to end the simulation at t = {ctx.t + ctx.dt:.9g}")
        state["outputs"] = instance.get_outputs()

    def finalize():
        instance, state["instance"] = state["instance"], None
        if instance is not None:
            instance.free()

    return Phases(init=init, output=output if ports else None, algebraic=algebraic if fed else None,
                  update=update, finalize=finalize, feedthrough=frozenset().union(*unit.feeds))


class FmuPart:
    """A model-exchange FMU as a continuous part of the plan (``engine.system``): its
    states in the solver's vector, its event indicators as event functions, its time
    events, and the FMU's event iteration at every event. The FMU stays in initialization
    mode from INIT until ``initialize`` (the solver's start), so that the initial outputs
    come from it and the inputs at t = 0 reach it first."""

    fresh_derivative = True      # derivatives() hands out a copy of the FMU buffer

    def __init__(self, unit: FmuUnit, io, read_inputs):
        self.unit, self.ctx = unit, io.ctx
        self.key = io.id
        self.n_states = unit.nx
        self.x0 = unit.state_starts
        self.x = self.x0.copy()
        self.read_inputs = read_inputs
        self.instance = None
        self.running = False          # continuous-time mode reached (initialization done)
        self.next_event = math.inf

    def start(self):
        """INIT: a fresh instance in initialization mode."""
        self.instance = FmuInstance(self.unit, self.ctx)
        self.instance.prepare_model_exchange()
        self.instance.instantiate()
        self.running = False
        self.next_event = math.inf

    def free(self):
        instance, self.instance = self.instance, None
        if instance is not None:
            instance.free()

    def load(self, x):
        self.x = x

    def sync(self, t: float, x, inputs: bool):
        """The FMU at (t, x) and, if ``inputs``, the current inputs. In initialization mode
        only the inputs can be set."""
        if self.running:
            self.instance.set_time_and_states(t, x)
        if inputs:
            self.instance.set_inputs(self.read_inputs())

    def finish_initialization(self, t: float) -> np.ndarray:
        """Leave initialization mode with the current inputs, run the initial event
        iteration, and return the initial states."""
        instance = self.instance
        instance.set_inputs(self.read_inputs())
        instance.exit_initialization()
        terminate, _, self.next_event = instance.event_iteration(enter=False)
        self.running = True
        self._terminate(terminate, t)
        return instance.states()

    def derivative(self, t, x):
        if not self.n_states:
            return np.zeros(0)
        self.sync(t, x, True)
        return self.instance.derivatives()

    def event_functions(self, t, x):
        if not self.unit.nz:
            return np.zeros(0)
        self.sync(t, x, True)
        return self.instance.indicators()

    def initialize(self, t, x):
        return self.finish_initialization(t) if not self.running else x

    def handle_events(self, t, x, fired):
        """The FMU's event iteration at an event of the diagram; its own events (an indicator
        of ``fired``, its announced time event) are listed in the result's events."""
        if not self.running:
            return self.finish_initialization(t)
        self.sync(t, x, True)
        own_time_event = t >= self.next_event
        return self._iterate(t, x, "state_event" if fired else "time_event" if own_time_event else None, fired)

    def _iterate(self, t, x, kind, fired=()):
        terminate, changed, self.next_event = self.instance.event_iteration()
        if kind is not None:
            event = {"t": float(t), "block": self.key, "kind": kind}
            if fired:
                event["indicators"] = [int(i) for i in fired]
            self.ctx.events.append(event)
        self._terminate(terminate, t)
        return self.instance.states() if changed else np.array(x, dtype=float)

    def completed_step(self, t: float):
        """At a grid point, for an FMU that needs it: completedIntegratorStep, and the event
        iteration it may ask for (its new states written into the solver's state)."""
        self.sync(t, self.x, True)
        enter, terminate = self.instance.completed_step()
        self._terminate(terminate, t)
        if enter:
            self.x[:] = self._iterate(t, self.x, "step_event")

    def _terminate(self, terminate: bool, t: float):
        if terminate and not self.ctx.stop:
            self.ctx.stop = True
            self.ctx.warnings.append(f"{self.unit.label}: the FMU asked to end the simulation at t = {t:.9g}")

    def next_time_event(self, t):
        # the announced time until an event iteration moves it on: one that the run has
        # reached without handling it is due now, never dropped
        return self.next_event


@block("fmuMe", widths=scalar_out, feedthrough=False, solver_role="part", reads_files=True)
def fmu_me(io):
    """Model exchange (see the module docstring and ``FmuPart``): OUTPUT emits the outputs
    that do not depend on the inputs, at the state the solver gives; ALGEBRAIC the others,
    after setting the current inputs."""
    unit = FmuUnit(io)
    ctx = io.ctx
    part = FmuPart(unit, io, _input_values(io, unit))
    ports, fed = _split_outputs(unit)
    plain = [k for k in ports if k not in fed]
    emit_plain, emit_fed = _emitter(io, plain), _emitter(io, fed)

    def output():
        if not part.running and not ctx.side_effect_free:
            # a committed evaluation before the solver started (no states to integrate)
            part.finish_initialization(ctx.t)
        part.sync(ctx.t, part.x, False)
        emit_plain(part.instance.get_outputs())

    def algebraic():
        part.sync(ctx.t, part.x, True)
        emit_fed(part.instance.get_outputs())

    def update():
        part.completed_step(ctx.t)

    return Phases(init=part.start, output=output, algebraic=algebraic if fed else None,
                  update=update if unit.needs_completed_step else None, finalize=part.free, part=part,
                  feedthrough=frozenset().union(*unit.feeds))
