"""Draw a simulation result: every recorded signal against time, events as vertical lines.

``nflow-sim plot RESULT.json -o out.png`` (or ``render(result, "out.png")`` from Python):

* one panel per recorded signal: a ``workspace`` variable or a ``scope`` whose columns come
  from several signals (a ``mux`` of a position, a speed and a force) gets one panel per
  signal, each on its own y axis; the columns of one vector signal share a panel. Column
  names come from the blocks feeding the recorder (``channel_names`` of the compiled
  diagram: the source block's id, through a ``mux`` or ``busCreator`` to each of its
  inputs); without the diagram, a variable of at most ``MAX_SPLIT`` columns gets one panel
  per column, named ``name[k]``;
* an xy/xyz scope's x, y (z) against time; a display's held value as a marker at the time
  it was sampled;
* every result event as a vertical line on each time panel, coloured by what happened
  (``block -> mode``), explained once in a legend above the panels.

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

from .api import strip_bom
from .errors import NFlowError
from .extras import install_hint

MAX_PANELS = 200            # a figure taller than this is not readable (nor renderable)
MAX_SPLIT = 8               # without channel names, a variable this narrow gets a panel per column
MAX_EVENT_KINDS = 16        # distinct "block -> mode" entries in the event legend (the rest: "other")
MAX_LEGEND_ENTRIES = 12
PANEL_INCHES = 2.2
# signals that concatenate their inputs: type -> the param naming the parts (None: the inputs' names)
_CONCATENATING = {"mux": None, "busCreator": "MemberNames"}
DPI_RANGE = (10, 1200)      # dots per inch a caller may ask for
MAX_SIDE_PIXELS = 1 << 16   # matplotlib's raster backend refuses a longer side


class PlotError(NFlowError):
    """The result cannot be drawn (not a result, nothing to draw on, matplotlib missing)."""

    kind = "plot"


@dataclass(frozen=True)
class Signal:
    """``width`` consecutive recorded columns that come from one source signal."""
    label: str
    width: int


@dataclass
class Panel:
    title: str
    xlabel: str = "time (s)"
    on_time: bool = True                                   # x is time: events are drawn
    lines: list = field(default_factory=list)              # (label, x, y)
    markers: list = field(default_factory=list)            # (label, x, y)


# ----------------------------------------------------------------------------- reading

def load_json(data):
    """JSON text or bytes (after a UTF-8 BOM, if any); NaN/Infinity tokens (a result
    written with ``--allow-nan``) too."""
    data = strip_bom(data)
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


# ----------------------------------------------------------------------------- channel names

def _width(plan, src) -> int:
    value = plan.initial_signals[plan.slot_of[src]]
    return int(np.size(value))


def _source_signals(plan, src, seen: frozenset) -> list:
    """The Signals making up output ``src`` = (block index, port): one, or one per input
    of a concatenating block (recursively)."""
    index, port = src
    block = plan.diagram.blocks[index]
    width = _width(plan, src)
    label = block.id if block.outputs <= 1 else f"{block.id}.{block.type.output_names[port] or port}"
    kind = block.type.type
    if kind not in _CONCATENATING or index in seen:
        return [Signal(label, width)]
    names = block.params.get(_CONCATENATING[kind]) if _CONCATENATING[kind] else None
    parts = []
    for k, inner in enumerate(plan.sources[index][:block.inputs]):
        if names and k < len(names) and names[k]:
            parts.append(Signal(str(names[k]), 1 if inner is None else _width(plan, inner)))
        elif inner is None:
            parts.append(Signal(f"{block.id}[input {k}, unconnected]", 1))
        else:
            parts += _source_signals(plan, inner, seen | {index})
    return parts if sum(p.width for p in parts) == width else [Signal(label, width)]


def _input_signals(plan, block) -> list:
    """What a recorder's declared inputs carry, in column order (an unconnected input: one
    column of its own)."""
    out = []
    for k, src in enumerate(plan.sources[block.index][:max(1, block.inputs)]):
        out += [Signal(f"input {k} (unconnected)", 1)] if src is None else _source_signals(plan, src, frozenset())
    return out


def channel_names(plan) -> dict:
    """``(section, key)`` -> the Signals of each recorder of a compiled diagram
    (``nflow_compat.compile_plan``): ``("workspace", VariableName)`` for toWorkspace,
    ``("scopes", id)`` for scope blocks."""
    out = {}
    for block in plan.diagram.blocks:
        kind = block.type.type
        if kind == "toWorkspace":
            out[("workspace", block.params["VariableName"])] = _input_signals(plan, block)
        elif kind == "scope":
            out[("scopes", block.id)] = _input_signals(plan, block)
    return out


def _signals_or_columns(name: str, width: int, signals: list | None) -> list:
    """The recorder's Signals when they account for its ``width`` columns; else one per
    column (narrow variables) or one for all."""
    if signals and sum(sig.width for sig in signals) == width:
        return signals
    if width <= MAX_SPLIT:
        return [Signal(name if width == 1 else f"{name}[{j + 1}]", 1) for j in range(width)]
    return [Signal(name, width)]


# ----------------------------------------------------------------------------- panels

def _split(name: str, note: str, x: np.ndarray, data: np.ndarray, signals: list, **panel) -> list:
    """One Panel per Signal, each with that signal's columns, titled ``name: signal  (note)``."""
    out, start = [], 0
    for sig in signals:
        p = Panel(f"{name}  ({note})" if len(signals) == 1 else f"{name}: {sig.label}  ({note})", **panel)
        for j in range(sig.width):
            p.lines.append((sig.label if sig.width == 1 else f"{sig.label}[{j + 1}]", x, data[:, start + j]))
        out.append(p)
        start += sig.width
    return out


