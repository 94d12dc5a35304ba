"""Continuous blocks under each solver against closed forms, with the tolerance each
solver can promise: ode1 (= nflow's fixed-step forward Euler) O(dt), ode4 O(dt^4),
ode45/dae the diagram's relTol/absTol. Events (limits, switches, steps) are located."""
import math

import numpy as np
import pytest

import nflow_compat as nc
from nflow_compat.manifests import block_types
from tests.util import blk, diagram, record, trace, wire

DT, T_END = 0.05, 2.0
TOL = {"ode1": 5e-2, "ode4": 1e-6, "ode45": 1e-7, "dae": 1e-5}
t = np.arange(int(T_END / DT + 1e-9) + 1) * DT


def run(blocks, conns, solver, **extra):
    return trace(diagram(blocks + [record()], conns, dt=DT, duration=T_END, solver=solver,
                         relTol=1e-9, absTol=1e-11, **extra))[:, 0]


@pytest.mark.parametrize("solver", list(TOL))
def test_integrator_feedback_is_an_exponential(solver):
    # x' = -2x, x(0) = 1
    y = run([blk("i", "integrator", InitialCondition=1), blk("g", "gain", Gain=-2)],
            [wire("i", "g"), wire("g", "i"), wire("i", "w")], solver)
    assert np.max(np.abs(y - np.exp(-2 * t))) < TOL[solver]


@pytest.mark.parametrize("solver", list(TOL))
def test_first_order_transfer_function_step_response(solver):
    # 2/(0.5 s + 1): y = 2 (1 - exp(-2 t))
    y = run([blk("c", "constant", Value=1), blk("h", "tf", Numerator=[2], Denominator=[0.5, 1])],
            [wire("c", "h"), wire("h", "w")], solver)
    reference = 2 * (1 - np.exp(-2 * t))
    if solver == "ode1":     # nflow's fixed-step tf takes one RK4 step per dt
        assert np.max(np.abs(y - reference)) < 1e-5
    else:
        assert np.max(np.abs(y - reference)) < TOL[solver]


@pytest.mark.parametrize("solver", ["ode4", "ode45", "dae"])
def test_second_order_transfer_function_step_response(solver):
    # wn^2/(s^2 + 2 z wn s + wn^2), wn = 3, z = 0.2, unit step
    wn, z = 3.0, 0.2
    wd = wn * math.sqrt(1 - z * z)
    y = run([blk("c", "constant", Value=1), blk("h", "tf", Numerator=[wn * wn], Denominator=[1, 2 * z * wn, wn * wn])],
            [wire("c", "h"), wire("h", "w")], solver)
    reference = 1 - np.exp(-z * wn * t) * (np.cos(wd * t) + z / math.sqrt(1 - z * z) * np.sin(wd * t))
    assert np.max(np.abs(y - reference)) < 10 * TOL[solver]


