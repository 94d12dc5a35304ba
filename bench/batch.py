"""Batch benchmark: ``engine.batch.run_batch`` (many variants of one diagram in one call)
against the sequential loop of single runs, on one core.

Two parts, each measured in one run as a ratio, loop wall / batch wall:

* **msd_pi**: examples/batch_msd_pi (a mass-spring-damper position-controlled by a PI
  controller in plain causal blocks; ode45, 10 s, 1 ms grid = 10,001 samples), 1,000
  variants (``--msd-variants``): k, c, Kp, Ki from a seeded Latin hypercube
  (``scipy.stats.qmc``) over k 2..8 N/m, c 4..8 N s/m, Kp 5..15, Ki 4..12, m = 1 kept (every
  one stable: c (k + Kp) >= 28 > m Ki). Target: the batch at least 20x faster.
* **stick_slip**: examples/sweep_coulomb (MassWithStopAndFriction driven by
  25 sin(2 pi 0.25 t); ode45, 5 s, 1 ms grid), 400 variants (``--stickslip-variants``),
  F_Coulomb = linspace(0.5, 10, 400). Target: the batch at least 5x faster.

The loop is what a user writes: per variant ``build_plan(with_params(diagram, values)).run()``
(one core by construction), ``--loop-repeats`` times (default 1), min taken; with
``--loop-sample N`` only N variants (seeded choice) are timed and the wall extrapolated to all
(the JSON says which). The batch is one ``run_batch(diagram, variants)``, the compilation of
its variants' plans included, min of ``--batch-repeats`` (default 3). Both start from the
diagram validated once; one untimed single run and one untimed batch of 2 first (imports).
While timing, every thread of the process is pinned to one CPU (``os.sched_setaffinity``;
restored after), so the batch cannot gain from a second core. The ratio in CPU seconds of the
process is kept beside the wall ratio: on the pinned CPU it is what other processes' load
leaves alone.

Checks (exit status 1 when one fails; the targets are reported, not checked): every variant
ran in both; each batched variant against its single run: the same time grid, every
recorded signal within ``10 x relTol`` of it (max |batched - single| / max |single|), the same
events (count, block, kind, from, to, in order) at times within 1e-6 relative. With
``--loop-sample`` only the sampled variants are checked.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

from .causal_chain import environment
from .profiling import bench_parser, progress_log
from .stick_slip import _loadavg

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
MSD_PI = ROOT / "examples" / "batch_msd_pi" / "diagram.json"
STICK_SLIP = ROOT / "examples" / "sweep_coulomb" / "diagram.json"
MSD_RANGES = {("k", "Gain"): (2.0, 8.0), ("c", "Gain"): (4.0, 8.0), ("Kp", "Gain"): (5.0, 15.0),
              ("Ki", "Gain"): (4.0, 12.0)}     # (block id, param) -> (low, high)
COULOMB = ("stop1", "F_Coulomb", (0.5, 10.0))
SEED = 20261204                  # the Latin hypercube's and the loop sample's
SIGNAL_TOL_PER_RELTOL = 10.0     # a recorded signal within 10 x relTol of its single run (of its scale)
EVENT_RTOL = 1e-6                # an event's time within 1e-6 relative of its single run's
TARGETS = {"msd_pi": 20.0, "stick_slip": 5.0}   # loop wall / batch wall, at least


def _load(path: Path):
    import nflow_compat as nc
    return nc.validate(json.loads(path.read_text()))


def msd_pi_variants(diagram, n: int) -> tuple:
    """(the variants, what they vary): ``n`` points of a seeded Latin hypercube over MSD_RANGES."""
    from scipy.stats import qmc
    index = {b.id: b.index for b in diagram.blocks}
    keys = list(MSD_RANGES)
    lows, highs = zip(*MSD_RANGES.values())
    points = qmc.scale(qmc.LatinHypercube(d=len(keys), seed=SEED).random(n), lows, highs)
    variants = [{(index[block], param): float(v) for (block, param), v in zip(keys, row)} for row in points]
    varied = {f"{block}.{param}": [low, high] for (block, param), (low, high) in MSD_RANGES.items()}
    return variants, {"latin_hypercube": varied, "seed": SEED}


def stick_slip_variants(diagram, n: int) -> tuple:
    block, param, (low, high) = COULOMB
    index = next(b.index for b in diagram.blocks if b.id == block)
    variants = [{(index, param): float(v)} for v in np.linspace(low, high, n)]
    return variants, {"linspace": {f"{block}.{param}": [low, high, n]}}


@contextlib.contextmanager
def one_core():
    """Every thread of this process on one CPU (the lowest it may use) inside the block, new
    threads too (they inherit it); yields that CPU, or None where affinity cannot be set."""
    if not hasattr(os, "sched_setaffinity") or not os.path.isdir("/proc/self/task"):
        yield None
        return
    allowed = os.sched_getaffinity(0)
    cpu = min(allowed)
    _set_affinity({cpu})
    try:
        yield cpu
    finally:
        _set_affinity(allowed)


def _set_affinity(cpus: set):
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(ProcessLookupError):     # a thread that ended meanwhile
            os.sched_setaffinity(int(tid), cpus)


def _timed(fn) -> tuple:
    """(wall seconds, CPU seconds of the process, what ``fn()`` returned)."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def loop(diagram, variants: list) -> list:
    """The sequential loop of single runs."""
    from nflow_compat.api import build_plan
    from nflow_compat.diagram import with_params
    return [build_plan(with_params(diagram, values)).run() for values in variants]


