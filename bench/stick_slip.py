"""Stick-slip benchmark: nflow-compat vs a hand-written solve_ivp mode machine vs PathSim vs bdsim.

Model (MSL 4.1.0 Translational.Examples.Friction, its ``stop1``): a MassWithStopAndFriction
(m=1, L=1, smax=25, smin=-25, F_prop=1, F_Coulomb=5, F_Stribeck=10, fexp=2, v_small=1e-3,
s0=0, v0=0) driven by the force 25*sin(2*pi*0.25*t); 5 s, output grid 1 ms (5,001
samples), rtol 1e-6, atol 1e-8. It sticks until the force passes f0_max = 1.001*15 =
15.015 N (t ~ 0.410143), slides forward, reverses directly at ~2.44269 (the force is
already beyond -f0_max when v crosses 0), reverses again at ~4.44194 and never sticks
again.

nflow-compat runs the nflow JSON diagram (sine -> Force -> MassWithStopAndFriction with
Position/Speed sensors -> toWorkspace) under solver 'ode45' and 'dae'. The three peers
implement the same mode machine directly:

* stuck: v = 0; breakaway when F > f0_max (forward) or F < -f0_max (backward), only
  towards a side with room;
* sliding in direction d = +-1: m*dv/dt = F - F_prop*v - d*(F_Coulomb + F_Stribeck*
  exp(-fexp*|v|)), ds/dt = v; when v reaches 0 the mass reverses directly if the force is
  already beyond the breakaway threshold the other way, otherwise it sticks (v := 0);
  reaching a stop (s = smax - L/2 or smin + L/2) sets v := 0 and sticks there.

MSL's start phase (from breakaway until v > 0, f = F_prop*v + f0) equals the sliding law
at v = 0 and lasts ~1e-13 s here, so the peers slide from the breakaway instant.

Everything runs in one process, interleaved round-robin per repeat; each figure is the
minimum over the repeats. Every engine's s(t), v(t) on the grid and its mode-switch times
are compared with nflow-compat's (ode45); a difference beyond 1e-3 (s or v) or 1e-5 s (a
switch time), a different switch sequence or a missing grid is flagged, never hidden.

CoupledClutches (fixtures/msl/coupled_clutches.json) is timed with nflow-compat only.
``--profile`` shows where nflow-compat's run time goes and prices candidate changes.
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
from typing import NamedTuple

import numpy as np
import orjson

from .causal_chain import environment
from .profiling import profile_rows

# ----------------------------------------------------------------------------- model
MASS, LENGTH, SMAX, SMIN = 1.0, 1.0, 25.0, -25.0
F_PROP, F_COULOMB, F_STRIBECK, FEXP = 1.0, 5.0, 10.0, 2.0
V_SMALL, S0, V0 = 1e-3, 0.0, 0.0
AMPLITUDE, FREQUENCY = 25.0, 0.25           # N, Hz
OMEGA = 2.0 * math.pi * FREQUENCY
F0 = F_COULOMB + F_STRIBECK                 # static friction at v = 0
F0_MAX = 1.001 * F0                         # MSL's breakaway threshold
S_MAX_EFF, S_MIN_EFF = SMAX - LENGTH / 2, SMIN + LENGTH / 2   # centre limits
DURATION, DT, N_SAMPLES = 5.0, 1e-3, 5001
RTOL, ATOL = 1e-6, 1e-8
MAX_STEP = DURATION / 50   # nflow-compat's automatic max step (span/50); given to the peers too
EVENT_TOL = ATOL           # PathSim's zero-crossing "close enough" tolerance |g| (its default is 1e-4)

# MSL/Dymola reference (fixtures/reference/msl/notes.md, stop1): breakaway in two stages
# (startForward, then mode Forward 6.7e-9 s later), then two direct reversals.
MSL_SWITCHES = ((0.41014312863493446, "stuck", "forward"), (2.4426888245624565, "forward", "backward"),
                (4.4419399008746812, "backward", "forward"))
MSL_BREAKAWAY_SECOND_STAGE = 0.41014313529683222

TOL_S, TOL_V, TOL_T_SWITCH = 1e-3, 1e-3, 1e-5
TARGET_VS_HAND = 2.0         # ours at most this many times the hand-written solve_ivp
TARGET_CLUTCHES_S = 1.0      # CoupledClutches plan.run() under this many seconds
RESULTS = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parent.parent
CLUTCHES_FIXTURE = REPO / "fixtures" / "msl" / "coupled_clutches.json"

STUCK, FORWARD, BACKWARD = 0, 1, -1
MODE_NAMES = {STUCK: "stuck", FORWARD: "forward", BACKWARD: "backward"}
GRID = np.arange(N_SAMPLES) * DT


def force(t: float) -> float:
    return AMPLITUDE * math.sin(OMEGA * t)


def sliding_accel(direction: int, F: float, v: float) -> float:
    """dv/dt while sliding in ``direction`` (+1 forward, -1 backward)."""
    return (F - F_PROP * v - direction * (F_COULOMB + F_STRIBECK * math.exp(-FEXP * abs(v)))) / MASS


def after_slide_end(mode: int, F: float) -> int:
    """The mode after v reached 0 while sliding in ``mode``."""
    if mode == FORWARD and F < -F0_MAX:
        return BACKWARD
    if mode == BACKWARD and F > F0_MAX:
        return FORWARD
    return STUCK


class Trace(NamedTuple):
    t: np.ndarray          # output times (the 1 ms grid, or the engine's own points)
    s: np.ndarray          # centre position
    v: np.ndarray
    switches: list         # [(t, from, to)] mode changes, names as MODE_NAMES


# ----------------------------------------------------------------------------- engines
# build() sets an engine up (timed by the caller); run() simulates once -> Trace.
# ``grid``: the engine delivers the 1 ms grid itself (False: its own points, interpolated
# linearly onto the grid for the comparison).

class Ours:
    """nflow-compat: compile the nflow JSON diagram once, run the plan."""

    grid = True

    def __init__(self, solver: str):
        self.solver = solver
        self.name = f"nflow-compat {solver}"

    @staticmethod
    def diagram(solver: str) -> dict:
        blocks = [
            {"id": "sineForce", "type": "sine", "params": {"Amplitude": AMPLITUDE, "Frequency": FREQUENCY}},
            {"id": "force", "type": "Force", "params": {}},
            {"id": "stop1", "type": "MassWithStopAndFriction",
             "params": {"m": MASS, "L": LENGTH, "smax": SMAX, "smin": SMIN, "F_prop": F_PROP,
                        "F_Coulomb": F_COULOMB, "F_Stribeck": F_STRIBECK, "fexp": FEXP,
                        "v_small": V_SMALL, "s0": S0, "v0": V0}},
            {"id": "s_stop1", "type": "PositionSensor", "params": {}},
            {"id": "rec:stop1.s", "type": "toWorkspace", "params": {"VariableName": "stop1.s", "SaveFormat": "Array"}},
            {"id": "v_stop1", "type": "SpeedSensor", "params": {}},
            {"id": "rec:stop1.v", "type": "toWorkspace", "params": {"VariableName": "stop1.v", "SaveFormat": "Array"}},
        ]
        wires = [
            {"from": "sineForce", "to": "force", "fromIndex": 0, "toIndex": 0},
            {"from": "force", "fromPin": "flange", "to": "stop1", "toPin": "flange_a"},
            {"from": "s_stop1", "fromPin": "flange", "to": "stop1", "toPin": "flange_a"},
            {"from": "s_stop1", "to": "rec:stop1.s", "fromIndex": 0, "toIndex": 0},
            {"from": "v_stop1", "fromPin": "flange", "to": "stop1", "toPin": "flange_a"},
            {"from": "v_stop1", "to": "rec:stop1.v", "fromIndex": 0, "toIndex": 0},
        ]
        return {"blocks": blocks, "connections": wires, "sampleTime": DT, "duration": DURATION,
                "solver": solver, "variables": {}, "relTol": RTOL, "absTol": ATOL}

    def build(self):
        import nflow_compat as nc
        self.d = self.diagram(self.solver)
        self.text = orjson.dumps(self.d)
        self.plan = nc.compile_plan(self.d)

    @staticmethod
    def trace(r: dict) -> Trace:
        ws = r["workspace"]
        # the sensor sits on flange_a = s - L/2
        s = np.asarray(ws["stop1.s"], dtype=float).reshape(-1) + LENGTH / 2
        v = np.asarray(ws["stop1.v"], dtype=float).reshape(-1)
        switches = [(float(e["t"]), e["from"], e["to"]) for e in r["events"]
                    if e.get("kind") == "mode" and e.get("block") == "stop1"]
        return Trace(np.asarray(r["time"], dtype=float), s, v, switches)

    def run(self) -> Trace:
        return self.trace(self.plan.run())

    def simulate_json(self) -> str:
        import nflow_compat as nc
        return nc.simulate_json(self.text)


class Hand:
    """What a competent engineer writes directly: scipy solve_ivp (RK45) restarted per mode
    segment, terminal events for the mode's exits, t_eval = the remaining grid points."""

    grid = True

    def __init__(self, max_step: float = math.inf):
        self.max_step = max_step
        self.name = "solve_ivp" if max_step == math.inf else f"solve_ivp ms={max_step:g}"

    def build(self):
        from scipy.integrate import solve_ivp
        self.solve_ivp = solve_ivp

        def rhs_stuck(t, x):
            return [0.0, 0.0]

        def rhs_forward(t, x):
            v = x[1]
            return [v, sliding_accel(FORWARD, force(t), v)]

        def rhs_backward(t, x):
            v = x[1]
            return [v, sliding_accel(BACKWARD, force(t), v)]

        def breakaway_forward(t, x):
            return force(t) - F0_MAX

        def breakaway_backward(t, x):
            return -force(t) - F0_MAX

        def slide_end_forward(t, x):
            return x[1]

        def slide_end_backward(t, x):
            return x[1]

        def stop_right(t, x):
            return x[0] - S_MAX_EFF

        def stop_left(t, x):
            return x[0] - S_MIN_EFF

        for fn, direction in ((breakaway_forward, 1), (breakaway_backward, 1), (slide_end_forward, -1),
                              (slide_end_backward, 1), (stop_right, 1), (stop_left, -1)):
            fn.terminal, fn.direction = True, direction
        self.rhs = {STUCK: rhs_stuck, FORWARD: rhs_forward, BACKWARD: rhs_backward}
        self.exits = {FORWARD: [slide_end_forward, stop_right], BACKWARD: [slide_end_backward, stop_left]}
        self.breakaway = (breakaway_forward, breakaway_backward)
        self.stops = (stop_right, stop_left)
        self.nfev = 0

    def run(self) -> Trace:
        t, x, mode = 0.0, np.array([S0, V0]), STUCK
        at_stop = 0                      # -1 / +1 while stuck at the left / right stop
        ts, xs, switches = [], [], []
        k, nfev = 0, 0
        bf, bb = self.breakaway
        while True:
            if mode == STUCK:
                events = ([bf] if at_stop != 1 else []) + ([bb] if at_stop != -1 else [])
            else:
                events = self.exits[mode]
            while k < N_SAMPLES and GRID[k] < t:
                k += 1
            sol = self.solve_ivp(self.rhs[mode], (t, DURATION), x, method="RK45", rtol=RTOL, atol=ATOL,
                                 max_step=self.max_step, t_eval=GRID[k:], events=events)
            nfev += sol.nfev
            ts.append(sol.t)
            xs.append(sol.y)
            k += sol.t.size
            if sol.status != 1:
                break
            i = next(j for j, te in enumerate(sol.t_events) if te.size)
            t, x, fired = float(sol.t_events[i][0]), sol.y_events[i][0].copy(), events[i]
            old = mode
            if fired is bf:
                mode = FORWARD
            elif fired is bb:
                mode = BACKWARD
            elif fired in self.stops:
                mode, at_stop = STUCK, (1 if fired is self.stops[0] else -1)
                x[0], x[1] = (S_MAX_EFF if at_stop == 1 else S_MIN_EFF), 0.0
            else:   # slide end
                mode = after_slide_end(old, force(t))
                x[1] = 0.0
            if mode != STUCK:
                at_stop = 0
            switches.append((t, MODE_NAMES[old], MODE_NAMES[mode]))
        self.nfev = nfev
        y = np.concatenate(xs, axis=1)
        return Trace(np.concatenate(ts), y[0], y[1], switches)


