"""EMF / TranslationalEMF: an ideal electromechanical transducer.

nflow's manifests give EMF's electrical pins ``p``/``n`` the mechanical domain, so a
circuit is written in the force-voltage (impedance) analogy: the relative speed of ``p``
against ``n`` is the current, a torque (force) is a voltage, an Inertia (Mass) is an
inductance, a RotDamper (Damper) a resistance and a ConstantTorque a voltage source.
The closed forms below are those of a DC motor (MSL ``Electrical.Machines``-style
``L i' = V - R i - k w``, ``J w' = k i``)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import expm

import nflow_compat as nc
from tests.util import blk, diagram


def pin(a, ap, b, bp):
    return {"from": a, "fromPin": ap, "to": b, "toPin": bp}


def rec(src, name):
    return [blk(f"rec_{name}", "toWorkspace", VariableName=name, SaveFormat="Array")], \
        [{"from": src, "to": f"rec_{name}", "fromIndex": 0, "toIndex": 0}]


ROT = {"inertia": ("Inertia", "J", "w0"), "damper": "RotDamper", "fixed": "RotFixed",
       "source": ("ConstantTorque", "tau"), "emf": "EMF", "speed": "RotSpeedSensor"}
TRANS = {"inertia": ("Mass", "m", "v0"), "damper": "Damper", "fixed": "Fixed",
         "source": ("ConstantForce", "F"), "emf": "TranslationalEMF", "speed": "SpeedSensor"}


def motor(lib, *, V, R, L, J, k, i0=0.0, duration=2.0, dt=0.1, solver="ode45"):
    """Voltage source V, resistance R, inductance L (None: no inductance) in one loop with
    the EMF; the EMF drives the rotor inertia J. Records current i and rotor speed w."""
    kind, mass_key, v0_key = lib["inertia"]
    src, src_key = lib["source"]
    blocks = [blk("gnd", lib["fixed"]), blk("emf", lib["emf"], k=k),
              blk("rotor", kind, **{mass_key: J}),
              blk("si", lib["speed"]), blk("sw", lib["speed"])]
    conns = [pin("emf", "n", "gnd", "flange"), pin("emf", "flange", "rotor", "flange"),
             pin("si", "flange", "emf", "p"), pin("sw", "flange", "rotor", "flange")]
    if V:
        blocks.append(blk("V", src, **{src_key: V}))
        conns.append(pin("V", "flange", "emf", "p"))
    if R:
        blocks.append(blk("R", lib["damper"], d=R))
        conns += [pin("R", "a", "gnd", "flange"), pin("R", "b", "emf", "p")]
    if L is not None:
        blocks.append(blk("L", kind, **{mass_key: L, v0_key: i0}))
        conns.append(pin("L", "flange", "emf", "p"))
    for sensor, name in (("si", "i"), ("sw", "w")):
        b, c = rec(sensor, name)
        blocks += b
        conns += c
    res = nc.simulate(diagram(blocks, conns, dt=dt, duration=duration, solver=solver,
                              relTol=1e-9, absTol=1e-12))
    t = np.asarray(res["time"])
    return t, np.asarray(res["workspace"]["i"])[:, 0], np.asarray(res["workspace"]["w"])[:, 0]


@pytest.mark.parametrize("lib", [ROT, TRANS], ids=["EMF", "TranslationalEMF"])
@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_dc_motor_without_inductance_spins_up_exponentially(lib, solver):
    # i = (V - k w)/R, J w' = k i  =>  w = (V/k) (1 - exp(-k^2 t / (R J))), i = (V/R) exp(...)
    V, R, J, k = 12.0, 2.0, 0.5, 0.8
    t, i, w = motor(lib, V=V, R=R, L=None, J=J, k=k, solver=solver)
    decay = np.exp(-k * k * t / (R * J))
    np.testing.assert_allclose(w, V / k * (1 - decay), atol=1e-6)
    np.testing.assert_allclose(i, V / R * decay, atol=1e-6)


@pytest.mark.parametrize("lib", [ROT, TRANS], ids=["EMF", "TranslationalEMF"])
def test_dc_motor_with_inductance_matches_the_matrix_exponential(lib):
    # x = [i, w]: x' = A x + b,  A = [[-R/L, -k/L], [k/J, 0]],  b = [V/L, 0]
    V, R, L, J, k = 10.0, 1.5, 0.2, 0.4, 0.7
    t, i, w = motor(lib, V=V, R=R, L=L, J=J, k=k, duration=8.0, dt=0.25)
    A = np.array([[-R / L, -k / L], [k / J, 0.0]])
    b = np.array([V / L, 0.0])
    xs = np.array([np.linalg.solve(A, (expm(A * tk) - np.eye(2)) @ b) for tk in t])
    np.testing.assert_allclose(i, xs[:, 0], atol=1e-6)
    np.testing.assert_allclose(w, xs[:, 1], atol=1e-6)
    # steady state: no current, back-emf balances the source
    assert abs(w[-1] - V / k) < 0.05 * V / k


@settings(max_examples=15, deadline=None)
@given(L=st.floats(0.1, 5.0), J=st.floats(0.1, 5.0), k=st.floats(0.1, 3.0), i0=st.floats(-3.0, 3.0))
def test_the_transducer_is_lossless(L, J, k, i0):
    # no source, no resistance: L i^2/2 + J w^2/2 is conserved; i = i0 cos(W t) with W = k/sqrt(L J)
    t, i, w = motor(ROT, V=0.0, R=0.0, L=L, J=J, k=k, i0=i0, duration=1.0)
    energy = 0.5 * L * i ** 2 + 0.5 * J * w ** 2
    np.testing.assert_allclose(energy, 0.5 * L * i0 ** 2, atol=1e-6 * (1 + L * i0 ** 2))
    np.testing.assert_allclose(i, i0 * np.cos(k / math.sqrt(L * J) * t), atol=1e-5 * (1 + abs(i0)))


def test_a_generator_brakes_its_shaft():
    # flange spun by an initial speed, p loaded by a resistance R: i = -k w/R... the rotor
    # loses speed as J w' = k i = -k^2 w / R  =>  w = w0 exp(-k^2 t/(R J)).
    blocks = [blk("gnd", "RotFixed"), blk("emf", "EMF", k=2.0), blk("rotor", "Inertia", J=4.0, w0=3.0),
              blk("R", "RotDamper", d=0.5), blk("sw", "RotSpeedSensor")]
    conns = [pin("emf", "n", "gnd", "flange"), pin("emf", "flange", "rotor", "flange"),
             pin("R", "a", "gnd", "flange"), pin("R", "b", "emf", "p"), pin("sw", "flange", "rotor", "flange")]
    b, c = rec("sw", "w")
    res = nc.simulate(diagram(blocks + b, conns + c, dt=0.25, duration=2.0, solver="ode45",
                              relTol=1e-9, absTol=1e-12))
    t = np.asarray(res["time"])
    np.testing.assert_allclose(np.asarray(res["workspace"]["w"])[:, 0],
                               3.0 * np.exp(-4.0 * t / (0.5 * 4.0)), atol=1e-6)


def test_an_open_circuit_is_singular():
    # p connected to nothing but the EMF: its current (speed) is undetermined
    blocks = [blk("gnd", "RotFixed"), blk("emf", "EMF"), blk("rotor", "Inertia", J=1.0)]
    conns = [pin("emf", "n", "gnd", "flange"), pin("emf", "flange", "rotor", "flange")]
    with pytest.raises(nc.NFlowError) as err:
        nc.simulate(diagram(blocks, conns, solver="ode45"))
    assert err.value.code in ("massless_node", "singular_island")
