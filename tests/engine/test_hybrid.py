"""The event-locating hybrid integration driver (nflow_compat.engine.hybrid) on closed forms,
and its ``StiffnessWatch``: a fixed step far above an element's time constant is reported in
``warnings``."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nflow_compat as nc
from nflow_compat.engine.hybrid import STABILITY_FUNCTION, HybridGroup, integrate_hybrid, make_grid
from nflow_compat.errors import SimulationError, SolveFailed
from tests.rectifiers import rectifier
from tests.util import blk, diagram, wire


VARIABLE = ["ode45", "dae", "DOP853", "Radau", "BDF"]
LN2 = math.log(2.0)


class DecaySwitch:
    """x' = -k x with k = 1, switching to k = 2 when x falls to 0.5 (at t = ln 2)."""

    def __init__(self):
        self.k = 1.0
        self.calls = []

    def derivative(self, t, x):
        return -self.k * x

    def event_functions(self, t, x):
        return np.array([x[0] - 0.5]) if self.k == 1.0 else np.zeros(0)

    def handle_events(self, t, x, fired):
        if self.k == 1.0 and 0 in fired:
            self.calls.append((t, x.copy(), fired))
            self.k = 2.0
        return x


def decay_exact(t):
    t = np.asarray(t)
    return np.where(t < LN2, np.exp(-t), 0.5 * np.exp(-2.0 * (t - LN2)))


@pytest.mark.parametrize("method", VARIABLE)
def test_event_located_far_below_the_step_and_grid_reported_exactly(method):
    sys_ = DecaySwitch()
    grid = make_grid(0.1, 2.0)
    res = integrate_hybrid(sys_, [1.0], grid, method=method, rtol=1e-10, atol=1e-12)
    assert len(sys_.calls) == 1
    t_ev, x_ev, fired = sys_.calls[0]
    assert fired == (0,)
    assert abs(t_ev - LN2) < 1e-9            # limited by the solution error, not the step
    assert x_ev[0] <= 0.5                    # handed over on the new side of 'x > 0.5'
    assert np.allclose(res.t, grid) and len(res.t) == 21
    assert np.allclose(res.x[:, 0], decay_exact(grid), rtol=1e-7, atol=1e-10)


def test_event_time_resolution_is_far_below_the_step():
    """x' = -1 is integrated exactly in a few huge steps; the crossing of x = 0.5 at
    t = 0.5 is still located to ~1e-13 and handed over on the new side."""
    class Ramp(DecaySwitch):
        def derivative(self, t, x):
            return np.array([-1.0]) if self.k == 1.0 else np.array([0.0])

    s = Ramp()
    res = integrate_hybrid(s, [1.0], [0.0, 2.0], method="ode45", max_step=10.0)
    assert res.stats["steps"] <= 15        # steps of up to ~1 s (growth is capped at 10x)
    t_ev, x_ev, _ = s.calls[0]
    assert 0.5 <= t_ev <= 0.5 + 2e-13 and x_ev[0] <= 0.5


def test_grid_is_not_polluted_by_steps():
    """Reported values come from dense output: a coarse max_step still hits t_k = k*dt."""
    class Cos:
        def derivative(self, t, x):
            return np.array([math.cos(t)])

        def event_functions(self, t, x):
            return np.zeros(0)

        def handle_events(self, t, x, fired):
            return x

    grid = make_grid(0.01, 3.0)
    res = integrate_hybrid(Cos(), [0.0], grid, method="ode45", rtol=1e-10, atol=1e-12)
    assert np.array_equal(res.t, grid)
    assert np.max(np.abs(res.x[:, 0] - np.sin(grid))) < 1e-9
    assert res.stats["steps"] < len(grid) / 3     # far fewer steps than grid points


def test_max_step_is_honoured():
    sys_ = DecaySwitch()
    res = integrate_hybrid(sys_, [1.0], [0.0, 2.0], method="ode45", max_step=0.01)
    assert res.stats["steps"] >= 200


