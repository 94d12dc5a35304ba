"""nflow's Sources library: blocks whose OUTPUT depends on time and state only.

Every source here emits in OUTPUT (declaration order, before the algebraic wave) and
has no direct feedthrough. The counters and the stair sequence keep a step counter
that only UPDATE advances, so a repeated OUTPUT within a step is harmless. The one
exception is ``noise``, whose generator advances on every OUTPUT call as nflow's does.
``labelSource`` copies the signal of the labelSink with its GotoTag (goto/from).
Under a solver, the jumps and corners a source's formula puts at known times (step, ramp,
pulse, the square and sawtooth waves) are time events (``Phases.next_time_event``), placed
where that formula really switches.
"""
from __future__ import annotations

import bisect
import math

import numpy as np

from ..errors import DiagramError
from ..files import confined_path, read_samples_csv
from ..signals import Shaped, quantize
from . import Code, Phases, block, fit

TWO_PI = 2.0 * math.pi
_ULP = float(np.finfo(float).eps)


def _scalar_out(block, in_widths):
    return [1] * block.outputs


def _zero_rate(o: int, zero):
    """The rate of a piecewise-constant output (its jumps are time events)."""
    def rate(R):
        R[o] = zero
    return rate


def _fixed_scale(scale: float):
    """``Phases.time_scale`` of an output whose shortest rise-and-fall is ``scale`` at all
    times (inf: none)."""
    scale = scale if math.isfinite(scale) and scale > 0.0 else math.inf
    return lambda t0, t1: scale


def _edge_at(level, nominal: float, after: float) -> float:
    """The time event of an edge that the arithmetic of ``level(t)`` (the output's own
    formula) places near ``nominal``: the first float, later than ``after``, where
    ``level`` reads the new side, so the solver stops where the output really switches
    (a period multiple and ``fmod`` may disagree by an ulp or two). ``nominal`` when
    ``level`` does not switch within a few ulps of it."""
    reach = 64.0 * _ULP * max(1.0, abs(nominal))
    lo, hi = nominal - reach, nominal + reach
    if hi <= after:
        return nominal
    lo = max(lo, after)
    old, new = level(lo), level(hi)
    if old == new:
        return nominal
    while True:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            return hi
        if level(mid) == old:
            lo = mid
        else:
            hi = mid


def _periodic_edges(level, first: float, period: float, offsets):
    """``next_time_event`` of an output that switches at ``first + k*period + offset`` for
    every ``k >= 0`` and offset of ``offsets`` (sorted, in [0, period)): the first edge
    strictly after t (as ``level`` switches)."""
    def next_time_event(t):
        k = math.floor((t - first) / period) if t >= first else 0
        for kk in (k - 1, k, k + 1, k + 2):
            if kk < 0:
                continue
            for off in offsets:
                edge = _edge_at(level, first + kk * period + off, t)
                if edge > t:
                    return edge
        return math.inf
    return next_time_event


def _half_period(frequency: float) -> float:
    """Half the period of a wave of ``frequency`` (inf for none)."""
    return 0.5 / abs(frequency) if math.isfinite(frequency) and frequency != 0.0 else math.inf


def _sample_scale(times):
    """``Phases.time_scale`` of samples played back at ``times`` (sorted): the shortest
    positive interval between two samples that meets [t0, t1] (the output is monotone
    within one, piecewise linear or held)."""
    times = np.asarray(times, dtype=float)
    gaps = np.diff(times)

    def time_scale(t0, t1):
        lo = max(int(np.searchsorted(times, t0, side="right")) - 1, 0)
        hi = min(int(np.searchsorted(times, t1, side="left")), gaps.size)
        near = gaps[lo:hi]
        near = near[near > 0.0]
        return float(near.min()) if near.size else math.inf
    return time_scale


# ----------------------------------------------------------------------------- constants

def _constant_value(params):
    """Value flattened column-major (nflow's layout for matrices); None when empty."""
    value = params.get("Value", 0.0)
    if isinstance(value, np.ndarray):
        flat = np.ascontiguousarray(value.reshape(-1, order="F"), dtype=float)
        if flat.size == 0:
            return None
        return float(flat[0]) if flat.size == 1 else flat
    return float(value)


