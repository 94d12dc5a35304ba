"""nflow's User-Defined Functions library.

``expression`` evaluates a math text of ``u``, ``t``, ``dt`` and the diagram variables at
every step. nflow runs it through its own small expression engine; here the text is
compiled once (``expr.compile_scalar``) into a closure tree, so a step costs a few
Python calls and never an ``eval``.

``nelsonFunction`` hands its ``Fcn`` to the Nelson interpreter each step. There is no
interpreter here; what runs is the three forms nflow documents when their body is math
(``vector_expr``: MATLAB's value rules, compiled once): a function name (``sin``), an
anonymous function (``@(u) 2*u``) or an expression of ``u`` (``atan2(u(1), u(2))``).
Anything that needs the interpreter (a user function, statements, several outputs, cells,
structs, strings) is refused before the run with ``nelsonfunction_unsupported``, saying
which form was given.
"""
from __future__ import annotations

import re

import numpy as np

from ..errors import DiagramError, SimulationError
from ..expr import ExpressionError, compile_scalar
from ..vector_expr import VECTOR_FUNCTIONS, VectorError, compile_vector
from . import Phases, block, elementwise

# The grammar nflow's expression page documents: constants pi, e, inf; these functions;
# + - * / ^ and parentheses.
EXPRESSION_CONSTANTS = {"pi": np.pi, "e": np.e, "inf": np.inf}
EXPRESSION_FUNCTIONS = ("abs", "ceil", "floor", "round", "sign", "sqrt", "exp", "log", "log10", "log2",
                        "acos", "asin", "atan", "cos", "cosh", "sin", "sinh", "tan", "tanh", "sinc",
                        "pow", "atan2", "min", "max", "clamp")
INPUTS = ("u", "t", "dt")


def compile_expression(io):
    """The block's Expr compiled over (u, t, dt) with the diagram variables baked in; a
    text that does not compile is nflow's INIT diagnostic 'expression_invalid'."""
    text = io.params["Expr"]
    try:
        return compile_scalar(text, INPUTS, io.variables, functions=EXPRESSION_FUNCTIONS,
                              constants=EXPRESSION_CONSTANTS)
    except ExpressionError as exc:
        raise DiagramError("expression_invalid", f"expression block: invalid expression '{text}': {exc}",
                           **io.block.where("Expr")) from None


@block("expression", widths=elementwise)
def expression(io):
    """y = Expr(u, t, dt, variables) in ALGEBRAIC. nflow's handler is scalar: u is element
    0 of the input and the one result fills every element of the output (as wide as the
    input). u, t and dt hide diagram variables of the same name. An unconnected input
    writes nothing (the output holds its previous value, 0 at the start); a value the
    arithmetic cannot produce is NaN/inf as in C++, and anything that still fails at run
    time gives 0, as the handler does. Sinc is normalized (sin(pi x)/(pi x)), clamp is
    clamp(x, lo, hi), min/max propagate NaN."""
    f = compile_expression(io)
    slot, o, S, ctx = io.ins[0], io.outs[0], io.S, io.ctx
    if slot is None:
        return Phases()
    width = io.width   # > 1 only for a vector input (elementwise rule)
    failed = (ArithmeticError, ValueError, TypeError)

    if width == 1:
        def algebraic():
            try:
                S[o] = f((S[slot], ctx.t, ctx.dt))
            except failed:
                S[o] = 0.0
    else:
        def algebraic():
            try:
                y = f((float(S[slot][0]), ctx.t, ctx.dt))
            except failed:
                y = 0.0
            S[o] = np.full(width, y)
    return Phases(algebraic=algebraic)


# ----------------------------------------------------------------------------- nelsonFunction

_NAME = re.compile(r"@?[A-Za-z_]\w*")
_ANONYMOUS = re.compile(r"@\s*\((?P<params>[^()]*)\)(?P<body>.*)", re.DOTALL)
# what a math body never holds, and the form it is a sign of (checked in this order)
_NOT_MATH = (
    (re.compile(r"(?<![<>=~])=(?!=)"), "a statement (an assignment, or several outputs [a, b] = ...)"),
    (re.compile(r"[{}]"), "a cell array"),
    (re.compile(r"['\"]"), "a string or a transpose"),
    (re.compile(r"(?:\b[A-Za-z_]\w*|[)\]])\.(?=[A-Za-z_])"), "a struct field"),
    (re.compile(r"(?:^|[\s;,(])(?:if|for|while|switch|function|try|return)\b"), "a control statement"),
    (re.compile(r";\s*\S"), "several statements"),
)
_BRACKETS = re.compile(r"\[[^\[\]]*\]")     # '[a; b]' is an array, not two statements


def _unsupported(io, fcn: str, form: str, why: str) -> DiagramError:
    return DiagramError("nelsonfunction_unsupported",
                        f"block {io.id!r} (nelsonFunction): Fcn {fcn[:80]!r} is {form}: {why}. Only math bodies "
                        "run here (there is no Nelson interpreter): a math function name (sin), an anonymous "
                        "function (@(u) 2*u) or an expression of u (atan2(u(1), u(2))); see the block reference",
                        **io.block.where("Fcn"))


