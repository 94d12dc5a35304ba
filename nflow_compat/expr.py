"""Safe arithmetic for string parameters: a small recursive-descent parser, never ``eval``.

Grammar (MATLAB-like, what nflow users type into a parameter field)::

    expr    := term (('+' | '-') term)*
    term    := unary (('*' | '/' | '.*' | './') unary)*
    unary   := ('+' | '-') unary | power
    power   := primary (('^' | '.^') ('+' | '-')* primary)*   # -2^2 = -4, 2^-1 = 0.5, 2^3^2 = 64
    primary := NUMBER | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')' | '[' rows ']'
    rows    := row (';' row)*      row := expr ((',' | <space>) expr)*

Values are IEEE doubles (Python floats) or numpy arrays, so no input can make the
evaluator do unbounded work; the text length, nesting depth and array sizes are capped,
and so is a number written as an exponent (``x^1e9``): ``limits()`` sets the caller's
length and exponent limits (``Limits.max_expression_length`` / ``max_exponent``).
"""
from __future__ import annotations

import contextvars
import math
import re
from contextlib import contextmanager

import numpy as np

from .errors import DiagramError
from .signals import round_half_away

MAX_LENGTH = 10_000
MAX_DEPTH = 64
MAX_ELEMENTS = 1_000_000
MAX_EXPONENT = 1_000_000.0

# (max text length, max |exponent|) of the run in progress: ``api`` sets them from the
# caller's ``Limits`` for the duration of a call (``limits()``); these defaults otherwise.
_LIMITS = contextvars.ContextVar("nflow_expression_limits", default=(MAX_LENGTH, MAX_EXPONENT))


@contextmanager
def limits(max_length: int = MAX_LENGTH, max_exponent: float = MAX_EXPONENT):
    """Expression limits for the code run inside the ``with`` block (this thread/task)."""
    token = _LIMITS.set((max_length, max_exponent))
    try:
        yield
    finally:
        _LIMITS.reset(token)


def _check_exponent(value, max_exponent: float):
    """An exponent beyond the limit (or not finite) is refused before any power is taken."""
    mag = np.abs(np.asarray(value, dtype=float))
    if np.any(mag > max_exponent):
        raise _Exponent(f"exponent {_show_number(value)} is larger in magnitude than the limit {max_exponent:g}")


def _show_number(value) -> str:
    arr = np.asarray(value, dtype=float).reshape(-1)
    return f"{arr[0]:g}" if arr.size == 1 else f"array (max |x| {np.nanmax(np.abs(arr)):g})"

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
    # C/MATLAB round: half away from zero (numpy's rounds half to even), exactly.
    return round_half_away(np.asarray(x, dtype=float))


def floor_mod(a, b):
    """MATLAB's (and nflow mathFunction's) mod element-wise: the sign of b, mod(a, 0) = a.
    Built on C fmod, which is exact, so no a/b can overflow or round."""
    with np.errstate(invalid="ignore"):
        r = np.fmod(a, b)
    r = np.where((r != 0.0) & ((r < 0.0) != (b < 0.0)), r + b, r)
    return np.where(b == 0.0, a, r).astype(float)


_FUNCTIONS = {
    "sin": (1, np.sin), "cos": (1, np.cos), "tan": (1, np.tan),
    "asin": (1, np.arcsin), "acos": (1, np.arccos), "atan": (1, np.arctan),
    "sinh": (1, np.sinh), "cosh": (1, np.cosh), "tanh": (1, np.tanh),
    "exp": (1, np.exp), "log": (1, np.log), "log10": (1, np.log10), "log2": (1, np.log2),
    "sqrt": (1, np.sqrt), "abs": (1, np.abs), "sign": (1, np.sign),
    "floor": (1, np.floor), "ceil": (1, np.ceil), "round": (1, _round_away), "fix": (1, _fix),
    "atan2": (2, np.arctan2), "hypot": (2, np.hypot), "pow": (2, np.power),
    "min": (2, np.minimum), "max": (2, np.maximum), "mod": (2, floor_mod),
    "rem": (2, np.fmod),   # C fmod, as MATLAB's rem: the sign of a, and rem(a, 0) is NaN
}


