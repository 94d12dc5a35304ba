"""The algebraic wave: topological order of direct-feedthrough blocks, and Gauss-Seidel
relaxation of the strongly connected groups (algebraic loops) nflow also relaxes."""
from __future__ import annotations

import graphlib
import heapq

import numpy as np

from ..errors import SimulationError
from .budget import block_work
from .context import call_all

MAX_SWEEPS = 500
REL_TOL = 1e-12


def algebraic_order(diagram, phases, feedthrough, sources) -> list:
    """Groups of block indices in evaluation order; a group of several is a loop."""
    nodes = [i for i, p in enumerate(phases) if p.algebraic]
    is_node = set(nodes)
    succ = {i: [] for i in nodes}
    for dst in nodes:
        ports = feedthrough[dst]
        for port, src in enumerate(sources[dst]):
            if not _feeds_through(ports, port):
                continue
            if src is not None and src[0] in is_node and src[0] != dst:
                succ[src[0]].append(dst)
    groups = _strong_groups(nodes, succ)
    group_of = {i: g for g, members in enumerate(groups) for i in members}
    # Kahn over the condensation; ties broken by the smallest block index (declaration order)
    indeg = [0] * len(groups)
    gsucc = [set() for _ in groups]
    for a in nodes:
        for b in succ[a]:
            ga, gb = group_of[a], group_of[b]
            if ga != gb and gb not in gsucc[ga]:
                gsucc[ga].add(gb)
                indeg[gb] += 1
    heap = [(min(groups[g]), g) for g in range(len(groups)) if indeg[g] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, g = heapq.heappop(heap)
        order.append(sorted(groups[g]))
        for h in gsucc[g]:
            indeg[h] -= 1
            if indeg[h] == 0:
                heapq.heappush(heap, (min(groups[h]), h))
    return order


def _feeds_through(ports, port: int) -> bool:
    return ports is True or (ports is not False and port in ports)


def self_loop(i, sources, feedthrough) -> bool:
    return any(src is not None and src[0] == i and _feeds_through(feedthrough[i], port)
               for port, src in enumerate(sources[i]))


def _strong_groups(nodes, succ) -> list:
    """The strongly connected groups of the feedthrough graph, each a list of block indices;
    their order does not matter (the caller orders them). Without a loop (the common case,
    told by the standard library's ``graphlib``) each block is a group; with one, scipy's
    ``csgraph`` finds them (imported then: a loop-free diagram never needs scipy)."""
    if not nodes:
        return []
    try:
        graphlib.TopologicalSorter({a: succ[a] for a in nodes}).prepare()
        return [[node] for node in nodes]
    except graphlib.CycleError:
        pass
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components
    position = {node: k for k, node in enumerate(nodes)}
    # the adjacency lists are the CSR rows, once each target is made unique and sorted (a
    # canonical matrix: scipy's strong components never return on a duplicated entry)
    rows = [sorted({position[b] for b in succ[a]}) for a in nodes]
    indices = [k for row in rows for k in row]
    indptr = np.cumsum([0] + [len(row) for row in rows])
    graph = csr_matrix((np.ones(len(indices)), indices, indptr), shape=(len(nodes), len(nodes)))
    count, labels = connected_components(graph, directed=True, connection="strong")
    groups = [[] for _ in range(count)]
    for node, label in zip(nodes, labels):
        groups[label].append(node)
    return groups


def relaxation(group, blocks, phases, S, slot_of, budget):
    """One callable that sweeps the loop's blocks until their outputs stop changing.
    The first sweep is the step's own work; each further one spends the loop's output
    elements (1 for a member without outputs) from ``budget`` (an ``engine.Budget``)."""
    fns = [phases[i].algebraic for i in group]
    slots = [slot_of[(i, p)] for i in group for p in range(blocks[i].outputs)]
    names = ", ".join(repr(blocks[i].id) for i in group)
    sweep_work = sum(block_work(S, [slot_of[(i, p)] for p in range(blocks[i].outputs)]) for i in group)

    def relax():
        for sweep in range(MAX_SWEEPS):
            before = [S[s] for s in slots]
            call_all(fns)
            if all(_settled(S[s], b) for s, b in zip(slots, before)):
                if sweep:
                    budget.spend(sweep * sweep_work)
                return
        raise SimulationError("algebraic_loop", f"algebraic loop through blocks {names} did not converge in "
                              f"{MAX_SWEEPS} sweeps; break it with a unitDelay or integrator",
                              block=blocks[group[0]].id, blocks=[blocks[i].id for i in group])

    return relax


def _settled(new, old) -> bool:
    """Whether a loop signal stopped changing over a sweep: every element equal to its
    previous value or within REL_TOL of it (relative, absolute below 1). Works for every
    signal kind: floats, complex (the modulus of the change), exact integers (equal, as
    Python ints: no wrap-around in a uint64 difference), mixes of them (a first sweep)."""
    if new.__class__ is float and old.__class__ is float:     # the common case, no numpy
        return new == old or abs(new - old) <= REL_TOL * max(1.0, abs(new))
    a, b = np.asarray(new), np.asarray(old)
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        return a.tolist() == b.tolist()
    if a.dtype.kind not in "fc":      # an integer beside a float: compare as doubles
        a = a.astype(float)
    if b.dtype.kind not in "fc":
        b = b.astype(float)
    return bool(np.all((a == b) | (np.abs(a - b) <= REL_TOL * np.maximum(1.0, np.abs(a)))))


def with_reads(phases, sources, feedthrough, slot_of):
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
