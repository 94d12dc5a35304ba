"""The compiled plan and the fixed-step loop: order, reuse, loops, widths; and the framework
checks around signal kinds: nflow's compile-time complex-type check (``setComplexSupport``:
the ``complex=`` support of each type), the run's last line of defence (no raw exception
leaves ``simulate``), matrix dims from constant / reshape, the width fixed point comparing
layouts, and how ``Shaped`` / ``BusLayout`` print."""
from __future__ import annotations

import itertools
import math
import random

import numpy as np
import orjson
import pytest

import nflow_compat as nc
from nflow_compat import DiagramError
from nflow_compat.blocks import (
    NOT_RUNNABLE, REAL_ONLY, REGISTRY, ComplexSupport, Handler, Phases, elementwise, load_all,
)
from nflow_compat.manifests import block_types
from nflow_compat.signals import BusLayout, Shaped
from tests.complex_signals import run_blocks, z_source
from tests.util import blk, constant, diagram, record, trace, wire


def chain():
    return diagram([blk("s", "sine", Amplitude=2, Frequency=1), blk("g", "gain", Gain=1.5),
                    blk("sat", "saturation", LowerLimit=-1, UpperLimit=1), record()],
                   [wire("s", "g"), wire("g", "sat"), wire("sat", "w")], dt=0.05, duration=1.0)


def test_a_plan_runs_twice_with_identical_results():
    plan = nc.compile_plan(chain())
    first, second = plan.run(), plan.run()
    assert np.array_equal(first["workspace"]["y"], second["workspace"]["y"])
    assert np.array_equal(first["time"], second["time"]) and len(first["time"]) == 21


def test_stateful_blocks_are_reset_between_runs():
    d = diagram([blk("c", "constant", Value=1), blk("d", "unitDelay", InitialCondition=5),
                 blk("add", "sum", inputs=2, Inputs="++"), record()],
                [wire("c", "add", 0, 0), wire("d", "add", 0, 1), wire("add", "d"), wire("add", "w")], duration=0.3)
    plan = nc.compile_plan(d)
    assert plan.run()["workspace"]["y"].tolist() == plan.run()["workspace"]["y"].tolist() == [[6], [7], [8], [9]]


def test_block_and_connection_order_do_not_change_results():
    base = trace(chain())
    rng = random.Random(7)
    for _ in range(5):
        d = chain()
        rng.shuffle(d["blocks"])
        rng.shuffle(d["connections"])
        assert np.array_equal(trace(d), base)


def test_feedthrough_chain_is_evaluated_in_dependency_order():
    # declared sink-first: the wave must still compute g before sat in the same step
    d = chain()
    d["blocks"].reverse()
    y = trace(d)
    t = np.arange(21) * 0.05
    assert np.allclose(y[:, 0], np.clip(1.5 * 2 * np.sin(2 * np.pi * t), -1, 1), atol=1e-15)


def test_convergent_algebraic_loop_is_relaxed():
    # y = 1 + 0.5 y  ->  y = 2 (Gauss-Seidel sweeps, as nflow relaxes feedthrough cycles)
    d = diagram([blk("one", "constant", Value=1), blk("add", "sum", inputs=2, Inputs="++"),
                 blk("k", "gain", Gain=0.5), record()],
                [wire("one", "add", 0, 0), wire("k", "add", 0, 1), wire("add", "k"), wire("add", "w")], duration=0.2)
    assert np.allclose(trace(d), 2.0, rtol=1e-11)


def test_width_mismatch_is_a_diagram_error():
    d = diagram([blk("a", "constant", Value=[1, 2, 3]), blk("b", "constant", Value=[1, 2]),
                 blk("add", "sum", inputs=2, Inputs="++"), record()],
                [wire("a", "add", 0, 0), wire("b", "add", 0, 1), wire("add", "w")])
    with pytest.raises(DiagramError) as info:
        nc.simulate(d)
    assert info.value.code == "width_mismatch" and info.value.block == "add"


def test_scalar_broadcasts_into_vector():
    d = diagram([blk("a", "constant", Value=[1, 2, 3]), blk("b", "constant", Value=10),
                 blk("add", "sum", inputs=2, Inputs="+-"), record()],
                [wire("a", "add", 0, 0), wire("b", "add", 0, 1), wire("add", "w")], duration=0.1)
    assert trace(d).tolist() == [[-9, -8, -7]] * 2


