"""nflow's fixed-step loop: per grid point OUTPUT, ALGEBRAIC, UPDATE, AFTER_STEP."""
from __future__ import annotations


def run_fixed_step(plan, n_samples: int, progress=None) -> int:
    """Run up to ``n_samples`` grid points; returns how many ran (a stop ends early).
    The steps run in chunks of ``plan.budget.chunk`` (a few milliseconds of work); between
    chunks the run's limits are checked and ``progress(done, n_samples)`` is called when
    given, so neither costs the step loop anything measurable."""
    ctx, budget = plan.ctx, plan.budget
    dt = ctx.dt
    output, algebraic, update, after = plan.output, plan.algebraic, plan.update, plan.after_step
    chunk = budget.chunk
    for start in range(0, n_samples, chunk):
        for k in range(start, min(start + chunk, n_samples)):
            ctx.t = k * dt   # a product, never an accumulated sum
            ctx.k = k
            for f in output:
                f()
            for f in algebraic:
                f()
            for f in update:
                f()
            for f in after:
                f()
            if ctx.stop:
                if progress is not None:
                    progress(k + 1, n_samples)
                return k + 1
        done = min(start + chunk, n_samples)
        budget.check(done)
        if progress is not None:
            progress(done, n_samples)
    return n_samples
