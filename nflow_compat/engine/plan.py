"""Compile a validated Diagram into an execution Plan.

The plan holds everything the time loop needs, resolved once: port widths, one flat
signal store, each block's handler bound to its slots, and four flat call lists in
nflow's phase order. Running a plan twice re-initializes block state but never
recompiles (``engine.run``).
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import gc
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import numpy as np

from .. import progress as progress_bars
from ..blocks import NOT_RUNNABLE, BlockIO, Phases
from ..blocks.handlers import handlers_for
from ..diagram import Diagram, Limits
from ..errors import NFlowError, SimulationError
from ..files import BASE_DIR_KEY
from ..params import Binder
from . import columns, ordering
from .budget import Budget, check_work
from .context import Ctx
from .fixed_step import Program
from .groups import compile_structure
from .run import FIXED_STEP_SOLVERS, run_plan
from .signal_types import check_complex, check_recorded, check_widths, input_sources, propagate_widths, step_work
from .stages import grid_paths


class Plan:
    """A compiled diagram (``nflow_compat.compile_plan`` makes one); ``run()`` runs it.

    ``closures_only`` runs the fixed-step loop through every block's closures, without
    the vectorized time-only paths and the generated step function (``Program``): the
    reference those are checked against.

    ``binder``: what turns per-run values (``run(params=...)``) into a Diagram of the same
    structure (``params.Binder``; ``api.compile_plan`` gives one that knows the diagram's
    JSON, so every address works; without it, parameters of blocks outside subsystems do)."""

    def __init__(self, diagram: Diagram, limits: Limits | None = None, *, base_dir=None, closures_only=False,
                 binder=None, _base=None):
        self.binder = binder
        with collector_paused():
            self._compile(diagram, limits, base_dir, closures_only, _base)

    def _compile(self, diagram: Diagram, limits: Limits | None, base_dir, closures_only: bool, base) -> None:
        registry = handlers_for({b.type.type for b in diagram.blocks})
        self.limits = limits or Limits()
        self.base_dir, self.closures_only = base_dir, closures_only
        rebuilt = None if base is None else _changed_blocks(base, diagram)
        if rebuilt is not None:    # the blocks that keep their values keep their (prepared) Block objects
            diagram = dataclasses.replace(diagram, blocks=[b if b.index in rebuilt else base.diagram.blocks[b.index]
                                                           for b in diagram.blocks])
        elif base is not None and diagram.structure is base.diagram.structure:
            # compiling writes into a structure's groups, which the base plan's closures read
            diagram = dataclasses.replace(diagram, structure=copy.deepcopy(diagram.structure))
        self.diagram = diagram
        blocks = diagram.blocks
        for b in blocks:
            handler = registry.get(b.type.type)
            if handler is not None and handler.prepare is not None and (rebuilt is None or b.index in rebuilt):
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
        if rebuilt is not None and (out_widths != base.out_widths or complex_out != base.complex_out):
            rebuilt = None         # new values that change signal widths or types: compiled afresh
        self.out_widths, self.complex_out = out_widths, complex_out
        if rebuilt is None:
            self._allocate(blocks, n_outs, out_widths, base_dir)
        else:                      # the base's signal store and context: its blocks' closures hold them
            for name in ("slot_of", "initial_signals", "input_slots", "S", "ctx", "budget"):
                setattr(self, name, getattr(base, name))
        self.phases: list[Phases] = []
        self.output_slots = []     # per block, the slots of its output ports in port order
        self.reads_variables = []  # per block, whether its handler read the diagram's variables
        lowered = {i for i, h in enumerate(handlers) if h.lower is not None}
        if rebuilt is None or rebuilt & lowered:
            # the blocks on networks (acausal: physical.islands.lower) lowered by their handlers'
            # functions, each called once for all its blocks
            self.members = {}
            for lower in dict.fromkeys(h.lower for h in handlers if h.lower is not None):
                self.members.update(lower(diagram, self.ctx, self.S, self.input_slots))
            if rebuilt is not None:    # the networks are lowered anew: every block on them is rebuilt
                rebuilt |= lowered
        else:
            self.members = base.members
        index_of = {b.id: b.index for b in blocks}
        block_ids = tuple(index_of)
        bound_slots = set() if base is None or rebuilt is None else set(base.bound_slots)

        def slot_by_id(block_id, port):
            """The signal slot of output ``port`` of block ``block_id`` (None if none)."""
            slot = self.slot_of.get((index_of.get(block_id), port))
            bound_slots.add(slot)
            return slot
        for b, h in zip(blocks, handlers):
            if rebuilt is not None and b.index not in rebuilt:
                self.phases.append(base.phases[b.index])
                self.output_slots.append(base.output_slots[b.index])
                self.reads_variables.append(base.reads_variables[b.index])
                continue
            ins = self.input_slots[b.index]
            in_w = [0 if src is None else out_widths[src] for src in self.sources[b.index]]
            outs = [self.slot_of[(b.index, p)] for p in range(n_outs[b.index])]
            self.output_slots.append(outs)
            out_w = [out_widths[(b.index, p)] for p in range(n_outs[b.index])]
            io = BlockIO(b, self.S, self.ctx, ins, in_w, outs, out_w, diagram.variables, self.members.get(b.index),
                         diagram.solver, slot_by_id, block_ids)
            try:
                self.phases.append(h.build(io))
            except NFlowError:
                raise
            except Exception as exc:   # a handler bug: a typed error naming the block
                raise SimulationError("internal_error", f"block {b.id!r} ({b.type.type}) could not be built: "
                                      f"{type(exc).__name__}: {exc}", block=b.id, path=b.path) from exc
            self.reads_variables.append(io.read_variables)
        self.bound_slots = bound_slots
        self.rebuilt = rebuilt     # the blocks built anew for a base's new values (None: all of them)
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

    @functools.cached_property
    def recorded_signals(self) -> dict:
        """``(section, key)`` -> the Signals each recorder records (``engine.columns``)."""
        return columns.recorded_signals(self)

    def _allocate(self, blocks, n_outs, out_widths, base_dir) -> None:
        """One signal slot per output port, the signal store, the run context and budget."""
        diagram = self.diagram
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

    def run(self, progress: Callable[[int, int], object] | bool | None = None,
            params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run the compiled diagram once, from INIT.

        Every run re-initializes the blocks' states and nothing is recompiled, so a plan
        runs as often as needed with the same result each time.

        Parameters
        ----------
        progress : callable or bool, optional
            ``progress(done, total)``, called with the grid points done so far: between
            chunks of at most 4096 steps (about 65,000 element-steps) in the fixed-step
            loop, at each grid point under a solver, and at a stop. It must be cheap and
            must not touch the plan. ``True`` draws a ``tqdm.auto`` bar.
        params : dict, optional
            Values for this run only, by address (``"block.param"``, ``"variables.name"``,
            a JSON pointer; ``nflow_compat.params``): the run uses ``with_params(params)``,
            and this plan keeps its own values.

        Returns
        -------
        dict
            The result with the keys ``simulate`` gives, its recorded values as numpy arrays
            (``time`` a 1-D array, an ``Array`` recording an N x W array); ``simulate``
            turns them into lists, ``simulate_json`` into JSON.

        Raises
        ------
        DiagramError
            A ``params`` address or value is wrong.
        SimulationError
            The run failed (a solver or Newton failure, a run-time limit, an error of a
            block, which it names, ``out_of_memory``).

        Examples
        --------
        >>> import nflow_compat as nc
        >>> plan = nc.compile_plan({
        ...     "blocks": [{"id": "s", "type": "step", "params": {"Time": 0.5}},
        ...                {"id": "w", "type": "toWorkspace", "params": {"VariableName": "u", "SaveFormat": "Array"}}],
        ...     "connections": [{"from": "s", "to": "w"}], "sampleTime": 0.25, "duration": 1})
        >>> result = plan.run()
        >>> result["time"].tolist(), result["workspace"]["u"].ravel().tolist()
        ([0.0, 0.25, 0.5, 0.75, 1.0], [0.0, 0.0, 1.0, 1.0, 1.0])
        >>> plan.run(params={"s.Time": 0.25})["workspace"]["u"].ravel().tolist()
        [0.0, 1.0, 1.0, 1.0, 1.0]
        """
        plan = self if not params else self.with_params(params)
        with progress_bars.callback(progress, "samples") as call:
            return run_plan(plan, call)

    def with_params(self, params: dict) -> Plan:
        """A plan of this diagram with ``params`` set anew (see ``run``), compiled from this
        one: blocks whose values do not change keep their built closures (and this plan's
        signal store and run context, so the two plans must not run at the same time),
        the physical islands are lowered again only when a value of an acausal block
        changes, and the rest (the evaluation order, the generated step function) is
        assembled again around them. A value that changes a signal's width or type, the
        grid, the solver or the wiring compiles the new diagram afresh. A value that is
        wrong is the same typed error a diagram with it gives."""
        if self.binder is None:
            self.binder = Binder(self.diagram, None, self.limits)
        diagram = self.binder(params)
        return Plan(diagram, self.limits, base_dir=self.base_dir, closures_only=self.closures_only,
                    binder=self.binder, _base=self)


