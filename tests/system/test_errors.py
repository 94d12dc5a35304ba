"""Every error of docs/CONTRACT.md §5: a typed NFlowError with a stable code, a message and a JSON
pointer - never a traceback, a hang or a partial result."""
import pytest

import nflow_compat as nc
from nflow_compat import DiagramError, SimulationError
from tests.util import blk, diagram, record, wire


def good():
    return diagram([blk("c", "constant", Value=2), blk("g", "gain", Gain=3), record()],
                   [wire("c", "g"), wire("g", "w")])


def raises(d, cls, code):
    with pytest.raises(cls) as info:
        nc.simulate(d)
    err = info.value
    assert err.code == code, err
    assert err.message
    return err


def test_the_baseline_runs():
    assert nc.simulate(good())["workspace"]["y"] == [[6.0]] * 11


def test_not_json():
    with pytest.raises(DiagramError) as info:
        nc.simulate_json("{not json")
    assert info.value.code == "bad_json"
    assert info.value.path == ""


def test_diagram_must_be_an_object():
    raises([1, 2], DiagramError, "bad_type")


def test_unknown_block_type_suggests_the_closest():
    d = good()
    d["blocks"][1]["type"] = "gian"
    err = raises(d, DiagramError, "unknown_block_type")
    assert "did you mean 'gain'" in err.message
    assert err.path == "/blocks/1/type" and err.block == "g"


def test_case_only_typo_is_suggested():
    d = good()
    d["blocks"][1]["type"] = "Gain"
    assert "'gain'" in raises(d, DiagramError, "unknown_block_type").message


def test_missing_block_id():
    d = good()
    del d["blocks"][0]["id"]
    assert raises(d, DiagramError, "missing_id").path == "/blocks/0/id"


def test_duplicate_block_id():
    d = good()
    d["blocks"][1]["id"] = "c"
    err = raises(d, DiagramError, "duplicate_id")
    assert err.path == "/blocks/1/id" and err.block == "c"


def test_connection_to_a_missing_block():
    d = good()
    d["connections"][1]["to"] = "ww"
    err = raises(d, DiagramError, "unknown_block")
    assert err.path == "/connections/1/to" and "did you mean 'w'" in err.message


def test_connection_port_out_of_range():
    d = good()
    d["connections"][0]["toIndex"] = 1
    err = raises(d, DiagramError, "port_out_of_range")
    assert err.path == "/connections/0/toIndex" and "0-based" in err.message
    d = good()
    d["connections"][0]["fromIndex"] = -1
    assert raises(d, DiagramError, "port_out_of_range").path == "/connections/0/fromIndex"


def test_port_index_must_be_whole():
    d = good()
    d["connections"][0]["toIndex"] = 0.5
    raises(d, DiagramError, "bad_port_index")


def test_a_port_driven_twice():
    d = good()
    d["blocks"].append(blk("c2", "constant", Value=1))
    d["connections"].append(wire("c2", "g"))
    err = raises(d, DiagramError, "input_driven_twice")
    assert err.block == "g" and err.path == "/connections/2"


def test_param_of_the_wrong_type():
    d = good()
    d["blocks"][1]["params"]["Gain"] = {"a": 1}
    err = raises(d, DiagramError, "param_type")
    assert err.path == "/blocks/1/params/Gain" and err.param == "Gain" and err.block == "g"


def test_param_vector_where_a_number_goes():
    d = good()
    d["blocks"][1]["params"]["Gain"] = [1, 2]
    raises(d, DiagramError, "param_type")


def test_param_out_of_range_negative_mass():
    d = diagram([blk("m", "Mass", m=-1)], [])
    err = raises(d, DiagramError, "param_range")
    assert err.param == "m" and err.path == "/blocks/0/params/m"


def test_param_enum_with_suggestion():
    d = good()
    d["blocks"][2]["params"]["SaveFormat"] = "array"
    err = raises(d, DiagramError, "param_value")
    assert "did you mean 'Array'" in err.message


def test_misspelled_param_name_is_an_error_with_suggestion():
    d = good()
    d["blocks"][1]["params"] = {"gain": 3}
    err = raises(d, DiagramError, "unknown_param")
    assert "did you mean 'Gain'" in err.message and err.param == "gain"


def test_unrelated_extra_keys_are_ignored():
    d = good()
    d["blocks"][1]["params"]["x_layout_hint"] = 40
    d["blocks"][1]["x"] = 10
    d["connections"][0]["points"] = [[1, 2]]
    assert nc.simulate(d)["workspace"]["y"][0] == [6.0]


def test_expression_over_an_undefined_variable():
    d = good()
    d["blocks"][1]["params"]["Gain"] = "k*2"
    d["variables"] = {"kk": 1}
    err = raises(d, DiagramError, "undefined_variable")
    assert "'k'" in err.message and err.param == "Gain"


def test_bad_expression():
    d = good()
    d["blocks"][1]["params"]["Gain"] = "2 +* 3"
    raises(d, DiagramError, "bad_expression")


def test_algebraic_loop_names_the_blocks():
    # y = 1 + 2*y has no convergent Gauss-Seidel iteration
    d = diagram([blk("one", "constant", Value=1), blk("add", "sum", inputs=2, Inputs="++"),
                 blk("k", "gain", Gain=2), record()],
                [wire("one", "add", 0, 0), wire("k", "add", 0, 1), wire("add", "k"), wire("add", "w")])
    err = raises(d, SimulationError, "algebraic_loop")
    assert "'add'" in err.message and "'k'" in err.message
    assert sorted(err.to_dict()["blocks"]) == ["add", "k"]


