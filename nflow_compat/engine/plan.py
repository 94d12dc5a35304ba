"""Compile a validated Diagram into an execution Plan.

The plan holds everything the time loop needs, resolved once: port widths, one flat
signal store, each block's handler bound to its slots, and four flat call lists in
nflow's phase order. Running a plan twice re-initializes block state but never
recompiles (``engine.run``).
"""
from __future__ import annotations

import dataclasses
import gc
from contextlib import contextmanager

import numpy as np

from ..blocks import NOT_RUNNABLE, BlockIO, Phases
from ..blocks.handlers import handlers_for
from ..diagram import Diagram, Limits
from ..errors import NFlowError, SimulationError
from ..files import BASE_DIR_KEY
from . import ordering
from .budget import Budget, check_work
from .context import Ctx
from .fixed_step import Program
from .groups import compile_structure
from .run import FIXED_STEP_SOLVERS, run_plan
from .signal_types import check_complex, check_recorded, check_widths, input_sources, propagate_widths, step_work
from .stages import grid_paths


class Plan:
    """``closures_only`` runs the fixed-step loop through every block's closures, without
    the vectorized time-only paths and the generated step function (``Program``): the
    reference those are checked against."""

    def __init__(self, diagram: Diagram, limits: Limits | None = None, *, base_dir=None, closures_only=False):
        with _collector_paused():
            self._compile(diagram, limits, base_dir, closures_only)

    def _compile(self, diagram: Diagram, limits: Limits | None, base_dir, closures_only: bool) -> None:
        registry = handlers_for({b.type.type for b in diagram.blocks})
        self.diagram = diagram
        self.limits = limits or Limits()
        blocks = diagram.blocks
        for b in blocks:
            handler = registry.get(b.type.type)
            if handler is not None and handler.prepare is not None:
                handler.prepare(b, base_dir, self.limits)
        for b in blocks:
            if b.type.type not in registry:
                reason = NOT_RUNNABLE.get(b.type.type) or (
                    "acausal (physical) blocks are not simulated yet" if b.type.acausal
                    else "this block type is not ported yet")
                raise SimulationError("unsupported_block", f"block {b.id!r}: type {b.type.type!r} is not "
                                      f"supported ({reason}); see `nflow-sim blocks`", block=b.id, path=b.path)
        self.handlers = handlers = [registry[b.type.type] for b in blocks]
        self.sources = input_sources(diagram)             # per block: list of (src, port) | None
        complex_out = check_complex(diagram, handlers, self.sources)   # from the wiring alone, before widths
        out_widths = propagate_widths(diagram, handlers, self.sources)
        # A diagram may declare fewer ports than the manifest lists ("inputs": 0): the
        # missing inputs are unconnected ones, the missing outputs write to hidden slots.
        n_outs = [max(b.outputs, b.type.outputs) for b in blocks]
        for b, h, n in zip(blocks, handlers, n_outs):
            if n > b.outputs:
                in_w = [0 if src is None else out_widths[src] for src in self.sources[b.index]]
                padded = h.widths(dataclasses.replace(b, outputs=n), in_w)
                out_widths.update({(b.index, p): padded[p] for p in range(b.outputs, n)})
            self.sources[b.index] += [None] * max(0, b.type.inputs - b.inputs)
        check_widths(diagram, out_widths, self.limits)
        # one slot per output port
        self.slot_of = {}
        init_values = []
        for b, n in zip(blocks, n_outs):
            for p in range(n):
                self.slot_of[(b.index, p)] = len(init_values)
                w = out_widths[(b.index, p)]
                init_values.append(0.0 if w == 1 else np.zeros(w))
        self.initial_signals = init_values
        # per block: the signal slot each input port reads (None: unconnected)
        self.input_slots = [[None if src is None else self.slot_of[src] for src in self.sources[b.index]]
                            for b in blocks]
        self.S = list(init_values)
        self.ctx = Ctx(diagram.sample_time, diagram.n_samples)
        self.budget = Budget(self.limits, diagram.n_samples)   # loops and while iterators spend from it
        self.ctx.shared[BASE_DIR_KEY] = base_dir
        self.phases: list[Phases] = []
        self.output_slots = []     # per block, the slots of its output ports in port order
        members = {}
        for lower in dict.fromkeys(h.lower for h in handlers if h.lower is not None):
            members.update(lower(diagram, self.ctx, self.S, self.input_slots))
        index_of = {b.id: b.index for b in blocks}
        block_ids = tuple(index_of)
        bound_slots = set()    # slots read through bindings, outside the wiring

        def slot_by_id(block_id, port):
            """The signal slot of output ``port`` of block ``block_id`` (None if none)."""
            slot = self.slot_of.get((index_of.get(block_id), port))
            bound_slots.add(slot)
            return slot
        for b, h in zip(blocks, handlers):
            ins = self.input_slots[b.index]
            in_w = [0 if src is None else out_widths[src] for src in self.sources[b.index]]
            outs = [self.slot_of[(b.index, p)] for p in range(n_outs[b.index])]
            self.output_slots.append(outs)
            out_w = [out_widths[(b.index, p)] for p in range(n_outs[b.index])]
            io = BlockIO(b, self.S, self.ctx, ins, in_w, outs, out_w, diagram.variables, members.get(b.index),
                         diagram.solver, slot_by_id, block_ids)
            try:
                self.phases.append(h.build(io))
            except NFlowError:
                raise
            except Exception as exc:   # a handler bug: a typed error naming the block
                raise SimulationError("internal_error", f"block {b.id!r} ({b.type.type}) could not be built: "
                                      f"{type(exc).__name__}: {exc}", block=b.id, path=b.path) from exc
        feedthrough = [p.feedthrough if p.feedthrough is not None else h.feedthrough(b)
                       for b, h, p in zip(blocks, handlers, self.phases)]
        sources, feedthrough_all = ordering.with_reads(self.phases, self.sources, feedthrough, self.slot_of)
        alg_groups = ordering.algebraic_order(diagram, self.phases, feedthrough_all, sources)
        self.algebraic = [ordering.relaxation(group, blocks, self.phases, self.S, self.slot_of, self.budget)
                          if len(group) > 1 or ordering.self_loop(group[0], sources, feedthrough_all) else
                          self.phases[group[0]].algebraic for group in alg_groups]
        self.init = [p.init for p in self.phases if p.init]
        self.output = [p.output for p in self.phases if p.output]
        self.update = [p.update for p in self.phases if p.update]
        self.after_step = [p.after_step for p in self.phases if p.after_step]
        self.finalize = [p.finalize for p in self.phases if p.finalize]
        passes, heaviest = {}, None
        if diagram.structure is not None:   # forEach checks; conditional/iterated subsystems run as units
            passes, heaviest = compile_structure(self, feedthrough)
        work = step_work(len(blocks), out_widths, passes)
        check_work(diagram.n_samples, work, self.limits.max_element_steps, heaviest)
        self.budget.plan_work(work)
        check_recorded(diagram, self.phases, self.limits)
        self.continuous = [b.id for b, p in zip(blocks, self.phases) if p.continuous]
        self.has_parts = any(p.part is not None for p in self.phases)
        fixed_step = not self.has_parts and (diagram.solver in FIXED_STEP_SOLVERS or not self.continuous)
        self.program = (Program(self, complex_out, bound_slots - {None}) if fixed_step and not closures_only
                        else None)
        self.major_steps = (grid_paths(self, complex_out, bound_slots - {None}) if self.has_parts and not closures_only
                            else None)

    def run(self, progress=None) -> dict:
        """One run from INIT. ``progress(done, total)``, if given, is called with the grid
        points done so far: between chunks of at most 4096 steps (about 65,000 element-steps)
        in the fixed-step loop, at each grid point under a solver, and at a stop. It must
        be cheap and must not touch the plan. Running out of memory is the SimulationError
        ``out_of_memory``."""
        return run_plan(self, progress)


@contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off while a plan is compiled. Compiling allocates
    a few objects per block that all stay alive, and each collection the allocations
    set off walks every object alive: with the collector on, compiling a diagram of
    10,000 blocks took twice as long, and the share grows with the size. Nothing made
    here is garbage until the plan is."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def compile_diagram(diagram: Diagram) -> Plan:
    return Plan(diagram)
