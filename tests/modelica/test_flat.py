"""Reading rumoca's flat model (``nflow_compat.modelica.flat``): variables and attributes,
equations, when-chains, functions inlined, and what is refused with its source line."""
from __future__ import annotations

import pytest

from nflow_compat.modelica import symbolic as sym
from nflow_compat.modelica.flat import Assign, Conditional, Reinit
from nflow_compat.modelica.symbolic import ModelicaUnsupported

from tests.modelica_models import flat_of, loaded


def test_variables_keep_their_attributes_and_top_level_ports():
    model = flat_of("""model A
  parameter Real k = 2 "gain";
  input Real u;
  output Real y;
  Real x(start = 1, fixed = true, stateSelect = StateSelect.prefer);
  Boolean b(start = true);
  discrete Integer n;
equation
  der(x) = -k * x + u;
  y = x;
  b = x > 0;
  when b then
    n = pre(n) + 1;
  end when;
end A;""")
    v = model.variables
    assert (v["k"].variability, v["k"].binding, v["k"].description) == ("parameter", sym.num(2), "gain")
    assert v["u"].causality == "input" and v["u"].top_level and v["y"].causality == "output"
    assert v["x"].fixed and v["x"].start == sym.num(1) and v["x"].state_select == "prefer"
    assert (v["b"].type, v["n"].type, v["n"].variability) == ("Boolean", "Integer", "discrete")
    assert v["b"].binding is not None or any("b" in str(e.residual) for e in model.equations)
    (branch,), = model.whens
    assert isinstance(branch.body[0], Assign) and branch.body[0].target == "n"


def test_functions_with_assignments_and_branches_are_inlined():
    model = flat_of("""model F
  function clip
    input Real a;
    input Real limit;
    output Real b;
  protected
    Real twice;
  algorithm
    twice := 2 * a;
    b := twice;
    if twice > limit then
      b := limit;
    end if;
  end clip;
  Real x(start = 1, fixed = true);
equation
  der(x) = clip(x, 3);
end F;""")
    (eq,) = model.equations
    assert "clip" not in repr(eq.residual) and isinstance(next(n for n in sym.walk_nodes(eq.residual)
                                                             if isinstance(n, sym.If)), sym.If)


def test_when_bodies_read_reinit_and_if_equations():
    model = flat_of("""model W
  Real x(start = 1, fixed = true);
  discrete Real y(start = 0, fixed = true);
equation
  der(x) = -x;
  when x < 0.5 then
    reinit(x, 1);
    if time > 0.3 then
      y = 1;
    else
      y = 2;
    end if;
  end when;
end W;""")
    (branch,), = model.whens
    kinds = {type(item) for item in branch.body}
    assert Reinit in kinds and (Conditional in kinds or Assign in kinds)


@pytest.mark.parametrize("source, words", [
    ("model A\n  Real x[2];\nequation\n  der(x) = {1, 2};\nend A;", "array variable"),
    ("model B\n  Real x;\n  Real y;\nalgorithm\n  y := 1;\nequation\n  der(x) = y;\nend B;", "algorithm section"),
    ("model C\n  function f\n    input Real u;\n    output Real y;\n  algorithm\n    y := 0;\n    for i in 1:3 loop\n"
     "      y := y + u;\n    end for;\n  end f;\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = f(x);\nend C;",
     "for statement"),
])
def test_what_is_not_read_is_refused_with_its_position(source, words):
    with pytest.raises(ModelicaUnsupported) as info:
        loaded(source)
    assert words in info.value.message and info.value.pos is not None
    assert "line" in info.value.loaded.describe(info.value.pos)


def test_expressions_nested_too_deeply_are_refused():
    terms = " + ".join(["x"] * 400)
    with pytest.raises(ModelicaUnsupported) as info:
        loaded(f"model Deep\n  Real x(start = 1, fixed = true);\n  Real y;\nequation\n  der(x) = -x;\n  y = {terms};\nend Deep;")
    assert "levels deep" in info.value.message
