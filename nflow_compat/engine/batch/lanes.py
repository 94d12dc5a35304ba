"""Variants of one diagram integrated side by side: one lane per variant, stepped together.

Each variant's plan runs exactly as ``Plan.run`` runs it, in a thread of its own, up to the
point where it would integrate (``hybrid.integrate_hybrid``): there it hands its prepared
``hybrid._Run`` to this driver (``hybrid.integrated_by``) and waits. The driver, in the
calling thread, steps every lane's loop (``_Run.loop``, the loop a single run steps)
together: the lanes' Dormand-Prince steps as array operations over a leading lane axis
(``Rk45Lanes``, scipy's RK45 step for step: the same tableau, error norm and step-size
control, each lane with its own step size, its own rejections and its own error
control), the derivative of every lane at once (``derivatives``: a vectorized form where
there is one, else each lane's own), and between steps each lane's own event scan,
location and commit, time events and grid samples, in its own loop. When a lane's loop
ends its thread goes on as a single run would (the recorders, the result, ``finalize``).

The threads never run at the same time: one at a time runs up to its hand-off (or to its
end, when it never integrates), and one at a time finishes, so nothing of a run is shared
or raced; they only keep each run's call stack (its error handling, its warnings) while
the driver steps its loop. A warning raised while the driver runs a lane's code is that
lane's (``run_warnings.count_into``); an exception is re-raised in the lane's thread,
where ``Plan.run`` types it as it types a single run's.
"""
from __future__ import annotations

import threading

import numpy as np
from scipy.integrate import RK45

from ... import run_warnings
from ...errors import NFlowError, SimulationError
from .. import hybrid
from ..recording import bulk_recorders, record_in_bulk
from ..solvers.fixed import snap
from . import vectorized

# scipy's RK45 step-size control: the safety factor and the bounds of a step's change
SAFETY, MIN_FACTOR, MAX_FACTOR = 0.9, 0.2, 10.0
# Lanes stepped together at most (a thread and a plan each; more run in further rounds)
MAX_LANES = 512
_TOO_SMALL = "Required step size is less than spacing between numbers."


def batchable(plans: list) -> bool:
    """Whether the lanes apply to these plans: integrated freely by ode45 (continuous parts,
    no discrete state that would restart the integration at every grid point), holding
    nothing that a run acquires and releases (an FMU instance)."""
    return all(p.diagram.solver == "ode45" and p.has_parts and not p.update and not p.finalize for p in plans)


def run_lanes(plans: list, run_single) -> list:
    """Per plan, what ``run_single(plan)`` (``Plan.run`` with its errors as values) gives,
    the integrations stepped together in lanes of at most ``MAX_LANES``."""
    out = []
    for start in range(0, len(plans), MAX_LANES):
        out += _round(plans[start:start + MAX_LANES], run_single)
    return out


class _Lane:
    """One variant's run: its thread, its hand-off and what it gave."""

    def __init__(self, batch, index, run_single):
        self.batch, self.index, self.run_single = batch, index, run_single
        self.plan = batch.plans[index]
        self.ready, self.resume = threading.Event(), threading.Event()
        self.run = self.seen = self.error = self.outcome = None
        self.thread = threading.Thread(target=self._main, name="nflow-batch-lane", daemon=True)
        # the loop's state in the driver (``index``: its row in what is stacked per lane)
        self.loop = self.request = None
        self.done = False

    def _main(self):
        with hybrid.integrated_by(self):
            self.outcome = self.run_single(self.plan)
        self.ready.set()

    def integrate(self, run):
        """``hybrid.integrate_hybrid``'s hand-off, in the lane's thread."""
        if run.stepping.solver is not RK45 or not run.x0.size:
            run.integrate(run.t0, run.x0)
            return
        recorders = None
        if run.sampler.sample is not None:     # a major step per grid point: in bulk where it can be
            evaluator = self.batch.major_steps(run.sys)
            recorders = evaluator and bulk_recorders(self.plan, run.sys, None, evaluator.lane(self.index))
        if run.sampler.sample is None or recorders is not None:
            run.sampler = _DeferredSampler(run.grid, run.x0.size)
        self.run, self.seen = run, run_warnings.sink()
        self.ready.set()
        self.resume.wait()
        if self.error is not None:
            raise self.error
        if type(run.sampler) is _DeferredSampler:
            run.sampler.flush()
        if recorders is not None:
            record_in_bulk(self.plan, run.sys, recorders, run.result(0.0))

    # -- in the driver ---------------------------------------------------------------
    def advance(self, reply):
        """Run the lane's loop up to its next request, with ``reply`` to the last one."""
        outer = run_warnings.count_into(self.seen)
        try:
            self.request = self.loop.throw(reply) if isinstance(reply, BaseException) else self.loop.send(reply)
        except StopIteration:
            self.done = True
        except BaseException as exc:     # re-raised in the lane's thread
            self.error, self.done = exc, True
        finally:
            run_warnings.count_into(outer)


