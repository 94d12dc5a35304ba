"""Lower a diagram's acausal mechanical blocks onto ``Network``s and hand each island to
the engine as a continuous part.

Each block type has a lowering rule (``LOWERING``): which network element(s) it becomes,
which of its pins is which element pin, which signal input drives which element, and
which probe each sensor output reads. Pins joined by physical connections become one
node; sensors own no element and read the node they are attached to.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import DiagramError, SimulationError
from . import acausal as acausal_network
from . import electrical, thermal  # noqa: F401  (importing them registers their element classes)
from . import planar
from .acausal import DOMAINS, ELEMENTS
from .electrical import EMF_ELEMENT
from .network import Network
from .nodes import join_pins


@dataclass
class Lowered:
    pins: dict = field(default_factory=dict)     # block pin -> network pin 'element.pin' (None: a sensor pin)
    inputs: dict = field(default_factory=dict)   # block input port -> element whose input it drives
    sensors: dict = field(default_factory=dict)  # output port -> (probe kind, block pin, other block pin | None)
    probes: dict = field(default_factory=dict)   # circuit sensors: output port -> (kind, target, other | None)


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

_ONE = {"flange": "flange"}
_TWO = {"a": "flange_a", "b": "flange_b"}


def _pins(name, pins):
    return {pin: f"{name}.{el}" for pin, el in pins.items()}


# A body's initial position/speed left at the manifest default 0 is a start value, not a
# constraint: a prescribed motion or a rigid tie to another body decides it.
_START_VALUES = {"s0", "v0", "phi0", "w0"}


def _rule(method, pins, param_map, *, signal=False):
    """A lowering: call ``net.<method>(name, **kwargs)`` with ``kwargs`` taken from the
    block's params by ``param_map`` (network keyword -> block param); ``signal``: input 0
    drives the element."""
    bodies = method in ("mass", "mass_with_weight", "inertia")

    def value(key, v):
        return None if bodies and key in _START_VALUES and v == 0.0 else v

    def lower(net, name, b):
        p = b.params
        getattr(net, method)(name, **{kw: value(key, p[key]) for kw, key in param_map.items() if key in p})
        return Lowered(pins=_pins(name, pins), inputs={0: name} if signal else {})
    return lower


# table: block type -> (network method, pins, network keyword -> block param, input-driven)
_TABLE = {
    "Mass": ("mass", _ONE, {"m": "m", "s0": "s0", "v0": "v0"}, False),
    "SlidingMass": ("mass", _ONE, {"m": "m", "s0": "s0", "v0": "v0"}, False),  # L is geometric only
    "MassWithWeight": ("mass_with_weight", _ONE, {"m": "m", "g": "g", "s0": "s0", "v0": "v0"}, False),
    "Inertia": ("inertia", _ONE, {"J": "J", "phi0": "phi0", "w0": "w0"}, False),
    "Spring": ("spring", _TWO, {"c": "k", "rel0": "s_rel0"}, False),
    "RotSpring": ("spring", _TWO, {"c": "c", "rel0": "phi_rel0"}, False),
    "Damper": ("damper", _TWO, {"d": "d"}, False),
    "RotDamper": ("damper", _TWO, {"d": "d"}, False),
    "SpringDamper": ("spring_damper", _TWO, {"c": "k", "d": "d"}, False),
    "RotSpringDamper": ("spring_damper", _TWO, {"c": "c", "d": "d"}, False),
    "ElastoGap": ("elasto_gap", _TWO, {"c": "c", "d": "d", "s_rel0": "s_rel0"}, False),
    "ElastoBacklash": ("elasto_backlash", _TWO, {"c": "c", "b": "b", "d": "d", "phi_rel0": "phi_rel0"}, False),
    "Friction": ("regularized_friction", _ONE, {"Fc": "Fc", "v_eps": "vEps"}, False),
    "BearingFriction": ("regularized_friction", _ONE, {"Fc": "tau_c", "v_eps": "w_eps"}, False),
    "Freewheel": ("freewheel", _TWO, {"d": "d", "w_eps": "w_eps"}, False),
    "LinearSpeedDependentForce": ("linear_speed_force", _ONE, {"d": "d"}, False),
    "LinearSpeedDependentTorque": ("linear_speed_force", _ONE, {"d": "d"}, False),
    "QuadraticSpeedDependentForce": ("quadratic_speed_force", _ONE, {"d": "d"}, False),
    "QuadraticSpeedDependentTorque": ("quadratic_speed_force", _ONE, {"d": "d"}, False),
    "Fixed": ("fixed", _ONE, {"position": "s0"}, False),
    "RotFixed": ("fixed", _ONE, {"position": "phi0"}, False),
    "Force": ("force", _ONE, {}, True),
    "Torque": ("force", _ONE, {}, True),
    "Force2": ("force2", _TWO, {}, True),
    "Torque2": ("force2", _TWO, {}, True),
    "ConstantForce": ("constant_force", _ONE, {"F": "F"}, False),
    "ConstantTorque": ("constant_force", _ONE, {"F": "tau"}, False),
    "SineForce": ("sine_force", _ONE, {"amplitude": "Amplitude", "frequency": "Frequency", "phase": "Phase"},
                  False),
    "RampForce": ("ramp_force", _ONE, {"slope": "Slope", "start_time": "StartTime"}, False),
    "ExpSineForce": ("exp_sine_force", _ONE, {"amplitude": "Amplitude", "frequency": "Frequency",
                                              "damping": "Damping", "phase": "Phase"}, False),
    "TrapezoidForce": ("trapezoid_force", _ONE, {"amplitude": "Amplitude", "rising": "Rising", "width": "Width",
                                                 "falling": "Falling", "period": "Period"}, False),
    "Speed": ("speed", _ONE, {"s0": "s0"}, True),
    "RotSpeed": ("speed", _ONE, {"s0": "phi0"}, True),
    "ConstantSpeed": ("constant_speed", _ONE, {"v": "v", "s0": "s0"}, False),
    "ConstantRotSpeed": ("constant_speed", _ONE, {"v": "w", "s0": "phi0"}, False),
    "Accelerate": ("accelerate", _ONE, {"s0": "s0", "v0": "v0"}, True),
    "RotAccelerate": ("accelerate", _ONE, {"s0": "phi0", "v0": "w0"}, True),
    "IdealGear": ("gear", _TWO, {"ratio": "ratio"}, False),
    "Lever": ("gear", _TWO, {"ratio": "ratio"}, False),
    "Pulley": ("gear", _TWO, {"ratio": "ratio"}, False),
    "Rod": ("rod", _TWO, {"ratio": "ratio"}, False),
}
for _src, _dst in (("SineForce", "SineTorque"), ("RampForce", "RampTorque"), ("ExpSineForce", "ExpSineTorque"),
                   ("TrapezoidForce", "TrapezoidTorque")):
    _TABLE[_dst] = _TABLE[_src]
for _type, (_method, _pin_map, _params, _driven) in _TABLE.items():
    LOWERING[_type] = _rule(_method, _pin_map, _params, signal=_driven)


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


# ----------------------------------------------------------------------------- friction

@lowers("Brake", "RotBrake")
def _brake(net, name, b):
    p = b.params
    pins = {"flange": f"{name}.flange"}
    if p.get("fn_max") is None:   # nflow's regularized law: the input is the peak force/torque
        net.regularized_brake(name, v_eps=p["vEps"] if "vEps" in p else p["w_eps"])
        return Lowered(pins=pins, inputs={0: name})
    extra = {"small": p["v_small"]} if "v_small" in p else {}
    net.brake(name, fn_max=p["fn_max"], mu_pos=_mu_table(p), peak=p["peak"], cgeo=p["cgeo"], **extra)
    return Lowered(pins={"flange": f"{name}.flange_a"}, inputs={0: name})


@lowers("Clutch")
def _clutch(net, name, b, connected_inputs=()):
    p = b.params
    if 0 not in connected_inputs:   # nflow's smooth law without a normal-force input
        net.regularized_clutch(name, tau_max=p["tau_max"], w_eps=p["w_eps"])
        return Lowered(pins=_pins(name, _TWO))
    net.clutch(name, fn_max=p["fn_max"], mu_pos=_mu_table(p), peak=p["peak"], cgeo=p["cgeo"])
    return Lowered(pins=_pins(name, _TWO), inputs={0: name})


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


_PROBE_KIND = {"translational": {"pos": "s", "vel": "v", "acc": "a"},
               "rotational": {"pos": "phi", "vel": "w", "acc": "a"}}
# a sensor's time derivative is the next kind (a driven flange needs it, engine.rates)
_RATE_OF = {"pos": "vel", "vel": "acc", "pos_rel": "vel_rel", "vel_rel": "acc_rel"}
_ABSOLUTE = {"pos": "pos", "pos_rel": "pos", "vel": "vel", "vel_rel": "vel", "acc": "acc", "acc_rel": "acc"}


# ----------------------------------------------------------------------------- assembly

class IslandPart:
    """One island as a continuous part of the plan: its state slice, the signals that
    drive it (read from the signal store at each evaluation), the values it takes from
    coupled islands (an EMF's shaft speed, its current) and its event log."""

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
        self.couplings = []         # (island input index, reader of another island)
        self.refresh_rates = None   # fills island.input_rates (engine.rates), when the island needs them

    def feed(self, element: str, slot):
        if slot is not None:
            self.feeds.append((self.island.input_index(element), slot))

    def couple(self, index: int, reader):
        self.couplings.append((index, reader))

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
        for k, read in self.couplings:
            u[k] = read()
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


# EMF / TranslationalEMF: electrical pins in the circuit, the flange in the mechanical network
_EMF_TYPES = ("EMF", "TranslationalEMF")
_SHAFT = "#shaft"


def lower(diagram, ctx, S, input_slots) -> dict:
    """block index -> Member for every acausal block of ``diagram``; ``input_slots[i]``:
    the signal slot each input port of block ``i`` reads (None: unconnected)."""
    # canonical order (ids, then pins): the networks, and so every float operation on them,
    # do not depend on the order of blocks or connections in the JSON
    acausal = sorted((b for b in diagram.blocks if b.type.acausal), key=lambda b: b.id)
    if not acausal:
        return {}
    connected = {(w.dst, w.dst_port) for w in diagram.wires}
    nets: dict = {}
    circuit = acausal_network.Network()
    lowered: dict = {}
    element_names = {}
    emfs = []
    for b in acausal:
        name = _element_name(b)
        element_names[name] = b.id
        if b.type.type in ELEMENTS or b.type.type in _EMF_TYPES:
            lowered[b.index] = _lower_element(circuit, name, b)
            if b.type.type in _EMF_TYPES:
                net = nets.setdefault(b.type.domain, Network(b.type.domain))
                net.force(name + _SHAFT)
                element_names[name + _SHAFT] = b.id
                lowered[b.index].pins["flange"] = f"{name}{_SHAFT}.flange"
                emfs.append((b, name))
            continue
        if b.type.domain == planar.DOMAIN:   # one planar network; its islands are its mechanisms
            net = nets.setdefault(planar.DOMAIN, planar.Network())
            lowered[b.index] = Lowered(**net.add(name, b))
            continue
        rule = LOWERING.get(b.type.type)
        if rule is None:
            _unsupported(b, "this acausal block is not simulated yet")
        domain = b.type.domain
        if domain not in _PROBE_KIND:
            _unsupported(b, f"the {domain} domain is not simulated yet")
        net = nets.setdefault(domain, Network(domain))
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
        if a is None or b_ is None:
            continue
        domain = blocks[link.a].type.pins.get(link.a_pin, blocks[link.a].type.domain)
        (circuit if domain in DOMAINS else nets[domain]).connect(a, b_)
    islands = [isl for net in nets.values() for isl in net.build()] + _build_circuits(circuit, acausal)
    parts = [IslandPart(isl, element_names, ctx, S) for isl in islands]
    part_of = {name: part for part in parts for name in part.island.element_names}
    members = {}
    owned = set()
    # one block per island carries its part; an EMF (in two islands) never does
    for b in sorted(acausal, key=lambda b: b.type.type in _EMF_TYPES):
        part = part_of.get(_element_name(b))
        if part is None:
            continue
        members[b.index] = Member(part, id(part) not in owned and b.type.type not in _EMF_TYPES,
                                  lowered[b.index], {})
        owned.add(id(part))
    for b in acausal:   # the signals that drive the islands
        part = part_of.get(_element_name(b))
        slots = input_slots[b.index]
        for port, element in lowered[b.index].inputs.items():
            if port < len(slots) and part is not None:
                part.feed(element, slots[port])
    for b, name in emfs:
        _couple_emf(b, name, part_of[name], part_of[name + _SHAFT], ctx)
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
LOWERED_TYPES = tuple(LOWERING) + tuple(ELEMENTS) + _EMF_TYPES + planar.TYPES


def _lower_element(circuit, name, b) -> Lowered:
    """An electrical/thermal block (or an EMF's electrical side) as a circuit element."""
    cls = ELEMENTS.get(b.type.type) or EMF_ELEMENT
    el = cls(name, b.params)
    domains = {pin: b.type.pins.get(pin, "electrical") for pin in cls.pins}
    circuit.add(el, domains)
    probes = {port: (kind, f"{name}.{a}", f"{name}.{o}" if o else None) for port, (kind, a, o) in cls.outputs.items()}
    return Lowered(pins={pin: f"{name}.{pin}" for pin in cls.pins}, inputs={0: name} if cls.inputs else {},
                   probes=probes)


def _build_circuits(circuit, acausal) -> list:
    """The circuit islands, eliminated at once where they have no modes; an error names its
    block (and param) with a JSON pointer."""
    by_name = {_element_name(b): b for b in acausal}
    try:
        islands = circuit.build()
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
                  of_state=(part, pick) if pick is not None and not (part.feeds or part.couplings) else None,
                  reads=tuple(sorted({slot for k, slot in part.feeds if k in needed})))


