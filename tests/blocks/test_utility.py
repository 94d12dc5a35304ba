"""Utility library: mux, demux, switch, initialCondition, signalConversion, width."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from nflow_compat import DiagramError
from nflow_compat.blocks import supported_types
from tests.blocks.test_discrete import play
from tests.util import blk, diagram, record, run, trace, wire


def const(id, value):
    return blk(id, "constant", Value=value)


# ----------------------------------------------------------------------------- mux

def test_mux_concatenates_in_port_order():
    d = diagram([const("a", [1, 2]), const("b", 3), const("c", [4, 5, 6]), blk("m", "mux", inputs=3), record()],
                [wire("c", "m", 0, 2), wire("a", "m", 0, 0), wire("b", "m", 0, 1), wire("m", "w")], duration=0.1)
    assert trace(d).tolist() == [[1, 2, 3, 4, 5, 6]] * 2


def test_mux_of_scalars_and_unconnected_ports():
    d = diagram([const("a", 1), const("b", 2), blk("m", "mux", inputs=2), record()],
                [wire("a", "m", 0, 0), wire("b", "m", 0, 1), wire("m", "w")], duration=0.1)
    assert trace(d).tolist() == [[1, 2]] * 2
    # an unconnected port contributes one element 0
    d = diagram([const("a", [1, 2]), blk("m", "mux", inputs=3), record()],
                [wire("a", "m", 0, 1), wire("m", "w")], duration=0.1)
    assert trace(d).tolist() == [[0, 1, 2, 0]] * 2


def test_single_input_mux_is_a_wire():
    d = diagram([blk("r", "ramp"), blk("m", "mux", inputs=1), record()], [wire("r", "m"), wire("m", "w")],
                duration=0.2)
    assert np.allclose(trace(d)[:, 0], [0, 0.1, 0.2])


def test_mux_routes_same_step_values_whatever_the_declaration_order():
    d = diagram([record(), blk("m", "mux", inputs=2), blk("g", "gain", Gain=2), blk("r", "ramp"), const("c", 7)],
                [wire("r", "g"), wire("g", "m", 0, 0), wire("c", "m", 0, 1), wire("m", "w")], duration=0.2)
    assert np.allclose(trace(d), [[0, 7], [0.2, 7], [0.4, 7]])


def test_mux_output_feeds_vector_blocks():
    d = diagram([const("a", 1), const("b", 2), blk("m", "mux", inputs=2),
                 blk("z", "unitDelay", InitialCondition=[9, 8]), record()], [wire("a", "m", 0, 0), wire("b", "m", 0, 1), wire("m", "z"), wire("z", "w")],
                duration=0.1)
    assert trace(d).tolist() == [[9, 8], [1, 2]]


# ----------------------------------------------------------------------------- demux

def demux_outputs(value, outputs, **params):
    blocks = [const("a", value), blk("d", "demux", outputs=outputs, **params)]
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
    blocks = [const(f"c{k}", p if len(p) > 1 else p[0]) for k, p in enumerate(parts)]
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
    blocks += [const("t", top), const("b", bottom), blk("s", "switch", params), record()]
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
        d = diagram([const("t", 1), const("c", "nan"), const("b", 2), blk("s", "switch", Criteria=crit), record()],
                    [wire("t", "s", 0, 0), wire("c", "s", 0, 1), wire("b", "s", 0, 2), wire("s", "w")],
                    duration=0.1)
        assert trace(d)[:, 0].tolist() == [expected] * 2


def test_switch_unconnected_inputs_read_zero():
    d = diagram([const("t", 5), blk("s", "switch", Threshold=0), record()], [wire("t", "s", 0, 0), wire("s", "w")],
                duration=0.1)
    assert trace(d)[:, 0].tolist() == [5, 5]       # control reads 0 >= 0: top
    d = diagram([const("t", 5), blk("s", "switch", Threshold=1), record()], [wire("t", "s", 0, 0), wire("s", "w")],
                duration=0.1)
    assert trace(d)[:, 0].tolist() == [0, 0]       # 0 >= 1 fails: the unconnected bottom reads 0


def test_switch_element_wise_with_broadcast():
    d = diagram([const("t", [1, 2, 3]), const("c", [-1, 0, 1]), const("b", 9), blk("s", "switch", Criteria="gt"),
                 record()], [wire("t", "s", 0, 0), wire("c", "s", 0, 1), wire("b", "s", 0, 2), wire("s", "w")],
                duration=0.1)
    assert trace(d).tolist() == [[9, 9, 3]] * 2
    d = diagram([const("t", [1, 2, 3]), const("c", 1), blk("s", "switch", Threshold=2), record()],
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
    d = diagram([const("c", [1, 2, 3]), blk("ic", "initialCondition", InitialValue=[7, 8]), record()],
                [wire("c", "ic"), wire("ic", "w")], duration=0.1)
    assert trace(d).tolist() == [[7, 8, 8], [1, 2, 3]]
    d = diagram([const("c", 1), blk("ic", "initialCondition", InitialValue=[7, 8]), record()],
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
    d = diagram([const("c", [1, -2]), blk("sc", "signalConversion"), record()], [wire("c", "sc"), wire("sc", "w")],
                duration=0.1)
    assert trace(d).tolist() == [[1, -2]] * 2
    d = diagram([blk("sc", "signalConversion"), record()], [wire("sc", "w")], duration=0.1)
    assert trace(d).tolist() == [[0], [0]]


def test_width_counts_elements_and_is_zero_unconnected():
    for value, n in ((7, 1), ([1, 2, 3, 4], 4)):
        d = diagram([const("c", value), blk("n", "width"), record()], [wire("c", "n"), wire("n", "w")], duration=0.1)
        assert trace(d).tolist() == [[n], [n]]
    d = diagram([blk("n", "width"), record()], [wire("n", "w")], duration=0.1)
    assert trace(d).tolist() == [[0], [0]]


def test_width_is_a_constant_and_adds_no_algebraic_dependency():
    # y = [1 2] + width(y): the width does not depend on the values, so no loop to relax
    d = diagram([const("c", [1, 2]), blk("add", "sum", inputs=2, Inputs="++"), blk("n", "width"), record()],
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
