"""nflow's Continuous library.

Only the fixed-step path is ported: with no solver owning the state, nflow integrates
in UPDATE (forward Euler; one RK4 step for tf) and the stateful outputs come from the
state before the step; blocks with direct feedthrough (pid, derivative, biproper tf,
stateSpace with D != 0) answer the current input in ALGEBRAIC. Each block declares its
continuous states (``Phases.continuous``) so that the solvers that would integrate them
(ode4, ode45, dae) report "unsupported" until they exist; ``discrete`` and ``ode1`` run
this path. derivative and delay own no continuous state (nflow samples them on the
grid under every solver).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import DiagramError
from ..parts import SOLVER_OWNED, AlgebraicPart, StatePart
from . import Phases, block, fit
from .discrete import StateSpace, initial_state, input_reader, input_slot, vector_reader

EDGE_KINDS = ("rising", "falling", "either")
RESET_KINDS = EDGE_KINDS + ("level",)


# ----------------------------------------------------------------------------- integrator

def _integrator_ports(params) -> tuple:
    """(reset kind or None, reset port or None, external-IC port or None). The extra
    ports follow the signal: the reset first when there is one, then the IC."""
    kind = params.get("ExternalReset", "none")
    kind = kind if kind in RESET_KINDS else None
    external = params.get("InitialConditionSource", "internal") == "external"
    reset_port = 1 if kind else None
    ic_port = (2 if kind else 1) if external else None
    return kind, reset_port, ic_port


def _integrator_width(block, in_widths):
    """As wide as the signal (port 0) and the external initial condition, which must
    agree when both are vectors; else as a vector InitialCondition; else 1. The reset
    line is read as a scalar (its element 0) whatever its width."""
    _, _, ic_port = _integrator_ports(block.params)
    ports = [0] + ([ic_port] if ic_port is not None else [])
    wide = {(p, in_widths[p]) for p in ports if p < len(in_widths) and in_widths[p] > 1}
    if len({w for _, w in wide}) > 1:
        desc = ", ".join(f"input {p} has width {w}" for p, w in sorted(wide))
        raise DiagramError("width_mismatch", f"block {block.id!r} (integrator): {desc}; the signal and the "
                           "external initial condition must have the same width or be scalar",
                           block=block.id, path=block.path)
    if wide:
        w = next(iter(wide))[1]
    else:
        n = int(getattr(block.params.get("InitialCondition"), "size", 1))
        w = n if n > 1 else 1
    return [w] * block.outputs


def _feedthrough_ports(block) -> frozenset:
    """Only a resettable integrator has an ALGEBRAIC phase, and it reads the reset line
    and the external initial condition there; the integrated signal never feeds through."""
    _, reset_port, ic_port = _integrator_ports(block.params)
    if reset_port is None:
        return frozenset()
    return frozenset(p for p in (reset_port, ic_port) if p is not None)


def _scalar_clamp(lo: float, hi: float):
    """min(max(x, lo), hi) with the C++ std::max / std::min argument order: NaN passes
    through, and lo > hi gives hi."""
    if lo == -np.inf and hi == np.inf:
        return lambda x: x

    def clamp(x):
        v = lo if x < lo else x
        return hi if hi < v else v
    return clamp


def _vector_clamp(lo: float, hi: float):
    """``_scalar_clamp`` element-wise (np.maximum would turn a NaN limit into NaN)."""
    if lo == -np.inf and hi == np.inf:
        return lambda x: x
    where = np.where

    def clamp(x):
        v = where(x < lo, lo, x)
        return where(hi < v, hi, v)
    return clamp


def _edge_rule(kind: str):
    """Whether the reset line moved from ``prev`` to ``cur`` across zero in direction
    ``kind``. ``prev`` is the last line value that was not 0 (zero latches the side it
    was reached from, so -1, 0, 1 is one rising edge and 1, 0, 1 is none), or the first
    sample's value."""
    if kind == "rising":
        return lambda prev, cur: prev <= 0.0 and cur > 0.0
    if kind == "falling":
        return lambda prev, cur: prev >= 0.0 and cur < 0.0
    return lambda prev, cur: (prev <= 0.0 and cur > 0.0) or (prev >= 0.0 and cur < 0.0)


