"""nflow's Continuous library.

Only the fixed-step path is ported: with no solver owning the state, nflow integrates
in UPDATE by forward Euler and every block's OUTPUT emits the state from before the
step. Each block declares its continuous states (``Phases.continuous``) so that the
solvers that would integrate them (ode4, ode45, dae) report "unsupported" until they
exist; ``discrete`` and ``ode1`` run this path.
"""
from __future__ import annotations

import numpy as np

from ..errors import DiagramError
from . import Phases, block
from .discrete import input_slot, vector_reader

EDGE_KINDS = ("rising", "falling", "either")
RESET_KINDS = EDGE_KINDS + ("level",)


# ----------------------------------------------------------------------------- integrator

def _integrator_ports(params) -> tuple:
    """(reset kind or None, reset port or None, external-IC port or None). The extra
    ports follow the signal: the reset first when there is one, then the IC."""
    kind = params.get("ExternalReset", "none")
    kind = kind if kind in RESET_KINDS else None
    external = params.get("InitialConditionSource", "internal") == "external"
    reset_port = 1 if kind else None
    ic_port = (2 if kind else 1) if external else None
    return kind, reset_port, ic_port


def _integrator_width(block, in_widths):
    """As wide as the signal (port 0) and the external initial condition, which must
    agree when both are vectors; else as a vector InitialCondition; else 1. The reset
    line is read as a scalar (its element 0) whatever its width."""
    _, _, ic_port = _integrator_ports(block.params)
    ports = [0] + ([ic_port] if ic_port is not None else [])
    wide = {(p, in_widths[p]) for p in ports if p < len(in_widths) and in_widths[p] > 1}
    if len({w for _, w in wide}) > 1:
        desc = ", ".join(f"input {p} has width {w}" for p, w in sorted(wide))
        raise DiagramError("width_mismatch", f"block {block.id!r} (integrator): {desc}; the signal and the "
                           "external initial condition must have the same width or be scalar",
                           block=block.id, path=block.path)
    if wide:
        w = next(iter(wide))[1]
    else:
        n = int(getattr(block.params.get("InitialCondition"), "size", 1))
        w = n if n > 1 else 1
    return [w] * block.outputs


def _feedthrough_ports(block) -> frozenset:
    """Only a resettable integrator has an ALGEBRAIC phase, and it reads the reset line
    and the external initial condition there; the integrated signal never feeds through."""
    _, reset_port, ic_port = _integrator_ports(block.params)
    if reset_port is None:
        return frozenset()
    return frozenset(p for p in (reset_port, ic_port) if p is not None)


def _scalar_clamp(lo: float, hi: float):
    """min(max(x, lo), hi) with the C++ std::max / std::min argument order: NaN passes
    through, and lo > hi gives hi."""
    if lo == -np.inf and hi == np.inf:
        return lambda x: x

    def clamp(x):
        v = lo if x < lo else x
        return hi if hi < v else v
    return clamp


def _vector_clamp(lo: float, hi: float):
    if lo == -np.inf and hi == np.inf:
        return lambda x: x
    return lambda x: np.minimum(np.maximum(x, lo), hi)


def _edge_rule(kind: str):
    """Whether the reset line moved from ``prev`` to ``cur`` across zero in direction
    ``kind``. ``prev`` is the last line value that was not 0 (zero latches the side it
    was reached from, so -1, 0, 1 is one rising edge and 1, 0, 1 is none), or the first
    sample's value."""
    if kind == "rising":
        return lambda prev, cur: prev <= 0.0 and cur > 0.0
    if kind == "falling":
        return lambda prev, cur: prev >= 0.0 and cur < 0.0
    return lambda prev, cur: (prev <= 0.0 and cur > 0.0) or (prev >= 0.0 and cur < 0.0)


