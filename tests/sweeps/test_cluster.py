"""Sweeps on a real Dask cluster (nflow_compat.sweeps.cluster): one LocalCluster of 2 worker processes for the module.

Results equal sequential ``simulate`` runs; a worker killed by its pid mid-sweep loses no
run; an interrupted sweep resumes with only the missing runs; failing runs are rows; the
CLI on an existing scheduler; Ctrl-C on the CLI's own local cluster, then a resume; the
example's breakaway times against their closed form."""
from __future__ import annotations

import copy
import importlib.util
import json
import math
import os
import pty
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings
from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import psutil
import pytest

import nflow_compat as nc
from nflow_compat import cli
from nflow_compat.sweeps import Interrupted, cluster, store
from tests.util import read_until

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "sweep_coulomb"
MASS = json.loads((EXAMPLE / "diagram.json").read_text())
MASS["duration"] = 1.0                     # breakaway happens at 0.26 .. 0.6 s


@pytest.fixture(scope="module")
def client():
    with cluster.local_client(2) as c:
        c.wait_for_workers(2)
        yield c


def mass_spec(values, **extra):
    return dict({"diagram": copy.deepcopy(MASS), "parameters": {"stop1.F_Coulomb": values},
                 "outputs": {"stop1.v": ["max", "final", "first_rising(0)"], "stop1.s": ["trace"]},
                 "events": ["count", "mode"]}, **extra)


def sequential(values) -> dict:
    """F_Coulomb -> the simulate result of the mass with it."""
    out = {}
    for f in values:
        d = copy.deepcopy(MASS)
        d["blocks"][2]["params"]["F_Coulomb"] = f
        out[f] = nc.simulate(d)
    return out


def first_rising(t, v):
    """The first k with v[k] <= 0 < v[k+1], interpolated (a loop, independent of reductions.py)."""
    for k in range(len(v) - 1):
        if v[k] <= 0 < v[k + 1]:
            return t[k] + (0 - v[k]) / (v[k + 1] - v[k]) * (t[k + 1] - t[k])
    return math.nan


def check_against(frame: pd.DataFrame, expected: dict) -> None:
    """Every row equals what ``simulate`` gave for its F_Coulomb."""
    assert frame["run"].tolist() == list(range(len(expected)))
    for _, row in frame.iterrows():
        result = expected[row["stop1.F_Coulomb"]]
        t = result["time"]
        v = [r[0] for r in result["workspace"]["stop1.v"]]
        assert row["status"] == "ok" and pd.isna(row["error_code"])
        assert (row["stop1.v.max"], row["stop1.v.final"]) == (max(v), v[-1])
        assert row["stop1.v.first_rising(0)"] == pytest.approx(first_rising(t, v), abs=1e-15)
        assert row["events.count"] == len(result["events"])
        assert row["events.mode"] == sum(e["kind"] == "mode" for e in result["events"])


def test_the_local_cluster_listens_on_loopback_only(client):
    pids = [os.getpid(), *client.run(os.getpid).values()]   # scheduler and nannies here, workers apart
    listening = []
    for pid in pids:
        proc = psutil.Process(pid)
        connections = getattr(proc, "net_connections", None) or proc.connections
        listening += [c.laddr.ip for c in connections(kind="inet") if c.status == psutil.CONN_LISTEN]
    assert len(listening) >= 1 + 2 * 2 and set(listening) == {"127.0.0.1"}


def test_without_a_dashboard_none_is_served_and_a_second_cluster_takes_no_port_of_the_first(client):
    port = client.scheduler_info()["services"]["dashboard"]     # the scheduler's HTTP routes
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30) as reply:
        assert reply.status == 200
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=30)
    assert missing.value.code == 404
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # Dask warns when a port it wants is taken
        with cluster.local_client(1) as second:
            assert second.scheduler_info()["services"]["dashboard"] != port


def test_sweep_equals_sequential_simulate_runs(client):
    values = [1.0, 2.5, 4.0, 6.0]
    frame = nc.sweep(mass_spec(values), client, batch_size=1)
    expected = sequential(values)
    check_against(frame, expected)
    traces = frame.attrs["traces"]
    for run_id, f in enumerate(values):
        s = traces[traces["run"] == run_id].sort_values("sample")
        assert s["value"].tolist() == [r[0] for r in expected[f]["workspace"]["stop1.s"]]
        assert s["time"].tolist() == expected[f]["time"]


