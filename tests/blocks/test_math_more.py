"""Math library handlers, second batch: mathFunction, trigFunction, roundingFunction, sqrt,
atan2, wrapToZero, sumElements, productOfElements, dotProduct, crossProduct.

Expected values come from C's definitions worked out by hand, or from numpy applied to the
same inputs (numpy's ufuncs follow C's IEEE conventions: log(0) = -inf, sqrt(-1) = NaN)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from tests.util import blk, const, diagram, drive, one, ramp, record, through, wire

NAN, INF = math.nan, math.inf
FAST = settings(max_examples=40, deadline=None)
finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


def same(got, expected):
    """Equal element by element, NaN matching NaN and the sign of zero checked."""
    got, expected = np.atleast_1d(got), np.atleast_1d(np.asarray(expected, dtype=float))
    assert got.shape == expected.shape, (got, expected)
    for g, e in zip(got.tolist(), expected.tolist()):
        if math.isnan(e):
            assert math.isnan(g), (got, expected)
        else:
            assert g == e and math.copysign(1, g) == math.copysign(1, e), (got, expected)


# ----------------------------------------------------------------------------- mathFunction

U = [-2.0, -0.5, 0.0, 0.5, 2.0]
UNARY = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "exp": np.exp,
    "log": np.log, "log10": np.log10, "10^u": lambda u: np.power(10.0, u),
    "square": lambda u: u * u, "magnitude^2": lambda u: u * u, "sqrt": np.sqrt,
    "reciprocal": lambda u: 1.0 / u, "sign": np.sign,
}


@pytest.mark.parametrize("fn", sorted(UNARY))
def test_math_function_every_unary_name_scalar_and_vector(fn):
    with np.errstate(all="ignore"):
        expected = UNARY[fn](np.asarray(U))
    np.testing.assert_allclose(one(blk("b", "mathFunction", Function=fn), U), expected, rtol=1e-15, atol=0)
    for u, e in zip(U, expected):
        np.testing.assert_allclose(one(blk("b", "mathFunction", Function=fn), u), [e], rtol=1e-15, atol=0)


def test_math_function_c_results_where_python_math_raises():
    # scalar path: each of these raises in Python's math module
    assert one(blk("b", "mathFunction", Function="log"), 0.0).tolist() == [-INF]
    assert one(blk("b", "mathFunction", Function="log10"), -0.0).tolist() == [-INF]
    assert math.isnan(one(blk("b", "mathFunction", Function="log"), -1.0)[0])
    assert math.isnan(one(blk("b", "mathFunction", Function="sqrt"), -4.0)[0])
    assert math.isnan(one(blk("b", "mathFunction", Function="asin"), 2.0)[0])
    assert math.isnan(one(blk("b", "mathFunction", Function="sin"), INF)[0])
    assert one(blk("b", "mathFunction", Function="exp"), 1000.0).tolist() == [INF]
    assert one(blk("b", "mathFunction", Function="sinh"), -1000.0).tolist() == [-INF]
    assert one(blk("b", "mathFunction", Function="10^u"), 400.0).tolist() == [INF]
    same(one(blk("b", "mathFunction", Function="reciprocal"), 0.0), [INF])
    same(one(blk("b", "mathFunction", Function="reciprocal"), -0.0), [-INF])
    same(one(blk("b", "mathFunction", Function="sign"), [NAN, -0.0, -3.0]), [0.0, 0.0, -1.0])


def test_math_function_default_is_exp_and_time_varying():
    _, y = through(blk("b", "mathFunction"), ramp(1.0), duration=0.2)
    np.testing.assert_allclose(y[:, 0], np.exp([0.0, 0.1, 0.2]), rtol=1e-15)


A2 = [7.0, -7.0, 7.0, -7.0, 5.5, 3.0, 0.0]
B2 = [3.0, 3.0, -3.0, -3.0, 0.0, 0.0, -2.0]


def test_math_function_rem_and_mod_signs():
    # rem = C fmod (sign of the dividend); mod = floor modulo (sign of the divisor), mod(a, 0) = a
    rem = one(blk("b", "mathFunction", Function="rem", inputs=2), A2, B2)
    same(rem, [1.0, -1.0, 1.0, -1.0, NAN, NAN, 0.0])
    mod = one(blk("b", "mathFunction", Function="mod", inputs=2), A2, B2)
    same(mod, [1.0, 2.0, -2.0, -1.0, 5.5, 3.0, 0.0])
    for a, b, r, m in zip(A2, B2, rem.tolist(), mod.tolist()):   # scalar path agrees
        same(one(blk("b", "mathFunction", Function="rem", inputs=2), a, b), [r])
        same(one(blk("b", "mathFunction", Function="mod", inputs=2), a, b), [m])


def test_math_function_pow_and_hypot_with_broadcast():
    assert one(blk("b", "mathFunction", Function="pow", inputs=2), [2.0, 3.0, 4.0], 2.0).tolist() == [4.0, 9.0, 16.0]
    assert one(blk("b", "mathFunction", Function="pow", inputs=2), 2.0, [0.0, 0.5, -1.0]).tolist() == \
        [1.0, 2.0 ** 0.5, 0.5]
    assert one(blk("b", "mathFunction", Function="hypot", inputs=2), [3.0, 5.0], [4.0, 12.0]).tolist() == [5.0, 13.0]
    # C pow: a pole at 0 gives +-inf, a negative base with a fractional power NaN
    same(one(blk("b", "mathFunction", Function="pow", inputs=2), 0.0, -1.0), [INF])
    same(one(blk("b", "mathFunction", Function="pow", inputs=2), -0.0, -1.0), [-INF])
    same(one(blk("b", "mathFunction", Function="pow", inputs=2), -8.0, 1.0 / 3.0), [NAN])


def test_math_function_unknown_name_is_an_error():
    with pytest.raises(nc.DiagramError) as err:
        one(blk("b", "mathFunction", Function="cube"), 2.0)
    assert err.value.code == "math_function_unknown" and err.value.param == "Function"
    assert "hypot" in err.value.message


def test_math_function_unconnected_inputs_write_nothing():
    assert drive(blk("b", "mathFunction", Function="exp", inputs=1), {}).tolist() == [[0.0]] * 3
    # a two-input function needs input 1 too (also when the block declares one port only)
    assert drive(blk("b", "mathFunction", Function="pow", inputs=2), {0: const(3.0)}).tolist() == [[0.0]] * 3
    assert drive(blk("b", "mathFunction", Function="pow"), {0: const(3.0)}).tolist() == [[0.0]] * 3
    assert drive(blk("b", "mathFunction", Function="pow", inputs=2), {1: const(3.0)}).tolist() == [[0.0]] * 3


@FAST
@given(finite, st.floats(min_value=-1e3, max_value=1e3, allow_nan=False).filter(lambda b: b != 0.0))
def test_mod_is_rem_shifted_into_the_divisors_sign(a, b):
    r = one(blk("b", "mathFunction", Function="rem", inputs=2), a, b)[0]
    m = one(blk("b", "mathFunction", Function="mod", inputs=2), a, b)[0]
    assert r == math.fmod(a, b)
    assert m == (r + b if r != 0.0 and (r < 0.0) != (b < 0.0) else r)
    assert m == 0.0 or (m < 0.0) == (b < 0.0)


# ----------------------------------------------------------------------------- trigFunction

TRIG = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
        "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
        "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh}


@pytest.mark.parametrize("fn", sorted(TRIG))
def test_trig_function_every_unary_name(fn):
    u = [-0.5, 0.0, 0.5, 1.0, 2.0]
    with np.errstate(all="ignore"):
        expected = TRIG[fn](np.asarray(u))
    got = one(blk("b", "trigFunction", Function=fn), u)
    np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)
    for x, e in zip(u, expected):
        np.testing.assert_allclose(one(blk("b", "trigFunction", Function=fn), x), [e], rtol=1e-15, atol=0)


def test_trig_function_default_sin_and_c_edge_values():
    _, y = through(blk("b", "trigFunction"), ramp(1.0), duration=0.2)
    np.testing.assert_allclose(y[:, 0], np.sin([0.0, 0.1, 0.2]), rtol=1e-15)
    assert one(blk("b", "trigFunction", Function="atanh"), 1.0).tolist() == [INF]
    assert math.isnan(one(blk("b", "trigFunction", Function="acosh"), 0.5)[0])


def test_trig_function_atan2_quadrants_and_broadcast():
    got = one(blk("b", "trigFunction", Function="atan2", inputs=2), [1.0, 1.0, -1.0, -1.0], [1.0, -1.0, -1.0, 1.0])
    assert got.tolist() == [math.pi / 4, 3 * math.pi / 4, -3 * math.pi / 4, -math.pi / 4]
    assert one(blk("b", "trigFunction", Function="atan2", inputs=2), 0.0, [-1.0, 1.0]).tolist() == [math.pi, 0.0]
    assert drive(blk("b", "trigFunction", Function="atan2", inputs=2), {0: const(1.0)}).tolist() == [[0.0]] * 3


def test_trig_function_sincos_two_outputs():
    blocks = [const([0.0, 1.0]), blk("b", "trigFunction", Function="sincos", outputs=2),
              record("w0", "s"), record("w1", "c")]
    res = nc.simulate(diagram(blocks, [wire("c", "b"), wire("b", "w0", 0), wire("b", "w1", 1)], duration=0.1))
    np.testing.assert_array_equal(res["workspace"]["s"], [[0.0, math.sin(1.0)]] * 2)
    np.testing.assert_array_equal(res["workspace"]["c"], [[1.0, math.cos(1.0)]] * 2)
    # declared with one output port, only sin leaves
    assert one(blk("b", "trigFunction", Function="sincos"), 1.0).tolist() == [math.sin(1.0)]


def test_trig_function_unknown_name_rejected_and_unconnected():
    with pytest.raises(nc.DiagramError) as err:
        one(blk("b", "trigFunction", Function="sec"), 1.0)
    assert err.value.code == "param_value" and err.value.param == "Function"
    assert drive(blk("b", "trigFunction", inputs=1), {}).tolist() == [[0.0]] * 3


# ----------------------------------------------------------------------------- roundingFunction

R = [-2.5, -1.5, -0.5, -0.3, 0.3, 0.5, 1.5, 2.5, 0.49999999999999994, NAN, -INF]


def test_rounding_function_all_operators_vector():
    same(one(blk("b", "roundingFunction", Operator="floor"), R),
         [-3, -2, -1, -1, 0, 0, 1, 2, 0, NAN, -INF])
    same(one(blk("b", "roundingFunction", Operator="ceil"), R),
         [-2, -1, -0.0, -0.0, 1, 1, 2, 3, 1, NAN, -INF])
    same(one(blk("b", "roundingFunction", Operator="round"), R),    # halves away from zero
         [-3, -2, -1, -0.0, 0, 1, 2, 3, 0, NAN, -INF])
    same(one(blk("b", "roundingFunction", Operator="fix"), R),
         [-2, -1, -0.0, -0.0, 0, 0, 1, 2, 0, NAN, -INF])


@pytest.mark.parametrize("op", ["floor", "ceil", "round", "fix"])
def test_rounding_function_scalar_path_agrees_with_vector(op):
    vector = one(blk("b", "roundingFunction", Operator=op), R)
    for u, v in zip(R, vector.tolist()):
        same(one(blk("b", "roundingFunction", Operator=op), u), [v])


def test_rounding_function_default_floor_time_varying_and_unconnected():
    _, y = through(blk("b", "roundingFunction"), ramp(-7.0), duration=0.3)
    assert y[:, 0].tolist() == [0.0, -1.0, -2.0, -3.0]      # floor(0, -0.7, -1.4, -2.1)
    assert drive(blk("b", "roundingFunction", inputs=1), {}).tolist() == [[0.0]] * 3
    with pytest.raises(nc.DiagramError):
        one(blk("b", "roundingFunction", Operator="nearest"), 1.0)


@FAST
@given(finite)
def test_rounding_brackets_the_input(u):
    lo = one(blk("b", "roundingFunction", Operator="floor"), u)[0]
    hi = one(blk("b", "roundingFunction", Operator="ceil"), u)[0]
    r = one(blk("b", "roundingFunction", Operator="round"), u)[0]
    z = one(blk("b", "roundingFunction", Operator="fix"), u)[0]
    assert lo <= u <= hi and hi - lo in (0.0, 1.0)
    assert r in (lo, hi) and abs(r - u) <= 0.5
    assert z == (lo if u >= 0 else hi)


# ----------------------------------------------------------------------------- sqrt

def test_sqrt_family_vector_and_scalar():
    u = [4.0, 2.0, 0.0, -0.0, -4.0, INF, NAN]
    same(one(blk("b", "sqrt"), u), [2.0, math.sqrt(2.0), 0.0, -0.0, NAN, INF, NAN])
    same(one(blk("b", "sqrt", Function="signedSqrt"), u), [2.0, math.sqrt(2.0), 0.0, 0.0, -2.0, INF, NAN])
    same(one(blk("b", "sqrt", Function="rSqrt"), u), [0.5, 1.0 / math.sqrt(2.0), INF, -INF, NAN, 0.0, NAN])
    for fn in ("sqrt", "signedSqrt", "rSqrt"):
        vector = one(blk("b", "sqrt", Function=fn), u)
        for x, v in zip(u, vector.tolist()):
            same(one(blk("b", "sqrt", Function=fn), x), [v])


def test_sqrt_unconnected_and_bad_name():
    assert drive(blk("b", "sqrt", Function="rSqrt", inputs=1), {}).tolist() == [[0.0]] * 3
    with pytest.raises(nc.DiagramError) as err:
        one(blk("b", "sqrt", Function="cbrt"), 8.0)
    assert err.value.param == "Function"


@FAST
@given(finite)
def test_signed_sqrt_squares_back(u):
    y = one(blk("b", "sqrt", Function="signedSqrt"), u)[0]
    assert y * abs(y) == pytest.approx(u, rel=1e-12, abs=1e-300)


# ----------------------------------------------------------------------------- atan2

def test_atan2_scalar_vector_broadcast_and_unconnected():
    assert one(blk("b", "atan2"), 1.0, 1.0).tolist() == [math.pi / 4]
    assert one(blk("b", "atan2"), [0.0, -0.0, 1.0], -1.0).tolist() == [math.pi, -math.pi, 3 * math.pi / 4]
    assert one(blk("b", "atan2"), 2.0, [0.0, 2.0]).tolist() == [math.pi / 2, math.pi / 4]
    for port in (0, 1):
        assert drive(blk("b", "atan2"), {port: const(1.0)}).tolist() == [[0.0]] * 3


# ----------------------------------------------------------------------------- wrapToZero

def test_wrap_to_zero_strictly_above_and_default_255():
    assert one(blk("b", "wrapToZero", Threshold=5), [3.0, 5.0, 5.000001, 7.0, -9.0]).tolist() == \
        [3.0, 5.0, 0.0, 0.0, -9.0]
    assert one(blk("b", "wrapToZero"), [255.0, 256.0]).tolist() == [255.0, 0.0]
    assert one(blk("b", "wrapToZero", Threshold=5), 7.0).tolist() == [0.0]
    assert math.isnan(one(blk("b", "wrapToZero", Threshold=5), NAN)[0])


def test_wrap_to_zero_on_a_ramp_and_unconnected():
    _, y = through(blk("b", "wrapToZero", Threshold=2.0), ramp(10.0), duration=0.3)
    assert y[:, 0].tolist() == [0.0, 1.0, 2.0, 0.0]
    assert drive(blk("b", "wrapToZero", inputs=1), {}).tolist() == [[0.0]] * 3


# ----------------------------------------------------------------------------- vector math

def test_sum_and_product_of_elements():
    assert one(blk("b", "sumElements"), [1.0, 2.0, 3.5]).tolist() == [6.5]
    assert one(blk("b", "productOfElements"), [1.5, -2.0, 4.0]).tolist() == [-12.0]
    assert one(blk("b", "sumElements"), 2.5).tolist() == [2.5]
    assert one(blk("b", "productOfElements"), 2.5).tolist() == [2.5]
    same(one(blk("b", "sumElements"), [-0.0, -0.0]), [0.0])        # 0 + -0 + -0 = +0 in C


def test_sum_elements_accumulates_left_to_right():
    # (((0 + 1e16) + 1) + 1) + -1e16 = 0 in doubles (each +1 is lost); a pairwise or exact
    # sum would give 2
    assert one(blk("b", "sumElements"), [1e16, 1.0, 1.0, -1e16]).tolist() == [0.0]
    # ((1 * 1e200) * 1e200) * 0 = inf * 0 = NaN, whereas 1e200 * (1e200 * 0) would be 0
    assert math.isnan(one(blk("b", "productOfElements"), [1e200, 1e200, 0.0])[0])


def test_vector_math_unconnected_reads_as_empty():
    assert drive(blk("b", "sumElements", inputs=1), {}).tolist() == [[0.0]] * 3
    assert drive(blk("b", "productOfElements", inputs=1), {}).tolist() == [[1.0]] * 3
    assert drive(blk("b", "dotProduct"), {0: const([1.0, 2.0])}).tolist() == [[0.0]] * 3


def test_dot_product_uses_the_shorter_width_without_broadcast():
    assert one(blk("b", "dotProduct"), [1.0, 2.0, 3.0], [4.0, -5.0, 6.0]).tolist() == [12.0]
    assert one(blk("b", "dotProduct"), 2.0, [1.0, 2.0, 3.0]).tolist() == [2.0]
    assert one(blk("b", "dotProduct"), [1.0, 2.0, 3.0], [10.0, 20.0]).tolist() == [50.0]
    assert one(blk("b", "dotProduct"), 3.0, -2.0).tolist() == [-6.0]
    _, y = through(blk("b", "dotProduct"), ramp(1.0), blk("k", "constant", Value=4.0), duration=0.2)
    np.testing.assert_allclose(y[:, 0], [0.0, 0.4, 0.8], rtol=1e-15)


def test_cross_product_values_broadcast_and_unconnected():
    assert one(blk("b", "crossProduct"), [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]).tolist() == [0.0, 0.0, 1.0]
    assert one(blk("b", "crossProduct"), [1.0, 2.0, 3.0], [4.0, 5.0, 6.0]).tolist() == [-3.0, 6.0, -3.0]
    assert one(blk("b", "crossProduct"), 2.0, [0.0, 1.0, 0.0]).tolist() == [-2.0, 0.0, 2.0]
    assert drive(blk("b", "crossProduct"), {0: const([1.0, 2.0, 3.0])}).tolist() == [[0.0, 0.0, 0.0]] * 3


@pytest.mark.parametrize("widths", [([1.0, 2.0], [1.0, 2.0, 3.0]), ([1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0])])
def test_cross_product_rejects_non_3_vectors(widths):
    with pytest.raises(nc.DiagramError) as err:
        one(blk("b", "crossProduct"), *widths)
    assert err.value.code == "width_mismatch" and "3-element" in err.value.message


@FAST
@given(st.lists(finite, min_size=3, max_size=3), st.lists(finite, min_size=3, max_size=3))
def test_cross_product_matches_numpy_and_is_orthogonal(a, b):
    got = one(blk("b", "crossProduct"), a, b)
    np.testing.assert_array_equal(got, np.cross(a, b))
    dot = one(blk("b", "dotProduct"), a, got.tolist())[0]
    assert abs(dot) <= 1e-9 * (np.linalg.norm(a) ** 2 * np.linalg.norm(b) + 1.0)


@FAST
@given(st.lists(finite, min_size=2, max_size=6))
def test_sum_elements_is_the_left_fold(values):
    acc = 0.0
    for v in values:
        acc += v
    assert one(blk("b", "sumElements"), values).tolist() == [acc]
    prod = 1.0
    for v in values:
        prod *= v
    assert one(blk("b", "productOfElements"), values).tolist() == [prod]


# ----------------------------------------------------------------------------- declared port counts

@pytest.mark.parametrize("kind,expected", [
    ("mathFunction", [0.0]), ("trigFunction", [0.0]), ("roundingFunction", [0.0]), ("sqrt", [0.0]),
    ("atan2", [0.0]), ("wrapToZero", [0.0]), ("sumElements", [0.0]), ("productOfElements", [1.0]),
    ("dotProduct", [0.0]), ("crossProduct", [0.0, 0.0, 0.0]),
])
def test_blocks_declared_without_ports(kind, expected):
    # no input port at all: every port reads as unconnected (the block's own rule applies)
    assert drive(blk("b", kind, inputs=0), {}).tolist() == [expected] * 3
    # no output port: the block is built (params checked) and runs nothing
    res = nc.simulate(diagram([const(2.0), blk("b", kind, outputs=0)], [wire("c", "b")], duration=0.1))
    assert res["status"] == "ok" and res["time"] == [0.0, 0.1]


def test_params_are_checked_even_without_output_ports():
    with pytest.raises(nc.DiagramError) as err:
        nc.simulate(diagram([blk("b", "mathFunction", Function="cube", outputs=0)], [], duration=0.1))
    assert err.value.code == "math_function_unknown"


def test_scalar_inputs_broadcast_to_a_wider_declared_port():
    assert one(blk("b", "wrapToZero", Threshold=5, inputs=2), 7.0, [1.0, 2.0]).tolist() == [0.0, 0.0]
    assert one(blk("b", "mathFunction", Function="hypot", inputs=3), 3.0, 4.0, [1.0, 2.0]).tolist() == [5.0, 5.0]
    assert one(blk("b", "mathFunction", Function="exp", inputs=2), 0.0, [1.0, 2.0]).tolist() == [1.0, 1.0]