class Ball:
    """Falling ball y'' = -g; at the floor y = 0 it is re-launched with v := -e*v.

    With e = 0 the impact is fully inelastic and the ball rests on the floor (mode 'rest',
    y'' = 0).  Event function: the relation y > 0.
    """

    G = 9.81

    def __init__(self, e):
        self.e = e
        self.resting = False
        self.impacts = []

    def derivative(self, t, x):
        return np.array([x[1], 0.0 if self.resting else -self.G])

    def event_functions(self, t, x):
        return np.zeros(0) if self.resting else np.array([x[0]])

    def handle_events(self, t, x, fired):
        if 0 not in fired:
            return x
        self.impacts.append((t, x[0], x[1]))
        v = -self.e * x[1]
        if v <= 0.0:
            self.resting = True
            v = 0.0
        return np.array([0.0, v])


@pytest.mark.parametrize("method", VARIABLE + ["ode4"])
def test_bouncing_ball_impact_times(method):
    h0, e, g = 1.0, 0.5, Ball.G
    ball = Ball(e)
    # impacts at t1, 2*t1, 2.5*t1, ... accumulate at 3*t1 = 1.35 s (Zeno): stop before
    res = integrate_hybrid(ball, [h0, 0.0], make_grid(0.01, 1.2), method=method,
                           rtol=1e-10, atol=1e-12)
    t1 = math.sqrt(2 * h0 / g)
    v1 = g * t1
    expected = [t1, t1 + 2 * e * v1 / g, t1 + 2 * e * v1 / g + 2 * e * e * v1 / g]
    got = [imp[0] for imp in ball.impacts[:3]]
    tol = 1e-9 if method != "ode4" else 1e-6
    assert np.allclose(got, expected, atol=tol, rtol=0)
    # each impact is handled once: re-launching from exactly y = 0 never re-fires there
    assert len(ball.impacts) == len({round(t, 6) for t, _, _ in ball.impacts})
    # the stop is never exceeded on the grid
    assert np.all(res.x[:, 0] >= -1e-12)


def test_ball_hitting_an_inelastic_stop_then_rests():
    ball = Ball(0.0)
    grid = make_grid(0.05, 2.0)
    res = integrate_hybrid(ball, [1.0, 0.0], grid, method="ode45", rtol=1e-10, atol=1e-12)
    t1 = math.sqrt(2.0 / Ball.G)
    assert len(ball.impacts) == 1 and abs(ball.impacts[0][0] - t1) < 1e-9
    assert ball.impacts[0][1] <= 0.0                 # located on the new side of 'y > 0'
    after = grid >= t1
    assert np.all(res.x[after, 0] == 0.0) and np.all(res.x[after, 1] == 0.0)
    before = ~after
    assert np.allclose(res.x[before, 0], 1.0 - 0.5 * Ball.G * grid[before] ** 2, atol=1e-9)


class RelationSystem:
    """x' = 1 starting at x = 0; relation 'x > 0' whose restart value the system fixes."""

    def __init__(self, committed):
        self.committed = committed
        self.calls = []

    def derivative(self, t, x):
        return np.array([1.0])

    def event_functions(self, t, x):
        return np.array([x[0]])

    def relation_values(self, t, x):
        return np.array([self.committed])

    def handle_events(self, t, x, fired):
        self.calls.append(t)
        self.committed = np.nan
        return x


def test_zero_start_takes_the_side_it_moves_to_by_default():
    s = RelationSystem(np.nan)
    integrate_hybrid(s, [0.0], make_grid(0.1, 1.0))
    assert s.calls == []


def test_zero_start_with_a_committed_false_relation_fires_just_after_the_restart():
    """Modelica semantics (MSL second breakaway stage): 'v > 0' is false at v = 0, so v
    leaving zero is an event, located right after (never at) the restart instant."""
    s = RelationSystem(0.0)
    integrate_hybrid(s, [0.0], make_grid(0.1, 1.0))
    assert len(s.calls) == 1
    assert 0.0 < s.calls[0] < 1e-12


