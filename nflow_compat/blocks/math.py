"""nflow's Math Operations library: element-wise, direct-feedthrough arithmetic.

Every block here works element-wise over its output width, a width-1 input being
broadcast to the others (nflow's ``sigAt`` scalar expansion). What an unconnected input
does differs per block and follows each nflow handler:

* nothing is written (the output keeps its last / initial value): bias, abs, sign,
  negate, polynomial; divide, min and max when either input is missing;
* the previous output is held explicitly: gain (the same thing here);
* the port reads 0: every port of sum; the port reads 1: every factor of mult.

Complex signals (a Python complex at width 1, a complex128 array when wider) run
through the same closures: Python's and numpy's arithmetic is already nflow's complex
path for gain, sum, mult and abs (|z|, a real output), so the real fast paths are not
touched; divide's tiny-denominator guard has its complex rule (+1e-300, no sign) in its
rare branch. nflow's saturating int64 / uint64 arithmetic is not ported here: exact
integer inputs (from convert) take Python's arithmetic. The complex builders and
extractors, conjugate and matmul are at the end of this module.

Further down: the function blocks (mathFunction, trigFunction, roundingFunction, sqrt,
atan2, wrapToZero) and the vector blocks (sumElements, productOfElements, dotProduct,
crossProduct); their sections say how each reads an unconnected input.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import DiagramError
from ..expr import floor_mod, floor_mod_scalar
from ..signals import Shaped, dims_of, round_half_away
from . import Code, Phases, block, fit, pointwise, scalar_out

TINY = 1e-300   # divide: smallest denominator magnitude, sign kept (+ for 0 and -0)


def _connected(io):
    """(slot, port) of every connected input, in port order."""
    return [(slot, port) for port, slot in enumerate(io.ins) if slot is not None]


@block("gain", complex=(True, -1), pure=True)
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

    def rate(R):
        R[o] = R[i] * g
    return Phases(algebraic=algebraic, rate=rate, array=lambda t, u: [u[0] * g],
                  code=Code(algebraic="y0 = u0 * g", constants={"g": g}))


def _sign_string(io) -> str:
    value = io.params.get("Inputs", "")
    return value if isinstance(value, str) else ""


@block("sum", complex=(True, -1), pure=True)
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
        zero = fit(0.0, width)

        def algebraic():
            S[o] = zero
        return Phases(init=init if note else None, algebraic=algebraic, array=lambda t, u: [np.zeros(t.size)],
                      code=Code(algebraic="y0 = zero", constants={"zero": zero}))
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

    def rate(R):
        acc = 0.0
        for slot, minus in terms:
            acc = acc - R[slot] if minus else acc + R[slot]
        R[o] = acc
    ports = [(port, port < len(signs) and signs[port] == "-") for _, port in _connected(io)]

    def array(t, u):
        acc = 0.0
        for port, minus in ports:
            acc = acc - u[port] if minus else acc + u[port]
        return [acc]
    # 0.0 + u0 - u1 ...: the closures' sums, left to right
    text = "y0 = 0.0" + "".join(f" {'-' if minus else '+'} u{port}" for port, minus in ports)
    return Phases(init=init if note else None, algebraic=algebraic, rate=rate, array=array,
                  code=Code(algebraic=text))


@block("mult", complex=(True, -1))
def mult(io):
    """y = product of all declared inputs in port order; an unconnected port reads 1,
    so it drops out, and with none connected the output is 1."""
    slots = [slot for slot, _ in _connected(io)]
    S, o, width = io.S, io.outs[0], io.width
    if not slots:
        one = fit(1.0, width)

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
    return Phases(algebraic=algebraic, **_product_forms([port for _, port in _connected(io)], width))


def _product_forms(ports, width) -> dict:
    """mult's array form and template: the product of the ``ports`` in port order (1.0
    times a lone factor, ones for none), as its closures multiply."""
    if not ports:
        one = fit(1.0, width)
        return {"array": lambda t, u: [np.ones(t.size)], "code": Code(algebraic="y0 = one", constants={"one": one})}
    factors = ["1.0", f"u{ports[0]}"] if len(ports) == 1 else [f"u{port}" for port in ports]

    def array(t, u):
        acc = 1.0 * u[ports[0]] if len(ports) == 1 else u[ports[0]]
        for port in ports[1:]:
            acc = acc * u[port]
        return [acc]
    return {"array": array, "code": Code(algebraic="y0 = " + " * ".join(factors))}


@block("bias")
def bias(io):
    """y = u + Bias; unconnected: nothing written."""
    b = float(io.params["Bias"])
    i, o, S = io.ins[0], io.outs[0], io.S
    if i is None:
        return Phases()

    def algebraic():
        S[o] = S[i] + b
    return Phases(algebraic=algebraic, array=lambda t, u: [u[0] + b],
                  code=Code(algebraic="y0 = u0 + b", constants={"b": b}))


@block("abs", complex=(True, 0))
def abs_(io):
    """y = |u| (the magnitude of a complex input: a real output); unconnected: nothing
    written."""
    if io.ins[0] is None:
        return Phases()
    return pointwise(io, (0,), np.abs, array=lambda t, u: [np.abs(u[0])], code=Code(
        algebraic=_ABS_TEXT, constants={"abs": abs, "hypot": math.hypot, "OverflowError": OverflowError}))


_ABS_TEXT = """
try:
    y0 = abs(u0)
