"""Sinks library handlers: toWorkspace (SaveFormats, Decimation, MaxDataPoints, NaN for an
unconnected input, vectors, complex inputs), stopSimulation, scope, display, terminator,
xyScope and xyzScope (recorded under result 'scopes'), labelSink (routing only; its values are
checked through labelSource in tests/blocks/test_source.py) and fileSink. Expected values are
worked out by hand on the grid t_k = k*dt."""
from __future__ import annotations

import math

import numpy as np
import orjson
import pytest
from hypothesis import given, settings, strategies as st

import nflow_compat as nc
from tests.csv_files import error, played, sink_diagram
from tests.complex_signals import run_blocks, z_source
from tests.util import blk, constant, diagram, record, run, wire

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


def scopes(blocks, conns, **kw):
    return run(diagram(blocks, conns, **kw))["scopes"]


def test_xy_scope_records_both_inputs_with_time():
    s = scopes([blk("r", "ramp", slope=2), blk("c", "clock"), blk("xy", "xyScope")],
               [wire("r", "xy", 0, 0), wire("c", "xy", 0, 1)], duration=0.3)["xy"]
    t = [k * 0.1 for k in range(4)]
    assert s["type"] == "xyScope"
    assert s["time"] == t and s["y"] == t
    assert np.allclose(s["x"], [2 * v for v in t], atol=1e-15)


def test_xy_scope_circle():
    s = scopes([blk("c", "sine", Phase=math.pi / 2), blk("s", "sine"), blk("xy", "xyScope")],
               [wire("c", "xy", 0, 0), wire("s", "xy", 0, 1)], dt=0.125, duration=1.0)["xy"]
    x, y, t = np.array(s["x"]), np.array(s["y"]), np.array(s["time"])
    assert np.allclose(x ** 2 + y ** 2, 1.0, atol=1e-14)
    assert np.allclose(x, np.cos(2 * math.pi * t), atol=1e-14) and np.allclose(y, np.sin(2 * math.pi * t), atol=1e-14)


def test_xy_scope_unconnected_inputs_record_nan_and_null_in_json():
    d = diagram([blk("c", "constant", Value=4), blk("xy", "xyScope")], [wire("c", "xy", 0, 1)], duration=0.1)
    s = run(d)["scopes"]["xy"]
    assert all(math.isnan(v) for v in s["x"]) and s["y"] == [4.0, 4.0]
    text = orjson.loads(nc.simulate_json(orjson.dumps(d)))
    assert text["scopes"]["xy"]["x"] == [None, None]


def test_xy_scope_keeps_element_zero_of_a_vector():
    s = scopes([blk("c", "constant", Value=[7, 8, 9]), blk("k", "constant", Value=-1), blk("xy", "xyScope")],
               [wire("c", "xy", 0, 0), wire("k", "xy", 0, 1)], duration=0.1)["xy"]
    assert s["x"] == [7.0, 7.0] and s["y"] == [-1.0, -1.0]


def test_xyz_scope_three_series():
    s = scopes([blk("a", "clock"), blk("b", "ramp", slope=-1), blk("c", "constant", Value=[3, 4]), blk("p", "xyzScope")],
               [wire("a", "p", 0, 0), wire("b", "p", 0, 1), wire("c", "p", 0, 2)], duration=0.2)["p"]
    assert s["type"] == "xyzScope" and s["time"] == [0.0, 0.1, 0.2]
    assert s["x"] == [0.0, 0.1, 0.2] and s["y"] == [0.0, -0.1, -0.2] and s["z"] == [3.0, 3.0, 3.0]


def test_xyz_scope_unconnected_ports_and_stop():
    # a stopSimulation ends the run after t = 0.2; the scope has recorded that step too
    s = scopes([blk("st", "step", Time=0.15), blk("stop", "stopSimulation"), blk("c", "clock"), blk("p", "xyzScope")],
               [wire("st", "stop"), wire("c", "p", 0, 1)], duration=1.0)["p"]
    assert s["time"] == [0.0, 0.1, 0.2] and s["y"] == [0.0, 0.1, 0.2]
    assert all(math.isnan(v) for v in s["x"] + s["z"])


def test_scopes_restart_on_rerun_and_sit_beside_workspace():
    d = diagram([blk("c", "clock"), blk("xy", "xyScope"), record()],
                [wire("c", "xy", 0, 0), wire("c", "xy", 0, 1), wire("c", "w")], duration=0.2)
    plan = nc.compile_plan(d)
    plan.run()
    res = plan.run()
    assert res["scopes"]["xy"]["x"].tolist() == [0.0, 0.1, 0.2]
    assert res["workspace"]["y"].tolist() == [[0.0], [0.1], [0.2]]


