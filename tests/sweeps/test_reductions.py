"""Sweep output reductions (nflow_compat.sweeps.reductions): crossings, first rising /
falling, final / min / max / mean / rms, and the recordings that cannot be reduced."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nflow_compat as nc
from nflow_compat.sweeps import reductions


# ----------------------------------------------------------------------------- reductions

def _red(text):
    return reductions.parse(text)


def _crossing_steps(x, level):
    """The steps k -> k+1 that change side ("above level" / "not above"), by a plain loop."""
    return [(k, x[k + 1] > level) for k in range(len(x) - 1) if (x[k] > level) != (x[k + 1] > level)]


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, min_size=1, max_size=60), finite)
def test_crossing_law(values, level):
    x = np.array(values)
    t = np.arange(len(x)) * 0.5
    steps = _crossing_steps(values, level)
    assert reductions.reduce(_red(f"crossings({level!r})"), t, x[:, None], "x") == len(steps)
    ups = [up for _, up in steps]
    assert all(a != b for a, b in zip(ups, ups[1:]))          # rising and falling alternate
    first = reductions.reduce(_red(f"first_crossing({level!r})"), t, x[:, None], "x")
    rising = reductions.reduce(_red(f"first_rising({level!r})"), t, x[:, None], "x")
    falling = reductions.reduce(_red(f"first_falling({level!r})"), t, x[:, None], "x")
    if not steps:
        assert math.isnan(first) and math.isnan(rising) and math.isnan(falling)
        return
    k, up = steps[0]
    assert first == (rising if up else falling)
    assert t[k] <= first <= t[k + 1]
    # the linear interpolant between the two samples is at the level there
    at = x[k] + (x[k + 1] - x[k]) * (first - t[k]) / (t[k + 1] - t[k])
    assert abs(at - level) <= 1e-9 * max(1.0, abs(x[k]), abs(x[k + 1]))


@settings(max_examples=100, deadline=None)
@given(st.floats(0.1, 10), st.floats(-5, 5), st.floats(0.05, 0.95))
def test_first_rising_of_a_ramp_is_its_closed_form(slope, offset, where):
    t = np.linspace(0.0, 1.0, 101)
    x = slope * t + offset
    level = offset + slope * where            # analytic: x(t) = level at t = where
    got = reductions.reduce(_red(f"first_rising({level!r})"), t, x[:, None], "x")
    assert got == pytest.approx(where, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.lists(finite, min_size=1, max_size=50))
def test_plain_reductions(values):
    x = np.array(values)[:, None]
    got = {name: reductions.reduce(_red(name), None, x, "x") for name in ("final", "min", "max", "mean", "rms")}
    assert (got["final"], got["min"], got["max"]) == (values[-1], min(values), max(values))
    assert got["mean"] == pytest.approx(math.fsum(values) / len(values), rel=1e-9, abs=1e-6)
    assert got["rms"] == pytest.approx(math.sqrt(math.fsum(v * v for v in values) / len(values)), rel=1e-9)


def test_recordings_that_cannot_be_reduced_say_why():
    grid = np.arange(4) * 0.1
    wide = {"time": grid, "events": [], "workspace": {"v": np.ones((4, 2))}}
    times, values = reductions.recording(wide, "v")
    with pytest.raises(nc.SimulationError, match="2 elements") as info:
        reductions.reduce(_red("max"), times, values, "v")
    assert info.value.code == "output_not_scalar"
    decimated = {"time": grid, "events": [], "workspace": {"v": np.ones((2, 1))}}
    times, values = reductions.recording(decimated, "v")
    assert times is None and reductions.reduce(_red("max"), times, values, "v") == 1.0
    with pytest.raises(nc.SimulationError) as info:
        reductions.reduce(_red("first_rising(0)"), times, values, "v")
    assert info.value.code == "output_time_unknown"
    complex_ = {"time": grid, "events": [], "workspace": {"v": {"real": np.ones((4, 1)), "imag": np.ones((4, 1))}}}
    with pytest.raises(nc.SimulationError) as info:
        reductions.recording(complex_, "v")
    assert info.value.code == "output_complex"


# ----------------------------------------------------------------------------- event reductions

EVENTS = {"events": [{"t": 0.25, "block": "m", "kind": "mode", "from": "stuck", "to": "forward"},
                     {"t": 0.5, "block": "m", "kind": "mode", "from": "forward", "to": "stuck"},
                     {"t": 0.75, "block": "m", "kind": "mode", "from": "stuck", "to": "forward"},
                     {"t": 0.8, "block": "c", "kind": "mode", "from": "free", "to": "forward"},
                     {"t": 0.9, "block": "m", "kind": "stop", "from": "forward", "to": "stop"}]}


@pytest.mark.parametrize("text, value", [
    ("count", 5), ("mode", 4), ("stop", 1), ("contact", 0),
    ("event_time(m, forward)", 0.25), ("event_time(m, forward, 2)", 0.75), ("event_time(m, forward, -1)", 0.75),
    ("event_time(m, forward, -2)", 0.25), ("event_time(m, forward, 3)", math.nan),
    ("event_time(m, forward, -3)", math.nan), ("event_time( m ,stuck )", 0.5), ("event_time(x, forward)", math.nan),
    ("event_count(m, forward)", 2), ("event_count(c, forward)", 1), ("event_count(m, free)", 0),
])
def test_event_reductions(text, value):
    got = reductions.event_values(EVENTS, (reductions.parse_event(text),))[text]
    assert got == value or (math.isnan(value) and math.isnan(got))
    assert reductions.parse_event(text).counts == (not text.startswith("event_time"))


def test_event_times_are_the_located_times_of_a_real_run():
    """The stick-slip mass's breakaway: event_time(stop1, forward) is the mode change's
    located time (not a grid time) and equals the result's event."""
    from tests.sweeps.sweep_specs import MASS
    result = nc.simulate(MASS)
    first = next(e for e in result["events"] if e["block"] == "stop1" and e["to"] == "forward")
    r = reductions.parse_event("event_time(stop1, forward)")
    assert reductions.event_values(result, (r,))[r.text] == first["t"]
    assert round(first["t"] / MASS["sampleTime"], 3) % 1 != 0     # between grid points
