"""Normalization of what MATLAB/Nelson jsonencode emits (docs/CONTRACT.md §2), and what Nelson's
``jsonencode`` writes for a diagram built the usual Nelson way runs, with nflow's meaning
(docs/CONTRACT.md, "Nelson's encodings")."""
from __future__ import annotations

import math

import numpy as np
import orjson
import pytest

import nflow_compat as nc
from nflow_compat.cli import main
from nflow_compat.diagram import parse
from tests.util import blk, const, diagram, ramp, record, trace, wire


def test_single_block_and_connection_as_objects():
    d = {"blocks": {"id": "c", "type": "constant", "params": {"Value": 4}}, "connections": [],
         "sampleTime": 0.5, "duration": 1}
    parsed = parse(d)
    assert [b.id for b in parsed.blocks] == ["c"] and parsed.blocks[0].path == "/blocks"
    d = diagram([blk("c", "constant", Value=4), record()], [])
    d["connections"] = wire("c", "w")
    assert nc.simulate(d)["workspace"]["y"][0] == [4.0]


def test_numbers_as_strings_and_one_element_arrays():
    d = diagram([blk("c", "constant", Value="2.5"), blk("g", "gain", Gain=[3]),
                 blk("w", "toWorkspace", VariableName="y", SaveFormat="Array", MaxDataPoints="inf",
                     Decimation="1")],
                [wire("c", "g"), wire("g", "w")], dt="0.1", duration="0.2")
    d["connections"][0]["toIndex"] = "0"
    res = nc.simulate(d)
    assert res["workspace"]["y"] == [[7.5]] * 3


def test_expressions_over_variables():
    d = diagram([blk("c", "constant", Value="[1 2 3]*k"), blk("g", "gain", Gain="k^2 - 1"), record()],
                [wire("c", "g"), wire("g", "w")], variables={"k": 2}, duration=0.1)
    assert nc.simulate(d)["workspace"]["y"][0] == [6.0, 12.0, 18.0]


def test_variables_may_be_strings_and_use_earlier_variables():
    parsed = parse(diagram([blk("g", "gain", Gain="b")], [], variables={"a": "3", "b": "a*2"}))
    assert parsed.blocks[0].params["Gain"] == 6.0


def test_manifest_defaults_are_merged():
    parsed = parse(diagram([blk("w", "toWorkspace")], []))
    p = parsed.blocks[0].params
    assert p["VariableName"] == "simout" and p["SaveFormat"] == "Structure With Time"
    assert p["MaxDataPoints"] == float("inf") and p["Decimation"] == 1.0


def test_string_params_stay_strings():
    parsed = parse(diagram([blk("w", "toWorkspace", VariableName="k")], [], variables={"k": 1}))
    assert parsed.blocks[0].params["VariableName"] == "k"


def test_cellstr_of_one_string_is_a_string():
    parsed = parse(diagram([blk("w", "toWorkspace", SaveFormat=["Array"])], []))
    assert parsed.blocks[0].params["SaveFormat"] == "Array"


def test_matrix_param_from_rows_and_from_text():
    d = diagram([blk("c", "constant", Value=[[1, 2], [3, 4]])], [])
    assert np.array_equal(parse(d).blocks[0].params["Value"], [[1, 2], [3, 4]])
    d = diagram([blk("c", "constant", Value="[1 2; 3 4]")], [])
    assert np.array_equal(parse(d).blocks[0].params["Value"], [[1, 2], [3, 4]])


def test_column_vector_becomes_a_vector():
    d = diagram([blk("c", "constant", Value=[[1], [2], [3]])], [])
    assert parse(d).blocks[0].params["Value"].tolist() == [1, 2, 3]


def test_empty_params_encodings():
    for empty in ({}, [], None):
        d = diagram([dict(blk("g", "gain"), params=empty)], [])
        assert parse(d).blocks[0].params["Gain"] == 2.0


def test_port_counts_default_to_the_manifest():
    parsed = parse(diagram([{"id": "g", "type": "gain"}], []))
    assert (parsed.blocks[0].inputs, parsed.blocks[0].outputs) == (1, 1)


def test_numeric_ids_are_accepted():
    d = diagram([blk(1, "constant", Value=1), record()], [{"from": 1, "to": "w", "fromIndex": 0, "toIndex": 0}])
    assert nc.simulate(d)["workspace"]["y"][0] == [1.0]


def test_missing_connection_indices_mean_port_zero():
    d = diagram([blk("c", "constant", Value=3), record()], [{"from": "c", "to": "w"}])
    assert nc.simulate(d)["workspace"]["y"][0] == [3.0]


def test_sample_count_follows_the_grid_rule():
    # N = floor(duration/dt + 1e-9) + 1
    assert parse(diagram([], [], dt=0.1, duration=0.2)).n_samples == 3
    assert parse(diagram([], [], dt=0.1, duration=0.3)).n_samples == 4
    assert parse(diagram([], [], dt=0.1, duration=0.35)).n_samples == 4
    assert parse(diagram([], [], dt=0.02, duration=2.0)).n_samples == 101


