"""The compiled plan and the fixed-step loop: order, reuse, loops, widths. Signal types are
in test_signal_types.py, a run's typed errors in test_run.py."""
from __future__ import annotations

import copy
import random

import numpy as np
import pytest

import nflow_compat as nc
from nflow_compat import DiagramError
from nflow_compat.engine import Plan
from tests.complex_signals import z_source
from tests.subsystem_bodies import minimal_port_in, minimal_port_out, minimal_sub
from tests.util import blk, diagram, pin, record, trace, wire


def chain():
    return diagram([blk("s", "sine", Amplitude=2, Frequency=1), blk("g", "gain", Gain=1.5),
                    blk("sat", "saturation", LowerLimit=-1, UpperLimit=1), record()],
                   [wire("s", "g"), wire("g", "sat"), wire("sat", "w")], dt=0.05, duration=1.0)


def test_a_plan_runs_twice_with_identical_results():
    plan = nc.compile_plan(chain())
    first, second = plan.run(), plan.run()
    assert np.array_equal(first["workspace"]["y"], second["workspace"]["y"])
    assert np.array_equal(first["time"], second["time"]) and len(first["time"]) == 21


def test_stateful_blocks_are_reset_between_runs():
    d = diagram([blk("c", "constant", Value=1), blk("d", "unitDelay", InitialCondition=5),
                 blk("add", "sum", inputs=2, Inputs="++"), record()],
                [wire("c", "add", 0, 0), wire("d", "add", 0, 1), wire("add", "d"), wire("add", "w")], duration=0.3)
    plan = nc.compile_plan(d)
    assert plan.run()["workspace"]["y"].tolist() == plan.run()["workspace"]["y"].tolist() == [[6], [7], [8], [9]]


def test_block_and_connection_order_do_not_change_results():
    base = trace(chain())
    rng = random.Random(7)
    for _ in range(5):
        d = chain()
        rng.shuffle(d["blocks"])
        rng.shuffle(d["connections"])
        assert np.array_equal(trace(d), base)


def test_feedthrough_chain_is_evaluated_in_dependency_order():
    # declared sink-first: the wave must still compute g before sat in the same step
    d = chain()
    d["blocks"].reverse()
    y = trace(d)
    t = np.arange(21) * 0.05
    assert np.allclose(y[:, 0], np.clip(1.5 * 2 * np.sin(2 * np.pi * t), -1, 1), atol=1e-15)


def test_convergent_algebraic_loop_is_relaxed():
    # y = 1 + 0.5 y  ->  y = 2 (Gauss-Seidel sweeps, as nflow relaxes feedthrough cycles)
    d = diagram([blk("one", "constant", Value=1), blk("add", "sum", inputs=2, Inputs="++"),
                 blk("k", "gain", Gain=0.5), record()],
                [wire("one", "add", 0, 0), wire("k", "add", 0, 1), wire("add", "k"), wire("add", "w")], duration=0.2)
    assert np.allclose(trace(d), 2.0, rtol=1e-11)


def test_width_mismatch_is_a_diagram_error():
    d = diagram([blk("a", "constant", Value=[1, 2, 3]), blk("b", "constant", Value=[1, 2]),
                 blk("add", "sum", inputs=2, Inputs="++"), record()],
                [wire("a", "add", 0, 0), wire("b", "add", 0, 1), wire("add", "w")])
    with pytest.raises(DiagramError) as info:
        nc.simulate(d)
    assert info.value.code == "width_mismatch" and info.value.block == "add"


def test_scalar_broadcasts_into_vector():
    d = diagram([blk("a", "constant", Value=[1, 2, 3]), blk("b", "constant", Value=10),
                 blk("add", "sum", inputs=2, Inputs="+-"), record()],
                [wire("a", "add", 0, 0), wire("b", "add", 0, 1), wire("add", "w")], duration=0.1)
    assert trace(d).tolist() == [[-9, -8, -7]] * 2


def test_vector_feedback_through_a_delay_gets_its_width():
    d = diagram([blk("a", "constant", Value=[1, 2]), blk("d", "unitDelay"),
                 blk("add", "sum", inputs=2, Inputs="++"), record()],
                [wire("a", "add", 0, 0), wire("d", "add", 0, 1), wire("add", "d"), wire("add", "w")], duration=0.2)
    assert trace(d).tolist() == [[1, 2], [2, 4], [3, 6]]


