"""Planar double pendulum: nflow-compat's planar island vs a hand-written solve_ivp.

Model: two point masses on massless rods from the origin (PlanarWorld -- PlanarDistance L1 --
PlanarPointMass m1 -- PlanarDistance L2 -- PlanarPointMass m2), m1 = 1, m2 = 0.5, L1 = 1,
L2 = 0.7, released from rest at theta1 = 1.0, theta2 = 0.5 rad (from the downward
vertical), g = 9.81; 10 s, output grid 0.01 s (1,001 samples), rtol 1e-6, atol 1e-8, max
step 0.2 s (nflow-compat's automatic span/50, given to solve_ivp too).

nflow-compat integrates the Cartesian coordinates of both masses (8 states) with the rods
as constraints (a KKT solve per derivative, Baumgarte stabilization, every sample
projected onto the rods; nflow_compat/physical/planar.py) and records the four positions
through PlanarPositionSensor -> toWorkspace. The diagram is compiled once (timed apart);
``plan.run()`` is timed. The hand-written peer integrates the textbook minimal-coordinate
equations (theta1, theta2, omega1, omega2) with scipy's solve_ivp on the same grid (RK45
against 'ode45', LSODA against 'dae').

Checks (flagged, never hidden): the angles nflow-compat's positions give stay within 1e-3
rad of the peer's, and every sample meets the rods to 1e-9 m. Each figure is the minimum
over interleaved repeats in one process.
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

from .causal_chain import environment

M1, M2, L1, L2, G = 1.0, 0.5, 1.0, 0.7, 9.81
THETA1, THETA2 = 1.0, 0.5
DURATION, DT = 10.0, 0.01
GRID = np.arange(int(round(DURATION / DT)) + 1) * DT
RTOL, ATOL, MAX_STEP = 1e-6, 1e-8, DURATION / 50
TOL_ANGLE, TOL_ROD = 1e-3, 1e-9   # two rtol-1e-6 solutions of a chaotic system drift apart ~1e-4
TARGET_VS_HAND = 3.0
PEER_METHOD = {"ode45": "RK45", "dae": "LSODA"}
RESULTS = Path(__file__).resolve().parent / "results"


def diagram(solver: str) -> dict:
    x1, y1 = L1 * math.sin(THETA1), -L1 * math.cos(THETA1)
    x2, y2 = x1 + L2 * math.sin(THETA2), y1 - L2 * math.cos(THETA2)
    blocks = [
        {"id": "world", "type": "PlanarWorld", "params": {"gravity": G}},
        {"id": "rod1", "type": "PlanarDistance", "params": {"length": L1}},
        {"id": "rod2", "type": "PlanarDistance", "params": {"length": L2}},
        {"id": "m1", "type": "PlanarPointMass", "params": {"m": M1, "x0": x1, "y0": y1}},
        {"id": "m2", "type": "PlanarPointMass", "params": {"m": M2, "x0": x2, "y0": y2}},
    ]
    wires = [
        {"from": "world", "fromPin": "frame", "to": "rod1", "toPin": "a"},
        {"from": "rod1", "fromPin": "b", "to": "m1", "toPin": "com"},
        {"from": "m1", "fromPin": "com", "to": "rod2", "toPin": "a"},
        {"from": "rod2", "fromPin": "b", "to": "m2", "toPin": "com"},
    ]
    for mass in ("m1", "m2"):
        for axis in ("x", "y"):
            name = f"{mass}.{axis}"
            blocks += [{"id": f"s:{name}", "type": "PlanarPositionSensor", "params": {"axis": axis}},
                       {"id": f"rec:{name}", "type": "toWorkspace",
                        "params": {"VariableName": name, "SaveFormat": "Array"}}]
            wires += [{"from": f"s:{name}", "fromPin": "a", "to": mass, "toPin": "com"},
                      {"from": f"s:{name}", "to": f"rec:{name}", "fromIndex": 0, "toIndex": 0}]
    return {"blocks": blocks, "connections": wires, "sampleTime": DT, "duration": DURATION, "solver": solver,
            "variables": {}, "relTol": RTOL, "absTol": ATOL}


def minimal_rhs(t, state):
    """The double pendulum in its angles (point masses, massless rods)."""
    a1, a2, w1, w2 = state
    delta = a1 - a2
    c, s = math.cos(delta), math.sin(delta)
    den = M1 + M2 * s * s
    dw1 = (-M2 * L1 * w1 * w1 * s * c - M2 * L2 * w2 * w2 * s - (M1 + M2) * G * math.sin(a1)
           + M2 * G * math.sin(a2) * c) / (L1 * den)
    dw2 = ((M1 + M2) * (L1 * w1 * w1 * s - G * math.sin(a2) + G * math.sin(a1) * c)
           + M2 * L2 * w2 * w2 * s * c) / (L2 * den)
    return [w1, w2, dw1, dw2]


def run_hand(method: str):
    return solve_ivp(minimal_rhs, (0.0, DURATION), [THETA1, THETA2, 0.0, 0.0], method=method, t_eval=GRID,
                     rtol=RTOL, atol=ATOL, max_step=MAX_STEP)


def _timed(fn):
    gc.collect()
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def compare(result: dict, hand) -> dict:
    """Our angles against the peer's, and our samples' distance from the rods."""
    ws = result["workspace"]
    x1, y1, x2, y2 = (np.asarray(ws[name], dtype=float).reshape(-1) for name in ("m1.x", "m1.y", "m2.x", "m2.y"))
    a1 = np.arctan2(x1, -y1)
    a2 = np.arctan2(x2 - x1, -(y2 - y1))
    return {"samples": int(x1.size),
            "angle_difference": float(max(np.max(np.abs(a1 - hand.y[0])), np.max(np.abs(a2 - hand.y[1])))),
            "rod_residual": float(max(np.max(np.abs(np.hypot(x1, y1) - L1)),
                                      np.max(np.abs(np.hypot(x2 - x1, y2 - y1) - L2))))}


def bench(repeats: int, log) -> dict:
    import nflow_compat as nc
    out = {}
    for solver, method in PEER_METHOD.items():
        compile_s, plan = _timed(lambda: nc.compile_plan(diagram(solver)))
        plan.run()                                   # warm: handler modules, scipy
        ours, hand = [], []
        for k in range(repeats):
            seconds, result = _timed(plan.run)
            ours.append(seconds)
            seconds, solution = _timed(lambda: run_hand(method))
            hand.append(seconds)
            log(f"  {solver} repeat {k + 1}/{repeats}: nflow-compat {ours[-1]:.4f} s, solve_ivp {hand[-1]:.4f} s")
        checks = compare(result, solution)
        checks["ok"] = (checks["samples"] == GRID.size and checks["angle_difference"] <= TOL_ANGLE
                        and checks["rod_residual"] <= TOL_ROD)
        out[solver] = {"peer_method": method, "compile_s": compile_s, "nflow_compat_s": min(ours),
                       "solve_ivp_s": min(hand), "ratio": min(ours) / min(hand), "solver_steps": result["stats"],
                       "peer_nfev": int(solution.nfev), "checks": checks, "all_nflow_compat_s": ours,
                       "all_solve_ivp_s": hand}
    return out


def print_report(res: dict):
    print("double pendulum, 10 s, 1,001 samples (rtol 1e-6): nflow-compat plan.run() vs solve_ivp on the "
          "minimal coordinates")
    print(f"{'solver':<7} {'nflow-compat s':>15} {'solve_ivp s':>12} {'ratio':>7} {'target':>7} "
          f"{'max |d angle|':>14} {'max rod residual':>17} {'checks':>7}")
    for solver, row in res.items():
        c = row["checks"]
        print(f"{solver:<7} {row['nflow_compat_s']:>15.4f} {row['solve_ivp_s']:>12.4f} {row['ratio']:>7.2f} "
              f"{TARGET_VS_HAND:>7.1f} {c['angle_difference']:>14.2e} {c['rod_residual']:>17.2e} "
              f"{'ok' if c['ok'] else 'FAILED':>7}")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench --only planar", description=__doc__.split("\n\n")[0])
    ap.add_argument("--planar-repeats", type=int, default=7, help="interleaved repeats per solver (default 7)")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/results/double_pendulum.json")
    ap.add_argument("--quiet", action="store_true", help="no per-repeat progress lines")
    return ap


def main(argv=None) -> int:
    args = argv if isinstance(argv, argparse.Namespace) else parser().parse_args(argv)
    log = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    load_start = os.getloadavg()
    res = bench(args.planar_repeats, log)
    print_report(res)
    ok = all(row["checks"]["ok"] for row in res.values())
    doc = {"benchmark": "double_pendulum", "environment": environment(),
           "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "model": {"m1": M1, "m2": M2, "L1": L1, "L2": L2, "g": G, "theta1": THETA1, "theta2": THETA2,
                     "duration": DURATION, "dt": DT, "rtol": RTOL, "atol": ATOL, "max_step": MAX_STEP},
           "method": {"repeats": args.planar_repeats, "statistic": "min", "interleaved": True,
                      "timed": "plan.run() (compiled once) vs solve_ivp with t_eval",
                      "tolerances": {"angle": TOL_ANGLE, "rod": TOL_ROD}},
           "target_vs_hand": TARGET_VS_HAND, "results": res, "checks_ok": ok,
           "load_average": {"start": [round(x, 2) for x in load_start],
                            "end": [round(x, 2) for x in os.getloadavg()]}}
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / "double_pendulum.json"
        path.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {path}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
