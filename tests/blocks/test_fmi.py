"""The FMI blocks (``fmu`` co-simulation, ``fmuMe`` model exchange) and the ``fmu-info`` /
``fmu-block`` commands, on FMUs the tests build themselves (``tests/fmus``: small C models
compiled with the system C compiler against the FMI 2.0 / 3.0 headers FMPy ships); the
``modelica`` block on the models of fixtures/fmi/modelica (its last section).

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

from tests import goldens, msl_tube
from tests.fmus import build
from tests.modelica_models import MODELS
from tests.util import blk, constant, diagram, pin, record, wire

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
    assert {"fmu", "fmuMe", "modelica"} <= types


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


# ----------------------------------------------------------------------------- modelica
# The modelica block: Modelica source compiled by rumoca, lowered and run by the package's
# own hybrid engine (nflow_compat.modelica). The models are in fixtures/fmi/modelica:
# FlatModels.mo (flat models, closed forms below) and MslModels.mo (models of MSL 4.1.0
# components; the MSL files they need, trimmed to those classes, in fixtures/fmi/modelica/msl).

SOLVER_PAIR = ("dae", "ode45")


def model_block(id, name, package="FlatModels", inputs=0, outputs=1, **params):
    extra = {"libraries": ["msl"]} if package == "MslModels" else {}
    return blk(id, "modelica", dict(extra, file=f"{package}.mo", modelName=f"{package}.{name}", **params),
               inputs=inputs, outputs=outputs)


def run_models(blocks, connections, solver, dt=0.01, duration=1.0, **extra):
    return nc.simulate(diagram(blocks, connections, dt=dt, duration=duration, solver=solver, **extra),
                       base_dir=MODELS)


def recorded(id, n, names):
    """Recorders of the first ``n`` outputs of block ``id`` under ``names``."""
    return [record(f"rec_{name}", name) for name in names[:n]], [wire(id, f"rec_{name}", k, 0)
                                                                for k, name in enumerate(names[:n])]


def falling_ball(t, h0=1.0, g=9.81, e=0.8):
    """The bouncing ball's closed form (fixtures/fmi/modelica_bouncing_ball.json derives it)."""
    t1 = math.sqrt(2 * h0 / g)
    if t < t1:
        return h0 - g * t * t / 2, -g * t
    tn, vn = t1, e * g * t1
    while t >= tn + 2 * vn / g:
        tn, vn = tn + 2 * vn / g, vn * e
    return vn * (t - tn) - g * (t - tn) ** 2 / 2, vn - g * (t - tn)


@pytest.mark.parametrize("solver", SOLVER_PAIR)
def test_modelica_bouncing_ball_matches_the_closed_form(solver):
    recs, conns = recorded("ball", 2, ["h", "v"])
    res = run_models([model_block("ball", "BouncingBall", outputs=2)] + recs, conns, solver, dt=0.05, duration=2.0)
    ref = np.array([falling_ball(t) for t in res["time"]])
    assert np.abs(column(res, "h") - ref[:, 0]).max() < 1e-8
    assert np.abs(column(res, "v") - ref[:, 1]).max() < 1e-7
    impacts = [e["t"] for e in res["events"] if e.get("changed") == ["v"]]
    t1 = math.sqrt(2 / 9.81)
    assert impacts[:3] == pytest.approx([t1, t1 * (1 + 1.6), t1 * (1 + 1.6 + 1.28)], abs=1e-9)