def test_stop_simulation_ends_after_the_step_that_fires():
    d = diagram([blk("s", "step", Time=0.45), blk("stop", "stopSimulation"), record()],
                [wire("s", "stop"), wire("s", "w")], duration=1.0)
    res = nc.simulate(d)
    assert res["time"][-1] == pytest.approx(0.5) and res["workspace"]["y"][-1] == [1.0]
    assert res["stats"]["steps"] == 6


def test_solvers_without_continuous_state_run_the_grid():
    for solver in ("ode1", "ode4", "ode45", "dae"):
        d = chain()
        d["solver"] = solver
        assert np.array_equal(trace(d), trace(chain()))


def test_blocks_declared_with_fewer_ports_than_their_manifest_run():
    # "inputs": 0 / "outputs": 0 as jsonencode writes them for a bare block: the missing
    # inputs are unconnected, the missing outputs write nowhere visible
    d = diagram([blk("c", "constant", Value=[1, 2]), blk("g", "gain", inputs=1, outputs=0),
                 blk("s", "saturation", outputs=0), blk("a", "abs", inputs=0), blk("w", "toWorkspace", inputs=0)],
                [wire("c", "g"), wire("c", "s")], duration=0.1)
    res = nc.simulate(d)
    assert res["status"] == "ok"
    assert np.isnan(np.asarray(res["workspace"]["simout"]["signals"]["values"], dtype=float)).all()


def test_a_block_feeding_two_ports_of_another_is_ordered_once():
    """Two wires from one block into another are one edge of the feedthrough graph (a
    duplicated entry once made scipy's strong components loop forever)."""
    blocks = [blk("c", "constant", Value=2.0), blk("s", "sum", Inputs="++", inputs=2), blk("m", "mult", inputs=2),
              record()]
    conns = [wire("c", "s", 0, 0), wire("c", "s", 0, 1), wire("s", "m", 0, 0), wire("s", "m", 0, 1), wire("m", "w")]
    res = nc.simulate(diagram(blocks, conns, dt=0.1, duration=0.1))
    assert res["workspace"]["y"][0] == [16.0]


# ----------------------------------------------------------------------------- the fuzzer's result checker

@pytest.mark.parametrize("save_format", ["Array", "Structure", "Structure With Time"])
def test_the_fuzz_checker_accepts_complex_recordings(save_format):
    from tests import fuzz
    blocks, conns = z_source([1.0, 2.0], [0.5, -0.5])
    blocks.append(blk("w", "toWorkspace", VariableName="y", SaveFormat=save_format))
    raw = diagram(blocks, conns + [wire("z", "w")], duration=0.3)
    result = nc.simulate(raw)
    fuzz.check_time_grid(raw, result)
    value = result["workspace"]["y"]
    lanes = value if save_format == "Array" else value["signals"]["values"]
    lanes["imag"] = lanes["imag"][:-1]            # lanes of different lengths are caught
    with pytest.raises(AssertionError, match="real/imag lanes differ"):
        fuzz.check_time_grid(raw, result)


# ----------------------------------------------------------------------------- runs with other values

def _same_run(a: dict, b: dict) -> bool:
    return (np.array_equal(a["time"], b["time"]) and a["events"] == b["events"]
            and all(np.array_equal(a["workspace"][k], b["workspace"][k]) for k in b["workspace"]))


def _written(d: dict, **blocks) -> dict:
    """``d`` with params set: block id -> {param: value}."""
    d = copy.deepcopy(d)
    for b in d["blocks"]:
        b["params"].update(blocks.get(b["id"], {}))
    return d


def test_a_plan_runs_with_new_values_rebuilding_only_the_block_they_change():
    plan = nc.compile_plan(chain())
    before = plan.run()
    variant = plan.with_params({"g.Gain": 0.5})
    assert variant.rebuilt == {1}
    assert all(variant.phases[i] is plan.phases[i] for i in (0, 2, 3))      # the other closures are shared
    assert variant.S is plan.S and variant.members is plan.members
    assert _same_run(plan.run(params={"g.Gain": 0.5}), nc.compile_plan(_written(chain(), g={"Gain": 0.5})).run())
    assert _same_run(plan.run(), before)                                    # the plan keeps its own values
    assert _same_run(variant.run(), variant.run())


