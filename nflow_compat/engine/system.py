"""The plan seen as one hybrid system (``derivative``, ``event_functions``, ...) for
``engine.hybrid``: its state is the concatenation of every part's state. A right-hand-side
evaluation sets time and state, runs OUTPUT and ALGEBRAIC (pure: ``ctx.side_effect_free``),
then asks each part for its derivative; the causal blocks drive the parts through the
signal store and read them back through OUTPUT (sensors). A committed evaluation (a major
step) runs the major-step lists instead.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import SolveFailed
from ..parts import AlgebraicPart
from .algebraic import AlgebraicSolve
from .context import call, call_all
from .rates import attach_rates
from .stages import pure_closures, skippable, stage_lists


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
        self.skipped = skippable(plan)
        # the time-only blocks no stage reads run at no evaluation: the major steps take
        # their values from the grid (plan.major_steps)
        grid = plan.major_steps
        skipped = self.skipped | grid.vector.blocks if grid else self.skipped
        self.stage_output, self.stage_algebraic = stage_lists(plan, skipped)
        self.major_output, self.major_algebraic = (grid.output, grid.algebraic) if grid else (plan.output,
                                                                                                plan.algebraic)
        # an evaluation may move a Newton warm start (the algebraic unknowns', a non-linear
        # island's behind an impure sensor) that later results depend on to the last bit
        self.warm_started = self.algebraic_solve is not None or any(
            b.type.acausal and (p.output is not None or p.algebraic is not None) and not pure_closures(h, p)
            for i, (b, h, p) in enumerate(zip(plan.diagram.blocks, plan.handlers, plan.phases))
            if i not in self.skipped)
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
            call_all(self.major_output, self.major_algebraic)
        else:
            call_all(self.stage_output, self.stage_algebraic)

    def _between_events(self, t, x):
        """``evaluate`` for a solver stage or an event-function evaluation: with
        ``ctx.between_events`` set, discrete values hold what the last event committed."""
        ctx = self.ctx
        ctx.between_events = True
        try:
            self.evaluate(t, x)
        finally:
            ctx.between_events = False

    def derivative(self, t, x):
        self.plan.budget.spend()     # the wall clock, also inside a long interval between grid points
        self._between_events(t, x)
        if self.single is not None:
            xdot = self.single.derivative(t, x)
        else:
            xdot = np.concatenate([part.derivative(t, x[sl]) for part, sl in zip(self.parts, self.slices)])
        # a finite sum of squares has every term finite (an infinity or a NaN would carry
        # over); only an overflowing one, which finite terms may give, is looked at closely
        if not math.isfinite(xdot.dot(xdot)) and not np.isfinite(xdot).all():
            # at a solver's trial point a rejected step (engine.hybrid): a smaller one may stay
            # finite (a junction's current overflows only far forward)
            raise SolveFailed("non_finite_state", f"the state derivative is not finite at t = {t:.9g} "
                              "(an infinite or NaN input, a current that overflows, or a parameter outside the "
                              "floating-point range)")
        return xdot

    def event_functions(self, t, x):
        self._between_events(t, x)
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

    def relation_blocks(self, t, x, relations) -> list:
        """The block behind each of the event functions ``relations`` (indices) at (t, x):
        the part's own answer (an island names the element whose relation it is), else
        the block carrying the part."""
        self.evaluate(t, x)
        names, start = [], 0
        for part, sl in zip(self.parts, self.slices):
            size = np.size(part.event_functions(t, x[sl]))
            local = [i - start for i in relations if start <= i < start + size]
            if local:
                own = getattr(part, "relation_blocks", None)
                names.extend(own(t, x[sl], local) if own is not None else [part.key] * len(local))
            start += size
        return names

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
        times = [call(f, t) for f in self.time_events] + [part.next_time_event(t) for part in self.parts]
        return min(times, default=math.inf)
