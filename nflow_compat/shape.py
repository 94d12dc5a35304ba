"""The diagram's shape: JSON Schemas (draft 2020-12) generated from the library manifests,
and the run-time check of a diagram against them (``check``, which ``diagram.parse`` runs first).

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

``nflow_compat.schema`` writes them to the checked-in files under ``schemas/``.
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import math
import reprlib
from typing import NamedTuple
from urllib.parse import quote

import jsonschema_rs
import orjson

from .errors import DiagramError, did_you_mean, pointer
from .expr import MAX_LENGTH
from .manifests import BlockType, ParamSpec, block_types
from .normalize import MAX_PORTS, SOLVERS, solver_hint, unset

DIALECT = "https://json-schema.org/draft/2020-12/schema"
DIAGRAM_FILE = "diagram.schema.json"

# Characters the expression tokenizer (expr._TOKEN) can read; anything else fails to evaluate.
# Written so that both Python ``re`` and ECMA-262 read it the same way, and so that it runs
# in linear time (a leading run of blanks, one non-blank, then anything allowed).
_EXPR_CHARS = r"\dA-Za-z_.+\-*/^(),;\[\]"
EXPRESSION_PATTERN = rf"^\s*[{_EXPR_CHARS}][\s{_EXPR_CHARS}]*$"

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
    "diagram": "a nested diagram {\"blocks\": [...], \"connections\": [...]} (null, [] or \"\" for none)",
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

    def __init__(self, max_length: int = MAX_LENGTH, body: dict | None = None):
        self.defs: dict = {}
        self.string_keywords = {"pattern": EXPRESSION_PATTERN, "maxLength": max_length}
        self.body = body    # the schema of a nested diagram (kind "diagram"), None: its shape only

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
        kw = dict(self.string_keywords)
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

    def or_unset(self, ref: dict) -> dict:
        """A scalar kind ``ref`` or unset (null or [], which means the default): its schema
        with null and an empty array allowed, their items still the kind."""
        name = ref["$ref"].rsplit("/", 1)[1]

        def build():
            strict = self.defs[name]
            out = {key: value for key, value in strict.items() if key not in ("minItems", "description")}
            out["type"] = strict["type"] + ([] if "null" in strict["type"] else ["null"])
            return out
        return self._put(name + "OrUnset", build)

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

    def nested_shape(self) -> dict:
        """A nested diagram's outer shape: an object, or none (null, [] or "")."""
        return {"type": ["object", "null", "array", "string"], "maxItems": 0, "maxLength": 0,
                "description": _KIND_TEXT["diagram"]}

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
        if kind == "diagram":
            return self.body or self.nested_shape()
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


def params_file(type_name: str) -> str:
    return f"{type_name}.params.schema.json"


def params_schema_for(type_name: str) -> dict:
    """The params schema of one block type; DiagramError ``unknown_block_type`` otherwise."""
    types = block_types()
    if type_name not in types:
        raise DiagramError("unknown_block_type", f"unknown block type {type_name!r}"
                           + did_you_mean(type_name, types))
    defs = _Defs()
    out = {"$schema": DIALECT, "$id": params_file(type_name), **_params_schema(types[type_name], defs)}
    if defs.defs:
        out["$defs"] = defs.defs
    return out


# ----------------------------------------------------------------------------- diagram

# A pin nobody set on a signal wire of a struct array: null, [] or "" (``diagram.unset``
# reads null and [] as a field nobody set; jsonencode gives every element every field).
_PIN_UNSET = {"type": ["null", "array", "string"], "maxItems": 0, "maxLength": 0}


def _one_or_many(item_ref: dict, what: str) -> dict:
    # an array is told first: a failed "if" formats the instance into its message, which
    # for the whole blocks list is costly (and too deep to format for deeply nested ones)
    return {"type": ["array", "object", "null"],
            "if": {"type": "array"}, "then": {"items": item_ref},
            "else": {"if": {"type": "object", "minProperties": 1}, "then": item_ref},
            "description": f"an array of {what}; one may be given as a bare object, none as {{}} "
                           "(an empty struct())"}


