"""A diagram run both ways, compiled (vectorized time-only paths, the generated step
function, the major-step grid under a solver) and through every block's closures
(``Plan(closures_only=True)``), and the corpus of diagrams the comparison runs over.

The results are compared as the JSON text ``simulate_json`` would write (NaN allowed):
two floats print alike only when they are the same double, -0.0 included, so equal text
is equal results."""
from __future__ import annotations

from pathlib import Path

import nflow_compat as nc
from nflow_compat import results
from nflow_compat.api import validate
from nflow_compat.engine.plan import Plan
from tests import goldens

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_encoded(d, base_dir, closures_only) -> tuple:
    """(the plan, its result as JSON text without the wall time) or (None, the error)."""
    try:
        plan = Plan(validate(d), base_dir=base_dir, closures_only=closures_only)
        result = plan.run()
    except nc.NFlowError as exc:
        return None, (type(exc).__name__, exc.code, str(exc), getattr(exc, "block", None))
    result["stats"].pop("wall_s")
    return plan, results.encode(result, allow_nan=True)


def same_both_ways(d, base_dir=None):
    """Runs ``d`` compiled and through the closures; asserts equal results (or equal
    errors); returns the compiled plan (None when it failed)."""
    plan, got = run_encoded(d, base_dir, False)
    _, want = run_encoded(d, base_dir, True)
    assert got == want
    return plan


def corpus() -> list:
    """(name, path) of every golden fixture and every example diagram."""
    cases = [(str(p.relative_to(goldens.ROOT)), p) for p in goldens.fixture_paths()]
    return cases + [(f"examples/{p.parent.name}", p) for p in sorted(EXAMPLES.glob("*/diagram.json"))]
