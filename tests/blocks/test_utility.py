"""Utility library: mux, demux, switch, multiportSwitch, toggleSwitch, initialCondition,
signalConversion, width, dataStoreMemory / dataStoreWrite / dataStoreRead, selector,
assignment, reshape, concatenate, comment, the buses (busCreator, busSelector,
busAssignment), convert, and complex signals through the routing blocks. The conditional
and iterated subsystems (merge, function calls, iterators) are in tests/engine/test_groups.py."""
from __future__ import annotations

import itertools
import math
import pickle
from fractions import Fraction

import numpy as np
import orjson
import pytest
from hypothesis import given, settings, strategies as st

import nflow_compat as nc
from nflow_compat.blocks import load_all, supported_types
from nflow_compat.diagram import parse
from nflow_compat.errors import DiagramError
from nflow_compat.signals import INTEGER_RANGES, BusLayout, cast, width_key
from tests.blocks.sequences import play, vec_ramp, vec_wires
from tests.complex_signals import complex_out, cvalues, run_blocks, z_source
from tests.util import blk, constant, diagram, record, run, trace, wire


# ----------------------------------------------------------------------------- mux

def test_mux_concatenates_in_port_order():
    d = diagram([constant("a", [1, 2]), constant("b", 3), constant("c", [4, 5, 6]), blk("m", "mux", inputs=3),
                 record()],
                [wire("c", "m", 0, 2), wire("a", "m", 0, 0), wire("b", "m", 0, 1), wire("m", "w")], duration=0.1)
    assert trace(d).tolist() == [[1, 2, 3, 4, 5, 6]] * 2


def test_mux_of_scalars_and_unconnected_ports():
    d = diagram([constant("a", 1), constant("b", 2), blk("m", "mux", inputs=2), record()],
                [wire("a", "m", 0, 0), wire("b", "m", 0, 1), wire("m", "w")], duration=0.1)
    assert trace(d).tolist() == [[1, 2]] * 2
    # an unconnected port contributes one element 0
    d = diagram([constant("a", [1, 2]), blk("m", "mux", inputs=3), record()],
                [wire("a", "m", 0, 1), wire("m", "w")], duration=0.1)
    assert trace(d).tolist() == [[0, 1, 2, 0]] * 2


def test_single_input_mux_is_a_wire():
    d = diagram([blk("r", "ramp"), blk("m", "mux", inputs=1), record()], [wire("r", "m"), wire("m", "w")],
                duration=0.2)
    assert np.allclose(trace(d)[:, 0], [0, 0.1, 0.2])


def test_mux_routes_same_step_values_whatever_the_declaration_order():
    d = diagram([record(), blk("m", "mux", inputs=2), blk("g", "gain", Gain=2), blk("r", "ramp"), constant("c", 7)],
                [wire("r", "g"), wire("g", "m", 0, 0), wire("c", "m", 0, 1), wire("m", "w")], duration=0.2)
    assert np.allclose(trace(d), [[0, 7], [0.2, 7], [0.4, 7]])


def test_mux_output_feeds_vector_blocks():
    d = diagram([constant("a", 1), constant("b", 2), blk("m", "mux", inputs=2),
                 blk("z", "unitDelay", InitialCondition=[9, 8]), record()], [wire("a", "m", 0, 0), wire("b", "m", 0, 1), wire("m", "z"), wire("z", "w")],
                duration=0.1)
    assert trace(d).tolist() == [[9, 8], [1, 2]]


# ----------------------------------------------------------------------------- demux

def demux_outputs(value, outputs, **params):
    blocks = [constant("a", value), blk("d", "demux", outputs=outputs, **params)]
    conns = [wire("a", "d")]
    for p in range(outputs):
        blocks.append(record(f"w{p}", f"y{p}"))
        conns.append(wire("d", f"w{p}", p, 0))
    res = run(diagram(blocks, conns, duration=0.1))
    return [res["workspace"][f"y{p}"][0] for p in range(outputs)]


def test_demux_even_split_with_the_remainder_on_the_first_ports():
    assert demux_outputs([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]
    assert demux_outputs([1, 2, 3, 4, 5], 2) == [[1, 2, 3], [4, 5]]
    assert demux_outputs([1, 2, 3, 4, 5, 6, 7], 3) == [[1, 2, 3], [4, 5], [6, 7]]
    assert demux_outputs([1, 2, 3], 3) == [[1], [2], [3]]


def test_demux_explicit_widths():
    assert demux_outputs([1, 2, 3, 4, 5], 2, Outputs=[1, 4]) == [[1], [2, 3, 4, 5]]
    assert demux_outputs([1, 2, 3, 4, 5], 3, Outputs=[2, 2, 1]) == [[1, 2], [3, 4], [5]]


def test_demux_scalar_input_fans_out():
    assert demux_outputs(4, 3) == [[4], [4], [4]]


def test_demux_unconnected_outputs_stay_zero():
    d = diagram([blk("d", "demux"), record()], [wire("d", "w", 1, 0)], duration=0.1)
    assert trace(d).tolist() == [[0], [0]]


@pytest.mark.parametrize("value,outputs,params", [([1, 2], 3, {}), ([1, 2, 3], 2, {"Outputs": [1, 1]}),
                                                  ([1, 2, 3], 2, {"Outputs": [1, 1, 1]}),
                                                  ([1, 2, 3], 2, {"Outputs": [0, 3]})])
def test_demux_impossible_splits_are_diagram_errors(value, outputs, params):
    with pytest.raises(DiagramError) as info:
        demux_outputs(value, outputs, **params)
    assert info.value.block == "d" and info.value.code in ("width_mismatch", "param_value")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.integers(-50, 50), min_size=1, max_size=4), min_size=1, max_size=4))
