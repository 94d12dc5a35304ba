"""nflow's Sinks library: recorders and the stop block (all act in AFTER_STEP), and
labelSink, which only names its input for labelSource (goto/from)."""
from __future__ import annotations

import math

import numpy as np

from ..files import BASE_DIR_KEY, confined_path, confined_base, write_csv
from ..results import Recording, workspace_value
from . import BulkRecord, Phases, block, fit, no_outputs
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


def _window(max_points: float) -> int | None:
    """MaxDataPoints: keep the last N kept samples (N truncated); inf, NaN, 0 or negative
    (anything not >= 1) keep everything (None)."""
    if max_points >= 1.0 and max_points < 2.0 ** 62:
        return int(max_points)
    return None


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
    ctx, S, slot = io.ctx, io.S, io.ins[0]
    rec = Recording(-(-ctx.n_samples // decimation), width, _window(p["MaxDataPoints"]))
    nan_row = fit(NAN, width)
    count = 0

    def init():
        nonlocal count
        rec.start()
        count = 0

    sample = rec.sampler(ctx, (lambda: nan_row) if slot is None else (lambda: S[slot]))
    if decimation == 1:
        after_step = sample
    else:
        def after_step():
            nonlocal count
            if count % decimation == 0:
                sample()
            count += 1

    def bulk(step_times, column):
        """``BulkRecord.record`` for a width-1 input: Decimation and MaxDataPoints apply as
        per step (the step count carries over)."""
        nonlocal count
        n = len(step_times)
        first = (-count) % decimation if decimation > 1 else 0
        if decimation > 1:
            count += n
        kept = np.asarray(step_times, dtype=float)[first::decimation]
        column = np.full(n, NAN) if column is None else np.asarray(column, dtype=float)
        rec.extend(kept, column[first::decimation].reshape(-1, 1))

    def result():
        times, data = rec.arrays()
        return "workspace", p["VariableName"], workspace_value(p["SaveFormat"], io.id, times, data)
    return Phases(init=init, after_step=after_step, result=result, recorded=rec.size,
                  bulk=BulkRecord(bulk, slot) if width == 1 else None, records=("workspace", p["VariableName"]))


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
    rec = Recording(ctx.n_samples, width, dtype=float)

    def row():
        out = []
        for slot, w in ports:
            if slot is None:
                out.extend([NAN] * w)
            elif w == 1:
                out.append(S[slot])
            else:
                out.extend(S[slot].tolist())
        return out

    def result():
        times, values = rec.arrays()
        return "scopes", io.id, {"type": "scope", "time": times, "values": values}
    return Phases(init=rec.start, after_step=rec.sampler(ctx, row), result=result, recorded=rec.size,
                  records=("scopes", io.id))


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
    rec = Recording(ctx.n_samples, len(axes), dtype=float)

    def result():
        times, values = rec.arrays()
        out = {"type": kind, "time": times}
        for j, axis in enumerate(axes):
            out[axis] = np.ascontiguousarray(values[:, j])
        return "scopes", io.id, out
    return Phases(init=rec.start, after_step=rec.sampler(ctx, lambda: [read() for read in readers]),
                  result=result, recorded=rec.size)


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

@block("labelSink", widths=no_outputs, feedthrough=False, complex=(True, 0), model_port=lambda block: "output")
def label_sink(io):
    """Names its input GotoTag for the labelSource blocks with the same tag; computes
    nothing (nflow's handler is empty: the parser wires each labelSource to what enters
    the sink, ``flatten.route_labels``)."""
    return Phases()


# ----------------------------------------------------------------------------- fileSink

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

    p = io.params
    param = "FileName" if p.get("FileName") else ("Filename" if p.get("Filename") else "FileName")
    name = p.get("FileName") or p.get("Filename") or "output.csv"
    ctx, S, slot = io.ctx, io.S, io.ins[0] if io.ins else None
    base = ctx.shared.get(BASE_DIR_KEY)
    where = io.block.where(param)
    target = confined_path(base, name, where, what="output file") if base is not None else None
    width = max(1, io.in_widths[0]) if io.in_widths and io.in_widths[0] else 1
    columns = ["t", io.id] if width == 1 else ["t"] + [f"{io.id}_{k}" for k in range(width)]
    rec = Recording(ctx.n_samples, width, dtype=float)   # the rows, until the run has succeeded
    note = None if base is not None else (
        f"fileSink {io.id!r}: {name!r} not written: file access is off (pass base_dir=; the CLI uses the "
        "diagram's directory)")

    def init():
        rec.start()
        if note:
            ctx.warnings.append(note)

    zero = fit(0.0, width)

    def result():
        times, values = rec.arrays()
        entry = {"file": name, "columns": columns, "rows": len(times), "written": False}
        if target is None:
            return "files", io.id, entry
        final = confined_path(base, name, where, what="output file")   # again: nothing moved meanwhile
        entry["file"] = final.relative_to(confined_base(base)).as_posix()
        try:
            write_csv(final, columns, times, values)
        except OSError as exc:
            ctx.warnings.append(f"fileSink {io.id!r}: cannot write {name!r}: {exc.strerror or exc}; not written")
            return "files", io.id, entry
        entry["written"] = True
        return "files", io.id, entry
    return Phases(init=init, after_step=rec.sampler(ctx, (lambda: zero) if slot is None else (lambda: S[slot])),
                  result=result, recorded=rec.size)
