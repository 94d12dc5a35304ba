"""The manifests' product extensions (``nflow_compat.manifests``): ``paramInfo`` documents
every parameter of every block type with a known unit, a range that agrees with what
``paramTypes`` checks and with the default (and is refused when compiled where it says so),
and a one-line meaning."""
from __future__ import annotations

import math

import pytest

import nflow_compat as nc
from nflow_compat.manifests import COMPILE_CHECKED, UNITS, Range, block_types, libraries, parse_range
from tests.util import blk, diagram, pin

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

# a block on the pins of which every pin of one domain is tied down (the parameter checks
# come before any structural one)
_ANCHORS = {"electrical": ("Ground", "p"), "thermal": ("FixedTemperature", "port"),
            "translational": ("Fixed", "flange"), "rotational": ("RotFixed", "flange"),
            "planar": ("PlanarFixed", "frame")}
COMPILE_CHECKED_PARAMS = [(t, name) for t, name in DOCUMENTED
                          if TYPES[t].params[name].range.endswith(COMPILE_CHECKED)]


def _outside(text: str):
    """A value just outside a stated range."""
    stated = parse_range(text)
    if stated.choices is not None:
        return "none of " + "/".join(stated.choices)
    if stated.lower is not None:
        return stated.lower if stated.lower_strict else stated.lower - 1.0
    if stated.upper is not None:
        return stated.upper if stated.upper_strict else stated.upper + 1.0
    assert text.startswith("not 0"), text
    return 0.0


def _lone_physical(block_type: str, params: dict) -> dict:
    bt = TYPES[block_type]
    domains = sorted(set(bt.pins.values()))
    blocks = [blk(f"anchor_{d}", _ANCHORS[d][0]) for d in domains] + [blk("X", block_type, params)]
    if "planar" in domains:
        blocks.append(blk("world", "PlanarWorld"))
    conns = [pin("X", p, f"anchor_{d}", _ANCHORS[d][1]) for p, d in bt.pins.items()]
    return diagram(blocks, conns)


@pytest.mark.parametrize("block_type, name", COMPILE_CHECKED_PARAMS)
def test_a_range_checked_when_compiled_is_refused_there(block_type, name):
    spec = TYPES[block_type].params[name]
    assert TYPES[block_type].acausal, "the harness ties down physical pins"
    value = _outside(spec.range)
    with pytest.raises(nc.DiagramError) as err:
        nc.compile_plan(_lone_physical(block_type, {name: value}))
    assert (err.value.block, err.value.param) == ("X", name), err.value
