"""What a run may cost: ``Limits.max_element_steps`` (work) and ``max_seconds`` (wall clock).

Work is counted in element-steps: per grid sample, every block costs the elements of its
outputs (1 for a block without outputs), times the passes per step of the iterated
subsystems around it (for iterators and function calls: their counts; a while iterator:
one pass). That much is known before the run and refused then (``check_work``). What
only the run shows is counted as it goes (``Budget.spend``): while-iterator passes beyond
the first and algebraic-loop sweeps beyond the first. The run stops when the work done
reaches the limit, or earlier when, at the average rate so far, the remaining samples
would take it past the limit (so a loop that is slow at every step is stopped within a
second or so instead of after the whole budget); the estimate is trusted only once the
counted work is a thousandth of the limit.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..errors import SimulationError

# Work between two looks at the clock and the budget (~5 ms of scalar blocks).
CHECK_EVERY = 65_536
MAX_CHUNK = 4096          # grid steps between two checks of the fixed-step loop, at most
EVIDENCE = 1e-3           # fraction of the limit counted as it goes before the rate is extrapolated


def block_work(S, slots) -> int:
    """Element-steps of one call of a block whose outputs are ``slots`` of the signal
    store ``S``: their elements, 1 for a block without outputs."""
    return max(1, sum(int(np.size(S[slot])) for slot in slots))


def check_work(n_samples: int, step_work: int, limit: int, heaviest=None) -> None:
    """``too_many_element_steps`` when ``n_samples`` x ``step_work`` exceeds ``limit``.
    ``heaviest`` (id, path, passes per step) names the iterated subsystem whose passes
    weigh most, for the message."""
    work = n_samples * step_work
    if work <= limit:
        return
    where = {"path": "/duration"}
    passes = ""
    if heaviest is not None:
        sub_id, sub_path, count = heaviest
        passes = f" (counting {count:,} passes per step of subsystem {sub_id!r} and those around it)"
        where = {"path": sub_path, "block": sub_id}
    raise SimulationError("too_many_element_steps", f"{n_samples:,} samples x {step_work:,} element-steps per "
                          f"step{passes} = {work:,} element-steps (limit {limit:,}); shorten the run, enlarge "
                          "sampleTime, lower the iteration counts or raise the limit", **where)


class Budget:
    """The run-time side: ``start()`` at the start of a run, ``check(done)`` between
    chunks of grid steps (``chunk`` steps, sized so a chunk is about ``CHECK_EVERY``
    element-steps), ``spend(units)`` for work only the run shows and from loops that may
    run long inside one step (a pass of an iterated subsystem, a solver's right-hand
    side: ``spend()``, which only looks at the clock every 64 calls). Each raises a typed
    SimulationError when a limit is passed: ``too_many_element_steps`` or ``time_limit``."""

    __slots__ = ("limit", "max_seconds", "n_samples", "known", "chunk", "extra", "done", "next_check",
                 "deadline", "ticks", "clock")

    def __init__(self, limits, n_samples: int, clock=time.monotonic):
        self.limit = limits.max_element_steps
        self.max_seconds = limits.max_seconds
        self.n_samples = n_samples
        self.clock = clock
        self.plan_work(1)
        self.start()

    def plan_work(self, step_work: int) -> None:
        """The element-steps of one grid step known ahead (checked by ``check_work``)."""
        self.known = self.n_samples * step_work
        self.chunk = max(1, min(MAX_CHUNK, CHECK_EVERY // max(1, step_work)))

    def start(self) -> None:
        self.extra = 0
        self.done = 0
        self.ticks = 0
        self.next_check = CHECK_EVERY
        self.deadline = math.inf if self.max_seconds is None else self.clock() + self.max_seconds

    def spend(self, units: int = 0) -> None:
        """Work beyond what was counted ahead, done in the step in progress (0: none)."""
        self.extra += units
        self.ticks += 1
        if self.extra >= self.next_check or not self.ticks & 63:
            self.next_check = self.extra + CHECK_EVERY
            self._check(self.done + 1)      # the step in progress counts as one

    def check(self, done: int) -> None:
        """``done`` grid steps are complete."""
        self.done = done
        self._check(done)

    def _check(self, steps: int) -> None:
        if self.clock() > self.deadline:
            self._out_of_time()
        total = self.known + self.extra
        if total > self.limit:
            raise SimulationError("too_many_element_steps", f"the run did more than {self.limit:,} element-steps "
                                  f"by sample {steps:,} of {self.n_samples:,} (while-iterator passes and algebraic-loop "
                                  "sweeps beyond the first are counted as they run); raise the limit, or make the "
                                  "loops converge sooner", path="/duration")
        if self.extra >= EVIDENCE * self.limit:
            rate = self.extra / steps
            projected = self.known + self.extra + rate * max(0, self.n_samples - steps)
            if projected > self.limit:
                raise SimulationError("too_many_element_steps", f"at the rate of its first {steps:,} samples "
                                      f"({rate:.4g} element-steps per sample in while-iterator passes and "
                                      "algebraic-loop sweeps beyond the first), the run would need about "
                                      f"{projected:.4g} element-steps over its {self.n_samples:,} samples (limit "
                                      f"{self.limit:,}); raise the limit, or make the loops converge sooner",
                                      path="/duration")

    def _out_of_time(self):
        raise SimulationError("time_limit", f"the run took more than {self.max_seconds:g} s of wall-clock time "
                              f"(Limits.max_seconds), {self.done:,} of {self.n_samples:,} samples done; raise the "
                              "limit or shorten the run")
