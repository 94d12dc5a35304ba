"""Subsystems: flattening into the parent, external ports, nesting, forEach, errors."""
import dataclasses
import time

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from nflow_compat.diagram import parse
from tests.util import blk, diagram, record, trace, wire


def port_in(id="in1", tag="u"):
    return blk(id, "labelSource", name=tag, isExternalPort=True)


def port_out(id="out1", tag="y"):
    return blk(id, "labelSink", name=tag, isExternalPort=True)


def sub(id, blocks, conns, ins=("in1",), outs=("out1",), **params):
    """A subsystem in the editor's shape: port lists of {"id", "name"} entries."""
    return blk(id, "subsystem", dict(params, name=id,
                                     externalInputs=[{"id": i, "name": i} for i in ins],
                                     externalOutputs=[{"id": o, "name": o} for o in outs],
                                     subsystem={"name": id, "blocks": blocks, "connections": conns}),
               inputs=max(1, len(ins)), outputs=max(1, len(outs)))


def error_of(d, **kw):
    with pytest.raises(nc.NFlowError) as info:
        nc.simulate(d, **kw)
    return info.value


def gain_sub(id="s", gain=3.0):
    return sub(id, [port_in(), blk("g", "gain", Gain=gain), port_out()], [wire("in1", "g"), wire("g", "out1")])


# ----------------------------------------------------------------------------- flattening

def test_gain_in_a_subsystem():
    d = diagram([blk("r", "ramp", slope=1), gain_sub(), record()], [wire("r", "s"), wire("s", "w")], duration=0.5)
    assert np.allclose(trace(d).ravel(), 3.0 * 0.1 * np.arange(6), rtol=0, atol=1e-15)


def test_inner_blocks_get_qualified_ids_and_paths():
    d = diagram([blk("r", "ramp"), gain_sub(), record()], [wire("r", "s"), wire("s", "w")])
    parsed = parse(d)
    ids = [b.id for b in parsed.blocks]
    assert ids == ["r", "s/g", "s/out1", "w"]   # the input port block is gone, the sink stays
    g = parsed.blocks[1]
    assert g.path == "/blocks/1/params/subsystem/blocks/1"
    assert g.where("Gain")["path"] == "/blocks/1/params/subsystem/blocks/1/params/Gain"
    # the wire into the subsystem now ends at the inner gain (it is the inner wire's end, so its
    # pointer is the inner connection's); the outer output wire starts there
    wires = {(parsed.blocks[w.src].id, parsed.blocks[w.dst].id): w.path for w in parsed.wires}
    assert wires[("r", "s/g")] == "/blocks/1/params/subsystem/connections/0"
    assert wires[("s/g", "w")] == "/connections/1"


def _chain(prefix=""):
    """step -> sum(+ -) with feedback from a unitDelay -> gain; returns blocks, wires."""
    return ([blk("st", "step", Time=0.3), blk("e", "sum", Inputs="+-", inputs=2), blk("k", "gain", Gain=0.5),
             blk("d", "unitDelay", InitialCondition=0.25)],
            [wire("st", "e", 0, 0), wire("d", "e", 0, 1), wire("e", "k"), wire("k", "d")])


def test_wrapping_a_feedback_loop_changes_nothing():
    blocks, conns = _chain()
    flat = diagram(blocks + [record()], conns + [wire("d", "w")], duration=2.0)
    # the same loop with gain and delay inside a subsystem: the feedback crosses the boundary
    inner = [port_in(), blk("k", "gain", Gain=0.5), blk("d", "unitDelay", InitialCondition=0.25), port_out()]
    s = sub("s", inner, [wire("in1", "k"), wire("k", "d"), wire("d", "out1")])
    wrapped = diagram([blocks[0], blocks[1], s, record()],
                      [wire("st", "e", 0, 0), wire("s", "e", 0, 1), wire("e", "s"), wire("s", "w")], duration=2.0)
    a, b = nc.simulate(flat), nc.simulate(wrapped)
    assert a["workspace"] == b["workspace"] and a["time"] == b["time"]
    y = np.asarray(a["workspace"]["y"]).ravel()
    assert y[0] == 0.25 and y[1] == pytest.approx(0.5 * (0 - 0.25))


