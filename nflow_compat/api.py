"""The three entry points share this one path: JSON -> Diagram -> Plan -> result.

Keywords every entry point takes:

* ``limits``: a ``Limits`` (README "Limits"); each bound answers with a typed error.
* ``base_dir``: the directory file blocks may use (fileSource reads, fileSink writes),
  paths confined to it. ``None`` (the default for the Python API): no file access at all;
  the CLI passes the diagram file's directory (``run``) or the current one (the pipe).
* ``progress``: ``progress(done, total)`` called now and then during the run with the
  grid points done so far (the CLI draws its progress bar with it).

Running out of memory anywhere (compiling, running, building or writing the result) is the
SimulationError ``out_of_memory``.
"""
from __future__ import annotations

import re
from contextlib import contextmanager

import numpy as np
import orjson

from . import expr, results
from .diagram import Diagram, Limits, parse
from .engine import Plan
from .errors import DiagramError, NFlowError, SimulationError, out_of_memory


@contextmanager
def expression_limits(limits: Limits | None):
    lim = limits or Limits()
    with expr.limits(lim.max_expression_length, lim.max_exponent):
        yield


_BOMS = {str: "\ufeff", bytes: b"\xef\xbb\xbf", bytearray: b"\xef\xbb\xbf"}


def strip_bom(text):
    """``text`` without a leading UTF-8 byte order mark (which some editors and file
    writers put before the JSON; orjson refuses it)."""
    if isinstance(text, memoryview):
        text = text.tobytes()
    bom = _BOMS.get(type(text))
    return text[len(bom):] if bom is not None and text[:len(bom)] == bom else text


def load_json(text, *, limits: Limits | None = None) -> object:
    """Decode diagram JSON (after a UTF-8 BOM, if any); input over ``max_input_bytes`` or
    nested deeper than ``max_json_depth`` is refused before it is parsed."""
    lim = limits or Limits()
    size = len(text) if isinstance(text, (str, bytes, bytearray, memoryview)) else None
    if size is not None and size > lim.max_input_bytes:
        raise DiagramError("input_too_large", f"the input has {size} bytes (limit {lim.max_input_bytes})",
                           path="")
    text = strip_bom(text)
    if size is not None and text_depth(text) > lim.max_json_depth:
        raise _too_deep(lim.max_json_depth)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc) or "recursion" in str(exc):
            raise _too_deep(min(lim.max_json_depth, 1024)) from None
        raise DiagramError("bad_json", f"input is not valid JSON: {exc}", path="") from None


def _too_deep(limit: int) -> DiagramError:
    return DiagramError("too_deep", f"the diagram nests arrays or objects more than {limit} deep", path="")


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
_STEP = np.zeros(256, dtype=np.int8)
_STEP[[ord("["), ord("{")]] = 1
_STEP[[ord("]"), ord("}")]] = -1


def text_depth(text) -> int:
    """How deep arrays/objects nest in JSON ``text``, at C speed (no parsing): strings
    removed, the brackets left, their running balance's maximum. Exact for valid JSON;
    for invalid text any number (the parser then says what is wrong)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if b'"' in data:
        data = _JSON_STRING.sub(b"", data)
    brackets = data.translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    return int(np.cumsum(_STEP[np.frombuffer(brackets, dtype=np.uint8)], dtype=np.int64).max())


def check_depth(value, max_depth: int) -> None:
    """Raise ``too_deep`` when arrays/objects nest more than ``max_depth`` levels (the
    top-level value is level 1). Iterative, and it stops at the first path that is too
    deep, so a self-referencing Python object answers too."""
    if not isinstance(value, (dict, list)):
        return
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            raise DiagramError("too_deep", f"the diagram nests arrays or objects more than {max_depth} deep",
                               path="")
        items = node.values() if isinstance(node, dict) else node
        if len(items) > 32 and not any(issubclass(k, (dict, list)) for k in set(map(type, items))):
            continue                            # a long list of numbers, skipped at C speed
        deeper = depth + 1
        for item in items:
            if isinstance(item, (dict, list)):
                stack.append((item, deeper))


def validate(diagram: dict, *, limits: Limits | None = None, _depth_checked: bool = False) -> Diagram:
    """Normalize and check a decoded diagram; raises DiagramError on the first problem."""
    lim = limits or Limits()
    blocks = diagram.get("blocks") if isinstance(diagram, dict) else None
    if isinstance(blocks, list) and len(blocks) > lim.max_blocks:   # before walking them all
        raise DiagramError("too_many_blocks", f"{len(blocks)} blocks (limit {lim.max_blocks})", path="/blocks")
    if not _depth_checked:
        check_depth(diagram, lim.max_json_depth)
    try:
        with expression_limits(lim):
            return parse(diagram, lim)
    except RecursionError:
        raise DiagramError("too_deep", "the diagram nests arrays or objects too deeply", path="") from None


def compile_plan(diagram: dict, *, limits: Limits | None = None, base_dir=None,
                 _depth_checked: bool = False) -> Plan:
    """A reusable execution plan: ``plan.run()`` as often as needed, compiled once."""
    with expression_limits(limits), _typed_errors():
        return _or_out_of_memory(lambda: build_plan(validate(diagram, limits=limits, _depth_checked=_depth_checked),
                                                    limits=limits, base_dir=base_dir), "compiling the diagram")


def build_plan(diagram: Diagram, *, limits: Limits | None = None, base_dir=None) -> Plan:
    """The plan of an already validated ``Diagram`` (``validate``, ``diagram.with_params``)."""
    with expression_limits(limits), _typed_errors():
        return _or_out_of_memory(lambda: Plan(diagram, limits, base_dir=base_dir), "compiling the diagram")


def _or_out_of_memory(call, doing: str):
    """``call()``, a MemoryError turned into ``out_of_memory``: raised once the handler is
    left, so the failed work's frames (and the memory they hold) are gone by then."""
    try:
        return call()
    except MemoryError:
        pass
    raise out_of_memory(doing)


