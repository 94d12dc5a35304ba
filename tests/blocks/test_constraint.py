"""The constraint block (algebraic state z with residual input g) under the dae solver.

Every expected value is a closed form or an independent numpy computation; none comes
from running nflow_compat."""
from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nflow_compat as nc
from nflow_compat.engine import continuous as engine
from nflow_compat.errors import DiagramError, SimulationError

from tests.util import blk, diagram, record, run, wire


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
