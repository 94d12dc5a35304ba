"""Circuit benchmark: nflow-compat's acausal electrical networks vs a hand-written scipy
``solve_ivp`` of the same equations (same method, tolerances and output grid).

Models:

* **RC ladder**, 100 sections: a ConstantVoltage of 1 V feeds R-C sections (R = 1 kOhm,
  C = 1 uF each, every capacitor to ground, all uncharged): 100 states, a linear ODE whose
  eigenvalues span 4/(RC) ... (pi/200)^2/(RC), a diffusion time of about N^2 RC = 10 s.
  5 s, output every 5 ms (1,001 samples), the voltages of sections 1, 50 and 100 recorded.
  Hand-written: ``C v_k' = (v_{k-1} - v_k)/R - (v_k - v_{k+1})/R`` (v_0 = 1 V, no current
  out of the last), vectorized with numpy.
* **Bridge rectifier**: a 10 V, 50 Hz SineVoltage with a 1 Ohm source resistance feeds four
  IdealDiodes (Ron = 1 mOhm, Goff = 1 uS, Vknee = 0.6 V) in a bridge; the load is C = 100 uF
  parallel to R = 100 Ohm. 0.1 s (5 periods), output every 0.1 ms (1,001 samples); the load
  voltage and the source current recorded. Each diode is MSL's piecewise-linear IdealDiode
  (off: i = Goff v; on: i = (v - Vknee)/Ron + Goff Vknee; it turns off when its curve
  parameter s < 0): 20 switching events. Hand-written: in each combination of diode modes
  the circuit is linear; the two node potentials come from a 2x2 solve (Cramer's rule on
  floats), the capacitor's derivative from the load node's balance; every diode's ``s`` is
  a terminal ``solve_ivp`` event; at an event the relations are read in the old modes
  (the fired diode flips, and so does any other at ``s = 0`` with it), then iterated in the
  new ones (Modelica's event iteration); integration restarts at the event.

nflow-compat runs the nflow JSON diagram under ``ode45`` (RK45) and ``dae`` (LSODA);
``compile_plan(d)`` timed once as "build", ``plan.run()`` per repeat. The hand-written
versions run RK45 and LSODA (without a Jacobian, as ours), ``t_eval`` on the same grid and
ours' step cap (a fiftieth of the run: without it LSODA steps over the rectifier's source
while every diode is off, the state barely moving, and misses the switching). Engines are
interleaved round-robin per repeat in one process; each figure is the minimum over the
repeats.

Checks (exit status 1 if one fails): ours and the hand-written version of the same method
agree on every recorded sample within ``TOL`` of the signal's range, ours ode45 and dae
likewise, and every diode switches in the same sequence at the same times within ``TOL_T``
s. Target: ours within ``TARGET`` x the hand-written run of
the same method.
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import math
import os
import pstats
import sys
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

import nflow_compat as nc

from .causal_chain import environment
from .stick_slip import _loadavg

RTOL, ATOL = 1e-6, 1e-8
TARGET = 2.0
TOL = 1e-4          # max |ours - hand| over the samples, as a fraction of the signal's range
TOL_T = 1e-6        # switch times, s
RESULTS = Path(__file__).resolve().parent / "results"
METHODS = {"ode45": "RK45", "dae": "LSODA"}

# ----------------------------------------------------------------------------- RC ladder
SECTIONS, R_LADDER, C_LADDER, V_LADDER = 100, 1e3, 1e-6, 1.0
LADDER_DURATION, LADDER_DT = 5.0, 5e-3
LADDER_PROBES = (1, 50, 100)

# ----------------------------------------------------------------------------- rectifier
V_AMPLITUDE, FREQUENCY, R_SOURCE = 10.0, 50.0, 1.0
RON, GOFF, VKNEE = 1e-3, 1e-6, 0.6
C_LOAD, R_LOAD = 1e-4, 100.0
RECT_DURATION, RECT_DT = 0.1, 1e-4
# diode -> (anode, cathode) among the nodes a (after R_SOURCE), gnd (the source's n), pos, neg
BRIDGE = {"D1": ("a", "pos"), "D2": ("gnd", "pos"), "D3": ("neg", "a"), "D4": ("neg", "gnd")}
TIE = 1e-9          # |s| below this is a diode at its switching point (hand-written event iteration)


def _blk(id, type, **params):
    return {"id": id, "type": type, "params": params}


def _pin(a, a_pin, b, b_pin):
    return {"from": a, "fromPin": a_pin, "to": b, "toPin": b_pin}


def _record(sensor, name, blocks, conns):
    blocks.append(_blk(f"rec:{name}", "toWorkspace", VariableName=name, SaveFormat="Array"))
    conns.append({"from": sensor, "to": f"rec:{name}", "fromIndex": 0, "toIndex": 0})


def _diagram(blocks, conns, duration, dt, solver):
    return {"blocks": blocks, "connections": conns, "sampleTime": dt, "duration": duration, "solver": solver,
            "variables": {}, "relTol": RTOL, "absTol": ATOL}


def _grid(duration, dt):
    return np.arange(int(round(duration / dt)) + 1) * dt


def ladder_diagram(solver: str) -> dict:
    blocks = [_blk("gnd", "Ground"), _blk("V", "ConstantVoltage", V=V_LADDER)]
    conns = [_pin("V", "n", "gnd", "p")]
    left = ("V", "p")
    for k in range(1, SECTIONS + 1):
        blocks += [_blk(f"R{k}", "Resistor", R=R_LADDER), _blk(f"C{k}", "Capacitor", C=C_LADDER, v0=0)]
        conns += [_pin(f"R{k}", "p", *left), _pin(f"C{k}", "p", f"R{k}", "n"), _pin(f"C{k}", "n", "gnd", "p")]
        left = (f"R{k}", "n")
    for k in LADDER_PROBES:
        blocks.append(_blk(f"v{k}", "VoltageSensor"))
        conns += [_pin(f"v{k}", "p", f"C{k}", "p"), _pin(f"v{k}", "n", "gnd", "p")]
        _record(f"v{k}", f"v{k}", blocks, conns)
    return _diagram(blocks, conns, LADDER_DURATION, LADDER_DT, solver)


def rectifier_diagram(solver: str) -> dict:
    blocks = [_blk("gnd", "Ground"), _blk("Vs", "SineVoltage", Amplitude=V_AMPLITUDE, Frequency=FREQUENCY, Phase=0),
              _blk("Rs", "Resistor", R=R_SOURCE), _blk("is", "CurrentSensor"),
              _blk("C", "Capacitor", C=C_LOAD, v0=0), _blk("RL", "Resistor", R=R_LOAD), _blk("vload", "VoltageSensor")]
    # each node as one representative pin
    node = {"a": ("Rs", "n"), "gnd": ("gnd", "p"), "pos": ("C", "p"), "neg": ("C", "n")}
    conns = [_pin("Vs", "n", "gnd", "p"), _pin("Vs", "p", "is", "p"), _pin("is", "n", "Rs", "p"),
             _pin("RL", "p", *node["pos"]), _pin("RL", "n", *node["neg"]),
             _pin("vload", "p", *node["pos"]), _pin("vload", "n", *node["neg"])]
    for name, (anode, cathode) in BRIDGE.items():
        blocks.append(_blk(name, "IdealDiode", Ron=RON, Goff=GOFF, Vknee=VKNEE))
        conns += [_pin(name, "p", *node[anode]), _pin(name, "n", *node[cathode])]
    _record("vload", "v", blocks, conns)
    _record("is", "i", blocks, conns)
    return _diagram(blocks, conns, RECT_DURATION, RECT_DT, solver)


# ----------------------------------------------------------------------------- engines
# build() sets an engine up (timed by the caller); run() simulates once and returns
# (recorded signals: name -> samples on the grid, switches: [(t, diode, from, to)]).

class Ours:
    def __init__(self, model: str, solver: str):
        self.model, self.solver = model, solver
        self.name = f"nflow-compat {solver}"

    def build(self):
        self.plan = nc.compile_plan(MODELS[self.model]["diagram"](self.solver))

    def run(self):
        r = self.plan.run()
        signals = {name: np.asarray(v, dtype=float)[:, 0] for name, v in r["workspace"].items()}
        switches = [(float(e["t"]), e["block"], e["from"], e["to"]) for e in r["events"] if e["kind"] == "mode"]
        return signals, switches


class _Hand:
    """A hand-written solve_ivp run of one model with the scipy method of ``solver``."""

    duration = dt = 0.0

    def __init__(self, solver: str):
        self.method = METHODS[solver]
        self.name = f"solve_ivp {self.method}"

    def build(self):
        self.grid = _grid(self.duration, self.dt)
        self.nfev = 0


class LadderHand(_Hand):
    duration, dt = LADDER_DURATION, LADDER_DT

    def run(self):
        g, c = 1.0 / R_LADDER, C_LADDER
        current = np.empty(SECTIONS + 1)
        current[SECTIONS] = 0.0               # nothing leaves the last section

        def rhs(t, v):
            # current into section k: (v_{k-1} - v_k)/R
            current[0] = (V_LADDER - v[0]) * g
            current[1:SECTIONS] = (v[:-1] - v[1:]) * g
            return (current[:SECTIONS] - current[1:]) / c

        sol = solve_ivp(rhs, (0.0, LADDER_DURATION), np.zeros(SECTIONS), method=self.method,
                             rtol=RTOL, atol=ATOL, t_eval=self.grid, max_step=LADDER_DURATION / 50)
        self.nfev = sol.nfev
        return {f"v{k}": sol.y[k - 1] for k in LADDER_PROBES}, []


class RectifierHand(_Hand):
    """Per-mode linear circuit with the diodes' curve parameters as terminal events."""

    duration, dt = RECT_DURATION, RECT_DT

    @staticmethod
    def law(on: bool):
        """Diode current i = G v + J in a mode."""
        return (1.0 / RON, GOFF * VKNEE - VKNEE / RON) if on else (GOFF, 0.0)

    @staticmethod
    def curve(on: bool, v: float) -> float:
        """The curve parameter s (off while s < 0) at diode voltage v."""
        return (v - VKNEE) / RON if on else v - VKNEE

    def nodes(self, t, vc, modes):
        """(va, vneg, diode voltages, diode currents) in ``modes`` (D1..D4) at time t.

        Unknowns va, vneg (vpos = vneg + vc). KCL at a: (vs - va)/Rs - i1 + i3 = 0; the
        balance of the bridge output: i1 + i2 - i3 - i4 = 0, with
        i1 = G1 (va - vpos) + J1, i2 = G2 (0 - vpos) + J2, i3 = G3 (vneg - va) + J3,
        i4 = G4 vneg + J4."""
        (g1, j1), (g2, j2), (g3, j3), (g4, j4) = (self.law(m) for m in modes)
        vs = V_AMPLITUDE * math.sin(2.0 * math.pi * FREQUENCY * t)
        gs = 1.0 / R_SOURCE
        # row 1: (gs + g1 + g3) va - (g1 + g3) vneg = gs vs + g1 vc - j1 + j3
        a11, a12, b1 = gs + g1 + g3, -(g1 + g3), gs * vs + g1 * vc - j1 + j3
        # row 2: (g1 + g3) va - (g1 + g2 + g3 + g4) vneg = (g1 + g2) vc - j1 - j2 + j3 + j4
        a21, a22, b2 = g1 + g3, -(g1 + g2 + g3 + g4), (g1 + g2) * vc - j1 - j2 + j3 + j4
        det = a11 * a22 - a12 * a21
        va = (b1 * a22 - a12 * b2) / det
        vneg = (a11 * b2 - a21 * b1) / det
        vpos = vneg + vc
        volts = (va - vpos, -vpos, vneg - va, vneg)
        amps = tuple(g * v + j for (g, j), v in zip((self.law(m) for m in modes), volts))
        return vs, va, volts, amps

    def run(self):
        modes = [False] * 4            # 0 V across every diode at t = 0: s = -Vknee < 0, all off
        t, vc = 0.0, 0.0
        k, ys, switches = 0, [], []
        nfev = 0
        while True:
            frozen = tuple(modes)

            def rhs(tt, x, frozen=frozen):
                _, _, _, amps = self.nodes(tt, x[0], frozen)
                return [(amps[0] + amps[1] - x[0] / R_LOAD) / C_LOAD]

            def event(j):
                def s(tt, x, frozen=frozen):
                    return self.curve(frozen[j], self.nodes(tt, x[0], frozen)[2][j])
                s.terminal, s.direction = True, -1.0 if frozen[j] else 1.0
                return s
            events = [event(j) for j in range(4)]
            while k < len(self.grid) and self.grid[k] < t:
                k += 1
            sol = solve_ivp(rhs, (t, RECT_DURATION), [vc], method=self.method, rtol=RTOL, atol=ATOL,
                                 t_eval=self.grid[k:], events=events, max_step=RECT_DURATION / 50)
            nfev += sol.nfev
            for j, tt in enumerate(sol.t):       # sol.y is empty when no grid time is in the segment
                x = sol.y[0][j]
                vs, va, _, _ = self.nodes(tt, x, frozen)
                ys.append((x, (vs - va) / R_SOURCE))
            k += len(sol.t)
            if sol.status != 1:
                break
            fired = next(j for j, te in enumerate(sol.t_events) if te.size)
            t, vc = float(sol.t_events[fired][0]), float(sol.y_events[fired][0][0])
            # event iteration (Modelica's): the relations are read in the old modes at the
            # event; the fired diode flips, and so does every diode whose s is at 0 with it
            # (two diodes in series cross together); then the modes are iterated, a value
            # within roundoff of 0 keeping its mode
            volts = self.nodes(t, vc, frozen)[2]
            modes = [not m if j == fired or abs(self.curve(m, v)) <= TIE else self.curve(m, v) >= 0.0
                     for j, (m, v) in enumerate(zip(frozen, volts))]
            for _ in range(10):
                volts = self.nodes(t, vc, tuple(modes))[2]
                new = [m if abs(s) <= TIE else s >= 0.0
                       for m, s in zip(modes, (self.curve(m, v) for m, v in zip(modes, volts)))]
                if new == modes:
                    break
                modes = new
            for j, (a, b) in enumerate(zip(frozen, modes)):
                if a != b:
                    switches.append((t, f"D{j + 1}", "on" if a else "off", "on" if b else "off"))
        self.nfev = nfev
        y = np.array(ys)
        return {"v": y[:, 0], "i": y[:, 1]}, switches


