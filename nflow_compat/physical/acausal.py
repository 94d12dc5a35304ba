"""General acausal networks: domains, pins, nodes, element classes, and their assembly into
a semi-explicit DAE that the engine integrates as one hybrid system per island.

How an island is built
----------------------
* **Domains** name their across/through pair (``DOMAINS``). A pin has one domain; an element
  may have pins in several (HeatingResistor: electrical ``p``/``n`` and thermal ``heatPort``;
  EMF: electrical ``p``/``n`` and a rotational ``flange``).
* **Nodes.** Pins joined by connections form a node (a union-find). Its across variable
  (potential, temperature, position) is an unknown, except at an electrical node holding a
  Ground pin (0 V, the reference). The node's balance of through variables (Kirchhoff's
  current law, the heat-flow balance, the cut forces) is one equation row.
* **Rigid ties** (alias elimination): an element may tie two of its pins,
  ``pos(y) = ratio*pos(x) + offset`` (a gear, a lever, a stop mass's two flanges), or one pin
  to the reference (a Fixed flange). Tied nodes are affine aliases of one unknown
  (``nodes.AffineUnionFind``) and their balances one row, each force weighted by its pin's
  lever factor (virtual work), so a mass behind a gear is reflected as ``m*ratio^2`` and no
  position constraint (index 3) appears. A mechanical node has a speed unknown (with the row
  ``der(position) = speed``) only when an element reads its speed, and an acceleration
  unknown only when one reads that (a stuck friction element): a massless node between
  springs is an algebraic position, one behind a damper a first-order state.
* **Elements** (one class each, registered by nflow block type) declare their pins, signal
  inputs, extra unknowns (a branch current, a diode's curve parameter ``s``) and stamp their
  equations through a :class:`Stamp`: linear coefficients of the unknowns (``A``) and of
  their time derivatives (``E``), source terms (constants, time functions, signal inputs),
  non-linear terms with their Jacobians, and initial conditions. Parameters are read under
  the manifest's own names; their values are the manifest defaults merged by the diagram
  parser, so there is no second table of defaults here.
* **Assembly** gives ``E z' + A(mode) z + c(t, u) + N(z, u) = 0`` over the unknowns ``z``.
* **Structural analysis**: islands are the connected components of the element/node graph
  (``scipy.sparse.csgraph.connected_components``); a maximum bipartite matching of equations
  to unknowns (``maximum_bipartite_matching``) finds structurally singular networks and
  names their blocks (no ground, a loop of voltage sources, a cut-set of current sources, an
  op-amp without feedback): the over-determined equations and the free unknowns of the
  Dulmage-Mendelsohn decomposition meet in the element at fault (its own equation in the
  first, its own unknown or pin potential in the second), named first, with a code of its
  own where the element declares one (``Element.unmatched``: an op-amp without feedback).
  An island of sensors alone is ``sensor_unattached``.
* **Condensation.** ``E = U1 R V1^T`` (once): the states are ``w1 = V1^T z`` and the rows
  ``U2^T (A z + c + N) = 0`` determine the algebraic part (index 1). When the unknowns that
  ``E`` differentiates are independent (positions and speeds of masses, a capacitor's
  potential to ground) they are the states themselves (``V1`` selects them, ``R`` from the
  SVD of those columns); otherwise ``E = U diag(sigma) V^T`` (SVD) gives the states as
  combinations. For a linear island the algebraic part is eliminated once per mode (LU
  factorization, never an inverse): the derivative is ``w1' = K w1 + L c(t, u)``. Non-linear
  terms that read states only (a friction law of the speed, a diode across a capacitor)
  are evaluated explicitly with the sources, so such an island stays linear in its
  algebraic part; the others are solved by damped Newton warm-started from the last
  solution. An island of at most ``FLOAT_STATES`` states computes its derivative with a
  function generated per mode on floats (``float_derivative``).
  An index-2 constraint (a capacitor directly across a voltage source, a prescribed speed
  on a mass) is differentiated once with the sources' exact derivatives (below), and its
  original keeps holding as Modelica's dummy derivatives have it: the combination of the
  states it prescribes is computed from it at every evaluation (the least change onto it,
  folded into the mode's matrices), never taken from the integrator, whose copy of it only
  follows the exact rate (LSODA's history could not be projected after each step anyway).
  So ``v_C = V(t)`` holds to rounding at every sample, event and stage under every solver.
* **Modes** (IdealDiode, IdealSwitch, MSL friction and stops, ElastoGap/ElastoBacklash): a
  switching element has a discrete state that selects its *branch*: its moded coefficients
  enter ``A(mode)`` and its moded non-linear terms hold; its relations are event functions;
  at an event the states are iterated to a fixed point (Modelica's event iteration with pre
  values, see ``Element``), which for MSL friction includes the mixed system
  ``locked <-> sa <-> start flags`` (a stuck element's force is an unknown of the network,
  the multiplier of ``relative acceleration = 0``) and the re-initialisation at the stops.
  A Boolean mode (the default) is decided by one relation; the diodes' characteristic is
  continuous at the switching point, so no state jumps.
* **Initial conditions** (a capacitor's ``v0``, an inductor's ``i0``, a heat capacitor's
  ``T0``) are linear in the states. They are imposed in element order; one that is
  implied by earlier ones (a capacitor loop: CauerLowPassAnalog's C2 and C4) is checked and,
  if it disagrees, ignored with a warning (MSL fixes only the independent ones).
"""
from __future__ import annotations

import itertools
import math
import operator
from dataclasses import dataclass, field
from typing import Callable, ClassVar

import numpy as np
import scipy.linalg
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import breadth_first_order, maximum_bipartite_matching

from .. import roots
from ..errors import DiagramError, SimulationError, SolveFailed
from . import float_derivative
from .events import PhysicalEvent
from .nodes import AffineUnionFind, connected_elements, join_pins

_FLOAT = np.dtype(float)


@dataclass(frozen=True)
class Domain:
    name: str
    across: str          # potential variable of a pin
    through: str         # flow variable (into the element at the pin)
    grounded: bool       # needs a reference element (electrical: Ground); else an absolute scale
    singular: str        # what makes a network of this domain singular (for the error message)
    over_started: str    # what makes an initial value of the domain depend on others (for the warning)
    codes: tuple         # error codes of a singular network and of one Newton cannot solve


_CIRCUIT = ("a loop of voltage sources, a cut-set of current sources, an op-amp without feedback",
            "a capacitor loop or a voltage source across it, an inductor cut-set or a current source in series")
_MOTION = ("two motion sources on one node (or one on a fixed flange), a massless node with only forces on it, "
           "a stick-slip element without a mass on its side",
           "a body held by a fixed flange, a motion source or a rigidly tied body")
# branch combinations tried for a first solution when the first branches have none
START_COMBINATIONS = 64

_CIRCUIT_CODES = ("singular_circuit", "circuit_unsolvable")
_MOTION_CODES = ("singular_island", "island_unsolvable")
# in this order: an island with a circuit in it (an EMF's shaft) answers with the circuit's codes
DOMAINS = {
    "electrical": Domain("electrical", "v", "i", True, *_CIRCUIT, _CIRCUIT_CODES),
    "thermal": Domain("thermal", "T", "Q_flow", False, *_CIRCUIT, _CIRCUIT_CODES),
    "translational": Domain("translational", "s", "f", False, *_MOTION, _MOTION_CODES),
    "rotational": Domain("rotational", "phi", "tau", False, *_MOTION, _MOTION_CODES),
}

NEWTON_MAX = 60
# Newton's test: the correction within this fraction of each unknown's error weight
# relTol |z| + absTol (the diagram's tolerances), then applied (Newton's quadratic
# convergence leaves far less); one that no longer gains with its residual at the rounding
# of its terms has converged too (roots.newton's ``settle``)
NEWTON_TOL = 0.1
MODE_ITERATIONS = 50
TIE_TOLERANCE = 1e-12   # relative to the island's largest unknown: a relation this close to 0 is a tie
FLOAT_STATES = 4       # an island with at most this many states computes its derivative on floats


class Lin:
    """A linear expression ``sum(coef * z[col]) + const`` of the unknowns: how a mechanical
    element writes a position, a speed or a force (a pin's position is ``k*z[col] + d`` of
    its rigidly tied group, see ``Stamp.position``)."""

    __slots__ = ("terms", "const", "of_states")

    def __init__(self, terms=None, const=0.0):
        self.terms = dict(terms or {})
        self.const = float(const)
        self.of_states = None     # [(state index, coef)] when every term is a state (set by the island)

    def __add__(self, other):
        if not isinstance(other, Lin):
            return Lin(self.terms, self.const + other)
        terms = dict(self.terms)
        for col, coef in other.terms.items():
            terms[col] = terms.get(col, 0.0) + coef
        return Lin(terms, self.const + other.const)

    def __sub__(self, other):
        return self + (-1.0) * other

    def __rmul__(self, factor):
        return Lin({col: factor * coef for col, coef in self.terms.items()}, factor * self.const)

    __mul__ = __rmul__

    def __neg__(self):
        return (-1.0) * self

    def items(self):
        return list(self.terms.items())

    def at(self, z) -> float:
        """The value at unknowns ``z`` (a list of floats, or an array)."""
        value = self.const
        for col, coef in self.terms.items():
            value += coef * z[col]
        return float(value)


# ----------------------------------------------------------------------------- elements

ELEMENTS: dict = {}   # nflow block type -> Element subclass


def element(cls):
    """Register an element class under its nflow block type (``cls.type_name``)."""
    ELEMENTS[cls.type_name] = cls
    return cls


