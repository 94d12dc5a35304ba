"""The acausal core (nflow_compat.physical.acausal) through electrical and thermal diagrams:
typed errors of bad circuits (each naming its blocks), the start-value rule of capacitor
loops and inductor cut-sets, index-2 circuits, signal inputs read under every solver,
switching elements at their switching point, laws every network obeys (hypothesis), and
regressions found while writing the analytic goldens (fixtures/acausal_electrical,
fixtures/acausal_thermal)."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings, strategies as st

import nflow_compat as nc
from nflow_compat.manifests import block_types
from nflow_compat.physical.electrical import GMIN
from tests.rectifiers import diode_current, rectifier, rectifier_reference
from tests.util import blk, diagram, links, pin, rec, record, wire


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


_NO_FEEDBACK = {
    # a follower whose output only drives its load: in_n is held by R1, in_p by V
    "output to a load": "V.n gnd.p, V.p op.in_p, op.in_n R1.p, R1.n gnd.p, op.out RL.p, RL.n gnd.p",
    # an inverting amplifier without its feedback resistor
    "inverting": "V.n gnd.p, V.p R1.p, R1.n op.in_n, op.in_p gnd.p, op.out RL.p, RL.n gnd.p",
    # the output connected to nothing
    "open output": "V.n gnd.p, V.p op.in_p, op.in_n R1.p, R1.n gnd.p, RL.p op.in_n, RL.n gnd.p",
}


@pytest.mark.parametrize("case", sorted(_NO_FEEDBACK))
def test_an_op_amp_without_feedback_is_named_with_its_own_code(case):
    # the op-amp's own equation (in_p.v = in_n.v) is over-determined and its output free:
    # the matching's over- and under-determined parts meet in it (a neighbouring resistor
    # whose node row is in conflict was named before)
    blocks = [blk("gnd", "Ground"), blk("V", "ConstantVoltage", V=1.0), blk("R1", "Resistor"), blk("op", "IdealOpAmp"),
              blk("RL", "Resistor")]
    with pytest.raises(nc.DiagramError) as err:
        simulate(blocks, links(*_NO_FEEDBACK[case].split(", ")))
    assert err.value.code == "opamp_no_feedback"
    assert (err.value.block, err.value.path) == ("op", "/blocks/3")
    assert "op: an ideal op-amp without feedback" in err.value.message


def test_an_op_amp_with_feedback_beside_a_loop_of_voltage_sources_is_not_blamed():
    # a follower (out -> in_n) is fine; the two sources in parallel are the conflict
    blocks = [blk("gnd", "Ground"), blk("V1", "ConstantVoltage", V=1.0), blk("V2", "ConstantVoltage", V=2.0),
              blk("op", "IdealOpAmp"), blk("RL", "Resistor")]
    with pytest.raises(nc.DiagramError) as err:
        simulate(blocks, links("V1.n gnd.p", "V2.n gnd.p", "V1.p V2.p", "V1.p op.in_p", "op.in_n op.out", "op.out RL.p",
                               "RL.n gnd.p"))
    assert err.value.code == "singular_circuit" and err.value.block in ("V1", "V2")
    assert blocks_named(str(err.value)) == {"V1", "V2"}


# sensor type, its pins, the block to hang it off
_SENSORS = [("CurrentSensor", ("p", "n")), ("VoltageSensor", ("p", "n")), ("PotentialSensor", ("p",)),
            ("TemperatureSensor", ("port",)), ("RelTemperatureSensor", ("a", "b")), ("HeatFlowSensor", ("a", "b"))]


@pytest.mark.parametrize("sensor, pins", _SENSORS, ids=[s for s, _ in _SENSORS])
def test_a_sensor_connected_to_nothing_is_unattached(sensor, pins):
    # beside a working circuit: its island is the sensor alone (no_ground or a singular
    # network before, named after the sensor but not saying what is wrong)
    blocks = [blk("gnd", "Ground"), blk("V", "ConstantVoltage"), blk("R", "Resistor"), blk("s", sensor), record("w", "y")]
    with pytest.raises(nc.SimulationError) as err:
        simulate(blocks, links("V.n gnd.p", "V.p R.p", "R.n gnd.p") + [wire("s", "w")])
    assert err.value.code == "sensor_unattached"
    assert (err.value.block, err.value.path) == ("s", "/blocks/3")
    assert err.value.message == "sensor 's' is not connected to any circuit or thermal element"
    if len(pins) == 2:       # its two pins joined to each other only: the same
        blocks[3] = blk("s", sensor)
        with pytest.raises(nc.SimulationError) as err:
            simulate(blocks, links("V.n gnd.p", "V.p R.p", "R.n gnd.p", f"s.{pins[0]} s.{pins[1]}") + [wire("s", "w")])
        assert err.value.code == "sensor_unattached"


def test_an_ammeter_with_one_pin_on_the_circuit_reads_no_current():
    # an open branch carries no current (MSL: the free pin's flow is 0): it runs
    blocks = [blk("gnd", "Ground"), blk("V", "ConstantVoltage"), blk("R", "Resistor"), blk("cs", "CurrentSensor")]
    res = simulate(blocks, links("V.n gnd.p", "V.p R.p", "R.n gnd.p", "cs.p R.p"), records=[("cs", "i")])
    np.testing.assert_array_equal(recorded(res, "i"), 0.0)


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
    np.testing.assert_allclose(recorded(res, "i"), Is * math.expm1(V / Vt) + GMIN * V, rtol=1e-12)
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


# --------------------------------------------------------------------------------------------------
# Index-2 circuits: a capacitor directly across a voltage source and an inductor in series
# with a current source. The constraint on the states is differentiated once (with the
# sources' exact time derivatives), so the capacitor current and the inductor voltage are the
# closed forms C·V'(t) and L·I'(t) under every solver; a signal-driven source in that place
# uses its signal's exact derivative, which the diagram's blocks declare (engine.rates).
# --------------------------------------------------------------------------------------------------

W = 2 * np.pi


def simulate_sensed(sensors: dict, blocks, conns, solver, **kw):
    for name, sensor in sensors.items():
        blocks.append(blk(f"rec_{name}", "toWorkspace", VariableName=name, SaveFormat="Array"))
        conns.append({"from": sensor, "to": f"rec_{name}", "fromIndex": 0, "toIndex": 0})
    res = nc.simulate(diagram(blocks, conns, dt=0.05, duration=1.0, solver=solver, **kw))
    return res, np.asarray(res["time"]), {n: np.asarray(res["workspace"][n])[:, 0] for n in sensors}


@pytest.mark.parametrize("solver", ["discrete", "ode4", "ode45", "dae"])
def test_a_capacitor_across_a_sine_source(solver):
    # v = 2 sin(2 pi t + 0.3) on C = 0.5 parallel to R = 4: the source current (p -> n
    # through the sensor into the load) is C v' + v/R
    blocks = [blk("V", "SineVoltage", Amplitude=2.0, Frequency=1.0, Phase=0.3), blk("C", "Capacitor", C=0.5, v0=0.0),
              blk("R", "Resistor", R=4.0), blk("G", "Ground"), blk("cs", "CurrentSensor"), blk("vs", "VoltageSensor")]
    conns = [pin("V", "p", "cs", "p"), pin("cs", "n", "C", "p"), pin("C", "n", "G", "p"), pin("V", "n", "G", "p"),
             pin("R", "p", "C", "p"), pin("R", "n", "G", "p"), pin("vs", "p", "C", "p"), pin("vs", "n", "G", "p")]
    res, t, out = simulate_sensed({"i": "cs", "v": "vs"}, blocks, conns, solver, relTol=1e-9, absTol=1e-12)
    v = 2 * np.sin(W * t + 0.3)
    tol = 1e-5 if solver in ("discrete", "ode4") else 1e-7
    np.testing.assert_allclose(out["v"], v, atol=tol)
    np.testing.assert_allclose(out["i"], 0.5 * 2 * W * np.cos(W * t + 0.3) + v / 4, atol=tol * 10)
    # the capacitor's v0 = 0 cannot hold (the source imposes 2 sin 0.3): said, not silently dropped
    assert any(w.startswith("C: initial value 0") for w in res["warnings"])


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_an_inductor_in_series_with_a_current_source(solver):
    # i = 3 sin(2 pi t) forced through L = 0.2: v_L = L i' = 0.2 * 3 * 2 pi cos(2 pi t)
    blocks = [blk("I", "SineCurrent", Amplitude=3.0, Frequency=1.0, Phase=0.0), blk("L", "Inductor", L=0.2, i0=0.0),
              blk("G", "Ground"), blk("vs", "VoltageSensor")]
    conns = [pin("I", "n", "L", "p"), pin("L", "n", "G", "p"), pin("I", "p", "G", "p"),
             pin("vs", "p", "L", "p"), pin("vs", "n", "G", "p")]
    _, t, out = simulate_sensed({"v": "vs"}, blocks, conns, solver, relTol=1e-9, absTol=1e-12)
    np.testing.assert_allclose(out["v"], 0.2 * 3 * W * np.cos(W * t), atol=1e-7)


@pytest.mark.parametrize("solver", ["ode4", "ode45", "dae"])
def test_a_capacitor_across_a_signal_driven_source(solver):
    # the same circuit as above, the voltage from a diagram sine through a gain: the
    # capacitor current C v' uses the signal's exact derivative (engine.rates)
    blocks = [blk("s", "sine", Amplitude=1.0, Frequency=1.0, Phase=0.3), blk("k", "gain", Gain=2.0),
              blk("V", "SignalVoltage"), blk("C", "Capacitor", C=0.5, v0=0.0), blk("R", "Resistor", R=4.0),
              blk("G", "Ground"), blk("cs", "CurrentSensor"), blk("vs", "VoltageSensor")]
    conns = [{"from": "s", "to": "k", "fromIndex": 0, "toIndex": 0}, {"from": "k", "to": "V", "fromIndex": 0,
                                                                      "toIndex": 0},
             pin("V", "p", "cs", "p"), pin("cs", "n", "C", "p"), pin("C", "n", "G", "p"), pin("V", "n", "G", "p"),
             pin("R", "p", "C", "p"), pin("R", "n", "G", "p"), pin("vs", "p", "C", "p"), pin("vs", "n", "G", "p")]
    _, t, out = simulate_sensed({"i": "cs", "v": "vs"}, blocks, conns, solver, relTol=1e-9, absTol=1e-12)
    v = 2 * np.sin(W * t + 0.3)
    tol = 1e-5 if solver == "ode4" else 1e-7   # the capacitor voltage is a state: RK4 at dt 0.05
    np.testing.assert_allclose(out["v"], v, atol=tol)
    np.testing.assert_allclose(out["i"], 0.5 * 2 * W * np.cos(W * t + 0.3) + v / 4, atol=tol * 10)


def test_a_signal_step_across_a_capacitor_moves_its_voltage_at_once():
    # 3 V from t = 0.5 on across C (|| R): v jumps with the source (an impulsive current),
    # then i = v/R = 0.75
    blocks = [blk("st", "step", Time=0.5), blk("k", "gain", Gain=3.0), blk("V", "SignalVoltage"),
              blk("C", "Capacitor", C=0.5, v0=0.0), blk("R", "Resistor", R=4.0), blk("G", "Ground"),
              blk("cs", "CurrentSensor"), blk("vs", "VoltageSensor")]
    conns = [{"from": "st", "to": "k", "fromIndex": 0, "toIndex": 0}, {"from": "k", "to": "V", "fromIndex": 0,
                                                                       "toIndex": 0},
             pin("V", "p", "cs", "p"), pin("cs", "n", "C", "p"), pin("C", "n", "G", "p"), pin("V", "n", "G", "p"),
             pin("R", "p", "C", "p"), pin("R", "n", "G", "p"), pin("vs", "p", "C", "p"), pin("vs", "n", "G", "p")]
    _, t, out = simulate_sensed({"i": "cs", "v": "vs"}, blocks, conns, "ode45")
    np.testing.assert_allclose(out["v"], np.where(t >= 0.5, 3.0, 0.0), atol=1e-12)
    np.testing.assert_allclose(out["i"], np.where(t >= 0.5, 0.75, 0.0), atol=1e-12)


def test_a_signal_with_no_derivative_across_a_capacitor_is_a_typed_error():
    blocks = [blk("s", "sine"), blk("sat", "saturation", UpperLimit=0.5, LowerLimit=-0.5), blk("V", "SignalVoltage"),
              blk("C", "Capacitor"), blk("G", "Ground")]
    conns = [{"from": "s", "to": "sat", "fromIndex": 0, "toIndex": 0}, {"from": "sat", "to": "V", "fromIndex": 0,
                                                                        "toIndex": 0},
             pin("V", "p", "C", "p"), pin("C", "n", "G", "p"), pin("V", "n", "G", "p")]
    with pytest.raises(nc.DiagramError) as err:
        nc.simulate(diagram(blocks, conns, solver="ode45"))
    assert err.value.code == "underivable_input" and err.value.block == "sat" and err.value.path == "/blocks/1"


def test_a_pulse_across_a_capacitor_is_refused_before_the_run():
    # a pulse's edges are no time events (nflow's handler): the solver would differentiate
    # across them, so it declares no derivative, and a source it drives cannot charge a
    # capacitor straight across it (C V' has no value at an edge)
    blocks = [blk("G", "Ground"), blk("p", "pulse", Amplitude=2.0, Period=0.1, Width=50.0), blk("V", "SignalVoltage"),
              blk("C", "Capacitor", C=1e-3), blk("R", "Resistor", R=10.0)]
    conns = [wire("p", "V"), *links("V.p C.p", "C.n G.p", "V.n G.p", "R.p C.p", "R.n G.p")]
    with pytest.raises(nc.DiagramError) as err:
        nc.simulate(diagram(blocks, conns, solver="ode45"))
    assert err.value.code == "underivable_input" and err.value.block == "p" and err.value.path == "/blocks/1"
    assert "a pulse block has no exact time derivative" in err.value.message


# ---- the differentiated constraint holds exactly
# The index reduction differentiates the constraint on the states (v_C = V(t)) to find the
# capacitor current; the constraint itself keeps holding algebraically (dummy derivatives):
# what it prescribes of the states is computed from it at every evaluation, never taken from
# the integrator's copy. So v_C is V(t) at every sample to rounding under every solver (it
# drifted by the integration error of C V': 0.63 V of 2 V under ode1 at 50 Hz and 1 ms,
# ~6e-6 V under ode4, ode45 and dae).

ALL_SOLVERS = ["discrete", "ode1", "ode4", "ode45", "dae"]
W50 = 2 * np.pi * 50.0


def _across_the_source(source, source_wires, solver, **kw):
    """C = 1 mF || R = 10 Ohm straight across the voltage source ``V`` (its blocks
    ``source``), the capacitor's voltage and the source's current recorded by sensors
    declared before the source: (time, v, i)."""
    blocks = [blk("vs", "VoltageSensor"), record("rec_v", "v"), blk("cs", "CurrentSensor"), record("rec_i", "i"),
              blk("G", "Ground"), blk("C", "Capacitor", C=1e-3), blk("R", "Resistor", R=10.0), *source]
    conns = [wire("vs", "rec_v"), wire("cs", "rec_i"), *source_wires,
             *links("V.p cs.p", "cs.n C.p", "C.n G.p", "V.n G.p", "R.p C.p", "R.n G.p", "vs.p C.p", "vs.n G.p")]
    res = nc.simulate(diagram(blocks, conns, dt=1e-3, duration=0.1, solver=solver, **kw))
    return np.asarray(res["time"]), recorded(res, "v"), recorded(res, "i")


_SINE_SOURCES = {
    "SineVoltage": ([blk("V", "SineVoltage", Amplitude=2.0, Frequency=50.0)], []),
    "SignalVoltage fed by a sine": ([blk("s", "sine", Amplitude=2.0, Frequency=50.0), blk("V", "SignalVoltage")],
                                    [wire("s", "V")]),
}


@pytest.mark.parametrize("solver", ALL_SOLVERS)
@pytest.mark.parametrize("source", sorted(_SINE_SOURCES))
def test_a_capacitor_across_a_sine_source_holds_the_source_voltage_exactly(source, solver):
    t, v, i = _across_the_source(*_SINE_SOURCES[source], solver)
    V = 2.0 * np.sin(W50 * t)
    assert np.max(np.abs(v - V)) <= 1e-9 * 2.0
    # the source current C V' + V/R (into the load: from p through the sensor)
    current = 1e-3 * 2.0 * W50 * np.cos(W50 * t) + V / 10.0
    assert np.max(np.abs(i - current)) <= 1e-9 * np.max(np.abs(current))


@pytest.mark.parametrize("solver", ALL_SOLVERS)
def test_an_ideal_diode_without_resistance_holds_the_capacitor_on_the_source_while_it_conducts(solver):
    # V = 2 sin(W t) (50 Hz) -> IdealDiode (Ron = 0, Goff = 0, Vknee = 0) -> C = 100 uF || R = 100 Ohm.
    # Conducting, the diode joins C straight to the source (index 2 in that mode only): v_C = V
    # exactly, and its current C V' + V/R falls to 0 at W t = pi - atan(W R C), where it turns
    # off (the off mode starts from v_C = V there, not from the integrator's copy: under ode45
    # and dae the copy's drift made the modes cycle at that instant, event_iteration).
    blocks = [blk("vs", "VoltageSensor"), record("rec_v", "v"), blk("V", "SineVoltage", Amplitude=2.0, Frequency=50.0),
              blk("D", "IdealDiode", Ron=0.0, Goff=0.0, Vknee=0.0), blk("C", "Capacitor", C=1e-4),
              blk("R", "Resistor", R=100.0), blk("G", "Ground")]
    conns = [wire("vs", "rec_v"), *links("V.p D.p", "D.n C.p", "C.n G.p", "V.n G.p", "R.p C.p", "R.n G.p", "vs.p C.p",
                                         "vs.n G.p")]
    res = nc.simulate(diagram(blocks, conns, dt=1e-4, duration=0.04, solver=solver))
    t, v = np.asarray(res["time"]), recorded(res, "v")
    changes = [(e["t"], e["to"]) for e in res["events"]]
    assert [to for _, to in changes] == ["off", "on", "off"]
    t_off = (np.pi - math.atan(W50 * 100.0 * 1e-4)) / W50
    assert changes[0][0] == pytest.approx(t_off, abs=1e-9)
    assert changes[2][0] == pytest.approx(t_off + 0.02, abs=1e-9)
    on = (t < changes[0][0]) | ((t > changes[1][0]) & (t < changes[2][0]))
    assert np.max(np.abs(v - 2.0 * np.sin(W50 * t))[on]) <= 1e-9 * 2.0


@pytest.mark.parametrize("solver", ALL_SOLVERS)
def test_a_capacitor_across_a_source_beside_an_exponential_diode_holds_the_source_voltage(solver):
    # the same index-2 constraint in an island Newton solves (a Shockley diode reads an
    # algebraic node): V = 10 sin(W t) with C1 = 100 uF straight across it, then 10 Ohm,
    # the diode and 22 uF || 1 kOhm. Newton solves the constraint's derivative with the other
    # rows and the states are taken onto it (was circuit_unsolvable at the first step); the
    # waveforms against ngspice are fixtures/ngspice/sine_c_halfwave.json
    blocks = [blk("vs", "VoltageSensor"), record("rec_v", "v"), blk("cs", "CurrentSensor"), record("rec_i", "i"),
              blk("V", "SineVoltage", Amplitude=10.0, Frequency=50.0), blk("C1", "Capacitor", C=1e-4),
              blk("Rs", "Resistor", R=10.0), blk("D", "Diode"), blk("C2", "Capacitor", C=22e-6),
              blk("RL", "Resistor", R=1e3), blk("G", "Ground")]
    conns = [wire("vs", "rec_v"), wire("cs", "rec_i"),
             *links("V.p cs.p", "cs.n C1.p", "C1.n G.p", "V.n G.p", "Rs.p V.p", "Rs.n D.p", "D.n C2.p", "C2.n G.p",
                    "RL.p C2.p", "RL.n G.p", "vs.p C1.p", "vs.n G.p")]
    res = nc.simulate(diagram(blocks, conns, dt=1e-4, duration=0.03, solver=solver))
    t, v, i = np.asarray(res["time"]), recorded(res, "v"), recorded(res, "i")
    assert np.max(np.abs(v - 10.0 * np.sin(W50 * t))) <= 1e-9 * 10.0
    current = 1e-4 * 10.0 * W50 * np.cos(W50 * t)     # C1 V' (the sensor is in C1's branch alone)
    assert np.max(np.abs(i - current)) <= 1e-9 * np.max(np.abs(current))


def test_two_voltage_sources_in_parallel_are_singular():
    blocks = [blk("V1", "ConstantVoltage", V=1.0), blk("V2", "ConstantVoltage", V=2.0), blk("G", "Ground"),
              blk("R", "Resistor", R=1.0)]
    conns = [pin("V1", "p", "V2", "p"), pin("V1", "n", "G", "p"), pin("V2", "n", "G", "p"), pin("R", "p", "V1", "p"),
             pin("R", "n", "G", "p")]
    with pytest.raises(nc.NFlowError) as err:
        nc.simulate(diagram(blocks, conns, solver="ode45"))
    assert err.value.code == "singular_circuit"
    assert "V1" in err.value.message or "V2" in err.value.message


# --------------------------------------------------------------------------------------------------
# Circuits driven by the causal diagram: signal inputs of electrical/thermal blocks are
# read under every solver, and a sensor whose value depends directly on a signal (not through
# a state) is computed after the blocks that write that signal, whatever their declaration
# order.
# --------------------------------------------------------------------------------------------------

SOLVERS = ["discrete", "ode4", "ode45", "dae"]


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_sensor_reads_the_signal_of_this_step_even_when_declared_first(solver):
    # ramp -> gain 3 -> SignalVoltage across R = 2: i = 1.5 t at every sample. The sensor
    # and its recorder come first in the JSON, the gain (an ALGEBRAIC block) last.
    blocks = [blk("cs", "CurrentSensor"), record("rec_i", "i"), blk("V", "SignalVoltage"), blk("R", "Resistor", R=2.0),
              blk("G", "Ground"), blk("r", "ramp", slope=1.0, start=0.0), blk("k", "gain", Gain=3.0)]
    conns = [pin("V", "p", "R", "p"), pin("R", "n", "cs", "p"), pin("cs", "n", "G", "p"), pin("V", "n", "G", "p"),
             wire("cs", "rec_i"), wire("r", "k"), wire("k", "V")]
    res = nc.simulate(diagram(blocks, conns, dt=0.5, duration=2.0, solver=solver))
    np.testing.assert_allclose(np.asarray(res["workspace"]["i"])[:, 0], 1.5 * np.arange(5) * 0.5, rtol=1e-12)


@pytest.mark.parametrize("solver", ["ode4", "ode45", "dae"])
def test_a_signal_current_charges_a_capacitor(solver):
    # SignalCurrent I = 2 (a constant block) through the source from p to n: the node at n
    # receives 2 A into C = 0.5 F: v = 4 t
    blocks = [blk("c", "constant", Value=2.0), blk("I", "SignalCurrent"), blk("C", "Capacitor", C=0.5, v0=0.0),
              blk("G", "Ground"), blk("vs", "PotentialSensor"), record("rec_v", "v")]
    conns = [wire("c", "I"), pin("I", "p", "G", "p"), pin("I", "n", "C", "p"), pin("C", "n", "G", "p"),
             pin("vs", "p", "C", "p"), wire("vs", "rec_v")]
    res = nc.simulate(diagram(blocks, conns, dt=0.25, duration=1.0, solver=solver))
    np.testing.assert_allclose(np.asarray(res["workspace"]["v"])[:, 0], 4.0 * np.arange(5) * 0.25, atol=1e-9)


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_an_ideal_switch_closes_on_its_control_signal(solver):
    # a step at t = 0.3 closes the switch: C = 1e-3 charges through R = 100 from V = 5;
    # before it the 1e-5 S leakage of the open switch (MSL's Goff) barely moves it
    blocks = [blk("st", "step", Time=0.3, Before=0.0, After=1.0), blk("S", "IdealSwitch"), blk("V", "ConstantVoltage", V=5.0),
              blk("R", "Resistor", R=100.0), blk("C", "Capacitor", C=1e-3, v0=0.0), blk("G", "Ground"),
              blk("vs", "PotentialSensor"), record("rec_v", "v")]
    conns = [wire("st", "S"), pin("V", "p", "S", "p"), pin("S", "n", "R", "p"), pin("R", "n", "C", "p"),
             pin("C", "n", "G", "p"), pin("V", "n", "G", "p"), pin("vs", "p", "C", "p"), wire("vs", "rec_v")]
    res = nc.simulate(diagram(blocks, conns, dt=0.1, duration=1.0, solver=solver, relTol=1e-9, absTol=1e-12))
    v = np.asarray(res["workspace"]["v"])[:, 0]
    t = np.asarray(res["time"])
    # open: 1/Goff = 1e5 ohm in series with R; closed: Ron = 1e-5 ohm in series with R
    tau_open, tau_closed = (1e5 + 100.0) * 1e-3, (100.0 + 1e-5) * 1e-3
    v_close = 5.0 * (1 - math.exp(-0.3 / tau_open))
    expected = np.where(t < 0.3 - 1e-9, 5.0 * (1 - np.exp(-t / tau_open)),
                        5.0 - (5.0 - v_close) * np.exp(-(t - 0.3) / tau_closed))
    np.testing.assert_allclose(v, expected, atol=1e-6)
    assert any(e["block"] == "S" and e["to"] == "on" for e in res["events"])


def test_heating_resistor_warms_its_heat_capacitor():
    # V = 10 across R = 5: 20 W into C = 4 J/K held to 300 K through G = 2 W/K:
    # T = 300 + 10 (1 - exp(-t/2))
    blocks = [blk("V", "ConstantVoltage", V=10.0), blk("R", "HeatingResistor", R=5.0), blk("G", "Ground"),
              blk("cap", "HeatCapacitor", C=4.0, T0=300.0), blk("cond", "ThermalConductor", G=2.0),
              blk("amb", "FixedTemperature", T=300.0), blk("ts", "TemperatureSensor"), record("rec_T", "T")]
    conns = [pin("V", "p", "R", "p"), pin("R", "n", "G", "p"), pin("V", "n", "G", "p"), pin("R", "heatPort", "cap", "port"),
             pin("cap", "port", "cond", "a"), pin("cond", "b", "amb", "port"), pin("ts", "port", "cap", "port"),
             wire("ts", "rec_T")]
    res = nc.simulate(diagram(blocks, conns, dt=0.5, duration=4.0, solver="ode45", relTol=1e-10, absTol=1e-12))
    t = np.asarray(res["time"])
    np.testing.assert_allclose(np.asarray(res["workspace"]["T"])[:, 0], 300 + 10 * (1 - np.exp(-t / 2)), atol=1e-7)


def test_a_convective_resistor_of_zero_is_a_short():
    # Rc = 0 (a constant signal) ties the middle node to the fixed 300 K (MSL's
    # dT = Rc*Q_flow with Q_flow an unknown); a conductor G = 2 to 400 K then carries 200 W
    blocks = [blk("r", "constant", Value=0.0), blk("cr", "ConvectiveResistor"), blk("g", "ThermalConductor", G=2.0),
              blk("cold", "FixedTemperature", T=300.0), blk("hot", "FixedTemperature", T=400.0),
              blk("ts", "TemperatureSensor"), blk("qs", "HeatFlowSensor"), record("rec_T", "T"), record("rec_Q", "Q")]
    conns = [wire("r", "cr"), pin("cr", "b", "cold", "port"), pin("cr", "a", "qs", "b"), pin("qs", "a", "g", "b"),
             pin("g", "a", "hot", "port"), pin("ts", "port", "cr", "a"), wire("ts", "rec_T"), wire("qs", "rec_Q")]
    res = nc.simulate(diagram(blocks, conns, dt=0.5, duration=1.0, solver="ode45"))
    np.testing.assert_allclose(np.asarray(res["workspace"]["T"])[:, 0], 300.0, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(res["workspace"]["Q"])[:, 0], 200.0, rtol=1e-12)


# --------------------------------------------------------------------------------------------------
# Switching elements at their switching point: the event iteration settles although the
# relation's value in the new mode can come out a few ulps on the old side, and an element
# resting exactly on the switching point (``s = 0``) is no event at all.
# --------------------------------------------------------------------------------------------------

# MSL's CharacteristicIdealDiodes circuit (examples.md of the MSL reference): three branches
# u(t) -> IdealDiode -> 1 mOhm -> ground, SineVoltage1's offset -9 V a ConstantVoltage below
# it. Block ids as in fixtures/msl/characteristic_ideal_diodes.json: the network's unknowns
# are ordered by id, and with this order the roundoff once made the modes flip forever
# (event_iteration at t = 0.178: With_Ron_Goff's s was +9e-16 V where the event was placed
# and -2e-15 V once solved in the on mode; the mode iteration's tie rule settles it).
R = 1e-3
DIODES = {"Ideal": (0.0, 0.0, 0.0, 0.0, "SineVoltage2", "R1", "vIdeal"),
          "With_Ron_Goff": (0.1, 0.1, 0.0, -9.0, "SineVoltage1", "R2", "vRonGoff"),
          "With_Ron_Goff_Vknee": (0.2, 0.2, 5.0, 0.0, "SineVoltage3", "R3", "vRonGoffVknee")}


def characteristic_ideal_diodes(solver):
    blocks = [blk("G", "Ground"), blk("Offset1", "ConstantVoltage", V=-9)]
    conns = [pin("Offset1", "n", "G", "p"), pin("SineVoltage1", "n", "Offset1", "p")]
    for name, (Ron, Goff, Vknee, offset, source, resistor, sensor) in DIODES.items():
        blocks += [blk(source, "SineVoltage", Amplitude=10, Frequency=1, Phase=0),
                   blk(name, "IdealDiode", Ron=Ron, Goff=Goff, Vknee=Vknee), blk(resistor, "Resistor", R=R),
                   blk(sensor, "VoltageSensor"), blk(f"rec:{name}", "toWorkspace", VariableName=name,
                                                     SaveFormat="Array")]
        conns += [pin(source, "p", name, "p"), pin(name, "n", resistor, "p"), pin(resistor, "n", "G", "p"),
                  pin(sensor, "p", name, "p"), pin(sensor, "n", name, "n"), wire(sensor, f"rec:{name}")]
        if not offset:
            conns.append(pin(source, "n", "G", "p"))
    return nc.simulate(diagram(blocks, conns, dt=0.002, duration=1.0, solver=solver))


def diode_voltage(u, Ron, Goff, Vknee):
    """MSL's IdealDiode in series with R across u (components.md 2.6): off (s < 0) while
    v = u/(1 + R Goff) is below Vknee, else on with s = (u - Vknee - R Goff Vknee)/(Ron + R)
    and v = Vknee + Ron s."""
    off = u / (1 + R * Goff)
    on = Vknee + Ron * (u - Vknee - R * Goff * Vknee) / (Ron + R)
    return np.where(off < Vknee, off, on)


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_diodes_switch_at_their_closed_form_instants(solver):
    res = characteristic_ideal_diodes(solver)
    t = np.asarray(res["time"])
    for name, (Ron, Goff, Vknee, offset, *_) in DIODES.items():
        u = 10 * np.sin(2 * np.pi * t) + offset
        np.testing.assert_allclose(np.asarray(res["workspace"][name])[:, 0], diode_voltage(u, Ron, Goff, Vknee),
                                   atol=1e-9)
    # u crosses the switching voltage (1 + R Goff) Vknee - offset upwards at asin(...)/(2 pi)
    # and downwards half a period minus that later; Ideal is on from the start (s = 0 is on)
    knee = math.asin(5 * (1 + R * 0.2) / 10) / (2 * math.pi)
    ron_goff = math.asin(0.9) / (2 * math.pi)
    want = [(knee, "With_Ron_Goff_Vknee", "off", "on"), (ron_goff, "With_Ron_Goff", "off", "on"),
            (0.5 - ron_goff, "With_Ron_Goff", "on", "off"), (0.5 - knee, "With_Ron_Goff_Vknee", "on", "off"),
            (0.5, "Ideal", "on", "off")]
    got = [(e["t"], e["block"], e["from"], e["to"]) for e in res["events"] if e["kind"] == "mode"]
    assert [g[1:] for g in got] == [w[1:] for w in want]
    assert max(abs(g[0] - w[0]) for g, w in zip(got, want)) < 1e-9


@settings(max_examples=12, deadline=None)
@given(Ron=st.floats(0.0, 1.0), Goff=st.floats(0.0, 1.0), Vknee=st.floats(0.0, 5.0), amplitude=st.floats(1.0, 20.0),
       q=st.floats(0.05, 0.9), turns_on_first=st.booleans(), solver=st.sampled_from(["ode45", "dae"]))
def test_a_diode_branch_switches_exactly_where_its_source_crosses_the_knee(Ron, Goff, Vknee, amplitude, q,
                                                                         turns_on_first, solver):
    # u = A sin(2 pi t) + B -> IdealDiode -> R to ground. The diode is off while
    # u/(1 + R Goff) < Vknee, i.e. u < U = Vknee (1 + R Goff): with B = U - q A it switches
    # where sin(2 pi t) = q, once each way within the first period (off -> on at asin(q)/(2 pi)
    # and back at 1/2 - that for q > 0; on -> off at 1/2 + asin|q|/(2 pi) and back at
    # 1 - asin|q|/(2 pi) for q < 0), whatever the roundoff at the switching instants.
    q = q if turns_on_first else -q
    offset = Vknee * (1 + R * Goff) - q * amplitude
    blocks = [blk("G", "Ground"), blk("sine", "SineVoltage", Amplitude=amplitude, Frequency=1, Phase=0),
              blk("offset", "ConstantVoltage", V=offset), blk("D", "IdealDiode", Ron=Ron, Goff=Goff, Vknee=Vknee),
              blk("R", "Resistor", R=R)]
    conns = [pin("offset", "n", "G", "p"), pin("sine", "n", "offset", "p"), pin("sine", "p", "D", "p"),
             pin("D", "n", "R", "p"), pin("R", "n", "G", "p")]
    res = nc.simulate(diagram(blocks, conns, dt=0.01, duration=1.0, solver=solver))
    crossing = math.asin(abs(q)) / (2 * math.pi)
    want = ([(crossing, "off", "on"), (0.5 - crossing, "on", "off")] if q > 0 else
            [(0.5 + crossing, "on", "off"), (1 - crossing, "off", "on")])
    got = [(e["t"], e["from"], e["to"]) for e in res["events"] if e["kind"] == "mode"]
    assert [g[1:] for g in got] == [w[1:] for w in want]
    assert max(abs(g[0] - w[0]) for g, w in zip(got, want)) < 1e-8


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_a_diode_resting_on_its_switching_point_is_no_event(solver):
    # 0 V source, uncharged capacitor: s = 0 for all time. MSL's "off = s < 0" keeps the
    # diode on; the event function must agree with the committed mode there (it used to
    # report a flip at every restart: event_chattering).
    blocks = [blk("G", "Ground"), blk("V", "ConstantVoltage", V=0.0), blk("D", "IdealDiode", Ron=0.1, Goff=0.1),
              blk("R", "Resistor", R=1.0), blk("C", "Capacitor", C=1.0), blk("vC", "VoltageSensor"),
              blk("rec", "toWorkspace", VariableName="v", SaveFormat="Array")]
    conns = [pin("V", "n", "G", "p"), pin("V", "p", "D", "p"), pin("D", "n", "R", "p"), pin("R", "n", "G", "p"),
             pin("C", "p", "D", "n"), pin("C", "n", "G", "p"), pin("vC", "p", "C", "p"), pin("vC", "n", "C", "n"),
             wire("vC", "rec")]
    res = nc.simulate(diagram(blocks, conns, dt=0.1, duration=1.0, solver=solver))
    assert res["events"] == []
    assert np.all(np.asarray(res["workspace"]["v"]) == 0.0)


def test_a_switch_follows_its_control_exactly():
    # IdealSwitch closes while control > 0.5: a 1 V source through the switch charges an RC;
    # the control is a step to 1 at t = 0.3, so the capacitor stays at 0 (open: Goff leaks
    # 1e-5 of the drive, below the tolerance here) and then charges with tau = (R + Ron) C.
    blocks = [blk("G", "Ground"), blk("V", "ConstantVoltage", V=1.0), blk("S", "IdealSwitch"),
              blk("R", "Resistor", R=1.0), blk("C", "Capacitor", C=0.5), blk("step", "step", Time=0.3),
              blk("vC", "VoltageSensor"), blk("rec", "toWorkspace", VariableName="v", SaveFormat="Array")]
    conns = [pin("V", "n", "G", "p"), pin("V", "p", "S", "p"), pin("S", "n", "R", "p"), pin("R", "n", "C", "p"),
             pin("C", "n", "G", "p"), pin("vC", "p", "C", "p"), pin("vC", "n", "C", "n"), wire("step", "S"),
             wire("vC", "rec")]
    res = nc.simulate(diagram(blocks, conns, dt=0.05, duration=1.0, solver="ode45", relTol=1e-9, absTol=1e-12))
    got = [(e["t"], e["block"], e["from"], e["to"]) for e in res["events"] if e["kind"] == "mode"]
    assert got == [(0.3, "S", "off", "on")]
    t = np.asarray(res["time"])
    v = np.asarray(res["workspace"]["v"])[:, 0]
    closed = t >= 0.3
    assert np.all(np.abs(v[~closed]) < 1e-4)
    np.testing.assert_allclose(v[closed], 1 - np.exp(-(t[closed] - 0.3) / (0.5 * (1 + 1e-5))), atol=1e-4)


# --------------------------------------------------------------------------------------------------
# Diode rectifiers with a capacitive load: a sine source, exponential Diodes, R parallel to C.
# Every solver trial point with the capacitor behind the source puts a diode far forward
# (~1e7 A at 0.96 V): Newton must not mistake that for the end of the run (its step is
# rejected and retried smaller). Compared with a scipy Radau run (rtol 1e-10) of the same
# equations: the load's one state, the diodes' currents Is (exp(v/Vt) - 1) + GMIN v.
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("solver", ["dae", "ode45"])
@pytest.mark.parametrize("bridge, R, C, duration", [(False, 1e3, 22e-6, 0.03), (False, 100.0, 220e-6, 0.03),
                                                    (True, 1e3, 22e-6, 0.015)],
                         ids=["half_wave_1k_22u", "half_wave_100_220u", "bridge_1k_22u"])
def test_diode_rectifiers_with_a_capacitive_load_run_to_the_end(solver, bridge, R, C, duration):
    res = nc.simulate(rectifier(bridge, R, C, solver, duration))
    t, v = np.asarray(res["time"]), recorded(res, "v")
    assert t[-1] == pytest.approx(duration)
    want = rectifier_reference(bridge, R, C, duration)
    assert np.abs(v - want).max() <= 1e-4 * np.ptp(want)


@pytest.mark.parametrize("solver, method", [("dae", "LSODA"), ("ode45", "RK45")])
def test_a_rectifier_runs_at_a_loose_tolerance(solver, method):
    # rtol 1e-3: LSODA's first step (f = 0 at the start) tries t = 0.6 ms with the capacitor
    # still at 0 V behind the source. As accurate as scipy's run of the same method on the
    # same equations (LSODA misses the peak by 0.64 V at this tolerance, RK45 by 0.03 V)
    from scipy.integrate import solve_ivp
    R, C, duration = 1e3, 22e-6, 0.03
    res = nc.simulate(rectifier(False, R, C, solver, duration, rtol=1e-3))
    t, v = np.asarray(res["time"]), recorded(res, "v")
    want = rectifier_reference(False, R, C, duration)
    with np.errstate(invalid="ignore"):        # RK45's rejected trial steps overflow
        hand = solve_ivp(lambda tt, y: [(diode_current(10.0 * math.sin(100 * math.pi * tt) - y[0]) - y[0] / R) / C],
                         (0.0, float(t[-1])), [0.0], method=method, rtol=1e-3, atol=1e-5, t_eval=t,
                         max_step=duration / 50)
    assert np.abs(v - want).max() <= 2.0 * np.abs(hand.y[0] - want).max() + 1e-3 * np.ptp(want)


# --------------------------------------------------------------------------------------------------
# Laws every acausal network obeys, on random networks (hypothesis), read through the
# public API only: sensors in the diagram, the recorded workspace.
#
# * Kirchhoff's current law at every node and Tellegen's theorem (sum of v*i over all
#   elements = 0) at a random time of a random passive RLC network;
# * a passive RLC network never gains energy (sum C v^2/2 + L i^2/2 is non-increasing);
# * an isolated network of heat capacitors and conductors keeps its heat (sum C T) and
#   relaxes to the capacity-weighted mean temperature;
# * the result does not depend on the order of blocks or connections in the JSON, nor on
#   which end of a physical connection is written first (bitwise equal).
# --------------------------------------------------------------------------------------------------

SETTINGS = settings(max_examples=8, deadline=None)

# passive elements: block type, parameter, its range, start-value parameter, its range
PASSIVE = {"Resistor": ("R", (0.5, 5.0), None, None), "Capacitor": ("C", (0.1, 2.0), "v0", (-2.0, 2.0)),
           "Inductor": ("L", (0.1, 2.0), "i0", (-1.0, 1.0))}


@st.composite
def rlc_networks(draw, capacitor_loops=True):
    """(elements, node count): each element (type, node a, node b, value, start value).
    Node 0 is Ground. Every other node has a resistor or capacitor to Ground, so no cut-set
    consists of inductors only (index 2, unsupported); further elements join random nodes:
    R, L and C, or only R and L (no capacitor loop) if ``capacitor_loops`` is false."""
    nodes = draw(st.integers(1, 4))
    shunts = [(draw(st.sampled_from(["Resistor", "Capacitor"])), k, 0) for k in range(1, nodes + 1)]
    kinds = sorted(PASSIVE) if capacitor_loops else ["Inductor", "Resistor"]
    pairs = st.tuples(st.sampled_from(kinds), st.integers(0, nodes), st.integers(0, nodes))
    extra = draw(st.lists(pairs.filter(lambda e: e[1] != e[2]), max_size=4))
    elements = []
    for kind, a, b in shunts + extra:
        _, value_range, start, start_range = PASSIVE[kind]
        value = draw(st.floats(*value_range))
        elements.append((kind, a, b, value, draw(st.floats(*start_range)) if start else None))
    return elements, nodes + 1


def rlc_diagram(elements, t_end, ammeters=frozenset(PASSIVE)):
    """Each element e<k> with a VoltageSensor v<k> across it and, if its type is in
    ``ammeters``, a CurrentSensor i<k> in series at its p side (reading the element's
    current p -> n); recorded as v<k>, i<k>. (An ammeter is a zero-voltage branch: in
    series with a capacitor of a capacitor loop it makes the network index 2.)"""
    blocks, connections = [blk("gnd", "Ground")], []
    anchor = {0: ("gnd", "p")}

    def join(node, block, pin_name):
        if node in anchor:
            connections.append(pin(*anchor[node], block, pin_name))
        else:
            anchor[node] = (block, pin_name)
    for k, (kind, a, b, value, start) in enumerate(elements):
        value_name, _, start_name, _ = PASSIVE[kind]
        params = {value_name: value, **({start_name: start} if start_name else {})}
        blocks += [blk(f"e{k}", kind, **params), blk(f"v{k}", "VoltageSensor")]
        sensors = [f"v{k}"]
        if kind in ammeters:
            blocks.append(blk(f"i{k}", "CurrentSensor"))
            sensors.append(f"i{k}")
            join(a, f"i{k}", "p")
            connections.append(pin(f"i{k}", "n", f"e{k}", "p"))
        else:
            join(a, f"e{k}", "p")
        join(b, f"e{k}", "n")
        connections += [pin(f"v{k}", "p", f"e{k}", "p"), pin(f"v{k}", "n", f"e{k}", "n")]
        for sensor in sensors:
            more_blocks, more_connections = rec(sensor, sensor)
            blocks += more_blocks
            connections += more_connections
    return diagram(blocks, connections, dt=t_end / 4, duration=t_end, solver="ode45", relTol=1e-10, absTol=1e-12)


def columns(result, prefix, indices) -> np.ndarray:
    """samples x elements of the recorded ``prefix<k>`` for k in ``indices``."""
    return np.column_stack([np.asarray(result["workspace"][f"{prefix}{k}"], dtype=float)[:, 0]
                            for k in indices])


@SETTINGS
@given(network=rlc_networks(capacitor_loops=False), t_end=st.floats(0.05, 3.0))
def test_kirchhoff_current_law_and_tellegen_at_a_random_time(network, t_end):
    elements, n_nodes = network
    res = nc.simulate(rlc_diagram(elements, t_end))
    every = range(len(elements))
    i, v = columns(res, "i", every), columns(res, "v", every)
    scale = 1.0 + np.abs(i).max()
    for node in range(n_nodes):
        leaving = sum(i[:, k] for k, e in enumerate(elements) if e[1] == node)
        entering = sum(i[:, k] for k, e in enumerate(elements) if e[2] == node)
        np.testing.assert_allclose(leaving - entering, 0.0, atol=1e-8 * scale)
    # Tellegen: the elements' powers sum to 0 (the sensors take none: v = 0 or i = 0)
    np.testing.assert_allclose((v * i).sum(axis=1), 0.0, atol=1e-8 * scale * (1.0 + np.abs(v).max()))


@SETTINGS
@given(network=rlc_networks(), t_end=st.floats(0.5, 4.0))
def test_a_passive_rlc_network_never_gains_energy(network, t_end):
    # ammeters on the inductors only: capacitor loops are allowed here
    elements, _ = network
    res = nc.simulate(rlc_diagram(elements, t_end, ammeters={"Inductor"}))
    energy = np.zeros(len(res["time"]))
    for k, (kind, _, _, value, _) in enumerate(elements):
        if kind == "Capacitor":
            energy += value * columns(res, "v", [k])[:, 0] ** 2 / 2
        elif kind == "Inductor":
            energy += value * columns(res, "i", [k])[:, 0] ** 2 / 2
    assert np.all(np.diff(energy) <= 1e-9 * (1.0 + energy[0])), energy


@st.composite
def thermal_networks(draw):
    """(capacities, start temperatures, conductors (a, b, G)): a connected network (a
    random spanning tree plus random extra conductors), one HeatCapacitor per node."""
    n = draw(st.integers(2, 5))
    capacities = [draw(st.floats(0.5, 2.0)) for _ in range(n)]
    temperatures = [draw(st.floats(250.0, 400.0)) for _ in range(n)]
    tree = [(k, draw(st.integers(0, k - 1)), draw(st.floats(0.5, 2.0))) for k in range(1, n)]
    pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.floats(0.5, 2.0))
    extra = draw(st.lists(pairs.filter(lambda c: c[0] != c[1]), max_size=3))
    return capacities, temperatures, tree + extra


@SETTINGS
@given(network=thermal_networks())
def test_an_isolated_thermal_network_relaxes_to_the_capacity_weighted_mean(network):
    capacities, temperatures, conductors = network
    n = len(capacities)
    # the slowest relaxation rate: the smallest non-zero eigenvalue of C^-1 (graph Laplacian)
    laplacian = np.zeros((n, n))
    for a, b, g in conductors:
        laplacian[[a, b], [a, b]] += g
        laplacian[a, b] -= g
        laplacian[b, a] -= g
    slowest = scipy.linalg.eigh(laplacian, np.diag(capacities), eigvals_only=True)[1]
    t_end = 30.0 / slowest
    blocks = [blk(f"c{k}", "HeatCapacitor", C=c, T0=t0) for k, (c, t0) in enumerate(zip(capacities, temperatures))]
    blocks += [blk(f"g{k}", "ThermalConductor", G=g) for k, (_, _, g) in enumerate(conductors)]
    connections = [pin(f"g{k}", "a", f"c{a}", "port") for k, (a, _, _) in enumerate(conductors)]
    connections += [pin(f"g{k}", "b", f"c{b}", "port") for k, (_, b, _) in enumerate(conductors)]
    for k in range(n):
        blocks.append(blk(f"T{k}", "TemperatureSensor"))
        connections.append(pin(f"T{k}", "port", f"c{k}", "port"))
        more_blocks, more_connections = rec(f"T{k}", f"T{k}")
        blocks += more_blocks
        connections += more_connections
    res = nc.simulate(diagram(blocks, connections, dt=t_end / 8, duration=t_end, solver="ode45",
                              relTol=1e-10, absTol=1e-10))
    T = columns(res, "T", range(n))
    heat = T @ np.asarray(capacities)
    mean = float(np.dot(capacities, temperatures) / sum(capacities))
    np.testing.assert_allclose(heat, mean * sum(capacities), rtol=1e-9)        # no heat is lost or made
    assert np.all(np.diff(T.max(axis=1)) <= 1e-7) and np.all(np.diff(T.min(axis=1)) >= -1e-7)  # max principle
    np.testing.assert_allclose(T[-1], mean, atol=1e-6 * (max(temperatures) - min(temperatures)) + 1e-9)


@settings(max_examples=6, deadline=None)
@given(network=rlc_networks(), seed=st.integers(0, 2 ** 32 - 1))
def test_results_do_not_depend_on_the_order_of_blocks_or_connections(network, seed):
    elements, _ = network
    d = rlc_diagram(elements, 1.0, ammeters={"Inductor"})
    shuffled = dict(d, blocks=list(d["blocks"]), connections=[dict(c) for c in d["connections"]])
    rng = random.Random(seed)
    rng.shuffle(shuffled["blocks"])
    rng.shuffle(shuffled["connections"])
    for c in shuffled["connections"]:   # write some physical connections the other way round
        if "fromPin" in c and rng.random() < 0.5:
            c["from"], c["to"], c["fromPin"], c["toPin"] = c["to"], c["from"], c["toPin"], c["fromPin"]
    first, second = nc.simulate(d), nc.simulate(shuffled)
    assert first["workspace"] == second["workspace"]
    assert first["time"] == second["time"]