def _constant_widths(block, in_widths):
    """As many elements as Value; a matrix Value (2-D or more, not a single element)
    gives a ``Shaped`` width carrying its dims, as nflow's dims pass does (so matmul
    needs no declared dimensions)."""
    value = _constant_value(block.params)
    n = value.size if isinstance(value, np.ndarray) else 1
    raw = block.params.get("Value")
    if n > 1 and isinstance(raw, np.ndarray) and raw.ndim >= 2:
        n = Shaped(raw.shape)
    return [n] * block.outputs


@block("constant", widths=_constant_widths, feedthrough=False, pure=True)
def constant(io):
    """Value cast to OutDataType. A list Value gives a vector signal as wide as the list
    (a matrix is laid out column-major); an empty list reads as 0."""
    value = _constant_value(io.params)
    if value is None:
        value = 0.0
    value = quantize(value, io.params["OutDataType"])
    S, o = io.S, io.outs[0]

    def output():
        S[o] = value
    return Phases(output=output, rate=_zero_rate(o, np.zeros_like(value) if isinstance(value, np.ndarray) else 0.0),
                  **_constant_forms(value))


def _constant_forms(value) -> dict:
    """The array form and template of a source that writes ``value`` at every step."""
    forms = {"code": Code(output="y0 = value", constants={"value": value})}
    if value.__class__ is float:
        forms["array"] = lambda t, inputs: [np.full(t.size, value)]
    return forms


@block("enumeratedConstant", widths=_scalar_out, feedthrough=False, pure=True)
def enumerated_constant(io):
    """The numeric Value of the enumeration member; EnumClass is documentation only."""
    value = float(io.params["Value"])
    S, o = io.S, io.outs[0]

    def output():
        S[o] = value
    return Phases(output=output, **_constant_forms(value))


# ----------------------------------------------------------------------------- time functions

@block("step", widths=_scalar_out, feedthrough=False, pure=True)
def step(io):
    """1 from t >= Time on, else 0. Solvers stop exactly at Time (a time event)."""
    t0 = io.params["Time"]
    S, o, ctx = io.S, io.outs[0], io.ctx

    def output():
        S[o] = 1.0 if ctx.t >= t0 else 0.0

    def next_time_event(t):
        return t0 if t < t0 else math.inf

    def array(t, inputs):
        return [np.where(t >= t0, 1.0, 0.0)]
    # the jump is a time event: the solver never differentiates across it
    return Phases(output=output, next_time_event=next_time_event, array=array, rate=_zero_rate(o, 0.0),
                  code=Code(output="y0 = 1.0 if t >= t0 else 0.0", constants={"t0": t0}))


@block("sine", widths=_scalar_out, feedthrough=False, pure=True)
def sine(io):
    """Amplitude*sin(2*pi*Frequency*t + Phase), Phase in radians."""
    p = io.params
    a, ph = p["Amplitude"], p["Phase"]
    w = TWO_PI * p["Frequency"]  # (2*pi*f)*t: the handler's evaluation order
    S, o, ctx, sin = io.S, io.outs[0], io.ctx, math.sin

    def output():
        S[o] = a * sin(w * ctx.t + ph)

    def rate(R):
        R[o] = a * w * math.cos(w * ctx.t + ph)

    def array(t, inputs):
        # math.sin over the elements, as the closure: numpy's sin may differ in the last bit
        return [a * np.fromiter(map(sin, (w * t + ph).tolist()), float, t.size)]
    # w*t + ph finite all over the grid: math.sin cannot raise (the closures would name the step)
    finite = abs(w) * (io.ctx.dt * io.ctx.n_samples) + abs(ph) < 1e300
    return Phases(output=output, time_scale=_fixed_scale(_half_period(p["Frequency"])),
                  array=array if finite else None, rate=rate,
                  code=Code(output="y0 = a * sin(w * t + ph)", constants={"a": a, "w": w, "ph": ph, "sin": sin}))


@block("clock", widths=_scalar_out, feedthrough=False, pure=True)
def clock(io):
    """The simulation time t (DisplayTime / Decimation only affect the editor)."""
    S, o, ctx = io.S, io.outs[0], io.ctx

    def output():
        S[o] = ctx.t

    def rate(R):
        R[o] = 1.0
    return Phases(output=output, rate=rate, array=lambda t, inputs: [t], code=Code(output="y0 = t"))