def test_mux_then_demux_with_the_same_widths_is_the_identity(parts):
    n = len(parts)
    widths = [len(p) for p in parts]
    blocks = [constant(f"c{k}", p if len(p) > 1 else p[0]) for k, p in enumerate(parts)]
    blocks += [blk("m", "mux", inputs=n), blk("d", "demux", outputs=n, Outputs=widths if n > 1 else widths[0])]
    conns = [wire(f"c{k}", "m", 0, k) for k in range(n)] + [wire("m", "d")]
    for k in range(n):
        blocks.append(record(f"w{k}", f"y{k}"))
        conns.append(wire("d", f"w{k}", k, 0))
    res = run(diagram(blocks, conns, duration=0.1))
    for k, p in enumerate(parts):
        assert res["workspace"][f"y{k}"] == [[float(v) for v in p]] * 2


# ----------------------------------------------------------------------------- switch

def switch_run(control, criteria=None, threshold=0.0, top=10, bottom=-10, **extra):
    blocks, conns = play(control, "c")
    params = {"Threshold": threshold, **extra}
    if criteria is not None:
        params["Criteria"] = criteria
    blocks += [constant("t", top), constant("b", bottom), blk("s", "switch", params), record()]
    conns += [wire("t", "s", 0, 0), wire("c", "s", 0, 1), wire("b", "s", 0, 2), wire("s", "w")]
    res = run(diagram(blocks, conns, duration=(len(control) - 1) * 0.1))
    return np.asarray(res["workspace"]["y"])[:, 0].tolist(), res["warnings"]


def test_switch_criteria_at_the_threshold():
    control = [0, 1, 2, 3]
    assert switch_run(control, "ge", 2)[0] == [-10, -10, 10, 10]
    assert switch_run(control, None, 2)[0] == [-10, -10, 10, 10]     # default 'ge'
    assert switch_run(control, "gt", 2)[0] == [-10, -10, -10, 10]
    assert switch_run(control, "ne", 2)[0] == [10, 10, -10, 10]


def test_switch_criteria_is_an_exact_string_and_others_run_as_ge_with_a_warning():
    for text in ("u2 > Threshold", "GT", ">", "u2 ~= 0"):
        y, warnings = switch_run([0, 1, 2, 3], text, 2)
        assert y == [-10, -10, 10, 10]
        assert any(repr(text) in w for w in warnings)
    assert switch_run([0, 1], "gt", 0)[1] == []


def test_switch_nan_control():
    # NaN compares false except for 'ne'
    for crit, expected in (("ge", 2), ("gt", 2), ("ne", 1)):
        d = diagram([constant("t", 1), constant("c", "nan"), constant("b", 2), blk("s", "switch", Criteria=crit),
                     record()],
                    [wire("t", "s", 0, 0), wire("c", "s", 0, 1), wire("b", "s", 0, 2), wire("s", "w")],
                    duration=0.1)
        assert trace(d)[:, 0].tolist() == [expected] * 2


def test_switch_unconnected_inputs_read_zero():
    d = diagram([constant("t", 5), blk("s", "switch", Threshold=0), record()], [wire("t", "s", 0, 0), wire("s", "w")],
                duration=0.1)
    assert trace(d)[:, 0].tolist() == [5, 5]       # control reads 0 >= 0: top
    d = diagram([constant("t", 5), blk("s", "switch", Threshold=1), record()], [wire("t", "s", 0, 0), wire("s", "w")],
                duration=0.1)
    assert trace(d)[:, 0].tolist() == [0, 0]       # 0 >= 1 fails: the unconnected bottom reads 0


def test_switch_element_wise_with_broadcast():
    d = diagram([constant("t", [1, 2, 3]), constant("c", [-1, 0, 1]), constant("b", 9),
                 blk("s", "switch", Criteria="gt"),
                 record()], [wire("t", "s", 0, 0), wire("c", "s", 0, 1), wire("b", "s", 0, 2), wire("s", "w")],
                duration=0.1)
    assert trace(d).tolist() == [[9, 9, 3]] * 2
    d = diagram([constant("t", [1, 2, 3]), constant("c", 1), blk("s", "switch", Threshold=2), record()],
                [wire("t", "s", 0, 0), wire("c", "s", 0, 1), wire("s", "w")], duration=0.1)
    assert trace(d).tolist() == [[0, 0, 0]] * 2


def test_switch_doc_table_names_are_not_read():
    # `condition` is the page's old name; nflow reads Criteria (default ge)
    assert switch_run([0, 1, 2, 3], condition="gt", threshold=2)[0] == [-10, -10, 10, 10]


# ----------------------------------------------------------------------------- pass-throughs

def test_initial_condition_forces_only_the_first_sample():
    d = diagram([blk("r", "ramp", slope=2), blk("ic", "initialCondition", InitialValue=-4), record()],
                [wire("r", "ic"), wire("ic", "w")], duration=0.3)
    assert np.allclose(trace(d)[:, 0], [-4, 0.2, 0.4, 0.6])


def test_initial_condition_vector_and_unconnected():
    d = diagram([constant("c", [1, 2, 3]), blk("ic", "initialCondition", InitialValue=[7, 8]), record()],
                [wire("c", "ic"), wire("ic", "w")], duration=0.1)
    assert trace(d).tolist() == [[7, 8, 8], [1, 2, 3]]
    d = diagram([constant("c", 1), blk("ic", "initialCondition", InitialValue=[7, 8]), record()],
                [wire("c", "ic"), wire("ic", "w")], duration=0.1)
    assert trace(d).tolist() == [[7, 8], [1, 1]]
    # unconnected: nothing is written, not even the initial value
    d = diagram([blk("ic", "initialCondition", InitialValue=5), record()], [wire("ic", "w")], duration=0.1)
    assert trace(d).tolist() == [[0], [0]]


def test_signal_conversion_is_the_identity():
    d = diagram([blk("s", "sine", Amplitude=3), blk("sc", "signalConversion"), record("w", "y"), record("wu", "u")],
                [wire("s", "sc"), wire("sc", "w"), wire("s", "wu")], duration=1.0)
    res = run(d)
    assert res["workspace"]["y"] == res["workspace"]["u"]
    d = diagram([constant("c", [1, -2]), blk("sc", "signalConversion"), record()], [wire("c", "sc"), wire("sc", "w")],
                duration=0.1)
    assert trace(d).tolist() == [[1, -2]] * 2
    d = diagram([blk("sc", "signalConversion"), record()], [wire("sc", "w")], duration=0.1)
    assert trace(d).tolist() == [[0], [0]]