class _Batch:
    """The plans of one round and what their lanes share: the evaluator of their major
    steps' closures (``vectorized.Evaluator``, all plans' values stacked), made once."""

    def __init__(self, plans):
        self.plans = plans
        self._major = None      # (the evaluator or None), once made

    def major_steps(self, system):
        if self._major is None:
            self._major = (vectorized.Evaluator.of(self.plans, [system], stages=False),)
        return self._major[0]


def _round(plans, run_single) -> list:
    batch = _Batch(plans)
    lanes = [_Lane(batch, k, run_single) for k in range(len(plans))]
    for lane in lanes:      # one at a time, each up to its hand-off or its end
        lane.thread.start()
        lane.ready.wait()
        lane.ready.clear()
    driven = [lane for lane in lanes if lane.run is not None]
    interrupted = None
    try:
        _drive(driven)
    except Exception as exc:      # a bug of the driver's: each lane's run ends with it, typed there
        _end_lanes(driven, exc)
    except BaseException as exc:  # Ctrl-C: the lanes end quietly, then it goes on up
        interrupted = exc
        _end_lanes(driven, SimulationError("interrupted", "the batch was interrupted"))
    for lane in lanes:      # one at a time, each to its end
        if lane.run is not None:
            lane.resume.set()
            lane.ready.wait()
        lane.thread.join()
        if lane.run is not None and not isinstance(lane.outcome, NFlowError):
            lane.outcome["stats"].update(batched=True, batch_size=len(driven))
    if interrupted is not None:
        raise interrupted
    return [lane.outcome for lane in lanes]


def _end_lanes(lanes, error):
    for lane in lanes:
        if not lane.done:
            lane.error, lane.done = error, True


def _drive(lanes):
    """Step the lanes' loops until every one has ended."""
    derivative = vectorized.derivative_of(lanes[0].batch.plans, [lane.run.sys for lane in lanes])
    stepper = Rk45Lanes(derivative)
    with np.errstate(all="ignore"):
        for lane in lanes:
            lane.loop = lane.run.loop(lane.run.t0, lane.run.x0)
            lane.advance(None)
        live = [lane for lane in lanes if not lane.done]
        while live:
            starting = [lane for lane in live if type(lane.request) is hybrid.Start]
            while starting:     # a start may fail and ask for another, with a smaller step
                for lane, reply in zip(starting, stepper.start(starting)):
                    lane.advance(reply)
                starting = [lane for lane in starting if not lane.done and type(lane.request) is hybrid.Start]
            stepping = [lane for lane in live if not lane.done and type(lane.request) is LaneSolver]
            for lane, reply in zip(stepping, stepper.step(stepping)):
                lane.advance(reply)
            live = [lane for lane in live if not lane.done]


class _DeferredSampler(hybrid._Sampler):
    """The grid states of a run that nothing samples point by point (``sample`` None),
    taken from each step's dense output at the end (``flush``), all at once: the steps'
    interpolants kept as they come (the step's ends, start state and stages)."""

    def __init__(self, grid, n_state):
        super().__init__(grid, n_state, None)
        self.pending = []      # (first grid row, end row, t_old, t, y_old, K) per step

    def before(self, t_end, state_at):
        lim = t_end - snap(t_end)
        if self.next_t >= lim:
            return
        end = int(self.grid.searchsorted(lim, side="left"))
        solver = state_at.solver
        self.pending.append((self.k, end, solver.t_old, solver.t, solver.y_old, solver.K))
        self.move_to(end)

    def flush(self):
        """The kept steps' grid rows: ``_LaneDense``'s polynomial in Horner's form, for every
        row at once."""
        if not self.pending:
            return
        first, end, t_old, t_new, y_old, K = (np.array(column) for column in zip(*self.pending))
        self.pending = []
        counts = end - first
        rows = np.arange(counts.sum()) + np.repeat(first - (np.cumsum(counts) - counts), counts)
        h = np.repeat(t_new - t_old, counts)
        x = (self.grid[rows] - np.repeat(t_old, counts)) / h
        # states by rows (the rows the long axis: numpy's inner loops run along it)
        Q = np.einsum("csn,sj->jnc", K, RK45.P)        # per power of x, per state, per step
        acc = np.repeat(Q[-1], counts, axis=1)
        for coefficients in Q[-2::-1]:
            acc *= x
            acc += np.repeat(coefficients, counts, axis=1)
        acc *= x * h
        acc += np.repeat(y_old.T, counts, axis=1)
        if rows[-1] - rows[0] == len(rows) - 1:      # no row taken by an event between (``at``)
            self.out[rows[0]:rows[-1] + 1] = acc.T
        else:
            self.out[rows] = acc.T


