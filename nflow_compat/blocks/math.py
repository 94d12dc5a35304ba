"""nflow's Math Operations library: element-wise, direct-feedthrough arithmetic.

Every block here works element-wise over its output width, a width-1 input being
broadcast to the others (nflow's ``sigAt`` scalar expansion). What an unconnected input
does differs per block and follows each nflow handler:

* nothing is written (the output keeps its last / initial value): bias, abs, sign,
  negate, polynomial; divide, min and max when either input is missing;
* the previous output is held explicitly: gain (the same thing here);
* the port reads 0: every port of sum; the port reads 1: every factor of mult.

Only double signals are handled (integer / complex lanes are not ported yet).
"""
from __future__ import annotations

import numpy as np

from . import Phases, block

TINY = 1e-300   # divide: smallest denominator magnitude, sign kept (+ for 0 and -0)


def _connected(io):
    """(slot, port) of every connected input, in port order."""
    return [(slot, port) for port, slot in enumerate(io.ins) if slot is not None]


@block("gain")
def gain(io):
    """y = u*Gain element-wise; with the input unconnected the last output is held
    (nothing else ever writes it, so writing nothing is that hold)."""
    g = float(io.params["Gain"])
    i, o, S = io.ins[0], io.outs[0], io.S
    if i is None:
        return Phases()
    # A product of a float and a float array is a fresh array: one closure serves both.

    def algebraic():
        S[o] = S[i] * g
    return Phases(algebraic=algebraic)


def _sign_string(io) -> str:
    value = io.params.get("Inputs", "")
    return value if isinstance(value, str) else ""


@block("sum")
def sum_(io):
    """y = 0 + sum_k s_k*u_k over ALL declared ports, in port order; s_k is -1 where
    character k of the Inputs string is '-' and +1 otherwise (missing characters, '+',
    '|', anything else). The string is read positionally, so a '|' takes a port's place
    as in nflow. Unconnected ports read 0 and contribute nothing."""
    signs = _sign_string(io)
    terms = [(slot, port < len(signs) and signs[port] == "-") for slot, port in _connected(io)]
    odd = sorted({c for c in signs if c not in "+-"})
    S, o = io.S, io.outs[0]
    width = io.width
    note = (f"sum block {io.id!r}: Inputs {signs!r} is read one character per input port, as "
            f"nflow does; {', '.join(repr(c) for c in odd)} count as '+' and each takes a port's "
            f"place (they are not spacers)") if odd else None

    def init():
        if note:
            io.ctx.warnings.append(note)

    if not terms:
        zero = 0.0 if width == 1 else np.zeros(width)

        def algebraic():
            S[o] = zero
        return Phases(init=init if note else None, algebraic=algebraic)
    if len(terms) == 1:
        (a, na), = terms
        if na:
            def algebraic():
                S[o] = 0.0 - S[a]
        else:
            def algebraic():
                S[o] = 0.0 + S[a]
    elif len(terms) == 2:
        (a, na), (b, nb) = terms
        if not na and not nb:
            def algebraic():
                S[o] = 0.0 + S[a] + S[b]
        elif not na and nb:
            def algebraic():
                S[o] = 0.0 + S[a] - S[b]
        elif na and not nb:
            def algebraic():
                S[o] = 0.0 - S[a] + S[b]
        else:
            def algebraic():
                S[o] = 0.0 - S[a] - S[b]
    else:
        def algebraic():
            acc = 0.0
            for slot, minus in terms:
                if minus:
                    acc = acc - S[slot]
                else:
                    acc = acc + S[slot]
            S[o] = acc
    return Phases(init=init if note else None, algebraic=algebraic)


@block("mult")
def mult(io):
    """y = product of all declared inputs in port order; an unconnected port reads 1,
    so it drops out, and with none connected the output is 1."""
    slots = [slot for slot, _ in _connected(io)]
    S, o, width = io.S, io.outs[0], io.width
    if not slots:
        one = 1.0 if width == 1 else np.ones(width)

        def algebraic():
            S[o] = one
    elif len(slots) == 1:
        a, = slots

        def algebraic():
            S[o] = 1.0 * S[a]
    elif len(slots) == 2:
        a, b = slots

        def algebraic():
            S[o] = S[a] * S[b]
    elif len(slots) == 3:
        a, b, c = slots

        def algebraic():
            S[o] = S[a] * S[b] * S[c]
    else:
        first, rest = slots[0], slots[1:]

        def algebraic():
            acc = S[first]
            for slot in rest:
                acc = acc * S[slot]
            S[o] = acc
    return Phases(algebraic=algebraic)


@block("bias")
def bias(io):
    """y = u + Bias; unconnected: nothing written."""
    b = float(io.params["Bias"])
    i, o, S = io.ins[0], io.outs[0], io.S
    if i is None:
        return Phases()

    def algebraic():
        S[o] = S[i] + b
    return Phases(algebraic=algebraic)


