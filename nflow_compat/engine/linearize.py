"""nflow's ``linmod`` and ``trim``: the diagram as ``x' = f(x, u)``, ``y = g(x, u)`` about
an operating point, linearized by central differences, and its equilibria by Newton.

What nflow's pages specify and this follows:

* **x**: every continuous state — the causal continuous blocks' (integrators, transfer
  functions, state-space, ... inside subsystems too) and the physical islands' — about the
  post-INIT state (the diagram's initial conditions, after the start's event iteration that
  makes an island consistent) or a given ``x0``. The derivative is the one the variable-step
  solvers integrate (a ``discrete`` / ``ode1`` diagram is linearized under ``ode45``'s, where
  the causal blocks' states are solver-owned); discrete states stay at their INIT values.
  States are ordered by the block that carries them, in diagram order (an island by its first
  block), each block's own states in its order.
* **u**: the top-level ``labelSource`` blocks with ``isExternalPort`` true, in diagram order,
  at ``u0`` (zeros when absent); a plain labelSource (goto/from routing) is not an input.
* **y**: the signals entering the top-level ``labelSink`` blocks, in diagram order (a wide
  one gives one output per element).
* ``[A, B, C, D]`` = the Jacobians of ``f`` and ``g`` in ``x`` and ``u`` at time 0, by
  central differences with the step ``1e-5 (1 + |v|)`` per variable (the perturbation of
  MATLAB's ``linmod``; nflow's pages name central differences, not the step). A diagram
  with no state gives ``D`` alone (``A``, ``B``, ``C`` empty).
* ``trim``: Newton's iteration on ``f(x, u0) = 0`` with linmod's ``A`` as the Jacobian
  (``roots.newton``), from ``x0`` (the post-INIT state when absent); a linear model reaches
  ``x = -A \\ (B u0)`` in one step. It returns ``x``, ``u`` (= ``u0``), ``y`` and ``dx`` =
  ``f(x, u0)``, whose size says how close to an equilibrium it came; a search that does not
  converge says so (``converged`` false, and a warning) instead of failing.

An island whose states are the network's own unknowns (a node's position and speed, a
capacitor's potential) is linearized in them; an island whose states are combinations of its
unknowns (a capacitor loop) in those combinations, which its state names say.
"""
from __future__ import annotations

import dataclasses
from contextlib import contextmanager

import numpy as np

from .. import roots, run_warnings
from ..errors import DiagramError
from .context import call_all
from .plan import Plan
from .run import blamed_on_blocks
from .system import PlanSystem

# the relative perturbation of each variable: h = STEP * (1 + |v|)
STEP = 1e-5
# the solver whose right-hand side a diagram without one is linearized with
_FIXED_STEP = ("discrete", "ode1")
TRIM_TOLERANCE = 1e-12


@dataclasses.dataclass(frozen=True)
class Signal:
    """A state, input or output: its name and the block it belongs to."""
    name: str
    block: str


@dataclasses.dataclass(frozen=True)
class LinearModel:
    """``linmod``'s result: ``A, B, C, D = model`` unpacks the matrices."""
    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: np.ndarray
    states: tuple
    inputs: tuple
    outputs: tuple
    x0: np.ndarray
    u0: np.ndarray
    warnings: tuple = ()

    def __iter__(self):
        return iter((self.A, self.B, self.C, self.D))

    def to_dict(self) -> dict:
        return {"status": "ok", **{k: getattr(self, k).tolist() for k in ("A", "B", "C", "D", "x0", "u0")},
                **_names(self), "warnings": list(self.warnings)}


@dataclasses.dataclass(frozen=True)
class OperatingPoint:
    """``trim``'s result: ``x, u, y, dx = point`` unpacks it."""
    x: np.ndarray
    u: np.ndarray
    y: np.ndarray
    dx: np.ndarray
    converged: bool
    iterations: int
    states: tuple
    inputs: tuple
    outputs: tuple
    warnings: tuple = ()

    def __iter__(self):
        return iter((self.x, self.u, self.y, self.dx))

    def to_dict(self) -> dict:
        return {"status": "ok", **{k: getattr(self, k).tolist() for k in ("x", "u", "y", "dx")},
                "converged": self.converged, "iterations": self.iterations, **_names(self),
                "warnings": list(self.warnings)}


