"""Laws every acausal network obeys, on random networks (hypothesis), read through the
public API only: sensors in the diagram, the recorded workspace.

* Kirchhoff's current law at every node and Tellegen's theorem (sum of v*i over all
  elements = 0) at a random time of a random passive RLC network;
* a passive RLC network never gains energy (sum C v^2/2 + L i^2/2 is non-increasing);
* an isolated network of heat capacitors and conductors keeps its heat (sum C T) and
  relaxes to the capacity-weighted mean temperature;
* the result does not depend on the order of blocks or connections in the JSON, nor on
  which end of a physical connection is written first (bitwise equal).
"""
from __future__ import annotations

import random

import numpy as np
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from tests.util import blk, diagram, pin, rec

SETTINGS = settings(max_examples=8, deadline=None)

# passive elements: block type, parameter, its range, start-value parameter, its range
PASSIVE = {"Resistor": ("R", (0.5, 5.0), None, None), "Capacitor": ("C", (0.1, 2.0), "v0", (-2.0, 2.0)),
           "Inductor": ("L", (0.1, 2.0), "i0", (-1.0, 1.0))}


@st.composite
def rlc_networks(draw, capacitor_loops=True):
    """(elements, node count): each element (type, node a, node b, value, start value).
    Node 0 is Ground. Every other node has a resistor or capacitor to Ground, so no cut-set
    consists of inductors only (index 2, unsupported); further elements join random nodes:
    R, L and C, or only R and L (no capacitor loop) if ``capacitor_loops`` is false."""
    nodes = draw(st.integers(1, 4))
    shunts = [(draw(st.sampled_from(["Resistor", "Capacitor"])), k, 0) for k in range(1, nodes + 1)]
    kinds = sorted(PASSIVE) if capacitor_loops else ["Inductor", "Resistor"]
    pairs = st.tuples(st.sampled_from(kinds), st.integers(0, nodes), st.integers(0, nodes))
    extra = draw(st.lists(pairs.filter(lambda e: e[1] != e[2]), max_size=4))
    elements = []
    for kind, a, b in shunts + extra:
        _, value_range, start, start_range = PASSIVE[kind]
        value = draw(st.floats(*value_range))
        elements.append((kind, a, b, value, draw(st.floats(*start_range)) if start else None))
    return elements, nodes + 1


def rlc_diagram(elements, t_end, ammeters=frozenset(PASSIVE)):
    """Each element e<k> with a VoltageSensor v<k> across it and, if its type is in
    ``ammeters``, a CurrentSensor i<k> in series at its p side (reading the element's
    current p -> n); recorded as v<k>, i<k>. (An ammeter is a zero-voltage branch: in
    series with a capacitor of a capacitor loop it makes the network index 2.)"""
    blocks, connections = [blk("gnd", "Ground")], []
    anchor = {0: ("gnd", "p")}

    def join(node, block, pin_name):
        if node in anchor:
            connections.append(pin(*anchor[node], block, pin_name))
        else:
            anchor[node] = (block, pin_name)
    for k, (kind, a, b, value, start) in enumerate(elements):
        value_name, _, start_name, _ = PASSIVE[kind]
        params = {value_name: value, **({start_name: start} if start_name else {})}
        blocks += [blk(f"e{k}", kind, **params), blk(f"v{k}", "VoltageSensor")]
        sensors = [f"v{k}"]
        if kind in ammeters:
            blocks.append(blk(f"i{k}", "CurrentSensor"))
            sensors.append(f"i{k}")
            join(a, f"i{k}", "p")
            connections.append(pin(f"i{k}", "n", f"e{k}", "p"))
        else:
            join(a, f"e{k}", "p")
        join(b, f"e{k}", "n")
        connections += [pin(f"v{k}", "p", f"e{k}", "p"), pin(f"v{k}", "n", f"e{k}", "n")]
        for sensor in sensors:
            more_blocks, more_connections = rec(sensor, sensor)
            blocks += more_blocks
            connections += more_connections
    return diagram(blocks, connections, dt=t_end / 4, duration=t_end, solver="ode45", relTol=1e-10, absTol=1e-12)


def columns(result, prefix, indices) -> np.ndarray:
    """samples x elements of the recorded ``prefix<k>`` for k in ``indices``."""
    return np.column_stack([np.asarray(result["workspace"][f"{prefix}{k}"], dtype=float)[:, 0]
                            for k in indices])


@SETTINGS
@given(network=rlc_networks(capacitor_loops=False), t_end=st.floats(0.05, 3.0))
def test_kirchhoff_current_law_and_tellegen_at_a_random_time(network, t_end):
    elements, n_nodes = network
    res = nc.simulate(rlc_diagram(elements, t_end))
    every = range(len(elements))
    i, v = columns(res, "i", every), columns(res, "v", every)
    scale = 1.0 + np.abs(i).max()
    for node in range(n_nodes):
        leaving = sum(i[:, k] for k, e in enumerate(elements) if e[1] == node)
        entering = sum(i[:, k] for k, e in enumerate(elements) if e[2] == node)
        np.testing.assert_allclose(leaving - entering, 0.0, atol=1e-8 * scale)
    # Tellegen: the elements' powers sum to 0 (the sensors take none: v = 0 or i = 0)
    np.testing.assert_allclose((v * i).sum(axis=1), 0.0, atol=1e-8 * scale * (1.0 + np.abs(v).max()))


