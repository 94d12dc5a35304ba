"""nflow's acausal electrical library as network elements (MSL 4.1.0 Electrical.Analog
semantics where nflow's one-line help is silent).

Sign conventions are MSL's: a pin's current is positive into the element; a one-port's
``v = p.v - n.v`` and ``i = p.i`` (through the element from p to n), so a source delivering
power has ``v*i < 0``. Where nflow's blocks have fewer parameters than MSL's (no offset or
start time on the waveform sources, no temperature laws, the simpler semiconductor laws of
nflow's help), the element says what it computes.
"""
from __future__ import annotations

import math

import numpy as np

from . import elements as waveforms
from .acausal import Element, SignalConductance, SignalResistance, element

_ONE_PORT = ("p", "n")
_FOUR_PIN = ("p", "n", "cp", "cn")
_TWO_PORT = ("p1", "n1", "p2", "n2")


@element
class Ground(Element):
    """The 0 V reference of its node."""
    type_name, pins, ground = "Ground", ("p",), True

    def stamp(self, s):
        pass


def _conductance(s, g):
    """i(p -> n) = g * (v_p - v_n)."""
    vp, vn = s.v("p"), s.v("n")
    s.branch("p", "n", [(vp, g), (vn, -g)])


@element
class Resistor(Element):
    """v = R*i (R may be 0 or negative, as in MSL: then a branch current unknown)."""
    type_name, pins, unknowns = "Resistor", _ONE_PORT, ("i",)

    def stamp(self, s):
        R = self.param("R")
        _resistive_branch(s, R)


def _resistive_branch(s, R):
    """v_p - v_n = R*i with the branch current i an unknown (works for R = 0)."""
    i = s.x("i")
    s.branch("p", "n", [(i, 1.0)])
    row = s.across_row("p", "n")
    s.add(row, i, -R)


@element
class Conductor(Element):
    """i = G*v."""
    type_name, pins = "Conductor", _ONE_PORT

    def stamp(self, s):
        _conductance(s, self.param("G"))


@element
class HeatingResistor(Element):
    """A resistor whose dissipated power v*i = v^2/R enters its thermal node (MSL's
    Resistor with the heat port on and alpha = 0: nflow's block has R only)."""
    type_name, pins, unknowns = "HeatingResistor", ("p", "n", "heatPort"), ("i",)

    def stamp(self, s):
        _resistive_branch(s, self.param("R"))
        vp, vn, i = s.v("p"), s.v("n"), s.x("i")

        def loss(z, u, t):
            v, cur = z[0] - z[1], z[2]
            # heatPort.Q_flow = -v*i (the power leaves the element into the node)
            return np.array([-v * cur]), np.array([[-cur, cur, -v]])
        s.nonlinear([s.node_row("heatPort")], [vp, vn, i], loss)


@element
class VariableResistor(SignalResistance):
    """v = R(t)*i with R from the signal input."""
    type_name, pins, inputs, unknowns = "VariableResistor", _ONE_PORT, ("R",), ("i",)


@element
class VariableConductor(SignalConductance):
    """i = G(t)*v with G from the signal input."""
    type_name, pins, inputs = "VariableConductor", _ONE_PORT, ("G",)


@element
class Capacitor(Element):
    """i = C*dv/dt, v(0) = v0."""
    type_name, pins = "Capacitor", _ONE_PORT

    def stamp(self, s):
        C = self.param("C", positive=True)
        vp, vn = s.v("p"), s.v("n")
        s.branch("p", "n", dt_terms=[(vp, C), (vn, -C)])
        s.start([(vp, 1.0), (vn, -1.0)], self.param("v0"))


@element
class Inductor(Element):
    """L*di/dt = v, i(0) = i0."""
    type_name, pins, unknowns = "Inductor", _ONE_PORT, ("i",)

    def stamp(self, s):
        L = self.param("L", positive=True)
        i, vp, vn = s.x("i"), s.v("p"), s.v("n")
        s.branch("p", "n", [(i, 1.0)])
        row = s.row()
        s.add_dt(row, i, L)
        s.add(row, vp, -1.0)
        s.add(row, vn, 1.0)
        s.start([(i, 1.0)], self.param("i0"))


