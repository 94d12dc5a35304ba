"""The solver-driven engine (nflow_compat.engine.solver_driven, system, recording): continuous blocks under each
solver against closed forms, event functions moved by fast inputs, and the fast paths
(bulk recording, the derivative cone, the one-coordinate island arithmetic), each giving
exactly what the general path gives."""
from __future__ import annotations

import math

import numpy as np
import orjson
import pytest
from hypothesis import given, settings, strategies as st

import nflow_compat as nc
from nflow_compat.engine import recording
from nflow_compat.engine.recording import bulk_recorders
from nflow_compat.engine.solver_driven import SCANS_PER_SCALE, inputs_scan_spacing
from nflow_compat.engine.system import PlanSystem
from nflow_compat.engine.hybrid import integrate_hybrid
from nflow_compat.manifests import block_types
from tests.rectifiers import rectifier
from tests.util import blk, diagram, pin, record, trace, wire


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
    return bulk_recorders(plan, PlanSystem(plan), None) is not None


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
    bulk = bulk_plan.phases[1].bulk.record
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


def test_bulk_recording_holds_blocks_of_rows(monkeypatch):
    """More grid points than one block of rows (``rows_at_once``, here its least): the same bytes."""
    monkeypatch.setattr(recording, "STATE_VALUES_AT_ONCE", 0)
    d = _circuit(CIRCUIT_SOURCES["sine"], "dae")
    d["sampleTime"] = 0.3 / (2.5 * recording.MIN_ROWS_AT_ONCE)
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


# --------------------------------------------------------------------------------------------------
# Event functions moved by fast inputs (issue 10, item 3).
#
# Error control watches the states only. A stuck mass driven by a fast sine has a trivial
# ODE (the state is at rest), so the solver's steps grow to maxStep and the event functions
# are checked at the steps and a few equidistant points inside: when those land on zeros of
# the input, every breakaway is missed and the result is silently wrong. Sources declare
# their time scale (``Phases.time_scale``) and the event functions are checked
# ``SCANS_PER_SCALE`` times per scale of the fastest source that reaches a continuous part.
# --------------------------------------------------------------------------------------------------

FREQUENCY = 200.0                       # Hz: 5 ms period
F0_MAX = 1.001 * (5.0 + 10.0)           # MSL: f0_max = 1.001*(F_Coulomb + F_Stribeck)


def _stop_mass(solver, duration, max_step=0.2, frequency=FREQUENCY, amplitude=100.0):
    """Force = 100 sin(2 pi f t) -> MassWithStopAndFriction (position recorded), sampleTime
    0.01 (two periods: every grid point is a zero of the force). maxStep 0.2 puts the
    steps and the three interior checks of a step of the state at rest on multiples of
    2.5 periods, zeros of the force, as the automatic maxStep (duration/50) does at
    duration 10 in the report."""
    blocks = [blk("sine", "sine", Amplitude=amplitude, Frequency=frequency),
              blk("force", "Force"),
              blk("stop1", "MassWithStopAndFriction", m=1.0, L=1.0, smax=25.0, smin=-25.0, F_prop=1.0,
                  F_Coulomb=5.0, F_Stribeck=10.0, fexp=2.0, v_small=1e-3, s0=0.0, v0=0.0),
              blk("s", "PositionSensor"), record("rec", "s")]
    wires = [wire("sine", "force"),
             {"from": "force", "fromPin": "flange", "to": "stop1", "toPin": "flange_a"},
             {"from": "s", "fromPin": "flange", "to": "stop1", "toPin": "flange_a"},
             wire("s", "rec")]
    return diagram(blocks, wires, dt=0.01, duration=duration, solver=solver, maxStep=max_step)


def _event_times(result) -> np.ndarray:
    return np.array([e["t"] for e in result["events"]])


@pytest.mark.parametrize("solver", ["dae", "ode45", "ode4"])
def test_breakaways_driven_by_a_fast_sine_are_seen_under_every_solver(solver):
    res = nc.simulate(_stop_mass(solver, 0.05))
    times = _event_times(res)
    # analytic: stuck until 100 sin(2 pi f t) passes f0_max, then (amplitude far above the
    # friction) a direct reversal at each half period: two events a period, 10 periods
    assert len(times) == 20
    assert res["events"][0]["from"] == "stuck" and res["events"][0]["to"] == "forward"
    first = math.asin(F0_MAX / 100.0) / (2.0 * math.pi * FREQUENCY)
    assert times[0] == pytest.approx(first, abs=1e-12)
    # one reversal in each half period
    assert np.array_equal(np.floor(times[1:] / 0.0025).astype(int), np.arange(1, 20))