except OverflowError:
    y0 = hypot(u0.real, u0.imag)
"""


@block("sign")
def sign(io):
    """y = +1 for u > 0, -1 for u < 0, else 0 (so 0, -0 and NaN all give 0);
    unconnected: nothing written."""
    if io.ins[0] is None:
        return Phases()
    return pointwise(io, (0,), lambda u: (u > 0.0).astype(float) - (u < 0.0).astype(float),
                     array=lambda t, u: [np.where(u[0] > 0.0, 1.0, np.where(u[0] < 0.0, -1.0, 0.0))],
                     code=Code(algebraic="y0 = 1.0 if u0 > 0.0 else (-1.0 if u0 < 0.0 else 0.0)"))


@block("negate")
def negate(io):
    """y = -u; unconnected: nothing written."""
    i, o, S = io.ins[0], io.outs[0], io.S
    if i is None:
        return Phases()

    def algebraic():
        S[o] = -S[i]
    return Phases(algebraic=algebraic, array=lambda t, u: [-u[0]], code=Code(algebraic="y0 = -u0"))


def _guard(den, num):
    """A denominator with |den| < 1e-300 becomes +-1e-300, keeping its sign
    (0 and -0 give +1e-300; NaN passes through). On nflow's complex path (either
    operand complex) it becomes +1e-300 whatever its sign or phase."""
    if np.iscomplexobj(den) or np.iscomplexobj(num):
        return np.where(np.abs(den) < TINY, TINY, den)
    return np.where(np.abs(den) < TINY, np.where(den < 0.0, -TINY, TINY), den)


def _tiny(den, num):
    """``_guard`` for a width-1 denominator already known to be below 1e-300 (complex
    on the complex path, so that the quotient stays complex)."""
    if isinstance(den, complex) or np.iscomplexobj(num):
        return complex(TINY, 0.0)
    return -TINY if den < 0.0 else TINY


_DIVIDE_TEXT = """
den = u1
if abs(den) < TINY:
    den = tiny(den, u0)
y0 = u0 / den
"""


@block("divide", complex=(True, -1))
def divide(io):
    """y = u0 / u1 with the tiny-denominator guard; nothing is written unless both
    inputs are connected. Complex operands divide as complex numbers, the guard then
    giving +1e-300."""
    n, d = io.ins[0], io.ins[1]
    S, o = io.S, io.outs[0]
    if n is None or d is None:
        return Phases()
    if io.in_widths[1] == 1:
        # A scalar denominator (also the vector case with a broadcast denominator).
        def algebraic():
            den = S[d]
            if abs(den) < TINY:
                den = _tiny(den, S[n])
            S[o] = S[n] / den
        return Phases(algebraic=algebraic, array=lambda t, u: [u[0] / _guard(u[1], u[0])],
                      code=Code(algebraic=_DIVIDE_TEXT, constants={"abs": abs, "TINY": TINY, "tiny": _tiny}))
    else:
        def algebraic():
            num = S[n]
            S[o] = num / _guard(S[d], num)
    return Phases(algebraic=algebraic)


@block("min")
def min_(io):
    """y = std::min(u0, u1) element-wise, i.e. (u1 < u0) ? u1 : u0: when either is NaN
    the first input is passed. Both inputs are required, else nothing is written."""
    if io.ins[0] is None or io.ins[1] is None:
        return Phases()
    return pointwise(io, (0, 1), lambda x, y: np.where(y < x, y, x).astype(float),
                     array=lambda t, u: [np.where(u[1] < u[0], u[1], u[0])],
                     code=Code(algebraic="y0 = u1 if u1 < u0 else u0"))


@block("max")
def max_(io):
    """y = std::max(u0, u1) element-wise, i.e. (u0 < u1) ? u1 : u0: when either is NaN
    the first input is passed. Both inputs are required, else nothing is written."""
    if io.ins[0] is None or io.ins[1] is None:
        return Phases()
    return pointwise(io, (0, 1), lambda x, y: np.where(x < y, y, x).astype(float),
                     array=lambda t, u: [np.where(u[0] < u[1], u[1], u[0])],
                     code=Code(algebraic="y0 = u1 if u0 < u1 else u0"))


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
        const = fit(value, width)

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


# ============================================================================= function blocks
#
# mathFunction, trigFunction, roundingFunction, sqrt and atan2 apply a C library function
# element-wise. Python's ``math`` functions raise where C returns NaN or an infinity
# (log(0), sqrt(-1), exp(1000), fmod(x, 0), pow(0, -1), ...); ``_c_math`` keeps the fast
# ``math`` call and falls back to the numpy ufunc, which gives C's IEEE result, only when
# ``math`` raises. Vector signals go through the numpy ufuncs directly.

_MATH_ERRORS = (ValueError, OverflowError, ZeroDivisionError)


def _c_math(fast, ufunc):
    """A float -> float function with C's results for every input."""
    def f(x):
        try:
            return fast(x)
        except _MATH_ERRORS:
            with np.errstate(all="ignore"):
                return float(ufunc(x))
    return f


