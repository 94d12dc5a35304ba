"""The planar multibody blocks (acausal_planar): closed forms, conservation laws, constraint
residuals, order independence and errors. Every expected value is a closed form stated next
to it (the goldens' come from tests/blocks/planar_fixtures.py)."""
import math
import random

import numpy as np
import orjson
import pytest
from hypothesis import assume, given, settings, strategies as st
from scipy.integrate import quad
from scipy.special import ellipk

import nflow_compat as nc
from nflow_compat.blocks.handlers import supported_types
from nflow_compat.errors import DiagramError, SimulationError
from nflow_compat.physical.planar import TYPES
from tests import goldens
from tests.blocks import planar_fixtures
from tests.blocks.planar_fixtures import G, sensed
from tests.util import blk, pin

SOLVERS = ("dae", "ode45")
TIGHT = {"relTol": 1e-10, "absTol": 1e-12}


def simulate(blocks, wires, dt=0.01, duration=2.0, solver="dae", **extra):
    d = {"blocks": blocks, "connections": wires, "sampleTime": dt, "duration": duration, "solver": solver,
         "variables": {}, **extra}
    result = nc.simulate(d)
    out = {name: np.asarray(values, dtype=float)[:, 0] for name, values in result["workspace"].items()}
    out["t"] = np.asarray(result["time"])
    out["warnings"] = result["warnings"]
    return out


def motion(blocks, wires, body, axes=("x", "y")):
    """Position and velocity sensors on ``body`` recorded as body.x, body.vx, ..."""
    for axis in axes:
        sensed(blocks, wires, f"{body}.{axis}", "PlanarPositionSensor", {"a": (body, "com")}, axis=axis)
        sensed(blocks, wires, f"{body}.v{axis}", "PlanarVelocitySensor", {"a": (body, "com")}, axis=axis)


# ----------------------------------------------------------------------------- goldens

def test_the_planar_goldens_are_their_closed_forms():
    for name, make in planar_fixtures.FIXTURES.items():
        path = planar_fixtures.FOLDER / f"{name}.json"
        assert path.read_bytes() == planar_fixtures.encode(make()), \
            f"{path}: run python -m tests.blocks.planar_fixtures"


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("name", sorted(planar_fixtures.FIXTURES))
def test_goldens_under_both_solvers(name, solver):
    fixture = goldens.load(planar_fixtures.FOLDER / f"{name}.json")
    result = orjson.loads(nc.simulate_json(orjson.dumps(dict(fixture["diagram"], solver=solver))))
    assert not goldens.mismatches(fixture["expect"], result, fixture["tolerance"])


def test_every_planar_type_runs_and_has_a_golden():
    listed = {row["type"] for row in supported_types()}
    assert set(TYPES) <= listed and len(TYPES) == 19
    used = set()
    for name in planar_fixtures.FIXTURES:
        used |= {b["type"] for b in goldens.load(planar_fixtures.FOLDER / f"{name}.json")["diagram"]["blocks"]}
    assert set(TYPES) <= used


# ----------------------------------------------------------------------------- closed forms

def pendulum(length, theta0, mass=1.0):
    blocks = [blk("world", "PlanarWorld"), blk("rod", "PlanarDistance", length=length),
              blk("bob", "PlanarPointMass", m=mass, x0=length * math.sin(theta0), y0=-length * math.cos(theta0))]
    return blocks, [pin("world", "frame", "rod", "a"), pin("rod", "b", "bob", "com")]


@pytest.mark.parametrize("solver", SOLVERS)
def test_large_amplitude_pendulum_period(solver):
    # T = 4 K(k) / sqrt(g/L), k = sin(theta0/2) (complete elliptic integral of the first kind)
    length, theta0 = 1.2, 2.5
    blocks, wires = pendulum(length, theta0)
    sensed(blocks, wires, "x", "PlanarPositionSensor", {"a": ("bob", "com")}, axis="x")
    r = simulate(blocks, wires, dt=0.001, duration=9.0, solver=solver, **TIGHT)
    x, t = r["x"], r["t"]
    down = np.nonzero((x[:-1] > 0) & (x[1:] <= 0))[0]      # x passes 0 at the bottom, where x'' = 0
    crossings = t[down] + x[down] / (x[down] - x[down + 1]) * (t[down + 1] - t[down])
    period = 4 * ellipk(math.sin(theta0 / 2) ** 2) / math.sqrt(G / length)
    assert len(crossings) >= 2
    assert np.allclose(np.diff(crossings), period, rtol=1e-7, atol=0)


