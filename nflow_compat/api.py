"""The three entry points share this one path: JSON -> Diagram -> Plan -> result.

Keywords every entry point takes:

* ``limits``: a ``Limits`` (the guide's "Limits"); each bound answers with a typed error.
* ``base_dir``: the directory file blocks may use (fileSource reads, fileSink writes),
  paths confined to it. ``None`` (the default for the Python API): no file access at all;
  the CLI passes the diagram file's directory (``run``) or the current one (the pipe).
* ``progress``: ``progress(done, total)`` called now and then during the run with the
  grid points done so far (the CLI draws its progress bar with it); ``True`` draws a
  ``tqdm.auto`` bar (a widget in Jupyter; ``nflow_compat.progress``).
* ``params``: values for this run, by address (``"block.param"``, ``"variables.name"``, a
  JSON pointer into the diagram: ``nflow_compat.params``, the sweep spec's addressing),
  set into the validated diagram before it is compiled.

Running out of memory anywhere (compiling, running, building or writing the result) is the
SimulationError ``out_of_memory``.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Sequence, Union

import numpy as np
import orjson

from . import expr, progress as progress_bars, results
from .diagram import Diagram, Limits, parse
from .engine import Plan
from .params import Binder, json_copy
from .result import Result
from .errors import DiagramError, NFlowError, SimulationError, out_of_memory

if TYPE_CHECKING:                 # linmod / trim load the solver-side system (scipy) when called
    from .engine import linearize

JSONText = Union[str, bytes, bytearray, memoryview]
"""Diagram JSON as text or its UTF-8 bytes (a leading byte order mark is skipped)."""
Progress = Union[Callable[[int, int], object], bool]
"""``progress(done, total)``: the grid points done so far and in all; ``True``: a ``tqdm.auto`` bar."""
Params = dict[str, Any]
"""Values for one run by address: ``"block.param"``, ``"variables.name"`` or a JSON pointer."""
BaseDir = Union[str, "os.PathLike[str]", None]
"""The directory file blocks and FMUs are confined to; ``None``: no file access."""


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


def fixture_wrapped(doc) -> bool:
    """Whether ``doc`` is a fixture file of this repository (``fixtures/...``: a title, a
    provenance, the diagram under ``diagram``) rather than a diagram."""
    return (isinstance(doc, dict) and "blocks" not in doc and "sampleTime" not in doc
            and isinstance(doc.get("diagram"), dict) and "blocks" in doc["diagram"])


def unwrap_fixture(doc):
    """The diagram of a fixture file (``fixture_wrapped``), else ``doc`` itself."""
    return doc["diagram"] if fixture_wrapped(doc) else doc


def validate(diagram: dict[str, Any], *, limits: Limits | None = None, _depth_checked: bool = False) -> Diagram:
    """Check a decoded diagram without running it.

    The diagram is checked against its JSON Schema, its values normalized (Nelson's
    encodings, parameter expressions over ``variables``) and its subsystems flattened,
    exactly as before a run; the first problem is a ``DiagramError``.

    Parameters
    ----------
    diagram : dict
        The decoded diagram JSON (``blocks``, ``connections``, ``sampleTime``, ``duration``,
        optionally ``solver``, ``variables``, ``relTol``, ``absTol``, ``maxStep``).
    limits : Limits, optional
        The bounds (default ``Limits()``); those on the diagram's size apply here.

    Returns
    -------
    Diagram
        The normalized, flattened diagram (blocks with their resolved parameters, wires,
        pin links), as the compiler receives it.

    Raises
    ------
    DiagramError
        The first problem found, with its ``code`` and JSON pointer ``path`` (and ``block``,
        ``param`` where they apply).

    Examples
    --------
    >>> import nflow_compat as nc
    >>> bad = {"blocks": [{"id": "k", "type": "gain", "params": {"gain": 2}}],
    ...        "connections": [], "sampleTime": 0.1, "duration": 1}
    >>> try:
    ...     nc.validate(bad)
    ... except nc.DiagramError as err:
    ...     print(err.code, err.path)
    ...     print(err.message)
    unknown_param /blocks/0/params/gain
    block 'k' (gain) has no parameter 'gain'; did you mean 'Gain'?
    """
    lim = limits or Limits()
    if fixture_wrapped(diagram):
        raise DiagramError("missing_field", "the diagram needs 'blocks' and 'sampleTime': this is a fixture file, "
                           "whose diagram is under 'diagram' (pass that; nflow_compat.run and nflow-sim run take "
                           "the file as it is)", path="/blocks")
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


def compile_plan(diagram: dict[str, Any], *, limits: Limits | None = None, base_dir: BaseDir = None,
                 _depth_checked: bool = False) -> Plan:
    """Compile a decoded diagram once into a plan that runs as often as needed.

    Validation, block handlers, signal widths, the evaluation order and the physical
    islands are all settled here; each ``plan.run()`` then starts from INIT without
    recompiling (the way to run one diagram many times).

    Parameters
    ----------
    diagram : dict
        The decoded diagram JSON.
    limits : Limits, optional
        The bounds (default ``Limits()``), for the compilation and for every run.
    base_dir : str or os.PathLike, optional
        The directory fileSource / fileSink / FMU paths are confined to; ``None`` (the
        default): no file access.

    Returns
    -------
    Plan
        The compiled plan; ``Plan.run`` runs it.

    Raises
    ------
    DiagramError
        The diagram is wrong.
    SimulationError
        The diagram cannot be compiled into a run (an unsupported block, a circuit without
        ground, a limit that the compilation sees, ``out_of_memory``).

    Examples
    --------
    >>> import nflow_compat as nc
    >>> diagram = {
    ...     "blocks": [
    ...         {"id": "t", "type": "clock"},
    ...         {"id": "w", "type": "toWorkspace", "params": {"VariableName": "t", "SaveFormat": "Array"}}],
    ...     "connections": [{"from": "t", "to": "w"}],
    ...     "sampleTime": 0.5, "duration": 1}
    >>> plan = nc.compile_plan(diagram)
    >>> first, second = plan.run(), plan.run()
    >>> second["workspace"]["t"].ravel().tolist()
    [0.0, 0.5, 1.0]

    ``plan.run(params={...})`` runs it with other values (see ``Plan.with_params``).
    """
    with expression_limits(limits), _typed_errors():
        parsed = validate(diagram, limits=limits, _depth_checked=_depth_checked)
        return build_plan(parsed, limits=limits, base_dir=base_dir, binder=_binder(parsed, diagram, limits))


def build_plan(diagram: Diagram, *, limits: Limits | None = None, base_dir=None, binder=None) -> Plan:
    """The plan of an already validated ``Diagram`` (``validate``, ``diagram.with_params``)."""
    with expression_limits(limits), _typed_errors():
        return _or_out_of_memory(lambda: Plan(diagram, limits, base_dir=base_dir, binder=binder),
                                 "compiling the diagram")


def _binder(parsed: Diagram, raw, limits: Limits | None) -> Binder:
    """Per-run values for ``parsed``, whose decoded JSON is ``raw`` (kept as a private copy)."""
    return Binder(parsed, orjson.dumps(json_copy(raw)), limits, lambda patched: validate(patched, limits=limits))


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


def _run(diagram: dict, limits: Limits | None, base_dir, progress, depth_checked: bool = False,
         params: dict | None = None) -> dict:
    with expression_limits(limits), _typed_errors():
        parsed = validate(diagram, limits=limits, _depth_checked=depth_checked)
        if params:
            parsed = _binder(parsed, diagram, limits)(params)
    with progress_bars.callback(progress, "samples") as call:
        return run_diagram(parsed, limits=limits, base_dir=base_dir, progress=call)


def simulate(diagram: dict[str, Any], *, params: Params | None = None, limits: Limits | None = None,
             base_dir: BaseDir = None, progress: Progress | None = None) -> dict[str, Any]:
    """Run a decoded diagram and return what its recorders captured.

    The same run as ``simulate_json``, on a diagram already decoded into Python objects;
    the result holds plain Python lists, floats and ints (a complex signal: ``complex``
    values).

    Parameters
    ----------
    diagram : dict
        The diagram as Nelson's ``jsonencode`` writes it, decoded: ``blocks``,
        ``connections``, ``sampleTime``, ``duration``, optionally ``solver``, ``variables``
        and the tolerances (``nflow-sim schema`` prints its JSON Schema).
    params : dict, optional
        Values for this run by address: ``"block.param"``, ``"variables.name"`` or a JSON
        pointer (``"/blocks/0/params/Gain"``), as a sweep spec writes them.
    limits : Limits, optional
        The bounds of the run (default ``Limits()``); each exceeded bound is a typed error.
    base_dir : str or os.PathLike, optional
        The directory fileSource / fileSink / FMU paths are confined to; ``None`` (the
        default): no file access at all.
    progress : callable or bool, optional
        ``progress(done, total)``, called every few milliseconds of work with the grid
        points done so far; it must be cheap. ``True`` draws a ``tqdm.auto`` bar.

    Returns
    -------
    dict
        ``status`` (``"ok"``), ``time``, ``workspace`` (each toWorkspace block's variable in
        its ``SaveFormat``), ``scopes``, ``events``, ``stats``, ``warnings``, and ``files``
        when a fileSink wrote one.

    Raises
    ------
    DiagramError
        The diagram is wrong: its JSON shape, an unknown block type or parameter, the
        wiring, a limit on its size. ``code``, ``path``, ``block`` and ``param`` say where.
    SimulationError
        The diagram is valid but the run failed: a solver or Newton failure, an algebraic
        loop that does not converge, a run-time limit, ``out_of_memory``.

    Examples
    --------
    >>> import nflow_compat as nc
    >>> diagram = {
    ...     "blocks": [
    ...         {"id": "c", "type": "constant", "params": {"Value": 7}},
    ...         {"id": "w", "type": "toWorkspace", "params": {"VariableName": "y", "SaveFormat": "Array"}}],
    ...     "connections": [{"from": "c", "to": "w"}],
    ...     "sampleTime": 0.1, "duration": 0.2}
    >>> result = nc.simulate(diagram)
    >>> result["status"], result["time"], result["workspace"]["y"]
    ('ok', [0.0, 0.1, 0.2], [[7.0], [7.0], [7.0]])
    >>> try:
    ...     nc.simulate(diagram, limits=nc.Limits(max_steps=2))
    ... except nc.SimulationError as err:
    ...     print(err.code)
    too_many_steps
    """
    return _or_out_of_memory(lambda: results.to_python(_run(diagram, limits, base_dir, progress, params=params)),
                             "running the diagram and building its result")


def simulate_json(text: JSONText, *, params: Params | None = None, allow_nan: bool = False,
                  limits: Limits | None = None, base_dir: BaseDir = None, progress: Progress | None = None) -> str:
    """The drop-in for ``__nflow_simulate__``: diagram JSON text in, result JSON text out.

    Parameters
    ----------
    text : str or bytes
        The diagram JSON (``jsonencode(d)`` in Nelson); a UTF-8 byte order mark is skipped.
        Text over ``limits.max_input_bytes`` or nested deeper than ``limits.max_json_depth``
        is refused before it is parsed.
    params : dict, optional
        Values for this run by address: ``"block.param"``, ``"variables.name"`` or a JSON
        pointer (``"/blocks/0/params/Gain"``), as a sweep spec writes them.
    allow_nan : bool, optional
        Write non-finite numbers as ``NaN`` / ``Infinity`` / ``-Infinity`` (not strict JSON)
        instead of ``null``.
    limits : Limits, optional
        The bounds of the run (default ``Limits()``).
    base_dir : str or os.PathLike, optional
        The directory file blocks and FMUs are confined to; ``None``: no file access.
    progress : callable or bool, optional
        ``progress(done, total)`` with the grid points done so far; ``True`` draws a
        ``tqdm.auto`` bar.

    Returns
    -------
    str
        The result as JSON text: the object ``simulate`` returns.

    Raises
    ------
    DiagramError
        The text is not JSON, or the diagram is wrong.
    SimulationError
        The run failed.

    Examples
    --------
    >>> import nflow_compat as nc
    >>> text = ('{"blocks": [{"id": "one", "type": "constant", "params": {"Value": 1}},'
    ...         ' {"id": "w", "type": "toWorkspace", "params": {"VariableName": "u"}}],'
    ...         ' "connections": [{"from": "one", "to": "w"}], "sampleTime": 0.5, "duration": 1}')
    >>> result = nc.simulate_json(text)
    >>> result[:40]
    '{"status":"ok","time":[0.0,0.5,1.0],"wor'
    """
    doc = load_json(text, limits=limits)     # its depth is checked on the text, at C speed
    return _or_out_of_memory(lambda: results.encode(_run(doc, limits, base_dir, progress, depth_checked=True,
                                                         params=params), allow_nan=allow_nan),
                             "running the diagram and writing its result")


def run_to(out, plan: Plan, *, allow_nan: bool = False, progress=None) -> None:
    """One run of the compiled ``plan``, its result written to the binary stream ``out`` as
    ``simulate_to`` writes it (``nflow-sim serve`` runs the plan of a repeated request so)."""
    def run_and_write():
        with expression_limits(plan.limits):
            result = plan.run(progress=progress)
        results.write_json(result, out, allow_nan=allow_nan)
    _or_out_of_memory(run_and_write, "running the diagram and writing its result")


def simulate_to(out: BinaryIO, text: JSONText, *, params: Params | None = None, allow_nan: bool = False,
                limits: Limits | None = None, base_dir: BaseDir = None, progress: Progress | None = None) -> None:
    """Run diagram JSON and write the result's JSON text to a binary stream, a piece at a time.

    The text is ``simulate_json``'s, but no more than 65,536 numbers are serialized at once,
    so the memory the run needs stays near that of the recorded data, never the data and
    the whole text together (what ``nflow-sim run -o`` does).

    Parameters
    ----------
    out : binary stream
        Anything with ``write(bytes)``: a file opened ``"wb"``, ``sys.stdout.buffer``,
        ``io.BytesIO``.
    text : str or bytes
        The diagram JSON.
    params : dict, optional
        Values for this run by address: ``"block.param"``, ``"variables.name"`` or a JSON
        pointer (``"/blocks/0/params/Gain"``), as a sweep spec writes them.
    allow_nan : bool, optional
        Write non-finite numbers as ``NaN`` / ``Infinity`` instead of ``null``.
    limits : Limits, optional
        The bounds of the run (default ``Limits()``).
    base_dir : str or os.PathLike, optional
        The directory file blocks and FMUs are confined to; ``None``: no file access.
    progress : callable or bool, optional
        ``progress(done, total)`` with the grid points done so far; ``True`` draws a
        ``tqdm.auto`` bar.

    Raises
    ------
    DiagramError
        The text is not JSON, or the diagram is wrong (nothing is written).
    SimulationError
        The run failed (nothing is written), or it failed while the result was being
        written (what was written stays; the caller decides what to do with it).

    Examples
    --------
    >>> import io, json
    >>> import nflow_compat as nc
    >>> ramp = {"blocks": [{"id": "r", "type": "ramp", "params": {"slope": 2}},
    ...                    {"id": "w", "type": "toWorkspace", "params": {"VariableName": "r", "SaveFormat": "Array"}}],
    ...         "connections": [{"from": "r", "to": "w"}], "sampleTime": 0.25, "duration": 1}
    >>> with io.BytesIO() as out:
    ...     nc.simulate_to(out, json.dumps(ramp))
    ...     written = out.getvalue()
    >>> json.loads(written)["workspace"]["r"]
    [[0.0], [0.5], [1.0], [1.5], [2.0]]
    """
    doc = load_json(text, limits=limits)
    _or_out_of_memory(lambda: results.write_json(_run(doc, limits, base_dir, progress, depth_checked=True,
                                                      params=params), out,
                                                 allow_nan=allow_nan), "running the diagram and writing its result")


def _document(diagram, limits: Limits | None) -> tuple:
    """(decoded diagram, whether its depth is checked) of what ``run`` was given: a dict, JSON
    text (str or bytes), or a file (a path: ``os.PathLike``, or a str that is not JSON text);
    a fixture file's diagram is taken from it."""
    if isinstance(diagram, dict):
        return unwrap_fixture(diagram), False
    if isinstance(diagram, str) and not diagram.lstrip("\ufeff \t\r\n").startswith(("{", "[")):
        diagram = Path(diagram)
    if isinstance(diagram, os.PathLike):
        lim = limits or Limits()
        try:
            with open(diagram, "rb") as fh:
                diagram = fh.read(lim.max_input_bytes + 1)
        except OSError as exc:
            raise DiagramError("unreadable_input", f"cannot read {os.fspath(diagram)}: {exc.strerror}") from None
    return unwrap_fixture(load_json(diagram, limits=limits)), True


