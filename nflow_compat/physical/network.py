"""1-D mechanical networks (translational or rotational) with MSL stick-slip friction.

Build a :class:`Network` from elements and pin connections, then :meth:`Network.build`
splits it into :class:`Island` objects (connected components).  Each island is a hybrid
system for :func:`nflow_compat.engine.hybrid.integrate_hybrid`:

* state ``x = [q_0..q_{n-1}, v_0..v_{n-1}]``: one position and one velocity per *degree of
  freedom* (a group of rigidly joined bodies; its coordinate is the centre position of its
  first body, see :attr:`Island.state_names`);
* ``derivative``: accelerations and the unknown stuck forces come from one small KKT system
  per set of locked friction elements ``[[M, G^T], [G, 0]] [a; sa] = [F; 0]`` (the
  multiplier of ``a_rel = 0`` IS MSL's path parameter ``sa`` of a locked element).  The
  matrices depend only on which elements are locked and are cached;
* ``event_functions``: the MSL relations that can change the committed discrete state,
  written ``g > 0`` (breakaway ``sa > f0_max``, slide end ``v > 0``, start-phase hysteresis
  ``sa > f0``, room to the stops, normal force ``fn > 0``);
* ``handle_events``: Modelica's event iteration (``pre`` values, iterate to a fixed point)
  including the inner mixed system ``locked <-> sa <-> start flags`` and the inelastic
  re-initialisation at hard stops;
* inputs: ``island.inputs`` (an array the caller fills before each evaluation) or
  ``island.input_fn(t, x) -> array`` or per-element ``signal=`` constants/callables given
  at build time.  ``island.input_names`` says which slot drives what.

Sign conventions are MSL's: a cut force acts on the component; a relative element's
quantities are ``b - a``; a friction force opposes its relative motion.
"""
from __future__ import annotations

import math
from collections import namedtuple
from typing import Callable

import numpy as np

from ..errors import DiagramError, SimulationError
from . import friction as fr
from .friction import FREE, MODE_NAMES, UNKNOWN, FrictionState, StribeckStopLaw, TableFrictionLaw

PhysicalEvent = namedtuple("PhysicalEvent", "t element kind from_ to")

_DOMAINS = {
    "translational": {"pos": "s", "vel": "v", "acc": "a", "force": "f", "mass": "m"},
    "rotational": {"pos": "phi", "vel": "w", "acc": "a", "force": "tau", "mass": "J"},
}

MAX_EVENT_ITERATIONS = 50
MAX_MIXED_ITERATIONS = 50


class _Elem:
    __slots__ = ("name", "kind", "pins", "params", "signal", "breakpoints")

    def __init__(self, name, kind, pins, params, signal=None, breakpoints=()):
        self.name, self.kind, self.pins, self.params = name, kind, pins, params
        self.signal, self.breakpoints = signal, tuple(float(b) for b in breakpoints)


def _num(name, value, param, *, minimum=None, positive=False):
    try:
        val = float(value)
    except (TypeError, ValueError):
        raise DiagramError("bad_param", f"{name}: {param} must be a number", block=name,
                           param=param) from None
    if not math.isfinite(val):
        raise DiagramError("bad_param", f"{name}: {param} must be finite", block=name, param=param)
    if positive and not val > 0:
        raise DiagramError("bad_param", f"{name}: {param} must be > 0", block=name, param=param)
    if minimum is not None and val < minimum:
        raise DiagramError("bad_param", f"{name}: {param} must be >= {minimum:g}", block=name,
                           param=param)
    return val


