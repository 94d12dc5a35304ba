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
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import orjson

from .. import api
from ..diagram import Limits
from ..errors import NFlowError, SimulationError
from ..params import Target, bind, rebinds
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


def _one(structure: _Structure, batch: Batch, values) -> tuple:
    """(row, traces) of one run; a failure is a row with its typed error, no traces."""
    with api.expression_limits(batch.limits):
        result = api.run_diagram(structure.diagram(values), limits=batch.limits, base_dir=batch.base_dir)
    row = {"status": "ok", "error_code": None, "error": None}
    traces = []
    for out in batch.outputs:
        times, recorded = reductions.recording(result, out.variable)
        for column, reduction in out.columns:
            row[column] = reductions.reduce(reduction, times, recorded, out.variable)
        if out.trace:
            traces.append((out.variable, times, recorded))
    row.update({event_column(k): v for k, v in reductions.event_values(result, batch.events).items()})
    return row, traces


def batches(spec, todo: list, size: int, limits: Limits) -> list:
    """The runs ``todo`` of ``spec`` (a ``spec.Spec``) as Batches of ``size`` runs."""
    common = dict(structure=spec.structure, diagram=spec.diagram, pointers=tuple(p.pointer for p in spec.parameters),
                  blocks=tuple(p.block for p in spec.parameters), outputs=spec.outputs, events=spec.events,
                  limits=limits, base_dir=spec.base_dir)
    return [Batch(runs=tuple((run, spec.runs[run]) for run in todo[start:start + size]), **common)
            for start in range(0, len(todo), size)]


def run_batch(batch: Batch) -> list:
    """Per run of ``batch``: (run id, row, traces); traces are (variable, times or None,
    N x W values). Never raises for a run's own failure: that is its row."""
    structure = _structure(batch)
    done = []
    for run, values in batch.runs:
        try:
            row, traces = _one(structure, batch, values)
        except NFlowError as err:
            row, traces = {"status": "error", "error_code": err.code, "error": err.message}, []
        except Exception as exc:   # a bug of ours: still a typed row, and the sweep goes on
            err = SimulationError("internal_error", f"internal error: {type(exc).__name__}: {exc}")
            row, traces = {"status": "error", "error_code": err.code, "error": err.message}, []
        done.append((run, row, traces))
    return done