@block("integrator", widths=_integrator_width, feedthrough=_feedthrough_ports)
def integrator(io):
    """Forward-Euler integrator with optional saturation, external reset and external
    initial condition (nflow's fixed-step rule):

    * INIT: x = clamp(InitialCondition) (the parameter, even when the IC source is
      external: nflow reads the external IC only when resetting);
    * OUTPUT: y = clamp(x), the state from before the step, so y(0) = clamp(IC);
    * UPDATE: x = clamp(x + dt*u);
    * ExternalReset (input 1): 'rising' / 'falling' / 'either' fire on a zero crossing
      of the reset line (never on the first step); then this step's output is
      clamp(IC) (in ALGEBRAIC) and x = clamp(clamp(IC) + dt*u). 'level' holds
      y = x = clamp(IC) while the line is non-zero;
    * InitialConditionSource 'external': IC comes from the next input port (the
      parameter when that port is unconnected).

    An unconnected signal input reads 0; so does an unconnected reset line.
    """
    p = io.params
    kind, reset_port, ic_port = _integrator_ports(p)
    needed = 1 + (reset_port is not None) + (ic_port is not None)
    declared = io.block.inputs
    w = io.width
    if not io.outs:
        return Phases(continuous=w)
    S, o, ctx = io.S, io.outs[0], io.ctx
    dt = float(ctx.dt)
    lo, hi = float(p["LowerSaturationLimit"]), float(p["UpperSaturationLimit"])
    note = None
    if declared < needed:
        roles = ["the reset line" if reset_port is not None else None,
                 "the initial condition" if ic_port is not None else None]
        note = (f"integrator {io.id!r} declares {declared} input(s) but its parameters use {needed} "
                f"(signal, {', '.join(r for r in roles if r)}); the missing port(s) read as unconnected")
    i = input_slot(io, 0)
    r = input_slot(io, reset_port) if reset_port is not None else None
    icslot = input_slot(io, ic_port) if ic_port is not None else None
    seed = io.initial("InitialCondition", w)

    if w == 1:
        clamp = _scalar_clamp(lo, hi)
        if i is None:
            def signal():
                return 0.0
        else:
            def signal():
                return S[i]
        if icslot is None:
            def initial():
                return seed
        else:
            def initial():
                return S[icslot]
    else:
        clamp = _vector_clamp(lo, hi)
        signal = vector_reader(io, 0, w)
        initial = vector_reader(io, ic_port, w) if icslot is not None else (lambda: seed)
    x0 = clamp(seed)
    x = x0

    def output():
        S[o] = x

    if kind is None:
        def init():
            nonlocal x
            x = x0
            if note:
                ctx.warnings.append(note)

        if w == 1 and i is not None and lo == -np.inf and hi == np.inf:
            def update():
                nonlocal x
                x = x + dt * S[i]
        else:
            def update():
                nonlocal x
                x = clamp(x + dt * signal())
        return Phases(init=init, output=output, update=update, continuous=w)

    # ---- resettable integrator
    level = kind == "level"
    fired = None if level else _edge_rule(kind)
    if r is None:
        def line():
            return 0.0
    elif io.in_widths[reset_port] > 1:
        def line():
            return float(S[r][0])
    else:
        def line():
            return S[r]
    prev = 0.0       # last non-zero reset line value (zero-side latch)
    primed = False   # an edge needs one earlier committed step to compare with

    def init():
        nonlocal x, prev, primed
        x, prev, primed = x0, 0.0, False
        if note:
            ctx.warnings.append(note)

    def resetting(value) -> bool:
        if level:
            return value != 0.0
        return primed and fired(prev, value)

    def algebraic():
        # The reset line is settled here (topological order): a reset reports the
        # initial condition in this very step. Solver sub-evaluations leave OUTPUT's value.
        if ctx.side_effect_free:
            return
        if resetting(line()):
            S[o] = clamp(initial())

    def update():
        nonlocal x, prev, primed
        value = line()
        u = signal()
        if resetting(value):
            base = clamp(initial())
            x = base if level else clamp(base + dt * u)
        else:
            x = clamp(x + dt * u)
        if not primed or value != 0.0:
            prev = value
        primed = True

    return Phases(init=init, output=output, algebraic=algebraic, update=update, continuous=w)
