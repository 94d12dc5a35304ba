"""nflow's Utility library: routing blocks (mux, demux, switch, signalConversion),
initialCondition and width.

mux and demux have no nflow handler: nflow treats them as virtual wiring, so the
signals they route are the same-step values of their sources. Here they are direct-
feedthrough ALGEBRAIC blocks, which gives the same values (the manifest's OUTPUT phase
would read inputs before the algebraic wave has computed them).
"""
from __future__ import annotations

import operator

import numpy as np

from ..errors import DiagramError
from . import Phases, block, scalar_out
from .discrete import ic_width, input_slot, vector_reader


def _warn_at_init(ctx, note):
    if not note:
        return None

    def init():
        ctx.warnings.append(note)
    return init


# ----------------------------------------------------------------------------- mux / demux

def _mux_width(block, in_widths):
    """The sum of the input widths; an unconnected input counts as one element."""
    return [sum(max(1, w) for w in in_widths) or 1] * block.outputs


@block("mux", widths=_mux_width, feedthrough=True)
def mux(io):
    """Concatenates the inputs in port order into one vector. The ports are the block
    instance's ``inputs``; an unconnected port contributes one element 0.0 (Simulink
    rejects it; nflow does not say). A scalar ``Inputs`` param is not used: the
    instance's port count decides (its default would contradict every other count)."""
    if not io.outs:
        return Phases()
    S, o, total = io.S, io.outs[0], io.width
    pieces, start = [], 0
    for port, slot in enumerate(io.ins):
        width = max(1, io.in_widths[port])
        if slot is not None:
            pieces.append((start, start + width, slot))
        start += width
    if total == 1:
        if pieces:
            (_, _, slot), = pieces

            def algebraic():
                S[o] = S[slot]
        else:
            def algebraic():
                S[o] = 0.0
        return Phases(algebraic=algebraic)
    if len(pieces) == total:   # every input connected and scalar
        slots = [slot for _, _, slot in pieces]

        def algebraic():
            S[o] = np.array([S[s] for s in slots])
    else:
        def algebraic():
            out = np.zeros(total)
            for a, b, slot in pieces:
                out[a:b] = S[slot]
            S[o] = out
    return Phases(algebraic=algebraic)


def _demux_split(block, width: int) -> list:
    """Per-output widths. A vector ``Outputs`` param gives them explicitly (they must sum
    to the input width); otherwise the input is split evenly over the output ports, the
    first ``width % n`` ports taking one element more (Simulink's rule). A scalar (or
    unconnected) input is fanned out whole to every port (the page's y_i = u)."""
    n = block.outputs
    if n == 0:
        return []
    spec = block.params.get("Outputs")
    where = block.where("Outputs")
    if isinstance(spec, np.ndarray) and spec.size > 1:
        sizes = spec.reshape(-1)
        if sizes.size != n or np.any(sizes < 1) or np.any(sizes != np.floor(sizes)):
            raise DiagramError("param_value", f"block {block.id!r} (demux): Outputs {sizes.tolist()} must list "
                               f"one positive whole width per output port ({n})", **where)
        if width > 1 and int(sizes.sum()) != width:
            raise DiagramError("width_mismatch", f"block {block.id!r} (demux): Outputs {sizes.astype(int).tolist()} "
                               f"sum to {int(sizes.sum())} but the input has width {width}", **where)
        if width > 1:
            return [int(s) for s in sizes]
    if width <= 1:
        return [1] * n
    if width < n:
        raise DiagramError("width_mismatch", f"block {block.id!r} (demux): an input of width {width} cannot be "
                           f"split over {n} output ports", block=block.id, path=block.path)
    base, extra = divmod(width, n)
    return [base + 1 if p < extra else base for p in range(n)]


def _demux_width(block, in_widths):
    return _demux_split(block, in_widths[0] if in_widths else 0)


