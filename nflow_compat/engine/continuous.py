"""Run a plan whose diagram has continuous state (physical islands) under a solver.

The whole diagram becomes one hybrid system for ``engine.hybrid``: its state is the
concatenation of every continuous part's state. A right-hand-side evaluation sets time
and state, runs OUTPUT and ALGEBRAIC (pure: ``ctx.side_effect_free``), then asks each
part for its derivative; the causal blocks drive the parts through the signal store and
read them back through OUTPUT (sensors). Grid points are major steps: OUTPUT, ALGEBRAIC,
UPDATE and AFTER_STEP run committed there, at the state the solver reports.

When the diagram also has discrete state (any UPDATE), a major step may change what the
parts see, so integration restarts at every grid point; otherwise the solver runs
freely across the grid and the grid is read from its dense output.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import SimulationError
from .hybrid import integrate_hybrid, make_grid

# nflow's fixed-step loop integrates physical islands with classical RK4 between grid
# points (events still located inside a step); ode1/ode4/ode45/dae are the named solvers.
METHOD = {"discrete": "ode4", "ode1": "ode1", "ode4": "ode4", "ode45": "ode45", "dae": "dae"}

# Solvers that own the continuous state of causal blocks (nflow's DERIVATIVE and
# ZERO_CROSSING phases); under discrete and ode1 those blocks keep nflow's fixed-step
# rules (forward Euler in UPDATE, RK4 for tf).
SOLVER_OWNED = ("ode4", "ode45", "dae")


class PlanSystem:
    """The plan seen as a hybrid system (``derivative``, ``event_functions``, ...)."""

    def __init__(self, plan):
        self.plan = plan
        self.ctx = plan.ctx
        # a canonical order, so that results do not depend on the order of the JSON
        self.parts = sorted((p.part for p in plan.phases if p.part is not None), key=lambda part: part.key)
        self.slices, start = [], 0
        for part in self.parts:
            self.slices.append(slice(start, start + part.n_states))
            start += part.n_states
        self.n = start
        self.g_sizes = [0] * len(self.parts)
        self.time_events = [p.next_time_event for p in plan.phases if p.next_time_event is not None]

    @property
    def x0(self) -> np.ndarray:
        return np.concatenate([part.x0 for part in self.parts]) if self.parts else np.zeros(0)

    def evaluate(self, t: float, x, committed: bool = False):
        """Set time and state, then run OUTPUT and ALGEBRAIC."""
        ctx = self.ctx
        ctx.t = t
        ctx.side_effect_free = not committed
        for part, sl in zip(self.parts, self.slices):
            part.load(x[sl])
        for f in self.plan.output:
            f()
        for f in self.plan.algebraic:
            f()

    def derivative(self, t, x):
        self.evaluate(t, x)
        xdot = np.concatenate([part.derivative(t, x[sl]) for part, sl in zip(self.parts, self.slices)])
        if not np.isfinite(xdot).all():
            raise SimulationError("non_finite_state", f"the state derivative is not finite at t = {t:.9g} "
                                  "(an infinite or NaN input, or a parameter outside the floating-point range)")
        return xdot

    def event_functions(self, t, x):
        self.evaluate(t, x)
        gs = [np.asarray(part.event_functions(t, x[sl]), dtype=float)
              for part, sl in zip(self.parts, self.slices)]
        self.g_sizes = [g.size for g in gs]
        return np.concatenate(gs) if gs else np.zeros(0)

    def relation_values(self, t, x):
        self.evaluate(t, x)
        out = []
        for part, sl in zip(self.parts, self.slices):
            rel = getattr(part, "relation_values", None)
            g = np.asarray(part.event_functions(t, x[sl]), dtype=float)
            out.append(np.asarray(rel(t, x[sl]), dtype=float) if rel else np.full(g.size, np.nan))
        return np.concatenate(out) if out else np.zeros(0)

    def handle_events(self, t, x, fired):
        self.evaluate(t, x)
        x = np.array(x, dtype=float)
        offsets = np.cumsum([0] + self.g_sizes)
        for k, (part, sl) in enumerate(zip(self.parts, self.slices)):
            local = tuple(i - offsets[k] for i in fired if offsets[k] <= i < offsets[k + 1])
            x[sl] = part.handle_events(t, x[sl], local)
        return x

    def initialize(self, t0, x0):
        self.evaluate(t0, x0)
        x = np.array(x0, dtype=float)
        for part, sl in zip(self.parts, self.slices):
            x[sl] = part.initialize(t0, x[sl])
        return x

    def next_time_event(self, t):
        times = [f(t) for f in self.time_events] + [part.next_time_event(t) for part in self.parts]
        return min(times, default=math.inf)


def run_continuous(plan) -> int:
    """Integrate ``plan`` over its grid; returns the number of grid points run."""
    d = plan.diagram
    system = PlanSystem(plan)
    ctx = plan.ctx
    update, after = plan.update, plan.after_step
    grid = make_grid(d.sample_time, d.duration)
    if len(grid) != d.n_samples:  # make_grid and the diagram agree on the SPEC grid rule
        grid = np.arange(d.n_samples) * d.sample_time

    def major_step(t, x):
        ctx.k = int(round(t / d.sample_time))
        ctx.t = ctx.k * d.sample_time    # the grid time exactly, as the fixed-step loop has it
        system.evaluate(ctx.t, x, committed=True)
        for f in update:
            f()
        for f in after:
            f()
        return ctx.stop

    if d.max_step is not None and d.duration / d.max_step > plan.limits.max_solver_steps:
        raise SimulationError("too_many_steps", f"maxStep {d.max_step:g} needs more than "
                              f"{plan.limits.max_solver_steps} solver steps over the duration", path="/maxStep")
    # the automatic step cap is a fiftieth of the whole run (Simulink's rule), also when the
    # integration restarts at every grid point
    max_step = d.max_step if d.max_step is not None else d.duration / 50.0
    options = dict(method=METHOD[d.solver], rtol=d.rel_tol, atol=d.abs_tol, max_step=max_step,
                   sample=major_step, max_steps=plan.limits.max_solver_steps)
    x = system.x0
    if not update:
        return len(integrate_hybrid(system, x, grid, **options).t)
    # discrete state: restart at every grid point so each major step is seen by the parts
    x = system.initialize(float(grid[0]), x)
    if major_step(float(grid[0]), x):
        return 1
    for k in range(1, len(grid)):
        res = integrate_hybrid(_Restart(system), x, grid[k - 1:k + 1], **dict(options, sample=None))
        x = res.x[-1]
        if major_step(float(grid[k]), x):
            return k + 1
    return len(grid)


class _Restart:
    """A PlanSystem without re-initialization (a continuation of the same run)."""

    def __init__(self, system):
        self._s = system

    def __getattr__(self, name):
        if name == "initialize":
            raise AttributeError(name)
        return getattr(self._s, name)


class StatePart:
    """Continuous state owned by a causal block (integrator, transfer function, ...) when
    a solver integrates the diagram; also serves stateless blocks that only report
    zero-crossing surfaces (``n_states`` 0), so the solver restarts at their kinks.

    ``derivative()`` and ``surfaces()`` take no arguments: they read the block's inputs
    from the signal store (already evaluated for this time and state) and its state from
    ``self.x``; ``on_event(x)`` may re-initialize the state after a located event."""

    def __init__(self, key: str, x0, derivative=None, surfaces=None, on_event=None):
        self.key = key
        self.x0 = np.atleast_1d(np.asarray(x0, dtype=float)).copy()
        self.n_states = self.x0.size
        self.x = self.x0.copy()
        self._derivative, self._surfaces, self._on_event = derivative, surfaces, on_event

    def load(self, x):
        self.x = x

    def derivative(self, t, x):
        return np.atleast_1d(np.asarray(self._derivative(), dtype=float)) if self._derivative else np.zeros(0)

    def event_functions(self, t, x):
        return np.atleast_1d(np.asarray(self._surfaces(), dtype=float)) if self._surfaces else np.zeros(0)

    def handle_events(self, t, x, fired):
        return self._on_event(np.array(x, dtype=float)) if self._on_event else x

    def initialize(self, t, x):
        return x

    def next_time_event(self, t):
        return math.inf


def crossing_part(io, surfaces):
    """Zero-crossing surfaces of a stateless block (saturation, deadZone, switch) under a
    solver that owns continuous state, so the integration restarts where they cross;
    None otherwise (the fixed-step path has no surfaces, as in nflow)."""
    if io.solver not in SOLVER_OWNED or io.outs is None:
        return None
    return StatePart(io.id, np.zeros(0), surfaces=surfaces)
