"""One generated step function for the blocks a fixed-step plan keeps in its loop.

nflow emits C from its handlers' templates; here the plan emits the Python source of its
fixed-step loop from the templates its handlers declare (``Phases.code``) and compiles it
once. The function runs the grid steps of a slice: per step OUTPUT, ALGEBRAIC, UPDATE and
AFTER_STEP in the plan's order, each block's template inlined where its closure was
called, the vectorized signals the loop reads taken from their columns
(``engine.vectorize``) at their producer's place, and a call of the closure for
everything else: blocks without a template, algebraic-loop relaxations, conditional and
iterated subsystems. A signal a template writes (or a column feeds) lives in a local
variable; it is written through to the signal store where something else may read it
there (a closure's input or ``reads``, a binding, anything in a plan with subsystems),
else stored when the function returns.

Only template texts, which are ours, become source: every name in a template is replaced
by one made here from block and slot numbers (``_template`` parses the text, ``_name``
maps each name and refuses a write to an input or a constant), and the values the
statements use (parameters, state, closures) enter as arguments of the function. Block
ids, parameter values and user strings never do.
"""
from __future__ import annotations

import ast
import functools
import re

from ..blocks import Code
from ..generated import run_generated
from .context import blame

PHASES = ("output", "algebraic", "update", "after_step")
_TEMPLATE_PHASES = ("output", "algebraic", "update")
_BODY = 16     # the indent of a step's statements in the generated function
_MARK = re.compile("\0(\\w+)\0")
_PORT = re.compile("([uy])([0-9]+)")


@functools.lru_cache(maxsize=1024)   # bounded: a template text may depend on a port count
def _template(text: str) -> tuple:
    """(format string with ``{name}`` for every name, names read, names written) of one
    template's statements."""
    tree = ast.parse(text)
    read, written = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else written).add(node.id)
            node.id = f"\0{node.id}\0"
    source = ast.unparse(tree).replace("{", "{{").replace("}", "}}")
    return _MARK.sub(r"{\1}", source), frozenset(read), frozenset(written)


class StepFunction:
    """The compiled function and what it is bound to. ``run(k0, k1, chunk, feeds, state,
    check)`` runs grid steps k0 .. k1-1 (``check(done)`` after every ``chunk`` of them) and
    returns the number of steps done when it ends (fewer on a stop); ``feeds`` holds an
    iterator over the column of each slot of ``fed``, in that order; ``state`` (from
    ``start()``) carries the templates' state from slice to slice. An exception escaping
    the steps is blamed (``context.blame``) on the phase closure whose call or inlined
    statements stand at the line it escaped from."""

    def __init__(self, source: str, line_call: dict, fed: list, constants: tuple, calls: tuple,
                 state: tuple, S, ctx, inlined: int):
        self.source = source
        self.inlined = inlined             # blocks whose templates it runs
        self.calls = calls                 # the closures it calls
        self.line_call = line_call         # line of the source -> the phase closure it calls or inlines
        self.fed = fed
        self.initial_state = state
        namespace = run_generated(source, "<nflow step function>", {"range": range, "zip": zip, "Exception": Exception})
        self.function = namespace["step"]
        self.bound = (S, ctx, ctx.dt, constants, calls, blame, line_call)

    def start(self) -> list:
        return list(self.initial_state)

    def run(self, k0: int, k1: int, chunk: int, feeds: list, state: list, check) -> int:
        return self.function(k0, k1, chunk, feeds, state, *self.bound, check)


def generate(plan, vector, bound_slots) -> StepFunction | None:
    """The step function of ``plan`` with the vectorized set ``vector`` (or None) left
    out of the loop; None when nothing is left to run in it. ``bound_slots``: slots read
    through bindings, outside the wiring."""
    if vector is not None and all(id(f) in vector.left_out and not vector.feeds.get(id(f))
                                  for name in PHASES for f in getattr(plan, name)):
        return None
    return _Builder(plan, vector, bound_slots).build()


