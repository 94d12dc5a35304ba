"""The Modelica models of the tests (``MODELS``: fixtures/fmi/modelica, with the MSL files
they need under ``msl``) and the module tests' builders: ``flat_of(source)`` compiles one
with rumoca and reads its flat model; ``structure_of`` lowers it; ``part_of`` makes it a
runtime part with inputs the test sets."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from nflow_compat.modelica import flat, frontend, runtime, structure

MODELS = Path(__file__).resolve().parent.parent / "fixtures" / "fmi" / "modelica"


def loaded(source: str, name: str | None = None, roots=()):
    name = name or source.split()[1]
    return frontend.load(source, "test.mo", name, list(roots))


def flat_of(source: str, name: str | None = None, roots=()) -> flat.FlatModel:
    return loaded(source, name, roots).flat


def structure_of(source: str, overrides=None, name: str | None = None, roots=()) -> structure.Structure:
    return structure.lower(flat_of(source, name, roots), overrides or {})


def part_of(source: str, inputs=(), overrides=None, name: str | None = None):
    """(part, program): the model as a part whose inputs read ``inputs`` (a list the test may
    change), with a context collecting events and warnings."""
    model = loaded(source, name)
    st = structure.lower(model.flat, overrides or {})
    program = runtime.Program(st, model.describe, "model", "m")
    ctx = SimpleNamespace(t=0.0, events=[], warnings=[], stop=False, side_effect_free=False)
    values = list(inputs)
    part = runtime.ModelicaPart(program, "m", ctx, lambda: values)
    part.inputs_list = values
    return part, program
