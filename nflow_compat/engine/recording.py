"""Recording after a free run: when nothing needs a major step at each grid point, the solver
runs without the per-point callback and the recorders are filled at once from the grid
states (a sensor's value from its island's state, a time-only signal from its array).
"""
from __future__ import annotations

from functools import partial

import numpy as np

from .stages import pure_closures


# grid rows whose recorded values are computed together after a free run: a block of the
# states (and of every island's unknowns) is held at once, about this many values of the
# states, but never fewer rows than this (each block costs every recorder's operations once)
STATE_VALUES_AT_ONCE = 1 << 17
MIN_ROWS_AT_ONCE = 1024


def rows_at_once(n_states: int) -> int:
    """The grid rows of one block of ``record_in_bulk`` for a run of ``n_states`` states."""
    return max(MIN_ROWS_AT_ONCE, STATE_VALUES_AT_ONCE // max(1, n_states))


def bulk_recorders(plan, system, progress, evaluator=None):
    """The recorders to fill in bulk after a free run, or None when the per-grid-point
    major steps are needed. ``evaluator`` (an ``engine.batch.vectorized.Evaluator`` of the
    plan's major-step closures, if one covers them): the blocks it covers need not be
    declared pure, and it gives the values of the slots it computes. Taken only when nothing but toWorkspace recorders acts at a
    major step and nothing else observes one: no UPDATE, no progress callback, no
    algebraic unknowns, no subsystems; every block with an AFTER_STEP or a result is a
    recorder that declares its bulk form (``Phases.bulk``), without OUTPUT / ALGEBRAIC,
    whose input is unconnected or written by a sensor whose value depends on time and its
    island's state alone (``Phases.linear``: linear terms; ``Phases.of_state``: a circuit
    probe); every other OUTPUT / ALGEBRAIC closure is pure (``pure_closures``). Returns [(bulk,
    values or None)], ``values(times, X, slice_of, solved)`` giving the recorded values on
    a block of grid rows (``record_in_bulk``)."""
    d = plan.diagram
    if progress is not None or plan.update or system.algebraic_solve is not None or d.structure is not None:
        return None
    own = {id(p.algebraic) for p in plan.phases if p.algebraic is not None}
    if any(id(f) not in own for f in plan.algebraic):   # an algebraic loop's relaxation
        return None
    on_grid = plan.major_steps
    # time-only signals (pure: they declare an array form) from their arrays over the grid
    time_only = on_grid.vector.members if on_grid else set()
    values_of = {s: partial(_time_only_values, on_grid.vector, s) for i in time_only for s in plan.output_slots[i]}
    covered = evaluator.covered if evaluator is not None else frozenset()
    evaluated = {}
    if evaluator is not None:
        computed = _Evaluated(evaluator)
        evaluated = {s: partial(computed.values, s) for i in covered for s in plan.output_slots[i]}
        values_of.update(evaluated)
    recorders = []
    for i, (h, p) in enumerate(zip(plan.handlers, plan.phases)):
        if p.after_step is not None or p.result is not None:
            if p.bulk is None or p.output is not None or p.algebraic is not None:
                return None
            recorders.append(p.bulk)
            continue
        if p.output is None and p.algebraic is None:
            continue
        if not pure_closures(h, p) and i not in time_only and i not in covered:
            return None
        for slot, (part, pick) in (p.of_state or {}).items():
            values_of[slot] = partial(_probed_values, part, pick)
        for slot, linear in (p.linear or {}).items():
            values_of[slot] = partial(_linear_values, linear)
    out = []
    for bulk in recorders:
        if bulk.slot is None:
            out.append((bulk, None))
        elif bulk.slot in values_of:
            out.append((bulk, values_of[bulk.slot]))
            if values_of[bulk.slot] is evaluated.get(bulk.slot):
                computed.read.add(bulk.slot)
        else:
            return None
    return out


def _time_only_values(vector, slot, times, X, slice_of, solved):
    """A time-only signal's values: the vectorized set's columns, computed once for all."""
    columns = solved.get(id(vector))
    if columns is None:
        columns = solved[id(vector)] = vector.columns_at(times)
    return columns[slot]


class _Evaluated:
    """The slots an evaluator computes for the recorders (``read``): on each block of rows,
    those slots and what they depend on, computed once for all of them."""

    def __init__(self, evaluator):
        self.evaluator, self.read = evaluator, set()

    def values(self, slot, times, X, slice_of, solved):
        values = solved.get(id(self))
        if values is None:
            values = solved[id(self)] = self.evaluator.signals(times, X, wanted=frozenset(self.read))
        return np.broadcast_to(values[slot], times.shape)


def _linear_values(linear, times, X, slice_of, solved):
    """A linear reader's values (``Phases.linear``: ``(part, i, k, d)`` terms, the value
    ``k * x[i] + d`` of one, the first minus the second of two) on a block of grid rows: the
    same floating-point operations as the reader, element-wise."""
    out = []
    for part, i, k, d in linear:
        col = k * X[:, slice_of[id(part)].start + i]
        out.append(col if d is None else col + d)
    return out[0] if len(out) == 1 else out[0] - out[1]


def _probed_values(part, pick, times, X, slice_of, solved):
    """A circuit probe's values: its island's unknowns, solved once for all its probes."""
    z = solved.get(id(part))
    if z is None:
        z = solved[id(part)] = part.island.solve_rows(times, X[:, slice_of[id(part)]])
    return pick(z)


def record_in_bulk(plan, system, recorders, res) -> None:
    """Fill the recorders from the grid states of a free run, as the major steps would,
    ``rows_at_once`` grid rows at a time."""
    n = len(res.t)
    slice_of = {id(part): sl for part, sl in zip(system.parts, system.slices)}
    step_times = np.arange(n) * plan.diagram.sample_time    # ctx.t of each major step: k * dt
    columns = [None if values is None else np.empty(n) for _, values in recorders]
    block = rows_at_once(res.x.shape[1])
    for start in range(0, n, block):
        rows = slice(start, start + block)
        solved = {}
        for column, (_, values) in zip(columns, recorders):
            if values is not None:
                column[rows] = values(step_times[rows], res.x[rows], slice_of, solved)
    for column, (bulk, _) in zip(columns, recorders):
        bulk.record(step_times, column)