def diagram_schema(*, max_expression_length: int = MAX_LENGTH, dispatch: bool = True) -> dict:
    """The schema of a whole diagram, every block's params checked against its type, and
    the nested diagrams of subsystems as diagrams. ``dispatch=False``: without the table
    of types (the ``type`` enum and the if/then that picks a block's params schema), which
    ``check`` does in Python (see there); the params schemas are still in ``$defs``."""
    types = block_types()
    defs = _Defs(max_expression_length, body={"$ref": "#/$defs/body"})
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
    by_type = []
    for library, names in by_library.items():
        inner = [{"if": {"properties": {"type": {"const": name}}},
                  "then": {"properties": {"params": {
                      "if": {"type": "object"},
                      "then": {"$ref": "#/$defs/blockParams/$defs/" + quote(pointer(name)[1:], safe="")}}}}}
                 for name in names]
        by_type.append({"if": {"properties": {"type": {"enum": names}}, "required": ["type"]},
                         "then": {"allOf": inner}, "$comment": f"library {library}"})
    defs.defs["block"] = {
        "type": "object",
        "required": ["id", "type"],
        "properties": {
            "id": {"type": ["string", "number"], "minLength": 1, "description": "unique block id"},
            "type": dict({"type": "string", "description": "block type (a manifest entry)"},
                         **({"enum": list(types)} if dispatch else {})),
            "inputs": dict(defs.or_unset(count), description="number of input ports (default: the manifest's)"),
            "outputs": dict(defs.or_unset(count), description="number of output ports (default: the manifest's)"),
            "params": {"type": ["object", "null", "array"], "maxItems": 0,
                       "description": "parameters, checked against the block type's params schema"},
        },
        "additionalProperties": True,
        **({"allOf": by_type} if dispatch else {}),
    }
    block_ref = {"type": ["string", "number"], "description": "the id of a block"}
    defs.defs["connection"] = {
        "type": "object",
        "required": ["from", "to"],
        "properties": {"from": block_ref, "to": block_ref},
        "additionalProperties": True,
        # a signal wire when no pin is named (diagram.is_physical): a signal wire of a struct
        # array has them unset ([], "", null); else a physical connection
        "if": {"properties": {"fromPin": _PIN_UNSET, "toPin": _PIN_UNSET}},
        "then": {"properties": {"fromIndex": dict(defs.or_unset(index), description="output port (default 0)"),
                                "toIndex": dict(defs.or_unset(index), description="input port (default 0)")}},
        "else": {"required": ["fromPin", "toPin"],
                 "properties": {"fromPin": {"type": "string", "minLength": 1, "description": "physical pin name"},
                                "toPin": {"type": "string", "minLength": 1, "description": "physical pin name"}}},
        "description": "a signal connection {from, fromIndex, to, toIndex} or a physical one "
                       "{from, fromPin, to, toPin}",
    }
    defs.defs["body"] = dict(defs.nested_shape(), additionalProperties=True,
                             properties={"blocks": _one_or_many(defs.ref("block"), "blocks"),
                                         "connections": _one_or_many(defs.ref("connection"), "connections")})
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
            "relTol": dict(defs.or_unset(positive), description="relative tolerance (default 1e-6)"),
            "absTol": dict(defs.or_unset(positive), description="absolute tolerance (default 1e-8)"),
            "maxStep": dict(defs.or_unset(positive), description="largest internal step (default: none)"),
        },
        "additionalProperties": True,
        "$defs": defs.defs,
    }


# ----------------------------------------------------------------------------- the run-time check

def _summary(instance: list) -> list:
    """A long array as ``items`` and ``contains`` of the generated schemas see it: its
    numbers by the smallest and the largest, a null if it holds any, its other items as
    they are. Exact for those schemas (tests check it against plain jsonschema): they look
    at each item alone, their number keywords are types and bounds (true for every number
    when true for both extremes), and an enum of numbers only sits in schemas that take one
    item at most, whose maxItems the array itself already fails."""
    kinds = set(map(type, instance))          # at C speed: most long arrays are all numbers
    if len(instance) < 3 or not kinds & {int, float}:
        return instance
    numbers = instance if kinds <= {int, float} else [x for x in instance if type(x) in (int, float)]
    if len(numbers) < 3:
        return instance
    others = [] if kinds <= {int, float, type(None)} else \
        [x for x in instance if x is not None and type(x) not in (int, float)]
    return [min(numbers), max(numbers)] + ([None] if type(None) in kinds else []) + others


_CHAIN = 3   # levels kept of a longer chain of one-element arrays


