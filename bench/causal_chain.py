"""Causal-chain benchmark: nflow-compat vs PathSim vs bdsim vs hand-written loops and numpy.

Model ``chain`` (identical in every engine): y0 = 2*sin(2*pi*1*t) feeds a chain of K
blocks that alternate gain(1) and saturation(-1.5, 1.5), starting with a gain; the last
block is recorded. 10 s at a fixed 1 ms step: 10,001 samples (t = 0 ... 10). With
amplitude 2 the saturations clip about 46 % of the samples, so their clamping branch is
exercised. Every block depends on time only: nflow-compat computes the whole chain over
the grid at once (engine.vectorize).

Model ``feedback``: the same chain cut into groups of 10 blocks, each group fed through a
sum that subtracts the group's own output of the step before (a unitDelay): x = 0 + u -
z; z := the group's output. Nothing but the sine depends on time only, so every block
runs in the step loop (nflow-compat's generated step function, engine.codegen). Compared
with the plain loops of the same computation (PathSim and bdsim are not run on it).

Model ``solver``: the chain under ``ode45``, with an integrator on the sine (x' = y0, x
recorded as well), so every grid point is a major step of a solver run. A saturation has
zero-crossing surfaces under a solver (the integration restarts at its kinks), which every
solver stage reads, so this chain alternates gain(1) and abs instead: only the recorder
reads it, and nflow-compat evaluates it once over the major-step grid
(engine.vectorize.MajorSteps); the sine, which the integrator reads at every solver stage,
keeps its closure. Compared with nflow-compat's closures only (the same run, every block
called at every major step).

Everything runs in one process, the engines interleaved round-robin per repeat so that
machine drift hits them alike; each figure is the minimum over the repeats. A run is
timed from "start the simulation" to "have the recorded trace"; building the model
(compile_plan / Simulation(...) / bd.compile()) is timed separately. ``ours closures``
is nflow-compat's reference path (every block through its closures, as before the
compiled loop), shown for comparison.

block-steps = blocks * 10,001: the source, the K chain blocks (plus a sum and a
unitDelay per group in ``feedback``, the integrator and its recorder in ``solver``) and the
recorder, each evaluated once per sample.
bdsim needs one extra clocked ZOH block (plus a NULL sink) to be evaluated on the 1 ms
grid at all; those two are not counted.

The compile-time curve: ``simulate_json`` end to end (decode, validate, compile, run,
encode) of the ``chain`` model with 100, 1,000 and 10,000 blocks for 0.01 s (11
samples), and its pieces.

``python -m bench --profile`` adds a breakdown of where nflow-compat's run time goes.
"""
from __future__ import annotations

import argparse
import functools
import gc
import json
import math
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import orjson

from .profiling import profile_rows

AMPLITUDE = 2.0
FREQUENCY = 1.0          # Hz
GAIN = 1.0
LOWER, UPPER = -1.5, 1.5
DT = 1e-3
DURATION = 10.0
N_SAMPLES = 10_001
KS = (10, 100, 1000)
MODELS = ("chain", "feedback", "solver")
FIXED_STEP_MODELS = ("chain", "feedback")
GROUP = 10               # feedback: chain blocks per unitDelay loop
TARGET_K = 100
TARGET_SPEEDUP_PATHSIM = 20.0   # ours must be at least this many times faster than PathSim
TARGET_SLOWDOWN_PLAIN = 8.0     # and at most this many times slower than the plain loop
TARGET_RATE = 300e6             # chain: block-steps per second, at least
TARGET_SLOWDOWN_NUMPY = 4.0     # chain: at most this many times numpy over the time axis
CURVE_KS = (100, 1000, 10000)   # blocks of the compile-time curve
CURVE_DURATION = 0.01
TARGET_JSON_S = 0.5             # simulate_json of the 10,000-block chain for 0.01 s, at most
RESULTS = Path(__file__).resolve().parent / "results"

OURS, CLOSURES, NUMPY, PATHSIM, BDSIM, PLAIN, TUNED = ("nflow-compat", "ours closures", "numpy", "PathSim", "bdsim",
                                                        "plain loop", "plain tuned")
ENGINES = (OURS, CLOSURES, NUMPY, PATHSIM, BDSIM, PLAIN, TUNED)


def chain(k: int, model: str = "chain") -> list[str]:
    """The block kinds of the chain, in order."""
    other = "abs" if model == "solver" else "saturation"
    return ["gain" if j % 2 == 0 else other for j in range(k)]


