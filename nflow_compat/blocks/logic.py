"""nflow's Logic library: comparisons and Boolean reductions, outputs 1.0 / 0.0.

Comparisons are IEEE ones, as in C++: every ordered comparison with NaN is false and
``ne`` with NaN is true. A width-1 input is broadcast to the output width.

Only double signals are handled (exact int64 / uint64 lanes are not ported yet).

Further down: the Boolean blocks and, or, xor, not; intervalTestDynamic; the bit blocks
(bitwiseOperator, bitSet, bitClear, extractBits, shiftArithmetic) and combinatorialLogic; at the
end if and switchCase, whose outputs drive action subsystems.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..signals import round_half_away
from . import Code, Phases, block, fit, pointwise, scalar_out

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
# ... and their spelling in the templates of the generated step function
_SYMBOL = {np.greater_equal: ">=", np.greater: ">", np.less_equal: "<=", np.less: "<", np.equal: "==",
           np.not_equal: "!="}
# a value's truth in a template (nonzero and not NaN), per input port
_TRUE = "(u{0} != 0.0 and u{0} == u{0})"


def _as_flag(mask):
    """A comparison's result over the grid as the closures write it: 1.0 / 0.0."""
    return mask.astype(float)


def _relop(io, name: str):
    op = io.params[name]
    if op not in RELOPS:  # the manifest enum already rejects these; keep the handler total
        io.fail("param_value", f"unknown relational operator {op!r} (use one of {sorted(RELOPS)})", name)
    return RELOPS[op]


def _compare_to(io, const: float, name: str):
    """u <op> const element-wise; unconnected input: nothing written."""
    ufunc = _relop(io, name)
    if io.ins[0] is None:
        return Phases()
    return pointwise(io, (0,), lambda u: _as_flag(ufunc(u, const)), array=lambda t, u: [_as_flag(ufunc(u[0], const))],
                     code=Code(algebraic=f"y0 = 1.0 if u0 {_SYMBOL[ufunc]} c else 0.0", constants={"c": const}))


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
    ufunc = _relop(io, "Operator")
    if io.ins[0] is None or io.ins[1] is None:
        return Phases()
    return pointwise(io, (0, 1), lambda x, y: _as_flag(ufunc(x, y)), array=lambda t, u: [_as_flag(ufunc(u[0], u[1]))],
                     code=Code(algebraic=f"y0 = 1.0 if u0 {_SYMBOL[ufunc]} u1 else 0.0"))


@block("intervalTest")
def interval_test(io):
    """1 where LowerLimit <(=) u <(=) UpperLimit, else 0; IntervalClosedLeft/Right
    nonzero = closed (<=) on that side. Unconnected: nothing written."""
    p = io.params
    lo, up = float(p["LowerLimit"]), float(p["UpperLimit"])
    closed_left, closed_right = float(p["IntervalClosedLeft"]) != 0.0, float(p["IntervalClosedRight"]) != 0.0
    if io.ins[0] is None:
        return Phases()
    above = np.greater_equal if closed_left else np.greater
    below = np.less_equal if closed_right else np.less
    text = f"y0 = 1.0 if u0 {_SYMBOL[above]} lo and u0 {_SYMBOL[below]} up else 0.0"
    return pointwise(io, (0,), lambda x: _as_flag(above(x, lo) & below(x, up)),
                     array=lambda t, u: [_as_flag(above(u[0], lo) & below(u[0], up))],
                     code=Code(algebraic=text, constants={"lo": lo, "up": up}))


LOGICAL_OPERATORS = ("AND", "OR", "NAND", "NOR", "XOR", "XNOR", "NOT")


def _truth(v):
    """A float array's truth: nonzero and not NaN."""
    return (v != 0.0) & (v == v)


