"""Fast paths of the continuous engine: bulk recording without per-grid-point major steps,
the derivative cone of solver-stage evaluations, the one-coordinate island arithmetic.
Each must give exactly what the general path gives."""
from __future__ import annotations

import math

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from nflow_compat.engine import continuous as cont
from nflow_compat.engine.continuous import PlanSystem

from .util import blk, diagram, pin, wire


def _stick_slip(solver="ode45", duration=5.0, recorders=None, extra_blocks=(), extra_wires=()):
    """The stick-slip mass of bench/stick_slip.py (sine -> Force -> MassWithStopAndFriction,
    position and speed sensors recorded)."""
    rec = recorders or {"s": {}, "v": {}}
    blocks = [
        blk("sineForce", "sine", Amplitude=25.0, Frequency=0.25),
        blk("force", "Force"),
        blk("stop1", "MassWithStopAndFriction", m=1.0, L=1.0, smax=25.0, smin=-25.0, F_prop=1.0, F_Coulomb=5.0,
            F_Stribeck=10.0, fexp=2.0, v_small=1e-3, s0=0.0, v0=0.0),
        blk("s_stop1", "PositionSensor"),
        blk("v_stop1", "SpeedSensor"),
    ]
    wires = [
        wire("sineForce", "force"),
        {"from": "force", "fromPin": "flange", "to": "stop1", "toPin": "flange_a"},
        {"from": "s_stop1", "fromPin": "flange", "to": "stop1", "toPin": "flange_a"},
        {"from": "v_stop1", "fromPin": "flange", "to": "stop1", "toPin": "flange_a"},
    ]
    for name, params in rec.items():
        blocks.append(blk(f"rec_{name}", "toWorkspace", dict({"VariableName": name, "SaveFormat": "Array"}, **params)))
        if name in ("s", "v"):
            wires.append(wire(f"{name}_stop1", f"rec_{name}"))
    blocks += list(extra_blocks)
    wires += list(extra_wires)
    return diagram(blocks, wires, dt=1e-3, duration=duration, solver=solver, relTol=1e-6, absTol=1e-8)


def _run(d, per_step=False) -> dict:
    plan = nc.compile_plan(d)
    # a progress callback needs a major step at every grid point: the general path
    res = plan.run(progress=(lambda done, total: None) if per_step else None)
    res["stats"].pop("wall_s", None)
    return res


def _bytes(res) -> bytes:
    return orjson.dumps(res, option=orjson.OPT_SERIALIZE_NUMPY)


def _taken(d) -> bool:
    plan = nc.compile_plan(d)
    return cont._bulk_recording(plan, PlanSystem(plan), None) is not None


# ----------------------------------------------------------------------------- bulk recording

@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_bulk_recording_equals_major_steps(solver):
    d = _stick_slip(solver)
    assert _taken(d)
    fast, slow = _run(d), _run(d, per_step=True)
    assert _bytes(fast) == _bytes(slow)
    s = np.asarray(fast["workspace"]["s"], dtype=float)
    assert s.shape == (5001, 1)
    assert [e["to"] for e in fast["events"] if e.get("kind") == "mode"][:1]   # it does break away


@pytest.mark.parametrize("dec,cap", [(1, math.inf), (3, math.inf), (7, 10), (2.9, 0), (0.5, 4), (1, 1),
                                     (4000, math.inf), (6000, 2)])
def test_bulk_decimation_and_window(dec, cap):
    rec = {"s": {"Decimation": dec, "MaxDataPoints": cap}, "v": {"Decimation": 2, "MaxDataPoints": 3},
           "nan": {}}   # 'nan' is unconnected: it records NaN
    d = _stick_slip(duration=1.0, recorders=rec)
    assert _taken(d)
    fast, slow = _run(d), _run(d, per_step=True)
    assert _bytes(fast) == _bytes(slow)
    assert np.isnan(np.asarray(fast["workspace"]["nan"], dtype=float)).all()


@settings(max_examples=40, deadline=None)
@given(dec=st.floats(min_value=-3.0, max_value=40.0), cap=st.one_of(st.just(math.inf), st.floats(-2.0, 60.0)),
       chunks=st.lists(st.integers(0, 30), min_size=1, max_size=5))