class PathSim:
    """PathSim: SinusoidalSource -> Function (acceleration of the current mode) -> Integrator
    (v) -> Integrator (s); the mode machine as ZeroCrossingUp/Down events whose actions
    switch the mode, reset the integrator states and turn the events of the new mode on
    (and the others off). RKDP54 adaptive, tolerance_lte_rel/abs = rtol/atol, dt_max =
    MAX_STEP, event tolerance EVENT_TOL.

    sampled=True: Scope(sampling_period=1 ms), PathSim's way to get the grid (its internal
    Schedule event ends a step at every sample, so no step is longer than 1 ms).
    sampled=False: Scope() records accepted steps only; those points are interpolated
    linearly onto the grid for the comparison."""

    def __init__(self, sampled: bool):
        self.grid = sampled
        self.name = "PathSim grid" if sampled else "PathSim steps"

    def build(self):
        from pathsim import Connection, Simulation
        from pathsim.blocks import Function, Integrator, Scope, SinusoidalSource
        from pathsim.events import ZeroCrossingDown, ZeroCrossingUp
        from pathsim.solvers import RKDP54
        st = self.st = {"mode": STUCK, "at_stop": 0}
        self.switches = []

        def accel(F, v):
            mode = st["mode"]
            return 0.0 if mode == STUCK else sliding_accel(mode, F, v)
        src = SinusoidalSource(frequency=FREQUENCY, amplitude=AMPLITUDE, phase=0.0)
        acc = Function(accel)
        iv, is_ = Integrator(V0), Integrator(S0)
        self.scope = Scope(sampling_period=DT if self.grid else None)
        conns = [Connection(src, acc[0]), Connection(acc, iv), Connection(iv, is_, acc[1], self.scope[1]),
                 Connection(is_, self.scope[0])]

        def F_now():
            return float(src.outputs[0])

        def v_now():
            return float(np.atleast_1d(iv.engine.state)[0])

        def s_now():
            return float(np.atleast_1d(is_.engine.state)[0])

        def enter(t, mode, v=None, s=None):
            old = st["mode"]
            st["mode"] = mode
            if v is not None:
                iv.engine.set(np.atleast_1d(float(v)))
            if s is not None:
                is_.engine.set(np.atleast_1d(float(s)))
            if mode != STUCK:
                st["at_stop"] = 0
            self._arm(mode)
            self.switches.append((float(t), MODE_NAMES[old], MODE_NAMES[mode]))

        def slide_end(t):
            enter(t, after_slide_end(st["mode"], F_now()), v=0.0)

        def stop(side):
            def act(t):
                st["at_stop"] = side
                enter(t, STUCK, v=0.0, s=S_MAX_EFF if side == 1 else S_MIN_EFF)
            return act
        zc = dict(tolerance=EVENT_TOL)
        self.e_break_f = ZeroCrossingUp(func_evt=lambda t: F_now() - F0_MAX, func_act=lambda t: enter(t, FORWARD), **zc)
        self.e_break_b = ZeroCrossingUp(func_evt=lambda t: -F_now() - F0_MAX, func_act=lambda t: enter(t, BACKWARD), **zc)
        self.e_end_f = ZeroCrossingDown(func_evt=lambda t: v_now(), func_act=slide_end, **zc)
        self.e_end_b = ZeroCrossingUp(func_evt=lambda t: v_now(), func_act=slide_end, **zc)
        self.e_stop_r = ZeroCrossingUp(func_evt=lambda t: s_now() - S_MAX_EFF, func_act=stop(1), **zc)
        self.e_stop_l = ZeroCrossingDown(func_evt=lambda t: s_now() - S_MIN_EFF, func_act=stop(-1), **zc)
        events = [self.e_break_f, self.e_break_b, self.e_end_f, self.e_end_b, self.e_stop_r, self.e_stop_l]
        self.sim = Simulation([src, acc, iv, is_, self.scope], conns, events, dt=DT, dt_max=MAX_STEP,
                              Solver=RKDP54, log=False, tolerance_lte_rel=RTOL, tolerance_lte_abs=ATOL)

    def _arm(self, mode):
        st = self.st
        wanted = {self.e_break_f: mode == STUCK and st["at_stop"] != 1,
                  self.e_break_b: mode == STUCK and st["at_stop"] != -1,
                  self.e_end_f: mode == FORWARD, self.e_stop_r: mode == FORWARD,
                  self.e_end_b: mode == BACKWARD, self.e_stop_l: mode == BACKWARD}
        for ev, on in wanted.items():
            ev.on() if on else ev.off()

    def run(self) -> Trace:
        self.sim.reset()                 # time 0, integrators to their initial values, events on
        self.st.update(mode=STUCK, at_stop=0)
        self._arm(STUCK)
        self.switches = []
        self.sim.run(DURATION, reset=False, adaptive=True)
        t, data = self.scope.read()
        data = np.asarray(data, dtype=float)
        return Trace(np.asarray(t, dtype=float), data[0], data[1], list(self.switches))