def _workspace_panels(name: str, value, grid: np.ndarray, signals: list | None) -> list:
    times = None
    if isinstance(value, dict):
        sigs = value.get("signals")
        rows = sigs.get("values") if isinstance(sigs, dict) else None
        if isinstance(value.get("time"), list) and value["time"]:
            times = _floats(value["time"])
        fmt = "Structure With Time" if times is not None else "Structure"
    else:
        rows, fmt = value, "Array"
    data = _matrix(rows)
    if data is None:
        return []
    n, width = data.shape
    columns = _signals_or_columns(name, width, signals)
    if times is not None and times.ndim == 1 and times.size == n:
        return _split(name, fmt, times, data, columns)
    if n == grid.size:
        return _split(name, fmt, grid, data, columns)
    return _split(name, f"{fmt}: {n} of {grid.size} samples kept, times not recorded",
                  np.arange(1, n + 1, dtype=float), data, columns, xlabel="sample", on_time=False)


def _scope_panels(sid: str, value, signals: list | None) -> list:
    if not isinstance(value, dict):
        return []
    kind = value.get("type", "scope")
    if kind == "display":
        panel = Panel(f"{sid}  ({kind})")
        t, v = value.get("time"), _floats(value.get("value"))
        if isinstance(t, (int, float)) and v is not None:
            label = value.get("label") or sid
            for j, y in enumerate(np.atleast_1d(v)):
                panel.markers.append((label if np.size(v) == 1 else f"{label}[{j + 1}]", float(t), float(y)))
        return [panel] if panel.markers else []
    times = _floats(value.get("time")) if isinstance(value.get("time"), list) else None
    if times is None or times.ndim != 1:
        return []
    out = []
    if "values" in value:
        data = _matrix(value["values"])
        if data is not None and data.shape[0] == times.size:
            out += _split(sid, kind, times, data, _signals_or_columns(sid, data.shape[1], signals))
    axes = Panel(f"{sid}  ({kind})")
    for key, series in value.items():           # xyScope / xyzScope axes, and any other series
        if key in ("type", "time", "values", "label") or not isinstance(series, list):
            continue
        data = _matrix(series)
        if data is not None and data.shape[0] == times.size:
            for j in range(data.shape[1]):
                axes.lines.append((f"{sid}.{key}" if data.shape[1] == 1 else f"{sid}.{key}[{j + 1}]",
                                   times, data[:, j]))
    return out + ([axes] if axes.lines else [])