def test_vector_feedback_through_a_delay_gets_its_width():
    d = diagram([blk("a", "constant", Value=[1, 2]), blk("d", "unitDelay"),
                 blk("add", "sum", inputs=2, Inputs="++"), record()],
                [wire("a", "add", 0, 0), wire("d", "add", 0, 1), wire("add", "d"), wire("add", "w")], duration=0.2)
    assert trace(d).tolist() == [[1, 2], [2, 4], [3, 6]]


def test_stop_simulation_ends_after_the_step_that_fires():
    d = diagram([blk("s", "step", Time=0.45), blk("stop", "stopSimulation"), record()],
                [wire("s", "stop"), wire("s", "w")], duration=1.0)
    res = nc.simulate(d)
    assert res["time"][-1] == pytest.approx(0.5) and res["workspace"]["y"][-1] == [1.0]
    assert res["stats"]["steps"] == 6


def test_solvers_without_continuous_state_run_the_grid():
    for solver in ("ode1", "ode4", "ode45", "dae"):
        d = chain()
        d["solver"] = solver
        assert np.array_equal(trace(d), trace(chain()))


def test_blocks_declared_with_fewer_ports_than_their_manifest_run():
    # "inputs": 0 / "outputs": 0 as jsonencode writes them for a bare block: the missing
    # inputs are unconnected, the missing outputs write nowhere visible
    d = diagram([blk("c", "constant", Value=[1, 2]), blk("g", "gain", inputs=1, outputs=0),
                 blk("s", "saturation", outputs=0), blk("a", "abs", inputs=0), blk("w", "toWorkspace", inputs=0)],
                [wire("c", "g"), wire("c", "s")], duration=0.1)
    res = nc.simulate(d)
    assert res["status"] == "ok"
    assert np.isnan(np.asarray(res["workspace"]["simout"]["signals"]["values"], dtype=float)).all()


def test_a_block_feeding_two_ports_of_another_is_ordered_once():
    """Two wires from one block into another are one edge of the feedthrough graph (a
    duplicated entry once made scipy's strong components loop forever)."""
    blocks = [blk("c", "constant", Value=2.0), blk("s", "sum", Inputs="++", inputs=2), blk("m", "mult", inputs=2),
              record()]
    conns = [wire("c", "s", 0, 0), wire("c", "s", 0, 1), wire("s", "m", 0, 0), wire("s", "m", 0, 1), wire("m", "w")]
    res = nc.simulate(diagram(blocks, conns, dt=0.1, duration=0.1))
    assert res["workspace"]["y"][0] == [16.0]


# nflow's table: builders make complex from real parts, extractors (and abs) take complex
# and give real, these pass it on (complex out iff a complex input), convert / matmul take
# the real part, recorders (and labelSink, which only names its input) take it; every
# other type refuses it. A labelSource passes on what enters its labelSink (the parser wires
# that signal to it as an input): complex iff that is.
MAKERS = {"realImagToComplex", "magnitudeAngleToComplex"}
TO_REAL = {"complexToRealImag", "complexToMagnitudeAngle", "abs", "convert", "matmul", "toWorkspace", "terminator",
           "labelSink"}
PASS_ON = {"conjugate", "gain", "sum", "mult", "divide", "switch", "selector", "reshape", "concatenate", "mux",
           "signalConversion"}
ACCEPTING = TO_REAL | PASS_ON


def first_row(value) -> list:
    """Row 0 of a recording as complex numbers (a real recording has imaginary 0)."""
    if isinstance(value, dict):
        return [complex(a, b) for a, b in zip(value["real"][0], value["imag"][0])]
    return [complex(v) for v in value[0]]


def compile_error(blocks, conns) -> nc.NFlowError:
    with pytest.raises(nc.NFlowError) as info:
        nc.compile_plan(diagram(blocks, conns))
    return info.value


# ----------------------------------------------------------------------------- the table

def test_support_table():
    registry = load_all()
    for t, h in registry.items():
        want = (ComplexSupport(False, 1) if t in MAKERS else ComplexSupport(True, 0) if t in TO_REAL
                else ComplexSupport(True, -1) if t in PASS_ON or t == "labelSource" else REAL_ONLY)
        assert h.complex == want, t
    assert REAL_ONLY == ComplexSupport(False, 0)


