"""nflow's Logic library: comparisons and Boolean reductions, outputs 1.0 / 0.0.

Comparisons are IEEE ones, as in C++: every ordered comparison with NaN is false and
``ne`` with NaN is true. A width-1 input is broadcast to the output width.

Only double signals are handled (exact int64 / uint64 lanes are not ported yet).
"""
from __future__ import annotations

import operator

import numpy as np

from . import Phases, block

# Relational operator spellings nflow accepts (compareToConstant, compareToZero,
# relationalOperator), each mapped to the numpy ufunc that implements it. The numpy
# ufuncs also compare two Python floats, so one table serves both paths.
RELOPS = {
    "ge": np.greater_equal, ">=": np.greater_equal,
    "gt": np.greater, ">": np.greater,
    "le": np.less_equal, "<=": np.less_equal,
    "lt": np.less, "<": np.less,
    "eq": np.equal, "==": np.equal,
    "ne": np.not_equal, "!=": np.not_equal, "~=": np.not_equal,
}

# Python-float versions for the scalar path (no numpy call per step).
_SCALAR = {
    np.greater_equal: operator.ge, np.greater: operator.gt,
    np.less_equal: operator.le, np.less: operator.lt,
    np.equal: operator.eq, np.not_equal: operator.ne,
}


def _relop(io, name: str):
    op = io.params[name]
    if op not in RELOPS:  # the manifest enum already rejects these; keep the handler total
        io.fail("param_value", f"unknown relational operator {op!r} (use one of {sorted(RELOPS)})", name)
    return RELOPS[op]


def _compare_to(io, const: float, name: str):
    """u <op> const element-wise; unconnected input: nothing written."""
    i, o, S = io.ins[0], io.outs[0], io.S
    ufunc = _relop(io, name)
    if i is None:
        return Phases()
    if io.width == 1:
        cmp = _SCALAR[ufunc]

        def algebraic():
            S[o] = 1.0 if cmp(S[i], const) else 0.0
    else:
        def algebraic():
            S[o] = ufunc(S[i], const).astype(float)
    return Phases(algebraic=algebraic)


@block("compareToConstant")
def compare_to_constant(io):
    """1 where 'u relop const' holds, else 0."""
    return _compare_to(io, float(io.params["const"]), "relop")


@block("compareToZero")
def compare_to_zero(io):
    """1 where 'u relop 0' holds, else 0 (relop defaults to 'ne')."""
    return _compare_to(io, 0.0, "relop")


@block("relationalOperator")
def relational_operator(io):
    """1 where 'u0 Operator u1' holds, else 0; both inputs are required, else nothing
    is written."""
    a, c = io.ins[0], io.ins[1]
    S, o = io.S, io.outs[0]
    ufunc = _relop(io, "Operator")
    if a is None or c is None:
        return Phases()
    if io.width == 1:
        cmp = _SCALAR[ufunc]

        def algebraic():
            S[o] = 1.0 if cmp(S[a], S[c]) else 0.0
    else:
        def algebraic():
            S[o] = ufunc(S[a], S[c]).astype(float)
    return Phases(algebraic=algebraic)


@block("intervalTest")
def interval_test(io):
    """1 where LowerLimit <(=) u <(=) UpperLimit, else 0; IntervalClosedLeft/Right
    nonzero = closed (<=) on that side. Unconnected: nothing written."""
    p = io.params
    lo, up = float(p["LowerLimit"]), float(p["UpperLimit"])
    closed_left, closed_right = float(p["IntervalClosedLeft"]) != 0.0, float(p["IntervalClosedRight"]) != 0.0
    i, o, S = io.ins[0], io.outs[0], io.S
    if i is None:
        return Phases()
    above = np.greater_equal if closed_left else np.greater
    below = np.less_equal if closed_right else np.less
    if io.width == 1:
        ok_lo, ok_up = _SCALAR[above], _SCALAR[below]

        def algebraic():
            x = S[i]
            S[o] = 1.0 if ok_lo(x, lo) and ok_up(x, up) else 0.0
    else:
        def algebraic():
            x = S[i]
            S[o] = (above(x, lo) & below(x, up)).astype(float)
    return Phases(algebraic=algebraic)


