"""Event-locating integration of hybrid (continuous + discrete) systems.

A *hybrid system* is any object with

* ``derivative(t, x) -> xdot`` - pure; uses the discrete state committed at the last event;
* ``event_functions(t, x) -> g`` - pure, 1-D array.  Each entry stands for the relation
  ``g > 0`` (a Modelica relation written in "greater than zero" form).  An event happens when
  that boolean changes with respect to its value at the last (re)start; its length is fixed
  between events and may change after one;
* ``handle_events(t, x, fired) -> x_new`` - commits the discrete changes at an event (event
  iteration to a fixed point, re-initialisations); ``fired`` holds the indices of the
  relations that changed (empty for a time event);

and optionally

* ``initialize(t0, x0) -> x0`` - the initial event iteration (Modelica ``initial()``);
* ``next_time_event(t) -> float`` - the time of the first time event not handled yet (a
  Step's start time, a pulse edge, an FMU's announced event), ``inf`` if none. The driver
  asks with the time it has reached, after committing any event there, so a provider
  without memory answers the first one strictly after ``t``; a time at or before ``t`` is
  an event due now (an FMU's announced time that nothing has handled yet), committed at
  once;
* ``relation_values(t, x) -> array`` - the committed value of each relation at a (re)start:
  1.0 (true), 0.0 (false) or NaN (let the driver decide, see below);
* ``warm_started`` - True when an evaluation may leave behind a warm start (a Newton
  iteration's last solution) that later results depend on to the last bit: the event
  functions are then evaluated at every step end even when there are none, as the driver
  always has, so results do not change with that shortcut.

Restarting on a threshold: after a restart an event function may sit exactly at 0 (``v = 0``
after a stop re-initialisation, ``s == smin`` at the stop).  It never fires *at* the restart
instant.  Which side it is on is decided

* by default (no ``relation_values``, or NaN there) from the side it moves to: its sign a
  moment after the restart (read from the first step's dense output) becomes the frozen
  value, so a function leaving zero is not a crossing (a ball re-launched from the floor);
* by the system when it provides ``relation_values``: the Modelica islands do, with
  Modelica semantics (``v > 0`` is false at ``v = 0``), so ``v`` leaving zero after a
  breakaway IS an event, located just after the restart - MSL's second breakaway stage,
  which Dymola also reports ~1e-12 s after the first - and so is ``s`` leaving the stop
  (MSL re-arms ``stopped`` there, needed for the next impact).

Event location: scipy's ``brentq`` finds where the relation flips on the solver's dense
output, to ``1e-13*max(1, |t|)``, and the event is placed at the *right* end of that
bracket, where the relation has already flipped (``_locate``): the state handed to
``handle_events`` is on the new side (a velocity that crossed zero is already minutely of
the new sign: MSL/Dymola's direct Forward <-> Backward reversal).  The solver is
restarted *at* the event time with the new state.

Output: the caller's grid ``t_k`` is reported from dense output (never by shortening
steps); a grid time that coincides with an event reports the post-event value.

Time events: a segment ends at the next time event in ``(t, t_end]``, the end of the
grid included, so an event on the last grid point of a call (a grid point when the
caller restarts at every one, or the stop time) is committed, once, before that point is
reported; the next call asks from there and gets the next one.

Inputs with jumps: inside an integration segment ending at a time event ``T`` every
evaluation is made at ``min(t, nextafter(T, -inf))``, so a source ``0 if t < T else 1`` is
seen at its left limit until the event at ``T`` is processed (Modelica freezes time
relations between events).

Rejected steps: a system evaluation that has no answer at a trial point (a Newton solve
that fails, a derivative that overflows: ``errors.SolveFailed``, raised by the system from
inside ``solver.step()`` or the event scan) rejects that step, as a corrector failure does
in DASSL and IDA. The solver is discarded (scipy's LSODA cannot go on after an exception
in its callback) and a new one starts from the last accepted state with a quarter of the
step it tried (``RETRY_FACTOR``); nothing of the rejected step was reported or committed.
A fixed-step method takes the rest of that grid interval in substeps of half its step
(halved again at each failure), then its own step again; those intervals are reported
(``substeps``) for a warning. Only a step below ``min_step`` that still fails ends the run,
with the solve's own typed error (its code and block). A failure anywhere else (the start,
an event, a major step at a grid point) is the error at once.

Methods (``engine.solvers``): ``ode45`` = scipy RK45 (Dormand-Prince 5(4)), ``dae`` =
scipy LSODA, any scipy OdeSolver name (``RK23``, ``DOP853``, ``BDF``, ``LSODA``,
``Radau``, ``RK45``), and the fixed-step ``ode1`` (forward Euler) / ``ode4`` (classical
RK4), OdeSolvers of their own that land on the grid, with events still located inside a
step. One loop steps them all (``_Run``); the solver is asked for its state between two
step ends through its public ``dense_output()``, the times of a step asked at once.
"""
from __future__ import annotations

import math
import threading
import time as _time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np
from scipy.optimize import brentq

from ..errors import SimulationError, SolveFailed
from .solvers import FIXED_STEP, FixedStep, solver_class
from .solvers.fixed import snap

_EPS = float(np.finfo(float).eps)    # a Python float: numpy scalars are slow in arithmetic