def test_a_bad_output_code_is_refused_when_registering():
    from nflow_compat.blocks import block
    with pytest.raises(ValueError):
        block("__never_registered__", complex=(True, 2))
    assert "__never_registered__" not in REGISTRY


# ----------------------------------------------------------------------------- accepting types compute

def _case(block, *others, z=(3 + 4j,)):
    """Output 0 of ``block`` (id 'b') at t = 0 with the complex ``z`` on input 0 and
    constants ``others`` on inputs 1, 2... (an entry None leaves a port unconnected)."""
    zs = np.asarray(z, dtype=complex)
    blocks, conns = z_source(zs.real.tolist() if zs.size > 1 else float(zs.real[0]),
                             zs.imag.tolist() if zs.size > 1 else float(zs.imag[0]))
    blocks += [block, record()]
    conns += [wire("z", "b", 0, 0), wire("b", "w")]
    for port, v in enumerate(others, start=1):
        if v is not None:
            blocks.append(constant(f"e{port}", v))
            conns.append(wire(f"e{port}", "b", 0, port))
    return first_row(run_blocks(blocks, conns)["workspace"]["y"])


# type: (block, constants on inputs 1, 2..., the complex input 0, output 0 at t = 0)
PASS_ON_CASES = {
    "conjugate": (blk("b", "conjugate"), (), [3 + 4j], [3 - 4j]),
    "gain": (blk("b", "gain", Gain=2.0), (), [3 + 4j], [6 + 8j]),
    "sum": (blk("b", "sum", Inputs="+-", inputs=2), (1.0,), [3 + 4j], [2 + 4j]),
    "mult": (blk("b", "mult", inputs=2), (-2.0,), [3 + 4j], [-6 - 8j]),
    "divide": (blk("b", "divide"), (2.0,), [3 + 4j], [1.5 + 2j]),
    "switch": (blk("b", "switch"), (1.0, 0.0), [3 + 4j], [3 + 4j]),
    "selector": (blk("b", "selector", Indices=[2]), (), [1 + 1j, -1j], [-1j]),
    "reshape": (blk("b", "reshape", OutputDimensions=[2, 1]), (), [1j, 2], [1j, 2]),
    "concatenate": (blk("b", "concatenate", inputs=2), (7.0,), [3 + 4j], [3 + 4j, 7]),
    "mux": (blk("b", "mux", inputs=2), ([7.0, 8.0],), [3 + 4j, -1j], [3 + 4j, -1j, 7, 8]),
    "signalConversion": (blk("b", "signalConversion"), (), [3 + 4j], [3 + 4j]),
}


@pytest.mark.parametrize("name", sorted(PASS_ON))
def test_pass_on_types_compute_on_complex_inputs(name):
    block, others, z, want = PASS_ON_CASES[name]
    assert _case(block, *others, z=z) == want


def test_pass_on_types_take_complex_on_any_port():
    blocks, conns = z_source(0.0, 2.0)
    blocks += [constant("c", 6.0), blk("b", "divide"), record()]
    conns += [wire("c", "b", 0, 0), wire("z", "b", 0, 1), wire("b", "w")]
    assert first_row(run_blocks(blocks, conns)["workspace"]["y"]) == [-3j]        # 6 / 2j
    blocks, conns = z_source(1.0, 1.0)
    blocks += [constant("c", 5.0), constant("k", 1.0), blk("b", "switch"), record()]
    conns += [wire("c", "b", 0, 0), wire("k", "b", 0, 1), wire("z", "b", 0, 2), wire("b", "w")]
    assert first_row(run_blocks(blocks, conns)["workspace"]["y"]) == [5]           # the top (real) branch


