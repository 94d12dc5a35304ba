"""Parse, normalize and validate a diagram: whatever ``jsonencode`` produced -> ``Diagram``.

Everything user-facing is checked here, once; the compiler and the engine trust the
result. Each problem is a ``DiagramError`` with a JSON pointer into the input.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

import numpy as np

from .errors import DiagramError, SimulationError, did_you_mean, pointer
from .expr import evaluate
from .manifests import BlockType, ParamSpec, block_types

SOLVERS = ("discrete", "ode1", "ode4", "ode45", "dae")
MAX_PORTS = 10_000


@dataclass(frozen=True)
class Limits:
    """Caller-configurable bounds; each exceeded bound is a clear error, not a hang.

    Each is checked before the work it bounds starts (the step-count bounds of a solver
    whose step count cannot be known ahead stop it when reached). README "Limits" lists
    the error code of each."""

    max_steps: int = 10_000_000      # grid samples
    # internal steps of the solver over the whole run, and the event checks a fast input
    # adds (ode45 costs 0.2-0.5 ms a step on a small physical island here, an LSODA ('dae')
    # step 0.1-0.3 ms; LSODA restarts at order 1 and takes ~30 steps between two events, so
    # a run with ~5,000 events (a stick-slip mass under a 200 Hz force for 12 s) needs
    # ~160,000; the default bounds a run to a few minutes)
    max_solver_steps: int = 500_000
    max_blocks: int = 100_000
    max_width: int = 1_000_000       # elements of one signal
    # grid samples x elements of all signals (~40 s of scalar blocks at the measured
    # 11-13 M block-steps/s; also bounds what recorders can hold)
    max_element_steps: int = 500_000_000
    max_expression_length: int = 10_000   # characters of one parameter expression
    max_exponent: float = 1_000_000.0     # |exponent| of '^' / pow() in parameter expressions
    max_json_depth: int = 512             # nesting of arrays/objects in the diagram (orjson stops at 1024)
    max_input_bytes: int = 64 * 1024 * 1024  # diagram JSON text; also a fileSource CSV file
    max_subsystem_depth: int = 32         # subsystems nested in subsystems (subsystem_too_deep)

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"Limits.{f.name} must be a positive number, got {value!r}")


@dataclass
class Block:
    id: str
    type: BlockType
    index: int
    inputs: int
    outputs: int
    params: dict
    path: str

    def where(self, param: str | None = None) -> dict:
        path = self.path + ("/params" + pointer(param) if param else "")
        return {"block": self.id, "path": path, "param": param}


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
    structure: object = None   # subsystems.Structure (forEach, conditional/iterated subsystems) or None

    @property
    def n_samples(self) -> int:
        return int(math.floor(self.duration / self.sample_time + 1e-9)) + 1


# ----------------------------------------------------------------------------- helpers

def unset(value) -> bool:
    """A field jsonencode wrote for a value nobody set: a struct array gives every element
    every field, the unset ones as ``[]`` (an empty matrix); ``null`` is an absent field."""
    return value is None or (isinstance(value, list) and not value)


def is_physical(conn: dict) -> bool:
    """A connection naming a pin. On a signal wire of a Nelson struct array the pin fields
    are there, unset: ``[]``, ``""`` (an empty char) or ``null``."""
    return any(not unset(conn.get(key)) and conn.get(key) != "" for key in ("fromPin", "toPin"))


def _as_list(value, path: str, what: str) -> list:
    """jsonencode turns a one-element struct array into a bare object, and an empty
    ``struct()`` into ``{}``."""
    if value is None or value == {}:
        return []
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return value
    raise DiagramError("bad_type", f"'{what}' must be an array of objects", path=path)


def _number(value, variables, *, where: dict, what: str) -> float:
    """A scalar from a number, a numeric string or expression, or a one-element array;
    ``null`` is NaN (jsonencode writes NaN, and by default also +-Inf, as null)."""
    if value is None:
        return math.nan
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        value = evaluate(value, variables, **where)
    elif isinstance(value, list) and len(value) == 1:
        return _number(value[0], variables, where=where, what=what)
    if isinstance(value, np.ndarray) and value.size == 1:
        return float(value.reshape(-1)[0])
    if isinstance(value, float):
        return value
    raise DiagramError("param_type", f"{what} must be a number, got {_show(value)}", **where)


def _show(value) -> str:
    text = repr(value.tolist() if isinstance(value, np.ndarray) else value)
    return text if len(text) <= 60 else text[:57] + "..."


def _numeric_array(value, variables, *, where: dict, what: str) -> np.ndarray:
    """A real array (any rank) from numbers, nested lists, or an expression string;
    ``null`` is NaN, as in ``_number``."""
    if value is None:
        value = math.nan
    if isinstance(value, str):
        value = evaluate(value, variables, **where)
    elif isinstance(value, list):
        value = [_numeric_array(v, variables, where=where, what=what) if isinstance(v, (list, str)) else v
                 for v in value]
        try:
            value = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise DiagramError("param_type", f"{what} must be numeric, got a ragged or non-numeric array",
                               **where) from None
    elif isinstance(value, bool) or isinstance(value, (int, float)):
        value = float(value)
    if isinstance(value, float):
        return np.asarray(value)
    if not isinstance(value, np.ndarray):
        raise DiagramError("param_type", f"{what} must be numeric, got {_show(value)}", **where)
    return value


def _vector(value, variables, *, where, what) -> np.ndarray:
    arr = _numeric_array(value, variables, where=where, what=what)
    if arr.ndim <= 1 or 1 in arr.shape:
        return arr.reshape(-1)
    raise DiagramError("param_type", f"{what} must be a vector, got a {arr.shape[0]}x{arr.shape[1]} matrix",
                       **where)


def _matrix(value, variables, *, where, what) -> np.ndarray:
    arr = _numeric_array(value, variables, where=where, what=what)
    if arr.ndim > 2:
        raise DiagramError("param_type", f"{what} must be at most 2-D", **where)
    return np.atleast_2d(arr)


def _numeric(value, variables, *, where, what):
    """A scalar stays a float; anything longer becomes a 1-D array (matrices kept 2-D)."""
    arr = _numeric_array(value, variables, where=where, what=what)
    if arr.size == 1:
        return float(arr.reshape(-1)[0])
    if arr.ndim == 2 and 1 in arr.shape:
        return arr.reshape(-1)
    return arr


def _string(value, variables, *, where, what) -> str:
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    if isinstance(value, str):
        return value
    raise DiagramError("param_type", f"{what} must be a string, got {_show(value)}", **where)


_TRUE = {"on", "true", "yes"}
_FALSE = {"off", "false", "no"}


def _boolean(value, variables, *, where, what) -> bool:
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    return _number(value, variables, where=where, what=what) != 0.0


def _strings(value, variables, *, where, what) -> tuple:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise DiagramError("param_type", f"{what} must be a list of strings, got {_show(value)}", **where)


def _any(value, variables, *, where, what):
    return value


_CONVERT = {"number": _number, "numeric": _numeric, "vector": _vector, "matrix": _matrix,
            "string": _string, "boolean": _boolean, "strings": _strings, "any": _any}


def normalize_param(spec: ParamSpec, value, variables, where: dict):
    what = f"parameter {spec.name!r}"
    out = _CONVERT[spec.kind](value, variables, where=where, what=what)
    if spec.enum is not None and out not in spec.enum:
        raise DiagramError("param_value", f"{what} must be one of {list(spec.enum)}, got {out!r}"
                           + did_you_mean(str(out), [str(e) for e in spec.enum]), **where)
    for bound, strict in ((spec.minimum, False), (spec.exclusive_minimum, True)):
        if bound is None:
            continue
        arr = np.asarray(out, dtype=float)
        bad = np.any(arr <= bound) if strict else np.any(arr < bound)
        if bad or np.any(np.isnan(arr)):
            rel = ">" if strict else ">="
            raise DiagramError("param_range", f"{what} must be {rel} {bound:g}, got {_show(out)}", **where)
    return out


# ----------------------------------------------------------------------------- sections

def _variables(raw, variables_path="/variables") -> dict:
    if unset(raw):
        return {}
    if not isinstance(raw, dict):
        raise DiagramError("bad_type", "'variables' must be an object of name: value", path=variables_path)
    out: dict = {}
    for name, value in raw.items():
        where = {"path": variables_path + pointer(name)}
        if not name.isidentifier():
            raise DiagramError("bad_variable", f"variable name {name!r} is not an identifier", **where)
        out[name] = _numeric(value, out, where=where, what=f"variable {name!r}")
    return out


def _count(value, default: int, where: dict, what: str) -> int:
    if unset(value):
        return default
    n = _number(value, {}, where=where, what=what)
    if not (math.isfinite(n) and n == int(n) and 0 <= n <= MAX_PORTS):
        raise DiagramError("bad_port_count", f"{what} must be a whole number from 0 to {MAX_PORTS}, got {n:g}",
                           **where)
    return int(n)


def _block(raw, index: int, variables: dict, path: str, types: dict, warnings: list) -> Block:
    if not isinstance(raw, dict):
        raise DiagramError("bad_type", "a block must be an object", path=path)
    bid = raw.get("id")
    if isinstance(bid, (int, float)) and not isinstance(bid, bool):
        bid = f"{bid:g}"
    if not isinstance(bid, str) or not bid:
        raise DiagramError("missing_id", "every block needs a non-empty string 'id'", path=path + "/id")
    btype = raw.get("type")
    if not isinstance(btype, str):
        raise DiagramError("missing_type", f"block {bid!r} needs a string 'type'", path=path + "/type", block=bid)
    if btype not in types:
        raise DiagramError("unknown_block_type", f"unknown block type {btype!r}" + did_you_mean(btype, types),
                           path=path + "/type", block=bid)
    bt: BlockType = types[btype]
    n_in = _count(raw.get("inputs"), bt.inputs, {"path": path + "/inputs", "block": bid}, "'inputs'")
    n_out = _count(raw.get("outputs"), bt.outputs, {"path": path + "/outputs", "block": bid}, "'outputs'")
    given = raw.get("params")
    if unset(given):
        given = {}
    if not isinstance(given, dict):
        raise DiagramError("bad_type", f"'params' of block {bid!r} must be an object", path=path + "/params",
                           block=bid)
    block = Block(id=bid, type=bt, index=index, inputs=n_in, outputs=n_out, params={}, path=path)
    given = _resolve_aliases(block, given)
    params = {}
    for name, value in given.items():
        spec = bt.params.get(name)
        if spec is None and bt.open_params:   # the handler checks it (an FMU's variable)
            params[name] = value
            continue
        if spec is None:
            hint = did_you_mean(name, bt.params)
            if hint:
                raise DiagramError("unknown_param", f"block {bid!r} ({btype}) has no parameter {name!r}{hint}",
                                   **block.where(name))
            # nflow's handlers never read it (layout/UI keys, old inspector names): say so, go on
            warnings.append(f"block {bid!r} ({btype}): parameter {name!r} is not read by this block; ignored")
            continue
        params[name] = normalize_param(spec, value, variables, block.where(name))
    for name, spec in bt.params.items():
        if name not in params and spec.default is not None:
            params[name] = normalize_param(spec, spec.default, variables, block.where(name))
    block.params = params
    return block


def _resolve_aliases(block: Block, given: dict) -> dict:
    aliases = block.type.aliases
    if not aliases:
        return given
    out = dict(given)
    for alias, name in aliases.items():
        if alias not in out:
            continue
        value = out.pop(alias)
        if name in out and out[name] != value:
            raise DiagramError("conflicting_alias",
                               f"block {block.id!r} gives both {alias!r} and {name!r} with different values",
                               **block.where(alias))
        out[name] = value
    return out


def _index(value, where: dict, what: str) -> int:
    if unset(value):
        return 0
    n = _number(value, {}, where=where, what=what)
    if not math.isfinite(n) or n != int(n):
        raise DiagramError("bad_port_index", f"{what} must be a whole number, got {n:g}", **where)
    return int(n)


def _ref(value, ids: dict, path: str, what: str) -> int:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = f"{value:g}"
    if not isinstance(value, str):
        raise DiagramError("bad_connection", f"connection '{what}' must be a block id", path=path)
    if value not in ids:
        raise DiagramError("unknown_block", f"connection '{what}' names block {value!r}, which does not exist"
                           + did_you_mean(value, ids), path=path, block=value)
    return ids[value]


def _connections(raws, blocks: list, ids: dict, single: bool, paths=None):
    wires, links, driven = [], [], {}
    for i, raw in enumerate(raws):
        path = paths[i] if paths else "/connections" if single else pointer("connections", i)
        if not isinstance(raw, dict):
            raise DiagramError("bad_connection", "a connection must be an object", path=path)
        a = _ref(raw.get("from"), ids, path + "/from", "from")
        b = _ref(raw.get("to"), ids, path + "/to", "to")
        if is_physical(raw):
            links.append(_link(raw, blocks[a], blocks[b], path))
            continue
        src, dst = blocks[a], blocks[b]
        sp = _index(raw.get("fromIndex"), {"path": path + "/fromIndex", "block": src.id}, "'fromIndex'")
        dp = _index(raw.get("toIndex"), {"path": path + "/toIndex", "block": dst.id}, "'toIndex'")
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
        pin = raw.get(key)
        if not isinstance(pin, str) or not pin:
            raise DiagramError("bad_connection", f"a physical connection needs a pin name '{key}'",
                               path=path + "/" + key, block=blk.id)
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
    x = _number(value, {}, where=where, what=f"'{key}'")
    if not (math.isfinite(x) and x > 0):
        raise DiagramError("bad_" + key.lower(), f"'{key}' must be a positive finite number, got {x:g}", **where)
    return x


# ----------------------------------------------------------------------------- entry

def parse(raw, limits: Limits | None = None) -> Diagram:
    """Normalize and validate a decoded diagram (see module docstring)."""
    limits = limits or Limits()
    if not isinstance(raw, dict):
        raise DiagramError("bad_type", "a diagram must be a JSON object", path="")
    types = block_types()
    for key in ("sampleTime", "duration"):
        if unset(raw.get(key)):
            raise DiagramError("missing_field", f"the diagram needs '{key}'", path="/" + key)
    sample_time = _positive(raw, "sampleTime")
    duration = _positive(raw, "duration")
    solver = raw.get("solver")
    if unset(solver):
        solver = "discrete"
    elif isinstance(solver, list) and len(solver) == 1:   # a cell holding one string
        solver = solver[0]
    if not isinstance(solver, str) or solver not in SOLVERS:
        raise DiagramError("unknown_solver", f"unknown solver {solver!r} (known: {', '.join(SOLVERS)})"
                           + (did_you_mean(solver, SOLVERS) if isinstance(solver, str) else ""), path="/solver")
    variables = _variables(raw.get("variables"))
    raw_blocks = _as_list(raw.get("blocks"), "/blocks", "blocks")
    if len(raw_blocks) > limits.max_blocks:
        raise DiagramError("too_many_blocks", f"{len(raw_blocks)} blocks (limit {limits.max_blocks})",
                           path="/blocks")
    single = isinstance(raw.get("blocks"), dict)
    paths = ["/blocks" if single else pointer("blocks", i) for i in range(len(raw_blocks))]
    raw_conns, conn_paths, structure, warnings = None, None, None, []
    if any(isinstance(rb, dict) and rb.get("type") == "subsystem" for rb in raw_blocks):
        from .subsystems import flatten   # nested diagrams become blocks of this one (qualified ids)
        raw_blocks, paths, raw_conns, conn_paths, structure = flatten(raw, raw_blocks, paths, variables, types,
                                                                      limits, warnings)
    blocks, ids = [], {}
    for i, (rb, path) in enumerate(zip(raw_blocks, paths)):
        block = _block(rb, i, variables, path, types, warnings)
        if block.id in ids:
            raise DiagramError("duplicate_id", f"block id {block.id!r} is used twice", path=path + "/id",
                               block=block.id)
        ids[block.id] = i
        blocks.append(block)
    if raw_conns is None:
        raw_conns = _as_list(raw.get("connections"), "/connections", "connections")
    wires, links = _connections(raw_conns, blocks, ids, isinstance(raw.get("connections"), dict), conn_paths)
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
    it again. Parameters that change the diagram's shape (subsystem contents, variables)
    are not block parameters here: such a change needs ``parse``."""
    blocks = list(diagram.blocks)
    for (index, name), value in values.items():
        block = blocks[index]
        if block is diagram.blocks[index]:
            block = blocks[index] = replace(block, params=dict(block.params))
        block.params[name] = normalize_param(block.type.params[name], value, diagram.variables, block.where(name))
    return replace(diagram, blocks=blocks, warnings=list(diagram.warnings))