class Bdsim:
    """bdsim: WAVEFORM(sine) -> FUNCTION (acceleration of the current mode) -> INTEGRATOR (v)
    -> INTEGRATOR (s), RK45 through bdsim's solve_ivp backend (rtol/atol via solver_args,
    max_step = MAX_STEP). The mode machine: one EVENT block per relation (terminal
    solve_ivp events with a direction), each fed by a FUNCTION that outputs the relation
    in the modes that watch it and a constant of the non-firing sign otherwise; the EVENT
    callbacks switch the mode and write v (and s at a stop) back through
    bd.set_block_state. A TIME block only stamps the switch log.

    variant 'dt': run(dt=1 ms), bdsim's documented way to get uniform output (t_eval).
    variant 'clock': a 1 ms clock driving a ZOH into NULL, no dt: every grid time is an
    interval end (5,000 solve_ivp calls); the grid rows are picked out of the record.
    variant 'steps': neither; records solver steps only (linear interpolation onto the grid)."""

    def __init__(self, variant: str):
        self.variant = variant
        self.grid = variant != "steps"
        self.name = f"bdsim {variant}"

    def build(self):
        import bdsim
        self.sim = bdsim.BDSim(banner=False, sysargs=False, graphics=False, animation=False,
                               progress=False, quiet=True, toolboxes=False)
        bd = self.bd = self.sim.blockdiagram()
        st = self.st = {"mode": STUCK, "at_stop": 0}
        self.switches = []

        def accel(F, v):
            mode = st["mode"]
            return 0.0 if mode == STUCK else sliding_accel(mode, F, v)
        src = bd.WAVEFORM(wave="sine", freq=FREQUENCY, amplitude=AMPLITUDE, phase=0.0)
        clock_t = bd.TIME()
        acc = bd.FUNCTION(accel, nin=2)
        iv, is_ = bd.INTEGRATOR(x0=V0), bd.INTEGRATOR(x0=S0)
        bd.connect(src, acc[0])
        bd.connect(iv, acc[1])
        bd.connect(acc, iv)
        bd.connect(iv, is_)
        bd.connect(clock_t, bd.NULL())

        def enter(state_map, mode, v=None, s=None):
            old = st["mode"]
            st["mode"] = mode
            if v is not None:
                bd.set_block_state(state_map, iv, v)
            if s is not None:
                bd.set_block_state(state_map, is_, s)
            if mode != STUCK:
                st["at_stop"] = 0
            self.switches.append((float(clock_t.outport_value(0)), MODE_NAMES[old], MODE_NAMES[mode]))

        def slide_end(block, state_map):
            enter(state_map, after_slide_end(st["mode"], float(src.outport_value(0))), v=0.0)

        def stop(side):
            def act(block, state_map):
                st["at_stop"] = side
                enter(state_map, STUCK, v=0.0, s=S_MAX_EFF if side == 1 else S_MIN_EFF)
            return act

        def watching(mode, at_stop_blocks=None):
            return lambda: st["mode"] == mode and (at_stop_blocks is None or st["at_stop"] != at_stop_blocks)
        relations = [  # (input, active?, relation value, direction, callback)
            (src, watching(STUCK, 1), lambda F: F - F0_MAX, "+", lambda b, sm: enter(sm, FORWARD)),
            (src, watching(STUCK, -1), lambda F: -F - F0_MAX, "+", lambda b, sm: enter(sm, BACKWARD)),
            (iv, watching(FORWARD), lambda v: v, "-", slide_end),
            (iv, watching(BACKWARD), lambda v: v, "+", slide_end),
            (is_, watching(FORWARD), lambda s: s - S_MAX_EFF, "+", stop(1)),
            (is_, watching(BACKWARD), lambda s: s - S_MIN_EFF, "-", stop(-1)),
        ]
        def gated(active, rel, idle):
            # bdsim counts the function's parameters against nin: exactly one here
            def metric(x):
                return rel(x) if active() else idle
            return metric
        for u, active, rel, direction, callback in relations:
            idle = -1.0 if direction == "+" else 1.0     # never crosses in its direction
            g = bd.FUNCTION(gated(active, rel, idle))
            bd.connect(u, g)
            bd.connect(g, bd.EVENT(direction, callback))
        if self.variant == "clock":
            zoh = bd.ZOH(bd.clock(DT, "s"))
            bd.connect(is_, zoh)
            bd.connect(zoh, bd.NULL())
        bd.compile()
        self.watch = [is_, iv]

    def run(self) -> Trace:
        self.st.update(mode=STUCK, at_stop=0)
        self.switches = []
        kw = dict(T=DURATION, max_step=MAX_STEP, solver="RK45", solver_args=dict(rtol=RTOL, atol=ATOL),
                  watch=self.watch)
        if self.variant == "dt":
            kw["dt"] = DT
        out = self.sim.run(self.bd, **kw)
        t = np.asarray(out.t, dtype=float)
        y = np.asarray(out.y, dtype=float)
        if self.variant == "clock":      # keep the grid rows (interval ends at k*1 ms)
            k = np.rint(t / DT)
            on = np.abs(t - k * DT) <= 1e-12
            _, first = np.unique(k[on], return_index=True)
            t, y = t[on][first], y[on][first]
        return Trace(t, y[:, 0], y[:, 1], list(self.switches))


