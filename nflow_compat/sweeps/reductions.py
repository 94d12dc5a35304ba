"""What a sweep keeps of a run: reductions of a recorded signal to one number, and of its
events.

Reductions of a width-1 ``toWorkspace`` signal ``x`` sampled at times ``t``:

* ``final``, ``min``, ``max``: the last, smallest, largest sample (NaN samples propagate);
* ``mean``, ``rms``: over the recorded samples (on nflow's uniform grid, the time average);
* ``first_crossing(L)``, ``first_rising(L)``, ``first_falling(L)``: the first time the
  signal crosses level ``L`` (either way, upwards, downwards), NaN when it never does;
* ``crossings(L)``: how many times it crosses ``L`` (the count of level-crossing events).

A crossing is a change of side between consecutive samples, the sides being "above L"
and "at or below L": rising when ``x[k] <= L < x[k+1]``, falling when ``x[k] > L >=
x[k+1]`` (so a signal resting at L and leaving upwards rises where it leaves: a mass
sticking at v = 0 breaks away at its last sample at rest). Rising and falling crossings
alternate. Its time is interpolated linearly between the two samples. A NaN sample
crosses nothing.

Event reductions (the spec's ``events`` list, columns ``events.<entry>``): ``count`` (every
event of the run), an event kind (``mode``, ``stop``, ...: how many), and the located
events of one block entering one mode (``to``, as the result's events say: a breakaway is
``event_time(stop1, forward)``, a lock-up ``event_time(clutch, stuck)``):

* ``event_time(block, to)``: the time of the first, NaN when there is none;
* ``event_time(block, to, n)``: of the n-th (1-based; -1 the last, -2 the one before);
* ``event_count(block, to)``: how many.

These are the event times the solver located, not grid times.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..errors import SimulationError

TRACE = "trace"
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_PLAIN = ("final", "min", "max", "mean", "rms")
_LEVELLED = ("first_crossing", "first_rising", "first_falling", "crossings")
# what the sweep schema accepts as an output entry (a reduction or "trace")
OUTPUT_PATTERN = rf"^(?:{TRACE}|{'|'.join(_PLAIN)}|(?:{'|'.join(_LEVELLED)})\(\s*{_NUMBER}\s*\))$"
_LEVELLED_FORM = re.compile(rf"^({'|'.join(_LEVELLED)})\(\s*({_NUMBER})\s*\)$")
COUNT = "count"
# what the sweep schema accepts as an events entry: count, a kind, or an event reduction
_ARG = r"\s*[^,()\s][^,()]*?\s*"
EVENT_PATTERN = (rf"^(?:event_time\({_ARG},{_ARG}(?:,\s*[-+]?\d+\s*)?\)|event_count\({_ARG},{_ARG}\)"
                 r"|[A-Za-z_][A-Za-z_0-9]*)$")
_EVENT_FORM = re.compile(rf"^(event_time|event_count)\(({_ARG}),({_ARG})(?:,\s*([-+]?\d+)\s*)?\)$")


@dataclass(frozen=True)
class Reduction:
    text: str              # as written in the spec: the column is "<variable>.<text>"
    name: str
    level: float | None = None

    @property
    def counts(self) -> bool:
        """Whether the value is a count (an integer column) rather than a float."""
        return self.name == "crossings"


def parse(text: str) -> Reduction:
    """The reduction ``text`` names (``text`` matches OUTPUT_PATTERN and is not "trace")."""
    if text in _PLAIN:
        return Reduction(text, text)
    name, level = _LEVELLED_FORM.match(text).groups()
    return Reduction(text, name, float(level))


def _crossings(t, x, level: float):
    """(rising mask, falling mask, interpolated times) of the steps k -> k+1."""
    above = x > level
    valid = ~np.isnan(x)
    both = valid[:-1] & valid[1:]
    rising = both & ~above[:-1] & above[1:]
    falling = both & above[:-1] & ~above[1:]
    with np.errstate(all="ignore"):     # steps without a crossing may divide by 0; crossings cannot
        frac = (level - x[:-1]) / (x[1:] - x[:-1])
    return rising, falling, t[:-1] + frac * (t[1:] - t[:-1])


def _first(mask, times) -> float:
    hits = np.flatnonzero(mask)
    return float(times[hits[0]]) if len(hits) else math.nan


def _first_crossing(t, x, level):
    rising, falling, times = _crossings(t, x, level)
    return _first(rising | falling, times)


def _first_rising(t, x, level):
    rising, _, times = _crossings(t, x, level)
    return _first(rising, times)


def _first_falling(t, x, level):
    _, falling, times = _crossings(t, x, level)
    return _first(falling, times)


def _count(t, x, level):
    rising, falling, _ = _crossings(t, x, level)
    return int(np.count_nonzero(rising | falling))


def _or_nan(fn):
    return lambda t, x, level: float(fn(x)) if len(x) else math.nan


_FUNCTIONS = {
    "final": _or_nan(lambda x: x[-1]),
    "min": _or_nan(np.min),
    "max": _or_nan(np.max),
    "mean": _or_nan(np.mean),
    "rms": _or_nan(lambda x: np.sqrt(np.mean(x * x))),
    "first_crossing": _first_crossing,
    "first_rising": _first_rising,
    "first_falling": _first_falling,
    "crossings": _count,
}
_NEEDS_TIME = {"first_crossing", "first_rising", "first_falling"}


def reduce(reduction: Reduction, times, values: np.ndarray, variable: str):
    """``reduction`` of the recorded N x W ``values`` (``times``: N sample times, or None
    when the recording does not say them)."""
    if values.shape[1] != 1:
        raise SimulationError("output_not_scalar", f"workspace variable {variable!r} has {values.shape[1]} "
                              f"elements; a reduction needs one (select it with a demux/selector block before "
                              "the toWorkspace, or record the 'trace')")
    if times is None and reduction.name in _NEEDS_TIME:
        raise SimulationError("output_time_unknown", f"workspace variable {variable!r} does not carry its sample "
                              "times (SaveFormat 'Array' or 'Structure' with Decimation/MaxDataPoints); record it "
                              "with SaveFormat 'Structure With Time'")
    return _FUNCTIONS[reduction.name](times, values[:, 0], reduction.level)


def recording(result: dict, variable: str):
    """(times or None, N x W float values) of workspace ``variable`` in a run's result
    (numpy form, as ``Plan.run`` returns it). Times come from 'Structure With Time', else
    from the run's grid when the recording has one sample per grid point."""
    entry = result["workspace"].get(variable)
    if entry is None:
        raise SimulationError("output_missing", f"the run recorded no workspace variable {variable!r}")
    times = None
    if isinstance(entry, dict) and "signals" in entry:
        times, entry = entry["time"], entry["signals"]["values"]
    if isinstance(entry, dict):      # {"real", "imag"}: a complex recording
        raise SimulationError("output_complex", f"workspace variable {variable!r} is complex; record its parts "
                              "(complexToRealImag) to sweep over them")
    values = np.asarray(entry, dtype=float)
    if values.ndim == 1:
        values = values.reshape(-1, 1)
    if times is None or len(times) != len(values):
        grid = result["time"]
        times = grid if len(grid) == len(values) else None
    return (None if times is None else np.asarray(times, dtype=float)), values