class Element:
    """One acausal block. Subclasses set the class attributes and implement ``stamp``.

    ``pins``: pin names (domains come from the manifest); ``inputs``: signal input names, in
    the manifest's order; ``unknowns``: extra unknowns of the element; ``switching``: the
    element has a discrete state (see "switching elements" below; by default a Boolean mode
    decided by ``relation`` and ``on_when_positive``); ``outputs``: sensor output port ->
    ``(kind, args)`` read by :meth:`DaeIsland.probe`. ``ground`` marks the reference
    element."""

    type_name: ClassVar[str] = ""
    pins: ClassVar[tuple] = ()
    inputs: ClassVar[tuple] = ()
    unknowns: ClassVar[tuple] = ()
    outputs: ClassVar[dict] = {}
    switching: ClassVar[bool] = False
    ground: ClassVar[bool] = False
    prescribes_motion: ClassVar[bool] = False   # a motion source: two on one node conflict
    # (code, why): a structurally singular network whose cause is this element (one of its
    # own equations over-determined, one of its own unknowns free: an op-amp without feedback)
    unmatched: ClassVar[tuple | None] = None
    mode_names: ClassVar[tuple] = ("off", "on")
    on_when_positive: ClassVar[bool] = True

    def __init__(self, name: str, params: dict):
        self.name = name
        self.params = params

    def param(self, key: str, *, positive=False, nonnegative=False, nonzero=False) -> float:
        value = self.params[key]
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise DiagramError("param_type", f"{self.name}: parameter {key} must be a number",
                               block=self.name, param=key) from None
        bad = (not math.isfinite(value) or (positive and value <= 0) or (nonnegative and value < 0)
               or (nonzero and value == 0))
        if bad:
            need = ("a positive" if positive else "a non-negative" if nonnegative else
                    "a non-zero" if nonzero else "a finite")
            raise DiagramError("param_range", f"{self.name}: parameter {key} must be {need} number, "
                               f"got {value:g}", block=self.name, param=key)
        return value

    def stamp(self, s: "Stamp") -> None:
        raise NotImplementedError

    @classmethod
    def variant(cls, params: dict, connected_inputs: set):
        """The class that simulates a block of this type with these parameters and
        connected input ports: nflow's semantics of a few blocks change with them (a Brake
        without ``fn_max`` is a regularized law, with it MSL's stick-slip friction)."""
        return cls

    def ties(self) -> list:
        """Rigid ties ``(x, y, ratio, offset)``: ``pos(y) = ratio*pos(x) + offset`` between
        two of the element's pins (a gear, a lever), or with ``x`` None, ``pos(y) = offset``
        (a Fixed flange). Tied nodes are aliases of one unknown (``AffineUnionFind``)."""
        return []

    def coordinate(self):
        """``(pin, offset)``: the unknown of the node of ``pin`` (and of the nodes tied to it)
        is ``pos(pin) + offset``: a long body's centre, MSL's state ``s``, so that the
        solver's tolerances weigh the position MSL integrates. None: the node's own."""
        return None

    # a source's value: its signal input, else its parameter ``value_param``, else its
    # waveform ``shape(self)`` (a time function); the keyword arguments of Stamp.source
    value_param: ClassVar[str | None] = None
    shape: ClassVar[Callable | None] = None

    def source_value(self, s: "Stamp") -> dict:
        if self.inputs:
            return {"input": s.input(self.inputs[0])}
        if self.value_param is not None:
            return {"value": self.param(self.value_param)}
        return {"function": type(self).shape(self)}

    # -- switching elements ------------------------------------------------------------
    # One mechanism for every element with discrete modes (IdealDiode, IdealSwitch, MSL
    # friction): a discrete *state* committed at events selects the element's *branch* (the
    # key of its ``Stamp.moded`` coefficients and moded non-linear terms; ``branches`` lists
    # them all). Modelica's event iteration (``DaeIsland``) holds the pre states fixed and,
    # from ``first(pre)``, alternates ``branch`` (which equations hold), a solve of the
    # network and ``iterate`` (the element's new iteration value from that solution) until
    # nothing changes; ``commit`` then gives the new state (and re-initialisations of
    # states), and the whole repeats until the states are their pre values. ``relations``
    # are the event functions (``g > 0`` form) that can change the committed state,
    # ``committed`` their Modelica values at a restart. The defaults below are a Boolean
    # mode decided by ``relation(z, u) > 0``: on while it holds when ``on_when_positive``,
    # else on while it does not (IdealDiode, IdealSwitch).
    branches: ClassVar[tuple] = (True, False)

    def relation(self, z_local, u_local) -> float:
        raise NotImplementedError

    def is_on(self, value: float) -> bool:
        return bool(value > 0.0) == self.on_when_positive

    def pre_start(self, view):
        """The pre state of the initial event iteration (MSL's IdealDiode starts on: its
        ``off = s < 0`` is evaluated at the initial solution)."""
        return True

    def first(self, pre):
        return pre

    def branch(self, pre, current, view):
        return current

    def branch_of(self, state):
        """The branch a committed state selects between events."""
        return state

    @property
    def start_branches(self) -> tuple:
        """The branches a first solution may be sought in before the run (``_start_newton``):
        ``branches``, and a start-up law where the element has one."""
        return self.branches

    def iterate(self, pre, current, view):
        value = self.relation(*view.watched())
        # At a located event the relation is ~0 in both modes (the characteristic is
        # continuous there) and rounding may give it opposite signs: an element that has
        # just switched keeps its new mode while its relation is such a tie.
        if view.switched and abs(value) <= view.tie:
            return current
        return bool(self.is_on(value))    # bool(): numpy bools cannot index mode_names

    def merge(self, cycle):
        """The iteration value when the iteration cycles through ``cycle`` (None: an error)."""
        return None

    def commit(self, pre, current, view):
        """``(state, re-initialisations [(Lin of a state, value)], notes [(kind, from, to)])``."""
        return current, (), ()

    def relations(self, state, view) -> list:
        return [self.relation(*view.watched())]

    committed_reads_values: ClassVar[bool] = False    # ``committed`` needs the relations' values
    must_solve: ClassVar[tuple] = ()   # branches the network must be solvable in, checked at compile time

    def unsolvable(self, err):
        """The error when the network is singular in one of ``must_solve``."""
        return err

    def committed(self, state, values) -> list:
        return [1.0 if state == self.on_when_positive else 0.0]

    def changes(self, before, after) -> list:
        """Events to log between two committed states: ``[(kind, from, to)]``."""
        return [("mode", self.mode_names[before], self.mode_names[after])] if before != after else []

    def branch_name(self, branch) -> str:
        return "on" if branch else "off"


@dataclass
class _Nonlinear:
    rows: list
    cols: list           # global unknown indices, None for a reference potential
    inputs: list         # global input slots
    fn: Callable         # (z_local, u_local, t[, branch]) -> (residual, d residual / d z_local)
    name: str
    switch: int | None = None   # a moded term: the index of its element among the switches
    value: Callable | None = None   # the residual alone, of sequences of floats (explicit evaluation)
    limit: Callable | None = None   # (z_local, step_local) -> the fraction of a Newton step it accepts


@dataclass
class _Switch:
    element: Element
    cols: list
    inputs: list
    coefs: dict = field(default_factory=dict)   # branch -> [(row, col, coef)] that hold in it


class Stamp:
    """What an element sees while it writes its equations: handles of its unknowns,
    node rows and inputs, and the stamping calls. Handles of a reference potential are
    None and every call ignores them (their value is 0).

    Mechanical elements write through pins whose node may be rigidly tied to another
    (``Element.ties``): ``position``/``speed`` give a pin's motion as a :class:`Lin` of its
    group's unknowns, ``push`` adds a force into the group's balance weighted by the pin's
    lever factor (virtual work: a gear of ratio r passes r times the force)."""

    def __init__(self, net: "_Assembly", el: Element, pin_at: dict, unknowns: dict, inputs: dict):
        self._net, self.element = net, el
        self._pin_at = pin_at       # pin -> (column, balance row, k, d): pos(pin) = k*z[column] + d
        self._pin_vars = {pin: at[0] for pin, at in pin_at.items()}
        self._pin_rows = {pin: at[1] for pin, at in pin_at.items()}
        self._unknowns, self._inputs = unknowns, inputs
        self._switch = _Switch(el, [], []) if el.switching else None
        if self._switch is not None:
            net.switches.append(self._switch)

    # handles
    def v(self, pin):
        """The across variable (potential, temperature) at ``pin``."""
        return self._pin_vars[pin]

    # mechanical pins
    def position(self, pin) -> Lin:
        col, _, k, d = self._pin_at[pin]
        return Lin({col: k} if col is not None else {}, d)

    def speed(self, pin) -> Lin:
        """The pin's speed: its group's speed unknown (made on first use, with the row
        ``der(position) = speed``), so only nodes whose speed is read have one."""
        col, _, k, _ = self._pin_at[pin]
        return Lin({self._net.speed_of(col): k} if col is not None else {})

    def put(self, row, lin=None, dt=None, weight=1.0):
        """Add ``weight*(lin + der(dt))`` to ``row`` (``lin``'s constant into the source
        terms; ``dt``'s constant has no derivative)."""
        if row is None:
            return
        for col, coef in (lin.items() if lin is not None else ()):
            self.add(row, col, weight * coef)
        if lin is not None and lin.const:
            self._net.c0.append((row, weight * lin.const))
        for col, coef in (dt.items() if dt is not None else ()):
            self.add_dt(row, col, weight * coef)

    def push(self, pin, lin=None, dt=None):
        """The through variable (MSL's ``flange.f``: the cut force on the element) at a
        mechanical ``pin`` is ``lin + der(dt)``."""
        _, row, k, _ = self._pin_at[pin]
        self.put(row, lin, dt, k)

    def push_source(self, pin, coef=1.0, **value):
        """``flange.f`` at ``pin`` is ``coef`` times a source value (see ``source``)."""
        _, row, k, _ = self._pin_at[pin]
        self.source(row, k * coef, **value)

    def pin_weight(self, pin):
        """``(balance row, k)`` of a mechanical pin (a non-linear force enters the row times k)."""
        _, row, k, _ = self._pin_at[pin]
        return row, k

    def needs_rate(self, name):
        """The element's output needs its signal input's exact time derivative (a speed
        source: its flange's acceleration), see ``DaeIsland.rate_inputs``."""
        self._net.rate_inputs.add(self._inputs[name])

    def x(self, name):
        """The element's own unknown ``name``."""
        return self._unknowns[name]

    def input(self, name):
        return self._inputs[name]

    def row(self):
        """A new equation row of the element."""
        row = self._net.new_row((self.element.name,))
        self._net.element_of_row[row] = self.element.name
        return row

    def across_row(self, p, n=None):
        """A new row holding ``v(p) - v(n)`` (``v(p)`` alone without ``n``)."""
        row = self.row()
        self.add(row, self.v(p), 1.0)
        if n is not None:
            self.add(row, self.v(n), -1.0)
        return row

    def node_row(self, pin):
        return self._pin_rows[pin]

    # linear stamps
    def add(self, row, col, coef):
        if row is not None and col is not None:
            self._net.A.append((row, col, float(coef)))

    def add_dt(self, row, col, coef):
        if row is not None and col is not None:
            self._net.E.append((row, col, float(coef)))

    def flow(self, pin, terms=(), dt_terms=()):
        """The through variable into the element at ``pin`` as a linear combination of
        unknowns (``terms``) and of their derivatives (``dt_terms``): ``[(col, coef)]``."""
        row = self._pin_rows[pin]
        for col, coef in terms:
            self.add(row, col, coef)
        for col, coef in dt_terms:
            self.add_dt(row, col, coef)

    def branch(self, p, n, terms=(), dt_terms=()):
        """A through variable entering at ``p`` and leaving at ``n`` (a one-port)."""
        self.flow(p, terms, dt_terms)
        self.flow(n, [(c, -k) for c, k in terms], [(c, -k) for c, k in dt_terms])

    def source(self, row, coef=1.0, *, value=None, function=None, input=None):
        """A source term in ``row``: ``coef * value``, ``coef * function(t)`` (with
        ``function.next_break`` for its time events) or ``coef * u[input]``."""
        if row is None:
            return
        net = self._net
        if value is not None:
            net.c0.append((row, coef * float(value)))
        if function is not None:
            net.functions.append((row, float(coef), function))
        if input is not None:
            net.B.append((row, input, float(coef)))

    def branch_source(self, p, n, coef=1.0, **kw):
        self.source(self._pin_rows[p], coef, **kw)
        self.source(self._pin_rows[n], -coef, **kw)

    def nonlinear(self, rows, cols, fn, inputs=(), moded=False, value=None, limit=None):
        """Rows ``rows`` get ``fn(z[cols], u[inputs], t)[0]``; ``fn`` also returns the
        Jacobian with respect to ``z[cols]`` (rows x cols), or a function giving it when
        asked (a law that only has a difference Jacobian). ``moded``: ``fn`` takes the
        element's branch as a fourth argument (a switching element). ``value``: the same
        residual alone, taking lists of floats (the fast evaluation of a term of the
        states). ``limit(z[cols], step)``: the largest fraction of a Newton step (the change
        ``step`` of ``z[cols]``) the law accepts, in (0, 1] (a junction's voltage limiting,
        ``electrical``); see ``DaeIsland._newton``."""
        switch = None
        if moded:
            if self._switch is None:
                raise TypeError("a moded non-linear term needs a switching element")
            switch = self._net.switches.index(self._switch)
        if value is None:
            def value(z, u, t, *branch):
                return fn(np.array(z, dtype=float), np.array(u, dtype=float), t, *branch)[0]
        self._net.nonlinear.append(_Nonlinear(list(rows), list(cols), list(inputs), fn, self.element.name, switch,
                                              value, limit))

    def acceleration(self, pin) -> Lin:
        """The pin's acceleration: an unknown of its group (made on first use, with the row
        ``der(speed) = acceleration``)."""
        col, _, k, _ = self._pin_at[pin]
        return Lin({self._net.acceleration_of(self._net.speed_of(col)): k} if col is not None else {})

    def switched(self, row, col, *, on, off):
        """A coefficient that depends on a Boolean mode."""
        self.moded(row, col, {True: on, False: off})

    def moded(self, row, col, coefs: dict):
        """A coefficient that depends on the element's branch: ``coefs`` branch -> value
        (0 in a branch it does not name)."""
        if self._switch is None:
            raise TypeError("moded() needs a switching element")
        if row is not None and col is not None:
            for branch, coef in coefs.items():
                self._switch.coefs.setdefault(branch, []).append((row, col, float(coef)))

    def watch(self, cols, inputs=()):
        """The unknowns/inputs the element's relation reads (a switching element)."""
        self._switch.cols, self._switch.inputs = list(cols), list(inputs)

    def start(self, terms, value, rank=0):
        """An initial condition ``sum(coef * z[col]) = value`` (``terms`` may be a :class:`Lin`:
        ``lin = value``). ``rank`` 0 fixes it (MSL's ``fixed = true``: checked against the
        others, ignored with a warning when it contradicts them); a higher rank makes it a
        start value (MSL's ``start`` without ``fixed``), used, lower ranks first, only where
        the fixed ones leave a state free (a body's default position 0, a damper's
        ``s_rel = 0`` that places a massless node behind it)."""
        implied = 0.0
        if isinstance(terms, Lin):
            terms, implied = terms.items(), terms.const
        terms = [(c, k) for c, k in terms if c is not None and k != 0.0]
        if terms:
            self._net.starts.append((terms, float(value) - implied, self.element.name, rank))
        elif rank == 0 and abs(value - implied) > 1e-9 * max(1.0, abs(value)):
            # a fixed flange (or the reference) holds it elsewhere
            self._net.held_starts.append((self.element.name, float(value), implied))