def _constant_output(io, value: float) -> Phases:
    """A block whose output is settled by its wiring alone (e.g. AND with an open port)."""
    S, o, width = io.S, io.outs[0], io.width
    const = fit(value, width)

    def algebraic():
        S[o] = const
    return Phases(algebraic=algebraic, array=lambda t, u: [np.full(t.size, value)],
                  code=Code(algebraic="y0 = c", constants={"c": const}))


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
    declared = io.declared_ins
    slots = [s for s in declared if s is not None]
    missing = len(declared) - len(slots)

    if op == "NOT":
        if not io.ins or io.ins[0] is None:
            return _constant_output(io, 1.0)
        return pointwise(io, (0,), lambda u: _as_flag(u == 0.0), array=lambda t, u: [_as_flag(u[0] == 0.0)],
                         code=Code(algebraic="y0 = 1.0 if u0 == 0.0 else 0.0"))

    # An unconnected port is a false input: AND / NAND are settled by it.
    if missing and op == "AND":
        return _constant_output(io, 0.0)
    if missing and op == "NAND":
        return _constant_output(io, 1.0)
    if not slots:  # no inputs at all (or none connected for OR / NOR / XOR / XNOR)
        return _constant_output(io, {"AND": 1.0, "NAND": 0.0, "OR": 0.0, "NOR": 1.0, "XOR": 0.0, "XNOR": 1.0}[op])

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
        kind = {"AND": "and", "NAND": "and", "OR": "or", "NOR": "or"}.get(op, "xor")
        return Phases(algebraic=algebraic, **_reduction_forms(io, kind, op in ("NAND", "NOR", "XNOR")))

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


# ============================================================================= and / or / xor / not
#
# The dedicated Boolean blocks reduce ALL declared input ports element-wise; a value is
# true when it is nonzero and not NaN, and an unconnected port reads 0 (false). Unlike
# logicalOperator's NOT, the `not` block gives 1 for NaN (NaN is not true).

def _reduce_block(io, kind: str):
    """and / or / xor over every declared port."""
    S, o, width = io.S, io.outs[0], io.width
    declared = io.declared_ins
    slots = [s for s in declared if s is not None]
    missing = len(declared) - len(slots)

    if kind == "and" and missing:
        return _constant_output(io, 0.0)       # an unconnected port is a false input
    if not slots:
        return _constant_output(io, 1.0 if kind == "and" else 0.0)   # empty AND is true, empty OR / XOR false
    if width == 1:
        if kind == "and":
            def algebraic():
                for s in slots:
                    v = S[s]
                    if v == 0.0 or v != v:
                        S[o] = 0.0
                        return
                S[o] = 1.0
        elif kind == "or":
            def algebraic():
                for s in slots:
                    v = S[s]
                    if v != 0.0 and v == v:
                        S[o] = 1.0
                        return
                S[o] = 0.0
        else:
            def algebraic():
                count = 0
                for s in slots:
                    v = S[s]
                    if v != 0.0 and v == v:
                        count += 1
                S[o] = 1.0 if count & 1 else 0.0
        return Phases(algebraic=algebraic, **_reduction_forms(io, kind, False))
    shape = (width,)
    if kind == "and":
        def algebraic():
            acc = np.ones(shape, dtype=bool)
            for s in slots:
                acc &= _truth(np.asarray(S[s]))
            S[o] = acc.astype(float)
    elif kind == "or":
        def algebraic():
            acc = np.zeros(shape, dtype=bool)
            for s in slots:
                acc |= _truth(np.asarray(S[s]))
            S[o] = acc.astype(float)
    else:
        def algebraic():
            acc = np.zeros(shape, dtype=bool)
            for s in slots:
                acc ^= _truth(np.asarray(S[s]))
            S[o] = acc.astype(float)
    return Phases(algebraic=algebraic)


def _reduction_forms(io, kind: str, negated: bool) -> dict:
    """The array form and template of a scalar and / or / xor over the connected declared
    ports (each true when nonzero and not NaN), 1.0 / 0.0, swapped when ``negated``."""
    ports = [port for port, slot in enumerate(io.declared_ins) if slot is not None]
    hit, miss = ("0.0", "1.0") if negated else ("1.0", "0.0")
    truths = [_TRUE.format(port) for port in ports]
    if kind == "xor":
        text = f"y0 = {hit} if ({' + '.join(truths)}) & 1 else {miss}"
    else:
        text = f"y0 = {hit} if {f' {kind} '.join(truths)} else {miss}"
    combine = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[kind]

    def array(t, u):
        acc = _truth(u[ports[0]])
        for port in ports[1:]:
            acc = combine(acc, _truth(u[port]))
        return [_as_flag(~acc if negated else acc)]
    return {"array": array, "code": Code(algebraic=text)}


@block("and")
def and_(io):
    """1 where every declared input is true (nonzero, not NaN), else 0; an unconnected
    input is false, so it makes the output 0."""
    return _reduce_block(io, "and")


