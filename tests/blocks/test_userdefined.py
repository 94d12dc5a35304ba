"""userdefined library: the ``expression`` block and the compiled scalar expressions behind
it (``expr.compile_scalar``); ``nelsonFunction``'s math forms (``vector_expr``). Expected values are
worked out by hand (or with ``math``) on the grid t_k = k*dt."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from nflow_compat.blocks.handlers import supported_types
from nflow_compat.errors import DiagramError, SimulationError
from nflow_compat.expr import MAX_DEPTH, MAX_LENGTH, SCALAR_FUNCTIONS, ExpressionError, compile_scalar, evaluate
from tests.util import blk, diagram, record, run, trace, wire

FAST = settings(max_examples=150, deadline=None)


def c(text, **values):
    """Compile ``text`` over the given names and evaluate it once at their values."""
    names = tuple(values)
    return compile_scalar(text, names)(tuple(float(v) for v in values.values()))


# ----------------------------------------------------------------------------- compile_scalar: values

@pytest.mark.parametrize("text, value", [
    ("1+2*3", 7.0), ("(1+2)*3", 9.0), ("-2^2", -4.0), ("2^-1", 0.5), ("2^3^2", 64.0), ("10/4", 2.5),
    ("1e-3", 0.001), (".5", 0.5), ("pi", math.pi), ("e", math.e), ("-inf", -math.inf), ("--3", 3.0),
    ("+3", 3.0), ("2*-3", -6.0), ("2^+2", 4.0), ("sqrt(16)+abs(-2)", 6.0), ("atan2(1, 1)", math.pi / 4),
    ("pow(2, 10)", 1024.0), ("min(3, 4)", 3.0), ("max(3, 4)", 4.0), ("clamp(5, -1, 1)", 1.0),
    ("clamp(-5, -1, 1)", -1.0), ("clamp(0.25, -1, 1)", 0.25), ("sinc(0)", 1.0), ("sinc(0.5)", 2 / math.pi),
    ("sinc(-1.5)", -2 / (3 * math.pi)), ("round(2.5)", 3.0), ("round(-2.5)", -3.0),
    ("round(0.49999999999999994)", 0.0), ("floor(-0.5)", -1.0), ("ceil(-1.5)", -1.0), ("sign(-7)", -1.0),
    ("sign(0)", 0.0), ("sign(3)", 1.0), ("log10(1000)", 3.0), ("log2(8)", 3.0), ("log(e)", 1.0),
    ("exp(0)", 1.0), ("cos(0)+sin(0)+tan(0)", 1.0), ("cosh(0)+sinh(0)+tanh(0)", 1.0),
    ("acos(1)+asin(0)+atan(0)", 0.0), ("mod(-1, 3)", 2.0), ("rem(-1, 3)", -1.0), ("fix(-2.7)", -2.0),
    ("hypot(3, 4)", 5.0), ("mod(5, 0)", 5.0),
])
def test_constant_texts(text, value):
    assert compile_scalar(text)(()) == pytest.approx(value, rel=1e-15, abs=1e-300)


def test_inputs_are_read_by_position_and_each_call_sees_new_values():
    f = compile_scalar("u*2 + t - dt", ("u", "t", "dt"))
    assert f((3.0, 1.0, 0.5)) == 6.5
    assert f((-1.0, 0.0, 0.0)) == -2.0
    assert f([10.0, 2.0, 1.0]) == 21.0   # any sequence


def test_variables_are_fixed_at_compile_time_and_inputs_hide_them():
    f = compile_scalar("u + k", ("u",), {"k": 2.0, "u": 100.0})
    assert f((1.0,)) == 3.0   # the input u, not the variable u
    assert compile_scalar("pi", (), {"pi": 3.0})(()) == 3.0   # a variable hides a constant, as in evaluate


@pytest.mark.parametrize("text, value", [
    ("1/0", math.inf), ("-1/0", -math.inf), ("1/(-0)", -math.inf), ("0/0", math.nan), ("sqrt(-1)", math.nan),
    ("log(0)", -math.inf), ("log(-1)", math.nan), ("log10(0)", -math.inf), ("log2(-2)", math.nan),
    ("10^400", math.inf), ("(-10)^401", -math.inf), ("(-10)^400", math.inf), ("(-8)^(1/3)", math.nan),
    ("0^-1", math.inf), ("(-0)^-1", -math.inf), ("(-0)^-2", math.inf), ("exp(1000)", math.inf),
    ("sinh(-1000)", -math.inf), ("cosh(1000)", math.inf), ("asin(2)", math.nan), ("acos(-2)", math.nan),
    ("sin(inf)", math.nan), ("cos(-inf)", math.nan), ("tan(inf)", math.nan), ("floor(inf)", math.inf),
    ("ceil(-inf)", -math.inf), ("round(inf)", math.inf), ("inf-inf", math.nan), ("0*inf", math.nan),
    ("min(0/0, 1)", math.nan), ("max(1, 0/0)", math.nan), ("clamp(0/0, 0, 1)", math.nan), ("sinc(inf)", math.nan),
    ("sign(0/0)", math.nan), ("rem(inf, 2)", math.nan), ("1e308*10", math.inf), ("1e308/1e-10", math.inf),
])
def test_ieee_results_never_raise(text, value):
    # what C++ double arithmetic gives (and numpy): no exception, an inf or a NaN
    got = compile_scalar(text)(())
    assert (math.isnan(got) and math.isnan(value)) or got == value


def test_signed_zeros_survive_rounding_functions():
    assert math.copysign(1.0, c("ceil(u)", u=-0.5)) == -1.0
    assert math.copysign(1.0, c("fix(u)", u=-0.5)) == -1.0
    assert math.copysign(1.0, c("floor(u)", u=-0.0)) == -1.0
    assert math.copysign(1.0, c("round(u)", u=-0.3)) == -1.0


# ----------------------------------------------------------------------------- compile_scalar: errors

@pytest.mark.parametrize("text, reason", [
    ("u +", "end of text"), ("foo(1)", "unknown function 'foo'"), ("x", "unknown variable 'x'"),
    ("[1 2]", "'['"), ("u .* 2", "'.*' is an array operator"), ("u .^ 2", "array operator"),
    ("sin", "needs arguments"), ("sin(1, 2)", "takes 1 argument"), ("clamp(1, 2)", "takes 3 argument"),
    ("1 2", "unexpected '2'"), ("", "end of text"), ("(1", "expected ')'"), ("1;2", "unexpected ';'"),
    ("__import__('os')", "unexpected character"), ("u.real", "unexpected"), ("2**3", "unexpected '*'"),
    ("lambda: 1", "unexpected character"), ("k(2)", "unknown function 'k'"),
])
def test_rejected_texts_say_why(text, reason):
    with pytest.raises(ExpressionError) as info:
        compile_scalar(text, ("u",), {"k": 1.0})
    assert reason in str(info.value)


def test_vocabulary_can_be_restricted():
    with pytest.raises(ExpressionError, match="not available"):
        compile_scalar("mod(5, 3)", functions=("sin",))
    with pytest.raises(ExpressionError, match="unknown variable 'nan'"):
        compile_scalar("nan", constants={"pi": math.pi})
    assert compile_scalar("sin(pi/2)", functions=("sin",), constants={"pi": math.pi})(()) == 1.0


def test_vector_variable_is_not_a_scalar():
    with pytest.raises(ExpressionError, match="not a scalar"):
        compile_scalar("v + 1", (), {"v": np.array([1.0, 2.0])})
    assert compile_scalar("1", (), {"v": np.array([1.0, 2.0])})(()) == 1.0   # unused: fine


def test_length_depth_and_long_chains():
    with pytest.raises(ExpressionError, match="limit"):
        compile_scalar("1+" * MAX_LENGTH + "1")
    with pytest.raises(ExpressionError, match="deeper"):
        compile_scalar("(" * (MAX_DEPTH + 5) + "1" + ")" * (MAX_DEPTH + 5))
    with pytest.raises(ExpressionError, match="deeper"):
        compile_scalar("-" * 200 + "1")
    # thousands of operands in a row run as loops, not as nested closures (no RecursionError)
    assert compile_scalar("+".join(["u"] * 4000), ("u",))((0.5,)) == 2000.0
    assert compile_scalar("*".join(["u"] * 3000), ("u",))((1.0,)) == 1.0
    assert compile_scalar("^".join(["u"] * 3000), ("u",))((1.0,)) == 1.0
    assert compile_scalar("1" + "-1" * 3000)(()) == -2999.0


def test_left_to_right_evaluation_order_in_long_chains():
    # floating point is not associative: the loop form must keep nflow's left-to-right order
    text = "1e16" + "+1" * 20 + "-1e16"
    assert compile_scalar(text)(()) == evaluate(text) == 0.0   # each +1 is lost against 1e16


# ----------------------------------------------------------------------------- compile_scalar vs evaluate

_NUMBER = st.sampled_from(["0", "1", "2", "0.5", "3.25", "10", "1e3", "7e-3", "pi", "e", "inf"])
_VAR = st.sampled_from(["a", "b"])


def _arithmetic(leaf):
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "^"]), inner).map(lambda p: f"{p[0]}{p[1]}{p[2]}"),
            st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "^"]), inner).map(lambda p: f"({p[0]} {p[1]} {p[2]})"),
            inner.map(lambda x: f"-{x}"),
            inner.map(lambda x: f"({x})"),
            st.tuples(st.sampled_from(["abs", "floor", "ceil", "round", "sign", "sqrt", "fix"]), inner).map(
                lambda p: f"{p[0]}({p[1]})"),
            st.tuples(st.sampled_from(["min", "max", "pow", "mod", "rem", "hypot"]), inner, inner).map(
                lambda p: f"{p[0]}({p[1]}, {p[2]})"),
        ),
        max_leaves=12)


_FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)


def _same(x: float, y: float) -> bool:
    """Equal, both NaN, or within 2 ulps: '^' goes through C pow in one path and numpy's
    power in the other, and pow is not correctly rounded (pi^1.1 differs in the last bit)."""
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y or abs(x - y) <= 2 * math.ulp(max(abs(x), abs(y)))


@FAST
@given(text=_arithmetic(st.one_of(_NUMBER, _VAR)), a=_FLOATS, b=_FLOATS)
def test_compiled_equals_the_text_evaluator_on_random_arithmetic(text, a, b):
    # + - * / ^, unary minus, parentheses and the exactly-rounded functions: bit for bit
    expected = evaluate(text, {"a": a, "b": b})
    got = compile_scalar(text, ("a", "b"))((a, b))
    assert isinstance(got, float)
    assert _same(got, float(expected)), (text, a, b, got, expected)


@FAST
@given(name=st.sampled_from(["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "log",
                             "log10", "log2"]), x=_FLOATS)
def test_transcendental_functions_agree_with_numpy(name, x):
    got = compile_scalar(f"{name}(x)", ("x",))((x,))
    expected = float(evaluate(f"{name}(x)", {"x": x}))
    assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected, rel=1e-14, abs=1e-300)


@FAST
@given(a=_FLOATS, b=_FLOATS)
def test_two_argument_functions_agree_with_numpy(a, b):
    for name in ("atan2", "min", "max", "pow", "hypot"):
        got = compile_scalar(f"{name}(a, b)", ("a", "b"))((a, b))
        expected = float(evaluate(f"{name}(a, b)", {"a": a, "b": b}))
        assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected, rel=1e-14), name


@FAST
@given(x=st.floats(-1e6, 1e6), lo=st.floats(-10, 0), hi=st.floats(0, 10))
def test_clamp_and_sinc_laws(x, lo, hi):
    assert c("clamp(x, lo, hi)", x=x, lo=lo, hi=hi) == min(max(x, lo), hi)
    expected = 1.0 if x == 0 else math.sin(math.pi * x) / (math.pi * x)
    assert c("sinc(x)", x=x) == expected


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="uabt0123456789.+-*/^(),e pisnqrtlogmxcf[];", max_size=40), u=_FLOATS)
def test_any_text_compiles_to_a_float_function_or_says_why(text, u):
    try:
        f = compile_scalar(text, ("u",))
    except ExpressionError as err:
        assert str(err)
        return
    assert isinstance(f((u,)), float)


def test_every_function_of_the_table_compiles():
    for name, (arity, _) in SCALAR_FUNCTIONS.items():
        args = ", ".join(["0.5"] * arity)
        assert isinstance(compile_scalar(f"{name}({args})")(()), float)


# ----------------------------------------------------------------------------- the expression block

def expr_block(expr, **kw):
    return blk("e", "expression", dict({"Expr": expr}, **kw))


def drive(expr, source, dt=0.5, duration=2.0, variables=None, solver="discrete"):
    d = diagram([dict(source, id="s"), expr_block(expr), record()], [wire("s", "e"), wire("e", "w")],
                dt=dt, duration=duration, variables=variables, solver=solver)
    return trace(d)


def test_default_expr_passes_u_through():
    d = diagram([blk("s", "clock"), blk("e", "expression"), record()], [wire("s", "e"), wire("e", "w")],
                dt=0.5, duration=1.0)
    assert trace(d)[:, 0].tolist() == [0.0, 0.5, 1.0]


def test_polynomial_of_u_with_a_variable():
    y = drive("u^2 - 2*u + k", blk("s", "clock"), variables={"k": 3})
    assert y[:, 0].tolist() == [3.0, 2.25, 2.0, 2.25, 3.0]   # t^2 - 2t + 3 at t = 0, .5, 1, 1.5, 2


def test_t_and_dt_are_the_step_time_and_the_sample_time():
    y = drive("u*0 + 10*t + dt", blk("s", "constant", Value=1), dt=0.25, duration=1.0)
    assert y[:, 0].tolist() == [0.25, 2.75, 5.25, 7.75, 10.25]


def test_u_t_dt_hide_diagram_variables_of_the_same_name():
    y = drive("u + t + dt", blk("s", "constant", Value=1), dt=0.5, duration=0.5,
              variables={"u": 100, "t": 100, "dt": 100})
    assert y[:, 0].tolist() == [1.5, 2.0]


def test_sinc_and_clamp_on_the_grid():
    y = drive("sinc(u) + clamp(u - 1, 0, 0.5)", blk("s", "clock"))
    expected = [1.0, 2 / math.pi, 0.0, 0.5 - 2 / (3 * math.pi), 0.5]
    assert y[:, 0] == pytest.approx(expected, abs=1e-15)


def test_vector_input_uses_element_0_and_fills_the_output():
    # nflow's handler is scalar: vars["u"] = getInput(...) (element 0), emitElementwise writes y everywhere
    y = drive("u*10", blk("s", "constant", Value=[2, 5, -1]), duration=0.5)
    assert y.tolist() == [[20.0, 20.0, 20.0]] * 2


def test_unconnected_input_holds_the_previous_output_zero():
    d = diagram([blk("e", "expression", Expr="t + 5", inputs=1), record()], [wire("e", "w")], duration=0.3)
    assert trace(d)[:, 0].tolist() == [0.0] * 4


def test_ieee_values_are_recorded_not_replaced():
    y = drive("1/u", blk("s", "clock"), duration=1.0)
    assert y[:, 0].tolist() == [math.inf, 2.0, 1.0]
    y = drive("sqrt(u - 1)", blk("s", "clock"), duration=1.0)
    assert math.isnan(y[0, 0]) and math.isnan(y[1, 0]) and y[2, 0] == 0.0


@pytest.mark.parametrize("expr, why", [
    ("u +", "unexpected"), ("mod(u, 2)", "unknown function 'mod'"), ("fix(u)", "unknown function 'fix'"),
    ("nan", "unknown variable 'nan'"), ("k*u", "unknown variable 'k'"), ("[u u]", "'['"), ("u.*2", "'.*'"),
    ("sin", "needs arguments"), ("clamp(u, 1)", "takes 3"),
])
def test_invalid_expression_is_nflows_diagnostic(expr, why):
    d = diagram([blk("s", "clock"), expr_block(expr), record()], [wire("s", "e"), wire("e", "w")])
    with pytest.raises(DiagramError) as info:
        run(d)
    err = info.value
    assert err.code == "expression_invalid" and err.block == "e" and err.param == "Expr"
    assert err.message.startswith(f"expression block: invalid expression '{expr}': ") and why in err.message
    assert err.path == "/blocks/1/params/Expr"


def test_invalid_expression_fails_even_when_unconnected():
    with pytest.raises(DiagramError) as info:
        run(diagram([blk("e", "expression", Expr="u ++* 2", inputs=1)], []))
    assert info.value.code == "expression_invalid"


def test_vector_variable_in_the_expression_is_invalid():
    d = diagram([blk("s", "clock"), expr_block("u + v"), record()], [wire("s", "e"), wire("e", "w")],
                variables={"v": [1, 2]})
    with pytest.raises(DiagramError, match="not a scalar"):
        run(d)


def test_runtime_failure_gives_zero(monkeypatch):
    # compile_scalar's arithmetic never raises; the handler's catch-all still maps a failure to 0
    import nflow_compat.blocks.userdefined as ud

    def failing(*args, **kwargs):
        def f(values):
            if values[1] > 0.15:
                raise OverflowError("boom")
            return 7.0
        return f
    monkeypatch.setattr(ud, "compile_scalar", failing)
    d = diagram([blk("s", "clock"), expr_block("u"), record()], [wire("s", "e"), wire("e", "w")], duration=0.3)
    assert trace(d)[:, 0].tolist() == [7.0, 7.0, 0.0, 0.0]


def test_expression_in_a_feedback_loop_with_a_delay():
    # x[k+1] = x[k]/2 + 1 from x[0] = 0: 0, 1, 1.5, 1.75, 1.875
    d = diagram([blk("e", "expression", Expr="u/2 + 1"), blk("z", "unitDelay"), record()],
                [wire("z", "e"), wire("e", "z"), wire("z", "w")], dt=1.0, duration=4.0)
    assert trace(d)[:, 0].tolist() == [0.0, 1.0, 1.5, 1.75, 1.875]


def test_direct_feedthrough_loop_is_reported():
    d = diagram([blk("e", "expression", Expr="u + 1"), record()], [wire("e", "e"), wire("e", "w")])
    with pytest.raises(Exception) as info:
        run(d)
    assert getattr(info.value, "code", None) == "algebraic_loop"


def test_under_a_variable_step_solver():
    # integral of cos(t) from 0 is sin(t); the expression is re-entered by the solver's stages
    d = diagram([blk("c", "clock"), blk("e", "expression", Expr="cos(u)"), blk("i", "integrator"), record()],
                [wire("c", "e"), wire("e", "i"), wire("i", "w")], dt=0.1, duration=1.0, solver="ode45")
    res = run(d)
    assert np.asarray(res["workspace"]["y"])[:, 0] == pytest.approx(np.sin(res["time"]), abs=1e-9)


def test_plan_runs_twice_alike():
    plan = nc.compile_plan(diagram([blk("s", "clock"), expr_block("u^2"), record()],
                                   [wire("s", "e"), wire("e", "w")], duration=0.3))
    assert plan.run()["workspace"]["y"].tolist() == plan.run()["workspace"]["y"].tolist()


@FAST
@given(a=st.floats(-100, 100), b=st.floats(-100, 100))
def test_block_agrees_with_the_param_evaluator(a, b):
    # the block's per-step value equals evaluate() of the same text with u bound
    text = "a*u^2 - b*u + min(u, a) / (1 + abs(b))"
    y = drive(text, blk("s", "clock"), dt=0.5, duration=1.0, variables={"a": a, "b": b})
    for k, t in enumerate([0.0, 0.5, 1.0]):
        assert y[k, 0] == evaluate(text, {"a": a, "b": b, "u": t})


# ----------------------------------------------------------------------------- nelsonFunction
#
# Each form of Fcn (a function name, an anonymous function, an expression of u) against the
# same law written as an ``expression`` block (scalar) or per element (vector).

def _nelson(fcn, source, **params):
    """source -> nelsonFunction(Fcn=fcn) -> recorder y; source -> expression(u) -> z."""
    return [source, blk("f", "nelsonFunction", Fcn=fcn, **params), record()], [wire("src", "f"), wire("f", "w")]


@pytest.mark.parametrize("fcn, law", [
    ("sin", "sin(u)"), ("@sin", "sin(u)"), ("@(u) sin(u)", "sin(u)"), ("sin(u)", "sin(u)"),
    ("@(x) 2*x + 1", "2*u + 1"), ("u^2 - 3*u", "u^2 - 3*u"), ("@(v) atan2(v, 0.5)", "atan2(u, 0.5)"),
    ("exp(-u)*cos(3*u)", "exp(-u)*cos(3*u)"), ("max(u, 0.25)", "max(u, 0.25)"), ("u", "u"),
    ("abs", "abs(u)"), ("@(u) u.^3 ./ (1 + u.^2)", "u^3/(1 + u^2)"),
])
def test_nelson_function_equals_the_expression_block_scalar(fcn, law):
    source = blk("src", "sine", Amplitude=2.0, Frequency=1.3, Phase=0.2)
    blocks, conns = _nelson(fcn, source)
    blocks += [blk("e", "expression", Expr=law), record("we", "z")]
    conns += [wire("src", "e"), wire("e", "we")]
    res = run(diagram(blocks, conns, dt=0.05, duration=2.0))
    y, z = np.asarray(res["workspace"]["y"]), np.asarray(res["workspace"]["z"])
    assert y.shape == z.shape == (41, 1)
    np.testing.assert_allclose(y, z, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("fcn, law", [("sin", "sin(u)"), ("@(u) u.^2 + 1", "u^2 + 1"), ("2*u - 1", "2*u - 1"),
                                      ("@(w) sqrt(abs(w))", "sqrt(abs(u))")])
def test_nelson_function_equals_the_expression_block_per_element(fcn, law):
    """A vector input: Fcn acts on the whole vector, element by element for these laws, and
    OutputDimensions -1 keeps the width: the same as an expression block per element."""
    blocks = [blk("a", "sine", Amplitude=1.5, Frequency=0.7), blk("b", "ramp", slope=-0.8, start=0.0),
              blk("m", "mux", inputs=2, Inputs=2), blk("f", "nelsonFunction", Fcn=fcn), record(),
              blk("ea", "expression", Expr=law), blk("eb", "expression", Expr=law),
              record("wa", "za"), record("wb", "zb")]
    conns = [wire("a", "m", 0, 0), wire("b", "m", 0, 1), wire("m", "f"), wire("f", "w"),
             wire("a", "ea"), wire("b", "eb"), wire("ea", "wa"), wire("eb", "wb")]
    res = run(diagram(blocks, conns, dt=0.1, duration=1.5))
    y = np.asarray(res["workspace"]["y"])
    assert y.shape == (16, 2)
    np.testing.assert_allclose(y[:, 0], np.ravel(res["workspace"]["za"]), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(y[:, 1], np.ravel(res["workspace"]["zb"]), rtol=1e-14, atol=1e-15)


def _vector_input(fcn, **params):
    blocks = [blk("a", "constant", Value=[3.0, -4.0]), blk("f", "nelsonFunction", Fcn=fcn, **params), record()]
    return diagram(blocks, [wire("a", "f"), wire("f", "w")], duration=0.2)


@pytest.mark.parametrize("fcn, dims, expected", [
    ("atan2(u(1), u(2))", 1, [math.atan2(3.0, -4.0)]), ("norm(u)", 1, [5.0]), ("u(end)", 1, [-4.0]),
    ("@(u) [u(2), u(1), sum(u)]", 3, [-4.0, 3.0, -1.0]), ("max(u)", 1, [3.0]), ("(u > 0) .* u", -1, [3.0, 0.0]),
])
def test_nelson_function_indexes_and_reduces_its_vector_input(fcn, dims, expected):
    y = trace(_vector_input(fcn, OutputDimensions=dims))
    np.testing.assert_allclose(y, np.tile(expected, (3, 1)), rtol=1e-15)


def test_nelson_function_unconnected_input_reads_zero():
    d = diagram([blk("f", "nelsonFunction", Fcn="@(u) cos(u) + 1"), record()], [wire("f", "w")], duration=0.2)
    np.testing.assert_array_equal(trace(d), [[2.0], [2.0], [2.0]])


def test_nelson_function_complex_input_gives_complex_output():
    blocks = [blk("re", "constant", Value=1.0), blk("im", "constant", Value=2.0),
              blk("z", "realImagToComplex", inputs=2), blk("f", "nelsonFunction", Fcn="@(z) z.^2 + conj(z)"),
              record()]
    conns = [wire("re", "z", 0, 0), wire("im", "z", 0, 1), wire("z", "f"), wire("f", "w")]
    y = run(diagram(blocks, conns, duration=0.1))["workspace"]["y"]
    z = 1 + 2j
    w = z * z + z.conjugate()
    assert y == {"real": [[w.real]] * 2, "imag": [[w.imag]] * 2}


@pytest.mark.parametrize("fcn, dims, code", [
    ("u(3)", 1, "nelsonfunction_probe_failed"),            # the probe indexes past the input
    ("@(u) [u, u]", -1, "nelsonfunction_width_mismatch"),  # twice the width OutputDimensions -1 expects
    ("sum(u)", -1, "nelsonfunction_width_mismatch"),
    ("norm(u)", 2, "nelsonfunction_width_mismatch"),
])
def test_nelson_function_probe_errors(fcn, dims, code):
    with pytest.raises(SimulationError) as info:
        run(_vector_input(fcn, OutputDimensions=dims))
    assert info.value.code == code and info.value.block == "f" and info.value.path == "/blocks/1"
    assert fcn in info.value.message


def test_nelson_function_complex_result_on_a_real_port_fails():
    """sqrt of a negative number is complex in Nelson: on a real output port it is nflow's
    ``nelsonfunction_complex_result`` (the probe at u = 0 passes, the ramp below 0 fails)."""
    d = diagram([blk("r", "ramp", slope=-1.0, start=0.0), blk("f", "nelsonFunction", Fcn="sqrt"), record()],
                [wire("r", "f"), wire("f", "w")])
    with pytest.raises(SimulationError) as info:
        run(d)
    assert info.value.code == "nelsonfunction_complex_result" and "t = 0.1" in info.value.message


@pytest.mark.parametrize("fcn, form", [
    ("myController", "function name"), ("disp", "function name"), ("y = 2*u", "statement"),
    ("[a, b] = deal(u)", "statement"), ("{u, 2}", "cell array"), ("u.gain * 2", "struct field"),
    ("sprintf('%g', u)", "string"), ("@(u, t) u + t", "anonymous function of 2 arguments"),
    ("@() 1", "anonymous function of 0 arguments"), ("@(u) y = u", "statement"),
    ("if u > 0, y = u; end", "statement"), ("2*u; 3*u", "several statements"),
])
def test_nelson_function_refuses_what_needs_the_interpreter(fcn, form):
    d = diagram([blk("s", "clock"), blk("f", "nelsonFunction", Fcn=fcn), record()], [wire("s", "f"), wire("f", "w")])
    with pytest.raises(DiagramError) as info:
        run(d)
    err = info.value
    assert err.code == "nelsonfunction_unsupported" and err.block == "f" and err.param == "Fcn"
    assert form in err.message and "Only math bodies run here" in err.message


def test_nelson_function_text_that_does_not_compile():
    d = diagram([blk("s", "clock"), blk("f", "nelsonFunction", Fcn="sin(u"), record()],
                [wire("s", "f"), wire("f", "w")])
    with pytest.raises(DiagramError) as info:
        run(d)
    assert info.value.code == "nelsonfunction_invalid" and info.value.param == "Fcn"


def test_nelson_function_runs_and_says_what_it_runs():
    assert "nelsonFunction" in {row["type"] for row in supported_types()}
    from nflow_compat.manifests import block_types
    help_text = block_types()["nelsonFunction"].help
    assert "body is math" in help_text and "interpreter" in help_text


@FAST
@given(st.floats(-50, 50), st.floats(-5, 5), st.floats(0.1, 3))
def test_nelson_function_law_holds_on_any_input(a, b, k):
    """An anonymous function of u is the same function wherever u comes from: here
    y = k*u^2 + b*u + 1 at a constant input a, against the formula."""
    d = diagram([blk("c", "constant", Value=a), blk("f", "nelsonFunction", Fcn=f"@(x) {k!r}*x.^2 + {b!r}*x + 1"),
                 record()], [wire("c", "f"), wire("f", "w")], duration=0.1)
    assert trace(d)[0, 0] == pytest.approx(k * a * a + b * a + 1, rel=1e-14, abs=1e-12)
