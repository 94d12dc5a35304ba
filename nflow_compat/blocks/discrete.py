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

Not ported: nflow's generic "sub-rate hold" (state advancing only on the hits of a
``SampleTime`` these blocks do not declare in their manifests).
"""
from __future__ import annotations

import numpy as np

from . import Phases, block


# ----------------------------------------------------------------------------- helpers

def ic_width(param: str):
    """Width rule: input 0's width when it is a vector, else the length of the
    ``param`` vector when that is longer than 1, else 1."""
    def rule(block, in_widths):
        w = in_widths[0] if in_widths else 0
        if w <= 1:
            n = int(getattr(block.params.get(param), "size", 1))
            w = n if n > 1 else 1
        return [w] * block.outputs
    return rule


def input_slot(io, port: int = 0):
    """The slot of input ``port``, None when it is unconnected or not declared."""
    return io.ins[port] if port < len(io.ins) else None


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
    i = input_slot(io)
    seed = io.initial(param, w)
    zero = 0.0 if w == 1 else np.zeros(w)
    prev = seed
    held = zero   # output of the last committed pass, replayed by side-effect-free passes

    def init():
        nonlocal prev, held
        prev, held = seed, zero

    if w == 1:
        if i is None:
            def current():
                return 0.0
        else:
            def current():
                return S[i]
        rule = scalar_rule
    else:
        current = vector_reader(io, 0, w)
        rule = vector_rule

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
    else:
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
    i = input_slot(io)
    ts = max(0.001, float(io.params["SampleTime"]))
    zero = 0.0 if w == 1 else np.zeros(w)
    if w == 1:
        if i is None:
            def current():
                return 0.0
        else:
            def current():
                return S[i]
    else:
        current = vector_reader(io, 0, w)
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

