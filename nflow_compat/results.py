"""Lay recorded data out as nflow's toWorkspace SaveFormats, and encode results as JSON."""
from __future__ import annotations

import json
import math

import numpy as np
import orjson

SAVE_FORMATS = ("Structure With Time", "Structure", "Array")


def workspace_value(save_format: str, block_id: str, times: np.ndarray, values: np.ndarray):
    """``values`` is N x W. Array -> the matrix; the structures wrap it like nflow does.
    A complex matrix becomes ``{"real": N x W, "imag": N x W}`` wherever the matrix goes."""
    width = int(values.shape[1])
    values = lanes(values)
    if save_format == "Array":
        return values
    return {"time": times if save_format == "Structure With Time" else [],
            "signals": {"values": values, "dimensions": width, "label": ""},
            "blockName": block_id}


def lanes(values: np.ndarray):
    """A recorded matrix in its JSON form: real (float or exact integer) matrices as they
    are; a complex one as its two lanes ``{"real": ..., "imag": ...}`` (JSON has no
    complex numbers; nflow records complex inputs in a separate imaginary lane)."""
    if values.dtype.kind != "c":
        return values
    return {"real": np.ascontiguousarray(values.real), "imag": np.ascontiguousarray(values.imag)}


def recorded_matrix(samples: list, width: int) -> np.ndarray:
    """N x W from the samples a recorder kept (floats or arrays of one signal), typed by
    what was recorded: float64; complex128 when any sample is complex (the others have
    imaginary part 0); int64 / uint64 when every sample is an exact 64-bit integer
    (nflow's int64 / uint64 lane, whose values doubles cannot all hold)."""
    n = len(samples)
    if not n:
        return np.zeros((0, width))
    first = samples[0]
    if first.__class__ is float:          # the common case: a real scalar signal
        try:
            arr = np.array(samples, dtype=float)
        except TypeError:                 # a complex sample (float() refuses it)
            arr = _inferred(samples)
    else:
        arr = _inferred(samples)
    return np.ascontiguousarray(arr.reshape(n, -1)[:, :width])


_I64 = (-2**63, 2**63 - 1)
_U64 = (0, 2**64 - 1)


def _inferred(samples: list) -> np.ndarray:
    if all(s.__class__ is int for s in samples):       # exact integers (int64 / uint64 casts)
        lo, hi = min(samples), max(samples)
        for (a, b), dtype in ((_I64, np.int64), (_U64, np.uint64)):
            if a <= lo and hi <= b:
                return np.array(samples, dtype=dtype)
        return np.array(samples, dtype=float)
    arr = np.array(samples)
    kind = arr.dtype.kind
    if kind in "fciu":
        return arr
    try:                                               # bools, mixed objects
        return np.array(samples, dtype=float)
    except TypeError:
        return np.array(samples, dtype=complex)


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