def run(diagram: dict[str, Any] | JSONText | os.PathLike[str], *, params: Params | None = None,
        limits: Limits | None = None, base_dir: BaseDir = None, progress: Progress | None = None) -> Result:
    """Run a diagram and return its ``Result``: numpy arrays with named columns, pandas and
    xarray views, events as a DataFrame.

    Parameters
    ----------
    diagram : dict, str, bytes or os.PathLike
        The decoded diagram; its JSON text; or the path of its JSON file (a str that is not
        JSON text is a path). A fixture file of this repository (``fixtures/...``, the
        diagram under ``diagram``) is taken as its diagram.
    params : dict, optional
        Values for this run by address: ``"block.param"``, ``"variables.name"`` or a JSON
        pointer (``"/blocks/0/params/Gain"``), as a sweep spec writes them.
    limits : Limits, optional
        The bounds of the run (the guide's "Limits"); each is a typed error.
    base_dir : str or os.PathLike, optional
        The directory fileSource, fileSink and FMU paths are confined to; without it the
        run touches no file (a file path given as ``diagram`` does not change that).
    progress : callable or bool, optional
        ``progress(done, total)`` called with the grid points done; ``True`` draws a bar
        with ``tqdm.auto`` (a widget in Jupyter, text on a terminal; the extra
        ``notebook``), shown once the run has lasted a second.

    Returns
    -------
    Result
        ``.time``, ``.workspace[name]`` (N x W numpy arrays), ``.columns``, ``.units``,
        ``.events``, ``.warnings``, ``.stats``; ``to_pandas()``, ``to_xarray()``.

    Raises
    ------
    DiagramError
        The diagram (or a params address or value) is wrong.
    SimulationError
        It could not be run to the end.

    Examples
    --------
    >>> import nflow_compat as nc
    >>> d = {"blocks": [{"id": "step", "type": "step", "params": {"Time": 0.5}},
    ...                 {"id": "w", "type": "toWorkspace", "params": {"VariableName": "u", "SaveFormat": "Array"}}],
    ...      "connections": [{"from": "step", "to": "w"}], "sampleTime": 0.25, "duration": 1.0}
    >>> result = nc.run(d, params={"step.Time": 0.25})
    >>> result.workspace["u"].ravel().tolist()
    [0.0, 1.0, 1.0, 1.0, 1.0]
    >>> result.to_pandas()["u"].tolist()
    [0.0, 1.0, 1.0, 1.0, 1.0]
    """
    doc, checked = _document(diagram, limits)
    return _or_out_of_memory(lambda: Result(_run(doc, limits, base_dir, progress, depth_checked=checked,
                                                 params=params)), "running the diagram")


