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
        pd.testing.assert_frame_equal(again, frame)
        assert cluster.kept_client(2, None).scheduler.address == first   # the same cluster
    finally:
        nc.sweeps.close_local_cluster()
    assert not cluster.kept(2, None)
    pd.testing.assert_frame_equal(nc.sweep(spec, executor="inline"), frame)


def test_inline_ctrl_c_keeps_the_runs_done(tmp_path):
    out = tmp_path / "r.parquet"

    def stop_after_two(done, total):
        if done >= 2:
            raise KeyboardInterrupt

    spec = dict(mass_spec(), parameters={"stop1.F_Coulomb": [1, 2, 3, 4, 5]})
    with pytest.raises(Interrupted) as info:
        nc.sweep(spec, output=out, executor="inline", progress=stop_after_two)
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
