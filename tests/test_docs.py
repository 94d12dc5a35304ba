"""The generated block reference (docs/blocks) must match the manifests and fixtures."""
from pathlib import Path

from nflow_compat import docs

DOCS = Path(__file__).resolve().parent.parent / "docs" / "blocks"


def test_block_reference_is_not_stale():
    assert docs.stale(DOCS) == [], "run `make docs` (python -m nflow_compat.docs --write docs/blocks)"


def test_every_library_has_a_page_listing_its_blocks():
    from nflow_compat.manifests import libraries
    for folder, manifest in libraries().items():
        text = (DOCS / f"{folder}.md").read_text()
        for entry in manifest["blocks"]:
            assert f"## `{entry['type']}`" in text


def test_pages_say_what_runs():
    text = (DOCS / "nonlinear.md").read_text()
    assert "8 of 8 blocks run" in text and "`BacklashWidth`" in text and "`width` for `BacklashWidth`" in text
    assert "2 of 2 blocks run" in (DOCS / "userdefined.md").read_text()
    assert "no (validates only" in (DOCS / "fmi.md").read_text()
    assert "19 of 19 blocks run" in (DOCS / "acausal_planar.md").read_text()
    assert "42 of 42 blocks run" in (DOCS / "acausal_electrical.md").read_text()