@block("integrator", widths=_integrator_width, feedthrough=_feedthrough_ports, solver_role="state")
def integrator(io):
    """Forward-Euler integrator with optional saturation, external reset and external
    initial condition (nflow's fixed-step rule):

    * INIT: x = clamp(InitialCondition) (the parameter, even when the IC source is
      external: nflow reads the external IC only when resetting);
    * OUTPUT: y = clamp(x), the state from before the step, so y(0) = clamp(IC);
    * UPDATE: x = clamp(x + dt*u);
    * ExternalReset (input 1): 'rising' / 'falling' / 'either' fire on a zero crossing
      of the reset line (never on the first step); then this step's output is
      clamp(IC) (in ALGEBRAIC) and x = clamp(clamp(IC) + dt*u). 'level' holds
      y = x = clamp(IC) while the line is non-zero;
    * InitialConditionSource 'external': IC comes from the next input port (the
      parameter when that port is unconnected).

    An unconnected signal input reads 0; so does an unconnected reset line.
    """
    p = io.params
    kind, reset_port, ic_port = _integrator_ports(p)
    needed = 1 + (reset_port is not None) + (ic_port is not None)
    declared = io.block.inputs
    w = io.width
    if not io.outs:
        return Phases(continuous=w)
    S, o, ctx = io.S, io.outs[0], io.ctx
    dt = float(ctx.dt)
    lo, hi = float(p["LowerSaturationLimit"]), float(p["UpperSaturationLimit"])
    note = None
    if declared < needed:
        roles = ["the reset line" if reset_port is not None else None,
                 "the initial condition" if ic_port is not None else None]
        note = (f"integrator {io.id!r} declares {declared} input(s) but its parameters use {needed} "
                f"(signal, {', '.join(r for r in roles if r)}); the missing port(s) read as unconnected")
    i = input_slot(io, 0)
    r = input_slot(io, reset_port) if reset_port is not None else None
    icslot = input_slot(io, ic_port) if ic_port is not None else None
    seed = io.initial("InitialCondition", w)

    if w == 1:
        clamp = _scalar_clamp(lo, hi)
        if i is None:
            def signal():
                return 0.0
        else:
            def signal():
                return S[i]
        if icslot is None:
            def initial():
                return seed
        else:
            def initial():
                return S[icslot]
    else:
        clamp = _vector_clamp(lo, hi)
        signal = vector_reader(io, 0, w)
        initial = vector_reader(io, ic_port, w) if icslot is not None else (lambda: seed)
    x0 = clamp(seed)
    reset = _ResetLine(io, kind, reset_port, r) if kind is not None else None

    def init_note():
        if note:
            ctx.warnings.append(note)

    if io.solver in SOLVER_OWNED:
        return _integrator_under_solver(io, x0, signal, initial, clamp, lo, hi, reset, init_note)
    x = x0

    def output():
        S[o] = x

    if reset is None:
        def init():
            nonlocal x
            x = x0
            init_note()

        if w == 1 and i is not None and lo == -np.inf and hi == np.inf:
            def update():
                nonlocal x
                x = x + dt * S[i]
        else:
            def update():
                nonlocal x
                x = clamp(x + dt * signal())
        return Phases(init=init, output=output, update=update, continuous=w)

    # ---- resettable integrator
    def init():
        nonlocal x
        x = x0
        reset.init()
        init_note()

    def algebraic():
        # The reset line is settled here (topological order): a reset reports the
        # initial condition in this very step. Solver sub-evaluations leave OUTPUT's value.
        if not ctx.side_effect_free and reset.active():
            S[o] = clamp(initial())

    def update():
        nonlocal x
        u = signal()
        if reset.active():
            base = clamp(initial())
            x = base if reset.level else clamp(base + dt * u)
        else:
            x = clamp(x + dt * u)
        reset.commit()

    return Phases(init=init, output=output, algebraic=algebraic, update=update, continuous=w)


class _ResetLine:
    """An integrator's external reset line: 'level' resets while the line is non-zero;
    'rising' / 'falling' / 'either' on a crossing of zero against the last non-zero line
    value (zero latches the side it was reached from), never on the first step."""

    def __init__(self, io, kind, port, slot):
        S = io.S
        self.level = kind == "level"
        self.edge = None if self.level else _edge_rule(kind)
        if slot is None:
            self.line = lambda: 0.0
        elif io.in_widths[port] > 1:
            self.line = lambda: float(S[slot][0])
        else:
            self.line = lambda: S[slot]
        self.init()

    def init(self):
        self.prev, self.primed = 0.0, False

    def active(self) -> bool:
        value = self.line()
        return value != 0.0 if self.level else self.primed and self.edge(self.prev, value)

    def commit(self):
        value = self.line()
        if not self.primed or value != 0.0:
            self.prev = value
        self.primed = True