def test_crossing_located_on_the_new_side_for_direct_reversal():
    """v = cos t crosses 0 at pi/2: the state handed over is already (minutely) negative."""
    seen = []

    class Osc:
        def derivative(self, t, x):
            return np.array([-x[1], x[0]])        # v' = -s, s' = v -> v = cos t

        def event_functions(self, t, x):
            return np.array([x[0]]) if not seen else np.zeros(0)

        def handle_events(self, t, x, fired):
            seen.append((t, x.copy()))
            return x

    integrate_hybrid(Osc(), [1.0, 0.0], [0.0, 3.0], method="ode45", rtol=1e-12, atol=1e-14)
    t, x = seen[0]
    assert abs(t - math.pi / 2) < 1e-10
    assert -1e-11 < x[0] < 0.0


class StepInput:
    """x' = u(t) with u a unit step at T (a time event); records u seen before the event."""

    T = 0.35

    def __init__(self):
        self.handled = False
        self.early = []

    def u(self, t):
        return 1.0 if t >= self.T else 0.0

    def derivative(self, t, x):
        if not self.handled and self.u(t) != 0.0:
            self.early.append(t)
        return np.array([self.u(t)])

    def event_functions(self, t, x):
        return np.zeros(0)

    def handle_events(self, t, x, fired):
        assert fired == () and t == self.T
        self.handled = True
        return x

    def next_time_event(self, t):
        return self.T if t < self.T else math.inf


@pytest.mark.parametrize("method", ["ode45", "dae", "Radau", "ode1", "ode4"])
def test_time_event_input_is_seen_at_its_left_limit_until_handled(method):
    s = StepInput()
    grid = make_grid(0.1, 1.0)
    res = integrate_hybrid(s, [0.0], grid, method=method)
    assert s.handled and s.early == []
    assert np.allclose(res.x[:, 0], np.maximum(0.0, grid - s.T), atol=1e-12)


def test_event_on_a_grid_time_reports_the_post_event_value():
    class Jump:
        done = False

        def derivative(self, t, x):
            return np.array([0.0])

        def event_functions(self, t, x):
            return np.zeros(0)

        def handle_events(self, t, x, fired):
            self.done = True
            return np.array([5.0])

        def next_time_event(self, t):
            return 0.5 if t < 0.5 else math.inf

    res = integrate_hybrid(Jump(), [1.0], make_grid(0.1, 1.0), method="ode45")
    assert res.x[:, 0].tolist() == [1.0] * 5 + [5.0] * 6


class Counts:
    """x' = 0; every time event adds 1 to x. The times are ``times``: answered strictly
    after t (a provider without memory, like a Step), or, ``announced``, as an FMU does:
    the first one not handled yet, even when the run has reached it."""

    def __init__(self, times, announced=False):
        self.times, self.announced = list(times), announced
        self.handled = []

    def derivative(self, t, x):
        return np.array([0.0])

    def event_functions(self, t, x):
        return np.zeros(0)

    def handle_events(self, t, x, fired):
        self.handled.append(t)
        return x + 1.0

    def next_time_event(self, t):
        pending = [te for te in self.times if te not in self.handled]
        if self.announced:
            return min(pending, default=math.inf)
        return min((te for te in pending if te > t), default=math.inf)


@pytest.mark.parametrize("method", ["ode45", "dae", "ode4"])
@pytest.mark.parametrize("announced", [False, True])
@pytest.mark.parametrize("per_interval", [False, True])
def test_time_events_on_grid_points_and_at_the_stop_time_are_committed_once(method, announced, per_interval):
    """Time events on grid points (0.5), between them (0.75) and on the stop time (1.0),
    through one call over the grid or one call per grid interval (the solver-driven loop
    restarting at every grid point): each handled once, at its time, and a grid point on
    an event reports the value after it."""
    grid = make_grid(0.1, 1.0)
    s = Counts([0.5, 0.75, 1.0], announced)
    if per_interval:
        x = [0.0]
        rows = [x[0]]
        for k in range(1, len(grid)):
            x = integrate_hybrid(s, x, grid[k - 1:k + 1], method=method).x[-1]
            rows.append(x[0])
    else:
        rows = integrate_hybrid(s, [0.0], grid, method=method).x[:, 0].tolist()
    assert s.handled == [0.5, 0.75, 1.0]
    assert rows == [0.0] * 5 + [1.0] * 3 + [2.0] * 2 + [3.0]


