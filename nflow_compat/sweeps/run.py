"""Run a sweep where it pays: in this process, or on Dask.

Where (``executor``):

* a ``client`` or a ``scheduler`` address given: on that cluster (``sweeps.cluster``);
* ``"inline"``: in this process, one run after the other (no Dask imported);
* ``"local"``: on a local Dask cluster, kept for the next sweep of this Python session
  (closed at exit, or by ``close_local_cluster()``);
* ``"auto"`` (the default): the first runs go in this process, timed (they are real runs,
  kept), until they have taken ``PROBE_SECONDS`` or ``PROBE_RUNS`` are done; the rest go
  to the local cluster only when it would finish them sooner than this process, counting
  what starting it costs (``CLUSTER_START`` seconds, measured here: importing Dask,
  starting the scheduler and the worker processes, and each worker importing this
  package; nothing for a cluster kept from an earlier sweep), and when there is more than
  one core. A sweep is thereby never much slower than a loop of ``simulate``.

Either way the runs are ``worker.run_batch``'s and go to the same ``Store``, batch by
batch, so an interrupted sweep resumes with the runs missing from its output.
"""
from __future__ import annotations

import math
import os
import sys
import time

from ..diagram import Limits
from ..errors import DiagramError, SimulationError
from . import spec as spec_module
from .outcomes import Interrupted
from .store import Store
from .worker import batches, run_batch

EXECUTORS = ("auto", "inline", "local")
PROBE_SECONDS = 0.2       # what the timed runs of "auto" may take before it decides
PROBE_RUNS = 3
# seconds a fresh local cluster costs before its first result, measured on this 2-core machine
# (bench/sweep.py --only sweep prints it): importing dask.distributed, starting the
# scheduler and the worker processes, each worker importing nflow_compat and validating the
# diagram, and closing it at the end
CLUSTER_START = 3.0
# a cluster must beat this process by this factor to be chosen (its runs also pay for
# sending values and results between processes)
MARGIN = 1.25
INLINE_STORE_SECONDS = 2.0   # runs in this process are stored at least this often (what resume can lose)


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:     # not on Linux
        return os.cpu_count() or 1


class _Inline:
    """Runs of one sweep in this process, stored every ``INLINE_STORE_SECONDS`` (or at the
    spec's batch size), progress reported after each."""

    def __init__(self, spec, store: Store, limits: Limits, batch_size, progress):
        self.spec, self.store, self.limits, self.progress = spec, store, limits, progress
        self.batch_size = batch_size or spec.batch_size or math.inf
        self.pending: list = []
        self.stored_at = time.perf_counter()

    def run(self, todo: list) -> float:
        """Run ``todo``; returns the seconds the fastest run took."""
        fastest = math.inf
        try:
            for batch in batches(self.spec, todo, 1, self.limits):
                started = time.perf_counter()
                self.pending += run_batch(batch)
                fastest = min(fastest, time.perf_counter() - started)
                if (time.perf_counter() - self.stored_at > INLINE_STORE_SECONDS
                        or len(self.pending) >= self.batch_size):
                    self.flush()
                if self.progress is not None:
                    self.progress(len(self.store.done) + len(self.pending), len(self.spec.runs))
        except KeyboardInterrupt:
            self.flush()
            raise Interrupted(len(self.store.done), len(self.spec.runs)) from None
        self.flush()
        return fastest

    def flush(self):
        if self.pending:
            self.store.add(self.pending)
            self.pending = []
        self.stored_at = time.perf_counter()


def _cluster_pays(run_seconds: float, left: int, workers: int, kept: bool) -> bool:
    """Whether ``left`` runs of ``run_seconds`` each end sooner on a local cluster of
    ``workers`` processes than here."""
    if workers < 2 or left == 0:
        return False
    here = left * run_seconds
    there = (0.0 if kept else CLUSTER_START) + left * run_seconds / workers
    return there * MARGIN < here


def sweep(spec, client=None, *, output=None, scheduler: str | None = None, workers: int | None = None,
          batch_size: int | None = None, limits: Limits | None = None, base_dir=None, progress=None,
          executor: str = "auto", dashboard: str | None = None):
    """See ``nflow_compat.sweeps.sweep``."""
    if executor not in EXECUTORS:
        raise DiagramError("bad_executor", f"executor {executor!r} is not one of {', '.join(EXECUTORS)}")
    limits = limits or Limits()
    parsed = spec_module.load(spec, limits=limits, base_dir=base_dir)
    store = Store(parsed, output)
    todo = [run for run in range(len(parsed.runs)) if run not in store.done]
    workers = workers or cores()
    on_cluster = dict(limits=limits, batch_size=batch_size, workers=workers, dashboard=dashboard, progress=progress)
    if todo and (executor == "local" or client is not None or scheduler is not None):
        _on_cluster(parsed, store, todo, client=client, scheduler=scheduler, **on_cluster)
    elif todo:
        inline = _Inline(parsed, store, limits, batch_size, progress)
        if executor == "inline":
            inline.run(todo)
        else:
            fastest, started, probed = math.inf, time.perf_counter(), 0
            while todo and probed < PROBE_RUNS and time.perf_counter() - started < PROBE_SECONDS:
                fastest = min(fastest, inline.run([todo.pop(0)]))
                probed += 1
            loaded = sys.modules.get(__package__ + ".cluster")     # a cluster kept by an earlier sweep
            kept = loaded is not None and loaded.kept(workers, dashboard)
            if _cluster_pays(fastest, len(todo), workers, kept):
                _on_cluster(parsed, store, todo, client=None, scheduler=None, **on_cluster)
            else:
                inline.run(todo)
    store.finish()
    return store.frame()


def _on_cluster(spec, store, todo, **where):
    try:
        from . import cluster
    except ImportError as exc:     # dask: part of the optional extra
        raise SimulationError("missing_dependency", f"a sweep on Dask needs the 'sweep' extra (dask.distributed): "
                              f"{exc}; executor='inline' runs it in this process") from None
    cluster.execute(spec, store, todo, **where)
