"""Whole sweeps through the batch engine (``engine.batch.run_batch``): batched rows as the
single runs' within the solver's tolerance, a failing variant, an old output without the
``batched`` column resumed, the Dask task sizes, the command line's ``--no-batched``."""
from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import nflow_compat as nc
from nflow_compat import cli
from nflow_compat.diagram import Limits
from nflow_compat.sweeps import cluster, spec, store, worker
from tests.sweeps.sweep_specs import MASS

EVENTS = ["count", "mode", "event_time(stop1, forward)", "event_count(stop1, forward)"]
REDUCTIONS = {"stop1.v": ["max", "final", "mean", "first_rising(0)", "crossings(0.1)"], "stop1.s": ["final", "rms"]}


def mass_sweep(values, **extra) -> dict:
    return dict({"diagram": copy.deepcopy(MASS), "parameters": {"stop1.F_Coulomb": list(values)},
                 "outputs": REDUCTIONS, "events": EVENTS}, **extra)


def assert_rows_match(batched: pd.DataFrame, single: pd.DataFrame) -> None:
    """Every value of ``batched`` within ode45's tolerance (the diagram's relTol, absTol) of
    ``single``'s; counts and the other columns equal."""
    assert batched["run"].tolist() == single["run"].tolist()
    for column in single.columns.drop("batched"):
        if single[column].dtype == np.float64:
            np.testing.assert_allclose(batched[column], single[column], rtol=MASS["relTol"], atol=MASS["absTol"],
                                       err_msg=column)
        else:
            pd.testing.assert_series_equal(batched[column], single[column])


def test_batched_rows_equal_the_single_runs_rows():
    values = np.linspace(1.0, 9.0, 12)
    batched = nc.sweep(mass_sweep(values), executor="inline")
    single = nc.sweep(mass_sweep(values), executor="inline", batched=False)
    assert batched["batched"].dtype == pd.BooleanDtype()
    assert batched["batched"].tolist() == [True] * 12 and single["batched"].tolist() == [False] * 12
    assert (single["status"] == "ok").all() and (single["events.event_count(stop1, forward)"] >= 1).all()
    assert single["events.event_time(stop1, forward)"].between(0.2, 1.0).all()      # breakaways, all located
    assert_rows_match(batched, single)


def test_a_failing_variant_is_its_error_row_and_the_others_run_batched():
    values = {"stop1.s0": [0.0, 30.0, 0.0, 0.0, 0.0], "stop1.m": [1.0, 1.0, -1.0, 1.0, 2.0]}
    frame = nc.sweep(mass_sweep([5.0] * 5, parameters=values, combine="zip"), executor="inline")
    assert frame["status"].tolist() == ["ok", "error", "error", "ok", "ok"]
    assert frame["error_code"].fillna("").tolist() == ["", "stop_violated_at_init", "param_range", "", ""]
    assert frame["batched"].tolist() == [True, pd.NA, pd.NA, True, True]
    assert frame["stop1.v.max"].isna().tolist() == [False, True, True, False, False]
    single = nc.sweep(mass_sweep([5.0] * 5, parameters=values, combine="zip"), executor="inline", batched=False)
    assert_rows_match(frame, single)


def test_an_output_without_the_batched_column_resumes_with_nulls(tmp_path):
    values = np.linspace(1.0, 9.0, 6)
    out = tmp_path / "r.parquet"
    loaded = spec.load(mass_sweep(values))
    old = [(run_id, row, traces) for run_id, row, traces in
           worker.run_batch(worker.batches(loaded, [0, 1], 2, Limits(), False)[0])]
    store.Store(loaded, out).add(old)
    [part] = out.glob("part-*.parquet")
    pq.write_table(pq.read_table(part).drop_columns(["batched"]), part)     # as a version before the column wrote it
    frame = nc.sweep(mass_sweep(values), output=out, executor="inline")
    assert frame["run"].tolist() == list(range(6)) and (frame["status"] == "ok").all()
    assert frame["batched"].isna().tolist() == [True, True, False, False, False, False]
    assert frame["batched"][2:].tolist() == [True] * 4
    assert [p.name for p in out.glob("*.parquet")] == ["data-0000000.parquet"]
    assert pq.read_table(out).column("batched").null_count == 2         # compacted with the column
    assert_rows_match(frame, nc.sweep(mass_sweep(values), executor="inline", batched=False))


@pytest.mark.parametrize("todo, workers, batched, size", [
    (100, 2, False, 7), (10_000, 2, False, 64),      # one by one: about 8 per worker, at most 64 runs
    (100, 2, True, 25), (2000, 2, True, 500), (5000, 2, True, 512), (3, 2, True, 1)])   # batched: 2, at most 512
def test_dask_batch_sizes(todo, workers, batched, size):
    assert cluster._batch_size(todo, workers, batched) == size


def test_cli_no_batched(tmp_path, capsys):
    import json
    (tmp_path / "spec.json").write_text(json.dumps(mass_sweep([1.0, 2.0, 3.0])))
    for flag, expected in (("--no-batched", False), ("--batched", True)):
        out = tmp_path / f"r{flag}.parquet"
        assert cli.main(["sweep", str(tmp_path / "spec.json"), "-o", str(out), "--executor", "inline", flag,
                         "-q"]) == 0
        assert json.loads(capsys.readouterr().out)["ok"] == 3
        assert pd.read_parquet(out)["batched"].tolist() == [expected] * 3