@block("abs")
def abs_(io):
    """y = |u|; unconnected: nothing written."""
    i, o, S = io.ins[0], io.outs[0], io.S
    if i is None:
        return Phases()
    if io.width == 1:
        def algebraic():
            S[o] = abs(S[i])
    else:
        def algebraic():
            S[o] = np.abs(S[i])
    return Phases(algebraic=algebraic)


@block("sign")
def sign(io):
    """y = +1 for u > 0, -1 for u < 0, else 0 (so 0, -0 and NaN all give 0);
    unconnected: nothing written."""
    i, o, S = io.ins[0], io.outs[0], io.S
    if i is None:
        return Phases()
    if io.width == 1:
        def algebraic():
            u = S[i]
            S[o] = 1.0 if u > 0.0 else (-1.0 if u < 0.0 else 0.0)
    else:
        def algebraic():
            u = S[i]
            S[o] = (u > 0.0).astype(float) - (u < 0.0).astype(float)
    return Phases(algebraic=algebraic)


@block("negate")
def negate(io):
    """y = -u; unconnected: nothing written."""
    i, o, S = io.ins[0], io.outs[0], io.S
    if i is None:
        return Phases()

    def algebraic():
        S[o] = -S[i]
    return Phases(algebraic=algebraic)


def _guard(den):
    """A denominator with |den| < 1e-300 becomes +-1e-300, keeping its sign
    (0 and -0 give +1e-300; NaN passes through)."""
    return np.where(np.abs(den) < TINY, np.where(den < 0.0, -TINY, TINY), den)


@block("divide")
def divide(io):
    """y = u0 / u1 with the tiny-denominator guard; nothing is written unless both
    inputs are connected."""
    n, d = io.ins[0], io.ins[1]
    S, o = io.S, io.outs[0]
    if n is None or d is None:
        return Phases()
    if io.in_widths[1] == 1:
        # A scalar denominator (also the vector case with a broadcast denominator).
        def algebraic():
            den = S[d]
            if abs(den) < TINY:
                den = -TINY if den < 0.0 else TINY
            S[o] = S[n] / den
    else:
        def algebraic():
            S[o] = S[n] / _guard(S[d])
    return Phases(algebraic=algebraic)


@block("min")
def min_(io):
    """y = std::min(u0, u1) element-wise, i.e. (u1 < u0) ? u1 : u0: when either is NaN
    the first input is passed. Both inputs are required, else nothing is written."""
    a, c = io.ins[0], io.ins[1]
    S, o = io.S, io.outs[0]
    if a is None or c is None:
        return Phases()
    if io.width == 1:
        def algebraic():
            x, y = S[a], S[c]
            S[o] = y if y < x else x
    else:
        def algebraic():
            x, y = S[a], S[c]
            S[o] = np.where(y < x, y, x).astype(float)
    return Phases(algebraic=algebraic)


@block("max")
def max_(io):
    """y = std::max(u0, u1) element-wise, i.e. (u0 < u1) ? u1 : u0: when either is NaN
    the first input is passed. Both inputs are required, else nothing is written."""
    a, c = io.ins[0], io.ins[1]
    S, o = io.S, io.outs[0]
    if a is None or c is None:
        return Phases()
    if io.width == 1:
        def algebraic():
            x, y = S[a], S[c]
            S[o] = y if x < y else x
    else:
        def algebraic():
            x, y = S[a], S[c]
            S[o] = np.where(x < y, y, x).astype(float)
    return Phases(algebraic=algebraic)


@block("polynomial")
def polynomial(io):
    """y = Horner evaluation of Coefficients (highest power first, polyval order):
    acc = c[0]; acc = acc*u + c[k] for k = 1..n-1. No coefficients give 0; one gives
    that constant. Unconnected: nothing written."""
    coeffs = [float(c) for c in np.atleast_1d(np.asarray(io.params["Coefficients"], dtype=float)).reshape(-1)]
    i, o, S, width = io.ins[0], io.outs[0], io.S, io.width
    if i is None:
        return Phases()
    if len(coeffs) <= 1:
        value = coeffs[0] if coeffs else 0.0
        const = value if width == 1 else np.full(width, value)

        def algebraic():
            S[o] = const
        return Phases(algebraic=algebraic)
    head, rest = coeffs[0], coeffs[1:]
    if width == 1:
        def algebraic():
            x = S[i]
            acc = head
            for c in rest:
                acc = acc * x + c
            S[o] = acc
    else:
        def algebraic():
            x = S[i]
            acc = head * x + rest[0]
            for c in rest[1:]:
                acc = acc * x + c
            S[o] = acc
    return Phases(algebraic=algebraic)
