"""What the result says of the recorded columns (``columns``; nflow_compat.engine.columns):
each recorder's signals, named after the blocks that write them, with their units and the
physical blocks a sensor is attached to."""
from __future__ import annotations

import nflow_compat as nc
from tests.util import blk, diagram, pin, record, wire


def _signals(result, name="y", section="workspace"):
    return [(s["name"], s["width"]) for s in result["columns"][section][name]]


def test_a_demux_feeding_a_recorder_names_each_of_its_outputs():
    # a 3-output demux: the manifest names fewer outputs than the instance has
    d = diagram([blk("c", "constant", Value=[1, 2, 3]), blk("dm", "demux", inputs=1, outputs=3),
                 blk("m", "mux", inputs=3), record()],
                [wire("c", "dm"), wire("dm", "m", 0, 0), wire("dm", "m", 1, 1), wire("dm", "m", 2, 2), wire("m", "w")])
    result = nc.simulate(d)
    assert _signals(result) == [("dm.0", 1), ("dm.1", 1), ("dm.2", 1)]
    assert [s["port"] for s in result["columns"]["workspace"]["y"]] == [0, 1, 2]
    assert result["workspace"]["y"][0] == [1.0, 2.0, 3.0]


def test_mux_and_bus_members_name_the_parts_and_a_vector_stays_one_signal():
    d = diagram([blk("s", "sine"), blk("v", "constant", Value=[1, 2]), blk("m", "mux", inputs=3),
                 blk("b", "busCreator", inputs=2, MemberNames=["speed", ""]), record(),
                 blk("w2", "toWorkspace", VariableName="bus", SaveFormat="Array"),
                 blk("sc", "scope", inputs=2)],
                [wire("s", "m", 0, 0), wire("v", "m", 0, 1), wire("s", "b", 0, 0), wire("v", "b", 0, 1),
                 wire("m", "w"), wire("b", "w2"), wire("s", "sc", 0, 0), wire("m", "sc", 0, 1)])
    result = nc.simulate(d)
    assert _signals(result) == [("s", 1), ("v", 2), ("m[input 2, unconnected]", 1)]
    assert _signals(result, "bus") == [("speed", 1), ("v", 2)]          # a given member name, else the source
    assert _signals(result, "sc", "scopes") == [("s", 1), ("s", 1), ("v", 2), ("m[input 2, unconnected]", 1)]
    unconnected = result["columns"]["workspace"]["y"][2]
    assert (unconnected["block"], unconnected["port"]) == (None, None)


def test_an_unconnected_recorder_input_is_its_own_column():
    result = nc.simulate(diagram([blk("s", "sine"), record()], []))
    assert result["columns"]["workspace"]["y"] == [{"name": "input 0 (unconnected)", "block": None, "port": None,
                                                     "width": 1, "unit": "", "attached": []}]


def test_sensor_signals_carry_their_unit_and_the_blocks_they_are_attached_to():
    # force -> m, joined to a fixed wall by a spring; x senses m's node, v the spring's far end
    blocks = [blk("f", "constant", Value=1), blk("force", "Force"), blk("m", "Mass"), blk("k", "Spring", c=10),
              blk("wall", "Fixed"), blk("x", "PositionSensor"), blk("v", "SpeedSensor"), blk("g", "gain", Gain=2),
              record("wx", "x"), record("wv", "v"), record("wg", "v2")]
    conns = [wire("f", "force"), pin("force", "flange", "m", "flange"), pin("m", "flange", "k", "a"),
             pin("k", "b", "wall", "flange"), pin("x", "flange", "force", "flange"), pin("v", "flange", "wall", "flange"),
             wire("x", "wx"), wire("v", "wv"), wire("v", "g"), wire("g", "wg")]
    result = nc.simulate(diagram(blocks, conns, dt=0.1, duration=0.2, solver="ode45"))
    [x] = result["columns"]["workspace"]["x"]
    assert (x["name"], x["unit"], x["attached"]) == ("x", "m", ["force", "k", "m"])
    [v] = result["columns"]["workspace"]["v"]
    assert (v["unit"], v["attached"]) == ("m/s", ["k", "wall"])
    [v2] = result["columns"]["workspace"]["v2"]
    assert (v2["name"], v2["unit"], v2["attached"]) == ("g", "", [])    # a gain's output has no unit
