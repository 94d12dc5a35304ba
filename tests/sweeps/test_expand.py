"""Sweep parameter values and their combinations (nflow_compat.sweeps.expand): ranges, grid
and zip, reproducible random draws."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from scipy import stats
from scipy.stats import qmc

from nflow_compat.errors import DiagramError
from nflow_compat.sweeps import expand, spec
from tests.sweeps.sweep_specs import gains


# ----------------------------------------------------------------------------- values and runs

def test_ranges_grid_and_zip():
    # logspace counts decades (numpy's and MATLAB's convention): 10**0, 10**1, 10**2
    assert expand.column({"logspace": [0, 2, 3]}, where="", position=0).values == [1.0, 10.0, 100.0]
    assert expand.column({"linspace": [10, 30, 5]}, where="", position=0).values == [10.0, 15.0, 20.0, 25.0, 30.0]
    columns = [expand.Column([1, 2]), expand.Column(["x", "y", "z"])]
    assert expand.combine(["a", "b"], columns, "grid") == [
        (1, "x"), (1, "y"), (1, "z"), (2, "x"), (2, "y"), (2, "z")]      # the first parameter varies slowest
    assert expand.combine(["a", "b"], [expand.Column([1, 2]), expand.Column([3, 4])], "zip") == [(1, 3), (2, 4)]


def test_random_draws_are_reproducible_and_independent():
    doc = {"diagram": gains(), "combine": "zip", "samples": 200, "seed": 5,
           "parameters": {"g.Gain": {"uniform": [2, 3]}, "src.Amplitude": {"uniform": [2, 3]},
                          "src.Frequency": {"normal": [10, 2], "samples": 200, "seed": 11}}}
    first, again = spec.load(doc), spec.load(copy.deepcopy(doc))
    assert first.runs == again.runs and first.fingerprint == again.fingerprint   # resume relies on it
    gain, amplitude, frequency = (np.array(p.values) for p in first.parameters)
    assert gain.min() >= 2 and gain.max() <= 3
    assert not np.array_equal(gain, amplitude)                    # own streams: [seed, position]
    assert np.array_equal(frequency, np.random.default_rng(11).normal(10, 2, 200))
    assert abs(frequency.mean() - 10) < 4 * 2 / math.sqrt(200)    # 4 standard errors
    doc["seed"] = 6
    assert spec.load(doc).fingerprint != first.fingerprint


# ----------------------------------------------------------------------------- distributions and designs

def _draws(entry):
    return np.array(expand.column(entry, where="/parameters/x", position=0).values)


def test_truncated_normal_and_lognormal_draws_follow_their_laws():
    cut = _draws({"truncnormal": [1.0, 2.0, 0.0, 1.5], "samples": 2000, "seed": 3})
    assert cut.min() >= 0.0 and cut.max() <= 1.5
    law = stats.truncnorm(-0.5, 0.25, loc=1.0, scale=2.0)
    assert stats.kstest(cut, law.cdf).pvalue > 1e-3
    logn = _draws({"lognormal": [0.5, 0.25], "samples": 2000, "seed": 4})
    assert (logn > 0).all() and stats.kstest(np.log(logn), stats.norm(0.5, 0.25).cdf).pvalue > 1e-3
    again = _draws({"lognormal": [0.5, 0.25], "samples": 2000, "seed": 4})
    assert np.array_equal(logn, again)
    assert np.array_equal(_draws({"lognormal": [0.0, 0.0], "samples": 3, "seed": 1}), [1.0, 1.0, 1.0])


def test_the_draws_check_their_arguments():
    for entry, why in (({"truncnormal": [0, 1, 2, 1], "samples": 2}, "lo <= hi"),
                       ({"truncnormal": [0, 0, 0, 1], "samples": 2}, "sigma > 0"),
                       ({"lognormal": [0, -1], "samples": 2}, "sigma >= 0"),
                       ({"lhs": [2, 1], "samples": 2}, "lo <= hi")):
        with pytest.raises(DiagramError, match=why) as info:
            expand.designs(["x"], [entry], [expand.column(entry, where="/parameters/x", position=0)])
        assert info.value.path.startswith("/parameters/x")


def _joint(kind, n=8, **extra):
    doc = {"diagram": gains(), "combine": "grid",
           "parameters": {"src.Amplitude": {kind: [1, 3], "samples": n, "seed": 2},
                          "src.Frequency": {kind: [10, 20], "samples": n, "seed": 2}, **extra}}
    return spec.load(doc)


def test_a_latin_hypercube_is_joint_over_the_parameters_that_share_it():
    """8 points, one in each eighth of each bound (the Latin property), zipped together
    even under grid: 8 runs, not 64."""
    loaded = _joint("lhs")
    assert len(loaded.runs) == 8
    a, f = (np.array(p.values) for p in loaded.parameters)
    assert sorted(np.floor((a - 1) / 2 * 8).astype(int)) == list(range(8))
    assert sorted(np.floor((f - 10) / 10 * 8).astype(int)) == list(range(8))
    assert [run[:2] for run in loaded.runs] == list(zip(a.tolist(), f.tolist()))
    expected = qmc.scale(qmc.LatinHypercube(2, seed=2).random(8), [1, 10], [3, 20])
    np.testing.assert_array_equal(np.column_stack([a, f]), expected)


def test_a_design_is_one_factor_of_the_grid():
    loaded = _joint("sobol", n=4, **{"g.Gain": [1, 2, 3]})
    assert len(loaded.runs) == 12
    assert len({run[:2] for run in loaded.runs}) == 4 and {run[2] for run in loaded.runs} == {1, 2, 3}


def test_sobol_and_halton_come_from_scipy_qmc_and_fill_the_box():
    for kind, sampler in (("sobol", qmc.Sobol(2, scramble=True, seed=2)), ("halton", qmc.Halton(2, seed=2))):
        loaded = _joint(kind, n=16)
        points = np.column_stack([p.values for p in loaded.parameters])
        np.testing.assert_allclose(points, qmc.scale(sampler.random(16), [1, 10], [3, 20]), rtol=1e-15)
        unit = (points - [1, 10]) / [2, 10]
        assert qmc.discrepancy(unit) < 0.05       # far below random points' (~0.1 at 16)


def test_designs_with_other_seeds_are_independent_and_samples_must_agree():
    doc = {"diagram": gains(), "combine": "zip",
           "parameters": {"src.Amplitude": {"lhs": [1, 3], "samples": 5, "seed": 1},
                          "src.Frequency": {"lhs": [1, 3], "samples": 5, "seed": 9}}}
    a, f = (p.values for p in spec.load(doc).parameters)
    assert a != f
    doc["parameters"]["src.Frequency"]["seed"] = 1
    doc["parameters"]["src.Frequency"]["samples"] = 6
    with pytest.raises(DiagramError, match="same 'samples'") as info:
        spec.load(doc)
    assert info.value.code == "length_mismatch"


def test_numpy_values_in_a_python_spec():
    doc = {"diagram": gains(), "parameters": {"g.Gain": np.linspace(1, 2, 5), "src.Amplitude": [np.float32(2.5)],
                                              "src.Frequency": [np.int64(3), 4]},
           "samples": np.int64(3), "seed": np.int32(1)}
    loaded = spec.load(doc)
    assert loaded.parameters[0].values == [1.0, 1.25, 1.5, 1.75, 2.0]
    assert loaded.parameters[2].values == [3, 4] and len(loaded.runs) == 10
    with pytest.raises(DiagramError) as info:
        spec.load({"diagram": gains(), "parameters": {"g.Gain": {1, 2}}})
    assert info.value.code == "spec_type"
