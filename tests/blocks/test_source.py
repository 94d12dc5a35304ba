"""Sources library handlers: constant, enumeratedConstant, step, sine, clock, ramp, pulse,
signalGenerator, chirp, repeatingSequenceStair, repeatingSequenceInterpolated,
counterFreeRunning, counterLimited, fromWorkspace, impulse, noise, goto/from routing through
labelSource / labelSink, and fileSource (nflow's handlers, fixed-step path). Expected values
are closed forms evaluated with plain numpy on the grid t_k = k*dt, or worked out by hand."""
from __future__ import annotations

import math
import os

import numpy as np
import orjson
import pytest
from hypothesis import given, settings, strategies as st

import nflow_compat as nc
from tests.csv_files import error, played, source_diagram
from tests.util import blk, diagram, pin, record, run, trace, wire

FAST = settings(max_examples=40, deadline=None)


def play(source, dt=0.1, duration=1.0, **kw):
    """Record source block (any id) -> (t, N x W values)."""
    src = dict(source, id="s")
    res = run(diagram([src, record()], [wire("s", "w")], dt=dt, duration=duration, **kw))
    return np.asarray(res["time"]), np.asarray(res["workspace"]["y"], dtype=float)


def fails(code, source, param=None, **kw):
    with pytest.raises(nc.DiagramError) as err:
        play(source, **kw)
    assert err.value.code == code, err.value
    if param is not None:
        assert err.value.param == param
    return err.value


# ----------------------------------------------------------------------------- constant

def test_constant_default_is_1():
    _, y = play(blk("c", "constant"), duration=0.2)
    assert y.tolist() == [[1.0]] * 3


def test_constant_vector_and_column_major_matrix():
    _, y = play(blk("c", "constant", Value=[4, -1, 0.5]), duration=0.1)
    assert y.tolist() == [[4.0, -1.0, 0.5]] * 2
    _, y = play(blk("c", "constant", Value=[[1, 2, 3], [4, 5, 6]]), duration=0.1)
    assert y[0].tolist() == [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]


def test_constant_expression_and_one_element_list():
    _, y = play(blk("c", "constant", Value="[1 2]*k"), duration=0.1, variables={"k": 3})
    assert y[0].tolist() == [3.0, 6.0]
    _, y = play(blk("c", "constant", Value=[2.5]), duration=0.1)
    assert y.tolist() == [[2.5], [2.5]]


def test_constant_empty_list_emits_0():
    _, y = play(blk("c", "constant", Value=[]), duration=0.1)
    assert y.tolist() == [[0.0], [0.0]]


@pytest.mark.parametrize("dtype, value, expect", [
    ("int8", [2.5, -2.5, 300, -300, 1.4], [3, -3, 127, -128, 1]),   # half away from zero, saturate
    ("uint8", [-4, 255.5, 7.5], [0, 255, 8]),
    ("boolean", [0, -0.1, 3], [0, 1, 1]),
    ("int16", [40000.0, -0.5], [32767, -1]),
    ("single", [0.1], [float(np.float32(0.1))]),
    ("double", [0.1], [0.1]),
])
def test_constant_out_data_type(dtype, value, expect):
    _, y = play(blk("c", "constant", Value=value, OutDataType=dtype), duration=0.1)
    assert y[0].tolist() == expect


def test_constant_unknown_data_type_is_rejected():
    fails("param_value", blk("c", "constant", OutDataType="int7"), param="OutDataType")


# ----------------------------------------------------------------------------- enumeratedConstant

def test_enumerated_constant_emits_value():
    _, y = play(blk("e", "enumeratedConstant", EnumClass="Color", Value=7), duration=0.2)
    assert y.tolist() == [[7.0]] * 3
    _, y = play(blk("e", "enumeratedConstant"), duration=0.1)
    assert y.tolist() == [[0.0]] * 2


# ----------------------------------------------------------------------------- step, ramp, clock, sine

def test_step_switches_at_time():
    _, y = play(blk("s", "step", Time=0.25), duration=0.5)
    assert y[:, 0].tolist() == [0, 0, 0, 1, 1, 1]
    _, y = play(blk("s", "step", Time=0.2), duration=0.3)  # 2*0.1 == 0.2 exactly: on at the grid point
    assert y[:, 0].tolist() == [0, 0, 1, 1]
    _, y = play(blk("s", "step"), duration=0.1)  # default Time 0: on from the first sample
    assert y[:, 0].tolist() == [1, 1]


def test_ramp_slope_and_start():
    t, y = play(blk("r", "ramp", slope=2.0, start=0.25), duration=0.6)
    np.testing.assert_allclose(y[:, 0], np.where(t >= 0.25, 2.0 * (t - 0.25), 0.0), rtol=0, atol=1e-15)
    assert y[:3, 0].tolist() == [0, 0, 0]
    _, y = play(blk("r", "ramp"), duration=0.3)
    np.testing.assert_allclose(y[:, 0], [0, 0.1, 0.2, 0.3], rtol=0, atol=1e-15)


def test_clock_is_the_grid_time():
    t, y = play(blk("c", "clock"), dt=0.3, duration=3.0)
    assert y[:, 0].tolist() == t.tolist() == [k * 0.3 for k in range(11)]


def test_sine_closed_form_with_phase():
    t, y = play(blk("s", "sine", Amplitude=2.5, Frequency=0.7, Phase=math.pi / 3), dt=0.05, duration=2.0)
    np.testing.assert_allclose(y[:, 0], 2.5 * np.sin(2 * np.pi * 0.7 * t + np.pi / 3), rtol=0, atol=1e-12)


def test_sine_defaults_are_the_manifest_ones():
    t, y = play(blk("s", "sine"), dt=0.125, duration=1.0)  # A 1, f 1, phase 0
    np.testing.assert_allclose(y[:, 0], np.sin(2 * np.pi * t), rtol=0, atol=1e-12)
    assert y[2, 0] == 1.0


def test_time_sources_reject_vector_params():
    fails("param_type", blk("s", "sine", Amplitude=[1, 2]), param="Amplitude")


# ----------------------------------------------------------------------------- pulse

def test_pulse_doc_example_duty_cycle():
    t, y = play(blk("p", "pulse", Amplitude=1, Period=1, Width=50, StartTime=0, Offset=0), dt=0.05, duration=2.0)
    k = np.arange(41)
    assert y[:, 0].tolist() == np.where(k % 20 < 10, 1.0, 0.0).tolist()