# The stability function R(z) of each fixed-step method, coefficients lowest power first: a
# mode x' = lambda x is multiplied by R(h lambda) per step (Hairer & Wanner, Solving ODEs II,
# IV.2). Forward Euler R = 1 + z (|R| > 1 beyond z = -2 on the real axis); classical RK4
# R = 1 + z + z^2/2 + z^3/6 + z^4/24 (beyond z = -2.785).
STABILITY_FUNCTION = {"ode1": (1.0, 1.0), "ode4": (1.0, 1.0, 1.0 / 2.0, 1.0 / 6.0, 1.0 / 24.0)}
# h |lambda| above which the step counts as "far above" a time constant 1/|lambda|; also
# h*(secant slope between two stages) from which a step is suspected of crossing a steep
# region of the rate (the two stages' rates differ by more than the state moved per h)
SUSPECT = 1.0
# suspect checks before the Jacobian is looked at, and clean checks in a row that forget
# them (DOPRI5's stiffness test: 15 and 6 of its many small steps; a fixed-step run may
# have few): one step straddling a kink is not taken for a fast element. Doubled after
# each look that finds nothing, so a law that only looks steep costs little.
STIFF_CHECKS = 4
CLEAN_CHECKS = 3
# h*(secant slope) this far above SUSPECT is beyond every method's stability boundary: the
# step ran across an element it cannot follow (an exponential junction's wall, where one
# stage's rate is 1e5 times the others'), looked at at once rather than after STIFF_CHECKS
EXTREME = 100.0
# the bisection for the steepest piece stops when the slope grew by less than this factor
# over two halvings (the law is linear at that scale); across a steep region it doubles
# with each halving once the region fills one half, and across a jump it never stops
_STEEPER = 1.02
_SQRT_EPS = math.sqrt(_EPS)
# a rejected step (a solve failed at a trial point) is retried with this fraction of it
# (DASSL and IDA after a corrector failure); a fixed-step method halves its substep
RETRY_FACTOR = 0.25


def min_step(t: float) -> float:
    """The smallest step a rejected one is retried with at time ``t`` (a thousand ulps of
    ``max(1, |t|)``, ~2e-13 s up to t = 1 s): below it the failed solve is the error."""
    return 1e3 * _EPS * max(1.0, abs(t))


class Stiffness(NamedTuple):
    """What ``StiffnessWatch`` found: from time ``t`` on, a step ``step`` amplifies a mode
    ``mode`` (an eigenvalue, 1/s) the model damps ``growth`` times per step; ``state``: the
    index of the state whose rate moved most there."""

    t: float
    step: float
    mode: complex
    growth: float
    state: int


class StiffnessWatch:
    """Whether a fixed step is far above the time constant of an element, after Hairer &
    Wanner's stiffness detection (Solving ODEs II, IV.2; DOPRI5's test).

    Each step gives two states ``y_a``, ``y_b`` and their rates ``k_a``, ``k_b``: RK4's
    stages 2 and 3 (one time), forward Euler's start and end (the rate at the end is the
    next step's first, at the next time: ``euler_step`` / ``euler_next``). Their secant
    slope |k_b - k_a| / |y_b - y_a| is a lower bound of the steepest slope of the law the
    method steps across (RK4's stages 3 and 4 are looked at too when ``extreme`` says so).
    After ``STIFF_CHECKS`` checks where h times it passes ``SUSPECT`` (``CLEAN_CHECKS``
    clean ones in a row forget them), or one where it passes ``EXTREME`` times that or the
    rate turns round between the two states (an overshoot: a forward-Euler step across an
    exponential junction's wall), the steepest piece of the segment
    between the two states is found by bisection at one time (the half whose rates differ
    more is kept) and the Jacobian of the part holding the state that moves most is
    differenced there. A saturating law steep only near a point the method straddles (a
    tanh clutch law at a spurious fixed point of RK4) is caught so, which a Jacobian at
    the grid states misses (it sees a flat law); a jump of the rate (a slope growing down
    to rounding) has no time constant and is let be. ``found`` (a ``Stiffness``) is set
    when that Jacobian has a mode lambda with Re(lambda) <= 0, h |lambda| > ``SUSPECT`` and
    |R(h lambda)| > 1 (the method amplifies what the model damps), dated by the first
    suspect check counted. ``groups``: the state slices of the parts."""

    def __init__(self, method: str, groups=None):
        self.method = method
        self.groups = list(groups or ())
        self.needed = STIFF_CHECKS
        self.suspect = 0                   # suspect checks counted
        self.clean = 0                     # clean checks in a row
        self.first = 0.0
        self.found = None
        self.euler = None                  # the last forward-Euler step, waiting for its end rate
        self.evaluations = 0               # spent on bisections and Jacobians (diagnostics)

    def euler_step(self, f, t: float, h: float, x, x_next, k):
        """A forward-Euler step from (t, x) with rate k to x_next."""
        self.euler = (f, t, h, x, x_next, k)

    def euler_next(self, x, k):
        """The start state of the next step and its rate: checks the last step with them
        unless an event moved the state in between (then it is no Euler step)."""
        if self.euler is None or self.found is not None:
            return
        f, t, h, x_a, x_b, k_a = self.euler
        self.euler = None
        if x is x_b or np.array_equal(x, x_b):
            if self.extreme(h, x_a, x_b, k_a, k):     # looked at where the wall is, at the end
                self.observe(f, t + h, h, x_b, x_a, k, k_a, at_end=True)
            else:
                self.observe(f, t, h, x_a, x_b, k_a, k, at_end=True)

    def extreme(self, h: float, y_a, y_b, k_a, k_b) -> bool:
        """Whether h times the secant slope between (y_a, k_a) and (y_b, k_b) passes
        ``EXTREME`` (while nothing is found yet)."""
        d_state, d_rate = y_b - y_a, k_b - k_a
        return self.found is None and h * h * d_rate.dot(d_rate) > (EXTREME * SUSPECT) ** 2 * d_state.dot(d_state)

    def observe(self, f, t: float, h: float, y_a, y_b, k_a, k_b, at_end: bool = False):
        """One check: (y_a, k_a) and (y_b, k_b) of a step ``h``, at time ``t`` (``at_end``:
        k_b was evaluated a step later and is evaluated again at ``t`` for the bisection);
        ``f(t, y)`` the rate."""
        if self.found is not None:
            return
        d_state, d_rate = y_b - y_a, k_b - k_a
        moved = d_state.dot(d_state)       # squared norms: this runs at every step
        if moved == 0.0:
            return                         # no state difference: nothing to learn
        steep = h * h * d_rate.dot(d_rate)
        if not steep > SUSPECT * SUSPECT * moved:
            self.clean += 1
            if self.clean >= CLEAN_CHECKS:
                self.suspect = 0
            return
        self.clean = 0
        if self.suspect == 0:
            self.first = t
        self.suspect += 1
        # one that passes EXTREME, or where the rate turns round (the step overshot the
        # state the rate leads to), is looked at now
        if (self.suspect < self.needed and not steep > (EXTREME * SUSPECT) ** 2 * moved
                and not (k_a * k_b < 0.0).any()):
            return
        self.suspect = 0
        if at_end:
            k_b = np.asarray(f(t, y_b), dtype=float)
            self.evaluations += 1
        steepest = self._steepest(f, t, y_a, y_b, k_a, k_b)
        if steepest is not None:
            for mode in self._damped_modes(f, t, *steepest):
                z = h * mode
                growth = abs(np.polynomial.polynomial.polyval(z, STABILITY_FUNCTION[self.method]))
                if abs(z) > SUSPECT and growth > 1.0:
                    self.found = Stiffness(self.first, h, complex(mode), float(growth), steepest[1])
                    return
        self.needed *= 2                    # nothing there: look less often

    def _steepest(self, f, t, y_a, y_b, k_a, k_b):
        """The middle of the steepest piece of [y_a, y_b] found by bisection, and the index
        of the state whose rate moves most across it; None for a jump (the slope still
        growing at sqrt(eps) of the state)."""
        floor = _SQRT_EPS * max(1.0, float(np.linalg.norm(y_a)))
        slopes = [float(np.linalg.norm(k_b - k_a)) / float(np.linalg.norm(y_b - y_a))]
        while len(slopes) < 3 or slopes[-1] > _STEEPER * slopes[-3]:
            y_m = 0.5 * (y_a + y_b)
            if float(np.linalg.norm(y_b - y_m)) < floor:
                return None
            k_m = np.asarray(f(t, y_m), dtype=float)
            self.evaluations += 1
            if np.linalg.norm(k_m - k_a) >= np.linalg.norm(k_b - k_m):
                y_b, k_b = y_m, k_m
            else:
                y_a, k_a = y_m, k_m
            slopes.append(float(np.linalg.norm(k_b - k_a)) / float(np.linalg.norm(y_b - y_a)))
        return 0.5 * (y_a + y_b), int(np.argmax(np.abs(k_b - k_a)))

    def _damped_modes(self, f, t, y, index):
        """The eigenvalues with Re <= 0 of the Jacobian at ``y`` over the part holding state
        ``index`` (forward differences of sqrt(eps) relative), largest modulus first."""
        part = next((g for g in self.groups if g.start <= index < g.stop), slice(0, len(y)))
        rate = np.asarray(f(t, y), dtype=float)[part]
        columns = []
        for j in range(part.start, part.stop):
            y_j = y.copy()
            y_j[j] += _SQRT_EPS * max(1.0, abs(y[j]))
            columns.append((np.asarray(f(t, y_j), dtype=float)[part] - rate) / (y_j[j] - y[j]))
        self.evaluations += 1 + len(columns)
        modes = np.linalg.eigvals(np.column_stack(columns))
        modes = modes[np.isfinite(modes) & (modes.real <= 0.0)]
        return modes[np.argsort(-np.abs(modes))]


