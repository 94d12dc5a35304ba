"""The manifests' product extensions (``nflow_compat.manifests``): ``paramInfo`` documents
every parameter of every block type with a known unit, a range that agrees with what
``paramTypes`` checks and with the default (and is refused when compiled where it says so),
and a one-line meaning; ``outputUnits`` names the physical unit of each output port of the
blocks whose outputs have one (keys of ``UNITS`` too)."""
from __future__ import annotations

import math

import pytest

import nflow_compat as nc
from nflow_compat.manifests import COMPILE_CHECKED, UNITS, Range, block_types, libraries, parse_range
import nflow_compat.blocks.handlers  # noqa: F401  (registers every handler)
from nflow_compat.blocks import REGISTRY
from tests.lone_blocks import lone

TYPES = block_types()
DOCUMENTED = [(t, name) for t, bt in TYPES.items() for name in bt.params if bt.params[name].unit is not None]


def test_ranges_are_read_as_bounds_choices_or_words():
    assert parse_range("> 0") == Range(lower=0.0, lower_strict=True)
    assert parse_range(">= 1; whole") == Range(lower=1.0)
    assert parse_range("<= 0") == Range(upper=0.0)
    assert parse_range("(0, 100]") == Range(lower=0.0, lower_strict=True, upper=100.0)
    assert parse_range("[-inf, 2)") == Range(upper=2.0, upper_strict=True)
    assert parse_range("one of 'a', 'b c'; case-sensitive") == Range(choices=("a", "b c"))
    assert parse_range("strictly increasing") == parse_range("") == Range()
    assert parse_range(">= 0x") == Range()      # a bound is a number and then the end or "; "


def test_every_param_of_every_block_type_is_documented():
    missing = [f"{t}.{name}" for t, bt in TYPES.items() for name, spec in bt.params.items() if spec.unit is None]
    assert not missing, "paramInfo lacks " + ", ".join(missing)
    assert len(DOCUMENTED) == sum(len(bt.params) for bt in TYPES.values())


def test_param_info_sits_after_default_params_and_names_only_params():
    for folder, manifest in libraries().items():
        for entry in manifest["blocks"]:
            if "paramInfo" not in entry:
                continue
            keys = list(entry)
            assert keys[keys.index("defaultParams") + 1] == "paramInfo", entry["type"]
            stray = set(entry["paramInfo"]) - set(TYPES[entry["type"]].params)
            assert not stray, (entry["type"], stray)
            for name, info in entry["paramInfo"].items():
                assert set(info) <= {"unit", "range", "meaning"} and "unit" in info and "meaning" in info, \
                    (entry["type"], name)


@pytest.mark.parametrize("block_type, name", DOCUMENTED)
def test_param_info_is_well_formed(block_type, name):
    spec = TYPES[block_type].params[name]
    units = spec.unit if isinstance(spec.unit, tuple) else (spec.unit,)
    assert all(u in UNITS for u in units), f"{block_type}.{name}: unknown unit {spec.unit!r}"
    assert spec.meaning and "\n" not in spec.meaning and len(spec.meaning) <= 120, (block_type, name)
    assert spec.range == spec.range.strip() and "\n" not in spec.range


@pytest.mark.parametrize("block_type, name", DOCUMENTED)
def test_stated_range_is_the_checked_one(block_type, name):
    spec = TYPES[block_type].params[name]
    stated = parse_range(spec.range)
    where = f"{block_type}.{name}: range {spec.range!r}"
    if spec.minimum is not None:
        assert (stated.lower, stated.lower_strict) == (spec.minimum, False), where + f" but checked >= {spec.minimum}"
    if spec.exclusive_minimum is not None:
        assert (stated.lower, stated.lower_strict) == (spec.exclusive_minimum, True), \
            where + f" but checked > {spec.exclusive_minimum}"
    if spec.enum is not None:
        assert stated.choices == tuple(map(str, spec.enum)), where + f" but checked one of {list(spec.enum)}"


