"""Newton's method, the one solver of every algebraic equation in the package: the
constraint blocks' ``g(x, z) = 0`` (``engine.algebraic.AlgebraicSolve``), the algebraic
part of a non-linear acausal island (``physical.acausal``: a non-linear circuit, the
massless nodes of a mechanism). Each caller owns its policy (start points, acceptance,
the error it raises); the iteration is here.

The iteration: the Newton correction ``J^-1 f`` with ``J`` analytic (``jacobian``) or
forward-differenced; the step halved until the largest residual decreases; converged when
the correction is below ``tol (1 + |z|)`` with a Jacobian taken at that very point (an
older or secant one can misjudge a strongly curved residual), or when the residual is
exactly zero. With ``broyden``, a step that at least halves the residual updates ``J`` by
Broyden's rank-one formula (the secant method in one unknown) instead of differencing
again; a slow step re-differences it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

SQRT_EPS = 1.4901161193847656e-08


@dataclass
class NewtonResult:
    z: np.ndarray              # the last iterate
    f: np.ndarray              # the residual there
    converged: bool
    singular: bool             # stopped on a singular (or non-finite) Jacobian
    best: np.ndarray           # the iterate with the smallest relative correction seen
    best_size: float           # that correction, relative to 1 + |z|
    jacobian: np.ndarray | None   # the last Jacobian (callers may start the next solve with it)


def difference_jacobian(residual: Callable, z, f, rel: float = SQRT_EPS) -> np.ndarray:
    """Forward differences with steps ``rel * max(1, |z_j|)``; a column that is not finite
    there (a residual undefined past a domain edge) is taken backward."""
    m = len(z)
    J = np.empty((len(f), m))
    for j in range(m):
        h = rel * max(1.0, abs(z[j]))
        for sign in (1.0, -1.0):
            zp = np.array(z, dtype=float)
            zp[j] += sign * h
            col = (residual(zp) - f) / (zp[j] - z[j])
            if np.isfinite(col).all():
                break
        J[:, j] = col
    return J


def correction(J, f):
    """The Newton correction ``J^-1 f`` (LU), or None when J is singular or not finite."""
    if not np.isfinite(J).all():
        return None
    if J.shape[0] == 1:
        d = J[0, 0]
        dz = f / d if d != 0.0 else None
    else:
        try:
            if np.linalg.cond(J) > 1e14:
                return None
            dz = np.linalg.solve(J, f)
        except np.linalg.LinAlgError:
            return None
    return dz if dz is not None and np.isfinite(dz).all() else None


def newton(residual: Callable, z0, *, jacobian: Callable | None = None, tol: float = 1e-12,
           max_iterations: int = 40, halvings: int = 12, broyden: bool = False,
           start_jacobian: np.ndarray | None = None, f0=None) -> NewtonResult:
    """Solve ``residual(z) = 0`` from ``z0`` (see the module doc). ``jacobian(z)``: the
    analytic Jacobian, else differences; ``start_jacobian``: a Jacobian to try first (the
    last solve's), differenced again when it fails; ``f0``: the residual at ``z0`` if known."""
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
    for _ in range(max_iterations):
        dz = correction(J, f)
        if dz is None:
            if fresh:
                singular = True
                break
            J, fresh = fresh_jacobian(z, f), True
            continue
        size = float(np.abs(dz).max(initial=0.0)) / (1.0 + float(np.abs(z).max(initial=0.0)))
        if size < best_size:
            best, best_size = z, size
        if size <= tol:
            if fresh:
                return NewtonResult(z, f, True, False, z, size, J)
            J, fresh = fresh_jacobian(z, f), True
            continue
        norm = float(np.abs(f).max())
        lam, zn = 1.0, None
        for _ in range(halvings):
            trial = z - lam * dz
            if np.isfinite(trial).all():
                fn = residual(trial)
                if np.isfinite(fn).all() and float(np.abs(fn).max()) < norm:
                    zn = trial
                    break
            lam *= 0.5
        if zn is None:            # no descent along the step
            if fresh:
                break             # at the noise floor, or no root nearby
            J, fresh = fresh_jacobian(z, f), True
            continue
        contracted = float(np.abs(fn).max()) <= 0.5 * norm
        s, y = zn - z, fn - f
        z, f = zn, fn
        if not f.any():
            return NewtonResult(z, f, True, False, z, 0.0, J)
        if broyden and contracted:
            J = J + np.outer(y - J @ s, s) / float(s @ s)
            fresh = False
        else:
            J, fresh = fresh_jacobian(z, f), True
    return NewtonResult(z, f, False, singular, z if best is None else best, best_size, J)
