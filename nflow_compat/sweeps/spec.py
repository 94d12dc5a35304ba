"""The sweep specification: JSON (or the same Python dict) -> a checked ``Spec``.

::

    {"diagram": <diagram object, or a path to its JSON file>,
     "parameters": {"mass.F_Coulomb": [1, 2, 3],                      # block id . param
                    "/blocks/0/params/Amplitude": {"linspace": [10, 30, 5]},   # JSON pointer
                    "variables.k": {"uniform": [0.5, 2], "samples": 20, "seed": 7},
                    "spring.c": {"lhs": [10, 50]}, "damper.d": {"lhs": [0.1, 1]}},  # one joint design
     "combine": "grid",                                  # or "zip"
     "samples": 100, "seed": 0,                          # defaults for random draws and designs
     "outputs": {"v": ["final", "max", "first_rising(0)", "trace"]},
     "events": ["count", "mode", "event_time(mass, forward)"],   # events.count, events.mode, ...
     "batch_size": 25}                                   # runs per Dask task (default: automatic)

A spec built in Python may hold numpy arrays and scalars wherever JSON values go
(``"spring.c": np.linspace(5, 50, 1000)``): they are read as the JSON values they stand for.

The shape is checked against ``sweep_schema()`` (JSON Schema draft 2020-12), the meaning
against the diagram (blocks, params, variables and workspace variables that exist,
pointers that lead somewhere); every problem is a ``DiagramError`` whose ``path`` points
into the spec (a problem of an inline diagram: under ``/diagram``; of a diagram file: in
that file, named by ``file``).
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from .. import api
from ..diagram import Diagram, Limits
from ..errors import DiagramError, NFlowError, did_you_mean, pointer
from ..params import address, json_copy
from . import expand, reductions
from .schema import sweep_schema

EVENTS = "events."                                     # event counts: columns "events.<kind>"
_RECORDER = "toWorkspace"                              # the block type whose VariableName outputs name


_VALIDATOR = Draft202012Validator(sweep_schema())
# jsonschema keyword -> our error code
_SCHEMA_CODES = {"type": "spec_type", "required": "spec_missing", "additionalProperties": "spec_unknown_key",
                 "minItems": "spec_length", "minProperties": "spec_empty", "maxItems": "spec_length",
                 "enum": "spec_value", "minimum": "spec_value", "maximum": "spec_value",
                 "minLength": "spec_empty", "uniqueItems": "spec_duplicate", "pattern": "bad_output"}
_KNOWN_KEYS = {"": tuple(sweep_schema()["properties"]), "values": expand.KINDS + ("samples", "seed")}


@dataclass(frozen=True)
class Parameter:
    name: str                  # as the spec writes it; also its column
    pointer: str               # where its value goes in the diagram
    block: tuple | None        # (block index, param name) for a top-level block's parameter
    values: list


@dataclass(frozen=True)
class Output:
    variable: str
    reductions: tuple          # of reductions.Reduction
    trace: bool

    @property
    def columns(self) -> list:
        """(column name, reduction) per reduction: "<variable>.<reduction>"."""
        return [(f"{self.variable}.{r.text}", r) for r in self.reductions]


def event_column(kind: str) -> str:
    return EVENTS + kind


@dataclass(frozen=True)
class Spec:
    diagram: bytes             # the diagram's JSON
    base_dir: str | None       # the directory file blocks may use (None: no file access)
    parameters: tuple
    runs: list                 # per run, its values (one per parameter)
    outputs: tuple
    events: tuple              # of reductions.EventReduction
    batch_size: int | None
    fingerprint: str           # of what decides the runs and their columns
    structure: str             # of the diagram and where the values go (workers cache by it)

    @property
    def traces(self) -> tuple:
        return tuple(o.variable for o in self.outputs if o.trace)


def _schema_error(doc) -> DiagramError | None:
    err = best_match(_VALIDATOR.iter_errors(doc))
    if err is None:
        return None
    path = pointer(*err.absolute_path)
    code = _SCHEMA_CODES.get(err.validator, "spec_value")
    message = err.message
    if err.validator == "additionalProperties":
        known = _KNOWN_KEYS["" if not err.absolute_path else "values"]
        extra = sorted(set(err.instance) - set(known))
        path = pointer(*err.absolute_path, extra[0])
        message = f"unknown key {extra[0]!r} (known: {', '.join(known)})" + did_you_mean(extra[0], known)
    elif err.validator == "pattern" and err.absolute_path[0] == "events":
        code = "bad_event"
        message = (f"{err.instance!r} is not an event reduction: 'count', an event kind (mode, stop, ...), "
                   "event_time(block, to), event_time(block, to, n) or event_count(block, to)")
    elif err.validator == "pattern":
        message = (f"{err.instance!r} is not an output: 'trace', final, min, max, mean, rms, or "
                   "first_crossing(L), first_rising(L), first_falling(L), crossings(L) with a number L")
    return DiagramError(code, message, path=path)


def _diagram(doc, spec_dir: Path | None, limits: Limits):
    """(decoded diagram, its file or None)."""
    given = doc["diagram"]
    if isinstance(given, dict):
        return given, None
    path = Path(given) if spec_dir is None else spec_dir / given
    try:
        if path.stat().st_size > limits.max_input_bytes:
            raise DiagramError("input_too_large", f"diagram file {given!r} has more than {limits.max_input_bytes} "
                               "bytes", path="/diagram")
        text = path.read_bytes()
    except OSError as exc:
        raise DiagramError("unreadable_input", f"cannot read diagram file {given!r}: {exc.strerror}",
                           path="/diagram") from None
    try:
        return api.load_json(text, limits=limits), path
    except NFlowError as err:
        raise _located(err, None, path) from None


def _located(err: NFlowError, prefix: str | None, file: Path | None) -> NFlowError:
    """``err`` (about the diagram) pointing into the spec (``prefix``) or naming ``file``."""
    extra = dict(err.extra, **({"file": str(file)} if file is not None else {}))
    path = err.path if prefix is None else prefix + (err.path or "")
    return type(err)(err.code, err.message, path=path, block=err.block, param=err.param, **extra)


def _outputs(doc, diagram: Diagram) -> tuple:
    recorded = [b.params.get("VariableName") for b in diagram.blocks if b.type.type == _RECORDER]
    out = []
    for variable, entries in doc.get("outputs", {}).items():
        if variable not in recorded:
            raise DiagramError("unknown_output", f"no toWorkspace block records {variable!r} (recorded: "
                               f"{', '.join(map(repr, recorded)) or 'none'})" + did_you_mean(variable, recorded),
                               path=pointer("outputs", variable))
        out.append(Output(variable, tuple(reductions.parse(e) for e in entries if e != reductions.TRACE),
                          reductions.TRACE in entries))
    return tuple(out)


def _events(doc, diagram: Diagram) -> tuple:
    """The spec's event reductions, their blocks checked against the diagram."""
    blocks = [b.id for b in diagram.blocks]
    out = []
    for k, text in enumerate(doc.get("events", ())):
        r = reductions.parse_event(text)
        where = pointer("events", k)
        if r.block is not None and r.block not in blocks:
            raise DiagramError("unknown_block", f"{text!r}: the diagram has no block {r.block!r}"
                               + did_you_mean(r.block, blocks), path=where)
        if r.n == 0:
            raise DiagramError("spec_value", f"{text!r}: n counts from 1 (the first event; -1 the last)", path=where)
        out.append(r)
    return tuple(out)


