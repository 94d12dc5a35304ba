"""What recorders keep (``Recording``), laid out as nflow's toWorkspace SaveFormats, and
results written as JSON a piece at a time (``write_json``)."""
from __future__ import annotations

import io
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


def recorded_matrix(samples: list, width: int, dtype=None) -> np.ndarray:
    """N x W from the samples a recorder kept (floats or arrays of one signal), typed by
    what was recorded: float64; complex128 when any sample is complex (the others have
    imaginary part 0); int64 / uint64 when every sample is an exact 64-bit integer
    (nflow's int64 / uint64 lane, whose values doubles cannot all hold). ``dtype`` forces
    one (scopes record doubles)."""
    n = len(samples)
    if not n:
        return np.zeros((0, width))
    first = samples[0]
    if dtype is not None:
        arr = np.array(samples, dtype=dtype)
    elif first.__class__ is float:        # the common case: a real scalar signal
        try:
            arr = np.array(samples, dtype=float)
        except TypeError:                 # a complex sample (float() refuses it)
            arr = _inferred(samples)
    else:
        arr = _inferred(samples)
    return np.ascontiguousarray(arr.reshape(n, -1)[:, :width])


_I64 = (-2**63, 2**63 - 1)
_U64 = (0, 2**64 - 1)


def _exact_lane(lo: int, hi: int):
    """int64 / uint64 for integers from ``lo`` to ``hi`` (int64 first), else float."""
    for (a, b), dtype in ((_I64, np.int64), (_U64, np.uint64)):
        if a <= lo and hi <= b:
            return dtype
    return float


def _inferred(samples: list) -> np.ndarray:
    if all(s.__class__ is int for s in samples):       # exact integers (int64 / uint64 casts)
        return np.array(samples, dtype=_exact_lane(min(samples), max(samples)))
    arr = np.array(samples)
    kind = arr.dtype.kind
    if kind in "fciu":
        return arr
    try:                                               # bools, mixed objects
        return np.array(samples, dtype=float)
    except TypeError:
        return np.array(samples, dtype=complex)


# Elements a recorder holds as Python objects before moving them into its array: a few
# hundred kilobytes, so the step loop only appends to lists.
FLUSH_ELEMENTS = 65_536


class Recording:
    """What one recorder keeps over a run: its sample times and an N x ``width`` matrix,
    in numpy arrays of ``rows`` rows asked for at ``start()`` (before the run: a run that
    cannot have the memory fails at once), ``rows`` being ``capacity`` (the samples the
    run can record) or, with a ``window`` (MaxDataPoints), the last ``window`` of them.
    ``size`` is what counts against ``Limits.max_recorded_values``.

    Per sample the recorder (``sampler``) only appends to the lists ``times`` and
    ``values`` (a float or an array of the signal, which is replaced, never mutated: no
    copy) and calls ``flush()`` once ``len(values) >= flush_at``; a flush moves them into
    the arrays. The
    matrix has the dtype ``recorded_matrix`` gives all the samples together (or ``dtype``),
    promoted when a later sample needs it. ``arrays()`` hands the arrays over once the run
    is done (the recording keeps no reference to them)."""

    def __init__(self, capacity: int, width: int, window: int | None = None, dtype=None):
        self.rows = max(0, capacity if window is None else min(window, capacity))
        self.width = width
        self.size = self.rows * (width + 1)
        self.dtype = dtype
        self.flush_at = max(1, FLUSH_ELEMENTS // max(1, width))
        self.times, self.values = [], []
        self._t = self._v = None
        self.count = 0     # samples stored in the arrays (more than ``rows`` once a window wraps)

    def start(self) -> None:
        self.times.clear()
        self.values.clear()
        self._t = np.empty(self.rows)
        self._v = np.empty((self.rows, self.width), dtype=self.dtype or float)
        self.count = 0

    def sampler(self, ctx, read):
        """An AFTER_STEP that records ``read()`` at ``ctx.t``."""
        times, values, flush_at, flush = self.times, self.values, self.flush_at, self.flush

        def sample():
            times.append(ctx.t)
            values.append(read())
            if len(values) >= flush_at:
                flush()
        return sample

    def flush(self) -> None:
        if self.values:
            times, values = np.array(self.times, dtype=float), recorded_matrix(self.values, self.width, self.dtype)
            self.times.clear()
            self.values.clear()
            self.extend(times, values)

    def extend(self, times: np.ndarray, values: np.ndarray) -> None:
        """Store ``len(times)`` samples at once (``values``: k x width, any dtype)."""
        self.flush()
        k = len(times)
        if not k or not self.rows:
            self.count += k
            return
        if self.count == 0 or values.dtype != self._v.dtype:
            self._retype(values)
        if k > self.rows:                      # a window: only the last rows stay
            self.count += k - self.rows
            times, values, k = times[-self.rows:], values[-self.rows:], self.rows
        start = self.count % self.rows
        first = min(k, self.rows - start)
        self._t[start:start + first] = times[:first]
        self._v[start:start + first] = values[:first]
        self._t[:k - first] = times[first:]
        self._v[:k - first] = values[first:]
        self.count += k

    def _retype(self, values: np.ndarray) -> None:
        filled = self._v[:min(self.count, self.rows)]
        if not len(filled):
            dtype = values.dtype
        elif self.width == 1 and filled.dtype.kind in "iu" and values.dtype.kind in "iu":
            # exact integers (Python ints of a scalar signal): the lane all of them fit
            dtype = _exact_lane(min(int(filled.min()), int(values.min())), max(int(filled.max()), int(values.max())))
        else:
            dtype = np.result_type(filled.dtype, values.dtype)
        if dtype != self._v.dtype:
            retyped = np.empty(self._v.shape, dtype=dtype)
            retyped[:len(filled)] = filled
            self._v = retyped

    def arrays(self) -> tuple:
        """(times, N x width matrix) of what was recorded, oldest first."""
        self.flush()
        times, values = self._t, self._v
        self._t = self._v = None
        n = min(self.count, self.rows)
        if self.count <= self.rows:
            return times[:n], values[:n]
        start = self.count % self.rows
        return np.concatenate((times[start:], times[:start])), np.concatenate((values[start:], values[:start]))


def _plain(obj):
    """numpy -> lists and floats, recursively; a dict is converted in place (each array
    is dropped from it as soon as its list is made, so the two never all coexist)."""
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, dict):
        for key, value in obj.items():
            obj[key] = _plain(value)
        return obj
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


