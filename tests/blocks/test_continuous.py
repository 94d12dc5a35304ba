"""Continuous library: integrator, tf (RK4 per step, controller canonical form), stateSpace,
lpf, hpf, derivative, pid, delay on nflow's fixed-step path (the integrator: forward Euler
in UPDATE, pre-step output, limits, external reset and initial condition); pid under the
solvers that own continuous state; the constraint block under the dae solver. Expected
values are closed forms or reference recurrences written here with plain numpy."""
from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import nflow_compat as nc
from nflow_compat.engine import continuous as engine
from nflow_compat.errors import DiagramError, SimulationError
from tests.blocks.sequences import column_array, play, vec_ramp, vec_wires
from tests.util import blk, diagram, record, run, trace, wire

DT = 0.1


def integrate(u_values, *, dt=DT, reset=None, ic_signal=None, **params):
    """Integrator 'i' driven by a played sequence on port 0, optionally a reset line
    (port 1) and an external IC (next port); returns the output column."""
    blocks, conns = play(u_values, "u", dt=dt)
    ports = 1
    if reset is not None:
        b2, c2 = play(reset, "r", dt=dt)
        blocks, conns = blocks + b2, conns + c2 + [wire("r", "i", 0, ports)]
        ports += 1
    if ic_signal is not None:
        b3, c3 = play(ic_signal, "ic", dt=dt)
        blocks, conns = blocks + b3, conns + c3 + [wire("ic", "i", 0, ports)]
        ports += 1
    blocks += [blk("i", "integrator", inputs=ports, **params), record()]
    conns += [wire("u", "i"), wire("i", "w")]
    return trace(diagram(blocks, conns, dt=dt, duration=(len(u_values) - 1) * dt))[:, 0]


def test_output_is_the_pre_step_state():
    # y_k = IC + c * t_k for a constant input c
    for ic, c in ((0, 1), (1, 2), (-3, -0.5)):
        y = integrate([c] * 11, InitialCondition=ic)
        assert np.allclose(y, ic + c * DT * np.arange(11), atol=1e-12)


def test_forward_euler_of_a_sequence():
    u = [1, 3, -2, 0, 4]
    y = integrate(u, InitialCondition=0.5)
    assert np.allclose(y, 0.5 + DT * np.concatenate([[0], np.cumsum(u)[:-1]]), atol=1e-12)


def test_unconnected_input_holds_the_initial_condition():
    d = diagram([blk("i", "integrator", InitialCondition=2), record()], [wire("i", "w")], duration=0.3)
    assert trace(d)[:, 0].tolist() == [2, 2, 2, 2]


def test_limits_clamp_state_and_initial_condition():
    assert np.allclose(integrate([1] * 6, UpperSaturationLimit=0.25), [0, 0.1, 0.2, 0.25, 0.25, 0.25])
    assert np.allclose(integrate([-1] * 6, LowerSaturationLimit=-0.15), [0, -0.1, -0.15, -0.15, -0.15, -0.15])
    # an IC outside the limits starts on the limit, and the state leaves it when the input reverses
    assert np.allclose(integrate([-1] * 4, InitialCondition=5, UpperSaturationLimit=2), [2, 1.9, 1.8, 1.7])


def test_limit_defaults_are_the_inf_strings_and_accept_numbers_as_strings():
    big = integrate([100] * 4)
    assert np.allclose(big, [0, 10, 20, 30])
    assert np.allclose(integrate([1] * 4, LowerSaturationLimit="-inf", UpperSaturationLimit="0.15"),
                       [0, 0.1, 0.15, 0.15])


def test_inverted_limits_give_the_upper_one_like_min_of_max():
    assert np.allclose(integrate([1] * 3, LowerSaturationLimit=1, UpperSaturationLimit=-1), [-1, -1, -1])


def test_feedback_x_dot_equals_minus_x_gives_one_minus_dt_to_the_k():
    # the integrator is not feedthrough, so the loop through the gain is not algebraic
    for dt, a in ((0.1, 1.0), (0.05, 2.0)):
        d = diagram([blk("i", "integrator", InitialCondition=1), blk("g", "gain", Gain=-a), record()],
                    [wire("i", "g"), wire("g", "i"), wire("i", "w")], dt=dt, duration=1.0)
        y = trace(d)[:, 0]
        assert np.allclose(y, (1 - a * dt) ** np.arange(len(y)), rtol=1e-12)


def test_double_integrator_of_a_constant():
    # x'' = 1: v_k = dt k, x_k = dt^2 k(k-1)/2 (forward Euler, both pre-step)
    d = diagram([blk("c", "constant", Value=1), blk("v", "integrator"), blk("x", "integrator"), record()],
                [wire("c", "v"), wire("v", "x"), wire("x", "w")], duration=1.0)
    k = np.arange(11)
    assert np.allclose(trace(d)[:, 0], DT ** 2 * k * (k - 1) / 2, atol=1e-12)


def test_vector_integrator_initial_condition_list_and_broadcast():
    d = diagram([blk("c", "constant", Value=[1, 2, 3]), blk("i", "integrator", InitialCondition=[10, 20]), record()],
                [wire("c", "i"), wire("i", "w")], duration=0.2)
    assert np.allclose(trace(d), [[10, 20, 20], [10.1, 20.2, 20.3], [10.2, 20.4, 20.6]])
    d = diagram([blk("c", "constant", Value=2), blk("i", "integrator", InitialCondition=[1, -1],
                                                   LowerSaturationLimit=-1.1), record()],
                [wire("c", "i"), wire("i", "w")], duration=0.1)
    assert np.allclose(trace(d), [[1, -1], [1.2, -0.8]])


def test_vector_integrator_limits_per_element():
    d = diagram([blk("c", "constant", Value=[1, -1]),
                 blk("i", "integrator", LowerSaturationLimit=-0.15, UpperSaturationLimit=0.15), record()],
                [wire("c", "i"), wire("i", "w")], duration=0.3)
    assert np.allclose(trace(d), [[0, 0], [0.1, -0.1], [0.15, -0.15], [0.15, -0.15]])


