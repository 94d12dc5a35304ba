"""The structural pipeline from a flat model to a sorted index-1 system: its stages, in order.

1. **Parameters** (``parameter_values``): every parameter and constant evaluated from its
   binding (a block param overrides it), in dependency order; folded into the equations as
   numbers, so each lowering is for one set of parameter values.
2. **Classification**: the model's top-level inputs (the block's input ports) and the
   variables its when-equations assign (held between events) are known at each
   evaluation; every other variable that the continuous equations (and the declaration
   equations of non-parameters) mention is an unknown. A variable under ``der`` is a state.
3. **Aliases** (``eliminate_aliases``): an equation ``a*x + b*y + c = 0`` between two
   unknowns (numeric a, b, c: most of a connected model's equations, ``connect`` and
   flange/pin equations) removes one of them; ``x = c`` removes ``x``. Two states are kept
   with their equation: that is a constraint for step 5.
4. **Relations**: every ``<``, ``<=``, ``>``, ``>=`` of continuous equations and when
   conditions that reads a continuous quantity or time becomes a ``Rel`` (frozen between
   events, its crossing function watched by the solver); under ``noEvent`` (and
   ``smooth(p >= 1, ...)``) it stays a plain comparison.
5. **Index reduction** (``reduce_index``): Pantelides' algorithm finds the equations to
   differentiate (the constraints between states: a capacitor loop, a damper's relative
   position beside a mass's position, two rigidly joined inertias), they are
   differentiated symbolically, and Mattsson and Soderlind's dummy derivatives pick which
   states become algebraic (by ``stateSelect``, then keeping the states with a fixed start,
   from a nonsingular Jacobian at the start values). What still needs the derivative of an
   input is refused.
6. **Sorting** (``sort``): a maximum matching of equations to unknowns (a structurally
   singular model is refused, naming its equations) and the strong components in
   dependency order (Tarjan via scipy's ``connected_components``): the blocks the
   runtime solves one after the other (explicitly, as a linear system, or by Newton).

Every refusal is ``ModelicaUnsupported`` with the source position of what was refused.
"""
from __future__ import annotations

import graphlib
from dataclasses import dataclass, field

import numpy as np

from . import symbolic as sym
from .evaluate import Closures, EventFlags
from .flat import Assign, Conditional, FlatModel, Reinit
from .symbolic import ModelicaUnsupported

MAX_DIFFERENTIATIONS = 3     # index reduction beyond this is refused (index > 4, or a singular model)
STATE_SELECT_ORDER = {"never": 0, "avoid": 1, "default": 2, "prefer": 3, "always": 4}


@dataclass
class Block:
    """Equations (residual, pos) solved together for ``unknowns`` (instances)."""
    equations: list
    unknowns: list


@dataclass
class Structure:
    name: str
    variables: dict                  # name -> flat.Variable
    parameters: dict                 # name -> float
    inputs: list                     # top-level input names (the block's input ports, declaration order)
    outputs: list                    # (name, expression) of the top-level outputs (output ports)
    states: list                     # integrated instances (name, order)
    unknowns: list                   # instances solved at every evaluation
    blocks: list                     # Block, in evaluation order
    discrete: list                   # names assigned by when-equations (held between events)
    starts: dict                     # name -> start value (0 when none)
    conditions: list                 # initial conditions: (residual, pos, strength); 2 initial equation, 1 fixed start
    relations: list                  # Rel nodes, by index
    whens: list                      # chains: [(conditions, body)] with expressions lowered
    asserts: list                    # flat.Assert with lowered conditions
    pre_names: set                   # names whose pre() value is read
    samples: dict                    # sample() call -> index
    aliases: dict = field(default_factory=dict)   # eliminated name -> expression of the kept ones


# ----------------------------------------------------------------------------- 1. parameters

