"""A lowered model (``structure.Structure``) as closures, and as a continuous part of the
plan (``parts.Part``) that ``engine.system`` integrates with the rest of the diagram.

**Evaluation.** One list of floats ``v`` holds time, the inputs, the states, the unknowns,
the held (when-assigned) values and the pre values. An evaluation at ``(t, x, u)`` runs the
sorted blocks in order: an equation linear in its unknown is solved explicitly, a block of
equations linear in its unknowns as a linear system (LU), any other by ``roots.newton``
warm-started from its last solution. Relations read their committed values.

**Events** (Modelica's semantics, MLS 8.6). Each watched relation is an event function
(``g > 0`` form, its committed value given by ``relation_values``); a relation of time
against a constant is a time event instead, and so is every tick of ``sample``. At an
event (of this model, of any other part, an input's jump) the model runs its event
iteration: pre values are the left limits; then repeatedly the relations are evaluated
until they agree with the solution they select, the when-conditions are evaluated, a
branch of a when/elsewhen chain fires when its condition became true (relative to its pre
value), its assignments and ``reinit`` take effect, and pre values are updated, until
nothing changes (bounded: ``event_iteration`` names the time otherwise).

**Initialization** solves the states for the initial equations and the ``fixed = true``
start values (in that order of priority; one implied by the others is checked and, when it
contradicts them, dropped with a warning; states left free keep their start values), then
runs the initial event iteration (``initial()`` true, when-clauses without it inactive),
then the ticks of ``sample`` at the start time.
"""
from __future__ import annotations

import math

import numpy as np

from .. import roots
from ..errors import SimulationError, SolveFailed
from . import symbolic as sym
from .evaluate import Closures, EventFlags
from .flat import Assert, Assign, Conditional, Reinit, Terminate
from .symbolic import ModelicaUnsupported

EVENT_ITERATIONS = 100     # event-iteration steps at one instant before the run stops
RELATION_ITERATIONS = 50   # relation fixed-point passes within one step
# Newton's corrections judged per unknown, in the weight 1e-12 (|z_i| + 1): converged to a
# few digits short of rounding, each unknown on its own scale (roots.newton)
NEWTON_WEIGHTS = roots.error_weights(1e-12, 1e-12)
_NEGATED = {">": False, "<": False, ">=": True, "<=": True}


