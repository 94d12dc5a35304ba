"""nflow's acausal translational and rotational libraries as network elements (MSL 4.1.0
Mechanics.Translational / Rotational semantics).

A flange carries the position ``s`` (``phi``) and the cut force ``f`` (``tau``) acting on
the element, MSL's sign: at a node the cut forces of the elements sum to zero; a mass's is
``m*der(v)``; a relative element's quantities are ``b - a``. Where nflow's documented sign
differs (Force2 / Torque2 push ``+F`` on ``a``) the element says so. Rigid connections
(Fixed, IdealGear, Lever, Pulley, Rod) are ties (``Element.ties``): the tied nodes are one
unknown, so a mass behind a gear is reflected as ``m*ratio^2`` and no constraint force
appears. A node has a speed unknown only when an element reads its speed, so a massless
node between springs is an algebraic position, one between dampers a first-order state.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import DiagramError, SimulationError
from . import elements as laws
from . import friction as fr
from .acausal import Element, Lin, element

_ONE = ("flange",)
_TWO = ("a", "b")
_FD_STEP = 1e-7     # relative step of the difference Jacobian of a force law
_NO_FORCE = (0.0,)


def _relative(s, pins, speed=True):
    """``(s_rel, v_rel)`` of a one-port (the flange against the ground) or a two-port
    (``b - a``), as :class:`Lin` (``v_rel`` 0 without ``speed``: a law that does not read
    it makes no speed unknowns)."""
    if len(pins) == 1:
        return s.position(pins[0]), (s.speed(pins[0]) if speed else Lin())
    a, b = pins
    return s.position(b) - s.position(a), (s.speed(b) - s.speed(a) if speed else Lin())


def push_force(s, pins, force: Lin):
    """The element's force ``f`` (MSL sign): a one-port's flange.f is ``f``; a two-port's
    flange_b.f is ``f`` and flange_a.f is ``-f`` (``f > 0`` is tension)."""
    s.push(pins[-1], force)
    if len(pins) == 2:
        s.push(pins[0], -force)


def link_start(s, pins):
    """A damping element's relative position starts at 0 (MSL's start value of ``s_rel``):
    a massless node it links to a placed one starts there."""
    if len(pins) == 2:
        s.start(s.position(pins[1]) - s.position(pins[0]), 0.0, rank=LINK_START)


def push_law(s, pins, law, inputs=(), *, speed=True, moded=False):
    """A non-linear force law ``law(s_rel, v_rel, u) -> f`` of the element's relative
    motion (see ``push_force`` for where ``f`` goes), with a difference Jacobian for the
    Newton iterations of islands that have algebraic unknowns; ``speed``: the law reads
    ``v_rel``; ``moded``: it also takes the element's branch (a switching element)."""
    if speed:
        link_start(s, pins)
    rel, speed = _relative(s, pins, speed)
    cols = sorted(set(rel.terms) | set(speed.terms))
    at = {col: j for j, col in enumerate(cols)}
    p_terms = [(at[col], coef) for col, coef in rel.items()]
    v_terms = [(at[col], coef) for col, coef in speed.items()]
    p0 = rel.const
    rows, weights = zip(*[s.pin_weight(pin) for pin in pins])
    factors = [-weights[0], weights[1]] if len(pins) == 2 else [weights[0]]

    def value(z, u, t, *branch):      # the residual on the rows, of a sequence of floats
        s_rel = p0
        for j, coef in p_terms:
            s_rel += coef * z[j]
        v_rel = 0.0
        for j, coef in v_terms:
            v_rel += coef * z[j]
        f = law(s_rel, v_rel, u, *branch)
        return [factor * f for factor in factors]

    def residual(z, u, t, *branch):
        def force(z, u, t):
            return np.array(value(z, u, t, *branch))
        f = force(z, u, t)
        return f, lambda: _difference_jacobian(force, z, u, t, f)
    s.nonlinear(list(rows), cols, residual, inputs=inputs, moded=moded, value=value)


def _difference_jacobian(fn, z, u, t, value):
    jac = np.zeros((value.size, z.size))
    for j in range(z.size):
        h = _FD_STEP * max(1.0, abs(z[j]))
        zh = z.copy()
        zh[j] += h
        jac[:, j] = (fn(zh, u, t) - value) / h
    return jac


