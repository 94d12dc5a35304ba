"""pid under the solvers that own continuous state (ode4, ode45, dae; issue 10, item 4).

nflow's handler (continuous/pid.cpp) has a solver path for every form: the integral is a
solver state (DERIVATIVE: s' = u), the output answers the current input in ALGEBRAIC,
y = P u + I s + D d, with d = N (u - f) and f' = N (u - f) for a filtered derivative, else
the backward difference (u - u_prev)/max(dt, 1e-6) against the input UPDATE latched at the
last grid point. The limits bound the integral (held at a limit, as the integrator).
Expected values are closed forms (derivations in the comments).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests.util import blk, diagram, record, trace, wire

SOLVERS = ("ode4", "ode45", "dae")
DT = 0.01


def _driven(pid, source, solver, duration=1.0, dt=DT):
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
                dt=DT, duration=3.0, solver=solver)
    t = np.arange(301) * DT
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
                 wire("c", "wu")], dt=DT, duration=2.0, solver=solver)
    t = np.arange(201) * DT
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
                dt=DT, duration=2.0, solver=solver)
    t = np.arange(201) * DT
    expected = np.clip(np.where(t < 1.0, t, 0.35 - (t - 1.0)), -0.2, 0.35)
    y = trace(d)[:, 0]
    if solver == "ode4":
        # the RK4 step that ends on the limit has its last stage held (s + h k3 = 0.35):
        # 0.34 + h (1 + 2 + 2 + 0)/6, as nflow's integrator under ode4
        assert y[35] == pytest.approx(0.34 + DT * 5 / 6, abs=1e-12)
        y[35] = expected[35]
    assert np.allclose(y, expected, atol=1e-9 if solver == "ode4" else 2e-6)


@pytest.mark.parametrize("solver", SOLVERS)
def test_vector_pi_with_limits(solver):
    # element-wise: y_i = u_i + clamp(u_i t, -0.5, 0.3) for constant u = [1, -2]
    t, _ = _driven(blk("x", "pid"), blk("x", "constant"), solver)
    d = diagram([blk("c", "constant", Value=[1, -2]),
                 blk("b", "pid", P=1, I=1, UpperSaturationLimit=0.3, LowerSaturationLimit=-0.5), record()],
                [wire("c", "b"), wire("b", "w")], dt=DT, duration=1.0, solver=solver)
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