def _real_out(block, *others, z=(3 + 4j,)):
    """Output 0 of ``block`` fed the complex ``z``, through a saturation (which refuses
    complex inputs: the output must be real); the recorded row."""
    zs = np.asarray(z, dtype=complex)
    blocks, conns = z_source(zs.real.tolist() if zs.size > 1 else float(zs.real[0]),
                             zs.imag.tolist() if zs.size > 1 else float(zs.imag[0]))
    blocks += [block, blk("sat", "saturation", UpperLimit=100.0, LowerLimit=-100.0), record()]
    conns += [wire("z", "b", 0, 0), wire("b", "sat"), wire("sat", "w")]
    for port, v in enumerate(others, start=1):
        blocks.append(constant(f"e{port}", v))
        conns.append(wire(f"e{port}", "b", 0, port))
    return run_blocks(blocks, conns)["workspace"]["y"][0]


def test_to_real_types_compute_and_give_real_outputs():
    assert _real_out(blk("b", "abs")) == [5.0]
    assert _real_out(blk("b", "complexToRealImag")) == [3.0]
    assert _real_out(blk("b", "complexToMagnitudeAngle")) == [5.0]
    assert _real_out(blk("b", "convert", OutDataType="double")) == [3.0]
    assert _real_out(blk("b", "convert", OutDataType="int8")) == [3.0]
    assert _real_out(blk("b", "matmul"), 2.0) == [6.0]
    assert _real_out(blk("b", "matmul", MultiplicationRule="elementwise"), [1.0, 2.0], z=[1 + 1j, 2 - 1j]) == [1, 4]


def test_second_outputs_of_extractors_are_real_too():
    blocks, conns = z_source(3.0, 4.0)
    blocks += [blk("b", "complexToMagnitudeAngle"), blk("sat", "saturation", UpperLimit=0.5, LowerLimit=-0.5),
               record()]
    conns += [wire("z", "b"), wire("b", "sat", 1, 0), wire("sat", "w")]
    assert math.atan2(4, 3) > 0.5
    assert run_blocks(blocks, conns)["workspace"]["y"][0] == [0.5]


def test_recorders_take_complex_inputs():
    blocks, conns = z_source([1.0, 2.0], [-1.0, 0.5])
    blocks += [blk("t", "terminator"), record()]
    conns += [wire("z", "t"), wire("z", "w")]
    assert run_blocks(blocks, conns)["workspace"]["y"]["imag"][0] == [-1.0, 0.5]


# ----------------------------------------------------------------------------- refusing types

def _refusing_types():
    types = block_types()
    out = []
    for t in sorted(load_all()):
        bt = types.get(t)
        if bt is None or bt.acausal or t in ACCEPTING or t in NOT_RUNNABLE or t == "subsystem" or bt.inputs == 0:
            continue
        out.append(t)
    return out


REFUSING = _refusing_types()


def test_the_refusing_list_covers_the_reported_types():
    assert {"saturation", "deadZone", "sign", "compareToConstant", "lookup1D", "mathFunction", "sqrt", "rate",
            "hysteresis", "backlash", "quantizer", "bitwiseOperator", "scope", "display", "xyScope", "busCreator",
            "sumElements", "demux", "assignment", "dataStoreWrite", "multiportSwitch", "unitDelay",
            "realImagToComplex", "magnitudeAngleToComplex"} <= set(REFUSING)


@pytest.mark.parametrize("type_name", REFUSING)
def test_every_other_type_refuses_a_complex_input_when_compiled(type_name):
    blocks, conns = z_source(1.0, 2.0)
    blocks.append(blk("b", type_name))
    conns.append(wire("z", "b", 0, 0))
    err = compile_error(blocks, conns)
    assert isinstance(err, nc.DiagramError) and err.code == "complex_not_supported", (err.code, err.message)
    assert err.block == "b" and err.path == f"/blocks/{len(blocks) - 1}"
    assert err.message.startswith(f"block 'b' ({type_name}) does not accept complex signals; its input 0 comes "
                                  "from 'z' (realImagToComplex); extract parts with complexToRealImag")


def test_the_multiport_switch_control_and_the_sum_of_elements_refuse_complex():
    # these read a complex input without failing (the real part, or dropping the imaginary
    # part of a sum): nflow refuses them when the diagram is compiled, and so does this
    for type_name, port in (("multiportSwitch", 0), ("sumElements", 0), ("demux", 0), ("assignment", 1)):
        blocks, conns = z_source(1.0, 2.0)
        blocks += [constant("r", [1.0, 2.0]), blk("b", type_name)]
        conns += [wire("z", "b", 0, port)] + ([wire("r", "b", 0, 0)] if port else [])
        err = compile_error(blocks, conns)
        assert err.code == "complex_not_supported" and f"its input {port} comes from 'z'" in err.message


