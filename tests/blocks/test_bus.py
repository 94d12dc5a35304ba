"""Buses: busCreator, busSelector, busAssignment and the BusLayout width they share."""
import itertools
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from nflow_compat import DiagramError
from nflow_compat.blocks import load_all
from nflow_compat.diagram import parse
from nflow_compat.signals import BusLayout, width_key
from tests.util import blk, diagram, record, run, trace, wire

FAST = settings(max_examples=40, deadline=None)


def const(id, value):
    return blk(id, "constant", Value=value)


def creator(id, names, n=None):
    return blk(id, "busCreator", MemberNames=names, inputs=len(names) if n is None else n)


def selector(id, paths, outputs=None, **kw):
    return blk(id, "busSelector", SelectedSignals=paths, outputs=len(paths) if outputs is None else outputs, **kw)


def sim(blocks, conns, duration=0.1, **kw):
    return run(diagram(blocks, conns, duration=duration, **kw))


def values(result, name="y"):
    return np.asarray(result["workspace"][name], dtype=float)


def error_of(blocks, conns, duration=0.1) -> DiagramError:
    with pytest.raises(DiagramError) as info:
        sim(blocks, conns, duration)
    return info.value


# a bus {pos=[1 2], count=7} and wiring helpers
BASE = [const("pos", [1, 2]), const("cnt", 7), creator("bc", ["pos", "count"])]
BASE_WIRES = [wire("pos", "bc", 0, 0), wire("cnt", "bc", 0, 1)]


# ----------------------------------------------------------------------------- BusLayout

def test_layout_packs_members_in_order_with_offsets():
    inner = BusLayout([("x", 1), ("y", 3)])
    outer = BusLayout([("a", 2), ("inner", inner), ("b", 0)])   # 0 = unconnected: one element
    assert int(inner) == 4 and int(outer) == 2 + 4 + 1
    assert [(m.name, m.offset, m.width) for m in outer.members] == [("a", 0, 2), ("inner", 2, 4), ("b", 6, 1)]
    assert outer.members[1].bus is inner and outer.members[0].bus is None
    y = outer.resolve("inner.y")
    assert (y.offset, y.width, y.bus) == (3, 3, None)
    assert outer.resolve("inner").bus is inner
    for bad in ("z", "inner.z", "a.x", "inner.", "", "inner..y"):
        assert outer.resolve(bad) is None, bad
    assert outer.paths() == ["a", "inner", "inner.x", "inner.y", "b"]


def test_layout_is_an_int_and_compares_layouts_by_signature():
    a = BusLayout([("p", 2), ("q", 1)])
    b = BusLayout([("p", 1), ("q", 2)])
    assert a == b == 3 and a.signature != b.signature
    assert width_key(a) != width_key(b) and width_key(a) == width_key(BusLayout([("p", 2), ("q", 1)]))
    assert width_key(3) == (3, None, None)
    assert np.zeros(a).shape == (3,) and max([1, a, 2]) is a
    assert str(a) == f"{a}" == "3" and repr(a) == "BusLayout(3: p[0:2], q[2:3])"
    back = pickle.loads(pickle.dumps(BusLayout([("s", a), ("t", 1)])))
    assert back.signature == BusLayout([("s", a), ("t", 1)]).signature


def test_duplicate_member_names_resolve_to_the_first():
    bus = BusLayout([("a", 2), ("a", 1)])
    assert bus.resolve("a").offset == 0 and bus.resolve("a").width == 2


def _width_rule(block_dict, in_widths):
    d = parse(diagram([block_dict], []))
    return load_all()[block_dict["type"]].widths(d.blocks[0], in_widths)


def test_creator_width_rule_names_and_offsets():
    (bus,) = _width_rule(creator("bc", ["a", "", "c"], n=4), [2, 1, 3, 0])
    assert isinstance(bus, BusLayout) and int(bus) == 7
    assert [(m.name, m.offset, m.width) for m in bus.members] == [
        ("a", 0, 2), ("signal2", 2, 1), ("c", 3, 3), ("signal4", 6, 1)]