def test_pulse_start_offset_and_width():
    # Period 0.4, Width 25 % -> high for 0.1 s from StartTime 0.5, 0.9, 1.3; dt 0.05.
    t, y = play(blk("p", "pulse", Amplitude=3, Period=0.4, Width=25, StartTime=0.5, Offset=-1), dt=0.05,
                duration=1.5)
    expect = [-1.0] * 31
    for k in (10, 11, 18, 19, 26, 27):  # t = 0.5, 0.55, 0.9, 0.95, 1.3, 1.35
        expect[k] = 2.0
    assert y[:, 0].tolist() == expect


def test_pulse_falling_edge_sample_reads_low():
    # Start 0.2, Period 0.6, Width 50 %: t = 3.5 is 5.5 periods after the start, exactly on a
    # falling edge (in exact arithmetic); fmod leaves 0.29999999999999993 < 0.3, yet it reads low.
    _, y = play(blk("p", "pulse", Amplitude=1, Period=0.6, Width=50, StartTime=0.2, Offset=0), dt=0.1,
                duration=3.5)
    assert y[-1, 0] == 0.0 and y[-2, 0] == 1.0  # t = 3.4 is inside the pulse


def test_pulse_without_period_is_the_offset():
    _, y = play(blk("p", "pulse", Period=0, Offset=0.5), duration=0.3)
    assert y[:, 0].tolist() == [0.5] * 4


@FAST
@given(period=st.sampled_from([0.2, 0.5, 1.0, 2.0]), width=st.sampled_from([10, 25, 50, 75, 90]),
       amp=st.floats(0.1, 5) | st.floats(-5, -0.1), offset=st.floats(-5, 5, allow_nan=False))
def test_pulse_values_are_offset_or_offset_plus_amplitude(period, width, amp, offset):
    t, y = play(blk("p", "pulse", Amplitude=amp, Period=period, Width=width, Offset=offset), dt=0.05,
                duration=2.0)
    high = np.isclose(y[:, 0], offset + amp, rtol=0, atol=1e-12)
    assert np.all(high | np.isclose(y[:, 0], offset, rtol=0, atol=1e-12))
    # away from the edges the phase decides
    phase = np.mod(t, period) / period
    clear = (np.abs(phase - width / 100) > 1e-6) & (phase > 1e-6) & (np.abs(phase - 1) > 1e-6)
    assert np.array_equal(high[clear], (phase < width / 100)[clear])


# ----------------------------------------------------------------------------- time events under a solver

def switched_rc(source, solver, restart, dt=0.1, duration=1.0):
    """``source`` (id 'src') closes an IdealSwitch between 1 V and R = 1, C = 1 while it is
    above 0.5; the switch current and the source are recorded. ``restart``: a unitDelay
    of the source too, so the run restarts at every grid point (an edge there ends an
    interval)."""
    b = [source, blk("V", "ConstantVoltage", V=1.0), blk("sw", "IdealSwitch"), blk("R", "Resistor", R=1.0),
         blk("C", "Capacitor", C=1.0), blk("G", "Ground"), blk("A", "CurrentSensor"), record("wi", "i"),
         record("wu", "u")]
    c = [wire("src", "sw"), pin("V", "p", "sw", "p"), pin("sw", "n", "A", "p"), pin("A", "n", "R", "p"),
         pin("R", "n", "C", "p"), pin("C", "n", "G", "p"), pin("V", "n", "G", "p"), wire("A", "wi"),
         wire("src", "wu")]
    if restart:
        b.append(blk("d", "unitDelay"))
        c.append(wire("src", "d"))
    return diagram(b, c, dt=dt, duration=duration, solver=solver)


def _pulse_edges(start, period, width, until):
    """The pulse's edges in (0, until]: rising at start + k*period, falling where its high
    phase ends (Width percent of the period, less the handler's hair of 1e-12 periods)."""
    high = width * period / 100.0 - 1e-12 * period
    edges = [e for k in range(int(until / period) + 2) for e in (start + k * period, start + k * period + high)]
    return sorted(e for e in edges if 0.0 < e <= until)


EDGES = {   # source -> its edges in (0, 1]: on grid points (0.2, 0.5, 0.6, 1.0 = the stop time), a
            # hair before them (the pulse's falling edges), at t = 0 (none listed: the start sees it)
    "step on a grid point": (blk("src", "step", Time=0.5), [0.5]),
    "step at the stop time": (blk("src", "step", Time=1.0), [1.0]),
    "step at t = 0": (blk("src", "step", Time=0.0), []),
    "pulse": (blk("src", "pulse", Period=0.4, Width=50, StartTime=0.2), _pulse_edges(0.2, 0.4, 50, 1.0)),
    "pulse from t = 0": (blk("src", "pulse", Period=2.0, Width=50, StartTime=0.0), _pulse_edges(0.0, 2.0, 50, 1.0)),
    "square": (blk("src", "signalGenerator", Waveform="square", Frequency=2.5, Amplitude=1.0), [0.2, 0.4, 0.6, 0.8, 1.0]),
}


@pytest.mark.parametrize("name", list(EDGES))
@pytest.mark.parametrize("solver", ["ode45", "dae", "ode4"])
@pytest.mark.parametrize("restart", [False, True])
def test_an_edge_on_a_grid_point_at_the_start_or_at_the_stop_time_is_committed_once(name, solver, restart):
    """A source's edges are time events: the switch it drives changes mode once per edge,
    at the edge's time (a grid point, the stop time, or between), and the grid point on an
    edge reports the circuit after it; an edge at t = 0 is seen by the start itself (the
    switch starts closed, no event)."""
    source, edges = EDGES[name]
    res = run(switched_rc(source, solver, restart))
    modes = [e for e in res["events"] if e["kind"] == "mode"]
    assert [e["block"] for e in modes] == ["sw"] * len(edges)
    np.testing.assert_allclose([e["t"] for e in modes], edges, rtol=2e-16, atol=0)
    closed = np.asarray(res["workspace"]["u"], dtype=float)[:, 0] > 0.5
    i = np.asarray(res["workspace"]["i"], dtype=float)[:, 0]
    # closed: (1 V - v_C) through 1 ohm, v_C <= 1 - e^-1 here; open: the 1e-5 S leak
    assert np.all(i[closed] > 0.3) and np.all(np.abs(i[~closed]) < 2e-5)


# ----------------------------------------------------------------------------- signalGenerator

def test_signal_generator_sine_doc_example():
    t, y = play(blk("g", "signalGenerator", Waveform="sine", Amplitude=2, Frequency=1))
    np.testing.assert_allclose(y[:, 0], 2 * np.sin(2 * np.pi * t), rtol=0, atol=1e-12)