@pytest.mark.parametrize("solver", ["ode4", "ode45", "dae"])
def test_state_space_and_filters(solver):
    # stateSpace x' = -x + u, y = x ; lpf with wc = 1 ; both give 1 - exp(-t) for a unit step
    for block in (blk("h", "stateSpace", A=-1, B=1, C=1, D=0), blk("h", "lpf", Cutoff=1 / (2 * math.pi))):
        y = run([blk("c", "constant", Value=1), block], [wire("c", "h"), wire("h", "w")], solver)
        assert np.max(np.abs(y - (1 - np.exp(-t)))) < TOL[solver]


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_integrator_limit_is_reached_at_the_right_time(solver):
    # integrate 2 from 0 with an upper limit 0.53: reaches it at t = 0.265, then holds
    d = diagram([blk("c", "constant", Value=2), blk("i", "integrator", UpperSaturationLimit=0.53), record()],
                [wire("c", "i"), wire("i", "w")], dt=0.01, duration=0.5, solver=solver)
    y = trace(d)[:, 0]
    tt = np.arange(51) * 0.01
    assert np.allclose(y, np.minimum(2 * tt, 0.53), atol=1e-9)


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_saturated_sine_integrated_with_located_kinks(solver):
    # x' = sat(sin t, -0.5, 0.5): the kinks at t = pi/6 and 5 pi/6 are located, so the
    # closed form is matched to the solver tolerance, not to the step size
    d = diagram([blk("s", "sine", Amplitude=1, Frequency=1 / (2 * math.pi)),
                 blk("sat", "saturation", LowerLimit=-0.5, UpperLimit=0.5), blk("i", "integrator"), record()],
                [wire("s", "sat"), wire("sat", "i"), wire("i", "w")], dt=0.1, duration=3.0, solver=solver,
                relTol=1e-10, absTol=1e-12)
    y = trace(d)[:, 0]
    tt = np.arange(31) * 0.1
    a, b = math.pi / 6, 5 * math.pi / 6
    ref = np.where(tt < a, 1 - np.cos(tt),
                   np.where(tt < b, 1 - math.cos(a) + 0.5 * (tt - a), 1 - math.cos(a) + 0.5 * (b - a)
                            + np.cos(b) - np.cos(tt)))
    assert np.max(np.abs(y - ref)) < (1e-8 if solver == "ode45" else 1e-6)


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_step_input_is_a_time_event(solver):
    # x' = step(t - 0.33): x = max(0, t - 0.33) exactly, the jump between grid points
    d = diagram([blk("s", "step", Time=0.33), blk("i", "integrator"), record()],
                [wire("s", "i"), wire("i", "w")], dt=0.1, duration=1.0, solver=solver)
    y = trace(d)[:, 0]
    assert np.allclose(y, np.maximum(0, np.arange(11) * 0.1 - 0.33), atol=1e-10)


def test_switch_surfaces_restart_the_solver():
    # x' = (t >= 0.37) ? 1 : -1 via a switch on a clock: x = -t then t - 0.74
    d = diagram([blk("clk", "clock"), blk("p", "constant", Value=1), blk("m", "constant", Value=-1),
                 blk("sw", "switch", Threshold=0.37), blk("i", "integrator"), record()],
                [wire("p", "sw", 0, 0), wire("clk", "sw", 0, 1), wire("m", "sw", 0, 2), wire("sw", "i"),
                 wire("i", "w")], dt=0.1, duration=1.0, solver="ode45", relTol=1e-10, absTol=1e-12)
    tt = np.arange(11) * 0.1
    assert np.allclose(trace(d)[:, 0], np.where(tt < 0.37, -tt, tt - 0.74), atol=1e-9)


def test_resettable_integrator_under_a_solver():
    # rising reset at t = 0.5 (seen at that grid point) re-seeds to IC = 0
    d = diagram([blk("c", "constant", Value=1), blk("r", "step", Time=0.5),
                 blk("i", "integrator", inputs=2, ExternalReset="rising"), record()],
                [wire("c", "i"), wire("r", "i", 0, 1), wire("i", "w")], dt=0.1, duration=1.0, solver="ode45")
    y = trace(d)[:, 0]
    tt = np.arange(11) * 0.1
    assert np.allclose(y, np.where(tt < 0.5 - 1e-9, tt, tt - 0.5), atol=1e-9)


@pytest.mark.parametrize("solver", ["ode4", "ode45", "dae"])
def test_block_reference_does_not_call_running_blocks_unsupported(solver):
    # every continuous-library block that runs under the solver: its help (docs/blocks, the
    # schemas) must not say it is not supported there
    for name, bt in block_types().items():
        if bt.library != "continuous" or name == "constraint" or bt.outputs == 0:
            continue
        d = diagram([blk("c", "constant", Value=1.0), blk("b", name), record()],
                    [wire("c", "b"), wire("b", "w")], duration=0.5, solver=solver)
        try:
            nc.simulate(d)
        except nc.SimulationError as err:
            assert err.code == "unsupported_solver", (name, err)
            continue
        assert "not supported" not in bt.help, name
