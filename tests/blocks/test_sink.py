"""Sinks library handlers: toWorkspace (SaveFormats, Decimation, MaxDataPoints, NaN for an
unconnected input, vectors), stopSimulation, scope, display, terminator. Expected values
are worked out by hand on the grid t_k = k*dt."""
from __future__ import annotations

import math

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from tests.util import blk, diagram, record, run, wire

FAST = settings(max_examples=40, deadline=None)


def clock_into(sink, dt=0.1, duration=1.0, **kw):
    """clock -> ``sink`` (id 'w'); returns the full result."""
    return run(diagram([blk("c", "clock"), dict(sink, id="w")], [wire("c", "w")], dt=dt, duration=duration, **kw))


def logged(name="y", **params):
    return blk("w", "toWorkspace", dict({"VariableName": name}, **params))


GRID = [k * 0.1 for k in range(11)]


# ----------------------------------------------------------------------------- SaveFormat

def test_array_format_is_n_by_w():
    res = clock_into(logged(SaveFormat="Array"))
    assert res["workspace"]["y"] == [[t] for t in GRID]
    assert res["time"] == GRID


def test_structure_with_time_is_the_default_format():
    res = clock_into(blk("w", "toWorkspace"), duration=0.2)
    assert res["workspace"]["simout"] == {
        "time": [0.0, 0.1, 0.2],
        "signals": {"values": [[0.0], [0.1], [0.2]], "dimensions": 1, "label": ""},
        "blockName": "w",
    }


def test_structure_format_has_empty_time():
    res = clock_into(logged(SaveFormat="Structure"), duration=0.2)
    assert res["workspace"]["y"] == {
        "time": [], "signals": {"values": [[0.0], [0.1], [0.2]], "dimensions": 1, "label": ""}, "blockName": "w"}


def test_vector_input_structure_dimensions():
    d = diagram([blk("c", "constant", Value=[1, -2, 3]), blk("w", "toWorkspace", VariableName="v")],
                [wire("c", "w")], duration=0.1)
    v = run(d)["workspace"]["v"]
    assert v["signals"]["values"] == [[1, -2, 3], [1, -2, 3]] and v["signals"]["dimensions"] == 3
    assert v["time"] == [0.0, 0.1]


def test_unknown_save_format_is_rejected():
    with pytest.raises(nc.DiagramError) as err:
        clock_into(logged(SaveFormat="Timeseries"))
    assert err.value.code == "param_value" and err.value.param == "SaveFormat"


def test_two_recorders_and_json_output():
    d = diagram([blk("c", "clock"), blk("a", "toWorkspace", VariableName="a", SaveFormat="Array"),
                 blk("b", "toWorkspace", VariableName="b", SaveFormat="Structure With Time", Decimation=2)],
                [wire("c", "a"), wire("c", "b")], duration=0.3)
    out = orjson.loads(nc.simulate_json(orjson.dumps(d)))
    assert out["workspace"]["a"] == [[0.0], [0.1], [0.2], [0.30000000000000004]]
    assert out["workspace"]["b"]["time"] == [0.0, 0.2] and out["workspace"]["b"]["blockName"] == "b"


# ----------------------------------------------------------------------------- Decimation / MaxDataPoints

def test_decimation_keeps_one_in_k_starting_with_the_first():
    res = clock_into(logged(Decimation=3))
    assert res["workspace"]["y"]["time"] == [0.0, 0.30000000000000004, 0.6000000000000001, 0.9]
    assert res["workspace"]["y"]["signals"]["values"] == [[0.0], [0.30000000000000004], [0.6000000000000001], [0.9]]
    assert res["time"] == GRID  # the run's grid is not decimated


@pytest.mark.parametrize("value, kept", [
    (2.9, [0, 2, 4]),          # truncated to 2
    (0, [0, 1, 2, 3, 4]),      # below 1 -> every sample
    (-4, [0, 1, 2, 3, 4]),
    ("nan", [0, 1, 2, 3, 4]),
    ("inf", [0, 1, 2, 3, 4]),  # C++ int cast of inf is INT_MIN -> 1
    (10, [0]),
])
def test_decimation_values(value, kept):
    res = clock_into(logged(SaveFormat="Array", Decimation=value), dt=1.0, duration=4.0)
    assert res["workspace"]["y"] == [[float(k)] for k in kept]


def test_max_data_points_keeps_the_last_n():
    res = clock_into(logged(MaxDataPoints=4), dt=1.0, duration=10.0)
    assert res["workspace"]["y"]["time"] == [7.0, 8.0, 9.0, 10.0]
    assert res["workspace"]["y"]["signals"]["values"] == [[7.0], [8.0], [9.0], [10.0]]


