"""Block handlers, one module per nflow library, registered by type name.

A handler is ``build(io: BlockIO) -> Phases``: it reads its resolved params and port
slots from ``io`` once (at compile time) and returns the closures the engine calls per
step. Signals live in one flat list ``io.S``: a width-1 signal is a Python float, a
wider one a 1-D numpy array that is replaced, never mutated in place. Only UPDATE (and
AFTER_STEP for recorders) may change block state; OUTPUT and ALGEBRAIC must be pure so
that solvers and algebraic-loop sweeps can re-enter them.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np

from ..errors import DiagramError
from ..generated import run_generated
from ..normalize import SOLVERS
from ..parts import Part, crossing_part

Fn = Callable[[], None]


@dataclass
class Phases:
    init: Fn | None = None          # reset state; called once at the start of every run
    output: Fn | None = None        # state/time-only outputs, declaration order
    algebraic: Fn | None = None     # direct feedthrough, topological order, pure
    update: Fn | None = None        # commit state at the end of a major step
    after_step: Fn | None = None    # recorders, stop flag
    result: Callable[[], tuple] | None = None  # (section, key, value) for the run's result
    continuous: int = 0             # continuous states owned (integrated by a solver, not yet ported)
    part: Part | None = None        # continuous state, surfaces or an algebraic unknown for the solvers
    next_time_event: Callable[[float], float] | None = None  # first input jump after t (inf if none)
    # time_scale(t0, t1): the shortest stretch of [t0, t1] over which the output can rise and
    # fall back (half a period of a sine, one interval of played-back samples), inf if none;
    # solvers check event functions several times per such stretch
    time_scale: Callable[[float, float], float] | None = None
    feedthrough: object = None      # overrides the handler's feedthrough for this instance (e.g. under a solver)
    reads: tuple = ()               # signal slots ALGEBRAIC reads besides the block's wired inputs (a circuit
                                    # sensor reads what drives its island): ordered after their writers
    finalize: Fn | None = None      # release what INIT acquired (an FMU instance); called once the run has
                                    # ended, however it ended (error, Ctrl-C), also when INIT itself failed
    recorded: int = 0               # numbers a recorder keeps over a run (Limits.max_recorded_values)
    # rate(R): write the exact time derivative of each output into R[slot], from R at the input
    # slots and the current signals; a speed source driven by a signal needs it (the
    # acceleration of its flange), so it is asked of that signal's writers (engine.rates)
    rate: Callable[[list], None] | None = None
    rate_reads: tuple = ()          # signal slots whose rates ``rate`` reads besides the wired inputs'
    # array(t, inputs) -> outputs: what OUTPUT / ALGEBRAIC write over many grid steps at once,
    # for a block whose outputs are pure functions of time and its inputs (engine.vectorize):
    # t the steps' times, inputs one float array per input port (None: unconnected), one
    # float array per output port back. Declared only where every step of the closures
    # would give bit for bit the same floats (the same IEEE operations in the same order,
    # math.* functions mapped over the elements, never numpy's own transcendental
    # functions) and cannot raise
    array: Callable[[np.ndarray, list], list] | None = None
    code: Code | None = None        # the closures as a template for the generated step function
    # What the engine may assume of OUTPUT / ALGEBRAIC beyond the handler's ``@block(pure=...)``:
    # ``pure``, they only read what the block senses (an acausal sensor reading its island),
    # also where the block carries that island's part; ``linear``, output slot -> the linear
    # terms in its island's state that the slot holds (``physical.islands.linear_reader``);
    # ``of_state``, output slot -> ``(part, pick)``, a circuit probe's value picked from its
    # island's unknowns solved on the grid states. Solver stages skip pure closures that feed
    # only recorders; recorders of ``linear`` / ``of_state`` slots are filled after a free run
    # (engine.stages, engine.recording)
    pure: bool = False
    linear: dict | None = None
    of_state: dict | None = None
    bulk: BulkRecord | None = None  # a recorder's AFTER_STEP over many steps at once
    # What the result says of the columns (engine.columns): ``records``, a recorder's (section,
    # key) in the result, under which its declared inputs are recorded in port order;
    # ``parts``, output 0 is the declared inputs concatenated, per input the name of its
    # part (None: named after the block driving it)
    records: tuple | None = None
    parts: tuple | None = None


@dataclass(frozen=True, slots=True)
class BulkRecord:
    """What ``len(step_times)`` consecutive AFTER_STEP calls of a recorder would record, at
    once: ``record(step_times, column)`` with each step's ``ctx.t`` and the input at each
    step (a 1-D float array; None for an unconnected input); ``slot``: the input's signal
    slot (None: unconnected)."""
    record: Callable[[np.ndarray, np.ndarray | None], None]
    slot: int | None


@dataclass(slots=True)
class Code:
    """A block's per-step closures as Python statements, inlined into the plan's generated
    fixed-step function (engine.codegen) in place of the calls. Only these texts, which are
    ours, become source; everything else enters by name. Names in the statements: ``u0``,
    ``u1``, ... the inputs (read only), ``y0``, ``y1``, ... the outputs, ``t`` the time,
    the keys of ``constants`` (values bound to the function, read only), of ``state``
    (values kept from step to step, set to the given ones at the start of every run) and
    temporaries (assigned before they are read). The statements of a phase must do what
    that phase's closure does at a committed fixed step (``ctx.side_effect_free`` is
    false there)."""
    output: str = ""
    algebraic: str = ""
    update: str = ""
    constants: dict = field(default_factory=dict)
    state: dict = field(default_factory=dict)


class ComplexSupport(NamedTuple):
    """nflow's ``setComplexSupport(type, accepts, forcesComplexOut)``: whether the block
    takes complex inputs, and what its outputs are: 1 always complex, 0 always real, -1
    complex when any input is complex. Checked once, when the plan is compiled."""
    accepts: bool = False
    output: int = 0


REAL_ONLY = ComplexSupport(False, 0)     # every type that does not say otherwise


@dataclass
class Handler:
    type: str
    build: Callable
    widths: Callable            # (io_block, in_widths) -> list of output widths
    feedthrough: Callable       # (block) -> bool, or the set of input ports whose current
                                # values ALGEBRAIC outputs depend on
    complex: ComplexSupport = REAL_ONLY   # complex inputs accepted / outputs complex
    pure: bool = False          # OUTPUT / ALGEBRAIC are pure functions of time and inputs: no
                                # state, no warning, nothing read from ctx.side_effect_free
    reads_after_step: bool = False   # reads its inputs only in AFTER_STEP (recorders, stop)
    prepare: Callable | None = None  # prepare(block, base_dir, limits): fills the block's params
                                     # before widths are worked out (a fileSource reads its file)
    # its part in the execution groups (engine.groups): ``calls(block)``, the function calls a
    # step it makes to the function-call subsystems its output drives (None: it makes none);
    # ``routes_calls``, it passes a function call on to its outputs; ``loop_condition``, its
    # output 0 decides whether its while-iterator subsystem goes on
    calls: Callable | None = None
    routes_calls: bool = False
    loop_condition: bool = False
    # its part in a linearization (``engine.linearize``): ``model_port(block)`` is "input"
    # (a model input, nflow's external-port labelSource), "output" (a labelSink) or None
    model_port: Callable | None = None
    # how it runs under the diagram's solver (the block reference prints it; tests/test_docs.py
    # checks it against compiled plans): ``solvers``, the ones it runs under (another is an
    # error of its build); ``solver_role``: "state", its continuous state is the solver's under
    # ode4/ode45/dae (parts.SOLVER_OWNED) and nflow's fixed-step update's under discrete/ode1;
    # "crossings", its switching points are zero-crossing surfaces under those solvers;
    # "algebraic", its output is an algebraic unknown of the solver; "part", it is a part of
    # the solver's system under every solver (a model-exchange FMU)
    solvers: tuple = SOLVERS
    solver_role: str | None = None
    # lower(diagram, ctx, S, input_slots) -> {block index: its share}: the blocks whose handlers
    # name the same function are lowered by it together before any block is built (the acausal
    # blocks onto the physical networks, ``physical.islands.lower``); a block's share is its
    # ``io.physical``. The plan calls only the functions of the types it holds
    lower: Callable | None = None
    # its plan holds what it read from files while compiling (a fileSource's samples, an FMU):
    # such a plan is compiled again for every request that names it (nflow-sim serve)
    reads_files: bool = False


REGISTRY: dict[str, Handler] = {}

# Types that validate but are deliberately not run here, and why (the error says so).
NOT_RUNNABLE: dict[str, str] = {}


def _always(value):
    return lambda block: value


def block(type_name: str, *, widths=None, feedthrough=True, complex=REAL_ONLY, **declared):
    """Register ``build`` as the handler of ``type_name``. ``feedthrough`` is True (every
    input feeds through in ALGEBRAIC), False, a set of ports, or a callable of the block
    returning one of those. ``complex`` is the type's ``(accepts, output)`` complex
    support (see ``ComplexSupport``; default: real inputs only, real outputs). ``declared``:
    the further ``Handler`` fields the engine reads (``pure``, ``reads_after_step``,
    ``prepare``, the execution-group roles, ``lower``, ``reads_files``) and those that say
    how it runs under the solvers (``solvers``, ``solver_role``)."""
    support = ComplexSupport(*complex)
    if support.output not in (-1, 0, 1):
        raise ValueError(f"{type_name}: complex output must be -1, 0 or 1, not {support.output!r}")

    def register(build):
        REGISTRY[type_name] = Handler(
            type=type_name, build=build, widths=widths or elementwise,
            feedthrough=feedthrough if callable(feedthrough) else _always(feedthrough), complex=support,
            **declared)
        return build
    return register


# ----------------------------------------------------------------------------- width rules

def elementwise(block, in_widths):
    """Output 0 is as wide as the widest input; every input is that wide or scalar."""
    widths = [w for w in in_widths if w]
    out = max(widths, default=1)
    for port, w in enumerate(in_widths):
        if w not in (0, 1, out):
            raise DiagramError("width_mismatch", f"block {block.id!r} ({block.type.type}): input {port} has "
                               f"width {w} but another input has width {out}; widths must agree or be 1",
                               block=block.id, path=block.path)
    return [out] * max(block.outputs, 1 if block.outputs else 0)


def scalar_out(block, in_widths):
    return [1] * block.outputs


def no_outputs(block, in_widths):
    return []


def param_width(name: str):
    """Output as wide as the param's value (a vector param), else as the input."""
    def rule(block, in_widths):
        value = block.params.get(name)
        n = getattr(value, "size", 1)
        if n > 1:
            return [int(n)] * block.outputs
        return elementwise(block, in_widths)
    return rule