# ----------------------------------------------------------------------------- bodies

# ranks of start values (Stamp.start): a body's default position and speed come before the
# rest position of a damping element, which places a massless node behind it
BODY_START, LINK_START = 1, 2


class _Body(Element):
    """``m*der(v) = flange.f`` (MSL Mass, Inertia); ``start_params``: its initial position
    and speed, fixed when not 0, else a start value that a prescribed motion or a rigidly
    tied body overrides (nflow's defaults are 0)."""
    pins = _ONE
    mass_param = "m"
    start_params = ("s0", "v0")

    def stamp(self, s):
        mass = self.param(self.mass_param, positive=True)
        if not math.isfinite(1.0 / mass):
            # so small that its inverse, and so its acceleration, overflows: the code the run would end with
            raise SimulationError("non_finite_state", f"{self.name}: the {'inertia' if self.mass_param == 'J' else 'mass'}"
                                  f" of this body ({mass:.3g}) is too small: its inverse, and so its acceleration, "
                                  "overflows double precision", block=self.name, param=self.mass_param)
        speed = s.speed("flange")
        s.push("flange", dt=mass * speed)
        self.extra(s, mass)
        s0, v0 = (self.param(name) for name in self.start_params)
        s.start(s.position("flange"), s0, rank=0 if s0 else BODY_START)
        s.start(speed, v0, rank=0 if v0 else BODY_START)

    def extra(self, s, mass):
        pass


@element
class Mass(_Body):
    type_name = "Mass"


@element
class SlidingMass(_Body):
    """A Mass (its length ``L`` is geometric only: nflow's block has one flange)."""
    type_name = "SlidingMass"


@element
class MassWithWeight(_Body):
    """A Mass with its weight ``-m*g`` on it (gravity along -s)."""
    type_name = "MassWithWeight"

    def extra(self, s, mass):
        s.push("flange", Lin(const=mass * self.param("g")))


@element
class Inertia(_Body):
    type_name, mass_param, start_params = "Inertia", "J", ("phi0", "w0")


# ----------------------------------------------------------------------------- compliant

class _Compliant(Element):
    """``f = c*(s_rel - rel0) + d*v_rel`` with ``s_rel = s_b - s_a`` (the parameters
    named by ``stiffness``, ``rest``, ``damping``; None: that term is absent)."""
    pins = _TWO
    stiffness: str | None = None
    rest: str | None = None
    damping: str | None = None

    def stamp(self, s):
        force = Lin()
        stiffness = self.param(self.stiffness, nonnegative=True) if self.stiffness else 0.0
        if stiffness:
            rest = self.param(self.rest) if self.rest else 0.0
            force = force + stiffness * (s.position(self.pins[1]) - s.position(self.pins[0]) - rest)
        damping = self.param(self.damping, nonnegative=True) if self.damping else 0.0
        if damping:    # (a zero damping reads no speed: its nodes need none)
            force = force + damping * (s.speed(self.pins[1]) - s.speed(self.pins[0]))
            link_start(s, self.pins)
        push_force(s, self.pins, force)


_COMPLIANT = {
    "Spring": {"stiffness": "k", "rest": "s_rel0"},
    "RotSpring": {"stiffness": "c", "rest": "phi_rel0"},
    "Damper": {"damping": "d"},
    "RotDamper": {"damping": "d"},
    "SpringDamper": {"stiffness": "k", "damping": "d"},
    "RotSpringDamper": {"stiffness": "c", "damping": "d"},
}
for _type, _attributes in _COMPLIANT.items():
    element(type(_type, (_Compliant,), {"type_name": _type, **_attributes}))


class _LinearSpeedForce(Element):
    """``flange.f = d*v`` (the flange is slowed by ``-d*v``: a damper to the ground)."""
    pins = _ONE

    def stamp(self, s):
        push_force(s, self.pins, self.param("d") * s.speed("flange"))


