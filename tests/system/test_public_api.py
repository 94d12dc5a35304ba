"""The public API is typed and documented: every name of ``nflow_compat.__all__`` (and
``Plan.run``) has a numpydoc docstring with the sections its kind needs, full type hints,
and examples that run here as doctests (so a changed result or message breaks the suite,
not the reader)."""
from __future__ import annotations

import doctest
import inspect
import re

import pytest

import nflow_compat as nc
from nflow_compat.engine import Plan

PUBLIC = {name: getattr(nc, name) for name in nc.__all__} | {"Plan.run": Plan.run}
SECTION = re.compile(r"^ {4,8}(\w[\w ]*)\n {4,8}-{3,}$", re.MULTILINE)
FINDER = doctest.DocTestFinder(recurse=False)


def sections(obj) -> set:
    return set(SECTION.findall(obj.__doc__ or ""))


def test_the_public_names_are_the_documented_entry_points():
    assert {"simulate", "simulate_json", "simulate_to", "validate", "compile_plan", "sweep", "Limits",
            "NFlowError", "DiagramError", "SimulationError"} <= set(PUBLIC)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_the_docstring_has_its_numpydoc_sections(name):
    obj = PUBLIC[name]
    found = sections(obj)
    assert "Examples" in found, name
    if inspect.isclass(obj):
        return
    signature = inspect.signature(obj)
    public_params = [p for p in signature.parameters if p != "self" and not p.startswith("_")]
    needed = {"Raises"} | ({"Parameters"} if public_params else set())
    if signature.return_annotation not in ("None", None):
        needed.add("Returns")
    assert needed <= found, f"{name}: missing {sorted(needed - found)}"
    for param in public_params:      # every parameter is described under Parameters
        assert re.search(rf"^ {{4,8}}\*{{0,2}}{param}\b", obj.__doc__, re.MULTILINE), f"{name}: {param}"


@pytest.mark.parametrize("name", sorted(n for n, o in PUBLIC.items() if not inspect.isclass(o)))
def test_the_signature_is_fully_typed(name):
    signature = inspect.signature(PUBLIC[name])
    assert signature.return_annotation is not inspect.Signature.empty, name
    untyped = [p.name for p in signature.parameters.values()
               if p.name != "self" and p.annotation is inspect.Parameter.empty]
    assert not untyped, f"{name}: {untyped}"


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_the_examples_run(name):
    obj = PUBLIC[name]
    tests = [t for t in FINDER.find(obj, name, globs={}) if t.examples]
    assert tests, f"{name} has no examples"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in tests:
        runner.run(test, out=lambda text: pytest.fail(f"{name}: doctest failed\n{text}", pytrace=False))
    assert runner.summarize(verbose=False).failed == 0