def _held_at_limits(x, u, lo: float, hi: float):
    """An integral's rate under a solver (nflow's integrator DERIVATIVE): u, but 0 where
    x sits on a limit and u pushes outward."""
    return np.where(((x >= hi) & (u > 0.0)) | ((x <= lo) & (u < 0.0)), 0.0, u)


def _integrator_under_solver(io, x0, signal, initial, clamp, lo, hi, reset, init_note):
    """The state joins the solver's state vector (nflow's DERIVATIVE and ZERO_CROSSING):
    x' = u, held at 0 while x sits on a limit and u pushes outward (and while a 'level'
    reset is active); surfaces x - lo and x - hi for finite limits so the solver restarts
    where a limit is reached; y = clamp(x). A reset re-seeds the state at the grid point
    where it is seen."""
    S, o, ctx = io.S, io.outs[0], io.ctx
    w = io.width
    bounds = [b for b in (lo, hi) if math.isfinite(b)]

    def derivative():
        u = _held_at_limits(part.x, signal(), lo, hi)
        if reset is not None and reset.level and reset.active():
            u = np.zeros(w)
        return u

    def surfaces():
        return np.concatenate([part.x - b for b in bounds])

    part = StatePart(io.id, x0, derivative=derivative, surfaces=surfaces if bounds else None)
    if reset is None and not bounds and w == 1 and io.ins[0] is not None:
        part.integral_of = (io.ins[0], o)     # x' = u, y = x exactly: what engine.batch evaluates on arrays

    if w == 1:
        def output():
            S[o] = clamp(float(part.x[0]))
    else:
        def output():
            S[o] = clamp(part.x.copy())
    if reset is None:
        return Phases(init=init_note, output=output, part=part)

    def init():
        reset.init()
        init_note()

    def algebraic():
        if not ctx.side_effect_free and reset.active():
            S[o] = clamp(initial())

    def update():
        if reset.active():
            part.x[:] = clamp(initial())   # re-seeded in the solver's state at this grid point
        reset.commit()
    return Phases(init=init, output=output, algebraic=algebraic, update=update, part=part)


# ----------------------------------------------------------------------------- shared helpers

# ----------------------------------------------------------------------------- under a solver

def _lti_under_solver(io, A, B, C, D, x0, per_element: bool):
    """x' = A x + B u, y = C x + D u with the state owned by the solver. ``per_element``:
    A..D describe one SISO system applied to every element of a width-w signal (tf, lpf,
    hpf); otherwise they are the block's MIMO matrices (stateSpace). D != 0 answers the
    current input in ALGEBRAIC (direct feedthrough), else y = C x in OUTPUT."""
    w = io.width
    if per_element and w > 1:
        eye = np.eye(w)
        A, B, C, D = np.kron(eye, A), np.kron(eye, B), np.kron(eye, C), np.kron(eye, D)
        x0 = np.tile(x0, w)
    nu = B.shape[1]
    u_of = vector_reader(io, 0, nu)
    part = StatePart(io.id, x0, derivative=lambda: A @ part.x + B @ u_of())
    S, o = io.S, io.outs[0]
    scalar = w == 1
    direct = bool(np.any(D != 0.0))

    def emit(y):
        S[o] = float(y[0]) if scalar else y

    def output():
        emit(C @ part.x)

    def algebraic():
        emit(C @ part.x + D @ u_of())
    return Phases(output=output, algebraic=algebraic if direct else None, part=part, feedthrough=direct)


# ----------------------------------------------------------------------------- tf

def _trim(coeffs: list) -> list:
    """Drop leading coefficients with |c| < 1e-12, keeping at least one."""
    i = 0
    while i + 1 < len(coeffs) and abs(coeffs[i]) < 1e-12:
        i += 1
    return coeffs[i:]