# ----------------------------------------------------------------------------- timing

def _timed(fn):
    gc.collect()
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def _on_grid(tr: Trace) -> tuple[np.ndarray, np.ndarray, bool]:
    """s, v on the 1 ms grid: the engine's own rows if it delivered the grid, else linear
    interpolation of its points."""
    if tr.t.size == N_SAMPLES and float(np.max(np.abs(tr.t - GRID))) <= 1e-9:
        return tr.s, tr.v, True
    keep = np.r_[True, np.diff(tr.t) > 0]
    return np.interp(GRID, tr.t[keep], tr.s[keep]), np.interp(GRID, tr.t[keep], tr.v[keep]), False


def compare(tr: Trace, ref: Trace, native_grid: bool) -> dict:
    s, v, on_grid = _on_grid(tr)
    ds = np.abs(s - ref.s)
    dv = np.abs(v - ref.v)
    same_sequence = [(a, b) for _, a, b in tr.switches] == [(a, b) for _, a, b in ref.switches]
    dt_switch = ([abs(x[0] - y[0]) for x, y in zip(tr.switches, ref.switches)] if same_sequence else None)
    flags = []
    if not on_grid:
        flags.append(f"no 1 ms grid ({tr.t.size} points; linearly interpolated for this comparison)")
    if float(ds.max()) > TOL_S:
        flags.append(f"DISCREPANCY: max|ds| = {ds.max():.3g} > {TOL_S:g} (at t = {GRID[int(ds.argmax())]:.3f})")
    if float(dv.max()) > TOL_V:
        flags.append(f"DISCREPANCY: max|dv| = {dv.max():.3g} > {TOL_V:g} (at t = {GRID[int(dv.argmax())]:.3f})")
    if not same_sequence:
        flags.append(f"DISCREPANCY: mode switches {[(round(t, 6), a, b) for t, a, b in tr.switches]} "
                     f"!= ours {[(round(t, 6), a, b) for t, a, b in ref.switches]}")
    elif dt_switch and max(dt_switch) > TOL_T_SWITCH:
        flags.append(f"DISCREPANCY: switch times differ by up to {max(dt_switch):.3g} s > {TOL_T_SWITCH:g}")
    return {"samples": int(tr.t.size), "delivers_grid": on_grid,
            "max_abs_ds_vs_ours": float(ds.max()), "max_abs_dv_vs_ours": float(dv.max()),
            "t_max_dv": float(GRID[int(dv.argmax())]),
            "switches": [[t, a, b] for t, a, b in tr.switches],
            "switch_dt_vs_ours": dt_switch, "flags": flags}


NOTES = {
    "nflow-compat ode45": "the nflow JSON diagram; compile_plan once ('build'), plan.run() per repeat",
    "nflow-compat dae": "the same diagram with solver 'dae' (LSODA)",
    "solve_ivp": "hand-written: RK45 per mode segment, terminal events, t_eval = remaining grid; no max_step",
    f"solve_ivp ms={MAX_STEP:g}": "the same with max_step = nflow-compat's automatic step cap (span/50)",
    "PathSim grid": "Scope(sampling_period=1 ms): a Schedule event ends a step at every sample (>= 5000 steps)",
    "PathSim steps": "Scope() at accepted steps only (no grid); linear interpolation for the comparison",
    "bdsim dt": ("run(dt=1 ms) -> solve_ivp t_eval. bdsim 1.4.0 restarts after a terminal crossing at "
                 "result.t[-1] = the last t_eval sample BEFORE the event (run_sim.py _interval_hybrid), "
                 "with the post-event state: each switch shifts the rest of the trajectory back by up to "
                 "1 ms; plus a 1e-9 s Euler 'kick' after each crossing"),
    "bdsim clock": ("1 ms clock -> ZOH -> NULL, no dt: 5000 solve_ivp intervals, restarts at the true "
                    "crossing time; grid rows picked from the record"),
    "bdsim steps": "no dt, no clock: restarts at the true crossing time; output at solver steps only "
                   "(linear interpolation for the comparison)",
}