def test_integrator_loop_under_ode45_is_unchanged_by_wrapping():
    # x' = 2 (step - x): the integrator and its gain inside the subsystem, the error sum outside
    flat = diagram([blk("st", "step", Time=0.2), blk("e", "sum", Inputs="+-", inputs=2), blk("g", "gain", Gain=2),
                    blk("i", "integrator"), record()],
                   [wire("st", "e", 0, 0), wire("i", "e", 0, 1), wire("e", "g"), wire("g", "i"), wire("i", "w")],
                   duration=2.0, solver="ode45")
    inner = [port_in(), blk("g", "gain", Gain=2), blk("i", "integrator"), port_out()]
    wrapped = diagram([blk("st", "step", Time=0.2), blk("e", "sum", Inputs="+-", inputs=2),
                       sub("s", inner, [wire("in1", "g"), wire("g", "i"), wire("i", "out1")]), record()],
                      [wire("st", "e", 0, 0), wire("s", "e", 0, 1), wire("e", "s"), wire("s", "w")],
                      duration=2.0, solver="ode45")
    a, b = nc.simulate(flat), nc.simulate(wrapped)
    assert a["workspace"] == b["workspace"]
    t = np.asarray(a["time"])
    expect = np.where(t > 0.2, 1 - np.exp(-2 * (t - 0.2)), 0.0)
    assert np.allclose(np.asarray(a["workspace"]["y"]).ravel(), expect, atol=1e-5)


def test_nested_subsystems_and_inner_recorders():
    # three levels: s1 ( s2 ( gain 2 ) then bias 1 ) then gain 10; a toWorkspace inside s2
    s2 = sub("s2", [port_in(), blk("g", "gain", Gain=2), port_out(),
                    blk("rec", "toWorkspace", VariableName="inner", SaveFormat="Structure With Time")],
             [wire("in1", "g"), wire("g", "out1"), wire("g", "rec")])
    s1 = sub("s1", [port_in(), s2, blk("b", "bias", Bias=1), port_out()],
             [wire("in1", "s2"), wire("s2", "b"), wire("b", "out1")])
    d = diagram([blk("c", "constant", Value=4), s1, blk("k", "gain", Gain=10), record()],
                [wire("c", "s1"), wire("s1", "k"), wire("k", "w")], duration=0.2)
    res = nc.simulate(d)
    assert res["workspace"]["y"] == [[90.0]] * 3
    inner = res["workspace"]["inner"]
    assert inner["blockName"] == "s1/s2/rec" and inner["signals"]["values"] == [[8.0]] * 3


def test_several_outputs_and_the_editor_shape():
    # the editor's test diagram: one input, three gains, three external outputs
    inner = [port_in(), blk("g1", "gain", Gain=1), blk("g2", "gain", Gain=2), blk("g3", "gain", Gain=3),
             port_out("o1", "O_1"), port_out("o2", "O_2"), port_out("o3", "O_3")]
    conns = [wire("in1", "g1"), wire("in1", "g2"), wire("in1", "g3"),
             wire("g1", "o1"), wire("g2", "o2"), wire("g3", "o3")]
    s = sub("s", inner, conns, outs=("o1", "o2", "o3"))
    d = diagram([blk("c", "constant", Value=2), s, record("w1", "a"), record("w2", "b"), record("w3", "c")],
                [wire("c", "s"), wire("s", "w1", 0), wire("s", "w2", 1), wire("s", "w3", 2)], duration=0.1)
    ws = nc.simulate(d)["workspace"]
    assert (ws["a"], ws["b"], ws["c"]) == ([[2.0], [2.0]], [[4.0], [4.0]], [[6.0], [6.0]])