@pytest.mark.parametrize("solver", SOLVER_PAIR)
def test_modelica_pi_loop_with_input_and_output_gives_the_closed_form(solver):
    # PI (kp = ki = 1) around the lag 1/(s + 1): the loop gain is 1/s, so a unit step of the
    # set point gives y = 1 - exp(-t) and u = e + integral(e) = exp(-t) + 1 - exp(-t) = 1
    blocks = [constant("r", 1), blk("err", "sum", Inputs="+-"), model_block("pi", "PI", inputs=1, outputs=1),
              model_block("plant", "Lag", inputs=1, outputs=1), record("wy", "y"), record("wu", "u")]
    conns = [wire("r", "err", 0, 0), wire("plant", "err", 0, 1), wire("err", "pi"), wire("pi", "plant"),
             wire("plant", "wy"), wire("pi", "wu")]
    res = run_models(blocks, conns, solver, dt=0.1, duration=5.0)
    t = np.asarray(res["time"])
    assert np.abs(column(res, "y") - (1 - np.exp(-t))).max() < 1e-6
    assert np.abs(column(res, "u") - 1.0).max() < 1e-6


@pytest.mark.parametrize("solver", SOLVER_PAIR)
def test_modelica_pi_loop_agrees_with_the_same_loop_of_nflow_blocks(solver):
    # kp = 2, ki = 3, T = 0.5 as Modelica blocks, and as nflow's gain, integrator, sum and tf
    blocks = [constant("r", 1), blk("err", "sum", Inputs="+-"),
              model_block("pi", "PI", inputs=1, outputs=1, kp=2, ki=3), model_block("plant", "Lag", inputs=1, outputs=1,
                                                                                T=0.5),
              record("wy", "y"), record("wu", "u"),
              blk("err2", "sum", Inputs="+-"), blk("p", "gain", Gain=2), blk("i", "integrator"), blk("ki", "gain", Gain=3),
              blk("u2", "sum", Inputs="++"), blk("lag", "tf", Numerator=[1], Denominator=[0.5, 1]),
              record("wy2", "y2"), record("wu2", "u2")]
    conns = [wire("r", "err", 0, 0), wire("plant", "err", 0, 1), wire("err", "pi"), wire("pi", "plant"),
             wire("plant", "wy"), wire("pi", "wu"),
             wire("r", "err2", 0, 0), wire("lag", "err2", 0, 1), wire("err2", "p"), wire("err2", "i"), wire("i", "ki"),
             wire("p", "u2", 0, 0), wire("ki", "u2", 0, 1), wire("u2", "lag"), wire("lag", "wy2"), wire("u2", "wu2")]
    res = run_models(blocks, conns, solver, dt=0.05, duration=4.0)
    assert np.abs(column(res, "y") - column(res, "y2")).max() < 2e-5
    assert np.abs(column(res, "u") - column(res, "u2")).max() < 2e-5


@pytest.mark.parametrize("solver", SOLVER_PAIR)
def test_modelica_thermostat_with_when_and_pre_switches_at_the_closed_form_times(solver):
    # heating: T -> Ta + P/k = 30 with rate k = 0.2; cooling: T -> Ta = 10. From 20 it heats
    # to 21 (t = ln(10/9)/k), cools to 19 (+ ln(11/9)/k), heats to 21 (+ ln(11/9)/k), ...
    recs, conns = recorded("th", 3, ["T", "P", "n"])
    res = run_models([model_block("th", "Thermostat", outputs=3)] + recs, conns, solver, dt=0.01, duration=10.0)
    k, period = 0.2, math.log(11 / 9) / 0.2
    switches = [math.log(10 / 9) / k + n * period for n in range(20) if math.log(10 / 9) / k + n * period < 10]
    fired = [e["t"] for e in res["events"] if "heater" in e.get("changed", ())]
    tol = 2e-9 if solver == "ode45" else 2e-4
    assert fired == pytest.approx(switches, abs=tol)
    t, T = np.asarray(res["time"]), column(res, "T")
    first = t < switches[0]
    assert np.abs(T[first] - (30 - 10 * np.exp(-k * t[first]))).max() < 5 * tol + 1e-9
    assert T[t > switches[0]].min() > 19 - 1e-4 and T.max() < 21 + 1e-4
    assert column(res, "n")[-1] == len(switches)          # when change(heater): switches = pre(switches) + 1
    heating = np.array([sum(s <= x for s in switches) % 2 == 0 for x in t])
    assert np.array_equal(column(res, "P") == 4.0, heating)