@dataclass
class HybridResult:
    """What a run produced: the grid actually reached and the states there."""

    t: np.ndarray
    x: np.ndarray
    events: list = field(default_factory=list)   # (t, fired tuple) per handled event
    stats: dict = field(default_factory=dict)
    stopped: bool = False                         # a sample callback asked to stop


def make_grid(dt: float, duration: float, t0: float = 0.0) -> np.ndarray:
    """The result grid (docs/CONTRACT.md): ``t_k = t0 + k*dt`` (a product), ``k = 0..floor(duration/dt + 1e-9)``."""
    n = int(math.floor(duration / dt + 1e-9))
    return t0 + np.arange(n + 1) * dt


# events closer than this (relative to max(1, |t|)) to the one before count as one instant
_INSTANT = 1e-10
# re-brackets of one event location (a relation that flips back within the location
# tolerance, as noise does) before the location is given up as making no progress
_MAX_REBRACKETS = 64


def _xtol(t: float) -> float:
    return max(1e-13 * max(1.0, abs(t)), 4.0 * _EPS * abs(t))


# the smallest magnitude: an exact zero of g stands for the side where 'g > 0' is false
_TINY = float(np.finfo(float).smallest_subnormal)


def _locate(gi: Callable[[float], float], a: float, b: float, fa: float, fb: float,
            old: bool, xtol: float) -> float:
    """The first time in ``(a, b]`` where the relation ``gi(t) > 0``, ``old`` at ``a``
    (value ``fa``), no longer is (it is not at ``b``, value ``fb``), to ``xtol``: the
    right end of a bracket around the flip, on the new side.

    scipy's ``brentq`` finds the sign change of ``gi`` (an exact zero counts as negative:
    'g > 0' is false there, whichever side is new); a root it answers on the old side is
    moved on by ``xtol`` (the crossing lies within that), or, should the relation still
    be old there, the search goes on beyond it."""
    known = {a: fa, b: fb}

    def signed(t):
        v = known.get(t)
        if v is None:
            v = known[t] = gi(t)
        return v if v != 0.0 else -_TINY

    def flipped(t):
        return (signed(t) > 0.0) != old

    if flipped(a):
        # already on the new side where the bracket starts (a restart whose committed
        # relation its inputs had left at that very instant): the event is there
        return a
    for _ in range(_MAX_REBRACKETS):
        root = brentq(signed, a, b, xtol=xtol, rtol=4.0 * _EPS, maxiter=300, disp=False)
        if flipped(root):
            return root
        nudged = root + xtol
        if nudged >= b or flipped(nudged):
            return min(nudged, b)
        a = nudged
    raise _NoProgress(a)


