"""MSL 4.1.0 friction state machines (behaviour of ``PartialFrictionWithStop`` and of the
translational and rotational ``PartialFriction``), written as pure functions.

Vocabulary (Modelica): ``pre(x)`` is the value of a discrete variable before the current
event-iteration step; ``sa`` is the *path parameter*: while locked it is the unknown sticking
force/torque (the multiplier of the constraint ``a_rel = 0``), while sliding it only
parametrises the acceleration (``a_rel = sa -+ f0_max``).

Modes: Unknown 3 (pre value before initialisation only), Free 2, Forward 1, Stuck 0,
Backward -1.  The event iteration of one element (the network couples several through the
stuck forces) is:

* start flags (with the room predicates ``R+ = s < smax-L/2``, ``R- = s > smin+L/2``; both
  are simply true for elements without stops)::

    startForward  = pre(mode)=Stuck and R+ and (sa > f0_max or pre(startForward) and sa > f0)
                    or pre(mode)=Backward and v > v_small or initial() and v > 0
    startBackward = mirror image
    locked        = not free and not (pre(mode) in {Forward, Backward} or startForward or startBackward)

* the branch of the force law and of ``a_rel(sa)``: locked / free / startForward /
  startBackward / pre(mode)=Forward / otherwise (Backward);
* the new mode::

    Free if free; Forward if (pre(mode) in {Forward, Free} or startForward) and v > 0 and R+;
    Backward if (pre(mode) in {Backward, Free} or startBackward) and v < 0 and R-; else Stuck.

``startForward``/``startBackward`` and ``locked`` depend on ``sa`` which depends on them
(a mixed system): ``acausal.DaeIsland`` solves it by iterating from the pre values.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import DiagramError, SimulationError

UNKNOWN, FREE, FORWARD, STUCK, BACKWARD = 3, 2, 1, 0, -1
MODE_NAMES = {UNKNOWN: "unknown", FREE: "free", FORWARD: "forward", STUCK: "stuck",
              BACKWARD: "backward"}

# Branches of the force law / acceleration map (which equation row is active).
LOCKED, FREE_BRANCH, START_F, START_B, SLIDE_F, SLIDE_B = range(6)


@dataclass(frozen=True)
class FrictionState:
    """Discrete state of one friction element (the values committed at the last event)."""

    mode: int = UNKNOWN
    start_forward: bool = False
    start_backward: bool = False
    stopped: int = 0          # hard-stop indicator (-1 left, 0 none, +1 right); 0 without stops


class Table1D:
    """MSL CombiTable1D with LinearSegments and LastTwoPoints extrapolation (one column)."""

    def __init__(self, rows, name: str, param: str):
        arr = np.asarray(rows, dtype=float)
        if arr.ndim == 1:
            arr = arr.reshape(1, -1)
        if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1 or not np.all(np.isfinite(arr)):
            raise DiagramError("bad_param", f"{name}: {param} must be a table of [x, y] rows",
                               block=name, param=param)
        if arr.shape[0] > 1 and np.any(np.diff(arr[:, 0]) <= 0):
            raise DiagramError("bad_param", f"{name}: the first column of {param} must be "
                               "strictly increasing", block=name, param=param)
        self.x = arr[:, 0].copy()
        self.y = arr[:, 1].copy()
        self.n = arr.shape[0]
        if self.n > 1:
            self.s_lo = (self.y[1] - self.y[0]) / (self.x[1] - self.x[0])
            self.s_hi = (self.y[-1] - self.y[-2]) / (self.x[-1] - self.x[-2])
        self.x_lo, self.x_hi = self.x[0], self.x[-1]
        self.y_lo, self.y_hi = self.y[0], self.y[-1]
        self.const = self.n == 1 or bool(np.all(self.y == self.y[0]))

    def __call__(self, u: float) -> float:
        if self.n == 1:
            return float(self.y[0])
        if u <= self.x_lo:
            return float(self.y_lo + self.s_lo * (u - self.x_lo))
        if u >= self.x_hi:
            return float(self.y_hi + self.s_hi * (u - self.x_hi))
        return float(np.interp(u, self.x, self.y))


class FrictionLaw:
    """Parameters and force law of one MSL friction element (no state)."""

    has_stops = False
    uses_normal_force = False     # free = (fn <= 0) with fn from an input signal
    small = 1e-3                  # v_small / w_small of the direct-reversal rule
    smin_eff = -math.inf          # smin + L/2
    smax_eff = math.inf           # smax - L/2

    def is_free(self, fn: float, room_f: bool, room_b: bool) -> bool:
        raise NotImplementedError

    def thresholds(self, fn: float) -> tuple[float, float]:
        """``(f0, f0_max)``: sliding-start force and breakaway force at zero speed."""
        raise NotImplementedError

    def force(self, branch: int, v: float, fn: float) -> float:
        """Friction force of a sliding branch (START_F, START_B, SLIDE_F, SLIDE_B)."""
        raise NotImplementedError


def _check(name, cond, param, what):
    if not cond:
        raise DiagramError("bad_param", f"{name}: {param} {what}", block=name, param=param)


class StribeckStopLaw(FrictionLaw):
    """MassWithStopAndFriction: Coulomb + viscous + Stribeck against ground, hard stops."""

    has_stops = True

    def __init__(self, name, *, F_prop=1.0, F_Coulomb=5.0, F_Stribeck=10.0, fexp=2.0,
                 smin=-25.0, smax=25.0, L=0.0, v_small=1e-3):
        for p, val in (("F_prop", F_prop), ("F_Coulomb", F_Coulomb), ("F_Stribeck", F_Stribeck),
                       ("fexp", fexp), ("smin", smin), ("smax", smax), ("L", L),
                       ("v_small", v_small)):
            _check(name, isinstance(val, (int, float)) and math.isfinite(val), p, "must be a finite number")
        _check(name, F_prop >= 0, "F_prop", "must be >= 0")
        _check(name, fexp >= 0, "fexp", "must be >= 0")
        _check(name, L >= 0, "L", "must be >= 0")
        _check(name, smax - smin >= L, "smax", "must leave room for the mass: smax - smin >= L")
        self.name = name
        self.F_prop, self.F_Coulomb, self.F_Stribeck, self.fexp = (
            float(F_prop), float(F_Coulomb), float(F_Stribeck), float(fexp))
        self.smin, self.smax, self.L = float(smin), float(smax), float(L)
        self.smin_eff = self.smin + self.L / 2.0
        self.smax_eff = self.smax - self.L / 2.0
        self.small = float(v_small)
        self.f0 = self.F_Coulomb + self.F_Stribeck
        self.f0_max = 1.001 * self.f0
        self.can_be_free = self.f0 <= 0 and self.F_prop <= 0

    def is_free(self, fn, room_f, room_b):
        return self.can_be_free and room_f and room_b

    def thresholds(self, fn):
        return self.f0, self.f0_max

    def force(self, branch, v, fn):
        if branch == START_F:
            return self.F_prop * v + self.f0
        if branch == START_B:
            return self.F_prop * v - self.f0
        strib = self.F_Coulomb + self.F_Stribeck * math.exp(-self.fexp * abs(v))
        if branch == SLIDE_F:
            return self.F_prop * v + strib
        return self.F_prop * v - strib


class TableFrictionLaw(FrictionLaw):
    """Table friction of the MSL PartialFriction family.

    ``kind='brake'`` (translational or rotational Brake) and ``kind='clutch'``:
    ``f = mu(v)*cgeo*fn`` with ``fn = fn_max*u``, free when ``fn <= 0``,
    ``f0 = mu(0)*cgeo*fn``, ``f0_max = peak*f0``.

    Table signs ``(sigma_v, sigma_mu)`` per branch: startForward (+1,+1), startBackward
    (-1,-1) except the Clutch's (+1,-1) (an MSL asymmetry kept on purpose), pre Forward
    (+1,+1), otherwise (-1,-1); the force is ``sigma_mu*table(sigma_v*v)``.
    """

    uses_normal_force = True

    def __init__(self, name, *, kind, table, peak=1.0, cgeo=1.0, fn_max=1.0, small=1e-3):
        _check(name, kind in ("brake", "clutch"), "kind", "is unknown")
        self.name = name
        self.kind = kind
        self.table = Table1D(table, name, "mu_pos")
        for p, val in (("peak", peak), ("cgeo", cgeo), ("fn_max", fn_max), ("small", small)):
            _check(name, isinstance(val, (int, float)) and not math.isnan(val), p, "must be a number")
        _check(name, peak >= 1, "peak", "must be >= 1")
        _check(name, cgeo >= 0, "cgeo", "must be >= 0")
        _check(name, fn_max >= 0, "fn_max", "must be >= 0")
        self.peak, self.cgeo, self.fn_max = float(peak), float(cgeo), float(fn_max)
        self.small = float(small)
        self.t0 = self.table(0.0)
        self.sb_sign_v = 1.0 if kind == "clutch" else -1.0

    def is_free(self, fn, room_f, room_b):
        return fn <= 0.0

    def thresholds(self, fn):
        f0 = self.t0 * (self.cgeo * fn)
        return f0, self.peak * f0

    def force(self, branch, v, fn):
        scale = self.cgeo * fn
        tab = self.table
        if branch == START_F or branch == SLIDE_F:
            return tab(v) * scale
        if branch == START_B:
            return -tab(self.sb_sign_v * v) * scale
        return -tab(-v) * scale


# --------------------------------------------------------------------------------------
# The pure pieces of one event-iteration step.

def is_locked(free: bool, pre_mode: int, sf: bool, sb: bool) -> bool:
    return (not free) and not (pre_mode == FORWARD or sf or pre_mode == BACKWARD or sb)


def branch_of(free: bool, locked: bool, sf: bool, sb: bool, pre_mode: int) -> int:
    if locked:
        return LOCKED
    if free:
        return FREE_BRANCH
    if sf:
        return START_F
    if sb:
        return START_B
    if pre_mode == FORWARD:
        return SLIDE_F
    return SLIDE_B


def sa_from_arel(branch: int, a_rel: float, f0_max: float) -> float:
    """Invert the acceleration map ``a_rel(sa)`` of a non-locked branch."""
    if branch == FREE_BRANCH:
        return a_rel
    if branch == START_F or branch == SLIDE_F:
        return a_rel + f0_max
    return a_rel - f0_max


def start_flags(pre: FrictionState, sa: float, v: float, small: float, room_f: bool,
                room_b: bool, f0: float, f0_max: float, initial: bool) -> tuple[bool, bool]:
    stuck = pre.mode == STUCK
    sf = ((stuck and room_f and (sa > f0_max or (pre.start_forward and sa > f0)))
          or (pre.mode == BACKWARD and v > small) or (initial and v > 0.0))
    sb = ((stuck and room_b and (sa < -f0_max or (pre.start_backward and sa < -f0)))
          or (pre.mode == FORWARD and v < -small) or (initial and v < 0.0))
    return sf, sb


def next_mode(free: bool, pre_mode: int, sf: bool, sb: bool, v: float, room_f: bool,
              room_b: bool) -> int:
    if free:
        return FREE
    if (pre_mode == FORWARD or pre_mode == FREE or sf) and v > 0.0 and room_f:
        return FORWARD
    if (pre_mode == BACKWARD or pre_mode == FREE or sb) and v < 0.0 and room_b:
        return BACKWARD
    return STUCK


def stop_indicator(law: FrictionLaw, s: float) -> int:
    """MSL ``stopped``: -1 at/below the left stop, +1 at/above the right stop, else 0."""
    if not law.has_stops:
        return 0
    if s <= law.smin_eff:
        return -1
    if s >= law.smax_eff:
        return 1
    return 0


def check_initial_stop(law: FrictionLaw, s: float, v: float) -> None:
    """MSL's initialisation assertions of MassWithStopAndFriction."""
    if not law.has_stops:
        return
    if not (s > law.smin_eff or (s >= law.smin_eff and v >= 0.0)):
        raise SimulationError(
            "stop_violated_at_init",
            f"{law.name}: initial position outside the left stop: s - L/2 must be >= smin "
            f"(s={s:g}, L={law.L:g}, smin={law.smin:g}; at the stop v must be >= 0, v={v:g})",
            block=law.name)
    if not (s < law.smax_eff or (s <= law.smax_eff and v <= 0.0)):
        raise SimulationError(
            "stop_violated_at_init",
            f"{law.name}: initial position outside the right stop: s + L/2 must be <= smax "
            f"(s={s:g}, L={law.L:g}, smax={law.smax:g}; at the stop v must be <= 0, v={v:g})",
            block=law.name)


