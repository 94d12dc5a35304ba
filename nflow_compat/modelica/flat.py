"""rumoca's flat model (``Model.to_dict("flat")``: every component instantiated and every
``connect`` expanded into equations) read into ``FlatModel``: the variables with their
attributes, the equations as residual trees (``symbolic``), the when-chains, the initial
equations, the asserts, the functions inlined.

Only what is understood is read. Any other construct (an array variable, a for-equation
family, an algorithm section, a function with loops or an external body, an operator the
tables do not know) raises ``ModelicaUnsupported`` with the source position of the
construct, which the block turns into a typed error naming the model's line. Positions are
rumoca's spans: a source id and a byte offset; ``SourceLines`` maps them to a file and line
from rumoca's source map (asked for only when an error needs it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from . import symbolic as sym
from .symbolic import ModelicaUnsupported


class Position(NamedTuple):
    source: int
    offset: int


@dataclass
class Variable:
    name: str
    type: str                  # Real, Integer, Boolean, String
    variability: str           # parameter, constant, discrete, continuous
    causality: str | None      # input, output (as declared), or None
    start: object = None       # expression, or None
    fixed: bool | None = None
    binding: object = None     # the declaration equation's right-hand side, or None
    state_select: str = "default"
    unit: str | None = None
    description: str | None = None
    pos: Position | None = None

    @property
    def top_level(self) -> bool:
        """A component of the model itself (not of one of its components): a port when it
        is an input or an output."""
        return "." not in self.name


@dataclass
class Equation:
    residual: object
    pos: Position | None


@dataclass
class Assign:
    target: str
    value: object
    pos: Position | None


@dataclass
class Reinit:
    state: str
    value: object
    pos: Position | None


@dataclass
class Terminate:
    message: str
    pos: Position | None


@dataclass
class Assert:
    condition: object
    message: str
    warning: bool
    pos: Position | None


@dataclass
class Conditional:
    """An if-equation inside a when-clause: ``branches`` of (condition, equations)."""
    branches: list
    orelse: list
    pos: Position | None


@dataclass
class WhenBranch:
    conditions: tuple          # a vector condition fires when any element becomes true
    body: list
    pos: Position | None


@dataclass
class FlatModel:
    name: str
    variables: dict            # name -> Variable, declaration order
    equations: list
    initial_equations: list
    whens: list                # of lists of WhenBranch (when ... elsewhen ... end when)
    asserts: list
    functions: dict = field(default_factory=dict)


_BINARY = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "Exp": "^", "AddElem": "+", "SubElem": "-",
           "MulElem": "*", "DivElem": "/", "ExpElem": "^", "Lt": "<", "Le": "<=", "Gt": ">", "Ge": ">=",
           "Eq": "==", "Neq": "<>", "And": "and", "Or": "or"}
_BUILTIN = {name.capitalize(): name for name in ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh",
                                                 "cosh", "tanh", "exp", "log", "log10", "sqrt", "abs", "sign",
                                                 "min", "max", "div", "mod", "rem", "floor", "ceil", "integer",
                                                 "sample", "initial", "terminal", "edge", "change")}
_BUILTIN.update({"SemiLinear": "semiLinear", "NoEvent": "noEvent", "Smooth": "smooth", "Homotopy": "homotopy",
                 "Der": "der", "Pre": "pre"})
MAX_DEPTH = 250          # expression nesting read (each level is a Python call when derived and evaluated)
_VARIABILITY = {"Parameter": "parameter", "Constant": "constant", "Discrete": "discrete"}
_TYPES = ("Real", "Integer", "Boolean", "String")


def _tag(obj):
    """(variant, payload) of a serde enum value: a bare string or a one-key object."""
    if isinstance(obj, str):
        return obj, None
    (key, value), = obj.items()
    return key, value


def _pos(span) -> Position | None:
    if not isinstance(span, dict) or "source" not in span:
        return None
    return Position(int(span["source"]), int(span.get("start", 0)))


class Reader:
    """One flat model, read (see the module docstring)."""

    def __init__(self, flat: dict, name: str):
        self.depth = 0
        self.flat = flat
        self.name = name
        self.enum_literals = flat.get("enum_literal_ordinals") or {}
        self.raw_functions = flat.get("functions") or {}
        self.functions = {}           # name -> (input names, output names, output expressions)

    # -- expressions --------------------------------------------------------------------
    def expr(self, node):
        kind, body = _tag(node)
        pos = _pos(body.get("span")) if isinstance(body, dict) else None
        reader = getattr(self, "_" + kind.lower(), None) if kind in _EXPRESSIONS else None
        if reader is None:
            raise ModelicaUnsupported(f"the expression kind {kind} (arrays, records and tuples are not supported)",
                                      pos)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise ModelicaUnsupported(f"an expression nested more than {MAX_DEPTH} levels deep (a sum of that "
                                          "many terms, say): the lowering and its closures recurse over the tree",
                                          pos)
            return reader(body, pos)
        finally:
            self.depth -= 1

    def _literal(self, body, pos):
        kind, value = _tag(body["value"])
        if kind == "String":
            return ("string", value)
        if kind == "Boolean":
            return sym.Num(1.0 if value else 0.0, pos)
        return sym.Num(float(value), pos)

    def _varref(self, body, pos):
        name = body["name"]["name"]
        if body.get("subscripts"):
            raise ModelicaUnsupported(f"the subscripted reference {name}[...] (arrays are not supported)", pos)
        if name == "time":
            return sym.Time(pos)
        if name in self.enum_literals:
            return sym.Num(float(self.enum_literals[name]), pos)
        return sym.Var(name, 0, pos)

    def _unary(self, body, pos):
        operand = self.number(body["rhs"])
        kind = _tag(body["op"])[0]
        if kind in ("Minus", "DotMinus"):
            return sym.neg(operand)
        if kind in ("Plus", "DotPlus"):
            return operand
        if kind == "Not":
            return sym.op("not", operand)
        raise ModelicaUnsupported(f"the unary operator {kind}", pos)

    def _binary(self, body, pos):
        kind = _tag(body["op"])[0]
        name = _BINARY.get(kind)
        if name is None:
            raise ModelicaUnsupported(f"the operator {kind}", pos)
        a, b = self.number(body["lhs"]), self.number(body["rhs"])
        out = sym.op(name, a, b)
        return _with_pos(out, pos)

    def _if(self, body, pos):
        out = self.number(body["else_branch"])
        for cond, value in reversed(body["branches"]):
            out = sym.if_(self.number(cond), self.number(value), out)
        return _with_pos(out, pos)

    def _builtincall(self, body, pos):
        kind = _tag(body["function"])[0]
        fn = _BUILTIN.get(kind)
        if fn is None:
            raise ModelicaUnsupported(f"the built-in operator {kind.lower()}()", pos)
        args = body.get("args") or []
        if fn == "der":
            inner = self.number(args[0])
            if not isinstance(inner, sym.Var):
                raise ModelicaUnsupported("der() of an expression (only der(variable) is supported)", pos)
            return sym.Var(inner.name, inner.order + 1, pos)
        if fn == "pre":
            inner = self.number(args[0])
            if not isinstance(inner, sym.Var) or inner.order:
                raise ModelicaUnsupported("pre() of an expression (only pre(variable) is supported)", pos)
            return sym.Pre(inner.name, pos)
        if fn == "homotopy":
            return self.number(args[0])      # the actual expression (no homotopy continuation)
        values = tuple(self.number(a) for a in args)
        arity = sym.FUNCTIONS.get(fn, sym.EVENT_OPERATORS.get(fn))
        if fn in ("noEvent",):
            arity = 1
        elif fn == "smooth":
            arity = 2
        if arity is not None and len(values) != arity and not (fn == "integer" and len(values) == 1):
            raise ModelicaUnsupported(f"{fn}() with {len(values)} arguments", pos)
        out = sym.call(fn, *values)
        return _with_pos(out, pos)

    def _functioncall(self, body, pos):
        name = body["name"]["name"] if isinstance(body["name"], dict) else str(body["name"])
        args = [self.number(a) for a in body.get("args") or []]
        inputs, outputs, values = self.function(name, pos)
        if len(args) > len(inputs):
            raise ModelicaUnsupported(f"function {name} called with {len(args)} arguments (it takes {len(inputs)})",
                                      pos)
        if len(args) < len(inputs):
            raise ModelicaUnsupported(f"function {name} called without its argument {inputs[len(args)]!r} "
                                      "(default arguments are not supported)", pos)
        mapping = {("var", p, 0): a for p, a in zip(inputs, args)}
        return sym.substitute(values[0], mapping)

    def number(self, node):
        out = self.expr(node)
        if isinstance(out, tuple):
            raise ModelicaUnsupported("a String where a number is expected", _pos(_tag(node)[1].get("span")))
        return out

    def text(self, node) -> str:
        """A message: a String literal (or a concatenation of them), else a placeholder."""
        kind, body = _tag(node)
        if kind == "Literal" and _tag(body["value"])[0] == "String":
            return str(_tag(body["value"])[1])
        if kind == "Binary" and _tag(body["op"])[0] == "Add":
            return self.text(body["lhs"]) + self.text(body["rhs"])
        return "(a message computed by the model)"

    # -- functions ----------------------------------------------------------------------
    def function(self, name: str, pos):
        """(input names, output names, the outputs as expressions of the inputs): the
        function inlined. Its body may assign and branch (if), in sequence; loops, external
        bodies and several outputs are not taken."""
        if name in self.functions:
            return self.functions[name]
        raw = self.raw_functions.get(name)
        if raw is None:
            raise ModelicaUnsupported(f"function {name} (its definition is not in the flat model)", pos)
        where = _pos(raw.get("span")) or pos
        if raw.get("external"):
            raise ModelicaUnsupported(f"function {name} has an external body (external functions are not "
                                      "evaluated)", where)
        inputs = [p["name"] for p in raw.get("inputs") or []]
        outputs = [p["name"] for p in raw.get("outputs") or []]
        if len(outputs) != 1:
            raise ModelicaUnsupported(f"function {name} has {len(outputs)} outputs (one is supported)", where)
        for p in (raw.get("inputs") or []) + (raw.get("outputs") or []) + (raw.get("locals") or []):
            if (p.get("effective_type") or {}).get("dimensions") or p.get("shape_expr"):
                raise ModelicaUnsupported(f"function {name}: the array argument {p['name']!r}", where)
        values = {p: sym.Var(p) for p in inputs}
        for local in raw.get("locals") or []:
            default = local.get("default")
            values[local["name"]] = self.number(default) if default else None
        for output in raw.get("outputs") or []:
            default = output.get("default")
            values[output["name"]] = self.number(default) if default else None
        self.functions[name] = None     # a recursive call is caught below
        values = self._statements(raw.get("body") or [], values, name, where)
        result = values.get(outputs[0])
        if result is None:
            raise ModelicaUnsupported(f"function {name} does not assign its output {outputs[0]!r}", where)
        self.functions[name] = (inputs, outputs, [result])
        return self.functions[name]

    def _statements(self, statements, values, name, where):
        for statement in statements:
            kind, body = _tag(statement)
            pos = _pos(body.get("span")) if isinstance(body, dict) else where
            if kind == "Assignment":
                parts = body["comp"]["parts"]
                if len(parts) != 1 or parts[0].get("subs"):
                    raise ModelicaUnsupported(f"function {name}: an assignment to a record or array element", pos)
                values = dict(values, **{parts[0]["ident"]: self._in_scope(body["value"], values, name, pos)})
            elif kind == "If":
                values = self._if_statement(body, values, name, pos)
            elif kind == "Assert":
                continue           # the checks of a function body are not evaluated
            elif kind == "Empty":
                continue
            else:
                raise ModelicaUnsupported(f"function {name}: the {kind.lower()} statement (loops, return and "
                                          "calls in function bodies are not supported)", pos)
        return values

    def _if_statement(self, body, values, name, pos):
        branches = [(self._in_scope(block["cond"], values, name, pos),
                     self._statements(block["stmts"], values, name, pos)) for block in body["cond_blocks"]]
        orelse = self._statements(body.get("else_block") or [], values, name, pos)
        merged = dict(orelse)
        for key in set().union(*(b.keys() for _, b in branches), orelse.keys()):
            out = orelse.get(key)
            for cond, branch in reversed(branches):
                value = branch.get(key)
                if value is None or out is None:
                    if value is not out:
                        raise ModelicaUnsupported(f"function {name}: {key!r} is assigned in some branches of an "
                                                  "if-statement and unset in others", pos)
                    continue
                out = sym.if_(cond, value, out)
            merged[key] = out
        return merged

    def _in_scope(self, node, values, name, pos):
        expr = self.number(node)
        unknown = [v for v, _ in sym.instances(expr, frozen_relations=False) if v not in values]
        if unknown or any(isinstance(n, sym.Pre) for n in sym.walk_nodes(expr)):
            raise ModelicaUnsupported(f"function {name} reads {unknown[0] if unknown else 'pre()'}, which is not one "
                                      "of its inputs or assigned variables", pos)
        unset = [v for v, _ in sym.instances(expr, frozen_relations=False) if values[v] is None]
        if unset:
            raise ModelicaUnsupported(f"function {name} reads {unset[0]!r} before assigning it", pos)
        return sym.substitute(expr, {("var", v, 0): e for v, e in values.items() if e is not None})

    # -- the model ----------------------------------------------------------------------
    def variable(self, name: str, raw: dict) -> Variable:
        pos = _pos(raw.get("source_span"))
        if raw.get("dims"):
            raise ModelicaUnsupported(f"the array variable {name}{raw['dims']} (arrays are not supported)", pos)
        type_name = (self.flat.get("variable_type_names") or {}).get(name, "Real")
        if raw.get("is_discrete_type") and type_name not in ("Integer", "Boolean"):
            type_name = "Integer"                    # an enumeration: its ordinal
        if type_name not in _TYPES:
            type_name = "Integer" if raw.get("is_discrete_type") else "Real"
        variability = _VARIABILITY.get(_tag(raw.get("variability") or "Empty")[0], "continuous")
        causality = {"Input": "input", "Output": "output"}.get(_tag(raw.get("causality") or "Empty")[0])
        fixed = raw.get("fixed")
        if isinstance(fixed, list):
            fixed = bool(fixed[0]) if fixed else None
        if raw.get("stream"):
            raise ModelicaUnsupported(f"the stream variable {name} (stream connectors are not supported)", pos)
        string = type_name == "String"
        return Variable(
            name=name, type=type_name, variability=variability, causality=causality,
            start=None if string or raw.get("start") is None else self.number(raw["start"]),
            fixed=fixed,
            binding=None if string or raw.get("binding") is None else self.number(raw["binding"]),
            state_select=str(raw.get("state_select") or "Default").lower(),
            unit=raw.get("unit"), description=raw.get("description"), pos=pos)

    def when_body(self, equations) -> list:
        out = []
        for item in equations:
            kind, body = _tag(item)
            pos = _pos(body.get("span"))
            if kind == "Assign":
                out.append(Assign(body["target"], self.number(body["value"]), pos))
            elif kind == "Reinit":
                out.append(Reinit(body["state"], self.number(body["value"]), pos))
            elif kind == "Terminate":
                out.append(Terminate(self.text(body["message"]), pos))
            elif kind == "Assert":
                out.append(self.assertion(body, pos))
            elif kind == "Conditional":
                branches = [(self.number(cond), self.when_body(eqs)) for cond, eqs in body["branches"]]
                out.append(Conditional(branches, self.when_body(body.get("else_branch") or []), pos))
            else:
                raise ModelicaUnsupported(f"the when-equation kind {kind} (a function call with several outputs)",
                                          pos)
        return out

    def assertion(self, body, pos) -> Assert:
        level = body.get("level")
        warning = False
        if level:
            value = self.number(level)
            warning = isinstance(value, sym.Num) and value.value == self.enum_literals.get("AssertionLevel.warning",
                                                                                          1)
        return Assert(self.number(body["condition"]), self.text(body["message"]), warning, pos)

    def when_condition(self, node) -> tuple:
        kind, body = _tag(node)
        if kind == "Array":
            return tuple(self.number(e) for e in body["elements"])
        return (self.number(node),)

    def read(self) -> FlatModel:
        flat = self.flat
        variables = {name: self.variable(name, raw) for name, raw in flat["variables"].items()}
        for key, what in (("structured_equations", "a for-equation over an array"),
                          ("initial_structured_equations", "a for-equation over an array"),
                          ("algorithms", "an algorithm section"), ("initial_algorithms", "an initial algorithm")):
            items = flat.get(key) or []
            if items:
                raise ModelicaUnsupported(f"{what} (not supported yet)", _pos(items[0].get("span")))
        for key in ("record_instances",):
            if flat.get(key):
                raise ModelicaUnsupported("a record component (records are not supported)", None)
        equations = [Equation(self.number(eq["residual"]), _pos(eq.get("span"))) for eq in flat.get("equations") or []]
        initial = [Equation(self.number(eq["residual"]), _pos(eq.get("span")))
                   for eq in flat.get("initial_equations") or []]
        whens = []
        for chain in flat.get("when_chains") or []:
            branches = [chain["first"]] + list(chain.get("else_when") or [])
            whens.append([WhenBranch(self.when_condition(b["condition"]), self.when_body(b["equations"]),
                                     _pos(b.get("span"))) for b in branches])
        asserts = [self.assertion(a, _pos(a.get("span"))) for a in flat.get("assert_equations") or []]
        return FlatModel(self.name, variables, equations, initial, whens, asserts, dict(self.functions))


_EXPRESSIONS = ("Literal", "VarRef", "Unary", "Binary", "If", "BuiltinCall", "FunctionCall")


def _with_pos(node, pos):
    """``node`` carrying ``pos`` when it is a fresh operator node (folding may have
    returned a child, which keeps its own)."""
    if pos is None or getattr(node, "pos", None) is not None or isinstance(node, (sym.Num, sym.Var, sym.Time)):
        return node
    try:
        object.__setattr__(node, "pos", pos)
    except (AttributeError, TypeError):
        pass
    return node


def read(flat: dict, name: str) -> FlatModel:
    return Reader(flat, name).read()


class SourceLines:
    """Where a ``Position`` is: ``describe(pos)`` -> "file, line N" (the file named as rumoca
    loaded it, shortened to the part below a library root or the base directory)."""

    def __init__(self, files, roots=()):
        self.files = {}
        for entry in files:
            source, name, text = entry[0], entry[1], entry[2]
            self.files[int(source)] = (str(name), text)
        self.roots = [str(r).rstrip("/") + "/" for r in roots]

    def describe(self, pos) -> str | None:
        if pos is None or pos.source not in self.files:
            return None
        name, text = self.files[pos.source]
        line = text.count("\n", 0, max(0, min(pos.offset, len(text)))) + 1
        for root in self.roots:
            if name.startswith(root):
                name = name[len(root):]
                break
        return f"{name}, line {line}"