# ----------------------------------------------------------------------------- shared laws

class SignalConductance(Element):
    """A one-port ``flow(a -> b) = u * (across(a) - across(b))``, the conductance ``u``
    from the element's signal input (VariableConductor, Convection)."""

    def stamp(self, s):
        a, b = self.pins

        def flow(z, u, t):
            f = u[0] * (z[0] - z[1])
            return np.array([f, -f]), np.array([[u[0], -u[0]], [-u[0], u[0]]])
        s.nonlinear([s.node_row(a), s.node_row(b)], [s.v(a), s.v(b)], flow, inputs=[s.input(self.inputs[0])])


class SignalResistance(Element):
    """A one-port ``across(a) - across(b) = u * flow`` with the flow an unknown, the
    resistance ``u`` from the signal input (so ``u = 0`` is a short: VariableResistor,
    ConvectiveResistor)."""

    def stamp(self, s):
        a, b = self.pins
        flow = s.x(self.unknowns[0])
        s.branch(a, b, [(flow, 1.0)])
        row = s.across_row(a, b)

        def drop(z, u, t):
            return np.array([-u[0] * z[0]]), np.array([[-u[0]]])
        s.nonlinear([row], [flow], drop, inputs=[s.input(self.inputs[0])])


# ----------------------------------------------------------------------------- assembly

class _Assembly:
    """The equations of one island while its elements stamp them."""

    def __init__(self):
        self.A, self.E, self.B, self.c0, self.functions = [], [], [], [], []
        self.nonlinear, self.switches, self.starts = [], [], []
        self.held_starts = []    # fixed starts of unknowns the reference holds: (owner, value, held value)
        self.row_owner = []      # per row: the elements it belongs to (a balance row: those at the node)
        self.element_of_row, self.element_of_col = {}, {}   # an element's own equations and unknowns
        self.col_names = []
        self.speeds = {}         # position column -> its speed column (mechanical nodes whose speed is read)
        self.accelerations = {}  # speed column -> its acceleration column (where one is read)
        self.speed_owner = {}
        self.node_owners = {}    # a node's column -> the elements at the node
        self.rate_inputs = set()

    def acceleration_of(self, speed) -> int:
        acceleration = self.accelerations.get(speed)
        if acceleration is None:
            acceleration = self.accelerations[speed] = self.new_col(self.col_names[speed][:-len(".speed")] +
                                                                     ".acceleration")
            row = self.new_row(self.speed_owner[speed])
            self.E.append((row, speed, 1.0))
            self.A.append((row, acceleration, -1.0))
        return acceleration

    def speed_of(self, col) -> int:
        speed = self.speeds.get(col)
        if speed is None:
            speed = self.speeds[col] = self.new_col(self.col_names[col] + ".speed")
            self.speed_owner[speed] = self.node_owners.get(col, ())
            row = self.new_row(self.node_owners.get(col, ()))
            self.E.append((row, col, 1.0))
            self.A.append((row, speed, -1.0))
        return speed

    def new_row(self, owners: tuple) -> int:
        self.row_owner.append(owners)
        return len(self.row_owner) - 1

    def new_col(self, name) -> int:
        self.col_names.append(name)
        return len(self.col_names) - 1


class Network:
    """Elements and pin connections of any acausal domains (see the module doc)."""

    def __init__(self):
        self.elements: dict = {}
        self.pin_domains: dict = {}       # 'element.pin' -> domain name
        self.connections: list = []

    def add(self, el: Element, domains: dict):
        """Add element ``el``; ``domains``: pin -> domain name (from the manifest)."""
        self.elements[el.name] = el
        for pin in el.pins:
            self.pin_domains[f"{el.name}.{pin}"] = domains[pin]

    def connect(self, a: str, b: str):
        self.connections.append((a, b))

    def build(self, tolerances: tuple) -> list:
        """The islands; ``tolerances``: the diagram's ``(relTol, absTol)``, the error weights
        of their Newton solves."""
        node_of = join_pins(self.pin_domains, self.connections)
        element_pins = {name: [f"{name}.{pin}" for pin in el.pins] for name, el in self.elements.items()}
        return [_compile([self.elements[m] for m in members], node_of, self.pin_domains, tolerances)
                for members in connected_elements(element_pins, node_of)]


def _node_label(members: list) -> str:
    return "node {" + ", ".join(sorted(members)[:4]) + (", ..." if len(members) > 4 else "") + "}"


GROUND = "#ground"     # the reference of the affine ties (potential 0, a Fixed flange's frame)


def _tie_nodes(elements: list, node_of: dict, nodes) -> AffineUnionFind:
    """Nodes joined by rigid ties (``Element.ties``; a Ground pin is tied to 0 V) as affine
    aliases: every node is ``k*root + d``. Ties between nodes come first, then those to the
    ground, so that a conflict is reported against the element that fixes a node."""
    ties = AffineUnionFind(GROUND)
    for node in nodes:
        ties.add(node)
    between = [(el, x, y, r, w) for el in elements for x, y, r, w in el.ties() if x is not None]
    fixed = [(el, None, y, r, w) for el in elements for x, y, r, w in el.ties() if x is None]
    fixed += [(el, None, el.pins[0], 1.0, 0.0) for el in elements if el.ground]
    for el, x, y, ratio, offset in between + fixed:
        if ties.link(GROUND if x is None else node_of[f"{el.name}.{x}"], node_of[f"{el.name}.{y}"],
                     ratio, offset):
            continue
        if x is None:
            raise SimulationError("conflicting_fixed", f"{el.name}: fixes a node that is already held at another "
                                  "position", block=el.name)
        raise SimulationError("inconsistent_rigid_connection", f"{el.name}: closes a loop of rigid ties (gears, "
                              "levers, rods, bodies) whose ratios or offsets disagree: the mechanism is locked or "
                              "cannot be assembled", block=el.name)
    return ties


def _compile(elements: list, node_of: dict, pin_domains: dict, tolerances: tuple) -> "DaeIsland":
    asm = _Assembly()
    node_pins: dict = {}
    for el in elements:
        for pin in el.pins:
            node_pins.setdefault(node_of[f"{el.name}.{pin}"], []).append(f"{el.name}.{pin}")
    ties = _tie_nodes(elements, node_of, node_pins)
    reference = ties.find(GROUND)
    groups: dict = {}
    for node in sorted(node_pins):
        groups.setdefault(ties.find(node), []).append(node)
    grounded = set(groups.get(reference, ()))
    domains_here = {pin_domains[p] for ps in node_pins.values() for p in ps}
    if all(el.outputs for el in elements):
        # sensors alone (a sensor whose pins are connected to nothing): nothing to measure
        names = sorted(el.name for el in elements)
        what = (f"sensor {names[0]!r} is" if len(names) == 1 else
                "sensors " + ", ".join(repr(name) for name in names[:6]) + (", ..." if len(names) > 6 else "") + " are")
        raise SimulationError("sensor_unattached", f"{what} not connected to any circuit or thermal element",
                              block=names[0])
    if any(DOMAINS[d].grounded for d in domains_here):
        electrical_nodes = [r for r, ps in node_pins.items() if pin_domains[ps[0]] == "electrical"]
        if electrical_nodes and not grounded & set(electrical_nodes):
            blocks = sorted({p.split(".")[0] for r in electrical_nodes for p in node_pins[r]})
            raise DiagramError("no_ground", "the circuit of " + ", ".join(blocks[:6])
                               + (", ..." if len(blocks) > 6 else "") + " has no Ground: its potentials are "
                               "undetermined (add a Ground block)", block=blocks[0])
    coordinates = {}   # root -> (node, offset): its column is pos(node) + offset (Element.coordinate)
    for el in elements:
        at = el.coordinate()
        if at is not None:
            node = node_of[f"{el.name}.{at[0]}"]
            coordinates.setdefault(ties.find(node), (node, at[1]))
    node_at = {}     # node -> (column, balance row, k, d): its across variable is k*z[column] + d
    for root, members in sorted(groups.items(), key=lambda item: item[1][0]):
        if root == reference:
            for node in members:
                node_at[node] = (None, None, 0.0, ties.rel(node)[2])
            continue
        scale, shift = 1.0, 0.0      # pos(root) = scale*z[column] + shift
        if root in coordinates:
            node, offset = coordinates[root]
            _, k, d = ties.rel(node)
            scale, shift = 1.0 / k, -(d + offset) / k
        pins = [p for node in members for p in node_pins[node]]
        col = asm.new_col(_node_label(pins))
        owners = tuple(sorted({p.split(".")[0] for p in pins}))
        row = asm.new_row(owners)
        asm.node_owners[col] = owners
        for node in members:
            _, k, d = ties.rel(node)
            node_at[node] = (col, row, k * scale, k * shift + d)
    n_inputs = 0
    input_names, input_slots = [], {}
    handles = {}       # element -> (pin -> (column, row, k, d), unknown -> column), for the probes
    for el in elements:
        pin_at = {pin: node_at[node_of[f"{el.name}.{pin}"]] for pin in el.pins}
        unknowns = {u: asm.new_col(f"{el.name}.{u}") for u in el.unknowns}
        asm.element_of_col.update(dict.fromkeys(unknowns.values(), el.name))
        inputs = {}
        for name in el.inputs:
            inputs[name] = n_inputs
            input_names.append(f"{el.name}.{name}")
            input_slots[el.name] = input_slots.get(el.name, n_inputs)
            n_inputs += 1
        handles[el.name] = (pin_at, unknowns)
        el.stamp(Stamp(asm, el, pin_at, unknowns, inputs))
    return DaeIsland(asm, elements, input_names, input_slots, handles, domains_here, tolerances)


