"""Lower a diagram's acausal blocks onto networks and hand each island to the engine as a
continuous part.

Electrical, thermal and 1-D mechanical blocks are elements of the general layer
(``acausal.ELEMENTS``: ``electrical``, ``thermal``, ``mechanical``), planar ones of the planar
network. The mechanical sensors own no element (``SENSORS``): they read the node they are
attached to. Pins joined by physical connections become one node.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import DiagramError, SimulationError
from . import acausal as acausal_network
from . import electrical, mechanical, thermal  # noqa: F401  (importing them registers their element classes)
from . import planar
from .acausal import ELEMENTS
from .nodes import join_pins


@dataclass
class Lowered:
    pins: dict = field(default_factory=dict)     # block pin -> network pin 'element.pin' (None: a sensor pin)
    inputs: dict = field(default_factory=dict)   # block input port -> element whose input it drives
    sensors: dict = field(default_factory=dict)  # output port -> (probe kind, block pin, other block pin | None)
    probes: dict = field(default_factory=dict)   # circuit sensors: output port -> (kind, target, other | None)


def _unsupported(block, why):
    raise SimulationError("unsupported_block", f"block {block.id!r} ({block.type.type}): {why}",
                          block=block.id, path=block.path)


# ----------------------------------------------------------------------------- sensors

# The mechanical sensors own no element: they read the node their pins are on: type ->
# (pins, (probe kind, pin, other pin | None)); nflow's relative sensors output a minus b.
_SENSORS = {
    ("PositionSensor", "AngleSensor"): (("flange",), ("pos", "flange", None)),
    ("SpeedSensor", "RotSpeedSensor"): (("flange",), ("vel", "flange", None)),
    ("RelPositionSensor", "RelAngleSensor"): (("a", "b"), ("pos_rel", "a", "b")),
    ("RelSpeedSensor", "RelRotSpeedSensor"): (("a", "b"), ("vel_rel", "a", "b")),
}
SENSORS = {t: spec for types, spec in _SENSORS.items() for t in types}

_PROBE_KIND = {"translational": {"pos": "s", "vel": "v", "acc": "a"},
               "rotational": {"pos": "phi", "vel": "w", "acc": "a"}}
# a sensor's time derivative is the next kind (a driven flange needs it, engine.rates)
_RATE_OF = {"pos": "vel", "vel": "acc", "pos_rel": "vel_rel", "vel_rel": "acc_rel"}
_ABSOLUTE = {"pos": "pos", "pos_rel": "pos", "vel": "vel", "vel_rel": "vel", "acc": "acc", "acc_rel": "acc"}


# ----------------------------------------------------------------------------- assembly

class IslandPart:
    """One island as a continuous part of the plan: its state slice, the signals that
    drive it (read from the signal store at each evaluation) and its event log."""

    fresh_derivative = True      # an island computes a new derivative array per call

    def __init__(self, island, names: dict, ctx, S):
        self.island = island
        self.key = min(island.element_names)   # stable identity of the island
        self.names = names          # network element name -> block id
        self.ctx, self.S = ctx, S
        self.n_states = len(island.x0)
        self.x0 = np.array(island.x0, dtype=float)
        self.x = self.x0.copy()
        self.feeds = []             # (island input index, signal slot)
        self.refresh_rates = None   # fills island.input_rates (engine.rates), when the island needs them

    def feed(self, element: str, slot):
        if slot is not None:
            self.feeds.append((self.island.input_index(element), slot))

    def load(self, x):
        self.x = x

    @property
    def rate_inputs(self) -> list:
        """Island inputs whose signal's time derivative the island needs (a speed source's
        flange acceleration, a signal source's current into a capacitor)."""
        return [k for k, _ in self.feeds if k in self.island.rate_inputs]

    def fill(self):
        u, S = self.island.inputs, self.S
        for k, slot in self.feeds:
            value = S[slot]
            u[k] = value if isinstance(value, float) else float(np.ravel(value)[0])
        if self.refresh_rates is not None:
            self.refresh_rates()

    def derivative(self, t, x):
        self.fill()
        return self.island.derivative(t, x)

    def event_functions(self, t, x):
        self.fill()
        return self.island.event_functions(t, x)

    def relation_values(self, t, x):
        self.fill()
        return self.island.relation_values(t, x)

    def state_names(self) -> list | None:
        """(name, block id) of each state, where the island names them (else None)."""
        names = getattr(self.island, "state_names", None)
        return None if names is None else [(name, self.names.get(el, el)) for name, el in names()]

    def relation_blocks(self, t, x, relations) -> list:
        """The block of the element behind each event function of ``relations``."""
        self.fill()
        owners = getattr(self.island, "relation_elements", None)
        elements = owners(t, x) if owners is not None else []
        return [self.names.get(elements[i], elements[i]) if i < len(elements) else self.key for i in relations]

    def _log(self, start: int):
        for ev in self.island.events[start:]:
            self.ctx.events.append({"t": float(ev.t), "block": self.names.get(ev.element, ev.element),
                                    "kind": ev.kind, "from": ev.from_, "to": ev.to})

    def handle_events(self, t, x, fired):
        self.fill()
        start = len(self.island.events)
        x = self.island.handle_events(t, x, fired)
        self._log(start)
        return x

    def initialize(self, t, x):
        self.fill()
        x = self.island.initialize(t, x)
        self._log(0)
        self.ctx.warnings.extend(getattr(self.island, "start_warnings", list)())
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
    readers: dict            # output port -> the ``Reader`` of the sensor value
    rates: dict = field(default_factory=dict)   # output port -> the ``Reader`` of its time derivative
    rate_reads: tuple = ()   # signal slots whose rates those readers need (speed sources on the islands read)


