"""Where a parameter value goes, and a diagram with new values: the one addressing that
sweeps (``sweeps/spec.py``, ``sweeps/worker.py``) and the per-run overrides
(``simulate(d, params=...)``, ``run``, ``plan.run(params=...)``) share.

An address is one of three spellings:

* ``"block id.param"``: a parameter of a block (an alias works; ``sub/g.Gain`` for a block
  inside a subsystem, by its qualified id);
* ``"variables.name"``: a diagram variable (every expression over it changes);
* a JSON pointer into the diagram (``"/blocks/0/params/Gain"``).

Each resolves to a ``Target``: the JSON pointer where the value goes and, when that is a
parameter of a block outside any subsystem that does not re-route goto/from, the block's
(index, canonical name). A diagram whose targets are all such block parameters takes new
values without being parsed again (``diagram.with_params``: only those parameters are
normalized and checked; every other block is shared); any other target patches the
diagram's JSON and parses it whole (``bind``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import orjson

from . import expr
from .diagram import Diagram, Limits, with_params
from .errors import DiagramError, did_you_mean, pointer
from .flatten import ROUTING_PARAMS

VARIABLES = "variables."
_TOP_LEVEL_BLOCK = re.compile(r"/blocks(?:/\d+)?")   # a block's path outside any subsystem


@dataclass(frozen=True)
class Target:
    """Where one addressed value goes."""
    pointer: str               # in the diagram JSON
    block: tuple | None        # (block index, canonical param) of a top-level block's parameter, else None


def json_copy(raw, what: str = "the diagram"):
    """A private copy of decoded JSON (a diagram, values) as plain JSON values (numpy
    arrays become lists), for addressing to patch."""
    try:
        return orjson.loads(orjson.dumps(raw, option=orjson.OPT_SERIALIZE_NUMPY))
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise DiagramError("bad_type", f"{what} is not plain JSON data: {exc}", path="") from None


def tokens(ptr: str) -> list:
    """The reference tokens of JSON pointer ``ptr`` (RFC 6901)."""
    return [t.replace("~1", "/").replace("~0", "~") for t in ptr.split("/")[1:]]


def _step(node, token):
    """The child ``token`` names in ``node``, or KeyError."""
    if isinstance(node, dict):
        return node[token]
    if isinstance(node, list) and token.isdigit() and int(token) < len(node):
        return node[int(token)]
    raise KeyError(token)


def set_pointer(doc, ptr: str, value) -> None:
    """Set what ``ptr`` names in ``doc`` (its parent exists: ``address`` checked it)."""
    *head, last = tokens(ptr)
    node = doc
    for token in head:
        node = _step(node, token)
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def _check_pointer(raw: dict, ptr: str, where: str | None) -> None:
    *head, last = tokens(ptr) or [None]
    if last is None:
        raise DiagramError("bad_pointer", "the pointer names the whole diagram, not a value in it", path=where)
    node = raw
    for depth, token in enumerate(head):
        try:
            node = _step(node, token)
        except KeyError:
            raise DiagramError("bad_pointer", f"the diagram has nothing at {pointer(*head[:depth + 1])!r}",
                               path=where) from None
    if isinstance(node, list) and not (last.isdigit() and int(last) < len(node)):
        raise DiagramError("bad_pointer", f"{ptr!r}: index {last!r} is not in the array", path=where)
    if not isinstance(node, (dict, list)):
        raise DiagramError("bad_pointer", f"{ptr!r}: its parent is not an object or array", path=where)


def _resolve(raw, ptr: str):
    node = raw
    for token in tokens(ptr):
        node = _step(node, token)
    return node


def block_param(block, given: str, where: str | None) -> str:
    """The parameter ``given`` (a name or an alias) of ``block``, by its canonical name."""
    name = block.type.aliases.get(given, given)
    if name not in block.type.params:
        raise DiagramError("unknown_param", f"block {block.id!r} ({block.type.type}) has no parameter {given!r}"
                           + did_you_mean(given, block.type.params), path=where, block=block.id, param=given)
    return name


def address(name: str, diagram: Diagram, raw: dict | None = None, where: str | None = None) -> Target:
    """The Target of address ``name`` in ``diagram`` (its decoded JSON ``raw``; errors carry
    the path ``where``). ``raw`` is the caller's own copy: a block given no ``params``
    object gets an empty one, so the pointer leads somewhere. Without ``raw`` only
    top-level block parameters resolve (the others need the JSON: ``needs_source``)."""
    if name.startswith("/"):
        ptr = name
    elif name.startswith(VARIABLES):
        variable = name[len(VARIABLES):]
        if variable not in diagram.variables:
            raise DiagramError("unknown_variable", f"the diagram has no variable {variable!r}"
                               + did_you_mean(variable, diagram.variables), path=where)
        ptr = pointer("variables", variable)
    else:
        block_id, dot, given = name.rpartition(".")
        blocks = {b.id: b for b in diagram.blocks}
        if not dot or block_id not in blocks:
            hint = did_you_mean(block_id, blocks) if dot else ""
            raise DiagramError("unknown_block" if dot else "bad_address",
                               f"{name!r} is not 'block.param' of a block in the diagram, 'variables.name' or "
                               f"a JSON pointer" + hint, path=where)
        block = blocks[block_id]
        param = block_param(block, given, where)
        key = param
        if raw is not None:
            raw_block = _resolve(raw, block.path)
            if not isinstance(raw_block.get("params"), dict):   # absent, null or [] (jsonencode): none given
                raw_block["params"] = {}
            # set the key the diagram already uses (an alias stays an alias)
            keys = [given, param] + [a for a, n in block.type.aliases.items() if n == param]
            key = next((k for k in keys if k in raw_block["params"]), param)
        ptr = block.path + "/params" + pointer(key)
    target = Target(ptr, _block_target(diagram, ptr, where))
    if raw is not None:
        _check_pointer(raw, ptr, where)
    elif target.block is None:
        raise DiagramError("needs_source", f"{name!r} is not a parameter of a block outside subsystems: setting "
                           "it parses the diagram again, which needs its JSON (compile the plan from the decoded "
                           "diagram, nflow_compat.compile_plan)", path=where)
    return target


def _block_target(diagram: Diagram, ptr: str, where: str | None):
    """(block index, canonical param) when ``ptr`` is a parameter of a block outside any
    subsystem (re-bound into the validated diagram), else None (also for a parameter that
    re-wires goto/from: the diagram is parsed again)."""
    for b in diagram.blocks:
        prefix = b.path + "/params/"
        if ptr.startswith(prefix) and "/" not in ptr[len(prefix):] and _TOP_LEVEL_BLOCK.fullmatch(b.path):
            name = block_param(b, tokens(ptr)[-1], where)
            return None if (b.type.type, name) in ROUTING_PARAMS else (b.index, name)
    return None


def rebinds(targets) -> bool:
    """Whether values at ``targets`` go into a validated diagram without parsing it again."""
    return all(t.block is not None for t in targets)


def block_values(targets, values) -> dict:
    """``values`` (one per target; every target a top-level block parameter: ``rebinds``)
    as ``with_params`` takes them: (block index, param) -> value."""
    return {t.block: value for t, value in zip(targets, values)}


def bind(diagram: Diagram, targets, values, source, validate) -> Diagram:
    """``diagram`` with ``values`` (one per target) at ``targets``: re-bound into it when
    every target is a top-level block parameter (``with_params``), else set into a fresh
    decoding of the diagram's JSON ``source`` (bytes), which ``validate(raw)`` parses."""
    if rebinds(targets):
        return with_params(diagram, block_values(targets, values))
    raw = orjson.loads(source)
    for target, value in zip(targets, values):
        set_pointer(raw, target.pointer, value)
    return validate(raw)