@pytest.mark.parametrize("where", ["params", "nested", "both", "derived", "bare", "by-name"])
def test_the_port_list_shapes(where):
    inner = [dict(blk("b", "labelSource", name="vb", isExternalPort=True), x=0, y=80),   # layout keys
             dict(blk("a", "labelSource", name="va", isExternalPort=True), x=0, y=20),
             blk("s", "sum", Inputs="+-", inputs=2), blk("out1", "labelSink", isExternalPort=True)]
    conns = [wire("a", "s", 0, 0), wire("b", "s", 0, 1), wire("s", "out1")]
    body = {"blocks": inner, "connections": conns}
    ins, outs = [{"id": "a", "name": "va"}, {"id": "b", "name": "vb"}], [{"id": "out1", "name": "y"}]
    params = {"subsystem": body}
    if where in ("params", "both"):
        params.update(externalInputs=ins, externalOutputs=outs)
    if where in ("nested", "both"):
        body.update(externalInputs=ins, externalOutputs=outs)
    if where == "bare":
        params.update(externalInputs=["a", "b"], externalOutputs="out1")   # a lone entry may be a bare value
    if where == "by-name":
        params.update(externalInputs=[{"name": "va"}, {"name": "vb"}], externalOutputs=[{"id": "out1"}])
    # "derived": no lists at all: the isExternalPort blocks in layout order (a has the smaller y)
    d = diagram([blk("c5", "constant", Value=5), blk("c2", "constant", Value=2),
                 blk("s", "subsystem", params, inputs=2), record()],
                [wire("c5", "s", 0, 0), wire("c2", "s", 0, 1), wire("s", "w")], duration=0.1)
    assert trace(d).ravel().tolist() == [3.0, 3.0]


def test_an_input_port_wired_straight_to_an_output_port():
    s = blk("s", "subsystem", externalInputs=["p"], externalOutputs=["p"],
            subsystem={"blocks": [port_in("p")], "connections": []})
    d = diagram([blk("c", "constant", Value=7), s, record()], [wire("c", "s"), wire("s", "w")], duration=0.1)
    assert trace(d).ravel().tolist() == [7.0, 7.0]


def test_subsystem_feeding_a_subsystem():
    d = diagram([blk("c", "constant", Value=1), gain_sub("a", 2.0), gain_sub("b", 5.0), record()],
                [wire("c", "a"), wire("a", "b"), wire("b", "w")], duration=0.1)
    assert trace(d).ravel().tolist() == [10.0, 10.0]


def test_an_unconnected_input_is_ground():
    # a product reads an unconnected input as 1, but an unconnected subsystem input is 0
    s = sub("s", [port_in(), blk("p", "mult", inputs=2), blk("c", "constant", Value=3), port_out()],
            [wire("in1", "p", 0, 0), wire("c", "p", 0, 1), wire("p", "out1")])
    d = diagram([s, record()], [wire("s", "w")], duration=0.1)
    assert trace(d).ravel().tolist() == [0.0, 0.0]


def test_goto_tags_are_local_to_their_subsystem():
    # tag "x" outside carries 1, inside 100; each labelSource reads its own level's sink
    s = sub("s", [port_in(), blk("k", "constant", Value=100), blk("gk", "labelSink", GotoTag="x"),
                  blk("gs", "labelSource", GotoTag="x"), blk("a", "sum", inputs=2), port_out()],
            [wire("k", "gk"), wire("in1", "a", 0, 0), wire("gs", "a", 0, 1), wire("a", "out1")])
    d = diagram([blk("one", "constant", Value=1), blk("top", "labelSink", GotoTag="x"),
                 blk("from", "labelSource", GotoTag="x"), s, record("w1", "inside"), record("w2", "outside")],
                [wire("one", "top"), wire("from", "s"), wire("s", "w1"), wire("from", "w2")], duration=0.1)
    ws = nc.simulate(d)["workspace"]
    assert ws["outside"] == [[1.0], [1.0]]
    assert ws["inside"] == [[101.0], [101.0]]


def test_a_dashboard_binding_reaches_into_a_subsystem():
    scope = blk("scope", "dashboardScope", Binding={"kind": "signal", "blockPath": ["s", "g"], "outputPortIndex": 1})
    d = diagram([blk("c", "constant", Value=2), gain_sub(), scope], [wire("c", "s")], duration=0.1)
    values = nc.simulate(d)["scopes"]["scope"]["values"]
    assert values == [[6.0], [6.0]]


def test_warnings_and_errors_name_the_inner_block():
    s = sub("s", [port_in(), blk("g", "gain", Gain=1, colour="red"), port_out()], [wire("in1", "g"), wire("g", "out1")])
    res = nc.simulate(diagram([blk("c", "constant"), s, record()], [wire("c", "s"), wire("s", "w")], duration=0.1))
    assert any("'s/g'" in w and "colour" in w for w in res["warnings"])
    bad = sub("s", [port_in(), blk("g", "gain", Gain="k*"), port_out()], [wire("in1", "g"), wire("g", "out1")])
    err = error_of(diagram([blk("c", "constant"), bad, record()], [wire("c", "s"), wire("s", "w")]))
    assert err.block == "s/g" and err.path == "/blocks/1/params/subsystem/blocks/1/params/Gain"