def lower(diagram, ctx, S, input_slots) -> dict:
    """block index -> Member for every acausal block of ``diagram``; ``input_slots[i]``:
    the signal slot each input port of block ``i`` reads (None: unconnected)."""
    # canonical order (ids, then pins): the networks, and so every float operation on them,
    # do not depend on the order of blocks or connections in the JSON
    acausal = sorted((b for b in diagram.blocks if b.type.acausal), key=lambda b: b.id)
    if not acausal:
        return {}
    connected = {(w.dst, w.dst_port) for w in diagram.wires}
    circuit = acausal_network.Network()
    mechanisms = planar.Network()       # one planar network; its islands are its mechanisms
    lowered: dict = {}
    element_names = {}
    for b in acausal:
        name = _element_name(b)
        element_names[name] = b.id
        if b.type.type in ELEMENTS:
            cls = ELEMENTS[b.type.type].variant(b.params, {p for (i, p) in connected if i == b.index})
            lowered[b.index] = _lower_element(circuit, name, b, cls)
        elif b.type.domain == planar.DOMAIN:
            lowered[b.index] = Lowered(**mechanisms.add(name, b))
        elif b.type.type in SENSORS:
            pins, probe = SENSORS[b.type.type]
            lowered[b.index] = Lowered(pins=dict.fromkeys(pins), sensors={0: probe})
        else:
            _unsupported(b, "this acausal block is not simulated yet")
    node_pin = _join(diagram, lowered)
    blocks = diagram.blocks
    for link in sorted(diagram.links, key=lambda k: sorted([(blocks[k.a].id, k.a_pin), (blocks[k.b].id, k.b_pin)])):
        a = lowered[link.a].pins.get(link.a_pin)
        b_ = lowered[link.b].pins.get(link.b_pin)
        if a is None or b_ is None:
            continue
        domain = blocks[link.a].type.pins.get(link.a_pin, blocks[link.a].type.domain)
        (mechanisms if domain == planar.DOMAIN else circuit).connect(a, b_)
    islands = mechanisms.build() + _build_circuits(circuit, acausal, (diagram.rel_tol, diagram.abs_tol))
    parts = [IslandPart(isl, element_names, ctx, S) for isl in islands]
    part_of = {name: part for part in parts for name in part.island.element_names}
    members = {}
    owned = set()
    for b in acausal:      # one block per island carries its part
        part = part_of.get(_element_name(b))
        if part is None:
            continue
        members[b.index] = Member(part, id(part) not in owned, lowered[b.index], {})
        owned.add(id(part))
    for b in acausal:   # the signals that drive the islands
        part = part_of.get(_element_name(b))
        slots = input_slots[b.index]
        for port, element in lowered[b.index].inputs.items():
            if port < len(slots) and part is not None:
                part.feed(element, slots[port])
    # sensors read the node they are attached to; a relative sensor may span two islands
    by_island = {id(p.island): p for p in parts}
    for b in acausal:
        low = lowered[b.index]
        if low.probes:
            part = part_of[_element_name(b)]
            members[b.index].readers.update(
                {port: _circuit_reader(part, kind, target, other) for port, (kind, target, other) in low.probes.items()})
        if not low.sensors:
            continue
        readers, rates, sensed_parts = {}, {}, {}
        for port, (kind, pin, other) in low.sensors.items():
            refs = [node_pin.get((b.index, p)) for p in (pin, other) if p is not None]
            if any(r is None for r in refs):
                raise SimulationError("sensor_unattached", f"sensor {b.id!r} is not connected to any mechanical "
                                      "element", block=b.id, path=b.path)
            sensed = [by_island[id(_island_of(islands, r))] for r in refs]
            readers[port] = _reader(b.type.domain, kind, sensed, refs)
            rates[port] = _reader(b.type.domain, _RATE_OF[kind], sensed, refs)
            sensed_parts.update((id(p), p) for p in sensed)
        # an acceleration read on a driven flange is the rate of the signal driving it
        driving = tuple(sorted({slot for part in sensed_parts.values() for k, slot in part.feeds
                                if k in part.island.rate_inputs}))
        members[b.index] = Member(None, False, low, readers, rates, driving)
    return members