@settings(max_examples=25, deadline=None)
@given(c=st.floats(-5, 5), ic=st.floats(-5, 5), lo=st.floats(-3, 0), span=st.floats(0, 3))
def test_clamped_euler_law(c, ic, lo, span):
    hi = lo + span
    y = integrate([c] * 8, InitialCondition=ic, LowerSaturationLimit=lo, UpperSaturationLimit=hi)
    x, expect = min(max(ic, lo), hi), []
    for _ in range(8):
        expect.append(x)
        x = min(max(x + DT * c, lo), hi)
    assert np.allclose(y, expect, atol=1e-12) and np.all(y >= lo) and np.all(y <= hi)


# ----------------------------------------------------------------------------- reset

def test_rising_reset_outputs_the_initial_condition_that_step_and_restarts():
    y = integrate([1] * 7, reset=[0, 0, 0, 1, 1, 1, 1], ExternalReset="rising", InitialCondition=0)
    assert np.allclose(y, [0, 0.1, 0.2, 0, 0.1, 0.2, 0.3])


def test_reset_never_fires_on_the_first_step():
    y = integrate([1] * 4, reset=[1, 1, 1, 1], ExternalReset="rising")
    assert np.allclose(y, [0, 0.1, 0.2, 0.3])
    y = integrate([1] * 4, reset=[-1, -1, -1, -1], ExternalReset="falling")
    assert np.allclose(y, [0, 0.1, 0.2, 0.3])
    # visible with an external IC that differs from the parameter
    y = integrate([1] * 3, reset=[1, 1, 1], ic_signal=[5, 5, 5], ExternalReset="either",
                  InitialConditionSource="external")
    assert np.allclose(y, [0, 0.1, 0.2])


def test_falling_and_either_resets():
    line = [1, 1, -1, -1, 1, 1]
    u = [1] * 6
    assert np.allclose(integrate(u, reset=line, ExternalReset="falling"), [0, 0.1, 0, 0.1, 0.2, 0.3])
    assert np.allclose(integrate(u, reset=line, ExternalReset="rising"), [0, 0.1, 0.2, 0.3, 0, 0.1])
    assert np.allclose(integrate(u, reset=line, ExternalReset="either"), [0, 0.1, 0, 0.1, 0, 0.1])


def test_zero_latches_the_side_it_was_reached_from():
    u = [1] * 7
    # -1, 0, 1 is one rising edge (at the 1); 1, 0, 1 is none
    assert np.allclose(integrate(u, reset=[-1, 0, 1, 1, 0, 1, 1], ExternalReset="rising"),
                       [0, 0.1, 0, 0.1, 0.2, 0.3, 0.4])
    # starting at 0, leaving it upward is an edge
    assert np.allclose(integrate(u, reset=[0, 0, 1, 1, 1, 1, 1], ExternalReset="rising"),
                       [0, 0.1, 0, 0.1, 0.2, 0.3, 0.4])


def test_level_reset_holds_while_the_line_is_non_zero():
    y = integrate([1] * 8, reset=[0, 0, 2, 2, 0, 0, -1, 0], ExternalReset="level", InitialCondition=0.5)
    assert np.allclose(y, [0.5, 0.6, 0.5, 0.5, 0.5, 0.6, 0.5, 0.5])


def test_reset_goes_to_the_clamped_initial_condition():
    y = integrate([1] * 5, reset=[0, 0, 1, 1, 1], ExternalReset="rising", InitialCondition=3,
                  UpperSaturationLimit=2.05)
    assert np.allclose(y, [2.05, 2.05, 2.05, 2.05, 2.05])
    y = integrate([-1] * 5, reset=[0, 0, 1, 1, 1], ExternalReset="rising", InitialCondition=3,
                  UpperSaturationLimit=2.05)
    assert np.allclose(y, [2.05, 1.95, 2.05, 1.95, 1.85])


def test_external_initial_condition_is_used_on_reset_only():
    # nflow's INIT reads the parameter; the wired IC is read when a reset fires
    y = integrate([1] * 6, reset=[0, 0, 1, 1, 1, 1], ic_signal=[5, 5, 5, 6, 6, 6], ExternalReset="rising",
                  InitialConditionSource="external", InitialCondition=-1)
    assert np.allclose(y, [-1, -0.9, 5, 5.1, 5.2, 5.3])
    # without a reset the external port is the second input and is never read
    y = integrate([1] * 3, ic_signal=[9, 9, 9], InitialConditionSource="external")
    assert np.allclose(y, [0, 0.1, 0.2])


def test_external_initial_condition_unconnected_falls_back_to_the_parameter():
    blocks, conns = play([0, 0, 1, 1], "r")
    d = diagram(blocks + [blk("c", "constant", Value=1),
                          blk("i", "integrator", inputs=3, ExternalReset="rising", InitialConditionSource="external",
                              InitialCondition=4), record()],
                conns + [wire("c", "i"), wire("r", "i", 0, 1), wire("i", "w")], duration=0.3)
    assert np.allclose(trace(d)[:, 0], [4, 4.1, 4, 4.1])


def test_reset_is_settled_in_the_algebraic_wave_whatever_the_declaration_order():
    # the reset line is computed by a feedthrough chain declared after the integrator
    d = diagram([record(), blk("i", "integrator", inputs=2, ExternalReset="rising"),
                 blk("c", "constant", Value=1), blk("g", "gain", Gain=1), blk("s", "step", Time=0.25)],
                [wire("c", "i"), wire("s", "g"), wire("g", "i", 0, 1), wire("i", "w")], duration=0.5)
    assert np.allclose(trace(d)[:, 0], [0, 0.1, 0.2, 0, 0.1, 0.2])


def test_resettable_integrator_in_a_feedback_loop():
    # x' = -x with a rising reset to IC 1 at t = 0.3: the loop through port 0 settles
    blocks, conns = play([0, 0, 0, 1, 1, 1], "r")
    d = diagram(blocks + [blk("i", "integrator", inputs=2, ExternalReset="rising", InitialCondition=1),
                          blk("g", "gain", Gain=-1), record()],
                conns + [wire("i", "g"), wire("g", "i"), wire("r", "i", 0, 1), wire("i", "w")], duration=0.5)
    # k=3: the output is reset to 1 in ALGEBRAIC; the gain sees it, so x4 = 1 - 0.1*1
    assert np.allclose(trace(d)[:, 0], [1, 0.9, 0.81, 1, 0.9, 0.81])


