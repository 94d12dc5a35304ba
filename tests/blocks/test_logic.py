"""Logic library handlers: compareToConstant, compareToZero, intervalTest,
relationalOperator, logicalOperator. Outputs are 1.0 / 0.0 floats."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from tests.util import blk, const, diagram, drive, one, ramp, record, run, trace, wire

NAN = math.nan
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
