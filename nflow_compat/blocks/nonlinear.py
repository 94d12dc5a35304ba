"""nflow's Non-Linear library: saturation, hysteresis (relay), rate, backlash, deadZone,
quantizer, hitCrossing, coulombViscousFriction.

Each handler follows nflow's C++ source for the block (not the prose of its page):

* the memoryless curves (saturation, deadZone, quantizer, coulombViscousFriction) run in
  ALGEBRAIC and write nothing while their input is unconnected, so the output keeps its
  initial value 0;
* the stateful blocks with direct feedthrough (hysteresis, rate, backlash) answer the
  current input in ALGEBRAIC from the state committed at the previous step, and only
  UPDATE commits the new state. Their unconnected input reads 0;
* hitCrossing reads its input in OUTPUT (declaration order, before the algebraic wave)
  and remembers it in UPDATE; an unconnected input reads 0.

Comparisons are written the way the C++ writes them so NaN behaves the same:
``std::max(a, b)`` is ``b if a < b else a``, ``std::min(a, b)`` is ``b if b < a else a``.
nflow's hysteresis and hitCrossing handlers are scalar; here a vector input gives a
vector output whose elements each behave like the scalar block (own latch / own memory).
Solver zero-crossing surfaces (saturation, deadZone) are not produced: the fixed-step
loop has no event location.
"""
from __future__ import annotations

import math

import numpy as np

from ..parts import crossing_part
from ..signals import round_half_away
from . import Code, Phases, block, pointwise, pointwise_state


def _band_surfaces(S, i, lo, hi):
    """nflow's ZERO_CROSSING of saturation and deadZone: u - lo and u - hi per element
    (a constant 1 for a limit that is not finite), so a solver restarts at the kinks."""
    bounds = [b if math.isfinite(b) else None for b in (lo, hi)]

    def surfaces():
        u = np.atleast_1d(S[i])
        return np.concatenate([u - b if b is not None else np.ones(u.size) for b in bounds])
    return surfaces


def _slots(io):
    """(input slot or None, output slot or None): tolerant of a block declared with 0 ports."""
    i = io.ins[0] if io.ins else None
    o = io.outs[0] if io.outs else None
    return i, o


def _nonneg(value: float) -> float:
    """std::max(0.0, value): negative and NaN values become 0."""
    return value if 0.0 < value else 0.0


# ----------------------------------------------------------------------------- memoryless

@block("saturation", solver_role="crossings")
def saturation(io):
    """y = min(max(u, LowerLimit), UpperLimit) element-wise. As in nflow a NaN limit is no
    limit, a NaN input stays NaN, and LowerLimit > UpperLimit gives UpperLimit."""
    lo, hi = io.params["LowerLimit"], io.params["UpperLimit"]
    i, o = _slots(io)
    if i is None or o is None:
        return Phases()
    where = np.where

    def vector(u):
        v = where(u < lo, lo, u)
        return where(hi < v, hi, v)

    def array(t, inputs):
        u = inputs[0]
        v = u.copy()        # the two comparisons of the closure, as masks (cheaper than where)
        v[u < lo] = lo
        v[hi < v] = hi
        return [v]
    return pointwise(io, (0,), vector, array=array, part=crossing_part(io, _band_surfaces(io.S, i, lo, hi)),
                     code=Code(algebraic="v = lo if u0 < lo else u0\ny0 = hi if hi < v else v",
                               constants={"lo": lo, "hi": hi}))


@block("deadZone", solver_role="crossings")
def dead_zone(io):
    """u - LowerValue below the band, u - UpperValue above it, 0 inside (and for NaN)."""
    lo, hi = io.params["LowerValue"], io.params["UpperValue"]
    i, o = _slots(io)
    if i is None or o is None:
        return Phases()
    where = np.where

    def vector(u):
        return where(u < lo, u - lo, where(u > hi, u - hi, 0.0))
    return pointwise(io, (0,), vector, array=lambda t, u: [vector(u[0])], part=crossing_part(io, _band_surfaces(io.S, i, lo, hi)),
                     code=Code(algebraic="y0 = u0 - lo if u0 < lo else (u0 - hi if u0 > hi else 0.0)",
                               constants={"lo": lo, "hi": hi}))


@block("quantizer")
def quantizer(io):
    """q*round(u/q) with q = |QuantizationInterval| (q < 1e-12 means 1), rounding halves
    away from zero as C++ std::round does."""
    q = abs(io.params["QuantizationInterval"])
    if q < 1e-12:
        q = 1.0
    i, o = _slots(io)
    S = io.S
    if i is None or o is None:
        return Phases()
    rnd = round_half_away  # floats and arrays alike

    def algebraic():
        S[o] = q * rnd(S[i] / q)
    return Phases(algebraic=algebraic)


@block("coulombViscousFriction")
def coulomb_viscous_friction(io):
    """y = Gain*u + Offset*sign(u) element-wise, sign(0) = sign(NaN) = 0."""
    g, c = io.params["Gain"], io.params["Offset"]
    i, o = _slots(io)
    if i is None or o is None:
        return Phases()
    return pointwise(io, (0,), lambda u: g * u + c * ((u > 0.0).astype(float) - (u < 0.0)),
                     scalar=lambda u: g * u + c * (1.0 if u > 0.0 else (-1.0 if u < 0.0 else 0.0)))