def test_selector_width_rule_sizes_each_output_by_its_member():
    inner = BusLayout([("x", 1), ("y", 3)])
    bus = BusLayout([("a", 2), ("inner", inner)])
    widths = _width_rule(selector("s", ["inner.y", "a", "inner"]), [bus])
    assert widths[:2] == [3, 2] and widths[2] is inner


# ----------------------------------------------------------------------------- busCreator

def test_creator_records_the_packed_vector():
    y = values(sim(BASE + [record()], BASE_WIRES + [wire("bc", "w")]))
    assert y.tolist() == [[1, 2, 7], [1, 2, 7]]


def test_creator_packs_vectors_and_ramps_in_port_order():
    blocks = [const("a", [4, 5, 6]), blk("r", "ramp", slope=2), const("b", [-1, -2]),
              creator("bc", ["a", "r", "b"]), record()]
    y = values(sim(blocks, [wire("a", "bc", 0, 0), wire("r", "bc", 0, 1), wire("b", "bc", 0, 2), wire("bc", "w")],
                   duration=0.2))
    t = np.array([0.0, 0.1, 0.2])
    assert np.allclose(y, np.column_stack([np.full((3, 3), [4, 5, 6]), 2 * t, np.full((3, 2), [-1, -2])]),
                       atol=1e-15)


def test_creator_default_names_and_unconnected_member():
    blocks = [const("c", 3), blk("bc", "busCreator", inputs=3), selector("s", ["signal3", "signal2"]),
              record("w1", "a"), record("w2", "b")]
    res = sim(blocks, [wire("c", "bc", 0, 2), wire("bc", "s"), wire("s", "w1", 0), wire("s", "w2", 1)])
    assert values(res, "a").tolist() == [[3], [3]] and values(res, "b").tolist() == [[0], [0]]


def test_creator_with_no_declared_inputs_is_one_zero_member():
    res = sim([blk("bc", "busCreator", inputs=0), selector("s", ["signal1"]), record()],
              [wire("bc", "s"), wire("s", "w")])
    assert values(res).tolist() == [[0], [0]]


def test_single_string_member_names_and_selection():
    blocks = [const("c", 9), blk("bc", "busCreator", inputs=1, MemberNames="speed"),
              blk("s", "busSelector", outputs=1, SelectedSignals="speed"), record()]
    assert values(sim(blocks, [wire("c", "bc"), wire("bc", "s"), wire("s", "w")])).tolist() == [[9], [9]]


def test_named_bus_type_is_an_unknown_bus_type_error():
    blocks = BASE[:2] + [blk("bc", "busCreator", inputs=2, MemberNames=["pos", "count"], BusType="Pose"), record()]
    err = error_of(blocks, BASE_WIRES + [wire("bc", "w")])
    assert err.code == "unknown_bus_type" and err.block == "bc" and err.param == "BusType"
    assert err.path == "/blocks/2/params/BusType" and "'Pose'" in err.message


def test_non_string_member_names_are_a_param_type_error():
    with pytest.raises(DiagramError) as info:
        sim([blk("bc", "busCreator", inputs=2, MemberNames=["a", 5])], [])
    assert info.value.code == "param_type" and info.value.param == "MemberNames"


# ----------------------------------------------------------------------------- busSelector

NESTED = [const("x", 5), blk("r", "ramp", slope=1), const("v", [7, 8]),
          creator("inner", ["x", "y"]), creator("outer", ["inner", "v"])]
NESTED_WIRES = [wire("x", "inner", 0, 0), wire("r", "inner", 0, 1), wire("inner", "outer", 0, 0),
                wire("v", "outer", 0, 1)]


def select(paths, duration=0.2, outputs=None, **kw):
    """Run NESTED through a busSelector; record output p as 'y<p>'."""
    n = len(paths) if outputs is None else outputs
    blocks = NESTED + [selector("s", paths, outputs=n, **kw)] + [record(f"w{p}", f"y{p}") for p in range(n)]
    conns = NESTED_WIRES + [wire("outer", "s")] + [wire("s", f"w{p}", p) for p in range(n)]
    return sim(blocks, conns, duration=duration)


