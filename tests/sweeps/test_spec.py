"""Sweeps without a cluster: the spec (schema and meaning, typed errors with pointers), the
parameter values and their combinations, the reductions, what a worker does with a batch,
and the results store. The Dask side is in test_sweep.py."""
from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import nflow_compat as nc
from nflow_compat.diagram import Limits, with_params
from nflow_compat.sweeps import expand, reductions, spec, store, worker
from tests.util import blk, diagram, wire

REPO = Path(__file__).resolve().parents[2]
MASS = json.loads((REPO / "examples" / "sweep_coulomb" / "diagram.json").read_text())
MASS["duration"] = 1.0


def gains(**extra):
    """sine -> gain (Gain = 'k*2', k a variable) -> toWorkspace 'y' (Structure With Time)."""
    blocks = [blk("src", "sine", Amplitude=1.0, Frequency=1.0), blk("g", "gain", Gain="k*2"),
              blk("w", "toWorkspace", VariableName="y", SaveFormat="Structure With Time")]
    return diagram(blocks, [wire("src", "g"), wire("g", "w")], dt=0.01, duration=1.0, variables={"k": 1.5}, **extra)


def mass_spec(**extra):
    return dict({"diagram": copy.deepcopy(MASS), "parameters": {"stop1.F_Coulomb": [1, 2, 3]},
                 "outputs": {"stop1.v": ["max", "first_rising(0)"]}}, **extra)


# ----------------------------------------------------------------------------- spec errors

def _set(path, value):
    def change(doc):
        *head, last = path
        node = doc
        for key in head:
            node = node[key]
        if value is KeyError:
            del node[last]
        else:
            node[last] = value
    return change


F = "stop1.F_Coulomb"
BAD_SPECS = [
    # (change to a valid spec, code, path, words in the message)
    (_set(["combin"], "grid"), "spec_unknown_key", "/combin", "did you mean 'combine'"),
    (_set(["diagram"], KeyError), "spec_missing", "", "'diagram'"),
    (_set(["parameters"], {}), "spec_empty", "/parameters", ""),
    (_set(["combine"], "cross"), "spec_value", "/combine", "'cross'"),
    (_set(["parameters", F], []), "spec_length", f"/parameters/{F}", ""),
    (_set(["parameters", F], {"linspace": [0, 1]}), "spec_length", f"/parameters/{F}/linspace", ""),
    (_set(["parameters", F], {"linspace": [0, 1, 0]}), "spec_value", f"/parameters/{F}/linspace/2", ""),
    (_set(["parameters", F], {"linspase": [0, 1, 3]}), "spec_unknown_key", f"/parameters/{F}/linspase",
     "did you mean 'linspace'"),
    (_set(["parameters", F], {"uniform": [0, 1]}), "spec_missing", f"/parameters/{F}", "'samples'"),
    (_set(["parameters", F], {"uniform": [1, 0], "samples": 3}), "spec_value", f"/parameters/{F}/uniform",
     "lo <= hi"),
    (_set(["parameters", F], {"normal": [1, -1], "samples": 3}), "spec_value", f"/parameters/{F}/normal",
     "sigma"),
    (_set(["parameters", F], {"linspace": [0, 1, 3], "uniform": [0, 1]}), "spec_value", f"/parameters/{F}",
     "exactly one"),
    (_set(["parameters", F], {"linspace": [0, 1, 3], "seed": 1}), "spec_value", f"/parameters/{F}/seed",
     "uniform/normal"),
    (_set(["parameters"], {"stop9.F_Coulomb": [1]}), "unknown_block", "/parameters/stop9.F_Coulomb",
     "did you mean 'stop1'"),
    (_set(["parameters"], {"stop1.F_Colomb": [1]}), "unknown_param", "/parameters/stop1.F_Colomb",
     "did you mean 'F_Coulomb'"),
    (_set(["parameters"], {"variables.k": [1]}), "unknown_variable", "/parameters/variables.k", "no variable"),
    (_set(["parameters"], {"/blocks/9/params/m": [1]}), "bad_pointer", "/parameters/~1blocks~19~1params~1m",
     "'/blocks/9'"),
    (_set(["parameters"], {"/blocks/2/params/F_Colomb": [1]}), "unknown_param",
     "/parameters/~1blocks~12~1params~1F_Colomb", "did you mean 'F_Coulomb'"),
    (_set(["parameters"], {"F_Coulomb": [1]}), "bad_address", "/parameters/F_Coulomb", "JSON pointer"),
    (_set(["parameters"], {F: [1, 2, 3], "stop1.m": [1, 2]}), None, None, None),   # grid: fine
    (lambda d: d.update(combine="zip", parameters={F: [1, 2, 3], "stop1.m": [1, 2]}), "length_mismatch",
     "/parameters/stop1.m", "3"),
    (_set(["parameters"], {F: {"linspace": [0, 1, 1000]}, "stop1.m": {"linspace": [1, 2, 1000]},
                           "stop1.F_prop": {"linspace": [1, 2, 1000]}}), "too_many_runs", "/parameters", "1e+09"),
    (_set(["outputs", "stop1.v"], ["maximum"]), "bad_output", "/outputs/stop1.v/0", "first_crossing(L)"),
    (_set(["outputs", "stop1.v"], ["max", "max"]), "spec_duplicate", "/outputs/stop1.v", ""),
    (_set(["outputs"], {"speed": ["max"]}), "unknown_output", "/outputs/speed", "'stop1.s', 'stop1.v'"),
    (_set(["diagram", "blocks", 0, "type"], "sinus"), "unknown_block_type", "/diagram/blocks/0/type",
     "did you mean 'sine'"),
    (_set(["diagram"], "no-such-file.json"), "unreadable_input", "/diagram", "no-such-file.json"),
]


