"""Circuits against ngspice (dev script; the tests read only what it writes).

Each case is written once as a list of elements (``Part``) from which both the nflow
diagram and the SPICE netlist are made, so the two describe the same circuit node for node.
ngspice runs the netlist in batch mode (``ngspice -b``), its transient written every
``dt`` (``.options interp``) with tight tolerances; nflow-compat runs the diagram under
``dae`` and ``ode45`` (relTol 1e-6, absTol 1e-8) on the same grid. Printed per case and
signal: the largest difference over the grid, as a fraction of the signal's range in
ngspice's run. Target: 1e-3.

    python -m bench --only ngspice                    # every case, the table
    python -m bench --only ngspice --case bridge_exp  # one case (repeatable)
    python -m bench --only ngspice --write-fixtures   # also (re)write the committed fixtures

``--write-fixtures`` writes, per case, ``fixtures/reference/ngspice/<case>.cir`` (the
netlist, its comments saying how each device maps) and ``<case>.data`` (ngspice's
``wrdata`` output, unchanged), and ``fixtures/ngspice/<case>.json`` (the diagram, provenance
``ngspice-reference``, the ngspice version); ``tests/system/test_ngspice_fixtures.py``
compares the engine with them without ngspice.

How the devices map (both compute the same equations):

* ``Diode`` (Is, Vt) = SPICE ``D`` with ``IS = Is``, ``N = Vt / vt``, vt = kT/q at 27 degC
  (``TEMP = TNOM = 27``: 0.025864917 V with ngspice's constants), no series resistance or
  capacitance. Both add GMIN = 1e-12 S across the junction (ngspice's default; ours
  ``physical.electrical.GMIN``). Below -3 N vt SPICE replaces the exponential by a cubic
  that reaches -IS: at most Is away from ours.
* ``ZDiode`` (Is, Vt, Vz) = the same ``D`` with ``BV = Vz`` and ``IBV`` below
  ``IS BV / (N vt)``, so that SPICE keeps its breakdown voltage at BV: its breakdown
  current is then ``-IS exp(-(v + BV)/(N vt))``, ours. (SPICE has it only below -BV; ours
  everywhere, below Is elsewhere.)
* ``NPN``/``PNP`` (Is, Vt, Bf, Br) = SPICE's Gummel-Poon ``Q`` with ``IS``, ``BF``, ``BR``,
  ``NF = NR = Vt / vt`` and nothing else (no Early voltage, high injection, leakage,
  resistances or capacitances: qb = 1), which is the Ebers-Moll transport law; SPICE adds
  GMIN to each junction current as ours does.
* ``NMOS``/``PMOS`` (Beta, Vt) = SPICE level 1 ``M`` with ``KP = Beta``, ``VTO = +-Vt``,
  ``W = L = 1u``, ``LAMBDA = GAMMA = 0``, bulk tied to source. The bulk-drain junction
  (IS 1e-14 A) is reverse biased and below 1e-13 A.
* ``IdealDiode`` (Ron, Goff, Vknee) = a B source ``I = v > Vknee ? (v - Vknee)/Ron +
  Goff Vknee : Goff v``, MSL's law (SPICE has no event for its corner: its step control
  finds it).
* ``IdealSwitch`` driven by a ``pulse`` = SPICE's ``SW`` (``VT = 0.5``, ``VH = 0``, ``RON =
  ROFF^-1 = 1e-5``, MSL's Ron/Goff of ours) driven by a ``PULSE`` source with 1 ns edges.
* ``IdealOpAmp`` = a VCVS of gain 1e9 from its inputs to its output (the nullor to 1e-9).
* ``CurrentSensor`` = a 0 V source in series (SPICE's current through it, from its first
  node to its second, is the sensor's from p to n).
* Sources: ``SineVoltage`` = ``SIN(0 A f)``, ``TrapezoidVoltage`` = ``PULSE(0 A 0 rise
  fall width period)``, ``ConstantVoltage`` = ``DC``. Capacitors and inductors start at
  their ``v0``/``i0`` (``.tran ... uic`` with ``IC=``).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import nflow_compat as nc

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "ngspice"
REFERENCE = ROOT / "fixtures" / "reference" / "ngspice"
RTOL, ATOL = 1e-6, 1e-8           # the diagrams' tolerances
TARGET = 1e-3                     # max difference / the signal's range in ngspice's run
SOLVERS = ("dae", "ode45")
# SPICE's thermal voltage at TEMP = TNOM = 27 degC with ngspice's constants (CODATA 2014)
BOLTZMANN, CHARGE, KELVIN = 1.38064852e-23, 1.6021766208e-19, 300.15
VT_SPICE = BOLTZMANN * KELVIN / CHARGE
# ngspice's transient: local truncation error and Newton tolerances far below the target
SPICE_OPTIONS = ".options temp=27 tnom=27 reltol=1e-6 abstol=1e-15 vntol=1e-10 chgtol=1e-20 trtol=1 interp"


def emission(Vt: float) -> float:
    """SPICE's emission coefficient N for our thermal voltage Vt."""
    return Vt / VT_SPICE