def _tokenize(text: str, pattern=_TOKEN):
    """Tokens as (kind, value, space_before), read with ``pattern`` (groups num, name, op)."""
    tokens, pos = [], 0
    while pos < len(text):
        m = pattern.match(text, pos)
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


class _TokenStream:
    """Token cursor and the checks both parsers share."""

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

    def literal_ahead(self) -> bool:
        """The next operand is a number written in the text (after any signs)."""
        j = self.i
        while self.tokens[min(j, len(self.tokens) - 1)][1] in ("+", "-"):
            j += 1
        return self.tokens[min(j, len(self.tokens) - 1)][0] == "num"

    def literal_argument_ahead(self) -> bool:
        """The next argument is just a number written in the text (signs allowed)."""
        if not self.literal_ahead():
            return False
        j = self.i
        while self.tokens[j][1] in ("+", "-"):
            j += 1
        return self.tokens[min(j + 1, len(self.tokens) - 1)][1] in (",", ")")

    in_brackets = 0      # inside [...]: a space separates elements (the array grammars set it)

    def arguments(self) -> tuple:
        """A call's arguments after its name, ``'(' expr (',' expr)* ')'`` (brackets do not
        reach inside them), and per argument after the first whether it is a number
        written in the text (``literal_argument_ahead``)."""
        self.expect("(")
        saved, self.in_brackets = self.in_brackets, 0
        args, literal = [self.expr()], []
        while self.peek()[1] == ",":
            self.take()
            literal.append(self.literal_argument_ahead())
            args.append(self.expr())
        self.in_brackets = saved
        self.expect(")")
        return args, literal

    def element_break(self) -> bool:
        """Inside [...], '1 -2' is two elements while '1 - 2' and '1-2' are one."""
        return bool(self.in_brackets) and self.peek()[2] and not self.peek(1)[2]

    def bracket_rows(self, element) -> list:
        """The rows of ``[...]`` after its '[' (';' ends a row, ',' or a space separates
        elements), each element read by ``element()``; empty rows dropped."""
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
            row.append(element())
        rows.append(row)
        self.in_brackets -= 1
        self.depth -= 1
        return [r for r in rows if r]

    def parse(self):
        result = self.expr()
        if self.peek()[0] != "end":
            raise _Fail(f"unexpected {self.peek()[1]!r}")
        return result


class _ArrayGrammar(_TokenStream):
    """The arithmetic of the array grammars (``evaluate``'s, and ``vector_expr``'s, which adds
    comparisons): MATLAB's precedence, unary minus below '^', '^' left-associative (2^3^2 =
    64). A subclass reads ``primary()`` and says how operands combine (``combine``,
    ``negate``) and what a literal exponent's value is (``literal_value``)."""

    def sum(self):
        value = self.term()
        while self.peek()[1] in ("+", "-") and not self.element_break():
            op = self.take()[1]
            value = self.combine(op, value, self.term())
        return value

    def term(self):
        value = self.unary()
        while self.peek()[1] in ("*", "/", ".*", "./"):
            op = self.take()[1]
            value = self.combine(op, value, self.unary())
        return value

    def unary(self):
        if self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            self.enter()
            value = self.unary()
            self.depth -= 1
            return self.negate(value) if op == "-" else value
        return self.power()

    def power(self):
        base = self.primary()
        while self.peek()[1] in ("^", ".^"):
            op = self.take()[1]
            literal = self.literal_ahead()
            exponent = self.exponent()
            if literal:
                _check_exponent(self.literal_value(exponent), self.max_exponent)
            base = self.combine(op, base, exponent)
        return base

    def exponent(self):
        if self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            self.enter()
            value = self.exponent()
            self.depth -= 1
            return self.negate(value) if op == "-" else value
        return self.primary()