# ----------------------------------------------------------------------------- the island

class _View:
    """What a switching element reads while the island evaluates its relations or iterates
    its modes: the time, states ``x``, the network's solution ``z`` (in the branches being
    tried), the inputs; ``initial`` (Modelica's ``initial()``), ``switched`` (its branch
    changed in this event iteration) and ``tie`` (the tolerance of a relation at 0)."""

    __slots__ = ("island", "index", "t", "x", "_z", "_floats", "_states", "initial", "switched")

    def __init__(self, island, index, t, x, z, initial, switched, states=None):
        self.island, self.index, self.t, self.x = island, index, t, x
        self._z, self._floats, self._states = z, None, states
        self.initial, self.switched = initial, switched

    def at(self, z):
        self._z, self._floats = z, None

    def read(self, t, x, states):
        """The view reused for other states (``DaeIsland._lazy_views``)."""
        self.t, self.x, self._z, self._floats, self._states = t, x, None, None, states

    @property
    def z(self):
        """The network's solution (solved on first use when the view was made without it)."""
        if self._z is None:
            self._z = self.island.solve(self.t, self.x)
        return self._z

    @property
    def tie(self) -> float:
        return TIE_TOLERANCE * (1.0 + float(np.max(np.abs(self.z), initial=0.0)))

    def watched(self):
        """The arguments of a Boolean element's ``relation``: the unknowns and inputs it
        watches (``Stamp.watch``; a reference potential reads 0)."""
        cols, inputs = self.island._watch[self.index]
        u = self.island.inputs
        z = np.append(self.z, 0.0) if self.island._relation_pad else self.z
        return z[cols], (u[inputs] if inputs is not None else u[:0])

    def value(self, lin) -> float:
        """``lin`` at the solution; one of the states alone is read from them (no solve)."""
        if self._states is not None:
            terms = lin.of_states
            if terms is None:
                terms = lin.of_states = self.island.state_terms(lin)
            if terms is not False:
                value = lin.const
                for k, coef in terms:
                    value += coef * self._states[k]
                return float(value)
        if self._floats is None:
            self._floats = self.z.tolist()
        return lin.at(self._floats)

    def input(self, slot) -> float:
        return float(self.island.inputs[slot])