class BlockIO:
    """What a handler sees of its block: params, slots into the signal store, context."""

    __slots__ = ("block", "id", "params", "S", "ctx", "ins", "in_widths", "outs", "out_widths", "_variables",
                 "read_variables", "physical", "solver", "slot_of", "block_ids")

    def __init__(self, block, S, ctx, ins, in_widths, outs, out_widths, variables=None, physical=None,
                 solver="discrete", slot_of=None, block_ids=()):
        self.block = block
        self.block_ids = block_ids         # every block id of the diagram (binding suggestions)
        self.slot_of = slot_of or (lambda block_id, port: None)  # another block's output slot (bindings)
        self.solver = solver               # the diagram's solver: continuous blocks integrate under it
        self.physical = physical           # acausal blocks: their share of a lowered island
        self._variables = variables or {}  # the diagram's variables (name -> float or array)
        self.read_variables = False        # whether the handler read them (new values rebuild it)
        self.id = block.id
        self.params = block.params
        self.S = S
        self.ctx = ctx
        self.ins = ins                # slot per input port, None when unconnected
        self.in_widths = in_widths    # 0 when unconnected
        self.outs = outs
        self.out_widths = out_widths

    @property
    def variables(self) -> dict:
        """The diagram's variables (name -> float or array), for a handler that evaluates
        expressions itself; reading them marks the block as depending on them, so a plan
        run with new variables (``Plan.with_params``) builds it again."""
        self.read_variables = True
        return self._variables

    @property
    def declared_ins(self) -> list:
        """The input ports the diagram declares (``io.ins`` is padded with unconnected
        ports up to the manifest's count, so handlers may index it safely); blocks whose
        behavior depends on the port count (sum, logic, mux, scope) iterate these."""
        return self.ins[:self.block.inputs]

    @property
    def width(self) -> int:
        """Width of output 0 (or of input 0 for sinks)."""
        if self.out_widths:
            return self.out_widths[0]
        return max(1, self.in_widths[0]) if self.in_widths else 1

    def shared(self, key: str, factory):
        """The object ``key`` shared by the blocks of this plan (data stores, goto/from
        routes), made by ``factory(ctx)`` on first use."""
        obj = self.ctx.shared.get(key)
        if obj is None:
            obj = self.ctx.shared[key] = factory(self.ctx)
        return obj

    def fail(self, code: str, message: str, param: str | None = None):
        raise DiagramError(code, f"block {self.id!r} ({self.block.type.type}): {message}",
                           **self.block.where(param))

    def initial(self, name: str, width: int | None = None):
        """An initial-condition param sized to ``width``: a scalar is broadcast, a short
        list repeats its last element (nflow's rule)."""
        return fit(self.params.get(name, 0.0), self.width if width is None else width)


