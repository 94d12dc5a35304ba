"""Algebraic unknowns of the diagram (constraint blocks) solved at every evaluation, so the
solver integrates an ODE in the states alone.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from .. import roots
from ..errors import SolveFailed
from .context import call_all


class AlgebraicSolve:
    """Reduces the semi-explicit index-1 DAE x' = f(t, x, z), 0 = g(t, x, z) to an ODE in x:
    every evaluation of the diagram (right-hand side, event functions, major step) first
    solves g = 0 for the algebraic unknowns z at the given (t, x), running OUTPUT and
    ALGEBRAIC side-effect free as the residual function, then evaluates the diagram at
    that z (committed at a major step). So each point the solver sees, and each recorded
    grid point, is on the constraint manifold.

    The solve: damped Newton from the last solution (the block's InitialCondition at the
    start) with a forward-difference Jacobian kept across solves, improved by Broyden
    updates after each step and recomputed when the residual stops halving. It stops when
    the Newton correction |J^-1 g|, with J differenced at that very point, is within
    ``TIGHT`` of each unknown's error weight ``relTol |z| + absTol`` (the diagram's
    tolerances, as the solver weighs the states; a test that does not depend on how g is
    scaled), the correction then applied, or when g is exactly 0. When Newton fails:
    scipy.optimize.root ('hybr', then 'lm' for several unknowns) and, for one unknown, a
    search for a sign change of g around the last z refined by brentq. Their result is
    accepted when its correction, with a Jacobian differenced over ``ACCEPT_STEP`` relative
    and at least ``ACCEPT_WEIGHTS`` weights (so that a jump of g across 0 is not taken for a
    root), is within ``LOOSE`` weights; otherwise the solve fails with
    ``constraint_unsolvable`` naming the blocks (a ``SolveFailed``: at a solver's trial
    point the step is retried smaller, see ``engine.hybrid``). Every path does a bounded
    number of residual evaluations (a few per solve when the solution moves smoothly)."""

    # in error weights relTol |z| + absTol: at the default tolerances (1e-6, 1e-8) a unit z
    # is solved to ~1e-12 and accepted to ~1e-7 (a double root, where Newton creeps, to the
    # ~1e-8 that rounding of g allows)
    TIGHT = 1e-6           # Newton's stopping test on the correction
    LOOSE = 0.1            # a point is accepted as a solution up to this correction
    MAX_NEWTON = 40        # Newton iterations per solve
    MAX_HALVINGS = 12      # step halvings of the damped Newton step
    ACCEPT_STEP = 1e-6     # difference step (relative) of the acceptance test's Jacobian ...
    ACCEPT_WEIGHTS = 1e3   # ... and at least this many weights: across a jump g/J is half the step
    BRACKET_STEPS = 48     # sign-change search: 1e-3 (1 + |z|) * 2^k, k < 48, on both sides

    def __init__(self, system, unknowns):
        self.sys = system
        self.ctx = system.ctx
        self.unknowns = unknowns
        self.m = len(unknowns)
        self.output = system.plan.output
        self.algebraic = system.plan.algebraic
        diagram = system.plan.diagram
        self.weights = roots.error_weights(diagram.rel_tol, diagram.abs_tol)
        self.jac = None        # the last Jacobian dg/dz (a cache, not state)
        self._at = None        # z of the last residual evaluation (what the store holds)
        self.evaluations = 0   # residual evaluations so far (diagnostics)

    # -- the residual --------------------------------------------------------------------
    def residual(self, z) -> np.ndarray:
        for part, v in zip(self.unknowns, z):
            part.z = float(v)
        call_all(self.output, self.algebraic)
        self._at = np.array(z, dtype=float)
        self.evaluations += 1
        return np.array([float(part.residual()) for part in self.unknowns])

    def _settle(self, z) -> np.ndarray:
        """Leave the parts and the signal store at ``z``."""
        if self._at is None or not np.array_equal(self._at, z):
            self.residual(z)
        return z

    def evaluate(self, t: float, x, committed: bool = False):
        """PlanSystem.evaluate with the algebraic unknowns solved first."""
        sysm, ctx = self.sys, self.ctx
        ctx.t = t
        ctx.side_effect_free = True
        for part, sl in zip(sysm.parts, sysm.slices):
            part.load(x[sl])
        self._at = None            # a new (t, x): the store no longer matches any z
        z = self._solve()
        if committed:
            ctx.side_effect_free = False
            call_all(self.output, self.algebraic)
        return z

    # -- the solve -----------------------------------------------------------------------
    def _solve(self) -> np.ndarray:
        z0 = np.array([part.z for part in self.unknowns])
        f0 = self.residual(z0)
        if np.isfinite(f0).all():
            if not f0.any():
                return z0
            z = self._newton(z0, f0)
            if z is not None:
                return self._settle(z)
        z = self._fallback(z0)
        if z is not None:
            return self._settle(z)
        self._fail(z0)

    def _newton(self, z, f):
        result = roots.newton(self.residual, z, weights=self.weights, tol=self.TIGHT,
                              max_iterations=self.MAX_NEWTON, halvings=self.MAX_HALVINGS, broyden=True,
                              start_jacobian=self.jac, f0=f)
        if result.converged:
            self.jac = result.jacobian
            return result.z
        if result.best_size <= self.LOOSE and self._accept(result.best):
            return result.best
        return None

    def _accept(self, z) -> bool:
        """Whether ``z`` solves g = 0 up to a Newton correction of LOOSE error weights."""
        z = np.asarray(z, dtype=float)
        if not np.isfinite(z).all():
            return False
        f = self.residual(z)
        if not np.isfinite(f).all():
            return False
        if not f.any():
            return True
        # A difference step well above the accepted correction: across a jump of g that
        # passes over 0 without a root, g/J is then about half that step, so it is refused.
        w = self.weights(z)
        steps = np.maximum(self.ACCEPT_STEP * np.maximum(1.0, np.abs(z)), self.ACCEPT_WEIGHTS * w)
        J = roots.difference_jacobian(self.residual, z, f, steps=steps)
        dz = roots.correction(J, f)
        if dz is None or float(np.max(np.abs(dz) / w)) > self.LOOSE:
            return False
        self.jac = J
        return True

    def _fallback(self, z0):
        numeric = (ArithmeticError, ValueError, np.linalg.LinAlgError)
        methods = ("hybr",) if self.m == 1 else ("hybr", "lm")
        for method in methods:
            try:
                res = optimize.root(self.residual, z0, method=method,
                                    options={"xtol": 1e-13, "maxfev": 200 * (self.m + 1)})
            except numeric:
                continue
            if self._accept(res.x):
                return np.array(res.x, dtype=float)
        if self.m == 1:
            return self._bracket(float(z0[0]))
        return None

    def _bracket(self, z0: float):
        """One unknown: the nearest sign change of g on either side of ``z0`` (steps doubling
        from 1e-3 (1 + |z0|)), refined by brentq."""

        def g(v):
            return float(self.residual(np.array([v]))[0])

        g0 = g(z0)
        step = 1e-3 * (1.0 + abs(z0))
        sides = [[z0, g0], [z0, g0]]
        for _ in range(self.BRACKET_STEPS):
            for side, sign in zip(sides, (1.0, -1.0)):
                a, ga = side
                b = z0 + sign * step
                gb = g(b)
                if math.isfinite(ga) and math.isinf(gb) and ga * gb < 0.0:
                    b, gb = self._finite_end(g, a, ga, b)   # g overflowed past its root
                if math.isfinite(ga) and math.isfinite(gb) and (ga == 0.0 or gb == 0.0 or ga * gb < 0.0):
                    lo, hi = (a, b) if a < b else (b, a)
                    try:
                        root = optimize.brentq(g, lo, hi, xtol=1e-15 * (1.0 + abs(lo) + abs(hi)),
                                               rtol=4.0 * np.finfo(float).eps, maxiter=200)
                    except (RuntimeError, ValueError, ArithmeticError):
                        root = None
                    if root is not None and self._accept([root]):
                        return np.array([root])
                    # a jump of g across 0 (no root): search on past it
                side[:] = [b, gb]
            step *= 2.0
        return None

    @staticmethod
    def _finite_end(g, a: float, ga: float, b: float):
        """Bisect towards ``a`` from a point ``b`` where g is infinite (of the other sign)
        to a point where g is finite; (b, g(b)) as found, possibly still infinite."""
        gb = math.inf
        for _ in range(64):
            c = 0.5 * (a + b)
            gc = g(c)
            if math.isfinite(gc) and gc * ga <= 0.0:
                return c, gc
            if math.isfinite(gc):
                a, ga = c, gc
            else:
                b = c
        return b, gb

    def _fail(self, z0):
        names = ", ".join(repr(part.key) for part in self.unknowns)
        f = self.residual(z0)
        first = self.unknowns[0]
        what = "constraint block" + ("s " if self.m > 1 else " ")
        raise SolveFailed(
            "constraint_unsolvable",
            f"{what}{names}: no z makes the residual input g zero at t = {self.ctx.t:.9g} "
            f"(g = {', '.join(f'{v:.6g}' for v in f)} at z = {', '.join(f'{v:.6g}' for v in z0)}); "
            "the equation g(x, z) = 0 has no real solution there, or g does not depend on z",
            block=first.key, path=first.path)


# ----------------------------------------------------------------------------- fast paths
