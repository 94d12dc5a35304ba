"""Compiled vector expressions with MATLAB's value rules: the math bodies of nflow's
``nelsonFunction`` (``sin``, ``@(u) 2*u``, ``atan2(u(1), u(2))``), never ``eval``.

nflow hands the block's ``Fcn`` to the Nelson interpreter. Here the text is parsed once
(``compile_vector``) into a tree of closures over numpy arrays, with the grammar of the
parameter expressions (``expr``) plus what a function body of a signal needs::

    expr    := cmp
    cmp     := sum (('<' | '<=' | '>' | '>=' | '==' | '~=') sum)*
    sum     := term (('+' | '-') term)*
    term    := unary (('*' | '/' | '.*' | './') unary)*
    unary   := ('+' | '-') unary | power
    power   := primary (('^' | '.^') ('+' | '-')* primary)*
    primary := NUMBER ['i' | 'j'] | NAME | NAME '(' args ')' | '(' expr ')' | '[' rows ']'

``NAME '(' ... ')'`` is a call of a function of ``VECTOR_FUNCTIONS`` or, for an input
(``u``), indexing: 1-based, by a scalar or a vector of whole numbers, ``end`` the last
element. Values follow MATLAB: a function whose real result would leave the reals
(``sqrt(-1)``, ``log(-2)``, ``asin(2)``, ``(-8)^(1/3)``) gives the complex value, and a
complex value whose imaginary parts are all zero is real again. ``*``, ``/`` and ``^``
between two arrays are MATLAB's matrix operations, which a signal body does not need:
they are refused with the element-wise form to use instead. Text length, nesting depth,
array sizes and literal exponents are bounded as in ``expr``.

An error while the closures run (an index past the end) is ``VectorError``; one in the
text is ``ExpressionError`` (both carry the reason).
"""
from __future__ import annotations

import re

import numpy as np

from .expr import (_CONSTANTS, _LIMITS, MAX_ELEMENTS, ExpressionError, _ArrayGrammar, _check_exponent, _Exponent,
                   _Fail, _fix, _round_away, _tokenize, floor_mod)

_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[ij]?(?![A-Za-z_0-9]))"
    r"|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
    r"|(?P<op><=|>=|==|~=|\.\*|\./|\.\^|[-+*/^(),;\[\]<>]))")

_COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
            "==": np.equal, "~=": np.not_equal}


class VectorError(ValueError):
    """A compiled body failed on its values (an index past the end, sizes that disagree)."""


def _value(x):
    """MATLAB's storage rule: a complex array whose imaginary parts are all zero is real."""
    arr = np.asarray(x)
    if arr.size > MAX_ELEMENTS:
        raise VectorError(f"array larger than {MAX_ELEMENTS} elements")
    if np.iscomplexobj(arr) and not np.any(arr.imag):
        arr = arr.real
    if arr.dtype.kind not in "fc":
        arr = arr.astype(float)
    return arr


def _leaves_reals(fn, outside):
    """``fn`` on reals, its complex form where an argument lies ``outside`` its real domain."""
    def f(x):
        x = np.asarray(x)
        if not np.iscomplexobj(x) and np.any(outside(x)):
            x = x.astype(complex)
        return fn(x)
    return f