def test_the_message_names_the_source_that_made_the_signal_complex():
    blocks, conns = z_source(1.0, 2.0)
    blocks += [blk("g", "gain"), blk("m", "mux", inputs=2), blk("sat", "saturation")]
    conns += [wire("z", "g"), wire("g", "m", 0, 1), wire("m", "sat")]
    err = compile_error(blocks, conns)
    assert err.code == "complex_not_supported" and err.block == "sat"
    assert err.message == ("block 'sat' (saturation) does not accept complex signals; its input 0 comes from 'm' "
                           "(mux), which carries the complex signal of 'z' (realImagToComplex); extract parts with "
                           "complexToRealImag or complexToMagnitudeAngle first")


def test_the_check_is_independent_of_declaration_order():
    blocks, conns = z_source(1.0, 2.0)
    blocks = [blk("sat", "saturation"), blk("g2", "gain"), blk("g1", "gain")] + blocks
    conns += [wire("g2", "sat"), wire("g1", "g2"), wire("z", "g1")]
    err = compile_error(blocks, conns)
    assert err.block == "sat" and "'g2' (gain), which carries the complex signal of 'z'" in err.message


def test_a_complex_signal_reaching_a_refusing_block_through_a_loop():
    # z -> sum -> gain -> back into sum (an algebraic loop), and the loop's signal -> sign
    blocks, conns = z_source(1.0, 1.0)
    blocks = [blk("s", "sign"), blk("g", "gain", Gain=0.5), blk("sum", "sum", Inputs="++", inputs=2)] + blocks
    conns += [wire("g", "sum", 0, 1), wire("z", "sum", 0, 0), wire("sum", "g"), wire("g", "s")]
    err = compile_error(blocks, conns)
    assert err.block == "s" and "comes from 'g' (gain), which carries the complex signal of 'z'" in err.message


def test_complex_signals_leave_a_subsystem_through_its_output_port():
    body = {"blocks": [blk("in1", "labelSource", GotoTag="u", isExternalPort=True), blk("g", "gain", Gain=2.0),
                       blk("out1", "labelSink", GotoTag="y", isExternalPort=True)],
            "connections": [wire("in1", "g"), wire("g", "out1")]}
    blocks, conns = z_source(1.0, 2.0)
    blocks += [blk("sub", "subsystem", subsystem=body, externalInputs=["in1"], externalOutputs=["out1"]), record()]
    conns += [wire("z", "sub"), wire("sub", "w")]
    assert first_row(run_blocks(blocks, conns)["workspace"]["y"]) == [2 + 4j]
    blocks[-1] = blk("sat", "saturation")
    conns[-1] = wire("sub", "sat")
    err = compile_error(blocks, conns)
    assert err.block == "sat" and "comes from 'sub/g' (gain), which carries the complex signal of 'z'" in err.message


def test_goto_from_routes_carry_the_complex_flag():
    blocks, conns = z_source(1.0, 2.0)
    blocks += [blk("to", "labelSink", GotoTag="A"), blk("from", "labelSource", GotoTag="A"), blk("g", "gain", Gain=3.0),
               record()]
    conns += [wire("z", "to"), wire("from", "g"), wire("g", "w")]
    y = run_blocks(blocks, conns)["workspace"]["y"]          # the route copies in OUTPUT: the previous step's value
    assert first_row(y) == [0] and complex(y["real"][1][0], y["imag"][1][0]) == 3 + 6j
    blocks[-2] = blk("g", "sign")
    err = compile_error(blocks, conns)
    assert err.block == "g" and "comes from 'from' (labelSource), which carries the complex signal of 'z'" in \
        err.message
    # the last labelSink with the tag is the one read: a real one declared later clears the flag
    blocks.insert(-2, blk("to2", "labelSink", GotoTag="A"))
    blocks.append(constant("r", 1.0))
    conns.append(wire("r", "to2"))
    assert run_blocks(blocks, conns)["workspace"]["y"][1] == [1.0]