def _names(result) -> dict:
    return {kind: [dataclasses.asdict(s) for s in getattr(result, kind)] for kind in ("states", "inputs", "outputs")}


class Model:
    """A compiled diagram as ``f(x, u)`` (the state derivative) and ``g(x, u)`` (the
    outputs) at t = 0 after INIT; ``x`` and ``u`` in the order the module doc gives."""

    def __init__(self, diagram, limits=None, base_dir=None):
        if diagram.solver in _FIXED_STEP:
            diagram = dataclasses.replace(diagram, solver="ode45")
        # every closure runs at each evaluation (no grid-vectorized paths: the outputs are
        # read at arbitrary states)
        self.plan = plan = Plan(diagram, limits, base_dir=base_dir, closures_only=True)
        # the top level's model ports (a subsystem's own are wired through when it is flattened)
        role = {b.index: h.model_port(b) for b, h in zip(diagram.blocks, plan.handlers)
                if h.model_port is not None and b.path.count("/blocks/") == 1}
        sources = [b for b in diagram.blocks if role.get(b.index) == "input"]
        self.input_slots = [plan.output_slots[b.index][0] for b in sources]
        self.inputs = tuple(Signal(b.id, b.id) for b in sources)
        sinks = [b for b in diagram.blocks if role.get(b.index) == "output"]
        self.output_slots = [plan.input_slots[b.index][0] if plan.input_slots[b.index] else None for b in sinks]
        self._output_blocks = [b.id for b in sinks]
        with self._running():
            plan.S[:] = plan.initial_signals
            plan.ctx.reset()
            plan.budget.start()
            call_all(plan.init)
            self.system = system = PlanSystem(plan)
            owner = {id(p.part): i for i, p in enumerate(plan.phases) if p.part is not None}
            order = sorted(range(len(system.parts)), key=lambda k: owner[id(system.parts[k])])
            self._slices = [system.slices[k] for k in order]      # the system's slices in our order
            self.states = tuple(s for k in order for s in _state_names(plan, system.parts[k]))
            self.nx, self.nu = system.n, len(self.input_slots)
            u0 = np.zeros(self.nu)
            self._set_inputs(u0)
            self.x_init = self._ours(system.initialize(0.0, system.x0)) if system.n else np.zeros(0)
            self.outputs = tuple(self._output_names(self.x_init, u0))
        self.ny = len(self.outputs)

    @contextmanager
    def _running(self):
        """As a run: numpy's warnings off, Python's collected, a block's exception named."""
        with np.errstate(all="ignore"), run_warnings.captured(self.plan.ctx.warnings), blamed_on_blocks(self.plan):
            yield

    # the system orders its parts by key; ours is the diagram's
    def _ours(self, x_system):
        return np.concatenate([x_system[s] for s in self._slices]) if self._slices else np.zeros(0)

    def _system(self, x_ours):
        x = np.empty(self.nx)
        start = 0
        for s in self._slices:
            x[s] = x_ours[start:start + s.stop - s.start]
            start += s.stop - s.start
        return x

    def _set_inputs(self, u):
        S = self.plan.S
        for slot, value in zip(self.input_slots, u):
            S[slot] = float(value)

    def evaluate(self, x, u):
        """``(f(x, u), g(x, u))`` at t = 0: the derivative, then every block's OUTPUT and
        ALGEBRAIC (side-effect free) so that the sinks' inputs are current."""
        with self._running():
            self._set_inputs(u)
            xdot = self._ours(self.system.derivative(0.0, self._system(x))) if self.nx else np.zeros(0)
            self.plan.ctx.side_effect_free = True
            call_all(self.plan.output, self.plan.algebraic)
            return xdot, self._read_outputs()

    def _read_outputs(self) -> np.ndarray:
        S = self.plan.S
        values = [np.zeros(1) if slot is None else np.real(np.ravel(S[slot])).astype(float)
                  for slot in self.output_slots]
        return np.concatenate(values) if values else np.zeros(0)

    def _output_names(self, x, u):
        self._set_inputs(u)
        if self.nx:
            self.system.evaluate(0.0, self._system(x))
        self.plan.ctx.side_effect_free = True
        call_all(self.plan.output, self.plan.algebraic)
        for block, slot in zip(self._output_blocks, self.output_slots):
            n = 1 if slot is None else np.size(self.plan.S[slot])
            yield from (Signal(block if n == 1 else f"{block}[{k}]", block) for k in range(n))

    def point(self, x0, u0):
        """The operating point ``(x, u)``: the given values, checked, else the defaults."""
        x = self.x_init if x0 is None else _vector(x0, self.nx, "x0", "continuous states", self.states)
        u = np.zeros(self.nu) if u0 is None else _vector(u0, self.nu, "u0", "inputs (external-port labelSource "
                                                           "blocks)", self.inputs)
        return x, u

    def jacobians(self, x, u):
        """Central differences of (f, g) in x and in u: (A, B, C, D)."""
        A, C = self._columns(lambda e: (x + e, u), x)
        B, D = self._columns(lambda e: (x, u + e), u)
        return A, B, C, D

    def _columns(self, at, v):
        dF, dG = np.zeros((self.nx, v.size)), np.zeros((self.ny, v.size))
        for j in range(v.size):
            e = np.zeros(v.size)
            e[j] = STEP * (1.0 + abs(v[j]))
            (f_plus, g_plus), (f_minus, g_minus) = self.evaluate(*at(e)), self.evaluate(*at(-e))
            span = (v[j] + e[j]) - (v[j] - e[j])      # the step as the floats represent it
            dF[:, j], dG[:, j] = (f_plus - f_minus) / span, (g_plus - g_minus) / span
        return dF, dG

    def warnings(self) -> tuple:
        return tuple(self.plan.diagram.warnings) + tuple(dict.fromkeys(self.plan.ctx.warnings))


