"""What a worker does with a batch of runs: bind each run's values into the diagram, run
it, keep what the spec asks for. Plain Python and numpy (no Dask here), so a batch runs
the same in a Dask worker and in a test.

Each worker process keeps, per diagram structure (``Spec.structure``: the diagram and
where the swept values go), what it can reuse between runs: the diagram decoded and
validated once. When every swept value is a parameter of a block outside subsystems,
a run only re-normalizes its own values into that validated ``Diagram``
(``diagram.with_params``) and builds the plan from it: no JSON decoding, no re-checking
of the other blocks, wires and variables. Otherwise (a variable, a subsystem's content,
any other pointer) the run patches the decoded JSON and validates it whole. Either way
the plan itself (widths, slots, the blocks' closures, the physical islands) is built per
run, because the block handlers and the islands bind parameter values into their
closures and compiled matrices when they are built.

Runs that re-bind a validated diagram differ only in parameter values: a batch of them
(``Batch.batched``) goes to ``engine.batch.run_batch``, which integrates them side by side
as one vectorized run where the diagram allows it (each run's row says whether it did:
``batched``). Should the batch engine itself fail (a bug of ours), the batch's runs run one
by one instead, with a ``RuntimeWarning``: the sweep loses nothing.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict
from dataclasses import dataclass

import orjson

from .. import api
from ..diagram import Limits
from ..engine import batch as batch_engine
from ..errors import NFlowError, SimulationError
from ..params import Target, bind, block_values, rebinds
from . import reductions
from .spec import event_column

_CACHED_STRUCTURES = 8


@dataclass(frozen=True)
class Batch:
    """One Dask task: a few runs of one sweep (everything a worker needs, picklable)."""
    structure: str
    diagram: bytes
    pointers: tuple            # per parameter, where its value goes
    blocks: tuple              # per parameter, (block index, param) or None
    runs: tuple                # of (run id, values)
    outputs: tuple             # of spec.Output
    events: tuple
    limits: Limits
    base_dir: str | None
    batched: bool = True       # runs that differ only in block parameters run as one batch


class _Structure:
    """A diagram structure as a worker keeps it between runs (see the module docstring)."""

    def __init__(self, batch: Batch):
        self.diagram_json = batch.diagram
        self.targets = [Target(ptr, blk) for ptr, blk in zip(batch.pointers, batch.blocks)]
        self.limits = batch.limits
        self.base = (api.validate(orjson.loads(batch.diagram), limits=batch.limits) if rebinds(self.targets)
                     else None)

    def diagram(self, values):
        return bind(self.base, self.targets, values, self.diagram_json, self._validate)

    def _validate(self, raw):
        return api.validate(raw, limits=self.limits)


_STRUCTURES: OrderedDict = OrderedDict()   # this process's structures, most recently used last


def _structure(batch: Batch) -> _Structure:
    found = _STRUCTURES.pop(batch.structure, None)
    if found is None:
        found = _Structure(batch)
    _STRUCTURES[batch.structure] = found
    while len(_STRUCTURES) > _CACHED_STRUCTURES:
        _STRUCTURES.popitem(last=False)
    return found


def _goes_to_the_batch_engine(structure: _Structure, batch: Batch) -> bool:
    """Whether ``batch``'s runs go to the batch engine together (see the module docstring)."""
    return batch.batched and structure.base is not None and len(batch.runs) > 1


def _one(structure: _Structure, batch: Batch, values) -> dict:
    """The result of one run on its own."""
    with api.expression_limits(batch.limits):
        return api.run_diagram(structure.diagram(values), limits=batch.limits, base_dir=batch.base_dir)


def _kept(batch: Batch, result) -> tuple:
    """(row, traces) of a run's result (a dict, or the NFlowError it ended in): what the
    spec keeps of it; a failure is a row with its typed error, no traces."""
    if isinstance(result, NFlowError):
        return _error_row(result), []
    row = {"status": "ok", "error_code": None, "error": None, "batched": bool(result["stats"].get("batched"))}
    traces = []
    for out in batch.outputs:
        times, recorded = reductions.recording(result, out.variable)
        for column, reduction in out.columns:
            row[column] = reductions.reduce(reduction, times, recorded, out.variable)
        if out.trace:
            traces.append((out.variable, times, recorded))
    row.update({event_column(k): v for k, v in reductions.event_values(result, batch.events).items()})
    return row, traces


def _error_row(err: NFlowError) -> dict:
    return {"status": "error", "error_code": err.code, "error": err.message}


def _guarded(make) -> tuple:
    """(row, traces) from ``make()``; never raises for a run's own failure."""
    try:
        return make()
    except NFlowError as err:
        return _error_row(err), []
    except Exception as exc:   # a bug of ours: still a typed row, and the sweep goes on
        return _error_row(SimulationError("internal_error", f"internal error: {type(exc).__name__}: {exc}")), []


def _all_at_once(structure: _Structure, batch: Batch) -> list | None:
    """Every run's result from one call of the batch engine; None (and a warning) when the
    engine itself failed."""
    variants = [block_values(structure.targets, values) for _, values in batch.runs]
    try:
        return batch_engine.run_batch(structure.base, variants, limits=batch.limits, base_dir=batch.base_dir)
    except Exception as exc:   # a bug of ours in the batch engine: its runs go one by one
        warnings.warn(f"the batch engine failed on {len(variants)} runs ({type(exc).__name__}: {exc}); "
                      "they run one by one instead", RuntimeWarning, stacklevel=2)
        return None


def batches(spec, todo: list, size: int, limits: Limits, batched: bool = True) -> list:
    """The runs ``todo`` of ``spec`` (a ``spec.Spec``) as Batches of ``size`` runs
    (``batched``: each Batch's runs to the batch engine together, where they can be)."""
    common = dict(structure=spec.structure, diagram=spec.diagram, pointers=tuple(p.pointer for p in spec.parameters),
                  blocks=tuple(p.block for p in spec.parameters), outputs=spec.outputs, events=spec.events,
                  limits=limits, base_dir=spec.base_dir, batched=batched)
    return [Batch(runs=tuple((run, spec.runs[run]) for run in todo[start:start + size]), **common)
            for start in range(0, len(todo), size)]


def run_batch(batch: Batch) -> list:
    """Per run of ``batch``: (run id, row, traces); traces are (variable, times or None,
    N x W values). Never raises for a run's own failure: that is its row."""
    structure = _structure(batch)
    results = _all_at_once(structure, batch) if _goes_to_the_batch_engine(structure, batch) else None
    if results is not None:
        return [(run, *_guarded(lambda result=result: _kept(batch, result)))
                for (run, _), result in zip(batch.runs, results)]
    return [(run, *_guarded(lambda values=values: _kept(batch, _one(structure, batch, values))))
            for run, values in batch.runs]
