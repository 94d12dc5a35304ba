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


# ----------------------------------------------------------------------------- bad circuits

def test_a_circuit_without_ground_names_its_blocks():
    blocks = [blk("V", "ConstantVoltage", V=1.0), blk("R", "Resistor", R=10.0)]
    with pytest.raises(nc.DiagramError) as err:
        simulate(blocks, links("V.p R.p", "V.n R.n"))
    assert err.value.code == "no_ground"
    assert "R, V" in str(err.value)
    assert err.value.block in ("R", "V")
    assert err.value.path == f"/blocks/{index_of(blocks, err.value.block)}"


def test_a_floating_part_beside_a_grounded_one_is_named_alone():
    blocks = [blk("gnd", "Ground"), blk("R0", "Resistor"), blk("V", "ConstantVoltage"), blk("R", "Resistor")]
    with pytest.raises(nc.DiagramError) as err:
        simulate(blocks, links("R0.p gnd.p", "R0.n gnd.p", "V.p R.p", "V.n R.n"))
    assert err.value.code == "no_ground"
    assert "R, V" in str(err.value) and "R0" not in str(err.value)


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


def test_a_capacitor_straight_across_a_voltage_source_is_index_two():
    # index 2, reduced structurally: the capacitor holds the source's 1 V (its v0 = 0
    # cannot hold, and says so) and carries no current (C dV/dt = 0)
    blocks = [blk("gnd", "Ground"), blk("V", "ConstantVoltage"), blk("C1", "Capacitor", C=1.0),
              blk("am", "CurrentSensor"), blk("vm", "VoltageSensor")]
    res = simulate(blocks, links("V.n gnd.p", "V.p am.p", "am.n C1.p", "C1.n gnd.p", "vm.p C1.p", "vm.n gnd.p"),
                   records=[("am", "i"), ("vm", "v")])
    np.testing.assert_allclose(np.asarray(res["workspace"]["v"])[:, 0], 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(res["workspace"]["i"])[:, 0], 0.0, atol=1e-12)
    assert res["warnings"] and res["warnings"][0].startswith("C1: initial value 0 contradicts")


# block type, param, a bad value
BAD_PARAMS = [
    ("Capacitor", "C", -1e-6), ("Capacitor", "C", 0.0), ("Inductor", "L", -1e-3), ("Inductor", "L", 0.0),
    ("HeatCapacitor", "C", 0.0), ("HeatCapacitor", "C", -2.0), ("Diode", "Is", 0.0), ("Diode", "Vt", -0.025),
    ("ZDiode", "Vt", 0.0), ("NPN", "Bf", 0.0), ("PNP", "Is", -1e-16), ("NMOS", "Beta", -1e-3), ("PMOS", "Beta", 0.0),
    ("IdealDiode", "Ron", -1e-3), ("IdealDiode", "Goff", -1e-6), ("IdealDiode", "Vknee", -0.7),
    ("IdealTransformer", "n", 0.0), ("ThermalResistor", "R", 0.0), ("TrapezoidVoltage", "Period", 0.0),
    ("TrapezoidCurrent", "Rising", -0.1), ("Resistor", "R", math.inf),
]


@pytest.mark.parametrize("block_type, param, value", BAD_PARAMS,
                         ids=[f"{t}.{p}={v:g}" for t, p, v in BAD_PARAMS])
def test_a_bad_parameter_is_a_param_range_error_at_its_json_pointer(block_type, param, value):
    # every pin on one node: the parameter check comes before any structural one
    thermal = block_types()[block_type].domain == "thermal"
    anchor = blk("fix", "FixedTemperature") if thermal else blk("gnd", "Ground")
    anchor_pin = "fix.port" if thermal else "gnd.p"
    pins = block_types()[block_type].pins      # the manifest's pins
    blocks = [anchor, blk("X", block_type, **{param: value})]
    with pytest.raises(nc.DiagramError) as err:
        simulate(blocks, links(*(f"X.{p} {anchor_pin}" for p in pins)))
    assert err.value.code == "param_range"
    assert (err.value.block, err.value.param, err.value.path) == ("X", param, f"/blocks/1/params/{param}")


# ----------------------------------------------------------------------------- start values