# Relations watched between events, as "g > 0" functions (codes used by mechanical.py).
REL_V_POS, REL_V_NEG, REL_SA_FMAX_POS, REL_SA_F0_POS, REL_SA_FMAX_NEG, REL_SA_F0_NEG, \
    REL_ROOM_F, REL_ROOM_B, REL_FN = range(9)


def watched_relations(law: FrictionLaw, state: FrictionState) -> tuple[int, ...]:
    """Relations whose change can alter the discrete state committed in ``state``.

    Modelica watches every relation all the time; the ones left out here cannot change
    anything in the given state (e.g. ``sa > f0_max`` while sliding), so skipping them only
    avoids events with no effect.  ``v > v_small`` while Backward is also left out: ``v``
    is continuous between events and must cross 0 (an event) before it can exceed v_small;
    after a velocity jump the event iteration evaluates it directly.
    """
    rels = []
    if law.uses_normal_force:
        rels.append(REL_FN)
    if law.has_stops:
        rels += [REL_ROOM_F, REL_ROOM_B]
    mode = state.mode
    if mode == STUCK:
        rels += [REL_SA_FMAX_POS, REL_SA_FMAX_NEG]
        if state.start_forward:
            rels += [REL_V_POS, REL_SA_F0_POS]
        if state.start_backward:
            rels += [REL_V_NEG, REL_SA_F0_NEG]
    elif mode == FORWARD:
        rels.append(REL_V_POS)
    elif mode == BACKWARD:
        rels.append(REL_V_NEG)
    return tuple(rels)