def test_dae_and_ode45_give_the_same_events_at_any_duration():
    runs = {(solver, duration): _event_times(nc.simulate(_stop_mass(solver, duration)))
            for solver in ("dae", "ode45") for duration in (0.05, 0.1)}
    for duration in (0.05, 0.1):
        dae, ode45 = runs["dae", duration], runs["ode45", duration]
        assert len(dae) == len(ode45) == round(duration * 2 * FREQUENCY)
        assert np.abs(dae - ode45).max() < 1e-6


def test_integrate_hybrid_checks_at_the_scan_spacing():
    # x' = 0 and the relation sin(2 pi f t) > 1/2: steps of 0.05 s with 3 interior checks
    # look only at multiples of 2.5 periods (sin = 0); the spacing finds both flips of
    # every period, the first at asin(1/2)/(2 pi f) = 1/(12 f) (analytic)
    class Toy:
        def derivative(self, t, x):
            return np.zeros(1)

        def event_functions(self, t, x):
            return np.array([math.sin(2.0 * math.pi * FREQUENCY * t) - 0.5])

        def handle_events(self, t, x, fired):
            return x

    grid = np.array([0.0, 0.2])
    blind = integrate_hybrid(Toy(), [0.0], grid, method="ode45", max_step=0.05, first_step=0.05)
    assert blind.events == []
    seen = integrate_hybrid(Toy(), [0.0], grid, method="ode45", max_step=0.05, first_step=0.05,
                            scan_spacing=0.5 / FREQUENCY / SCANS_PER_SCALE)
    assert len(seen.events) == 2 * 40
    assert seen.events[0][0] == pytest.approx(1.0 / (12.0 * FREQUENCY), abs=1e-12)
    assert seen.stats["input_checks"] > 0


def test_integrate_hybrid_rejects_a_bad_scan_spacing():
    with pytest.raises(nc.SimulationError) as err:
        integrate_hybrid(type("S", (), {"derivative": lambda s, t, x: x, "event_functions": lambda s, t, x: x,
                                        "handle_events": lambda s, t, x, f: x})(), [1.0], [0.0, 1.0],
                         scan_spacing=0.0)
    assert err.value.code == "bad_scan_spacing"


def test_the_checks_count_against_the_solver_step_limit():
    # a stuck mass (10 N < f0_max) under 1e5 Hz for 0.5 s: 8e5 checks; the limit says 1000
    d = _stop_mass("dae", 0.5, frequency=1e5, amplitude=10.0)
    with pytest.raises(nc.SimulationError) as err:
        nc.simulate(d, limits=nc.Limits(max_solver_steps=1000))
    assert err.value.code == "too_many_steps" and "event checks" in err.value.message


def _scale(block, t0=0.0, t1=10.0, solver="discrete"):
    plan = nc.compile_plan(diagram([dict(block, id="src"), record()], [wire("src", "w")], solver=solver))
    phases = plan.phases[0]
    return None if phases.time_scale is None else phases.time_scale(t0, t1)


@pytest.mark.parametrize("block, expected", [
    (blk("x", "sine", Frequency=4.0), 0.125),                         # half a period
    (blk("x", "sine", Frequency=-4.0), 0.125),
    (blk("x", "sine", Frequency=0.0), math.inf),
    (blk("x", "signalGenerator", Frequency=2.0, Waveform="square"), 0.25),
    # f(t) = f1 + (f2 - f1)/T t: 1 + 1*10 = 11 Hz at t = 10
    (blk("x", "chirp", f1=1.0, f2=11.0, T=10.0), 0.5 / 11.0),
    # high 0.25 s, low 0.75 s
    (blk("x", "pulse", Period=1.0, Width=25.0), 0.25),
    (blk("x", "pulse", Period=1.0, Width=100.0), math.inf),
    (blk("x", "repeatingSequenceInterpolated", TimeValues=[0.0, 0.3, 0.35, 1.0], OutValues=[0, 1, 0, 2]), 0.05),
    (blk("x", "fromWorkspace", Data=[[0.0, 1.0], [0.1, 2.0], [0.15, 0.0], [1.0, 3.0]]), 0.05),
    (blk("x", "fileSource", times=[0.0, 0.5, 0.5, 0.7], values=[1, 2, 3, 4]), 0.2),   # a repeated time: a jump
])
def test_sources_declare_their_time_scale(block, expected):
    assert _scale(block) == pytest.approx(expected, rel=1e-12)


def test_played_back_samples_count_only_within_the_interval():
    data = [[0.0, 1.0], [0.1, 2.0], [0.15, 0.0], [1.0, 3.0], [3.0, 0.0]]
    block = blk("x", "fromWorkspace", Data=data)
    assert _scale(block, 0.5, 2.0) == pytest.approx(0.85)     # [0.15, 1] and [1, 3] meet [0.5, 2]
    assert _scale(block, 1.5, 2.0) == pytest.approx(2.0)      # only [1, 3]
    assert _scale(block, 0.12, 0.5) == pytest.approx(0.05)
    assert _scale(block, 4.0, 5.0) == math.inf                 # after the last sample: held/extrapolated


