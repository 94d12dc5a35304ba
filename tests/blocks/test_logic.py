"""Logic library handlers: compareToConstant, compareToZero, intervalTest, intervalTestDynamic,
relationalOperator, logicalOperator, and, or, xor, not, the bit blocks (bitwiseOperator,
bitSet, bitClear, extractBits, shiftArithmetic, combinatorialLogic), and the if / switchCase
blocks on their own (the action subsystems they drive are in tests/engine/test_groups.py).
Outputs are 1.0 / 0.0 floats. Expected bit patterns are worked out with Python integers
(two's complement masking by hand), never with the package."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nflow_compat as nc
from tests.util import blk, const, diagram, drive, one, ramp, record, run, trace, wire

NAN, INF = math.nan, math.inf
INT64_MIN = -2 ** 63
FAST = settings(max_examples=40, deadline=None)

# u = -1, 0, 1, NaN compared with 0 under every accepted spelling (worked out by hand;
# NaN is false for every ordered comparison and true for "not equal").
U = [-1.0, 0.0, 1.0, NAN]
TABLE = {
    "ge": [0, 1, 1, 0], ">=": [0, 1, 1, 0],
    "gt": [0, 0, 1, 0], ">": [0, 0, 1, 0],
    "le": [1, 1, 0, 0], "<=": [1, 1, 0, 0],
    "lt": [1, 0, 0, 0], "<": [1, 0, 0, 0],
    "eq": [0, 1, 0, 0], "==": [0, 1, 0, 0],
    "ne": [1, 0, 1, 1], "!=": [1, 0, 1, 1], "~=": [1, 0, 1, 1],
}


def rejects(block, *values, param):
    with pytest.raises(nc.DiagramError) as err:
        one(block, *values)
    assert err.value.code == "param_value" and err.value.param == param
    return err.value


# ----------------------------------------------------------------------------- compareToConstant / Zero

@pytest.mark.parametrize("op", sorted(TABLE))
def test_compare_to_constant_every_spelling_vector(op):
    assert one(blk("b", "compareToConstant", relop=op, const=0), U).tolist() == TABLE[op]


@pytest.mark.parametrize("op", sorted(TABLE))
def test_compare_to_zero_every_spelling_scalar(op):
    got = [one(blk("b", "compareToZero", relop=op), u)[0] for u in U]
    assert got == TABLE[op]


def test_compare_to_constant_default_is_ge_0_and_time_varying():
    assert one(blk("b", "compareToConstant"), [-0.5, 0.0, 0.5]).tolist() == [0.0, 1.0, 1.0]
    y = drive(blk("b", "compareToConstant", relop="gt", const=1.5), {0: ramp(10.0)}, duration=0.3)
    assert y[:, 0].tolist() == [0.0, 0.0, 1.0, 1.0]


def test_compare_to_zero_default_is_ne():
    assert one(blk("b", "compareToZero"), [-2.0, 0.0, -0.0, 3.0]).tolist() == [1.0, 0.0, 0.0, 1.0]


def test_compare_const_from_a_variable_expression():
    y = trace(diagram([const([1.0, 2.0, 3.0]), blk("b", "compareToConstant", relop="==", const="k+1"),
                       record()], [wire("c", "b"), wire("b", "w")], duration=0.1, variables={"k": 1}))
    assert y.tolist() == [[0.0, 1.0, 0.0]] * 2


@pytest.mark.parametrize("kind", ["compareToConstant", "compareToZero"])
def test_compare_unconnected_writes_nothing(kind):
    assert drive(blk("b", kind, relop="le", inputs=1), {}).tolist() == [[0.0]] * 3


@pytest.mark.parametrize("bad", ["GE", "greater", "=>", "<>"])
def test_compare_unknown_relop_is_a_diagram_error(bad):
    err = rejects(blk("b", "compareToConstant", relop=bad), 1.0, param="relop")
    assert "ge" in err.message


# ----------------------------------------------------------------------------- relationalOperator

@pytest.mark.parametrize("op", sorted(TABLE))
def test_relational_every_spelling_vector_against_broadcast_zero(op):
    assert one(blk("b", "relationalOperator", Operator=op), U, 0.0).tolist() == TABLE[op]


def test_relational_default_ge_scalar_and_vector_vector():
    assert one(blk("b", "relationalOperator"), 2.0, 2.0).tolist() == [1.0]
    assert one(blk("b", "relationalOperator", Operator="lt"), [1.0, 2.0, 3.0], [3.0, 2.0, 1.0]).tolist() == \
        [1.0, 0.0, 0.0]
    assert one(blk("b", "relationalOperator", Operator="le"), 2.0, [1.0, 2.0, 3.0]).tolist() == [0.0, 1.0, 1.0]


def test_relational_time_varying():
    y = drive(blk("b", "relationalOperator", Operator="~="), {0: ramp(10.0), 1: const(1.0)})
    assert y[:, 0].tolist() == [1.0, 0.0, 1.0]


@pytest.mark.parametrize("port", [0, 1])
def test_relational_needs_both_inputs(port):
    assert drive(blk("b", "relationalOperator", Operator="le"), {port: const(5.0)}).tolist() == [[0.0]] * 3


def test_relational_unknown_operator():
    rejects(blk("b", "relationalOperator", Operator="AND"), 1.0, 2.0, param="Operator")


@FAST
@given(st.lists(st.floats(allow_nan=True), min_size=2, max_size=4), st.floats(allow_nan=True))
def test_relational_complement_pairs(a, b):
    n = len(a)
    lt = one(blk("b", "relationalOperator", Operator="<"), a, b)
    ge = one(blk("b", "relationalOperator", Operator=">="), a, b)
    eq = one(blk("b", "relationalOperator", Operator="=="), a, b)
    ne = one(blk("b", "relationalOperator", Operator="!="), a, b)
    nan = np.isnan(a) | math.isnan(b)
    np.testing.assert_array_equal(eq + ne, np.ones(n))
    np.testing.assert_array_equal(lt + ge, np.where(nan, 0.0, 1.0))


# ----------------------------------------------------------------------------- intervalTest

@pytest.mark.parametrize("left, right, expected", [
    (1, 1, [0, 1, 1, 1, 0]),
    (0, 1, [0, 0, 1, 1, 0]),
    (1, 0, [0, 1, 1, 0, 0]),
    (0, 0, [0, 0, 1, 0, 0]),
    (True, False, [0, 1, 1, 0, 0]),
])
def test_interval_closure_flags_at_the_bounds(left, right, expected):
    block = blk("b", "intervalTest", LowerLimit=-1, UpperLimit=2, IntervalClosedLeft=left,
                IntervalClosedRight=right)
    assert one(block, [-1.5, -1.0, 0.5, 2.0, 2.5]).tolist() == expected


def test_interval_defaults_scalar_and_nan():
    assert [one(blk("b", "intervalTest"), u)[0] for u in (0.0, 0.5, 1.0, 1.0000001, NAN)] == \
        [1.0, 1.0, 1.0, 0.0, 0.0]


def test_interval_time_varying():
    y = drive(blk("b", "intervalTest", LowerLimit=0.5, UpperLimit=1.5), {0: ramp(10.0)}, duration=0.3)
    assert y[:, 0].tolist() == [0.0, 1.0, 0.0, 0.0]


def test_interval_unconnected_writes_nothing():
    assert drive(blk("b", "intervalTest", inputs=1, LowerLimit=-1), {}).tolist() == [[0.0]] * 3


# ----------------------------------------------------------------------------- logicalOperator

TRUTH = {   # (0,0), (0,1), (1,0), (1,1)
    "AND": [0, 0, 0, 1], "OR": [0, 1, 1, 1], "NAND": [1, 1, 1, 0],
    "NOR": [1, 0, 0, 0], "XOR": [0, 1, 1, 0], "XNOR": [1, 0, 0, 1],
}
PAIRS = [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)]


@pytest.mark.parametrize("op", sorted(TRUTH))
def test_logical_two_input_truth_tables_scalar(op):
    got = [one(blk("b", "logicalOperator", Operator=op), a, b)[0] for a, b in PAIRS]
    assert got == TRUTH[op]


@pytest.mark.parametrize("op", sorted(TRUTH))
def test_logical_truth_tables_vector_and_nonzero_nan(op):
    # -2.5 is true, NaN is false
    a = [NAN, NAN, -2.5, -2.5]
    b = [0.0, 7.0, NAN, 3.0]
    assert one(blk("b", "logicalOperator", Operator=op), a, b).tolist() == TRUTH[op]


def test_logical_default_is_and_and_broadcast():
    assert one(blk("b", "logicalOperator"), [1.0, 0.0, 5.0], 1.0).tolist() == [1.0, 0.0, 1.0]
    assert one(blk("b", "logicalOperator", Operator="OR"), 0.0, [0.0, 2.0]).tolist() == [0.0, 1.0]


def test_logical_not_uses_input_zero_only():
    assert one(blk("b", "logicalOperator", Operator="NOT", inputs=1), [0.0, -0.0, 2.0, NAN]).tolist() == \
        [1.0, 1.0, 0.0, 0.0]          # NOT(NaN) = 0: NOT tests u == 0, it does not use the NaN rule
    assert one(blk("b", "logicalOperator", Operator="NOT"), 0.0, 1.0).tolist() == [1.0]
    # a scalar input 0 is broadcast to the width another (ignored) port sets
    assert one(blk("b", "logicalOperator", Operator="NOT"), 0.0, [1.0, 1.0, 1.0]).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("op, expected", [
    ("AND", 0.0), ("NAND", 1.0), ("OR", 1.0), ("NOR", 0.0), ("XOR", 1.0), ("XNOR", 0.0), ("NOT", 0.0)])
def test_logical_unconnected_second_port_reads_false(op, expected):
    y = drive(blk("b", "logicalOperator", Operator=op), {0: const(1.0)})
    assert y.tolist() == [[expected]] * 3


@pytest.mark.parametrize("op, expected", [
    ("AND", 0.0), ("NAND", 1.0), ("OR", 0.0), ("NOR", 1.0), ("XOR", 0.0), ("XNOR", 1.0), ("NOT", 1.0)])
def test_logical_nothing_connected(op, expected):
    assert drive(blk("b", "logicalOperator", Operator=op), {}).tolist() == [[expected]] * 3


def test_logical_zero_declared_inputs():
    assert drive(blk("b", "logicalOperator", Operator="AND", inputs=0), {}).tolist() == [[1.0]] * 3
    assert drive(blk("b", "logicalOperator", Operator="OR", inputs=0), {}).tolist() == [[0.0]] * 3


def test_logical_three_inputs_parity_and_time_varying():
    assert one(blk("b", "logicalOperator", Operator="XOR", inputs=3), 1.0, 1.0, 1.0).tolist() == [1.0]
    assert one(blk("b", "logicalOperator", Operator="XNOR", inputs=3), 1.0, 1.0, 1.0).tolist() == [0.0]
    y = drive(blk("b", "logicalOperator", Operator="AND", inputs=3),
              {0: ramp(10.0), 1: const(1.0), 2: blk("x", "step", Time=0.15)}, duration=0.3)
    assert y[:, 0].tolist() == [0.0, 0.0, 1.0, 1.0]


def test_logical_operator_names_are_upper_case():
    err = rejects(blk("b", "logicalOperator", Operator="or"), 1.0, 0.0, param="Operator")
    assert "did you mean 'OR'" in err.message
    rejects(blk("b", "logicalOperator", Operator="IMPLIES"), 1.0, 0.0, param="Operator")


@FAST
@given(st.sampled_from(sorted(TRUTH)),
       st.lists(st.lists(st.sampled_from([0.0, 1.0, -3.0, NAN]), min_size=3, max_size=3), min_size=1, max_size=4))
def test_logical_matches_a_reference_reduction(op, ports):
    truth = [[not (math.isnan(v) or v == 0.0) for v in p] for p in ports]
    expected = []
    for k in range(3):
        column = [t[k] for t in truth]
        count = sum(column)
        expected.append({"AND": all(column), "OR": any(column), "NAND": not all(column),
                         "NOR": not any(column), "XOR": count % 2 == 1, "XNOR": count % 2 == 0}[op])
    got = one(blk("b", "logicalOperator", Operator=op, inputs=len(ports)), *ports)
    assert got.tolist() == [float(e) for e in expected]


@pytest.mark.parametrize("block", [
    blk("b", "compareToZero"), blk("b", "intervalTest"), blk("b", "logicalOperator", Operator="XOR"),
    blk("b", "relationalOperator", Operator="gt")])
@pytest.mark.parametrize("value", [2.0, [2.0, 0.0]])
def test_outputs_are_plain_floats_not_booleans(block, value):
    n = block["type"] in ("logicalOperator", "relationalOperator")
    blocks = [const(value), block, record()]
    conns = [wire("c", "b", 0, 0), wire("b", "w")] + ([wire("c", "b", 0, 1)] if n else [])
    rows = run(diagram(blocks, conns, duration=0.1))["workspace"]["y"]
    assert all(type(v) is float and v in (0.0, 1.0) for row in rows for v in row)


def both_paths(block, values):
    """The vector output and, element by element, the scalar one (they must agree)."""
    vector = one(block, values).tolist()
    scalar = [one(block, v)[0] for v in values]
    assert scalar == vector
    return vector


# ----------------------------------------------------------------------------- and / or / xor / not

A = [0.0, 0.0, 1.0, 1.0, NAN, -2.0, NAN]
B = [0.0, 3.0, 0.0, 0.5, 1.0, NAN, NAN]


def test_and_or_xor_truth_tables_vector():
    # true = nonzero and not NaN
    assert one(blk("b", "and"), A, B).tolist() == [0, 0, 0, 1, 0, 0, 0]
    assert one(blk("b", "or"), A, B).tolist() == [0, 1, 1, 1, 1, 1, 0]
    assert one(blk("b", "xor"), A, B).tolist() == [0, 1, 1, 0, 1, 1, 0]


@pytest.mark.parametrize("kind,expected", [("and", [0, 0, 0, 1, 0, 0, 0]), ("or", [0, 1, 1, 1, 1, 1, 0]),
                                           ("xor", [0, 1, 1, 0, 1, 1, 0])])
def test_and_or_xor_scalar_path(kind, expected):
    assert [one(blk("b", kind), a, b)[0] for a, b in zip(A, B)] == expected


def test_and_or_xor_broadcast_and_many_inputs():
    assert one(blk("b", "and"), [1.0, 0.0, 2.0], 1.0).tolist() == [1.0, 0.0, 1.0]
    assert one(blk("b", "or"), 0.0, [0.0, 5.0]).tolist() == [0.0, 1.0]
    assert one(blk("b", "xor", inputs=3), 1.0, 1.0, 1.0).tolist() == [1.0]     # parity of three
    assert one(blk("b", "and", inputs=4), 1.0, 2.0, -3.0, 4.0).tolist() == [1.0]


def test_unconnected_inputs_read_zero():
    assert drive(blk("b", "and"), {0: const(1.0)}).tolist() == [[0.0]] * 3
    assert drive(blk("b", "and"), {0: const([1.0, 1.0])}).tolist() == [[0.0, 0.0]] * 3
    assert drive(blk("b", "or"), {1: const(2.0)}).tolist() == [[1.0]] * 3
    assert drive(blk("b", "xor", inputs=3), {0: const(1.0), 2: const(1.0)}).tolist() == [[0.0]] * 3
    assert drive(blk("b", "or"), {}).tolist() == [[0.0]] * 3
    assert drive(blk("b", "not", inputs=1), {}).tolist() == [[1.0]] * 3


def test_not_nan_is_one_unlike_logical_operator():
    assert both_paths(blk("b", "not"), [0.0, -0.0, NAN, 2.0, -INF]) == [1.0, 1.0, 1.0, 0.0, 0.0]


def test_and_on_pulses_over_time():
    y = drive(blk("b", "and"), {0: ramp(10.0), 1: blk("p", "step", Time=0.15)}, duration=0.3)
    assert y[:, 0].tolist() == [0.0, 0.0, 1.0, 1.0]


@FAST
@given(st.lists(st.sampled_from([0.0, 1.0, -2.5, NAN]), min_size=2, max_size=4))
def test_boolean_laws(values):
    n = len(values)
    truth = [v != 0.0 and v == v for v in values]
    assert one(blk("b", "and", inputs=n), *values).tolist() == [float(all(truth))]
    assert one(blk("b", "or", inputs=n), *values).tolist() == [float(any(truth))]
    assert one(blk("b", "xor", inputs=n), *values).tolist() == [float(sum(truth) % 2)]
    assert one(blk("b", "not"), values).tolist() == [float(not t) for t in truth]


# ----------------------------------------------------------------------------- intervalTestDynamic

def test_interval_test_dynamic_bounds_from_signals():
    y = drive(blk("b", "intervalTestDynamic", inputs=3),
              {0: const(1.0), 1: ramp(10.0), 2: blk("k", "constant", Value=3.5)}, duration=0.4)
    assert y[:, 0].tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]       # u = 0, 1, 2, 3, 4 in [1, 3.5]


def test_interval_test_dynamic_open_sides_vector_bounds_and_broadcast():
    u = [1.0, 2.0, 3.0, NAN]
    assert one(blk("b", "intervalTestDynamic"), 1.0, u, 3.0).tolist() == [1, 1, 1, 0]
    assert one(blk("b", "intervalTestDynamic", IntervalClosedLeft=0), 1.0, u, 3.0).tolist() == [0, 1, 1, 0]
    assert one(blk("b", "intervalTestDynamic", IntervalClosedRight=0), 1.0, u, 3.0).tolist() == [1, 1, 0, 0]
    # per-element bounds, and a scalar u against vector bounds
    assert one(blk("b", "intervalTestDynamic"), [0.0, 3.0], [1.0, 1.0], [2.0, 4.0]).tolist() == [1.0, 0.0]
    assert one(blk("b", "intervalTestDynamic"), [0.0, 3.0], 2.0, 5.0).tolist() == [1.0, 0.0]


@pytest.mark.parametrize("missing", [0, 1, 2])
def test_interval_test_dynamic_needs_all_three(missing):
    sources = {p: const(1.0) for p in range(3) if p != missing}
    assert drive(blk("b", "intervalTestDynamic"), sources).tolist() == [[0.0]] * 3


# ----------------------------------------------------------------------------- bit blocks

def llround(x: float) -> int:
    """Reference llround (x86-64): halves away from zero; NaN/inf/overflow -> INT64_MIN."""
    if not math.isfinite(x):
        return INT64_MIN
    r = math.floor(abs(x) + 0.5) if abs(x) < 2 ** 52 else abs(x)
    r = int(math.copysign(r, x)) if r else 0
    return r if -2 ** 63 <= r < 2 ** 63 else INT64_MIN


def test_bitwise_operator_page_example_and_all_operations():
    # x = 12 = 0b1100, mask 10 = 0b1010, 8 bits
    for op, expected in [("AND", 8), ("OR", 14), ("XOR", 6), ("NAND", 0xF7), ("NOR", 0xF1), ("NOT", 0xF3)]:
        assert one(blk("b", "bitwiseOperator", Operation=op, BitMask=10, NumBits=8), 12.0).tolist() == [expected]


def test_bitwise_operator_negative_and_rounded_inputs_vector():
    # -1 is all ones (two's complement), masked to 8 bits; 2.5 rounds to 3, -2.5 to -3 (0xFD)
    assert both_paths(blk("b", "bitwiseOperator", Operation="AND", BitMask=255, NumBits=8),
                      [-1.0, 2.5, -2.5, 300.0, 0.49]) == [255.0, 3.0, 253.0, 44.0, 0.0]
    # NaN becomes INT64_MIN (0x8000000000000000): with fewer than 64 bits nothing is left of it
    assert both_paths(blk("b", "bitwiseOperator", Operation="OR", BitMask=1, NumBits=8), [NAN, INF]) == [1.0, 1.0]
    assert both_paths(blk("b", "bitwiseOperator", Operation="AND", BitMask=0, NumBits=64), [NAN]) == [0.0]
    assert both_paths(blk("b", "bitwiseOperator", Operation="NOT", NumBits=64), [NAN, -1.0]) == \
        [float(2 ** 63 - 1), 0.0]


def test_bitwise_operator_num_bits_clamps_and_default_and_unconnected():
    assert one(blk("b", "bitwiseOperator", Operation="NOT", NumBits=0), 0.0).tolist() == [1.0]   # < 1 -> 1 bit
    assert one(blk("b", "bitwiseOperator", Operation="NOT", NumBits=3.9), 0.0).tolist() == [7.0]  # floor
    assert one(blk("b", "bitwiseOperator", Operation="NOT"), 0.0).tolist() == [float(2 ** 32 - 1)]
    assert one(blk("b", "bitwiseOperator", BitMask=0xFF), 0x1234).tolist() == [0x34]   # default AND, 32 bits
    assert drive(blk("b", "bitwiseOperator", inputs=1), {}).tolist() == [[0.0]] * 3
    with pytest.raises(nc.DiagramError):
        one(blk("b", "bitwiseOperator", Operation="SHL"), 1.0)


def test_bit_set_and_clear():
    assert both_paths(blk("b", "bitSet", BitIndex=1, NumBits=8), [8.0, 2.0, 255.0, -1.0]) == [10.0, 2.0, 255.0, 255.0]
    assert both_paths(blk("b", "bitClear", BitIndex=3, NumBits=8), [8.0, 255.0, 7.0, -1.0]) == [0.0, 247.0, 7.0, 247.0]
    # an index outside 0..63, or past NumBits, changes nothing but the masking
    assert one(blk("b", "bitSet", BitIndex=64, NumBits=8), 300.0).tolist() == [44.0]
    assert one(blk("b", "bitSet", BitIndex=-1, NumBits=8), 4.0).tolist() == [4.0]
    assert one(blk("b", "bitSet", BitIndex=9, NumBits=8), 4.0).tolist() == [4.0]
    assert one(blk("b", "bitSet", BitIndex=63, NumBits=64), 0.0).tolist() == [float(2 ** 63)]
    assert one(blk("b", "bitClear", BitIndex=2.5, NumBits=8), 15.0).tolist() == [7.0]    # llround(2.5) = 3
    assert drive(blk("b", "bitSet", inputs=1), {}).tolist() == [[0.0]] * 3
    assert drive(blk("b", "bitClear", inputs=1), {}).tolist() == [[0.0]] * 3


def test_extract_bits_keep_weight_versus_right_aligned():
    # 180 = 0b10110100, bits 4..7 = 0b1011 = 11; at their weight 11 * 16 = 176
    assert one(blk("b", "extractBits", StartBit=4, NumBitsToExtract=4, NumBits=8), 180.0).tolist() == [176.0]
    assert one(blk("b", "extractBits", StartBit=4, NumBitsToExtract=4, NumBits=8, OutputScaling="rightAligned"),
               180.0).tolist() == [11.0]
    # the handler's own comment: bits 2..5 of 214 read 20 at their weight, 5 right-aligned
    assert both_paths(blk("b", "extractBits", StartBit=2, NumBitsToExtract=4), [214.0, -1.0]) == [20.0, 60.0]
    assert both_paths(blk("b", "extractBits", StartBit=2, NumBitsToExtract=4, OutputScaling="rightAligned"),
                      [214.0, -1.0]) == [5.0, 15.0]


def test_extract_bits_clamps_start_and_count():
    # default NumBitsToExtract 8 from bit 0 of a 32-bit word
    assert one(blk("b", "extractBits"), 0x1234).tolist() == [0x34]
    assert one(blk("b", "extractBits", StartBit=-3, NumBitsToExtract=0), 7.0).tolist() == [1.0]   # start 0, 1 bit
    assert one(blk("b", "extractBits", StartBit=63, NumBitsToExtract=100, NumBits=64), -1.0).tolist() == \
        [float(2 ** 63)]
    assert one(blk("b", "extractBits", StartBit=0, NumBitsToExtract=64, NumBits=64), -1.0).tolist() == \
        [float(2 ** 64 - 1)]
    assert drive(blk("b", "extractBits", inputs=1), {}).tolist() == [[0.0]] * 3


def test_shift_arithmetic_left_right_and_wrap():
    assert one(blk("b", "shiftArithmetic", ShiftDirection="Left", ShiftNumber=3), 5.0).tolist() == [40.0]
    assert both_paths(blk("b", "shiftArithmetic", ShiftDirection="Right", ShiftNumber=1),
                      [5.0, -5.0, -1.0, 2.5]) == [2.0, -3.0, -1.0, 1.0]          # floor division by 2
    assert both_paths(blk("b", "shiftArithmetic", ShiftNumber=62), [3.0, -1.0]) == \
        [float(-2 ** 62), float(-2 ** 62)]                                       # 64-bit wrap
    # a negative count shifts the other way; the count is clamped to 62
    assert one(blk("b", "shiftArithmetic", ShiftDirection="Right", ShiftNumber=-2), 3.0).tolist() == [12.0]
    assert one(blk("b", "shiftArithmetic", ShiftDirection="Right", ShiftNumber=100), -8.0).tolist() == [-1.0]
    assert one(blk("b", "shiftArithmetic"), 7.0).tolist() == [14.0]               # default Left 1
    assert drive(blk("b", "shiftArithmetic", inputs=1), {}).tolist() == [[0.0]] * 3


def test_shift_arithmetic_nan_is_int64_min():
    assert both_paths(blk("b", "shiftArithmetic", ShiftDirection="Right", ShiftNumber=62), [NAN]) == [-2.0]
    assert both_paths(blk("b", "shiftArithmetic", ShiftNumber=1), [NAN]) == [0.0]


@FAST
@given(st.integers(-2 ** 40, 2 ** 40), st.integers(0, 62), st.sampled_from(["Left", "Right"]))
def test_shift_arithmetic_is_multiply_or_floor_divide(x, n, direction):
    got = one(blk("b", "shiftArithmetic", ShiftDirection=direction, ShiftNumber=n), float(x))[0]
    if direction == "Right":
        expected = x // 2 ** n
    else:
        expected = (x * 2 ** n) % 2 ** 64
        expected -= 2 ** 64 if expected >= 2 ** 63 else 0
    assert got == float(expected)


@FAST
@given(st.floats(min_value=-1e12, max_value=1e12), st.integers(1, 64), st.integers(0, 63),
       st.sampled_from(["AND", "OR", "XOR", "NAND", "NOR", "NOT"]))
def test_bitwise_operator_matches_integer_reference(u, num_bits, mask, op):
    fm = (1 << num_bits) - 1 if num_bits < 64 else 2 ** 64 - 1
    x = llround(u) & fm
    m = llround(float((1 << mask) | 5)) & fm        # the mask as the double the diagram carries
    expected = {"AND": x & m, "OR": x | m, "XOR": x ^ m, "NAND": ~(x & m), "NOR": ~(x | m), "NOT": ~x}[op] & fm
    got = one(blk("b", "bitwiseOperator", Operation=op, BitMask=float((1 << mask) | 5), NumBits=num_bits), u)
    assert got.tolist() == [float(expected)]


# ----------------------------------------------------------------------------- combinatorialLogic

def test_combinatorial_logic_msb_first_index():
    table = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0]
    assert one(blk("b", "combinatorialLogic", TruthTable=table), [1.0, 0.0, 0.0]).tolist() == [14.0]
    assert one(blk("b", "combinatorialLogic", TruthTable=table), [0.0, 1.0, 1.0]).tolist() == [13.0]
    # nonzero is 1, NaN included (NaN != 0)
    assert one(blk("b", "combinatorialLogic", TruthTable=table), [NAN, -0.5, 0.0]).tolist() == [16.0]


def test_combinatorial_logic_scalar_input_short_table_and_unconnected():
    assert one(blk("b", "combinatorialLogic"), 0.0).tolist() == [0.0]
    assert one(blk("b", "combinatorialLogic"), 3.0).tolist() == [1.0]
    assert one(blk("b", "combinatorialLogic", TruthTable=[5.0]), 1.0).tolist() == [0.0]      # index past the end
    assert one(blk("b", "combinatorialLogic", TruthTable=[1, 2, 3]), [1.0, 1.0]).tolist() == [0.0]
    assert one(blk("b", "combinatorialLogic", TruthTable=[]), [0.0, 0.0]).tolist() == [0.0]
    assert drive(blk("b", "combinatorialLogic", inputs=1), {}).tolist() == [[0.0]] * 3


def test_combinatorial_logic_xor_over_time():
    # a 2-wide signal made with mux: [step, ramp > 0]
    blocks = [blk("s", "step", Time=0.15), blk("r", "ramp", slope=1.0, start=0.05), blk("m", "mux", Inputs=2),
              blk("b", "combinatorialLogic", TruthTable=[0, 1, 1, 0]), record()]
    conns = [wire("s", "m", 0, 0), wire("r", "m", 0, 1), wire("m", "b"), wire("b", "w")]
    y = trace(diagram(blocks, conns, duration=0.3))
    # t = 0: [0, 0] -> 0; 0.1: [0, 0.05] -> 1; 0.2: [1, x] -> 0; 0.3: 0
    assert y[:, 0].tolist() == [0.0, 1.0, 0.0, 0.0]


@FAST
@given(st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=6))
def test_combinatorial_logic_index_is_the_binary_number(bits):
    table = list(range(2 ** len(bits)))
    expected = int("".join("1" if b else "0" for b in bits), 2)
    got = one(blk("b", "combinatorialLogic", TruthTable=table), bits if len(bits) > 1 else bits[0])
    assert got.tolist() == [float(expected)]


# ----------------------------------------------------------------------------- declared port counts

@pytest.mark.parametrize("kind,expected", [
    ("and", 1.0), ("or", 0.0), ("xor", 0.0), ("not", 1.0), ("intervalTestDynamic", 0.0),
    ("bitwiseOperator", 0.0), ("bitSet", 0.0), ("bitClear", 0.0), ("extractBits", 0.0),
    ("shiftArithmetic", 0.0), ("combinatorialLogic", 0.0),
])
def test_blocks_declared_without_ports(kind, expected):
    # and / or / xor reduce over zero ports (empty AND is true); the others read an
    # unconnected input (not: 0 -> 1; the rest write nothing)
    assert drive(blk("b", kind, inputs=0), {}).tolist() == [[expected]] * 3
    res = nc.simulate(diagram([const(2.0), blk("b", kind, outputs=0)], [wire("c", "b")], duration=0.1))
    assert res["status"] == "ok"


def test_not_broadcasts_a_scalar_input_to_a_wider_declared_port():
    assert one(blk("b", "not", inputs=2), 0.0, [5.0, 6.0]).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("kind,params,expected", [
    ("bitSet", {"BitIndex": 1, "NumBits": 8}, 10.0), ("shiftArithmetic", {"ShiftNumber": 3}, 64.0),
])
def test_bit_blocks_broadcast_a_scalar_input_to_a_wider_declared_port(kind, params, expected):
    assert one(blk("b", kind, inputs=2, **params), 8.0, [1.0, 2.0]).tolist() == [expected, expected]


def error_of(d, **kw):
    with pytest.raises(nc.NFlowError) as info:
        nc.simulate(d, **kw)
    return info.value


def outputs(block, *values, n=None):
    """Every output (0..n-1) of ``block`` (id 'b') at t = 0, fed by constants."""
    n = n or block.get("outputs", 2)
    blocks = [blk(f"c{k}", "constant", Value=v) for k, v in enumerate(values)] + [block]
    blocks += [record(f"w{p}", f"y{p}") for p in range(n)]
    conns = [wire(f"c{k}", "b", 0, k) for k in range(len(values))] + [wire("b", f"w{p}", p) for p in range(n)]
    ws = nc.simulate(diagram(blocks, conns, duration=0.1))["workspace"]
    return [ws[f"y{p}"][0][0] for p in range(n)]


# ----------------------------------------------------------------------------- if

@pytest.mark.parametrize("expr, u, expect", [
    ("u1 > 0", (1.0,), 1.0), ("u1 > 0", (0.0,), 0.0), ("u1 >= 0", (0.0,), 1.0),
    ("u1 < u2", (1.0, 2.0), 1.0), ("u1 <= u2", (2.0, 2.0), 1.0), ("u1 == u2", (2.0, 2.0), 1.0),
    ("u1 ~= u2", (2.0, 2.0), 0.0), ("u1 != u2", (1.0, 2.0), 1.0),
    ("u1 > 0 & u2 > 0", (1.0, -1.0), 0.0), ("u1 > 0 | u2 > 0", (1.0, -1.0), 1.0),
    ("u1 > 0 && u2 > 0", (1.0, 1.0), 1.0), ("~(u1 > 0)", (1.0, 0.0), 0.0), ("!u1", (0.0, 0.0), 1.0),
    ("-u1 > 0", (-2.0, 0.0), 1.0), ("u1 > -2", (-1.0, 0.0), 1.0),
    # MATLAB precedence: comparisons before &, & before |
    ("u1 > 0 | u2 > 0 & u1 < 0", (1.0, 1.0), 1.0), ("(u1 > 0 | u2 > 0) & u1 < 0", (1.0, 1.0), 0.0),
    ("u1 < u2 < 0.5", (3.0, 2.0), 1.0),          # (3 < 2) = 0, then 0 < 0.5
    ("u1", (2.5, 0.0), 1.0), ("u1 & 1", (float("nan"), 0.0), 0.0),     # NaN is false
    ("u1 > 1e-3", (2e-3, 0.0), 1.0), ("u1 < inf", (1e300, 0.0), 1.0), ("u1 == K", (4.0, 0.0), 1.0),
])
def test_if_expression_grammar(expr, u, expect):
    b = blk("b", "if", IfExpression=expr, ShowElse="off", inputs=2, outputs=1)
    d_vars = {"K": 4}
    blocks = [blk(f"c{k}", "constant", Value=v) for k, v in enumerate(u)] + [b, record()]
    conns = [wire(f"c{k}", "b", 0, k) for k in range(len(u))] + [wire("b", "w")]
    y = nc.simulate(diagram(blocks, conns, duration=0.1, variables=d_vars))["workspace"]["y"][0][0]
    assert y == expect


def test_if_elseif_and_else_outputs():
    b = blk("b", "if", IfExpression="u1 > 10", ElseIfExpressions="u1 > 5, u1 > 0", inputs=1, outputs=4)
    assert outputs(b, 20.0) == [1.0, 0.0, 0.0, 0.0]    # first true clause only
    assert outputs(b, 7.0) == [0.0, 1.0, 0.0, 0.0]
    assert outputs(b, 3.0) == [0.0, 0.0, 1.0, 0.0]
    assert outputs(b, -1.0) == [0.0, 0.0, 0.0, 1.0]    # else
    listed = blk("b", "if", IfExpression="u1 > 10", ElseIfExpressions=["u1 > 5"], ShowElse="off",
                 inputs=1, outputs=2)
    assert outputs(listed, -1.0) == [0.0, 0.0]          # no else: nothing fires


def test_if_over_a_ramp():
    b = blk("b", "if", IfExpression="u1 >= 0.3", inputs=1, outputs=2)
    y = drive(b, {0: blk("r", "ramp", slope=1)}, duration=0.5)
    assert y.ravel().tolist() == [0, 0, 0, 1, 1, 1]


@pytest.mark.parametrize("expr, code", [
    ("u1 >", "if_expression"), ("u3 > 0", "if_expression"), ("v > 0", "if_expression"),
    ("u1 + 1 > 0", "if_expression"), ("(u1 > 0", "if_expression"), ("", "if_expression"),
    ("u1 ** 2", "if_expression"), ("u0 > 1", "if_expression"),
])
def test_if_expression_errors(expr, code):
    b = blk("b", "if", IfExpression=expr, inputs=2, outputs=2)
    err = error_of(diagram([blk("c", "constant"), b, record()], [wire("c", "b"), wire("b", "w")]))
    assert isinstance(err, nc.DiagramError) and err.code == code
    assert err.param == "IfExpression" and err.path == "/blocks/1/params/IfExpression"


def test_if_never_evaluates_code():
    b = blk("b", "if", IfExpression="__import__('os').system('true')", inputs=1, outputs=2)
    assert error_of(diagram([b], [])).code == "if_expression"


def test_if_rejects_vector_inputs():
    b = blk("b", "if", inputs=1, outputs=2)
    err = error_of(diagram([blk("c", "constant", Value=[1, 2]), b], [wire("c", "b")]))
    assert err.code == "width_mismatch"


@settings(max_examples=60, deadline=None)
@given(a=st.floats(-5, 5), b=st.floats(-5, 5), lo=st.floats(-5, 5))
def test_if_clauses_partition_the_inputs(a, b, lo):
    """With an else output, exactly one output is 1 and it is the first true clause."""
    block = blk("b", "if", IfExpression=f"u1 > {lo!r}", ElseIfExpressions=f"u2 <= {lo!r} | u1 == u2",
                inputs=2, outputs=3)
    y = outputs(block, a, b)
    assert sorted(y) == [0.0, 0.0, 1.0]
    first = 0 if a > lo else 1 if (b <= lo or a == b) else 2
    assert y[first] == 1.0


# ----------------------------------------------------------------------------- switchCase

@pytest.mark.parametrize("u, expect", [
    (1.0, [1, 0, 0]), (7.0, [0, 1, 0]), (9.0, [0, 1, 0]), (4.0, [0, 1, 0]),
    (7.9, [0, 1, 0]), (1.99, [1, 0, 0]),           # truncated toward zero
    (-1.7, [0, 0, 1]), (2.0, [0, 0, 1]), (float("nan"), [0, 0, 1]), (float("inf"), [0, 0, 1]),
])
def test_switch_case_matches_the_truncated_input(u, expect):
    b = blk("b", "switchCase", CaseConditions="{1, [7 9 4]}", inputs=1, outputs=3)
    assert outputs(b, u) == expect


@pytest.mark.parametrize("cases", ["{-1, [7 9 4]}", [-1, [7, 9, 4]], "{-1 [7 9 4]}", "{-1; [7, 9, 4]}",
                                   "{K, [7 9 4]}"])
def test_switch_case_condition_shapes(cases):
    b = blk("b", "switchCase", CaseConditions=cases, inputs=1, outputs=3)
    blocks = [blk("c", "constant", Value=-1.5), b] + [record(f"w{p}", f"y{p}") for p in range(3)]
    conns = [wire("c", "b")] + [wire("b", f"w{p}", p) for p in range(3)]
    ws = nc.simulate(diagram(blocks, conns, duration=0.1, variables={"K": -1}))["workspace"]
    assert [ws[f"y{p}"][0][0] for p in range(3)] == [1.0, 0.0, 0.0]   # trunc(-1.5) = -1


def test_switch_case_first_case_wins_and_default_off():
    b = blk("b", "switchCase", CaseConditions="{[1 2], 2, 3}", ShowDefaultCase="off", inputs=1, outputs=3)
    assert outputs(b, 2.0) == [1.0, 0.0, 0.0]
    assert outputs(b, 3.0) == [0.0, 0.0, 1.0]
    assert outputs(b, 5.0) == [0.0, 0.0, 0.0]


def test_switch_case_many_values_and_the_default_param():
    b = blk("b", "switchCase", CaseConditions=[list(range(40)), [100]], inputs=1, outputs=3)
    assert outputs(b, 39.5) == [1.0, 0.0, 0.0] and outputs(b, 100.0) == [0.0, 1.0, 0.0]
    default = blk("b", "switchCase", inputs=1, outputs=2)   # CaseConditions '{1}', default case on
    assert outputs(default, 1.0) == [1.0, 0.0] and outputs(default, 0.0) == [0.0, 1.0]


@pytest.mark.parametrize("cases, code", [("{1.5}", "param_value"), ("{[1 2}", "bad_expression"),
                                         ([[1, "a"]], "param_type")])
def test_switch_case_errors(cases, code):
    b = blk("b", "switchCase", CaseConditions=cases, inputs=1, outputs=2)
    err = error_of(diagram([b], []))
    assert isinstance(err, nc.DiagramError) and err.code == code
    assert err.path == "/blocks/0/params/CaseConditions"