@block("ramp", widths=_scalar_out, feedthrough=False, pure=True)
def ramp(io):
    """slope*(t - start) from t >= start on, else 0."""
    slope, start = io.params["slope"], io.params["start"]
    S, o, ctx = io.S, io.outs[0], io.ctx

    def output():
        t = ctx.t
        S[o] = slope * (t - start) if t >= start else 0.0

    def rate(R):   # right-sided at the corner, where the solver restarts (a time event)
        R[o] = slope if ctx.t >= start else 0.0

    def next_time_event(t):   # the corner
        return start if t < start else math.inf

    def array(t, inputs):
        return [np.where(t >= start, slope * (t - start), 0.0)]
    return Phases(output=output, rate=rate, array=array, next_time_event=next_time_event, code=Code(output="y0 = slope * (t - start) if t >= start else 0.0",
                                                        constants={"slope": slope, "start": start}))


@block("pulse", widths=_scalar_out, feedthrough=False)
def pulse(io):
    """Offset, plus Amplitude during the first Width percent of every Period from
    StartTime on. The high phase ends a hair (1e-12 of a period) early so a sample that
    lands on the falling edge reads low despite rounding in fmod."""
    p = io.params
    amp, period, offset, start = p["Amplitude"], p["Period"], p["Offset"], p["StartTime"]
    high = (p["Width"] * period) / 100.0 - 1e-12 * period
    S, o, ctx, fmod = io.S, io.outs[0], io.ctx, math.fmod

    if not period > 0.0:  # no period: the offset alone
        def output():
            S[o] = offset
        return Phases(output=output)

    def high_at(t):
        return t >= start and fmod(t - start, period) < high

    def output():
        S[o] = offset + amp if high_at(ctx.t) else offset
    # the edges are time events: rising at StartTime + k*Period, falling High later (none
    # when the high phase is empty; only the first rise when it fills the period)
    if high <= 0.0:
        next_time_event = None
    elif high >= period:
        def next_time_event(t):
            return start if t < start else math.inf
    else:
        next_time_event = _periodic_edges(high_at, start, period, (0.0, high))
    # the shorter of the nominal high and low phases (none when either is empty: the hair
    # cut off the high phase above is no variation of the signal)
    nominal = (p["Width"] * period) / 100.0
    return Phases(output=output, next_time_event=next_time_event,
                  time_scale=_fixed_scale(min(nominal, period - nominal) if 0.0 < nominal < period else math.inf))


@block("signalGenerator", widths=_scalar_out, feedthrough=False)
def signal_generator(io):
    """sine: A*sin(2*pi*f*t). square: -A over the first half of each period, +A over the
    second (decided on the phase f*t, not on the sign of a sine). sawtooth: from +A down
    to -A over each period."""
    p = io.params
    amp, freq, wave = p["Amplitude"], p["Frequency"], p["Waveform"]
    S, o, ctx, floor = io.S, io.outs[0], io.ctx, math.floor
    time_scale = _fixed_scale(_half_period(freq))

    next_time_event = None
    if wave == "square":
        def low_at(t):
            ph = freq * t
            return ph - floor(ph) < 0.5

        def output():
            S[o] = amp * (-1.0 if low_at(ctx.t) else 1.0)
        if math.isfinite(freq) and freq > 0.0:   # a jump every half period: time events
            next_time_event = _periodic_edges(low_at, 0.0, 1.0 / freq, (0.0, 0.5 / freq))
    elif wave == "sawtooth":
        def output():
            ph = freq * ctx.t
            S[o] = amp * (1.0 - 2.0 * (ph - floor(ph)))
        if math.isfinite(freq) and freq > 0.0:   # a jump at every period: time events
            next_time_event = _periodic_edges(lambda t: floor(freq * t), 0.0, 1.0 / freq, (0.0,))
    else:
        sin, w = math.sin, TWO_PI * freq

        def output():
            S[o] = amp * sin(w * ctx.t)
    return Phases(output=output, time_scale=time_scale, next_time_event=next_time_event)


@block("chirp", widths=_scalar_out, feedthrough=False)
def chirp(io):
    """Linear sweep from f1 (at t = 0) to f2 (at t = T), continuing past T:
    A*sin(2*pi*(f1*t + k*t^2/2)), k = (f2 - f1)/max(T, 1e-3). The handler's start
    frequency, end frequency and sweep time are the manifest's f1, f2 and T."""
    p = io.params
    amp, f_start = p["Amplitude"], p["f1"]
    k = (p["f2"] - f_start) / max(0.001, p["T"])
    S, o, ctx, sin = io.S, io.outs[0], io.ctx, math.sin

    def output():
        t = ctx.t
        S[o] = amp * sin(TWO_PI * (f_start * t + 0.5 * k * t * t))

    def time_scale(t0, t1):
        # half the period at the highest instantaneous frequency f1 + k*t on [t0, t1]
        return _half_period(max(abs(f_start + k * t0), abs(f_start + k * t1)))
    return Phases(output=output, time_scale=time_scale)