def slider_crank(crank, rod, theta0, omega0, m_pin=1.0, m_slider=0.5):
    """A crank (rod ``crank`` from the fixed origin to a point mass B), a connecting rod to a
    point mass C that a PlanarPrismatic keeps on the x-axis; B starts at angle theta0 turning
    at omega0, C with the speed the crank relation gives it. No gravity."""
    s, c = math.sin(theta0), math.cos(theta0)
    root = math.sqrt(rod ** 2 - (crank * s) ** 2)
    # x_C = r cos(theta) + sqrt(l^2 - r^2 sin^2(theta)), differentiated
    vc = -crank * s * omega0 - crank ** 2 * s * c * omega0 / root
    blocks = [blk("O", "PlanarFixed"), blk("crank", "PlanarDistance", length=crank),
              blk("rod", "PlanarDistance", length=rod), blk("slide", "PlanarPrismatic"),
              blk("B", "PlanarPointMass", m=m_pin, x0=crank * c, y0=crank * s, vx0=-crank * s * omega0,
                    vy0=crank * c * omega0),
              blk("C", "PlanarPointMass", m=m_slider, x0=crank * c + root, vx0=vc)]
    wires = [pin("O", "frame", "crank", "a"), pin("crank", "b", "B", "com"), pin("B", "com", "rod", "a"),
             pin("rod", "b", "C", "com"), pin("O", "frame", "slide", "a"), pin("slide", "b", "C", "com")]
    return blocks, wires


@pytest.mark.parametrize("solver", SOLVERS)
def test_slider_crank_follows_the_crank_relation(solver):
    crank, rod = 0.5, 1.2
    blocks, wires = slider_crank(crank, rod, 0.3, 4.0)
    for body in ("B", "C"):
        motion(blocks, wires, body)
    r = simulate(blocks, wires, dt=0.01, duration=5.0, solver=solver)
    assert r["warnings"] == []                      # the start state meets the joints
    theta = np.arctan2(r["B.y"], r["B.x"])
    assert np.unwrap(theta)[-1] - theta[0] > 4 * math.pi     # the crank turns round (passing both dead centres)
    relation = crank * np.cos(theta) + np.sqrt(rod ** 2 - (crank * np.sin(theta)) ** 2)
    assert np.max(np.abs(r["C.x"] - relation)) <= 1e-9
    assert np.max(np.abs(r["C.y"])) <= 1e-12
    assert np.max(np.abs(np.hypot(r["B.x"], r["B.y"]) - crank)) <= 1e-9


def four_bar(theta, crank_speed, lengths=(1.0, 3.2, 2.0, 3.0), masses=(1.0, 1.0)):
    """Grashof crank-rocker from point masses and rods: A at the origin (PlanarWorld), D fixed
    at (ground, 0); AB = crank, BC = coupler, CD = rocker. B starts at angle theta, turning at
    crank_speed; C at the assembly above AD and at the speed the loop allows."""
    crank, coupler, rocker, ground = lengths
    b = np.array([crank * math.cos(theta), crank * math.sin(theta)])
    d = np.array([ground, 0.0])
    gap = np.linalg.norm(d - b)
    along = (coupler ** 2 - rocker ** 2 + gap ** 2) / (2 * gap)
    unit = (d - b) / gap
    c = b + along * unit + math.sqrt(coupler ** 2 - along ** 2) * np.array([-unit[1], unit[0]])
    vb = crank_speed * np.array([-b[1], b[0]])
    # C moves on its circle around D with the speed that keeps BC: (c - b).(vc - vb) = 0, vc ⟂ (c - d)
    tangent = np.array([-(c - d)[1], (c - d)[0]])
    vc = tangent * ((c - b) @ vb) / ((c - b) @ tangent)
    blocks = [blk("world", "PlanarWorld"), blk("D", "PlanarFixed", x=ground),
              blk("AB", "PlanarDistance", length=crank), blk("BC", "PlanarDistance", length=coupler),
              blk("CD", "PlanarDistance", length=rocker),
              blk("B", "PlanarPointMass", m=masses[0], x0=b[0], y0=b[1], vx0=vb[0], vy0=vb[1]),
              blk("C", "PlanarPointMass", m=masses[1], x0=c[0], y0=c[1], vx0=vc[0], vy0=vc[1])]
    wires = [pin("world", "frame", "AB", "a"), pin("AB", "b", "B", "com"), pin("BC", "a", "B", "com"),
             pin("BC", "b", "C", "com"), pin("CD", "a", "C", "com"), pin("CD", "b", "D", "frame")]
    return blocks, wires