def test_vector_reset_and_external_ic_broadcast():
    blocks, conns = play([0, 1, 1], "r")
    d = diagram(blocks + [blk("c", "constant", Value=[1, 2]), blk("k", "constant", Value=7),
                          blk("i", "integrator", inputs=3, ExternalReset="rising", InitialConditionSource="external"),
                          record()],
                conns + [wire("c", "i"), wire("r", "i", 0, 1), wire("k", "i", 0, 2), wire("i", "w")], duration=0.2)
    assert np.allclose(trace(d), [[0, 0], [7, 7], [7.1, 7.2]])


def test_missing_reset_port_is_a_warning_and_never_resets():
    d = diagram([blk("c", "constant", Value=1), blk("i", "integrator", ExternalReset="rising"), record()],
                [wire("c", "i"), wire("i", "w")], duration=0.2)
    res = run(d)
    assert np.allclose(np.asarray(res["workspace"]["y"])[:, 0], [0, 0.1, 0.2])
    assert any("declares 1 input" in w for w in res["warnings"])


def test_reset_kind_and_ic_source_are_checked():
    for key, value in (("ExternalReset", "sometimes"), ("InitialConditionSource", "outside")):
        d = diagram([blk("i", "integrator", **{key: value}), record()], [wire("i", "w")])
        with pytest.raises(DiagramError) as info:
            nc.simulate(d)
        assert info.value.code == "param_value" and info.value.param == key


def test_external_ic_width_must_agree_with_the_signal():
    d = diagram([blk("c", "constant", Value=[1, 2]), blk("k", "constant", Value=[1, 2, 3]),
                 blk("i", "integrator", inputs=2, InitialConditionSource="external"), record()],
                [wire("c", "i"), wire("k", "i", 0, 1), wire("i", "w")])
    with pytest.raises(DiagramError) as info:
        nc.simulate(d)
    assert info.value.code == "width_mismatch" and info.value.block == "i"


def test_doc_table_names_are_not_read():
    # the page's table says initial/min/max; the handler reads the manifest keys only
    y = integrate([1] * 5, initial=0.05, min=-1, max=0.2)
    assert np.allclose(y, [0.0, 0.1, 0.2, 0.3, 0.4])


# ----------------------------------------------------------------------------- solvers

def test_ode1_is_the_fixed_step_rule_and_solvers_integrate_exactly():
    d = diagram([blk("c", "constant", Value=1), blk("i", "integrator"), record()],
                [wire("c", "i"), wire("i", "w")], duration=0.3)
    assert trace(dict(d, solver="ode1")).tolist() == trace(d).tolist()
    for solver in ("ode4", "ode45", "dae"):   # x' = 1 is integrated exactly by every method
        assert np.allclose(trace(dict(d, solver=solver))[:, 0], [0.0, 0.1, 0.2, 0.3], atol=1e-12)


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
    y = column_array(blk("b", "tf", Numerator=[1, 0], Denominator=[1, 1]), [0, 1, 1, 1, 0])
    assert np.allclose(y, rk4_companion([1, 0], [1, 1], [0, 1, 1, 1, 0], DT), atol=1e-14)
    assert y[1] == 1.0   # the step shows in the very sample it happens (D = 1)


def test_tf_second_order_matches_the_reference():
    num, den = [2, 3], [1, 0.8, 4]
    u = [1, 1, 0, -1, 2, 2, 2, 0.5]
    assert np.allclose(column_array(blk("b", "tf", Numerator=num, Denominator=den), u), rk4_companion(num, den, u, DT),
                       atol=1e-13)


def test_tf_trims_leading_zeros_and_normalizes():
    u = [1, 2, 0, 1]
    a = column_array(blk("b", "tf", Numerator=[0, 0, 4], Denominator=[0, 2, 2]), u)
    b = column_array(blk("b", "tf", Numerator=[2], Denominator=[1, 1]), u)
    assert np.allclose(a, b, atol=1e-15)


def test_tf_pure_gain():
    assert column_array(blk("b", "tf", Numerator=[6], Denominator=[2]), [1, -2, 3]).tolist() == [3, -6, 9]


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
    y = column_array(blk("b", "tf", Numerator=num, Denominator=den), u)
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
    y = column_array(blk("b", "stateSpace", A=0, B=1, C=1, D=0), [5, 0, 0, 0])
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
    lo, hi = column_array(blk("b", "lpf", Cutoff=2), u), column_array(blk("b", "hpf", Cutoff=2), u)
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
    assert np.allclose(column_array(blk("b", "derivative"), [5, 6, 8, 8, 2]), [0, 10, 20, 0, -60], atol=1e-12)


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
    y = column_array(blk("b", "derivative"), u)
    assert np.allclose(np.cumsum(y) * DT, np.array(u) - u[0], atol=1e-9)


# ----------------------------------------------------------------------------- pid

def test_pid_proportional_only_is_a_gain():
    assert np.allclose(column_array(blk("b", "pid", P=2.5), [1, -2, 4]), [2.5, -5, 10])


def test_pid_integral_includes_the_current_step_and_respects_limits():
    y = const_into(blk("b", "pid", P=2, I=3, D=0.5, UpperSaturationLimit=0.35), duration=0.6)[:, 0]
    assert np.allclose(y, [2 + 3 * min(0.1 * (k + 1), 0.35) + (5 if k == 0 else 0) for k in range(7)], atol=1e-13)
    y = const_into(blk("b", "pid", P=0, I=1, LowerSaturationLimit=-0.15), value=-1, duration=0.4)[:, 0]
    assert np.allclose(y, [-0.1, -0.15, -0.15, -0.15, -0.15], atol=1e-14)


def test_pid_ideal_derivative_kicks_at_the_first_sample():
    y = column_array(blk("b", "pid", P=0, I=0, D=1), [2, 2, 3, 3])
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
    assert np.allclose(column_array(blk("b", "delay", DelayTime=0.2), [1, 2, 3, 4, 5]), [0, 0, 1, 2, 3])
    assert np.allclose(column_array(blk("b", "delay"), [1, 2, 3, 4, 5]), [0, 1, 2, 3, 4])   # default 0.1 = one step


def test_delay_interpolates_between_samples():
    y = column_array(blk("b", "delay", DelayTime=0.25), [1, 2, 3, 4, 5, 6])
    assert np.allclose(y, [0, 0, 0.5, 1.5, 2.5, 3.5], atol=1e-12)


