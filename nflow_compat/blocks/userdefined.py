"""nflow's User-Defined Functions library.

``expression`` evaluates a math text of ``u``, ``t``, ``dt`` and the diagram variables at
every step. nflow runs it through its own small expression engine; here the text is
compiled once (``expr.compile_scalar``) into a closure tree, so a step costs a few
Python calls and never an ``eval``.

``nelsonFunction`` calls the Nelson interpreter each step; there is no interpreter here,
so it has no handler and a diagram using it fails with ``unsupported_block`` (its
manifest help says so).
"""
from __future__ import annotations

import numpy as np

from ..errors import DiagramError
from ..expr import ExpressionError, compile_scalar
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