@block("repeatingSequenceInterpolated", widths=_scalar_out, feedthrough=False)
def repeating_sequence_interpolated(io):
    """Periodic piecewise-linear table: the period is the last TimeValues entry and t is
    wrapped into [0, period). One point, or a period <= 0, gives OutValues[0]."""
    tv = [float(x) for x in io.params["TimeValues"]]
    ov = [float(x) for x in io.params["OutValues"]]
    n = min(len(tv), len(ov))
    S, o, ctx = io.S, io.outs[0], io.ctx

    if n == 0 or n == 1 or not tv[n - 1] > 0.0:
        value = 0.0 if n == 0 else ov[0]

        def output():
            S[o] = value
        return Phases(output=output)

    period, fmod = tv[n - 1], math.fmod
    segments = [(tv[i], tv[i + 1], ov[i], ov[i + 1]) for i in range(n - 1)]
    last = ov[n - 1]

    def output():
        tm = fmod(ctx.t, period)
        if tm < 0.0:
            tm += period
        for ta, tb, va, vb in segments:
            if tm <= tb:
                w = tb - ta
                S[o] = va if w <= 0.0 else va + (vb - va) * (tm - ta) / w
                return
        S[o] = last  # only reachable when tv is not increasing
    shortest = min((tb - ta for ta, tb, _, _ in segments if tb > ta), default=math.inf)
    return Phases(output=output, time_scale=_fixed_scale(shortest))


# ----------------------------------------------------------------------------- counters

@block("repeatingSequenceStair", widths=_scalar_out, feedthrough=False)
def repeating_sequence_stair(io):
    """OutValues played one entry per step, starting over after the last (0 if empty)."""
    vals = [float(x) for x in io.params["OutValues"]]
    n = len(vals)
    S, o = io.S, io.outs[0]
    index = 0

    def init():
        nonlocal index
        index = 0

    if n == 0:
        def output():
            S[o] = 0.0
        return Phases(init=init, output=output)

    def output():
        S[o] = vals[index]

    def update():
        nonlocal index
        index = (index + 1) % n
    return Phases(init=init, output=output, update=update)


@block("counterFreeRunning", widths=_scalar_out, feedthrough=False)
def counter_free_running(io):
    """0, 1, 2, ... modulo 2^NumBits (NumBits floored and kept in 1..53); the count is
    emitted before the step's increment, so the first sample is 0."""
    bits = io.params["NumBits"]
    if math.isfinite(bits):
        bits = float(math.floor(bits))
    # clamp like C++ min(53, max(1, floor(NumBits))): NaN and -inf give 1, +inf gives 53
    bits = min(53.0, bits) if bits >= 1.0 else 1.0
    modulus, fmod = 2.0 ** bits, math.fmod
    return _counter(io, lambda count: fmod(count + 1.0, modulus))


@block("counterLimited", widths=_scalar_out, feedthrough=False)
def counter_limited(io):
    """0, 1, ..., UpperLimit, 0, 1, ...: the count returns to 0 on the step after it
    reached (or passed) UpperLimit; emitted before the step's increment."""
    upper = io.params["UpperLimit"]
    return _counter(io, lambda count: 0.0 if count >= upper else count + 1.0)


def _counter(io, advance) -> Phases:
    """A count that starts at 0, is emitted in OUTPUT and becomes ``advance(count)`` in
    UPDATE."""
    S, o = io.S, io.outs[0]
    count = 0.0

    def init():
        nonlocal count
        count = 0.0

    def output():
        S[o] = count

    def update():
        nonlocal count
        count = advance(count)
    return Phases(init=init, output=output, update=update)


# ----------------------------------------------------------------------------- fromWorkspace

_MAX_WIDTH = 1_000_000  # signal elements, as the diagram's width limit


class _WorkspaceData:
    """The played-back samples: sorted times (n) and an n x width value matrix."""

    __slots__ = ("times", "values", "width")

    def __init__(self, times: np.ndarray, values: np.ndarray, width: int):
        self.times, self.values, self.width = times, values, width


class _BadData(Exception):
    def __init__(self, code: str, message: str, param: str):
        super().__init__(message)
        self.code, self.message, self.param = code, message, param


