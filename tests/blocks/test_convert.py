"""convert (nflow's routing/convert.cpp): OutDataType, Rounding, SaturateOnOverflow, and the
exact int64 / uint64 lane (Python ints / int64, uint64 arrays, recorded as JSON integers)."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc
from nflow_compat.errors import DiagramError
from nflow_compat.signals import INTEGER_RANGES, cast

from tests.util import blk, diagram, record, wire

NAN, INF = math.nan, math.inf
SMALL_INTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32")


def converted(value, duration=0.1, **params) -> list:
    """Row at t = 0 recorded from convert(constant ``value``) (a list: one per element)."""
    d = diagram([blk("c", "constant", Value=value), blk("b", "convert", **params), record()],
                [wire("c", "b"), wire("b", "w")], duration=duration)
    return nc.simulate(d)["workspace"]["y"][0]


def converted_json(value, **params) -> str:
    d = diagram([blk("c", "constant", Value=value), blk("b", "convert", **params), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.1)
    return nc.simulate_json(orjson.dumps(d))


# ----------------------------------------------------------------------------- float types

def test_double_is_the_identity():
    assert converted([0.1, -2.5, 1e300]) == [0.1, -2.5, 1e300]
    assert converted(0.1) == [0.1]


def test_single_rounds_to_float32():
    assert converted([0.1, 1e39, -1e39], OutDataType="single") == [float(np.float32(0.1)), INF, -INF]
    assert converted(1 / 3, OutDataType="single") == [float(np.float32(1 / 3))]


def test_boolean_is_nonzero():
    assert converted([0.0, -0.0, 0.1, -3.0, "nan"], OutDataType="boolean") == [0.0, 0.0, 1.0, 1.0, 1.0]


# ----------------------------------------------------------------------------- rounding

HALVES = [2.5, -2.5, 0.5, -0.5, 2.7, -2.7, 0.49999999999999994]


@pytest.mark.parametrize("rounding, expect", [
    ("nearest", [3, -3, 1, -1, 3, -3, 0]),          # half away from zero (std::round)
    ("floor", [2, -3, 0, -1, 2, -3, 0]),
    ("ceiling", [3, -2, 1, 0, 3, -2, 1]),
    ("ceil", [3, -2, 1, 0, 3, -2, 1]),
    ("zero", [2, -2, 0, 0, 2, -2, 0]),
    ("fix", [2, -2, 0, 0, 2, -2, 0]),
])
def test_rounding_modes(rounding, expect):
    assert converted(HALVES, OutDataType="int16", Rounding=rounding) == expect


def test_rounding_is_the_default_nearest_and_unknown_names_warn():
    assert converted(HALVES, OutDataType="int16") == [3, -3, 1, -1, 3, -3, 0]
    d = diagram([blk("c", "constant", Value=-2.5), blk("b", "convert", OutDataType="int8", Rounding="Floor"),
                 record()], [wire("c", "b"), wire("b", "w")], duration=0.1)
    res = nc.simulate(d)
    assert res["workspace"]["y"][0] == [-3.0]          # nflow compares exactly: 'Floor' is nearest
    assert any("Rounding 'Floor'" in w for w in res["warnings"])


def test_rounding_does_not_apply_to_float_types():
    assert converted(2.5, OutDataType="double", Rounding="floor") == [2.5]
    assert converted(2.5, OutDataType="single", Rounding="floor") == [2.5]


# ----------------------------------------------------------------------------- saturate / wrap

@pytest.mark.parametrize("dtype, values, saturated, wrapped", [
    ("int8", [300, -129, 128, -300], [127, -128, 127, -128], [44, 127, -128, -44]),
    ("uint8", [-1, 256, 511.6], [0, 255, 255], [255, 0, 0]),
    ("int16", [40000, -40000], [32767, -32768], [-25536, 25536]),
    ("uint16", [-1, 70000], [0, 65535], [65535, 4464]),
    ("int32", [1e10, 2**31], [2**31 - 1, 2**31 - 1], [1410065408, -2**31]),
    ("uint32", [-1, 2**32 + 5], [0, 2**32 - 1], [2**32 - 1, 5]),
])
def test_saturate_or_wrap(dtype, values, saturated, wrapped):
    assert converted(values, OutDataType=dtype) == saturated
    assert converted(values, OutDataType=dtype, SaturateOnOverflow=True) == saturated
    assert converted(values, OutDataType=dtype, SaturateOnOverflow=False) == wrapped


@pytest.mark.parametrize("saturate", [True, False])
def test_non_finite_to_integers(saturate):
    assert converted(["nan", "inf", "-inf"], OutDataType="int8", SaturateOnOverflow=saturate) == [0, 127, -128]
    assert converted(["nan", "inf", "-inf"], OutDataType="uint64", SaturateOnOverflow=saturate) == \
        [0, 2**64 - 1, 0]


def test_in_range_values_are_only_rounded():
    assert converted([-128, 127, 5.5], OutDataType="int8", SaturateOnOverflow=False) == [-128, 127, 6]


# ----------------------------------------------------------------------------- int64 / uint64 exact lane

def test_int64_bounds_are_exact_integers():
    text = converted_json([1e19, -1e19, 123.5], OutDataType="int64")
    assert '"y":[[9223372036854775807,-9223372036854775808,124],' in text
    assert converted([1e19, -1e19], OutDataType="int64") == [2**63 - 1, -2**63]


def test_uint64_wraps_negatives_exactly():
    text = converted_json([-1, -3, 2.0**64 + 4096], OutDataType="uint64", SaturateOnOverflow=False)
    assert '"y":[[18446744073709551615,18446744073709551613,4096],' in text
    assert converted([-5, 1e20], OutDataType="uint64") == [0, 2**64 - 1]


def test_int64_wrap():
    assert converted([2.0**63, -2.0**63 - 4096, 2.0**64 + 4096], OutDataType="int64",
                     SaturateOnOverflow=False) == [-2**63, 2**63 - 4096, 4096]


def test_scalar_int64_is_recorded_as_integers():
    d = diagram([blk("c", "constant", Value=2.0**62), blk("b", "convert", OutDataType="int64"), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.1)
    y = nc.simulate(d)["workspace"]["y"]
    assert y == [[2**62], [2**62]] and all(isinstance(row[0], int) for row in y)


def test_integer_input_is_brought_into_range_without_rounding():
    # int64 -> uint64: the exact value, clamped or wrapped; uint64 -> int64 likewise
    blocks = [blk("c", "constant", Value=[-1.0, 2.0**62]), blk("a", "convert", OutDataType="int64"),
              blk("b", "convert", OutDataType="uint64", SaturateOnOverflow=False), record()]
    d = diagram(blocks, [wire("c", "a"), wire("a", "b"), wire("b", "w")], duration=0.1)
    assert nc.simulate(d)["workspace"]["y"][0] == [2**64 - 1, 2**62]
    blocks[2] = blk("b", "convert", OutDataType="uint64")
    assert nc.simulate(d)["workspace"]["y"][0] == [0, 2**62]
    blocks = [blk("c", "constant", Value=-1.0), blk("a", "convert", OutDataType="uint64", SaturateOnOverflow=False),
              blk("b", "convert", OutDataType="int64"), record()]
    d = diagram(blocks, [wire("c", "a"), wire("a", "b"), wire("b", "w")], duration=0.1)
    assert nc.simulate(d)["workspace"]["y"][0] == [2**63 - 1]


def test_int64_to_double_and_small_types_go_through_the_double():
    blocks = [blk("c", "constant", Value=-1.0), blk("a", "convert", OutDataType="uint64", SaturateOnOverflow=False),
              blk("b", "convert", OutDataType="double"), record()]
    d = diagram(blocks, [wire("c", "a"), wire("a", "b"), wire("b", "w")], duration=0.1)
    assert nc.simulate(d)["workspace"]["y"][0] == [float(2**64 - 1)]
    blocks[2] = blk("b", "convert", OutDataType="int8")
    assert nc.simulate(d)["workspace"]["y"][0] == [127.0]


def test_exact_integers_survive_routing_blocks():
    blocks = [blk("c", "constant", Value=[-1.0, -2.0]),
              blk("a", "convert", OutDataType="uint64", SaturateOnOverflow=False),
              blk("s", "selector", Indices=2), record()]
    d = diagram(blocks, [wire("c", "a"), wire("a", "s"), wire("s", "w")], duration=0.1)
    assert nc.simulate(d)["workspace"]["y"] == [[2**64 - 2]] * 2


# ----------------------------------------------------------------------------- inputs

def test_complex_input_converts_its_real_part():
    blocks = [blk("r", "constant", Value=[2.6, -1.0]), blk("i", "constant", Value=[9.0, 9.0]),
              blk("z", "realImagToComplex"), blk("b", "convert", OutDataType="int8"), record()]
    d = diagram(blocks, [wire("r", "z", 0, 0), wire("i", "z", 0, 1), wire("z", "b"), wire("b", "w")],
                duration=0.1)
    assert nc.simulate(d)["workspace"]["y"][0] == [3.0, -1.0]
    blocks[3] = blk("b", "convert")
    assert nc.simulate(d)["workspace"]["y"][0] == [2.6, -1.0]


def test_unconnected_input_writes_the_cast_of_zero():
    d = diagram([blk("b", "convert", OutDataType="boolean"), record()], [wire("b", "w")], duration=0.1)
    assert nc.simulate(d)["workspace"]["y"] == [[0.0], [0.0]]
    d = diagram([blk("b", "convert", OutDataType="uint64"), record()], [wire("b", "w")], duration=0.1)
    assert nc.simulate(d)["workspace"]["y"] == [[0], [0]]


def test_follows_a_changing_input():
    d = diagram([blk("r", "ramp", slope=10.0), blk("b", "convert", OutDataType="uint8", Rounding="floor"),
                 record()], [wire("r", "b"), wire("b", "w")], dt=0.05, duration=0.2)
    # 10*t at t = 0, 0.05, ..., 0.2: 0, 0.5, 1.0000000000000002 (10*0.1), 1.5, 2
    assert [row[0] for row in nc.simulate(d)["workspace"]["y"]] == [0, 0, 1, 1, 2]


def test_unknown_out_data_type_is_rejected():
    with pytest.raises(DiagramError) as err:
        converted(1.0, OutDataType="int7")
    assert err.value.code == "param_value" and err.value.param == "OutDataType"


def test_saturate_flag_accepts_matlab_spellings():
    assert converted(300, OutDataType="uint8", SaturateOnOverflow="off") == [44]
    assert converted(300, OutDataType="uint8", SaturateOnOverflow=0) == [44]


# ----------------------------------------------------------------------------- laws (signals.cast)

doubles = st.floats(allow_nan=True, allow_infinity=True, width=64)
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
int_types = st.sampled_from(SMALL_INTS + ("int64", "uint64"))
roundings = st.sampled_from(["nearest", "floor", "ceiling", "zero"])


@settings(max_examples=300)
@given(doubles, int_types, roundings, st.booleans())
def test_result_is_always_in_range(x, dtype, rounding, saturate):
    lo, hi = INTEGER_RANGES[dtype]
    y = cast(x, dtype, rounding, saturate)
    assert lo <= y <= hi
    assert y == int(y)


@settings(max_examples=300)
@given(finite, int_types)
def test_rounding_laws_in_range(x, dtype):
    lo, hi = INTEGER_RANGES[dtype]
    if not lo <= x <= hi or x != x:
        return
    down, up = cast(x, dtype, "floor"), cast(x, dtype, "ceiling")
    toward, near = cast(x, dtype, "zero"), cast(x, dtype, "nearest")
    assert down <= x <= up and up - down in (0, 1)
    assert abs(toward) <= abs(x) and (toward == 0 or (toward > 0) == (x > 0))
    assert toward in (down, up) and near in (down, up)
    assert abs(near - x) <= 0.5
    if abs(near - x) == 0.5:
        assert abs(near) > abs(x)                     # a half goes away from zero


def exact_whole(x: float, rounding: str) -> int:
    """The rounded value of a finite double, computed on exact fractions."""
    f = Fraction(x)
    if rounding == "floor":
        return math.floor(f)
    if rounding == "ceiling":
        return math.ceil(f)
    if rounding == "zero":
        return math.trunc(f)
    return int(math.copysign(math.floor(abs(f) + Fraction(1, 2)), x))   # half away from zero


@settings(max_examples=300)
@given(finite, int_types, roundings)
def test_saturation_clamps_the_rounded_value(x, dtype, rounding):
    lo, hi = INTEGER_RANGES[dtype]
    assert cast(x, dtype, rounding, True) == min(max(exact_whole(x, rounding), lo), hi)


@settings(max_examples=300)
@given(finite, int_types, roundings)
def test_wrap_is_the_modular_law(x, dtype, rounding):
    lo, hi = INTEGER_RANGES[dtype]
    y = cast(x, dtype, rounding, False)
    assert lo <= y <= hi
    assert (int(y) - exact_whole(x, rounding)) % (hi - lo + 1) == 0


@settings(max_examples=100)
@given(st.lists(finite, min_size=2, max_size=5), int_types, roundings, st.booleans())
def test_vector_cast_is_the_element_wise_cast(xs, dtype, rounding, saturate):
    vec = cast(np.array(xs), dtype, rounding, saturate)
    assert [int(v) for v in vec.tolist()] == [int(cast(x, dtype, rounding, saturate)) for x in xs]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=3), st.sampled_from(SMALL_INTS),
       roundings, st.booleans())
def test_block_matches_the_cast(xs, dtype, rounding, saturate):
    got = converted(xs if len(xs) > 1 else xs[0], OutDataType=dtype, Rounding=rounding,
                    SaturateOnOverflow=saturate)
    assert got == [cast(x, dtype, rounding, saturate) for x in xs]
