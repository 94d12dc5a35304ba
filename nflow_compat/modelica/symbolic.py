"""The expression trees of a lowered Modelica model, and what the structural pipeline does
with them: fold constants, substitute aliases, list the unknowns an equation reads,
differentiate (by time for index reduction, by an unknown for linear solving and
Jacobians), split an equation ``a*z + b`` that is linear in ``z``.

The nodes are small frozen dataclasses (hashable: a subexpression is a dictionary key).
``pos`` (where in the Modelica source, see ``flat.Position``) rides along without taking
part in equality. Every operator and function is a name of the tables below, never source
text: a tree is data, and ``evaluate`` turns it into closures.

Booleans are numbers (1.0 true, 0.0 false), as Integers are: the runtime has one kind of
value. A relation that generates events is a ``Rel`` node (its value between events is the
one committed at the last event, ``runtime``); a relation under ``noEvent`` stays an
``Op``, evaluated as it stands.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field


class ModelicaUnsupported(Exception):
    """A construct the lowering does not take (``blocks.modelica`` makes it a typed error
    naming the source line of ``pos``)."""

    def __init__(self, message: str, pos=None):
        super().__init__(message)
        self.message = message
        self.pos = pos


@dataclass(frozen=True, slots=True)
class Num:
    value: float
    pos: object = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Var:
    """A variable (``order`` 0) or its ``order``-th time derivative."""
    name: str
    order: int = 0
    pos: object = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Pre:
    """``pre(name)``: its value just before the current event (or event iteration step)."""
    name: str
    pos: object = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Time:
    pos: object = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Op:
    """An operator of ``ARITY`` applied to ``args``."""
    op: str
    args: tuple
    pos: object = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class If:
    cond: object
    then: object
    orelse: object
    pos: object = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Call:
    """A function of ``FUNCTIONS`` (``math``), an event operator (``sample``, ``initial``,
    ``edge``, ``change``, ``terminal``), ``noEvent`` / ``smooth``, or a user function
    (``fn`` its Modelica name, resolved by ``functions``)."""
    fn: str
    args: tuple
    pos: object = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Rel:
    """Relation ``index`` of the model: ``lhs op rhs`` with ``op`` one of < <= > >=, frozen
    between events (its crossing function is what the solver watches)."""
    index: int
    op: str
    lhs: object
    rhs: object
    pos: object = field(default=None, compare=False, repr=False)


ZERO, ONE = Num(0.0), Num(1.0)

ARITHMETIC = ("+", "-", "*", "/", "^", "neg")
COMPARISONS = ("<", "<=", ">", ">=", "==", "<>")
LOGICAL = ("and", "or", "not")
RELATIONS = ("<", "<=", ">", ">=")     # the comparisons that can generate events

# the elementary functions: name -> arity (evaluated on floats by ``evaluate``)
FUNCTIONS = {"sin": 1, "cos": 1, "tan": 1, "asin": 1, "acos": 1, "atan": 1, "atan2": 2, "sinh": 1, "cosh": 1,
             "tanh": 1, "exp": 1, "log": 1, "log10": 1, "sqrt": 1, "abs": 1, "sign": 1, "min": 2, "max": 2,
             "semiLinear": 3, "div": 2, "mod": 2, "rem": 2, "floor": 1, "ceil": 1, "integer": 1}
# functions whose value jumps (MLS 3.7.1.1): an event in Modelica, so in continuous-time
# equations only under noEvent here
DISCONTINUOUS = ("div", "mod", "rem", "floor", "ceil", "integer")
EVENT_OPERATORS = {"sample": 2, "initial": 0, "terminal": 0, "edge": 1, "change": 1}


def num(value) -> Num:
    return Num(float(value))


def is_num(e, value=None) -> bool:
    return isinstance(e, Num) and (value is None or e.value == value)


# ----------------------------------------------------------------------------- construction (folding)

def add(a, b):
    if is_num(a) and is_num(b):
        return Num(a.value + b.value)
    if is_num(a, 0.0):
        return b
    if is_num(b, 0.0):
        return a
    if isinstance(b, Op) and b.op == "neg":
        return sub(a, b.args[0])
    return Op("+", (a, b))


def sub(a, b):
    if is_num(a) and is_num(b):
        return Num(a.value - b.value)
    if is_num(b, 0.0):
        return a
    if is_num(a, 0.0):
        return neg(b)
    if isinstance(b, Op) and b.op == "neg":
        return add(a, b.args[0])
    return Op("-", (a, b))


def neg(a):
    if is_num(a):
        return Num(-a.value)
    if isinstance(a, Op) and a.op == "neg":
        return a.args[0]
    return Op("neg", (a,))


def mul(a, b):
    if is_num(a) and is_num(b):
        return Num(a.value * b.value)
    for x, y in ((a, b), (b, a)):
        if is_num(x, 0.0) and _finite_everywhere(y):
            return ZERO
        if is_num(x, 1.0):
            return y
        if is_num(x, -1.0):
            return neg(y)
    return Op("*", (a, b))


def div(a, b):
    if is_num(a) and is_num(b) and b.value != 0.0:
        return Num(a.value / b.value)
    if is_num(b, 1.0):
        return a
    if is_num(b, -1.0):
        return neg(a)
    if is_num(a, 0.0) and isinstance(b, Num) and b.value != 0.0:
        return ZERO
    return Op("/", (a, b))


def power(a, b):
    if is_num(a) and is_num(b):
        try:
            return Num(float(a.value) ** b.value) if not (a.value < 0 and b.value != int(b.value)) else Op("^", (a, b))
        except (OverflowError, ZeroDivisionError):
            return Op("^", (a, b))
    if is_num(b, 1.0):
        return a
    if is_num(b, 0.0):
        return ONE
    return Op("^", (a, b))


def _finite_everywhere(e) -> bool:
    """0 * e may fold to 0 only where e cannot be infinite or NaN: a number, a variable."""
    return isinstance(e, (Num, Var, Pre, Time, Rel))


def op(name: str, *args):
    """An operator node, folded where its arguments are numbers."""
    if name in _BUILD:
        return _BUILD[name](*args)
    if all(isinstance(a, Num) for a in args):
        return Num(float(_FOLD[name](*(a.value for a in args))))
    if name == "not" and isinstance(args[0], Op) and args[0].op == "not":
        return args[0].args[0]
    if name in ("and", "or"):
        a, b = args
        for x, y in ((a, b), (b, a)):
            if isinstance(x, Num):
                truth = x.value != 0.0
                if name == "and":
                    return y if truth else ZERO
                return ONE if truth else y
    return Op(name, tuple(args))


def if_(cond, then, orelse):
    if isinstance(cond, Num):
        return then if cond.value != 0.0 else orelse
    if then == orelse:
        return then
    return If(cond, then, orelse)


def call(fn: str, *args):
    """A call node; an elementary function of numbers is folded, and so is noEvent or
    smooth of a number."""
    if fn in FUNCTIONS and all(isinstance(a, Num) for a in args):
        value = apply_function(fn, [a.value for a in args])
        if math.isfinite(value):
            return Num(value)
    if fn in _TRANSPARENT and isinstance(args[-1], Num):
        return args[-1]
    return Call(fn, tuple(args))


_TRANSPARENT = ("noEvent", "smooth")


_BUILD = {"+": add, "-": sub, "neg": neg, "*": mul, "/": div, "^": power}
_FOLD = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
         "==": lambda a, b: a == b, "<>": lambda a, b: a != b, "and": lambda a, b: a != 0.0 and b != 0.0,
         "or": lambda a, b: a != 0.0 or b != 0.0, "not": lambda a: a == 0.0}


# ----------------------------------------------------------------------------- the functions on floats

def _sign(x):
    return 1.0 if x > 0.0 else -1.0 if x < 0.0 else 0.0


def _integer_div(x, y):
    q = x / y
    return float(math.trunc(q))


def _modulo(x, y):
    return x - math.floor(x / y) * y


def _remainder(x, y):
    return x - _integer_div(x, y) * y


FLOAT_FUNCTIONS = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos, "atan": math.atan,
    "atan2": math.atan2, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh, "exp": math.exp, "log": math.log,
    "log10": math.log10, "sqrt": math.sqrt, "abs": abs, "sign": _sign, "min": min, "max": max,
    "semiLinear": lambda x, kp, km: kp * x if x >= 0.0 else km * x,
    "div": _integer_div, "mod": _modulo, "rem": _remainder,
    "floor": lambda x: float(math.floor(x)), "ceil": lambda x: float(math.ceil(x)),
    "integer": lambda x: float(math.floor(x)),
}


def apply_function(fn: str, args) -> float:
    """``fn`` on floats; NaN outside its domain, infinity where it overflows (a residual
    that is not finite makes Newton shorten its step instead of raising)."""
    try:
        return float(FLOAT_FUNCTIONS[fn](*args))
    except (ValueError, ZeroDivisionError):
        return math.nan
    except OverflowError:
        return math.inf


# ----------------------------------------------------------------------------- traversal

def children(e) -> tuple:
    if isinstance(e, Op):
        return e.args
    if isinstance(e, Call):
        return e.args
    if isinstance(e, If):
        return (e.cond, e.then, e.orelse)
    if isinstance(e, Rel):
        return (e.lhs, e.rhs)
    return ()


def rebuild(e, new_children):
    """``e`` with its children replaced (folded again)."""
    if isinstance(e, Op):
        return op(e.op, *new_children)
    if isinstance(e, Call):
        out = call(e.fn, *new_children)
        return Call(e.fn, out.args, e.pos) if isinstance(out, Call) and e.pos is not None else out
    if isinstance(e, If):
        return if_(*new_children)
    if isinstance(e, Rel):
        return Rel(e.index, e.op, new_children[0], new_children[1], e.pos)
    return e


def transform(e, leaf):
    """Bottom-up rewrite: ``leaf(node)`` returns a replacement for a leaf (Var, Pre, Num,
    Time) or None to keep it; inner nodes are rebuilt from their rewritten children."""
    memo = {}

    def walk(node):
        key = id(node)
        if key in memo:
            return memo[key][1]
        kids = children(node)
        if kids:
            new = [walk(k) for k in kids]
            out = node if all(a is b for a, b in zip(new, kids)) else rebuild(node, new)
        else:
            replaced = leaf(node)
            out = node if replaced is None else replaced
        memo[key] = (node, out)
        return out
    return walk(e)


def walk_nodes(e):
    """Every node of ``e`` (pre-order)."""
    stack = [e]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(children(node))


def instances(e, frozen_relations: bool = True) -> set:
    """The (name, order) variable instances ``e`` reads as it is evaluated between events:
    the operands of a frozen relation are not read (``frozen_relations``), ``pre`` values
    are not instances."""
    out = set()
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, Var):
            out.add((node.name, node.order))
        elif isinstance(node, Rel) and frozen_relations:
            continue
        else:
            stack.extend(children(node))
    return out


def substitute(e, mapping: dict):
    """``e`` with each Var/Pre leaf replaced by ``mapping[(kind, name, order)]`` (kind "var"
    or "pre"; order 0 for pre) where present."""
    def leaf(node):
        if isinstance(node, Var):
            return mapping.get(("var", node.name, node.order))
        if isinstance(node, Pre):
            return mapping.get(("pre", node.name, 0))
        return None
    return transform(e, leaf)


# ----------------------------------------------------------------------------- derivatives

class NotDifferentiable(Exception):
    def __init__(self, what: str, pos=None):
        super().__init__(what)
        self.what, self.pos = what, pos


def partial(e, wrt):
    """The partial derivative of ``e`` with respect to the instance ``wrt`` = (name, order),
    relations held (piecewise: the derivative of the branch taken)."""
    return _derive(e, lambda node: ONE if (node.name, node.order) == wrt else ZERO, ZERO, {})


def time_derivative(e, rate_of):
    """d/dt of ``e``: ``rate_of(var)`` gives the time derivative of a variable leaf (its next
    derivative, zero for a discrete value, NotDifferentiable for an input)."""
    return _derive(e, rate_of, ONE, {})


def _derive(e, leaf_rate, time_rate, memo):
    key = id(e)
    hit = memo.get(key)
    if hit is not None:
        return hit[1]
    out = _derive_node(e, leaf_rate, time_rate, memo)
    memo[key] = (e, out)
    return out


def _derive_node(e, leaf_rate, time_rate, memo):
    def d(x):
        return _derive(x, leaf_rate, time_rate, memo)

    if isinstance(e, (Num, Pre, Rel)):
        return ZERO          # a relation is constant between events
    if isinstance(e, Time):
        return time_rate
    if isinstance(e, Var):
        return leaf_rate(e)
    if isinstance(e, If):
        return if_(e.cond, d(e.then), d(e.orelse))
    if isinstance(e, Op):
        name, args = e.op, e.args
        if name == "+":
            return add(d(args[0]), d(args[1]))
        if name == "-":
            return sub(d(args[0]), d(args[1]))
        if name == "neg":
            return neg(d(args[0]))
        if name == "*":
            a, b = args
            da, db = d(a), d(b)      # a factor with a zero rate drops its term (0 * b is not folded)
            if is_num(da, 0.0):
                return ZERO if is_num(db, 0.0) else mul(a, db)
            return mul(da, b) if is_num(db, 0.0) else add(mul(da, b), mul(a, db))
        if name == "/":
            a, b = args
            da, db = d(a), d(b)
            if is_num(db, 0.0):
                return ZERO if is_num(da, 0.0) else div(da, b)
            if is_num(da, 0.0):
                return neg(div(mul(a, db), mul(b, b)))
            return div(sub(mul(da, b), mul(a, db)), mul(b, b))
        if name == "^":
            a, b = args
            da, db = d(a), d(b)
            if is_num(db, 0.0):
                if is_num(da, 0.0):
                    return ZERO
                return mul(mul(b, power(a, sub(b, ONE))), da)
            return mul(e, add(mul(db, call("log", a)), div(mul(b, da), a)))
        if name in COMPARISONS or name in LOGICAL:
            return ZERO      # a Boolean is piecewise constant
        raise NotDifferentiable(f"operator {name}", e.pos)
    if isinstance(e, Call):
        return _derive_call(e, d)
    raise NotDifferentiable(type(e).__name__, getattr(e, "pos", None))


def _derive_call(e, d):
    fn, args = e.fn, e.args
    if fn == "noEvent":
        return call("noEvent", d(args[0]))
    if fn == "smooth":
        return d(args[1])
    if fn in ("sample", "initial", "terminal", "edge", "change") or fn in DISCONTINUOUS or fn == "sign":
        return ZERO
    a = args[0] if args else None
    da = d(a) if a is not None else ZERO
    if fn in ("min", "max"):
        b = args[1]
        first = op("<", a, b) if fn == "min" else op(">", a, b)
        return if_(Call("noEvent", (first,)), da, d(b))
    if fn == "semiLinear":
        return if_(Call("noEvent", (op(">=", a, ZERO),)), mul(args[1], da), mul(args[2], da))
    if fn == "atan2":
        y, x = args
        return div(sub(mul(x, d(y)), mul(y, d(x))), add(mul(x, x), mul(y, y)))
    rule = _CHAIN.get(fn)
    if rule is None:
        raise NotDifferentiable(f"function {fn}", e.pos)
    if is_num(da, 0.0):
        return ZERO
    return mul(rule(a, e), da)


# d f(a) / d a, given a and the call node f(a) itself
_CHAIN = {
    "sin": lambda a, e: call("cos", a),
    "cos": lambda a, e: neg(call("sin", a)),
    "tan": lambda a, e: div(ONE, mul(call("cos", a), call("cos", a))),
    "asin": lambda a, e: div(ONE, call("sqrt", sub(ONE, mul(a, a)))),
    "acos": lambda a, e: neg(div(ONE, call("sqrt", sub(ONE, mul(a, a))))),
    "atan": lambda a, e: div(ONE, add(ONE, mul(a, a))),
    "sinh": lambda a, e: call("cosh", a),
    "cosh": lambda a, e: call("sinh", a),
    "tanh": lambda a, e: sub(ONE, mul(e, e)),
    "exp": lambda a, e: e,
    "log": lambda a, e: div(ONE, a),
    "log10": lambda a, e: div(ONE, mul(a, Num(math.log(10.0)))),
    "sqrt": lambda a, e: div(Num(0.5), e),
    "abs": lambda a, e: call("sign", a),
}


def linear_split(e, wrt):
    """``(a, b)`` with ``e == a*wrt + b`` where ``a`` and ``b`` do not read ``wrt``, or None
    when ``e`` is not linear in the instance ``wrt``."""
    if wrt not in instances(e):
        return ZERO, e
    a = partial(e, wrt)
    if wrt in instances(a):
        return None
    b = _set(e, wrt, ZERO)
    if wrt in instances(b):
        return None
    return a, b


def _set(e, wrt, value):
    name, order = wrt

    def leaf(node):
        if isinstance(node, Var) and node.name == name and node.order == order:
            return value
        return None
    return transform(e, leaf)
