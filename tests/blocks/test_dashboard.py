"""Dashboard library, headless: observers record the signal their Binding names (latest value,
or the whole series for dashboardScope); controls are interactive and compute nothing,
except the resting value on output ports an instance declares. Expected values are worked
out by hand on the grid t_k = k*dt."""
from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from nflow_compat.blocks import supported_types
from nflow_compat.blocks.dashboard import CONTROLS, OBSERVERS
from nflow_compat.errors import DiagramError
from tests.util import blk, diagram, record, run, series, wire

LATEST = [t for t in OBSERVERS if t != "dashboardScope"]
FAST = settings(max_examples=40, deadline=None)


def bind(block_path, port=None, **extra):
    b = dict({"kind": "signal", "blockPath": block_path}, **extra)
    if port is not None:
        b["outputPortIndex"] = port
    return b


def observe(kind, binding, blocks=(), connections=(), dt=0.1, duration=0.3, **kw):
    """A clock 'c' plus ``blocks``, and observer 'o' of ``kind`` with ``binding``."""
    d = diagram([blk("c", "clock"), *blocks, blk("o", kind, Binding=binding)], list(connections),
                dt=dt, duration=duration, **kw)
    return run(d)


def failure(kind, binding, blocks=()):
    with pytest.raises(DiagramError) as info:
        observe(kind, binding, blocks)
    err = info.value
    assert err.block == "o" and err.param == "Binding"
    return err


# ----------------------------------------------------------------------------- library

def test_all_twenty_blocks_run():
    types = {row["type"] for row in supported_types()}
    assert set(OBSERVERS) | set(CONTROLS) <= types
    assert len(OBSERVERS) + len(CONTROLS) == 20


# ----------------------------------------------------------------------------- latest-value observers

@pytest.mark.parametrize("kind", LATEST)
def test_observer_keeps_the_latest_value_of_the_bound_signal(kind):
    res = observe(kind, bind("c"), duration=0.3)
    assert res["scopes"]["o"] == {"type": kind, "time": 0.30000000000000004, "value": [0.30000000000000004]}
    assert res["workspace"] == {} and res["warnings"] == []


@pytest.mark.parametrize("kind", LATEST)
def test_observer_samples_every_step_no_decimation_and_stops_with_the_run(kind):
    # stop after the step where t >= 0.45 (t = 0.5): the observer's last sample is that step
    blocks = [blk("s", "step", Time=0.45), blk("x", "stopSimulation")]
    res = observe(kind, bind("c"), blocks, [wire("s", "x")], duration=1.0)
    assert res["scopes"]["o"]["time"] == 0.5 and res["scopes"]["o"]["value"] == [0.5]


def test_observer_sees_this_steps_algebraic_value():
    # AFTER_STEP runs after ALGEBRAIC: a gain of the clock is already the current step's value
    res = observe("dashboardDisplay", bind("g"), [blk("g", "gain", Gain=3)], [wire("c", "g")], dt=0.5,
                  duration=1.0)
    assert res["scopes"]["o"]["value"] == [3.0] and res["scopes"]["o"]["time"] == 1.0


def test_observer_of_a_vector_signal_shows_every_element():
    res = observe("dashboardGauge", bind("v"), [blk("v", "constant", Value=[1, -2, 3.5])])
    assert res["scopes"]["o"]["value"] == [1.0, -2.0, 3.5]


def test_output_port_index_is_one_based():
    # demux splits [3, 7]: port 1 carries 3, port 2 carries 7
    blocks = [blk("v", "constant", Value=[3, 7]), blk("d", "demux", outputs=2)]
    conns = [wire("v", "d")]
    assert observe("dashboardDisplay", bind("d", 2), blocks, conns)["scopes"]["o"]["value"] == [7.0]
    assert observe("dashboardDisplay", bind("d", 1), blocks, conns)["scopes"]["o"]["value"] == [3.0]
    assert observe("dashboardDisplay", bind("d"), blocks, conns)["scopes"]["o"]["value"] == [3.0]  # default 1


@pytest.mark.parametrize("port, value", [(0, 3.0), (-4, 3.0), (2.9, 7.0), ("2", 7.0), ([2], 7.0), (None, 3.0)])
def test_output_port_index_reads_like_nflow(port, value):
    # nflow: max(1, outputPortIndex) - 1, the index an int
    blocks = [blk("v", "constant", Value=[3, 7]), blk("d", "demux", outputs=2)]
    binding = dict(bind("d"), outputPortIndex=port)
    assert observe("dashboardLamp", binding, blocks, [wire("v", "d")])["scopes"]["o"]["value"] == [value]


@pytest.mark.parametrize("path", [["c"], ["", "c"], ["c", ""], ["c", 7]])
def test_block_path_as_a_list_of_one_id(path):
    # jsonencode writes a 1x1 cell as a one-element array; nflow skips empty and non-text entries
    assert observe("dashboardQuarterGauge", bind(path))["scopes"]["o"]["value"] == [0.30000000000000004]


