"""``nflow-sim``: a stdin/stdout pipe by default, plus run/serve/validate/schema/blocks/fmu-info/fmu-block/modelica-block/plot/sweep/linmod/trim.

Exit codes: 0 success, 2 the diagram is wrong, 1 running it failed, 130 interrupted (Ctrl-C).
On error stdout carries ``{"status": "error", "error": {...}}`` and stderr the message.
A run that lasts more than about a second draws a progress bar on stderr when stderr is a
terminal (never anything on stdout); ``--quiet`` turns it off.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import os
import shutil
import sys
import time
from pathlib import Path

import orjson

from . import api, formats, plotting, serve, shape, sweeps
from .blocks.handlers import supported_types
from .diagram import Limits
from .engine.columns import columns
from .result import Result
from .errors import DiagramError, NFlowError, SimulationError, did_you_mean, out_of_memory
from .formats import OutputError

EXIT_OK, EXIT_SIMULATION, EXIT_DIAGRAM, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_CLOSED_PIPE = 128 + 13   # stdout's reader went away: what a shell shows for a program SIGPIPE ended
PROGRESS_DELAY = 1.0      # seconds a run lasts before its progress bar appears
MAX_SECONDS = 600.0       # the CLI's wall-clock limit of a run (Limits.max_seconds; off in the API)


# ----------------------------------------------------------------------------- progress bar

class ProgressBar:
    """``bar(done, total)``: a one-line bar on ``stream`` (a terminal), drawn only once the
    run has lasted ``delay`` seconds and then at most every ``interval`` seconds, so short
    runs print nothing and the callback stays cheap. ``close()`` erases it."""

    def __init__(self, stream, *, delay: float = 1.0, interval: float = 0.2, clock=time.monotonic,
                 unit: str = "samples"):
        self.stream = stream
        self.unit = unit
        self.delay = delay
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self.next_draw = self.started + delay
        self.width = 0          # characters of the last line drawn (0: nothing on screen)

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if now < self.next_draw:
            return
        self.next_draw = now + self.interval
        self._draw(done, total, now - self.started)

    def _draw(self, done: int, total: int, elapsed: float) -> None:
        frac = min(1.0, done / total) if total > 0 else 1.0
        left = elapsed * (1.0 - frac) / frac if frac > 0 else math.inf
        columns = shutil.get_terminal_size((80, 24)).columns
        bar_len = max(10, min(40, columns - 62))
        filled = int(round(frac * bar_len))
        eta = f", ~{left:.0f} s left" if math.isfinite(left) else ""
        line = (f"nflow-sim [{'#' * filled}{'.' * (bar_len - filled)}] {100 * frac:5.1f}% "
                f"{done}/{total} {self.unit} {elapsed:.0f} s{eta}")[: max(1, columns - 1)]
        pad = " " * max(0, self.width - len(line))
        self.stream.write("\r" + line + pad)
        self.stream.flush()
        self.width = len(line)

    def close(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


def _progress(args, unit: str = "samples"):
    """The progress callback for this invocation, or None (--quiet, or stderr not a terminal)."""
    if getattr(args, "quiet", False):
        return None
    try:
        if not sys.stderr.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return ProgressBar(sys.stderr, delay=PROGRESS_DELAY, unit=unit)


# ----------------------------------------------------------------------------- helpers

def check_output(out_path: str | None) -> None:
    """Refuse an ``-o`` file that cannot be written before anything runs, so a long run
    never ends in a write error: its directory must exist and both must be writable."""
    if not out_path:
        return
    target = Path(out_path)
    folder = target.parent
    if target.is_dir():
        problem = "it is a directory"
    elif not folder.is_dir():
        problem = f"the directory {str(folder)!r} does not exist"
    elif not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        problem = "permission denied"
    else:
        return
    raise OutputError("unwritable_output", f"cannot write {out_path}: {problem}")


def _write(text: str):
    sys.stdout.write(text + "\n")


class _Output:
    """Where ``run`` writes its result, in pieces (``api.simulate_to``): the ``-o`` file,
    opened at the first write (a run that fails creates none) and removed when the
    writing fails part way, or stdout (where a failure part way leaves the pieces written,
    then a line break and the error line)."""

    def __init__(self, path: str | None):
        self.path, self.stream = path, None

    def write(self, data: bytes) -> None:
        if self.stream is None:
            self.stream = self._open()
        self.stream.write(data)

    def _open(self):
        if not self.path:
            sys.stdout.flush()
            return sys.stdout.buffer
        try:
            return open(self.path, "wb")
        except OSError as exc:
            raise OutputError("unwritable_output", f"cannot write {self.path}: {exc.strerror}") from None

    def close(self, complete: bool) -> None:
        if self.stream is None:
            return
        if self.path:
            self.stream.close()
            if not complete:
                os.unlink(self.path)
            return
        if not complete:
            self.stream.write(b"\n")
        self.stream.flush()


def _fail(err: NFlowError) -> int:
    sys.stdout.write(orjson.dumps({"status": "error", "error": err.to_dict()}).decode() + "\n")
    where = f" at {err.path}" if err.path else ""
    sys.stderr.write(f"nflow-sim: {err.code}{where}: {err.message}\n")
    return EXIT_DIAGRAM if isinstance(err, DiagramError) else EXIT_SIMULATION


def _read(path: str | None, max_bytes: int | None = None) -> bytes:
    """The input, refused past ``max_bytes`` without reading (much) further."""
    limit = Limits().max_input_bytes if max_bytes is None else max_bytes
    try:
        if path in (None, "-"):
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(path, "rb") as fh:
                data = fh.read(limit + 1)
    except OSError as exc:
        raise DiagramError("unreadable_input", f"cannot read {path}: {exc.strerror}") from None
    if len(data) > limit:
        raise DiagramError("input_too_large", f"the input has more than {limit} bytes (limit {limit}; "
                           "--limit max_input_bytes=N to raise it)", path="")
    return data


def _base_dir(args) -> str:
    """--base-dir, else the diagram file's directory, else the current directory."""
    if getattr(args, "base_dir", None):
        return args.base_dir
    if args.file not in (None, "-"):
        return str(Path(args.file).resolve().parent)
    return os.getcwd()


