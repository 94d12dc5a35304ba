"""Laws of the Non-Linear blocks, checked with hypothesis on arbitrary input sequences.

Sequences are fed through the handler itself (``tests.test_nonlinear.steps``, the same
phase order as the engine; it is checked against simulate() there). Each law is stated
independently of the implementation: bounds, fixed points, symmetries, the switching
rules written out step by step."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.blocks.test_nonlinear import build, steps
from tests.util import blk, diagram, record, trace, wire

FAST = settings(max_examples=60, deadline=None)
values = st.floats(min_value=-50, max_value=50, allow_nan=False, allow_infinity=False)
params = st.floats(min_value=-10, max_value=10, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-3, max_value=10, allow_nan=False, allow_infinity=False)
sample_times = st.sampled_from([0.01, 0.02, 0.05, 0.1, 0.125, 0.5, 1.0])


def sequences(extra=(), min_size=1, max_size=40):
    """Input sequences whose elements are arbitrary or taken from ``extra`` (thresholds,
    offsets) so that exact-equality cases occur often."""
    element = st.one_of(values, st.sampled_from(list(extra))) if extra else values
    return st.lists(element, min_size=min_size, max_size=max_size)


def close(a, b, scale=1.0):
    return abs(a - b) <= 1e-9 * (abs(scale) + abs(a) + abs(b) + 1.0)


# ----------------------------------------------------------------------------- coulombViscousFriction

@FAST
@given(u=values, gain=params, offset=params)
def test_coulomb_is_odd(u, gain, offset):
    y = steps("coulombViscousFriction", {"Gain": gain, "Offset": offset}, [u, -u])
    assert y[1] == -y[0]


@FAST
@given(gain=params, offset=params, eps=st.floats(min_value=1e-9, max_value=1e-3))
def test_coulomb_zero_at_rest_and_jump_of_two_offsets(gain, offset, eps):
    y0, yp, ym = steps("coulombViscousFriction", {"Gain": gain, "Offset": offset}, [0.0, eps, -eps])
    assert y0 == 0.0
    assert close(yp - ym, 2 * offset + 2 * gain * eps, offset)


@FAST
@given(u=values.filter(lambda v: v != 0.0), gain=params, offset=params)
def test_coulomb_is_viscous_plus_signed_coulomb(u, gain, offset):
    y = steps("coulombViscousFriction", {"Gain": gain, "Offset": offset}, [u])[0]
    assert close(y - gain * u, offset * math.copysign(1.0, u), gain * u)


# ----------------------------------------------------------------------------- saturation

@FAST
@given(seq=sequences(), a=params, b=params)
def test_saturation_bounds_pass_band_and_idempotence(seq, a, b):
    lo, hi = min(a, b), max(a, b)
    p = {"LowerLimit": lo, "UpperLimit": hi}
    y = steps("saturation", p, seq)
    for u, v in zip(seq, y):
        assert lo <= v <= hi
        if lo <= u <= hi:
            assert v == u
        else:
            assert v == (lo if u < lo else hi)
    assert steps("saturation", p, y).tolist() == y.tolist()


@FAST
@given(seq=sequences(min_size=2), a=params, b=params)
def test_saturation_is_monotone(seq, a, b):
    p = {"LowerLimit": min(a, b), "UpperLimit": max(a, b)}
    y = steps("saturation", p, sorted(seq))
    assert all(y[k] <= y[k + 1] for k in range(len(y) - 1))


# ----------------------------------------------------------------------------- deadZone

@FAST
@given(seq=sequences(), a=params, b=params)
def test_dead_zone_is_zero_inside_and_shifted_outside(seq, a, b):
    lo, hi = min(a, b), max(a, b)
    y = steps("deadZone", {"LowerValue": lo, "UpperValue": hi}, seq)
    for u, v in zip(seq, y):
        if lo <= u <= hi:
            assert v == 0.0
        elif u < lo:
            assert v == u - lo and v < 0
        else:
            assert v == u - hi and v > 0


@FAST
@given(seq=sequences(min_size=2), a=params, b=params)
def test_dead_zone_is_monotone(seq, a, b):
    y = steps("deadZone", {"LowerValue": min(a, b), "UpperValue": max(a, b)}, sorted(seq))
    assert all(y[k] <= y[k + 1] for k in range(len(y) - 1))


# ----------------------------------------------------------------------------- quantizer

@FAST
@given(seq=sequences(), q=positive, negative=st.booleans())
def test_quantizer_error_at_most_half_an_interval_on_the_grid(seq, q, negative):
    p = {"QuantizationInterval": -q if negative else q}
    y = steps("quantizer", p, seq)
    for u, v in zip(seq, y):
        assert abs(v - u) <= q / 2 * (1 + 1e-12) + 1e-12 * abs(u)
        n = v / q
        assert abs(n - round(n)) <= 1e-9 * (abs(n) + 1)
    assert steps("quantizer", p, y).tolist() == y.tolist()   # a grid point stays put


@FAST
@given(n=st.integers(min_value=-1000, max_value=1000), q=st.sampled_from([0.25, 0.5, 1.0, 2.0, 4.0]))
def test_quantizer_halves_go_away_from_zero(n, q):
    u = (n + 0.5) * q                       # exact in binary for these q
    y = steps("quantizer", {"QuantizationInterval": q}, [u])[0]
    away = n + 1 if n >= 0 else n           # |n + 0.5| rounded up in magnitude
    assert y == away * q


# ----------------------------------------------------------------------------- rate

@FAST
@given(seq=sequences(), rise=st.floats(0, 20), fall=st.floats(0, 20), dt=sample_times)
def test_rate_slope_bounds_and_tracking(seq, rise, fall, dt):
    y = steps("rate", {"RisingSlewLimit": rise, "FallingSlewLimit": fall}, seq, dt=dt)
    prev = 0.0
    for u, v in zip(seq, y):
        up, down = prev + rise * dt, prev - fall * dt
        assert down <= v <= up
        if down <= u <= up:
            assert v == u                    # within reach: follows exactly
        elif u > up:
            assert v == up                   # slewing up at the full rate
        else:
            assert v == down
        assert -fall * dt - 1e-9 * (abs(prev) + 1) <= v - prev <= rise * dt + 1e-9 * (abs(prev) + 1)
        prev = v


@FAST
@given(seq=sequences(), rise=st.floats(-20, 0), fall=st.floats(-20, 0))
def test_rate_with_no_positive_limit_never_moves(seq, rise, fall):
    assert steps("rate", {"RisingSlewLimit": rise, "FallingSlewLimit": fall}, seq).tolist() == [0.0] * len(seq)


# ----------------------------------------------------------------------------- backlash

@FAST
@given(seq=sequences(), width=st.floats(0, 10))
def test_backlash_band_and_hold(seq, width):
    half = width / 2
    y = steps("backlash", {"BacklashWidth": width}, seq)
    prev = 0.0
    for u, v in zip(seq, y):
        assert abs(v - u) <= half * (1 + 1e-12) + 1e-12 * abs(u)   # within width/2 of the input
        if prev - half <= u <= prev + half:
            assert v == prev                                       # input inside the band: hold
        else:
            assert v >= prev if u > prev else v <= prev            # moves towards the input only
            assert v == (u - half if u > prev else u + half)       # and trails it by width/2
        prev = v


@FAST
@given(seq=sequences(), width=st.floats(-10, 0))
def test_backlash_without_play_follows_the_input(seq, width):
    assert steps("backlash", {"BacklashWidth": width}, seq).tolist() == [float(u) for u in seq]


# ----------------------------------------------------------------------------- hysteresis (relay)

@FAST
@given(data=st.data(), a=params, b=params, y_high=params, y_low=params)
def test_relay_outputs_and_switching_thresholds(data, a, b, y_high, y_low):
    assume(a != b)
    u_low, u_high = min(a, b), max(a, b)
    seq = data.draw(sequences(extra=(u_low, u_high)))
    y = steps("hysteresis", {"uHigh": u_high, "uLow": u_low, "yHigh": y_high, "yLow": y_low}, seq)
    state = y_low
    for u, v in zip(seq, y):
        assert v in (y_low, y_high)
        if u >= u_high:
            state = y_high
        elif u <= u_low:
            state = y_low
        assert v == state


@FAST
@given(seq=sequences(extra=(-1.0, 1.0)))
def test_relay_output_changes_only_when_a_threshold_is_reached(seq):
    y = steps("hysteresis", {}, seq)
    previous = 0.0
    for u, v in zip(seq, y):
        if v != previous:
            assert (v == 1.0 and u >= 1.0) or (v == 0.0 and u <= -1.0)
        previous = v


# ----------------------------------------------------------------------------- hitCrossing

@FAST
@given(data=st.data(), offset=params, direction=st.sampled_from(["either", "rising", "falling"]))
def test_hit_crossing_fires_exactly_at_straddles(data, offset, direction):
    seq = data.draw(sequences(extra=(offset, offset + 1.0, offset - 1.0)))
    y = steps("hitCrossing", {"HitCrossingOffset": offset, "HitCrossingDirection": direction}, seq)
    c = [u - offset for u in seq]
    assert y[0] == (1.0 if c[0] == 0.0 else 0.0)
    for k in range(1, len(seq)):
        rising = c[k - 1] < 0.0 <= c[k]
        falling = c[k - 1] > 0.0 >= c[k]
        fired = {"either": rising or falling, "rising": rising, "falling": falling}[direction]
        assert y[k] == (1.0 if fired else 0.0)


@FAST
@given(seq=sequences(min_size=2), offset=params)
def test_hit_crossing_either_is_rising_or_falling(seq, offset):
    run = {d: steps("hitCrossing", {"HitCrossingOffset": offset, "HitCrossingDirection": d}, seq)
           for d in ("either", "rising", "falling")}
    assert np.array_equal(run["either"][1:], np.maximum(run["rising"][1:], run["falling"][1:]))
    assert not np.any((run["rising"][1:] == 1.0) & (run["falling"][1:] == 1.0))


# ----------------------------------------------------------------------------- all blocks

BLOCKS = {
    "saturation": {"LowerLimit": -2.5, "UpperLimit": 4},
    "deadZone": {"LowerValue": -3, "UpperValue": 1.5},
    "quantizer": {"QuantizationInterval": 0.75},
    "coulombViscousFriction": {"Gain": 1.5, "Offset": -2},
    "hysteresis": {"uHigh": 2, "uLow": -1, "yHigh": 3, "yLow": -4},
    "rate": {"RisingSlewLimit": 30, "FallingSlewLimit": 12},
    "backlash": {"BacklashWidth": 5},
    "hitCrossing": {"HitCrossingOffset": 0.5, "HitCrossingDirection": "either"},
}
STATEFUL = ("hysteresis", "rate", "backlash", "hitCrossing")


@FAST
@given(type_name=st.sampled_from(sorted(BLOCKS)), width=st.integers(2, 4), data=st.data())
def test_vectors_run_element_by_element(type_name, width, data):
    rows = data.draw(st.lists(st.lists(st.one_of(values, st.sampled_from([0.5, 2.0, -1.0])),
                                       min_size=width, max_size=width), min_size=1, max_size=25))
    matrix = np.asarray(rows, dtype=float)
    y = steps(type_name, BLOCKS[type_name], matrix, width=width)
    for j in range(width):
        assert y[:, j].tolist() == steps(type_name, BLOCKS[type_name], matrix[:, j]).tolist()


@FAST
@given(type_name=st.sampled_from(STATEFUL), width=st.sampled_from([1, 3]), data=st.data())
def test_algebraic_is_pure_under_re_entry(type_name, width, data):
    """Extra ALGEBRAIC calls with other inputs (algebraic-loop sweeps, solver stages) leave
    no trace: only UPDATE commits."""
    n = data.draw(st.integers(1, 20))
    shape = (n,) if width == 1 else (n, width)
    real = np.asarray(data.draw(st.lists(values, min_size=int(np.prod(shape)),
                                         max_size=int(np.prod(shape)))), dtype=float).reshape(shape)
    junk = np.asarray(data.draw(st.lists(values, min_size=int(np.prod(shape)),
                                         max_size=int(np.prod(shape)))), dtype=float).reshape(shape)
    expected = steps(type_name, BLOCKS[type_name], real, width=width)
    ph, S, ctx = build(type_name, BLOCKS[type_name], width=width)
    ph.init()
    out = []
    for k in range(n):
        ctx.t, ctx.k = k * ctx.dt, k
        S[0] = junk[k] if width == 1 else junk[k].copy()
        if ph.algebraic:
            ph.algebraic()
        S[0] = real[k] if width == 1 else real[k].copy()
        if ph.output:
            ph.output()
        if ph.algebraic:
            ph.algebraic()
            ph.algebraic()
        ph.update()
        out.append(S[1])
    assert np.asarray(out, dtype=float).tolist() == expected.tolist()


MEMORYLESS = ("saturation", "deadZone", "quantizer", "coulombViscousFriction")


@settings(max_examples=25, deadline=None)
@given(type_name=st.sampled_from(MEMORYLESS), vec=st.lists(values, min_size=2, max_size=6))
def test_memoryless_blocks_through_simulate_match_the_law(type_name, vec):
    """The full simulate() path on a vector constant agrees with the scalar law per element."""
    d = diagram([blk("c", "constant", Value=vec), blk("b", type_name, BLOCKS[type_name]), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.1)
    y = trace(d)
    p = BLOCKS[type_name]
    for u, v in zip(vec, y[0]):
        if type_name == "saturation":
            want = min(max(u, p["LowerLimit"]), p["UpperLimit"])
        elif type_name == "deadZone":
            want = u - p["LowerValue"] if u < p["LowerValue"] else (u - p["UpperValue"] if u > p["UpperValue"] else 0.0)
        elif type_name == "quantizer":
            q = p["QuantizationInterval"]
            r = math.floor(abs(u / q) + 0.5)       # fine away from the exact-half edge cases
            assume(abs(abs(u / q) % 1.0 - 0.5) > 1e-9)
            want = math.copysign(r, u / q) * q
        else:
            want = p["Gain"] * u + p["Offset"] * ((u > 0) - (u < 0))
        assert close(v, want)
    assert y[1].tolist() == y[0].tolist()
