"""Compile a validated Diagram into an execution Plan.

The plan holds everything the time loop needs, resolved once: port widths, one flat
signal store, each block's handler bound to its slots, and four flat call lists in
nflow's phase order. Running a plan twice re-initializes block state but never
recompiles.
"""
from __future__ import annotations

import dataclasses
import gc
import time as _time
from contextlib import contextmanager

import numpy as np

from .. import run_warnings
from ..blocks import NOT_RUNNABLE, BlockIO, Phases, load_all
from ..blocks.source import preload_file_source
from ..files import BASE_DIR_KEY
from ..diagram import Diagram, Limits
from ..errors import DiagramError, NFlowError, SimulationError, clip_message, out_of_memory
from ..physical import islands
from ..signals import width_key
from . import ordering
from .budget import Budget, check_work
from .context import Ctx
from .continuous import grid_paths, run_continuous
from .fixed_step import Program, run_fixed_step
from .groups import compile_structure

# Solvers the fixed-step loop serves exactly; others need continuous-state support.
_FIXED_STEP = ("discrete", "ode1")


class Plan:
    """``closures_only`` runs the fixed-step loop through every block's closures, without
    the vectorized time-only paths and the generated step function (``Program``): the
    reference those are checked against."""

    def __init__(self, diagram: Diagram, limits: Limits | None = None, *, base_dir=None, closures_only=False):
        with _collector_paused():
            self._compile(diagram, limits, base_dir, closures_only)

    def _compile(self, diagram: Diagram, limits: Limits | None, base_dir, closures_only: bool) -> None:
        registry = load_all()
        self.diagram = diagram
        self.limits = limits or Limits()
        blocks = diagram.blocks
        for b in blocks:
            if b.type.type == "fileSource":   # nflow's builtin reads the file before the run
                preload_file_source(b, base_dir, self.limits)
        for b in blocks:
            if b.type.type not in registry:
                reason = NOT_RUNNABLE.get(b.type.type) or (
                    "acausal (physical) blocks are not simulated yet" if b.type.acausal
                    else "this block type is not ported yet")
                raise SimulationError("unsupported_block", f"block {b.id!r}: type {b.type.type!r} is not "
                                      f"supported ({reason}); see `nflow-sim blocks`", block=b.id, path=b.path)
        handlers = [registry[b.type.type] for b in blocks]
        self.sources = _input_sources(diagram)             # per block: list of (src, port) | None
        complex_out = _check_complex(diagram, handlers, self.sources)   # from the wiring alone, before widths
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
        _check_widths(diagram, out_widths, self.limits)
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
        members = islands.lower(diagram, self.ctx, self.S, self.input_slots)
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
        sources, feedthrough_all = _with_reads(self.phases, self.sources, feedthrough, self.slot_of)
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
        step_work = _step_work(len(blocks), out_widths, passes)
        check_work(diagram.n_samples, step_work, self.limits.max_element_steps, heaviest)
        self.budget.plan_work(step_work)
        _check_recorded(diagram, self.phases, self.limits)
        self.continuous = [b.id for b, p in zip(blocks, self.phases) if p.continuous]
        self.has_parts = any(p.part is not None for p in self.phases)
        fixed_step = not self.has_parts and (diagram.solver in _FIXED_STEP or not self.continuous)
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
        d = self.diagram
        if d.solver not in _FIXED_STEP and self.continuous:
            raise SimulationError("unsupported_solver", f"solver {d.solver!r} is not available yet for "
                                  f"continuous blocks ({', '.join(self.continuous)}); use 'discrete' or 'ode1'",
                                  path="/solver")
        started = _time.perf_counter()
        self.S[:] = self.initial_signals
        self.ctx.reset()
        self.budget.start()
        if progress is not None:
            progress = _CallerCallback(progress)
        try:
            with np.errstate(all="ignore"), run_warnings.captured(self.ctx.warnings):
                for f in self.init:
                    f()
                steps = (run_continuous(self, progress) if self.has_parts
                         else run_fixed_step(self, d.n_samples, progress))
            wall = _time.perf_counter() - started
            return self._result(steps, wall)
        except NFlowError:
            raise
        except _CallerError as caller:   # the caller's own progress callback raised: theirs, untouched
            raise caller.exc from None
        except MemoryError:
            pass    # raised below, once this frame's exception (and what its traceback holds) is gone
        except Exception as exc:
            # A block's math left the floating-point range (numeric_error), or a handler
            # bug (internal_error): never a raw exception. Found only on this path, so
            # the loop pays nothing for it.
            raise self._failure(exc) from exc
        finally:
            for f in self.finalize:
                f()
        raise out_of_memory(f"running the diagram (at t = {self.ctx.t:.9g})")

    def _failure(self, exc: Exception) -> SimulationError:
        """The typed error for ``exc`` escaping the run, naming the block it came from."""
        code = "numeric_error" if isinstance(exc, (ArithmeticError, ValueError)) else "internal_error"
        i = _failing_block(self.phases, exc, self.program)
        if i is None:
            return SimulationError(code, f"the run failed at t = {self.ctx.t:.9g}: {type(exc).__name__}: {exc}")
        b = self.diagram.blocks[i]
        return SimulationError(code, f"block {b.id!r} ({b.type.type}) failed at t = {self.ctx.t:.9g}: "
                               f"{type(exc).__name__}: {exc}", block=b.id, path=b.path)

    def _result(self, steps: int, wall: float) -> dict:
        dt = self.diagram.sample_time
        out = {"status": "ok", "time": np.arange(steps) * dt, "workspace": {}, "scopes": {},
               "events": list(self.ctx.events),
               "stats": {"steps": steps, "events": len(self.ctx.events), "solver": self.diagram.solver,
                         "wall_s": round(wall, 6)},
               "warnings": [clip_message(w) for w in list(self.diagram.warnings) + list(self.ctx.warnings)]}
        noted = len(self.ctx.warnings)
        for b, p in zip(self.diagram.blocks, self.phases):
            if p.result is None:
                continue
            section, key, value = p.result()
            entries = out.setdefault(section, {})   # e.g. "files" (fileSink) only when there is one
            if key in entries:
                out["warnings"].append(clip_message(f"{section} entry {key!r} written by more than one block; "
                                                    f"block {b.id!r} (the later one) wins"))
            entries[key] = value
        out["warnings"] += [clip_message(w) for w in self.ctx.warnings[noted:]]   # noted by result()
        return out


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


