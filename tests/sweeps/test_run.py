"""Where a sweep runs (nflow_compat.sweeps.run): in this process or on a local Dask cluster,
chosen from the first runs' time; a local cluster kept for the session; the dashboard."""
from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

import pandas as pd
import pytest

import nflow_compat as nc
from nflow_compat import cli
from nflow_compat.sweeps import Interrupted, run
from tests.sweeps.sweep_specs import gains, mass_spec


def _in_a_fresh_process(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_quick_runs_stay_in_this_process_and_never_import_dask():
    out = _in_a_fresh_process(
        "import json, sys, nflow_compat as nc\n"
        "from tests.sweeps.sweep_specs import gains\n"
        "f = nc.sweep({'diagram': gains(), 'parameters': {'g.Gain': [1, 2, 3, 4, 5]}, 'outputs': {'y': ['max']}})\n"
        "print(json.dumps({'dask': 'distributed' in sys.modules, 'ok': int((f['status'] == 'ok').sum())}))")
    assert out == {"dask": False, "ok": 5}


@pytest.mark.parametrize("seconds, left, workers, kept, pays", [
    (0.01, 20, 2, False, False),       # 0.2 s of work: the cluster's start costs more
    (0.5, 100, 2, False, True),        # 50 s here, ~28 s there
    (0.5, 100, 1, False, False),       # one core: nothing to gain
    (0.02, 100, 2, True, True),        # a kept cluster costs nothing to start
    (0.02, 100, 2, False, False),
    (1.0, 0, 2, True, False),
])
def test_the_cluster_is_chosen_only_when_it_finishes_sooner(seconds, left, workers, kept, pays):
    assert run._cluster_pays(seconds, left, workers, kept) == pays


def test_auto_sends_the_rest_to_a_local_cluster_that_pays_and_keeps_it(monkeypatch):
    """With the cluster's start counted as free, auto sends what is left after the timed
    runs to a local cluster; the next sweep of the session finds it kept."""
    from nflow_compat.sweeps import cluster
    monkeypatch.setattr(run, "CLUSTER_START", 0.0)
    spec = dict(mass_spec(), parameters={"stop1.F_Coulomb": [1, 2, 3, 4, 5, 6, 7, 8]})
    try:
        frame = nc.sweep(spec, workers=2)
        assert (frame["status"] == "ok").all() and frame["run"].tolist() == list(range(8))
        assert cluster.kept(2, None)
        first = cluster.kept_client(2, None).scheduler.address
        again = nc.sweep(spec, executor="local", workers=2)
        # which runs went to the batch engine together depends on where they ran (the
        # timed first run alone); the values agree within the solver's tolerance
        pd.testing.assert_frame_equal(again.drop(columns="batched"), frame.drop(columns="batched"))
        assert cluster.kept_client(2, None).scheduler.address == first   # the same cluster
    finally:
        nc.sweeps.close_local_cluster()
    assert not cluster.kept(2, None)
    pd.testing.assert_frame_equal(nc.sweep(spec, executor="inline").drop(columns="batched"),
                                  frame.drop(columns="batched"))


def test_inline_ctrl_c_keeps_the_runs_done(tmp_path):
    out = tmp_path / "r.parquet"

    def stop_after_two(done, total):
        if done >= 2:
            raise KeyboardInterrupt

    spec = dict(mass_spec(), parameters={"stop1.F_Coulomb": [1, 2, 3, 4, 5]})
    with pytest.raises(Interrupted) as info:
        nc.sweep(spec, output=out, executor="inline", progress=stop_after_two, batched=False)
    assert info.value.done == 2 and set(pd.read_parquet(out)["run"]) == {0, 1}
    frame = nc.sweep(spec, output=out, executor="inline")
    assert frame["run"].tolist() == [0, 1, 2, 3, 4] and (frame["status"] == "ok").all()


def test_the_dashboard_is_served_when_asked(capsys):
    try:
        nc.sweep({"diagram": gains(), "parameters": {"g.Gain": [1, 2]}, "outputs": {"y": ["max"]}},
                 executor="local", workers=2, dashboard="127.0.0.1:0")
        link = capsys.readouterr().err.split("the Dask dashboard is at ")[1].split()[0]
        assert link.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(link.replace("/status", "/health"), timeout=30) as reply:
            assert reply.status == 200
    finally:
        nc.sweeps.close_local_cluster()


def test_a_bad_executor_and_the_cli_option(tmp_path, capsys):
    with pytest.raises(nc.DiagramError) as info:
        nc.sweep(mass_spec(), executor="gpu")
    assert info.value.code == "bad_executor"
    (tmp_path / "spec.json").write_text(json.dumps(mass_spec()))
    assert cli.main(["sweep", str(tmp_path / "spec.json"), "-o", str(tmp_path / "r.parquet"), "--executor",
                     "inline", "-q"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] == 3


def test_in_this_process_runs_go_to_the_batch_engine_in_chunks(monkeypatch):
    """inline: every run batched (a chunk of CHUNK[0], then chunks sized by the time per
    run); auto: the first run alone (it is timed), then batches; batched=False: none. The
    values agree within the solver's tolerance either way."""
    calls = []
    original = run.run_batch

    def counted(batch):
        calls.append(len(batch.runs))
        return original(batch)
    monkeypatch.setattr(run, "run_batch", counted)
    spec = dict(mass_spec(), parameters={"stop1.F_Coulomb": [0.5 * k for k in range(1, 21)]})
    inline = nc.sweep(spec, executor="inline")
    assert calls == [16, 4] and inline["batched"].tolist() == [True] * 20
    calls.clear()
    auto = nc.sweep(spec)
    assert calls == [1, 16, 3] and auto["batched"].tolist() == [False] + [True] * 19
    calls.clear()
    single = nc.sweep(spec, executor="inline", batched=False)
    assert calls == [1] * 20 and single["batched"].tolist() == [False] * 20
    for frame in (inline, auto):
        pd.testing.assert_frame_equal(frame.drop(columns="batched"), single.drop(columns="batched"), rtol=1e-5)


@pytest.mark.parametrize("per_run, batch_size, chunk", [
    (float("inf"), float("inf"), 16),   # nothing measured yet
    (0.5, float("inf"), 16),            # slow runs: the fewest
    (0.02, float("inf"), 100),          # INLINE_STORE_SECONDS' worth
    (0.0001, float("inf"), 256),        # the most
    (0.0001, 50, 50),                   # never more than the spec's batch size
])
def test_the_chunk_in_this_process_takes_about_the_storing_interval(per_run, batch_size, chunk):
    inline = run._Inline.__new__(run._Inline)
    inline.batched, inline.per_run, inline.batch_size = True, per_run, batch_size
    assert inline.chunk() == chunk
    inline.batched = False
    assert inline.chunk() == 1
