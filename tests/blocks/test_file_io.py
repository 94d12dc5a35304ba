"""fileSource / fileSink (issue 4): nflow's handlers, CSV files confined to a base directory."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import given, settings, strategies as st

import nflow_compat as nc
from tests.util import blk, diagram, record, wire


def source_diagram(params, dt=0.1, duration=0.7, **kw):
    return diagram([blk("src", "fileSource", params), record()], [wire("src", "w")], dt=dt, duration=duration, **kw)


def played(params, base_dir=None, **kw):
    res = nc.simulate(source_diagram(params, **kw), base_dir=base_dir)
    return np.asarray(res["workspace"]["y"], dtype=float), res


def sink_diagram(src, name="out.csv", sink_id="fs", duration=0.3, **params):
    return diagram([dict(src, id="s"), blk(sink_id, "fileSink", FileName=name, **params)],
                   [wire("s", sink_id)], duration=duration)


def error(call):
    with pytest.raises(nc.NFlowError) as info:
        call()
    return info.value


# ----------------------------------------------------------------------------- fileSource: nflow's injected arrays

def test_injected_arrays_piecewise_constant():
    # times 0, 0.25, 0.5 -> 1, 2, 3; the value at t is the last sample with time <= t
    y, _ = played({"times": [0, 0.25, 0.5], "values": [1, 2, 3]})
    assert y[:, 0].tolist() == [1, 1, 1, 2, 2, 3, 3, 3]


def test_before_the_first_time_the_first_value():
    y, _ = played({"times": [0.25, 0.45], "values": [5, 7]}, duration=0.5)
    assert y[:, 0].tolist() == [5, 5, 5, 5, 5, 7]        # idx clamped to 0 before t = 0.25


def test_repeated_time_takes_the_newest_value():
    y, _ = played({"times": [0, 0.2, 0.2, 0.4], "values": [1, 2, 3, 4]}, duration=0.4)
    assert y[:, 0].tolist() == [1, 1, 3, 3, 4]


def test_a_sample_without_a_value_reads_zero_and_non_numbers_read_zero():
    y, _ = played({"times": [0, 0.1, 0.2, 0.3], "values": [1, "x", None]}, duration=0.4)
    assert y[:, 0].tolist() == [1, 0, 0, 0, 0]


def test_injected_width_sample_major():
    y, _ = played({"times": [0, 0.2], "values": [1, 10, 2, 20], "width": 2}, duration=0.3)
    assert y.tolist() == [[1, 10], [1, 10], [2, 20], [2, 20]]


def test_jsonencode_scalars_as_bare_numbers():
    y, _ = played({"times": 0, "values": 4}, duration=0.2)
    assert y[:, 0].tolist() == [4, 4, 4]


def test_no_samples_output_zero_with_a_warning():
    y, res = played({}, duration=0.2)
    assert y[:, 0].tolist() == [0, 0, 0] and any("no samples" in w for w in res["warnings"])


@pytest.mark.parametrize("times", [[0.0, float("nan")], [0.5, 0.1], [0.0, float("inf")]])
def test_bad_times_are_errors(times):
    err = error(lambda: nc.simulate(source_diagram({"times": times, "values": [1, 2]})))
    assert isinstance(err, nc.DiagramError) and err.code == "filesource_bad_time" and err.block == "src"


def test_value_imag_is_ignored_with_a_warning():
    y, res = played({"times": [0], "values": [3], "valuesImag": [1]}, duration=0.1)
    assert y[:, 0].tolist() == [3, 3] and any("valuesImag" in w for w in res["warnings"])


@settings(max_examples=60, deadline=None)
@given(times=st.lists(st.floats(0, 2, allow_nan=False), min_size=1, max_size=8).map(sorted),
       data=st.data())
def test_playback_law(times, data):
    values = data.draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=len(times), max_size=len(times)))
    y, res = played({"times": times, "values": values}, dt=0.1, duration=2.0)
    for k, t in enumerate(res["time"]):
        idx = max(0, max((i for i, ti in enumerate(times) if ti <= t), default=0))
        assert y[k, 0] == values[idx]


# ----------------------------------------------------------------------------- fileSource: a CSV file

def test_csv_file_read_from_the_base_directory(tmp_path):
    (tmp_path / "in.csv").write_text("t,x\n0,1\n0.25,2\n0.5,3\n")
    y, _ = played({"FileName": "in.csv"}, base_dir=tmp_path)
    assert y[:, 0].tolist() == [1, 1, 1, 2, 2, 3, 3, 3]


def test_csv_comments_blanks_spaces_and_vectors(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "v.csv").write_text("# a comment\n\n0 1 -1\n0.15\t2\t-2\n\n0.3 3 -3\n")
    y, _ = played({"FileName": "data/v.csv"}, base_dir=tmp_path, duration=0.4)
    assert y.tolist() == [[1, -1], [1, -1], [2, -2], [3, -3], [3, -3]]


def test_inspector_name_path_when_file_name_is_empty(tmp_path):
    (tmp_path / "in.csv").write_text("0,7\n")
    (tmp_path / "other.csv").write_text("0,8\n")
    y, _ = played({"path": "in.csv"}, base_dir=tmp_path, duration=0.1)
    assert y[:, 0].tolist() == [7, 7]
    y, _ = played({"FileName": "", "path": "in.csv"}, base_dir=tmp_path, duration=0.1)
    assert y[:, 0].tolist() == [7, 7]
    y, _ = played({"FileName": "other.csv", "path": "in.csv"}, base_dir=tmp_path, duration=0.1)
    assert y[:, 0].tolist() == [8, 8]
    err = error(lambda: played({"path": "../in.csv"}, base_dir=tmp_path))
    assert err.code == "path_outside_base" and err.param == "path"


def test_sink_ignores_path_as_nflows_handler_does(tmp_path):
    res = nc.simulate(sink_diagram(blk("s", "constant", Value=1), "", path="elsewhere.csv", duration=0.1),
                      base_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["output.csv"]
    assert any("'path' is not read" in w for w in res["warnings"])


def test_injected_arrays_win_over_the_file(tmp_path):
    y, _ = played({"FileName": "missing.csv", "times": [0], "values": [9]}, base_dir=tmp_path, duration=0.1)
    assert y[:, 0].tolist() == [9, 9]


@pytest.mark.parametrize("text, code, line", [
    ("t,x\n0,1\n0.1,oops\n", "filesource_bad_csv", "line 3"),
    ("0,1\n0.1,2,3\n", "filesource_bad_csv", "line 2"),
    ("0\n", "filesource_bad_csv", "line 1"),
    ("0,1\n1_0,2\n", "filesource_bad_csv", "line 2"),
    ("0,1\n-0.5,2\n", "filesource_bad_time", ""),
    ("0,1\ninf,2\n", "filesource_bad_time", ""),
])
def test_bad_csv(tmp_path, text, code, line):
    (tmp_path / "in.csv").write_text(text)
    err = error(lambda: played({"FileName": "in.csv"}, base_dir=tmp_path))
    assert err.code == code and line in err.message and err.block == "src"


def test_missing_file(tmp_path):
    err = error(lambda: played({"FileName": "nope.csv"}, base_dir=tmp_path))
    assert isinstance(err, nc.DiagramError) and err.code == "file_unreadable"


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_not_a_regular_file_never_hangs(tmp_path, kind):
    if kind == "fifo":
        os.mkfifo(tmp_path / "in.csv")          # opening it for reading would block a plain open()
    else:
        (tmp_path / "in.csv").mkdir()
    err = error(lambda: played({"FileName": "in.csv"}, base_dir=tmp_path))
    assert err.code == "file_unreadable"


def test_file_over_the_size_limit(tmp_path):
    (tmp_path / "in.csv").write_text("0,1\n" * 100)
    err = error(lambda: nc.simulate(source_diagram({"FileName": "in.csv"}), base_dir=tmp_path,
                                    limits=nc.Limits(max_input_bytes=50)))
    assert err.code == "file_too_large"


def test_file_wider_than_the_width_limit(tmp_path):
    (tmp_path / "in.csv").write_text("0," + ",".join(["1"] * 20) + "\n")
    err = error(lambda: nc.simulate(source_diagram({"FileName": "in.csv"}), base_dir=tmp_path,
                                    limits=nc.Limits(max_width=10)))
    assert err.code == "too_wide"


def test_injected_width_over_the_limit_fails_before_allocating():
    err = error(lambda: played({"times": [0], "values": [1], "width": 1e12}))
    assert err.code == "too_wide" and err.block == "src"


def test_without_a_base_directory_no_file_is_read(tmp_path):
    (tmp_path / "in.csv").write_text("0,1\n")
    err = error(lambda: played({"FileName": str(tmp_path / "in.csv")}))
    assert isinstance(err, nc.DiagramError) and err.code == "file_access_disabled"


# ----------------------------------------------------------------------------- confinement

@pytest.fixture
def jail(tmp_path):
    """base/ (allowed) and outside/secret.csv next to it."""
    base, outside = tmp_path / "base", tmp_path / "outside"
    base.mkdir()
    outside.mkdir()
    (outside / "secret.csv").write_text("0,42\n")
    (base / "ok.csv").write_text("0,1\n")
    return base, outside


@pytest.mark.parametrize("name", ["../outside/secret.csv", "sub/../../outside/secret.csv", "..", ".",
                                  "ABSOLUTE"])
def test_escapes_are_refused(jail, name):
    base, outside = jail
    (base / "sub").mkdir(exist_ok=True)
    if name == "ABSOLUTE":
        name = str(outside / "secret.csv")
    err = error(lambda: played({"FileName": name}, base_dir=base))
    assert isinstance(err, nc.DiagramError) and err.code == "path_outside_base"
    assert err.block == "src" and err.path == "/blocks/0/params/FileName"


def test_symlink_out_of_the_base_is_refused(jail):
    base, outside = jail
    os.symlink(outside / "secret.csv", base / "link.csv")
    os.symlink(outside, base / "linkdir")
    for name in ("link.csv", "linkdir/secret.csv"):
        err = error(lambda: played({"FileName": name}, base_dir=base))
        assert err.code == "path_outside_base"


def test_symlink_inside_the_base_and_inner_dotdot_are_fine(jail):
    base, _ = jail
    (base / "sub").mkdir()
    os.symlink(base / "ok.csv", base / "sub" / "alias.csv")
    for name in ("sub/alias.csv", "sub/../ok.csv", "./ok.csv"):
        y, _ = played({"FileName": name}, base_dir=base, duration=0.1)
        assert y[:, 0].tolist() == [1, 1]


def test_a_symlinked_base_directory_is_its_target(jail, tmp_path):
    base, _ = jail
    os.symlink(base, tmp_path / "alias")
    y, _ = played({"FileName": "ok.csv"}, base_dir=tmp_path / "alias", duration=0.1)
    assert y[:, 0].tolist() == [1, 1]


def test_missing_base_directory(tmp_path):
    err = error(lambda: played({"FileName": "x.csv"}, base_dir=tmp_path / "nope"))
    assert err.code == "bad_base_dir"


@pytest.mark.parametrize("name", ["../escape.csv", "ABSOLUTE", "linkdir/x.csv", "link.csv"])
def test_sink_escapes_are_refused_and_nothing_is_written(jail, name):
    base, outside = jail
    os.symlink(outside, base / "linkdir")
    os.symlink(outside / "secret.csv", base / "link.csv")
    if name == "ABSOLUTE":
        name = str(outside / "x.csv")
    err = error(lambda: nc.simulate(sink_diagram(blk("s", "constant", Value=1), name), base_dir=base))
    assert err.code == "path_outside_base" and err.block == "fs"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.csv"]
    assert (outside / "secret.csv").read_text() == "0,42\n"
    assert not (base.parent / "escape.csv").exists()


# ----------------------------------------------------------------------------- fileSink

def test_sink_writes_nflows_csv(tmp_path):
    res = nc.simulate(sink_diagram(blk("s", "ramp", slope=2)), base_dir=tmp_path)
    assert (tmp_path / "out.csv").read_text() == "t,fs\n0,0\n0.1,0.2\n0.2,0.4\n0.3,0.6\n"
    assert res["files"] == {"fs": {"file": "out.csv", "columns": ["t", "fs"], "rows": 4, "written": True}}
    assert res["warnings"] == []


def test_sink_vector_header_and_15_significant_digits(tmp_path):
    nc.simulate(sink_diagram(blk("s", "constant", Value=[1 / 3, -2e-20, 1e21]), duration=0.1), base_dir=tmp_path)
    assert (tmp_path / "out.csv").read_text() == \
        "t,fs_0,fs_1,fs_2\n0,0.333333333333333,-2e-20,1e+21\n0.1,0.333333333333333,-2e-20,1e+21\n"


def test_sink_non_finite_values(tmp_path):
    nc.simulate(sink_diagram(blk("s", "constant", Value=[float("inf"), float("-inf")]), duration=0.1), base_dir=tmp_path)
    assert (tmp_path / "out.csv").read_text().splitlines()[1] == "0,inf,-inf"


def test_sink_unconnected_input_writes_zeros(tmp_path):
    d = diagram([blk("fs", "fileSink", FileName="z.csv")], [], duration=0.1)
    nc.simulate(d, base_dir=tmp_path)
    assert (tmp_path / "z.csv").read_text() == "t,fs\n0,0\n0.1,0\n"


def test_sink_file_name_fallbacks(tmp_path):
    d = diagram([blk("c", "constant", Value=1), blk("a", "fileSink", FileName="", Filename="alt.csv"),
                 blk("b", "fileSink", FileName="")], [wire("c", "a"), wire("c", "b")], duration=0.1)
    res = nc.simulate(d, base_dir=tmp_path)
    assert (tmp_path / "alt.csv").read_text() == "t,a\n0,1\n0.1,1\n"
    assert (tmp_path / "output.csv").read_text() == "t,b\n0,1\n0.1,1\n"
    assert res["files"]["b"]["file"] == "output.csv"


def test_sink_stops_with_the_run(tmp_path):
    d = diagram([blk("s", "step", Time=0.25), blk("stop", "stopSimulation"), blk("fs", "fileSink")],
                [wire("s", "stop"), wire("s", "fs")], duration=1.0)
    nc.simulate(d, base_dir=tmp_path)
    assert (tmp_path / "output.csv").read_text().splitlines()[-1] == "0.3,1"


def test_sink_writes_nothing_when_the_run_fails(tmp_path):
    (tmp_path / "out.csv").write_text("old contents\n")
    d = diagram([blk("c", "constant", Value="inf"), blk("i", "integrator"), blk("fs", "fileSink", FileName="out.csv"),
                 blk("fs2", "fileSink", FileName="new.csv")],
                [wire("c", "i"), wire("i", "fs"), wire("i", "fs2")], duration=1.0, solver="ode45")
    err = error(lambda: nc.simulate(d, base_dir=tmp_path))
    assert err.code == "non_finite_state"
    assert (tmp_path / "out.csv").read_text() == "old contents\n"     # not truncated, not partial
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]  # no new file, no temporary left


def test_sink_without_a_base_directory_writes_nothing_and_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = nc.simulate(sink_diagram(blk("s", "constant", Value=1)))
    assert list(tmp_path.iterdir()) == []
    assert res["files"]["fs"]["written"] is False and any("not written" in w for w in res["warnings"])


def test_sink_unwritable_directory_is_a_warning(tmp_path):
    res = nc.simulate(sink_diagram(blk("s", "constant", Value=1), "no/such/dir.csv"), base_dir=tmp_path)
    assert res["status"] == "ok" and res["files"]["fs"]["written"] is False
    assert any("cannot write" in w for w in res["warnings"])


def test_sink_header_quotes_an_id_with_a_comma(tmp_path):
    nc.simulate(sink_diagram(blk("s", "constant", Value=1), sink_id='a,"b"', duration=0.1), base_dir=tmp_path)
    assert (tmp_path / "out.csv").read_text().splitlines()[0] == 't,"a,""b"""'


