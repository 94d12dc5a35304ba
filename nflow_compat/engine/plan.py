"""Compile a validated Diagram into an execution Plan.

The plan holds everything the time loop needs, resolved once: port widths, one flat
signal store, each block's handler bound to its slots, and four flat call lists in
nflow's phase order. Running a plan twice re-initializes block state but never
recompiles.
"""
from __future__ import annotations

import dataclasses
import time as _time

import numpy as np

from ..blocks import NOT_RUNNABLE, BlockIO, Phases, load_all
from ..diagram import Diagram, Limits
from ..errors import DiagramError, SimulationError
from ..physical import islands
from . import ordering
from .context import Ctx
from .continuous import run_continuous
from .fixed_step import run_fixed_step

# Solvers the fixed-step loop serves exactly; others need continuous-state support.
_FIXED_STEP = ("discrete", "ode1")


class Plan:
    def __init__(self, diagram: Diagram, limits: Limits | None = None):
        registry = load_all()
        self.diagram = diagram
        self.limits = limits or Limits()
        blocks = diagram.blocks
        for b in blocks:
            if b.type.type not in registry:
                reason = NOT_RUNNABLE.get(b.type.type) or (
                    "acausal (physical) blocks are not simulated yet" if b.type.acausal
                    else "this block type is not ported yet")
                raise SimulationError("unsupported_block", f"block {b.id!r}: type {b.type.type!r} is not "
                                      f"supported ({reason}); see `nflow-sim blocks`", block=b.id, path=b.path)
        handlers = [registry[b.type.type] for b in blocks]
        self.sources = _input_sources(diagram)             # per block: list of (src, port) | None
        out_widths = _propagate_widths(diagram, handlers, self.sources)
        # A diagram may declare fewer ports than the manifest lists ("inputs": 0): the
        # missing inputs are unconnected ones, the missing outputs write to hidden slots.
        n_outs = [max(b.outputs, b.type.outputs) for b in blocks]
        for b, h, n in zip(blocks, handlers, n_outs):
            if n > b.outputs:
                in_w = [0 if src is None else out_widths[src] for src in self.sources[b.index]]
                padded = h.widths(dataclasses.replace(b, outputs=n), in_w)
                out_widths.update({(b.index, p): padded[p] for p in range(b.outputs, n)})
            self.sources[b.index] += [None] * max(0, b.type.inputs - b.inputs)
        # one slot per output port
        self.slot_of = {}
        init_values = []
        for b, n in zip(blocks, n_outs):
            for p in range(n):
                self.slot_of[(b.index, p)] = len(init_values)
                w = out_widths[(b.index, p)]
                init_values.append(0.0 if w == 1 else np.zeros(w))
        self.initial_signals = init_values
        self.S = list(init_values)
        self.ctx = Ctx(diagram.sample_time)
        self.phases: list[Phases] = []
        members = islands.lower(diagram, self.ctx, self.S)
        index_of = {b.id: b.index for b in blocks}
        block_ids = tuple(index_of)

        def slot_by_id(block_id, port):
            """The signal slot of output ``port`` of block ``block_id`` (None if none)."""
            return self.slot_of.get((index_of.get(block_id), port))
        for b, h in zip(blocks, handlers):
            ins = [None if src is None else self.slot_of[src] for src in self.sources[b.index]]
            in_w = [0 if src is None else out_widths[src] for src in self.sources[b.index]]
            outs = [self.slot_of[(b.index, p)] for p in range(n_outs[b.index])]
            out_w = [out_widths[(b.index, p)] for p in range(n_outs[b.index])]
            io = BlockIO(b, self.S, self.ctx, ins, in_w, outs, out_w, diagram.variables, members.get(b.index),
                         diagram.solver, slot_by_id, block_ids)
            self.phases.append(h.build(io))
        feedthrough = [p.feedthrough if p.feedthrough is not None else h.feedthrough(b)
                       for b, h, p in zip(blocks, handlers, self.phases)]
        alg_groups = ordering.algebraic_order(diagram, self.phases, feedthrough, self.sources)
        self.algebraic = [ordering.relaxation(group, blocks, self.phases, self.S, self.slot_of)
                          if len(group) > 1 or ordering.self_loop(group[0], self.sources, feedthrough) else
                          self.phases[group[0]].algebraic for group in alg_groups]
        self.init = [p.init for p in self.phases if p.init]
        self.output = [p.output for p in self.phases if p.output]
        self.update = [p.update for p in self.phases if p.update]
        self.after_step = [p.after_step for p in self.phases if p.after_step]
        self.continuous = [b.id for b, p in zip(blocks, self.phases) if p.continuous]
        self.has_parts = any(p.part is not None for p in self.phases)

    def run(self) -> dict:
        d = self.diagram
        if d.solver not in _FIXED_STEP and self.continuous:
            raise SimulationError("unsupported_solver", f"solver {d.solver!r} is not available yet for "
                                  f"continuous blocks ({', '.join(self.continuous)}); use 'discrete' or 'ode1'",
                                  path="/solver")
        started = _time.perf_counter()
        self.S[:] = self.initial_signals
        self.ctx.reset()
        for f in self.init:
            f()
        try:
            with np.errstate(all="ignore"):
                steps = run_continuous(self) if self.has_parts else run_fixed_step(self, d.n_samples)
        except (ArithmeticError, ValueError) as exc:   # a block's math left the floating-point range
            raise SimulationError("numeric_error", f"the run failed at t = {self.ctx.t:.9g}: "
                                  f"{type(exc).__name__}: {exc}") from None
        wall = _time.perf_counter() - started
        return self._result(steps, wall)

    def _result(self, steps: int, wall: float) -> dict:
        dt = self.diagram.sample_time
        out = {"status": "ok", "time": [k * dt for k in range(steps)], "workspace": {}, "scopes": {},
               "events": list(self.ctx.events),
               "stats": {"steps": steps, "events": len(self.ctx.events), "solver": self.diagram.solver,
                         "wall_s": round(wall, 6)},
               "warnings": list(self.diagram.warnings) + list(self.ctx.warnings)}
        for b, p in zip(self.diagram.blocks, self.phases):
            if p.result is None:
                continue
            section, key, value = p.result()
            if key in out[section]:
                out["warnings"].append(f"{section} entry {key!r} written by more than one block; "
                                       f"block {b.id!r} (the later one) wins")
            out[section][key] = value
        return out


