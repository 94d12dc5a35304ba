"""``nflow-sim``: a stdin/stdout pipe by default, plus run/validate/schema/blocks/plot.

Exit codes: 0 success, 2 the diagram is wrong, 1 running it failed.
On error stdout carries ``{"status": "error", "error": {...}}`` and stderr the message.
"""
from __future__ import annotations

import argparse
import sys

import orjson

from . import api
from .errors import DiagramError, NFlowError, SimulationError

EXIT_OK, EXIT_SIMULATION, EXIT_DIAGRAM = 0, 1, 2


def _write(text: str, out_path: str | None):
    if out_path:
        with open(out_path, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")


def _fail(err: NFlowError) -> int:
    sys.stdout.write(orjson.dumps({"status": "error", "error": err.to_dict()}).decode() + "\n")
    where = f" at {err.path}" if err.path else ""
    sys.stderr.write(f"nflow-sim: {err.code}{where}: {err.message}\n")
    return EXIT_DIAGRAM if isinstance(err, DiagramError) else EXIT_SIMULATION


def _read(path: str | None) -> bytes:
    if path in (None, "-"):
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise DiagramError("unreadable_input", f"cannot read {path}: {exc.strerror}") from None


def _simulate(args) -> int:
    text = api.simulate_json(_read(args.file), allow_nan=args.allow_nan)
    _write(text, args.output)
    return EXIT_OK


def _validate(args) -> int:
    diagram = api.validate(api.load_json(_read(args.file)))
    _write(orjson.dumps({"status": "ok", "blocks": len(diagram.blocks), "connections":
                         len(diagram.wires) + len(diagram.links), "samples": diagram.n_samples}).decode(), None)
    return EXIT_OK


def _schema(args) -> int:
    from . import schema
    if args.type is None:
        doc = schema.diagram_schema()
    else:
        doc = schema.params_schema_for(args.type)
    _write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode(), None)
    return EXIT_OK


def _blocks(args) -> int:
    from .blocks import supported_types
    rows = supported_types()
    if args.json:
        _write(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode(), None)
    else:
        for row in rows:
            sys.stdout.write(f"{row['type']:32s} {row['library']:22s} {row['label']}\n")
    return EXIT_OK


def _plot(args) -> int:
    from . import plot
    doc = plot.load_json(_read(args.file))
    if plot.is_diagram(doc):
        doc = api.simulate(doc)             # a diagram: run it, then draw what it recorded
    info = plot.render(doc, args.output, title=args.title, dpi=args.dpi)
    _write(orjson.dumps({"status": "ok", "output": args.output, **info}).decode(), None)
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nflow-sim", description="Run nflow block diagrams. With no command, "
                                "reads a diagram on stdin and writes the result on stdout.")
    p.add_argument("--allow-nan", action="store_true", help="write NaN/Infinity instead of null")
    sub = p.add_subparsers(dest="command")
    run = sub.add_parser("run", help="simulate FILE")
    run.add_argument("file")
    run.add_argument("-o", "--output", help="write the result here instead of stdout")
    run.add_argument("--allow-nan", action="store_true", help="write NaN/Infinity instead of null")
    run.set_defaults(func=_simulate)
    val = sub.add_parser("validate", help="check FILE without running it")
    val.add_argument("file")
    val.set_defaults(func=_validate)
    sch = sub.add_parser("schema", help="print the diagram JSON Schema, or one block type's params schema")
    sch.add_argument("type", nargs="?")
    sch.set_defaults(func=_schema)
    blk = sub.add_parser("blocks", help="list the block types that run")
    blk.add_argument("--json", action="store_true")
    blk.set_defaults(func=_blocks)
    plt = sub.add_parser("plot", help="draw a result (workspace variables and scopes against time, events "
                         "marked) into an image; needs matplotlib (extra 'plot')")
    plt.add_argument("file", help="a result JSON (from run or the pipe; '-' for stdin), or a diagram to run first")
    plt.add_argument("-o", "--output", required=True, help="image file; format from the extension (.png .svg .pdf)")
    plt.add_argument("--title", help="figure title (default: a summary of the result)")
    plt.add_argument("--dpi", type=int, default=100)
    plt.set_defaults(func=_plot)
    p.set_defaults(func=_simulate, file=None, output=None)
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except NFlowError as err:
        return _fail(err)
    except KeyboardInterrupt:
        sys.stderr.write("nflow-sim: interrupted\n")
        return 130
    except Exception as exc:  # a bug of ours: still a clean, typed answer
        return _fail(SimulationError("internal_error", f"internal error: {type(exc).__name__}: {exc}"))
