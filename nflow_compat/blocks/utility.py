"""nflow's Utility library: routing blocks (mux, demux, switch, multiportSwitch,
signalConversion, selector, assignment, reshape, concatenate), initialCondition, width,
toggleSwitch, the data stores (dataStoreMemory / Write / Read) and comment (inert).
Not ported: merge (needs conditional subsystems), subsystem, buses, iterators, convert.

mux and demux have no nflow handler: nflow treats them as virtual wiring, so the
signals they route are the same-step values of their sources. Here they are direct-
feedthrough ALGEBRAIC blocks, which gives the same values (the manifest's OUTPUT phase
would read inputs before the algebraic wave has computed them).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..engine.continuous import crossing_part
from ..errors import DiagramError
from ..expr import evaluate
from ..signals import round_half_away
from . import Phases, block, no_outputs, scalar_out
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
    for port, slot in enumerate(io.declared_ins):
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
    S, outs = io.S, io.outs[:io.block.outputs]   # the declared ports decide the split
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
    # nflow's ZERO_CROSSING: control - Threshold per element, so a solver restarts there
    part = crossing_part(io, lambda: np.atleast_1d(S[ctl]) - thr) if ctl is not None else None
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
        return Phases(init=init, algebraic=algebraic, part=part)
    vtake = _VECTOR_CRITERIA[take]
    a, c, b = (vector_reader(io, k, w) for k in range(3))

    def algebraic():
        S[o] = np.where(vtake(c(), thr), a(), b())
    return Phases(init=init, algebraic=algebraic, part=part)


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


# ----------------------------------------------------------------------------- data stores

class _DataStores:
    """The run's named scalar stores. The first participating block (in declaration
    order, which is INIT order) empties them at INIT, so every run starts afresh (nflow
    keeps one map per thread across runs; a store with no Memory block would then start
    from the previous run's last value there)."""

    __slots__ = ("ctx", "values", "leader")

    def __init__(self, ctx):
        self.ctx = ctx
        self.values = {}
        self.leader = None

    def claim(self, block_id: str) -> bool:
        if self.leader is None:
            self.leader = block_id
        return self.leader == block_id


def _data_stores(io):
    stores = io.shared("dataStores", _DataStores)
    return stores, stores.claim(io.id)


@block("dataStoreMemory", widths=no_outputs, feedthrough=False)
def data_store_memory(io):
    """Declares store DataStoreName with InitialValue: INIT sets it (over a Write's 0 seed,
    whatever the declaration order; with two Memory blocks of one name the later wins)."""
    stores, leader = _data_stores(io)
    name, value = io.params["DataStoreName"], float(io.params["InitialValue"])

    def init():
        if leader:
            stores.values.clear()
        stores.values[name] = value
    return Phases(init=init)


@block("dataStoreWrite", widths=no_outputs, feedthrough=False)
def data_store_write(io):
    """Stores input 0 (element 0; scalar stores) under DataStoreName. nflow writes in the
    ALGEBRAIC wave, after the Read blocks (no inputs: first wave) have run, so reads see
    the previous step's write; writing in UPDATE gives exactly that, on every path.
    INIT seeds the store with 0 if no Memory block declared it. Unconnected: no write."""
    stores, leader = _data_stores(io)
    name, values = io.params["DataStoreName"], stores.values
    slot, S = input_slot(io), io.S

    def init():
        if leader:
            stores.values.clear()
        stores.values.setdefault(name, 0.0)

    if slot is None:
        return Phases(init=init)
    if io.in_widths[0] > 1:
        def update():
            values[name] = float(S[slot][0])
    else:
        def update():
            values[name] = S[slot]
    return Phases(init=init, update=update)


@block("dataStoreRead", widths=scalar_out, feedthrough=False)
def data_store_read(io):
    """Outputs the value of store DataStoreName (0 when nothing declares or writes it).
    It reads before this step's writes (see dataStoreWrite): one step of latency, and
    InitialValue at the first sample."""
    stores, leader = _data_stores(io)
    name, values = io.params["DataStoreName"], stores.values

    def init():
        if leader:
            stores.values.clear()

    if not io.outs:
        return Phases(init=init)
    S, o = io.S, io.outs[0]

    def output():
        S[o] = values.get(name, 0.0)
    return Phases(init=init, output=output)


# ----------------------------------------------------------------------------- selection

def _whole(x: float, *, trunc: bool = False) -> int | None:
    """C++ llround (or a truncating int cast); None where the result is undefined."""
    if not math.isfinite(x) or abs(x) >= 2.0 ** 62:
        return None
    return int(x) if trunc else int(round_half_away(float(x)))


def _index_list(value) -> list:
    arr = np.atleast_1d(np.asarray(value, dtype=float)).reshape(-1)
    return [float(v) for v in arr]


def _selector_width(block, in_widths):
    n = len(_index_list(block.params.get("Indices", 1.0)))
    w = in_widths[0] if in_widths else 0
    return [n if n else max(1, w)] * block.outputs


@block("selector", widths=_selector_width, feedthrough=True)
def selector(io):
    """Output element i = input element Indices[i] (1-based, rounded half away from zero,
    clamped into the input). The output has one element per index; with no indices it
    is the input itself. An unconnected input reads 0."""
    if not io.outs:
        return Phases()
    S, o, w = io.S, io.outs[0], io.width
    idx = _index_list(io.params["Indices"])
    in_w = max(1, io.in_widths[0]) if io.in_widths else 1

    def pick(i):
        k = _whole(idx[i]) if i < len(idx) else i + 1
        if k is None:   # llround of NaN/inf: LLONG_MIN on the hardware nflow runs on
            k = 1
        return min(max(k, 1), in_w) - 1

    picks = [pick(i) for i in range(w)]
    slot = input_slot(io)
    if slot is None:
        zero = 0.0 if w == 1 else np.zeros(w)

        def algebraic():
            S[o] = zero
        return Phases(algebraic=algebraic)
    if io.in_widths[0] == 1:
        if w == 1:
            def algebraic():
                S[o] = S[slot]
        else:
            def algebraic():
                S[o] = np.full(w, S[slot])
        return Phases(algebraic=algebraic)
    if w == 1:
        p = picks[0]

        def algebraic():
            S[o] = float(S[slot][p])
    else:
        take = np.array(picks, dtype=np.intp)

        def algebraic():
            S[o] = S[slot][take]
    return Phases(algebraic=algebraic)


def _multiport_width(block, in_widths):
    if block.inputs < 2:
        raise DiagramError("bad_port_count", f"block {block.id!r} (multiportSwitch): multiportSwitch requires a "
                           "control input and at least one data input (give it 'inputs' >= 2)",
                           block=block.id, path=block.path + "/inputs")
    data = [w for w in in_widths[1:] if w]
    out = max(data, default=1)
    for port, w in enumerate(in_widths[1:], start=1):
        if w not in (0, 1, out):
            raise DiagramError("width_mismatch", f"block {block.id!r} (multiportSwitch): data input {port} has "
                               f"width {w} but another has width {out}; widths must agree or be 1",
                               block=block.id, path=block.path)
    return [out] * block.outputs


@block("multiportSwitch", widths=_multiport_width, feedthrough=True)
def multiport_switch(io):
    """Port 0 is the control, ports 1..n-1 the data inputs (n = the instance's 'inputs';
    DataPortCount is not read, as in nflow). Output = data input trunc(control[0]),
    clamped into 1..n-1 (a control whose integer part is undefined - NaN, inf - selects
    1). Element-wise, a scalar data input broadcast, an unconnected one reads 0.
    Unconnected control: nothing is written."""
    ctl = input_slot(io)
    if ctl is None or not io.outs:
        return Phases()
    S, o, w = io.S, io.outs[0], io.width
    n_data = io.block.inputs - 1
    readers = []
    for port in range(1, n_data + 1):
        slot = input_slot(io, port)
        if w == 1:
            readers.append((lambda: 0.0) if slot is None else (lambda slot=slot: S[slot]))
        else:
            readers.append(vector_reader(io, port, w))
    wide_ctl = io.in_widths[0] > 1

    def algebraic():
        c = float(S[ctl][0]) if wide_ctl else S[ctl]
        k = _whole(c, trunc=True)
        if k is None or k < 1:
            k = 1
        elif k > n_data:
            k = n_data
        S[o] = readers[k - 1]()
    return Phases(algebraic=algebraic)


def _assignment_width(block, in_widths):
    base = in_widths[0] if in_widths else 0
    n = len(_index_list(block.params.get("Indices", 1.0)))
    vals = in_widths[1] if len(in_widths) > 1 else 0
    if vals > 1 and vals < n:
        raise DiagramError("width_mismatch", f"block {block.id!r} (assignment): the values input (1) has width "
                           f"{vals} but Indices lists {n} positions", block=block.id, path=block.path)
    return [max(1, base)] * block.outputs


@block("assignment", widths=_assignment_width, feedthrough=True)
def assignment(io):
    """Output = the base (input 0, which sets the width) with element Indices[k] (1-based,
    rounded half away from zero) replaced by element k of the values (input 1; a scalar
    is broadcast, unconnected reads 0). An index listed twice takes its first value;
    indices outside the base are ignored. Unconnected base: nothing is written."""
    base = input_slot(io)
    if base is None or not io.outs:
        return Phases()
    S, o, w = io.S, io.outs[0], io.width
    positions = {}
    for k, v in enumerate(_index_list(io.params["Indices"])):
        i = _whole(v)
        if i is not None and 1 <= i <= w and i - 1 not in positions:
            positions[i - 1] = k
    vals = input_slot(io, 1)
    scalar_vals = vals is None or io.in_widths[1] <= 1
    if w == 1:
        if 0 not in positions:
            def algebraic():
                S[o] = S[base]
        elif vals is None:
            def algebraic():
                S[o] = 0.0
        elif scalar_vals:
            def algebraic():
                S[o] = S[vals]
        else:
            k0 = positions[0]

            def algebraic():
                S[o] = float(S[vals][k0])
        return Phases(algebraic=algebraic)
    dst = np.array(list(positions), dtype=np.intp)
    src = np.array(list(positions.values()), dtype=np.intp)
    base_vec = vector_reader(io, 0, w)

    def algebraic():
        out = np.array(base_vec(), dtype=float)
        if dst.size:
            if vals is None:
                out[dst] = 0.0
            elif scalar_vals:
                out[dst] = S[vals]
            else:
                out[dst] = S[vals][src]
        S[o] = out
    return Phases(algebraic=algebraic)


# ----------------------------------------------------------------------------- shape

def _reshape_dims(block):
    """OutputDimensions as a list of whole positive dims, or None (keep the input's)."""
    raw = block.params.get("OutputDimensions", "")
    where = block.where("OutputDimensions")
    if raw is None or (isinstance(raw, str) and not raw.strip()) or (isinstance(raw, list) and not raw):
        return None
    if isinstance(raw, str):
        value = evaluate(raw, None, **where)
    elif isinstance(raw, bool):
        value = None
    else:
        try:
            value = np.asarray(raw, dtype=float)
        except (TypeError, ValueError):
            value = None
    if value is None:
        raise DiagramError("param_type", f"block {block.id!r} (reshape): OutputDimensions must be a list of "
                           f"dimensions like [2 3], got {raw!r}", **where)
    dims = np.atleast_1d(np.asarray(value, dtype=float)).reshape(-1)
    if dims.size == 0:
        return None
    if not np.all(np.isfinite(dims)) or np.any(dims < 1) or np.any(dims != np.floor(dims)) or dims.size > 8:
        raise DiagramError("param_value", f"block {block.id!r} (reshape): OutputDimensions must be positive "
                           f"whole numbers, got {dims.tolist()}", **where)
    return [int(d) for d in dims]


def _reshape_width(block, in_widths):
    dims = _reshape_dims(block)
    w = in_widths[0] if in_widths else 0
    if dims is None:
        return [max(1, w)] * block.outputs
    n = math.prod(dims)
    if n > 1_000_000:
        raise DiagramError("param_value", f"block {block.id!r} (reshape): OutputDimensions {dims} has {n} "
                           "elements (limit 1000000)", **block.where("OutputDimensions"))
    if w > 1 and w != n:
        raise DiagramError("reshape_mismatch", f"block {block.id!r} (reshape): input width {w} does not match "
                           f"the declared output element count {n} (OutputDimensions {dims})",
                           **block.where("OutputDimensions"))
    return [n] * block.outputs


@block("reshape", widths=_reshape_width, feedthrough=True)
def reshape(io):
    """Passes the elements through unchanged; only the declared dimensions change. Signals
    here are vectors, so the output is the input with OutputDimensions' element count
    (a scalar input is broadcast to it; empty OutputDimensions keeps the input width).
    An input whose width differs from that count is a 'reshape_mismatch' error (nflow
    reports it at INIT). Unconnected input reads 0."""
    if not io.outs:
        return Phases()
    S, o, w = io.S, io.outs[0], io.width
    slot = input_slot(io)
    if slot is None:
        zero = 0.0 if w == 1 else np.zeros(w)

        def algebraic():
            S[o] = zero
    elif w == 1 or io.in_widths[0] == w:
        def algebraic():
            S[o] = S[slot]
    else:
        def algebraic():
            S[o] = np.full(w, S[slot])
    return Phases(algebraic=algebraic)


@block("concatenate", widths=_mux_width, feedthrough=True)
def concatenate(io):
    """Joins the inputs in port order into one vector (the instance's 'inputs' ports; an
    unconnected one contributes one element 0). Signals here are 1-D (column) vectors, so
    the element order is the same for every ConcatenateDimension: nflow's 2-D stacking
    of row vectors along dimension 1 (an interleaved, column-major result) is not
    modelled."""
    return mux(io)


# ----------------------------------------------------------------------------- sources, annotations

@block("toggleSwitch", widths=scalar_out, feedthrough=False)
def toggle_switch(io):
    """OnValue when State is non-zero (NaN included), else OffValue; the labels are for
    the editor only."""
    p = io.params
    value = float(p["OnValue"]) if p["State"] != 0.0 else float(p["OffValue"])
    if not io.outs:
        return Phases()
    S, o = io.S, io.outs[0]

    def output():
        S[o] = value
    return Phases(output=output)


@block("comment", widths=no_outputs, feedthrough=False)
def comment(io):
    """Editor annotation: nflow has no handler for it; it is accepted and does nothing."""
    return Phases()