def _event_kind(event: dict) -> tuple:
    return event.get("block"), event.get("kind"), event.get("from"), event.get("to")


def compare(single: dict, batched, rel_tol: float) -> dict:
    """How far ``batched`` (a variant's run_batch result, or its error) is from its single run:
    the worst signal error (of that signal's scale), the worst event time error (relative)
    and the problems beyond the tolerances."""
    from nflow_compat.errors import NFlowError
    if isinstance(batched, NFlowError):
        return {"signal": None, "signal_error": None, "event_time_error": None, "events": len(single["events"]),
                "problems": [f"run_batch gave {type(batched).__name__} {batched.code}: {batched}"]}
    problems = []
    if not np.array_equal(np.asarray(batched["time"]), np.asarray(single["time"])):
        problems.append("a different time grid")
    errors = {}
    for name, value in single["workspace"].items():
        want = np.asarray(value, dtype=float)
        got = np.asarray(batched["workspace"].get(name, []), dtype=float)
        if got.shape != want.shape:
            problems.append(f"{name}: shape {got.shape}, single {want.shape}")
        elif want.size:
            errors[name] = float(np.abs(got - want).max() / (np.abs(want).max() or 1.0))
    signal, signal_error = max(errors.items(), key=lambda kv: kv[1], default=(None, 0.0))
    if signal_error > SIGNAL_TOL_PER_RELTOL * rel_tol:
        problems.append(f"{signal} off by {signal_error:.3g} of its scale")
    got_events, want_events = batched["events"], single["events"]
    event_time_error = 0.0
    if [_event_kind(e) for e in got_events] != [_event_kind(e) for e in want_events]:
        problems.append(f"events {[_event_kind(e) for e in got_events]}, single "
                        f"{[_event_kind(e) for e in want_events]}")
    else:
        for got, want in zip(got_events, want_events):
            off = abs(got["t"] - want["t"])
            event_time_error = max(event_time_error, off / abs(want["t"]) if want["t"] else (0.0 if off == 0 else 1.0))
        if event_time_error > EVENT_RTOL:
            problems.append(f"an event time off by {event_time_error:.3g} relative")
    return {"signal": signal, "signal_error": signal_error, "event_time_error": event_time_error,
            "events": len(want_events), "problems": problems}


def _named(diagram, values: dict) -> dict:
    """A variant's values as ``{"block id.param": value}``."""
    return {f"{diagram.blocks[index].id}.{param}": value for (index, param), value in values.items()}


