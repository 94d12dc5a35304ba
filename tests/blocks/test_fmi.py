"""The FMI blocks (``fmu`` co-simulation, ``fmuMe`` model exchange) and the ``fmu-info`` /
``fmu-block`` commands, on FMUs the tests build themselves (``tests/fmus``: small C models
compiled with the system C compiler against the FMI 2.0 / 3.0 headers FMPy ships).

Expected values: scipy's solve_ivp of the same equations (Van der Pol), closed forms
(bouncing ball, stairs; derivations beside them), and the same loop built from nflow's own
blocks (the co-simulated lag)."""
from __future__ import annotations

import gc
import io
import json
import math
import sys
import zipfile
from contextlib import redirect_stdout
from pathlib import Path

import fmpy
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp

import nflow_compat as nc
from nflow_compat import cli
from nflow_compat.blocks import REGISTRY, fmi
from nflow_compat.blocks.handlers import supported_types
from nflow_compat.errors import DiagramError, SimulationError

from tests.fmus import build
from tests.util import blk, diagram, record, wire

VERSIONS = (2, 3)


class Fmus:
    """The test FMUs in one folder (the runs' base directory), each built on first use."""

    def __init__(self, folder: Path):
        self.base = folder

    def name(self, identifier: str, version: int) -> str:
        target = self.base / f"{identifier}-fmi{version}.fmu"
        if not target.exists():
            build.build(identifier, version, self.base)
        return target.name


@pytest.fixture(scope="session")
def fmus(tmp_path_factory) -> Fmus:
    return Fmus(tmp_path_factory.mktemp("fmus"))


def simulate(fmus, d):
    return nc.simulate(d, base_dir=fmus.base)


def column(result, name) -> np.ndarray:
    return np.asarray(result["workspace"][name], dtype=float)[:, 0]


def raises(fmus, d, kind, code):
    with pytest.raises(kind) as info:
        simulate(fmus, d)
    assert info.value.code == code, info.value
    return info.value


# ----------------------------------------------------------------------------- model exchange

def van_der_pol(fmus, version, solver, mu, dt=0.05, duration=5.0, **extra):
    d = diagram([blk("vdp", "fmuMe", path=fmus.name("VanDerPol", version), mu=mu, outputs=2),
                 record("w0", "x0"), record("w1", "x1")],
                [wire("vdp", "w0"), wire("vdp", "w1", 1, 0)], dt=dt, duration=duration, solver=solver, **extra)
    return simulate(fmus, d)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("solver, tolerance", [("ode45", 1e-6), ("dae", 1e-5), ("ode4", 1e-5)])
def test_van_der_pol_matches_solve_ivp(fmus, version, solver, tolerance):
    mu = 0.5   # not the FMU's start value (1): the param is set
    res = van_der_pol(fmus, version, solver, mu, relTol=1e-10, absTol=1e-12)
    t = np.asarray(res["time"])
    ref = solve_ivp(lambda _, x: [x[1], mu * (1.0 - x[0] ** 2) * x[1] - x[0]], (0.0, t[-1]), [2.0, 0.0],
                    t_eval=t, rtol=1e-12, atol=1e-12).y
    assert len(t) == 101
    np.testing.assert_allclose(column(res, "x0"), ref[0], atol=tolerance)
    np.testing.assert_allclose(column(res, "x1"), ref[1], atol=tolerance)


@pytest.mark.parametrize("version", VERSIONS)
def test_step_events_at_completed_integrator_steps(fmus, version):
    """VanDerPol asks for completedIntegratorStep, which it gets at every grid point, and
    asks there for an event when x0 changed sign since the last one (then its counter
    output steps up in that event's discrete update). So the step events are the grid
    points where solve_ivp's x0 has another sign than at the grid point before, and the
    counter recorded at t_k (OUTPUT runs before the major step's UPDATE) counts those
    before t_k."""
    d = diagram([blk("vdp", "fmuMe", path=fmus.name("VanDerPol", version), outputs=3), record("w", "n")],
                [wire("vdp", "w", 2, 0)], dt=0.05, duration=8.0, solver="ode45", relTol=1e-10, absTol=1e-12)
    res = simulate(fmus, d)
    t = np.asarray(res["time"])
    x0 = solve_ivp(lambda _, x: [x[1], (1.0 - x[0] ** 2) * x[1] - x[0]], (0.0, t[-1]), [2.0, 0.0], t_eval=t,
                   rtol=1e-12, atol=1e-12).y[0]
    flips = np.flatnonzero(np.diff(x0 > 0.0)) + 1
    assert len(flips) == 2
    assert [(e["t"], e["kind"]) for e in res["events"]] == [(float(t[k]), "step_event") for k in flips]
    np.testing.assert_array_equal(column(res, "n"), [np.sum(flips < k) for k in range(len(t))])


