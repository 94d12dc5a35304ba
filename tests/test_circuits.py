"""Electrical and thermal networks: typed errors of bad circuits (each naming its blocks),
the start-value rule of capacitor loops and inductor cut-sets, and regressions of the
acausal core found while writing the analytic goldens (fixtures/electrical, fixtures/thermal)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import nflow_compat as nc
from nflow_compat.manifests import block_types
from tests.util import blk, diagram, pin, rec, wire


def links(*pairs):
    """Physical connections written ``'block.pin block.pin'``."""
    return [pin(*a.split("."), *b.split(".")) for a, b in (pair.split() for pair in pairs)]


def simulate(blocks, connections, records=(), solver="ode45", duration=1.0, dt=0.1, **extra):
    """Run a circuit; ``records``: (sensor id, variable name) pairs. Returns the result."""
    for sensor, name in records:
        b, c = rec(sensor, name)
        blocks, connections = blocks + b, connections + c
    return nc.simulate(diagram(blocks, connections, dt=dt, duration=duration, solver=solver,
                              relTol=1e-10, absTol=1e-12, **extra))


def recorded(result, name) -> np.ndarray:
    return np.asarray(result["workspace"][name], dtype=float)[:, 0]


def blocks_named(message: str) -> set:
    return set(message.split("blocks involved: ")[-1].split(", ")) if "blocks involved: " in message else set()


def index_of(blocks, block_id) -> int:
    return next(k for k, b in enumerate(blocks) if b["id"] == block_id)


@pytest.mark.parametrize("second", [1.0, 2.0], ids=["equal", "contradicting"])
def test_a_loop_of_voltage_sources_names_every_source(second):
    blocks = [blk("gnd", "Ground"), blk("V1", "ConstantVoltage", V=1.0), blk("V2", "ConstantVoltage", V=second),
              blk("R", "Resistor")]
    with pytest.raises(nc.DiagramError) as err:
        simulate(blocks, links("V1.n gnd.p", "V2.n gnd.p", "V1.p V2.p", "R.p V1.p", "R.n gnd.p"))
    assert err.value.code == "singular_circuit"
    assert blocks_named(str(err.value)) == {"V1", "V2"}
    assert err.value.block in ("V1", "V2")
    assert err.value.path == f"/blocks/{index_of(blocks, err.value.block)}"


def test_a_cut_set_of_current_sources_names_them():
    blocks = [blk("gnd", "Ground"), blk("I1", "ConstantCurrent", I=1.0), blk("I2", "ConstantCurrent", I=2.0),
              blk("R", "Resistor")]
    with pytest.raises(nc.DiagramError) as err:
        simulate(blocks, links("I1.p gnd.p", "I1.n I2.p", "I2.n R.p", "R.n gnd.p"))
    assert err.value.code == "singular_circuit"
    assert blocks_named(str(err.value)) == {"I1", "I2"}


def test_an_op_amp_without_feedback_is_singular():
    blocks = [blk("gnd", "Ground"), blk("V", "ConstantVoltage", V=1.0), blk("op", "IdealOpAmp"),
              blk("R1", "Resistor"), blk("RL", "Resistor")]
    with pytest.raises(nc.DiagramError) as err:
        simulate(blocks, links("V.n gnd.p", "V.p op.in_p", "op.in_n R1.p", "R1.n gnd.p", "op.out RL.p",
                               "RL.n gnd.p"))
    assert err.value.code == "singular_circuit"
    assert "op" in blocks_named(str(err.value))
    assert "RL" not in blocks_named(str(err.value))   # the output side is not in conflict


# ----------------------------------------------------------------------------- regressions

def test_non_linear_elements_on_the_ground_node():
    # a Diode and a VariableConductor with a pin on Ground (the ground node has no balance
    # row: their stamps into it are dropped, the structural check must skip them too)
    Is, Vt, V, G = 1e-9, 0.025, 0.5, 0.25
    blocks = [blk("gnd", "Ground"), blk("V", "ConstantVoltage", V=V), blk("cs", "CurrentSensor"),
              blk("D", "Diode", Is=Is, Vt=Vt), blk("g", "constant", Value=G), blk("VG", "VariableConductor"),
              blk("cg", "CurrentSensor")]
    connections = links("V.n gnd.p", "V.p cs.p", "cs.n D.p", "D.n gnd.p", "V.p cg.p", "cg.n VG.p", "VG.n gnd.p")
    res = simulate(blocks, connections + [wire("g", "VG")], records=[("cs", "i"), ("cg", "ig")], duration=0.2)
    np.testing.assert_allclose(recorded(res, "i"), Is * math.expm1(V / Vt), rtol=1e-12)
    np.testing.assert_allclose(recorded(res, "ig"), G * V, rtol=1e-12)


def _switched_resistor(solver):
    """V = 2 -> R = 4 -> IdealSwitch (closed by a step at t = 0.3) -> CurrentSensor -> Ground."""
    blocks = [blk("gnd", "Ground"), blk("V", "ConstantVoltage", V=2.0), blk("R", "Resistor", R=4.0),
              blk("sw", "IdealSwitch"), blk("cs", "CurrentSensor"), blk("st", "step", Time=0.3)]
    connections = links("V.n gnd.p", "V.p R.p", "R.n sw.p", "sw.n cs.p", "cs.n gnd.p") + [wire("st", "sw")]
    return simulate(blocks, connections, records=[("cs", "i")], solver=solver, duration=0.5)


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_an_ideal_switch_logs_its_mode_change(solver):
    res = _switched_resistor(solver)
    assert res["events"] == [{"t": 0.3, "block": "sw", "kind": "mode", "from": "off", "to": "on"}]
    # open: a conductance Goff = 1e-5 in series; closed: a resistance Ron = 1e-5 (MSL's defaults)
    t, i = np.asarray(res["time"]), recorded(res, "i")
    np.testing.assert_allclose(i, np.where(t < 0.3, 2.0 / (4.0 + 1e5), 2.0 / (4.0 + 1e-5)), rtol=1e-10)


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_a_stateless_circuit_sees_every_crossing_of_its_control_signal(solver):
    # an IdealSwitch closed while a sine control exceeds 0.5, in an island with no state
    # (scipy's solvers jump straight to the end without a state: every crossing was missed)
    blocks = [blk("gnd", "Ground"), blk("V", "ConstantVoltage", V=1.0), blk("R", "Resistor", R=1.0),
              blk("sw", "IdealSwitch"), blk("cs", "CurrentSensor"), blk("ctl", "sine", Amplitude=1.0, Frequency=1.0)]
    connections = links("V.n gnd.p", "V.p R.p", "R.n sw.p", "sw.n cs.p", "cs.n gnd.p") + [wire("ctl", "sw")]
    res = simulate(blocks, connections, records=[("cs", "i")], solver=solver, duration=2.0, dt=0.05)
    assert [e["t"] for e in res["events"]] == pytest.approx([1 / 12, 5 / 12, 13 / 12, 17 / 12], abs=1e-9)
    assert [(e["from"], e["to"]) for e in res["events"]] == [("off", "on"), ("on", "off")] * 2
    t = np.asarray(res["time"])
    closed = np.sin(2 * math.pi * t) > 0.5
    np.testing.assert_allclose(recorded(res, "i"), np.where(closed, 1 / (1 + 1e-5), 1 / (1 + 1e5)), rtol=1e-10)


@pytest.mark.parametrize("solver", ["ode45", "dae"])
@pytest.mark.parametrize("A, f, R, Ron, Goff, Vknee", [(5.0, 1.3, 10.0, 1e-3, 1e-4, 0.0),
                                                       (10.0, 1.0, 100.0, 1e-2, 1e-4, 0.7)])
def test_a_stateless_rectifier_switches_where_its_curve_parameter_crosses_zero(A, f, R, Ron, Goff, Vknee, solver):
    # no capacitor: the island has no state. At each crossing s is ~0 in both modes and
    # rounding may give it opposite signs: the second case hits such a tie at its first
    # turn-on (the mode iteration used to ping-pong there: event_iteration).
    # off: i = Goff vs/(1 + Goff R); on: i = (Goff Vknee Ron + vs - Vknee)/(Ron + R); both
    # give s = 0 at vs = Vknee (1 + Goff R)
    blocks = [blk("gnd", "Ground"), blk("src", "SineVoltage", Amplitude=A, Frequency=f),
              blk("D", "IdealDiode", Ron=Ron, Goff=Goff, Vknee=Vknee), blk("R", "Resistor", R=R),
              blk("cs", "CurrentSensor")]
    res = simulate(blocks, links("src.n gnd.p", "src.p D.p", "D.n cs.p", "cs.n R.p", "R.n gnd.p"),
                   records=[("cs", "i")], solver=solver, duration=2.0, dt=0.05)
    threshold = Vknee * (1 + Goff * R)
    rise = math.asin(threshold / A) / (2 * math.pi * f)
    # a zero knee starts on (a tie at t = 0 is on, as in MSL): the first event is a turn-off
    ons, offs = [k / f + rise for k in range(3)], [(k + 0.5) / f - rise for k in range(3)]
    expected = sorted([(t, "on") for t in ons if 0 < t < 2] + [(t, "off") for t in offs if t < 2])
    assert [e["t"] for e in res["events"]] == pytest.approx([t for t, _ in expected], abs=1e-9)
    assert [e["to"] for e in res["events"]] == [to for _, to in expected]
    t = np.asarray(res["time"])
    vs = A * np.sin(2 * math.pi * f * t)
    i = np.where(vs >= threshold, (Goff * Vknee * Ron + vs - Vknee) / (Ron + R), Goff * vs / (1 + Goff * R))
    np.testing.assert_allclose(recorded(res, "i"), i, atol=1e-12)
