"""The compiled plan and the fixed-step loop: order, reuse, loops, widths. Signal types are
in test_signal_types.py, a run's typed errors in test_run.py."""
from __future__ import annotations

import random

import numpy as np
import pytest

import nflow_compat as nc
from nflow_compat import DiagramError
from tests.complex_signals import z_source
from tests.util import blk, diagram, record, trace, wire


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