def bench_stick_slip(fast_repeats: int, repeats: int, slow_repeats: int, peers: bool, log) -> dict:
    ours = [Ours("ode45"), Ours("dae")]
    hands = [Hand(), Hand(MAX_STEP)]
    engines = ours + hands
    if peers:
        engines += [PathSim(True), PathSim(False), Bdsim("dt"), Bdsim("clock"), Bdsim("steps")]
    slow = {"bdsim clock"}
    reps = {e.name: (fast_repeats if e in ours or e in hands else slow_repeats if e.name in slow else repeats)
            for e in engines}
    build_s, runs, traces = {}, {e.name: [] for e in engines}, {}
    for e in engines:
        build_s[e.name], _ = _timed(e.build)
    for r in range(max(reps.values())):
        for e in engines:
            if r < reps[e.name]:
                secs, tr = _timed(e.run)
                runs[e.name].append(secs)
                traces.setdefault(e.name, tr)
                log(f"  stick-slip {e.name:<20} repeat {r + 1}/{reps[e.name]}: {secs:.4f} s")
    # the whole JSON path, and that it carries the same trace
    json_runs, json_diff = {}, {}
    for o in ours:
        json_runs[o.name] = []
        for _ in range(fast_repeats):
            secs, text = _timed(o.simulate_json)
            json_runs[o.name].append(secs)
        tr = Ours.trace(orjson.loads(text))
        ref = traces[o.name]
        json_diff[o.name] = float(max(np.max(np.abs(tr.s - ref.s)), np.max(np.abs(tr.v - ref.v))))
    ref = traces[ours[0].name]
    out = {}
    for e in engines:
        best = min(runs[e.name])
        entry = {"build_s": build_s[e.name], "run_s": best, "runs_s": runs[e.name], "repeats": len(runs[e.name]),
                 "note": NOTES.get(e.name, "")}
        entry.update(compare(traces[e.name], ref, e.grid))
        out[e.name] = entry
    for o in ours:
        out[o.name]["simulate_json_s"] = min(json_runs[o.name])
        out[o.name]["simulate_json_runs_s"] = json_runs[o.name]
        out[o.name]["simulate_json_max_abs_diff"] = json_diff[o.name]
    out[hands[0].name]["nfev"] = hands[0].nfev
    out[hands[1].name]["nfev"] = hands[1].nfev
    t_hand = out[hands[0].name]["run_s"]
    ratios = {}
    for o in ours:
        t = out[o.name]["run_s"]
        ratios[o.name] = {"vs_solve_ivp": t / t_hand, f"vs_solve_ivp_ms{MAX_STEP:g}": t / out[hands[1].name]["run_s"]}
        if peers:
            for e in engines[4:]:
                ratios[o.name][f"speedup_vs_{e.name}"] = out[e.name]["run_s"] / t
    msl = [{"t": t, "from": a, "to": b, "ours_ode45_dt": (out[ours[0].name]["switches"][i][0] - t
                                                         if i < len(out[ours[0].name]["switches"]) else None),
            "ours_dae_dt": (out[ours[1].name]["switches"][i][0] - t if i < len(out[ours[1].name]["switches"]) else None)}
           for i, (t, a, b) in enumerate(MSL_SWITCHES)]
    return {"engines": out, "ratios": ratios, "msl_reference_switches": msl,
            "msl_breakaway_second_stage": MSL_BREAKAWAY_SECOND_STAGE}


def bench_clutches(repeats: int, log) -> dict:
    import nflow_compat as nc
    fixture = json.loads(CLUTCHES_FIXTURE.read_text())
    out = {}
    for solver in ("dae", "ode45"):
        d = dict(fixture["diagram"], solver=solver)
        text = orjson.dumps(d)
        build, plan = _timed(lambda: nc.compile_plan(d))
        runs, json_runs = [], []
        for r in range(repeats):
            secs, res = _timed(plan.run)
            runs.append(secs)
            secs_j, _ = _timed(lambda: nc.simulate_json(text))
            json_runs.append(secs_j)
            log(f"  CoupledClutches {solver:<5} repeat {r + 1}/{repeats}: run {secs:.4f} s, simulate_json {secs_j:.4f} s")
        out[solver] = {"build_s": build, "run_s": min(runs), "runs_s": runs, "simulate_json_s": min(json_runs),
                       "simulate_json_runs_s": json_runs, "samples": len(res["time"]),
                       "mode_events": sum(1 for e in res["events"] if e.get("kind") == "mode"),
                       "target_s": TARGET_CLUTCHES_S, "ok": min(runs) < TARGET_CLUTCHES_S}
    out["model"] = {"fixture": str(CLUTCHES_FIXTURE.relative_to(REPO)), "duration": fixture["diagram"]["duration"],
                    "sampleTime": fixture["diagram"]["sampleTime"], "reference_events": len(fixture.get("events", []))}
    return out


# ----------------------------------------------------------------------------- report

ORDER = ("nflow-compat ode45", "nflow-compat dae", "solve_ivp", f"solve_ivp ms={MAX_STEP:g}", "PathSim grid",
         "PathSim steps", "bdsim dt", "bdsim clock", "bdsim steps")


def print_report(res: dict, out=print):
    e = res["engines"]
    out("")
    out(f"Stick-slip mass (MSL stop1): F = {AMPLITUDE:g}*sin(2*pi*{FREQUENCY:g}*t), {DURATION:g} s, grid {DT:g} s "
        f"({N_SAMPLES} samples), rtol {RTOL:g}, atol {ATOL:g}")
    out("run = min over repeats (build/compile timed separately); diffs are against nflow-compat ode45 on the grid")
    out("")
    head = (f"{'engine':<20} | {'build s':>8} | {'run s':>8} | {'reps':>4} | {'grid':>4} | {'max|ds|':>9} | "
            f"{'max|dv|':>9} | {'max|dt switch|':>14} | switches (t)")
    out(head)
    out("-" * (len(head) + 20))
    for name in ORDER:
        x = e.get(name)
        if x is None:
            continue
        dts = "n/a" if x["switch_dt_vs_ours"] is None else (f"{max(x['switch_dt_vs_ours']):.2g}" if x["switch_dt_vs_ours"] else "-")
        sw = ", ".join(f"{t:.6f}" for t, _, _ in x["switches"])
        out(f"{name:<20} | {x['build_s']:8.4f} | {x['run_s']:8.4f} | {x['repeats']:>4} | "
            f"{'yes' if x['delivers_grid'] else 'no':>4} | {x['max_abs_ds_vs_ours']:9.2g} | {x['max_abs_dv_vs_ours']:9.2g} | "
            f"{dts:>14} | {sw}")
    for name in ORDER[:2]:
        x = e[name]
        label = name.replace("nflow-compat", "ours") + " JSON"
        out(f"{label:<20} | {'':8} | {x['simulate_json_s']:8.4f} | {len(x['simulate_json_runs_s']):>4} | "
            f"{'':>4} | {x['simulate_json_max_abs_diff']:9.2g} |  (whole simulate_json: parse+compile+run+encode; "
            f"diff vs its plan.run)")
    out("")
    out("MSL/Dymola reference switch times (notes.md) and ours - reference:")
    for m in res["msl_reference_switches"]:
        a = "n/a" if m["ours_ode45_dt"] is None else f"{m['ours_ode45_dt']:+.2e}"
        b = "n/a" if m["ours_dae_dt"] is None else f"{m['ours_dae_dt']:+.2e}"
        out(f"  {m['t']:.9f} {m['from']:>8} -> {m['to']:<8}  ode45 {a}  dae {b}")
    out(f"  (MSL's breakaway has a second stage, mode Forward, at {res['msl_breakaway_second_stage']:.9f})")
    out("")
    names = [n for n in ORDER[4:] if n in e]
    out("ratios (ours run time / solve_ivp: > 1 is slower; speedup = peer run time / ours):")
    for o in ORDER[:2]:
        r = res["ratios"][o]
        line = f"  {o:<20} {r['vs_solve_ivp']:6.2f}x solve_ivp, {r[f'vs_solve_ivp_ms{MAX_STEP:g}']:6.2f}x solve_ivp ms={MAX_STEP:g}"
        if names:
            line += "; speedup " + ", ".join(f"{n} {r['speedup_vs_' + n]:.1f}x" for n in names)
        out(line)
    out("")
    out("notes:")
    for name in ORDER:
        if name in e and e[name]["note"]:
            out(f"  {name}: {e[name]['note']}")
    flagged = [(n, f) for n in ORDER if n in e for f in e[n]["flags"]]
    if flagged:
        out("")
        out("FLAGGED (differences from nflow-compat ode45 beyond tolerance, or no grid):")
        for n, f in flagged:
            out(f"  {n}: {f}")