def panels(result: dict, names: dict | None = None) -> list:
    """Everything drawable in ``result``, as Panels (see the module docstring); ``names``
    from ``channel_names`` names the columns."""
    grid = _floats(result.get("time") or [])
    if grid is None or grid.ndim != 1:
        raise PlotError("bad_result", "the result's 'time' is not a list of numbers")
    names = names or {}
    out = []
    workspace = result.get("workspace") if isinstance(result.get("workspace"), dict) else {}
    for name, value in workspace.items():
        out += _workspace_panels(str(name), value, grid, names.get(("workspace", name)))
    scopes = result.get("scopes") if isinstance(result.get("scopes"), dict) else {}
    for sid, value in scopes.items():
        out += _scope_panels(str(sid), value, names.get(("scopes", sid)))
    return out


def events(result: dict) -> list:
    """(t, block, to) of every event with a finite time: the block and the mode or state it
    went to, which the event legend shows."""
    out = []
    for ev in result.get("events") or []:
        if not isinstance(ev, dict) or not isinstance(ev.get("t"), (int, float)) or not math.isfinite(ev["t"]):
            continue
        # a mode change names the mode it went to; an FMU's event only its kind (state_event, ...)
        out.append((float(ev["t"]), str(ev.get("block", "?")), str(ev.get("to", ev.get("kind", "?")))))
    return out


def _event_kinds(evs: list) -> dict:
    """(block, to) -> event times, in order of first occurrence; past MAX_EVENT_KINDS kinds
    the least frequent are merged into one ("other", "") entry."""
    kinds: dict = {}
    for t, block, to in evs:
        kinds.setdefault((block, to), []).append(t)
    if len(kinds) > MAX_EVENT_KINDS:
        keep = set(sorted(kinds, key=lambda k: -len(kinds[k]))[:MAX_EVENT_KINDS - 1])
        other = sorted(t for k, ts in kinds.items() if k not in keep for t in ts)
        kinds = {k: ts for k, ts in kinds.items() if k in keep}
        kinds[("other", "")] = other
    return kinds


def _event_looks(kinds: dict) -> dict:
    """(block, to) -> (color, line style): a colour per kind, a line style per block."""
    blocks = list(dict.fromkeys(block for block, _ in kinds))
    return {(block, to): (_EVENT_COLORS[i % len(_EVENT_COLORS)],
                          _EVENT_STYLES[blocks.index(block) % len(_EVENT_STYLES)])
            for i, (block, to) in enumerate(kinds)}


# ----------------------------------------------------------------------------- drawing

_EVENT_COLORS = ["#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
                 "#1f77b4", "#7f7f7f"]
_EVENT_STYLES = ["--", ":", "-."]


def _matplotlib():
    try:
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
    except ImportError:
        raise PlotError("plot_unavailable", "plotting needs matplotlib (the 'plot' extra), which is not "
                        f"installed; {install_hint('plot')}") from None
    return Figure, Line2D


def check_dpi(dpi) -> None:
    """``dpi`` within DPI_RANGE (a huge one would allocate gigabytes of pixels)."""
    lo, hi = DPI_RANGE
    if isinstance(dpi, bool) or not isinstance(dpi, (int, float)) or not lo <= dpi <= hi:
        raise PlotError("bad_dpi", f"dpi must be a number from {lo} to {hi}, got {dpi!r}")