# ----------------------------------------------------------------------------- parts
@dataclass
class Part:
    """One element: its nflow block (type, params, pins -> nodes) and its SPICE lines.
    Node "0" is the ground. ``control``: a causal block driving its signal input."""

    name: str
    type: str
    nodes: dict
    params: dict
    spice: list
    control: dict | None = None
    mapping: str = ""      # how the nflow block maps to the SPICE lines (a netlist comment)


def resistor(name, a, b, R):
    return Part(name, "Resistor", {"p": a, "n": b}, {"R": R}, [f"R{name} {a} {b} {R!r}"])


def capacitor(name, a, b, C, v0=0.0):
    return Part(name, "Capacitor", {"p": a, "n": b}, {"C": C, "v0": v0}, [f"C{name} {a} {b} {C!r} IC={v0!r}"])


def inductor(name, a, b, L, i0=0.0):
    return Part(name, "Inductor", {"p": a, "n": b}, {"L": L, "i0": i0}, [f"L{name} {a} {b} {L!r} IC={i0!r}"])


def ammeter(name, a, b):
    return Part(name, "CurrentSensor", {"p": a, "n": b}, {}, [f"V{name} {a} {b} DC 0"],
                mapping=f"CurrentSensor {name}: a 0 V source, its current from {a} to {b}")


def dc(name, p, n, V):
    return Part(name, "ConstantVoltage", {"p": p, "n": n}, {"V": V}, [f"V{name} {p} {n} DC {V!r}"])


def sine(name, p, n, A, f):
    return Part(name, "SineVoltage", {"p": p, "n": n}, {"Amplitude": A, "Frequency": f, "Phase": 0.0},
                [f"V{name} {p} {n} SIN(0 {A!r} {f!r})"])


def trapezoid(name, p, n, A, rising, width, falling, period):
    return Part(name, "TrapezoidVoltage", {"p": p, "n": n},
                {"Amplitude": A, "Rising": rising, "Width": width, "Falling": falling, "Period": period},
                [f"V{name} {p} {n} PULSE(0 {A!r} 0 {rising!r} {falling!r} {width!r} {period!r})"])


def diode(name, a, k, Is=1e-9, Vt=0.025):
    return Part(name, "Diode", {"p": a, "n": k}, {"Is": Is, "Vt": Vt},
                [f"D{name} {a} {k} D_{name}", f".model D_{name} D (IS={Is!r} N={emission(Vt)!r})"],
                mapping=f"Diode {name} (Is {Is:g}, Vt {Vt:g}): IS = Is, N = Vt/vt; both with GMIN 1e-12 S")


def zener(name, a, k, Is=1e-9, Vt=0.04, Vz=5.0):
    ibv = 1e-3 * Is * Vz / Vt       # below IS BV/(N vt): SPICE keeps BV as given
    return Part(name, "ZDiode", {"p": a, "n": k}, {"Is": Is, "Vt": Vt, "Vz": Vz},
                [f"D{name} {a} {k} Z_{name}",
                 f".model Z_{name} D (IS={Is!r} N={emission(Vt)!r} BV={Vz!r} IBV={ibv!r})"],
                mapping=f"ZDiode {name} (Is {Is:g}, Vt {Vt:g}, Vz {Vz:g}): IS = Is, N = Vt/vt, BV = Vz, IBV "
                        "1e-3 IS BV/(N vt) (below it SPICE keeps BV: breakdown -IS exp(-(v + BV)/(N vt)))")


