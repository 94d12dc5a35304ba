"""The generated block reference (docs/blocks): it matches the manifests and fixtures, and
what it says of the solvers is what the compiled plans do."""
from pathlib import Path

import pytest

import nflow_compat as nc
from nflow_compat import docs
from nflow_compat.blocks import REGISTRY
from nflow_compat.blocks.fmi import INTERFACES
from nflow_compat.manifests import block_types, libraries
from nflow_compat.normalize import SOLVERS
from nflow_compat.parts import SOLVER_OWNED
from tests.lone_blocks import lone

DOCS = Path(__file__).resolve().parent.parent / "docs" / "blocks"


def test_block_reference_is_not_stale():
    assert docs.stale(DOCS) == [], "run `make docs` (python -m nflow_compat.docs --write docs/blocks)"


def test_every_library_has_a_page_listing_its_blocks():
    for folder, manifest in libraries().items():
        text = (DOCS / f"{folder}.md").read_text()
        for entry in manifest["blocks"]:
            assert f"\n## `{entry['type']}`\n" in text


def test_pages_say_what_runs():
    text = (DOCS / "nonlinear.md").read_text()
    assert "8 of 8 blocks run" in text and "`BacklashWidth`" in text and "`width` for `BacklashWidth`" in text
    assert "2 of 2 blocks run" in (DOCS / "userdefined.md").read_text()
    assert "no (validates only" in (DOCS / "fmi.md").read_text()
    assert "19 of 19 blocks run" in (DOCS / "acausal_planar.md").read_text()
    assert "42 of 42 blocks run" in (DOCS / "acausal_electrical.md").read_text()


def test_every_param_row_gives_a_unit_and_a_meaning():
    for page in DOCS.glob("*.md"):
        for line in page.read_text().splitlines():
            if line.startswith("| `"):
                cells = [c.strip() for c in line.strip("|").split(" | ")]
                assert len(cells) == 5 and cells[2] != "?" and cells[4], (page.name, line)


def test_units_print_as_symbols():
    assert docs.unit_text("N.m.s2/rad2") == "N·m·s²/rad²" and docs.unit_text("Ohm") == "Ω"
    assert docs.unit_text("[y]/([u].s)") == "[y]/([u]·s)" and docs.unit_text(("rad/s", "")) == "columns: rad/s, 1"


def test_text_is_escaped_for_markdown_outside_code():
    assert docs._markdown("a*b [k] <id> `x*y`") == "a\\*b \\[k\\] &lt;id> `x*y`"
    assert docs._markdown("a|b", cell=True) == "a\\|b"


# ----------------------------------------------------------------------------- solvers

CAUSAL = [t for t, bt in block_types().items() if t in REGISTRY and not bt.acausal and t not in INTERFACES]


@pytest.mark.parametrize("block_type", CAUSAL)
def test_the_solvers_the_reference_gives_are_those_the_block_compiles_under(block_type):
    # the handler's declarations (Handler.solvers, .solver_role), which the reference prints,
    # against plans: a solver it does not declare is an error, a 'state', 'crossings' or
    # 'algebraic' role is a part of the solver's system under the solvers that own state only
    handler = REGISTRY[block_type]
    for solver in SOLVERS:
        d = lone(block_type, solver=solver)
        if solver not in handler.solvers:
            with pytest.raises(nc.DiagramError):
                nc.compile_plan(d)
            continue
        parts = nc.compile_plan(d).has_parts
        assert parts == (handler.solver_role is not None and solver in SOLVER_OWNED), (block_type, solver)