@pytest.mark.parametrize("change, code, path, words", BAD_SPECS)
def test_bad_specs_get_typed_errors_with_pointers(change, code, path, words):
    doc = mass_spec()
    change(doc)
    if code is None:
        assert len(spec.load(doc).runs) == 6
        return
    with pytest.raises(nc.DiagramError) as info:
        spec.load(doc)
    err = info.value
    assert (err.code, err.path) == (code, path), err.to_dict()
    assert words in err.message


def test_a_diagram_file_error_names_the_file_and_points_into_it(tmp_path):
    bad = copy.deepcopy(MASS)
    bad["blocks"][2]["params"]["m"] = -1
    (tmp_path / "d.json").write_bytes(orjson.dumps(bad))
    (tmp_path / "s.json").write_bytes(orjson.dumps(dict(mass_spec(), diagram="d.json")))
    with pytest.raises(nc.DiagramError) as info:
        spec.load(tmp_path / "s.json")
    assert info.value.code == "param_range" and info.value.path == "/blocks/2/params/m"
    assert info.value.to_dict()["file"] == str(tmp_path / "d.json")


def test_the_schema_is_valid_and_checked_in():
    Draft202012Validator.check_schema(spec.sweep_schema())
    assert orjson.loads((REPO / "schemas" / "sweep.schema.json").read_bytes()) == spec.sweep_schema()


def test_addresses_resolve_to_pointers_and_block_targets():
    d = gains()
    d["blocks"][1]["params"] = []          # jsonencode's empty params: the sweep still sets the Gain
    loaded = spec.load({"diagram": d, "parameters": {"g.Gain": [1], "variables.k": [2], "/blocks/0/params/Amplitude":
                                                     [3], "/duration": [2.0]}})
    assert [(p.pointer, p.block) for p in loaded.parameters] == [
        ("/blocks/1/params/Gain", (1, "Gain")), ("/variables/k", None),
        ("/blocks/0/params/Amplitude", (0, "Amplitude")), ("/duration", None)]
    assert d["blocks"][1]["params"] == []  # the caller's diagram is not touched


# ----------------------------------------------------------------------------- values and runs

def test_ranges_grid_and_zip():
    # logspace counts decades (numpy's and MATLAB's convention): 10**0, 10**1, 10**2
    assert expand.values({"logspace": [0, 2, 3]}, where="", position=0) == [1.0, 10.0, 100.0]
    assert expand.values({"linspace": [10, 30, 5]}, where="", position=0) == [10.0, 15.0, 20.0, 25.0, 30.0]
    assert expand.combine(["a", "b"], [[1, 2], ["x", "y", "z"]], "grid") == [
        (1, "x"), (1, "y"), (1, "z"), (2, "x"), (2, "y"), (2, "z")]      # the first parameter varies slowest
    assert expand.combine(["a", "b"], [[1, 2], [3, 4]], "zip") == [(1, 3), (2, 4)]