def _run_with_progress(args, call, unit: str = "samples"):
    bar = _progress(args, unit)
    try:
        return call(bar)
    finally:
        if bar is not None:
            bar.close()


# ----------------------------------------------------------------------------- commands

def _simulate(args) -> int:
    """The pipe and ``run``: the result to ``-o`` (``-`` or none: stdout) in the format its
    extension (or ``--format``) names, checked before the run. A fixture file of this
    repository runs as its diagram."""
    limits = args.limits
    target = None if args.output in (None, "-") else args.output
    check_output(target)
    fmt = formats.output_format(target, getattr(args, "format", None))
    formats.check_available(fmt)
    text = _read(args.file, limits.max_input_bytes)
    result = _run_with_progress(args, lambda bar: api.run(text, limits=limits, base_dir=_base_dir(args),
                                                          progress=bar))
    out, complete = _Output(target), False
    try:
        notes = formats.write(result, out, fmt, allow_nan=args.allow_nan)
        complete = True
    finally:
        out.close(complete)
    for note in notes:
        sys.stderr.write(f"nflow-sim: {target or 'stdout'}: {note}\n")
    return EXIT_OK


def _serve(args) -> int:
    """One diagram per line on stdin, one result (or error) line each on stdout (``serve.py``)."""
    return serve.serve(sys.stdin.buffer, sys.stdout.buffer, limits=args.limits, allow_nan=args.allow_nan,
                       base_dir=args.base_dir or os.getcwd())


def _validate(args) -> int:
    limits = args.limits
    doc = api.unwrap_fixture(api.load_json(_read(args.file, limits.max_input_bytes), limits=limits))
    diagram = api.validate(doc, limits=limits)
    _write(orjson.dumps({"status": "ok", "blocks": len(diagram.blocks), "connections":
                         len(diagram.wires) + len(diagram.links), "samples": diagram.n_samples}).decode())
    return EXIT_OK