def test_max_data_points_applies_after_decimation():
    # decimation 3 keeps steps 0, 3, 6, 9; the window of 2 keeps 6 and 9
    res = clock_into(logged(SaveFormat="Array", Decimation=3, MaxDataPoints=2), dt=1.0, duration=10.0)
    assert res["workspace"]["y"] == [[6.0], [9.0]]


@pytest.mark.parametrize("value, n", [("inf", 11), (0, 11), (-1, 11), ("nan", 11), (0.5, 11), (2.7, 2),
                                      (1, 1), (1e300, 11), ("1e3", 11)])
def test_max_data_points_values(value, n):
    res = clock_into(logged(SaveFormat="Array", MaxDataPoints=value), dt=1.0, duration=10.0)
    assert res["workspace"]["y"] == [[float(k)] for k in range(11 - n, 11)]


@FAST
@given(dec=st.integers(1, 7), max_points=st.integers(0, 15), steps=st.integers(0, 30))
def test_decimation_then_window_is_slicing(dec, max_points, steps):
    res = clock_into(logged(SaveFormat="Structure With Time", Decimation=dec, MaxDataPoints=max_points), dt=1.0,
                     duration=float(steps) if steps else 0.5)
    kept = [float(k) for k in range(steps + 1)][::dec]
    if max_points >= 1:
        kept = kept[-max_points:]
    assert res["workspace"]["y"]["time"] == kept
    assert res["workspace"]["y"]["signals"]["values"] == [[k] for k in kept]


def test_recorder_is_reset_between_runs():
    plan = nc.compile_plan(diagram([blk("c", "clock"), logged(SaveFormat="Array", MaxDataPoints=2, Decimation=2)],
                                   [wire("c", "w")], dt=1.0, duration=6.0))
    first, second = plan.run(), plan.run()
    assert first["workspace"]["y"].tolist() == second["workspace"]["y"].tolist() == [[4.0], [6.0]]


# ----------------------------------------------------------------------------- unconnected / vectors

def test_unconnected_input_records_nan():
    res = run(diagram([blk("w", "toWorkspace", VariableName="y", SaveFormat="Array", inputs=1)], [], duration=0.2))
    y = np.asarray(res["workspace"]["y"], dtype=float)
    assert y.shape == (3, 1) and np.isnan(y).all()
    text = nc.simulate_json(orjson.dumps(diagram([blk("w", "toWorkspace", VariableName="y", SaveFormat="Array")], [],
                                                 duration=0.1)))
    assert orjson.loads(text)["workspace"]["y"] == [[None], [None]]
    assert '"y":[[NaN],[NaN]]' in nc.simulate_json(
        orjson.dumps(diagram([blk("w", "toWorkspace", VariableName="y", SaveFormat="Array")], [], duration=0.1)),
        allow_nan=True).replace(" ", "")


def test_vector_input_rows():
    d = diagram([blk("c", "constant", Value=[[1, 2], [3, 4]]), logged(SaveFormat="Array")], [wire("c", "w")],
                duration=0.1)
    assert run(d)["workspace"]["y"] == [[1, 3, 2, 4]] * 2  # column-major


def test_vector_input_with_window_and_decimation():
    d = diagram([blk("r", "repeatingSequenceStair", OutValues=[1, 2, 3, 4, 5]), blk("k", "constant", Value=[1, 10]),
                 blk("g", "mult", inputs=2), logged(SaveFormat="Array", Decimation=2, MaxDataPoints=2)],
                [wire("r", "g", 0, 0), wire("k", "g", 0, 1), wire("g", "w")], duration=0.5)
    # steps 0..5 play 1 2 3 4 5 1; decimation keeps 0, 2, 4 -> 1, 3, 5; window keeps 3, 5
    assert run(d)["workspace"]["y"] == [[3, 30], [5, 50]]


# ----------------------------------------------------------------------------- stopSimulation

def test_stop_doc_example_ends_after_the_first_nonzero_step():
    d = diagram([blk("s", "step", Time=0.45), blk("stop", "stopSimulation"), logged(SaveFormat="Array")],
                [wire("s", "stop"), wire("s", "w")], dt=0.1, duration=1.0)
    res = run(d)
    assert res["time"] == [0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5]
    assert res["workspace"]["y"] == [[0.0]] * 5 + [[1.0]]
    assert res["stats"]["steps"] == 6


def test_stop_at_the_first_sample_keeps_it():
    d = diagram([blk("c", "constant", Value=2), blk("stop", "stopSimulation"), logged(SaveFormat="Array")],
                [wire("c", "stop"), wire("c", "w")], duration=1.0)
    res = run(d)
    assert res["time"] == [0.0] and res["workspace"]["y"] == [[2.0]]