def test_selector_dotted_paths_into_nested_buses():
    res = select(["inner.y", "v", "inner.x"])
    t = [0.0, 0.1, 0.2]
    assert np.allclose(values(res, "y0")[:, 0], t, atol=1e-15)
    assert values(res, "y1").tolist() == [[7, 8]] * 3 and values(res, "y2").tolist() == [[5]] * 3


def test_selecting_a_nested_bus_gives_a_bus_output():
    blocks = NESTED + [selector("s", ["inner"]), selector("s2", ["y", "x"]), record("w1", "bus"),
                       record("w2", "y"), record("w3", "x")]
    conns = NESTED_WIRES + [wire("outer", "s"), wire("s", "s2"), wire("s", "w1"), wire("s2", "w2", 0),
                            wire("s2", "w3", 1)]
    res = sim(blocks, conns, duration=0.2)
    assert np.allclose(values(res, "bus"), [[5, 0], [5, 0.1], [5, 0.2]], atol=1e-15)
    assert np.allclose(values(res, "y")[:, 0], [0, 0.1, 0.2], atol=1e-15)
    assert values(res, "x").tolist() == [[5]] * 3


def test_output_as_bus_packs_the_selection_in_listed_order():
    blocks = NESTED + [selector("s", ["v", "inner.y"], outputs=1, OutputAsBus=True), selector("s2", ["y", "v"]),
                       record("w1", "bus"), record("w2", "y"), record("w3", "v")]
    conns = NESTED_WIRES + [wire("outer", "s"), wire("s", "s2"), wire("s", "w1"), wire("s2", "w2", 0),
                            wire("s2", "w3", 1)]
    res = sim(blocks, conns, duration=0.2)
    assert np.allclose(values(res, "bus"), [[7, 8, 0], [7, 8, 0.1], [7, 8, 0.2]], atol=1e-15)
    assert np.allclose(values(res, "y")[:, 0], [0, 0.1, 0.2], atol=1e-15)
    assert values(res, "v").tolist() == [[7, 8]] * 3


def test_output_as_bus_names_colliding_leaves_by_their_whole_path():
    # {a={x=1}, b={x=2}}: selecting a.x then b.x names the members 'x' and 'b_x' (nflow's rule)
    blocks = [const("one", 1), const("two", 2), creator("a", ["x"]), creator("b", ["x"]), creator("top", ["a", "b"]),
              selector("s", ["a.x", "b.x"], outputs=1, OutputAsBus=True), selector("s2", ["b_x", "x"]),
              record("w1", "bx"), record("w2", "x")]
    conns = [wire("one", "a"), wire("two", "b"), wire("a", "top", 0, 0), wire("b", "top", 0, 1), wire("top", "s"),
             wire("s", "s2"), wire("s2", "w1", 0), wire("s2", "w2", 1)]
    res = sim(blocks, conns)
    assert values(res, "bx").tolist() == [[2], [2]] and values(res, "x").tolist() == [[1], [1]]
    err = error_of(blocks[:-3] + [selector("s2", ["x.b"]), record("w1", "bx")],
                   conns[:-2] + [wire("s2", "w1")])
    assert err.code == "unknown_bus_member" and "available: x, b_x" in err.message


def test_output_as_bus_of_a_scalar_bus():
    blocks = [const("c", 4), creator("bc", ["k"]), selector("s", ["k", "k"], outputs=1, OutputAsBus=True), record()]
    assert values(sim(blocks, [wire("c", "bc"), wire("bc", "s"), wire("s", "w")])).tolist() == [[4, 4], [4, 4]]


def test_comma_separated_selection():
    res = select(["v, inner.x"], duration=0.1, outputs=2)
    assert values(res, "y0").tolist() == [[7, 8]] * 2 and values(res, "y1").tolist() == [[5]] * 2


def test_paths_beyond_the_output_ports_are_ignored_with_a_warning():
    res = select(["v", "nope"], duration=0.1, outputs=1)
    assert values(res, "y0").tolist() == [[7, 8]] * 2
    assert any("'nope' not output" in w for w in res["warnings"])


