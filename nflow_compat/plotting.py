"""Draw a simulation result: every recorded signal against time, its unit on the axis, the
events of the blocks it comes from on its panel.

``nflow_compat.plot(result)`` (``plot`` here) returns a matplotlib ``Figure`` (as FMPy's ``plot_result`` and
PathSim's ``Scope.plot`` do); ``nflow-sim plot RESULT.json -o out.png`` saves one
(``render``), ``--show`` opens it in a window.

* One panel per recorded signal, the time panels sharing their x axis: a ``workspace``
  variable or a ``scope`` recording several signals (a ``mux`` of a position, a speed and a
  force) gets one panel per signal, each on its own y axis labelled with the signal's unit
  (the manifests' ``outputUnits``); the columns of one vector signal share a panel. The
  signals and their names are the result's ``columns`` (``engine.columns``); a result
  without them (an older file) gets one panel per column for a variable of at most
  ``MAX_SPLIT`` columns, named ``name[k]``. ``variables`` picks what to draw (variable
  names, scope ids); ``overlay`` draws everything picked on one panel; ``reference`` (another
  result) is drawn dashed on the same panels, column by column where it has the same ones.
* An xy/xyz scope's x, y (z) against time; a display's held value as a marker at the time
  it was sampled.
* Events are drawn on the panels of the blocks they belong to: the block writing the
  panel's signal and, for a sensor, the physical blocks it is attached to (events of a
  block no panel shows go on every time panel). A block's mode changes (``kind`` "mode":
  friction's stuck / forward / backward, a clutch's) shade the panel in the mode's colour
  from one change to the next; other events are vertical lines coloured by what happened
  (``block -> to``), explained once in the legend above the panels.

``Structure With Time`` carries its own sample times. ``Array`` and ``Structure`` do not:
when their row count matches the result's time grid they are drawn against it, otherwise
(``Decimation``/``MaxDataPoints`` kept only some samples, which the result does not say)
against the sample number, in a panel of their own.

matplotlib is the optional extra ``plot``; it is imported here, on first use, through its
object-oriented API (no pyplot unless a window is asked for, no global backend switch), so
the rest of the package never needs it. Without it, a ``PlotError`` (code
``plot_unavailable``) says how to install it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .errors import NFlowError, did_you_mean
from .extras import install_hint
from .result import Result, column_names, matrix, nan_for_null
from .result import check_result as _check_result
from .result import load_json as _load_json

if TYPE_CHECKING:                       # matplotlib's types, for the annotations only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MAX_PANELS = 200            # a figure taller than this is not readable (nor renderable)
MAX_SPLIT = 8               # without channel names, a variable this narrow gets a panel per column
MAX_EVENT_KINDS = 16        # distinct "block -> to" entries in the event legend (the rest: "other")
MAX_LEGEND_ENTRIES = 12
PANEL_INCHES = 2.2
DPI_RANGE = (10, 1200)      # dots per inch a caller may ask for
MAX_SIDE_PIXELS = 1 << 16   # matplotlib's raster backend refuses a longer side
MODE_COLORS = {"stuck": "#7f7f7f", "forward": "#2ca02c", "backward": "#d62728", "stop": "#1f1f1f"}
UNSHADED_MODES = ("free",)  # a mode drawn without a band (nothing holds)
_BAND_CYCLE = ["#9467bd", "#17becf", "#bcbd22", "#e377c2", "#8c564b", "#ff7f0e"]
_EVENT_COLORS = ["#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
                 "#1f77b4", "#7f7f7f"]
_EVENT_STYLES = ["--", ":", "-."]


class PlotError(NFlowError):
    """The result cannot be drawn (not a result, nothing to draw on, matplotlib missing)."""

    kind = "plot"


@dataclass
class Panel:
    title: str
    key: str = ""                                          # the variable or scope it draws (``variables``)
    xlabel: str = "time (s)"
    on_time: bool = True                                   # x is time: events are drawn
    lines: list = field(default_factory=list)              # (label, x, y, column key)
    markers: list = field(default_factory=list)            # (label, x, y)
    units: list = field(default_factory=list)              # of its lines
    blocks: set = field(default_factory=set)               # whose events belong on it

    @property
    def ylabel(self) -> str:
        units = list(dict.fromkeys(u for u in self.units if u))
        return f"[{', '.join(units)}]" if units else ""


# ----------------------------------------------------------------------------- reading

def load_json(data):
    """JSON text or bytes (after a UTF-8 BOM, if any); NaN/Infinity tokens (a result
    written with ``--allow-nan``) too."""
    return _load_json(data, PlotError)


def is_diagram(doc) -> bool:
    """A diagram (blocks, no status) rather than a result."""
    return isinstance(doc, dict) and "blocks" in doc and "status" not in doc


def load_result(data) -> dict:
    """A result from JSON text or bytes."""
    return check_result(load_json(data))


def check_result(doc) -> dict:
    return _check_result(doc, PlotError)


def _as_result(result) -> Result:
    return result if isinstance(result, Result) else Result(check_result(result))


def _floats(values) -> np.ndarray | None:
    """A float array to draw (null -> NaN; +-inf -> NaN, which draws a gap); complex: its real
    part. None when ``values`` are not numbers."""
    try:
        arr = np.asarray(nan_for_null(values) if isinstance(values, list) else values)
        arr = (arr.real if arr.dtype.kind == "c" else arr).astype(float)
    except (TypeError, ValueError):
        return None
    arr[~np.isfinite(arr)] = np.nan
    return arr


def _matrix(values) -> np.ndarray | None:
    """N x W floats to draw from a recorded matrix (``result.matrix``), None if it is none."""
    try:
        arr = _floats(matrix(values))
    except (TypeError, ValueError):
        return None
    return arr if arr is not None and arr.ndim == 2 else None


# ----------------------------------------------------------------------------- panels

def _groups(name: str, width: int, signals) -> list:
    """(label, first column, width, unit, blocks) per panel of a recorder: one per recorded
    signal (``columns``), else one per column of a narrow one, else one for all."""
    if signals and sum(int(s.get("width", 0)) for s in signals) == width:
        out, start = [], 0
        for s in signals:
            w = int(s["width"])
            blocks = {s["block"]} if s.get("block") else set()
            out.append((str(s.get("name", "")), start, w, str(s.get("unit") or ""),
                        blocks | set(s.get("attached") or ())))
            start += w
        return out
    if width <= MAX_SPLIT:
        return [(name if width == 1 else f"{name}[{j + 1}]", j, 1, "", set()) for j in range(width)]
    return [(name, 0, width, "", set())]


def _split(name: str, note: str, x, data, groups, **panel) -> list:
    """One Panel per group, titled ``name: signal`` (``name`` alone for one signal)."""
    out = []
    for label, start, width, unit, blocks in groups:
        title = name if len(groups) == 1 else f"{name}: {label}"
        p = Panel(title + (f"  ({note})" if note else ""), key=name, blocks=set(blocks), **panel)
        names, _ = column_names(label, width, [{"name": label, "width": width}])
        for j, column in enumerate(names):
            p.lines.append((column, x, data[:, start + j], (name, start + j)))
            p.units.append(unit)
        out.append(p)
    return out


def _workspace_panels(v, grid: np.ndarray) -> list:
    data = _matrix(v.values)
    if data is None:
        return []
    n, width = data.shape
    groups = _groups(v.name, width, v.signals)
    if v.time is not None:
        return _split(v.name, "", np.asarray(v.time, dtype=float), data, groups)
    return _split(v.name, f"{n} of {grid.size} samples kept, times not recorded",
                  np.arange(1, n + 1, dtype=float), data, groups, xlabel="sample", on_time=False)


def _scope_panels(sid: str, value, signals) -> list:
    if not isinstance(value, dict):
        return []
    kind = value.get("type", "scope")
    if kind == "display":
        panel = Panel(f"{sid}  ({kind})", key=sid, blocks={sid})
        t, v = value.get("time"), _floats(value.get("value"))
        if isinstance(t, (int, float)) and v is not None:
            label = value.get("label") or sid
            for j, y in enumerate(np.atleast_1d(v)):
                panel.markers.append((label if np.size(v) == 1 else f"{label}[{j + 1}]", float(t), float(y)))
        return [panel] if panel.markers else []
    times = _floats(value.get("time")) if isinstance(value.get("time"), (list, np.ndarray)) else None
    if times is None or times.ndim != 1:
        return []
    out = []
    if "values" in value:
        data = _matrix(value["values"])
        if data is not None and data.shape[0] == times.size:
            out += _split(sid, "", times, data, _groups(sid, data.shape[1], signals))
    axes = Panel(f"{sid}  ({kind})", key=sid, blocks={sid})
    for key, series in value.items():           # xyScope / xyzScope axes, and any other series
        if key in ("type", "time", "values", "label") or not isinstance(series, (list, np.ndarray)):
            continue
        data = _matrix(series)
        if data is not None and data.shape[0] == times.size:
            for j in range(data.shape[1]):
                label = f"{sid}.{key}" if data.shape[1] == 1 else f"{sid}.{key}[{j + 1}]"
                axes.lines.append((label, times, data[:, j], (sid, f"{key}[{j}]")))
                axes.units.append("")
    return out + ([axes] if axes.lines else [])


def panels(result, variables=None) -> list:
    """Everything drawable in ``result`` (a Result or a result dict), as Panels (see the
    module docstring); ``variables``: only these workspace variables and scopes."""
    res = _as_result(result)
    grid = res.time
    wanted = _wanted(res, variables)
    out = []
    for name, v in res.variables.items():
        if wanted is None or name in wanted:
            out += _workspace_panels(v, grid)
    named = (res.raw.get("columns") or {}).get("scopes") or {}
    for sid, value in res.scopes.items():
        if wanted is None or sid in wanted:
            out += _scope_panels(str(sid), value, named.get(sid))
    return out


def _wanted(res: Result, variables):
    if variables is None:
        return None
    if isinstance(variables, str):
        variables = [variables]
    known = list(res.variables) + [str(s) for s in res.scopes]
    for name in variables:
        if name not in known:
            raise PlotError("unknown_variable", f"the result records no variable or scope {name!r} (recorded: "
                            f"{', '.join(map(repr, known)) or 'none'})" + did_you_mean(str(name), known))
    return set(variables)


class Event(NamedTuple):
    t: float
    block: str
    to: str           # the mode or state it went to; an FMU's event only its kind
    kind: str
    from_: str


def events(result) -> list:
    """The ``Event`` of every event of ``result`` with a finite time."""
    raw = result.event_list if isinstance(result, Result) else (result.get("events") or [])
    out = []
    for ev in raw:
        if not isinstance(ev, dict) or not isinstance(ev.get("t"), (int, float)) or not math.isfinite(ev["t"]):
            continue
        kind = str(ev.get("kind", "?"))
        out.append(Event(float(ev["t"]), str(ev.get("block", "?")), str(ev.get("to", kind)), kind,
                         str(ev.get("from") or "")))
    return out


def mode_bands(evs: list, span: tuple) -> dict:
    """block -> [(t0, t1, mode)]: the stretches between a block's mode changes (``kind``
    "mode"), from the start of ``span`` in the mode its first change left to its end in
    the mode of its last."""
    changes: dict = {}
    for e in evs:
        if e.kind == "mode":
            changes.setdefault(e.block, []).append(e)
    out = {}
    for block, seq in changes.items():
        bands = [(span[0], seq[0].t, seq[0].from_)] if seq[0].from_ and seq[0].t > span[0] else []
        bands += [(e.t, seq[i + 1].t if i + 1 < len(seq) else span[1], e.to) for i, e in enumerate(seq)]
        out[block] = bands
    return out


def _event_kinds(evs: list) -> dict:
    """(block, to) -> event times, in order of first occurrence; past MAX_EVENT_KINDS kinds
    the least frequent are merged into one ("other", "") entry."""
    kinds: dict = {}
    for t, block, to, *_ in evs:
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


def _mode_color(mode: str, others: dict) -> str | None:
    if mode in UNSHADED_MODES:
        return None
    if mode not in MODE_COLORS and mode not in others:
        others[mode] = _BAND_CYCLE[len(others) % len(_BAND_CYCLE)]
    return MODE_COLORS.get(mode) or others[mode]


# ----------------------------------------------------------------------------- drawing

def _matplotlib():
    try:
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
    except ImportError:
        raise PlotError("plot_unavailable", "plotting needs matplotlib (the 'plot' extra), which is not "
                        f"installed; {install_hint('plot')}") from None
    return Figure, Line2D, Patch


def check_dpi(dpi) -> None:
    """``dpi`` within DPI_RANGE (a huge one would allocate gigabytes of pixels)."""
    lo, hi = DPI_RANGE
    if isinstance(dpi, bool) or not isinstance(dpi, (int, float)) or not lo <= dpi <= hi:
        raise PlotError("bad_dpi", f"dpi must be a number from {lo} to {hi}, got {dpi!r}")


def _overlaid(drawn: list) -> list:
    """Every time panel's lines on one panel (the others as they are)."""
    timed = [p for p in drawn if p.on_time]
    if len(timed) <= 1:
        return drawn
    one = Panel(", ".join(dict.fromkeys(p.key for p in timed)), key="")
    for p in timed:
        prefix = "" if len({q.key for q in timed}) == 1 else f"{p.key}: "
        one.lines += [(prefix + label, x, y, column) for label, x, y, column in p.lines]
        one.markers += p.markers
        one.units += p.units
        one.blocks |= p.blocks
    return [one] + [p for p in drawn if not p.on_time]


