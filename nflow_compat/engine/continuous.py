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

Time-only blocks that no solver stage reads (a source and its gains feeding only
recorders) are evaluated once over the grid as arrays (``plan.major_steps``,
``engine.vectorize.MajorSteps``): the major steps take their values from those.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np
from scipy import optimize

from .. import roots
from ..blocks import REGISTRY
from ..errors import SimulationError
from ..parts import AlgebraicPart
from . import vectorize
from .hybrid import StiffnessWatch, integrate_hybrid, make_grid
from .rates import attach_rates
from .solvers import FIXED_STEP

# nflow's fixed-step loop integrates physical islands with classical RK4 between grid
# points (events still located inside a step); ode1/ode4/ode45/dae are the named solvers.
METHOD = {"discrete": "ode4", "ode1": "ode1", "ode4": "ode4", "ode45": "ode45", "dae": "dae"}

METHOD_NAME = {"ode1": "forward Euler", "ode4": "classical RK4"}

# Event-function checks per input time scale (the shortest rise-and-fall of a source, e.g.
# half a sine period): a relation moved by that input between two steps of a state at rest
# is seen unless it stays flipped for less than an eighth of that stretch (a sine above a
# threshold for less than 1/16 of its period: within 2% of its amplitude).
SCANS_PER_SCALE = 8

# grid rows whose recorded values are computed together after a free run (a block of
# every island's unknowns is held at once)
ROWS_AT_ONCE = 1024


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
        unknowns = [part for part in self.parts if isinstance(part, AlgebraicPart)]
        self.algebraic_solve = AlgebraicSolve(self, unknowns) if unknowns else None
        if unknowns:
            # algebraic states (constraint blocks): each evaluation solves them first. Only
            # such diagrams get the wrapper; the others keep the plain evaluate below.
            self.evaluate = self.algebraic_solve.evaluate
        # islands that need their driving signals' time derivatives compute them as they read them
        attach_rates(plan, self.parts)
        # solver-stage evaluations run only what can reach a continuous part (see _cone)
        self.skipped = _skippable(plan)
        # the time-only blocks no stage reads run at no evaluation: the major steps take
        # their values from the grid (plan.major_steps)
        grid = plan.major_steps
        skipped = self.skipped | grid.vector.blocks if grid else self.skipped
        self.stage_output, self.stage_algebraic = _stage_lists(plan, skipped)
        self.major_output, self.major_algebraic = (grid.output, grid.algebraic) if grid else (plan.output,
                                                                                                plan.algebraic)
        # an evaluation may move a Newton warm start (the algebraic unknowns', a non-linear
        # island's behind an impure sensor) that later results depend on to the last bit
        self.warm_started = self.algebraic_solve is not None or any(
            b.type.acausal and (p.output is not None or p.algebraic is not None) and not _pure(b, p)
            for i, (b, p) in enumerate(zip(plan.diagram.blocks, plan.phases)) if i not in self.skipped)
        # one island holding the whole state: no slicing, no concatenation (an island
        # returns fresh arrays, so its derivative can be handed to the solver as it is)
        self.single = (self.parts[0] if len(self.parts) == 1 and self.parts[0].fresh_derivative
                       else None)

    @property
    def x0(self) -> np.ndarray:
        return np.concatenate([part.x0 for part in self.parts]) if self.parts else np.zeros(0)

    def evaluate(self, t: float, x, committed: bool = False):
        """Set time and state, then run OUTPUT and ALGEBRAIC: every closure at a committed
        evaluation (a major step), only those that can reach a continuous part at a
        solver stage (``committed`` False; the others feed nothing but recorders)."""
        ctx = self.ctx
        ctx.t = t
        ctx.side_effect_free = not committed
        if self.single is not None:
            self.single.load(x)
        else:
            for part, sl in zip(self.parts, self.slices):
                part.load(x[sl])
        if committed:
            for f in self.major_output:
                f()
            for f in self.major_algebraic:
                f()
        else:
            for f in self.stage_output:
                f()
            for f in self.stage_algebraic:
                f()

    def derivative(self, t, x):
        self.plan.budget.spend()     # the wall clock, also inside a long interval between grid points
        self.evaluate(t, x)
        if self.single is not None:
            xdot = self.single.derivative(t, x)
        else:
            xdot = np.concatenate([part.derivative(t, x[sl]) for part, sl in zip(self.parts, self.slices)])
        # a finite sum of squares has every term finite (an infinity or a NaN would carry
        # over); only an overflowing one, which finite terms may give, is looked at closely
        if not math.isfinite(xdot.dot(xdot)) and not np.isfinite(xdot).all():
            raise SimulationError("non_finite_state", f"the state derivative is not finite at t = {t:.9g} "
                                  "(an infinite or NaN input, or a parameter outside the floating-point range)")
        return xdot

    def event_functions(self, t, x):
        self.evaluate(t, x)
        if self.single is not None:
            g = np.asarray(self.single.event_functions(t, x), dtype=float)
            self.g_sizes = [g.size]
            return g
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


