"""The JSON contract examples/nelson/nflow_simulate.m relies on (docs/guide/serve.md): a
diagram as Nelson's ``jsonencode`` writes it runs through the shim's very command line; the
result file reads, under ``jsondecode``'s rules, into the types the page promises; a failure is
one error line on stdout, no result file.

``jsondecode`` (Nelson's and MATLAB's) is modelled by ``decoded``: a number is a double, null an
empty double (NaN inside a numeric array), a string a char row, an array of numbers a column
vector, an array of equal-length numeric rows a matrix, an array of objects with the same keys
a struct array, any other array a cell; an object a struct."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIM = ROOT / "examples" / "nelson" / "nflow_simulate.m"
# the command the shim builds (its sprintf format, checked below to be the shim's)
COMMAND = '%s run "%s" -o "%s" --base-dir "%s" --quiet%s > "%s" 2> "%s"'

# What jsonencode writes for a diagram built in Nelson (examples/nelson/demo.m builds one):
# struct arrays as arrays of objects, a 1x1 struct array (one connection) as a bare object,
# every field of every element (an unset one as []), a one-element cell of a string as
# ["..."], Inf as the string "Inf" and NaN as null, an empty struct() as {}.
JSONENCODED = (
    '{"blocks":[{"id":"drive","type":"sine","inputs":0,"outputs":1,"params":{"Amplitude":2,"Frequency":0.5}},'
    '{"id":"limit","type":"saturation","inputs":1,"outputs":1,"params":{"LowerLimit":null,'
    '"UpperLimit":"Inf"}},{"id":"log","type":"toWorkspace","inputs":1,"outputs":0,"params":{"VariableName":"y",'
    '"SaveFormat":["Array"]}}],"connections":[{"from":"drive","to":"limit","fromIndex":0,"toIndex":0,"fromPin":[],'
    '"toPin":[]},{"from":"limit","to":"log","fromIndex":0,"toIndex":0,"fromPin":[],"toPin":[]}],'
    '"sampleTime":0.1,"duration":2,"solver":["discrete"],"relTol":[],"variables":{}}')
ONE_CONNECTION = (
    '{"blocks":[{"id":"c","type":"constant","inputs":0,"outputs":1,"params":{"Value":[1,2,3]}},'
    '{"id":"log","type":"toWorkspace","inputs":1,"outputs":0,"params":{"VariableName":"v",'
    '"SaveFormat":"Structure With Time"}}],"connections":{"from":"c","to":"log","fromIndex":0,"toIndex":0},'
    '"sampleTime":0.5,"duration":1,"solver":"discrete","variables":{}}')


def decoded(value):
    """(kind, shape) of what jsondecode makes of a decoded JSON value."""
    if value is None:
        return "double", (0, 0)
    if isinstance(value, bool):
        return "logical", (1, 1)
    if isinstance(value, (int, float)):
        return "double", (1, 1)
    if isinstance(value, str):
        return "char", (1, len(value))
    if isinstance(value, dict):
        return "struct", (1, 1)
    if not value:
        return "double", (0, 0)
    if all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in value):
        return "double", (len(value), 1)
    if all(isinstance(v, list) and v and decoded(v) == ("double", (len(value[0]), 1)) for v in value):
        return "double", (len(value), len(value[0]))
    if all(isinstance(v, dict) for v in value) and len({tuple(v) for v in value}) == 1:
        return "struct", (len(value), 1)
    return "cell", (len(value), 1)


KEYWORDS = {"break", "case", "catch", "classdef", "continue", "else", "elseif", "end", "for", "function", "global",
            "if", "otherwise", "parfor", "persistent", "return", "spmd", "switch", "try", "while"}


def identifier(name: str) -> bool:
    """A name jsondecode keeps as a struct field (else it renames it): a letter, then letters,
    digits or underscores, 63 at most, not a keyword of the language."""
    return bool(re.fullmatch(r"[A-Za-z]\w{0,62}", name)) and name not in KEYWORDS


def pipe_command() -> str:
    script = Path(sys.executable).parent / "nflow-sim"
    return shlex.quote(str(script)) if script.is_file() else f"{shlex.quote(sys.executable)} -m nflow_compat"


def run_as_the_shim(tmp_path, text: str, limits: str = "") -> tuple:
    """(exit status, the result file's text or None, the stdout file's text, the log's) of
    the shim's command line on diagram ``text``."""
    files = {name: tmp_path / f"stem_{name}" for name in ("diagram.json", "result.json", "error.json", "log.txt")}
    files["diagram.json"].write_text(text, encoding="utf-8")
    command = COMMAND % (pipe_command(), files["diagram.json"], files["result.json"], tmp_path, limits,
                         files["error.json"], files["log.txt"])
    status = subprocess.run(command, shell=True, timeout=120).returncode
    result = files["result.json"].read_text() if files["result.json"].exists() else None
    return status, result, files["error.json"].read_text(), files["log.txt"].read_text()


def strict(text: str):
    """The JSON, refusing NaN / Infinity tokens (jsondecode reads strict JSON)."""
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(text, parse_constant=refuse)


def test_the_command_is_the_shim_s():
    shim = SHIM.read_text()
    assert f"sprintf('{COMMAND}'" in shim
    assert "jsondecode(fileread(files.result))" in shim and "jsonencode(diagram)" in shim
    assert "error(['nflow:', failure.error.code]" in shim


@pytest.mark.parametrize("text", [JSONENCODED, ONE_CONNECTION], ids=["struct-arrays", "one-connection"])
def test_a_jsonencoded_diagram_runs_through_the_shims_command_line(tmp_path, text):
    status, result, stdout, log = run_as_the_shim(tmp_path, text, " --limit max_seconds=60")
    assert status == 0 and stdout == "" and log == ""
    doc = strict(result)
    assert doc["status"] == "ok" and decoded(doc["time"]) == ("double", (len(doc["time"]), 1))
    if text is JSONENCODED:
        y = doc["workspace"]["y"]
        assert decoded(y) == ("double", (21, 1))                         # N x W
        assert max(row[0] for row in y) == 2.0                           # "Inf": no upper limit
        assert min(row[0] for row in y) == -2.0                          # null (NaN): no lower limit either
    else:
        v = doc["workspace"]["v"]
        assert decoded(v) == ("struct", (1, 1))
        assert decoded(v["time"]) == ("double", (3, 1))
        assert decoded(v["signals"]["values"]) == ("double", (3, 3))     # N x W, a row per sample
        assert decoded(v["signals"]["dimensions"]) == ("double", (1, 1))
        assert {decoded(v["signals"]["label"])[0], decoded(v["blockName"])[0]} == {"char"}


def test_the_result_reads_into_the_types_the_page_promises(tmp_path):
    # a run with events and a warning-free result: every top-level field and its jsondecode type
    fixture = json.loads((ROOT / "fixtures" / "acausal_electrical" / "ideal_diode_half_wave.json").read_text())
    status, result, _, _ = run_as_the_shim(tmp_path, json.dumps(fixture["diagram"]))
    doc = strict(result)
    assert status == 0 and all(identifier(key) for key in doc)
    assert all(identifier(name) for name in doc["workspace"])
    assert [decoded(doc[key])[0] for key in ("status", "time", "workspace", "scopes", "stats")] == \
        ["char", "double", "struct", "struct", "struct"]
    assert decoded(doc["events"]) == ("struct", (len(doc["events"]), 1)) and len(doc["events"]) >= 2
    assert all(identifier(key) for key in doc["events"][0])
    assert decoded(doc["warnings"])[0] in ("double", "cell")        # [] or a cell of strings
    for values in doc["workspace"].values():
        assert decoded(values) == ("double", (len(doc["time"]), 1))


def test_a_failure_is_one_error_line_and_no_result_file(tmp_path):
    bad = JSONENCODED.replace('"type":"saturation"', '"type":"saturaton"')
    assert bad != JSONENCODED
    status, result, stdout, log = run_as_the_shim(tmp_path, bad)
    assert status == 2 and result is None
    (line,) = stdout.splitlines()
    failure = strict(line)
    assert failure["status"] == "error"
    error = failure["error"]
    assert error["code"] == "unknown_block_type" and error["path"] == "/blocks/1/type"
    assert re.fullmatch(r"[A-Za-z]\w*", error["code"])             # nflow:<code> is an error identifier
    assert "saturation" in error["message"] and "unknown_block_type" in log


def test_a_run_that_fails_also_answers_on_stdout(tmp_path):
    long = JSONENCODED.replace('"duration":2,', '"duration":100000,')
    assert long != JSONENCODED
    status, result, stdout, _ = run_as_the_shim(tmp_path, long, " --limit max_steps=100")
    assert status == 1 and result is None
    assert strict(stdout)["error"]["code"] == "too_many_steps"
