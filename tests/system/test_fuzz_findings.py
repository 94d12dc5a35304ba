"""Minimal reproducers of the crashes and hangs the fuzzer (tests/system/test_fuzz.py) found.

Each states the contract of docs/CONTRACT.md §5 for its input: an NFlowError with a code and a message
(or a clean result) - never another exception, never a hang. A finding that is still open
is marked ``xfail(strict=True, reason="<crash> - reported")``: the strict flag turns it red
the moment the bug is gone (then the marker goes and the test stays as a regression test).

Fixed: every finding below (the last one, a slow path, by the step-cap fix). Found before
the fix:

* RecursionError in ``diagram._numeric_array`` / ``_show`` / ``_number`` for values nested
  500-1020 deep (orjson accepts 1024 levels, the normalizers recurse per level);
* hangs: ode45 with ``maxStep`` 1e-9, a stiff island (RotSpring c=1e9) under 'dae', an
  integrator fed inf under 'dae', a denormal Mass (m=5e-324) under ode45 - no bound on the
  solvers' internal work, and non-finite derivatives not detected;
* ValueError from scipy (LSODA "initial state y0 must be finite") for the denormal Mass
  under 'dae' with discrete state; OverflowError from ``math.exp`` (ExpSineForce with
  Damping -1e308); ValueError from ``math.sin(inf)`` (chirp at t ~ 1e200).
"""
from __future__ import annotations

import orjson
import pytest

import nflow_compat as nc
from tests import fuzz
from tests.util import blk, diagram, record, wire

# Each of these answers in milliseconds now; before the fixes the hangs ran for minutes.
BUDGET_S = 2.0


def nested(depth: int, leaf="1") -> str:
    return "[" * depth + leaf + "]" * depth


def with_param(block: dict, name: str, raw_json: str) -> str:
    """Diagram text with ``block``'s param ``name`` set to ``raw_json`` verbatim (values
    nested deeper than Python's JSON encoders go cannot be built as objects)."""
    d = diagram([dict(block, params=dict(block.get("params", {}), **{name: "@@"}))], [], duration=0.2)
    return orjson.dumps(d).decode().replace('"@@"', raw_json)


def outcome(text, limits=fuzz.LIMITS):
    """The NFlowError ``text`` gives within the budget (None when it runs)."""
    with fuzz.wall_clock_budget(BUDGET_S):
        try:
            nc.simulate_json(text, limits=limits)
        except nc.NFlowError as err:
            assert err.code and err.message
            return err
    return None


def _phys(a, ap, b, bp):
    return {"from": a, "fromPin": ap, "to": b, "toPin": bp}


# ----------------------------------------------------------------------------- deep nesting

@pytest.mark.parametrize("block, param, depth", [
    (blk("c", "constant"), "Value", 600),             # numeric: diagram._numeric_array
    (blk("p", "polynomial"), "Coefficients", 600),    # vector
    (blk("k", "Clutch"), "mu_pos", 600),              # matrix
    (blk("w", "toWorkspace"), "VariableName", 1000),  # string: the repr for the message (_show)
    (blk("g", "gain"), "Gain", 1020),                 # number: _number unwraps one-element arrays
    (blk("d", "display"), "Floating", 1020),          # boolean: the same path
])
def test_deeply_nested_param_is_a_diagram_error(block, param, depth):
    err = outcome(with_param(block, param, nested(depth)))
    assert isinstance(err, nc.DiagramError) and err.code == "too_deep"


def test_deeply_nested_variable_is_a_diagram_error():
    d = diagram([blk("c", "constant", Value="k"), record()], [wire("c", "w")], duration=0.2, variables={"k": "@@"})
    err = outcome(orjson.dumps(d).decode().replace('"@@"', nested(600)))
    assert isinstance(err, nc.DiagramError) and err.code == "too_deep"


def test_a_nested_one_element_array_is_still_a_scalar():
    # jsonencode leniency (a scalar may be a one-element array) holds below the depth limit
    text = with_param(blk("g", "gain"), "Gain", nested(300, "3"))
    assert nc.validate(orjson.loads(text)).blocks[0].params["Gain"] == 3.0


# ----------------------------------------------------------------------------- hangs

def test_tiny_max_step_is_bounded():
    d = diagram([blk("m", "Mass", v0=1)], [], dt=0.1, duration=1.0, solver="ode45", maxStep=1e-9)
    err = outcome(orjson.dumps(d))
    assert isinstance(err, nc.SimulationError) and err.code == "too_many_steps"


