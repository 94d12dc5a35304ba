"""nflow's Discrete library: blocks that remember the previous sample.

Shared conventions, following the nflow handlers:

* State is per element. An initial-condition param may be a scalar (broadcast) or a
  list; a list shorter than the signal repeats its last element, a longer one is cut
  (nflow's ``paramList`` rule). The output is as wide as the input; when the input is
  scalar or unconnected, a vector initial condition sets the width (a product choice:
  nflow's width pass for these blocks is not documented).
* An unconnected input reads 0 (nflow's ``getInput(..., 0.0)``).
* The "previous sample" blocks (difference, detectChange/Increase/Decrease,
  risingEdge, fallingEdge) are direct feedthrough: they compute in ALGEBRAIC from the
  current input and the previous input, which UPDATE commits. On a solver's
  side-effect-free sub-evaluation (``ctx.side_effect_free``) they replay the output of
  the last committed pass instead of recomputing (a zero-order hold between samples).
  The fixed-step loop never sets that flag.
* unitDelay emits its state in OUTPUT and has no feedthrough, so it breaks loops.
* zoh keeps its own sample schedule: a hit when ``t + 1e-6 >= nextHit``; at a hit the
  output is the current input (same step), between hits the held sample.
* foh, dtf, ddelay, dstateSpace and rateTransition keep their own schedules the same
  way (each with nflow's own hit tolerance, see the handlers).

Not ported: nflow's generic "sub-rate hold" (state advancing only on the hits of a
``SampleTime`` these blocks do not declare in their manifests).
"""
from __future__ import annotations

import math

import numpy as np

from ..signals import round_half_away
from . import Code, Phases, block, elementwise, fit


# ----------------------------------------------------------------------------- helpers

def ic_width(param: str):
    """Width rule: input 0's width when it is a vector, else the length of the
    ``param`` vector when that is longer than 1, else 1. The input's width object itself
    is handed on whenever it is the answer (a one-member bus stays a bus)."""
    def rule(block, in_widths):
        w = in_widths[0] if in_widths else 0
        if w <= 1:
            n = int(getattr(block.params.get(param), "size", 1))
            w = n if n > 1 else (w if w == 1 else 1)
        return [w] * block.outputs
    return rule


def input_slot(io, port: int = 0):
    """The slot of input ``port``, None when it is unconnected or not declared."""
    return io.ins[port] if port < len(io.ins) else None


def scalar_reader(io, port: int = 0, default: float = 0.0):
    """A callable returning element 0 of input ``port`` as a float (nflow's
    getInput(..., default)); an unconnected port reads ``default``."""
    slot, S = input_slot(io, port), io.S
    if slot is None:
        return lambda: default
    if io.in_widths[port] > 1:
        return lambda: float(S[slot][0])
    return lambda: S[slot]


def input_reader(io, w: int):
    """Input 0 now: a float for width 1 (0 when unconnected), else a float array of ``w``
    (a scalar broadcast): nflow's getInput / sigAt."""
    return scalar_reader(io) if w == 1 else vector_reader(io, 0, w)


def vector_reader(io, port: int, width: int, default: float = 0.0):
    """A callable returning input ``port`` as a float array of ``width``: a scalar input
    is broadcast, an unconnected one reads ``default``."""
    slot, S = input_slot(io, port), io.S
    if slot is None:
        const = np.full(width, default)
        return lambda: const
    if io.in_widths[port] == 1:
        return lambda: np.full(width, S[slot])
    return lambda: S[slot]


def _previous_sample(io, param: str, scalar_rule, vector_rule):
    """The shared shape of the blocks whose output compares the current input with the
    input of the previous committed step (``prev``, seeded from ``param``)."""
    if not io.outs:
        return Phases()
    S, o, ctx, w = io.S, io.outs[0], io.ctx, io.width
    seed = io.initial(param, w)
    zero = fit(0.0, w)
    prev = seed
    held = zero   # output of the last committed pass, replayed by side-effect-free passes

    def init():
        nonlocal prev, held
        prev, held = seed, zero

    current = input_reader(io, w)
    rule = scalar_rule if w == 1 else vector_rule

    def algebraic():
        nonlocal held
        if ctx.side_effect_free:
            S[o] = held
            return
        y = rule(current(), prev)
        held = y    # an output cache, not state: re-running a committed pass is idempotent
        S[o] = y

    def update():
        nonlocal prev
        prev = current()

    return Phases(init=init, algebraic=algebraic, update=update)


