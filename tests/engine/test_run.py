"""One run of a plan (nflow_compat/engine/run.py): the run's last line of defence (no raw
exception leaves ``simulate``) and the block named on every path an exception can take."""
from __future__ import annotations

import orjson
import pytest

import nflow_compat as nc
from nflow_compat.blocks import REGISTRY, Handler, Phases, elementwise
from nflow_compat.blocks.handlers import load_all
from nflow_compat.engine.plan import Plan
from tests.util import blk, constant, diagram, record, wire


# ----------------------------------------------------------------------------- the run's last line of defence

def _broken(monkeypatch, type_name="gain", *, build=None, widths=None, **phases):
    """Replace ``type_name``'s handler by one whose closures (or build / width rule) raise."""
    load_all()     # first, or loading the handler modules would register the real one over it

    def default_build(io):
        return Phases(**{name: fn for name, fn in phases.items()})
    monkeypatch.setitem(REGISTRY, type_name, Handler(type=type_name, build=build or default_build,
                                                     widths=widths or elementwise, feedthrough=lambda b: True))


def _raise(exc):
    def fn(*args):
        raise exc
    return fn


CHAIN = ([constant("c", 1.0), blk("ok", "bias"), blk("bad", "gain"), record()],
         [wire("c", "ok"), wire("ok", "bad"), wire("bad", "w")])


def _error(blocks=CHAIN[0], conns=CHAIN[1], **kw) -> nc.SimulationError:
    with pytest.raises(nc.NFlowError) as info:
        nc.simulate(diagram(blocks, conns, duration=0.3, **kw))
    assert isinstance(info.value, nc.SimulationError)
    return info.value


@pytest.mark.parametrize("exc, code", [(TypeError("unsupported operand"), "internal_error"),
                                       (KeyError("x"), "internal_error"),
                                       (ValueError("math domain error"), "numeric_error"),
                                       (ZeroDivisionError("float division by zero"), "numeric_error"),
                                       (OverflowError("math range error"), "numeric_error")])
def test_an_exception_of_a_block_is_a_typed_error_naming_the_block(monkeypatch, exc, code):
    _broken(monkeypatch, algebraic=_raise(exc))
    err = _error()
    assert err.code == code and err.block == "bad" and err.path == "/blocks/2"
    assert err.message == f"block 'bad' (gain) failed at t = 0: {type(exc).__name__}: {exc}"


def test_the_block_is_found_in_every_phase_and_at_a_later_step(monkeypatch):
    calls = []

    def later():
        calls.append(1)
        if len(calls) == 3:
            raise TypeError("third step")
    _broken(monkeypatch, update=later)
    err = _error()
    assert err.code == "internal_error" and err.block == "bad" and "at t = 0.2: TypeError: third step" in err.message
    for phase in ("init", "output", "after_step"):
        _broken(monkeypatch, **{phase: _raise(TypeError(phase))})
        err = _error()
        assert err.block == "bad" and err.message.endswith(f"TypeError: {phase}"), phase
    _broken(monkeypatch, result=_raise(TypeError("result")))
    err = _error()
    assert err.block == "bad" and err.message.endswith("TypeError: result")


def test_a_block_inside_an_algebraic_loop_is_named(monkeypatch):
    _broken(monkeypatch, algebraic=_raise(TypeError("in the loop")))
    blocks = [constant("c", 1.0), blk("s", "sum", Inputs="++", inputs=2), blk("bad", "gain"), record()]
    conns = [wire("c", "s", 0, 0), wire("bad", "s", 0, 1), wire("s", "bad"), wire("s", "w")]
    err = _error(blocks, conns)
    assert err.block == "bad" and "TypeError: in the loop" in err.message


def test_the_json_entry_point_is_covered_too(monkeypatch):
    _broken(monkeypatch, algebraic=_raise(ZeroDivisionError("boom")))
    with pytest.raises(nc.SimulationError) as info:
        nc.simulate_json(orjson.dumps(diagram(*CHAIN)))
    assert info.value.code == "numeric_error" and info.value.block == "bad"


def test_build_and_width_rule_bugs_are_typed_errors_naming_the_block(monkeypatch):
    _broken(monkeypatch, build=_raise(TypeError("bad build")))
    err = _error()
    assert err.code == "internal_error" and err.block == "bad"
    assert err.message == "block 'bad' (gain) could not be built: TypeError: bad build"
    _broken(monkeypatch, widths=_raise(IndexError("bad rule")))
    err = _error()
    assert err.code == "internal_error" and err.block == "bad" and "IndexError: bad rule" in err.message


def test_typed_errors_of_blocks_pass_unchanged(monkeypatch):
    _broken(monkeypatch, algebraic=_raise(nc.SimulationError("algebraic_loop", "as raised")))
    err = _error()
    assert err.code == "algebraic_loop" and err.message == "as raised"


def test_an_exception_of_the_callers_progress_callback_reaches_the_caller_untouched():
    class Cancel(ValueError):
        pass

    def progress(done, total):
        raise Cancel("stop here")
    with pytest.raises(Cancel, match="stop here"):
        nc.simulate(diagram(*CHAIN), progress=progress)


