"""Nodes and islands of an acausal network, for every domain: pins joined by connections
form a node (``join_pins``, scipy's ``DisjointSet``); elements joined through shared
nodes form an island (``connected_elements``, ``csgraph.connected_components``); rigid
ties between nodes (a gear, a lever, a Fixed flange: ``pos(y) = ratio*pos(x) + offset``)
make one node the affine alias of another (``AffineUnionFind``)."""
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


class AffineUnionFind:
    """Union-find with affine offsets: ``pos(x) = k(x)*pos(root) + d(x)``.

    The ground item (``ground``: positions tied to it are constants) always stays a root."""

    def __init__(self, ground):
        self.parent, self.k, self.d = {ground: ground}, {ground: 1.0}, {ground: 0.0}
        self.ground = ground

    def add(self, x):
        if x not in self.parent:
            self.parent[x], self.k[x], self.d[x] = x, 1.0, 0.0

    def find(self, x):
        path = []
        while self.parent[x] != x:
            path.append(x)
            x = self.parent[x]
        root = x
        for node in reversed(path):            # nearest to the root first
            p = self.parent[node]
            if p != root:
                self.k[node], self.d[node] = self.k[node] * self.k[p], self.k[node] * self.d[p] + self.d[node]
                self.parent[node] = root
        return root

    def rel(self, x):
        """``(root, k, d)`` with ``pos(x) = k*pos(root) + d``."""
        r = self.find(x)
        return (r, 1.0, 0.0) if r == x else (r, self.k[x], self.d[x])

    def link(self, x, y, r, w) -> bool:
        """Require ``pos(y) = r*pos(x) + w``; False when it contradicts the ties so far."""
        rx, kx, dx = self.rel(x)
        ry, ky, dy = self.rel(y)
        if rx == ry:
            dtarget = r * dx + w
            dok = abs(dy - dtarget) <= 1e-12 * max(1.0, abs(dy), abs(dtarget), abs(w))
            if rx == self.ground:               # ground: positions are constants
                return dok
            return dok and abs(ky - r * kx) <= 1e-12 * max(1.0, abs(ky), abs(r * kx))
        if ry == self.ground:
            # pos(x) = (pos(y) - w)/r  ->  pos(rx) = (ky*pos(ry) + dy - w)/(r*kx) - dx/kx
            self.parent[rx] = ry
            self.k[rx] = ky / (r * kx)
            self.d[rx] = ((dy - w) / r - dx) / kx
        else:
            # pos(ry) = (r*(kx*pos(rx) + dx) + w - dy)/ky
            self.parent[ry] = rx
            self.k[ry] = r * kx / ky
            self.d[ry] = (r * dx + w - dy) / ky
        return True