def _c_math2(fast, ufunc):
    """The two-argument form of ``_c_math``."""
    def f(a, b):
        try:
            return fast(a, b)
        except _MATH_ERRORS:
            with np.errstate(all="ignore"):
                return float(ufunc(a, b))
    return f


def _sign_scalar(x):
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)


def _sign_vector(x):
    return (x > 0.0).astype(float) - (x < 0.0).astype(float)


def _reciprocal_scalar(x):
    # 1/0 is an infinity carrying the zero's sign, as in C
    return 1.0 / x if x != 0.0 else math.copysign(math.inf, x)


_fmod = _c_math2(math.fmod, np.fmod)
_pow = _c_math2(math.pow, np.power)

# name -> (scalar function, vector function)
_UNARY = {
    "sin": (_c_math(math.sin, np.sin), np.sin),
    "cos": (_c_math(math.cos, np.cos), np.cos),
    "tan": (_c_math(math.tan, np.tan), np.tan),
    "asin": (_c_math(math.asin, np.arcsin), np.arcsin),
    "acos": (_c_math(math.acos, np.arccos), np.arccos),
    "atan": (_c_math(math.atan, np.arctan), np.arctan),
    "sinh": (_c_math(math.sinh, np.sinh), np.sinh),
    "cosh": (_c_math(math.cosh, np.cosh), np.cosh),
    "tanh": (_c_math(math.tanh, np.tanh), np.tanh),
    "asinh": (_c_math(math.asinh, np.arcsinh), np.arcsinh),
    "acosh": (_c_math(math.acosh, np.arccosh), np.arccosh),
    "atanh": (_c_math(math.atanh, np.arctanh), np.arctanh),
    "exp": (_c_math(math.exp, np.exp), np.exp),
    "log": (_c_math(math.log, np.log), np.log),
    "log10": (_c_math(math.log10, np.log10), np.log10),
    "10^u": (_c_math(lambda x: math.pow(10.0, x), lambda x: np.power(10.0, x)), lambda x: np.power(10.0, x)),
    "square": (lambda x: x * x, lambda x: x * x),
    "magnitude^2": (lambda x: x * x, lambda x: x * x),
    "sqrt": (_c_math(math.sqrt, np.sqrt), np.sqrt),
    "reciprocal": (_reciprocal_scalar, lambda x: 1.0 / x),
    "sign": (_sign_scalar, _sign_vector),
}
_BINARY = {
    "pow": (_pow, np.power),
    "hypot": (_c_math2(math.hypot, np.hypot), np.hypot),
    "rem": (_fmod, np.fmod),
    "mod": (floor_mod_scalar, floor_mod),
}

# nflow's mathFunction vocabulary, in the order its error message lists it
MATH_FUNCTIONS = ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "log",
                  "log10", "10^u", "square", "magnitude^2", "sqrt", "reciprocal", "sign",
                  "pow", "hypot", "rem", "mod")
TRIG_FUNCTIONS = ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
                  "asinh", "acosh", "atanh", "atan2", "sincos")


def _mapped_forms(scalar_fn, arity: int) -> dict:
    """The array form and template of a scalar block computing ``scalar_fn`` of its first
    ``arity`` inputs: the closure's own function mapped over the elements (exact, and it
    never raises: C semantics)."""
    def array(t, u):
        return [np.fromiter(map(scalar_fn, *(column.tolist() for column in u[:arity])), float, t.size)]
    return {"array": array, "code": Code(algebraic=_CALLS[arity], constants={"fn": scalar_fn})}


_CALLS = {1: "y0 = fn(u0)", 2: "y0 = fn(u0, u1)"}


def _unary(io, scalar_fn, vector_fn):
    """y = fn(u0) element-wise; unconnected input 0: nothing written."""
    if io.ins[0] is None:
        return Phases()
    return pointwise(io, (0,), vector_fn, **_mapped_forms(scalar_fn, 1))


