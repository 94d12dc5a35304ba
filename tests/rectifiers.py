"""Diode rectifiers with a capacitive load as diagrams (a sine source, exponential Diodes,
R parallel to C), and their load voltage from scipy on the same equations."""
from __future__ import annotations

import functools
import math

import numpy as np

from nflow_compat.physical.electrical import GMIN
from tests.util import blk, diagram, links, rec

RECTIFIER_SOURCE = dict(Amplitude=10.0, Frequency=50.0, Phase=0.0)
DIODE_IS, DIODE_VT = 1e-9, 0.025


def diode_current(v):
    with np.errstate(over="ignore"):       # the reference's trial points too go far forward
        return DIODE_IS * np.expm1(v / DIODE_VT) + GMIN * v


def rectifier(bridge: bool, R: float, C: float, solver: str, duration: float, rtol=1e-6):
    """The rectifier as a diagram (its load voltage recorded as 'v'): half-wave (one Diode
    from the source to the load) or a bridge of four."""
    blocks = [blk("G", "Ground"), blk("V", "SineVoltage", **RECTIFIER_SOURCE), blk("R", "Resistor", R=R),
              blk("C", "Capacitor", C=C, v0=0.0), blk("vs", "VoltageSensor")]
    conns = links("V.n G.p", "R.p C.p", "R.n C.n", "vs.p C.p", "vs.n C.n")
    if bridge:
        node = {"a": "V.p", "g": "G.p", "pos": "C.p", "neg": "C.n"}
        for name, (anode, cathode) in {"D1": ("a", "pos"), "D2": ("g", "pos"), "D3": ("neg", "a"),
                                       "D4": ("neg", "g")}.items():
            blocks.append(blk(name, "Diode", Is=DIODE_IS, Vt=DIODE_VT))
            conns += links(f"{name}.p {node[anode]}", f"{name}.n {node[cathode]}")
    else:
        blocks.append(blk("D", "Diode", Is=DIODE_IS, Vt=DIODE_VT))
        conns += links("V.p D.p", "D.n C.p", "C.n G.p")
    b, c = rec("vs", "v")
    return diagram(blocks + b, conns + c, dt=1e-4, duration=duration, solver=solver, relTol=rtol,
                   absTol=rtol * 1e-2)


@functools.lru_cache(maxsize=None)
def rectifier_reference(bridge: bool, R: float, C: float, duration: float) -> np.ndarray:
    """The load voltage every 0.1 ms from scipy's LSODA at rtol 1e-10 on the scalar ODE of
    the load's charge. Bridge: the load's common potential m balances the currents into
    its + side and out of its - side (scipy brentq at every evaluation)."""
    from scipy.integrate import solve_ivp
    from scipy.optimize import brentq

    def current(v):
        return DIODE_IS * math.expm1(min(v / DIODE_VT, 700.0)) + GMIN * v

    def charging(tt, v):
        vs = RECTIFIER_SOURCE["Amplitude"] * math.sin(2 * math.pi * RECTIFIER_SOURCE["Frequency"] * tt)
        if not bridge:
            return current(vs - v)

        def imbalance(m):
            pos, neg = m + v / 2, m - v / 2
            return current(vs - pos) + current(-pos) - current(neg - vs) - current(neg)
        m = brentq(imbalance, -30.0, 30.0, xtol=1e-14)
        return current(vs - m - v / 2) + current(-m - v / 2)

    t = np.arange(int(round(duration / 1e-4)) + 1) * 1e-4
    sol = solve_ivp(lambda tt, y: [(charging(tt, float(y[0])) - y[0] / R) / C], (0.0, float(t[-1])), [0.0],
                    method="LSODA", rtol=1e-10, atol=1e-12, t_eval=t, max_step=1e-4)
    return sol.y[0]
