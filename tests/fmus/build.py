"""Build the test FMUs: the small C models of this folder, compiled with the system C
compiler against the FMI headers FMPy ships (``fmpy/c-code``), zipped with a
modelDescription.xml generated from the tables below. One binary serves Model Exchange
and Co-Simulation (``fmi2_frame.c`` / ``fmi3_frame.c`` around the model file).

The C compiler is ``$CC``, else ``cc``, else ``gcc``; the tests need one (``make test``
checks for it first)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

import fmpy

HERE = Path(__file__).parent
HEADERS = Path(fmpy.__file__).parent / "c-code"


@dataclass(frozen=True)
class Var:
    name: str
    causality: str = "local"
    start: float | None = None
    integer: bool = False
    variability: str = "continuous"
    depends: tuple = ()          # an output's dependencies (names of inputs / states)
    unit: str | None = None      # a real's unit (declared in UnitDefinitions)


@dataclass(frozen=True)
class Model:
    identifier: str
    source: str
    states: tuple                # Var: the continuous states (value references 0..NX-1)
    others: tuple                # Var: the other variables (reals first, then integers)
    indicator: str | None = None  # the real variable holding the event indicator (FMI 3.0 needs one)
    interfaces: tuple = ("ModelExchange", "CoSimulation")
    completed_step: bool = False  # declares that it needs completedIntegratorStep
    experiment: tuple | None = None  # DefaultExperiment (startTime, stopTime, tolerance, stepSize)


def parameter(name, start, integer=False):
    return Var(name, "parameter", start, integer, "fixed")


MODELS = {m.identifier: m for m in (
    Model("VanDerPol", "vanderpol.c",
          states=(Var("x0", "output", 2.0, depends=("x0",)), Var("x1", "output", 0.0, depends=("x1",))),
          others=(parameter("mu", 1.0), Var("crossings", "output", 0, True, "discrete")), completed_step=True),
    Model("BouncingBall", "bouncingball.c",
          states=(Var("h", "output", 1.0, depends=("h",), unit="m"), Var("v", "output", 0.0, depends=("v",),
                                                                             unit="m/s")),
          others=(parameter("g", 9.81), parameter("e", 0.7), Var("z"),
                  Var("bounces", "output", 0, True, "discrete")),
          indicator="z", interfaces=("ModelExchange",), experiment=(0.0, 3.0, 1e-6, 0.01)),
    Model("Stairs", "stairs.c",
          states=(Var("x", "output", 0.0, depends=("x",)),),
          others=(parameter("period", 0.25), Var("n", "output", 0, True, "discrete")),
          interfaces=("ModelExchange",)),
    Model("Counter", "counter.c", states=(Var("x", "output", 0.0, depends=("x",)),),
          others=(parameter("period", 1.0), Var("n", "output", 1, True, "discrete")),
          interfaces=("ModelExchange",), completed_step=True),
    Model("Lag", "lag.c",
          states=(Var("x", "local", 0.0),),
          others=(Var("u", "input", 0.0), Var("y", "output", depends=("x",)), Var("ku", "output", depends=("u",)),
                  parameter("k", 1.0), parameter("T", 0.5), parameter("nsub", 10, integer=True))),
)}


def compiler() -> str:
    for name in (os.environ.get("CC"), "cc", "gcc"):
        if name and shutil.which(name):
            return shutil.which(name)
    raise RuntimeError("the FMU tests need a C compiler: set CC, or install gcc (apt-get install gcc)")


def layout(model: Model):
    """(variables in value-reference order as (vr, Var, role), NR, NI): the states, their
    derivatives, the other reals, then the integers."""
    reals = [(v, "state") for v in model.states] + [(Var(f"der({v.name})"), "derivative") for v in model.states]
    reals += [(v, "") for v in model.others if not v.integer]
    integers = [(v, "") for v in model.others if v.integer]
    rows = [(vr, v, role) for vr, (v, role) in enumerate(reals + integers)]
    return rows, len(reals), len(integers)


def guid(model: Model, version: int) -> str:
    return f"{{nflow-compat-test-{model.identifier}-fmi{version}}}"


def vars_header(model: Model, version: int) -> str:
    rows, nr, ni = layout(model)
    names = [f"VR_{v.name} = {vr}" for vr, v, role in rows if role != "derivative"]
    r_start = [float(v.start or 0.0) for vr, v, _ in rows if vr < nr]
    i_start = [int(v.start or 0) for vr, v, _ in rows if vr >= nr] + [0]
    return "\n".join([
        f"#define NR {nr}", f"#define NI {ni}", f"#define NX {len(model.states)}",
        f"#define NZ {1 if model.indicator else 0}", f"#define GUID \"{guid(model, version)}\"",
        "enum { " + ", ".join(names) + " };",
        "static const double R_START[NR] = {" + ", ".join(repr(x) for x in r_start) + "};",
        "static const int I_START[NI + 1] = {" + ", ".join(str(x) for x in i_start) + "};", ""])


def _start_and_initial(v: Var, role: str) -> tuple:
    """(initial attribute or None, start or None) as FMI allows them for the causality."""
    if role == "derivative" or (v.causality in ("local", "output") and role != "state" and v.start is None):
        return "calculated", None
    if v.causality == "input":
        return None, v.start
    return "exact", v.start


def model_description(model: Model, version: int) -> str:
    rows, nr, _ = layout(model)
    index = {v.name: vr for vr, v, _ in rows}    # FMI 2.0 indices are vr + 1 (declaration order)
    nx = len(model.states)
    lines = []
    for vr, v, role in rows:
        initial, start = _start_and_initial(v, role)
        attrs = f'name={quoteattr(v.name)} valueReference="{vr}" causality="{v.causality}" ' \
                f'variability="{v.variability}"' + (f' initial="{initial}"' if initial else "")
        typed = ""
        if role == "derivative":
            typed = f' derivative="{vr - nx + (1 if version == 2 else 0)}"'
        if start is not None:
            typed += f' start="{start!r}"'
        if v.unit and not v.integer:
            typed += f" unit={quoteattr(v.unit)}"
        if version == 2:
            kind = "Integer" if v.integer else "Real"
            lines.append(f"    <ScalarVariable {attrs}><{kind}{typed}/></ScalarVariable>")
        else:
            kind = "Int32" if v.integer else "Float64"
            lines.append(f"    <{kind} {attrs}{typed}/>")
    units = sorted({v.unit for _, v, _ in rows if v.unit})
    declared = ((["  <UnitDefinitions>"] + [f"    <Unit name={quoteattr(u)}/>" for u in units] + ["  </UnitDefinitions>"])
                if units else [])
    if model.experiment is not None:
        declared.append('  <DefaultExperiment startTime="{!r}" stopTime="{!r}" tolerance="{!r}" stepSize="{!r}"/>'
                        .format(*model.experiment))
    outputs = [(vr, v) for vr, v, _ in rows if v.causality == "output"]
    derivatives = [vr for vr, _, role in rows if role == "derivative"]
    calculated = [vr for vr, v, role in rows if _start_and_initial(v, role)[0] == "calculated"
                  and (role == "derivative" or v.causality == "output")]
    if version == 2:
        def deps(v):
            return " ".join(str(index[name] + 1) for name in v.depends)
        def section(tag, unknowns):   # FMI 2.0 allows no empty section
            return [f"  <{tag}>"] + unknowns + [f"  </{tag}>"] if unknowns else []
        structure = (section("Outputs", [f'    <Unknown index="{vr + 1}" dependencies="{deps(v)}"/>'
                                         for vr, v in outputs])
                     + section("Derivatives", [f'    <Unknown index="{vr + 1}"/>' for vr in derivatives])
                     + section("InitialUnknowns", [f'    <Unknown index="{vr + 1}"/>' for vr in calculated]))
        not_needed = "false" if model.completed_step else "true"
        interfaces = [f'  <ModelExchange modelIdentifier="{model.identifier}" '
                      f'completedIntegratorStepNotNeeded="{not_needed}"/>' if kind == "ModelExchange" else
                      f'  <CoSimulation modelIdentifier="{model.identifier}" canHandleVariableCommunicationStepSize="true"/>'
                      for kind in model.interfaces]
        head = (f'<fmiModelDescription fmiVersion="2.0" modelName="{model.identifier}" guid="{guid(model, 2)}" '
                f'numberOfEventIndicators="{1 if model.indicator else 0}" generationTool="nflow-compat tests">')
        body = interfaces + declared + ["  <ModelVariables>"] + lines + ["  </ModelVariables>", "  <ModelStructure>"] \
            + ["  " + s for s in structure] + ["  </ModelStructure>"]
    else:
        def deps(v):
            return " ".join(str(index[name]) for name in v.depends)
        structure = ([f'    <Output valueReference="{vr}" dependencies="{deps(v)}"/>' for vr, v in outputs]
                     + [f'    <ContinuousStateDerivative valueReference="{vr}"/>' for vr in derivatives]
                     + [f'    <InitialUnknown valueReference="{vr}"/>' for vr in calculated]
                     + ([f'    <EventIndicator valueReference="{index[model.indicator]}"/>'] if model.indicator else []))
        extra = {"CoSimulation": ' canHandleVariableCommunicationStepSize="true"',
                 "ModelExchange": ' needsCompletedIntegratorStep="true"' if model.completed_step else ""}
        interfaces = [f'  <{kind} modelIdentifier="{model.identifier}"{extra[kind]}/>' for kind in model.interfaces]
        head = (f'<fmiModelDescription fmiVersion="3.0" modelName="{model.identifier}" '
                f'instantiationToken="{guid(model, 3)}" generationTool="nflow-compat tests">')
        # FMI 3.0 requires the independent variable; it has a reference no model function reads
        lines.insert(0, f'    <Float64 name="time" valueReference="{len(rows)}" causality="independent" '
                        'variability="continuous"/>')
        body = interfaces + declared + ["  <ModelVariables>"] + lines + ["  </ModelVariables>", "  <ModelStructure>"] \
            + structure + ["  </ModelStructure>"]
    return "\n".join(['<?xml version="1.0" encoding="UTF-8"?>', head] + body + ["</fmiModelDescription>", ""])


_STUB = re.compile(r"typedef\s+(fmi[23]Status)\s+(fmi[23]\w+?)TYPE\s*\(", re.S)
_DEFINED = re.compile(r"^\w[\w\s\*]*?\b(fmi[23]\w+)\s*\(", re.M)


def stubs(version: int, frame: str) -> str:
    """C definitions answering Error for every status function of the FMI headers that the
    frame does not define. They are compiled apart from the headers (no prototypes): the
    calling convention returns the status whatever the arguments."""
    types = (HEADERS / f"fmi{version}FunctionTypes.h").read_text()
    defined = set(_DEFINED.findall(frame))
    missing = sorted({name for _, name in _STUB.findall(types)} - defined)
    error = 3   # fmi2Error and fmi3Error
    return "\n".join(f"__attribute__((visibility(\"default\"))) int {name}() {{ return {error}; }}"
                     for name in missing) + "\n"


def build(identifier: str, version: int, out_dir: Path) -> Path:
    """``<out_dir>/<identifier>-fmi<version>.fmu``, compiled and zipped."""
    model = MODELS[identifier]
    work = out_dir / f"{identifier}-fmi{version}"
    work.mkdir(parents=True, exist_ok=True)
    frame = (HERE / f"fmi{version}_frame.c").read_text()
    (work / "vars.h").write_text(vars_header(model, version))
    (work / "stubs.c").write_text(stubs(version, frame))
    platform = fmpy.platform if version == 2 else fmpy.platform_tuple
    library = work / "binaries" / platform / f"{identifier}{fmpy.sharedLibraryExtension}"
    library.parent.mkdir(parents=True, exist_ok=True)
    command = [compiler(), "-shared", "-fPIC", "-O1", "-o", str(library), f"-I{work}", f"-I{HERE}", f"-I{HEADERS}",
               f'-DMODEL_FILE="{model.source}"', str(HERE / f"fmi{version}_frame.c"), str(work / "stubs.c"), "-lm"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building {identifier} (FMI {version}) failed:\n{done.stderr}")
    fmu = out_dir / f"{identifier}-fmi{version}.fmu"
    with zipfile.ZipFile(fmu, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("modelDescription.xml", model_description(model, version))
        archive.write(library, f"binaries/{platform}/{library.name}")
    return fmu
