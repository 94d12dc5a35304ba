"""1-D mechanical networks (translational or rotational) with MSL stick-slip friction.

Build a :class:`Network` from elements and pin connections, then :meth:`Network.build`
splits it into :class:`Island` objects (connected components).  Each island is a hybrid
system for :func:`nflow_compat.engine.hybrid.integrate_hybrid`.

Structure (how an island is compiled)
-------------------------------------
* **Nodes** are groups of pins joined by connections.  **Rigid ties** are exact: a body's
  flanges (``s -+ L/2``), gears / levers / pulleys / rods (``s_a = ratio*s_b + offset``)
  and Fixed flanges merge nodes through an affine union-find, so every node position is
  ``k*coordinate + d`` of one *root*.  A loop of ties whose ratios or offsets disagree is
  an ``inconsistent_rigid_connection`` (``conflicting_fixed`` for two Fixed flanges).
* Each root is one of
  - **ground** (a Fixed in the group): constant positions;
  - **driven**: a prescribed-motion element (speed / constant_speed / accelerate) owns the
    group; its position is a state (``ds/dt = v_ref``; for accelerate also
    ``dv/dt = a_ref``), its velocity is prescribed exactly, and the force the source has
    to apply is its *reaction* (probe ``reaction``);
  - **massive** (bodies in the group): a degree of freedom, states ``q, v``; the
    coordinate is the centre position of its first body, its mass ``sum(m*k^2)``
    (reflected inertia through gears);
  - **massless**: handled by index reduction.  If a velocity-dependent element (damper,
    speed-dependent force, regularized friction, freewheel, damped gap/backlash) is
    attached, the node's position is a first-order state and its velocity comes from its
    force balance (``V`` node: e.g. a spring-damper series node); otherwise its position
    comes from its (position-only) force balance (``P`` node: e.g. a spring between a
    Force and a Fixed).  Linear balances are solved by precomputed matrices, non-linear
    ones by Newton iterations.  A massless node with nothing that fixes its motion is a
    ``singular_island``; a single unconnected pin is a ``massless_node`` error.
* State ``x = [q_0..q_{n-1}, v_0..v_{n-1}, extra...]``: one position and one velocity per
  massive root first (unchanged from earlier versions), then the driven positions (and
  velocities of accelerate sources), then the V-node positions
  (:attr:`Island.state_names`).
* ``derivative``: accelerations and the unknown stuck forces of locked MSL friction
  elements come from one small KKT system ``[[M, G^T], [G, 0]] [a; sa] = [F; h]`` (the
  multiplier of ``a_rel = 0`` IS MSL's path parameter ``sa``; ``h`` carries the known
  acceleration of a driven side).  The matrices depend only on which elements are locked
  and are cached.
* ``event_functions``: the MSL relations that can change the committed discrete state,
  written ``g > 0``: friction (breakaway, slide end, start-phase hysteresis, room to the
  stops, normal force) then the contact relations of ElastoGap / ElastoBacklash;
* ``handle_events``: Modelica's event iteration (``pre`` values, iterate to a fixed point)
  including the contact modes, the inner mixed system ``locked <-> sa <-> start flags``
  and the inelastic re-initialisation at hard stops;
* inputs: ``island.inputs`` (an array the caller fills before each evaluation) or
  ``island.input_fn(t, x) -> array`` or per-element ``signal=`` constants/callables given
  at build time.  ``island.input_names`` says which slot drives what (``element.port``);
  ``island.input_rates`` may carry the time derivative of a ``speed`` source's input (see
  :meth:`Network.speed`).

Sign conventions are MSL's: a cut force acts on the component; a relative element's
quantities are ``b - a``; a friction force opposes its relative motion.  Where nflow's
documented sign differs (Force2 / Torque2: ``+F`` on ``a``; relative sensors ``a - b``) the
element / probe says so.
"""
from __future__ import annotations

import itertools
import math
from typing import Callable

import numpy as np

from .. import roots
from ..errors import DiagramError, SimulationError
from . import elements as elm
from . import friction as fr
from .elements import num as _num
from .events import PhysicalEvent
from .friction import FREE, MODE_NAMES, UNKNOWN, FrictionState, StribeckStopLaw, TableFrictionLaw
from .nodes import AffineUnionFind, connected_elements, join_pins

_DOMAINS = {
    "translational": {"pos": "s", "vel": "v", "acc": "a", "force": "f", "mass": "m"},
    "rotational": {"pos": "phi", "vel": "w", "acc": "a", "force": "tau", "mass": "J"},
}

MAX_EVENT_ITERATIONS = 50
MAX_MIXED_ITERATIONS = 50
MAX_SWITCH_ITERATIONS = 50
NEWTON_MAX = 80

_TWO = ("flange_a", "flange_b")
_BODY_PINS = ("flange_a", "flange_b", "flange")
# element kinds whose pins are flange_a / flange_b: nflow's pin names a / b are aliases
_TWO_PORT_KINDS = ("spring_damper", "force2", "gear", "nl2", "clutch", "body", "stopmass", "emf")


class _Elem:
    __slots__ = ("name", "kind", "pins", "params", "signal", "breakpoints")

    def __init__(self, name, kind, pins, params, signal=None, breakpoints=()):
        self.name, self.kind, self.pins, self.params = name, kind, pins, params
        self.signal, self.breakpoints = signal, tuple(float(b) for b in breakpoints)