def test_delay_zero_is_a_wire_and_negative_too():
    u = [3, 1, 4, 1, 5]
    assert column_array(blk("b", "delay", DelayTime=0), u).tolist() == u
    assert column_array(blk("b", "delay", DelayTime=-1), u).tolist() == u


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
    y = column_array(blk("b", "delay", DelayTime=delay_time), u)
    ds = delay_time / DT
    d0, f = math.floor(ds), ds - math.floor(ds)
    at = lambda k: u[k] if 0 <= k else 0.0
    ref = [at(k - d0) * (1 - f) + at(k - d0 - 1) * f for k in range(len(u))]
    assert np.allclose(y, ref, atol=1e-9)


# --------------------------------------------------------------------------------------------------
# pid under the solvers that own continuous state (ode4, ode45, dae; issue 10, item 4).
#
# nflow's handler (continuous/pid.cpp) has a solver path for every form: the integral is a
# solver state (DERIVATIVE: s' = u), the output answers the current input in ALGEBRAIC,
# y = P u + I s + D d, with d = N (u - f) and f' = N (u - f) for a filtered derivative, else
# the backward difference (u - u_prev)/max(dt, 1e-6) against the input UPDATE latched at the
# last grid point. The limits bound the integral (held at a limit, as the integrator).
# Expected values are closed forms (derivations in the comments).
# --------------------------------------------------------------------------------------------------

SOLVERS = ("ode4", "ode45", "dae")
PID_DT = 0.01


def _driven(pid, source, solver, duration=1.0, dt=PID_DT):
    """source -> pid -> recorder; (time, y)."""
    d = diagram([dict(source, id="src"), dict(pid, id="c"), record()], [wire("src", "c"), wire("c", "w")],
                dt=dt, duration=duration, solver=solver)
    return np.arange(round(duration / dt) + 1) * dt, trace(d)[:, 0]


def _tolerance(solver):
    # ode4: RK4 with dt = 0.01 on e^(-t)-like solutions, error ~1e-10; the variable-step
    # solvers run at relTol 1e-6 / absTol 1e-8
    return 1e-8 if solver == "ode4" else 2e-5


@pytest.mark.parametrize("solver", SOLVERS)
def test_default_and_proportional_only_pid_are_gains(solver):
    sine = blk("x", "sine", Amplitude=2.0, Frequency=1.5)
    t, y = _driven(blk("x", "pid"), sine, solver)             # nflow's defaults: P 1, I 0, D 0, N 0
    assert np.allclose(y, 2.0 * np.sin(2 * math.pi * 1.5 * t), atol=1e-12)
    t, y = _driven(blk("x", "pid", P=2.5, N=0), sine, solver)
    assert np.allclose(y, 2.5 * 2.0 * np.sin(2 * math.pi * 1.5 * t), atol=1e-12)


@pytest.mark.parametrize("solver", SOLVERS)
def test_pi_on_a_first_order_plant(solver):
    # r = 1, e = r - y, u = 2 e + integral(e), plant y' = -y + u (tf 1/(s+1)), y(0) = 0.
    # T(s) = C P/(1 + C P) = (2s + 1)/(s^2 + 3s + 1), poles r1,2 = (-3 +- sqrt 5)/2 (r1 r2 = 1).
    # Step response Y = (2s + 1)/(s (s - r1)(s - r2)) = 1/s + B/(s - r1) + C/(s - r2) with
    # B = (2 r1 + 1)/(r1 (r1 - r2)), C = (2 r2 + 1)/(r2 (r2 - r1)).
    d = diagram([blk("r", "constant", Value=1), blk("s", "sum", inputs=2, Inputs="+-"),
                 blk("c", "pid", P=2, I=1, D=0), blk("p", "tf", Numerator=[1], Denominator=[1, 1]), record()],
                [wire("r", "s", 0, 0), wire("p", "s", 0, 1), wire("s", "c"), wire("c", "p"), wire("p", "w")],
                dt=PID_DT, duration=3.0, solver=solver)
    t = np.arange(301) * PID_DT
    r1, r2 = (-3 + math.sqrt(5)) / 2, (-3 - math.sqrt(5)) / 2
    b = (2 * r1 + 1) / (r1 * (r1 - r2))
    c = (2 * r2 + 1) / (r2 * (r2 - r1))
    assert np.allclose(trace(d)[:, 0], 1 + b * np.exp(r1 * t) + c * np.exp(r2 * t), atol=_tolerance(solver))


@pytest.mark.parametrize("solver", SOLVERS)
def test_pi_cancelling_the_plant_pole_holds_its_output(solver):
    # C = (s + 1)/s against P = 1/(s + 1): L = 1/s, y = 1 - e^-t, e = e^-t and the
    # controller output u = e + integral(e) = e^-t + 1 - e^-t = 1 at all times
    d = diagram([blk("r", "constant", Value=1), blk("s", "sum", inputs=2, Inputs="+-"),
                 blk("c", "pid", P=1, I=1), blk("p", "tf", Numerator=[1], Denominator=[1, 1]),
                 record("w", "y"), record("wu", "u")],
                [wire("r", "s", 0, 0), wire("p", "s", 0, 1), wire("s", "c"), wire("c", "p"), wire("p", "w"),
                 wire("c", "wu")], dt=PID_DT, duration=2.0, solver=solver)
    t = np.arange(201) * PID_DT
    assert np.allclose(trace(d, "y")[:, 0], 1 - np.exp(-t), atol=_tolerance(solver))
    assert np.allclose(trace(d, "u")[:, 0], 1.0, atol=_tolerance(solver))


