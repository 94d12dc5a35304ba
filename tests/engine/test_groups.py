"""Conditional and iterated execution (the group scheduler, nflow_compat/engine/groups.py):
action / enabled subsystems driven by if / switchCase, merge, function-call generator and
split, for / while iterators (iteratorNumber, iteratorCondition). The if / switchCase blocks
on their own are in tests/blocks/test_logic.py."""
import numpy as np
import pytest

import nflow_compat as nc
from tests.subsystem_bodies import counter_body, minimal_port_in, minimal_port_out, minimal_sub, running_sum_body
from tests.util import blk, diagram, drive, one, record, series, trace, wire


def error_of(d, **kw):
    with pytest.raises(nc.NFlowError) as info:
        nc.simulate(d, **kw)
    return info.value


# ----------------------------------------------------------------------------- action subsystems + merge

def _action(id, gain):
    return minimal_sub(id, [minimal_port_in(), blk("g", "gain", Gain=gain), minimal_port_out()],
                       [wire("in1", "g"), wire("g", "out1")],
                       controlPort="action")


def _if_merge(expr="u1 > 0.25", show_else="on", initial=-5.0, duration=0.6):
    """ramp -> if; output 0 runs 'a' (x10), the else output runs 'b' (x-1); both into a merge."""
    n_out = 2 if show_else == "on" else 1
    blocks = [blk("r", "ramp", slope=1), blk("i", "if", IfExpression=expr, ShowElse=show_else, inputs=1,
                                               outputs=n_out),
              _action("a", 10), _action("b", -1), blk("m", "merge", InitialOutput=initial, inputs=2), record()]
    conns = [wire("r", "i"), wire("r", "a"), wire("r", "b"), wire("i", "a", 0, 1), wire("a", "m", 0, 0),
             wire("b", "m", 0, 1), wire("m", "w")]
    if n_out == 2:
        conns.append(wire("i", "b", 1, 1))
    return diagram(blocks, conns, duration=duration)


def test_action_subsystems_and_merge():
    t = 0.1 * np.arange(7)
    y = trace(_if_merge()).ravel()
    assert np.allclose(y, np.where(t > 0.25, 10 * t, -t), atol=1e-12)


def test_merge_holds_when_nothing_ran():
    # only 'a' is driven (no else): before t = 0.3 nothing ran, the merge shows InitialOutput;
    # after the if goes false again ('u1 < 0.35'), it holds the last value
    y = trace(_if_merge(expr="u1 > 0.15 & u1 < 0.35", show_else="off")).ravel()
    assert np.allclose(y, [-5, -5, 2, 3, 3, 3, 3], atol=1e-12)


def test_merge_later_port_wins_when_two_ran():
    d = diagram([blk("c", "constant", Value=2), blk("i", "if", IfExpression="u1 > 0", inputs=1, outputs=2),
                 _action("a", 10), _action("b", -1), blk("m", "merge", inputs=2), record()],
                [wire("c", "i"), wire("c", "a"), wire("c", "b"), wire("i", "a", 0, 1), wire("i", "b", 0, 1),
                 wire("a", "m", 0, 0), wire("b", "m", 0, 1), wire("m", "w")], duration=0.1)
    assert trace(d).ravel().tolist() == [-2.0, -2.0]


def test_merge_of_plain_signals_and_a_vector_initial_output():
    # sources outside conditional subsystems run every step: the later connected port wins
    y = drive(blk("b", "merge", InitialOutput=[1, 2], inputs=3), {0: blk("k", "constant", Value=[5, 6]),
                                                                  1: blk("z", "constant", Value=9)}, duration=0.1)
    assert y.tolist() == [[9.0, 9.0], [9.0, 9.0]]
    # nothing connected: scalar width, InitialOutput fitted to it, held
    held = drive(blk("b", "merge", InitialOutput=[1, 2], inputs=2), {}, duration=0.1)
    assert held.tolist() == [[1.0], [1.0]]
    wide = drive(blk("b", "merge", InitialOutput=[1, 2], inputs=1), {0: blk("k", "constant", Value=[5, 6])},
                 duration=0.1)
    assert wide.tolist() == [[5.0, 6.0], [5.0, 6.0]]


