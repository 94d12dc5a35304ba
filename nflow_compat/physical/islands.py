"""Lower a diagram's acausal mechanical blocks onto ``Network``s and hand each island to
the engine as a continuous part.

Each block type has a lowering rule (``LOWERING``): which network element(s) it becomes,
which of its pins is which element pin, which signal input drives which element, and
which probe each sensor output reads. Pins joined by physical connections become one
node; sensors own no element and read the node they are attached to.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import DiagramError, SimulationError
from .network import Network


@dataclass
class Lowered:
    pins: dict = field(default_factory=dict)     # block pin -> network pin 'element.pin' (None: a sensor pin)
    inputs: dict = field(default_factory=dict)   # block input port -> element whose input it drives
    sensors: dict = field(default_factory=dict)  # output port -> (probe kind, block pin, other block pin | None)


LOWERING: dict = {}


def lowers(*types):
    def register(fn):
        for t in types:
            LOWERING[t] = fn
        return fn
    return register


def _unsupported(block, why):
    raise SimulationError("unsupported_block", f"block {block.id!r} ({block.type.type}): {why}",
                          block=block.id, path=block.path)


def _mu_table(p):
    table = p.get("mu_pos")
    if table is None:
        return ((0.0, float(p["mu"])),)
    table = np.atleast_2d(np.asarray(table, dtype=float))
    if table.shape[1] != 2:
        raise DiagramError("param_value", "mu_pos must be a table of [speed, mu] rows", param="mu_pos")
    return tuple(map(tuple, table))


# ----------------------------------------------------------------------------- bodies

@lowers("Mass", "SlidingMass")
def _mass(net, name, b):
    # nflow's masses have one flange at the mass position; SlidingMass's L is geometric only
    p = b.params
    net.mass(name, m=p["m"], s0=p["s0"], v0=p["v0"])
    return Lowered(pins={"flange": f"{name}.flange_a"})


@lowers("Inertia")
def _inertia(net, name, b):
    p = b.params
    net.inertia(name, J=p["J"], phi0=p["phi0"], w0=p["w0"])
    return Lowered(pins={"flange": f"{name}.flange_a"})


@lowers("MassWithStopAndFriction")
def _stop_mass(net, name, b):
    p = b.params
    if not p["smax"] > p["smin"]:
        raise DiagramError("param_range", f"block {b.id!r}: smax ({p['smax']:g}) must be greater than smin "
                           f"({p['smin']:g})", **b.where("smax"))
    net.mass_with_stop_and_friction(name, m=p["m"], L=p["L"], smax=p["smax"], smin=p["smin"],
                                    F_prop=p["F_prop"], F_Coulomb=p["F_Coulomb"], F_Stribeck=p["F_Stribeck"],
                                    fexp=p["fexp"], v_small=p["v_small"], s0=p["s0"], v0=p["v0"])
    return Lowered(pins={"flange_a": f"{name}.flange_a", "flange_b": f"{name}.flange_b"})


# ----------------------------------------------------------------------------- compliant

_TWO = {"a": "flange_a", "b": "flange_b"}


def _two_pins(name):
    return {pin: f"{name}.{el}" for pin, el in _TWO.items()}


@lowers("Spring")
def _spring(net, name, b):
    net.spring(name, c=b.params["k"], rel0=b.params["s_rel0"])
    return Lowered(pins=_two_pins(name))


@lowers("RotSpring")
def _rot_spring(net, name, b):
    net.spring(name, c=b.params["c"], rel0=b.params["phi_rel0"])
    return Lowered(pins=_two_pins(name))


@lowers("Damper", "RotDamper")
def _damper(net, name, b):
    net.damper(name, d=b.params["d"])
    return Lowered(pins=_two_pins(name))


@lowers("SpringDamper", "RotSpringDamper")
def _spring_damper(net, name, b):
    p = b.params
    net.spring_damper(name, c=p["k"] if "k" in p else p["c"], d=p["d"])
    return Lowered(pins=_two_pins(name))


# ----------------------------------------------------------------------------- ground, sources

@lowers("Fixed", "RotFixed")
def _fixed(net, name, b):
    net.fixed(name, b.params["s0"] if "s0" in b.params else b.params["phi0"])
    return Lowered(pins={"flange": f"{name}.flange"})


@lowers("Force", "Torque")
def _force(net, name, b):
    net.force(name)
    return Lowered(pins={"flange": f"{name}.flange"}, inputs={0: name})


# ----------------------------------------------------------------------------- friction

@lowers("Brake", "RotBrake")
def _brake(net, name, b):
    p = b.params
    if p.get("fn_max") is None:
        _unsupported(b, "the regularized nflow brake law (no fn_max) is not ported yet; give fn_max for the "
                        "event-driven MSL brake")
    extra = {"small": p["v_small"]} if "v_small" in p else {}
    net.brake(name, fn_max=p["fn_max"], mu_pos=_mu_table(p), peak=p["peak"], cgeo=p["cgeo"], **extra)
    return Lowered(pins={"flange": f"{name}.flange_a"}, inputs={0: name})


@lowers("Clutch")
def _clutch(net, name, b, connected_inputs=()):
    p = b.params
    if 0 not in connected_inputs:
        _unsupported(b, "the regularized nflow clutch law (fn unconnected) is not ported yet; connect fn for "
                        "the event-driven MSL clutch")
    net.clutch(name, fn_max=p["fn_max"], mu_pos=_mu_table(p), peak=p["peak"], cgeo=p["cgeo"])
    return Lowered(pins=_two_pins(name), inputs={0: name})


# ----------------------------------------------------------------------------- sensors

@lowers("PositionSensor", "AngleSensor")
def _position_sensor(net, name, b):
    return Lowered(pins={"flange": None}, sensors={0: ("pos", "flange", None)})


@lowers("SpeedSensor", "RotSpeedSensor")
def _speed_sensor(net, name, b):
    return Lowered(pins={"flange": None}, sensors={0: ("vel", "flange", None)})


# nflow's relative sensors output pin a minus pin b
@lowers("RelPositionSensor", "RelAngleSensor")
def _rel_position_sensor(net, name, b):
    return Lowered(pins={"a": None, "b": None}, sensors={0: ("pos_rel", "a", "b")})


@lowers("RelSpeedSensor", "RelRotSpeedSensor")
def _rel_speed_sensor(net, name, b):
    return Lowered(pins={"a": None, "b": None}, sensors={0: ("vel_rel", "a", "b")})


_PROBE_KIND = {"translational": {"pos": "s", "vel": "v"}, "rotational": {"pos": "phi", "vel": "w"}}


# ----------------------------------------------------------------------------- assembly

class IslandPart:
    """One island as a continuous part of the plan: its state slice, the signals that
    drive it (read from the signal store at each evaluation) and its event log."""

    def __init__(self, island, names: dict, ctx, S):
        self.island = island
        self.key = min(island.element_names)   # stable identity of the island
        self.names = names          # network element name -> block id
        self.ctx, self.S = ctx, S
        self.n_states = len(island.x0)
        self.x0 = np.array(island.x0, dtype=float)
        self.x = self.x0.copy()
        self.feeds = []             # (island input index, signal slot)

    def feed(self, element: str, slot):
        if slot is not None:
            self.feeds.append((self.island.input_index(element), slot))

    def load(self, x):
        self.x = x

    def _fill(self):
        u, S = self.island.inputs, self.S
        for k, slot in self.feeds:
            value = S[slot]
            u[k] = value if isinstance(value, float) else float(np.ravel(value)[0])

    def derivative(self, t, x):
        self._fill()
        return self.island.derivative(t, x)

    def event_functions(self, t, x):
        self._fill()
        return self.island.event_functions(t, x)

    def relation_values(self, t, x):
        self._fill()
        return self.island.relation_values(t, x)

    def _log(self, start: int):
        for ev in self.island.events[start:]:
            self.ctx.events.append({"t": float(ev.t), "block": self.names.get(ev.element, ev.element),
                                    "kind": ev.kind, "from": ev.from_, "to": ev.to})

    def handle_events(self, t, x, fired):
        self._fill()
        start = len(self.island.events)
        x = self.island.handle_events(t, x, fired)
        self._log(start)
        return x

    def initialize(self, t, x):
        self._fill()
        x = self.island.initialize(t, x)
        self._log(0)
        return x

    def next_time_event(self, t):
        return self.island.next_time_event(t)


@dataclass
class Member:
    """What one acausal block contributes: its island part (carried by one block per
    island), the part's sensors and feeds."""

    part: IslandPart | None  # None for sensors
    owner: bool
    lowered: Lowered
    readers: dict            # output port -> zero-argument reader of the sensor value


