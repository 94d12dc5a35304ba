"""Block entries and parameter values as jsonencode writes them -> ``Block`` with normalized params.

The diagram's shape has been checked against the JSON Schema by then (``schema.check``);
what is left here is what a schema cannot say: the value an expression evaluates to,
ragged arrays, bounds on evaluated numbers, unknown param names close to a known one,
aliases given twice. Shared by the diagram parser and the subsystem flattener.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import DiagramError, did_you_mean, pointer
from .expr import evaluate
from .manifests import BlockType, ParamSpec

SOLVERS = ("discrete", "ode1", "ode4", "ode45", "dae")
# Simulink's solvers -> ours doing the same kind of integration (the hint for an unknown solver)
SIMULINK_SOLVERS = {
    "ode15s": ("dae", "stiff, variable step: LSODA"), "ode23t": ("dae", "stiff, variable step: LSODA"),
    "ode23tb": ("dae", "stiff, variable step: LSODA"), "ode23s": ("dae", "stiff, variable step: LSODA"),
    "ode23": ("ode45", "variable-step Runge-Kutta: Dormand-Prince 5(4)"),
    "ode113": ("ode45", "non-stiff, variable step: Dormand-Prince 5(4)"),
    "ode5": ("ode4", "fixed step: classical Runge-Kutta 4"), "ode3": ("ode4", "fixed step: classical Runge-Kutta 4"),
    "ode8": ("ode4", "fixed step: classical Runge-Kutta 4"), "ode2": ("ode4", "fixed step: classical Runge-Kutta 4"),
}


def solver_hint(name: str) -> str:
    """"; did you mean 'X'?" for an unknown solver: ours for a Simulink solver's name, else
    the closest of ``SOLVERS``."""
    simulink = SIMULINK_SOLVERS.get(name.strip().lower()) if len(name) <= 40 else None
    if simulink is not None:
        return f"; did you mean {simulink[0]!r}? (for Simulink's {name.strip()}: {simulink[1]})"
    return did_you_mean(name, SOLVERS)
MAX_PORTS = 10_000


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


# ----------------------------------------------------------------------------- values

def unset(value) -> bool:
    """A field jsonencode wrote for a value nobody set: a struct array gives every element
    every field, the unset ones as ``[]`` (an empty matrix); ``null`` is an absent field."""
    return value is None or (isinstance(value, list) and not value)


def is_physical(conn: dict) -> bool:
    """A connection naming a pin. On a signal wire of a Nelson struct array the pin fields
    are there, unset: ``[]``, ``""`` (an empty char) or ``null``."""
    return any(not unset(conn.get(key)) and conn.get(key) != "" for key in ("fromPin", "toPin"))


def as_list(value) -> list:
    """jsonencode turns a one-element struct array into a bare object, and an empty
    ``struct()`` into ``{}``."""
    if value is None or value == {}:
        return []
    return [value] if isinstance(value, dict) else value


def number(value, variables, *, where: dict, what: str) -> float:
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
        return number(value[0], variables, where=where, what=what)
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
    ``null`` is NaN, as in ``number``."""
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


def numeric(value, variables, *, where, what):
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
    return number(value, variables, where=where, what=what) != 0.0


def _strings(value, variables, *, where, what) -> tuple:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise DiagramError("param_type", f"{what} must be a list of strings, got {_show(value)}", **where)


def _any(value, variables, *, where, what):
    return value


_CONVERT = {"number": number, "numeric": numeric, "vector": _vector, "matrix": _matrix,
            "string": _string, "boolean": _boolean, "strings": _strings, "any": _any, "diagram": _any}


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
            raise DiagramError("param_range", f"{what} must be {rel} {bound:g}, got {_show(out)}"
                               + (f": {spec.reason}" if spec.reason else ""), **where)
    return out


# ----------------------------------------------------------------------------- blocks

def _count(value, default: int, where: dict, what: str) -> int:
    if unset(value):
        return default
    n = number(value, {}, where=where, what=what)
    if not (math.isfinite(n) and n == int(n) and 0 <= n <= MAX_PORTS):
        raise DiagramError("bad_port_count", f"{what} must be a whole number from 0 to {MAX_PORTS}, got {n:g}",
                           **where)
    return int(n)


def parse_block(raw: dict, index: int, variables: dict, path: str, types: dict, warnings: list) -> Block:
    """The ``Block`` of a schema-checked block entry, its params normalized."""
    bid, btype = raw["id"], raw["type"]
    if isinstance(bid, (int, float)):
        bid = f"{bid:g}"
    bt: BlockType = types[btype]
    n_in = _count(raw.get("inputs"), bt.inputs, {"path": path + "/inputs", "block": bid}, "'inputs'")
    n_out = _count(raw.get("outputs"), bt.outputs, {"path": path + "/outputs", "block": bid}, "'outputs'")
    given = raw.get("params")
    if unset(given):
        given = {}
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


def port_index(value, where: dict, what: str) -> int:
    if unset(value):
        return 0
    n = number(value, {}, where=where, what=what)
    if not math.isfinite(n) or n != int(n):
        raise DiagramError("bad_port_index", f"{what} must be a whole number, got {n:g}", **where)
    return int(n)