def _handler_number(x) -> float:
    """The injected arrays are read like nflow does: anything but a number is 0."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    return 0.0


def _injected(params) -> _WorkspaceData:
    """nflow's own form: ``times`` (n), ``values`` (n*width, sample-major) and ``width``.
    ``values`` may also be n rows; without ``width`` the row length (or len/n) is used."""
    raw_t, raw_v = params["times"], params.get("values", [])
    if not isinstance(raw_t, list):
        raw_t = [raw_t]
    times = np.array([_handler_number(x) for x in raw_t], dtype=float)
    if not isinstance(raw_v, list):
        raw_v = [raw_v]
    rows = raw_v and all(isinstance(r, list) for r in raw_v)
    flat = [_handler_number(x) for r in raw_v for x in r] if rows else [_handler_number(x) for x in raw_v]
    n = times.size
    if params.get("width") is not None:
        w = params["width"]
        width = max(1, int(w)) if math.isfinite(w) and abs(w) < 2**31 else 1
        if width > _MAX_WIDTH:
            raise _BadData("fromworkspace_bad_data", f"width {width} is larger than {_MAX_WIDTH}", "width")
    elif rows:
        width = max(1, len(raw_v[0]))
    elif n and len(flat) > n and len(flat) % n == 0:
        width = len(flat) // n
    else:
        width = 1
    grid = np.zeros(n * width)
    m = min(len(flat), grid.size)
    grid[:m] = flat[:m]  # missing samples read as 0, extra ones are never reached
    return _WorkspaceData(times, grid.reshape(n, width), width)


def _numbers(value, what: str) -> np.ndarray:
    """A real array from JSON numbers (null = NaN, as jsonencode writes NaN)."""
    def conv(x):
        if isinstance(x, list):
            return [conv(v) for v in x]
        if x is None:
            return math.nan
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise _BadData("fromworkspace_bad_data", f"{what} must hold only numbers, got {x!r}", "Data")
        return float(x)
    try:
        return np.array(conv(value), dtype=float)
    except ValueError:
        raise _BadData("fromworkspace_bad_data", f"{what} is a ragged array", "Data") from None
    except RecursionError:
        raise _BadData("fromworkspace_bad_data", f"{what} is nested too deeply", "Data") from None


def _inline(data) -> _WorkspaceData:
    """``Data`` given in the diagram: a [time, values] matrix (rows [t, v1, v2, ...]) or a
    struct {"time": [...], "signals": {"values": N x W}} (what toWorkspace returns)."""
    if isinstance(data, dict):
        if "time" not in data or not isinstance(data.get("signals"), dict) or "values" not in data["signals"]:
            raise _BadData("fromworkspace_bad_data",
                           "Data as an object needs 'time' and 'signals': {'values': ...}", "Data")
        times = _numbers(data["time"], "Data.time").reshape(-1)
        values = _numbers(data["signals"]["values"], "Data.signals.values")
        n = times.size
        if values.ndim == 0:
            values = values.reshape(1, 1)
        elif values.ndim == 1:
            # jsonencode writes an N x 1 column and a 1 x W row both as a flat list
            values = values.reshape(1, -1) if n == 1 else values.reshape(-1, 1)
        if values.ndim != 2 or values.shape[0] != n:
            raise _BadData("fromworkspace_bad_data", f"Data.signals.values has {values.shape[0]} rows but "
                           f"Data.time has {n} entries", "Data")
        return _WorkspaceData(times, values, max(1, values.shape[1]))
    if isinstance(data, list):
        matrix = _numbers(data, "Data")
        if matrix.size == 0:
            return _WorkspaceData(np.zeros(0), np.zeros((0, 1)), 1)
        if matrix.ndim == 1:
            matrix = matrix.reshape(1, -1)  # a single [t, v1, ...] row
        if matrix.ndim != 2 or matrix.shape[1] < 2:
            raise _BadData("fromworkspace_bad_data",
                           "Data as a matrix needs rows [t, v1, v2, ...] (at least 2 columns)", "Data")
        return _WorkspaceData(matrix[:, 0].copy(), matrix[:, 1:].copy(), max(1, matrix.shape[1] - 1))
    raise _BadData("fromworkspace_bad_data", "Data must be a [time, values] matrix or a "
                   "{time, signals: {values}} object", "Data")


def _workspace_data(params) -> _WorkspaceData | None:
    if params.get("times") is not None:
        data = _injected(params)
        where = "times"
    elif params.get("Data") is not None:
        data = _inline(params["Data"])
        where = "Data"
    else:
        return None
    t = data.times
    if t.size and not np.isfinite(t).all():
        raise _BadData("fromworkspace_bad_time", "time values must be finite (no Inf or NaN)", where)
    if t.size > 1 and np.any(np.diff(t) < 0):
        raise _BadData("fromworkspace_bad_time", "time values must be non-decreasing", where)
    return data


def _from_workspace_widths(block, in_widths):
    """As wide as the data; problems with the data are reported by the handler."""
    try:
        data = _workspace_data(block.params)
    except (_BadData, DiagramError, TypeError, ValueError):
        data = None
    return [data.width if data is not None else 1] * block.outputs


@block("fromWorkspace", widths=_from_workspace_widths, feedthrough=False)
def from_workspace(io):
    """Plays back time/value samples (see the manifest help for the accepted forms).
    Interpolate 'on': linear between samples, the newest value at a repeated time, linear
    extrapolation from the first two samples before the first; 'off': the latest sample
    with time <= t, 0 before the first. After the last sample: OutputAfterFinalValue."""
    p = io.params
    if p.get("valuesImag") is not None:
        io.fail("fromworkspace_complex_unsupported", "complex data (valuesImag) is not supported", "valuesImag")
    try:
        data = _workspace_data(p)
    except _BadData as bad:
        io.fail(bad.code, bad.message, bad.param)
    if data is None or data.times.size == 0:
        io.fail("fromworkspace_no_data", f"variable {p['VariableName']!r} was not resolved before the simulation "
                "started: give the samples inline as 'Data' (or nflow's 'times'/'values'/'width')", "Data")
    interpolate = p["Interpolate"] != "off"
    after = {"Setting to zero": "zero", "Holding final value": "hold"}.get(p["OutputAfterFinalValue"], "extrapolate")
    if not interpolate and after == "extrapolate":
        io.fail("fromworkspace_extrap_without_interp", "unable to extrapolate output values after the final data "
                "value because interpolation is not enabled (Interpolate 'off' with OutputAfterFinalValue "
                "'Extrapolation')", "OutputAfterFinalValue")

    width = io.width
    ts = data.times
    vs = np.zeros((ts.size, width))
    cols = min(width, data.width)
    vs[:, :cols] = data.values[:, :cols]
    S, o, ctx = io.S, io.outs[0], io.ctx
    if width == 1:
        evaluate = _lane_evaluator(ts.tolist(), vs[:, 0].tolist(), interpolate, after, 0.0)
    else:
        evaluate = _lane_evaluator(ts.tolist(), list(vs), interpolate, after, np.zeros(width))

    def output():
        S[o] = evaluate(ctx.t)
    return Phases(output=output, time_scale=_sample_scale(ts))


def _lane_evaluator(ts: list, vs: list, interpolate: bool, after: str, zero):
    """t -> value at t; ``vs`` holds floats (scalar signal) or numpy rows (vector)."""
    n = len(ts)
    t0, tn = ts[0], ts[-1]
    upper = bisect.bisect_right

    def between(k0, k1, t):
        ta, tb = ts[k0], ts[k1]
        if tb == ta:
            return vs[k1]
        va, vb = vs[k0], vs[k1]
        return va + (vb - va) * (t - ta) / (tb - ta)

    if not interpolate:
        before_first = zero
    elif n >= 2:
        before_first = None  # extrapolate from the first two samples
    else:
        before_first = vs[0]
    if after == "zero":
        after_last = zero
    elif after == "hold" or n < 2:
        after_last = vs[-1]
    else:
        after_last = None  # extrapolate from the last two samples

    def evaluate(t):
        if t < t0:
            return between(0, 1, t) if before_first is None else before_first
        if t > tn:
            return between(n - 2, n - 1, t) if after_last is None else after_last
        idx = upper(ts, t) - 1  # the right-most sample at or before t: the newest value wins
        if idx < 0:
            idx = 0
        if not interpolate or ts[idx] == t or idx + 1 >= n:
            return vs[idx]
        return between(idx, idx + 1, t)
    return evaluate


# ----------------------------------------------------------------------------- impulse, noise

@block("impulse", widths=_scalar_out, feedthrough=False)
def impulse(io):
    """Amplitude/max(dt, 1e-6) at the sample within dt/2 of Time (|t - Time| <= dt/2),
    0 elsewhere: a unit-area pulse one step wide."""
    t0, amp = io.params["Time"], io.params["Amplitude"]
    S, o, ctx = io.S, io.outs[0], io.ctx
    dt = float(ctx.dt)
    half, peak = dt / 2.0, amp / max(dt, 1e-6)

    def output():
        S[o] = peak if abs(ctx.t - t0) <= half else 0.0
    return Phases(output=output)


_LCG_A, _LCG_C, _LCG_MASK = 1664525, 1013904223, 0xFFFFFFFF


@block("noise", widths=_scalar_out, feedthrough=False)
def noise(io):
    """Deterministic noise in [-Amplitude, Amplitude]: a 32-bit linear congruential
    generator r = 1664525*r + 1013904223 (mod 2^32), starting from r = 1 (nflow's page
    and generated code), output Amplitude*(2*r/4294967295 - 1). nflow advances it on
    every OUTPUT call; the fixed-step loop makes one per step, so one number per step.
    A solver's trial evaluations (side-effect free) replay the value of the last step
    instead of drawing more, so results do not depend on how many stages it takes."""
    amp = io.params["Amplitude"]
    S, o, ctx = io.S, io.outs[0], io.ctx
    state = 1
    value = 0.0

    def init():
        nonlocal state, value
        state, value = 1, 0.0

    def output():
        nonlocal state, value
        if not ctx.side_effect_free:
            state = (_LCG_A * state + _LCG_C) & _LCG_MASK
            value = amp * ((state / 4294967295.0) * 2.0 - 1.0)
        S[o] = value
    return Phases(init=init, output=output)


# ----------------------------------------------------------------------------- goto / from

def _label_width(block, in_widths):
    """The width of the signal on the route (the labelSource's last input, wired by the
    parser from what enters the labelSink with its GotoTag); 1 when there is none."""
    return [(in_widths[-1] if in_widths and in_widths[-1] else 1)] * block.outputs


def _external_port(block):
    """A top-level labelSource with isExternalPort true is an input of the model (linmod)."""
    return "input" if block.params.get("isExternalPort") else None


@block("labelSource", widths=_label_width, feedthrough=False, complex=(True, -1), model_port=_external_port)
def label_source(io):
    """Outputs the signal entering the labelSink with the same GotoTag, which the parser
    wires to this block's last input (``flatten.route_labels``). Like nflow it copies that
    signal in OUTPUT (declaration order, before the algebraic wave), so it sees this
    step's value when the signal comes from an OUTPUT block (a source, a delay, an
    integrator) declared before this labelSource, and the previous step's value (0 at the
    first sample) when it is computed in the algebraic wave or declared later. The route
    feeds nothing through, so goto/from pairs cannot form algebraic loops. No sink with
    the tag, an empty tag or an unconnected sink: an unconnected route, zeros (the parser
    warns). ``isExternalPort`` true (a subsystem port): the block does nothing. The output
    has the width of the sink's input (any width, buses and matrices included)."""
    if not io.outs or io.params.get("isExternalPort"):
        return Phases()
    S, o, route = io.S, io.outs[0], io.ins[-1]
    zero = fit(0.0, io.width)

    def output():
        S[o] = zero if route is None else S[route]
    return Phases(output=output)