MODELS = {
    "rc_ladder": {"diagram": ladder_diagram, "hand": LadderHand,
                  "title": f"RC ladder, {SECTIONS} sections (R {R_LADDER:g} Ohm, C {C_LADDER:g} F, 1 V)"},
    "bridge_rectifier": {"diagram": rectifier_diagram, "hand": RectifierHand,
                         "title": "bridge rectifier, 4 IdealDiodes, 10 V 50 Hz, RC load"},
}


# ----------------------------------------------------------------------------- measuring

def _timed(fn):
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _agreement(a, b) -> dict:
    """Max |a - b| per signal, absolute and as a fraction of b's range; per diode, the same
    sequence of mode changes at the same times (two diodes switching together may come
    out as two events a few 1e-14 s apart, in either order)."""
    (sa, swa), (sb, swb) = a, b
    diffs = {}
    for name, ref in sb.items():
        d = float(np.max(np.abs(sa[name] - ref))) if sa[name].shape == ref.shape else math.inf
        diffs[name] = {"max_abs": d, "of_range": d / float(np.ptp(ref))}

    def per_element(switches):
        out = {}
        for t, element, old, new in switches:
            out.setdefault(element, []).append((t, old, new))
        return out
    ea, eb = per_element(swa), per_element(swb)
    same = ea.keys() == eb.keys() and all([s[1:] for s in ea[k]] == [s[1:] for s in eb[k]] for k in ea)
    dt = max((abs(x[0] - y[0]) for k in ea for x, y in zip(ea[k], eb[k])), default=0.0) if same else math.inf
    ok = all(v["of_range"] <= TOL for v in diffs.values()) and same and dt <= TOL_T
    return {"signals": diffs, "switches": len(swa), "same_switch_sequence": same, "switch_dt_max": dt, "ok": ok}


