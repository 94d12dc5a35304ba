"""nflow's Utility library: routing blocks (mux, demux, switch, multiportSwitch,
signalConversion, selector, assignment, reshape, concatenate), initialCondition, width,
toggleSwitch, the data stores (dataStoreMemory / Write / Read) and comment (inert).
merge, functionCallGenerator / functionCallSplit and iteratorNumber / iteratorCondition are at
the end, with the subsystem block (expanded at parse time by nflow_compat.flatten).
convert (explicit type casts) is at the end. Routing blocks pass complex signals (a
Python complex, a complex128 array) and exact integers through with their type.
Buses (busCreator, busSelector, busAssignment) are at the end, with their own notes.

mux and demux have no nflow handler: nflow treats them as virtual wiring, so the
signals they route are the same-step values of their sources. Here they are direct-
feedthrough ALGEBRAIC blocks, which gives the same values (the manifest's OUTPUT phase
would read inputs before the algebraic wave has computed them).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..engine.context import gate_table, iterator_of
from ..errors import DiagramError, did_you_mean
from ..expr import evaluate
from ..flatten import MAX_ITERATIONS
from ..parts import crossing_part
from ..signals import ROUNDINGS, BusLayout, Shaped, cast, round_half_away
from . import Code, Phases, block, elementwise, fit, no_outputs, scalar_out
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


@block("mux", widths=_mux_width, feedthrough=True, complex=(True, -1))
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
    return _packing(S, o, total, pieces, (None,) * len(io.declared_ins))


def _packing(S, o, total, pieces, parts) -> Phases:
    """ALGEBRAIC that writes the ``(start, end, slot)`` pieces into one vector of ``total``
    elements (the gaps of unconnected inputs read 0); complex if any piece is complex.
    ``parts``: the names of the inputs' parts (``Phases.parts``)."""
    if total == 1:
        if pieces:
            (_, _, slot), = pieces

            def algebraic():
                S[o] = S[slot]
        else:
            def algebraic():
                S[o] = 0.0
        return Phases(algebraic=algebraic, parts=parts)
    if len(pieces) == total:   # every input connected and scalar
        slots = [slot for _, _, slot in pieces]

        def algebraic():
            S[o] = np.array([S[s] for s in slots])
    else:
        def algebraic():
            out = np.zeros(total)
            try:
                for a, b, slot in pieces:
                    v = S[slot]
                    if v.__class__ is np.ndarray and v.dtype.kind == "c":
                        raise TypeError
                    out[a:b] = v              # a Python complex raises TypeError itself
            except TypeError:                 # a complex input: the output is complex
                out = np.zeros(total, dtype=complex)
                for a, b, slot in pieces:
                    out[a:b] = S[slot]
            S[o] = out
    return Phases(algebraic=algebraic, parts=parts)


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
# the scalar switch with its three inputs connected, as a template (a complex control is
# compared by its real part, as the closure does)
_SWITCH_TEXT = """
try:
    y0 = u0 if u1 {0} thr else u2
except TypeError:
    y0 = u0 if u1.real {0} thr else u2
"""
_SYMBOL = {operator.gt: ">", operator.ne: "!=", operator.ge: ">="}


@block("switch", feedthrough=True, complex=(True, -1), solver_role="crossings")
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
    part = crossing_part(io, lambda: np.real(np.atleast_1d(S[ctl])) - thr) if ctl is not None else None
    # Complex data passes through as it is (a complex output); a complex control is
    # compared by its real part, as nflow's sigAt reads it (the scalar paths find out
    # from the TypeError of comparing a complex, which costs nothing otherwise).
    if w == 1:
        if top is not None and ctl is not None and bottom is not None:
            def algebraic():
                try:
                    S[o] = S[top] if take(S[ctl], thr) else S[bottom]
                except TypeError:
                    S[o] = S[top] if take(S[ctl].real, thr) else S[bottom]
            vtake = _VECTOR_CRITERIA[take]
            return Phases(init=init, algebraic=algebraic, part=part,
                          array=lambda t, u: [np.where(vtake(u[1], thr), u[0], u[2])],
                          code=Code(algebraic=_SWITCH_TEXT.format(_SYMBOL[take]),
                                    constants={"thr": thr, "TypeError": TypeError}))
        else:
            def read(slot):
                return (lambda: 0.0) if slot is None else (lambda: S[slot])
            a, c, b = read(top), read(ctl), read(bottom)

            def algebraic():
                try:
                    S[o] = a() if take(c(), thr) else b()
                except TypeError:
                    S[o] = a() if take(c().real, thr) else b()
        return Phases(init=init, algebraic=algebraic, part=part)
    vtake = _VECTOR_CRITERIA[take]
    a, c, b = (vector_reader(io, k, w) for k in range(3))
    real = np.real

    def algebraic():
        S[o] = np.where(vtake(real(c()), thr), a(), b())
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


