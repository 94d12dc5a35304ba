"""The one place the package runs source it generated (nflow_compat/generated.py): what
reaches it is made of the handlers' templates only, never of a block id or a parameter."""
from __future__ import annotations

import nflow_compat as nc
from nflow_compat.blocks import _template_functions
from nflow_compat.generated import run_generated
from tests.util import blk, diagram, record, wire

HOSTILE = "x'); __import__('os').system('echo owned'); ('\n\"\"\"{0}{{}}\\"


def _sources(monkeypatch, ident: str, lower: float, upper: float) -> list:
    """The element-wise closures' source texts made while compiling a width-1 sine ->
    saturation -> abs chain (the step function's: tests/engine/test_codegen.py)."""
    seen = []
    original = run_generated

    def spy(source, filename, names):
        seen.append(source)
        return original(source, filename, names)
    monkeypatch.setattr("nflow_compat.blocks.run_generated", spy)
    _template_functions.cache_clear()
    blocks = [blk(f"{ident}s", "sine", Amplitude=2.0), blk(f"{ident}sat", "saturation", LowerLimit=lower,
                                                          UpperLimit=upper), blk(f"{ident}a", "abs"), record()]
    conns = [wire(f"{ident}s", f"{ident}sat"), wire(f"{ident}sat", f"{ident}a"), wire(f"{ident}a", "w")]
    nc.compile_plan(diagram(blocks, conns, duration=0.1))
    return seen


def test_no_id_or_parameter_reaches_the_element_wise_closures(monkeypatch):
    plain = _sources(monkeypatch, "", -1.0, 1.0)
    hostile = _sources(monkeypatch, HOSTILE, -0.123456789, 3.25)
    assert plain and plain == hostile
    assert not any("owned" in s or "3.25" in s or "0.123456789" in s for s in hostile)
