"""Signal types at compile time (nflow_compat/engine/signal_types.py): nflow's complex-type
check (``setComplexSupport``: the ``complex=`` support of each type), matrix dims from
constant / reshape, the width fixed point comparing layouts, and how ``Shaped`` /
``BusLayout`` print."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import nflow_compat as nc
from nflow_compat.blocks import NOT_RUNNABLE, REAL_ONLY, REGISTRY, ComplexSupport
from nflow_compat.blocks.handlers import load_all
from nflow_compat.manifests import block_types
from nflow_compat.signals import BusLayout, Shaped
from tests.complex_signals import run_blocks, z_source
from tests.util import blk, constant, diagram, record, wire


# nflow's table: builders make complex from real parts, extractors (and abs) take complex
# and give real, these pass it on (complex out iff a complex input), convert / matmul take
# the real part, recorders (and labelSink, which only names its input) take it; every
# other type refuses it. nelsonFunction's math passes it on too. A labelSource passes on what enters its labelSink (the parser wires
# that signal to it as an input): complex iff that is.
MAKERS = {"realImagToComplex", "magnitudeAngleToComplex"}
TO_REAL = {"complexToRealImag", "complexToMagnitudeAngle", "abs", "convert", "matmul", "toWorkspace", "terminator",
           "labelSink"}
PASS_ON = {"conjugate", "gain", "sum", "mult", "divide", "switch", "selector", "reshape", "concatenate", "mux",
           "signalConversion", "nelsonFunction"}
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
    "nelsonFunction": (blk("b", "nelsonFunction", Fcn="@(z) 2*z"), (), [3 + 4j], [6 + 8j]),
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