def lower(diagram, ctx, S) -> dict:
    """block index -> Member for every acausal block of ``diagram``."""
    # canonical order (ids, then pins): the networks, and so every float operation on them,
    # do not depend on the order of blocks or connections in the JSON
    acausal = sorted((b for b in diagram.blocks if b.type.acausal), key=lambda b: b.id)
    if not acausal:
        return {}
    connected = {(w.dst, w.dst_port) for w in diagram.wires}
    nets: dict = {}
    lowered: dict = {}
    element_names = {}
    for b in acausal:
        rule = LOWERING.get(b.type.type)
        if rule is None:
            _unsupported(b, "this acausal block is not simulated yet")
        domain = b.type.domain
        if domain not in _PROBE_KIND:
            _unsupported(b, f"the {domain} domain is not simulated yet")
        net = nets.setdefault(domain, Network(domain))
        name = _element_name(b)
        element_names[name] = b.id
        args = (net, name, b)
        if rule is _clutch:
            lowered[b.index] = rule(*args, connected_inputs={p for (i, p) in connected if i == b.index})
        else:
            lowered[b.index] = rule(*args)
    node_pin = _join(diagram, lowered)
    blocks = diagram.blocks
    for link in sorted(diagram.links, key=lambda k: sorted([(blocks[k.a].id, k.a_pin), (blocks[k.b].id, k.b_pin)])):
        a = lowered[link.a].pins.get(link.a_pin)
        b_ = lowered[link.b].pins.get(link.b_pin)
        if a is not None and b_ is not None:
            nets[diagram.blocks[link.a].type.domain].connect(a, b_)
    islands = [isl for net in nets.values() for isl in net.build()]
    members = {}
    for isl in islands:
        part = IslandPart(isl, element_names, ctx, S)
        owner = True
        for b in acausal:
            if _element_name(b) not in isl.element_names:
                continue
            members[b.index] = Member(part, owner, lowered[b.index], {})
            owner = False
    # sensors read the node they are attached to; a relative sensor may span two islands
    parts = {id(m.part.island): m.part for m in members.values()}
    for b in acausal:
        low = lowered[b.index]
        if not low.sensors:
            continue
        readers = {}
        for port, (kind, pin, other) in low.sensors.items():
            refs = [node_pin.get((b.index, p)) for p in (pin, other) if p is not None]
            if any(r is None for r in refs):
                raise SimulationError("sensor_unattached", f"sensor {b.id!r} is not connected to any mechanical "
                                      "element", block=b.id, path=b.path)
            readers[port] = _reader(b.type.domain, kind, [parts[id(_island_of(islands, r))] for r in refs], refs)
        members[b.index] = Member(None, False, low, readers)
    return members


