"""The 1-D mechanics on the general acausal layer (physical.acausal + physical.mechanical):
the structure it gives an island (which unknowns are states, which are solved for, which
laws need Newton's method), each checked with a closed form derived in the test."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.linalg import expm

import nflow_compat as nc
from tests.physical.mechanisms import island_of, mode_changes, run_sensors, sensed
from tests.util import blk, diagram, pin, wire



def _chain(first, spring, m, s0):
    """fixed -first- p -spring- mass m (starting at s0), with the positions of the mass and
    of p recorded as 's' and 'p': (diagram, time, {name: values})."""
    blocks = [blk("g", "Fixed"), first, spring, blk("m", "Mass", m=m, s0=s0), blk("ps", "PositionSensor"),
              blk("pp", "PositionSensor")]
    a, b = first["id"], spring["id"]
    conns = [pin("g", "flange", a, "a"), pin(a, "b", b, "a"), pin(b, "b", "m", "flange"),
             pin("ps", "flange", "m", "flange"), pin("pp", "flange", b, "a")]
    d, _, t, out = run_sensors(blocks, conns, [("ps", "s"), ("pp", "p")])
    return d, t, out


def test_a_massless_node_between_springs_is_an_algebraic_position():
    # fixed -k1- p -k2- mass: k1 p = k2 (s - p) so p = k2 s/(k1 + k2), and the mass sees the
    # series stiffness k = k1 k2/(k1 + k2): s = s0 cos(sqrt(k/m) t); only s and v are states
    k1, k2, m, s0 = 30.0, 60.0, 0.5, 0.2
    d, t, out = _chain(blk("k1", "Spring", k=k1), blk("k2", "Spring", k=k2), m, s0)
    assert island_of(d).n_states == 2
    s = s0 * np.cos(np.sqrt(k1 * k2 / (k1 + k2) / m) * t)
    np.testing.assert_allclose(out["s"], s, atol=1e-8)
    np.testing.assert_allclose(out["p"], k2 * s / (k1 + k2), atol=1e-8)


def test_a_massless_node_behind_a_damper_is_a_first_order_state():
    # fixed -d- p -k- mass: d p' = k (s - p), m s'' = -k (s - p): states (s, p, v), the
    # node's speed solved from its balance; against expm of that 3x3 system
    d_, k, m, s0 = 4.0, 25.0, 1.5, 0.3
    d, t, out = _chain(blk("d", "Damper", d=d_), blk("k", "Spring", k=k), m, s0)
    assert island_of(d).n_states == 3
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
    d, _, t, out = run_sensors(blocks, conns, [("vs", "v"), ("ps", "s")])
    island = island_of(d)
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
    d, _, t, out = run_sensors(blocks, conns, [("a1", "phi1"), ("a2", "phi2")])
    assert island_of(d).n_states == 2
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
    d, res, t, out = run_sensors(blocks, conns, [("ps", "s")], solver=solver)
    t1 = v0 * m / 5.0
    s = np.where(t < t1, v0 * t - 2.5 / m * t ** 2, v0 * t1 / 2.0)
    np.testing.assert_allclose(out["s"], s, atol=1e-7)
    modes = [(e["from"], e["to"]) for e in res["events"] if e["kind"] == "mode"]
    assert modes[-1] == ("forward", "stuck")
    assert abs([e["t"] for e in res["events"] if e["to"] == "stuck"][-1] - t1) < 1e-9


def test_an_emf_joins_circuit_and_shaft_in_oneisland_of():
    blocks = [blk("gnd", "Ground"), blk("V", "ConstantVoltage", V=2.0), blk("R", "Resistor", R=1.0),
              blk("emf", "EMF", k=0.5), blk("J", "Inertia", J=0.1)]
    conns = [pin("V", "n", "gnd", "p"), pin("V", "p", "R", "p"), pin("R", "n", "emf", "p"),
             pin("emf", "n", "gnd", "p"), pin("emf", "flange", "J", "flange")]
    island = island_of(diagram(blocks, conns, solver="ode45"))
    assert set(island.element_names) == {"gnd", "V", "R", "emf", "J"}


def test_a_stick_slip_element_without_a_mass_is_refused_before_therun_sensors():
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
    _, res, _, out = run_sensors(blocks, conns, [("ps", "s"), ("pp", "p")])
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
    _, res, _, out = run_sensors(blocks, conns, [("ps", "s")])
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


# --------------------------------------------------------------------------------------
# The element laws and network structures of the 1-D mechanics, each against a closed form
# derived in the test (ported from the tests of the former 1-D compiler, read through sensors)

@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_spring_mass_oscillation_period(solver):
    # m s'' = -k s: s = s0 cos(w t), v = -s0 w sin(w t), w = sqrt(k/m) = 5 (k 50, m 2)
    blocks = [blk("g", "Fixed"), blk("k", "Spring", k=50.0), blk("m", "Mass", m=2.0, s0=0.1)]
    conns = [pin("g", "flange", "k", "a"), pin("k", "b", "m", "flange")]
    _, t, out = sensed(blocks, conns, {"s": ("PositionSensor", "m", "flange"), "v": ("SpeedSensor", "m", "flange")},
                        dt=0.01, solver=solver)
    np.testing.assert_allclose(out["s"], 0.1 * np.cos(5.0 * t), atol=1e-7)
    np.testing.assert_allclose(out["v"], -0.5 * np.sin(5.0 * t), atol=1e-6)


def test_rotational_spring_oscillates_about_its_rest_angle():
    # MSL phi_rel0: J phi'' = -c (phi - rel0), phi(0) = rel0, w0 = 0.3: phi = rel0 + (w0/w) sin(w t), w = 3
    blocks = [blk("g", "RotFixed"), blk("k", "RotSpring", c=9.0, phi_rel0=0.5), blk("J", "Inertia", J=1.0, phi0=0.5, w0=0.3)]
    conns = [pin("g", "flange", "k", "a"), pin("k", "b", "J", "flange")]
    _, t, out = sensed(blocks, conns, {"phi": ("AngleSensor", "J", "flange")})
    np.testing.assert_allclose(out["phi"], 0.5 + 0.1 * np.sin(3.0 * t), atol=1e-8)


def test_spring_damper_matches_the_matrix_exponential():
    # m s'' = -k s - d s' against expm of [[0, 1], [-k/m, -d/m]]
    m, k, d = 0.7, 12.0, 0.9
    blocks = [blk("g", "Fixed"), blk("kd", "SpringDamper", k=k, d=d), blk("m", "Mass", m=m, s0=0.3, v0=-1.0)]
    conns = [pin("g", "flange", "kd", "a"), pin("kd", "b", "m", "flange")]
    _, t, out = sensed(blocks, conns, {"s": ("PositionSensor", "m", "flange"), "v": ("SpeedSensor", "m", "flange")},
                        dt=0.1, duration=3.0)
    A = np.array([[0.0, 1.0], [-k / m, -d / m]])
    ref = np.array([expm(A * tk) @ [0.3, -1.0] for tk in t])
    np.testing.assert_allclose(np.column_stack((out["s"], out["v"])), ref, atol=1e-8)


def test_a_floating_island_moves_freely():
    # two masses on a spring (rest length 1), no Fixed: the centre of mass drifts at
    # m1 v1/(m1 + m2), the stretch y oscillates with w = sqrt(k/mu), mu = m1 m2/(m1 + m2):
    # y = 0.2 cos(w t) - (1/w) sin(w t) (y0 = 0.2, y0' = -1)
    m1, m2, k = 1.0, 3.0, 12.0
    blocks = [blk("a", "Mass", m=m1, v0=1.0), blk("k", "Spring", k=k, s_rel0=1.0), blk("b", "Mass", m=m2, s0=1.2)]
    conns = [pin("a", "flange", "k", "a"), pin("k", "b", "b", "flange")]
    _, t, out = sensed(blocks, conns, {"a": ("PositionSensor", "a", "flange"), "b": ("PositionSensor", "b", "flange")},
                        duration=3.0)
    np.testing.assert_allclose((m1 * out["a"] + m2 * out["b"]) / (m1 + m2), 0.9 + m1 / (m1 + m2) * t, atol=1e-8)
    w = np.sqrt(k * (m1 + m2) / (m1 * m2))
    np.testing.assert_allclose(out["b"] - out["a"] - 1.0, 0.2 * np.cos(w * t) - np.sin(w * t) / w, atol=1e-8)


@pytest.mark.parametrize("kind", ["Lever", "Pulley"])
def test_lever_and_pulley_ratios(kind):
    # s_a = r s_b; a force F at b drives a mass m at a: (m r^2) s_b'' = r F... i.e. s_a'' = F/(r m)
    r, m, F = 2.5, 0.8, 4.0
    blocks = [blk("m", "Mass", m=m), blk("lv", kind, ratio=r), blk("F", "ConstantForce", F=F)]
    conns = [pin("m", "flange", "lv", "a"), pin("lv", "b", "F", "flange")]
    _, t, out = sensed(blocks, conns, {"sa": ("PositionSensor", "m", "flange"), "sb": ("PositionSensor", "F", "flange")},
                        dt=0.1, duration=1.0)
    np.testing.assert_allclose(out["sa"], 0.5 * F / (r * m) * t ** 2, atol=1e-10)
    np.testing.assert_allclose(out["sb"], out["sa"] / r, atol=1e-10)


def test_a_rod_joins_two_masses_into_one_body():
    # nflow's Rod (pos(a) = ratio pos(b), ratio 1): both move as one, a = F/(m1 + m2) = 2
    blocks = [blk("m1", "Mass", m=1.0, s0=1.0), blk("rod", "Rod"), blk("m2", "Mass", m=3.0, s0=1.0),
              blk("F", "ConstantForce", F=8.0)]
    conns = [pin("m1", "flange", "rod", "a"), pin("rod", "b", "m2", "flange"), pin("F", "flange", "m2", "flange")]
    d, _, t, out = run_sensors(blocks + [blk("p1", "PositionSensor"), blk("p2", "PositionSensor")],
                        conns + [pin("p1", "flange", "m1", "flange"), pin("p2", "flange", "m2", "flange")],
                        [("p1", "s1"), ("p2", "s2")], dt=0.1, duration=1.0)
    assert island_of(d).n_states == 2
    np.testing.assert_allclose(out["s1"], 1.0 + t ** 2, atol=1e-10)
    np.testing.assert_array_equal(out["s2"], out["s1"])


def test_a_gear_against_a_fixed_flange_locks_the_other_side():
    # RotFixed at 1 - gear (ratio 2) - spring - inertia at 0.5: the gear's b side is held at
    # 1/2 = 0.5, so the spring is relaxed and the inertia stays at rest
    blocks = [blk("g", "RotFixed", phi0=1.0), blk("gear", "IdealGear", ratio=2.0), blk("k", "RotSpring", c=1.0),
              blk("J", "Inertia", phi0=0.5)]
    conns = [pin("g", "flange", "gear", "a"), pin("gear", "b", "k", "a"), pin("k", "b", "J", "flange")]
    _, _, out = sensed(blocks, conns, {"pb": ("AngleSensor", "gear", "b"), "wb": ("RotSpeedSensor", "gear", "b"),
                                        "phi": ("AngleSensor", "J", "flange")}, dt=0.5, duration=1.0)
    np.testing.assert_allclose(out["pb"], 0.5, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(out["wb"], 0.0)
    np.testing.assert_allclose(out["phi"], 0.5, rtol=0, atol=1e-12)


# ---- prescribed motion

def test_a_constant_speed_source_drives_a_mass_through_a_spring():
    # flange at s = v t, spring k, mass m at rest at 0: x = v t - (v/w) sin(w t), w = sqrt(k/m)
    v, k, m = 2.0, 8.0, 2.0
    w = np.sqrt(k / m)
    blocks = [blk("src", "ConstantSpeed", v=v), blk("k", "Spring", k=k), blk("m", "Mass", m=m)]
    conns = [pin("src", "flange", "k", "a"), pin("k", "b", "m", "flange")]
    _, t, out = sensed(blocks, conns, {"x": ("PositionSensor", "m", "flange"), "s": ("PositionSensor", "src", "flange"),
                                        "vs": ("SpeedSensor", "src", "flange")}, duration=3.0)
    np.testing.assert_allclose(out["x"], v * t - v / w * np.sin(w * t), atol=1e-8)
    np.testing.assert_allclose(out["s"], v * t, atol=1e-12)
    np.testing.assert_array_equal(out["vs"], v)


def test_a_signal_driven_speed_source_integrates_its_input():
    # Speed with v = 0.5 t (a ramp) from s0 = 1 on a mass and a damper to the frame:
    # s = 1 + t^2/4, v = t/2 whatever the load
    blocks = [blk("src", "Speed", s0=1.0), blk("m", "Mass", m=2.0), blk("d", "Damper", d=3.0), blk("g", "Fixed"),
              blk("r", "ramp", slope=0.5)]
    conns = [pin("src", "flange", "m", "flange"), pin("m", "flange", "d", "a"), pin("d", "b", "g", "flange"),
             wire("r", "src")]
    _, t, out = sensed(blocks, conns, {"s": ("PositionSensor", "m", "flange"), "v": ("SpeedSensor", "m", "flange")},
                        dt=0.1)
    np.testing.assert_allclose(out["s"], 1.0 + 0.25 * t ** 2, atol=1e-10)
    np.testing.assert_allclose(out["v"], 0.5 * t, atol=1e-12)


def test_an_msl_clutch_locks_onto_a_driven_shaft():
    # ConstantRotSpeed 10 -> Clutch (mu 0.5, fn_max 4, fn 1: tau 2) -> J 2 at rest: slides
    # with w' = 1 until w = 10 at t = 10, then stays locked at 10
    blocks = [blk("src", "ConstantRotSpeed", w=10.0), blk("c", "Clutch", fn_max=4.0), blk("J", "Inertia", J=2.0),
              blk("one", "constant", Value=1.0)]
    conns = [pin("src", "flange", "c", "a"), pin("c", "b", "J", "flange"), wire("one", "c")]
    res, t, out = sensed(blocks, conns, {"w": ("RotSpeedSensor", "J", "flange")}, dt=0.5, duration=12.0)
    assert mode_changes(res) == [("c", "backward", "stuck")]
    assert abs(res["events"][-1]["t"] - 10.0) < 1e-9
    slip, lock = t < 9.99, t > 10.01
    np.testing.assert_allclose(out["w"][slip], t[slip], atol=1e-9)
    np.testing.assert_allclose(out["w"][lock], 10.0, atol=1e-9)


def test_an_msl_clutch_locked_to_an_accelerating_speed_source_follows_it():
    # RotSpeed w = 2 + 0.5 t, clutch torque 2 on J 2 (w' = 1) catches up at t = 4 and then
    # follows w exactly (the locked constraint uses the signal's derivative)
    blocks = [blk("src", "RotSpeed"), blk("c", "Clutch", fn_max=4.0), blk("J", "Inertia", J=2.0),
              blk("one", "constant", Value=1.0), blk("two", "constant", Value=2.0), blk("r", "ramp", slope=0.5),
              blk("sum", "sum", Inputs="++")]
    conns = [pin("src", "flange", "c", "a"), pin("c", "b", "J", "flange"), wire("one", "c"), wire("two", "sum", 0, 0),
             wire("r", "sum", 0, 1), wire("sum", "src")]
    res, t, out = sensed(blocks, conns, {"w": ("RotSpeedSensor", "J", "flange"), "phi": ("AngleSensor", "src", "flange")},
                          dt=0.5, duration=8.0)
    late = t > 4.0
    np.testing.assert_allclose(out["w"][late], 2.0 + 0.5 * t[late], atol=1e-8)
    np.testing.assert_allclose(out["w"][~late], t[~late], atol=1e-8)
    np.testing.assert_allclose(out["phi"], 2.0 * t + 0.25 * t ** 2, atol=1e-10)


# ---- prescribed speeds hold exactly
# A speed source's v = V(t) is the constraint the index reduction differentiates (the body
# on the flange needs V'); the constraint itself keeps holding algebraically: the flange's
# speed is computed from it at every evaluation, never taken from the integrator's copy of it
# (which drifted by the integration error of V': 0.63 m/s of 2 m/s under ode1 at 50 Hz and
# 1 ms, ~6e-6 under ode4, ode45 and dae).

ALL_SOLVERS = ["discrete", "ode1", "ode4", "ode45", "dae"]
_DRIVES = {"translational": ("Speed", "Mass", "m", "Damper", "Fixed", "SpeedSensor"),
           "rotational": ("RotSpeed", "Inertia", "J", "RotDamper", "RotFixed", "RotSpeedSensor")}


@pytest.mark.parametrize("solver", ALL_SOLVERS)
@pytest.mark.parametrize("domain", sorted(_DRIVES))
def test_a_signal_driven_speed_source_holds_its_flange_at_the_signal_exactly(domain, solver):
    # V = 2 sin(2 pi 50 t) on a body (2) with a damper (3) to the frame; the sensor and its
    # recorder come before the sine in the JSON (the speed read follows this step's signal)
    source, body, mass, damper, fixed, sensor = _DRIVES[domain]
    blocks = [blk("vs", sensor), blk("rec", "toWorkspace", VariableName="v", SaveFormat="Array"),
              blk("src", source), blk("m", body, **{mass: 2.0}), blk("d", damper, d=3.0),
              blk("g", fixed), blk("s", "sine", Amplitude=2.0, Frequency=50.0)]
    conns = [wire("vs", "rec"), wire("s", "src"), pin("src", "flange", "m", "flange"), pin("m", "flange", "d", "b"),
             pin("d", "a", "g", "flange"), pin("vs", "flange", "m", "flange")]
    res = nc.simulate(diagram(blocks, conns, dt=1e-3, duration=0.1, solver=solver))
    t, v = np.asarray(res["time"]), np.asarray(res["workspace"]["v"])[:, 0]
    assert np.max(np.abs(v - 2.0 * np.sin(2 * np.pi * 50.0 * t))) <= 1e-9 * 2.0


@pytest.mark.parametrize("solver", ALL_SOLVERS)
def test_an_msl_clutch_locks_where_its_body_meets_a_signal_driven_shaft(solver):
    # RotSpeed w = 1 + 0.1 sin(2 pi t), clutch torque 2 (mu 0.5, fn_max 4, fn 1) on J = 2 from
    # rest: w_J = t while sliding (w' = 1: exact under every method), so it locks where
    # t = 1 + 0.1 sin(2 pi t), at t = 1 (the only root: its slope 1 - 0.2 pi cos > 0). The
    # clutch's relation reads the shaft's prescribed speed (from the constraint), and locked it
    # needs J w' = 0.4 pi cos(2 pi t) < 2.2, so it stays locked.
    blocks = [blk("src", "RotSpeed"), blk("c", "Clutch", fn_max=4.0), blk("J", "Inertia", J=2.0),
              blk("one", "constant", Value=1.0), blk("s", "sine", Amplitude=0.1, Frequency=1.0),
              blk("sum", "sum", Inputs="++")]
    conns = [pin("src", "flange", "c", "a"), pin("c", "b", "J", "flange"), wire("one", "c"), wire("one", "sum", 0, 0),
             wire("s", "sum", 0, 1), wire("sum", "src")]
    res, t, out = sensed(blocks, conns, {"w": ("RotSpeedSensor", "src", "flange")}, dt=1e-3, duration=1.5,
                         solver=solver, relTol=1e-8, absTol=1e-10)
    assert mode_changes(res) == [("c", "backward", "stuck")]
    assert res["events"][0]["t"] == pytest.approx(1.0, abs=1e-9)
    assert np.max(np.abs(out["w"] - (1.0 + 0.1 * np.sin(2 * np.pi * t)))) <= 1e-9


def test_a_sensor_on_a_massless_flange_reads_the_force_of_this_step():
    # a signal force F = sin(2 pi t) holds a massless flange against a spring (k = 2): s = F/k
    # at every sample; the sensor and its recorder come first in the JSON (under a solver the
    # sensor read the force of the solver's last stage instead: off by up to 0.035)
    blocks = [blk("ps", "PositionSensor"), blk("rec", "toWorkspace", VariableName="s", SaveFormat="Array"),
              blk("F", "Force"), blk("k", "Spring", k=2.0), blk("g", "Fixed"), blk("m", "Mass", m=1.0),
              blk("d", "Damper", d=1.0), blk("sin", "sine", Amplitude=1.0, Frequency=1.0)]
    conns = [wire("ps", "rec"), wire("sin", "F"), pin("F", "flange", "k", "b"), pin("k", "a", "g", "flange"),
             pin("ps", "flange", "k", "b"), pin("m", "flange", "d", "b"), pin("d", "a", "g", "flange")]
    for solver in ("ode45", "dae", "discrete"):
        res = nc.simulate(diagram(blocks, conns, dt=0.01, duration=1.0, solver=solver))
        t, s = np.asarray(res["time"]), np.asarray(res["workspace"]["s"])[:, 0]
        np.testing.assert_allclose(s, np.sin(2 * np.pi * t) / 2.0, rtol=0, atol=1e-12)


# ---- speed-dependent and regularized laws

def test_quadratic_speed_dependent_torque_brakes_both_ways():
    # J w' = -d w|w|: w = w0/(1 + d |w0| t/J)
    for w0 in (3.0, -3.0):
        blocks = [blk("J", "Inertia", J=2.0, w0=w0), blk("q", "QuadraticSpeedDependentTorque", d=0.4)]
        _, t, out = sensed(blocks, [pin("J", "flange", "q", "flange")], {"w": ("RotSpeedSensor", "J", "flange")},
                            dt=0.1)
        np.testing.assert_allclose(out["w"], w0 / (1.0 + 0.4 * abs(w0) * t / 2.0), atol=1e-9)


def test_regularized_friction_decelerates_then_creeps_without_an_event():
    # Friction F = -Fc tanh(v/vEps): v >> vEps gives the constant deceleration Fc/m, then the
    # speed creeps toward 0 with no event
    blocks = [blk("m", "Mass", m=2.0, v0=1.0), blk("fr", "Friction", Fc=1.0, vEps=1e-3)]
    res, t, out = sensed(blocks, [pin("m", "flange", "fr", "flange")], {"v": ("SpeedSensor", "m", "flange")},
                          dt=0.25, duration=3.0)
    early = t < 1.9
    np.testing.assert_allclose(out["v"][early], 1.0 - 0.5 * t[early], atol=1e-9)
    assert abs(out["v"][-1]) < 1e-5 and res["events"] == []


def test_a_brake_without_fn_max_takes_its_input_as_the_peak_force():
    # Brake without fn_max: flange.f = f tanh(v/vEps) with f = 2: v = 3 - 2 t (m 1)
    blocks = [blk("m", "Mass", v0=3.0), blk("br", "Brake", vEps=1e-4), blk("f", "constant", Value=2.0)]
    _, t, out = sensed(blocks, [pin("m", "flange", "br", "flange"), wire("f", "br")],
                        {"v": ("SpeedSensor", "m", "flange")}, dt=0.25, duration=1.0)
    np.testing.assert_allclose(out["v"], 3.0 - 2.0 * t, atol=1e-9)


# ---- switched compliant elements

def _gap_bounce(c=100.0, d=0.0, **kw):
    # mass at s0 = 1 flying at -2 toward a gap closing at s_rel0 = 0.5
    blocks = [blk("g", "Fixed"), blk("gap", "ElastoGap", c=c, d=d, s_rel0=0.5), blk("m", "Mass", s0=1.0, v0=-2.0)]
    conns = [pin("g", "flange", "gap", "a"), pin("gap", "b", "m", "flange")]
    return sensed(blocks, conns, {"s": ("PositionSensor", "m", "flange"), "v": ("SpeedSensor", "m", "flange")},
                   **dict(dict(duration=1.0), **kw))


def test_elasto_gap_contact_events_and_elastic_rebound():
    # free flight to s = 0.5 (t = 0.25), half an oscillation of w = 10 in contact (pi/10 s),
    # s - 0.5 = -0.2 sin(10 (t - 0.25)), rebound at the same speed, free flight after
    res, t, out = _gap_bounce(dt=0.01)
    contact = [(e["t"], e["block"], e["from"], e["to"]) for e in res["events"]]
    tc = 0.25 + np.pi / 10.0
    assert [c[1:] for c in contact] == [("gap", "open", "contact"), ("gap", "contact", "open")]
    assert contact[0][0] == pytest.approx(0.25, abs=1e-9) and contact[1][0] == pytest.approx(tc, abs=1e-9)
    inside = (t > 0.25) & (t < tc)
    np.testing.assert_allclose(out["s"][inside], 0.5 - 0.2 * np.sin(10.0 * (t[inside] - 0.25)), atol=1e-8)
    assert out["v"][-1] == pytest.approx(2.0, abs=1e-7)
    assert out["s"][-1] == pytest.approx(0.5 + 2.0 * (1.0 - tc), abs=1e-7)


def test_elasto_gap_damping_dissipates_and_never_pulls():
    # with damping the rebound is slower than the impact; the contact force never pulls, so
    # the mass never decelerates on its way out (v never decreases once it moves away)
    res, t, out = _gap_bounce(d=8.0, dt=0.002)
    assert 0.0 < out["v"][-1] < 2.0
    assert np.all(np.diff(out["v"]) >= -1e-9)


def _backlash_swing(b=0.2, c=400.0, d=0.0, **kw):
    blocks = [blk("g", "RotFixed"), blk("bl", "ElastoBacklash", c=c, b=b, d=d), blk("J", "Inertia", w0=1.0)]
    conns = [pin("g", "flange", "bl", "a"), pin("bl", "b", "J", "flange")]
    return sensed(blocks, conns, {"phi": ("AngleSensor", "J", "flange"), "w": ("RotSpeedSensor", "J", "flange")},
                   **dict(dict(duration=1.0), **kw))


def test_elasto_backlash_free_play_events():
    # free rotation through the play (b/2 = 0.1 at 1 rad/s), half a period pi/20 of
    # w = sqrt(c/J) = 20 on each contact, 0.2 s across the play between them
    res, t, out = _backlash_swing(dt=0.01)
    h = np.pi / 20
    want = [(0.1, "free", "contact+"), (0.1 + h, "contact+", "free"), (0.3 + h, "free", "contact-"),
            (0.3 + 2 * h, "contact-", "free"), (0.5 + 2 * h, "free", "contact+"), (0.5 + 3 * h, "contact+", "free")]
    got = [(e["t"], e["from"], e["to"]) for e in res["events"] if e["block"] == "bl"]
    assert [g[1:] for g in got] == [w[1:] for w in want]
    assert max(abs(g[0] - w[0]) for g, w in zip(got, want)) < 1e-8
    free = np.abs(out["phi"]) < 0.1 - 1e-9
    np.testing.assert_allclose(np.abs(out["w"][free]), 1.0, atol=1e-7)     # no torque in the play


def test_elasto_backlash_damping_loses_energy_and_without_play_is_a_spring():
    _, _, out = _backlash_swing(d=5.0, dt=0.002)
    assert abs(out["w"][-1]) < 1.0
    res, t, out = _backlash_swing(b=0.0, c=25.0, dt=0.05, duration=2.0)
    assert res["events"] == []
    np.testing.assert_allclose(out["phi"], 0.2 * np.sin(5.0 * t), atol=1e-8)


def test_a_backlash_holding_a_massless_flange():
    # a constant torque T on a massless flange held by a backlash to the frame:
    # Delta = b/2 + T/c = 0.1 + 0.05
    blocks = [blk("T", "ConstantTorque", tau=0.5), blk("bl", "ElastoBacklash", c=10.0, b=0.2), blk("g", "RotFixed")]
    conns = [pin("T", "flange", "bl", "b"), pin("bl", "a", "g", "flange")]
    _, _, out = sensed(blocks, conns, {"phi": ("AngleSensor", "T", "flange")}, dt=0.5, duration=1.0)
    np.testing.assert_allclose(out["phi"], 0.15, rtol=1e-12)


# ---- massless nodes

def test_a_spring_holds_a_massless_flange_against_a_force():
    # F = 2 t on a massless flange held by a spring k = 4: s = F/k = t/2, v = 1/2
    blocks = [blk("F", "Force"), blk("k", "Spring", k=4.0), blk("g", "Fixed"), blk("r", "ramp", slope=2.0)]
    conns = [pin("F", "flange", "k", "b"), pin("k", "a", "g", "flange"), wire("r", "F")]
    _, t, out = sensed(blocks, conns, {"s": ("PositionSensor", "F", "flange")}, dt=0.1, duration=1.0)
    np.testing.assert_allclose(out["s"], 0.5 * t, atol=1e-14)


def test_a_massless_flange_driven_through_a_spring_moves_at_the_signal_rate_over_k():
    # as above: v = (dF/dt)/k = 2/4
    blocks = [blk("F", "Force"), blk("k", "Spring", k=4.0), blk("g", "Fixed"), blk("r", "ramp", slope=2.0)]
    conns = [pin("F", "flange", "k", "b"), pin("k", "a", "g", "flange"), wire("r", "F")]
    _, t, out = sensed(blocks, conns, {"v": ("SpeedSensor", "F", "flange")}, dt=0.1, duration=1.0)
    np.testing.assert_allclose(out["v"], 0.5, atol=1e-6)


def test_a_damper_in_series_with_a_spring_without_mass_creeps():
    # F -> spring k -> node -> damper d -> frame: the damper node creeps at F/d and the
    # force's flange stays F/k ahead of it
    F, k, d = 3.0, 6.0, 2.0
    blocks = [blk("F", "ConstantForce", F=F), blk("k", "Spring", k=k), blk("d", "Damper", d=d), blk("g", "Fixed")]
    conns = [pin("F", "flange", "k", "b"), pin("k", "a", "d", "b"), pin("d", "a", "g", "flange")]
    _, t, out = sensed(blocks, conns, {"sF": ("PositionSensor", "F", "flange"), "sd": ("PositionSensor", "d", "b"),
                                        "vd": ("SpeedSensor", "d", "b")}, dt=0.25)
    np.testing.assert_allclose(out["sd"], F / d * t, atol=1e-12)
    np.testing.assert_allclose(out["sF"], F / d * t + F / k, atol=1e-12)
    np.testing.assert_allclose(out["vd"], F / d)


def test_kelvin_voigt_creep():
    # F on a massless node with a spring-damper to the frame: s = F/k (1 - exp(-k t/d))
    blocks = [blk("F", "ConstantForce", F=3.0), blk("kv", "SpringDamper", k=6.0, d=2.0), blk("g", "Fixed")]
    conns = [pin("F", "flange", "kv", "b"), pin("kv", "a", "g", "flange")]
    _, t, out = sensed(blocks, conns, {"s": ("PositionSensor", "F", "flange")}, dt=0.25)
    np.testing.assert_allclose(out["s"], 0.5 * (1.0 - np.exp(-3.0 * t)), atol=1e-9)


@pytest.mark.parametrize("element, offset", [(blk("k", "Spring", k=10.0, s_rel0=0.3), 0.3), (blk("k", "Damper"), 0.0)])
def test_a_free_flange_follows_the_body_it_hangs_on(element, offset):
    # nothing acts on the free flange, so the element carries no force: a spring keeps its
    # rest length, a damper its relative position 0 (as in MSL; the former 1-D compiler
    # refused this as a massless_node)
    blocks = [blk("m", "Mass", s0=1.0, v0=2.0), element]
    _, t, out = sensed(blocks, [pin("m", "flange", "k", "a")], {"s": ("PositionSensor", "m", "flange"),
                                                                  "e": ("PositionSensor", "k", "b")}, dt=0.5, duration=1.0)
    np.testing.assert_allclose(out["s"], 1.0 + 2.0 * t, atol=1e-12)
    np.testing.assert_allclose(out["e"], out["s"] + offset, atol=1e-12)


def test_a_nonlinear_balance_on_a_massless_flange():
    # F = 0.5 on a massless flange held by Friction Fc = 1, vEps = 0.01: v = vEps atanh(F/Fc)
    # (a Newton solve); a force above Fc has no balance: an error
    blocks = [blk("F", "ConstantForce", F=0.5), blk("fr", "Friction", Fc=1.0, vEps=0.01)]
    conns = [pin("F", "flange", "fr", "flange")]
    _, t, out = sensed(blocks, conns, {"s": ("PositionSensor", "F", "flange"), "v": ("SpeedSensor", "F", "flange")},
                        dt=0.5, duration=1.0)
    v = 0.01 * np.arctanh(0.5)
    np.testing.assert_allclose(out["v"], v, rtol=1e-9)
    np.testing.assert_allclose(out["s"], v * t, rtol=1e-9)
    blocks[0] = blk("F", "ConstantForce", F=1.5)
    with pytest.raises(nc.SimulationError) as err:
        sensed(blocks, conns, {"v": ("SpeedSensor", "F", "flange")}, dt=0.5, duration=1.0)
    assert err.value.code == "island_unsolvable"


def test_a_gap_holding_a_massless_flange_switches_with_the_load():
    # a sine force on a massless flange held by a spring k = 5 and a gap c = 10 (closing for
    # s < 0): s = F/5 while pulling, F/15 while pushing into the gap
    blocks = [blk("F", "SineForce", Amplitude=2.0, Frequency=1.0), blk("gap", "ElastoGap", c=10.0, d=0.0),
              blk("k", "Spring", k=5.0), blk("g1", "Fixed"), blk("g2", "Fixed")]
    conns = [pin("F", "flange", "gap", "b"), pin("F", "flange", "k", "b"), pin("gap", "a", "g1", "flange"),
             pin("k", "a", "g2", "flange")]
    res, t, out = sensed(blocks, conns, {"s": ("PositionSensor", "F", "flange")}, duration=2.25)
    F = 2.0 * np.sin(2 * np.pi * t)
    np.testing.assert_allclose(out["s"], np.where(F >= 0, F / 5.0, F / 15.0), atol=1e-12)
    assert [e["to"] for e in res["events"]] == ["contact", "open", "contact", "open"]
    assert [e["t"] for e in res["events"]] == pytest.approx([0.5, 1.0, 1.5, 2.0], abs=1e-9)


def test_islands_run_side_by_side_as_alone():
    # a driven island and a massless-node island in one diagram give what each gives alone
    driven = ([blk("src", "ConstantSpeed", v=2.0), blk("k", "Spring", k=8.0), blk("m", "Mass", m=2.0)],
              [pin("src", "flange", "k", "a"), pin("k", "b", "m", "flange")], {"x": ("PositionSensor", "m", "flange")})
    creep = ([blk("F", "ConstantForce", F=3.0), blk("kv", "SpringDamper", k=6.0, d=2.0), blk("g", "Fixed")],
             [pin("F", "flange", "kv", "b"), pin("kv", "a", "g", "flange")], {"y": ("PositionSensor", "F", "flange")})
    _, _, both = sensed(driven[0] + creep[0], driven[1] + creep[1], {**driven[2], **creep[2]}, dt=0.1)
    for blocks, conns, sensors in (driven, creep):
        _, _, alone = sensed(blocks, conns, sensors, dt=0.1)
        for name in sensors:
            np.testing.assert_allclose(both[name], alone[name], atol=1e-9)


# ---- structural errors

_STRUCTURAL = {
    "floating_springs": ([blk("F", "ConstantForce", F=1.0), blk("k", "Spring"), blk("G", "ConstantForce", F=1.0)],
                         [pin("F", "flange", "k", "a"), pin("k", "b", "G", "flange")], "singular_island"),
    "forces_only": ([blk("F", "ConstantForce", F=1.0), blk("G", "ConstantForce", F=1.0)],
                    [pin("F", "flange", "G", "flange")], "singular_island"),
    "speed_on_fixed": ([blk("s", "ConstantSpeed"), blk("g", "Fixed")], [pin("s", "flange", "g", "flange")],
                       "conflicting_prescribed_motion"),
    "two_speeds": ([blk("s1", "ConstantSpeed"), blk("s2", "Speed"), blk("m", "Mass"), blk("one", "constant")],
                   [pin("s1", "flange", "m", "flange"), pin("s2", "flange", "m", "flange"), wire("one", "s2")],
                   "conflicting_prescribed_motion"),
    "gear_loop": ([blk("m1", "Inertia"), blk("m2", "Inertia"), blk("g1", "IdealGear", ratio=2.0),
                   blk("g2", "IdealGear", ratio=3.0)],
                  [pin("m1", "flange", "g1", "a"), pin("m1", "flange", "g2", "a"), pin("m2", "flange", "g1", "b"),
                   pin("m2", "flange", "g2", "b")], "inconsistent_rigid_connection"),
    "two_fixed": ([blk("g1", "Fixed"), blk("r", "Rod", ratio=2.0), blk("g2", "Fixed", s0=2.0)],
                  [pin("g1", "flange", "r", "a"), pin("r", "b", "g2", "flange")], "conflicting_fixed"),
    "friction_on_driven_only": ([blk("s", "ConstantSpeed"), blk("b", "Brake", fn_max=1.0), blk("one", "constant")],
                                [pin("s", "flange", "b", "flange"), wire("one", "b")], "singular_island"),
    "two_brakes": ([blk("J", "Inertia"), blk("b1", "RotBrake", fn_max=5.0), blk("b2", "RotBrake", fn_max=5.0),
                    blk("one", "constant")],
                   [pin("J", "flange", "b1", "flange"), pin("J", "flange", "b2", "flange"), wire("one", "b1"),
                    wire("one", "b2")], "singular_island"),
}


@pytest.mark.parametrize("case", sorted(_STRUCTURAL))
def test_structural_errors_of_a_mechanism_name_their_cause(case):
    blocks, conns, code = _STRUCTURAL[case]
    with pytest.raises((nc.SimulationError, nc.DiagramError)) as err:
        nc.simulate(diagram(blocks, conns, solver="ode45"))
    assert err.value.code == code
    assert err.value.block in {b["id"] for b in blocks}
    assert "circuit" not in err.value.message


def test_a_gap_that_opens_under_a_pulling_force_leaves_nothing_to_balance_it():
    blocks = [blk("F", "ConstantForce", F=1.0), blk("gap", "ElastoGap", c=10.0, d=0.0), blk("g", "Fixed")]
    conns = [pin("F", "flange", "gap", "b"), pin("gap", "a", "g", "flange")]
    with pytest.raises(nc.SimulationError) as err:
        nc.simulate(diagram(blocks, conns, solver="ode45"))
    assert err.value.code == "island_unsolvable"


# ---- properties

PROP = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROP
@given(r=st.floats(0.2, 5.0), J1=st.floats(0.1, 3.0), J2=st.floats(0.1, 3.0), c=st.floats(1.0, 50.0),
       w0=st.floats(-3.0, 3.0))
def test_a_gear_train_conserves_energy(r, J1, J2, c, w0):
    # J1 - gear r - J2 - spring c - frame: no loss, so (J1 + J2/r^2) w_a^2/2 + c phi_b^2/2 is constant
    blocks = [blk("J1", "Inertia", J=J1, w0=w0), blk("gr", "IdealGear", ratio=r), blk("J2", "Inertia", J=J2),
              blk("k", "RotSpring", c=c), blk("g", "RotFixed")]
    conns = [pin("J1", "flange", "gr", "a"), pin("gr", "b", "J2", "flange"), pin("J2", "flange", "k", "a"),
             pin("k", "b", "g", "flange")]
    _, _, out = sensed(blocks, conns, {"w": ("RotSpeedSensor", "J1", "flange"), "phi": ("AngleSensor", "J2", "flange")},
                        dt=0.02, duration=1.0)
    energy = 0.5 * (J1 + J2 / r ** 2) * out["w"] ** 2 + 0.5 * c * out["phi"] ** 2
    np.testing.assert_allclose(energy, energy[0], rtol=1e-7, atol=1e-10)


@PROP
@given(c=st.floats(10.0, 500.0), d=st.floats(0.0, 20.0), v0=st.floats(-5.0, -0.5), m=st.floats(0.2, 3.0))
def test_a_gap_never_adds_energy(c, d, v0, m):
    blocks = [blk("g", "Fixed"), blk("gap", "ElastoGap", c=c, d=d, s_rel0=0.5), blk("m", "Mass", m=m, s0=1.0, v0=v0)]
    conns = [pin("g", "flange", "gap", "a"), pin("gap", "b", "m", "flange")]
    _, _, out = sensed(blocks, conns, {"s": ("PositionSensor", "m", "flange"), "v": ("SpeedSensor", "m", "flange")},
                        dt=0.005, duration=1.5, relTol=1e-9, absTol=1e-11)
    energy = 0.5 * m * out["v"] ** 2 + 0.5 * c * np.clip(0.5 - out["s"], 0.0, None) ** 2
    assert np.all(np.diff(energy) <= 1e-6 * max(1.0, energy[0]))


def test_a_long_mass_integrates_its_centre_as_msl_does():
    # MSL's state is the centre s of a MassWithStopAndFriction (flanges at s -+ L/2): the
    # solver's tolerances weigh |s|, not the flange position s - L/2
    blocks = [blk("f", "Force"), blk("m", "MassWithStopAndFriction", m=1.0, L=3.0, smax=10.0, smin=-10.0, s0=0.25,
                                     v0=0.5, F_prop=0.1, F_Coulomb=0.0, F_Stribeck=0.0)]
    island = island_of(diagram(blocks, [pin("f", "flange", "m", "flange_a")], dt=0.05, duration=0.1, solver="ode45"))
    assert sorted(island.x0) == [0.25, 0.5]