def test_width_counts_elements_and_is_zero_unconnected():
    for value, n in ((7, 1), ([1, 2, 3, 4], 4)):
        d = diagram([constant("c", value), blk("n", "width"), record()], [wire("c", "n"), wire("n", "w")], duration=0.1)
        assert trace(d).tolist() == [[n], [n]]
    d = diagram([blk("n", "width"), record()], [wire("n", "w")], duration=0.1)
    assert trace(d).tolist() == [[0], [0]]


def test_width_is_a_constant_and_adds_no_algebraic_dependency():
    # y = [1 2] + width(y): the width does not depend on the values, so no loop to relax
    d = diagram([constant("c", [1, 2]), blk("add", "sum", inputs=2, Inputs="++"), blk("n", "width"), record()],
                [wire("c", "add", 0, 0), wire("n", "add", 0, 1), wire("add", "n"), wire("add", "w")], duration=0.1)
    plan = nc.compile_plan(d)
    assert all(callable(f) and f.__name__ != "relax" for f in plan.algebraic)
    assert np.asarray(plan.run()["workspace"]["y"]).tolist() == [[3, 4], [3, 4]]


def test_ported_blocks_are_listed_as_supported():
    types = {t["type"] for t in supported_types()}
    for t in ("mux", "demux", "switch", "initialCondition", "signalConversion", "width", "integrator",
              "unitDelay", "zoh", "difference", "detectChange", "detectIncrease", "detectDecrease",
              "risingEdge", "fallingEdge"):
        assert t in types


FAST = settings(max_examples=30, deadline=None)


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
    y = out([blk("m", "dataStoreMemory", DataStoreName="s", InitialValue=1), constant("a", 7), constant("b", 9),
             blk("w1", "dataStoreWrite", DataStoreName="s"), blk("w2", "dataStoreWrite", DataStoreName="s"),
             blk("w3", "dataStoreWrite", DataStoreName="s"), blk("rd", "dataStoreRead", DataStoreName="s")],
            [wire("a", "w1"), wire("b", "w2"), wire("rd", "w")], duration=0.2)
    assert y[:, 0].tolist() == [1, 9, 9]


def test_data_store_vector_write_keeps_element_zero():
    y = out([constant("c", [4, 5]), blk("wr", "dataStoreWrite"), blk("rd", "dataStoreRead")],
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
    assert out([constant("c", [10, 20, 30]), blk("s", "selector", Indices=[3, 1, 5, 0])],
               [wire("c", "s"), wire("s", "w")]).tolist() == [[30, 10, 30, 10]] * 2


def test_selector_default_picks_the_first_element_and_accepts_strings():
    assert out([constant("c", [10, 20, 30]), blk("s", "selector")],
               [wire("c", "s"), wire("s", "w")]).tolist() == [[10]] * 2
    assert out([constant("c", [10, 20, 30]), blk("s", "selector", Indices="[2 3]")],
               [wire("c", "s"), wire("s", "w")]).tolist() == [[20, 30]] * 2
    # indices round half away from zero: 1.5 -> 2, 2.49 -> 2
    assert out([constant("c", [10, 20, 30]), blk("s", "selector", Indices=[1.5, 2.49])],
               [wire("c", "s"), wire("s", "w")]).tolist() == [[20, 20]] * 2


def test_selector_scalar_and_unconnected_inputs():
    assert out([constant("c", 4), blk("s", "selector", Indices=[1, 2, 3])], [wire("c", "s"), wire("s", "w")]).tolist() \
        == [[4, 4, 4]] * 2
    assert out([blk("s", "selector", Indices=[2, 1])], [wire("s", "w")]).tolist() == [[0, 0]] * 2


def test_selector_tracks_a_changing_vector():
    d = diagram([*vec_ramp([1, 2, 3]), blk("s", "selector", Indices=[3, 3, 1]), record()],
                [*vec_wires([1, 2, 3]), wire("g", "s"), wire("s", "w")], duration=0.2)
    assert np.allclose(trace(d), [[0, 0, 0], [0.3, 0.3, 0.1], [0.6, 0.6, 0.2]], atol=1e-15)


@FAST
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=6), st.lists(st.integers(-2, 9), min_size=1, max_size=6))
def test_selector_law(values, idx):
    y = out([constant("c", values), blk("s", "selector", Indices=idx)], [wire("c", "s"), wire("s", "w")])[0]
    n = len(values)
    assert y.tolist() == [values[min(max(i, 1), n) - 1] for i in idx]


# ----------------------------------------------------------------------------- multiportSwitch

def mps(control, datas, **params):
    blocks = [constant("k", control)] + [constant(f"d{i}", v) for i, v in enumerate(datas)]
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
    y = out([constant("k", 2), constant("a", 5), blk("m", "multiportSwitch", inputs=3)],
            [wire("k", "m", 0, 0), wire("a", "m", 0, 1), wire("m", "w")])
    assert y.tolist() == [[0], [0]]
    y = out([constant("a", 5), blk("m", "multiportSwitch", inputs=3)], [wire("a", "m", 0, 1), wire("m", "w")])
    assert y.tolist() == [[0], [0]]


def test_multiport_switch_follows_a_time_varying_control():
    y = out([blk("r", "ramp", slope=7.5), constant("a", 10), constant("b", 20), constant("c", 30),
             blk("m", "multiportSwitch", inputs=4)],
            [wire("r", "m", 0, 0), wire("a", "m", 0, 1), wire("b", "m", 0, 2), wire("c", "m", 0, 3), wire("m", "w")],
            duration=0.5)
    assert y[:, 0].tolist() == [10, 10, 10, 20, 30, 30]


