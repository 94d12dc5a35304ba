"""Signal types at compile time: where each input comes from, which blocks carry complex
signals (nflow's complex-type check), the width of every output port (the handlers' width
rules to a fixed point), and the run's size against the limits, before anything is
allocated."""
from __future__ import annotations

from ..diagram import Diagram, Limits
from ..errors import DiagramError, NFlowError, SimulationError
from ..signals import width_key
from .budget import check_work


def input_sources(diagram: Diagram) -> list:
    sources = [[None] * b.inputs for b in diagram.blocks]
    for w in diagram.wires:
        sources[w.dst][w.dst_port] = (w.src, w.src_port)
    return sources


def check_complex(diagram: Diagram, handlers, sources) -> list:
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


def propagate_widths(diagram: Diagram, handlers, sources) -> dict:
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


def check_widths(diagram: Diagram, out_widths: dict, limits: Limits) -> None:
    """Signal widths and the run's size (element-steps, one pass of every iterated
    subsystem: a lower bound of what ``Plan`` checks once the passes are known) against
    the limits, before anything is allocated."""
    for (i, port), w in out_widths.items():
        if w > limits.max_width:
            b = diagram.blocks[i]
            raise DiagramError("too_wide", f"block {b.id!r} ({b.type.type}): output {port} would have {w} "
                               f"elements (limit {limits.max_width})", block=b.id, path=b.path)
    check_work(diagram.n_samples, step_work(len(diagram.blocks), out_widths, {}), limits.max_element_steps)


def step_work(n_blocks: int, out_widths: dict, passes: dict) -> int:
    """Element-steps of one grid step: each block's output elements (1 for a block
    without outputs) times its passes per step (``passes``: block index -> count; 1 when
    absent)."""
    elements = [0] * n_blocks
    for (i, _), w in out_widths.items():
        elements[i] += w
    return sum(max(1, e) * passes.get(i, 1) for i, e in enumerate(elements))


def check_recorded(diagram: Diagram, phases: list, limits: Limits) -> None:
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