class TransferFunction:
    """nflow's controller canonical (companion) form of num(s)/den(s): both lists trimmed
    of leading (near-)zero coefficients (an empty numerator is [0], an empty denominator
    [1]) and normalized by den[0]; n = len(den) - 1 states; the numerator left-padded to
    n + 1; D = num[0], C[n-1-i] = num[i+1] - den[i+1]*D, A[j] = -den[n-j]. Then
    x'[i] = x[i+1] (i < n-1), x'[n-1] = u + sum_j A[j] x[j], and y = D u + sum_i C[i] x[i]."""

    def __init__(self, num, den):
        num = _trim([float(v) for v in np.atleast_1d(np.asarray(num, dtype=float)).reshape(-1)] or [0.0])
        den = _trim([float(v) for v in np.atleast_1d(np.asarray(den, dtype=float)).reshape(-1)] or [1.0])
        self.valid = den[0] != 0.0 and math.isfinite(den[0])
        self.improper = len(num) > len(den)
        a0 = den[0] if self.valid else 1.0
        den = [v / a0 for v in den]
        num = [v / a0 for v in num]
        self.n = n = len(den) - 1
        if n <= 0:
            self.n, self.D, self.C, self.A = 0, (num[0] if num else 0.0), [], []
            return
        num = [0.0] * max(0, n + 1 - len(num)) + num
        tail = den[1:]
        self.D = D = num[0]
        self.C = [0.0] * n
        for i in range(n):
            self.C[n - 1 - i] = num[i + 1] - tail[i] * D
        self.A = [-tail[n - 1 - j] for j in range(n)]

    def derivative(self, x: list, u) -> list:
        last = u
        for a, xj in zip(self.A, x):
            last = last + a * xj
        return x[1:] + [last]

    def output(self, x: list, u):
        y = self.D * u
        for c, xi in zip(self.C, x):
            y = y + c * xi
        return y

    def state_output(self, x: list):
        """C x alone (the output of a strictly proper system, D = 0)."""
        y = 0.0
        for c, xi in zip(self.C, x):
            y = y + c * xi
        return y

    def rk4(self, x: list, u, dt: float) -> list:
        """One classical RK4 step of x' = f(x, u) with u held over the step."""
        f = self.derivative
        k1 = f(x, u)
        k2 = f([xi + 0.5 * dt * ki for xi, ki in zip(x, k1)], u)
        k3 = f([xi + 0.5 * dt * ki for xi, ki in zip(x, k2)], u)
        k4 = f([xi + dt * ki for xi, ki in zip(x, k3)], u)
        h = dt / 6.0
        return [xi + h * (a + 2.0 * b + 2.0 * c + d) for xi, a, b, c, d in zip(x, k1, k2, k3, k4)]


def _tf_of(block) -> TransferFunction:
    return TransferFunction(block.params.get("Numerator", [3.0]), block.params.get("Denominator", [1.0, 3.0]))


def _tf_feedthrough(block) -> bool:
    """A pure gain (no state) or a biproper tf (D != 0) answers the current input."""
    tf = _tf_of(block)
    return tf.n == 0 or tf.D != 0.0


@block("tf", feedthrough=_tf_feedthrough, solver_role="state")
def tf(io):
    """Continuous transfer function Numerator(s)/Denominator(s) in controller canonical
    form (see ``TransferFunction``), integrated by one classical RK4 step per dt with the
    input held (nflow's fixed-step rule); states start at 0. Element-wise for vectors
    (independent systems with the same coefficients). An unconnected input reads 0.

    * strictly proper (D = 0): y = C x in OUTPUT, from the state before the step, so the
      block breaks algebraic loops;
    * biproper (D != 0): y = C x + D u(t_k) with the CURRENT input, in ALGEBRAIC. nflow's
      handler forms D u in OUTPUT from the input slot, which on its fixed-step path still
      holds a value from before this step's algebraic wave (semantics.md section 2); its
      solver path re-runs OUTPUT after the wave and its generated code uses u(t_k). The
      current input is what both of those, and the transfer function itself, mean;
    * no state (Denominator of degree 0): y = D u in ALGEBRAIC, as nflow.

    A zero Denominator is an error (nflow silently outputs 0); a Numerator of higher
    degree than the Denominator (improper) keeps only its first len(Denominator)
    coefficients, as nflow's construction does, and warns."""
    model = TransferFunction(io.params["Numerator"], io.params["Denominator"])
    if not model.valid:
        io.fail("param_value", "Denominator must have a nonzero (finite) leading coefficient", "Denominator")
    w = io.width
    n = model.n
    if not io.outs:
        return Phases(continuous=n * w)
    S, o, ctx = io.S, io.outs[0], io.ctx
    dt = float(ctx.dt)
    u_of = input_reader(io, w)
    zero = fit(0.0, w)
    note = (f"tf {io.id!r}: the Numerator has a higher degree than the Denominator (improper); only its "
            f"first {n + 1} coefficients are used") if model.improper else None
    init_note = _note_at_init(io.ctx, note)
    if n == 0:
        gain = model.D

        def algebraic():
            S[o] = gain * u_of()
        return Phases(init=init_note, algebraic=algebraic)
    if io.solver in SOLVER_OWNED:
        A = np.zeros((n, n))
        A[np.arange(n - 1), np.arange(1, n)] = 1.0
        A[n - 1, :] = model.A
        B = np.zeros((n, 1))
        B[n - 1, 0] = 1.0
        phases = _lti_under_solver(io, A, B, np.array([model.C]), np.array([[model.D]]), np.zeros(n), True)
        phases.init = init_note
        return phases
    x = [zero] * n

    def init():
        nonlocal x
        x = [zero] * n
        if init_note:
            init_note()

    def update():
        nonlocal x
        x = model.rk4(x, u_of(), dt)

    if model.D == 0.0:
        def output():
            S[o] = model.state_output(x)
        return Phases(init=init, output=output, update=update, continuous=n * w)

    def algebraic():
        S[o] = model.output(x, u_of())
    return Phases(init=init, algebraic=algebraic, update=update, continuous=n * w)