def compile_diagram(diagram: Diagram) -> Plan:
    return Plan(diagram)


def _input_sources(diagram: Diagram) -> list:
    sources = [[None] * b.inputs for b in diagram.blocks]
    for w in diagram.wires:
        sources[w.dst][w.dst_port] = (w.src, w.src_port)
    return sources


def _propagate_widths(diagram: Diagram, handlers, sources) -> dict:
    """Fixed point of the per-type width rules. Unknown widths in feedback loops start
    at 1 and can only grow, so a few passes settle every diagram or reveal a conflict."""
    blocks = diagram.blocks
    widths: dict = {}
    pending = list(range(len(blocks)))

    def compute(i, assume_scalar):
        in_w = []
        for src in sources[i]:
            if src is None:
                in_w.append(0)
            elif src in widths:
                in_w.append(widths[src])
            elif assume_scalar:
                in_w.append(1)
            else:
                return None
        out = handlers[i].widths(blocks[i], in_w)
        if len(out) != blocks[i].outputs:
            raise DiagramError("bad_port_count", f"block {blocks[i].id!r} ({blocks[i].type.type}) cannot have "
                               f"{blocks[i].outputs} output(s) here (it has {len(out)})", block=blocks[i].id,
                               path=blocks[i].path + "/outputs")
        return out

    while pending:
        progress = False
        for i in list(pending):
            out = compute(i, False)
            if out is not None:
                widths.update({(i, p): w for p, w in enumerate(out)})
                pending.remove(i)
                progress = True
        if not progress:  # a feedback loop: seed its first block with scalar inputs
            i = pending.pop(0)
            widths.update({(i, p): w for p, w in enumerate(compute(i, True))})
    for _ in range(len(blocks) + 1):  # re-check with every width known
        changed = False
        for i in range(len(blocks)):
            for p, w in enumerate(compute(i, False)):
                if widths[(i, p)] != w:
                    widths[(i, p)] = w
                    changed = True
        if not changed:
            return widths
    raise DiagramError("width_unresolved", "signal widths in a feedback loop do not settle")