def test_action_state_holds_while_inactive():
    # a counter (delay + 1) inside an action subsystem counts only the steps it runs
    body = [minimal_port_in(), blk("one", "constant", Value=1), blk("s", "sum", inputs=2), blk("d", "unitDelay"),
            minimal_port_out()]
    conns = [wire("one", "s", 0, 0), wire("d", "s", 0, 1), wire("s", "d"), wire("s", "out1")]
    d = diagram([blk("p", "pulse", Amplitude=1, Period=0.4, Width=50), blk("i", "if", inputs=1, outputs=1,
                                                                            ShowElse="off"),
                 minimal_sub("cnt", body, conns, controlPort="action"), record()],
                [wire("p", "i"), wire("i", "cnt", 0, 1), wire("cnt", "w")], duration=0.9)
    on = trace(diagram([blk("p", "pulse", Amplitude=1, Period=0.4, Width=50), record()], [wire("p", "w")],
                       duration=0.9)).ravel() > 0
    expect, count, last = [], 0, 0.0
    for active in on:
        if active:
            count += 1
            last = float(count)
        expect.append(last)
    assert trace(d).ravel().tolist() == expect and 0 < on.sum() < len(on)


def test_enabled_subsystem_and_frozen_integrator_under_ode45():
    # the integrator of 1 runs only while the enable signal (step at 0.5) is positive
    body = [minimal_port_in(), blk("one", "constant", Value=1), blk("i", "integrator"), minimal_port_out()]
    d = diagram([blk("st", "step", Time=0.5), minimal_sub("e", body, [wire("one", "i"), wire("i", "out1")],
                                                          controlPort={"kind": "enable"}), record()],
                [wire("st", "e", 0, 1), wire("e", "w")], duration=1.0, solver="ode45")
    res = nc.simulate(d)
    t = np.asarray(res["time"])
    assert np.allclose(np.asarray(res["workspace"]["y"]).ravel(), np.clip(t - 0.5, 0, None), atol=1e-6)


def test_switch_case_drives_three_branches():
    seq = series([1, 7, 3, 9, 4, -2], name="q")
    blocks = [seq, blk("sc", "switchCase", CaseConditions="{1, [7 9]}", inputs=1, outputs=3),
              _action("a", 1), _action("b", 10), _action("c", 100), blk("m", "merge", inputs=3), record()]
    conns = [wire("q", "sc")] + [wire("q", x) for x in "abc"] + [wire("sc", x, p, 1) for p, x in enumerate("abc")]
    conns += [wire(x, "m", 0, p) for p, x in enumerate("abc")] + [wire("m", "w")]
    y = trace(diagram(blocks, conns, duration=0.5)).ravel()
    assert y.tolist() == [1.0, 70.0, 300.0, 90.0, 400.0, -200.0]


def test_action_subsystem_with_an_unconnected_control_never_runs():
    d = diagram([blk("c", "constant", Value=3), _action("a", 2), record()], [wire("c", "a"), wire("a", "w")],
                duration=0.1)
    res = nc.simulate(d)
    assert res["workspace"]["y"] == [[0.0], [0.0]]
    assert any("'a'" in w and "never runs" in w for w in res["warnings"])


def test_control_port_as_a_named_port():
    d = _if_merge()
    for c in d["connections"]:
        if c["from"] == "i":
            c.pop("toIndex")
            c["toPort"] = "control"
    assert np.allclose(trace(d).ravel(), trace(_if_merge()).ravel())


@pytest.mark.parametrize("port, code", [({"kind": "triggered"}, "unsupported_subsystem"),
                                        ("actoin", "param_value"), (3, "param_type")])
def test_bad_control_ports(port, code):
    err = error_of(diagram([minimal_sub("s", [minimal_port_in(), minimal_port_out()], [wire("in1", "out1")],
                                        controlPort=port)], []))
    assert err.code == code and err.block == "s"


