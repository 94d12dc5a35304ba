"""Draw a simulation result: every recorded series against time, events as vertical lines.

``nflow-sim plot RESULT.json -o out.png`` (or ``render(result, "out.png")`` from Python):

* one panel per ``workspace`` variable (any SaveFormat), each signal column a line;
* one panel per ``scopes`` entry: a scope's columns, an xy/xyz scope's x, y (z) against
  time, a display's held value as a marker at the time it was sampled;
* every result event as a vertical line on each time panel, labelled ``block:from->to``.

``Structure With Time`` carries its own sample times. ``Array`` and ``Structure`` do not: when
their row count matches the result's time grid they are drawn against it, otherwise
(``Decimation``/``MaxDataPoints`` kept only some samples, which the result does not say)
against the sample number, in a panel of their own.

matplotlib is the optional extra ``plot``; it is imported here, on first use, through its
object-oriented API (no pyplot, no global backend switch), so the rest of the package never
needs it. Without it, a ``PlotError`` (code ``plot_unavailable``) says how to install it.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
import orjson

from .errors import NFlowError

MAX_PANELS = 200            # a figure taller than this is not readable (nor renderable)
MAX_EVENT_LABELS = 40       # more events are still drawn, only the first ones labelled
MAX_LEGEND_ENTRIES = 12


class PlotError(NFlowError):
    """The result cannot be drawn (not a result, nothing to draw on, matplotlib missing)."""

    kind = "plot"


@dataclass
class Panel:
    title: str
    xlabel: str = "time (s)"
    on_time: bool = True                                   # x is time: events are drawn
    lines: list = field(default_factory=list)              # (label, x, y)
    markers: list = field(default_factory=list)            # (label, x, y)


# ----------------------------------------------------------------------------- reading

def load_json(data):
    """JSON text or bytes; NaN/Infinity tokens (a result written with ``--allow-nan``) too."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            return json.loads(data)
        except (ValueError, TypeError, RecursionError) as exc:
            raise PlotError("bad_result", f"the input is not valid JSON: {exc}") from None


def is_diagram(doc) -> bool:
    """A diagram (blocks, no status) rather than a result."""
    return isinstance(doc, dict) and "blocks" in doc and "status" not in doc


def load_result(data) -> dict:
    """A result from JSON text or bytes."""
    return check_result(load_json(data))


def check_result(doc) -> dict:
    if not isinstance(doc, dict):
        raise PlotError("bad_result", "a result must be a JSON object")
    if doc.get("status") == "error":
        err = doc.get("error") if isinstance(doc.get("error"), dict) else {}
        raise PlotError("bad_result", f"the file holds an error, not a result: {err.get('code', '?')}: "
                        f"{err.get('message', '')}")
    if not isinstance(doc.get("time"), list):
        raise PlotError("bad_result", "not a simulation result: it has no 'time' array")
    return doc


def _floats(values) -> np.ndarray | None:
    """A float array from JSON numbers (null -> NaN; +-inf -> NaN, which draws a gap)."""
    try:
        arr = np.array(values, dtype=float)
    except (TypeError, ValueError):
        try:
            arr = np.array(_nulls_to_nan(values), dtype=float)
        except (TypeError, ValueError):
            return None
    arr[~np.isfinite(arr)] = np.nan
    return arr


def _nulls_to_nan(values):
    if values is None:
        return math.nan
    if isinstance(values, list):
        return [_nulls_to_nan(v) for v in values]
    return values


def _matrix(values) -> np.ndarray | None:
    """N x W from rows (or a flat list, one column)."""
    arr = _floats(values)
    if arr is None:
        return None
    if arr.ndim == 1:
        return arr.reshape(-1, 1)
    if arr.ndim == 2:
        return arr
    return None


# ----------------------------------------------------------------------------- panels

def _columns(panel: Panel, name: str, x: np.ndarray, data: np.ndarray):
    width = data.shape[1]
    for j in range(width):
        panel.lines.append((name if width == 1 else f"{name}[{j + 1}]", x, data[:, j]))


def _workspace_panel(name: str, value, grid: np.ndarray) -> Panel | None:
    times = None
    if isinstance(value, dict):
        signals = value.get("signals")
        rows = signals.get("values") if isinstance(signals, dict) else None
        if isinstance(value.get("time"), list) and value["time"]:
            times = _floats(value["time"])
        fmt = "Structure With Time" if times is not None else "Structure"
    else:
        rows, fmt = value, "Array"
    data = _matrix(rows)
    if data is None:
        return None
    n = data.shape[0]
    if times is not None and times.ndim == 1 and times.size == n:
        return _filled(Panel(f"{name}  ({fmt})"), name, times, data)
    if n == grid.size:
        return _filled(Panel(f"{name}  ({fmt})"), name, grid, data)
    panel = Panel(f"{name}  ({fmt}: {n} of {grid.size} samples kept, times not recorded)", xlabel="sample",
                  on_time=False)
    return _filled(panel, name, np.arange(1, n + 1, dtype=float), data)


def _filled(panel: Panel, name: str, x: np.ndarray, data: np.ndarray) -> Panel:
    _columns(panel, name, x, data)
    return panel