def compile_nelson_function(io):
    """The block's Fcn as ``f(u) -> ndarray``, with the form it was given in; a form that
    needs the Nelson interpreter is ``nelsonfunction_unsupported``."""
    fcn = io.params["Fcn"].strip() if isinstance(io.params["Fcn"], str) else ""
    if _NAME.fullmatch(fcn):                       # a function name (or handle @sin): f(u)
        name = fcn.lstrip("@")
        if name != "u" and 1 not in VECTOR_FUNCTIONS.get(name, {}):
            raise _unsupported(io, fcn, "a function name that is not one of the math functions",
                               "a user function or anything else on the Nelson path needs the interpreter; the "
                               f"math functions are {', '.join(f for f in sorted(VECTOR_FUNCTIONS) if 1 in VECTOR_FUNCTIONS[f])}")
        form, param, body = "function name", "u", f"{name}(u)" if name != "u" else "u"
    else:
        anonymous = _ANONYMOUS.fullmatch(fcn)
        form = "anonymous function" if anonymous else "expression"
        text = _BRACKETS.sub("[]", anonymous["body"] if anonymous else fcn)
        for pattern, what in _NOT_MATH:
            if pattern.search(text):
                raise _unsupported(io, fcn, f"an {form} holding {what}", "that needs the interpreter")
        if anonymous:
            params = [p.strip() for p in anonymous["params"].split(",") if p.strip()]
            if len(params) != 1 or not _NAME.fullmatch(params[0]) or params[0].startswith("@"):
                raise _unsupported(io, fcn, f"an anonymous function of {len(params)} arguments",
                                   "nflow calls it with one, the input u")
            param, body = params[0], anonymous["body"]
        else:
            param, body = "u", fcn
    try:
        f = compile_vector(body, (param,), io.variables)
    except ExpressionError as exc:
        raise DiagramError("nelsonfunction_invalid", f"block {io.id!r} (nelsonFunction): the {form} {fcn[:80]!r} "
                           f"does not compile: {exc}", **io.block.where("Fcn")) from None
    return f, form


def _nelson_widths(block, in_widths):
    """OutputDimensions -1: the input's width (nflow's element-wise assumption); else its
    value. The function's real width is checked when it is probed at INIT."""
    n = block.params.get("OutputDimensions", -1)
    n = int(np.ravel(n)[0]) if np.size(n) else -1
    if n == -1:
        return [max(1, in_widths[0] if in_widths else 1)]
    if n < 1:
        raise DiagramError("param_range", f"block {block.id!r} (nelsonFunction): OutputDimensions must be -1 "
                           f"(the input's width) or a positive width, got {n}", **block.where("OutputDimensions"))
    return [n]


@block("nelsonFunction", widths=_nelson_widths, complex=(True, -1))
def nelson_function(io):
    """y = Fcn(u) in ALGEBRAIC, as nflow's handler: u the input as a vector (unconnected:
    zeros of width 1), the result written element-wise. INIT probes Fcn once with the
    initial input: a failure is ``nelsonfunction_probe_failed``, a result whose width is
    not the output's ``nelsonfunction_width_mismatch``. At a step, a failure is
    ``nelsonfunction_call_failed``, a width that changed ``nelsonfunction_width_mismatch``,
    and a complex result on a real signal ``nelsonfunction_complex_result`` (nflow's
    codes; feed a complex input to get a complex output)."""
    f, form = compile_nelson_function(io)
    S, o, slot, width = io.S, io.outs[0], io.ins[0], io.width
    fcn = io.params["Fcn"].strip()
    zero = np.zeros(max(1, io.in_widths[0] if io.in_widths else 1))

    def fail(code: str, message: str):
        return SimulationError(code, f"nelsonFunction block {io.id!r} ({form} {fcn[:80]!r}) at t = "
                               f"{io.ctx.t:.9g}: {message}", block=io.id, path=io.block.path)

    def call(code: str):
        u = zero if slot is None else np.atleast_1d(S[slot])
        try:
            y = np.ravel(f((u,)))
        except VectorError as exc:
            raise fail(code, str(exc)) from None
        if y.size != width:
            raise fail("nelsonfunction_width_mismatch", f"the width of the result was {y.size} when a width of "
                       f"{width} was expected (set OutputDimensions accordingly)")
        if np.iscomplexobj(y) and not np.iscomplexobj(u):
            raise fail("nelsonfunction_complex_result", "returned a complex result on a real output port (feed "
                       "the block a complex input so the port is declared complex)")
        return y

    def init():
        call("nelsonfunction_probe_failed")

    if width == 1:
        def algebraic():
            S[o] = call("nelsonfunction_call_failed")[0].item()
    else:
        def algebraic():
            S[o] = call("nelsonfunction_call_failed")
    return Phases(init=init, algebraic=algebraic)
