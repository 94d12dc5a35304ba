"""The nflow-2 library manifests: block metadata (ports, pins, defaults, param kinds).

One ``libraries/<lib>/library.json`` per nflow library. Besides nflow's own keys a
block entry may carry four product extensions:

* ``paramTypes``: ``{name: kind | {kind, minimum, exclusiveMinimum, enum, ...}}`` where
  the kind cannot be read off the default (a scalar default that also takes a vector),
  or where a value range is checked;
* ``paramAliases``: ``{alias: name}``, older inspector names nflow pages still show;
* ``openParams``: true when names beyond ``defaultParams`` are the block's own (an FMU's
  variables): they are kept as given, and the handler checks them;
* ``outputUnits``: one unit per output port (``"m/s"``; ``""`` for none), where an output
  has a physical unit (a sensor's): results name their columns' units with it.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

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


@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: str
    default: object
    minimum: float | None = None
    exclusive_minimum: float | None = None
    enum: tuple | None = None


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
            enum=tuple(extra["enum"]) if "enum" in extra else None)
    return specs


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