def test_an_announced_time_event_the_run_has_reached_is_committed_at_once():
    """An FMU's announced time that nothing has handled yet (here the start itself) is due:
    committed where the run stands, never dropped."""
    s = Counts([0.0, 0.3], announced=True)
    res = integrate_hybrid(s, [0.0], make_grid(0.1, 0.5), method="ode45")
    assert s.handled == [0.0, 0.3]
    assert res.x[:, 0].tolist() == [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]


def test_fixed_step_ode1_locates_the_event_inside_the_euler_step():
    h = 0.1
    s = DecaySwitch()
    integrate_hybrid(s, [1.0], make_grid(h, 2.0), method="ode1")
    # Euler: x_n = (1-h)^n; inside the step the Euler state is x_n*(1 - tau)
    n = int(math.floor(math.log(0.5) / math.log(1 - h)))
    x_n = (1 - h) ** n
    expected = n * h + (1.0 - 0.5 / x_n)
    assert abs(s.calls[0][0] - expected) < 1e-12


def test_fixed_step_ode4_event_time_and_restart_at_the_event():
    h = 0.1
    s = DecaySwitch()
    res = integrate_hybrid(s, [1.0], make_grid(h, 2.0), method="ode4")
    # RK4 on x' = -x over tau multiplies by R(tau) = 1 - tau + tau^2/2 - tau^3/6 + tau^4/24
    R = np.polynomial.Polynomial([1, -1, 1 / 2, -1 / 6, 1 / 24])
    x_n, n = 1.0, 0
    while x_n * R(h) > 0.5:
        x_n *= R(h)
        n += 1
    roots = (R - 0.5 / x_n).roots()
    tau = min(r.real for r in roots if abs(r.imag) < 1e-12 and 0 < r.real <= h)
    assert abs(s.calls[0][0] - (n * h + tau)) < 1e-12
    # after the event the solver restarts AT the event with k = 2: one partial step to the
    # next grid time, then full steps (amplification R(2h) per step)
    t_ev = s.calls[0][0]
    x_ev = x_n * R(tau)
    expected = [x for x in [1.0]]
    for k in range(1, len(res.t)):
        tk = k * h
        if tk <= n * h + 1e-12:
            expected.append(R(h) ** k)
        elif not expected or tk - h < t_ev:
            expected.append(x_ev * R(2.0 * (tk - t_ev)))
        else:
            expected.append(expected[-1] * R(2.0 * h))
    assert np.allclose(res.x[:, 0], expected, rtol=1e-12, atol=0)
    assert np.allclose(res.x[:, 0], decay_exact(res.t), rtol=1e-4)


def test_sample_callback_order_and_stop():
    seen = []

    def sample(t, x):
        seen.append(t)
        return t >= 0.3 - 1e-12

    res = integrate_hybrid(DecaySwitch(), [1.0], make_grid(0.1, 1.0), sample=sample)
    assert res.stopped and np.allclose(seen, [0.0, 0.1, 0.2, 0.3])
    assert len(res.t) == 4


def test_chattering_is_a_clear_error():
    class Chatter:
        """An event whose handling flips the relation back at once: never settles."""

        sign = 1.0

        def derivative(self, t, x):
            return np.array([self.sign])

        def event_functions(self, t, x):
            return np.array([x[0] - 0.5])

        def handle_events(self, t, x, fired):
            self.sign = -self.sign
            return x

    with pytest.raises(SimulationError) as err:
        integrate_hybrid(Chatter(), [0.0], [0.0, 1.0], method="ode45")
    assert err.value.code == "event_chattering"


def test_events_in_a_row_that_move_time_on_by_a_few_tolerances_are_chattering():
    """A relation switched back by every restart, time moving on by some 1e-11 s per
    event (the way back is 100 times slower than the way in, as a heater switching off at
    its set point): no 200 of them fall within 1e-10 s of the first, yet each is within
    1e-10 s of the one before. That is chattering, reported as such, long before the event
    limit; the system names the owner of the relation."""
    class SlowBack:
        up = True

        def derivative(self, t, x):
            return np.array([1.0 if self.up else -0.01])

        def event_functions(self, t, x):
            return np.array([x[0] - 0.5])

        def handle_events(self, t, x, fired):
            self.up = not self.up
            return x

        def relation_blocks(self, t, x, relations):
            return ["heater" for _ in relations]

    system = SlowBack()
    with pytest.raises(SimulationError) as err:
        integrate_hybrid(system, [0.0], [0.0, 1.0], method="ode45", max_events=5000)
    assert err.value.code == "event_chattering" and err.value.block == "heater"
    assert "'heater'" in err.value.message


