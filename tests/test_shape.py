"""The JSON Schemas (docs/CONTRACT.md §6, ``nflow_compat.shape``): valid draft 2020-12, they
accept what ``nflow_compat.validate`` accepts and reject what it rejects (up to what a
schema cannot know: the value an expression evaluates to, ragged arrays, references), and
the run-time check against them keeps the codes and pointers of parse. The checked-in
files are tested in tests/test_schema.py."""
from __future__ import annotations

import copy
import functools
import re
import string
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import nflow_compat as nc
from nflow_compat import schema, shape
from nflow_compat.normalize import normalize_param
from nflow_compat.errors import DiagramError, SimulationError
from nflow_compat.expr import MAX_LENGTH, evaluate
from nflow_compat.manifests import BlockType, ParamSpec, block_types
from tests.goldens import fixture_paths, load
from tests.util import blk, diagram, record, wire

REPO = Path(__file__).resolve().parent.parent
SCHEMAS = REPO / "schemas"
EXAMPLES = REPO / "fixtures" / "reference" / "nflow" / "examples.json"


@functools.lru_cache(maxsize=1)
def diagram_validator() -> Draft202012Validator:
    doc = orjson.loads((SCHEMAS / schema.DIAGRAM_FILE).read_bytes())
    return Draft202012Validator(doc)


def schema_errors(d) -> list:
    return sorted(diagram_validator().iter_errors(d), key=lambda e: list(e.absolute_path))


def validate_error(d) -> DiagramError | None:
    try:
        nc.validate(d)
    except DiagramError as err:
        return err
    return None


# ----------------------------------------------------------------------------- the schemas

def test_every_schema_is_a_valid_draft_2020_12_schema():
    Draft202012Validator.check_schema(shape.diagram_schema())
    for name in block_types():
        doc = shape.params_schema_for(name)
        assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        Draft202012Validator.check_schema(doc)


def test_every_manifest_constraint_is_expressible():
    assert shape.unsupported_constraints() == []


def test_unknown_type_is_a_diagram_error_with_a_suggestion():
    with pytest.raises(DiagramError) as err:
        shape.params_schema_for("gian")
    assert err.value.code == "unknown_block_type" and "'gain'" in err.value.message


# ----------------------------------------------------------------------------- documented diagrams

@pytest.mark.parametrize("path", fixture_paths(), ids=lambda p: str(p.relative_to(REPO)))
def test_fixture_diagrams_validate(path):
    errors = schema_errors(load(path)["diagram"])
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]


def _examples() -> list:
    return orjson.loads(EXAMPLES.read_bytes())


@pytest.mark.parametrize("example", _examples(), ids=lambda e: e.get("block", "?"))
def test_documented_examples_validate(example):
    errors = schema_errors(example["diagram"])
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]


# ----------------------------------------------------------------------------- consistency

BASE = diagram([blk("c", "constant", Value=2), blk("g", "gain", Gain=3), record()],
               [wire("c", "g"), wire("g", "w")], duration=0.2)


def with_block(block: dict) -> dict:
    d = copy.deepcopy(BASE)
    d["blocks"].append(block)
    return d


def with_params(index: int, **params) -> dict:
    d = copy.deepcopy(BASE)
    d["blocks"][index]["params"].update(params)
    return d


def test_base_diagram_is_valid_for_both():
    assert schema_errors(BASE) == [] and validate_error(BASE) is None