def linmod(diagram: dict[str, Any], x0: Sequence[float] | None = None, u0: Sequence[float] | None = None, *,
           limits: Limits | None = None, base_dir: BaseDir = None) -> linearize.LinearModel:
    """nflow's ``linmod``: the continuous-time linearization ``A, B, C, D`` of a diagram.

    The Jacobians of the diagram's ``x' = f(x, u)``, ``y = g(x, u)`` at t = 0 by central
    differences (step ``1e-5 (1 + |v|)`` per variable), about the post-INIT state or ``x0``,
    with the inputs at ``u0`` (zeros when absent). ``x``: every continuous state (the causal
    blocks' and the physical islands', in diagram order of their blocks); ``u``: the
    top-level ``labelSource`` blocks with ``isExternalPort`` true; ``y``: the signals
    entering the top-level ``labelSink`` blocks. A diagram without state gives ``D`` alone.

    Parameters
    ----------
    diagram : dict
        The decoded diagram, as for ``simulate``.
    x0 : sequence of float, optional
        The operating point's state, one value per state (default: the post-INIT state).
    u0 : sequence of float, optional
        The inputs, one value per input (default: zeros).
    limits : Limits, optional
        The bounds that apply to compiling the diagram.
    base_dir : str or os.PathLike, optional
        The directory file blocks may use, as for ``simulate``.

    Returns
    -------
    LinearModel
        ``A, B, C, D = model`` unpacks the matrices (numpy arrays); ``states``, ``inputs`` and
        ``outputs`` name each (``name``, ``block``); ``x0``, ``u0`` the operating point;
        ``to_dict()`` its JSON form (``nflow-sim linmod``).

    Raises
    ------
    DiagramError
        The diagram is wrong, or ``x0`` / ``u0`` does not fit it (``bad_operating_point``).
    SimulationError
        A block fails at the operating point.

    Examples
    --------
    >>> import nflow_compat as nc
    >>> diagram = {
    ...     "blocks": [
    ...         {"id": "u", "type": "labelSource", "params": {"isExternalPort": True}},
    ...         {"id": "ss", "type": "stateSpace", "params": {"A": -2, "B": 1, "C": 1, "D": 0}},
    ...         {"id": "y", "type": "labelSink", "params": {}}],
    ...     "connections": [{"from": "u", "to": "ss"}, {"from": "ss", "to": "y"}],
    ...     "sampleTime": 0.1, "duration": 1.0}
    >>> A, B, C, D = nc.linmod(diagram)
    >>> A.round(9).tolist(), B.round(9).tolist(), C.round(9).tolist(), D.round(9).tolist()
    ([[-2.0]], [[1.0]], [[1.0]], [[0.0]])
    >>> [s.name for s in nc.linmod(diagram).inputs]
    ['u']
    """
    from .engine import linearize      # the plan as a hybrid system: scipy, only for linmod / trim
    with expression_limits(limits), _typed_errors():
        model = linearize.Model(validate(diagram, limits=limits), limits, base_dir)
        return linearize.linmod(model, x0, u0)