@pytest.mark.parametrize("block", [blk("x", "constant", Value=1.0), blk("x", "ramp", slope=1.0),
                                   blk("x", "step", Time=0.5), blk("x", "clock")])
def test_sources_without_a_time_scale(block):
    assert _scale(block) is None


def test_a_source_read_only_by_recorders_does_not_set_the_spacing():
    d = _stop_mass("ode45", 0.05)
    d["blocks"].append(blk("fast", "sine", Frequency=1e6))
    d["blocks"].append(record("rec_fast", "fast"))
    d["connections"].append(wire("fast", "rec_fast"))
    plan = nc.compile_plan(d)
    spacing = inputs_scan_spacing(plan, PlanSystem(plan).skipped, 0.0, 0.05)
    assert spacing == pytest.approx(0.5 / FREQUENCY / SCANS_PER_SCALE)


# --------------------------------------------------------------------------------------------------
# Continuous blocks under each solver against closed forms, with the tolerance each
# solver can promise: ode1 (= nflow's fixed-step forward Euler) O(dt), ode4 O(dt^4),
# ode45/dae the diagram's relTol/absTol. Events (limits, switches, steps) are located.
# --------------------------------------------------------------------------------------------------

DT, T_END = 0.05, 2.0
TOL = {"ode1": 5e-2, "ode4": 1e-6, "ode45": 1e-7, "dae": 1e-5}
t = np.arange(int(T_END / DT + 1e-9) + 1) * DT


def run(blocks, conns, solver, **extra):
    return trace(diagram(blocks + [record()], conns, dt=DT, duration=T_END, solver=solver,
                         relTol=1e-9, absTol=1e-11, **extra))[:, 0]


@pytest.mark.parametrize("solver", list(TOL))
def test_integrator_feedback_is_an_exponential(solver):
    # x' = -2x, x(0) = 1
    y = run([blk("i", "integrator", InitialCondition=1), blk("g", "gain", Gain=-2)],
            [wire("i", "g"), wire("g", "i"), wire("i", "w")], solver)
    assert np.max(np.abs(y - np.exp(-2 * t))) < TOL[solver]


@pytest.mark.parametrize("solver", list(TOL))
def test_first_order_transfer_function_step_response(solver):
    # 2/(0.5 s + 1): y = 2 (1 - exp(-2 t))
    y = run([blk("c", "constant", Value=1), blk("h", "tf", Numerator=[2], Denominator=[0.5, 1])],
            [wire("c", "h"), wire("h", "w")], solver)
    reference = 2 * (1 - np.exp(-2 * t))
    if solver == "ode1":     # nflow's fixed-step tf takes one RK4 step per dt
        assert np.max(np.abs(y - reference)) < 1e-5
    else:
        assert np.max(np.abs(y - reference)) < TOL[solver]


@pytest.mark.parametrize("solver", ["ode4", "ode45", "dae"])
def test_second_order_transfer_function_step_response(solver):
    # wn^2/(s^2 + 2 z wn s + wn^2), wn = 3, z = 0.2, unit step
    wn, z = 3.0, 0.2
    wd = wn * math.sqrt(1 - z * z)
    y = run([blk("c", "constant", Value=1), blk("h", "tf", Numerator=[wn * wn], Denominator=[1, 2 * z * wn, wn * wn])],
            [wire("c", "h"), wire("h", "w")], solver)
    reference = 1 - np.exp(-z * wn * t) * (np.cos(wd * t) + z / math.sqrt(1 - z * z) * np.sin(wd * t))
    assert np.max(np.abs(y - reference)) < 10 * TOL[solver]