def stick_slip_reference(times, amplitude=3.0, w=math.pi, force=1.0):
    """Closed form of a unit mass under f = A sin(w t) with Coulomb friction ``force`` (no
    Stribeck term): stuck while |f| <= force; sliding in direction d from t0 (v = 0 there),
    v = (A/w)(cos w t0 - cos w t) - d (t - t0) until v returns to 0. Returns (s, v) at
    ``times``."""
    from scipy.optimize import brentq

    def speed(t, t0, d):
        return amplitude / w * (math.cos(w * t0) - math.cos(w * t)) - d * (t - t0)

    def position(t, t0, d, s0):
        return s0 + amplitude / w * (math.cos(w * t0) * (t - t0) - (math.sin(w * t) - math.sin(w * t0)) / w) \
            - d * (t - t0) ** 2 / 2

    segments, t0, s0, end = [], 0.0, 0.0, float(times[-1]) + 1.0
    while t0 < end:
        f0 = amplitude * math.sin(w * t0)
        if abs(f0) > force:           # slides at once (a reversal)
            d = 1.0 if f0 > 0 else -1.0
        else:                         # stuck until |f| exceeds the friction force
            grid = np.arange(t0, end, 1e-3)
            out = np.nonzero(np.abs(amplitude * np.sin(w * grid)) > force)[0]
            if not len(out):
                segments.append((t0, end, None, 0.0, s0))
                break
            tb = brentq(lambda x: abs(amplitude * math.sin(w * x)) - force, grid[out[0] - 1], grid[out[0]], xtol=1e-14)
            segments.append((t0, tb, None, 0.0, s0))
            t0, d = tb, (1.0 if amplitude * math.sin(w * tb) > 0 else -1.0)
        grid = np.arange(t0 + 1e-6, end, 1e-3)
        back = np.nonzero(np.array([speed(x, t0, d) * d for x in grid]) < 0)[0]
        ts = brentq(lambda x: speed(x, t0, d), grid[back[0] - 1], grid[back[0]], xtol=1e-14) if len(back) else end
        segments.append((t0, ts, d, t0, s0))
        s0, t0 = position(ts, t0, d, s0), ts
    out = []
    for t in times:
        a, b, d, start, s_start = next(seg for seg in segments if seg[0] <= t < seg[1])
        out.append((s_start, 0.0) if d is None else (position(t, start, d, s_start), speed(t, start, d)))
    return np.array(out)


@pytest.mark.parametrize("solver", SOLVER_PAIR)
def test_modelica_stick_slip_mass_with_when_switching_matches_the_closed_form(solver):
    recs, conns = recorded("m", 3, ["s", "v", "mode"])
    blocks = [blk("f", "sine", Amplitude=3, Frequency=0.5), model_block("m", "StickSlip", inputs=1, outputs=3,
                                                                       F_Stribeck=0)] + recs
    res = run_models(blocks, [wire("f", "m")] + conns, solver, dt=0.01, duration=4.0)
    ref = stick_slip_reference(np.asarray(res["time"]))
    assert np.abs(column(res, "s") - ref[:, 0]).max() < 5e-6
    assert np.abs(column(res, "v") - ref[:, 1]).max() < 5e-6
    modes = [e for e in res["events"] if "mode" in e.get("changed", ())]
    assert [round(e["t"], 6) for e in modes[:1]] == [round(math.asin(1 / 3) / math.pi, 6)]
    assert set(column(res, "mode")) == {-1.0, 0.0, 1.0}


