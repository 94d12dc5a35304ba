"""The 1-D mechanics on the general acausal layer (physical.acausal + physical.mechanical):
the structure it gives an island (which unknowns are states, which are solved for, which
laws need Newton's method), each checked with a closed form derived in the test."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import expm

import nflow_compat as nc
from nflow_compat.engine.continuous import PlanSystem
from nflow_compat.physical.acausal import DaeIsland
from tests.util import blk, diagram, pin, rec


def _island(d) -> DaeIsland:
    part, = PlanSystem(nc.compile_plan(d)).parts
    return part.island


def _run(blocks, conns, sensors, **kw):
    for sensor, name in sensors:
        b, c = rec(sensor, name)
        blocks, conns = blocks + b, conns + c
    d = diagram(blocks, conns, **dict(dict(dt=0.05, duration=2.0, solver="ode45", relTol=1e-10, absTol=1e-12), **kw))
    res = nc.simulate(d)
    return d, res, np.asarray(res["time"]), {name: np.asarray(res["workspace"][name])[:, 0] for _, name in sensors}


def _chain(first, spring, m, s0):
    """fixed -first- p -spring- mass m (starting at s0), with the positions of the mass and
    of p recorded as 's' and 'p': (diagram, time, {name: values})."""
    blocks = [blk("g", "Fixed"), first, spring, blk("m", "Mass", m=m, s0=s0), blk("ps", "PositionSensor"),
              blk("pp", "PositionSensor")]
    a, b = first["id"], spring["id"]
    conns = [pin("g", "flange", a, "a"), pin(a, "b", b, "a"), pin(b, "b", "m", "flange"),
             pin("ps", "flange", "m", "flange"), pin("pp", "flange", b, "a")]
    d, _, t, out = _run(blocks, conns, [("ps", "s"), ("pp", "p")])
    return d, t, out


def test_a_massless_node_between_springs_is_an_algebraic_position():
    # fixed -k1- p -k2- mass: k1 p = k2 (s - p) so p = k2 s/(k1 + k2), and the mass sees the
    # series stiffness k = k1 k2/(k1 + k2): s = s0 cos(sqrt(k/m) t); only s and v are states
    k1, k2, m, s0 = 30.0, 60.0, 0.5, 0.2
    d, t, out = _chain(blk("k1", "Spring", k=k1), blk("k2", "Spring", k=k2), m, s0)
    assert _island(d).n_states == 2
    s = s0 * np.cos(np.sqrt(k1 * k2 / (k1 + k2) / m) * t)
    np.testing.assert_allclose(out["s"], s, atol=1e-8)
    np.testing.assert_allclose(out["p"], k2 * s / (k1 + k2), atol=1e-8)


def test_a_massless_node_behind_a_damper_is_a_first_order_state():
    # fixed -d- p -k- mass: d p' = k (s - p), m s'' = -k (s - p): states (s, p, v), the
    # node's speed solved from its balance; against expm of that 3x3 system
    d_, k, m, s0 = 4.0, 25.0, 1.5, 0.3
    d, t, out = _chain(blk("d", "Damper", d=d_), blk("k", "Spring", k=k), m, s0)
    assert _island(d).n_states == 3
    A = np.array([[0.0, 0.0, 1.0], [k / d_, -k / d_, 0.0], [-k / m, k / m, 0.0]])     # (s, p, v)
    ref = np.array([expm(A * tk) @ [s0, 0.0, 0.0] for tk in t])
    np.testing.assert_allclose(out["s"], ref[:, 0], atol=1e-8)
    np.testing.assert_allclose(out["p"], ref[:, 1], atol=1e-8)


def test_a_law_of_the_states_is_evaluated_without_newton():
    # m v' = -d v|v|: v = v0/(1 + d v0 t/m), s = (m/d) ln(1 + d v0 t/m); the island has no
    # algebraic unknown that the law reads, so nothing is solved by iteration
    m, d_, v0 = 2.0, 0.8, 3.0
    blocks = [blk("m", "Mass", m=m, v0=v0), blk("q", "QuadraticSpeedDependentForce", d=d_),
              blk("vs", "SpeedSensor"), blk("ps", "PositionSensor")]
    conns = [pin("m", "flange", "q", "flange"), pin("vs", "flange", "m", "flange"), pin("ps", "flange", "m", "flange")]
    d, _, t, out = _run(blocks, conns, [("vs", "v"), ("ps", "s")])
    island = _island(d)
    assert island._nonlinear and not island._implicit
    np.testing.assert_allclose(out["v"], v0 / (1.0 + d_ * v0 * t / m), atol=1e-8)
    np.testing.assert_allclose(out["s"], m / d_ * np.log1p(d_ * v0 * t / m), atol=1e-8)


def test_a_gear_makes_one_unknown_of_its_two_flanges():
    # inertia J1 -gear(ratio r: phi_a = r phi_b)- inertia J2, torque tau on J1: the tied
    # group has one angle; J2 is reflected as J2/r^2 on the a side: phi_1'' = tau/(J1 + J2/r^2)
    J1, J2, r, tau = 0.5, 2.0, 4.0, 3.0
    blocks = [blk("J1", "Inertia", J=J1), blk("J2", "Inertia", J=J2), blk("g", "IdealGear", ratio=r),
              blk("tau", "ConstantTorque", tau=tau), blk("a1", "AngleSensor"), blk("a2", "AngleSensor")]
    conns = [pin("tau", "flange", "J1", "flange"), pin("J1", "flange", "g", "a"), pin("g", "b", "J2", "flange"),
             pin("a1", "flange", "J1", "flange"), pin("a2", "flange", "J2", "flange")]
    d, _, t, out = _run(blocks, conns, [("a1", "phi1"), ("a2", "phi2")])
    assert _island(d).n_states == 2
    phi1 = 0.5 * tau / (J1 + J2 / r ** 2) * t ** 2
    np.testing.assert_allclose(out["phi1"], phi1, atol=1e-9)
    np.testing.assert_allclose(out["phi2"], phi1 / r, atol=1e-9)


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_msl_brake_locks_a_sliding_mass_through_the_switching_mechanism(solver):
    # mass m at v0 on an MSL brake with mu 0.5, fn_max 10 and f_normalized 1: the friction
    # force mu*fn = 5 decelerates it at 5/m until v = 0 at t1 = v0 m/5, where the brake
    # locks (no force drives it): s = v0 t1/2 from then on
    m, v0 = 2.0, 3.0
    blocks = [blk("m", "Mass", m=m, v0=v0), blk("b", "Brake", fn_max=10.0, mu=0.5), blk("one", "constant", Value=1.0),
              blk("ps", "PositionSensor")]
    conns = [pin("m", "flange", "b", "flange"), {"from": "one", "to": "b", "fromIndex": 0, "toIndex": 0},
             pin("ps", "flange", "m", "flange")]
    d, res, t, out = _run(blocks, conns, [("ps", "s")], solver=solver)
    t1 = v0 * m / 5.0
    s = np.where(t < t1, v0 * t - 2.5 / m * t ** 2, v0 * t1 / 2.0)
    np.testing.assert_allclose(out["s"], s, atol=1e-7)
    modes = [(e["from"], e["to"]) for e in res["events"] if e["kind"] == "mode"]
    assert modes[-1] == ("forward", "stuck")
    assert abs([e["t"] for e in res["events"] if e["to"] == "stuck"][-1] - t1) < 1e-9


def test_an_emf_joins_circuit_and_shaft_in_one_island():
    blocks = [blk("gnd", "Ground"), blk("V", "ConstantVoltage", V=2.0), blk("R", "Resistor", R=1.0),
              blk("emf", "EMF", k=0.5), blk("J", "Inertia", J=0.1)]
    conns = [pin("V", "n", "gnd", "p"), pin("V", "p", "R", "p"), pin("R", "n", "emf", "p"),
             pin("emf", "n", "gnd", "p"), pin("emf", "flange", "J", "flange")]
    island = _island(diagram(blocks, conns, solver="ode45"))
    assert set(island.element_names) == {"gnd", "V", "R", "emf", "J"}


def test_a_stick_slip_element_without_a_mass_is_refused_before_the_run():
    # a brake on a massless node (a spring to the frame): sliding, its force would have
    # nothing to act on; found by eliminating the network in its sliding branch at compile time
    blocks = [blk("b", "Brake", fn_max=1.0), blk("k", "Spring"), blk("g", "Fixed"), blk("one", "constant", Value=1.0)]
    conns = [pin("b", "flange", "k", "b"), pin("k", "a", "g", "flange"),
             {"from": "one", "to": "b", "fromIndex": 0, "toIndex": 0}]
    with pytest.raises(nc.SimulationError) as err:
        nc.compile_plan(diagram(blocks, conns, solver="ode45"))
    assert err.value.code == "massless_friction" and err.value.block == "b"


def test_two_motion_sources_on_one_node_are_named():
    blocks = [blk("s1", "ConstantSpeed", v=1.0), blk("s2", "ConstantSpeed", v=2.0)]
    with pytest.raises(nc.DiagramError) as err:
        nc.compile_plan(diagram(blocks, [pin("s1", "flange", "s2", "flange")], solver="ode45"))
    assert "two motion sources on one node" in err.value.message and "s1, s2" in err.value.message


def test_a_massless_node_behind_a_damper_starts_where_the_damper_is_relaxed():
    # MSL's damper s_rel starts at 0 (a start value, not fixed): the node behind a damper on a
    # frame at s0 = 1 starts at 1, so a mass at rest at 1 on a relaxed spring stays there
    blocks = [blk("g", "Fixed", s0=1.0), blk("d", "Damper", d=2.0), blk("k", "Spring", k=10.0),
              blk("m", "Mass", m=1.0, s0=1.0), blk("ps", "PositionSensor"), blk("pp", "PositionSensor")]
    conns = [pin("g", "flange", "d", "a"), pin("d", "b", "k", "a"), pin("k", "b", "m", "flange"),
             pin("ps", "flange", "m", "flange"), pin("pp", "flange", "k", "a")]
    _, res, _, out = _run(blocks, conns, [("ps", "s"), ("pp", "p")])
    np.testing.assert_allclose(out["s"], 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["p"], 1.0, rtol=0, atol=1e-12)
    assert res["warnings"] == []


def test_a_friction_element_that_can_never_slide_is_refused():
    # a clutch with both flanges on one inertia: its relative speed is 0 by construction
    blocks = [blk("c", "Clutch"), blk("J", "Inertia"), blk("fn", "constant", Value=1.0)]
    conns = [pin("c", "a", "J", "flange"), pin("c", "b", "J", "flange"), {"from": "fn", "to": "c", "fromIndex": 0, "toIndex": 0}]
    with pytest.raises(nc.SimulationError) as err:
        nc.compile_plan(diagram(blocks, conns, solver="ode45"))
    assert err.value.code == "degenerate_friction" and err.value.block == "c"


def test_an_initial_position_a_fixed_flange_contradicts_is_ignored_with_a_warning():
    blocks = [blk("m", "Mass", s0=2.0), blk("g", "Fixed", s0=1.0), blk("ps", "PositionSensor")]
    conns = [pin("m", "flange", "g", "flange"), pin("ps", "flange", "m", "flange")]
    _, res, _, out = _run(blocks, conns, [("ps", "s")])
    np.testing.assert_array_equal(out["s"], 1.0)
    assert len(res["warnings"]) == 1 and res["warnings"][0].startswith("m: initial value 2 contradicts")


def test_an_element_that_does_not_change_through_a_cycle_of_the_event_iteration_keeps_its_value():
    # a stuck brake breaking away while a gap is in contact: the brake's start flags cycle
    # (stuck force beyond the breakaway bound, start acceleration ~0) and are merged; the
    # gap's unchanged contact mode is kept (found by a differential run against the 1-D
    # compiler: the event iteration gave up here)
    blocks = [blk("g", "Fixed", s0=0.5), blk("e1", "Spring", k=15.88), blk("m0", "Mass", m=1.811, v0=1.0),
              blk("e2", "Lever", ratio=2.0), blk("sp", "Spring", k=20.0), blk("mm", "Mass", m=1.0),
              blk("e3", "ElastoGap", c=100.0, d=1.0, s_rel0=0.0), blk("m2", "Mass", m=0.585),
              blk("e4", "SpringDamper", k=46.23, d=1.58), blk("m3", "Mass", m=1.283, v0=1.0),
              blk("f", "Force"), blk("sig", "sine", Amplitude=5.0, Frequency=0.7),
              blk("b", "Brake", fn_max=5.0, mu=0.5), blk("fn", "constant", Value=1.0),
              blk("fr", "Friction", Fc=2.0, vEps=0.01)]
    conns = [pin("g", "flange", "e1", "a"), pin("e1", "b", "m0", "flange"), pin("m0", "flange", "e2", "a"),
             pin("e2", "b", "sp", "a"), pin("sp", "b", "mm", "flange"), pin("mm", "flange", "e3", "a"),
             pin("e3", "b", "m2", "flange"), pin("m2", "flange", "e4", "a"), pin("e4", "b", "m3", "flange"),
             pin("f", "flange", "m0", "flange"), {"from": "sig", "to": "f", "fromIndex": 0, "toIndex": 0},
             pin("b", "flange", "m2", "flange"), {"from": "fn", "to": "b", "fromIndex": 0, "toIndex": 0},
             pin("fr", "flange", "m3", "flange")]
    res = nc.simulate(diagram(blocks, conns, dt=0.05, duration=2.0, solver="ode45", relTol=1e-9, absTol=1e-11))
    assert [(e["block"], e["to"]) for e in res["events"]] == [
        ("e3", "contact"), ("b", "forward"), ("e3", "open"), ("e3", "contact"), ("e3", "open"), ("b", "stuck")]


def test_the_float_derivative_of_a_small_island_is_its_matrix_form_in_every_branch():
    # a stick-slip mass driven by a sine force: 2 states, so the derivative runs on floats
    # (a position's rate copied from its speed); in each branch it must equal
    # K w + L (c + explicit terms) made with the mode's matrices
    blocks = [blk("f0", "sine", Amplitude=3.0, Frequency=0.5), blk("f", "Force"),
              blk("m", "MassWithStopAndFriction", m=1.5, L=0.0, smax=2.0, smin=-2.0, F_prop=0.4, F_Coulomb=1.0,
                  F_Stribeck=0.5, fexp=2.0, v_small=1e-3)]
    conns = [{"from": "f0", "to": "f", "fromIndex": 0, "toIndex": 0}, pin("f", "flange", "m", "flange_a")]
    island = _island(diagram(blocks, conns, dt=0.05, duration=1.0, solver="ode45"))
    assert island.n_states == 2
    island.inputs[:] = 1.25
    for branch in island._elements[0].branches:
        island.modes = (branch,)
        lin = island._linear(island.modes)
        assert lin.float_rows is not None
        for w in ([0.3, -0.7], [-1.1, 0.4], [0.0, 0.0]):
            w = np.array(w)
            c = island._with_explicit(island._c(0.2, island.inputs), w, island.inputs, 0.2, island.modes)
            np.testing.assert_allclose(island.derivative(0.2, w), lin.K @ w + lin.L @ c, rtol=1e-14, atol=1e-14)