def parameter_values(flat: FlatModel, overrides: dict) -> dict:
    """name -> float for every numeric parameter and constant (``overrides``: name -> float)."""
    params = {n: v for n, v in flat.variables.items() if v.variability in ("parameter", "constant")
              and v.type != "String"}
    values, visiting = {}, []

    def value(name):
        if name in values:
            return values[name]
        var = params[name]
        if name in visiting:
            chain = " -> ".join(visiting[visiting.index(name):] + [name])
            raise ModelicaUnsupported(f"the parameters {chain} are defined in a circle", var.pos)
        if name in overrides:
            values[name] = float(overrides[name])
            return values[name]
        expr = var.binding
        if expr is None:
            if var.fixed is False:
                raise ModelicaUnsupported(f"parameter {name} has fixed = false (a parameter computed by the "
                                          "initial equations is not supported)", var.pos)
            expr = var.start
        if expr is None:
            raise ModelicaUnsupported(f"parameter {name} has no value", var.pos)
        visiting.append(name)
        folded = sym.transform(expr, lambda leaf: _parameter_leaf(leaf, params, value, name))
        visiting.pop()
        if not isinstance(folded, sym.Num):
            raise ModelicaUnsupported(f"parameter {name}: its value is not a number (it reads something other "
                                      "than parameters and constants)", var.pos)
        values[name] = folded.value
        return values[name]

    for name in params:
        value(name)
    return values


def _parameter_leaf(leaf, params, value, owner):
    if isinstance(leaf, sym.Var):
        if leaf.name in params and leaf.order == 0:
            return sym.Num(value(leaf.name))
        raise ModelicaUnsupported(f"parameter {owner}: its binding reads {leaf.name}, which is not a parameter",
                                  leaf.pos)
    if isinstance(leaf, sym.Time):
        raise ModelicaUnsupported(f"parameter {owner}: its binding reads time", leaf.pos)
    if isinstance(leaf, sym.Pre):
        raise ModelicaUnsupported(f"parameter {owner}: its binding reads pre()", leaf.pos)
    return None


def fold_parameters(expr, values: dict):
    def leaf(node):
        if isinstance(node, sym.Var) and node.name in values:
            if node.order:
                return sym.ZERO
            return sym.Num(values[node.name])
        if isinstance(node, sym.Pre) and node.name in values:
            return sym.Num(values[node.name])
        return None
    return sym.transform(expr, leaf)


# ----------------------------------------------------------------------------- 2.-6. the pipeline