def pointwise(io: BlockIO, ports: tuple, vector: Callable, *, code: Code | None = None, scalar: Callable | None = None,
              array=None, **fields) -> Phases:
    """The Phases of a block whose output 0 is an element-wise law of its input ``ports``
    (all connected), written once for each kind of signal: on floats as the template
    ``code`` (``Code.algebraic``: ``y0`` from ``u0``, ``u1``, ...) or, for a block without
    one, as the function ``scalar``; on numpy arrays as ``vector`` (width-1 inputs
    broadcast). At width 1, ALGEBRAIC runs the template's statements (or ``scalar``), and
    the block declares its template and its grid form ``array`` (``Phases.array``, None:
    none). Wider, it writes ``vector``, or the scalar law filled out to the width where
    every input is width 1 (a wider port is declared beside them). ``fields``: further
    ``Phases`` fields (a crossing part)."""
    S, o, width = io.S, io.outs[0], io.width
    slots = [io.ins[port] for port in ports]
    template = code     # (a name the security scan does not take for the ``code`` module)
    if template is not None:
        make_closure, make_law = _template_functions(template.algebraic, len(slots), tuple(template.constants))
        values = tuple(template.constants.values())
        if width == 1:    # the statements inline, as in the generated step function
            return Phases(algebraic=make_closure(S, o, *slots, *values), array=array, code=code, **fields)
        scalar = make_law(*values)
    if width == 1:
        law, fields = scalar, dict(fields, array=array)
    elif all(io.in_widths[port] <= 1 for port in ports):
        full = np.full

        def law(*u):
            return full(width, scalar(*u))
    else:
        law = vector
    if len(slots) == 1:
        (a,) = slots

        def algebraic():
            S[o] = law(S[a])
    elif len(slots) == 2:
        a, b = slots

        def algebraic():
            S[o] = law(S[a], S[b])
    else:
        def algebraic():
            S[o] = law(*[S[s] for s in slots])
    return Phases(algebraic=algebraic, **fields)