# MSL's Cmin / Lmin: the smallest capacitance / inductance used (``max(C, Cmin)``)
_SMALLEST = np.finfo(float).eps


@element
class VariableCapacitor(Element):
    """Charge state Q (initial q0): i = dQ/dt, Q = max(C, Cmin)*v with C from the input
    (so a changing C moves charge at constant voltage, and a jump of C makes v jump)."""
    type_name, pins, inputs, unknowns = "VariableCapacitor", _ONE_PORT, ("C",), ("q",)

    def stamp(self, s):
        q, vp, vn = s.x("q"), s.v("p"), s.v("n")
        s.branch("p", "n", dt_terms=[(q, 1.0)])
        row = s.row()
        s.add(row, q, 1.0)

        def charge(z, u, t):
            C = max(u[0], _SMALLEST)
            return np.array([-C * (z[0] - z[1])]), np.array([[-C, C]])
        s.nonlinear([row], [vp, vn], charge, inputs=[s.input("C")])
        s.start([(q, 1.0)], self.param("q0"))


@element
class VariableInductor(Element):
    """Flux state Psi (initial phi0): v = dPsi/dt, Psi = max(L, Lmin)*i with L from the
    input."""
    type_name, pins, inputs, unknowns = "VariableInductor", _ONE_PORT, ("L",), ("psi", "i")

    def stamp(self, s):
        psi, i, vp, vn = s.x("psi"), s.x("i"), s.v("p"), s.v("n")
        s.branch("p", "n", [(i, 1.0)])
        row = s.row()
        s.add_dt(row, psi, 1.0)
        s.add(row, vp, -1.0)
        s.add(row, vn, 1.0)
        flux = s.row()
        s.add(flux, psi, 1.0)

        def law(z, u, t):
            L = max(u[0], _SMALLEST)
            return np.array([-L * z[0]]), np.array([[-L]])
        s.nonlinear([flux], [i], law, inputs=[s.input("L")])
        s.start([(psi, 1.0)], self.param("phi0"))


# ----------------------------------------------------------------------------- sources

def _voltage_source(s, **value):
    """v_p - v_n = value (a constant, a time function or an input), branch current i."""
    i = s.x("i")
    s.branch("p", "n", [(i, 1.0)])
    row = s.across_row("p", "n")
    s.source(row, -1.0, **value)


def _current_source(s, **value):
    """i(p -> n) through the source = value."""
    s.branch_source("p", "n", 1.0, **value)


class _VoltageSource(Element):
    pins, unknowns = _ONE_PORT, ("i",)

    def stamp(self, s):
        _voltage_source(s, **self.source_value(s))


class _CurrentSource(Element):
    pins = _ONE_PORT

    def stamp(self, s):
        _current_source(s, **self.source_value(s))


# sources: nflow type -> (voltage or current, class attributes: the parameter, the signal
# input or the waveform that gives the value)
_SOURCES = {
    "ConstantVoltage": (_VoltageSource, {"value_param": "V"}),
    "ConstantCurrent": (_CurrentSource, {"value_param": "I"}),
    "SignalVoltage": (_VoltageSource, {"inputs": ("V",)}),
    "SignalCurrent": (_CurrentSource, {"inputs": ("I",)}),
    "SineVoltage": (_VoltageSource, {"shape": waveforms.sine_of}),
    "SineCurrent": (_CurrentSource, {"shape": waveforms.sine_of}),
    "ExpSineVoltage": (_VoltageSource, {"shape": waveforms.exp_sine_of}),
    "ExpSineCurrent": (_CurrentSource, {"shape": waveforms.exp_sine_of}),
    "TrapezoidVoltage": (_VoltageSource, {"shape": waveforms.trapezoid_of}),
    "TrapezoidCurrent": (_CurrentSource, {"shape": waveforms.trapezoid_of}),
    "RampVoltage": (_VoltageSource, {"shape": waveforms.ramp_of}),
    "RampCurrent": (_CurrentSource, {"shape": waveforms.ramp_of}),
}
for _type, (_base, _attributes) in _SOURCES.items():
    element(type(_type, (_base,), {"type_name": _type, **_attributes}))


