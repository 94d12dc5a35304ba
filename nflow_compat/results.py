"""Lay recorded data out as nflow's toWorkspace SaveFormats, and encode results as JSON."""
from __future__ import annotations

import json
import math

import numpy as np
import orjson

SAVE_FORMATS = ("Structure With Time", "Structure", "Array")


def workspace_value(save_format: str, block_id: str, times: np.ndarray, values: np.ndarray):
    """``values`` is N x W. Array -> the matrix; the structures wrap it like nflow does."""
    if save_format == "Array":
        return values
    return {"time": times if save_format == "Structure With Time" else [],
            "signals": {"values": values, "dimensions": int(values.shape[1]), "label": ""},
            "blockName": block_id}


def _plain(obj):
    """numpy -> lists and floats, recursively (for the stdlib encoder)."""
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _has_non_finite(obj) -> bool:
    if isinstance(obj, np.ndarray):
        return obj.dtype.kind == "f" and not np.isfinite(obj).all()
    if isinstance(obj, float):
        return not math.isfinite(obj)
    if isinstance(obj, dict):
        return any(_has_non_finite(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_has_non_finite(v) for v in obj)
    return False


def encode(result: dict, *, allow_nan: bool = False) -> str:
    """Strict JSON (non-finite numbers as null) unless ``allow_nan``, which writes the
    NaN/Infinity/-Infinity tokens MATLAB's jsondecode and Python's json accept."""
    if allow_nan and _has_non_finite(result):
        return json.dumps(_plain(result), allow_nan=True, separators=(",", ":"))
    # orjson writes NaN and +-Infinity as null, which is the strict-JSON contract.
    return orjson.dumps(result, option=orjson.OPT_SERIALIZE_NUMPY).decode()


def to_python(result: dict) -> dict:
    """The result with numpy arrays turned into lists (what ``simulate`` returns)."""
    return _plain(result)
