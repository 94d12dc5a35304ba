"""The checked-in JSON Schema files (docs/CONTRACT.md §6, ``nflow_compat.schema``): generated
from the manifests, not stale, one per block type, stable text; the ``--check`` / ``--write``
commands and ``nflow-sim schema``. What the schemas accept is tested in tests/test_shape.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from nflow_compat import schema
from nflow_compat.cli import main
from nflow_compat.manifests import block_types

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


# ----------------------------------------------------------------------------- files

def test_checked_in_schemas_are_not_stale():
    problems = schema.stale(SCHEMAS)
    assert not problems, "run `python -m nflow_compat.schema --write schemas`:\n" + "\n".join(problems)


def test_one_params_file_per_block_type():
    files = {p.name for p in (SCHEMAS / "blocks").glob("*.json")}
    assert files == {f"{t}.params.schema.json" for t in block_types()}


def _keys_sorted(node) -> bool:
    if isinstance(node, dict):
        return list(node) == sorted(node) and all(_keys_sorted(v) for v in node.values())
    if isinstance(node, list):
        return all(_keys_sorted(v) for v in node)
    return True


@pytest.mark.parametrize("name", ["diagram.schema.json", "blocks/gain.params.schema.json"])
def test_files_are_sorted_indented_and_end_with_a_newline(name):
    text = (SCHEMAS / name).read_text(encoding="utf-8")
    assert text.startswith("{\n  \"") and text.endswith("}\n") and not text.endswith("\n\n")
    assert _keys_sorted(json.loads(text))


def test_check_and_write_commands(tmp_path, capsys):
    assert schema.main(["--check", str(tmp_path)]) == 1
    assert "missing: diagram.schema.json" in capsys.readouterr().out
    assert schema.main(["--write", str(tmp_path)]) == 0
    assert schema.main(["--check", str(tmp_path)]) == 0
    capsys.readouterr()
    (tmp_path / "blocks" / "gain.params.schema.json").write_text("{}\n")
    (tmp_path / "blocks" / "gone.params.schema.json").write_text("{}\n")
    assert schema.main(["--check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "stale: blocks/gain.params.schema.json" in out and "extra: blocks/gone.params.schema.json" in out
    schema.main(["--write", str(tmp_path)])
    assert not (tmp_path / "blocks" / "gone.params.schema.json").exists()
    assert schema.main(["--check", str(tmp_path)]) == 0


# ----------------------------------------------------------------------------- CLI

def test_cli_prints_the_diagram_schema(capsys):
    assert main(["schema"]) == 0
    doc = json.loads(capsys.readouterr().out)
    Draft202012Validator.check_schema(doc)
    assert doc["required"] == ["sampleTime", "duration"] and "gain" in doc["$defs"]["blockParams"]["$defs"]


def test_cli_prints_one_params_schema(capsys):
    assert main(["schema", "gain"]) == 0
    doc = json.loads(capsys.readouterr().out)
    Draft202012Validator.check_schema(doc)
    v = Draft202012Validator(doc)
    assert v.is_valid({"Gain": 2}) and v.is_valid({"Gain": "k*2"}) and v.is_valid({"Gain": [3]})
    assert not v.is_valid({"Gain": [1, 2]}) and not v.is_valid({"Gain": {"a": 1}})


def test_cli_unknown_type_exits_2(capsys):
    assert main(["schema", "gian"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "unknown_block_type"
