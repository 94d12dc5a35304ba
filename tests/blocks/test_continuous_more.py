"""Continuous library, second batch, on nflow's fixed-step path: tf (RK4 per step,
controller canonical form), stateSpace, lpf, hpf, derivative, pid, delay. Expected values
are closed forms or reference recurrences written here with plain numpy."""
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from nflow_compat import DiagramError
from tests.blocks.test_discrete_more import column, vec_ramp, vec_wires
from tests.util import blk, diagram, record, run, trace, wire

DT = 0.1
FAST = settings(max_examples=25, deadline=None)




def const_into(block, value=1.0, duration=1.0, dt=DT, solver="discrete"):
    d = diagram([blk("c", "constant", Value=value), block, record()], [wire("c", "b"), wire("b", "w")],
                dt=dt, duration=duration, solver=solver)
    return trace(d)


def rk4_companion(num, den, u, dt):
    """Reference: controller canonical form of num/den, RK4 per step with u held; returns
    y_k = D u_k + C x_k for the input sequence u."""
    a0 = den[0]
    den = [v / a0 for v in den]
    num = [v / a0 for v in num]
    n = len(den) - 1
    num = [0.0] * (n + 1 - len(num)) + num
    D = num[0]
    C = np.array([num[n - i] - den[n - i] * D for i in range(n)])   # C[j] pairs with x_j
    A = np.zeros((n, n))
    A[:-1, 1:] = np.eye(n - 1)
    A[-1, :] = [-den[n - j] for j in range(n)]
    Bv = np.zeros(n)
    Bv[-1] = 1.0
    x, out = np.zeros(n), []
    for uk in u:
        out.append(D * uk + C @ x)
        f = lambda z: A @ z + Bv * uk
        k1 = f(x); k2 = f(x + 0.5 * dt * k1); k3 = f(x + 0.5 * dt * k2); k4 = f(x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return np.array(out)


# ----------------------------------------------------------------------------- tf

def test_tf_first_order_step_is_rk4_exact_for_a_linear_system():
    y = const_into(blk("b", "tf", Numerator=[1], Denominator=[1, 1]))[:, 0]
    R = 1 - DT + DT ** 2 / 2 - DT ** 3 / 6 + DT ** 4 / 24
    assert np.allclose(y, [1 - R ** k for k in range(11)], atol=1e-14)
    assert abs(y[-1] - (1 - math.exp(-1))) < 1e-6   # RK4 error at h = 0.1


def test_tf_default_is_3_over_s_plus_3():
    y = const_into(blk("b", "tf"), duration=2.0)[:, 0]
    h = 3 * DT
    R = 1 - h + h ** 2 / 2 - h ** 3 / 6 + h ** 4 / 24
    assert np.allclose(y, [1 - R ** k for k in range(21)], atol=1e-13)


def test_tf_biproper_answers_the_current_input():
    y = column(blk("b", "tf", Numerator=[1, 0], Denominator=[1, 1]), [0, 1, 1, 1, 0])
    assert np.allclose(y, rk4_companion([1, 0], [1, 1], [0, 1, 1, 1, 0], DT), atol=1e-14)
    assert y[1] == 1.0   # the step shows in the very sample it happens (D = 1)


def test_tf_second_order_matches_the_reference():
    num, den = [2, 3], [1, 0.8, 4]
    u = [1, 1, 0, -1, 2, 2, 2, 0.5]
    assert np.allclose(column(blk("b", "tf", Numerator=num, Denominator=den), u), rk4_companion(num, den, u, DT),
                       atol=1e-13)


def test_tf_trims_leading_zeros_and_normalizes():
    u = [1, 2, 0, 1]
    a = column(blk("b", "tf", Numerator=[0, 0, 4], Denominator=[0, 2, 2]), u)
    b = column(blk("b", "tf", Numerator=[2], Denominator=[1, 1]), u)
    assert np.allclose(a, b, atol=1e-15)


def test_tf_pure_gain():
    assert column(blk("b", "tf", Numerator=[6], Denominator=[2]), [1, -2, 3]).tolist() == [3, -6, 9]


def test_tf_breaks_a_loop_when_strictly_proper():
    # unity negative feedback around 1/s: closed loop 1/(s+1), simulated by RK4 with the
    # error held over each step (not the closed loop's own RK4)
    d = diagram([blk("r", "constant", Value=1), blk("s", "sum", inputs=2, Inputs="+-"),
                 blk("b", "tf", Numerator=[1], Denominator=[1, 0]), record()],
                [wire("r", "s", 0, 0), wire("b", "s", 0, 1), wire("s", "b"), wire("b", "w")], duration=1.0)
    y = trace(d)[:, 0]
    x, ref = 0.0, []
    for _ in range(11):
        ref.append(x)
        x += DT * (1 - x)   # 1/s with the input held: RK4 of x' = e is exact
    assert np.allclose(y, ref, atol=1e-14)


def test_tf_vector_elements_are_independent():
    d = diagram([blk("c", "constant", Value=[1, -2]), blk("b", "tf", Numerator=[1], Denominator=[1, 1]), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.5)
    y = trace(d)
    assert np.allclose(y[:, 1], -2 * y[:, 0], atol=1e-15)


def test_tf_zero_denominator_is_an_error():
    with pytest.raises(DiagramError) as err:
        const_into(blk("b", "tf", Numerator=[1], Denominator=[0, 0]))
    assert err.value.code == "param_value" and err.value.param == "Denominator"


def test_tf_improper_warns():
    res = run(diagram([blk("c", "constant"), blk("b", "tf", Numerator=[1, 2, 3], Denominator=[1, 1]), record()],
                      [wire("c", "b"), wire("b", "w")], duration=0.1))
    assert any("improper" in w for w in res["warnings"])


def test_tf_runs_under_every_solver():
    # ode45 integrates 1/(s+1) to 1 - exp(-t); ode1 runs the fixed-step path
    y = const_into(blk("b", "tf", Numerator=[1], Denominator=[1, 1]), solver="ode45")[:, 0]
    assert np.allclose(y, 1 - np.exp(-np.arange(11) * 0.1), atol=1e-8)
    assert const_into(blk("b", "tf", Numerator=[1], Denominator=[1, 1]), solver="ode1").shape == (11, 1)


@FAST
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=3), st.lists(st.integers(1, 5), min_size=1, max_size=2),
       st.lists(st.integers(-4, 4), min_size=2, max_size=8))
