"""Sweep benchmark: runs of the stick-slip mass on Dask against a sequential loop of ``simulate``.

Model: the stick-slip benchmark's (``stick_slip.Ours.diagram('ode45')``: MSL stop1 driven by
25*sin(2*pi*0.25*t), 5 s, 1 ms grid = 5,001 samples), its F_Coulomb swept over
``linspace(1, 9, RUNS)`` (400 by default), outputs: max, final and first_rising(0) of the
speed, and the mode-event count.

Timed, once each, in this order:

* sequential: ``for value: d[...] = value; nflow_compat.simulate(d)`` (what a user writes);
* sweep cold: ``nflow_compat.sweep(spec, workers=N)``, from the call to the DataFrame:
  local cluster start and shutdown included;
* sweep warm: ``nflow_compat.sweep(spec, client)`` on an already started local cluster of
  N workers that ran a tiny sweep first (worker imports done);
* one plan run: ``plan.run()`` of compiled plans for every 10th value (mean; the run time
  depends on F_Coulomb) and of the base diagram (min of 5).

Figures: throughput ratios sequential / sweep; per-run overhead, literally as the target
states it (sweep warm time / runs - one plan run; negative when N workers share the runs)
and per worker (sweep warm time * N / runs - one plan run: what a run costs a worker
beyond its plan run); and, in-process, what the worker adds per run in CPU seconds
(``run_batch`` over 20 runs against the same 20 plans' ``run()``, min of 3 interleaved
rounds), split into re-binding the values (``diagram.with_params``), building the plan, and
for comparison a full re-validation.

Targets (2 cores): sweep >= 1.7x the sequential loop; per-run overhead < 5 ms.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from .causal_chain import environment
from .stick_slip import Ours, _loadavg

RESULTS = Path(__file__).resolve().parent / "results"
PARAMETER = "stop1.F_Coulomb"
TARGET_RATIO = 1.7
TARGET_OVERHEAD_MS = 5.0
IN_PROCESS_RUNS = 20
IN_PROCESS_ROUNDS = 3


def spec(values) -> dict:
    return {"diagram": Ours.diagram("ode45"), "parameters": {PARAMETER: list(values)},
            "outputs": {"stop1.v": ["max", "final", "first_rising(0)"]}, "events": ["mode"]}


def _with(value) -> dict:
    d = Ours.diagram("ode45")
    next(b for b in d["blocks"] if b["id"] == "stop1")["params"]["F_Coulomb"] = value
    return d


def _timed(fn):
    """(wall s, out); ``_timed.cpu``: the CPU seconds of this process during the call."""
    gc.collect()
    cpu, start = time.process_time(), time.perf_counter()
    out = fn()
    wall = time.perf_counter() - start
    _timed.cpu = time.process_time() - cpu
    return wall, out


def _worker_cpu() -> float:
    times = os.times()
    return times.user + times.system


def sequential(values) -> tuple:
    """(wall s, CPU s) of the loop."""
    import nflow_compat as nc
    wall = _timed(lambda: [nc.simulate(_with(v)) for v in values])[0]
    return wall, _timed.cpu


def plan_runs(values) -> dict:
    import nflow_compat as nc
    sampled = values[::10]
    plans = [nc.compile_plan(_with(v)) for v in sampled]
    times, cpu = [], 0.0
    for plan in plans:
        times.append(_timed(plan.run)[0])
        cpu += _timed.cpu
    base = nc.compile_plan(Ours.diagram("ode45"))
    return {"mean_s": statistics.fmean(times), "mean_cpu_s": cpu / len(plans), "sampled_values": len(sampled),
            "base_min_s": min(_timed(base.run)[0] for _ in range(5))}


def in_process(values) -> dict:
    """What the worker adds per run, timed in this process (no Dask)."""
    import nflow_compat as nc
    from nflow_compat import api
    from nflow_compat.diagram import Limits, with_params
    from nflow_compat.sweeps import spec as spec_module
    from nflow_compat.sweeps import worker
    chosen = values[:IN_PROCESS_RUNS]
    loaded = spec_module.load(spec(chosen))
    batch = worker.Batch(structure=loaded.structure, diagram=loaded.diagram,
                         pointers=tuple(p.pointer for p in loaded.parameters),
                         blocks=tuple(p.block for p in loaded.parameters), runs=tuple(enumerate(loaded.runs)),
                         outputs=loaded.outputs, events=loaded.events, limits=Limits(), base_dir=None)
    worker.run_batch(batch)                          # the structure cached, as on a worker after its first batch
    plans = [nc.compile_plan(_with(v)) for v in chosen]
    base = nc.validate(Ours.diagram("ode45"))
    index = next(b.index for b in base.blocks if b.id == "stop1")
    rebinds = [with_params(base, {(index, "F_Coulomb"): v}) for v in chosen]
    pieces = {"plan_runs": lambda: [p.run() for p in plans], "run_batch": lambda: worker.run_batch(batch),
              "rebind": lambda: [with_params(base, {(index, "F_Coulomb"): v}) for v in chosen],
              "plan_build": lambda: [api.build_plan(d) for d in rebinds],
              "full_validate": lambda: [nc.validate(_with(v)) for v in chosen]}
    cpu = {name: [] for name in pieces}
    for _ in range(IN_PROCESS_ROUNDS):          # interleaved; CPU seconds, min over the rounds
        for name, fn in pieces.items():
            _timed(fn)
            cpu[name].append(_timed.cpu)
    n = len(chosen)
    per_run = {name: 1e3 * min(times) / n for name, times in cpu.items()}
    return {"runs": n, "rounds": IN_PROCESS_ROUNDS, "cpu_ms_per_run": per_run,
            "overhead_ms": per_run["run_batch"] - per_run["plan_runs"]}


def sweeps(values, workers: int) -> dict:
    import nflow_compat as nc
    from nflow_compat.sweeps.run import local_client
    cold, frame = _timed(lambda: nc.sweep(spec(values), workers=workers))
    assert (frame["status"] == "ok").all(), frame["error"].dropna().unique()
    with local_client(workers) as client:
        nc.sweep(spec(values[:2 * workers]), client)          # worker imports and caches, untimed
        before = sum(client.run(_worker_cpu).values())
        warm, again = _timed(lambda: nc.sweep(spec(values), client))
        workers_cpu, client_cpu = sum(client.run(_worker_cpu).values()) - before, _timed.cpu
    # CPU seconds do not depend on what else the machine runs (wall seconds do)
    return {"cold_s": cold, "warm_s": warm, "identical": bool(frame.equals(again)),
            "warm_workers_cpu_s": workers_cpu, "warm_client_cpu_s": client_cpu}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench --only sweep", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sweep-runs", type=int, default=400, help="runs in the sweep (default 400)")
    ap.add_argument("--sweep-workers", type=int, default=None, help="local workers (default: one per core)")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/results/*.json")
    return ap


def main(argv=None) -> int:
    args = argv if isinstance(argv, argparse.Namespace) else parser().parse_args(argv)
    from nflow_compat.sweeps.run import cores
    workers = args.sweep_workers or cores()
    values = np.linspace(1.0, 9.0, args.sweep_runs).tolist()
    load_start = _loadavg()
    sequential(values[:2])                                    # handler imports, untimed
    seq, seq_cpu = sequential(values)
    swept = sweeps(values, workers)
    plan = plan_runs(values)
    worker_side = in_process(values)
    n = len(values)
    one_run = plan["mean_s"]
    figures = {
        "ratio_cold": seq / swept["cold_s"], "ratio_warm": seq / swept["warm_s"],
        "overhead_literal_ms": 1e3 * (swept["warm_s"] / n - one_run),
        "overhead_per_worker_ms": 1e3 * (swept["warm_s"] * workers / n - one_run),
        "cpu_per_run_ms": {"sequential": 1e3 * seq_cpu / n, "sweep_workers": 1e3 * swept["warm_workers_cpu_s"] / n,
                           "sweep_client_and_scheduler": 1e3 * swept["warm_client_cpu_s"] / n,
                           "plan_run": 1e3 * plan["mean_cpu_s"]},
    }
    cpu = figures["cpu_per_run_ms"]
    figures["overhead_cpu_ms"] = cpu["sweep_workers"] + cpu["sweep_client_and_scheduler"] - cpu["plan_run"]
    # what the ratio would be with the workers' and the client's CPU time each on a core of its own
    figures["ratio_cpu_bound"] = cpu["sequential"] / max(cpu["sweep_workers"] / workers,
                                                         cpu["sweep_client_and_scheduler"])
    targets = {"ratio": {"target": TARGET_RATIO, "cold": figures["ratio_cold"] >= TARGET_RATIO,
                         "warm": figures["ratio_warm"] >= TARGET_RATIO,
                         "cpu_bound": figures["ratio_cpu_bound"] >= TARGET_RATIO},
               "overhead_ms": {"target": TARGET_OVERHEAD_MS,
                               "literal": figures["overhead_literal_ms"] < TARGET_OVERHEAD_MS,
                               "per_worker": figures["overhead_per_worker_ms"] < TARGET_OVERHEAD_MS,
                               "in_worker_cpu": worker_side["overhead_ms"] < TARGET_OVERHEAD_MS}}
    load_end = _loadavg()
    print(f"sweep benchmark: {n} runs of the stick-slip mass (5 s, 1 ms grid, ode45), {workers} workers")
    print(f"  sequential simulate loop   {seq:8.2f} s   {1e3 * seq / n:7.1f} ms/run")
    print(f"  sweep, cold (cluster incl) {swept['cold_s']:8.2f} s   x{figures['ratio_cold']:.2f}")
    print(f"  sweep, warm cluster        {swept['warm_s']:8.2f} s   x{figures['ratio_warm']:.2f}   "
          f"(same table as cold: {'yes' if swept['identical'] else 'NO'})")
    print(f"  one plan run               {1e3 * one_run:8.1f} ms (mean of {plan['sampled_values']}; base diagram "
          f"min {1e3 * plan['base_min_s']:.1f} ms)")
    print(f"  per-run overhead: sweep/runs - plan run = {figures['overhead_literal_ms']:+.1f} ms; per worker "
          f"(sweep*{workers}/runs - plan run) = {figures['overhead_per_worker_ms']:+.1f} ms "
          f"(target < {TARGET_OVERHEAD_MS:g})")
    print(f"  CPU per run: sequential {cpu['sequential']:.1f} ms; sweep workers {cpu['sweep_workers']:.1f} ms + client/"
          f"scheduler {cpu['sweep_client_and_scheduler']:.1f} ms; plan run {cpu['plan_run']:.1f} ms -> sweep CPU "
          f"overhead {figures['overhead_cpu_ms']:+.1f} ms/run; CPU-bound ratio on {workers} free cores "
          f"x{figures['ratio_cpu_bound']:.2f}")
    pieces = worker_side["cpu_ms_per_run"]
    print(f"  in a worker, CPU per run (min of {IN_PROCESS_ROUNDS}): run_batch {pieces['run_batch']:.2f} ms = "
          f"plan.run() {pieces['plan_runs']:.2f} ms + {worker_side['overhead_ms']:.2f} ms (re-bind "
          f"{pieces['rebind']:.3f} ms, plan build {pieces['plan_build']:.2f} ms; a full re-validation would add "
          f"{pieces['full_validate']:.2f} ms)")
    print(f"  load average at start {load_start}, at end {load_end}: the machine is shared, figures are noisy")
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        doc = {"benchmark": "sweep", "environment": environment(), "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "runs": n, "workers": workers, "sequential_s": seq, "sequential_cpu_s": seq_cpu, "sweep": swept, "plan_run": plan,
               "worker_side": worker_side, "figures": figures, "targets": targets,
               "load_average": {"start": load_start, "end": load_end}}
        (RESULTS / "sweep.json").write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {RESULTS / 'sweep.json'}")
    return 0 if swept["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