@pytest.mark.parametrize("solver", SOLVERS)
def test_integral_limits_saturate_without_windup(solver):
    # u = 1 before t = 1 and -1 after; s' = u held at the upper limit 0.35:
    # s = t up to 0.35, then 0.35 until t = 1, then 0.35 - (t - 1) (no windup to unwind),
    # down to the lower limit -0.2 at t = 1.55, held there
    d = diagram([blk("one", "constant", Value=1), blk("st", "step", Time=1.0), blk("g", "gain", Gain=2),
                 blk("s", "sum", inputs=2, Inputs="+-"),
                 blk("c", "pid", P=0, I=1, UpperSaturationLimit=0.35, LowerSaturationLimit=-0.2), record()],
                [wire("one", "s", 0, 0), wire("st", "g"), wire("g", "s", 0, 1), wire("s", "c"), wire("c", "w")],
                dt=PID_DT, duration=2.0, solver=solver)
    t = np.arange(201) * PID_DT
    expected = np.clip(np.where(t < 1.0, t, 0.35 - (t - 1.0)), -0.2, 0.35)
    y = trace(d)[:, 0]
    if solver == "ode4":
        # the RK4 step that ends on the limit has its last stage held (s + h k3 = 0.35):
        # 0.34 + h (1 + 2 + 2 + 0)/6, as nflow's integrator under ode4
        assert y[35] == pytest.approx(0.34 + PID_DT * 5 / 6, abs=1e-12)
        y[35] = expected[35]
    assert np.allclose(y, expected, atol=1e-9 if solver == "ode4" else 2e-6)


@pytest.mark.parametrize("solver", SOLVERS)
def test_vector_pi_with_limits(solver):
    # element-wise: y_i = u_i + clamp(u_i t, -0.5, 0.3) for constant u = [1, -2]
    t, _ = _driven(blk("x", "pid"), blk("x", "constant"), solver)
    d = diagram([blk("c", "constant", Value=[1, -2]),
                 blk("b", "pid", P=1, I=1, UpperSaturationLimit=0.3, LowerSaturationLimit=-0.5), record()],
                [wire("c", "b"), wire("b", "w")], dt=PID_DT, duration=1.0, solver=solver)
    u = np.array([1.0, -2.0])
    assert np.allclose(trace(d), u + np.clip(np.outer(t, u), -0.5, 0.3), atol=1e-9)


@pytest.mark.parametrize("solver", SOLVERS)
def test_filtered_derivative(solver):
    # u = 1: f' = N (1 - f), f(0) = 0, so y = D N (1 - f) = D N e^(-N t); D 0.5, N 5
    t, y = _driven(blk("x", "pid", P=0, I=0, D=0.5, N=5), blk("x", "constant", Value=1), solver)
    assert np.allclose(y, 2.5 * np.exp(-5 * t), atol=_tolerance(solver))


@pytest.mark.parametrize("solver", SOLVERS)
def test_ideal_derivative_is_the_backward_difference_on_the_grid(solver):
    # N = 0 (nflow's default): d = (u(t_k) - u(t_k-1))/dt with u_prev from 0, as on the
    # fixed-step path: a ramp of slope 3 from t = 0 gives 0 at t = 0 (u(0) = 0) then 3;
    # a constant 2 gives the 2/dt kick at the first sample, then 0
    t, y = _driven(blk("x", "pid", P=0, I=0, D=1), blk("x", "ramp", slope=3.0), solver, dt=0.1)
    assert np.allclose(y, np.where(t == 0, 0.0, 3.0), atol=1e-9)
    t, y = _driven(blk("x", "pid", P=0, I=0, D=1, N=0), blk("x", "constant", Value=2), solver, dt=0.1)
    assert np.allclose(y, np.where(t == 0, 20.0, 0.0), atol=1e-9)


def test_the_solver_path_matches_the_fixed_step_one_where_they_agree():
    # P and D terms are the same arithmetic on both paths; with I = 0 the outputs agree
    pid = blk("x", "pid", P=1.5, I=0, D=0.2)
    source = blk("x", "sine", Amplitude=1.0, Frequency=2.0)
    _, fixed = _driven(pid, source, "discrete", dt=0.05)
    _, solved = _driven(pid, source, "ode45", dt=0.05)
    assert np.allclose(solved, fixed, atol=1e-12)


# --------------------------------------------------------------------------------------------------
# The constraint block (algebraic state z with residual input g) under the dae solver.
#
# Every expected value is a closed form or an independent numpy computation; none comes
# from running nflow_compat.
# --------------------------------------------------------------------------------------------------

def z_trace(res, name="y"):
    return np.asarray(res["workspace"][name], dtype=float)[:, 0]


def residual_loop(expr, ic=0.0, duration=1.0, dt=0.1, solver="dae", **extra):
    """A constraint c whose residual is the expression ``expr`` of z (and t)."""
    blocks = [blk("c", "constraint", InitialCondition=ic), blk("g", "expression", Expr=expr), record()]
    conns = [wire("c", "g"), wire("g", "c"), wire("c", "w")]
    return diagram(blocks, conns, dt=dt, duration=duration, solver=solver, **extra)


def decay(a=2.0, b=0.0, x0=1.0, ic=0.0, duration=2.0, **extra):
    """x' = -z (integrator fed by -z) with the constraint 0 = z - (a x + b)."""
    blocks = [blk("c", "constraint", InitialCondition=ic), blk("neg", "gain", Gain=-1.0),
              blk("i", "integrator", InitialCondition=x0), blk("ax", "gain", Gain=a), blk("b", "constant", Value=b),
              blk("g", "sum", Inputs="+--", inputs=3), record(), record("wx", "x")]
    conns = [wire("c", "neg"), wire("neg", "i"), wire("i", "ax"), wire("c", "g", 0, 0), wire("ax", "g", 0, 1),
             wire("b", "g", 0, 2), wire("g", "c"), wire("c", "w"), wire("i", "wx")]
    return diagram(blocks, conns, duration=duration, solver="dae", **extra)


# ----------------------------------------------------------------------------- closed forms

def test_z_follows_a_sine():
    """0 = z - sin(2 pi t): no differential state, z = sin(2 pi t) at every sample."""
    blocks = [blk("c", "constraint"), blk("s", "sine"), blk("g", "sum", Inputs="+-", inputs=2), record()]
    conns = [wire("c", "g", 0, 0), wire("s", "g", 0, 1), wire("g", "c"), wire("c", "w")]
    res = run(diagram(blocks, conns, dt=0.05, duration=2.0, solver="dae"))
    t = np.asarray(res["time"])
    assert len(t) == 41
    assert np.abs(z_trace(res) - np.sin(2 * np.pi * t)).max() < 1e-12
    assert res["warnings"] == []