class Program:
    """The closures of one lowered model and its layout (see the module docstring).
    ``describe(pos)`` names a source position ("file, line N") for error messages;
    ``label`` names the block."""

    def __init__(self, st, describe, label: str, block_id: str):
        self.st, self.describe, self.label, self.block_id = st, describe, label, block_id
        slots = {("time",): 0}
        values = [0.0]

        def place(key, value):
            slots[key] = len(values)
            values.append(float(value))
        for name in st.inputs:
            place(("var", name, 0), st.starts.get(name, 0.0))
        for name, order in st.states:
            place(("var", name, order), st.starts.get(name, 0.0) if order == 0 else 0.0)
        for name, order in st.unknowns:
            place(("var", name, order), st.starts.get(name, 0.0) if order == 0 else 0.0)
        for name in st.discrete:
            place(("var", name, 0), st.starts.get(name, 0.0))
        for name in sorted(st.pre_names):
            place(("pre", name, 0), st.starts.get(name, 0.0))
        self.slots, self.v0 = slots, values
        self.relations = [0.0] * len(st.relations)
        self.flags = EventFlags(len(st.samples))
        self.closures = Closures(slots, self.relations, self.flags, st.samples)
        self.live = Closures(slots, self.relations, self.flags, st.samples, live=True)
        self.input_slots = [slots[("var", n, 0)] for n in st.inputs]
        self.input_starts = [st.starts.get(n, 0.0) for n in st.inputs]
        self.state_slots = [slots[("var", n, o)] for n, o in st.states]
        self.derivative_slots = [self._value_slot(n, o + 1) for n, o in st.states]
        self.x0 = np.array([values[s] for s in self.state_slots], dtype=float)
        self.discrete_slots = [slots[("var", n, 0)] for n in st.discrete]
        self.pre_pairs = [(slots[("pre", n, 0)], self._value_slot(n, 0)) for n in sorted(st.pre_names)]
        self._blocks(st)
        self._relations(st)
        self._whens(st)
        self.outputs = [self._build(expr) for _, expr in st.outputs]
        self.output_inputs = [bool(self._reads_inputs(expr)) for _, expr in st.outputs]
        self.conditions = [(self._build(r), pos, strength) for r, pos, strength in st.conditions]
        self.asserts = [(self._build(a.condition), a) for a in st.asserts]

    # -- layout --------------------------------------------------------------------------
    def _value_slot(self, name, order):
        key = ("var", name, order)
        if key not in self.slots:
            raise ModelicaUnsupported(f"{name} is read where the model cannot compute it", None)
        return self.slots[key]

    def _build(self, expr):
        return self.closures.build(expr)

    def where(self, pos) -> str:
        place = self.describe(pos) if pos is not None else None
        return f" ({place})" if place else ""

    def _reads_inputs(self, expr) -> bool:
        names = {n for n, _ in sym.instances(expr)}
        fed = {n for n in self.st.inputs} | self._fed_names
        return bool(names & fed)

    # -- the sorted blocks ---------------------------------------------------------------
    def _blocks(self, st):
        self.steps = []
        self._fed_names = set()
        fed_steps = []
        for block in st.blocks:
            reads = set()
            for r, _ in block.equations:
                reads |= {n for n, _ in sym.instances(r)}
            fed = bool(reads & (set(st.inputs) | self._fed_names))
            step = self._block_step(block)
            self.steps.append(step)
            fed_steps.append(fed)
            if fed:
                self._fed_names |= {n for n, _ in block.unknowns}
        self.steps_state = [s for s, f in zip(self.steps, fed_steps) if not f]
        self.steps_fed = [s for s, f in zip(self.steps, fed_steps) if f]

    def _block_step(self, block):
        if len(block.unknowns) == 1:
            (residual, pos), = block.equations
            (unknown,) = block.unknowns
            split = sym.linear_split(residual, unknown)
            if split is not None and not isinstance(split[0], sym.Num) or split is not None and split[0].value:
                return self._explicit(unknown, split, pos)
            if self._discrete_valued(unknown[0]):
                raise ModelicaUnsupported(f"the Boolean or Integer variable {unknown[0]} must be given explicitly "
                                          "by its equation", pos)
        else:
            for name, _ in block.unknowns:
                if self._discrete_valued(name):
                    raise ModelicaUnsupported(f"the Boolean or Integer variable {name} is part of a system of "
                                              "equations (it must be given explicitly)", block.equations[0][1])
            linear = self._linear_system(block)
            if linear is not None:
                return linear
        return self._newton(block)

    def _discrete_valued(self, name) -> bool:
        var = self.st.variables.get(name)
        return var is not None and (var.type in ("Integer", "Boolean") or var.variability == "discrete")

    def _explicit(self, unknown, split, pos):
        a, b = split
        i = self.slots[("var",) + unknown]
        if isinstance(a, sym.Num):
            f = self._build(sym.div(sym.neg(b), a))

            def step(v):
                v[i] = f(v)
            return step
        fa, fb = self._build(a), self._build(b)
        program = self

        def guarded(v):
            coef = fa(v)
            if coef == 0.0:
                raise SimulationError("modelica_singular", f"{program.label}: the equation{program.where(pos)} "
                                      f"cannot be solved for {unknown[0]} at t = {v[0]:.9g} (its coefficient is "
                                      "zero)", block=program.block_id)
            v[i] = -fb(v) / coef
        return guarded

    def _linear_system(self, block):
        unknowns = block.unknowns
        entries, rests = [], []
        for r, _ in block.equations:
            row, rest = [], r
            for j, u in enumerate(unknowns):
                split = sym.linear_split(rest, u)
                if split is None:
                    return None
                coef, rest = split
                if any(inst in unknowns for inst in sym.instances(coef)):
                    return None
                if not sym.is_num(coef, 0.0):
                    row.append((j, coef))
            if any(inst in unknowns for inst in sym.instances(rest)):
                return None
            entries.append(row)
            rests.append(rest)
        n = len(unknowns)
        constant = all(isinstance(c, sym.Num) for row in entries for _, c in row)
        coefs = [[(j, self._build(c)) for j, c in row] for row in entries]
        rhs = [self._build(sym.neg(r)) for r in rests]
        slots = [self.slots[("var",) + u] for u in unknowns]
        program, lines = self, block.equations
        factor = {}

        def matrix(v):
            A = np.zeros((n, n))
            for i, row in enumerate(coefs):
                for j, f in row:
                    A[i, j] = f(v)
            return A

        def solve(v):
            if constant:
                lu = factor.get("lu")
                if lu is None:
                    lu = factor["lu"] = _lu(matrix(v), program, lines, v[0])
            else:
                lu = _lu(matrix(v), program, lines, v[0])
            z = _lu_solve(lu, np.array([f(v) for f in rhs]))
            for s, value in zip(slots, z.tolist()):
                v[s] = value
        return solve

    def _newton(self, block):
        unknowns = block.unknowns
        residuals = [self._build(r) for r, _ in block.equations]
        jac = [[(j, self._build(sym.partial(r, u))) for j, u in enumerate(unknowns)
                if u in sym.instances(r)] for r, _ in block.equations]
        slots = [self.slots[("var",) + u] for u in unknowns]
        n = len(unknowns)
        program, lines = self, block.equations

        def solve(v):
            def put(z):
                for s, value in zip(slots, z):
                    v[s] = float(value)

            def residual(z):
                put(z)
                return np.array([f(v) for f in residuals])

            def jacobian(z):
                put(z)
                J = np.zeros((n, n))
                for i, row in enumerate(jac):
                    for j, f in row:
                        J[i, j] = f(v)
                return J
            z0 = np.array([v[s] for s in slots])
            res = roots.newton(residual, z0, jacobian=jacobian, weights=NEWTON_WEIGHTS, tol=1.0, max_iterations=60)
            if not res.converged:
                put(z0)
                # at an integrator's trial point a rejected step (engine.hybrid retries it smaller)
                raise SolveFailed("modelica_unsolvable", f"{program.label}: Newton's method did not solve the "
                                      f"equations{program.where(lines[0][1])} for "
                                      f"{', '.join(u[0] for u in unknowns[:5])} at t = {v[0]:.9g}",
                                      block=program.block_id)
            put(res.z)
        return solve

    # -- relations -----------------------------------------------------------------------
    def _relations(self, st):
        self.watched = []           # (relation index, crossing closure, negated)
        self.thresholds = []        # (relation index, time) of relations of time against a constant
        self.live_relations = []
        for rel in st.relations:
            self.live_relations.append(self.live.build(sym.Op(rel.op, (rel.lhs, rel.rhs))))
            t_const = _time_threshold(rel)
            if t_const is not None:
                self.thresholds.append((rel.index, t_const))
                continue
            if rel.op in (">", "<="):
                g = sym.sub(rel.lhs, rel.rhs)
            else:
                g = sym.sub(rel.rhs, rel.lhs)
            self.watched.append((rel.index, self.live.build(g), _NEGATED[rel.op]))

    # -- when-equations ------------------------------------------------------------------
    def _whens(self, st):
        self.state_index = {name: k for k, (name, order) in enumerate(st.states) if order == 0}
        self.chains = []
        for chain in st.whens:
            branches = []
            for conds, body, pos in chain:
                initial = any(isinstance(n, sym.Call) and n.fn == "initial" for c in conds for n in sym.walk_nodes(c))
                branches.append(([self.live.build(c) for c in conds], self._body(body), initial, pos))
            self.chains.append(branches)

    def _body(self, body):
        out = []
        for item in body:
            if isinstance(item, Assign):
                out.append(("assign", self.slots[("var", item.target, 0)], self.live.build(item.value), item))
            elif isinstance(item, Reinit):
                if item.state not in self.state_index:
                    raise ModelicaUnsupported(f"reinit({item.state}, ...): {item.state} is not a state the solver "
                                              "integrates (index reduction made it algebraic)", item.pos)
                out.append(("reinit", self.state_index[item.state], self.live.build(item.value), item))
            elif isinstance(item, Conditional):
                out.append(("if", [(self.live.build(c), self._body(b)) for c, b in item.branches],
                            self._body(item.orelse), item))
            elif isinstance(item, Terminate):
                out.append(("terminate", None, None, item))
            elif isinstance(item, Assert):
                out.append(("assert", None, self.live.build(item.condition), item))
        return out


