"""Time-only paths under a solver (issue 14): the blocks that depend on time alone and
that no solver stage reads are evaluated once over the major-step grid
(``engine.vectorize.select_major`` / ``MajorSteps``), with results equal bit for bit to
those of every block's closures (compared as tests/engine/both_ways.py says). The
fixed-step side of engine.vectorize is tested with the generated step function, in
tests/engine/test_codegen.py."""
from __future__ import annotations

import functools

import orjson
import pytest

import nflow_compat as nc
from nflow_compat.api import validate
from nflow_compat.engine import continuous, vectorize
from nflow_compat.engine.plan import Plan
from tests import goldens
from tests.engine.both_ways import corpus, same_both_ways
from tests.util import blk, diagram, record, wire

GRID_POINTS = 101


def _solver_plan(d, base):
    """The plan of ``d`` as it stands, or under ode45 when that makes it solver-driven
    (its integrators, transfer functions and crossing blocks become continuous parts);
    (None, d) when neither runs a solver."""
    for candidate in (d, dict(d, solver="ode45")):
        try:
            plan = Plan(validate(candidate), base_dir=base)
        except nc.NFlowError:
            continue
        if plan.has_parts:
            return plan, candidate
    return None, d


def _tapped(d, plan):
    """``d`` with every time-only top-level block recorded as it is and through a gain:
    the corpus has few time-only signals that only recorders read, so each diagram gets
    some (the recorded signal may be read by a solver stage as well, the gain is not).
    At most ``GRID_POINTS`` grid points, to keep the test fast."""
    top = {b["id"] for b in d["blocks"]}
    ids = [b.id for b in (plan.diagram.blocks[i] for i in vectorize.time_only(plan, [False] * len(plan.phases)))
           if b.id in top]
    blocks, connections = list(d["blocks"]), list(d.get("connections", []))
    for n, block_id in enumerate(ids):
        blocks += [blk(f"tap_gain{n}", "gain", Gain=2.0), record(f"tap_rec{n}", f"tap{n}"),
                   record(f"tap_raw{n}", f"tap_raw{n}")]
        connections += [wire(block_id, f"tap_gain{n}"), wire(f"tap_gain{n}", f"tap_rec{n}"),
                        wire(block_id, f"tap_raw{n}")]
    duration = min(d["duration"], (GRID_POINTS - 1) * d["sampleTime"])
    return dict(d, blocks=blocks, connections=connections, duration=duration)


@functools.lru_cache(maxsize=None)
def _case(path):
    """(the tapped solver-driven diagram of the corpus file ``path``, its FMU folder or
    None), or None when it runs no solver or nothing of it takes the grid path."""
    doc = orjson.loads(path.read_bytes())
    base = goldens._fmu_folder(doc["fmus"]) if "fmus" in doc else None
    plan, d = _solver_plan(doc.get("diagram", doc), base)
    if plan is None:
        return None
    d = _tapped(d, plan)
    return (d, base) if Plan(validate(d), base_dir=base).major_steps is not None else None


@pytest.mark.parametrize("name, path", corpus(), ids=[name for name, _ in corpus()])
def test_every_fixture_and_example_under_a_solver_gives_the_same_result_on_the_grid(name, path):
    case = _case(path)
    if case is not None:
        same_both_ways(*case)


def test_the_corpus_exercises_the_grid_path():
    """Enough of the corpus runs through the grid path that the comparison means something."""
    assert sum(_case(path) is not None for _, path in corpus()) >= 35     # 41 when written


# ----------------------------------------------------------------------------- chosen cases

def _chain(k, dt=1e-3, duration=1.0, solver="ode45"):
    """sine -> integrator -> recorder x, and sine -> k alternating gain / abs -> recorder y:
    the sine is read by solver stages (the integrator's input), the chain only by the
    recorder."""
    blocks = [blk("src", "sine", Amplitude=2.0, Frequency=1.0), blk("int", "integrator"), record("rx", "x")]
    conns, prev = [wire("src", "int"), wire("int", "rx")], "src"
    for j in range(k):
        blocks.append(blk(f"b{j}", "gain", Gain=0.9) if j % 2 == 0 else blk(f"b{j}", "abs"))
        conns.append(wire(prev, f"b{j}"))
        prev = f"b{j}"
    return diagram(blocks + [record()], conns + [wire(prev, "w")], dt=dt, duration=duration, solver=solver)


def _add(d, blocks, connections):
    return dict(d, blocks=d["blocks"] + blocks, connections=d["connections"] + connections)


def _index(plan, block_id):
    return next(b.index for b in plan.diagram.blocks if b.id == block_id)


