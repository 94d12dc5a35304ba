"""The pipe tool and the Python entry points share one path (docs/CONTRACT.md §1, §4, §5), and
the CLI's base directory for fileSource / fileSink (the diagram file's directory, the current
one for the pipe, or --base-dir)."""
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import nflow_compat as nc
from nflow_compat.cli import main
from tests.util import blk, diagram, record, wire

DIAGRAM = diagram([blk("c", "constant", Value=2), blk("g", "gain", Gain=3), record()],
                  [wire("c", "g"), wire("g", "w")], duration=0.2)


def pipe(args, stdin: bytes):
    return subprocess.run([sys.executable, "-m", "nflow_compat", *args], input=stdin, capture_output=True,
                          timeout=60)


def test_pipe_stdin_to_stdout():
    out = pipe([], orjson.dumps(DIAGRAM))
    assert out.returncode == 0, out.stderr
    result = orjson.loads(out.stdout)
    assert result["status"] == "ok" and result["workspace"]["y"] == [[6.0]] * 3
    assert result["time"] == [0.0, 0.1, 0.2]


def test_simulate_json_matches_simulate():
    text = nc.simulate_json(orjson.dumps(DIAGRAM).decode())
    a, b = orjson.loads(text), nc.simulate(DIAGRAM)
    for key in ("status", "time", "workspace", "events", "warnings"):
        assert a[key] == b[key]


def test_simulate_json_accepts_bytes():
    assert orjson.loads(nc.simulate_json(orjson.dumps(DIAGRAM)))["status"] == "ok"


def test_diagram_error_exit_2_with_json_and_stderr():
    bad = dict(DIAGRAM, blocks=DIAGRAM["blocks"][:1] + [blk("g", "gian")] + DIAGRAM["blocks"][2:])
    out = pipe([], orjson.dumps(bad))
    assert out.returncode == 2
    doc = orjson.loads(out.stdout)
    assert doc["status"] == "error" and doc["error"]["code"] == "unknown_block_type"
    assert doc["error"]["path"] == "/blocks/1/type"
    assert b"unknown_block_type" in out.stderr and b"Traceback" not in out.stderr


def test_not_json_exit_2():
    out = pipe([], b"{oops")
    assert out.returncode == 2 and orjson.loads(out.stdout)["error"]["code"] == "bad_json"


def test_simulation_error_exit_1():
    d = dict(DIAGRAM, sampleTime=1e-9, duration=1.0)
    out = pipe([], orjson.dumps(d))
    assert out.returncode == 1 and orjson.loads(out.stdout)["error"]["code"] == "too_many_steps"


def test_run_file_to_output(tmp_path):
    src, dst = tmp_path / "d.json", tmp_path / "r.json"
    src.write_bytes(orjson.dumps(DIAGRAM))
    assert main(["run", str(src), "-o", str(dst)]) == 0
    assert orjson.loads(dst.read_bytes())["workspace"]["y"][0] == [6.0]


