"""Signal data types: nflow's quantizeToType (round half away from zero, saturate)."""
from __future__ import annotations

import math

import numpy as np

# name -> (low, high) for the integer types; None for the floating types.
INTEGER_RANGES = {
    "int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535),
    "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1),
    "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1),
}
TYPES = ("double", "single", "boolean", *INTEGER_RANGES)


_WHOLE = 2.0 ** 52  # from here on every double is already a whole number


def round_half_away(x):
    """C++ std::round, exactly: nearest whole number, halves away from zero, sign kept
    (-0.3 -> -0.0); NaN and infinities pass through. (floor(|x| + 0.5) is wrong for
    0.49999999999999994 and for odd numbers just above 2**52.)"""
    if isinstance(x, float):
        a = abs(x)
        if not a < _WHOLE:
            return x
        r = float(math.floor(a))
        if a - r >= 0.5:        # exact below 2**52
            r += 1.0
        return math.copysign(r, x)
    a = np.abs(x)
    r = np.floor(a)
    r = np.where(a - r >= 0.5, r + 1.0, r)   # inf - inf is NaN: the comparison leaves inf alone
    return np.copysign(r, x)


def quantize(value, type_name: str):
    """Cast a float (or float array) to ``type_name``'s value set, kept as float."""
    if type_name == "double":
        return value
    if type_name == "single":
        return float(np.float32(value)) if isinstance(value, float) else value.astype(np.float32).astype(float)
    if type_name == "boolean":
        return float(value != 0.0) if isinstance(value, float) else (value != 0.0).astype(float)
    lo, hi = INTEGER_RANGES[type_name]
    arr = np.nan_to_num(round_half_away(np.asarray(value, dtype=float)), nan=0.0)
    arr = np.clip(arr, float(lo), float(hi))
    return float(arr) if arr.ndim == 0 else arr
