"""Sweep benchmark: ``nflow_compat.sweep`` against the plain loop of ``simulate`` a user writes.

Two sweeps of the stick-slip mass (``examples/sweep_coulomb``: MSL stop1 driven by
25*sin(2*pi*0.25*t), 5 s, 1 ms grid = 5,001 samples, ode45), F_Coulomb swept:

* **example**: the README's example spec as it is (21 runs, ``linspace(0, 10, 21)``): the
  loop, ``nc.sweep(spec)`` (its default, ``executor="auto"``) and ``executor="inline"``, in
  this process, each ``--repeats`` times alternated, min taken (one untimed sweep first,
  so the imports of pandas and pyarrow are not counted against it: a user who wants a
  DataFrame has them);
* **stick-slip**: ``--sweep-runs`` runs (201 by default) over ``linspace(1, 9, n)``: the
  loop, ``nc.sweep(spec)`` with no cluster kept (what it chooses, its start included; also
  with ``batched=False``), and
  for comparison ``executor="local"`` on a fresh local cluster (started and shut down
  inside the timing) and on the cluster it kept.

Plus, in this process, what a sweep adds per run (``worker.run_batch`` over 20 runs, each
alone (``batched=False``), against the same 20 plans' ``run()``, CPU seconds, min of 3
interleaved rounds), split into re-binding the values (``diagram.with_params``), building
the plan, and for comparison a full re-validation; and the worker's time per run when the
20 go to the batch engine together (the default).

Targets (2 cores): the example sweep at most 1.1x the loop's wall time; the stick-slip
sweep at least 1.5x faster than the loop, cluster start included.
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from .causal_chain import environment
from .stick_slip import _loadavg

RESULTS = Path(__file__).resolve().parent / "results"
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sweep_coulomb"
PARAMETER = "stop1.F_Coulomb"
TARGET_EXAMPLE = 1.1        # sweep wall / loop wall, at most
TARGET_SPEEDUP = 1.5        # loop wall / sweep wall, at least
IN_PROCESS_RUNS = 20
IN_PROCESS_ROUNDS = 3


def diagram() -> dict:
    return json.loads((EXAMPLE / "diagram.json").read_text())


def spec(values) -> dict:
    return {"diagram": diagram(), "parameters": {PARAMETER: list(values)},
            "outputs": {"stop1.v": ["max", "final", "first_rising(0)"]}, "events": ["mode"]}


def _with(value) -> dict:
    d = diagram()
    next(b for b in d["blocks"] if b["id"] == "stop1")["params"]["F_Coulomb"] = value
    return d


def _wall(fn) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _loop(values):
    import nflow_compat as nc
    return [nc.simulate(_with(v)) for v in values]


def example(repeats: int) -> dict:
    """The README's example spec: loop vs sweep (auto, inline), min of ``repeats`` alternated."""
    import nflow_compat as nc
    example_spec = json.loads((EXAMPLE / "spec.json").read_text())
    example_spec["diagram"] = diagram()
    values = np.linspace(*example_spec["parameters"][PARAMETER]["linspace"]).tolist()
    nc.sweep(dict(example_spec, parameters={PARAMETER: values[:1]}))    # imports, untimed
    times = {"loop": [], "sweep": [], "inline": []}
    for _ in range(repeats):
        times["loop"].append(_wall(lambda: _loop(values)))
        times["sweep"].append(_wall(lambda: nc.sweep(example_spec)))
        times["inline"].append(_wall(lambda: nc.sweep(example_spec, executor="inline")))
    best = {k: min(v) for k, v in times.items()}
    return {"runs": len(values), "times_s": times, "min_s": best,
            "ratio": best["sweep"] / best["loop"], "ratio_inline": best["inline"] / best["loop"]}


def stick_slip(n: int, workers: int) -> dict:
    """``n`` runs: the loop, sweep as chosen, and on a local cluster fresh and kept."""
    import nflow_compat as nc
    from nflow_compat.sweeps import close_local_cluster
    values = np.linspace(1.0, 9.0, n).tolist()
    close_local_cluster()
    loop = _wall(lambda: _loop(values))
    chosen = _wall(lambda: nc.sweep(spec(values), workers=workers))
    close_local_cluster()
    single = _wall(lambda: nc.sweep(spec(values), workers=workers, batched=False))    # each run alone, as chosen
    close_local_cluster()
    fresh = _wall(lambda: (nc.sweep(spec(values), executor="local", workers=workers)))   # cluster start included
    kept = _wall(lambda: nc.sweep(spec(values), executor="local", workers=workers))     # the cluster it kept
    close_local_cluster()
    return {"runs": n, "workers": workers, "loop_s": loop, "sweep_s": chosen, "sweep_single_s": single,
            "speedup_single": loop / single, "local_fresh_s": fresh,
            "local_kept_s": kept, "speedup": loop / chosen, "speedup_local_fresh": loop / fresh,
            "speedup_local_kept": loop / kept}


def _cpu(fn) -> float:
    gc.collect()
    start = time.process_time()
    fn()
    return time.process_time() - start