def test_an_event_location_that_makes_no_progress_is_a_typed_error(monkeypatch):
    """The location moves on by the tolerance each time the root it is given lies on the
    relation's old side (a relation that flips back within the tolerance, as noise does);
    here the root finder always answers the bracket's start, so without a bound it would
    crawl through the step 1e-13 s at a time. It gives up after a bounded number of tries
    with event_location, naming the relation's owner."""
    from nflow_compat.engine import hybrid

    class Ramp:
        def derivative(self, t, x):
            return np.array([1.0])

        def event_functions(self, t, x):
            return np.array([x[0] - 0.5])

        def handle_events(self, t, x, fired):
            return x

        def relation_blocks(self, t, x, relations):
            return ["sensor" for _ in relations]

    monkeypatch.setattr(hybrid, "brentq", lambda f, a, b, **kw: a)
    with pytest.raises(SimulationError) as err:
        integrate_hybrid(Ramp(), [0.0], [0.0, 1.0], method="ode45")
    assert err.value.code == "event_location" and err.value.block == "sensor"


def test_unknown_solver_and_bad_grid():
    with pytest.raises(SimulationError) as err:
        integrate_hybrid(DecaySwitch(), [1.0], [0.0, 1.0], method="euler42")
    assert err.value.code == "unknown_solver"
    with pytest.raises(SimulationError) as err:
        integrate_hybrid(DecaySwitch(), [1.0], [0.0, 0.0])
    assert err.value.code == "bad_grid"


def test_make_grid_is_a_product():
    g = make_grid(0.1, 0.3)
    assert len(g) == 4 and g[3] == 3 * 0.1
    assert len(make_grid(0.1, 0.2)) == 3


def test_group_dispatches_states_and_events():
    a, b = DecaySwitch(), Ball(0.5)
    a.x0, b.x0 = np.array([1.0]), np.array([1.0, 0.0])
    grp = HybridGroup([a, b])
    res = integrate_hybrid(grp, grp.x0, make_grid(0.05, 1.0), method="ode45", rtol=1e-10, atol=1e-12)
    assert len(a.calls) == 1 and abs(a.calls[0][0] - LN2) < 1e-9
    assert abs(b.impacts[0][0] - math.sqrt(2 / Ball.G)) < 1e-9
    assert np.allclose(res.x[:, 0], decay_exact(res.t), rtol=1e-7)


class CountedDecay:
    """x' = -x with no relation; counts the event-function evaluations."""

    def __init__(self, warm_started=False):
        self.warm_started = warm_started
        self.g_calls = 0

    def derivative(self, t, x):
        return -x

    def event_functions(self, t, x):
        self.g_calls += 1
        return np.zeros(0)

    def handle_events(self, t, x, fired):
        return x


@pytest.mark.parametrize("method", ["ode45", "dae"])
def test_no_relations_are_looked_at_once_per_restart(method):
    """Without relations the event functions are evaluated at the (re)start only, unless
    the system says an evaluation leaves a warm start behind (``warm_started``): then at
    every step end, as before the shortcut, with the same result."""
    grid = make_grid(0.01, 2.0)
    plain, warm = CountedDecay(), CountedDecay(warm_started=True)
    a = integrate_hybrid(plain, [1.0], grid, method=method)
    b = integrate_hybrid(warm, [1.0], grid, method=method)
    assert plain.g_calls == 1
    assert warm.g_calls == 1 + b.stats["steps"]
    assert np.array_equal(a.x, b.x)
    assert np.allclose(a.x[:, 0], np.exp(-grid), rtol=1e-5)