class Network:
    """Collects elements and connections of one physical domain."""

    def __init__(self, domain: str = "translational"):
        if domain not in _DOMAINS:
            raise DiagramError("bad_domain", f"unknown mechanical domain {domain!r}")
        self.domain = domain
        self.elements: dict[str, _Elem] = {}
        self.connections: list[tuple[str, str]] = []

    # -- elements ----------------------------------------------------------------------
    def _add(self, name, kind, pins, params, signal=None, breakpoints=()):
        if not isinstance(name, str) or not name or "." in name:
            raise DiagramError("bad_name", f"element name {name!r} must be a non-empty string without '.'")
        if name in self.elements:
            raise DiagramError("duplicate_element", f"element {name!r} defined twice", block=name)
        self.elements[name] = _Elem(name, kind, pins, params, signal, breakpoints)
        return name

    def _domain_is(self, dom, name):
        if self.domain != dom:
            raise DiagramError("domain_mismatch", f"{name}: element belongs to the {dom} domain, "
                               f"network is {self.domain}", block=name)

    def mass(self, name, m=1.0, L=0.0, s0=None, v0=None):
        """Translational Mass (flanges at s -+ L/2)."""
        self._domain_is("translational", name)
        m = _num(name, m, "m", positive=True)
        L = _num(name, L, "L", minimum=0.0)
        return self._add(name, "body", ("flange_a", "flange_b"),
                         dict(mass=m, L=L, s0=None if s0 is None else _num(name, s0, "s0"),
                              v0=None if v0 is None else _num(name, v0, "v0")))

    def inertia(self, name, J=1.0, phi0=None, w0=None):
        """Rotational Inertia."""
        self._domain_is("rotational", name)
        J = _num(name, J, "J", positive=True)
        return self._add(name, "body", ("flange_a", "flange_b"),
                         dict(mass=J, L=0.0, s0=None if phi0 is None else _num(name, phi0, "phi0"),
                              v0=None if w0 is None else _num(name, w0, "w0")))

    def mass_with_stop_and_friction(self, name, m=1.0, *, L=0.0, smax=25.0, smin=-25.0,
                                    F_prop=1.0, F_Coulomb=5.0, F_Stribeck=10.0, fexp=2.0,
                                    v_small=1e-3, s0=0.0, v0=0.0):
        """Translational MassWithStopAndFriction (MSL defaults)."""
        self._domain_is("translational", name)
        m = _num(name, m, "m", positive=True)
        law = StribeckStopLaw(name, F_prop=_num(name, F_prop, "F_prop"),
                              F_Coulomb=_num(name, F_Coulomb, "F_Coulomb"),
                              F_Stribeck=_num(name, F_Stribeck, "F_Stribeck"),
                              fexp=_num(name, fexp, "fexp"), smin=_num(name, smin, "smin"),
                              smax=_num(name, smax, "smax"), L=_num(name, L, "L"),
                              v_small=_num(name, v_small, "v_small"))
        if not smax > smin:
            raise DiagramError("bad_param", f"{name}: smax must be > smin", block=name, param="smax")
        return self._add(name, "stopmass", ("flange_a", "flange_b"),
                         dict(mass=m, L=law.L, s0=_num(name, s0, "s0"), v0=_num(name, v0, "v0"),
                              law=law))

    def spring(self, name, c, rel0=0.0):
        return self._add(name, "spring_damper", ("flange_a", "flange_b"),
                         dict(c=_num(name, c, "c", minimum=0.0), d=0.0, rel0=_num(name, rel0, "rel0")))

    def damper(self, name, d):
        return self._add(name, "spring_damper", ("flange_a", "flange_b"),
                         dict(c=0.0, d=_num(name, d, "d", minimum=0.0), rel0=0.0))

    def spring_damper(self, name, c, d, rel0=0.0):
        return self._add(name, "spring_damper", ("flange_a", "flange_b"),
                         dict(c=_num(name, c, "c", minimum=0.0), d=_num(name, d, "d", minimum=0.0),
                              rel0=_num(name, rel0, "rel0")))

    def fixed(self, name, position=0.0):
        """Fixed flange (MSL Fixed: s0 / phi0)."""
        return self._add(name, "fixed", ("flange",), dict(pos=_num(name, position, "position")))

    def force(self, name, signal=None, *, use_support=False, breakpoints=()):
        """Force (translational) / Torque (rotational) source: input pushes ``flange`` +."""
        pins = ("flange", "support") if use_support else ("flange",)
        return self._add(name, "source", pins, dict(use_support=bool(use_support)), signal, breakpoints)

    torque = force

    def brake(self, name, signal=None, *, fn_max=1.0, mu_pos=((0.0, 0.5),), peak=1.0, cgeo=1.0,
              small=None, use_support=False, breakpoints=()):
        """Brake of either domain: friction of the flange against ground (or ``support``).

        ``small`` is v_small (translational default 1e-3) or w_small (rotational 1e10).
        """
        if small is None:
            small = 1e-3 if self.domain == "translational" else 1e10
        law = TableFrictionLaw(name, kind="brake", table=mu_pos, peak=peak, cgeo=cgeo,
                               fn_max=fn_max, small=_num(name, small, "small"))
        pins = ("flange_a", "flange_b", "support") if use_support else ("flange_a", "flange_b")
        return self._add(name, "brake", pins, dict(law=law, use_support=bool(use_support)),
                         signal, breakpoints)

    def support_friction(self, name, *, f_pos=((0.0, 1.0),), peak=1.0, v_small=1e-3,
                         use_support=False):
        """Translational SupportFriction: table force against ground, no normal force."""
        self._domain_is("translational", name)
        law = TableFrictionLaw(name, kind="support", table=f_pos, peak=peak,
                               small=_num(name, v_small, "v_small"))
        pins = ("flange_a", "flange_b", "support") if use_support else ("flange_a", "flange_b")
        return self._add(name, "brake", pins, dict(law=law, use_support=bool(use_support)))

    def clutch(self, name, signal=None, *, fn_max=1.0, mu_pos=((0.0, 0.5),), peak=1.0, cgeo=1.0,
               w_small=1e10, breakpoints=()):
        """Rotational Clutch between flange_a and flange_b (w_rel = w_b - w_a)."""
        self._domain_is("rotational", name)
        law = TableFrictionLaw(name, kind="clutch", table=mu_pos, peak=peak, cgeo=cgeo,
                               fn_max=fn_max, small=_num(name, w_small, "w_small"))
        return self._add(name, "clutch", ("flange_a", "flange_b"), dict(law=law), signal, breakpoints)

    _ALIASES = {"brake": {"flange": "flange_a"}}

    def _pin(self, ref: str):
        if not isinstance(ref, str) or "." not in ref:
            raise DiagramError("bad_pin", f"pin reference {ref!r} must look like 'element.pin'")
        name, pin = ref.split(".", 1)
        el = self.elements.get(name)
        if el is None:
            raise DiagramError("unknown_element", f"connection to unknown element {name!r}", block=name)
        pin = self._ALIASES.get(el.kind, {}).get(pin, pin)
        if pin not in el.pins:
            raise DiagramError("bad_pin", f"{name} has no pin {pin!r} (pins: {', '.join(el.pins)})",
                               block=name)
        return f"{name}.{pin}"

    def connect(self, *pins: str):
        """Join pins (``'element.pin'``) into one node; undirected, any number of pins."""
        refs = [self._pin(p) for p in pins]
        for other in refs[1:]:
            self.connections.append((refs[0], other))

    # -- compile -----------------------------------------------------------------------
    def build(self) -> list["Island"]:
        """Split into islands (connected components) and compile each."""
        parent: dict[str, str] = {}

        def find(p):
            while parent[p] != p:
                parent[p] = parent[parent[p]]
                p = parent[p]
            return p

        def union(a, b):
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[rb] = ra

        for el in self.elements.values():
            for pin in el.pins:
                parent[f"{el.name}.{pin}"] = f"{el.name}.{pin}"
        for a, b in self.connections:
            union(a, b)
        for el in self.elements.values():
            if el.kind == "brake":               # flange_a and flange_b are one point
                union(f"{el.name}.flange_a", f"{el.name}.flange_b")
        # components: elements linked through shared nodes
        cparent: dict[str, str] = {name: name for name in self.elements}

        def cfind(n):
            while cparent[n] != n:
                cparent[n] = cparent[cparent[n]]
                n = cparent[n]
            return n

        node_owner: dict[str, str] = {}
        for el in self.elements.values():
            for pin in el.pins:
                node = find(f"{el.name}.{pin}")
                if node in node_owner:
                    ra, rb = cfind(node_owner[node]), cfind(el.name)
                    if ra != rb:
                        cparent[rb] = ra
                else:
                    node_owner[node] = el.name
        groups: dict[str, list[_Elem]] = {}
        for el in self.elements.values():
            groups.setdefault(cfind(el.name), []).append(el)
        islands = []
        for idx, els in enumerate(groups.values()):
            islands.append(_compile_island(self.domain, els, find, f"island{idx}"))
        return islands


