"""nflow's fixed-step methods as scipy OdeSolvers (nflow_compat.engine.solvers), and the
event location of the hybrid driver (brentq with the right-end-of-bracket rule)."""
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import OdeSolver

from nflow_compat.engine import hybrid
from nflow_compat.engine.solvers import FIXED_STEP, METHODS, ClassicalRK4, ForwardEuler, solver_class

# R(z) of each method: one step of y' = lam y multiplies y by R(h lam)
AMPLIFICATION = {ForwardEuler: lambda z: 1 + z, ClassicalRK4: lambda z: 1 + z + z ** 2 / 2 + z ** 3 / 6 + z ** 4 / 24}


def decay(lam):
    return lambda t, y: lam * y


def test_every_method_is_an_ode_solver():
    assert set(FIXED_STEP) == {"ode1", "ode4"}
    assert all(issubclass(cls, OdeSolver) for cls in METHODS.values())
    assert solver_class("ode4") is ClassicalRK4
    with pytest.raises(Exception) as err:
        solver_class("euler42")
    assert err.value.code == "unknown_solver"


@pytest.mark.parametrize("cls", [ForwardEuler, ClassicalRK4])
def test_fixed_steps_land_on_the_grid_and_amplify_by_the_stability_function(cls):
    """Step 0.25 over a 0.1 grid: every step ends at the next grid time (0.1 apart), and
    each multiplies y' = -2 y by R(-2 * 0.1)."""
    grid = np.arange(11) * 0.1
    solver = cls(decay(-2.0), 0.0, [1.0], 1.0, step=0.25, grid=grid)
    times, values = [], []
    while solver.status == "running":
        solver.step()
        times.append(solver.t)
        values.append(solver.y[0])
    assert np.allclose(times, grid[1:], rtol=0, atol=1e-15)
    assert np.allclose(values, AMPLIFICATION[cls](-0.2) ** np.arange(1, 11), rtol=1e-13)


@pytest.mark.parametrize("cls", [ForwardEuler, ClassicalRK4])
def test_fixed_step_shorter_than_the_grid_and_its_dense_output(cls):
    """Step 0.04 over a 0.1 grid: steps 0.04, 0.04, 0.02 per grid interval; the dense
    output inside a step is the method's step over the shorter interval."""
    grid = np.arange(3) * 0.1
    solver = cls(decay(-1.0), 0.0, [1.0], 0.2, step=0.04, grid=grid)
    ends = []
    while solver.status == "running":
        solver.step()
        ends.append(solver.t)
    assert np.allclose(ends, [0.04, 0.08, 0.1, 0.14, 0.18, 0.2], atol=1e-15)
    t_old, y_old = solver.t_old, solver.y / AMPLIFICATION[cls](-0.02)
    dense = solver.dense_output()
    inside = np.array([t_old + 0.005, t_old + 0.015])
    expected = y_old[0] * AMPLIFICATION[cls](-(inside - t_old))
    assert np.allclose(dense(inside)[0], expected, rtol=1e-13)
    assert dense(inside[0])[0] == dense(inside)[0, 0]          # one arithmetic, scalar or batch
    assert dense(solver.t)[0] == solver.y[0]                    # the step end as the step made it


def test_a_fixed_step_started_a_few_ulps_before_a_grid_time_resumes_there():
    """k * dt and a sum of steps may differ in the last bit; nflow's grid is k * dt."""
    grid = np.arange(4) * 0.1                        # 0.30000000000000004 at k = 3
    solver = ForwardEuler(decay(0.0), 0.3, [1.0], 0.35, step=0.1, grid=grid)
    assert solver.t == grid[3] != 0.3
    solver.step()
    assert solver.t == 0.35


def test_a_fixed_step_walks_without_state():
    """scipy's OdeSolver.step jumps to t_bound when there is no state; a fixed step walks."""
    solver = ForwardEuler(lambda t, y: np.zeros(0), 0.0, np.zeros(0), 1.0, step=0.25, grid=np.array([0.0, 1.0]))
    ends = []
    while solver.status == "running":
        solver.step()
        ends.append(solver.t)
    assert ends == [0.25, 0.5, 0.75, 1.0]


# ----------------------------------------------------------------------------- location

def _located(g, a, b, old):
    return hybrid._locate(g, a, b, g(a), g(b), old, hybrid._xtol(b))


@pytest.mark.parametrize("old", [True, False])
def test_location_answers_the_right_end_of_the_bracket(old):
    root = 0.3 + 1e-9 * math.pi
    sign = 1.0 if old else -1.0

    def g(t):
        return sign * (root - t)

    t_ev = _located(g, 0.0, 1.0, old)
    assert (g(t_ev) > 0.0) != old                      # the relation has flipped there
    assert 0.0 <= t_ev - root <= 2.0 * hybrid._xtol(1.0)


def test_location_of_a_relation_leaving_an_exact_zero():
    """'g > 0' false at a restart on g == 0 (a velocity at rest): the flip is just after."""
    t_ev = _located(lambda t: t - 0.25 if t > 0.25 else 0.0, 0.25, 1.0, False)
    assert 0.25 < t_ev <= 0.25 + 2.0 * hybrid._xtol(1.0)
    # zero over a stretch, then positive: the first time it is positive
    t_ev = _located(lambda t: max(0.0, t - 0.6), 0.2, 1.0, False)
    assert 0.6 < t_ev <= 0.6 + 2.0 * hybrid._xtol(1.0)


def test_location_of_a_relation_falling_onto_an_exact_zero():
    """'g > 0' true, then g == 0 exactly from 0.4 on: 0 is already the new side."""
    t_ev = _located(lambda t: max(0.0, 0.4 - t), 0.0, 1.0, True)
    assert 0.4 <= t_ev <= 0.4 + 2.0 * hybrid._xtol(1.0)


def test_the_engine_uses_no_private_scipy_class():
    """The solvers are asked through scipy's public API only (``dense_output()``)."""
    engine = Path(hybrid.__file__).parent
    for path in [engine / "hybrid.py", engine / "continuous.py", *sorted((engine / "solvers").glob("*.py"))]:
        assert "_ivp" not in path.read_text(), path
