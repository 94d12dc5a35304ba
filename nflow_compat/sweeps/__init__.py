"""Sweeps and batch runs: one diagram, many parameter values, on Dask (extra ``sweep``).

``nflow_compat.sweep(spec)`` / ``nflow-sim sweep spec.json -o results.parquet``; the spec
is described in ``spec.py``, the stored layout in ``store.py``, the execution in
``run.py``, what a worker does in ``worker.py``.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import progress as progress_bars
from ..diagram import Limits
from ..errors import SimulationError
from ..extras import install_hint
from .outcomes import LOST, TASK_FAILED, WORKER_LOST, Interrupted

if TYPE_CHECKING:                       # the 'sweep' extra's types, for the annotations only
    import pandas
    from distributed import Client

__all__ = ["LOST", "TASK_FAILED", "WORKER_LOST", "Interrupted", "close_local_cluster", "sweep"]


def sweep(spec: dict[str, Any] | str | os.PathLike[str], client: Client | None = None, *,
          output: str | os.PathLike[str] | None = None, scheduler: str | None = None, workers: int | None = None,
          batch_size: int | None = None, limits: Limits | None = None, base_dir: str | os.PathLike[str] | None = None,
          progress: Callable[[int, int], object] | bool | None = None, executor: str = "auto",
          dashboard: str | None = None, batched: bool = True) -> pandas.DataFrame:
    """Run every variant of one diagram that ``spec`` describes, where it pays: in this
    process or on Dask.

    Needs the ``sweep`` extra (pandas, pyarrow; Dask distributed for a cluster). A failing
    run (a parameter value out of range, a solver failure) is recorded with its typed error
    and the sweep goes on.

    Parameters
    ----------
    spec : dict or path
        The sweep spec (checked against ``schemas/sweep.schema.json``): ``diagram`` (the
        diagram or the path of its JSON file), ``parameters`` (where each value goes and
        its values), ``combine`` (``grid`` or ``zip``), ``outputs`` (reductions per
        toWorkspace variable), ``events``, ``batch_size``, ``seed``; or the path of its
        JSON file (a diagram path in it is relative to that file).
    client : distributed.Client, optional
        The Dask client to run on; else ``scheduler``, a scheduler to connect to; else
        ``executor`` decides.
    output : str or os.PathLike, optional
        A directory (e.g. ``"results.parquet"``) the results are stored in batch by batch;
        calling again with the same spec and output runs only the runs missing there.
        Without it, traces (if asked for) are in ``frame.attrs["traces"]``.
    scheduler : str, optional
        A Dask scheduler address (``tcp://host:8786``, ``tls://...``).
    workers : int, optional
        Worker processes of the local cluster (default: one per core).
    batch_size : int, optional
        Runs per Dask task (default: about 8 tasks per worker, at most 64 runs each; where
        the runs are batched, about 2 per worker, at most 512 each), and in this process at
        most per call of the batch engine.
    limits : Limits, optional
        The bounds of every run (default ``Limits()``).
    base_dir : str or os.PathLike, optional
        The directory file blocks may use; default the diagram file's directory, else the
        spec file's, else none (no file access, as for ``simulate``).
    progress : callable or True, optional
        ``progress(done, total)``, called with the runs done so far; ``True`` draws a
        ``tqdm.auto`` bar (a widget in Jupyter).
    executor : {"auto", "inline", "local"}
        Where the runs go without a client or scheduler: ``"auto"`` (default) times the
        first runs in this process and sends the rest to a local cluster of ``workers``
        processes (listening on 127.0.0.1 only) only when that finishes them sooner, its
        start counted; ``"inline"``: all in this process (Dask is not imported);
        ``"local"``: on the local cluster. A local cluster is kept for the next sweep of
        the session (``close_local_cluster()`` ends it; it is closed at exit).
    dashboard : str, optional
        An address (``"127.0.0.1:8787"``) for the local cluster's Dask dashboard (needs
        bokeh); its link is printed on stderr.
    batched : bool
        Runs that differ only in parameters of blocks outside subsystems go to the batch
        engine many at once (default): their integrations step side by side as one
        vectorized run where the diagram allows it, each run with its own step size, error
        control, modes and events (``engine.batch.run_batch``); each row's ``batched`` says
        whether it ran so. ``False``: every run on its own.

    Returns
    -------
    pandas.DataFrame
        One row per run: ``run``, a column per parameter (named as in the spec), ``status``
        (``ok`` / ``error``), ``error_code``, ``error``, ``batched`` (nullable boolean: whether
        the run was integrated in a vectorized batch; missing for a failed run),
        ``<variable>.<reduction>`` and
        ``events.<entry>`` (counts as nullable ``Int64``).

    Raises
    ------
    DiagramError
        The spec (its ``path`` points into it) or the diagram is wrong, or ``output`` holds
        another sweep (``output_mismatch``).
    SimulationError
        ``missing_dependency`` without the ``sweep`` extra.
    Interrupted
        Ctrl-C (a ``KeyboardInterrupt``), raised once the pending batches are cancelled;
        the finished ones are stored in ``output``.

    Examples
    --------
    >>> import nflow_compat as nc
    >>> diagram = {
    ...     "blocks": [{"id": "c", "type": "constant", "params": {"Value": 7}},
    ...                {"id": "g", "type": "gain", "params": {"Gain": 1}},
    ...                {"id": "w", "type": "toWorkspace", "params": {"VariableName": "y", "SaveFormat": "Array"}}],
    ...     "connections": [{"from": "c", "to": "g"}, {"from": "g", "to": "w"}],
    ...     "sampleTime": 0.1, "duration": 0.2}
    >>> spec = {"diagram": diagram, "parameters": {"g.Gain": [1, 2, 3]}, "outputs": {"y": ["final"]}}
    >>> frame = nc.sweep(spec)
    >>> print(frame[["g.Gain", "status", "y.final"]].to_string(index=False))
     g.Gain status  y.final
          1     ok      7.0
          2     ok     14.0
          3     ok     21.0
    """
    try:
        from . import run
    except ImportError as exc:     # dask / pandas / pyarrow: the optional extra
        raise SimulationError("missing_dependency", f"sweeps need the 'sweep' extra ({exc}); "
                              f"{install_hint('sweep')}") from None
    with progress_bars.callback(progress, "runs") as call:
        return run.sweep(spec, client, output=output, scheduler=scheduler, workers=workers, batch_size=batch_size,
                         limits=limits, base_dir=base_dir, progress=call, executor=executor, dashboard=dashboard,
                         batched=batched)


def close_local_cluster() -> None:
    """End the local Dask cluster a sweep of this session kept (without one: nothing).

    Examples
    --------
    >>> import nflow_compat as nc
    >>> nc.sweeps.close_local_cluster()
    """
    cluster = sys.modules.get(__name__ + ".cluster")
    if cluster is not None:
        cluster.close_local_cluster()