# ----------------------------------------------------------------------------- two-ports

@element
class VCV(Element):
    """v_p - v_n = gain*(v_cp - v_cn); the control port draws no current."""
    type_name, pins, unknowns = "VCV", _FOUR_PIN, ("i",)

    def stamp(self, s):
        k = self.param("gain")
        i = s.x("i")
        s.branch("p", "n", [(i, 1.0)])
        row = s.row()
        for pin, coef in (("p", 1.0), ("n", -1.0), ("cp", -k), ("cn", k)):
            s.add(row, s.v(pin), coef)


@element
class VCC(Element):
    """i(p -> n through the element) = gain*(v_cp - v_cn) (MSL's VCC: the output current
    enters at p like a conductance's); the control port draws no current."""
    type_name, pins = "VCC", _FOUR_PIN

    def stamp(self, s):
        k = self.param("gain")
        s.branch("p", "n", [(s.v("cp"), k), (s.v("cn"), -k)])


class _CurrentControlled(Element):
    """The cp -> cn sense branch is a short carrying ``i_sense`` (an unknown)."""
    pins = _FOUR_PIN

    def sense(self, s):
        isense = s.x("i_sense")
        s.branch("cp", "cn", [(isense, 1.0)])
        s.across_row("cp", "cn")            # the sense branch is a short
        return isense


@element
class CCV(_CurrentControlled):
    """v_p - v_n = gain*i_sense."""
    type_name, unknowns = "CCV", ("i_sense", "i")

    def stamp(self, s):
        isense, i = self.sense(s), s.x("i")
        s.branch("p", "n", [(i, 1.0)])
        row = s.across_row("p", "n")
        s.add(row, isense, -self.param("gain"))


@element
class CCC(_CurrentControlled):
    """i(p -> n) = gain*i_sense."""
    type_name, unknowns = "CCC", ("i_sense",)

    def stamp(self, s):
        isense = self.sense(s)
        s.branch("p", "n", [(isense, self.param("gain"))])


@element
class IdealTransformer(Element):
    """v1 = n*v2, i2 = -n*i1 (no magnetization)."""
    type_name, pins, unknowns = "IdealTransformer", _TWO_PORT, ("i1",)

    def stamp(self, s):
        ratio = self.param("n", nonzero=True)
        i1 = s.x("i1")
        s.branch("p1", "n1", [(i1, 1.0)])
        s.branch("p2", "n2", [(i1, -ratio)])
        row = s.row()
        for pin, coef in (("p1", 1.0), ("n1", -1.0), ("p2", -ratio), ("n2", ratio)):
            s.add(row, s.v(pin), coef)


@element
class Gyrator(Element):
    """i1 = G2*v2, i2 = -G1*v1."""
    type_name, pins = "Gyrator", _TWO_PORT

    def stamp(self, s):
        g1, g2 = self.param("G1"), self.param("G2")
        s.branch("p1", "n1", [(s.v("p2"), g2), (s.v("n2"), -g2)])
        s.branch("p2", "n2", [(s.v("p1"), -g1), (s.v("n1"), g1)])