def test_time_grid_is_a_product_not_a_sum():
    d = diagram([blk("c", "clock"), record()], [wire("c", "w")], dt=0.1, duration=3.0)
    res = nc.simulate(d)
    assert res["time"] == [k * 0.1 for k in range(31)]
    assert [row[0] for row in res["workspace"]["y"]] == res["time"]


def test_solver_defaults_to_discrete():
    d = diagram([], [])
    del d["solver"]
    assert parse(d).solver == "discrete"


@pytest.mark.parametrize("value,expected", [("on", True), ("off", False), (1, True), (0, False), (True, True)])
def test_boolean_params(value, expected):
    parsed = parse(diagram([blk("d", "display", Floating=value)], []))
    assert parsed.blocks[0].params["Floating"] is expected


# --------------------------------------------------------------------------------------------------
# What Nelson's ``jsonencode`` writes for a diagram built the usual Nelson way runs, with
# nflow's meaning (docs/CONTRACT.md, "Nelson's encodings"):
#
# * a struct array gives every element every field, the ones not set as ``[]``: ``"inputs": []``
#   on a block, ``"fromPin": []`` on a signal wire, ``"fromIndex": []`` on a physical one
#   (``""`` or ``null`` for a pin too);
# * NaN (and, by default, +-Inf) is written as ``null``: a number parameter given ``null`` is
#   NaN, and each handler treats NaN as nflow's does (a NaN saturation / integrator / pid
#   limit is no limit; a NaN ``MaxDataPoints`` keeps everything);
# * a UTF-8 byte order mark before the JSON; ``struct()`` as ``{}``; a cell ``{'ode45'}`` as
#   ``["ode45"]``.
# --------------------------------------------------------------------------------------------------

def struct_array(items: list, unset) -> list:
    """``items`` as one Nelson struct array: every element gets every field any element
    has, ``unset`` where it had none."""
    fields = list(dict.fromkeys(key for item in items for key in item))
    return [{key: item.get(key, unset) for key in fields} for item in items]


def as_nelson(d: dict) -> dict:
    """``d`` as jsonencode writes it when blocks and connections are struct arrays."""
    return dict(d, blocks=struct_array(d["blocks"], []), connections=struct_array(d["connections"], []))


def mass_on_damper() -> dict:
    """A signal source driving a physical island, sensors back to signals: the struct
    arrays mix signal wires (no pins) and physical links (no indices)."""
    blocks = [blk("f", "sine", Amplitude=2, Frequency=1), blk("force", "Force"), blk("m", "Mass", m=1.5),
              blk("d", "Damper", d=0.8), blk("g", "Fixed"), blk("v", "SpeedSensor"),
              dict(record(), inputs=1, outputs=0)]
    conns = [wire("f", "force"),
             {"from": "force", "fromPin": "flange", "to": "m", "toPin": "flange"},
             {"from": "m", "fromPin": "flange", "to": "d", "toPin": "a"},
             {"from": "d", "fromPin": "b", "to": "g", "toPin": "flange"},
             {"from": "v", "fromPin": "flange", "to": "m", "toPin": "flange"},
             wire("v", "w")]
    return diagram(blocks, conns, dt=0.05, duration=1.0, solver="ode45")


# ----------------------------------------------------------------------------- struct arrays

@pytest.mark.parametrize("pin_unset", [[], "", None], ids=["empty", "empty-char", "null"])
def test_struct_array_diagram_runs_as_the_plain_one(pin_unset):
    plain = mass_on_damper()
    nelson = as_nelson(plain)
    for conn in nelson["connections"]:
        conn.update({key: pin_unset for key in ("fromPin", "toPin") if conn[key] == []})
    assert nelson["connections"][0]["fromPin"] == pin_unset and nelson["connections"][1]["fromIndex"] == []
    assert nelson["blocks"][0]["inputs"] == [] and nelson["blocks"][0]["params"]["Amplitude"] == 2
    expected = nc.simulate(plain)
    got = nc.simulate(nelson)
    assert got["workspace"] == expected["workspace"] and got["time"] == expected["time"]
    assert np.ptp(np.asarray(got["workspace"]["y"], dtype=float)) > 0.1     # the mass does move


def test_unset_ports_take_the_manifest_counts():
    d = diagram([dict(const(3.0), inputs=[], outputs=[]), dict(blk("g", "gain", Gain=2), inputs=[], outputs=[]),
                 dict(record(), inputs=[], outputs=[])],
                [dict(wire("c", "g"), fromIndex=[], toIndex=[]), wire("g", "w")], duration=0.2)
    assert trace(d).tolist() == [[6.0]] * 3


def test_a_named_pin_with_the_other_unset_is_still_an_error():
    d = as_nelson(mass_on_damper())
    d["connections"][1]["toPin"] = []
    with pytest.raises(nc.DiagramError) as err:
        nc.validate(d)
    assert err.value.code == "bad_connection" and err.value.path == "/connections/1/toPin"


# ----------------------------------------------------------------------------- null is NaN

def limited(block: dict, source: dict, width: int = 1) -> np.ndarray:
    d = diagram([source, block, record()], [wire(source["id"], block["id"]), wire(block["id"], "w")],
                dt=0.1, duration=1.0)
    return trace(d)