class Network:
    """Collects elements and connections of one physical domain.

    Every element method returns the element name.  Pins are referenced as
    ``'element.pin'`` in :meth:`connect`.  Two-flange elements have pins ``flange_a`` and
    ``flange_b`` (nflow's ``a`` / ``b`` are accepted as aliases); one-flange elements have
    ``flange``; bodies have ``flange_a``, ``flange_b`` and ``flange`` (the centre).
    Elements driven by a signal take ``signal=`` (a constant, a callable ``t -> value``,
    or None when the caller fills ``island.inputs``) and ``breakpoints=`` (times where
    the signal jumps, made time events); their input slot is ``island.input_index(name)``.
    """

    def __init__(self, domain: str = "translational"):
        if domain not in _DOMAINS:
            raise DiagramError("bad_domain", f"unknown mechanical domain {domain!r}")
        self.domain = domain
        self.elements: dict[str, _Elem] = {}
        self.connections: list[tuple[str, str]] = []
        self.starts: dict[str, float] = {}

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

    # bodies ---------------------------------------------------------------------------
    def mass(self, name, m=1.0, L=0.0, s0=None, v0=None):
        """Translational Mass / SlidingMass: pins ``flange_a`` (``s - L/2``), ``flange_b``
        (``s + L/2``), ``flange`` (``s``).  ``s0``/``v0`` None = not prescribed (0 unless
        a rigidly joined body says otherwise).  Probes: ``s``, ``v``, ``a`` of the name."""
        self._domain_is("translational", name)
        m = _num(name, m, "m", positive=True)
        L = _num(name, L, "L", minimum=0.0)
        return self._add(name, "body", _BODY_PINS,
                         dict(mass=m, L=L, s0=None if s0 is None else _num(name, s0, "s0"),
                              v0=None if v0 is None else _num(name, v0, "v0"), weight=0.0))

    sliding_mass = mass

    def mass_with_weight(self, name, m=1.0, g=9.81, L=0.0, s0=None, v0=None):
        """nflow MassWithWeight: a Mass with the constant force ``-m*g`` on it (gravity
        along -s).  Pins and probes as :meth:`mass`."""
        self._domain_is("translational", name)
        m = _num(name, m, "m", positive=True)
        g = _num(name, g, "g")
        L = _num(name, L, "L", minimum=0.0)
        return self._add(name, "body", _BODY_PINS,
                         dict(mass=m, L=L, s0=None if s0 is None else _num(name, s0, "s0"),
                              v0=None if v0 is None else _num(name, v0, "v0"), weight=-m * g))

    def inertia(self, name, J=1.0, phi0=None, w0=None):
        """Rotational Inertia: pins ``flange_a``, ``flange_b``, ``flange`` (all the same
        angle).  Probes ``phi``, ``w``, ``a`` of the name."""
        self._domain_is("rotational", name)
        J = _num(name, J, "J", positive=True)
        return self._add(name, "body", _BODY_PINS,
                         dict(mass=J, L=0.0, s0=None if phi0 is None else _num(name, phi0, "phi0"),
                              v0=None if w0 is None else _num(name, w0, "w0"), weight=0.0))

    def mass_with_stop_and_friction(self, name, m=1.0, *, L=0.0, smax=25.0, smin=-25.0,
                                    F_prop=1.0, F_Coulomb=5.0, F_Stribeck=10.0, fexp=2.0,
                                    v_small=1e-3, s0=0.0, v0=0.0):
        """Translational MassWithStopAndFriction (MSL defaults); pins as :meth:`mass`."""
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
        return self._add(name, "stopmass", _BODY_PINS,
                         dict(mass=m, L=law.L, s0=_num(name, s0, "s0"), v0=_num(name, v0, "v0"),
                              law=law, weight=0.0))

    # linear compliant -----------------------------------------------------------------
    def spring(self, name, c, rel0=0.0):
        """Linear spring (MSL): ``f = c*(s_rel - rel0)``, ``s_rel = s_b - s_a``; nflow's
        Spring ``k`` / RotSpring ``c`` is ``c``, MSL's ``s_rel0`` / ``phi_rel0`` is
        ``rel0``.  Pins ``flange_a``/``flange_b``.  Probes ``f``/``tau``, ``s_rel``,
        ``v_rel``."""
        return self._add(name, "spring_damper", _TWO,
                         dict(c=_num(name, c, "c", minimum=0.0), d=0.0, rel0=_num(name, rel0, "rel0")))

    def damper(self, name, d):
        """Linear damper ``f = d*v_rel``; pins ``flange_a``/``flange_b``."""
        return self._add(name, "spring_damper", _TWO,
                         dict(c=0.0, d=_num(name, d, "d", minimum=0.0), rel0=0.0))

    def spring_damper(self, name, c, d, rel0=0.0):
        """Parallel spring and damper ``f = c*(s_rel - rel0) + d*v_rel``."""
        return self._add(name, "spring_damper", _TWO,
                         dict(c=_num(name, c, "c", minimum=0.0), d=_num(name, d, "d", minimum=0.0),
                              rel0=_num(name, rel0, "rel0")))

    def fixed(self, name, position=0.0):
        """Fixed flange (MSL Fixed: s0 / phi0); pin ``flange``."""
        return self._add(name, "fixed", ("flange",), dict(pos=_num(name, position, "position")))

    # rigid ties -----------------------------------------------------------------------
    def gear(self, name, ratio=1.0, offset=0.0):
        """Exact rigid tie ``s_a = ratio*s_b + offset`` between ``flange_a`` and
        ``flange_b`` (massless, lossless: ``f_b = -ratio*f_a``; an inertia behind it is
        reflected as ``J*ratio^2``).  nflow's IdealGear, Lever, Pulley (and Rod) are this
        with their ``ratio``; ``ratio`` must be finite and non-zero."""
        return self._add(name, "gear", _TWO,
                         dict(ratio=_num(name, ratio, "ratio", nonzero=True),
                              offset=_num(name, offset, "offset")))

    ideal_gear = lever = pulley = gear

    def rod(self, name, L=0.0, ratio=1.0):
        """Rod: MSL's massless rigid rod of length ``L`` (``s_b = s_a + L``) with nflow's
        ``ratio`` (``s_a = ratio*s_b - L``).  Pins ``flange_a``/``flange_b``."""
        return self.gear(name, ratio=ratio, offset=-_num(name, L, "L"))

    # sources --------------------------------------------------------------------------
    def force(self, name, signal=None, *, use_support=False, breakpoints=()):
        """Force (translational) / Torque (rotational) source: the input pushes ``flange``
        toward +s (with ``use_support`` the reaction goes to pin ``support``).  Input slot
        ``name.f`` / ``name.tau``.  Probe ``f``/``tau`` = the applied force."""
        pins = ("flange", "support") if use_support else ("flange",)
        return self._add(name, "source", pins, dict(use_support=bool(use_support)), signal, breakpoints)

    torque = force

    def force2(self, name, signal=None, *, breakpoints=()):
        """nflow Force2 / Torque2: ``+F`` on ``flange_a`` (pin a) and ``-F`` on
        ``flange_b`` (pin b) (nflow's sign; MSL's Force2 is the opposite).  Input slot
        ``name.f`` / ``name.tau``."""
        return self._add(name, "force2", _TWO, {}, signal, breakpoints)

    torque2 = force2

    def _timeforce(self, name, fn):
        return self._add(name, "timeforce", ("flange",), dict(fn=fn))

    def constant_force(self, name, F=0.0):
        """ConstantForce / ConstantTorque: ``F`` on ``flange`` (no input)."""
        return self._timeforce(name, elm.Constant(_num(name, F, "F")))

    def sine_force(self, name, amplitude=1.0, frequency=1.0, phase=0.0):
        """SineForce / SineTorque: ``amplitude*sin(2*pi*frequency*t + phase)``."""
        return self._timeforce(name, elm.Sine(_num(name, amplitude, "Amplitude"),
                                              _num(name, frequency, "Frequency"),
                                              _num(name, phase, "Phase")))

    def ramp_force(self, name, slope=1.0, start_time=0.0):
        """RampForce / RampTorque: ``slope*(t - start_time)`` for ``t >= start_time``,
        else 0 (the kink is a time event)."""
        return self._timeforce(name, elm.Ramp(_num(name, slope, "Slope"),
                                              _num(name, start_time, "StartTime")))

    def exp_sine_force(self, name, amplitude=1.0, frequency=2.0, damping=0.5, phase=0.0):
        """ExpSineForce / ExpSineTorque: ``amplitude*exp(-damping*t)*sin(2*pi*frequency*t
        + phase)``."""
        return self._timeforce(name, elm.ExpSine(_num(name, amplitude, "Amplitude"),
                                                 _num(name, frequency, "Frequency"),
                                                 _num(name, damping, "Damping"),
                                                 _num(name, phase, "Phase")))

    def trapezoid_force(self, name, amplitude=1.0, rising=0.2, width=0.3, falling=0.2, period=1.0):
        """TrapezoidForce / TrapezoidTorque: periodic rise over ``rising`` to
        ``amplitude``, hold for ``width``, fall over ``falling``, 0 to the end of
        ``period`` (corners are time events)."""
        return self._timeforce(name, elm.Trapezoid(_num(name, amplitude, "Amplitude"),
                                                   _num(name, rising, "Rising", minimum=0.0),
                                                   _num(name, width, "Width", minimum=0.0),
                                                   _num(name, falling, "Falling", minimum=0.0),
                                                   _num(name, period, "Period", positive=True)))

    constant_torque, sine_torque, ramp_torque = constant_force, sine_force, ramp_force
    exp_sine_torque, trapezoid_torque = exp_sine_force, trapezoid_force

    # speed-dependent forces and regularized friction (nflow laws) ----------------------
    def linear_speed_force(self, name, d=1.0):
        """LinearSpeedDependentForce / ...Torque: ``-d*v`` on ``flange`` (a damper to
        ground).  Probe ``f`` = ``d*v`` (the resisting force)."""
        return self._add(name, "ground_damper", ("flange",), dict(d=_num(name, d, "d")))

    linear_speed_torque = linear_speed_force

    def _nl(self, name, law, two_port, signal=None, breakpoints=()):
        return self._add(name, "nl2" if two_port else "nl1", _TWO if two_port else ("flange",),
                         dict(law=law), signal, breakpoints)

    def quadratic_speed_force(self, name, d=1.0):
        """QuadraticSpeedDependentForce / ...Torque: ``-d*v*|v|`` on ``flange``."""
        return self._nl(name, elm.QuadraticSpeed(_num(name, d, "d")), False)

    quadratic_speed_torque = quadratic_speed_force

    def regularized_friction(self, name, Fc=1.0, v_eps=1e-3):
        """nflow Friction (``Fc``, ``vEps``) / BearingFriction (``tau_c``, ``w_eps``):
        ``-Fc*tanh(v/v_eps)`` on ``flange`` (no events).  Probe ``f`` = ``Fc*tanh``."""
        return self._nl(name, elm.TanhFriction(_num(name, Fc, "Fc"), _num(name, v_eps, "vEps", positive=True)),
                        False)

    def regularized_brake(self, name, signal=None, *, v_eps=1e-3, breakpoints=()):
        """nflow Brake / RotBrake without ``fn_max``: the input ``f`` is the peak force,
        ``-f*tanh(v/v_eps)`` on ``flange``.  Input slot ``name.f``."""
        return self._nl(name, elm.TanhBrake(_num(name, v_eps, "vEps", positive=True)), False,
                        signal, breakpoints)

    def regularized_clutch(self, name, tau_max=1.0, w_eps=1e-3):
        """nflow Clutch without an ``fn`` input: ``tau = tau_max*tanh((w_a - w_b)/w_eps)``
        slows flange_a and drives flange_b toward a common speed (MSL sign: probe ``tau``
        = ``tau_max*tanh(w_rel/w_eps)`` with ``w_rel = w_b - w_a``)."""
        return self._nl(name, elm.TanhFriction(_num(name, tau_max, "tau_max"),
                                               _num(name, w_eps, "w_eps", positive=True)), True)

    def freewheel(self, name, d=100.0, w_eps=1e-3):
        """nflow Freewheel: one-way coupling, a damper ``d`` acting only while flange_a
        overruns flange_b, blended over ``w_eps``:
        ``tau = d*w_rel*(1 + tanh(-w_rel/w_eps))/2`` with ``w_rel = w_b - w_a``."""
        return self._nl(name, elm.Freewheel(_num(name, d, "d", minimum=0.0),
                                            _num(name, w_eps, "w_eps", positive=True)), True)

    # switched compliant ---------------------------------------------------------------
    def elasto_gap(self, name, c=1.0, d=1.0, s_rel0=0.0, n=1.0, s_ref=1.0, f_ref=None):
        """MSL ElastoGap (events at contact, ``s_rel = s_b - s_a < s_rel0``); nflow's
        defaults are ``c`` 100, ``d`` 1.  Probes ``f`` (<= 0: pushing), ``contact``,
        ``mode`` (0 open / 1 contact), ``s_rel``, ``v_rel``."""
        c = _num(name, c, "c", minimum=0.0)
        s_ref = _num(name, s_ref, "s_ref", positive=True)
        law = elm.ElastoGap(c, _num(name, d, "d", minimum=0.0), _num(name, s_rel0, "s_rel0"),
                            _num(name, n, "n", minimum=1.0), s_ref,
                            None if f_ref is None else _num(name, f_ref, "f_ref", minimum=0.0))
        return self._nl(name, law, True)

    def elasto_backlash(self, name, c=1.0, b=0.0, d=0.0, phi_rel0=0.0):
        """MSL ElastoBacklash (nflow's defaults ``c`` 1, ``b`` 0; MSL's ``d`` 0 and
        ``phi_rel0`` 0 keep nflow's behaviour): total play ``b``, events at the contact
        angles, monotone law during initialisation.  Probes ``tau`` (MSL sign, ``b - a``),
        ``mode`` (-1 / 0 free / +1), ``phi_rel``, ``w_rel``."""
        law = elm.ElastoBacklash(_num(name, c, "c", minimum=0.0), _num(name, d, "d", minimum=0.0),
                                 _num(name, b, "b", minimum=0.0), _num(name, phi_rel0, "phi_rel0"))
        return self._nl(name, law, True)

    # prescribed motion ----------------------------------------------------------------
    def speed(self, name, signal=None, *, s0=0.0, breakpoints=()):
        """Speed / RotSpeed: the flange velocity IS the input (exactly); its position
        ``s0 + integral of the input`` is a state.  Input slot ``name.v`` / ``name.w``.
        Probe ``reaction`` = the force the source applies to the flange; it needs the
        input's time derivative when a body is rigidly attached to the flange or a locked
        MSL friction element acts on it: a callable ``signal`` gives it as ``signal.rate(t)``
        (a time function of ``elements``), else it is ``island.input_rates[slot]`` (the engine
        keeps it equal to the driving signal's exact derivative, see ``engine.rates``)."""
        if callable(signal) and not callable(getattr(signal, "rate", None)):
            raise DiagramError("bad_param", f"{name}: a speed signal given as a function needs its time "
                               "derivative too (signal.rate(t), as the time functions of physical.elements have)",
                               block=name)
        return self._add(name, "prescribed", ("flange",),
                         dict(mode="speed", s0=_num(name, s0, "s0"), v=0.0, v0=0.0), signal, breakpoints)

    def constant_speed(self, name, v=1.0, *, s0=0.0):
        """ConstantSpeed / ConstantRotSpeed: ``s = s0 + v*t`` exactly.  Probe
        ``reaction``."""
        return self._add(name, "prescribed", ("flange",),
                         dict(mode="const", s0=_num(name, s0, "s0"), v=_num(name, v, "v"), v0=0.0))

    def accelerate(self, name, signal=None, *, s0=0.0, v0=0.0, breakpoints=()):
        """Accelerate / RotAccelerate: the flange acceleration IS the input; position and
        velocity are states starting at ``s0``/``v0``.  Input slot ``name.a``.  Probe
        ``reaction``."""
        return self._add(name, "prescribed", ("flange",),
                         dict(mode="acc", s0=_num(name, s0, "s0"), v=0.0, v0=_num(name, v0, "v0")),
                         signal, breakpoints)

    # MSL friction ---------------------------------------------------------------------
    def brake(self, name, signal=None, *, fn_max=1.0, mu_pos=((0.0, 0.5),), peak=1.0, cgeo=1.0,
              small=None, use_support=False, breakpoints=()):
        """Brake of either domain: friction of the flange against ground (or ``support``).

        ``small`` is v_small (translational default 1e-3) or w_small (rotational 1e10).
        Input slot ``name.f_normalized``.
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
        """Rotational Clutch between flange_a and flange_b (w_rel = w_b - w_a).  Input slot
        ``name.f_normalized``."""
        self._domain_is("rotational", name)
        law = TableFrictionLaw(name, kind="clutch", table=mu_pos, peak=peak, cgeo=cgeo,
                               fn_max=fn_max, small=_num(name, w_small, "w_small"))
        return self._add(name, "clutch", _TWO, dict(law=law), signal, breakpoints)

    # transducers -----------------------------------------------------------------------
    def emf(self, name, k=1.0):
        """Electromechanical transducer (nflow EMF / TranslationalEMF, MSL ``EMF``): back-emf
        ``v = k*w``, flange torque ``k*i``.  nflow's manifest puts the electrical pins ``p``
        and ``n`` in the mechanical domain, so the electrical port is written in the
        force-voltage (impedance) analogy: the current ``i`` is the relative speed of ``p``
        against ``n`` (``w_p - w_n``) and the voltage across them is a torque.  So the
        element is a lossless gyrator: ``-k*w_flange`` on ``p``, ``+k*w_flange`` on ``n``
        and ``+k*(w_p - w_n)`` on ``flange`` (power ``k*i*w`` leaves one port and enters
        the other).  Pins ``flange_a`` (= p), ``flange_b`` (= n), ``flange``."""
        return self._add(name, "emf", ("flange_a", "flange_b", "flange"), dict(k=_num(name, k, "k")))

    # -- connections -------------------------------------------------------------------
    def _pin(self, ref: str):
        if not isinstance(ref, str) or "." not in ref:
            raise DiagramError("bad_pin", f"pin reference {ref!r} must look like 'element.pin'")
        name, pin = ref.split(".", 1)
        el = self.elements.get(name)
        if el is None:
            raise DiagramError("unknown_element", f"connection to unknown element {name!r}", block=name)
        if el.kind == "brake" and pin == "flange":
            pin = "flange_a"
        elif el.kind in _TWO_PORT_KINDS and pin in ("a", "b"):
            pin = "flange_" + pin
        if pin not in el.pins:
            raise DiagramError("bad_pin", f"{name} has no pin {pin!r} (pins: {', '.join(el.pins)})",
                               block=name)
        return f"{name}.{pin}"

    def connect(self, *pins: str):
        """Join pins (``'element.pin'``) into one node; undirected, any number of pins."""
        refs = [self._pin(p) for p in pins]
        for other in refs[1:]:
            self.connections.append((refs[0], other))

    def initial_position(self, pin: str, value: float):
        """Start position of the node of ``pin`` when it is a massless first-order (V)
        node.  By default such a node starts where the damping element that links it to
        a node of known position has zero relative displacement (MSL's start value 0 of
        a damper's ``s_rel``), else at 0.  Ignored for other nodes."""
        self.starts[self._pin(pin)] = _num(pin, value, "initial position")

    # -- compile -----------------------------------------------------------------------
    def build(self) -> list["Island"]:
        """Split into islands (connected components) and compile each."""
        pins = [f"{el.name}.{pin}" for el in self.elements.values() for pin in el.pins]
        # a brake's flange_a and flange_b are one point
        ties = [(f"{el.name}.flange_a", f"{el.name}.flange_b") for el in self.elements.values() if el.kind == "brake"]
        node_of = join_pins(pins, self.connections + ties)
        element_pins = {name: [f"{name}.{pin}" for pin in el.pins] for name, el in self.elements.items()}
        # islands and their elements in the order the elements were added (the state layout)
        order = {name: k for k, name in enumerate(self.elements)}
        groups = sorted((sorted(members, key=order.get) for members in connected_elements(element_pins, node_of)),
                        key=lambda members: order[members[0]])
        islands = []
        for idx, names in enumerate(groups):
            # parameters near the floating-point range can overflow the element stamps:
            # no numpy warning, the island refuses non-finite matrices (below)
            with np.errstate(over="ignore", invalid="ignore"):
                islands.append(_compile_island(self.domain, [self.elements[n] for n in names], node_of.__getitem__,
                                               f"island{idx}", self.starts))
        return islands


# --------------------------------------------------------------------------------------

class _FrictionSlot:
    """A compiled friction element: its law, state, kinematics and input slot.

    ``G``: relative-motion row over the massive coordinates (the KKT row); ``Gx``: the
    same over massive + driven coordinates (``v_rel = Gx @ [v, v_driven]``); ``s_loc``:
    ``(dof, k, d)`` of a stop mass's centre."""

    __slots__ = ("name", "law", "ia", "ib", "G", "Gx", "has_z", "s_dof", "s_k", "s_off", "u_index",
                 "fn_max", "state", "watch")

    def __init__(self, name, law, G, Gx, s_loc, u_index):
        self.name, self.law, self.G, self.Gx = name, law, G, Gx
        self.has_z = bool(np.any(Gx[len(G):]))
        self.ia = self.ib = -1
        self.s_dof, self.s_k, self.s_off = s_loc
        self.u_index = u_index
        self.fn_max = getattr(law, "fn_max", 1.0)
        self.state = FrictionState()
        self.watch = ()


class _NL:
    """A compiled non-linear element: ``s_rel = coef @ Y[idx] + k0``,
    ``v_rel = coef @ Yd[idx]``, generalized force ``F[idx] -= f*coef``."""

    __slots__ = ("name", "law", "idx", "coef", "k0", "u", "mode", "one_port", "i0", "c0")

    def __init__(self, name, law, idx, coef, k0, u, one_port):
        self.name, self.law = name, law
        self.idx = np.asarray(idx, dtype=int)
        self.coef = np.asarray(coef, dtype=float)
        self.k0, self.u, self.mode, self.one_port = k0, u, 0, one_port
        self.i0 = int(self.idx[0]) if len(idx) == 1 else -1
        self.c0 = float(self.coef[0]) if len(idx) == 1 else 0.0


class _Driven:
    __slots__ = ("name", "mode", "xz", "xw", "u", "v", "signal", "iy")

    def __init__(self, name, mode, xz, xw, u, v, signal, iy):
        self.name, self.mode, self.xz, self.xw, self.u, self.v = name, mode, xz, xw, u, v
        self.signal, self.iy = signal, iy


def _compile_island(domain, els, pin_find, label, starts):
    names = _DOMAINS[domain]
    uf = AffineUnionFind()
    uf.add("G", 3)

    def N(el, pin):
        return "N:" + pin_find(f"{el.name}.{pin}")

    node_pins: dict[str, list[str]] = {}
    for el in els:
        for pin in el.pins:
            item = N(el, pin)
            uf.add(item)
            node_pins.setdefault(item, []).append(f"{el.name}.{pin}")
    bodies = [el for el in els if el.kind in ("body", "stopmass")]
    prescribed = [el for el in els if el.kind == "prescribed"]
    for b in bodies:
        uf.add("B:" + b.name)
        half = b.params["L"] / 2.0
        for pin, off in (("flange_a", -half), ("flange_b", half), ("flange", 0.0)):
            if pin in b.pins and uf.link("B:" + b.name, N(b, pin), 1.0, off) != "ok":
                raise SimulationError("inconsistent_rigid_connection",
                                      f"{b.name}: its flanges are rigidly joined at incompatible "
                                      "positions (a loop of rigid connections)", block=b.name)
    for p in prescribed:
        uf.add("D:" + p.name, 2)

    def pins_of(item):
        r = uf.find(item)
        return sorted(p for it, ps in node_pins.items() if uf.find(it) == r for p in ps)

    for el in els:
        if el.kind == "gear":
            st = uf.link(N(el, "flange_b"), N(el, "flange_a"), el.params["ratio"], el.params["offset"])
            if st == "inconsistent":
                raise SimulationError("inconsistent_rigid_connection",
                                      f"{el.name}: closes a loop of rigid ties (gears, levers, rods, "
                                      "bodies) whose ratios or offsets disagree: the mechanism is locked "
                                      "or cannot be assembled", block=el.name)
            if st == "conflict":
                raise SimulationError("conflicting_prescribed_motion",
                                      f"{el.name}: rigidly ties together two flanges whose motion is "
                                      "prescribed (fixed or driven) independently", block=el.name)
    for el in els:
        if el.kind == "fixed":
            st = uf.link("G", N(el, "flange"), 1.0, el.params["pos"])
            if st == "inconsistent":
                raise SimulationError("conflicting_fixed",
                                      f"{el.name}: fixes a node that is already held at another "
                                      "position", block=el.name)
            if st == "conflict":
                raise SimulationError("conflicting_prescribed_motion",
                                      f"{el.name}: fixes a node whose motion is prescribed by a "
                                      "speed/acceleration source", block=el.name)
    for p in prescribed:
        if uf.link("D:" + p.name, N(p, "flange"), 1.0, 0.0) != "ok":
            raise SimulationError("conflicting_prescribed_motion",
                                  f"{p.name}: prescribes the motion of a node that is already fixed or "
                                  f"driven by another source ({', '.join(pins_of(N(p, 'flange')))})",
                                  block=p.name)
    ground = uf.find("G")

    # ---- roots: massive (bodies), driven (prescribed), massless
    massive, driven, massless = [], [], []
    root_kind: dict[str, str] = {}
    for b in bodies:
        r = uf.find("B:" + b.name)
        if r == ground or r.startswith("D:"):
            continue
        if r not in root_kind:
            root_kind[r] = "m"
            massive.append((r, b))
    for p in prescribed:
        r = uf.find("D:" + p.name)
        root_kind[r] = "z"
        driven.append((r, p))
    for el in els:
        for pin in el.pins:
            r = uf.find(N(el, pin))
            if r != ground and r not in root_kind:
                root_kind[r] = "0"
                massless.append(r)

    def rloc(item):
        """(root or None for ground, k, d) of an item relative to its root position."""
        r, k, d = uf.rel(item)
        return (None, 0.0, d) if r == ground else (r, k, d)

    # ---- per element: generalized coefficients over roots, and what it depends on
    def port_terms(el):
        """{root: coefficient} and constant of s_rel (two-port: s_b - s_a; one-port: s)."""
        if el.kind in ("nl2", "spring_damper", "clutch"):
            ra, ka, da = rloc(N(el, "flange_a"))
            rb, kb, db = rloc(N(el, "flange_b"))
            terms: dict = {}
            if rb is not None:
                terms[rb] = terms.get(rb, 0.0) + kb
            if ra is not None:
                terms[ra] = terms.get(ra, 0.0) - ka
            return {r: c for r, c in terms.items() if c != 0.0}, db - da
        r, k, d = rloc(N(el, "flange"))
        return ({r: k} if r is not None and k != 0.0 else {}), d

    flags: dict[str, set] = {r: set() for r in massless}
    for el in els:
        p = el.params
        if el.kind == "spring_damper":
            terms, _ = port_terms(el)
            for r in terms:
                if r in flags:
                    if p["c"] > 0:
                        flags[r].add("pos")
                    if p["d"] > 0:
                        flags[r].add("vel")
        elif el.kind == "ground_damper":
            terms, _ = port_terms(el)
            for r in terms:
                if r in flags and p["d"] != 0:
                    flags[r].add("vel")
        elif el.kind == "emf":        # a gyrator: each port's force follows the other's speed
            for pin in el.pins:
                r = rloc(N(el, pin))[0]
                if r in flags:
                    flags[r].add("vel")
        elif el.kind in ("nl1", "nl2"):
            law = p["law"]
            terms, _ = port_terms(el)
            for r in terms:
                if r in flags:
                    if law.pos_dep:
                        flags[r].add("pos")
                    if law.vel_dep:
                        flags[r].add("vel")
    v_roots, p_roots = [], []
    for r in massless:
        items = [it for it in node_pins if uf.find(it) == r]
        pins = pins_of(r)
        if len(items) == 1 and len(pins) == 1:          # one pin, connected to nothing
            raise SimulationError("massless_node",
                                  f"node {{{pins[0]}}} is not connected to anything: it has no "
                                  "mass/inertia and no fixed reference, so its motion is undetermined "
                                  "(connect it, add a mass or a Fixed)", block=pins[0].split(".")[0])
        if "vel" in flags[r]:
            v_roots.append(r)
        elif "pos" in flags[r]:
            p_roots.append(r)
        else:
            raise SimulationError("singular_island",
                                  f"{label}: node {{{', '.join(pins)}}} has no mass/inertia and nothing "
                                  "attached that determines its motion (only forces or nothing): the "
                                  "equations are singular (add a mass, a spring or a damper there)",
                                  block=pins[0].split(".")[0])

    # ---- coordinates Y = [massive | driven | V | P]
    n, nz, nv, npp = len(massive), len(driven), len(v_roots), len(p_roots)
    nY = n + nz + nv + npp
    coord: dict[str, tuple[int, float, float]] = {}   # root -> (iY, kp, dp): Y = kp*pos(root) + dp
    for i, (r, b) in enumerate(massive):
        _, kp, dp = uf.rel("B:" + b.name)
        coord[r] = (i, kp, dp)
    for j, (r, _) in enumerate(driven):
        coord[r] = (n + j, 1.0, 0.0)
    for j, r in enumerate(v_roots):
        coord[r] = (n + nz + j, 1.0, 0.0)
    for j, r in enumerate(p_roots):
        coord[r] = (n + nz + nv + j, 1.0, 0.0)

    def yloc(item):
        """(iY or -1, k, d): pos(item) = k*Y[iY] + d."""
        r, k, d = uf.rel(item)
        if r == ground:
            return -1, 0.0, d
        i, kp, dp = coord[r]
        return i, k / kp, d - k * dp / kp

    def yterms(el):
        """Dense coefficient vector over Y and constant of s_rel of an element."""
        terms, k0 = port_terms(el)
        vec = np.zeros(nY)
        for r, c in terms.items():
            i, kp, dp = coord[r]
            vec[i] += c / kp
            k0 -= c * dp / kp
        return vec, k0

    # ---- initial conditions
    x_extra = []            # (name, value)
    q0, v0 = np.zeros(n), np.zeros(n)
    q_set, v_set = [None] * n, [None] * n
    z0 = {}
    for j, (r, p) in enumerate(driven):
        z0[j] = p.params["s0"]
    for b in bodies:
        i, k, d = yloc("B:" + b.name)
        s0, w0 = b.params["s0"], b.params["v0"]
        if i < 0:
            if (s0 is not None and abs(s0 - d) > 1e-12 * max(1.0, abs(s0))) or (w0 not in (None, 0.0)):
                raise SimulationError("inconsistent_initial_conditions",
                                      f"{b.name} is rigidly fixed but its initial "
                                      f"{names['pos']}/{names['vel']} say otherwise", block=b.name)
            continue
        if i >= n:          # on a driven root: the prescribed motion wins
            if s0 is not None and abs(k * z0[i - n] + d - s0) > 1e-9 * max(1.0, abs(s0)):
                raise SimulationError("inconsistent_initial_conditions",
                                      f"{b.name}: initial {names['pos']} contradicts the start position "
                                      f"of the prescribed motion it is rigidly joined to", block=b.name)
            continue
        for val, store, arr, is_pos in ((s0, q_set, q0, True), (w0, v_set, v0, False)):
            if val is None:
                continue
            cand = (val - d) / k if is_pos else val / k
            if store[i] is not None and abs(store[i] - cand) > 1e-9 * max(1.0, abs(cand)):
                raise SimulationError("inconsistent_initial_conditions",
                                      f"{b.name}: initial {names['pos'] if is_pos else names['vel']} "
                                      "contradicts a rigidly joined body", block=b.name)
            store[i] = cand
            arr[i] = cand

    # ---- inputs
    input_names, signals, breakpoints = [], [], []
    for el in els:
        port = None
        if el.kind in ("source", "force2"):
            port = names["force"]
        elif el.kind == "clutch" or (el.kind == "brake" and el.params["law"].uses_normal_force):
            port = "f_normalized"
        elif el.kind in ("nl1", "nl2") and el.params["law"].uses_input:
            port = "f"
        elif el.kind == "prescribed" and el.params["mode"] != "const":
            port = names["vel"] if el.params["mode"] == "speed" else names["acc"]
        if port is not None:
            input_names.append(f"{el.name}.{port}")
            signals.append(el.signal)
            breakpoints.extend(el.breakpoints)
    n_in = len(input_names)
    u_index = {nm.split(".")[0]: k for k, nm in enumerate(input_names)}

    # ---- linear parts, time functions, non-linear and friction elements
    K = np.zeros((nY, nY))
    D = np.zeros((nY, nY))
    c0 = np.zeros(nY)
    B = np.zeros((nY, n_in))
    tfs = []                  # (iY, coef, fn)
    nls: list[_NL] = []
    frictions: list[_FrictionSlot] = []
    compliant = {}
    info = {}                 # element -> probe data
    for b in bodies:
        w = b.params.get("weight", 0.0)
        if w:
            i, k, _ = yloc("B:" + b.name)
            if i >= 0:
                c0[i] += k * w
    for el in els:
        p = el.params
        if el.kind == "spring_damper":
            r, k0 = yterms(el)
            K -= p["c"] * np.outer(r, r)
            D -= p["d"] * np.outer(r, r)
            c0 -= p["c"] * (k0 - p["rel0"]) * r
            compliant[el.name] = (r, k0, p["c"], p["d"], p["rel0"])
        elif el.kind == "emf":
            rel, rot = np.zeros(nY), np.zeros(nY)     # s_p - s_n and s_flange over Y
            for vec, pin, sign in ((rel, "flange_a", 1.0), (rel, "flange_b", -1.0), (rot, "flange", 1.0)):
                i, k, _ = yloc(N(el, pin))
                if i >= 0:
                    vec[i] += sign * k
            D += p["k"] * (np.outer(rot, rel) - np.outer(rel, rot))
            info[el.name] = ("emf", rel, rot, p["k"])
        elif el.kind == "ground_damper":
            i, k, _ = yloc(N(el, "flange"))
            if i >= 0:
                D[i, i] -= p["d"] * k * k
            info[el.name] = ("gdamp", i, k, p["d"])
        elif el.kind == "source":
            i, k, _ = yloc(N(el, "flange"))
            if i >= 0:
                B[i, u_index[el.name]] += k
            if p["use_support"]:
                i, k, _ = yloc(N(el, "support"))
                if i >= 0:
                    B[i, u_index[el.name]] -= k
            info[el.name] = ("input", u_index[el.name])
        elif el.kind == "force2":
            ia, ka, _ = yloc(N(el, "flange_a"))
            ib, kb, _ = yloc(N(el, "flange_b"))
            if ia >= 0:
                B[ia, u_index[el.name]] += ka
            if ib >= 0:
                B[ib, u_index[el.name]] -= kb
            info[el.name] = ("input", u_index[el.name])
        elif el.kind == "timeforce":
            i, k, _ = yloc(N(el, "flange"))
            fn = p["fn"]
            if i >= 0:
                if isinstance(fn, elm.Constant):
                    c0[i] += k * fn.value
                else:
                    tfs.append((i, k, fn))
            info[el.name] = ("time", fn)
        elif el.kind in ("nl1", "nl2"):
            vec, k0 = yterms(el)
            idx = np.nonzero(vec)[0]
            nls.append(_NL(el.name, p["law"], idx, vec[idx], k0, u_index.get(el.name, -1),
                           el.kind == "nl1"))
        elif el.kind in ("brake", "clutch", "stopmass"):
            law = p["law"]
            if el.kind == "clutch":
                vec, _ = yterms(el)
            elif el.kind == "brake":
                ib, kb, _ = yloc(N(el, "flange_a"))
                vec = np.zeros(nY)
                if ib >= 0:
                    vec[ib] += kb
                if p["use_support"]:
                    ia, ka, _ = yloc(N(el, "support"))
                    if ia >= 0:
                        vec[ia] -= ka
            else:
                i, k, _ = yloc("B:" + el.name)
                vec = np.zeros(nY)
                if i >= 0:
                    vec[i] = k
            if np.any(vec[n + nz:]):
                bad = [pins_of(it) for it in (N(el, pn) for pn in el.pins if pn != "flange")
                       if (yloc(it)[0] >= n + nz)]
                raise SimulationError("massless_friction",
                                      f"{el.name}: a stick-slip friction element needs a mass/inertia "
                                      "(or a fixed or driven flange) on each side; node "
                                      f"{{{', '.join(bad[0] if bad else [])}}} has none", block=el.name)
            if not np.any(vec[:n]):
                raise SimulationError("degenerate_friction",
                                      f"{el.name}: both sides of the friction element are rigidly "
                                      "tied together (or both fixed or driven), so it can never slide",
                                      block=el.name)
            s_loc = yloc("B:" + el.name) if el.kind == "stopmass" else (-1, 1.0, 0.0)
            frictions.append(_FrictionSlot(el.name, law, vec[:n].copy(), vec[:n + nz].copy(), s_loc,
                                           u_index.get(el.name, -1)))

    # ---- prescribed motion: states and masses
    drv = []
    xi = 2 * n
    Mz = np.zeros(nz)
    for j, (r, p) in enumerate(driven):
        mode = p.params["mode"]
        xz = xi
        x_extra.append((f"{p.name}.{names['pos']}", p.params["s0"]))
        xi += 1
        xw = -1
        if mode == "acc":
            xw = xi
            x_extra.append((f"{p.name}.{names['vel']}", p.params["v0"]))
            xi += 1
        drv.append(_Driven(p.name, mode, xz, xw, u_index.get(p.name, -1), p.params["v"], p.signal, n + j))
    for b in bodies:
        i, k, _ = yloc("B:" + b.name)
        if n <= i < n + nz:
            Mz[i - n] += b.params["mass"] * k * k
    mass = np.zeros(n)
    for b in bodies:
        i, k, _ = yloc("B:" + b.name)
        if 0 <= i < n:
            mass[i] += b.params["mass"] * k * k

    # ---- V nodes: start positions (damper relative displacement 0, or given)
    known = {}
    for i in range(n):
        known[i] = q0[i]
    for j in range(nz):
        known[n + j] = z0[j]
    vstart = {}
    for pin, val in starts.items():
        el_name = pin.split(".")[0]
        if any(e.name == el_name for e in els):
            i, k, d = yloc("N:" + pin_find(pin))
            if n + nz <= i < n + nz + nv:
                vstart[i] = (val - d) / k
    known.update(vstart)
    vel_links = []
    for el in els:
        p = el.params
        if (el.kind == "spring_damper" and p["d"] > 0) or (el.kind == "nl2" and p["law"].vel_dep):
            vel_links.append((yloc(N(el, "flange_a")), yloc(N(el, "flange_b"))))
    changed = True
    while changed:
        changed = False
        for la, lb in vel_links:
            for (i1, k1, d1), (i2, k2, d2) in ((la, lb), (lb, la)):
                if n + nz <= i2 < n + nz + nv and i2 not in known and (i1 < 0 or i1 in known):
                    s1 = d1 + (k1 * known[i1] if i1 >= 0 else 0.0)
                    known[i2] = (s1 - d2) / k2
                    changed = True
    p0 = np.array([known.get(n + nz + j, 0.0) for j in range(nv)])
    for j, r in enumerate(v_roots):
        x_extra.append((f"{pins_of(r)[0]}.{names['pos']}", p0[j]))
    x_p = np.arange(xi, xi + nv)

    pin_loc = {}
    for el in els:
        for pin in el.pins:
            pin_loc[f"{el.name}.{pin}"] = yloc(N(el, pin))
    body_loc = {b.name: yloc("B:" + b.name) for b in bodies}
    for p in prescribed:
        body_loc.setdefault(p.name, yloc("D:" + p.name))
    node_names = [pins_of(r) for r in v_roots] + [pins_of(r) for r in p_roots]
    dof_names = [b.name for _, b in massive]
    return Island(domain=domain, label=label, mass=mass, q0=q0, v0=v0, K=K, D=D, c0=c0, B=B,
                  nz=nz, nv=nv, np_=npp, drv=drv, Mz=Mz, x_extra=x_extra, x_p=x_p, tfs=tfs, nls=nls,
                  frictions=frictions, input_names=input_names, signals=signals,
                  breakpoints=sorted(set(breakpoints)), dof_names=dof_names, pin_loc=pin_loc,
                  body_loc=body_loc, compliant=compliant, info=info, node_names=node_names,
                  elements=[el.name for el in els])


def _node_label(pins):
    return "{" + ", ".join(pins) + "}"


class Island:
    """A connected mechanical network compiled to a hybrid system (see module doc)."""

    def __init__(self, *, domain, label, mass, q0, v0, K, D, c0, B, nz, nv, np_, drv, Mz, x_extra,
                 x_p, tfs, nls, frictions, input_names, signals, breakpoints, dof_names, pin_loc,
                 body_loc, compliant, info, node_names, elements):
        self.domain = domain
        self.label = label
        self._names = _DOMAINS[domain]
        n = self.n = len(mass)
        self.nz, self.nv, self.np = nz, nv, np_
        nY = self.nY = n + nz + nv + np_
        self.mass = mass
        with np.errstate(divide="ignore", over="ignore"):
            minv = 1.0 / mass if n else mass
        tiny = np.nonzero(~np.isfinite(minv))[0]
        if tiny.size:   # 0, or so small that 1/m overflows: no numpy warning, a typed error now
            # (the code the run would end with: its accelerations would not be finite)
            name = dof_names[tiny[0]]
            what = self._names["mass"]
            raise SimulationError("non_finite_state", f"{name}: the {'inertia' if what == 'J' else 'mass'} of "
                                  f"this body ({mass[tiny[0]]:.3g}, with what is rigidly tied to it) is too small: "
                                  "its inverse, and so its acceleration, overflows double precision",
                                  block=name, param=what)
        self._minv = minv
        for what, mat in (("stiffness", K), ("damping", D), ("constant force", c0), ("input gain", B)):
            if not np.all(np.isfinite(mat)):
                raise SimulationError("non_finite_state", f"{label}: a {what} coefficient of the network is "
                                      "not finite (parameters so large that their products overflow double "
                                      "precision)", block=elements[0] if elements else None)
        self.Mz = Mz
        self.x0 = np.concatenate((q0, v0, np.array([v for _, v in x_extra], dtype=float)))
        self._K, self._D, self._c0, self._B = K, D, c0, B
        self._zs = slice(n, n + nz)
        self._vs = slice(n + nz, n + nz + nv)
        self._ps = slice(n + nz + nv, nY)
        self._nx = n + nz
        self._drv = drv
        self._xz = np.array([d.xz for d in drv], dtype=int)
        self._x_p = np.asarray(x_p, dtype=int)
        self._tfs = tfs
        self._nls = nls
        self._switched = [e for e in nls if e.law.switched]
        self._n_switch_rel = sum(e.law.n_relations for e in self._switched)
        self._simple = nY == n
        self._fast = self._simple and not nls and not tfs
        self._Klin = np.hstack((K[:n, :n], D[:n, :n])) if n else np.zeros((0, 0))
        self._Bu = B[:n]
        self._initial = False
        self._node_names = node_names
        self._info = info
        self._compliant = compliant
        self.frictions = frictions
        self._fidx = {f.name: i for i, f in enumerate(frictions)}
        self._nlidx = {e.name: e for e in nls}
        self._drvidx = {d.name: j for j, d in enumerate(drv)}
        # speed sources driven through ``inputs`` (no callable signal): the caller keeps
        # ``input_rates`` at these slots equal to the input's time derivative
        self.rate_inputs = frozenset(d.u for d in drv if d.mode == "speed" and signals[d.u] is None)
        self.input_names = list(input_names)
        self.inputs = np.zeros(len(input_names))
        self.input_rates = np.zeros(len(input_names))
        self._signals = list(signals)
        self._breakpoints = np.asarray(breakpoints, dtype=float)
        self.input_fn: Callable | None = None
        if any(s is not None for s in signals):
            self._default_inputs()
        self.dof_names = dof_names
        self.state_names = ([f"{d}.{self._names['pos']}" for d in dof_names]
                            + [f"{d}.{self._names['vel']}" for d in dof_names]
                            + [nm for nm, _ in x_extra])
        self._pin_loc = pin_loc
        self._body_loc = body_loc
        self.element_names = elements
        self.events: list[PhysicalEvent] = []
        self._kkt_cache: dict = {}
        self._cache_key = None
        self._cache_val = None
        self._epoch = 0
        self._prepare_massless()
        self._commit([FrictionState() for _ in frictions])
        self._prepare_scalar()

    def _prepare_scalar(self):
        """One massive coordinate and nothing else (no driven, massless or extra states,
        no non-linear or time-function forces): ``derivative`` then works on Python
        floats, with the same operations in the same order as the array path."""
        n = self.n
        self._scalar = None
        if not (n == 1 and self._fast and self.nz == 0 and len(self.x0) == 2):
            return
        if any(len(f.G) != 1 or len(f.Gx) != 1 for f in self.frictions):
            return
        B = tuple(float(b) for b in self._Bu[0]) if self._Bu.size else ()
        self._scalar = (float(self._Klin[0, 0]), float(self._Klin[0, 1]), float(self._c0[0]), B,
                        [(float(f.G[0]), float(f.Gx[0])) for f in self.frictions])

    # -- massless nodes ----------------------------------------------------------------
    def _rows_nl(self, sl):
        lo, hi = sl.start, sl.stop
        return any(np.any((e.idx >= lo) & (e.idx < hi)) for e in self._nls)

    def _prepare_massless(self):
        nv, npp = self.nv, self.np
        self._p_guess = np.zeros(npp)
        self._v_guess = np.zeros(nv)
        self._p_linear = not self._rows_nl(self._ps)
        self._v_linear = not self._rows_nl(self._vs)
        p_names = self._node_names[nv:]
        v_names = self._node_names[:nv]
        if npp and self._p_linear:
            KPP = self._K[self._ps, self._ps]
            self._Pmat = self._inverse(KPP, p_names, "position", "springs")
        if nv and self._v_linear:
            DVV = self._D[self._vs, self._vs]
            self._Vmat = self._inverse(DVV, v_names, "velocity", "dampers")

    def _inverse(self, Mat, node_names, what, by):
        sv = np.linalg.svd(Mat, compute_uv=False)
        if sv[-1] <= 1e-12 * max(sv[0], 1e-300):
            raise SimulationError(
                "singular_island",
                f"{self.label}: the {what} of the massless node(s) "
                f"{', '.join(_node_label(p) for p in node_names)} is not determined by the {by} "
                "attached (a massless part of the network floats freely): the equations are singular",
                block=node_names[0][0].split(".")[0] if node_names and node_names[0] else None)
        return -np.linalg.inv(Mat)

    def _newton(self, res, z0, names, what, t):
        """Solve ``res(z) = 0`` (small, possibly non-smooth: ``roots.newton`` with a
        difference Jacobian). A singular Jacobian at the start point (a piecewise law in
        its flat part) retries from a few other start points."""
        z0 = np.asarray(z0, dtype=float)
        scale = 1.0 + np.abs(z0)
        starts = [z0, np.zeros_like(z0), z0 + 1e-3 * scale, z0 - 1e-3 * scale, z0 + scale, z0 - scale]
        label = ", ".join(_node_label(p) for p in names)
        block = names[0][0].split(".")[0] if names and names[0] else None
        for z_start in starts:
            result = roots.newton(res, z_start, tol=1e-13, max_iterations=NEWTON_MAX, halvings=20)
            if result.converged:
                return result.z
            if not result.singular:
                z, R = result.z, result.f
                if float(np.max(np.abs(R))) <= 1e-9 * (1.0 + float(np.max(np.abs(z)))):
                    return z
                raise SimulationError("massless_solve_failed",
                                      f"{self.label}: at t={t:.17g} no {what} balances the forces on the "
                                      f"massless node(s) {label}", block=block)
        raise SimulationError("singular_island",
                              f"{self.label}: at t={t:.17g} the {what} of the massless node(s) {label} is not "
                              "determined by the elements attached in their present state (e.g. an open gap or a "
                              "free play leaves a force unbalanced): the equations are singular", block=block)

    def _time_vec(self, t):
        T = np.zeros(self.nY)
        for i, c, fn in self._tfs:
            T[i] += c * fn(t)
        return T

    def _lin(self, t, Y, Yd, u):
        F = self._K @ Y + self._D @ Yd + self._c0
        if u.size:
            F += self._B @ u
        if self._tfs:
            F += self._time_vec(t)
        return F

    def _forces(self, t, Y, Yd, u):
        """Generalized forces on every coordinate (without the MSL friction elements)."""
        F = self._lin(t, Y, Yd, u)
        initial = self._initial
        for e in self._nls:
            uu = u[e.u] if e.u >= 0 else 0.0
            if e.i0 >= 0:
                c = e.c0
                f = e.law.force(c * Y[e.i0] + e.k0, c * Yd[e.i0], uu, e.mode, initial)
                F[e.i0] -= f * c
            else:
                f = e.law.force(float(e.coef @ Y[e.idx]) + e.k0, float(e.coef @ Yd[e.idx]), uu, e.mode,
                                initial)
                F[e.idx] -= f * e.coef
        return F

    def _zdot(self, t, x, u):
        out = np.empty(self.nz)
        for j, d in enumerate(self._drv):
            if d.mode == "speed":
                out[j] = u[d.u]
            elif d.mode == "const":
                out[j] = d.v
            else:
                out[j] = x[d.xw]
        return out

    def _zddot(self, t, x, u):
        out = np.zeros(self.nz)
        for j, d in enumerate(self._drv):
            if d.mode == "acc":
                out[j] = u[d.u]
            elif d.mode == "speed":
                sig = self._signals[d.u]
                out[j] = sig.rate(t) if callable(sig) else float(self.input_rates[d.u])
        return out

    def _kin(self, t, x, u, need_vel=True):
        """Positions ``Y`` and velocities ``Yd`` of every coordinate (massless P-node
        velocities are left 0: nothing needs them but probes)."""
        n = self.n
        if self._simple:
            return x[:n], x[n:2 * n]
        Y = np.empty(self.nY)
        Yd = np.zeros(self.nY)
        Y[:n] = x[:n]
        Yd[:n] = x[n:2 * n]
        if self.nz:
            Y[self._zs] = x[self._xz]
            Yd[self._zs] = self._zdot(t, x, u)
        if self.nv:
            Y[self._vs] = x[self._x_p]
        if self.np:
            Y[self._ps] = self._solve_p(t, Y, Yd, u)
        if self.nv and need_vel:
            Yd[self._vs] = self._solve_v(t, Y, Yd, u)
        return Y, Yd

    def _solve_p(self, t, Y, Yd, u):
        ps = self._ps
        if self._p_linear:
            Y[ps] = 0.0
            return self._Pmat @ self._lin(t, Y, Yd, u)[ps]

        def res(r):
            Y[ps] = r
            return self._forces(t, Y, Yd, u)[ps]

        r = self._newton(res, self._p_guess, self._node_names[self.nv:], "position", t)
        self._p_guess = r.copy()
        return r

    def _solve_v(self, t, Y, Yd, u):
        vs = self._vs
        if self._v_linear:
            Yd[vs] = 0.0
            return self._Vmat @ self._lin(t, Y, Yd, u)[vs]

        def res(w):
            Yd[vs] = w
            return self._forces(t, Y, Yd, u)[vs]

        w = self._newton(res, self._v_guess, self._node_names[:self.nv], "velocity", t)
        self._v_guess = w.copy()
        return w

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
        best = math.inf
        bp = self._breakpoints
        if bp.size:
            k = np.searchsorted(bp, t, side="right")
            if k < bp.size:
                best = float(bp[k])
        for _, _, fn in self._tfs:
            tb = fn.next_break(t)
            if tb < best:
                best = tb
        return best

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
            W = np.zeros((n, 0))
            Sinv = np.zeros((0, 0))
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
            Sinv = np.linalg.inv(S)
            Lam = np.linalg.solve(S, GM)
            A = np.diag(minv) - (minv[:, None] * GL.T) @ Lam
            W = (minv[:, None] * GL.T) @ Sinv
        entry = (A, Lam, idx, W, Sinv)
        if len(self._kkt_cache) > 4096:
            self._kkt_cache.clear()
        self._kkt_cache[locked] = entry
        return entry

    def _base(self, t, x, u):
        """``(F_m, Vx, Y, Yd, F)``: generalized forces on the massive coordinates (no MSL
        friction), velocities of massive + driven coordinates, all positions/velocities
        and all generalized forces."""
        n = self.n
        if self._fast:
            F = self._Klin @ x[:2 * n] + self._c0
            if u.size:
                F = F + self._Bu @ u
            return F, x[n:2 * n], x[:n], x[n:2 * n], F
        Y, Yd = self._kin(t, x, u)
        F = self._forces(t, Y, Yd, u)
        return F[:n], Yd[:self._nx], Y, Yd, F

    def _locked_h(self, idx, zdd):
        return np.array([-float(self.frictions[i].Gx[self.n:] @ zdd) for i in idx])

    def _solve(self, t, x, u, branches, locked, base=None):
        """Accelerations and sa per friction element for the given branches."""
        if base is None:
            base = self._base(t, x, u)
        F, Vx = base[0], base[1]
        fl = self.frictions
        fn_all = [0.0] * len(fl)
        F = F.copy()
        for i, f in enumerate(fl):
            fn = f.fn_max * u[f.u_index] if f.u_index >= 0 else 0.0
            fn_all[i] = fn
            br = branches[i]
            if br >= fr.START_F:
                F -= f.law.force(br, float(f.Gx @ Vx), fn) * f.G
        A, Lam, idx, W, Sinv = self._kkt(locked)
        a = A @ F
        zdd = self._zddot(t, x, u) if (self.nz and fl) else None
        sa = [0.0] * len(fl)
        if idx:
            lam = Lam @ F
            if zdd is not None:
                h = self._locked_h(idx, zdd)
                if np.any(h):
                    a = a + W @ h
                    lam = lam - Sinv @ h
            for j, i in enumerate(idx):
                sa[i] = float(lam[j])
        for i, f in enumerate(fl):
            br = branches[i]
            if br != fr.LOCKED:
                _, f0_max = f.law.thresholds(fn_all[i])
                arel = float(f.G @ a)
                if zdd is not None:
                    arel += float(f.Gx[self.n:] @ zdd)
                sa[i] = fr.sa_from_arel(br, arel, f0_max)
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
        self._A_scalar = None   # its one entry, for _derivative_scalar
        self._need_sa = any(code in (fr.REL_SA_FMAX_POS, fr.REL_SA_F0_POS, fr.REL_SA_FMAX_NEG,
                                     fr.REL_SA_F0_NEG) for f in self.frictions for code in f.watch)
        self._n_events = sum(len(f.watch) for f in self.frictions) + self._n_switch_rel
        self._need_h = bool(self.nz) and any(self.frictions[i].has_z
                                             for i, lk in enumerate(self._locked) if lk)
        self._epoch += 1

    # -- hybrid-system interface ---------------------------------------------------------
    def _derivative_scalar(self, t, x):
        """``derivative`` of a one-coordinate island (``_prepare_scalar``) in floats."""
        K, D, c0, B, rows = self._scalar
        u = self._u(t, x)
        q, v = x.tolist()
        uu = u.tolist()
        F = K * q + D * v + c0                       # _base: Klin @ [q, v] + c0
        if B:
            Bu = B[0] * uu[0]
            for j in range(1, len(B)):
                Bu = Bu + B[j] * uu[j]
            F = F + Bu                               # ... + Bu @ u
        fl = self.frictions
        for i, br in self._sliding:
            f = fl[i]
            G, Gx = rows[i]
            fn = f.fn_max * uu[f.u_index] if f.u_index >= 0 else 0.0
            F = F - f.law.force(br, Gx * v, fn) * G
        a0 = self._A_scalar
        if a0 is None:
            A = self._A
            if A is None:
                A = self._A = self._kkt(self._locked)[0]
            a0 = self._A_scalar = float(A[0, 0])
        return np.array((v, a0 * F))

    def derivative(self, t, x):
        x = np.asarray(x, dtype=float)
        if self._scalar is not None and not self._need_h:
            return self._derivative_scalar(t, x)
        n = self.n
        u = self._u(t, x)
        F, Vx, _, Yd, _ = self._base(t, x, u)
        fl = self.frictions
        if self._sliding:
            F = F.copy()
            for i, br in self._sliding:
                f = fl[i]
                fn = f.fn_max * u[f.u_index] if f.u_index >= 0 else 0.0
                F -= f.law.force(br, float(f.Gx @ Vx), fn) * f.G
        A = self._A
        if A is None:
            A = self._A = self._kkt(self._locked)[0]
        a = A @ F
        if self._need_h:
            _, _, idx, W, _ = self._kkt(self._locked)
            a = a + W @ self._locked_h(idx, self._zddot(t, x, u))
        if self._simple:
            return np.concatenate((x[n:2 * n], a))
        xdot = np.empty(len(x))
        xdot[:n] = x[n:2 * n]
        xdot[n:2 * n] = a
        for d in self._drv:
            xdot[d.xz] = Yd[d.iy]
            if d.xw >= 0:
                xdot[d.xw] = u[d.u]
        if self.nv:
            xdot[self._x_p] = Yd[self._vs]
        return xdot

    def _switch_relations(self, Y):
        out = []
        for e in self._switched:
            out.extend(e.law.relations(float(e.coef @ Y[e.idx]) + e.k0))
        return out

    def _event_functions_scalar(self, t, x):
        """``event_functions`` of a one-coordinate island (``_prepare_scalar``) in floats:
        ``_base`` and ``_solve`` (for ``sa``) written out for one coordinate."""
        K, D, c0, B, rows = self._scalar
        u = self._u(t, x)
        q, v = x.tolist()
        uu = u.tolist()
        F = K * q + D * v + c0
        if B:
            Bu = B[0] * uu[0]
            for j in range(1, len(B)):
                Bu = Bu + B[j] * uu[j]
            F = F + Bu
        fl = self.frictions
        branches = self._branches
        sa = None
        if self._need_sa:
            Fs = F
            fn_all = []
            for i, f in enumerate(fl):
                fn = f.fn_max * uu[f.u_index] if f.u_index >= 0 else 0.0
                fn_all.append(fn)
                br = branches[i]
                if br >= fr.START_F:
                    G, Gx = rows[i]
                    Fs = Fs - f.law.force(br, Gx * v, fn) * G
            A, Lam, idx, _, _ = self._kkt(self._locked)
            a = float(A[0, 0]) * Fs
            sa = [0.0] * len(fl)
            for j, i in enumerate(idx):
                sa[i] = float(Lam[j, 0]) * Fs
            for i, f in enumerate(fl):
                br = branches[i]
                if br != fr.LOCKED:
                    _, f0_max = f.law.thresholds(fn_all[i])
                    sa[i] = fr.sa_from_arel(br, rows[i][0] * a, f0_max)
        out = []
        for i, f in enumerate(fl):
            if not f.watch:
                continue
            fn = f.fn_max * uu[f.u_index] if f.u_index >= 0 else 0.0
            self._append_relations(out, f, rows[i][1] * v, fn, sa[i] if sa else 0.0, x)
        return np.array(out)

    def event_functions(self, t, x):
        if self._n_events == 0:
            return np.zeros(0)
        x = np.asarray(x, dtype=float)
        if self._scalar is not None and not self._switched:
            return self._event_functions_scalar(t, x)
        u = self._u(t, x)
        base = self._base(t, x, u)
        Vx, Y = base[1], base[2]
        fl = self.frictions
        sa = None
        if self._need_sa:
            _, sa, _ = self._solve(t, x, u, self._branches, self._locked, base)
        out = []
        for i, f in enumerate(fl):
            if not f.watch:
                continue
            fn = f.fn_max * u[f.u_index] if f.u_index >= 0 else 0.0
            self._append_relations(out, f, float(f.Gx @ Vx), fn, sa[i] if sa else 0.0, x)
        if self._switched:
            out.extend(self._switch_relations(Y))
        return np.array(out)

    def relation_values(self, t, x):
        """Committed relation values at a restart: Modelica semantics, ``g == 0`` is false;
        the contact relations of gaps/backlashes take their committed contact state."""
        g = self.event_functions(t, x)
        out = (g > 0.0).astype(float)
        if self._switched:
            k = len(out) - self._n_switch_rel
            for e in self._switched:
                for val in e.law.mode_relations(e.mode):
                    out[k] = val
                    k += 1
        return out

    def event_labels(self):
        """Human names of the current event functions (same order as event_functions)."""
        names = {fr.REL_V_POS: "v>0", fr.REL_V_NEG: "v<0", fr.REL_FN: "fn>0",
                 fr.REL_ROOM_F: "s<smax", fr.REL_ROOM_B: "s>smin", fr.REL_SA_FMAX_POS: "sa>f0_max",
                 fr.REL_SA_F0_POS: "sa>f0", fr.REL_SA_FMAX_NEG: "sa<-f0_max", fr.REL_SA_F0_NEG: "sa<-f0"}
        out = [f"{f.name}:{names[c]}" for f in self.frictions for c in f.watch]
        for e in self._switched:
            if isinstance(e.law, elm.ElastoGap):
                out.append(f"{e.name}:s_rel<s_rel0")
            else:
                out += [f"{e.name}:phi_rel>bMax", f"{e.name}:phi_rel<bMin"]
        return out

    def _position(self, f, x):
        return float(f.s_k * x[f.s_dof] + f.s_off) if f.s_dof >= 0 else f.s_off

    def _append_relations(self, out, f, vr, fn, sa_i, x):
        """Append the values (``g > 0`` form) of the relations friction element ``f``
        watches: relative speed ``vr``, normal force ``fn``, path parameter ``sa_i``."""
        f0, f0_max = f.law.thresholds(fn)
        for code in f.watch:
            if code == fr.REL_V_POS:
                out.append(vr)
            elif code == fr.REL_V_NEG:
                out.append(-vr)
            elif code == fr.REL_FN:
                out.append(fn)
            elif code == fr.REL_ROOM_F:
                out.append(f.law.smax_eff - self._position(f, x))
            elif code == fr.REL_ROOM_B:
                out.append(self._position(f, x) - f.law.smin_eff)
            elif code == fr.REL_SA_FMAX_POS:
                out.append(sa_i - f0_max)
            elif code == fr.REL_SA_F0_POS:
                out.append(sa_i - f0)
            elif code == fr.REL_SA_FMAX_NEG:
                out.append(-sa_i - f0_max)
            else:  # REL_SA_F0_NEG
                out.append(-sa_i - f0)

    def _iteration_step(self, t, x, u, pre, initial):
        """One Modelica event-iteration step with the pre values ``pre`` held fixed."""
        fl = self.frictions
        m = len(fl)
        if m == 0:
            return [], []
        base = self._base(t, x, u)
        Vx = base[1]
        vr, fn, free, room_f, room_b, thr = [], [], [], [], [], []
        for f in fl:
            vr.append(float(f.Gx @ Vx))
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
            _, sa, _ = self._solve(t, x, u, branches, locked, base)
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

    def _settle_switches(self, t, x, u):
        """Set the contact states of gaps/backlashes from their relations at ``(t, x)``,
        iterating because massless-node positions depend on them.  True if any changed.

        When the fixed-point iteration fails (a massless node that only an element in
        the other contact state can hold, or a cycle), the contact states of the elements
        acting on massless P nodes are searched for a consistent combination (Modelica's
        mixed boolean/real system)."""
        sw = self._switched
        if not sw:
            return False
        start = [e.mode for e in sw]
        failure = None
        try:
            for _ in range(MAX_SWITCH_ITERATIONS):
                Y, _ = self._kin(t, x, u, need_vel=False)
                new = [e.law.mode_from(float(e.coef @ Y[e.idx]) + e.k0) for e in sw]
                if all(e.mode == m for e, m in zip(sw, new)):
                    return new != start
                for e, m in zip(sw, new):
                    e.mode = m
        except SimulationError as err:
            if err.code not in ("singular_island", "massless_solve_failed"):
                raise
            failure = err
        if failure is None:
            failure = SimulationError("event_iteration_limit",
                                      f"{self.label}: the contact states of "
                                      f"{', '.join(e.name for e in sw)} did not settle at t={t:.17g}")
        lo = self._ps.start
        on_p = [e for e in sw if np.any(e.idx >= lo)]
        combos = itertools.product(*[sorted(e.law.mode_names) for e in on_p]) if on_p else ()
        for k, combo in enumerate(combos):
            if k >= 729:
                break
            for e, m in zip(on_p, combo):
                e.mode = m
            try:
                Y, _ = self._kin(t, x, u, need_vel=False)
            except SimulationError as err:
                if err.code in ("singular_island", "massless_solve_failed"):
                    continue
                raise
            if all(e.law.mode_from(float(e.coef @ Y[e.idx]) + e.k0) == m for e, m in zip(on_p, combo)):
                for e in sw:
                    if e not in on_p:
                        e.mode = e.law.mode_from(float(e.coef @ Y[e.idx]) + e.k0)
                return [e.mode for e in sw] != start
        for e, m in zip(sw, start):
            e.mode = m
        raise failure

    def _event_iteration(self, t, x, initial=False):
        pre = [f.state for f in self.frictions]
        if initial:
            pre = [FrictionState(UNKNOWN, False, False,
                                 fr.stop_indicator(f.law, self._position(f, x))) for f in self.frictions]
        before = [f.state for f in self.frictions]
        stops = []
        states = pre
        for it in range(MAX_EVENT_ITERATIONS):
            u = self._u(t, x)
            sw_changed = self._settle_switches(t, x, u)
            states, reinit = self._iteration_step(t, x, u, pre, initial and it == 0)
            for i, stopped in reinit:
                f = self.frictions[i]
                target = f.law.smin_eff if stopped < 0 else f.law.smax_eff
                x[f.s_dof] = (target - f.s_off) / f.s_k
                x[self.n + f.s_dof] = 0.0
                stops.append((i, stopped, pre[i].mode))
            if states == pre and not reinit and not sw_changed:
                break
            pre = states
        else:
            changing = [f.name for f, a, b in zip(self.frictions, pre, states) if a != b]
            raise SimulationError("event_iteration_limit",
                                  f"{self.label}: event iteration at t={t:.17g} did not converge "
                                  f"in {MAX_EVENT_ITERATIONS} steps (still changing: "
                                  f"{', '.join(changing) or 'reinit/contact'})")
        return before, states, stops

    def initialize(self, t0, x0):
        """Initial event iteration (MSL ``initial()``); also checks the stop assertions.
        Gap/backlash contact states start from the initialisation law (ElastoBacklash's
        monotone variant)."""
        x = np.array(x0, dtype=float)
        n = self.n
        for f in self.frictions:
            if f.law.has_stops:
                fr.check_initial_stop(f.law, self._position(f, x), float(x[n + f.s_dof]))
        self.events = []
        self._kkt_cache = {}
        self._p_guess = np.zeros(self.np)
        self._v_guess = np.zeros(self.nv)
        for e in self._switched:
            e.mode = 0
        if self._switched:
            self._initial = True
            try:
                self._settle_switches(t0, x, self._u(t0, x))
            finally:
                self._initial = False
        _, states, _ = self._event_iteration(t0, x, initial=True)
        self._commit(states)
        self._A = self._kkt(self._locked)[0]
        return x

    def handle_events(self, t, x, fired=()):
        x = np.array(x, dtype=float)
        sw_before = [e.mode for e in self._switched]
        before, states, stops = self._event_iteration(t, x)
        for i, stopped, mode_then in stops:
            self.events.append(PhysicalEvent(t, self.frictions[i].name, "stop",
                                             MODE_NAMES[mode_then], "stop"))
        for f, a, b in zip(self.frictions, before, states):
            if a.mode != b.mode:
                self.events.append(PhysicalEvent(t, f.name, "mode", MODE_NAMES[a.mode],
                                                 MODE_NAMES[b.mode]))
        for e, m0 in zip(self._switched, sw_before):
            if e.mode != m0:
                self.events.append(PhysicalEvent(t, e.name, "contact", e.law.mode_names[m0],
                                                 e.law.mode_names[e.mode]))
        self._commit(states)
        self._A = self._kkt(self._locked)[0]
        return x

    # -- reading -------------------------------------------------------------------------
    def _loc(self, target):
        if target in self._pin_loc:
            return self._pin_loc[target]
        if target in self._body_loc:
            return self._body_loc[target]
        if "." in target:
            name, pin = target.split(".", 1)
            for alt in ("flange_" + pin, "flange_a" if pin == "flange" else None):
                if alt and f"{name}.{alt}" in self._pin_loc:
                    return self._pin_loc[f"{name}.{alt}"]
        raise KeyError(f"{target!r} is neither a pin ('element.pin') nor a body of {self.label}")

    def _point(self, t, x):
        """``(u, Y, Yd, F)`` at ``(t, x)`` in the committed modes (cached for the probes of
        one sample)."""
        x = np.asarray(x, dtype=float)
        u = self._u(t, x)
        key = (t, x.tobytes(), u.tobytes(), self.input_rates.tobytes(), self._epoch)
        if key != self._cache_key:
            base = self._base(t, x, u)
            self._cache_val = (u.copy(), np.array(base[2], dtype=float), np.array(base[3], dtype=float),
                               np.array(base[4], dtype=float))
            self._cache_key = key
        return self._cache_val

    def _p_rates(self, t, x):
        """Velocities of the massless P nodes by central differences along the motion
        (inputs filled by the caller are taken as constant over the tiny step)."""
        x = np.asarray(x, dtype=float)
        xdot = self.derivative(t, x)
        h = 1e-6 * max(1.0, abs(t))
        out = []
        for s in (1.0, -1.0):
            xs = x + s * h * xdot
            out.append(self._kin(t + s * h, xs, self._u(t + s * h, xs), need_vel=False)[0][self._ps])
        self._u(t, x)
        return (out[0] - out[1]) / (2.0 * h)

    def _pos_at(self, loc, t, x):
        i, k, d = loc
        if i < 0:
            return float(d)
        if i < self.n:
            return float(k * x[i] + d)
        return float(k * self._point(t, x)[1][i] + d)

    def _vel_at(self, loc, t, x):
        i, k, _ = loc
        if i < 0:
            return 0.0
        if i < self.n:
            return float(k * x[self.n + i])
        if i >= self._ps.start:
            return float(k * self._p_rates(t, x)[i - self._ps.start])
        return float(k * self._point(t, x)[2][i])

    def _acc_at(self, loc, t, x):
        i, k, _ = loc
        if i < 0:
            return 0.0
        if i < self.n:
            return float(k * self.accelerations(t, x)[i])
        if i < self._nx:
            x = np.asarray(x, dtype=float)
            return float(k * self._zddot(t, x, self._u(t, x))[i - self.n])
        return math.nan

    def position(self, target, x, t=0.0):
        """Position of a pin or body centre (``t`` matters for massless / driven nodes)."""
        return self._pos_at(self._loc(target), t, x)

    def speed(self, target, x, t=0.0):
        return self._vel_at(self._loc(target), t, x)

    def accelerations(self, t, x):
        """Accelerations of all massive degrees of freedom in the committed modes."""
        return np.asarray(self.derivative(t, x))[self.n:2 * self.n]

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
            _, sa, _ = self._solve(t, x, u, self._branches, self._locked)
            return sa[i]
        if br == fr.FREE_BRANCH:
            return 0.0
        return f.law.force(br, float(f.Gx @ self._base(t, x, u)[1]), fn)

    def path_parameter(self, element, t, x):
        """MSL ``sa`` of a friction element in the committed modes."""
        x = np.asarray(x, dtype=float)
        _, sa, _ = self._solve(t, x, self._u(t, x), self._branches, self._locked)
        return sa[self._fidx[element]]

    def thresholds(self, element, t, x):
        """``(f0, f0_max)`` of a friction element at (t, x)."""
        f = self.frictions[self._fidx[element]]
        u = self._u(t, np.asarray(x, dtype=float))
        fn = f.fn_max * u[f.u_index] if f.u_index >= 0 else 0.0
        return f.law.thresholds(fn)

    def element_force(self, element, t, x):
        """Force/torque of an element (see :meth:`probe`, kind ``f``)."""
        x = np.asarray(x, dtype=float)
        if element in self._fidx:
            return self.friction_force(element, t, x)
        if element in self._drvidx:
            return self.reaction(element, t, x)
        u, Y, Yd, _ = self._point(t, x)
        if element in self._compliant:
            r, k0, c, d, rel0 = self._compliant[element]
            return float(c * (r @ Y + k0 - rel0) + d * (r @ Yd))
        if element in self._nlidx:
            e = self._nlidx[element]
            uu = u[e.u] if e.u >= 0 else 0.0
            return float(e.law.force(float(e.coef @ Y[e.idx]) + e.k0, float(e.coef @ Yd[e.idx]), uu,
                                     e.mode, self._initial))
        inf = self._info.get(element)
        if inf is not None:
            if inf[0] == "input":
                return float(u[inf[1]])
            if inf[0] == "time":
                return float(inf[1](t))
            if inf[0] == "gdamp":
                _, i, k, d = inf
                return float(d * k * Yd[i]) if i >= 0 else 0.0
            if inf[0] == "emf":           # torque on the flange, k*i
                _, rel, _, k = inf
                return float(k * (rel @ Yd))
        raise KeyError(f"{element!r} has no force output")

    def reaction(self, element, t, x):
        """Force/torque a prescribed-motion source applies to its flange (+s direction):
        ``M*a_ref`` of the bodies rigidly on the driven node minus every other force on
        it (including friction elements)."""
        x = np.asarray(x, dtype=float)
        j = self._drvidx[element]
        u = self._u(t, x)
        base = self._base(t, x, u)
        Fz = float(base[4][self.n + j])
        fl = self.frictions
        if fl:
            _, sa, fn_all = self._solve(t, x, u, self._branches, self._locked, base)
            Vx = base[1]
            for i, f in enumerate(fl):
                gz = float(f.Gx[self.n + j])
                if gz == 0.0:
                    continue
                br = self._branches[i]
                if br == fr.LOCKED:
                    Fz -= sa[i] * gz
                elif br >= fr.START_F:
                    Fz -= f.law.force(br, float(f.Gx @ Vx), fn_all[i]) * gz
        zdd = self._zddot(t, x, u)[j] if self.Mz[j] else 0.0
        return float(self.Mz[j] * zdd - Fz)

    def probe_linear(self, kind: str, target: str):
        """``(i, k, d)`` when :meth:`probe` ``(kind, target)`` reads ``float(k * x[i] + d)``
        (``float(k * x[i])`` when ``d`` is None) of this island's state ``x``, whatever the
        time, inputs and modes: a position or speed on a massive coordinate. None for
        anything else (ground, driven or massless nodes, relative or other kinds). The
        probe itself computes exactly these operations, so a caller may evaluate them on
        a whole column of states at once."""
        if kind not in ("s", "phi", "pos", "v", "w", "vel"):
            return None
        i, k, d = self._loc(target)
        if not 0 <= i < self.n:
            return None
        if kind in ("s", "phi", "pos"):
            return i, k, d
        return self.n + i, k, None

    def probe(self, kind: str, target: str, other: str | None = None) -> Callable:
        """A reader ``(t, x) -> float`` for a sensor output.

        kinds:

        * ``s``/``phi``/``pos``: position of a pin (``'element.pin'``) or of a body centre
          / a prescribed-motion element's flange (element name);
        * ``v``/``w``/``vel``, ``a`` (NaN on massless nodes);
        * ``s_rel``/``phi_rel``, ``v_rel``/``w_rel``: MSL sign, ``other`` minus ``target``
          for two pins, or flange_b minus flange_a of a two-flange element;
        * ``pos_rel``, ``vel_rel``: nflow's relative sensors, ``target`` minus ``other``;
        * ``mode`` (friction: MSL mode code; gap 0/1; backlash -1/0/+1), ``contact``,
          ``startForward``, ``startBackward``, ``locked``, ``free`` (committed discrete
          state);
        * ``f``/``tau``: element force (friction, spring/damper, gap, backlash, regularized
          laws and speed-dependent forces with MSL's sign: positive opposes positive
          relative motion / is tension; sources: the applied force; prescribed motion:
          the reaction), ``reaction``, ``sa``, ``lossPower`` (friction elements).

        Readers of massless or driven nodes use the current inputs: fill
        :attr:`inputs` for time ``t`` before reading.
        """
        nm = self._names
        if kind in ("s", "phi", "pos"):
            loc = self._loc(target)
            if loc[0] < 0:
                return lambda t, x, d=float(loc[2]): d
            if loc[0] < self.n:
                i, k, d = loc
                return lambda t, x: float(k * x[i] + d)
            return lambda t, x: self._pos_at(loc, t, x)
        if kind in ("v", "w", "vel"):
            loc = self._loc(target)
            if loc[0] < 0:
                return lambda t, x: 0.0
            if loc[0] < self.n:
                i, k, _ = loc
                j = self.n + i
                return lambda t, x: float(k * x[j])
            return lambda t, x: self._vel_at(loc, t, x)
        if kind == "a":
            loc = self._loc(target)
            return lambda t, x: self._acc_at(loc, t, x)
        if kind in ("s_rel", "phi_rel", "v_rel", "w_rel", "pos_rel", "vel_rel"):
            if other is None:
                a, b = f"{target}.flange_a", f"{target}.flange_b"
                if a not in self._pin_loc:
                    a, b = None, f"{target}.flange"
            else:
                a, b = target, other
            absolute = nm["pos"] if kind in ("s_rel", "phi_rel", "pos_rel") else nm["vel"]
            pb = self.probe(absolute, b)
            if a is None:
                return pb
            pa = self.probe(absolute, a)
            if kind in ("pos_rel", "vel_rel"):
                return lambda t, x: pa(t, x) - pb(t, x)
            return lambda t, x: pb(t, x) - pa(t, x)
        if kind in ("mode", "contact") and target in self._nlidx:
            e = self._nlidx[target]
            return lambda t, x: float(e.mode)
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
            if target in self._compliant and self._simple:
                r, k0, c, d, rel0 = self._compliant[target]
                n = self.n
                return lambda t, x: float(c * (r @ x[:n] + k0 - rel0) + d * (r @ x[n:2 * n]))
            if (target in self._compliant or target in self._nlidx or target in self._info
                    or target in self._drvidx):
                return lambda t, x: self.element_force(target, t, x)
            raise KeyError(f"{target!r} has no force output")
        if kind == "reaction":
            if target not in self._drvidx:
                raise KeyError(f"{target!r} is not a prescribed-motion source")
            return lambda t, x: self.reaction(target, t, x)
        if kind == "sa":
            return lambda t, x: self.path_parameter(target, t, x)
        if kind == "lossPower":
            i = self._fidx[target]
            f = self.frictions[i]

            def loss(t, x):
                x = np.asarray(x, dtype=float)
                return self.friction_force(target, t, x) * float(
                    f.Gx @ self._base(t, x, self._u(t, x))[1])
            return loss
        raise KeyError(f"unknown probe kind {kind!r}")