def loop_lengths(blocks, wires):
    sensed(blocks, wires, "AB", "PlanarDistanceSensor", {"a": ("world", "frame"), "b": ("B", "com")})
    sensed(blocks, wires, "BC", "PlanarDistanceSensor", {"a": ("B", "com"), "b": ("C", "com")})
    sensed(blocks, wires, "CD", "PlanarDistanceSensor", {"a": ("C", "com"), "b": ("D", "frame")})


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_four_bar_closes_its_loop(solver):
    blocks, wires = four_bar(1.0, 6.0)
    loop_lengths(blocks, wires)
    motion(blocks, wires, "B")
    r = simulate(blocks, wires, dt=0.01, duration=6.0, solver=solver)
    assert r["warnings"] == []
    for name, length in (("AB", 1.0), ("BC", 3.2), ("CD", 2.0)):
        assert np.max(np.abs(r[name] - length)) <= 1e-9
    assert np.unwrap(np.arctan2(r["B.y"], r["B.x"]))[-1] > 1.0 + 2 * math.pi   # the crank turns round


def test_a_massless_frame_between_joints_follows_them():
    # PlanarPrismatic (x) to a frame without mass, a PlanarRevolute to a body: the body slides
    # along x at its start speed (no force along x), and the frame goes with it
    blocks = [blk("world", "PlanarWorld"), blk("slide", "PlanarPrismatic"), blk("pin", "PlanarRevolute"),
              blk("b", "PlanarBody", x0=0.5, vx0=1.0)]
    wires = [pin("world", "frame", "slide", "a"), pin("slide", "b", "pin", "a"), pin("pin", "b", "b", "com")]
    motion(blocks, wires, "b")
    sensed(blocks, wires, "frame.x", "PlanarPositionSensor", {"a": ("pin", "a")}, axis="x")
    r = simulate(blocks, wires, dt=0.1, duration=2.0)
    assert np.allclose(r["b.x"], 0.5 + r["t"], atol=1e-12, rtol=0)
    assert np.allclose(r["frame.x"], r["b.x"], atol=1e-12, rtol=0)
    assert np.max(np.abs(r["b.y"])) <= 1e-12


def test_what_a_frame_without_a_coordinate_reads():
    # a fixed frame: its position, no speed; a point mass's angle: 0 (it has no orientation)
    blocks = [blk("f", "PlanarFixed", x=2.0, y=-1.0), blk("m", "PlanarPointMass", vx0=1.0)]
    wires = []
    sensed(blocks, wires, "fx", "PlanarPositionSensor", {"a": ("f", "frame")}, axis="x")
    sensed(blocks, wires, "fv", "PlanarVelocitySensor", {"a": ("f", "frame")}, axis="y")
    sensed(blocks, wires, "fa", "PlanarAccelerationSensor", {"a": ("f", "frame")}, axis="x")
    sensed(blocks, wires, "phi", "PlanarPositionSensor", {"a": ("m", "com")}, axis="phi")
    sensed(blocks, wires, "w", "PlanarVelocitySensor", {"a": ("m", "com")}, axis="omega")
    sensed(blocks, wires, "gap", "PlanarDistanceSensor", {"a": ("f", "frame"), "b": ("m", "com")})
    r = simulate(blocks, wires, dt=0.5, duration=1.0)
    assert list(r["fx"]) == [2.0] * 3 and list(r["fv"]) == [0.0] * 3 and list(r["fa"]) == [0.0] * 3
    assert list(r["phi"]) == [0.0] * 3 and list(r["w"]) == [0.0] * 3
    assert np.allclose(r["gap"], np.hypot(2.0 - r["t"], 1.0), atol=1e-12, rtol=0)