def _binary(io, scalar_fn, vector_fn):
    """y = fn(u0, u1) element-wise; nothing is written unless both inputs are connected."""
    if io.ins[0] is None or len(io.ins) < 2 or io.ins[1] is None:
        return Phases()
    return pointwise(io, (0, 1), lambda x, y: np.asarray(vector_fn(x, y), dtype=float),
                     **_mapped_forms(scalar_fn, 2))


@block("mathFunction")
def math_function(io):
    """The Function named by ``Function`` element-wise: sin cos tan asin acos atan sinh
    cosh tanh exp log log10 10^u square magnitude^2 sqrt reciprocal sign of input 0, or
    pow hypot rem (C fmod, sign of u1) mod (floor modulo, sign of u2, mod(a, 0) = a) of
    inputs 0 and 1 (declare ``inputs: 2``). C semantics: log(0) = -inf, sqrt(-1) = NaN,
    1/0 = inf. An unknown name is an error (nflow reports math_function_unknown), not the
    identity. Input 0 unconnected (or input 1 for a two-input function): nothing written."""
    fn = io.params["Function"]
    if fn not in MATH_FUNCTIONS:
        io.fail("math_function_unknown",
                f"has no function {fn!r}. Supported: {' '.join(MATH_FUNCTIONS[:18])}, and the "
                f"two-input {' '.join(MATH_FUNCTIONS[18:])}", "Function")
    if fn in _BINARY:
        return _binary(io, *_BINARY[fn])
    return _unary(io, *_UNARY[fn])


@block("trigFunction")
def trig_function(io):
    """sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh of input 0 element-wise;
    'atan2' gives atan2(u0, u1) (both inputs required); 'sincos' writes sin(u) on output 0
    and cos(u) on output 1 (declare ``outputs: 2``; with one output only sin is written).
    Input 0 unconnected: nothing written."""
    fn = io.params["Function"]
    if fn not in TRIG_FUNCTIONS:  # the manifest enum rejects these first; nflow reads them as sin
        fn = "sin"
    if fn == "atan2":
        return _binary(io, math.atan2, np.arctan2)
    if fn != "sincos":
        return _unary(io, *_UNARY[fn])
    i, S = io.ins[0], io.S
    if i is None:
        return Phases()
    o_sin = io.outs[0]
    o_cos = io.outs[1] if len(io.outs) > 1 else None
    sin, cos = _UNARY["sin"][0], _UNARY["cos"][0]
    if io.width == 1:
        def algebraic():
            u = S[i]
            S[o_sin] = sin(u)
            if o_cos is not None:
                S[o_cos] = cos(u)
        fns = (sin, cos) if o_cos is not None else (sin,)

        def array(t, inputs):
            u = inputs[0].tolist()
            return [np.fromiter(map(fn, u), float, t.size) for fn in fns]
        return Phases(algebraic=algebraic, array=array,
                      code=Code(algebraic="y0 = sin(u0)\ny1 = cos(u0)" if o_cos is not None else "y0 = sin(u0)",
                                constants={"sin": sin, "cos": cos}))
    else:
        shape = (io.width,)

        def algebraic():
            u = np.broadcast_to(S[i], shape)
            S[o_sin] = np.sin(u)
            if o_cos is not None:
                S[o_cos] = np.cos(u)
    return Phases(algebraic=algebraic)


def _round_toward(fn):
    """A C rounding function (floor / ceil / trunc) on a float: NaN and infinities pass,
    and a zero result keeps the input's sign (ceil(-0.5) = -0.0)."""
    def f(x):
        if not math.isfinite(x):
            return x
        r = float(fn(x))
        return math.copysign(0.0, x) if r == 0.0 else r
    return f


_ROUNDING = {
    "floor": (_round_toward(math.floor), np.floor),
    "ceil": (_round_toward(math.ceil), np.ceil),
    "round": (round_half_away, round_half_away),     # C std::round: halves away from zero
    "fix": (_round_toward(math.trunc), np.trunc),
}


@block("roundingFunction")
def rounding_function(io):
    """floor (default) / ceil / round (halves away from zero) / fix (toward zero) of the
    input element-wise. Unconnected input: nothing written."""
    op = io.params["Operator"]
    return _unary(io, *_ROUNDING.get(op, _ROUNDING["floor"]))


def _signed_sqrt_scalar(x):
    return _sign_scalar(x) * math.sqrt(abs(x)) if x == x else x


def _rsqrt_scalar(x):
    if x > 0.0:
        return 1.0 / math.sqrt(x)
    if x == 0.0:
        return math.copysign(math.inf, x)     # 1/sqrt(-0) = 1/-0 = -inf
    return math.nan                           # negative or NaN