def _couple_emf(b, name, circuit_part, shaft_part, ctx):
    """The EMF's back-emf reads the shaft speed; the shaft's torque (force) reads the
    current. The speed must be a linear function of the shaft's states (an inertia or a
    mass on it), otherwise speed and current would form an algebraic loop."""
    k = float(b.params["k"])
    shaft = shaft_part.island
    kind = _PROBE_KIND[b.type.domain]["vel"]
    if shaft.probe_linear(kind, f"{name}{_SHAFT}.flange") is None:
        raise SimulationError("emf_algebraic_loop", f"block {b.id!r}: the speed of its flange is not a state of "
                              "the mechanical network (no inertia or mass on the shaft): the back-emf and the "
                              "current form an algebraic loop", block=b.id, path=b.path)
    speed = shaft.probe(kind, f"{name}{_SHAFT}.flange")
    current = circuit_part.island.probe("unknown", f"{name}.i")
    circuit_part.couple(circuit_part.island.input_index(name), lambda: speed(ctx.t, shaft_part.x))

    def torque():
        circuit_part.fill()
        return k * current(ctx.t, circuit_part.x)
    shaft_part.couple(shaft.input_index(name + _SHAFT), torque)


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
    return Reader(read, pure=linear is not None, linear=linear)


def linear_reader(parts: list, terms: list):
    """What a sensor reader computes when every probe it reads is linear in its island's
    state (``Island.probe_linear``): a tuple of ``(part, i, k, d)``, the value being
    ``float(k * x[i] + d)`` of ``part``'s state (no ``+ d`` when d is None) for one term,
    the first minus the second for two (a relative sensor); None otherwise. The reader
    is then pure (no cache, no solve), and ``linear_values`` gives its values on a whole
    matrix of states."""
    if any(term is None for term in terms):
        return None
    return tuple((part,) + tuple(term) for part, term in zip(parts, terms))


def linear_values(linear: tuple, columns) -> np.ndarray:
    """The values of a linear reader (``linear_reader``) on many states at once:
    ``columns(part, i)`` is the 1-D array of state ``i`` of ``part`` over the samples.
    The same floating-point operations as the reader, element-wise."""
    out = []
    for part, i, k, d in linear:
        col = k * columns(part, i)
        out.append(col if d is None else col + d)
    return out[0] if len(out) == 1 else out[0] - out[1]


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