@block("signalConversion", feedthrough=True, complex=(True, -1))
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


@block("selector", widths=_selector_width, feedthrough=True, complex=(True, -1))
def selector(io):
    """Output element i = input element Indices[i] (1-based, rounded half away from zero,
    clamped into the input). The output has one element per index; with no indices it
    is the input itself. An unconnected input reads 0. Complex elements stay complex."""
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
        zero = fit(0.0, w)

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
            S[o] = S[slot].item(p)     # a Python float (complex, int) of the element
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
    if len(dims) >= 2 and n > 1:   # a matrix: the width carries its dims (matmul reads them)
        n = Shaped(dims)
    return [n] * block.outputs


@block("reshape", widths=_reshape_width, feedthrough=True, complex=(True, -1))
def reshape(io):
    """Passes the elements through unchanged; only the declared dimensions change (carried on
    the width as ``Shaped`` for matmul), so the output is the input with OutputDimensions' element count
    (a scalar input is broadcast to it; empty OutputDimensions keeps the input width).
    An input whose width differs from that count is a 'reshape_mismatch' error (nflow
    reports it at INIT). Unconnected input reads 0."""
    if not io.outs:
        return Phases()
    S, o, w = io.S, io.outs[0], io.width
    slot = input_slot(io)
    if slot is None:
        zero = fit(0.0, w)

        def algebraic():
            S[o] = zero
    elif w == 1 or io.in_widths[0] == w:
        def algebraic():
            S[o] = S[slot]
    else:
        def algebraic():
            S[o] = np.full(w, S[slot])
    return Phases(algebraic=algebraic)


@block("concatenate", widths=_mux_width, feedthrough=True, complex=(True, -1))
def concatenate(io):
    """Joins the inputs in port order into one vector (the instance's 'inputs' ports; an
    unconnected one contributes one element 0). Signals here are 1-D (column) vectors, so
    the element order is the same for every ConcatenateDimension: nflow's 2-D stacking
    of row vectors along dimension 1 (an interleaved, column-major result) is not
    modelled. A complex input makes the output complex (real inputs get imaginary 0)."""
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


# ----------------------------------------------------------------------------- buses
#
# busCreator / busSelector / busAssignment (nflow's routing/bus*.cpp). A bus is one flat
# vector, its members packed in port order; its member table travels with its width as a
# ``signals.BusLayout`` (an int), so the width pass resolves every member path once and
# the per-step closures only slice and concatenate at precomputed offsets. Path errors
# are reported when the blocks are built (every width is final then); the width rules
# stay lenient so that a feedback loop seeded with scalar widths can still settle.



def _bus_paths(params: dict, *keys) -> tuple:
    """(member paths, param key) from the first of ``keys`` that lists any. nflow reads
    JSON arrays of strings; here a bare string is one entry too, and an entry holding
    commas ('a, b.c', Simulink's form) is several paths. Only blank entries: no paths."""
    for key in keys:
        paths = []
        for entry in params.get(key) or ():
            pieces = [piece.strip() for piece in entry.split(",")]
            paths += [piece for piece in pieces if piece] if len(pieces) > 1 else pieces
        if any(paths):
            return paths, key
    return [], keys[0]


def _bus_member_names(params: dict, n: int) -> list:
    """MemberNames[p], or 'signal<p+1>' where it is missing or empty (nflow)."""
    names = list(params.get("MemberNames") or ())
    return [names[p] if p < len(names) and names[p] else f"signal{p + 1}" for p in range(n)]


def _member_width(member):
    """A member's port width: its nested layout for a sub-bus, else its element count."""
    return member.bus if member.bus is not None else member.width


