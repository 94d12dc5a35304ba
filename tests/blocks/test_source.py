"""Sources library handlers: constant, enumeratedConstant, step, sine, clock, ramp, pulse,
signalGenerator, chirp, repeatingSequenceStair, repeatingSequenceInterpolated,
counterFreeRunning, counterLimited, fromWorkspace. Expected values are closed forms
evaluated with plain numpy on the grid t_k = k*dt, or worked out by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from tests.util import blk, diagram, record, run, trace, wire

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