def test_run_missing_file(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.json")]) == 2
    assert orjson.loads(capsys.readouterr().out)["error"]["code"] == "unreadable_input"


@pytest.mark.parametrize("where", ["missing_dir/out.json", "."], ids=["no-such-directory", "a-directory"])
def test_unwritable_output_fails_before_the_run(tmp_path, capsys, monkeypatch, where):
    import nflow_compat.api as api

    def must_not_run(*args, **kwargs):
        raise AssertionError("simulated before checking the output")
    monkeypatch.setattr(api, "run", must_not_run)
    src = tmp_path / "d.json"
    src.write_bytes(orjson.dumps(DIAGRAM))
    assert main(["run", str(src), "-o", str(tmp_path / where)]) == 1
    out = capsys.readouterr()
    err = orjson.loads(out.out)["error"]
    assert err["kind"] == "output" and err["code"] == "unwritable_output" and str(tmp_path) in err["message"]
    assert "unwritable_output" in out.err and not (tmp_path / "missing_dir").exists()


def test_dash_is_stdout_and_a_format_it_cannot_write_is_refused_before_the_run(tmp_path, capsys, monkeypatch):
    import nflow_compat.api as api
    src = tmp_path / "d.json"
    src.write_bytes(orjson.dumps(DIAGRAM))
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(src), "-o", "-"]) == 0
    assert orjson.loads(capsys.readouterr().out)["workspace"]["y"] == [[6.0]] * 3 and not (tmp_path / "-").exists()
    assert main(["run", str(src), "-o", "-", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ["time,y", "0.0,6.0", "0.1,6.0", "0.2,6.0"]

    def must_not_run(*args, **kwargs):
        raise AssertionError("simulated before checking the output format")
    monkeypatch.setattr(api, "run", must_not_run)
    for name in ("r.xlsx", "r.txt"):
        assert main(["run", str(src), "-o", str(tmp_path / name)]) == 1
        out = capsys.readouterr()
        assert orjson.loads(out.out)["error"]["code"] == "unsupported_output_format" and "Traceback" not in out.err
        assert not (tmp_path / name).exists()


def test_run_writes_the_format_the_extension_names(tmp_path):
    import scipy.io
    src = tmp_path / "d.json"
    src.write_bytes(orjson.dumps(DIAGRAM))
    for name in ("r.json", "r.mat", "r.csv", "r.parquet"):
        assert main(["run", str(src), "-o", str(tmp_path / name)]) == 0
    assert orjson.loads((tmp_path / "r.json").read_bytes())["workspace"]["y"] == [[6.0]] * 3
    mat = scipy.io.loadmat(tmp_path / "r.mat")
    assert mat["y"].tolist() == [[6.0]] * 3 and mat["tout"].ravel().tolist() == [0.0, 0.1, 0.2]
    assert (tmp_path / "r.csv").read_text().splitlines()[0] == "time,y"
    import pandas as pd
    assert pd.read_parquet(tmp_path / "r.parquet")["y"].tolist() == [6.0] * 3


def test_a_fixture_file_runs_as_its_diagram(tmp_path, capsys):
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "msl" / "oscillator.json"
    assert main(["run", str(fixture)]) == 0
    result = orjson.loads(capsys.readouterr().out)
    assert result["status"] == "ok" and len(result["workspace"]["mass1.s"]) == 401
    assert main(["validate", str(fixture)]) == 0
    assert orjson.loads(capsys.readouterr().out)["samples"] == 401


def test_validate(tmp_path, capsys):
    src = tmp_path / "d.json"
    src.write_bytes(orjson.dumps(DIAGRAM))
    assert main(["validate", str(src)]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert doc == {"status": "ok", "blocks": 3, "connections": 2, "samples": 3}


def test_allow_nan(tmp_path, capsys):
    d = diagram([blk("w", "toWorkspace", VariableName="y", SaveFormat="Array")], [], duration=0.1)
    src = tmp_path / "d.json"
    src.write_bytes(orjson.dumps(d))
    assert main(["run", str(src)]) == 0
    assert '"y":[[null],[null]]' in capsys.readouterr().out
    assert main(["run", str(src), "--allow-nan"]) == 0
    assert '"y":[[NaN],[NaN]]' in capsys.readouterr().out


def test_blocks_lists_only_what_runs(capsys):
    assert main(["blocks", "--json"]) == 0
    rows = orjson.loads(capsys.readouterr().out)
    types = {r["type"] for r in rows}
    assert {"gain", "constant", "toWorkspace", "Mass", "Clutch", "MassWithStopAndFriction", "Resistor",
            "HeatCapacitor", "fmu", "fmuMe", "modelica", "PlanarBody"} <= types


def test_internal_errors_are_still_typed(monkeypatch, capsys):
    import nflow_compat.api as api

    def boom(*a, **k):
        raise RuntimeError("kaboom")
    monkeypatch.setattr(api, "run", boom)
    monkeypatch.setattr("sys.stdin", type("S", (), {"buffer": type("B", (), {"read": lambda self: b"{}"})()})())
    assert main([]) == 1
    assert orjson.loads(capsys.readouterr().out)["error"]["code"] == "internal_error"


@pytest.mark.parametrize("fmt", ["Array", "Structure", "Structure With Time"])
def test_result_shape(fmt):
    d = diagram([blk("c", "constant", Value=[1, 2]), blk("w", "toWorkspace", VariableName="v", SaveFormat=fmt)],
                [wire("c", "w")], duration=0.1)
    res = nc.simulate(d)
    assert set(res) >= {"status", "time", "workspace", "events", "stats", "warnings"}
    assert res["stats"]["steps"] == 2 and res["stats"]["solver"] == "discrete"
    value = res["workspace"]["v"]
    if fmt == "Array":
        assert value == [[1.0, 2.0], [1.0, 2.0]]
    else:
        assert value["signals"] == {"values": [[1.0, 2.0], [1.0, 2.0]], "dimensions": 2, "label": ""}
        assert value["blockName"] == "w"
        assert value["time"] == ([0.0, 0.1] if fmt == "Structure With Time" else [])


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


# ----------------------------------------------------------------------------- Unix conventions

def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"nflow-sim {nc.__version__}"


def test_a_misspelled_limit_gets_a_suggestion(capsys):
    with pytest.raises(SystemExit) as done:
        main(["run", "d.json", "--limit", "max_step=10"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and "did you mean 'max_steps'?" in err and "Traceback" not in err


def test_a_closed_pipe_ends_quietly_as_cat_does(tmp_path):
    """``nflow-sim run big.json | head``: the reader closes the pipe long before the result
    (~2 MB of JSON) is written; the writer gets EPIPE (SIGPIPE is ignored in Python) and ends
    with nothing on stderr and the status a shell shows for SIGPIPE."""
    src = tmp_path / "big.json"
    src.write_bytes(orjson.dumps(diagram([blk("s", "sine"), record()], [wire("s", "w")], dt=1e-4, duration=10.0)))
    proc = subprocess.Popen([sys.executable, "-m", "nflow_compat", "run", str(src)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout.read(100).startswith(b'{"status":"ok"')
    proc.stdout.close()                    # as head does once it has its lines
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141
    assert err == b""