def _cut(instance):
    """A chain of more than ``_CHAIN`` one-element arrays around a value, cut to
    ``_CHAIN`` (jsonencode may nest a scalar hundreds deep; jsonschema would recurse a few
    frames per level, past Python's limit). Exact for the generated schemas: none tells
    a chain of 3 from a longer one (a matrix tells 2 from 3; tests check)."""
    inner, depth = instance, 0
    while type(inner) is list and len(inner) == 1:
        inner, depth = inner[0], depth + 1
    if depth <= _CHAIN:
        return instance
    for _ in range(_CHAIN):
        inner = [inner]
    return inner


def _items(plain, validator, items, instance, schema):
    """jsonschema's ``items`` (``plain``) on the array as the schemas see it, in fewer steps:
    a long array by its summary (``_summary``: the numbers of a 100,000-sample table by two of
    them rather than a Python validation each, ~10 s the plain way), a long chain of
    one-element arrays cut."""
    if validator.is_type(instance, "array"):
        instance = _cut(_summary(instance))
    return plain(validator, items, instance, schema)


def _contains(plain, validator, contains, instance, schema):
    """jsonschema's ``contains`` (``plain``), on the summary of a long array (``_summary``)."""
    if validator.is_type(instance, "array"):
        instance = _summary(instance)
    return plain(validator, contains, instance, schema)