@block("or")
def or_(io):
    """1 where any declared input is true (nonzero, not NaN), else 0."""
    return _reduce_block(io, "or")


@block("xor")
def xor_(io):
    """1 where an odd number of the declared inputs are true (nonzero, not NaN)."""
    return _reduce_block(io, "xor")


@block("not")
def not_(io):
    """1 where the input is not true, i.e. 0 or NaN; else 0. An unconnected input reads
    0, so the output is 1."""
    i, o, S, width = io.ins[0] if io.ins else None, io.outs[0], io.S, io.width
    if i is not None:
        return pointwise(io, (0,), lambda v: _as_flag(~_truth(v)), array=lambda t, u: [_as_flag(~_truth(u[0]))],
                         code=Code(algebraic=f"y0 = 0.0 if {_TRUE.format(0)} else 1.0"))
    const = fit(1.0, width)

    def algebraic():
        S[o] = const
    return Phases(algebraic=algebraic)


@block("intervalTestDynamic")
def interval_test_dynamic(io):
    """Ports: 0 = lower limit, 1 = u, 2 = upper limit. 1 where lo <(=) u <(=) up, else 0,
    element-wise (a scalar bound is broadcast); IntervalClosedLeft/Right nonzero = closed
    on that side. All three inputs are required, else nothing is written."""
    p = io.params
    closed_left = float(p["IntervalClosedLeft"]) != 0.0
    closed_right = float(p["IntervalClosedRight"]) != 0.0
    if None in (io.ins + [None, None, None])[:3]:
        return Phases()
    above = np.greater_equal if closed_left else np.greater
    below = np.less_equal if closed_right else np.less
    ok_lo, ok_up = _SCALAR[above], _SCALAR[below]
    return pointwise(io, (0, 1, 2), lambda lo, x, up: _as_flag(above(x, lo) & below(x, up)),
                     scalar=lambda lo, x, up: 1.0 if ok_lo(x, lo) and ok_up(x, up) else 0.0)


# ============================================================================= bit blocks
#
# The bit blocks work on integers taken from the double signal as C's llround does:
# round half away from zero to a signed 64-bit value. A NaN, an infinity or a value
# outside the int64 range has no such integer; x86-64 (where nflow runs) then returns
# INT64_MIN (0x8000000000000000), and so do these ports. bitwiseOperator, bitSet,
# bitClear and extractBits then reinterpret it as an unsigned 64-bit pattern (two's
# complement: -1 is all ones) and mask it to NumBits bits (floor(NumBits); below 1 -> 1,
# 64 and above -> all 64 bits); shiftArithmetic keeps it signed. The result is converted
# back to a double (rounded to nearest above 2^53). Unconnected input: nothing written.

_INT64_MIN = -2 ** 63
_TWO63 = 2.0 ** 63
_ALL64 = (1 << 64) - 1


def _llround(x: float) -> int:
    """C llround on x86-64, as a Python int."""
    r = round_half_away(x)
    if not (-_TWO63 <= r < _TWO63):      # NaN, infinities and overflow
        return _INT64_MIN
    return int(r)


def _llround_array(x) -> np.ndarray:
    """C llround on x86-64, element-wise, as an int64 array."""
    r = round_half_away(np.asarray(x, dtype=float))
    ok = (r >= -_TWO63) & (r < _TWO63)
    return np.where(ok, r, -_TWO63).astype(np.int64)


def _full_mask(io) -> int:
    nb = float(io.params["NumBits"])
    if nb != nb:
        io.fail("param_value", "NumBits must be a number, got NaN", "NumBits")
    nb = math.floor(nb) if math.isfinite(nb) else nb
    if nb < 1:
        nb = 1
    if nb >= 64:
        return _ALL64
    return (1 << int(nb)) - 1


def _bit_of(io) -> int:
    """1 << llround(BitIndex), or 0 when the index is outside 0..63."""
    idx = _llround(float(io.params["BitIndex"]))
    return 1 << idx if 0 <= idx <= 63 else 0