def test_start_values_off_the_joints_are_moved_onto_them_with_a_warning():
    blocks, wires = pendulum(1.0, 0.0)
    blocks[2]["params"].update(x0=0.0, y0=-1.3)          # the rod is 1 m long
    sensed(blocks, wires, "y", "PlanarPositionSensor", {"a": ("bob", "com")}, axis="y")
    r = simulate(blocks, wires, dt=0.1, duration=0.2)
    assert np.allclose(r["y"], -1.0, atol=1e-12, rtol=0)
    assert any("bob" in w and "did not satisfy the joints" in w for w in r["warnings"])


def test_a_fixed_step_solver_also_meets_the_joints():
    blocks, wires = four_bar(0.5, 4.0)
    loop_lengths(blocks, wires)
    r = simulate(blocks, wires, dt=0.01, duration=2.0, solver="discrete")
    for name, length in (("AB", 1.0), ("BC", 3.2), ("CD", 2.0)):
        assert np.max(np.abs(r[name] - length)) <= 1e-9


# ----------------------------------------------------------------------------- properties

def energies(r, masses, gravity=G, springs=(), inertias=()):
    """Kinetic and potential (gravity, springs) energy from the recorded motion: ``masses``
    body -> m; ``springs`` (c, body) to the origin; ``inertias`` (I, body) (records body.w)."""
    kinetic, potential = np.zeros(r["t"].size), np.zeros(r["t"].size)
    for body, m in masses.items():
        kinetic += 0.5 * m * (r[f"{body}.vx"] ** 2 + r[f"{body}.vy"] ** 2)
        potential += m * gravity * r[f"{body}.y"]
    for inertia, body in inertias:
        kinetic += 0.5 * inertia * r[f"{body}.w"] ** 2
    for c, body in springs:
        potential += 0.5 * c * (r[f"{body}.x"] ** 2 + r[f"{body}.y"] ** 2)
    return kinetic, potential


def assert_conserved(kinetic, potential):
    # drift relative to the energy that moves around in the run
    e = kinetic + potential
    assert np.max(np.abs(e - e[0])) <= 1e-6 * np.max(kinetic)


def double_pendulum(m1, m2, l1, l2, theta1, theta2):
    x1, y1 = l1 * math.sin(theta1), -l1 * math.cos(theta1)
    blocks = [blk("world", "PlanarWorld"), blk("rod1", "PlanarDistance", length=l1),
              blk("rod2", "PlanarDistance", length=l2), blk("m1", "PlanarPointMass", m=m1, x0=x1, y0=y1),
              blk("m2", "PlanarPointMass", m=m2, x0=x1 + l2 * math.sin(theta2), y0=y1 - l2 * math.cos(theta2))]
    wires = [pin("world", "frame", "rod1", "a"), pin("rod1", "b", "m1", "com"), pin("m1", "com", "rod2", "a"),
             pin("rod2", "b", "m2", "com")]
    return blocks, wires


@settings(max_examples=4, deadline=None)
@given(m1=st.floats(0.2, 3), m2=st.floats(0.2, 3), l1=st.floats(0.3, 2), l2=st.floats(0.3, 2),
       theta1=st.floats(-2.5, 2.5), theta2=st.floats(-2.5, 2.5), solver=st.sampled_from(SOLVERS))
def test_a_double_pendulum_conserves_energy_and_its_rods(m1, m2, l1, l2, theta1, theta2, solver):
    assume(abs(theta1) + abs(theta2) > 0.1)          # it moves
    blocks, wires = double_pendulum(m1, m2, l1, l2, theta1, theta2)
    motion(blocks, wires, "m1")
    motion(blocks, wires, "m2")
    r = simulate(blocks, wires, dt=0.02, duration=10.0, solver=solver, **TIGHT)
    assert_conserved(*energies(r, {"m1": m1, "m2": m2}))
    assert np.max(np.abs(np.hypot(r["m1.x"], r["m1.y"]) - l1)) <= 1e-9
    assert np.max(np.abs(np.hypot(r["m2.x"] - r["m1.x"], r["m2.y"] - r["m1.y"]) - l2)) <= 1e-9


def rolling_wheel_with_spring(c):
    # a wheel on level ground tied to the origin by a PlanarSpring, started off centre
    blocks = [blk("world", "PlanarWorld"), blk("ground", "PlanarFixed"),
              blk("wheel", "PlanarRollingWheel", radius=0.3), blk("spring", "PlanarSpring", c=c),
              blk("b", "PlanarBody", m=2.0, I=0.1, x0=0.5, y0=0.3)]
    wires = [pin("wheel", "a", "b", "com"), pin("ground", "frame", "spring", "a"), pin("spring", "b", "b", "com")]
    return blocks, wires


