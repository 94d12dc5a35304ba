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
