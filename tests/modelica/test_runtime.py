"""The runtime (``nflow_compat.modelica.runtime``): evaluation, Modelica's event iteration
(when/elsewhen, pre, change, reinit, sample, initial()), initialization, the relations as
the engine sees them. The parts are driven here by hand, as engine.hybrid drives them."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests.modelica_models import part_of


def values(part, program, t, x):
    v = part.evaluate(t, np.asarray(x, dtype=float))
    return {name: v[program.slots[("var", name, 0)]] for (_, name, order) in
            [k for k in program.slots if k[0] == "var"] if order == 0}


def test_an_evaluation_solves_the_sorted_blocks_at_the_given_state_and_inputs():
    part, program = part_of("model A\n  input Real u;\n  Real x(start = 2, fixed = true);\n  Real a, b;\n"
                            "  output Real y = a;\nequation\n  der(x) = -b;\n  a + b = x + u;\n  a - b * b = 0;\nend A;",
                            inputs=[1.0])
    x = part.initialize(0.0, part.x0)
    assert x.tolist() == [2.0]
    got = values(part, program, 0.0, [2.0])
    # the output y is kept, a is its alias
    assert got["y"] + got["b"] == pytest.approx(3.0) and got["y"] == pytest.approx(got["b"] ** 2)
    part.inputs_list[0] = 5.0
    assert part.derivative(0.0, np.array([2.0]))[0] == pytest.approx(-(-1 + math.sqrt(29)) / 2)


def test_change_sees_an_assignment_of_the_same_event_and_counts_it_once():
    part, program = part_of("model C\n  input Real u;\n  Boolean on(start = false, fixed = true);\n"
                            "  Integer n(start = 0, fixed = true);\n  output Real y = n;\nequation\n"
                            "  when u > 0.5 then\n    on = true;\n  elsewhen u < -0.5 then\n    on = false;\n  end when;\n"
                            "  when change(on) then\n    n = pre(n) + 1;\n  end when;\nend C;", inputs=[0.0])
    part.initialize(0.0, part.x0)
    slot = program.slots[("var", "n", 0)]
    for t, u, count in ((1.0, 1.0, 1), (2.0, 1.0, 1), (3.0, -1.0, 2), (4.0, 0.0, 2), (5.0, 1.0, 3)):
        part.inputs_list[0] = u
        part.handle_events(t, part.x0, ())
        assert part.v[slot] == count, t


def test_the_first_true_branch_of_a_when_chain_fires():
    part, program = part_of("model E\n  input Real u;\n  discrete Real y(start = 0, fixed = true);\n"
                            "  output Real out = y;\nequation\n  when u > 1 then\n    y = 1;\n  elsewhen u > 0 then\n"
                            "    y = 2;\n  end when;\nend E;", inputs=[0.0])
    part.initialize(0.0, part.x0)
    slot = program.slots[("var", "y", 0)]
    part.inputs_list[0] = 2.0        # both conditions become true at once: the first branch
    part.handle_events(1.0, part.x0, ())
    assert part.v[slot] == 1.0
    part.inputs_list[0] = 0.5        # the first falls, the second was already true: nothing fires
    part.handle_events(2.0, part.x0, ())
    assert part.v[slot] == 1.0


def test_at_initialization_only_when_clauses_with_initial_fire():
    part, program = part_of("model I\n  Real x(start = 2, fixed = true);\n  discrete Real a(start = 0, fixed = true);\n"
                            "  discrete Real b(start = 0, fixed = true);\n  output Real y = a + b;\nequation\n"
                            "  der(x) = -x;\n  when x > 1 then\n    a = 1;\n  end when;\n  when initial() then\n"
                            "    b = 7;\n  end when;\nend I;")
    part.initialize(0.0, part.x0)
    assert part.v[program.slots[("var", "a", 0)]] == 0.0 and part.v[program.slots[("var", "b", 0)]] == 7.0
    # x > 1 was true at the start, so it fires only after falling and rising again
    g = part.event_functions(0.0, np.array([2.0]))
    assert g.tolist() == [1.0] and part.relation_values(0.0, np.array([2.0])).tolist() == [1.0]


def test_reinit_uses_the_left_limit_through_pre():
    part, program = part_of("model B\n  Real h(start = 1, fixed = true);\n  Real v(start = 0, fixed = true);\n"
                            "equation\n  der(h) = v;\n  der(v) = -10;\n  when h < 0 then\n    reinit(v, -0.5 * pre(v));\n"
                            "  end when;\nend B;")
    part.initialize(0.0, part.x0)
    x = part.handle_events(0.45, np.array([-1e-12, -4.5]), (0,))
    assert x.tolist() == [-1e-12, 2.25]
    assert part.ctx.events[-1]["changed"] == ["v"] and part.ctx.events[-1]["kind"] == "state_event"


def test_relation_values_follow_the_engine_convention():
    # g > 0 is the engine's relation: x > 0.5 watches x - 0.5; x >= 0.5 watches 0.5 - x,
    # negated, so that at x == 0.5 the committed value is Modelica's (true for >=)
    part, program = part_of("model G\n  Real x(start = 0.5, fixed = true);\n  Real a, b;\nequation\n  der(x) = 1;\n"
                            "  a = if x > 0.5 then 1 else 0;\n  b = if x >= 0.5 then 1 else 0;\nend G;")
    x = part.initialize(0.0, part.x0)
    assert sorted(part.event_functions(0.0, x).tolist()) == [0.0, 0.0]
    committed = dict(zip([program.st.relations[k].op for k, _, _ in program.watched], part.relation_values(0.0, x)))
    assert committed == {">": 0.0, ">=": 0.0}      # >= true at the tie: engine's g > 0 (0.5 - x > 0) false


def test_samples_tick_at_their_times_from_the_start():
    part, program = part_of("model S\n  Integer n(start = 0, fixed = true);\n  output Real y = n;\nequation\n"
                            "  when sample(0.1, 0.25) then\n    n = pre(n) + 1;\n  end when;\nend S;")
    part.initialize(0.0, part.x0)
    ticks = []
    t = 0.0
    while True:
        t = part.next_time_event(t)
        if t > 1.0:
            break
        part.handle_events(t, part.x0, ())
        ticks.append(t)
    assert ticks == pytest.approx([0.1, 0.35, 0.6, 0.85])
    assert part.v[program.slots[("var", "n", 0)]] == 4


def test_initial_conditions_are_solved_and_a_contradicting_one_is_dropped_with_a_warning():
    # x and y are tied by y = 2 x: both fixed, consistently, then inconsistently
    model = ("model T\n  Real x(start = 1, fixed = true);\n  Real y(start = {y0}, fixed = true);\nequation\n"
             "  der(x) = -x;\n  y = 2 * x;\nend T;")
    part, _ = part_of(model.format(y0=2))
    assert part.initialize(0.0, part.x0).tolist() == [1.0] and part.ctx.warnings == []
    part, _ = part_of(model.format(y0=5))
    assert part.initialize(0.0, part.x0).tolist() == [1.0]
    assert "contradicts the others" in part.ctx.warnings[0]
    # an initial equation before a fixed start: steady state der(x) = 0 of x' = 3 - x
    part, _ = part_of("model U\n  Real x(start = 0);\ninitial equation\n  der(x) = 0;\nequation\n  der(x) = 3 - x;\nend U;")
    assert part.initialize(0.0, part.x0).tolist() == pytest.approx([3.0])


def test_event_iteration_that_never_settles_is_a_typed_error():
    part, _ = part_of("model O\n  input Real u;\n  Boolean b(start = false, fixed = true);\nequation\n"
                      "  when {u > 0.5, pre(b), not pre(b)} then\n    b = not pre(b);\n  end when;\nend O;", inputs=[0.0])
    from nflow_compat.errors import SimulationError
    with pytest.raises(SimulationError) as info:
        part.initialize(0.0, part.x0)
        part.inputs_list[0] = 1.0
        part.handle_events(1.0, part.x0, ())
    assert info.value.code == "event_iteration" and "t = 1" in info.value.message