def lower(flat: FlatModel, overrides: dict) -> Structure:
    params = parameter_values(flat, overrides)
    variables = flat.variables

    def fold(e):
        return fold_parameters(e, params)

    inputs = [n for n, v in variables.items() if v.top_level and v.causality == "input"
              and v.variability not in ("parameter", "constant")]
    whens = [[(tuple(fold(c) for c in b.conditions), _map_body(b.body, fold), b.pos) for b in chain]
             for chain in flat.whens]
    discrete = _assigned(whens)
    for name in discrete:
        if name in inputs or name in params:
            raise ModelicaUnsupported(f"{name} is assigned in a when-equation but is an input or a parameter",
                                      variables[name].pos)
    equations = [(fold(eq.residual), eq.pos) for eq in flat.equations]
    for name, var in variables.items():
        if var.binding is not None and var.variability not in ("parameter", "constant") and name not in inputs:
            if name in discrete:
                raise ModelicaUnsupported(f"{name} has a declaration equation and is assigned in a when-equation",
                                          var.pos)
            equations.append((fold(sym.sub(sym.Var(name, 0, var.pos), var.binding)), var.pos))
    starts = {}
    for name, var in variables.items():
        if name in params:
            starts[name] = params[name]
            continue
        start = fold(var.start) if var.start is not None else sym.ZERO
        if not isinstance(start, sym.Num):
            raise ModelicaUnsupported(f"the start value of {name} is not a parameter expression", var.pos)
        starts[name] = start.value
    known = set(inputs) | set(discrete)
    discrete_typed = {n for n, v in variables.items() if v.type in ("Integer", "Boolean") or
                      v.variability == "discrete"}
    for name in discrete_typed - known - set(params):
        if any(name == n and order for eq, _ in equations for n, order in sym.instances(eq)):
            raise ModelicaUnsupported(f"der() of the discrete variable {name}", variables[name].pos)
    differentiated = {n for eq, _ in equations for n, order in sym.instances(eq) if order}
    for name in differentiated:
        if name in known:
            raise ModelicaUnsupported(f"der({name}): {name} is an input or assigned in a when-equation",
                                      variables[name].pos)
    conditions = [(fold(eq.residual), eq.pos, 2) for eq in flat.initial_equations]
    mentioned = _mentioned(equations)
    for name, var in variables.items():
        if var.fixed and name not in params and name not in known and name in mentioned:
            conditions.append((sym.sub(sym.Var(name, 0, var.pos), sym.Num(starts[name])), var.pos, 1))

    equations, aliases = eliminate_aliases(equations, variables, inputs, differentiated, discrete_typed | known)
    rename = {("var", n, 0): e for n, e in aliases.items()}
    rename.update({("pre", n, 0): _pre_of(e) for n, e in aliases.items()})

    def resolve(e):
        return sym.substitute(e, rename) if rename else e
    whens = [[(tuple(resolve(c) for c in conds), _map_body(body, resolve), pos) for conds, body, pos in chain]
             for chain in whens]
    conditions = [(resolve(r), pos, strength) for r, pos, strength in conditions]
    outputs = [(n, resolve(sym.Var(n, 0, variables[n].pos))) for n, v in variables.items()
               if v.top_level and v.causality == "output"]
    asserts = [_with_condition(a, resolve(fold(a.condition))) for a in flat.asserts]

    continuous = {n for eq, _ in equations for n, _ in sym.instances(eq)} - known
    relations = _Relations(lambda name: name in continuous and name not in discrete_typed or name in inputs
                           and variables[name].type == "Real")
    equations = [(relations.lift(eq), pos) for eq, pos in equations]
    whens = [[(tuple(relations.lift(c) for c in conds), body, pos) for conds, body, pos in chain] for chain in whens]

    samples = {}
    for chain in whens:
        for conds, _, _ in chain:
            for c in conds:
                for node in sym.walk_nodes(c):
                    if isinstance(node, sym.Call) and node.fn == "sample" and node not in samples:
                        if not all(isinstance(a, sym.Num) for a in node.args):
                            raise ModelicaUnsupported("sample() with a start or interval that is not a parameter "
                                                      "expression", node.pos)
                        if node.args[1].value <= 0.0:
                            raise ModelicaUnsupported("sample() with an interval that is not positive", node.pos)
                        samples[node] = len(samples)
    for eq, pos in equations:
        for node in sym.walk_nodes(eq):
            if isinstance(node, sym.Call) and node.fn in ("sample", "edge", "change"):
                raise ModelicaUnsupported(f"{node.fn}() in a continuous-time equation (it belongs in a when-condition)",
                                          node.pos or pos)
            if isinstance(node, sym.Call) and node.fn in sym.DISCONTINUOUS and not _under_no_event(eq, node):
                raise ModelicaUnsupported(f"{node.fn}() of a continuous quantity generates events, which is not "
                                          "supported; wrap it in noEvent() or compute it in a when-equation",
                                          node.pos or pos)

    unknown_names = continuous
    reduced = reduce_index(equations, unknown_names, known, inputs, discrete_typed, variables, starts, relations.nodes,
                           samples)
    blocks = sort(reduced.equations, reduced.unknowns, variables)
    pre_names = set()
    for e in _all_expressions(reduced.equations, whens, conditions, outputs, asserts):
        for node in sym.walk_nodes(e):
            if isinstance(node, sym.Pre):
                pre_names.add(node.name)
            elif isinstance(node, sym.Call) and node.fn in ("edge", "change") and isinstance(node.args[0], sym.Var):
                pre_names.add(node.args[0].name)
    return Structure(name=flat.name, variables=variables, parameters=params, inputs=inputs, outputs=outputs,
                     states=reduced.states, unknowns=reduced.unknowns, blocks=blocks, discrete=list(discrete),
                     starts=starts, conditions=conditions, relations=relations.nodes, whens=whens,
                     asserts=asserts, pre_names=pre_names, samples=samples, aliases=aliases)


def _mentioned(equations) -> set:
    return {n for eq, _ in equations for n, _ in sym.instances(eq, frozen_relations=False)}


def _under_no_event(root, target) -> bool:
    """Whether ``target`` sits under a noEvent (or smooth) in ``root``."""
    stack = [(root, False)]
    while stack:
        node, shielded = stack.pop()
        if node is target:
            return shielded
        inner = shielded or isinstance(node, sym.Call) and node.fn in ("noEvent", "smooth")
        stack.extend((child, inner) for child in sym.children(node))
    return False


