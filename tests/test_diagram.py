"""Normalization of what MATLAB/Nelson jsonencode emits (docs/CONTRACT.md §2)."""
import numpy as np
import pytest

import nflow_compat as nc
from nflow_compat.diagram import parse
from tests.util import blk, diagram, record, wire


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
