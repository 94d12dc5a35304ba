"""Serve benchmark: ``nflow-sim serve`` answering 300 mixed requests in one process, against the
same requests run warm in-process (``simulate_json``) and checked against the pipe.

Requests, in order, a cycle of six: examples/quickstart; a line that is not JSON; a small causal
chain whose gain takes one of 10 values (10 distinct diagrams, so plans are compiled as well as
reused); a diagram with an unknown block type; a mass-spring-damper under ode45 (acausal,
``startup.mass_spring_damper``); the quickstart with another variable value.

Checks: every reply, in order, equals the pipe's (``nflow-sim < request``, one fresh process per
distinct request) with ``stats.wall_s`` aside; the exit status is 1 when one does not.

Timed: the serve process from its start to the 300th reply (``--serve-repeats`` runs, min),
its start-up alone (``serve < /dev/null``), and the 300 requests through ``simulate_json`` in
this process once warm (each request's min over ``--serve-repeats`` passes, summed).
Target: serve <= 1.5 s + 2 x the warm in-process total.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson

from .causal_chain import environment
from .profiling import bench_parser, progress_log
from .startup import ROOT, mass_spring_damper, pipe_command
from .stick_slip import _loadavg

RESULTS = ROOT / "bench" / "results"
REQUESTS = 300
STARTUP_ALLOWANCE = 1.5
PER_REQUEST_FACTOR = 2.0


def _chain(gain: float) -> dict:
    blocks = [{"id": "s", "type": "sine", "params": {"Amplitude": 2}},
              {"id": "g", "type": "gain", "params": {"Gain": gain}},
              {"id": "sat", "type": "saturation", "params": {"LowerLimit": -1, "UpperLimit": 1}},
              {"id": "w", "type": "toWorkspace", "params": {"VariableName": "y", "SaveFormat": "Array"}}]
    conns = [{"from": a, "to": b} for a, b in (("s", "g"), ("g", "sat"), ("sat", "w"))]
    return {"blocks": blocks, "connections": conns, "sampleTime": 0.01, "duration": 1.0}


def requests() -> list:
    """The 300 request lines, in order."""
    quickstart = orjson.loads((ROOT / "examples" / "quickstart" / "diagram.json").read_bytes())
    other = dict(quickstart, variables={"c": 1.2})
    unknown = {"blocks": [{"id": "c", "type": "constnat", "params": {"Value": 1}}], "connections": [],
               "sampleTime": 0.1, "duration": 1.0}
    out = []
    for k in range(REQUESTS):
        kind = k % 6
        out.append(orjson.dumps(quickstart) if kind == 0 else b'{"blocks": [not json' if kind == 1 else
                   orjson.dumps(_chain(1.0 + (k // 6) % 10)) if kind == 2 else orjson.dumps(unknown) if kind == 3
                   else orjson.dumps(mass_spring_damper()) if kind == 4 else orjson.dumps(other))
    return out


def comparable(reply: bytes) -> dict:
    doc = orjson.loads(reply)
    if doc.get("status") == "ok":
        doc["stats"].pop("wall_s", None)
    return doc


def pipe_replies(lines: list) -> dict:
    """request -> the pipe's reply for it (one fresh process per distinct request)."""
    out = {}
    for text in dict.fromkeys(lines):
        done = subprocess.run(pipe_command(), input=text, capture_output=True, cwd=ROOT)
        out[text] = comparable(done.stdout)
    return out