def _with_condition(a, condition):
    return type(a)(condition, a.message, a.warning, a.pos)


def _pre_of(e):
    """pre() of an alias expression: its variables' pre values."""
    def leaf(node):
        if isinstance(node, sym.Var) and node.order == 0:
            return sym.Pre(node.name, node.pos)
        return None
    return sym.transform(e, leaf)


def _map_body(body, fold):
    out = []
    for item in body:
        if isinstance(item, Assign):
            out.append(Assign(item.target, fold(item.value), item.pos))
        elif isinstance(item, Reinit):
            out.append(Reinit(item.state, fold(item.value), item.pos))
        elif isinstance(item, Conditional):
            out.append(Conditional([(fold(c), _map_body(b, fold)) for c, b in item.branches],
                                   _map_body(item.orelse, fold), item.pos))
        elif hasattr(item, "condition"):
            out.append(_with_condition(item, fold(item.condition)))
        else:
            out.append(item)
    return out


def _assigned(whens) -> list:
    out = []

    def visit(body):
        for item in body:
            if isinstance(item, Assign) and item.target not in out:
                out.append(item.target)
            elif isinstance(item, Conditional):
                for _, b in item.branches:
                    visit(b)
                visit(item.orelse)
    for chain in whens:
        for _, body, _ in chain:
            visit(body)
    return out


def _all_expressions(equations, whens, conditions, outputs, asserts):
    yield from (eq for eq, _ in equations)
    yield from (r for r, _, _ in conditions)
    yield from (e for _, e in outputs)
    yield from (a.condition for a in asserts)

    def body_expressions(body):
        for item in body:
            if isinstance(item, (Assign, Reinit)):
                yield item.value
            elif isinstance(item, Conditional):
                for c, b in item.branches:
                    yield c
                    yield from body_expressions(b)
                yield from body_expressions(item.orelse)
            elif hasattr(item, "condition"):
                yield item.condition
    for chain in whens:
        for conds, body, _ in chain:
            yield from conds
            yield from body_expressions(body)


# ----------------------------------------------------------------------------- 3. aliases

def eliminate_aliases(equations, variables, inputs, differentiated, discrete):
    """(the remaining equations, {eliminated name: its expression}): see the module doc."""
    def rank(name):
        # the variable kept of an alias pair: an input, then a state, then a top-level
        # output, then the first declared
        var = variables.get(name)
        top_output = var is not None and var.top_level and var.causality == "output"
        return (0 if name in inputs else 1 if name in differentiated else 2 if top_output else 3)

    order = {name: k for k, name in enumerate(variables)}
    links = {}          # eliminated name -> (k, other name or None, d): name = k*other + d
    kept = []

    def resolve(name):
        """(k, kept name or None, d) of ``name``, the path to it compressed (a union-find:
        a long chain of aliases costs no more than a short one)."""
        path = [name]
        while links[path[-1]][1] in links:
            path.append(links[path[-1]][1])
        k, root, d = links[path[-1]]
        for node in reversed(path[:-1]):      # from the one nearest the root outwards
            k_n, _, d_n = links[node]
            k, d = k_n * k, k_n * d + d_n
            links[node] = (k, root, d)
        return links[name]

    def expression(name):
        k, other, d = resolve(name)
        return sym.Num(d) if other is None else sym.add(sym.mul(sym.Num(k), sym.Var(other)), sym.Num(d))

    def resolved(e):
        names = {n for n, _ in sym.instances(e, frozen_relations=False) if n in links}
        return sym.substitute(e, {("var", n, 0): expression(n) for n in names}) if names else e

    for residual, pos in equations:
        residual = resolved(residual)
        found = _alias_form(residual)
        if found is None:
            kept.append((residual, pos))
            continue
        terms, constant = found
        movable = [n for n, _ in terms if n not in inputs and n not in differentiated and n not in discrete
                   and variables.get(n) is not None and variables[n].type == "Real"]
        if not movable:
            kept.append((residual, pos))
            continue
        victim = max(movable, key=lambda n: (rank(n), order.get(n, 0)))
        coef = dict(terms)[victim]
        others = [(n, c) for n, c in terms if n != victim]
        links[victim] = ((-others[0][1] / coef, others[0][0], -constant / coef) if others
                         else (0.0, None, -constant / coef))
    # the equations kept before a variable of theirs was eliminated
    kept = [(resolved(r), pos) for r, pos in kept]
    return kept, {n: expression(n) for n in links}


