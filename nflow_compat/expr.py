"""Safe arithmetic for string parameters: a small recursive-descent parser, never ``eval``.

Grammar (MATLAB-like, what nflow users type into a parameter field)::

    expr    := term (('+' | '-') term)*
    term    := unary (('*' | '/' | '.*' | './') unary)*
    unary   := ('+' | '-') unary | power
    power   := primary (('^' | '.^') ('+' | '-')* primary)*   # -2^2 = -4, 2^-1 = 0.5, 2^3^2 = 64
    primary := NUMBER | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')' | '[' rows ']'
    rows    := row (';' row)*      row := expr ((',' | <space>) expr)*

Values are IEEE doubles (Python floats) or numpy arrays, so no input can make the
evaluator do unbounded work; the text length, nesting depth and array sizes are capped.
"""
from __future__ import annotations

import math
import re

import numpy as np

from .errors import DiagramError

MAX_LENGTH = 10_000
MAX_DEPTH = 64
MAX_ELEMENTS = 1_000_000

_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
    r"|(?P<op>\.\*|\./|\.\^|[-+*/^(),;\[\]]))"
)

_CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "Inf": math.inf,
              "nan": math.nan, "NaN": math.nan, "eps": 2.220446049250313e-16,
              "true": 1.0, "false": 0.0}


def _fix(x):
    return np.trunc(x)


def _round_away(x):
    # C/MATLAB round: half away from zero (numpy's rounds half to even).
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _mod(a, b):
    # MATLAB mod: result has the sign of b; mod(a, 0) = a.
    return np.where(b == 0, a, a - np.floor(a / np.where(b == 0, 1, b)) * b)


def _rem(a, b):
    return np.where(b == 0, a, np.fmod(a, np.where(b == 0, 1, b)))


_FUNCTIONS = {
    "sin": (1, np.sin), "cos": (1, np.cos), "tan": (1, np.tan),
    "asin": (1, np.arcsin), "acos": (1, np.arccos), "atan": (1, np.arctan),
    "sinh": (1, np.sinh), "cosh": (1, np.cosh), "tanh": (1, np.tanh),
    "exp": (1, np.exp), "log": (1, np.log), "log10": (1, np.log10), "log2": (1, np.log2),
    "sqrt": (1, np.sqrt), "abs": (1, np.abs), "sign": (1, np.sign),
    "floor": (1, np.floor), "ceil": (1, np.ceil), "round": (1, _round_away), "fix": (1, _fix),
    "atan2": (2, np.arctan2), "hypot": (2, np.hypot), "pow": (2, np.power),
    "min": (2, np.minimum), "max": (2, np.maximum), "mod": (2, _mod), "rem": (2, _rem),
}


def _tokenize(text: str):
    """Tokens as (kind, value, space_before)."""
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise _Fail(f"unexpected character {text[pos:].lstrip()[:1]!r}")
        space = m.start(m.lastgroup) > pos or pos == 0
        kind = m.lastgroup
        tokens.append((kind, m.group(kind), space))
        pos = m.end()
    tokens.append(("end", "", True))
    return tokens


class _Fail(Exception):
    pass