class _Parser(_ArrayGrammar):
    def __init__(self, text, variables, max_exponent=MAX_EXPONENT):
        self.tokens = _tokenize(text)
        self.i = 0
        self.variables = variables
        self.depth = 0
        self.in_brackets = 0
        self.max_exponent = max_exponent

    # -- grammar: values as they are read
    combine = staticmethod(lambda op, a, b: _binary(op, a, b))
    negate = staticmethod(lambda value: -value)
    literal_value = staticmethod(lambda value: value)

    def expr(self):
        self.enter()
        value = self.sum()
        self.depth -= 1
        return value

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
        args, literal = self.arguments()
        if len(args) != arity:
            raise _Fail(f"{name}() takes {arity} argument(s), got {len(args)}")
        if name == "pow" and literal[0]:
            _check_exponent(args[1], self.max_exponent)
        with np.errstate(all="ignore"):
            return _normalize(fn(*[np.asarray(a, dtype=float) for a in args]))

    def matrix(self):
        rows = self.bracket_rows(self.expr)
        if not rows:
            return np.zeros(0)
        if sum(np.size(x) for r in rows for x in r) > MAX_ELEMENTS:   # before concatenating
            raise _Fail(f"array larger than {MAX_ELEMENTS} elements")
        built = [np.concatenate([np.ravel(np.asarray(x, dtype=float)) for x in r]) for r in rows]
        if len(built) == 1:
            return built[0]
        if len({len(r) for r in built}) != 1:
            raise _Fail("matrix rows have different lengths")
        return np.vstack(built)


class _Undefined(Exception):
    pass


class _Exponent(Exception):
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
    max_length, max_exponent = _LIMITS.get()
    if len(text) > max_length:
        raise DiagramError("expression_too_long",
                           f"expression of {len(text)} characters (limit {max_length})", **where)
    try:
        return _Parser(text, variables or {}, max_exponent).parse()
    except _Exponent as exc:
        raise DiagramError("exponent_too_large", f"cannot evaluate {text!r}: {exc}", **where) from None
    except _Undefined as exc:
        known = ", ".join(sorted(variables or {})) or "none"
        raise DiagramError("undefined_variable",
                           f"expression {text!r} uses undefined variable {exc.args[0]!r} "
                           f"(diagram variables: {known})", **where) from None
    except _Fail as exc:
        raise DiagramError("bad_expression", f"cannot evaluate {text!r}: {exc}", **where) from None


# ----------------------------------------------------------------------------- compiled scalar expressions
#
# ``evaluate`` reads a text once (a parameter); a block that evaluates the same text at
# every step compiles it instead: ``compile_scalar`` parses it once into a tree of small
# Python closures over named inputs (no eval/exec/compile), folds constant sub-trees, and
# returns ``f(values) -> float``. The grammar is ``evaluate``'s minus the array parts
# ('[...]', '.*', './', '.^'): same precedence (unary minus below '^', '^' left-associative),
# same name resolution (inputs, then variables, then constants). The arithmetic is IEEE like
# numpy's: 1/0 = inf, 0/0 = NaN, sqrt(-1) = NaN, log(0) = -inf, overflow = +-inf; nothing raises.

class ExpressionError(ValueError):
    """Why a text does not compile: syntax, an unknown name, a wrong argument count."""


_NAN, _INF = math.nan, math.inf


def _is_odd_integer(y: float) -> bool:
    return math.isfinite(y) and y == math.floor(y) and math.fmod(y, 2.0) != 0.0


