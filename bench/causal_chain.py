"""Causal-chain benchmark: nflow-compat vs PathSim vs bdsim vs a hand-written loop.

Model (identical in every engine): y0 = 2*sin(2*pi*1*t) feeds a chain of K blocks that
alternate gain(1) and saturation(-1.5, 1.5), starting with a gain; the last block is
recorded. 10 s at a fixed 1 ms step: 10,001 samples (t = 0 ... 10). With amplitude 2 the
saturations clip about 46 % of the samples, so their clamping branch is exercised.

Everything runs in one process, the engines interleaved round-robin per repeat so that
machine drift hits them alike; each figure is the minimum over the repeats. A run is
timed from "start the simulation" to "have the recorded trace"; building the model
(compile_plan / Simulation(...) / bd.compile()) is timed separately.

block-steps = (K + 2) * 10,001: the source, the K chain blocks and the recorder, each
evaluated once per sample. bdsim needs one extra clocked ZOH block (plus a NULL sink)
to be evaluated on the 1 ms grid at all; those two are not counted.

``python -m bench --profile`` adds a breakdown of where nflow-compat's run time goes.
"""
from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import io
import json
import math
import operator
import os
import platform
import pstats
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import orjson

AMPLITUDE = 2.0
FREQUENCY = 1.0          # Hz
GAIN = 1.0
LOWER, UPPER = -1.5, 1.5
DT = 1e-3
DURATION = 10.0
N_SAMPLES = 10_001
KS = (10, 100, 1000)
TARGET_K = 100
TARGET_SPEEDUP_PATHSIM = 20.0   # ours must be at least this many times faster than PathSim
TARGET_SLOWDOWN_PLAIN = 8.0     # and at most this many times slower than the plain loop
RESULTS = Path(__file__).resolve().parent / "results"

OURS, PATHSIM, BDSIM, PLAIN, TUNED = "nflow-compat", "PathSim", "bdsim", "plain loop", "plain tuned"
ENGINES = (OURS, PATHSIM, BDSIM, PLAIN, TUNED)


def chain(k: int) -> list[str]:
    """The block kinds of the chain, in order."""
    return ["gain" if j % 2 == 0 else "saturation" for j in range(k)]


def block_steps(k: int) -> int:
    return (k + 2) * N_SAMPLES


# ----------------------------------------------------------------------------- engines
# Each engine object: build(k) sets it up (timed by the caller); run() simulates once
# and returns (times, trace) as float arrays.

class Ours:
    """nflow-compat: compile the nflow JSON diagram once, run the plan."""

    name = OURS

    @staticmethod
    def diagram(k: int) -> dict:
        blocks = [{"id": "src", "type": "sine", "inputs": 0, "outputs": 1,
                   "params": {"Amplitude": AMPLITUDE, "Frequency": FREQUENCY, "Phase": 0.0}}]
        wires = []
        prev = "src"
        for j, kind in enumerate(chain(k)):
            bid = f"b{j}"
            params = ({"Gain": GAIN} if kind == "gain" else {"LowerLimit": LOWER, "UpperLimit": UPPER})
            blocks.append({"id": bid, "type": kind, "inputs": 1, "outputs": 1, "params": params})
            wires.append({"from": prev, "to": bid, "fromIndex": 0, "toIndex": 0})
            prev = bid
        blocks.append({"id": "rec", "type": "toWorkspace", "inputs": 1, "outputs": 0,
                       "params": {"VariableName": "y", "SaveFormat": "Array"}})
        wires.append({"from": prev, "to": "rec", "fromIndex": 0, "toIndex": 0})
        return {"blocks": blocks, "connections": wires, "sampleTime": DT, "duration": DURATION,
                "solver": "discrete", "variables": {}}

    def build(self, k: int):
        import nflow_compat as nc
        self.d = self.diagram(k)
        self.text = orjson.dumps(self.d)
        self.plan = nc.compile_plan(self.d)

    def run(self):
        r = self.plan.run()
        return np.asarray(r["time"], dtype=float), np.asarray(r["workspace"]["y"], dtype=float)[:, 0]

    def simulate_json(self) -> str:
        import nflow_compat as nc
        return nc.simulate_json(self.text)


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