def test_random_draws_are_reproducible_and_independent():
    doc = {"diagram": gains(), "combine": "zip", "samples": 200, "seed": 5,
           "parameters": {"g.Gain": {"uniform": [2, 3]}, "src.Amplitude": {"uniform": [2, 3]},
                          "src.Frequency": {"normal": [10, 2], "samples": 200, "seed": 11}}}
    first, again = spec.load(doc), spec.load(copy.deepcopy(doc))
    assert first.runs == again.runs and first.fingerprint == again.fingerprint   # resume relies on it
    gain, amplitude, frequency = (np.array(p.values) for p in first.parameters)
    assert gain.min() >= 2 and gain.max() <= 3
    assert not np.array_equal(gain, amplitude)                    # own streams: [seed, position]
    assert np.array_equal(frequency, np.random.default_rng(11).normal(10, 2, 200))
    assert abs(frequency.mean() - 10) < 4 * 2 / math.sqrt(200)    # 4 standard errors
    doc["seed"] = 6
    assert spec.load(doc).fingerprint != first.fingerprint


# ----------------------------------------------------------------------------- reductions

def _red(text):
    return reductions.parse(text)


def _crossing_steps(x, level):
    """The steps k -> k+1 that change side ("above level" / "not above"), by a plain loop."""
    return [(k, x[k + 1] > level) for k in range(len(x) - 1) if (x[k] > level) != (x[k + 1] > level)]


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, min_size=1, max_size=60), finite)
def test_crossing_law(values, level):
    x = np.array(values)
    t = np.arange(len(x)) * 0.5
    steps = _crossing_steps(values, level)
    assert reductions.reduce(_red(f"crossings({level!r})"), t, x[:, None], "x") == len(steps)
    ups = [up for _, up in steps]
    assert all(a != b for a, b in zip(ups, ups[1:]))          # rising and falling alternate
    first = reductions.reduce(_red(f"first_crossing({level!r})"), t, x[:, None], "x")
    rising = reductions.reduce(_red(f"first_rising({level!r})"), t, x[:, None], "x")
    falling = reductions.reduce(_red(f"first_falling({level!r})"), t, x[:, None], "x")
    if not steps:
        assert math.isnan(first) and math.isnan(rising) and math.isnan(falling)
        return
    k, up = steps[0]
    assert first == (rising if up else falling)
    assert t[k] <= first <= t[k + 1]
    # the linear interpolant between the two samples is at the level there
    at = x[k] + (x[k + 1] - x[k]) * (first - t[k]) / (t[k + 1] - t[k])
    assert abs(at - level) <= 1e-9 * max(1.0, abs(x[k]), abs(x[k + 1]))


@settings(max_examples=100, deadline=None)
@given(st.floats(0.1, 10), st.floats(-5, 5), st.floats(0.05, 0.95))
def test_first_rising_of_a_ramp_is_its_closed_form(slope, offset, where):
    t = np.linspace(0.0, 1.0, 101)
    x = slope * t + offset
    level = offset + slope * where            # analytic: x(t) = level at t = where
    got = reductions.reduce(_red(f"first_rising({level!r})"), t, x[:, None], "x")
    assert got == pytest.approx(where, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.lists(finite, min_size=1, max_size=50))
def test_plain_reductions(values):
    x = np.array(values)[:, None]
    got = {name: reductions.reduce(_red(name), None, x, "x") for name in ("final", "min", "max", "mean", "rms")}
    assert (got["final"], got["min"], got["max"]) == (values[-1], min(values), max(values))
    assert got["mean"] == pytest.approx(math.fsum(values) / len(values), rel=1e-9, abs=1e-6)
    assert got["rms"] == pytest.approx(math.sqrt(math.fsum(v * v for v in values) / len(values)), rel=1e-9)