def _flag(mask):
    return mask.astype(float)


# ----------------------------------------------------------------------------- blocks

@block("unitDelay", widths=ic_width("InitialCondition"), feedthrough=False)
def unit_delay(io):
    """y[k] = u[k-1], y[0] = InitialCondition: OUTPUT emits the state, UPDATE stores the
    current input (0 when unconnected)."""
    if not io.outs:
        return Phases()
    S, o, w = io.S, io.outs[0], io.width
    i = input_slot(io)
    seed = io.initial("InitialCondition", w)
    state = seed

    def init():
        nonlocal state
        state = seed

    def output():
        S[o] = state

    if w == 1:
        if i is None:
            def update():
                nonlocal state
                state = 0.0
        else:
            def update():
                nonlocal state
                state = S[i]
        code = Code(output="y0 = x", update="x = 0.0" if i is None else "x = u0", state={"x": seed})
        return Phases(init=init, output=output, update=update, code=code)
    current = vector_reader(io, 0, w)

    def update():
        nonlocal state
        state = current()
    return Phases(init=init, output=output, update=update)


@block("zoh", feedthrough=True)
def zoh(io):
    """Zero-order hold with its own schedule Ts = max(0.001, SampleTime): a hit when
    t + 1e-6 >= nextHit (the first hit at t = 0); at a hit the output is the current
    input, between hits the sample taken at the last hit (0 before any). UPDATE takes
    the sample and sets nextHit = t + Ts."""
    if not io.outs:
        return Phases()
    S, o, ctx, w = io.S, io.outs[0], io.ctx, io.width
    ts = max(0.001, float(io.params["SampleTime"]))
    zero = fit(0.0, w)
    current = input_reader(io, w)
    held = zero
    next_hit = 0.0

    def init():
        nonlocal held, next_hit
        held, next_hit = zero, 0.0

    def algebraic():
        S[o] = current() if ctx.t + 1e-6 >= next_hit else held

    def update():
        nonlocal held, next_hit
        t = ctx.t
        if t + 1e-6 >= next_hit:
            held = current()
            next_hit = t + ts
    return Phases(init=init, algebraic=algebraic, update=update)


@block("difference", widths=ic_width("ICPrevInput"), feedthrough=True)
def difference(io):
    """y = u[k] - u[k-1], with ICPrevInput as the input before the first step."""
    return _previous_sample(io, "ICPrevInput", lambda u, p: u - p, lambda u, p: u - p)


@block("detectChange", widths=ic_width("InitialCondition"), feedthrough=True)
def detect_change(io):
    """1 where u[k] != u[k-1] (InitialCondition before the first step), else 0; NaN
    differs from everything, itself included."""
    return _previous_sample(io, "InitialCondition", lambda u, p: 1.0 if u != p else 0.0,
                            lambda u, p: _flag(np.not_equal(u, p)))


@block("detectIncrease", widths=ic_width("InitialCondition"), feedthrough=True)
def detect_increase(io):
    """1 where u[k] > u[k-1] strictly, else 0."""
    return _previous_sample(io, "InitialCondition", lambda u, p: 1.0 if u > p else 0.0,
                            lambda u, p: _flag(np.greater(u, p)))


@block("detectDecrease", widths=ic_width("InitialCondition"), feedthrough=True)
def detect_decrease(io):
    """1 where u[k] < u[k-1] strictly, else 0."""
    return _previous_sample(io, "InitialCondition", lambda u, p: 1.0 if u < p else 0.0,
                            lambda u, p: _flag(np.less(u, p)))


@block("risingEdge", widths=ic_width("InitialCondition"), feedthrough=True)
def rising_edge(io):
    """1 where u[k-1] <= 0 and u[k] > 0, else 0."""
    return _previous_sample(io, "InitialCondition",
                            lambda u, p: 1.0 if p <= 0.0 and u > 0.0 else 0.0,
                            lambda u, p: _flag(np.logical_and(np.less_equal(p, 0.0), np.greater(u, 0.0))))


@block("fallingEdge", widths=ic_width("InitialCondition"), feedthrough=True)
def falling_edge(io):
    """1 where u[k-1] >= 0 and u[k] < 0, else 0."""
    return _previous_sample(io, "InitialCondition",
                            lambda u, p: 1.0 if p >= 0.0 and u < 0.0 else 0.0,
                            lambda u, p: _flag(np.logical_and(np.greater_equal(p, 0.0), np.less(u, 0.0))))



