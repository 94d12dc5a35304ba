"""A speed source driven by a diagram signal: the driven flange's acceleration is the
signal's exact time derivative (each block on the path declares its own, engine.rates),
so bodies locked to it follow exactly
and a clutch breaks away when the torque needed to keep them locked reaches its
capacity. Closed form: drive w_a = A (1 - cos(W t)), inertia J locked to it through an
MSL clutch needs tau = J A W sin(W t); stuck while tau <= peak*mu*cgeo*fn_max*fn."""
import math

import numpy as np
import pytest

import nflow_compat as nc
from nflow_compat.errors import DiagramError
from tests.util import blk, diagram, pin, wire

A, W, J = 2.0, 3.0, 0.5


def clutch_drive(fn_max, solver, duration=1.0):
    blocks = [blk("c", "constant", Value=A),
              blk("s", "sine", Amplitude=A, Frequency=W / (2 * math.pi), Phase=math.pi / 2),
              blk("d", "sum", Inputs="+-", inputs=2), blk("src", "RotSpeed"),
              blk("cl", "Clutch", fn_max=fn_max, mu=0.5, peak=1.0, cgeo=1.0), blk("one", "constant", Value=1.0),
              blk("J", "Inertia", J=J), blk("sw", "RotSpeedSensor"),
              blk("rec", "toWorkspace", VariableName="w", SaveFormat="Array")]
    conns = [wire("c", "d", 0, 0), wire("s", "d", 0, 1), wire("d", "src"), wire("one", "cl"),
             pin("src", "flange", "cl", "a"), pin("cl", "b", "J", "flange"), pin("sw", "flange", "J", "flange"),
             wire("sw", "rec")]
    return nc.simulate(diagram(blocks, conns, dt=0.01, duration=duration, solver=solver, relTol=1e-9, absTol=1e-12))


@pytest.mark.parametrize("solver", ["ode45", "dae", "ode4"])
def test_a_body_locked_to_a_signal_driven_speed_source_follows_it(solver):
    res = clutch_drive(1000.0, solver)       # capacity 500 N.m: never slips
    t = np.asarray(res["time"])
    w = np.asarray(res["workspace"]["w"])[:, 0]
    np.testing.assert_allclose(w, A * (1 - np.cos(W * t)), atol=1e-6)
    assert res["events"] == []


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_the_clutch_breaks_away_when_the_locked_torque_reaches_its_capacity(solver):
    res = clutch_drive(1.0, solver)          # capacity peak*mu*cgeo*fn_max = 0.5 N.m
    t_star = math.asin(0.5 / (J * A * W)) / W
    first = res["events"][0]
    assert (first["block"], first["from"], first["to"]) == ("cl", "stuck", "backward")
    assert abs(first["t"] - t_star) < 2e-6     # measured: 4e-12 (ode45), 7e-7 (dae, LSODA dense output)


def test_a_speed_driven_through_a_block_without_a_derivative_is_refused_before_the_run():
    blocks = [blk("s", "sine", Amplitude=1.0, Frequency=1.0), blk("sat", "saturation", UpperLimit=0.5,
                                                                       LowerLimit=-0.5),
              blk("src", "Speed"), blk("m", "Mass", m=1.0)]
    conns = [wire("s", "sat"), wire("sat", "src"), pin("src", "flange", "m", "flange")]
    with pytest.raises(DiagramError) as err:
        nc.simulate(diagram(blocks, conns, solver="ode45"))
    assert err.value.code == "underivable_input"
    assert err.value.block == "sat" and err.value.path == "/blocks/1"


@pytest.mark.parametrize("capacity, locked", [(0.26, True), (0.24, False)])
def test_a_speed_sensor_drives_a_speed_source_with_its_islands_acceleration(capacity, locked):
    """J1 = 2 under a constant torque 1 accelerates at 0.5 rad/s^2; its speed drives a RotSpeed
    that carries J2 = 0.5 through a clutch: holding J2 on it takes J2*0.5 = 0.25 N.m, the rate
    of the sensor signal (J1's acceleration). Capacity 0.26: stuck, J2 turns with J1 exactly;
    0.24: it slips from the start (J2 accelerates at 0.24/0.5 = 0.48 only)."""
    blocks = [blk("tau", "ConstantTorque", tau=1.0), blk("J1", "Inertia", J=2.0), blk("w1", "RotSpeedSensor"),
              blk("src", "RotSpeed"), blk("cl", "Clutch", fn_max=capacity / 0.5, mu=0.5, peak=1.0, cgeo=1.0),
              blk("one", "constant", Value=1.0), blk("J2", "Inertia", J=0.5), blk("w2", "RotSpeedSensor"),
              blk("rec", "toWorkspace", VariableName="w", SaveFormat="Array")]
    conns = [pin("tau", "flange", "J1", "flange"), pin("w1", "flange", "J1", "flange"), wire("w1", "src"),
             wire("one", "cl"), pin("src", "flange", "cl", "a"), pin("cl", "b", "J2", "flange"),
             pin("w2", "flange", "J2", "flange"), wire("w2", "rec")]
    res = nc.simulate(diagram(blocks, conns, dt=0.1, duration=2.0, solver="ode45", relTol=1e-9, absTol=1e-12))
    t = np.asarray(res["time"])
    w2 = np.asarray(res["workspace"]["w"])[:, 0]
    np.testing.assert_allclose(w2, (0.5 if locked else 0.48) * t, atol=1e-9)