PARAM_CASES = {
    "string for a boolean": (with_block(blk("k", "clock", DisplayTime="true?")), ["blocks", 3, "params"],
                             "DisplayTime"),
    "strings for a number": (with_params(1, Gain=["a", "b"]), ["blocks", 1, "params"], "Gain"),
    "vector for a number": (with_params(1, Gain=[1, 2]), ["blocks", 1, "params"], "Gain"),
    "object for a number": (with_params(1, Gain={"value": 1}), ["blocks", 1, "params"], "Gain"),
    "null (NaN) for a positive number": (with_block(blk("m", "Mass", m=None)), ["blocks", 3, "params"], "m"),
    "not an expression": (with_params(1, Gain="2 # two"), ["blocks", 1, "params"], "Gain"),
    "empty expression": (with_params(1, Gain="  "), ["blocks", 1, "params"], "Gain"),
    "enum violation": (with_params(2, SaveFormat="Matrix"), ["blocks", 2, "params"], "SaveFormat"),
    "enum inside a cell": (with_params(2, SaveFormat=["Matrix"]), ["blocks", 2, "params"], "SaveFormat"),
    "number for a string": (with_params(2, VariableName=5), ["blocks", 2, "params"], "VariableName"),
    "two strings for a string": (with_params(2, VariableName=["a", "b"]), ["blocks", 2, "params"],
                                 "VariableName"),
    "enum of the constant's type": (with_params(0, OutDataType="float"), ["blocks", 0, "params"], "OutDataType"),
    "negative mass": (with_block(blk("m", "Mass", m=-1)), ["blocks", 3, "params"], "m"),
    "zero mass": (with_block(blk("m", "Mass", m=[0])), ["blocks", 3, "params"], "m"),
    "false as a mass": (with_block(blk("m", "Mass", m=False)), ["blocks", 3, "params"], "m"),
    "negative inertia": (with_block(blk("j", "Inertia", J=-0.5)), ["blocks", 3, "params"], "J"),
    "matrix for a vector": (with_block(blk("t", "tf", Numerator=[[1, 2], [3, 4]])), ["blocks", 3, "params"],
                            "Numerator"),
    "number beside an array in a vector": (with_block(blk("t", "tf", Numerator=[1, [2, 3]])), ["blocks", 3, "params"],
                                 "Numerator"),
    "object for a vector": (with_block(blk("t", "tf", Denominator={"a": 1})), ["blocks", 3, "params"],
                             "Denominator"),
}


@pytest.mark.parametrize("case", list(PARAM_CASES))
def test_invalid_params_are_rejected_by_schema_and_validate(case):
    d, where, param = PARAM_CASES[case]
    errors = schema_errors(d)
    assert errors, "the schema accepted it"
    assert list(errors[0].absolute_path)[:4] == where + [param], [list(e.absolute_path) for e in errors]
    err = validate_error(d)
    assert err is not None, "validate accepted it"
    assert err.param == param and err.code in ("param_type", "param_value", "param_range", "bad_expression")


def _physical(**conn) -> dict:
    d = copy.deepcopy(BASE)
    d["blocks"] += [blk("m", "Mass"), blk("j", "Inertia")]
    d["connections"].append(dict({"from": "m", "to": "j"}, **conn))
    return d


DIAGRAM_CASES = {
    "negative sampleTime": dict(BASE, sampleTime=-0.1),
    "zero duration": dict(BASE, duration=[0]),
    "false duration": dict(BASE, duration=False),
    "missing duration": {k: v for k, v in BASE.items() if k != "duration"},
    "unknown solver": dict(BASE, solver="rk4"),
    "two solvers": dict(BASE, solver=["ode45", "dae"]),
    "solver in a nested cell": dict(BASE, solver=[["ode45"]]),
    "connections as a non-empty object without to": dict(BASE, connections={"from": "c"}),
    "named fromPin, unset toPin": _physical(fromPin="flange", toPin=[]),
    "pin is a number on a signal wire": dict(BASE, connections=[dict(wire("c", "g"), fromPin=5)]),
    "blocks is a number": dict(BASE, blocks=3),
    "block is not an object": dict(BASE, blocks=[*BASE["blocks"], "x"]),
    "unknown block type": with_block(blk("x", "gian")),
    "missing block type": with_block({"id": "x"}),
    "missing block id": with_block({"type": "gain"}),
    "empty block id": with_block({"id": "", "type": "gain"}),
    "boolean block id": with_block({"id": True, "type": "gain"}),
    "negative port count": with_block(blk("x", "gain", inputs=-1)),
    "fractional port count": with_block(blk("x", "gain", outputs=1.5)),
    "too many ports": with_block(blk("x", "gain", outputs=10_001)),
    "params is a list": with_block(dict(blk("x", "gain"), params=[1])),
    "params is a string": with_block(dict(blk("x", "gain"), params="Gain=2")),
    "connection without to": dict(BASE, connections=[{"from": "c", "fromIndex": 0}]),
    "connection is a string": dict(BASE, connections="c->g"),
    "negative port index": dict(BASE, connections=[wire("c", "g", to_index=-1)]),
    "physical connection without toPin": _physical(fromPin="flange"),
    "physical pin is a number": _physical(fromPin="flange", toPin=0),
    "variables is a list": dict(BASE, variables=[1, 2]),
    "variable name is not an identifier": dict(BASE, variables={"2k": 1}),
    "variable value is an object": dict(BASE, variables={"k": {"a": 1}}),
    "relTol is zero": dict(BASE, relTol=0),
}