def _sweep(args) -> int:
    """Run a sweep spec; the table goes to -o (a Parquet dataset directory), a summary to stdout."""
    try:
        frame = _run_with_progress(args, lambda bar: sweeps.sweep(
            args.spec, output=args.output, scheduler=args.scheduler, workers=args.workers,
            batch_size=args.batch_size, limits=args.limits, base_dir=args.base_dir, progress=bar,
            executor=args.executor, dashboard=args.dashboard, batched=args.batched), unit="runs")
    except sweeps.Interrupted as stop:
        sys.stderr.write(f"nflow-sim: interrupted; {stop.done} of {stop.total} runs are saved in {args.output} "
                         "(run the same command again to run the rest)\n")
        return EXIT_INTERRUPTED
    codes = frame["error_code"].value_counts().to_dict()
    lost = sum(codes.get(code, 0) for code in sweeps.LOST)
    _write(orjson.dumps({"status": "ok", "runs": len(frame), "ok": int((frame["status"] == "ok").sum()),
                         "batched": int(frame["batched"].fillna(False).sum()), "errors": codes,
                         "output": args.output}).decode())
    if lost:
        sys.stderr.write(f"nflow-sim: {lost} run(s) got no result (their workers died); run the same command "
                         "again to retry them\n")
    return EXIT_SIMULATION if lost else EXIT_OK


def _linearize(args) -> int:
    """linmod / trim of FILE: JSON with the matrices (or the operating point) and the names."""
    limits = args.limits
    diagram = api.load_json(_read(args.file, limits.max_input_bytes), limits=limits)
    call = api.linmod if args.command == "linmod" else api.trim
    result = call(diagram, args.x0, args.u0, limits=limits, base_dir=_base_dir(args))
    _write(orjson.dumps(result.to_dict(), option=orjson.OPT_SERIALIZE_NUMPY).decode())
    return EXIT_OK


def _schema(args) -> int:
    if args.type is None:
        doc = shape.diagram_schema()
    else:
        doc = shape.params_schema_for(args.type)
    _write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())
    return EXIT_OK


def _blocks(args) -> int:
    rows = supported_types()
    if args.json:
        _write(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode())
    else:
        for row in rows:
            sys.stdout.write(f"{row['type']:32s} {row['library']:22s} {row['label']}\n")
    return EXIT_OK


def _fmu_info(args) -> int:
    from .blocks.fmi import describe     # the FMU handler module, only for the FMU commands
    info = describe(Path(args.file))
    _write(orjson.dumps(info, option=orjson.OPT_INDENT_2).decode() if args.json else _fmu_table(info))
    return EXIT_OK


def _fmu_table(info: dict) -> str:
    """``fmu-info`` for a reader: the model's facts, then its variables as a table."""
    interfaces = [name for key, name in (("coSimulation", "co-simulation"), ("modelExchange", "model exchange"),
                                         ("scheduledExecution", "scheduled execution")) if info[key]]
    exp = info["defaultExperiment"]
    experiment = ", ".join(f"{label} {exp[key]:g}" for key, label in (("startTime", "start"), ("stopTime", "stop"),
                                                                      ("tolerance", "tolerance"), ("stepSize", "step"))
                           if exp.get(key) is not None)
    tool = " ".join(x for x in (info["generationTool"], info["generationDateAndTime"]) if x)
    facts = [("identifier", info["modelIdentifier"]), ("guid", info["guid"]), ("generated by", tool),
             ("platforms", ", ".join(info["platforms"]) or "none (no binaries, no sources)"),
             ("experiment", experiment or "none declared"),
             ("states", f"{info['numberOfContinuousStates']} continuous, {info['numberOfEventIndicators']} event "
                        "indicator(s)"),
             ("units", ", ".join(info["units"]) or "none declared"), ("description", info["description"])]
    lines = [f"{info['modelName']}  FMI {info['fmiVersion']}  {', '.join(interfaces) or 'no interface'}"]
    lines += [f"  {label:<13}{value}" for label, value in facts if value]
    header = ("name", "causality", "variability", "type", "unit", "start", "description")
    rows = [header] + [(v["name"], v["causality"], v["variability"], v["type"], v["unit"],
                        "" if v["start"] is None else str(v["start"]), v["description"]) for v in info["variables"]]
    widths = [max(len(row[k]) for row in rows) for k in range(len(header) - 1)]
    lines.append("")
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1] for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def _fmu_block(args) -> int:
    from .blocks.fmi import block_entry
    entry = block_entry(Path(args.file), args.type, args.path)
    _write(orjson.dumps(entry, option=orjson.OPT_INDENT_2).decode())
    return EXIT_OK


def _modelica_block(args) -> int:
    from .blocks import modelica     # the modelica handler module, only for this command
    entry = modelica.block_entry(Path(args.file), args.model, args.library or ())
    _write(orjson.dumps(entry, option=orjson.OPT_INDENT_2).decode())
    return EXIT_OK