def plain_loop(k: int, n: int = N_SAMPLES) -> list:
    """What one writes by hand: floats, math.sin, min/max, append to a list."""
    kinds = chain(k)
    w = 2.0 * math.pi * FREQUENCY
    out = []
    for step in range(n):
        x = AMPLITUDE * math.sin(w * (step * DT))
        for kind in kinds:
            if kind == "gain":
                x = x * GAIN
            else:
                x = min(max(x, LOWER), UPPER)
        out.append(x)
    return out


def plain_tuned(k: int, n: int = N_SAMPLES) -> list:
    """The same loop written for speed: flags instead of strings, names bound to locals,
    the clamp as two conditional expressions (no builtin calls). Same values as
    min(max(x, lo), hi) for every float x, NaN included."""
    is_gain = [kind == "gain" for kind in chain(k)]
    w, a, g, lo, hi, dt, sin = 2.0 * math.pi * FREQUENCY, AMPLITUDE, GAIN, LOWER, UPPER, DT, math.sin
    out = []
    append = out.append
    for step in range(n):
        x = a * sin(w * (step * dt))
        for gain in is_gain:
            if gain:
                x = x * g
            else:
                x = lo if x < lo else x
                x = hi if hi < x else x
        append(x)
    return out


class Plain:
    """The plain loop as specified (min/max); the reference for the slowdown target."""

    name = PLAIN
    loop = staticmethod(plain_loop)

    def build(self, k: int):
        self.k = k

    def run(self):
        y = self.loop(self.k)
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


def bench_k(k: int, repeats: int, fast_repeats: int, peer_repeats: int, peers: bool, log) -> dict:
    engines = [Ours(), Plain(), PlainTuned()] + ([PathSim(), Bdsim()] if peers else [])
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
                log(f"  K={k:<5} {e.name:<13} repeat {r + 1}/{reps[e.name]}: {secs:.4f} s")
    ours = engines[0]
    json_runs = []
    for _ in range(max(repeats, fast_repeats)):
        secs, text = _timed(ours.simulate_json)
        json_runs.append(secs)
    # the JSON path must carry the same trace
    json_y = np.asarray(orjson.loads(text)["workspace"]["y"], dtype=float)[:, 0]

    t_ref, y_ref = traces[OURS]
    grid = np.arange(N_SAMPLES) * DT
    engines_out = {}
    for name in runs:
        t, y = traces[name]
        best = min(runs[name])
        entry = {"build_s": build_s[name], "run_s": best, "runs_s": runs[name], "repeats": len(runs[name]),
                 "block_steps_per_s": block_steps(k) / best, "samples": int(y.size),
                 "max_abs_diff_vs_ours": float(np.max(np.abs(y - y_ref))) if y.size == y_ref.size else None,
                 "max_abs_time_error": float(np.max(np.abs(t - grid))) if t.size == grid.size else None}
        engines_out[name] = entry
    engines_out[OURS]["simulate_json_s"] = min(json_runs)
    engines_out[OURS]["simulate_json_runs_s"] = json_runs
    engines_out[OURS]["simulate_json_max_abs_diff"] = float(np.max(np.abs(json_y - y_ref)))
    t_ours = engines_out[OURS]["run_s"]
    ratios = {"ours_vs_plain_slowdown": t_ours / engines_out[PLAIN]["run_s"],
              "ours_vs_plain_tuned_slowdown": t_ours / engines_out[TUNED]["run_s"]}
    if peers:
        ratios["speedup_vs_pathsim"] = engines_out[PATHSIM]["run_s"] / t_ours
        ratios["speedup_vs_bdsim"] = engines_out[BDSIM]["run_s"] / t_ours
    clipped = float(np.mean(np.abs(y_ref) == UPPER))
    return {"K": k, "block_steps": block_steps(k), "engines": engines_out, "ratios": ratios,
            "fraction_samples_clipped": clipped}


# ----------------------------------------------------------------------------- report

def _fmt_rate(x: float) -> str:
    return f"{x / 1e6:8.3f} M"


