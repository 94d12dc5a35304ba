"""Run a sweep on Dask: batches of runs as tasks, results kept as each batch finishes.

Without a client, a ``LocalCluster`` of processes (one single-threaded worker per core:
the runs are Python and hold the GIL) listening on 127.0.0.1 only, no dashboard, shut
down at the end. With a client (``Client("tls://scheduler:8786")``, or any cluster's
client), its workers do the runs; they need this package installed.

Faults: a run that fails is a row with its typed error (``worker.run_batch``). A worker
that dies takes its task with it; the scheduler gives the task to another worker (up
to ``distributed.scheduler.allowed-failures`` times), and since results only reach the
store through the task's single result, a retried batch is stored once. A batch whose
workers kept dying gets ``worker_lost`` rows in the returned table, not on disk, so the
next run of the sweep tries it again. Ctrl-C (or a ``progress`` callback that raises)
cancels what is pending; every finished batch is already stored.
"""
from __future__ import annotations

import logging
import math
import os
import signal
import threading
from contextlib import contextmanager

from dask.distributed import Client, KilledWorker, LocalCluster, as_completed

from ..diagram import Limits
from ..errors import SimulationError
from . import spec as spec_module
from .outcomes import TASK_FAILED, WORKER_LOST, Interrupted
from .store import Store
from .worker import Batch, run_batch

TASKS_PER_WORKER = 8      # batches per worker when the spec does not set batch_size: load balance vs overhead
MAX_AUTO_BATCH = 64
CONNECT_TIMEOUT = "30s"   # to reach a given scheduler


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:     # not on Linux
        return os.cpu_count() or 1


@contextmanager
def _ignoring_ctrl_c():
    """SIGINT ignored while worker processes start, which inherit that: Ctrl-C then
    reaches this process alone, which stops the sweep and shuts the cluster down (the
    workers would otherwise each print their own KeyboardInterrupt)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def local_client(workers: int | None = None):
    """A client of a fresh local cluster (loopback only, no dashboard), closed after."""
    try:
        with _ignoring_ctrl_c():
            cluster = LocalCluster(n_workers=workers or cores(), threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=None, silence_logs=logging.ERROR)
    except (RuntimeError, OSError) as exc:
        raise SimulationError("cluster_failed", f"the local Dask cluster did not start ({exc}); in a script, "
                              "call sweep() under `if __name__ == \"__main__\":` (its worker processes import "
                              "the main module)") from None
    try:
        with Client(cluster) as client:
            yield client
    finally:
        cluster.close()


@contextmanager
def _client(client, scheduler: str | None, workers: int | None):
    if client is not None:
        yield client
    elif scheduler is not None:
        try:
            connected = Client(scheduler, timeout=CONNECT_TIMEOUT)   # TLS and credentials from the Dask config
        except (OSError, ValueError) as exc:
            raise SimulationError("scheduler_unreachable", f"cannot reach the Dask scheduler at {scheduler!r}: "
                                  f"{exc}") from None
        with connected:
            yield connected
    else:
        with local_client(workers) as local:
            yield local


def _batch_size(todo: int, workers: int) -> int:
    return max(1, min(MAX_AUTO_BATCH, math.ceil(todo / (max(1, workers) * TASKS_PER_WORKER))))


def _execute(client, spec, store: Store, todo: list, batch_size, limits: Limits, progress) -> None:
    size = batch_size or spec.batch_size or _batch_size(len(todo), len(client.scheduler_info()["workers"]))
    common = dict(structure=spec.structure, diagram=spec.diagram, pointers=tuple(p.pointer for p in spec.parameters),
                  blocks=tuple(p.block for p in spec.parameters), outputs=spec.outputs, events=spec.events,
                  limits=limits, base_dir=spec.base_dir)
    futures = {}
    for start in range(0, len(todo), size):
        runs = todo[start:start + size]
        batch = Batch(runs=tuple((run, spec.runs[run]) for run in runs), **common)
        futures[client.submit(run_batch, batch, pure=False)] = runs
    total = len(spec.runs)
    done = len(store.done)
    try:
        if progress is not None:
            progress(done, total)
        for future in as_completed(futures):
            runs = futures[future]
            try:
                finished = future.result()
            except KilledWorker as exc:
                store.lose(runs, WORKER_LOST, f"the workers running this batch died ({exc}); run the sweep "
                           "again to retry it")
            except Exception as exc:      # the task itself failed (e.g. this package missing on the worker)
                store.lose(runs, TASK_FAILED, f"the batch could not run: {type(exc).__name__}: {exc}")
            else:
                store.add(finished)
            done += len(runs)
            if progress is not None:
                progress(done, total)
    except KeyboardInterrupt:
        raise Interrupted(len(store.done), total) from None
    finally:
        client.cancel([f for f in futures if not f.done()])


def sweep(spec, client=None, *, output=None, scheduler: str | None = None, workers: int | None = None,
          batch_size: int | None = None, limits: Limits | None = None, base_dir=None, progress=None):
    """See ``nflow_compat.sweeps.sweep``."""
    limits = limits or Limits()
    parsed = spec_module.load(spec, limits=limits, base_dir=base_dir)
    store = Store(parsed, output)
    todo = [run for run in range(len(parsed.runs)) if run not in store.done]
    if todo:
        with _client(client, scheduler, workers) as active:
            _execute(active, parsed, store, todo, batch_size, limits, progress)
    return store.frame()