def trim(diagram: dict[str, Any], x0: Sequence[float] | None = None, u0: Sequence[float] | None = None, *,
         limits: Limits | None = None, base_dir: BaseDir = None) -> linearize.OperatingPoint:
    """nflow's ``trim``: an equilibrium ``x' = f(x, u0) = 0`` of a diagram.

    Newton's iteration with linmod's state Jacobian ``A``, from ``x0`` (the post-INIT state
    when absent), the inputs fixed at ``u0`` (zeros when absent); a linear model reaches
    ``x = -A \\ (B u0)`` in one step. A search that finds no equilibrium returns the
    closest point reached with ``converged`` false and a warning.

    Parameters
    ----------
    diagram : dict
        The decoded diagram, as for ``simulate``.
    x0 : sequence of float, optional
        Where the search starts, one value per state (default: the post-INIT state).
    u0 : sequence of float, optional
        The fixed inputs, one value per input (default: zeros).
    limits : Limits, optional
        The bounds that apply to compiling the diagram.
    base_dir : str or os.PathLike, optional
        The directory file blocks may use, as for ``simulate``.

    Returns
    -------
    OperatingPoint
        ``x, u, y, dx = point`` unpacks it (``dx = f(x, u0)``: how close to an equilibrium);
        ``converged``, ``iterations`` (Newton steps), ``warnings``, and the names of the
        states, inputs and outputs; ``to_dict()`` its JSON form (``nflow-sim trim``).

    Raises
    ------
    DiagramError
        The diagram is wrong, or ``x0`` / ``u0`` does not fit it (``bad_operating_point``).
    SimulationError
        A block fails during the search.

    Examples
    --------
    >>> import nflow_compat as nc
    >>> diagram = {
    ...     "blocks": [
    ...         {"id": "u", "type": "labelSource", "params": {"isExternalPort": True}},
    ...         {"id": "ss", "type": "stateSpace", "params": {"A": -2, "B": 1, "C": 1, "D": 0}},
    ...         {"id": "y", "type": "labelSink", "params": {}}],
    ...     "connections": [{"from": "u", "to": "ss"}, {"from": "ss", "to": "y"}],
    ...     "sampleTime": 0.1, "duration": 1.0}
    >>> x, u, y, dx = nc.trim(diagram, x0=[0.0], u0=[2.0])
    >>> x.round(9).tolist(), y.round(9).tolist(), nc.trim(diagram, u0=[2.0]).converged
    ([1.0], [1.0], True)
    """
    from .engine import linearize      # the plan as a hybrid system: scipy, only for linmod / trim
    with expression_limits(limits), _typed_errors():
        model = linearize.Model(validate(diagram, limits=limits), limits, base_dir)
        return linearize.trim(model, x0, u0)