def test_real_signals_through_the_same_blocks_compile():
    blocks = [constant("c", 2.0), blk("g", "gain"), blk("cj", "conjugate"), blk("sat", "saturation", UpperLimit=9.0),
              record()]
    conns = [wire("c", "g"), wire("g", "cj"), wire("cj", "sat"), wire("sat", "w")]
    assert run_blocks(blocks, conns)["workspace"]["y"] == [[4.0], [4.0]]


def test_a_complex_algebraic_loop_settles():
    # y = z + 0.5 y  ->  y = 2 z; the loop's relaxation compares complex values
    blocks, conns = z_source(1.0, -2.0)
    blocks += [blk("sum", "sum", Inputs="++", inputs=2), blk("g", "gain", Gain=0.5), record()]
    conns += [wire("z", "sum", 0, 0), wire("g", "sum", 0, 1), wire("sum", "g"), wire("sum", "w")]
    y = first_row(run_blocks(blocks, conns)["workspace"]["y"])
    assert abs(y[0] - (2 - 4j)) < 1e-9


# ----------------------------------------------------------------------------- the run's last line of defence

def _broken(monkeypatch, type_name="gain", *, build=None, widths=None, **phases):
    """Replace ``type_name``'s handler by one whose closures (or build / width rule) raise."""
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


# ----------------------------------------------------------------------------- matrix dims from sources

def _matmul(a_blocks, b_blocks, conns_extra=()):
    blocks = a_blocks + b_blocks + [blk("mm", "matmul"), record()]
    conns = [wire("A", "mm", 0, 0), wire("B", "mm", 0, 1), wire("mm", "w")] + list(conns_extra)
    return run_blocks(blocks, conns)["workspace"]["y"][0]


def test_constant_matrices_multiply_without_declared_dims():
    # [1 2 3; 4 5 6] * [1 2; 3 4; 5 6] = [22 28; 49 64], column-major [22 49 28 64]
    assert _matmul([constant("A", [[1, 2, 3], [4, 5, 6]])],
                   [constant("B", [[1, 2], [3, 4], [5, 6]])]) == [22, 49, 28, 64]
    # the same from a Nelson matrix literal
    assert _matmul([constant("A", "[1 2 3; 4 5 6]")], [constant("B", "[1 2; 3 4; 5 6]")]) == [22, 49, 28, 64]


def test_constant_width_rule_carries_dims():
    from nflow_compat.blocks.source import _constant_widths
    d = nc.validate(diagram([constant("m", [[1, 2, 3], [4, 5, 6]]), constant("v", [1, 2, 3]), constant("s", [[5]]),
                             constant("r", [[1, 2, 3]])], []))
    widths = [_constant_widths(b, [])[0] for b in d.blocks]
    # the params normalizer makes a one-row (or one-column) matrix a plain vector
    assert [getattr(w, "dims", None) for w in widths] == [(2, 3), None, None, None]
    assert [int(w) for w in widths] == [6, 3, 1, 3]


def test_reshape_gives_matrix_dims():
    # a flat 6-vector reshaped to 3x2 (column-major: [1 4; 2 5; 3 6]), times a 2x1 column
    blocks = [constant("v", [1, 2, 3, 4, 5, 6]), blk("A", "reshape", OutputDimensions=[3, 2])]
    y = _matmul(blocks, [constant("B", [[1], [10]])], [wire("v", "A")])
    assert y == [41, 52, 63]
    with pytest.raises(nc.DiagramError) as info:   # 2x3 * 3x2 needs cols(A) = rows(B)
        _matmul([constant("v", [1, 2, 3, 4, 5, 6]), blk("A", "reshape", OutputDimensions=[2, 3])],
                [constant("B", [[1, 2], [3, 4]])], [wire("v", "A")])
    assert "matrix product dimension mismatch: [2x3] * [2x2]" in info.value.message


# ----------------------------------------------------------------------------- width fixed point

def _bus_counter_parts():
    return [blk("bc", "busCreator", MemberNames=["count"], inputs=1),
            blk("ba", "busAssignment", AssignedSignals=["count"]), blk("d", "unitDelay"),
            blk("s", "busSelector", SelectedSignals=["count"], outputs=1), blk("inc", "bias", Bias=1)]