@pytest.mark.parametrize("solver", SOLVER_PAIR)
def test_modelica_stick_slip_agrees_with_mass_with_stop_and_friction(solver):
    # with a Stribeck term the flat model is MSL's friction law: the project's own
    # MassWithStopAndFriction (stops far away) gives the same motion
    recs, conns = recorded("m", 2, ["s", "v"])
    blocks = [blk("f", "sine", Amplitude=3, Frequency=0.5), model_block("m", "StickSlip", inputs=1, outputs=2)] + recs
    blocks += [blk("f2", "sine", Amplitude=3, Frequency=0.5), blk("F", "Force"),
               blk("box", "MassWithStopAndFriction", m=1, smax=100, smin=-100, F_prop=0, F_Coulomb=1, F_Stribeck=0.5,
                   fexp=2, L=0, s0=0, v0=0),
               blk("ps", "PositionSensor"), blk("vs", "SpeedSensor"), record("r0", "s2"), record("r1", "v2")]
    conns += [wire("f", "m"), wire("f2", "F"), pin("F", "flange", "box", "flange_a"),
              pin("ps", "flange", "box", "flange_a"), pin("vs", "flange", "box", "flange_a"), wire("ps", "r0"),
              wire("vs", "r1")]
    res = run_models(blocks, conns, solver, dt=0.01, duration=4.0)
    assert np.abs(column(res, "s") - column(res, "s2")).max() < 2e-6
    assert np.abs(column(res, "v") - column(res, "v2")).max() < 2e-6


MSL_EXAMPLES = {
    # model -> (reference CSV, the acausal fixture diagram of the same example, duration, sample time)
    "Oscillator": ("Oscillator.csv", "oscillator.json", 1.0, 0.0025),
    "CauerLowPass": ("CauerLowPassAnalog.csv", "cauer_low_pass_analog.json", 60.0, 0.12),
}


def msl_example(name, solver):
    csv, _, duration, dt = MSL_EXAMPLES[name]
    t_ref, cols = msl_tube.read_reference(csv)
    signals = list(cols)
    recs, conns = recorded("m", len(signals), signals)
    res = run_models([model_block("m", name, package="MslModels", outputs=len(signals))] + recs, conns, solver,
                     dt=dt, duration=duration)
    return res, t_ref, cols


@pytest.mark.parametrize("solver", SOLVER_PAIR)
@pytest.mark.parametrize("name", MSL_EXAMPLES)
def test_modelica_msl_examples_stay_inside_the_msl_tube(name, solver):
    res, t_ref, cols = msl_example(name, solver)
    t = np.asarray(res["time"])
    for signal, y_ref in cols.items():
        tube = msl_tube.compare(signal, t_ref, y_ref, t, column(res, signal))
        assert tube.passed and tube.relative_margin > 0.3, (signal, tube)


@pytest.mark.parametrize("solver", SOLVER_PAIR)
@pytest.mark.parametrize("name", MSL_EXAMPLES)
def test_modelica_msl_examples_agree_with_the_same_network_of_acausal_blocks(name, solver):
    res, t_ref, cols = msl_example(name, solver)
    fixture = goldens.load(goldens.ROOT / "msl" / MSL_EXAMPLES[name][1])
    blocks = nc.simulate(dict(fixture["diagram"], solver=solver))
    for signal, spec in fixture["tube"]["signals"].items():
        y = np.asarray(blocks["workspace"][spec["variable"]], dtype=float)[:, 0] + spec.get("offset", 0.0)
        span = float(np.ptp(cols[signal]))
        assert np.abs(column(res, signal) - y).max() < 2e-5 * span, signal


def dc_motor_closed_form(times, start=0.1, R=0.5, L=0.05, k=0.8, J=0.2, d=0.1):
    """A unit voltage step at ``start``: x = (i, w), x' = A x + b u, x(t) = A^-1 (e^{A(t-start)} - I) b."""
    from scipy.linalg import expm
    A = np.array([[-R / L, -k / L], [k / J, -d / J]])
    b = np.array([1 / L, 0.0])
    return np.array([np.zeros(2) if t < start else np.linalg.solve(A, (expm(A * (t - start)) - np.eye(2)) @ b)
                     for t in times])