def print_clutches(c: dict, out=print):
    out("")
    out(f"CoupledClutches ({c['model']['fixture']}, {c['model']['duration']:g} s, grid {c['model']['sampleTime']:g} s), "
        f"nflow-compat only; target plan.run() < {TARGET_CLUTCHES_S:g} s")
    for solver in ("dae", "ode45"):
        x = c[solver]
        out(f"  {solver:<5}: build {x['build_s']:.4f} s, plan.run() {x['run_s']:.4f} s (min of {len(x['runs_s'])}), "
            f"simulate_json {x['simulate_json_s']:.4f} s, {x['samples']} samples, {x['mode_events']} mode events "
            f"(reference {c['model']['reference_events']}): {'PASS' if x['ok'] else 'FAIL'}")


def check_targets(res: dict | None, clutches: dict | None) -> dict:
    v: dict = {}
    if res is not None:
        e = res["engines"]
        for o in ORDER[:2]:
            r = res["ratios"][o]
            t = {"vs_solve_ivp": r["vs_solve_ivp"], "within_2x_ok": r["vs_solve_ivp"] <= TARGET_VS_HAND}
            for peer in ("PathSim grid", "bdsim dt", "bdsim clock", "PathSim steps", "bdsim steps"):
                if peer in e:
                    t[f"faster_than_{peer}"] = e[peer]["run_s"] > e[o]["run_s"]
            v[o] = t
    if clutches is not None:
        v["CoupledClutches"] = {s: clutches[s]["ok"] for s in ("dae", "ode45")}
    return v


def print_targets(v: dict, out=print):
    out("")
    for o in ORDER[:2]:
        if o not in v:
            continue
        t = v[o]
        peers = [k for k in t if k.startswith("faster_than_")]
        line = (f"target {o}: {t['vs_solve_ivp']:.2f}x solve_ivp (<= {TARGET_VS_HAND:g}x: "
                f"{'PASS' if t['within_2x_ok'] else 'FAIL'})")
        if peers:
            line += "; faster than " + ", ".join(
                f"{k[12:]}{' (no grid)' if k.endswith('steps') else ''} {'PASS' if t[k] else 'FAIL'}" for k in peers)
        out(line)
    if "CoupledClutches" in v:
        out("target CoupledClutches < 1 s: " + ", ".join(f"{s} {'PASS' if ok else 'FAIL'}"
                                                        for s, ok in v["CoupledClutches"].items()))


def ours_agree(res: dict) -> bool:
    """The checks that gate the exit status: both of our solvers and the JSON path agree
    with ours/ode45, and the hand-written reference agrees with ours (peers are flagged
    only: their discrepancies are theirs)."""
    e = res["engines"]
    for name in ORDER[:4]:
        if e[name]["flags"]:
            return False
    return all(e[o]["simulate_json_max_abs_diff"] == 0.0 for o in ORDER[:2])


# ----------------------------------------------------------------------------- profile

PROFILE_ROUNDS = 15


