"""Parameter values and run lists: what each swept parameter takes, and how they combine.

A parameter's values are a list, an evenly spaced range (``linspace``, ``logspace``) or
random draws (``uniform``, ``normal``) with ``samples`` and ``seed``. ``grid`` runs every
combination (the first parameter varies slowest), ``zip`` runs the i-th values together.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..errors import DiagramError, pointer

DISTRIBUTIONS = ("uniform", "normal")
RANGES = ("linspace", "logspace")
KINDS = RANGES + DISTRIBUTIONS
COMBINE = ("grid", "zip")
MAX_RUNS = 1_000_000


def _range(kind: str, args: list) -> list:
    start, stop, count = args
    fn = np.linspace if kind == "linspace" else np.logspace   # logspace: 10**start ... 10**stop
    return fn(start, stop, count).tolist()


def _draws(kind: str, args: list, samples: int, seed, where: str) -> list:
    a, b = args
    if kind == "uniform" and not a <= b:
        raise DiagramError("spec_value", f"uniform needs lo <= hi, got [{a:g}, {b:g}]", path=where + "/uniform")
    if kind == "normal" and not b >= 0:
        raise DiagramError("spec_value", f"normal needs sigma >= 0, got {b:g}", path=where + "/normal")
    rng = np.random.default_rng(seed)
    return (rng.uniform(a, b, samples) if kind == "uniform" else rng.normal(a, b, samples)).tolist()


def values(entry, *, where: str, position: int, samples=None, seed: int = 0) -> list:
    """The values of one parameter (``entry`` as the spec gives it, already checked
    against the schema). ``samples``/``seed``: the spec's defaults for random draws; a
    parameter without its own seed draws from ``[seed, position]``, so two parameters
    never share a stream."""
    if isinstance(entry, list):
        return list(entry)
    kinds = [k for k in KINDS if k in entry]
    if len(kinds) != 1:
        raise DiagramError("spec_value", f"give exactly one of {', '.join(KINDS)} (got {', '.join(kinds) or 'none'})",
                           path=where)
    kind = kinds[0]
    if kind in RANGES:
        extra = [k for k in ("samples", "seed") if k in entry]
        if extra:
            raise DiagramError("spec_value", f"{extra[0]!r} goes with uniform/normal draws, not {kind}",
                               path=f"{where}/{extra[0]}")
        return _range(kind, entry[kind])
    count = entry.get("samples", samples)
    if count is None:
        raise DiagramError("spec_missing", f"{kind} draws need 'samples' (here or at the top of the spec)",
                           path=where)
    own_seed = entry.get("seed")
    return _draws(kind, entry[kind], count, [seed, position] if own_seed is None else own_seed, where)


def combine(names: list, columns: list, how: str) -> list:
    """Runs as tuples of values (one per parameter, in ``names`` order)."""
    if how == "zip":
        for name, column in zip(names, columns):
            if len(column) != len(columns[0]):
                raise DiagramError("length_mismatch", f"zip needs equally many values for every parameter: "
                                   f"{names[0]!r} has {len(columns[0])}, {name!r} has {len(column)}",
                                   path=pointer("parameters", name))
        total = len(columns[0])
    else:
        total = math.prod(len(c) for c in columns)
    if total > MAX_RUNS:
        raise DiagramError("too_many_runs", f"the sweep has {total:.4g} runs (limit {MAX_RUNS})", path="/parameters")
    return list(zip(*columns)) if how == "zip" else list(itertools.product(*columns))
