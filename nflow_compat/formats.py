"""A result written in the format a file name asks for (``nflow-sim run -o result.mat``):

* ``.json``: the result as ``simulate_json`` writes it, a piece at a time (``results.write_json``);
* ``.mat``: a MAT file (``scipy.io.savemat``, MAT 5) that MATLAB's and Nelson's ``load`` read
  as the workspace: one variable per ``toWorkspace`` variable, in its SaveFormat (``Array``
  an N x W matrix; ``Structure With Time`` / ``Structure`` nflow's struct with ``time``,
  ``signals.values``, ``signals.dimensions``, ``signals.label`` and ``blockName``), and the
  time grid as ``tout`` (as Simulink's ``sim`` names it; left out when a variable has that
  name). A name that is not a MATLAB identifier (``stop1.v``) is made one as MATLAB's
  ``matlab.lang.makeValidName`` does (``stop1_v``), and the rename is reported;
* ``.csv``: a table: ``time``, then one column per recorded column, named after the
  variable (alone for a one-column variable, else ``variable:column``); a complex column
  is two (``.real``, ``.imag``); rows at the union of the variables' sample times, a cell
  left empty where a variable has no sample;
* ``.parquet``: the same table as a Parquet file (pyarrow: the extra ``notebook`` or
  ``sweep``), a missing cell null.

The format is checked before the run (``output_format``: stdout and a name without an
extension get JSON; an extension it cannot write is the typed error
``unsupported_output_format``; a writer whose library is missing, ``missing_dependency``). Tables need each variable's sample times: a variable that kept
only some samples without saying which (a decimated ``Array``) cannot be placed and is
``untimed_variable``; choose ``Structure With Time`` or another format.
"""
from __future__ import annotations

import csv
import io
import os
import re

import numpy as np

from . import results
from .errors import NFlowError, SimulationError
from .result import Result

FORMATS = {".json": "json", ".mat": "mat", ".csv": "csv", ".parquet": "parquet"}
MATLAB_NAME_LENGTH = 63          # namelengthmax
_MATLAB_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


class OutputError(NFlowError):
    """The output cannot be written (a format it does not write, an unwritable file)."""

    kind = "output"


def output_format(path: str | None, given: str | None = None) -> str:
    """The format to write: ``given`` (a name of ``FORMATS``), else from ``path``'s extension;
    JSON for stdout (``None`` or ``-``) and a name without an extension. An extension it
    does not write is refused with ``unsupported_output_format``."""
    if given is not None:
        if given not in FORMATS.values():
            raise OutputError("unsupported_output_format", f"unknown output format {given!r} (formats: "
                              f"{', '.join(FORMATS.values())})")
        return given
    suffix = os.path.splitext(path)[1].lower() if path not in (None, "-") else ""
    if not suffix:         # stdout, /dev/null, a name without an extension: JSON, as ever
        return "json"
    if suffix not in FORMATS:
        raise OutputError("unsupported_output_format", f"cannot write {path}: the extension {suffix or '(none)'!r} "
                          f"is not a format nflow-sim writes ({', '.join(FORMATS)}); or give --format")
    return FORMATS[suffix]


def check_available(fmt: str) -> None:
    """``missing_dependency`` now, before the run, when the writer of ``fmt`` cannot be loaded."""
    if fmt == "parquet":
        _pyarrow()


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise SimulationError("missing_dependency", "writing Parquet needs pyarrow, which is not installed: pip "
                              "install 'nflow-compat[notebook]' (or: pip install pyarrow)") from None
    return pyarrow, pyarrow.parquet


def write(result: Result, out, fmt: str, *, allow_nan: bool = False) -> list:
    """Write ``result`` to the binary stream ``out`` in ``fmt``; returns notes for the user
    (the MAT names that were changed)."""
    if fmt == "json":
        results.write_json(result.raw, out, allow_nan=allow_nan)
        out.write(b"\n")
        return []
    buffer = io.BytesIO()
    notes = (_write_mat if fmt == "mat" else _write_csv if fmt == "csv" else _write_parquet)(result, buffer)
    out.write(buffer.getvalue())
    return notes


# ----------------------------------------------------------------------------- MAT