# ----------------------------------------------------------------------------- fileSource
#
# nflow's fileSource handler plays back arrays its builtin put into the params before the
# run ('times' and 'values', as for fromWorkspace). Here those arrays may be given in the
# diagram, or read from the CSV file the block names (FileName, else 'path' as the block
# inspector calls it), which must lie inside the caller's base directory (see
# ``confined_path``); ``preload_file_source`` (the handler's ``prepare``) reads it when the
# plan is compiled, before the widths are worked out, as nflow's builtin does before the run.

_FILE_SAMPLES = "_file_samples"    # params entry preload_file_source fills from the CSV file


def preload_file_source(block, base_dir, limits) -> None:
    """What nflow's builtin does before the run: a fileSource without injected 'times'
    gets the samples of the CSV file it names (read once, at compile time)."""
    p = block.params
    param = "FileName" if p.get("FileName") else "path"
    name = p.get("FileName") or p.get("path") or ""
    if p.get("times") is not None or not name:
        if _FILE_SAMPLES in p:
            block.params = {k: v for k, v in p.items() if k != _FILE_SAMPLES}
        return
    where = block.where(param)
    if base_dir is None:
        raise DiagramError("file_access_disabled", f"block {block.id!r} (fileSource) reads file {name!r} but file "
                           "access is off: pass base_dir= (the CLI uses the diagram's directory)", **where)
    path = confined_path(base_dir, name, where)
    times, values = read_samples_csv(path, name, limits.max_input_bytes, limits.max_width, where)
    block.params = dict(p, **{_FILE_SAMPLES: (times, values)})


