"""JSON Schemas (draft 2020-12) generated from the library manifests.

The schemas describe what ``diagram.parse`` accepts, so an editor or a CI step can check a
diagram without running Python:

* ``diagram_schema()``: the whole diagram; every block's ``params`` are checked against the
  params schema of its ``type`` (``if``/``then`` on the type, grouped by library; no ``oneOf``,
  so an error names the one parameter that is wrong, not "matches none of 300 alternatives");
* ``params_schema_for(type)``: one block type's params.

Each parameter kind (see ``manifests.KINDS``) gets one schema that takes every JSON shape
normalization takes for it: a scalar as a bare number, a boolean, a string or a one-element
array (nested); vectors as a row, a column or any array with a singleton dimension; ``null``
wherever a real goes (jsonencode's NaN) unless a bound or an enum excludes NaN. A schema
cannot evaluate expressions, so a string is accepted wherever an expression is, as long as it
only uses characters the expression language has. What a schema cannot express is left to
``nflow_compat.validate``: ragged arrays, the shape an expression evaluates to, undefined
variables, unknown param names that are close to a known one (an error there, "did you mean";
other unknown names are ignored, so the schemas allow additional properties), two aliases of
one param with different values, duplicate block ids, connections naming missing blocks, ports
or pins.

``python -m nflow_compat.schema --write schemas`` regenerates the checked-in files
(``schemas/diagram.schema.json``, ``schemas/blocks/<type>.params.schema.json``, and
``schemas/sweep.schema.json``, the sweep spec's schema from ``sweeps.spec``);
``--check schemas`` exits 1 and lists the files that are stale.
"""
from __future__ import annotations

import argparse
import hashlib
import math
import sys
from pathlib import Path
from urllib.parse import quote

import orjson

from .diagram import SOLVERS
from .errors import DiagramError, did_you_mean, pointer
from .expr import MAX_LENGTH
from .manifests import BlockType, ParamSpec, block_types
from .normalize import MAX_PORTS
from .sweeps.spec import sweep_schema

DIALECT = "https://json-schema.org/draft/2020-12/schema"
DIAGRAM_FILE = "diagram.schema.json"
SWEEP_FILE = "sweep.schema.json"
BLOCKS_DIR = "blocks"

# Characters the expression tokenizer (expr._TOKEN) can read; anything else fails to evaluate.
# Written so that both Python ``re`` and ECMA-262 read it the same way, and so that it runs
# in linear time (a leading run of blanks, one non-blank, then anything allowed).
_EXPR_CHARS = r"\dA-Za-z_.+\-*/^(),;\[\]"
EXPRESSION_PATTERN = rf"^\s*[{_EXPR_CHARS}][\s{_EXPR_CHARS}]*$"
_STRING_KEYWORDS = {"pattern": EXPRESSION_PATTERN, "maxLength": MAX_LENGTH}

# Which constraints each kind's schema can carry; tests check no manifest asks for more.
_ENUM_KINDS = ("number", "string", "any")
_BOUND_KINDS = ("number", "numeric", "vector", "matrix")

_KIND_TEXT = {
    "number": "a number (also a boolean, a numeric string or expression, or a one-element array; null is NaN)",
    "numeric": "a number or a numeric array of any shape (numbers, expressions; null is NaN)",
    "vector": "a vector: a number, a row, a column or any array with one non-singleton dimension",
    "matrix": "a matrix: a number, a row, or an array of equal-length rows",
    "string": "a string (or a one-element array holding one)",
    "boolean": "a boolean: true/false, a number (nonzero is true), 'on'/'off', 'true'/'false', "
               "'yes'/'no', or an expression",
    "strings": "a string or an array of strings",
    "any": "any JSON value (passed to the block as given)",
}


# ----------------------------------------------------------------------------- kinds

def _satisfies(x: float, lo, lo_strict, enum) -> bool:
    if lo is not None and not x >= lo:
        return False
    if lo_strict is not None and not x > lo_strict:
        return False
    return enum is None or x in enum