def _selection_name(paths: list, k: int) -> str:
    """nflow's member name for path k of an OutputAsBus selection: its last component,
    or, when an earlier path ends in the same component, the whole path with '.' -> '_'."""
    def last(path):
        _, dot, tail = path.rpartition(".")
        return tail if dot and tail else path
    name = last(paths[k])
    if any(last(other) == name for other in paths[:k]):
        return paths[k].replace(".", "_")
    return name


def _selection_layout(bus: BusLayout, paths: list):
    """The bus an OutputAsBus busSelector emits (None while a path does not resolve)."""
    members = [bus.resolve(path) for path in paths]
    if not members or None in members:
        return None
    return BusLayout((_selection_name(paths, k), _member_width(m)) for k, m in enumerate(members))


def _bus_input(io, kind: str) -> BusLayout:
    """Input 0's layout; a DiagramError when it is not a bus."""
    bus = io.in_widths[0] if io.in_widths else 0
    if isinstance(bus, BusLayout):
        return bus
    if input_slot(io) is None:
        io.fail("not_a_bus", f"input 0 is unconnected; a {kind} needs a bus there (the output of a busCreator, "
                "a busAssignment, or a busSelector giving a sub-bus or OutputAsBus)")
    io.fail("not_a_bus", f"input 0 is not a bus (a plain signal of width {int(bus)}); a {kind} needs a bus "
            "there (the output of a busCreator, a busAssignment, or a busSelector giving a sub-bus or OutputAsBus)")


def _bus_member(io, bus: BusLayout, path: str, param: str):
    member = bus.resolve(path)
    if member is None:
        io.fail("unknown_bus_member", f"unknown bus member {path!r} (available: {', '.join(bus.names)})"
                + did_you_mean(path, bus.paths()), param)
    return member


def _bus_creator_width(block, in_widths):
    n = max(1, block.inputs)
    widths = [in_widths[p] if p < len(in_widths) else 0 for p in range(n)]
    bus = BusLayout(zip(_bus_member_names(block.params, n), widths))
    return ([bus] + [1] * block.outputs)[:block.outputs]


@block("busCreator", widths=_bus_creator_width, feedthrough=True)
def bus_creator(io):
    """Packs the inputs, in port order, into one bus: member p starts where member p-1
    ends and is named MemberNames[p] (or 'signal<p+1>'); an input that is a bus becomes a
    nested member (reachable as 'outer.inner'). The ports are the instance's 'inputs'
    (at least one); an unconnected input is a one-element member reading 0. NonVirtual
    only matters for generated code. A named BusType needs the model-level 'busTypes'
    declarations, which are not read here: it is an 'unknown_bus_type' error."""
    bus_type = io.params.get("BusType") or ""
    if bus_type:
        io.fail("unknown_bus_type", f"unknown bus type {bus_type!r}: named bus types (the diagram's 'busTypes' "
                "declarations) are not supported; leave BusType empty to infer the bus from the inputs", "BusType")
    if not io.outs:
        return Phases()
    layout = io.out_widths[0]
    pieces = [(m.offset, m.offset + m.width, input_slot(io, p)) for p, m in enumerate(layout.members)]
    given = list(io.params.get("MemberNames") or ())      # the members the diagram names name their parts
    parts = tuple(str(given[p]) if p < len(given) and given[p] else None for p in range(len(layout.members)))
    return _packing(io.S, io.outs[0], int(layout), [piece for piece in pieces if piece[2] is not None], parts)


def _bus_selector_width(block, in_widths):
    n = block.outputs
    bus = in_widths[0] if in_widths else 0
    if not isinstance(bus, BusLayout):
        return [1] * n      # not a bus (yet): the builder reports it if it stays so
    paths, _ = _bus_paths(block.params, "SelectedSignals")
    if block.params.get("OutputAsBus"):
        selection = _selection_layout(bus, paths)
        return ([selection or 1] + [1] * n)[:n]
    members = [bus.resolve(path) for path in paths[:n]]
    return [_member_width(m) if m is not None else 1 for m in members] + [1] * (n - len(members))