@element
class IdealOpAmp(Element):
    """The nullor: in_p.v = in_n.v, no input currents, the output current is free and
    returns through the (implicit) ground."""
    type_name, pins, unknowns = "IdealOpAmp", ("in_p", "in_n", "out"), ("i_out",)
    unmatched = ("opamp_no_feedback", "an ideal op-amp without feedback: nothing leads from its output back to its "
                 "inputs, so its output current is free while the rest of the circuit already decides both input "
                 "potentials, which the op-amp holds equal (connect its output to in_n through the feedback network)")

    def stamp(self, s):
        s.flow("out", [(s.x("i_out"), 1.0)])
        s.across_row("in_p", "in_n")


@element
class Short(Element):
    type_name, pins, unknowns = "Short", _ONE_PORT, ("i",)

    def stamp(self, s):
        _resistive_branch(s, 0.0)


@element
class Idle(Element):
    type_name, pins = "Idle", _ONE_PORT

    def stamp(self, s):
        pass


# ----------------------------------------------------------------------------- switching

class _IdealSemiconductor(Element):
    """MSL's curve parameter form: ``v = s*(1 if off else Ron) + Vknee``,
    ``i = s*(Goff if off else 1) + Goff*Vknee``; the mode is a state event on MSL's
    relation ``off = s < 0`` (so a tie ``s = 0`` is on)."""
    pins, unknowns, switching, on_when_positive = _ONE_PORT, ("i", "s"), True, False

    def law(self):
        raise NotImplementedError

    def stamp(self, s):
        Ron, Goff, Vknee = self.law()
        i, sv, vp, vn = s.x("i"), s.x("s"), s.v("p"), s.v("n")
        s.branch("p", "n", [(i, 1.0)])
        volt = s.row()                      # v_p - v_n - s*(1|Ron) = Vknee
        s.add(volt, vp, 1.0)
        s.add(volt, vn, -1.0)
        s.switched(volt, sv, on=-Ron, off=-1.0)
        s.source(volt, -1.0, value=Vknee)
        cur = s.row()                       # i - s*(Goff|1) = Goff*Vknee
        s.add(cur, i, 1.0)
        s.switched(cur, sv, on=-1.0, off=-Goff)
        s.source(cur, -1.0, value=Goff * Vknee)
        self.watch(s, sv)

    def watch(self, s, sv):
        s.watch([sv])

    def relation(self, z, u):
        return -z[0]                 # -s > 0: off


@element
class IdealDiode(_IdealSemiconductor):
    type_name = "IdealDiode"

    def law(self):
        return (self.param("Ron", nonnegative=True), self.param("Goff", nonnegative=True),
                self.param("Vknee", nonnegative=True))


# MSL's IdealClosingSwitch defaults: nflow's IdealSwitch has no Ron/Goff ("short"/"open");
# these keep an open switch from leaving a node floating or cutting an inductor's current
SWITCH_RON, SWITCH_GOFF = 1e-5, 1e-5


@element
class IdealSwitch(_IdealSemiconductor):
    """Closed while ``control > 0.5`` (nflow), else open; MSL's ideal switch law."""
    type_name, inputs, on_when_positive = "IdealSwitch", ("control",), True

    def law(self):
        return SWITCH_RON, SWITCH_GOFF, 0.0

    def watch(self, s, sv):
        s.watch([], inputs=[s.input("control")])

    def relation(self, z, u):
        return u[0] - 0.5


# ----------------------------------------------------------------------------- semiconductors
# Newton's method on an exponential law goes astray from a trial point far from the
# solution (a junction stepping from reverse to 1 V forward computes ~1e7 A). SPICE bounds
# how far each iteration may move a junction's voltage; so do these laws, through
# ``Stamp.nonlinear``'s ``limit``: the fraction of the Newton step that keeps every
# junction of the element within SPICE's bound (``DaeIsland._newton`` takes the smallest
# over the elements). The bounds are Berkeley SPICE's: ``pn_limited`` for a pn junction
# (its ``pnjlim``), ``gate_limited`` and ``channel_limited`` for a MOSFET's gate and
# drain voltages (``fetlim``, ``limvds``).

