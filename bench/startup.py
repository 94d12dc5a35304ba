"""Cold-start benchmark: a whole ``nflow-sim`` process (the pipe: a diagram on stdin, the result on
stdout), against a bare ``python -c "import ..."`` of what such a run cannot do without.

Cases (``CASES``):

* quickstart: ``nflow-sim < examples/quickstart/diagram.json`` (6 causal blocks, ``discrete``,
  401 samples) against ``python -c "import numpy, orjson, jsonschema"`` (the base dependencies);
* mass-spring-damper: a Mass on a Spring and a Damper to a Fixed flange, a PositionSensor into a
  toWorkspace, under ``ode45`` (5 s, 501 samples) against
  ``python -c "import numpy, scipy.integrate, orjson"``.

Method: the package's bytecode is compiled first (``compileall``, as ``pip install`` does; an
editable install under ``PYTHONDONTWRITEBYTECODE`` would otherwise compile every module it
imports on every run, ~0.1 s), then both sides of a case alternate in one run (pipe then import, then import then pipe, ...),
each a fresh process timed from its start to its exit; the figure is the min of
``--startup-repeats`` runs of each (default 7) and the ratio pipe / import. Target: at most 2.0
for both. Each pipe run must answer ``"status": "ok"``, else the exit status is 1.

``python -X importtime`` of one pipe run is summed by top-level package (``--no-importtime``
skips it): where the remaining start-up goes.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from .causal_chain import environment
from .profiling import bench_parser, progress_log
from .stick_slip import _loadavg

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
TARGET = 2.0


def mass_spring_damper() -> dict:
    """A small acausal diagram: 1 kg on a 4 N/m spring and a 0.5 N.s/m damper, released at 1 m."""
    def pin(a, a_pin, b, b_pin):
        return {"from": a, "fromPin": a_pin, "to": b, "toPin": b_pin}
    return {"blocks": [{"id": "ground", "type": "Fixed", "params": {}},
                       {"id": "spring", "type": "Spring", "params": {"k": 4.0}},
                       {"id": "damper", "type": "Damper", "params": {"d": 0.5}},
                       {"id": "mass", "type": "Mass", "params": {"m": 1.0, "s0": 1.0}},
                       {"id": "pos", "type": "PositionSensor", "params": {}},
                       {"id": "log", "type": "toWorkspace", "params": {"VariableName": "s", "SaveFormat": "Array"}}],
            "connections": [pin("ground", "flange", "spring", "a"), pin("spring", "b", "mass", "flange"),
                            pin("ground", "flange", "damper", "a"), pin("damper", "b", "mass", "flange"),
                            pin("pos", "flange", "mass", "flange"),
                            {"from": "pos", "fromIndex": 0, "to": "log", "toIndex": 0}],
            "sampleTime": 0.01, "duration": 5.0, "solver": "ode45"}


CASES = {
    "quickstart": (lambda: (ROOT / "examples" / "quickstart" / "diagram.json").read_bytes(),
                   "import numpy, orjson, jsonschema"),
    "mass_spring_damper": (lambda: orjson.dumps(mass_spring_damper()), "import numpy, scipy.integrate, orjson"),
}


def pipe_command() -> list:
    """The venv's ``nflow-sim`` console script (what a caller runs), else ``python -m nflow_compat``."""
    script = Path(sys.executable).parent / "nflow-sim"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "nflow_compat"]


def _timed(command: list, stdin_path: str | None) -> tuple[float, bytes]:
    with open(stdin_path or os.devnull, "rb") as stdin:
        started = time.perf_counter()
        done = subprocess.run(command, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
        return time.perf_counter() - started, done.stdout


def bench_case(name: str, repeats: int) -> dict:
    text, imports = CASES[name]
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        fh.write(text())
    try:
        sides = {"pipe": (pipe_command(), fh.name), "import": ([sys.executable, "-c", imports], None)}
        times = {side: [] for side in sides}
        failures = []
        for r in range(repeats):
            for side in (("pipe", "import") if r % 2 == 0 else ("import", "pipe")):
                seconds, out = _timed(*sides[side])
                times[side].append(seconds)
                if side == "pipe" and orjson.loads(out or b"{}").get("status") != "ok":
                    failures.append(out[:300].decode(errors="replace"))
        best = {side: min(values) for side, values in times.items()}
        return {"imports": imports, "seconds": times, "min_s": best, "ratio": best["pipe"] / best["import"],
                "failures": failures}
    finally:
        os.unlink(fh.name)


def compile_bytecode() -> None:
    import nflow_compat
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(nflow_compat.__file__).parent)],
                   check=True, stdout=subprocess.DEVNULL)


def importtime(name: str) -> dict:
    """Self time (s) of every module a pipe run imports, summed by top-level package."""
    text, _ = CASES[name]
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "nflow_compat"], input=text(),
                          capture_output=True, cwd=ROOT)
    packages: dict = {}
    for line in done.stderr.decode(errors="replace").splitlines():
        if not line.startswith("import time:") or "|" not in line or "self [us]" in line:
            continue
        self_us, _, module = line[len("import time:"):].split("|")
        top = module.strip().split(".")[0]
        packages[top] = packages.get(top, 0.0) + int(self_us) * 1e-6
    return dict(sorted(packages.items(), key=lambda kv: -kv[1]))


def parser() -> argparse.ArgumentParser:
    ap = bench_parser("startup", __doc__, 7, "runs of each side")
    ap.add_argument("--no-importtime", action="store_true", help="skip the -X importtime breakdown")
    return ap


def main(argv=None) -> int:
    args = argv if isinstance(argv, argparse.Namespace) else parser().parse_args(argv)
    log = progress_log(args)
    load_start = _loadavg()
    compile_bytecode()
    results = {}
    for name in CASES:
        log(f"startup: {name}")
        results[name] = bench_case(name, args.startup_repeats)
        if not args.no_importtime:
            results[name]["importtime_s"] = importtime(name)
    print(f"{'case':<20}{'pipe':>10}{'import':>10}{'ratio':>8}  (min of {args.startup_repeats}, target <= {TARGET})")
    for name, r in results.items():
        print(f"{name:<20}{r['min_s']['pipe']:>9.3f}s{r['min_s']['import']:>9.3f}s{r['ratio']:>7.2f}x  "
              f"vs python -c \"{r['imports']}\"")
        if "importtime_s" in r:
            top = ", ".join(f"{pkg} {s * 1e3:.0f} ms" for pkg, s in list(r["importtime_s"].items())[:8])
            print(f"{'':<20}imports (self time by package): {top}")
        for failure in r["failures"]:
            print(f"{name}: FAILED: {failure}")
    load_end = _loadavg()
    print(f"load average: {load_start} -> {load_end}")
    if not args.no_write:
        doc = {"benchmark": "startup", "environment": environment(), "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "method": {"repeats": args.startup_repeats, "statistic": "min", "alternated": True,
                          "bytecode": "compiled first (compileall)",
                          "pipe": pipe_command()[-1], "target_ratio": TARGET},
               "load_average": {"start": load_start, "end": load_end}, "results": results}
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "startup.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 1 if any(r["failures"] for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
