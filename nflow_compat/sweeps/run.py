"""Run a sweep where it pays: in this process, or on Dask.

Where (``executor``):

* a ``client`` or a ``scheduler`` address given: on that cluster (``sweeps.cluster``);
* ``"inline"``: in this process (no Dask imported);
* ``"local"``: on a local Dask cluster, kept for the next sweep of this Python session
  (closed at exit, or by ``close_local_cluster()``);
* ``"auto"`` (the default): the first runs go in this process, timed (they are real runs,
  kept): single runs until they have taken ``PROBE_SECONDS`` or ``PROBE_RUNS`` are done,
  or, where the runs can be batched (below), one single run and one batch of ``CHUNK[0]``;
  the rest go to the local cluster only when it would finish them sooner than this
  process, counting what starting it costs (``CLUSTER_START`` seconds, measured here:
  importing Dask, starting the scheduler and the worker processes, and each worker
  importing this package; nothing for a cluster kept from an earlier sweep), and when
  there is more than one core. A sweep is thereby never much slower than a loop of
  ``simulate``.

Batched (``batched``, the default): runs that differ only in top-level block parameters go
to the batch engine (``engine.batch``) many at once, which integrates them as one
vectorized run where the diagram allows it: in this process in chunks of ``CHUNK`` runs
(about ``INLINE_STORE_SECONDS`` each), on Dask in fewer, larger tasks
(``cluster.SIZING``). ``batched=False`` runs every run on its own.

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
from ..params import rebinds
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
CHUNK = (16, 256)   # the fewest and most runs in one call of the batch engine in this process


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:     # not on Linux
        return os.cpu_count() or 1


class _Inline:
    """Runs of one sweep in this process, stored every ``INLINE_STORE_SECONDS`` (or at the
    spec's batch size), progress reported after each call of the worker. ``batched``: the
    runs go to the worker (and so to the batch engine) in chunks sized to take about
    ``INLINE_STORE_SECONDS`` from the time measured per run (``CHUNK``), else one by one."""

    def __init__(self, spec, store: Store, limits: Limits, batch_size, progress, batched: bool):
        self.spec, self.store, self.limits, self.progress = spec, store, limits, progress
        self.batch_size = batch_size or spec.batch_size or math.inf
        self.batched = batched
        self.per_run = math.inf        # the fastest time per run seen, in seconds
        self.pending: list = []
        self.stored_at = time.perf_counter()

    def chunk(self) -> int:
        """Runs for the next call of the worker."""
        if not self.batched:
            return 1
        low, high = CHUNK
        fitting = INLINE_STORE_SECONDS / self.per_run if self.per_run > 0 else high
        return int(min(high, max(low, fitting), self.batch_size))

    def run(self, todo: list, chunk: int | None = None) -> None:
        """Run ``todo``, ``chunk`` runs per call of the worker (default: ``self.chunk()``)."""
        start = 0
        try:
            while start < len(todo):
                head = todo[start:start + (chunk or self.chunk())]
                started = time.perf_counter()
                [batch] = batches(self.spec, head, len(head), self.limits, self.batched)
                self.pending += run_batch(batch)
                self.per_run = min(self.per_run, (time.perf_counter() - started) / len(head))
                start += len(head)
                if (time.perf_counter() - self.stored_at > INLINE_STORE_SECONDS
                        or len(self.pending) >= self.batch_size):
                    self.flush()
                if self.progress is not None:
                    self.progress(len(self.store.done) + len(self.pending), len(self.spec.runs))
        except KeyboardInterrupt:
            self.flush()
            raise Interrupted(len(self.store.done), len(self.spec.runs)) from None
        self.flush()

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
          executor: str = "auto", dashboard: str | None = None, batched: bool = True):
    """See ``nflow_compat.sweeps.sweep``."""
    if executor not in EXECUTORS:
        raise DiagramError("bad_executor", f"executor {executor!r} is not one of {', '.join(EXECUTORS)}")
    limits = limits or Limits()
    parsed = spec_module.load(spec, limits=limits, base_dir=base_dir)
    store = Store(parsed, output)
    todo = [run for run in range(len(parsed.runs)) if run not in store.done]
    workers = workers or cores()
    # runs that differ only in top-level block parameters can go to the batch engine together
    batched = batched and rebinds(parsed.parameters)
    on_cluster = dict(limits=limits, batch_size=batch_size, workers=workers, dashboard=dashboard, progress=progress,
                      batched=batched)
    if todo and (executor == "local" or client is not None or scheduler is not None):
        _on_cluster(parsed, store, todo, client=client, scheduler=scheduler, **on_cluster)
    elif todo:
        inline = _Inline(parsed, store, limits, batch_size, progress, batched)
        if executor == "auto":
            _probe(inline, todo)
            loaded = sys.modules.get(__package__ + ".cluster")     # a cluster kept by an earlier sweep
            kept = loaded is not None and loaded.kept(workers, dashboard)
            if _cluster_pays(inline.per_run, len(todo), workers, kept):
                _on_cluster(parsed, store, todo, client=None, scheduler=None, **on_cluster)
                todo = []
        inline.run(todo)
    store.finish()
    return store.frame()


def _probe(inline: _Inline, todo: list) -> None:
    """The timed runs of "auto" (module docstring): single runs until ``PROBE_SECONDS`` or
    ``PROBE_RUNS``; where the runs go to the batch engine, one first (it pays the imports and
    tells whether a batch would be long), then one batch of ``CHUNK[0]`` (what a run costs in
    a batch), unless that batch would take longer than ``INLINE_STORE_SECONDS`` by the first
    run's time (then the single run's time decides)."""
    started, probed = time.perf_counter(), 0
    while todo and probed < (1 if inline.batched else PROBE_RUNS) and time.perf_counter() - started < PROBE_SECONDS:
        inline.run(todo[:1], chunk=1)
        del todo[:1]
        probed += 1
    if inline.batched and len(todo) >= CHUNK[0] and inline.per_run * CHUNK[0] <= INLINE_STORE_SECONDS:
        inline.run(todo[:CHUNK[0]], chunk=CHUNK[0])
        del todo[:CHUNK[0]]


def _on_cluster(spec, store, todo, **where):
    try:
        from . import cluster
    except ImportError as exc:     # dask: part of the optional extra
        raise SimulationError("missing_dependency", f"a sweep on Dask needs the 'sweep' extra (dask.distributed): "
                              f"{exc}; executor='inline' runs it in this process") from None
    cluster.execute(spec, store, todo, **where)