@pytest.mark.parametrize("case", list(DIAGRAM_CASES))
def test_invalid_diagrams_are_rejected_by_schema_and_validate(case):
    d = DIAGRAM_CASES[case]
    assert schema_errors(d), "the schema accepted it"
    assert validate_error(d) is not None, "validate accepted it"


VALID_ENCODINGS = {
    "single block and connection as objects": dict(BASE, blocks=blk("g", "gain"), connections=wire("g", "g")),
    "numbers as strings": with_params(2, MaxDataPoints="inf", SampleTime="-1"),
    "expression over variables": dict(with_params(1, Gain="k*2"), variables={"k": 1.5}),
    "one-element arrays": dict(with_params(1, Gain=[[3]]), sampleTime=[0.1], duration="0.2"),
    "cell of one string": with_params(2, VariableName=["y"], SaveFormat=["Array"]),
    "column vector": with_block(blk("t", "tf", Numerator=[[1], [2]], Denominator=[[1, 2, 3]])),
    "MATLAB vector text": with_block(blk("t", "tf", Denominator="[1 2 3]")),
    "boolean words and numbers": with_block(blk("k", "clock", DisplayTime="on", Decimation=True)),
    "NaN in a numeric array": with_params(0, Value=[1, None]),
    "empty params encodings": dict(BASE, blocks=[dict(BASE["blocks"][0], params=[]),
                                                 dict(BASE["blocks"][1], params=None), BASE["blocks"][2]]),
    "numeric ids and null ports": dict(BASE, blocks=[dict(blk(1, "constant"), outputs=None), blk(2, "gain"),
                                                 record()],
                                       connections=[wire(1, 2, from_index=None), wire(2, "w", to_index="0")]),
    "unknown params and extra keys": dict(with_params(1, Color="red", x=10), layout={"zoom": 1}),
    "physical connection": _physical(fromPin="flange", toPin="flange_x", fromIndex="ignored"),
    "null tolerances": dict(BASE, relTol=None, absTol="1e-9", maxStep=[0.01]),
    # what jsonencode writes for Nelson values (NaN and Inf as null; struct arrays; cells; struct())
    "null for a number (NaN)": with_params(1, Gain=None),
    "null saturation limit": with_block(blk("s", "saturation", UpperLimit=None, LowerLimit=-1)),
    "struct array fields left unset": dict(BASE, blocks=[dict(b, inputs=[], outputs=[]) for b in BASE["blocks"]],
                                           connections=[dict(c, fromPin=[], toPin="") for c in BASE["connections"]]),
    "null pins on signal wires": dict(BASE, connections=[dict(c, fromPin=None, toPin=None)
                                                         for c in BASE["connections"]]),
    "empty struct() for connections": dict(BASE, blocks=blk("c", "constant"), connections={}),
    "solver in a cell": dict(BASE, solver=["discrete"]),
    "unset solver and tolerances": dict(BASE, solver=[], relTol=[], maxStep=None),
}


@pytest.mark.parametrize("case", list(VALID_ENCODINGS))
def test_jsonencode_encodings_are_accepted_by_the_schema(case):
    d = VALID_ENCODINGS[case]
    errors = schema_errors(d)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]


def test_valid_encodings_are_also_accepted_by_validate():
    # The physical case names a pin Inertia lacks: a reference a schema cannot check (below).
    for case, d in VALID_ENCODINGS.items():
        if case != "physical connection":
            assert validate_error(d) is None, case


def test_schema_cannot_see_a_wrong_pin_but_validate_does():
    d = _physical(fromPin="flange", toPin="flange_x")
    assert schema_errors(d) == [] and validate_error(d).code == "unknown_pin"


def test_null_sample_time_is_a_diagram_error():
    d = dict(BASE, sampleTime=None)
    assert schema_errors(d)
    assert validate_error(d) is not None


