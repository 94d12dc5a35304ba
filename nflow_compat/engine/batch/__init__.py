"""Many parameter sets of one diagram run as one batch (``run_batch``).

A batch is a list of *variants*: values for block parameters of one validated diagram,
each ``{(block index, param): value}`` as ``diagram.with_params`` takes them. Variants
that differ only in values share the structure of the diagram; where the batch engine
(``engine.batch.lanes``) applies, their integrations step side by side as one vectorized
run, each variant with its own step size, error control, modes and events. Where it does
not (see ``lanes.batchable``), each variant runs on its own, as ``Plan.run`` would: the
result says which (``stats["batched"]``).
"""
from __future__ import annotations

import time as _time

from ...api import build_plan, expression_limits
from ...diagram import Diagram, Limits, with_params
from ...errors import NFlowError
from ..plan import collector_paused
from .lanes import batchable, run_lanes


def run_batch(diagram: Diagram, variants: list, *, limits: Limits | None = None, base_dir=None) -> list:
    """Per variant of ``diagram``: the result dict ``Plan.run`` gives for it, or the
    ``NFlowError`` its compilation or run raised (a variant's failure never ends the
    others). ``variants``: per variant ``{(block index, param): value}``. Every result's
    ``stats`` carries ``batched`` (whether it ran in a vectorized batch) and, when it did,
    ``batch_size`` (the variants stepped together)."""
    started = _time.perf_counter()
    plans = []
    # the collector paused for the batch, as for one compilation (``collector_paused``): the
    # variants' plans and results stay alive to the end, and each collection walks them all
    # again (an eighth of 1,000 MSD variants' time); what cyclic garbage the runs leave is
    # collected after (measured: the same peak memory either way)
    with collector_paused(), expression_limits(limits):
        for values in variants:
            try:
                plans.append(build_plan(with_params(diagram, values) if values else diagram, limits=limits,
                                        base_dir=base_dir))
            except NFlowError as err:
                plans.append(err)
        ready = [k for k, p in enumerate(plans) if not isinstance(p, NFlowError)]
        outcomes = list(plans)
        if len(ready) > 1 and batchable([plans[k] for k in ready]):
            for k, result in zip(ready, run_lanes([plans[k] for k in ready], _single)):
                outcomes[k] = result
        else:
            for k in ready:
                outcomes[k] = _single(plans[k])
    wall = _time.perf_counter() - started
    for result in outcomes:
        if not isinstance(result, NFlowError):
            result["stats"].setdefault("batched", False)
            result["stats"]["batch_wall_s"] = round(wall, 6)
    return outcomes


def _single(plan) -> dict | NFlowError:
    try:
        return plan.run()
    except NFlowError as err:     # Plan.run types every failure
        return err