def test_batched_on_the_cluster_equals_single_runs(client):
    """Tasks of many runs go to the batch engine on the workers: rows say so, and equal the
    single runs within the solver's tolerance, the events' counts and times included."""
    values = [1.0, 2.5, 4.0, 5.5, 7.0, 8.5, 10.0, 3.0]
    batched = nc.sweep(mass_spec(values, events=["count", "mode", "event_time(stop1, forward)"]), client)
    single = nc.sweep(mass_spec(values, events=["count", "mode", "event_time(stop1, forward)"]), client,
                      batched=False)
    assert batched["batched"].tolist() == [True] * len(values) and single["batched"].tolist() == [False] * len(values)
    for column in ("events.count", "events.mode"):
        assert batched[column].tolist() == single[column].tolist()
    tol = 10 * MASS["relTol"]
    for column in ("stop1.v.max", "stop1.v.final", "stop1.v.first_rising(0)", "events.event_time(stop1, forward)"):
        np.testing.assert_allclose(batched[column], single[column], rtol=tol, atol=tol, err_msg=column)
    check_against(single, sequential(values))


def test_a_killed_worker_loses_no_run(client):
    values = [1.0 + 0.5 * k for k in range(12)]
    victim = sorted(client.run(os.getpid).values())[0]
    killed = []

    def progress(done, total):
        if done and not killed:   # both workers are busy with the next batches now
            os.kill(victim, signal.SIGKILL)
            killed.append(done)

    scheduler = client.cluster.scheduler                # in this process: its transitions can be read
    started = time.time()
    frame = nc.sweep(mass_spec(values), client, batch_size=1, progress=progress)
    assert killed and killed[0] < len(values)
    # (key, start, finish, recommendations, stimulus id, timestamp)
    retried = [t for t in scheduler.transition_log if t[5] >= started and t[1:3] == ("processing", "released")
               and str(t[4]).startswith("handle-worker-cleanup")]
    assert retried                                      # the dead worker had batches: they ran again elsewhere
    assert not frame["run"].duplicated().any()
    check_against(frame, sequential(values))
    client.wait_for_workers(2, timeout=60)          # the nanny restarted it, as a new process
    assert victim not in client.run(os.getpid).values()


def test_resume_runs_only_the_missing_runs(client, tmp_path):
    values = [1.0 + k for k in range(8)]
    out = tmp_path / "r.parquet"

    def stop_after_three(done, total):
        if done >= 3:
            raise KeyboardInterrupt          # as Ctrl-C would, between batches

    with pytest.raises(Interrupted) as info:
        nc.sweep(mass_spec(values), client, output=out, batch_size=1, progress=stop_after_three)
    kept = set(pd.read_parquet(out)["run"])
    assert info.value.done == len(kept) and 3 <= len(kept) < len(values) and info.value.total == len(values)
    assert {int(p.name.split("-")[1]) for p in out.glob("part-*.parquet")} == kept   # a batch file per run
    ran = []
    frame = nc.sweep(mass_spec(values), client, output=out, batch_size=1,
                     progress=lambda done, total: ran.append(done))
    assert ran[0] == len(kept) and ran[-1] == len(values)   # it starts from what was kept ...
    assert len(ran) == 1 + len(values) - len(kept)          # ... and runs each missing run once
    check_against(frame, sequential(values))
    # the finished sweep is one file, the batch files gone; every run once, in the traces too
    assert [p.name for p in out.glob("*.parquet")] == ["data-0000000.parquet"]
    traces = store.traces_path(out)
    assert [p.name for p in traces.glob("*.parquet")] == ["data-0000000.parquet"]
    assert len(pd.read_parquet(traces)) == len(values) * 1001


def test_failing_runs_are_recorded_and_the_sweep_goes_on(client):
    frame = nc.sweep(dict(mass_spec([5.0]), parameters={"stop1.s0": [0.0, 30.0, 1.0], "stop1.m": [1.0, 1.0, -1.0]},
                          combine="zip"), client)
    assert frame["status"].tolist() == ["ok", "error", "error"]
    assert frame["error_code"].fillna("").tolist() == ["", "stop_violated_at_init", "param_range"]
    assert frame.loc[0, "stop1.v.max"] > 0 and np.isnan(frame.loc[1, "stop1.v.max"])


def test_cli_on_a_scheduler_writes_the_table(client, tmp_path, capsys, monkeypatch):
    spec_file = tmp_path / "spec.json"
    spec_file.write_bytes(orjson.dumps(dict(mass_spec([2.0]), diagram="mass.json",
                                            parameters={"stop1.s0": [0.0, 0.5, 30.0]})))
    (tmp_path / "mass.json").write_bytes(orjson.dumps(MASS))
    out = tmp_path / "results.parquet"
    code = cli.main(["sweep", str(spec_file), "-o", str(out), "--scheduler", client.scheduler.address, "-q"])
    summary = orjson.loads(capsys.readouterr().out)
    assert code == 0
    assert summary == {"status": "ok", "runs": 3, "ok": 2, "batched": 0, "errors": {"stop_violated_at_init": 1},
                       "output": str(out)}
    frame = pd.read_parquet(out)
    assert frame["stop1.s0"].tolist() == [0.0, 0.5, 30.0] and frame["status"].tolist() == ["ok", "ok", "error"]
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", "1s")
    assert cli.main(["sweep", str(spec_file), "-o", str(tmp_path / "x"), "--scheduler", "tcp://127.0.0.1:9",
                     "-q"]) == 1
    assert orjson.loads(capsys.readouterr().out)["error"]["code"] == "scheduler_unreachable"