def pn_critical(Is, Vt) -> float:
    """The junction voltage where the Shockley curve bends most (SPICE's ``vcrit``):
    above it a step larger than 2 Vt is cut to a logarithmic one."""
    return Vt * math.log(Vt / (math.sqrt(2.0) * Is))


def pn_limited(new, old, Vt, critical) -> float:
    """How far a Newton iteration may take a junction voltage from ``old`` towards ``new``:
    above ``critical`` a rise of more than 2 Vt grows only logarithmically (the current it
    gives then grows linearly with the step), from a reverse or zero bias to the voltage
    whose current the linearization at zero bias reaches."""
    if new > critical and abs(new - old) > 2.0 * Vt:
        if old > 0.0:
            arg = 1.0 + (new - old) / Vt
            return old + Vt * math.log(arg) if arg > 0.0 else critical
        if new > Vt:         # (a critical voltage below Vt, a huge Is, leaves a small rise be)
            return Vt * math.log(new / Vt)
    return new


def gate_limited(new, old, threshold) -> float:
    """How far a Newton iteration may move a MOSFET's gate-source voltage: steps shrink
    near the threshold, where the channel turns on and the law bends, and a gate coming
    from below the threshold stops half a volt above it."""
    high = abs(2.0 * (old - threshold)) + 2.0
    low = abs(old - threshold) + 1.0
    strong = threshold + 3.5
    step = new - old
    if old >= threshold:
        if old >= strong:
            if step <= 0.0:                 # turning off
                return (old - low if -step > low else new) if new >= strong else max(new, threshold + 2.0)
            return old + high if step >= high else new
        return max(new, threshold - 0.5) if step <= 0.0 else min(new, threshold + 4.0)
    if step <= 0.0:                         # off, going further off
        return old - high if -step > high else new
    if new <= threshold + 0.5:
        return old + low if step > low else new
    return threshold + 0.5


def channel_limited(new, old) -> float:
    """How far a Newton iteration may move a MOSFET's drain-source voltage (at least 0 in
    the orientation the law is written in)."""
    if old >= 3.5:
        if new > old:
            return min(new, 3.0 * old + 2.0)
        return max(new, 2.0) if new < 3.5 else new
    return min(new, 4.0) if new > old else max(new, -0.5)


def step_fraction(old, step, limited) -> float:
    """The fraction of ``step`` from ``old`` that ``limited`` (the bounded value of
    ``old + step``) allows, in (0, 1] (a bound farther than the step allows all of it)."""
    if step == 0.0 or limited == old + step:
        return 1.0
    fraction = (limited - old) / step
    return fraction if 0.0 < fraction < 1.0 else 1.0


# SPICE's GMIN (ngspice's default): the conductance in parallel with every pn junction,
# so that a node held only by blocking junctions (a bridge rectifier's load while no diode
# conducts, whose Shockley currents are all -Is whatever its potential) has one potential
GMIN = 1e-12


# an exponent beyond which a junction's current counts as overflowing (inf): no solution
# lies there, and a Newton step that would land there is shortened (roots.newton)
EXP_LIMIT = 700.0


def junction_exp(x: float) -> float:
    """exp(x), inf beyond ``EXP_LIMIT``."""
    return math.exp(x) if x < EXP_LIMIT else math.inf


def _junction(Is, Vt):
    """A pn junction's current and its derivative: the Shockley law Is*(exp(v/Vt) - 1)
    plus ``GMIN``*v."""
    def current(v):
        e = junction_exp(v / Vt)
        return Is * (e - 1.0) + GMIN * v, Is * e / Vt + GMIN
    return current


def _junction_fraction(Is, Vt):
    """``fraction(v, dv)``: of a Newton step ``dv`` of a junction's voltage ``v``, what
    ``pn_limited`` allows."""
    critical = pn_critical(Is, Vt)

    def fraction(v, dv):
        return step_fraction(v, dv, pn_limited(v + dv, v, Vt, critical))
    return fraction


