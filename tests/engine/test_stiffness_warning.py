"""A fixed step far above an element's time constant is reported in ``warnings`` (issue
10, item 7). The arithmetic stays nflow's (RK4 / forward Euler at sampleTime); the engine's
``StiffnessWatch`` only tells the user when the method is unstable on a mode the model damps.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from nflow_compat.engine.hybrid import STABILITY_FUNCTION, integrate_hybrid

from tests.util import blk, diagram, wire

WARNING = "far above the time constant"


def _pin(a, a_pin, b, b_pin):
    return {"from": a, "fromPin": a_pin, "to": b, "toPin": b_pin}


def _clutch(solver):
    """The report's case: the regularized Clutch (no fn input, tau_max 5, w_eps 1e-3)
    between J 1 at 10 rad/s and J 3 at rest, dt 0.01, 3 s."""
    blocks = [blk("J1", "Inertia", J=1, w0=10), blk("cl", "Clutch", tau_max=5.0, w_eps=1e-3),
              blk("J3", "Inertia", J=3, w0=0), blk("wa", "RotSpeedSensor"), blk("wb", "RotSpeedSensor"),
              blk("rec_wa", "toWorkspace", VariableName="wa", SaveFormat="Array"),
              blk("rec_wb", "toWorkspace", VariableName="wb", SaveFormat="Array")]
    wires = [_pin("J1", "flange", "cl", "a"), _pin("cl", "b", "J3", "flange"),
             _pin("wa", "flange", "J1", "flange"), wire("wa", "rec_wa"),
             _pin("wb", "flange", "J3", "flange"), wire("wb", "rec_wb")]
    return diagram(blocks, wires, dt=0.01, duration=3.0, solver=solver)


def _stiff(res) -> list:
    return [w for w in res["warnings"] if WARNING in w]


@pytest.mark.parametrize("solver", ["discrete", "ode4", "ode1"])
def test_the_regularized_clutch_on_a_large_fixed_step_warns(solver):
    res = nc.simulate(_clutch(solver))
    (warning,) = _stiff(res)
    assert all(f"'{name}'" in warning for name in ("J1", "cl", "J3"))
    # analytic: near lock-up the law's slope is tau_max/w_eps = 5000 N m s/rad on the
    # relative speed, lambda = -5000 (1/J1 + 1/J3) = -6666.7/s, h lambda = -66.7
    z = float(re.search(r"h\*lambda ~ (-?[0-9.e+-]+)", warning).group(1))
    assert z == pytest.approx(-66.7, rel=0.02)
    if solver != "ode1":
        # nflow's arithmetic is kept: RK4's spurious fixed point of the report (regression,
        # issue 10) with momentum J1 w1 + J3 w3 = 10 conserved
        wa, wb = res["workspace"]["wa"][-1][0], res["workspace"]["wb"][-1][0]
        assert (wa, wb) == (pytest.approx(2.508333, abs=1e-6), pytest.approx(2.497222, abs=1e-6))
        assert wa + 3 * wb == pytest.approx(10.0, abs=1e-9)


def test_a_variable_step_solver_does_not_warn():
    res = nc.simulate(_clutch("ode45"))
    assert _stiff(res) == []
    assert res["workspace"]["wa"][-1][0] == pytest.approx(2.5, abs=1e-4)   # locked: 10 / (1 + 3)


def _damped_inertia(solver, d):
    """An inertia J 1 spinning at 1 rad/s against a RotDamper d to the ground: w' = -d w,
    lambda = -d; dt 0.01."""
    blocks = [blk("J", "Inertia", J=1, w0=1), blk("damp", "RotDamper", d=d), blk("ground", "RotFixed"),
              blk("w", "RotSpeedSensor"), blk("rec", "toWorkspace", VariableName="w", SaveFormat="Array")]
    wires = [_pin("J", "flange", "damp", "a"), _pin("damp", "b", "ground", "flange"),
             _pin("w", "flange", "J", "flange"), wire("w", "rec")]
    return diagram(blocks, wires, dt=0.01, duration=0.5, solver=solver)


def test_a_well_resolved_diagram_does_not_warn():
    for solver in ("discrete", "ode1", "ode4"):
        res = nc.simulate(_damped_inertia(solver, 10.0))          # h lambda = -0.1
        assert _stiff(res) == []


def test_a_step_above_the_time_constant_warns_only_where_the_method_is_unstable():
    # h lambda = -2.5: RK4 damps it (|R(-2.5)| = 0.648, inside its stability interval
    # [-2.785, 0]), forward Euler amplifies it (|1 - 2.5| = 1.5)
    rk4 = nc.simulate(_damped_inertia("ode4", 250.0))
    assert _stiff(rk4) == []
    w = np.asarray(rk4["workspace"]["w"], dtype=float)[:, 0]
    assert abs(w[-1]) < 1e-9                                     # 0.648^50
    euler = nc.simulate(_damped_inertia("ode1", 250.0))
    (warning,) = _stiff(euler)
    assert "'damp'" in warning and "forward Euler" in warning and "amplified 1.5 times" in warning


class _Decay:
    """x' = -a x (one state)."""

    def __init__(self, a):
        self.a = a

    def derivative(self, t, x):
        return -self.a * x

    def event_functions(self, t, x):
        return np.zeros(0)

    def handle_events(self, t, x, fired):
        return x


