"""engine.linearize: nflow's linmod and trim (nc.linmod, nc.trim, nflow-sim linmod|trim).
Expected matrices are worked out by hand from each diagram's equations (provenance
``analytic``, derivations beside each case), nflow's own page examples are ``doc-stated``."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from tests.util import blk, diagram, pin, wire

TOL = 1e-6


def port_in(id="u"):
    return blk(id, "labelSource", isExternalPort=True)


def port_out(id="y"):
    return blk(id, "labelSink")


def between(block, solver="ode45"):
    """labelSource u -> block -> labelSink y."""
    return diagram([port_in(), block, port_out()], [wire("u", block["id"]), wire(block["id"], "y")], solver=solver)


# ----------------------------------------------------------------------------- nflow's page examples (doc-stated)

def test_the_linmod_page_example():
    """linmod.md: stateSpace(A=-2, B=1, C=1, D=0) between an external labelSource and a
    labelSink gives A = -2, B = 1, C = 1, D = 0."""
    d = diagram([port_in(), blk("ss", "stateSpace", A=-2, B=1, C=1, D=0), port_out(), blk("sc", "scope")],
                [wire("u", "ss"), wire("ss", "y"), wire("ss", "sc")])
    A, B, C, D = nc.linmod(d)
    for got, want in zip((A, B, C, D), (-2.0, 1.0, 1.0, 0.0)):
        np.testing.assert_allclose(got, [[want]], atol=TOL)


def test_the_trim_page_example():
    """trim.md: the same model, trim(f, 0, 2) gives x = 1 (xdot = -2x + u = 0)."""
    d = between(blk("ss", "stateSpace", A=-2, B=1, C=1, D=0))
    x, u, y, dx = nc.trim(d, [0.0], [2.0])
    np.testing.assert_allclose(x, [1.0], atol=1e-12)
    np.testing.assert_allclose(u, [2.0])
    np.testing.assert_allclose(y, [1.0], atol=1e-12)
    assert abs(dx[0]) < 1e-10


# ----------------------------------------------------------------------------- linmod (analytic)

@pytest.mark.parametrize("zeta, omega", [(0.3, 2.0), (0.05, 10.0), (1.5, 0.4)])
def test_a_second_order_transfer_function_linearizes_to_its_companion_form(zeta, omega):
    """tf 1/(s^2 + 2 zeta omega s + omega^2) in nflow's controller canonical form (handlers.md:
    x0' = x1, x1' = u - omega^2 x0 - 2 zeta omega x1, y = x0): A = [[0, 1], [-omega^2,
    -2 zeta omega]], B = [[0], [1]], C = [[1, 0]], D = [[0]]."""
    model = nc.linmod(between(blk("g", "tf", Numerator=[1], Denominator=[1, 2 * zeta * omega, omega ** 2])))
    np.testing.assert_allclose(model.A, [[0, 1], [-omega ** 2, -2 * zeta * omega]], atol=TOL)
    np.testing.assert_allclose(model.B, [[0], [1]], atol=TOL)
    np.testing.assert_allclose(model.C, [[1, 0]], atol=TOL)
    np.testing.assert_allclose(model.D, [[0]], atol=TOL)
    assert [s.block for s in model.states] == ["g", "g"]
    assert [s.name for s in model.inputs] == ["u"] and [s.name for s in model.outputs] == ["y"]


def mass_spring_damper(m=2.0, k=8.0, d=0.5):
    """u -> Force on a Mass (m) tied to a Fixed flange by a Spring (k) and a Damper (d); a
    PositionSensor -> y. m s'' = u - k s - d s'."""
    blocks = [port_in(), blk("f", "Force"), blk("m", "Mass", m=m), blk("k", "Spring", k=k), blk("d", "Damper", d=d),
              blk("g", "Fixed"), blk("ps", "PositionSensor"), port_out()]
    conns = [wire("u", "f"), pin("f", "flange", "m", "flange"), pin("m", "flange", "k", "a"), pin("k", "b", "g", "flange"),
             pin("m", "flange", "d", "a"), pin("d", "b", "g", "flange"), pin("m", "flange", "ps", "flange"), wire("ps", "y")]
    return diagram(blocks, conns, solver="ode45")


@settings(max_examples=15, deadline=None)
@given(st.floats(0.1, 20), st.floats(0.1, 100), st.floats(0.0, 10))
def test_an_acausal_mass_spring_damper_linearizes_to_its_equations(m, k, d):
    """State (s, v): A = [[0, 1], [-k/m, -d/m]], B = [[0], [1/m]], C = [[1, 0]], D = [[0]]."""
    A, B, C, D = nc.linmod(mass_spring_damper(m, k, d))
    np.testing.assert_allclose(A, [[0, 1], [-k / m, -d / m]], atol=TOL, rtol=1e-9)
    np.testing.assert_allclose(B, [[0], [1 / m]], atol=TOL, rtol=1e-9)
    np.testing.assert_allclose(C, [[1, 0]], atol=TOL)
    np.testing.assert_allclose(D, [[0]], atol=TOL)


