"""Circuits driven by the causal diagram: signal inputs of electrical/thermal blocks are
read under every solver, and a sensor whose value depends directly on a signal (not through
a state) is computed after the blocks that write that signal, whatever their declaration
order."""
from __future__ import annotations

import math

import numpy as np
import pytest

import nflow_compat as nc
from tests.util import blk, diagram

SOLVERS = ["discrete", "ode4", "ode45", "dae"]


def pin(a, ap, b, bp):
    return {"from": a, "fromPin": ap, "to": b, "toPin": bp}


def wire(a, b, to_index=0):
    return {"from": a, "to": b, "fromIndex": 0, "toIndex": to_index}


def record(name):
    return blk(f"rec_{name}", "toWorkspace", VariableName=name, SaveFormat="Array")


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_sensor_reads_the_signal_of_this_step_even_when_declared_first(solver):
    # ramp -> gain 3 -> SignalVoltage across R = 2: i = 1.5 t at every sample. The sensor
    # and its recorder come first in the JSON, the gain (an ALGEBRAIC block) last.
    blocks = [blk("cs", "CurrentSensor"), record("i"), blk("V", "SignalVoltage"), blk("R", "Resistor", R=2.0),
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
              blk("G", "Ground"), blk("vs", "PotentialSensor"), record("v")]
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
              blk("vs", "PotentialSensor"), record("v")]
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
              blk("amb", "FixedTemperature", T=300.0), blk("ts", "TemperatureSensor"), record("T")]
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
              blk("ts", "TemperatureSensor"), blk("qs", "HeatFlowSensor"), record("T"), record("Q")]
    conns = [wire("r", "cr"), pin("cr", "b", "cold", "port"), pin("cr", "a", "qs", "b"), pin("qs", "a", "g", "b"),
             pin("g", "a", "hot", "port"), pin("ts", "port", "cr", "a"), wire("ts", "rec_T"), wire("qs", "rec_Q")]
    res = nc.simulate(diagram(blocks, conns, dt=0.5, duration=1.0, solver="ode45"))
    np.testing.assert_allclose(np.asarray(res["workspace"]["T"])[:, 0], 300.0, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(res["workspace"]["Q"])[:, 0], 200.0, rtol=1e-12)