@functools.lru_cache(maxsize=1024)   # bounded: a template text may depend on a port count
def _template_functions(text: str, arity: int, constants: tuple) -> tuple:
    """Two makers compiled once per template (``Code.algebraic`` of an element-wise block,
    ours, never a user string): ``make_closure(S, o, slot0, ..., *constant values)``, the
    ALGEBRAIC closure that runs the statements on the signal store, and ``make_law(*constant
    values)``, the function of the inputs' values that returns ``y0``. The template's names
    enter as the makers' parameters; everything else it uses is one of its constants."""
    inputs = [f"u{k}" for k in range(arity)]
    statements = text.strip().split("\n")
    closure = ([f"def make_closure(_S, _o, {', '.join([f'_s{k}' for k in range(arity)] + list(constants))}):",
                "    def algebraic():"]
               + [f"        {u} = _S[_s{k}]" for k, u in enumerate(inputs)]
               + [f"        {line}" for line in statements]
               + ["        _S[_o] = y0", "    return algebraic"])
    law = ([f"def make_law({', '.join(constants)}):", f"    def law({', '.join(inputs)}):"]
           + [f"        {line}" for line in statements]
           + ["        return y0", "    return law"])
    namespace = run_generated("\n".join(closure + law), "<element-wise template>", {})
    return namespace["make_closure"], namespace["make_law"]


