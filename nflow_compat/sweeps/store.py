"""Where a sweep's results go: a Parquet dataset, one file per finished batch while the
sweep runs, one file in all once it has run (``finish``).

``-o results.parquet`` makes two directories, each a Parquet dataset that
``pandas.read_parquet``, ``pyarrow.parquet.read_table`` and ``dask.dataframe.read_parquet``
read whole:

* ``results.parquet/``: the table, one row per run: ``run``, one column per parameter
  (named as in the spec), ``status`` ("ok" / "error"), ``error_code``, ``error``,
  ``batched`` (whether the run was integrated in a vectorized batch), one
  column per reduction (``<variable>.<reduction>``) and per event reduction
  (``events.<entry>``); ``_sweep.json`` says which sweep this is (readers skip names
  starting with ``_``);
* ``results.traces/`` (when the spec asks for traces): the traces in long form, keyed by
  run: ``run``, ``variable``, ``element`` (of a wide signal), ``sample``, ``time``,
  ``value``. For xarray: ``df.set_index(["run", "variable", "element", "time"]).to_xarray()``.

While the sweep runs, each finished batch is a file ``part-<first run>-<last run>.parquet``
in both; its traces file is written before its table file, each under a temporary name
then renamed, so a table file means the batch is complete: re-running an interrupted sweep
reads which runs have a row and runs only the others (a traces file without its table file
is removed then). When a sweep call ends, its files are compacted into
``data-<k>.parquet`` (one, or one per ``FILE_BYTES`` of data) and the batch files removed.

Counts (``crossings``, event counts) are integer columns, nullable: a failed run's is
missing (pandas ``Int64``, not a float NaN); so are the integer parameters and ``run``;
``batched`` is a nullable boolean (pandas ``boolean``; missing for a failed run, and for
runs stored by a version without the column).
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import DiagramError
from .spec import Spec, event_column

MANIFEST = "_sweep.json"
FILE_BYTES = 256 * 1024 * 1024     # the compacted dataset: one file per this much data (in memory)
_FILES = ("part-*.parquet", "data-*.parquet")
_FIXED = (("status", pa.string()), ("error_code", pa.string()), ("error", pa.string()), ("batched", pa.bool_()))
_TRACE_SCHEMA = pa.schema([("run", pa.int64()), ("variable", pa.dictionary(pa.int32(), pa.string())),
                           ("element", pa.int32()), ("sample", pa.int64()), ("time", pa.float64()),
                           ("value", pa.float64())])


def traces_path(output) -> Path:
    """The traces directory beside ``output`` (``results.parquet`` -> ``results.traces``)."""
    return Path(output).with_suffix(".traces")


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _parameter_column(values: list) -> tuple:
    """(arrow type, values as stored): numbers as int64/float64, booleans as bool,
    anything else (expressions, arrays) as text (strings as they are, others as JSON)."""
    if all(isinstance(v, bool) for v in values):
        return pa.bool_(), values
    if all(_is_number(v) for v in values):
        return (pa.int64() if all(isinstance(v, int) for v in values) else pa.float64()), values
    return pa.string(), [v if isinstance(v, str) else orjson.dumps(v).decode() for v in values]


class Store:
    """The results of one sweep: on disk under ``output`` (resumable), or in memory."""

    def __init__(self, spec: Spec, output=None):
        self.spec = spec
        self.output = None if output is None else Path(output)
        self.traces_dir = None if output is None or not spec.traces else traces_path(output)
        fields, self.parameter_values = [("run", pa.int64())], []
        for p in spec.parameters:
            kind, stored = _parameter_column([run[len(self.parameter_values)] for run in spec.runs])
            fields.append((p.name, kind))
            self.parameter_values.append(stored)
        fields += _FIXED
        fields += [(column, pa.int64() if r.counts else pa.float64()) for o in spec.outputs
                   for column, r in o.columns]
        fields += [(event_column(e.text), pa.int64() if e.counts else pa.float64()) for e in spec.events]
        self.schema = pa.schema(fields)
        self.memory: list = []        # tables of runs not written to disk (no output, or lost runs)
        self.memory_traces: list = []
        self.done: set = set()
        if self.output is not None:
            self._open()

    # -- disk ---------------------------------------------------------------------------
    def _open(self) -> None:
        out = self.output
        if out.exists() and not out.is_dir():
            raise DiagramError("output_exists", f"{out} exists and is not a sweep's results directory; choose "
                               "another output or remove it")
        manifest = {"fingerprint": self.spec.fingerprint, "runs": len(self.spec.runs),
                    "parameters": [p.name for p in self.spec.parameters]}
        if (out / MANIFEST).is_file():
            found = orjson.loads((out / MANIFEST).read_bytes())
            if found.get("fingerprint") != self.spec.fingerprint:
                raise DiagramError("output_mismatch", f"{out} holds the results of another sweep (a different "
                                   "diagram, parameter values or outputs); choose another output or remove it")
        else:
            for taken in (out, self.traces_dir):
                if taken is not None and taken.is_dir() and any(taken.iterdir()):
                    raise DiagramError("output_exists", f"{taken} is a directory that is not a sweep's results; "
                                       "choose another output or remove it")
        out.mkdir(parents=True, exist_ok=True)
        _write_atomic(out / MANIFEST, lambda tmp: tmp.write_bytes(orjson.dumps(manifest)))
        for part in _files(out):
            self.done.update(pq.read_table(part, columns=["run"]).column("run").to_pylist())
        if self.traces_dir is not None:
            self.traces_dir.mkdir(parents=True, exist_ok=True)
            finished = {p.name for p in out.glob("part-*.parquet")}
            for orphan in self.traces_dir.glob("part-*.parquet"):
                if orphan.name not in finished:    # its batch was interrupted before its table file
                    orphan.unlink()

    # -- batches --------------------------------------------------------------------------
    def _table(self, finished: list) -> pa.Table:
        columns = {name: [] for name in self.schema.names}
        for run, row, _ in finished:
            columns["run"].append(run)
            for p, stored in zip(self.spec.parameters, self.parameter_values):
                columns[p.name].append(stored[run])
            for name in self.schema.names[1 + len(self.spec.parameters):]:
                columns[name].append(row.get(name))
        return pa.table({name: pa.array(columns[name], type=self.schema.field(name).type)
                         for name in self.schema.names}, schema=self.schema)

    @staticmethod
    def _traces(finished: list) -> pa.Table | None:
        pieces = []
        names = []
        for run, _, traces in finished:
            for variable, times, values in traces:
                n, width = values.shape
                if variable not in names:
                    names.append(variable)
                pieces.append({
                    "run": np.full(n * width, run, dtype=np.int64),
                    "variable": np.full(n * width, names.index(variable), dtype=np.int32),
                    "element": np.tile(np.arange(width, dtype=np.int32), n),
                    "sample": np.repeat(np.arange(n, dtype=np.int64), width),
                    "time": np.repeat(np.full(n, np.nan) if times is None else times, width),
                    "value": values.reshape(-1)})
        if not pieces:
            return None
        joined = {k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}
        joined["variable"] = pa.DictionaryArray.from_arrays(joined["variable"], pa.array(names, pa.string()))
        return pa.table(joined, schema=_TRACE_SCHEMA)

    def add(self, finished: list) -> None:
        """Keep one finished batch: (run id, row, traces) per run."""
        table, traces = self._table(finished), self._traces(finished)
        runs = [run for run, _, _ in finished]
        if self.output is None:
            self.memory.append(table)
            if traces is not None:
                self.memory_traces.append(traces)
        else:
            name = f"part-{min(runs):07d}-{max(runs):07d}.parquet"
            if traces is not None and self.traces_dir is not None:
                _write_atomic(self.traces_dir / name, lambda tmp: pq.write_table(traces, tmp))
            _write_atomic(self.output / name, lambda tmp: pq.write_table(table, tmp))
        self.done.update(runs)

    def lose(self, runs: list, code: str, message: str) -> None:
        """Runs that got no result (their worker kept dying): in the returned table as
        errors, never on disk, so the next run of the sweep tries them again."""
        self.memory.append(self._table([(run, {"status": "error", "error_code": code, "error": message}, [])
                                        for run in runs]))

    def finish(self) -> None:
        """The sweep call is over: its batch files become ``data-<k>.parquet`` (see the
        module doc). New files are written first, then the old removed, so an interruption
        leaves every run at least once (``_read`` keeps one copy)."""
        if self.output is None:
            return
        for folder, schema in ((self.output, self.schema), (self.traces_dir, _TRACE_SCHEMA)):
            if folder is None:
                continue
            old = _files(folder)
            if len(old) <= 1 and not any(p.name.startswith("part-") for p in old):
                continue                          # already one compacted file (or none)
            table = _read(old, schema)
            rows = max(1, math.ceil(table.num_rows * FILE_BYTES / max(1, table.nbytes)))
            generation = 1 + max((int(p.stem.split("-")[1]) for p in folder.glob("data-*.parquet")), default=-1)
            for k, start in enumerate(range(0, max(1, table.num_rows), rows)):
                name = folder / f"data-{generation + k:07d}.parquet"
                _write_atomic(name, lambda tmp: pq.write_table(table.slice(start, rows), tmp))
            for path in old:
                path.unlink()

    # -- the result ------------------------------------------------------------------------
    def frame(self) -> pd.DataFrame:
        """Every run kept, ordered by run id (with ``attrs["traces"]`` when in memory)."""
        table = pa.concat_tables([_read(_files(self.output), self.schema)] + self.memory
                                 if self.output is not None else self.memory or [self.schema.empty_table()])
        frame = table.to_pandas(types_mapper=_NULLABLE.get).sort_values("run", kind="stable").reset_index(drop=True)
        if self.output is None and self.spec.traces:
            traces = (pa.concat_tables(self.memory_traces) if self.memory_traces else _TRACE_SCHEMA.empty_table())
            frame.attrs["traces"] = traces.to_pandas()
        return frame


# arrow integer and boolean columns as pandas' nullable ones (a failed run's count is missing, not NaN)
_NULLABLE = {pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype(), pa.bool_(): pd.BooleanDtype()}


def _files(folder: Path) -> list:
    return sorted(p for pattern in _FILES for p in folder.glob(pattern))


def _read(paths: list, schema: pa.Schema) -> pa.Table:
    """The files' rows in one table, each run's from the first file holding it (an
    interrupted compaction leaves a run in two files; each file holds whole runs)."""
    tables, seen = [], np.zeros(0, dtype=np.int64)
    for path in paths:
        table = pq.read_table(path, schema=schema)
        runs = table.column("run").to_numpy()
        repeated = np.isin(runs, seen)
        tables.append(table.filter(pa.array(~repeated)) if repeated.any() else table)
        seen = np.union1d(seen, runs)
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _write_atomic(path: Path, write) -> None:
    """``write(tmp)`` then rename onto ``path``: a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp")    # dataset readers skip names starting with '.'
    write(tmp)
    os.replace(tmp, path)