def test_aliases_are_typed_like_their_parameter():
    bt = BlockType(type="demo", library="demo", label="Demo", phases=(), inputs=1, outputs=1,
                   input_names=("",), output_names=("",),
                   params={"Gain": ParamSpec("Gain", "number", 1, exclusive_minimum=0)},
                   aliases={"K": "Gain"}, help="")
    doc = shape._params_schema(bt, shape._Defs())
    assert doc["properties"]["K"]["$ref"] == doc["properties"]["Gain"]["$ref"] == "#/$defs/number_gt_0"


# ----------------------------------------------------------------------------- expression strings

def test_expression_pattern_matches_the_tokenizer():
    pattern = re.compile(shape.EXPRESSION_PATTERN)
    for c in string.printable + "é٣\u00a0":
        text = f"1{c}1"
        try:
            evaluate(text, {})
            tokenizes = True
        except DiagramError as err:
            tokenizes = "unexpected character" not in err.message
        assert bool(pattern.search(text)) == tokenizes, repr(c)
    assert not pattern.search("") and not pattern.search(" \t ") and pattern.search(" [1 2; 3 4] ")


# ----------------------------------------------------------------------------- differential

VARIABLES = {"k": 2.0, "on": 1.0, "yes": 1.0, "OFF": 0.0}
SAFE_STRINGS = ["1", " 2 ", "k", "(1+2)", "on", " yes", "2*on"]          # values in {1, 2, 3}
OTHER_STRINGS = ["-3", "0", "1e3", "inf", "-Inf", "NaN", "OFF", "-k/4"]
BAD_STRINGS = ["", "  ", "1 ?", "a=b", "#1", "'x'", "1:3", "k!"]

SPECS = [
    ParamSpec("p", "number", None),
    ParamSpec("p", "number", None, minimum=0),
    ParamSpec("p", "number", None, exclusive_minimum=0),
    ParamSpec("p", "number", None, minimum=0.5),
    ParamSpec("p", "number", None, minimum=-1, exclusive_minimum=0.5),
    ParamSpec("p", "boolean", None),
    ParamSpec("p", "numeric", None),
    ParamSpec("p", "numeric", None, exclusive_minimum=0),
    ParamSpec("p", "vector", None),
    ParamSpec("p", "vector", None, minimum=0),
    ParamSpec("p", "matrix", None),
    ParamSpec("p", "matrix", None, exclusive_minimum=0),
    ParamSpec("p", "string", None),
    ParamSpec("p", "string", None, enum=("Array", "Structure")),
    ParamSpec("p", "strings", None),
    ParamSpec("p", "any", None),
    ParamSpec("p", "number", None, enum=(1, 2, 3)),
]


def _constrained(spec: ParamSpec) -> bool:
    return spec.minimum is not None or spec.exclusive_minimum is not None or spec.enum is not None


def _values(spec: ParamSpec):
    strings = SAFE_STRINGS + BAD_STRINGS + ([] if _constrained(spec) else OTHER_STRINGS)
    if spec.kind == "string" and spec.enum:
        strings = strings + list(spec.enum)
    leaves = (st.none() | st.booleans() | st.integers(-3, 4) | st.sampled_from([0.0, -0.0, 0.5, 2.5, -1.5])
              | st.floats(-4, 4, allow_nan=False) | st.sampled_from(strings)
              | st.dictionaries(st.sampled_from("ab"), st.integers(0, 1), max_size=1))
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=3), max_leaves=8)


def _shape(value):
    """numpy's shape of a nested list with scalar leaves, None when ragged."""
    if not isinstance(value, list):
        return ()
    shapes = {_shape(v) for v in value}
    if None in shapes or len(shapes) > 1:
        return None
    return (len(value),) + (shapes.pop() if shapes else ())


@functools.lru_cache(maxsize=None)
def _validator(index: int) -> Draft202012Validator:
    doc = shape.value_schema(SPECS[index])
    Draft202012Validator.check_schema(doc)
    return Draft202012Validator(doc)


def _normalizes(spec: ParamSpec, value) -> bool:
    try:
        normalize_param(spec, value, VARIABLES, {"param": spec.name})
    except DiagramError:
        return False
    return True