@pytest.mark.parametrize("solver", SOLVER_PAIR)
def test_modelica_dc_motor_of_msl_electrical_and_mechanical_components(solver):
    # MSL Electrical.Analog (SignalVoltage, Resistor, Inductor, RotationalEMF, Ground) and
    # Mechanics.Rotational (Inertia, Damper, Fixed) in one model, driven by an nflow step;
    # beside it the same motor of the project's acausal blocks
    recs, conns = recorded("m", 2, ["w", "i"])
    blocks = [blk("u", "step", Time=0.1), model_block("m", "DCMotor", package="MslModels", inputs=1, outputs=2)] + recs
    blocks += [blk("V", "SignalVoltage"), blk("R", "Resistor", R=0.5), blk("L", "Inductor", L=0.05, i0=0),
               blk("emf", "EMF", k=0.8), blk("G", "Ground"), blk("J", "Inertia", J=0.2, w0=0),
               blk("D", "RotDamper", d=0.1), blk("H", "RotFixed"), blk("ws", "RotSpeedSensor"),
               blk("is", "CurrentSensor"), record("r0", "w2"), record("r1", "i2")]
    conns += [wire("u", "m"), wire("u", "V"), pin("V", "p", "is", "p"), pin("is", "n", "R", "p"),
              pin("R", "n", "L", "p"), pin("L", "n", "emf", "p"), pin("emf", "n", "V", "n"), pin("V", "n", "G", "p"),
              pin("emf", "flange", "J", "flange"), pin("J", "flange", "D", "a"), pin("D", "b", "H", "flange"),
              pin("ws", "flange", "J", "flange"), wire("ws", "r0"), wire("is", "r1")]
    res = run_models(blocks, conns, solver, dt=0.01, duration=3.0)
    ref = dc_motor_closed_form(res["time"])
    assert np.abs(column(res, "i") - ref[:, 0]).max() < 3e-6
    assert np.abs(column(res, "w") - ref[:, 1]).max() < 3e-6
    assert np.abs(column(res, "w") - column(res, "w2")).max() < 1e-9
    assert np.abs(column(res, "i") - column(res, "i2")).max() < 1e-9


@pytest.mark.parametrize("solver, tol", [("discrete", 1e-6), ("ode4", 1e-6), ("ode1", 0.2)])
def test_modelica_runs_under_the_fixed_step_solvers_too(solver, tol):
    # as fmuMe: its states are the solver's (RK4 between grid points under discrete), the
    # impacts still located inside a step
    recs, conns = recorded("ball", 1, ["h"])
    res = run_models([model_block("ball", "BouncingBall")] + recs, conns, solver, dt=0.01, duration=1.0)
    ref = np.array([falling_ball(t)[0] for t in res["time"]])
    assert np.abs(column(res, "h") - ref).max() < tol
    impacts = [e["t"] for e in res["events"] if e.get("changed") == ["v"]]
    assert impacts[0] == pytest.approx(math.sqrt(2 / 9.81), abs=1e-9 if solver != "ode1" else 1e-2)


def inline(source, inputs=0, outputs=1, **params):
    return blk("m", "modelica", dict(source=source, **params), inputs=inputs, outputs=outputs)


def run_inline(source, outputs=1, duration=1.0, dt=0.1, solver="ode45", **params):
    recs, conns = recorded("m", outputs, [f"y{k}" for k in range(outputs)])
    return nc.simulate(diagram([inline(source, outputs=outputs, **params)] + recs, conns, dt=dt, duration=duration,
                               solver=solver))


DECAY = """model Decay "x' = -k x"
  parameter Real k = 2;
  parameter Real x0 = 1;
  Real x(start = x0, fixed = true);
  output Real y = x;
equation
  der(x) = -k * x;
end Decay;
"""