def _plain(doc):
    """``doc`` with numpy arrays and scalars as the JSON values they stand for."""
    try:
        return orjson.loads(orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS))
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise DiagramError("spec_type", f"the spec is not JSON data (numbers, strings, lists, dicts and numpy "
                           f"values): {exc}", path="") from None


def load(spec, *, limits: Limits | None = None, base_dir=None) -> Spec:
    """Check and expand ``spec``: a dict, or the path of a JSON file holding one (a
    diagram path in it is relative to that file). ``base_dir``: the directory file
    blocks may use; default the diagram file's directory, else the spec file's, else none
    (no file access, as for ``simulate``)."""
    limits = limits or Limits()
    spec_dir = None
    if isinstance(spec, (str, os.PathLike)):
        spec_path = Path(spec)
        try:
            text = spec_path.read_bytes()
        except OSError as exc:
            raise DiagramError("unreadable_input", f"cannot read {spec}: {exc.strerror}") from None
        spec, spec_dir = api.load_json(text, limits=limits), spec_path.resolve().parent
    else:
        spec = _plain(spec)
    problem = _schema_error(spec)
    if problem is not None:
        raise problem
    given, file = _diagram(spec, spec_dir, limits)
    try:   # our own copy (parameters may get an empty 'params' object), plain JSON values only
        raw = json_copy(given)
    except DiagramError as err:
        raise _located(err, "/diagram", None) from None
    try:
        diagram = api.validate(raw, limits=limits)
    except NFlowError as err:
        raise _located(err, None if file else "/diagram", file) from None
    if base_dir is None and (file or spec_dir) is not None:
        base_dir = str(file.resolve().parent if file is not None else spec_dir)
    names, entries, targets, columns = list(spec["parameters"]), list(spec["parameters"].values()), [], []
    for position, (name, entry) in enumerate(zip(names, entries)):
        where = pointer("parameters", name)
        targets.append(address(name, diagram, raw, where))
        columns.append(expand.column(entry, where=where, position=position, samples=spec.get("samples"),
                                     seed=spec.get("seed", 0)))
    columns = expand.designs(names, entries, columns)
    parameters = [Parameter(name, target.pointer, target.block, col.values)
                  for name, target, col in zip(names, targets, columns)]
    runs = expand.combine(names, columns, spec.get("combine", "grid"))
    outputs = _outputs(spec, diagram)
    events = _events(spec, diagram)
    diagram_json = orjson.dumps(raw, option=orjson.OPT_SORT_KEYS)
    pointers = "\0".join(p.pointer for p in parameters).encode()
    decided = orjson.dumps({"diagram": orjson.Fragment(diagram_json),
                            "parameters": [[p.name, p.pointer] for p in parameters], "runs": runs,
                            "outputs": spec.get("outputs", {}), "events": [e.text for e in events]},
                           option=orjson.OPT_SORT_KEYS)
    return Spec(diagram=diagram_json, base_dir=base_dir, parameters=tuple(parameters), runs=runs,
                outputs=outputs, events=events, batch_size=spec.get("batch_size"),
                fingerprint=hashlib.sha256(decided).hexdigest()[:16],
                structure=hashlib.sha256(diagram_json + b"\0" + pointers).hexdigest()[:16])
