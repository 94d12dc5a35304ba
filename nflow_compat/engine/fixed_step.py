"""nflow's fixed-step loop: per grid point OUTPUT, ALGEBRAIC, UPDATE, AFTER_STEP.

Two ways to run it, with the same results bit for bit: every block through its closures
(``run_closures``, the reference), or compiled (``Program``): the time-only signal paths
over slices of the grid at once (``engine.vectorize``) and the rest through one generated
step function (``engine.codegen``).
"""
from __future__ import annotations

from . import codegen, vectorize
from .context import blame


def run_fixed_step(plan, n_samples: int, progress=None) -> int:
    """Run up to ``n_samples`` grid points; returns how many ran (a stop ends early).
    The steps run in chunks of ``plan.budget.chunk`` (a few milliseconds of work); between
    chunks the run's limits are checked and ``progress(done, n_samples)`` is called when
    given, so neither costs the step loop anything measurable."""
    if plan.program is not None:
        return plan.program.run(n_samples, progress)
    return run_closures(plan, n_samples, progress)


def run_closures(plan, n_samples: int, progress=None) -> int:
    """``run_fixed_step`` calling every block's closures."""
    ctx, budget = plan.ctx, plan.budget
    dt = ctx.dt
    output, algebraic, update, after = plan.output, plan.algebraic, plan.update, plan.after_step
    chunk = budget.chunk
    f = None
    for start in range(0, n_samples, chunk):
        for k in range(start, min(start + chunk, n_samples)):
            ctx.t = k * dt   # a product, never an accumulated sum
            ctx.k = k
            try:
                for f in output:
                    f()
                for f in algebraic:
                    f()
                for f in update:
                    f()
                for f in after:
                    f()
            except Exception as exc:
                blame(exc, f)
                raise
            if ctx.stop:
                if progress is not None:
                    progress(k + 1, n_samples)
                return k + 1
        done = min(start + chunk, n_samples)
        budget.check(done)
        if progress is not None:
            progress(done, n_samples)
    return n_samples


class Program:
    """A plan's fixed-step loop, compiled once with the plan: its vectorized set (None if
    empty) and its generated step function (None when nothing is left in the loop)."""

    def __init__(self, plan, complex_out, bound_slots):
        self.plan = plan
        self.vector = vectorize.select(plan, complex_out, bound_slots)
        self.step = codegen.generate(plan, self.vector, bound_slots)

    def run(self, n_samples: int, progress=None) -> int:
        plan, vector, step = self.plan, self.vector, self.step
        ctx, budget, S = plan.ctx, plan.budget, plan.S
        dt, chunk = ctx.dt, budget.chunk

        def check(done):
            budget.check(done)
            if progress is not None:
                progress(done, n_samples)
        state = step.start() if step is not None else None
        width = vector.slice if vector is not None else max(1, n_samples)
        tail = {}
        columns = {}
        for first in range(0, n_samples, width):
            end = min(first + width, n_samples)
            if vector is not None:
                times, columns = vector.evaluate(first, end, dt, tail if end == n_samples else None)
                budget.check(first)    # the wall clock, after a slice's arrays
            if step is not None:
                feeds = [iter(columns[s].tolist()) for s in step.fed]
                done = step.run(first, end, chunk, feeds, state, check)
            else:
                for start in range(first, end, chunk):
                    check(min(start + chunk, end))
                done = end
            if vector is not None:
                for bulk in vector.recorders:
                    bulk.record(times[:done - first],
                                None if bulk.slot is None else columns[bulk.slot][:done - first])
            if done < end:     # a stop
                if vector is not None:
                    vector.evaluate(done - 1, done, dt, tail)
                    _store(S, tail)
                if progress is not None:
                    progress(done, n_samples)
                return done
        if vector is not None:
            _store(S, tail)
        if step is None and n_samples:
            ctx.t = (n_samples - 1) * dt
            ctx.k = n_samples - 1
        return n_samples


def _store(S, values: dict) -> None:
    """The vectorized signals' values at the last step into the signal store, where the
    closures would have left them."""
    for s, value in values.items():
        S[s] = value
