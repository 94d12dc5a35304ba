"""Discrete library: unitDelay, zoh, difference, detectChange/Increase/Decrease, risingEdge,
fallingEdge, foh, dtf, ddelay, dstateSpace (scalar and MIMO forms), rateTransition (nflow's
handlers, fixed-step path). Expected values come from the recurrences evaluated with plain
Python/numpy, or by hand."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nflow_compat as nc
from tests.blocks.sequences import column, column_array, drive_sequence, play, vec_ramp, vec_wires
from tests.util import blk, diagram, record, run, trace, wire

DT = 0.1


def test_play_helper_reproduces_its_sequence():
    values = [0, 2, 2, -1, 0.5, 0.5, 3]
    assert column(blk("b", "signalConversion"), values) == values


# ----------------------------------------------------------------------------- unitDelay

def test_unit_delay_shifts_by_one_step_starting_at_the_initial_condition():
    assert column(blk("b", "unitDelay", InitialCondition=-1), [3, 1, 4, 1, 5]) == [-1, 3, 1, 4, 1]


def test_unit_delay_default_initial_condition_is_zero():
    assert column(blk("b", "unitDelay"), [7, 8, 9]) == [0, 7, 8]


def test_unit_delay_unconnected_input_reads_zero():
    d = diagram([blk("b", "unitDelay", InitialCondition=4), record()], [wire("b", "w")], duration=0.2)
    assert trace(d)[:, 0].tolist() == [4, 0, 0]


def test_unit_delay_vector_initial_condition_list_and_broadcast():
    # a short list repeats its last element; a scalar is broadcast
    for ic, first in (([1, 2], [1, 2, 2]), (9, [9, 9, 9])):
        d = diagram([blk("c", "constant", Value=[5, 6, 7]), blk("b", "unitDelay", InitialCondition=ic), record()],
                    [wire("c", "b"), wire("b", "w")], duration=0.2)
        assert trace(d).tolist() == [first, [5, 6, 7], [5, 6, 7]]


def test_unit_delay_vector_initial_condition_widens_a_scalar_input():
    d = diagram([blk("c", "constant", Value=3), blk("b", "unitDelay", InitialCondition=[1, 2]), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.2)
    assert trace(d).tolist() == [[1, 2], [3, 3], [3, 3]]


def test_unit_delay_accumulator_loop_through_simulate():
    # y = u + delay(y): the delay breaks the loop, y_k = sum_{j<=k} u_j
    u = [1, 2, 0, -3, 4, 4]
    blocks, conns = play(u)
    blocks += [blk("add", "sum", inputs=2, Inputs="++"), blk("z", "unitDelay"), record()]
    conns += [wire("seq", "add", 0, 0), wire("z", "add", 0, 1), wire("add", "z"), wire("add", "w")]
    for order in (1, -1):   # declaration order must not matter
        d = diagram(blocks[::order], conns, duration=(len(u) - 1) * DT)
        assert trace(d)[:, 0].tolist() == np.cumsum(u).tolist()


def test_unit_delay_is_not_feedthrough_so_a_pure_delay_loop_is_fine():
    # a delay feeding itself through a gain: y_{k+1} = 2 y_k, y_0 = 1
    d = diagram([blk("z", "unitDelay", InitialCondition=1), blk("g", "gain", Gain=2), record()],
                [wire("z", "g"), wire("g", "z"), wire("z", "w")], duration=0.5)
    assert trace(d)[:, 0].tolist() == [1, 2, 4, 8, 16, 32]


@settings(max_examples=25, deadline=None)
@given(amp=st.floats(0.1, 10), freq=st.floats(0.1, 3), phase=st.floats(-3, 3), ic=st.floats(-5, 5))
def test_unit_delay_law_y_k_equals_u_k_minus_1(amp, freq, phase, ic):
    d = diagram([blk("s", "sine", Amplitude=amp, Frequency=freq, Phase=phase),
                 blk("z", "unitDelay", InitialCondition=ic), record("w", "y"), record("wu", "u")],
                [wire("s", "z"), wire("z", "w"), wire("s", "wu")], duration=1.0)
    res = run(d)
    y, u = np.asarray(res["workspace"]["y"])[:, 0], np.asarray(res["workspace"]["u"])[:, 0]
    assert y[0] == ic and np.array_equal(y[1:], u[:-1])


# ----------------------------------------------------------------------------- zoh

def test_zoh_holds_for_three_base_steps():
    values = [1, 2, 3, 4, 5, 6, 7, 8]
    assert column(blk("b", "zoh", SampleTime=0.3), values) == [1, 1, 1, 4, 4, 4, 7, 7]


def test_zoh_next_hit_is_counted_from_the_hit_time():
    # Ts 0.25 on a 0.1 grid: hits at 0 (next 0.25), 0.3 (next 0.55), 0.6 (next 0.85), 0.9
    values = list(range(10, 20))
    assert column(blk("b", "zoh", SampleTime=0.25), values) == [10, 10, 10, 13, 13, 13, 16, 16, 16, 19]


def test_zoh_with_sample_time_at_or_below_the_step_passes_the_input():
    values = [3, -1, 2, 2, 8]
    for ts in (0.1, 0.05, 0, -1):   # Ts = max(0.001, SampleTime)
        assert column(blk("b", "zoh", SampleTime=ts), values) == values


def test_zoh_default_sample_time_is_the_manifest_one():
    # SampleTime defaults to 0.1 (manifest): on a 0.05 grid it holds every other sample
    values = [1, 2, 3, 4, 5]
    assert drive_sequence(blk("b", "zoh"), values, dt=0.05)[:, 0].tolist() == [1, 1, 3, 3, 5]


def test_zoh_is_feedthrough_at_a_hit_even_when_declared_before_its_source():
    d = diagram([record(), blk("b", "zoh", SampleTime=0.2), blk("g", "gain", Gain=3), blk("r", "ramp")],
                [wire("r", "g"), wire("g", "b"), wire("b", "w")], duration=0.5)
    assert np.allclose(trace(d)[:, 0], [0, 0, 0.6, 0.6, 1.2, 1.2], atol=1e-12)


def test_zoh_vector_and_unconnected():
    d = diagram([blk("r", "ramp"), blk("c", "constant", Value=[1, -1]), blk("m", "mult", inputs=2),
                 blk("b", "zoh", SampleTime=0.2), record()],
                [wire("r", "m", 0, 0), wire("c", "m", 0, 1), wire("m", "b"), wire("b", "w")], duration=0.3)
    assert np.allclose(trace(d), [[0, 0], [0, 0], [0.2, -0.2], [0.2, -0.2]], atol=1e-12)
    d = diagram([blk("b", "zoh"), record()], [wire("b", "w")], duration=0.2)
    assert trace(d)[:, 0].tolist() == [0, 0, 0]


# ----------------------------------------------------------------------------- difference

def test_difference_is_the_backward_difference():
    assert column(blk("b", "difference", ICPrevInput=1), [3, 5, 5, 2, -2]) == [2, 2, 0, -3, -4]


def test_difference_unconnected_and_vector_initial():
    d = diagram([blk("b", "difference", ICPrevInput=2), record()], [wire("b", "w")], duration=0.2)
    assert trace(d)[:, 0].tolist() == [-2, 0, 0]
    d = diagram([blk("c", "constant", Value=[5, 6, 7]), blk("b", "difference", ICPrevInput=[1, 2]), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.2)
    assert trace(d).tolist() == [[4, 4, 5], [0, 0, 0], [0, 0, 0]]


@settings(max_examples=25, deadline=None)
@given(amp=st.floats(0.1, 10), freq=st.floats(0.1, 3), ic=st.floats(-5, 5))
def test_difference_telescopes(amp, freq, ic):
    # sum_{j<=k} (u_j - u_{j-1}) = u_k - ICPrevInput
    d = diagram([blk("s", "sine", Amplitude=amp, Frequency=freq, Phase=0.3),
                 blk("b", "difference", ICPrevInput=ic), record("w", "y"), record("wu", "u")],
                [wire("s", "b"), wire("b", "w"), wire("s", "wu")], duration=1.0)
    res = run(d)
    y, u = np.asarray(res["workspace"]["y"])[:, 0], np.asarray(res["workspace"]["u"])[:, 0]
    assert np.allclose(np.cumsum(y), u - ic, atol=1e-9)


# ----------------------------------------------------------------------------- detectors

def test_detect_change():
    assert column(blk("b", "detectChange"), [0, 0, 1, 1, 2, 2, 2, -1]) == [0, 0, 1, 0, 1, 0, 0, 1]
    assert column(blk("b", "detectChange", InitialCondition=5), [5, 5, 6]) == [0, 0, 1]


def test_detect_increase_and_decrease_are_strict():
    seq = [1, 0, 0, 2, 1, 3, 3]
    assert column(blk("b", "detectIncrease"), seq) == [1, 0, 0, 1, 0, 1, 0]
    assert column(blk("b", "detectDecrease"), seq) == [0, 1, 0, 0, 1, 0, 0]
    assert column(blk("b", "detectDecrease", InitialCondition=2), seq) == [1, 1, 0, 0, 1, 0, 0]


def test_rising_edge_fires_from_non_positive_to_positive():
    seq = [-1, 0, 1, 1, 0, 2, -1, 1]
    assert column(blk("b", "risingEdge"), seq) == [0, 0, 1, 0, 0, 1, 0, 1]
    # the initial condition is the value "before" the first step
    assert column(blk("b", "risingEdge", InitialCondition=1), [1, 1]) == [0, 0]
    assert column(blk("b", "risingEdge", InitialCondition=-1), [1, 1]) == [1, 0]


def test_falling_edge_fires_from_non_negative_to_negative():
    seq = [1, 0, -1, -1, 0, -2, 1, -1]
    assert column(blk("b", "fallingEdge"), seq) == [0, 0, 1, 0, 0, 1, 0, 1]
    assert column(blk("b", "fallingEdge", InitialCondition=-1), [-1, -1]) == [0, 0]
    assert column(blk("b", "fallingEdge", InitialCondition=1), [-1, -1]) == [1, 0]


def test_detectors_compare_nan_like_cpp():
    def nan_run(type_):
        d = diagram([blk("c", "constant", Value="nan"), blk("b", type_), record()],
                    [wire("c", "b"), wire("b", "w")], duration=0.2)
        return trace(d)[:, 0].tolist()
    assert nan_run("detectChange") == [1, 1, 1]        # NaN != anything, NaN itself included
    for t in ("detectIncrease", "detectDecrease", "risingEdge", "fallingEdge"):
        assert nan_run(t) == [0, 0, 0]
    assert all(math.isnan(v) for v in nan_run("difference"))


def test_detectors_unconnected_input_reads_zero():
    d = diagram([blk("b", "detectChange", InitialCondition=1), record()], [wire("b", "w")], duration=0.2)
    assert trace(d)[:, 0].tolist() == [1, 0, 0]


def test_detectors_vector_element_wise_with_vector_initial_condition():
    d = diagram([blk("c", "constant", Value=[1, 2, 3]), blk("b", "detectIncrease", InitialCondition=[2, 0]),
                 record()], [wire("c", "b"), wire("b", "w")], duration=0.1)
    assert trace(d).tolist() == [[0, 1, 1], [0, 0, 0]]
    d = diagram([blk("c", "constant", Value=[-1, 0, 2]), blk("b", "risingEdge"), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.1)
    assert trace(d).tolist() == [[0, 0, 1], [0, 0, 0]]
    d = diagram([blk("c", "constant", Value=[-1, 0, 2]), blk("b", "fallingEdge", InitialCondition=[1, 0, 1]),
                 record()], [wire("c", "b"), wire("b", "w")], duration=0.1)
    assert trace(d).tolist() == [[1, 0, 0], [0, 0, 0]]


def test_detectors_are_feedthrough_even_declared_before_their_source():
    d = diagram([record(), blk("b", "detectChange"), blk("g", "gain", Gain=2), blk("r", "ramp")],
                [wire("r", "g"), wire("g", "b"), wire("b", "w")], duration=0.3)
    assert trace(d)[:, 0].tolist() == [0, 1, 1, 1]


@pytest.mark.parametrize("type_,param,level,probe", [
    ("detectChange", "InitialCondition", -3, 7), ("detectIncrease", "InitialCondition", -3, 7),
    ("detectDecrease", "InitialCondition", 3, -7), ("risingEdge", "InitialCondition", -3, 7),
    ("fallingEdge", "InitialCondition", 3, -7), ("difference", "ICPrevInput", -3, 7)])
def test_side_effect_free_passes_replay_the_last_committed_output(type_, param, level, probe):
    # solver sub-evaluations (ctx.side_effect_free) must not recompute; the fixed-step
    # loop never sets the flag
    d = diagram([blk("c", "constant", Value=level), blk("b", type_, **{param: level}), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.2)
    plan = nc.compile_plan(d)
    committed = plan.run()["workspace"]["y"][-1][0]
    ids = [b.id for b in plan.diagram.blocks]
    src, me = ids.index("c"), ids.index("b")
    u, y = plan.slot_of[(src, 0)], plan.slot_of[(me, 0)]
    algebraic = plan.phases[me].algebraic
    plan.S[u] = float(probe)               # a sub-step input that would change the output
    plan.ctx.side_effect_free = True
    algebraic()
    assert plan.S[y] == committed
    plan.ctx.side_effect_free = False
    algebraic()
    assert plan.S[y] != committed          # a committed pass recomputes


def test_stateful_blocks_restart_on_a_second_run():
    blocks, conns = play([1, 2, 2, 5])
    d = diagram(blocks + [blk("a", "difference"), blk("b", "zoh", SampleTime=0.2), blk("z", "unitDelay"),
                          record("w1", "a"), record("w2", "b"), record("w3", "z")],
                conns + [wire("seq", "a"), wire("seq", "b"), wire("seq", "z"),
                         wire("a", "w1"), wire("b", "w2"), wire("z", "w3")], duration=0.3)
    plan = nc.compile_plan(d)
    first, second = plan.run()["workspace"], plan.run()["workspace"]
    for key in ("a", "b", "z"):
        assert np.array_equal(first[key], second[key])
    assert np.asarray(first["a"])[:, 0].tolist() == [1, 1, 0, 3]


def test_initial_condition_params_accept_expressions():
    d = diagram([blk("c", "constant", Value=1), blk("b", "unitDelay", InitialCondition="k*2"), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.1, variables={"k": 1.5})
    assert trace(d)[:, 0].tolist() == [3, 1]


def test_old_doc_table_names_are_ignored_with_a_warning():
    # nflow's handler reads only the manifest key, so `initial` leaves the default IC of 0
    d = diagram([blk("c", "constant", Value=1), blk("b", "unitDelay", initial=3), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.1)
    res = nc.simulate(d)
    assert [row[0] for row in res["workspace"]["y"]] == [0, 1]
    assert any("'initial'" in w for w in res["warnings"])


FAST = settings(max_examples=30, deadline=None)
ints = st.integers(-8, 8)


def from_source(block, source, duration=1.0, dt=DT):
    d = diagram([dict(source, id="src"), block, record()], [wire("src", "b"), wire("b", "w")], dt=dt, duration=duration)
    return trace(d)


# ----------------------------------------------------------------------------- foh

def test_foh_outputs_the_input_at_hits_and_extrapolates_between():
    y = column_array(blk("b", "foh", SampleTime=0.2), [0, 1, 2, 4, 8, 8, 8, 8])
    # hits at k = 0, 2, 4, 6; between: last + (last - prev)/0.2 * 0.1
    assert np.allclose(y, [0, 0, 2, 3, 8, 11, 8, 8], atol=1e-12)


def test_foh_every_step_is_a_wire():
    u = [3, -1, 4, 1, -5]
    assert np.allclose(column_array(blk("b", "foh", SampleTime=0.1), u), u)
    # SampleTime below 0.001 is raised to 0.001: still a hit every step of 0.1
    assert np.allclose(column_array(blk("b", "foh", SampleTime=0), u), u)


def test_foh_reconstructs_a_ramp_after_one_period():
    y = from_source(blk("b", "foh", SampleTime=0.3), blk("r", "ramp", slope=2), duration=1.2)[:, 0]
    t = np.arange(13) * DT
    expect = np.where(t < 0.3 - 1e-9, 0.0, 2 * t)   # the first period holds the single sample 0
    assert np.allclose(y, expect, atol=1e-12)


def test_foh_vector_elementwise():
    d = diagram([*vec_ramp([1, -2]), blk("b", "foh", SampleTime=0.2), record()],
                [*vec_wires([1, -2]), wire("g", "b"), wire("b", "w")], duration=0.5)
    y = trace(d)
    assert np.allclose(y[:, 0], [0, 0, 0.2, 0.3, 0.4, 0.5], atol=1e-12)
    assert np.allclose(y[:, 1], -2 * y[:, 0], atol=1e-12)


# ----------------------------------------------------------------------------- dtf

def dtf_reference(num, den, u):
    """y[k] = sum_i b_i u[k-i] - sum_{i>=1} a_i y[k-i] with b padded left, normalized by a_0."""
    a0 = den[0]
    a = [v / a0 for v in den]
    b = [v / a0 for v in num]
    b = [0.0] * (len(a) - len(b)) + b if len(b) < len(a) else b
    y = []
    for k in range(len(u)):
        acc = sum(b[i] * u[k - i] for i in range(len(b)) if k - i >= 0)
        acc -= sum(a[i] * y[k - i] for i in range(1, len(a)) if k - i >= 0)
        y.append(acc)
    return y


def test_dtf_default_is_a_delayed_first_order_lag():
    y = column_array(blk("b", "dtf"), [1, 1, 1, 1, 1, 1])
    assert np.allclose(y, [2 * (1 - 0.5 ** k) for k in range(6)], atol=1e-12)


def test_dtf_biproper_feeds_through():
    y = column_array(blk("b", "dtf", Numerator=[2, 1], Denominator=[1, -0.5]), [1, 0, 0, 0])
    # y = 2u + u[k-1] + 0.5 y[k-1]: 2, 1 + 1, 1, 0.5
    assert np.allclose(y, [2, 2, 1, 0.5], atol=1e-12)


def test_dtf_normalizes_by_the_leading_denominator_coefficient():
    y = column_array(blk("b", "dtf", Numerator=[2], Denominator=[2, -1]), [1, 0, 0, 0])
    assert np.allclose(y, [0, 1, 0.5, 0.25], atol=1e-12)


def test_dtf_second_order_matches_the_recurrence():
    num, den = [0.5, 0.25, 1], [1, -0.3, 0.2]
    u = [1, -2, 3, 0, 0, 1, 5, -1]
    assert np.allclose(column_array(blk("b", "dtf", Numerator=num, Denominator=den), u), dtf_reference(num, den, u),
                       atol=1e-12)


def test_dtf_holds_between_its_own_hits():
    # SampleTime 0.2: hits at k = 0, 2, 4 on the inputs 1, 3, 5 -> y = u[hit-1] + 0.5 y[hit-1] in hit ticks
    y = column_array(blk("b", "dtf", SampleTime=0.2), [1, 2, 3, 4, 5, 6])
    assert np.allclose(y, [0, 0, 1, 1, 3.5, 3.5], atol=1e-12)


def test_dtf_empty_lists_fall_back_to_0_over_1():
    assert not column_array(blk("b", "dtf", Numerator=[], Denominator=[]), [1, 2, 3]).any()


@FAST
@given(st.lists(ints, min_size=1, max_size=3), st.lists(ints, min_size=1, max_size=2), st.lists(ints, min_size=2, max_size=8))
def test_dtf_matches_the_reference_recurrence(num, tail, u):
    den = [1] + tail
    if len(num) > len(den):
        num = num[:len(den)]
    y = column_array(blk("b", "dtf", Numerator=num, Denominator=den), u)
    assert np.allclose(y, dtf_reference(num, den, u), rtol=1e-9, atol=1e-9)


# ----------------------------------------------------------------------------- ddelay

def test_ddelay_shifts_by_delay_length_samples():
    u = [1, 2, 3, 4, 5, 6]
    assert column_array(blk("b", "ddelay", DelayLength=1), u).tolist() == [0, 1, 2, 3, 4, 5]
    assert column_array(blk("b", "ddelay", DelayLength=3), u).tolist() == [0, 0, 0, 1, 2, 3]


def test_ddelay_length_is_rounded_and_at_least_one():
    u = [1, 2, 3, 4]
    assert column_array(blk("b", "ddelay", DelayLength=1.5), u).tolist() == [0, 0, 1, 2]   # half away from zero: 2
    assert column_array(blk("b", "ddelay", DelayLength=0), u).tolist() == [0, 1, 2, 3]
    assert column_array(blk("b", "ddelay", DelayLength=-4), u).tolist() == [0, 1, 2, 3]


def test_ddelay_own_sample_time_counts_its_ticks():
    # SampleTime 0.2: ticks at k = 0, 2, 4, 6 take u = 1, 3, 5, 7; the latch moves at ticks
    y = column_array(blk("b", "ddelay", DelayLength=1, SampleTime=0.2), [1, 2, 3, 4, 5, 6, 7, 8])
    assert y.tolist() == [0, 1, 1, 3, 3, 5, 5, 7]


def test_ddelay_breaks_an_algebraic_loop():
    # y = 1 + ddelay(y): a counter
    d = diagram([blk("one", "constant", Value=1), blk("s", "sum", inputs=2, Inputs="++"), blk("b", "ddelay"), record()],
                [wire("one", "s", 0, 0), wire("b", "s", 0, 1), wire("s", "b"), wire("s", "w")], duration=0.4)
    assert trace(d)[:, 0].tolist() == [1, 2, 3, 4, 5]


def test_ddelay_vector():
    d = diagram([*vec_ramp([1, 10]), blk("b", "ddelay", DelayLength=2), record()],
                [*vec_wires([1, 10]), wire("g", "b"), wire("b", "w")], duration=0.4)
    assert np.allclose(trace(d), [[0, 0], [0, 0], [0, 0], [0.1, 1], [0.2, 2]], atol=1e-12)


def test_ddelay_huge_length_is_refused():
    with pytest.raises(nc.DiagramError) as err:
        column_array(blk("b", "ddelay", DelayLength=2e7), [1, 2])
    assert err.value.code == "param_range" and err.value.param == "DelayLength"
    # beyond int range nflow's (int) cast yields INT_MIN, then max(1, .) = 1 sample
    assert column_array(blk("b", "ddelay", DelayLength=1e12), [1, 2, 3]).tolist() == [0, 1, 2]


@FAST
@given(st.lists(ints, min_size=2, max_size=10), st.integers(1, 5))
def test_ddelay_law(u, n):
    y = column_array(blk("b", "ddelay", DelayLength=n), u)
    assert y.tolist() == [0] * min(n, len(u)) + u[:max(0, len(u) - n)]


# ----------------------------------------------------------------------------- dstateSpace

def test_dstate_space_scalar_first_order():
    y = column_array(blk("b", "dstateSpace", A=0.5, B=1, C=2, D=1), [1, 1, 1, 1, 1])
    x = [2 * (1 - 0.5 ** k) for k in range(5)]
    assert np.allclose(y, [2 * xi + 1 for xi in x], atol=1e-12)


def test_dstate_space_defaults_accumulate():
    # A = B = C = 1, D = 0: y[k] = sum of the inputs before k
    assert column_array(blk("b", "dstateSpace"), [1, 2, 3, 4]).tolist() == [0, 1, 3, 6]


def test_dstate_space_scalar_form_is_elementwise_on_vectors():
    d = diagram([blk("c", "constant", Value=[1, -2, 4]), blk("b", "dstateSpace", A=0, B=1, C=1, D=0), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.2)
    assert trace(d).tolist() == [[0, 0, 0], [1, -2, 4], [1, -2, 4]]


def test_dstate_space_state_advances_only_at_hits_but_d_feeds_every_step():
    y = column_array(blk("b", "dstateSpace", A=1, B=1, C=1, D=10, SampleTime=0.2), [1, 2, 3, 4, 5])
    # x: 0 -> (hit k=0, u=1) 1 -> (hit k=2, u=3) 4; y = x + 10 u
    assert y.tolist() == [10, 21, 31, 44, 54]


def test_dstate_space_mimo_double_integrator():
    A, B = [[1, 0.1], [0, 1]], [[0], [0.1]]
    d = diagram([blk("c", "constant", Value=1), blk("b", "dstateSpace", A=A, B=B, C=[[1, 0], [0, 1]], D=[[0], [0]]),
                 record()], [wire("c", "b"), wire("b", "w")], duration=0.5)
    y = trace(d)
    x, expect = np.zeros(2), []
    for _ in range(6):
        expect.append(x.copy())
        x = np.array(A) @ x + np.array(B)[:, 0] * 1.0
    assert np.allclose(y, expect, atol=1e-12)


def test_dstate_space_mimo_two_inputs_one_output_with_initial_condition():
    d = diagram([blk("c", "constant", Value=[1, 2]),
                 blk("b", "dstateSpace", A=[[0.5, 0], [0, 0.25]], B=[[1, 0], [0, 1]], C=[1, 1], D=[0.5, -1],
                     InitialCondition=[4, 8]), record()], [wire("c", "b"), wire("b", "w")], duration=0.3)
    y = trace(d)
    assert y.shape == (4, 1)   # C is one row of nx = 2 entries: ny = 1
    x, u, out = np.array([4.0, 8.0]), np.array([1.0, 2.0]), []
    for _ in range(4):
        out.append(x.sum() + 0.5 * u[0] - u[1])
        x = np.array([0.5 * x[0] + u[0], 0.25 * x[1] + u[1]])
    assert np.allclose(y[:, 0], out, atol=1e-12)


def test_dstate_space_mimo_pads_short_matrices_with_zeros():
    # B lists one entry for nx*nu = 2: the missing one is 0
    d = diagram([blk("c", "constant", Value=1), blk("b", "dstateSpace", A=[[0, 0], [1, 0]], B=[1], C=[[0, 1]], D=0),
                 record()], [wire("c", "b"), wire("b", "w")], duration=0.3)
    assert trace(d)[:, 0].tolist() == [0, 0, 1, 1]


def test_dstate_space_with_zero_d_breaks_a_loop():
    # u = 1 - y through dstateSpace(A=0,B=1,C=1,D=0): y[k] = u[k-1]
    d = diagram([blk("one", "constant", Value=1), blk("s", "sum", inputs=2, Inputs="+-"),
                 blk("b", "dstateSpace", A=0, B=1, C=1, D=0), record()],
                [wire("one", "s", 0, 0), wire("b", "s", 0, 1), wire("s", "b"), wire("b", "w")], duration=0.4)
    assert trace(d)[:, 0].tolist() == [0, 1, 0, 1, 0]


# ----------------------------------------------------------------------------- rateTransition

def test_rate_transition_inherit_is_a_wire():
    u = [4, -1, 2.5, 0]
    assert column_array(blk("b", "rateTransition"), u).tolist() == u
    assert column_array(blk("b", "rateTransition", OutPortSampleTime=0.1), u).tolist() == u


def test_rate_transition_samples_and_holds():
    y = column_array(blk("b", "rateTransition", OutPortSampleTime=0.3), [1, 2, 3, 4, 5, 6, 7])
    assert y.tolist() == [1, 1, 1, 4, 4, 4, 7]


def test_rate_transition_non_multiple_period():
    # Ts = 0.25 on a 0.1 grid: ticks at the first t >= 0, 0.25, 0.5, 0.75 -> k = 0, 3, 5, 8
    y = column_array(blk("b", "rateTransition", OutPortSampleTime=0.25), list(range(10)))
    assert y.tolist() == [0, 0, 0, 3, 3, 5, 5, 5, 8, 8]


def test_rate_transition_vector_and_reruns():
    d = diagram([*vec_ramp([1, 2]),
                 blk("b", "rateTransition", OutPortSampleTime=0.2, InitialCondition=[5, 6]), record()],
                [*vec_wires([1, 2]), wire("g", "b"), wire("b", "w")], duration=0.4)
    plan = nc.compile_plan(d)
    for _ in range(2):
        y = np.asarray(plan.run()["workspace"]["y"])
        assert np.allclose(y, [[0, 0], [0, 0], [0.2, 0.4], [0.2, 0.4], [0.4, 0.8]], atol=1e-12)
