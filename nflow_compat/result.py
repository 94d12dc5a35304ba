"""A run's result for Python users (``nflow_compat.run``): numpy arrays with named columns,
pandas and xarray views, a one-screen summary.

``simulate`` / ``simulate_json`` return nflow's result as it is (the contract,
CONTRACT §4); ``Result`` wraps the same dict: a workspace variable is its N x W matrix
whatever its SaveFormat, its columns are named after the signals it records (the result's
``columns``, ``engine.columns``), and its sample times are its own (``Structure With
Time``), else the result's grid when it kept every sample, else unknown (a decimated
``Array`` or ``Structure`` does not say which samples it kept: it is indexed by sample
number). The JSON writing of a result lives in ``results.py``; the other file formats in
``formats.py``.

pandas and xarray are optional: each is imported by the method that needs it
(``to_pandas``, ``events``, ``to_xarray``), never by a run.
"""
from __future__ import annotations

import copy
import html
import json
import math
from dataclasses import dataclass, field

import numpy as np
import orjson

from .errors import SimulationError
from .results import to_python

MAX_REPR_LINES = 16        # variables listed by repr before "... N more"


@dataclass(frozen=True)
class Variable:
    """One recorded workspace variable."""
    name: str
    values: np.ndarray             # N x W
    time: np.ndarray | None        # its N sample times; None when the result does not say them
    columns: tuple                 # W names, unique
    units: tuple                   # W units ("" for none)
    save_format: str
    block: str | None = None       # the recording block (the structures' blockName)
    signals: tuple = field(default=(), repr=False)   # the ``columns`` entries it records (dicts)

    @property
    def width(self) -> int:
        return int(self.values.shape[1])


def _missing(package: str, extra: str, what: str) -> SimulationError:
    return SimulationError("missing_dependency", f"{what} needs {package}, which is not installed: pip install "
                           f"'nflow-compat[{extra}]' (or: pip install {package})")


def pandas():
    try:
        import pandas
    except ImportError:
        raise _missing("pandas", "notebook", "a result as a DataFrame") from None
    return pandas


_BOM = b"\xef\xbb\xbf"


def load_json(data, error=SimulationError):
    """JSON text or bytes of a result (after a UTF-8 BOM, if any); the NaN / Infinity tokens
    of a result written with ``allow_nan`` too. Not JSON: ``error("bad_result")``."""
    if isinstance(data, str):
        data = data.removeprefix("\ufeff")
    elif isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data).removeprefix(_BOM)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            return json.loads(data)
        except (ValueError, TypeError, RecursionError) as exc:
            raise error("bad_result", f"the input is not valid JSON: {exc}") from None


def check_result(doc, error=SimulationError) -> dict:
    """``doc`` when it is a result; an error result or anything else is ``error("bad_result")``."""
    if not isinstance(doc, dict):
        raise error("bad_result", "a result must be a JSON object")
    if doc.get("status") == "error":
        err = doc.get("error") if isinstance(doc.get("error"), dict) else {}
        raise error("bad_result", f"the file holds an error, not a result: {err.get('code', '?')}: "
                    f"{err.get('message', '')}")
    if not isinstance(doc.get("time"), (list, np.ndarray)):
        raise error("bad_result", "not a simulation result: it has no 'time' array")
    return doc


def matrix(value) -> np.ndarray:
    """An N x W array from a recorded matrix: numpy (a run's) or JSON lists (a result file,
    null read as NaN), a complex one's ``{"real", "imag"}`` lanes joined."""
    if isinstance(value, dict) and "real" in value:
        out = matrix(value["real"]) + 1j * matrix(value.get("imag", 0.0))
        return out
    if isinstance(value, np.ndarray):
        arr = value
    else:
        try:
            arr = np.array(value)
        except (TypeError, ValueError):
            arr = np.array(value, dtype=object)
        if arr.dtype == object:
            arr = np.array(nan_for_null(value), dtype=float)
    if arr.ndim == 0:
        arr = arr.reshape(1, 1)
    elif arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    return arr


def nan_for_null(value):
    if value is None:
        return math.nan
    if isinstance(value, list):
        return [nan_for_null(v) for v in value]
    return value


def _unique(names: list) -> tuple:
    """``names`` with repeats told apart: the second ``s`` is ``s (2)``."""
    seen: dict = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return tuple(out)


