"""An exception escaping a block's phase closure is a typed error naming that block, on
every path that calls closures: the solver loop, subsystems, the vectorized time-only
paths, the generated step function's calls, time scales (``engine.context.blame``)."""
from __future__ import annotations

import pytest

import nflow_compat as nc
from nflow_compat.api import validate
from nflow_compat.blocks import REGISTRY, Handler, Phases, elementwise, load_all
from nflow_compat.engine.plan import Plan

from .util import blk, diagram, record, wire


def _broken(monkeypatch, type_name="gain", **phases):
    """Replace ``type_name``'s handler by one whose phases are ``phases``."""
    load_all()     # first, or loading would register the real handler over this one
    monkeypatch.setitem(REGISTRY, type_name, Handler(type=type_name, build=lambda io: Phases(**phases),
                                                     widths=elementwise, feedthrough=lambda b: True))


def _raise(exc):
    def fn(*args):
        raise exc
    return fn


def _error(d) -> nc.SimulationError:
    with pytest.raises(nc.SimulationError) as info:
        nc.simulate(d)
    return info.value


def test_a_block_under_a_solver_is_named(monkeypatch):
    # the integrator is a continuous part: the run goes through the solver loop (engine.continuous)
    _broken(monkeypatch, algebraic=_raise(ZeroDivisionError("under ode45")))
    d = diagram([blk("c", "constant", Value=1.0), blk("i", "integrator"), blk("bad", "gain"), record()],
                [wire("c", "i"), wire("i", "bad"), wire("bad", "w")], solver="ode45")
    err = _error(d)
    assert err.code == "numeric_error" and err.block == "bad" and "ZeroDivisionError: under ode45" in err.message
    _broken(monkeypatch, algebraic=lambda: None, update=_raise(TypeError("major step")))
    err = _error(d)
    assert err.code == "internal_error" and err.block == "bad" and err.message.endswith("TypeError: major step")


def test_a_block_inside_an_enabled_subsystem_is_named(monkeypatch):
    _broken(monkeypatch, algebraic=_raise(TypeError("inside")))
    body = [blk("in1", "labelSource", name="u", isExternalPort=True), blk("bad", "gain"),
            blk("out1", "labelSink", name="y", isExternalPort=True)]
    inner = {"name": "e", "blocks": body, "connections": [wire("in1", "bad"), wire("bad", "out1")]}
    enabled = blk("e", "subsystem", dict(name="e", externalInputs=[{"id": "in1", "name": "in1"}],
                                         externalOutputs=[{"id": "out1", "name": "out1"}], subsystem=inner,
                                         controlPort={"kind": "enable"}), inputs=2, outputs=1)
    d = diagram([blk("c", "constant", Value=1.0), enabled, record()],
                [wire("c", "e"), wire("c", "e", 0, 1), wire("e", "w")])
    err = _error(d)
    assert err.block == "e/bad" and err.message.endswith("TypeError: inside")


def test_a_vectorized_source_is_named(monkeypatch):
    # a time-only source: its array form runs over the grid at once (engine.vectorize)
    _broken(monkeypatch, "constant", output=lambda: None, array=_raise(OverflowError("array form")))
    d = diagram([blk("src", "constant"), blk("g", "gain"), record()], [wire("src", "g"), wire("g", "w")])
    assert Plan(validate(d)).program.vector is not None
    err = _error(d)
    assert err.code == "numeric_error" and err.block == "src" and err.message.endswith("OverflowError: array form")


def test_a_closure_called_from_the_generated_step_function_is_named(monkeypatch):
    # no template: the generated function calls the closure, between inlined blocks
    _broken(monkeypatch, "bias", algebraic=_raise(KeyError("called")))
    d = diagram([blk("c", "sine"), blk("g", "gain"), blk("bad", "bias"), blk("z", "unitDelay"), record()],
                [wire("c", "g"), wire("g", "bad"), wire("bad", "z"), wire("z", "w")])
    step = Plan(validate(d)).program.step
    assert step is not None and step.inlined
    err = _error(d)
    assert err.code == "internal_error" and err.block == "bad" and err.message.endswith("KeyError: 'called'")


def test_a_time_scale_is_named(monkeypatch):
    # time scales are asked of the sources feeding a continuous part, before the solver runs
    _broken(monkeypatch, "sine", output=lambda: None, time_scale=_raise(ValueError("scale")))
    d = diagram([blk("s", "sine"), blk("i", "integrator"), record()], [wire("s", "i"), wire("i", "w")],
                solver="ode45")
    err = _error(d)
    assert err.code == "numeric_error" and err.block == "s" and err.message.endswith("ValueError: scale")


def test_an_exception_outside_any_block_names_none(monkeypatch):
    import nflow_compat.engine.fixed_step as fixed_step

    def broken(*args):
        raise TypeError("the loop itself")
    monkeypatch.setattr(fixed_step, "run_fixed_step", broken)
    monkeypatch.setattr("nflow_compat.engine.plan.run_fixed_step", broken)
    err = _error(diagram([blk("c", "constant"), record()], [wire("c", "w")]))
    assert err.code == "internal_error" and err.block is None and "TypeError: the loop itself" in err.message