def test_van_der_pol_under_the_fixed_step_solvers(fmus):
    """discrete integrates the states with RK4 between grid points, ode1 with Euler: the
    same trajectories as ode4 / the Euler recurrence on the grid."""
    rk4 = van_der_pol(fmus, 2, "ode4", 1.0, duration=1.0)
    discrete = van_der_pol(fmus, 2, "discrete", 1.0, duration=1.0)
    np.testing.assert_array_equal(column(discrete, "x0"), column(rk4, "x0"))
    euler = van_der_pol(fmus, 2, "ode1", 1.0, duration=1.0)
    x = np.array([2.0, 0.0])
    for k in range(20):
        assert column(euler, "x0")[k] == pytest.approx(x[0], abs=1e-12)
        x = x + 0.05 * np.array([x[1], (1.0 - x[0] ** 2) * x[1] - x[0]])


@pytest.mark.parametrize("kind", sorted(fmi.INTERFACES))
def test_the_solver_role_the_block_reference_gives_is_the_plans(fmus, kind):
    # docs/blocks prints Handler.solver_role: a model-exchange FMU is a part of the solver's
    # system under every solver, a co-simulation FMU under none (it steps itself)
    role = REGISTRY[kind].solver_role
    for solver in REGISTRY[kind].solvers:
        plan = nc.compile_plan(lone(lag_block(fmus, kind), solver), base_dir=fmus.base)
        assert plan.has_parts == (role == "part") == (kind == "fmuMe"), (kind, solver)


def ball_height(t, h0=1.0, g=9.81, e=0.7):
    """Closed form of the bouncing ball (restitution e, no rest before the times used):
    it falls for t1 = sqrt(2 h0 / g) and hits the floor at v0 = g t1; after impact k it
    leaves at e^k v0 and flies 2 e^k v0 / g = 2 e^k t1, so the impacts are
    t1, t1 + 2 e t1, t1 + 2 e t1 + 2 e^2 t1, ... Returns (height at t, impact times)."""
    t1 = math.sqrt(2.0 * h0 / g)
    impacts = [t1]
    while impacts[-1] < t:
        impacts.append(impacts[-1] + 2.0 * e ** len(impacts) * t1)
    before = [s for s in impacts if s <= t]
    if not before:
        return h0 - 0.5 * g * t * t, impacts
    k, s = len(before), before[-1]
    v = e ** k * g * t1
    return v * (t - s) - 0.5 * g * (t - s) ** 2, impacts


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("solver", ["ode45", "dae", "ode4"])
def test_bouncing_ball_impacts_at_the_closed_form_times(fmus, version, solver):
    d = diagram([blk("ball", "fmuMe", path=fmus.name("BouncingBall", version), outputs=3),
                 record("wh", "h"), record("wn", "n")],
                [wire("ball", "wh"), wire("ball", "wn", 2, 0)], dt=0.01, duration=2.0, solver=solver)
    res = simulate(fmus, d)
    _, impacts = ball_height(2.0)
    impacts = [s for s in impacts if s < 2.0]
    assert len(impacts) == 4
    events = [e for e in res["events"] if e["block"] == "ball"]
    assert [e["kind"] for e in events] == ["state_event"] * 4
    assert all(e["indicators"] == [0] for e in events)
    np.testing.assert_allclose([e["t"] for e in events], impacts, rtol=1e-9)
    t = np.asarray(res["time"])
    np.testing.assert_allclose(column(res, "h"), [ball_height(s)[0] for s in t], atol=1e-8)
    # the Integer output counts the impacts the FMU saw
    np.testing.assert_array_equal(column(res, "n"), [sum(s <= ti for s in impacts) for ti in t])


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("solver", ["ode45", "discrete"])
def test_time_events_run_the_discrete_update_to_its_fixed_point(fmus, version, solver):
    """Stairs: x' = n, n steps up every period P = 0.25 (time events announced by the FMU;
    each needs two discrete-update passes). So n(t) = floor(t / P) (post-event value at an
    event time) and x(t) = P n (n - 1) / 2 + n (t - n P)."""
    period = 0.25
    d = diagram([blk("s", "fmuMe", path=fmus.name("Stairs", version), outputs=2),
                 record("wx", "x"), record("wn", "n")],
                [wire("s", "wx"), wire("s", "wn", 1, 0)], dt=0.1, duration=1.1, solver=solver)
    res = simulate(fmus, d)
    t = np.asarray(res["time"])
    n = np.floor(t / period + 1e-9)
    np.testing.assert_array_equal(column(res, "n"), n)
    np.testing.assert_allclose(column(res, "x"), period * n * (n - 1) / 2 + n * (t - n * period), atol=1e-12)
    assert [(e["t"], e["kind"]) for e in res["events"]] == [(k * period, "time_event") for k in (1, 2, 3, 4)]