def bench_model(model: str, repeats: int, log) -> dict:
    spec = MODELS[model]
    engines = [Ours(model, s) for s in METHODS] + [spec["hand"](s) for s in METHODS]
    build, runs, outputs = {}, {e.name: [] for e in engines}, {}
    for e in engines:
        build[e.name], _ = _timed(e.build)
    for r in range(repeats):
        for e in engines:
            secs, out = _timed(e.run)
            runs[e.name].append(secs)
            outputs.setdefault(e.name, out)
            log(f"  {model} {e.name:<20} repeat {r + 1}/{repeats}: {secs:.4f} s")
    res = {"title": spec["title"], "duration": spec["hand"].duration, "dt": spec["hand"].dt,
           "engines": {}, "ratios": {}, "checks": {}}
    for e in engines:
        res["engines"][e.name] = {"build_s": build[e.name], "run_s": min(runs[e.name]), "runs_s": runs[e.name],
                                  **({"nfev": e.nfev} if hasattr(e, "nfev") else {})}
    for solver, method in METHODS.items():
        ours, hand = f"nflow-compat {solver}", f"solve_ivp {method}"
        ratio = res["engines"][ours]["run_s"] / res["engines"][hand]["run_s"]
        res["ratios"][ours] = {f"vs_{hand}": ratio, "within_target": ratio <= TARGET}
        res["checks"][f"{ours} vs {hand}"] = _agreement(outputs[ours], outputs[hand])
    res["checks"]["nflow-compat dae vs ode45"] = _agreement(outputs["nflow-compat dae"], outputs["nflow-compat ode45"])
    return res


