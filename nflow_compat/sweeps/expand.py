"""Parameter values and run lists: what each swept parameter takes, and how they combine.

A parameter's values are

* a list, or an evenly spaced range (``linspace``, ``logspace``);
* random draws with ``samples`` and ``seed``, from ``scipy.stats``: ``uniform [lo, hi]``,
  ``normal [mu, sigma]``, ``truncnormal [mu, sigma, lo, hi]`` (the normal cut to
  ``[lo, hi]``), ``lognormal [mu, sigma]`` (``exp`` of a normal ``mu, sigma``, MATLAB's
  ``lognrnd``); a parameter without its own seed draws from ``[seed, position]``, so two
  parameters never share a stream;
* a space-filling design ``lhs`` (Latin hypercube), ``sobol`` (scrambled; powers of two keep
  its balance) or ``halton`` (scrambled), ``[lo, hi]`` with ``samples`` and ``seed``, from
  ``scipy.stats.qmc``, scaled to the bounds. The parameters with the same design and seed
  are one joint design over all of them (an n-point Latin hypercube in as many dimensions,
  not independent columns): they take the same number of samples and go together.

``grid`` runs every combination (the first parameter varies slowest; a joint design is one
factor, its points zipped), ``zip`` runs the i-th values together.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..errors import DiagramError, pointer

# kind -> the arguments' names (what the spec's array holds)
DISTRIBUTIONS = {"uniform": ("lo", "hi"), "normal": ("mu", "sigma"), "truncnormal": ("mu", "sigma", "lo", "hi"),
                 "lognormal": ("mu", "sigma")}
DESIGNS = ("lhs", "sobol", "halton")
RANGES = ("linspace", "logspace")
KINDS = RANGES + tuple(DISTRIBUTIONS) + DESIGNS
COMBINE = ("grid", "zip")
MAX_RUNS = 1_000_000


@dataclass(frozen=True)
class Column:
    """One parameter's values; ``design``: the joint design it belongs to (its points go
    together with the other members'), else None."""
    values: list
    design: tuple | None = None


def _range(kind: str, args: list) -> list:
    start, stop, count = args
    fn = np.linspace if kind == "linspace" else np.logspace   # logspace: 10**start ... 10**stop
    return fn(start, stop, count).tolist()


def _distribution(kind: str, args: list, where: str):
    """The frozen ``scipy.stats`` distribution ``kind`` of ``args``."""
    from scipy import stats

    at = where + "/" + kind
    if kind in ("uniform", "truncnormal") and not args[-2] <= args[-1]:
        raise DiagramError("spec_value", f"{kind} needs lo <= hi, got [{args[-2]:g}, {args[-1]:g}]", path=at)
    if kind in ("normal", "lognormal") and not args[1] >= 0:
        raise DiagramError("spec_value", f"{kind} needs sigma >= 0, got {args[1]:g}", path=at)
    if kind == "truncnormal" and not (args[1] > 0 and args[2] < args[3]):
        raise DiagramError("spec_value", f"truncnormal needs sigma > 0 and lo < hi, got sigma {args[1]:g}, "
                           f"[{args[2]:g}, {args[3]:g}]", path=at)
    if kind == "uniform":
        return stats.uniform(args[0], args[1] - args[0])
    if kind == "normal":
        return stats.norm(*args)
    if kind == "lognormal":            # sigma 0: the one value exp(mu)
        return stats.lognorm(s=args[1], scale=math.exp(args[0])) if args[1] else stats.uniform(math.exp(args[0]), 0)
    mu, sigma, lo, hi = args
    return stats.truncnorm((lo - mu) / sigma, (hi - mu) / sigma, loc=mu, scale=sigma)


def _draws(kind: str, args: list, samples: int, seed, where: str) -> list:
    law = _distribution(kind, args, where)
    return np.asarray(law.rvs(size=samples, random_state=np.random.default_rng(seed)), dtype=float).tolist()


def _design_points(kind: str, bounds: list, samples: int, seed: int) -> np.ndarray:
    """``samples`` points of design ``kind`` in as many dimensions as ``bounds`` ([lo, hi]
    each), scaled to them: a samples x dimensions array."""
    import warnings

    from scipy.stats import qmc

    d = len(bounds)
    sampler = {"lhs": lambda: qmc.LatinHypercube(d, seed=seed),
               "sobol": lambda: qmc.Sobol(d, scramble=True, seed=seed),
               "halton": lambda: qmc.Halton(d, scramble=True, seed=seed)}[kind]()
    with warnings.catch_warnings():     # Sobol's note that a power of two keeps its balance (documented)
        warnings.simplefilter("ignore", UserWarning)
        unit = sampler.random(samples)
    lo, hi = np.array(bounds, dtype=float).T
    return lo + unit * (hi - lo)


