"""Execution groups: the compile-time half of nflow's ``subsystem`` (the parse-time half,
``nflow_compat.flatten``, expands every subsystem into its parent and records the
``Structure`` this module schedules).

``compile_structure``, called by the plan compiler when the diagram has groups or
forEach partitions: each group is contracted into one node of the algebraic
wave that runs the body's OUTPUT and ALGEBRAIC phases in the body's own dependency order
when the group runs, and its UPDATE phases after (action / enable), or the whole body
OUTPUT-ALGEBRAIC-UPDATE N times in a row (function-call, for, while iterators). Blocks
outside groups run exactly as before (no guard, no lookup). Recorders (AFTER_STEP) inside
groups record every step, their inputs holding while the group does not run.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..blocks import Phases
from ..errors import DiagramError, did_you_mean
from . import ordering
from .budget import block_work
from .context import GroupState, call_all, gate_table

ITERATED = ("functionCall", "forIterator", "whileIterator")
_COUNTED = ("functionCall", "forIterator")    # their passes per step are known before the run
# nflow rejects continuous solvers for function-call subsystems (the block reference says so)
FUNCTION_CALL_SOLVERS = ("discrete",)


class _GuardedPart:
    """A continuous part of a block inside an action / enabled subsystem: its state is
    frozen (zero derivative) while the subsystem does not run (Simulink's held states)."""

    def __init__(self, part, state):
        self._part, self._state = part, state

    def derivative(self, t, x):
        if self._state.active:
            return self._part.derivative(t, x)
        return np.zeros(self._part.n_states)

    def __getattr__(self, name):
        return getattr(self._part, name)


def compile_structure(plan, feedthrough):
    """Check forEach partitions and contract the execution groups into the plan's call
    lists (see the module docstring). Called at the end of ``Plan.__init__``. Returns
    the passes per step known ahead of the blocks inside iterated subsystems (block index
    -> count) and the subsystem with the most, ``(id, path, passes)`` (None if none)."""
    structure = plan.diagram.structure
    index_of = {b.id: b.index for b in plan.diagram.blocks}
    for part in structure.partitions:
        src = plan.sources[index_of[part.demux]][0]
        if src is None or plan.diagram.blocks[src[0]].id in structure.grounds:
            continue
        width = int(np.size(plan.initial_signals[plan.slot_of[src]]))
        if width % part.n:
            raise DiagramError("foreach_partition", f"subsystem {part.sub!r}: forEach splits input {part.port} of "
                               f"width {width} over numIterations {part.n}; the width must be a multiple of it",
                               path=part.path + "/params/forEach", block=part.sub, param="forEach")
    if not structure.groups:
        return {}, None
    return _Compiler(plan, feedthrough, index_of).build(structure.groups)


def _enclosing(g):
    """The groups around ``g``, innermost first."""
    g = g.parent
    while g is not None:
        yield g
        g = g.parent


def _walk(groups):
    """Groups in pre-order."""
    stack = list(reversed(groups))
    while stack:
        g = stack.pop()
        yield g
        stack.extend(reversed(g.children))


class _Compiler:
    def __init__(self, plan, feedthrough, index_of):
        self.plan, self.ft, self.index_of = plan, feedthrough, index_of
        self.blocks, self.phases, self.sources = plan.diagram.blocks, plan.phases, plan.sources
        self.S, self.ctx = plan.S, plan.ctx
        self.innermost = [None] * len(self.blocks)

    def build(self, top):
        groups = list(_walk(top))
        for g in groups:
            g.idx = [self.index_of[m] for m in g.members]
            for i in g.idx:
                self.innermost[i] = g
            g.state = GroupState(g.id, g.kind, g.parent.state if g.parent is not None else None)
            g.cond_slot, g.after = None, None
        for g in reversed(groups):   # post-order: children first
            g.all_idx = sorted(g.idx + [i for c in g.children for i in c.all_idx])
            g.iterated = g.kind in ITERATED or any(c.iterated for c in g.children)
            g.out_slots = [s for i in g.all_idx for s in self._slots(i)]
        table = gate_table(self.ctx)
        for g in groups:
            self._control(g)
            for i in g.idx:
                for s in self._slots(i):
                    table[s] = g.state
        self._conditions()
        self._function_calls(groups)
        passes, heaviest = self._passes(groups)
        for g in reversed(groups):
            self._group(g)
        nodes = self._nodes(None, range(len(self.blocks)))
        calls, outputs, updates = self._scope(None, nodes)
        plan = self.plan
        plan.algebraic, plan.output, plan.update = calls, outputs, updates
        plan.init = [g.reset for g in groups] + [p.init for p in self.phases if p.init]
        return passes, heaviest

    def _passes(self, groups):
        """Passes per step known ahead: a for iterator's or function call's count (at
        least 1) times those of the groups around it; 1 for a while iterator (its further
        passes are counted as they run, each costing the group's ``pass_work``). Returns
        (block index -> passes, the heaviest group as (id, path, passes) or None)."""
        passes, heaviest = {}, None
        for g in groups:            # pre-order: a group after the one around it
            ahead = max(1, g.count) if g.kind in _COUNTED else 1
            g.passes = (g.parent.passes if g.parent is not None else 1) * ahead
            passes.update(dict.fromkeys(g.idx, g.passes))
            if g.passes > 1 and (heaviest is None or g.passes > heaviest[2]):
                heaviest = (g.id, g.path, g.passes)
        for g in groups:
            g.pass_work = sum(block_work(self.S, self._slots(i)) * passes[i] for i in g.all_idx) // g.passes
        return passes, heaviest

    # -- helpers
    def _slots(self, i):
        p, out = 0, []
        while (i, p) in self.plan.slot_of:
            out.append(self.plan.slot_of[(i, p)])
            p += 1
        return out

    def _control(self, g):
        if g.kind in ("forIterator", "whileIterator"):
            g.ctl = None
            return
        if g.control is None:
            g.ctl = None
            if g.kind != "functionCall":
                self.ctx_warning(f"{g.kind} subsystem {g.id!r}: its control port is not connected; it never runs")
            return
        bid, port = g.control
        i = self.index_of.get(bid)
        if i is None:
            raise DiagramError("unknown_block", f"the control port of subsystem {g.id!r} is driven from block "
                               f"{bid!r}, which does not exist" + did_you_mean(bid, self.index_of),
                               path=g.control_path + "/from", block=bid)
        if not 0 <= port < self.blocks[i].outputs:
            raise DiagramError("port_out_of_range", f"block {bid!r} has {self.blocks[i].outputs} output port(s); "
                               f"fromIndex {port} is out of range (ports are 0-based)",
                               path=g.control_path + "/fromIndex", block=bid)
        g.ctl = (i, port)

    def ctx_warning(self, note):
        self.plan.diagram.warnings.append(note)

    def _conditions(self):
        for i, b in enumerate(self.blocks):
            if not self.plan.handlers[i].loop_condition or (i, 0) not in self.plan.slot_of:
                continue
            g = self.innermost[i]
            while g is not None and g.kind != "whileIterator":
                g = g.parent
            if g is None:
                continue
            if g.cond_slot is not None:
                raise DiagramError("bad_iterator", f"while-iterator subsystem {g.id!r} holds two iteratorCondition "
                                   f"blocks (the second is {b.id!r}); one decides whether the loop goes on",
                                   block=b.id, path=b.path)
            g.cond_slot = self.plan.slot_of[(i, 0)]

    def _function_calls(self, groups):
        handlers = self.plan.handlers
        callees = {}
        for g in groups:
            if g.kind != "functionCall":
                continue
            if self.plan.diagram.solver not in FUNCTION_CALL_SOLVERS:
                raise DiagramError("unsupported_solver", f"function-call subsystem {g.id!r} runs under the "
                                   f"'discrete' solver only (nflow rejects continuous solvers for them), not "
                                   f"{self.plan.diagram.solver!r}", path="/solver", block=g.id)
            g.count, keys = 0, []
            if g.ctl is None:
                self.ctx_warning(f"function-call subsystem {g.id!r}: no functionCallGenerator drives its control "
                                 "port; it never runs")
                continue
            i, port = g.ctl
            while handlers[i].routes_calls:
                keys.append(port)
                src = self.sources[i][0] if self.sources[i] else None
                if src is None:
                    break
                i, port = src
            else:
                if handlers[i].calls is None:
                    raise DiagramError("bad_function_call", f"the control port of function-call subsystem {g.id!r} "
                                       f"is driven by block {self.blocks[i].id!r} ({self.blocks[i].type.type}); it "
                                       "takes a functionCallGenerator, directly or through functionCallSplit blocks",
                                       path=g.control_path, block=g.id)
                if self._rep(i, g.parent) != ("b", i):
                    raise DiagramError("bad_function_call", f"functionCallGenerator {self.blocks[i].id!r} and the "
                                       f"function-call subsystem {g.id!r} it calls must be in the same diagram "
                                       "level", path=g.control_path, block=g.id)
                g.count = handlers[i].calls(self.blocks[i])
                callees.setdefault(i, []).append((tuple(reversed(keys)), g))
                continue
            self.ctx_warning(f"function-call subsystem {g.id!r}: its functionCallSplit has no input; it never runs")
        for chain in callees.values():   # split outputs call in port order: each callee after the previous
            chain.sort(key=lambda item: item[0])
            for (_, before), (_, after) in zip(chain, chain[1:]):
                after.after = before

    def _rep(self, i, scope):
        """Block i seen from ``scope`` (None = top level): ("b", i) when it is directly in
        the scope, ("g", child) when it is inside a child group of the scope, None when
        it is outside the scope."""
        g = self.innermost[i]
        if g is scope:
            return ("b", i)
        prev = None
        while g is not None and g is not scope:
            prev, g = g, g.parent
        return ("g", prev) if g is scope else None

    def _inside(self, i, group) -> bool:
        g = self.innermost[i]
        while g is not None:
            if g is group:
                return True
            g = g.parent
        return False

    def _nodes(self, scope, candidates):
        nodes, seen = [], set()
        for i in candidates:
            r = self._rep(i, scope)
            if r is None:
                continue
            if r[0] == "g":
                if r[1] in seen:
                    continue
                seen.add(r[1])
            nodes.append(r)
        return nodes

    def _deps(self, g):
        """Signals a group reads from outside: the inputs its ALGEBRAIC phases feed through
        (every input of blocks that run inside an iterated group, whose UPDATE runs in the
        algebraic wave too) and the control signals."""
        deps = []
        for i in g.all_idx:
            h, every = self.innermost[i], False
            while h is not None:
                every = every or h.kind in ITERATED
                if h is g:
                    break
                h = h.parent
            for port, src in enumerate(self.sources[i]):
                if src is None or self._inside(src[0], g):
                    continue
                if every or ordering._feeds_through(self.ft[i], port):
                    deps.append(src)
        for h in _walk([g]):
            if h.ctl is not None and not self._inside(h.ctl[0], g):
                deps.append(h.ctl)
        return deps

    def _scope(self, scope, nodes):
        """The ALGEBRAIC calls (dependency order, loops relaxed), OUTPUT and UPDATE calls
        of one level: the top of the diagram or a group's body."""
        local = {x: j for j, (_, x) in enumerate(nodes)}

        def loc(i):
            r = self._rep(i, scope)
            return None if r is None else local.get(r[1])

        phases, ft, sources, blocks, slots = [], [], [], [], {}
        for j, (kind, x) in enumerate(nodes):
            if kind == "b":
                phases.append(Phases(algebraic=self.phases[x].algebraic))
                ft.append(self.ft[x])
                srcs = []
                for src in self.sources[x]:
                    lj = None if src is None else loc(src[0])
                    srcs.append(None if lj is None else (lj, src[1]))
                sources.append(srcs)
                blocks.append(self.blocks[x])
                for p in range(self.blocks[x].outputs):
                    slots[(j, p)] = self.plan.slot_of[(x, p)]
            else:
                phases.append(Phases(algebraic=x.run))
                ft.append(True)
                deps = []
                for src in x.deps:
                    lj = loc(src[0])
                    if lj is not None and lj != j:
                        deps.append((lj, src[1]))
                if x.after is not None and x.after in local:
                    deps.append((local[x.after], 0))
                sources.append(deps)
                blocks.append(SimpleNamespace(id=x.id, outputs=len(x.out_slots)))
                for p, s in enumerate(x.out_slots):
                    slots[(j, p)] = s
        calls = []
        for members in ordering.algebraic_order(None, phases, ft, sources):
            if len(members) > 1 or ordering.self_loop(members[0], sources, ft):
                for j in members:
                    kind, x = nodes[j]
                    if kind == "g" and x.iterated:
                        names = ", ".join(repr(blocks[m].id) for m in members)
                        raise DiagramError("algebraic_loop", f"subsystem {x.id!r} runs its body several times a "
                                           f"step ({x.kind}, or it holds such a subsystem) and cannot be part of an "
                                           f"algebraic loop (through {names}); break the loop with a unitDelay",
                                           block=x.id, path=x.path)
                calls.append(ordering.relaxation(members, blocks, phases, self.S, slots, self.plan.budget))
            else:
                calls.append(phases[members[0]].algebraic)
        outputs = [self.phases[x].output for kind, x in nodes if kind == "b" and self.phases[x].output]
        updates = []
        for kind, x in nodes:
            f = self.phases[x].update if kind == "b" else (None if x.kind in ITERATED else x.update)
            if f is not None:
                updates.append(f)
        return calls, outputs, updates

    # -- one group
    def _group(self, g):
        g.deps = self._deps(g)
        calls, outputs, updates = self._scope(g, self._nodes(g, g.all_idx))
        state, S = g.state, self.S
        below = [h.state for h in _walk(g.children)]

        def reset():
            state.active, state.iteration = False, 0.0

        for i in g.idx:
            blk = self.blocks[i]
            if blk.type.acausal:
                raise DiagramError("unsupported_subsystem", f"block {blk.id!r} ({blk.type.type}) is a physical block; "
                                   f"it cannot sit in the {g.kind} subsystem {g.id!r} (physical networks run "
                                   "continuously; put them in a plain subsystem)", block=blk.id, path=blk.path)
        if g.kind in ITERATED:
            for i in g.all_idx:
                p = self.phases[i]
                if p.part is not None or p.continuous:
                    b = self.blocks[i]
                    raise DiagramError("continuous_in_iterator", f"block {b.id!r} ({b.type.type}) has continuous "
                                       f"state; it cannot run inside the {g.kind} subsystem {g.id!r}, which runs "
                                       "its body several times a step (use discrete blocks)", block=b.id, path=b.path)
            g.run, g.reset, g.update = self._iterated(g, calls, outputs, updates, below)
            return
        for i in g.idx:
            p = self.phases[i]
            if p.part is not None:
                p.part = _GuardedPart(p.part, state)
        test = _gate_test(g, S, self._control_slot(g))

        def run():
            if test():
                state.active = True
                call_all(outputs, calls)
            else:
                state.active = False
                for s in below:
                    s.active = False

        def update():
            if state.active:
                call_all(updates)
        g.run, g.reset, g.update = run, reset, (update if updates else None)

    def _control_slot(self, g):
        if g.ctl is None:
            return None
        slot = self.plan.slot_of[g.ctl]
        return slot, np.ndim(self.plan.initial_signals[slot]) > 0

    def _iterated(self, g, calls, outputs, updates, below):
        state, S, ctx = g.state, self.S, self.ctx
        count, cond, is_while = g.count, g.cond_slot, g.kind == "whileIterator"
        # a while iterator's first pass is counted before the run, the others as they run;
        # every pass beyond the first lets the budget look at the clock now and then
        further_pass, spend = (g.pass_work if is_while else 0), self.plan.budget.spend
        # passes commit state, so they run once per major step, on a committed evaluation
        # (solver stages see the values of the last one); inside another iterated
        # subsystem, at each of its passes (the outer one keeps to once a step)
        once_a_step = not any(h.kind in ITERATED for h in _enclosing(g))
        stamp = -1

        def reset():
            nonlocal stamp
            state.active, state.iteration, stamp = False, 0.0, -1

        def run():
            nonlocal stamp
            if ctx.side_effect_free or (once_a_step and stamp == ctx.k):
                return
            stamp = ctx.k
            if count == 0:
                state.active = False
                for s in below:
                    s.active = False
                return
            state.active = True
            for n in range(1, count + 1):
                if n > 1:
                    spend(further_pass)
                state.iteration = float(n)
                call_all(outputs, calls)
                go = cond is None or S[cond] != 0.0   # do-while: a zero condition ends the loop
                call_all(updates)
                if is_while and not go:
                    break
        return run, reset, None


def _gate_test(g, S, control):
    """Whether an action / enabled group runs this step, from its control signal."""
    if control is None:
        return lambda: False
    slot, vector = control
    if g.kind == "enable":
        if vector:
            return lambda: S[slot][0] > 0.0
        return lambda: S[slot] > 0.0
    if vector:
        return lambda: _on(S[slot][0])
    return lambda: _on(S[slot])


def _on(c) -> bool:
    return c != 0.0 and c == c