def ideal_diode(name, a, k, Ron=1e-3, Goff=1e-6, Vknee=0.0):
    v = f"V({a},{k})"
    return Part(name, "IdealDiode", {"p": a, "n": k}, {"Ron": Ron, "Goff": Goff, "Vknee": Vknee},
                [f"B{name} {a} {k} I = {v} > {Vknee!r} ? ({v} - {Vknee!r})/{Ron!r} + {Goff * Vknee!r} "
                 f": {Goff!r}*{v}"],
                mapping=f"IdealDiode {name} (Ron {Ron:g}, Goff {Goff:g}, Vknee {Vknee:g}): a B source with MSL's "
                        "piecewise-linear law")


def bjt(name, c, b, e, pnp=False, Is=1e-16, Vt=0.025, Bf=100.0, Br=1.0):
    kind = "PNP" if pnp else "NPN"
    N = emission(Vt)
    return Part(name, kind, {"C": c, "B": b, "E": e}, {"Is": Is, "Vt": Vt, "Bf": Bf, "Br": Br},
                [f"Q{name} {c} {b} {e} Q_{name}", f".model Q_{name} {kind} (IS={Is!r} BF={Bf!r} BR={Br!r} "
                 f"NF={N!r} NR={N!r})"],
                mapping=f"{kind} {name} (Is {Is:g}, Vt {Vt:g}, Bf {Bf:g}, Br {Br:g}): Gummel-Poon with IS, BF, BR, "
                        "NF = NR = Vt/vt and nothing else (qb = 1: Ebers-Moll transport); GMIN in each junction")


def mosfet(name, d, g, s, pmos=False, Beta=1e-3, Vt=1.0):
    kind = "PMOS" if pmos else "NMOS"
    return Part(name, kind, {"D": d, "G": g, "S": s}, {"Beta": Beta, "Vt": Vt},
                [f"M{name} {d} {g} {s} {s} M_{name} W=1u L=1u",
                 f".model M_{name} {kind} (LEVEL=1 KP={Beta!r} VTO={-Vt if pmos else Vt!r} LAMBDA=0 GAMMA=0)"],
                mapping=f"{kind} {name} (Beta {Beta:g}, Vt {Vt:g}): level 1, KP = Beta, "
                        f"VTO = {'-' if pmos else '+'}Vt, W = L, LAMBDA = GAMMA = 0, bulk on source")


def opamp(name, inp, inn, out):
    return Part(name, "IdealOpAmp", {"in_p": inp, "in_n": inn, "out": out}, {},
                [f"E{name} {out} 0 {inp} {inn} 1e9"],
                mapping=f"IdealOpAmp {name}: the nullor as a VCVS of gain 1e9 into the output")


def switch(name, p, n, period, width_percent, start=0.0):
    """An IdealSwitch closed by a ``pulse`` (Amplitude 1) while it is high."""
    on = period * width_percent / 100.0
    return Part(name, "IdealSwitch", {"p": p, "n": n}, {},
                [f"S{name} {p} {n} ctl_{name} 0 SW_{name}",
                 f".model SW_{name} SW (VT=0.5 VH=0 RON=1e-5 ROFF=1e5)",
                 f"Vctl_{name} ctl_{name} 0 PULSE(0 1 {start!r} 1e-9 1e-9 {on - 1e-9!r} {period!r})"],
                mapping=f"IdealSwitch {name} driven by a pulse (period {period:g} s, {width_percent:g} %): SW "
                        "(VT 0.5, VH 0, RON = 1/ROFF = 1e-5, ours) driven by a PULSE with 1 ns edges",
                control={"type": "pulse", "params": {"Amplitude": 1.0, "Period": period, "Width": width_percent,
                                                     "StartTime": start, "Offset": 0.0}})


