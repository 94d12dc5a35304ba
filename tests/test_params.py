"""Per-run parameter values (nflow_compat.params): the sweep spec's three spellings of an
address, the typed errors of a bad one, and ``simulate(d, params=...)`` giving what the
same diagram written with those values gives."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import nflow_compat as nc
from nflow_compat import params
from tests.sweeps.sweep_specs import MASS, gains
from tests.util import blk, diagram, wire


def _y(result, name="y"):
    value = result["workspace"][name]
    return np.asarray(value["signals"]["values"] if isinstance(value, dict) else value, dtype=float)


def _written(d, pointer, value):
    d = copy.deepcopy(d)
    params.set_pointer(d, pointer, value)
    return d


@pytest.mark.parametrize("address, pointer, value", [
    ("g.Gain", "/blocks/1/params/Gain", 0.25),                      # block id . param
    ("/blocks/0/params/Frequency", "/blocks/0/params/Frequency", 3.0),   # a JSON pointer
    ("variables.k", "/variables/k", -2.0),                           # a variable: every expression over it
    ("g.Gain", "/blocks/1/params/Gain", "k*5"),                      # an expression, as in the diagram
    ("/duration", "/duration", 0.5),                                 # anything the diagram holds
])
def test_simulate_with_params_is_the_diagram_written_with_them(address, pointer, value):
    got = nc.simulate(gains(), params={address: value})
    want = nc.simulate(_written(gains(), pointer, value))
    assert got["time"] == want["time"]
    assert np.array_equal(_y(got), _y(want))
    assert not np.array_equal(_y(got), _y(nc.simulate(gains())))        # the value did change the run


def test_the_callers_diagram_and_params_are_not_touched():
    d = gains()
    d["blocks"][1]["params"] = []          # jsonencode's empty params: the address still finds Gain
    given = {"g.Gain": np.array([0.5])}
    before = copy.deepcopy(d)
    result = nc.simulate(d, params=given)
    assert d == before and isinstance(given["g.Gain"], np.ndarray)
    assert np.allclose(_y(result)[:, 0], 0.5 * np.sin(2 * np.pi * np.asarray(result["time"])))


def test_simulate_json_and_the_physical_islands_take_params():
    faster = nc.simulate(MASS, params={"stop1.F_Coulomb": 1})
    text = nc.simulate_json(__import__("orjson").dumps(MASS), params={"stop1.F_Coulomb": 1})
    assert __import__("orjson").loads(text)["workspace"]["stop1.v"] == faster["workspace"]["stop1.v"]
    # less friction: the mass breaks away earlier than with the diagram's F_Coulomb 5
    first = [e["t"] for e in faster["events"] if e["block"] == "stop1"][0]
    assert first < [e["t"] for e in nc.simulate(MASS)["events"] if e["block"] == "stop1"][0]


@pytest.mark.parametrize("address, code, text", [
    ("g.Gian", "unknown_param", "did you mean 'Gain'?"),
    ("gg.Gain", "unknown_block", "did you mean 'g'?"),
    ("variables.kk", "unknown_variable", "did you mean 'k'?"),
    ("Gain", "bad_address", "JSON pointer"),
    ("/blocks/9/params/Gain", "bad_pointer", "nothing at '/blocks/9'"),
])
def test_a_bad_address_is_a_typed_error_naming_it(address, code, text):
    with pytest.raises(nc.DiagramError) as info:
        nc.simulate(gains(), params={address: 1})
    assert info.value.code == code
    assert info.value.message.startswith(f"params[{address!r}]: ") and text in info.value.message


def test_a_bad_value_is_the_error_the_diagram_would_give():
    with pytest.raises(nc.DiagramError) as info:
        nc.simulate(MASS, params={"stop1.m": -1})
    with pytest.raises(nc.DiagramError) as written:
        nc.simulate(_written(MASS, "/blocks/2/params/m", -1))
    assert (info.value.code, info.value.path) == (written.value.code, written.value.path) == ("param_range",
                                                                                               "/blocks/2/params/m")
    with pytest.raises(nc.DiagramError) as info:
        nc.simulate(gains(), params=[("g.Gain", 1)])
    assert info.value.code == "bad_params"
    with pytest.raises(nc.DiagramError) as info:
        nc.simulate(gains(), params={"g.Gain": object()})
    assert info.value.code == "bad_type"


def test_addresses_resolve_to_block_targets_only_outside_subsystems():
    d = diagram([blk("c", "constant", Value=1),
                 blk("sub", "subsystem", inputs=1, outputs=1, externalInputs=["in1"], externalOutputs=["out1"],
                     subsystem={"blocks": [blk("in1", "labelSource", name="u", isExternalPort=True),
                                           blk("g", "gain", Gain=3),
                                           blk("out1", "labelSink", name="y", isExternalPort=True)],
                                "connections": [wire("in1", "g"), wire("g", "out1")]}),
                 blk("w", "toWorkspace", VariableName="y", SaveFormat="Array")],
                [wire("c", "sub"), wire("sub", "w")])
    parsed = nc.validate(d)
    raw = params.json_copy(d)
    top = params.address("c.Value", parsed, raw)
    inner = params.address("sub/g.Gain", parsed, raw)
    assert top == params.Target("/blocks/0/params/Value", (0, "Value"))
    assert inner.block is None and inner.pointer == "/blocks/1/params/subsystem/blocks/1/params/Gain"
    assert nc.simulate(d, params={"sub/g.Gain": 4})["workspace"]["y"][-1] == [4.0]
    # without the diagram's JSON, only a top-level block parameter can be set
    assert params.address("c.Value", parsed) == top
    with pytest.raises(nc.DiagramError) as info:
        params.address("sub/g.Gain", parsed)
    assert info.value.code == "needs_source"
