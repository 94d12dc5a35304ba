"""Discrete library, second batch: foh, dtf, ddelay, dstateSpace (scalar and MIMO forms),
rateTransition (nflow's handlers, fixed-step path). Expected values come from the
recurrences evaluated with plain Python/numpy, or by hand."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from tests.blocks.test_discrete import drive
from tests.util import blk, diagram, record, trace, wire

DT = 0.1
FAST = settings(max_examples=30, deadline=None)
ints = st.integers(-8, 8)


def vec_ramp(slopes):
    """Blocks making 'g' = [s0 t, s1 t, ...] from ramps and a mux (no vector gain needed)."""
    return [blk(f"r{i}", "ramp", slope=s) for i, s in enumerate(slopes)] + [blk("g", "mux", inputs=len(slopes))]


def vec_wires(slopes):
    return [wire(f"r{i}", "g", 0, i) for i in range(len(slopes))]


def column(block, values, dt=DT):
    return drive(block, values, dt=dt)[:, 0]


def from_source(block, source, duration=1.0, dt=DT):
    d = diagram([dict(source, id="src"), block, record()], [wire("src", "b"), wire("b", "w")], dt=dt, duration=duration)
    return trace(d)


# ----------------------------------------------------------------------------- foh

def test_foh_outputs_the_input_at_hits_and_extrapolates_between():
    y = column(blk("b", "foh", SampleTime=0.2), [0, 1, 2, 4, 8, 8, 8, 8])
    # hits at k = 0, 2, 4, 6; between: last + (last - prev)/0.2 * 0.1
    assert np.allclose(y, [0, 0, 2, 3, 8, 11, 8, 8], atol=1e-12)


def test_foh_every_step_is_a_wire():
    u = [3, -1, 4, 1, -5]
    assert np.allclose(column(blk("b", "foh", SampleTime=0.1), u), u)
    # SampleTime below 0.001 is raised to 0.001: still a hit every step of 0.1
    assert np.allclose(column(blk("b", "foh", SampleTime=0), u), u)


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
    y = column(blk("b", "dtf"), [1, 1, 1, 1, 1, 1])
    assert np.allclose(y, [2 * (1 - 0.5 ** k) for k in range(6)], atol=1e-12)


def test_dtf_biproper_feeds_through():
    y = column(blk("b", "dtf", Numerator=[2, 1], Denominator=[1, -0.5]), [1, 0, 0, 0])
    # y = 2u + u[k-1] + 0.5 y[k-1]: 2, 1 + 1, 1, 0.5
    assert np.allclose(y, [2, 2, 1, 0.5], atol=1e-12)


def test_dtf_normalizes_by_the_leading_denominator_coefficient():
    y = column(blk("b", "dtf", Numerator=[2], Denominator=[2, -1]), [1, 0, 0, 0])
    assert np.allclose(y, [0, 1, 0.5, 0.25], atol=1e-12)


def test_dtf_second_order_matches_the_recurrence():
    num, den = [0.5, 0.25, 1], [1, -0.3, 0.2]
    u = [1, -2, 3, 0, 0, 1, 5, -1]
    assert np.allclose(column(blk("b", "dtf", Numerator=num, Denominator=den), u), dtf_reference(num, den, u), atol=1e-12)


def test_dtf_holds_between_its_own_hits():
    # SampleTime 0.2: hits at k = 0, 2, 4 on the inputs 1, 3, 5 -> y = u[hit-1] + 0.5 y[hit-1] in hit ticks
    y = column(blk("b", "dtf", SampleTime=0.2), [1, 2, 3, 4, 5, 6])
    assert np.allclose(y, [0, 0, 1, 1, 3.5, 3.5], atol=1e-12)


def test_dtf_empty_lists_fall_back_to_0_over_1():
    assert not column(blk("b", "dtf", Numerator=[], Denominator=[]), [1, 2, 3]).any()


@FAST
@given(st.lists(ints, min_size=1, max_size=3), st.lists(ints, min_size=1, max_size=2), st.lists(ints, min_size=2, max_size=8))
def test_dtf_matches_the_reference_recurrence(num, tail, u):
    den = [1] + tail
    if len(num) > len(den):
        num = num[:len(den)]
    y = column(blk("b", "dtf", Numerator=num, Denominator=den), u)
    assert np.allclose(y, dtf_reference(num, den, u), rtol=1e-9, atol=1e-9)


# ----------------------------------------------------------------------------- ddelay

def test_ddelay_shifts_by_delay_length_samples():
    u = [1, 2, 3, 4, 5, 6]
    assert column(blk("b", "ddelay", DelayLength=1), u).tolist() == [0, 1, 2, 3, 4, 5]
    assert column(blk("b", "ddelay", DelayLength=3), u).tolist() == [0, 0, 0, 1, 2, 3]


def test_ddelay_length_is_rounded_and_at_least_one():
    u = [1, 2, 3, 4]
    assert column(blk("b", "ddelay", DelayLength=1.5), u).tolist() == [0, 0, 1, 2]   # half away from zero: 2
    assert column(blk("b", "ddelay", DelayLength=0), u).tolist() == [0, 1, 2, 3]
    assert column(blk("b", "ddelay", DelayLength=-4), u).tolist() == [0, 1, 2, 3]


def test_ddelay_own_sample_time_counts_its_ticks():
    # SampleTime 0.2: ticks at k = 0, 2, 4, 6 take u = 1, 3, 5, 7; the latch moves at ticks
    y = column(blk("b", "ddelay", DelayLength=1, SampleTime=0.2), [1, 2, 3, 4, 5, 6, 7, 8])
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
        column(blk("b", "ddelay", DelayLength=2e7), [1, 2])
    assert err.value.code == "param_range" and err.value.param == "DelayLength"
    # beyond int range nflow's (int) cast yields INT_MIN, then max(1, .) = 1 sample
    assert column(blk("b", "ddelay", DelayLength=1e12), [1, 2, 3]).tolist() == [0, 1, 2]


@FAST
@given(st.lists(ints, min_size=2, max_size=10), st.integers(1, 5))
def test_ddelay_law(u, n):
    y = column(blk("b", "ddelay", DelayLength=n), u)
    assert y.tolist() == [0] * min(n, len(u)) + u[:max(0, len(u) - n)]


# ----------------------------------------------------------------------------- dstateSpace

def test_dstate_space_scalar_first_order():
    y = column(blk("b", "dstateSpace", A=0.5, B=1, C=2, D=1), [1, 1, 1, 1, 1])
    x = [2 * (1 - 0.5 ** k) for k in range(5)]
    assert np.allclose(y, [2 * xi + 1 for xi in x], atol=1e-12)


def test_dstate_space_defaults_accumulate():
    # A = B = C = 1, D = 0: y[k] = sum of the inputs before k
    assert column(blk("b", "dstateSpace"), [1, 2, 3, 4]).tolist() == [0, 1, 3, 6]


def test_dstate_space_scalar_form_is_elementwise_on_vectors():
    d = diagram([blk("c", "constant", Value=[1, -2, 4]), blk("b", "dstateSpace", A=0, B=1, C=1, D=0), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.2)
    assert trace(d).tolist() == [[0, 0, 0], [1, -2, 4], [1, -2, 4]]


def test_dstate_space_state_advances_only_at_hits_but_d_feeds_every_step():
    y = column(blk("b", "dstateSpace", A=1, B=1, C=1, D=10, SampleTime=0.2), [1, 2, 3, 4, 5])
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
    assert column(blk("b", "rateTransition"), u).tolist() == u
    assert column(blk("b", "rateTransition", OutPortSampleTime=0.1), u).tolist() == u


def test_rate_transition_samples_and_holds():
    y = column(blk("b", "rateTransition", OutPortSampleTime=0.3), [1, 2, 3, 4, 5, 6, 7])
    assert y.tolist() == [1, 1, 1, 4, 4, 4, 7]


def test_rate_transition_non_multiple_period():
    # Ts = 0.25 on a 0.1 grid: ticks at the first t >= 0, 0.25, 0.5, 0.75 -> k = 0, 3, 5, 8
    y = column(blk("b", "rateTransition", OutPortSampleTime=0.25), list(range(10)))
    assert y.tolist() == [0, 0, 0, 3, 3, 5, 5, 5, 8, 8]


def test_rate_transition_vector_and_reruns():
    d = diagram([*vec_ramp([1, 2]),
                 blk("b", "rateTransition", OutPortSampleTime=0.2, InitialCondition=[5, 6]), record()],
                [*vec_wires([1, 2]), wire("g", "b"), wire("b", "w")], duration=0.4)
    plan = nc.compile_plan(d)
    for _ in range(2):
        y = np.asarray(plan.run()["workspace"]["y"])
        assert np.allclose(y, [[0, 0], [0, 0], [0.2, 0.4], [0.2, 0.4], [0.4, 0.8]], atol=1e-12)
