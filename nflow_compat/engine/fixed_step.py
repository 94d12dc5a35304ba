"""nflow's fixed-step loop: per grid point OUTPUT, ALGEBRAIC, UPDATE, AFTER_STEP."""
from __future__ import annotations

# With a progress callback the loop runs in chunks of about this many block calls, and
# reports between chunks: a few milliseconds of work, so the callback costs nothing
# measurable and the step loop itself is the same as without one.
PROGRESS_CALLS = 65_536


def run_fixed_step(plan, n_samples: int, progress=None) -> int:
    """Run up to ``n_samples`` grid points; returns how many ran (a stop ends early).
    ``progress(done, n_samples)`` is called between chunks of steps when given."""
    ctx = plan.ctx
    dt = ctx.dt
    output, algebraic, update, after = plan.output, plan.algebraic, plan.update, plan.after_step
    calls = len(output) + len(algebraic) + len(update) + len(after)
    chunk = n_samples if progress is None else max(1, min(4096, PROGRESS_CALLS // max(1, calls)))
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
        if progress is not None:
            progress(min(start + chunk, n_samples), n_samples)
    return n_samples