def _s_div(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0.0 or a != a:
            return _NAN
        return math.copysign(_INF, a) * math.copysign(1.0, b)


def _s_pow(a: float, b: float) -> float:
    try:
        return math.pow(a, b)
    except OverflowError:
        return math.copysign(_INF, a) if _is_odd_integer(b) else _INF
    except ValueError:
        if a == 0.0:  # 0 to a negative power: a pole
            return math.copysign(_INF, a) if _is_odd_integer(b) else _INF
        return _NAN   # a negative base to a non-integer power


def _s_sqrt(x: float) -> float:
    return _NAN if x < 0.0 else math.sqrt(x)


def _logarithm(fn):
    def log(x: float) -> float:
        if x > 0.0:
            return fn(x)
        if x == 0.0:
            return -_INF
        return _NAN if x < 0.0 else x   # negative, or NaN
    return log


def _domain(fn):
    """fn with NaN for arguments outside its domain (asin(2), sin(inf))."""
    def f(x: float) -> float:
        try:
            return fn(x)
        except ValueError:
            return _NAN
    return f


def _s_exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return _INF


def _s_sinh(x: float) -> float:
    try:
        return math.sinh(x)
    except OverflowError:
        return math.copysign(_INF, x)


def _s_cosh(x: float) -> float:
    try:
        return math.cosh(x)
    except OverflowError:
        return _INF


def _s_floor(x: float) -> float:
    # math.floor returns an int (and fails on inf/NaN); the sign keeps floor(-0.0) = -0.0
    return math.copysign(float(math.floor(x)), x) if math.isfinite(x) else x


def _s_ceil(x: float) -> float:
    return math.copysign(float(math.ceil(x)), x) if math.isfinite(x) else x


def _s_fix(x: float) -> float:
    return math.copysign(float(math.trunc(x)), x) if math.isfinite(x) else x


def _s_sign(x: float) -> float:
    if x > 0.0:
        return 1.0
    if x < 0.0:
        return -1.0
    return x    # +-0 and NaN


def _s_sinc(x: float) -> float:
    """Normalized sinc, sin(pi x)/(pi x), 1 at 0 (MATLAB's and Nelson's sinc)."""
    if x == 0.0:
        return 1.0
    y = math.pi * x
    try:
        return math.sin(y) / y
    except ValueError:   # sin(inf)
        return _NAN


def _s_min(a: float, b: float) -> float:
    if a != a or b != b:
        return _NAN      # NaN propagates (numpy's minimum)
    return b if b < a else a


def _s_max(a: float, b: float) -> float:
    if a != a or b != b:
        return _NAN
    return b if b > a else a


def _s_clamp(x: float, lo: float, hi: float) -> float:
    """clamp(x, lo, hi) = min(max(x, lo), hi) (std::clamp's argument order)."""
    return _s_min(_s_max(x, lo), hi)


def _s_rem(a: float, b: float) -> float:
    try:
        return math.fmod(a, b)
    except ValueError:   # fmod(inf, b) and fmod(a, 0) are NaN in C (and MATLAB's rem)
        return _NAN


def floor_mod_scalar(a: float, b: float) -> float:
    """``floor_mod`` of two floats."""
    if b == 0.0:
        return a
    r = _s_rem(a, b)
    if r != 0.0 and (r < 0.0) != (b < 0.0):
        r += b
    return r


def _s_round(x: float) -> float:
    return round_half_away(x)


SCALAR_FUNCTIONS = {
    "sin": (1, _domain(math.sin)), "cos": (1, _domain(math.cos)), "tan": (1, _domain(math.tan)),
    "asin": (1, _domain(math.asin)), "acos": (1, _domain(math.acos)), "atan": (1, math.atan),
    "sinh": (1, _s_sinh), "cosh": (1, _s_cosh), "tanh": (1, math.tanh),
    "exp": (1, _s_exp), "log": (1, _logarithm(math.log)), "log10": (1, _logarithm(math.log10)),
    "log2": (1, _logarithm(math.log2)), "sqrt": (1, _s_sqrt), "abs": (1, math.fabs), "sign": (1, _s_sign),
    "floor": (1, _s_floor), "ceil": (1, _s_ceil), "round": (1, _s_round), "fix": (1, _s_fix),
    "sinc": (1, _s_sinc),
    "atan2": (2, math.atan2), "hypot": (2, math.hypot), "pow": (2, _s_pow),
    "min": (2, _s_min), "max": (2, _s_max), "mod": (2, floor_mod_scalar), "rem": (2, _s_rem),
    "clamp": (3, _s_clamp),
}

_OPERATORS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
              "/": _s_div, "^": _s_pow}