def profile(solvers=("ode45", "dae")) -> dict:
    """Where nflow-compat's plan.run() time goes on the stick-slip mass, per solver:
    cProfile (call counts and shares; its hook inflates cheap calls), a direct
    decomposition with the engine's own pieces (integrate_hybrid without the grid, with
    the grid, the per-grid-point major step, result assembly), per-call costs next to the
    hand-written right-hand side, and what-ifs (alternative code priced in this file, no
    engine change made)."""
    from scipy.integrate import solve_ivp

    from nflow_compat.engine.run import run_result
    from nflow_compat.engine.solver_driven import METHOD
    from nflow_compat.engine.system import PlanSystem
    from nflow_compat.engine.hybrid import integrate_hybrid, make_grid
    hand = Hand()
    hand.build()
    hand_best = min(_timed(hand.run)[0] for _ in range(15))
    out = {"solve_ivp_run_s": hand_best, "solve_ivp_nfev": hand.nfev, "solvers": {}}
    for solver in solvers:
        ours = Ours(solver)
        ours.build()
        plan = ours.plan
        d = plan.diagram
        grid = make_grid(d.sample_time, d.duration)
        ends = np.array([grid[0], grid[-1]])
        opts = dict(method=METHOD[d.solver], rtol=d.rel_tol, atol=d.abs_tol, max_step=d.max_step)
        counts = {"derivative": 0, "event_functions": 0}

        def fresh(count=False):
            # what plan.run() does before integrating
            plan.S[:] = plan.initial_signals
            plan.ctx.reset()
            for f in plan.init:
                f()
            system = PlanSystem(plan)
            if count:
                der, evf = system.derivative, system.event_functions

                def derivative(t, x):
                    counts["derivative"] += 1
                    return der(t, x)

                def event_functions(t, x):
                    counts["event_functions"] += 1
                    return evf(t, x)
                system.derivative, system.event_functions = derivative, event_functions
            return system

        def core(samples=None):
            s = fresh()
            kw = dict(opts) if samples is None else dict(opts, event_samples=samples)
            return integrate_hybrid(s, s.x0, ends, **kw)

        def gridded():
            s = fresh()
            return integrate_hybrid(s, s.x0, grid, **opts)

        s_count = fresh(count=True)
        core_res = integrate_hybrid(s_count, s_count.x0, ends, **opts)
        counts_core = dict(counts)
        counts.update(derivative=0, event_functions=0)
        s_count = fresh(count=True)
        noscan_res = integrate_hybrid(s_count, s_count.x0, ends, **dict(opts, event_samples=0))
        counts_noscan = dict(counts)
        grid_res = gridded()
        X = grid_res.x
        # the engine's bulk-recording fast path (no major step per grid point) applies here?
        from nflow_compat.engine.recording import bulk_recorders, record_in_bulk
        bulk_system = PlanSystem(plan)
        recorders = bulk_recorders(plan, bulk_system, None)
        fast = recorders is not None
        ctx = plan.ctx
        system = fresh()

        def bulk_fill():
            # what plan.run() does instead of the major steps on the fast path
            for f in plan.init:
                f()
            record_in_bulk(plan, bulk_system, recorders, grid_res)

        def majors():
            # run_solver_driven's major step at every grid point, on the states of a run
            for f in plan.init:
                f()
            for k in range(len(grid)):
                ctx.k = k
                ctx.t = k * d.sample_time
                system.evaluate(ctx.t, X[k], committed=True)
                for f in plan.update:
                    f()
                for f in plan.after_step:
                    f()
        n = len(grid)
        fns = {"run": plan.run, "core": core, "core_noscan": lambda: core(0), "gridded": gridded,
               "majors": bulk_fill if fast else majors, "result": lambda: run_result(plan, n, 0.0), "hand": hand.run}
        best = {k: math.inf for k in fns}
        for _ in range(PROFILE_ROUNDS):
            for k, f in fns.items():
                best[k] = min(best[k], _timed(f)[0])
        run_s = best["run"]
        parts = {
            "integration core (steps, event scan + location, restarts; integrate_hybrid over [0, 5])": best["core"],
            "grid sampling (dense output for the 5001 grid points, one call per step for the points it passed, + store)":
                max(0.0, best["gridded"] - best["core"]),
            ("recording: the toWorkspace recorders filled in bulk from the grid states (fast path: no major "
             "steps)" if fast else "major steps at 5001 grid points (OUTPUT/ALGEBRAIC committed, UPDATE, AFTER_STEP: "
             "sine, sensors, toWorkspace)"): best["majors"],
            "result assembly (time list, workspace matrices)": best["result"],
        }
        entry = {"run_s": run_s, "decomposition_s": parts, "decomposition_sum_s": sum(parts.values()),
                 "interior_event_scan_s": max(0.0, best["core"] - best["core_noscan"]),
                 "solve_ivp_s": best["hand"],
                 "counts": {"steps": core_res.stats["steps"], "restarts": core_res.stats["restarts"],
                            "nfev": core_res.stats["nfev"], "events": core_res.stats["events"],
                            "derivative_calls": counts_core["derivative"],
                            "event_function_calls": counts_core["event_functions"],
                            "event_function_calls_noscan": counts_noscan["event_functions"],
                            "events_noscan": noscan_res.stats["events"],
                            "event_times": [float(t) for t, _ in core_res.events],
                            "event_times_noscan": [float(t) for t, _ in noscan_res.events]}}

        # per call (us): ours' derivative / event functions, their pieces, the hand-written rhs
        xs = np.array(X[2000])
        tt = 2.0
        system = fresh()
        m = 20000
        kinds = [b.type.type for b in d.blocks]
        sine_out = next(ph.output for k, ph in zip(kinds, plan.phases) if k == "sine")
        sensor_outs = [ph.output for k, ph in zip(kinds, plan.phases) if k in ("PositionSensor", "SpeedSensor")]
        part, sl = system.parts[0], system.slices[0]
        ctx.t = tt

        def loop(fn):
            def go():
                for _ in range(m):
                    fn(tt, xs)
            return go

        def calls(fs):
            def go():
                for _ in range(m):
                    for f in fs:
                        f()
            return go

        def part_derivative():
            for _ in range(m):
                part.derivative(tt, xs[sl])

        def empty():
            for _ in range(m):
                pass
        hand_rhs = hand.rhs[FORWARD]
        hand_evt = hand.exits[FORWARD][0]
        pc_fns = {"ours PlanSystem.derivative": loop(system.derivative),
                  "  PlanSystem.evaluate (solver stage: the OUTPUT + ALGEBRAIC closures that reach a part, parts load)": loop(system.evaluate),
                  "    sine OUTPUT closure": calls([sine_out]),
                  "    sensor OUTPUT closures (position + speed; they feed only the recorders)": calls(sensor_outs),
                  "  island part.derivative (signal feed + Island.derivative, numpy)": part_derivative,
                  "ours PlanSystem.event_functions": loop(system.event_functions),
                  "solve_ivp rhs (forward)": loop(hand_rhs), "solve_ivp event function": loop(hand_evt)}
        best_pc = {k: math.inf for k in pc_fns}
        floor = math.inf
        for _ in range(5):
            floor = min(floor, _timed(empty)[0])
            for k, f in pc_fns.items():
                best_pc[k] = min(best_pc[k], _timed(f)[0])
        per_call = {k: max(0.0, v - floor) / m * 1e6 for k, v in best_pc.items()}
        k_eval = "  PlanSystem.evaluate (solver stage: the OUTPUT + ALGEBRAIC closures that reach a part, parts load)"
        k_sens = "    sensor OUTPUT closures (position + speed; they feed only the recorders)"
        k_part = "  island part.derivative (signal feed + Island.derivative, numpy)"
        rest = per_call["ours PlanSystem.derivative"] - per_call[k_eval] - per_call[k_part]
        per_call = dict(list(per_call.items())[:5]
                        + [("  remainder: per-part state slices, np.concatenate, call layers", max(0.0, rest))]
                        + list(per_call.items())[5:])
        entry["per_call_us"] = per_call
        # what the derivative would cost with only the OUTPUT closures that feed the island,
        # a scalar island and no per-part packaging (the hand-written rhs is the floor of a
        # fused 1-DOF float derivative); likewise the event functions (2 relations watched)
        d_now = per_call["ours PlanSystem.derivative"]
        # (the sensors are no longer part of PlanSystem.evaluate when the engine skips them at
        # solver stages: nothing left to take off then)
        sens_in_eval = 0.0 if {i for i, k in enumerate(kinds) if k in ("PositionSensor", "SpeedSensor")} <= \
            PlanSystem(plan).skipped else per_call[k_sens]
        d_then = per_call[k_eval] - sens_in_eval + per_call["solve_ivp rhs (forward)"]
        e_now = per_call["ours PlanSystem.event_functions"]
        e_then = per_call[k_eval] - sens_in_eval + 2 * per_call["solve_ivp event function"]

        # what-if: dense output once per step for all its grid points, vs once per point
        method = "RK45" if solver == "ode45" else "LSODA"
        sol = solve_ivp(hand.rhs[FORWARD], (0.41014312863493446, 2.44269), [S0, 0.0], method=method,
                        rtol=RTOL, atol=ATOL, dense_output=True)
        ts, interps = sol.sol.ts, sol.sol.interpolants
        g = np.arange(int(math.ceil(ts[0] / DT)), int(ts[-1] / DT) + 1) * DT
        idx = np.clip(np.searchsorted(ts, g, side="right") - 1, 0, len(interps) - 1)
        scale = N_SAMPLES / len(g)

        def per_point():
            for tg, j in zip(g, idx):
                interps[j](tg)

        groups = [(interps[j], g[idx == j]) for j in np.unique(idx)]

        def per_step():
            for fn, tg in groups:
                fn(tg)
        a = min(_timed(per_point)[0] for _ in range(7)) * scale
        b = min(_timed(per_step)[0] for _ in range(7)) * scale
        whatif = {f"grid sampling: {method} dense output per grid point -> one vectorized call per step "
                  "(ms per 5001 points; what the engine does)": {"now": a * 1e3, "then": b * 1e3}}
        # what-if: major steps -> keep the state rows, compute the sensor columns at the end
        def columns():
            return X[:, 0] - LENGTH / 2, X[:, 1].copy()
        c = min(_timed(columns)[0] for _ in range(7))
        whatif["major steps: 5001 x closures -> state rows only, sensors vectorized after the run (ms; done by "
               "the engine's bulk recording when 'now' is already small)"] = {
            "now": best["majors"] * 1e3, "then": c * 1e3}
        whatif["event scan: 3 interior points per step -> step ends only, event_samples=0 (ms)"] = {
            "now": best["core"] * 1e3, "then": best["core_noscan"] * 1e3}
        nfev, nevf = counts_core["derivative"], counts_noscan["event_functions"]
        whatif[f"derivative: skip sensor OUTPUTs, scalar 1-DOF island, no per-part packaging; {nfev} calls (ms)"] = {
            "now": nfev * d_now * 1e-3, "then": nfev * d_then * 1e-3}
        whatif[f"event functions: the same; {nevf} calls left without the interior scan (ms)"] = {
            "now": nevf * e_now * 1e-3, "then": nevf * e_then * 1e-3}
        entry["whatif"] = whatif   # each priced alone: they overlap, so they do not add up

        # cProfile of one run
        plan.run()
        entry["cprofile_total_s"], entry["cprofile_top"] = profile_rows(plan.run, 12)
        out["solvers"][solver] = entry
    return out