# ----------------------------------------------------------------------------- cases
@dataclass
class Case:
    name: str
    title: str
    parts: list
    signals: dict          # recorded name -> (node, node or "0"): the voltage between them, or
    #                        the name of an ammeter among the parts: its current
    duration: float
    dt: float              # the output step; ngspice's largest step is a tenth of it
    note: str = ""

    def diagram(self, solver: str) -> dict:
        blocks = [{"id": "gnd", "type": "Ground", "params": {}}]
        pins = {"0": [("gnd", "p")]}
        conns = []
        for part in self.parts:
            blocks.append({"id": part.name, "type": part.type, "params": dict(part.params)})
            for pin, node in part.nodes.items():
                pins.setdefault(node, []).append((part.name, pin))
            if part.control is not None:
                ctl = f"{part.name}_control"
                blocks.append({"id": ctl, "type": part.control["type"], "params": dict(part.control["params"])})
                conns.append({"from": ctl, "to": part.name, "fromIndex": 0, "toIndex": 0})
        for name, signal in self.signals.items():
            sensor = signal if isinstance(signal, str) else f"sense_{name}"
            if not isinstance(signal, str):
                blocks.append({"id": sensor, "type": "VoltageSensor", "params": {}})
                pins[signal[0]].append((sensor, "p"))
                pins[signal[1]].append((sensor, "n"))
            blocks.append({"id": f"rec_{name}", "type": "toWorkspace",
                           "params": {"VariableName": name, "SaveFormat": "Array"}})
            conns.append({"from": sensor, "to": f"rec_{name}", "fromIndex": 0, "toIndex": 0})
        for members in pins.values():
            (b0, p0), rest = members[0], members[1:]
            conns += [{"from": b, "fromPin": p, "to": b0, "toPin": p0} for b, p in rest]
        return {"blocks": blocks, "connections": conns, "sampleTime": self.dt, "duration": self.duration,
                "solver": solver, "variables": {}, "relTol": RTOL, "absTol": ATOL}

    def netlist(self, data_file: str) -> str:
        vectors = " ".join(vector(signal) for signal in self.signals.values())
        lines = [f"* {self.title}", "* written by bench/ngspice_circuits.py from the same parts as the nflow diagram",
                 "* fixtures/ngspice/" + self.name + ".json; device mapping: see that module's docstring"]
        lines += [f"* {line}" for line in self.note.splitlines()]
        lines.append(f"* vt = kT/q at TEMP = TNOM = 27 C: {VT_SPICE!r} V (ngspice's constants)")
        lines += [f"* {part.mapping}" for part in self.parts if part.mapping]
        lines.append(SPICE_OPTIONS)
        for part in self.parts:
            lines += part.spice
        lines.append(f".tran {self.dt!r} {self.duration!r} 0 {self.dt / 10!r} uic")
        lines += [".control", "run", "set wr_singlescale", "set wr_vecnames", "option numdgt=15",
                  f"wrdata {data_file} {vectors}", "quit", ".endc", ".end"]
        return "\n".join(lines) + "\n"


def vector(signal) -> str:
    """ngspice's vector of a recorded signal (``Case.signals``)."""
    if isinstance(signal, str):
        return f"i(v{signal.lower()})"
    a, b = signal
    return f"v({a})" if b == "0" else f"v({a},{b})"


def _rectifier(name, title, R, C, bridge, ideal, duration):
    """A 10 V 50 Hz sine through one diode (or a bridge of four) into R || C; the ideal
    diodes' source has 1 Ohm (with Ron = 1 mOhm alone the charging time constant RonC is
    ~20 ns, which ode45 would follow)."""
    make = ideal_diode if ideal else diode
    neg = "neg" if bridge else "0"
    parts = [resistor("RL", "pos", neg, R), capacitor("C", "pos", neg, C)]
    if ideal:
        parts += [sine("Vs", "s", "0", 10.0, 50.0), resistor("Rs", "s", "a", 1.0)]
    else:
        parts.append(sine("Vs", "a", "0", 10.0, 50.0))
    if bridge:
        parts += [make("D1", "a", "pos"), make("D2", "0", "pos"), make("D3", "neg", "a"), make("D4", "neg", "0")]
    else:
        parts.append(make("D", "a", "pos"))
    return Case(name, title, parts, {"v": ("pos", neg)}, duration, 1e-4)