def in_process(values) -> dict:
    """What a sweep adds per run, in CPU seconds in this process (no Dask)."""
    import nflow_compat as nc
    from nflow_compat import api
    from nflow_compat.diagram import Limits, with_params
    from nflow_compat.sweeps import spec as spec_module
    from nflow_compat.sweeps import worker
    chosen = values[:IN_PROCESS_RUNS]
    loaded = spec_module.load(spec(chosen))
    batch = worker.batches(loaded, list(range(len(chosen))), len(chosen), Limits())[0]
    single = dataclasses.replace(batch, batched=False)
    worker.run_batch(batch)                          # the structure cached, as on a worker after its first batch
    plans = [nc.compile_plan(_with(v)) for v in chosen]
    base = nc.validate(diagram())
    index = next(b.index for b in base.blocks if b.id == "stop1")
    rebinds = [with_params(base, {(index, "F_Coulomb"): v}) for v in chosen]
    pieces = {"plan_runs": lambda: [p.run() for p in plans], "run_batch": lambda: worker.run_batch(single),
              "run_batch_batched": lambda: worker.run_batch(batch),
              "rebind": lambda: [with_params(base, {(index, "F_Coulomb"): v}) for v in chosen],
              "plan_build": lambda: [api.build_plan(d) for d in rebinds],
              "full_validate": lambda: [nc.validate(_with(v)) for v in chosen]}
    cpu = {name: [] for name in pieces}
    for _ in range(IN_PROCESS_ROUNDS):          # interleaved; CPU seconds, min over the rounds
        for name, fn in pieces.items():
            cpu[name].append(_cpu(fn))
    per_run = {name: 1e3 * min(times) / len(chosen) for name, times in cpu.items()}
    return {"runs": len(chosen), "rounds": IN_PROCESS_ROUNDS, "cpu_ms_per_run": per_run,
            "overhead_ms": per_run["run_batch"] - per_run["plan_runs"]}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench --only sweep", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sweep-runs", type=int, default=201, help="runs of the stick-slip sweep (default 201)")
    ap.add_argument("--sweep-workers", type=int, default=None, help="local workers (default: one per core)")
    ap.add_argument("--sweep-repeats", type=int, default=3, help="repeats of the example's timings (default 3)")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/results/*.json")
    return ap


def main(argv=None) -> int:
    args = argv if isinstance(argv, argparse.Namespace) else parser().parse_args(argv)
    from nflow_compat.sweeps.run import cores
    workers = args.sweep_workers or cores()
    load_start = _loadavg()
    _loop([1.0, 2.0])                                        # handler imports, untimed
    ex = example(args.sweep_repeats)
    ss = stick_slip(args.sweep_runs, workers)
    worker_side = in_process(np.linspace(1.0, 9.0, IN_PROCESS_RUNS).tolist())
    load_end = _loadavg()
    targets = {"example": {"target_at_most": TARGET_EXAMPLE, "met": ex["ratio"] <= TARGET_EXAMPLE},
               "stick_slip": {"target_at_least": TARGET_SPEEDUP, "met": ss["speedup"] >= TARGET_SPEEDUP}}
    b = ex["min_s"]
    print(f"sweep benchmark ({workers} workers; the stick-slip mass, 5 s, 1 ms grid, ode45)")
    print(f"  example, {ex['runs']} runs: loop {b['loop']:.2f} s, sweep {b['sweep']:.2f} s "
          f"({ex['ratio']:.2f}x the loop, target <= {TARGET_EXAMPLE}), inline {b['inline']:.2f} s "
          f"({ex['ratio_inline']:.2f}x)   min of {args.sweep_repeats}")
    print(f"  stick-slip, {ss['runs']} runs: loop {ss['loop_s']:.2f} s, sweep {ss['sweep_s']:.2f} s "
          f"({ss['speedup']:.2f}x faster, target >= {TARGET_SPEEDUP}; each run alone {ss['sweep_single_s']:.2f} s, "
          f"{ss['speedup_single']:.2f}x); on a local cluster: fresh "
          f"{ss['local_fresh_s']:.2f} s ({ss['speedup_local_fresh']:.2f}x), kept {ss['local_kept_s']:.2f} s "
          f"({ss['speedup_local_kept']:.2f}x)")
    pieces = worker_side["cpu_ms_per_run"]
    print(f"  per run, CPU (min of {IN_PROCESS_ROUNDS}): run_batch {pieces['run_batch']:.2f} ms = plan.run() "
          f"{pieces['plan_runs']:.2f} ms + {worker_side['overhead_ms']:.2f} ms (re-bind {pieces['rebind']:.3f} ms, "
          f"plan build {pieces['plan_build']:.2f} ms; a full re-validation would add {pieces['full_validate']:.2f} ms); "
          f"the {worker_side['runs']} batched together: {pieces['run_batch_batched']:.2f} ms a run")
    print(f"  load average at start {load_start}, at end {load_end}")
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        doc = {"benchmark": "sweep", "environment": environment(), "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "example": ex, "stick_slip": ss, "worker_side": worker_side, "targets": targets,
               "load_average": {"start": load_start, "end": load_end},
               "median_loop_run_ms": 1e3 * statistics.median(ex["times_s"]["loop"]) / ex["runs"]}
        (RESULTS / "sweep.json").write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {RESULTS / 'sweep.json'}")
    return 0