def profile(model: str, solver: str, top: int = 25) -> str:
    """cProfile of one ``plan.run()`` (its per-call hook inflates cheap calls: read it for
    call counts and shares)."""
    engine = Ours(model, solver)
    engine.build()
    engine.run()
    prof = cProfile.Profile()
    prof.enable()
    engine.run()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).strip_dirs().sort_stats("tottime").print_stats(top)
    return out.getvalue()


def print_report(results: dict, out=print):
    for model, res in results.items():
        out(f"\n{res['title']}: {res['duration']:g} s, output every {res['dt']:g} s, rtol {RTOL:g}, atol {ATOL:g}")
        for name, e in res["engines"].items():
            extra = f", nfev {e['nfev']}" if "nfev" in e else ""
            out(f"  {name:<20} run {e['run_s'] * 1e3:9.1f} ms (build {e['build_s'] * 1e3:.1f} ms{extra})")
        for name, r in res["ratios"].items():
            (k, v), = [(k, v) for k, v in r.items() if k.startswith("vs_")]
            out(f"  target {name}: {v:.2f}x {k[3:]} (<= {TARGET:g}x: {'PASS' if r['within_target'] else 'FAIL'})")
        for name, c in res["checks"].items():
            sig = ", ".join(f"{s} {d['max_abs']:.2e} ({d['of_range']:.1e} of range)" for s, d in c["signals"].items())
            sw = (f"; {c['switches']} switches, same sequence {c['same_switch_sequence']}, max dt "
                  f"{c['switch_dt_max']:.1e} s" if c["switches"] else "")
            out(f"  check {name}: {sig}{sw}: {'ok' if c['ok'] else 'FAILED'}")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench --only circuits", description=__doc__.split("\n\n")[0])
    ap.add_argument("--circuit-repeats", type=int, default=5, help="repeats per engine (default 5)")
    ap.add_argument("--model", choices=tuple(MODELS), action="append",
                    help="only this model (repeatable; default both)")
    ap.add_argument("--profile", action="store_true", help="also cProfile nflow-compat's runs")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/results/circuits.json")
    ap.add_argument("--quiet", action="store_true", help="no per-repeat progress lines")
    return ap


