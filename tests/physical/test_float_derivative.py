"""A small island's derivative generated on floats (physical/float_derivative.py): the
mode's matrix form to round-off, and source made of the island's shape alone."""
from __future__ import annotations

import numpy as np
import pytest

import nflow_compat as nc
from nflow_compat.generated import run_generated
from nflow_compat.physical import float_derivative
from tests.physical.mechanisms import island_of
from tests.test_generated import HOSTILE
from tests.util import blk, diagram, pin, wire



def _stick_slip(prefix="", m=1.5):
    blocks = [blk(f"{prefix}f0", "sine", Amplitude=3.0, Frequency=0.5), blk(f"{prefix}f", "Force"),
              blk(f"{prefix}m", "MassWithStopAndFriction", m=m, L=0.0, smax=2.0, smin=-2.0, F_prop=0.4,
                  F_Coulomb=1.0, F_Stribeck=0.5, fexp=2.0, v_small=1e-3)]
    conns = [wire(f"{prefix}f0", f"{prefix}f"), pin(f"{prefix}f", "flange", f"{prefix}m", "flange_a")]
    return blocks, conns


def _rc_with_a_sine_source():
    # a sine voltage source (a time function) -> R -> C -> ground, and a signal-driven
    # current source into the capacitor (an input)
    blocks = [blk("v", "SineVoltage", V=2.0, f=3.0), blk("r", "Resistor", R=10.0), blk("c", "Capacitor", C=0.01),
              blk("g", "Ground"), blk("k", "constant", Value=0.05), blk("i", "SignalCurrent")]
    conns = [pin("v", "p", "r", "p"), pin("r", "n", "c", "p"), pin("c", "n", "g", "p"), pin("v", "n", "g", "p"),
             wire("k", "i"), pin("i", "p", "g", "p"), pin("i", "n", "c", "p")]
    return blocks, conns


def _every_mode(island) -> list:
    """Each branch of the island's one switching element, or its one mode without any."""
    if not island._elements:
        return [()]
    element, = island._elements
    return [(branch,) for branch in element.branches]


@pytest.mark.parametrize("make", [_stick_slip, _rc_with_a_sine_source])
def test_the_float_derivative_is_the_matrix_form_in_every_branch(make):
    # in each branch the generated derivative must equal K w + L (c + explicit terms)
    # made with the mode's matrices
    island = island_of(diagram(*make(), dt=0.05, duration=1.0, solver="ode45"))
    assert 1 <= island.n_states <= 4
    island.inputs[:] = 1.25
    for modes in _every_mode(island):
        island.modes = modes
        lin = island._linear(island.modes)
        assert lin.float_derivative is not None
        rng = np.random.default_rng(3)
        for _ in range(3):
            w = rng.normal(size=island.n_states)
            c = island._c(0.2, island.inputs)
            if island._explicit:
                c = island._with_explicit(c, w, island.inputs, 0.2, island.modes)
            np.testing.assert_allclose(island.derivative(0.2, w), lin.K @ w + lin.L @ c, rtol=1e-14, atol=1e-14)


def _sources(monkeypatch, prefix, m) -> list:
    seen = []
    original = run_generated

    def spy(source, filename, names):
        seen.append(source)
        return original(source, filename, names)
    monkeypatch.setattr(float_derivative, "run_generated", spy)
    float_derivative._maker.cache_clear()
    result = nc.simulate(diagram(*_stick_slip(prefix, m), dt=0.05, duration=3.0, solver="ode45"))
    assert {e["to"] for e in result["events"] if e["kind"] == "mode"} >= {"forward", "backward"}
    return seen


def test_no_id_or_parameter_reaches_the_generated_derivative(monkeypatch):
    # the mass's value (and its reciprocal 0.8100000...) enters only as a bound constant
    plain = _sources(monkeypatch, "", 1.2345678)
    hostile = _sources(monkeypatch, HOSTILE, 1.2345678)
    assert plain and plain == hostile
    assert not any("owned" in s or "1.2345678" in s or "0.81" in s for s in hostile)


def test_islands_of_one_shape_share_one_compiled_maker():
    float_derivative._maker.cache_clear()
    for m in (1.0, 2.0, 3.0):
        nc.simulate(diagram(*_stick_slip("", m), dt=0.05, duration=1.0, solver="ode45"))
    info = float_derivative._maker.cache_info()
    assert info.hits > 0 and info.misses <= 3