def test_signal_generator_square_starts_low():
    t, y = play(blk("g", "signalGenerator", Waveform="square", Amplitude=1.5, Frequency=1))
    # phase f*t: first half of each period low; t = 0.5 (phase exactly 0.5) is already high
    assert y[:, 0].tolist() == [-1.5] * 5 + [1.5] * 5 + [-1.5]


def test_signal_generator_sawtooth_ramps_down():
    t, y = play(blk("g", "signalGenerator", Waveform="sawtooth", Amplitude=2, Frequency=2), dt=0.05,
                duration=1.0)
    ph = 2 * t
    np.testing.assert_allclose(y[:, 0], 2 * (1 - 2 * (ph - np.floor(ph))), rtol=0, atol=1e-12)
    assert y[0, 0] == 2.0 and y[10, 0] == 2.0  # every period opens at +A


def test_signal_generator_unknown_waveform_is_rejected():
    fails("param_value", blk("g", "signalGenerator", Waveform="triangle"), param="Waveform")


# ----------------------------------------------------------------------------- chirp

def test_chirp_sweeps_from_f1_to_f2_over_t():
    t, y = play(blk("c", "chirp", Amplitude=1.5, f1=0.5, f2=4.5, T=2.0), dt=0.01, duration=3.0)
    k = (4.5 - 0.5) / 2.0
    np.testing.assert_allclose(y[:, 0], 1.5 * np.sin(2 * np.pi * (0.5 * t + 0.5 * k * t ** 2)), rtol=0,
                               atol=1e-12)


def test_chirp_defaults_and_zero_sweep_time_floor():
    t, y = play(blk("c", "chirp"), dt=0.01, duration=1.0)  # A 1, f1 1, f2 10, T 10 -> k 0.9
    np.testing.assert_allclose(y[:, 0], np.sin(2 * np.pi * (t + 0.45 * t ** 2)), rtol=0, atol=1e-12)
    t, y = play(blk("c", "chirp", f1=1, f2=1.002, T=0), dt=0.1, duration=1.0)  # T floored at 1 ms -> k 2
    np.testing.assert_allclose(y[:, 0], np.sin(2 * np.pi * (t + t ** 2)), rtol=0, atol=1e-9)


def test_chirp_with_equal_frequencies_is_a_sine():
    t, y = play(blk("c", "chirp", Amplitude=3, f1=1.5, f2=1.5, T=4), dt=0.05, duration=2.0)
    np.testing.assert_allclose(y[:, 0], 3 * np.sin(2 * np.pi * 1.5 * t), rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- repeating sequences

def test_repeating_sequence_stair_doc_example():
    _, y = play(blk("r", "repeatingSequenceStair", OutValues=[10, 20, 30]))
    assert y[:, 0].tolist() == [10, 20, 30] * 3 + [10, 20]


def test_repeating_sequence_stair_default_and_empty():
    _, y = play(blk("r", "repeatingSequenceStair"), duration=0.7)
    assert y[:, 0].tolist() == [0, 1, 2, 3, 2, 1, 0, 1]
    _, y = play(blk("r", "repeatingSequenceStair", OutValues=[]), duration=0.2)
    assert y[:, 0].tolist() == [0, 0, 0]
    _, y = play(blk("r", "repeatingSequenceStair", OutValues=4), duration=0.2)
    assert y[:, 0].tolist() == [4, 4, 4]


def test_stateful_sources_restart_on_every_run():
    d = diagram([blk("r", "repeatingSequenceStair", OutValues=[1, 2, 3]), blk("c", "counterLimited", UpperLimit=5),
                 record("w1", "a"), record("w2", "b")],
                [wire("r", "w1"), wire("c", "w2")], duration=0.4)
    plan = nc.compile_plan(d)
    first, second = plan.run(), plan.run()
    assert np.asarray(first["workspace"]["a"]).ravel().tolist() == [1, 2, 3, 1, 2]
    assert np.asarray(second["workspace"]["a"]).ravel().tolist() == [1, 2, 3, 1, 2]
    assert np.asarray(second["workspace"]["b"]).ravel().tolist() == [0, 1, 2, 3, 4]


def test_repeating_sequence_interpolated_doc_triangle():
    t, y = play(blk("r", "repeatingSequenceInterpolated", TimeValues=[0, 0.5, 1], OutValues=[0, 1, 0]))
    tm = np.mod(t, 1.0)
    np.testing.assert_allclose(y[:, 0], np.where(tm <= 0.5, 2 * tm, 2 - 2 * tm), rtol=0, atol=1e-12)
    assert y[5, 0] == 1.0 and y[10, 0] == 0.0


def test_repeating_sequence_interpolated_default_table_has_period_2():
    t, y = play(blk("r", "repeatingSequenceInterpolated"), dt=0.25, duration=4.0)  # [0 1 2] -> [0 2 0]
    tm = np.mod(t, 2.0)
    np.testing.assert_allclose(y[:, 0], np.where(tm <= 1, 2 * tm, 4 - 2 * tm), rtol=0, atol=1e-12)


def test_repeating_sequence_interpolated_first_segment_extends_back_to_zero():
    # TimeValues start at 0.5: the wrapped time below 0.5 extrapolates the first segment
    # (handler rule: the first segment whose end is >= tm): 1 + (3-1)*(tm-0.5)/0.5.
    _, y = play(blk("r", "repeatingSequenceInterpolated", TimeValues=[0.5, 1, 2], OutValues=[1, 3, 5]),
                dt=0.25, duration=2.0)
    np.testing.assert_allclose(y[:, 0], [-1, 0, 1, 2, 3, 3.5, 4, 4.5, -1], rtol=0, atol=1e-12)


def test_repeating_sequence_interpolated_degenerate_tables():
    _, y = play(blk("r", "repeatingSequenceInterpolated", TimeValues=[3], OutValues=[9]), duration=0.2)
    assert y[:, 0].tolist() == [9, 9, 9]
    _, y = play(blk("r", "repeatingSequenceInterpolated", TimeValues=[0, 0], OutValues=[4, 5]), duration=0.2)
    assert y[:, 0].tolist() == [4, 4, 4]  # period <= 0: first value
    _, y = play(blk("r", "repeatingSequenceInterpolated", TimeValues=[0, 1, 2], OutValues=[0, 10]), duration=0.2)
    np.testing.assert_allclose(y[:, 0], [0, 1, 2], atol=1e-12)  # shorter list wins: period 1
    _, y = play(blk("r", "repeatingSequenceInterpolated", TimeValues=[], OutValues=[]), duration=0.1)
    assert y[:, 0].tolist() == [0, 0]


def test_repeating_sequence_interpolated_vertical_segment_takes_its_left_value():
    # [0 1 1 2] -> [0 0 5 5]: zero-width segment at t=1; tm = 1 reaches the first segment end
    _, y = play(blk("r", "repeatingSequenceInterpolated", TimeValues=[0, 1, 1, 2], OutValues=[0, 0, 5, 5]),
                dt=0.5, duration=1.5)
    assert y[:, 0].tolist() == [0, 0, 0, 5]


@FAST
@given(values=st.lists(st.floats(-100, 100, allow_nan=False), min_size=2, max_size=6),
       period=st.sampled_from([0.5, 1.0, 2.0]))
def test_repeating_sequence_interpolated_is_periodic_and_hits_the_table(values, period):
    n = len(values)
    times = [period * i / (n - 1) for i in range(n)]
    dt = period / (n - 1)
    _, y = play(blk("r", "repeatingSequenceInterpolated", TimeValues=times, OutValues=values), dt=dt,
                duration=2 * period)
    y = y[:, 0]
    # at the breakpoints: the table value (the last one wraps to the first)
    np.testing.assert_allclose(y[: n - 1], values[:-1], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(y[n - 1: 2 * (n - 1)], values[:-1], rtol=1e-9, atol=1e-9)


# ----------------------------------------------------------------------------- counters

def test_counter_free_running_doc_example():
    _, y = play(blk("c", "counterFreeRunning", NumBits=2))
    assert y[:, 0].tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2]


@pytest.mark.parametrize("bits, expect", [
    (2.9, [0, 1, 2, 3, 0, 1]),     # floored
    (0, [0, 1, 0, 1, 0, 1]),       # at least 1 bit
    (-3, [0, 1, 0, 1, 0, 1]),
    ("nan", [0, 1, 0, 1, 0, 1]),   # C++ max(1, NaN) is 1
    (100, [0, 1, 2, 3, 4, 5]),     # at most 53 bits
    ("inf", [0, 1, 2, 3, 4, 5]),
])
def test_counter_free_running_num_bits_clamp(bits, expect):
    _, y = play(blk("c", "counterFreeRunning", NumBits=bits), duration=0.5)
    assert y[:, 0].tolist() == expect


def test_counter_free_running_default_16_bits_does_not_wrap_early():
    _, y = play(blk("c", "counterFreeRunning"), dt=1.0, duration=70000.0)
    assert y[65535, 0] == 65535 and y[65536, 0] == 0 and y[-1, 0] == 70000 - 65536


@FAST
@given(bits=st.integers(1, 6), steps=st.integers(1, 150))
def test_counter_free_running_is_k_mod_2_to_the_bits(bits, steps):
    _, y = play(blk("c", "counterFreeRunning", NumBits=bits), dt=1.0, duration=float(steps))
    assert y[:, 0].tolist() == [k % 2 ** bits for k in range(steps + 1)]


def test_counter_limited_doc_example():
    _, y = play(blk("c", "counterLimited", UpperLimit=3))
    assert y[:, 0].tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2]