@pytest.mark.parametrize("index", range(len(SPECS)),
                         ids=[f"{s.kind}{'-constrained' if _constrained(s) else ''}-{i}"
                              for i, s in enumerate(SPECS)])
def test_schema_accepts_exactly_what_normalization_accepts(index):
    spec = SPECS[index]

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_values(spec))
    def check(value):
        if spec.kind in ("numeric", "vector", "matrix"):
            assume(_shape(value) is not None)  # ragged arrays: numpy rejects them, a schema cannot
        assert _validator(index).is_valid(value) == _normalizes(spec, value), value

    check()


def test_numeric_enum_violation_is_a_diagram_error():
    assert not _normalizes(ParamSpec("p", "number", None, enum=(1, 2, 3)), 4)


def test_numeric_enum_schema():
    spec = ParamSpec("p", "number", None, enum=(1, 2, 3))
    v = Draft202012Validator(shape.value_schema(spec))
    for value in (1, 2.0, [3], [[1]], True, "k", " 3 "):
        assert v.is_valid(value) and _normalizes(spec, value), value
    for value in (4, 0, 1.5, False, [4], [1, 2], None, {"a": 1}):
        assert not v.is_valid(value), value


@pytest.mark.parametrize("spec_index,value,ok", [
    (8, [[[1, 2]]], True), (8, [[[1], [2]], [[3], [4]]], True), (8, [[[1, 2]], [[3, 4]]], True),
    (8, [[[1, 2], [3, 4]], [[5, 6], [7, 8]]], False), (8, [[], []], False), (8, [[]], True),
    (10, [[[1]]], False), (10, [[1, None], [2, 3]], True), (6, [[[1, None]]], True), (6, None, True),
    (7, None, False), (0, [[[[5]]]], True), (0, [None], True), (0, None, True), (1, None, False), (0, [], False),
    (16, None, False), (5, None, True), (12, None, False), (4, True, True), (4, False, False),
    (2, True, True), (2, False, False), (1, False, True), (3, True, True), (9, [0, 1, None], False),
])
def test_shapes_and_booleans(spec_index, value, ok):
    spec = SPECS[spec_index]
    assert _normalizes(spec, value) == ok
    assert _validator(spec_index).is_valid(value) == ok


COUNT_STRINGS = ["1", " 2 ", "(1+2)", "", "2 #", "x=1"]
POSITIVE_STRINGS = COUNT_STRINGS + ["1e-3", "0.5", "1/8"]


def _field_values(strings):
    # No subnormal floats: a sampleTime of 5e-324 overflows the sample count (reported).
    leaves = (st.none() | st.booleans() | st.integers(-2, 10_002)
              | st.floats(-2, 3, allow_nan=False, allow_subnormal=False) | st.sampled_from(strings))
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=2), max_leaves=4)


def _valid_diagram(d) -> bool:
    try:
        nc.validate(d)
    except DiagramError:
        return False
    except SimulationError as err:
        assert err.code == "too_many_steps"  # a run limit, not a property of the diagram's shape
    return True


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(["inputs", "outputs"]), value=_field_values(COUNT_STRINGS))
def test_port_counts_agree_with_validate(field, value):
    d = with_block(dict(blk("x", "gain"), **{field: value}))
    assert (not schema_errors(d)) == _valid_diagram(d), (field, value)


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(["sampleTime", "duration", "relTol", "absTol", "maxStep"]),
       value=_field_values(POSITIVE_STRINGS))
def test_time_fields_agree_with_validate(field, value):
    if field in ("sampleTime", "duration"):
        assume(value is not None)  # see test_null_sample_time_is_a_diagram_error
    d = dict(BASE, **{field: value})
    assert (not schema_errors(d)) == _valid_diagram(d), (field, value)


# ----------------------------------------------------------------------------- the run-time check