def stick_slip() -> dict:
    blocks = [blk("f", "sine", Amplitude=25, Frequency=0.25), blk("force", "Force"),
              blk("m", "MassWithStopAndFriction", F_Coulomb=5, F_Stribeck=10, smax=25, smin=-25, L=1),
              blk("v", "SpeedSensor"), record("w", "v")]
    conns = [wire("f", "force"), pin("force", "flange", "m", "flange_a"), pin("v", "flange", "m", "flange_a"),
             wire("v", "w")]
    return diagram(blocks, conns, dt=0.01, duration=2.0, solver="ode45")


def test_new_values_of_a_physical_block_lower_the_islands_again():
    plan = nc.compile_plan(stick_slip())
    before = plan.run()
    acausal = plan.with_params({"m.F_Coulomb": 2})
    assert acausal.rebuilt == {1, 2, 3} and acausal.members is not plan.members
    assert acausal.phases[0] is plan.phases[0] and acausal.phases[4] is plan.phases[4]
    causal = plan.with_params({"f.Amplitude": 20})
    assert causal.rebuilt == {0} and causal.members is plan.members
    for variant, written in ((acausal, {"m": {"F_Coulomb": 2}}), (causal, {"f": {"Amplitude": 20}})):
        assert _same_run(variant.run(), nc.compile_plan(_written(stick_slip(), **written)).run())
    assert _same_run(plan.run(), before)


def test_new_variables_rebuild_the_blocks_that_depend_on_them():
    d = diagram([blk("s", "sine", Amplitude="2*k"), blk("e", "expression", Expression="u1*k"),
                 blk("g", "gain", Gain=3), record()],
                [wire("s", "e"), wire("e", "g"), wire("g", "w")], dt=0.05, variables={"k": 1.0})
    plan = nc.compile_plan(d)
    variant = plan.with_params({"variables.k": 2.0})
    assert variant.rebuilt == {0, 1}          # the sine's Amplitude is over k; the expression reads k itself
    written = copy.deepcopy(d)
    written["variables"]["k"] = 2.0
    assert _same_run(variant.run(), nc.compile_plan(written).run())


def test_a_value_that_changes_a_width_or_the_grid_compiles_afresh():
    d = diagram([blk("c", "constant", Value=1.0), blk("g", "gain", Gain=2), record()],
                [wire("c", "g"), wire("g", "w")])
    plan = nc.compile_plan(d)
    wide = plan.with_params({"c.Value": [1.0, 2.0, 3.0]})
    assert wide.rebuilt is None and wide.S is not plan.S
    assert wide.run()["workspace"]["y"][-1].tolist() == [2.0, 4.0, 6.0]
    longer = plan.with_params({"/duration": 2.0})
    assert longer.rebuilt is None and len(longer.run()["time"]) == 21
    assert plan.run()["workspace"]["y"][-1].tolist() == [2.0] and len(plan.run()["time"]) == 11


def test_a_plan_with_subsystem_groups_is_compiled_afresh_and_the_base_still_runs():
    body = [minimal_port_in(), blk("one", "constant", Value=1), blk("i", "integrator"), minimal_port_out()]
    d = diagram([blk("st", "step", Time=0.5), minimal_sub("e", body, [wire("one", "i"), wire("i", "out1")],
                                                          controlPort={"kind": "enable"}), record()],
                [wire("st", "e", 0, 1), wire("e", "w")], duration=1.0, solver="ode45")
    plan = nc.compile_plan(d)
    before = plan.run()
    variant = plan.with_params({"st.Time": 0.2})
    assert variant.rebuilt is None and variant.diagram.structure is not plan.diagram.structure
    t = variant.run()["time"]
    assert np.allclose(variant.run()["workspace"]["y"].ravel(), np.clip(t - 0.2, 0, None), atol=1e-6)
    assert _same_run(plan.run(), before)


def test_a_plan_built_from_a_parsed_diagram_takes_top_level_block_values_only():
    d = diagram([blk("c", "constant", Value="k"), record()], [wire("c", "w")], variables={"k": 1.0})
    plan = Plan(nc.validate(d))
    assert plan.run(params={"c.Value": 4})["workspace"]["y"][-1].tolist() == [4.0]
    with pytest.raises(DiagramError) as info:
        plan.run(params={"variables.k": 2})
    assert info.value.code == "needs_source"
