"""vector_expr: nelsonFunction's compiled math bodies, with MATLAB's value rules. Expected
values are MATLAB's (worked out by hand or with numpy)."""
from __future__ import annotations

import cmath
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nflow_compat import expr
from nflow_compat.expr import MAX_DEPTH, ExpressionError
from nflow_compat.vector_expr import VECTOR_FUNCTIONS, VectorError, compile_vector

U = np.array([3.0, -4.0, 0.5])


def at(text, u=U, **variables):
    return compile_vector(text, ("u",), variables)((np.asarray(u),))


@pytest.mark.parametrize("text, value", [
    ("u(1) + u(3)", 3.5), ("u(end)", 0.5), ("u(end - 1)", -4.0), ("u([3, 1])", [0.5, 3.0]),
    ("[u(2), 7, u(1)]", [-4.0, 7.0, 3.0]), ("[u 1]", [3.0, -4.0, 0.5, 1.0]), ("[1 -2]", [1.0, -2.0]),
    ("[1 - 2]", [-1.0]), ("sum(u)", -0.5), ("prod(u)", -6.0), ("mean(u)", -0.5 / 3), ("numel(u)", 3.0),
    ("norm([3, 4])", 5.0), ("max(u)", 3.0), ("min(u)", -4.0),
    ("max(u, 0)", [3.0, 0.0, 0.5]), ("min([1, nan, -2])", -2.0), ("max(nan, 2)", 2.0),
    ("u .* u", [9.0, 16.0, 0.25]), ("u ./ 2", [1.5, -2.0, 0.25]), ("2 ./ u", [2 / 3, -0.5, 4.0]),
    ("u .^ 2", [9.0, 16.0, 0.25]), ("2 * u", [6.0, -8.0, 1.0]), ("u / 2", [1.5, -2.0, 0.25]),
    ("(u > 0) .* u", [3.0, 0.0, 0.5]), ("u >= 0.5", [1.0, 0.0, 1.0]), ("u == -4", [0.0, 1.0, 0.0]),
    ("u ~= 3", [0.0, 1.0, 1.0]), ("-2^2", -4.0), ("2^-1", 0.5), ("2^3^2", 64.0), ("atan2(u(1), u(2))", math.atan2(3, -4)),
    ("mod(-1, 3)", 2.0), ("rem(-1, 3)", -1.0), ("round(-2.5)", -3.0), ("fix(-2.7)", -2.0), ("hypot(3, 4)", 5.0),
    ("k * u(1)", 6.0),
])
def test_values(text, value):
    np.testing.assert_allclose(np.ravel(at(text, k=2.0)), np.ravel(value), rtol=1e-15, atol=0)


@pytest.mark.parametrize("text, value", [
    ("sqrt(-4)", 2j), ("log(-1)", cmath.log(-1)), ("asin(2)", complex(np.arcsin(2 + 0j))),
    ("(-8)^(1/3)", complex(-8) ** (1 / 3)), ("1i^2", -1.0), ("exp(1j*pi)", cmath.exp(1j * math.pi)),
    ("abs(3 + 4i)", 5.0), ("real(2 - 3i)", 2.0), ("imag(2 - 3i)", -3.0), ("conj(2 - 3i)", 2 + 3j),
    ("angle(1i)", math.pi / 2),
])
def test_matlab_values_leave_the_reals_where_matlab_does(text, value):
    got = at(text)
    assert np.iscomplexobj(got) == isinstance(value, complex)
    assert complex(got) == pytest.approx(value, rel=1e-15)


def test_a_complex_value_with_zero_imaginary_parts_is_real_again():
    assert not np.iscomplexobj(at("(1 + 2i) - 2i"))
    assert not np.iscomplexobj(at("sqrt(u .* u)"))
    z = compile_vector("z .^ 2", ("z",))((np.array([1j, 2.0]),))
    np.testing.assert_array_equal(z, [-1, 4])
    assert np.iscomplexobj(compile_vector("z * 1", ("z",))((np.array([1j]),)))


@pytest.mark.parametrize("text, why", [
    ("u(4)", "index 4 is out of range"), ("u(0)", "index 0 is out of range"), ("u(1.5)", "whole number"),
    ("u * u", "use '.*'"), ("u ^ u", "use '.^'"), ("[1, 2] + [1, 2, 3]", None), ("atan2(1i, 1)", "real arguments"),
])
def test_value_errors_are_vector_errors(text, why):
    with pytest.raises((VectorError, ExpressionError)) as info:
        at(text)
    if why:
        assert why in str(info.value)


def test_errors_in_the_values_surface_when_called_not_when_compiled():
    f = compile_vector("u(2)")
    assert f((np.array([1.0, 2.0]),)) == 2.0
    with pytest.raises(VectorError, match="out of range"):
        f((np.array([1.0]),))


@pytest.mark.parametrize("text, why", [
    ("u(", "expected"), ("foo(u)", "unknown function 'foo'"), ("x + 1", "unknown variable 'x'"),
    ("sin", "needs arguments"), ("u(1, 2)", "one index"), ("[1; 2]", "a signal is a vector"),
    ("u = 1", "unexpected character"), ("min()", "expected"), ("sum(u, 1)", "takes 1 argument"),
    ("2 ^ 1e9", "exponent"), ("[1, 2", "missing ']'"),
])
def test_texts_that_do_not_compile(text, why):
    with pytest.raises(ExpressionError) as info:
        compile_vector(text)
    assert why in str(info.value)


def test_length_depth_and_exponent_are_bounded():
    with expr.limits(max_length=20):
        with pytest.raises(ExpressionError, match="limit 20"):
            compile_vector("u" + " + u" * 10)
    with pytest.raises(ExpressionError, match="deeper"):
        compile_vector("(" * (MAX_DEPTH + 2) + "u" + ")" * (MAX_DEPTH + 2))
    with expr.limits(max_exponent=10):
        with pytest.raises(ExpressionError, match="exponent"):
            compile_vector("u ^ 11")


def test_every_one_argument_function_acts_on_a_vector():
    u = np.array([0.25, 0.5])
    for name, forms in VECTOR_FUNCTIONS.items():
        if 1 in forms:
            value = compile_vector(f"{name}(u)")((u,))
            assert np.size(value) in (1, 2), name


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=6), st.floats(-10, 10))
def test_element_wise_laws_act_per_element(values, k):
    """An element-wise body on a vector is the body on each element."""
    u = np.array(values)
    f = compile_vector("k*u.^2 - abs(u) + 1", ("u",), {"k": k})
    whole = f((u,))
    for i, x in enumerate(values):
        assert np.ravel(whole)[i] == pytest.approx(k * x * x - abs(x) + 1, rel=1e-12, abs=1e-9)