def test_nested_action_subsystems():
    # outer action on u > 0; inside, an inner action on u > 0.35 doubles it; the outer merge
    # takes the inner one when it ran, else the outer pass-through
    inner = minimal_sub("deep", [minimal_port_in(), blk("g", "gain", Gain=2), minimal_port_out()],
                        [wire("in1", "g"), wire("g", "out1")],
                        controlPort="action")
    body = [minimal_port_in(), blk("i2", "if", IfExpression="u1 > 0.35", inputs=1, outputs=1, ShowElse="off"), inner,
            blk("m2", "merge", inputs=2), minimal_port_out()]
    conns = [wire("in1", "i2"), wire("in1", "deep"), wire("i2", "deep", 0, 1), wire("in1", "m2", 0, 0),
             wire("deep", "m2", 0, 1), wire("m2", "out1")]
    d = diagram([blk("r", "ramp", slope=1, start=0.15), blk("i", "if", inputs=1, outputs=1, ShowElse="off"),
                 minimal_sub("outer", body, conns, controlPort="action"), record()],
                [wire("r", "i"), wire("r", "outer"), wire("i", "outer", 0, 1), wire("outer", "w")], duration=0.6)
    r = np.clip(0.1 * np.arange(7) - 0.15, 0, None)
    expect = np.where(r > 0.35, 2 * r, r)
    expect[r <= 0] = 0.0
    assert np.allclose(trace(d).ravel(), expect, atol=1e-12)


# ----------------------------------------------------------------------------- function calls

@pytest.mark.parametrize("n", [0, 1, 3])
def test_function_call_generator_runs_the_callee_n_times_a_step(n):
    body, conns = counter_body()
    d = diagram([blk("gen", "functionCallGenerator", NumberOfIterations=n),
                 minimal_sub("fc", body, conns, ins=(), controlPort="functionCall"), record(), record("w2", "calls")],
                [wire("gen", "fc"), wire("fc", "w"), wire("gen", "w2")], duration=0.3)
    ws = nc.simulate(d)["workspace"]
    assert np.asarray(ws["y"]).ravel().tolist() == [n * (k + 1) for k in range(4)]
    assert ws["calls"] == [[float(n)]] * 4


def _store_step(id, op, value):
    """read store 'x' -> op with value -> write 'x' (a function-call callee)."""
    kind = {"add": ("bias", {"Bias": value}), "mul": ("gain", {"Gain": value})}[op]
    return minimal_sub(id, [blk("r", "dataStoreRead", DataStoreName="x"), blk("f", kind[0], kind[1]),
                            blk("wr", "dataStoreWrite", DataStoreName="x")], [wire("r", "f"), wire("f", "wr")],
                       ins=(), outs=(), controlPort="functionCall")


@pytest.mark.parametrize("order", ["add-first", "mul-first"])
def test_function_call_split_calls_in_port_order(order):
    first, second = ("p", "q") if order == "add-first" else ("q", "p")
    d = diagram([blk("mem", "dataStoreMemory", DataStoreName="x", InitialValue=1),
                 blk("gen", "functionCallGenerator"), blk("split", "functionCallSplit", inputs=1, outputs=2),
                 _store_step("p", "add", 1), _store_step("q", "mul", 2), blk("rd", "dataStoreRead", DataStoreName="x"),
                 record()],
                [wire("gen", "split"), wire("split", first, 0, 0), wire("split", second, 1, 0), wire("rd", "w")],
                duration=0.3)
    y = trace(d).ravel().tolist()
    x, expect = 1.0, []
    for _ in range(4):
        expect.append(x)                     # the top-level read sees the previous step's store
        x = (x + 1) * 2 if order == "add-first" else x * 2 + 1
    assert y == expect