class _NoProgress(Exception):
    """An event location that keeps finding the relation back on its old side."""


class _Sampler:
    """Feeds the grid points in order to the storage and the user's callback."""

    def __init__(self, grid, n_state, sample):
        self.grid = grid
        self.out = np.empty((len(grid), n_state))
        self.sample = sample
        self.stop = False
        self.move_to(0)

    def move_to(self, k: int) -> None:
        """The next grid point to emit is ``k``; ``next_t`` its time as a float (inf past
        the last: a step's checks compare floats, not numpy scalars)."""
        self.k = k
        self.next_t = float(self.grid[k]) if k < len(self.grid) else math.inf

    def before(self, t_end: float, state_at):
        """Emit every pending grid point before ``t_end`` (farther than a few ulps), their
        states asked at once (``state_at.batch``)."""
        lim = t_end - snap(t_end)
        if self.next_t >= lim:
            return            # none (most steps of a fine grid's fixed step, or of a fast system)
        grid = self.grid
        end = int(grid.searchsorted(lim, side="left"))
        rows = state_at.batch(grid[self.k:end])
        if self.sample is None:
            # nobody to call per point: store them with one assignment
            self.out[self.k:end] = rows
            self.move_to(end)
            return
        for x in rows:
            if self.stop:
                return
            self._emit(self.next_t, x)

    def at(self, t: float, x):
        """Emit the grid points equal (within a few ulps) to ``t`` with state ``x``."""
        lim = t + snap(t)
        while not self.stop and self.next_t <= lim:
            self._emit(self.next_t, x)

    def _emit(self, t, x):
        self.out[self.k] = x
        self.move_to(self.k + 1)
        if self.sample is not None and self.sample(t, np.array(x, dtype=float)):
            self.stop = True

    @property
    def done(self):
        return self.stop or self.k >= len(self.grid)


class _Watch:
    """Relation values frozen at the last (re)start, with a per-entry left bracket."""

    def __init__(self, system, g, t0, x0):
        g0 = g(t0, x0)
        rel = getattr(system, "relation_values", None)
        if rel is not None:
            r = np.asarray(rel(t0, x0), dtype=float)
            if r.shape != g0.shape:
                raise SimulationError("event_function_size",
                                      "relation_values and event_functions differ in length")
        else:
            r = np.full(g0.shape, np.nan)
        r = np.where(np.isnan(r) & (g0 != 0.0), (g0 > 0.0).astype(float), r)
        self.pending = np.isnan(r)
        self.any_pending = bool(self.pending.any())
        self.b0 = r == 1.0
        self.t_left = np.full(g0.shape, float(t0))
        self.g_left = g0.copy()
        self.t0 = float(t0)

    def check(self, g, state_at, t1, g1):
        """Indices of relations that flipped in (last point, t1]."""
        if g1.shape != self.b0.shape:
            raise SimulationError("event_function_size",
                                  "event_functions changed length without an event")
        if self.any_pending:
            # decide the side of functions that started exactly at 0 from where they go
            tp = min(self.t0 + max(1e-6 * (t1 - self.t0), _xtol(t1)), t1)
            gp = g(tp, state_at(tp)) if tp < t1 else g1
            side = np.where(gp != 0.0, gp > 0.0, g1 > 0.0)
            p = self.pending
            self.b0[p] = side[p]
            self.t_left[p] = tp
            self.g_left[p] = gp[p]
            self.pending = np.zeros_like(p)
            self.any_pending = False
        return ((g1 > 0.0) != self.b0).nonzero()[0]     # the method: np.nonzero's wrapper costs more

    def advance(self, t1, g1):
        self.t_left[:] = t1
        self.g_left[:] = g1


@dataclass(frozen=True)
class Stepping:
    """How the solver steps: its class (``engine.solvers``), tolerances and step sizes."""

    solver: type
    rtol: float = 1e-6
    atol: float = 1e-8
    max_step: float = math.inf       # variable-step methods
    first_step: float | None = None  # variable-step methods; None: the solver's choice
    fixed_step: float = math.inf     # fixed-step methods


@dataclass(frozen=True)
class Scanning:
    """Where the event functions are checked besides the step ends: ``interior``
    equidistant points per step, and at least every ``spacing`` seconds (None: no such
    bound)."""

    interior: int = 3
    spacing: float | None = None


@dataclass(frozen=True)
class RunLimits:
    """When a run is given up: steps (and event checks), events, events at one instant."""

    max_steps: int = 5_000_000
    max_events: int = 100_000
    max_events_per_instant: int = 200