# the grids of the Reference FMU Stair's report: events on grid points from the first (0.05,
# 0.1, 0.25), from t = 3 (0.03: 100 * 0.03 == 3.0), on none of them (0.07)
GRID_STEPS = (0.05, 0.1, 0.25, 0.03, 0.07)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("dt", GRID_STEPS)
@pytest.mark.parametrize("solver", ["ode45", "dae"])
@pytest.mark.parametrize("model, duration", [("Counter", 10.0), ("Stairs", 2.0)])
def test_time_events_on_grid_points_and_at_the_stop_time_equal_fmpy(fmus, version, dt, solver, model, duration):
    """Time events that fall on grid points, on the stop time and between them, each handled
    once, as fmpy's model-exchange run of the same FMU on the same output grid has them:
    Counter (n += 1 at t = 1, 2, ..., 10, x' = n; it asks for completedIntegratorStep, so
    the run restarts at every grid point and an event on one ends an interval) and Stairs
    (every 0.25 s, two discrete-update passes each; the solver runs freely across the grid,
    the last event is the stop time)."""
    fmu = fmus.name(model, version)
    d = diagram([blk("s", "fmuMe", path=fmu, outputs=2), record("wx", "x"), record("wn", "n")],
                [wire("s", "wx"), wire("s", "wn", 1, 0)], dt=dt, duration=duration, solver=solver)
    res = simulate(fmus, d)
    ref = fmpy.simulate_fmu(str(fmus.base / fmu), fmi_type="ModelExchange", stop_time=duration, output_interval=dt,
                            output=["x", "n"], record_events=False)
    np.testing.assert_array_equal(res["time"], ref["time"])
    n = column(res, "n")
    np.testing.assert_array_equal(n, ref["n"])
    np.testing.assert_allclose(column(res, "x"), ref["x"], rtol=1e-9, atol=1e-9)
    events = [e["t"] for e in res["events"]]
    assert [e["kind"] for e in res["events"]] == ["time_event"] * len(events)
    # one event per step of n, at the FMU's announced times (the last one on the stop time
    # when the grid reaches it)
    period = 1.0 if model == "Counter" else 0.25
    assert len(events) == n[-1] - n[0] and len(set(events)) == len(events)
    np.testing.assert_allclose(events, period * np.arange(1, len(events) + 1), rtol=1e-15)
    assert (events[-1] == duration) == (res["time"][-1] == duration)


# ----------------------------------------------------------------------------- co-simulation