def matlab_names(names) -> dict:
    """name -> a distinct MATLAB identifier for it (``makeValidName``: invalid characters
    become ``_``, a name not starting with a letter gets an ``x`` before it, at most 63
    characters; a repeat gets ``_1``, ``_2``, ...)."""
    out, taken = {}, set()
    for name in names:
        valid = re.sub(r"[^A-Za-z0-9_]", "_", name)
        if not valid or not valid[0].isalpha():
            valid = "x" + valid
        valid = valid[:MATLAB_NAME_LENGTH]
        candidate, k = valid, 0
        while candidate in taken:
            k += 1
            candidate = f"{valid[:MATLAB_NAME_LENGTH - len(str(k)) - 1]}_{k}"
        taken.add(candidate)
        out[name] = candidate
    return out


def _mat_value(variable, value):
    """A workspace entry as MATLAB holds it: a matrix, or nflow's struct."""
    if variable.save_format == "Array":
        return variable.values
    time = variable.time.reshape(-1, 1) if variable.save_format == "Structure With Time" else np.zeros((0, 0))
    block = value.get("blockName") if isinstance(value, dict) else None
    return {"time": time, "signals": {"values": variable.values, "dimensions": float(variable.width), "label": ""},
            "blockName": str(block or "")}


def _write_mat(result: Result, out) -> list:
    from scipy.io import savemat
    names = matlab_names(result.variables)
    workspace = {names[name]: _mat_value(v, result.raw["workspace"][name]) for name, v in result.variables.items()}
    if "tout" not in workspace:
        workspace["tout"] = result.time.reshape(-1, 1)
    savemat(out, workspace, format="5", long_field_names=True, do_compression=False, oned_as="column")
    return [f"variable {name!r} is saved as {valid!r} (a MATLAB name)" for name, valid in names.items() if name != valid]


# ----------------------------------------------------------------------------- tables

def table(result: Result) -> tuple:
    """(times, [(column name, values with NaN / None where a variable has no sample)]) of
    ``result``: the union of the variables' sample times, a column per recorded column
    (complex ones split into ``.real`` / ``.imag``)."""
    untimed = [v.name for v in result.variables.values() if v.time is None]
    if untimed:
        raise OutputError("untimed_variable", f"variable {untimed[0]!r} kept only some samples (Decimation or "
                          "MaxDataPoints) without their times: a table cannot place them; record it as "
                          "'Structure With Time', or write .json or .mat")
    if result.on_grid():
        times = result.time
        rows = {name: slice(None) for name in result.variables}
    else:
        times = np.unique(np.concatenate([result.time] + [v.time for v in result.variables.values()]))
        rows = {name: np.searchsorted(times, v.time) for name, v in result.variables.items()}
    columns = []
    for name, v in result.variables.items():
        for j, column in enumerate(v.columns):
            label = name if v.width == 1 else f"{name}:{column}"
            data = v.values[:, j]
            parts = [(label + ".real", data.real), (label + ".imag", data.imag)] if data.dtype.kind == "c" else [
                (label, data)]
            for part, values in parts:
                if isinstance(rows[name], slice):
                    columns.append((part, values))
                else:
                    full = np.full(times.size, None, dtype=object)
                    full[rows[name]] = values
                    columns.append((part, full))
    return times, columns


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(value)


def _write_csv(result: Result, out) -> list:
    times, columns = table(result)
    text = io.StringIO(newline="")
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["time"] + [name for name, _ in columns])
    for k, t in enumerate(times):
        writer.writerow([repr(float(t))] + [_cell(values[k]) for _, values in columns])
    out.write(text.getvalue().encode())
    return []


def _write_parquet(result: Result, out) -> list:
    pa, pq = _pyarrow()
    times, columns = table(result)
    arrays = {"time": pa.array(times, type=pa.float64())}
    for name, values in columns:
        if values.dtype == object:
            kind = {type(x) for x in values if x is not None}
            values = [None if x is None else (x.item() if isinstance(x, np.generic) else x) for x in values]
            arrays[name] = pa.array(values, type=pa.int64() if kind and kind <= {np.int64} else None)
        else:
            arrays[name] = pa.array(values)
    pq.write_table(pa.table(arrays), out)
    return []