def run_server(lines: list) -> tuple[float, list, int]:
    """(seconds from the start to the last reply, the replies, exit status)."""
    payload = b"".join(text + b"\n" for text in lines)
    started = time.perf_counter()
    proc = subprocess.Popen(pipe_command() + ["serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=ROOT)
    feeder = threading.Thread(target=lambda: (proc.stdin.write(payload), proc.stdin.close()))
    feeder.start()
    replies = [proc.stdout.readline() for _ in lines]
    seconds = time.perf_counter() - started
    feeder.join()
    return seconds, replies, proc.wait()


def startup_alone() -> float:
    with open(os.devnull, "rb") as empty:
        started = time.perf_counter()
        subprocess.run(pipe_command() + ["serve"], stdin=empty, stdout=subprocess.DEVNULL, cwd=ROOT)
        return time.perf_counter() - started


def warm_in_process(lines: list, repeats: int) -> list:
    """Per request, the min over ``repeats`` passes of ``simulate_json`` (an error: until raised)."""
    import nflow_compat as nc

    def once(text):
        started = time.perf_counter()
        try:
            nc.simulate_json(text)
        except nc.NFlowError:
            pass
        return time.perf_counter() - started
    for text in dict.fromkeys(lines):     # warm: imports, validators, handler modules
        once(text)
    best = [float("inf")] * len(lines)
    for _ in range(repeats):
        best = [min(b, once(text)) for b, text in zip(best, lines)]
    return best


def parser() -> argparse.ArgumentParser:
    return bench_parser("serve", __doc__, 5, "serve runs and in-process passes")


def main(argv=None) -> int:
    args = argv if isinstance(argv, argparse.Namespace) else parser().parse_args(argv)
    log = progress_log(args)
    load_start = _loadavg()
    lines = requests()
    log("serve: the pipe's replies")
    expected = pipe_replies(lines)
    log("serve: warm in-process")
    warm = warm_in_process(lines, args.serve_repeats)
    serve_s, startup_s, mismatches, statuses = [], [], [], []
    for r in range(args.serve_repeats):
        log(f"serve: run {r + 1}")
        seconds, replies, status = run_server(lines)
        serve_s.append(seconds)
        statuses.append(status)
        startup_s.append(startup_alone())
        mismatches += [k for k, (text, reply) in enumerate(zip(lines, replies)) if comparable(reply) != expected[text]]
    best, warm_total = min(serve_s), sum(warm)
    budget = STARTUP_ALLOWANCE + PER_REQUEST_FACTOR * warm_total
    per_request = (best - min(startup_s)) / len(lines)
    print(f"serve, {len(lines)} requests: {best:.3f} s (min of {args.serve_repeats}; start-up alone "
          f"{min(startup_s):.3f} s, then {per_request * 1e3:.2f} ms a request)")
    print(f"warm in-process simulate_json: {warm_total:.3f} s in all ({warm_total / len(lines) * 1e3:.2f} ms a request)")
    print(f"target: <= {STARTUP_ALLOWANCE} s + {PER_REQUEST_FACTOR} x {warm_total:.3f} s = {budget:.3f} s: "
          f"{'met' if best <= budget else 'NOT met'}")
    print(f"replies equal to the pipe's (wall_s aside): {len(lines) * args.serve_repeats - len(mismatches)} of "
          f"{len(lines) * args.serve_repeats}; exit statuses {sorted(set(statuses))}")
    load_end = _loadavg()
    print(f"load average: {load_start} -> {load_end}")
    if not args.no_write:
        doc = {"benchmark": "serve", "environment": environment(), "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "method": {"requests": len(lines), "repeats": args.serve_repeats, "statistic": "min",
                          "target": f"serve <= {STARTUP_ALLOWANCE} s + {PER_REQUEST_FACTOR} x warm in-process total"},
               "load_average": {"start": load_start, "end": load_end},
               "results": {"serve_s": serve_s, "startup_alone_s": startup_s, "per_request_after_startup_s": per_request,
                           "warm_in_process_total_s": warm_total, "warm_in_process_s": warm, "budget_s": budget,
                           "met": best <= budget, "mismatched_requests": sorted(set(mismatches)),
                           "exit_statuses": statuses}}
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "serve.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 1 if mismatches or any(statuses) else 0


if __name__ == "__main__":
    sys.exit(main())