def _scope_panel(sid: str, value) -> Panel | None:
    if not isinstance(value, dict):
        return None
    kind = value.get("type", "scope")
    panel = Panel(f"{sid}  ({kind})")
    if kind == "display":
        t, v = value.get("time"), _floats(value.get("value"))
        if isinstance(t, (int, float)) and v is not None:
            label = value.get("label") or sid
            for j, y in enumerate(np.atleast_1d(v)):
                panel.markers.append((label if np.size(v) == 1 else f"{label}[{j + 1}]", float(t), float(y)))
        return panel if panel.markers else None
    times = _floats(value.get("time")) if isinstance(value.get("time"), list) else None
    if times is None or times.ndim != 1:
        return None
    if "values" in value:
        data = _matrix(value["values"])
        if data is not None and data.shape[0] == times.size:
            _columns(panel, sid, times, data)
    for key, series in value.items():           # xyScope / xyzScope axes, and any other series
        if key in ("type", "time", "values", "label") or not isinstance(series, list):
            continue
        data = _matrix(series)
        if data is not None and data.shape[0] == times.size:
            _columns(panel, f"{sid}.{key}", times, data)
    return panel if panel.lines else None


def panels(result: dict) -> list:
    """Everything drawable in ``result``, one Panel per variable / scope."""
    grid = _floats(result.get("time") or [])
    if grid is None or grid.ndim != 1:
        raise PlotError("bad_result", "the result's 'time' is not a list of numbers")
    out = []
    workspace = result.get("workspace") if isinstance(result.get("workspace"), dict) else {}
    for name, value in workspace.items():
        panel = _workspace_panel(str(name), value, grid)
        if panel is not None:
            out.append(panel)
    scopes = result.get("scopes") if isinstance(result.get("scopes"), dict) else {}
    for sid, value in scopes.items():
        panel = _scope_panel(str(sid), value)
        if panel is not None:
            out.append(panel)
    return out


def events(result: dict) -> list:
    """(t, label, block) of every event with a finite time."""
    out = []
    for ev in result.get("events") or []:
        if not isinstance(ev, dict) or not isinstance(ev.get("t"), (int, float)) or not math.isfinite(ev["t"]):
            continue
        block = str(ev.get("block", "?"))
        # a mode change names its modes; an FMU's event only its kind (state_event, ...)
        what = f"{ev.get('from', '?')}->{ev.get('to', '?')}" if "from" in ev or "to" in ev else ev.get("kind", "?")
        out.append((float(ev["t"]), f"{block}:{what}", block))
    return out


# ----------------------------------------------------------------------------- drawing

def _matplotlib():
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotError("plot_unavailable", "plotting needs matplotlib, which is not installed; install it "
                        "with: pip install 'nflow-compat[plot]' (or: pip install matplotlib)") from None
    return Figure


def render(result: dict, out_path, *, title: str | None = None, dpi: int = 100) -> dict:
    """Draw ``result`` (a result dict) into ``out_path`` (format from its extension: .png,
    .svg, .pdf, ...). Returns counts: panels, series, events."""
    result = check_result(result)
    drawn = panels(result)
    evs = events(result)
    if len(drawn) > MAX_PANELS:
        raise PlotError("too_many_series", f"{len(drawn)} variables and scopes to draw (limit {MAX_PANELS})")
    Figure = _matplotlib()
    n = max(1, len(drawn))
    fig = Figure(figsize=(11, 1.2 + 2.6 * n), layout="constrained")
    axes = fig.subplots(n, 1, squeeze=False)[:, 0]
    colors = {}
    palette = ["#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
    for t, label, block in evs:
        colors.setdefault(block, palette[len(colors) % len(palette)])
    if not drawn:
        axes[0].text(0.5, 0.5, "nothing recorded: the result has no toWorkspace or scope data",
                     ha="center", va="center", transform=axes[0].transAxes)
        axes[0].set_xlabel("time (s)")
        drawn_panels = [(axes[0], Panel("", on_time=True))]
    else:
        drawn_panels = list(zip(axes, drawn))
    grid = _floats(result["time"])
    span = (float(grid[0]), float(grid[-1])) if grid is not None and grid.size > 1 and grid[-1] > grid[0] else None
    series = 0
    for ax, panel in drawn_panels:
        for label, x, y in panel.lines:
            ax.plot(x, y, label=label, linewidth=1.2, marker="." if x.size <= 60 else None, markersize=3)
            series += 1
        for label, x, y in panel.markers:
            ax.plot([x], [y], "o", label=label)
            series += 1
        ax.set_title(panel.title, fontsize=10, loc="left")
        ax.set_xlabel(panel.xlabel)
        ax.grid(True, alpha=0.3)
        if 0 < len(panel.lines) + len(panel.markers) <= MAX_LEGEND_ENTRIES:
            ax.legend(fontsize=8, loc="best")
        if panel.on_time:
            if span:                                   # every time panel over the whole run
                pad = 0.02 * (span[1] - span[0])
                ax.set_xlim(span[0] - pad, span[1] + pad)
            for t, label, block in evs:
                ax.axvline(t, color=colors[block], linestyle="--", linewidth=0.8, alpha=0.8)
    time_axes = [ax for ax, panel in drawn_panels if panel.on_time]
    if time_axes and evs:
        top = time_axes[0]
        for t, label, block in evs[:MAX_EVENT_LABELS]:
            top.text(t, 0.98, " " + label, rotation=90, va="top", ha="right", fontsize=7, color=colors[block],
                     transform=top.get_xaxis_transform(), clip_on=True)
    stats = result.get("stats") if isinstance(result.get("stats"), dict) else {}
    heading = title or (f"{len(drawn)} variable(s)/scope(s), {len(evs)} event(s)"
                        + (f", solver {stats['solver']}" if stats.get("solver") else "")
                        + (f" (first {MAX_EVENT_LABELS} labelled)" if len(evs) > MAX_EVENT_LABELS else ""))
    fig.suptitle(heading, fontsize=11)
    try:
        fig.savefig(out_path, dpi=dpi)
    except (OSError, ValueError) as exc:
        raise PlotError("plot_output", f"cannot write {out_path}: {exc}") from None
    return {"panels": len(drawn), "series": series, "events": len(evs)}