def _masked_op(io, scalar_op, vector_op, lane=np.uint64):
    """Output = op(llround(u)) element-wise: ``scalar_op`` on a Python int, ``vector_op``
    on the int64 array of llround values viewed as ``lane`` (uint64 for bit masks, int64
    for arithmetic shifts)."""
    i, o, S = io.ins[0], io.outs[0], io.S
    if i is None:
        return Phases()
    width = io.width
    if width == 1:
        def algebraic():
            S[o] = float(scalar_op(_llround(S[i])))
    elif io.in_widths[0] == 1:   # a scalar broadcast to a wider declared port
        def algebraic():
            S[o] = np.full(width, float(scalar_op(_llround(S[i]))))
    else:
        def algebraic():
            S[o] = vector_op(_llround_array(S[i]).view(lane)).astype(float)
    return Phases(algebraic=algebraic)


BITWISE_OPERATIONS = ("AND", "OR", "XOR", "NAND", "NOR", "NOT")


@block("bitwiseOperator")
def bitwise_operator(io):
    """x = llround(u) & fm; y = (x AND / OR / XOR / NAND / NOR mask) & fm, or (NOT x) & fm,
    where mask = llround(BitMask) & fm and fm has NumBits ones."""
    op = io.params["Operation"]
    if op not in BITWISE_OPERATIONS:   # the manifest enum rejects these first; nflow reads AND
        op = "AND"
    fm = _full_mask(io)
    m = _llround(float(io.params["BitMask"])) & fm
    ufm, um = np.uint64(fm), np.uint64(m)
    scalar = {
        "AND": lambda x: (x & fm) & m,
        "OR": lambda x: ((x & fm) | m) & fm,
        "XOR": lambda x: ((x & fm) ^ m) & fm,
        "NAND": lambda x: ~((x & fm) & m) & fm,
        "NOR": lambda x: ~((x & fm) | m) & fm,
        "NOT": lambda x: ~(x & fm) & fm,
    }[op]
    vector = {
        "AND": lambda x: (x & ufm) & um,
        "OR": lambda x: ((x & ufm) | um) & ufm,
        "XOR": lambda x: ((x & ufm) ^ um) & ufm,
        "NAND": lambda x: ~((x & ufm) & um) & ufm,
        "NOR": lambda x: ~((x & ufm) | um) & ufm,
        "NOT": lambda x: ~(x & ufm) & ufm,
    }[op]
    return _masked_op(io, scalar, vector)


@block("bitSet")
def bit_set(io):
    """y = (llround(u) & fm) | (1 << BitIndex), masked to NumBits bits; a BitIndex
    (rounded) outside 0..63 sets nothing."""
    fm = _full_mask(io)
    bit = _bit_of(io) & fm
    ufm, ubit = np.uint64(fm), np.uint64(bit)
    return _masked_op(io, lambda x: ((x & fm) | bit) & fm, lambda x: ((x & ufm) | ubit) & ufm)


@block("bitClear")
def bit_clear(io):
    """y = (llround(u) & fm) with bit BitIndex cleared, masked to NumBits bits; a BitIndex
    (rounded) outside 0..63 clears nothing."""
    fm = _full_mask(io)
    keep = ~(_bit_of(io) & fm) & _ALL64
    ufm, ukeep = np.uint64(fm), np.uint64(keep)
    return _masked_op(io, lambda x: ((x & fm) & keep) & fm, lambda x: ((x & ufm) & ukeep) & ufm)


@block("extractBits")
def extract_bits(io):
    """bits = ((llround(u) & fm) >> s) & (2^n - 1) with s = StartBit (rounded, clamped to
    0..63) and n = NumBitsToExtract (rounded, clamped to 1..64). OutputScaling
    'keepWeight' (the default) outputs the bits at their weight, bits << s; 'rightAligned'
    outputs bits. (The page's example text reads the rightAligned value.)"""
    fm = _full_mask(io)
    start = min(max(_llround(float(io.params["StartBit"])), 0), 63)
    n = min(max(_llround(float(io.params["NumBitsToExtract"])), 1), 64)
    em = _ALL64 if n >= 64 else (1 << n) - 1
    keep_weight = io.params["OutputScaling"] != "rightAligned"
    ufm, uem, us = np.uint64(fm), np.uint64(em), np.uint64(start)
    if keep_weight:
        def scalar(x):
            return ((((x & fm) >> start) & em) << start) & _ALL64

        def vector(x):
            return (((x & ufm) >> us) & uem) << us
    else:
        def scalar(x):
            return ((x & fm) >> start) & em

        def vector(x):
            return ((x & ufm) >> us) & uem
    return _masked_op(io, scalar, vector)