def _worst(checks: dict, key: str) -> dict:
    """The variant (index) whose ``key`` is largest among those that ran in the batch."""
    ran = {i: c for i, c in checks.items() if c[key] is not None}
    if not ran:
        return {"variant": None, "error": None}
    i = max(ran, key=lambda j: ran[j][key])
    return {"variant": i, "error": ran[i][key], **({"signal": ran[i]["signal"]} if key == "signal_error" else {})}


def bench_part(name: str, diagram, variants: list, varied: dict, args, log) -> dict:
    """Loop and batch over ``variants`` of ``diagram``, timed, and the batch checked against the loop."""
    from nflow_compat.engine.batch import run_batch
    from nflow_compat.errors import NFlowError
    n = len(variants)
    loop(diagram, variants[:1])
    run_batch(diagram, variants[:2])                              # imports, untimed
    sampled = sorted(random.Random(SEED).sample(range(n), args.loop_sample)) \
        if args.loop_sample and args.loop_sample < n else list(range(n))
    timed = [variants[i] for i in sampled]
    loop_times, loop_cpu, singles = [], [], None
    for k in range(args.loop_repeats):
        log(f"batch: {name}, loop of {len(timed)} single runs ({k + 1}/{args.loop_repeats})")
        singles = None                                            # freed before the next repeat
        wall, cpu, singles = _timed(lambda: loop(diagram, timed))
        loop_times.append(wall)
        loop_cpu.append(cpu)
    batch_times, batch_cpu, results = [], [], None
    for k in range(args.batch_repeats):
        log(f"batch: {name}, run_batch of {n} variants ({k + 1}/{args.batch_repeats})")
        results = None
        wall, cpu, results = _timed(lambda: run_batch(diagram, variants))
        batch_times.append(wall)
        batch_cpu.append(cpu)
    loop_wall, loop_cpu_all = min(loop_times) * n / len(timed), min(loop_cpu) * n / len(timed)
    batch_wall = min(batch_times)
    checks = {i: compare(single, results[i], diagram.rel_tol) for i, single in zip(sampled, singles)}
    failed = [{"variant": i, "values": _named(diagram, variants[i]), "problems": c["problems"]}
              for i, c in checks.items() if c["problems"]]
    ran = [r for r in results if not isinstance(r, NFlowError)]
    worst_signal = _worst(checks, "signal_error")
    if worst_signal["variant"] is not None:
        worst_signal["values"] = _named(diagram, variants[worst_signal["variant"]])
    return {
        "variants": n, "varied": varied,
        "loop": {"timed": "sample" if len(timed) < n else "full", "variants_timed": len(timed),
                 "repeats": args.loop_repeats, "times_s": loop_times, "cpu_s": loop_cpu, "wall_s": loop_wall,
                 "extrapolated": len(timed) < n, "per_variant_ms": 1e3 * min(loop_times) / len(timed)},
        "batch": {"repeats": args.batch_repeats, "times_s": batch_times, "cpu_s": batch_cpu, "wall_s": batch_wall,
                  "per_variant_ms": 1e3 * batch_wall / n, "errors": n - len(ran),
                  "batched": sum(bool(r["stats"].get("batched")) for r in ran),
                  "batch_sizes": sorted({r["stats"]["batch_size"] for r in ran if "batch_size" in r["stats"]})},
        "ratio": loop_wall / batch_wall, "target_at_least": TARGETS[name],
        "cpu_ratio": loop_cpu_all / min(batch_cpu),       # the same, in CPU seconds: what other load leaves alone
        "met": loop_wall / batch_wall >= TARGETS[name],
        "check": {"variants_checked": len(checks), "rel_tol": diagram.rel_tol,
                  "signal_tolerance": SIGNAL_TOL_PER_RELTOL * diagram.rel_tol, "event_rtol": EVENT_RTOL,
                  "worst_signal": worst_signal,
                  "worst_event_time": _worst(checks, "event_time_error"),
                  "events_per_variant": sorted({c["events"] for c in checks.values()}),
                  "failed": failed[:20], "failed_count": len(failed), "ok": not failed},
    }