def _file_source_arrays(params):
    """(times (n), flat values, width) of a fileSource: nflow's injected 'times' / 'values'
    (n*width, sample-major; n rows also taken) / 'width', else the preloaded CSV file,
    else nothing. Like the handler, a non-number in the injected arrays reads as 0."""
    if params.get("times") is not None:
        raw_t, raw_v = params["times"], params.get("values", [])
        raw_t = raw_t.tolist() if isinstance(raw_t, np.ndarray) else raw_t
        raw_v = raw_v.tolist() if isinstance(raw_v, np.ndarray) else raw_v
        raw_t = raw_t if isinstance(raw_t, list) else [raw_t]
        raw_v = raw_v if isinstance(raw_v, list) else [raw_v]
        rows = bool(raw_v) and all(isinstance(r, list) for r in raw_v)
        flat = [_handler_number(x) for r in raw_v for x in r] if rows else [_handler_number(x) for x in raw_v]
        w = params.get("width")
        if w is not None:
            width = int(w) if math.isfinite(w) and 1 <= w < 2**62 else 1
        else:
            width = max(1, len(raw_v[0])) if rows else 1
        return np.array([_handler_number(x) for x in raw_t], dtype=float), flat, width
    loaded = params.get(_FILE_SAMPLES)
    if loaded is not None:
        times, values = loaded
        return times, values.reshape(-1), max(1, values.shape[1])
    return np.zeros(0), [], 1