def test_chained_splits_reach_the_generator():
    body, conns = counter_body()
    d = diagram([blk("gen", "functionCallGenerator", NumberOfIterations=2),
                 blk("s1", "functionCallSplit", inputs=1, outputs=2), blk("s2", "functionCallSplit", inputs=1,
                                                                          outputs=2),
                 minimal_sub("fc", body, conns, ins=(), controlPort="functionCall"), record()],
                [wire("gen", "s1"), wire("s1", "s2", 1, 0), wire("s2", "fc", 0, 0), wire("fc", "w")], duration=0.2)
    assert trace(d).ravel().tolist() == [2.0, 4.0, 6.0]


def test_function_call_errors():
    body, conns = counter_body()
    fc = minimal_sub("fc", body, conns, ins=(), controlPort="functionCall")
    wrong = diagram([blk("c", "constant"), fc], [wire("c", "fc")])
    assert error_of(wrong).code == "bad_function_call"
    solver = diagram([blk("gen", "functionCallGenerator"), fc], [wire("gen", "fc")], solver="ode45")
    err = error_of(solver)
    assert err.code == "unsupported_solver" and err.path == "/solver"
    for n in (1.5, -1, 1e12):
        count = diagram([blk("gen", "functionCallGenerator", NumberOfIterations=n), fc], [wire("gen", "fc")])
        assert error_of(count).code == "param_range"
    huge = diagram([minimal_sub("f", *running_sum_body(), ins=(), controlPort="forIterator",
                                NumberOfIterations=1e12)], [])
    assert error_of(huge).code == "param_range"


# ----------------------------------------------------------------------------- iterators

@pytest.mark.parametrize("n", [1, 4, 10])
def test_for_iterator_running_sum(n):
    body, conns = running_sum_body()
    d = diagram([minimal_sub("f", body, conns, ins=(), controlPort={"kind": "forIterator", "NumberOfIterations": n}),
                 record()], [wire("f", "w")], duration=0.3)
    # each step adds 1 + 2 + ... + n; the delay's state is held between steps
    assert trace(d).ravel().tolist() == [(k + 1) * n * (n + 1) / 2 for k in range(4)]


def test_for_iterator_count_from_a_variable_and_top_level_param():
    body, conns = running_sum_body()
    d = diagram([minimal_sub("f", body, conns, ins=(), controlPort="forIterator", NumberOfIterations="N"), record()],
                [wire("f", "w")], duration=0.1, variables={"N": 3})
    assert trace(d).ravel().tolist() == [6.0, 12.0]


def test_while_iterator_stops_on_its_condition():
    # passes while iteration < K; K comes in through the external port: the last pass is K
    body = [minimal_port_in("k"), blk("n", "iteratorNumber"), blk("lt", "relationalOperator", Operator="<", inputs=2),
            blk("cond", "iteratorCondition"), blk("count", "sum", inputs=2), blk("d", "unitDelay"), minimal_port_out()]
    conns = [wire("n", "lt", 0, 0), wire("k", "lt", 0, 1), wire("lt", "cond"), wire("n", "out1"),
             wire("n", "count", 0, 0), wire("d", "count", 0, 1), wire("count", "d")]
    d = diagram([series([1, 3, 5, 2]), minimal_sub("wl", body, conns, ins=("k",), controlPort="whileIterator"),
                 record()],
                [wire("seq", "wl"), wire("wl", "w")], duration=0.3)
    assert trace(d).ravel().tolist() == [1.0, 3.0, 5.0, 2.0]


def test_while_iterator_runs_to_its_cap_without_a_condition():
    body, conns = running_sum_body()
    for spec, cap in (({"kind": "whileIterator", "MaxIterations": 7}, 7), ("whileIterator", 100)):
        d = diagram([minimal_sub("wl", body + [blk("cond", "iteratorCondition")], conns, ins=(), controlPort=spec),
                     record()], [wire("wl", "w")], duration=0.1)
        assert trace(d).ravel().tolist() == [cap * (cap + 1) / 2, cap * (cap + 1)]


def test_iterator_blocks_outside_iterators():
    assert drive(blk("b", "iteratorNumber"), {}, duration=0.1).ravel().tolist() == [0.0, 0.0]
    assert one(blk("b", "iteratorCondition"), 4.5).tolist() == [4.5]
    assert drive(blk("b", "iteratorCondition"), {}, duration=0.1).ravel().tolist() == [1.0, 1.0]