@pytest.mark.parametrize("upper, expect", [
    (0, [0, 0, 0, 0, 0, 0]),
    (-2, [0, 0, 0, 0, 0, 0]),
    (2.5, [0, 1, 2, 3, 0, 1]),     # returns to 0 after passing the limit
    (None, [0, 1, 2, 3, 4, 5]),    # manifest default 7
])
def test_counter_limited_limits(upper, expect):
    params = {} if upper is None else {"UpperLimit": upper}
    _, y = play(blk("c", "counterLimited", params), duration=0.5)
    assert y[:, 0].tolist() == expect


@FAST
@given(upper=st.floats(0, 12, allow_nan=False), steps=st.integers(1, 60))
def test_counter_limited_period_is_ceil_limit_plus_one(upper, steps):
    _, y = play(blk("c", "counterLimited", UpperLimit=upper), dt=1.0, duration=float(steps))
    period = math.ceil(upper) + 1
    assert y[:, 0].tolist() == [k % period for k in range(steps + 1)]


# ----------------------------------------------------------------------------- fromWorkspace

def fw(**params):
    return blk("f", "fromWorkspace", params)


ROWS = [[0, 0], [1, 10], [2, 4]]


def test_from_workspace_interpolates_between_samples():
    t, y = play(fw(Data=ROWS), dt=0.25, duration=2.0)
    np.testing.assert_allclose(y[:, 0], np.interp(t, [0, 1, 2], [0, 10, 4]), rtol=0, atol=1e-12)


@pytest.mark.parametrize("after, expect", [
    ("Extrapolation", [4, 1, -2]),          # 10 + (4 - 10)*(t - 1) from the last two samples
    ("Setting to zero", [4, 0, 0]),
    ("Holding final value", [4, 4, 4]),
])
def test_from_workspace_after_final_value(after, expect):
    _, y = play(fw(Data=ROWS, OutputAfterFinalValue=after), dt=0.5, duration=3.0)
    np.testing.assert_allclose(y[4:, 0], expect, rtol=0, atol=1e-12)


def test_from_workspace_before_the_first_sample():
    # interpolation on: linear extrapolation of the first two samples; off: 0
    _, y = play(fw(Data=[[1, 2], [2, 4]], OutputAfterFinalValue="Holding final value"), dt=0.5, duration=1.0)
    np.testing.assert_allclose(y[:, 0], [0, 1, 2], rtol=0, atol=1e-12)
    _, y = play(fw(Data=[[1, 2], [2, 4]], Interpolate="off", OutputAfterFinalValue="Holding final value"),
                dt=0.5, duration=1.0)
    assert y[:, 0].tolist() == [0, 0, 2]


@pytest.mark.parametrize("after, tail", [("Holding final value", [3, 3]), ("Setting to zero", [0, 0])])
def test_from_workspace_interpolate_off_holds_the_latest_sample(after, tail):
    _, y = play(fw(Data=[[0, 1], [1, 2], [2, 3]], Interpolate="off", OutputAfterFinalValue=after), dt=0.5,
                duration=3.0)
    assert y[:, 0].tolist() == [1, 1, 2, 2, 3] + tail


@pytest.mark.parametrize("interp", ["on", "off"])
def test_from_workspace_repeated_time_newest_value_wins(interp):
    _, y = play(fw(Data=[[0, 0], [1, 0], [1, 5], [2, 5]], Interpolate=interp,
                   OutputAfterFinalValue="Holding final value"), dt=0.5, duration=2.0)
    assert y[:, 0].tolist() == [0, 0, 5, 5, 5]