# The code and pointer validate gives for each DIAGRAM_CASES diagram (those parse gave before the
# schema check ran first, where it checked the same thing).
CASE_ERRORS = {
    "negative sampleTime": ("bad_sampletime", "/sampleTime"), "zero duration": ("bad_duration", "/duration"),
    "false duration": ("bad_duration", "/duration"), "missing duration": ("missing_field", "/duration"),
    "unknown solver": ("unknown_solver", "/solver"), "two solvers": ("unknown_solver", "/solver"),
    "solver in a nested cell": ("unknown_solver", "/solver"),
    "connections as a non-empty object without to": ("bad_connection", "/connections/to"),
    "named fromPin, unset toPin": ("bad_connection", "/connections/2/toPin"),
    "blocks is a number": ("bad_type", "/blocks"), "block is not an object": ("bad_type", "/blocks/3"),
    "unknown block type": ("unknown_block_type", "/blocks/3/type"), "missing block type": ("missing_type", "/blocks/3/type"),
    "missing block id": ("missing_id", "/blocks/3/id"), "empty block id": ("missing_id", "/blocks/3/id"),
    "boolean block id": ("missing_id", "/blocks/3/id"), "negative port count": ("bad_port_count", "/blocks/3/inputs"),
    "fractional port count": ("bad_port_count", "/blocks/3/outputs"), "too many ports": ("bad_port_count", "/blocks/3/outputs"),
    "params is a list": ("bad_type", "/blocks/3/params"), "params is a string": ("bad_type", "/blocks/3/params"),
    "connection without to": ("bad_connection", "/connections/0/to"), "connection is a string": ("bad_type", "/connections"),
    "negative port index": ("port_out_of_range", "/connections/0/toIndex"),
    "physical connection without toPin": ("bad_connection", "/connections/2/toPin"),
    "physical pin is a number": ("bad_connection", "/connections/2/toPin"), "variables is a list": ("bad_type", "/variables"),
    "variable name is not an identifier": ("bad_variable", "/variables/2k"),
    "variable value is an object": ("param_type", "/variables/k"), "relTol is zero": ("bad_reltol", "/relTol"),
}


@pytest.mark.parametrize("case", list(CASE_ERRORS))
def test_schema_errors_keep_the_codes_and_pointers_of_parse(case):
    err = validate_error(DIAGRAM_CASES[case])
    assert (err.code, err.path) == CASE_ERRORS[case], err.message
    assert err.message and len(err.message) <= 500


def test_a_null_param_is_nan_for_its_bound_or_enum():
    assert validate_error(with_block(blk("m", "Mass", m=None))).code == "param_range"
    assert validate_error(with_params(2, SaveFormat=None)).code == "param_type"


def _body(*blocks) -> dict:
    return {"blocks": list(blocks), "connections": []}


def test_nested_diagrams_are_checked_with_qualified_ids_and_pointers():
    d = with_block(blk("s", "subsystem", subsystem=_body(blk("a", "constant"),
                                                         blk("t", "subsystem", subsystem=_body(blk("g", "gain", Gain=[1, 2]))))))
    assert schema_errors(d)
    err = validate_error(d)
    assert (err.code, err.path, err.block, err.param) == (
        "param_type", "/blocks/3/params/subsystem/blocks/1/params/subsystem/blocks/0/params/Gain", "s/t/g", "Gain")
    d = with_block(blk("s", "subsystem", subsystem=_body(blk("a", "gian"))))
    err = validate_error(d)
    assert (err.code, err.path, err.block) == ("unknown_block_type", "/blocks/3/params/subsystem/blocks/0/type", "s/a")
    d = with_block(blk("s", "subsystem", subsystem={"blocks": [{"type": "gain"}], "connections": "a->b"}))
    assert validate_error(d).code in ("missing_id", "bad_type")


def _array_keywords(node, found: list) -> None:
    if isinstance(node, dict):
        found += [(key, value) for key, value in node.items() if key in ("minItems", "maxItems", "uniqueItems",
                  "prefixItems", "minContains", "maxContains", "multipleOf")]
        if "enum" in node and any(isinstance(v, (int, float)) for v in node["enum"]):
            found.append(("number enum", node["enum"]))
        for value in node.values():
            _array_keywords(value, found)
    elif isinstance(node, list):
        for value in node:
            _array_keywords(value, found)


