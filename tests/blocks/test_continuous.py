"""Continuous library: the integrator on nflow's fixed-step path (forward Euler in
UPDATE, pre-step output), limits, external reset and external initial condition."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from nflow_compat import DiagramError
from tests.blocks.test_discrete import play
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