def test_from_workspace_single_sample():
    _, y = play(fw(Data=[[1, 7]]), dt=0.5, duration=2.0)  # flat single row, extrapolation of one point
    assert y[:, 0].tolist() == [7] * 5
    _, y = play(fw(Data=[1, 7], Interpolate="off", OutputAfterFinalValue="Setting to zero"), dt=0.5, duration=2.0)
    assert y[:, 0].tolist() == [0, 0, 7, 0, 0]


def test_from_workspace_vector_matrix_struct_and_injected_forms_agree():
    expect = [[1, 10], [1.5, 15], [2, 20]]
    forms = [
        {"Data": [[0, 1, 10], [1, 2, 20]]},
        {"Data": {"time": [0, 1], "signals": {"values": [[1, 10], [2, 20]], "dimensions": 2}}},
        {"times": [0, 1], "values": [1, 10, 2, 20], "width": 2},
        {"times": [0, 1], "values": [[1, 10], [2, 20]]},
        {"times": [0, 1], "values": [1, 10, 2, 20]},  # width inferred as len(values)/len(times)
    ]
    for params in forms:
        _, y = play(fw(**params), dt=0.5, duration=1.0)
        np.testing.assert_allclose(y, expect, rtol=0, atol=1e-12, err_msg=str(params))


def test_from_workspace_struct_with_column_values():
    data = {"time": [0, 2], "signals": {"values": [3, 7]}}
    _, y = play(fw(Data=data), dt=0.5, duration=1.0)
    np.testing.assert_allclose(y[:, 0], [3, 4, 5], rtol=0, atol=1e-12)


def test_from_workspace_injected_form_like_nflow():
    # width 2 but only 3 values: the missing one reads 0; a non-number reads 0 (handler rule)
    _, y = play(fw(times=[0, 1], values=[1, 2, 3], width=2, Interpolate="off",
                   OutputAfterFinalValue="Holding final value"), dt=1.0, duration=1.0)
    assert y.tolist() == [[1, 2], [3, 0]]
    _, y = play(fw(times=[0, 1], values=[None, 4], width=1), dt=0.5, duration=1.0)
    assert y[:, 0].tolist() == [0, 2, 4]


def test_from_workspace_nan_sample_in_inline_data():
    _, y = play(fw(Data=[[0, 1], [1, None], [2, 3]], Interpolate="off", OutputAfterFinalValue="Holding final value"),
                dt=1.0, duration=2.0)
    assert y[0, 0] == 1 and math.isnan(y[1, 0]) and y[2, 0] == 3


def test_from_workspace_round_trips_a_to_workspace_structure():
    first = run(diagram([blk("s", "sine", Frequency=0.5), blk("w", "toWorkspace", VariableName="sig")],
                        [wire("s", "w")], dt=0.1, duration=1.0))["workspace"]["sig"]
    t, y = play(fw(Data=first), dt=0.1, duration=1.0)
    np.testing.assert_allclose(y[:, 0], np.sin(np.pi * t), rtol=0, atol=1e-12)


def test_from_workspace_output_width_drives_downstream_blocks():
    d = diagram([fw(Data=[[0, 1, 2, 3], [1, 1, 2, 3]]), blk("g", "gain", Gain=2), record()],
                [wire("f", "g"), wire("g", "w")], duration=0.1)
    assert trace(d).tolist() == [[2, 4, 6]] * 2


def test_from_workspace_without_data_fails():
    err = fails("fromworkspace_no_data", fw(VariableName="myvar"))
    assert "myvar" in err.message and err.block == "s"
    fails("fromworkspace_no_data", fw(Data=[]))
    fails("fromworkspace_no_data", fw(times=[], values=[]))


def test_from_workspace_extrapolation_needs_interpolation():
    fails("fromworkspace_extrap_without_interp", fw(Data=ROWS, Interpolate="off"), param="OutputAfterFinalValue")


@pytest.mark.parametrize("params, code", [
    ({"Data": [[1, 0], [0, 1]]}, "fromworkspace_bad_time"),
    ({"Data": [[0, 0], [None, 1]]}, "fromworkspace_bad_time"),
    ({"Data": [[0, 1], [1]]}, "fromworkspace_bad_data"),
    ({"Data": [[0], [1]]}, "fromworkspace_bad_data"),
    ({"Data": {"time": [0, 1]}}, "fromworkspace_bad_data"),
    ({"Data": {"time": [0, 1, 2], "signals": {"values": [[1, 2], [3, 4]]}}}, "fromworkspace_bad_data"),
    ({"Data": [[0, "x"]]}, "fromworkspace_bad_data"),
    ({"Data": "simin"}, "fromworkspace_bad_data"),
    ({"Data": ROWS, "Interpolate": "linear"}, "param_value"),
    ({"Data": ROWS, "OutputAfterFinalValue": "Hold"}, "param_value"),
    ({"times": [0], "values": [1], "valuesImag": [0]}, "fromworkspace_complex_unsupported"),
])
def test_from_workspace_bad_data(params, code):
    fails(code, fw(**params))


def test_from_workspace_injected_non_numbers_read_as_zero():
    # nflow's handler reads a non-number in 'times'/'values' as 0: times [0, 0] is a valid
    # (repeated) time axis, so the newest value (2) holds from t = 0 on
    _, y = play(fw(times=[0, "inf"], values=[1, 2], OutputAfterFinalValue="Holding final value"), duration=0.1)
    assert y[:, 0].tolist() == [2, 2]


def test_from_workspace_errors_are_diagram_errors_in_json():
    import orjson
    text = orjson.dumps(diagram([fw(), record()], [wire("f", "w")]))
    with pytest.raises(nc.NFlowError) as err:
        nc.simulate_json(text)
    assert isinstance(err.value, nc.DiagramError) and err.value.code == "fromworkspace_no_data"


@FAST
@given(n=st.integers(2, 6), seed=st.integers(0, 10_000))
def test_from_workspace_matches_numpy_interp_inside_the_data(n, seed):
    rng = np.random.default_rng(seed)
    times = np.sort(rng.uniform(0, 2, n)).round(3)
    times[0], times[-1] = 0.0, 2.0
    vals = rng.uniform(-5, 5, n)
    if np.any(np.diff(times) == 0):
        return
    t, y = play(fw(Data=np.column_stack([times, vals]).tolist()), dt=0.1, duration=2.0)
    np.testing.assert_allclose(y[:, 0], np.interp(t, times, vals), rtol=1e-9, atol=1e-9)