LOGICAL_OPERATORS = ("AND", "OR", "NAND", "NOR", "XOR", "XNOR", "NOT")


def _truth(v):
    """A float array's truth: nonzero and not NaN."""
    return (v != 0.0) & (v == v)


@block("logicalOperator")
def logical_operator(io):
    """Reduces ALL declared inputs element-wise; an input is true when it is nonzero and
    not NaN, and an unconnected one reads 0 (false):
    AND all true, OR any true, NAND not all, NOR none, XOR odd count, XNOR even count.
    NOT looks at input 0 only and gives 1 exactly where it equals 0 (so NOT(NaN) = 0,
    and an unconnected input 0 gives 1)."""
    op = io.params["Operator"]
    if op not in LOGICAL_OPERATORS:
        io.fail("param_value", f"unknown Operator {op!r} (use one of {list(LOGICAL_OPERATORS)})", "Operator")
    S, o, width = io.S, io.outs[0], io.width
    slots = [s for s in io.ins if s is not None]
    missing = len(io.ins) - len(slots)

    def constant(value: float):
        const = value if width == 1 else np.full(width, value)

        def algebraic():
            S[o] = const
        return Phases(algebraic=algebraic)

    if op == "NOT":
        first = io.ins[0] if io.ins else None
        if first is None:
            return constant(1.0)
        if width == 1:
            def algebraic():
                S[o] = 1.0 if S[first] == 0.0 else 0.0
        else:
            def algebraic():
                # input 0 may be a broadcast scalar when another port is wider
                S[o] = np.broadcast_to(np.asarray(S[first]) == 0.0, (width,)).astype(float)
        return Phases(algebraic=algebraic)

    # An unconnected port is a false input: AND / NAND are settled by it.
    if missing and op == "AND":
        return constant(0.0)
    if missing and op == "NAND":
        return constant(1.0)
    if not slots:  # no inputs at all (or none connected for OR / NOR / XOR / XNOR)
        return constant({"AND": 1.0, "NAND": 0.0, "OR": 0.0, "NOR": 1.0, "XOR": 0.0, "XNOR": 1.0}[op])

    if width == 1:
        if op in ("AND", "NAND"):
            hit, miss = (1.0, 0.0) if op == "AND" else (0.0, 1.0)

            def algebraic():
                for s in slots:
                    v = S[s]
                    if v == 0.0 or v != v:
                        S[o] = miss
                        return
                S[o] = hit
        elif op in ("OR", "NOR"):
            hit, miss = (1.0, 0.0) if op == "OR" else (0.0, 1.0)

            def algebraic():
                for s in slots:
                    v = S[s]
                    if v != 0.0 and v == v:
                        S[o] = hit
                        return
                S[o] = miss
        else:
            odd, even = (1.0, 0.0) if op == "XOR" else (0.0, 1.0)

            def algebraic():
                count = 0
                for s in slots:
                    v = S[s]
                    if v != 0.0 and v == v:
                        count += 1
                S[o] = odd if count & 1 else even
        return Phases(algebraic=algebraic)

    shape = (width,)
    if op in ("AND", "NAND"):
        def reduce():
            acc = np.ones(shape, dtype=bool)
            for s in slots:
                acc &= _truth(np.asarray(S[s]))
            return acc
    elif op in ("OR", "NOR"):
        def reduce():
            acc = np.zeros(shape, dtype=bool)
            for s in slots:
                acc |= _truth(np.asarray(S[s]))
            return acc
    else:
        def reduce():
            acc = np.zeros(shape, dtype=bool)
            for s in slots:
                acc ^= _truth(np.asarray(S[s]))
            return acc
    if op in ("AND", "OR", "XOR"):
        def algebraic():
            S[o] = reduce().astype(float)
    else:
        def algebraic():
            S[o] = (~reduce()).astype(float)
    return Phases(algebraic=algebraic)
