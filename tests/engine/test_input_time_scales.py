"""Event functions moved by fast inputs (issue 10, item 3).

Error control watches the states only. A stuck mass driven by a fast sine has a trivial
ODE (the state is at rest), so the solver's steps grow to maxStep and the event functions
are checked at the steps and a few equidistant points inside: when those land on zeros of
the input, every breakaway is missed and the result is silently wrong. Sources declare
their time scale (``Phases.time_scale``) and the event functions are checked
``SCANS_PER_SCALE`` times per scale of the fastest source that reaches a continuous part.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import nflow_compat as nc
from nflow_compat.engine.continuous import SCANS_PER_SCALE, PlanSystem, inputs_scan_spacing
from nflow_compat.engine.hybrid import integrate_hybrid

from tests.util import blk, diagram, record, wire

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