class LaneSolver:
    """What ``_Run.loop`` sees of one lane's RK45 (scipy's ``RK45`` attributes it reads:
    ``t``, ``y``, ``t_old``, ``status``, ``h_abs``, ``dense_output()``); ``Rk45Lanes``
    steps it."""

    __slots__ = ("lane", "fun", "t", "y", "f", "t_bound", "t_old", "y_old", "h_abs", "K", "status",
                 "max_step", "rtol", "atol")

    def __init__(self, lane, start: hybrid.Start, stepping):
        self.lane, self.fun = lane, start.f
        self.t, self.y, self.t_bound = float(start.t), np.array(start.x, dtype=float), float(start.t_seg)
        self.t_old = self.y_old = self.K = None
        self.status = "running"
        self.max_step = stepping.max_step
        self.rtol, self.atol = max(stepping.rtol, 100 * np.finfo(float).eps), stepping.atol

    def dense_output(self):
        return _LaneDense(self.t_old, self.t, self.y_old, self.K.T.dot(RK45.P))


class _LaneDense:
    """The last step's interpolant, as scipy's RK45 gives it: ``y_old + h * Q p(x)`` with
    ``x = (t - t_old) / h`` and ``p = (x, x^2, x^3, x^4)``; ``(n,)`` at a time, ``(n, m)``
    at ``m`` times."""

    __slots__ = ("t_old", "h", "y_old", "Q")

    def __init__(self, t_old, t, y_old, Q):
        self.t_old, self.h, self.y_old, self.Q = t_old, t - t_old, y_old, Q

    def __call__(self, t):
        x = (np.asarray(t, dtype=float) - self.t_old) / self.h
        powers = np.cumprod(np.repeat(x[None, ...], self.Q.shape[1], axis=0), axis=0)
        y = self.h * (self.Q @ powers)
        return y + (self.y_old if y.ndim == 1 else self.y_old[:, None])