def _alias_form(residual):
    """([(name, coefficient)], constant) when ``residual`` is linear with numeric coefficients
    in at most two variables (order 0) and reads nothing else; else None."""
    found = sym.instances(residual, frozen_relations=False)
    if not found or len(found) > 2 or any(order for _, order in found):
        return None
    if any(isinstance(n, (sym.Pre, sym.Time, sym.Call, sym.If, sym.Rel)) for n in sym.walk_nodes(residual)):
        return None
    terms, rest = [], residual
    for inst in sorted(found):
        split = sym.linear_split(rest, inst)
        if split is None or not isinstance(split[0], sym.Num) or split[0].value == 0.0:
            return None
        terms.append((inst[0], split[0].value))
        rest = split[1]
    if not isinstance(rest, sym.Num):
        return None
    return terms, rest.value


# ----------------------------------------------------------------------------- 4. relations

class _Relations:
    """The relation table: each distinct event-generating relation once."""

    def __init__(self, continuous):
        self.continuous = continuous        # name -> whether it varies between events
        self.nodes = []
        self.index = {}

    def lift(self, e):
        """``e`` with its event-generating relations as ``Rel`` nodes (see the module doc)."""
        return self._lift(e, False)

    def _lift(self, e, shielded):
        if isinstance(e, sym.Call) and (e.fn == "noEvent" or e.fn == "smooth" and isinstance(e.args[0], sym.Num)
                                        and e.args[0].value >= 1):
            shielded = True
        kids = sym.children(e)
        if not kids:
            return e
        new = [self._lift(k, shielded) for k in kids]
        out = e if all(a is b for a, b in zip(new, kids)) else sym.rebuild(e, new)
        if isinstance(out, sym.Op) and out.op in sym.RELATIONS and not shielded and self._varies(out):
            key = (out.op, out.args[0], out.args[1])
            k = self.index.get(key)
            if k is None:
                k = self.index[key] = len(self.nodes)
                self.nodes.append(sym.Rel(k, out.op, out.args[0], out.args[1], out.pos or e.pos))
            return self.nodes[k]
        return out

    def _varies(self, node) -> bool:
        for leaf in sym.walk_nodes(node):
            if isinstance(leaf, sym.Time):
                return True
            if isinstance(leaf, sym.Var) and self.continuous(leaf.name):
                return True
        return False


# ----------------------------------------------------------------------------- 5. index reduction

@dataclass
class _Equation:
    residual: object
    pos: object
    level: int = 0
    parent: int | None = None
    derivative: int | None = None


@dataclass
class Reduced:
    equations: list      # (residual, pos)
    unknowns: list       # instances
    states: list         # instances