def column_names(name: str, width: int, signals) -> tuple:
    """(column names, units) of a recorder of ``width`` columns whose ``columns`` entry is
    ``signals``: each signal's name (``name[k]`` within a wider one), or, when the signals
    do not account for the columns (a result without ``columns``), the recorder's name
    (``name[k]``)."""
    if signals and sum(int(s.get("width", 0)) for s in signals) == width:
        names, units = [], []
        for s in signals:
            w = int(s["width"])
            label = str(s.get("name", ""))
            names += [label] if w == 1 else [f"{label}[{k + 1}]" for k in range(w)]
            units += [str(s.get("unit") or "")] * w
        return _unique(names), tuple(units)
    return ((name,) if width == 1 else tuple(f"{name}[{k + 1}]" for k in range(width))), ("",) * width


def _variable(name: str, value, grid: np.ndarray, signals) -> Variable:
    time, block = None, None
    if isinstance(value, dict) and "signals" in value:
        values = matrix(value["signals"].get("values", []))
        recorded = value.get("time")
        fmt = "Structure With Time" if recorded is not None and len(recorded) else "Structure"
        if fmt == "Structure With Time":
            time = np.asarray(nan_for_null(recorded) if isinstance(recorded, list) else recorded, dtype=float)
        block = value.get("blockName")
    else:
        values, fmt = matrix(value), "Array"
    if time is None and values.shape[0] == grid.size:
        time = grid
    columns, units = column_names(name, values.shape[1], signals)
    return Variable(name, values, time, columns, units, fmt, block, tuple(signals or ()))