def test_an_empty_subsystem_is_harmless():
    d = diagram([blk("s", "subsystem"), blk("c", "constant", Value=2), record()], [wire("c", "w")], duration=0.1)
    assert trace(d).ravel().tolist() == [2.0, 2.0]


def test_a_diagram_without_subsystems_has_no_structure():
    d = diagram([blk("c", "constant"), record()], [wire("c", "w")])
    assert parse(d).structure is None
    assert parse(diagram([gain_sub(), record()], [wire("s", "w")])).structure is None   # plain: just flattened


# ----------------------------------------------------------------------------- forEach

def _for_each_body():
    # y_i = delay(u_i + k): a partitioned u, a broadcast k, per-iteration state
    return ([port_in("u"), port_in("k"), blk("s", "sum", inputs=2), blk("d", "unitDelay", InitialCondition=-1),
             port_out()],
            [wire("u", "s", 0, 0), wire("k", "s", 0, 1), wire("s", "d"), wire("d", "out1")])


def test_for_each_partitions_broadcasts_and_keeps_state_per_iteration():
    blocks, conns = _for_each_body()
    fe = sub("fe", blocks, conns, ins=("u", "k"), forEach={"numIterations": 3, "partition": [0]})
    d = diagram([blk("v", "repeatingSequenceStair", OutValues=[1, 2, 3, 4, 5, 6]),
                 blk("m", "mux", inputs=3), blk("v2", "gain", Gain=10), blk("v3", "gain", Gain=100),
                 blk("k", "constant", Value=0.5), fe, record()],
                [wire("v", "m", 0, 0), wire("v", "v2"), wire("v2", "m", 0, 1), wire("v", "v3"), wire("v3", "m", 0, 2),
                 wire("m", "fe", 0, 0), wire("k", "fe", 0, 1), wire("fe", "w")], duration=0.3)
    y = trace(d)
    u = np.array([1, 2, 3])[:, None] * np.array([1, 10, 100])      # u_k per channel
    assert y.shape == (4, 3)
    assert y[0].tolist() == [-1.0, -1.0, -1.0]
    assert np.allclose(y[1:], u + 0.5)


def test_for_each_with_vector_slices_and_integrators_under_ode45():
    # each of two iterations integrates its own 2-element slice: y = c * t per element
    body = [port_in("u"), blk("i", "integrator"), port_out()]
    fe = sub("fe", body, [wire("u", "i"), wire("i", "out1")], ins=("u",),
             forEach={"numIterations": 2, "partition": 0})
    d = diagram([blk("c", "constant", Value=[1, 2, 3, 4]), fe, record()], [wire("c", "fe"), wire("fe", "w")],
                duration=1.0, solver="ode45")
    res = nc.simulate(d)
    t = np.asarray(res["time"])[:, None]
    assert np.allclose(np.asarray(res["workspace"]["y"]), t * np.array([1, 2, 3, 4]), atol=1e-9)


def test_for_each_copies_are_named_by_iteration():
    blocks, conns = _for_each_body()
    fe = sub("fe", blocks, conns, ins=("u", "k"), forEach={"numIterations": 2, "partition": [0]})
    ids = [b.id for b in parse(diagram([fe], [])).blocks]
    assert "fe[1]/d" in ids and "fe[2]/d" in ids and "fe/forEach.in0" in ids and "fe/forEach.out0" in ids


@pytest.mark.parametrize("spec, code", [
    ({"numIterations": 0, "partition": [0]}, "param_range"),
    ({"numIterations": 2.5}, "param_range"),
    ({"numIterations": 1e9, "partition": []}, "param_range"),        # bounded before any copy is made
    ({"partition": [0]}, "param_value"),
    ({"numIterations": 2, "partition": [2]}, "bad_external_port"),
    ({"numIterations": 2, "partition": [0]}, "foreach_partition"),   # a width-3 input over 2 iterations
])
def test_for_each_errors(spec, code):
    blocks, conns = _for_each_body()
    fe = sub("fe", blocks, conns, ins=("u", "k"), forEach=spec)
    d = diagram([blk("v", "constant", Value=[1, 2, 3]), fe, record()], [wire("v", "fe", 0, 0), wire("fe", "w")])
    err = error_of(d)
    assert isinstance(err, nc.DiagramError) and err.code == code
    assert err.block == "fe" and err.path.startswith("/blocks/1/params")