def print_report(results: list, out=print):
    out("")
    out("Causal chain: 2*sin(2*pi*t) -> K x [gain(1), saturation(+-1.5)] -> recorder; "
        f"dt={DT}, {DURATION:g} s, {N_SAMPLES} samples")
    out("block-steps/s = (K+2)*10001 / run time (min over repeats; build/compile timed separately)")
    out("")
    head = f"{'K':>5} | {'engine':<13} | {'build s':>8} | {'run s':>9} | {'block-steps/s':>13} | {'reps':>4} | {'max|dy| vs ours':>15} | {'max|t-k*dt|':>11}"
    out(head)
    out("-" * len(head))
    for res in results:
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
            f"{_fmt_rate(block_steps(res['K']) / o['simulate_json_s']):>13} | {len(o['simulate_json_runs_s']):>4} | "
            f"{o['simulate_json_max_abs_diff']:>15.3g} | {'':>11}   (whole simulate_json: parse+compile+run+encode)")
        out("-" * len(head))
    out("")
    head2 = (f"{'K':>5} | {'ours/PathSim speedup':>20} | {'ours/bdsim speedup':>18} | {'ours/plain slowdown':>19} | "
             f"{'ours/tuned slowdown':>19} | {'clipped':>7}")
    out(head2)
    out("-" * len(head2))
    for res in results:
        r = res["ratios"]
        ps = f"{r['speedup_vs_pathsim']:.1f}x" if "speedup_vs_pathsim" in r else "n/a"
        bd = f"{r['speedup_vs_bdsim']:.1f}x" if "speedup_vs_bdsim" in r else "n/a"
        out(f"{res['K']:>5} | {ps:>20} | {bd:>18} | {r['ours_vs_plain_slowdown']:>18.2f}x | "
            f"{r['ours_vs_plain_tuned_slowdown']:>18.2f}x | {res['fraction_samples_clipped']:>7.1%}")
    out("speedup = peer run time / ours; slowdown = ours / loop run time (> 1: ours is slower)")


def check_targets(results: list) -> dict:
    res = next((r for r in results if r["K"] == TARGET_K), None)
    if res is None:
        return {}
    r = res["ratios"]
    verdict = {"K": TARGET_K,
               "slowdown_vs_plain": r["ours_vs_plain_slowdown"], "slowdown_target": TARGET_SLOWDOWN_PLAIN,
               "slowdown_ok": r["ours_vs_plain_slowdown"] <= TARGET_SLOWDOWN_PLAIN}
    if "speedup_vs_pathsim" in r:
        verdict.update(speedup_vs_pathsim=r["speedup_vs_pathsim"], speedup_target=TARGET_SPEEDUP_PATHSIM,
                       speedup_ok=r["speedup_vs_pathsim"] >= TARGET_SPEEDUP_PATHSIM)
    return verdict


def traces_agree(results: list, tol: float = 1e-9) -> bool:
    for res in results:
        for e in res["engines"].values():
            if e["samples"] != N_SAMPLES or e["max_abs_diff_vs_ours"] is None or e["max_abs_diff_vs_ours"] > tol:
                return False
        if res["engines"][OURS]["simulate_json_max_abs_diff"] != 0.0:
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

PROFILE_REPEATS = 15   # per timed what-if piece (min)
PROFILE_ROUNDS = 21    # round-robin rounds of the decomposition (min)


