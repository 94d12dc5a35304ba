"""The part contract: what a block or a physical island hands the solver-driven run when it
owns continuous state, zero-crossing surfaces or an algebraic unknown. Blocks build parts;
the engine (``engine.system``) drives them; neither needs the other to say what a part is.
"""
from __future__ import annotations

import math
from typing import Protocol

import numpy as np

# Solvers that own the continuous state of causal blocks (nflow's DERIVATIVE and
# ZERO_CROSSING phases); under discrete and ode1 those blocks keep nflow's fixed-step
# rules (forward Euler in UPDATE, RK4 for tf).
SOLVER_OWNED = ("ode4", "ode45", "dae")


class Part(Protocol):
    """One piece of the hybrid system a solver integrates. Its ``n_states`` entries of the
    diagram's state vector start at ``x0``; ``load(x)`` hands it its slice before the
    diagram is evaluated at a trial state, then the solver asks for the slice's derivative,
    its event functions (``g > 0`` relations), and at a located event for the state after
    it. ``initialize`` settles a consistent start; ``next_time_event`` is the next time at
    which the part changes discontinuously by itself (``math.inf`` if never). A part may
    also offer ``relation_values(t, x)`` (the relations behind its event functions, for
    diagnostics)."""

    key: str
    x0: np.ndarray
    n_states: int
    # derivative() returns a new array each call (never a view of something it keeps), so a
    # part holding the whole state may hand it to the solver without a copy
    fresh_derivative: bool

    def load(self, x) -> None: ...

    def derivative(self, t: float, x) -> np.ndarray: ...

    def event_functions(self, t: float, x) -> np.ndarray: ...

    def handle_events(self, t: float, x, fired): ...

    def initialize(self, t: float, x): ...

    def next_time_event(self, t: float) -> float: ...


class StatePart:
    """Continuous state owned by a causal block (integrator, transfer function, ...) when
    a solver integrates the diagram; also serves stateless blocks that only report
    zero-crossing surfaces (``n_states`` 0), so the solver restarts at their kinks.

    ``derivative()`` and ``surfaces()`` take no arguments: they read the block's inputs
    from the signal store (already evaluated for this time and state) and its state from
    ``self.x``; ``on_event(x)`` runs at every event, the initial one (``initialize``)
    included, and may re-initialize the state there."""

    fresh_derivative = False     # np.asarray may hand back the closure's own array
    # (input slot, output slot) when the state is the plain integral of one signal and the
    # output is the state itself (an integrator without limits or reset), else None
    integral_of: tuple | None = None

    def __init__(self, key: str, x0, derivative=None, surfaces=None, on_event=None):
        self.key = key
        self.x0 = np.atleast_1d(np.asarray(x0, dtype=float)).copy()
        self.n_states = self.x0.size
        self.x = self.x0.copy()
        self._derivative, self._surfaces, self._on_event = derivative, surfaces, on_event

    def load(self, x):
        self.x = x

    def derivative(self, t, x):
        return np.atleast_1d(np.asarray(self._derivative(), dtype=float)) if self._derivative else np.zeros(0)

    def event_functions(self, t, x):
        return np.atleast_1d(np.asarray(self._surfaces(), dtype=float)) if self._surfaces else np.zeros(0)

    def handle_events(self, t, x, fired):
        return self._on_event(np.array(x, dtype=float)) if self._on_event else x

    def initialize(self, t, x):
        return self.handle_events(t, x, ())

    def next_time_event(self, t):
        return math.inf


def crossing_part(io, surfaces, on_event=None):
    """Zero-crossing surfaces of a block without continuous state (saturation, deadZone,
    switch, a relay) under a solver that owns continuous state, so the integration
    restarts where they cross, and ``on_event(x) -> x`` run at every located event (a
    latch committing there); None otherwise (the fixed-step path has no surfaces, as in
    nflow)."""
    if io.solver not in SOLVER_OWNED or io.outs is None:
        return None
    return StatePart(io.id, np.zeros(0), surfaces=surfaces, on_event=on_event)


class AlgebraicPart:
    """An algebraic unknown z of the diagram (nflow's ``algebraicState``: a constraint
    block's output), determined by ``residual() == 0``. It is not integrated: it holds no
    entry of the solver's state vector (``n_states`` 0) and ``AlgebraicSolve`` sets ``z``
    at every evaluation. ``z`` doubles as the warm start of the next solve; the block
    resets it to its guess at INIT. ``residual()`` reads the block's input from the signal
    store (already evaluated for the trial ``z``)."""

    fresh_derivative = True

    def __init__(self, key: str, z0: float, residual, path: str | None = None):
        self.key = key
        self.z0 = self.z = float(z0)
        self.residual = residual
        self.path = path
        self.x0 = np.zeros(0)
        self.n_states = 0

    def load(self, x):
        pass

    def derivative(self, t, x):
        return np.zeros(0)

    def event_functions(self, t, x):
        return np.zeros(0)

    def handle_events(self, t, x, fired):
        return x

    def initialize(self, t, x):
        return x

    def next_time_event(self, t):
        return math.inf