def test_multiport_switch_needs_a_data_port_and_matching_widths():
    with pytest.raises(DiagramError) as err:
        out([constant("k", 1), blk("m", "multiportSwitch", inputs=1)], [wire("k", "m"), wire("m", "w")])
    assert err.value.code == "bad_port_count"
    with pytest.raises(DiagramError) as err:
        mps(1, [[1, 2], [1, 2, 3]])
    assert err.value.code == "width_mismatch"


# ----------------------------------------------------------------------------- assignment

def assign(base, values, indices):
    blocks = [constant("b", base), blk("a", "assignment", inputs=2, Indices=indices)]
    conns = [wire("b", "a", 0, 0), wire("a", "w")]
    if values is not None:
        blocks.insert(1, constant("v", values))
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
    y = out([constant("v", 3), blk("a", "assignment", inputs=2, Indices=[1])], [wire("v", "a", 0, 1), wire("a", "w")])
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
        y = out([constant("c", [1, 2, 3, 4, 5, 6]), blk("r", "reshape", OutputDimensions=dims)],
                [wire("c", "r"), wire("r", "w")])
        assert y.tolist() == [[1, 2, 3, 4, 5, 6]] * 2, dims


def test_reshape_broadcasts_a_scalar_and_checks_the_count():
    assert out([constant("c", 7), blk("r", "reshape", OutputDimensions=[3])],
               [wire("c", "r"), wire("r", "w")]).tolist() \
        == [[7, 7, 7]] * 2
    with pytest.raises(DiagramError) as err:
        out([constant("c", [1, 2, 3]), blk("r", "reshape", OutputDimensions=[2, 2])], [wire("c", "r"), wire("r", "w")])
    assert err.value.code == "reshape_mismatch" and err.value.param == "OutputDimensions"
    with pytest.raises(DiagramError) as err:
        out([constant("c", [1, 2]), blk("r", "reshape", OutputDimensions=[2, -1])], [wire("c", "r"), wire("r", "w")])
    assert err.value.code == "param_value"


