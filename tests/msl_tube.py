"""MSL regression comparison: the csv-compare "Rectangle" tube (modelica-tools/csv-compare
v2.0.3 semantics, with which the Modelica Association checks tools against the reference
results in fixtures/reference/msl/).

* Tube half sizes: ``dt = tol*max(t_end - t_start, |t_start|)`` and
  ``dy = tol*max(max(y) - min(y), |min(y)|, floor)`` from the reference's own extrema
  (``floor`` 1e-12 for v2.0.3, 1e-3 for v2.1+).
* The tube is the region swept by an axis-parallel rectangle of half sizes (dt, dy) moved
  along the reference polyline (event jumps are vertical segments).  Its upper curve at a
  time ``t`` is therefore ``max(y on the polyline over [t-dt, t+dt]) + dy``: the maximum of
  the reference points inside the window and of the polyline at the two window edges
  (the polyline is linear between points, so its extremes over the window are there).
  The lower curve is the mirror image.  This is the curve csv-compare builds from the
  rectangle corners (with its loop removal), evaluated exactly.
* The tested curve is checked at its own time points; points outside the reference time
  range are ignored.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TOL = 2e-3
REFERENCE_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "reference" / "msl"


def reference_path(name: str) -> Path:
    return REFERENCE_DIR / name


def read_reference(name: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Time column and every other column of a reference CSV (rows in file order)."""
    with open(reference_path(name), newline="") as fh:
        rows = list(csv.reader(fh))
    header = [h.strip().strip('"') for h in rows[0]]
    data = np.array([[float(v) for v in r] for r in rows[1:] if r], dtype=float)
    cols = {h: data[:, j] for j, h in enumerate(header)}
    return cols.pop("time"), cols


def tube_size(t_ref, y_ref, tol=TOL, floor=1e-12):
    t0, t1 = float(t_ref[0]), float(t_ref[-1])
    dt = tol * max(t1 - t0, abs(t0))
    lo, hi = float(np.min(y_ref)), float(np.max(y_ref))
    dy = tol * max(hi - lo, abs(lo), floor)
    return dt, dy


def _polyline_at(t_ref, y_ref, tau):
    """Both one-sided values of the polyline at times ``tau`` (NaN outside the range)."""
    left = np.full(tau.shape, np.nan)
    right = np.full(tau.shape, np.nan)
    inside = (tau >= t_ref[0]) & (tau <= t_ref[-1])
    ti = tau[inside]
    # left value: last point with t < tau interpolated to the first point with t >= tau
    i_r = np.searchsorted(t_ref, ti, side="left")          # first index with t_ref >= tau
    i_l = np.searchsorted(t_ref, ti, side="right") - 1     # last index with t_ref <= tau

    def interp(i0, i1, tt):
        t_a, t_b = t_ref[i0], t_ref[i1]
        y_a, y_b = y_ref[i0], y_ref[i1]
        w = np.where(t_b > t_a, (tt - t_a) / np.where(t_b > t_a, t_b - t_a, 1.0), 0.0)
        return y_a + w * (y_b - y_a)

    n = len(t_ref)
    a0 = np.clip(i_r - 1, 0, n - 1)
    b0 = np.clip(i_r, 0, n - 1)
    a1 = np.clip(i_l, 0, n - 1)
    b1 = np.clip(i_l + 1, 0, n - 1)
    left[inside] = np.where(t_ref[b0] == ti, y_ref[b0], interp(a0, b0, ti))
    right[inside] = np.where(t_ref[a1] == ti, y_ref[a1], interp(a1, b1, ti))
    return left, right


def tube_bounds(t_ref, y_ref, t_test, dt, dy):
    """Lower and upper tube curves at the test times (NaN where the tube is undefined)."""
    t_ref = np.asarray(t_ref, float)
    y_ref = np.asarray(y_ref, float)
    t_test = np.asarray(t_test, float)
    lo_i = np.searchsorted(t_ref, t_test - dt, side="left")
    hi_i = np.searchsorted(t_ref, t_test + dt, side="right")
    upper = np.full(t_test.shape, -np.inf)
    lower = np.full(t_test.shape, np.inf)
    # reference points inside the window: running max/min via a sparse loop over windows
    for k in range(len(t_test)):
        if hi_i[k] > lo_i[k]:
            seg = y_ref[lo_i[k]:hi_i[k]]
            upper[k] = seg.max()
            lower[k] = seg.min()
    for edge in (t_test - dt, t_test + dt):
        left, right = _polyline_at(t_ref, y_ref, edge)
        for val in (left, right):
            ok = ~np.isnan(val)
            upper[ok] = np.maximum(upper[ok], val[ok])
            lower[ok] = np.minimum(lower[ok], val[ok])
    outside = (t_test < t_ref[0]) | (t_test > t_ref[-1])
    upper = upper + dy
    lower = lower - dy
    upper[outside] = np.nan
    lower[outside] = np.nan
    return lower, upper


@dataclass
class TubeResult:
    signal: str
    passed: bool
    dt: float
    dy: float
    worst_margin: float          # min over points of distance to the nearer tube edge (<0: outside)
    worst_time: float
    n_points: int
    n_errors: int

    @property
    def relative_margin(self):
        """Worst margin as a fraction of the tube half-height (1 = on the reference)."""
        return self.worst_margin / self.dy


def compare(signal, t_ref, y_ref, t_test, y_test, tol=TOL, floor=1e-12) -> TubeResult:
    dt, dy = tube_size(t_ref, y_ref, tol, floor)
    lower, upper = tube_bounds(t_ref, y_ref, t_test, dt, dy)
    y_test = np.asarray(y_test, float)
    ok = ~np.isnan(lower)
    margin = np.minimum(upper[ok] - y_test[ok], y_test[ok] - lower[ok])
    errors = int(np.sum(margin < 0))
    j = int(np.argmin(margin)) if margin.size else 0
    return TubeResult(signal, errors == 0, dt, dy, float(margin[j]) if margin.size else np.inf,
                      float(np.asarray(t_test)[ok][j]) if margin.size else np.nan,
                      int(ok.sum()), errors)


def reference_events(t_ref, cols, signal):
    """``(t, before, after)`` for each duplicate-time row pair where ``signal`` changes."""
    y = cols[signal]
    out = []
    for i in range(1, len(t_ref)):
        if t_ref[i] == t_ref[i - 1] and y[i] != y[i - 1]:
            out.append((float(t_ref[i]), float(y[i - 1]), float(y[i])))
    return out