def _number_enum(enum) -> list:
    return [v for v in enum if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _tag(value) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


class _Defs:
    """The ``$defs`` of one schema resource, filled on demand (only what is referenced)."""

    def __init__(self):
        self.defs: dict = {}

    def ref(self, name: str) -> dict:
        return {"$ref": "#/$defs/" + name}

    def _put(self, name: str, build) -> dict:
        if name not in self.defs:
            self.defs[name] = None  # reserve: builders may refer to themselves
            self.defs[name] = build()
        return self.ref(name)

    # -- scalars: a number, a boolean (0/1), an expression string

    def _scalar_keywords(self, lo, lo_strict, enum, integer=False, hi=None) -> tuple[list, dict]:
        types = ["integer" if integer else "number", "boolean", "string"]
        kw = dict(_STRING_KEYWORDS)
        if lo is not None:
            kw["minimum"] = lo
        if lo_strict is not None:
            kw["exclusiveMinimum"] = lo_strict
        if hi is not None:
            kw["maximum"] = hi
        if enum is not None:
            kw["if"] = {"type": "number"}
            kw["then"] = {"enum": _number_enum(enum)}
        ok = [b for b in (False, True) if _satisfies(float(b), lo, lo_strict, enum)
              and (hi is None or float(b) <= hi)]
        if not ok:
            types.remove("boolean")
        elif len(ok) == 1:
            kw["not"] = {"const": not ok[0]}
        if not integer and _satisfies(math.nan, lo, lo_strict, enum):
            types.append("null")   # jsonencode's NaN, which fails any bound
        return types, kw

    @staticmethod
    def _suffix(lo, lo_strict, enum) -> str:
        out = ""
        if lo is not None:
            out += "_ge_" + _tag(lo)
        if lo_strict is not None:
            out += "_gt_" + _tag(lo_strict)
        if enum is not None:
            out += "_in_" + hashlib.sha1(orjson.dumps(list(enum))).hexdigest()[:8]
        return out

    def number(self, lo=None, lo_strict=None, enum=None) -> dict:
        """One real: normalization unwraps one-element arrays at any depth."""
        name = "number" + self._suffix(lo, lo_strict, enum)

        def build():
            types, kw = self._scalar_keywords(lo, lo_strict, enum)
            return dict(kw, type=types + ["array"], minItems=1, maxItems=1, items=self.ref(name),
                        description=_KIND_TEXT["number"])
        return self._put(name, build)

    def whole(self, name: str, hi=None, description="") -> dict:
        """A non-negative whole number (port counts and indices), no variables."""
        def build():
            types, kw = self._scalar_keywords(0, None, None, integer=True, hi=hi)
            return dict(kw, type=types + ["array"], minItems=1, maxItems=1, items=self.ref(name),
                        description=description)
        return self._put(name, build)

    def boolean(self) -> dict:
        def build():
            types, kw = self._scalar_keywords(None, None, None)
            # inside an array the element is read as a number (so not as 'on'/'off')
            return dict(kw, type=types + ["array"], minItems=1, maxItems=1,
                        items=self.number(), description=_KIND_TEXT["boolean"])
        return self._put("boolean", build)

    # -- arrays of reals

    def _item(self, lo, lo_strict) -> dict:
        """An element of a numeric array: a scalar (null is NaN) or a nested array."""
        name = "numericItem" + self._suffix(lo, lo_strict, None)

        def build():
            types, kw = self._scalar_keywords(lo, lo_strict, None)
            return dict(kw, type=types + ["array"], items=self.ref(name), **self._not_mixed())
        return self._put(name, build)

    @staticmethod
    def _not_mixed() -> dict:
        """Numbers and arrays cannot be siblings (numpy rejects the ragged array)."""
        return {"if": {"type": "array", "contains": {"type": "array"}},
                "then": {"items": {"type": ["array", "string"]}}}

    def numeric(self, lo=None, lo_strict=None) -> dict:
        name = "numeric" + self._suffix(lo, lo_strict, None)

        def build():
            types, kw = self._scalar_keywords(lo, lo_strict, None)
            return dict(kw, type=types + ["array"], items=self._item(lo, lo_strict), **self._not_mixed(),
                        description=_KIND_TEXT["numeric"])
        return self._put(name, build)

    def _singleton_dimension(self) -> dict:
        """A (rectangular) nested array with a dimension of length 1, as in ``1 in shape``."""
        name = "singletonDimension"

        def build():
            return {"anyOf": [{"minItems": 1, "maxItems": 1},
                              {"minItems": 1, "items": dict(self.ref(name), type="array")}],
                    "description": "an array with a dimension of length 1 (a row [[...]] or a column "
                                   "[[a], [b], ...])"}
        return self._put(name, build)

    def vector(self, lo=None, lo_strict=None) -> dict:
        name = "vector" + self._suffix(lo, lo_strict, None)

        def build():
            types, kw = self._scalar_keywords(lo, lo_strict, None)
            return dict(kw, type=types + ["array"], items=self._item(lo, lo_strict),
                        description=_KIND_TEXT["vector"],
                        **{"if": {"type": "array", "contains": {"type": "array"}},
                           "then": dict(self._singleton_dimension(), items={"type": ["array", "string"]})})
        return self._put(name, build)

    def matrix(self, lo=None, lo_strict=None) -> dict:
        suffix = self._suffix(lo, lo_strict, None)
        name = "matrix" + suffix

        def build_cell():
            types, kw = self._scalar_keywords(lo, lo_strict, None)
            return dict(kw, type=types)

        def build_row():
            types, kw = self._scalar_keywords(lo, lo_strict, None)
            return dict(kw, type=types + ["array"], items=self._put("matrixCell" + suffix, build_cell))

        def build():
            types, kw = self._scalar_keywords(lo, lo_strict, None)
            return dict(kw, type=types + ["array"], items=self._put("matrixRow" + suffix, build_row),
                        description=_KIND_TEXT["matrix"], **self._not_mixed())
        return self._put(name, build)

    # -- strings

    def string(self, enum=None) -> dict:
        name = "string" + self._suffix(None, None, enum)

        def build():
            item = {"type": "string"} if enum is None else {"type": "string", "enum": list(enum)}
            out = {"type": ["string", "array"], "minItems": 1, "maxItems": 1, "items": item,
                   "description": _KIND_TEXT["string"]}
            if enum is not None:
                out["if"] = {"type": "string"}
                out["then"] = {"enum": list(enum)}
            return out
        return self._put(name, build)

    def strings(self) -> dict:
        return self._put("strings", lambda: {"type": ["string", "array"], "items": {"type": "string"},
                                             "description": _KIND_TEXT["strings"]})

    # -- one parameter

    def param(self, spec: ParamSpec) -> dict:
        kind = spec.kind
        enum = spec.enum if kind in _ENUM_KINDS else None
        lo, lo_strict = (spec.minimum, spec.exclusive_minimum) if kind in _BOUND_KINDS else (None, None)
        if kind == "number":
            return self.number(lo, lo_strict, enum)
        if kind in ("numeric", "vector", "matrix"):
            return getattr(self, kind)(lo, lo_strict)
        if kind == "string":
            return self.string(enum)
        if kind == "boolean":
            return self.boolean()
        if kind == "strings":
            return self.strings()
        return {"enum": list(enum)} if enum is not None else {}


def unsupported_constraints() -> list:
    """(type, param, constraint) the generated schemas cannot carry; should be empty."""
    out = []
    for name, bt in block_types().items():
        for spec in bt.params.values():
            if spec.enum is not None and spec.kind not in _ENUM_KINDS:
                out.append((name, spec.name, "enum"))
            if (spec.minimum is not None or spec.exclusive_minimum is not None) and spec.kind not in _BOUND_KINDS:
                out.append((name, spec.name, "minimum"))
    return out


def _describe(spec: ParamSpec) -> str:
    text = spec.kind
    if spec.minimum is not None:
        text += f", >= {spec.minimum:g}"
    if spec.exclusive_minimum is not None:
        text += f", > {spec.exclusive_minimum:g}"
    if spec.enum is not None:
        text += ", one of " + ", ".join(map(str, spec.enum))
    return text


def value_schema(spec: ParamSpec) -> dict:
    """A self-contained schema for one parameter's value (used by the tests)."""
    defs = _Defs()
    out = {"$schema": DIALECT, **defs.param(spec)}
    if defs.defs:
        out["$defs"] = defs.defs
    return out


# ----------------------------------------------------------------------------- blocks

def _params_schema(bt: BlockType, defs: _Defs) -> dict:
    """The params object of ``bt``; the kind schemas it refers to go into ``defs``."""
    props = {}
    for name, spec in bt.params.items():
        prop = dict(defs.param(spec), description=_describe(spec))
        if spec.default is not None:
            prop["default"] = spec.default
        props[name] = prop
    for alias, name in bt.aliases.items():
        if alias in props or name not in bt.params:
            continue
        props[alias] = dict(defs.param(bt.params[name]), description=f"older name of {name!r}")
    help_text = f"{bt.label} ({bt.library})" + (f": {bt.help}" if bt.help else "")
    return {
        "title": f"{bt.type} params",
        "description": help_text + (" Other names are passed to the block, which checks them." if bt.open_params
                                    else " Unknown names are ignored unless close to a known one."),
        "type": "object",
        "properties": props,
        "additionalProperties": True,
    }


def _params_file(type_name: str) -> str:
    return f"{type_name}.params.schema.json"


def params_schema_for(type_name: str) -> dict:
    """The params schema of one block type; DiagramError ``unknown_block_type`` otherwise."""
    types = block_types()
    if type_name not in types:
        raise DiagramError("unknown_block_type", f"unknown block type {type_name!r}"
                           + did_you_mean(type_name, types))
    defs = _Defs()
    out = {"$schema": DIALECT, "$id": _params_file(type_name), **_params_schema(types[type_name], defs)}
    if defs.defs:
        out["$defs"] = defs.defs
    return out


# ----------------------------------------------------------------------------- diagram

# What ``diagram.unset`` reads as a field nobody set: null, or jsonencode's [] (a struct
# array gives every element every field).
_UNSET = {"anyOf": [{"type": "null"}, {"type": "array", "maxItems": 0}]}


def _unless_unset(ref: dict) -> dict:
    """Unset means the default; anything else must match ``ref``."""
    return {"if": _UNSET, "else": ref}


def _one_or_many(item_ref: dict, what: str) -> dict:
    return {"type": ["array", "object", "null"], "items": item_ref,
            "if": {"type": "object", "minProperties": 1}, "then": item_ref,
            "description": f"an array of {what}; one may be given as a bare object, none as {{}} "
                           "(an empty struct())"}


def diagram_schema() -> dict:
    """The schema of a whole diagram, every block's params checked against its type."""
    types = block_types()
    defs = _Defs()
    positive = defs.number(lo_strict=0)
    count = defs.whole("portCount", hi=MAX_PORTS, description=f"a whole number from 0 to {MAX_PORTS}")
    index = defs.whole("portIndex", description="a 0-based port index")
    numeric = defs.numeric()

    # Every type's params schema lives in this one resource and refers to the kind schemas
    # by JSON pointer: a plain-pointer $ref is cheap to resolve, an embedded $id is not.
    # The if/then dispatch on "type" is grouped by library, so a block is tested against
    # ~17 library enums and then its library's types, not against every type.
    embedded = {}
    by_library: dict = {}
    for name, bt in types.items():
        embedded[name] = _params_schema(bt, defs)
        by_library.setdefault(bt.library, []).append(name)
    dispatch = []
    for library, names in by_library.items():
        inner = [{"if": {"properties": {"type": {"const": name}}},
                  "then": {"properties": {"params": {
                      "if": {"type": "object"},
                      "then": {"$ref": "#/$defs/blockParams/$defs/" + quote(pointer(name)[1:], safe="")}}}}}
                 for name in names]
        dispatch.append({"if": {"properties": {"type": {"enum": names}}, "required": ["type"]},
                         "then": {"allOf": inner}, "$comment": f"library {library}"})
    defs.defs["block"] = {
        "type": "object",
        "required": ["id", "type"],
        "properties": {
            "id": {"type": ["string", "number"], "minLength": 1, "description": "unique block id"},
            "type": {"type": "string", "enum": list(types), "description": "block type (a manifest entry)"},
            "inputs": dict(_unless_unset(count), description="number of input ports (default: the manifest's)"),
            "outputs": dict(_unless_unset(count), description="number of output ports (default: the manifest's)"),
            "params": {"type": ["object", "null", "array"], "maxItems": 0,
                       "description": "parameters, checked against the block type's params schema"},
        },
        "additionalProperties": True,
        "allOf": dispatch,
    }
    pin_unset = {"anyOf": [*_UNSET["anyOf"], {"const": ""}]}
    defs.defs["blockRef"] = {"type": ["string", "number"], "description": "the id of a block"}
    defs.defs["connection"] = {
        "type": "object",
        "required": ["from", "to"],
        "properties": {"from": defs.ref("blockRef"), "to": defs.ref("blockRef")},
        "additionalProperties": True,
        # physical when a pin is named (diagram.is_physical); a signal wire of a struct array
        # has them unset ([], "", null)
        "if": {"anyOf": [{"required": [key], "properties": {key: {"not": pin_unset}}} for key in ("fromPin", "toPin")]},
        "then": {"required": ["fromPin", "toPin"],
                 "properties": {"fromPin": {"type": "string", "minLength": 1, "description": "physical pin name"},
                                "toPin": {"type": "string", "minLength": 1, "description": "physical pin name"}}},
        "else": {"properties": {"fromIndex": dict(_unless_unset(index), description="output port (default 0)"),
                                "toIndex": dict(_unless_unset(index), description="input port (default 0)")}},
        "description": "a signal connection {from, fromIndex, to, toIndex} or a physical one "
                       "{from, fromPin, to, toPin}",
    }
    defs.defs["blockParams"] = {"$defs": embedded,
                                "description": "the params schema of every block type (also in blocks/)"}
    return {
        "$schema": DIALECT,
        "$id": DIAGRAM_FILE,
        "title": "nflow diagram",
        "description": "A diagram as Nelson's __nflow_simulate__ takes it (jsonencode output). Checks types "
                       "and shapes; nflow_compat.validate also checks references, ports and expressions.",
        "type": "object",
        "required": ["sampleTime", "duration"],
        "properties": {
            "blocks": _one_or_many(defs.ref("block"), "blocks"),
            "connections": _one_or_many(defs.ref("connection"), "connections"),
            "sampleTime": dict(positive, description="step of the result grid (s), > 0"),
            "duration": dict(positive, description="end time (s), > 0"),
            "solver": {"type": ["string", "array", "null"], "maxItems": 1, "items": {"enum": list(SOLVERS)},
                       "if": {"type": "string"}, "then": {"enum": list(SOLVERS)}, "default": "discrete",
                       "description": "a solver name (also a one-element array; null or [] is the default)"},
            "variables": {"type": ["object", "null", "array"], "maxItems": 0,
                          "propertyNames": {"pattern": r"^[^\W\d]\w*$"},
                          "additionalProperties": numeric,
                          "description": "name: numeric value (or expression over earlier variables)"},
            "relTol": dict(_unless_unset(positive), description="relative tolerance (default 1e-6)"),
            "absTol": dict(_unless_unset(positive), description="absolute tolerance (default 1e-8)"),
            "maxStep": dict(_unless_unset(positive), description="largest internal step (default: none)"),
        },
        "additionalProperties": True,
        "$defs": defs.defs,
    }


# ----------------------------------------------------------------------------- files

def _dump(doc: dict) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def generate() -> dict:
    """Relative path (posix) -> file content, for every checked-in schema file."""
    files = {DIAGRAM_FILE: _dump(diagram_schema()), SWEEP_FILE: _dump(sweep_schema())}
    for name in block_types():
        files[f"{BLOCKS_DIR}/{_params_file(name)}"] = _dump(params_schema_for(name))
    return files


def _on_disk(root: Path) -> set:
    found = set()
    found |= {name for name in (DIAGRAM_FILE, SWEEP_FILE) if (root / name).is_file()}
    if (root / BLOCKS_DIR).is_dir():
        found |= {f"{BLOCKS_DIR}/{p.name}" for p in (root / BLOCKS_DIR).glob("*.schema.json")}
    return found


def stale(root: Path) -> list:
    """Messages for every file under ``root`` that differs from what generation gives."""
    files = generate()
    out = []
    for rel, content in files.items():
        path = root / rel
        if not path.is_file():
            out.append(f"missing: {rel}")
        elif path.read_bytes() != content:
            out.append(f"stale: {rel}")
    out += [f"extra: {rel}" for rel in sorted(_on_disk(root) - set(files))]
    return out


def write(root: Path) -> int:
    """Write every schema file under ``root``, remove ones for types that are gone."""
    files = generate()
    (root / BLOCKS_DIR).mkdir(parents=True, exist_ok=True)
    changed = 0
    for rel, content in files.items():
        path = root / rel
        if not path.is_file() or path.read_bytes() != content:
            path.write_bytes(content)
            changed += 1
    for rel in _on_disk(root) - set(files):
        (root / rel).unlink()
        changed += 1
    return changed


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m nflow_compat.schema",
                                description="Generate or check the JSON Schemas of the manifests.")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="DIR", help="write the schemas under DIR")
    group.add_argument("--check", metavar="DIR", help="exit 1 if the schemas under DIR are stale")
    args = p.parse_args(argv)
    if args.write:
        changed = write(Path(args.write))
        print(f"{args.write}: {changed} file(s) written or removed, {len(generate())} in all")
        return 0
    problems = stale(Path(args.check))
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} schema file(s) out of date; run: python -m nflow_compat.schema "
              f"--write {args.check}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