@pytest.mark.parametrize("solver", ["ode45", "dae", "ode4"])
def test_a_time_only_chain_read_by_recorders_leaves_the_evaluations(solver):
    plan = same_both_ways(_chain(20, solver=solver))
    vector = plan.major_steps.vector
    chain = {_index(plan, f"b{j}") for j in range(20)}
    src = _index(plan, "src")
    assert chain <= vector.blocks and src in vector.members and src not in vector.blocks
    assert len(vector.recorders) == 1 and not plan.major_steps.fed
    # the sine stays in the stage evaluations (the integrator reads it), the chain does not
    assert len(plan.major_steps.output) == 2 and not plan.major_steps.algebraic


def test_a_stop_fed_from_the_grid_in_the_second_slice_leaves_the_store_as_the_closures_do():
    n = vectorize.MAX_SLICE + 5000
    d = _add(_chain(4, duration=n * 1e-3),
             [blk("clk", "clock"), blk("cmp", "compareToConstant", const=(n - 2000.5) * 1e-3, relop=">="),
              blk("stop", "stopSimulation"), record("rt", "t")],
             [wire("clk", "cmp"), wire("cmp", "stop"), wire("clk", "rt")])
    plan = same_both_ways(d)
    assert plan.major_steps.fed == [plan.output_slots[_index(plan, "cmp")][0]]
    assert plan.run()["stats"]["steps"] == n - 2000 + 1
    reference = Plan(validate(d), closures_only=True)
    reference.run()
    assert plan.S == reference.S


def test_discrete_state_restarts_at_every_grid_point_and_keeps_what_update_reads():
    # the unitDelay reads b3 in UPDATE and the hitCrossing in OUTPUT (also at solver stages):
    # b0 .. b3 keep their closures, the rest of the chain leaves
    d = _add(_chain(10, duration=0.3), [blk("z", "unitDelay"), record("rz", "z"), blk("hit", "hitCrossing")],
             [wire("b3", "z"), wire("z", "rz"), wire("b3", "hit")])
    plan = same_both_ways(d)
    vector = plan.major_steps.vector
    assert {_index(plan, f"b{j}") for j in range(4)} <= vector.members - vector.blocks
    assert {_index(plan, f"b{j}") for j in range(4, 10)} <= vector.blocks


def test_time_only_recorders_join_the_free_run_recorded_in_bulk():
    # a mass pushed by a sine force: its sensor and the force's sine recorded, no major step needed
    d = diagram([blk("f", "sine", Amplitude=2.0, Frequency=2.0), blk("F", "Force"), blk("m", "Mass", m=1.0),
                 blk("ps", "PositionSensor"), record("rs", "s"), blk("g", "gain", Gain=3.0), record("rf", "f"),
                 record("rg", "g")],
                [wire("f", "F"), {"from": "F", "fromPin": "flange", "to": "m", "toPin": "flange"},
                 {"from": "m", "fromPin": "flange", "to": "ps", "toPin": "flange"}, wire("ps", "rs"),
                 wire("f", "rf"), wire("f", "g"), wire("g", "rg")], dt=1e-3, duration=2.0, solver="ode45")
    plan = same_both_ways(d)
    closures = Plan(validate(d), closures_only=True)
    assert continuous._bulk_recording(plan, continuous.PlanSystem(plan), None) is not None
    assert continuous._bulk_recording(closures, continuous.PlanSystem(closures), None) is None


def test_progress_and_a_second_run():
    plan = Plan(validate(_chain(6, duration=0.2)))
    seen = []
    first = plan.run(progress=lambda done, total: seen.append(done))
    second = plan.run()
    assert seen[-1] == 201
    assert first["workspace"]["y"].tolist() == second["workspace"]["y"].tolist()


def test_displays_decimation_time_events_and_vector_signals_under_a_solver():
    # a step (a time event that restarts the integration) through a gain to a display (fed
    # at each major step) and a decimated recorder (in bulk); a vector constant stays in the
    # evaluations (not a real scalar)
    d = _add(_chain(2, duration=0.5),
             [blk("st", "step", Time=0.2), blk("gs", "gain", Gain=-1.5), blk("disp", "display"),
              blk("rd", "toWorkspace", VariableName="d", SaveFormat="Array", Decimation=3),
              blk("vec", "constant", Value=[1.0, 2.0]), record("rv", "v")],
             [wire("st", "gs"), wire("gs", "disp"), wire("gs", "rd"), wire("vec", "rv")])
    plan = same_both_ways(d)
    vector = plan.major_steps.vector
    assert plan.major_steps.fed == [plan.output_slots[_index(plan, "gs")][0]]
    assert _index(plan, "vec") not in vector.members and len(vector.recorders) == 2
