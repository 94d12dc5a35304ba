"""Time-only signal paths of a fixed-step plan, evaluated over many grid steps at once.

A block is *vectorized* when its outputs are pure functions of time and of other
vectorized signals: it declares an array form (``Phases.array``), writes in OUTPUT
without inputs (a source) or in ALGEBRAIC, keeps no state (no UPDATE, no AFTER_STEP, no
extra ``reads``, no continuous part), carries real scalar signals only, and runs at every
step as itself (its closure is in the plan's top-level call lists: not inside a
conditional or iterated subsystem, not in an algebraic loop). The sources seed the set
and the rest join in the plan's evaluation order, each after all its producers, so no
block of a feedback loop ever joins.

At run time ``evaluate`` computes the set over a slice of the grid, one array operation
per block. What the rest of the plan reads of it (the *fed* slots) the step loop takes
from the columns at the place where the block's closure would have run, so every reader
sees the value it saw before (an OUTPUT reader the previous step's value of an ALGEBRAIC
signal, say). A toWorkspace that records nothing but such a signal (or an unconnected
input) takes its column in bulk (``after_step.bulk``) and leaves the loop as well.

Under a solver (``select_major``, ``MajorSteps``) the grid is the major-step grid, where
OUTPUT / ALGEBRAIC run committed, and the set leaves the evaluations only where no solver
stage reads it: a block whose outputs only other such blocks and the after-step readers
(recorders, a stop) read. The time-only blocks such a block reads that a stage reads as
well (a sine driving an integrator too) keep their closures and are evaluated over the
grid besides (``kept``).
"""
from __future__ import annotations

import numpy as np

# Elements of the columns alive at once (a fed column counts four times: its Python
# floats): bounds the memory of a slice to some tens of MB whatever the diagram.
MAX_ELEMENTS = 1 << 21
# Grid steps per slice, at most (longer saves little of numpy's per-call overhead) and
# at least (shorter makes that overhead dominate).
MAX_SLICE, MIN_SLICE = 16384, 256