def _note_at_init(ctx, note):
    if not note:
        return None

    def init():
        ctx.warnings.append(note)
    return init


# ----------------------------------------------------------------------------- stateSpace

def _ss_nu(in_widths) -> int:
    return max(1, in_widths[0] if in_widths else 0)


def _ss_width(block, in_widths):
    return [StateSpace(block.params, _ss_nu(in_widths)).ny] * block.outputs


def _ss_feedthrough(block) -> bool:
    """D != 0: nflow re-emits y = C x + D u in ALGEBRAIC with the current input."""
    return bool(np.any(np.asarray(block.params.get("D", 0.0), dtype=float) != 0.0))


@block("stateSpace", widths=_ss_width, feedthrough=_ss_feedthrough, solver_role="state")
def state_space(io):
    """x' = A x + B u, y = C x + D u with A nx x nx, B nx x nu, C ny x nx, D ny x nu
    (row-major; nx = round(sqrt(len(A))), nu = the input width, ny = len(C)/nx; short
    matrices zero-padded), x starting at InitialCondition (scalar broadcast / list).
    Fixed-step path, as nflow: OUTPUT y = C x + D u_prev (x before the step, the input
    latched by the previous UPDATE, 0 at first); when D != 0, ALGEBRAIC re-emits
    y = C x + D u with the current input; UPDATE x += dt*(A x + B u), then latches u. A
    scalar A/B/C/D with a vector input uses only its first element (B is nx x nu).
    An unconnected input reads 0."""
    p = io.params
    nu = _ss_nu(io.in_widths)
    ss = StateSpace(p, nu)
    if not io.outs:
        return Phases(continuous=ss.nx)
    if io.solver in SOLVER_OWNED:
        return _lti_under_solver(io, ss.A, ss.B, ss.C, ss.D, initial_state(p, ss.nx), False)
    S, o, ctx, w = io.S, io.outs[0], io.ctx, io.width
    dt = float(ctx.dt)
    u_of = vector_reader(io, 0, nu)
    x0 = initial_state(p, ss.nx)
    x, u_prev = x0, np.zeros(nu)
    scalar_out = w == 1

    def emit(y):
        S[o] = float(y[0]) if scalar_out else y

    def init():
        nonlocal x, u_prev
        x, u_prev = x0, np.zeros(nu)

    def output():
        emit(ss.output(x, u_prev))

    def update():
        nonlocal x, u_prev
        u = u_of()
        x = x + dt * ss.derivative(x, u)
        u_prev = np.array(u, dtype=float)

    algebraic = None
    if ss.any_d:
        def algebraic():
            emit(ss.output(x, u_of()))
    return Phases(init=init, output=output, algebraic=algebraic, update=update, continuous=ss.nx)


# ----------------------------------------------------------------------------- filters

def _cutoff(io) -> float:
    """wc = 2*pi*max(0, Cutoff) (Cutoff in Hz; NaN reads as 0, like std::max)."""
    fc = float(io.params["Cutoff"])
    return 2.0 * math.pi * max(0.0, fc)


@block("lpf", feedthrough=False, solver_role="state")
def lpf(io):
    """First-order low-pass x' = wc (u - x), wc = 2*pi*Cutoff, by forward Euler in UPDATE:
    x += dt*wc*(u - x); the output is x from before the step (0 at the first sample), so
    the block breaks algebraic loops. Element-wise; an unconnected input reads 0."""
    w = io.width
    if not io.outs:
        return Phases(continuous=w)
    if io.solver in SOLVER_OWNED:   # x' = wc (u - x), y = x
        wc = _cutoff(io)
        return _lti_under_solver(io, np.array([[-wc]]), np.array([[wc]]), np.eye(1), np.zeros((1, 1)),
                                 np.zeros(1), True)
    S, o, ctx = io.S, io.outs[0], io.ctx
    k = float(ctx.dt) * _cutoff(io)
    u_of = input_reader(io, w)
    zero = fit(0.0, w)
    x = zero

    def init():
        nonlocal x
        x = zero

    def output():
        S[o] = x

    def update():
        nonlocal x
        x = x + k * (u_of() - x)
    return Phases(init=init, output=output, update=update, continuous=w)