def column(entry, *, where: str, position: int, samples=None, seed: int = 0) -> Column:
    """One parameter's values (``entry`` as the spec gives it, already checked against the
    schema); a design's values are filled in by ``designs`` (its column here has none).
    ``samples``/``seed``: the spec's defaults for draws and designs."""
    if isinstance(entry, list):
        return Column(list(entry))
    kinds = [k for k in KINDS if k in entry]
    if len(kinds) != 1:
        raise DiagramError("spec_value", f"give exactly one of {', '.join(KINDS)} (got {', '.join(kinds) or 'none'})",
                           path=where)
    kind = kinds[0]
    if kind in RANGES:
        extra = [k for k in ("samples", "seed") if k in entry]
        if extra:
            raise DiagramError("spec_value", f"{extra[0]!r} goes with random draws and designs, not {kind}",
                               path=f"{where}/{extra[0]}")
        return Column(_range(kind, entry[kind]))
    count = entry.get("samples", samples)
    if count is None:
        raise DiagramError("spec_missing", f"{kind} needs 'samples' (here or at the top of the spec)", path=where)
    own_seed = entry.get("seed")
    if kind in DESIGNS:
        lo, hi = entry[kind]
        if not lo <= hi:
            raise DiagramError("spec_value", f"{kind} needs lo <= hi, got [{lo:g}, {hi:g}]", path=f"{where}/{kind}")
        return Column([], (kind, seed if own_seed is None else own_seed, count))
    if len(entry[kind]) != len(DISTRIBUTIONS[kind]):
        raise DiagramError("spec_length", f"{kind} takes [{', '.join(DISTRIBUTIONS[kind])}]", path=f"{where}/{kind}")
    return Column(_draws(kind, entry[kind], count, [seed, position] if own_seed is None else own_seed, where))


def designs(names: list, entries: list, columns: list) -> list:
    """``columns`` with every joint design's points filled in: per design (kind, seed), one
    point set over its members' bounds."""
    groups: dict = {}
    for k, col in enumerate(columns):
        if col.design is not None:
            groups.setdefault(col.design[:2], []).append(k)
    out = list(columns)
    for (kind, seed), members in groups.items():
        counts = {columns[k].design[2] for k in members}
        if len(counts) > 1:
            raise DiagramError("length_mismatch", f"the {kind} design with seed {seed} is joint over "
                               f"{', '.join(repr(names[k]) for k in members)}: give them the same 'samples' "
                               f"(got {', '.join(str(c) for c in sorted(counts))})",
                               path=pointer("parameters", names[members[-1]]))
        points = _design_points(kind, [entries[k][kind] for k in members], counts.pop(), seed)
        for j, k in enumerate(members):
            out[k] = Column(points[:, j].tolist(), columns[k].design[:2])
    return out


def combine(names: list, columns: list, how: str) -> list:
    """Runs as tuples of values (one per parameter, in ``names`` order)."""
    lengths = [len(c.values) for c in columns]
    if how == "zip":
        for name, n in zip(names, lengths):
            if n != lengths[0]:
                raise DiagramError("length_mismatch", f"zip needs equally many values for every parameter: "
                                   f"{names[0]!r} has {lengths[0]}, {name!r} has {n}",
                                   path=pointer("parameters", name))
        total = lengths[0]
    else:
        # the factors of the grid: a parameter alone, or a joint design's members together
        factors: dict = {}
        for k, c in enumerate(columns):
            factors.setdefault(c.design if c.design is not None else ("alone", k), []).append(k)
        total = math.prod(lengths[members[0]] for members in factors.values())
    if total > MAX_RUNS:
        raise DiagramError("too_many_runs", f"the sweep has {total:.4g} runs (limit {MAX_RUNS})", path="/parameters")
    if how == "zip":
        return list(zip(*(c.values for c in columns)))
    runs = []
    for picks in itertools.product(*(range(lengths[m[0]]) for m in factors.values())):
        run = [None] * len(columns)
        for members, i in zip(factors.values(), picks):
            for k in members:
                run[k] = columns[k].values[i]
        runs.append(tuple(run))
    return runs