def test_linear_dae_is_exponential_decay():
    """x' = -z, 0 = z - 2x, x(0) = 1: x = exp(-2t), z = 2 exp(-2t)."""
    res = run(decay(relTol=1e-10, absTol=1e-12))
    t = np.asarray(res["time"])
    x, z = z_trace(res, "x"), z_trace(res)
    assert np.abs(x - np.exp(-2 * t)).max() < 1e-8
    assert np.abs(z - 2 * np.exp(-2 * t)).max() < 2e-8
    assert np.abs(z - 2 * x).max() < 1e-12       # on the manifold at every sample


def test_default_tolerances_track_the_closed_form():
    res = run(decay())
    t = np.asarray(res["time"])
    assert np.abs(z_trace(res, "x") - np.exp(-2 * t)).max() < 1e-5


def test_inconsistent_guess_is_made_consistent_at_t0():
    res = run(decay(ic=100.0, duration=0.5))
    assert z_trace(res)[0] == pytest.approx(2.0, abs=1e-12)


def test_cubic_constraint_matches_numpy_roots():
    """0 = z^3 + z - t: the one real root per grid point, from numpy.roots."""
    res = run(residual_loop("u^3 + u - t", duration=5.0, dt=0.25))
    t = np.asarray(res["time"])
    expected = []
    for tk in t:
        roots = np.roots([1.0, 0.0, 1.0, -tk])
        expected.append(float(roots[np.argmin(np.abs(roots.imag))].real))
    z = z_trace(res)
    assert np.abs(z - np.asarray(expected)).max() < 1e-11
    assert np.abs(z ** 3 + z - t).max() < 1e-10


def test_nonlinear_dae_stays_on_its_manifold():
    """x' = -z, 0 = z^3 + z - x, x(0) = 2: z^3 + z = x at every sample, and x' = -z holds:
    t(x) = int_x^2 dx / z(x) = int_{z(x)}^{1} (3 z^2 + 1) / z dz = 1.5 (1 - z^2) - ln z."""
    blocks = [blk("c", "constraint"), blk("neg", "gain", Gain=-1.0), blk("i", "integrator", InitialCondition=2.0),
              blk("cube", "expression", Expr="u^3 + u"), blk("g", "sum", Inputs="+-", inputs=2),
              record(), record("wx", "x")]
    conns = [wire("c", "neg"), wire("neg", "i"), wire("c", "cube"), wire("cube", "g", 0, 0), wire("i", "g", 0, 1),
             wire("g", "c"), wire("c", "w"), wire("i", "wx")]
    res = run(diagram(blocks, conns, duration=3.0, solver="dae", relTol=1e-10, absTol=1e-12))
    t, x, z = np.asarray(res["time"]), z_trace(res, "x"), z_trace(res)
    assert np.abs(z ** 3 + z - x).max() < 1e-11
    assert np.abs(1.5 * (1.0 - z ** 2) - np.log(z) - t).max() < 1e-7


def test_warm_start_keeps_the_branch_of_the_guess():
    """0 = z^2 - (1 + t) has two roots; the guess picks the branch and z stays on it."""
    t = np.arange(11) * 0.1
    up = z_trace(run(residual_loop("u^2 - (1 + t)", ic=1.0)))
    down = z_trace(run(residual_loop("u^2 - (1 + t)", ic=-1.0)))
    assert np.abs(up - np.sqrt(1 + t)).max() < 1e-12
    assert np.abs(down + np.sqrt(1 + t)).max() < 1e-12


def test_a_zero_slope_guess_still_finds_the_root():
    """0 = z^3 - 8 from the guess 0, where dg/dz = 0: the fallbacks reach z = 2."""
    z = z_trace(run(residual_loop("u^3 - 8", ic=0.0, duration=0.3)))
    assert np.abs(z - 2.0).max() < 1e-12


def test_root_at_the_edge_of_the_domain_of_g():
    """0 = sqrt(1 - z) - t: z = 1 - t^2; g is NaN for z > 1, where Newton steps overshoot."""
    t = np.arange(11) * 0.1
    z = z_trace(run(residual_loop("sqrt(1 - u) - t", ic=0.5)))
    assert np.abs(z - (1 - t ** 2)).max() < 4e-12     # the Newton test: 1e-12 (1 + |z|)


def test_root_next_to_an_overflow():
    """0 = exp(z) - 1e300: z = ln(1e300) = 690.775527898..., with exp overflowing just past it."""
    z = z_trace(run(residual_loop("exp(u) - 1e300", duration=0.2)))
    assert np.abs(z - 300 * math.log(10.0)).max() < 1e-10


def test_accuracy_does_not_depend_on_the_scale_of_g():
    """g = 1e-8 (z - sin t) and g = 1e8 (z - sin t) give the same z."""
    t = np.arange(11) * 0.1
    for k in ("1e-8", "1e8"):
        z = z_trace(run(residual_loop(f"{k} * (u - sin(t))")))
        assert np.abs(z - np.sin(t)).max() < 1e-12


# ----------------------------------------------------------------------------- several constraints

def test_two_coupled_linear_constraints():
    """0 = z1 + z2 - 3t, 0 = z1 - z2 - 1 (each residual drives the other block):
    z1 = (3t + 1)/2, z2 = (3t - 1)/2."""
    blocks = [blk("a", "constraint"), blk("b", "constraint"), blk("ck", "clock"), blk("k3", "gain", Gain=3.0),
              blk("one", "constant", Value=1.0), blk("s1", "sum", Inputs="++-", inputs=3),
              blk("s2", "sum", Inputs="+--", inputs=3), record(), record("w2", "z2")]
    conns = [wire("a", "s1", 0, 0), wire("b", "s1", 0, 1), wire("ck", "k3"), wire("k3", "s1", 0, 2),
             wire("a", "s2", 0, 0), wire("b", "s2", 0, 1), wire("one", "s2", 0, 2),
             wire("s1", "b"), wire("s2", "a"), wire("a", "w"), wire("b", "w2")]
    res = run(diagram(blocks, conns, duration=1.0, solver="dae"))
    t = np.asarray(res["time"])
    assert np.abs(z_trace(res) - (3 * t + 1) / 2).max() < 1e-12
    assert np.abs(z_trace(res, "z2") - (3 * t - 1) / 2).max() < 1e-12