def _reference_lines(panel: Panel, reference: list) -> list:
    """The lines of ``reference``'s panels drawing the same columns as ``panel``'s."""
    by_column = {column: (label, x, y) for p in reference for label, x, y, column in p.lines}
    return [by_column[column] for _, _, _, column in panel.lines if column in by_column]


def plot(result: Result | dict | str, variables: str | Sequence[str] | None = None, *, overlay: bool = False,
         reference: Result | dict | str | None = None, ax: Axes | None = None, title: str | None = None,
         dpi: int = 100, figure: Callable[..., Figure] | None = None) -> Figure:
    """Draw a result: a panel per recorded signal against time, the time panels sharing
    their x axis, each y axis labelled with its unit, the events on the panels of the
    blocks they belong to (mode changes as shaded bands).

    Parameters
    ----------
    result : Result or dict
        What ``nflow_compat.run`` returns, or a result dict (``simulate``, a result file).
    variables : str or list of str, optional
        The workspace variables and scopes to draw (default: all).
    overlay : bool
        Every time signal on one panel.
    reference : Result or dict, optional
        Another result, drawn dashed on the same panels where it has the same columns
        (``nflow-sim plot --compare``).
    ax : matplotlib.axes.Axes, optional
        Draw everything into this axes (``overlay``); its figure is returned.
    title : str, optional
        The figure's title (default: a summary of the result).
    dpi : int
        The figure's resolution (a raster image is saved at it).
    figure : callable, optional
        ``figure(figsize=..., dpi=...)`` making the Figure (``matplotlib.pyplot.figure`` for
        a window); default a ``matplotlib.figure.Figure`` no window manager knows.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    PlotError
        ``plot_unavailable`` without matplotlib (the ``plot`` extra), ``bad_result`` for
        what is not a result, ``unknown_variable`` (with a suggestion), ``too_many_series``,
        ``bad_dpi``.

    Examples
    --------
    >>> import nflow_compat as nc
    >>> d = {"blocks": [{"id": "s", "type": "sine", "params": {"Frequency": 1}},
    ...                 {"id": "w", "type": "toWorkspace", "params": {"VariableName": "y"}}],
    ...      "connections": [{"from": "s", "to": "w"}], "sampleTime": 0.01, "duration": 1}
    >>> fig = nc.plot(nc.run(d))
    >>> [a.get_title(loc="left") for a in fig.axes]
    ['y']
    >>> fig.savefig("sine.png")  # doctest: +SKIP
    """
    return _draw(result, variables, overlay, reference, ax, title, dpi, figure)[0]