# every acausal block type that runs
LOWERED_TYPES = tuple(SENSORS) + tuple(ELEMENTS) + planar.TYPES


def _lower_element(circuit, name, b, cls) -> Lowered:
    """A block of the general layer as a network element."""
    el = cls(name, b.params)
    domains = {pin: b.type.pins.get(pin, "electrical") for pin in cls.pins}
    circuit.add(el, domains)
    probes = {port: (kind, f"{name}.{a}", f"{name}.{o}" if o else None) for port, (kind, a, o) in cls.outputs.items()}
    return Lowered(pins={pin: f"{name}.{pin}" for pin in cls.pins}, inputs={0: name} if cls.inputs else {},
                   probes=probes)


def _build_circuits(circuit, acausal, tolerances) -> list:
    """The circuit islands (their Newton solves weighted by the diagram's ``tolerances``),
    eliminated at once where they have no modes; an error names its block (and param) with a
    JSON pointer."""
    by_name = {_element_name(b): b for b in acausal}
    try:
        islands = circuit.build(tolerances)
        for island in islands:
            island.eliminate_now()
        return islands
    except (DiagramError, SimulationError) as err:
        b = by_name.get(err.block)
        if b is not None and err.path is None:
            err.block = b.id
            err.path = b.where(err.param)["path"]
        raise


@dataclass(frozen=True)
class Reader:
    """A sensor output's zero-argument ``read`` and what the engine may assume of it:
    ``pure``, it has no effect but a cache (solver stages may skip it); ``linear``, the
    linear terms in its islands' states that it computes (``linear_reader``), None if it
    is not linear; ``of_state``, ``(part, pick)`` where it is a function of time and its
    island's state alone, ``pick`` its values from the island's unknowns solved on many
    states (``DaeIsland.probe_pick``); ``reads``, the signal slots its value depends on
    directly (what drives the island, not through its states)."""
    read: Callable[[], float]
    pure: bool = False
    linear: tuple | None = None
    of_state: tuple | None = None
    reads: tuple = ()