def test_a_compile_bug_outside_the_blocks_is_a_typed_error(monkeypatch):
    import nflow_compat.api as api

    def broken(*args, **kwargs):
        raise AttributeError("no such thing")
    monkeypatch.setattr(api, "Plan", broken)
    with pytest.raises(nc.SimulationError) as info:
        nc.simulate(diagram(*CHAIN))
    assert info.value.code == "internal_error" and "AttributeError: no such thing" in info.value.message


# ----------------------------------------------------------------------------- the block named on every path
#
# An exception escaping a closure is noted at the call (engine.context.blame): the solver
# loop, subsystems, the vectorized time-only paths, the generated step function's calls,
# time scales.

def test_a_block_under_a_solver_is_named(monkeypatch):
    # the integrator is a continuous part: the run goes through the solver loop (engine.solver_driven)
    chain = ([constant("c", 1.0), blk("i", "integrator"), blk("bad", "gain"), record()],
             [wire("c", "i"), wire("i", "bad"), wire("bad", "w")])
    _broken(monkeypatch, algebraic=_raise(ZeroDivisionError("under ode45")))
    err = _error(*chain, solver="ode45")
    assert err.code == "numeric_error" and err.block == "bad" and "ZeroDivisionError: under ode45" in err.message
    _broken(monkeypatch, algebraic=lambda: None, update=_raise(TypeError("major step")))
    err = _error(*chain, solver="ode45")
    assert err.code == "internal_error" and err.block == "bad" and err.message.endswith("TypeError: major step")


def test_a_block_inside_an_enabled_subsystem_is_named(monkeypatch):
    _broken(monkeypatch, algebraic=_raise(TypeError("inside")))
    body = [blk("in1", "labelSource", name="u", isExternalPort=True), blk("bad", "gain"),
            blk("out1", "labelSink", name="y", isExternalPort=True)]
    inner = {"name": "e", "blocks": body, "connections": [wire("in1", "bad"), wire("bad", "out1")]}
    enabled = blk("e", "subsystem", dict(name="e", externalInputs=[{"id": "in1", "name": "in1"}],
                                         externalOutputs=[{"id": "out1", "name": "out1"}], subsystem=inner,
                                         controlPort={"kind": "enable"}), inputs=2, outputs=1)
    err = _error([constant("c", 1.0), enabled, record()], [wire("c", "e"), wire("c", "e", 0, 1), wire("e", "w")])
    assert err.block == "e/bad" and err.message.endswith("TypeError: inside")


def test_a_vectorized_source_is_named(monkeypatch):
    # a time-only source: its array form runs over the grid at once (engine.vectorize)
    _broken(monkeypatch, "constant", output=lambda: None, array=_raise(OverflowError("array form")))
    chain = ([blk("src", "constant"), blk("g", "gain"), record()], [wire("src", "g"), wire("g", "w")])
    assert Plan(nc.validate(diagram(*chain))).program.vector is not None
    err = _error(*chain)
    assert err.code == "numeric_error" and err.block == "src" and err.message.endswith("OverflowError: array form")


def test_a_closure_called_from_the_generated_step_function_is_named(monkeypatch):
    # no template: the generated function calls the closure, between inlined blocks
    _broken(monkeypatch, "bias", algebraic=_raise(KeyError("called")))
    chain = ([blk("c", "sine"), blk("g", "gain"), blk("bad", "bias"), blk("z", "unitDelay"), record()],
             [wire("c", "g"), wire("g", "bad"), wire("bad", "z"), wire("z", "w")])
    step = Plan(nc.validate(diagram(*chain))).program.step
    assert step is not None and step.inlined
    err = _error(*chain)
    assert err.code == "internal_error" and err.block == "bad" and err.message.endswith("KeyError: 'called'")


def test_a_time_scale_is_named(monkeypatch):
    # time scales are asked of the sources feeding a continuous part, before the solver runs
    _broken(monkeypatch, "sine", output=lambda: None, time_scale=_raise(ValueError("scale")))
    err = _error([blk("s", "sine"), blk("i", "integrator"), record()], [wire("s", "i"), wire("i", "w")],
                 solver="ode45")
    assert err.code == "numeric_error" and err.block == "s" and err.message.endswith("ValueError: scale")


def test_an_exception_outside_any_block_names_none(monkeypatch):
    def broken(*args):
        raise TypeError("the loop itself")
    monkeypatch.setattr("nflow_compat.engine.run.run_fixed_step", broken)
    err = _error(*CHAIN)
    assert err.code == "internal_error" and err.block is None and "TypeError: the loop itself" in err.message


def test_a_run_time_error_naming_a_block_gets_its_pointer(monkeypatch):
    # an island's solver names the block of its element only: the run adds where it is
    def refuse():
        raise nc.SimulationError("island_unsolvable", "no solution", block="bad")
    _broken(monkeypatch, algebraic=refuse)
    err = _error(*CHAIN)
    assert err.code == "island_unsolvable" and err.block == "bad" and err.path == "/blocks/2"