def test_null_saturation_limit_is_no_limit():
    # nflow clamps with std::min/std::max, which pass u through a NaN limit: ramp 10 t stays
    # unbounded above, and the finite lower limit still holds for -10 t
    up = limited(blk("s", "saturation", UpperLimit=None, LowerLimit=-1), ramp(10))
    assert up[:, 0] == pytest.approx(10 * np.arange(11) * 0.1)
    down = limited(blk("s", "saturation", UpperLimit=None, LowerLimit=-1), ramp(-10))
    assert down[:, 0].tolist() == [0.0, -1.0] + [-1.0] * 9
    vector = limited(blk("s", "saturation", UpperLimit=[None], LowerLimit=None),
                     blk("v", "constant", Value=[-5, 7, 1e9]))
    assert vector.tolist() == [[-5.0, 7.0, 1e9]] * 11


@pytest.mark.parametrize("value", [1.0, [1.0, 2.0]], ids=["scalar", "vector"])
def test_null_integrator_limits_are_no_limits(value):
    # forward Euler of a constant c: y_k = c k dt with no limit at all
    y = limited(blk("i", "integrator", LowerSaturationLimit=None, UpperSaturationLimit=None), const(value))
    expected = np.outer(np.arange(11) * 0.1, np.atleast_1d(value))
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-15)


def test_null_integrator_limit_beside_a_finite_one():
    y = limited(blk("i", "integrator", LowerSaturationLimit=None, UpperSaturationLimit=0.35), const([1.0, -1.0]))
    assert y[-1].tolist() == [0.35, pytest.approx(-1.0)]


def test_null_pid_integral_limits_are_no_limits():
    # PI, u = 1: y = P + I (k+1) dt (the integral includes this step's contribution)
    y = limited(blk("p", "pid", P=2, I=3, D=0, LowerSaturationLimit=None, UpperSaturationLimit=None), const(1.0))
    assert y[:, 0] == pytest.approx(2 + 3 * (np.arange(11) + 1) * 0.1)


def test_null_max_data_points_keeps_everything():
    d = diagram([ramp(1), blk("w", "toWorkspace", VariableName="y", SaveFormat="Array", MaxDataPoints=None)],
                [wire("r", "w")], dt=0.1, duration=1.0)
    assert len(trace(d)) == 11


def test_null_variable_and_gain_are_nan():
    d = diagram([const(1.0), blk("g", "gain", Gain="k"), record()], [wire("c", "g"), wire("g", "w")],
                duration=0.1, variables={"k": None})
    assert math.isnan(trace(d)[0, 0])


# ----------------------------------------------------------------------------- BOM, struct(), cells

def simple() -> dict:
    return diagram([const(4.0), record()], [wire("c", "w")], duration=0.2)


def test_utf8_bom_before_the_json():
    text = orjson.dumps(simple())
    expected = orjson.loads(nc.simulate_json(text))
    for data in (b"\xef\xbb\xbf" + text, "\ufeff" + text.decode()):
        got = orjson.loads(nc.simulate_json(data))
        assert got["workspace"] == expected["workspace"] == {"y": [[4.0]] * 3}


def test_cli_reads_a_file_with_a_bom(tmp_path, capsys):
    path = tmp_path / "d.json"
    path.write_bytes(b"\xef\xbb\xbf" + orjson.dumps(simple()))
    assert main(["run", str(path)]) == 0
    assert orjson.loads(capsys.readouterr().out)["workspace"]["y"] == [[4.0]] * 3


def test_empty_struct_for_connections():
    d = diagram([record()], {}, duration=0.1)
    result = nc.simulate(d)
    assert [math.isnan(row[0]) for row in result["workspace"]["y"]] == [True, True]   # unconnected: NaN


def test_solver_in_a_cell():
    d = diagram([blk("i", "integrator"), const(1.0), record()], [wire("c", "i"), wire("i", "w")],
                duration=1.0, solver=["ode45"])
    result = nc.simulate(d)
    assert result["stats"]["solver"] == "ode45"
    assert result["workspace"]["y"][-1][0] == pytest.approx(1.0, rel=1e-9)


def test_struct_arrays_inside_a_subsystem():
    inner_blocks = [blk("in1", "labelSource", name="u", isExternalPort=True), blk("g", "gain", Gain=3),
                    blk("out1", "labelSink", name="y", isExternalPort=True)]
    inner = {"name": "s", "blocks": struct_array(inner_blocks, []),
             "connections": struct_array([wire("in1", "g"), dict(wire("g", "out1"), fromPin="")], [])}
    s = blk("s", "subsystem", name="s", externalInputs={"id": "in1", "name": "in1"},
            externalOutputs={"id": "out1", "name": "out1"}, subsystem=inner, inputs=1, outputs=[])
    d = diagram([ramp(1), s, record()], [wire("r", "s"), wire("s", "w")], duration=0.5)
    np.testing.assert_allclose(trace(d)[:, 0], 3 * 0.1 * np.arange(6), rtol=0, atol=1e-15)