class _QuadraticSpeedForce(Element):
    """``flange.f = d*v*|v|``."""
    pins = _ONE

    def stamp(self, s):
        law = laws.QuadraticSpeed(self.param("d"))
        push_law(s, self.pins, lambda rel, speed, u: law.force(rel, speed, None, 0), speed=law.vel_dep)


for _type, _base in (("LinearSpeedDependentForce", _LinearSpeedForce),
                     ("LinearSpeedDependentTorque", _LinearSpeedForce),
                     ("QuadraticSpeedDependentForce", _QuadraticSpeedForce),
                     ("QuadraticSpeedDependentTorque", _QuadraticSpeedForce)):
    element(type(_type, (_base,), {"type_name": _type}))


class _RegularizedLaw(Element):
    """A smooth non-linear law of nflow (``laws``): ``make_law(element)`` gives the
    ``elements.Law``; a signal input, if any, is its ``u``."""
    make_law = None

    def stamp(self, s):
        law = type(self).make_law(self)
        inputs = [s.input(name) for name in self.inputs]
        if inputs:
            push_law(s, self.pins, lambda rel, speed, u: law.force(rel, speed, u[0], 0), inputs, speed=law.vel_dep)
        else:
            push_law(s, self.pins, lambda rel, speed, u: law.force(rel, speed, 0.0, 0), speed=law.vel_dep)


def _tanh_friction(peak, eps):
    return lambda el: laws.TanhFriction(el.param(peak), el.param(eps, positive=True))


_REGULARIZED = {
    # nflow Friction / BearingFriction: flange.f = Fc*tanh(v/eps) (no events)
    "Friction": (_ONE, (), _tanh_friction("Fc", "vEps")),
    "BearingFriction": (_ONE, (), _tanh_friction("tau_c", "w_eps")),
    # one-way clutch: a damper acting while a overruns b, blended over w_eps
    "Freewheel": (_TWO, (), lambda el: laws.Freewheel(el.param("d", nonnegative=True),
                                                       el.param("w_eps", positive=True))),
}
for _type, (_pins, _inputs, _make) in _REGULARIZED.items():
    element(type(_type, (_RegularizedLaw,), {"type_name": _type, "pins": _pins, "inputs": _inputs,
                                             "make_law": _make}))


class _RegularizedBrake(_RegularizedLaw):
    """nflow's Brake / RotBrake without ``fn_max``: the input ``f`` is the peak force,
    ``flange.f = f*tanh(v/eps)``."""
    pins, inputs = _ONE, ("f",)
    eps = "vEps"

    def make_law(self):
        return laws.TanhBrake(self.param(self.eps, positive=True))

    stick_slip = None      # the class of the block with fn_max (MSL's Brake)

    @classmethod
    def variant(cls, params, connected_inputs):
        return cls if params.get("fn_max") is None else cls.stick_slip


@element
class Clutch(_RegularizedLaw):
    """nflow's Clutch without a normal-force input: ``tau = tau_max*tanh(w_rel/w_eps)``
    (``w_rel = w_b - w_a``)."""
    type_name, pins = "Clutch", _TWO
    make_law = _tanh_friction("tau_max", "w_eps")

    stick_slip = None      # the class of the block with its fn input connected (MSL's Clutch)

    @classmethod
    def variant(cls, params, connected_inputs):
        return cls if 0 not in connected_inputs else cls.stick_slip


class _Contact(Element):
    """A compliant element with contact states (``elements.ElastoGap``,
    ``elements.ElastoBacklash``): the state is the contact mode, decided by the law's
    relations at the solution (events), and selects the branch of its force law."""
    pins, switching = _TWO, True

    def make_law(self):
        raise NotImplementedError

    def stamp(self, s):
        law = self.law = self.make_law()
        self.branches = tuple(sorted(law.mode_names))
        push_law(s, self.pins, lambda rel, speed, u, mode: law.force(rel, speed, 0.0, mode), speed=law.vel_dep,
                 moded=True)
        self._rel = s.position(self.pins[1]) - s.position(self.pins[0])

    def pre_start(self, view):
        return 0

    @property
    def start_branches(self) -> tuple:
        return self.branches if self.law.START is None else self.branches + (self.law.START,)

    def branch(self, pre, current, view):
        # Modelica's initial(): the first step of the start's event iteration solves with
        # the law's start-up form where it has one (ElastoBacklash's monotone law)
        return self.law.START if view.initial and self.law.START is not None else current

    def iterate(self, pre, current, view):
        return self.law.mode_from(view.value(self._rel))

    def relations(self, state, view):
        return list(self.law.relations(view.value(self._rel)))

    def committed(self, state, values):
        return list(self.law.mode_relations(state))

    def changes(self, before, after):
        names = self.law.mode_names
        return [("contact", names[before], names[after])] if before != after else []

    def branch_name(self, branch):
        return self.law.mode_names[branch]


