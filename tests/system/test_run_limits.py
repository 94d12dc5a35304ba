"""Issue 10 items 1-2: unbounded work (iterations, algebraic-loop sweeps, the wall clock)
and memory (what recorders keep, out-of-memory as a typed error). Every hostile case here
ran for hours (or crashed) before; each must now answer with a typed error quickly."""
import os
import resource
import subprocess
import sys

import numpy as np
import orjson
import pytest

import nflow_compat as nc
from nflow_compat import cli
from tests.engine.test_groups import _counter_body, _running_sum_body, port_out, sub
from tests.system.test_limits import _warm_up, answer  # noqa: F401  (_warm_up: scipy imported before any timing)
from tests.util import blk, diagram, record, wire

QUICK = 10.0   # seconds: the bound for every hostile case
FAST = 1.0     # what is refused before the run answers within this


def _iterated(id, body, conns, kind, n, name):
    return sub(id, body, conns, ins=(), controlPort={"kind": kind, name: n})


def _for(id, body, conns, n):
    return _iterated(id, body, conns, "forIterator", n, "NumberOfIterations")


def _while(id, body, conns, cap):
    """A while iterator whose iteratorCondition is unconnected (reads 1): it runs to its cap."""
    return _iterated(id, body + [blk("cond", "iteratorCondition")], conns, "whileIterator", cap, "MaxIterations")


def _nested(make, n_outer, n_inner):
    body, conns = _running_sum_body()
    inner = make("inner", body, conns, n_inner)
    return make("outer", [inner, port_out()], [wire("inner", "out1")], n_outer)


# ----------------------------------------------------------------------------- passes known ahead

def test_nested_for_iterators_are_refused_before_the_run():
    d = diagram([_nested(_for, 1e6, 1e6), record()], [wire("outer", "w")], dt=1.0, duration=0.5)   # one sample
    err, took = answer(lambda: nc.simulate(d))
    assert isinstance(err, nc.SimulationError) and err.code == "too_many_element_steps" and took < FAST
    assert err.block == "outer/inner" and "1,000,000,000,000 passes per step" in err.message


def test_one_for_iterator_over_a_long_run_is_refused_before_the_run():
    body, conns = _running_sum_body()
    d = diagram([_for("f", body, conns, 1e6), record()], [wire("f", "w")], dt=1e-3, duration=9999.0)
    err, took = answer(lambda: nc.simulate(d))
    assert err.code == "too_many_element_steps" and err.block == "f" and took < FAST


def test_function_call_generator_counts_are_refused_before_the_run():
    body, conns = _counter_body()
    calls = diagram([blk("gen", "functionCallGenerator", NumberOfIterations=1e6),
                     sub("fc", body, conns, ins=(), controlPort="functionCall"), record()],
                    [wire("gen", "fc"), wire("fc", "w")], dt=1e-3, duration=10.0)
    err, took = answer(lambda: nc.simulate(calls))
    assert err.code == "too_many_element_steps" and err.block == "fc" and took < FAST
    # a callee holding a for iterator: the counts multiply
    rs_body, rs_conns = _running_sum_body()
    callee = sub("fc", [_for("f", rs_body, rs_conns, 1e6), port_out()], [wire("f", "out1")], ins=(),
                 controlPort="functionCall")
    nested = diagram([blk("gen", "functionCallGenerator", NumberOfIterations=1e6), callee, record()],
                     [wire("gen", "fc"), wire("fc", "w")], dt=1.0, duration=0.5)
    err, took = answer(lambda: nc.simulate(nested))
    assert err.code == "too_many_element_steps" and err.block == "fc/f" and took < FAST


@pytest.mark.parametrize("make", [_for, _while])
def test_an_inner_iterator_runs_at_every_pass_of_the_outer_one(make):
    # the inner running sum adds 1 + 2 + 3 + 4 = 10 per run; it runs at each of the 3
    # outer passes (the counts multiply, as they are counted): 30 a step, held across steps
    d = diagram([_nested(make, 3, 4), record()], [wire("outer", "w")], duration=0.1)
    assert nc.simulate(d)["workspace"]["y"] == [[30.0], [60.0]]


def test_a_function_call_inside_a_for_iterator_is_called_at_every_pass():
    body, conns = _counter_body()
    callee = sub("fc", body, conns, ins=(), controlPort="functionCall")
    loop = _for("f", [blk("gen", "functionCallGenerator", NumberOfIterations=2), callee, port_out()],
                [wire("gen", "fc"), wire("fc", "out1")], 3)
    d = diagram([loop, record()], [wire("f", "w")], duration=0.1)
    assert nc.simulate(d)["workspace"]["y"] == [[6.0], [12.0]]      # 2 calls x 3 passes a step


