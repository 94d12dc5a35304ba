"""Sweep specs for tests: the sweep_coulomb example's mass (``MASS``, 1 s) swept over its
Coulomb force (``mass_spec``), and a sine through a gain 'k*2' (``gains``)."""
import copy
import json
from pathlib import Path

from tests.util import blk, diagram, wire

REPO = Path(__file__).resolve().parents[2]
MASS = json.loads((REPO / "examples" / "sweep_coulomb" / "diagram.json").read_text())
MASS["duration"] = 1.0


def gains(**extra):
    """sine -> gain (Gain = 'k*2', k a variable) -> toWorkspace 'y' (Structure With Time)."""
    blocks = [blk("src", "sine", Amplitude=1.0, Frequency=1.0), blk("g", "gain", Gain="k*2"),
              blk("w", "toWorkspace", VariableName="y", SaveFormat="Structure With Time")]
    return diagram(blocks, [wire("src", "g"), wire("g", "w")], dt=0.01, duration=1.0, variables={"k": 1.5}, **extra)


def mass_spec(**extra):
    return dict({"diagram": copy.deepcopy(MASS), "parameters": {"stop1.F_Coulomb": [1, 2, 3]},
                 "outputs": {"stop1.v": ["max", "first_rising(0)"]}}, **extra)
