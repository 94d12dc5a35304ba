"""Run a plan whose diagram has continuous state (physical islands, solver-owned causal
states, algebraic unknowns) under a solver: its ``PlanSystem`` integrated over the grid by
``engine.hybrid``. Grid points are major steps: OUTPUT, ALGEBRAIC, UPDATE and AFTER_STEP
run committed there, at the state the solver reports.

When the diagram also has discrete state (any UPDATE), a major step may change what the
parts see, so integration restarts at every grid point; otherwise the solver runs
freely across the grid and the grid is read from its dense output (and, when only
recorders watch it, recorded in bulk: ``engine.recording``).

A solve that fails at a solver's trial point (a non-linear island's or the constraint
blocks' Newton, ``errors.SolveFailed``) rejects that step and ``engine.hybrid`` retries it
smaller; a fixed-step method (ode1, ode4, and RK4 under ``discrete``) takes that grid
interval in substeps, which the result's warnings report.

Time-only blocks that no solver stage reads (a source and its gains feeding only
recorders) are evaluated once over the grid as arrays (``plan.major_steps``,
``engine.vectorize.MajorSteps``): the major steps take their values from those.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import SimulationError
from .context import call, call_all
from .hybrid import StiffnessWatch, integrate_hybrid, make_grid
from .recording import bulk_recorders, record_in_bulk
from .solvers import FIXED_STEP
from .system import PlanSystem


# nflow's fixed-step loop integrates physical islands with classical RK4 between grid
# points (events still located inside a step); ode1/ode4/ode45/dae are the named solvers.
METHOD = {"discrete": "ode4", "ode1": "ode1", "ode4": "ode4", "ode45": "ode45", "dae": "dae"}


METHOD_NAME = {"ode1": "forward Euler", "ode4": "classical RK4"}


# Event-function checks per input time scale (the shortest rise-and-fall of a source, e.g.
# half a sine period): a relation moved by that input between two steps of a state at rest
# is seen unless it stays flipped for less than an eighth of that stretch (a sine above a
# threshold for less than 1/16 of its period: within 2% of its amplitude).
SCANS_PER_SCALE = 8


def run_solver_driven(plan, progress=None) -> int:
    """Integrate ``plan`` over its grid; returns the number of grid points run.
    ``progress(done, total)`` (optional) is called at each grid point."""
    d = plan.diagram
    system = PlanSystem(plan)
    ctx = plan.ctx
    on_grid = plan.major_steps
    update, after = plan.update, (on_grid.after_step if on_grid else plan.after_step)
    grid = make_grid(d.sample_time, d.duration)
    if len(grid) != d.n_samples:  # make_grid and the diagram agree on the grid rule (docs/CONTRACT.md §3)
        grid = np.arange(d.n_samples) * d.sample_time

    def major_step(t, x):
        ctx.k = int(round(t / d.sample_time))
        ctx.t = ctx.k * d.sample_time    # the grid time exactly, as the fixed-step loop has it
        if on_grid:
            on_grid.at(ctx.k)
        system.evaluate(ctx.t, x, committed=True)
        call_all(update, after)
        plan.budget.check(ctx.k + 1)
        if progress is not None:
            progress(ctx.k + 1, len(grid))
        return ctx.stop

    if d.max_step is not None and d.duration / d.max_step > plan.limits.max_solver_steps:
        raise SimulationError("too_many_steps", f"maxStep {d.max_step:g} needs more than "
                              f"{plan.limits.max_solver_steps} solver steps over the duration", path="/maxStep")
    # the automatic step cap is a fiftieth of the whole run (Simulink's rule), also when the
    # integration restarts at every grid point
    max_step = d.max_step if d.max_step is not None else d.duration / 50.0
    method = METHOD[d.solver]
    # one watch over the whole run (also across the restarts at every grid point)
    stiffness = StiffnessWatch(method, system.slices) if method in FIXED_STEP else None
    substeps = []     # the grid intervals a fixed-step method took in substeps (engine.hybrid)
    options = dict(method=method, rtol=d.rel_tol, atol=d.abs_tol, max_step=max_step,
                   sample=major_step, max_steps=plan.limits.max_solver_steps,
                   scan_spacing=inputs_scan_spacing(plan, system.skipped, float(grid[0]), float(grid[-1])),
                   stiffness=stiffness, substeps=substeps)
    if on_grid:
        on_grid.start()
    done = _integrate(plan, system, grid, options, major_step, progress)
    if on_grid:
        on_grid.finish(done)
    if stiffness is not None and stiffness.found is not None:
        ctx.warnings.append(_stiffness_warning(plan, system, method, stiffness.found))
    if substeps:
        ctx.warnings.append(_substeps_warning(plan, method, substeps))
    return done


def _integrate(plan, system, grid, options, major_step, progress) -> int:
    """The integration of ``run_solver_driven``: the number of grid points run."""
    update = plan.update
    x = system.x0
    if system.n == 0 and system.algebraic_solve is not None:
        # algebraic unknowns and nothing to integrate (a solver would jump straight to the
        # end): solve them at each grid point in turn, so a failure names its first time
        for k in range(len(grid)):
            if major_step(float(grid[k]), x):
                return k + 1
        return len(grid)
    budget = plan.limits.max_solver_steps
    if (options["method"] in FIXED_STEP or update) and len(grid) - 1 > budget:
        # a fixed-step method, or a restart at every grid point: at least a step per sample
        raise SimulationError("too_many_steps", f"{len(grid)} samples need at least {len(grid) - 1} solver "
                              f"steps (limit {budget} over the run)", path="/duration")
    if not update:
        recorders = bulk_recorders(plan, system, progress)
        if recorders is not None:
            # nothing needs a major step at each grid point: integrate without the
            # per-point callback and fill the recorders from the grid states at once
            res = integrate_hybrid(system, x, grid, **dict(options, sample=None))
            record_in_bulk(plan, system, recorders, res)
            return len(res.t)
        return len(integrate_hybrid(system, x, grid, **options).t)
    # discrete state: restart at every grid point so each major step is seen by the parts
    x = system.initialize(float(grid[0]), x)
    if major_step(float(grid[0]), x):
        return 1
    used = 0   # the step limit holds for the whole run, not per restart
    for k in range(1, len(grid)):
        try:
            res = integrate_hybrid(_Restart(system), x, grid[k - 1:k + 1],
                                   **dict(options, sample=None, max_steps=budget - used))
        except SimulationError as err:
            if err.code != "too_many_steps":
                raise
            raise SimulationError("too_many_steps", f"more than {budget} solver steps over the run (by "
                                  f"t = {grid[k - 1]:.9g}); raise the limit or loosen the tolerances") from None
        used += res.stats["steps"] + res.stats["input_checks"]
        x = res.x[-1]
        if major_step(float(grid[k]), x):
            return k + 1
    return len(grid)


def _stiffness_warning(plan, system, method: str, found) -> str:
    """The warning for a fixed step far above the time constant of an element (``found``,
    a ``Stiffness``), naming the blocks of the continuous part whose state moved most: the
    blocks linked pin to pin with the block that carries it (an island), or that block."""
    part = next(part for part, sl in zip(system.parts, system.slices) if sl.start <= found.state < sl.stop)
    names = _part_blocks(plan, part)
    shown = ", ".join(repr(name) for name in names[:8]) + (", ..." if len(names) > 8 else "")
    z = found.step * found.mode
    mode = f"{z.real:.3g}" + (f" {'+-'[z.imag < 0]} {abs(z.imag):.3g}i" if z.imag else "")
    return (f"the fixed step {found.step:g} s is far above the time constant (~{1.0 / abs(found.mode):.3g} s) of "
            f"an element among blocks {shown}: {METHOD_NAME[method]} (solver {plan.diagram.solver!r}) is unstable "
            f"there (h*lambda ~ {mode}, amplified {found.growth:.3g} times per step where the model does not "
            f"grow) from t ~ {found.t:.6g} s on, so the result may show a spurious fixed point, oscillation or "
            "growth of the method rather than of the model; use a smaller sampleTime or a variable-step solver "
            "(ode45, dae)")


def _substeps_warning(plan, method: str, substeps: list) -> str:
    """The warning for grid intervals that a fixed-step method took in substeps because a
    solve failed at one of its trial points (``(t, substep, error)`` each)."""
    t, _, err = substeps[0]
    intervals = len({round(t / plan.diagram.sample_time) for t, _, _ in substeps})
    return (f"{METHOD_NAME[method]} (solver {plan.diagram.solver!r}) could not take its step at t = {t:.6g} s"
            f"{f' and {intervals - 1} more grid interval(s)' if intervals > 1 else ''}: {err.message}; those "
            f"intervals were integrated in substeps (down to {min(h for _, h, _ in substeps):.3g} s), so the "
            "result departs there from the fixed step's arithmetic")


def _part_blocks(plan, part) -> list:
    """Ids of the block carrying ``part`` and of the blocks linked to it pin to pin."""
    blocks = plan.diagram.blocks
    owner = next((i for i, phases in enumerate(plan.phases) if phases.part is part), None)
    if owner is None:
        return [part.key]
    neighbours = {}
    for link in plan.diagram.links:
        neighbours.setdefault(link.a, set()).add(link.b)
        neighbours.setdefault(link.b, set()).add(link.a)
    seen, todo = {owner}, [owner]
    while todo:
        for j in neighbours.get(todo.pop(), ()):
            if j not in seen:
                seen.add(j)
                todo.append(j)
    return sorted(blocks[i].id for i in seen)


def inputs_scan_spacing(plan, skipped, t0: float, t1: float) -> float | None:
    """The longest interval between two checks of the event functions that still sees
    every input of the continuous parts move (``SCANS_PER_SCALE`` per the shortest time
    scale its sources declare over [t0, t1]), None when no such source declares one.
    Error control watches the states only: a relation moved by an input alone (a stuck
    mass's friction force following a sine) would otherwise be checked only at the
    solver's steps, which land on one phase of the input when the state is at rest.
    The checks this adds count against the solver step limit."""
    scale = min((call(phases.time_scale, t0, t1) for i, phases in enumerate(plan.phases)
                 if phases.time_scale is not None and i not in skipped), default=math.inf)
    return scale / SCANS_PER_SCALE if scale < math.inf else None


class _Restart:
    """A PlanSystem without re-initialization (a continuation of the same run)."""

    def __init__(self, system):
        self._s = system

    def __getattr__(self, name):
        if name == "initialize":
            raise AttributeError(name)
        return getattr(self._s, name)