def _reader(domain: str, kind: str, parts: list, refs: list):
    """A zero-argument reader of a sensor output: absolute, or the first pin minus the
    second (each read from its own island)."""
    names = _PROBE_KIND[domain]
    absolute = names["pos" if kind in ("pos", "pos_rel") else "vel"]
    probes = [(part, part.island.probe(absolute, ref)) for part, ref in zip(parts, refs)]
    ctx = parts[0].ctx
    if len(probes) == 1:
        (part, probe), = probes
        return lambda: probe(ctx.t, part.x)
    (pa, fa), (pb, fb) = probes
    return lambda: fa(ctx.t, pa.x) - fb(ctx.t, pb.x)


def _element_name(b) -> str:
    """The network element of block ``b``: its id (so messages name it), '.'-free."""
    return b.id if "." not in b.id else f"{b.id.replace('.', '_')}#{b.index}"


def _island_of(islands, ref: str):
    element = ref.split(".")[0]
    return next(isl for isl in islands if element in isl.element_names)


def _join(diagram, lowered) -> dict:
    """(block index, pin) -> a network pin in the same node (None when only sensors meet)."""
    parent = {}

    def find(k):
        while parent.setdefault(k, k) != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for link in diagram.links:
        ra, rb = find((link.a, link.a_pin)), find((link.b, link.b_pin))
        if ra != rb:
            parent[rb] = ra
    ref_of_root = {}
    for i, low in lowered.items():
        for pin, ref in low.pins.items():
            if ref is not None:
                ref_of_root.setdefault(find((i, pin)), ref)
    return {(i, pin): ref_of_root.get(find((i, pin))) for i, low in lowered.items() for pin in low.pins}