@block("busSelector", widths=_bus_selector_width, feedthrough=True)
def bus_selector(io):
    """Output p is the member at path SelectedSignals[p] ('a', or 'a.b' inside a nested
    bus), as wide as that member; a path naming a nested bus gives a bus output. Paths
    beyond the instance's output ports are ignored (with a warning), ports beyond the
    paths stay 0. OutputAsBus true: one bus output holding the selected members in the
    listed order, each named by its last path component (the whole path with '.' -> '_'
    when an earlier path ends the same way). Errors: input 0 not a bus, an empty
    SelectedSignals, an unknown path (listing the available members)."""
    bus = _bus_input(io, "busSelector")
    paths, key = _bus_paths(io.params, "SelectedSignals")
    if not paths:
        io.fail("param_value", "busSelector requires a non-empty SelectedSignals list", key)
    slot, S = input_slot(io), io.S
    n_out = min(max(1, io.block.outputs), len(io.outs))
    scalar_bus = int(bus) == 1
    if io.params.get("OutputAsBus"):
        members = [_bus_member(io, bus, path, key) for path in paths]
        o, width = io.outs[0], int(io.out_widths[0])
        take = np.concatenate([np.arange(m.offset, m.offset + m.width) for m in members])
        if scalar_bus:
            if width == 1:
                def algebraic():
                    S[o] = S[slot]
            else:
                def algebraic():
                    S[o] = np.full(width, S[slot])
        elif width == 1:
            a = int(take[0])

            def algebraic():
                S[o] = float(S[slot][a])
        elif np.array_equal(take, np.arange(take[0], take[0] + width)):
            a, b = int(take[0]), int(take[0]) + width

            def algebraic():
                S[o] = S[slot][a:b]     # a view: signals are never mutated in place
        else:
            def algebraic():
                S[o] = S[slot][take]
        return Phases(algebraic=algebraic)
    members = [_bus_member(io, bus, path, key) for path in paths[:n_out]]
    dropped = paths[n_out:]
    init = _warn_at_init(io.ctx, dropped and (
        f"busSelector {io.id!r}: SelectedSignals lists {len(paths)} paths but the block has {n_out} output "
        f"port(s); {', '.join(repr(p) for p in dropped)} not output"))
    if scalar_bus:
        outs = [io.outs[p] for p in range(len(members))]

        def algebraic():
            u = S[slot]
            for s in outs:
                S[s] = u
        return Phases(init=init, algebraic=algebraic)
    scalars = [(io.outs[p], m.offset) for p, m in enumerate(members) if m.width == 1]
    vectors = [(io.outs[p], m.offset, m.offset + m.width) for p, m in enumerate(members) if m.width > 1]
    if len(members) == 1:
        if scalars:
            (o, a), = scalars

            def algebraic():
                S[o] = float(S[slot][a])
        else:
            (o, a, b), = vectors

            def algebraic():
                S[o] = S[slot][a:b]
        return Phases(init=init, algebraic=algebraic)

    def algebraic():
        u = S[slot]
        for s, a in scalars:
            S[s] = float(u[a])
        for s, a, b in vectors:
            S[s] = u[a:b]
    return Phases(init=init, algebraic=algebraic)


def _bus_assignment_width(block, in_widths):
    bus = in_widths[0] if in_widths else 0
    first = bus if isinstance(bus, BusLayout) else max(1, bus)
    return ([first] + [1] * block.outputs)[:block.outputs]