class Binder:
    """Per-run values for one validated diagram (``simulate(d, params=...)``,
    ``Plan.run(params=...)``): ``binder(params)`` is the Diagram with ``params`` (address
    -> value) set, through ``bind``. The addresses of a set of names are resolved once.
    ``source``: the diagram's JSON (bytes), which addresses other than top-level block
    parameters need; ``validate(raw)`` parses a patched copy of it."""

    _CACHED = 64          # sets of names kept resolved

    def __init__(self, diagram: Diagram, source: bytes | None, limits: Limits | None = None, validate=None):
        self.diagram, self.source, self.validate = diagram, source, validate
        self.limits = limits or Limits()
        self._resolved: dict = {}

    def __call__(self, params: dict) -> Diagram:
        if not isinstance(params, dict):
            raise DiagramError("bad_params", f"params must map addresses ('block.param', 'variables.name' or a "
                               f"JSON pointer) to values, not {type(params).__name__}")
        names = tuple(params)
        resolved = self._resolved.get(names)
        if resolved is None:
            if len(self._resolved) >= self._CACHED:
                self._resolved.clear()
            resolved = self._resolved[names] = self._resolve(names)
        targets, source = resolved
        values = json_copy(list(params.values()), "a params value")
        with expr.limits(self.limits.max_expression_length, self.limits.max_exponent):
            return bind(self.diagram, targets, values, source, self.validate)

    def _resolve(self, names: tuple) -> tuple:
        """(targets, the JSON to patch or None) of ``names``."""
        raw = orjson.loads(self.source) if self.source is not None else None
        targets = []
        for name in names:
            if not isinstance(name, str):
                raise DiagramError("bad_address", f"a params address must be a string, not {name!r}")
            try:
                targets.append(address(name, self.diagram, raw))
            except DiagramError as err:    # about the params argument: its name says where
                raise DiagramError(err.code, f"params[{name!r}]: {err.message}", block=err.block,
                                   param=err.param) from None
        source = orjson.dumps(raw) if raw is not None and not rebinds(targets) else None
        return tuple(targets), source