# name -> (mechanism, masses, gravity, springs, inertias) for ``energies``
CONSERVATIVE = {
    "pendulum": (lambda: pendulum(1.0, 2.8), {"bob": 1.0}, G, (), ()),
    "slider_crank": (lambda: slider_crank(0.5, 1.2, 0.3, 4.0), {"B": 1.0, "C": 0.5}, 0.0, (), ()),
    "four_bar": (lambda: four_bar(1.0, 6.0), {"B": 1.0, "C": 1.0}, G, (), ()),
    "rolling_wheel_with_spring": (lambda: rolling_wheel_with_spring(20.0), {"b": 2.0}, G, ((20.0, "b"),),
                                  ((0.1, "b"),)),
}


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("name", sorted(CONSERVATIVE))
def test_conservative_mechanisms_keep_their_energy(name, solver):
    make, masses, gravity, springs, inertias = CONSERVATIVE[name]
    blocks, wires = make()
    for body in masses:
        motion(blocks, wires, body)
    for _, body in inertias:
        sensed(blocks, wires, f"{body}.w", "PlanarVelocitySensor", {"a": (body, "com")}, axis="phi")
    r = simulate(blocks, wires, dt=0.02, duration=10.0, solver=solver, **TIGHT)
    assert_conserved(*energies(r, masses, gravity, springs, inertias))


@settings(max_examples=6, deadline=None)
@given(theta=st.floats(0, 2 * math.pi), speed=st.floats(-8, 8), m1=st.floats(0.1, 5), m2=st.floats(0.1, 5),
       solver=st.sampled_from(SOLVERS + ("ode4",)))
def test_a_four_bar_meets_its_rods_at_default_tolerances(theta, speed, m1, m2, solver):
    blocks, wires = four_bar(theta, speed, masses=(m1, m2))
    loop_lengths(blocks, wires)
    r = simulate(blocks, wires, dt=0.01, duration=3.0, solver=solver)
    for name, length in (("AB", 1.0), ("BC", 3.2), ("CD", 2.0)):
        assert np.max(np.abs(r[name] - length)) <= 1e-9


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 10 ** 6))
def test_results_do_not_depend_on_the_order_of_blocks_or_connections(seed):
    blocks, wires = four_bar(0.7, 5.0)
    loop_lengths(blocks, wires)
    motion(blocks, wires, "C")
    d = {"blocks": blocks, "connections": wires, "sampleTime": 0.05, "duration": 2.0, "solver": "dae",
         "variables": {}}
    base = nc.simulate(d)
    rng = random.Random(seed)
    shuffled = dict(d, blocks=rng.sample(blocks, len(blocks)),
                    connections=[dict(c) for c in rng.sample(wires, len(wires))])
    for c in shuffled["connections"]:
        if "fromPin" in c and rng.random() < 0.5:      # physical connections are undirected
            c["from"], c["to"], c["fromPin"], c["toPin"] = c["to"], c["from"], c["toPin"], c["fromPin"]
    assert nc.simulate(shuffled)["workspace"] == base["workspace"]


# ----------------------------------------------------------------------------- errors

def error(blocks, wires, kind, **extra):
    with pytest.raises(kind) as info:
        simulate(blocks, wires, dt=0.1, duration=1.0, **extra)
    return info.value


def test_an_inconsistent_loop_names_its_joints():
    # a point mass on a 1 m rod from the origin and on a slide along y = 3: no such point
    blocks = [blk("O", "PlanarFixed"), blk("rod", "PlanarDistance"), blk("P", "PlanarPointMass", y0=1.0),
              blk("F", "PlanarFixed", x=5.0, y=3.0), blk("slide", "PlanarPrismatic")]
    wires = [pin("O", "frame", "rod", "a"), pin("rod", "b", "P", "com"), pin("F", "frame", "slide", "a"),
             pin("slide", "b", "P", "com")]
    err = error(blocks, wires, DiagramError)
    assert err.code == "planar_overconstrained" and "rod" in err.message and "slide" in err.message
    assert err.block in ("rod", "slide") and err.path.startswith("/blocks/")