# ----------------------------------------------------------------------------- sampled blocks

def _sample_time(io, fallback: float | None = None) -> float:
    """Ts = max(0.001, SampleTime) (nflow's floor on its own sample period)."""
    ts = io.params.get("SampleTime", fallback if fallback is not None else io.ctx.dt)
    return max(0.001, float(ts))


@block("foh", feedthrough=True)
def foh(io):
    """First-order hold with its own schedule Ts = max(0.001, SampleTime): a hit when
    t + 1e-6 >= nextHit (the first at t = 0). At a hit the output is the current input;
    between hits it extrapolates the last two samples: last + (last - prev)/Ts*(t - tLast).
    UPDATE takes the sample at a hit (prev = last, last = u, tLast = t, nextHit = t + Ts).
    Samples start at 0; an unconnected input reads 0."""
    if not io.outs:
        return Phases()
    S, o, ctx, w = io.S, io.outs[0], io.ctx, io.width
    ts = _sample_time(io)
    current = input_reader(io, w)
    zero = fit(0.0, w)
    last = prev = zero
    last_t = next_hit = 0.0

    def init():
        nonlocal last, prev, last_t, next_hit
        last = prev = zero
        last_t = next_hit = 0.0

    def algebraic():
        t = ctx.t
        if t + 1e-6 >= next_hit:
            S[o] = current()
        else:
            S[o] = last + ((last - prev) / ts) * (t - last_t)

    def update():
        nonlocal last, prev, last_t, next_hit
        t = ctx.t
        if t + 1e-6 >= next_hit:
            prev, last = last, current()
            last_t, next_hit = t, t + ts
    return Phases(init=init, algebraic=algebraic, update=update)


def discrete_tf(num, den) -> tuple:
    """nflow's buildDiscreteTf: both polynomials in z, normalized by den[0] (taken as 1
    when it is 0, as nflow's reference code does), the numerator left-padded with zeros
    to the denominator's length; an empty numerator is [0], an empty denominator [1]."""
    num = [float(v) for v in np.atleast_1d(np.asarray(num, dtype=float)).reshape(-1)] or [0.0]
    den = [float(v) for v in np.atleast_1d(np.asarray(den, dtype=float)).reshape(-1)] or [1.0]
    a0 = den[0] if den[0] != 0.0 else 1.0
    den = [v / a0 for v in den]
    num = [v / a0 for v in num]
    if len(num) < len(den):
        num = [0.0] * (len(den) - len(num)) + num
    return num, den


@block("dtf", feedthrough=True)
def dtf(io):
    """Discrete transfer function num(z)/den(z) on its own schedule Ts = max(0.001,
    SampleTime): y[k] = sum_i num[i] u[k-i] - sum_{i>=1} den[i] y[k-i] (see
    ``discrete_tf`` for the normalization). At a hit (t + 1e-6 >= nextHit) the output
    answers the current input (a biproper system feeds through); between hits it holds
    the last computed value. Histories start at 0; element-wise for vectors with shared
    coefficients; an unconnected input reads 0."""
    if not io.outs:
        return Phases()
    S, o, ctx, w = io.S, io.outs[0], io.ctx, io.width
    ts = _sample_time(io)
    num, den = discrete_tf(io.params["Numerator"], io.params["Denominator"])
    nx, ny = len(num), len(den) - 1
    current = input_reader(io, w)
    zero = fit(0.0, w)
    xh = [zero] * nx      # u[k-1], u[k-2], ... (index 0 is the newest)
    yh = [zero] * ny      # y[k-1], y[k-2], ...
    held, next_hit = zero, 0.0

    def evaluate(xs, ys):
        y = 0.0
        for c, x in zip(num, xs):
            y = y + c * x
        for c, v in zip(den[1:], ys):
            y = y - c * v
        return y

    def init():
        nonlocal xh, yh, held, next_hit
        xh, yh, held, next_hit = [zero] * nx, [zero] * ny, zero, 0.0

    def algebraic():
        if ctx.t + 1e-6 >= next_hit:
            S[o] = evaluate([current()] + xh[:-1], yh) if nx else evaluate([], yh)
        else:
            S[o] = held

    def update():
        nonlocal xh, yh, held, next_hit
        t = ctx.t
        if t + 1e-6 >= next_hit:
            if nx:
                xh = [current()] + xh[:-1]
            y = evaluate(xh, yh)
            if ny:
                yh = [y] + yh[:-1]
            held, next_hit = y, t + ts
    return Phases(init=init, algebraic=algebraic, update=update)


