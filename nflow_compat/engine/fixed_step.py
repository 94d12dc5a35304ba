"""nflow's fixed-step loop: per grid point OUTPUT, ALGEBRAIC, UPDATE, AFTER_STEP."""
from __future__ import annotations


def run_fixed_step(plan, n_samples: int) -> int:
    """Run up to ``n_samples`` grid points; returns how many ran (a stop ends early)."""
    ctx = plan.ctx
    dt = ctx.dt
    output, algebraic, update, after = plan.output, plan.algebraic, plan.update, plan.after_step
    for k in range(n_samples):
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
            return k + 1
    return n_samples