def test_binding_to_a_block_declared_later_and_json_output():
    d = diagram([blk("o", "dashboardLinearGauge", Binding=bind("k")), blk("k", "constant", Value="nan")], [],
                duration=0.1)
    out = orjson.loads(nc.simulate_json(orjson.dumps(d)))
    assert out["scopes"]["o"] == {"type": "dashboardLinearGauge", "time": 0.1, "value": [None]}


def test_observers_do_not_change_the_simulation():
    blocks = [blk("c", "clock"), record()]
    conns = [wire("c", "w")]
    plain = run(diagram(blocks, conns, duration=0.5))
    watched = run(diagram(blocks + [blk(f"o{k}", kind, Binding=bind("c")) for k, kind in enumerate(OBSERVERS)],
                          conns, duration=0.5))
    assert watched["workspace"] == plain["workspace"] and watched["time"] == plain["time"]
    assert set(watched["scopes"]) == {f"o{k}" for k in range(len(OBSERVERS))}


# ----------------------------------------------------------------------------- dashboardScope

def test_dashboard_scope_keeps_the_whole_series_with_time():
    res = observe("dashboardScope", bind("c"), duration=0.3)
    assert res["scopes"]["o"] == {"type": "dashboardScope", "time": [0.0, 0.1, 0.2, 0.30000000000000004],
                                  "values": [[0.0], [0.1], [0.2], [0.30000000000000004]]}


def test_dashboard_scope_of_a_vector_signal_one_column_per_element():
    blocks = [blk("r", "ramp", slope=2), blk("k", "constant", Value=[1, -1]), blk("m", "mult", inputs=2)]
    res = observe("dashboardScope", bind("m"), blocks, [wire("r", "m", 0, 0), wire("k", "m", 0, 1)], dt=0.5,
                  duration=1.0)
    assert res["scopes"]["o"]["values"] == [[0.0, -0.0], [1.0, -1.0], [2.0, -2.0]]
    assert res["scopes"]["o"]["time"] == [0.0, 0.5, 1.0]


def test_dashboard_scope_is_reset_between_runs():
    plan = nc.compile_plan(diagram([blk("c", "clock"), blk("o", "dashboardScope", Binding=bind("c"))], [],
                                   duration=0.2))
    first, second = plan.run(), plan.run()
    assert first["scopes"]["o"]["time"].tolist() == second["scopes"]["o"]["time"].tolist() == [0.0, 0.1, 0.2]
    assert second["scopes"]["o"]["values"].shape == (3, 1)


@FAST
@given(values=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=8), steps=st.integers(0, 12))
def test_dashboard_scope_records_what_to_workspace_records(values, steps):
    d = diagram([series(values, "q"), blk("o", "dashboardScope", Binding=bind("q")), record()],
                [wire("q", "w")], dt=1.0, duration=float(steps) if steps else 0.5)
    res = run(d)
    assert res["scopes"]["o"]["values"] == res["workspace"]["y"]
    assert res["scopes"]["o"]["time"] == res["time"]


# ----------------------------------------------------------------------------- unbound / bad bindings

@pytest.mark.parametrize("kind", OBSERVERS)
@pytest.mark.parametrize("binding", [None, {}, []])
def test_unbound_observer_records_nothing_and_warns(kind, binding):
    params = {} if binding is None else {"Binding": binding}
    res = run(diagram([blk("c", "clock"), blk("o", kind, params)], [], duration=0.2))
    entry = res["scopes"]["o"]
    assert entry["type"] == kind and entry["time"] in (None, [])
    assert entry.get("value", entry.get("values")) == []
    assert any("'o'" in w and "not bound" in w for w in res["warnings"])


def test_unknown_block_is_unresolved():
    err = failure("dashboardGauge", bind("nope"))
    assert err.code == "binding_unresolved" and "'nope'" in err.message and err.path == "/blocks/1/params/Binding"


def test_unknown_block_suggests_a_close_id():
    err = failure("dashboardGauge", bind("clok"), [blk("clock1", "clock")])
    assert "did you mean 'clock1'?" in err.message


def test_port_beyond_the_block_outputs_is_unresolved():
    err = failure("dashboardDisplay", bind("c", 2))
    assert err.code == "binding_unresolved" and "outputPortIndex 2" in err.message and "1 output port" in err.message


def test_block_without_outputs_is_unresolved():
    err = failure("dashboardDisplay", bind("w"), [blk("w", "terminator", inputs=1)])
    assert err.code == "binding_unresolved"


def test_subsystem_path_is_not_supported_yet():
    err = failure("dashboardScope", bind(["c", "inner"]))
    assert err.code == "binding_unsupported" and "subsystem" in err.message