class _CallerError(Exception):
    """Carries an exception of the caller's progress callback through the run's net."""

    def __init__(self, exc: Exception):
        super().__init__(exc)
        self.exc = exc


class _CallerCallback:
    """The caller's ``progress`` with its exceptions marked as theirs (a callback may
    raise to cancel the run: that must reach the caller as it was raised)."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, done, total):
        try:
            self.fn(done, total)
        except Exception as exc:
            raise _CallerError(exc) from None


_PHASE_FNS = ("init", "output", "algebraic", "update", "after_step", "result", "next_time_event", "time_scale",
              "array")


def _failing_block(phases: list, exc: BaseException, program=None):
    """The index of the block whose phase closure ``exc`` escaped from, None if unknown.

    The traceback is a chain of frames; a block's closure runs in the frame just below
    the one that called it, and that caller holds the closure (a loop variable ``f``, a
    ``Phases`` ``p``). In the generated step function (``program.step``) each line
    belongs to one block. The innermost such caller/closure pair or line names the
    block."""
    owner = {}
    for i, p in enumerate(phases):
        owner.setdefault(id(p), i)
        for name in _PHASE_FNS:
            fn = getattr(p, name, None)
            if fn is not None:
                owner.setdefault(id(fn), i)
    frames, lines = [], []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        lines.append(tb.tb_lineno)
        tb = tb.tb_next
    step = program.step if program is not None else None
    found = None
    for caller, callee, line in zip(frames, frames[1:] + [None], lines):
        if step is not None and caller.f_code is step.code_object and line in step.line_owner:
            found = step.line_owner[line]
        if callee is None:
            break
        for value in caller.f_locals.values():
            i = owner.get(id(value))
            if i is None:
                continue
            fns = [getattr(value, n, None) for n in _PHASE_FNS] if isinstance(value, Phases) else [value]
            if any(getattr(fn, "__code__", None) is callee.f_code for fn in fns):
                found = i
                break
    return found


def compile_diagram(diagram: Diagram) -> Plan:
    return Plan(diagram)


def _check_widths(diagram: Diagram, out_widths: dict, limits: Limits) -> None:
    """Signal widths and the run's size (element-steps, one pass of every iterated
    subsystem: a lower bound of what ``Plan`` checks once the passes are known) against
    the limits, before anything is allocated."""
    for (i, port), w in out_widths.items():
        if w > limits.max_width:
            b = diagram.blocks[i]
            raise DiagramError("too_wide", f"block {b.id!r} ({b.type.type}): output {port} would have {w} "
                               f"elements (limit {limits.max_width})", block=b.id, path=b.path)
    check_work(diagram.n_samples, _step_work(len(diagram.blocks), out_widths, {}), limits.max_element_steps)


def _step_work(n_blocks: int, out_widths: dict, passes: dict) -> int:
    """Element-steps of one grid step: each block's output elements (1 for a block
    without outputs) times its passes per step (``passes``: block index -> count; 1 when
    absent)."""
    elements = [0] * n_blocks
    for (i, _), w in out_widths.items():
        elements[i] += w
    return sum(max(1, e) * passes.get(i, 1) for i, e in enumerate(elements))


def _check_recorded(diagram: Diagram, phases: list, limits: Limits) -> None:
    """What the recorders will keep over a run (``Phases.recorded``) against
    ``max_recorded_values``, before the run allocates it."""
    total = sum(p.recorded for p in phases)
    if total <= limits.max_recorded_values:
        return
    largest = max(range(len(phases)), key=lambda i: phases[i].recorded)
    b = diagram.blocks[largest]
    raise SimulationError("too_many_recorded_values", f"the recorders would keep {total:,} values over "
                          f"{diagram.n_samples:,} samples (samples x (elements + 1 for the time); limit "
                          f"{limits.max_recorded_values:,}); the largest is {b.id!r} ({b.type.type}, "
                          f"{phases[largest].recorded:,}). Shorten the run, record less (Decimation, "
                          "MaxDataPoints) or raise the limit", block=b.id, path=b.path)


def _check_complex(diagram: Diagram, handlers, sources) -> list:
    """nflow's complex-type check (``setComplexSupport``), at compile time only: which
    blocks output complex signals, run to a fixed point over the wiring (a type with
    output 1 makes them, a type with output -1 forwards them when an input is complex),
    then a ``complex_not_supported`` error for the first block fed a complex signal that
    its type does not accept. The run itself pays nothing for it. Returns per block whether
    its outputs are complex."""
    blocks = diagram.blocks
    support = [h.complex for h in handlers]
    consumers = [[] for _ in blocks]
    for i, srcs in enumerate(sources):
        for src in srcs:
            if src is not None:
                consumers[src[0]].append(i)
    origin = [None] * len(blocks)   # per block: the complex-making block its outputs carry, None if real
    queue = [i for i, s in enumerate(support) if s.output == 1]
    for i in queue:
        origin[i] = i
    for i in queue:                 # breadth first (the queue grows): origin = the nearest maker
        for j in consumers[i]:
            if origin[j] is None and support[j].output == -1:
                origin[j] = origin[i]
                queue.append(j)
    for b, srcs, s in zip(blocks, sources, support):
        if s.accepts:
            continue
        for port, src in enumerate(srcs):
            if src is None or origin[src[0]] is None:
                continue
            a, first = blocks[src[0]], blocks[origin[src[0]]]
            via = "" if first is a else f", which carries the complex signal of {first.id!r} ({first.type.type})"
            raise DiagramError("complex_not_supported",
                               f"block {b.id!r} ({b.type.type}) does not accept complex signals; its input {port} "
                               f"comes from {a.id!r} ({a.type.type}){via}; extract parts with complexToRealImag "
                               "or complexToMagnitudeAngle first", block=b.id, path=b.path)
    return [o is not None for o in origin]


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
        try:
            out = handlers[i].widths(blocks[i], in_w)
        except NFlowError:
            raise
        except Exception as exc:   # a width rule's bug: a typed error naming the block
            raise SimulationError("internal_error", f"block {blocks[i].id!r} ({blocks[i].type.type}): its signal "
                                  f"widths could not be worked out: {type(exc).__name__}: {exc}",
                                  block=blocks[i].id, path=blocks[i].path) from exc
        if len(out) != blocks[i].outputs:
            raise DiagramError("bad_port_count", f"block {blocks[i].id!r} ({blocks[i].type.type}) cannot have "
                               f"{blocks[i].outputs} output(s) here (it has {len(out)})", block=blocks[i].id,
                               path=blocks[i].path + "/outputs")
        return out

    seeded = False
    while pending:
        left = []
        for i in pending:
            out = compute(i, False)
            if out is None:
                left.append(i)
            else:
                widths.update({(i, p): w for p, w in enumerate(out)})
        if len(left) == len(pending):  # a feedback loop: seed its first block with scalar inputs
            i = left.pop(0)
            widths.update({(i, p): w for p, w in enumerate(compute(i, True))})
            seeded = True
        pending = left
    if not seeded:     # every block saw its inputs' final widths
        return widths
    for _ in range(len(blocks) + 1):  # re-check with every width known
        changed = False
        for i in range(len(blocks)):
            for p, w in enumerate(compute(i, False)):
                # a bus layout / matrix dims arriving where a plain count of the same
                # size stood is a change too (``==`` on widths compares counts only)
                if width_key(widths[(i, p)]) != width_key(w):
                    widths[(i, p)] = w
                    changed = True
        if not changed:
            return widths
    raise DiagramError("width_unresolved", "signal widths in a feedback loop do not settle")


def _with_reads(phases, sources, feedthrough, slot_of):
    """Sources and feedthrough with each block's extra ``Phases.reads`` as more inputs that
    feed through (the ordering then runs their writers first)."""
    if not any(p.reads for p in phases):
        return sources, feedthrough
    writer = {slot: src for src, slot in slot_of.items()}
    sources, feedthrough = list(sources), list(feedthrough)
    for i, p in enumerate(phases):
        if not p.reads:
            continue
        wired = len(sources[i])
        sources[i] = list(sources[i]) + [writer[slot] for slot in p.reads]
        ports = feedthrough[i]
        if ports is not True:
            ports = set() if ports is False else set(ports)
            feedthrough[i] = ports | set(range(wired, len(sources[i])))
    return sources, feedthrough