def test_tf_matches_the_companion_reference(num, tail, u):
    den = [1] + tail
    num = num[-len(den):]
    y = column(blk("b", "tf", Numerator=num, Denominator=den), u)
    assert np.allclose(y, rk4_companion(num, den, u, DT), rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- stateSpace

def test_state_space_scalar_euler_with_initial_condition_and_feedthrough():
    y = const_into(blk("b", "stateSpace", A=-2, B=1, C=3, D=0.5, InitialCondition=1))[:, 0]
    assert np.allclose(y, [2 + 1.5 * 0.8 ** k for k in range(11)], atol=1e-13)


def test_state_space_defaults_integrate():
    # A = B = C = 1: x' = x + u, Euler: x_{k+1} = 1.1 x_k + 0.1
    y = const_into(blk("b", "stateSpace"), duration=0.5)[:, 0]
    assert np.allclose(y, [(1.1 ** k - 1) for k in range(6)], atol=1e-13)


def test_state_space_without_d_reads_the_state_only():
    y = column(blk("b", "stateSpace", A=0, B=1, C=1, D=0), [5, 0, 0, 0])
    assert np.allclose(y, [0, 0.5, 0.5, 0.5], atol=1e-15)


def test_state_space_mimo_oscillator():
    # x1' = x2, x2' = -x1 + u; y = [x1; x2]
    A, B, C = [[0, 1], [-1, 0]], [[0], [1]], [[1, 0], [0, 1]]
    y = const_into(blk("b", "stateSpace", A=A, B=B, C=C, D=[[0], [0]], InitialCondition=[1, 0]), duration=0.5)
    x, ref = np.array([1.0, 0.0]), []
    for _ in range(6):
        ref.append(x.copy())
        x = x + DT * (np.array(A) @ x + np.array(B)[:, 0])
    assert np.allclose(y, ref, atol=1e-14)


def test_state_space_two_inputs_and_breaking_loops():
    d = diagram([blk("c", "constant", Value=[1, 3]), blk("b", "stateSpace", A=-1, B=[1, 1], C=2, D=[0, 1]), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.3)
    y = trace(d)[:, 0]
    x, ref = 0.0, []
    for _ in range(4):
        ref.append(2 * x + 3)
        x += DT * (-x + 4)
    assert np.allclose(y, ref, atol=1e-14)
    # D = 0: the block breaks a loop (u = 1 - y), no algebraic-loop relaxation needed
    d = diagram([blk("one", "constant", Value=1), blk("s", "sum", inputs=2, Inputs="+-"),
                 blk("b", "stateSpace", A=0, B=1, C=1, D=0), record()],
                [wire("one", "s", 0, 0), wire("b", "s", 0, 1), wire("s", "b"), wire("b", "w")], duration=0.3)
    assert np.allclose(trace(d)[:, 0], [0, 0.1, 0.19, 0.271], atol=1e-14)


def test_state_space_latched_input_shows_in_output_phase_readers():
    # D != 0: OUTPUT emits C x + D u_prev, ALGEBRAIC overwrites with the current u; a
    # labelSource copying the signal in OUTPUT (declared after) sees the OUTPUT value
    d = diagram([blk("r", "ramp", slope=10), blk("b", "stateSpace", A=0, B=0, C=0, D=1),
                 blk("ls", "labelSink", GotoTag="s"), blk("src", "labelSource", GotoTag="s"),
                 blk("m", "mux", inputs=2), record()],
                [wire("r", "b"), wire("b", "ls"), wire("b", "m", 0, 0), wire("src", "m", 0, 1), wire("m", "w")],
                duration=0.3)
    y = trace(d)
    assert np.allclose(y[:, 0], [0, 1, 2, 3], atol=1e-12)
    assert np.allclose(y[:, 1], [0, 0, 1, 2], atol=1e-12)


# ----------------------------------------------------------------------------- lpf / hpf

def test_lpf_step_response():
    y = const_into(blk("b", "lpf", Cutoff=1))[:, 0]
    k = DT * 2 * math.pi
    assert np.allclose(y, [1 - (1 - k) ** n for n in range(11)], atol=1e-14)


def test_lpf_negative_cutoff_freezes_and_vector():
    assert not const_into(blk("b", "lpf", Cutoff=-3)).any()
    d = diagram([blk("c", "constant", Value=[2, -4]), blk("b", "lpf", Cutoff=0.5), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.4)
    y = trace(d)
    k = DT * math.pi
    assert np.allclose(y[:, 0], [2 * (1 - (1 - k) ** n) for n in range(5)], atol=1e-14)
    assert np.allclose(y[:, 1], -2 * y[:, 0], atol=1e-14)


def test_hpf_step_response_and_complement():
    u = [1, 1, 1, 1, 1, 1]
    lo, hi = column(blk("b", "lpf", Cutoff=2), u), column(blk("b", "hpf", Cutoff=2), u)
    k = DT * 4 * math.pi
    assert hi[0] == 0.0
    assert np.allclose(hi[1:], [(1 - k) ** n for n in range(1, 6)], atol=1e-14)
    # hpf emits u[k-1] - x[k] where lpf emits x[k]
    assert np.allclose(hi[1:] + lo[1:], 1.0, atol=1e-14)


def test_filters_break_loops():
    # u = 1 - lpf(u)
    d = diagram([blk("one", "constant", Value=1), blk("s", "sum", inputs=2, Inputs="+-"), blk("b", "lpf"), record()],
                [wire("one", "s", 0, 0), wire("b", "s", 0, 1), wire("s", "b"), wire("b", "w")], duration=0.3)
    k = DT * 2 * math.pi
    x, ref = 0.0, []
    for _ in range(4):
        ref.append(x)
        x += k * ((1 - x) - x)
    assert np.allclose(trace(d)[:, 0], ref, atol=1e-14)


# ----------------------------------------------------------------------------- derivative

def test_derivative_backward_difference_primed_at_zero():
    assert np.allclose(column(blk("b", "derivative"), [5, 6, 8, 8, 2]), [0, 10, 20, 0, -60], atol=1e-12)


def test_derivative_of_a_sine_approaches_the_cosine():
    d = diagram([blk("s", "sine", Frequency=0.5), blk("b", "derivative"), record()],
                [wire("s", "b"), wire("b", "w")], dt=0.001, duration=1.0)
    y = trace(d)[:, 0]
    t = np.arange(1001) * 0.001
    ref = np.concatenate([[0.0], np.diff(np.sin(math.pi * t)) / 0.001])
    assert np.allclose(y, ref, atol=1e-9)
    # a backward difference is the central difference at t - dt/2
    assert np.allclose(y[1:], math.pi * np.cos(math.pi * (t[1:] - 0.0005)), atol=1e-6)


def test_derivative_vector_and_unconnected():
    d = diagram([*vec_ramp([1, -3]), blk("b", "derivative"), record()],
                [*vec_wires([1, -3]), wire("g", "b"), wire("b", "w")], duration=0.3)
    assert np.allclose(trace(d), [[0, 0], [1, -3], [1, -3], [1, -3]], atol=1e-12)
    d = diagram([blk("b", "derivative"), record()], [wire("b", "w")], duration=0.2)
    assert trace(d)[:, 0].tolist() == [0, 0, 0]


@FAST
@given(st.lists(st.integers(-9, 9), min_size=2, max_size=8))
def test_derivative_sums_back_to_the_signal(u):
    y = column(blk("b", "derivative"), u)
    assert np.allclose(np.cumsum(y) * DT, np.array(u) - u[0], atol=1e-9)


# ----------------------------------------------------------------------------- pid

def test_pid_proportional_only_is_a_gain():
    assert np.allclose(column(blk("b", "pid", P=2.5), [1, -2, 4]), [2.5, -5, 10])


def test_pid_integral_includes_the_current_step_and_respects_limits():
    y = const_into(blk("b", "pid", P=2, I=3, D=0.5, UpperSaturationLimit=0.35), duration=0.6)[:, 0]
    assert np.allclose(y, [2 + 3 * min(0.1 * (k + 1), 0.35) + (5 if k == 0 else 0) for k in range(7)], atol=1e-13)
    y = const_into(blk("b", "pid", P=0, I=1, LowerSaturationLimit=-0.15), value=-1, duration=0.4)[:, 0]
    assert np.allclose(y, [-0.1, -0.15, -0.15, -0.15, -0.15], atol=1e-14)


def test_pid_ideal_derivative_kicks_at_the_first_sample():
    y = column(blk("b", "pid", P=0, I=0, D=1), [2, 2, 3, 3])
    assert np.allclose(y, [20, 0, 10, 0], atol=1e-12)


def test_pid_filtered_derivative():
    y = const_into(blk("b", "pid", P=0, I=0, D=1, N=5), duration=0.6)[:, 0]
    assert np.allclose(y, [5 * 0.5 ** k for k in range(7)], atol=1e-14)
    # a non-finite N keeps the ideal derivative
    y = const_into(blk("b", "pid", P=0, I=0, D=1, N="inf"), duration=0.2)[:, 0]
    assert np.allclose(y, [10, 0, 0], atol=1e-12)


def test_pid_closed_loop_on_an_integrator_plant():
    # e = 1 - x, u = pid(e), x_{k+1} = x_k + dt*u_k (integrator plant, output before the step)
    d = diagram([blk("r", "constant", Value=1), blk("s", "sum", inputs=2, Inputs="+-"),
                 blk("c", "pid", P=2, I=1, D=0), blk("p", "integrator"), record()],
                [wire("r", "s", 0, 0), wire("p", "s", 0, 1), wire("s", "c"), wire("c", "p"), wire("p", "w")],
                duration=2.0)
    x, integ, ref = 0.0, 0.0, []
    for _ in range(21):
        ref.append(x)
        e = 1 - x
        u = 2 * e + (integ + e * DT)
        integ += e * DT
        x += DT * u
    assert np.allclose(trace(d)[:, 0], ref, atol=1e-13)


def test_pid_vector_and_continuous_states():
    d = diagram([blk("c", "constant", Value=[1, 2]), blk("b", "pid", P=1, I=1), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.2)
    assert np.allclose(trace(d), [[1.1, 2.2], [1.2, 2.4], [1.3, 2.6]], atol=1e-14)
    # under a solver the integral is a state: y = u + u t (analytic), no step ahead
    assert np.allclose(trace(dict(d, solver="ode4")), [[1.0, 2.0], [1.1, 2.2], [1.2, 2.4]], atol=1e-12)


# ----------------------------------------------------------------------------- delay

def test_delay_whole_steps():
    assert np.allclose(column(blk("b", "delay", DelayTime=0.2), [1, 2, 3, 4, 5]), [0, 0, 1, 2, 3])
    assert np.allclose(column(blk("b", "delay"), [1, 2, 3, 4, 5]), [0, 1, 2, 3, 4])   # default 0.1 = one step


def test_delay_interpolates_between_samples():
    y = column(blk("b", "delay", DelayTime=0.25), [1, 2, 3, 4, 5, 6])
    assert np.allclose(y, [0, 0, 0.5, 1.5, 2.5, 3.5], atol=1e-12)


def test_delay_zero_is_a_wire_and_negative_too():
    u = [3, 1, 4, 1, 5]
    assert column(blk("b", "delay", DelayTime=0), u).tolist() == u
    assert column(blk("b", "delay", DelayTime=-1), u).tolist() == u


def test_delay_below_one_step_mixes_the_current_input_of_an_output_source():
    # ramp (an OUTPUT block declared first): y = 0.6 u_k + 0.4 u_{k-1}
    d = diagram([blk("r", "ramp"), blk("b", "delay", DelayTime=0.04), record()],
                [wire("r", "b"), wire("b", "w")], duration=0.4)
    t = np.arange(5) * DT
    assert np.allclose(trace(d)[:, 0], 0.6 * t + 0.4 * np.concatenate([[0], t[:-1]]), atol=1e-12)


def test_delay_breaks_a_loop_and_handles_vectors():
    d = diagram([blk("one", "constant", Value=1), blk("s", "sum", inputs=2, Inputs="++"),
                 blk("b", "delay", DelayTime=0.2), record()],
                [wire("one", "s", 0, 0), wire("b", "s", 0, 1), wire("s", "b"), wire("s", "w")], duration=0.5)
    assert trace(d)[:, 0].tolist() == [1, 1, 2, 2, 3, 3]
    d = diagram([*vec_ramp([1, 2]), blk("b", "delay", DelayTime=0.1), record()],
                [*vec_wires([1, 2]), wire("g", "b"), wire("b", "w")], duration=0.2)
    assert np.allclose(trace(d), [[0, 0], [0, 0], [0.1, 0.2]], atol=1e-12)


def test_delay_beyond_the_buffer_limit_is_refused():
    with pytest.raises(DiagramError) as err:
        const_into(blk("b", "delay", DelayTime=1e9))
    assert err.value.code == "param_range"


@FAST
@given(st.lists(st.integers(-5, 5), min_size=2, max_size=10), st.integers(0, 4), st.sampled_from([0.0, 0.25, 0.5, 0.75]))
def test_delay_is_linear_interpolation_of_the_shifted_samples(u, whole, frac):
    assume(whole > 0 or frac == 0.0)   # below one step the current input depends on the source's phase (tested above)
    delay_time = (whole + frac) * DT
    y = column(blk("b", "delay", DelayTime=delay_time), u)
    ds = delay_time / DT
    d0, f = math.floor(ds), ds - math.floor(ds)
    at = lambda k: u[k] if 0 <= k else 0.0
    ref = [at(k - d0) * (1 - f) + at(k - d0 - 1) * f for k in range(len(u))]
    assert np.allclose(y, ref, atol=1e-9)