class _TwoTerminalLaw(Element):
    """i(p -> n) = f(v_p - v_n)."""
    pins = _ONE_PORT

    def current(self):
        raise NotImplementedError

    def junctions(self):
        """``fraction(v, dv)`` per junction: the Newton step a junction of voltage ``v``
        accepts, as a function of the element's voltage (``_junction_fraction``)."""
        raise NotImplementedError

    def stamp(self, s):
        f = self.current()
        fractions = self.junctions()

        def law(z, u, t):
            i, g = f(z[0] - z[1])
            return np.array([i, -i]), np.array([[g, -g], [-g, g]])

        def limit(z, step):
            v, dv = z[0] - z[1], step[0] - step[1]
            return min(fraction(v, dv) for fraction in fractions)
        s.nonlinear([s.node_row("p"), s.node_row("n")], [s.v("p"), s.v("n")], law, limit=limit)


@element
class Diode(_TwoTerminalLaw):
    """nflow's Shockley law i = Is*(exp(v/Vt) - 1), with SPICE's ``GMIN`` in parallel (no
    series resistance)."""
    type_name = "Diode"

    def current(self):
        return _junction(self.param("Is", positive=True), self.param("Vt", positive=True))

    def junctions(self):
        return [_junction_fraction(self.param("Is", positive=True), self.param("Vt", positive=True))]


@element
class ZDiode(_TwoTerminalLaw):
    """Shockley forward branch plus a reverse breakdown at -Vz with the same Is and Vt:
    i = Is*(exp(v/Vt) - 1) - Is*exp(-(v + Vz)/Vt) (nflow's help; its Vz is MSL's Bv), with
    SPICE's ``GMIN`` in parallel."""
    type_name = "ZDiode"

    def current(self):
        Is, Vt, Vz = self.param("Is", positive=True), self.param("Vt", positive=True), self.param("Vz")
        forward = _junction(Is, Vt)

        def law(v):
            i, g = forward(v)
            e = Is * junction_exp(-(v + Vz) / Vt)
            return i - e, g + e / Vt
        return law

    def junctions(self):
        """The forward junction at v, the breakdown one at -(v + Vz) (SPICE limits both)."""
        Is, Vt, Vz = self.param("Is", positive=True), self.param("Vt", positive=True), self.param("Vz")
        forward = _junction_fraction(Is, Vt)
        return [forward, lambda v, dv: forward(-(v + Vz), -dv)]


@element
class NPN(Element):
    """nflow's Ebers-Moll transport model (MSL's NPN with no Early effect, capacitances or
    leakage): ibe = Is*(exp(vbe/Vt) - 1), ibc = Is*(exp(vbc/Vt) - 1), each junction current
    with SPICE's ``GMIN``*v added as SPICE adds it, C.i = ibe - ibc - ibc/Br,
    B.i = ibe/Bf + ibc/Br, E.i = -B.i - C.i. Newton steps limit both junctions
    (``pn_limited``)."""
    type_name, pins = "NPN", ("C", "B", "E")
    polarity = 1.0

    def stamp(self, s):
        Is, Vt = self.param("Is", positive=True), self.param("Vt", positive=True)
        Bf, Br = self.param("Bf", positive=True), self.param("Br", positive=True)
        sign = self.polarity
        junction = _junction(Is, Vt)
        fraction = _junction_fraction(Is, Vt)

        def law(z, u, t):
            vc, vb, ve = z
            ibc, gbc = junction(sign * (vb - vc))
            ibe, gbe = junction(sign * (vb - ve))
            ic = ibe - ibc - ibc / Br
            ib = ibe / Bf + ibc / Br
            # d/d(vc, vb, ve) of the junction voltages (times sign, again times sign: +)
            dic = np.array([gbc + gbc / Br, gbe - gbc - gbc / Br, -gbe])
            dib = np.array([-gbc / Br, gbe / Bf + gbc / Br, -gbe / Bf])
            res = sign * np.array([ic, ib, -ic - ib])
            return res, np.array([dic, dib, -dic - dib])

        def limit(z, step):
            vc, vb, ve = z
            dc, db, de = step
            return min(fraction(sign * (vb - ve), sign * (db - de)), fraction(sign * (vb - vc), sign * (db - dc)))
        s.nonlinear([s.node_row(p) for p in self.pins], [s.v(p) for p in self.pins], law, limit=limit)