def test_sink_to_source_round_trip(tmp_path):
    nc.simulate(sink_diagram(blk("s", "sine", Amplitude=2, Frequency=1), duration=1.0), base_dir=tmp_path)
    y, res = played({"FileName": "out.csv"}, base_dir=tmp_path, duration=1.0)
    expected = 2 * np.sin(2 * np.pi * np.asarray(res["time"]))
    assert np.allclose(y[:, 0], expected, rtol=0, atol=1e-14)


def test_plan_run_twice_rewrites_the_file(tmp_path):
    plan = nc.compile_plan(sink_diagram(blk("s", "ramp", slope=1)), base_dir=tmp_path)
    plan.run()
    first = (tmp_path / "out.csv").read_text()
    plan.run()
    assert (tmp_path / "out.csv").read_text() == first


# ----------------------------------------------------------------------------- the CLI's base directory

def _cli(args, cwd, stdin=None):
    return subprocess.run([sys.executable, "-m", "nflow_compat", *args], cwd=cwd, input=stdin,
                          capture_output=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(Path.cwd())))


def _io_diagram():
    return diagram([blk("src", "fileSource", FileName="in.csv"), blk("fs", "fileSink", FileName="out.csv"),
                    record()], [wire("src", "fs"), wire("src", "w")], duration=0.3)


