"""Block handlers, one module per nflow library, registered by type name.

A handler is ``build(io: BlockIO) -> Phases``: it reads its resolved params and port
slots from ``io`` once (at compile time) and returns the closures the engine calls per
step. Signals live in one flat list ``io.S``: a width-1 signal is a Python float, a
wider one a 1-D numpy array that is replaced, never mutated in place. Only UPDATE (and
AFTER_STEP for recorders) may change block state; OUTPUT and ALGEBRAIC must be pure so
that solvers and algebraic-loop sweeps can re-enter them.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np

from ..errors import DiagramError
from ..manifests import block_types
from ..parts import Part

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


REGISTRY: dict[str, Handler] = {}

# Handler modules, grouped like nflow's libraries; importing one registers its blocks.
MODULES = ("source", "sink", "math", "logic", "nonlinear", "discrete", "continuous", "utility",
           "mechanical", "lookup", "dashboard", "userdefined", "fmi")


# Types that validate but are deliberately not run here, and why (the error says so).
NOT_RUNNABLE = {
    "nelsonFunction": "it calls a Nelson function by name, which needs the Nelson interpreter; "
                      "write the computation as an `expression` block, or run the diagram in Nelson",
    "modelica": "it compiles Modelica source, which needs a Modelica tool",
}


def _always(value):
    return lambda block: value


def block(type_name: str, *, widths=None, feedthrough=True, complex=REAL_ONLY, pure=False,
          reads_after_step=False):
    """Register ``build`` as the handler of ``type_name``. ``feedthrough`` is True (every
    input feeds through in ALGEBRAIC), False, a set of ports, or a callable of the block
    returning one of those. ``complex`` is the type's ``(accepts, output)`` complex
    support (see ``ComplexSupport``; default: real inputs only, real outputs). ``pure``
    and ``reads_after_step`` let solver stages skip what only feeds recorders (see
    ``Handler``; ``engine.continuous``)."""
    support = ComplexSupport(*complex)
    if support.output not in (-1, 0, 1):
        raise ValueError(f"{type_name}: complex output must be -1, 0 or 1, not {support.output!r}")

    def register(build):
        REGISTRY[type_name] = Handler(
            type=type_name, build=build, widths=widths or elementwise,
            feedthrough=feedthrough if callable(feedthrough) else _always(feedthrough), complex=support,
            pure=pure, reads_after_step=reads_after_step)
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


def load_all() -> dict:
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}")
    return REGISTRY


class BlockIO:
    """What a handler sees of its block: params, slots into the signal store, context."""

    __slots__ = ("block", "id", "params", "S", "ctx", "ins", "in_widths", "outs", "out_widths", "variables",
                 "physical", "solver", "slot_of", "block_ids")

    def __init__(self, block, S, ctx, ins, in_widths, outs, out_widths, variables=None, physical=None,
                 solver="discrete", slot_of=None, block_ids=()):
        self.block = block
        self.block_ids = block_ids         # every block id of the diagram (binding suggestions)
        self.slot_of = slot_of or (lambda block_id, port: None)  # another block's output slot (bindings)
        self.solver = solver               # the diagram's solver: continuous blocks integrate under it
        self.physical = physical           # acausal blocks: their share of a lowered island
        self.variables = variables or {}   # the diagram's variables (name -> float or array)
        self.id = block.id
        self.params = block.params
        self.S = S
        self.ctx = ctx
        self.ins = ins                # slot per input port, None when unconnected
        self.in_widths = in_widths    # 0 when unconnected
        self.outs = outs
        self.out_widths = out_widths

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


def supported_types() -> list:
    """Every type with both a manifest entry and a handler: what `nflow-sim blocks` lists."""
    types = block_types()
    return [{"type": t, "library": types[t].library, "label": types[t].label}
            for t in sorted(load_all(), key=lambda t: (types[t].library, t.lower())) if t in types]