@element
class ElastoGap(_Contact):
    """MSL ElastoGap (``contact = s_rel < s_rel0``; nflow's defaults c 100, d 1)."""
    type_name = "ElastoGap"

    def make_law(self):
        c = self.param("c", nonnegative=True)
        return laws.ElastoGap(c, self.param("d", nonnegative=True), self.param("s_rel0"))


class _Backlash(_Contact):
    """MSL ElastoBacklash with play ``b``: free in the play, in contact beyond it."""

    def make_law(self):
        return laws.ElastoBacklash(self.param("c", nonnegative=True), self.param("d", nonnegative=True),
                                   self.param("b", nonnegative=True), self.param("phi_rel0"))


@element
class ElastoBacklash(_Compliant):
    """MSL ElastoBacklash; without play (``b <= 1e-10``, nflow's default) it is MSL's
    linear coupling ``c*(phi_rel - phi_rel0) + d*w_rel``."""
    type_name, stiffness, rest, damping = "ElastoBacklash", "c", "phi_rel0", "d"

    @classmethod
    def variant(cls, params, connected_inputs):
        return cls if float(params["b"]) <= laws.B_EPS else cls.with_play


ElastoBacklash.with_play = type("ElastoBacklash", (_Backlash,), {"type_name": "ElastoBacklash"})


# ----------------------------------------------------------------------------- rigid ties

class _Fixed(Element):
    """The flange held at ``position_param``."""
    pins = _ONE
    position_param = "s0"

    def ties(self):
        return [(None, "flange", 1.0, self.param(self.position_param))]

    def stamp(self, s):
        pass


element(type("Fixed", (_Fixed,), {"type_name": "Fixed"}))
element(type("RotFixed", (_Fixed,), {"type_name": "RotFixed", "position_param": "phi0"}))


class _Gear(Element):
    """``pos(a) = ratio*pos(b)``, massless and lossless (IdealGear, Lever, Pulley; nflow's
    Rod has only ``ratio`` too): the force at ``b`` is ``ratio`` times the one at ``a``."""
    pins = _TWO

    def ties(self):
        return [("b", "a", self.param("ratio", nonzero=True), 0.0)]

    def stamp(self, s):
        pass


for _type in ("IdealGear", "Lever", "Pulley", "Rod"):
    element(type(_type, (_Gear,), {"type_name": _type}))


# ----------------------------------------------------------------------------- sources

class _ForceSource(Element):
    """The source pushes its flange with its value toward +s (``flange.f = -value``)."""
    pins = _ONE

    def stamp(self, s):
        s.push_source("flange", -1.0, **self.source_value(s))


class _ForcePair(Element):
    """nflow's Force2 / Torque2: ``+F`` on ``a``, ``-F`` on ``b`` (MSL's Force2 is the
    opposite)."""
    pins, inputs = _TWO, ("F",)

    def stamp(self, s):
        value = self.source_value(s)
        s.push_source("a", -1.0, **value)
        s.push_source("b", 1.0, **value)


_FORCES = {
    "Force": {"inputs": ("F",)}, "Torque": {"inputs": ("F",)},
    "ConstantForce": {"value_param": "F"}, "ConstantTorque": {"value_param": "tau"},
    "SineForce": {"shape": laws.sine_of}, "SineTorque": {"shape": laws.sine_of},
    "RampForce": {"shape": laws.ramp_of}, "RampTorque": {"shape": laws.ramp_of},
    "ExpSineForce": {"shape": laws.exp_sine_of}, "ExpSineTorque": {"shape": laws.exp_sine_of},
    "TrapezoidForce": {"shape": laws.trapezoid_of}, "TrapezoidTorque": {"shape": laws.trapezoid_of},
}
for _type, _attributes in _FORCES.items():
    element(type(_type, (_ForceSource,), {"type_name": _type, **_attributes}))