def play_column(source, dt=0.1, duration=1.0):
    src = dict(source, id="s")
    res = run(diagram([src, record()], [wire("s", "w")], dt=dt, duration=duration))
    return np.asarray(res["time"]), np.asarray(res["workspace"]["y"], dtype=float)[:, 0]


def lcg(n, amp=1.0, seed=1):
    """Reference draws: r <- (1664525 r + 1013904223) mod 2^32, y = amp*(2r/(2^32-1) - 1)."""
    out, r = [], seed
    for _ in range(n):
        r = (1664525 * r + 1013904223) % 2**32
        out.append(amp * ((r / 4294967295.0) * 2.0 - 1.0))
    return out


# ----------------------------------------------------------------------------- impulse

def test_impulse_is_one_sample_of_amplitude_over_dt():
    t, y = play_column(blk("s", "impulse", Time=0.3, Amplitude=2), duration=0.6)
    assert y.tolist() == [0, 0, 0, 20, 0, 0, 0]


def test_impulse_defaults_fire_at_t0_with_unit_area():
    _, y = play_column(blk("s", "impulse"), dt=0.05, duration=0.2)
    assert y.tolist() == [20.0, 0, 0, 0, 0]
    assert y.sum() * 0.05 == pytest.approx(1.0)


def test_impulse_between_samples_hits_the_nearest_within_half_a_step():
    # Time 0.33: only t = 0.3 is within 0.05; Time 0.35 is equidistant: both neighbours
    # are within dt/2 up to rounding, so the handler's <= decides per sample
    _, y = play_column(blk("s", "impulse", Time=0.33, Amplitude=1), duration=0.6)
    assert y.tolist() == [0, 0, 0, 10, 0, 0, 0]
    _, y = play_column(blk("s", "impulse", Time=0.35, Amplitude=1), duration=0.6)
    expected = [10.0 if abs(k * 0.1 - 0.35) <= 0.05 else 0.0 for k in range(7)]
    assert y.tolist() == expected


def test_impulse_outside_the_run_never_fires():
    _, y = play_column(blk("s", "impulse", Time=5), duration=1.0)
    assert not y.any()
    _, y = play_column(blk("s", "impulse", Time=-1), duration=1.0)
    assert not y.any()


@settings(max_examples=30, deadline=None)
@given(k=st.integers(0, 20), amp=st.floats(-50, 50, allow_nan=False), dt=st.sampled_from([0.01, 0.05, 0.1, 0.25]))
def test_impulse_integrates_to_its_amplitude(k, amp, dt):
    _, y = play_column(blk("s", "impulse", Time=k * dt, Amplitude=amp), dt=dt, duration=20 * dt)
    assert np.count_nonzero(y) == (1 if amp else 0)
    assert y.sum() * dt == pytest.approx(amp, rel=1e-12, abs=1e-12)


# ----------------------------------------------------------------------------- noise

def test_noise_first_draws_are_the_lcg_from_seed_1():
    _, y = play_column(blk("s", "noise", Amplitude=1), duration=0.4)
    assert y.tolist() == lcg(5)
    # the first one by hand: r1 = 1664525 + 1013904223 = 1015568748
    assert y[0] == 2 * 1015568748 / 4294967295.0 - 1


def test_noise_scales_with_amplitude_and_stays_in_range():
    _, y = play_column(blk("s", "noise", Amplitude=3), duration=20.0)
    assert np.allclose(y, lcg(201, 3.0), rtol=0, atol=1e-15)
    assert np.all(np.abs(y) <= 3.0)
    # roughly uniform: the mean of 201 draws is near 0 and the spread near 3/sqrt(3)
    assert abs(y.mean()) < 0.5 and abs(y.std() - math.sqrt(3.0)) < 0.3


def test_noise_two_blocks_share_the_sequence_and_reruns_restart_it():
    d = diagram([blk("a", "noise"), blk("b", "noise", Amplitude=2), blk("m", "mux", inputs=2), record()],
                [wire("a", "m", 0, 0), wire("b", "m", 0, 1), wire("m", "w")], duration=0.3)
    y = trace(d)
    assert y[:, 0].tolist() == lcg(4) and y[:, 1].tolist() == lcg(4, 2.0)
    plan = nc.compile_plan(d)
    first, second = plan.run()["workspace"]["y"], plan.run()["workspace"]["y"]
    assert np.array_equal(first, second) and np.array_equal(np.asarray(first), y)


def test_noise_zero_amplitude_is_silent():
    _, y = play_column(blk("s", "noise", Amplitude=0), duration=0.5)
    assert not y.any()


# ----------------------------------------------------------------------------- labelSource / labelSink

def routed(blocks, conns, duration=0.4):
    return run(diagram(blocks + [record()], conns, duration=duration))


def test_label_routes_a_source_signal_in_the_same_step():
    res = routed([blk("r", "ramp"), blk("ls", "labelSink", GotoTag="a"), blk("src", "labelSource", GotoTag="a")],
                 [wire("r", "ls"), wire("src", "w")])
    assert res["workspace"]["y"] == [[0.0], [0.1], [0.2], [0.30000000000000004], [0.4]]
    assert res["warnings"] == []


def test_label_source_declared_before_its_signal_sees_the_previous_step():
    # OUTPUT runs in declaration order: the ramp has not written this step's value yet
    res = routed([blk("src", "labelSource", GotoTag="a"), blk("r", "ramp"), blk("ls", "labelSink", GotoTag="a")],
                 [wire("r", "ls"), wire("src", "w")])
    assert np.allclose(res["workspace"]["y"], [[0.0], [0.0], [0.1], [0.2], [0.3]], atol=1e-15)


def test_label_of_an_algebraic_signal_lags_one_step_and_closes_no_loop():
    # y = labelSource('fb') + 1, labelSink('fb') <- y: an accumulator, not an algebraic loop
    res = routed([blk("one", "constant", Value=1), blk("src", "labelSource", GotoTag="fb"),
                  blk("s", "sum", inputs=2, Inputs="++"), blk("ls", "labelSink", GotoTag="fb")],
                 [wire("one", "s", 0, 0), wire("src", "s", 0, 1), wire("s", "ls"), wire("s", "w")], duration=0.5)
    assert res["workspace"]["y"] == [[1.0], [2.0], [3.0], [4.0], [5.0], [6.0]]