def test_circle_constraint_pair():
    """0 = z1^2 + z2^2 - 1 and 0 = z2 - sin t with z1 guessed at 1: z1 = cos t."""
    blocks = [blk("a", "constraint", InitialCondition=1.0), blk("b", "constraint"),
              blk("sq1", "expression", Expr="u^2"), blk("sq2", "expression", Expr="u^2"),
              blk("one", "constant", Value=1.0), blk("g1", "sum", Inputs="++-", inputs=3),
              blk("g2", "expression", Expr="u - sin(t)"), record(), record("w2", "z2")]
    conns = [wire("a", "sq1"), wire("b", "sq2"), wire("sq1", "g1", 0, 0), wire("sq2", "g1", 0, 1),
             wire("one", "g1", 0, 2), wire("g1", "a"), wire("b", "g2"), wire("g2", "b"),
             wire("a", "w"), wire("b", "w2")]
    res = run(diagram(blocks, conns, duration=1.5, solver="dae"))
    t = np.asarray(res["time"])
    assert np.abs(z_trace(res) - np.cos(t)).max() < 1e-10
    assert np.abs(z_trace(res, "z2") - np.sin(t)).max() < 1e-12


def test_wide_residual_drives_element_zero_and_warns():
    """nflow's handler reads element 0 of its input: z is scalar."""
    blocks = [blk("c", "constraint"), blk("g", "expression", Expr="u - sin(t)"), blk("m", "mux", inputs=2),
              blk("k", "constant", Value=5.0), record()]
    conns = [wire("c", "g"), wire("g", "m", 0, 0), wire("k", "m", 0, 1), wire("m", "c"), wire("c", "w")]
    res = run(diagram(blocks, conns, duration=1.0, solver="dae"))
    t = np.asarray(res["time"])
    assert np.asarray(res["workspace"]["y"]).shape == (11, 1)
    assert np.abs(z_trace(res) - np.sin(t)).max() < 1e-12
    assert any("element 0" in w for w in res["warnings"])


# ----------------------------------------------------------------------------- engine integration

def test_discrete_state_alongside_a_constraint():
    """A unitDelay (UPDATE: the run restarts at every grid point) records z one step late."""
    blocks = [blk("c", "constraint"), blk("g", "expression", Expr="u - sin(t)"), blk("d", "unitDelay"),
              record(), record("wd", "d")]
    conns = [wire("c", "g"), wire("g", "c"), wire("c", "d"), wire("c", "w"), wire("d", "wd")]
    res = run(diagram(blocks, conns, duration=1.0, solver="dae"))
    t = np.asarray(res["time"])
    z, d = z_trace(res), z_trace(res, "d")
    assert np.abs(z - np.sin(t)).max() < 1e-12
    assert d[0] == 0.0 and np.abs(d[1:] - np.sin(t[:-1])).max() < 1e-12


def test_state_and_constraint_with_a_delay_restart():
    """The decay with a unitDelay on x (restart path): still exp(-2t)."""
    d = decay(relTol=1e-10, absTol=1e-12)
    d["blocks"].append(blk("ud", "unitDelay"))
    d["connections"].append(wire("i", "ud"))
    res = run(d)
    t = np.asarray(res["time"])
    assert np.abs(z_trace(res, "x") - np.exp(-2 * t)).max() < 1e-8


def test_a_step_input_is_a_located_time_event():
    """0 = z - step(t - 0.45), x' = z: x = max(0, t - 0.45) (the jump of z at 0.45 is
    handled as a time event, not smeared over a grid interval)."""
    blocks = [blk("c", "constraint"), blk("st", "step", Time=0.45), blk("g", "sum", Inputs="+-", inputs=2),
              blk("i", "integrator"), record(), record("wx", "x")]
    conns = [wire("c", "g", 0, 0), wire("st", "g", 0, 1), wire("g", "c"), wire("c", "i"), wire("c", "w"),
             wire("i", "wx")]
    res = run(diagram(blocks, conns, duration=1.0, solver="dae"))
    t = np.asarray(res["time"])
    assert z_trace(res).tolist() == [0.0] * 5 + [1.0] * 6
    assert np.abs(z_trace(res, "x") - np.maximum(0.0, t - 0.45)).max() < 1e-12


def test_every_evaluation_is_on_the_manifold(monkeypatch):
    """Each evaluation the solver makes (right-hand sides, event functions, samples) leaves
    the signal store at a z with g(x, z) = 0."""
    d = decay(a=3.0, b=0.5, duration=1.0)
    plan = nc.compile_plan(d)
    index = {b.id: b.index for b in plan.diagram.blocks}
    g_slot = plan.slot_of[(index["g"], 0)]
    seen = []
    original = engine.AlgebraicSolve.evaluate

    def checked(self, t, x, committed=False):
        out = original(self, t, x, committed)
        seen.append(abs(plan.S[g_slot]))
        return out

    monkeypatch.setattr(engine.AlgebraicSolve, "evaluate", checked)
    res = plan.run()
    assert len(seen) > len(res["time"])        # the solver's own evaluations are checked too
    assert max(seen) < 1e-12


def test_few_residual_evaluations_per_solver_evaluation(monkeypatch):
    """The warm-started Newton needs a handful of diagram evaluations per solve."""
    created = []
    original = engine.AlgebraicSolve.__init__

    def keep(self, *args):
        original(self, *args)
        created.append(self)

    monkeypatch.setattr(engine.AlgebraicSolve, "__init__", keep)
    calls = {"n": 0}
    evaluate = engine.AlgebraicSolve.evaluate

    def counted(self, t, x, committed=False):
        calls["n"] += 1
        return evaluate(self, t, x, committed)

    monkeypatch.setattr(engine.AlgebraicSolve, "evaluate", counted)
    blocks = [blk("c", "constraint"), blk("neg", "gain", Gain=-1.0), blk("i", "integrator", InitialCondition=2.0),
              blk("cube", "expression", Expr="u^3 + u"), blk("g", "sum", Inputs="+-", inputs=2), record()]
    conns = [wire("c", "neg"), wire("neg", "i"), wire("c", "cube"), wire("cube", "g", 0, 0), wire("i", "g", 0, 1),
             wire("g", "c"), wire("c", "w")]
    run(diagram(blocks, conns, duration=3.0, solver="dae"))
    assert calls["n"] > 0 and created[0].evaluations <= 8 * calls["n"]
    created.clear()
    calls["n"] = 0
    run(decay())                               # g linear in z: exact after one Newton step
    assert created[0].evaluations <= 2 * calls["n"] + 2