def test_output_ports_beyond_the_paths_stay_zero():
    res = select(["inner.x"], duration=0.1, outputs=2)
    assert values(res, "y0").tolist() == [[5]] * 2 and values(res, "y1").tolist() == [[0]] * 2


def test_unknown_member_error_names_the_available_members_and_a_suggestion():
    blocks = NESTED + [selector("s", ["v", "inner.yy"]), record()]
    err = error_of(blocks, NESTED_WIRES + [wire("outer", "s"), wire("s", "w")])
    assert err.code == "unknown_bus_member" and err.block == "s" and err.param == "SelectedSignals"
    assert err.path == "/blocks/5/params/SelectedSignals"
    assert "unknown bus member 'inner.yy' (available: inner, v)" in err.message
    assert "did you mean 'inner.y'?" in err.message


def test_empty_selection_is_an_error():
    for empty in ([], "", [""]):
        blocks = NESTED + [blk("s", "busSelector", outputs=1, SelectedSignals=empty), record()]
        err = error_of(blocks, NESTED_WIRES + [wire("outer", "s"), wire("s", "w")])
        assert err.code == "param_value" and "non-empty SelectedSignals" in err.message, empty


def test_selector_on_a_plain_signal_or_nothing_is_not_a_bus():
    err = error_of([const("c", [1, 2]), selector("s", ["a"]), record()], [wire("c", "s"), wire("s", "w")])
    assert err.code == "not_a_bus" and err.block == "s" and "width 2" in err.message
    err = error_of([selector("s", ["a"]), record()], [wire("s", "w")])
    assert err.code == "not_a_bus" and "unconnected" in err.message
    err = error_of([const("c", 1), blk("m", "mux", inputs=1), blk("ba", "busAssignment", AssignedSignals=["a"]),
                    record()], [wire("c", "m"), wire("m", "ba"), wire("ba", "w")])
    assert err.code == "not_a_bus" and err.block == "ba"


# ----------------------------------------------------------------------------- busAssignment

def assign(paths, replacements: dict, n_inputs=None, select_path=None, duration=0.1, key="AssignedSignals"):
    """BASE bus -> busAssignment (replacement sources on ports 1..) -> record the whole bus."""
    n = 1 + len(paths) if n_inputs is None else n_inputs
    blocks = BASE + [dict(src, id=f"r{p}") for p, src in replacements.items()]
    blocks += [blk("ba", "busAssignment", inputs=n, **{key: paths}), record()]
    conns = BASE_WIRES + [wire("bc", "ba", 0, 0)] + [wire(f"r{p}", "ba", 0, p) for p in replacements]
    conns.append(wire("ba", "w"))
    return sim(blocks, conns, duration=duration)


def test_assignment_page_example_also_keeps_the_other_members():
    assert values(assign(["count"], {1: const("", 99)})).tolist() == [[1, 2, 99]] * 2


def test_assign_a_vector_member_with_a_vector_a_scalar_and_a_wider_signal():
    assert values(assign(["pos"], {1: const("", [5, 6])})).tolist() == [[5, 6, 7]] * 2
    assert values(assign(["pos"], {1: const("", -3)})).tolist() == [[-3, -3, 7]] * 2
    assert values(assign(["pos"], {1: const("", [8, 9, 10])})).tolist() == [[8, 9, 7]] * 2


def test_assign_several_members_and_overlaps_in_list_order():
    res = assign(["count", "pos", "count"], {1: const("", 1), 2: const("", [3, 4]), 3: const("", 5)})
    assert values(res).tolist() == [[3, 4, 5]] * 2


def test_narrower_vector_replacement_is_a_width_mismatch():
    blocks = BASE + [const("r", [1, 2]), blk("ba", "busAssignment", AssignedSignals=["pos"]), record()]
    wide = [const("pos", [1, 2, 3])] + BASE[1:]
    err = error_of(wide + blocks[3:], BASE_WIRES + [wire("bc", "ba"), wire("r", "ba", 0, 1), wire("ba", "w")])
    assert err.code == "width_mismatch" and err.block == "ba" and "'pos'" in err.message