def profile(k: int = TARGET_K) -> dict:
    """Where nflow-compat's run time goes at ``k``, measured three ways: cProfile (shares,
    distorted by the profiler's per-call hook), direct timing of the plan's own closures
    phase by phase (adds up to the run), and what-if variants of the hot code written
    here (not engine code, each checked to give the same values) that price candidate
    engine/handler changes."""
    from nflow_compat import api, results as nc_results
    from nflow_compat.diagram import parse
    from nflow_compat.engine import Plan
    from nflow_compat.engine.fixed_step import run_fixed_step

    ours = Ours()
    ours.build(k)
    plan = ours.plan
    n = N_SAMPLES
    bs = block_steps(k)
    out: dict = {"K": k, "block_steps": bs}

    # --- 1. cProfile (one run under the profiler)
    plan.run()
    prof = cProfile.Profile()
    prof.enable()
    plan.run()
    prof.disable()
    st = pstats.Stats(prof, stream=io.StringIO())
    rows = []
    total_tt = sum(v[2] for v in st.stats.values())
    for (fname, line, func), (cc, nc, tt, ct, _) in st.stats.items():
        rows.append({"function": f"{Path(fname).name}:{line}({func})", "calls": nc, "tottime_s": tt,
                     "share": tt / total_tt if total_tt else 0.0})
    rows.sort(key=lambda r: -r["tottime_s"])
    out["cprofile_total_s"] = total_tt
    out["cprofile_top"] = rows[:10]

    # --- 2. direct decomposition: the plan's own closures, phase by phase, n steps each,
    #        all pieces timed round-robin (min over rounds) together with the whole run
    kinds = [b.type.type for b in plan.diagram.blocks]
    phases = list(zip(kinds, plan.phases))
    ctx = plan.ctx

    def over_steps(fs):
        fs = list(fs)

        def go():
            for _ in range(n):
                for f in fs:
                    f()
        return go

    class _Stub:  # what run_fixed_step sees of a plan with nothing to call
        output = algebraic = update = after_step = ()

        def __init__(self, c):
            self.ctx = c
    gains = [ph.algebraic for kind, ph in phases if kind == "gain"]
    sats = [ph.algebraic for kind, ph in phases if kind == "saturation"]
    rec = next(ph for kind, ph in phases if kind == "toWorkspace")
    sine = next(ph for kind, ph in phases if kind == "sine")

    def rec_steps():
        rec.init()
        over_steps([rec.after_step])()

    def noop():
        pass
    gain_key, sat_key = f"gain algebraic x{len(gains)}", f"saturation algebraic x{len(sats)}"
    result_key = "result assembly (time list, recorder's N x 1 matrix)"
    skel_key = "step loop skeleton (range, ctx.t/ctx.k, 4 phase loops, stop test)"
    fns = {"run": plan.run, result_key: lambda: plan._result(n, 0.0),
           "plain": functools.partial(plain_loop, k), "plain_tuned": functools.partial(plain_tuned, k),
           "empty": over_steps([]), skel_key: lambda: run_fixed_step(_Stub(ctx), n),
           "sine output": over_steps([sine.output]), gain_key: over_steps(gains), sat_key: over_steps(sats),
           "toWorkspace after_step": rec_steps, "noop x100": over_steps([noop] * 100)}
    best = {name: math.inf for name in fns}
    for _ in range(PROFILE_ROUNDS):
        for name, fn in fns.items():
            ctx.reset()
            ctx.t = 5.0
            best[name] = min(best[name], _timed(fn)[0])
    empty = best["empty"]

    def net(name):   # n steps of calling a list, minus the bare loop over steps
        return max(0.0, best[name] - empty)
    base = best["run"]
    out["run_s"] = base
    out["ns_per_block_step"] = base / bs * 1e9
    for key in ("plain", "plain_tuned"):
        out[f"{key}_s"] = best[key]
        out[f"{key}_ns_per_block_step"] = best[key] / bs * 1e9
    parts = {skel_key: best[skel_key], "sine output": net("sine output"), gain_key: net(gain_key),
             sat_key: net(sat_key), "toWorkspace after_step": net("toWorkspace after_step"),
             result_key: best[result_key]}
    out["decomposition_s"] = parts
    out["decomposition_sum_s"] = sum(parts.values())
    per_call = {"empty zero-arg function (call floor)": net("noop x100") / (100 * n) * 1e9,
                "sine output": parts["sine output"] / n * 1e9,
                "gain algebraic": parts[gain_key] / (len(gains) * n) * 1e9,
                "saturation algebraic": parts[sat_key] / (max(1, len(sats)) * n) * 1e9,
                "toWorkspace after_step": parts["toWorkspace after_step"] / n * 1e9,
                "step loop skeleton (per step)": parts[skel_key] / n * 1e9}
    out["per_call_ns"] = per_call

    # --- 3. what-if variants: local code doing the same arithmetic (checked), timed
    #        alternately with the engine's own code so machine drift hits both alike
    whatif = {}
    S = plan.S
    src_slot = plan.slot_of[(0, 0)]
    last_slot = plan.slot_of[(k, 0)]
    y_ours = ours.run()[1]

    def pair(now_fn, then_fn, scale_now=1.0, scale_then=1.0, minus=0.0):
        a, b = [], []
        for _ in range(PROFILE_REPEATS):
            a.append(_timed(now_fn)[0])
            b.append(_timed(then_fn)[0])
        return (max(0.0, min(a) - minus) * scale_now, max(0.0, min(b) - minus) * scale_then)

    def pair_ns(now_fs, now_per, then_fs, then_per):
        """ns per call: n steps over each call list, the bare step loop subtracted."""
        now, then = pair(over_steps(now_fs), over_steps(then_fs), 1e9 / (now_per * n),
                         1e9 / (then_per * n), minus=empty)
        return {"now": now, "then": then}

    # a) recorder: append the value only (no ctx.t append); with Decimation 1 its time
    #    column equals result["time"], which the plan builds anyway, or np.arange(n)*dt.
    #    10 calls per step so the lists grow to 100k, fresh lists for every timing.
    def rec_now():
        rec.init()
        over_steps([rec.after_step] * 10)()

    def rec_lean():
        vals = []
        app = vals.append

        def after_step():
            app(S[last_slot])
        over_steps([after_step] * 10)()
    now, then = pair(rec_now, rec_lean, 1e9 / (10 * n), 1e9 / (10 * n), minus=empty)
    whatif["toWorkspace after_step -> values.append(S[slot]) only (ns/step)"] = {"now": now, "then": then}
    now, then = pair(lambda: [j * DT for j in range(n)], lambda: np.arange(n) * DT, 1e3, 1e3)
    whatif["time column: [k*dt for k in range(n)] -> np.arange(n)*dt (ms/run)"] = {
        "now": now, "then": then,
        "max_abs_diff": float(np.max(np.abs(np.arange(n) * DT - np.asarray([j * DT for j in range(n)]))))}

    # b) handler bodies: the engine's closure shapes, written other ways
    i1, o1 = 1, 2
    S2 = [0.0, 1.7, 0.0]
    g, lo, hi = GAIN, LOWER, UPPER

    def gain_closure():
        S2[o1] = S2[i1] * g

    def gain_defaults(S2=S2, i1=i1, o1=o1, g=g):
        S2[o1] = S2[i1] * g

    def gain_copy(S2=S2, i1=i1, o1=o1):
        S2[o1] = S2[i1]

    def sat_closure():
        u = S2[i1]
        v = lo if u < lo else u
        S2[o1] = hi if hi < v else v

    def sat_defaults(S2=S2, i1=i1, o1=o1, lo=lo, hi=hi):
        u = S2[i1]
        v = lo if u < lo else u
        S2[o1] = hi if hi < v else v

    def sat_if(S2=S2, i1=i1, o1=o1, lo=lo, hi=hi):
        u = S2[i1]
        if u < lo:
            u = lo
        if hi < u:
            u = hi
        S2[o1] = u
    m = 100
    whatif["gain: closure cells -> default-arg locals (ns/call)"] = pair_ns([gain_closure] * m, m, [gain_defaults] * m, m)
    whatif["gain(1): multiply -> copy, default-arg locals (ns/call)"] = pair_ns([gain_closure] * m, m, [gain_copy] * m, m)
    whatif["gain(1): aliased away at compile time (ns/call)"] = {
        "now": whatif["gain: closure cells -> default-arg locals (ns/call)"]["now"], "then": 0.0}
    whatif["saturation: closure cells -> default-arg locals (ns/call)"] = pair_ns([sat_closure] * m, m, [sat_defaults] * m, m)
    whatif["saturation: default-arg locals + if statements (ns/call)"] = pair_ns([sat_closure] * m, m, [sat_if] * m, m)

    # c) one merged call list per step instead of four phase loops (result not included)
    calls = list(plan.output) + list(plan.algebraic) + list(plan.update) + list(plan.after_step)

    def merged_loop():
        for j in range(n):
            ctx.t = j * DT
            ctx.k = j
            for f in calls:
                f()
            if ctx.stop:
                break

    def engine_loop():
        run_fixed_step(plan, n)
    ctx.reset()
    rec.init()
    now, then = pair(engine_loop, merged_loop, 1e3, 1e3)
    whatif["step loop: run_fixed_step -> 1 merged call list (ms/run)"] = {"now": now, "then": then}

    # d) fused SISO chain: handlers expose a scalar kernel u -> y; the compiler runs a
    #    chain whose intermediate signals nobody else reads as x = f(x) in one closure
    def k_gain(g):
        def f(u):
            return u * g
        return f

    def k_sat(lo, hi):
        def f(u):
            v = lo if u < lo else u
            return hi if hi < v else v
        return f
    kernels = [k_gain(GAIN) if c == "gain" else k_sat(LOWER, UPPER) for c in chain(k)]

    def fused_chain():
        x = S[src_slot]
        for f in kernels:
            x = f(x)
        S[last_slot] = x

    # e) the same with C-level callables where they exist (gain = partial(mul, g);
    #    saturation = partial(max, lo) then partial(min, hi))
    c_kernels = []
    for c in chain(k):
        if c == "gain":
            c_kernels.append(functools.partial(operator.mul, GAIN))
        else:
            c_kernels += [functools.partial(max, LOWER), functools.partial(min, UPPER)]

    def fused_c():
        x = S[src_slot]
        for f in c_kernels:
            x = f(x)
        S[last_slot] = x
    src_trace = [AMPLITUDE * math.sin(2.0 * math.pi * FREQUENCY * (j * DT)) for j in range(n)]
    for key, fused in (("chain: fused SISO kernels x = f(x), Python closures (ns/block)", fused_chain),
                       ("chain: fused SISO kernels, C callables partial(mul|max|min) (ns/block)", fused_c)):
        got = []
        for x0 in src_trace:
            S[src_slot] = x0
            fused()
            got.append(S[last_slot])
        whatif[key] = dict(pair_ns(list(plan.algebraic), k, [fused], k),
                           max_abs_diff=float(np.max(np.abs(np.asarray(got) - y_ours))))

    # f) time-vectorized: a stateless feedforward subgraph driven only by time runs over
    #    all samples at once with numpy (one array op per block for the whole run)
    t_grid = np.arange(n) * DT
    w = 2.0 * math.pi * FREQUENCY

    def vectorized():
        x = AMPLITUDE * np.sin(w * t_grid)
        for c in chain(k):
            if c == "gain":
                x = x * GAIN
            else:
                x = np.where(x < LOWER, LOWER, x)
                x = np.where(UPPER < x, UPPER, x)
        return x
    now, then = pair(plan.run, vectorized, 1e3, 1e3)
    whatif["whole run: plan.run() -> time-vectorized numpy, all samples at once (ms/run)"] = {
        "now": now, "then": then, "max_abs_diff": float(np.max(np.abs(vectorized() - y_ours)))}
    out["whatif"] = whatif

    # --- 4. simulate_json pieces, round-robin like section 2
    text = ours.text
    raw = api.load_json(text)
    diag = parse(raw)
    p2 = Plan(diag)
    res = p2.run()
    fns = {"orjson.loads": lambda: api.load_json(text), "parse (validate + normalize)": lambda: parse(raw),
           "Plan(...) compile": lambda: Plan(diag), "plan.run()": p2.run,
           "results.encode": lambda: nc_results.encode(res), "simulate_json total": ours.simulate_json}
    best = {name: math.inf for name in fns}
    for _ in range(PROFILE_ROUNDS):
        for name, fn in fns.items():
            best[name] = min(best[name], _timed(fn)[0])
    out["simulate_json_pieces_s"] = best
    return out