class DaeIsland:
    """One island as a hybrid system (``engine.hybrid``): states ``w1``, derivative, event
    functions of the switching elements, event iteration, probes for sensors."""

    def __init__(self, asm: _Assembly, elements: list, input_names: list, input_slots: dict, handles: dict,
                 domains: set, tolerances: tuple):
        n, m = len(asm.col_names), len(asm.row_owner)
        self._singular_causes = "; ".join(dict.fromkeys(DOMAINS[d].singular for d in sorted(domains)))
        self._over_started = "; ".join(dict.fromkeys(DOMAINS[d].over_started for d in sorted(domains)))
        self._singular_code, self._unsolvable_code = next(DOMAINS[d].codes for d in DOMAINS if d in domains)
        self._motion_sources = {el.name for el in elements if el.prescribes_motion}
        self._unmatched = {el.name: el.unmatched for el in elements if el.unmatched is not None}
        self.element_names = [el.name for el in elements]
        self.label = "island {" + ", ".join(self.element_names[:4]) + (", ..." if len(elements) > 4 else "") + "}"
        self._handles = handles
        self.n_unknowns = n
        self.input_names = input_names
        self._input_slots = input_slots
        self.inputs = np.zeros(len(input_names))
        # inputs whose exact time derivative the island needs (a signal-driven source in an
        # index-2 place): the engine keeps ``input_rates`` equal to it (engine.rates)
        self.rate_inputs = frozenset(asm.rate_inputs)
        self.input_rates = np.zeros(len(input_names))
        self._started = False   # before the start's event iteration: see _start_newton
        self._rates_declared = False
        # the states an index-2 constraint prescribes in a mode eliminated so far (a sensor
        # reads them from the constraint, not from the integrator: ``probe_linear``)
        self._constrained: set = set()
        self.events: list = []
        self._col_names, self._row_owner = asm.col_names, asm.row_owner
        self._speeds = asm.speeds
        self._check_structure(asm, n, m)
        self.E = _dense(asm.E, n, n)
        self.A0 = _dense(asm.A, n, n)
        self.B = _dense(asm.B, n, len(input_names))
        self.c0 = np.zeros(n)
        for row, value in asm.c0:
            self.c0[row] += value
        self._functions = asm.functions
        self._nonlinear = asm.nonlinear
        self._switches = asm.switches
        self._elements = [sw.element for sw in self._switches]
        # the committed discrete states and the branches they select (set by initialize)
        self.states = [el.branches[-1] for el in self._elements]
        self.modes = tuple(self.states)
        # each switch's relation and its arguments' indices (column n: a reference
        # potential's 0, appended to z when one is read), picked by one indexing each
        self._relation_pad = any(c is None for sw in self._switches for c in sw.cols)
        self._watch = [(np.array([n if c is None else c for c in sw.cols], dtype=int),
                        np.array(sw.inputs, dtype=int) if sw.inputs else None) for sw in self._switches]
        for what, values in (("capacitance, inductance or mass", self.E),
                             ("conductance, stiffness or damping", self.A0), ("input gain", self.B),
                             ("constant source", self.c0)):
            if not np.all(np.isfinite(values)):
                raise SimulationError("non_finite_state", f"{self.label}: a {what} coefficient of the network is not "
                                      "finite (parameters so large that their products overflow)")
        self._condense(n)
        r = self.n_states
        # non-linear terms of the states (and inputs, time) alone are evaluated explicitly
        # with the source terms: only the others need Newton's method
        states = set(self.state_columns.tolist()) if self.state_columns is not None else set()
        explicit = [all(c is None or c in states for c in term.cols) for term in self._nonlinear]
        self._explicit = [term for term, yes in zip(self._nonlinear, explicit) if yes]
        self._implicit = [term for term, yes in zip(self._nonlinear, explicit) if not yes]
        self._limited = [term for term in self._implicit if term.limit is not None]
        self._weights = roots.error_weights(*tolerances)
        self._prepare_explicit()
        self._reading_views = [_View(self, k, 0.0, None, None, False, False) for k in range(len(self._switches))]
        self._linear_cache: dict = {}
        self._last_linear = (None, None)     # (modes, entry): the committed modes' entry, found by identity
        self._w2_guess = np.zeros(n - r)
        self._solve_cache = (None, None, None)
        self._starts, self._held_starts = asm.starts, asm.held_starts
        self.x0 = self._initial_state(asm.starts)
        self.warnings: list = []

    def _condense(self, n):
        """``E = U1 R V1^T`` with orthonormal ``[U1 U2]``, ``[V1 V2]`` and a regular ``R``; the
        states are ``w1 = V1^T z``. When the unknowns that ``E`` differentiates are
        independent (positions and speeds of masses, a capacitor's potential to ground)
        they are the states themselves (``V1`` selects them, in column order); otherwise
        ``E = U diag(sigma) V^T`` (SVD) gives the states as combinations."""
        E = self.E
        differentiated = np.flatnonzero(np.any(E != 0.0, axis=0))
        columns = E[:, differentiated]
        U, sigma, Wt = np.linalg.svd(columns) if n else (np.zeros((0, 0)), np.zeros(0), np.zeros((0, 0)))
        # independent whatever their scales (a mass of 1e-300 beside the 1 of der(s) = v)
        scaled = np.linalg.svd(columns / np.abs(columns).max(axis=0), compute_uv=False) if n else np.zeros(0)
        if scaled.size and scaled[-1] > scaled[0] * max(n, 1) * 1e-13:
            identity = np.eye(n)
            self._V1 = identity[:, differentiated].copy()
            self._V2 = np.delete(identity, differentiated, axis=1)
            r = differentiated.size
            self._R_inv = Wt.T / sigma[None, :r]
            self.state_columns = differentiated
        else:
            U, sigma, Vt = np.linalg.svd(E)
            r = int(np.sum(sigma > (sigma[0] if sigma.size else 0.0) * max(n, 1) * 1e-13))
            self._V1, self._V2 = Vt[:r].T.copy(), Vt[r:].T.copy()
            self._R_inv = np.diag(1.0 / sigma[:r])
            self.state_columns = None
        self.n_states = r
        self._U1t, self._U2t = U[:, :r].T.copy(), U[:, r:].T.copy()

    def state_names(self) -> list:
        """(name, element) of each state (``engine.linearize`` names them so): the unknown a
        state is (a node's potential or position, its speed, an element's own unknown such
        as an inductor's current) and the first element it belongs to; where the states are
        combinations of unknowns (a capacitor loop), the island's k-th combination."""
        if self.state_columns is None:
            return [(f"{self.label} state {k}", self.element_names[0]) for k in range(self.n_states)]
        out = []
        for c in self.state_columns:
            name = self._col_names[c]
            inside = name[name.find("{") + 1:name.find("}")] if name.startswith("node {") else name
            out.append((name, inside.split(",")[0].split(".")[0].strip()))
        return out

    # -- structure ------------------------------------------------------------------------
    def _check_structure(self, asm, n, m):
        if n == 0:
            return
        entries = set((r, c) for r, c, _ in asm.A) | set((r, c) for r, c, _ in asm.E)
        for sw in asm.switches:
            entries |= set((r, c) for coefs in sw.coefs.values() for r, c, _ in coefs)
        for nl in asm.nonlinear:
            entries |= set((r, c) for r in nl.rows for c in nl.cols if r is not None and c is not None)
        if m != n:
            self._structural_error(None, "more equations than unknowns" if m > n else "more unknowns than equations")
        rows, cols = zip(*entries) if entries else ((), ())
        pattern = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(m, n)).tocsr()
        match = maximum_bipartite_matching(pattern, perm_type="column")
        unmatched = [r for r in range(m) if match[r] < 0]
        if unmatched:
            # the over-determined equations, and the free unknowns (the same search on the
            # transposed pattern, from the unknowns the matching left over)
            match_of_col = np.full(n, -1)
            match_of_col[match[match >= 0]] = np.flatnonzero(match >= 0)
            free = _alternating_reach(pattern.T.tocsr(), match_of_col, np.flatnonzero(match_of_col < 0))
            self._structural_error(_alternating_reach(pattern, match, unmatched), None, free, asm)

    def _structural_error(self, rows, why, free=(), asm=None):
        blocks = sorted({name for r in (rows or range(len(self._row_owner))) for name in self._row_owner[r]})
        if rows and set(blocks) <= self._motion_sources:
            raise DiagramError("conflicting_prescribed_motion", f"{self.label}: conflicting prescribed motion "
                               f"({', '.join(blocks)}): two motion sources on one node, or one on a fixed flange",
                               block=blocks[0])
        # the elements whose own equation cannot be matched: one in the over-determined part
        # with one of its own unknowns, or the potential of one of its pins, left free (a
        # voltage source of a loop, an op-amp without feedback), named first
        culprits = sorted({asm.element_of_row[r] for r in rows if r in asm.element_of_row} &
                          {name for c in free for name in _column_owners(asm, c)}) if rows else []
        for name in culprits:
            if name in self._unmatched:
                code, cause = self._unmatched[name]
                raise DiagramError(code, f"{self.label}: {name}: {cause}", block=name)
        blocks = culprits + [name for name in blocks if name not in culprits]
        raise DiagramError(self._singular_code, f"{self.label}: the network equations are structurally singular "
                           f"({why or 'conflicting equations'}): look for {self._singular_causes} or a floating "
                           "node; blocks involved: " + ", ".join(blocks[:8]) + (", ..." if len(blocks) > 8 else ""),
                           block=blocks[0] if blocks else None)

    def eliminate_now(self):
        """A network without modes has one elimination: do it at compile time, so that its
        errors (a singular network) come before the run, and the inputs whose derivatives
        it needs are known (``rate_inputs``); with modes, the all-on and all-off ones are
        looked at for those inputs (a mode found later to need another is an error then)."""
        if not self._switches:
            self._linear(self.modes)
        else:
            for modes in self._extreme_modes():
                try:
                    self._linear(modes)
                except SimulationError:     # a mode the network may never be in
                    pass
            first = tuple(el.branches[0] for el in self._elements)
            for k, el in enumerate(self._elements):
                for branch in el.must_solve:
                    try:
                        self._linear(first[:k] + (branch,) + first[k + 1:])
                    except SimulationError as err:
                        raise el.unsolvable(err) from None
        self._rates_declared = True

    def _extreme_modes(self) -> set:
        """Every switch in its first branch, and every one in its second (all on, all off)."""
        return {tuple(el.branches[k] for el in self._elements) for k in (0, 1)}

    # -- pieces of the equations -----------------------------------------------------------
    def _A(self, modes):
        A = self.A0.copy()
        for sw, branch in zip(self._switches, modes):
            for row, col, coef in sw.coefs.get(branch, ()):
                A[row, col] += coef
        return A

    def _c(self, t, u):
        c = self.c0 + self.B @ u if u.size else self.c0.copy()
        for row, coef, fn in self._functions:
            c[row] += coef * fn(t)
        return c

    def _c_rate(self, t):
        """The time derivative of the source terms: the time functions' (exact, per
        waveform) and the driving signals' (``input_rates``, exact, from the diagram)."""
        rate = np.zeros(self.n_unknowns)
        for row, coef, fn in self._functions:
            rate[row] += coef * fn.rate(t)
        if self.rate_inputs:
            rate += self.B @ self.input_rates
        return rate

    def _nl(self, z, u, t, jacobian, modes, terms=None):
        """Non-linear residual (n) and, if asked, its Jacobian (n x n), of ``terms`` (all)."""
        n = self.n_unknowns
        res = np.zeros(n)
        jac = np.zeros((n, n)) if jacobian else None
        for term in (self._nonlinear if terms is None else terms):
            zl = np.array([z[c] if c is not None else 0.0 for c in term.cols])
            ul = u[term.inputs] if term.inputs else u[:0]
            if term.switch is None:
                val, d = term.fn(zl, ul, t)
            else:
                val, d = term.fn(zl, ul, t, modes[term.switch])
            if jacobian and callable(d):     # a law without an analytic Jacobian gives it on demand
                d = d()
            for i, row in enumerate(term.rows):
                if row is None:
                    continue
                res[row] += val[i]
                if jacobian:
                    for j, col in enumerate(term.cols):
                        if col is not None:
                            jac[row, col] += d[i][j]
        return res, jac

    def _magnitudes(self, z, u, t, modes, A, c) -> np.ndarray:
        """The magnitude of the terms each equation row sums at ``z`` (their rounding bounds
        the residual's): ``|A||z| + |c|`` and every non-linear term's absolute value."""
        out = np.abs(A) @ np.abs(z) + np.abs(c)
        for term in self._nonlinear:
            zl = np.array([z[col] if col is not None else 0.0 for col in term.cols])
            ul = u[term.inputs] if term.inputs else u[:0]
            val = term.fn(zl, ul, t)[0] if term.switch is None else term.fn(zl, ul, t, modes[term.switch])[0]
            for i, row in enumerate(term.rows):
                if row is not None:
                    out[row] += abs(val[i])
        return out

    def _linear(self, modes) -> "_Eliminated":
        """Per mode: the algebraic part of a linear island eliminated, so that
        ``z = Z1 w1 + Zc c + Zd c'`` and ``w1' = K w1 + L c + Ld c'``.

        Index 1: ``U2^T A V2`` is regular and gives ``w2`` by one LU solve. Index 2 (a
        capacitor across a voltage source, an inductor in series with a current source):
        ``U2^T A V2`` is singular; its left null space ``N`` turns those rows into
        constraints on the states, ``G w1 + N U2^T c = 0``; their time derivative (with
        ``c'`` from the sources' exact derivatives) fixes the null-space part of ``w2``
        (Pantelides' differentiation, done once per mode on the matrices). The constraint
        itself is kept: ``Z1``, ``Zc``, ``K``, ``L`` read the states taken onto it,
        ``Pi w1 - GpH c`` (``_constraint_projector``), so the part of the states it
        prescribes never comes from the integrator (whose copy follows the exact rate:
        ``G w1' = -N U2^T c'`` for any ``w1``). In a non-linear island the same reduction
        of its linear rows comes before Newton (``_reduce_for_newton``)."""
        last_modes, last = self._last_linear
        if modes is last_modes:
            return last
        hit = self._linear_cache.get(modes)
        if hit is not None:
            self._last_linear = (modes, hit)
            return hit
        A = self._A(modes)
        if self._implicit:     # Newton solves the algebraic part at each evaluation
            entry = self._reduce_for_newton(A, modes)
        else:
            entry = self._eliminate(A, modes)
            if entry.constraint is None and not self._functions and not self.inputs.size and not self._nonlinear:
                # c is c0 at every evaluation: its products once (the same arithmetic)
                entry.L_c0, entry.Zc_c0 = entry.L @ self.c0, entry.Zc @ self.c0
            elif entry.constraint is None and self.n_states <= FLOAT_STATES:
                entry.float_derivative = self._float_derivative(entry, modes)
        if len(self._linear_cache) > 1024:
            self._linear_cache.clear()
        self._linear_cache[modes] = entry
        self._last_linear = (modes, entry)
        return entry

    def _eliminate(self, A, modes) -> "_Eliminated":
        U1t, U2t, V1, V2, Rinv = self._U1t, self._U2t, self._V1, self._V2, self._R_inv
        n, r = self.n_unknowns, self.n_states
        q = n - r
        A11, A12, A21, A22 = U1t @ A @ V1, U1t @ A @ V2, U2t @ A @ V1, U2t @ A @ V2
        W21, W2c, W2d = np.zeros((q, r)), np.zeros((q, n)), np.zeros((q, n))
        constraint = None
        if q:
            P, sv, Qt = np.linalg.svd(A22)
            rho = int(np.sum(sv > sv[0] * q * 1e-13)) if sv[0] > 0 else 0
            if rho == q:
                lu = scipy.linalg.lu_factor(A22)
                W21, W2c = -_lu_solve(lu, A21), -_lu_solve(lu, U2t)
            else:
                P1t, Nt, Q1, Kn = P[:, :rho].T, P[:, rho:].T, Qt[:rho].T, Qt[rho:].T
                # w2 = Q1 a + Kn y; the regular rows give a
                a_w = -(P1t @ A21) / sv[:rho, None]
                a_c = -(P1t @ U2t) / sv[:rho, None]
                G = Nt @ A21
                if np.linalg.matrix_rank(G, tol=1e-10 * max(1.0, float(np.abs(G).max(initial=0.0)))) < q - rho:
                    self._singular(Kn, modes, f"{self._singular_causes} or a floating part")
                GS = G @ Rinv                                # G R^-1
                M = GS @ A12 @ Kn
                if np.linalg.cond(M) > 1e12:
                    self._singular(Kn, modes, "a constraint of index higher than 2")
                m_lu = scipy.linalg.lu_factor(M)
                # G w1' = -N c2'  with  R w1' = -(A11 w1 + A12 (Q1 a + Kn y) + U1^T c)
                y_w = _lu_solve(m_lu, -GS @ (A11 + A12 @ Q1 @ a_w))
                y_c = _lu_solve(m_lu, -GS @ (U1t + A12 @ Q1 @ a_c))
                y_d = _lu_solve(m_lu, Nt @ U2t)
                W21, W2c, W2d = Q1 @ a_w + Kn @ y_w, Q1 @ a_c + Kn @ y_c, Kn @ y_d
                constraint = (G, Nt @ U2t)
        Z1, K = V1 + V2 @ W21, -(Rinv @ (A11 + A12 @ W21))
        Zc, L = V2 @ W2c, -(Rinv @ (U1t + A12 @ W2c))
        projector = None
        if constraint is not None:
            # the differentiated constraint keeps its original: what it prescribes of the
            # states is computed from it at every evaluation, never taken from the integrator
            projector = _constraint_projector(*constraint)
            Pi, GpH, support = projector
            self._constrained.update(int(k) for k in support)
            Z1, Zc, K, L = Z1 @ Pi, Zc - Z1 @ GpH, K @ Pi, L - K @ GpH
        entry = _Eliminated(A, Z1=Z1, Zc=Zc, Zd=V2 @ W2d, K=K, L=L, Ld=-(Rinv @ (A12 @ W2d)), constraint=constraint,
                            projector=projector)
        if constraint is not None:
            self._ask_source_rates(np.vstack((entry.Ld, entry.Zd)), modes)
        return entry

    def _reduce_for_newton(self, A, modes) -> "_Eliminated":
        """Per mode, the rows Newton solves for ``w2`` in a non-linear island (``_newton``):
        ``U2^T (A z + c + N(z, u)) = 0``, unless some combination ``Nt`` of those rows is
        linear and free of ``w2`` (``Nt U2^T A V2 = 0`` and ``Nt U2^T`` zero on every row a
        non-linear term writes): a capacitor straight across a voltage source, a prescribed
        speed on a mass, beside a diode or a friction law that reads an algebraic unknown.
        Those rows are constraints on the states alone, ``G w1 + H c = 0`` (``G = Nt U2^T A
        V1``, ``H = Nt U2^T``), reduced as ``_eliminate`` reduces them: Newton solves their
        time derivative instead, ``G R^-1 U1^T (A z + c + N) - H c' = 0`` (``w1'`` from the
        states' rows, ``c'`` the sources' exact derivatives), with the rest of the rows, and
        the states it reads are taken onto the constraint itself (``_projected``: it holds
        to rounding, whatever the integrator's copy)."""
        U1t, U2t, V1, V2 = self._U1t, self._U2t, self._V1, self._V2
        q = self.n_unknowns - self.n_states
        entry = _Eliminated(A, newton_rows=U2t)
        if not q or not self.n_states:
            return entry
        written = sorted({row for term in self._nonlinear for row in term.rows if row is not None})
        A22 = U2t @ A @ V2
        # the rows no w2 enters, linearly or through a non-linear term (the left null space
        # is the same for any scaling of the columns: each scaled to 1, the rank is judged
        # whatever the conductances' units)
        reach = np.hstack((A22, U2t[:, written]))
        scale = np.abs(reach).max(axis=0)
        P, sv, _ = np.linalg.svd(reach / np.where(scale > 0.0, scale, 1.0))
        rho = int(np.sum(sv > sv[0] * q * 1e-13)) if sv.size and sv[0] > 0 else 0
        if rho == q:
            return entry
        Nt = P[:, rho:].T
        G, H = Nt @ U2t @ A @ V1, Nt @ U2t
        if np.linalg.matrix_rank(G, tol=1e-10 * max(1.0, float(np.abs(G).max(initial=0.0)))) < q - rho:
            self._singular(np.linalg.svd(A22)[2][rho - q:].T, modes, f"{self._singular_causes} or a floating part")
        entry.newton_rows = np.vstack((P[:, :rho].T @ U2t, G @ self._R_inv @ U1t))
        entry.newton_rates = np.vstack((np.zeros((rho, self.n_unknowns)), -H))
        entry.constraint = (G, H)
        entry.projector = _constraint_projector(G, H)
        self._constrained.update(int(k) for k in entry.projector[2])
        self._ask_source_rates(H, modes)
        return entry

    def _ask_source_rates(self, through, modes):
        """The signals an index-2 constraint reads through ``through @ c'`` (the source
        terms' rate, ``_c_rate``): a signal-driven source in an index-2 place needs its
        signal's exact derivative (the capacitor current C*dv/dt), asked of the diagram
        (engine.rates) before the run; a mode met later that needs another is an error."""
        needs = np.abs(through @ self.B).max(axis=0, initial=0.0) > 1e-12
        new = set(int(k) for k in np.nonzero(needs)[0]) - self.rate_inputs
        if new and self._rates_declared:
            names = ", ".join(self.input_names[k] for k in sorted(new))
            raise SimulationError("index_two_signal", f"{self.label}: in the modes "
                                  f"{self._mode_text(modes)} the signal {names} drives an index-2 constraint "
                                  "(a capacitor across a signal-driven voltage source, an inductor in series "
                                  "with a signal-driven current source), which no other mode of the network "
                                  "does: its time derivative was not prepared; add a series resistance",
                                  block=names.split(".")[0])
        self.rate_inputs = self.rate_inputs | new

    def _mode_text(self, modes) -> str:
        return ", ".join(f"{el.name} {el.branch_name(branch)}" for el, branch in zip(self._elements, modes))

    def _singular(self, null_directions, modes, what):
        z = self._V2 @ null_directions[:, 0]
        cols = [k for k in np.argsort(-np.abs(z))[:6] if abs(z[k]) > 1e-6 * max(1e-300, np.abs(z).max())]
        names = ", ".join(self._col_names[k] for k in cols)
        states = self._mode_text(modes)
        raise SimulationError(self._singular_code, f"{self.label}: the network equations are singular ({names} "
                              f"undetermined{'; modes: ' + states if states else ''}): {what}",
                              block=names.split(".")[0].split("{")[-1] if names else None)

    # -- solving ----------------------------------------------------------------------------
    def solve(self, t, w1, u=None, modes=None):
        """All unknowns ``z`` at time ``t`` for states ``w1`` (in the committed modes, or
        ``modes``)."""
        u = self.inputs if u is None else u
        modes = self.modes if modes is None else modes
        key = (t, w1.tobytes(), u.tobytes(), self.input_rates.tobytes(), modes)
        cached = self._solve_cache
        if cached[0] == key:
            return cached[1]
        c = self._c(t, u)
        if not self._implicit:
            lin = self._linear(modes)
            if self._explicit:
                c = self._with_explicit(c, _projected(lin.projector, w1, c), u, t, modes)
            z = lin.Z1 @ w1 + (lin.Zc @ c if lin.Zc_c0 is None else lin.Zc_c0)
            if lin.constraint is not None:
                z = z + lin.Zd @ self._c_rate(t)
        elif self._started or modes != self.modes:
            z = self._newton(t, w1, u, c, modes)
        else:
            z = self._start_newton(t, w1, u, c)
            key = key[:-1] + (self.modes,)
        self._solve_cache = (key, z, c)
        return z

    def _start_newton(self, t, w1, u, c):
        """Newton's solution before the run has started, in the committed modes; where those
        have none (a massless flange held by a backlash starts inside its play, where
        nothing holds it), in the first combination of branches that has one, which becomes
        the committed one (the start's event iteration settles the modes from there, as
        MSL's start-up law leads the backlash to its contact)."""
        try:
            return self._newton(t, w1, u, c, self.modes)
        except SimulationError as err:
            if err.code != self._unsolvable_code:
                raise
            first = err
        for modes in itertools.islice(itertools.product(*(el.start_branches for el in self._elements)),
                                      START_COMBINATIONS):
            if modes == self.modes:
                continue
            try:
                z = self._newton(t, w1, u, c, modes)
            except SimulationError as err:     # no solution in these branches, or none at all
                if err.code not in (self._unsolvable_code, self._singular_code):
                    raise
                continue
            self.modes = modes
            return z
        raise first

    def _prepare_explicit(self):
        """The explicit terms' layout, once: their columns as indices of the states (None: a
        reference potential's 0), their rows gathered in one vector (``_explicit_rows``) and
        where each term's residuals go in it. ``_explicit_plan`` (for ``_explicit_values``)
        and ``_explicit_terms`` / ``_explicit_sums`` (for the generated derivative) are the
        same layout in the two forms their users read."""
        columns = self.state_columns if self.state_columns is not None else ()
        index = {int(c): k for k, c in enumerate(columns)}
        rows = sorted({row for term in self._explicit for row in term.rows if row is not None})
        at = {row: k for k, row in enumerate(rows)}
        self._explicit_rows = np.array(rows, dtype=int)
        states = [tuple(None if c is None else index[c] for c in term.cols) for term in self._explicit]
        places = [[(at[row], i) for i, row in enumerate(term.rows) if row is not None] for term in self._explicit]
        self._explicit_pad = any(k is None for picked in states for k in picked)
        self._explicit_plan = [(term.value, _picker([self.n_states if k is None else k for k in picked]),
                                _picker(term.inputs), term.switch, term_places)
                               for term, picked, term_places in zip(self._explicit, states, places)]
        self._explicit_terms = tuple(float_derivative.Term(picked, tuple(term.inputs), term.switch is not None)
                                     for term, picked in zip(self._explicit, states))
        sums = [[] for _ in rows]
        for j, term_places in enumerate(places):
            for k, i in term_places:
                sums[k].append((j, i))
        self._explicit_sums = tuple(tuple(parts) for parts in sums)

    def _explicit_values(self, w, inputs, t, modes) -> list:
        """The explicit terms' residuals on ``_explicit_rows`` at states ``w`` and inputs
        ``inputs`` (lists of floats)."""
        if self._explicit_pad:
            w = w + [0.0]
        values = [0.0] * len(self._explicit_rows)
        for value, pick_states, pick_inputs, switch, places in self._explicit_plan:
            z, ul = pick_states(w), pick_inputs(inputs)
            residual = value(z, ul, t) if switch is None else value(z, ul, t, modes[switch])
            for k, i in places:
                values[k] += residual[i]
        return values

    def _with_explicit(self, c, w1, u, t, modes):
        """``c`` plus the non-linear terms of the states alone, at states ``w1``."""
        c = c.copy()
        c[self._explicit_rows] += self._explicit_values(w1.tolist(), u.tolist(), t, modes)
        return c

    def solve_rows(self, times, states) -> np.ndarray:
        """``solve`` at each ``(times[k], states[k])`` of a linear island without switches,
        a row per time, by the same arithmetic: numpy's matmul over a stack of vectors makes
        the matrix-vector product of each, as ``solve`` makes it for one."""
        lin, u = self._linear(self.modes), self.inputs
        z = (lin.Z1 @ states[:, :, None])[:, :, 0]
        if lin.Zc_c0 is not None:
            return z + lin.Zc_c0
        c = np.array([self._c(t, u) for t in times.tolist()])
        z = z + (lin.Zc @ c[:, :, None])[:, :, 0]
        if lin.constraint is not None:
            rates = np.array([self._c_rate(t) for t in times.tolist()])
            z = z + (lin.Zd @ rates[:, :, None])[:, :, 0]
        return z

    def _newton(self, t, w1, u, c, modes):
        """The unknowns at states ``w1``: Newton on the algebraic part ``w2`` from the last
        solution, converged when the correction is within ``NEWTON_TOL`` of every unknown's
        error weight (``relTol |z| + absTol``, the diagram's: volts and amperes each against
        their own scale), that correction then applied. With junctions among the terms each
        step goes as far as they accept (SPICE's voltage limiting, ``Stamp.nonlinear``'s
        ``limit``; no residual test, whose rows mix units); otherwise it is halved until
        the largest residual decreases. No solution: ``SolveFailed`` (at an integrator's
        trial point a rejected step, ``engine.hybrid``). An index-2 constraint of the mode
        (``_reduce_for_newton``) holds: the states are taken onto it, its derivative is
        among the rows."""
        lin = self._linear(modes)
        A, rows, V1, V2 = lin.A, lin.newton_rows, self._V1, self._V2
        base = V1 @ _projected(lin.projector, w1, c)
        rate_terms = lin.newton_rates @ self._c_rate(t) if lin.constraint is not None else 0.0
        w2 = self._w2_guess.copy()

        def residual(w2):
            z = base + V2 @ w2
            return rows @ (A @ z + c + self._nl(z, u, t, False, modes)[0]) + rate_terms

        def jacobian(w2):
            return rows @ (A + self._nl(base + V2 @ w2, u, t, True, modes)[1]) @ V2

        if self.state_columns is not None:      # w2 are unknowns themselves
            weights = self._weights
        else:
            # a combination of unknowns weighs what its least-weighted unknown allows
            spread = np.where(np.abs(V2) > 1e-12, np.abs(V2), np.nan)

            def weights(w2):
                return np.nanmin(self._weights(base + V2 @ w2)[:, None] / spread, axis=0)

        def magnitudes(w2):
            return np.abs(rows) @ self._magnitudes(base + V2 @ w2, u, t, modes, A, c) + np.abs(rate_terms)

        if w2.size:
            limit = self._junction_limit(base, V2) if self._limited else None
            # from the last solution, else from zero (that solution may belong to a trial
            # point far from this one: a rejected step's, with a junction at 1e40 A)
            for start in (w2, np.zeros_like(w2)) if w2.any() else (w2,):
                result = roots.newton(residual, start, weights=weights, tol=NEWTON_TOL, settle=magnitudes,
                                      jacobian=jacobian, limit=limit, max_iterations=NEWTON_MAX, halvings=30)
                if result.converged:
                    break
            else:
                names = list(dict.fromkeys(term.name for term in self._implicit))
                raise SolveFailed(self._unsolvable_code, f"{self.label}: Newton's method did not converge at "
                                  f"t = {t:.9g} (the network of the non-linear elements "
                                  f"{', '.join(names[:6])}{', ...' if len(names) > 6 else ''} has no solution "
                                  "there)", block=names[0])
            w2 = result.z
        self._w2_guess = w2
        return base + V2 @ w2

    def _junction_limit(self, base, V2) -> Callable:
        """``limit(w2, dw2)`` of ``roots.newton``: the smallest fraction of the step
        ``w2 - dw2`` that the limited terms accept (each at its own unknowns)."""
        def limit(w2, dw2):
            z, step = base + V2 @ w2, -(V2 @ dw2)
            fraction = 1.0
            for term in self._limited:
                local = [z[c] if c is not None else 0.0 for c in term.cols]
                change = [step[c] if c is not None else 0.0 for c in term.cols]
                fraction = min(fraction, term.limit(local, change))
            return fraction
        return limit

    def derivative(self, t, x):
        lin = self._linear(self.modes)
        if lin.float_derivative is not None:
            w = x.tolist() if type(x) is np.ndarray and x.dtype is _FLOAT else np.asarray(x, dtype=float).tolist()
            return lin.float_derivative(t, w, self.inputs.tolist())
        w1 = np.asarray(x, dtype=float)
        u = self.inputs
        if not self._implicit:
            if lin.L_c0 is not None:
                return lin.K @ w1 + lin.L_c0
            c = self._c(t, u)
            if self._explicit:
                c = self._with_explicit(c, _projected(lin.projector, w1, c), u, t, self.modes)
            out = lin.K @ w1 + lin.L @ c
            return out if lin.constraint is None else out + lin.Ld @ self._c_rate(t)
        z = self.solve(t, w1, u)
        c = self._solve_cache[2]
        A = self._linear(self.modes).A
        nl, _ = self._nl(z, u, t, False, self.modes)
        return -(self._R_inv @ (self._U1t @ (A @ z + c + nl)))

    def _float_derivative(self, lin, modes) -> Callable:
        """``derivative`` of a small island (``FLOAT_STATES``) in ``modes``, generated on
        floats (``float_derivative``): per state ``L c0``, then the coefficients of the
        states (``K``), the inputs (``L B``), the time functions (``L`` at their rows times
        their coefficients) and the explicit terms' rows (``L`` there), in that order; a row
        that is one of the values (a position's rate is its speed) is that value."""
        L = lin.L
        functions = np.array([coef * L[:, row] for row, coef, _ in self._functions]).reshape(
            len(self._functions), L.shape[0]).T
        coefs = np.hstack((lin.K, L @ self.B, functions, L[:, self._explicit_rows]))
        base = L @ self.c0
        rows, constants = [], []
        for i in range(L.shape[0]):
            copy = _copied(float(base[i]), coefs[i])
            if copy is not None:
                rows.append(("copy", copy))
                continue
            nonzero = tuple(int(k) for k in np.flatnonzero(coefs[i]))
            rows.append(("sum", bool(base[i] != 0.0), nonzero))
            constants += ([float(base[i])] if base[i] != 0.0 else []) + coefs[i][list(nonzero)].tolist()
        shape = float_derivative.Shape(self.n_states, len(self.inputs), len(self._functions), self._explicit_terms,
                                       self._explicit_sums, tuple(rows))
        return float_derivative.make_derivative(
            shape, [fn for _, _, fn in self._functions], [term.value for term in self._explicit],
            [modes[term.switch] for term in self._explicit if term.switch is not None], constants)

    # -- events --------------------------------------------------------------------------
    def _views(self, t, x, z, initial=False, switched=None):
        return [_View(self, k, t, x, z, initial, bool(switched and switched[k])) for k in range(len(self._switches))]

    def _lazy_views(self, t, x):
        """Views that read the states directly and solve the network only when asked (the
        same objects at each call: the relations read them and keep none)."""
        states = None
        if self.state_columns is not None:
            if self._constrained:
                x = self._projected_states(t, x)
            states = x.tolist()
        views = self._reading_views
        for view in views:
            view.read(t, x, states)
        return views

    def event_functions(self, t, x):
        if not self._switches:
            return np.zeros(0)
        views = self._lazy_views(t, np.asarray(x, dtype=float))
        out = []
        for el, state, view in zip(self._elements, self.states, views):
            out.extend(el.relations(state, view))
        return np.array(out, dtype=float)

    def relation_elements(self, t, x) -> list:
        """The name of the element behind each of ``event_functions(t, x)``, in order."""
        if not self._switches:
            return []
        views = self._lazy_views(t, np.asarray(x, dtype=float))
        return [el.name for el, state, view in zip(self._elements, self.states, views)
                for _ in el.relations(state, view)]

    def relation_values(self, t, x):
        views = None
        out = []
        for k, (el, state) in enumerate(zip(self._elements, self.states)):
            values = None
            if el.committed_reads_values:
                if views is None:
                    views = self._lazy_views(t, np.asarray(x, dtype=float))
                values = el.relations(state, views[k])
            out.extend(el.committed(state, values))
        return np.array(out, dtype=float)

    def _event_iteration(self, t, x, initial=False):
        """Modelica's event iteration (see ``Element``, switching elements): with the pre
        states held, iterate the elements' values and the network's solution to a fixed
        point, commit, re-initialise states, and repeat until the states settle. Returns the
        notes ``[(element, kind, from, to)]`` of the re-initialisations; ``x`` is changed in
        place by them."""
        elements = self._elements
        pre = list(self.states)
        switched = [False] * len(elements)
        notes = []
        for outer in range(MODE_ITERATIONS):
            first_step = initial and outer == 0
            current = [el.first(p) for el, p in zip(elements, pre)]
            history = []
            for _ in range(MODE_ITERATIONS):
                views = self._solved_views(t, x, pre, current, first_step, switched)
                new = [el.iterate(p, c, v) for el, p, c, v in zip(elements, pre, current, views)]
                if new == current:
                    break
                if new in history:
                    cycle = history[history.index(new):] + [current]
                    merged = [_merged(el, [values[k] for values in cycle]) for k, el in enumerate(elements)]
                    if any(value is None for value in merged):
                        self._unsettled(t)
                    current = merged
                    break
                history.append(current)
                switched = [done or a != b for done, a, b in zip(switched, current, new)]
                current = new
            else:
                self._unsettled(t)
            views = self._solved_views(t, x, pre, current, first_step, switched)
            committed = [el.commit(p, c, v) for el, p, c, v in zip(elements, pre, current, views)]
            states = [state for state, _, _ in committed]
            reinit = [change for _, changes, _ in committed for change in changes]
            for lin, value in reinit:
                self._reinit(x, lin, value)
            notes += [(el, note) for el, (_, _, el_notes) in zip(elements, committed) for note in el_notes]
            self.states = states
            self.modes = tuple(el.branch_of(state) for el, state in zip(elements, states))
            if states == pre and not reinit:
                return notes
            pre = states
        self._unsettled(t)

    def _solved_views(self, t, x, pre, current, initial, switched):
        """Views of the network solved in the branches the elements' iteration values select
        (read from a first solution in the committed branches: what decides a branch does not
        depend on the branches)."""
        views = self._views(t, x, self.solve(t, x), initial, switched)
        modes = tuple(el.branch(p, c, v) for el, p, c, v in zip(self._elements, pre, current, views))
        z = self.solve(t, x, modes=modes)
        for view in views:
            view.at(z)
        return views

    def _unsettled(self, t):
        raise SimulationError("event_iteration", f"{self.label}: the switching elements' modes do not settle at "
                              f"t = {t:.9g}")

    def _reinit(self, x, lin, value):
        """``x`` so that the state ``lin`` (one state times a factor) is ``value``."""
        (col, coef), = lin.items()
        x[self._state_index(col)] = (value - lin.const) / coef
        self._solve_cache = (None, None, None)

    def initialize(self, t0, x0):
        self._started = False
        self.events = []
        self._w2_guess = np.zeros(self.n_unknowns - self.n_states)
        self._solve_cache = (None, None, None)
        x0 = np.array(x0, dtype=float)
        if self._switches:
            # a first solution (in every element's first branch) to read the pre states from,
            # with the states on that branch's index-2 constraint (a speed source's node at
            # its speed: a clutch on it starts sliding, not stuck)
            self.modes = tuple(el.branches[0] for el in self._elements)
            constraint = self._constraint(t0)
            if constraint is not None:
                x0 = self._initial_state(self._starts, constraint)
            views = self._views(t0, x0, self.solve(t0, x0))
            self.states = [el.pre_start(view) for el, view in zip(self._elements, views)]
            self.modes = tuple(el.branch_of(state) for el, state in zip(self._elements, self.states))
            for el, (kind, a, b) in self._event_iteration(t0, x0, initial=True):
                self.events.append(PhysicalEvent(t0, el.name, kind, a, b))
        constraint = self._constraint(t0)
        if constraint is not None:
            # index 2: the constraint on the states comes first, then the initial values
            x0 = self._initial_state(self._starts, constraint)
            self._solve_cache = (None, None, None)
        self._started = True
        return np.array(x0, dtype=float)

    def _constraint(self, t):
        """``(G, g)`` with the states bound to ``G w1 = g`` in the current mode, or None."""
        lin = self._linear(self.modes)
        if lin.constraint is None:
            return None
        G, H = lin.constraint
        return G, -(H @ self._c(t, self.inputs))

    def handle_events(self, t, x, fired=()):
        # what the modes before the event prescribe holds up to it: a mode without that
        # constraint starts from there, not from the integrator's copy of those states
        x = self._projected_states(t, np.array(x, dtype=float))
        before = list(self.states)
        if self._switches:
            for el, (kind, a, b) in self._event_iteration(t, x):
                self.events.append(PhysicalEvent(t, el.name, kind, a, b))
        for el, a, b in zip(self._elements, before, self.states):
            for kind, name_a, name_b in el.changes(a, b):
                self.events.append(PhysicalEvent(t, el.name, kind, name_a, name_b))
        # an index-2 constraint that the states no longer meet (a diode shorting a capacitor
        # onto a source, a source stepping across a capacitor): the states jump onto it by
        # the least change (an impulsive current)
        return self._projected_states(t, x)

    def _projected_states(self, t, x):
        """States ``x`` taken onto the committed modes' index-2 constraint, if they have one."""
        projector = self._linear(self.modes).projector
        return x if projector is None else _projected(projector, x, self._c(t, self.inputs))

    def next_time_event(self, t):
        best = math.inf
        for _, _, fn in self._functions:
            tb = fn.next_break(t)
            if tb < best:
                best = tb
        return best

    def input_index(self, element: str) -> int:
        return self._input_slots[element]

    def input_slot(self, element: str, name: str) -> int:
        return self.input_names.index(f"{element}.{name}")

    # -- initial state -------------------------------------------------------------------
    def _initial_state(self, starts, constraint=None):
        """States meeting ``constraint`` ``(G, g)`` (index 2) and then the elements'
        initial values in order, each one implied by the earlier ones checked."""
        r = self.n_states
        self._ignored_starts = list(self._held_starts)
        if r == 0:
            return np.zeros(0)
        rows, values, owners = [], [], []
        if constraint is not None:
            for row, value in zip(*constraint):
                rows.append(row)
                values.append(float(value))
                owners.append("a voltage source across a capacitor (or a current source in series with an inductor)")
        ranks = [0] * len(rows)
        for terms, value, owner, rank in sorted(starts, key=lambda start: start[3]):
            coefs = np.zeros(self.n_unknowns)
            for col, coef in terms:
                coefs[col] += coef
            rows.append(coefs @ self._V1)   # initial conditions act on the states only (rowspace of E)
            values.append(value)
            owners.append(owner)
            ranks.append(rank)
        chosen, chosen_values = [], []
        for row, value, owner, rank in zip(rows, values, owners, ranks):
            trial = np.array(chosen + [row])
            if np.linalg.matrix_rank(trial, tol=1e-10 * max(1.0, float(np.abs(trial).max()))) > len(chosen):
                chosen.append(row)
                chosen_values.append(value)
                continue
            if rank:        # a start value where the state is already decided
                continue
            # implied by the earlier ones: check it
            w = np.linalg.lstsq(np.array(chosen), np.array(chosen_values), rcond=None)[0]
            implied = float(row @ w)
            if abs(implied - value) > 1e-9 * max(1.0, abs(value), abs(implied)):
                self._ignored_starts.append((owner, value, implied))
        if not chosen:
            return np.zeros(r)
        return np.linalg.lstsq(np.array(chosen), np.array(chosen_values), rcond=None)[0]

    def start_warnings(self) -> list:
        return [f"{owner}: initial value {value:g} contradicts what its network imposes ({implied:g}: "
                f"{self._over_started}); it is ignored" for owner, value, implied in self._ignored_starts]

    # -- reading -------------------------------------------------------------------------
    def probe(self, kind: str, target: str, other: str | None = None) -> Callable:
        """A reader ``(t, x) -> value``: ``across`` of a pin ``'element.pin'`` (minus
        ``other``'s), or ``unknown`` ``'element.name'`` (a branch current); a mechanical
        pin's ``s``/``phi``, ``v``/``w`` or ``a``."""
        if kind in self._MOTION:
            return self._motion_probe(self._MOTION[kind], target)
        col_a = self._col_of(kind, target)
        col_b = self._col_of(kind, other) if other is not None else None

        def read(t, x):
            z = self.solve(t, np.asarray(x, dtype=float))
            a = z[col_a] if col_a is not None else 0.0
            b = z[col_b] if col_b is not None else 0.0
            return float(a - b)
        return read

    @property
    def probes_pure(self) -> bool:
        """Whether a probe's read has no effect but a cache: in an island solved without
        Newton; in one that iterates, its solve leaves Newton's warm start for the next."""
        return not self._implicit

    def probe_pick(self, kind: str, target: str, other: str | None = None) -> Callable | None:
        """Where ``probe(kind, target, other)`` is a function of (t, x) and the inputs alone
        (a linear island without modes): its values on the rows of ``solve_rows`` (the same
        subtraction); None elsewhere."""
        if self._nonlinear or self._switches:
            return None
        col_a = self._col_of(kind, target)
        col_b = self._col_of(kind, other) if other is not None else None

        def pick(z):
            a = z[:, col_a] if col_a is not None else 0.0
            b = z[:, col_b] if col_b is not None else 0.0
            return a - b
        return pick

    def _col_of(self, kind, target):
        element, name = target.split(".", 1)
        pin_at, unknowns = self._handles[element]
        return pin_at[name][0] if kind == "across" else unknowns[name]

    # mechanical sensors: the position, speed or acceleration of a pin 'element.pin'
    _MOTION = {"s": 0, "phi": 0, "v": 1, "w": 1, "a": 2}

    def _motion_at(self, target):
        element, pin = target.split(".", 1)
        col, _, k, d = self._handles[element][0][pin]
        return col, k, d

    def state_terms(self, lin):
        """``lin`` as ``[(state index, coef)]`` when all its unknowns are states, else False."""
        terms = [(self._state_index(col), coef) for col, coef in lin.items()]
        return terms if all(k is not None for k, _ in terms) else False

    def _state_index(self, col):
        if col is None or self.state_columns is None:
            return None
        hit = np.flatnonzero(self.state_columns == col)
        return int(hit[0]) if hit.size else None

    def probe_linear(self, kind, target):
        """``(i, k, d)`` when ``probe(kind, target)`` reads ``float(k * x[i] + d)``
        (``float(k * x[i])`` when ``d`` is None) of the island's state, whatever the time,
        inputs and modes: the position or speed of a pin whose group's position or speed is
        a state. None for anything else."""
        order = self._MOTION.get(kind)
        if order is None or order == 2:
            return None
        col, k, d = self._motion_at(target)
        if order == 1:
            col, d = self._speeds.get(col), None
        i = self._state_index(col)
        # a state that an index-2 constraint prescribes is read from the constraint. The
        # modes eliminated before the run (``eliminate_now``: every switch in its first
        # branch, every one in its second) are known here; a mechanical state is prescribed
        # by a motion source (in every mode) or by an EMF closing a loop of voltage sources
        # and conducting ideal elements, which the all-first-branch mode (all conducting)
        # has too, and a run that could not start in that mode does not start
        # (``initialize``): no mode met later prescribes another
        if i is None or i in self._constrained:
            return None
        return i, k, d

    def _motion_probe(self, order, target):
        col, k, d = self._motion_at(target)
        if col is None:                  # a fixed flange
            value = d if order == 0 else 0.0
            return lambda t, x: value
        linear = self.probe_linear("s" if order == 0 else "v", target) if order < 2 else None
        if linear is not None:
            i = linear[0]
            if order == 0:
                return lambda t, x: float(k * x[i] + d)
            return lambda t, x: float(k * x[i])
        if order == 0:
            return lambda t, x: float(k * self.solve(t, np.asarray(x, dtype=float))[col] + d)
        speed = self._speeds.get(col)
        if speed is None:                # no element reads this node's speed: its position's rate
            if order == 2:
                return lambda t, x: math.nan
            self._ask_rates_of(col)
            return lambda t, x: k * self._rate_of(col, t, x)
        if order == 1:
            return lambda t, x: float(k * self.solve(t, np.asarray(x, dtype=float))[speed])
        return lambda t, x: k * self._rate_of(speed, t, x)

    def _ask_rates_of(self, col) -> None:
        """An algebraic unknown's rate read by a sensor (the speed of a massless flange that
        a signal-driven force holds against a spring) moves with the rates of the signals
        it follows: those are asked of the diagram (engine.rates), like an index-2 source's."""
        if self._nonlinear or self._state_index(col) is not None:
            return
        lin = self._linear(self.modes)
        needs = np.abs(lin.Zc[col] @ self.B) > 1e-12 if self.B.size else np.zeros(0, dtype=bool)
        self.rate_inputs = self.rate_inputs | {int(k) for k in np.nonzero(needs)[0]}

    def _rate_of(self, col, t, x) -> float:
        """The time derivative of unknown ``col`` at ``(t, x)``: a state's from the
        derivative, an algebraic one's from the eliminated solution (NaN where that needs
        more than the sources' first derivatives, or in a non-linear island)."""
        x = np.asarray(x, dtype=float)
        xdot = self.derivative(t, x)
        i = self._state_index(col)
        if i is not None:
            return float(xdot[i])
        if self._nonlinear:
            return math.nan
        lin = self._linear(self.modes)
        if lin.constraint is not None and np.any(lin.Zd[col]):
            return math.nan
        return float(lin.Z1[col] @ xdot + lin.Zc[col] @ self._c_rate(t))

    def probe_inputs(self, kind: str, target: str, other: str | None = None) -> set:
        """The input slots a probe's value depends on directly (not through the states): all
        of them in a non-linear island; in a linear one those with a non-zero coefficient in
        the eliminated solution, in the all-on and the all-off modes. A mechanical pin's
        position or speed (``kind`` s, phi, v, w) depends on them where it is not a state
        (a massless flange a signal-driven force holds) or an index-2 constraint prescribes
        it (a speed source's flange); its rate (a massless flange's speed) on all of them."""
        if self._nonlinear:
            return set(range(len(self.input_names)))
        if kind in self._MOTION:
            col, _, _ = self._motion_at(target)
            if col is not None and self._MOTION[kind]:
                col = self._speeds.get(col)
                if col is None:          # read as the rate of a position (``_rate_of``)
                    return set(range(len(self.input_names)))
            cols = [col] if col is not None else []
        else:
            cols = [c for c in (self._col_of(kind, target), self._col_of(kind, other) if other else None)
                    if c is not None]
        found = set()
        for modes in self._extreme_modes():
            lin = self._linear(modes)
            for Z in (lin.Zc, lin.Zd):    # through the signal's value, and its rate (index 2)
                gain = Z[cols] @ self.B if cols else np.zeros((0, len(self.input_names)))
                found |= {int(k) for k in np.nonzero(np.any(gain != 0.0, axis=0))[0]}
        return found


