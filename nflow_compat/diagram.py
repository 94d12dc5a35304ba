"""Parse, normalize and validate a diagram: whatever ``jsonencode`` produced -> ``Diagram``.

Everything user-facing is checked here, once; the compiler and the engine trust the
result. Each problem is a ``DiagramError`` with a JSON pointer into the input. The shape
is checked first, against the JSON Schemas generated from the manifests
(``shape.check``); what follows is what a schema cannot say: expressions and their
values, references between blocks, ports and pins, subsystem ports, goto/from routes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

from .errors import DiagramError, SimulationError, did_you_mean, pointer
from .flatten import flatten, route_labels
from .manifests import block_types
from .normalize import (Block, as_list, is_physical, normalize_param, number, numeric, parse_block, port_index,
                        unset)
from .shape import check


@dataclass(frozen=True)
class Limits:
    """The bounds of a run: each exceeded bound is a typed error, never a hang or a crash.

    Each is checked before the work it bounds starts; what cannot be known ahead (a
    solver's steps, while-iterator passes, algebraic-loop sweeps, the wall clock) is
    counted as the run goes. Every field is also a CLI option, ``--limit NAME=VALUE``.

    Parameters
    ----------
    max_steps : int
        Grid samples, ``duration/sampleTime``; SimulationError ``too_many_steps``.
    max_solver_steps : int
        Internal solver steps over the whole run, plus the extra event-function checks a
        fast input asks for; SimulationError ``too_many_steps``.
    max_blocks : int
        Blocks in the diagram; DiagramError ``too_many_blocks``.
    max_width : int
        Elements of one signal, checked on the widths before anything is allocated;
        DiagramError ``too_wide``.
    max_element_steps : int
        The run's work: per grid sample, each block's output elements times the passes of
        the iterated subsystems around it (while-iterator passes and algebraic-loop sweeps
        counted as they run); SimulationError ``too_many_element_steps``.
    max_recorded_values : int
        Numbers all recorders keep, samples x (elements + 1); SimulationError
        ``too_many_recorded_values``, before the run.
    max_expression_length : int
        Characters of one parameter expression; DiagramError ``expression_too_long``.
    max_exponent : float
        A number written as the exponent of ``^`` / ``.^`` / ``pow()`` in an expression;
        DiagramError ``exponent_too_large``.
    max_json_depth : int
        Nesting of arrays and objects in the diagram; DiagramError ``too_deep``.
    max_input_bytes : int
        Bytes of diagram JSON (refused before parsing), also of a fileSource CSV file;
        DiagramError ``input_too_large`` / ``file_too_large``.
    max_subsystem_depth : int
        Subsystems nested in subsystems; DiagramError ``subsystem_too_deep``.
    max_seconds : float or None
        Wall-clock seconds of a run, checked every few milliseconds of work; ``None`` (the
        Python API's default) is no limit, the CLI sets 600. SimulationError ``time_limit``.

    Raises
    ------
    ValueError
        A field that is not a positive number (``max_seconds`` may also be ``None``).

    Examples
    --------
    >>> import nflow_compat as nc
    >>> nc.Limits(max_steps=1000).max_steps
    1000
    >>> diagram = {"blocks": [{"id": "c", "type": "constant"}], "connections": [],
    ...            "sampleTime": 0.001, "duration": 10}
    >>> try:
    ...     nc.simulate(diagram, limits=nc.Limits(max_steps=1000))
    ... except nc.SimulationError as err:
    ...     print(err.code)
    too_many_steps
    >>> nc.Limits(max_blocks=0)
    Traceback (most recent call last):
    ...
    ValueError: Limits.max_blocks must be a positive number, got 0
    """

    max_steps: int = 10_000_000      # grid samples
    # internal steps of the solver over the whole run, and the event checks a fast input
    # adds (ode45 costs 0.2-0.5 ms a step on a small physical island here, an LSODA ('dae')
    # step 0.1-0.3 ms; LSODA restarts at order 1 and takes ~30 steps between two events, so
    # a run with ~5,000 events (a stick-slip mass under a 200 Hz force for 12 s) needs
    # ~160,000; the default bounds a run to a few minutes)
    max_solver_steps: int = 500_000
    max_blocks: int = 100_000
    max_width: int = 1_000_000       # elements of one signal
    # grid samples x the output elements of every block (1 for one without outputs) x the
    # passes per step of the iterated subsystems around it; while-iterator passes and
    # algebraic-loop sweeps beyond the first count as they run (engine.budget). ~40 s of
    # scalar blocks at the measured 11-13 M block-steps/s
    max_element_steps: int = 500_000_000
    # numbers the recorders keep over a run: samples x (elements + 1 for the time), all
    # recorders together (8 bytes each: 800 MB; the JSON of a number takes ~4-20 bytes)
    max_recorded_values: int = 100_000_000
    max_expression_length: int = 10_000   # characters of one parameter expression
    max_exponent: float = 1_000_000.0     # |exponent| of '^' / pow() in parameter expressions
    max_json_depth: int = 512             # nesting of arrays/objects in the diagram (orjson stops at 1024)
    max_input_bytes: int = 64 * 1024 * 1024  # diagram JSON text; also a fileSource CSV file
    max_subsystem_depth: int = 32         # subsystems nested in subsystems (subsystem_too_deep)
    max_seconds: float | None = None      # wall clock of a run (None: no limit; the CLI sets one)

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.default is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"Limits.{f.name} must be a positive number, got {value!r}")


@dataclass(frozen=True)
class Wire:
    src: int
    src_port: int
    dst: int
    dst_port: int
    path: str


@dataclass(frozen=True)
class PinLink:
    a: int
    a_pin: str
    b: int
    b_pin: str
    path: str


@dataclass
class Diagram:
    blocks: list
    wires: list
    links: list
    sample_time: float
    duration: float
    solver: str
    variables: dict
    rel_tol: float = 1e-6
    abs_tol: float = 1e-8
    max_step: float | None = None
    warnings: list = field(default_factory=list)
    structure: object = None   # flatten.Structure (forEach, conditional/iterated subsystems) or None

    @property
    def n_samples(self) -> int:
        return int(math.floor(self.duration / self.sample_time + 1e-9)) + 1


# ----------------------------------------------------------------------------- sections

def _variables(raw) -> dict:
    out: dict = {}
    for name, value in ({} if unset(raw) else raw).items():
        out[name] = numeric(value, out, where={"path": pointer("variables", name)}, what=f"variable {name!r}")
    return out


def _ref(value, ids: dict, path: str, what: str) -> int:
    if isinstance(value, (int, float)):
        value = f"{value:g}"
    if value not in ids:
        raise DiagramError("unknown_block", f"connection '{what}' names block {value!r}, which does not exist"
                           + did_you_mean(value, ids), path=path, block=value)
    return ids[value]


def _connections(raws, blocks: list, ids: dict, single: bool, paths=None):
    wires, links, driven = [], [], {}
    for i, raw in enumerate(raws):
        path = paths[i] if paths else "/connections" if single else pointer("connections", i)
        a = _ref(raw.get("from"), ids, path + "/from", "from")
        b = _ref(raw.get("to"), ids, path + "/to", "to")
        if is_physical(raw):
            links.append(_link(raw, blocks[a], blocks[b], path))
            continue
        src, dst = blocks[a], blocks[b]
        sp = port_index(raw.get("fromIndex"), {"path": path + "/fromIndex", "block": src.id}, "'fromIndex'")
        dp = port_index(raw.get("toIndex"), {"path": path + "/toIndex", "block": dst.id}, "'toIndex'")
        if not 0 <= sp < src.outputs:
            raise DiagramError("port_out_of_range", f"block {src.id!r} has {src.outputs} output port(s); "
                               f"fromIndex {sp} is out of range (ports are 0-based)", path=path + "/fromIndex",
                               block=src.id)
        if not 0 <= dp < dst.inputs:
            raise DiagramError("port_out_of_range", f"block {dst.id!r} has {dst.inputs} input port(s); "
                               f"toIndex {dp} is out of range (ports are 0-based)", path=path + "/toIndex",
                               block=dst.id)
        if (b, dp) in driven:
            raise DiagramError("input_driven_twice", f"input {dp} of block {dst.id!r} is driven by two "
                               f"connections ({driven[(b, dp)]} and {path})", path=path, block=dst.id)
        driven[(b, dp)] = path
        wires.append(Wire(a, sp, b, dp, path))
    return wires, links


def _link(raw: dict, a: Block, b: Block, path: str) -> PinLink:
    pins = []
    for blk, key in ((a, "fromPin"), (b, "toPin")):
        pin = raw[key]
        if pin not in blk.type.pins:
            have = ", ".join(blk.type.pins) or "none"
            raise DiagramError("unknown_pin", f"block {blk.id!r} ({blk.type.type}) has no physical pin {pin!r} "
                               f"(pins: {have})" + did_you_mean(pin, blk.type.pins), path=path + "/" + key,
                               block=blk.id)
        pins.append(pin)
    da, db = a.type.pins[pins[0]], b.type.pins[pins[1]]
    if da != db:
        raise DiagramError("domain_mismatch", f"pin {a.id}.{pins[0]} ({da}) cannot be joined to "
                           f"{b.id}.{pins[1]} ({db})", path=path, block=b.id)
    return PinLink(a.index, pins[0], b.index, pins[1], path)


def _positive(raw: dict, key: str, default=None) -> float | None:
    value = raw.get(key)
    if unset(value):
        return default
    where = {"path": "/" + key}
    x = number(value, {}, where=where, what=f"'{key}'")
    if not (math.isfinite(x) and x > 0):
        raise DiagramError("bad_" + key.lower(), f"'{key}' must be a positive finite number, got {x:g}", **where)
    return x


# ----------------------------------------------------------------------------- entry

def parse(raw, limits: Limits | None = None) -> Diagram:
    """Normalize and validate a decoded diagram (see module docstring)."""
    limits = limits or Limits()
    check(raw, limits.max_expression_length, limits.max_subsystem_depth)
    types = block_types()
    sample_time = _positive(raw, "sampleTime")
    duration = _positive(raw, "duration")
    solver = raw.get("solver")
    if unset(solver):
        solver = "discrete"
    elif isinstance(solver, list):   # a cell holding one string
        solver = solver[0]
    variables = _variables(raw.get("variables"))
    raw_blocks = as_list(raw.get("blocks"))
    if len(raw_blocks) > limits.max_blocks:
        raise DiagramError("too_many_blocks", f"{len(raw_blocks)} blocks (limit {limits.max_blocks})",
                           path="/blocks")
    single = isinstance(raw.get("blocks"), dict)
    paths = ["/blocks" if single else pointer("blocks", i) for i in range(len(raw_blocks))]
    raw_conns, conn_paths, structure, warnings = None, None, None, []
    if any(rb["type"] == "subsystem" for rb in raw_blocks):
        # nested diagrams become blocks of this one (qualified ids)
        raw_blocks, paths, raw_conns, conn_paths, structure = flatten(raw, raw_blocks, paths, variables, types,
                                                                      limits, warnings)
    blocks, ids = [], {}
    for i, (rb, path) in enumerate(zip(raw_blocks, paths)):
        block = parse_block(rb, i, variables, path, types, warnings)
        if block.id in ids:
            raise DiagramError("duplicate_id", f"block id {block.id!r} is used twice", path=path + "/id",
                               block=block.id)
        ids[block.id] = i
        blocks.append(block)
    if raw_conns is None:
        raw_conns = as_list(raw.get("connections"))
    wires, links = _connections(raw_conns, blocks, ids, isinstance(raw.get("connections"), dict), conn_paths)
    blocks, routes = route_labels(blocks, wires, warnings)
    wires += [Wire(*route) for route in routes]
    diagram = Diagram(blocks=blocks, wires=wires, links=links, sample_time=sample_time, duration=duration,
                      solver=solver, variables=variables,
                      rel_tol=_positive(raw, "relTol", 1e-6), abs_tol=_positive(raw, "absTol", 1e-8),
                      max_step=_positive(raw, "maxStep"), warnings=warnings, structure=structure)
    ratio = duration / sample_time  # may overflow to inf for a subnormal sampleTime
    if not ratio < limits.max_steps:
        raise SimulationError("too_many_steps", f"duration/sampleTime gives {ratio:.6g} steps "
                              f"(limit {limits.max_steps} steps)", path="/duration")
    return diagram


def with_params(diagram: Diagram, values: dict) -> Diagram:
    """``diagram`` with some block parameters set anew: ``values`` maps (block index,
    param name) to a raw value, normalized and checked as ``parse`` does it. Blocks that
    keep their parameters are shared with ``diagram``, not copied (a Plan reads its
    Diagram, never changes it), so a sweep re-binds a validated diagram without parsing
    it again. Parameters that change the diagram's shape (subsystem contents, variables,
    ``flatten.ROUTING_PARAMS``) are not block parameters here: such a change needs ``parse``."""
    blocks = list(diagram.blocks)
    for (index, name), value in values.items():
        block = blocks[index]
        if block is diagram.blocks[index]:
            block = blocks[index] = replace(block, params=dict(block.params))
        block.params[name] = normalize_param(block.type.params[name], value, diagram.variables, block.where(name))
    return replace(diagram, blocks=blocks, warnings=list(diagram.warnings))
