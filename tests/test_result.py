"""A run's result for Python users (nflow_compat.result, ``nc.run``): named numpy columns,
DataFrames, xarray, events as a table, the one-screen summaries, and what a result file
gives back."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import nflow_compat as nc
from tests.util import blk, diagram, pin, record, wire

REPO = Path(__file__).resolve().parents[1]
R, C, V = 1000.0, 1e-4, 5.0          # tau = RC = 0.1 s


def rc_circuit() -> dict:
    """A 5 V source charging 100 uF through 1 kOhm; the capacitor's voltage and the current,
    muxed into one recorded variable, and the voltage alone in another."""
    blocks = [blk("src", "ConstantVoltage", V=V), blk("R1", "Resistor", R=R), blk("C1", "Capacitor", C=C),
              blk("gnd", "Ground"), blk("vC", "VoltageSensor"), blk("iR", "CurrentSensor"),
              blk("m", "mux", inputs=2), record("w", "rc"), record("w2", "vc")]
    conns = [pin("src", "p", "iR", "p"), pin("iR", "n", "R1", "p"), pin("R1", "n", "C1", "p"),
             pin("C1", "n", "gnd", "p"), pin("src", "n", "gnd", "p"), pin("vC", "p", "C1", "p"),
             pin("vC", "n", "gnd", "p"), wire("vC", "m", 0, 0), wire("iR", "m", 0, 1), wire("m", "w"),
             wire("vC", "w2")]
    return diagram(blocks, conns, dt=0.01, duration=0.5, solver="dae", relTol=1e-8, absTol=1e-10)


def test_a_circuits_result_as_a_dataframe_with_named_columns():
    # as in a notebook: run, look at it, take the DataFrame
    result = nc.run(rc_circuit())
    assert "rc" in repr(result) and "vC [V], iR [A]" in repr(result)
    frame = result.to_pandas()
    assert list(frame.columns) == [("rc", "vC"), ("rc", "iR"), ("vc", "vC")]
    assert frame.index.name == "time" and len(frame) == 51
    t = frame.index.to_numpy()
    # analytic: v_C = V (1 - exp(-t/RC)), i = V/R exp(-t/RC)
    assert np.allclose(frame[("rc", "vC")], V * (1 - np.exp(-t / (R * C))), rtol=0, atol=1e-6)
    assert np.allclose(frame["rc"]["iR"], V / R * np.exp(-t / (R * C)), rtol=0, atol=1e-9)
    one = result.to_pandas("rc")
    assert list(one.columns) == ["vC", "iR"] and np.array_equal(one.to_numpy(), result.workspace["rc"])
    assert result.columns == {"rc": ("vC", "iR"), "vc": ("vC",)}
    assert result.units == {"rc": ("V", "A"), "vc": ("V",)}
    assert result.variables["rc"].save_format == "Array" and result.variables["rc"].time is result.time


def test_width_one_variables_make_one_flat_frame_and_decimated_ones_a_frame_each():
    flat = nc.run(diagram([blk("s", "sine"), blk("r", "ramp"), record("a", "x"), record("b", "y")],
                          [wire("s", "a"), wire("r", "b")], duration=0.3)).to_pandas()
    assert list(flat.columns) == ["x", "y"] and flat.index.tolist() == pytest.approx([0, 0.1, 0.2, 0.3])
    d = diagram([blk("r", "ramp"), blk("a", "toWorkspace", VariableName="every", SaveFormat="Array"),
                 blk("b", "toWorkspace", VariableName="third", SaveFormat="Array", Decimation=3),
                 blk("c", "toWorkspace", VariableName="timed", SaveFormat="Structure With Time", Decimation=3)],
                [wire("r", "a"), wire("r", "b"), wire("r", "c")], duration=0.6)
    frames = nc.run(d).to_pandas()
    assert set(frames) == {"every", "third", "timed"}
    assert frames["third"].index.name == "sample" and frames["third"].index.tolist() == [1, 2, 3]
    assert frames["timed"].index.tolist() == pytest.approx([0.0, 0.3, 0.6])
    assert frames["timed"]["r"].tolist() == pytest.approx([0.0, 0.3, 0.6])


def test_to_xarray_keeps_names_units_and_each_time_base():
    ds = nc.run(rc_circuit()).to_xarray()
    assert ds["rc"].dims == ("time", "rc.column")
    assert list(ds["rc.column"].values) == ["vC", "iR"] and list(ds["rc.unit"].values) == ["V", "A"]
    assert float(ds["vc"].sel(time=0.5).item()) == pytest.approx(V * (1 - math.exp(-5)), abs=1e-6)
    assert ds.attrs["solver"] == "dae"


def test_events_are_a_table_and_the_result_reads_back_from_its_json():
    mass = json.loads((REPO / "examples" / "sweep_coulomb" / "diagram.json").read_text())
    result = nc.run(mass)
    events = result.events
    assert list(events.columns)[:5] == ["t", "block", "kind", "from", "to"]
    assert events["to"].tolist()[0] == "forward" and (events["block"] == "stop1").all()
    back = nc.Result.from_json(nc.simulate_json(json.dumps(mass)))
    assert back.columns == result.columns and np.array_equal(back.workspace["stop1.v"], result.workspace["stop1.v"])
    assert back.to_dict() == nc.simulate(mass) | {"stats": back.stats}
    assert nc.run(diagram([blk("s", "sine")], [])).events.empty


def test_complex_and_integer_columns_keep_their_types():
    d = diagram([blk("re", "constant", Value=1.0), blk("im", "constant", Value=2.0),
                 blk("z", "realImagToComplex", inputs=2), blk("k", "constant", Value=7),
                 blk("i", "convert", OutDataType="int64"), record("w", "z"), record("w2", "k")],
                [wire("re", "z", 0, 0), wire("im", "z", 0, 1), wire("z", "w"), wire("k", "i"), wire("i", "w2")])
    result = nc.run(d)
    assert result.workspace["z"].dtype.kind == "c" and result.workspace["z"][0, 0] == 1 + 2j
    assert result.workspace["k"].dtype == np.int64
    back = nc.Result.from_json(nc.simulate_json(json.dumps(d)))
    assert back.workspace["z"][0, 0] == 1 + 2j and back.workspace["k"].dtype == np.int64


def test_run_takes_a_file_text_or_a_fixture_and_the_html_summary_escapes_names():
    quick = REPO / "examples" / "quickstart" / "diagram.json"
    by_path, by_text = nc.run(quick), nc.run(quick.read_text())
    assert by_path.columns == by_text.columns == {"y": ("drive", "play", "limit")}
    assert nc.run(str(REPO / "fixtures" / "msl" / "oscillator.json")).workspace["mass1.s"].shape == (401, 1)
    with pytest.raises(nc.DiagramError) as info:
        nc.run(REPO / "no-such.json")
    assert info.value.code == "unreadable_input"
    page = nc.run(diagram([blk("s", "sine"), record("w", "<b>y</b>")], [wire("s", "w")]))._repr_html_()
    assert "&lt;b&gt;y&lt;/b&gt;" in page and "<b>y</b>" not in page


def test_simulate_says_when_it_was_given_a_fixture_file():
    fixture = json.loads((REPO / "fixtures" / "msl" / "oscillator.json").read_text())
    with pytest.raises(nc.DiagramError) as info:
        nc.simulate(fixture)
    assert info.value.code == "missing_field" and "fixture file" in info.value.message


def test_a_causal_run_imports_no_pandas_and_to_pandas_does():
    script = ("import sys, nflow_compat as nc\n"
              "r = nc.run({'blocks': [{'id': 'c', 'type': 'constant'}, {'id': 'w', 'type': 'toWorkspace'}], "
              "'connections': [{'from': 'c', 'to': 'w'}], 'sampleTime': 1, 'duration': 1})\n"
              "before = 'pandas' in sys.modules\n"
              "r.to_pandas()\n"
              "print(before, 'pandas' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.split() == ["False", "True"]


def test_a_missing_pandas_is_a_typed_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(nc.SimulationError) as info:
        nc.run(rc_circuit()).to_pandas()
    assert info.value.code == "missing_dependency" and "pip install" in info.value.message
    assert pd.__name__ == "pandas"


def test_the_docstring_examples_run():
    import doctest

    from nflow_compat import api, plotting, result
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = (finder.find(result) + finder.find(api.run, "run", module=api, globs={})
             + finder.find(plotting.plot, "plot", module=plotting, globs={}))
    assert sum(len(t.examples) for t in tests) >= 10
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
