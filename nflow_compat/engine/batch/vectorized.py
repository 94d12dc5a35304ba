"""A diagram's signals and derivative evaluated for many lanes (or many grid times) at once.

``Evaluator`` compiles what a plan's OUTPUT / ALGEBRAIC closures compute into a sequence of
array operations, one per block, over any leading shape (lanes at a solver stage, the
grid times of a lane when it is recorded): a block whose handler gives an arithmetic
template (``Phases.code``: ``+``, ``-``, ``*`` of its inputs, time and constants) runs the
template on arrays, its constants stacked per lane where the lanes' values differ; a
block whose values are the same in every lane and that declares an array form
(``Phases.array``, pure in time and inputs) runs that form; the output of a part
that integrates one signal (an integrator without limits or reset) is its state, and its
rate the signal it integrates (``StatePart.integral_of``). Anything else (another continuous part, an island, a
template with a branch or a call, a vector or complex signal, an algebraic loop's
relaxation) leaves the diagram to each lane's own closures (``PerLane``).
"""
from __future__ import annotations

import ast
import functools

import numpy as np

from ... import run_warnings
from ...errors import SolveFailed
from ...generated import run_generated
from ..plan import _same

# template syntax that computes the same on arrays element-wise as on floats (no
# division: a float divides by zero with an error, an array without one); a conditional
# expression becomes numpy's ``where`` (both sides computed, one taken per element)
_ARITHMETIC = (ast.Module, ast.Assign, ast.Name, ast.Load, ast.Store, ast.Constant, ast.BinOp, ast.UnaryOp,
               ast.Add, ast.Sub, ast.Mult, ast.USub, ast.UAdd, ast.IfExp, ast.Compare, ast.Gt, ast.GtE, ast.Lt,
               ast.LtE)


def derivative_of(plans: list, systems: list):
    """The lanes' derivative (``lane_derivative`` and ``account``, see ``lanes.Rk45Lanes``):
    every lane at once when an ``Evaluator`` covers the plans' solver stages, else
    ``PerLane``."""
    evaluator = Evaluator.of(plans, systems, stages=True)
    return PerLane() if evaluator is None else evaluator


class PerLane:
    """Each lane's own derivative at its time and state, lane by lane (its own ``f``
    counts its evaluations and spends its budget)."""

    def account(self, solvers, evaluations, failed):
        pass

    def lane_derivative(self, solvers, t, y, failed):
        return per_lane(solvers, t, y, failed)


def per_lane(solvers, t, y, failed):
    out = np.zeros_like(y)
    for k, solver in enumerate(solvers):
        if failed[k] is not None:
            continue
        outer = run_warnings.count_into(solver.lane.seen)
        try:
            out[k] = solver.fun(float(t[k]), y[k])
        except Exception as exc:     # the lane's step gets it (a SolveFailed retries smaller)
            failed[k] = exc
        finally:
            run_warnings.count_into(outer)
    return out


class Evaluator:
    """The array operations of one or more lanes' plans (see the module docstring):
    ``signals(t, X, lanes)`` every covered slot's values, ``derivative(t, X, lanes)`` the
    states' rates; ``t`` of any shape, ``X`` that shape plus the states; ``lanes``: the
    plans (indices) of the rows when ``t`` is a row per lane, one plan's index when all
    rows are that plan's, None when the evaluator is of one plan. ``covered``: the blocks whose
    closures it stands for."""

    def __init__(self, steps, rates, n_states, covered, initial):
        self.steps, self.rates, self.n_states, self.covered = steps, rates, n_states, covered
        self.initial = initial     # a slot no covered block writes holds its initial value
        self._cones = {}           # wanted slots -> the steps that compute them

    @classmethod
    def of(cls, plans, systems, stages: bool):
        """The evaluator of ``plans`` (one per lane, all of one structure; ``systems`` their
        ``PlanSystem``): of the closures a solver stage runs (``stages``) or of every
        OUTPUT / ALGEBRAIC closure (a major step's), None where it does not cover them."""
        plan, system = plans[0], systems[0]
        if system.algebraic_solve is not None or any(any(p.complex_out) for p in plans):
            return None
        lists = (system.stage_output, system.stage_algebraic) if stages else (plan.output, plan.algebraic)
        owner = {}
        for i, p in enumerate(plan.phases):
            for f in (p.output, p.algebraic):
                if f is not None:
                    owner.setdefault(id(f), i)
        state_of = {}         # block index -> (its part's state, the slot of the signal it integrates)
        for part, sl in zip(system.parts, system.slices):
            if getattr(part, "integral_of", None) is None:
                return None
            i = next(i for i, p in enumerate(plan.phases) if p.part is part)
            state_of[i] = (sl.start, part.integral_of[0])
        steps, covered = [], set()
        for closures in lists:
            for f in closures:
                i = owner.get(id(f))
                if i is None:
                    return None
                step = _step(plans, i, f is plan.phases[i].output, state_of)
                if step is None:
                    return None
                steps.append(step)
                covered.add(i)
        rates = [(start, slot) for start, slot in state_of.values()]
        if any(plan.out_widths[key] != 1 for key in plan.out_widths if key[0] in covered):
            return None
        return cls(steps, rates, system.n, frozenset(covered), plan.initial_signals)

    def signals(self, t, X, lanes=None, wanted=None) -> dict:
        """The slots' values (``wanted``: a frozenset of slots, when only those and what
        they depend on are needed)."""
        values, initial = {}, self.initial
        for run, ins, outs in self.steps if wanted is None else self._cone(wanted):
            inputs = [None if s is None else values.get(s, initial[s]) for s in ins]
            for slot, value in zip(outs, run(t, X, inputs, lanes)):
                values[slot] = value
        return values

    def _cone(self, wanted: frozenset) -> list:
        steps = self._cones.get(wanted)
        if steps is None:
            needed, steps = set(wanted), []
            for step in reversed(self.steps):
                if needed.intersection(step[2]):
                    steps.append(step)
                    needed.update(s for s in step[1] if s is not None)
            steps = self._cones[wanted] = steps[::-1]
        return steps

    def lane(self, index: int) -> "LaneSignals":
        """What this evaluator computes for one lane alone (its recorded values)."""
        return LaneSignals(self, index)

    def derivative(self, t, X, lanes=None):
        values = self.signals(t, X, lanes)
        out = np.zeros(np.shape(t) + (self.n_states,))
        for start, slot in self.rates:
            if slot is not None:
                out[..., start] = values[slot]
        return out

    def lane_derivative(self, solvers, t, y, failed):
        """``derivative`` for lanes (``lanes.Rk45Lanes``): each at its time held to the left
        limit of its segment's end (a jump at a time event is seen once it is handled), a
        lane whose rate is not finite failed as its own run fails (``PlanSystem.derivative``)."""
        t_left = np.nextafter(np.array([s.t_bound for s in solvers]), -np.inf)
        out = self.derivative(np.minimum(t, t_left), y, np.array([s.lane.index for s in solvers]))
        for k in np.flatnonzero(~np.isfinite(out).all(axis=1)):
            if failed[k] is None:
                failed[k] = SolveFailed("non_finite_state", f"the state derivative is not finite at t = "
                                        f"{float(t[k]):.9g} (an infinite or NaN input, or a parameter outside "
                                        "the floating-point range)")
        return out

    def account(self, solvers, evaluations: int, failed):
        """What each lane's own evaluations would have done besides computing: count them
        and spend its run's budget (its wall clock), once per step tried."""
        for k, solver in enumerate(solvers):
            solver.lane.run.stats["nfev"] += evaluations
            if failed[k] is None:
                try:
                    solver.lane.plan.budget.spend()
                except Exception as exc:     # the run's limit: that lane's error
                    failed[k] = exc