def groups(k: int) -> int:
    """feedback: the number of unitDelay loops (the last one may hold fewer blocks)."""
    return -(-k // GROUP)


def block_steps(k: int, model: str = "chain") -> int:
    extra = {"feedback": 2 * groups(k), "solver": 2}.get(model, 0)     # sums and delays; integrator and recorder
    return (k + 2 + extra) * N_SAMPLES


# ----------------------------------------------------------------------------- engines
# Each engine object: build(k) sets it up (timed by the caller); run() simulates once
# and returns (times, trace) as float arrays.

class Ours:
    """nflow-compat: compile the nflow JSON diagram once, run the plan."""

    name = OURS
    closures_only = False

    def __init__(self, model: str = "chain"):
        self.model = model

    @staticmethod
    def diagram(k: int, model: str = "chain", duration: float = DURATION) -> dict:
        blocks = [{"id": "src", "type": "sine", "inputs": 0, "outputs": 1,
                   "params": {"Amplitude": AMPLITUDE, "Frequency": FREQUENCY, "Phase": 0.0}}]
        wires = []

        def wire(src, dst, port=0):
            wires.append({"from": src, "to": dst, "fromIndex": 0, "toIndex": port})
        prev = "src"
        for j, kind in enumerate(chain(k, model)):
            if model == "feedback" and j % GROUP == 0:
                g = j // GROUP
                blocks += [{"id": f"add{g}", "type": "sum", "inputs": 2, "outputs": 1, "params": {"Inputs": "+-"}},
                           {"id": f"z{g}", "type": "unitDelay", "inputs": 1, "outputs": 1,
                            "params": {"InitialCondition": 0.0}}]
                wire(prev, f"add{g}")
                wire(f"z{g}", f"add{g}", 1)
                prev = f"add{g}"
            bid = f"b{j}"
            params = {"gain": {"Gain": GAIN}, "saturation": {"LowerLimit": LOWER, "UpperLimit": UPPER}}.get(kind, {})
            blocks.append({"id": bid, "type": kind, "inputs": 1, "outputs": 1, "params": params})
            wire(prev, bid)
            prev = bid
            if model == "feedback" and (j % GROUP == GROUP - 1 or j == k - 1):
                wire(bid, f"z{j // GROUP}")
        blocks.append({"id": "rec", "type": "toWorkspace", "inputs": 1, "outputs": 0,
                       "params": {"VariableName": "y", "SaveFormat": "Array"}})
        wire(prev, "rec")
        if model == "solver":
            blocks += [{"id": "int", "type": "integrator", "inputs": 1, "outputs": 1, "params": {}},
                       {"id": "rec_x", "type": "toWorkspace", "inputs": 1, "outputs": 0,
                        "params": {"VariableName": "x", "SaveFormat": "Array"}}]
            wire("src", "int")
            wire("int", "rec_x")
        return {"blocks": blocks, "connections": wires, "sampleTime": DT, "duration": duration,
                "solver": "ode45" if model == "solver" else "discrete", "variables": {}}

    def build(self, k: int):
        import nflow_compat as nc
        from nflow_compat.engine import Plan
        self.d = self.diagram(k, self.model)
        self.text = orjson.dumps(self.d)
        self.plan = Plan(nc.validate(self.d), closures_only=self.closures_only)

    def run(self):
        r = self.plan.run()
        return np.asarray(r["time"], dtype=float), np.asarray(r["workspace"]["y"], dtype=float)[:, 0]

    def simulate_json(self) -> str:
        import nflow_compat as nc
        return nc.simulate_json(self.text)


class OursClosures(Ours):
    """nflow-compat's reference path: every block through its closures, step by step."""

    name = CLOSURES
    closures_only = True


class NumpyTime:
    """numpy over the time axis, written by hand: one array operation per block over all
    samples (np.sin, x * g, np.clip). The limit for a chain of time-only blocks."""

    name = NUMPY

    def build(self, k: int):
        self.kinds = chain(k)

    def run(self):
        t = np.arange(N_SAMPLES) * DT
        x = AMPLITUDE * np.sin(2.0 * math.pi * FREQUENCY * t)
        for kind in self.kinds:
            x = x * GAIN if kind == "gain" else np.clip(x, LOWER, UPPER)
        return t, x
class PathSim:
    """PathSim: SinusoidalSource -> Amplifier/Clip chain -> Scope, explicit Euler at a
    fixed dt=1e-3 with adaptive=False (the model has no dynamic blocks, so each step is
    one DAG evaluation plus the Scope sample; the solver choice does not change that)."""

    name = PATHSIM

    def build(self, k: int):
        from pathsim import Connection, Simulation
        from pathsim.blocks import Amplifier, Clip, Scope, SinusoidalSource
        from pathsim.solvers import EUF
        src = SinusoidalSource(frequency=FREQUENCY, amplitude=AMPLITUDE, phase=0.0)
        blocks, conns, prev = [src], [], src
        for kind in chain(k):
            b = Amplifier(GAIN) if kind == "gain" else Clip(LOWER, UPPER)
            blocks.append(b)
            conns.append(Connection(prev, b))
            prev = b
        self.scope = Scope()
        blocks.append(self.scope)
        conns.append(Connection(prev, self.scope))
        self.sim = Simulation(blocks, conns, dt=DT, Solver=EUF, log=False)

    def run(self):
        self.sim.run(DURATION, reset=True, adaptive=False)
        t, data = self.scope.read()
        return np.asarray(t, dtype=float), np.asarray(data, dtype=float)[0]


class Bdsim:
    """bdsim: WAVEFORM(sine) -> GAIN/CLIP chain, the last block watched. A diagram
    without states or clocks is evaluated only at event times, so a 1 ms clock drives a
    ZOH (into a NULL sink) hung off the chain's end: bdsim then evaluates the whole
    diagram at t = k*1 ms (its pure-discrete path, no solve_ivp) and records the watched
    signal at each evaluation, t = 0 included."""

    name = BDSIM

    def build(self, k: int):
        import bdsim
        self.sim = bdsim.BDSim(banner=False, sysargs=False, graphics=False, animation=False,
                               progress=False, quiet=True, toolboxes=False)
        bd = self.sim.blockdiagram()
        prev = bd.WAVEFORM(wave="sine", freq=FREQUENCY, amplitude=AMPLITUDE, phase=0.0)
        for kind in chain(k):
            b = bd.GAIN(GAIN) if kind == "gain" else bd.CLIP(LOWER, UPPER)
            bd.connect(prev, b)
            prev = b
        clock = bd.clock(DT, "s")
        zoh = bd.ZOH(clock)
        bd.connect(prev, zoh)
        bd.connect(zoh, bd.NULL())
        bd.compile()
        self.bd, self.last = bd, prev

    def run(self):
        out = self.sim.run(self.bd, T=DURATION, watch=[self.last])
        return np.asarray(out.t, dtype=float), np.asarray(out.y, dtype=float)[:, 0]


def plain_loop(k: int, n: int = N_SAMPLES, feedback: bool = False) -> list:
    """What one writes by hand: floats, math.sin, min/max, append to a list. With
    ``feedback``, per group x = 0.0 + x - z before its blocks and z = x after them (z is
    read once a step, before it is overwritten: the unitDelay)."""
    kinds = chain(k)
    parts = [kinds[g:g + GROUP] for g in range(0, k, GROUP)] if feedback else [kinds]
    z = [0.0] * len(parts)
    w = 2.0 * math.pi * FREQUENCY
    out = []
    for step in range(n):
        x = AMPLITUDE * math.sin(w * (step * DT))
        for g, part in enumerate(parts):
            if feedback:
                x = 0.0 + x - z[g]
            for kind in part:
                if kind == "gain":
                    x = x * GAIN
                else:
                    x = min(max(x, LOWER), UPPER)
            z[g] = x
        out.append(x)
    return out


def plain_tuned(k: int, n: int = N_SAMPLES, feedback: bool = False) -> list:
    """The same loop written for speed: flags instead of strings, names bound to locals,
    the clamp as two conditional expressions (no builtin calls). Same values as
    min(max(x, lo), hi) for every float x, NaN included."""
    flags = [kind == "gain" for kind in chain(k)]
    parts = [flags[g:g + GROUP] for g in range(0, k, GROUP)] if feedback else [flags]
    z = [0.0] * len(parts)
    w, a, g, lo, hi, dt, sin = 2.0 * math.pi * FREQUENCY, AMPLITUDE, GAIN, LOWER, UPPER, DT, math.sin
    out = []
    append = out.append
    for step in range(n):
        x = a * sin(w * (step * dt))
        for group, part in enumerate(parts):
            if feedback:
                x = 0.0 + x - z[group]
            for gain in part:
                if gain:
                    x = x * g
                else:
                    x = lo if x < lo else x
                    x = hi if hi < x else x
            z[group] = x
        append(x)
    return out


class Plain:
    """The plain loop as specified (min/max); the reference for the slowdown targets."""

    name = PLAIN
    loop = staticmethod(plain_loop)

    def __init__(self, model: str = "chain"):
        self.feedback = model == "feedback"

    def build(self, k: int):
        self.k = k

    def run(self):
        y = self.loop(self.k, feedback=self.feedback)
        return np.arange(N_SAMPLES) * DT, np.asarray(y, dtype=float)


class PlainTuned(Plain):
    """A second hand-written reference: the plain loop without builtin calls."""

    name = TUNED
    loop = staticmethod(plain_tuned)


# ----------------------------------------------------------------------------- timing

def _timed(fn):
    gc.collect()
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def _engines(model: str, peers: bool) -> list:
    if model == "solver":
        return [Ours(model), OursClosures(model)]
    if model == "feedback":
        return [Ours(model), OursClosures(model), Plain(model), PlainTuned(model)]
    return [Ours(), OursClosures(), NumpyTime(), Plain(), PlainTuned()] + ([PathSim(), Bdsim()] if peers else [])


def bench_k(k: int, model: str, repeats: int, fast_repeats: int, peer_repeats: int, peers: bool, log) -> dict:
    engines = _engines(model, peers)
    reps = {e.name: (peer_repeats if e.name in (PATHSIM, BDSIM) else max(repeats, fast_repeats)) for e in engines}
    build_s, runs, traces = {}, {e.name: [] for e in engines}, {}
    for e in engines:
        build_s[e.name], _ = _timed(functools.partial(e.build, k))
    for r in range(max(reps.values())):
        for e in engines:
            if r < reps[e.name]:
                secs, (t, y) = _timed(e.run)
                runs[e.name].append(secs)
                traces.setdefault(e.name, (t, y))
                log(f"  {model:<8} K={k:<5} {e.name:<13} repeat {r + 1}/{reps[e.name]}: {secs:.4f} s")
    ours = engines[0]
    json_runs = []
    for _ in range(max(repeats, fast_repeats)):
        secs, text = _timed(ours.simulate_json)
        json_runs.append(secs)
    # the JSON path must carry the same trace
    json_y = np.asarray(orjson.loads(text)["workspace"]["y"], dtype=float)[:, 0]

    t_ref, y_ref = traces[OURS]
    grid = np.arange(N_SAMPLES) * DT
    bs = block_steps(k, model)
    engines_out = {}
    for name in runs:
        t, y = traces[name]
        best = min(runs[name])
        entry = {"build_s": build_s[name], "run_s": best, "runs_s": runs[name], "repeats": len(runs[name]),
                 "block_steps_per_s": bs / best, "samples": int(y.size),
                 "max_abs_diff_vs_ours": float(np.max(np.abs(y - y_ref))) if y.size == y_ref.size else None,
                 "max_abs_time_error": float(np.max(np.abs(t - grid))) if t.size == grid.size else None}
        engines_out[name] = entry
    engines_out[OURS]["simulate_json_s"] = min(json_runs)
    engines_out[OURS]["simulate_json_runs_s"] = json_runs
    engines_out[OURS]["simulate_json_max_abs_diff"] = float(np.max(np.abs(json_y - y_ref)))
    t_ours = engines_out[OURS]["run_s"]
    ratios = {"closures_vs_ours": engines_out[CLOSURES]["run_s"] / t_ours}
    if PLAIN in engines_out:
        ratios["ours_vs_plain_slowdown"] = t_ours / engines_out[PLAIN]["run_s"]
        ratios["ours_vs_plain_tuned_slowdown"] = t_ours / engines_out[TUNED]["run_s"]
    if NUMPY in engines_out:
        ratios["ours_vs_numpy_slowdown"] = t_ours / engines_out[NUMPY]["run_s"]
    if PATHSIM in engines_out:
        ratios["speedup_vs_pathsim"] = engines_out[PATHSIM]["run_s"] / t_ours
        ratios["speedup_vs_bdsim"] = engines_out[BDSIM]["run_s"] / t_ours
    clipped = float(np.mean(np.abs(y_ref) == UPPER))
    return {"model": model, "K": k, "block_steps": bs, "engines": engines_out, "ratios": ratios,
            "fraction_samples_clipped": clipped}


def compile_curve(ks, repeats: int, log) -> list:
    """``simulate_json`` of the ``chain`` model with k blocks (k - 2 chain blocks, the
    sine and the recorder) for 0.01 s, end to end and piece by piece (min over repeats,
    the pieces round-robin)."""
    import nflow_compat as nc
    from nflow_compat import api, results as nc_results
    from nflow_compat.engine import Plan
    out = []
    for k in ks:
        text = orjson.dumps(Ours.diagram(k - 2, duration=CURVE_DURATION))
        raw = api.load_json(text)
        diag = api.validate(raw)
        plan = Plan(diag)
        pieces = {"decode (load_json)": lambda: api.load_json(text), "validate": lambda: api.validate(raw),
                  "compile (Plan)": lambda: Plan(diag), "run": plan.run,
                  "encode": lambda: nc_results.encode(plan.run()), "simulate_json": lambda: nc.simulate_json(text)}
        best = {name: math.inf for name in pieces}
        for _ in range(repeats):
            for name, fn in pieces.items():
                best[name] = min(best[name], _timed(fn)[0])
        best["encode"] = max(0.0, best["encode"] - best["run"])
        log(f"  curve {k:>6} blocks: simulate_json {best['simulate_json']:.4f} s")
        program = plan.program
        out.append({"blocks": k, "samples": plan.diagram.n_samples, "seconds": best,
                    "vectorized_blocks": len(program.vector.steps) if program.vector is not None else 0,
                    "inlined_blocks": program.step.inlined if program.step is not None else 0})
    return out


# ----------------------------------------------------------------------------- report

def _fmt_rate(x: float) -> str:
    return f"{x / 1e6:8.3f} M"


def _header(out, head: str) -> str:
    """Prints a table's header and its rule; returns the rule."""
    rule = "-" * len(head)
    out(head)
    out(rule)
    return rule


def print_report(results: list, curve: list, out=print):
    for model in MODELS:
        rows = [res for res in results if res["model"] == model]
        if not rows:
            continue
        out("")
        if model == "chain":
            out("Causal chain: 2*sin(2*pi*t) -> K x [gain(1), saturation(+-1.5)] -> recorder; "
                f"dt={DT}, {DURATION:g} s, {N_SAMPLES} samples")
        elif model == "solver":
            out("Solver chain: 2*sin(2*pi*t) -> K x [gain(1), abs] -> recorder, and the sine -> integrator -> "
                f"recorder, under ode45; {N_SAMPLES} major steps (the grid)")
        else:
            out(f"Feedback chain: the same, each group of {GROUP} blocks behind a sum 0 + u - z, z = unitDelay of "
                "the group's output")
        out(f"block-steps/s = blocks*{N_SAMPLES} / run time (min over repeats; build/compile timed separately)")
        out("")
        rule = _header(out, f"{'K':>5} | {'engine':<13} | {'build s':>8} | {'run s':>9} | {'block-steps/s':>13} | "
                            f"{'reps':>4} | {'max|dy| vs ours':>15} | {'max|t-k*dt|':>11}")
        for res in rows:
            for name in ENGINES:
                e = res["engines"].get(name)
                if e is None:
                    continue
                diff = "n/a" if e["max_abs_diff_vs_ours"] is None else f"{e['max_abs_diff_vs_ours']:.3g}"
                terr = "n/a" if e["max_abs_time_error"] is None else f"{e['max_abs_time_error']:.3g}"
                out(f"{res['K']:>5} | {name:<13} | {e['build_s']:8.4f} | {e['run_s']:9.4f} | "
                    f"{_fmt_rate(e['block_steps_per_s']):>13} | {e['repeats']:>4} | {diff:>15} | {terr:>11}")
            o = res["engines"][OURS]
            out(f"{res['K']:>5} | {'ours JSON':<13} | {'':8} | {o['simulate_json_s']:9.4f} | "
                f"{_fmt_rate(res['block_steps'] / o['simulate_json_s']):>13} | {len(o['simulate_json_runs_s']):>4} | "
                f"{o['simulate_json_max_abs_diff']:>15.3g} | {'':>11}   (whole simulate_json: parse+compile+run+encode)")
            out(rule)
        out("")
        if model == "solver":
            _header(out, f"{'K':>5} | {'closures/ours':>13}")
            for res in rows:
                out(f"{res['K']:>5} | {res['ratios']['closures_vs_ours']:>12.2f}x")
            out("closures/ours = the same run through every block's closures / ours (> 1: the grid path is faster)")
            continue
        _header(out, f"{'K':>5} | {'ours/PathSim speedup':>20} | {'ours/bdsim speedup':>18} | {'ours/numpy slowdown':>19} | "
                     f"{'ours/plain slowdown':>19} | {'ours/tuned slowdown':>19} | {'closures/ours':>13}")
        for res in rows:
            r = res["ratios"]
            ps = f"{r['speedup_vs_pathsim']:.1f}x" if "speedup_vs_pathsim" in r else "n/a"
            bd = f"{r['speedup_vs_bdsim']:.1f}x" if "speedup_vs_bdsim" in r else "n/a"
            nps = f"{r['ours_vs_numpy_slowdown']:.2f}x" if "ours_vs_numpy_slowdown" in r else "n/a"
            out(f"{res['K']:>5} | {ps:>20} | {bd:>18} | {nps:>19} | {r['ours_vs_plain_slowdown']:>18.2f}x | "
                f"{r['ours_vs_plain_tuned_slowdown']:>18.2f}x | {r['closures_vs_ours']:>12.1f}x")
        out("speedup = peer run time / ours; slowdown = ours / other run time (> 1: ours is slower)")
    if curve:
        out("")
        out(f"Compile-time curve: simulate_json of the chain model for {CURVE_DURATION:g} s, pieces in ms "
            "(min over repeats)")
        names = list(curve[0]["seconds"])
        out(f"{'blocks':>7} | " + " | ".join(f"{n:>18}" for n in names) + " | vectorized | inlined")
        for c in curve:
            out(f"{c['blocks']:>7} | " + " | ".join(f"{c['seconds'][n] * 1e3:18.1f}" for n in names)
                + f" | {c['vectorized_blocks']:>10} | {c['inlined_blocks']:>7}")


def check_targets(results: list, curve: list) -> dict:
    verdict = {"K": TARGET_K}
    for res in results:
        if res["K"] != TARGET_K:
            continue
        r, ours = res["ratios"], res["engines"][OURS]
        if res["model"] == "chain":
            verdict.update(slowdown_vs_plain=r["ours_vs_plain_slowdown"], slowdown_target=TARGET_SLOWDOWN_PLAIN,
                           slowdown_ok=r["ours_vs_plain_slowdown"] <= TARGET_SLOWDOWN_PLAIN,
                           rate=ours["block_steps_per_s"], rate_target=TARGET_RATE,
                           rate_ok=ours["block_steps_per_s"] >= TARGET_RATE,
                           slowdown_vs_numpy=r["ours_vs_numpy_slowdown"], numpy_target=TARGET_SLOWDOWN_NUMPY,
                           numpy_ok=r["ours_vs_numpy_slowdown"] <= TARGET_SLOWDOWN_NUMPY)
            if "speedup_vs_pathsim" in r:
                verdict.update(speedup_vs_pathsim=r["speedup_vs_pathsim"], speedup_target=TARGET_SPEEDUP_PATHSIM,
                               speedup_ok=r["speedup_vs_pathsim"] >= TARGET_SPEEDUP_PATHSIM)
        elif res["model"] == "feedback":
            verdict.update(feedback_vs_plain=r["ours_vs_plain_slowdown"],
                           feedback_ok=r["ours_vs_plain_slowdown"] < 1.0)
        else:
            verdict.update(solver_gain=r["closures_vs_ours"])
    largest = next((c for c in curve if c["blocks"] == max(CURVE_KS)), None)
    if largest is not None:
        verdict.update(json_s=largest["seconds"]["simulate_json"], json_target=TARGET_JSON_S,
                       json_ok=largest["seconds"]["simulate_json"] < TARGET_JSON_S)
    return verdict


def print_targets(v: dict, out=print):
    def mark(ok):
        return "PASS" if ok else "FAIL"
    lines = []
    if "rate" in v:
        lines.append(f"chain: {v['rate'] / 1e6:.0f} M block-steps/s (>= {v['rate_target'] / 1e6:.0f} M: "
                     f"{mark(v['rate_ok'])}); {v['slowdown_vs_numpy']:.2f}x numpy over time (<= "
                     f"{v['numpy_target']:g}x: {mark(v['numpy_ok'])}); ours/plain {v['slowdown_vs_plain']:.2f}x "
                     f"(<= {v['slowdown_target']:g}x: {mark(v['slowdown_ok'])})")
        if "speedup_vs_pathsim" in v:
            lines[-1] += (f"; speedup vs PathSim {v['speedup_vs_pathsim']:.1f}x (>= {v['speedup_target']:g}x: "
                          f"{mark(v['speedup_ok'])})")
    if "feedback_vs_plain" in v:
        lines.append(f"feedback: ours/plain loop {v['feedback_vs_plain']:.2f}x (< 1: {mark(v['feedback_ok'])})")
    if "solver_gain" in v:
        lines.append(f"solver: ode45 run {v['solver_gain']:.2f}x faster than through the closures (no target: "
                     "the gain of the major-step grid)")
    if "json_s" in v:
        lines.append(f"simulate_json, {max(CURVE_KS):,} blocks for {CURVE_DURATION:g} s: {v['json_s']:.3f} s "
                     f"(< {v['json_target']:g} s: {mark(v['json_ok'])})")
    for line in lines:
        out(f"target at K={v['K']}: {line}")


def traces_agree(results: list, tol: float = 1e-9) -> bool:
    for res in results:
        for e in res["engines"].values():
            if e["samples"] != N_SAMPLES or e["max_abs_diff_vs_ours"] is None or e["max_abs_diff_vs_ours"] > tol:
                return False
        if res["engines"][OURS]["simulate_json_max_abs_diff"] != 0.0:
            return False
        if res["engines"][CLOSURES]["max_abs_diff_vs_ours"] != 0.0:    # the compiled loop is exact
            return False
    return True


def environment() -> dict:
    versions = {}
    for pkg in ("nflow-compat", "numpy", "orjson", "pathsim", "bdsim", "scipy"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"python": sys.version.split()[0], "implementation": platform.python_implementation(),
            "platform": platform.platform(), "cpu": cpu, "cpu_count": os.cpu_count(), "versions": versions}


# ----------------------------------------------------------------------------- profile

PROFILE_ROUNDS = 21    # round-robin rounds of each decomposition (min)


def profile(k: int = TARGET_K) -> dict:
    """Where nflow-compat's run time goes at ``k``, per model: cProfile of one run
    (shares; its hook inflates cheap calls), and a direct decomposition of the compiled
    run into the engine's own pieces, timed round-robin with the whole run: the
    vectorized set over the grid (and each of its array forms alone), the feeds, the
    generated step function, the bulk recording, the result."""
    from nflow_compat.engine.fixed_step import run_closures
    from nflow_compat.engine.run import run_result
    out: dict = {"K": k}
    for model in FIXED_STEP_MODELS:
        ours = Ours(model)
        ours.build(k)
        plan, n = ours.plan, N_SAMPLES
        program, ctx, dt = plan.program, plan.ctx, DT
        entry: dict = {"block_steps": block_steps(k, model)}
        plan.run()
        entry["cprofile_total_s"], entry["cprofile_top"] = profile_rows(plan.run, 8)

        vector, step = program.vector, program.step
        pieces = {"run (compiled)": plan.run}
        kinds = [plan.diagram.blocks[i].type.type for i in range(len(plan.phases))]
        if vector is not None:
            pieces["vectorized set over the grid (evaluate)"] = lambda: vector.evaluate(0, n, dt)
            t = np.arange(n) * dt
            column = np.sin(t)
            for kind in ("sine", "gain", "saturation"):
                arrays = [a for a, ins, outs, drops in vector.steps
                          if kinds[next(i for i, p in enumerate(plan.phases) if p.array is a)] == kind]
                if arrays:
                    pieces[f"{kind} array form x{len(arrays)}"] = (
                        lambda fs=arrays: [f(t, [column]) for f in fs])
            fed = [s for slots in vector.feeds.values() for s in slots]
            if fed:
                pieces[f"feeds: {len(fed)} column(s) to Python floats"] = lambda: [column.tolist() for _ in fed]
            for bulk in vector.recorders:
                def record(bulk=bulk):
                    plan.phases[0].init and None
                    for p in plan.phases:
                        if getattr(p.after_step, "bulk", None) is bulk:
                            p.init()
                    bulk(t, column)
                pieces["bulk recording"] = record
        if step is not None:
            def loop():
                ctx.reset()
                for p in plan.phases:
                    if p.init:
                        p.init()
                feeds = [iter(column.tolist()) for _ in step.fed]
                step.run(0, n, plan.budget.chunk, feeds, step.start(), lambda done: None)
            pieces[f"generated step function ({step.inlined} blocks inlined, {len(step.calls)} calls)"] = loop
        pieces["result assembly"] = lambda: run_result(plan, n, 0.0)
        pieces["run (closures)"] = lambda: _closure_run(plan, run_closures)
        best = {name: math.inf for name in pieces}
        for _ in range(PROFILE_ROUNDS):
            for name, fn in pieces.items():
                best[name] = min(best[name], _timed(fn)[0])
        entry["pieces_s"] = best
        out[model] = entry
    return out


def _closure_run(plan, run_closures):
    """The plan's run through its closures (the reference path), without the result."""
    plan.S[:] = plan.initial_signals
    plan.ctx.reset()
    plan.budget.start()
    with np.errstate(all="ignore"):
        for f in plan.init:
            f()
        run_closures(plan, N_SAMPLES)


def print_profile(p: dict, out=print):
    for model in FIXED_STEP_MODELS:
        e = p[model]
        out("")
        out(f"Profile of nflow-compat, model {model}, K={p['K']} ({e['block_steps']:,} block-steps)")
        out(f"  cProfile (its hook inflates each call; total {e['cprofile_total_s'] * 1e3:.1f} ms):")
        for r in e["cprofile_top"]:
            out(f"    {r['share']:6.1%}  {r['calls']:>9,} calls  {r['tottime_s'] * 1e3:8.2f} ms  {r['function']}")
        out("  pieces, each timed alone (min of round-robin rounds):")
        run = e["pieces_s"]["run (compiled)"]
        for name, v in e["pieces_s"].items():
            out(f"    {v * 1e3:8.3f} ms  {v / run:7.1%}  {name}")


# ----------------------------------------------------------------------------- main

def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench --only causal", description=__doc__.split("\n\n")[0])
    ap.add_argument("--ks", default=",".join(map(str, KS)), help="chain lengths (default 10,100,1000)")
    ap.add_argument("--models", default=",".join(MODELS), help=f"models (default {','.join(MODELS)})")
    ap.add_argument("--repeats", type=int, default=5, help="repeats per engine (min is reported)")
    ap.add_argument("--fast-repeats", type=int, default=15,
                    help="repeats for nflow-compat, numpy and the loops (cheap runs; more repeats tame "
                         "timing noise; default 15)")
    ap.add_argument("--peer-repeats-large", type=int, default=2,
                    help="repeats for PathSim and bdsim at K >= 1000 (each run takes ~40 s; default 2)")
    ap.add_argument("--no-peers", action="store_true", help="skip PathSim and bdsim")
    ap.add_argument("--no-curve", action="store_true", help="skip the compile-time curve")
    ap.add_argument("--profile", action="store_true", help="also profile nflow-compat at K=100")
    ap.add_argument("--profile-only", action="store_true", help="only the profile")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/results/*.json")
    ap.add_argument("--quiet", action="store_true", help="no per-repeat progress lines")
    return ap


def main(argv=None) -> int:
    args = argv if isinstance(argv, argparse.Namespace) else parser().parse_args(argv)
    log = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))

    import nflow_compat as nc
    nc.compile_plan(Ours.diagram(2))   # import handler modules before anything is timed
    if not args.no_peers and not args.profile_only:
        for engine in (PathSim(), Bdsim()):   # imports and bdsim's block library load, untimed
            engine.build(2)
    env = environment()
    status = 0
    if not args.profile_only:
        ks = [int(x) for x in args.ks.split(",") if x.strip()]
        models = [m for m in args.models.split(",") if m.strip()]
        load_before = os.getloadavg()
        results = []
        for model in models:
            for k in ks:
                peer_reps = args.peer_repeats_large if k >= 1000 else args.repeats
                results.append(bench_k(k, model, args.repeats, args.fast_repeats, peer_reps, not args.no_peers, log))
        curve = [] if args.no_curve else compile_curve(CURVE_KS, max(3, args.repeats), log)
        load_after = os.getloadavg()
        print_report(results, curve)
        agree = traces_agree(results)
        verdict = check_targets(results, curve)
        print("")
        print(f"traces agree (all engines, 10,001 samples, max |dy| <= 1e-9; closures and JSON path exact): "
              f"{'yes' if agree else 'NO'}")
        print_targets(verdict)
        print(f"load average (1, 5, 15 min) before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
              f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} ({os.cpu_count()} cores)")
        if any(k >= 1000 for k in ks) and not args.no_peers and args.peer_repeats_large < args.repeats:
            print(f"note: PathSim and bdsim use {args.peer_repeats_large} repeats at K>=1000 "
                  f"({args.repeats} below; nflow-compat and the loops {max(args.repeats, args.fast_repeats)}); "
                  f"see --peer-repeats-large")
        if not agree:
            status = 1
        if not args.no_write:
            RESULTS.mkdir(parents=True, exist_ok=True)
            doc = {"benchmark": "causal_chain",
                   "model": {"source": f"{AMPLITUDE}*sin(2*pi*{FREQUENCY}*t)", "chain": "alternating gain(1), "
                             f"saturation({LOWER}, {UPPER}), gain first", "recorder": "toWorkspace / Scope / watch",
                             "feedback": f"groups of {GROUP} chain blocks behind a sum 0 + u - z, z = unitDelay of "
                                         "the group's output",
                             "solver": "the chain with abs for saturation, under ode45, and the sine -> integrator "
                                       "-> recorder",
                             "dt": DT, "duration": DURATION, "samples": N_SAMPLES,
                             "block_steps": "blocks*samples"},
                   "method": {"repeats": args.repeats, "fast_repeats": max(args.repeats, args.fast_repeats),
                              "peer_repeats_k_ge_1000": args.peer_repeats_large,
                              "statistic": "min", "interleaved": True, "one_process": True},
                   "environment": env, "load_average": {"before": load_before, "after": load_after},
                   "results": results, "compile_curve": curve, "traces_agree": agree, "targets": verdict,
                   "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            path = RESULTS / "causal_chain.json"
            path.write_text(json.dumps(doc, indent=2) + "\n")
            print(f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
    if args.profile or args.profile_only:
        p = profile(TARGET_K)
        print_profile(p)
        if not args.no_write:
            RESULTS.mkdir(parents=True, exist_ok=True)
            path = RESULTS / "causal_chain_profile.json"
            path.write_text(json.dumps({"environment": env, "load_average": os.getloadavg(), "profile": p},
                                       indent=2) + "\n")
            print(f"wrote {path}")
    return status
