"""Newton's method of the package (nflow_compat.roots): convergence judged in each unknown's
own error weight, the last correction applied, a caller's step limit, a stalled iteration
settled at rounding, singular and badly scaled Jacobians."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nflow_compat import roots


def _solve(residual, z0, rtol=1e-6, atol=1e-8, **kw):
    return roots.newton(residual, np.asarray(z0, dtype=float), weights=roots.error_weights(rtol, atol),
                        **dict({"tol": 0.1}, **kw))


def test_the_last_correction_is_applied():
    # z^2 = 2 from 1.5: the corrections fall 8e-2, 2.5e-3, 2.1e-6, 1.6e-12; at rtol 1e-3 the
    # third is the first within 0.1 weight (1.4e-4) and applying it leaves ~1e-12
    res = _solve(lambda z: z * z - 2.0, [1.5], rtol=1e-3)
    assert res.converged
    assert abs(res.z[0] - math.sqrt(2.0)) < 1e-11
    assert abs(res.best[0] - math.sqrt(2.0)) > 1e-7     # the iterate before it: 2.1e-6 away


def test_each_unknown_is_judged_in_its_own_weight():
    # a node at 1 kV and a branch current of 1 uA: one norm over both would let the current
    # stop at ~1e-9 A, a thousandth of itself; in its own weight it is solved to ~1e-15
    v_true, i_true = 1000.0, 1e-6

    def residual(z):
        v, i = z
        return np.array([v - v_true + 1e-3 * (i - i_true) ** 2, 1e6 * i ** 3 / i_true ** 2 - 1e6 * i_true])

    res = _solve(residual, [900.0, 3e-6], tol=1e-3)
    assert res.converged
    assert abs(res.z[1] - i_true) <= 1e-3 * (1e-6 * i_true + 1e-8)
    assert abs(res.z[0] - v_true) <= 1e-3 * (1e-6 * v_true + 1e-8)


def test_an_exponential_needs_the_step_limit_of_its_caller():
    # a diode (Is 1e-14, Vt 25 mV) in series with 1 kOhm from 5 V, started at 1.2 V forward
    # (1e7 A): the full Newton step overshoots into reverse bias and wanders; with the step
    # cut so that the junction voltage falls by at most 0.1 V per iteration it walks down
    Is, Vt, R, V = 1e-14, 0.025, 1e3, 5.0

    def residual(z):
        return np.array([Is * math.expm1(z[0] / Vt) - (V - z[0]) / R])

    def jacobian(z):
        return np.array([[Is * math.exp(z[0] / Vt) / Vt + 1.0 / R]])

    def limit(z, dz):
        return min(1.0, 0.1 / abs(float(dz[0]))) if dz[0] else 1.0

    res = _solve(residual, [1.2], jacobian=jacobian, limit=limit, max_iterations=60)
    assert res.converged
    i = (V - res.z[0]) / R
    assert i == pytest.approx(Is * math.expm1(res.z[0] / Vt), rel=1e-9)
    assert 0.6 < res.z[0] < 0.7


def test_a_limited_step_is_taken_whatever_the_residual_does():
    # with a limit the residual test is off: the first step may make |f| grow (a junction
    # stepping up the exponential), as SPICE's iterations do
    seen = []

    def residual(z):
        seen.append(float(z[0]))
        return np.array([math.exp(z[0]) - math.exp(3.0)])

    res = _solve(residual, [0.0], jacobian=lambda z: np.array([[math.exp(z[0])]]), limit=lambda z, dz: 1.0,
                 max_iterations=60)
    assert res.converged and res.z[0] == pytest.approx(3.0, abs=1e-9)
    assert seen[1] > 10.0              # the full first step: z = 0 - (1 - e^3)/1 = e^3 - 1


def test_an_iterate_whose_residual_is_rounding_has_converged():
    # x + y = 1 and (1 + 1e-14 x) - (1 + 1e-14 y) = 2e-15: x - y = 0.2 is held by terms of
    # magnitude 1, so rounding leaves it known to ~1e-2, far above its weight; settle() gives
    # the rows' term magnitudes, within rounding of which the residual soon is
    def residual(z):
        x, y = z
        return np.array([x + y - 1.0, (1.0 + 1e-14 * x) - (1.0 + 1e-14 * y) - 2e-15])

    def jacobian(z):
        return np.array([[1.0, 1.0], [1e-14, -1e-14]])

    def magnitudes(z):
        return np.array([abs(z[0]) + abs(z[1]) + 1.0, 2.0 + 1e-14 * (abs(z[0]) + abs(z[1])) + 2e-15])

    res = _solve(residual, [0.3, 0.5], jacobian=jacobian, settle=magnitudes, tol=1e-3)
    assert res.converged and res.z[0] + res.z[1] == pytest.approx(1.0, abs=1e-15)
    assert res.z[0] - res.z[1] == pytest.approx(0.2, abs=0.05)
    assert not _solve(residual, [0.3, 0.5], jacobian=jacobian, tol=1e-3).converged


def test_no_root_is_no_convergence():
    res = _solve(lambda z: z * z + 1.0, [0.5], max_iterations=40)
    assert not res.converged


def test_a_singular_jacobian_is_reported():
    res = _solve(lambda z: np.array([z[0] + z[1] - 1.0, 2 * z[0] + 2 * z[1] - 3.0]), [0.0, 0.0],
                 jacobian=lambda z: np.array([[1.0, 1.0], [2.0, 2.0]]))
    assert not res.converged and res.singular


def test_a_badly_scaled_regular_jacobian_is_solved():
    # a forward junction's 5e56 S in a row beside a unit source row: regular (det -1e3),
    # though unscaled its condition number is 1e113
    J = np.array([[4.9e56, 0.0, 1.0], [0.0, -1e3, 0.0], [1.0, 0.0, 0.0]])
    f = np.array([1.2e55, -1.15e4, 4.6])
    dz = roots.correction(J, f)
    assert dz is not None
    np.testing.assert_allclose(J @ dz, f, rtol=1e-12)
    assert roots.correction(np.array([[1.0, 2.0], [2.0, 4.0]]), np.ones(2)) is None
    assert roots.correction(np.array([[1.0, np.inf], [0.0, 1.0]]), np.ones(2)) is None


def test_error_weights_are_per_unknown():
    w = roots.error_weights(1e-3, np.array([1e-6, 1e-9]))(np.array([-2.0, 5e-6]))
    np.testing.assert_allclose(w, [2e-3 + 1e-6, 5e-9 + 1e-9])


@settings(max_examples=40, deadline=None)
@given(st.floats(-50.0, 50.0), st.floats(0.1, 10.0), st.floats(1e-9, 1e-3), st.floats(1e-12, 1e-4))
def test_a_cubic_is_solved_to_its_weight(root, scale, rtol, atol):
    """Law: a converged solve of a monotone cubic is within ``tol`` weights of its root."""
    res = _solve(lambda z: scale * ((z - root) ** 3 + (z - root)), [root + 3.0], rtol=rtol, atol=atol,
                 tol=0.1, max_iterations=60)
    assert res.converged
    assert abs(res.z[0] - root) <= 0.1 * (rtol * abs(root) + atol)