def test_stiff_island_under_dae_is_bounded():
    d = diagram([blk("ground", "RotFixed"), blk("spring", "RotSpring", c=1e9), blk("J", "Inertia", phi0=1)],
                [_phys("spring", "a", "ground", "flange"), _phys("spring", "b", "J", "flange")],
                dt=0.1, duration=1.0, solver="dae")
    err = outcome(orjson.dumps(d))         # fuzz.LIMITS: 10k solver steps
    assert isinstance(err, nc.SimulationError) and err.code == "too_many_steps"


def test_integrator_of_infinity_under_dae_is_bounded():
    d = diagram([blk("c", "constant", Value="inf"), blk("i", "integrator"), record()],
                [wire("c", "i"), wire("i", "w")], dt=0.1, duration=1.0, solver="dae")
    err = outcome(orjson.dumps(d))
    assert isinstance(err, nc.SimulationError) and err.code == "non_finite_state"


def test_denormal_mass_under_ode45_is_bounded():
    d = diagram([blk("m", "Mass", m=5e-324, v0=1)], [], dt=0.1, duration=1.0, solver="ode45")
    err = outcome(orjson.dumps(d))
    assert isinstance(err, nc.SimulationError) and err.code == "non_finite_state"


# ----------------------------------------------------------------------------- other exceptions

def test_non_finite_state_under_dae_is_a_simulation_error():
    # counterFreeRunning has discrete state, so integration restarts at every grid point
    d = diagram([blk("k", "counterFreeRunning"), blk("m", "Mass", m=5e-324)], [], dt=0.1, duration=1.0,
                solver="dae")
    err = outcome(orjson.dumps(d))
    assert isinstance(err, nc.SimulationError) and err.code == "non_finite_state"


def test_exp_sine_force_with_huge_negative_damping_is_a_simulation_error():
    d = diagram([blk("f", "ExpSineForce", Damping=-1e308), blk("m", "Mass")],
                [_phys("f", "flange", "m", "flange")], dt=1.0, duration=3.0, solver="ode4")
    err = outcome(orjson.dumps(d))
    assert isinstance(err, nc.SimulationError) and err.code == "numeric_error"


def test_chirp_at_huge_times_is_a_simulation_error():
    d = diagram([blk("c", "chirp"), record()], [wire("c", "w")], dt=1e200, duration=1e201)
    err = outcome(orjson.dumps(d))
    assert isinstance(err, nc.SimulationError) and err.code == "numeric_error"


# ----------------------------------------------------------------------------- slow path

def test_discrete_state_next_to_an_island_is_not_slow_under_ode45():
    # Found slow (4.3 s): with discrete state the solver restarts at every grid point, and the
    # automatic step cap was a fiftieth of ONE interval (50 steps a sample). It is now a
    # fiftieth of the run: 400 samples take ~1 s under load.
    d = diagram([blk("z", "foh"), blk("m", "Mass", v0=1)], [], dt=0.1, duration=39.9, solver="ode45")
    with fuzz.wall_clock_budget(3.0):
        nc.simulate_json(orjson.dumps(d), limits=fuzz.LIMITS)


# ----------------------------------------------------------------------------- complex values in loops

# Found: TypeError in ordering._settled (np.asarray(complex, dtype=float)) - a complex signal
# in an algebraic loop (realImagToComplex -> crossProduct -> interpolationPrelookup -> ...).
COMPLEX_LOOP = (
    '{"sampleTime": 0.3, "duration": 8.7, "solver": "dae", "variables": {}, "blocks": ['
    '{"id": "b0", "type": "display", "outputs": 0, "params": {"Floating": "true"}},'
    '{"id": "b1", "type": "crossProduct", "inputs": 2, "params": {}},'
    '{"id": "b2", "type": "interpolationPrelookup", "inputs": 2, "params": {"Table": "15.0"}},'
    '{"id": "b3", "type": "realImagToComplex", "inputs": 2, "params": {}},'
    '{"id": "rec4", "type": "toWorkspace", "params": {"VariableName": "y", "SaveFormat": "Structure"}},'
    '{"id": "rec5", "type": "toWorkspace", "params": {"VariableName": "z", "SaveFormat": "Structure With Time"}}],'
    '"connections": [{"from": "b1", "to": "b0", "fromIndex": 0, "toIndex": 0},'
    '{"from": "b3", "to": "b1", "fromIndex": 0, "toIndex": 0}, {"from": "b2", "to": "b1", "fromIndex": 0, "toIndex": 1},'
    '{"from": "b1", "to": "b2", "fromIndex": 0, "toIndex": 0}, {"from": "b2", "to": "b2", "fromIndex": 0, "toIndex": 1},'
    '{"from": "b2", "to": "b3", "fromIndex": 0, "toIndex": 0}, {"from": "b2", "to": "rec4", "fromIndex": 0, "toIndex": 0},'
    '{"from": "b1", "to": "rec5", "fromIndex": 0, "toIndex": 0}]}')