# --------------------------------------------------------------------------------------------------
# A fixed step far above an element's time constant is reported in ``warnings`` (issue
# 10, item 7). The arithmetic stays nflow's (RK4 / forward Euler at sampleTime); the engine's
# ``StiffnessWatch`` only tells the user when the method is unstable on a mode the model damps.
# --------------------------------------------------------------------------------------------------

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


@pytest.mark.parametrize("solver", ["discrete", "ode4", "ode1"])
@pytest.mark.parametrize("dt", [1e-4, 2e-4])
def test_a_fixed_step_across_a_diode_turning_on_warns(solver, dt):
    # a half-wave rectifier charging 22 uF from 0 V: at the first steps a stage (RK4's last,
    # Euler's start) sees the diode at ~0.6 V forward, tens of amperes with a time constant
    # of ~10 ns; one step carries the load past the source (64 V from a 10 V sine): no
    # run of suspect steps, one overshoot, which must still be reported
    d = dict(rectifier(False, 1e3, 22e-6, solver, 0.003), sampleTime=dt)
    (warning,) = _stiff(nc.simulate(d))
    assert all(f"'{name}'" in warning for name in ("C", "D", "R", "V"))
    assert float(re.search(r"time constant \(~([0-9.e+-]+) s\)", warning).group(1)) < dt / 10


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


# ---- a solve that fails at a trial point rejects the step

class _NearSine:
    """x' = cos t (x = sin t) whose derivative has no solution farther than ``reach`` from
    sin t, like a network whose Newton fails at a trial point far from the last one: a
    stage of a large step is out of reach, the same step made small is not."""

    def __init__(self, reach=1e-3, until=math.inf):
        self.reach, self.until = reach, until
        self.failures = 0

    def derivative(self, t, x):
        if abs(x[0] - math.sin(t)) > self.reach or t > self.until:
            self.failures += 1
            raise SolveFailed("island_unsolvable", f"no solution at t = {t:.9g}", block="m")
        return np.array([math.cos(t)])

    def event_functions(self, t, x):
        return np.zeros(0)

    def handle_events(self, t, x, fired):
        return x


@pytest.mark.parametrize("method, reach, rtol", [("ode45", 1e-3, 1e-6), ("dae", 1e-5, 1e-6), ("Radau", 1e-3, 1e-4)])
def test_a_failed_solve_at_a_trial_point_retries_the_step_smaller(method, reach, rtol):
    # (the implicit methods' trial points are close to their solution: a narrower reach)
    system = _NearSine(reach)
    grid = make_grid(0.1, 3.0)
    res = integrate_hybrid(system, [0.0], grid, method=method, rtol=rtol, atol=rtol * 1e-2, max_step=0.5)
    assert system.failures > 0 and res.stats["rejected"] == system.failures
    np.testing.assert_allclose(res.x[:, 0], np.sin(grid), atol=2e-5)


def test_a_fixed_step_method_takes_the_interval_in_substeps_and_says_so():
    # RK4's stages at h = 0.1 stray ~1.2e-3 from sin t: out of reach; at 0.025 they do not
    system, substeps = _NearSine(), []
    grid = make_grid(0.1, 1.0)
    res = integrate_hybrid(system, [0.0], grid, method="ode4", substeps=substeps)
    assert [round(t, 12) for t in res.t] == [round(t, 12) for t in grid]
    assert substeps and all(isinstance(err, SolveFailed) for _, _, err in substeps)
    assert min(h for _, h, _ in substeps) >= 0.1 / 8
    np.testing.assert_allclose(res.x[:, 0], np.sin(grid), atol=1e-7)


@pytest.mark.parametrize("method", ["ode45", "dae", "ode4"])
def test_a_solve_failing_at_every_step_size_is_the_error(method):
    # no solution beyond t = 0.3: the step is rejected down to the minimum, then the error
    # is the solve's own, typed and naming its block, at its time
    with pytest.raises(SimulationError) as err:
        integrate_hybrid(_NearSine(reach=math.inf, until=0.3), [0.0], make_grid(0.1, 1.0), method=method)
    assert err.value.code == "island_unsolvable" and err.value.block == "m"
    assert "rejected down to" in err.value.message
    assert 0.3 <= float(err.value.message.split("at t = ")[1].split(" ")[0].rstrip(";")) < 0.3 + 1e-6