@settings(max_examples=15, deadline=None)
@given(k=st.floats(0.1, 5.0), x0=st.floats(-3.0, 3.0))
def test_modelica_params_override_the_bindings_and_the_law_holds(k, x0):
    # inline source needs no base directory; the params set the model's parameters (a
    # derived start value follows), one compiled flat model serves every value
    res = run_inline(DECAY, k=k, x0=x0)
    t = np.asarray(res["time"])
    assert np.abs(column(res, "y0") - x0 * np.exp(-k * t)).max() < 1e-6 * (1 + abs(x0))


def test_modelica_the_model_name_defaults_to_the_first_class_or_the_file_name():
    assert column(run_inline(DECAY), "y0")[-1] == pytest.approx(math.exp(-2), abs=1e-6)
    res = run_models([blk("m", "modelica", file="Decay.mo", outputs=1)] + recorded("m", 1, ["y"])[0],
                     recorded("m", 1, ["y"])[1], "ode45", dt=0.5, duration=1.0)
    assert column(res, "y")[-1] == pytest.approx(math.exp(-3), abs=1e-6)     # Decay.mo sets k = 3


def diagram_error(block, code, base_dir=MODELS, solver="ode45"):
    with pytest.raises(nc.NFlowError) as info:
        nc.simulate(diagram([block], [], solver=solver), base_dir=base_dir)
    assert info.value.code == code, info.value
    return info.value


@pytest.mark.parametrize("params, code, param, hint", [
    ({"k": "two"}, "undefined_variable", "k", "'two'"),
    ({"kk": 1.0}, "modelica_unknown_parameter", "kk", "did you mean 'k'?"),
    ({"x": 1.0}, "modelica_unknown_parameter", "x", "not a parameter"),
    ({"source": "", "file": ""}, "modelica_no_model", "source", "one of them"),
    ({"file": "Decay.mo"}, "modelica_no_model", "file", "one of them"),
    ({"modelName": "Nope"}, "modelica_compile_failed", "source", "Nope"),
])
def test_modelica_bad_params_are_typed_errors_naming_the_param(params, code, param, hint):
    err = diagram_error(blk("m", "modelica", dict({"source": DECAY}, **params), outputs=1), code)
    assert err.param == param and err.block == "m" and hint in err.message, err.message


def test_modelica_a_structural_parameter_cannot_be_set():
    # force1.useSupport decides whether the support flange exists (a conditional component):
    # the flat model is shaped by it, so the block refuses to set it; a parameter that only
    # selects a branch of an if-equation is an ordinary one
    err = diagram_error(model_block("m", "Oscillator", package="MslModels", **{"force1.useSupport": True}),
                        "modelica_structural_parameter")
    assert err.param == "force1.useSupport"
    source = ("model S\n  parameter Boolean fast = false;\n  Real x(start = 1, fixed = true);\n  output Real y = x;\n"
              "equation\n  if fast then\n    der(x) = -4*x;\n  else\n    der(x) = -x;\n  end if;\nend S;\n")
    assert column(run_inline(source, fast=True), "y0")[-1] == pytest.approx(math.exp(-4), abs=1e-6)


@pytest.mark.parametrize("params, code", [
    ({"file": "../FlatModels.mo"}, "path_outside_base"), ({"file": "/etc/passwd"}, "path_outside_base"),
    ({"file": "missing.mo"}, "modelica_file_missing"), ({"file": "Decay.mo", "libraries": ["../msl"]},
                                                         "path_outside_base"),
])
def test_modelica_files_stay_inside_the_base_directory(params, code):
    err = diagram_error(blk("m", "modelica", params, outputs=1), code)
    assert err.block == "m"


def test_modelica_files_need_a_base_directory():
    err = diagram_error(blk("m", "modelica", file="Decay.mo", outputs=1), "file_access_disabled", base_dir=None)
    assert err.param == "file"


def test_modelica_more_ports_than_the_model_has():
    err = diagram_error(inline(DECAY, outputs=2), "modelica_ports")
    assert err.path == "/blocks/0/outputs" and "y" in err.message