for _type in ("Force2", "Torque2"):
    element(type(_type, (_ForcePair,), {"type_name": _type}))


class _SpeedSource(Element):
    """The flange's speed IS the value (exactly); its position starts at ``start_param``.
    The force it takes is the unknown ``f`` (its flange.f). A signal-driven one needs the
    signal's derivative for its flange's acceleration (a body on it, a sensor's rate)."""
    pins, unknowns = _ONE, ("f",)
    start_param = "s0"
    prescribes_motion = True

    def stamp(self, s):
        speed = s.speed("flange")
        s.push("flange", Lin({s.x("f"): 1.0}))
        row = s.row()
        s.put(row, speed)
        s.source(row, -1.0, **self.source_value(s))
        if self.inputs:
            s.needs_rate(self.inputs[0])
        s.start(s.position("flange"), self.param(self.start_param))


class _AccelerateSource(Element):
    """The flange's acceleration IS the input; position and speed start at the
    ``start_params``."""
    pins, unknowns, inputs = _ONE, ("f",), ("a",)
    start_params = ("s0", "v0")
    prescribes_motion = True

    def stamp(self, s):
        speed = s.speed("flange")
        s.push("flange", Lin({s.x("f"): 1.0}))
        row = s.row()
        s.put(row, dt=speed)
        s.source(row, -1.0, input=s.input("a"))
        s0, v0 = (self.param(name) for name in self.start_params)
        s.start(s.position("flange"), s0)
        s.start(speed, v0)


_MOTIONS = {
    "Speed": (_SpeedSource, {"inputs": ("v",)}),
    "RotSpeed": (_SpeedSource, {"inputs": ("w",), "start_param": "phi0"}),
    "ConstantSpeed": (_SpeedSource, {"value_param": "v"}),
    "ConstantRotSpeed": (_SpeedSource, {"value_param": "w", "start_param": "phi0"}),
    "Accelerate": (_AccelerateSource, {}),
    "RotAccelerate": (_AccelerateSource, {"start_params": ("phi0", "w0")}),
}
for _type, (_base, _attributes) in _MOTIONS.items():
    element(type(_type, (_base,), {"type_name": _type, **_attributes}))


# ----------------------------------------------------------------------------- transducers

class _Emf(Element):
    """MSL RotationalEMF / TranslationalEMF: ``v_p - v_n = k*w`` with ``w`` the flange's
    speed, the branch current ``i`` (p -> n) drives the flange with ``k*i``
    (``flange.f = -k*i``)."""
    pins, unknowns = ("p", "n", "flange"), ("i",)

    def stamp(self, s):
        k = self.param("k")
        i = s.x("i")
        s.branch("p", "n", [(i, 1.0)])
        row = s.across_row("p", "n")
        s.put(row, -k * s.speed("flange"))
        s.push("flange", Lin({i: -k}))


for _type in ("EMF", "TranslationalEMF"):
    element(type(_type, (_Emf,), {"type_name": _type}))



# ----------------------------------------------------------------------------- MSL friction

def _mu_table(el):
    """A Brake's / Clutch's ``mu_pos`` table (``[[speed, mu], ...]``), or its constant ``mu``."""
    table = el.params.get("mu_pos")
    if table is None:
        return ((0.0, float(el.params["mu"])),)
    table = np.atleast_2d(np.asarray(table, dtype=float))
    if table.shape[1] != 2:
        raise DiagramError("param_value", f"{el.name}: mu_pos must be a table of [speed, mu] rows", block=el.name,
                           param="mu_pos")
    return tuple(map(tuple, table))