_SQRT = {
    "sqrt": (_c_math(math.sqrt, np.sqrt), np.sqrt),
    "signedSqrt": (_signed_sqrt_scalar, lambda x: _sign_vector(x) * np.sqrt(np.abs(x))),
    "rSqrt": (_rsqrt_scalar, lambda x: 1.0 / np.sqrt(x)),
}


@block("sqrt")
def sqrt_(io):
    """sqrt (NaN below 0), signedSqrt (sign(u)*sqrt(|u|)) or rSqrt (1/sqrt(u); +-inf at
    +-0) of the input element-wise. Unconnected input: nothing written."""
    fn = io.params["Function"]
    return _unary(io, *_SQRT.get(fn, _SQRT["sqrt"]))


@block("atan2")
def atan2(io):
    """y = atan2(u0, u1) element-wise (u0 = y, u1 = x); both inputs required, else
    nothing is written."""
    return _binary(io, math.atan2, np.arctan2)


@block("wrapToZero")
def wrap_to_zero(io):
    """y = 0 where u > Threshold (strictly: u = Threshold passes), else u; NaN passes.
    Unconnected input: nothing written."""
    thr = float(io.params["Threshold"])
    if io.ins[0] is None:
        return Phases()
    return pointwise(io, (0,), lambda u: np.where(u > thr, 0.0, u), scalar=lambda u: 0.0 if u > thr else u)


# ============================================================================= vector math
#
# nflow's vectorMath handlers read an unconnected input as a signal of width 0, so the
# loops run zero times: sumElements and dotProduct give 0, productOfElements gives 1.
# Sums and products run left to right from 0 (or 1) like the C loops; numpy's cumsum /
# cumprod accumulate in that order (np.sum would pair terms and round differently).

def _sum_sequential(values) -> float:
    # 0.0 + ... never yields -0.0, while cumsum of all -0.0 does: adding 0.0 fixes that
    return float(np.cumsum(values)[-1]) + 0.0 if len(values) else 0.0


@block("sumElements", widths=scalar_out)
def sum_elements(io):
    """y = u[0] + u[1] + ... (scalar), summed left to right from 0. Unconnected: 0."""
    i, o, S = io.ins[0], io.outs[0], io.S
    if i is None:
        def algebraic():
            S[o] = 0.0
    elif io.in_widths[0] == 1:
        def algebraic():
            S[o] = 0.0 + S[i]
    else:
        cumsum = np.cumsum

        def algebraic():
            S[o] = float(cumsum(S[i])[-1]) + 0.0
    return Phases(algebraic=algebraic)


@block("productOfElements", widths=scalar_out)
def product_of_elements(io):
    """y = u[0] * u[1] * ... (scalar), multiplied left to right from 1. Unconnected: 1."""
    i, o, S = io.ins[0], io.outs[0], io.S
    if i is None:
        def algebraic():
            S[o] = 1.0
    elif io.in_widths[0] == 1:
        def algebraic():
            S[o] = 1.0 * S[i]
    else:
        cumprod = np.cumprod

        def algebraic():
            S[o] = float(cumprod(S[i])[-1])
    return Phases(algebraic=algebraic)


@block("dotProduct", widths=scalar_out)
def dot_product(io):
    """y = sum over the first min(width0, width1) elements of a_i*b_i, left to right from
    0 (scalar). nflow does not broadcast here: a scalar times a vector uses element 0 only.
    Either input unconnected: 0."""
    a = io.ins[0]
    b = io.ins[1] if len(io.ins) > 1 else None
    o, S = io.outs[0], io.S
    if a is None or b is None:
        def algebraic():
            S[o] = 0.0
        return Phases(algebraic=algebraic)
    n = min(io.in_widths[0], io.in_widths[1])
    if n == 1:
        wa, wb = io.in_widths[0], io.in_widths[1]

        def first(slot, w):
            return (lambda: S[slot]) if w == 1 else (lambda: float(S[slot][0]))
        fa, fb = first(a, wa), first(b, wb)

        def algebraic():
            S[o] = 0.0 + fa() * fb()
    else:
        def algebraic():
            S[o] = _sum_sequential(S[a][:n] * S[b][:n])
    return Phases(algebraic=algebraic)


def _cross_widths(block, in_widths):
    for port, w in enumerate(in_widths[:2]):
        if w > 1 and w != 3:
            raise DiagramError("width_mismatch", f"block {block.id!r} (crossProduct): crossProduct requires "
                               f"3-element vector inputs (input {port} has width {w})",
                               block=block.id, path=block.path)
    return [3] * block.outputs