def test_complex_signal_into_a_real_only_block_in_a_loop_is_refused_when_compiled():
    err = outcome(COMPLEX_LOOP)
    assert isinstance(err, nc.DiagramError) and err.code == "complex_not_supported" and err.block == "b1"


def test_complex_algebraic_loop_settles():
    # y = z + 0.5*y element-wise (z complex): the loop's relaxation compares complex values
    blocks = [blk("re", "constant", Value=[1.0, 0.0]), blk("im", "constant", Value=[-2.0, 3.0]),
              blk("z", "realImagToComplex"), blk("s", "sum", Inputs="++", inputs=2), blk("g", "gain", Gain=0.5),
              record()]
    conns = [wire("re", "z", 0, 0), wire("im", "z", 0, 1), wire("z", "s", 0, 0), wire("g", "s", 0, 1),
             wire("s", "g"), wire("s", "w")]
    y = nc.simulate(diagram(blocks, conns, duration=0.1))["workspace"]["y"]
    assert y["real"][0] == pytest.approx([2.0, 0.0], abs=1e-9) and y["imag"][0] == pytest.approx([-4.0, 6.0])


def test_exact_integer_algebraic_loops_settle_exactly():
    # y = uint64(c + 0*y): the first sweep compares an exact integer with a float; a uint64
    # difference must not wrap around
    blocks = [blk("c", "constant", Value=[3.0, 2.0 ** 62]), blk("s", "sum", Inputs="++", inputs=2),
              blk("cv", "convert", OutDataType="uint64"), blk("g", "gain", Gain=0.0), record()]
    conns = [wire("c", "s", 0, 0), wire("g", "s", 0, 1), wire("s", "cv"), wire("cv", "g"), wire("cv", "w")]
    assert nc.simulate(diagram(blocks, conns, duration=0.1))["workspace"]["y"] == [[3, 2 ** 62]] * 2


def test_settled_compares_every_signal_kind():
    import math

    import numpy as np

    from nflow_compat.engine.ordering import _settled
    assert _settled(1.0, 1.0) and not _settled(1.0, 1.1) and _settled(1e20, 1e20 * (1 + 1e-14))
    assert _settled(1 + 2j, 1 + 2j) and not _settled(1 + 2j, 1 + 2.1j) and _settled(1j, 1j * (1 + 1e-14))
    assert _settled(np.array([1j, 2.0]), np.array([1j, 2.0])) and not _settled(np.array([1j, 2]), np.array([1j, 3]))
    assert _settled(5, 5) and not _settled(5, 6) and not _settled(5, 5.5) and _settled(5, 5.0)
    big = np.array([3, 2 ** 64 - 1], dtype=np.uint64)
    assert _settled(big, big.copy()) and _settled(2 ** 64 - 1, 2 ** 64 - 1)
    assert not _settled(np.array([3, 5], dtype=np.uint64), np.array([5, 5], dtype=np.uint64))   # 3 - 5 wraps
    assert _settled(np.array([0, 1], dtype=np.int64), np.array([0.0, 1.0])) and not _settled(1.0 + 0j, 0.0)
    assert _settled(math.inf, math.inf) and not _settled(math.nan, math.nan)


def test_network_stamps_that_overflow_are_a_typed_error_without_numpy_warnings():
    # found by `make fuzz`: a damper of 1e300 behind a lever of ratio 1e10 overflowed the
    # damping matrix (d * ratio^2) with a RuntimeWarning on stderr
    import warnings

    def pin(a, ap, b, bp):
        return {"from": a, "fromPin": ap, "to": b, "toPin": bp}
    blocks = [blk("g", "Fixed"), blk("d", "Damper", d=1e300), blk("l", "Lever", ratio=1e10), blk("m", "Mass")]
    conns = [pin("g", "flange", "d", "a"), pin("d", "b", "l", "a"), pin("l", "b", "m", "flange")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(nc.SimulationError) as err:
            nc.simulate(diagram(blocks, conns, solver="ode45"))
    assert err.value.code == "non_finite_state" and "damping" in err.value.message
