"""Expression trees (``symbolic``) as trees of Python closures over one list of floats.

``Closures(slots, relations, events).build(expr)`` returns ``f(v) -> float`` where ``v`` is
the model's value vector (``slots`` maps ``("var", name, order)`` and ``("pre", name, 0)``
to its indices, ``("time",)`` to the time). A frozen relation reads the list
``relations`` (the runtime commits its values at events); ``live=True`` evaluates it
instead (the start point of the index reduction). The event operators read ``events``
(``EventFlags``). No source text is made and nothing is evaluated as Python: each node
kind is one closure below, each function one entry of ``symbolic.FLOAT_FUNCTIONS``.

Arithmetic follows IEEE where Python would raise: ``x/0`` is an infinity (NaN for 0/0),
an overflowing power an infinity, a function outside its domain NaN; the runtime turns a
non-finite result into a typed error naming the equation, and Newton shortens its step.
"""
from __future__ import annotations

import math

from . import symbolic as sym
from .symbolic import ModelicaUnsupported

_INF, _NAN = math.inf, math.nan


def safe_div(a: float, b: float) -> float:
    if b != 0.0:
        return a / b
    if a == 0.0 or a != a:
        return _NAN
    return math.copysign(_INF, a) * math.copysign(1.0, b)


def safe_pow(a: float, b: float) -> float:
    try:
        out = a ** b
    except ZeroDivisionError:
        return _INF
    except OverflowError:
        return _INF
    return _NAN if isinstance(out, complex) else float(out)


class EventFlags:
    """What the event operators read: ``initial`` (1.0 during the initialization event
    iteration), ``samples[k]`` (1.0 while sample occurrence k ticks)."""

    __slots__ = ("initial", "samples")

    def __init__(self, n_samples: int):
        self.initial = 0.0
        self.samples = [0.0] * n_samples


_BINARY = {
    "+": lambda f, g: lambda v: f(v) + g(v),
    "-": lambda f, g: lambda v: f(v) - g(v),
    "*": lambda f, g: lambda v: f(v) * g(v),
    "/": lambda f, g: lambda v: safe_div(f(v), g(v)),
    "^": lambda f, g: lambda v: safe_pow(f(v), g(v)),
    "<": lambda f, g: lambda v: 1.0 if f(v) < g(v) else 0.0,
    "<=": lambda f, g: lambda v: 1.0 if f(v) <= g(v) else 0.0,
    ">": lambda f, g: lambda v: 1.0 if f(v) > g(v) else 0.0,
    ">=": lambda f, g: lambda v: 1.0 if f(v) >= g(v) else 0.0,
    "==": lambda f, g: lambda v: 1.0 if f(v) == g(v) else 0.0,
    "<>": lambda f, g: lambda v: 1.0 if f(v) != g(v) else 0.0,
    "and": lambda f, g: lambda v: 1.0 if f(v) != 0.0 and g(v) != 0.0 else 0.0,
    "or": lambda f, g: lambda v: 1.0 if f(v) != 0.0 or g(v) != 0.0 else 0.0,
}


