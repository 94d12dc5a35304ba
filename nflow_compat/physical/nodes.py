"""Nodes and islands of an acausal network, for every domain: pins joined by connections
form a node (``join_pins``, scipy's ``DisjointSet``); elements joined through shared
nodes form an island (``connected_elements``, ``csgraph.connected_components``)."""
from __future__ import annotations

import numpy as np
from scipy.cluster.hierarchy import DisjointSet
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components


def join_pins(pins, connections) -> dict:
    """``pin -> node``: pins joined by connections form a node, named by its smallest pin."""
    sets = DisjointSet(pins)
    for a, b in connections:
        sets.merge(a, b)
    return {pin: min(subset) for subset in sets.subsets() for pin in subset}


def connected_elements(element_pins: dict, node_of: dict) -> list:
    """The islands: groups of elements joined through shared nodes
    (``csgraph.connected_components`` of the element/node graph), each group's names sorted,
    the groups in the order of their first name."""
    names = sorted(element_pins)
    roots = sorted({node_of[p] for pins in element_pins.values() for p in pins})
    root_pos = {r: k for k, r in enumerate(roots)}
    rows, cols = [], []
    for e, name in enumerate(names):
        for pin in element_pins[name]:
            rows.append(e)
            cols.append(len(names) + root_pos[node_of[pin]])
    size = len(names) + len(roots)
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(size, size))
    count, labels = connected_components(graph, directed=False)
    groups = [[name for e, name in enumerate(names) if labels[e] == k] for k in range(count)]
    return [members for members in groups if members]