def reduce_index(equations, unknown_names, known, inputs, discrete_typed, variables, starts, relations,
                 samples) -> Reduced:
    eqs = [_Equation(r, p) for r, p in equations]
    highest = {}
    for e in eqs:
        for n, order in sym.instances(e.residual):
            if n in unknown_names:
                highest[n] = max(highest.get(n, 0), order)
    incidence = [_eligible(e.residual, unknown_names) for e in eqs]

    def rate_of(var):
        if var.name in inputs:
            raise sym.NotDifferentiable(f"the time derivative of the input {var.name}", var.pos)
        if var.name in known or var.name in discrete_typed or var.name not in unknown_names:
            return sym.ZERO
        return sym.Var(var.name, var.order + 1, var.pos)

    assign = {}      # instance -> equation index

    def candidates(k):
        return [inst for inst in sorted(incidence[k]) if inst[1] == highest[inst[0]]]

    def augment(root):
        """Pantelides' augmenting path from equation ``root`` (a depth-first search kept on a
        stack): (True, None, None) when found (the matching is flipped along it), else
        (False, the colored equations, the colored variables)."""
        colored_eqs, colored_vars = {root}, set()

        def free_candidate(k):
            return next((v for v in candidates(k) if v not in assign), None)

        free = free_candidate(root)
        if free is not None:
            assign[free] = root
            return True, None, None
        stack, via = [(root, iter(candidates(root)))], []
        while stack:
            k, options = stack[-1]
            for v in options:
                if v in colored_vars:
                    continue
                colored_vars.add(v)
                nxt = assign[v]
                colored_eqs.add(nxt)
                free = free_candidate(nxt)
                if free is not None:
                    assign[free] = nxt
                    assign[v] = k
                    for depth in range(len(via) - 1, -1, -1):
                        assign[via[depth]] = stack[depth][0]
                    return True, None, None
                stack.append((nxt, iter(candidates(nxt))))
                via.append(v)
                break
            else:
                stack.pop()
                if via:
                    via.pop()
        return False, colored_eqs, colored_vars

    n_original = len(eqs)
    for k in range(n_original):
        i = k
        while True:
            found, colored_eqs, colored_vars = augment(i)
            if found:
                break
            if not incidence[i]:
                raise ModelicaUnsupported("this equation reads no unknown of the model: it only relates inputs, "
                                          "parameters or held values (redundant, or contradicting the others)",
                                          eqs[i].pos)
            for e in sorted(colored_eqs):
                if eqs[e].level >= MAX_DIFFERENTIATIONS:
                    raise ModelicaUnsupported(
                        f"this equation would be differentiated more than {MAX_DIFFERENTIATIONS} times (a "
                        "structurally singular model, or an index above the supported range)", eqs[e].pos)
            for v in colored_vars:
                highest[v[0]] = max(highest[v[0]], v[1] + 1)
            for e in sorted(colored_eqs):
                try:
                    residual = sym.time_derivative(eqs[e].residual, rate_of)
                except sym.NotDifferentiable as exc:
                    raise ModelicaUnsupported(f"index reduction needs to differentiate this equation, which needs "
                                              f"{exc.what}", exc.pos or eqs[e].pos) from None
                eqs.append(_Equation(residual, eqs[e].pos, eqs[e].level + 1, e))
                incidence.append(_eligible(residual, unknown_names))
                eqs[e].derivative = len(eqs) - 1
                for n, order in incidence[-1]:
                    highest[n] = max(highest.get(n, 0), order)
            for v in colored_vars:
                assign[(v[0], v[1] + 1)] = eqs[assign[v]].derivative
            i = eqs[i].derivative

    top = [k for k, e in enumerate(eqs) if e.derivative is None]
    z = sorted({(n, h) for n, h in highest.items()})
    dummies = set()
    rows = top
    start = _start_point(eqs, highest, variables, starts, relations, samples, inputs, known)
    while True:
        differentiated = [k for k in rows if eqs[k].level > 0]
        if not differentiated:
            break
        chosen = _select_dummies([eqs[k] for k in differentiated], z, variables, start)
        dummies.update(chosen)
        z = [(n, o - 1) for n, o in chosen]
        rows = [eqs[k].parent for k in differentiated]
    unknowns = sorted({(n, h) for n, h in highest.items()} | {(n, o - 1) for n, o in dummies})
    unknown_set = set(unknowns)
    states = [(n, j) for n in sorted(highest) for j in range(highest[n]) if (n, j) not in unknown_set]
    return Reduced([(e.residual, e.pos) for e in eqs], unknowns, states)


def _eligible(residual, unknown_names) -> set:
    return {inst for inst in sym.instances(residual) if inst[0] in unknown_names}


def _start_point(eqs, highest, variables, starts, relations, samples, inputs, known):
    """A value vector at the start values (derivatives 0) and its closures builder (relations
    evaluated as they stand), for the Jacobians that choose the dummy derivatives."""
    slots = {("time",): 0}
    values = [0.0]
    for name, h in highest.items():
        for j in range(h + 1):
            slots[("var", name, j)] = len(values)
            values.append(starts.get(name, 0.0) if j == 0 else 0.0)
    for name in set(inputs) | set(known) | set(starts):
        if ("var", name, 0) not in slots:
            slots[("var", name, 0)] = len(values)
            values.append(starts.get(name, 0.0))
    for name in starts:
        slots[("pre", name, 0)] = len(values)
        values.append(starts.get(name, 0.0))
    flags = EventFlags(len(samples))
    return Closures(slots, [0.0] * len(relations), flags, samples, live=True), values