def test_a_redundant_but_consistent_loop_runs():
    # two revolutes in parallel pin the same body: one of them is implied by the other
    blocks = [blk("world", "PlanarWorld"), blk("j1", "PlanarRevolute"), blk("j2", "PlanarRevolute"),
              blk("b", "PlanarBody", I=0.5), blk("motor", "PlanarTorque", tau=2.0)]
    wires = [pin("world", "frame", "j1", "a"), pin("j1", "b", "b", "com"), pin("world", "frame", "j2", "a"),
             pin("j2", "b", "b", "com"), pin("motor", "a", "b", "com")]
    sensed(blocks, wires, "w", "PlanarVelocitySensor", {"a": ("b", "com")}, axis="phi")
    sensed(blocks, wires, "y", "PlanarPositionSensor", {"a": ("b", "com")}, axis="y")
    r = simulate(blocks, wires, dt=0.1, duration=1.0)
    assert np.allclose(r["w"], 2.0 / 0.5 * r["t"], atol=1e-9, rtol=0) and np.max(np.abs(r["y"])) <= 1e-12


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_singular_configuration_stops_the_run_with_its_time_and_joints(solver):
    # crank and connecting rod of equal length r: when the crank is vertical the slider sits on
    # the crank's pivot and the joints no longer determine the motion. No force acts, so
    # (m_B + 4 m_C sin^2 theta) r^2 theta'^2 = const gives the time theta reaches pi/2.
    r_, theta0, omega0, m_b, m_c = 1.0, 0.3, 2.0, 1.0, 0.5
    blocks, wires = slider_crank(r_, r_, theta0, omega0, m_b, m_c)
    inertia = (lambda th: m_b + 4 * m_c * math.sin(th) ** 2)
    when = quad(lambda th: math.sqrt(inertia(th) / inertia(theta0)) / omega0, theta0, math.pi / 2)[0]
    with pytest.raises(SimulationError) as info:
        simulate(blocks, wires, dt=0.01, duration=3.0, solver=solver, **TIGHT)
    err = info.value
    assert err.code == "planar_singular"
    assert {"crank", "rod", "slide"} <= set(err.message.split("joints ")[1].split(")")[0].split(", "))
    t_reported = float(err.message.split("t = ")[1].split(" ")[0])
    assert abs(t_reported - when) <= 1e-6


@pytest.mark.parametrize("blocks, wires, code, where", [
    ([blk("m", "PlanarPointMass"), blk("tq", "PlanarTorque", tau=1.0)], [pin("tq", "a", "m", "com")],
     "planar_undetermined", "m"),
    ([blk("f", "PlanarForce", fx=1.0), blk("s", "PlanarSpring")], [pin("f", "a", "s", "a")],
     "planar_undetermined", None),
    ([blk("w1", "PlanarWorld"), blk("w2", "PlanarWorld", gravity=1.0)], [], "gravity_conflict", "w2"),
    ([blk("f1", "PlanarFixed"), blk("f2", "PlanarFixed", x=1.0)], [pin("f1", "frame", "f2", "frame")],
     "fixed_conflict", "f2"),
    ([blk("b1", "PlanarBody"), blk("b2", "PlanarBody", x0=1.0)], [pin("b1", "com", "b2", "com")],
     "weld_conflict", "b2"),
    ([blk("m", "PlanarPointMass"), blk("rod", "PlanarDistance")],
     [pin("rod", "a", "m", "com"), pin("rod", "b", "m", "com")], "planar_overconstrained", "rod"),
    ([blk("m", "PlanarPointMass", m=0)], [], "param_range", "m"),
    ([blk("m", "PlanarPointMass"), blk("p", "PlanarPrismatic", dx=0, dy=0)], [pin("p", "b", "m", "com")],
     "param_range", "p"),
    ([blk("m", "PlanarPointMass"), blk("s", "PlanarPositionSensor", axis="z")], [pin("s", "a", "m", "com")],
     "param_value", "s"),
])
def test_bad_planar_diagrams_are_typed_diagram_errors(blocks, wires, code, where):
    err = error(blocks, wires, DiagramError)
    assert err.code == code
    if where is not None:
        assert err.block == where


def test_a_sensor_on_nothing_is_reported():
    blocks = [blk("m", "PlanarPointMass"), blk("s", "PlanarPositionSensor")]
    err = error(blocks, [], SimulationError)
    assert err.code == "sensor_unattached" and err.block == "s"