def test_plan_runs_twice_identically():
    plan = nc.compile_plan(residual_loop("u^2 - (1 + t)", ic=-1.0))
    first, second = plan.run(), plan.run()
    assert np.array_equal(np.asarray(first["workspace"]["y"]), np.asarray(second["workspace"]["y"]))
    assert np.abs(np.asarray(first["workspace"]["y"])[:, 0] + np.sqrt(1 + np.arange(11) * 0.1)).max() < 1e-12


def test_diagrams_without_constraint_keep_the_plain_evaluate():
    """No constraint block: the evaluate of the plan's system is the class method (no
    algebraic solve, no extra check per call)."""
    blocks = [blk("i", "integrator", InitialCondition=1.0), blk("k", "gain", Gain=-1.0), record()]
    plan = nc.compile_plan(diagram(blocks, [wire("i", "k"), wire("k", "i"), wire("i", "w")], solver="dae"))
    system = engine.PlanSystem(plan)
    assert system.algebraic_solve is None
    assert "evaluate" not in vars(system)
    constrained = engine.PlanSystem(nc.compile_plan(decay()))
    assert constrained.algebraic_solve is not None and "evaluate" in vars(constrained)


def test_unconnected_residual_holds_the_guess():
    res = run(diagram([blk("c", "constraint", InitialCondition=3.0), record()], [wire("c", "w")],
                      duration=0.3, solver="dae"))
    assert z_trace(res).tolist() == [3.0, 3.0, 3.0, 3.0]
    assert any("unconnected" in w for w in res["warnings"])


# ----------------------------------------------------------------------------- errors

def _raises(d, cls, code):
    with pytest.raises(cls) as info:
        run(d)
    assert info.value.code == code
    return info.value


def test_no_real_root_is_a_typed_error_not_a_hang():
    started = time.perf_counter()
    err = _raises(residual_loop("u^2 + 1"), SimulationError, "constraint_unsolvable")
    assert time.perf_counter() - started < 5.0
    assert err.block == "c" and err.path == "/blocks/0"
    assert "'c'" in err.message and "t = 0" in err.message


def test_residual_independent_of_z_is_unsolvable():
    """g = sin(2 pi t) + 2 never vanishes, whatever z."""
    blocks = [blk("c", "constraint"), blk("s", "sine", Offset=2.0), blk("b", "bias", Bias=2.0), record()]
    d = diagram(blocks, [wire("s", "b"), wire("b", "c"), wire("c", "w")], solver="dae")
    _raises(d, SimulationError, "constraint_unsolvable")


def test_a_jump_across_zero_is_not_a_root():
    """g = sign(z) + 0.5 changes sign at z = 0 but never vanishes."""
    _raises(residual_loop("sign(u) + 0.5"), SimulationError, "constraint_unsolvable")
    _raises(residual_loop("floor(u) - 0.5", ic=3.0), SimulationError, "constraint_unsolvable")


def test_a_pole_is_not_a_root():
    """g = 1/z - t at t = 0 has no root (1/z -> 0 only as z -> inf), even from a guess
    next to the pole; for t > 0 it is z = 1/t."""
    err = _raises(residual_loop("1/u - t", ic=1e-300), SimulationError, "constraint_unsolvable")
    assert "t = 0 " in err.message
    z = z_trace(run(residual_loop("1/u - (t + 1)", ic=1.0)))
    assert np.abs(z - 1.0 / (np.arange(11) * 0.1 + 1.0)).max() < 1e-12


def test_fold_fails_at_the_first_sample_past_it():
    """0 = z^2 + t - 0.5 has roots only for t <= 0.5."""
    err = _raises(residual_loop("u^2 + t - 0.5", ic=1.0), SimulationError, "constraint_unsolvable")
    assert "t = 0.6" in err.message


def test_fold_with_state_is_reported_near_its_time():
    """x' = 1, 0 = z^2 + x - 0.5: solvable until x = t reaches 0.5."""
    blocks = [blk("c", "constraint", InitialCondition=1.0), blk("one", "constant", Value=1.0),
              blk("i", "integrator"), blk("g", "expression", Expr="u^2 - 0.5"),
              blk("s", "sum", Inputs="++", inputs=2), record()]
    conns = [wire("one", "i"), wire("c", "g"), wire("g", "s", 0, 0), wire("i", "s", 0, 1), wire("s", "c"),
             wire("c", "w")]
    with pytest.raises(SimulationError) as info:
        run(diagram(blocks, conns, solver="dae"))
    assert info.value.code == "constraint_unsolvable"
    t_fail = float(info.value.message.split("t = ")[1].split(" ")[0])
    assert 0.5 < t_fail < 0.6


@pytest.mark.parametrize("solver", ["discrete", "ode1", "ode4", "ode45"])
def test_other_solvers_reject_the_block(solver):
    err = _raises(residual_loop("u - 1", solver=solver), DiagramError, "constraint_needs_dae")
    assert err.block == "c" and "dae" in err.message


def test_non_finite_guess_is_rejected():
    err = _raises(residual_loop("u - 1", ic="nan"), DiagramError, "param_value")
    assert err.param == "InitialCondition"


# ----------------------------------------------------------------------------- property

@settings(max_examples=25, deadline=None)
@given(a=st.floats(0.2, 5.0), b=st.floats(-3.0, 3.0), x0=st.floats(-2.0, 2.0))
def test_affine_constraint_matches_closed_form(a, b, x0):
    """x' = -z, 0 = z - (a x + b): x' = -a x - b, so
    x(t) = (x0 + b/a) exp(-a t) - b/a and z = a x + b."""
    res = run(decay(a=a, b=b, x0=x0, duration=1.0, relTol=1e-9, absTol=1e-11))
    t = np.asarray(res["time"])
    x_ref = (x0 + b / a) * np.exp(-a * t) - b / a
    x, z = z_trace(res, "x"), z_trace(res)
    assert np.abs(x - x_ref).max() <= 1e-6 * (1.0 + abs(x0) + abs(b / a))
    assert np.abs(z - (a * x + b)).max() <= 1e-11 * (1.0 + np.abs(z).max())
    assert math.isfinite(float(z[-1]))