# Above this many operands a left-to-right chain (1+2+...+n) runs as one loop instead of
# nested closures, so a long text cannot exhaust Python's recursion limit.
_CHAIN_UNROLL = 16


def _const(value: float):
    return ("c", float(value))


def _as_fn(node):
    if node[0] == "c":
        c = node[1]
        return lambda a: c
    return node[1]


def _neg(node):
    if node[0] == "c":
        return _const(-node[1])
    g = node[1]
    return ("f", lambda a: -g(a))


def _binary_node(op: str, x, y):
    if x[0] == "c" and y[0] == "c":
        return _const(_OPERATORS[op](x[1], y[1]))
    if op in ("+", "-", "*"):
        return ("f", _arith(op, x, y))
    fn = _OPERATORS[op]
    if op == "/" and y[0] == "c" and y[1] != 0.0:
        g, c = x[1], y[1]
        return ("f", lambda a: g(a) / c)   # a nonzero constant divisor never raises
    g, h = _as_fn(x), _as_fn(y)
    return ("f", lambda a: fn(g(a), h(a)))


def _arith(op, x, y):
    """+ - * inline (one closure call per operand, none for a constant)."""
    if x[0] == "c":
        c, h = x[1], y[1]
        return {"+": lambda a: c + h(a), "-": lambda a: c - h(a), "*": lambda a: c * h(a)}[op]
    g = x[1]
    if y[0] == "c":
        c = y[1]
        return {"+": lambda a: g(a) + c, "-": lambda a: g(a) - c, "*": lambda a: g(a) * c}[op]
    h = y[1]
    return {"+": lambda a: g(a) + h(a), "-": lambda a: g(a) - h(a), "*": lambda a: g(a) * h(a)}[op]


def _chain(first, rest: list):
    """first op1 x1 op2 x2 ... evaluated left to right."""
    if len(rest) < _CHAIN_UNROLL:
        node = first
        for op, operand in rest:
            node = _binary_node(op, node, operand)
        return node
    head = _as_fn(first)
    steps = tuple((_OPERATORS[op], _as_fn(operand)) for op, operand in rest)

    def run(a):
        v = head(a)
        for fn, g in steps:
            v = fn(v, g(a))
        return v
    return ("f", run)


def _call_node(fn, args: list):
    if all(node[0] == "c" for node in args):
        return _const(fn(*(node[1] for node in args)))
    fs = [_as_fn(node) for node in args]
    if len(fs) == 1:
        g = fs[0]
        return ("f", lambda a: fn(g(a)))
    if len(fs) == 2:
        g, h = fs
        return ("f", lambda a: fn(g(a), h(a)))
    if len(fs) == 3:
        g, h, k = fs
        return ("f", lambda a: fn(g(a), h(a), k(a)))
    return ("f", lambda a: fn(*[f(a) for f in fs]))