def main(argv=None) -> int:
    args = argv if isinstance(argv, argparse.Namespace) else parser().parse_args(argv)
    log = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    models = args.model or list(MODELS)
    load_start = _loadavg()
    results = {m: bench_model(m, args.circuit_repeats, log) for m in models}
    print_report(results)
    doc = {"benchmark": "circuits", "environment": environment(), "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "method": {"rtol": RTOL, "atol": ATOL, "repeats": args.circuit_repeats, "statistic": "min",
                      "interleaved": True, "target_vs_hand": TARGET, "tolerance_of_range": TOL,
                      "tolerance_switch_s": TOL_T,
                      # multi-threaded BLAS makes ours' small matrix-vector products several
                      # times slower on a busy machine (the hand-written ladder uses none)
                      "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")},
           "results": results,
           "load_average": {"start": load_start, "end": _loadavg(), "note": "1/5/15-min load averages; timings are "
                            "wall-clock minima, so other processes on the machine inflate them"}}
    print(f"load average at start {load_start}, at end {doc['load_average']['end']} "
          f"({doc['environment']['cpu_count']} CPUs)")
    if args.profile:
        doc["profile"] = {}
        for m in models:
            for solver in METHODS:
                text = profile(m, solver)
                print(f"\nprofile {m} {solver}:\n{text}")
                doc["profile"][f"{m} {solver}"] = text.splitlines()
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "circuits.json").write_text(json.dumps(doc, indent=2) + "\n")
    return 0 if all(c["ok"] for r in results.values() for c in r["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