# ----------------------------------------------------------------------------- stateful, feedthrough

@block("hysteresis", solver_role="crossings")
def hysteresis(io):
    """Relay: yHigh when u >= uHigh, else yLow when u <= uLow, else the latched value
    (which starts at yLow). Answers the current input in ALGEBRAIC; UPDATE latches.

    Under a solver it is a hybrid element (MSL's OnOffController / Hysteresis): the
    threshold that would switch it is a zero-crossing surface (u - min(uLow, uHigh) while
    high, u - uHigh while low) and it latches at every located event too, so it holds its
    output between two grid points as well (nflow's handler latches at major steps only)."""
    p = io.params
    u_hi, u_lo, y_hi, y_lo = p["uHigh"], p["uLow"], p["yHigh"], p["yLow"]
    if _slots(io)[1] is None:
        return Phases()
    where = np.where
    falls = min(u_lo, u_hi)     # while high, the output falls once u <= uLow and u < uHigh

    def switches(u, state):
        return np.atleast_1d(np.asarray(u, dtype=float) - where(np.asarray(state) == y_hi, falls, u_hi))
    return pointwise_state(io, lambda u, state: y_hi if u >= u_hi else (y_lo if u <= u_lo else state),
                           lambda u, state: where(u >= u_hi, y_hi, where(u <= u_lo, y_lo, state)), y_lo,
                           switches=switches)


@block("rate")
def rate(io):
    """Slew-rate limiter: y = min(prev + R*dt, max(prev - F*dt, u)) with R, F the
    RisingSlewLimit / FallingSlewLimit clamped to >= 0 and prev the committed output
    (0 at the start). A NaN input gives prev - F*dt, as std::min/std::max do."""
    rise = _nonneg(io.params["RisingSlewLimit"])
    fall = _nonneg(io.params["FallingSlewLimit"])
    ctx = io.ctx
    if _slots(io)[1] is None:
        return Phases()
    where = np.where

    def scalar(u, prev):
        dt = ctx.dt
        low = prev - fall * dt
        high = prev + rise * dt
        m = u if low < u else low
        return m if m < high else high

    def vector(u, prev):
        dt = ctx.dt
        low = prev - fall * dt
        high = prev + rise * dt
        m = where(low < u, u, low)
        return where(m < high, m, high)
    return pointwise_state(io, scalar, vector, 0.0)


@block("backlash")
def backlash(io):
    """Play of total width w = max(0, BacklashWidth): the output (committed, 0 at the
    start) holds while u stays within w/2 of it, else follows at u -/+ w/2."""
    w = _nonneg(io.params["BacklashWidth"])
    half = w / 2.0
    if _slots(io)[1] is None:
        return Phases()
    where = np.where

    def scalar(u, prev):
        if u > prev + half:
            return u - half
        if u < prev - half:
            return u + half
        return prev
    return pointwise_state(io, scalar, lambda u, prev: where(u > prev + half, u - half,
                                                             where(u < prev - half, u + half, prev)), 0.0)


# ----------------------------------------------------------------------------- stateful, OUTPUT

@block("hitCrossing", feedthrough=False)
def hit_crossing(io):
    """1 on the step where c = u - HitCrossingOffset reaches 0 from the other side
    (rising: prev < 0 <= c; falling: prev > 0 >= c; either), else 0. The first step fires
    only when c == 0 exactly. The input is read in OUTPUT, so a source declared earlier
    is seen at this step, while a feedthrough block's output still holds the previous
    step's value; UPDATE remembers the input as it stands at the end of the step (so
    behind a feedthrough block OUTPUT compares a value with itself and never fires)."""
    off = io.params["HitCrossingOffset"]
    direction = io.params["HitCrossingDirection"]
    want_rise = direction != "falling"
    want_fall = direction != "rising"
    i, o = _slots(io)
    S = io.S
    if o is None:
        return Phases()
    width = io.width
    prev = 0.0
    primed = False

    if width == 1:
        def init():
            nonlocal prev, primed
            prev, primed = 0.0, False

        def output():
            c = (S[i] if i is not None else 0.0) - off
            if primed:
                hit = ((want_rise and prev < 0.0 and c >= 0.0)
                       or (want_fall and prev > 0.0 and c <= 0.0))
            else:
                hit = c == 0.0
            S[o] = 1.0 if hit else 0.0

        def update():
            nonlocal prev, primed
            prev = (S[i] if i is not None else 0.0) - off
            primed = True
    else:
        zeros = np.zeros(width)
        no = np.zeros(width, dtype=bool)

        def init():
            nonlocal prev, primed
            prev, primed = np.zeros(width), False

        def output():
            c = (S[i] if i is not None else zeros) - off
            if primed:
                rising = ((prev < 0.0) & (c >= 0.0)) if want_rise else no
                falling = ((prev > 0.0) & (c <= 0.0)) if want_fall else no
                hit = rising | falling
            else:
                hit = c == 0.0
            S[o] = hit.astype(float)

        def update():
            nonlocal prev, primed
            prev = (S[i] if i is not None else zeros) - off
            primed = True
    return Phases(init=init, output=output, update=update)