def test_recordings_that_cannot_be_reduced_say_why():
    grid = np.arange(4) * 0.1
    wide = {"time": grid, "events": [], "workspace": {"v": np.ones((4, 2))}}
    times, values = reductions.recording(wide, "v")
    with pytest.raises(nc.SimulationError, match="2 elements") as info:
        reductions.reduce(_red("max"), times, values, "v")
    assert info.value.code == "output_not_scalar"
    decimated = {"time": grid, "events": [], "workspace": {"v": np.ones((2, 1))}}
    times, values = reductions.recording(decimated, "v")
    assert times is None and reductions.reduce(_red("max"), times, values, "v") == 1.0
    with pytest.raises(nc.SimulationError) as info:
        reductions.reduce(_red("first_rising(0)"), times, values, "v")
    assert info.value.code == "output_time_unknown"
    complex_ = {"time": grid, "events": [], "workspace": {"v": {"real": np.ones((4, 1)), "imag": np.ones((4, 1))}}}
    with pytest.raises(nc.SimulationError) as info:
        reductions.recording(complex_, "v")
    assert info.value.code == "output_complex"


# ----------------------------------------------------------------------------- the worker

def _batch(loaded, runs=None, limits=None):
    return worker.Batch(structure=loaded.structure, diagram=loaded.diagram,
                        pointers=tuple(p.pointer for p in loaded.parameters),
                        blocks=tuple(p.block for p in loaded.parameters),
                        runs=tuple(enumerate(loaded.runs)) if runs is None else runs,
                        outputs=loaded.outputs, events=loaded.events, limits=limits or Limits(),
                        base_dir=loaded.base_dir)


def _simulated(d, name):
    entry = nc.simulate(d)["workspace"][name]
    return np.array(entry["time"]), np.array(entry["signals"]["values"], dtype=float)


@pytest.mark.parametrize("parameters", [{"g.Gain": [0.5, "k*3"], "src.Frequency": [1.0, 2.5]},   # re-bound
                                        {"variables.k": [0.5, 2.0], "/duration": [0.75, 1.0]}])  # parsed again
def test_a_batch_gives_what_simulate_gives(parameters):
    loaded = spec.load({"diagram": gains(), "parameters": parameters, "combine": "zip",
                        "outputs": {"y": ["final", "max", "mean", "first_falling(0)", "trace"]}})
    assert all(p.block is not None for p in loaded.parameters) == ("g.Gain" in parameters)   # the path taken
    done = worker.run_batch(_batch(loaded))
    assert [run for run, _, _ in done] == [0, 1]
    for (run, row, traces), values in zip(done, loaded.runs):
        d = gains()
        for p, value in zip(loaded.parameters, values):
            spec.set_pointer(d, p.pointer, value)
        times, y = _simulated(d, "y")
        assert row["status"] == "ok"
        [(variable, got_times, got)] = traces
        assert variable == "y" and np.array_equal(got_times, times) and np.array_equal(got, y)
        assert (row["y.final"], row["y.max"]) == (y[-1, 0], y.max())
        assert row["y.mean"] == pytest.approx(y.mean(), rel=1e-12)
        k = next(i for i in range(len(y) - 1) if y[i, 0] > 0 >= y[i + 1, 0])
        assert row["y.first_falling(0)"] == pytest.approx(times[k] + (0 - y[k, 0]) / (y[k + 1, 0] - y[k, 0])
                                                          * (times[k + 1] - times[k]), abs=1e-15)


def test_with_params_equals_parsing_the_changed_diagram():
    base = nc.validate(gains())
    rebound = with_params(base, {(1, "Gain"): "k*3", (0, "Amplitude"): [2.0]})
    changed = gains()
    changed["blocks"][1]["params"]["Gain"] = "k*3"
    changed["blocks"][0]["params"]["Amplitude"] = [2.0]
    parsed = nc.validate(changed)
    assert [b.params for b in rebound.blocks] == [b.params for b in parsed.blocks]
    assert rebound.blocks[2] is base.blocks[2]              # untouched blocks are shared
    assert base.blocks[1].params["Gain"] == 3.0             # and the base keeps its values


