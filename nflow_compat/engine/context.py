"""The run context every handler sees: time, step, stop flag, events, warnings, and the
state of the execution groups (conditional / iterated subsystems) its block sits in."""
from __future__ import annotations


class Ctx:
    __slots__ = ("t", "dt", "n_samples", "k", "stop", "side_effect_free", "between_events", "events", "warnings",
                 "shared")

    def __init__(self, dt: float, n_samples: int = 0):
        self.dt = dt
        self.n_samples = n_samples   # grid points of a run (recorders size their arrays by it)
        self.shared = {}   # per-plan objects blocks share (io.shared); they reset themselves at INIT
        self.reset()

    def reset(self):
        self.t = 0.0
        self.k = 0
        self.stop = False
        self.side_effect_free = False
        # a solver stage or event-function evaluation: discrete values hold what the last
        # event committed (Modelica freezes relations between events), never at a major step,
        # an event or the start
        self.between_events = False
        self.events = []
        self.warnings = []


def blame(exc: BaseException, fn) -> None:
    """Note on ``exc`` the phase closure ``fn`` whose call it escaped from (``Plan.run``
    names that closure's block in its typed error), unless a call inside ``fn`` (a member
    of an algebraic loop, a block inside a subsystem) noted its own first: the innermost
    call is the block's. Every loop that calls block closures does this in an ``except``
    around the calls (no cost while nothing raises); ``fn`` None notes nothing."""
    if fn is not None:
        exc.__dict__.setdefault(_CALL, fn)


def call(fn, *args):
    """``fn(*args)``, an exception escaping it blamed on ``fn``."""
    try:
        return fn(*args)
    except Exception as exc:
        blame(exc, fn)
        raise


def call_all(*closure_lists) -> None:
    """Call the closures of each list in turn, an exception escaping one blamed on it. (The
    fixed-step loops inline this, to spare a call per step.)"""
    f = None
    try:
        for closures in closure_lists:
            for f in closures:
                f()
    except Exception as exc:
        blame(exc, f)
        raise


def blamed(exc: BaseException):
    """The phase closure ``blame`` noted on ``exc`` (None if none)."""
    return exc.__dict__.get(_CALL)


_CALL = "nflow_phase_call"


def gate_table(ctx) -> dict:
    """Output slot of a block inside a conditionally executed / iterated subsystem ->
    the ``GroupState`` of its innermost such subsystem (merge and iteratorNumber read it)."""
    table = ctx.shared.get("subsystemGates")
    if table is None:
        table = ctx.shared["subsystemGates"] = {}
    return table


class GroupState:
    """What the blocks of a group see at run time: ``active`` (the group ran in the
    current step), ``iteration`` (the current pass of a for/while iterator, 1-based)."""

    __slots__ = ("id", "kind", "parent", "active", "iteration")

    def __init__(self, id: str, kind: str, parent):
        self.id, self.kind, self.parent = id, kind, parent
        self.active, self.iteration = False, 0.0


def iterator_of(state):
    """The innermost for/while iterator group around ``state`` (None if none)."""
    while state is not None and state.kind not in ("forIterator", "whileIterator"):
        state = state.parent
    return state