def test_stop_on_any_vector_element_and_on_nan():
    d = diagram([blk("r", "repeatingSequenceStair", OutValues=[0, 0, 0, 1]), blk("k", "constant", Value=[0, 0, 1]),
                 blk("g", "mult", inputs=2), blk("stop", "stopSimulation"), blk("c", "clock"),
                 logged(SaveFormat="Array")],
                [wire("r", "g", 0, 0), wire("k", "g", 0, 1), wire("g", "stop"), wire("c", "w")], duration=1.0)
    assert run(d)["workspace"]["y"] == [[0.0], [0.1], [0.2], [0.30000000000000004]]
    d = diagram([blk("k", "constant", Value="nan"), blk("stop", "stopSimulation"), blk("c", "clock"),
                 logged(SaveFormat="Array")], [wire("k", "stop"), wire("c", "w")], duration=1.0)
    assert run(d)["workspace"]["y"] == [[0.0]]


def test_unconnected_stop_never_fires():
    d = diagram([blk("stop", "stopSimulation", inputs=1), blk("c", "clock"), logged(SaveFormat="Array")],
                [wire("c", "w")], duration=0.5)
    assert len(run(d)["time"]) == 6


def test_stop_with_decimated_recorder_and_two_stops():
    # the earlier of two stop conditions wins; the stopping step is logged only if decimation keeps it
    d = diagram([blk("c", "clock"), blk("s1", "step", Time=0.75), blk("s2", "step", Time=0.35),
                 blk("x1", "stopSimulation"), blk("x2", "stopSimulation"), logged(SaveFormat="Array", Decimation=2)],
                [wire("s1", "x1"), wire("s2", "x2"), wire("c", "w")], duration=1.0)
    res = run(d)
    assert len(res["time"]) == 5  # t = 0 .. 0.4
    assert res["workspace"]["y"] == [[0.0], [0.2], [0.4]]


def test_stop_block_accepts_no_params_beyond_layout():
    d = diagram([blk("s", "step", Time=0.15), blk("stop", "stopSimulation", x=10, y=20), logged(SaveFormat="Array")],
                [wire("s", "stop"), wire("s", "w")], duration=1.0)
    assert run(d)["workspace"]["y"] == [[0.0], [0.0], [1.0]]


# ----------------------------------------------------------------------------- scope / display / terminator

def test_scope_one_series_per_element_nan_for_unconnected():
    d = diagram([blk("c", "clock"), blk("v", "constant", Value=[5, 6]), blk("sc", "scope", inputs=3)],
                [wire("c", "sc", 0, 0), wire("v", "sc", 0, 2)], duration=0.2)
    s = run(d)["scopes"]["sc"]
    assert s["type"] == "scope" and s["time"] == [0.0, 0.1, 0.2]
    vals = np.asarray(s["values"], dtype=float)
    assert vals.shape == (3, 4)
    assert vals[:, 0].tolist() == [0.0, 0.1, 0.2] and np.isnan(vals[:, 1]).all()
    assert vals[:, 2:].tolist() == [[5, 6]] * 3


def test_display_keeps_the_latest_sample():
    res = clock_into(blk("w", "display"))
    assert res["scopes"]["w"]["value"] == [1.0] and res["scopes"]["w"]["time"] == 1.0
    assert res["scopes"]["w"]["label"] == "Display"


def test_display_decimation_counts_from_one():
    # nflow counts the step before testing: Decimation 3 samples steps 2, 5, 8 (0-based) of 0..10
    res = clock_into(blk("w", "display", Decimation=3, Label="t"))
    assert res["scopes"]["w"]["value"] == [0.8] and res["scopes"]["w"]["label"] == "t"
    res = clock_into(blk("w", "display", Decimation=20))  # never sampled: NaN
    assert math.isnan(res["scopes"]["w"]["value"][0]) and res["scopes"]["w"]["time"] is None


def test_display_vector_and_unconnected():
    d = diagram([blk("v", "constant", Value=[1, 2, 3]), blk("w", "display")], [wire("v", "w")], duration=0.1)
    assert run(d)["scopes"]["w"]["value"] == [1, 2, 3]
    out = run(diagram([blk("w", "display", inputs=1)], [], duration=0.1))["scopes"]["w"]["value"]
    assert len(out) == 1 and math.isnan(out[0])


def test_terminator_does_nothing():
    d = diagram([blk("c", "clock"), blk("t", "terminator"), record()], [wire("c", "t"), wire("c", "w")],
                duration=0.2)
    res = run(d)
    assert res["workspace"]["y"] == [[0.0], [0.1], [0.2]] and res["scopes"] == {}