@block("crossProduct", widths=_cross_widths)
def cross_product(io):
    """y = a x b for 3-element inputs (a width-1 input is broadcast to (s, s, s), an
    unconnected one reads (0, 0, 0)); the output is always 3 wide. Other widths are
    rejected when the diagram is compiled."""
    S, o = io.S, io.outs[0]

    def reader(port):
        slot = io.ins[port] if port < len(io.ins) else None
        if slot is None:
            return lambda: (0.0, 0.0, 0.0)
        if io.in_widths[port] == 1:
            return lambda: (S[slot],) * 3
        return lambda: S[slot].tolist()
    ra, rb = reader(0), reader(1)

    def algebraic():
        a0, a1, a2 = ra()
        b0, b1, b2 = rb()
        S[o] = np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])
    return Phases(algebraic=algebraic)


# ============================================================================= complex signals
#
# nflow's complexOps: builders (realImagToComplex, magnitudeAngleToComplex) always emit a
# complex signal; extractors (complexToRealImag, complexToMagnitudeAngle) emit two real
# outputs of the input's width; conjugate keeps the input's nature (the identity on a
# real signal). Element-wise, a width-1 input broadcast; an unconnected input reads 0 and
# the output is written anyway. The builders read the real part of their inputs (nflow's
# sigAt reads the real lane).

def _real_reader(io, port: int):
    """Input ``port`` as a real value: the real part of a complex signal, a double for an
    integer one, 0.0 when unconnected. Returns a float at width 1, else an array (or a
    float broadcast by the caller)."""
    slot = io.ins[port] if port < len(io.ins) else None
    S = io.S
    if slot is None:
        return lambda: 0.0
    if io.in_widths[port] <= 1:
        return lambda: float(S[slot].real)
    return lambda: np.real(S[slot])


def _complex_vector(width: int, re, im) -> np.ndarray:
    """A complex128 vector from its parts (arrays of ``width`` or scalars), set
    component-wise: ``re + 1j*im`` would turn an infinite part into NaN."""
    out = np.empty(width, dtype=complex)
    out.real = re
    out.imag = im
    return out


_cos, _sin = _UNARY["cos"][0], _UNARY["sin"][0]


@block("realImagToComplex", complex=(False, 1))
def real_imag_to_complex(io):
    """y = u0 + j*u1 element-wise (the real parts of the inputs; unconnected reads 0)."""
    S, o, w = io.S, io.outs[0], io.width
    re, im = _real_reader(io, 0), _real_reader(io, 1)
    if w == 1:
        def algebraic():
            S[o] = complex(re(), im())
    else:
        def algebraic():
            S[o] = _complex_vector(w, re(), im())
    return Phases(algebraic=algebraic)


@block("magnitudeAngleToComplex", complex=(False, 1))
def magnitude_angle_to_complex(io):
    """y = m*cos(a) + j*m*sin(a) element-wise, m = input 0, a = input 1 (radians; the
    real parts; unconnected reads 0). Each part is computed as written, so m = inf at
    a = 0 gives inf + j*NaN as in C++."""
    S, o, w = io.S, io.outs[0], io.width
    mag, ang = _real_reader(io, 0), _real_reader(io, 1)
    if w == 1:
        def algebraic():
            m, a = mag(), ang()
            S[o] = complex(m * _cos(a), m * _sin(a))
    else:
        def algebraic():
            m, a = mag(), ang()
            S[o] = _complex_vector(w, m * np.cos(a), m * np.sin(a))
    return Phases(algebraic=algebraic)


def _two_real_outputs(io, scalar_fn, vector_fn):
    """Outputs 0 and 1 = the pair ``fn(u)`` of input 0 (a real input is a complex number
    with imaginary part 0; unconnected reads 0)."""
    S, w = io.S, io.width
    o0 = io.outs[0] if io.outs else None
    o1 = io.outs[1] if len(io.outs) > 1 else None
    slot = io.ins[0]
    if slot is None:
        first, second = scalar_fn(0.0)
        zero = (first, second) if w == 1 else (np.full(w, first), np.full(w, second))

        def algebraic():
            if o0 is not None:
                S[o0] = zero[0]
            if o1 is not None:
                S[o1] = zero[1]
        return Phases(algebraic=algebraic)
    fn = scalar_fn if w == 1 else vector_fn

    def algebraic():
        a, b = fn(S[slot])
        if o0 is not None:
            S[o0] = a
        if o1 is not None:
            S[o1] = b
    return Phases(algebraic=algebraic)


def _re_im_scalar(u):
    return float(u.real), float(u.imag)


def _re_im_vector(u):
    return np.ascontiguousarray(u.real, dtype=float), np.ascontiguousarray(u.imag, dtype=float)


