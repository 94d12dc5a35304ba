"""Re-run benchmark: ``plan.run(params=...)`` (a compiled plan run again with new values,
``Plan.with_params``) against compiling the diagram with those values and running it.

Diagrams: the stick-slip bench's (``bench/stick_slip.py``: sine -> Force ->
MassWithStopAndFriction with position and speed sensors, ode45, 5 s at 1 ms) with a new
Coulomb force (a value of the physical island: the islands are lowered again and the blocks
on them rebuilt) and with a new drive amplitude (one causal block rebuilt); and the causal
benchmark's feedback chain of 100 blocks (``bench/causal_chain.py``, 10 s at 1 ms, the
generated step function) with one gain changed.

Timed, as the min of ``--rerun-repeats`` interleaved rounds (each round times every piece
once, in a fresh order):

* recompile: ``plan.with_params(values)`` (what ``plan.run(params=...)`` does before running)
  vs ``compile_plan(diagram with the values)`` (validation + compile);
* whole: ``plan.run(params=values)`` vs ``compile_plan(...).run()``.

Every variant's result is checked equal (bit for bit) to the freshly compiled one's.
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import time

import numpy as np

from .causal_chain import Ours as CausalOurs
from .causal_chain import environment
from .profiling import bench_parser, interleaved, progress_log
from .stick_slip import RESULTS, Ours, _loadavg


def _written(d: dict, block_id: str, param: str, value) -> dict:
    d = copy.deepcopy(d)
    next(b for b in d["blocks"] if b["id"] == block_id)["params"][param] = value
    return d


def cases() -> dict:
    stick_slip = Ours.diagram("ode45")
    feedback = CausalOurs.diagram(100, "feedback")
    return {"stick-slip, stop1.F_Coulomb (island)": (stick_slip, "stop1", "F_Coulomb", 3.0),
            "stick-slip, sineForce.Amplitude (causal)": (stick_slip, "sineForce", "Amplitude", 20.0),
            "feedback chain K=100, b0.Gain": (feedback, "b0", "Gain", 0.9)}


def _same(a: dict, b: dict) -> bool:
    return (np.array_equal(a["time"], b["time"]) and a["events"] == b["events"]
            and all(np.array_equal(a["workspace"][k], b["workspace"][k]) for k in b["workspace"]))


def bench_case(d: dict, block_id: str, param: str, value, repeats: int) -> dict:
    import nflow_compat as nc
    plan = nc.compile_plan(d)
    plan.run()
    values = {f"{block_id}.{param}": value}
    written = _written(d, block_id, param, value)
    variant = plan.with_params(values)
    agree = _same(variant.run(), nc.compile_plan(written).run())
    pieces = {"with_params": lambda: plan.with_params(values), "compile_plan": lambda: nc.compile_plan(written),
              "run(params)": lambda: plan.run(params=values), "compile+run": lambda: nc.compile_plan(written).run()}
    times, best = interleaved(pieces, repeats)
    return {"seconds": times, "min_s": best, "rebuilt_blocks": sorted(variant.rebuilt or []),
            "blocks": len(plan.diagram.blocks), "islands_lowered_again": variant.members is not plan.members,
            "agree": agree, "recompile_ratio": best["with_params"] / best["compile_plan"],
            "whole_ratio": best["run(params)"] / best["compile+run"]}


def parser() -> argparse.ArgumentParser:
    return bench_parser("rerun", __doc__, 15, "interleaved rounds")


def main(argv=None) -> int:
    args = argv if isinstance(argv, argparse.Namespace) else parser().parse_args(argv)
    log = progress_log(args)
    load_start = _loadavg()
    results = {}
    for name, case in cases().items():
        log(f"rerun: {name}")
        results[name] = bench_case(*case, args.rerun_repeats)
    print(f"{'case':<42}{'with_params':>13}{'compile_plan':>14}{'ratio':>7}{'run(params)':>13}{'compile+run':>13}"
          f"{'ratio':>7}  rebuilt")
    for name, r in results.items():
        b = r["min_s"]
        print(f"{name:<42}{b['with_params'] * 1e3:>10.3f} ms{b['compile_plan'] * 1e3:>11.3f} ms"
              f"{r['recompile_ratio']:>7.2f}{b['run(params)'] * 1e3:>10.2f} ms{b['compile+run'] * 1e3:>10.2f} ms"
              f"{r['whole_ratio']:>7.2f}  {len(r['rebuilt_blocks'])} of {r['blocks']} blocks"
              + (", islands lowered again" if r["islands_lowered_again"] else ""))
    agree = all(r["agree"] for r in results.values())
    print(f"results of plan.run(params=...) equal to a fresh compile's: {'yes' if agree else 'NO'}")
    load_end = _loadavg()
    print(f"load average at start {load_start}, at end {load_end}")
    if not args.no_write:
        doc = {"benchmark": "rerun", "environment": environment(), "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "method": {"repeats": args.rerun_repeats, "statistic": "min", "interleaved": True},
               "load_average": {"start": load_start, "end": load_end}, "results": results}
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "rerun.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