def render(result: dict, out_path, *, title: str | None = None, dpi: int = 100, names: dict | None = None) -> dict:
    """Draw ``result`` (a result dict) into ``out_path`` (format from its extension: .png,
    .svg, .pdf, ...); ``names`` (``channel_names`` of the diagram) names the columns.
    Returns counts: panels, series, events."""
    check_dpi(dpi)
    result = check_result(result)
    drawn = panels(result, names)
    evs = events(result)
    if len(drawn) > MAX_PANELS:
        raise PlotError("too_many_series", f"{len(drawn)} panels to draw (limit {MAX_PANELS})")
    Figure, Line2D = _matplotlib()
    n = max(1, len(drawn))
    size = (11, 1.6 + PANEL_INCHES * n)
    if max(size) * dpi > MAX_SIDE_PIXELS:
        raise PlotError("plot_too_large", f"{len(drawn)} panels at dpi {dpi:g} make an image "
                        f"{size[1] * dpi:.0f} pixels high (at most {MAX_SIDE_PIXELS}); lower the dpi")
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(n, 1, squeeze=False)[:, 0]
    if not drawn:
        axes[0].text(0.5, 0.5, "nothing recorded: the result has no toWorkspace or scope data",
                     ha="center", va="center", transform=axes[0].transAxes)
        axes[0].set_xlabel("time (s)")
        drawn_panels = [(axes[0], Panel("", on_time=True))]
    else:
        drawn_panels = list(zip(axes, drawn))
    kinds = _event_kinds(evs)
    looks = _event_looks(kinds)
    last_time_panel = max((i for i, (_, panel) in enumerate(drawn_panels) if panel.on_time), default=None)
    grid = _floats(result["time"])
    span = (float(grid[0]), float(grid[-1])) if grid is not None and grid.size > 1 and grid[-1] > grid[0] else None
    series = 0
    for i, (ax, panel) in enumerate(drawn_panels):
        for label, x, y in panel.lines:
            ax.plot(x, y, label=label, linewidth=1.2, marker="." if x.size <= 60 else None, markersize=3)
            series += 1
        for label, x, y in panel.markers:
            ax.plot([x], [y], "o", label=label)
            series += 1
        ax.set_title(panel.title, fontsize=10, loc="left")
        if not panel.on_time or i == last_time_panel:      # time panels share the axis: label it once
            ax.set_xlabel(panel.xlabel)
        ax.grid(True, alpha=0.3)
        if 1 < len(panel.lines) + len(panel.markers) <= MAX_LEGEND_ENTRIES:
            ax.legend(fontsize=8, loc="upper right")
        if panel.on_time:
            if span:                                   # every time panel over the whole run
                pad = 0.02 * (span[1] - span[0])
                ax.set_xlim(span[0] - pad, span[1] + pad)
            for kind, times in kinds.items():          # one collection per kind: cheap for thousands
                color, style = looks[kind]
                ax.vlines(times, 0, 1, transform=ax.get_xaxis_transform(), colors=color, linestyles=style,
                          linewidth=1.0, alpha=0.8)
    stats = result.get("stats") if isinstance(result.get("stats"), dict) else {}
    heading = title or (f"{len(drawn)} signal(s)" + (f", solver {stats['solver']}" if stats.get("solver") else "")
                        + (f"; {len(evs)} event(s), the vertical lines" if evs else ""))
    if kinds and last_time_panel is not None:   # the heading is the legend's title (a suptitle would overlap it)
        handles = [Line2D([], [], color=looks[k][0], linestyle=looks[k][1], linewidth=1.5) for k in kinds]
        labels = [f"{block} -> {to}: {len(times)}" if to else f"other events: {len(times)}"
                  for (block, to), times in kinds.items()]
        fig.legend(handles, labels, loc="outside upper center", ncols=min(4, len(kinds)), fontsize=8,
                   title=heading, title_fontsize=11, frameon=False)
    else:
        fig.suptitle(heading, fontsize=11)
    try:
        fig.savefig(out_path, dpi=dpi)
    except (OSError, ValueError) as exc:
        raise PlotError("plot_output", f"cannot write {out_path}: {exc}") from None
    except MemoryError:
        raise PlotError("plot_too_large", f"not enough memory to draw {out_path} at dpi {dpi:g}; "
                        "lower the dpi") from None
    return {"panels": len(drawn), "series": series, "events": len(evs)}