# --------------------------------------------------------------------------------------

class _WeightedUF:
    """Union-find with offsets: pos(x) = pos(root) + d(x)."""

    def __init__(self):
        self.parent, self.d = {}, {}

    def add(self, x):
        if x not in self.parent:
            self.parent[x], self.d[x] = x, 0.0

    def find(self, x):
        path = []
        while self.parent[x] != x:
            path.append(x)
            x = self.parent[x]
        root = x
        # compress: d relative to root
        acc = 0.0
        for node in reversed(path):
            acc += self.d[node]
            self.d[node] = acc
            self.parent[node] = root
        return root

    def offset(self, x):
        self.find(x)
        return self.d[x] if self.parent[x] != x else 0.0

    def link(self, x, y, w):
        """Require pos(y) = pos(x) + w.  Returns False on a contradiction."""
        rx, ry = self.find(x), self.find(y)
        dx, dy = self.offset(x), self.offset(y)
        if rx == ry:
            return abs((dy - dx) - w) <= 1e-12 * max(1.0, abs(w), abs(dx), abs(dy))
        # pos(ry) = pos(y) - dy = pos(x) + w - dy = pos(rx) + dx + w - dy
        self.parent[ry] = rx
        self.d[ry] = dx + w - dy
        return True


class _FrictionSlot:
    """A compiled friction element: its law, state, kinematics and input slot."""

    __slots__ = ("name", "law", "ia", "ib", "G", "s_dof", "s_off", "u_index", "fn_max",
                 "state", "watch")

    def __init__(self, name, law, ia, ib, G, s_dof, s_off, u_index):
        self.name, self.law, self.ia, self.ib, self.G = name, law, ia, ib, G
        self.s_dof, self.s_off, self.u_index = s_dof, s_off, u_index
        self.fn_max = getattr(law, "fn_max", 1.0)
        self.state = FrictionState()
        self.watch = ()