def test_label_source_feeds_several_blocks_and_tags_are_independent():
    res = routed([blk("a", "constant", Value=2), blk("b", "constant", Value=-3),
                  blk("la", "labelSink", GotoTag="alpha"), blk("lb", "labelSink", GotoTag="beta"),
                  blk("sa", "labelSource", GotoTag="alpha"), blk("sb", "labelSource", GotoTag="beta"),
                  blk("m", "mux", inputs=2)],
                 [wire("a", "la"), wire("b", "lb"), wire("sa", "m", 0, 0), wire("sb", "m", 0, 1), wire("m", "w")],
                 duration=0.1)
    assert res["workspace"]["y"] == [[2.0, -3.0], [2.0, -3.0]]


def test_missing_tag_empty_tag_and_unconnected_sink_give_zeros_with_warnings():
    for sink, tag, phrase in ((blk("ls", "labelSink", GotoTag="other"), "x", "no labelSink has GotoTag 'x'"),
                              (blk("ls", "labelSink", GotoTag="x"), "", "empty GotoTag"),
                              (blk("ls", "labelSink", GotoTag="x"), "x", "has no input")):
        blocks = [blk("r", "ramp"), sink, blk("src", "labelSource", GotoTag=tag)]
        conns = [wire("src", "w")] + ([wire("r", "ls")] if phrase != "has no input" else [])
        res = routed(blocks, conns, duration=0.2)
        assert res["workspace"]["y"] == [[0.0]] * 3
        assert any(phrase in w for w in res["warnings"]), res["warnings"]


def test_duplicate_sink_tags_use_the_later_sink_and_warn():
    res = routed([blk("a", "constant", Value=1), blk("b", "constant", Value=2),
                  blk("l1", "labelSink", GotoTag="t"), blk("l2", "labelSink", GotoTag="t"),
                  blk("src", "labelSource", GotoTag="t")],
                 [wire("a", "l1"), wire("b", "l2"), wire("src", "w")], duration=0.1)
    assert res["workspace"]["y"] == [[2.0], [2.0]]
    assert any("share GotoTag 't'" in w for w in res["warnings"])


def test_external_port_label_source_writes_nothing():
    res = routed([blk("r", "ramp"), blk("ls", "labelSink", GotoTag="a"),
                  blk("src", "labelSource", GotoTag="a", isExternalPort=True)], [wire("r", "ls"), wire("src", "w")])
    assert res["workspace"]["y"] == [[0.0]] * 5 and res["warnings"] == []


def test_vector_labels_route_the_whole_signal():
    res = routed([blk("c", "constant", Value=[1, 2, 3]), blk("ls", "labelSink", GotoTag="v"),
                  blk("src", "labelSource", GotoTag="v")], [wire("c", "ls"), wire("src", "w")])
    assert res["workspace"]["y"] == [[1.0, 2.0, 3.0]] * 5


def test_vector_label_feeding_a_block_sizes_it_and_a_missing_sink_is_scalar_zero():
    # the labelSource's width follows the sink's signal, so the gain downstream is 2 wide;
    # the labelSource without a sink is one element 0.0
    res = routed([blk("c", "constant", Value=[1, -2]), blk("ls", "labelSink", GotoTag="v"),
                  blk("src", "labelSource", GotoTag="v"), blk("g", "gain", Gain=3),
                  blk("lost", "labelSource", GotoTag="nobody"), record("w2", "z")],
                 [wire("c", "ls"), wire("src", "g"), wire("g", "w"), wire("lost", "w2")])
    assert res["workspace"]["y"] == [[3.0, -6.0]] * 5 and res["workspace"]["z"] == [[0.0]] * 5


def test_a_bus_crosses_a_goto_from_pair():
    res = routed([blk("a", "constant", Value=[1, 2]), blk("b", "constant", Value=7),
                  blk("bc", "busCreator", inputs=2, MemberNames=["pos", "count"]),
                  blk("ls", "labelSink", GotoTag="bus"), blk("src", "labelSource", GotoTag="bus"),
                  blk("sel", "busSelector", SelectedSignals=["count"], outputs=1)],
                 [wire("a", "bc", 0, 0), wire("b", "bc", 0, 1), wire("bc", "ls"), wire("src", "sel"),
                  wire("sel", "w")])
    # the bus is built in the algebraic wave, so the labelSource (OUTPUT) sees it one step late
    assert res["workspace"]["y"] == [[0.0]] + [[7.0]] * 4


def test_label_routes_survive_reruns_and_separate_plans():
    d = diagram([blk("r", "ramp", slope=2), blk("ls", "labelSink", GotoTag="a"), blk("src", "labelSource", GotoTag="a"),
                 record()], [wire("r", "ls"), wire("src", "w")], duration=0.2)
    other = diagram([blk("c", "constant", Value=9), blk("ls", "labelSink", GotoTag="a"),
                     blk("src", "labelSource", GotoTag="a"), record()], [wire("c", "ls"), wire("src", "w")], duration=0.2)
    p1, p2 = nc.compile_plan(d), nc.compile_plan(other)
    assert np.allclose(p1.run()["workspace"]["y"], [[0.0], [0.2], [0.4]])
    assert p2.run()["workspace"]["y"].tolist() == [[9.0]] * 3
    assert np.allclose(p1.run()["workspace"]["y"], [[0.0], [0.2], [0.4]])


# --------------------------------------------------------------------------------------------------
# fileSource (issue 4): nflow's handler; CSV files confined to a base directory (the confinement,
# ``files.confined_path``, is tested in tests/test_files.py).
# --------------------------------------------------------------------------------------------------

# ----------------------------------------------------------------------------- fileSource: nflow's injected arrays

def test_injected_arrays_piecewise_constant():
    # times 0, 0.25, 0.5 -> 1, 2, 3; the value at t is the last sample with time <= t
    y, _ = played({"times": [0, 0.25, 0.5], "values": [1, 2, 3]})
    assert y[:, 0].tolist() == [1, 1, 1, 2, 2, 3, 3, 3]


def test_before_the_first_time_the_first_value():
    y, _ = played({"times": [0.25, 0.45], "values": [5, 7]}, duration=0.5)
    assert y[:, 0].tolist() == [5, 5, 5, 5, 5, 7]        # idx clamped to 0 before t = 0.25


def test_repeated_time_takes_the_newest_value():
    y, _ = played({"times": [0, 0.2, 0.2, 0.4], "values": [1, 2, 3, 4]}, duration=0.4)
    assert y[:, 0].tolist() == [1, 1, 3, 3, 4]