# ----------------------------------------------------------------------------- errors

def test_a_port_naming_a_missing_inner_block():
    s = blk("s", "subsystem", externalInputs=[{"id": "inn1", "name": "u"}], externalOutputs=[],
            subsystem={"blocks": [port_in()], "connections": []})
    err = error_of(diagram([s], []))
    assert err.code == "bad_external_port" and err.path == "/blocks/0/params/externalInputs/0"
    assert "'inn1'" in err.message and "did you mean 'in1'" in err.message


def test_an_inner_connection_to_a_missing_block():
    s = sub("s", [port_in(), blk("g", "gain"), port_out()], [wire("in1", "gg"), wire("g", "out1")])
    err = error_of(diagram([blk("c", "constant"), s], [wire("c", "s")]))
    assert err.code == "unknown_block" and err.block == "s/gg"
    assert err.path == "/blocks/1/params/subsystem/connections/0/to"


@pytest.mark.parametrize("conn, code", [
    (wire("c", "s", 0, 1), "port_out_of_range"),      # one external input
    (wire("s", "w", 1, 0), "port_out_of_range"),      # one external output
])
def test_bad_external_port_indices(conn, code):
    d = diagram([blk("c", "constant"), gain_sub(), record()], [conn])
    err = error_of(d)
    assert err.code == code and err.block == "s" and err.path.startswith("/connections/0/")


def test_two_wires_into_one_subsystem_input():
    d = diagram([blk("c", "constant"), blk("c2", "constant"), gain_sub()], [wire("c", "s"), wire("c2", "s")])
    assert error_of(d).code == "input_driven_twice"


def test_disagreeing_port_lists():
    s = blk("s", "subsystem", externalInputs=["a"],
            subsystem={"blocks": [port_in("a"), port_in("b")], "connections": [], "externalInputs": ["b"]})
    assert error_of(diagram([s], [])).code == "bad_external_port"


def test_a_wire_loop_through_ports():
    s = blk("s", "subsystem", externalInputs=["p"], externalOutputs=["p"],
            subsystem={"blocks": [port_in("p")], "connections": []})
    d = diagram([s, record()], [wire("s", "s"), wire("s", "w")])
    assert error_of(d).code == "subsystem_wire_loop"


def test_duplicate_inner_ids_and_a_bad_body():
    s = sub("s", [port_in(), blk("g", "gain"), blk("g", "bias"), port_out()], [])
    err = error_of(diagram([s], []))
    assert err.code == "duplicate_id" and err.path == "/blocks/0/params/subsystem/blocks/2/id"
    err = error_of(diagram([blk("s", "subsystem", subsystem="model.slx")], []))
    assert err.code == "bad_type" and err.path == "/blocks/0/params/subsystem"


def _nested(depth: int) -> dict:
    root = cur = {"id": "s1", "type": "subsystem", "params": {"subsystem": {"blocks": [], "connections": []}}}
    for k in range(2, depth + 1):
        nxt = {"id": f"s{k}", "type": "subsystem", "params": {"subsystem": {"blocks": [], "connections": []}}}
        cur["params"]["subsystem"]["blocks"].append(nxt)
        cur = nxt
    return root


def test_depth_limit_default_and_configurable():
    assert nc.Limits().max_subsystem_depth == 32
    nc.simulate(diagram([_nested(32)], [], duration=0.1))
    err = error_of(diagram([_nested(33)], [], duration=0.1))
    assert err.code == "subsystem_too_deep" and err.block == "s1/s2/" + "/".join(f"s{k}" for k in range(3, 34))
    limits = dataclasses.replace(nc.Limits(), max_subsystem_depth=2)
    nc.simulate(diagram([_nested(2)], [], duration=0.1), limits=limits)
    assert error_of(diagram([_nested(3)], [], duration=0.1), limits=limits).code == "subsystem_too_deep"