def test_long_arrays_are_checked_by_their_summary_exactly():
    # shape checks the numbers of an array holding more than two by its smallest and largest:
    # exact while array keywords only tell 0, 1 or more items apart and number enums sit in
    # schemas that take one item at most
    found = []
    _array_keywords(shape.diagram_schema(), found)
    assert {key for key, value in found if key in ("minItems", "maxItems") and value > 1} == set()
    assert {key for key, _ in found} <= {"minItems", "maxItems", "number enum"}
    for index in range(len(SPECS)):
        doc = shape.value_schema(SPECS[index])
        for enum_schema in [n for n in _nodes(doc) if "enum" in n and SPECS[index].kind == "number"]:
            assert enum_schema is not doc or doc.get("maxItems") == 1

    numbers = st.none() | st.integers(-3, 4) | st.floats(-4, 4, allow_nan=False)
    others = st.booleans() | st.sampled_from(["1", "k", "#", "Array"]) | st.lists(st.integers(0, 2), max_size=2)

    @settings(max_examples=200, deadline=None)
    @given(index=st.integers(0, len(SPECS) - 1),
           value=st.lists(numbers, min_size=3, max_size=8) | st.lists(numbers | others, min_size=3, max_size=8))
    def agree(index, value):
        doc = shape.value_schema(SPECS[index])
        assert shape.explainer()(doc).is_valid(value) == Draft202012Validator(doc).is_valid(value), (index, value)
        assert shape.explainer()(doc).is_valid([value]) == Draft202012Validator(doc).is_valid([value]), (index, value)

    agree()


def _nodes(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nodes(value)


def test_a_long_data_vector_is_checked_in_linear_time():
    d = with_block(blk("v", "constant", Value=[float(i) for i in range(200_000)]))
    started = time.perf_counter()
    assert validate_error(d) is None
    assert time.perf_counter() - started < 3.0
    d["blocks"][-1]["params"]["Value"][-1] = "#"      # one bad element among 200,000 is still found
    assert validate_error(d).code == "bad_expression"
    assert time.perf_counter() - started < 3.0


def test_long_chains_of_one_element_arrays_are_cut_exactly():
    # shape cuts a chain of more than three one-element arrays to three (jsonschema would
    # recurse past Python's limit on the hundreds of levels jsonencode may write)
    leaves = st.none() | st.booleans() | st.integers(-3, 4) | st.sampled_from(["1", "k", "#", "Array"]) \
        | st.lists(st.integers(-2, 3), min_size=2, max_size=3) | st.lists(st.lists(st.integers(0, 2), min_size=1,
                                                                                     max_size=2), min_size=2, max_size=2)

    @settings(max_examples=200, deadline=None)
    @given(index=st.integers(0, len(SPECS) - 1), leaf=leaves, depth=st.integers(1, 8))
    def agree(index, leaf, depth):
        value = leaf
        for _ in range(depth):
            value = [value]
        doc = shape.value_schema(SPECS[index])
        assert shape.explainer()(doc).is_valid(value) == Draft202012Validator(doc).is_valid(value), (index, value)

    agree()
    assert validate_error(with_params(1, Gain=functools.reduce(lambda x, _: [x], range(400), 3))) is None


@pytest.mark.parametrize("case", list(DIAGRAM_CASES) + [f"params: {c}" for c in PARAM_CASES] + ["base"])
def test_the_compiled_validator_agrees_with_jsonschema(case):
    """shape's fast validator (jsonschema_rs) says yes or no as jsonschema does, on the
    valid base diagram and on every invalid case above: the skeleton, then the params."""
    d = BASE if case == "base" else (PARAM_CASES[case[8:]][0] if case.startswith("params: ") else DIAGRAM_CASES[case])
    skeleton = shape._skeleton(MAX_LENGTH)
    assert skeleton.fast.is_valid(d) == skeleton.explain.is_valid(d)
    if skeleton.explain.is_valid(d):
        for block in d["blocks"]:
            if block.get("type") not in block_types():
                continue
            checker = shape._params(MAX_LENGTH, block["type"])
            given = block.get("params", {})
            assert checker.fast.is_valid(given) == checker.explain.is_valid(given), block


def test_a_check_compiles_only_the_params_schemas_of_the_types_it_meets():
    # the params validators are compiled on first use, each with the defs it refers to only
    shape._params.cache_clear()
    shape.check(BASE)
    assert shape._params.cache_info().currsize == len({b["type"] for b in BASE["blocks"]})
    for name in block_types():      # every type's schema compiles on its own (its references resolve)
        checker = shape._params(MAX_LENGTH, name)
        assert set(checker.schema.get("$defs", {})) <= set(shape._diagram_schema(MAX_LENGTH)["$defs"])