class _Builder:
    def __init__(self, plan, vector, bound_slots):
        self.plan, self.vector = plan, vector
        self.phases = plan.phases
        self.ins, self.outs = plan.input_slots, plan.output_slots
        self.owner = {}             # id of a phase closure -> (block index, phase)
        for i, p in enumerate(plan.phases):
            for name in PHASES:
                fn = getattr(p, name)
                if fn is not None:
                    self.owner.setdefault(id(fn), (i, name))
        self.lists = {name: getattr(plan, name) for name in PHASES}
        listed = {name: {id(f) for f in fns} for name, fns in self.lists.items()}
        left_out = vector.left_out if vector is not None else set()
        self.inlined = {i for i, p in enumerate(plan.phases)
                        if _inlinable(p, listed) and id(p.output or p.algebraic or p.update) not in left_out}
        self.fed = [s for slots in (vector.feeds.values() if vector is not None else ()) for s in slots]
        # slots kept in locals: written by templates or fed from the columns
        self.local = {s for i in self.inlined for s in self.outs[i]} | set(self.fed)
        structure = plan.diagram.structure
        if structure is not None and structure.groups:   # subsystems read control signals by slot
            self.stored = set(self.local)
        else:
            self.stored = set(bound_slots)
            off_loop = vector.blocks if vector is not None else set()
            for i, p in enumerate(plan.phases):
                self.stored.update(p.reads)
                if i not in self.inlined and i not in off_loop:
                    self.stored.update(s for s in self.ins[i] if s is not None)
        self.lines, self.line_call = [], {}
        self.calls, self.call_names = [], []
        self.constants, self.state = {}, {}     # generated name -> value, in order of first use

    def build(self) -> StepFunction | None:
        vector = self.vector
        left_out = vector.left_out if vector is not None else set()
        body_start = len(self.lines)
        for phase in PHASES:
            for fn in self.lists[phase]:
                if id(fn) in left_out:
                    self._feed(fn)
                elif self.owner.get(id(fn), (None,))[0] in self.inlined:
                    self._inline(*self.owner[id(fn)], fn)
                else:
                    self._call(fn)
        if len(self.lines) == body_start:
            return None
        body, body_calls = self.lines, self.line_call
        self.lines, self.line_call = [], {}
        state = ", ".join(self.state)
        self._emit("def step(k0, k1, chunk, feeds, state, S, ctx, dt, constants, calls, blame, line_call, check):", 0)
        for names, value in ((list(self.constants), "constants"), (self.call_names, "calls"),
                             (list(self.state), "state")):
            if names:
                self._emit(f"({', '.join(names)},) = {value}", 4)
        local = sorted(self.local)
        if local:
            self._emit(f"({', '.join(f's{s}' for s in local)},) = ({', '.join(f'S[{s}]' for s in local)},)", 4)
        if self.fed:
            self._emit(f"({', '.join(f'i{s}' for s in self.fed)},) = feeds", 4)
        # one try around the steps (free while nothing raises): an exception is blamed on
        # the phase closure of the line it escaped from
        self._emit("try:", 4)
        self._emit("for c in range(k0, k1, chunk):", 8)
        self._emit("e = c + chunk if c + chunk < k1 else k1", 12)
        values = "".join(f", n{s}" for s in self.fed)
        iterators = "".join(f", i{s}" for s in self.fed)
        self._emit(f"for k{values} in zip(range(c, e){iterators}):" if self.fed else "for k in range(c, e):", 12)
        self._emit("t = k * dt", _BODY)
        self._emit("ctx.t = t", _BODY)
        self._emit("ctx.k = k", _BODY)
        offset = len(self.lines)
        self.lines += body
        self.line_call.update({offset + n: fn for n, fn in body_calls.items()})
        kept = sorted(self.local - self.stored)

        def finish(indent: int, result: str):
            if state:
                self._emit(f"state[:] = ({state},)", indent)
            if kept:
                self._emit(f"({', '.join(f'S[{s}]' for s in kept)},) = ({', '.join(f's{s}' for s in kept)},)", indent)
            self._emit(f"return {result}", indent)
        self._emit("if ctx.stop:", _BODY)
        finish(_BODY + 4, "k + 1")
        self._emit("check(e)", 12)
        self._emit("except Exception as exc:", 4)
        self._emit("blame(exc, line_call.get(exc.__traceback__.tb_lineno))", 8)
        self._emit("raise", 8)
        finish(4, "k1")
        source = "\n".join(self.lines) + "\n"
        line_call = {n + 1: fn for n, fn in self.line_call.items()}    # 1-based, as tracebacks count
        return StepFunction(source, line_call, self.fed, tuple(self.constants.values()), tuple(self.calls),
                            tuple(self.state.values()), self.plan.S, self.plan.ctx, len(self.inlined))

    def _emit(self, line: str, indent: int, fn=None):
        """One line of source; ``fn``: the phase closure it calls or stands for."""
        if fn is not None:
            self.line_call[len(self.lines)] = fn
        self.lines.append(" " * indent + line)

    def _feed(self, fn):
        for s in self.vector.feeds.get(id(fn), ()):
            self._emit(f"s{s} = n{s}", _BODY, fn)
            if s in self.stored:
                self._emit(f"S[{s}] = s{s}", _BODY, fn)

    def _call(self, fn):
        name = f"f{len(self.calls)}"
        self.calls.append(fn)
        self.call_names.append(name)
        self._emit(f"{name}()", _BODY, fn)

    def _inline(self, i: int, phase: str, fn):
        """The template statements of block ``i``'s ``phase``, standing for its closure ``fn``."""
        template: Code = self.phases[i].code
        text, read, written = _template(getattr(template, phase))
        names = {}
        for name in read | written:
            names[name] = self._name(i, template, name, name in written)
        for line in text.format_map(names).split("\n"):
            self._emit(line, _BODY, fn)
        for name in sorted(written):
            port = _PORT.fullmatch(name)
            if port is not None and self.outs[i][int(port.group(2))] in self.stored:
                s = self.outs[i][int(port.group(2))]
                self._emit(f"S[{s}] = s{s}", _BODY, fn)

    def _name(self, i: int, template: Code, name: str, written: bool) -> str:
        """The generated name (or slot-store read) standing for template name ``name`` of
        block ``i``."""
        port = _PORT.fullmatch(name)
        if port is not None:
            kind, n = port.group(1), int(port.group(2))
            slots = self.ins[i] if kind == "u" else self.outs[i]
            if n >= len(slots) or slots[n] is None or (kind == "u" and written):
                raise ValueError(f"template of block {i}: {name} is not a {'writable' if written else 'readable'} port")
            s = slots[n]
            return f"s{s}" if s in self.local else f"S[{s}]"
        if name in ("t", "k"):
            if written:
                raise ValueError(f"template of block {i}: {name} is read only")
            return name
        if name in template.constants:
            if written:
                raise ValueError(f"template of block {i}: constant {name} is read only")
            return self._bind(i, name, template.constants[name])
        if name in template.state:
            return self._state(i, name, template.state[name])
        return f"v{i}_{name}"      # a temporary: Python raises if it is read before it is written

    def _bind(self, i: int, name: str, value) -> str:
        generated = f"c{i}_{name}"
        self.constants.setdefault(generated, value)
        return generated

    def _state(self, i: int, name: str, value) -> str:
        generated = f"x{i}_{name}"
        self.state.setdefault(generated, value)
        return generated


def _inlinable(p, listed) -> bool:
    """Whether a block's phases can all be inlined: it has a template for exactly the
    phases it has closures for (no AFTER_STEP), each called from the plan's top-level
    lists (not from a subsystem or an algebraic-loop relaxation)."""
    template = p.code
    if template is None or p.after_step is not None:
        return False
    for name in _TEMPLATE_PHASES:
        fn = getattr(p, name)
        if (fn is None) != (not getattr(template, name)) or (fn is not None and id(fn) not in listed[name]):
            return False
    return True