def _mag_angle_scalar(u):
    # math.hypot / math.atan2 give C's results where abs() and cmath.phase raise
    # (an overflowing magnitude is inf, an underflowing angle 0)
    re, im = float(u.real), float(u.imag)
    return math.hypot(re, im), math.atan2(im, re)


def _mag_angle_vector(u):
    return np.abs(u).astype(float), np.angle(u)


@block("complexToRealImag", complex=(True, 0))
def complex_to_real_imag(io):
    """Output 0 = Re(u), output 1 = Im(u) element-wise (0 for a real input)."""
    return _two_real_outputs(io, _re_im_scalar, _re_im_vector)


@block("complexToMagnitudeAngle", complex=(True, 0))
def complex_to_magnitude_angle(io):
    """Output 0 = |u| (hypot of the parts), output 1 = arg(u) = atan2(Im, Re) in
    (-pi, pi] element-wise: a negative real input has angle pi (-0.0 too)."""
    return _two_real_outputs(io, _mag_angle_scalar, _mag_angle_vector)


@block("conjugate", complex=(True, -1))
def conjugate(io):
    """y = conj(u) element-wise: the identity on a real input. Unconnected reads 0."""
    if io.ins[0] is not None:
        return pointwise(io, (0,), np.conj, scalar=lambda u: u.conjugate())
    S, o, zero = io.S, io.outs[0], fit(0.0, io.width)

    def algebraic():
        S[o] = zero
    return Phases(algebraic=algebraic)


# ============================================================================= matmul
#
# nflow's matmul: MultiplicationRule 'matrix' (default; anything but the element-wise
# spellings) gives A*B, 'elementwise' / '.*' / 'element-wise' gives A.*B. Data is
# column-major: element (r, c) of an R-row matrix is element c*R + r of the flat signal.
#
# Dimensions: a port's dims come from its width when it carries them (``Shaped``), else
# a signal of width n is the 1-D [n] (n rows, 1 column) and width 1 a scalar. A matrix
# constant and reshape give their dims; elsewhere ADimensions / BDimensions ([rows cols],
# our params) declare what an input is, and a product of dims must equal the input's
# width. (nflow gets them from its dimension-propagation pass.)

_ELEMENTWISE_RULES = ("elementwise", ".*", "element-wise")
_OPERANDS = ("ADimensions", "BDimensions")


def _fail_dims(block, code: str, message: str, param=None):
    raise DiagramError(code, f"block {block.id!r} (matmul): {message}", **block.where(param))


def _operand_dims(block, port: int, width: int) -> tuple:
    """The dims of input ``port``: the declared ADimensions / BDimensions, else the
    width's own. An unconnected input is a scalar (it reads 0)."""
    name = _OPERANDS[port]
    given = block.params.get(name)
    if width == 0 or given is None or np.size(given) == 0:
        return dims_of(width) if width else ()
    dims = np.atleast_1d(np.asarray(given, dtype=float)).reshape(-1)
    if not np.all(np.isfinite(dims)) or np.any(dims < 1) or np.any(dims != np.floor(dims)) or dims.size > 8:
        _fail_dims(block, "param_value", f"{name} must be positive whole dimensions like [2 3], "
                   f"got {dims.tolist()}", name)
    dims = tuple(int(d) for d in dims)
    if math.prod(dims) != width:
        _fail_dims(block, "width_mismatch", f"{name} {list(dims)} has {math.prod(dims)} elements but input "
                   f"{port} has width {width}", name)
    return dims if width > 1 else ()


def _rank(dims: tuple) -> int:
    """nflow's numDims, trailing singleton dimensions past the second not counted."""
    n = len(dims)
    while n > 2 and dims[n - 1] == 1:
        n -= 1
    return n


def _rows(dims: tuple) -> int:
    return dims[0] if dims else 1


def _cols(dims: tuple) -> int:
    return dims[1] if len(dims) > 1 else 1


def _width_of(dims: tuple):
    """The output width for ``dims``: a ``Shaped`` for a matrix, a plain int otherwise
    (a 1x1 product is a scalar)."""
    n = math.prod(dims)
    return Shaped(dims) if len(dims) >= 2 and n > 1 else n