class _Compiler(_TokenStream):
    """Recursive descent over ``_tokenize``'s tokens, building closure nodes:
    ("c", value) for a constant, ("f", fn) with fn(values) for everything else."""

    max_exponent = MAX_EXPONENT

    def __init__(self, text, inputs, variables, functions, constants):
        self.tokens = _tokenize(text)
        self.i = 0
        self.depth = 0
        self.inputs = {name: k for k, name in enumerate(inputs)}
        self.variables = variables
        self.functions = functions
        self.constants = constants

    def expr(self):
        self.enter()
        first, rest = self.term(), []
        while self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            rest.append((op, self.term()))
        self.depth -= 1
        return _chain(first, rest)

    def term(self):
        first, rest = self.unary(), []
        while self.peek()[1] in ("*", "/", ".*", "./"):
            op = self._scalar_op(self.take()[1])
            rest.append((op, self.unary()))
        return _chain(first, rest)

    def unary(self):
        if self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            self.enter()
            node = self.unary()
            self.depth -= 1
            return _neg(node) if op == "-" else node
        return self.power()

    def power(self):
        first, rest = self.primary(), []
        while self.peek()[1] in ("^", ".^"):
            self._scalar_op(self.take()[1])
            literal = self.literal_ahead()
            exponent = self.exponent()
            if literal:
                _check_exponent(exponent[1], self.max_exponent)
            rest.append(("^", exponent))
        return _chain(first, rest)

    def exponent(self):
        if self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            self.enter()
            node = self.exponent()
            self.depth -= 1
            return _neg(node) if op == "-" else node
        return self.primary()

    @staticmethod
    def _scalar_op(op):
        if op.startswith("."):
            raise _Fail(f"{op!r} is an array operator; this expression is scalar, use {op[1:]!r}")
        return op

    def primary(self):
        kind, value, _ = self.take()
        if kind == "num":
            return _const(float(value))
        if kind == "name":
            if self.peek()[1] == "(":
                return self.call(value)
            return self.name(value)
        if value == "(":
            node = self.expr()
            self.expect(")")
            return node
        if value == "[":
            raise _Fail("'[' (an array) is not part of this scalar expression grammar")
        raise _Fail(f"unexpected {value or 'end of text'!r}")

    def name(self, name):
        if name in self.inputs:
            k = self.inputs[name]
            return ("f", lambda a: a[k])
        if name in self.variables:
            value = np.asarray(self.variables[name], dtype=float)
            if value.size != 1:
                raise _Fail(f"variable {name!r} is not a scalar (it has {value.size} elements)")
            return _const(value.reshape(-1)[0])
        if name in self.constants:
            return _const(self.constants[name])
        if name in self.functions:
            raise _Fail(f"function {name!r} needs arguments")
        known = ", ".join(list(self.inputs) + sorted(self.variables)) or "none"
        raise _Fail(f"unknown variable {name!r} (known: {known})")

    def call(self, name):
        if name not in self.functions:
            hint = " (not available in this expression)" if name in SCALAR_FUNCTIONS else ""
            raise _Fail(f"unknown function {name!r}{hint}")
        arity, fn = self.functions[name]
        args, literal = self.arguments()
        if len(args) != arity:
            raise _Fail(f"{name}() takes {arity} argument(s), got {len(args)}")
        if name == "pow" and literal[0]:
            _check_exponent(args[1][1], self.max_exponent)
        return _call_node(fn, args)


def compile_scalar(text: str, inputs=(), variables: dict | None = None, *, functions=None, constants=None):
    """Compile ``text`` once into ``f(values) -> float``, ``values`` being a sequence of
    the ``inputs`` names' current values in that order. ``variables`` (name -> number) are
    fixed at compile time; ``functions`` (names, default all of SCALAR_FUNCTIONS) and
    ``constants`` (name -> value, default evaluate's) restrict the vocabulary. Raises
    ExpressionError with the reason when the text does not compile."""
    if not isinstance(text, str):
        raise ExpressionError(f"expected a text, got {type(text).__name__}")
    max_length, max_exponent = _LIMITS.get()
    if len(text) > max_length:
        raise ExpressionError(f"{len(text)} characters (limit {max_length})")
    table = SCALAR_FUNCTIONS if functions is None else {name: SCALAR_FUNCTIONS[name] for name in functions}
    try:
        compiler = _Compiler(text, tuple(inputs), variables or {}, table,
                             _CONSTANTS if constants is None else dict(constants))
        compiler.max_exponent = max_exponent
        node = compiler.parse()
    except (_Fail, _Exponent) as exc:
        raise ExpressionError(str(exc)) from None
    return _as_fn(node)
