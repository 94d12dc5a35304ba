"""nflow's Sinks library: recorders and the stop block (all act in AFTER_STEP), and
labelSink, which only names its input for labelSource (goto/from)."""
from __future__ import annotations

import math
from collections import deque

import numpy as np

from ..results import recorded_matrix, workspace_value
from . import Phases, block, no_outputs
from .discrete import scalar_reader

NAN = math.nan
_INT_RANGE = 2.0 ** 31


def _as_int(value: float) -> int | None:
    """C++ static_cast<int>: truncation toward zero; None where the cast is undefined
    (NaN, inf, out of range), which x86 turns into INT_MIN."""
    if math.isfinite(value) and -_INT_RANGE < value < _INT_RANGE:
        return int(value)
    return None


def _decimation(value: float) -> int:
    """Keep one sample in k; k is truncated and anything below 1 means every sample."""
    k = _as_int(value)
    return k if k is not None and k >= 1 else 1


def _window(max_points: float):
    """MaxDataPoints: a container keeping the last N kept samples (N truncated);
    inf, NaN, 0 or negative (anything not >= 1) keep everything."""
    if max_points >= 1.0 and max_points < 2.0 ** 62:
        n = int(max_points)
        return lambda: deque(maxlen=n)
    return list


def _matrix(samples, width: int) -> np.ndarray:
    if not samples:
        return np.zeros((0, width))
    return np.ascontiguousarray(np.array(samples, dtype=float).reshape(len(samples), -1)[:, :width])


@block("toWorkspace", widths=no_outputs, feedthrough=False, complex=(True, 0), reads_after_step=True)
def to_workspace(io):
    """Records (t, input) after every step kept by Decimation (steps 0, k, 2k, ...), keeps
    the last MaxDataPoints of those, and returns them as ``workspace[VariableName]`` in
    SaveFormat. The width is fixed from the input at compile time (1 when unconnected);
    an unconnected input records NaN. A complex input is recorded with its imaginary
    lane (JSON: ``{"real": N x W, "imag": N x W}`` in place of the matrix); an int64 /
    uint64 input as exact integers."""
    p = io.params
    width = io.width
    decimation = _decimation(p["Decimation"])
    make = _window(p["MaxDataPoints"])
    ctx, S, slot = io.ctx, io.S, io.ins[0]
    nan_row = NAN if width == 1 else np.full(width, NAN)
    times = values = None
    count = 0

    def init():
        nonlocal times, values, count
        times, values, count = make(), make(), 0

    if slot is None:
        def sample():
            times.append(ctx.t)
            values.append(nan_row)
    else:
        def sample():
            times.append(ctx.t)
            values.append(S[slot])  # signals are replaced, never mutated: no copy needed

    if decimation == 1:
        after_step = sample
    else:
        def after_step():
            nonlocal count
            if count % decimation == 0:
                sample()
            count += 1

    def bulk(step_times, column):
        """What ``len(step_times)`` consecutive after_step calls would record, at once:
        ``step_times`` holds each step's ctx.t and ``column`` the input at each step (a
        1-D float array; None for an unconnected input), for a width-1 input. Decimation
        and MaxDataPoints apply as per step (the step count carries over)."""
        nonlocal count
        n = len(step_times)
        first = (-count) % decimation if decimation > 1 else 0
        if decimation > 1:
            count += n
        kept = range(first, n, decimation)
        cap = getattr(times, "maxlen", None)
        if cap is not None and len(kept) > cap:
            kept = kept[len(kept) - cap:]
        sel = slice(kept.start, kept.stop, kept.step) if len(kept) else slice(0, 0)
        times.extend(np.asarray(step_times, dtype=float)[sel].tolist())
        if column is None:
            values.extend([nan_row] * len(kept))
        else:
            values.extend(np.asarray(column, dtype=float)[sel].tolist())

    if width == 1:
        after_step.bulk = bulk
        bulk.slot = slot

    def result():
        data = recorded_matrix(list(values), width)
        return "workspace", p["VariableName"], workspace_value(p["SaveFormat"], io.id, np.array(list(times)), data)
    return Phases(init=init, after_step=after_step, result=result)


@block("stopSimulation", widths=no_outputs, feedthrough=False, reads_after_step=True)
def stop_simulation(io):
    """Ends the run after the step in which any input element is nonzero (that step is
    still recorded). C++ ``v != 0.0`` is true for NaN, so NaN stops too. Unconnected: never."""
    slot, S, ctx = io.ins[0], io.S, io.ctx
    if slot is None:
        return Phases()
    if io.in_widths[0] <= 1:
        def after_step():
            if S[slot] != 0.0:
                ctx.stop = True
    else:
        def after_step():
            if (S[slot] != 0.0).any():
                ctx.stop = True
    return Phases(after_step=after_step)