# Numbers of one array serialized at a time (a block of rows, or a slice of a vector).
PIECE_ELEMENTS = 65_536


def _strict(value) -> bytes:
    # orjson writes NaN and +-Infinity as null, which is the strict-JSON contract
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY)


def _with_nan(value) -> bytes:
    return json.dumps(_plain(value), allow_nan=True, separators=(",", ":")).encode()


def write_json(result: dict, out, *, allow_nan: bool = False) -> None:
    """Write ``result`` as JSON to the binary stream ``out`` (``out.write(bytes)``), a piece
    at a time: an array of more than ``PIECE_ELEMENTS`` numbers goes out a block of rows
    (or elements) at a time, so the text is never held whole. The result is consumed:
    each entry of its dicts is dropped once written, so its memory can go as the text
    goes out. Strict JSON (non-finite numbers as null) unless ``allow_nan``, which writes
    the NaN/Infinity/-Infinity tokens MATLAB's jsondecode and Python's json accept."""
    _write(result, out.write, _with_nan if allow_nan and _has_non_finite(result) else _strict)


def _write(value, write, dumps) -> None:
    if isinstance(value, dict):
        write(b"{")
        for n, key in enumerate(list(value)):
            if n:
                write(b",")
            write(dumps(key))
            write(b":")
            _write(value[key], write, dumps)
            value[key] = None
        write(b"}")
    elif isinstance(value, np.ndarray) and value.size > PIECE_ELEMENTS:
        rows = PIECE_ELEMENTS * len(value) // value.size      # per piece; 0: a row is more than a piece
        write(b"[")
        for n, start in enumerate(range(0, len(value), rows or 1)):
            if n:
                write(b",")
            if rows:
                write(memoryview(dumps(value[start:start + rows]))[1:-1])   # without its brackets, uncopied
            else:
                _write(value[start], write, dumps)
        write(b"]")
    else:
        write(dumps(value))


def encode(result: dict, *, allow_nan: bool = False) -> str:
    """``write_json``'s text as one string (the result is consumed)."""
    text = io.BytesIO()
    write_json(result, text, allow_nan=allow_nan)
    return text.getvalue().decode()


def to_python(result: dict) -> dict:
    """The result with numpy arrays turned into lists (what ``simulate`` returns),
    converted in place."""
    return _plain(result)