def linmod(model: Model, x0=None, u0=None) -> LinearModel:
    """[A, B, C, D] of ``model`` about (x0, u0) (the post-INIT state and zero inputs when
    absent)."""
    x, u = model.point(x0, u0)
    A, B, C, D = model.jacobians(x, u)
    return LinearModel(A, B, C, D, model.states, model.inputs, model.outputs, x, u, model.warnings())


def trim(model: Model, x0=None, u0=None) -> OperatingPoint:
    """An equilibrium ``f(x, u0) = 0`` of ``model`` by Newton's method from ``x0``."""
    x, u = model.point(x0, u0)
    warnings, steps = [], 0
    if model.nx:
        result = roots.newton(lambda z: model.evaluate(z, u)[0], x, jacobian=lambda z: model.jacobians(z, u)[0],
                              weights=roots.error_weights(TRIM_TOLERANCE, TRIM_TOLERANCE), tol=1.0)
        x = result.z if result.converged else result.best
        converged = result.converged
        # the Newton steps taken: the last correction of a converged solve only confirms it
        steps = max(0, result.iterations - 1) if converged else result.iterations
        if not converged:
            why = "the state Jacobian A is singular there" if result.singular else "Newton's iteration stalled"
            warnings.append(f"trim: no equilibrium found from x0 ({why}); x is the closest point reached, "
                            f"|dx| = {float(np.abs(model.evaluate(x, u)[0]).max()):.3g}")
    else:
        converged = True
    dx, y = model.evaluate(x, u)
    return OperatingPoint(x, u, y, dx, converged, steps, model.states, model.inputs, model.outputs,
                          model.warnings() + tuple(warnings))


def _state_names(plan, part) -> list:
    names = part.state_names() if hasattr(part, "state_names") else None
    if names is not None:
        return [Signal(name, block) for name, block in names]
    return [Signal(part.key if part.n_states == 1 else f"{part.key}[{k}]", part.key) for k in range(part.n_states)]


def _vector(values, n: int, name: str, what: str, names) -> np.ndarray:
    v = np.atleast_1d(np.asarray(values, dtype=float)).ravel()
    if v.size != n:
        listed = ", ".join(s.name for s in names[:8]) + (", ..." if len(names) > 8 else "")
        raise DiagramError("bad_operating_point", f"{name} has {v.size} value(s); the diagram has {n} {what}"
                           + (f": {listed}" if listed else ""), param=name)
    if not np.isfinite(v).all():
        raise DiagramError("bad_operating_point", f"{name} holds a value that is not finite", param=name)
    return v
