"""Every example under examples/ runs, and the mechanical ones reproduce their closed forms.

The examples are the diagrams of two seed pages ("End stops and motion sources" on the Mass
with stops page, "Clutch, backlash, and rotational sources" on the Clutch page) plus a
momentum check of a locking clutch.  Each diagram is run as written ('dae') and again under
'ode45'.  The reference numbers below come from closed forms, or, for the stop times of the
sliding mass (a nonlinear friction ODE without a closed form), from an independent scipy
integration of the sliding equation; nothing here is computed with nflow_compat itself.

Tolerances: the diagrams ask for relTol 1e-8 / absTol 1e-10.  Located events (mode changes,
contacts) are held to 1e-6 s, the band the MSL friction semantics are specified to (measured:
< 5e-9 s).  Piecewise-polynomial motions (free flight, constant acceleration, prescribed
speed) are exact for the integrators, so they get 1e-9; smooth non-polynomial ones carry the
integration error of relTol 1e-8 and get 1e-6 (measured <= 3e-8).
"""
from __future__ import annotations

import json
import math
import re
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm

import nflow_compat as nc
from nflow_compat.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ALL = sorted(p.parent.name for p in EXAMPLES.glob("*/diagram.json"))
MECHANICAL = ["end_stops_and_motion_sources", "clutch_backlash_and_rotational_sources", "locking_clutch_momentum",
              "four_bar"]
DOCUMENTED = MECHANICAL + ["dc_motor"]
SOLVERS = ("dae", "ode45")
EVENT_TOL = 1e-6


def load(name: str) -> dict:
    return json.loads((EXAMPLES / name / "diagram.json").read_text())


_CACHE: dict = {}


def simulate(name: str, solver: str | None = None) -> dict:
    key = (name, solver)
    if key not in _CACHE:
        d = load(name)
        if solver is not None:
            d["solver"] = solver
        result = nc.simulate(d)
        assert result["status"] == "ok", result.get("error")
        _CACHE[key] = result
    return _CACHE[key]


def traces(result: dict):
    t = np.asarray(result["time"], dtype=float)
    w = {k: np.asarray(v, dtype=float)[:, 0] for k, v in result["workspace"].items()}
    return t, w


def events(result: dict, block: str, kinds=("mode", "stop", "contact")):
    return [e for e in result["events"] if e["block"] == block and e["kind"] in kinds]


# ----------------------------------------------------------------------------- every example

def test_the_examples_folder_holds_the_expected_examples():
    assert set(DOCUMENTED) | {"quickstart"} <= set(ALL)