def _numbers(value):
    """The reals of a default (a number, a numeric string, a list of them), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, str):
        try:
            return [float(value)]
        except ValueError:
            return None
    if isinstance(value, list) and value and all(_numbers(v) is not None for v in value):
        return [x for v in value for x in _numbers(v)]
    return None


@pytest.mark.parametrize("block_type, name", DOCUMENTED)
def test_the_default_is_in_the_stated_range(block_type, name):
    spec = TYPES[block_type].params[name]
    stated = parse_range(spec.range)
    if stated.choices is not None:
        assert str(spec.default) in stated.choices, (block_type, name, spec.default)
    values = _numbers(spec.default)
    if values is None:
        return
    for x in values:
        if stated.lower is not None:
            assert x > stated.lower if stated.lower_strict else x >= stated.lower, (block_type, name, x)
        if stated.upper is not None:
            assert x < stated.upper if stated.upper_strict else x <= stated.upper, (block_type, name, x)
        assert not math.isnan(x)


# ----------------------------------------------------------------------------- checked when compiled

COMPILE_CHECKED_PARAMS = [(t, name) for t, name in DOCUMENTED
                          if TYPES[t].params[name].range.endswith(COMPILE_CHECKED)]

# a value outside a range stated in words (bounds and choices give their own)
_OUTSIDE_WORDS = {
    ("tf", "Denominator"): [0, 0],
    ("constraint", "InitialCondition"): float("inf"),
    ("lookup1D", "BreakpointsForDimension1"): [1, 0], ("lookup1D", "Table"): [1],
    ("lookup2D", "BreakpointsForDimension1"): [1, 1, 3], ("lookup2D", "BreakpointsForDimension2"): [3],
    ("lookup2D", "Table"): [1, 2],
    ("lookupND", "BreakpointsForDimension1"): [2, 1, 3], ("lookupND", "BreakpointsForDimension2"): [1],
    ("lookupND", "Table"): [1, 2],
    ("directLookup", "TableDimensions"): [6], ("directLookup", "Table"): [0, 1],
    ("prelookup", "BreakpointsForDimension1"): [0], ("interpolationPrelookup", "Table"): [],
    ("busSelector", "SelectedSignals"): [], ("busCreator", "BusType"): "Named",
    ("expression", "Expr"): "u +",
    ("PlanarPrismatic", "dx"): 0, ("PlanarRollingWheel", "dx"): 0,
    ("MassWithStopAndFriction", "smax"): -1.0,
}


def _outside(block_type: str, name: str):
    """A value just outside the stated range."""
    if (block_type, name) in _OUTSIDE_WORDS:
        return _OUTSIDE_WORDS[block_type, name]
    text = TYPES[block_type].params[name].range
    stated = parse_range(text)
    if stated.choices is not None:
        return "none of " + "/".join(stated.choices)
    if stated.lower is not None:
        return stated.lower if stated.lower_strict else stated.lower - 1.0
    if stated.upper is not None:
        return stated.upper if stated.upper_strict else stated.upper + 1.0
    assert text.startswith("not 0"), text
    return 0.0


@pytest.mark.parametrize("block_type, name", COMPILE_CHECKED_PARAMS)
def test_a_range_checked_when_compiled_is_refused_there(block_type, name):
    solver = REGISTRY[block_type].solvers[0] if block_type in REGISTRY else "discrete"
    with pytest.raises(nc.DiagramError) as err:
        nc.compile_plan(lone(block_type, {name: _outside(block_type, name)}, solver=solver))
    assert (err.value.block, err.value.param) == ("X", name), err.value


def test_every_range_stated_in_words_and_checked_has_a_value_outside_it():
    for block_type, name in COMPILE_CHECKED_PARAMS:
        stated = parse_range(TYPES[block_type].params[name].range)
        if stated == Range() and not TYPES[block_type].params[name].range.startswith("not 0"):
            assert (block_type, name) in _OUTSIDE_WORDS, (block_type, name)


# ----------------------------------------------------------------------------- outputUnits

def test_every_acausal_sensor_with_a_fixed_quantity_names_its_unit():
    types = block_types()
    sensors = [t for t in types.values() if t.acausal and t.outputs]
    named = {t.type for t in sensors if t.output_units}
    # the planar position / velocity / acceleration sensors output the quantity their 'axis' picks (m or rad)
    assert {t.type for t in sensors} - named == {"PlanarPositionSensor", "PlanarVelocitySensor",
                                                "PlanarAccelerationSensor", "PlanarRelPositionSensor"}
    for t in sensors:
        if t.output_units:
            assert len(t.output_units) == t.outputs and set(t.output_units) <= set(UNITS), t.type
    assert (types["SpeedSensor"].output_unit(0), types["RotSpeedSensor"].output_unit(0),
            types["CurrentSensor"].output_unit(0), types["TemperatureSensor"].output_unit(0)) == ("m/s", "rad/s", "A", "K")
    assert types["gain"].output_unit(0) == "" and types["SpeedSensor"].output_unit(3) == ""


def test_output_units_follow_the_outputs_key_in_the_entries():
    for manifest in libraries().values():
        for entry in manifest["blocks"]:
            if "outputUnits" in entry:
                keys = list(entry)
                assert keys[keys.index("outputs") + 1] == "outputUnits", entry["type"]
