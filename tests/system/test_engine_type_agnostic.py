"""The engine never tests a block's type name: what it needs of a type, the handler declares
(``Phases`` fields, ``@block`` fields). Read from the source with ``ast``: no comparison
or membership test in ``nflow_compat/engine`` involves a string that names a block type."""
from __future__ import annotations

import ast
from pathlib import Path

from nflow_compat.manifests import block_types

ENGINE = Path(__file__).resolve().parents[2] / "nflow_compat" / "engine"


def _strings(node) -> list:
    """The string constants ``node`` is or holds (a tuple, list or set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for element in node.elts for s in _strings(element)]
    return []


def type_names_tested(source: str) -> list:
    """(line, name) of every block type name a comparison in ``source`` tests against."""
    types = set(block_types())
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                found += [(node.lineno, s) for s in _strings(operand) if s in types]
    return found


def test_the_check_sees_a_type_test():
    assert type_names_tested('if b.type.type == "fileSource":\n    pass\n') == [(1, "fileSource")]
    assert type_names_tested('ok = kind in ("toWorkspace", "other")\n') == [(1, "toWorkspace")]
    assert type_names_tested('x = namespace["step"]\n') == []


def test_the_engine_tests_no_block_type_name():
    sources = sorted(ENGINE.rglob("*.py"))
    assert len(sources) > 10
    found = {path.relative_to(ENGINE).as_posix(): names for path in sources
             if (names := type_names_tested(path.read_text(encoding="utf-8")))}
    assert found == {}
