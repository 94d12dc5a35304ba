"""Golden-file regression suite: every ``fixtures/**/*.json`` is a diagram with the result
it must give and where that expectation comes from (``provenance``):

* ``doc-stated``   an nflow page states the result (``source`` names the page);
* ``analytic``     a closed form (``derivation`` says which);
* ``msl-reference`` Modelica Standard Library reference results;
* ``ngspice-reference`` ngspice's run of the same circuit (``fixtures/ngspice/``; the
  netlist, ngspice's version and output in ``fixtures/reference/ngspice/``);
* ``regression``   our own earlier output, reviewed. Only these are ever regenerated:
  ``python -m tests.goldens --regenerate-regression`` (``make goldens``).

``expect`` is compared recursively against the result: every key it names must be there;
numbers within ``tolerance`` (abs + rel*|expected|), ``null`` matches NaN.
"""
from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

import orjson

import nflow_compat as nc

from tests.fmus import build

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
REFERENCE = ROOT / "reference"      # the data tests compare with (its README says whence); not goldens
PROVENANCES = ("doc-stated", "analytic", "msl-reference", "ngspice-reference", "regression")


def fixture_paths() -> list:
    return sorted(p for p in ROOT.rglob("*.json") if REFERENCE not in p.parents)


def load(path: Path) -> dict:
    return orjson.loads(path.read_bytes())


def run(fixture: dict) -> dict:
    """The fixture's result. A fixture naming test FMUs (``"fmus": ["Lag-fmi3", ...]``, built
    from tests/fmus) runs with them in its base directory."""
    base = _fmu_folder(fixture["fmus"]) if "fmus" in fixture else None
    return orjson.loads(nc.simulate_json(orjson.dumps(fixture["diagram"]), base_dir=base))


_FMU_FOLDER = []   # the process's folder of built test FMUs (a TemporaryDirectory, made on first use)


def _fmu_folder(names) -> str:
    if not _FMU_FOLDER:
        _FMU_FOLDER.append(tempfile.TemporaryDirectory(prefix="nflow-golden-fmus-"))
    folder = Path(_FMU_FOLDER[0].name)
    for name in names:
        identifier, _, version = name.rpartition("-fmi")
        if not (folder / f"{name}.fmu").exists():
            build.build(identifier, int(version), folder)
    return str(folder)


def mismatches(expected, actual, tol: dict, where: str = "") -> list:
    """Human-readable differences (empty when the result matches)."""
    a_tol, r_tol = tol.get("abs", 1e-12), tol.get("rel", 1e-12)
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {type(actual).__name__}"]
        out = []
        for key, value in expected.items():
            if key not in actual:
                out.append(f"{where}/{key}: missing")
            else:
                out += mismatches(value, actual[key], tol, f"{where}/{key}")
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: expected {len(expected)} items, got "
                    f"{len(actual) if isinstance(actual, list) else type(actual).__name__}"]
        out = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            out += mismatches(e, a, tol, f"{where}/{i}")
            if len(out) > 5:
                break
        return out
    if expected is None or isinstance(expected, (int, float)) and not isinstance(expected, bool):
        if expected is None or actual is None:
            return [] if expected is None and (actual is None or actual != actual) else \
                [f"{where}: expected {expected}, got {actual}"]
        if not isinstance(actual, (int, float)):
            return [f"{where}: expected {expected}, got {actual!r}"]
        if math.isinf(expected) or math.isinf(actual):
            return [] if expected == actual else [f"{where}: expected {expected}, got {actual}"]
        ok = abs(actual - expected) <= a_tol + r_tol * abs(expected)
        return [] if ok else [f"{where}: expected {expected!r}, got {actual!r}"]
    return [] if expected == actual else [f"{where}: expected {expected!r}, got {actual!r}"]


def regenerate_regression() -> int:
    count = 0
    for path in fixture_paths():
        fixture = load(path)
        if fixture.get("provenance") != "regression":
            continue
        result = run(fixture)
        fixture["expect"] = {key: result[key] for key in fixture["expect"]}
        path.write_bytes(orjson.dumps(fixture, option=orjson.OPT_INDENT_2) + b"\n")
        count += 1
    return count


if __name__ == "__main__":
    if sys.argv[1:] != ["--regenerate-regression"]:
        sys.exit("usage: python -m tests.goldens --regenerate-regression")
    print(f"regenerated {regenerate_regression()} regression golden(s); review the diff before committing")