def _power(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if not (np.iscomplexobj(a) or np.iscomplexobj(b)) and np.any((a < 0) & (b != np.round(b))):
        a = a.astype(complex)      # a negative base to a fraction: MATLAB's principal root
    return np.power(a, b)


def _reduce(fn):
    return lambda x: fn(np.ravel(x))


def _extreme(arg):
    """One-argument min/max as MATLAB's: the smallest/largest element, NaN left out unless
    all are NaN, complex values compared by magnitude."""
    def pick(x):
        x = np.ravel(x)
        if x.size == 0:
            return np.zeros(0)
        key = np.abs(x) if np.iscomplexobj(x) else x
        return np.nan if np.isnan(key).all() else x[arg(key)]
    return pick


# name -> {arity: fn}. The one-argument math functions act element by element; sum, prod,
# mean, norm, numel and one-argument min/max reduce a vector to a number.
VECTOR_FUNCTIONS = {
    "sin": {1: np.sin}, "cos": {1: np.cos}, "tan": {1: np.tan}, "atan": {1: np.arctan},
    "asin": {1: _leaves_reals(np.arcsin, lambda x: np.abs(x) > 1)},
    "acos": {1: _leaves_reals(np.arccos, lambda x: np.abs(x) > 1)},
    "sinh": {1: np.sinh}, "cosh": {1: np.cosh}, "tanh": {1: np.tanh}, "exp": {1: np.exp},
    "log": {1: _leaves_reals(np.log, lambda x: x < 0)},
    "log10": {1: _leaves_reals(np.log10, lambda x: x < 0)},
    "log2": {1: _leaves_reals(np.log2, lambda x: x < 0)},
    "sqrt": {1: _leaves_reals(np.sqrt, lambda x: x < 0)},
    "abs": {1: np.abs}, "sign": {1: np.sign}, "floor": {1: np.floor}, "ceil": {1: np.ceil},
    "round": {1: _round_away}, "fix": {1: _fix},
    "real": {1: np.real}, "imag": {1: np.imag}, "conj": {1: np.conj}, "angle": {1: np.angle},
    "atan2": {2: np.arctan2}, "hypot": {2: np.hypot}, "pow": {2: _power},
    "mod": {2: floor_mod}, "rem": {2: np.fmod},
    "min": {1: _extreme(np.nanargmin), 2: np.fmin}, "max": {1: _extreme(np.nanargmax), 2: np.fmax},
    "sum": {1: _reduce(np.sum)}, "prod": {1: _reduce(np.prod)}, "mean": {1: _reduce(np.mean)},
    "norm": {1: _reduce(np.linalg.norm)}, "numel": {1: lambda x: float(np.size(x))},
}
# the functions of two real arguments that have no complex meaning here (two-argument
# min/max leave a NaN out, as MATLAB's do: numpy's fmin/fmax)
_REAL_ONLY = {"atan2", "hypot", "mod", "rem", "min", "max"}


def _const(value):
    return ("c", _value(value))


def _fn(node):
    if node[0] == "c":
        c = node[1]
        return lambda a: c
    return node[1]


def _apply(fn, nodes, name: str):
    """The node of ``fn`` over ``nodes``: folded when all are constants."""
    def run(*values):
        if name in _REAL_ONLY and any(np.iscomplexobj(v) for v in values):
            raise VectorError(f"{name}() takes real arguments")
        try:
            with np.errstate(all="ignore"):
                return _value(fn(*values))
        except ValueError as exc:      # sizes that do not broadcast
            raise VectorError(f"{name}: {exc}") from None
    if all(node[0] == "c" for node in nodes):
        return ("c", run(*(node[1] for node in nodes)))
    fs = [_fn(node) for node in nodes]
    if len(fs) == 1:
        g = fs[0]
        return ("f", lambda a: run(g(a)))
    if len(fs) == 2:
        g, h = fs
        return ("f", lambda a: run(g(a), h(a)))
    return ("f", lambda a: run(*[f(a) for f in fs]))


_BINARY = {"+": np.add, "-": np.subtract, "*": np.multiply, ".*": np.multiply,
           "/": np.true_divide, "./": np.true_divide, "^": _power, ".^": _power, **_COMPARE}


def _binary(op: str, x, y):
    fn = _BINARY[op]

    def check(a, b):
        if op in ("*", "/", "^") and np.ndim(a) and np.ndim(b) and (np.size(a) != 1 and np.size(b) != 1):
            raise VectorError(f"'{op}' between two arrays is a matrix operation: use '.{op}' element-wise")
        if op in _COMPARE:
            return (np.real(a), np.real(b))   # MATLAB compares the real parts
        return a, b
    return _apply(lambda a, b: fn(*check(a, b)), [x, y], f"'{op}'")


def _index(value, k):
    """MATLAB's ``value(k)``: 1-based, k whole and in range, a vector of such picks several."""
    k = np.asarray(k)
    if np.iscomplexobj(k) or not np.all(np.isfinite(k)) or np.any(k != np.round(k)):
        raise VectorError("an index must be a whole number")
    flat = np.ravel(value)
    if np.any(k < 1) or np.any(k > flat.size):
        bad = k[(k < 1) | (k > flat.size)].ravel()[0]
        raise VectorError(f"index {bad:g} is out of range (the value has {flat.size} element"
                          f"{'' if flat.size == 1 else 's'})")
    return flat[k.astype(int) - 1] if k.ndim else flat[int(k) - 1]


class _VectorCompiler(_ArrayGrammar):
    def __init__(self, text, inputs, variables, max_exponent):
        self.tokens = _tokenize(text, _TOKEN)
        self.i = 0
        self.depth = 0
        self.in_brackets = 0
        self.inputs = {name: k for k, name in enumerate(inputs)}
        self.variables = variables
        self.max_exponent = max_exponent
        self.indexing = []       # the inputs being indexed, innermost last (for ``end``)

    def expr(self):
        self.enter()
        node = self.sum()
        while self.peek()[1] in _COMPARE:
            op = self.take()[1]
            node = _binary(op, node, self.sum())
        self.depth -= 1
        return node

    # -- grammar: closure nodes
    combine = staticmethod(lambda op, x, y: _binary(op, x, y))
    negate = staticmethod(lambda node: _apply(np.negative, [node], "-"))
    literal_value = staticmethod(lambda node: node[1])

    def primary(self):
        kind, value, _ = self.take()
        if kind == "num":
            return _const(complex(0.0, float(value[:-1])) if value[-1] in "ij" else float(value))
        if kind == "name":
            if value in self.inputs:
                return self.input(value)
            if self.peek()[1] == "(":
                return self.call(value)
            return self.name(value)
        if value == "(":
            saved, self.in_brackets = self.in_brackets, 0
            node = self.expr()
            self.in_brackets = saved
            self.expect(")")
            return node
        if value == "[":
            return self.matrix()
        raise _Fail(f"unexpected {value or 'end of text'!r}")

    def input(self, name):
        k = self.inputs[name]
        node = ("f", lambda a: a[k])
        if self.peek()[1] != "(":
            return node
        self.take()
        self.indexing.append(node)
        saved, self.in_brackets = self.in_brackets, 0
        index = self.expr()
        self.in_brackets = saved
        self.indexing.pop()
        if self.peek()[1] == ",":
            raise _Fail(f"{name}(i, j): index {name} with one index (a signal is a vector)")
        self.expect(")")
        return _apply(_index, [node, index], f"{name}(...)")

    def name(self, name):
        if name == "end" and self.indexing:
            of = _fn(self.indexing[-1])
            return ("f", lambda a: _value(float(np.size(of(a)))))
        if name in self.variables:
            return _const(self.variables[name])
        if name in _CONSTANTS:
            return _const(_CONSTANTS[name])
        if name in ("i", "j"):
            return _const(1j)
        if name in VECTOR_FUNCTIONS:
            raise _Fail(f"function {name!r} needs arguments")
        known = ", ".join(list(self.inputs) + sorted(self.variables)) or "none"
        raise _Fail(f"unknown variable {name!r} (known: {known})")

    def call(self, name):
        if name not in VECTOR_FUNCTIONS:
            raise _Fail(f"unknown function {name!r} (the math functions: {', '.join(sorted(VECTOR_FUNCTIONS))})")
        args, literal = self.arguments()
        forms = VECTOR_FUNCTIONS[name]
        if len(args) not in forms:
            counts = " or ".join(str(n) for n in sorted(forms))
            raise _Fail(f"{name}() takes {counts} argument(s), got {len(args)}")
        if name == "pow" and literal[0]:
            _check_exponent(args[1][1], self.max_exponent)
        return _apply(forms[len(args)], args, name)

    def matrix(self):
        rows = self.bracket_rows(self.expr)
        if len(rows) > 1:
            raise _Fail("'[a; b]' builds a matrix; a signal is a vector: use '[a, b]'")
        if not rows:
            return _const(np.zeros(0))
        return _apply(lambda *parts: np.concatenate([np.ravel(p) for p in parts]), rows[0], "[...]")


def compile_vector(text: str, inputs=("u",), variables: dict | None = None):
    """Compile ``text`` once into ``f(values) -> ndarray`` (real or complex), ``values``
    the ``inputs`` names' current values in order (numpy arrays). ``variables`` (name ->
    number or array) are fixed at compile time. ExpressionError says why a text does not
    compile; VectorError why a call fails on its values."""
    if not isinstance(text, str):
        raise ExpressionError(f"expected a text, got {type(text).__name__}")
    max_length, max_exponent = _LIMITS.get()
    if len(text) > max_length:
        raise ExpressionError(f"{len(text)} characters (limit {max_length})")
    try:
        node = _VectorCompiler(text, tuple(inputs), variables or {}, max_exponent).parse()
    except (_Fail, _Exponent) as exc:
        raise ExpressionError(str(exc)) from None
    except VectorError as exc:           # a constant sub-expression that fails when folded
        raise ExpressionError(str(exc)) from None
    return _fn(node)
