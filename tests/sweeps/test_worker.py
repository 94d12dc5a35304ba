"""What a sweep worker does with a batch (nflow_compat.sweeps.worker): the same result as
``simulate``, re-bound parameters (``diagram.with_params``), failing runs as rows."""
from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

import nflow_compat as nc
from nflow_compat.diagram import Limits, with_params
from nflow_compat.engine import batch as batch_engine
from nflow_compat.params import set_pointer
from nflow_compat.sweeps import spec, worker
from tests.sweeps.sweep_specs import MASS, gains, mass_spec
from tests.util import blk, diagram, wire


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
            set_pointer(d, p.pointer, value)
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


# ------------------------------------------------------------------- batched runs (engine.batch)

STICK_SLIP_EVENTS = ["count", "mode", "event_time(stop1, forward)", "event_time(stop1, backward, -1)",
                     "event_time(stop1, stuck)", "event_count(stop1, stuck)"]


def _stick_slip(values):
    """The mass over 3 s (it breaks away, sticks and slips again) at Coulomb forces ``values``."""
    d = copy.deepcopy(MASS)
    d["duration"] = 3.0
    return spec.load(dict(diagram=d, parameters={"stop1.F_Coulomb": values}, events=STICK_SLIP_EVENTS,
                          outputs={"stop1.v": ["max", "final", "mean"], "stop1.s": ["final"]}))


def _compare_rows(batched: dict, single: dict, rel_tol: float):
    """Counts equal, located event times within 1e-6 relative, values within ``rel_tol``
    of the single run's scale."""
    for column, value in single.items():
        if column in ("batched",) or value is None or isinstance(value, str):
            continue
        if isinstance(value, int):
            assert batched[column] == value, column
        elif column.startswith("events."):
            assert batched[column] == pytest.approx(value, rel=1e-6, nan_ok=True), column
        else:
            assert batched[column] == pytest.approx(value, rel=rel_tol, abs=rel_tol), column


def test_batched_runs_equal_single_runs_events_included():
    loaded = _stick_slip([1.0, 4.0, 7.0, 8.5, 10.0])     # from sliding on to sticking on the way back
    batched = worker.run_batch(_batch(loaded))
    single = worker.run_batch(dataclasses.replace(_batch(loaded), batched=False))
    assert [row["batched"] for _, row, _ in batched] == [True] * 5
    assert [row["batched"] for _, row, _ in single] == [False] * 5
    for (run, got, _), (same_run, expected, _) in zip(batched, single):
        assert run == same_run and got["status"] == expected["status"] == "ok"
        _compare_rows(got, expected, rel_tol=10 * MASS["relTol"])
    assert [row["events.event_count(stop1, stuck)"] for _, row, _ in single] == [0, 0, 1, 1, 1]


def test_runs_that_parse_the_diagram_again_run_one_by_one():
    loaded = spec.load({"diagram": gains(), "parameters": {"variables.k": [0.5, 1.0, 2.0]}, "outputs": {"y": ["max"]}})
    rows = [row for _, row, _ in worker.run_batch(_batch(loaded))]
    assert [row["batched"] for row in rows] == [False] * 3
    assert [row["y.max"] for row in rows] == pytest.approx([1.0, 2.0, 4.0], rel=1e-3)


def test_a_failing_batch_engine_falls_back_to_single_runs_with_a_warning(monkeypatch):
    loaded = _stick_slip([1.0, 3.0, 5.0])
    expected = worker.run_batch(dataclasses.replace(_batch(loaded), batched=False))

    def broken(*args, **kwargs):
        raise IndexError("a bug")
    monkeypatch.setattr(batch_engine, "run_batch", broken)
    with pytest.warns(RuntimeWarning, match="the batch engine failed on 3 runs .IndexError: a bug."):
        got = worker.run_batch(_batch(loaded))
    assert got == expected