def _matmul_shapes(block, in_widths):
    """(elementwise, A dims, B dims, output dims), with nflow's dimension errors."""
    wa = in_widths[0] if in_widths else 0
    wb = in_widths[1] if len(in_widths) > 1 else 0
    a, b = _operand_dims(block, 0, wa), _operand_dims(block, 1, wb)
    na, nb = math.prod(a), math.prod(b)   # 1 for a scalar / unconnected input
    if block.params.get("MultiplicationRule") in _ELEMENTWISE_RULES:
        if na > 1 and nb > 1:
            n = max(len(a), len(b))
            if a + (1,) * (n - len(a)) != b + (1,) * (n - len(b)):
                _fail_dims(block, "width_mismatch", f"elementwise matmul requires equal input dimensions "
                           f"(input 0 is {list(a)}, input 1 is {list(b)})")
        return True, a, b, (a if wa >= wb else b)
    if (na > 1 and _rank(a) > 2) or (nb > 1 and _rank(b) > 2):
        _fail_dims(block, "width_mismatch", f"matrix product requires 2-D inputs (input 0 is {list(a)}, "
                   f"input 1 is {list(b)})")
    if na > 1 and nb > 1 and _cols(a) != _rows(b):
        _fail_dims(block, "width_mismatch", f"matrix product dimension mismatch: [{_rows(a)}x{_cols(a)}] * "
                   f"[{_rows(b)}x{_cols(b)}]")
    if na <= 1 and nb <= 1:
        out = ()
    elif na <= 1:
        out = b
    elif nb <= 1:
        out = a
    else:
        out = (_rows(a), _cols(b))
    return False, a, b, out


def _matmul_width(block, in_widths):
    """The product's width (a ``Shaped`` for a matrix). Lenient: in a feedback loop the
    width pass first seeds unknown inputs as scalars, so a dimension error here may not
    be final; the handler raises it when the block is built, every width known."""
    try:
        out = _width_of(_matmul_shapes(block, in_widths)[3])
    except DiagramError:
        out = 1
    return [out] * block.outputs


@block("matmul", widths=_matmul_width, complex=(True, 0))
def matmul(io):
    """Y = A*B (MultiplicationRule 'matrix', the default) or A.*B ('elementwise', '.*',
    'element-wise'), A = input 0, B = input 1, column-major. Dims come from the signals
    when they carry them, else from ADimensions / BDimensions ([rows cols]); an
    undeclared signal of width n is an n-by-1 column. Checked when the diagram is
    compiled, with nflow's errors: 'matrix product dimension mismatch: [RxC] * [RxC]',
    'matrix product requires 2-D inputs', 'elementwise matmul requires equal input
    dimensions'. Each output element is summed in double from 0, in index order.

    A scalar operand follows nflow's handler exactly, which is not a plain scaling: a
    scalar s times an R-by-C matrix B gives, in column c, s times the SUM of column c of
    B (every row alike); a matrix A times s gives, in row r, s times the sum of row r of
    A. A column vector times a scalar (and scalar times scalar) is the plain product.
    Element-wise, a scalar is broadcast. Unconnected inputs read 0 (the output is
    written). Complex inputs contribute their real parts (nflow's matmul reads the real
    lane); integer types are computed in double."""
    elementwise, a_dims, b_dims, out_dims = _matmul_shapes(io.block, io.in_widths)
    S, o, w = io.S, io.outs[0], io.width
    ra, rb = _real_reader(io, 0), _real_reader(io, 1)
    rule, ctx = io.params.get("MultiplicationRule"), io.ctx
    init = None
    if rule != "matrix" and not elementwise:
        def init():
            ctx.warnings.append(f"matmul {io.id!r}: MultiplicationRule {rule!r} is not 'matrix', 'elementwise', "
                                "'.*' or 'element-wise'; nflow computes the matrix product, and so does this run")
    if elementwise:
        if w == 1:
            def algebraic():
                S[o] = ra() * rb()
        else:
            def algebraic():
                S[o] = np.broadcast_to(ra() * rb(), (w,)).astype(float)
        return Phases(algebraic=algebraic)
    wide_a, wide_b = math.prod(a_dims) > 1, math.prod(b_dims) > 1
    # the handler's loop bounds: m x k times k x n
    m = _rows(a_dims) if wide_a else _rows(out_dims)
    k = _cols(a_dims) if wide_a else (_rows(b_dims) if wide_b else 1)
    n = _cols(b_dims) if wide_b else _cols(out_dims)
    if m * n == 1 and k == 1:
        def algebraic():
            S[o] = 0.0 + ra() * rb()
        return Phases(init=init, algebraic=algebraic)

    def operand(read, wide, rows, cols):
        if wide:   # the flat signal as a rows x cols matrix, column-major
            return lambda: np.reshape(read(), (rows, cols), order="F")
        return lambda: np.full((rows, cols), read())
    fa, fb = operand(ra, wide_a, m, k), operand(rb, wide_b, k, n)

    def algebraic():
        x, y = fa(), fb()
        acc = np.zeros((m, n))
        for t in range(k):      # acc += a(r, t) * b(t, c), t ascending, as the C loop
            acc = acc + x[:, t:t + 1] * y[t:t + 1, :]
        flat = acc.reshape(-1, order="F")
        S[o] = float(flat[0]) if w == 1 else flat[:w].copy()
    return Phases(init=init, algebraic=algebraic)