def test_concatenate_joins_in_port_order():
    y = out([constant("a", [1, 2]), constant("b", 3), blk("k", "concatenate", inputs=3)],
            [wire("a", "k", 0, 0), wire("b", "k", 0, 1), wire("k", "w")])
    assert y.tolist() == [[1, 2, 3, 0]] * 2
    y = out([constant("a", [1, 2]), constant("b", [3, 4]), blk("k", "concatenate", ConcatenateDimension=2)],
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
    res = run(diagram([blk("note", "comment", CommentText="hello", ShowBorder=False), constant("c", 2), record()],
                      [wire("c", "w")], duration=0.1))
    assert res["workspace"]["y"] == [[2.0], [2.0]] and res["warnings"] == []


# --------------------------------------------------------------------------------------------------
# Buses: busCreator, busSelector, busAssignment and the BusLayout width they share.
# --------------------------------------------------------------------------------------------------

BUS_SETTINGS = settings(max_examples=40, deadline=None)


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
BASE = [constant("pos", [1, 2]), constant("cnt", 7), creator("bc", ["pos", "count"])]
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
    blocks = [constant("a", [4, 5, 6]), blk("r", "ramp", slope=2), constant("b", [-1, -2]),
              creator("bc", ["a", "r", "b"]), record()]
    y = values(sim(blocks, [wire("a", "bc", 0, 0), wire("r", "bc", 0, 1), wire("b", "bc", 0, 2), wire("bc", "w")],
                   duration=0.2))
    t = np.array([0.0, 0.1, 0.2])
    assert np.allclose(y, np.column_stack([np.full((3, 3), [4, 5, 6]), 2 * t, np.full((3, 2), [-1, -2])]),
                       atol=1e-15)


def test_creator_default_names_and_unconnected_member():
    blocks = [constant("c", 3), blk("bc", "busCreator", inputs=3), selector("s", ["signal3", "signal2"]),
              record("w1", "a"), record("w2", "b")]
    res = sim(blocks, [wire("c", "bc", 0, 2), wire("bc", "s"), wire("s", "w1", 0), wire("s", "w2", 1)])
    assert values(res, "a").tolist() == [[3], [3]] and values(res, "b").tolist() == [[0], [0]]


def test_creator_with_no_declared_inputs_is_one_zero_member():
    res = sim([blk("bc", "busCreator", inputs=0), selector("s", ["signal1"]), record()],
              [wire("bc", "s"), wire("s", "w")])
    assert values(res).tolist() == [[0], [0]]


def test_single_string_member_names_and_selection():
    blocks = [constant("c", 9), blk("bc", "busCreator", inputs=1, MemberNames="speed"),
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

NESTED = [constant("x", 5), blk("r", "ramp", slope=1), constant("v", [7, 8]),
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
    blocks = [constant("one", 1), constant("two", 2), creator("a", ["x"]), creator("b", ["x"]),
              creator("top", ["a", "b"]),
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
    blocks = [constant("c", 4), creator("bc", ["k"]), selector("s", ["k", "k"], outputs=1, OutputAsBus=True), record()]
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
    err = error_of([constant("c", [1, 2]), selector("s", ["a"]), record()], [wire("c", "s"), wire("s", "w")])
    assert err.code == "not_a_bus" and err.block == "s" and "width 2" in err.message
    err = error_of([selector("s", ["a"]), record()], [wire("s", "w")])
    assert err.code == "not_a_bus" and "unconnected" in err.message
    err = error_of([constant("c", 1), blk("m", "mux", inputs=1), blk("ba", "busAssignment", AssignedSignals=["a"]),
                    record()], [wire("c", "m"), wire("m", "ba"), wire("ba", "w")])
    assert err.code == "not_a_bus" and err.block == "ba"


# ----------------------------------------------------------------------------- busAssignment

def bus_assign(paths, replacements: dict, n_inputs=None, select_path=None, duration=0.1, key="AssignedSignals"):
    """BASE bus -> busAssignment (replacement sources on ports 1..) -> record the whole bus."""
    n = 1 + len(paths) if n_inputs is None else n_inputs
    blocks = BASE + [dict(src, id=f"r{p}") for p, src in replacements.items()]
    blocks += [blk("ba", "busAssignment", inputs=n, **{key: paths}), record()]
    conns = BASE_WIRES + [wire("bc", "ba", 0, 0)] + [wire(f"r{p}", "ba", 0, p) for p in replacements]
    conns.append(wire("ba", "w"))
    return sim(blocks, conns, duration=duration)


def test_assignment_page_example_also_keeps_the_other_members():
    assert values(bus_assign(["count"], {1: constant("", 99)})).tolist() == [[1, 2, 99]] * 2


def test_assign_a_vector_member_with_a_vector_a_scalar_and_a_wider_signal():
    assert values(bus_assign(["pos"], {1: constant("", [5, 6])})).tolist() == [[5, 6, 7]] * 2
    assert values(bus_assign(["pos"], {1: constant("", -3)})).tolist() == [[-3, -3, 7]] * 2
    assert values(bus_assign(["pos"], {1: constant("", [8, 9, 10])})).tolist() == [[8, 9, 7]] * 2


def test_assign_several_members_and_overlaps_in_list_order():
    res = bus_assign(["count", "pos", "count"], {1: constant("", 1), 2: constant("", [3, 4]), 3: constant("", 5)})
    assert values(res).tolist() == [[3, 4, 5]] * 2


def test_narrower_vector_replacement_is_a_width_mismatch():
    blocks = BASE + [constant("r", [1, 2]), blk("ba", "busAssignment", AssignedSignals=["pos"]), record()]
    wide = [constant("pos", [1, 2, 3])] + BASE[1:]
    err = error_of(wide + blocks[3:], BASE_WIRES + [wire("bc", "ba"), wire("r", "ba", 0, 1), wire("ba", "w")])
    assert err.code == "width_mismatch" and err.block == "ba" and "'pos'" in err.message


def test_unconnected_or_missing_replacement_ports_write_zeros():
    assert values(bus_assign(["pos"], {})).tolist() == [[0, 0, 7]] * 2
    res = bus_assign(["count", "pos"], {1: constant("", 3)}, n_inputs=2)
    assert values(res).tolist() == [[0, 0, 3]] * 2
    assert any("'pos' set to 0" in w for w in res["warnings"])


def test_no_paths_passes_the_bus_through_and_extra_inputs_warn():
    res = bus_assign([], {1: constant("", 3)}, n_inputs=2)
    assert values(res).tolist() == [[1, 2, 7]] * 2
    assert any("have no path" in w for w in res["warnings"])


def test_selected_signals_is_read_when_assigned_signals_is_absent():
    res = bus_assign(["count"], {1: constant("", 42)}, key="SelectedSignals")
    assert values(res).tolist() == [[1, 2, 42]] * 2


def test_assign_a_nested_member_and_a_whole_sub_bus():
    blocks = NESTED + [constant("n", -1), constant("m", [10, 20]),
                       blk("ba", "busAssignment", inputs=3, AssignedSignals=["inner", "inner.y"]), record()]
    conns = NESTED_WIRES + [wire("outer", "ba"), wire("m", "ba", 0, 1), wire("n", "ba", 0, 2), wire("ba", "w")]
    assert values(sim(blocks, conns)).tolist() == [[10, -1, 7, 8]] * 2


def test_assign_on_a_scalar_bus():
    blocks = [constant("c", 4), constant("r", 6), creator("bc", ["k"]),
              blk("ba", "busAssignment", AssignedSignals=["k"]),
              record()]
    res = sim(blocks, [wire("c", "bc"), wire("bc", "ba"), wire("r", "ba", 0, 1), wire("ba", "w")])
    assert values(res).tolist() == [[6], [6]]


def test_assign_unknown_member_is_an_error():
    blocks = BASE + [constant("r", 1), blk("ba", "busAssignment", AssignedSignals=["cont"]), record()]
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
        y = values(sim([constant("pos", [1, 2]), constant("cnt", 0)] + list(order) + [record()], conns, duration=0.3))
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
        blocks.append(constant(f"c{k}", value))
        conns.append(wire(f"c{k}", "bc", 0, k))
    blocks.append(creator("bc", [f"m{k}" for k in range(len(spec))]))
    return blocks, conns, data


@BUS_SETTINGS
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


@BUS_SETTINGS
@given(members, st.data())
def test_assign_then_select_returns_the_assigned_value(spec, draw):
    blocks, conns, data = _bus_of(spec)
    n = len(spec)
    k = draw.draw(st.integers(0, n - 1))
    w = len(data[k])
    new = draw.draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=w, max_size=w))
    blocks += [constant("new", new if w > 1 else new[0]), blk("ba", "busAssignment", AssignedSignals=[f"m{k}"]),
               selector("s", [f"m{j}" for j in range(n)])] + [record(f"w{j}", f"y{j}") for j in range(n)]
    conns += [wire("bc", "ba"), wire("new", "ba", 0, 1), wire("ba", "s")] + [wire("s", f"w{j}", j) for j in range(n)]
    res = sim(blocks, conns, duration=0.1)
    for j in range(n):
        expected = np.asarray(new, dtype=float) if j == k else data[j]
        assert np.array_equal(values(res, f"y{j}")[1], expected)


@BUS_SETTINGS
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4), st.integers(1, 3))
def test_nested_paths_address_the_same_elements_as_the_flat_offsets(inner_widths, tail):
    inner = BusLayout([(f"i{k}", w) for k, w in enumerate(inner_widths)])
    outer = BusLayout([("head", 2), ("sub", inner), ("tail", tail)])
    flat = np.arange(int(outer), dtype=float)
    pieces = [flat[outer.resolve(f"sub.i{k}").offset:][:w] for k, w in enumerate(inner_widths)]
    assert np.array_equal(np.concatenate(pieces), flat[2:2 + int(inner)])
    assert outer.resolve("tail").offset == 2 + sum(inner_widths) and int(outer) == 2 + sum(inner_widths) + tail