@block("terminator", widths=no_outputs, feedthrough=False, complex=(True, 0), reads_after_step=True)
def terminator(io):
    """Swallows its input; nflow's handler does nothing in any phase."""
    return Phases()


@block("scope", widths=no_outputs, feedthrough=False, reads_after_step=True)
def scope(io):
    """One series per input element over all ports in port order (an unconnected port
    is one NaN series). nflow keeps only the series; the result also carries the sample
    times, under ``scopes[<id>]``."""
    ctx, S = io.ctx, io.S
    ports = [(slot, max(1, w)) for slot, w in zip(io.declared_ins, io.in_widths)]
    width = sum(w for _, w in ports) or 1
    times, rows = [], []

    def init():
        times.clear()
        rows.clear()

    def after_step():
        row = []
        for slot, w in ports:
            if slot is None:
                row.extend([NAN] * w)
            elif w == 1:
                row.append(S[slot])
            else:
                row.extend(S[slot].tolist())
        times.append(ctx.t)
        rows.append(row)

    def result():
        return "scopes", io.id, {"type": "scope", "time": np.array(times), "values": _matrix(rows, width)}
    return Phases(init=init, after_step=after_step, result=result)


@block("display", widths=no_outputs, feedthrough=False, reads_after_step=True)
def display(io):
    """Keeps the latest sampled input. nflow counts the step BEFORE testing, so with
    Decimation k it samples steps k-1, 2k-1, ... (0-based); every step when k <= 1. The
    value is NaN until the first sample and for an unconnected input."""
    p = io.params
    decimation = _decimation(p["Decimation"])
    ctx, S, slot = io.ctx, io.S, io.ins[0]
    value, when, count = NAN, None, 0

    def init():
        nonlocal value, when, count
        value, when, count = NAN, None, 0

    def after_step():
        nonlocal value, when, count
        count += 1
        if count % decimation == 0:
            value = NAN if slot is None else S[slot]
            when = ctx.t

    def result():
        return "scopes", io.id, {"type": "display", "label": p["Label"], "time": when,
                                 "value": np.atleast_1d(np.asarray(value, dtype=float)).copy()}
    return Phases(init=init, after_step=after_step, result=result)


# ----------------------------------------------------------------------------- XY / XYZ scopes

def _xy_recorder(io, kind: str, axes: str):
    ctx = io.ctx
    readers = [scalar_reader(io, port, NAN) for port in range(len(axes))]   # element 0; NaN unconnected
    times = []
    series = [[] for _ in axes]

    def init():
        times.clear()
        for s in series:
            s.clear()

    def after_step():
        times.append(ctx.t)
        for s, read in zip(series, readers):
            s.append(read())

    def result():
        out = {"type": kind, "time": np.array(times)}
        for axis, s in zip(axes, series):
            out[axis] = np.array(s, dtype=float)
        return "scopes", io.id, out
    return Phases(init=init, after_step=after_step, result=result)


@block("xyScope", widths=no_outputs, feedthrough=False, reads_after_step=True)
def xy_scope(io):
    """Records input 1 against input 2 after every step: element 0 of each (NaN for an
    unconnected input), as ``scopes[<id>] = {type, time, x, y}``. nflow keeps only the x
    and y series; the time is added here, as for scope. The axis limits and size are
    editor settings."""
    return _xy_recorder(io, "xyScope", "xy")


@block("xyzScope", widths=no_outputs, feedthrough=False, reads_after_step=True)
def xyz_scope(io):
    """xyScope with a third input: ``scopes[<id>] = {type, time, x, y, z}``."""
    return _xy_recorder(io, "xyzScope", "xyz")


# ----------------------------------------------------------------------------- goto / from

class LabelRoutes:
    """The plan's labelSink blocks by GotoTag: tag -> (block id, input slot).
    With two sinks of one tag the later one (declaration order) is used."""

    __slots__ = ("ctx", "sinks", "duplicates")

    def __init__(self, ctx):
        self.ctx = ctx
        self.sinks = {}
        self.duplicates = {}


def label_routes(io) -> LabelRoutes:
    return io.shared("labelRoutes", LabelRoutes)


@block("labelSink", widths=no_outputs, feedthrough=False, complex=(True, 0))
def label_sink(io):
    """Names its input GotoTag for the labelSource blocks with the same tag; computes
    nothing (nflow's handler is empty: the engine indexes the sinks by tag)."""
    routes = label_routes(io)
    tag = io.params["GotoTag"]
    slot = io.ins[0] if io.ins else None
    if tag in routes.sinks:
        routes.duplicates.setdefault(tag, [routes.sinks[tag][0]]).append(io.id)
    routes.sinks[tag] = (io.id, slot)
    ctx = io.ctx

    def init():
        ids = routes.duplicates.get(tag)
        if ids and ids[-1] == io.id:
            ctx.warnings.append(f"labelSink blocks {', '.join(repr(i) for i in ids)} share GotoTag {tag!r}; "
                                f"labelSource blocks read the last one, {io.id!r}")
    return Phases(init=init)