@block("demux", widths=_demux_width, feedthrough=True)
def demux(io):
    """Splits the input vector over the output ports in order (see the width rule for
    how it is divided); a scalar input goes whole to every port. Unconnected input:
    nothing is written (the outputs stay 0)."""
    i = input_slot(io)
    if i is None or not io.outs:
        return Phases()
    S, outs = io.S, list(io.outs)
    if io.in_widths[0] <= 1:
        def algebraic():
            u = S[i]
            for slot in outs:
                S[slot] = u
        return Phases(algebraic=algebraic)
    pieces, start = [], 0
    for slot, width in zip(outs, io.out_widths):
        pieces.append((slot, start, width))
        start += width
    scalars = [(slot, a) for slot, a, width in pieces if width == 1]
    vectors = [(slot, a, a + width) for slot, a, width in pieces if width > 1]

    def algebraic():
        u = S[i]
        for slot, a in scalars:
            S[slot] = float(u[a])
        for slot, a, b in vectors:
            S[slot] = u[a:b]   # a view: signals are never mutated in place
    return Phases(algebraic=algebraic)


# ----------------------------------------------------------------------------- switch

SWITCH_CRITERIA = {"gt": operator.gt, "ne": operator.ne, "ge": operator.ge}
_VECTOR_CRITERIA = {operator.gt: np.greater, operator.ne: np.not_equal, operator.ge: np.greater_equal}


@block("switch", feedthrough=True)
def switch(io):
    """y = input 0 (top) where the control (input 1) passes the Criteria against
    Threshold, else input 2 (bottom), element-wise. Criteria is compared as an exact
    string, as nflow does: 'gt' (control > Threshold), 'ne' (control != Threshold),
    anything else means 'ge' (control >= Threshold) - including Simulink spellings like
    'u2 > Threshold', which get a run warning. Unconnected inputs read 0."""
    if not io.outs:
        return Phases()
    S, o, w = io.S, io.outs[0], io.width
    criteria = io.params["Criteria"]
    take = SWITCH_CRITERIA.get(criteria, operator.ge)
    note = None if criteria in SWITCH_CRITERIA else (
        f"switch {io.id!r}: Criteria {criteria!r} is not 'ge', 'gt' or 'ne'; nflow treats it as 'ge' "
        "(control >= Threshold), and so does this run")
    thr = float(io.params["Threshold"])
    init = _warn_at_init(io.ctx, note)
    top, ctl, bottom = (input_slot(io, k) for k in range(3))
    if w == 1:
        if top is not None and ctl is not None and bottom is not None:
            def algebraic():
                S[o] = S[top] if take(S[ctl], thr) else S[bottom]
        else:
            def read(slot):
                return (lambda: 0.0) if slot is None else (lambda: S[slot])
            a, c, b = read(top), read(ctl), read(bottom)

            def algebraic():
                S[o] = a() if take(c(), thr) else b()
        return Phases(init=init, algebraic=algebraic)
    vtake = _VECTOR_CRITERIA[take]
    a, c, b = (vector_reader(io, k, w) for k in range(3))

    def algebraic():
        S[o] = np.where(vtake(c(), thr), a(), b())
    return Phases(init=init, algebraic=algebraic)


# ----------------------------------------------------------------------------- pass-throughs

@block("initialCondition", widths=ic_width("InitialValue"), feedthrough=True)
def initial_condition(io):
    """y = InitialValue while t <= 0, then y = u (element-wise, a scalar InitialValue
    broadcast). Unconnected input: nothing is written, not even InitialValue (nflow)."""
    i = input_slot(io)
    if i is None or not io.outs:
        return Phases()
    S, o, ctx, w = io.S, io.outs[0], io.ctx, io.width
    ic = io.initial("InitialValue", w)
    if w == 1:
        def algebraic():
            S[o] = ic if ctx.t <= 0.0 else S[i]
    else:
        u = vector_reader(io, 0, w)

        def algebraic():
            S[o] = ic if ctx.t <= 0.0 else u()
    return Phases(algebraic=algebraic)


@block("signalConversion", feedthrough=True)
def signal_conversion(io):
    """y = u, unchanged. Unconnected input: nothing is written."""
    i = input_slot(io)
    if i is None or not io.outs:
        return Phases()
    S, o = io.S, io.outs[0]

    def algebraic():
        S[o] = S[i]
    return Phases(algebraic=algebraic)


@block("width", widths=scalar_out, feedthrough=False)
def width(io):
    """The number of elements of the input (0 when unconnected). Widths are fixed at
    compile time, so the value is a constant: it is emitted in OUTPUT (nflow computes it
    in ALGEBRAIC; the values are the same) and creates no ordering dependency."""
    if not io.outs:
        return Phases()
    S, o = io.S, io.outs[0]
    value = float(io.in_widths[0]) if io.in_widths else 0.0

    def output():
        S[o] = value
    return Phases(output=output)