class Vectorized:
    """The vectorized set of a plan and its evaluation over slices of the grid.

    ``steps``: per member in evaluation order (array form, input slots, output slots,
    slots no longer needed after it); ``blocks``: the members and the bulk recorders;
    ``left_out``: ids of the closures the step loop no longer calls (the members' writers
    and the bulk recorders' AFTER_STEP); ``feeds``: id of a member's writer -> the slots of
    its outputs the loop reads; ``recorders``: the bulk entries; ``slice``: grid steps per
    ``evaluate``; ``kept``: members whose closures still run (evaluated over the grid only
    for the members that read them)."""

    def __init__(self, plan, members: dict, fed: set, recorders: list, kept=frozenset()):
        phases, ins_of = plan.phases, plan.input_slots
        order = sorted(members, key=members.get)
        outs_of = plan.output_slots
        keep = set(fed) | {bulk.slot for _, bulk in recorders if bulk.slot is not None}
        last_use = {}
        for n, i in enumerate(order):
            for s in ins_of[i]:
                if s is not None:
                    last_use[s] = n
        self.steps, live, peak = [], 0, 0
        for n, i in enumerate(order):
            outs = outs_of[i]
            drops = [s for s in outs if s not in keep and s not in last_use]
            drops += [s for s in dict.fromkeys(ins_of[i]) if s is not None and s not in keep and last_use[s] == n]
            live += len(outs)
            peak = max(peak, live)
            live -= len(drops)
            self.steps.append((phases[i].array, list(ins_of[i]), outs, drops))
        writers = {i: phases[i].output or phases[i].algebraic for i in order if i not in kept}
        self.left_out = {id(f) for f in writers.values()} | {id(phases[i].after_step) for i, _ in recorders}
        self.feeds = {id(f): [s for s in outs_of[i] if s in fed] for i, f in writers.items()}
        self.recorders = [bulk for _, bulk in recorders]
        self.members = set(order)
        self.blocks = set(writers) | {i for i, _ in recorders}    # what no longer runs in the loop
        self.slice = max(MIN_SLICE, min(MAX_SLICE, MAX_ELEMENTS // max(1, peak + 3 * len(fed))))

    def evaluate(self, k0: int, k1: int, dt: float, tail: dict | None = None):
        """(the times of grid steps k0 .. k1-1, slot -> column of every fed and bulk-recorded
        slot). ``tail``, if given, receives every member slot's value at step k1-1."""
        t = np.arange(k0, k1) * dt      # k*dt as the loop computes it: exact integers times dt
        return t, self.columns_at(t, tail)

    def columns_at(self, t: np.ndarray, tail: dict | None = None) -> dict:
        """``evaluate``'s columns at the times ``t``."""
        columns = {}
        for array, ins, outs, drops in self.steps:
            for s, column in zip(outs, array(t, [None if s is None else columns[s] for s in ins])):
                columns[s] = column
                if tail is not None:
                    tail[s] = float(column[-1])
            for s in drops:
                del columns[s]
        return columns


def time_only(plan, complex_out) -> dict:
    """The blocks of ``plan`` that can join a vectorized set (see the module's text), each
    with its rank in the plan's evaluation order. ``complex_out``: per block, whether its
    outputs are complex."""
    phases, ins_of, outs_of, first = plan.phases, plan.input_slots, plan.output_slots, plan.initial_signals
    owner = {s: i for (i, _), s in plan.slot_of.items()}
    rank = {id(f): n for n, f in enumerate(list(plan.output) + list(plan.algebraic))}

    def writer(i):
        p = phases[i]
        if (p.array is None or complex_out[i] or p.update or p.after_step or p.reads or p.part is not None
                or (p.output is None) == (p.algebraic is None)):
            return None
        f = p.output or p.algebraic
        if id(f) not in rank or any(first[s].__class__ is not float for s in outs_of[i]):
            return None
        if p.output is not None and any(s is not None for s in ins_of[i]):
            return None      # OUTPUT reads inputs before the algebraic wave: not a pure path
        return f
    members = {}
    for r, i in sorted((rank[id(f)], i) for i in range(len(phases)) if (f := writer(i)) is not None):
        if all(s is None or members.get(owner[s], r) < r for s in ins_of[i]):
            members[i] = r
    return members


def _bulk_recorders(plan, members) -> list:
    """[(index, bulk entry)] of the recorders that can take a column of ``members`` (or
    of nothing: an unconnected input) in bulk."""
    owner = {s: i for (i, _), s in plan.slot_of.items()}
    after = {id(f) for f in plan.after_step}
    recorders = []
    for i, p in enumerate(plan.phases):
        bulk = getattr(p.after_step, "bulk", None)
        if (bulk is not None and id(p.after_step) in after and p.output is None and p.algebraic is None
                and p.update is None and (bulk.slot is None or owner[bulk.slot] in members)):
            recorders.append((i, bulk))
    return recorders


def select(plan, complex_out, bound_slots) -> Vectorized | None:
    """The vectorized set of a fixed-step ``plan`` (None when empty). ``complex_out``: per
    block, whether its outputs are complex; ``bound_slots``: slots handed to blocks by id
    (bindings), read outside the wiring."""
    phases, ins_of, outs_of = plan.phases, plan.input_slots, plan.output_slots
    members = time_only(plan, complex_out)
    recorders = _bulk_recorders(plan, members)
    if not members and not recorders:
        return None
    recording = {i for i, _ in recorders}
    read = set(bound_slots)
    for i, p in enumerate(phases):
        read.update(p.reads)
        if i not in members and i not in recording:
            read.update(s for s in ins_of[i] if s is not None)
    member_slots = {s for i in members for s in outs_of[i]}
    structure = plan.diagram.structure
    # conditional and iterated subsystems read their control signals outside the wiring
    fed = member_slots if structure is not None and structure.groups else member_slots & read
    return Vectorized(plan, members, fed, recorders)


def select_major(plan, complex_out, bound_slots, major_readers) -> Vectorized | None:
    """The vectorized set of a solver-driven ``plan`` over its major-step grid (None when
    nothing leaves the evaluations). A time-only block leaves them when every block that
    reads its outputs has left them too or is in ``major_readers`` (blocks that read their
    inputs at major steps only); the time-only blocks those read stay (``kept``) and are
    evaluated over the grid as well. ``complex_out``, ``bound_slots``: as in ``select``
    (a bound slot counts as read by a solver stage)."""
    phases, ins_of, outs_of = plan.phases, plan.input_slots, plan.output_slots
    members = time_only(plan, complex_out)
    readers = {}
    for j, p in enumerate(phases):
        for s in (*ins_of[j], *p.reads, *p.rate_reads):
            if s is not None:
                readers.setdefault(s, set()).add(j)
    left = set()
    for i in sorted(members, key=members.get, reverse=True):     # every reader of i before i
        if not any(s in bound_slots or any(j not in left and j not in major_readers for j in readers.get(s, ()))
                   for s in outs_of[i]):
            left.add(i)
    recorders = _bulk_recorders(plan, members)
    if not left and not recorders:
        return None
    recording = {i for i, _ in recorders}
    owner = {s: i for (i, _), s in plan.slot_of.items()}
    needed, todo = set(), list(left) + [owner[bulk.slot] for _, bulk in recorders if bulk.slot is not None]
    while todo:     # the members left out or recorded in bulk, and the members they read
        i = todo.pop()
        if i not in needed:
            needed.add(i)
            todo.extend(owner[s] for s in ins_of[i] if s is not None)
    fed = {s for i in left for s in outs_of[i] if any(j not in left and j not in recording for j in readers.get(s, ()))}
    return Vectorized(plan, {i: members[i] for i in needed}, fed, recorders, kept=frozenset(needed - left))


class MajorSteps:
    """A solver-driven plan's major steps with its vectorized set (``select_major``):
    the plan's OUTPUT, ALGEBRAIC and AFTER_STEP lists without the set's closures, a feed
    in place of each writer whose outputs the rest reads, and the columns a slice of the
    grid ahead of the major steps. A run calls ``start``, ``at(k)`` before the committed
    evaluation of grid point k (k = 0, 1, ... in turn) and ``finish(done)``."""

    def __init__(self, plan, vector: Vectorized):
        self.plan, self.vector = plan, vector
        left_out, feeds = vector.left_out, vector.feeds
        self.output, self.algebraic = ([self._feed(feeds[id(f)]) if feeds.get(id(f)) else f
                                        for f in fns if id(f) not in left_out or feeds.get(id(f))]
                                       for fns in (plan.output, plan.algebraic))
        self.after_step = [f for f in plan.after_step if id(f) not in left_out]
        self.fed = [s for slots in feeds.values() for s in slots]
        self.start()

    def _feed(self, slots):
        """The stand-in of a writer: its fed slots from the columns at the grid point."""
        S, ctx, steps = self.plan.S, self.plan.ctx, self

        def feed():
            j = ctx.k - steps.first
            for s in slots:
                S[s] = steps.values[s][j]
        return feed

    def start(self) -> None:
        self.first = self.end = 0
        self.times, self.columns, self.values = None, {}, {}

    def at(self, k: int) -> None:
        if k < self.end:
            return
        self._flush(self.end)
        ctx = self.plan.ctx
        self.first, self.end = k, min(k + self.vector.slice, ctx.n_samples)
        self.times, self.columns = self.vector.evaluate(self.first, self.end, ctx.dt)
        # Python floats, as the closures write them
        self.values = {s: self.columns[s].tolist() for s in self.fed}

    def finish(self, done: int) -> None:
        """After the last major step (grid point ``done`` - 1): the recorders' rows of the
        last slice, and the set's values there into the signal store, where the closures
        would have left them."""
        if self.times is not None and done:     # major steps ran (not a free run recorded in bulk)
            self._flush(done)
            tail = {}
            self.vector.evaluate(done - 1, done, self.plan.ctx.dt, tail)
            S = self.plan.S
            for s, value in tail.items():
                S[s] = value
        self.start()

    def _flush(self, done: int) -> None:
        """The bulk recorders' rows from the slice's first grid point to ``done`` - 1."""
        if self.times is None:
            return
        n = done - self.first
        for bulk in self.vector.recorders:
            bulk(self.times[:n], None if bulk.slot is None else self.columns[bulk.slot][:n])