def pendulum(g=9.81, L=0.5, theta0=0.0, solver="ode45"):
    """theta'' = -(g/L) sin(theta) with two integrators: w' = -(g/L) sin(theta) (declared
    first), theta' = w; y = theta."""
    blocks = [blk("w", "integrator"), blk("theta", "integrator", InitialCondition=theta0),
              blk("s", "trigFunction", Function="sin"), blk("k", "gain", Gain=-g / L), port_out()]
    conns = [wire("w", "theta"), wire("theta", "s"), wire("s", "k"), wire("k", "w"), wire("theta", "y")]
    return diagram(blocks, conns, solver=solver)


@pytest.mark.parametrize("theta, sign", [(0.0, -1.0), (math.pi, 1.0)])
def test_a_nonlinear_pendulum_about_its_equilibria(theta, sign):
    """About theta = 0: w' = -(g/L) theta (stable); about theta = pi: w' = +(g/L)(theta - pi).
    With x = (w, theta): A = [[0, -+g/L], [1, 0]], no inputs, C = [[0, 1]]."""
    g, L = 9.81, 0.5
    model = nc.linmod(pendulum(g, L), x0=[0.0, theta])
    np.testing.assert_allclose(model.A, [[0, sign * g / L], [1, 0]], atol=TOL)
    assert model.B.shape == (2, 0) and model.D.shape == (1, 0)
    np.testing.assert_allclose(model.C, [[0, 1]], atol=TOL)
    assert [s.name for s in model.states] == ["w", "theta"]          # diagram order, not by name
    # the same about the post-INIT state: theta0 = pi from the integrator's InitialCondition
    np.testing.assert_allclose(nc.linmod(pendulum(g, L, theta0=theta)).A, model.A, atol=TOL)


def test_a_diagram_without_state_gives_d_only():
    model = nc.linmod(between(blk("g", "gain", Gain=-3.5), solver="discrete"))
    assert model.A.shape == (0, 0) and model.B.shape == (0, 1) and model.C.shape == (1, 0)
    np.testing.assert_allclose(model.D, [[-3.5]], atol=TOL)


def test_a_fixed_step_diagram_is_linearized_under_the_variable_step_right_hand_side():
    """Under 'discrete' the integrator is nflow's forward Euler in UPDATE; linmod still sees
    its continuous state (y = x, x' = u: A = 0, B = 1, C = 1)."""
    A, B, C, D = nc.linmod(between(blk("i", "integrator"), solver="discrete"))
    np.testing.assert_allclose(np.hstack([A, B, C.T, D]), [[0, 1, 1, 0]], atol=TOL)


def test_nested_subsystem_states_and_wide_outputs():
    """An integrator inside a subsystem counts; a 2-wide labelSink gives two outputs:
    y = [x, 3u] for x' = u - x: A = -1, B = 1, C = [[1], [0]], D = [[0], [3]]."""
    body = {"blocks": [blk("in1", "labelSource", isExternalPort=True), blk("s", "sum", Inputs="+-", inputs=2),
                       blk("i", "integrator"), blk("out1", "labelSink", isExternalPort=True)],
            "connections": [wire("in1", "s", 0, 0), wire("i", "s", 0, 1), wire("s", "i"), wire("i", "out1")]}
    blocks = [port_in(), blk("sub", "subsystem", inputs=1, outputs=1, externalInputs=["in1"], externalOutputs=["out1"],
                             subsystem=body),
              blk("g", "gain", Gain=3.0), blk("mx", "mux", inputs=2), port_out()]
    conns = [wire("u", "sub"), wire("u", "g"), wire("sub", "mx", 0, 0), wire("g", "mx", 0, 1), wire("mx", "y")]
    model = nc.linmod(diagram(blocks, conns, solver="ode45"))
    np.testing.assert_allclose(model.A, [[-1]], atol=TOL)
    np.testing.assert_allclose(model.B, [[1]], atol=TOL)
    np.testing.assert_allclose(model.C, [[1], [0]], atol=TOL)
    np.testing.assert_allclose(model.D, [[0], [3]], atol=TOL)
    assert [s.block for s in model.states] == ["sub/i"]
    assert [s.name for s in model.outputs] == ["y[0]", "y[1]"]


