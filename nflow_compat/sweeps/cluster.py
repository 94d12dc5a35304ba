"""A sweep's runs on Dask: batches of runs as tasks, results kept as each batch finishes.

Where: a given client (``Client("tls://scheduler:8786")``, or any cluster's client) or
scheduler address; else a ``LocalCluster`` of processes (one single-threaded worker per
core: the runs are Python and hold the GIL) listening on 127.0.0.1 only, its dashboard
off unless asked for (``dashboard="127.0.0.1:8787"``), kept for the next sweep of this
Python session (``kept``; closed at exit or by ``close_local_cluster``).

Faults: a run that fails is a row with its typed error (``worker.run_batch``). A worker
that dies takes its task with it; the scheduler gives the task to another worker (up
to ``distributed.scheduler.allowed-failures`` times), and since results only reach the
store through the task's single result, a retried batch is stored once. A batch whose
workers kept dying gets ``worker_lost`` rows in the returned table, not on disk, so the
next run of the sweep tries it again. Ctrl-C (or a ``progress`` callback that raises)
cancels what is pending; every finished batch is already stored.
"""
from __future__ import annotations

import atexit
import logging
import math
import signal
import sys
import threading
from contextlib import contextmanager

from dask.distributed import Client, KilledWorker, LocalCluster, as_completed

from ..errors import SimulationError
from .outcomes import TASK_FAILED, WORKER_LOST, Interrupted
from .worker import batches, run_batch

# batches per worker when the spec does not set batch_size, and the most runs in one: load
# balance vs overhead; runs the batch engine takes together gain with the batch's size, so
# fewer, larger batches of them
SIZING = {False: (8, 64), True: (2, 512)}    # batched -> (tasks per worker, most runs per task)
CONNECT_TIMEOUT = "30s"   # to reach a given scheduler

_KEPT: dict = {}          # the local cluster kept for this session: key (workers, dashboard) -> (cluster, client)


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


def _start(workers: int, dashboard: str | None) -> LocalCluster:
    try:
        with _ignoring_ctrl_c():
            # without a dashboard the scheduler still serves its HTTP routes (health, metrics):
            # on a free port, not on the dashboard's 8787, which another cluster may hold
            return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                host="127.0.0.1", dashboard_address=dashboard, silence_logs=logging.ERROR,
                                scheduler_kwargs=None if dashboard else {"dashboard_address": "127.0.0.1:0"})
    except (RuntimeError, OSError, ImportError) as exc:
        hint = (" (the dashboard needs bokeh: pip install 'bokeh>=3.1')" if dashboard and isinstance(exc, ImportError)
                else "; in a script, call sweep() under `if __name__ == \"__main__\":` (its worker processes import "
                     "the main module)")
        raise SimulationError("cluster_failed", f"the local Dask cluster did not start ({exc}){hint}") from None


@contextmanager
def local_client(workers: int, dashboard: str | None = None):
    """A client of a fresh local cluster of ``workers`` processes (loopback only), closed after."""
    cluster = _start(workers, dashboard)
    try:
        with Client(cluster) as client:
            yield client
    finally:
        cluster.close()


def kept(workers: int, dashboard: str | None) -> bool:
    """Whether a local cluster of this shape is kept from an earlier sweep of this session."""
    return (workers, dashboard) in _KEPT


def kept_client(workers: int, dashboard: str | None) -> Client:
    """The kept local cluster's client, started (and any other kept one closed) if needed."""
    key = (workers, dashboard)
    if key not in _KEPT:
        close_local_cluster()
        cluster = _start(workers, dashboard)
        _KEPT[key] = (cluster, Client(cluster))
        if dashboard:     # asked for: say where it is
            sys.stderr.write(f"nflow-sim: the Dask dashboard is at {cluster.dashboard_link}\n")
    return _KEPT[key][1]


def close_local_cluster() -> None:
    """Close the local cluster kept from an earlier sweep (if any)."""
    while _KEPT:
        cluster, client = _KEPT.popitem()[1]
        client.close()
        cluster.close()


atexit.register(close_local_cluster)


@contextmanager
def _client(client, scheduler: str | None, workers: int, dashboard: str | None):
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
        yield kept_client(workers, dashboard)


def _batch_size(todo: int, workers: int, batched: bool) -> int:
    tasks_per_worker, most = SIZING[batched]
    return max(1, min(most, math.ceil(todo / (max(1, workers) * tasks_per_worker))))


def execute(spec, store, todo: list, *, workers: int, client=None, scheduler: str | None = None,
            dashboard: str | None = None, batch_size: int | None = None, limits=None, progress=None,
            batched: bool = False) -> None:
    """Run ``todo`` (run ids of ``spec``) on the cluster, each finished batch into ``store``
    (``batched``: the runs can go to the batch engine together, see ``worker``)."""
    with _client(client, scheduler, workers, dashboard) as active:
        size = batch_size or spec.batch_size or _batch_size(len(todo), len(active.scheduler_info()["workers"]),
                                                                 batched)
        futures = {active.submit(run_batch, batch, pure=False): [run for run, _ in batch.runs]
                   for batch in batches(spec, todo, size, limits, batched)}
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
            active.cancel([f for f in futures if not f.done()])
