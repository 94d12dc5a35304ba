"""Math library handlers: gain, sum, mult, bias, abs, sign, negate, divide, min, max,
polynomial. Expected values are worked out by hand (or with plain numpy) in each test."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from tests.util import blk, const, diagram, drive, one, ramp, record, run, through, trace, wire

NAN = math.nan
finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
vectors = st.lists(finite, min_size=2, max_size=5)
FAST = settings(max_examples=40, deadline=None)


# ----------------------------------------------------------------------------- gain

def test_gain_scalar_on_a_ramp():
    _, y = through(blk("b", "gain", Gain=-2.5), ramp(1.0), duration=0.3)
    np.testing.assert_allclose(y[:, 0], [0.0, -0.25, -0.5, -0.75], rtol=0, atol=1e-15)


def test_gain_uses_the_manifest_default_2():
    assert one(blk("b", "gain"), 4.0).tolist() == [8.0]


def test_gain_vector_and_expression_param():
    y = trace(diagram([const([1.0, -2.0, 0.25]), blk("b", "gain", Gain="k*2"), record()],
                      [wire("c", "b"), wire("b", "w")], duration=0.1, variables={"k": 1.5}))
    assert y.tolist() == [[3.0, -6.0, 0.75]] * 2


def test_gain_unconnected_holds_its_initial_output():
    y = drive(blk("b", "gain", Gain=5.0, inputs=1), {})
    assert y.tolist() == [[0.0]] * 3


def test_gain_vector_gain_is_rejected():
    with pytest.raises(nc.DiagramError) as err:
        one(blk("b", "gain", Gain=[1, 2]), 1.0)
    assert err.value.code == "param_type" and err.value.param == "Gain"


# ----------------------------------------------------------------------------- sum

def test_sum_default_signs_add_three_inputs():
    assert one(blk("b", "sum"), 1.5, 2.0, -4.0).tolist() == [-0.5]


def test_sum_signs_scalar_and_time_varying():
    y = drive(blk("b", "sum", Inputs="-+", inputs=2), {0: ramp(2.0), 1: const(1.0)}, duration=0.2)
    np.testing.assert_allclose(y[:, 0], [1.0, 0.8, 0.6], rtol=0, atol=1e-15)


def test_sum_vector_with_scalar_broadcast():
    assert one(blk("b", "sum", Inputs="+-+"), [1.0, 2.0, 3.0], 1.0, [10.0, 20.0, 30.0]).tolist() == \
        [10.0, 21.0, 32.0]


def test_sum_unconnected_ports_read_zero():
    y = drive(blk("b", "sum", Inputs="+-+"), {1: const(4.0)})
    assert y.tolist() == [[-4.0]] * 3


def test_sum_nothing_connected_is_zero_of_the_right_width():
    assert drive(blk("b", "sum", inputs=2), {}).tolist() == [[0.0]] * 3


def test_sum_short_sign_string_pads_with_plus_and_long_one_is_cut():
    assert one(blk("b", "sum", Inputs="-", inputs=3), 1.0, 2.0, 3.0).tolist() == [4.0]
    assert one(blk("b", "sum", Inputs="+-+-+", inputs=2), 1.0, 2.0).tolist() == [-1.0]


def test_sum_bar_takes_a_port_position_like_nflow_and_warns():
    d = diagram([blk("a", "constant", Value=5.0), blk("b2", "constant", Value=2.0),
                 blk("c", "constant", Value=1.0), blk("s", "sum", Inputs="|+-"), record()],
                [wire("a", "s", 0, 0), wire("b2", "s", 0, 1), wire("c", "s", 0, 2), wire("s", "w")],
                duration=0.1)
    res = run(d)
    assert res["workspace"]["y"] == [[6.0], [6.0]]     # + + -, not Simulink's spacer reading
    assert any("'|'" in w and "'s'" in w for w in res["warnings"])
    res2 = run(d)
    assert sum("'|'" in w for w in res2["warnings"]) == 1


def test_sum_many_inputs_generic_path():
    values = [1.0, 2.0, 4.0, 8.0, 16.0]
    assert one(blk("b", "sum", Inputs="+-+-+", inputs=5), *values).tolist() == [1 - 2 + 4 - 8 + 16]


@FAST
@given(st.lists(st.tuples(finite, st.sampled_from("+-")), min_size=1, max_size=5))
def test_sum_is_the_signed_linear_combination(terms):
    values = [v for v, _ in terms]
    signs = "".join(s for _, s in terms)
    got = one(blk("b", "sum", Inputs=signs, inputs=len(terms)), *values)[0]
    expected = 0.0
    for v, s in terms:
        expected = expected - v if s == "-" else expected + v
    assert got == expected


@FAST
@given(vectors, finite, finite)
def test_sum_is_linear_in_each_input(u, k, v):
    a = one(blk("b", "sum", Inputs="+-"), u, v)
    b = one(blk("b", "sum", Inputs="+-"), [k * x for x in u], k * v)
    np.testing.assert_allclose(b, k * a, rtol=1e-9, atol=1e-6)


# ----------------------------------------------------------------------------- mult

def test_mult_scalar_product():
    assert one(blk("b", "mult"), 1.5, -2.0, 4.0).tolist() == [-12.0]


def test_mult_vector_broadcast_and_unconnected_reads_one():
    y = drive(blk("b", "mult"), {0: const([1.0, 2.0, 3.0]), 2: const(-0.5)})
    assert y.tolist() == [[-0.5, -1.0, -1.5]] * 3


def test_mult_nothing_connected_is_one():
    assert drive(blk("b", "mult"), {}).tolist() == [[1.0]] * 3


def test_mult_single_input_and_many_inputs():
    assert drive(blk("b", "mult"), {1: ramp(3.0)}, duration=0.2)[:, 0].tolist() == \
        pytest.approx([0.0, 0.3, 0.6], abs=1e-15)
    assert one(blk("b", "mult", inputs=5), 1.0, 2.0, 3.0, 4.0, 0.5).tolist() == [12.0]


# ----------------------------------------------------------------------------- bias, abs, sign, negate

def test_bias_scalar_vector_default_and_unconnected():
    assert one(blk("b", "bias", Bias=-1.5), 4.0).tolist() == [2.5]
    assert one(blk("b", "bias"), [1.0, -1.0]).tolist() == [2.0, 0.0]     # manifest default Bias 1
    assert drive(blk("b", "bias", Bias=3.0, inputs=1), {}).tolist() == [[0.0]] * 3


def test_abs_scalar_through_zero_and_vector():
    _, y = through(blk("b", "abs"), ramp(10.0, start=0.1), dt=0.1, duration=0.3)
    assert y[:, 0].tolist() == pytest.approx([0.0, 0.0, 1.0, 2.0])
    assert one(blk("b", "abs"), [-3.0, 0.0, 2.5, -1e-300]).tolist() == [3.0, 0.0, 2.5, 1e-300]
    assert drive(blk("b", "abs", inputs=1), {}).tolist() == [[0.0]] * 3


def test_sign_values_including_zero_negative_zero_and_nan():
    assert one(blk("b", "sign"), [-3.0, 0.0, -0.0, 2.5, NAN, -math.inf]).tolist() == \
        [-1.0, 0.0, 0.0, 1.0, 0.0, -1.0]
    assert one(blk("b", "sign"), -1e-320).tolist() == [-1.0]
    assert one(blk("b", "sign"), NAN).tolist() == [0.0]
    assert drive(blk("b", "sign", inputs=1), {}).tolist() == [[0.0]] * 3


def test_negate_scalar_vector_and_unconnected():
    assert one(blk("b", "negate"), 2.5).tolist() == [-2.5]
    assert one(blk("b", "negate"), [1.0, -4.0, 0.0]).tolist() == [-1.0, 4.0, 0.0]
    assert drive(blk("b", "negate", inputs=1), {}).tolist() == [[0.0]] * 3


@FAST
@given(st.floats(allow_nan=False))
def test_sign_times_abs_is_the_input(u):
    s = one(blk("b", "sign"), u)[0]
    a = one(blk("b", "abs"), u)[0]
    n = one(blk("b", "negate"), u)[0]
    assert s * a == u and n == -u and a >= 0.0


# ----------------------------------------------------------------------------- divide

def test_divide_scalar_and_time_varying():
    y = drive(blk("b", "divide"), {0: ramp(1.0), 1: const(4.0)}, duration=0.2)
    assert y[:, 0].tolist() == pytest.approx([0.0, 0.025, 0.05], abs=1e-16)


def test_divide_vector_by_vector_and_by_broadcast_scalar():
    assert one(blk("b", "divide"), [1.0, -6.0, 9.0], [2.0, 3.0, -3.0]).tolist() == [0.5, -2.0, -3.0]
    assert one(blk("b", "divide"), [1.0, -6.0], 2.0).tolist() == [0.5, -3.0]
    assert one(blk("b", "divide"), 6.0, [2.0, -3.0]).tolist() == [3.0, -2.0]


def test_divide_tiny_denominator_keeps_its_sign():
    # 0 and -0 both become +1e-300 (C++ `den < 0.0` is false for -0.0); -1e-310 -> -1e-300
    big = 1.0 / 1e-300
    assert one(blk("b", "divide"), 1.0, 0.0).tolist() == [big]
    assert one(blk("b", "divide"), 1.0, -0.0).tolist() == [big]
    assert one(blk("b", "divide"), -2.0, -1e-310).tolist() == [2.0 / 1e-300]
    assert one(blk("b", "divide"), 0.0, 0.0).tolist() == [0.0]
    assert one(blk("b", "divide"), [1.0, 1.0, 1.0], [0.0, -0.0, -1e-310]).tolist() == [big, big, -big]
    # at 1e-300 itself nothing is replaced
    assert one(blk("b", "divide"), 1e-300, 1e-300).tolist() == [1.0]


def test_divide_overflow_and_nan_pass_through():
    y = one(blk("b", "divide"), [1e10, 1.0, 1.0], [0.0, NAN, math.inf])
    assert y[0] == math.inf and math.isnan(y[1]) and y[2] == 0.0


@pytest.mark.parametrize("port", [0, 1])
def test_divide_needs_both_inputs(port):
    y = drive(blk("b", "divide"), {port: const(3.0)})
    assert y.tolist() == [[0.0]] * 3


@FAST
@given(finite, st.floats(min_value=-1e-299, max_value=1e-299))
def test_divide_guard_property(num, den):
    got = one(blk("b", "divide"), num, den)[0]
    guard = den if abs(den) >= 1e-300 else math.copysign(1e-300, -1.0 if den < 0.0 else 1.0)
    assert got == num / guard
    assert math.isfinite(got)   # |num| <= 1e6 and |guard| >= 1e-300 keep it below 1e306


# ----------------------------------------------------------------------------- min / max

def test_min_max_scalar_on_a_ramp():
    sources = {0: ramp(10.0), 1: const(1.0)}
    assert drive(blk("b", "min"), sources)[:, 0].tolist() == [0.0, 1.0, 1.0]
    assert drive(blk("b", "max"), sources)[:, 0].tolist() == [1.0, 1.0, 2.0]


def test_min_max_vector_with_broadcast():
    assert one(blk("b", "min"), [3.0, -1.0, 0.5], 0.0).tolist() == [0.0, -1.0, 0.0]
    assert one(blk("b", "max"), 0.0, [3.0, -1.0, 0.5]).tolist() == [3.0, 0.0, 0.5]


def test_min_max_nan_passes_the_first_input_like_std_min_max():
    assert math.isnan(one(blk("b", "min"), NAN, 1.0)[0])
    assert one(blk("b", "min"), 1.0, NAN).tolist() == [1.0]
    assert math.isnan(one(blk("b", "max"), NAN, 1.0)[0])
    assert one(blk("b", "max"), 1.0, NAN).tolist() == [1.0]
    y = one(blk("b", "max"), [NAN, 2.0], [1.0, NAN])
    assert math.isnan(y[0]) and y[1] == 2.0


@pytest.mark.parametrize("kind", ["min", "max"])
@pytest.mark.parametrize("port", [0, 1])
def test_min_max_need_both_inputs(kind, port):
    assert drive(blk("b", kind), {port: const(-7.0)}).tolist() == [[0.0]] * 3


@FAST
@given(vectors, vectors)
def test_min_is_below_max_and_they_partition_the_pair(a, b):
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    lo = one(blk("b", "min"), a, b)
    hi = one(blk("b", "max"), a, b)
    assert np.all(lo <= hi)
    assert sorted(zip(lo, hi)) == sorted((min(x, y), max(x, y)) for x, y in zip(a, b))


# ----------------------------------------------------------------------------- polynomial

def test_polynomial_page_example():
    assert one(blk("b", "polynomial", Coefficients=[1, -2, 3]), 2.0).tolist() == [3.0]


def test_polynomial_default_is_u_squared_and_vector():
    assert one(blk("b", "polynomial"), [-3.0, 0.5, 2.0]).tolist() == [9.0, 0.25, 4.0]


def test_polynomial_time_varying_and_matlab_string_coefficients():
    y = drive(blk("b", "polynomial", Coefficients="[2 0 -1 4]"), {0: ramp(10.0)})
    assert y[:, 0].tolist() == [4.0, 5.0, 18.0]      # 2u^3 - u + 4 at u = 0, 1, 2


def test_polynomial_degenerate_coefficient_lists():
    assert one(blk("b", "polynomial", Coefficients=[]), 5.0).tolist() == [0.0]
    assert one(blk("b", "polynomial", Coefficients=[]), [5.0, 6.0]).tolist() == [0.0, 0.0]
    assert one(blk("b", "polynomial", Coefficients=7), [1.0, 2.0, 3.0]).tolist() == [7.0, 7.0, 7.0]
    assert one(blk("b", "polynomial", Coefficients=[2, 1]), [1.0, 2.0]).tolist() == [3.0, 5.0]


def test_polynomial_unconnected_writes_nothing():
    assert drive(blk("b", "polynomial", Coefficients=[1, 1], inputs=1), {}).tolist() == [[0.0]] * 3


@FAST
@given(st.lists(st.floats(min_value=-100, max_value=100), min_size=1, max_size=6),
       st.lists(st.floats(min_value=-10, max_value=10), min_size=1, max_size=4))
def test_polynomial_matches_numpy_polyval(coeffs, u):
    got = one(blk("b", "polynomial", Coefficients=coeffs), u if len(u) > 1 else u[0])
    np.testing.assert_array_equal(got, np.polyval(coeffs, np.asarray(u)))
