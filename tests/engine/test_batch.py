"""Batched variants (``engine.batch.run_batch``): many parameter sets of one diagram stepped
together in lanes give what each variant's own run gives (the same steps: scipy's RK45
step for step, so agreement far inside the tolerance), events included; a variant's
failure is its own; what the lanes do not cover runs variant by variant."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from nflow_compat.api import build_plan
from nflow_compat.diagram import Limits, with_params
from nflow_compat.engine.batch import run_batch
from nflow_compat.errors import DiagramError, SimulationError
from tests.util import blk, diagram, wire

STICK_SLIP = Path(__file__).resolve().parents[2] / "examples" / "sweep_coulomb" / "diagram.json"


def msd_pi(duration=3.0, dt=0.01):
    """A mass-spring-damper whose position a PI controller drives to a step reference."""
    return diagram(
        [blk("ref", "step", Time=0.5), blk("err", "sum", inputs=2, Inputs="+-"), blk("kp", "gain", Gain=20.0),
         blk("ie", "integrator"), blk("ki", "gain", Gain=10.0), blk("u", "sum", inputs=2, Inputs="++"),
         blk("f", "sum", inputs=3, Inputs="+--"), blk("invm", "gain", Gain=1.0), blk("v", "integrator"),
         blk("x", "integrator"), blk("k", "gain", Gain=4.0), blk("c", "gain", Gain=2.0),
         blk("wx", "toWorkspace", VariableName="x", SaveFormat="Array"),
         blk("wu", "toWorkspace", VariableName="u", SaveFormat="Array")],
        [wire("ref", "err"), wire("x", "err", 0, 1), wire("err", "kp"), wire("err", "ie"), wire("ie", "ki"),
         wire("kp", "u"), wire("ki", "u", 0, 1), wire("u", "f"), wire("k", "f", 0, 1), wire("c", "f", 0, 2),
         wire("f", "invm"), wire("invm", "v"), wire("v", "x"), wire("x", "k"), wire("v", "c"), wire("x", "wx"),
         wire("u", "wu")], dt=dt, duration=duration, solver="ode45", relTol=1e-6, absTol=1e-8)


def _variants(d, block, param, values):
    index = next(b.index for b in d.blocks if b.id == block)
    return [{(index, param): float(v)} for v in values]


def _singles(d, variants, limits=None):
    out = []
    for values in variants:
        try:
            out.append(build_plan(with_params(d, values), limits=limits).run())
        except (DiagramError, SimulationError) as err:
            out.append(err)
    return out


def _assert_same(batched, single):
    assert batched["time"].tolist() == single["time"].tolist()
    for name, values in single["workspace"].items():
        # the same steps as the single run, the arithmetic vectorized: agreement to rounding
        np.testing.assert_allclose(batched["workspace"][name], values, rtol=1e-9, atol=1e-12)
    assert [(e["kind"], e["block"], e.get("from"), e.get("to")) for e in batched["events"]] == \
        [(e["kind"], e["block"], e.get("from"), e.get("to")) for e in single["events"]]
    np.testing.assert_allclose([e["t"] for e in batched["events"]], [e["t"] for e in single["events"]],
                               rtol=0, atol=1e-9)


def test_causal_variants_step_together_and_equal_their_single_runs():
    d = nc.validate(msd_pi())
    variants = _variants(d, "k", "Gain", np.linspace(1.0, 9.0, 7))
    results = run_batch(d, variants)
    for batched, single in zip(results, _singles(d, variants)):
        assert batched["stats"]["batched"] is True and batched["stats"]["batch_size"] == 7
        _assert_same(batched, single)
    # the variants do differ: the stiffer spring settles lower
    finals = [r["workspace"]["x"][-1, 0] for r in results]
    assert finals == sorted(finals, reverse=True)


def test_stick_slip_variants_keep_their_own_modes_and_events():
    raw = json.loads(STICK_SLIP.read_text())
    raw["duration"] = 3.0
    d = nc.validate(raw)
    variants = _variants(d, "stop1", "F_Coulomb", [0.5, 3.0, 6.0, 9.0])
    results = run_batch(d, variants)
    singles = _singles(d, variants)
    for batched, single in zip(results, singles):
        assert batched["stats"]["batched"] is True
        _assert_same(batched, single)
    # the breakaway comes later for a larger Coulomb force
    breakaway = [next(e["t"] for e in r["events"] if e.get("to") == "forward") for r in results]
    assert breakaway == sorted(breakaway)


def test_a_variant_that_fails_is_its_own_error_and_the_others_run():
    d = nc.validate(msd_pi(duration=2.0))
    index = next(b.index for b in d.blocks if b.id == "k")
    variants = [{(index, "Gain"): 4.0}, {(index, "Gain"): "not a number"}, {(index, "Gain"): 1e9},
                {(index, "Gain"): 2.0}]
    results = run_batch(d, variants, limits=Limits(max_solver_steps=3000))
    assert isinstance(results[1], DiagramError)
    # a spring of 1e9 needs far more steps than the limit: that variant's run fails as its own run does
    assert isinstance(results[2], SimulationError) and results[2].code == "too_many_steps"
    single = _singles(d, [variants[2]], Limits(max_solver_steps=3000))[0]
    assert isinstance(single, SimulationError) and single.code == results[2].code
    for k in (0, 3):
        assert results[k]["stats"]["batched"] is True
        _assert_same(results[k], _singles(d, [variants[k]])[0])


def test_what_the_lanes_do_not_cover_runs_variant_by_variant():
    d = nc.validate(diagram([blk("s", "sine", Amplitude=1, Frequency=1), blk("g", "gain", Gain=2.0),
                             blk("w", "toWorkspace", VariableName="y", SaveFormat="Array")],
                            [wire("s", "g"), wire("g", "w")], dt=0.1, duration=1.0))
    variants = _variants(d, "g", "Gain", [1.0, 3.0])
    for batched, single in zip(run_batch(d, variants), _singles(d, variants)):
        assert batched["stats"]["batched"] is False
        assert batched["workspace"]["y"].tolist() == single["workspace"]["y"].tolist()


@settings(max_examples=6, deadline=None)
@given(st.lists(st.tuples(st.floats(0.5, 10.0), st.floats(5.0, 40.0)), min_size=2, max_size=4))
def test_batched_runs_equal_single_runs_for_any_gains(gains):
    d = nc.validate(msd_pi(duration=1.5, dt=0.01))
    k, kp = (next(b.index for b in d.blocks if b.id == name) for name in ("k", "kp"))
    variants = [{(k, "Gain"): a, (kp, "Gain"): b} for a, b in gains]
    for batched, single in zip(run_batch(d, variants), _singles(d, variants)):
        assert batched["stats"]["batched"] is True
        _assert_same(batched, single)


@pytest.mark.parametrize("rows", [1, 3])
def test_a_batch_of_one_or_more_has_the_result_keys_of_a_run(rows):
    d = nc.validate(msd_pi(duration=1.0))
    results = run_batch(d, _variants(d, "c", "Gain", np.linspace(1.0, 3.0, rows)))
    single = build_plan(d).run()
    for r in results:
        assert r.keys() == single.keys()
        assert r["stats"]["batched"] is (rows > 1)
