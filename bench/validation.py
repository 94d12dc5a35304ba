"""Validation benchmark: what checking a diagram against the generated JSON Schemas
(``shape.check``, run first by ``diagram.parse``) costs, next to the whole ``simulate_json``.

Diagrams: examples/quickstart (6 blocks, 7 connections, 401 samples) and a generated chain of
1,000 blocks (a constant, 998 gains, a toWorkspace; 999 connections; 101 samples); and, for
the arrays that jsonschema would check element by element, a constant whose Value is a
100,000-element vector.

Timed, as the min of ``--validation-repeats`` interleaved rounds (each round times every
piece once, in a fresh order, so a load change hits them alike):

* simulate_json: text in, text out (the schema check included);
* check: ``shape.check`` of the decoded diagram;
* parse: ``diagram.parse`` (the check, then normalization and the semantic checks).

Figure: check / simulate_json, the share of a run the schema check takes. Target: under 10%
on the quickstart.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import orjson

from .causal_chain import environment
from .profiling import bench_parser, interleaved, progress_log
from .stick_slip import _loadavg

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
TARGET = 0.10


def chain(n_blocks: int = 1000) -> dict:
    """A constant, ``n_blocks - 2`` gains in a chain, a toWorkspace."""
    blocks = [{"id": "c", "type": "constant", "params": {"Value": 1.0}}]
    blocks += [{"id": f"g{i}", "type": "gain", "params": {"Gain": 1.0001}} for i in range(1, n_blocks - 1)]
    blocks.append({"id": "w", "type": "toWorkspace", "params": {"VariableName": "y", "SaveFormat": "Array"}})
    connections = [{"from": a["id"], "fromIndex": 0, "to": b["id"], "toIndex": 0} for a, b in zip(blocks, blocks[1:])]
    return {"blocks": blocks, "connections": connections, "sampleTime": 0.01, "duration": 1.0, "solver": "discrete"}


def long_vector(n: int = 100_000) -> dict:
    return {"blocks": [{"id": "c", "type": "constant", "params": {"Value": [float(i) for i in range(n)]}}],
            "connections": [], "sampleTime": 0.1, "duration": 0.1}


def cases() -> dict:
    return {"quickstart": (ROOT / "examples" / "quickstart" / "diagram.json").read_bytes(),
            "chain_1000": orjson.dumps(chain()), "vector_100000": orjson.dumps(long_vector())}


def bench_case(text: bytes, repeats: int) -> dict:
    import nflow_compat as nc
    from nflow_compat.diagram import parse
    from nflow_compat.shape import check
    doc = orjson.loads(text)
    pieces = {"simulate_json": lambda: nc.simulate_json(text), "check": lambda: check(doc),
              "parse": lambda: parse(doc)}
    for fn in pieces.values():     # warm: the validators compile once per process
        fn()
    times, best = interleaved(pieces, repeats)
    return {"seconds": times, "min_s": best, "check_share": best["check"] / best["simulate_json"]}


def parser() -> argparse.ArgumentParser:
    return bench_parser("validation", __doc__, 20, "interleaved rounds")


def main(argv=None) -> int:
    args = argv if isinstance(argv, argparse.Namespace) else parser().parse_args(argv)
    log = progress_log(args)
    load_start = _loadavg()
    results = {}
    for name, text in cases().items():
        log(f"validation: {name}")
        results[name] = bench_case(text, args.validation_repeats)
    print(f"{'diagram':<16}{'simulate_json':>15}{'check':>12}{'parse':>12}{'check share':>13}")
    for name, r in results.items():
        best = r["min_s"]
        print(f"{name:<16}{best['simulate_json'] * 1e3:>12.2f} ms{best['check'] * 1e3:>9.2f} ms"
              f"{best['parse'] * 1e3:>9.2f} ms{r['check_share']:>12.1%}")
    share = results["quickstart"]["check_share"]
    print(f"quickstart: the schema check is {share:.1%} of simulate_json (target < {TARGET:.0%})")
    if not args.no_write:
        doc = {"benchmark": "validation", "environment": environment(),
               "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "method": {"repeats": args.validation_repeats, "statistic": "min", "interleaved": True,
                          "target_quickstart_share": TARGET},
               "load_average": {"start": load_start, "end": _loadavg()}, "results": results}
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "validation.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