class _Parser:
    def __init__(self, text, variables):
        self.tokens = _tokenize(text)
        self.i = 0
        self.variables = variables
        self.depth = 0
        self.in_brackets = 0

    # -- helpers
    def peek(self, offset=0):
        return self.tokens[min(self.i + offset, len(self.tokens) - 1)]

    def take(self):
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def expect(self, value):
        tok = self.take()
        if tok[1] != value:
            raise _Fail(f"expected {value!r}, found {tok[1] or 'end of text'!r}")

    def enter(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Fail(f"expression nested deeper than {MAX_DEPTH}")

    # -- grammar
    def parse(self):
        value = self.expr()
        if self.peek()[0] != "end":
            raise _Fail(f"unexpected {self.peek()[1]!r}")
        return value

    def expr(self):
        self.enter()
        value = self.term()
        while self.peek()[1] in ("+", "-") and not self._element_break():
            op = self.take()[1]
            rhs = self.term()
            value = _binary(op, value, rhs)
        self.depth -= 1
        return value

    def _element_break(self):
        """Inside [...], '1 -2' is two elements while '1 - 2' and '1-2' are one."""
        if not self.in_brackets:
            return False
        op = self.peek()
        after = self.peek(1)
        return op[2] and not after[2]

    def term(self):
        value = self.unary()
        while self.peek()[1] in ("*", "/", ".*", "./"):
            op = self.take()[1]
            value = _binary(op, value, self.unary())
        return value

    def unary(self):
        if self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            self.enter()
            value = self.unary()
            self.depth -= 1
            return -value if op == "-" else value
        return self.power()

    def power(self):
        # MATLAB's '^' is left-associative (2^3^2 = 64) and binds tighter than unary minus.
        base = self.primary()
        while self.peek()[1] in ("^", ".^"):
            op = self.take()[1]
            base = _binary(op, base, self.exponent())
        return base

    def exponent(self):
        if self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            self.enter()
            value = self.exponent()
            self.depth -= 1
            return -value if op == "-" else value
        return self.primary()

    def primary(self):
        kind, value, _ = self.take()
        if kind == "num":
            return float(value)
        if kind == "name":
            if self.peek()[1] == "(" and value in _FUNCTIONS:
                return self.call(value)
            if value in self.variables:
                return self.variables[value]
            if value in _CONSTANTS:
                return _CONSTANTS[value]
            if value in _FUNCTIONS:
                raise _Fail(f"function {value!r} needs arguments")
            raise _Undefined(value)
        if value == "(":
            saved, self.in_brackets = self.in_brackets, 0
            inner = self.expr()
            self.in_brackets = saved
            self.expect(")")
            return inner
        if value == "[":
            return self.matrix()
        raise _Fail(f"unexpected {value or 'end of text'!r}")

    def call(self, name):
        arity, fn = _FUNCTIONS[name]
        self.expect("(")
        saved, self.in_brackets = self.in_brackets, 0
        args = [self.expr()]
        while self.peek()[1] == ",":
            self.take()
            args.append(self.expr())
        self.in_brackets = saved
        self.expect(")")
        if len(args) != arity:
            raise _Fail(f"{name}() takes {arity} argument(s), got {len(args)}")
        with np.errstate(all="ignore"):
            return _normalize(fn(*[np.asarray(a, dtype=float) for a in args]))

    def matrix(self):
        self.enter()
        self.in_brackets += 1
        rows, row = [], []
        while True:
            tok = self.peek()
            if tok[1] == "]":
                self.take()
                break
            if tok[1] == ";":
                self.take()
                rows.append(row)
                row = []
                continue
            if tok[1] == ",":
                self.take()
                continue
            if tok[0] == "end":
                raise _Fail("missing ']'")
            row.append(self.expr())
        rows.append(row)
        self.in_brackets -= 1
        self.depth -= 1
        rows = [r for r in rows if r]
        if not rows:
            return np.zeros(0)
        built = [np.concatenate([np.ravel(np.asarray(x, dtype=float)) for x in r]) for r in rows]
        if len(built) == 1:
            return built[0]
        if len({len(r) for r in built}) != 1:
            raise _Fail("matrix rows have different lengths")
        return np.vstack(built)


class _Undefined(Exception):
    pass


def _normalize(value):
    arr = np.asarray(value, dtype=float)
    if arr.size > MAX_ELEMENTS:
        raise _Fail(f"array larger than {MAX_ELEMENTS} elements")
    return float(arr) if arr.ndim == 0 else arr


def _binary(op, a, b):
    if op in ("*", "/", "^") and np.ndim(a) and np.ndim(b):
        # MATLAB's matrix product/division/power; only the element-wise forms are offered.
        raise _Fail(f"'{op}' between two arrays: use '.{op}' for the element-wise operation")
    with np.errstate(all="ignore"):
        try:
            if op == "+":
                r = np.add(a, b)
            elif op == "-":
                r = np.subtract(a, b)
            elif op in ("*", ".*"):
                r = np.multiply(a, b)
            elif op in ("/", "./"):
                r = np.true_divide(a, b)
            else:
                r = np.power(np.asarray(a, dtype=float), b)
        except ValueError as exc:  # shape mismatch
            raise _Fail(f"array sizes do not agree for '{op}'") from exc
    return _normalize(r)


def evaluate(text: str, variables: dict | None = None, *, path=None, block=None, param=None):
    """Evaluate ``text`` over ``variables``; float for a scalar, numpy array otherwise."""
    where = dict(path=path, block=block, param=param)
    if len(text) > MAX_LENGTH:
        raise DiagramError("expression_too_long",
                           f"expression of {len(text)} characters (limit {MAX_LENGTH})", **where)
    try:
        return _Parser(text, variables or {}).parse()
    except _Undefined as exc:
        known = ", ".join(sorted(variables or {})) or "none"
        raise DiagramError("undefined_variable",
                           f"expression {text!r} uses undefined variable {exc.args[0]!r} "
                           f"(diagram variables: {known})", **where) from None
    except _Fail as exc:
        raise DiagramError("bad_expression", f"cannot evaluate {text!r}: {exc}", **where) from None
