"""Force laws and time functions of the non-friction network elements.

Everything here is stateless apart from the parameters.  Sign convention of every law
(the MSL convention of a relative element): the law returns ``f``, the force the element
exerts *against* positive relative motion.  For a two-port element with
``s_rel = s_b - s_a`` the node at ``flange_b`` receives ``-f`` and the node at
``flange_a`` receives ``+f`` (``f > 0`` is tension); for a one-port element acting
between a flange and ground (``s_rel = s``, ``v_rel = v``) the flange receives ``-f``.

Time functions (the fixed force/torque sources of nflow): ``fn(t) -> float`` with
``fn.next_break(t)``, the first kink or jump strictly after ``t`` (``inf`` if none), so
the integrator can stop exactly there.
"""
from __future__ import annotations

import math

from ..errors import DiagramError

TWO_PI = 2.0 * math.pi
B_EPS = 1e-10          # MSL ElastoBacklash: below this total play the coupling is linear


def num(name, value, param, *, minimum=None, positive=False, nonzero=False):
    """A finite float parameter, or a DiagramError naming the element and parameter."""
    try:
        val = float(value)
    except (TypeError, ValueError):
        raise DiagramError("bad_param", f"{name}: {param} must be a number", block=name,
                           param=param) from None
    if not math.isfinite(val):
        raise DiagramError("bad_param", f"{name}: {param} must be finite", block=name, param=param)
    if positive and not val > 0:
        raise DiagramError("bad_param", f"{name}: {param} must be > 0", block=name, param=param)
    if nonzero and val == 0.0:
        raise DiagramError("bad_param", f"{name}: {param} must not be 0", block=name, param=param)
    if minimum is not None and val < minimum:
        raise DiagramError("bad_param", f"{name}: {param} must be >= {minimum:g}", block=name,
                           param=param)
    return val


# --------------------------------------------------------------------------------------
# Time functions

class TimeFunction:
    """Base: a force/torque as a function of time."""

    def __call__(self, t: float) -> float:
        raise NotImplementedError

    def rate(self, t: float) -> float:
        """The exact time derivative (right-sided at a corner)."""
        raise NotImplementedError

    def next_break(self, t: float) -> float:
        return math.inf


class Sine(TimeFunction):
    """``A*sin(2*pi*f*t + phase)`` (SineForce / SineTorque)."""

    def __init__(self, amplitude, frequency, phase):
        self.A, self.w, self.phase = float(amplitude), TWO_PI * float(frequency), float(phase)

    def __call__(self, t):
        return self.A * math.sin(self.w * t + self.phase)

    def rate(self, t):
        return self.A * self.w * math.cos(self.w * t + self.phase)


class Ramp(TimeFunction):
    """``slope*(t - start)`` for ``t >= start``, else 0 (RampForce / RampTorque)."""

    def __init__(self, slope, start):
        self.slope, self.start = float(slope), float(start)

    def __call__(self, t):
        return self.slope * (t - self.start) if t >= self.start else 0.0

    def rate(self, t):
        return self.slope if t >= self.start else 0.0

    def next_break(self, t):
        return self.start if t < self.start else math.inf


class ExpSine(TimeFunction):
    """``A*exp(-damping*t)*sin(2*pi*f*t + phase)`` (ExpSineForce / ExpSineTorque; MSL's
    ExpSine with offset 0 and startTime 0)."""

    def __init__(self, amplitude, frequency, damping, phase):
        self.A, self.w = float(amplitude), TWO_PI * float(frequency)
        self.damping, self.phase = float(damping), float(phase)

    def __call__(self, t):
        return self.A * math.exp(-self.damping * t) * math.sin(self.w * t + self.phase)

    def rate(self, t):
        decay = self.A * math.exp(-self.damping * t)
        angle = self.w * t + self.phase
        return decay * (self.w * math.cos(angle) - self.damping * math.sin(angle))


