"""nflow's fixed-step methods as ``scipy.integrate.OdeSolver`` subclasses: forward Euler
(``ode1``) and classical RK4 (``ode4``), stepped by the same loop as RK45 and LSODA
(``engine.hybrid``).

A fixed step lands on every time of its grid (the output grid) and on ``t_bound``: each
step ends at the first of the next grid time, ``t + step`` and ``t_bound`` (``t_bound``
when within a few ulps). A step ending within a few ulps of a grid time resumes from that
very time, and so does a solver started there (``t + step`` and ``k * dt`` may differ in
the last bit; nflow's grid is ``k * dt``). The dense output over a step is the method's
step from the step's start over the shorter interval, what nflow's fixed-step loop does
to place an event inside a step.

A ``StiffnessWatch`` (``engine.hybrid``), when given, is fed each step of the run:
RK4's stages 2 and 3 (and 3 and 4 when those are ``extreme``), forward Euler's start and
end rates (``observe_stiffness``).
"""
from __future__ import annotations

import numpy as np
from scipy.integrate import DenseOutput, OdeSolver

_EPS = float(np.finfo(float).eps)    # a Python float: numpy scalars are slow in arithmetic


def snap(t: float) -> float:
    """How close (s) a time counts as reaching ``t``: a few ulps of ``max(1, |t|)``."""
    return 8.0 * _EPS * max(1.0, abs(t))


class FixedStep(OdeSolver):
    """A method of fixed step ``step`` landing on the times of ``grid`` (see the module).
    ``stiffness``: the run's ``StiffnessWatch`` or None."""

    def __init__(self, fun, t0, y0, t_bound, *, step: float, grid, stiffness=None):
        self.grid = grid
        self.next = int(grid.searchsorted(t0, side="right"))   # the first grid time after t
        super().__init__(fun, self._on_grid(float(t0)), y0, t_bound, vectorized=False)
        self.h = float(step)
        self.stiffness = stiffness
        self.last = None            # (t, y, k1, t_next, y_next) of the last step
        # the first stage of the first step, evaluated before anything else looks at the
        # start (the order in which a system with warm starts is evaluated is kept)
        self.k1 = self.fun(self.t, self.y)
        self._start_rate(self.y, self.k1)

    def _on_grid(self, t: float) -> float:
        """``t``, or the grid time right after it when that is within a few ulps (then
        passed: ``next`` moves on)."""
        grid, k = self.grid, self.next
        while k < len(grid) and grid[k] <= t:
            k += 1
        if k < len(grid) and grid[k] - snap(grid[k]) <= t:
            t = float(grid[k])
            k += 1
        self.next = k
        return t

    def step(self):
        """One step; also without state (scipy's ``step`` jumps to ``t_bound`` then, while
        a fixed step walks there, so event functions of time alone are watched)."""
        if self.status != "running":
            raise RuntimeError("Attempt to step on a failed or finished solver.")
        self._step_impl()
        if self.direction * (self.t - self.t_bound) >= 0:
            self.status = "finished"

    def _step_impl(self):
        t, y = self._on_grid(self.t), self.y
        k1 = self.k1
        if k1 is None:
            k1 = self.fun(t, y)
            self._start_rate(y, k1)
        self.k1 = None
        landing = float(self.grid[self.next]) if self.next < len(self.grid) else np.inf
        t_next = min(landing, t + self.h, self.t_bound)
        if self.t_bound - t_next <= snap(self.t_bound):
            t_next = self.t_bound
        y_next = self._advance(t, y, t_next - t, k1, keep=True)
        self.last = (t, y, k1, t_next, y_next)
        self.t_old, self.t, self.y = t, t_next, y_next
        return True, None

    def _dense_output_impl(self):
        return PartialStep(self, *self.last)

    # -- the method -----------------------------------------------------------------------
    def _advance(self, t, y, tau, k1, keep=False):
        """The state a step ``tau`` from ``(t, y)`` with first stage ``k1`` reaches
        (``keep``: a step of the run, whose stages the stiffness watch may look at)."""
        raise NotImplementedError

    def _start_rate(self, y, k1):
        """The rate ``k1`` at the start ``y`` of a step, before it is taken."""

    def observe_stiffness(self, cut: bool):
        """Feed the last step to the stiffness watch, also one an event cuts (a method gone
        unstable may meet an event in every step)."""


class ForwardEuler(FixedStep):
    """``ode1``: ``y + tau f(t, y)``."""

    def _advance(self, t, y, tau, k1, keep=False):
        return y + tau * k1

    def _start_rate(self, y, k1):
        if self.stiffness is not None:
            self.stiffness.euler_next(y, k1)

    def observe_stiffness(self, cut: bool):
        # a step's end rate is the next step's first; a cut step has no next step, so it
        # is evaluated here
        t, y, k1, t_next, y_next = self.last
        if self.stiffness is None or not y_next.size:
            return
        tau = t_next - t
        if cut:
            self.stiffness.observe(self.fun, t, tau, y, y_next, k1, self.fun(t, y_next))
        else:
            self.stiffness.euler_step(self.fun, t, tau, y, y_next, k1)


class ClassicalRK4(FixedStep):
    """``ode4``: the classical fourth-order Runge-Kutta step."""

    def __init__(self, *args, **kwargs):
        self.stages = None          # (t + tau/2, y2, y3, k2, k3, y4, k4) of the last step of the run
        super().__init__(*args, **kwargs)

    def _advance(self, t, y, tau, k1, keep=False):
        fun = self.fun
        y2 = y + 0.5 * tau * k1
        k2 = fun(t + 0.5 * tau, y2)
        y3 = y + 0.5 * tau * k2
        k3 = fun(t + 0.5 * tau, y3)
        y4 = y + tau * k3
        k4 = fun(t + tau, y4)
        if keep:
            self.stages = (t + 0.5 * tau, y2, y3, k2, k3, y4, k4)
        return y + (tau / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)

    def observe_stiffness(self, cut: bool):
        t, _, _, t_next, y_next = self.last
        watch = self.stiffness
        if watch is None or not y_next.size:
            return
        t_mid, y2, y3, k2, k3, y4, k4 = self.stages
        watch.observe(self.fun, t_mid, t_next - t, y2, y3, k2, k3)
        if watch.extreme(t_next - t, y3, y4, k3, k4):
            # the last stage ran into a wall: looked at where it is, at the step's end
            # (stage 3's rate evaluated again there)
            watch.observe(self.fun, t_next, t_next - t, y4, y3, k4, k3, at_end=True)


class PartialStep(DenseOutput):
    """The state at a time inside a fixed step: the method's step from the step's start
    over the shorter interval (an instant asked twice is computed once)."""

    def __init__(self, solver: FixedStep, t, y, k1, t_next, y_next):
        super().__init__(t, t_next)
        self.solver, self.y, self.k1 = solver, y, k1
        self.known = {t_next: y_next}

    def _at(self, t: float):
        y = self.known.get(t)
        if y is None:
            y = self.known[t] = self.solver._advance(self.t_old, self.y, t - self.t_old, self.k1)
        return y

    def _call_impl(self, t):
        if t.ndim == 0:
            return self._at(float(t))
        return np.array([self._at(float(tt)) for tt in t], dtype=float).reshape(len(t), self.y.size).T