def _circuit_reader(part, kind, target, other) -> Reader:
    """A circuit sensor's reader."""
    island = part.island
    probe = island.probe(kind, target, other)
    ctx = part.ctx

    def read():
        part.fill()
        return probe(ctx.t, part.x)
    # a function of time and the island's state alone (no signal drives the island): its
    # values at the grid states may be read after the run (engine.recording)
    pick = island.probe_pick(kind, target, other)
    needed = island.probe_inputs(kind, target, other)
    return Reader(read, pure=island.probes_pure,
                  of_state=(part, pick) if pick is not None and not part.feeds else None,
                  reads=tuple(sorted({slot for k, slot in part.feeds if k in needed})))


def _reader(domain: str, kind: str, parts: list, refs: list) -> Reader:
    """The reader of a sensor output: absolute, or the first pin minus the second (each
    read from its own island)."""
    absolute = _PROBE_KIND[domain][_ABSOLUTE[kind]]
    probes = [(part, part.island.probe(absolute, ref)) for part, ref in zip(parts, refs)]
    ctx = parts[0].ctx

    def value(part, probe):
        part.fill()   # driven and massless nodes read the current inputs
        return probe(ctx.t, part.x)

    if len(probes) == 1:
        (part, probe), = probes

        def read():
            return value(part, probe)
    else:
        (pa, fa), (pb, fb) = probes

        def read():
            return value(pa, fa) - value(pb, fb)
    linear = linear_reader(parts, [part.island.probe_linear(absolute, ref) for part, ref in zip(parts, refs)])
    # a value read from the solution (a massless flange, a prescribed speed) may follow what
    # drives its island right now: read after the blocks writing it
    reads = () if linear is not None else tuple(sorted({slot for part, ref in zip(parts, refs) for k, slot in part.feeds
                                                        if k in part.island.probe_inputs(absolute, ref)}))
    return Reader(read, pure=linear is not None, linear=linear, reads=reads)


def linear_reader(parts: list, terms: list):
    """What a sensor reader computes when every probe it reads is linear in its island's
    state (``DaeIsland.probe_linear``): a tuple of ``(part, i, k, d)``, the value being
    ``float(k * x[i] + d)`` of ``part``'s state (no ``+ d`` when d is None) for one term,
    the first minus the second for two (a relative sensor); None otherwise. The reader
    is then pure (no cache, no solve), and ``engine.recording`` computes its values on a
    whole matrix of states."""
    if any(term is None for term in terms):
        return None
    return tuple((part,) + tuple(term) for part, term in zip(parts, terms))


def _element_name(b) -> str:
    """The network element of block ``b``: its id (so messages name it), '.'-free."""
    return b.id if "." not in b.id else f"{b.id.replace('.', '_')}#{b.index}"


def _island_of(islands, ref: str):
    element = ref.split(".")[0]
    return next(isl for isl in islands if element in isl.element_names)


def _join(diagram, lowered) -> dict:
    """(block index, pin) -> a network pin in the same node (None when only sensors meet)."""
    links = [((link.a, link.a_pin), (link.b, link.b_pin)) for link in diagram.links]
    pins = {(i, pin) for i, low in lowered.items() for pin in low.pins} | {p for link in links for p in link}
    node_of = join_pins(sorted(pins), links)
    ref_of_node = {}
    for i, low in lowered.items():
        for pin, ref in low.pins.items():
            if ref is not None:
                ref_of_node.setdefault(node_of[(i, pin)], ref)
    return {(i, pin): ref_of_node.get(node_of[(i, pin)]) for i, low in lowered.items() for pin in low.pins}