class Trapezoid(TimeFunction):
    """Periodic trapezoid (TrapezoidForce / TrapezoidTorque; MSL's Trapezoid with offset
    0, startTime 0 and endless periods): within each period, a linear rise from 0 to
    ``A`` over ``rising``, ``A`` for ``width``, a linear fall to 0 over ``falling``, then
    0 to the end of the period.  A zero rising/falling time is a jump (right-continuous).
    If rising+width+falling exceeds the period the shape is cut off at the period end."""

    def __init__(self, amplitude, rising, width, falling, period):
        self.A = float(amplitude)
        self.rising, self.width, self.falling = float(rising), float(width), float(falling)
        self.period = float(period)
        self.t1 = self.rising
        self.t2 = self.rising + self.width
        self.t3 = self.t2 + self.falling
        self._offsets = sorted({0.0} | {x for x in (self.t1, self.t2, self.t3) if x < self.period})

    def _phase(self, t):
        k = math.floor(t / self.period)
        tau = t - k * self.period
        if tau >= self.period:          # floating-point edge of the period
            k += 1
            tau -= self.period
        return k, max(tau, 0.0)

    def __call__(self, t):
        if t < 0.0:
            return 0.0
        _, tau = self._phase(t)
        A = self.A
        if tau < self.t1:
            return A * tau / self.rising
        if tau < self.t2:
            return A
        if tau < self.t3:
            return A - A * (tau - self.t2) / self.falling
        return 0.0

    def rate(self, t):
        if t < 0.0:
            return 0.0
        _, tau = self._phase(t)
        if tau < self.t1:
            return self.A / self.rising
        if tau < self.t2:
            return 0.0
        if tau < self.t3:
            return -self.A / self.falling
        return 0.0

    def next_break(self, t):
        if t < 0.0:
            return 0.0
        k, _ = self._phase(t)
        for kk in (k, k + 1):
            base = kk * self.period
            for off in self._offsets:
                tb = base + off
                if tb > t:
                    return tb
        return (k + 2) * self.period


# The waveform of a source element from its manifest parameters (``Element.shape``: the
# electrical, thermal and mechanical sources share nflow's parameter names)

def sine_of(el):
    return Sine(el.param("Amplitude"), el.param("Frequency"), el.param("Phase"))


def exp_sine_of(el):
    return ExpSine(el.param("Amplitude"), el.param("Frequency"), el.param("Damping"), el.param("Phase"))


def trapezoid_of(el):
    return Trapezoid(el.param("Amplitude"), el.param("Rising", nonnegative=True), el.param("Width", nonnegative=True),
                     el.param("Falling", nonnegative=True), el.param("Period", positive=True))


def ramp_of(el):
    # nflow's ramp is unbounded (MSL's saturates after its duration)
    return Ramp(el.param("Slope"), el.param("StartTime"))


# --------------------------------------------------------------------------------------
# Non-linear force laws: law(s_rel, v_rel, u, mode) -> f

class Law:
    """Base of the non-linear laws.

    ``vel_dep``: whether ``f`` can depend on the velocity of the flanges; ``switched``: the
    element has discrete contact states with events (``relations``); ``uses_input``: ``u``
    is its input signal.
    """

    vel_dep = False
    switched = False
    uses_input = False
    START = None        # the mode of a start-up law used at the initialisation (ElastoBacklash)

    def force(self, s_rel, v_rel, u, mode):
        raise NotImplementedError

    def relations(self, s_rel):
        """Values ``g`` of the event relations ``g > 0`` (switched laws only)."""
        return ()

    def mode_from(self, s_rel):
        """Discrete state implied by the relations at ``s_rel`` (switched laws only)."""
        return 0

    def mode_relations(self, mode):
        """Committed relation booleans (1.0/0.0) of a discrete state."""
        return ()

    mode_names = {0: "open"}


class QuadraticSpeed(Law):
    """Quadratic speed-dependent force/torque to ground: ``f = d*v*|v|`` (the flange
    receives ``-d*v*|v|``)."""

    def __init__(self, d):
        self.d = d
        self.vel_dep = d != 0.0

    def force(self, s, v, u, mode):
        return self.d * v * abs(v)


class TanhFriction(Law):
    """nflow's regularized Coulomb friction ``f = Fc*tanh(v/eps)`` (Friction,
    BearingFriction, and the Clutch without a normal-force input, with ``v`` the
    relative speed ``w_b - w_a``)."""

    def __init__(self, Fc, eps):
        self.Fc, self.eps = Fc, eps
        self.vel_dep = Fc != 0.0

    def force(self, s, v, u, mode):
        return self.Fc * math.tanh(v / self.eps)


class TanhBrake(Law):
    """nflow's regularized Brake / RotBrake: the input is the peak force,
    ``f = u*tanh(v/eps)``."""

    uses_input = True
    vel_dep = True

    def __init__(self, eps):
        self.eps = eps

    def force(self, s, v, u, mode):
        return u * math.tanh(v / self.eps)


class Freewheel(Law):
    """nflow's Freewheel (one-way clutch): a damper ``d`` that only transmits while
    flange a overruns flange b (``w_a > w_b``, i.e. ``v_rel = w_b - w_a < 0``), blended
    over ``eps``: ``f = d*v_rel*(1 + tanh(-v_rel/eps))/2``."""

    def __init__(self, d, eps):
        self.d, self.eps = d, eps
        self.vel_dep = d != 0.0

    def force(self, s, v, u, mode):
        return self.d * v * 0.5 * (1.0 + math.tanh(-v / self.eps))