def cases() -> dict:
    out = [
        _rectifier("halfwave_exp_1k", "half-wave rectifier, Shockley diode, 1 kOhm || 22 uF", 1e3, 22e-6, False, False,
                   0.03),
        _rectifier("halfwave_exp_100", "half-wave rectifier, Shockley diode, 100 Ohm || 220 uF", 100.0, 220e-6, False,
                   False, 0.03),
        _rectifier("bridge_exp", "full-wave bridge, four Shockley diodes, 1 kOhm || 22 uF", 1e3, 22e-6, True, False,
                   0.03),
        _rectifier("halfwave_ideal", "half-wave rectifier, IdealDiode, 1 Ohm source, 1 kOhm || 22 uF", 1e3, 22e-6,
                   False, True, 0.03),
        _rectifier("bridge_ideal", "full-wave bridge, four IdealDiodes, 1 Ohm source, 100 Ohm || 100 uF", 100.0,
                   100e-6, True, True, 0.03),
        Case("voltage_doubler", "Greinacher voltage doubler: two Shockley diodes, 10 uF each, 10 kOhm load",
             [sine("Vs", "a", "0", 10.0, 50.0), capacitor("C1", "a", "x", 10e-6), diode("D1", "0", "x"),
              diode("D2", "x", "out"), capacitor("C2", "out", "0", 10e-6), resistor("RL", "out", "0", 1e4)],
             {"v": ("out", "0"), "vx": ("x", "0")}, 0.03, 1e-4),
        Case("sine_c_halfwave", "a 10 V 50 Hz sine with 100 uF straight across it (index 2) feeding a half-wave "
             "rectifier: 10 Ohm, Shockley diode, 22 uF || 1 kOhm",
             [sine("Vs", "a", "0", 10.0, 50.0), ammeter("AmC", "a", "c"), capacitor("C1", "c", "0", 100e-6),
              resistor("Rs", "a", "k", 10.0), diode("D", "k", "out"), capacitor("C2", "out", "0", 22e-6),
              resistor("RL", "out", "0", 1e3)],
             {"v": ("out", "0"), "vk": ("k", "0"), "ic": "AmC"}, 0.03, 1e-4,
             note="the capacitor across the source holds v = V(t) and takes C V'(t); the diode reads the "
                  "resistor's node, an algebraic unknown: an index-2 constraint in an island solved by Newton"),
        Case("zener_regulator", "zener shunt regulator: 12 V sine, 220 Ohm, ZDiode (Vz 5.1 V) || 1 kOhm || 1 uF",
             [sine("Vs", "a", "0", 12.0, 50.0), resistor("Rs", "a", "z", 220.0), zener("Z", "0", "z", Vz=5.1),
              resistor("RL", "z", "0", 1e3), capacitor("C", "z", "0", 1e-6)],
             {"v": ("z", "0")}, 0.03, 1e-4),
        Case("nmos_inverter", "NMOS inverter with a 5 kOhm load, 10 nF on the output, trapezoid gate drive",
             [dc("Vdd", "vdd", "0", 5.0), resistor("RD", "vdd", "out", 5e3), mosfet("M", "out", "g", "0"),
              trapezoid("Vg", "g", "0", 5.0, 20e-6, 200e-6, 20e-6, 500e-6), capacitor("CL", "out", "0", 10e-9)],
             {"v": ("out", "0")}, 1e-3, 2e-6),
        Case("cmos_inverter", "CMOS inverter (NMOS + PMOS, Beta 1 mA/V^2, Vt 1 V), 10 nF load, trapezoid input",
             [dc("Vdd", "vdd", "0", 5.0), mosfet("MP", "out", "g", "vdd", pmos=True), mosfet("MN", "out", "g", "0"),
              trapezoid("Vg", "g", "0", 5.0, 50e-6, 200e-6, 50e-6, 500e-6), capacitor("CL", "out", "0", 10e-9)],
             {"v": ("out", "0")}, 1e-3, 2e-6),
        Case("common_source", "NMOS common-source stage: 10 V, RD 10 kOhm, gate biased 100k/47k, 1 uF coupling "
             "(started at its bias), 0.2 V 1 kHz input",
             [dc("Vdd", "vdd", "0", 10.0), resistor("RD", "vdd", "d", 1e4), mosfet("M", "d", "g", "0", Beta=1e-4),
              resistor("R1", "vdd", "g", 1e5), resistor("R2", "g", "0", 4.7e4), sine("Vin", "in", "0", 0.2, 1e3),
              capacitor("Cin", "in", "g", 1e-6, v0=-10.0 * 4.7e4 / 1.47e5)],
             {"v": ("d", "0"), "vg": ("g", "0")}, 3e-3, 5e-6),
        Case("bjt_amplifier", "NPN common-emitter amplifier: 12 V, RC 4.7 kOhm, RE 1 kOhm, bias 47k/10k, 1 uF "
             "coupling from 0 V, 20 mV 1 kHz input: the bias settling and the amplified signal",
             [dc("Vcc", "vcc", "0", 12.0), resistor("RC", "vcc", "c", 4.7e3), bjt("Q", "c", "b", "e"),
              resistor("RE", "e", "0", 1e3), resistor("R1", "vcc", "b", 4.7e4), resistor("R2", "b", "0", 1e4),
              sine("Vin", "in", "0", 0.02, 1e3), capacitor("Cin", "in", "b", 1e-6)],
             {"v": ("c", "0"), "vb": ("b", "0")}, 0.01, 1e-5),
        Case("rlc_series_step", "series RLC step response: 1 V on at t = 0, 10 Ohm, 1 mH, 1 uF (zeta 0.16)",
             [dc("V", "a", "0", 1.0), resistor("R", "a", "b", 10.0), inductor("L", "b", "c", 1e-3),
              capacitor("C", "c", "0", 1e-6)],
             {"v": ("c", "0")}, 2e-3, 5e-6),
        Case("rlc_parallel_ring", "parallel RLC ringing down from 5 V on the capacitor: 100 Ohm || 1 mH || 1 uF",
             [capacitor("C", "a", "0", 1e-6, v0=5.0), inductor("L", "a", "0", 1e-3), resistor("R", "a", "0", 100.0)],
             {"v": ("a", "0")}, 2e-3, 5e-6),
        Case("opamp_integrator", "inverting op-amp integrator: 1 V 100 Hz sine, 10 kOhm, 100 nF",
             [sine("Vin", "in", "0", 1.0, 100.0), resistor("R", "in", "n", 1e4), capacitor("C", "n", "out", 1e-7),
              opamp("U", "0", "n", "out")],
             {"v": ("out", "0")}, 0.03, 1e-4),
        Case("switched_rc", "switched RC: 5 V through 1 kOhm and an IdealSwitch (500 Hz pulse, 50 %) into "
             "1 uF || 10 kOhm",
             [dc("V", "a", "0", 5.0), resistor("R", "a", "b", 1e3), switch("S", "b", "c", 2e-3, 50.0),
              capacitor("C", "c", "0", 1e-6), resistor("RL", "c", "0", 1e4)],
             {"v": ("c", "0")}, 6e-3, 1e-5),
        Case("buck_converter", "buck converter: 12 V, IdealSwitch at 20 kHz (50 %), freewheeling IdealDiode, "
             "100 uH, 10 uF, 2 Ohm (continuous conduction), from rest",
             [dc("V", "a", "0", 12.0), switch("S", "a", "x", 50e-6, 50.0), ideal_diode("D", "0", "x"),
              inductor("L", "x", "out", 1e-4), capacitor("C", "out", "0", 1e-5), resistor("RL", "out", "0", 2.0)],
             {"v": ("out", "0")}, 1e-3, 1e-6),
    ]
    return {case.name: case for case in out}