@SETTINGS
@given(network=rlc_networks(), t_end=st.floats(0.5, 4.0))
def test_a_passive_rlc_network_never_gains_energy(network, t_end):
    # ammeters on the inductors only: capacitor loops are allowed here
    elements, _ = network
    res = nc.simulate(rlc_diagram(elements, t_end, ammeters={"Inductor"}))
    energy = np.zeros(len(res["time"]))
    for k, (kind, _, _, value, _) in enumerate(elements):
        if kind == "Capacitor":
            energy += value * columns(res, "v", [k])[:, 0] ** 2 / 2
        elif kind == "Inductor":
            energy += value * columns(res, "i", [k])[:, 0] ** 2 / 2
    assert np.all(np.diff(energy) <= 1e-9 * (1.0 + energy[0])), energy


@st.composite
def thermal_networks(draw):
    """(capacities, start temperatures, conductors (a, b, G)): a connected network (a
    random spanning tree plus random extra conductors), one HeatCapacitor per node."""
    n = draw(st.integers(2, 5))
    capacities = [draw(st.floats(0.5, 2.0)) for _ in range(n)]
    temperatures = [draw(st.floats(250.0, 400.0)) for _ in range(n)]
    tree = [(k, draw(st.integers(0, k - 1)), draw(st.floats(0.5, 2.0))) for k in range(1, n)]
    pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.floats(0.5, 2.0))
    extra = draw(st.lists(pairs.filter(lambda c: c[0] != c[1]), max_size=3))
    return capacities, temperatures, tree + extra


@SETTINGS
@given(network=thermal_networks())
def test_an_isolated_thermal_network_relaxes_to_the_capacity_weighted_mean(network):
    capacities, temperatures, conductors = network
    n = len(capacities)
    # the slowest relaxation rate: the smallest non-zero eigenvalue of C^-1 (graph Laplacian)
    laplacian = np.zeros((n, n))
    for a, b, g in conductors:
        laplacian[[a, b], [a, b]] += g
        laplacian[a, b] -= g
        laplacian[b, a] -= g
    slowest = scipy.linalg.eigh(laplacian, np.diag(capacities), eigvals_only=True)[1]
    t_end = 30.0 / slowest
    blocks = [blk(f"c{k}", "HeatCapacitor", C=c, T0=t0) for k, (c, t0) in enumerate(zip(capacities, temperatures))]
    blocks += [blk(f"g{k}", "ThermalConductor", G=g) for k, (_, _, g) in enumerate(conductors)]
    connections = [pin(f"g{k}", "a", f"c{a}", "port") for k, (a, _, _) in enumerate(conductors)]
    connections += [pin(f"g{k}", "b", f"c{b}", "port") for k, (_, b, _) in enumerate(conductors)]
    for k in range(n):
        blocks.append(blk(f"T{k}", "TemperatureSensor"))
        connections.append(pin(f"T{k}", "port", f"c{k}", "port"))
        more_blocks, more_connections = rec(f"T{k}", f"T{k}")
        blocks += more_blocks
        connections += more_connections
    res = nc.simulate(diagram(blocks, connections, dt=t_end / 8, duration=t_end, solver="ode45",
                              relTol=1e-10, absTol=1e-10))
    T = columns(res, "T", range(n))
    heat = T @ np.asarray(capacities)
    mean = float(np.dot(capacities, temperatures) / sum(capacities))
    np.testing.assert_allclose(heat, mean * sum(capacities), rtol=1e-9)        # no heat is lost or made
    assert np.all(np.diff(T.max(axis=1)) <= 1e-7) and np.all(np.diff(T.min(axis=1)) >= -1e-7)  # max principle
    np.testing.assert_allclose(T[-1], mean, atol=1e-6 * (max(temperatures) - min(temperatures)) + 1e-9)


@settings(max_examples=6, deadline=None)
@given(network=rlc_networks(), seed=st.integers(0, 2 ** 32 - 1))
def test_results_do_not_depend_on_the_order_of_blocks_or_connections(network, seed):
    elements, _ = network
    d = rlc_diagram(elements, 1.0, ammeters={"Inductor"})
    shuffled = dict(d, blocks=list(d["blocks"]), connections=[dict(c) for c in d["connections"]])
    rng = random.Random(seed)
    rng.shuffle(shuffled["blocks"])
    rng.shuffle(shuffled["connections"])
    for c in shuffled["connections"]:   # write some physical connections the other way round
        if "fromPin" in c and rng.random() < 0.5:
            c["from"], c["to"], c["fromPin"], c["toPin"] = c["to"], c["from"], c["toPin"], c["fromPin"]
    first, second = nc.simulate(d), nc.simulate(shuffled)
    assert first["workspace"] == second["workspace"]
    assert first["time"] == second["time"]