def run_continuous(plan, progress=None) -> int:
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
        for f in update:
            f()
        for f in after:
            f()
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
    options = dict(method=method, rtol=d.rel_tol, atol=d.abs_tol, max_step=max_step,
                   sample=major_step, max_steps=plan.limits.max_solver_steps,
                   scan_spacing=inputs_scan_spacing(plan, system.skipped, float(grid[0]), float(grid[-1])),
                   stiffness=stiffness)
    if on_grid:
        on_grid.start()
    done = _integrate(plan, system, grid, options, major_step, progress)
    if on_grid:
        on_grid.finish(done)
    if stiffness is not None and stiffness.found is not None:
        ctx.warnings.append(_stiffness_warning(plan, system, method, stiffness.found))
    return done


def _integrate(plan, system, grid, options, major_step, progress) -> int:
    """The integration of ``run_continuous``: the number of grid points run."""
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
        recorders = _bulk_recording(plan, system, progress)
        if recorders is not None:
            # nothing needs a major step at each grid point: integrate without the
            # per-point callback and fill the recorders from the grid states at once
            res = integrate_hybrid(system, x, grid, **dict(options, sample=None))
            _record_in_bulk(plan, system, recorders, res)
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
    scale = min((phases.time_scale(t0, t1) for i, phases in enumerate(plan.phases)
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


class AlgebraicSolve:
    """Reduces the semi-explicit index-1 DAE x' = f(t, x, z), 0 = g(t, x, z) to an ODE in x:
    every evaluation of the diagram (right-hand side, event functions, major step) first
    solves g = 0 for the algebraic unknowns z at the given (t, x), running OUTPUT and
    ALGEBRAIC side-effect free as the residual function, then evaluates the diagram at
    that z (committed at a major step). So each point the solver sees, and each recorded
    grid point, is on the constraint manifold.

    The solve: damped Newton from the last solution (the block's InitialCondition at the
    start) with a forward-difference Jacobian kept across solves, improved by Broyden
    updates after each step and recomputed when the residual stops halving. It stops when
    the Newton correction |J^-1 g|, with J differenced at that very point, is below
    ``TIGHT (1 + |z|)`` (a test that does not depend on how g is scaled), or when g is
    exactly 0. When Newton fails: scipy.optimize.root ('hybr', then 'lm' for several
    unknowns) and, for one unknown, a search for a sign change of g around the last z
    refined by brentq. Their result is accepted when its correction, with a Jacobian
    differenced over ``ACCEPT_STEP`` (so that a jump of g across 0 is not taken for a
    root), is below ``LOOSE (1 + |z|)``; otherwise the run stops with
    ``constraint_unsolvable`` naming the blocks. Every path does a bounded number of
    residual evaluations (a few per solve when the solution moves smoothly)."""

    TIGHT = 1e-12          # Newton's stopping test on the correction, relative to 1 + |z|
    LOOSE = 1e-8           # a point is accepted as a solution up to this correction
    MAX_NEWTON = 40        # Newton iterations per solve
    MAX_HALVINGS = 12      # step halvings of the damped Newton step
    ACCEPT_STEP = 1e-6     # difference step (relative) of the acceptance test's Jacobian
    BRACKET_STEPS = 48     # sign-change search: 1e-3 (1 + |z|) * 2^k, k < 48, on both sides

    def __init__(self, system, unknowns):
        self.sys = system
        self.ctx = system.ctx
        self.unknowns = unknowns
        self.m = len(unknowns)
        self.output = system.plan.output
        self.algebraic = system.plan.algebraic
        self.jac = None        # the last Jacobian dg/dz (a cache, not state)
        self._at = None        # z of the last residual evaluation (what the store holds)
        self.evaluations = 0   # residual evaluations so far (diagnostics)

    # -- the residual --------------------------------------------------------------------
    def residual(self, z) -> np.ndarray:
        for part, v in zip(self.unknowns, z):
            part.z = float(v)
        for f in self.output:
            f()
        for f in self.algebraic:
            f()
        self._at = np.array(z, dtype=float)
        self.evaluations += 1
        return np.array([float(part.residual()) for part in self.unknowns])

    def _settle(self, z) -> np.ndarray:
        """Leave the parts and the signal store at ``z``."""
        if self._at is None or not np.array_equal(self._at, z):
            self.residual(z)
        return z

    def evaluate(self, t: float, x, committed: bool = False):
        """PlanSystem.evaluate with the algebraic unknowns solved first."""
        sysm, ctx = self.sys, self.ctx
        ctx.t = t
        ctx.side_effect_free = True
        for part, sl in zip(sysm.parts, sysm.slices):
            part.load(x[sl])
        self._at = None            # a new (t, x): the store no longer matches any z
        z = self._solve()
        if committed:
            ctx.side_effect_free = False
            for f in self.output:
                f()
            for f in self.algebraic:
                f()
        return z

    # -- the solve -----------------------------------------------------------------------
    def _solve(self) -> np.ndarray:
        z0 = np.array([part.z for part in self.unknowns])
        f0 = self.residual(z0)
        if np.isfinite(f0).all():
            if not f0.any():
                return z0
            z = self._newton(z0, f0)
            if z is not None:
                return self._settle(z)
        z = self._fallback(z0)
        if z is not None:
            return self._settle(z)
        self._fail(z0)

    def _newton(self, z, f):
        result = roots.newton(self.residual, z, tol=self.TIGHT, max_iterations=self.MAX_NEWTON,
                              halvings=self.MAX_HALVINGS, broyden=True, start_jacobian=self.jac, f0=f)
        if result.converged:
            self.jac = result.jacobian
            return result.z
        if result.best_size <= self.LOOSE and self._accept(result.best):
            return result.best
        return None

    def _accept(self, z) -> bool:
        """Whether ``z`` solves g = 0 up to a Newton correction of LOOSE (1 + |z|)."""
        z = np.asarray(z, dtype=float)
        if not np.isfinite(z).all():
            return False
        f = self.residual(z)
        if not np.isfinite(f).all():
            return False
        if not f.any():
            return True
        # A difference step well above the accepted correction: across a jump of g that
        # passes over 0 without a root, g/J is then about half that step, so it is refused.
        J = roots.difference_jacobian(self.residual, z, f, self.ACCEPT_STEP)
        dz = roots.correction(J, f)
        if dz is None or float(np.abs(dz).max()) > self.LOOSE * (1.0 + float(np.abs(z).max())):
            return False
        self.jac = J
        return True

    def _fallback(self, z0):
        numeric = (ArithmeticError, ValueError, np.linalg.LinAlgError)
        methods = ("hybr",) if self.m == 1 else ("hybr", "lm")
        for method in methods:
            try:
                res = optimize.root(self.residual, z0, method=method,
                                    options={"xtol": 1e-13, "maxfev": 200 * (self.m + 1)})
            except numeric:
                continue
            if self._accept(res.x):
                return np.array(res.x, dtype=float)
        if self.m == 1:
            return self._bracket(float(z0[0]))
        return None

    def _bracket(self, z0: float):
        """One unknown: the nearest sign change of g on either side of ``z0`` (steps doubling
        from 1e-3 (1 + |z0|)), refined by brentq."""

        def g(v):
            return float(self.residual(np.array([v]))[0])

        g0 = g(z0)
        step = 1e-3 * (1.0 + abs(z0))
        sides = [[z0, g0], [z0, g0]]
        for _ in range(self.BRACKET_STEPS):
            for side, sign in zip(sides, (1.0, -1.0)):
                a, ga = side
                b = z0 + sign * step
                gb = g(b)
                if math.isfinite(ga) and math.isinf(gb) and ga * gb < 0.0:
                    b, gb = self._finite_end(g, a, ga, b)   # g overflowed past its root
                if math.isfinite(ga) and math.isfinite(gb) and (ga == 0.0 or gb == 0.0 or ga * gb < 0.0):
                    lo, hi = (a, b) if a < b else (b, a)
                    try:
                        root = optimize.brentq(g, lo, hi, xtol=1e-15 * (1.0 + abs(lo) + abs(hi)),
                                               rtol=4.0 * np.finfo(float).eps, maxiter=200)
                    except (RuntimeError, ValueError, ArithmeticError):
                        root = None
                    if root is not None and self._accept([root]):
                        return np.array([root])
                    # a jump of g across 0 (no root): search on past it
                side[:] = [b, gb]
            step *= 2.0
        return None

    @staticmethod
    def _finite_end(g, a: float, ga: float, b: float):
        """Bisect towards ``a`` from a point ``b`` where g is infinite (of the other sign)
        to a point where g is finite; (b, g(b)) as found, possibly still infinite."""
        gb = math.inf
        for _ in range(64):
            c = 0.5 * (a + b)
            gc = g(c)
            if math.isfinite(gc) and gc * ga <= 0.0:
                return c, gc
            if math.isfinite(gc):
                a, ga = c, gc
            else:
                b = c
        return b, gb

    def _fail(self, z0):
        names = ", ".join(repr(part.key) for part in self.unknowns)
        f = self.residual(z0)
        first = self.unknowns[0]
        what = "constraint block" + ("s " if self.m > 1 else " ")
        raise SimulationError(
            "constraint_unsolvable",
            f"{what}{names}: no z makes the residual input g zero at t = {self.ctx.t:.9g} "
            f"(g = {', '.join(f'{v:.6g}' for v in f)} at z = {', '.join(f'{v:.6g}' for v in z0)}); "
            "the equation g(x, z) = 0 has no real solution there, or g does not depend on z",
            block=first.key, path=first.path)


# ----------------------------------------------------------------------------- fast paths

def _pure(block, phases) -> bool:
    """Whether block's OUTPUT / ALGEBRAIC closures may run any number of times (or not at
    all) without any effect but on its output slots."""
    if phases.update is not None or phases.after_step is not None:
        return False
    closure = phases.output if phases.output is not None else phases.algebraic
    if getattr(closure, "pure", False):
        # declared by the closure (an acausal sensor reading its island), also on the block
        # that carries the island's part: the part is integrated whether or not it runs
        return True
    # declared by its handler (``@block(pure=True)``); a block carrying a part under that
    # flag is a crossing surface reading its inputs at every stage
    return phases.part is None and REGISTRY[block.type.type].pure


def _after_step_reader(block, phases) -> bool:
    return (REGISTRY[block.type.type].reads_after_step and phases.output is None and phases.algebraic is None
            and phases.update is None and phases.part is None)


def _skippable(plan) -> frozenset:
    """Indices of the blocks whose OUTPUT / ALGEBRAIC closures solver-stage evaluations
    may skip: pure blocks (``_pure``) whose outputs are read only by after-step readers
    or by other skippable blocks, so nothing that a stage evaluation computes for a
    continuous part (island inputs, a StatePart's inputs, crossing surfaces, constraint
    residuals) depends on them. Conservative: none in diagrams with subsystems or
    algebraic unknowns."""
    d = plan.diagram
    if d.structure is not None:
        return frozenset()
    blocks, phases = d.blocks, plan.phases
    consumers = [[] for _ in blocks]
    for i, srcs in enumerate(plan.sources):
        for src in srcs:
            if src is not None:
                consumers[src[0]].append(i)
    cand = {i for i, (b, p) in enumerate(zip(blocks, phases))
            if (p.output is not None or p.algebraic is not None) and _pure(b, p)}
    # blocks that read their inputs at every stage whether their closures run or not: a
    # part's derivative, an island's feed
    stage_readers = {i for i, (b, p) in enumerate(zip(blocks, phases)) if p.part is not None or b.type.acausal}
    changed = True
    while changed:
        changed = False
        for i in sorted(cand):
            if any((j not in cand or j in stage_readers) and not _after_step_reader(blocks[j], phases[j])
                   for j in consumers[i]):
                cand.discard(i)
                changed = True
    return frozenset(cand)


def grid_paths(plan, complex_out, bound_slots) -> vectorize.MajorSteps | None:
    """The time-only paths of ``plan`` that its major steps take from arrays over the grid
    (``vectorize.select_major``; arguments as there): read by after-step readers (recorders,
    a stop) and by one another only. None when there are none, and in diagrams with
    subsystems or algebraic unknowns (whose evaluations run every closure)."""
    if plan.diagram.structure is not None or any(isinstance(p.part, AlgebraicPart) for p in plan.phases):
        return None
    readers = {i for i, (b, p) in enumerate(zip(plan.diagram.blocks, plan.phases)) if _after_step_reader(b, p)}
    vector = vectorize.select_major(plan, complex_out, bound_slots, readers)
    return vectorize.MajorSteps(plan, vector) if vector is not None else None


def _stage_lists(plan, skipped):
    """plan.output / plan.algebraic without the closures of ``skipped`` blocks (same
    order). A closure the plan made itself (an algebraic-loop relaxation) is kept."""
    if not skipped:
        return list(plan.output), list(plan.algebraic)
    owner = {}
    for i, p in enumerate(plan.phases):
        for f in (p.output, p.algebraic):
            if f is not None:
                owner.setdefault(id(f), i)
    outs = [f for f in plan.output if owner.get(id(f)) not in skipped]
    algs = [f for f in plan.algebraic if owner.get(id(f)) not in skipped]
    return outs, algs


def _bulk_recording(plan, system, progress):
    """The recorders to fill in bulk after a free run, or None when the per-grid-point
    major steps are needed. Taken only when nothing but toWorkspace recorders acts at a
    major step and nothing else observes one: no UPDATE, no progress callback, no
    algebraic unknowns, no subsystems; every AFTER_STEP (and every result) is a
    toWorkspace with a bulk entry whose input is unconnected or written by a sensor
    whose value depends on time and its island's state alone (``output.linear``: linear
    terms; ``output.of_state``: a circuit probe); every other OUTPUT / ALGEBRAIC closure is
    pure (``_pure``). Returns [(bulk, values or None)], ``values(times, X, slice_of,
    solved)`` giving the recorded values on a block of grid rows (``_record_in_bulk``)."""
    d = plan.diagram
    if progress is not None or plan.update or system.algebraic_solve is not None or d.structure is not None:
        return None
    own = {id(p.algebraic) for p in plan.phases if p.algebraic is not None}
    if any(id(f) not in own for f in plan.algebraic):   # an algebraic loop's relaxation
        return None
    on_grid = plan.major_steps
    # time-only signals (pure: they declare an array form) from their arrays over the grid
    time_only = on_grid.vector.members if on_grid else set()
    values_of = {s: partial(_time_only_values, on_grid.vector, s) for i in time_only for s in plan.output_slots[i]}
    recorders = []
    for b, p in zip(d.blocks, plan.phases):
        if p.after_step is not None or p.result is not None:
            bulk = getattr(p.after_step, "bulk", None)
            if bulk is None or b.type.type != "toWorkspace" or p.output is not None or p.algebraic is not None:
                return None
            recorders.append(bulk)
            continue
        if p.output is None and p.algebraic is None:
            continue
        if not _pure(b, p) and b.index not in time_only:
            return None
        for slot, (part, pick) in (getattr(p.output, "of_state", None) or {}).items():
            values_of[slot] = partial(_probed_values, part, pick)
        for slot, linear in (getattr(p.output, "linear", None) or {}).items():
            values_of[slot] = partial(_linear_values, linear)
    out = []
    for bulk in recorders:
        if bulk.slot is None:
            out.append((bulk, None))
        elif bulk.slot in values_of:
            out.append((bulk, values_of[bulk.slot]))
        else:
            return None
    return out


def _time_only_values(vector, slot, times, X, slice_of, solved):
    """A time-only signal's values: the vectorized set's columns, computed once for all."""
    columns = solved.get(id(vector))
    if columns is None:
        columns = solved[id(vector)] = vector.columns_at(times)
    return columns[slot]


def _linear_values(linear, times, X, slice_of, solved):
    from ..physical.islands import linear_values
    return linear_values(linear, lambda part, i: X[:, slice_of[id(part)].start + i])


def _probed_values(part, pick, times, X, slice_of, solved):
    """A circuit probe's values: its island's unknowns, solved once for all its probes."""
    z = solved.get(id(part))
    if z is None:
        z = solved[id(part)] = part.island.solve_rows(times, X[:, slice_of[id(part)]])
    return pick(z)


def _record_in_bulk(plan, system, recorders, res) -> None:
    """Fill the recorders from the grid states of a free run, as the major steps would,
    ``ROWS_AT_ONCE`` grid rows at a time."""
    n = len(res.t)
    slice_of = {id(part): sl for part, sl in zip(system.parts, system.slices)}
    step_times = np.arange(n) * plan.diagram.sample_time    # ctx.t of each major step: k * dt
    columns = [None if values is None else np.empty(n) for _, values in recorders]
    for start in range(0, n, ROWS_AT_ONCE):
        rows = slice(start, start + ROWS_AT_ONCE)
        solved = {}
        for column, (_, values) in zip(columns, recorders):
            if values is not None:
                column[rows] = values(step_times[rows], res.x[rows], slice_of, solved)
    for column, (bulk, _) in zip(columns, recorders):
        bulk(step_times, column)