def test_unconnected_or_missing_replacement_ports_write_zeros():
    assert values(assign(["pos"], {})).tolist() == [[0, 0, 7]] * 2
    res = assign(["count", "pos"], {1: const("", 3)}, n_inputs=2)
    assert values(res).tolist() == [[0, 0, 3]] * 2
    assert any("'pos' set to 0" in w for w in res["warnings"])


def test_no_paths_passes_the_bus_through_and_extra_inputs_warn():
    res = assign([], {1: const("", 3)}, n_inputs=2)
    assert values(res).tolist() == [[1, 2, 7]] * 2
    assert any("have no path" in w for w in res["warnings"])


def test_selected_signals_is_read_when_assigned_signals_is_absent():
    res = assign(["count"], {1: const("", 42)}, key="SelectedSignals")
    assert values(res).tolist() == [[1, 2, 42]] * 2


def test_assign_a_nested_member_and_a_whole_sub_bus():
    blocks = NESTED + [const("n", -1), const("m", [10, 20]),
                       blk("ba", "busAssignment", inputs=3, AssignedSignals=["inner", "inner.y"]), record()]
    conns = NESTED_WIRES + [wire("outer", "ba"), wire("m", "ba", 0, 1), wire("n", "ba", 0, 2), wire("ba", "w")]
    assert values(sim(blocks, conns)).tolist() == [[10, -1, 7, 8]] * 2


def test_assign_on_a_scalar_bus():
    blocks = [const("c", 4), const("r", 6), creator("bc", ["k"]), blk("ba", "busAssignment", AssignedSignals=["k"]),
              record()]
    res = sim(blocks, [wire("c", "bc"), wire("bc", "ba"), wire("r", "ba", 0, 1), wire("ba", "w")])
    assert values(res).tolist() == [[6], [6]]


def test_assign_unknown_member_is_an_error():
    blocks = BASE + [const("r", 1), blk("ba", "busAssignment", AssignedSignals=["cont"]), record()]
    err = error_of(blocks, BASE_WIRES + [wire("bc", "ba"), wire("r", "ba", 0, 1), wire("ba", "w")])
    assert err.code == "unknown_bus_member" and err.param == "AssignedSignals"
    assert "(available: pos, count); did you mean 'count'?" in err.message


# ----------------------------------------------------------------------------- layouts through other blocks

def test_bus_layout_survives_a_unit_delay_and_pass_through_blocks():
    for mid in ("unitDelay", "signalConversion", "zoh", "initialCondition"):
        blocks = BASE + [blk("m", mid), selector("s", ["count", "pos"]), record("w1", "c"), record("w2", "p")]
        conns = BASE_WIRES + [wire("bc", "m"), wire("m", "s"), wire("s", "w1", 0), wire("s", "w2", 1)]
        res = sim(blocks, conns)
        first = 0 if mid in ("unitDelay", "initialCondition") else 7
        assert values(res, "c").tolist() == [[first], [7]], mid
        assert values(res, "p")[1].tolist() == [1, 2], mid


def test_bus_state_loop_settles_in_every_declaration_order():
    # count := count(previous step) + 1, the bus held by a unitDelay in a feedback loop
    parts = [creator("bc", ["pos", "count"]), blk("ba", "busAssignment", AssignedSignals=["count"]),
             blk("d", "unitDelay"), selector("s", ["count"]), blk("inc", "bias", Bias=1)]
    conns = [wire("pos", "bc", 0, 0), wire("cnt", "bc", 0, 1), wire("bc", "ba", 0, 0), wire("inc", "ba", 0, 1),
             wire("ba", "d"), wire("d", "s"), wire("s", "inc"), wire("ba", "w")]
    for order in itertools.permutations(parts):
        y = values(sim([const("pos", [1, 2]), const("cnt", 0)] + list(order) + [record()], conns, duration=0.3))
        assert y.tolist() == [[1, 2, 1], [1, 2, 2], [1, 2, 3], [1, 2, 4]], [b["id"] for b in order]