class Result:
    """What one run recorded (``nflow_compat.run``), for Python users.

    Parameters
    ----------
    raw : dict
        A result as ``simulate`` returns it, as the engine makes it (numpy arrays) or as
        a result JSON file holds it (``Result.from_json``).

    Attributes
    ----------
    time : numpy.ndarray
        The result's time grid (``t_k = k * sampleTime``).
    workspace : dict
        VariableName -> its N x W values (numpy), whatever its SaveFormat.
    variables : dict
        VariableName -> ``Variable``: values, its own sample times (None when not known),
        column names and units, SaveFormat.
    columns : dict
        VariableName -> the names of its columns (the signals it records: the blocks and
        ports writing them).
    units : dict
        VariableName -> the unit of each column ("" for none).
    scopes : dict
        What scope, xyScope and display blocks recorded, by block id (as in the result).
    warnings : list of str
    stats : dict
        steps, events, solver, wall_s.
    event_list : list of dict
        The events as the result lists them (``events`` is the same as a DataFrame).
    raw : dict
        The result itself.

    Examples
    --------
    >>> import nflow_compat as nc
    >>> d = {"blocks": [{"id": "s", "type": "sine", "params": {"Frequency": 0.5}},
    ...                 {"id": "g", "type": "gain", "params": {"Gain": 2}},
    ...                 {"id": "w", "type": "toWorkspace", "params": {"VariableName": "y", "SaveFormat": "Array"}}],
    ...      "connections": [{"from": "s", "to": "g"}, {"from": "g", "to": "w"}],
    ...      "sampleTime": 0.5, "duration": 2.0}
    >>> result = nc.run(d)
    >>> result.columns["y"]
    ('g',)
    >>> result.workspace["y"].shape
    (5, 1)
    >>> frame = result.to_pandas()
    >>> list(frame.columns), frame.index.name
    (['y'], 'time')
    """

    def __init__(self, raw: dict):
        self.raw = check_result(raw)
        self.time = np.asarray(raw["time"], dtype=float).reshape(-1)
        named = (raw.get("columns") or {}).get("workspace") or {}
        self.variables = {str(name): _variable(str(name), value, self.time, named.get(name))
                          for name, value in (raw.get("workspace") or {}).items()}
        self.workspace = {name: v.values for name, v in self.variables.items()}
        self.columns = {name: v.columns for name, v in self.variables.items()}
        self.units = {name: v.units for name, v in self.variables.items()}
        self.scopes = raw.get("scopes") or {}
        self.warnings = list(raw.get("warnings") or [])
        self.stats = dict(raw.get("stats") or {})
        self.event_list = list(raw.get("events") or [])

    @classmethod
    def from_json(cls, text) -> Result:
        """A Result from a result's JSON text (``simulate_json``, ``nflow-sim run``; NaN and
        Infinity tokens of ``--allow-nan`` accepted)."""
        return cls(check_result(load_json(text)))

    def __getitem__(self, name: str) -> np.ndarray:
        return self.workspace[name]

    def __contains__(self, name) -> bool:
        return name in self.workspace

    def __iter__(self):
        return iter(self.workspace)

    def __len__(self) -> int:
        return len(self.workspace)

    # ------------------------------------------------------------------ pandas / xarray

    def on_grid(self) -> bool:
        """Whether every variable was recorded at every grid point (one time index for all)."""
        return all(v.time is not None and v.time.shape == self.time.shape and np.array_equal(v.time, self.time)
                   for v in self.variables.values())

    def to_pandas(self, name: str | None = None):
        """The recorded variables as pandas DataFrames indexed by time.

        Parameters
        ----------
        name : str, optional
            One variable: its DataFrame, a column per signal element named as in
            ``columns[name]``. Without it, every variable: when all of them were recorded
            on the result's grid, one DataFrame, its columns the variable names when
            every variable is one column wide, else a two-level MultiIndex
            ``(variable, column)``; when their times differ (Decimation, MaxDataPoints),
            a dict of one DataFrame per variable.

        Returns
        -------
        pandas.DataFrame or dict of pandas.DataFrame
            The index is named ``time``; a variable whose sample times the result does
            not say (a decimated Array) is indexed by sample number (``sample``, from 1).

        Examples
        --------
        >>> import nflow_compat as nc
        >>> d = {"blocks": [{"id": "c", "type": "constant", "params": {"Value": [1, 2]}},
        ...                 {"id": "w", "type": "toWorkspace", "params": {"VariableName": "v"}}],
        ...      "connections": [{"from": "c", "to": "w"}], "sampleTime": 1, "duration": 2}
        >>> frame = nc.run(d).to_pandas("v")
        >>> list(frame.columns), frame.index.tolist()
        (['c[1]', 'c[2]'], [0.0, 1.0, 2.0])
        >>> frame["c[2]"].tolist()
        [2.0, 2.0, 2.0]
        """
        pd = pandas()
        if name is not None:
            if name not in self.variables:
                raise KeyError(f"no workspace variable {name!r} (recorded: {', '.join(self.variables) or 'none'})")
            return self._frame(pd, self.variables[name])
        if not self.on_grid():
            return {n: self._frame(pd, v) for n, v in self.variables.items()}
        index = pd.Index(self.time, name="time")
        if all(v.width == 1 for v in self.variables.values()):
            return pd.DataFrame({n: v.values[:, 0] for n, v in self.variables.items()}, index=index)
        keys = pd.MultiIndex.from_tuples([(n, c) for n, v in self.variables.items() for c in v.columns],
                                         names=["variable", "column"])
        data = (np.concatenate([v.values for v in self.variables.values()], axis=1) if self.variables
                else np.zeros((self.time.size, 0)))
        return pd.DataFrame(data, index=index, columns=keys)

    @staticmethod
    def _frame(pd, v: Variable):
        index = (pd.Index(v.time, name="time") if v.time is not None
                 else pd.RangeIndex(1, v.values.shape[0] + 1, name="sample"))
        return pd.DataFrame(v.values, index=index, columns=list(v.columns))

    def to_xarray(self):
        """The recorded variables as an ``xarray.Dataset``: one data variable per workspace
        variable, dimensions ``(time, <name>.column)`` (a variable off the grid has its own
        time dimension, ``<name>.time``, or ``<name>.sample``), the column names and their
        ``unit`` as coordinates, the run's stats as attributes. Needs xarray.

        Examples
        --------
        >>> import nflow_compat as nc
        >>> d = {"blocks": [{"id": "c", "type": "constant", "params": {"Value": 3}},
        ...                 {"id": "w", "type": "toWorkspace", "params": {"VariableName": "y"}}],
        ...      "connections": [{"from": "c", "to": "w"}], "sampleTime": 1, "duration": 2}
        >>> ds = nc.run(d).to_xarray()
        >>> ds["y"].dims, float(ds["y"].sel(time=2.0).item())
        (('time', 'y.column'), 3.0)
        """
        try:
            import xarray
        except ImportError:
            raise _missing("xarray", "notebook", "a result as an xarray Dataset") from None
        data, coords = {}, {"time": ("time", self.time)}
        for name, v in self.variables.items():
            column = f"{name}.column"
            if v.time is not None and np.array_equal(v.time, self.time):
                along = "time"
            elif v.time is not None:
                along = f"{name}.time"
                coords[along] = (along, v.time)
            else:
                along = f"{name}.sample"
                coords[along] = (along, np.arange(1, v.values.shape[0] + 1))
            coords[column] = (column, list(v.columns))
            coords[f"{name}.unit"] = (column, list(v.units))
            data[name] = ((along, column), v.values)
        attrs = {k: v for k, v in self.stats.items() if isinstance(v, (int, float, str))}
        return xarray.Dataset(data, coords=coords, attrs=attrs)

    @property
    def events(self):
        """The events as a pandas DataFrame: ``t``, ``block``, ``kind``, ``from``, ``to``
        (and any further keys an event has, an FMU's ``indicators``), one row each."""
        pd = pandas()
        first = ["t", "block", "kind", "from", "to"]
        extra = sorted({k for e in self.event_list for k in e} - set(first))
        return pd.DataFrame(self.event_list, columns=first + extra)

    def to_dict(self) -> dict:
        """The result as ``simulate`` returns it (plain lists and floats; a copy)."""
        return to_python(copy.deepcopy(self.raw))

    # ------------------------------------------------------------------ summaries

    def _summary(self) -> str:
        st = self.stats
        n = self.time.size
        span = f"t = {self.time[0]:g} .. {self.time[-1]:g} s" if n else "no samples"
        wall = f", {st['wall_s'] * 1e3:.1f} ms" if isinstance(st.get("wall_s"), (int, float)) else ""
        return (f"{self.raw.get('status', 'ok')}: {n} samples, {span}, solver {st.get('solver', '?')}{wall}; "
                f"{len(self.event_list)} event(s), {len(self.warnings)} warning(s)")

    def _variable_lines(self) -> list:
        rows = []
        for v in self.variables.values():
            names = [f"{c} [{u}]" if u else c for c, u in zip(v.columns, v.units)]
            shown = ", ".join(names[:4]) + (f", ... ({len(names)} columns)" if len(names) > 4 else "")
            rows.append((v.name, f"{v.values.shape[0]} x {v.width}", v.save_format, shown))
        return rows

    def _event_counts(self) -> dict:
        counts: dict = {}
        for e in self.event_list:
            key = (str(e.get("block", "?")), str(e.get("kind", "?")))
            counts[key] = counts.get(key, 0) + 1
        return counts

    def __repr__(self) -> str:
        lines = [f"<nflow_compat.Result {self._summary()}>"]
        rows = self._variable_lines()
        if rows:
            lines.append("workspace:")
            width = max(len(r[0]) for r in rows[:MAX_REPR_LINES])
            lines += [f"  {name:<{width}}  {shape:>12}  {fmt:<19}  {cols}" for name, shape, fmt, cols in
                      rows[:MAX_REPR_LINES]]
            if len(rows) > MAX_REPR_LINES:
                lines.append(f"  ... {len(rows) - MAX_REPR_LINES} more")
        if self.scopes:
            shown = ", ".join(list(self.scopes)[:8]) + (" ..." if len(self.scopes) > 8 else "")
            lines.append(f"scopes: {shown}")
        counts = self._event_counts()
        if counts:
            shown = ", ".join(f"{block} {kind} x{n}" for (block, kind), n in list(counts.items())[:6])
            lines.append(f"events: {shown}" + (" ..." if len(counts) > 6 else ""))
        for w in self.warnings[:3]:
            lines.append(f"warning: {w[:200]}")
        if len(self.warnings) > 3:
            lines.append(f"... {len(self.warnings) - 3} more warnings")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = html.escape
        rows = "".join(f"<tr><td><code>{esc(name)}</code></td><td>{esc(shape)}</td><td>{esc(fmt)}</td>"
                       f"<td>{esc(cols)}</td></tr>" for name, shape, fmt, cols in
                       self._variable_lines()[:MAX_REPR_LINES])
        more = len(self.variables) - MAX_REPR_LINES
        if more > 0:
            rows += f"<tr><td colspan='4'>... {more} more</td></tr>"
        events = "".join(f"<li>{esc(block)} {esc(kind)} &times;{n}</li>"
                         for (block, kind), n in list(self._event_counts().items())[:10])
        warnings = "".join(f"<li>{esc(w[:200])}</li>" for w in self.warnings[:5])
        return (f"<div><strong>nflow_compat.Result</strong> {esc(self._summary())}"
                + (f"<table><thead><tr><th>variable</th><th>shape</th><th>format</th><th>columns</th></tr>"
                   f"</thead><tbody>{rows}</tbody></table>" if rows else "")
                + (f"<p>scopes: {esc(', '.join(list(self.scopes)[:8]))}</p>" if self.scopes else "")
                + (f"<p>events:</p><ul>{events}</ul>" if events else "")
                + (f"<p>warnings:</p><ul>{warnings}</ul>" if warnings else "") + "</div>")