@settings(max_examples=40, deadline=None)
@given(z=st.floats(0.05, 6.0), method=st.sampled_from(["ode1", "ode4"]))
def test_the_watch_reports_exactly_the_unstable_decays(z, method):
    # law: a mode lambda = -a is reported iff h a > 1 and |R(-h a)| > 1 (R the method's
    # stability function): beyond -2 for forward Euler, beyond -2.785 for RK4
    growth = abs(np.polynomial.polynomial.polyval(-z, STABILITY_FUNCTION[method]))
    if abs(growth - 1.0) < 0.02 or abs(z - 1.0) < 0.02:
        return                                                   # too close to a boundary to call
    res = integrate_hybrid(_Decay(z), [1.0], np.arange(21) * 1.0, method=method)
    found = res.stats["stiffness"]
    assert (found is not None) == (z > 1.0 and growth > 1.0)
    if found is not None:
        assert found.step == 1.0 and found.state == 0
        assert found.mode == pytest.approx(-z, rel=1e-6) and found.growth == pytest.approx(growth, rel=1e-6)


class _TanhPair:
    """Two unit inertias coupled by tau = tau_max tanh((w2 - w1)/w_eps): the clutch law of
    the report, as a bare hybrid system."""

    def derivative(self, t, x):
        tau = 1.0 * math.tanh((x[1] - x[0]) / 1e-3)
        return np.array([tau, -tau])

    def event_functions(self, t, x):
        return np.zeros(0)

    def handle_events(self, t, x, fired):
        return x


def test_a_law_steep_only_between_the_stages_is_found():
    # at RK4's spurious fixed point the grid states sit where tanh is flat (its slope there
    # is ~1e-6 of the one at 0); the watch finds lambda = -2 tau_max/w_eps = -2000 between
    # the stages (h lambda = -200, analytic)
    res = integrate_hybrid(_TanhPair(), [2.1, 0.0], np.arange(21) * 0.1, method="ode4")
    # analytic RK4 arithmetic on the gap g = x1 - x2, g' = -2 tanh(g/w_eps) = -2 sign(g)
    # away from 0: g falls by 0.2 a step to 0.1 at t = 1; that step's stages see g = 0.1,
    # 0 (tanh 0 = 0), 0.1, -0.1: g = 0.1 + 0.1/6 (-2 + 0 - 4 + 2) = 1/30; from any
    # 0 < g < 0.1 the stages give -2, +2, -2, +2 and g stays: a spurious fixed point
    assert res.x[-1][0] - res.x[-1][1] == pytest.approx(1.0 / 30.0, abs=1e-9)
    assert res.stats["stiffness"].step * res.stats["stiffness"].mode == pytest.approx(-200.0, rel=1e-3)