def test_the_passes_are_counted_exactly():
    # per sample: the for body (iteratorNumber, sum, unitDelay: one element each; the output
    # port labelSink: 1) 4 element-steps x 5 passes, plus the recorder's 1: 21; 3 samples: 63
    body, conns = _running_sum_body()
    d = diagram([_for("f", body, conns, 5), record()], [wire("f", "w")], duration=0.2)
    assert nc.simulate(d, limits=nc.Limits(max_element_steps=63))["workspace"]["y"] == [[15.0], [30.0], [45.0]]
    err, took = answer(lambda: nc.simulate(d, limits=nc.Limits(max_element_steps=62)))
    assert err.code == "too_many_element_steps" and "= 63 element-steps (limit 62)" in err.message


# ----------------------------------------------------------------------------- counted as the run goes

def test_while_iterator_at_its_cap_every_step_is_stopped_early():
    body, conns = _running_sum_body()
    d = diagram([_while("wl", body, conns, 1e6), record()], [wire("wl", "w")], dt=1e-3, duration=9999.0)
    err, took = answer(lambda: nc.simulate(d))
    assert isinstance(err, nc.SimulationError) and err.code == "too_many_element_steps" and took < QUICK
    assert "at the rate of its first" in err.message


def test_while_iterator_passes_count_against_the_limit():
    # the body is the for body above plus the iteratorCondition: 5 element-steps a pass.
    # 7 passes a step: the first counted ahead ((5 + 1 for the recorder) x 2 samples = 12),
    # the other 6 as they run (6 x 5 x 2 samples = 60): 72 in all
    body, conns = _running_sum_body()
    d = diagram([_while("wl", body, conns, 7), record()], [wire("wl", "w")], duration=0.1)
    assert nc.simulate(d, limits=nc.Limits(max_element_steps=72))["workspace"]["y"] == [[28.0], [56.0]]
    err, took = answer(lambda: nc.simulate(d, limits=nc.Limits(max_element_steps=71)))
    assert err.code == "too_many_element_steps" and took < FAST


def _slow_loop(gain=0.9, dt=1e-3, duration=9999.0):
    """y = gain*y + noise: an algebraic loop Gauss-Seidel needs ~ln(1e-12)/ln(gain) sweeps
    a step to settle (~260 for 0.9)."""
    return diagram([blk("n", "noise"), blk("s", "sum", inputs=2), blk("g", "gain", Gain=gain), record()],
                   [wire("n", "s", 0, 0), wire("g", "s", 0, 1), wire("s", "g"), wire("s", "w")],
                   dt=dt, duration=duration)


def test_slow_algebraic_loop_with_default_limits_is_stopped_early():
    err, took = answer(lambda: nc.simulate(_slow_loop()))   # ~1e7 samples: hours of sweeps
    assert isinstance(err, nc.SimulationError) and err.code == "too_many_element_steps" and took < QUICK
    assert "algebraic-loop" in err.message


def test_a_quickly_converging_loop_runs_to_the_end():
    d = _slow_loop(gain=1e-3, duration=5.0)           # 3-4 sweeps a step, 5001 samples
    y = np.asarray(nc.simulate(d)["workspace"]["y"])
    assert y.shape == (5001, 1)


# ----------------------------------------------------------------------------- the wall clock

def test_max_seconds_stops_a_plain_long_run():
    # an accumulator (the sum of its own output a step before): a path fed by time alone
    # would be computed over the whole grid at once, in well under the limit
    d = diagram([blk("c", "constant", Value=2), blk("acc", "sum", Inputs="++", inputs=2), blk("z", "unitDelay"),
                 record()],
                [wire("c", "acc"), wire("z", "acc", 0, 1), wire("acc", "z"), wire("acc", "w")], dt=1e-3,
                duration=9999.0)
    err, took = answer(lambda: nc.simulate(d, limits=nc.Limits(max_seconds=0.5)))
    assert isinstance(err, nc.SimulationError) and err.code == "time_limit" and 0.5 <= took < 2.0


@pytest.mark.parametrize("make, passes", [(_while, 1e6), (_for, 1e4)])
def test_max_seconds_stops_nested_iterators_inside_one_step(make, passes):
    # while: 1e12 passes of the inner body, counted as they run; for: 1e8 passes x 5
    # element-steps, inside max_element_steps, yet minutes of work in one step
    d = diagram([_nested(make, passes, passes), record()], [wire("outer", "w")], dt=1.0, duration=0.5)
    err, took = answer(lambda: nc.simulate(d, limits=nc.Limits(max_seconds=0.5)))
    assert err.code == "time_limit" and took < 2.0