def test_bus_crosses_subsystem_ports():
    body = {"blocks": [blk("in1", "labelSource", GotoTag="u", isExternalPort=True),
                       selector("sel", ["count"]), blk("g", "gain", Gain=2),
                       blk("ba", "busAssignment", inputs=2, AssignedSignals=["count"]),
                       blk("out1", "labelSink", GotoTag="y", isExternalPort=True)],
            "connections": [wire("in1", "sel"), wire("sel", "g"), wire("in1", "ba", 0, 0), wire("g", "ba", 0, 1),
                            wire("ba", "out1")]}
    blocks = BASE + [blk("sub", "subsystem", subsystem=body, externalInputs=["in1"], externalOutputs=["out1"]),
                     selector("s", ["count", "pos"]), record("w1", "c"), record("w2", "p")]
    res = sim(blocks, BASE_WIRES + [wire("bc", "sub"), wire("sub", "s"), wire("s", "w1", 0), wire("s", "w2", 1)])
    assert values(res, "c").tolist() == [[14], [14]] and values(res, "p").tolist() == [[1, 2], [1, 2]]


# ----------------------------------------------------------------------------- properties

members = st.lists(st.tuples(st.integers(1, 3), st.floats(-1e6, 1e6, allow_nan=False)), min_size=1, max_size=5)


def _bus_of(spec):
    """Constants c<k> of width w_k (elements v_k, v_k+1, ...) into busCreator 'bc' named m<k>."""
    blocks, conns, data = [], [], []
    for k, (w, v) in enumerate(spec):
        value = [v + i for i in range(w)] if w > 1 else v
        data.append(np.atleast_1d(np.asarray(value, dtype=float)))
        blocks.append(const(f"c{k}", value))
        conns.append(wire(f"c{k}", "bc", 0, k))
    blocks.append(creator("bc", [f"m{k}" for k in range(len(spec))]))
    return blocks, conns, data


@FAST
@given(members)
def test_selecting_every_member_reproduces_the_inputs(spec):
    blocks, conns, data = _bus_of(spec)
    n = len(spec)
    blocks += [selector("s", [f"m{k}" for k in reversed(range(n))])] + [record(f"w{k}", f"y{k}") for k in range(n)]
    conns += [wire("bc", "s")] + [wire("s", f"w{k}", n - 1 - k) for k in range(n)]
    res = sim(blocks, conns, duration=0.1)
    for k in range(n):
        assert np.array_equal(values(res, f"y{k}")[0], data[k])
    flat = np.concatenate(data)
    whole = sim(blocks[:n + 1] + [record()], conns[:n] + [wire("bc", "w")])
    assert np.array_equal(values(whole)[0], flat)


@FAST
@given(members, st.data())
def test_assign_then_select_returns_the_assigned_value(spec, draw):
    blocks, conns, data = _bus_of(spec)
    n = len(spec)
    k = draw.draw(st.integers(0, n - 1))
    w = len(data[k])
    new = draw.draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=w, max_size=w))
    blocks += [const("new", new if w > 1 else new[0]), blk("ba", "busAssignment", AssignedSignals=[f"m{k}"]),
               selector("s", [f"m{j}" for j in range(n)])] + [record(f"w{j}", f"y{j}") for j in range(n)]
    conns += [wire("bc", "ba"), wire("new", "ba", 0, 1), wire("ba", "s")] + [wire("s", f"w{j}", j) for j in range(n)]
    res = sim(blocks, conns, duration=0.1)
    for j in range(n):
        expected = np.asarray(new, dtype=float) if j == k else data[j]
        assert np.array_equal(values(res, f"y{j}")[1], expected)


@FAST
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4), st.integers(1, 3))
def test_nested_paths_address_the_same_elements_as_the_flat_offsets(inner_widths, tail):
    inner = BusLayout([(f"i{k}", w) for k, w in enumerate(inner_widths)])
    outer = BusLayout([("head", 2), ("sub", inner), ("tail", tail)])
    flat = np.arange(int(outer), dtype=float)
    pieces = [flat[outer.resolve(f"sub.i{k}").offset:][:w] for k, w in enumerate(inner_widths)]
    assert np.array_equal(np.concatenate(pieces), flat[2:2 + int(inner)])
    assert outer.resolve("tail").offset == 2 + sum(inner_widths) and int(outer) == 2 + sum(inner_widths) + tail