# ----------------------------------------------------------------------------- runs
def ngspice_version(exe: str) -> str:
    text = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    line = next((ln for ln in text.splitlines() if "ngspice-" in ln), "")
    return line.strip(" *").split(":")[0].strip() or "ngspice (unknown version)"


def run_ngspice(case: Case, exe: str, folder: Path) -> tuple[str, str]:
    """(netlist, wrdata output) of ngspice's run of ``case`` in ``folder``."""
    data = folder / f"{case.name}.data"
    netlist = case.netlist(data.name)
    (folder / f"{case.name}.cir").write_text(netlist)
    done = subprocess.run([exe, "-b", f"{case.name}.cir"], cwd=folder, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not data.exists():
        raise RuntimeError(f"ngspice failed on {case.name}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return netlist, data.read_text()


def read_data(text: str, names) -> tuple[np.ndarray, dict]:
    """ngspice's ``wrdata`` output (header, then a time column and one per vector) as
    (time, {name: values}) in the order ``names``."""
    rows = [line.split() for line in text.splitlines() if line.strip()]
    values = np.array([[float(x) for x in row] for row in rows[1:]])
    return values[:, 0], {name: values[:, k + 1] for k, name in enumerate(names)}


def compare(case: Case, t_ref, ref: dict, solver: str) -> dict:
    """Per signal: max |ours - ngspice| over the grid / ngspice's range."""
    res = nc.simulate(case.diagram(solver))
    rows = on_grid(np.asarray(res["time"]), t_ref)
    return {name: float(np.abs(np.asarray(res["workspace"][name], dtype=float)[rows, 0] - ref[name]).max()
                        / np.ptp(ref[name])) for name in case.signals}


def on_grid(t, t_ref) -> np.ndarray:
    """The rows of the result grid ``t`` at ngspice's output times (its interpolated
    output starts one step in: t = 0 is not written)."""
    rows = np.rint(t_ref / (t[1] - t[0])).astype(int)
    if rows.max() >= len(t) or np.abs(t[rows] - t_ref).max() > 1e-9 * t[-1]:
        raise RuntimeError("ngspice's output times are not the diagram's grid")
    return rows


def write_fixture(case: Case, netlist: str, data: str, version: str) -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    REFERENCE.mkdir(parents=True, exist_ok=True)
    (REFERENCE / f"{case.name}.cir").write_text(netlist)
    (REFERENCE / f"{case.name}.data").write_text(data)
    fixture = {
        "title": f"{case.title} (ngspice)",
        "provenance": "ngspice-reference",
        "source": f"{version} in batch mode (ngspice -b) on fixtures/reference/ngspice/{case.name}.cir, its wrdata "
                  f"output fixtures/reference/ngspice/{case.name}.data, both written by bench/ngspice_circuits.py "
                  "--write-fixtures from the same parts as this diagram",
        "note": "device mapping: bench/ngspice_circuits.py (module docstring) and the netlist's comments; "
                f"compared on every sample within {TARGET:g} of each signal's range under dae and ode45",
        "diagram": case.diagram("dae"),
        "reference": {"data": f"{case.name}.data", "netlist": f"{case.name}.cir", "ngspice": version,
                      "signals": {name: vector(signal) for name, signal in case.signals.items()},
                      "tolerance": TARGET},
    }
    (FIXTURES / f"{case.name}.json").write_text(json.dumps(fixture, indent=1) + "\n")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench --only ngspice", description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", choices=tuple(cases()), action="append", help="only this case (repeatable)")
    ap.add_argument("--write-fixtures", action="store_true",
                    help="(re)write fixtures/ngspice/ and fixtures/reference/ngspice/")
    ap.add_argument("--ngspice", default=shutil.which("ngspice") or "ngspice", help="the ngspice executable")
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    all_cases = cases()
    chosen = [all_cases[name] for name in (args.case or all_cases)]
    version = ngspice_version(args.ngspice)
    print(f"{version}; nflow-compat relTol {RTOL:g}, absTol {ATOL:g}; max |ours - ngspice| / range, target {TARGET:g}")
    print(f"{'case':22s} {'signal':6s} " + " ".join(f"{s:>10s}" for s in SOLVERS))
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="nflow-ngspice-") as tmp:
        for case in chosen:
            netlist, data = run_ngspice(case, args.ngspice, Path(tmp))
            t_ref, ref = read_data(data, case.signals)
            errors = {solver: compare(case, t_ref, ref, solver) for solver in SOLVERS}
            for name in case.signals:
                row = [errors[solver][name] for solver in SOLVERS]
                worst = max(worst, *row)
                flag = "" if max(row) <= TARGET else "  ABOVE TARGET"
                print(f"{case.name:22s} {name:6s} " + " ".join(f"{e:10.2e}" for e in row) + flag)
            if args.write_fixtures:
                write_fixture(case, netlist, data, version)
    print(f"worst {worst:.2e} ({'within' if worst <= TARGET else 'ABOVE'} the target {TARGET:g})")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