@pytest.mark.parametrize("name", ALL)
def test_every_example_runs_through_the_cli(name, tmp_path):
    out = tmp_path / "result.json"
    assert main(["run", str(EXAMPLES / name / "diagram.json"), "-o", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["status"] == "ok"
    assert result["workspace"]
    for value in result["workspace"].values():
        rows = value["signals"]["values"] if isinstance(value, dict) else value
        assert len(rows) == len(result["time"])
        assert np.all(np.isfinite(np.asarray(rows, dtype=float)))


@pytest.mark.parametrize("name", DOCUMENTED)
def test_example_folder_is_documented_and_pretty_printed(name):
    folder = EXAMPLES / name
    text = (folder / "diagram.json").read_text()
    assert text == json.dumps(json.loads(text), indent=2) + "\n"
    readme = (folder / "README.md").read_text()
    assert f"nflow-sim run examples/{name}/diagram.json -o result.json" in readme
    assert load(name)["solver"] == "dae"


def _script(name, *args, cwd=None):
    done = subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_example_scripts_read_a_result_file_or_run_the_diagram(tmp_path):
    """The scripts take the Result (``nc.Result.from_json`` of what ``nflow-sim run`` wrote, or
    ``nc.run`` of the example's diagram) and its DataFrame: the same output either way."""
    for name in ("quickstart", "dc_motor"):
        out = tmp_path / f"{name}.json"
        assert main(["run", str(EXAMPLES / name / "diagram.json"), "-o", str(out), "-q"]) == 0
        from_file, ran = _script(f"{name}/summary.py", out), _script(f"{name}/summary.py")
        assert _without_timing(from_file) == _without_timing(ran)
    lines = _script("quickstart/summary.py").splitlines()
    assert lines[1] == "workspace 'y': 401 x 3"
    assert [line.split()[0] for line in lines[2:]] == ["drive", "play", "limit"]    # named after their blocks
    assert "min -1.5000  max +1.5000" in lines[4]
    motor = _script("dc_motor/summary.py")
    assert "peak current 11.742 A at t = 0.155 s" in motor and "units: i [A], w [rad/s]" in motor
    assert "speed 79.056 rad/s, current 4.095 A" in motor
    _script("four_bar/plot.py", tmp_path / "four_bar.png")
    assert (tmp_path / "four_bar.png").read_bytes()[:4] == b"\x89PNG"


def _without_timing(text: str) -> str:
    return re.sub(r", [0-9.]+ ms", "", text)


def test_quickstart_signals():
    result = simulate("quickstart")
    rec = result["workspace"]["y"]
    t = np.asarray(rec["time"])
    y = np.asarray(rec["signals"]["values"], dtype=float)
    assert np.allclose(y[:, 0], 2 * np.sin(np.pi * t), rtol=0, atol=1e-12)   # sine, A 2, f 0.5 Hz
    assert np.abs(y[:, 0] - y[:, 1]).max() <= 0.2 + 1e-12                     # backlash width 0.4
    assert np.abs(y[:, 2]).max() <= 1.5                                       # saturation +-1.5


# ----------------------------------------------------------------------------- end stops

F0 = 5 + 10                      # F_Coulomb + F_Stribeck (defaults)
T_BREAK = math.asin(1.001 * F0 / 20) / math.pi       # 20 sin(pi t) = 1.001 (F_C + F_S)


def _stroke(t0, s0, s1, direction):
    """Independent integration of the sliding mass (defaults m 1, F_prop 1, F_Coulomb 5,
    F_Stribeck 10, fexp 2) under 20 sin(pi t) from rest at s0 (t0) until it reaches s1."""
    def rhs(t, x):
        s, v = x
        friction = v + direction * (5 + 10 * math.exp(-2 * abs(v)))
        return [v, 20 * math.sin(math.pi * t) - friction]

    def reach(t, x):
        return x[0] - s1
    reach.terminal = True
    sol = solve_ivp(rhs, (t0, t0 + 2), [s0, 0.0], method="DOP853", rtol=1e-12, atol=1e-14, events=reach)
    return float(sol.t_events[0][0])


T_STOP1 = _stroke(T_BREAK, 0.0, 0.5, +1)              # first stroke, from the middle
T_STOP2 = _stroke(1 + T_BREAK, 0.5, -0.5, -1)         # full stroke backward
# the force is antiperiodic with period 1 (F(t+1) = -F(t)), so later strokes repeat mirrored
STOPS = [(T_STOP1, 0.5), (T_STOP2, -0.5), (T_STOP2 + 1, 0.5), (T_STOP2 + 2, -0.5)]


@pytest.mark.parametrize("solver", SOLVERS)
def test_stop_mass_breaks_away_at_the_threshold_and_stops_dead(solver):
    result = simulate("end_stops_and_motion_sources", solver)
    t, w = traces(result)
    ev = [(e["from"], e["to"], e["t"]) for e in events(result, "stop_mass")]
    kinds = [(a, b) for a, b, _ in ev]
    assert kinds == [("stuck", "forward"), ("forward", "stop"), ("forward", "stuck"),
                     ("stuck", "backward"), ("backward", "stop"), ("backward", "stuck")] * 2
    # every breakaway where |20 sin(pi t)| rises through 1.001*(F_C+F_S): t = k + T_BREAK
    breaks = [x for a, _, x in ev if a == "stuck"]
    assert np.abs(np.asarray(breaks) - (T_BREAK + np.arange(4))).max() < EVENT_TOL
    # each stroke ends on a stop, at the independently integrated time
    stops = [x for _, b, x in ev if b == "stop"]
    assert np.abs(np.asarray(stops) - [s for s, _ in STOPS]).max() < EVENT_TOL
    # held exactly at the stop (smax - L/2 with L = 0), at rest, until the next breakaway
    for k, (t_stop, s_stop) in enumerate(STOPS):
        held = (t > t_stop + 1e-9) & (t < k + 1 + T_BREAK - 1e-9)
        assert held.sum() >= 20     # the last hold is cut by the 4 s run
        assert np.all(w["s_stops"][held] == s_stop)
        assert np.all(w["v_stops"][held] == 0.0)
    assert np.all(w["s_stops"][t < T_BREAK] == 0.0)
    assert -0.5 - 1e-12 <= w["s_stops"].min() and w["s_stops"].max() <= 0.5 + 1e-12


C_GAP, F_PUSH, WALL = 1e4, 10.0, 0.1


@pytest.mark.parametrize("solver", SOLVERS)
def test_mass_pushed_into_the_elastic_stop(solver):
    result = simulate("end_stops_and_motion_sources", solver)
    t, w = traces(result)
    contacts = events(result, "elastic_stop")
    t_contact = math.sqrt(2 * WALL / F_PUSH)                     # 0.1 = (10/2) t^2
    assert (contacts[0]["from"], contacts[0]["to"]) == ("open", "contact")
    assert abs(contacts[0]["t"] - t_contact) < EVENT_TOL
    free = t < t_contact
    assert np.allclose(w["s_elastic"][free], 0.5 * F_PUSH * t[free] ** 2, rtol=0, atol=1e-9)
    # it ends in contact, resting where the gap spring carries the push: 0.1 + F/c
    assert contacts[-1]["to"] == "contact"
    rest = t >= 3.0    # decay rate d/(2m) = 50 1/s: the transient is gone long before
    assert np.allclose(w["s_elastic"][rest], WALL + F_PUSH / C_GAP, rtol=0, atol=1e-9)
    assert np.abs(w["v_elastic"][rest]).max() < 1e-6
    # damping only removes energy: never deeper than the undamped turning point,
    # c x^2 / 2 = F (0.1 + x)
    x_max = (F_PUSH + math.sqrt(F_PUSH ** 2 + 2 * C_GAP * F_PUSH * WALL)) / C_GAP
    assert WALL < w["s_elastic"].max() <= WALL + x_max


@pytest.mark.parametrize("solver", SOLVERS)
def test_speed_and_position_sources(solver):
    t, w = traces(simulate("end_stops_and_motion_sources", solver))
    assert np.allclose(w["v_speed"], 0.2, rtol=0, atol=1e-12)
    assert np.allclose(w["s_speed"], 0.2 * t, rtol=0, atol=1e-9)
    # a Speed source fed 0.1 pi cos(pi t) from s0 = 0 follows 0.1 sin(pi t)
    assert np.allclose(w["s_position"], 0.1 * np.sin(np.pi * t), rtol=0, atol=1e-6)


# ----------------------------------------------------------------------------- clutch & co.

@pytest.mark.parametrize("solver", SOLVERS)
def test_clutch_locks_the_driven_inertia_onto_the_drive(solver):
    result = simulate("clutch_backlash_and_rotational_sources", solver)
    t, w = traces(result)
    assert np.all(w["w_drive"] == np.where(t < 0.1, 0.0, 100.0))
    ev = [(e["from"], e["to"], e["t"]) for e in events(result, "clutch")]
    assert [(a, b) for a, b, _ in ev] == [("free", "backward"), ("backward", "stuck")]
    # fn closes at 0.5 s: torque mu*cgeo*fn_max = 500 N m on J = 1 -> 500 rad/s^2;
    # relative speed 100 rad/s is gone after 100/500 = 0.2 s
    assert abs(ev[0][2] - 0.5) < 1e-9
    assert abs(ev[1][2] - 0.7) < EVENT_TOL
    want = np.where(t < 0.5, 0.0, np.where(t < 0.7, 500 * (t - 0.5), 100.0))
    assert np.allclose(w["w_driven"], want, rtol=0, atol=1e-6)


B_PLAY = 0.1


@pytest.mark.parametrize("solver", SOLVERS)
def test_inertia_behind_backlash(solver):
    result = simulate("clutch_backlash_and_rotational_sources", solver)
    t, w = traces(result)
    ev = events(result, "backlash")
    assert all(e["kind"] == "contact" for e in ev)
    # the source angle is (10/(2 pi)) (1 - cos 2 pi t); the inertia stays at rest until the
    # play of b/2 is used up
    t_first = math.acos(1 - (B_PLAY / 2) * 2 * math.pi / 10) / (2 * math.pi)
    assert (ev[0]["from"], ev[0]["to"]) == ("free", "contact-")
    assert abs(ev[0]["t"] - t_first) < EVENT_TOL
    assert np.all(w["w_backlash"][t < t_first] == 0.0)
    assert {e["to"] for e in ev} == {"free", "contact+", "contact-"} and len(ev) >= 20
    # the reported modes agree with the recorded play phi_source - phi_inertia: in contact-
    # the inertia lags by at least b/2, in contact+ it leads, free inside the dead band
    bounds = [e["t"] for e in ev] + [t[-1] + 1]
    mode = ["free"] + [e["to"] for e in ev]
    k = np.searchsorted(bounds, t, side="right")
    away = np.min(np.abs(t[:, None] - np.asarray(bounds)[None, :]), axis=1) > 1e-9
    play = w["phi_play"]
    for j in np.nonzero(away)[0]:
        m = mode[k[j]]
        if m == "contact-":
            assert play[j] >= B_PLAY / 2 - 1e-9
        elif m == "contact+":
            assert play[j] <= -B_PLAY / 2 + 1e-9
        else:
            assert abs(play[j]) <= B_PLAY / 2 + 1e-9
    # bounded: spring deflection below 0.01 rad (< 10 N m at c = 1e3), speed near the source's
    assert np.abs(play).max() <= B_PLAY / 2 + 0.01
    assert np.abs(w["w_backlash"]).max() <= 11.0
    # after the first half period the contact pattern repeats every 0.5 s with the sides
    # swapped (odd drive); contact phases damp at zeta*omega = d/(2J) = 100 1/s
    flip = {"contact+": "contact-", "contact-": "contact+", "free": "free"}
    late = [e for e in ev if 0.3 <= e["t"] < t[-1] - 0.55]
    assert len(late) >= 10
    for e in late:
        twin = [f for f in ev if f["to"] == flip[e["to"]] and abs(f["t"] - e["t"] - 0.5) < 1e-5]
        assert len(twin) == 1, e


@pytest.mark.parametrize("solver", SOLVERS)
def test_torque_source_with_viscous_load(solver):
    # J w' = 0.5 - 0.05 w, J = 0.02 (the massless coupling passes the 0.5 N m unchanged)
    t, w = traces(simulate("clutch_backlash_and_rotational_sources", solver))
    assert np.allclose(w["w_coupled"], 10 * (1 - np.exp(-2.5 * t)), rtol=0, atol=1e-6)


@pytest.mark.parametrize("solver", SOLVERS)
def test_load_inertia_steps_its_torque(solver):
    # 0.5 N m on J = 0.1: 5 rad/s^2; from 1 s the shaft load takes 0.4 N m: 1 rad/s^2
    t, w = traces(simulate("clutch_backlash_and_rotational_sources", solver))
    assert np.allclose(w["w_load"], np.where(t < 1, 5 * t, 5 + (t - 1)), rtol=0, atol=1e-9)


# ----------------------------------------------------------------------------- momentum

J1, W1, J2, W2 = 2.0, 10.0, 3.0, 0.0
W_COMMON = (J1 * W1 + J2 * W2) / (J1 + J2)                       # 4 rad/s
T_LOCK = 0.2 + (W1 - W2) / (500 * (1 / J1 + 1 / J2))            # 0.224 s


@pytest.mark.parametrize("solver", SOLVERS)
def test_locking_clutch_conserves_momentum(solver):
    result = simulate("locking_clutch_momentum", solver)
    t, w = traces(result)
    ev = [(e["from"], e["to"], e["t"]) for e in events(result, "clutch")]
    assert [(a, b) for a, b, _ in ev] == [("free", "backward"), ("backward", "stuck")]
    assert abs(ev[0][2] - 0.2) < 1e-9 and abs(ev[1][2] - T_LOCK) < EVENT_TOL
    assert np.allclose(J1 * w["w1"] + J2 * w["w2"], J1 * W1 + J2 * W2, rtol=0, atol=1e-9)
    slip = t - 0.2
    w1 = np.where(t < 0.2, W1, np.where(t < T_LOCK, W1 - 500 / J1 * slip, W_COMMON))
    w2 = np.where(t < 0.2, W2, np.where(t < T_LOCK, W2 + 500 / J2 * slip, W_COMMON))
    assert np.allclose(w["w1"], w1, rtol=0, atol=1e-9)
    assert np.allclose(w["w2"], w2, rtol=0, atol=1e-9)


# ----------------------------------------------------------------------------- DC motor

def dc_motor_closed_form(t):
    """Armature current and speed of examples/dc_motor: x = (i, w), x' = A x + b after the
    12 V switch-on at 0.1 s (L i' = V - R i - k w, J w' = k i - d w), x = 0 before it, so
    x(t) = A^-1 (expm(A (t - 0.1)) - I) b."""
    V, R, L, k, J, d = 12.0, 1.0, 0.01, 0.1, 0.02, 0.005
    A = np.array([[-R / L, -k / L], [k / J, -d / J]])
    b = np.array([V / L, 0.0])
    x = np.array([np.linalg.solve(A, (expm(A * (tk - 0.1)) - np.eye(2)) @ b) if tk >= 0.1 else np.zeros(2)
                  for tk in t])
    return x[:, 0], x[:, 1]


@pytest.mark.parametrize("solver", SOLVERS)
def test_dc_motor_matches_the_matrix_exponential(solver):
    t, w = traces(simulate("dc_motor", solver))
    current, speed = dc_motor_closed_form(t)
    # relTol 1e-8: measured 2e-7 A and 1.7e-6 rad/s (of 80) at most
    assert np.allclose(w["i"], current, rtol=0, atol=1e-6)
    assert np.allclose(w["w"], speed, rtol=0, atol=1e-5)
    # the README's figures: inrush peak, and the steady state k V/(k^2 + R d) = 80 rad/s, 4 A
    peak = int(np.argmax(w["i"]))
    assert abs(t[peak] - 0.1535) <= 0.005 and abs(w["i"][peak] - 11.742) < 0.01
    assert abs(w["w"][-1] - 79.056) < 1e-3 and abs(w["i"][-1] - 4.095) < 1e-3
    assert abs(dc_motor_closed_form([1e3])[1][0] - 0.1 * 12 / (0.1 ** 2 + 1 * 0.005)) < 1e-9


# ----------------------------------------------------------------------------- four-bar (planar)

FOUR_BAR_RODS = {("B", None): 1.0, ("B", "C"): 3.2, ("C", "D"): 2.0, ("B", "E"): 2.0, ("C", "E"): 2.0}
FOUR_BAR_MASSES = {"B": 0.5, "C": 0.5, "E": 1.0}


@pytest.mark.parametrize("solver", SOLVERS)
def test_four_bar_closes_its_loop_and_keeps_its_energy(solver):
    _, w = traces(simulate("four_bar", solver))
    point = {"D": (3.0, 0.0), None: (0.0, 0.0)}
    for (a, b), length in FOUR_BAR_RODS.items():
        pa = (w[f"{a}_x"], w[f"{a}_y"])
        pb = (w[f"{b}_x"], w[f"{b}_y"]) if b in FOUR_BAR_MASSES else point[b]
        assert np.max(np.abs(np.hypot(pa[0] - pb[0], pa[1] - pb[1]) - length)) <= 1e-9
    kinetic = sum(0.5 * m * (w[f"{p}_vx"] ** 2 + w[f"{p}_vy"] ** 2) for p, m in FOUR_BAR_MASSES.items())
    energy = kinetic + sum(m * 9.81 * w[f"{p}_y"] for p, m in FOUR_BAR_MASSES.items())
    assert np.max(np.abs(energy - energy[0])) <= 1e-6 * np.max(kinetic)   # nothing dissipates
    assert np.unwrap(np.arctan2(w["B_y"], w["B_x"]))[-1] > 6 * 2 * math.pi   # the crank turns round


# ----------------------------------------------------------------------------- PI-controlled mass

def test_pi_controlled_mass_follows_its_closed_loop_transfer_function():
    """examples/batch_msd_pi: x = (Kp s + Ki) / (m s^3 + c s^2 + (k + Kp) s + Ki) applied to the
    unit step at 0.5 s (analytic, through scipy.signal: nothing of nflow_compat), and the
    README's figures. relTol 1e-6: measured 1.1e-7 at most."""
    from scipy import signal
    gain = {b["id"]: b["params"].get("Gain") for b in load("batch_msd_pi")["blocks"]}
    m, c, k, kp, ki = 1 / gain["inv_m"], gain["c"], gain["k"], gain["Kp"], gain["Ki"]
    t, w = traces(simulate("batch_msd_pi"))
    after = t >= 0.5
    _, want = signal.step(signal.TransferFunction([kp, ki], [m, c, k + kp, ki]), T=t[after] - 0.5)
    assert np.all(w["x"][~after] == 0.0)
    assert np.allclose(w["x"][after], want, rtol=0, atol=1e-6)
    peak = int(np.argmax(w["x"]))
    assert abs(w["x"][peak] - 1.0194) < 1e-4 and abs(t[peak] - 2.227) <= 0.002
    assert abs(w["F"][-1] - k) < 1e-4                  # the spring holds x = 1 with zero error


def test_the_batch_example_script_prints_each_tuning(capsys):
    script = runpy.run_path(str(EXAMPLES / "batch_msd_pi" / "run.py"))     # in-process: no interpreter start
    assert script["main"]([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"9 variants, \d ran batched, \d+ ms", lines[0])
    assert "   10     8   1.0194      1.94 %     1.204 s    4.000" in lines
    assert len(lines) == 2 + 9