@block("hpf", feedthrough=False, solver_role="state")
def hpf(io):
    """First-order high-pass, the complement of lpf's state: UPDATE x += dt*wc*(u - x) and
    latches u - x (with the updated x); OUTPUT emits that latch, so y[k] = u[k-1] - x[k]
    and y[0] = 0 (nflow's fixed-step timing). Element-wise; unconnected input reads 0."""
    w = io.width
    if not io.outs:
        return Phases(continuous=w)
    if io.solver in SOLVER_OWNED:   # x' = wc (u - x), y = u - x (direct feedthrough)
        wc = _cutoff(io)
        return _lti_under_solver(io, np.array([[-wc]]), np.array([[wc]]), -np.eye(1), np.eye(1),
                                 np.zeros(1), True)
    S, o, ctx = io.S, io.outs[0], io.ctx
    k = float(ctx.dt) * _cutoff(io)
    u_of = input_reader(io, w)
    zero = fit(0.0, w)
    x = latch = zero

    def init():
        nonlocal x, latch
        x = latch = zero

    def output():
        S[o] = latch

    def update():
        nonlocal x, latch
        u = u_of()
        x = x + k * (u - x)
        latch = u - x
    return Phases(init=init, output=output, update=update, continuous=w)


# ----------------------------------------------------------------------------- derivative, pid

@block("derivative", feedthrough=True)
def derivative(io):
    """Backward difference (u[k] - u[k-1]) * (1/max(dt, 1e-6)) of the current input, in
    ALGEBRAIC; 0 at the first sample (the previous input is primed with the first one).
    UPDATE stores the input. A solver's side-effect-free sub-evaluation replays the value
    of the last committed pass (a hold between samples). No continuous state: it runs
    the same under every solver. An unconnected input reads 0."""
    if not io.outs:
        return Phases()
    S, o, ctx, w = io.S, io.outs[0], io.ctx, io.width
    inv_dt = 1.0 / max(float(ctx.dt), 1e-6)
    u_of = input_reader(io, w)
    zero = fit(0.0, w)
    prev, primed, held = zero, False, zero

    def init():
        nonlocal prev, primed, held
        prev, primed, held = zero, False, zero

    def algebraic():
        nonlocal held
        if ctx.side_effect_free:
            S[o] = held
            return
        u = u_of()
        y = (u - (prev if primed else u)) * inv_dt
        held = y    # an output cache for sub-evaluations, not state
        S[o] = y

    def update():
        nonlocal prev, primed
        prev, primed = u_of(), True
    return Phases(init=init, algebraic=algebraic, update=update)


@block("pid", feedthrough=True, solver_role="state")
def pid(io):
    """y = P u + I clamp(s + u dt) + D d, with s the integral committed so far (so the
    output includes this step's contribution) clamped to [LowerSaturationLimit,
    UpperSaturationLimit] (the limits bound the integral only), and d the derivative:
    ideal (N <= 0, or not finite) (u - u_prev)/max(dt, 1e-6) with u_prev starting at 0
    (a u(0)/dt kick at the first sample, as nflow), or filtered N (u - f) with
    f += dt N (u - f). UPDATE commits s = clamp(s + u dt) and u_prev / f. Element-wise;
    an unconnected input reads 0."""
    p = io.params
    kp, ki, kd, n_f = float(p["P"]), float(p["I"]), float(p["D"]), float(p["N"])
    lo, hi = float(p["LowerSaturationLimit"]), float(p["UpperSaturationLimit"])
    filtered = n_f > 0.0 and math.isfinite(n_f)
    w = io.width
    states = w * (2 if filtered else 1)
    if not io.outs:
        return Phases(continuous=states)
    if io.solver in SOLVER_OWNED:
        return _pid_under_solver(io, kp, ki, kd, n_f if filtered else None, lo, hi)
    S, o, ctx = io.S, io.outs[0], io.ctx
    dt = float(ctx.dt)
    inv = max(dt, 1e-6)
    clamp = _scalar_clamp(lo, hi) if w == 1 else _vector_clamp(lo, hi)
    u_of = input_reader(io, w)
    zero = fit(0.0, w)
    integral = last = zero    # last: the previous input (ideal) or the filter state

    def init():
        nonlocal integral, last
        integral = last = zero

    if filtered:
        def deriv(u):
            return n_f * (u - last)
    else:
        def deriv(u):
            return (u - last) / inv

    def algebraic():
        u = u_of()
        S[o] = kp * u + ki * clamp(integral + u * dt) + kd * deriv(u)

    def update():
        nonlocal integral, last
        u = u_of()
        integral = clamp(integral + u * dt)
        last = last + dt * n_f * (u - last) if filtered else u
    return Phases(init=init, algebraic=algebraic, update=update, continuous=states)


