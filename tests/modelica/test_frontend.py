"""rumoca and the compile cache (``nflow_compat.modelica.frontend``)."""
from __future__ import annotations

import os

import pytest

from nflow_compat.modelica import frontend

SOURCE = "model Tiny\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -{k} * x;\nend Tiny;\n"


def test_the_cache_keeps_at_most_its_size_least_recently_used_first_out(monkeypatch):
    frontend.clear_cache()
    monkeypatch.setattr(frontend, "CACHE_SIZE", 2)
    first = frontend.load(SOURCE.format(k=1), "t.mo", "Tiny", [])
    assert frontend.load(SOURCE.format(k=1), "t.mo", "Tiny", []) is first
    frontend.load(SOURCE.format(k=2), "t.mo", "Tiny", [])
    frontend.load(SOURCE.format(k=1), "t.mo", "Tiny", [])          # used again: now the most recent
    frontend.load(SOURCE.format(k=3), "t.mo", "Tiny", [])          # evicts k=2
    assert len(frontend._CACHE) == 2
    assert frontend.load(SOURCE.format(k=1), "t.mo", "Tiny", []) is first


def test_the_key_follows_the_source_the_model_and_the_library_files(tmp_path):
    lib = tmp_path / "Lib"
    lib.mkdir()
    (lib / "package.mo").write_text("package Lib\nend Lib;\n")
    key = frontend.cache_key("text", "M", [tmp_path])
    assert key == frontend.cache_key("text", "M", [tmp_path])
    assert key != frontend.cache_key("text2", "M", [tmp_path]) and key != frontend.cache_key("text", "N", [tmp_path])
    (lib / "package.mo").write_text("package Lib\n  constant Real c = 1;\nend Lib;\n")
    assert key != frontend.cache_key("text", "M", [tmp_path])


def test_library_roots_are_the_blocks_then_modelicapath(monkeypatch, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    monkeypatch.setenv("MODELICAPATH", os.pathsep.join([str(a), str(tmp_path / "missing"), "", str(b)]))
    assert frontend.library_roots([tmp_path / "own"]) == [tmp_path / "own", a.resolve(), b.resolve()]


def test_rumocas_messages_are_made_plain_with_the_line():
    with pytest.raises(frontend.CompileFailed) as info:
        frontend.load("model Bad\n  Real x;\nequation\n  der(x) = -x +;\nend Bad;\n", "bad.mo", "Bad", [])
    assert info.value.line == 4 and "unexpected" in info.value.message
    assert not any(ch in info.value.message for ch in "╭│╰×")
    with pytest.raises(frontend.CompileFailed) as info:
        frontend.load("model U\n  Real x;\nequation\n  der(x) = -y;\nend U;\n", "u.mo", "U", [])
    assert info.value.message == "unresolved component reference: 'y'"


def test_rumoca_is_imported_only_when_a_modelica_block_is_compiled():
    import subprocess
    import sys
    code = ("import sys, nflow_compat as nc\n"
            "d = {'blocks': [{'id': 'c', 'type': 'constant', 'params': {}}, {'id': 'g', 'type': 'gain', 'params': {}}],"
            " 'connections': [{'from': 'c', 'to': 'g'}], 'sampleTime': 0.1, 'duration': 0.2, 'solver': 'ode45'}\n"
            "nc.simulate(d)\nprint('rumoca' in sys.modules)\n"
            "d['blocks'].append({'id': 'm', 'type': 'modelica', 'params': {'source': 'model M\\n  Real x(start = 1, "
            "fixed = true);\\nequation\\n  der(x) = -x;\\nend M;'}})\n"
            "nc.simulate(d)\nprint('rumoca' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "True"]