def test_bulk_entry_matches_after_step(dec, cap, chunks):
    """toWorkspace's bulk entry, called on consecutive chunks of steps, records exactly
    what its after_step does step by step (Decimation's step count carries over)."""
    d = diagram([blk("c", "constant", Value=1.0), blk("w", "toWorkspace", VariableName="y", SaveFormat="Array",
                                                         Decimation=dec, MaxDataPoints=cap)],
                [wire("c", "w")], dt=0.5, duration=1.0)
    plans = [nc.compile_plan(d), nc.compile_plan(d)]
    for p in plans:
        for f in p.init:
            f()
    per_step, bulk_plan = plans
    slot = per_step.slot_of[(0, 0)]
    after = per_step.phases[1].after_step
    bulk = bulk_plan.phases[1].after_step.bulk
    k = 0
    rng = np.random.default_rng(len(chunks))
    for n in chunks:
        ts = np.arange(k, k + n) * 0.5
        vals = rng.standard_normal(n)
        for t, v in zip(ts, vals):
            per_step.ctx.t = float(t)
            per_step.S[slot] = float(v)
            after()
        bulk(ts, vals)
        k += n
    a, b = per_step.phases[1].result(), bulk_plan.phases[1].result()
    assert _bytes(a) == _bytes(b)


def test_fast_path_not_taken_when_something_needs_major_steps():
    assert _taken(_stick_slip())
    # a scope (not a bulk recorder), a stop block, a gain between sensor and recorder
    with_scope = _stick_slip(extra_blocks=[blk("sc", "scope", inputs=1)], extra_wires=[wire("s_stop1", "sc")])
    assert not _taken(with_scope)
    stop = _stick_slip(extra_blocks=[blk("st", "stopSimulation")], extra_wires=[wire("v_stop1", "st")])
    assert not _taken(stop)
    gained = _stick_slip(recorders={"g": {}}, extra_blocks=[blk("g", "gain", Gain=2.0)],
                         extra_wires=[wire("s_stop1", "g"), wire("g", "rec_g")])
    assert not _taken(gained)
    # a block with committed side effects (a unit delay has UPDATE)
    delayed = _stick_slip(extra_blocks=[blk("dl", "unitDelay"), blk("term", "terminator")],
                          extra_wires=[wire("s_stop1", "dl"), wire("dl", "term")])
    assert not _taken(delayed)
    # and the results of the general path still equal
    for d in (with_scope, gained):
        assert _bytes(_run(d)) == _bytes(_run(d, per_step=True))


# ----------------------------------------------------------------------------- derivative cone

def _index(plan, block_id):
    return next(b.index for b in plan.diagram.blocks if b.id == block_id)


def test_cone_skips_recorded_sensors_only():
    plan = nc.compile_plan(_stick_slip())
    system = PlanSystem(plan)
    assert system.skipped == {_index(plan, "s_stop1"), _index(plan, "v_stop1")}
    assert len(system.stage_output) == len(plan.output) - 2


def test_cone_keeps_a_sensor_that_drives_a_force():
    """Position feedback: mass m=1 on a frictionless track, F = -k*s from a position
    sensor through a gain (a spring made of signals): s(t) = s0*cos(sqrt(k) t)."""
    k, s0 = 4.0, 0.3
    blocks = [blk("mass", "Mass", m=1.0, s0=s0, v0=0.0), blk("pos", "PositionSensor"),
              blk("k", "gain", Gain=-k), blk("f", "Force"), blk("spd", "SpeedSensor"),
              blk("w", "toWorkspace", VariableName="s", SaveFormat="Array"),
              blk("wv", "toWorkspace", VariableName="v", SaveFormat="Array")]
    wires = [{"from": "pos", "fromPin": "flange", "to": "mass", "toPin": "flange"},
             {"from": "spd", "fromPin": "flange", "to": "mass", "toPin": "flange"},
             {"from": "f", "fromPin": "flange", "to": "mass", "toPin": "flange"},
             wire("pos", "k"), wire("k", "f"), wire("pos", "w"), wire("spd", "wv")]
    for solver in ("ode45", "dae"):
        d = diagram(blocks, wires, dt=0.01, duration=2.0, solver=solver, relTol=1e-9, absTol=1e-12)
        plan = nc.compile_plan(d)
        system = PlanSystem(plan)
        assert _index(plan, "pos") not in system.skipped and _index(plan, "k") not in system.skipped
        assert _index(plan, "spd") in system.skipped
        res = plan.run()
        t = np.asarray(res["time"])
        s = np.asarray(res["workspace"]["s"], dtype=float)[:, 0]
        v = np.asarray(res["workspace"]["v"], dtype=float)[:, 0]
        w = math.sqrt(k)
        assert np.max(np.abs(s - s0 * np.cos(w * t))) < 1e-6
        assert np.max(np.abs(v + s0 * w * np.sin(w * t))) < 1e-6