class _StickSlip(Element):
    """MSL's friction with stiction (``PartialFriction``, ``PartialFrictionWithStop``): the
    friction force ``f`` (against positive relative motion; flange.f as ``push_force``) is
    an unknown whose equation depends on the branch of the state machine of
    ``physical.friction``: locked, the relative acceleration is 0 and ``f`` is MSL's path
    parameter ``sa`` (the sticking force, found with the accelerations: a KKT system per
    branch combination, eliminated once and cached); free, ``f = 0``; sliding or starting,
    ``f`` is the law's (of the states: evaluated explicitly). The event iteration solves
    MSL's mixed system ``locked <-> sa <-> startForward/startBackward`` per branch
    combination; at the hard stops of MassWithStopAndFriction the mass is re-initialised
    (inelastic impact). ``friction_pins``: the flange (against the ground) or ``a``, ``b``."""
    switching = True
    unknowns = ("f",)
    branches = (fr.LOCKED, fr.FREE_BRANCH, fr.START_F, fr.START_B, fr.SLIDE_F, fr.SLIDE_B)
    committed_reads_values = True
    must_solve = (fr.SLIDE_F,)     # sliding, its force is a law of the speed: a mass must take it
    friction_pins = _ONE
    normal_force: str | None = None     # the input of the normalized normal force

    def make_law(self):
        raise NotImplementedError

    def stamp(self, s):
        law = self.law = self.make_law()
        pins = self.friction_pins
        self._f = s.x("f")
        push_force(s, pins, Lin({self._f: 1.0}))
        if len(pins) == 1:
            self._speed, acceleration = s.speed(pins[0]), s.acceleration(pins[0])
        else:
            a, b = pins
            self._speed = s.speed(b) - s.speed(a)
            acceleration = s.acceleration(b) - s.acceleration(a)
        if not any(self._speed.terms.values()):
            raise SimulationError("degenerate_friction", f"{self.name}: both sides of the friction element are rigidly "
                                  "tied together (or both fixed), so it can never slide", block=self.name)
        self._acceleration = acceleration
        self._position = self.position(s)
        self._fn = s.input(self.normal_force) if self.normal_force else None
        row = s.row()
        s.moded(row, self._f, {branch: 1.0 for branch in self.branches if branch != fr.LOCKED})
        for col, coef in acceleration.items():
            s.moded(row, col, {fr.LOCKED: coef})
        cols = sorted(self._speed.terms)
        coefs = np.array([self._speed.terms[col] for col in cols])
        fn_max = getattr(law, "fn_max", 1.0)

        def sliding(z, u, t, branch):
            if branch < fr.START_F:
                return np.zeros(1), np.zeros((1, len(cols)))

            def force(z, u, t):
                return np.array([-law.force(branch, float(coefs @ z), fn_max * u[0] if len(u) else 0.0)])
            value = force(z, u, t)
            return value, lambda: _difference_jacobian(force, z, u, t, value)

        terms = list(enumerate(coefs.tolist()))

        def value(z, u, t, branch):     # the same on lists of floats
            if branch < fr.START_F:
                return _NO_FORCE
            speed = 0.0
            for j, coef in terms:
                speed += coef * z[j]
            return (-law.force(branch, speed, fn_max * u[0] if u else 0.0),)
        s.nonlinear([row], cols, sliding, inputs=[self._fn] if self._fn is not None else [], moded=True,
                    value=value)
        self._watched = (None, frozenset(), [])

    def position(self, s):
        """The position the stops act on (None: no stops)."""
        return None

    def unsolvable(self, err):
        return SimulationError("massless_friction", f"{self.name}: a stick-slip friction element needs a mass/inertia "
                               "(or a fixed or driven flange) on each side: sliding, its force would act on a massless "
                               f"node ({err.message})", block=self.name)

    # the state machine (physical.friction) on what the island reads
    def _situation(self, view):
        law = self.law
        fn = law.fn_max * view.input(self._fn) if self._fn is not None else 0.0
        room_f = room_b = True
        if law.has_stops:
            position = view.value(self._position)
            room_f, room_b = position < law.smax_eff, position > law.smin_eff
        return fn, room_f, room_b, law.is_free(fn, room_f, room_b)

    def _path_parameter(self, branch, view, f0_max):
        if branch == fr.LOCKED:
            return float(view.z[self._f])
        return fr.sa_from_arel(branch, view.value(self._acceleration), f0_max)

    def pre_start(self, view):
        law = self.law
        if not law.has_stops:
            return fr.FrictionState(fr.UNKNOWN, False, False, 0)
        position = view.value(self._position)
        fr.check_initial_stop(law, position, view.value(self._speed))
        return fr.FrictionState(fr.UNKNOWN, False, False, fr.stop_indicator(law, position))

    def first(self, pre):
        return (pre.start_forward, pre.start_backward)

    def branch(self, pre, current, view):
        free = self._situation(view)[3]
        sf, sb = current
        return fr.branch_of(free, fr.is_locked(free, pre.mode, sf, sb), sf, sb, pre.mode)

    def iterate(self, pre, current, view):
        fn, room_f, room_b, _ = self._situation(view)
        f0, f0_max = self.law.thresholds(fn)
        sa = self._path_parameter(self.branch(pre, current, view), view, f0_max)
        return fr.start_flags(pre, sa, view.value(self._speed), self.law.small, room_f, room_b, f0, f0_max,
                              view.initial)

    def merge(self, cycle):
        # A cycle: the stuck force exceeds the breakaway bound while the start branch's
        # acceleration is zero to round-off (f0 == f0_max with peak = 1, an event located a
        # hair past the threshold). Sticking is inadmissible, so take the union of the flags
        # over the cycle (start sliding); a wrong start phase ends at once through its own
        # hysteresis relation.
        return (any(sf for sf, _ in cycle), any(sb for _, sb in cycle))

    def commit(self, pre, current, view):
        law = self.law
        fn, room_f, room_b, free = self._situation(view)
        sf, sb = current
        mode = fr.next_mode(free, pre.mode, sf, sb, view.value(self._speed), room_f, room_b)
        stopped = fr.stop_indicator(law, view.value(self._position)) if law.has_stops else 0
        state = fr.FrictionState(mode, sf, sb, stopped)
        if stopped != 0 and pre.stopped == 0 and not view.initial:
            # MSL's reinit at the stop: the mass rests at it (an inelastic impact)
            target = law.smin_eff if stopped < 0 else law.smax_eff
            return state, [(self._position, target), (self._speed, 0.0)], [("stop", fr.MODE_NAMES[pre.mode], "stop")]
        return state, (), ()

    def branch_of(self, state):
        free = state.mode == fr.FREE
        locked = fr.is_locked(free, state.mode, state.start_forward, state.start_backward)
        return fr.branch_of(free, locked, state.start_forward, state.start_backward, state.mode)

    def relations(self, state, view):
        seen, reads, relations = self._watched
        if state is not seen:      # a new committed state (the same object between events)
            entries = [_RELATIONS[code] for code in fr.watched_relations(self.law, state)]
            reads = frozenset(quantity for quantity, _ in entries)
            relations = [relation for _, relation in entries]
            self._watched = (state, reads, relations)
        if not relations:
            return []
        law = self.law
        fn = law.fn_max * view.input(self._fn) if self._fn is not None else 0.0
        # each quantity once, only where a watched relation reads it
        speed = view.value(self._speed) if "speed" in reads else None
        position = view.value(self._position) if "position" in reads else None
        if "sa" in reads:
            f0, f0_max = law.thresholds(fn)
            sa = self._path_parameter(self.branch_of(state), view, f0_max)
        else:
            f0 = f0_max = sa = None
        return [relation(speed, position, sa, fn, f0, f0_max, law) for relation in relations]

    def committed(self, state, values):
        return [1.0 if value > 0.0 else 0.0 for value in values]

    def changes(self, before, after):
        if before.mode == after.mode:
            return []
        return [("mode", fr.MODE_NAMES[before.mode], fr.MODE_NAMES[after.mode])]

    def branch_name(self, branch):
        return ("locked", "free", "startForward", "startBackward", "forward", "backward")[branch]