def print_profile(p: dict, out=print):
    k, bs = p["K"], p["block_steps"]
    out("")
    out(f"Profile of nflow-compat at K={k} ({bs:,} block-steps)")
    out(f"  plan.run(): {p['run_s'] * 1e3:.2f} ms = {p['ns_per_block_step']:.1f} ns/block-step; "
        f"plain loop {p['plain_s'] * 1e3:.2f} ms = {p['plain_ns_per_block_step']:.1f} ns/block-step")
    out(f"  cProfile (its hook inflates each call; total {p['cprofile_total_s'] * 1e3:.1f} ms):")
    for r in p["cprofile_top"]:
        out(f"    {r['share']:6.1%}  {r['calls']:>9,} calls  {r['tottime_s'] * 1e3:8.2f} ms  {r['function']}")
    out("  per call, the plan's own closures called n times each, bare loop subtracted (ns):")
    for name, v in p["per_call_ns"].items():
        out(f"    {v:7.1f}  {name}")
    out("  decomposition of one run:")
    for name, v in p["decomposition_s"].items():
        out(f"    {v * 1e3:8.2f} ms  {v / p['run_s']:6.1%}  {name}")
    out(f"    {p['decomposition_sum_s'] * 1e3:8.2f} ms  {p['decomposition_sum_s'] / p['run_s']:6.1%}  sum "
        f"(measured run {p['run_s'] * 1e3:.2f} ms)")
    out("  what-if (local code priced in the same harness; no engine change made):")
    for name, v in p["whatif"].items():
        extra = f"  [max|dy| {v['max_abs_diff']:.3g}]" if "max_abs_diff" in v else ""
        out(f"    {v['now']:8.2f} -> {v['then']:8.2f}  {name}{extra}")
    out("  simulate_json pieces (s):")
    for name, v in p["simulate_json_pieces_s"].items():
        out(f"    {v * 1e3:8.2f} ms  {name}")