@block("shiftArithmetic")
def shift_arithmetic(io):
    """x = llround(u) as a signed 64-bit integer; the shift n = llround(ShiftNumber),
    negated for ShiftDirection 'Right', clamped to -62..62; n >= 0: x << n (bits shifted
    out of the 64-bit word are lost, two's complement wrap), n < 0: arithmetic x >> -n
    (sign kept, rounds toward -inf)."""
    raw = _llround(float(io.params["ShiftNumber"]))
    if io.params["ShiftDirection"] == "Right":
        raw = -raw if raw != _INT64_MIN else raw    # C negation of INT64_MIN wraps to itself
    n = min(max(raw, -62), 62)
    if n >= 0:
        def scalar(x):
            r = (x << n) & _ALL64
            return r - (1 << 64) if r >= 1 << 63 else r

        un = np.uint64(n)

        def vector(x):
            return (x.view(np.uint64) << un).view(np.int64)
    else:
        def scalar(x):
            return x >> -n

        sn = np.int64(-n)

        def vector(x):
            return x >> sn
    return _masked_op(io, scalar, vector, lane=np.int64)


@block("combinatorialLogic", widths=scalar_out)
def combinatorial_logic(io):
    """index = the input elements read as bits, element 0 the most significant (an
    element is 1 when it is nonzero, so NaN counts as 1; at most 63 elements);
    y = TruthTable[index] (scalar), or 0 when the index is past the table's end.
    Unconnected input: nothing written."""
    table = [float(v) for v in np.atleast_1d(np.asarray(io.params["TruthTable"], dtype=float)).reshape(-1)]
    i, o, S = io.ins[0], io.outs[0], io.S
    if i is None:
        return Phases()
    size = len(table)
    n = min(max(io.in_widths[0], 1), 63)
    if io.in_widths[0] <= 1:
        lo, hi = (table + [0.0, 0.0])[:2]
        lo = lo if size > 0 else 0.0
        hi = hi if size > 1 else 0.0

        def algebraic():
            S[o] = hi if S[i] != 0.0 else lo
    else:
        weights = 1 << np.arange(n - 1, -1, -1, dtype=np.uint64)

        def algebraic():
            index = int(np.bitwise_or.reduce(np.where(S[i][:n] != 0.0, weights, np.uint64(0))))
            S[o] = table[index] if index < size else 0.0
    return Phases(algebraic=algebraic)


# ----------------------------------------------------------------------------- if / switchCase
# Both drive action subsystems (a subsystem with controlPort "action" wired to one of
# their outputs runs in the steps where that output is 1.0; see nflow_compat.flatten).

import re  # noqa: E402  (kept with the if section)

from ..expr import MAX_DEPTH, _Fail, _TokenStream, evaluate  # noqa: E402

_IF_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
    r"|(?P<op><=|>=|==|~=|!=|&&|\|\||[<>&|~!()+-]))")
_IF_CONSTANTS = {"inf": math.inf, "Inf": math.inf, "nan": math.nan, "NaN": math.nan, "pi": math.pi,
                 "true": 1.0, "false": 0.0}
_IF_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
               "==": operator.eq, "~=": operator.ne, "!=": operator.ne}


def _if_tokens(text: str) -> list:
    tokens, pos = [], 0
    while pos < len(text):
        m = _IF_TOKEN.match(text, pos)
        if not m or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise _Fail(f"unexpected character {text[pos:].lstrip()[:1]!r}")
        tokens.append((m.lastgroup, m.group(m.lastgroup), True))
        pos = m.end()
    tokens.append(("end", "", True))
    return tokens


def _on(x: float) -> bool:
    return x != 0.0 and x == x