# physical.friction's relations: the quantity each reads (speed: relative speed, position:
# where the stops act, sa: the path parameter, fn: the normal force) and its value, of
# (speed, position, sa, fn, f0, f0_max, law)
_RELATIONS = {
    fr.REL_V_POS: ("speed", lambda speed, position, sa, fn, f0, f0_max, law: speed),
    fr.REL_V_NEG: ("speed", lambda speed, position, sa, fn, f0, f0_max, law: -speed),
    fr.REL_FN: ("fn", lambda speed, position, sa, fn, f0, f0_max, law: fn),
    fr.REL_ROOM_F: ("position", lambda speed, position, sa, fn, f0, f0_max, law: law.smax_eff - position),
    fr.REL_ROOM_B: ("position", lambda speed, position, sa, fn, f0, f0_max, law: position - law.smin_eff),
    fr.REL_SA_FMAX_POS: ("sa", lambda speed, position, sa, fn, f0, f0_max, law: sa - f0_max),
    fr.REL_SA_F0_POS: ("sa", lambda speed, position, sa, fn, f0, f0_max, law: sa - f0),
    fr.REL_SA_FMAX_NEG: ("sa", lambda speed, position, sa, fn, f0, f0_max, law: -sa - f0_max),
    fr.REL_SA_F0_NEG: ("sa", lambda speed, position, sa, fn, f0, f0_max, law: -sa - f0),
}