def feedback_loop(fmus, plant, solver="discrete", dt=0.05, duration=3.0):
    """y of r -> e = r - y -> plant -> y, r a unit step at 0.2 s."""
    blocks = [blk("r", "step", Time=0.2), blk("e", "sum", Inputs="+-", inputs=2), plant, record()]
    conns = [wire("r", "e"), wire("e", "p"), wire("p", "e", 0, 1), wire("p", "w")]
    return column(simulate(fmus, diagram(blocks, conns, dt=dt, duration=duration, solver=solver)), "y")


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("solver", ["discrete", "ode45"])
def test_cosimulated_lag_in_a_loop_equals_the_same_loop_of_nflow_blocks(fmus, version, solver):
    """The Lag FMU (x' = (k u - x) / T, y = x) advanced by one RK4 step per doStep (nsub 1)
    with the input held is exactly nflow's fixed-step tf k / (T s + 1) (one RK4 step per
    sample, input held, y from the state before the step): the loops agree to rounding."""
    k, T = 2.0, 0.5
    fmu = feedback_loop(fmus, blk("p", "fmu", path=fmus.name("Lag", version), inputs=1, outputs=1,
                                  k=k, T=T, nsub=1), solver)
    native = feedback_loop(fmus, blk("p", "tf", Numerator=[k], Denominator=[T, 1.0]))
    np.testing.assert_allclose(fmu, native, rtol=1e-13, atol=1e-15)
    assert fmu[-1] == pytest.approx(k / (1.0 + k), abs=1e-4)   # the loop's steady state


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.floats(0.1, 5.0), T=st.floats(0.05, 2.0), frequency=st.floats(0.1, 3.0))
def test_cosimulated_lag_is_the_fixed_step_tf_for_any_gain_and_time_constant(fmus, k, T, frequency):
    """The same law open loop, for any k, T and a sine input: one RK4 step per doStep with
    the input held is nflow's fixed-step tf k / (T s + 1)."""
    def through(plant):
        d = diagram([blk("s", "sine", Frequency=frequency), plant, record()], [wire("s", "p"), wire("p", "w")],
                    dt=0.05, duration=1.0)
        return column(simulate(fmus, d), "y")
    fmu = through(blk("p", "fmu", path=fmus.name("Lag", 2), inputs=1, outputs=1, k=k, T=T, nsub=1))
    np.testing.assert_allclose(fmu, through(blk("p", "tf", Numerator=[k], Denominator=[T, 1.0])),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("version", VERSIONS)
def test_model_exchange_lag_in_a_loop_matches_the_tf_loop_under_ode45(fmus, version):
    k, T = 2.0, 0.5
    fmu = feedback_loop(fmus, blk("p", "fmuMe", path=fmus.name("Lag", version), inputs=1, outputs=1, k=k, T=T),
                        "ode45")
    native = feedback_loop(fmus, blk("p", "tf", Numerator=[k], Denominator=[T, 1.0]), "ode45")
    np.testing.assert_allclose(fmu, native, atol=1e-6)


@pytest.mark.parametrize("kind", ["fmu", "fmuMe"])
def test_direct_feedthrough_output_reads_the_current_input(fmus, kind):
    """Lag's output ku = k u depends on the input (its model structure says so): it is the
    current sample's k u, not the previous one."""
    d = diagram([blk("s", "sine"), blk("p", kind, path=fmus.name("Lag", 2), inputs=1, outputs=2, k=3.0),
                 record(), record("ws", "u")], [wire("s", "p"), wire("p", "w", 1, 0), wire("s", "ws")],
                duration=0.5, solver="ode45")
    res = simulate(fmus, d)
    assert np.ptp(column(res, "u")) > 0.5
    np.testing.assert_allclose(column(res, "y"), 3.0 * column(res, "u"), rtol=1e-15)


def test_params_are_expressions_over_the_diagram_variables(fmus):
    d = diagram([blk("c", "constant", Value=1.0),
                 blk("p", "fmu", path=fmus.name("Lag", 2), inputs=1, outputs=2, k="2*gain", nsub="n + 1"),
                 record()], [wire("c", "p"), wire("p", "w", 1, 0)], duration=0.2, variables={"gain": 1.5, "n": 2})
    assert column(simulate(fmus, d), "y").tolist() == [3.0, 3.0, 3.0]


def test_runs_twice_the_same_and_frees_each_instance(fmus, monkeypatch):
    freed = []
    free = fmi.FmuInstance.free
    monkeypatch.setattr(fmi.FmuInstance, "free", lambda self: (freed.append(self.unit.block_id), free(self)))
    d = diagram([blk("ball", "fmuMe", path=fmus.name("BouncingBall", 2), outputs=1), record()],
                [wire("ball", "w")], dt=0.01, duration=1.5, solver="ode45")
    plan = nc.compile_plan(d, base_dir=fmus.base)
    first, second = plan.run(), plan.run()
    np.testing.assert_array_equal(column(first, "y"), column(second, "y"))
    assert first["events"] == second["events"] and len(first["events"]) == 2
    assert freed == ["ball", "ball"]


def test_the_instance_is_freed_when_the_run_is_interrupted(fmus, monkeypatch):
    freed = []
    free = fmi.FmuInstance.free
    monkeypatch.setattr(fmi.FmuInstance, "free", lambda self: (freed.append(self.fmu is not None), free(self)))

    def interrupt(done, total):
        if done > 3:
            raise KeyboardInterrupt
    d = diagram([blk("p", "fmu", path=fmus.name("Lag", 3), inputs=1, outputs=1), record()],
                [wire("p", "w")], duration=1.0)
    with pytest.raises(KeyboardInterrupt):
        nc.simulate(d, base_dir=fmus.base, progress=interrupt)
    assert freed == [True]


def test_the_extracted_folder_goes_with_the_plan(fmus):
    d = diagram([blk("ball", "fmuMe", path=fmus.name("BouncingBall", 2), outputs=1)], [], solver="ode45")
    plan = nc.compile_plan(d, base_dir=fmus.base)
    folder = Path(next(p.part for p in plan.phases if p.part is not None).unit.directory)
    assert (folder / "modelDescription.xml").exists()
    del plan
    gc.collect()
    assert not folder.exists()


# ----------------------------------------------------------------------------- errors

def lag_block(fmus, kind="fmu", path=None, **params):
    return blk("p", kind, path=path if path is not None else fmus.name("Lag", 2), inputs=1, outputs=1, **params)


def lone(block, solver="discrete"):
    return diagram([block], [], duration=0.2, solver=solver)


def test_missing_fmu(fmus):
    err = raises(fmus, lone(lag_block(fmus, path="nowhere.fmu")), DiagramError, "fmu_missing")
    assert err.block == "p" and err.path == "/blocks/0/params/path" and err.param == "path"


def test_a_file_that_is_not_an_fmu(fmus):
    (fmus.base / "corrupt.fmu").write_bytes(b"PK\x03\x04 this is not a zip archive")
    err = raises(fmus, lone(lag_block(fmus, path="corrupt.fmu")), DiagramError, "fmu_invalid")
    assert err.block == "p"


def test_an_invalid_model_description(fmus):
    with zipfile.ZipFile(fmus.base / "broken.fmu", "w") as archive:
        archive.writestr("modelDescription.xml", '<fmiModelDescription fmiVersion="2.0" modelName="x"/>')
    err = raises(fmus, lone(lag_block(fmus, path="broken.fmu")), DiagramError, "fmu_invalid")
    assert err.block == "p" and "modelDescription" in err.message


def test_fmi_1_is_refused(fmus):
    with zipfile.ZipFile(fmus.base / "old.fmu", "w") as archive:
        archive.writestr("modelDescription.xml", '<?xml version="1.0"?><fmiModelDescription fmiVersion="1.0" '
                         'modelName="Old" modelIdentifier="Old" guid="{x}"/>')
    err = raises(fmus, lone(lag_block(fmus, path="old.fmu")), DiagramError, "fmu_version")
    assert err.block == "p" and "FMI 1.0" in err.message


def test_an_fmu_without_a_binary_for_this_platform(fmus):
    source = zipfile.ZipFile(fmus.base / fmus.name("Lag", 2))
    with zipfile.ZipFile(fmus.base / "nobinary.fmu", "w") as archive:
        archive.writestr("modelDescription.xml", source.read("modelDescription.xml"))
    err = raises(fmus, lone(lag_block(fmus, path="nobinary.fmu")), DiagramError, "fmu_platform")
    assert err.block == "p"


def test_the_block_needs_the_fmus_interface(fmus):
    block = blk("p", "fmu", path=fmus.name("BouncingBall", 2), outputs=1)
    err = raises(fmus, lone(block), DiagramError, "fmu_interface")
    assert err.block == "p" and "use a fmuMe block" in err.message


@pytest.mark.parametrize("name, code, hint", [
    ("K", "fmu_unknown_variable", "did you mean 'k'?"),
    ("tau", "fmu_unknown_variable", "no variable 'tau'"),
    ("y", "fmu_variable_not_settable", "causality output"),
])
def test_params_name_settable_fmu_variables(fmus, name, code, hint):
    err = raises(fmus, lone(lag_block(fmus, **{name: 1.0})), DiagramError, code)
    assert err.block == "p" and err.param == name and err.path == f"/blocks/0/params/{name}" and hint in err.message


@pytest.mark.parametrize("name, value", [("nsub", 2.5), ("nsub", 2 ** 40), ("k", {"a": 1}), ("k", [1, 2])])
def test_params_are_checked_against_the_variable_type(fmus, name, value):
    err = raises(fmus, lone(lag_block(fmus, **{name: value})), DiagramError, "param_type")
    assert err.block == "p" and err.param == name


def test_more_ports_than_the_fmu_has(fmus):
    block = dict(lag_block(fmus), outputs=3)
    err = raises(fmus, lone(block), DiagramError, "fmu_ports")
    assert err.block == "p" and err.path == "/blocks/0/outputs" and "y, ku" in err.message


def test_a_vector_into_a_scalar_input(fmus):
    d = diagram([blk("c", "constant", Value=[1.0, 2.0]), lag_block(fmus)], [wire("c", "p")])
    err = raises(fmus, d, DiagramError, "fmu_port_width")
    assert err.block == "p"


@pytest.mark.parametrize("kind, solver", [("fmu", "discrete"), ("fmuMe", "ode45")])
def test_a_failing_fmi_call_names_the_block_and_says_what_the_fmu_logged(fmus, kind, solver, monkeypatch):
    freed = []
    free = fmi.FmuInstance.free
    monkeypatch.setattr(fmi.FmuInstance, "free", lambda self: (freed.append(self.failed), free(self)))
    err = raises(fmus, lone(lag_block(fmus, kind, T=0.0), solver), SimulationError, "fmu_call_failed")
    assert err.block == "p" and "exitInitializationMode" in err.message
    assert "the time constant T must be positive" in err.message
    assert freed == [True]   # freed (without terminate: the call failed) on the error path too


@pytest.mark.parametrize("path, code", [("../Lag-fmi2.fmu", "path_outside_base"), ("/tmp/x.fmu", "path_outside_base")])
def test_paths_stay_inside_the_base_directory(fmus, path, code):
    err = raises(fmus, lone(lag_block(fmus, path=path)), DiagramError, code)
    assert err.block == "p"


def test_no_file_access_without_a_base_directory(fmus):
    with pytest.raises(DiagramError) as info:
        nc.simulate(lone(lag_block(fmus)))
    assert info.value.code == "file_access_disabled" and info.value.block == "p"


# ----------------------------------------------------------------------------- the commands

def run_cli(*argv):
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main(list(argv))
    return code, json.loads(out.getvalue())


def test_the_blocks_run_here():
    types = {row["type"] for row in supported_types()}
    assert {"fmu", "fmuMe"} <= types and "modelica" not in types


@pytest.mark.parametrize("version", VERSIONS)
def test_fmu_info(fmus, version):
    code, info = run_cli("fmu-info", "--json", str(fmus.base / fmus.name("BouncingBall", version)))
    assert code == 0
    assert info["modelName"] == "BouncingBall" and info["fmiVersion"] == f"{version}.0"
    assert info["modelExchange"] and not info["coSimulation"]
    assert info["numberOfContinuousStates"] == 2 and info["numberOfEventIndicators"] == 1
    assert info["generationTool"] == "nflow-compat tests" and info["platforms"] == [fmi._fmpy().fmpy.platform]
    assert info["defaultExperiment"] == {"startTime": 0.0, "stopTime": 3.0, "tolerance": 1e-6, "stepSize": 0.01}
    assert info["units"] == ["m", "m/s"]
    by_name = {v["name"]: v for v in info["variables"]}
    assert by_name["g"] == {"name": "g", "valueReference": 4, "causality": "parameter", "variability": "fixed",
                            "type": "Real" if version == 2 else "Float64", "start": 9.81, "unit": "",
                            "description": ""}
    assert by_name["h"]["unit"] == "m" and by_name["v"]["unit"] == "m/s"
    assert by_name["bounces"]["start"] == 0 and by_name["bounces"]["causality"] == "output"
    code, lag = run_cli("fmu-info", "--json", str(fmus.base / fmus.name("Lag", version)))
    assert lag["defaultExperiment"] == dict.fromkeys(("startTime", "stopTime", "tolerance", "stepSize"))
    assert lag["units"] == [] and lag["coSimulation"]


def test_fmu_info_is_a_table_unless_json(fmus, capsys):
    assert cli.main(["fmu-info", str(fmus.base / fmus.name("BouncingBall", 2))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "BouncingBall  FMI 2.0  model exchange"
    assert "  generated by nflow-compat tests" in lines and "  units        m, m/s" in lines
    assert "  experiment   start 0, stop 3, tolerance 1e-06, step 0.01" in lines
    header = next(k for k, line in enumerate(lines) if line.startswith("name "))
    assert lines[header].split() == ["name", "causality", "variability", "type", "unit", "start", "description"]
    assert lines[header + 1].split() == ["h", "output", "continuous", "Real", "m", "1.0"]


def test_fmu_info_of_a_missing_file(fmus):
    code, out = run_cli("fmu-info", "--json", str(fmus.base / "absent.fmu"))
    assert code == 2 and out["error"]["code"] == "fmu_missing"


def test_without_fmpy_an_fmu_is_unavailable_not_invalid(fmus, monkeypatch):
    monkeypatch.setitem(sys.modules, "fmpy", None)
    fmi._fmpy.cache_clear()
    try:
        code, out = run_cli("fmu-info", str(fmus.base / fmus.name("Lag", 2)))
    finally:
        fmi._fmpy.cache_clear()
    assert code == 1 and out["error"]["code"] == "fmi_unavailable" and "pip install" in out["error"]["message"]


def test_fmu_block_makes_an_entry_that_runs(fmus):
    code, entry = run_cli("fmu-block", str(fmus.base / fmus.name("Lag", 3)), "--path", fmus.name("Lag", 3))
    assert code == 0
    assert entry["type"] == "fmu" and entry["label"] == "Lag"
    assert entry["inputs"] == [{"name": "u"}] and entry["outputs"] == [{"name": "y"}, {"name": "ku"}]
    assert entry["defaultParams"] == {"path": fmus.name("Lag", 3), "k": 1.0, "T": 0.5, "nsub": 10}
    block = blk("p", entry["type"], entry["defaultParams"], inputs=len(entry["inputs"]),
                outputs=len(entry["outputs"]))
    d = diagram([blk("c", "constant", Value=2.0), block, record()], [wire("c", "p"), wire("p", "w", 1, 0)],
                duration=0.1)
    assert column(simulate(fmus, d), "y").tolist() == [2.0, 2.0]
    code, me = run_cli("fmu-block", str(fmus.base / fmus.name("BouncingBall", 2)))
    assert code == 0 and me["type"] == "fmuMe" and [p["name"] for p in me["outputs"]] == ["h", "v", "bounces"]
    code, out = run_cli("fmu-block", str(fmus.base / fmus.name("BouncingBall", 2)), "--type", "fmu")
    assert code == 2 and out["error"]["code"] == "fmu_interface"


def test_each_fmi2_instance_keeps_its_own_log(fmus):
    """FMPy's FMI 2.0 log formatter forwards to one function per process: two instances
    alive at once (model exchange instances all wait in initialization mode) must still get
    their own messages, so the error of 'a' quotes what 'a' logged."""
    d = diagram([lag_block(fmus, "fmuMe", T=0.0), dict(lag_block(fmus, "fmuMe"), id="q")], [], solver="ode45")
    err = raises(fmus, d, SimulationError, "fmu_call_failed")
    assert err.block == "p" and "the time constant T must be positive" in err.message


def test_plots_label_an_fmu_event_by_its_kind():
    from nflow_compat.plotting import events
    assert events({"events": [{"t": 0.45, "block": "ball", "kind": "state_event", "indicators": [0]},
                              {"t": 0.7, "block": "m", "kind": "mode", "from": "stuck", "to": "forward"}]}) == \
        [(0.45, "ball", "state_event", "state_event", ""), (0.7, "m", "forward", "mode", "stuck")]
