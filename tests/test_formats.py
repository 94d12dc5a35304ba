"""Results in the formats ``nflow-sim run -o`` writes (nflow_compat.formats): a MAT file that
``load`` reads as the workspace (read back here by ``scipy.io.loadmat``), CSV and Parquet
tables with named columns, and the formats refused before the run."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
import scipy.io

import nflow_compat as nc
from nflow_compat import formats
from tests.util import blk, diagram, wire


def recorded() -> dict:
    """A sine and a ramp muxed (Array), the ramp as a struct with time, a 3-vector as a
    struct without, a complex constant; a name that is no MATLAB identifier."""
    blocks = [blk("s", "sine", Frequency=0.5), blk("r", "ramp"), blk("m", "mux", inputs=2),
              blk("v", "constant", Value=[1, 2, 3]), blk("re", "constant", Value=1.0), blk("im", "constant", Value=-2.0),
              blk("z", "realImagToComplex", inputs=2),
              blk("w1", "toWorkspace", VariableName="both", SaveFormat="Array"),
              blk("w2", "toWorkspace", VariableName="ramp.swt", SaveFormat="Structure With Time"),
              blk("w3", "toWorkspace", VariableName="vec", SaveFormat="Structure"),
              blk("w4", "toWorkspace", VariableName="z", SaveFormat="Array")]
    conns = [wire("s", "m", 0, 0), wire("r", "m", 0, 1), wire("m", "w1"), wire("r", "w2"), wire("v", "w3"),
             wire("re", "z", 0, 0), wire("im", "z", 0, 1), wire("z", "w4")]
    return diagram(blocks, conns, dt=0.25, duration=1.0)


def written(result, fmt) -> tuple:
    out = io.BytesIO()
    notes = formats.write(result, out, fmt)
    return out.getvalue(), notes


def test_the_mat_file_reads_back_as_the_workspace():
    result = nc.run(recorded())
    data, notes = written(result, "mat")
    assert notes == ["variable 'ramp.swt' is saved as 'ramp_swt' (a MATLAB name)"]
    mat = scipy.io.loadmat(io.BytesIO(data))
    assert {k for k in mat if not k.startswith("__")} == {"both", "ramp_swt", "vec", "z", "tout"}
    t = np.arange(5) * 0.25
    assert np.array_equal(mat["tout"], t.reshape(-1, 1))
    assert mat["both"].shape == (5, 2) and np.allclose(mat["both"][:, 1], t)          # Array: the N x W matrix
    assert np.allclose(mat["both"][:, 0], np.sin(np.pi * t), atol=1e-12)
    swt = mat["ramp_swt"][0, 0]                                                      # a struct, as nflow's
    assert np.array_equal(swt["time"], t.reshape(-1, 1))
    assert np.allclose(swt["signals"][0, 0]["values"], t.reshape(-1, 1))
    assert swt["signals"][0, 0]["dimensions"][0, 0] == 1.0 and swt["blockName"][0] == "w2"
    vec = mat["vec"][0, 0]
    assert vec["time"].size == 0 and np.array_equal(vec["signals"][0, 0]["values"], np.tile([1.0, 2.0, 3.0], (5, 1)))
    assert mat["z"].dtype.kind == "c" and mat["z"][0, 0] == 1 - 2j


def test_matlab_names_are_valid_and_distinct():
    names = formats.matlab_names(["ok", "stop1.v", "stop1_v", "1st", "_x", "a" * 80, "a" * 80 + "b"])
    assert names["ok"] == "ok" and names["stop1.v"] == "stop1_v" and names["stop1_v"] == "stop1_v_1"
    assert names["1st"] == "x1st" and names["_x"] == "x_x"
    assert len(set(names.values())) == len(names)
    assert all(len(n) <= 63 and n[0].isalpha() and n.replace("_", "").isalnum() for n in names.values())


def test_csv_and_parquet_are_time_and_the_named_columns():
    result = nc.run(recorded())
    table = pd.read_csv(io.BytesIO(written(result, "csv")[0]))
    assert list(table.columns) == ["time", "both:s", "both:r", "ramp.swt", "vec:v[1]", "vec:v[2]", "vec:v[3]",
                                   "z.real", "z.imag"]
    assert np.array_equal(table["time"], result.time) and np.array_equal(table["both:r"], result.time)
    assert (table["z.imag"] == -2.0).all()
    parquet = pd.read_parquet(io.BytesIO(written(result, "parquet")[0]))
    pd.testing.assert_frame_equal(parquet, table)


def test_tables_join_variables_recorded_at_other_times_and_refuse_untimed_ones():
    d = diagram([blk("r", "ramp"), blk("a", "toWorkspace", VariableName="every", SaveFormat="Array"),
                 blk("b", "toWorkspace", VariableName="half", SaveFormat="Structure With Time", Decimation=2)],
                [wire("r", "a"), wire("r", "b")], dt=0.5, duration=1.5)
    table = pd.read_csv(io.BytesIO(written(nc.run(d), "csv")[0]))
    assert table["time"].tolist() == [0.0, 0.5, 1.0, 1.5]
    assert table["half"].tolist()[0::2] == [0.0, 1.0] and table["half"].isna().tolist() == [False, True, False, True]
    assert pd.read_parquet(io.BytesIO(written(nc.run(d), "parquet")[0]))["half"].isna().sum() == 2
    d["blocks"][2]["params"]["SaveFormat"] = "Array"
    with pytest.raises(nc.NFlowError) as info:
        written(nc.run(d), "csv")
    assert info.value.code == "untimed_variable" and "'half'" in info.value.message


@pytest.mark.parametrize("path, given, fmt", [("r.json", None, "json"), ("out/R.MAT", None, "mat"),
                                              ("r.csv", None, "csv"), ("a.b/r.parquet", None, "parquet"),
                                              (None, None, "json"), ("-", None, "json"), ("-", "csv", "csv"),
                                              ("result.txt", "mat", "mat"), ("result", None, "json"),
                                              ("/dev/null", None, "json")])
def test_the_format_comes_from_the_extension_or_is_given(path, given, fmt):
    assert formats.output_format(path, given) == fmt


@pytest.mark.parametrize("path, given", [("r.xlsx", None), ("r.json.txt", None), ("r.json", "hdf5")])
def test_a_format_it_cannot_write_is_a_typed_error(path, given):
    with pytest.raises(nc.NFlowError) as info:
        formats.output_format(path, given)
    assert info.value.code == "unsupported_output_format" and info.value.kind == "output"
