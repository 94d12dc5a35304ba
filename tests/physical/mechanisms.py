"""Mechanical diagrams run with sensors: the values the tests of physical/ read."""
from __future__ import annotations

import numpy as np

import nflow_compat as nc
from nflow_compat.engine.system import PlanSystem
from nflow_compat.physical.acausal import DaeIsland
from tests.util import blk, diagram, pin, rec

TIGHT = dict(dt=0.05, duration=2.0, solver="ode45", relTol=1e-10, absTol=1e-12)


def run_sensors(blocks, conns, sensors, **kw):
    """Run with each ``(sensor block id, name)`` of ``sensors`` recorded (tight tolerances
    unless ``kw`` says otherwise): (diagram, result, time, {name: values})."""
    for sensor, name in sensors:
        b, c = rec(sensor, name)
        blocks, conns = blocks + b, conns + c
    d = diagram(blocks, conns, **dict(TIGHT, **kw))
    res = nc.simulate(d)
    return d, res, np.asarray(res["time"]), {name: np.asarray(res["workspace"][name])[:, 0] for _, name in sensors}


def sensed(blocks, conns, sensors, **kw):
    """Run with sensors ``{name: (sensor type, block, pin)}``: (result, time, {name: values})."""
    for name, (kind, block, flange) in sensors.items():
        blocks = blocks + [blk(f"sense_{name}", kind)]
        conns = conns + [pin(f"sense_{name}", "flange", block, flange)]
    _, res, t, out = run_sensors(blocks, conns, [(f"sense_{name}", name) for name in sensors], **kw)
    return res, t, out


def mode_changes(res) -> list:
    """``(block, from, to)`` of every mode change of a run's events."""
    return [(e["block"], e["from"], e["to"]) for e in res["events"] if e["kind"] == "mode"]


def island_of(d) -> DaeIsland:
    """The one acausal island of diagram ``d``, compiled (for checks of its internals)."""
    part, = PlanSystem(nc.compile_plan(d)).parts
    return part.island