def _draw(result, variables, overlay, reference, ax, title, dpi, figure) -> tuple:
    """(the Figure, counts: panels, series, events) of ``plot``."""
    check_dpi(dpi)
    res = _as_result(result)
    drawn = panels(res, variables)
    ref = panels(_as_result(reference), None) if reference is not None else []
    if overlay or ax is not None:
        drawn = _overlaid(drawn)
        if ax is not None:
            drawn = drawn[:1]
    if len(drawn) > MAX_PANELS:
        raise PlotError("too_many_series", f"{len(drawn)} panels to draw (limit {MAX_PANELS})")
    Figure, Line2D, Patch = _matplotlib()
    n = max(1, len(drawn))
    if ax is not None:
        fig, axes = ax.figure, [ax]
    else:
        size = (11, 1.6 + PANEL_INCHES * n)
        if max(size) * dpi > MAX_SIDE_PIXELS:
            raise PlotError("plot_too_large", f"{len(drawn)} panels at dpi {dpi:g} make an image "
                            f"{size[1] * dpi:.0f} pixels high (at most {MAX_SIDE_PIXELS}); lower the dpi")
        fig = (figure or Figure)(figsize=size, dpi=dpi, layout="constrained")
        axes = list(fig.subplots(n, 1, squeeze=False)[:, 0])
    if not drawn:
        axes[0].text(0.5, 0.5, "nothing recorded: the result has no toWorkspace or scope data",
                     ha="center", va="center", transform=axes[0].transAxes)
        axes[0].set_xlabel("time (s)")
        drawn = [Panel("", on_time=True)]
    pairs = list(zip(axes, drawn))
    evs = events(res)
    grid = res.time
    span = (float(grid[0]), float(grid[-1])) if grid.size > 1 and grid[-1] > grid[0] else None
    owned = set().union(*(p.blocks for _, p in pairs))
    line_events = [e for e in evs if e.kind != "mode"]
    kinds = _event_kinds(line_events)
    looks = _event_looks(kinds)
    bands = mode_bands(evs, span or (0.0, 0.0))
    band_colors: dict = {}
    shown_modes: dict = {}
    time_axes = [a for a, p in pairs if p.on_time]
    for a in time_axes[1:]:
        if ax is None:
            a.sharex(time_axes[0])
    last_time_panel = max((i for i, (_, p) in enumerate(pairs) if p.on_time), default=None)
    series = 0
    for i, (a, panel) in enumerate(pairs):
        for label, x, y, _ in panel.lines:
            a.plot(x, y, label=label, linewidth=1.2, marker="." if np.size(x) <= 60 else None, markersize=3)
            series += 1
        for label, x, y in _reference_lines(panel, ref):
            a.plot(x, y, label=f"{label} (reference)", linewidth=1.0, linestyle="--", color="0.35")
        for label, x, y in panel.markers:
            a.plot([x], [y], "o", label=label)
            series += 1
        a.set_title(panel.title, fontsize=10, loc="left")
        if panel.ylabel:
            a.set_ylabel(panel.ylabel)
        if not panel.on_time or i == last_time_panel:      # time panels share the axis: label it once
            a.set_xlabel(panel.xlabel)
        a.grid(True, alpha=0.3)
        entries = len(panel.lines) + len(panel.markers) + len(_reference_lines(panel, ref))
        if 1 < entries <= MAX_LEGEND_ENTRIES:
            a.legend(fontsize=8, loc="upper right")
        if not panel.on_time:
            continue
        if span:                                       # every time panel over the whole run
            pad = 0.02 * (span[1] - span[0])
            a.set_xlim(span[0] - pad, span[1] + pad)
        for block, intervals in bands.items():
            if block in panel.blocks or block not in owned:
                for t0, t1, mode in intervals:
                    color = _mode_color(mode, band_colors)
                    if color is not None and t1 > t0:
                        a.axvspan(t0, t1, color=color, alpha=0.12, linewidth=0)
                        shown_modes[mode] = color
        for kind, times in kinds.items():              # one collection per kind: cheap for thousands
            block = kind[0]
            if block in panel.blocks or block not in owned or block == "other":
                color, style = looks[kind]
                a.vlines(times, 0, 1, transform=a.get_xaxis_transform(), colors=color, linestyles=style,
                         linewidth=1.0, alpha=0.8)
    stats = res.stats
    n_panels = len([p for p in drawn if p.lines or p.markers])
    heading = title or (f"{n_panels} signal(s)" + (f", solver {stats['solver']}" if stats.get("solver") else "")
                        + (f"; {len(evs)} event(s)" if evs else ""))
    handles = [Line2D([], [], color=looks[k][0], linestyle=looks[k][1], linewidth=1.5) for k in kinds]
    labels = [f"{block} -> {to}: {len(times)}" if to else f"other events: {len(times)}"
              for (block, to), times in kinds.items()]
    handles += [Patch(color=color, alpha=0.25) for color in shown_modes.values()]
    labels += [f"mode {mode} (shaded)" for mode in shown_modes]
    if ax is not None:
        if title:
            axes[0].set_title(title, fontsize=10, loc="left")
    elif handles and last_time_panel is not None:   # the heading is the legend's title (a suptitle would overlap it)
        fig.legend(handles, labels, loc="outside upper center", ncols=min(4, len(handles)), fontsize=8,
                   title=heading, title_fontsize=11, frameon=False)
    else:
        fig.suptitle(heading, fontsize=11)
    return fig, {"panels": n_panels, "series": series, "events": len(evs)}