def test_max_seconds_stops_a_solver_between_grid_points():
    # one grid interval; ode45 at maxStep 1e-5 takes 1e5 steps inside it (tens of seconds)
    d = diagram([blk("m", "Mass", v0=1)], [], dt=1.0, duration=1.0, solver="ode45", maxStep=1e-5)
    err, took = answer(lambda: nc.simulate(d, limits=nc.Limits(max_seconds=0.3)))
    assert err.code == "time_limit" and took < 2.0


def test_max_seconds_is_off_in_the_api_and_on_in_the_cli():
    assert nc.Limits().max_seconds is None
    assert cli._parse(["run", "d.json"]).limits.max_seconds == cli.MAX_SECONDS == 600
    assert cli._parse(["run", "d.json", "--limit", "max_seconds=2.5"]).limits.max_seconds == 2.5
    with pytest.raises(ValueError):
        nc.Limits(max_seconds=0)


# ----------------------------------------------------------------------------- memory

def _wide(samples, width=1_000_000):
    """The issue's case: a ``width``-wide constant (a 4 MB diagram for 1e6) recorded."""
    return diagram([blk("c", "constant", Value="v"), record()], [wire("c", "w")], dt=1.0, duration=samples - 1.0,
                   variables={"v": [0.5] * width})


def test_recorded_values_are_bounded_before_the_run():
    # 400 samples x 1e6 elements: inside max_element_steps (4e8), 4e8 values recorded (3.2 GB)
    err, took = answer(lambda: nc.simulate(_wide(400)))
    assert isinstance(err, nc.SimulationError) and err.code == "too_many_recorded_values" and took < 2 * FAST
    assert err.block == "w" and "400,000,400 values" in err.message


def test_recorded_values_are_counted_exactly():
    # toWorkspace of 3 elements, Decimation 2 over 11 samples: 6 rows x (3 + 1 for the time) = 24;
    # a scope of ports 3 + 1 wide, every sample: 11 x (4 + 1) = 55; 79 in all
    d = diagram([blk("c", "constant", Value=[1, 2, 3]), blk("k", "constant", Value=4),
                 blk("w", "toWorkspace", VariableName="y", SaveFormat="Array", Decimation=2),
                 blk("sc", "scope", inputs=2)],
                [wire("c", "w"), wire("c", "sc", 0, 0), wire("k", "sc", 0, 1)], duration=1.0)
    result = nc.simulate(d, limits=nc.Limits(max_recorded_values=79))
    assert len(result["workspace"]["y"]) == 6 and len(result["scopes"]["sc"]["values"]) == 11
    err, _ = answer(lambda: nc.simulate(d, limits=nc.Limits(max_recorded_values=78)))
    assert err.code == "too_many_recorded_values" and err.block == "sc"
    # MaxDataPoints keeps 2 rows of the toWorkspace: 8 + 55
    windowed = dict(d, blocks=[dict(b, params=dict(b["params"], MaxDataPoints=2)) if b["id"] == "w" else b
                               for b in d["blocks"]])
    assert nc.simulate(windowed, limits=nc.Limits(max_recorded_values=63))["workspace"]["y"] == [[1, 2, 3]] * 2


def _capped_run(tmp_path, d, megabytes, *args):
    """``nflow-sim run`` of ``d`` in a process whose address space is capped."""
    path = tmp_path / "d.json"
    path.write_bytes(orjson.dumps(d))
    cap = megabytes * 2**20

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    return subprocess.run([sys.executable, "-m", "nflow_compat", "run", str(path), "-o", os.devnull, *args],
                          preexec_fn=limit, capture_output=True, timeout=60)


def test_out_of_memory_is_a_typed_error(tmp_path):
    # the 500 x 1e6 case with both limits raised: 4 GB of recordings under a 600 MB cap
    done = _capped_run(tmp_path, _wide(500), 600, "--limit", "max_recorded_values=1e9",
                       "--limit", "max_element_steps=1e9")
    assert done.returncode == cli.EXIT_SIMULATION, done.stderr[-500:]
    assert orjson.loads(done.stdout)["error"]["code"] == "out_of_memory"


def test_writing_a_large_result_under_a_memory_cap_never_crashes(tmp_path):
    # 96 MB recorded, 48 MB of JSON: under 450 MB the whole text beside the data crashed
    # orjson (SIGSEGV); written in pieces it fits, and where it would not, the answer is typed
    done = _capped_run(tmp_path, _wide(12), 450)
    assert done.returncode in (cli.EXIT_OK, cli.EXIT_SIMULATION), (done.returncode, done.stderr[-500:])
    if done.returncode:
        assert orjson.loads(done.stdout)["error"]["code"] == "out_of_memory"