def integrate_hybrid(system, x0, grid, *, method: str = "ode45", rtol: float = 1e-6,
                     atol: float = 1e-8, max_step: float | None = None,
                     first_step: float | None = None, fixed_step: float | None = None,
                     sample: Callable | None = None, event_samples: int | None = None,
                     scan_spacing: float | None = None, stiffness: StiffnessWatch | None = None,
                     max_events: int = 100_000, max_steps: int = 5_000_000,
                     max_events_per_instant: int = 200, substeps: list | None = None) -> HybridResult:
    """Integrate ``system`` from ``grid[0]`` to ``grid[-1]`` and report on ``grid``.

    ``sample(t, x)`` is called once per grid time, in order, with the state there (after
    any event at that very time); a truthy return ends the run after that sample.
    ``rtol``/``atol``/``max_step``/``first_step`` go to the scipy solver (``max_step``
    defaults to span/50, Simulink's auto rule; pass ``inf`` for none); ``fixed_step``
    (ode1/ode4 only) defaults to the grid spacing.  ``event_samples``: interior points
    per step where the event functions are also checked (default 3 for variable-step
    methods, whose steps can be long, 0 for ode1/ode4).  ``scan_spacing``: the longest
    interval between two such checks (more interior points where a step is longer), so a
    relation moved by a fast input is seen even when the state is at rest and the steps
    are long: error control watches the states only, and equidistant checks alone can
    land on the same phase of a periodic input at every step (see ``inputs_scan_spacing``
    in ``engine.solver_driven``).  ``stiffness``: the ``StiffnessWatch`` the fixed-step
    methods feed (one that lives across several calls; a fresh one by default), its
    ``found`` in ``stats["stiffness"]``.  ``substeps``: a list (that may live across
    several calls) to which each grid interval that a fixed-step method took in substeps
    is appended as ``(t, substep, the SolveFailed that asked for them)``.  A solve that
    fails at a trial point rejects the step (``_Run.integrate``; ``stats["rejected"]``
    counts them).  Raises ``SimulationError`` on solver failure, a step rejected below
    ``min_step``, event chattering (more than ``max_events_per_instant`` events within
    1e-10 s) or more than ``max_events`` events or ``max_steps`` steps.
    """
    wall = _time.perf_counter()
    run = prepare_run(system, x0, grid, method=method, rtol=rtol, atol=atol, max_step=max_step,
                      first_step=first_step, fixed_step=fixed_step, sample=sample, event_samples=event_samples,
                      scan_spacing=scan_spacing, stiffness=stiffness, max_events=max_events, max_steps=max_steps,
                      max_events_per_instant=max_events_per_instant, substeps=substeps)
    driver = getattr(_handed_to, "driver", None)
    if driver is None:
        run.integrate(run.t0, run.x0)
    else:                       # the first integration of this thread's run goes to its driver
        _handed_to.driver = None
        driver.integrate(run)
    return run.result(wall)


_handed_to = threading.local()


@contextmanager
def integrated_by(driver):
    """Within the block, this thread's next ``integrate_hybrid`` hands its prepared ``_Run``
    to ``driver.integrate(run)`` instead of integrating it (``engine.batch`` steps many
    runs' loops at once); the driver returns once the run's loop has ended, or raises
    what it raised."""
    _handed_to.driver = driver
    try:
        yield
    finally:
        _handed_to.driver = None


def prepare_run(system, x0, grid, *, method, rtol, atol, max_step, first_step, fixed_step, sample, event_samples,
                scan_spacing, stiffness, max_events, max_steps, max_events_per_instant, substeps) -> "_Run":
    """The ``_Run`` of ``integrate_hybrid`` (its arguments checked, the system
    initialized), ready to ``integrate`` from ``run.t0, run.x0``, or to be stepped by
    another driver through ``run.loop`` (``engine.batch``)."""
    grid = np.asarray(grid, dtype=float)
    if grid.ndim != 1 or len(grid) == 0 or not np.all(np.isfinite(grid)) or np.any(np.diff(grid) <= 0):
        raise SimulationError("bad_grid", "the output grid must be a strictly increasing, finite 1-D array")
    if not (rtol > 0 and atol > 0):
        raise SimulationError("bad_tolerance", "rtol and atol must be positive")
    if scan_spacing is not None and not scan_spacing > 0:
        raise SimulationError("bad_scan_spacing", "the event scan spacing must be positive")
    solver_cls = solver_class(method)
    fixed = method in FIXED_STEP
    span = float(grid[-1]) - float(grid[0])
    if max_step is None or max_step == 0:
        # Simulink's "auto" rule: a fiftieth of the span.  Error control only sees the
        # states; an event driven by the inputs alone (a stuck force following a sine
        # while every state is at rest, so the ODE is trivial and steps grow without
        # bound) would otherwise be missed between two huge steps.
        max_step = span / 50.0 or math.inf
    if fixed_step is None:
        fixed_step = float(grid[1] - grid[0]) if len(grid) > 1 else span
    if fixed and not fixed_step > 0:
        raise SimulationError("bad_step", "the fixed step must be positive")
    if fixed and stiffness is None:
        stiffness = StiffnessWatch(method)
    if event_samples is None:
        event_samples = 0 if fixed else 3
    x = np.array(x0, dtype=float)
    t = float(grid[0])
    if hasattr(system, "initialize"):
        x = np.array(system.initialize(t, x), dtype=float)
    if not fixed and x.size == 0 and np.size(system.event_functions(t, x)):
        # scipy's solvers jump straight to the end when there is no state: step by max_step
        # instead, so event functions driven by time alone (a stateless rectifier) are watched
        solver_cls, fixed_step = solver_class("ode1"), max_step
    run = _Run(system, grid, x, sample,
               Stepping(solver_cls, rtol, atol, float(max_step), first_step, float(fixed_step)),
               Scanning(max(0, int(event_samples)), scan_spacing),
               RunLimits(max_steps, max_events, max_events_per_instant), stiffness, substeps)
    run.t0, run.x0, run.method = t, x, method
    return run


