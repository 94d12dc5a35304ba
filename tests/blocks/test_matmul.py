"""matmul (nflow's matrix/matmul.cpp): column-major matrix product and element-wise product,
nflow's dimension errors, and the handler's scalar-operand rule."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from nflow_compat.blocks import REGISTRY, load_all
from nflow_compat.blocks.math import _matmul_shapes
from nflow_compat.diagram import parse
from nflow_compat.errors import DiagramError
from nflow_compat.signals import Shaped, dims_of

from tests.util import blk, diagram, record, wire


def product(a, b, duration=0.1, **params):
    """The recorded N x W output of matmul(constant a, constant b) (None = unconnected)."""
    blocks, conns = [blk("m", "matmul", **params), record()], [wire("m", "w")]
    for port, (id, value) in enumerate((("a", a), ("b", b))):
        if value is not None:
            blocks.append(blk(id, "constant", Value=value))
            conns.append(wire(id, "m", 0, port))
    res = nc.simulate(diagram(blocks, conns, duration=duration))
    return res["workspace"]["y"], res["warnings"]


def first(a, b, **params):
    return product(a, b, **params)[0][0]


def fails(a, b, code, match, param=None, **params):
    with pytest.raises(DiagramError) as err:
        product(a, b, **params)
    assert err.value.code == code
    assert match in err.value.message
    if param:
        assert err.value.param == param


def colmajor(m) -> list:
    return np.asarray(m, dtype=float).reshape(-1, order="F").tolist()


# ----------------------------------------------------------------------------- matrix rule

def test_matrix_times_column():
    # [[1 2]; [3 4]] (column-major 1 3 2 4) * [5; 6] = [17; 39]
    assert first([[1, 2], [3, 4]], [5, 6], ADimensions=[2, 2]) == [17.0, 39.0]


def test_rectangular_product_is_column_major():
    a = [[1, 2, 3], [4, 5, 6]]
    b = [[7, 8], [9, 10], [11, 12]]
    y = first(a, b, ADimensions=[2, 3], BDimensions=[3, 2])
    assert y == colmajor([[58, 64], [139, 154]]) == [58.0, 139.0, 64.0, 154.0]


def test_row_times_column_is_a_scalar_and_column_times_row_an_outer_product():
    assert product([1, 2, 3], [4, 5, 6], ADimensions=[1, 3])[0] == [[32.0], [32.0]]
    assert first([1, 2, 3], [10, 20], BDimensions=[1, 2]) == colmajor(np.outer([1, 2, 3], [10, 20]))


def test_default_rule_is_matrix():
    assert first([[1, 2], [3, 4]], [[1, 0], [0, 1]], ADimensions=[2, 2], BDimensions=[2, 2]) == [1.0, 3.0, 2.0, 4.0]
    assert first([[1, 2], [3, 4]], [[1, 0], [0, 1]], ADimensions=[2, 2], BDimensions=[2, 2],
                 MultiplicationRule="matrix") == [1.0, 3.0, 2.0, 4.0]


def test_trailing_singleton_dims_are_two_dimensional():
    assert first([[1, 2], [3, 4]], [5, 6], ADimensions=[2, 2, 1]) == [17.0, 39.0]


# ----------------------------------------------------------------------------- errors

def test_dimension_mismatch_names_both_shapes():
    fails([[1, 2], [3, 4]], [1, 2, 3], "width_mismatch", "matrix product dimension mismatch: [2x2] * [3x1]",
          ADimensions=[2, 2])
    # two undeclared vectors are two columns: [3x1] * [3x1]
    fails([1, 2, 3], [4, 5, 6], "width_mismatch", "matrix product dimension mismatch: [3x1] * [3x1]")


def test_matrix_product_requires_2d_inputs():
    fails(list(range(8)), [[1, 2], [3, 4]], "width_mismatch", "matrix product requires 2-D inputs",
          ADimensions=[2, 2, 2], BDimensions=[2, 2])


def test_declared_dims_must_match_the_width():
    fails([1, 2, 3, 4], [1, 2], "width_mismatch", "ADimensions [2, 3] has 6 elements but input 0 has width 4",
          param="ADimensions", ADimensions=[2, 3])
    fails([1, 2, 3, 4], [1, 2], "param_value", "positive whole dimensions", param="BDimensions",
          BDimensions=[0.5, 4])


def test_elementwise_requires_equal_dims():
    fails([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6], "width_mismatch", "elementwise matmul requires equal input "
          "dimensions", MultiplicationRule="elementwise", ADimensions=[2, 3], BDimensions=[3, 2])
    fails([1, 2, 3], [1, 2], "width_mismatch", "elementwise matmul requires equal input dimensions",
          MultiplicationRule=".*")


# ----------------------------------------------------------------------------- elementwise

@pytest.mark.parametrize("rule", ["elementwise", ".*", "element-wise"])
def test_elementwise_spellings(rule):
    assert first([1, 2, 3], [4, 5, -6], MultiplicationRule=rule) == [4.0, 10.0, -18.0]


def test_elementwise_broadcasts_a_scalar_and_keeps_shape():
    assert first(2.0, [4, 5, 6], MultiplicationRule="elementwise") == [8.0, 10.0, 12.0]
    assert first([[1, 2], [3, 4]], [[1, 2], [3, 4]], MultiplicationRule="elementwise",
                 ADimensions=[2, 2], BDimensions=[2, 2]) == [1.0, 9.0, 4.0, 16.0]
    assert product(3.0, -2.0, MultiplicationRule="elementwise")[0] == [[-6.0], [-6.0]]


# ----------------------------------------------------------------------------- scalar operands (handler rule)

def test_scalar_times_matrix_sums_each_column():
    # nflow's loop runs t over B's rows with a(r, t) = s: element (r, c) = s * sum_t B(t, c)
    assert first(2.0, [[1, 2], [3, 4]], BDimensions=[2, 2]) == [8.0, 8.0, 12.0, 12.0]
    assert first(2.0, [1, 2, 3]) == [12.0, 12.0, 12.0]


def test_matrix_times_scalar_sums_each_row():
    assert first([[1, 2], [3, 4]], 2.0, ADimensions=[2, 2]) == [6.0, 14.0, 6.0, 14.0]
    assert first([1, 2, 3], 2.0, ADimensions=[1, 3]) == [12.0, 12.0, 12.0]


def test_column_times_scalar_and_scalar_times_scalar_are_plain_products():
    assert first([1, 2, 3], 2.0) == [2.0, 4.0, 6.0]
    assert product(3.0, -2.0)[0] == [[-6.0], [-6.0]]


def test_unconnected_inputs_read_zero():
    assert first(None, [1, 2]) == [0.0, 0.0]
    assert first([1, 2], None) == [0.0, 0.0]
    assert product(None, None)[0] == [[0.0], [0.0]]


# ----------------------------------------------------------------------------- dims that travel

def test_product_dims_flow_into_the_next_matmul_through_a_gain():
    # (A*B) is 2x2; gain keeps its width object, so the next matmul knows it is 2x2
    blocks = [blk("a", "constant", Value=[[1, 2], [3, 4]]), blk("i", "constant", Value=[[1, 0], [0, 1]]),
              blk("m1", "matmul", ADimensions=[2, 2], BDimensions=[2, 2]), blk("g", "gain", Gain=2),
              blk("v", "constant", Value=[1, 1]), blk("m2", "matmul"), record()]
    conns = [wire("a", "m1", 0, 0), wire("i", "m1", 0, 1), wire("m1", "g"), wire("g", "m2", 0, 0),
             wire("v", "m2", 0, 1), wire("m2", "w")]
    assert nc.simulate(diagram(blocks, conns, duration=0.1))["workspace"]["y"][0] == [6.0, 14.0]


def test_width_rule_reads_dims_carried_by_the_widths():
    load_all()
    block = parse(diagram([blk("m", "matmul")], [])).blocks[0]
    rule = REGISTRY["matmul"].widths
    out, = rule(block, [Shaped((2, 3)), Shaped((3, 4))])
    assert out == 8 and dims_of(out) == (2, 4)
    out, = rule(block, [Shaped((1, 3)), 3])
    assert out == 1 and dims_of(out) == ()
    # the rule is lenient (a feedback loop's first pass is not final); building raises
    assert rule(block, [Shaped((2, 3)), 2]) == [1]
    with pytest.raises(DiagramError, match=r"\[2x3\] \* \[2x1\]"):
        _matmul_shapes(block, [Shaped((2, 3)), 2])


def test_unknown_rule_is_the_matrix_product_with_a_warning():
    y, warnings = product([[1, 2], [3, 4]], [5, 6], ADimensions=[2, 2], MultiplicationRule="Matrix(*)")
    assert y[0] == [17.0, 39.0]
    assert any("MultiplicationRule 'Matrix(*)'" in w for w in warnings)


def test_complex_inputs_contribute_their_real_parts():
    blocks = [blk("r", "constant", Value=[1, 2]), blk("i", "constant", Value=[5, 5]), blk("z", "realImagToComplex"),
              blk("v", "constant", Value=[3, 4]), blk("m", "matmul", ADimensions=[1, 2]), record()]
    conns = [wire("r", "z", 0, 0), wire("i", "z", 0, 1), wire("z", "m", 0, 0), wire("v", "m", 0, 1),
             wire("m", "w")]
    assert nc.simulate(diagram(blocks, conns, duration=0.1))["workspace"]["y"][0] == [11.0]


def test_follows_changing_inputs():
    blocks = [blk("r", "ramp", slope=1.0), blk("mx", "mux", inputs=2), blk("v", "constant", Value=[1, 2]),
              blk("m", "matmul", ADimensions=[1, 2]), record()]
    blocks.insert(1, blk("c", "constant", Value=1.0))
    conns = [wire("r", "mx", 0, 0), wire("c", "mx", 0, 1), wire("mx", "m", 0, 0), wire("v", "m", 0, 1),
             wire("m", "w")]
    y = nc.simulate(diagram(blocks, conns, dt=0.5, duration=1.0))["workspace"]["y"]
    assert y == [[2.0], [2.5], [3.0]]          # [t 1] * [1; 2] = t + 2


# ----------------------------------------------------------------------------- against numpy

@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.data())
def test_matrix_product_matches_numpy(m, k, n, data):
    if m * k == 1 or k * n == 1:       # scalar operands follow the handler's own rule (above)
        return
    values = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False)
    a = np.array(data.draw(st.lists(values, min_size=m * k, max_size=m * k))).reshape(m, k)
    b = np.array(data.draw(st.lists(values, min_size=k * n, max_size=k * n))).reshape(k, n)
    y = product(a.tolist(), b.tolist(), ADimensions=[m, k], BDimensions=[k, n])[0][0]
    expect = (a @ b).reshape(-1, order="F")
    assert np.allclose(y, expect, rtol=1e-12, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 4), st.integers(2, 4), st.integers(2, 4), st.data())
def test_integer_matrices_are_exact(m, k, n, data):
    ints = st.integers(-1000, 1000)
    a = np.array(data.draw(st.lists(ints, min_size=m * k, max_size=m * k)), dtype=float).reshape(m, k)
    b = np.array(data.draw(st.lists(ints, min_size=k * n, max_size=k * n)), dtype=float).reshape(k, n)
    y = product(a.tolist(), b.tolist(), ADimensions=[m, k], BDimensions=[k, n])[0][0]
    assert y == (a @ b).reshape(-1, order="F").tolist()


def test_declared_dims_in_a_feedback_loop():
    # x(k+1) = [0 1; 1 0] * x(k) with x(0) = [1; 2] through a unitDelay: the width pass
    # seeds the loop with a scalar, which must not trip the dimension checks
    # (the unitDelay is declared first: the width pass seeds the first block of a loop,
    # and a matmul seeded with a scalar B would settle on a 2x2 state, a valid reading too)
    blocks = [blk("d", "unitDelay", InitialCondition=[1, 2]), blk("p", "constant", Value=[[0, 1], [1, 0]]),
              blk("m", "matmul", ADimensions=[2, 2]), record()]
    conns = [wire("p", "m", 0, 0), wire("d", "m", 0, 1), wire("m", "d"), wire("d", "w")]
    y = nc.simulate(diagram(blocks, conns, duration=0.3))["workspace"]["y"]
    assert y == [[1.0, 2.0], [2.0, 1.0], [1.0, 2.0], [2.0, 1.0]]


def test_dimension_errors_inside_a_feedback_loop_are_still_reported():
    blocks = [blk("d", "unitDelay", InitialCondition=[1, 2]), blk("p", "constant", Value=[[0, 1, 0], [1, 0, 0]]),
              blk("m", "matmul", ADimensions=[2, 3]), record()]
    conns = [wire("p", "m", 0, 0), wire("d", "m", 0, 1), wire("m", "d"), wire("d", "w")]
    with pytest.raises(DiagramError, match=r"dimension mismatch: \[2x3\] \* \[2x1\]"):
        nc.simulate(diagram(blocks, conns, duration=0.3))