def test_a_sample_without_a_value_reads_zero_and_non_numbers_read_zero():
    y, _ = played({"times": [0, 0.1, 0.2, 0.3], "values": [1, "x", None]}, duration=0.4)
    assert y[:, 0].tolist() == [1, 0, 0, 0, 0]


def test_injected_width_sample_major():
    y, _ = played({"times": [0, 0.2], "values": [1, 10, 2, 20], "width": 2}, duration=0.3)
    assert y.tolist() == [[1, 10], [1, 10], [2, 20], [2, 20]]


def test_jsonencode_scalars_as_bare_numbers():
    y, _ = played({"times": 0, "values": 4}, duration=0.2)
    assert y[:, 0].tolist() == [4, 4, 4]


def test_no_samples_output_zero_with_a_warning():
    y, res = played({}, duration=0.2)
    assert y[:, 0].tolist() == [0, 0, 0] and any("no samples" in w for w in res["warnings"])


@pytest.mark.parametrize("times", [[0.0, float("nan")], [0.5, 0.1], [0.0, float("inf")]])
def test_bad_times_are_errors(times):
    err = error(lambda: nc.simulate(source_diagram({"times": times, "values": [1, 2]})))
    assert isinstance(err, nc.DiagramError) and err.code == "filesource_bad_time" and err.block == "src"


def test_value_imag_is_ignored_with_a_warning():
    y, res = played({"times": [0], "values": [3], "valuesImag": [1]}, duration=0.1)
    assert y[:, 0].tolist() == [3, 3] and any("valuesImag" in w for w in res["warnings"])


@settings(max_examples=60, deadline=None)
@given(times=st.lists(st.floats(0, 2, allow_nan=False), min_size=1, max_size=8).map(sorted),
       data=st.data())
def test_playback_law(times, data):
    values = data.draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=len(times), max_size=len(times)))
    y, res = played({"times": times, "values": values}, dt=0.1, duration=2.0)
    for k, t in enumerate(res["time"]):
        idx = max(0, max((i for i, ti in enumerate(times) if ti <= t), default=0))
        assert y[k, 0] == values[idx]


# ----------------------------------------------------------------------------- fileSource: a CSV file

def test_csv_file_read_from_the_base_directory(tmp_path):
    (tmp_path / "in.csv").write_text("t,x\n0,1\n0.25,2\n0.5,3\n")
    y, _ = played({"FileName": "in.csv"}, base_dir=tmp_path)
    assert y[:, 0].tolist() == [1, 1, 1, 2, 2, 3, 3, 3]


def test_csv_comments_blanks_spaces_and_vectors(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "v.csv").write_text("# a comment\n\n0 1 -1\n0.15\t2\t-2\n\n0.3 3 -3\n")
    y, _ = played({"FileName": "data/v.csv"}, base_dir=tmp_path, duration=0.4)
    assert y.tolist() == [[1, -1], [1, -1], [2, -2], [3, -3], [3, -3]]


def test_inspector_name_path_when_file_name_is_empty(tmp_path):
    (tmp_path / "in.csv").write_text("0,7\n")
    (tmp_path / "other.csv").write_text("0,8\n")
    y, _ = played({"path": "in.csv"}, base_dir=tmp_path, duration=0.1)
    assert y[:, 0].tolist() == [7, 7]
    y, _ = played({"FileName": "", "path": "in.csv"}, base_dir=tmp_path, duration=0.1)
    assert y[:, 0].tolist() == [7, 7]
    y, _ = played({"FileName": "other.csv", "path": "in.csv"}, base_dir=tmp_path, duration=0.1)
    assert y[:, 0].tolist() == [8, 8]
    err = error(lambda: played({"path": "../in.csv"}, base_dir=tmp_path))
    assert err.code == "path_outside_base" and err.param == "path"


def test_injected_arrays_win_over_the_file(tmp_path):
    y, _ = played({"FileName": "missing.csv", "times": [0], "values": [9]}, base_dir=tmp_path, duration=0.1)
    assert y[:, 0].tolist() == [9, 9]


@pytest.mark.parametrize("text, code, line", [
    ("t,x\n0,1\n0.1,oops\n", "filesource_bad_csv", "line 3"),
    ("0,1\n0.1,2,3\n", "filesource_bad_csv", "line 2"),
    ("0\n", "filesource_bad_csv", "line 1"),
    ("0,1\n1_0,2\n", "filesource_bad_csv", "line 2"),
    ("0,1\n-0.5,2\n", "filesource_bad_time", ""),
    ("0,1\ninf,2\n", "filesource_bad_time", ""),
])
def test_bad_csv(tmp_path, text, code, line):
    (tmp_path / "in.csv").write_text(text)
    err = error(lambda: played({"FileName": "in.csv"}, base_dir=tmp_path))
    assert err.code == code and line in err.message and err.block == "src"


def test_missing_file(tmp_path):
    err = error(lambda: played({"FileName": "nope.csv"}, base_dir=tmp_path))
    assert isinstance(err, nc.DiagramError) and err.code == "file_unreadable"


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_not_a_regular_file_never_hangs(tmp_path, kind):
    if kind == "fifo":
        os.mkfifo(tmp_path / "in.csv")          # opening it for reading would block a plain open()
    else:
        (tmp_path / "in.csv").mkdir()
    err = error(lambda: played({"FileName": "in.csv"}, base_dir=tmp_path))
    assert err.code == "file_unreadable"


def test_file_over_the_size_limit(tmp_path):
    (tmp_path / "in.csv").write_text("0,1\n" * 100)
    err = error(lambda: nc.simulate(source_diagram({"FileName": "in.csv"}), base_dir=tmp_path,
                                    limits=nc.Limits(max_input_bytes=50)))
    assert err.code == "file_too_large"


def test_file_wider_than_the_width_limit(tmp_path):
    (tmp_path / "in.csv").write_text("0," + ",".join(["1"] * 20) + "\n")
    err = error(lambda: nc.simulate(source_diagram({"FileName": "in.csv"}), base_dir=tmp_path,
                                    limits=nc.Limits(max_width=10)))
    assert err.code == "too_wide"


def test_injected_width_over_the_limit_fails_before_allocating():
    err = error(lambda: played({"times": [0], "values": [1], "width": 1e12}))
    assert err.code == "too_wide" and err.block == "src"


def test_without_a_base_directory_no_file_is_read(tmp_path):
    (tmp_path / "in.csv").write_text("0,1\n")
    err = error(lambda: played({"FileName": str(tmp_path / "in.csv")}))
    assert isinstance(err, nc.DiagramError) and err.code == "file_access_disabled"