def test_example_breakaway_times_follow_the_closed_form(client, tmp_path):
    example = orjson.loads((EXAMPLE / "spec.json").read_bytes())
    assert example["parameters"]["stop1.F_Coulomb"] == {"linspace": [0, 10, 21]}
    example["parameters"]["stop1.F_Coulomb"]["linspace"][2] = 6          # fewer runs, same span
    example["diagram"] = str(EXAMPLE / example["diagram"])
    frame = nc.sweep(example, client, output=tmp_path / "c.parquet")
    assert (frame["status"] == "ok").all() and frame["stop1.F_Coulomb"].tolist() == [0, 2, 4, 6, 8, 10]
    # analytic: stuck until 25*sin(2*pi*0.25*t) = 1.001*(F_Coulomb + F_Stribeck), F_Stribeck = 10; the
    # sweep reports the last 1 ms sample at rest, so it is up to one step early
    closed = np.arcsin(1.001 * (frame["stop1.F_Coulomb"] + 10) / 25) / (2 * math.pi * 0.25)
    early = closed - frame["stop1.v.first_rising(0)"]
    assert ((early >= 0) & (early < 1e-3)).all()
    plotter = importlib.util.spec_from_file_location("plot_breakaway", EXAMPLE / "plot_breakaway.py")
    module = importlib.util.module_from_spec(plotter)
    plotter.loader.exec_module(module)
    assert module.main([str(tmp_path / "c.parquet"), str(tmp_path / "b.png")]) == 0
    assert (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"


def test_ctrl_c_on_the_local_cluster_keeps_finished_batches(client, tmp_path):
    values = [1.0 + 0.05 * k for k in range(120)]     # seconds of work: Ctrl-C comes before the end
    short = dict(mass_spec(values), batch_size=2)
    short["diagram"]["duration"] = 0.5
    (tmp_path / "spec.json").write_bytes(orjson.dumps(short))
    out = tmp_path / "r.parquet"
    master, slave = pty.openpty()
    # a terminal's Ctrl-C: SIGINT to the whole foreground process group (pytest may run with it ignored)
    proc = subprocess.Popen([sys.executable, "-m", "nflow_compat", "sweep", str(tmp_path / "spec.json"), "-o",
                             str(out), "--workers", "2", "--executor", "local"], stdout=subprocess.PIPE, stderr=slave, close_fds=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    os.close(slave)
    try:
        started = re.compile(rb"% [1-9][0-9]*/120 runs")          # the bar counts runs: some are done
        seen = read_until(master, started.search, timeout=120)
        assert started.search(seen), seen
        os.killpg(proc.pid, signal.SIGINT)
        stdout, _ = proc.communicate(timeout=60)
        seen += read_until(master, lambda shown: False, timeout=1)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        os.close(master)
    assert proc.returncode == 130 and stdout == b"", (proc.returncode, stdout, seen)
    assert b"nflow-sim: interrupted; " in seen and b"Traceback" not in seen, seen
    kept = pd.read_parquet(out)
    assert 2 <= len(kept) < len(values) and f"{len(kept)} of 120 runs are saved".encode() in seen
    frame = nc.sweep(tmp_path / "spec.json", client, output=out)
    assert frame["run"].tolist() == list(range(len(values))) and (frame["status"] == "ok").all()
    assert frame.set_index("run").loc[kept["run"], "stop1.v.max"].tolist() == kept["stop1.v.max"].tolist()


def test_progress_true_counts_runs_on_a_tqdm_auto_bar(client, monkeypatch):
    import tqdm.auto

    from nflow_compat import progress
    made = []

    class Bar:          # the class tqdm.auto picks: in Jupyter, the notebook's widget
        def __init__(self, total, unit, **kw):
            self.total, self.unit, self.n, self.closed = total, unit, 0, False
            made.append(self)

        def update(self, k):
            self.n += k

        def close(self):
            self.closed = True
    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)
    monkeypatch.setattr(progress, "DELAY", 0.0)
    frame = nc.sweep(mass_spec([1.0, 2.0, 3.0]), client, batch_size=1, progress=True)
    assert len(frame) == 3 and [(b.unit, b.total, b.n, b.closed) for b in made] == [("runs", 3, 3, True)]