def _changed_blocks(base: Plan, diagram: Diagram) -> set | None:
    """The indices of the blocks of ``diagram`` whose values differ from those ``base`` was
    compiled with (or whose handler read the diagram's variables, when those changed);
    None when the two differ in more than values (blocks, wiring, grid, solver, an
    execution structure of subsystems, whose compiled groups cannot be shared)."""
    old = base.diagram
    if (len(old.blocks) != len(diagram.blocks) or old.wires != diagram.wires or old.links != diagram.links
            or _grid(old) != _grid(diagram) or _grouped(old) or _grouped(diagram)
            or (old.structure is None) != (diagram.structure is None)):
        return None
    changed = set()
    for a, b in zip(old.blocks, diagram.blocks):
        if a is b:
            continue
        if (a.id, a.type, a.inputs, a.outputs, a.path) != (b.id, b.type, b.inputs, b.outputs, b.path):
            return None
        if not all(_same(a.params.get(k, _MISSING), v) for k, v in b.params.items()):
            changed.add(b.index)
    if diagram.variables is not old.variables and not _same(old.variables, diagram.variables):
        changed.update(i for i, reads in enumerate(base.reads_variables) if reads)
    return changed


_MISSING = object()


def _grid(d: Diagram) -> tuple:
    return d.sample_time, d.duration, d.solver, d.rel_tol, d.abs_tol, d.max_step


def _grouped(d: Diagram) -> bool:
    return d.structure is not None and bool(d.structure.groups)


def _same(a, b) -> bool:
    """Parameter values equal (numpy arrays by shape, kind and elements; NaN equal to NaN)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return (a.shape == b.shape and a.dtype.kind == b.dtype.kind
                and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return type(a) is type(b) and a == b


@contextmanager
def collector_paused():
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
