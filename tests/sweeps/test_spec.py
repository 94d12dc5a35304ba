"""Sweep specs (nflow_compat.sweeps.spec): schema and meaning, typed errors with pointers,
parameter addresses. Running sweeps on a Dask cluster is tests/sweeps/test_run.py."""
from __future__ import annotations

import copy

import orjson
import pytest
from jsonschema import Draft202012Validator

import nflow_compat as nc
from nflow_compat.sweeps import spec
from tests.sweeps.sweep_specs import MASS, REPO, gains, mass_spec


# ----------------------------------------------------------------------------- spec errors

def _set(path, value):
    def change(doc):
        *head, last = path
        node = doc
        for key in head:
            node = node[key]
        if value is KeyError:
            del node[last]
        else:
            node[last] = value
    return change


F = "stop1.F_Coulomb"
BAD_SPECS = [
    # (change to a valid spec, code, path, words in the message)
    (_set(["combin"], "grid"), "spec_unknown_key", "/combin", "did you mean 'combine'"),
    (_set(["diagram"], KeyError), "spec_missing", "", "'diagram'"),
    (_set(["parameters"], {}), "spec_empty", "/parameters", ""),
    (_set(["combine"], "cross"), "spec_value", "/combine", "'cross'"),
    (_set(["parameters", F], []), "spec_length", f"/parameters/{F}", ""),
    (_set(["parameters", F], {"linspace": [0, 1]}), "spec_length", f"/parameters/{F}/linspace", ""),
    (_set(["parameters", F], {"linspace": [0, 1, 0]}), "spec_value", f"/parameters/{F}/linspace/2", ""),
    (_set(["parameters", F], {"linspase": [0, 1, 3]}), "spec_unknown_key", f"/parameters/{F}/linspase",
     "did you mean 'linspace'"),
    (_set(["parameters", F], {"uniform": [0, 1]}), "spec_missing", f"/parameters/{F}", "'samples'"),
    (_set(["parameters", F], {"uniform": [1, 0], "samples": 3}), "spec_value", f"/parameters/{F}/uniform",
     "lo <= hi"),
    (_set(["parameters", F], {"normal": [1, -1], "samples": 3}), "spec_value", f"/parameters/{F}/normal",
     "sigma"),
    (_set(["parameters", F], {"linspace": [0, 1, 3], "uniform": [0, 1]}), "spec_value", f"/parameters/{F}",
     "exactly one"),
    (_set(["parameters", F], {"linspace": [0, 1, 3], "seed": 1}), "spec_value", f"/parameters/{F}/seed",
     "random draws and designs"),
    (_set(["events"], ["count", "event_time(stop2, forward)"]), "unknown_block", "/events/1", "did you mean 'stop1'"),
    (_set(["events"], ["event_time(stop1, forward, 0)"]), "spec_value", "/events/0", "counts from 1"),
    (_set(["events"], ["event_time(stop1)"]), "bad_event", "/events/0", "event_count(block, to)"),
    (_set(["parameters", F], {"truncnormal": [1, 2, 3]}), "spec_length", f"/parameters/{F}/truncnormal", ""),
    (_set(["parameters", F], {"lhs": [1, 2]}), "spec_missing", f"/parameters/{F}", "'samples'"),
    (_set(["parameters"], {"stop9.F_Coulomb": [1]}), "unknown_block", "/parameters/stop9.F_Coulomb",
     "did you mean 'stop1'"),
    (_set(["parameters"], {"stop1.F_Colomb": [1]}), "unknown_param", "/parameters/stop1.F_Colomb",
     "did you mean 'F_Coulomb'"),
    (_set(["parameters"], {"variables.k": [1]}), "unknown_variable", "/parameters/variables.k", "no variable"),
    (_set(["parameters"], {"/blocks/9/params/m": [1]}), "bad_pointer", "/parameters/~1blocks~19~1params~1m",
     "'/blocks/9'"),
    (_set(["parameters"], {"/blocks/2/params/F_Colomb": [1]}), "unknown_param",
     "/parameters/~1blocks~12~1params~1F_Colomb", "did you mean 'F_Coulomb'"),
    (_set(["parameters"], {"F_Coulomb": [1]}), "bad_address", "/parameters/F_Coulomb", "JSON pointer"),
    (_set(["parameters"], {F: [1, 2, 3], "stop1.m": [1, 2]}), None, None, None),   # grid: fine
    (lambda d: d.update(combine="zip", parameters={F: [1, 2, 3], "stop1.m": [1, 2]}), "length_mismatch",
     "/parameters/stop1.m", "3"),
    (_set(["parameters"], {F: {"linspace": [0, 1, 1000]}, "stop1.m": {"linspace": [1, 2, 1000]},
                           "stop1.F_prop": {"linspace": [1, 2, 1000]}}), "too_many_runs", "/parameters", "1e+09"),
    (_set(["outputs", "stop1.v"], ["maximum"]), "bad_output", "/outputs/stop1.v/0", "first_crossing(L)"),
    (_set(["outputs", "stop1.v"], ["max", "max"]), "spec_duplicate", "/outputs/stop1.v", ""),
    (_set(["outputs"], {"speed": ["max"]}), "unknown_output", "/outputs/speed", "'stop1.s', 'stop1.v'"),
    (_set(["diagram", "blocks", 0, "type"], "sinus"), "unknown_block_type", "/diagram/blocks/0/type",
     "did you mean 'sine'"),
    (_set(["diagram"], "no-such-file.json"), "unreadable_input", "/diagram", "no-such-file.json"),
]


@pytest.mark.parametrize("change, code, path, words", BAD_SPECS)
def test_bad_specs_get_typed_errors_with_pointers(change, code, path, words):
    doc = mass_spec()
    change(doc)
    if code is None:
        assert len(spec.load(doc).runs) == 6
        return
    with pytest.raises(nc.DiagramError) as info:
        spec.load(doc)
    err = info.value
    assert (err.code, err.path) == (code, path), err.to_dict()
    assert words in err.message


def test_a_diagram_file_error_names_the_file_and_points_into_it(tmp_path):
    bad = copy.deepcopy(MASS)
    bad["blocks"][2]["params"]["m"] = -1
    (tmp_path / "d.json").write_bytes(orjson.dumps(bad))
    (tmp_path / "s.json").write_bytes(orjson.dumps(dict(mass_spec(), diagram="d.json")))
    with pytest.raises(nc.DiagramError) as info:
        spec.load(tmp_path / "s.json")
    assert info.value.code == "param_range" and info.value.path == "/blocks/2/params/m"
    assert info.value.to_dict()["file"] == str(tmp_path / "d.json")


def test_the_schema_is_valid_and_checked_in():
    Draft202012Validator.check_schema(spec.sweep_schema())
    assert orjson.loads((REPO / "schemas" / "sweep.schema.json").read_bytes()) == spec.sweep_schema()


def test_addresses_resolve_to_pointers_and_block_targets():
    d = gains()
    d["blocks"][1]["params"] = []          # jsonencode's empty params: the sweep still sets the Gain
    loaded = spec.load({"diagram": d, "parameters": {"g.Gain": [1], "variables.k": [2], "/blocks/0/params/Amplitude":
                                                     [3], "/duration": [2.0]}})
    assert [(p.pointer, p.block) for p in loaded.parameters] == [
        ("/blocks/1/params/Gain", (1, "Gain")), ("/variables/k", None),
        ("/blocks/0/params/Amplitude", (0, "Amplitude")), ("/duration", None)]
    assert d["blocks"][1]["params"] == []  # the caller's diagram is not touched