def parser() -> argparse.ArgumentParser:
    ap = bench_parser("batch", __doc__, 3, "repeats of each run_batch, min taken")
    ap.add_argument("--loop-repeats", type=int, default=1, help="repeats of each loop of single runs (default 1)")
    ap.add_argument("--loop-sample", type=int, default=None, metavar="N",
                    help="time only N variants of each loop (seeded) and extrapolate (default: the full loop)")
    ap.add_argument("--msd-variants", type=int, default=1000, help="variants of the MSD+PI part (default 1000)")
    ap.add_argument("--stickslip-variants", type=int, default=400,
                    help="variants of the stick-slip part (default 400)")
    return ap


def _g(x) -> str:
    return "-" if x is None else f"{x:.3g}"


def _print_part(title: str, p: dict):
    lp, b, c = p["loop"], p["batch"], p["check"]
    how = "full" if lp["timed"] == "full" else f"{lp['variants_timed']} timed, extrapolated"
    print(f"  {title}, {p['variants']} variants: loop {lp['wall_s']:.2f} s ({how}; {lp['per_variant_ms']:.1f} ms a "
          f"run), run_batch {b['wall_s']:.2f} s (CPU {min(b['cpu_s']):.2f} s; {b['batched']} of {p['variants']} "
          f"batched{', sizes ' + str(b['batch_sizes']) if b['batch_sizes'] else ''}): {p['ratio']:.2f}x, "
          f"target >= {p['target_at_least']:g}x {'met' if p['met'] else 'NOT met'} (in CPU seconds "
          f"{p['cpu_ratio']:.2f}x)")
    print(f"    check of {c['variants_checked']} variants against their single runs: worst signal "
          f"{_g(c['worst_signal']['error'])} of its scale ({c['worst_signal']['signal']}, variant "
          f"{c['worst_signal']['variant']}; tolerance {c['signal_tolerance']:g}), worst event time "
          f"{_g(c['worst_event_time']['error'])} relative (tolerance {c['event_rtol']:g}; events per variant "
          f"{c['events_per_variant']}): {'ok' if c['ok'] else 'FAILED'}")
    for f in c["failed"][:5]:
        print(f"      variant {f['variant']} {f['values']}: {'; '.join(f['problems'])}")


def main(argv=None) -> int:
    args = argv if isinstance(argv, argparse.Namespace) else parser().parse_args(argv)
    log = progress_log(args)
    load_start = _loadavg()
    parts = {}
    with one_core() as cpu:
        msd = _load(MSD_PI)
        parts["msd_pi"] = bench_part("msd_pi", msd, *msd_pi_variants(msd, args.msd_variants), args, log)
        mass = _load(STICK_SLIP)
        parts["stick_slip"] = bench_part("stick_slip", mass, *stick_slip_variants(mass, args.stickslip_variants),
                                         args, log)
    load_end = _loadavg()
    print(f"batch benchmark (run_batch vs the loop of single runs; pinned to CPU {cpu}; min of "
          f"{args.loop_repeats} loop, {args.batch_repeats} batch repeats)")
    _print_part("MSD + PI (ode45, 10 s, 1 ms grid)", parts["msd_pi"])
    _print_part("stick-slip (MassWithStopAndFriction, ode45, 5 s, 1 ms grid)", parts["stick_slip"])
    print(f"  load average at start {load_start}, at end {load_end}")
    ok = all(p["check"]["ok"] for p in parts.values())
    if not args.no_write:
        doc = {"benchmark": "batch", "environment": environment(), "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "method": {"loop_repeats": args.loop_repeats, "batch_repeats": args.batch_repeats, "statistic": "min",
                          "loop_sample": args.loop_sample, "pinned_cpu": cpu,
                          "batch_includes": "compiling every variant's plan (run_batch from the validated diagram)"},
               "load_average": {"start": load_start, "end": load_end}, "parts": parts,
               "targets": {name: {"target_at_least": p["target_at_least"], "ratio": p["ratio"], "met": p["met"]}
                           for name, p in parts.items()},
               "checks_ok": ok}
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "batch.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {RESULTS / 'batch.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