def _capacitor_triangle(v1, v2, v3):
    """C1 (a -> b), C2 (b -> ground) and C3 (a -> ground) form a loop; a resistor R
    discharges node a. v_C3 = v_C1 + v_C2 always."""
    blocks = [blk("gnd", "Ground"), blk("C1", "Capacitor", C=1.0, v0=v1), blk("C2", "Capacitor", C=2.0, v0=v2),
              blk("C3", "Capacitor", C=3.0, v0=v3), blk("R", "Resistor", R=1.0), blk("s3", "VoltageSensor"),
              blk("s1", "VoltageSensor")]
    connections = links("C1.p C3.p", "C1.n C2.p", "C2.n gnd.p", "C3.n gnd.p", "R.p C3.p", "R.n gnd.p",
                        "s3.p C3.p", "s3.n gnd.p", "s1.p C1.p", "s1.n C1.n")
    return simulate(blocks, connections, records=[("s3", "v3"), ("s1", "v1")], duration=0.2)


def test_consistent_start_values_of_a_capacitor_loop_give_no_warning():
    res = _capacitor_triangle(1.0, 2.0, 3.0)
    assert res["warnings"] == []
    assert recorded(res, "v3")[0] == pytest.approx(3.0, abs=1e-12)
    assert recorded(res, "v1")[0] == pytest.approx(1.0, abs=1e-12)


def test_a_contradicting_start_value_of_a_capacitor_loop_is_ignored_with_a_warning():
    # C1 and C2 are imposed first (element order); C3's v0 = 5 contradicts their sum 3
    res = _capacitor_triangle(1.0, 2.0, 5.0)
    assert len(res["warnings"]) == 1
    assert res["warnings"][0].startswith("C3: initial value 5 contradicts") and "imposes (3:" in res["warnings"][0]
    assert recorded(res, "v3")[0] == pytest.approx(3.0, abs=1e-12)
    assert recorded(res, "v1")[0] == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("i2, warned", [(0.5, False), (-0.5, True)])
def test_start_values_of_an_inductor_cut_set(i2, warned):
    # two inductors in series carry one current: L2's i0 is implied by L1's
    blocks = [blk("gnd", "Ground"), blk("R", "Resistor", R=2.0), blk("L1", "Inductor", L=1.0, i0=0.5),
              blk("L2", "Inductor", L=1.0, i0=i2), blk("cs", "CurrentSensor")]
    res = simulate(blocks, links("R.p L1.p", "L1.n L2.p", "L2.n cs.p", "cs.n gnd.p", "R.n gnd.p"),
                   records=[("cs", "i")], duration=0.5)
    assert bool(res["warnings"]) == warned
    # i = 0.5 exp(-R t/(L1 + L2)) either way
    np.testing.assert_allclose(recorded(res, "i"), 0.5 * np.exp(-np.asarray(res["time"])), atol=1e-8)


# ----------------------------------------------------------------------------- index 2

# a zero-voltage branch (ammeter, Short, HeatFlowSensor) closing a capacitor loop is index 2:
# the homogeneous constraint v_p = v_n on the states is reduced structurally


def test_an_ammeter_in_series_with_one_of_two_parallel_capacitors():
    # C1 || (ammeter + C2), discharged by R: v = 2 exp(-t/tau), tau = R (C1 + C2) = 2,
    # the ammeter reads C2 v' = -2 C2/tau exp(-t/tau)
    blocks = [blk("gnd", "Ground"), blk("C1", "Capacitor", C=1.0, v0=2.0), blk("C2", "Capacitor", C=3.0, v0=2.0),
              blk("cs", "CurrentSensor"), blk("R", "Resistor", R=0.5)]
    res = simulate(blocks, links("C1.n gnd.p", "C2.n gnd.p", "C1.p cs.p", "cs.n C2.p", "R.p C1.p", "R.n gnd.p"),
                   records=[("cs", "i")])
    t = np.asarray(res["time"])
    np.testing.assert_allclose(recorded(res, "i"), -3.0 * np.exp(-t / 2.0), atol=1e-8)


def test_a_heat_flow_sensor_between_two_heat_capacitors():
    # c1 and c2 (both at 350 K) joined by the sensor act as one capacity 4 cooled by G = 0.5
    # to 300 K: T = 300 + 50 exp(-G t/4); the sensor reads the flow into c2, 3 T'
    blocks = [blk("c1", "HeatCapacitor", C=1.0, T0=350.0), blk("c2", "HeatCapacitor", C=3.0, T0=350.0),
              blk("q", "HeatFlowSensor"), blk("G", "ThermalConductor", G=0.5), blk("amb", "FixedTemperature", T=300.0)]
    res = simulate(blocks, links("c1.port q.a", "q.b c2.port", "c1.port G.a", "G.b amb.port"), records=[("q", "Q")])
    t = np.asarray(res["time"])
    np.testing.assert_allclose(recorded(res, "Q"), -3.0 * 50.0 * 0.5 / 4.0 * np.exp(-0.5 * t / 4.0), atol=1e-8)


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