def test_label_sink_alone_records_nothing():
    res = run(diagram([blk("c", "constant", Value=1), blk("ls", "labelSink", GotoTag="q")], [wire("c", "ls")],
                      duration=0.1))
    assert res["workspace"] == {} and res["scopes"] == {} and res["warnings"] == []


def test_label_sink_unconnected_is_accepted():
    res = run(diagram([blk("ls", "labelSink"), blk("c", "constant"), record()], [wire("c", "w")], duration=0.1))
    assert res["workspace"]["y"] == [[1.0], [1.0]]


def test_xy_scopes_are_listed_as_supported():
    from nflow_compat.blocks import supported_types
    names = {row["type"] for row in supported_types()}
    assert {"xyScope", "xyzScope", "labelSink", "labelSource"} <= names


# --------------------------------------------------------------------------------------------------
# How toWorkspace records a complex input ({"real", "imag"} in place of the matrix).
# --------------------------------------------------------------------------------------------------

# ----------------------------------------------------------------------------- toWorkspace

def recorded(save_format, **params):
    blocks, conns = z_source([1.0, -2.0], [0.5, 0.0])
    blocks.append(blk("w", "toWorkspace", VariableName="y", SaveFormat=save_format, **params))
    return run_blocks(blocks, conns + [wire("z", "w")], duration=0.3)["workspace"]["y"]


def test_to_workspace_array_of_a_complex_signal():
    assert recorded("Array") == {"real": [[1.0, -2.0]] * 4, "imag": [[0.5, 0.0]] * 4}


def test_to_workspace_structures_of_a_complex_signal():
    y = recorded("Structure With Time")
    assert y["time"] == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert y["signals"] == {"values": {"real": [[1.0, -2.0]] * 4, "imag": [[0.5, 0.0]] * 4},
                            "dimensions": 2, "label": ""}
    assert y["blockName"] == "w"
    y = recorded("Structure")
    assert y["time"] == [] and y["signals"]["dimensions"] == 2


def test_to_workspace_complex_decimation_and_window():
    y = recorded("Array", Decimation=2, MaxDataPoints=1)
    assert y == {"real": [[1.0, -2.0]], "imag": [[0.5, 0.0]]}


def test_to_workspace_complex_json_text_and_non_finite_parts():
    blocks, conns = z_source("nan", "inf")     # strings: JSON has no NaN / Infinity literals
    d = diagram(blocks + [record()], conns + [wire("z", "w")], duration=0.1)
    out = orjson.loads(nc.simulate_json(orjson.dumps(d)))
    assert out["workspace"]["y"] == {"real": [[None], [None]], "imag": [[None], [None]]}
    text = nc.simulate_json(orjson.dumps(d), allow_nan=True)
    assert '"imag":[[Infinity],[Infinity]]' in text.replace(" ", "")


def test_to_workspace_real_samples_of_a_sometimes_complex_signal_get_imaginary_zero():
    # the switch passes its complex top input while t < 0.15, then the real bottom one
    blocks, conns = z_source(1.0, 2.0)
    blocks += [blk("c", "ramp", slope=-1.0, start=0.0), constant("k", 5.0),
               blk("b", "switch", Threshold=-0.15), record()]
    conns += [wire("z", "b", 0, 0), wire("c", "b", 0, 1), wire("k", "b", 0, 2), wire("b", "w")]
    y = run_blocks(blocks, conns, duration=0.3)["workspace"]["y"]
    assert y == {"real": [[1.0], [1.0], [5.0], [5.0]], "imag": [[2.0], [2.0], [0.0], [0.0]]}


def test_real_signals_are_still_plain_matrices():
    y = run_blocks([constant("c", [1.0, 2.0]), record()], [wire("c", "w")])["workspace"]["y"]
    assert y == [[1.0, 2.0]] * 2


# --------------------------------------------------------------------------------------------------
# fileSink (issue 4): nflow's handler writing CSV files in the base directory.
# --------------------------------------------------------------------------------------------------

# ----------------------------------------------------------------------------- fileSink