@element
class MassWithStopAndFriction(_StickSlip):
    """MSL MassWithStopAndFriction: a mass of length ``L`` (flanges at ``s -+ L/2``) with
    Coulomb, viscous and Stribeck friction against the ground and hard stops at ``smin``,
    ``smax``."""
    type_name, pins = "MassWithStopAndFriction", ("flange_a", "flange_b")
    friction_pins = ("flange_a",)

    def ties(self):
        return [("flange_a", "flange_b", 1.0, self.param("L", nonnegative=True))]

    def coordinate(self):
        return ("flange_a", self.param("L") / 2.0)

    def make_law(self):
        if not self.param("smax") > self.param("smin"):
            raise DiagramError("param_range", f"{self.name}: smax ({self.param('smax'):g}) must be greater than smin "
                               f"({self.param('smin'):g})", block=self.name, param="smax")
        return fr.StribeckStopLaw(self.name, **{name: self.param(name) for name in (
            "F_prop", "F_Coulomb", "F_Stribeck", "fexp", "smin", "smax", "L", "v_small")})

    def position(self, s):
        pin, offset = self.coordinate()     # the stops act on the centre, the mass's unknown
        return s.position(pin) + offset

    def stamp(self, s):
        super().stamp(s)
        mass = self.param("m", positive=True)
        speed = s.speed("flange_a")
        s.push("flange_a", dt=mass * speed)
        s.start(self._position, self.param("s0"))
        s.start(speed, self.param("v0"))


class _BrakeFriction(_StickSlip):
    """MSL Brake (translational / rotational): table friction of the flange against the
    ground, ``f = mu(v)*cgeo*fn_max*f_normalized``."""
    pins, inputs, normal_force = _ONE, ("f",), "f"
    small, small_default = "v_small", 1e-3

    def make_law(self):
        small = self.param(self.small) if self.small in self.params else self.small_default
        return fr.TableFrictionLaw(self.name, kind="brake", table=_mu_table(self), peak=self.param("peak"),
                                   cgeo=self.param("cgeo"), fn_max=self.param("fn_max"), small=small)


class _ClutchFriction(_StickSlip):
    """MSL Clutch: table friction between ``a`` and ``b`` (``w_rel = w_b - w_a``)."""
    pins, inputs, normal_force, friction_pins = _TWO, ("fn",), "fn", _TWO

    def make_law(self):
        return fr.TableFrictionLaw(self.name, kind="clutch", table=_mu_table(self), peak=self.param("peak"),
                                   cgeo=self.param("cgeo"), fn_max=self.param("fn_max"), small=1e10)


for _type, _eps, _small in (("Brake", "vEps", "v_small"), ("RotBrake", "w_eps", "w_small")):
    _stick_slip = type(_type, (_BrakeFriction,), {"type_name": _type, "small": _small,
                                                  "small_default": 1e-3 if _small == "v_small" else 1e10})
    element(type(_type, (_RegularizedBrake,), {"type_name": _type, "eps": _eps, "stick_slip": _stick_slip}))
Clutch.stick_slip = type("Clutch", (_ClutchFriction,), {"type_name": "Clutch"})