# --------------------------------------------------------------------------------------------------
# convert (nflow's routing/convert.cpp): OutDataType, Rounding, SaturateOnOverflow, and the
# exact int64 / uint64 lane (Python ints / int64, uint64 arrays, recorded as JSON integers).
# --------------------------------------------------------------------------------------------------

NAN, INF = math.nan, math.inf
SMALL_INTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32")


def converted(value, duration=0.1, **params) -> list:
    """Row at t = 0 recorded from convert(constant ``value``) (a list: one per element)."""
    d = diagram([blk("c", "constant", Value=value), blk("b", "convert", **params), record()],
                [wire("c", "b"), wire("b", "w")], duration=duration)
    return nc.simulate(d)["workspace"]["y"][0]


def converted_json(value, **params) -> str:
    d = diagram([blk("c", "constant", Value=value), blk("b", "convert", **params), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.1)
    return nc.simulate_json(orjson.dumps(d))


# ----------------------------------------------------------------------------- float types

def test_double_is_the_identity():
    assert converted([0.1, -2.5, 1e300]) == [0.1, -2.5, 1e300]
    assert converted(0.1) == [0.1]


def test_single_rounds_to_float32():
    assert converted([0.1, 1e39, -1e39], OutDataType="single") == [float(np.float32(0.1)), INF, -INF]
    assert converted(1 / 3, OutDataType="single") == [float(np.float32(1 / 3))]


def test_boolean_is_nonzero():
    assert converted([0.0, -0.0, 0.1, -3.0, "nan"], OutDataType="boolean") == [0.0, 0.0, 1.0, 1.0, 1.0]


# ----------------------------------------------------------------------------- rounding

HALVES = [2.5, -2.5, 0.5, -0.5, 2.7, -2.7, 0.49999999999999994]


@pytest.mark.parametrize("rounding, expect", [
    ("nearest", [3, -3, 1, -1, 3, -3, 0]),          # half away from zero (std::round)
    ("floor", [2, -3, 0, -1, 2, -3, 0]),
    ("ceiling", [3, -2, 1, 0, 3, -2, 1]),
    ("ceil", [3, -2, 1, 0, 3, -2, 1]),
    ("zero", [2, -2, 0, 0, 2, -2, 0]),
    ("fix", [2, -2, 0, 0, 2, -2, 0]),
])
def test_rounding_modes(rounding, expect):
    assert converted(HALVES, OutDataType="int16", Rounding=rounding) == expect


def test_rounding_is_the_default_nearest_and_unknown_names_warn():
    assert converted(HALVES, OutDataType="int16") == [3, -3, 1, -1, 3, -3, 0]
    d = diagram([blk("c", "constant", Value=-2.5), blk("b", "convert", OutDataType="int8", Rounding="Floor"),
                 record()], [wire("c", "b"), wire("b", "w")], duration=0.1)
    res = nc.simulate(d)
    assert res["workspace"]["y"][0] == [-3.0]          # nflow compares exactly: 'Floor' is nearest
    assert any("Rounding 'Floor'" in w for w in res["warnings"])


def test_rounding_does_not_apply_to_float_types():
    assert converted(2.5, OutDataType="double", Rounding="floor") == [2.5]
    assert converted(2.5, OutDataType="single", Rounding="floor") == [2.5]


# ----------------------------------------------------------------------------- saturate / wrap

@pytest.mark.parametrize("dtype, values, saturated, wrapped", [
    ("int8", [300, -129, 128, -300], [127, -128, 127, -128], [44, 127, -128, -44]),
    ("uint8", [-1, 256, 511.6], [0, 255, 255], [255, 0, 0]),
    ("int16", [40000, -40000], [32767, -32768], [-25536, 25536]),
    ("uint16", [-1, 70000], [0, 65535], [65535, 4464]),
    ("int32", [1e10, 2**31], [2**31 - 1, 2**31 - 1], [1410065408, -2**31]),
    ("uint32", [-1, 2**32 + 5], [0, 2**32 - 1], [2**32 - 1, 5]),
])
def test_saturate_or_wrap(dtype, values, saturated, wrapped):
    assert converted(values, OutDataType=dtype) == saturated
    assert converted(values, OutDataType=dtype, SaturateOnOverflow=True) == saturated
    assert converted(values, OutDataType=dtype, SaturateOnOverflow=False) == wrapped


@pytest.mark.parametrize("saturate", [True, False])
def test_non_finite_to_integers(saturate):
    assert converted(["nan", "inf", "-inf"], OutDataType="int8", SaturateOnOverflow=saturate) == [0, 127, -128]
    assert converted(["nan", "inf", "-inf"], OutDataType="uint64", SaturateOnOverflow=saturate) == \
        [0, 2**64 - 1, 0]


def test_in_range_values_are_only_rounded():
    assert converted([-128, 127, 5.5], OutDataType="int8", SaturateOnOverflow=False) == [-128, 127, 6]


# ----------------------------------------------------------------------------- int64 / uint64 exact lane

def test_int64_bounds_are_exact_integers():
    text = converted_json([1e19, -1e19, 123.5], OutDataType="int64")
    assert '"y":[[9223372036854775807,-9223372036854775808,124],' in text
    assert converted([1e19, -1e19], OutDataType="int64") == [2**63 - 1, -2**63]


def test_uint64_wraps_negatives_exactly():
    text = converted_json([-1, -3, 2.0**64 + 4096], OutDataType="uint64", SaturateOnOverflow=False)
    assert '"y":[[18446744073709551615,18446744073709551613,4096],' in text
    assert converted([-5, 1e20], OutDataType="uint64") == [0, 2**64 - 1]


def test_int64_wrap():
    assert converted([2.0**63, -2.0**63 - 4096, 2.0**64 + 4096], OutDataType="int64",
                     SaturateOnOverflow=False) == [-2**63, 2**63 - 4096, 4096]


def test_scalar_int64_is_recorded_as_integers():
    d = diagram([blk("c", "constant", Value=2.0**62), blk("b", "convert", OutDataType="int64"), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.1)
    y = nc.simulate(d)["workspace"]["y"]
    assert y == [[2**62], [2**62]] and all(isinstance(row[0], int) for row in y)


def test_integer_input_is_brought_into_range_without_rounding():
    # int64 -> uint64: the exact value, clamped or wrapped; uint64 -> int64 likewise
    blocks = [blk("c", "constant", Value=[-1.0, 2.0**62]), blk("a", "convert", OutDataType="int64"),
              blk("b", "convert", OutDataType="uint64", SaturateOnOverflow=False), record()]
    d = diagram(blocks, [wire("c", "a"), wire("a", "b"), wire("b", "w")], duration=0.1)
    assert nc.simulate(d)["workspace"]["y"][0] == [2**64 - 1, 2**62]
    blocks[2] = blk("b", "convert", OutDataType="uint64")
    assert nc.simulate(d)["workspace"]["y"][0] == [0, 2**62]
    blocks = [blk("c", "constant", Value=-1.0), blk("a", "convert", OutDataType="uint64", SaturateOnOverflow=False),
              blk("b", "convert", OutDataType="int64"), record()]
    d = diagram(blocks, [wire("c", "a"), wire("a", "b"), wire("b", "w")], duration=0.1)
    assert nc.simulate(d)["workspace"]["y"][0] == [2**63 - 1]


def test_int64_to_double_and_small_types_go_through_the_double():
    blocks = [blk("c", "constant", Value=-1.0), blk("a", "convert", OutDataType="uint64", SaturateOnOverflow=False),
              blk("b", "convert", OutDataType="double"), record()]
    d = diagram(blocks, [wire("c", "a"), wire("a", "b"), wire("b", "w")], duration=0.1)
    assert nc.simulate(d)["workspace"]["y"][0] == [float(2**64 - 1)]
    blocks[2] = blk("b", "convert", OutDataType="int8")
    assert nc.simulate(d)["workspace"]["y"][0] == [127.0]


def test_exact_integers_survive_routing_blocks():
    blocks = [blk("c", "constant", Value=[-1.0, -2.0]),
              blk("a", "convert", OutDataType="uint64", SaturateOnOverflow=False),
              blk("s", "selector", Indices=2), record()]
    d = diagram(blocks, [wire("c", "a"), wire("a", "s"), wire("s", "w")], duration=0.1)
    assert nc.simulate(d)["workspace"]["y"] == [[2**64 - 2]] * 2


# ----------------------------------------------------------------------------- inputs

def test_complex_input_converts_its_real_part():
    blocks = [blk("r", "constant", Value=[2.6, -1.0]), blk("i", "constant", Value=[9.0, 9.0]),
              blk("z", "realImagToComplex"), blk("b", "convert", OutDataType="int8"), record()]
    d = diagram(blocks, [wire("r", "z", 0, 0), wire("i", "z", 0, 1), wire("z", "b"), wire("b", "w")],
                duration=0.1)
    assert nc.simulate(d)["workspace"]["y"][0] == [3.0, -1.0]
    blocks[3] = blk("b", "convert")
    assert nc.simulate(d)["workspace"]["y"][0] == [2.6, -1.0]


def test_unconnected_input_writes_the_cast_of_zero():
    d = diagram([blk("b", "convert", OutDataType="boolean"), record()], [wire("b", "w")], duration=0.1)
    assert nc.simulate(d)["workspace"]["y"] == [[0.0], [0.0]]
    d = diagram([blk("b", "convert", OutDataType="uint64"), record()], [wire("b", "w")], duration=0.1)
    assert nc.simulate(d)["workspace"]["y"] == [[0], [0]]


def test_follows_a_changing_input():
    d = diagram([blk("r", "ramp", slope=10.0), blk("b", "convert", OutDataType="uint8", Rounding="floor"),
                 record()], [wire("r", "b"), wire("b", "w")], dt=0.05, duration=0.2)
    # 10*t at t = 0, 0.05, ..., 0.2: 0, 0.5, 1.0000000000000002 (10*0.1), 1.5, 2
    assert [row[0] for row in nc.simulate(d)["workspace"]["y"]] == [0, 0, 1, 1, 2]


def test_unknown_out_data_type_is_rejected():
    with pytest.raises(DiagramError) as err:
        converted(1.0, OutDataType="int7")
    assert err.value.code == "param_value" and err.value.param == "OutDataType"


def test_saturate_flag_accepts_matlab_spellings():
    assert converted(300, OutDataType="uint8", SaturateOnOverflow="off") == [44]
    assert converted(300, OutDataType="uint8", SaturateOnOverflow=0) == [44]


# ----------------------------------------------------------------------------- laws (signals.cast)

doubles = st.floats(allow_nan=True, allow_infinity=True, width=64)
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
int_types = st.sampled_from(SMALL_INTS + ("int64", "uint64"))
roundings = st.sampled_from(["nearest", "floor", "ceiling", "zero"])


@settings(max_examples=300)
@given(doubles, int_types, roundings, st.booleans())
def test_result_is_always_in_range(x, dtype, rounding, saturate):
    lo, hi = INTEGER_RANGES[dtype]
    y = cast(x, dtype, rounding, saturate)
    assert lo <= y <= hi
    assert y == int(y)


@settings(max_examples=300)
@given(finite, int_types)
def test_rounding_laws_in_range(x, dtype):
    lo, hi = INTEGER_RANGES[dtype]
    if not lo <= x <= hi or x != x:
        return
    down, up = cast(x, dtype, "floor"), cast(x, dtype, "ceiling")
    toward, near = cast(x, dtype, "zero"), cast(x, dtype, "nearest")
    assert down <= x <= up and up - down in (0, 1)
    assert abs(toward) <= abs(x) and (toward == 0 or (toward > 0) == (x > 0))
    assert toward in (down, up) and near in (down, up)
    assert abs(near - x) <= 0.5
    if abs(near - x) == 0.5:
        assert abs(near) > abs(x)                     # a half goes away from zero


def exact_whole(x: float, rounding: str) -> int:
    """The rounded value of a finite double, computed on exact fractions."""
    f = Fraction(x)
    if rounding == "floor":
        return math.floor(f)
    if rounding == "ceiling":
        return math.ceil(f)
    if rounding == "zero":
        return math.trunc(f)
    return int(math.copysign(math.floor(abs(f) + Fraction(1, 2)), x))   # half away from zero


@settings(max_examples=300)
@given(finite, int_types, roundings)
def test_saturation_clamps_the_rounded_value(x, dtype, rounding):
    lo, hi = INTEGER_RANGES[dtype]
    assert cast(x, dtype, rounding, True) == min(max(exact_whole(x, rounding), lo), hi)


@settings(max_examples=300)
@given(finite, int_types, roundings)
def test_wrap_is_the_modular_law(x, dtype, rounding):
    lo, hi = INTEGER_RANGES[dtype]
    y = cast(x, dtype, rounding, False)
    assert lo <= y <= hi
    assert (int(y) - exact_whole(x, rounding)) % (hi - lo + 1) == 0


@settings(max_examples=100)
@given(st.lists(finite, min_size=2, max_size=5), int_types, roundings, st.booleans())
def test_vector_cast_is_the_element_wise_cast(xs, dtype, rounding, saturate):
    vec = cast(np.array(xs), dtype, rounding, saturate)
    assert [int(v) for v in vec.tolist()] == [int(cast(x, dtype, rounding, saturate)) for x in xs]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=3), st.sampled_from(SMALL_INTS),
       roundings, st.booleans())
