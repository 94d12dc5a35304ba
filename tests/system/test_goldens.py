"""Runs every golden fixture (see tests/goldens.py for the format and provenances)."""
import pytest

from tests import goldens

ALL = goldens.fixture_paths()
PATHS = [p for p in ALL if "expect" in goldens.load(p)]   # MSL tube fixtures: tests/system/test_msl_fixtures.py


@pytest.mark.parametrize("path", PATHS, ids=[str(p.relative_to(goldens.ROOT)) for p in PATHS])
def test_golden(path):
    fixture = goldens.load(path)
    assert fixture.get("provenance") in goldens.PROVENANCES, "every golden states its provenance"
    assert fixture.get("source") or fixture.get("derivation"), "every golden says where its values come from"
    result = goldens.run(fixture)
    problems = goldens.mismatches(fixture["expect"], result, fixture.get("tolerance", {}))
    assert not problems, "\n".join(problems)


def test_the_suite_is_not_empty():
    assert len(PATHS) >= 10


def test_mismatches_catches_differences():
    assert goldens.mismatches({"y": [[1.0]]}, {"y": [[1.0 + 1e-6]]}, {}) != []
    assert goldens.mismatches({"y": [[None]]}, {"y": [[None]]}, {}) == []
    assert goldens.mismatches({"y": [[1.0], [2.0]]}, {"y": [[1.0]]}, {}) != []
    assert goldens.mismatches({"n": 3}, {}, {}) != []


def _types(diagram) -> set:
    blocks = diagram["blocks"]
    return {b["type"] for b in (blocks if isinstance(blocks, list) else [blocks])}


def test_every_supported_block_has_a_golden():
    from nflow_compat.blocks import supported_types
    covered = set().union(*(_types(goldens.load(p)["diagram"]) for p in ALL))
    missing = {row["type"] for row in supported_types()} - covered
    assert not missing, f"no golden fixture uses {sorted(missing)}"


def test_every_runnable_doc_example_is_a_doc_stated_golden():
    import orjson
    from nflow_compat.blocks import supported_types
    examples = goldens.REFERENCE / "nflow" / "examples.json"
    supported = {row["type"] for row in supported_types()}
    stated = [goldens.load(p) for p in PATHS]
    stated = [f["diagram"] for f in stated if f["provenance"] == "doc-stated"]
    for example in orjson.loads(examples.read_bytes()):
        if _types(example["diagram"]) <= supported:
            assert example["diagram"] in stated, f"examples.json diagram of {example['block']} has no golden"