def test_action_inside_a_for_iterator():
    # sum of the odd pass numbers: an action subsystem inside the loop runs on odd passes
    odd = minimal_sub("odd", [minimal_port_in(), blk("g", "gain", Gain=1), minimal_port_out()],
                      [wire("in1", "g"), wire("g", "out1")],
                      controlPort="action")
    body = [blk("n", "iteratorNumber"), blk("half", "gain", Gain=0.5), blk("fl", "roundingFunction", Operator="floor"),
            blk("tw", "gain", Gain=2), blk("rem", "sum", Inputs="+-", inputs=2),
            blk("i", "if", IfExpression="u1 > 0.5", inputs=1, outputs=1, ShowElse="off"), odd,
            blk("m", "merge", inputs=1), blk("acc", "sum", inputs=2), blk("d", "unitDelay"), minimal_port_out()]
    conns = [wire("n", "half"), wire("half", "fl"), wire("fl", "tw"), wire("n", "rem", 0, 0), wire("tw", "rem", 0, 1),
             wire("rem", "i"), wire("n", "odd"), wire("i", "odd", 0, 1), wire("odd", "m"),
             wire("m", "acc", 0, 0), wire("d", "acc", 0, 1), wire("acc", "d"), wire("acc", "out1")]
    d = diagram([minimal_sub("f", body, conns, ins=(), controlPort={"kind": "forIterator", "NumberOfIterations": 5}),
                 record()], [wire("f", "w")], duration=0.0001, dt=0.0001)
    # passes 1..5: odd ones add 1, 3, 5; on even passes the merge holds the last odd value
    assert trace(d).ravel().tolist()[0] == 1 + 1 + 3 + 3 + 5


def test_iterator_errors():
    body, conns = running_sum_body()
    cont = diagram([minimal_sub("f", body + [blk("i", "integrator")], conns, ins=(), controlPort="forIterator")], [])
    assert error_of(cont).code == "continuous_in_iterator"
    # an iterated subsystem inside an algebraic loop
    loop_body = [minimal_port_in(), blk("g", "gain", Gain=0.5), minimal_port_out()]
    loop = diagram([blk("c", "constant"), blk("s", "sum", inputs=2),
                    minimal_sub("f", loop_body, [wire("in1", "g"), wire("g", "out1")], controlPort="forIterator")],
                   [wire("c", "s", 0, 0), wire("f", "s", 0, 1), wire("s", "f")])
    err = error_of(loop)
    assert err.code == "algebraic_loop" and err.block == "f"
    cap = diagram([minimal_sub("f", body, conns, ins=(), controlPort="whileIterator", MaxIterations=0)], [])
    assert error_of(cap).code == "param_range"
    two = diagram([minimal_sub("f", body + [blk("c1", "iteratorCondition"), blk("c2", "iteratorCondition")], conns,
                               ins=(), controlPort="whileIterator")], [])
    assert error_of(two).code == "bad_iterator"


def test_plans_run_twice_give_the_same_result():
    body, conns = running_sum_body()
    d = diagram([minimal_sub("f", body, conns, ins=(), controlPort="forIterator", NumberOfIterations=3),
                 _action("a", 2), blk("i", "if", inputs=1, outputs=1, ShowElse="off"), blk("r", "ramp", start=0.2),
                 record(), record("w2", "a")],
                [wire("f", "w"), wire("r", "i"), wire("r", "a"), wire("i", "a", 0, 1), wire("a", "w2")],
                duration=0.5)
    plan = nc.compile_plan(d)
    first, second = plan.run(), plan.run()
    for name in ("y", "a"):
        assert np.array_equal(np.asarray(first["workspace"][name]), np.asarray(second["workspace"][name]))
    assert np.asarray(first["workspace"]["y"]).ravel().tolist() == [6.0 * (k + 1) for k in range(6)]