class Rk45Lanes:
    """scipy's RK45 (Dormand-Prince 5(4), its ``select_initial_step`` and step control)
    over a leading lane axis. ``derivative.lane_derivative(solvers, t, y, failed)`` gives
    every lane's derivative at its own time and state, a lane whose evaluation raised
    noted in ``failed`` (its exception), the others computed all the same;
    ``derivative.account(solvers, evaluations, failed)`` is told of each step tried."""

    A, B, C, E = RK45.A, RK45.B, RK45.C, RK45.E
    EXPONENT = -1.0 / (RK45.error_estimator_order + 1)

    def __init__(self, derivative):
        self.derivative, self.account = derivative.lane_derivative, derivative.account

    def start(self, lanes) -> list:
        """Per lane, the LaneSolver its ``Start`` asks for, or what its first evaluation raised."""
        replies = [None] * len(lanes)
        for group in _by_size(lanes, lambda lane: np.size(lane.request.x)):
            solvers = [LaneSolver(lanes[i], lanes[i].request, lanes[i].run.stepping) for i in group]
            t = np.array([s.t for s in solvers])
            y = np.array([s.y for s in solvers])
            failed = [None] * len(group)
            f0 = self.derivative(solvers, t, y, failed)
            interval = np.array([s.t_bound for s in solvers]) - t
            h_abs = self._initial_steps(solvers, t, y, f0, interval, failed)
            self.account(solvers, 2, failed)
            for k, (i, s) in enumerate(zip(group, solvers)):
                s.f, s.h_abs = f0[k], float(h_abs[k])
                replies[i] = failed[k] if failed[k] is not None else s
        return replies

    def _initial_steps(self, solvers, t, y, f0, interval, failed):
        """scipy's ``select_initial_step`` per lane, or the lane's given first step (a
        retry's, the diagram's), as ``_Run._solver`` gives it."""
        first = np.array([np.nan if (r := s.lane.request.retry if s.lane.request.retry is not None
                                     else s.lane.run.stepping.first_step) is None else r for s in solvers])
        chosen = np.minimum(first, interval)
        if not np.isnan(first).any():
            return chosen
        rtol = np.array([s.rtol for s in solvers])[:, None]
        atol = np.array([s.atol for s in solvers])[:, None]
        max_step = np.array([s.max_step for s in solvers])
        scale = atol + np.abs(y) * rtol
        d0, d1 = _rms(y / scale), _rms(f0 / scale)
        h0 = np.minimum(np.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1), interval)
        f1 = self.derivative(solvers, t + h0, y + h0[:, None] * f0, failed)
        d2 = _rms((f1 - f0) / scale) / h0
        h1 = np.where((d1 <= 1e-15) & (d2 <= 1e-15), np.maximum(1e-6, h0 * 1e-3),
                      (0.01 / np.maximum(d1, d2)) ** (1.0 / (RK45.error_estimator_order + 1)))
        selected = np.minimum(np.minimum(100 * h0, h1), np.minimum(interval, max_step))
        selected = np.where(interval == 0.0, 0.0, selected)
        return np.where(np.isnan(first), selected, chosen)

    def step(self, lanes) -> list:
        """Per lane, one accepted step (``step()``'s message, None) or what an evaluation
        raised; a lane whose step fell below the smallest one is left ``failed``."""
        replies = [None] * len(lanes)
        for group in _by_size(lanes, lambda lane: lane.request.y.size):
            solvers = [lanes[i].request for i in group]
            for k, message in zip(group, self._step_group(solvers)):
                replies[k] = message
        return replies

    def _step_group(self, solvers) -> list:
        m, n = len(solvers), solvers[0].y.size
        t0 = np.array([s.t for s in solvers])
        y0 = np.array([s.y for s in solvers])
        f0 = np.array([s.f for s in solvers])
        t_bound = np.array([s.t_bound for s in solvers])
        max_step = np.array([s.max_step for s in solvers])
        rtol = np.array([s.rtol for s in solvers])[:, None]
        atol = np.array([s.atol for s in solvers])[:, None]
        smallest = 10 * np.abs(np.nextafter(t0, np.inf) - t0)
        h_abs = np.array([s.h_abs for s in solvers])
        h_abs = np.where(h_abs > max_step, max_step, np.where(h_abs < smallest, smallest, h_abs))
        replies = [None] * m
        was_rejected = np.zeros(m, dtype=bool)
        pending = np.arange(m)
        while pending.size:
            small = h_abs[pending] < smallest[pending]
            for k in pending[small]:
                solvers[k].status = "failed"
                replies[k] = _TOO_SMALL
            pending = pending[~small]
            if not pending.size:
                break
            t, y, hp = t0[pending], y0[pending], h_abs[pending]
            t_new = t + hp
            t_new = np.where(t_new - t_bound[pending] > 0, t_bound[pending], t_new)
            h = t_new - t
            hp = np.abs(h)
            part = [solvers[k] for k in pending]
            failed = [None] * len(pending)
            K = np.empty((len(pending), RK45.n_stages + 1, n))
            K[:, 0] = f0[pending]
            for s in range(1, RK45.n_stages):
                dy = (K[:, :s].transpose(0, 2, 1) @ self.A[s, :s]) * h[:, None]
                K[:, s] = self.derivative(part, t + self.C[s] * h, y + dy, failed)
            y_new = y + h[:, None] * (K[:, :-1].transpose(0, 2, 1) @ self.B)
            f_new = self.derivative(part, t_new, y_new, failed)
            K[:, -1] = f_new
            self.account(part, RK45.n_stages, failed)
            scale = atol[pending] + np.maximum(np.abs(y), np.abs(y_new)) * rtol[pending]
            error = _rms((K.transpose(0, 2, 1) @ self.E) * h[:, None] / scale)
            grown = SAFETY * error ** self.EXPONENT
            ok = np.array([fail is None for fail in failed])
            accepted = ok & (error < 1)
            factor = np.where(error == 0, MAX_FACTOR, np.minimum(MAX_FACTOR, grown))
            factor = np.where(was_rejected[pending], np.minimum(1.0, factor), factor)
            taken = np.flatnonzero(accepted)
            next_h = (hp[taken] * factor[taken]).tolist()
            for j, k, t_j, h_j in zip(taken.tolist(), pending[taken].tolist(), t_new[taken].tolist(), next_h):
                s = solvers[k]
                s.t_old, s.y_old = s.t, s.y
                s.t, s.y, s.f, s.K, s.h_abs = t_j, y_new[j], f_new[j], K[j], h_j
                if t_j - s.t_bound >= 0:
                    s.status = "finished"
            for j in np.flatnonzero(~ok):
                replies[pending[j]] = failed[j]
            retry = ok & ~accepted
            h_abs[pending[retry]] = hp[retry] * np.fmax(MIN_FACTOR, grown[retry])
            was_rejected[pending[retry]] = True
            pending = pending[retry]
        return replies


def _rms(x):
    return np.sqrt(np.einsum("ij,ij->i", x, x) / x.shape[1])


def _by_size(lanes, size) -> list:
    """Indices of ``lanes`` grouped by state size (variants whose values change it)."""
    sizes = [size(lane) for lane in lanes]
    if len(set(sizes)) == 1:
        return [list(range(len(lanes)))]
    groups = {}
    for i, n in enumerate(sizes):
        groups.setdefault(n, []).append(i)
    return list(groups.values())
