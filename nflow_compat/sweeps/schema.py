"""The JSON Schema of a sweep spec (draft 2020-12): ``sweeps.spec`` checks specs against it,
``nflow_compat.schema`` writes it to ``schemas/sweep.schema.json``."""
from __future__ import annotations

from . import expand, reductions


def sweep_schema() -> dict:
    """The JSON Schema of a sweep spec (also written to schemas/sweep.schema.json)."""
    number = {"type": "number"}
    count = {"type": "integer", "minimum": 1, "maximum": expand.MAX_RUNS}
    span = {"type": "array", "prefixItems": [number, number, count], "minItems": 3, "maxItems": 3,
            "description": "[start, stop, count]; logspace: 10**start ... 10**stop"}
    pair = {"type": "array", "prefixItems": [number, number], "minItems": 2, "maxItems": 2}
    bounds = {**pair, "description": "[lo, hi]: the design scaled to these bounds"}
    four = {"type": "array", "prefixItems": [number] * 4, "minItems": 4, "maxItems": 4,
            "description": "[mu, sigma, lo, hi]: the normal law cut to [lo, hi]"}
    seed = {"type": "integer", "minimum": 0}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/nelson-lang/nflow-compat/schemas/sweep.schema.json",
        "title": "nflow-compat sweep specification",
        "type": "object",
        "required": ["diagram", "parameters"],
        "additionalProperties": False,
        "properties": {
            "diagram": {"type": ["object", "string"], "minLength": 1,
                        "description": "the diagram (as given to __nflow_simulate__) or a path to its JSON file"},
            "parameters": {"type": "object", "minProperties": 1,
                           "description": "'block.param', 'variables.name' or a JSON pointer into the diagram "
                                          "-> its values",
                           "additionalProperties": {"$ref": "#/$defs/values"}},
            "combine": {"enum": list(expand.COMBINE)},
            "samples": {**count, "description": "draws (or design points) per parameter that does not say"},
            "seed": {**seed, "description": "seed of the random parameters and designs that do not say"},
            "outputs": {"type": "object",
                        "description": "workspace variable -> reductions and/or 'trace'",
                        "additionalProperties": {"type": "array", "minItems": 1, "uniqueItems": True,
                                                 "items": {"type": "string",
                                                           "pattern": reductions.OUTPUT_PATTERN}}},
            "events": {"type": "array", "uniqueItems": True,
                       "items": {"type": "string", "pattern": reductions.EVENT_PATTERN},
                       "description": "'count' (every event), an event kind (mode, stop, contact, ...: how many), "
                                      "event_time(block, to[, n]) (the n-th located time it enters mode 'to', "
                                      "1-based, -1 the last) or event_count(block, to)"},
            "batch_size": {"type": "integer", "minimum": 1, "description": "runs per Dask task"},
        },
        "$defs": {
            "values": {"type": ["array", "object"], "minItems": 1, "minProperties": 1,
                       "additionalProperties": False,
                       "properties": {"linspace": span, "logspace": span, "uniform": pair,
                                      "normal": {**pair, "description": "[mu, sigma]"}, "truncnormal": four,
                                      "lognormal": {**pair, "description": "[mu, sigma] of the normal law of "
                                                                          "its logarithm"},
                                      "lhs": bounds, "sobol": bounds, "halton": bounds,
                                      "samples": count, "seed": seed}},
        },
    }