@pytest.mark.parametrize("solver", ["ode4", "ode45", "dae"])
def test_state_space_and_filters(solver):
    # stateSpace x' = -x + u, y = x ; lpf with wc = 1 ; both give 1 - exp(-t) for a unit step
    for block in (blk("h", "stateSpace", A=-1, B=1, C=1, D=0), blk("h", "lpf", Cutoff=1 / (2 * math.pi))):
        y = run([blk("c", "constant", Value=1), block], [wire("c", "h"), wire("h", "w")], solver)
        assert np.max(np.abs(y - (1 - np.exp(-t)))) < TOL[solver]


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_integrator_limit_is_reached_at_the_right_time(solver):
    # integrate 2 from 0 with an upper limit 0.53: reaches it at t = 0.265, then holds
    d = diagram([blk("c", "constant", Value=2), blk("i", "integrator", UpperSaturationLimit=0.53), record()],
                [wire("c", "i"), wire("i", "w")], dt=0.01, duration=0.5, solver=solver)
    y = trace(d)[:, 0]
    tt = np.arange(51) * 0.01
    assert np.allclose(y, np.minimum(2 * tt, 0.53), atol=1e-9)


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_saturated_sine_integrated_with_located_kinks(solver):
    # x' = sat(sin t, -0.5, 0.5): the kinks at t = pi/6 and 5 pi/6 are located, so the
    # closed form is matched to the solver tolerance, not to the step size
    d = diagram([blk("s", "sine", Amplitude=1, Frequency=1 / (2 * math.pi)),
                 blk("sat", "saturation", LowerLimit=-0.5, UpperLimit=0.5), blk("i", "integrator"), record()],
                [wire("s", "sat"), wire("sat", "i"), wire("i", "w")], dt=0.1, duration=3.0, solver=solver,
                relTol=1e-10, absTol=1e-12)
    y = trace(d)[:, 0]
    tt = np.arange(31) * 0.1
    a, b = math.pi / 6, 5 * math.pi / 6
    ref = np.where(tt < a, 1 - np.cos(tt),
                   np.where(tt < b, 1 - math.cos(a) + 0.5 * (tt - a), 1 - math.cos(a) + 0.5 * (b - a)
                            + np.cos(b) - np.cos(tt)))
    assert np.max(np.abs(y - ref)) < (1e-8 if solver == "ode45" else 1e-6)


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_step_input_is_a_time_event(solver):
    # x' = step(t - 0.33): x = max(0, t - 0.33) exactly, the jump between grid points
    d = diagram([blk("s", "step", Time=0.33), blk("i", "integrator"), record()],
                [wire("s", "i"), wire("i", "w")], dt=0.1, duration=1.0, solver=solver)
    y = trace(d)[:, 0]
    assert np.allclose(y, np.maximum(0, np.arange(11) * 0.1 - 0.33), atol=1e-10)


def test_switch_surfaces_restart_the_solver():
    # x' = (t >= 0.37) ? 1 : -1 via a switch on a clock: x = -t then t - 0.74
    d = diagram([blk("clk", "clock"), blk("p", "constant", Value=1), blk("m", "constant", Value=-1),
                 blk("sw", "switch", Threshold=0.37), blk("i", "integrator"), record()],
                [wire("p", "sw", 0, 0), wire("clk", "sw", 0, 1), wire("m", "sw", 0, 2), wire("sw", "i"),
                 wire("i", "w")], dt=0.1, duration=1.0, solver="ode45", relTol=1e-10, absTol=1e-12)
    tt = np.arange(11) * 0.1
    assert np.allclose(trace(d)[:, 0], np.where(tt < 0.37, -tt, tt - 0.74), atol=1e-9)


def test_resettable_integrator_under_a_solver():
    # rising reset at t = 0.5 (seen at that grid point) re-seeds to IC = 0
    d = diagram([blk("c", "constant", Value=1), blk("r", "step", Time=0.5),
                 blk("i", "integrator", inputs=2, ExternalReset="rising"), record()],
                [wire("c", "i"), wire("r", "i", 0, 1), wire("i", "w")], dt=0.1, duration=1.0, solver="ode45")
    y = trace(d)[:, 0]
    tt = np.arange(11) * 0.1
    assert np.allclose(y, np.where(tt < 0.5 - 1e-9, tt, tt - 0.5), atol=1e-9)


@pytest.mark.parametrize("solver", ["ode4", "ode45", "dae"])
def test_block_reference_does_not_call_running_blocks_unsupported(solver):
    # every continuous-library block that runs under the solver: its help (docs/blocks, the
    # schemas) must not say it is not supported there
    for name, bt in block_types().items():
        if bt.library != "continuous" or name == "constraint" or bt.outputs == 0:
            continue
        d = diagram([blk("c", "constant", Value=1.0), blk("b", name), record()],
                    [wire("c", "b"), wire("b", "w")], duration=0.5, solver=solver)
        try:
            nc.simulate(d)
        except nc.SimulationError as err:
            assert err.code == "unsupported_solver", (name, err)
            continue
        assert "not supported" not in bt.help, name


def test_a_fixed_step_a_solve_cannot_take_is_taken_in_substeps_with_a_warning():
    # RK4 at 0.5 ms on a half-wave rectifier charging from 0 V: a stage of its first step
    # asks for the diode far forward, where its current overflows (no solution): that grid
    # interval is integrated in substeps, and the result says so, naming the island
    res = nc.simulate(dict(rectifier(False, 1e3, 22e-6, "ode4", 0.003), sampleTime=5e-4))
    (warning,) = [w for w in res["warnings"] if "substeps" in w]
    assert "classical RK4 (solver 'ode4') could not take its step at t = 0 s" in warning
    assert "island {C, D, G, R, ...}" in warning and "down to 0.00025 s" in warning
    assert len(res["time"]) == 7
