"""The structural pipeline (``nflow_compat.modelica.structure``): parameters, aliases,
relations, Pantelides' index reduction with dummy derivatives, the sorted blocks."""
from __future__ import annotations

import pytest

from nflow_compat.modelica import structure
from nflow_compat.modelica import symbolic as sym
from nflow_compat.modelica.symbolic import ModelicaUnsupported

from tests.modelica_models import MODELS, flat_of, structure_of

MSL = [MODELS / "msl"]
MSL_MODELS = (MODELS / "MslModels.mo").read_text()


def test_parameters_are_evaluated_in_dependency_order_and_overridden():
    model = flat_of("model P\n  parameter Real a = 2 * b;\n  parameter Real b = c + 1;\n  parameter Real c = 1;\n"
                    "  Real x(start = a, fixed = true);\nequation\n  der(x) = -x;\nend P;")
    assert structure.parameter_values(model, {}) == {"a": 4.0, "b": 2.0, "c": 1.0}
    assert structure.parameter_values(model, {"c": 4.0}) == {"a": 10.0, "b": 5.0, "c": 4.0}
    st = structure.lower(model, {"c": 4.0})
    assert st.starts["x"] == 10.0


def test_a_parameter_computed_at_initialization_is_refused():
    with pytest.raises(ModelicaUnsupported) as info:
        structure_of("model Q\n  parameter Real p(fixed = false);\n  Real x(start = 1, fixed = true);\n"
                     "initial equation\n  p = 2 * x;\nequation\n  der(x) = -p * x;\nend Q;")
    assert "fixed = false" in info.value.message


def test_connection_equations_become_aliases():
    st = structure_of(MSL_MODELS, name="MslModels.DCMotor", roots=MSL)
    assert len(st.aliases) > 40 and len(st.unknowns) < 25
    assert st.aliases["resistor.p.v"] is not None and st.aliases["w"] is not None   # w = rotor.w


@pytest.mark.parametrize("model, states", [
    # a capacitor loop (C1-C2-C3, C3-C4-C5): the dummy derivatives leave C1, C3, C5 (fixed
    # starts) as states, C2 and C4 algebraic
    ("MslModels.CauerLowPass", {"C1.v", "C3.v", "C5.v", "L1.i", "L2.i"}),
    # damper1.s_rel (stateSelect = prefer) beside mass2.s: mass2.s is made algebraic
    ("MslModels.Oscillator", {"mass1.s", "mass1.v", "mass2.v", "damper1.s_rel"}),
    # the EMF's flange, the rotor and the damper's flange are one: the damper's relative
    # angle and speed (stateSelect = prefer) are its states
    ("MslModels.DCMotor", {"inductor.i", "friction.w_rel", "friction.phi_rel"}),
])
def test_index_reduction_chooses_the_states(model, states):
    st = structure_of(MSL_MODELS, name=model, roots=MSL)
    assert {n for n, order in st.states if order == 0} == states


def test_two_rigidly_joined_masses_are_one_degree_of_freedom():
    # s2 = s1 + 1 is differentiated twice (index 3): two states remain, in one Newton-free
    # sorted system
    st = structure_of("model R\n  parameter Real m1 = 1, m2 = 3, F = 2;\n  Real s1(start = 0, fixed = true), "
                      "v1(start = 0, fixed = true), s2, v2, f;\nequation\n  der(s1) = v1;\n  m1*der(v1) = f;\n"
                      "  der(s2) = v2;\n  m2*der(v2) = -f + F;\n  s2 = s1 + 1;\nend R;")
    assert st.states == [("s1", 0), ("v1", 0)]
    assert ("v2", 1) in st.unknowns and ("s2", 0) in st.unknowns


def test_relations_are_lifted_unless_under_no_event():
    st = structure_of("model L\n  Real x(start = 1, fixed = true);\n  Real y;\n  discrete Integer k(start = 0);\n"
                      "equation\n  der(x) = if x > 0.5 then -1 else if k > 0 then 0 else -2;\n"
                      "  y = noEvent(if x > 0.2 then x else 0);\n  when time > 0.1 then\n    k = 1;\n  end when;\nend L;")
    # x > 0.5 and time > 0.1 watched; k > 0 (a held value) and the noEvent one are not
    assert sorted(r.op + repr(r.rhs.value) for r in st.relations) == [">0.1", ">0.5"]


def test_a_structurally_singular_model_names_an_equation():
    with pytest.raises(ModelicaUnsupported) as info:
        structure_of("model S\n  Real x, y, z;\nequation\n  x + y = 1;\n  x - y = 2;\n  x + 2 * y = 3;\nend S;")
    assert info.value.pos is not None


def test_constraints_on_inputs_need_their_derivative():
    with pytest.raises(ModelicaUnsupported) as info:
        structure_of("model C\n  input Real u;\n  Real x(start = 0, fixed = true);\n  Real v;\nequation\n"
                     "  der(x) = v;\n  x = u;\nend C;")
    assert "time derivative of the input u" in info.value.message


def test_blocks_are_sorted_and_loops_kept_together():
    st = structure_of("model B\n  Real x(start = 1, fixed = true);\n  Real a, b, c;\nequation\n  der(x) = c;\n"
                      "  a + b = x;\n  a - b * b = 0;\n  c = a * b;\nend B;")
    sizes = [len(b.unknowns) for b in st.blocks]
    assert sorted(sizes) == [1, 1, 2]
    order = [u for b in st.blocks for u in b.unknowns]
    assert order.index(("c", 0)) > max(order.index(("a", 0)), order.index(("b", 0)))


def test_a_long_chain_of_aliases_stays_k_x_plus_d():
    n = 400
    source = "\n".join(["model Chain", "  Real x(start = 1, fixed = true);"] + [f"  Real a{i};" for i in range(n)]
                       + ["equation", "  der(x) = -x;", "  a0 = x + 1;"]
                       + [f"  a{i} = 2 * a{i - 1} + 1;" for i in range(1, 10)]
                       + [f"  a{i} = a{i - 1} - 1;" for i in range(10, n)] + ["end Chain;"])
    st = structure_of(source)
    last = st.aliases[f"a{n - 1}"]
    assert sum(1 for _ in sym.walk_nodes(last)) <= 5                 # k*x + d, however long the chain
    k, d = sym.linear_split(last, ("x", 0))
    assert k.value == 2.0 ** 9 and d.value == 2.0 ** 10 - 1 - (n - 10)