def test_a_goto_tag_is_swept_by_parsing_again():
    # a GotoTag decides where a route wire goes: the sweep re-parses instead of re-binding
    d = diagram([blk("a", "constant", Value=2), blk("b", "constant", Value=5), blk("la", "labelSink", GotoTag="A"),
                 blk("lb", "labelSink", GotoTag="B"), blk("from", "labelSource", GotoTag="A"),
                 blk("w", "toWorkspace", VariableName="y", SaveFormat="Array")],
                [wire("a", "la"), wire("b", "lb"), wire("from", "w")], duration=0.1)
    loaded = spec.load({"diagram": d, "parameters": {"from.GotoTag": ["A", "B"]}, "outputs": {"y": ["final"]}})
    assert loaded.parameters[0].block is None
    rows = [row for _, row, _ in worker.run_batch(_batch(loaded))]
    assert [row["y.final"] for row in rows] == [2.0, 5.0]


def test_failing_runs_are_rows_with_their_typed_error():
    loaded = spec.load(dict(mass_spec(), parameters={"stop1.s0": [0, 30], "stop1.m": [1, -1]}, combine="zip"))
    rows = {run: row for run, row, _ in worker.run_batch(_batch(loaded))}
    assert rows[0]["status"] == "ok" and rows[0]["error_code"] is None
    assert rows[1]["status"] == "error" and rows[1]["error_code"] == "param_range"   # m = -1: refused at bind
    loaded = spec.load(dict(mass_spec(), parameters={"stop1.s0": [0, 30]}))
    rows = {run: row for run, row, _ in worker.run_batch(_batch(loaded))}
    assert rows[1]["error_code"] == "stop_violated_at_init" and "outside the right stop" in rows[1]["error"]
    assert rows[0]["status"] == "ok" and rows[0]["stop1.v.max"] > 0


# ----------------------------------------------------------------------------- the store

def _finished(runs, traces=True):
    return [(run, {"status": "ok", "error_code": None, "error": None, "y.max": float(run)},
             [("y", np.arange(3) * 0.1, np.full((3, 1), float(run)))] if traces else []) for run in runs]


def test_store_writes_batches_resumes_and_refuses_another_sweep(tmp_path):
    loaded = spec.load({"diagram": gains(), "parameters": {"g.Gain": [1, 2, 3, 4], "src.Amplitude": ["k", [1]]},
                        "outputs": {"y": ["max", "trace"]}})
    out = tmp_path / "r.parquet"
    kept = store.Store(loaded, out)
    kept.add(_finished([0, 1]))
    kept.add(_finished([5]))
    # an interrupted batch: its traces file written, its table file not
    (store.traces_path(out) / "part-0000006-0000007.parquet").write_bytes(b"half")
    again = store.Store(loaded, out)
    assert again.done == {0, 1, 5}
    assert sorted(p.name for p in store.traces_path(out).iterdir()) == [
        "part-0000000-0000001.parquet", "part-0000005-0000005.parquet"]
    frame = pd.read_parquet(out)                             # pandas reads the directory as one table
    assert list(frame.columns) == ["run", "g.Gain", "src.Amplitude", "status", "error_code", "error", "y.max"]
    assert frame["g.Gain"].dtype == np.int64 and frame["src.Amplitude"].tolist() == ["k", "[1]", "[1]"]
    traces = pd.read_parquet(store.traces_path(out))
    assert len(traces) == 9 and set(traces["run"]) == {0, 1, 5}
    assert again.frame()["run"].tolist() == [0, 1, 5]
    other = spec.load({"diagram": gains(), "parameters": {"g.Gain": [1, 2]}, "outputs": {"y": ["max"]}})
    with pytest.raises(nc.DiagramError) as info:
        store.Store(other, out)
    assert info.value.code == "output_mismatch"
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "data.csv").write_text("x")
    for taken in ("file", "dir"):
        with pytest.raises(nc.DiagramError) as info:
            store.Store(other, tmp_path / taken)
        assert info.value.code == "output_exists"
    (tmp_path / "fresh.traces").mkdir()                      # someone else's files where traces would go
    (tmp_path / "fresh.traces" / "part-0000000-0000001.parquet").write_text("x")
    with pytest.raises(nc.DiagramError) as info:
        store.Store(loaded, tmp_path / "fresh.parquet")
    assert info.value.code == "output_exists" and "fresh.traces" in info.value.message