def _plot(args) -> int:
    """Draw a result file (or a diagram, run first) into ``-o`` and/or a window (``--show``)."""
    limits = args.limits
    if not args.output and not args.show:
        raise plotting.PlotError("plot_no_output", "plot needs -o IMAGE (a .png, .svg, .pdf ...) or --show")
    check_output(args.output)
    plotting.check_dpi(args.dpi)
    doc = plotting.load_json(_read(args.file, limits.max_input_bytes))
    if plotting.is_diagram(doc) or api.fixture_wrapped(doc):   # a diagram: run it, then draw what it recorded
        result = _run_with_progress(args, lambda bar: api.run(doc, limits=limits, base_dir=_base_dir(args),
                                                              progress=bar))
    else:
        doc = plotting.check_result(doc)
        if args.diagram:       # the diagram a result came from: names its columns (a result without them)
            diagram = api.unwrap_fixture(api.load_json(_read(args.diagram, limits.max_input_bytes), limits=limits))
            base = args.base_dir or str(Path(args.diagram).resolve().parent)
            doc["columns"] = columns(api.compile_plan(diagram, limits=limits, base_dir=base).recorded_signals)
        result = Result(doc)
    reference = Result(plotting.load_result(_read(args.compare, limits.max_input_bytes))) if args.compare else None
    variables = [v for given in args.vars for v in given.split(",") if v] if args.vars else None
    drawn = dict(variables=variables, overlay=args.overlay, reference=reference, title=args.title)
    info = plotting.render(result, args.output, dpi=args.dpi, **drawn) if args.output else None
    if args.show:
        info = plotting.show(result, **drawn)
    _write(orjson.dumps({"status": "ok", "output": args.output, **info}).decode())
    return EXIT_OK


# ----------------------------------------------------------------------------- options

def _vector(text: str) -> list:
    """A vector argument: numbers separated by commas or spaces, in brackets or not."""
    parts = [p for p in text.strip().strip("[]").replace(",", " ").split() if p]
    try:
        return [float(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of numbers (e.g. '0,1' or '[0 1]')") from None


_LIMIT_NAMES = tuple(f.name for f in dataclasses.fields(Limits))


def _limit(text: str):
    """NAME=VALUE for one field of Limits."""
    name, sep, value = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or name not in _LIMIT_NAMES:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with NAME one of {', '.join(_LIMIT_NAMES)}"
                                         + did_you_mean(name, _LIMIT_NAMES))
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name}: {value!r} is not a number") from None
    kind = {f.name: f.type for f in dataclasses.fields(Limits)}[name]
    if kind in (int, "int"):
        if not (math.isfinite(number) and number == int(number)):
            raise argparse.ArgumentTypeError(f"{name}: {value!r} is not a whole number")
        number = int(number)
    if not number > 0:
        raise argparse.ArgumentTypeError(f"{name}: must be positive")
    return name, number


def _add_common(p: argparse.ArgumentParser, *, simulates: bool, top: bool) -> None:
    """Options accepted before and after the command (``nflow-sim --quiet run f`` and
    ``nflow-sim run f --quiet``); a subcommand only overrides what it was given."""
    default = (lambda value: value) if top else (lambda value: argparse.SUPPRESS)
    # before and after the command, --limit collects into two lists (argparse would let the
    # command's list replace the other); _parse merges them
    p.add_argument("--limit", action="append", type=_limit, metavar="NAME=VALUE", default=default([]),
                   dest="limit" if top else "command_limit",
                   help="raise or lower one limit (repeatable): " + ", ".join(_LIMIT_NAMES))
    if not simulates:
        return
    p.add_argument("--allow-nan", action="store_true", default=default(False),
                   help="write NaN/Infinity instead of null")
    p.add_argument("-q", "--quiet", action="store_true", default=default(False),
                   help="no progress bar (it is drawn on stderr, only when stderr is a terminal, "
                        "for runs over about a second)")
    p.add_argument("--base-dir", metavar="DIR", default=default(None),
                   help="directory fileSource/fileSink paths are confined to (default: the diagram "
                        "file's directory; for the pipe, the current directory)")