def test_ten_thousand_levels_fail_fast_with_the_depth_code():
    d = diagram([_nested(10_000)], [], duration=0.1)
    names = {f.name for f in dataclasses.fields(nc.Limits)}
    limits = nc.Limits(**({"max_json_depth": 10**6} if "max_json_depth" in names else {}))
    started = time.perf_counter()
    err = error_of(d, limits=limits)
    assert time.perf_counter() - started < 1.0
    assert isinstance(err, nc.DiagramError) and err.code == "subsystem_too_deep"
    # parse directly too (no JSON-depth pre-check in the way)
    started = time.perf_counter()
    with pytest.raises(nc.DiagramError) as info:
        parse(d, limits)
    assert info.value.code == "subsystem_too_deep" and time.perf_counter() - started < 1.0
    # with the default limits some depth check answers, never a RecursionError
    started = time.perf_counter()
    err = error_of(d)
    assert isinstance(err, nc.DiagramError) and time.perf_counter() - started < 1.0


def test_depth_error_through_the_json_entry_point():
    text = orjson.dumps(diagram([_nested(40)], [], duration=0.1))
    with pytest.raises(nc.DiagramError) as info:
        nc.simulate_json(text)
    assert info.value.code == "subsystem_too_deep"


# ----------------------------------------------------------------------------- property

_STAGES = {
    "gain": lambda v: blk("", "gain", Gain=v),
    "bias": lambda v: blk("", "bias", Bias=v),
    "unitDelay": lambda v: blk("", "unitDelay", InitialCondition=v),
    "saturation": lambda v: blk("", "saturation", LowerLimit=-abs(v), UpperLimit=abs(v) + 0.1),
    "rate": lambda v: blk("", "rate", RisingSlewLimit=abs(v) + 0.5, FallingSlewLimit=-(abs(v) + 0.5)),
}


@settings(max_examples=40, deadline=None)
@given(stages=st.lists(st.tuples(st.sampled_from(sorted(_STAGES)), st.floats(-3, 3, allow_nan=False)),
                       min_size=1, max_size=6),
       cut=st.data())
def test_wrapping_any_chain_segment_changes_nothing(stages, cut):
    """A chain source -> stage_1 -> ... -> stage_n -> record; the stages a..b moved into a
    subsystem (and, separately, into a subsystem inside a subsystem) give the same output."""
    n = len(stages)
    a = cut.draw(st.integers(0, n - 1))
    b = cut.draw(st.integers(a + 1, n))
    made = [dict(_STAGES[kind](v), id=f"b{k}") for k, (kind, v) in enumerate(stages)]
    src = blk("src", "sine", Amplitude=2, Frequency=1.3)
    names = ["src"] + [m["id"] for m in made]
    flat = diagram([src] + made + [record()],
                   [wire(names[k], names[k + 1]) for k in range(n)] + [wire(names[n], "w")], duration=1.0)
    inner = [port_in()] + made[a:b] + [port_out()]
    inner_names = ["in1"] + [m["id"] for m in made[a:b]] + ["out1"]
    s = sub("s", inner, [wire(inner_names[k], inner_names[k + 1]) for k in range(len(inner_names) - 1)])
    outside = [src] + made[:a] + [s] + made[b:] + [record()]
    chain = names[:a + 1] + ["s"] + names[b + 1:]
    wrapped = diagram(outside, [wire(chain[k], chain[k + 1]) for k in range(len(chain) - 1)] + [wire(chain[-1], "w")],
                      duration=1.0)
    twice = diagram([src] + made[:a] + [sub("t", [port_in(), s, port_out()], [wire("in1", "s"), wire("s", "out1")])]
                    + made[b:] + [record()],
                    [wire(c if c != "s" else "t", d if d != "s" else "t") for c, d in zip(chain, chain[1:])]
                    + [wire(chain[-1] if chain[-1] != "s" else "t", "w")], duration=1.0)
    expect = nc.simulate(flat)["workspace"]
    assert nc.simulate(wrapped)["workspace"] == expect
    assert nc.simulate(twice)["workspace"] == expect


def test_depth_limit_from_the_cli(tmp_path):
    import subprocess
    import sys
    path = tmp_path / "deep.json"
    path.write_bytes(orjson.dumps(diagram([_nested(3)], [], duration=0.1)))
    ok = subprocess.run([sys.executable, "-m", "nflow_compat", "run", str(path)], capture_output=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    out = subprocess.run([sys.executable, "-m", "nflow_compat", "--limit", "max_subsystem_depth=2", "run", str(path)],
                         capture_output=True, timeout=60)
    assert out.returncode == 2
    assert orjson.loads(out.stdout)["error"]["code"] == "subsystem_too_deep"
