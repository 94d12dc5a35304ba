"""The electrical elements' Newton step limits (nflow_compat.physical.electrical): SPICE's
pnjlim for a pn junction, fetlim and limvds for a MOSFET, as the fraction of a Newton step
an element accepts; and what they buy: a junction started far from its solution."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nflow_compat import roots
from nflow_compat.physical.electrical import (GMIN, channel_limited, gate_limited, pn_critical, pn_limited,
                                              step_fraction)

Is, Vt = 1e-9, 0.025
CRITICAL = pn_critical(Is, Vt)


def test_the_critical_voltage_is_spices():
    # vcrit = Vt ln(Vt / (sqrt(2) Is)): 0.419 V for Is 1 nA, Vt 25 mV
    assert CRITICAL == pytest.approx(0.025 * math.log(0.025 / (math.sqrt(2) * 1e-9)))
    assert 0.41 < CRITICAL < 0.43


def test_a_rise_above_the_critical_voltage_grows_logarithmically():
    # from 0.6 V forward a step to 0.96 V (1e7 A) is cut to 0.6 + Vt ln(1 + 0.36/Vt)
    assert pn_limited(0.96, 0.6, Vt, CRITICAL) == pytest.approx(0.6 + Vt * math.log(1 + 0.36 / Vt))
    # from reverse bias, to the voltage whose current the zero-bias linearization reaches
    assert pn_limited(0.96, -5.0, Vt, CRITICAL) == pytest.approx(Vt * math.log(0.96 / Vt))
    # small steps, falls, and anything below the critical voltage are let be
    assert pn_limited(0.62, 0.6, Vt, CRITICAL) == 0.62
    assert pn_limited(0.3, 0.9, Vt, CRITICAL) == 0.3
    assert pn_limited(0.4, -3.0, Vt, CRITICAL) == 0.4


@settings(max_examples=200, deadline=None)
@given(st.floats(-20.0, 20.0), st.floats(-20.0, 20.0), st.floats(1e-18, 1.0), st.floats(1e-3, 0.2))
def test_a_limited_junction_voltage_never_passes_the_step(new, old, Is_, Vt_):
    """Law: a limited voltage lies between the old one and the proposed one (a rise is never
    made larger, nor turned into a fall); the step fraction is in (0, 1]."""
    limited = pn_limited(new, old, Vt_, pn_critical(Is_, Vt_))
    if new >= old:
        assert old - 1e-12 <= limited <= new + 1e-12
    fraction = step_fraction(old, new - old, limited)
    assert 0.0 < fraction <= 1.0


def test_a_gate_coming_on_stops_half_a_volt_above_the_threshold():
    vto = 1.0
    assert gate_limited(5.0, 0.0, vto) == pytest.approx(vto + 0.5)
    assert gate_limited(1.3, 0.0, vto) == 1.3                      # within the first step
    assert gate_limited(20.0, 5.0, vto) == pytest.approx(5.0 + abs(2 * (5.0 - vto)) + 2.0)   # strong: bounded rise
    assert gate_limited(0.0, 2.0, vto) == pytest.approx(vto - 0.5)  # middle region going off
    assert gate_limited(-20.0, 0.0, vto) == pytest.approx(0.0 - (abs(2 * (0.0 - vto)) + 2.0))


def test_a_channel_voltage_grows_by_a_bounded_factor():
    assert channel_limited(50.0, 5.0) == pytest.approx(17.0)      # 3 vds + 2
    assert channel_limited(10.0, 1.0) == 4.0
    assert channel_limited(-3.0, 1.0) == -0.5
    assert channel_limited(2.5, 2.0) == 2.5


@pytest.mark.parametrize("start", [-5.0, 1.2])
def test_a_junction_far_from_its_solution_is_solved_with_the_limit(start):
    # a diode (with GMIN) in series with 1 kOhm from 5 V, Newton started reverse biased or
    # 1.2 V forward (1e12 A): with the element's step fraction it reaches the 4.4 mA
    # solution; with full steps from -5 V the first lands at 5 V (e^200) and the next ones
    # come down by ~Vt each, too slowly
    R, V = 1e3, 5.0

    def current(v):
        return Is * math.expm1(v / Vt) + GMIN * v

    def residual(z):
        return np.array([current(z[0]) - (V - z[0]) / R])

    def jacobian(z):
        return np.array([[Is * math.exp(z[0] / Vt) / Vt + GMIN + 1.0 / R]])

    def limit(z, dz):
        v, step = float(z[0]), -float(dz[0])
        return step_fraction(v, step, pn_limited(v + step, v, Vt, CRITICAL))

    def solve(limit):
        return roots.newton(residual, np.array([start]), weights=roots.error_weights(1e-6, 1e-8), tol=0.1,
                            jacobian=jacobian, limit=limit, max_iterations=60)

    res = solve(limit)
    assert res.converged
    assert current(res.z[0]) == pytest.approx((V - res.z[0]) / R, rel=1e-9)
    if start < 0.0:
        assert not solve(lambda z, dz: 1.0).converged
