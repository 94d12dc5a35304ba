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


def test_a_source_compiled_once_is_run_again_without_compiling(monkeypatch):
    """The step function's source depends on the structure alone: compiling the diagram again
    with other values (a sweep's next run, ``plan.with_params``) reuses its code object."""
    from nflow_compat import generated
    compiled = []

    def counting(source, filename, mode):
        compiled.append(filename)
        return compile(source, filename, mode)
    monkeypatch.setattr(generated, "compile", counting, raising=False)
    monkeypatch.setattr(generated, "_CODES", {})

    def feedback(gain):
        blocks = [blk("s", "sine"), blk("add", "sum", inputs=2, Inputs="+-"), blk("g", "gain", Gain=gain),
                  blk("z", "unitDelay"), record()]
        return diagram(blocks, [wire("s", "add"), wire("z", "add", 0, 1), wire("add", "g"), wire("g", "z"),
                                wire("g", "w")], duration=0.3)
    first = nc.compile_plan(feedback(0.5))
    assert "<nflow step function>" in compiled
    compiled.clear()
    second = nc.compile_plan(feedback(0.25))
    assert "<nflow step function>" not in compiled
    assert second.program.step.source == first.program.step.source
    assert second.run()["workspace"]["y"].tolist() != first.run()["workspace"]["y"].tolist()