def run_diagram(diagram: Diagram, *, limits: Limits | None = None, base_dir=None, progress=None) -> dict:
    """Compile and run an already validated ``Diagram``; the result holds numpy arrays."""
    with expression_limits(limits):
        return build_plan(diagram, limits=limits, base_dir=base_dir).run(progress=progress)


@contextmanager
def _typed_errors():
    """The last line of defence while a diagram is checked and compiled: an exception
    that is not one of ours (a bug) becomes a typed ``internal_error``. (``Plan.run`` has
    its own: ``numeric_error`` / ``internal_error`` naming the block that raised.)"""
    try:
        yield
    except NFlowError:
        raise
    except Exception as exc:
        raise SimulationError("internal_error", f"internal error while compiling the diagram: "
                              f"{type(exc).__name__}: {exc}") from exc


def _run(diagram: dict, limits: Limits | None, base_dir, progress, depth_checked: bool = False) -> dict:
    with expression_limits(limits), _typed_errors():
        parsed = validate(diagram, limits=limits, _depth_checked=depth_checked)
    return run_diagram(parsed, limits=limits, base_dir=base_dir, progress=progress)


def simulate(diagram: dict, *, limits: Limits | None = None, base_dir=None, progress=None) -> dict:
    """Run a decoded diagram; the result holds plain Python lists and floats."""
    return _or_out_of_memory(lambda: results.to_python(_run(diagram, limits, base_dir, progress)),
                             "running the diagram and building its result")


def simulate_json(text, *, allow_nan: bool = False, limits: Limits | None = None, base_dir=None,
                  progress=None) -> str:
    """The drop-in for ``__nflow_simulate__``: diagram JSON text in, result JSON text out."""
    doc = load_json(text, limits=limits)     # its depth is checked on the text, at C speed
    return _or_out_of_memory(lambda: results.encode(_run(doc, limits, base_dir, progress, depth_checked=True),
                                                    allow_nan=allow_nan), "running the diagram and writing its result")


def run_to(out, plan: Plan, *, allow_nan: bool = False, progress=None) -> None:
    """One run of the compiled ``plan``, its result written to the binary stream ``out`` as
    ``simulate_to`` writes it (``nflow-sim serve`` runs the plan of a repeated request so)."""
    def run_and_write():
        with expression_limits(plan.limits):
            result = plan.run(progress=progress)
        results.write_json(result, out, allow_nan=allow_nan)
    _or_out_of_memory(run_and_write, "running the diagram and writing its result")


def simulate_to(out, text, *, allow_nan: bool = False, limits: Limits | None = None, base_dir=None,
                progress=None) -> None:
    """``simulate_json``'s text written to the binary stream ``out`` a piece at a time
    (``results.write_json``): the memory it needs stays near that of the recorded data,
    never the data and the whole text together."""
    doc = load_json(text, limits=limits)
    _or_out_of_memory(lambda: results.write_json(_run(doc, limits, base_dir, progress, depth_checked=True), out,
                                                 allow_nan=allow_nan), "running the diagram and writing its result")
