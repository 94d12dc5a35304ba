"""How a sweep run can end without a result, and the interruption a sweep raises: kept apart
from the package so ``run`` (which needs dask) and the package import them without a cycle."""
from __future__ import annotations


# error codes of runs that got no result (not stored: running the sweep again retries them)
WORKER_LOST, TASK_FAILED = "worker_lost", "task_failed"
LOST = (WORKER_LOST, TASK_FAILED)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep: ``done`` of ``total`` runs are stored."""

    def __init__(self, done: int, total: int):
        super().__init__(f"{done} of {total} runs done")
        self.done, self.total = done, total