def pointwise_state(io: BlockIO, scalar: Callable, vector: Callable, start, switches: Callable | None = None) -> Phases:
    """The Phases of a block whose output 0 is an element-wise law of its input 0 and of
    its own state, ``law(u, state)`` (a relay, a slew-rate limit): ALGEBRAIC writes it for
    the current input, UPDATE keeps it as the next state, which INIT sets to ``start``
    (every element). ``scalar`` on floats at width 1, else ``vector`` on arrays; an
    unconnected input reads 0.

    ``switches(u, state)`` (a float array, one surface per element): where the law leaves
    the output the state holds, for a block whose output jumps there (a relay). Under a
    solver that owns continuous state they are zero-crossing surfaces and the state also
    latches at every located event, as UPDATE would there (Modelica's ``pre`` moves on at
    an event): between two grid points the block keeps its memory instead of answering
    every input from the state of the last grid point, which would switch it back as soon
    as its input re-entered the band (a physical state on its threshold, chattering). Its
    UPDATE is then left out: every change of the state is at an event (a grid point would
    latch what the last event latched), so it asks for no restart at each grid point; and
    between events (``ctx.between_events``) the output is the latched value, as Modelica
    freezes relations there, so no solver step straddles its jump."""
    S, o, width = io.S, io.outs[0], io.width
    i = io.ins[0] if io.ins else None
    law, zero = (scalar, 0.0) if width == 1 else (vector, np.zeros(width))
    state = start

    def init():
        nonlocal state
        state = start if width == 1 else np.full(width, start)

    def algebraic():
        S[o] = law(S[i] if i is not None else zero, state)

    def update():
        nonlocal state
        state = law(S[i] if i is not None else zero, state)

    part = None
    if switches is not None and i is not None:
        def surfaces():
            return switches(S[i], state)

        def latch(x):
            update()
            return x
        part = crossing_part(io, surfaces, on_event=latch)
    if part is None:
        return Phases(init=init, algebraic=algebraic, update=update)
    ctx = io.ctx

    def hybrid_algebraic():
        S[o] = state if ctx.between_events else law(S[i], state)
    return Phases(init=init, algebraic=hybrid_algebraic, part=part)


def fit(value, width: int):
    """float for width 1, else a float array of ``width`` (scalar broadcast, last repeated)."""
    arr = np.atleast_1d(np.asarray(value, dtype=float)).reshape(-1)
    if width == 1:
        return float(arr[0]) if arr.size else 0.0
    if arr.size == 0:
        return np.zeros(width)
    if arr.size >= width:
        return arr[:width].copy()
    return np.concatenate([arr, np.full(width - arr.size, arr[-1])])