@pytest.mark.parametrize("binding", [{"blockPath": "c"}, {"kind": "param", "blockPath": "c"}])
def test_only_signal_bindings_are_read(binding):
    err = failure("dashboardLamp", binding)
    assert err.code == "binding_unsupported" and "'signal'" in err.message


@pytest.mark.parametrize("binding", [{"kind": "signal"}, {"kind": "signal", "blockPath": ""},
                                     {"kind": "signal", "blockPath": []}, {"kind": "signal", "blockPath": 3}])
def test_missing_block_path_is_unresolved(binding):
    assert failure("dashboardMultiStateImage", binding).code == "binding_unresolved"


@pytest.mark.parametrize("binding, code", [("c", "param_type"), (7, "param_type"),
                                           (bind("c", "two"), "param_type"), (bind("c", "inf"), "param_type"),
                                           (bind("c", True), "param_type")])
def test_malformed_binding_is_a_type_error(binding, code):
    assert failure("dashboardHalfGauge", binding).code == code


# ----------------------------------------------------------------------------- controls

@pytest.mark.parametrize("kind", CONTROLS)
def test_control_without_ports_does_nothing(kind):
    res = run(diagram([blk("c", "clock"), blk("k", kind, Binding={"kind": "param", "blockPath": "c"}), record()],
                      [wire("c", "w")], duration=0.2))
    assert res["scopes"] == {} and res["workspace"]["y"] == [[0.0], [0.1], [0.2]] and res["warnings"] == []


@pytest.mark.parametrize("kind, params, value", [
    ("dashboardEdit", {}, 0.0),
    ("dashboardKnob", {}, 0.0),
    ("dashboardKnob", {"Limits": [5, -1, 50]}, 5.0),
    ("dashboardSlider", {"Limits": [-2, 1, 2]}, -2.0),
    ("dashboardPushButton", {"OnValue": 9}, 0.0),
    ("dashboardCallbackButton", {"OnValue": 9}, 0.0),
    ("dashboardCheckBox", {}, 0.0),
    ("dashboardCheckBox", {"Values": [2, 9]}, 2.0),
    ("dashboardRotarySwitch", {"States": [{"Value": 4, "Label": "a"}, {"Value": 8, "Label": "b"}]}, 4.0),
    ("dashboardRadioButton", {}, 0.0),
    ("dashboardComboBox", {"States": {"Value": 6, "Label": "only"}}, 6.0),   # jsonencode of a 1x1 struct
    ("dashboardRockerSwitch", {"States": [{"Value": "k*2", "Label": "a"}]}, 3.0),
    ("dashboardSliderSwitch", {"States": [{"Value": [1.5], "Label": "a"}]}, 1.5),
    ("dashboardToggleSwitch", {}, 0.0),
])
def test_control_output_ports_carry_the_resting_value(kind, params, value):
    d = diagram([blk("k", kind, params, outputs=2), record(), record("w2", "z")],
                [wire("k", "w"), wire("k", "w2", 1, 0)], duration=0.1, variables={"k": 1.5})
    res = run(d)
    assert res["workspace"]["y"] == [[value], [value]] and res["workspace"]["z"] == [[value], [value]]


@pytest.mark.parametrize("states", [[], [{"Label": "no value"}], "On", [{"Value": "1 +", "Label": "a"}], [{"Value": "[1 2]"}],
                                    [{"Value": {"a": 1}}]])
def test_bad_states_fail_only_when_the_value_is_needed(states):
    with pytest.raises(DiagramError) as info:
        run(diagram([blk("k", "dashboardToggleSwitch", States=states, outputs=1)], [], duration=0.1))
    assert info.value.code in ("param_type", "bad_expression") and info.value.param == "States"
    # without output ports nflow never reads States: no error
    assert run(diagram([blk("k", "dashboardToggleSwitch", States=states)], [], duration=0.1))["status"] == "ok"


def test_control_params_from_the_page_validate():
    d = diagram([blk("b", "dashboardCallbackButton", ButtonText="Go", ClickFcn="disp(1)", OnValue=2,
                     PressDelay="500", RepeatInterval="0", AutoActivate=False),
                 blk("p", "dashboardPushButton", ButtonType="Latch", OnValue="1", IconOnColor=[0, 0.5, 0]),
                 blk("g", "dashboardGauge", Binding=bind("b"), Limits=[0, 10, 100],
                     ScaleColors=[{"Min": 0, "Max": 50, "Color": [0, 1, 0]}]),
                 blk("s", "dashboardScope", TimeSpan=10, Colors=[[1, 0, 0]], YLimits=[-1, 1])],
                [], duration=0.1)
    with pytest.raises(DiagramError) as info:   # the button has no output port to bind to
        run(d)
    assert info.value.code == "binding_unresolved" and info.value.block == "g"
    d["blocks"][2]["params"]["Binding"] = None
    assert run(d)["scopes"]["g"]["value"] == []
