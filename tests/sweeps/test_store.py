"""The sweep results store (nflow_compat.sweeps.store): batches written, resumed, and
another sweep's results refused."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import nflow_compat as nc
from nflow_compat.sweeps import spec, store
from tests.sweeps.sweep_specs import gains


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
    assert list(frame.columns) == ["run", "g.Gain", "src.Amplitude", "status", "error_code", "error", "batched",
                                   "y.max"]
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


def test_a_finished_sweep_is_one_file_and_an_interrupted_compaction_keeps_each_run_once(tmp_path):
    loaded = spec.load({"diagram": gains(), "parameters": {"g.Gain": [1, 2, 3, 4]},
                        "outputs": {"y": ["max", "trace"]}})
    out = tmp_path / "r.parquet"
    kept = store.Store(loaded, out)
    for runs in ([0], [1, 2], [3]):
        kept.add(_finished(runs))
    # a compaction cut short: its data file written, the batch files still there
    kept.finish()
    for name in ("part-0000000-0000000.parquet", "part-0000003-0000003.parquet"):
        kept.add(_finished([int(name.split("-")[1])]))
    again = store.Store(loaded, out)
    assert again.done == {0, 1, 2, 3}
    assert again.frame()["run"].tolist() == [0, 1, 2, 3]           # each run once
    again.finish()
    assert [p.name for p in out.glob("*.parquet")] == ["data-0000001.parquet"]
    assert [p.name for p in store.traces_path(out).glob("*.parquet")] == ["data-0000001.parquet"]
    assert pd.read_parquet(out)["run"].tolist() == [0, 1, 2, 3]
    assert len(pd.read_parquet(store.traces_path(out))) == 4 * 3
    assert store.Store(loaded, out).done == {0, 1, 2, 3}


def test_compaction_splits_past_the_file_size(tmp_path, monkeypatch):
    loaded = spec.load({"diagram": gains(), "parameters": {"g.Gain": list(range(8))}, "outputs": {"y": ["max"]}})
    out = tmp_path / "r.parquet"
    kept = store.Store(loaded, out)
    for run in range(8):
        kept.add(_finished([run], traces=False))
    table = pd.read_parquet(out)
    monkeypatch.setattr(store, "FILE_BYTES", 1 + table.memory_usage(deep=False).sum() // 4)
    kept.finish()
    files = sorted(p.name for p in out.glob("*.parquet"))
    assert len(files) > 1 and all(name.startswith("data-") for name in files)
    assert pd.read_parquet(out)["run"].tolist() == list(range(8))


def test_counts_are_nullable_integers():
    loaded = spec.load({"diagram": gains(), "parameters": {"g.Gain": [1, 2]},
                        "outputs": {"y": ["max", "crossings(0)"]}, "events": ["count"]})
    kept = store.Store(loaded)
    kept.add([(0, {"status": "ok", "error_code": None, "error": None, "batched": True, "y.max": 1.0,
                   "y.crossings(0)": 3, "events.count": 2}, []),
              (1, {"status": "error", "error_code": "x", "error": "failed"}, [])])
    frame = kept.frame()
    for column in ("y.crossings(0)", "events.count", "run", "g.Gain"):
        assert frame[column].dtype == pd.Int64Dtype(), column
    assert frame["events.count"].tolist()[0] == 2 and frame["events.count"].isna().tolist() == [False, True]
    assert frame["y.max"].dtype == np.float64
    assert frame["batched"].dtype == pd.BooleanDtype() and frame["batched"].tolist() == [True, pd.NA]

