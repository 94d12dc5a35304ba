"""The recorders' storage (results.Recording) and the piecewise JSON writer
(results.write_json): the same values, dtypes and bytes as converting everything at once."""
import io
import json
import math
from unittest.mock import patch

import numpy as np
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from nflow_compat import results

FAST = settings(max_examples=60, deadline=None)


class _Clock:
    t = 0.0


def _record(samples, width, window=None, flush_at=3, dtype=None):
    """Feed ``samples`` through a Recording's sampler (flushing every ``flush_at``); its arrays."""
    rec = results.Recording(len(samples), width, window, dtype)
    rec.flush_at = flush_at
    clock, feed = _Clock(), iter(samples)
    rec.start()
    sample = rec.sampler(clock, lambda: next(feed))
    for k in range(len(samples)):
        clock.t = 0.5 * k
        sample()
    return rec.arrays()


# a scalar signal's samples: doubles, exact integers of the int64 / uint64 lanes, complex
_SCALAR = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**63, 2**64 - 1),
                    st.integers(0, 10), st.complex_numbers(allow_nan=False, max_magnitude=1e6))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@FAST
@given(kinds=st.lists(st.sampled_from(["float", "int", "big", "neg", "complex"]), min_size=1, max_size=4),
       n=st.integers(0, 25), flush_at=st.integers(1, 7), data=st.data())
def test_scalar_recording_types_like_one_conversion_of_all_samples(kinds, n, flush_at, data):
    # runs of one kind each, so the kind changes between (and inside) flushed chunks
    make = {"float": st.floats(allow_nan=False, width=64), "int": st.integers(-5, 5),
            "big": st.integers(2**63, 2**64 - 1), "neg": st.integers(-2**63, -1),
            "complex": st.complex_numbers(allow_nan=False, max_magnitude=1e6)}
    samples = [data.draw(make[kinds[k * len(kinds) // max(n, 1)]]) for k in range(n)]
    times, values = _record(samples, 1, flush_at=flush_at)
    assert _same(values, results.recorded_matrix(samples, 1))
    assert times.tolist() == [0.5 * k for k in range(n)]


@FAST
@given(samples=st.lists(_SCALAR, max_size=30), window=st.integers(1, 12), flush_at=st.integers(1, 7))
def test_a_window_keeps_the_last_samples_in_order(samples, window, flush_at):
    times, values = _record(samples, 1, window=window, flush_at=flush_at)
    whole = results.recorded_matrix(samples, 1)      # the dtype of everything recorded
    assert _same(values, np.ascontiguousarray(whole[-window:] if samples else whole))
    assert times.tolist() == [0.5 * k for k in range(len(samples))][-window:]


@FAST
@given(rows=st.lists(st.sampled_from([np.float64, np.int64, np.complex128]), max_size=20), flush_at=st.integers(1, 5))
def test_vector_recording_promotes_like_numpy(rows, flush_at):
    samples = [np.arange(3, dtype=dtype) * (k + 1) for k, dtype in enumerate(rows)]
    _, values = _record(samples, 3, flush_at=flush_at)
    assert _same(values, results.recorded_matrix(samples, 3))


def test_forced_doubles_and_row_lists():
    _, values = _record([[1, 2], [3, 4.5]], 2, dtype=float)
    assert values.dtype == np.float64 and values.tolist() == [[1.0, 2.0], [3.0, 4.5]]


def test_the_size_that_counts_against_the_limit():
    assert results.Recording(10, 3).size == 10 * 4                 # samples x (elements + the time)
    assert results.Recording(10, 3, window=4).size == 4 * 4        # a window keeps 4
    assert results.Recording(10, 3, window=40).size == 10 * 4


# ----------------------------------------------------------------------------- the JSON writer

_ARRAY = st.builds(lambda shape, seed, kind: _array(shape, seed, kind),
                   st.sampled_from([(0,), (5,), (9,), (3, 4), (0, 3), (6, 3), (2, 9), (3, 2, 5)]),
                   st.integers(0, 2**32 - 1), st.sampled_from(["float", "int", "nan"]))


def _array(shape, seed, kind):
    rng = np.random.default_rng(seed)
    if kind == "int":
        return rng.integers(-2**40, 2**40, size=shape)
    values = rng.standard_normal(shape) * 10.0 ** rng.integers(-30, 30, size=shape)
    if kind == "nan" and values.size:
        values.flat[rng.integers(0, values.size, size=3)] = [math.nan, math.inf, -math.inf]
    return values


_RESULT = st.recursive(st.one_of(_ARRAY, st.floats(), st.text(max_size=5), st.none(), st.booleans(),
                                 st.lists(st.floats(), max_size=3)),
                       lambda inner: st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=8)


def _copy(value):
    """A deep copy (write_json consumes what it writes)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value.copy() if isinstance(value, np.ndarray) else value


@FAST
@given(result=st.dictionaries(st.text(max_size=5), _RESULT, max_size=4))
def test_pieces_make_the_bytes_of_one_conversion(result):
    with patch.object(results, "PIECE_ELEMENTS", 7):     # pieces of 7 numbers: every split happens
        _check_pieces(result)


def _check_pieces(result):
    out = io.BytesIO()
    results.write_json(_copy(result), out)
    assert out.getvalue() == orjson.dumps(result, option=orjson.OPT_SERIALIZE_NUMPY)
    with_nan = io.BytesIO()
    results.write_json(_copy(result), with_nan, allow_nan=True)
    plain = results.to_python(_copy(result))
    expect = (json.dumps(plain, allow_nan=True, separators=(",", ":")).encode() if results._has_non_finite(result)
              else orjson.dumps(result, option=orjson.OPT_SERIALIZE_NUMPY))
    assert with_nan.getvalue() == expect


def test_the_writer_releases_what_it_wrote():
    result = {"workspace": {"y": np.zeros((100_000, 2))}, "time": np.arange(100_000.0)}
    results.write_json(result, io.BytesIO())
    assert result == {"workspace": None, "time": None}