class ElastoGap(Law):
    """MSL Translational.Components.ElastoGap (components.md section 4).

    ``contact = s_rel < s_rel0`` (an event relation; the committed state selects the
    branch between events); in contact ``f_c = -c*|s_rel - s_rel0|``,
    ``f_d = clamp(d*v_rel, f_c, -f_c)``, ``f = f_c + f_d``; else 0.  Only pushing
    forces; continuous at contact.  Modes: 0 open, 1 contact.

    Outside its domain (``s_rel > s_rel0`` while the committed state is still contact,
    i.e. between a crossing and its located event, or inside a Newton iteration) the
    contact branch is continued as an odd function (``f_c = +c*|...|``, damping
    clamped to ``|f_c|``) instead of MSL's ``abs`` (which would push again): identical
    inside the domain, monotone for the massless-node solver.
    """

    switched = True
    mode_names = {0: "open", 1: "contact"}

    def __init__(self, c, d, s_rel0):
        self.c, self.d, self.s_rel0 = c, d, s_rel0
        self.vel_dep = d != 0.0

    def force(self, s, v, u, mode):
        if not mode:
            return 0.0
        delta = self.s_rel0 - s          # > 0 in contact
        mag = self.c * abs(delta)
        f_c = -mag if delta >= 0.0 else mag
        f_d2 = self.d * v
        f_d = -mag if f_d2 < -mag else (mag if f_d2 > mag else f_d2)
        return f_c + f_d

    def relations(self, s):
        return (self.s_rel0 - s,)

    def mode_from(self, s):
        return 1 if s < self.s_rel0 else 0

    def mode_relations(self, mode):
        return (1.0 if mode else 0.0,)


class ElastoBacklash(Law):
    """MSL Rotational.Components.ElastoBacklash (components.md section 5).

    ``Delta = phi_rel - phi_rel0``, ``bMax = b/2``.  With ``b <= 1e-10`` the coupling is
    linear ``c*Delta + d*w_rel``; otherwise the relations
    ``Delta > bMax`` / ``Delta < bMin`` (events) select the branch: in contact
    ``tau_c = c*(Delta -+ bMax)``, ``tau = 0`` while it would pull, else
    ``tau_c + min/max(tau_c, d*w_rel)``; in the free play ``tau = 0``.
    Modes: -1 contact on the negative side, 0 free play, +1 contact on the positive side;
    ``START`` is MSL's monotone law of the initialisation (``c*(Delta - bMax)`` above
    ``1.5*bMax``, ``c*(Delta - bMin)`` below ``1.5*bMin``, ``c/3*Delta`` between, plus
    ``d*w_rel``), where a first solution is sought when the contact modes have none (a
    massless flange held inside the play): never a committed mode.
    """

    mode_names = {-1: "contact-", 0: "free", 1: "contact+"}
    START = 2

    def __init__(self, c, d, b, phi_rel0):
        self.c, self.d, self.b, self.rel0 = c, d, b, phi_rel0
        self.bMax = b / 2.0
        self.bMin = -self.bMax
        self.vel_dep = d != 0.0
        self.linear = b <= B_EPS
        self.switched = not self.linear

    def force(self, s, v, u, mode):
        c, delta, w = self.c, s - self.rel0, v
        if self.linear:
            return c * delta + self.d * w
        if mode == self.START:
            if delta > 1.5 * self.bMax:
                return c * (delta - self.bMax) + self.d * w
            if delta < 1.5 * self.bMin:
                return c * (delta - self.bMin) + self.d * w
            return c / 3.0 * delta + self.d * w
        if mode > 0:
            tau_c = c * (delta - self.bMax)
            tau_d = self.d * w
            return 0.0 if tau_c + tau_d <= 0.0 else tau_c + min(tau_c, tau_d)
        if mode < 0:
            tau_c = c * (delta - self.bMin)
            tau_d = self.d * w
            return 0.0 if tau_c + tau_d >= 0.0 else tau_c + max(tau_c, tau_d)
        return 0.0

    def relations(self, s):
        if self.linear:
            return ()
        delta = s - self.rel0
        return (delta - self.bMax, self.bMin - delta)

    def mode_from(self, s):
        if self.linear:
            return 0
        delta = s - self.rel0
        return 1 if delta > self.bMax else (-1 if delta < self.bMin else 0)

    def mode_relations(self, mode):
        if self.linear:
            return ()
        return (1.0 if mode > 0 else 0.0, 1.0 if mode < 0 else 0.0)