def test_a_one_member_bus_in_a_feedback_loop_through_a_unit_delay_in_every_order():
    # count := previous count + 1, the one-member bus (width 1) held by a unitDelay; the
    # width pass seeds the loop with plain width-1 placeholders, which the layout replaces
    conns = [wire("cnt", "bc"), wire("bc", "ba", 0, 0), wire("inc", "ba", 0, 1), wire("ba", "d"), wire("d", "s"),
             wire("s", "inc"), wire("ba", "w")]
    for order in itertools.permutations(_bus_counter_parts()):
        y = run_blocks([constant("cnt", 0.0)] + list(order) + [record()], conns, duration=0.3)["workspace"]["y"]
        assert y == [[1.0], [2.0], [3.0], [4.0]], [b["id"] for b in order]


def test_unit_delay_keeps_a_one_member_bus():
    blocks = [constant("c", 5.0), blk("bc", "busCreator", MemberNames=["only"], inputs=1), blk("d", "unitDelay"),
              blk("s", "busSelector", SelectedSignals=["only"], outputs=1), record()]
    conns = [wire("c", "bc"), wire("bc", "d"), wire("d", "s"), wire("s", "w")]
    assert run_blocks(blocks, conns)["workspace"]["y"] == [[0.0], [5.0]]


def test_matrix_dims_reach_a_unit_delay_seeded_with_a_plain_width():
    # x(k+1) = A x(k), x a 2x2 matrix held by a unitDelay declared first (so the width pass
    # seeds it with its InitialCondition's plain width 4); its output times C needs the dims
    blocks = [blk("d", "unitDelay", InitialCondition=[1, 2, 3, 4]), constant("A", [[0, 1], [1, 0]]),
              blk("mm", "matmul", BDimensions=[2, 2]), constant("C", [[1, 0], [0, 2]]), blk("mm2", "matmul"),
              record()]
    conns = [wire("A", "mm", 0, 0), wire("d", "mm", 0, 1), wire("mm", "d"), wire("d", "mm2", 0, 0),
             wire("C", "mm2", 0, 1), wire("mm2", "w")]
    y = run_blocks(blocks, conns, duration=0.1)["workspace"]["y"]
    # x0 = [1 3; 2 4] -> x0*C = [1 6; 2 8]; x1 = A x0 = [2 4; 1 3] -> x1*C = [2 8; 1 6]
    assert y == [[1, 2, 6, 8], [2, 1, 8, 6]]


# ----------------------------------------------------------------------------- printing widths

def test_shaped_and_bus_widths_print_as_their_count():
    s, b = Shaped((2, 3)), BusLayout([("a", 2), ("b", 1)])
    assert (str(s), f"{s}", f"{s:>3}", "%s" % s, "%d" % s) == ("6", "6", "  6", "6", "6")
    assert (str(b), f"{b}", f"{b:03d}", "%s" % b) == ("3", "3", "003", "3")
    assert repr(s) == "Shaped(2x3)" and repr(b).startswith("BusLayout(3:")


def test_width_messages_print_counts():
    blocks = [constant("A", [[1, 2, 3], [4, 5, 6]]), constant("b", [1, 2]), blk("s", "sum", inputs=2)]
    err = compile_error(blocks, [wire("A", "s", 0, 0), wire("b", "s", 0, 1)])
    assert err.code == "width_mismatch" and "Shaped" not in err.message and "width 6" in err.message


# ----------------------------------------------------------------------------- the fuzzer's result checker

@pytest.mark.parametrize("save_format", ["Array", "Structure", "Structure With Time"])
def test_the_fuzz_checker_accepts_complex_recordings(save_format):
    from tests import fuzz
    blocks, conns = z_source([1.0, 2.0], [0.5, -0.5])
    blocks.append(blk("w", "toWorkspace", VariableName="y", SaveFormat=save_format))
    raw = diagram(blocks, conns + [wire("z", "w")], duration=0.3)
    result = nc.simulate(raw)
    fuzz.check_time_grid(raw, result)
    value = result["workspace"]["y"]
    lanes = value if save_format == "Array" else value["signals"]["values"]
    lanes["imag"] = lanes["imag"][:-1]            # lanes of different lengths are caught
    with pytest.raises(AssertionError, match="real/imag lanes differ"):
        fuzz.check_time_grid(raw, result)