@dataclass
class _Eliminated:
    """A linear island's solution in one mode (see ``DaeIsland._linear``); for a
    non-linear island ``A``, the rows Newton solves and the index-2 constraint, if any."""
    A: np.ndarray
    Z1: np.ndarray | None = None
    Zc: np.ndarray | None = None
    Zd: np.ndarray | None = None
    K: np.ndarray | None = None
    L: np.ndarray | None = None
    Ld: np.ndarray | None = None
    newton_rows: np.ndarray | None = None    # a non-linear island: Newton's rows of A z + c + N
    newton_rates: np.ndarray | None = None   # and of c' (its differentiated constraint, ``_reduce_for_newton``)
    constraint: tuple | None = None     # (G, H): the states obey G w1 + H c(t) = 0 (index 2)
    projector: tuple | None = None      # (Pi, GpH, support) onto the constraint (``_constraint_projector``)
    L_c0: np.ndarray | None = None      # L c and Zc c where c is constant (no time functions,
    Zc_c0: np.ndarray | None = None     # no inputs, no constraint)
    float_derivative: Callable | None = None   # DaeIsland._float_derivative (a small island whose c varies)


def _constraint_projector(G, H):
    """``(Pi, GpH, support)``: the states ``w`` taken onto ``G w + H c = 0`` by the least
    change are ``Pi w - GpH c`` (``Gp`` the pseudo-inverse of ``G``); ``support`` lists the
    states ``G`` involves, the only ones that change (``Pi`` is the identity elsewhere)."""
    r = G.shape[1]
    scale = float(np.abs(G).max(initial=0.0))
    support = np.flatnonzero(np.abs(G).max(axis=0, initial=0.0) > 1e-13 * scale)
    Gp = np.linalg.pinv(G[:, support])
    Pi = np.eye(r)
    Pi[np.ix_(support, support)] -= Gp @ G[:, support]
    GpH = np.zeros((r, H.shape[1]))
    GpH[support] = Gp @ H
    return Pi, GpH, support


