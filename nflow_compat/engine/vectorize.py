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
input) takes its column in bulk (``Phases.bulk``) and leaves the loop as well.
"""
from __future__ import annotations

import numpy as np

from .context import call

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
    ``evaluate``."""

    def __init__(self, plan, members: dict, fed: set, recorders: list):
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
        writers = {i: phases[i].output or phases[i].algebraic for i in order}
        self.left_out = {id(f) for f in writers.values()} | {id(phases[i].after_step) for i, _ in recorders}
        self.feeds = {id(writers[i]): [s for s in outs_of[i] if s in fed] for i in order}
        self.recorders = [bulk for _, bulk in recorders]
        self.blocks = set(order) | {i for i, _ in recorders}    # what no longer runs in the loop
        self.slice = max(MIN_SLICE, min(MAX_SLICE, MAX_ELEMENTS // max(1, peak + 3 * len(fed))))

    def evaluate(self, k0: int, k1: int, dt: float, tail: dict | None = None):
        """(the times of grid steps k0 .. k1-1, slot -> column of every fed and bulk-recorded
        slot). ``tail``, if given, receives every member slot's value at step k1-1."""
        t = np.arange(k0, k1) * dt      # k*dt as the loop computes it: exact integers times dt
        columns = {}
        for array, ins, outs, drops in self.steps:
            for s, column in zip(outs, call(array, t, [None if s is None else columns[s] for s in ins])):
                columns[s] = column
                if tail is not None:
                    tail[s] = float(column[-1])
            for s in drops:
                del columns[s]
        return t, columns


def select(plan, complex_out, bound_slots) -> Vectorized | None:
    """The vectorized set of ``plan`` (None when empty). ``complex_out``: per block,
    whether its outputs are complex; ``bound_slots``: slots handed to blocks by id
    (bindings), read outside the wiring."""
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
    after = {id(f) for f in plan.after_step}
    recorders = []
    for i, p in enumerate(phases):
        bulk = p.bulk
        if (bulk is not None and id(p.after_step) in after and p.output is None and p.algebraic is None
                and p.update is None and (bulk.slot is None or owner[bulk.slot] in members)):
            recorders.append((i, bulk))
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
