"""Python warnings raised inside a run (scipy's) land in the result's ``warnings``, never
on stderr, in every run and in every thread (nflow_compat/run_warnings.py)."""
from __future__ import annotations

import threading
import warnings

import nflow_compat as nc
from tests.util import blk, const, diagram, record, wire

RTOL_WARNING = "UserWarning: At least one element of `rtol` is too small"


def tiny_rtol(value: float = 1.0) -> dict:
    """scipy's LSODA warns that relTol 1e-20 is below what it can do (and raises it)."""
    return diagram([const(value), blk("i", "integrator"), record()], [wire("c", "i"), wire("i", "w")],
                   dt=0.1, duration=0.3, solver="dae", relTol=1e-20)


def test_scipy_warning_goes_into_the_result_not_stderr(capfd):
    shown_before = warnings.showwarning
    for _ in range(2):                      # every run records it, not only the first in the process
        result = nc.simulate(tiny_rtol())
        assert [w for w in result["warnings"] if w.startswith(RTOL_WARNING)], result["warnings"]
        assert abs(result["workspace"]["y"][-1][0] - 0.3) < 1e-9       # the run itself is unchanged
    assert capfd.readouterr().err == ""
    assert warnings.showwarning is shown_before


def test_overlapping_runs_in_threads_keep_their_own_warnings(capfd):
    results = {}

    def run(key, d):
        results[key] = nc.simulate(d)
    threads = [threading.Thread(target=run, args=(k, tiny_rtol(1.0 + k) if k % 2 else
                                                  diagram([const(k), record()], [wire("c", "w")], duration=0.2)))
               for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, result in results.items():
        warned = any(w.startswith(RTOL_WARNING) for w in result["warnings"])
        assert warned == bool(k % 2), (k, result["warnings"])
    assert capfd.readouterr().err == ""


def test_warnings_outside_runs_are_left_alone():
    nc.simulate(tiny_rtol())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("the caller's own", UserWarning)
    assert [str(w.message) for w in caught] == ["the caller's own"]