@pytest.mark.parametrize("key,value,code", [
    ("sampleTime", 0, "bad_sampletime"), ("sampleTime", -0.1, "bad_sampletime"),
    ("duration", 0, "bad_duration"), ("duration", "-1", "bad_duration"),
    ("sampleTime", "inf", "bad_sampletime")])
def test_non_positive_time_settings(key, value, code):
    d = good()
    d[key] = value
    assert raises(d, DiagramError, code).path == "/" + key


def test_missing_time_settings():
    d = good()
    del d["duration"]
    raises(d, DiagramError, "missing_field")


def test_unknown_solver():
    d = good()
    d["solver"] = "ode23"
    raises(d, DiagramError, "unknown_solver")


@pytest.mark.parametrize("simulink, ours", [("ode15s", "dae"), ("ode23t", "dae"), ("ode23tb", "dae"),
                                            ("ode23", "ode45"), ("ode5", "ode4"), ("ode3", "ode4"), ("ODE15S", "dae")])
def test_a_simulink_solver_name_suggests_ours(simulink, ours):
    d = good()
    d["solver"] = simulink
    err = raises(d, DiagramError, "unknown_solver")
    assert f"did you mean {ours!r}? (for Simulink's {simulink}" in err.message


def test_a_misspelled_solver_suggests_the_closest():
    d = good()
    d["solver"] = "Ode45"
    assert "did you mean 'ode45'?" in raises(d, DiagramError, "unknown_solver").message


def test_step_limit():
    d = good()
    d["sampleTime"], d["duration"] = 1e-9, 1.0
    err = raises(d, SimulationError, "too_many_steps")
    assert "limit" in err.message


def test_step_limit_is_configurable():
    d = good()
    with pytest.raises(SimulationError):
        nc.simulate(d, limits=nc.Limits(max_steps=5))
    assert len(nc.simulate(d, limits=nc.Limits(max_steps=11))["time"]) == 11


def test_pins_of_different_domains():
    d = diagram([blk("m", "Mass"), blk("j", "Inertia")],
                [{"from": "m", "fromPin": "flange", "to": "j", "toPin": "flange"}])
    err = raises(d, DiagramError, "domain_mismatch")
    assert err.path == "/connections/0"


def test_unknown_pin():
    d = diagram([blk("m", "Mass"), blk("f", "Fixed")],
                [{"from": "m", "fromPin": "flange_a", "to": "f", "toPin": "flange"}])
    err = raises(d, DiagramError, "unknown_pin")
    assert "pins: flange" in err.message


def test_unported_blocks_validate_but_do_not_run(monkeypatch):
    # every manifest type has a handler today; a type without one still validates and
    # answers unsupported_block when run (here: gain with its handler taken away)
    from nflow_compat.blocks import REGISTRY
    monkeypatch.delitem(REGISTRY, "gain")
    d = diagram([blk("m", "gain")], [])
    assert len(nc.validate(d).blocks) == 1
    err = raises(d, SimulationError, "unsupported_block")
    assert err.block == "m" and "not ported yet" in err.message


def test_a_circuit_without_ground_names_its_blocks():
    d = diagram([blk("r", "Resistor"), blk("v", "ConstantVoltage")],
                [{"from": "r", "fromPin": "n", "to": "v", "toPin": "n"}, {"from": "r", "fromPin": "p", "to": "v", "toPin": "p"}])
    err = raises(d, DiagramError, "no_ground")
    assert err.block in ("r", "v")


def test_smax_not_above_smin():
    d = diagram([blk("m", "MassWithStopAndFriction", smax=0.1, smin=0.2)], [])
    err = raises(d, DiagramError, "param_range")
    assert err.block == "m" and err.param == "smax"


def test_start_outside_the_stops():
    d = diagram([blk("m", "MassWithStopAndFriction", s0=0.7)], [], solver="dae")
    err = raises(d, SimulationError, "stop_violated_at_init")
    assert err.block == "m" and "smax" in err.message


def test_messages_never_echo_huge_input():
    d = good()
    d["blocks"][1]["type"] = "x" * 1_000_000
    err = raises(d, DiagramError, "unknown_block_type")
    assert len(err.message) <= 500


def test_error_dict_is_jsonable():
    d = good()
    d["blocks"][1]["type"] = "gian"
    with pytest.raises(DiagramError) as info:
        nc.simulate(d)
    out = info.value.to_dict()
    assert out["kind"] == "diagram" and out["code"] == "unknown_block_type" and out["path"] == "/blocks/1/type"


def test_documented_exceptions_validate_but_say_why_they_do_not_run(monkeypatch):
    # NOT_RUNNABLE is empty now that the modelica block runs (rumoca); the mechanism that
    # names the reason stays for any type a drop-in must refuse
    from nflow_compat.blocks import NOT_RUNNABLE, REGISTRY
    assert NOT_RUNNABLE == {}
    monkeypatch.delitem(REGISTRY, "gain")
    monkeypatch.setitem(NOT_RUNNABLE, "gain", "it needs a tool this machine lacks")
    d = {"blocks": [{"id": "x", "type": "gain", "params": {}}], "connections": [],
         "sampleTime": 0.1, "duration": 0.2, "solver": "discrete"}
    nc.validate(d)
    with pytest.raises(nc.SimulationError) as err:
        nc.simulate(d)
    assert err.value.code == "unsupported_block" and err.value.path == "/blocks/0"
    assert "it needs a tool this machine lacks" in err.value.message