def test_a_routing_label_source_is_not_an_input():
    """goto/from through labelSink/labelSource (no isExternalPort) is internal wiring."""
    blocks = [port_in(), blk("tag", "labelSink", GotoTag="a"), blk("from", "labelSource", GotoTag="a"),
              blk("i", "integrator"), port_out()]
    conns = [wire("u", "tag"), wire("from", "i"), wire("i", "y")]
    model = nc.linmod(diagram(blocks, conns, solver="ode45"))
    assert [s.name for s in model.inputs] == ["u"]
    assert [s.name for s in model.outputs] == ["tag", "y"]


def test_the_operating_point_must_fit():
    d = mass_spring_damper()
    for kwargs, param in (({"x0": [1.0]}, "x0"), ({"u0": [1.0, 2.0]}, "u0"), ({"x0": [0.0, math.nan]}, "x0")):
        with pytest.raises(nc.DiagramError) as info:
            nc.linmod(d, **kwargs)
        assert info.value.code == "bad_operating_point" and info.value.param == param


# ----------------------------------------------------------------------------- trim

def test_trim_of_a_linear_model_is_one_newton_step():
    """x' = A x + B u0 = 0 at x = -A^-1 B u0: the mass-spring-damper under a force 2 rests
    at s = 2/k."""
    point = nc.trim(mass_spring_damper(k=8.0), u0=[2.0])
    assert point.converged and point.iterations == 1
    np.testing.assert_allclose(point.x, [0.25, 0.0], atol=1e-12)
    np.testing.assert_allclose(point.y, [0.25], atol=1e-12)
    assert np.abs(point.dx).max() < 1e-9


def tank(q=0.3, k=0.6, h0=1.0):
    """A tank: h' = q - k sqrt(h) (the inflow q from an external port): rest at h = (q/k)^2."""
    blocks = [port_in("q"), blk("s", "sum", Inputs="+-", inputs=2), blk("h", "integrator", InitialCondition=h0),
              blk("r", "sqrt"), blk("k", "gain", Gain=k), port_out("level")]
    conns = [wire("q", "s", 0, 0), wire("k", "s", 0, 1), wire("s", "h"), wire("h", "r"), wire("r", "k"),
             wire("h", "level")]
    return diagram(blocks, conns, solver="ode45")


@pytest.mark.parametrize("start", [0.1, 0.2, 0.5])
def test_trim_finds_a_nonlinear_equilibrium_from_a_nearby_start(start):
    point = nc.trim(tank(q=0.3, k=0.6), x0=[start], u0=[0.3])
    assert point.converged and point.iterations > 1
    np.testing.assert_allclose(point.x, [0.25], rtol=1e-10)
    assert np.abs(point.dx).max() < 1e-10


def test_trim_of_the_pendulum_from_near_the_top_finds_the_top():
    point = nc.trim(pendulum(), x0=[0.1, 3.0])
    assert point.converged
    np.testing.assert_allclose(point.x, [0.0, math.pi], atol=1e-10)


def test_trim_without_an_equilibrium_says_so():
    """x' = u0 = 1 has none: A = 0 is singular; the start comes back with a warning."""
    point = nc.trim(between(blk("i", "integrator")), u0=[1.0])
    assert not point.converged and point.dx[0] == pytest.approx(1.0)
    assert any("no equilibrium" in w for w in point.warnings)


# ----------------------------------------------------------------------------- the command line

def cli(*args, stdin=None):
    done = subprocess.run([sys.executable, "-m", "nflow_compat", *args], capture_output=True, text=True, input=stdin,
                          timeout=120)
    return done.returncode, json.loads(done.stdout), done.stderr


def test_the_linmod_and_trim_commands(tmp_path):
    path = tmp_path / "msd.json"
    path.write_text(json.dumps(mass_spring_damper(k=8.0)))
    code, out, _ = cli("linmod", str(path))
    assert code == 0 and out["status"] == "ok"
    np.testing.assert_allclose(out["A"], [[0, 1], [-4, -0.25]], atol=TOL)
    assert out["inputs"] == [{"name": "u", "block": "u"}] and out["outputs"] == [{"name": "y", "block": "y"}]
    assert len(out["states"]) == 2 and all(s["block"] for s in out["states"])
    code, out, _ = cli("trim", str(path), "--u0", "2", "--x0", "[0.1, 0]")
    assert code == 0 and out["converged"] and out["iterations"] == 1
    np.testing.assert_allclose(out["x"], [0.25, 0.0], atol=1e-12)
    code, out, err = cli("linmod", str(path), "--x0", "1,2,3")
    assert code == 2 and out["error"]["code"] == "bad_operating_point" and "x0 has 3" in err