class Closures:
    """Builds closures for one model layout (see the module docstring). ``samples`` maps
    each ``sample(...)`` call node to its index in ``events.samples``."""

    def __init__(self, slots: dict, relations: list, events: EventFlags, samples: dict | None = None,
                 live: bool = False):
        self.slots, self.relations, self.events = slots, relations, events
        self.samples = samples or {}
        self.live = live
        self.memo = {}

    def slot(self, key, pos=None) -> int:
        index = self.slots.get(key)
        if index is None:
            what = {"var": "variable", "pre": "pre() of"}.get(key[0], key[0])
            name = key[1] if len(key) > 1 else ""
            if key[0] == "var" and key[2]:
                name = f"der({name})" if key[2] == 1 else f"the derivative {key[2]} of {name}"
            raise ModelicaUnsupported(f"{what} {name} has no value here (it is read where the model cannot "
                                      "compute it)", pos)
        return index

    def build(self, e):
        key = id(e)
        hit = self.memo.get(key)
        if hit is not None and hit[0] is e:
            return hit[1]
        f = self._build(e)
        self.memo[key] = (e, f)
        return f

    def _build(self, e):
        if isinstance(e, sym.Num):
            c = e.value
            return lambda v: c
        if isinstance(e, sym.Var):
            i = self.slot(("var", e.name, e.order), e.pos)
            return lambda v: v[i]
        if isinstance(e, sym.Time):
            i = self.slot(("time",))
            return lambda v: v[i]
        if isinstance(e, sym.Pre):
            i = self.slot(("pre", e.name, 0), e.pos)
            return lambda v: v[i]
        if isinstance(e, sym.Rel):
            if self.live:
                return _BINARY[e.op](self.build(e.lhs), self.build(e.rhs))
            k, values = e.index, self.relations
            return lambda v: values[k]
        if isinstance(e, sym.If):
            c, a, b = self.build(e.cond), self.build(e.then), self.build(e.orelse)
            return lambda v: a(v) if c(v) != 0.0 else b(v)
        if isinstance(e, sym.Op):
            return self._op(e)
        if isinstance(e, sym.Call):
            return self._call(e)
        raise ModelicaUnsupported(f"the expression {type(e).__name__}", getattr(e, "pos", None))

    def _op(self, e):
        if e.op == "neg":
            f = self.build(e.args[0])
            return lambda v: -f(v)
        if e.op == "not":
            f = self.build(e.args[0])
            return lambda v: 1.0 if f(v) == 0.0 else 0.0
        maker = _BINARY.get(e.op)
        if maker is None:
            raise ModelicaUnsupported(f"the operator {e.op}", e.pos)
        return maker(self.build(e.args[0]), self.build(e.args[1]))

    def _call(self, e):
        fn = e.fn
        if fn == "noEvent":
            return self.build(e.args[0])
        if fn == "smooth":
            return self.build(e.args[1])
        if fn == "initial":
            flags = self.events
            return lambda v: flags.initial
        if fn == "terminal":
            return lambda v: 0.0
        if fn == "sample":
            k = self.samples.get(e)
            if k is None:
                raise ModelicaUnsupported("sample() outside a when-condition", e.pos)
            ticks = self.events.samples
            return lambda v: ticks[k]
        if fn in ("edge", "change"):
            (arg,) = e.args
            if not isinstance(arg, sym.Var) or arg.order:
                raise ModelicaUnsupported(f"{fn}() of an expression (only {fn}(variable) is supported)", e.pos)
            i, j = self.slot(("var", arg.name, 0), e.pos), self.slot(("pre", arg.name, 0), e.pos)
            if fn == "edge":
                return lambda v: 1.0 if v[i] != 0.0 and v[j] == 0.0 else 0.0
            return lambda v: 1.0 if v[i] != v[j] else 0.0
        function = sym.FLOAT_FUNCTIONS.get(fn)
        if function is None:
            raise ModelicaUnsupported(f"the function {fn}()", e.pos)
        args = [self.build(a) for a in e.args]
        apply = sym.apply_function
        if len(args) == 1:
            (f,) = args
            if fn in _TOTAL:
                g = _TOTAL[fn]
                return lambda v: g(f(v))
            return lambda v: apply(fn, (f(v),))
        if len(args) == 2:
            f, g = args
            return lambda v: apply(fn, (f(v), g(v)))
        return lambda v: apply(fn, [f(v) for f in args])


def _total_sin(x):
    return math.sin(x) if -1e300 < x < 1e300 else _NAN


def _total_cos(x):
    return math.cos(x) if -1e300 < x < 1e300 else _NAN


# one-argument functions defined on every float (no domain check needed)
_TOTAL = {"abs": abs, "sin": _total_sin, "cos": _total_cos, "atan": math.atan, "tanh": math.tanh,
          "sign": lambda x: 1.0 if x > 0.0 else -1.0 if x < 0.0 else 0.0}
