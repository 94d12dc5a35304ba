"""The nflow-2 library manifests: block metadata (ports, pins, defaults, param kinds).

One ``libraries/<lib>/library.json`` per nflow library. Besides nflow's own keys a
block entry may carry five product extensions:

* ``paramTypes``: ``{name: kind | {kind, minimum, exclusiveMinimum, enum, reason, ...}}``
  where the kind cannot be read off the default (a scalar default that also takes a
  vector), or where a value range is checked (``reason``: why, added to the error);
* ``paramAliases``: ``{alias: name}``, older inspector names nflow pages still show;
* ``openParams``: true when names beyond ``defaultParams`` are the block's own (an FMU's
  variables): they are kept as given, and the handler checks them;
* ``paramInfo``: ``{name: {"unit", "range", "meaning"}}``, right after ``defaultParams``, for
  every parameter of the block (the block reference, ``nflow_compat.docs``, prints them):

  - ``unit``: a key of ``UNITS``, in Modelica's unit syntax (``"N.m/rad"``, ``"m/s2"``,
    ``"Ohm"``); ``""`` for a dimensionless number (and for a param that is no quantity: a
    name, a mode); ``"[u]"``, ``"[y]"`` and their combinations for one that takes the unit
    of the signal the block is wired to; a list gives one unit per column of a table;
  - ``range`` (optional): the values the block is meant for, as nflow's and MSL's pages
    and the handler state them; absent when any value of the kind goes. It starts with a
    bound, ``"> 0"``, ``">= 0"``, ``"<= 1"``, ``"[0, 1]"``, ``"(0, 100]"``, or a choice,
    ``"one of 'a', 'b'"``, and may go on after ``"; "`` in words (``">= 1; whole"``), or is
    words only (``"strictly increasing"``). Where ``paramTypes`` checks a bound or a choice the range states
    exactly that one (tests check it); a range the schema does not check is documentation,
    unless it ends in ``"; checked when compiled"`` (``COMPILE_CHECKED``): the handler
    refuses a value outside it when the plan is compiled (tests check that too);
  - ``meaning``: what the parameter does, in one short line;
* ``outputUnits``: one unit per output port (``"m/s"``; ``""`` for none), where an output
  has a physical unit (a sensor's): results name their columns' units with it (keys of ``UNITS`` too).
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import orjson

LIBRARY_DIR = Path(__file__).parent / "libraries"

# Param kinds. "number": one real; "numeric": a real or a vector of reals;
# "vector": a list of reals; "matrix": a list of rows; "string"; "boolean";
# "strings": a list of strings; "any": passed through (structured params); "diagram": a
# nested diagram {blocks, connections} (a subsystem's body; the flattener reads it).
KINDS = ("number", "numeric", "vector", "matrix", "string", "boolean", "strings", "any", "diagram")

_NUMERIC_WORDS = {"inf", "+inf", "-inf", "nan", "Inf", "-Inf", "NaN"}


def numeric_string(text: str) -> bool:
    if text.strip() in _NUMERIC_WORDS:
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def infer_kind(default) -> str:
    if isinstance(default, bool):
        return "boolean"
    if isinstance(default, (int, float)):
        return "number"
    if isinstance(default, str):
        return "number" if numeric_string(default) else "string"
    if isinstance(default, list):
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in default):
            return "vector"
        if all(isinstance(x, list) for x in default):
            return "matrix"
        if all(isinstance(x, str) for x in default):
            return "strings"
    return "any"


# The units a ``paramInfo`` entry may give (Modelica's unit syntax: "." multiplies, a digit
# after a symbol is its power), with what each is. The bracketed ones follow the signals the
# block is wired to: "[u]" the unit of its input, "[y]" of its output.
UNITS = {
    "": "dimensionless (1), or no quantity (–): a name, a mode, a flag",
    "%": "percent", "s": "second", "ms": "millisecond", "Hz": "hertz", "1/s": "per second",
    "rad": "radian", "deg": "degree (angle)", "rad/s": "radian per second",
    "rad/s2": "radian per second squared", "px": "pixel (editor and dashboard display)",
    "V": "volt", "A": "ampere", "V/s": "volt per second", "A/s": "ampere per second", "Ohm": "ohm",
    "S": "siemens", "F": "farad", "H": "henry", "C": "coulomb", "Wb": "weber",
    "A/V2": "ampere per volt squared (MOSFET transconductance)",
    "K": "kelvin", "W": "watt", "J/K": "joule per kelvin", "W/K": "watt per kelvin",
    "K/W": "kelvin per watt", "W/K4": "watt per kelvin to the fourth (radiation)",
    "m": "metre", "m/s": "metre per second", "m/s2": "metre per second squared", "s/m": "second per metre",
    "kg": "kilogram", "kg.m2": "kilogram metre squared", "N": "newton", "N/m": "newton per metre",
    "N.s/m": "newton second per metre", "N.s2/m2": "newton second squared per metre squared",
    "N/A": "newton per ampere", "N/s": "newton per second", "N.m": "newton metre",
    "N.m/s": "newton metre per second", "N.m/rad": "newton metre per radian",
    "N.m.s/rad": "newton metre second per radian",
    "N.m.s2/rad2": "newton metre second squared per radian squared", "N.m/A": "newton metre per ampere",
    "[u]": "the unit of the input signal (of a block with several, the one the meaning names)",
    "[y]": "the unit of the output signal", "[p]": "the unit of the parameter a dashboard control writes",
    "[y]/[u]": "output unit per input unit", "[y]/([u].s)": "output unit per input unit and second",
    "[y].s/[u]": "output unit second per input unit", "[u]/s": "input unit per second",
    "[y]/s": "output unit per second", "[u].s": "input unit second (an integral of the input)",
    "[y].s": "output unit second (an area under the output)",
    "mixed": "one unit per element, set by the signals (see the meaning)",
}

COMPILE_CHECKED = "; checked when compiled"

_NUMBER = r"-?(?:\d+(?:\.\d*)?(?:e[-+]?\d+)?|inf)"
_END = r"(?:$|; )"
_BOUND = re.compile(rf"(>=|<=|>|<) ({_NUMBER}){_END}")
_INTERVAL = re.compile(rf"([\[(])({_NUMBER}), ({_NUMBER})([\])]){_END}")
_CHOICE = re.compile(rf"one of ('[^']*'(?:, '[^']*')*){_END}")


class Range(NamedTuple):
    """What a ``paramInfo`` range states: bounds (None: none) and choices (None: any)."""
    lower: float | None = None
    lower_strict: bool = False
    upper: float | None = None
    upper_strict: bool = False
    choices: tuple | None = None


def parse_range(text: str) -> Range:
    """The bounds or choices a range text starts with (see the module docstring); words
    only state none."""
    if m := _BOUND.match(text):
        rel, value = m.group(1), float(m.group(2))
        if rel[0] == ">":
            return Range(lower=value, lower_strict=rel == ">")
        return Range(upper=value, upper_strict=rel == "<")
    if m := _INTERVAL.match(text):
        lo, hi = float(m.group(2)), float(m.group(3))
        lower, upper = (lo if lo > -math.inf else None), (hi if hi < math.inf else None)
        return Range(lower, lower is not None and m.group(1) == "(", upper, upper is not None and m.group(4) == ")")
    if m := _CHOICE.match(text):
        return Range(choices=tuple(re.findall(r"'([^']*)'", m.group(1))))
    return Range()


@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: str
    default: object
    minimum: float | None = None
    exclusive_minimum: float | None = None
    enum: tuple | None = None
    reason: str | None = None      # why the range is what it is (said in a param_range error)
    # paramInfo (documentation; None / "" where the manifest gives none)
    unit: str | tuple | None = None
    range: str = ""
    meaning: str = ""


@dataclass(frozen=True)
class BlockType:
    type: str
    library: str          # folder name, e.g. "nonlinear"
    label: str
    phases: tuple
    inputs: int
    outputs: int
    input_names: tuple
    output_names: tuple
    params: dict          # name -> ParamSpec
    aliases: dict         # alias -> name
    help: str
    acausal: bool = False
    domain: str | None = None
    pins: dict = field(default_factory=dict)  # pin name -> domain
    open_params: bool = False   # params beyond ``params`` are kept as given (the handler checks them)
    output_units: tuple = ()    # per output port, its unit ("" for none); shorter than the ports when not given

    def output_unit(self, port: int) -> str:
        """The unit of output ``port`` ("" when the manifest gives none)."""
        return self.output_units[port] if port < len(self.output_units) else ""

    @property
    def defaults(self) -> dict:
        return {name: spec.default for name, spec in self.params.items()}


def _param_specs(entry: dict) -> dict:
    overrides = entry.get("paramTypes", {})
    info = entry.get("paramInfo", {})
    specs = {}
    names = list(entry.get("defaultParams", {})) + [n for n in overrides if n not in entry.get("defaultParams", {})]
    for name in names:
        default = entry.get("defaultParams", {}).get(name)
        extra = overrides.get(name, {})
        if isinstance(extra, str):
            extra = {"kind": extra}
        kind = extra.get("kind") or infer_kind(default)
        specs[name] = ParamSpec(
            name=name, kind=kind, default=default,
            minimum=extra.get("minimum"), exclusive_minimum=extra.get("exclusiveMinimum"),
            enum=tuple(extra["enum"]) if "enum" in extra else None, reason=extra.get("reason"),
            **_documented(info.get(name)))
    return specs


def _documented(info: dict | None) -> dict:
    if info is None:
        return {}
    unit = info["unit"]
    return {"unit": tuple(unit) if isinstance(unit, list) else unit, "range": info.get("range", ""),
            "meaning": info["meaning"]}


def _block_type(library: str, entry: dict) -> BlockType:
    return BlockType(
        type=entry["type"], library=library, label=entry.get("label", entry["type"]),
        phases=tuple(entry.get("phases", ())),
        inputs=len(entry.get("inputs", [])), outputs=len(entry.get("outputs", [])),
        input_names=tuple(p.get("name", "") for p in entry.get("inputs", [])),
        output_names=tuple(p.get("name", "") for p in entry.get("outputs", [])),
        params=_param_specs(entry), aliases=dict(entry.get("paramAliases", {})),
        help=entry.get("help", ""), acausal=bool(entry.get("acausal")),
        domain=entry.get("domain"),
        pins={p["name"]: p.get("domain", entry.get("domain")) for p in entry.get("physicalPins", [])},
        open_params=bool(entry.get("openParams")), output_units=tuple(entry.get("outputUnits", ())))


@functools.lru_cache(maxsize=1)
def libraries() -> dict:
    """folder name -> raw manifest dict, in a stable order."""
    return {d.name: orjson.loads((d / "library.json").read_bytes())
            for d in sorted(LIBRARY_DIR.iterdir()) if (d / "library.json").is_file()}


@functools.lru_cache(maxsize=1)
def block_types() -> dict:
    """type name -> BlockType, over every library."""
    out = {}
    for folder, manifest in libraries().items():
        for entry in manifest["blocks"]:
            out[entry["type"]] = _block_type(folder, entry)
    return out