def test_block_matches_the_cast(xs, dtype, rounding, saturate):
    got = converted(xs if len(xs) > 1 else xs[0], OutDataType=dtype, Rounding=rounding,
                    SaturateOnOverflow=saturate)
    assert got == [cast(x, dtype, rounding, saturate) for x in xs]


# --------------------------------------------------------------------------------------------------
# Complex signals through the routing blocks: switch, selector, reshape, concatenate.
# --------------------------------------------------------------------------------------------------

# ----------------------------------------------------------------------------- routing blocks

def switch_case(top, control, bottom, **params):
    def src(id, v):
        if isinstance(v, complex) or (isinstance(v, list) and any(isinstance(x, complex) for x in v)):
            zs = np.atleast_1d(np.asarray(v, dtype=complex))
            return z_source(zs.real.tolist() if zs.size > 1 else zs.real[0],
                            zs.imag.tolist() if zs.size > 1 else zs.imag[0], id)
        return [constant(id, v)], []
    blocks, conns = [], []
    for k, (id, v) in enumerate((("t", top), ("c", control), ("u", bottom))):
        b, c = src(id, v)
        blocks += b
        conns += c + [wire(id, "b", 0, k)]
    blocks += [blk("b", "switch", **params), record()]
    return run_blocks(blocks, conns + [wire("b", "w")])["workspace"]["y"]


