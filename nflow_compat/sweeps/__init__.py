"""Sweeps and batch runs: one diagram, many parameter values, on Dask (extra ``sweep``).

``nflow_compat.sweep(spec)`` / ``nflow-sim sweep spec.json -o results.parquet``; the spec
is described in ``spec.py``, the stored layout in ``store.py``, the execution in
``run.py``, what a worker does in ``worker.py``.
"""
from __future__ import annotations

from .. import progress as progress_bars
from ..errors import SimulationError
from .outcomes import LOST, TASK_FAILED, WORKER_LOST, Interrupted

__all__ = ["LOST", "TASK_FAILED", "WORKER_LOST", "Interrupted", "sweep"]


def sweep(spec, client=None, *, output=None, scheduler=None, workers=None, batch_size=None, limits=None,
          base_dir=None, progress=None):
    """Run every variant ``spec`` describes and return a pandas DataFrame, one row per
    run: ``run``, a column per swept parameter (named as in the spec), ``status``,
    ``error_code``, ``error``, ``<variable>.<reduction>`` and ``events.<kind>`` columns.

    ``spec``: a dict or the path of its JSON file (see ``nflow_compat.sweeps.spec``).
    ``client``: a ``dask.distributed.Client`` to run on; else ``scheduler`` (an address)
    to connect to; else a local cluster of ``workers`` processes (default: one per core).
    ``output``: a directory (e.g. ``"results.parquet"``) the results go to batch by batch;
    calling again with the same spec and output runs only the runs missing there.
    Without ``output``, traces (if asked for) are in ``frame.attrs["traces"]``.
    ``progress(done, total)`` is called with the runs done (``True``: a ``tqdm.auto`` bar,
    a widget in Jupyter); ``limits``/``base_dir`` as for ``simulate``. Ctrl-C raises ``Interrupted`` (a ``KeyboardInterrupt``) once pending
    batches are cancelled; the finished ones are in ``output``."""
    try:
        from . import run
    except ImportError as exc:     # dask / pandas / pyarrow: the optional extra
        raise SimulationError("missing_dependency", f"sweeps need the 'sweep' extra (pip install "
                              f"'nflow-compat[sweep]'): {exc}") from None
    with progress_bars.callback(progress, "runs") as call:
        return run.sweep(spec, client, output=output, scheduler=scheduler, workers=workers, batch_size=batch_size,
                         limits=limits, base_dir=base_dir, progress=call)