class _Run:
    """One integration over a grid: the loop (``integrate``) and what it keeps."""

    def __init__(self, system, grid, x, sample, stepping: Stepping, scanning: Scanning, limits: RunLimits,
                 stiffness: StiffnessWatch | None, substeps: list | None = None):
        self.sys = system
        self.grid = grid
        self.t_end = float(grid[-1])
        self.sampler = _Sampler(grid, len(x), sample)
        self.stepping, self.scanning, self.limits = stepping, scanning, limits
        self.stiffness = stiffness
        self.events = []
        self.stats = {"steps": 0, "restarts": 0, "nfev": 0, "events": 0, "time_events": 0, "input_checks": 0,
                      "rejected": 0}
        self.substeps = substeps if substeps is not None else []
        self._burst_t = -np.inf     # the last event, and the events in a row just before it
        self._burst_n = 0
        self._burst_fired = set()   # the relations that fired in that row
        self._time_event = getattr(system, "next_time_event", None)

    # -- helpers -----------------------------------------------------------------------
    def _segment_end(self, t):
        """End of the current integration segment and whether it is a time event: the next
        time event up to ``t_end`` included (one due at or before ``t``: ``t`` itself),
        else ``t_end``."""
        te = self._time_event(t) if self._time_event is not None else math.inf
        if te <= self.t_end:
            return max(float(te), t), True
        return self.t_end, False

    @staticmethod
    def _reached(t, t_seg):
        """Whether nothing is left to integrate from ``t`` to the segment end ``t_seg``."""
        return t_seg - t <= 4.0 * _EPS * max(1.0, abs(t_seg))

    def _funcs(self, t_seg):
        """Derivative / event functions with time clamped to the segment's left limit."""
        sysd, syse = self.sys.derivative, self.sys.event_functions
        t_left = float(np.nextafter(t_seg, -np.inf))
        stats = self.stats

        def f(tt, xx):
            stats["nfev"] += 1
            return sysd(tt if tt < t_left else t_left, xx)

        def g(tt, xx):
            return np.asarray(syse(tt if tt < t_left else t_left, xx), dtype=float)

        return f, g

    def _solver(self, f, t, x, t_seg, retry=None):
        """A solver of the run's method over the segment ``[t, t_seg]``; ``retry``: the step
        after a rejected one (the first step of a variable-step method, the substep of a
        fixed-step one)."""
        st = self.stepping
        if issubclass(st.solver, FixedStep):
            return st.solver(f, t, x, t_seg, step=retry or st.fixed_step, grid=self.grid, stiffness=self.stiffness)
        kwargs = dict(rtol=st.rtol, atol=st.atol, max_step=st.max_step)
        first = retry if retry is not None else st.first_step
        if first is not None:
            kwargs["first_step"] = min(first, t_seg - t)
        return st.solver(f, t, x, t_seg, **kwargs)

    def _rejected(self, err: SolveFailed, t: float, solver, retry, t_seg: float) -> float:
        """The step to retry with after a solve failed at a trial point of a step from ``t``
        (``solver``: the one that tried it, None when it failed while starting; ``retry``:
        the step it was started with): a quarter of the step tried under a variable-step
        method, half of it under a fixed-step one (its substeps, see ``integrate``). Below
        ``min_step(t)`` the failure is the error, typed as the solve's."""
        fixed = issubclass(self.stepping.solver, FixedStep)
        if fixed:
            tried = retry or self.stepping.fixed_step
        else:
            tried = getattr(solver, "h_abs", None) or getattr(solver, "step_size", None) or retry
            if tried is None:
                tried = min(self.stepping.max_step, t_seg - t)
        step = tried * (0.5 if fixed else RETRY_FACTOR)
        self.stats["rejected"] += 1
        if step < min_step(t):
            raise SimulationError(err.code, f"{err.message}; the step from t = {t:.9g} was rejected down to "
                                  f"{tried:.3g} s", path=err.path, block=err.block, param=err.param)
        if fixed:
            self.substeps.append((t, step, err))
        return step

    def _count_step(self):
        self.stats["steps"] += 1
        if self.stats["steps"] + self.stats["input_checks"] > self.limits.max_steps:
            raise SimulationError("too_many_steps", f"more than {self.limits.max_steps} solver steps (a very stiff "
                                  "or fast system, or a tiny maxStep); raise the limit or loosen the tolerances")

    def _count_input_checks(self, n):
        """The event checks ``Scanning.spacing`` adds to a step count against the step limit
        (each costs an evaluation of the diagram), before they are made."""
        self.stats["input_checks"] += n
        if self.stats["steps"] + self.stats["input_checks"] > self.limits.max_steps:
            raise SimulationError("too_many_steps", f"more than {self.limits.max_steps} solver steps and event "
                                  f"checks (the event functions are checked every {self.scanning.spacing:.3g} s to "
                                  "follow a fast input); raise the limit or shorten the run")

    def _count_event(self, t, x, fired=()):
        """Count an event at ``t`` (state ``x``, relations ``fired``) against the limits.
        Events piling up at one instant end the run: more than ``max_events_per_instant``
        in a row, each within ``_INSTANT`` of the one before (a window that slides with
        them, so a relation switched back at every restart, moving time on by a few
        location tolerances per event, is caught as surely as a burst at one time)."""
        self.stats["events"] += 1
        if self.stats["events"] > self.limits.max_events:
            raise SimulationError("too_many_events",
                                  f"more than {self.limits.max_events} events (last at t={t:.17g})")
        if t - self._burst_t <= _INSTANT * max(1.0, abs(t)):
            self._burst_n += 1
            self._burst_fired.update(fired)
            if self._burst_n > self.limits.max_events_per_instant:
                raise self._chattering(t, x)
        else:
            self._burst_n, self._burst_fired = 0, set(fired)
        self._burst_t = t

    def _blocks_of(self, t, x, relations) -> list:
        """The names the system gives the owners of ``relations`` at (t, x), if it can."""
        name = getattr(self.sys, "relation_blocks", None)
        return list(dict.fromkeys(name(t, x, sorted(relations)))) if name is not None and relations else []

    def _chattering(self, t, x) -> SimulationError:
        names = self._blocks_of(t, x, self._burst_fired)
        who = f" of {', '.join(repr(n) for n in names[:8])}" if names else ""
        return SimulationError(
            "event_chattering",
            f"more than {self.limits.max_events_per_instant} events in a row at t={t:.17g}, each within "
            f"{_INSTANT:g} s of the one before: the relations{who} switch back as soon as an event has "
            "handled them (a relay or comparison without hysteresis on a continuous state, a mode that its "
            "own event undoes, or Zeno behaviour); give the switching a band (a hysteresis) or a delay",
            block=names[0] if names else None)

    def _scan(self, g, state_at, watch, ta, tb, gb):
        """Look for flips at equidistant interior points (``Scanning.interior`` of them,
        more if ``Scanning.spacing`` asks for more; their states asked at once), then at
        ``tb``.

        Interior points catch a relation that goes in and out again within one step
        (e.g. a stuck force touching its breakaway bound between two large steps).
        Returns ``(flipped, t_hit, g_hit)`` for the first point with a flip, else None
        (the watch is then advanced to ``tb``)."""
        n_interior = self.scanning.interior if gb.size else 0      # no relations: nothing to look at
        if gb.size and self.scanning.spacing is not None:
            needed = math.ceil((tb - ta) / self.scanning.spacing) - 1
            if needed > n_interior:
                self._count_input_checks(needed - n_interior)
                n_interior = needed
        times = [tj for tj in (ta + (tb - ta) * j / (n_interior + 1) for j in range(1, n_interior + 1))
                 if ta < tj < tb] if n_interior else ()
        for tj, xj in zip(times, state_at.batch(np.array(times)) if times else ()):
            gj = g(tj, xj)
            flipped = watch.check(g, state_at, tj, gj)
            if flipped.size:
                return flipped, tj, gj
            watch.advance(tj, gj)
        flipped = watch.check(g, state_at, tb, gb)
        if flipped.size:
            return flipped, tb, gb
        watch.advance(tb, gb)
        return None

    def _find_event(self, g, state_at, watch, flipped, tb, gb):
        """Earliest flip in the step ending at ``tb``: ``(t_event, x_event, fired)``."""
        xtol = _xtol(tb)
        b0 = watch.b0
        best = None
        for i in flipped:
            def gi(tt, i=i):
                return float(g(tt, state_at(tt))[i])

            try:
                b = _locate(gi, float(watch.t_left[i]), tb, float(watch.g_left[i]), float(gb[i]), bool(b0[i]),
                            xtol)
            except _NoProgress as stuck:
                names = self._blocks_of(stuck.args[0], state_at(stuck.args[0]), [int(i)])
                who = f" of {names[0]!r}" if names else ""
                raise SimulationError(
                    "event_location", f"the event location makes no progress near t={stuck.args[0]:.17g}: the "
                    f"relation{who} flips back and forth within {xtol:.3g} s (noise in what it compares), "
                    f"{_MAX_REBRACKETS} times in a row", block=names[0] if names else None) from None
            if best is None or b < best:
                best = b
        t_ev = best
        x_ev = state_at(t_ev)
        g_ev = g(t_ev, x_ev)
        # A relation 'g > 0' that flipped may sit exactly on g == 0 (e.g. v == 0.0 after
        # 'v > 0'); step a hair further so the state is strictly on the new side and a
        # reversal is seen as one (MSL semantics), when that stays within the step.
        zero = (g_ev == 0.0) & b0
        if np.any(zero) and t_ev + xtol <= tb:
            t2 = t_ev + xtol
            x2 = state_at(t2)
            g2 = g(t2, x2)
            if np.all(g2[zero] < 0.0):
                t_ev, x_ev, g_ev = t2, x2, g2
        fired = tuple(int(j) for j in ((g_ev > 0.0) != b0).nonzero()[0])
        return t_ev, np.array(x_ev, dtype=float), fired

    def _commit_event(self, t_ev, x_ev, fired, state_at):
        self._count_event(t_ev, x_ev, fired)
        self.sampler.before(t_ev, state_at)
        x_new = np.array(self.sys.handle_events(t_ev, x_ev, fired), dtype=float)
        self.events.append((t_ev, fired))
        self.sampler.at(t_ev, x_new)
        return x_new

    def _time_event_commit(self, t, x):
        self.stats["time_events"] += 1
        self._count_event(t, x)
        x_new = np.array(self.sys.handle_events(t, x, ()), dtype=float)
        self.events.append((t, ()))
        return x_new

    def result(self, wall: float) -> HybridResult:
        """What the run reported, once its loop has ended (``wall``: when it started)."""
        if self.method in FIXED_STEP:
            self.stats["stiffness"] = self.stiffness.found
        k = self.sampler.k
        stats = dict(self.stats, method=self.method, wall_s=_time.perf_counter() - wall)
        return HybridResult(t=self.grid[:k].copy(), x=self.sampler.out[:k].copy(), events=self.events,
                            stats=stats, stopped=self.sampler.stop)

    # -- the loop ----------------------------------------------------------------------
    def integrate(self, t, x):
        """``loop`` with this process's solvers: a ``Start`` request made into the
        method's solver (``_solver``), a solver into its ``step()``; what either raises
        goes back into the loop where it asked."""
        loop = self.loop(t, x)
        reply = None
        while True:
            try:
                request = loop.send(reply) if not isinstance(reply, BaseException) else loop.throw(reply)
            except StopIteration:
                return
            try:
                reply = self._solver(*request) if type(request) is Start else request.step()
            except SolveFailed as err:
                reply = err

    def loop(self, t, x):
        """Segment by segment (a restart at every event and time event), step by step:
        scan the step for flips, locate and commit the first, or report the grid points
        the step passed. A solve that fails at a trial point (``SolveFailed``) rejects the
        step: the solver restarts from the last accepted state with a smaller step
        (``_rejected``); a fixed-step method takes the rest of that grid interval in
        substeps. A generator: it yields a ``Start`` (a solver wanted over a segment) or a
        solver whose ``step()`` it wants taken, and is sent the solver or the step's
        message back, or thrown the ``SolveFailed`` that making or stepping it raised
        (``integrate`` does this here; ``engine.batch`` for many runs at once)."""
        sampler = self.sampler
        t_seg, is_time_event = self._segment_end(t)
        if is_time_event and self._reached(t, t_seg):
            t = t_seg                           # an event due where the run starts
            x = self._time_event_commit(t, x)
        sampler.at(t, x)
        retry = None
        while not sampler.done and t < self.t_end:
            t_seg, is_time_event = self._segment_end(t)
            if retry is not None and issubclass(self.stepping.solver, FixedStep):
                # substeps up to the next grid time, then the method's own step again
                landing = float(self.grid[min(int(self.grid.searchsorted(t + snap(t), side="right")),
                                              len(self.grid) - 1)])
                if t < landing < t_seg:
                    t_seg, is_time_event = landing, False
            if self._reached(t, t_seg):
                # nothing left to integrate before the segment end (a state event located
                # within a few ulps of a time event or of the final time)
                t = t_seg
                if is_time_event:
                    x = self._time_event_commit(t, x)
                sampler.at(t, x)
                continue
            f, g = self._funcs(t_seg)
            try:
                solver = yield Start(f, t, x, t_seg, retry)
            except SolveFailed as err:
                retry = self._rejected(err, t, None, retry, t_seg)
                continue
            t = solver.t        # a fixed step may resume from the grid time a hair later
            self.stats["restarts"] += 1
            watch = _Watch(self.sys, g, t, x)
            # no relations at the (re)start: none until an event, which ends the segment (a
            # warm-started system is evaluated there all the same: see ``warm_started``)
            watching = bool(watch.b0.size) or getattr(self.sys, "warm_started", False)
            observe = getattr(solver, "observe_stiffness", None)
            started_with, retry = retry, None
            while True:
                t_acc, x_acc = solver.t, solver.y
                try:
                    msg = yield solver
                    if solver.status == "failed":
                        raise SimulationError("solver_failed",
                                              f"{type(solver).__name__} failed at t={solver.t:.17g}: {msg}")
                    self._count_step()
                    t_new, x_new = float(solver.t), solver.y
                    state_at = _StepStates(solver, t_new, x_new)
                    hit = self._scan(g, state_at, watch, solver.t_old, t_new, g(t_new, x_new)) if watching else None
                except SolveFailed as err:
                    retry = self._rejected(err, t_acc, solver, started_with, t_seg)
                    t, x = t_acc, np.array(x_acc, dtype=float)
                    break
                if observe is not None:
                    observe(hit is not None)
                if hit is not None:
                    t_ev, x_ev, fired = self._find_event(g, state_at, watch, *hit)
                    x = self._commit_event(t_ev, x_ev, fired, state_at)
                    t = t_ev
                    break
                sampler.before(t_new, state_at)
                if solver.status == "finished" or t_seg - t_new <= snap(t_seg):
                    # the segment's end reached (a step may stop an ulp or two short of it:
                    # that is its end too, so a time event there is committed all the same)
                    t, x = t_seg, np.array(x_new, dtype=float)
                    if is_time_event:
                        x = self._time_event_commit(t, x)
                    sampler.at(t, x)
                    break
                sampler.at(t_new, x_new)          # a grid point hit by the step end itself
                if sampler.done:
                    return