@dataclass(frozen=True)
class EventReduction:
    """One entry of the spec's ``events``: ``text`` as written (the column is
    ``events.<text>``), what it computes (``name``: count, kind, event_time, event_count)
    and of which events."""
    text: str
    name: str
    block: str | None = None
    to: str | None = None
    n: int = 1

    @property
    def counts(self) -> bool:
        """Whether the value is a count (an integer column) rather than a time."""
        return self.name != "event_time"


def parse_event(text: str) -> EventReduction:
    """The event reduction ``text`` names (``text`` matches EVENT_PATTERN)."""
    form = _EVENT_FORM.match(text)
    if form is None:
        return EventReduction(text, COUNT if text == COUNT else "kind")
    name, block, to, n = form.groups()
    return EventReduction(text, name, block.strip(), to.strip(), 1 if n is None else int(n))


def event_values(result: dict, reductions: tuple) -> dict:
    """``EventReduction.text`` -> its value over the run's events."""
    events = result["events"]
    out = {}
    for r in reductions:
        if r.name == COUNT:
            out[r.text] = len(events)
        elif r.name == "kind":
            out[r.text] = sum(1 for e in events if e.get("kind") == r.text)
        else:
            times = [e["t"] for e in events if e.get("block") == r.block and e.get("to") == r.to]
            if r.name == "event_count":
                out[r.text] = len(times)
            else:
                k = r.n - 1 if r.n > 0 else len(times) + r.n
                out[r.text] = float(times[k]) if 0 <= k < len(times) else math.nan
    return out