def _time_threshold(rel):
    if isinstance(rel.lhs, sym.Time) and isinstance(rel.rhs, sym.Num):
        return rel.rhs.value
    if isinstance(rel.rhs, sym.Time) and isinstance(rel.lhs, sym.Num):
        return rel.lhs.value
    return None


def _lu(A, program, lines, t):
    import scipy.linalg
    if not np.isfinite(A).all() or np.linalg.cond(A) > 1e14:
        raise SimulationError("modelica_singular", f"{program.label}: the linear equations{program.where(lines[0][1])}"
                              f" are singular at t = {t:.9g}", block=program.block_id)
    return scipy.linalg.lu_factor(A)


def _lu_solve(lu, b):
    import scipy.linalg
    return scipy.linalg.lu_solve(lu, b)


class ModelicaPart:
    """The model as a continuous part (``parts.Part``); ``read_inputs()`` gives the input
    ports' current values (None: unconnected, the input's start value is used)."""

    fresh_derivative = True

    def __init__(self, program: Program, key: str, ctx, read_inputs):
        self.p = program
        self.key = key
        self.ctx = ctx
        self.read_inputs = read_inputs
        self.n_states = len(program.state_slots)
        self.x0 = program.x0.copy()
        self.x = self.x0.copy()
        self.reset()

    def reset(self):
        p = self.p
        self.v = list(p.v0)
        p.relations[:] = [0.0] * len(p.relations)
        p.flags.initial = 0.0
        p.flags.samples[:] = [0.0] * len(p.flags.samples)
        self.samples_next = [(0, start, interval) for (start, interval) in
                             ((c.args[0].value, c.args[1].value) for c in p.st.samples)]
        self.cond_committed = [[(False,) * len(conds) for conds, _, _, _ in chain] for chain in p.chains]
        self._key = None
        self.version = 0
        self.started = False
        self.warned = set()

    # -- evaluation -----------------------------------------------------------------------
    def load(self, x):
        self.x = x

    def _inputs(self):
        values = self.read_inputs()
        return tuple(start if value is None else float(value) for value, start in zip(values, self.p.input_starts))

    def evaluate(self, t, x, state_only=False):
        """Solve the model at (t, x) and the current inputs (``state_only``: only the blocks
        that do not read an input); cached until t, x, the inputs or an event change."""
        p, v = self.p, self.v
        xs = np.asarray(x, dtype=float)
        key = (t, xs.tobytes(), self.version)
        if state_only:
            if self._key is not None and self._key[:3] == key:
                return v
        else:
            u = self._inputs()
            full = key + (u,)
            if self._key == full:
                return v
        if self._key is None or self._key[:3] != key:
            v[0] = t
            for s, value in zip(p.state_slots, xs.tolist()):
                v[s] = value
            self._run(p.steps_state, t)
            self._key = key + (None,)
        if state_only:
            return v
        for s, value in zip(p.input_slots, u):
            v[s] = value
        self._run(p.steps_fed, t)
        self._key = full
        return v

    def _run(self, steps, t):
        v = self.v
        try:
            for step in steps:
                step(v)
        except SimulationError:
            self._key = None
            raise

    def derivative(self, t, x):
        v = self.evaluate(t, x)
        return np.array([v[s] for s in self.p.derivative_slots], dtype=float)

    def event_functions(self, t, x):
        if not self.p.watched:
            return np.zeros(0)
        v = self.evaluate(t, x)
        return np.array([g(v) for _, g, _ in self.p.watched], dtype=float)

    def relation_values(self, t, x):
        R = self.p.relations
        return np.array([1.0 if (R[k] != 0.0) != negated else 0.0 for k, _, negated in self.p.watched])

    def outputs(self, state_only: bool):
        """The output values at the loaded state (``state_only``: those not reading an input)."""
        v = self.evaluate(self.ctx.t, self.x, state_only=state_only)
        return [f(v) for f in self.p.outputs]

    def check_asserts(self):
        v = self.v
        for f, a in self.p.asserts:
            if f(v) == 0.0:
                self._assert_failed(a, v[0])

    def _assert_failed(self, a, t):
        p = self.p
        text = f"{p.label}: assert{p.where(a.pos)} failed at t = {t:.9g}: {a.message}"
        if not a.warning:
            raise SimulationError("modelica_assert", text, block=p.block_id)
        if a.pos not in self.warned:
            self.warned.add(a.pos)
            self.ctx.warnings.append(text)

    # -- events ---------------------------------------------------------------------------
    def _solve_relations(self, t, x):
        """Solve at (t, x) with relation values that agree with the solution they select."""
        p = self.p
        R = p.relations
        seen = []
        for _ in range(RELATION_ITERATIONS):
            self.version += 1
            v = self.evaluate(t, x)
            new = [f(v) for f in p.live_relations]
            if new == R:
                return v
            if new in seen:
                raise SimulationError("event_iteration", f"{p.label}: the relations of the model do not settle at "
                                      f"t = {t:.9g} (each choice of branches contradicts itself)", block=p.block_id)
            seen.append(list(R))
            R[:] = new
        raise SimulationError("event_iteration", f"{p.label}: the relations of the model do not settle at "
                              f"t = {t:.9g}", block=p.block_id)

    def _conditions(self, v):
        """Per chain, per branch, the values of the condition's elements (a vector condition
        fires when any of its elements becomes true)."""
        return [[tuple(c(v) != 0.0 for c in conds) for conds, _, _, _ in chain] for chain in self.p.chains]

    def event_iteration(self, t, x, initial=False):
        """Modelica's event iteration at t (see the module docstring); returns the new
        states and the names of what changed."""
        p = self.p
        x = np.array(x, dtype=float)
        self.version += 1
        v = self.evaluate(t, x)
        for pre, src in p.pre_pairs:
            v[pre] = v[src]
        cond_pre = [list(c) for c in self.cond_committed]
        p.flags.initial = 1.0 if initial else 0.0
        changed = []
        for step in range(EVENT_ITERATIONS):
            before = [v[s] for s in p.discrete_slots]
            conds, reinit = self._step(t, x, cond_pre, before, initial and step == 0)
            if initial and step == 0:
                cond_pre = self._initial_pre(conds)
            v = self.v
            for k, value in reinit:
                x[k] = value
                changed.append(p.st.states[k][0])
            after = [v[s] for s in p.discrete_slots]
            changed += [p.st.discrete[k] for k, (a, b) in enumerate(zip(before, after)) if a != b]
            moved = before != after or bool(reinit) or conds != cond_pre
            self.version += 1
            if not moved:
                break
            v = self.evaluate(t, x)
            for pre, src in p.pre_pairs:
                v[pre] = v[src]
            cond_pre = conds
        else:
            raise SimulationError("event_iteration", f"{p.label}: the when-equations do not settle at t = {t:.9g} "
                                  f"(more than {EVENT_ITERATIONS} event-iteration steps)", block=p.block_id)
        p.flags.initial = 0.0
        p.flags.samples[:] = [0.0] * len(p.flags.samples)
        self.version += 1
        v = self.evaluate(t, x)
        for pre, src in p.pre_pairs:
            v[pre] = v[src]
        self.cond_committed = self._conditions(v)
        return x, sorted(set(changed))

    def _initial_pre(self, conds):
        """The pre values of the when-conditions at initialization: a clause without
        initial() is inactive there (its condition counts as already true if it is)."""
        return [[c if not branch[2] else (False,) * len(c) for c, branch in zip(cs, chain)]
                for cs, chain in zip(conds, self.p.chains)]

    def _step(self, t, x, cond_pre, held, initial):
        """One event-iteration step with the pre values held: the when-equations and the
        continuous equations solved together, as a fixed point (a when-clause may read
        what another assigns in the same step, ``change(b)`` of a b assigned there). A
        variable no firing clause assigns keeps its pre value (``held``). Returns the
        conditions and the re-initialisations of the step."""
        p = self.p
        v = self.v
        for _ in range(EVENT_ITERATIONS):
            v = self._solve_relations(t, x)
            conds = self._conditions(v)
            pre = self._initial_pre(conds) if initial else cond_pre
            current = [v[s] for s in p.discrete_slots]
            for s, value in zip(p.discrete_slots, held):
                v[s] = value
            reinit = []
            for chain, cs, ps in zip(p.chains, conds, pre):
                for (_, body, _, _), c, c_pre in zip(chain, cs, ps):
                    if any(now and not before for now, before in zip(c, c_pre)):
                        self._execute(body, v, reinit, t)
                        break
            if [v[s] for s in p.discrete_slots] == current:
                return conds, reinit
            self.version += 1
        raise SimulationError("event_iteration", f"{p.label}: the when-equations do not settle at t = {t:.9g} "
                              "(they assign each other in a circle)", block=p.block_id)

    def _execute(self, body, v, reinit, t):
        for kind, target, f, item in body:
            if kind == "assign":
                v[target] = f(v)
            elif kind == "reinit":
                reinit.append((target, f(v)))
            elif kind == "if":
                for cond, branch in target:
                    if cond(v) != 0.0:
                        self._execute(branch, v, reinit, t)
                        break
                else:
                    self._execute(f, v, reinit, t)
            elif kind == "terminate":
                if not self.ctx.stop:
                    self.ctx.stop = True
                    self.ctx.warnings.append(f"{self.p.label}: terminate() at t = {t:.9g}: {item.message}")
            elif kind == "assert" and f(v) == 0.0:
                self._assert_failed(item, t)

    def _tick_samples(self, t) -> bool:
        ticks = self.p.flags.samples
        any_tick = False
        for k, (n, start, interval) in enumerate(self.samples_next):
            if abs(start + n * interval - t) <= 1e-12 * max(1.0, abs(t)):
                ticks[k] = 1.0
                any_tick = True
        return any_tick

    def _advance_samples(self, t):
        for k, (n, start, interval) in enumerate(self.samples_next):
            while start + n * interval <= t * (1.0 + 1e-12) + 1e-12:
                n += 1
            self.samples_next[k] = (n, start, interval)

    def handle_events(self, t, x, fired):
        own_time = self._own_time_event(t)
        ticked = self._tick_samples(t)
        x, changed = self.event_iteration(t, x)
        self._advance_samples(t)
        if fired or changed or own_time or ticked:
            kind = "state_event" if fired else "time_event" if (own_time or ticked) else "event"
            event = {"t": float(t), "block": self.key, "kind": kind}
            if changed:
                event["changed"] = changed[:20]
            self.ctx.events.append(event)
        return x

    def _own_time_event(self, t) -> bool:
        return any(abs(c - t) <= 1e-12 * max(1.0, abs(t)) for _, c in self.p.thresholds)

    def initialize(self, t, x):
        self.reset()
        x = self.solve_initial(t, np.array(self.x0, dtype=float))
        x, _ = self.event_iteration(t, x, initial=True)
        if self._tick_samples(t):
            x, _ = self.event_iteration(t, x)
        self._advance_samples(t)
        self.started = True
        self.x = x
        return x

    def next_time_event(self, t):
        best = math.inf
        for _, c in self.p.thresholds:
            if t < c < best:
                best = c
        for n, start, interval in self.samples_next:
            tick = start + n * interval
            if t < tick < best:
                best = tick
        return best

    # -- initialization -------------------------------------------------------------------
    def solve_initial(self, t, x):
        """The states meeting the initial conditions (see the module docstring)."""
        p = self.p
        p.flags.initial = 1.0
        n = len(x)
        conditions = p.conditions
        if n == 0 or not conditions:
            self._solve_relations(t, x)
            return x
        for _ in range(RELATION_ITERATIONS):
            v = self._solve_relations(t, x)
            residual_all = np.array([f(v) for f, _, _ in conditions])
            J = self._initial_jacobian(t, x, residual_all)
            rows, pins, dropped = _choose_conditions(J, [s for _, _, s in conditions])
            x_start = x.copy()

            def residual(z):
                self.version += 1
                v = self.evaluate(t, z)
                out = [conditions[i][0](v) for i in rows]
                out += [z[j] - x_start[j] for j in pins]
                return np.array(out, dtype=float)
            res = roots.newton(residual, x, weights=NEWTON_WEIGHTS, tol=1.0, max_iterations=60)
            if not res.converged:
                pos = conditions[rows[0]][1] if rows else None
                raise SimulationError("modelica_initialization", f"{p.label}: the initial conditions{p.where(pos)} "
                                      "cannot be met (Newton's method did not converge)", block=p.block_id)
            x = np.array(res.z, dtype=float)
            relations = list(p.relations)
            v = self._solve_relations(t, x)
            if p.relations == relations:
                break
        for i in dropped:
            f, pos, _ = conditions[i]
            value = f(v)
            if abs(value) > 1e-8 * (1.0 + max(abs(v[s]) for s in p.state_slots)):
                self.ctx.warnings.append(f"{p.label}: the initial condition{p.where(pos)} contradicts the others "
                                         f"(residual {value:.3g}) and was not imposed")
        return x

    def _initial_jacobian(self, t, x, r0):
        n = len(x)
        J = np.zeros((len(r0), n))
        for j in range(n):
            h = 1e-7 * max(1.0, abs(x[j]))
            z = x.copy()
            z[j] += h
            self.version += 1
            v = self.evaluate(t, z)
            J[:, j] = (np.array([f(v) for f, _, _ in self.p.conditions]) - r0) / h
        self.version += 1
        self.evaluate(t, x)
        return J


def _choose_conditions(J, strengths):
    """(condition rows imposed, states pinned at their start values, conditions implied by
    the imposed ones): rows by strength (initial equations first) then order, each kept when
    it adds to the rank; the states the kept rows leave free are pinned."""
    m, n = J.shape
    scale = max(1.0, float(np.abs(J).max(initial=0.0)))
    tol = 1e-9 * scale
    order = sorted(range(m), key=lambda i: (-strengths[i], i))
    rows, dropped, basis = [], [], np.zeros((0, n))
    for i in order:
        if len(rows) < n:
            trial = np.vstack([basis, J[i]])
            if np.linalg.matrix_rank(trial, tol=tol) > basis.shape[0]:
                basis = trial
                rows.append(i)
                continue
        dropped.append(i)
    pins = []
    for j in range(n):
        if basis.shape[0] >= n:
            break
        unit = np.zeros(n)
        unit[j] = scale
        trial = np.vstack([basis, unit])
        if np.linalg.matrix_rank(trial, tol=tol) > basis.shape[0]:
            basis = trial
            pins.append(j)
    return sorted(rows), pins, dropped
