"""Run a compiled plan once, from INIT: the fixed-step loop or the solver-driven one, the
result dict, and the typed error for anything that escapes a block (named after the block
whose phase call it escaped, ``context.blame``)."""
from __future__ import annotations

import time as _time
from contextlib import contextmanager

import numpy as np

from .. import run_warnings
from ..errors import NFlowError, SimulationError, clip_message, out_of_memory
from .columns import columns
from .context import blamed, call, call_all
from .fixed_step import run_fixed_step

# Solvers the fixed-step loop serves exactly; others need continuous-state support.
FIXED_STEP_SOLVERS = ("discrete", "ode1")


def run_plan(plan, progress=None) -> dict:
    """One run from INIT. ``progress(done, total)``, if given, is called with the grid
    points done so far: between chunks of at most 4096 steps (about 65,000 element-steps)
    in the fixed-step loop, at each grid point under a solver, and at a stop. It must
    be cheap and must not touch the plan. Running out of memory is the SimulationError
    ``out_of_memory``."""
    d = plan.diagram
    if d.solver not in FIXED_STEP_SOLVERS and plan.continuous:
        raise SimulationError("unsupported_solver", f"solver {d.solver!r} is not available yet for "
                              f"continuous blocks ({', '.join(plan.continuous)}); use 'discrete' or 'ode1'",
                              path="/solver")
    started = _time.perf_counter()
    plan.S[:] = plan.initial_signals
    plan.ctx.reset()
    plan.budget.start()
    if progress is not None:
        progress = _CallerCallback(progress)
    try:
        with np.errstate(all="ignore"), run_warnings.captured(plan.ctx.warnings):
            call_all(plan.init)
            steps = (run_solver_driven(plan, progress) if plan.has_parts
                     else run_fixed_step(plan, d.n_samples, progress))
        wall = _time.perf_counter() - started
        return run_result(plan, steps, wall)
    except NFlowError as err:
        _locate(plan, err)
        raise
    except _CallerError as caller:   # the caller's own progress callback raised: theirs, untouched
        raise caller.exc from None
    except MemoryError:
        pass    # raised below, once this frame's exception (and what its traceback holds) is gone
    except Exception as exc:
        # A block's math left the floating-point range (numeric_error), or a handler
        # bug (internal_error): never a raw exception, and named after the block whose
        # phase call it escaped (``context.blame``)
        raise _failure(plan, exc) from exc
    finally:
        for f in plan.finalize:
            f()
    raise out_of_memory(f"running the diagram (at t = {plan.ctx.t:.9g})")


@contextmanager
def blamed_on_blocks(plan):
    """What a run does with an exception escaping the plan's closures, for callers that
    drive them themselves (``engine.linearize``): an NFlowError gets its block's JSON
    pointer, anything else becomes the typed error naming the block it escaped."""
    try:
        yield
    except NFlowError as err:
        _locate(plan, err)
        raise
    except MemoryError:
        raise
    except Exception as exc:
        raise _failure(plan, exc) from exc


def run_solver_driven(plan, progress) -> int:
    """The solver-driven loop, imported (with scipy's integrators and root finder) by the
    first plan with continuous parts: a fixed-step run never loads it."""
    from .solver_driven import run_solver_driven as run
    return run(plan, progress)


def _locate(plan, err: NFlowError) -> None:
    """A run-time error that names a block (an island's element, by its block id) but no
    place gets that block's JSON pointer (and its param's), as compile-time errors have."""
    if err.block is None or err.path is not None:
        return
    block = next((b for b in plan.diagram.blocks if b.id == err.block), None)
    if block is not None:
        err.path = block.where(err.param)["path"]


def _failure(plan, exc: Exception) -> SimulationError:
    """The typed error for ``exc`` escaping the run, naming the block it came from."""
    code = "numeric_error" if isinstance(exc, (ArithmeticError, ValueError)) else "internal_error"
    i = _owner(plan.phases, blamed(exc))
    if i is None:
        return SimulationError(code, f"the run failed at t = {plan.ctx.t:.9g}: {type(exc).__name__}: {exc}")
    b = plan.diagram.blocks[i]
    return SimulationError(code, f"block {b.id!r} ({b.type.type}) failed at t = {plan.ctx.t:.9g}: "
                           f"{type(exc).__name__}: {exc}", block=b.id, path=b.path)


def run_result(plan, steps: int, wall: float) -> dict:
    """The result dict of a run of ``steps`` grid points: time, what each block's ``result``
    gives (workspace, scopes, files), events, stats, warnings and what the recorded columns
    are (``columns``, last)."""
    dt = plan.diagram.sample_time
    out = {"status": "ok", "time": np.arange(steps) * dt, "workspace": {}, "scopes": {},
           "events": list(plan.ctx.events),
           "stats": {"steps": steps, "events": len(plan.ctx.events), "solver": plan.diagram.solver,
                     "wall_s": round(wall, 6)},
           "warnings": [clip_message(w) for w in list(plan.diagram.warnings) + list(plan.ctx.warnings)]}
    noted = len(plan.ctx.warnings)
    for b, p in zip(plan.diagram.blocks, plan.phases):
        if p.result is None:
            continue
        section, key, value = call(p.result)
        entries = out.setdefault(section, {})   # e.g. "files" (fileSink) only when there is one
        if key in entries:
            out["warnings"].append(clip_message(f"{section} entry {key!r} written by more than one block; "
                                                f"block {b.id!r} (the later one) wins"))
        entries[key] = value
    out["warnings"] += [clip_message(w) for w in plan.ctx.warnings[noted:]]   # noted by result()
    out["columns"] = columns(plan.recorded_signals)
    return out


class _CallerError(Exception):
    """Carries an exception of the caller's progress callback through the run's net."""

    def __init__(self, exc: Exception):
        super().__init__(exc)
        self.exc = exc


class _CallerCallback:
    """The caller's ``progress`` with its exceptions marked as theirs (a callback may
    raise to cancel the run: that must reach the caller as it was raised)."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, done, total):
        try:
            self.fn(done, total)
        except Exception as exc:
            raise _CallerError(exc) from None


def _owner(phases: list, fn):
    """The index of the block one of whose phase closures is ``fn``, None if none is (a
    closure the plan made itself: an algebraic loop's relaxation, a subsystem's run)."""
    if fn is None:
        return None
    for i, p in enumerate(phases):
        if any(fn is own for own in (p.init, p.output, p.algebraic, p.update, p.after_step, p.result,
                                     p.next_time_event, p.time_scale, p.array)):
            return i
    return None