def _file_source_widths(block, in_widths):
    """The data's width (1 for nflow's flat 'values'); checked against the limits by the plan."""
    try:
        width = _file_source_arrays(block.params)[2]
    except (TypeError, ValueError):
        width = 1
    return [width] * block.outputs


@block("fileSource", widths=_file_source_widths, feedthrough=False, prepare=preload_file_source,
       reads_files=True)
def file_source(io):
    """Piecewise-constant playback, as nflow's handler: the value of the last sample whose
    time is <= t (the first sample before the first time); 0 with no samples, and 0 for
    a sample that has a time but no value. Times must be finite and non-decreasing.
    nflow's handler outputs one value per sample; a 'width' (or a CSV file with several
    value columns) makes the output a vector of that many elements per sample."""
    p = io.params
    try:
        times, flat, width = _file_source_arrays(p)
    except (TypeError, ValueError) as exc:
        io.fail("filesource_bad_data", f"'times'/'values' are not numeric arrays ({exc})", "times")
    where = "times" if p.get("times") is not None else ("FileName" if p.get("FileName") else "path")
    if times.size and not np.isfinite(times).all():
        io.fail("filesource_bad_time", "time values must be finite (no Inf or NaN)", where)
    if times.size > 1 and np.any(np.diff(times) < 0):
        io.fail("filesource_bad_time", "time values must be non-decreasing", where)
    n = times.size
    # rows that have values (a sample past the end of 'values' reads 0): never more
    # memory than the data given
    have = min(n, -(-len(flat) // width))
    table = np.zeros(have * width)
    m = min(len(flat), table.size)
    table[:m] = np.asarray(flat[:m], dtype=float)
    table = table.reshape(have, width)
    S, o, ctx = io.S, io.outs[0] if io.outs else None, io.ctx
    if o is None:
        return Phases()
    out_w = io.width
    note = None
    if n == 0:
        note = (f"fileSource {io.id!r}: no samples (no 'times' and no FileName, or an empty file); it outputs 0")
    elif p.get("valuesImag") is not None:   # nflow's handler reads 'values' only
        note = f"fileSource {io.id!r}: 'valuesImag' is ignored; it plays back the real part ('values'), as nflow does"
    zero = fit(0.0, out_w)

    def init():
        if note:
            ctx.warnings.append(note)

    if n == 0:
        def output():
            S[o] = zero
        return Phases(init=init, output=output)
    ts = times.tolist()
    if out_w == 1:
        vals = table[:, 0].tolist() + [0.0] * (n - have)
    else:
        vals = [row.copy() for row in table] + [zero] * (n - have)
    upper = bisect.bisect_right

    def output():
        idx = upper(ts, ctx.t) - 1
        S[o] = vals[idx if idx > 0 else 0]
    return Phases(init=init, output=output, time_scale=_sample_scale(ts))
