"""Sweeps and batch runs: one diagram, many parameter values, on Dask (extra ``sweep``).

``nflow_compat.sweep(spec)`` / ``nflow-sim sweep spec.json -o results.parquet``; the spec
is described in ``spec.py``, the stored layout in ``store.py``, the execution in
``run.py``, what a worker does in ``worker.py``.
"""
from __future__ import annotations

from ..errors import SimulationError
from .outcomes import LOST, TASK_FAILED, WORKER_LOST, Interrupted

__all__ = ["LOST", "TASK_FAILED", "WORKER_LOST", "Interrupted", "close_local_cluster", "sweep"]


def sweep(spec, client=None, *, output=None, scheduler=None, workers=None, batch_size=None, limits=None,
          base_dir=None, progress=None, executor="auto", dashboard=None):
    """Run every variant ``spec`` describes and return a pandas DataFrame, one row per
    run: ``run``, a column per swept parameter (named as in the spec), ``status``,
    ``error_code``, ``error``, ``<variable>.<reduction>`` and ``events.<kind>`` columns.

    ``spec``: a dict or the path of its JSON file (see ``nflow_compat.sweeps.spec``).
    Where it runs: on ``client`` (a ``dask.distributed.Client``) or at ``scheduler`` (an
    address) when given; else ``executor``: ``"auto"`` (default) times the first runs here
    and sends the rest to a local cluster of ``workers`` processes (default: one per core)
    only when that finishes sooner, ``"inline"`` runs everything in this process,
    ``"local"`` on the local cluster; a local cluster is kept for the next sweep of the
    session (``close_local_cluster()`` ends it). ``dashboard`` (an address such as
    ``"127.0.0.1:8787"``) turns its Dask dashboard on.
    ``output``: a directory (e.g. ``"results.parquet"``) the results go to batch by batch;
    calling again with the same spec and output runs only the runs missing there.
    Without ``output``, traces (if asked for) are in ``frame.attrs["traces"]``.
    ``progress(done, total)`` is called with the runs done; ``limits``/``base_dir`` as for
    ``simulate``. Ctrl-C raises ``Interrupted`` (a ``KeyboardInterrupt``) once pending
    batches are cancelled; the finished ones are in ``output``."""
    try:
        from . import run
    except ImportError as exc:     # pandas / pyarrow: the optional extra
        raise SimulationError("missing_dependency", f"sweeps need the 'sweep' extra (pip install "
                              f"'nflow-compat[sweep]'): {exc}") from None
    return run.sweep(spec, client, output=output, scheduler=scheduler, workers=workers, batch_size=batch_size,
                     limits=limits, base_dir=base_dir, progress=progress, executor=executor, dashboard=dashboard)


def close_local_cluster() -> None:
    """End the local Dask cluster a sweep of this session kept (if any)."""
    import sys
    cluster = sys.modules.get(__name__ + ".cluster")
    if cluster is not None:
        cluster.close_local_cluster()
