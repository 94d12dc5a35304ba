"""Which closures run when, under a solver: solver stages (right-hand-side and event-function
evaluations) run only what can reach a continuous part; major steps may take time-only
paths from arrays over the grid. Decided once per plan, from what the handlers declare.
"""
from __future__ import annotations

from ..parts import AlgebraicPart
from . import vectorize


def pure_closures(handler, phases) -> bool:
    """Whether a block's OUTPUT / ALGEBRAIC closures may run any number of times (or not at
    all) without any effect but on its output slots."""
    if phases.update is not None or phases.after_step is not None:
        return False
    if phases.pure:
        # declared by the instance (an acausal sensor reading its island), also on the block
        # that carries the island's part: the part is integrated whether or not it runs
        return True
    # declared by its handler (``@block(pure=True)``); a block carrying a part under that
    # flag is a crossing surface reading its inputs at every stage
    return phases.part is None and handler.pure


def after_step_reader(handler, phases) -> bool:
    return (handler.reads_after_step and phases.output is None and phases.algebraic is None
            and phases.update is None and phases.part is None)


def skippable(plan) -> frozenset:
    """Indices of the blocks whose OUTPUT / ALGEBRAIC closures solver-stage evaluations
    may skip: pure blocks (``pure_closures``) whose outputs are read only by after-step readers
    or by other skippable blocks, so nothing that a stage evaluation computes for a
    continuous part (island inputs, a StatePart's inputs, crossing surfaces, constraint
    residuals) depends on them. Conservative: none in diagrams with subsystems or
    algebraic unknowns."""
    d = plan.diagram
    if d.structure is not None:
        return frozenset()
    blocks, handlers, phases = d.blocks, plan.handlers, plan.phases
    consumers = [[] for _ in blocks]
    for i, srcs in enumerate(plan.sources):
        for src in srcs:
            if src is not None:
                consumers[src[0]].append(i)
    cand = {i for i, (h, p) in enumerate(zip(handlers, phases))
            if (p.output is not None or p.algebraic is not None) and pure_closures(h, p)}
    # blocks that read their inputs at every stage whether their closures run or not: a
    # part's derivative, an island's feed
    stage_readers = {i for i, (b, p) in enumerate(zip(blocks, phases)) if p.part is not None or b.type.acausal}
    changed = True
    while changed:
        changed = False
        for i in sorted(cand):
            if any((j not in cand or j in stage_readers) and not after_step_reader(handlers[j], phases[j])
                   for j in consumers[i]):
                cand.discard(i)
                changed = True
    return frozenset(cand)


def grid_paths(plan, complex_out, bound_slots) -> vectorize.MajorSteps | None:
    """The time-only paths of ``plan`` that its major steps take from arrays over the grid
    (``vectorize.select_major``; arguments as there): read by after-step readers (recorders,
    a stop) and by one another only. None when there are none, and in diagrams with
    subsystems or algebraic unknowns (whose evaluations run every closure)."""
    if plan.diagram.structure is not None or any(isinstance(p.part, AlgebraicPart) for p in plan.phases):
        return None
    readers = {i for i, (h, p) in enumerate(zip(plan.handlers, plan.phases)) if after_step_reader(h, p)}
    vector = vectorize.select_major(plan, complex_out, bound_slots, readers)
    return vectorize.MajorSteps(plan, vector) if vector is not None else None


def stage_lists(plan, skipped):
    """plan.output / plan.algebraic without the closures of ``skipped`` blocks (same
    order). A closure the plan made itself (an algebraic-loop relaxation) is kept."""
    if not skipped:
        return list(plan.output), list(plan.algebraic)
    owner = {}
    for i, p in enumerate(plan.phases):
        for f in (p.output, p.algebraic):
            if f is not None:
                owner.setdefault(id(f), i)
    outs = [f for f in plan.output if owner.get(id(f)) not in skipped]
    algs = [f for f in plan.algebraic if owner.get(id(f)) not in skipped]
    return outs, algs