def _pid_under_solver(io, kp, ki, kd, n_f, lo, hi):
    """nflow's solver path (DERIVATIVE, ALGEBRAIC, UPDATE), element-wise: the integral
    s is a solver state, s' = u; the output answers the current input,
    y = P u + I clamp(s) + D d, with d = N (u - f) and a filter state f' = N (u - f)
    when ``n_f`` (a finite N > 0) is given, else the ideal backward difference
    d = (u - u_prev)/max(dt, 1e-6) against the input committed at the last grid point
    (u_prev from 0, as on the fixed-step path; UPDATE latches it).

    The limits bound the integral as on the fixed-step path and for the integrator under
    a solver: s' is held at 0 while s sits on a limit and u pushes outward, the surfaces
    s - lo and s - hi restart the solver where a limit is reached, and I clamp(s) is
    used. (nflow's interpreter ignores the limits under a solver; its generated
    variable-step code holds and clamps like this.) With D = 0 the derivative term and
    its state are left out: they cannot change y."""
    S, o, ctx, w = io.S, io.outs[0], io.ctx, io.width
    u_of = vector_reader(io, 0, w)
    clamp = _vector_clamp(lo, hi)
    bounds = [b for b in (lo, hi) if math.isfinite(b)]
    filter_state = kd != 0.0 and n_f is not None
    ideal = kd != 0.0 and n_f is None
    inv = max(float(ctx.dt), 1e-6)
    zero = np.zeros(w)
    prev = zero

    def derivative():
        u = u_of()
        held = _held_at_limits(part.x[:w], u, lo, hi)
        return np.concatenate((held, n_f * (u - part.x[w:]))) if filter_state else held

    def surfaces():
        return np.concatenate([part.x[:w] - b for b in bounds])

    part = StatePart(io.id, np.zeros(2 * w if filter_state else w), derivative=derivative,
                     surfaces=surfaces if bounds else None)

    def algebraic():
        u = u_of()
        y = kp * u + ki * clamp(part.x[:w])
        if filter_state:
            y = y + kd * (n_f * (u - part.x[w:]))
        elif ideal:
            y = y + kd * ((u - prev) / inv)
        S[o] = float(y[0]) if w == 1 else y

    if not ideal:
        return Phases(algebraic=algebraic, part=part)

    def init():
        nonlocal prev
        prev = zero

    def update():
        nonlocal prev
        prev = u_of().copy()
    return Phases(init=init, algebraic=algebraic, update=update, part=part)


# ----------------------------------------------------------------------------- transport delay

_MAX_RING = 10_000_000   # delay-line elements


def _delay_feedthrough(block) -> bool:
    """A zero (or negative) DelayTime makes the block a wire. A positive delay shorter
    than one step also mixes in the current input, but the ordering pass cannot see the
    step; that case reads the input slot in OUTPUT, as nflow does (see ``delay``)."""
    return not float(block.params.get("DelayTime", 0.1)) > 0.0