@element
class PNP(NPN):
    """The mirror image of NPN: every junction voltage and terminal current negated."""
    type_name, polarity = "PNP", -1.0


@element
class NMOS(Element):
    """nflow's square-law MOSFET (MSL's NMOS with bulk tied to source, K2 = 0, K5 = 1,
    W/L factor 1, no RDS): with us = min(D, S), uds = |D - S|, ugst = G - us - Vt:
    id = 0 (ugst <= 0), Beta*uds*(ugst - uds/2) (ugst > uds), Beta*ugst^2/2 otherwise;
    the current flows from the higher of D, S to the lower. Newton steps limit the gate
    and channel voltages seen from the lower of D, S (``gate_limited``,
    ``channel_limited``)."""
    type_name, pins = "NMOS", ("D", "G", "S")
    polarity = 1.0

    def stamp(self, s):
        beta, vt = self.param("Beta", positive=True), self.param("Vt")
        sign = self.polarity

        def law(z, u, t):
            vd, vg, vs = sign * z
            forward = vd >= vs
            us, uds = (vs, vd - vs) if forward else (vd, vs - vd)
            ugst = vg - us - vt
            if ugst <= 0.0:
                i, g_gs, g_ds = 0.0, 0.0, 0.0
            elif ugst > uds:
                i, g_gs, g_ds = beta * uds * (ugst - uds / 2), beta * uds, beta * (ugst - uds)
            else:
                i, g_gs, g_ds = beta * ugst * ugst / 2, beta * ugst, 0.0
            # derivatives with respect to (vd, vg, vs) in the oriented frame
            if forward:
                d = np.array([g_ds, g_gs, -g_gs - g_ds])
                idrain = i
            else:
                d = -np.array([-g_gs - g_ds, g_gs, g_ds])
                idrain = -i
            res = sign * np.array([idrain, 0.0, -idrain])
            return res, np.array([d, np.zeros(3), -d])

        def limit(z, step):
            vd, vg, vs = (sign * value for value in z)
            dd, dg, ds = (sign * value for value in step)
            if vd < vs:                      # the drain is the lower terminal: seen from it
                vd, vs, dd, ds = vs, vd, ds, dd
            gate, channel = vg - vs, vd - vs
            return min(step_fraction(gate, dg - ds, gate_limited(gate + dg - ds, gate, vt)),
                       step_fraction(channel, dd - ds, channel_limited(channel + dd - ds, channel)))
        s.nonlinear([s.node_row(p) for p in self.pins], [s.v(p) for p in self.pins], law, limit=limit)


@element
class PMOS(NMOS):
    """The mirror image of NMOS (every voltage and current negated); Vt is the threshold
    magnitude, as nflow's default Vt = 1 for both suggests."""
    type_name, polarity = "PMOS", -1.0


# ----------------------------------------------------------------------------- sensors

@element
class VoltageSensor(Element):
    type_name, pins, outputs = "VoltageSensor", _ONE_PORT, {0: ("across", "p", "n")}

    def stamp(self, s):
        pass


@element
class PotentialSensor(Element):
    type_name, pins, outputs = "PotentialSensor", ("p",), {0: ("across", "p", None)}

    def stamp(self, s):
        pass


@element
class CurrentSensor(Element):
    """A short whose current p -> n is the output."""
    type_name, pins, unknowns, outputs = "CurrentSensor", _ONE_PORT, ("i",), {0: ("unknown", "i", None)}

    def stamp(self, s):
        _resistive_branch(s, 0.0)