def test_modelica_a_vector_into_a_scalar_input():
    d = diagram([blk("c", "constant", Value=[1, 2]), model_block("pi", "PI", inputs=1, outputs=1), record()],
                [wire("c", "pi"), wire("pi", "w")], solver="ode45")
    with pytest.raises(DiagramError) as info:
        nc.simulate(d, base_dir=MODELS)
    assert info.value.code == "modelica_port_width"


@pytest.mark.parametrize("source, code, line", [
    # what the lowering does not take: a typed error naming the model's line
    ("model A\n  Real x[2](each start = 1, each fixed = true);\nequation\n  der(x) = -x;\nend A;", "modelica_unsupported", 2),
    ("model B\n  Real x(start = 1, fixed = true);\n  Real y;\nalgorithm\n  y := 2*x;\nequation\n  der(x) = -x;\nend B;",
     "modelica_unsupported", 5),
    ("model C\n  input Real u;\n  Real x(start = 0, fixed = true);\n  Real v;\nequation\n  der(x) = v;\n  x = u;\nend C;",
     "modelica_unsupported", 7),
    ("model D\n  function f\n    input Real u;\n    output Real y;\n  external \"C\" y = sin(u);\n  end f;\n"
     "  Real x(start = 1, fixed = true);\nequation\n  der(x) = f(x);\nend D;", "modelica_unsupported", 2),
    ("model E\n  Real x(start = 1, fixed = true);\n  Real y;\nequation\n  der(x) = -x;\n  y = floor(x);\nend E;",
     "modelica_unsupported", 6),
    ("model F\n  Real x(start = 1, fixed = true);\n  Real y;\nequation\n  der(x) = -x;\n  y = delay(x, 0.1);\nend F;",
     "modelica_unsupported", 6),
    # and what rumoca refuses
    ("model G\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -x +;\nend G;", "modelica_compile_failed", 4),
])
def test_modelica_what_cannot_run_is_a_typed_error_naming_the_line(source, code, line):
    err = diagram_error(inline(source, outputs=0), code)
    assert f"line {line}" in err.message, err.message
    assert err.block == "m" and err.param == "source"


def test_modelica_failures_while_running_name_the_equation():
    # y*y = x - 2 has no real solution once x < 2: Newton cannot solve it
    source = ("model H\n  Real x(start = 3, fixed = true);\n  Real y(start = 1);\n  output Real out = y;\nequation\n"
              "  der(x) = -1;\n  y * y = x - 2;\nend H;\n")
    with pytest.raises(SimulationError) as info:
        run_inline(source, duration=2.0)
    assert info.value.code == "modelica_unsolvable" and "line 7" in info.value.message
    assert info.value.block == "m"


@pytest.mark.parametrize("level", ["error", "warning"])
def test_modelica_asserts_stop_the_run_or_warn(level):
    source = ("model I\n  Real x(start = 1, fixed = true);\n  output Real y = x;\n"
              f"equation\n  der(x) = -x;\n  assert(x > 0.5, \"x fell below 0.5\", AssertionLevel.{level});\nend I;\n")
    if level == "error":
        with pytest.raises(SimulationError) as info:
            run_inline(source)
        assert info.value.code == "modelica_assert" and "x fell below 0.5" in info.value.message
        assert "line 6" in info.value.message and "t = 0.7" in info.value.message
    else:
        res = run_inline(source)
        assert len([w for w in res["warnings"] if "x fell below 0.5" in w]) == 1


def test_modelica_terminate_ends_the_run():
    source = ("model J\n  Real x(start = 0, fixed = true);\n  output Real y = x;\nequation\n  der(x) = 1;\n"
              "  when x > 0.25 then\n    terminate(\"far enough\");\n  end when;\nend J;\n")
    res = run_inline(source, duration=1.0)
    assert res["time"][-1] == pytest.approx(0.3) and any("far enough" in w for w in res["warnings"])