@block("busAssignment", widths=_bus_assignment_width, feedthrough=True)
def bus_assignment(io):
    """Output = the bus on input 0 (same layout) with the member at AssignedSignals[k]
    overwritten by input k+1, in list order (a later path wins where two overlap). A
    scalar replacement fills a vector member, a wider one gives its leading elements, an
    unconnected (or missing) port writes zeros; a narrower vector is a 'width_mismatch'
    error. With no AssignedSignals the SelectedSignals key is read instead (nflow's
    fallback); with neither the bus passes through. Unknown paths are errors."""
    bus = _bus_input(io, "busAssignment")
    paths, key = _bus_paths(io.params, "AssignedSignals", "SelectedSignals")
    members = [_bus_member(io, bus, path, key) for path in paths]
    n_repl = max(0, io.block.inputs - 1)
    notes = []
    if len(paths) > n_repl:
        notes.append(f"busAssignment {io.id!r}: {key} lists {len(paths)} paths but the block has {n_repl} "
                     f"replacement input(s); {', '.join(repr(p) for p in paths[n_repl:])} set to 0")
    idle = [port for port in range(len(paths) + 1, io.block.inputs) if input_slot(io, port) is not None]
    if idle:
        notes.append(f"busAssignment {io.id!r}: input(s) {', '.join(map(str, idle))} have no path in {key}; "
                     "ignored")
    init = _warn_at_init(io.ctx, "; ".join(notes))
    pieces = []     # (start, stop, slot or None, cut: leading elements of a wider replacement)
    for k, m in enumerate(members):
        slot = input_slot(io, k + 1)
        w = io.in_widths[k + 1] if slot is not None else 0
        if 1 < w < m.width:
            io.fail("width_mismatch", f"input {k + 1} (replacing {m.name!r}) has width {w} but the member has "
                    f"width {m.width}; give it width {m.width} or 1", key)
        pieces.append((m.offset, m.offset + m.width, slot, m.width if w > m.width else None))
    base, S, o = input_slot(io), io.S, io.outs[0]
    if int(bus) == 1:     # one scalar member: the last assignment (if any) is the output
        if not pieces:
            def algebraic():
                S[o] = S[base]
        else:
            _, _, s, cut = pieces[-1]
            if s is None:
                def algebraic():
                    S[o] = 0.0
            elif cut is None:
                def algebraic():
                    S[o] = S[s]
            else:
                def algebraic():
                    S[o] = float(S[s][0])
        return Phases(init=init, algebraic=algebraic)
    if all(s is not None and cut is None for _, _, s, cut in pieces):
        plain = [(a, b, s) for a, b, s, _ in pieces]

        def algebraic():
            out = S[base].copy()
            for a, b, s in plain:
                out[a:b] = S[s]
            S[o] = out
        return Phases(init=init, algebraic=algebraic)

    def algebraic():
        out = S[base].copy()
        for a, b, s, cut in pieces:
            if s is None:
                out[a:b] = 0.0
            elif cut is None:
                out[a:b] = S[s]
            else:
                out[a:b] = S[s][:cut]
        S[o] = out
    return Phases(init=init, algebraic=algebraic)


# ----------------------------------------------------------------------------- convert
#
# nflow's routing/convert.cpp: an explicit cast of every element to OutDataType with the
# block's own Rounding and overflow policy (signals.cast). int64 / uint64 results are
# exact integers (Python int / int64, uint64 arrays): their bounds and wrapped values
# have no double, and toWorkspace records them as JSON integers.



@block("convert", feedthrough=True, complex=(True, 0))
def convert(io):
    """y = cast(u, OutDataType): integer types round by Rounding ('nearest' = half away
    from zero, 'floor', 'ceiling' or 'ceil', 'zero' or 'fix'; anything else is nearest,
    with a warning), then saturate (SaturateOnOverflow true, the default) or wrap modulo
    2**bits; NaN gives 0, +-inf the type's bound. 'single' rounds to float32, 'boolean'
    gives u != 0, 'double' the value (the real part of a complex input, the nearest
    double of an exact integer). An exact integer input to int64 / uint64 is brought
    into range without rounding. Unconnected input reads 0 (the cast of 0 is written)."""
    p = io.params
    type_name, raw = p["OutDataType"], p["Rounding"]
    rounding, saturate = ROUNDINGS.get(raw, "nearest"), bool(p["SaturateOnOverflow"])
    init = _warn_at_init(io.ctx, None if raw in ROUNDINGS else (
        f"convert {io.id!r}: Rounding {raw!r} is not 'nearest', 'floor', 'ceiling' ('ceil') or 'zero' "
        "('fix'); nflow rounds to nearest, and so does this run"))
    if not io.outs:
        return Phases(init=init)
    S, o, w = io.S, io.outs[0], io.width
    slot = input_slot(io)
    if slot is None:
        value = cast(fit(0.0, w), type_name, rounding, saturate)

        def algebraic():
            S[o] = value
    elif w == 1 and type_name == "double":
        def algebraic():
            S[o] = float(S[slot].real)
    elif w == 1:
        def algebraic():
            S[o] = cast(S[slot].real, type_name, rounding, saturate)
    else:
        real = np.real

        def algebraic():
            S[o] = cast(real(S[slot]), type_name, rounding, saturate)
    return Phases(init=init, algebraic=algebraic)


# ----------------------------------------------------------------------------- subsystems
# The subsystem block itself never reaches the plan: diagram parsing flattens it into
# its parent (nflow_compat.flatten), and conditionally executed / iterated bodies run
# as units the plan compiler builds. The blocks below are the ones that talk to them.