def test_cone_keeps_impure_blocks():
    """A block outside the pure list is evaluated at every stage even when it feeds only
    a recorder (its closures may have effects the engine cannot see)."""
    d = _stick_slip(recorders={"lk": {}}, extra_blocks=[blk("lk", "lookup1D", BreakpointsForDimension1=[0.0, 1.0],
                                                               Table=[0.0, 1.0])],
                    extra_wires=[wire("s_stop1", "lk"), wire("lk", "rec_lk")])
    plan = nc.compile_plan(d)
    system = PlanSystem(plan)
    assert _index(plan, "lk") not in system.skipped
    assert _index(plan, "s_stop1") not in system.skipped     # it feeds the lookup
    assert _index(plan, "v_stop1") in system.skipped


# ----------------------------------------------------------------------------- circuits

def _circuit(source, solver="ode45", extra_blocks=(), extra_links=(), sensors=("A_v", "i_s")):
    """source -> i_s (CurrentSensor) -> R -> C -> ground, A_v (VoltageSensor)
    across C, the sensors recorded. 'A_v' sorts first among the acausal blocks, so it is
    the one that carries the island's part."""
    blocks = [blk("gnd", "Ground"), source, blk("i_s", "CurrentSensor"), blk("R", "Resistor", R=50.0),
              blk("C", "Capacitor", C=0.002), blk("A_v", "VoltageSensor")] + list(extra_blocks)
    src = source["id"]
    links = [pin(src, "n", "gnd", "p"), pin(src, "p", "i_s", "p"), pin("i_s", "n", "R", "p"), pin("R", "n", "C", "p"),
             pin("C", "n", "gnd", "p"), pin("A_v", "p", "C", "p"), pin("A_v", "n", "gnd", "p")] + list(extra_links)
    wires = []
    for sensor in sensors:
        blocks.append(blk(f"rec_{sensor}", "toWorkspace", VariableName=sensor, SaveFormat="Array"))
        wires.append(wire(sensor, f"rec_{sensor}"))
    return diagram(blocks, links + wires, dt=1e-3, duration=0.3, solver=solver, relTol=1e-6, absTol=1e-8)


CIRCUIT_SOURCES = {
    "constant": blk("V", "ConstantVoltage", V=2.0),            # c constant: L c0, Zc c0 once per mode
    "sine": blk("V", "SineVoltage", Amplitude=3.0, Frequency=5.0),             # a time function in c(t)
}


@pytest.mark.parametrize("solver", ["ode45", "dae"])
@pytest.mark.parametrize("source", sorted(CIRCUIT_SOURCES))
def test_circuit_sensors_skipped_and_recorded_in_bulk(source, solver):
    """Sensors of a linear circuit only read their island: solver stages skip them (also
    the one carrying the island's part), and their recorded values are computed from the
    grid states after the run, exactly as the major steps compute them."""
    d = _circuit(CIRCUIT_SOURCES[source], solver)
    plan = nc.compile_plan(d)
    system = PlanSystem(plan)
    assert {_index(plan, "A_v"), _index(plan, "i_s")} <= system.skipped
    assert plan.phases[_index(plan, "A_v")].part is not None
    assert not system.warm_started
    assert _taken(d)
    fast, slow = _run(d), _run(d, per_step=True)
    assert _bytes(fast) == _bytes(slow)
    v = np.asarray(fast["workspace"]["A_v"], dtype=float)[:, 0]
    assert v.shape == (301,) and np.ptp(v) > 0.1


