"""Newton's method, the one solver of every algebraic equation in the package: the
constraint blocks' ``g(x, z) = 0`` (``engine.algebraic.AlgebraicSolve``), the algebraic
part of a non-linear acausal island (``physical.acausal``: a non-linear circuit, the
massless nodes of a mechanism). Each caller owns its policy (start points, the error
weights, how far a step may go, the error it raises); the iteration is here.

The iteration: the Newton correction ``dz = J^-1 f`` with ``J`` analytic (``jacobian``)
or forward-differenced. Convergence is judged as DASSL and IDA judge their corrector: in
each unknown's own error weight ``w_i = rtol |z_i| + atol_i`` (``error_weights``; the size
of a correction is the largest ``|dz_i| / w_i``), so a node potential in volts and a
branch current in amperes are each measured against their own scale and never against
one another. A correction at most ``tol`` weights, taken with a Jacobian at that very
point (an older or secant one can misjudge a strongly curved residual), is applied and
the solve ends there; so does a residual that is exactly zero, or a correction below the
rounding of every unknown. With ``settle``, an iterate where Newton no longer gains has
converged, too, when every residual is within a few ulps of the terms it sums
(``settle(z)``, their magnitudes):
rounding, not Newton, then decides what is left of the correction, in an unknown the
equations barely hold (the common potential of a bridge rectifier's load while every
diode blocks, held by the junctions' 1e-12 S: 1e-18 A of rounding moves it by 1e-6 V).

How far a step goes: with ``limit`` the caller bounds it (the fraction of the correction
its devices accept: SPICE's junction limiting, ``physical.electrical``) and any finite
trial is taken, as SPICE takes its iterations: a residual norm over rows of mixed units
is no measure of progress, and an exponential's residual grows when its voltage steps the
right way. Without ``limit`` the step is halved until the largest residual decreases.
Either way a step to a point where the residual is not finite is halved. With
``broyden``, a step that at least halves the residual updates ``J`` by Broyden's
rank-one formula (the secant method in one unknown) instead of differencing again; a
slow step re-differences it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

SQRT_EPS = 1.4901161193847656e-08
_ROUNDING = 4.0 * np.finfo(float).eps    # a correction this small relative to |z_i| changes nothing
SETTLED = 16.0 * np.finfo(float).eps    # a residual within this of its terms' magnitude is rounding
STALLED = 0.5      # a correction shrinking less than this from the last one: Newton no longer gains


@dataclass
class NewtonResult:
    z: np.ndarray              # the solution (the last correction applied), else the last iterate
    f: np.ndarray              # the residual at the last iterate (before that correction)
    converged: bool
    singular: bool             # stopped on a singular (or non-finite) Jacobian
    best: np.ndarray           # the iterate with the smallest correction seen (in error weights)
    best_size: float           # that correction, in error weights (``norm``)
    jacobian: np.ndarray | None   # the last Jacobian (callers may start the next solve with it)
    iterations: int = 0        # Newton corrections computed


def error_weights(rtol: float, atol) -> Callable:
    """IDA's error weights ``w(z) = rtol |z| + atol`` (``atol`` a number or one per
    unknown)."""
    rtol = float(rtol)
    atol = np.asarray(atol, dtype=float)

    def weights(z) -> np.ndarray:
        return rtol * np.abs(z) + atol
    return weights


def difference_jacobian(residual: Callable, z, f, rel: float = SQRT_EPS, steps=None) -> np.ndarray:
    """Forward differences with steps ``rel * max(1, |z_j|)`` (or ``steps[j]``); a column
    that is not finite there (a residual undefined past a domain edge) is taken backward."""
    m = len(z)
    J = np.empty((len(f), m))
    for j in range(m):
        h = rel * max(1.0, abs(z[j])) if steps is None else float(steps[j])
        for sign in (1.0, -1.0):
            zp = np.array(z, dtype=float)
            zp[j] += sign * h
            col = (residual(zp) - f) / (zp[j] - z[j])
            if np.isfinite(col).all():
                break
        J[:, j] = col
    return J


def correction(J, f):
    """The Newton correction ``J^-1 f``, or None when J is singular or not finite. J is
    first scaled so that every row, then every column, has a largest entry of 1 (unknowns
    and rows of different units, a diode's 1e9 S beside a resistor's 1e3 V/A, make a
    regular J look singular); singular means a reciprocal condition number of the scaled J
    (LAPACK's estimate from its LU factors, which then solve) below 1e-14."""
    if J.shape[0] == 1:
        d = float(J[0, 0])
        dz = f / d if d != 0.0 and math.isfinite(d) else None
        return dz if dz is not None and np.isfinite(dz).all() else None
    magnitude = np.abs(J)
    rows = magnitude.max(axis=1)                 # NaN or inf anywhere shows in the rows' sum
    if not (math.isfinite(float(rows.sum())) and rows.min() > 0.0):
        return None
    cols = (magnitude / rows[:, None]).max(axis=0)
    if not cols.min() > 0.0:
        return None
    lapack = _lapack()
    lu, pivots, info = lapack.dgetrf(J / rows[:, None] / cols)
    # the scaled J's 1-norm is at most n (every entry within 1): a bound for the estimate
    rcond, info_c = lapack.dgecon(lu, float(len(rows)), norm="1")
    if info != 0 or info_c != 0 or not rcond >= 1e-14:
        return None
    y, info = lapack.dgetrs(lu, pivots, f / rows)
    dz = y / cols
    return dz if info == 0 and np.isfinite(dz).all() else None


def _lapack():
    """scipy's LAPACK wrappers, imported on first use (a causal run never solves)."""
    global _LAPACK
    if _LAPACK is None:
        from scipy.linalg import lapack
        _LAPACK = lapack
    return _LAPACK


_LAPACK = None


def newton(residual: Callable, z0, *, weights: Callable, tol: float, settle: Callable | None = None,
           jacobian: Callable | None = None, limit: Callable | None = None, max_iterations: int = 40,
           halvings: int = 12, broyden: bool = False, start_jacobian: np.ndarray | None = None,
           f0=None) -> NewtonResult:
    """Solve ``residual(z) = 0`` from ``z0`` (see the module doc). ``weights(z)``: the
    unknowns' error weights (``error_weights``); converged when the correction is at most
    ``tol`` of them, or with ``settle(z)`` (the magnitudes of the terms each residual
    sums) when the residual is rounding. ``jacobian(z)``: the analytic Jacobian, else differences; ``limit(z, dz)``: the
    largest fraction of the step ``z - dz`` to take (in (0, 1]), None for the
    residual-decrease test; ``start_jacobian``: a Jacobian to try first (the last
    solve's), differenced again when it fails; ``f0``: the residual at ``z0`` if known."""
    z = np.array(z0, dtype=float)
    f = residual(z) if f0 is None else np.asarray(f0, dtype=float)

    def fresh_jacobian(z, f):
        return jacobian(z) if jacobian is not None else difference_jacobian(residual, z, f)

    best, best_size = None, math.inf
    if not np.isfinite(f).all():
        return NewtonResult(z, f, False, False, z, math.inf, start_jacobian)
    if not f.any():
        return NewtonResult(z, f, True, False, z, 0.0, start_jacobian)
    J, fresh = (start_jacobian, False) if start_jacobian is not None else (fresh_jacobian(z, f), True)
    singular = False
    iterations = 0
    last = math.inf           # the size of the last correction
    for _ in range(max_iterations):
        dz = correction(J, f)
        if dz is None:
            if fresh:
                singular = True
                break
            J, fresh = fresh_jacobian(z, f), True
            continue
        iterations += 1
        w = weights(z)
        size = float(np.max(np.abs(dz) / w, initial=0.0))
        if size < best_size:
            best, best_size = z, size
        if size <= tol or bool(np.all(np.abs(dz) <= _ROUNDING * np.abs(z))):
            if fresh:
                z_new = z - dz
                return NewtonResult(z_new if np.isfinite(z_new).all() else z, f, True, False, z, size, J, iterations)
            J, fresh = fresh_jacobian(z, f), True
            continue
        # (the terms' magnitudes are looked at only once Newton has stopped gaining)
        if settle is not None and fresh and size > STALLED * last and _rounding(f, settle(z)):
            return NewtonResult(z, f, True, False, z, size, J, iterations)
        last = size
        lam = 1.0 if limit is None else min(1.0, float(limit(z, dz)))
        decrease = float(np.abs(f).max()) if limit is None else math.inf
        zn = None
        for _ in range(halvings):
            trial = z - lam * dz
            if np.isfinite(trial).all():
                fn = residual(trial)
                if np.isfinite(fn).all() and float(np.abs(fn).max()) < decrease:
                    zn = trial
                    break
            lam *= 0.5
        if zn is None:            # no step to a finite, better point
            if fresh:             # at the noise floor, or no root nearby
                if settle is not None and _rounding(f, settle(z)):
                    return NewtonResult(z, f, True, False, z, size, J, iterations)
                break
            J, fresh = fresh_jacobian(z, f), True
            continue
        contracted = float(np.abs(fn).max()) <= 0.5 * float(np.abs(f).max())
        s, y = zn - z, fn - f
        z, f = zn, fn
        if not f.any():
            return NewtonResult(z, f, True, False, z, 0.0, J, iterations)
        if broyden and contracted:
            J = J + np.outer(y - J @ s, s) / float(s @ s)
            fresh = False
        else:
            J, fresh = fresh_jacobian(z, f), True
    return NewtonResult(z, f, False, singular, z if best is None else best, best_size, J, iterations)


def _rounding(f, magnitudes) -> bool:
    """Whether every residual is within rounding (``SETTLED``) of its terms' magnitude."""
    return bool(np.all(np.abs(f) <= SETTLED * magnitudes))