class _IfCompiler(_TokenStream):
    """The if block's restricted grammar, compiled once into closures (no eval):

        expr := conj (('|' | '||') conj)*          conj := cmp (('&' | '&&') cmp)*
        cmp  := unary (('<' | '<=' | '>' | '>=' | '==' | '~=' | '!=') unary)*
        unary := ('-' | '+' | '~' | '!') unary | NUMBER | u<k> | NAME | '(' expr ')'

    MATLAB precedence (unary, then comparisons, then &, then |); comparisons and logic
    give 1.0 / 0.0; a value is true when nonzero and not NaN. NAME is a scalar diagram
    variable or inf, nan, pi, true, false."""

    def __init__(self, text, readers, variables):
        self.tokens, self.i, self.depth = _if_tokens(text), 0, 0
        self.readers, self.variables = readers, variables

    def expr(self):
        self.enter()
        f = self.conj()
        while self.peek()[1] in ("|", "||"):
            self.take()
            f = _either(f, self.conj())
        self.depth -= 1
        return f

    def conj(self):
        f = self.comparison()
        while self.peek()[1] in ("&", "&&"):
            self.take()
            f = _both(f, self.comparison())
        return f

    def comparison(self):
        f = self.unary()
        while self.peek()[1] in _IF_COMPARE:
            f = _compare(_IF_COMPARE[self.take()[1]], f, self.unary())
        return f

    def unary(self):
        op = self.peek()[1]
        if op in ("-", "+", "~", "!"):
            self.take()
            self.enter()
            f = self.unary()
            self.depth -= 1
            if op == "-":
                return lambda: -f()
            if op == "+":
                return f
            return lambda: 0.0 if _on(f()) else 1.0
        return self.primary()

    def primary(self):
        kind, value, _ = self.take()
        if kind == "num":
            c = float(value)
            return lambda: c
        if kind == "name":
            m = re.fullmatch(r"u([1-9][0-9]*)", value)
            if m:
                k = int(m.group(1))
                if k > len(self.readers):
                    raise _Fail(f"{value} names input {k}, but the block has {len(self.readers)} input(s)")
                return self.readers[k - 1]
            if value in _IF_CONSTANTS:
                c = _IF_CONSTANTS[value]
                return lambda: c
            v = self.variables.get(value)
            if v is not None and np.size(v) == 1:
                c = float(np.asarray(v).reshape(-1)[0])
                return lambda: c
            raise _Fail(f"unknown name {value!r} (inputs are u1..u{len(self.readers)}; a name must be a scalar "
                        "diagram variable)")
        if value == "(":
            f = self.expr()
            self.expect(")")
            return f
        raise _Fail(f"unexpected {value or 'end of text'!r}")


def _either(f, g):
    return lambda: 1.0 if _on(f()) or _on(g()) else 0.0


def _both(f, g):
    return lambda: 1.0 if _on(f()) and _on(g()) else 0.0


def _compare(op, f, g):
    return lambda: 1.0 if op(f(), g()) else 0.0


def _scalar_inputs(io) -> list:
    """Readers of the block's inputs (0.0 when unconnected); action-driving blocks take
    scalar signals."""
    readers, S = [], io.S
    for port, slot in enumerate(io.ins):
        if slot is None:
            readers.append(lambda: 0.0)
        elif io.in_widths[port] > 1:
            io.fail("width_mismatch", f"input {port} has width {io.in_widths[port]}; this block takes scalar "
                    "inputs")
        else:
            readers.append(lambda slot=slot: S[slot])
    return readers


def _action_outputs(io, n: int, hit, default: int):
    """Phases writing 1.0 on output ``hit()`` (``default`` when it returns None) and 0.0
    on the others, over the first ``n`` outputs."""
    S = io.S
    slots = tuple(enumerate(io.outs[:n]))
    init = None
    if n > len(io.outs) or (io.block.outputs and io.block.outputs < n):
        declared = io.block.outputs

        def init():
            io.ctx.warnings.append(f"{io.block.type.type} {io.id!r}: it has {n} action outputs but the instance "
                                   f"declares {declared}; set 'outputs' to {n} to wire them all")

    def algebraic():
        k = hit()
        for port, slot in slots:
            S[slot] = 1.0 if port == k else 0.0
    return Phases(init=init, algebraic=algebraic)


