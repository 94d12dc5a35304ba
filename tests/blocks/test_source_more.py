"""Sources library, second batch: impulse, noise, and goto/from routing through
labelSource / labelSink (nflow's handlers, fixed-step path). Expected values are closed
forms or worked out by hand on the grid t_k = k*dt."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from tests.util import blk, diagram, record, run, trace, wire

FAST = settings(max_examples=30, deadline=None)


def play(source, dt=0.1, duration=1.0):
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
    t, y = play(blk("s", "impulse", Time=0.3, Amplitude=2), duration=0.6)
    assert y.tolist() == [0, 0, 0, 20, 0, 0, 0]


def test_impulse_defaults_fire_at_t0_with_unit_area():
    _, y = play(blk("s", "impulse"), dt=0.05, duration=0.2)
    assert y.tolist() == [20.0, 0, 0, 0, 0]
    assert y.sum() * 0.05 == pytest.approx(1.0)


def test_impulse_between_samples_hits_the_nearest_within_half_a_step():
    # Time 0.33: only t = 0.3 is within 0.05; Time 0.35 is equidistant: both neighbours
    # are within dt/2 up to rounding, so the handler's <= decides per sample
    _, y = play(blk("s", "impulse", Time=0.33, Amplitude=1), duration=0.6)
    assert y.tolist() == [0, 0, 0, 10, 0, 0, 0]
    _, y = play(blk("s", "impulse", Time=0.35, Amplitude=1), duration=0.6)
    expected = [10.0 if abs(k * 0.1 - 0.35) <= 0.05 else 0.0 for k in range(7)]
    assert y.tolist() == expected


def test_impulse_outside_the_run_never_fires():
    _, y = play(blk("s", "impulse", Time=5), duration=1.0)
    assert not y.any()
    _, y = play(blk("s", "impulse", Time=-1), duration=1.0)
    assert not y.any()


@FAST
@given(k=st.integers(0, 20), amp=st.floats(-50, 50, allow_nan=False), dt=st.sampled_from([0.01, 0.05, 0.1, 0.25]))
def test_impulse_integrates_to_its_amplitude(k, amp, dt):
    _, y = play(blk("s", "impulse", Time=k * dt, Amplitude=amp), dt=dt, duration=20 * dt)
    assert np.count_nonzero(y) == (1 if amp else 0)
    assert y.sum() * dt == pytest.approx(amp, rel=1e-12, abs=1e-12)


# ----------------------------------------------------------------------------- noise

def test_noise_first_draws_are_the_lcg_from_seed_1():
    _, y = play(blk("s", "noise", Amplitude=1), duration=0.4)
    assert y.tolist() == lcg(5)
    # the first one by hand: r1 = 1664525 + 1013904223 = 1015568748
    assert y[0] == 2 * 1015568748 / 4294967295.0 - 1


def test_noise_scales_with_amplitude_and_stays_in_range():
    _, y = play(blk("s", "noise", Amplitude=3), duration=20.0)
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
    _, y = play(blk("s", "noise", Amplitude=0), duration=0.5)
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
