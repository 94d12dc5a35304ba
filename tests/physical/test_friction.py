"""MSL 4.1.0 stick-slip friction (nflow_compat.physical.friction): its pure state machine,
and its elements (Brake, Clutch, MassWithStopAndFriction) run through diagrams against
closed forms and MSL's event sequences. The MSL reference examples themselves are
tests/system/test_msl_fixtures.py."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from nflow_compat.physical import friction as fr
from tests import goldens
from tests.physical.mechanisms import mode_changes, sensed
from tests.util import blk, diagram, pin, wire


# --------------------------------------------------------------------------------------
# The MSL examples: what the tube test of tests/system/test_msl_fixtures.py does not check

@pytest.fixture(scope="module", params=["ode45", "dae"])
def tf_run(request):
    fixture = goldens.load(goldens.ROOT / "msl" / "translational_friction.json")
    result = nc.simulate(dict(fixture["diagram"], solver=request.param))
    return np.asarray(result["time"]), result


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_coupled_clutches_events_close_to_the_reference_times(solver):
    fixture = goldens.load(goldens.ROOT / "msl" / "coupled_clutches.json")
    result = nc.simulate(dict(fixture["diagram"], solver=solver))
    got = [e["t"] for e in result["events"] if e["kind"] == "mode"]
    want = [e[0] for e in fixture["events"]]
    assert len(got) == len(want)
    assert max(abs(g - w) for g, w in zip(got, want)) < 2e-5   # measured: ~5e-6 (the notes' own check <= 4e-6)


def test_stop_reinit_and_stuck_velocity_kept(tf_run):
    # stop2 (L 1, smax 0.9, smin -0.9: its centre stays in [-0.4, 0.4]) is stuck for good
    # after 1.046: v keeps its tiny located value (a = 0 is integrated, v is never forced to
    # 0) and s therefore stays (nearly) constant; the recorded flange_a is s - L/2
    t, result = tf_run
    s = np.asarray(result["workspace"]["stop2.s"])[:, 0] + 0.5
    v = np.asarray(result["workspace"]["stop2.v"])[:, 0]
    late = t > 1.05
    assert np.all(v[late] == v[late][0]) and abs(v[late][0]) < 1e-8
    assert np.ptp(s[late]) < 1e-7
    assert np.all(s >= -0.4) and np.all(s <= 0.4)
    # the first impact at 0.0606 stops it (stuck) and it breaks away forward at once
    first = [(e["block"], e["from"], e["to"]) for e in result["events"] if e["kind"] == "mode"][:2]
    assert first == [("stop2", "backward", "stuck"), ("stop2", "stuck", "forward")]


# --------------------------------------------------------------------------------------
# Small diagrams with closed forms

def _one(value):
    return blk("fn", "constant", Value=value)


@pytest.mark.parametrize("solver", ["ode45", "dae", "ode4"])
def test_brake_with_a_friction_table_stops_a_sliding_mass_at_the_closed_form_time(solver):
    # f = mu*cgeo*fn_max*fn = 0.5*1*10*1 = 5 N on m = 2: a = -2.5 from v0 = 3, stuck at
    # t = 1.2 with s = v0^2/(2*2.5) = 1.8
    blocks = [blk("m", "Mass", m=2.0, v0=3.0), blk("brake", "Brake", fn_max=10.0, mu_pos=[[0.0, 0.5]]), _one(1.0)]
    conns = [pin("m", "flange", "brake", "flange"), wire("fn", "brake")]
    res, t, out = sensed(blocks, conns, {"s": ("PositionSensor", "m", "flange"), "v": ("SpeedSensor", "m", "flange")},
                         dt=0.01, duration=3.0, solver=solver)
    assert mode_changes(res) == [("brake", "forward", "stuck")]
    assert abs(res["events"][-1]["t"] - 1.2) < 1e-9
    assert out["s"][-1] == pytest.approx(1.8, abs=1e-9) and out["v"][-1] == pytest.approx(0.0, abs=1e-9)
    sliding = t < 1.2
    np.testing.assert_allclose(out["v"][sliding], 3.0 - 2.5 * t[sliding], atol=1e-9)


@pytest.mark.parametrize("fn", [0.0, -1.0])
def test_a_brake_is_free_for_zero_or_negative_normal_force(fn):
    blocks = [blk("m", "Mass", v0=2.0), blk("brake", "Brake", fn_max=10.0), _one(fn)]
    conns = [pin("m", "flange", "brake", "flange"), wire("fn", "brake")]
    res, _, out = sensed(blocks, conns, {"v": ("SpeedSensor", "m", "flange")}, dt=0.1, duration=1.0)
    np.testing.assert_array_equal(out["v"], 2.0)
    assert all(to == "free" for _, _, to in mode_changes(res))


@pytest.mark.parametrize("solver", ["ode45", "dae"])
def test_a_clutch_engages_and_locks_conserving_momentum(solver):
    # A (J 1, 10 rad/s) - clutch engaged at 0.5 (fn_max 10, mu 0.5: tau 5) - B (J 3, at rest):
    # sliding backward (w_rel = -10) until w_rel' = 5/1 + 5/3 = 20/3 closes it at 0.5 + 1.5,
    # then both at 10/4
    blocks = [blk("A", "Inertia", J=1.0, w0=10.0), blk("B", "Inertia", J=3.0), blk("c", "Clutch", fn_max=10.0),
              blk("fn", "step", Time=0.5)]
    conns = [pin("A", "flange", "c", "a"), pin("c", "b", "B", "flange"), wire("fn", "c")]
    res, _, out = sensed(blocks, conns, {"wa": ("RotSpeedSensor", "A", "flange"), "wb": ("RotSpeedSensor", "B", "flange")},
                         dt=0.01, duration=3.0, solver=solver)
    changes = [(round(e["t"], 9), e["from"], e["to"]) for e in res["events"] if e["kind"] == "mode"]
    assert changes == [(0.5, "free", "backward"), (2.0, "backward", "stuck")]
    np.testing.assert_allclose([out["wa"][-1], out["wb"][-1]], 2.5, atol=1e-9)
    np.testing.assert_allclose(out["wa"] + 3.0 * out["wb"], 10.0, rtol=1e-12)


def test_breakaway_at_the_threshold():
    # a ramp force 10 t on a MassWithStopAndFriction (F_Coulomb 5 + F_Stribeck 10 = f0 15):
    # stuck until F = f0_max = 1.001 f0 (t = 1.5015), then Forward; at rest while stuck
    blocks = [blk("F", "Force"), blk("m", "MassWithStopAndFriction", smax=10.0, smin=-10.0),
              blk("r", "ramp", slope=10.0)]
    conns = [pin("F", "flange", "m", "flange_a"), wire("r", "F")]
    res, t, out = sensed(blocks, conns, {"v": ("SpeedSensor", "m", "flange_a")}, dt=0.01, duration=2.0)
    changes = [(e["t"], e["block"], e["from"], e["to"]) for e in res["events"] if e["kind"] == "mode"]
    assert [c[1:] for c in changes][-1] == ("m", "stuck", "forward")
    assert abs(changes[-1][0] - 1.001 * 15.0 / 10.0) < 1e-9
    assert np.all(out["v"][t < 1.5] == 0.0) and out["v"][-1] > 0.0


@pytest.mark.parametrize("s0, v0", [(-0.6, 0.0), (0.5, 1.0), (-0.5, -1.0)])
def test_a_stop_violated_at_initialisation_is_an_error(s0, v0):
    blocks = [blk("m", "MassWithStopAndFriction", smin=-0.5, smax=0.5, s0=s0, v0=v0)]
    with pytest.raises(nc.SimulationError) as err:
        nc.simulate(diagram(blocks, [], solver="ode45"))
    assert err.value.code == "stop_violated_at_init" and err.value.block == "m"


def test_at_a_stop_moving_inward_is_allowed():
    blocks = [blk("m", "MassWithStopAndFriction", smin=-0.5, smax=0.5, s0=0.5, v0=-1.0)]
    res, _, out = sensed(blocks, [], {"s": ("PositionSensor", "m", "flange_a")}, duration=1.0)
    assert out["s"][-1] < out["s"][0]


def test_the_flanges_of_a_mass_with_stop_and_friction_are_half_its_length_from_its_centre():
    blocks = [blk("m", "MassWithStopAndFriction", L=1.0, smax=0.9, smin=-0.9, s0=0.1, v0=2.0), blk("g", "Fixed", s0=-1.75),
              blk("k", "Spring", k=500.0, s_rel0=1.0)]
    conns = [pin("k", "a", "g", "flange"), pin("k", "b", "m", "flange_a")]
    _, _, out = sensed(blocks, conns, {"a": ("PositionSensor", "m", "flange_a"), "b": ("PositionSensor", "m", "flange_b"),
                                       "vb": ("SpeedSensor", "m", "flange_b")}, dt=0.01, duration=0.01)
    assert out["a"][0] == pytest.approx(-0.4) and out["b"][0] == pytest.approx(0.6) and out["vb"][0] == 2.0


def test_a_clutch_peak_below_1_is_refused():
    blocks = [blk("c", "Clutch", peak=0.5), blk("J", "Inertia"), _one(1.0)]
    with pytest.raises(nc.DiagramError) as err:
        nc.simulate(diagram(blocks, [pin("c", "a", "J", "flange"), wire("fn", "c")], solver="ode45"))
    assert err.value.param == "peak"


# --------------------------------------------------------------------------------------
# The pure state machine

def test_start_flag_hysteresis_and_thresholds():
    pre = fr.FrictionState(fr.STUCK, False, False)
    f0, fmax = 15.0, 15.015
    # between f0 and f0_max: no start without the flag, kept with it (hysteresis)
    assert fr.start_flags(pre, 15.01, 0.0, 1e-3, True, True, f0, fmax, False) == (False, False)
    held = fr.FrictionState(fr.STUCK, True, False)
    assert fr.start_flags(held, 15.01, 0.0, 1e-3, True, True, f0, fmax, False) == (True, False)
    assert fr.start_flags(held, 14.99, 0.0, 1e-3, True, True, f0, fmax, False) == (False, False)
    # no room at the right stop: no forward start however large sa
    assert fr.start_flags(pre, 100.0, 0.0, 1e-3, False, True, f0, fmax, False) == (False, False)
    # direct reversal after a velocity jump beyond v_small
    back = fr.FrictionState(fr.BACKWARD)
    assert fr.start_flags(back, 0.0, 2e-3, 1e-3, True, True, f0, fmax, False) == (True, False)
    assert fr.start_flags(back, 0.0, 5e-4, 1e-3, True, True, f0, fmax, False) == (False, False)
    # initial(): the sign of v decides
    unk = fr.FrictionState()
    assert fr.start_flags(unk, 0.0, -5.0, 1e-3, True, True, f0, fmax, True) == (False, True)
    law = fr.StribeckStopLaw("m", F_Coulomb=5, F_Stribeck=10)
    assert law.thresholds(0.0) == (15.0, 15.0 * 1.001)


def test_mode_machine():
    nm = fr.next_mode
    assert nm(False, fr.FORWARD, False, False, -1e-15, True, True) == fr.STUCK
    assert nm(False, fr.STUCK, False, True, -1e-15, True, True) == fr.BACKWARD
    assert nm(False, fr.STUCK, True, False, 0.0, True, True) == fr.STUCK
    assert nm(False, fr.FREE, False, False, 3.0, True, True) == fr.FORWARD
    assert nm(False, fr.FORWARD, False, False, 1.0, False, True) == fr.STUCK   # at the stop
    assert nm(True, fr.FORWARD, False, False, 1.0, True, True) == fr.FREE
    assert fr.is_locked(False, fr.STUCK, False, False)
    assert not fr.is_locked(False, fr.FORWARD, False, False)
    assert not fr.is_locked(True, fr.STUCK, False, False)


def test_clutch_start_backward_table_sign_asymmetry():
    table = [[0.0, 0.5], [1.0, 0.7]]
    clutch = fr.TableFrictionLaw("c", kind="clutch", table=table, fn_max=1.0)
    brake = fr.TableFrictionLaw("b", kind="brake", table=table, fn_max=1.0)
    v, fn = -0.5, 2.0
    # Clutch: (+w, -mu) -> -mu(v); Brake: (-w, -mu) -> -mu(-v); linear extrapolation
    assert clutch.force(fr.START_B, v, fn) == pytest.approx(-(0.5 + 0.2 * v) * fn)
    assert brake.force(fr.START_B, v, fn) == pytest.approx(-(0.5 - 0.2 * v) * fn)
    assert clutch.force(fr.SLIDE_B, v, fn) == pytest.approx(-(0.5 - 0.2 * v) * fn)
    assert clutch.thresholds(fn) == (1.0, 1.0)
    assert clutch.is_free(0.0, True, True) and clutch.is_free(-1.0, True, True)


# --------------------------------------------------------------------------------------
# Properties

PROP = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROP
@given(m=st.floats(0.2, 5.0), Fc=st.floats(0.0, 5.0), Fs=st.floats(0.0, 5.0),
       Fp=st.floats(0.0, 3.0), fexp=st.floats(0.0, 5.0), c=st.floats(10.0, 500.0),
       v0=st.floats(-8.0, 8.0), s0=st.floats(-0.3, 0.3))
def test_friction_never_adds_energy(m, Fc, Fs, Fp, fexp, c, v0, s0):
    """Unforced spring-mass with Stribeck friction and stops: the mechanical energy never grows."""
    blocks = [blk("m", "MassWithStopAndFriction", m=m, F_prop=Fp, F_Coulomb=Fc, F_Stribeck=Fs, fexp=fexp,
                  smin=-0.5, smax=0.5, s0=s0, v0=v0), blk("k", "Spring", k=c), blk("g", "Fixed")]
    conns = [pin("g", "flange", "k", "a"), pin("k", "b", "m", "flange_a")]
    _, _, out = sensed(blocks, conns, {"s": ("PositionSensor", "m", "flange_a"), "v": ("SpeedSensor", "m", "flange_a")},
                       dt=0.005, duration=1.0, relTol=1e-9, absTol=1e-11)
    energy = 0.5 * m * out["v"] ** 2 + 0.5 * c * out["s"] ** 2
    assert np.all(np.diff(energy) <= 1e-7 * max(1.0, energy[0]))


@PROP
@given(J=st.lists(st.floats(0.1, 3.0), min_size=3, max_size=3),
       fn=st.lists(st.floats(0.5, 30.0), min_size=2, max_size=2),
       amp=st.floats(0.0, 40.0), freq=st.floats(0.2, 3.0), peak=st.floats(1.0, 1.5))
def test_a_stuck_clutch_transmits_without_slip(J, fn, amp, freq, peak):
    """A sine torque on a chain of inertias through two clutches to a brake: between a
    clutch's mode changes to stuck and away from it, both its sides turn at one speed."""
    blocks = [blk("T", "SineTorque", Amplitude=amp, Frequency=freq), blk("br", "RotBrake", fn_max=fn[0] * 0.3),
              _one(1.0)] + [blk(f"J{k}", "Inertia", J=J[k]) for k in range(3)]
    blocks += [blk(f"c{k}", "Clutch", fn_max=fn[k], peak=peak) for k in range(2)]
    conns = [pin("T", "flange", "J0", "flange"), pin("J2", "flange", "br", "flange"), wire("fn", "br")]
    for k in range(2):
        conns += [pin(f"J{k}", "flange", f"c{k}", "a"), pin(f"c{k}", "b", f"J{k + 1}", "flange"), wire("fn", f"c{k}")]
    res, t, out = sensed(blocks, conns, {f"w{k}": ("RotSpeedSensor", f"J{k}", "flange") for k in range(3)},
                         dt=0.01, duration=2.0, relTol=1e-6, absTol=1e-9)
    checked = 0
    for k in range(2):
        changes = [(e["t"], e["to"]) for e in res["events"] if e["kind"] == "mode" and e["block"] == f"c{k}"]
        stuck = np.ones(t.size, dtype=bool)          # at rest at t = 0: everything is stuck
        for (t_change, to), t_next in zip(changes, [c[0] for c in changes[1:]] + [math.inf]):
            stuck[(t >= t_change) & (t <= t_next)] = to == "stuck"
        for t_change, _ in changes:
            stuck[np.abs(t - t_change) < 1e-9] = False
        np.testing.assert_allclose(out[f"w{k}"][stuck], out[f"w{k + 1}"][stuck], atol=1e-9)
        checked += int(stuck.sum())
    assert checked