@functools.cache
def explainer():
    """The validator class that explains an invalid diagram: jsonschema's Draft 2020-12 with
    the ``items`` / ``contains`` above. jsonschema (pure Python, ~50 ms to import with what it
    imports) is imported here, on the first diagram jsonschema-rs says no to: a valid
    diagram never needs it."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import extend
    plain = Draft202012Validator.VALIDATORS
    return extend(Draft202012Validator, {"items": functools.partial(_items, plain["items"]),
                                         "contains": functools.partial(_contains, plain["contains"])})


_FIRST_ERRORS = 32   # best_match picks among this many (a huge wrong value has millions of errors)


_ANNOTATIONS = {"description", "default", "title", "$comment"}


def _inlined(node, defs: dict, inside: frozenset):
    """``node`` with each ``$ref`` to a def replaced by the def itself (the same schema,
    without a lookup and a descent per use, which is most of a check's time), except
    inside that def (a recursive kind keeps its ``$ref``) and where the ``$ref`` has
    sibling keywords other than annotations."""
    if isinstance(node, list):
        return [_inlined(item, defs, inside) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref", "")
    name = ref[len("#/$defs/"):]
    if ref.startswith("#/$defs/") and name in defs and name not in inside and set(node) - {"$ref"} <= _ANNOTATIONS:
        return dict(_inlined(defs[name], defs, inside | {name}), **{k: v for k, v in node.items() if k != "$ref"})
    return {key: value if key == "$defs" else _inlined(value, defs, inside) for key, value in node.items()}


def _referenced(node, defs: dict, found: dict) -> dict:
    """``found`` with every def ``node`` refers to, directly or through other defs."""
    if isinstance(node, dict):
        ref = node.get("$ref", "")
        name = ref[len("#/$defs/"):]
        if ref.startswith("#/$defs/") and name in defs and name not in found:
            found[name] = defs[name]
            _referenced(defs[name], defs, found)
        for key, value in node.items():
            if key != "$defs":
                _referenced(value, defs, found)
    elif isinstance(node, list):
        for item in node:
            _referenced(item, defs, found)
    return found


@functools.lru_cache(maxsize=4)
def _diagram_schema(max_expression_length: int) -> dict:
    """The diagram schema without the type table (``dispatch=False``), built once per
    process and limit (a few ms; every type's params schema is in its ``$defs``)."""
    return diagram_schema(max_expression_length=max_expression_length, dispatch=False)


def _checker(schema: dict, defs: dict) -> _Checker:
    """A checker of ``schema`` (whose ``$ref`` point into ``defs``): its references inlined,
    and the defs it still refers to beside it, only those (compiling a schema that carries
    the ~300 params schemas costs ~1.5 ms, one that carries what it uses ~0.1 ms)."""
    inlined = _inlined(schema, defs, frozenset())
    return _Checker(dict(inlined, **{"$defs": _referenced(inlined, defs, {})}))


@functools.lru_cache(maxsize=4)
def _skeleton(max_expression_length: int) -> _Checker:
    """The checker of the diagram without the type table, compiled once per process and limit."""
    doc = _diagram_schema(max_expression_length)
    return _checker({key: value for key, value in doc.items() if key != "$defs"}, doc["$defs"])


@functools.lru_cache(maxsize=1024)
def _params(max_expression_length: int, type_name: str) -> _Checker:
    """The checker of one block type's params, compiled when a diagram first uses the type
    (so a diagram of 3 types compiles 3, not ~300)."""
    defs = _diagram_schema(max_expression_length)["$defs"]
    return _checker(defs["blockParams"]["$defs"][type_name], defs)


class _Checker:
    """One schema, two validators: ``jsonschema_rs`` (compiled, some 50x faster) says
    whether an instance is valid; ``jsonschema`` (``explain``, made on first use) confirms a
    "no" and explains it (best_match, absolute_path: what the typed error is made of). Both
    implement Draft 2020-12; tests/test_shape.py checks that they agree."""

    def __init__(self, schema: dict):
        self.schema = schema
        self.fast = jsonschema_rs.Draft202012Validator(schema)

    @functools.cached_property
    def explain(self):
        return explainer()(self.schema)

    def is_valid(self, instance) -> bool:
        # a "no" is asked again of jsonschema: Python objects decoded JSON never holds (a NaN,
        # a numpy float, an array) can convert differently; and a "no" is rare and about to be explained
        try:
            if self.fast.is_valid(instance):
                return True
        except ValueError:                   # a type it does not convert (a numpy array)
            pass
        return self.explain.is_valid(instance)


def check(raw, max_expression_length: int = MAX_LENGTH, max_depth: int = 32) -> None:
    """Check a decoded diagram against the generated schemas; the first problem is a
    DiagramError with the code and JSON pointer ``parse`` gives for it. The type table is
    applied here rather than by the schema's if/then (a dict lookup instead of ~300 enum
    comparisons a block): the diagram without it, then each block's params (nested
    diagrams' blocks too, after their subsystem, down to ``max_depth`` levels: the
    flattener says where nesting goes deeper) against the params schema of its type."""
    skeleton = _skeleton(max_expression_length)
    if not skeleton.is_valid(raw):
        raise _error(skeleton.explain, raw, raw, (), max_expression_length)
    types = block_types()
    stack = [((), raw, 0)]
    while stack:
        at, body, depth = stack.pop()
        blocks = body.get("blocks")
        entries = [(at + ("blocks",), blocks)] if isinstance(blocks, dict) and blocks else \
            [(at + ("blocks", i), b) for i, b in enumerate(blocks or ())]
        nested = []
        for where, block in entries:
            bt = types.get(block["type"])
            if bt is None:
                raise _typed(_locate(where + ("type",), raw), "enum", block["type"], max_expression_length)
            given = block.get("params")
            if not isinstance(given, dict):
                continue
            checker = _params(max_expression_length, bt.type)
            if not checker.is_valid(given):
                raise _error(checker.explain, given, raw, where + ("params",), max_expression_length)
            nested += [(where + ("params", name), given[name], depth + 1) for name, spec in bt.params.items()
                       if spec.kind == "diagram" and isinstance(given.get(name), dict) and depth < max_depth]
        stack += reversed(nested)


def _error(validator, instance, root, at: tuple, limit: int) -> DiagramError:
    """The DiagramError of ``instance`` (at ``at`` in ``root``): jsonschema's best match
    among its first errors, told as ``parse`` tells it."""
    from jsonschema.exceptions import best_match     # with the explainer: only for an invalid diagram
    err = best_match(itertools.islice(validator.iter_errors(instance), _FIRST_ERRORS))
    tokens, keyword, value = at + tuple(err.absolute_path), err.validator, err.instance
    if keyword == "required":            # the error sits on the object: point at what is missing
        tokens += (next(key for key in err.validator_value if key not in err.instance),)
        value = None
    elif "propertyNames" in err.schema_path:
        tokens, keyword = tokens + (err.instance,), "propertyNames"
    return _typed(_locate(tokens, root), keyword, value, limit)


class _Place(NamedTuple):
    """Where an error is: the pointer tokens to report, what sits there (``_CODES``), the
    field / param / connection end named, the block (qualified id) and its param spec."""
    where: tuple
    kind: str
    key: str | None = None
    block: str | None = None
    spec: ParamSpec | None = None


_TIMES = ("sampleTime", "duration", "relTol", "absTol", "maxStep")
_BLOCK_FIELDS = {"id": "id", "type": "type", "inputs": "count", "outputs": "count"}
_CONNECTION_FIELDS = {"from": "end", "to": "end", "fromIndex": "index", "toIndex": "index", "fromPin": "pin",
                      "toPin": "pin"}


def _locate(tokens: tuple, root) -> _Place:
    """What ``tokens`` (a path into ``root``) points at, following nested diagrams."""
    node, i, prefix = root, 0, ""
    while i < len(tokens):
        head, items = tokens[i], node.get(tokens[i])
        if head not in ("blocks", "connections"):
            if i == 0 and head in _TIMES:
                return _Place(tokens[:1], "time", head)
            if i == 0 and head == "solver":
                return _Place(tokens[:1], "solver")
            if i == 0 and head == "variables":
                return _Place(tokens[:2], "variable", tokens[1]) if len(tokens) > 1 else _Place(tokens[:1], "variables")
            break
        if isinstance(items, list) and i + 1 < len(tokens):
            item, i = items[tokens[i + 1]], i + 2
        elif isinstance(items, dict) and items:
            item, i = items, i + 1
        else:
            return _Place(tokens[:i + 1], "list", head)
        rest = tokens[i:]
        if head == "connections":
            kind = _CONNECTION_FIELDS.get(rest[0]) if rest else None
            return _Place(tokens[:i + 1], kind, rest[0]) if kind else _Place(tokens[:i], "connection")
        bid = _block_id(item, prefix)
        if not rest:
            return _Place(tokens[:i], "block", None, bid)
        if rest[0] in _BLOCK_FIELDS:
            return _Place(tokens[:i + 1], _BLOCK_FIELDS[rest[0]], rest[0], bid)
        if len(rest) == 1:
            return _Place(tokens[:i + 1], "params", None, bid)
        bt = block_types().get(item.get("type"))
        spec = bt.params.get(bt.aliases.get(rest[1], rest[1])) if bt else None
        if spec is None or spec.kind != "diagram" or len(rest) == 2:
            return _Place(tokens[:i + 2], "body" if spec and spec.kind == "diagram" else "param", rest[1], bid, spec)
        node, i, prefix = item["params"][rest[1]], i + 2, bid + "/"
    return _Place((), "diagram")


def _block_id(raw, prefix: str):
    bid = raw.get("id") if isinstance(raw, dict) else None
    if isinstance(bid, (int, float)) and not isinstance(bid, bool):
        bid = f"{bid:g}"
    return prefix + bid if isinstance(bid, str) and bid else None


# What sits where an error is -> its code, whatever the keyword, except for the pairs of
# _BY_KEYWORD; an expression string that cannot be one has its own codes.
_CODES = {"diagram": "bad_type", "list": "bad_type", "variables": "bad_type", "variable": "param_type",
          "solver": "unknown_solver", "block": "bad_type", "id": "missing_id", "type": "missing_type",
          "count": "bad_port_count", "params": "bad_type", "param": "param_type", "body": "bad_type",
          "connection": "bad_connection", "end": "bad_connection", "pin": "bad_connection", "index": "bad_port_index"}
_BY_KEYWORD = {("diagram", "required"): "missing_field", ("variable", "propertyNames"): "bad_variable",
               ("type", "enum"): "unknown_block_type", ("param", "enum"): "param_value",
               ("param", "minimum"): "param_range", ("param", "exclusiveMinimum"): "param_range",
               ("param", "not"): "param_range", ("index", "minimum"): "port_out_of_range"}
_EXPRESSION_CODES = {"pattern": "bad_expression", "maxLength": "expression_too_long"}
_EXPRESSIONS = ("time", "variable", "count", "index", "param")    # where an expression string may stand


def _typed(place: _Place, keyword: str, value, limit: int) -> DiagramError:
    if place.kind == "time":
        code = "missing_field" if keyword == "required" or unset(value) else "bad_" + place.key.lower()
    elif place.kind in _EXPRESSIONS and keyword in _EXPRESSION_CODES and isinstance(value, str):
        code = _EXPRESSION_CODES[keyword]
    elif place.kind == "param" and keyword == "type" and value is None and place.spec.kind in _BOUND_KINDS:
        # null is NaN: outside an enum or a bound, as normalization says it
        code = "param_value" if place.spec.enum is not None else "param_range" if _bounds(place.spec) else "param_type"
    else:
        code = _BY_KEYWORD.get((place.kind, keyword)) or _CODES[place.kind]
    shown = _SHOW.repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    message = _MESSAGES[code](place, shown, value, limit)
    return DiagramError(code, message, path=pointer(*place.where), block=place.block,
                        param=place.key if place.kind in ("param", "body") else None)


_BAD_TYPE = {"diagram": lambda p: "a diagram must be a JSON object",
             "list": lambda p: f"'{p.key}' must be an array of objects",
             "variables": lambda p: "'variables' must be an object of name: value",
             "block": lambda p: "a block must be an object",
             "params": lambda p: f"'params' of block {p.block!r} must be an object",
             "body": lambda p: f"subsystem {p.block!r}: '{p.key}' must be the nested diagram "
                               "{\"blocks\": [...], \"connections\": [...]}"}
_BAD_CONNECTION = {"connection": lambda p: "a connection must be an object",
                   "end": lambda p: f"connection '{p.key}' must be a block id",
                   "pin": lambda p: f"a physical connection needs a pin name '{p.key}'"}


def _bounds(spec: ParamSpec) -> str:
    return " and ".join(f"{rel} {bound:g}" for rel, bound in ((">=", spec.minimum), (">", spec.exclusive_minimum))
                        if bound is not None)


_SHOW = reprlib.Repr()     # a value in a message: a huge one shown short, without formatting it whole
_SHOW.maxlevel, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxstring, _SHOW.maxother = 3, 8, 4, 60, 60


def _not_positive(p, shown, value, limit) -> str:
    return f"'{p.key}' must be a positive finite number, got {shown}"


_MESSAGES = {
    "bad_type": lambda p, shown, value, limit: _BAD_TYPE[p.kind](p),
    "bad_connection": lambda p, shown, value, limit: _BAD_CONNECTION[p.kind](p),
    "missing_field": lambda p, shown, value, limit: f"the diagram needs '{p.key}'",
    **dict.fromkeys(("bad_" + key.lower() for key in _TIMES), _not_positive),
    "unknown_solver": lambda p, shown, value, limit: f"unknown solver {shown} (known: {', '.join(SOLVERS)})"
    + (solver_hint(value) if isinstance(value, str) else ""),
    "bad_variable": lambda p, shown, value, limit: f"variable name {shown} is not an identifier",
    "missing_id": lambda p, shown, value, limit: "every block needs a non-empty string 'id'",
    "missing_type": lambda p, shown, value, limit: f"block {p.block!r} needs a string 'type'",
    "unknown_block_type": lambda p, shown, value, limit: f"unknown block type {shown}"
    + did_you_mean(value, block_types()),
    "bad_port_count": lambda p, shown, value, limit: f"'{p.key}' must be a whole number from 0 to {MAX_PORTS}, "
                                                     f"got {shown}",
    "param_type": lambda p, shown, value, limit: (
        f"variable {p.key!r} must be {_KIND_TEXT['numeric']}, got {shown}" if p.kind == "variable" else
        f"parameter {p.key!r} must be {_KIND_TEXT[p.spec.kind]}, got {shown}"),
    "param_value": lambda p, shown, value, limit: f"parameter {p.key!r} must be one of {list(p.spec.enum)}, got "
    f"{shown}" + did_you_mean(str(value), [str(e) for e in p.spec.enum]),
    "param_range": lambda p, shown, value, limit: f"parameter {p.key!r} must be {_bounds(p.spec)}, got {shown}"
    + (f": {p.spec.reason}" if p.spec.reason else ""),
    "bad_expression": lambda p, shown, value, limit: f"cannot evaluate {shown}: it holds a character no expression "
                                                     "has",
    "expression_too_long": lambda p, shown, value, limit: f"expression of {len(value)} characters (limit {limit})",
    "bad_port_index": lambda p, shown, value, limit: f"'{p.key}' must be a whole number, got {shown}",
    "port_out_of_range": lambda p, shown, value, limit: f"{p.key} {shown} is out of range (ports are 0-based)",
}