_MAX_BUFFER = 10_000_000   # delay-line elements


@block("ddelay", feedthrough=False)
def ddelay(io):
    """Delay by DelayLength samples of its own schedule Ts = max(0.001, SampleTime):
    y = u[k - DelayLength] in own ticks, zeros until the line fills. DelayLength is
    rounded half away from zero, at least 1. OUTPUT emits the latch; UPDATE, at a hit
    (t + 1e-6 >= nextHit), pushes the input into the ring and latches the oldest sample.
    An unconnected input reads 0."""
    if not io.outs:
        return Phases()
    S, o, ctx, w = io.S, io.outs[0], io.ctx, io.width
    ts = _sample_time(io, 0.1)
    length = io.params["DelayLength"]
    steps = int(round_half_away(float(length))) if math.isfinite(length) else 1
    steps = max(1, steps) if abs(steps) < 2 ** 31 else 1
    if steps * w > _MAX_BUFFER:
        io.fail("param_range", f"DelayLength {length:g} needs {steps * w} buffered elements "
                f"(limit {_MAX_BUFFER})", "DelayLength")
    current = input_reader(io, w)
    zero = fit(0.0, w)
    ring = [zero] * steps
    head, latch, next_hit = 0, zero, 0.0

    def init():
        nonlocal ring, head, latch, next_hit
        ring, head, latch, next_hit = [zero] * steps, 0, zero, 0.0

    def output():
        S[o] = latch

    def update():
        nonlocal head, latch, next_hit
        t = ctx.t
        if t + 1e-6 >= next_hit:
            oldest = (head + 1) % steps
            ring[head] = current()
            latch = ring[oldest]
            head, next_hit = oldest, t + ts
    return Phases(init=init, output=output, update=update)


# ----------------------------------------------------------------------------- state space

def _flat(value) -> list:
    """nflow's paramList: a matrix is read row by row (jsonencode writes rows)."""
    return [float(v) for v in np.atleast_1d(np.asarray(value, dtype=float)).reshape(-1)]


