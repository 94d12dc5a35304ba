"""A speed source driven by a diagram signal: the driven flange's acceleration is the
signal's time derivative (taken by the engine), so bodies locked to it follow exactly
and a clutch breaks away when the torque needed to keep them locked reaches its
capacity. Closed form: drive w_a = A (1 - cos(W t)), inertia J locked to it through an
MSL clutch needs tau = J A W sin(W t); stuck while tau <= peak*mu*cgeo*fn_max*fn."""
import math

import numpy as np
import pytest

import nflow_compat as nc
from tests.util import blk, diagram, wire

A, W, J = 2.0, 3.0, 0.5


def pin(a, ap, b, bp):
    return {"from": a, "fromPin": ap, "to": b, "toPin": bp}


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
