"""Sinks library, second batch: xyScope and xyzScope (recorded under result 'scopes') and
labelSink (routing only; its values are checked through labelSource in
test_source_more.py)."""
from __future__ import annotations

import math

import numpy as np
import orjson

import nflow_compat as nc
from tests.util import blk, diagram, record, run, wire


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