def _projected(projector, w1, c):
    """States ``w1`` taken onto their mode's index-2 constraint (``_Eliminated.projector``,
    None: no constraint; ``c`` the source terms)."""
    return w1 if projector is None else projector[0] @ w1 - projector[1] @ c


def _merged(element, values):
    """An element's iteration value over a cycle of the event iteration: its value if it
    did not change, else what the element makes of the cycle (``Element.merge``)."""
    return values[0] if all(value == values[0] for value in values) else element.merge(values)


def _column_owners(asm, col) -> tuple:
    """The elements an unknown belongs to: its element (a branch current), or those at its
    node (a potential, a position, a speed)."""
    if col in asm.element_of_col:
        return (asm.element_of_col[col],)
    return asm.node_owners.get(col) or asm.speed_owner.get(col, ())


def _alternating_reach(pattern, match, unmatched) -> list:
    """The equations in conflict with the unmatched ones: those reached from them by
    alternating paths (an equation -> its unknowns -> the equations matched to those), the
    over-determined part of the Dulmage-Mendelsohn decomposition. A loop of voltage sources
    so names every source of the loop, not only the one the matching left over. On the
    transposed pattern (``match`` then gives each unknown's equation), from the unmatched
    unknowns: the free unknowns, the under-determined part."""
    m, n = pattern.shape
    entries = pattern.tocoo()
    matched = np.flatnonzero(match >= 0)
    # graph nodes: the equations 0..m-1, then the unknowns m..m+n-1
    sources = np.concatenate([entries.row, m + match[matched]])
    targets = np.concatenate([m + entries.col, matched])
    graph = coo_matrix((np.ones(sources.size), (sources, targets)), shape=(m + n, m + n)).tocsr()
    reached = set()
    for row in unmatched:
        order = breadth_first_order(graph, row, directed=True, return_predecessors=False)
        reached.update(int(k) for k in order if k < m)
    return sorted(reached)


