"""The safe arithmetic evaluator for string parameters."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from nflow_compat.errors import DiagramError
from nflow_compat.expr import MAX_DEPTH, MAX_LENGTH, evaluate


@pytest.mark.parametrize("text,value", [
    ("1+2*3", 7.0), ("(1+2)*3", 9.0), ("-2^2", -4.0), ("2^-1", 0.5), ("2^3^2", 64.0),
    ("10/4", 2.5), ("1e-3", 0.001), (".5", 0.5), ("pi", math.pi), ("-inf", -math.inf),
    ("sqrt(16)+abs(-2)", 6.0), ("atan2(1, 1)", math.pi / 4), ("mod(-1, 3)", 2.0), ("rem(-1, 3)", -1.0),
    ("round(2.5)", 3.0), ("round(-2.5)", -3.0), ("fix(-2.7)", -2.0), ("min(3, 4)", 3.0),
    ("k*2", 3.0), (" k ", 1.5),
])
def test_scalars(text, value):
    assert evaluate(text, {"k": 1.5}) == value


@pytest.mark.parametrize("text,value", [
    ("[1 2 3]", [1, 2, 3]), ("[1, 2, 3]", [1, 2, 3]), ("[1 -2]", [1, -2]), ("[1 - 2]", [-1]),
    ("[1 -2 + 3]", [1, 1]), ("2*[1 2]", [2, 4]), ("[1 2].*[3 4]", [3, 8]), ("[k k]", [1.5, 1.5]),
    ("[(1 -2) 3]", [-1, 3]), ("[]", []),
])
def test_vectors(text, value):
    assert np.asarray(evaluate(text, {"k": 1.5})).tolist() == value


def test_matrix():
    assert evaluate("[1 2; 3 4]").tolist() == [[1, 2], [3, 4]]


def test_matrix_product_is_refused_not_guessed():
    with pytest.raises(DiagramError) as info:
        evaluate("[1 2]*[3 4]")
    assert "'.*'" in info.value.message


@pytest.mark.parametrize("text", [
    "__import__('os')", "().__class__", "open('x')", "k.real", "1;2", "lambda: 1", "2**3", "a[0]",
    "exec", "eval(1)", "[1 2", "sin", "sin(1, 2)", "", "1 2",
])
def test_rejected(text):
    with pytest.raises(DiagramError) as info:
        evaluate(text, {"k": 1.0})
    assert info.value.code in ("bad_expression", "undefined_variable")


def test_undefined_variable_lists_the_known_ones():
    with pytest.raises(DiagramError) as info:
        evaluate("x + y", {"x": 1})
    assert info.value.code == "undefined_variable" and "'y'" in info.value.message and "x" in info.value.message


def test_length_and_depth_limits():
    with pytest.raises(DiagramError) as info:
        evaluate("1+" * MAX_LENGTH + "1")
    assert info.value.code == "expression_too_long"
    with pytest.raises(DiagramError) as info:
        evaluate("(" * (MAX_DEPTH + 5) + "1" + ")" * (MAX_DEPTH + 5))
    assert "deeper" in info.value.message
    with pytest.raises(DiagramError):
        evaluate("-" * 200 + "1")


def test_huge_powers_overflow_to_inf_quickly():
    assert evaluate("9^9^9^9") == math.inf  # ((9^9)^9)^9
    assert evaluate("10^400") == math.inf


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6),
       st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6))
def test_arithmetic_agrees_with_python(a, b):
    env = {"a": a, "b": b}
    assert evaluate("a + b", env) == a + b
    assert evaluate("a - b*2", env) == a - b * 2
    assert evaluate("-(a)", env) == -a


@given(st.text(max_size=40))
def test_any_text_gives_a_value_or_a_typed_error(text):
    try:
        evaluate(text, {"k": 1.0})
    except DiagramError as err:
        assert err.code in ("bad_expression", "undefined_variable", "expression_too_long")


# MATLAB (and Nelson): rem(a, 0) is NaN, mod(a, 0) is a; rem has the sign of a, mod that of b.
@pytest.mark.parametrize("text,value", [
    ("rem(5, 0)", math.nan), ("rem(-5, 0)", math.nan), ("rem(0, 0)", math.nan), ("rem(inf, 2)", math.nan),
    ("rem(5, inf)", 5.0), ("rem(-7, 3)", -1.0), ("rem(7, -3)", 1.0),
    ("mod(5, 0)", 5.0), ("mod(-5, 0)", -5.0), ("mod(-7, 3)", 2.0), ("mod(7, -3)", -2.0),
])
def test_rem_and_mod_follow_matlab(text, value):
    got = evaluate(text, {})
    assert (math.isnan(got) and math.isnan(value)) or got == value, (text, got)


def test_rem_by_zero_is_nan_element_wise():
    got = evaluate("rem([5 -5 6], [0 3 0])", {})
    assert math.isnan(got[0]) and got[1] == -2.0 and math.isnan(got[2])


@given(st.floats(-1e6, 1e6), st.floats(-1e3, 1e3).filter(lambda b: b != 0))
def test_rem_and_mod_laws(a, b):
    # |rem| < |b| with the sign of a; mod - rem is 0 or b (they differ only across a sign)
    env = {"a": a, "b": b}
    r, m = evaluate("rem(a, b)", env), evaluate("mod(a, b)", env)
    assert abs(r) < abs(b) and (r == 0 or math.copysign(1, r) == math.copysign(1, a))
    assert m - r == pytest.approx(0.0, abs=1e-9 * max(1.0, abs(b))) or m - r == pytest.approx(b, rel=1e-12)