class _Version(argparse.Action):
    """--version: the installed package's version, read from its metadata only when asked
    (``nflow_compat.__version__``; a cold pipe call never pays for it)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from . import __version__
        sys.stdout.write(f"nflow-sim {__version__}\n")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nflow-sim", description="Run nflow block diagrams. With no command, "
                                "reads a diagram on stdin and writes the result on stdout.")
    p.add_argument("--version", action=_Version, nargs=0, help="print nflow-sim's version and exit")
    _add_common(p, simulates=True, top=True)
    sub = p.add_subparsers(dest="command")
    run = sub.add_parser("run", help="simulate FILE")
    run.add_argument("file")
    run.add_argument("-o", "--output", help="write the result here ('-': stdout, the default), in the format its "
                     "extension names: .json, .mat (MATLAB/Nelson load), .csv, .parquet")
    run.add_argument("--format", choices=tuple(formats.FORMATS.values()),
                     help="the output format whatever the extension (for stdout: json by default)")
    _add_common(run, simulates=True, top=False)
    run.set_defaults(func=_simulate)
    srv = sub.add_parser("serve", help="answer many diagrams in one process: one diagram JSON per line on stdin, "
                         "one result (or error) JSON line each on stdout, in order")
    _add_common(srv, simulates=True, top=False)
    srv.set_defaults(func=_serve)
    val = sub.add_parser("validate", help="check FILE without running it")
    val.add_argument("file")
    _add_common(val, simulates=False, top=False)
    val.set_defaults(func=_validate)
    sch = sub.add_parser("schema", help="print the diagram JSON Schema, or one block type's params schema")
    sch.add_argument("type", nargs="?")
    sch.set_defaults(func=_schema)
    swp = sub.add_parser("sweep", help="run a sweep spec (many variants of one diagram) on Dask; needs the "
                         "extra 'sweep'")
    swp.add_argument("spec", help="the sweep spec JSON file")
    swp.add_argument("-o", "--output", required=True, help="results directory (a Parquet dataset, e.g. "
                     "results.parquet; traces go to results.traces); an unfinished one is resumed")
    swp.add_argument("--scheduler", metavar="ADDRESS", help="a Dask scheduler (tcp:// or tls://; TLS settings "
                     "from the Dask config); default: a local cluster")
    swp.add_argument("--workers", type=int, metavar="N", help="local cluster worker processes (default: one per core)")
    swp.add_argument("--executor", choices=("auto", "inline", "local"), default="auto",
                     help="where the runs go without --scheduler: auto (default) times the first runs here and "
                          "starts a local Dask cluster only when it finishes sooner; inline: in this process; "
                          "local: on a local cluster")
    swp.add_argument("--dashboard", nargs="?", const="127.0.0.1:8787", metavar="ADDR",
                     help="turn the local cluster's Dask dashboard on (default address 127.0.0.1:8787; needs bokeh)")
    swp.add_argument("--batch-size", type=int, metavar="N",
                     help="runs per Dask task, and at most per call of the batch engine in this process "
                          "(default: automatic)")
    swp.add_argument("--batched", action=argparse.BooleanOptionalAction, default=True,
                     help="runs that differ only in block parameters go to the batch engine many at once, "
                          "integrated as one vectorized run where the diagram allows it (default); --no-batched: "
                          "every run on its own")
    swp.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress bar")
    swp.add_argument("--base-dir", metavar="DIR", default=argparse.SUPPRESS,
                     help="directory fileSource/fileSink paths are confined to (default: the diagram file's)")
    _add_common(swp, simulates=False, top=False)
    swp.set_defaults(func=_sweep)
    for name, what in (("linmod", "nflow's linmod: A, B, C, D of FILE about its post-INIT state (or --x0) with its "
                                  "inputs at --u0 (default zeros), by central differences"),
                       ("trim", "nflow's trim: an equilibrium x (dx = f(x, u0) = 0) of FILE by Newton's method "
                                "from --x0 (default: the post-INIT state) with the inputs fixed at --u0")):
        lin = sub.add_parser(name, help=what, description=what + ". States: every continuous state (causal "
                             "blocks' and physical islands'), ordered by block in diagram order; inputs: the "
                             "top-level labelSource blocks with isExternalPort true; outputs: the signals entering "
                             "the top-level labelSink blocks. Writes JSON with the names of each.")
        lin.add_argument("file")
        lin.add_argument("--x0", type=_vector, metavar="VALUES", help="the state (one number per state, e.g. '0,1')")
        lin.add_argument("--u0", type=_vector, metavar="VALUES", help="the inputs (one number per input)")
        lin.add_argument("--base-dir", metavar="DIR", default=argparse.SUPPRESS,
                         help="directory file blocks are confined to (default: the diagram file's)")
        _add_common(lin, simulates=False, top=False)
        lin.set_defaults(func=_linearize)
    blk = sub.add_parser("blocks", help="list the block types that run")
    blk.add_argument("--json", action="store_true")
    blk.set_defaults(func=_blocks)
    info = sub.add_parser("fmu-info", help="describe an FMU (.fmu or extracted folder): model, FMI version, "
                          "interfaces, platforms, generation tool, default experiment, units, variables (nflow's "
                          "fmiInfo); needs fmpy (extra 'fmi')")
    info.add_argument("file")
    info.add_argument("--json", action="store_true", help="the description as JSON (default: a table)")
    info.set_defaults(func=_fmu_info)
    entry = sub.add_parser("fmu-block", help="print a library.json block entry for an FMU (nflow's fmuToBlock): "
                           "ports from its inputs/outputs, params path + its parameters")
    entry.add_argument("file")
    entry.add_argument("--type", choices=("fmu", "fmuMe"), help="default: fmu if the FMU co-simulates, else fmuMe")
    entry.add_argument("--path", help="the path param to write (default: FILE as given)")
    entry.set_defaults(func=_fmu_block)
    mo = sub.add_parser("modelica-block", help="print a modelica block entry for a Modelica model: ports from its "
                        "top-level inputs/outputs, params file, modelName + its parameters; needs rumoca (extra "
                        "'modelica')")
    mo.add_argument("file", help="a .mo file")
    mo.add_argument("--model", help="the class (default: the file's base name)")
    mo.add_argument("--library", action="append", metavar="DIR", help="a library root (repeatable; MODELICAPATH too)")
    mo.set_defaults(func=_modelica_block)
    plt = sub.add_parser("plot", help="draw a result (workspace variables and scopes against time, events "
                         "marked) into an image; needs matplotlib (extra 'plot')")
    plt.add_argument("file", help="a result JSON (from run or the pipe; '-' for stdin), or a diagram to run first")
    plt.add_argument("-o", "--output", help="image file; format from the extension (.png .svg .pdf)")
    plt.add_argument("--show", action="store_true", help="open the figure in a window (needs a display)")
    plt.add_argument("--vars", action="append", metavar="NAMES", help="draw only these workspace variables and "
                     "scopes (comma-separated; repeatable)")
    plt.add_argument("--compare", metavar="RESULT", help="another result JSON, drawn dashed on the same panels")
    plt.add_argument("--overlay", action="store_true", help="every signal on one panel")
    plt.add_argument("--title", help="figure title (default: a summary of the result)")
    plt.add_argument("--dpi", type=int, default=100, help="resolution of a raster image (10 to 1200)")
    plt.add_argument("--diagram", metavar="FILE", help="the diagram a result without 'columns' came from: names "
                     "each recorded column after the block feeding it (its paths relative to the diagram's "
                     "directory, or --base-dir)")
    _add_common(plt, simulates=True, top=False)
    plt.set_defaults(func=_plot)
    p.set_defaults(func=_simulate, file=None, output=None)
    return p


def _parse(argv):
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        args.limits = Limits(**dict([("max_seconds", MAX_SECONDS)] + (args.limit or [])
                                    + (getattr(args, "command_limit", None) or [])))
    except ValueError as exc:
        parser.error(str(exc))
    return args


def main(argv=None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        return _closed_pipe()


def _closed_pipe() -> int:
    """The reader of stdout went away (``nflow-sim ... | head``): end quietly, as ``cat``
    does, with nothing more written there (stdout now leads nowhere, so the interpreter's
    last flush cannot fail either) and the exit code a shell shows for SIGPIPE. (SIGPIPE
    itself stays ignored: a sweep's sockets must not end the process.)"""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return EXIT_CLOSED_PIPE


def _main(argv) -> int:
    args = _parse(argv)
    try:
        return args.func(args)
    except NFlowError as err:
        return _fail(err)
    except KeyboardInterrupt:
        sys.stderr.write("nflow-sim: interrupted\n")
        return EXIT_INTERRUPTED
    except MemoryError:
        pass    # answered below, once what the failed work held is released
    except Exception as exc:  # a bug of ours: still a clean, typed answer
        return _fail(SimulationError("internal_error", f"internal error: {type(exc).__name__}: {exc}"))
    return _fail(out_of_memory(f"running nflow-sim {args.command or ''}".rstrip()))