class StateSpace:
    """Resolved A (nx x nx), B (nx x nu), C (ny x nx), D (ny x nu) as nflow builds them:
    nx = round(sqrt(len(A))) (at least 1; an empty A is [0]), ny = len(C) // nx (at least
    1; 1 when C is empty), each matrix zero-padded or cut to its size. Products are
    accumulated term by term in index order, as nflow does."""

    def __init__(self, params, nu: int):
        a, b, c, d = (_flat(params.get(k, 0.0)) for k in "ABCD")
        a = a or [0.0]
        self.nx = nx = max(1, int(round_half_away(math.sqrt(len(a)))))
        self.nu = nu = max(1, nu)
        self.ny = ny = max(1, len(c) // nx) if c else 1

        def sized(values, rows, cols):
            values = (values + [0.0] * (rows * cols))[:rows * cols]
            return np.array(values, dtype=float).reshape(rows, cols)
        self.A, self.B = sized(a, nx, nx), sized(b, nx, nu)
        self.C, self.D = sized(c, ny, nx), sized(d, ny, nu)
        self.any_d = bool(np.any(self.D != 0.0))

    @staticmethod
    def _apply(M, N, x, u):
        """M x + N u, accumulated column by column (one term at a time per row)."""
        acc = np.zeros(M.shape[0])
        for j in range(M.shape[1]):
            acc = acc + M[:, j] * x[j]
        for j in range(N.shape[1]):
            acc = acc + N[:, j] * u[j]
        return acc

    def output(self, x, u):
        return self._apply(self.C, self.D, x, u)

    def derivative(self, x, u):
        return self._apply(self.A, self.B, x, u)


def initial_state(params, nx: int) -> np.ndarray:
    """InitialCondition over nx states: a scalar broadcast, a list element by element with
    its last entry repeated; absent or empty: zeros."""
    if params.get("InitialCondition") is None:
        return np.zeros(nx)
    x0 = _flat(params["InitialCondition"])
    if not x0:
        return np.zeros(nx)
    return np.array([x0[i] if i < len(x0) else x0[-1] for i in range(nx)], dtype=float)


def _scalar_form(params) -> bool:
    return all(np.asarray(params.get(k, 0.0)).size <= 1 for k in "ABCD")


def _dss_width(block, in_widths):
    if _scalar_form(block.params):
        return elementwise(block, in_widths)
    nu = max(1, in_widths[0] if in_widths else 0)
    return [StateSpace(block.params, nu).ny] * block.outputs


def _dss_feedthrough(block) -> bool:
    """Only D carries the current input to the output (y = C x + D u): with D = 0 the
    block breaks algebraic loops."""
    return bool(np.any(np.asarray(block.params.get("D", 0.0), dtype=float) != 0.0))


@block("dstateSpace", widths=_dss_width, feedthrough=_dss_feedthrough)
def dstate_space(io):
    """Discrete state space on its own schedule Ts = max(0.001, SampleTime), hits when
    t + 1e-9 >= nextHit. ALGEBRAIC: y = C x + D u with the current input at every step;
    UPDATE at a hit: x = A x + B u. Two forms, as in nflow:

    * scalar A, B, C, D: applied to every signal element independently (a width-3 input
      is three first-order systems), x starting at 0;
    * any of them a matrix (row-major, as jsonencode writes it): a MIMO system read like
      the continuous stateSpace (A nx x nx, B nx x nu, C ny x nx, D ny x nu, nu the input
      width, ny = len(C)/nx, short matrices zero-padded), x starting at InitialCondition.

    An unconnected input reads 0."""
    if not io.outs:
        return Phases()
    p = io.params
    S, o, ctx, w = io.S, io.outs[0], io.ctx, io.width
    ts = _sample_time(io, 0.1)
    if _scalar_form(p):
        a, b, c, d = (float(np.asarray(p.get(k, 0.0), dtype=float).reshape(-1)[0])
                      if np.asarray(p.get(k, 0.0)).size else 0.0 for k in "ABCD")
        current = input_reader(io, w)
        zero = fit(0.0, w)
        x, next_hit = zero, 0.0

        def init():
            nonlocal x, next_hit
            x, next_hit = zero, 0.0

        def algebraic():
            S[o] = c * x + d * current()

        def update():
            nonlocal x, next_hit
            t = ctx.t
            if t + 1e-9 >= next_hit:
                x = a * x + b * current()
                next_hit = t + ts
        return Phases(init=init, algebraic=algebraic, update=update)

    nu = max(1, io.in_widths[0] if io.in_widths else 0)
    ss = StateSpace(p, nu)
    u_of = vector_reader(io, 0, nu)
    x0 = initial_state(p, ss.nx)
    x, next_hit = x0, 0.0
    scalar_out = w == 1

    def init():
        nonlocal x, next_hit
        x, next_hit = x0, 0.0

    def algebraic():
        y = ss.output(x, u_of())
        S[o] = float(y[0]) if scalar_out else y

    def update():
        nonlocal x, next_hit
        t = ctx.t
        if t + 1e-9 >= next_hit:
            x = ss.derivative(x, u_of())
            next_hit = t + ts
    return Phases(init=init, algebraic=algebraic, update=update)


# ----------------------------------------------------------------------------- rate transition

@block("rateTransition", widths=ic_width("InitialCondition"), feedthrough=True)
def rate_transition(io):
    """Sample and hold at OutPortSampleTime Ts. Ts <= dt (the default -1 included): every
    step, y = u. Otherwise a tick when t + 1e-6*dt >= nextSample: the output answers the
    current input in that step and holds it until the next tick; the first tick is at
    t = 0, then every Ts from it (nextSample advanced by whole multiples of Ts past t).
    Before the first sample the held value is InitialCondition. An unconnected input
    reads 0."""
    if not io.outs:
        return Phases()
    S, o, ctx, w = io.S, io.outs[0], io.ctx, io.width
    ts = float(io.params["OutPortSampleTime"])
    base = float(ctx.dt) if ctx.dt > 0.0 else 1e-9
    every_step = ts <= base * (1.0 + 1e-9)
    eps = base * 1e-6
    current = input_reader(io, w)
    if every_step:
        def algebraic():
            S[o] = current()
        return Phases(algebraic=algebraic)
    seed = io.initial("InitialCondition", w)
    held, next_sample = seed, 0.0

    def init():
        nonlocal held, next_sample
        held, next_sample = seed, 0.0

    def algebraic():
        S[o] = current() if ctx.t + eps >= next_sample else held

    def update():
        nonlocal held, next_sample
        t = ctx.t
        if t + eps >= next_sample:
            held = current()
            if ts > base:
                if next_sample <= 0.0:
                    next_sample = t
                while next_sample <= t + eps:
                    next_sample += ts
    return Phases(init=init, algebraic=algebraic, update=update)
