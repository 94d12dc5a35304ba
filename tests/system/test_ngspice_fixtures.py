"""The circuits compared with ngspice (fixtures/ngspice/*.json; ngspice's netlists and output
in fixtures/reference/ngspice/, both written by bench/ngspice_circuits.py) run under 'dae'
and 'ode45' and stay, on every sample ngspice wrote, within the fixture's tolerance (1e-3)
of each signal's range in ngspice's run. ngspice itself is not needed here."""
import numpy as np
import pytest

import nflow_compat as nc
from tests import goldens

FIXTURES = sorted((goldens.ROOT / "ngspice").glob("*.json"))
DATA = goldens.REFERENCE / "ngspice"


def _reference(fixture) -> tuple[np.ndarray, dict]:
    """ngspice's wrdata output: (times, {vector name: values})."""
    lines = (DATA / fixture["reference"]["data"]).read_text().splitlines()
    names = lines[0].split()
    values = np.array([[float(x) for x in line.split()] for line in lines[1:] if line.strip()])
    return values[:, 0], {name: values[:, k] for k, name in enumerate(names) if k}


@pytest.mark.parametrize("path, solver", [(p, s) for p in FIXTURES for s in ("dae", "ode45")],
                         ids=[f"{p.stem}-{s}" for p in FIXTURES for s in ("dae", "ode45")])
def test_the_circuit_matches_ngspice(path, solver):
    fixture = goldens.load(path)
    t_ref, ref = _reference(fixture)
    result = nc.simulate(dict(fixture["diagram"], solver=solver))
    t = np.asarray(result["time"])
    rows = np.rint(t_ref / fixture["diagram"]["sampleTime"]).astype(int)   # ngspice starts one step in
    assert rows.max() < len(t) and np.abs(t[rows] - t_ref).max() < 1e-12 * t[-1]
    worst = {}
    for name, vector in fixture["reference"]["signals"].items():
        ours = np.asarray(result["workspace"][name], dtype=float)[rows, 0]
        worst[name] = float(np.abs(ours - ref[vector]).max() / np.ptp(ref[vector]))
    assert max(worst.values()) <= fixture["reference"]["tolerance"], worst


def test_the_fixtures_say_where_they_come_from():
    assert len(FIXTURES) >= 15
    types = set()
    for path in FIXTURES:
        fixture = goldens.load(path)
        assert fixture["provenance"] == "ngspice-reference"
        assert fixture["reference"]["ngspice"].startswith("ngspice-")
        netlist = (DATA / fixture["reference"]["netlist"]).read_text()
        assert f"wrdata {fixture['reference']['data']}" in netlist and ".tran" in netlist
        types |= {b["type"] for b in fixture["diagram"]["blocks"]}
    assert {"Diode", "ZDiode", "IdealDiode", "NMOS", "PMOS", "NPN", "IdealOpAmp", "IdealSwitch", "Inductor"} <= types