class LaneSignals:
    """One lane's view of an ``Evaluator``: ``signals(t, X)`` at that lane's values."""

    __slots__ = ("evaluator", "index", "covered")

    def __init__(self, evaluator, index):
        self.evaluator, self.index, self.covered = evaluator, index, evaluator.covered

    def signals(self, t, X, wanted=None) -> dict:
        return self.evaluator.signals(t, X, self.index, wanted)


def _step(plans, i, is_output, state_of):
    """(run(t, X, inputs) -> outputs, input slots, output slots) of block ``i``, or None."""
    plan = plans[0]
    ins, outs = list(plan.input_slots[i]), list(plan.output_slots[i])
    if i in state_of:
        start, _ = state_of[i]
        return (lambda t, X, u, lanes: [X[..., start]]), [], outs
    phases = [p.phases[i] for p in plans]
    template = phases[0].code
    text = None if template is None else (template.output if is_output else template.algebraic)
    if text and not template.state and not template.update and _arithmetic(text) \
            and all(p.code is not None and (p.code.output, p.code.algebraic) == (template.output, template.algebraic)
                    for p in phases):
        constants = {}
        for name in template.constants:
            values = [p.code.constants[name] for p in phases]
            if not all(isinstance(v, float) for v in values):
                return None
            constants[name] = values[0] if len(set(values)) == 1 else np.array(values)
        fn = _template_function(text, tuple(sorted(constants)), len(ins))
        args = tuple(constants[name] for name in sorted(constants))

        def run(t, X, u, lanes, fn=fn, args=args):
            return fn(t, *u, *(a if lanes is None or np.ndim(a) == 0 else a[lanes] for a in args))
        return run, ins, outs
    form = phases[0].array
    if form is not None and all(_same_block(plans[0], p, i) for p in plans[1:]):
        def run(t, X, u, lanes, form=form):
            shape = np.shape(t)
            flat = form(np.ravel(t), [None if v is None else np.broadcast_to(v, shape).ravel() for v in u])
            return [np.reshape(v, shape) for v in flat]
        return run, ins, outs
    return None


def _same_block(a, b, i) -> bool:
    """Whether block ``i`` has the same values in plans ``a`` and ``b``."""
    return a.diagram.blocks[i] is b.diagram.blocks[i] or _same(a.diagram.blocks[i].params, b.diagram.blocks[i].params)


@functools.lru_cache(maxsize=256)
def _arithmetic(text: str) -> bool:
    return all(isinstance(node, _ARITHMETIC) for node in ast.walk(ast.parse(text)))


@functools.lru_cache(maxsize=256)
def _template_function(text: str, constants: tuple, n_inputs: int):
    """A function ``(t, u0, u1, ..., *constants) -> [y0, y1, ...]`` of one template (ours:
    the handlers' texts, never a user's)."""
    tree = _Where().visit(ast.parse(text))
    written = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                      and n.id.startswith("y") and n.id[1:].isdigit()}, key=lambda n: int(n[1:]))
    params = ", ".join(["t"] + [f"u{k}" for k in range(n_inputs)] + list(constants))
    body = "\n".join("    " + line for line in ast.unparse(tree).splitlines())
    source = f"def template({params}):\n{body}\n    return [{', '.join(written)}]\n"
    return run_generated(source, "<nflow batch template>", {"where": np.where})["template"]


class _Where(ast.NodeTransformer):
    """``a if c else b`` -> ``where(c, a, b)``."""

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return ast.Call(func=ast.Name(id="where", ctx=ast.Load()), args=[node.test, node.body, node.orelse],
                        keywords=[])
