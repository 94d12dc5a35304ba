"""Sweep parameter values and their combinations (nflow_compat.sweeps.expand): ranges, grid
and zip, reproducible random draws."""
from __future__ import annotations

import copy
import math

import numpy as np

from nflow_compat.sweeps import expand, spec
from tests.sweeps.sweep_specs import gains


# ----------------------------------------------------------------------------- values and runs

def test_ranges_grid_and_zip():
    # logspace counts decades (numpy's and MATLAB's convention): 10**0, 10**1, 10**2
    assert expand.values({"logspace": [0, 2, 3]}, where="", position=0) == [1.0, 10.0, 100.0]
    assert expand.values({"linspace": [10, 30, 5]}, where="", position=0) == [10.0, 15.0, 20.0, 25.0, 30.0]
    assert expand.combine(["a", "b"], [[1, 2], ["x", "y", "z"]], "grid") == [
        (1, "x"), (1, "y"), (1, "z"), (2, "x"), (2, "y"), (2, "z")]      # the first parameter varies slowest
    assert expand.combine(["a", "b"], [[1, 2], [3, 4]], "zip") == [(1, 3), (2, 4)]


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
