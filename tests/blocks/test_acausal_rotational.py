"""acausal_rotational: EMF and its translational twin TranslationalEMF (tested side by side),
an ideal electromechanical transducer between a circuit and a shaft (MSL RotationalEMF /
TranslationalEMF): ``v_p - v_n = k*w``, the shaft receives ``k*i``. The electrical pins
``p``/``n`` are real electrical pins; the closed forms below are those of a DC motor
(``L i' = V - R i - k w``, ``J w' = k i``). And a clutch chain conserves angular momentum."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import expm

import nflow_compat as nc
from tests.util import blk, diagram, pin, rec, wire

ROT = {"inertia": ("Inertia", "J", "w0"), "emf": "EMF", "speed": "RotSpeedSensor"}
TRANS = {"inertia": ("Mass", "m", "v0"), "emf": "TranslationalEMF", "speed": "SpeedSensor"}


def motor(lib, *, V, R, L, J, k, i0=0.0, duration=2.0, dt=0.1, solver="ode45"):
    """A series loop: voltage source V, resistor R, inductor L (None: none), a current
    sensor and the EMF, grounded at the source; the EMF drives the rotor inertia J.
    Records the loop current i and the rotor speed w."""
    kind, mass_key, _ = lib["inertia"]
    blocks = [blk("gnd", "Ground"), blk("emf", lib["emf"], k=k), blk("rotor", kind, **{mass_key: J}),
              blk("V", "ConstantVoltage", V=V), blk("R", "Resistor", R=R), blk("si", "CurrentSensor"),
              blk("sw", lib["speed"])]
    conns = [pin("V", "n", "gnd", "p"), pin("emf", "n", "gnd", "p"), pin("V", "p", "R", "p"),
             pin("si", "n", "emf", "p"), pin("emf", "flange", "rotor", "flange"), pin("sw", "flange", "rotor", "flange")]
    if L is None:
        conns.append(pin("R", "n", "si", "p"))
    else:
        blocks.append(blk("L", "Inductor", L=L, i0=i0))
        conns += [pin("R", "n", "L", "p"), pin("L", "n", "si", "p")]
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
    # the rotor spun by an initial speed drives a resistor R across p-n: i = -k w/R (the
    # EMF's current p -> n), so J w' = k i = -k^2 w / R  =>  w = w0 exp(-k^2 t/(R J)).
    blocks = [blk("gnd", "Ground"), blk("emf", "EMF", k=2.0), blk("rotor", "Inertia", J=4.0, w0=3.0),
              blk("R", "Resistor", R=0.5), blk("sw", "RotSpeedSensor")]
    conns = [pin("emf", "n", "gnd", "p"), pin("emf", "flange", "rotor", "flange"),
             pin("R", "n", "gnd", "p"), pin("R", "p", "emf", "p"), pin("sw", "flange", "rotor", "flange")]
    b, c = rec("sw", "w")
    res = nc.simulate(diagram(blocks + b, conns + c, dt=0.25, duration=2.0, solver="ode45",
                              relTol=1e-9, absTol=1e-12))
    t = np.asarray(res["time"])
    np.testing.assert_allclose(np.asarray(res["workspace"]["w"])[:, 0],
                               3.0 * np.exp(-4.0 * t / (0.5 * 4.0)), atol=1e-6)


def test_an_open_circuit_emf_measures_the_back_emf():
    # nothing but a voltmeter across p-n: no current, the rotor keeps w0 and v = k*w0
    blocks = [blk("gnd", "Ground"), blk("emf", "EMF", k=1.5), blk("rotor", "Inertia", J=1.0, w0=2.0),
              blk("vs", "VoltageSensor")]
    conns = [pin("emf", "n", "gnd", "p"), pin("emf", "flange", "rotor", "flange"),
             pin("vs", "p", "emf", "p"), pin("vs", "n", "gnd", "p")]
    b, c = rec("vs", "v")
    res = nc.simulate(diagram(blocks + b, conns + c, dt=0.5, duration=1.0, solver="ode45"))
    np.testing.assert_allclose(np.asarray(res["workspace"]["v"])[:, 0], 3.0, rtol=1e-12)


def test_an_emf_on_a_massless_shaft_is_solved_with_its_circuit():
    # one network for the circuit and the shaft: the damper's torque d*w balances the
    # EMF's k*i and V = R*i + k*w, so i = V/(R + k^2/d) and w = k*i/d (no state involved)
    V, R, k, d = 3.0, 2.0, 1.5, 0.5
    blocks = [blk("gnd", "Ground"), blk("emf", "EMF", k=k), blk("d", "RotDamper", d=d), blk("fix", "RotFixed"),
              blk("V", "ConstantVoltage", V=V), blk("R", "Resistor", R=R), blk("sw", "RotSpeedSensor")]
    conns = [pin("emf", "n", "gnd", "p"), pin("V", "n", "gnd", "p"), pin("V", "p", "R", "p"),
             pin("R", "n", "emf", "p"), pin("emf", "flange", "d", "a"), pin("d", "b", "fix", "flange"),
             pin("sw", "flange", "emf", "flange")]
    b, c = rec("sw", "w")
    res = nc.simulate(diagram(blocks + b, conns + c, dt=0.5, duration=1.0, solver="ode45"))
    i = V / (R + k * k / d)
    np.testing.assert_allclose(np.asarray(res["workspace"]["w"])[:, 0], k * i / d, rtol=1e-12)


# ----------------------------------------------------------------------------- Clutch

def column(result, name):
    return np.asarray(result["workspace"][name], dtype=float)[:, 0]


@settings(max_examples=8, deadline=None)
@given(w1=st.floats(-10, 10), w2=st.floats(-10, 10), j1=st.floats(0.2, 3), j2=st.floats(0.2, 3),
       freq=st.floats(0.1, 2), peak=st.floats(1, 2))
def test_a_closed_clutch_chain_conserves_angular_momentum(w1, w2, j1, j2, freq, peak):
    blocks = [blk("fn", "sine", Amplitude=1, Frequency=freq, Phase=1.0), blk("c", "Clutch", fn_max=5, peak=peak),
              blk("J1", "Inertia", J=j1, w0=w1), blk("J2", "Inertia", J=j2, w0=w2),
              blk("s1", "RotSpeedSensor"), blk("s2", "RotSpeedSensor")]
    conns = [wire("fn", "c"), pin("J1", "flange", "c", "a"), pin("c", "b", "J2", "flange"),
             pin("s1", "flange", "J1", "flange"), pin("s2", "flange", "J2", "flange")]
    for s, n in (("s1", "w1"), ("s2", "w2")):
        b, c = rec(s, n)
        blocks += b
        conns += c
    res = nc.simulate(diagram(blocks, conns, dt=0.02, duration=2.0, solver="ode45"))
    momentum = j1 * column(res, "w1") + j2 * column(res, "w2")
    assert np.allclose(momentum, j1 * w1 + j2 * w2, atol=1e-9 * (1 + abs(j1 * w1) + abs(j2 * w2)))