@block("subsystem", widths=no_outputs, feedthrough=False)
def subsystem(io):
    """Never built: parse time replaces every subsystem by its nested diagram."""
    raise DiagramError("internal_error", f"subsystem {io.id!r} reached the plan compiler; subsystems are "
                       "expanded when the diagram is parsed (nflow_compat.flatten)", **io.block.where())


@block("merge", widths=elementwise, feedthrough=True)
def merge(io):
    """Output = the input whose source ran this step: a source inside an action /
    enabled / function-call / iterator subsystem counts when that subsystem ran in the
    step; any other source runs every step. Several ran: the later port wins. None ran:
    the output holds (it starts at InitialOutput, broadcast / fitted to the width).
    Unconnected ports never count."""
    if not io.outs:
        return Phases()
    S, o, w, ctx = io.S, io.outs[0], io.width, io.ctx
    start = fit(io.params["InitialOutput"], w)
    ports = [(slot, w > 1 and io.in_widths[p] <= 1) for p, slot in enumerate(io.declared_ins) if slot is not None]
    pairs = ()

    def init():
        nonlocal pairs
        table = gate_table(ctx)
        pairs = tuple((slot, table.get(slot), spread) for slot, spread in ports)
        S[o] = start

    def algebraic():
        value, spread_it = None, False
        for slot, gate, spread in pairs:
            if gate is None or gate.active:
                value, spread_it = S[slot], spread
        if value is not None:
            S[o] = np.full(w, value) if spread_it else value
    return Phases(init=init, algebraic=algebraic)


@block("functionCallGenerator", widths=scalar_out, feedthrough=False,
       calls=lambda block: int(block.params.get("NumberOfIterations", 1)))
def function_call_generator(io):
    """Calls the function-call subsystems wired to its output (directly or through
    functionCallSplit) NumberOfIterations times per step: each call is the body's
    OUTPUT, ALGEBRAIC and UPDATE. Its output signal carries the number of calls."""
    n = io.params["NumberOfIterations"]
    if not (math.isfinite(n) and n == int(n) and 0 <= n <= MAX_ITERATIONS):
        io.fail("param_range", f"NumberOfIterations must be a whole number from 0 to {MAX_ITERATIONS}, got {n:g}",
                "NumberOfIterations")
    if not io.outs:
        return Phases()
    S, o, value = io.S, io.outs[0], float(n)

    def algebraic():
        S[o] = value
    return Phases(algebraic=algebraic)


def _split_width(block, in_widths):
    return [max(1, in_widths[0] if in_widths else 1)] * block.outputs


@block("functionCallSplit", widths=_split_width, feedthrough=True, routes_calls=True)
def function_call_split(io):
    """Routes one function call to several callees, output 0's first (the plan compiler
    resolves the chain back to the generator and orders the callees). As a signal it
    copies its input to every output."""
    i = input_slot(io)
    outs = io.outs[:io.block.outputs]
    if i is None or not outs:
        return Phases()
    S = io.S

    def algebraic():
        u = S[i]
        for slot in outs:
            S[slot] = u
    return Phases(algebraic=algebraic)


@block("iteratorNumber", widths=scalar_out, feedthrough=False)
def iterator_number(io):
    """The pass of the enclosing for / while iterator subsystem, 1 on the first pass of
    each step; 0 outside an iterator subsystem."""
    if not io.outs:
        return Phases()
    S, o, ctx = io.S, io.outs[0], io.ctx
    loop = None

    def init():
        nonlocal loop
        loop = iterator_of(gate_table(ctx).get(o))

    def output():
        S[o] = 0.0 if loop is None else loop.iteration
    return Phases(init=init, output=output)


@block("iteratorCondition", widths=scalar_out, feedthrough=True, loop_condition=True)
def iterator_condition(io):
    """The continue predicate of the enclosing while-iterator subsystem, mirrored on the
    output: after each pass a zero ends the loop (do-while). Unconnected: 1.0 (the loop
    runs to its MaxIterations cap). Inert elsewhere."""
    if not io.outs:
        return Phases()
    S, o, i = io.S, io.outs[0], input_slot(io)
    if i is None:
        def init():
            S[o] = 1.0
        return Phases(init=init)
    if io.in_widths[0] > 1:
        def algebraic():
            S[o] = float(S[i][0])
    else:
        def algebraic():
            S[o] = S[i]
    return Phases(algebraic=algebraic)