def _compile_island(domain, els, pin_find, label):
    names = _DOMAINS[domain]
    uf = _WeightedUF()
    uf.add("G")
    bodies = [el for el in els if el.kind in ("body", "stopmass")]
    for el in els:
        for pin in el.pins:
            uf.add("N:" + pin_find(f"{el.name}.{pin}"))
    for b in bodies:
        uf.add("B:" + b.name)
        half = b.params["L"] / 2.0
        for pin, off in (("flange_a", -half), ("flange_b", half)):
            if not uf.link("B:" + b.name, "N:" + pin_find(f"{b.name}.{pin}"), off):
                raise SimulationError("inconsistent_rigid_connection",
                                      f"{b.name}: its flanges are rigidly joined at incompatible "
                                      "positions (a loop of rigid connections)", block=b.name)
    for el in els:
        if el.kind == "fixed":
            if not uf.link("G", "N:" + pin_find(f"{el.name}.flange"), el.params["pos"]):
                raise SimulationError("conflicting_fixed",
                                      f"{el.name}: fixes a node that is already held at another "
                                      "position", block=el.name)
    ground_root = uf.find("G")
    # degrees of freedom: groups with a body and no ground
    dof_of_root: dict[str, int] = {}
    primary: list[_Elem] = []
    for b in bodies:
        r = uf.find("B:" + b.name)
        if r == ground_root:
            continue
        if r not in dof_of_root:
            dof_of_root[r] = len(primary)
            primary.append(b)
    n = len(primary)
    mass = np.zeros(n)
    for b in bodies:
        r = uf.find("B:" + b.name)
        if r != ground_root:
            mass[dof_of_root[r]] += b.params["mass"]

    def locate(item):
        """(dof, offset) or (-1, constant position) of a node/body item."""
        r = uf.find(item)
        if r == ground_root:
            return -1, uf.offset(item) - uf.offset("G")
        if r not in dof_of_root:
            return None
        dof = dof_of_root[r]
        return dof, uf.offset(item) - uf.offset("B:" + primary[dof].name)

    def node(el, pin):
        loc = locate("N:" + pin_find(f"{el.name}.{pin}"))
        if loc is None:
            pins = sorted({f"{e.name}.{p}" for e in els for p in e.pins
                           if pin_find(f"{e.name}.{p}") == pin_find(f"{el.name}.{pin}")})
            raise SimulationError("massless_node",
                                  f"node {{{', '.join(pins)}}} has no mass/inertia and no fixed "
                                  "reference: its motion is undetermined (add a mass or a Fixed)",
                                  block=el.name)
        return loc

    # initial conditions
    q0 = np.zeros(n)
    v0 = np.zeros(n)
    q_set = [None] * n
    v_set = [None] * n
    for b in bodies:
        loc = locate("B:" + b.name)
        s0, w0 = b.params["s0"], b.params["v0"]
        if loc[0] < 0:
            if (s0 is not None and abs(s0 - loc[1]) > 1e-12 * max(1.0, abs(s0))) or (w0 not in (None, 0.0)):
                raise SimulationError("inconsistent_initial_conditions",
                                      f"{b.name} is rigidly fixed but its initial "
                                      f"{names['pos']}/{names['vel']} say otherwise", block=b.name)
            continue
        dof, off = loc
        for val, store, arr, what in ((s0, q_set, q0, names["pos"]), (w0, v_set, v0, names["vel"])):
            if val is None:
                continue
            cand = val - off if what == names["pos"] else val
            if store[dof] is not None and abs(store[dof] - cand) > 1e-9 * max(1.0, abs(cand)):
                raise SimulationError("inconsistent_initial_conditions",
                                      f"{b.name}: initial {what} contradicts a rigidly joined body",
                                      block=b.name)
            store[dof] = cand
            arr[dof] = cand

    # inputs
    input_names, signals, breakpoints = [], [], []
    for el in els:
        if el.kind in ("source", "brake", "clutch") and not (el.kind == "brake" and
                                                             not el.params["law"].uses_normal_force):
            port = names["force"] if el.kind == "source" else "f_normalized"
            input_names.append(f"{el.name}.{port}")
            signals.append(el.signal)
            breakpoints.extend(el.breakpoints)
    n_in = len(input_names)
    u_index = {name.split(".")[0]: k for k, name in enumerate(input_names)}

    Kq = np.zeros((n, n))
    Kv = np.zeros((n, n))
    c0 = np.zeros(n)
    Bu = np.zeros((n, n_in))
    frictions: list[_FrictionSlot] = []
    compliant = {}

    def rel_row(la, lb):
        r = np.zeros(n)
        k0 = 0.0
        if lb[0] >= 0:
            r[lb[0]] += 1.0
        k0 += lb[1]
        if la[0] >= 0:
            r[la[0]] -= 1.0
        k0 -= la[1]
        return r, k0

    for el in els:
        p = el.params
        if el.kind == "spring_damper":
            la, lb = node(el, "flange_a"), node(el, "flange_b")
            r, k0 = rel_row(la, lb)
            Kq -= p["c"] * np.outer(r, r)
            Kv -= p["d"] * np.outer(r, r)
            c0 -= p["c"] * (k0 - p["rel0"]) * r
            compliant[el.name] = (r, k0, p["c"], p["d"], p["rel0"])
        elif el.kind == "source":
            lf = node(el, "flange")
            if lf[0] >= 0:
                Bu[lf[0], u_index[el.name]] += 1.0
            if p["use_support"]:
                ls = node(el, "support")
                if ls[0] >= 0:
                    Bu[ls[0], u_index[el.name]] -= 1.0
        elif el.kind in ("brake", "clutch", "stopmass"):
            law = p["law"]
            if el.kind == "clutch":
                la, lb = node(el, "flange_a"), node(el, "flange_b")
            elif el.kind == "brake":
                lb = node(el, "flange_a")
                la = node(el, "support") if p["use_support"] else (-1, 0.0)
            else:
                la, lb = (-1, 0.0), locate("B:" + el.name)
            r, _ = rel_row(la, lb)
            if not np.any(r):
                raise SimulationError("degenerate_friction",
                                      f"{el.name}: both sides of the friction element are rigidly "
                                      "tied together (or both fixed), so it can never slide",
                                      block=el.name)
            s_dof, s_off = (lb if el.kind == "stopmass" else (-1, 0.0))
            frictions.append(_FrictionSlot(el.name, law, la[0], lb[0], r, s_dof, s_off,
                                           u_index.get(el.name, -1)))
    for el in els:          # remaining nodes must be determined too (open spring ends, ...)
        for pin in el.pins:
            node(el, pin)

    pin_loc = {}
    for el in els:
        for pin in el.pins:
            pin_loc[f"{el.name}.{pin}"] = node(el, pin)
    body_loc = {b.name: locate("B:" + b.name) for b in bodies}
    dof_names = [b.name for b in primary]
    return Island(domain=domain, label=label, mass=mass, q0=q0, v0=v0, Kq=Kq, Kv=Kv, c0=c0,
                  Bu=Bu, frictions=frictions, input_names=input_names, signals=signals,
                  breakpoints=sorted(set(breakpoints)), dof_names=dof_names, pin_loc=pin_loc,
                  body_loc=body_loc, compliant=compliant, elements=[el.name for el in els])