def test_modelica_without_rumoca_is_modelica_unavailable(monkeypatch):
    import sys
    from nflow_compat.modelica import frontend
    monkeypatch.setitem(sys.modules, "rumoca", None)          # makes `import rumoca` fail
    frontend.rumoca.cache_clear()
    try:
        err = diagram_error(inline(DECAY), "modelica_unavailable")
        assert "pip install 'nflow-compat[modelica]'" in err.message and err.block == "m"
    finally:
        frontend.rumoca.cache_clear()


def test_modelica_a_rumoca_of_another_series_is_refused(monkeypatch):
    import rumoca
    from nflow_compat.modelica import frontend
    monkeypatch.setattr(rumoca, "version", lambda: "0.11.0")
    frontend.rumoca.cache_clear()
    try:
        err = diagram_error(inline(DECAY), "modelica_unavailable")
        assert "0.11.0" in err.message
    finally:
        frontend.rumoca.cache_clear()


def test_modelica_compiles_each_model_once_per_process(monkeypatch, tmp_path):
    from nflow_compat.modelica import frontend
    calls = []
    real = frontend.rumoca().Session

    class Counting:
        def __init__(self, roots):
            self.session = real(roots)

        def loads(self, text, **kw):
            calls.append(kw["model"])
            return self.session.loads(text, **kw)
    monkeypatch.setattr(frontend.rumoca(), "Session", Counting)
    source = DECAY.replace("k = 2", "k = 2.5")        # a source no other test compiled
    for k in (1.0, 2.0):
        run_inline(source, k=k)
    assert calls == ["Decay"]
    model = tmp_path / "Decay.mo"
    model.write_text(source)
    block = blk("m", "modelica", file="Decay.mo", outputs=1)
    nc.simulate(diagram([block], [], solver="ode45"), base_dir=tmp_path)
    model.write_text(source.replace("k = 2.5", "k = 3.5"))   # an edited file is compiled again
    nc.simulate(diagram([block], [], solver="ode45"), base_dir=tmp_path)
    assert calls == ["Decay", "Decay"]


def test_modelica_libraries_come_from_modelicapath_too(monkeypatch):
    # the MSL models without the 'libraries' param: the roots of MODELICAPATH (as
    # OpenModelica reads it) are searched
    monkeypatch.setenv("MODELICAPATH", str(MODELS / "msl"))
    recs, conns = recorded("m", 1, ["w"])
    block = blk("m", "modelica", file="MslModels.mo", modelName="MslModels.DCMotor", inputs=1, outputs=1)
    res = run_models([constant("u", 1), block] + recs, [wire("u", "m")] + conns, "ode45", dt=0.5, duration=1.0)
    assert column(res, "w")[-1] > 0.5
    monkeypatch.setenv("MODELICAPATH", "")
    with pytest.raises(DiagramError) as info:
        run_models([constant("u", 1), block] + recs, [wire("u", "m")] + conns, "ode45", dt=0.5, duration=1.0)
    assert info.value.code == "modelica_compile_failed" and "unresolved" in info.value.message


def test_modelica_block_makes_an_entry_that_runs(capsys):
    assert cli.main(["modelica-block", str(MODELS / "FlatModels.mo"), "--model", "FlatModels.PI"]) == 0
    entry = json.loads(capsys.readouterr().out)
    assert [p["name"] for p in entry["inputs"]] == ["e"] and [p["name"] for p in entry["outputs"]] == ["u"]
    assert entry["defaultParams"]["kp"] == 1.0 and entry["defaultParams"]["modelName"] == "FlatModels.PI"
    params = dict(entry["defaultParams"], file="FlatModels.mo", kp=0.0, ki=2.0)
    d = diagram([constant("c", 1), blk("pi", "modelica", params, inputs=1, outputs=1), record()],
                [wire("c", "pi"), wire("pi", "w")], dt=0.5, duration=1.0, solver="ode45")
    assert np.asarray(nc.simulate(d, base_dir=MODELS)["workspace"]["y"])[:, 0] == pytest.approx([0, 1, 2])