class Start(NamedTuple):
    """What ``_Run.loop`` asks for at a (re)start: a solver of the run's method from
    ``(t, x)`` over the segment to ``t_seg`` with derivative ``f`` (``retry``: the step
    after a rejected one, else None)."""
    f: Callable
    t: float
    x: np.ndarray
    t_seg: float
    retry: float | None


class _StepStates:
    """The state at times within the last step: the step end as the solver has it, any
    other time from the solver's dense output (public ``dense_output()``, made when first
    asked for); ``batch(ts)`` asks for several at once (a row per time)."""

    __slots__ = ("solver", "t_new", "x_new", "dense")

    def __init__(self, solver, t_new, x_new):
        self.solver, self.t_new, self.x_new, self.dense = solver, t_new, x_new, None

    def _dense(self):
        if self.dense is None:
            self.dense = self.solver.dense_output()
        return self.dense

    def __call__(self, t):
        return self.x_new if t == self.t_new else self._dense()(t)

    def batch(self, ts):
        return self._dense()(ts).T


class HybridGroup:
    """Several hybrid systems side by side as one (states and event functions concatenated).

    Every member sees every event (Modelica's event iteration is global), so each member's
    ``handle_events`` must be idempotent when nothing of its own changed (the islands are).
    """

    def __init__(self, systems, x0s=None):
        self.systems = list(systems)
        if x0s is None:
            x0s = [np.asarray(s.x0, dtype=float) for s in self.systems]
        self.slices = []
        start = 0
        for x in x0s:
            size = len(np.asarray(x))
            self.slices.append(slice(start, start + size))
            start += size
        self.x0 = (np.concatenate([np.asarray(x, dtype=float) for x in x0s]) if len(x0s)
                   else np.zeros(0))
        self._g_sizes = [0] * len(self.systems)

    def initialize(self, t, x):
        x = np.array(x, dtype=float)
        for s, sl in zip(self.systems, self.slices):
            if hasattr(s, "initialize"):
                x[sl] = s.initialize(t, x[sl])
        return x

    def derivative(self, t, x):
        return np.concatenate([np.asarray(s.derivative(t, x[sl]), dtype=float)
                               for s, sl in zip(self.systems, self.slices)])

    def event_functions(self, t, x):
        parts = []
        for k, (s, sl) in enumerate(zip(self.systems, self.slices)):
            g = np.asarray(s.event_functions(t, x[sl]), dtype=float)
            self._g_sizes[k] = g.size
            parts.append(g)
        return np.concatenate(parts) if parts else np.zeros(0)

    def handle_events(self, t, x, fired):
        x = np.array(x, dtype=float)
        bounds = np.cumsum([0] + self._g_sizes)
        for k, (s, sl) in enumerate(zip(self.systems, self.slices)):
            own = tuple(i - int(bounds[k]) for i in fired if bounds[k] <= i < bounds[k + 1])
            x[sl] = s.handle_events(t, x[sl], own)
        return x

    def next_time_event(self, t):
        best = math.inf
        for s in self.systems:
            fn = getattr(s, "next_time_event", None)
            if fn is not None:
                best = min(best, fn(t))
        return best

    def relation_values(self, t, x):
        parts = []
        for s, sl in zip(self.systems, self.slices):
            g = np.asarray(s.event_functions(t, x[sl]), dtype=float)
            rel = getattr(s, "relation_values", None)
            if rel is not None:
                parts.append(np.asarray(rel(t, x[sl]), dtype=float))
            else:
                parts.append(np.where(g == 0.0, np.nan, (g > 0.0).astype(float)))
        return np.concatenate(parts) if parts else np.zeros(0)
