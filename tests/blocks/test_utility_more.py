"""Utility library, second batch: dataStoreMemory / dataStoreWrite / dataStoreRead,
selector, multiportSwitch, assignment, reshape, concatenate, toggleSwitch, comment."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from nflow_compat import DiagramError
from tests.util import blk, diagram, record, run, trace, wire

FAST = settings(max_examples=30, deadline=None)


def vec_ramp(slopes):
    """Blocks making 'g' = [s0 t, s1 t, ...] from ramps and a mux (no vector gain needed)."""
    return [blk(f"r{i}", "ramp", slope=s) for i, s in enumerate(slopes)] + [blk("g", "mux", inputs=len(slopes))]


def vec_wires(slopes):
    return [wire(f"r{i}", "g", 0, i) for i in range(len(slopes))]


def const(id, value):
    return blk(id, "constant", Value=value)


def out(blocks, conns, duration=0.1, **kw):
    return trace(diagram(blocks + [record()], conns, duration=duration, **kw))


# ----------------------------------------------------------------------------- data stores

def test_data_store_ramp_reads_one_step_late():
    # the dataStoreMemory page example: Memory 'M', ramp -> Write, Read -> toWorkspace
    y = out([blk("mem", "dataStoreMemory", DataStoreName="M"), blk("r", "ramp"),
             blk("wr", "dataStoreWrite", DataStoreName="M"), blk("rd", "dataStoreRead", DataStoreName="M")],
            [wire("r", "wr"), wire("rd", "w")], duration=1.0)[:, 0]
    assert np.allclose(y, [0.0] + [0.1 * k for k in range(10)], atol=1e-15)


def test_data_store_read_before_write_whatever_the_declaration_order():
    for order in ((0, 1, 2, 3), (3, 2, 1, 0), (1, 3, 0, 2)):
        blocks = [blk("mem", "dataStoreMemory", DataStoreName="A", InitialValue=5), blk("r", "ramp", slope=10),
                  blk("wr", "dataStoreWrite", DataStoreName="A"), blk("rd", "dataStoreRead", DataStoreName="A")]
        y = out([blocks[i] for i in order], [wire("r", "wr"), wire("rd", "w")], duration=0.3)[:, 0]
        assert np.allclose(y, [5, 0, 1, 2], atol=1e-12), order


def test_data_store_counter_loop_is_not_an_algebraic_loop():
    y = out([blk("m", "dataStoreMemory", DataStoreName="n", InitialValue=10), blk("rd", "dataStoreRead", DataStoreName="n"),
             blk("b", "bias", Bias=1), blk("wr", "dataStoreWrite", DataStoreName="n")],
            [wire("rd", "b"), wire("b", "wr"), wire("rd", "w")], duration=0.5)
    assert y[:, 0].tolist() == [10, 11, 12, 13, 14, 15]


def test_data_store_without_memory_starts_at_zero_and_names_are_separate():
    y = out([blk("ca", "constant", Value=3), blk("cb", "constant", Value=-1),
             blk("wa", "dataStoreWrite", DataStoreName="a"), blk("wb", "dataStoreWrite", DataStoreName="b"),
             blk("ra", "dataStoreRead", DataStoreName="a"), blk("rb", "dataStoreRead", DataStoreName="b"),
             blk("rz", "dataStoreRead", DataStoreName="nobody"), blk("m", "mux", inputs=3)],
            [wire("ca", "wa"), wire("cb", "wb"), wire("ra", "m", 0, 0), wire("rb", "m", 0, 1), wire("rz", "m", 0, 2),
             wire("m", "w")], duration=0.2)
    assert y.tolist() == [[0, 0, 0], [3, -1, 0], [3, -1, 0]]


def test_data_store_two_writers_later_update_wins_and_unconnected_writer_is_inert():
    y = out([blk("m", "dataStoreMemory", DataStoreName="s", InitialValue=1), const("a", 7), const("b", 9),
             blk("w1", "dataStoreWrite", DataStoreName="s"), blk("w2", "dataStoreWrite", DataStoreName="s"),
             blk("w3", "dataStoreWrite", DataStoreName="s"), blk("rd", "dataStoreRead", DataStoreName="s")],
            [wire("a", "w1"), wire("b", "w2"), wire("rd", "w")], duration=0.2)
    assert y[:, 0].tolist() == [1, 9, 9]


def test_data_store_vector_write_keeps_element_zero():
    y = out([const("c", [4, 5]), blk("wr", "dataStoreWrite"), blk("rd", "dataStoreRead")],
            [wire("c", "wr"), wire("rd", "w")], duration=0.1)
    assert y.tolist() == [[0], [4]]


def test_data_stores_are_per_run_and_per_plan():
    d = diagram([blk("c", "constant", Value=2), blk("wr", "dataStoreWrite", DataStoreName="x"),
                 blk("rd", "dataStoreRead", DataStoreName="x"), record()], [wire("c", "wr"), wire("rd", "w")],
                duration=0.2)
    plan, other = nc.compile_plan(d), nc.compile_plan(d)
    for _ in range(2):   # a second run starts from 0 again, not from the last write
        assert plan.run()["workspace"]["y"].tolist() == [[0], [2], [2]]
    assert other.run()["workspace"]["y"].tolist() == [[0], [2], [2]]


# ----------------------------------------------------------------------------- selector

def test_selector_picks_and_clamps():
    assert out([const("c", [10, 20, 30]), blk("s", "selector", Indices=[3, 1, 5, 0])],
               [wire("c", "s"), wire("s", "w")]).tolist() == [[30, 10, 30, 10]] * 2


def test_selector_default_picks_the_first_element_and_accepts_strings():
    assert out([const("c", [10, 20, 30]), blk("s", "selector")], [wire("c", "s"), wire("s", "w")]).tolist() == [[10]] * 2
    assert out([const("c", [10, 20, 30]), blk("s", "selector", Indices="[2 3]")],
               [wire("c", "s"), wire("s", "w")]).tolist() == [[20, 30]] * 2
    # indices round half away from zero: 1.5 -> 2, 2.49 -> 2
    assert out([const("c", [10, 20, 30]), blk("s", "selector", Indices=[1.5, 2.49])],
               [wire("c", "s"), wire("s", "w")]).tolist() == [[20, 20]] * 2


def test_selector_scalar_and_unconnected_inputs():
    assert out([const("c", 4), blk("s", "selector", Indices=[1, 2, 3])], [wire("c", "s"), wire("s", "w")]).tolist() \
        == [[4, 4, 4]] * 2
    assert out([blk("s", "selector", Indices=[2, 1])], [wire("s", "w")]).tolist() == [[0, 0]] * 2


def test_selector_tracks_a_changing_vector():
    d = diagram([*vec_ramp([1, 2, 3]), blk("s", "selector", Indices=[3, 3, 1]), record()],
                [*vec_wires([1, 2, 3]), wire("g", "s"), wire("s", "w")], duration=0.2)
    assert np.allclose(trace(d), [[0, 0, 0], [0.3, 0.3, 0.1], [0.6, 0.6, 0.2]], atol=1e-15)


@FAST
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=6), st.lists(st.integers(-2, 9), min_size=1, max_size=6))
def test_selector_law(values, idx):
    y = out([const("c", values), blk("s", "selector", Indices=idx)], [wire("c", "s"), wire("s", "w")])[0]
    n = len(values)
    assert y.tolist() == [values[min(max(i, 1), n) - 1] for i in idx]


# ----------------------------------------------------------------------------- multiportSwitch

def mps(control, datas, **params):
    blocks = [const("k", control)] + [const(f"d{i}", v) for i, v in enumerate(datas)]
    blocks.append(blk("m", "multiportSwitch", inputs=1 + len(datas), **params))
    conns = [wire("k", "m", 0, 0)] + [wire(f"d{i}", "m", 0, i + 1) for i in range(len(datas))] + [wire("m", "w")]
    return out(blocks, conns)[0].tolist()


def test_multiport_switch_truncates_and_clamps_the_control():
    datas = [10, 20, 30]
    assert [mps(c, datas)[0] for c in (1, 1.99, 2, 2.7, 3, 99, 0.5, 0, -4)] == [10, 10, 20, 20, 30, 30, 10, 10, 10]


def test_multiport_switch_nan_control_and_vectors():
    assert mps("nan", [1, 2]) == [1]
    assert mps(2, [5, [6, 7], 8]) == [6, 7]
    assert mps(1, [5, [6, 7], 8]) == [5, 5]          # a scalar data input is broadcast
    assert mps(1, [1, 2], DataPortCount=7) == [1]     # DataPortCount is not read


def test_multiport_switch_unconnected_ports():
    # unconnected data port reads 0; unconnected control writes nothing (stays 0)
    y = out([const("k", 2), const("a", 5), blk("m", "multiportSwitch", inputs=3)],
            [wire("k", "m", 0, 0), wire("a", "m", 0, 1), wire("m", "w")])
    assert y.tolist() == [[0], [0]]
    y = out([const("a", 5), blk("m", "multiportSwitch", inputs=3)], [wire("a", "m", 0, 1), wire("m", "w")])
    assert y.tolist() == [[0], [0]]


def test_multiport_switch_follows_a_time_varying_control():
    y = out([blk("r", "ramp", slope=7.5), const("a", 10), const("b", 20), const("c", 30),
             blk("m", "multiportSwitch", inputs=4)],
            [wire("r", "m", 0, 0), wire("a", "m", 0, 1), wire("b", "m", 0, 2), wire("c", "m", 0, 3), wire("m", "w")],
            duration=0.5)
    assert y[:, 0].tolist() == [10, 10, 10, 20, 30, 30]


def test_multiport_switch_needs_a_data_port_and_matching_widths():
    with pytest.raises(DiagramError) as err:
        out([const("k", 1), blk("m", "multiportSwitch", inputs=1)], [wire("k", "m"), wire("m", "w")])
    assert err.value.code == "bad_port_count"
    with pytest.raises(DiagramError) as err:
        mps(1, [[1, 2], [1, 2, 3]])
    assert err.value.code == "width_mismatch"


# ----------------------------------------------------------------------------- assignment

def assign(base, values, indices):
    blocks = [const("b", base), blk("a", "assignment", inputs=2, Indices=indices)]
    conns = [wire("b", "a", 0, 0), wire("a", "w")]
    if values is not None:
        blocks.insert(1, const("v", values))
        conns.append(wire("v", "a", 0, 1))
    return out(blocks, conns)[0].tolist()


def test_assignment_doc_example():
    assert assign([1, 2, 3, 4], [90, 70], [2, 4]) == [1, 90, 3, 70]


def test_assignment_broadcast_duplicates_and_out_of_range():
    assert assign([1, 2, 3], 0, [1, 3]) == [0, 2, 0]
    assert assign([1, 2, 3], [7, 8], [2, 2]) == [1, 7, 3]       # the first value for a repeated index
    assert assign([1, 2, 3], [7, 8], [0, 9]) == [1, 2, 3]       # outside the base: ignored
    assert assign([1, 2, 3], None, [2]) == [1, 0, 3]            # unconnected values read 0
    assert assign(5, 6, 1) == [6] and assign(5, 6, 2) == [5]


def test_assignment_unconnected_base_writes_nothing():
    y = out([const("v", 3), blk("a", "assignment", inputs=2, Indices=[1])], [wire("v", "a", 0, 1), wire("a", "w")])
    assert y.tolist() == [[0], [0]]


def test_assignment_values_too_short_is_an_error():
    with pytest.raises(DiagramError) as err:
        assign([1, 2, 3, 4], [5, 6], [1, 2, 3])
    assert err.value.code == "width_mismatch"


@FAST
@given(st.lists(st.integers(-9, 9), min_size=1, max_size=6), st.data())
def test_assignment_law(base, data):
    n = len(base)
    idx = data.draw(st.lists(st.integers(1, n), min_size=1, max_size=n, unique=True))
    vals = data.draw(st.lists(st.integers(100, 200), min_size=len(idx), max_size=len(idx)))
    expect = list(base)
    for i, v in zip(idx, vals):
        expect[i - 1] = v
    assert assign(base, vals, idx) == expect


# ----------------------------------------------------------------------------- reshape / concatenate

def test_reshape_passes_elements_through():
    for dims in ([2, 3], "[3 2]", 6, [6, 1], ""):
        y = out([const("c", [1, 2, 3, 4, 5, 6]), blk("r", "reshape", OutputDimensions=dims)],
                [wire("c", "r"), wire("r", "w")])
        assert y.tolist() == [[1, 2, 3, 4, 5, 6]] * 2, dims


def test_reshape_broadcasts_a_scalar_and_checks_the_count():
    assert out([const("c", 7), blk("r", "reshape", OutputDimensions=[3])], [wire("c", "r"), wire("r", "w")]).tolist() \
        == [[7, 7, 7]] * 2
    with pytest.raises(DiagramError) as err:
        out([const("c", [1, 2, 3]), blk("r", "reshape", OutputDimensions=[2, 2])], [wire("c", "r"), wire("r", "w")])
    assert err.value.code == "reshape_mismatch" and err.value.param == "OutputDimensions"
    with pytest.raises(DiagramError) as err:
        out([const("c", [1, 2]), blk("r", "reshape", OutputDimensions=[2, -1])], [wire("c", "r"), wire("r", "w")])
    assert err.value.code == "param_value"


def test_concatenate_joins_in_port_order():
    y = out([const("a", [1, 2]), const("b", 3), blk("k", "concatenate", inputs=3)],
            [wire("a", "k", 0, 0), wire("b", "k", 0, 1), wire("k", "w")])
    assert y.tolist() == [[1, 2, 3, 0]] * 2
    y = out([const("a", [1, 2]), const("b", [3, 4]), blk("k", "concatenate", ConcatenateDimension=2)],
            [wire("b", "k", 0, 0), wire("a", "k", 0, 1), wire("k", "w")])
    assert y.tolist() == [[3, 4, 1, 2]] * 2


def test_concatenate_live_signals():
    d = diagram([blk("r", "ramp"), blk("c", "clock"), blk("k", "concatenate"), record()],
                [wire("r", "k", 0, 0), wire("c", "k", 0, 1), wire("k", "w")], duration=0.2)
    assert np.allclose(trace(d), [[0, 0], [0.1, 0.1], [0.2, 0.2]])


# ----------------------------------------------------------------------------- toggleSwitch / comment

def test_toggle_switch_states():
    assert out([blk("t", "toggleSwitch")], [wire("t", "w")]).tolist() == [[0], [0]]
    assert out([blk("t", "toggleSwitch", State=1)], [wire("t", "w")]).tolist() == [[1], [1]]
    assert out([blk("t", "toggleSwitch", State=-2, OnValue=4.5, OffValue=9)], [wire("t", "w")]).tolist() == [[4.5]] * 2
    assert out([blk("t", "toggleSwitch", State=0, OnValue=4.5, OffValue=9)], [wire("t", "w")]).tolist() == [[9]] * 2


def test_comment_is_accepted_and_inert():
    res = run(diagram([blk("note", "comment", CommentText="hello", ShowBorder=False), const("c", 2), record()],
                      [wire("c", "w")], duration=0.1))
    assert res["workspace"]["y"] == [[2.0], [2.0]] and res["warnings"] == []