@block("delay", feedthrough=_delay_feedthrough)
def delay(io):
    """Transport delay y(t) = u(t - DelayTime) on the sample grid, with linear
    interpolation between stored samples (nflow's ring buffer): ds = DelayTime/dt,
    d0 = floor(ds), f = ds - d0, y[k] = (1 - f) u[k-d0] + f u[k-d0-1], zeros before the
    buffer fills. The ring holds max(2, max(1, ceil(ds) + 1) + 1) samples per element.
    OUTPUT emits it for d0 >= 1; DelayTime <= 0 is a wire (y = u, ALGEBRAIC). For
    0 < DelayTime < dt, u[k] is read in OUTPUT from the input slot as nflow does: it is
    this step's value only when the source is an OUTPUT block declared earlier.
    UPDATE stores the input. An unconnected input reads 0. No continuous state."""
    if not io.outs:
        return Phases()
    S, o, ctx, w = io.S, io.outs[0], io.ctx, io.width
    dt = float(ctx.dt)
    delay_time = float(io.params["DelayTime"])
    ds_raw = delay_time / max(dt, 1e-12)
    steps = max(1, math.ceil(ds_raw) + 1) if math.isfinite(ds_raw) else 1
    if math.isinf(ds_raw) and ds_raw > 0 or steps * w > _MAX_RING:
        io.fail("param_range", f"DelayTime {delay_time:g} is {ds_raw:g} steps of {dt:g}; the delay line would "
                f"need more than {_MAX_RING} elements", "DelayTime")
    size = max(2, steps + 1)
    ds = ds_raw if ds_raw > 0.0 else 0.0   # negative (and NaN) delays: a wire
    d0 = int(math.floor(ds))
    frac = ds - d0
    if d0 > size - 2:
        d0, frac = size - 2, 1.0
    u_of = input_reader(io, w)
    zero = fit(0.0, w)
    ring = [zero] * size
    base = 0

    def init():
        nonlocal ring, base
        ring, base = [zero] * size, 0

    def value(u_now):
        v0 = u_now if d0 == 0 else ring[(base - d0) % size]
        return v0 * (1.0 - frac) + ring[(base - d0 - 1) % size] * frac

    def update():
        nonlocal base
        ring[base] = u_of()
        base = (base + 1) % size

    if delay_time <= 0.0 or not math.isfinite(delay_time):
        def algebraic():
            S[o] = value(u_of())
        return Phases(init=init, algebraic=algebraic, update=update)

    if d0 == 0:
        def output():
            S[o] = value(u_of())
    else:
        def output():
            S[o] = value(zero)
    return Phases(init=init, output=output, update=update)


# ----------------------------------------------------------------------------- constraint

def _constraint_width(block, in_widths):
    """z is one scalar algebraic state whatever the residual's width (nflow's handler)."""
    return [1] * block.outputs


# nflow rejects the constraint block under other solvers too (it has no fixed-step meaning)
CONSTRAINT_SOLVERS = ("dae",)


@block("constraint", widths=_constraint_width, feedthrough=False, solvers=CONSTRAINT_SOLVERS,
       solver_role="algebraic")
def constraint(io):
    """Algebraic constraint: the output z is an algebraic state chosen so that the input g
    (the residual, normally built from z and the rest of the diagram) is 0, making the
    diagram the semi-explicit DAE x' = f(t, x, z), 0 = g(t, x, z). Only under the 'dae'
    solver (nflow rejects it elsewhere: there is no fixed-step meaning), else the diagram
    error ``constraint_needs_dae``. At every evaluation the solver's state x is given and
    z is solved for (``engine.algebraic.AlgebraicSolve``: Newton warm-started from the
    last z, InitialCondition being the first guess; scipy.optimize fallbacks), so every
    recorded sample satisfies g = 0; when no z does, the run stops with
    ``constraint_unsolvable``. Several constraint blocks are solved together (a vector
    of algebraic states). As nflow's handler: z is scalar and the residual is element 0
    of the input (a wider input is warned about); an unconnected input is a residual of 0,
    so z stays at InitialCondition. z is emitted in OUTPUT; the block does not feed its
    input through, so z -> g -> constraint is not an algebraic loop."""
    if io.solver not in CONSTRAINT_SOLVERS:
        io.fail("constraint_needs_dae", f"an algebraic constraint needs the differential-algebraic solver: set "
                f"the diagram's \"solver\" to \"dae\" (it is {io.solver!r}); nflow rejects it under other "
                "solvers too")
    S, o, ctx = io.S, io.outs[0], io.ctx
    z0 = float(np.atleast_1d(np.asarray(io.params["InitialCondition"], dtype=float)).reshape(-1)[0])
    if not math.isfinite(z0):
        io.fail("param_value", "InitialCondition (the first guess for z) must be finite", "InitialCondition")
    slot = io.ins[0]
    if slot is None:
        note = (f"constraint {io.id!r}: the residual input is unconnected (a residual of 0); z stays at "
                f"InitialCondition {z0:g}")

        def init_unconnected():
            ctx.warnings.append(note)

        def hold():
            S[o] = z0
        return Phases(init=init_unconnected, output=hold)
    wide = io.in_widths[0] > 1
    note = (f"constraint {io.id!r}: the residual input has width {io.in_widths[0]}; z is scalar and only "
            "element 0 is driven to 0 (as nflow)") if wide else None
    if wide:
        def residual():
            return float(S[slot][0])
    else:
        def residual():
            return S[slot]
    part = AlgebraicPart(io.id, z0, residual, path=io.block.path)

    def init():
        part.z = z0
        if note:
            ctx.warnings.append(note)

    def output():
        S[o] = part.z
    return Phases(init=init, output=output, part=part)