def test_switch_passes_complex_data():
    assert cvalues(switch_case(1 + 1j, 1.0, 2.0))[0].tolist() == [1 + 1j]
    assert switch_case(1 + 1j, -1.0, 2.0)[0] == [2.0]     # the real branch: a real sample
    y = switch_case([1j, 2j], [1.0, -1.0], [5.0, 6.0])
    assert cvalues(y)[0].tolist() == [1j, 6]


def test_switch_complex_control_compares_its_real_part():
    # 0 - 1j >= 0: by the real part, true (a lexicographic complex order would say false)
    assert switch_case(1.0, -1j, 2.0) == [[1.0], [1.0]]
    assert switch_case(1.0, -0.5 + 9j, 2.0, Criteria="gt") == [[2.0], [2.0]]
    assert switch_case([1.0, 1.0], [-1j, -1 + 1j], [2.0, 2.0]) == [[1.0, 2.0]] * 2


def test_selector_picks_complex_elements():
    y = complex_out(blk("b", "selector", Indices=[3, 1]), [1 + 1j, 2, -3j])
    assert cvalues(y)[0].tolist() == [-3j, 1 + 1j]
    y = complex_out(blk("b", "selector", Indices=2), [1 + 1j, 2 - 2j])
    assert cvalues(y)[0].tolist() == [2 - 2j]


def test_reshape_passes_complex():
    y = complex_out(blk("b", "reshape", OutputDimensions=[2, 1]), [1j, 2])
    assert cvalues(y)[0].tolist() == [1j, 2]
    y = complex_out(blk("b", "reshape", OutputDimensions=[3]), 1 - 1j)   # a scalar broadcast
    assert cvalues(y)[0].tolist() == [1 - 1j] * 3


def test_concatenate_with_complex_inputs():
    blocks, conns = z_source([1.0, 2.0], [3.0, 4.0])
    blocks += [constant("r", [5.0, 6.0]), blk("b", "concatenate", inputs=2), record()]
    conns += [wire("z", "b", 0, 0), wire("r", "b", 0, 1), wire("b", "w")]
    assert cvalues(run_blocks(blocks, conns)["workspace"]["y"])[0].tolist() == [1 + 3j, 2 + 4j, 5, 6]
    blocks, conns = z_source(1.0, -1.0)
    blocks += [constant("r", 7.0), blk("b", "concatenate", inputs=2), record()]
    conns += [wire("r", "b", 0, 0), wire("z", "b", 0, 1), wire("b", "w")]
    assert cvalues(run_blocks(blocks, conns)["workspace"]["y"])[0].tolist() == [7, 1 - 1j]
    blocks, conns = z_source(1.0, -1.0)                    # a scalar input next to a vector one
    blocks += [constant("r", [7.0, 8.0]), blk("b", "concatenate", inputs=2), record()]
    conns += [wire("r", "b", 0, 0), wire("z", "b", 0, 1), wire("b", "w")]
    assert cvalues(run_blocks(blocks, conns)["workspace"]["y"])[0].tolist() == [7, 8, 1 - 1j]