def test_run_uses_the_diagrams_directory(tmp_path):
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "d.json").write_bytes(orjson.dumps(_io_diagram()))
    (project / "in.csv").write_text("0,5\n0.2,6\n")
    out = _cli(["run", str(project / "d.json")], cwd=elsewhere)
    assert out.returncode == 0, out.stderr
    assert orjson.loads(out.stdout)["workspace"]["y"] == [[5.0], [5.0], [6.0], [6.0]]
    assert (project / "out.csv").read_text() == "t,fs\n0,5\n0.1,5\n0.2,6\n0.3,6\n"
    assert list(elsewhere.iterdir()) == []


def test_pipe_uses_the_current_directory(tmp_path):
    (tmp_path / "in.csv").write_text("0,1\n")
    out = _cli([], cwd=tmp_path, stdin=orjson.dumps(_io_diagram()))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "out.csv").read_text().startswith("t,fs\n0,1\n")


def test_base_dir_option(tmp_path):
    data, cwd = tmp_path / "data", tmp_path / "cwd"
    data.mkdir()
    cwd.mkdir()
    (data / "in.csv").write_text("0,3\n")
    out = _cli(["--base-dir", str(data)], cwd=cwd, stdin=orjson.dumps(_io_diagram()))
    assert out.returncode == 0, out.stderr
    assert (data / "out.csv").read_text() == "t,fs\n0,3\n0.1,3\n0.2,3\n0.3,3\n"
    (cwd / "d.json").write_bytes(orjson.dumps(_io_diagram()))
    out = _cli(["run", "d.json", "--base-dir", str(data)], cwd=cwd)
    assert out.returncode == 0 and orjson.loads(out.stdout)["workspace"]["y"][0] == [3.0]


def test_cli_escape_is_exit_2(tmp_path):
    d = _io_diagram()
    d["blocks"][0]["params"]["FileName"] = "../in.csv"
    (tmp_path / "sub").mkdir()
    (tmp_path / "in.csv").write_text("0,1\n")
    (tmp_path / "sub" / "d.json").write_bytes(orjson.dumps(d))
    out = _cli(["run", "sub/d.json"], cwd=tmp_path)
    assert out.returncode == 2 and orjson.loads(out.stdout)["error"]["code"] == "path_outside_base"
    assert not (tmp_path / "sub" / "out.csv").exists()