def print_profile(p: dict, out=print):
    out("")
    out(f"Profile of nflow-compat on the stick-slip mass (hand-written solve_ivp: {p['solve_ivp_run_s'] * 1e3:.2f} ms, "
        f"{p['solve_ivp_nfev']} rhs calls)")
    for solver, e in p["solvers"].items():
        c = e["counts"]
        out("")
        out(f"[{solver}] plan.run() {e['run_s'] * 1e3:.2f} ms = {e['run_s'] / e['solve_ivp_s']:.2f}x solve_ivp "
            f"({e['solve_ivp_s'] * 1e3:.2f} ms in the same rounds)")
        out(f"  counts: {c['steps']} steps, {c['restarts']} restarts, {c['nfev']} rhs calls, "
            f"{c['event_function_calls']} event-function calls, {c['events']} events")
        out("  decomposition (direct timing of the engine's own pieces, min over rounds):")
        for k, v in e["decomposition_s"].items():
            out(f"    {v * 1e3:8.2f} ms  {v / e['run_s']:6.1%}  {k}")
        out(f"    {e['decomposition_sum_s'] * 1e3:8.2f} ms  {e['decomposition_sum_s'] / e['run_s']:6.1%}  sum "
            f"(measured run {e['run_s'] * 1e3:.2f} ms)")
        out(f"    of the core: {e['interior_event_scan_s'] * 1e3:.2f} ms are the 3 interior event-scan points per step")
        out("  per call (us):")
        for k, v in e["per_call_us"].items():
            out(f"    {v:8.2f}  {k}")
        out("  what-if (priced here, no engine change made):")
        for k, v in e["whatif"].items():
            out(f"    {v['now']:8.2f} -> {v['then']:8.2f}  {k}")
        out(f"  cProfile top (total {e['cprofile_total_s'] * 1e3:.1f} ms under the profiler):")
        for r in e["cprofile_top"][:10]:
            out(f"    {r['share']:6.1%}  {r['calls']:>7,} calls  {r['tottime_s'] * 1e3:7.2f} ms  "
                f"(cum {r['cumtime_s'] * 1e3:7.2f})  {r['function']}")


# ----------------------------------------------------------------------------- main

def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench --only stickslip|clutches",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("all", "stickslip", "clutches"), default="all",
                    help="stick-slip and CoupledClutches (default), or one of them")
    ap.add_argument("--fast-repeats", type=int, default=15,
                    help="repeats for nflow-compat and the hand-written solve_ivp (default 15)")
    ap.add_argument("--repeats", type=int, default=5, help="repeats for PathSim and bdsim (default 5)")
    ap.add_argument("--slow-repeats", type=int, default=3,
                    help="repeats for bdsim clock (~6 s a run; default 3)")
    ap.add_argument("--clutch-repeats", type=int, default=5, help="repeats for CoupledClutches (default 5)")
    ap.add_argument("--no-peers", action="store_true", help="skip PathSim and bdsim")
    ap.add_argument("--profile", action="store_true", help="also profile nflow-compat")
    ap.add_argument("--profile-only", action="store_true", help="only the profile")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/results/stick_slip.json")
    ap.add_argument("--quiet", action="store_true", help="no per-repeat progress lines")
    return ap


def _loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def main(argv=None) -> int:
    args = argv if isinstance(argv, argparse.Namespace) else parser().parse_args(argv)
    log = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    import nflow_compat as nc
    nc.compile_plan(Ours.diagram("ode45")).run()      # handler modules, scipy: loaded untimed
    do_ss = args.part in ("all", "stickslip") and not args.profile_only
    do_cc = args.part in ("all", "clutches") and not args.profile_only
    if do_ss and not args.no_peers:
        for e in (PathSim(True), Bdsim("dt")):        # imports and bdsim's block library, untimed
            e.build()
    doc = {}
    path = RESULTS / "stick_slip.json"
    if path.exists():
        try:
            doc = json.loads(path.read_text())     # keep the sections this run does not redo
        except ValueError:
            doc = {}
    doc.update(benchmark="stick_slip", environment=environment(), timestamp=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    load_start = _loadavg()
    status = 0
    res = clutches = None
    if do_ss:
        res = bench_stick_slip(args.fast_repeats, args.repeats, args.slow_repeats, not args.no_peers, log)
        print_report(res)
        agree = ours_agree(res)
        print("")
        print(f"nflow-compat checks (ode45 vs dae vs hand-written solve_ivp within |ds|,|dv| <= {TOL_V:g}, switch "
              f"times <= {TOL_T_SWITCH:g} s; JSON path exact): {'yes' if agree else 'NO'}")
        if not agree:
            status = 1
        doc["stick_slip"] = {
            "model": {"component": "MassWithStopAndFriction (MSL stop1)", "m": MASS, "L": LENGTH, "smax": SMAX,
                      "smin": SMIN, "F_prop": F_PROP, "F_Coulomb": F_COULOMB, "F_Stribeck": F_STRIBECK, "fexp": FEXP,
                      "v_small": V_SMALL, "s0": S0, "v0": V0, "force": f"{AMPLITUDE}*sin(2*pi*{FREQUENCY}*t)",
                      "duration": DURATION, "dt": DT, "samples": N_SAMPLES, "rtol": RTOL, "atol": ATOL,
                      "max_step": MAX_STEP, "pathsim_event_tolerance": EVENT_TOL},
            "method": {"fast_repeats": args.fast_repeats, "repeats": args.repeats, "slow_repeats": args.slow_repeats,
                       "statistic": "min", "interleaved": True, "one_process": True,
                       "tolerances": {"s": TOL_S, "v": TOL_V, "switch_t": TOL_T_SWITCH}},
            "results": res, "ours_agree": agree}
    if do_cc:
        clutches = bench_clutches(args.clutch_repeats, log)
        print_clutches(clutches)
        doc["coupled_clutches"] = clutches
    if res is not None or clutches is not None:
        verdict = check_targets(res, clutches)
        print_targets(verdict)
        doc.setdefault("targets", {}).update(verdict)
    if args.profile or args.profile_only:
        p = profile()
        print_profile(p)
        doc["profile"] = p
    doc["load_average"] = {"start": load_start, "end": _loadavg(), "note": "1/5/15-min load averages; timings "
                           "are wall-clock minima, so other processes on the machine inflate them"}
    print(f"load average at start {load_start}, at end {doc['load_average']['end']} "
          f"({doc['environment']['cpu_count']} CPUs)")
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