def _lu_solve(lu, rhs) -> np.ndarray:
    """``scipy.linalg.lu_solve`` a column at a time: with several right-hand sides OpenBLAS
    hands the solve to its thread pool, which on a loaded machine costs milliseconds for a
    2 x 2 system (one right-hand side stays on the calling thread)."""
    if rhs.ndim == 1:
        return scipy.linalg.lu_solve(lu, rhs)
    out = np.empty((lu[0].shape[0], rhs.shape[1]))
    for j in range(rhs.shape[1]):
        out[:, j] = scipy.linalg.lu_solve(lu, rhs[:, j])
    return out


def _picker(indices) -> Callable:
    """A function giving the items of a sequence at ``indices`` as a tuple (``itemgetter``
    gives a bare item for one index)."""
    if len(indices) == 1:
        get = operator.itemgetter(indices[0])
        return lambda items: (get(items),)
    return operator.itemgetter(*indices) if indices else lambda items: ()


def _copied(base, coefs) -> int | None:
    """The index of the one value a derivative row copies (``base`` 0, one coefficient 1,
    the others 0), else None."""
    ones = np.flatnonzero(coefs == 1.0)
    if base == 0.0 and len(ones) == 1 and np.count_nonzero(coefs) == 1:
        return int(ones[0])
    return None


def _dense(entries, rows, cols) -> np.ndarray:
    out = np.zeros((rows, cols))
    for r, c, v in entries:
        out[r, c] += v
    return out