def render(result, out_path, *, title: str | None = None, dpi: int = 100, variables=None, overlay: bool = False,
           reference=None) -> dict:
    """Draw ``result`` into ``out_path`` (format from its extension: .png, .svg, .pdf, ...).
    Returns counts: panels, series, events."""
    fig, counts = _draw(result, variables, overlay, reference, None, title, dpi, None)
    try:
        fig.savefig(out_path, dpi=dpi)
    except (OSError, ValueError) as exc:
        raise PlotError("plot_output", f"cannot write {out_path}: {exc}") from None
    except MemoryError:
        raise PlotError("plot_too_large", f"not enough memory to draw {out_path} at dpi {dpi:g}; "
                        "lower the dpi") from None
    return counts


_NON_INTERACTIVE = ("agg", "cairo", "pdf", "pgf", "ps", "svg", "template")


def show(result, variables=None, *, overlay: bool = False, reference=None, title: str | None = None) -> dict:
    """Draw ``result`` in a window (pyplot's current interactive backend) and wait until it
    is closed. Returns counts: panels, series, events. Without a display:
    ``plot_no_display``."""
    _matplotlib()
    import matplotlib.pyplot as pyplot
    if pyplot.get_backend().lower() in _NON_INTERACTIVE:
        raise PlotError("plot_no_display", f"--show needs an interactive matplotlib backend (a display); the backend "
                        f"is {pyplot.get_backend()!r}: write an image with -o instead")
    fig, counts = _draw(result, variables, overlay, reference, None, title, 100, pyplot.figure)
    pyplot.show()
    pyplot.close(fig)
    return counts