# ----------------------------------------------------------------------------- fileSink

def _csv_field(text: str) -> str:
    """A header cell: as is, or double-quoted (quotes doubled) when it holds a comma, a
    quote or a line break, so the file stays one row per line."""
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _real_row(value, width: int) -> list:
    """The recorded input as ``width`` floats (the real part, as nflow's sigAt reads)."""
    arr = np.real(np.asarray(value)).astype(float).reshape(-1)
    if arr.size >= width:
        return arr[:width].tolist()
    return arr.tolist() + [0.0] * (width - arr.size)


@block("fileSink", widths=no_outputs, feedthrough=False, reads_after_step=True)
def file_sink(io):
    """nflow's fileSink: a CSV file with the header 't,<id>' ('t,<id>_0,<id>_1,...' for a
    vector input) and one row per major step: the time, then the input ('%.15g'; an
    unconnected input reads 0). The file name is FileName, else Filename, else
    'output.csv'; it must lie inside the base directory. nflow appends each row as it
    goes; here the rows are kept and the file is written (to a temporary file, then
    renamed over the target) only once the run has succeeded, so a failed run never
    leaves a partial file that looks complete. Without a base directory (the Python API's
    default) nothing is written and a warning says so. The result lists the file under
    ``files[<id>]``: its path relative to the base, columns, row count, written."""
    from .source import BASE_DIR_KEY, confined_path

    p = io.params
    param = "FileName" if p.get("FileName") else ("Filename" if p.get("Filename") else "FileName")
    name = p.get("FileName") or p.get("Filename") or "output.csv"
    ctx, S, slot = io.ctx, io.S, io.ins[0] if io.ins else None
    base = ctx.shared.get(BASE_DIR_KEY)
    where = io.block.where(param)
    target = confined_path(base, name, where, what="output file") if base is not None else None
    width = max(1, io.in_widths[0]) if io.in_widths and io.in_widths[0] else 1
    columns = ["t", io.id] if width == 1 else ["t"] + [f"{io.id}_{k}" for k in range(width)]
    times, values = [], []      # as toWorkspace keeps them: a float or a (replaced) array per step
    note = None if base is not None else (
        f"fileSink {io.id!r}: {name!r} not written: file access is off (pass base_dir=; the CLI uses the "
        "diagram's directory)")

    def init():
        times.clear()
        values.clear()
        if note:
            ctx.warnings.append(note)

    if slot is None:
        zero = 0.0 if width == 1 else np.zeros(width)

        def after_step():
            times.append(ctx.t)
            values.append(zero)
    else:
        def after_step():
            times.append(ctx.t)
            values.append(S[slot])

    def result():
        entry = {"file": name, "columns": columns, "rows": len(times), "written": False}
        if target is None:
            return "files", io.id, entry
        final = confined_path(base, name, where, what="output file")   # again: nothing moved meanwhile
        entry["file"] = final.relative_to(_confined_base(base)).as_posix()
        try:
            _write_csv(final, columns, times, values, width)
        except OSError as exc:
            ctx.warnings.append(f"fileSink {io.id!r}: cannot write {name!r}: {exc.strerror or exc}; not written")
            return "files", io.id, entry
        entry["written"] = True
        return "files", io.id, entry
    return Phases(init=init, after_step=after_step, result=result)


def _confined_base(base):
    from pathlib import Path
    return Path(base).resolve(strict=True)


def _csv_lines(times: list, values: list, width: int):
    """The data rows, '%.15g' as nflow's fprintf, a block of rows at a time."""
    number = "%.15g".__mod__
    step = 8192
    for start in range(0, len(times), step):
        chunk = values[start:start + step]
        try:
            block = np.real(np.array(chunk)).astype(float).reshape(len(chunk), width)
        except (TypeError, ValueError):    # mixed or narrower values: element by element, 0 where missing
            block = np.array([_real_row(v, width) for v in chunk], dtype=float).reshape(len(chunk), width)
        cols = [map(number, times[start:start + step])] + [map(number, block[:, j].tolist()) for j in range(width)]
        yield "\n".join(map(",".join, zip(*cols))) + "\n"


def _write_csv(path, columns: list, times: list, values: list, width: int) -> None:
    """The whole file: written to a temporary file next to ``path``, then renamed over it
    (an atomic replace), so ``path`` is either the old file or the complete new one."""
    import os
    import secrets

    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    # O_EXCL: never reuse or follow an existing entry; mode 0666 less the umask, like fopen
    nofollow = os.O_NOFOLLOW if hasattr(os, "O_NOFOLLOW") else 0
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(",".join(_csv_field(c) for c in columns) + "\n")
            for chunk in _csv_lines(times, values, width):
                fh.write(chunk)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
