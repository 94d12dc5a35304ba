"""cProfile of one call, as the rows the benchmarks write (their hook inflates cheap calls:
read the shares, not the absolute times); interleaved timing of pieces of work."""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import random
import sys
import time
from pathlib import Path


def interleaved(pieces: dict, repeats: int) -> tuple:
    """``(seconds per piece per round, the minimum per piece)`` of ``repeats`` rounds, each
    timing every piece of ``pieces`` (name -> call) once in a fresh order, so a change of
    load hits them alike."""
    times = {name: [] for name in pieces}
    order = list(pieces)
    for _ in range(repeats):
        random.shuffle(order)
        for name in order:
            started = time.perf_counter()
            pieces[name]()
            times[name].append(time.perf_counter() - started)
    return times, {name: min(values) for name, values in times.items()}


def profile_rows(run, top: int) -> tuple:
    """``(total tottime in s, the top rows by tottime)`` of one ``run()``."""
    prof = cProfile.Profile()
    prof.enable()
    run()
    prof.disable()
    stats = pstats.Stats(prof, stream=io.StringIO()).stats
    total = sum(v[2] for v in stats.values())
    rows = [{"function": f"{Path(f).parent.name}/{Path(f).name}:{line}({fn})", "calls": calls, "tottime_s": tt,
             "cumtime_s": ct, "share": tt / total if total else 0.0}
            for (f, line, fn), (_, calls, tt, ct, _) in stats.items()]
    rows.sort(key=lambda r: -r["tottime_s"])
    return total, rows[:top]


def bench_parser(name: str, doc: str, repeats: int, repeats_help: str) -> argparse.ArgumentParser:
    """The options every ``python -m bench --only NAME`` command has: ``--NAME-repeats``,
    ``--no-write`` (of bench/results/NAME.json) and ``--quiet``."""
    ap = argparse.ArgumentParser(prog=f"python -m bench --only {name}", description=doc.split("\n\n")[0])
    ap.add_argument(f"--{name}-repeats", type=int, default=repeats, help=f"{repeats_help} (default {repeats})")
    ap.add_argument("--no-write", action="store_true", help=f"do not write bench/results/{name}.json")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    return ap


def progress_log(args):
    """A bench's progress lines on stderr (nothing with ``--quiet``)."""
    return (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
