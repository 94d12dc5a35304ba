"""The force laws and time functions of physical/elements.py, on their own (the networks
that use them are tests/physical/test_mechanical.py)."""
import math

import pytest

from nflow_compat.physical import elements as elm


def test_time_functions():
    A, f, ph, damp = 2.0, 3.0, 0.4, 0.7
    sine = elm.Sine(A, f, ph)
    exps = elm.ExpSine(A, f, damp, ph)
    ramp = elm.Ramp(1.5, 0.5)
    for t in (0.0, 0.13, 0.77, 2.5):
        assert sine(t) == pytest.approx(A * math.sin(2 * math.pi * f * t + ph))
        assert exps(t) == pytest.approx(A * math.exp(-damp * t) * math.sin(2 * math.pi * f * t + ph))
    assert ramp(0.4) == 0.0 and ramp(0.5) == 0.0 and ramp(1.5) == pytest.approx(1.5)
    assert ramp.next_break(0.0) == 0.5 and ramp.next_break(0.5) == math.inf
    trap = elm.Trapezoid(3.0, 0.2, 0.3, 0.1, 1.0)
    expected = {0.0: 0.0, 0.1: 1.5, 0.2: 3.0, 0.45: 3.0, 0.55: 1.5, 0.6: 0.0, 0.9: 0.0, 1.1: 1.5,
                5.25: 3.0, 7.55: 1.5}
    for t, y in expected.items():
        assert trap(t) == pytest.approx(y, abs=1e-9), t
    assert trap.next_break(0.0) == pytest.approx(0.2)
    assert trap.next_break(0.55) == pytest.approx(0.6)
    assert trap.next_break(0.7) == pytest.approx(1.0)
    assert trap.next_break(3.2) == pytest.approx(3.5)
    jump = elm.Trapezoid(1.0, 0.0, 0.5, 0.0, 1.0)          # a square wave
    assert jump(0.0) == 1.0 and jump(0.49) == 1.0 and jump(0.5) == 0.0 and jump(1.0) == 1.0


def test_elasto_backlash_laws():
    law = elm.ElastoBacklash(c=10.0, d=2.0, b=0.2, phi_rel0=0.05)
    # contact torque, clipped to 0 while it would pull; free play 0
    assert law.force(0.05 + 0.15, 0.1, 0.0, 1) == pytest.approx(0.5 + min(0.5, 0.2))
    assert law.force(0.05 + 0.11, -1.0, 0.0, 1) == 0.0
    assert law.force(0.05 - 0.15, -0.1, 0.0, -1) == pytest.approx(-0.5 + max(-0.5, -0.2))
    assert law.force(0.05, 3.0, 0.0, 0) == 0.0
    assert law.mode_from(0.05 + 0.11) == 1 and law.mode_from(0.05 - 0.11) == -1 and law.mode_from(0.1) == 0