def test_index_two_circuit_recorded_in_bulk():
    """A capacitor right across a sine source (index 2: its current needs the source's
    time derivative, the Zd c' term) read by a current sensor, in bulk as per step."""
    blocks = [blk("gnd", "Ground"), blk("V", "SineVoltage", Amplitude=3.0, Frequency=5.0), blk("i_s", "CurrentSensor"),
              blk("C", "Capacitor", C=0.002), blk("R", "Resistor", R=50.0),
              blk("rec", "toWorkspace", VariableName="i", SaveFormat="Array")]
    links = [pin("V", "n", "gnd", "p"), pin("V", "p", "i_s", "p"), pin("i_s", "n", "C", "p"), pin("C", "n", "gnd", "p"),
             pin("R", "p", "C", "p"), pin("R", "n", "gnd", "p")]
    d = diagram(blocks, links + [wire("i_s", "rec")], dt=1e-3, duration=0.3, solver="dae", relTol=1e-6, absTol=1e-8)
    assert _taken(d)
    fast, slow = _run(d), _run(d, per_step=True)
    assert _bytes(fast) == _bytes(slow)
    t = np.asarray(fast["time"])
    i = np.asarray(fast["workspace"]["i"], dtype=float)[:, 0]
    # i = C v' + v/R with v = 3 sin(10 pi t)
    expected = 0.002 * 3.0 * 10 * math.pi * np.cos(10 * math.pi * t) + 3.0 * np.sin(10 * math.pi * t) / 50.0
    assert np.max(np.abs(i - expected)) < 1e-6


def test_bulk_recording_holds_blocks_of_rows():
    """More grid points than one block of rows (``ROWS_AT_ONCE``): the same bytes."""
    d = _circuit(CIRCUIT_SOURCES["sine"], "dae")
    d["sampleTime"] = 0.3 / (2.5 * cont.ROWS_AT_ONCE)
    assert _taken(d)
    assert _bytes(_run(d)) == _bytes(_run(d, per_step=True))


def test_circuit_sensor_paths_not_taken():
    # a switching element (a diode and a load across C): the probe depends on the modes,
    # recorded per major step
    diode = _circuit(CIRCUIT_SOURCES["sine"], extra_blocks=[blk("D", "IdealDiode"), blk("RD", "Resistor", R=100.0)],
                     extra_links=[pin("D", "p", "C", "p"), pin("D", "n", "RD", "p"), pin("RD", "n", "gnd", "p")])
    plan = nc.compile_plan(diode)
    assert _index(plan, "A_v") in PlanSystem(plan).skipped and not _taken(diode)
    # a signal drives the island: the sensor may be skipped, but not the signal's source
    driven = _circuit(blk("V", "SignalVoltage"), extra_blocks=[blk("sig", "sine", Amplitude=2.0, Frequency=5.0)],
                      extra_links=[wire("sig", "V")])
    plan = nc.compile_plan(driven)
    system = PlanSystem(plan)
    assert _index(plan, "A_v") in system.skipped and _index(plan, "sig") not in system.skipped
    assert not _taken(driven)
    # a non-linear law solved by Newton's method (the node between the diode and its series
    # resistor): its sensors move Newton's warm start, so they run at every stage and the
    # driver evaluates at every step end (a law of the states alone is evaluated directly)
    exp_law = _circuit(CIRCUIT_SOURCES["sine"], extra_blocks=[blk("D", "Diode"), blk("RD", "Resistor", R=100.0)],
                       extra_links=[pin("D", "p", "C", "p"), pin("D", "n", "RD", "p"), pin("RD", "n", "gnd", "p")])
    plan = nc.compile_plan(exp_law)
    system = PlanSystem(plan)
    assert _index(plan, "A_v") not in system.skipped and system.warm_started
    assert not _taken(exp_law)
    for d in (diode, driven, exp_law):
        assert _bytes(_run(d)) == _bytes(_run(d, per_step=True))