class Island:
    """A connected mechanical network compiled to a hybrid system (see module doc)."""

    def __init__(self, *, domain, label, mass, q0, v0, Kq, Kv, c0, Bu, frictions, input_names,
                 signals, breakpoints, dof_names, pin_loc, body_loc, compliant, elements):
        self.domain = domain
        self.label = label
        self._names = _DOMAINS[domain]
        self.n = len(mass)
        self.mass = mass
        self._minv = 1.0 / mass if self.n else mass
        self.x0 = np.concatenate((q0, v0))
        self._Kq, self._Kv, self._c0, self._Bu = Kq, Kv, c0, Bu
        self._Klin = np.hstack((Kq, Kv)) if self.n else np.zeros((0, 0))
        self.frictions = frictions
        self._fidx = {f.name: i for i, f in enumerate(frictions)}
        self.input_names = list(input_names)
        self.inputs = np.zeros(len(input_names))
        self._signals = list(signals)
        self._breakpoints = np.asarray(breakpoints, dtype=float)
        self.input_fn: Callable | None = None
        if any(s is not None for s in signals):
            self._default_inputs()
        self.dof_names = dof_names
        self.state_names = ([f"{d}.{self._names['pos']}" for d in dof_names]
                            + [f"{d}.{self._names['vel']}" for d in dof_names])
        self._pin_loc = pin_loc
        self._body_loc = body_loc
        self._compliant = compliant
        self.element_names = elements
        self.events: list[PhysicalEvent] = []
        self._kkt_cache: dict = {}
        self._commit([FrictionState() for _ in frictions])

    # -- inputs ------------------------------------------------------------------------
    def _default_inputs(self):
        sig = self._signals
        consts = [k for k, s in enumerate(sig) if s is not None and not callable(s)]
        calls = [(k, s) for k, s in enumerate(sig) if callable(s)]
        for k in consts:
            self.inputs[k] = float(sig[k])
        if calls:
            def fn(t, x, calls=calls, u=self.inputs):
                for k, s in calls:
                    u[k] = s(t)
                return u
            self.input_fn = fn

    def input_index(self, element: str) -> int:
        """Slot of ``element``'s input signal in :attr:`inputs`."""
        for k, name in enumerate(self.input_names):
            if name.split(".")[0] == element:
                return k
        raise KeyError(element)

    def _u(self, t, x):
        if self.input_fn is not None:
            u = self.input_fn(t, x)
            if u is not self.inputs:
                self.inputs[:] = u
        return self.inputs

    def next_time_event(self, t: float) -> float:
        bp = self._breakpoints
        if bp.size == 0:
            return math.inf
        k = np.searchsorted(bp, t, side="right")
        return float(bp[k]) if k < bp.size else math.inf

    # -- KKT -----------------------------------------------------------------------------
    def _kkt(self, locked: tuple):
        hit = self._kkt_cache.get(locked)
        if hit is not None:
            return hit
        n, minv = self.n, self._minv
        idx = [i for i, lk in enumerate(locked) if lk]
        if not idx:
            A = np.diag(minv)
            Lam = np.zeros((0, n))
        else:
            GL = np.array([self.frictions[i].G for i in idx])
            GM = GL * minv
            S = GM @ GL.T
            sv = np.linalg.svd(S, compute_uv=False)
            if sv[-1] <= 1e-12 * max(1.0, sv[0]):
                names = ", ".join(self.frictions[i].name for i in idx)
                raise SimulationError(
                    "singular_island",
                    f"{self.label}: the stuck friction elements {{{names}}} lock the same motion "
                    "twice (redundant constraints): the sticking forces are undetermined",
                    block=self.frictions[idx[0]].name)
            Lam = np.linalg.solve(S, GM)
            A = np.diag(minv) - (minv[:, None] * GL.T) @ Lam
        entry = (A, Lam, idx)
        if len(self._kkt_cache) > 4096:
            self._kkt_cache.clear()
        self._kkt_cache[locked] = entry
        return entry

    def _base_force(self, x, u):
        F = self._Klin @ x + self._c0
        if u.size:
            F = F + self._Bu @ u
        return F

    def _solve(self, x, u, branches, locked):
        """Accelerations and sa per friction element for the given branches."""
        n = self.n
        v = x[n:]
        F = self._base_force(x, u)
        fl = self.frictions
        fn_all = [0.0] * len(fl)
        for i, f in enumerate(fl):
            fn = f.fn_max * u[f.u_index] if f.u_index >= 0 else 0.0
            fn_all[i] = fn
            br = branches[i]
            if br >= fr.START_F:
                F = F - f.law.force(br, float(f.G @ v), fn) * f.G
        A, Lam, idx = self._kkt(locked)
        a = A @ F
        sa = [0.0] * len(fl)
        if idx:
            lam = Lam @ F
            for j, i in enumerate(idx):
                sa[i] = float(lam[j])
        for i, f in enumerate(fl):
            br = branches[i]
            if br != fr.LOCKED:
                _, f0_max = f.law.thresholds(fn_all[i])
                sa[i] = fr.sa_from_arel(br, float(f.G @ a), f0_max)
        return a, sa, fn_all

    # -- committed discrete state -----------------------------------------------------------
    def _commit(self, states):
        branches, locked = [], []
        for f, st in zip(self.frictions, states):
            f.state = st
            free = st.mode == FREE
            lk = fr.is_locked(free, st.mode, st.start_forward, st.start_backward)
            locked.append(lk)
            branches.append(fr.branch_of(free, lk, st.start_forward, st.start_backward, st.mode))
            f.watch = fr.watched_relations(f.law, st)
        self._branches = branches
        self._locked = tuple(locked)
        self._sliding = [(i, b) for i, b in enumerate(branches) if b >= fr.START_F]
        self._A = None          # KKT of this mode set, built on first use
        self._need_sa = any(code in (fr.REL_SA_FMAX_POS, fr.REL_SA_F0_POS, fr.REL_SA_FMAX_NEG,
                                     fr.REL_SA_F0_NEG) for f in self.frictions for code in f.watch)
        self._n_events = sum(len(f.watch) for f in self.frictions)

    # -- hybrid-system interface ---------------------------------------------------------
    def derivative(self, t, x):
        x = np.asarray(x, dtype=float)
        n = self.n
        u = self._u(t, x)
        v = x[n:]
        F = self._Klin @ x + self._c0
        if u.size:
            F += self._Bu @ u
        fl = self.frictions
        for i, br in self._sliding:
            f = fl[i]
            fn = f.fn_max * u[f.u_index] if f.u_index >= 0 else 0.0
            F -= f.law.force(br, float(f.G @ v), fn) * f.G
        A = self._A
        if A is None:
            A = self._A = self._kkt(self._locked)[0]
        return np.concatenate((v, A @ F))

    def event_functions(self, t, x):
        if self._n_events == 0:
            return np.zeros(0)
        x = np.asarray(x, dtype=float)
        n = self.n
        u = self._u(t, x)
        v = x[n:]
        fl = self.frictions
        sa = None
        if self._need_sa:
            a, sa, _ = self._solve(x, u, self._branches, self._locked)
        out = []
        for i, f in enumerate(fl):
            if not f.watch:
                continue
            fn = f.fn_max * u[f.u_index] if f.u_index >= 0 else 0.0
            vr = float(f.G @ v)
            f0, f0_max = f.law.thresholds(fn)
            for code in f.watch:
                if code == fr.REL_V_POS:
                    out.append(vr)
                elif code == fr.REL_V_NEG:
                    out.append(-vr)
                elif code == fr.REL_FN:
                    out.append(fn)
                elif code == fr.REL_ROOM_F:
                    out.append(f.law.smax_eff - (x[f.s_dof] + f.s_off))
                elif code == fr.REL_ROOM_B:
                    out.append((x[f.s_dof] + f.s_off) - f.law.smin_eff)
                elif code == fr.REL_SA_FMAX_POS:
                    out.append(sa[i] - f0_max)
                elif code == fr.REL_SA_F0_POS:
                    out.append(sa[i] - f0)
                elif code == fr.REL_SA_FMAX_NEG:
                    out.append(-sa[i] - f0_max)
                else:  # REL_SA_F0_NEG
                    out.append(-sa[i] - f0)
        return np.array(out)

    def relation_values(self, t, x):
        """Committed relation values at a restart: Modelica semantics, ``g == 0`` is false."""
        return (self.event_functions(t, x) > 0.0).astype(float)

    def event_labels(self):
        """Human names of the current event functions (same order as event_functions)."""
        names = {fr.REL_V_POS: "v>0", fr.REL_V_NEG: "v<0", fr.REL_FN: "fn>0",
                 fr.REL_ROOM_F: "s<smax", fr.REL_ROOM_B: "s>smin", fr.REL_SA_FMAX_POS: "sa>f0_max",
                 fr.REL_SA_F0_POS: "sa>f0", fr.REL_SA_FMAX_NEG: "sa<-f0_max", fr.REL_SA_F0_NEG: "sa<-f0"}
        return [f"{f.name}:{names[c]}" for f in self.frictions for c in f.watch]

    def _position(self, f, x):
        return float(x[f.s_dof] + f.s_off) if f.s_dof >= 0 else f.s_off

    def _iteration_step(self, x, u, pre, initial):
        """One Modelica event-iteration step with the pre values ``pre`` held fixed."""
        n = self.n
        v = x[n:]
        fl = self.frictions
        m = len(fl)
        vr, fn, free, room_f, room_b, thr = [], [], [], [], [], []
        for f in fl:
            vr.append(float(f.G @ v))
            fnn = f.fn_max * u[f.u_index] if f.u_index >= 0 else 0.0
            fn.append(fnn)
            if f.law.has_stops:
                s = self._position(f, x)
                rf, rb = s < f.law.smax_eff, s > f.law.smin_eff
            else:
                rf = rb = True
            room_f.append(rf)
            room_b.append(rb)
            free.append(f.law.is_free(fnn, rf, rb))
            thr.append(f.law.thresholds(fnn))
        sf = [p.start_forward for p in pre]
        sb = [p.start_backward for p in pre]
        history = [(tuple(sf), tuple(sb))]
        for _ in range(MAX_MIXED_ITERATIONS):
            locked = tuple(fr.is_locked(free[i], pre[i].mode, sf[i], sb[i]) for i in range(m))
            branches = [fr.branch_of(free[i], locked[i], sf[i], sb[i], pre[i].mode) for i in range(m)]
            _, sa, _ = self._solve(x, u, branches, locked)
            new = [fr.start_flags(pre[i], sa[i], vr[i], fl[i].law.small, room_f[i], room_b[i],
                                  thr[i][0], thr[i][1], initial) for i in range(m)]
            nsf = [a for a, _ in new]
            nsb = [b for _, b in new]
            if nsf == sf and nsb == sb:
                break
            key = (tuple(nsf), tuple(nsb))
            if key in history:
                # A cycle: the stuck force exceeds the breakaway bound while the start
                # branch's acceleration is zero to round-off (f0 == f0_max with peak = 1,
                # an event located a hair past the threshold).  Sticking is inadmissible,
                # so take the union of the flags over the cycle (start sliding); a wrong
                # start phase ends at once through its own hysteresis relation.
                cyc = history[history.index(key):]
                sf = [any(c[0][i] for c in cyc) for i in range(m)]
                sb = [any(c[1][i] for c in cyc) for i in range(m)]
                break
            history.append(key)
            sf, sb = nsf, nsb
        else:
            raise SimulationError("mixed_system_limit",
                                  f"{self.label}: the stick/slip decision did not settle in "
                                  f"{MAX_MIXED_ITERATIONS} iterations")
        states, reinit = [], []
        for i, f in enumerate(fl):
            mode = fr.next_mode(free[i], pre[i].mode, sf[i], sb[i], vr[i], room_f[i], room_b[i])
            stopped = fr.stop_indicator(f.law, self._position(f, x)) if f.law.has_stops else 0
            if stopped != 0 and pre[i].stopped == 0 and not initial:
                reinit.append((i, stopped))
            states.append(FrictionState(mode, sf[i], sb[i], stopped))
        return states, reinit

    def _event_iteration(self, t, x, initial=False):
        pre = [f.state for f in self.frictions]
        if initial:
            pre = [FrictionState(UNKNOWN, False, False,
                                 fr.stop_indicator(f.law, self._position(f, x))) for f in self.frictions]
        before = [f.state for f in self.frictions]
        stops = []
        for it in range(MAX_EVENT_ITERATIONS):
            u = self._u(t, x)
            states, reinit = self._iteration_step(x, u, pre, initial and it == 0)
            for i, stopped in reinit:
                f = self.frictions[i]
                target = f.law.smin_eff if stopped < 0 else f.law.smax_eff
                x[f.s_dof] = target - f.s_off
                x[self.n + f.s_dof] = 0.0
                stops.append((i, stopped, pre[i].mode))
            if states == pre and not reinit:
                break
            pre = states
        else:
            changing = [f.name for f, a, b in zip(self.frictions, pre, states) if a != b]
            raise SimulationError("event_iteration_limit",
                                  f"{self.label}: event iteration at t={t:.17g} did not converge "
                                  f"in {MAX_EVENT_ITERATIONS} steps (still changing: "
                                  f"{', '.join(changing) or 'reinit'})")
        return before, states, stops

    def initialize(self, t0, x0):
        """Initial event iteration (MSL ``initial()``); also checks the stop assertions."""
        x = np.array(x0, dtype=float)
        n = self.n
        for f in self.frictions:
            if f.law.has_stops:
                fr.check_initial_stop(f.law, self._position(f, x), float(x[n + f.s_dof]))
        self.events = []
        self._kkt_cache = {}
        _, states, _ = self._event_iteration(t0, x, initial=True)
        self._commit(states)
        self._A = self._kkt(self._locked)[0]
        return x

    def handle_events(self, t, x, fired=()):
        x = np.array(x, dtype=float)
        before, states, stops = self._event_iteration(t, x)
        for i, stopped, mode_then in stops:
            self.events.append(PhysicalEvent(t, self.frictions[i].name, "stop",
                                             MODE_NAMES[mode_then], "stop"))
        for f, a, b in zip(self.frictions, before, states):
            if a.mode != b.mode:
                self.events.append(PhysicalEvent(t, f.name, "mode", MODE_NAMES[a.mode],
                                                 MODE_NAMES[b.mode]))
        self._commit(states)
        self._A = self._kkt(self._locked)[0]
        return x

    # -- reading -------------------------------------------------------------------------
    def _loc(self, target):
        if target in self._pin_loc:
            return self._pin_loc[target]
        if target in self._body_loc:
            return self._body_loc[target]
        raise KeyError(f"{target!r} is neither a pin ('element.pin') nor a body of {self.label}")

    def position(self, target, x):
        dof, off = self._loc(target)
        return float(x[dof] + off) if dof >= 0 else float(off)

    def speed(self, target, x):
        dof, _ = self._loc(target)
        return float(x[self.n + dof]) if dof >= 0 else 0.0

    def accelerations(self, t, x):
        """Accelerations of all degrees of freedom in the committed modes."""
        return np.asarray(self.derivative(t, x))[self.n:]

    def friction_state(self, element) -> FrictionState:
        return self.frictions[self._fidx[element]].state

    def friction_force(self, element, t, x):
        """Friction force/torque f (MSL sign: positive opposes positive relative motion)."""
        x = np.asarray(x, dtype=float)
        i = self._fidx[element]
        f = self.frictions[i]
        u = self._u(t, x)
        br = self._branches[i]
        fn = f.fn_max * u[f.u_index] if f.u_index >= 0 else 0.0
        if br == fr.LOCKED:
            _, sa, _ = self._solve(x, u, self._branches, self._locked)
            return sa[i]
        if br == fr.FREE_BRANCH:
            return 0.0
        return f.law.force(br, float(f.G @ x[self.n:]), fn)

    def path_parameter(self, element, t, x):
        """MSL ``sa`` of a friction element in the committed modes."""
        x = np.asarray(x, dtype=float)
        _, sa, _ = self._solve(x, self._u(t, x), self._branches, self._locked)
        return sa[self._fidx[element]]

    def thresholds(self, element, t, x):
        """``(f0, f0_max)`` of a friction element at (t, x)."""
        f = self.frictions[self._fidx[element]]
        u = self._u(t, np.asarray(x, dtype=float))
        fn = f.fn_max * u[f.u_index] if f.u_index >= 0 else 0.0
        return f.law.thresholds(fn)

    def probe(self, kind: str, target: str, other: str | None = None) -> Callable:
        """A reader ``(t, x) -> float`` for a sensor output.

        kinds: ``s``/``phi`` (position of a pin or body centre), ``v``/``w``, ``a``,
        ``s_rel``/``phi_rel`` and ``v_rel``/``w_rel`` (``other`` minus ``target`` for two
        pins, or flange_b minus flange_a of a two-flange element), ``mode``,
        ``startForward``, ``startBackward``, ``locked``, ``free`` (committed discrete
        state), ``f``/``tau`` (friction or spring force), ``sa``, ``lossPower``.
        """
        nm = self._names
        if kind in ("s", "phi"):
            loc = self._loc(target)
            return lambda t, x, loc=loc: float(x[loc[0]] + loc[1]) if loc[0] >= 0 else float(loc[1])
        if kind in ("v", "w"):
            dof = self._loc(target)[0]
            return lambda t, x, d=dof, n=self.n: float(x[n + d]) if d >= 0 else 0.0
        if kind == "a":
            dof = self._loc(target)[0]
            return lambda t, x, d=dof: float(self.accelerations(t, x)[d]) if d >= 0 else 0.0
        if kind in ("s_rel", "phi_rel", "v_rel", "w_rel"):
            if other is None:
                a, b = f"{target}.flange_a", f"{target}.flange_b"
            else:
                a, b = target, other
            if kind in ("s_rel", "phi_rel"):
                pa, pb = self.probe(nm["pos"], a), self.probe(nm["pos"], b)
            else:
                pa, pb = self.probe(nm["vel"], a), self.probe(nm["vel"], b)
            return lambda t, x: pb(t, x) - pa(t, x)
        if kind in ("mode", "startForward", "startBackward", "locked", "free"):
            i = self._fidx[target]
            f = self.frictions[i]
            if kind == "mode":
                return lambda t, x: float(f.state.mode)
            if kind == "startForward":
                return lambda t, x: float(f.state.start_forward)
            if kind == "startBackward":
                return lambda t, x: float(f.state.start_backward)
            if kind == "locked":
                return lambda t, x: float(self._branches[i] == fr.LOCKED)
            return lambda t, x: float(f.state.mode == FREE)
        if kind in ("f", "tau"):
            if target in self._fidx:
                return lambda t, x: self.friction_force(target, t, x)
            if target in self._compliant:
                r, k0, c, d, rel0 = self._compliant[target]
                n = self.n
                return lambda t, x: float(c * (r @ x[:n] + k0 - rel0) + d * (r @ x[n:]))
            raise KeyError(f"{target!r} has no force output")
        if kind == "sa":
            return lambda t, x: self.path_parameter(target, t, x)
        if kind == "lossPower":
            i = self._fidx[target]
            f = self.frictions[i]
            return lambda t, x: self.friction_force(target, t, x) * float(f.G @ np.asarray(x)[self.n:])
        raise KeyError(f"unknown probe kind {kind!r}")
