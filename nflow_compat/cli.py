"""``nflow-sim``: a stdin/stdout pipe by default, plus run/serve/validate/schema/blocks/fmu-info/fmu-block/plot/sweep.

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

from . import api, plot, serve, shape, sweeps
from .blocks.handlers import supported_types
from .diagram import Limits
from .errors import DiagramError, NFlowError, SimulationError, out_of_memory

EXIT_OK, EXIT_SIMULATION, EXIT_DIAGRAM, EXIT_INTERRUPTED = 0, 1, 2, 130
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

class OutputError(NFlowError):
    """The output file (``-o``) cannot be written."""

    kind = "output"


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
    limits = args.limits
    check_output(args.output)
    text = _read(args.file, limits.max_input_bytes)
    out, complete = _Output(args.output), False
    try:
        _run_with_progress(args, lambda bar: api.simulate_to(
            out, text, allow_nan=args.allow_nan, limits=limits, base_dir=_base_dir(args), progress=bar))
        out.write(b"\n")
        complete = True
    finally:
        out.close(complete)
    return EXIT_OK


def _serve(args) -> int:
    """One diagram per line on stdin, one result (or error) line each on stdout (``serve.py``)."""
    return serve.serve(sys.stdin.buffer, sys.stdout.buffer, limits=args.limits, allow_nan=args.allow_nan,
                       base_dir=args.base_dir or os.getcwd())


def _validate(args) -> int:
    limits = args.limits
    diagram = api.validate(api.load_json(_read(args.file, limits.max_input_bytes), limits=limits), limits=limits)
    _write(orjson.dumps({"status": "ok", "blocks": len(diagram.blocks), "connections":
                         len(diagram.wires) + len(diagram.links), "samples": diagram.n_samples}).decode())
    return EXIT_OK


def _sweep(args) -> int:
    """Run a sweep spec; the table goes to -o (a Parquet dataset directory), a summary to stdout."""
    try:
        frame = _run_with_progress(args, lambda bar: sweeps.sweep(
            args.spec, output=args.output, scheduler=args.scheduler, workers=args.workers,
            batch_size=args.batch_size, limits=args.limits, base_dir=args.base_dir, progress=bar), unit="runs")
    except sweeps.Interrupted as stop:
        sys.stderr.write(f"nflow-sim: interrupted; {stop.done} of {stop.total} runs are saved in {args.output} "
                         "(run the same command again to run the rest)\n")
        return EXIT_INTERRUPTED
    codes = frame["error_code"].value_counts().to_dict()
    lost = sum(codes.get(code, 0) for code in sweeps.LOST)
    _write(orjson.dumps({"status": "ok", "runs": len(frame), "ok": int((frame["status"] == "ok").sum()),
                         "errors": codes, "output": args.output}).decode())
    if lost:
        sys.stderr.write(f"nflow-sim: {lost} run(s) got no result (their workers died); run the same command "
                         "again to retry them\n")
    return EXIT_SIMULATION if lost else EXIT_OK


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
    _write(orjson.dumps(describe(Path(args.file)), option=orjson.OPT_INDENT_2).decode())
    return EXIT_OK


def _fmu_block(args) -> int:
    from .blocks.fmi import block_entry
    entry = block_entry(Path(args.file), args.type, args.path)
    _write(orjson.dumps(entry, option=orjson.OPT_INDENT_2).decode())
    return EXIT_OK


def _plot(args) -> int:
    limits = args.limits
    check_output(args.output)
    plot.check_dpi(args.dpi)
    doc = plot.load_json(_read(args.file, limits.max_input_bytes))
    diagram = None
    if plot.is_diagram(doc):   # a diagram: run it, then draw what it recorded
        diagram = doc
        doc = _run_with_progress(args, lambda bar: api.simulate(diagram, limits=limits, base_dir=_base_dir(args),
                                                                 progress=bar))
    elif args.diagram:         # the diagram a result came from: only to name its columns
        diagram = api.load_json(_read(args.diagram, limits.max_input_bytes), limits=limits)
    names = None
    if diagram is not None:    # compiled (not run) to see what feeds each recorder
        names = plot.channel_names(api.compile_plan(diagram, limits=limits, base_dir=_base_dir(args)))
    info = plot.render(doc, args.output, title=args.title, dpi=args.dpi, names=names)
    _write(orjson.dumps({"status": "ok", "output": args.output, **info}).decode())
    return EXIT_OK


# ----------------------------------------------------------------------------- options

_LIMIT_NAMES = tuple(f.name for f in dataclasses.fields(Limits))


def _limit(text: str):
    """NAME=VALUE for one field of Limits."""
    name, sep, value = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or name not in _LIMIT_NAMES:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with NAME one of {', '.join(_LIMIT_NAMES)}")
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


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nflow-sim", description="Run nflow block diagrams. With no command, "
                                "reads a diagram on stdin and writes the result on stdout.")
    _add_common(p, simulates=True, top=True)
    sub = p.add_subparsers(dest="command")
    run = sub.add_parser("run", help="simulate FILE")
    run.add_argument("file")
    run.add_argument("-o", "--output", help="write the result here instead of stdout")
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
    swp.add_argument("--batch-size", type=int, metavar="N", help="runs per Dask task (default: automatic)")
    swp.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress bar")
    swp.add_argument("--base-dir", metavar="DIR", default=argparse.SUPPRESS,
                     help="directory fileSource/fileSink paths are confined to (default: the diagram file's)")
    _add_common(swp, simulates=False, top=False)
    swp.set_defaults(func=_sweep)
    blk = sub.add_parser("blocks", help="list the block types that run")
    blk.add_argument("--json", action="store_true")
    blk.set_defaults(func=_blocks)
    info = sub.add_parser("fmu-info", help="describe an FMU (.fmu or extracted folder): model, FMI version, "
                          "interfaces, variables (nflow's fmiInfo); needs fmpy (extra 'fmi')")
    info.add_argument("file")
    info.set_defaults(func=_fmu_info)
    entry = sub.add_parser("fmu-block", help="print a library.json block entry for an FMU (nflow's fmuToBlock): "
                           "ports from its inputs/outputs, params path + its parameters")
    entry.add_argument("file")
    entry.add_argument("--type", choices=("fmu", "fmuMe"), help="default: fmu if the FMU co-simulates, else fmuMe")
    entry.add_argument("--path", help="the path param to write (default: FILE as given)")
    entry.set_defaults(func=_fmu_block)
    plt = sub.add_parser("plot", help="draw a result (workspace variables and scopes against time, events "
                         "marked) into an image; needs matplotlib (extra 'plot')")
    plt.add_argument("file", help="a result JSON (from run or the pipe; '-' for stdin), or a diagram to run first")
    plt.add_argument("-o", "--output", required=True, help="image file; format from the extension (.png .svg .pdf)")
    plt.add_argument("--title", help="figure title (default: a summary of the result)")
    plt.add_argument("--dpi", type=int, default=100, help="resolution of a raster image (10 to 1200)")
    plt.add_argument("--diagram", metavar="FILE", help="the diagram the result came from: names each recorded "
                     "column after the block feeding it (a diagram given as the input is used by itself)")
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