def _select_dummies(rows, columns, variables, start):
    """The columns (instances) of a nonsingular square submatrix of the rows' Jacobian,
    chosen in the order of ``_dummy_preference``."""
    builder, values = start
    jac = np.zeros((len(rows), len(columns)))
    for i, e in enumerate(rows):
        for j, inst in enumerate(columns):
            if inst in sym.instances(e.residual):
                try:
                    jac[i, j] = builder.build(sym.partial(e.residual, inst))(values)
                except ModelicaUnsupported:
                    jac[i, j] = 1.0
    order = sorted(range(len(columns)), key=lambda j: _dummy_preference(columns[j], variables))
    chosen, basis = [], np.zeros((len(rows), 0))
    scale = max(1.0, float(np.abs(jac).max(initial=0.0)))
    for j in order:
        if not np.any(jac[:, j]):
            continue
        trial = np.column_stack([basis, jac[:, j]])
        if np.linalg.matrix_rank(trial, tol=1e-10 * scale) > basis.shape[1]:
            basis = trial
            chosen.append(columns[j])
            if len(chosen) == len(rows):
                return chosen
    raise ModelicaUnsupported("the constraint equations here cannot be solved for any choice of states at the start "
                              "values (a singular constraint, or one needing dynamic state selection)", rows[0].pos)


def _dummy_preference(inst, variables):
    """Sort key: the first is made a dummy derivative first (the state it belongs to becomes
    algebraic): stateSelect never before avoid, default, prefer, always; then the higher
    derivative (a derivative stays a state only where no variable can: the states are named
    variables where possible); then one without a fixed start before one with; then the
    later declared."""
    name, order = inst
    var = variables.get(name)
    select = STATE_SELECT_ORDER.get(var.state_select if var else "default", 2)
    fixed = 1 if var is not None and var.fixed else 0
    declared = list(variables).index(name) if name in variables else 0
    return (select, -order, fixed, -declared)


# ----------------------------------------------------------------------------- 6. sorting

def sort(equations, unknowns, variables) -> list:
    """The blocks of ``equations`` for ``unknowns`` in evaluation order (see the module doc)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components, maximum_bipartite_matching

    n, m = len(equations), len(unknowns)
    column = {inst: j for j, inst in enumerate(unknowns)}
    reads = [sorted({column[i] for i in sym.instances(r) if i in column}) for r, _ in equations]
    if n != m:
        what = "more equations than unknowns" if n > m else "fewer equations than unknowns"
        raise ModelicaUnsupported(f"after index reduction the model has {what} ({n} and {m})",
                                  equations[0][1] if equations else None)
    if n == 0:
        return []
    rows = [i for i, r in enumerate(reads) for _ in r]
    cols = [j for r in reads for j in r]
    incidence = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, m))
    match = maximum_bipartite_matching(incidence, perm_type="column")    # equation -> unknown
    unmatched = [i for i in range(n) if match[i] < 0]
    if unmatched:
        raise ModelicaUnsupported("the model is structurally singular: this equation (and others) cannot be "
                                  "solved for the unknowns left to it (an over-determined part, e.g. two "
                                  "equations fixing the same variable)", equations[unmatched[0]][1])
    owner = {int(match[i]): i for i in range(n)}        # unknown -> equation
    edges_r = [i for i in range(n) for j in reads[i] if owner[j] != i]
    edges_c = [owner[j] for i in range(n) for j in reads[i] if owner[j] != i]
    graph = csr_matrix((np.ones(len(edges_r)), (edges_r, edges_c)), shape=(n, n))
    _, labels = connected_components(graph, directed=True, connection="strong")
    members: dict = {}
    for i, label in enumerate(labels):
        members.setdefault(int(label), []).append(i)
    sorter = graphlib.TopologicalSorter({label: set() for label in members})
    for a, b in zip(edges_r, edges_c):
        if labels[a] != labels[b]:
            sorter.add(int(labels[a]), int(labels[b]))     # a's block needs b's first
    blocks = []
    for label in sorter.static_order():
        eq_ids = members[label]
        blocks.append(Block([equations[i] for i in eq_ids], [unknowns[int(match[i])] for i in eq_ids]))
    return blocks
