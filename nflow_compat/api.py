"""The three entry points share this one path: JSON -> Diagram -> Plan -> result."""
from __future__ import annotations

import orjson

from . import results
from .diagram import Diagram, Limits, parse
from .engine import Plan
from .errors import DiagramError


def load_json(text) -> object:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise DiagramError("bad_json", f"input is not valid JSON: {exc}", path="") from None


def validate(diagram: dict, *, limits: Limits | None = None) -> Diagram:
    """Normalize and check a decoded diagram; raises DiagramError on the first problem."""
    try:
        return parse(diagram, limits)
    except RecursionError:
        raise DiagramError("too_deep", "the diagram nests arrays or objects too deeply", path="") from None


def compile_plan(diagram: dict, *, limits: Limits | None = None) -> Plan:
    """A reusable execution plan: ``plan.run()`` as often as needed, compiled once."""
    return Plan(validate(diagram, limits=limits), limits)


def _run(diagram: dict, limits: Limits | None) -> dict:
    return compile_plan(diagram, limits=limits).run()


def simulate(diagram: dict, *, limits: Limits | None = None) -> dict:
    """Run a decoded diagram; the result holds plain Python lists and floats."""
    return results.to_python(_run(diagram, limits))


def simulate_json(text, *, allow_nan: bool = False, limits: Limits | None = None) -> str:
    """The drop-in for ``__nflow_simulate__``: diagram JSON text in, result JSON text out."""
    return results.encode(_run(load_json(text), limits), allow_nan=allow_nan)