def test_sink_ignores_path_as_nflows_handler_does(tmp_path):
    res = nc.simulate(sink_diagram(blk("s", "constant", Value=1), "", path="elsewhere.csv", duration=0.1),
                      base_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["output.csv"]
    assert any("'path' is not read" in w for w in res["warnings"])


def test_sink_writes_nflows_csv(tmp_path):
    res = nc.simulate(sink_diagram(blk("s", "ramp", slope=2)), base_dir=tmp_path)
    assert (tmp_path / "out.csv").read_text() == "t,fs\n0,0\n0.1,0.2\n0.2,0.4\n0.3,0.6\n"
    assert res["files"] == {"fs": {"file": "out.csv", "columns": ["t", "fs"], "rows": 4, "written": True}}
    assert res["warnings"] == []


def test_sink_vector_header_and_15_significant_digits(tmp_path):
    nc.simulate(sink_diagram(blk("s", "constant", Value=[1 / 3, -2e-20, 1e21]), duration=0.1), base_dir=tmp_path)
    assert (tmp_path / "out.csv").read_text() == \
        "t,fs_0,fs_1,fs_2\n0,0.333333333333333,-2e-20,1e+21\n0.1,0.333333333333333,-2e-20,1e+21\n"


def test_sink_non_finite_values(tmp_path):
    nc.simulate(sink_diagram(blk("s", "constant", Value=[float("inf"), float("-inf")]), duration=0.1), base_dir=tmp_path)
    assert (tmp_path / "out.csv").read_text().splitlines()[1] == "0,inf,-inf"


def test_sink_unconnected_input_writes_zeros(tmp_path):
    d = diagram([blk("fs", "fileSink", FileName="z.csv")], [], duration=0.1)
    nc.simulate(d, base_dir=tmp_path)
    assert (tmp_path / "z.csv").read_text() == "t,fs\n0,0\n0.1,0\n"


def test_sink_file_name_fallbacks(tmp_path):
    d = diagram([blk("c", "constant", Value=1), blk("a", "fileSink", FileName="", Filename="alt.csv"),
                 blk("b", "fileSink", FileName="")], [wire("c", "a"), wire("c", "b")], duration=0.1)
    res = nc.simulate(d, base_dir=tmp_path)
    assert (tmp_path / "alt.csv").read_text() == "t,a\n0,1\n0.1,1\n"
    assert (tmp_path / "output.csv").read_text() == "t,b\n0,1\n0.1,1\n"
    assert res["files"]["b"]["file"] == "output.csv"


def test_sink_stops_with_the_run(tmp_path):
    d = diagram([blk("s", "step", Time=0.25), blk("stop", "stopSimulation"), blk("fs", "fileSink")],
                [wire("s", "stop"), wire("s", "fs")], duration=1.0)
    nc.simulate(d, base_dir=tmp_path)
    assert (tmp_path / "output.csv").read_text().splitlines()[-1] == "0.3,1"


def test_sink_writes_nothing_when_the_run_fails(tmp_path):
    (tmp_path / "out.csv").write_text("old contents\n")
    d = diagram([blk("c", "constant", Value="inf"), blk("i", "integrator"), blk("fs", "fileSink", FileName="out.csv"),
                 blk("fs2", "fileSink", FileName="new.csv")],
                [wire("c", "i"), wire("i", "fs"), wire("i", "fs2")], duration=1.0, solver="ode45")
    err = error(lambda: nc.simulate(d, base_dir=tmp_path))
    assert err.code == "non_finite_state"
    assert (tmp_path / "out.csv").read_text() == "old contents\n"     # not truncated, not partial
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]  # no new file, no temporary left


def test_sink_without_a_base_directory_writes_nothing_and_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = nc.simulate(sink_diagram(blk("s", "constant", Value=1)))
    assert list(tmp_path.iterdir()) == []
    assert res["files"]["fs"]["written"] is False and any("not written" in w for w in res["warnings"])


def test_sink_unwritable_directory_is_a_warning(tmp_path):
    res = nc.simulate(sink_diagram(blk("s", "constant", Value=1), "no/such/dir.csv"), base_dir=tmp_path)
    assert res["status"] == "ok" and res["files"]["fs"]["written"] is False
    assert any("cannot write" in w for w in res["warnings"])


def test_sink_header_quotes_an_id_with_a_comma(tmp_path):
    nc.simulate(sink_diagram(blk("s", "constant", Value=1), sink_id='a,"b"', duration=0.1), base_dir=tmp_path)
    assert (tmp_path / "out.csv").read_text().splitlines()[0] == 't,"a,""b"""'


def test_sink_to_source_round_trip(tmp_path):
    nc.simulate(sink_diagram(blk("s", "sine", Amplitude=2, Frequency=1), duration=1.0), base_dir=tmp_path)
    y, res = played({"FileName": "out.csv"}, base_dir=tmp_path, duration=1.0)
    expected = 2 * np.sin(2 * np.pi * np.asarray(res["time"]))
    assert np.allclose(y[:, 0], expected, rtol=0, atol=1e-14)


def test_plan_run_twice_rewrites_the_file(tmp_path):
    plan = nc.compile_plan(sink_diagram(blk("s", "ramp", slope=1)), base_dir=tmp_path)
    plan.run()
    first = (tmp_path / "out.csv").read_text()
    plan.run()
    assert (tmp_path / "out.csv").read_text() == first