@block("if", widths=scalar_out)
def if_block(io):
    """Output k is 1.0 when clause k is the first true one (IfExpression, then each of
    ElseIfExpressions, a comma-separated string or a list), others 0.0; with ShowElse on,
    the last output is 1.0 when no clause holds. Inputs u1..un are scalars (unconnected:
    0). Grammar: see _IfCompiler. A bad expression is an ``if_expression`` error."""
    p = io.params
    texts = [("IfExpression", p["IfExpression"])]
    raw = p.get("ElseIfExpressions")
    if isinstance(raw, str):
        texts += [("ElseIfExpressions", t) for t in raw.split(",") if t.strip()]
    elif isinstance(raw, list) and all(isinstance(t, str) for t in raw):
        texts += [("ElseIfExpressions", t) for t in raw if t.strip()]
    elif raw is not None:
        io.fail("param_type", "ElseIfExpressions must be a comma-separated string or a list of strings",
                "ElseIfExpressions")
    readers = _scalar_inputs(io)
    clauses = []
    for name, text in texts:
        if not isinstance(text, str) or not text.strip():
            io.fail("if_expression", f"{name} is empty; write a condition such as 'u1 > 0'", name)
        try:
            clauses.append(_IfCompiler(text, readers, io.variables).parse())
        except _Fail as exc:
            io.fail("if_expression", f"{name} {text!r}: {exc}", name)
        except RecursionError:
            io.fail("if_expression", f"{name} is nested deeper than {MAX_DEPTH}", name)
    default = len(clauses) if p["ShowElse"] else None
    n = len(clauses) + (1 if p["ShowElse"] else 0)
    ordered = tuple(enumerate(clauses))

    def hit():
        for k, f in ordered:
            if _on(f()):
                return k
        return default
    return _action_outputs(io, n, hit, default)


def _split_cells(text: str) -> list:
    """The cells of a MATLAB cell literal's inside: split at commas / semicolons, and
    at blanks between two complete elements ('1 [7 9 4]'), outside brackets."""
    cells, depth, start = [], 0, 0
    for pos, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and ch in ",;":
            cells.append(text[start:pos])
            start = pos + 1
        elif depth == 0 and ch.isspace():
            before, after = text[start:pos].rstrip(), text[pos:].lstrip()
            if before and after and (before[-1].isalnum() or before[-1] in ".])") and \
                    (after[0].isalnum() or after[0] in ".[(") and text[pos - 1:pos].strip():
                cells.append(text[start:pos])
                start = pos + 1
    cells.append(text[start:])
    return [c.strip() for c in cells if c.strip()]


def _case_values(io) -> list:
    raw = io.params["CaseConditions"]
    where = io.block.where("CaseConditions")
    if isinstance(raw, str):
        text = raw.strip()
        cells = _split_cells(text[1:-1]) if text.startswith("{") and text.endswith("}") else ([text] if text else [])
    elif isinstance(raw, list):
        cells = raw
    else:
        cells = [raw]
    cases = []
    for cell in cells:
        try:
            value = evaluate(cell, io.variables, **where) if isinstance(cell, str) else cell
            values = np.atleast_1d(np.asarray(value, dtype=float)).reshape(-1)
        except (TypeError, ValueError):
            io.fail("param_type", f"CaseConditions cell {cell!r} is not a number or a list of numbers",
                    "CaseConditions")
        if not np.all(np.isfinite(values)) or np.any(values != np.trunc(values)):
            io.fail("param_value", f"CaseConditions cell {values.tolist()} must hold whole numbers (the input is "
                    "truncated to an integer before it is matched)", "CaseConditions")
        cases.append([float(v) for v in values])
    return cases


@block("switchCase", widths=scalar_out)
def switch_case(io):
    """The scalar input truncated toward zero selects the first case of CaseConditions
    (a cell literal '{1, [7 9 4]}', or a JSON list [1, [7, 9, 4]]) holding it: that
    output is 1.0, the others 0.0; no fall-through. With ShowDefaultCase on the last
    output is 1.0 when no case holds (also for NaN / inf). Unconnected input reads 0."""
    cases = _case_values(io)
    (read,) = _scalar_inputs(io)[:1] or [lambda: 0.0]
    default = len(cases) if io.params["ShowDefaultCase"] else None
    n = len(cases) + (1 if io.params["ShowDefaultCase"] else 0)
    pairs, seen = [], set()
    for k, values in enumerate(cases):
        for v in values:
            if v not in seen:          # a value in two cases belongs to the first
                seen.add(v)
                pairs.append((v, k))
    pairs = tuple(pairs)
    lookup = {v: k for v, k in pairs} if len(pairs) > 16 else None

    def hit():
        u = read()
        if u - u != 0.0:              # NaN or inf: no case
            return default
        t = float(math.trunc(u))
        if lookup is not None:
            return lookup.get(t, default)
        for v, k in pairs:
            if t == v:
                return k
        return default
    return _action_outputs(io, n, hit, default)
