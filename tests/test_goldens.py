"""Runs every golden fixture (see tests/goldens.py for the format and provenances)."""
import pytest

from tests import goldens

PATHS = goldens.fixture_paths()


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