# ----------------------------------------------------------------------------- main

def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench --only causal", description=__doc__.split("\n\n")[0])
    ap.add_argument("--ks", default=",".join(map(str, KS)), help="chain lengths (default 10,100,1000)")
    ap.add_argument("--repeats", type=int, default=5, help="repeats per engine (min is reported)")
    ap.add_argument("--fast-repeats", type=int, default=15,
                    help="repeats for nflow-compat and the two loops (cheap runs; more repeats tame "
                         "timing noise; default 15)")
    ap.add_argument("--peer-repeats-large", type=int, default=2,
                    help="repeats for PathSim and bdsim at K >= 1000 (each run takes ~40 s; default 2)")
    ap.add_argument("--no-peers", action="store_true", help="skip PathSim and bdsim")
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
        results = []
        for k in ks:
            peer_reps = args.peer_repeats_large if k >= 1000 else args.repeats
            results.append(bench_k(k, args.repeats, args.fast_repeats, peer_reps, not args.no_peers, log))
        print_report(results)
        agree = traces_agree(results)
        verdict = check_targets(results)
        print("")
        print(f"traces agree (all engines, 10,001 samples, max |dy| <= 1e-9; JSON path exact): "
              f"{'yes' if agree else 'NO'}")
        if verdict:
            line = f"targets at K={TARGET_K}: ours/plain slowdown {verdict['slowdown_vs_plain']:.2f}x " \
                   f"(<= {TARGET_SLOWDOWN_PLAIN:g}x: {'PASS' if verdict['slowdown_ok'] else 'FAIL'})"
            if "speedup_vs_pathsim" in verdict:
                line += f"; speedup vs PathSim {verdict['speedup_vs_pathsim']:.1f}x " \
                        f"(>= {TARGET_SPEEDUP_PATHSIM:g}x: {'PASS' if verdict['speedup_ok'] else 'FAIL'})"
            print(line)
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
                             "dt": DT, "duration": DURATION, "samples": N_SAMPLES,
                             "block_steps": "(K+2)*samples"},
                   "method": {"repeats": args.repeats, "fast_repeats": max(args.repeats, args.fast_repeats),
                              "peer_repeats_k_ge_1000": args.peer_repeats_large,
                              "statistic": "min", "interleaved": True, "one_process": True},
                   "environment": env, "results": results, "traces_agree": agree, "targets": verdict,
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
            path.write_text(json.dumps({"environment": env, "profile": p}, indent=2) + "\n")
            print(f"wrote {path}")
    return status
