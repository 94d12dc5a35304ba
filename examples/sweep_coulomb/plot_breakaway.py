"""Plot the breakaway time of the stick-slip mass against its Coulomb friction force.

    nflow-sim sweep examples/sweep_coulomb/spec.json -o coulomb.parquet
    python examples/sweep_coulomb/plot_breakaway.py coulomb.parquet breakaway.png

The swept runs give the breakaway as the first time the speed leaves 0 upwards
(``stop1.v.first_rising(0)``: the last grid sample at rest, so up to one 1 ms step early).
The line is the closed form: the mass is stuck until the drive 25*sin(2*pi*0.25*t) exceeds
MSL's breakaway force 1.001*(F_Coulomb + F_Stribeck), so t = asin(1.001*(F_C + 10)/25) /
(2*pi*0.25). A second panel shows the speed of the lightest and heaviest friction over the
first second, run here with ``nc.run(diagram, params={"stop1.F_Coulomb": ...})``.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the file backend)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import nflow_compat as nc  # noqa: E402

DIAGRAM = Path(__file__).with_name("diagram.json")
AMPLITUDE, FREQUENCY, F_STRIBECK = 25.0, 0.25, 10.0    # as in diagram.json
PARAMETER, BREAKAWAY = "stop1.F_Coulomb", "stop1.v.first_rising(0)"


def breakaway_time(f_coulomb):
    """The closed form (see the module docstring)."""
    return np.arcsin(1.001 * (np.asarray(f_coulomb) + F_STRIBECK) / AMPLITUDE) / (2 * math.pi * FREQUENCY)


def plot(frame: pd.DataFrame, image: str) -> float:
    """Draw the figure into ``image``; returns the largest |swept - closed form| (s)."""
    ok = frame[frame["status"] == "ok"].sort_values(PARAMETER)
    force = ok[PARAMETER].to_numpy()
    swept = ok[BREAKAWAY].to_numpy()
    dense = np.linspace(force.min(), force.max(), 200)
    fig, (ax, speeds) = plt.subplots(1, 2, figsize=(11, 4))
    ax.plot(dense, breakaway_time(dense), "-", color="0.6", label="closed form")
    ax.plot(force, swept, "o", ms=4, label=f"sweep ({len(ok)} runs)")
    ax.set_xlabel("F_Coulomb [N]")
    ax.set_ylabel("breakaway time [s]")
    ax.set_title("Stick-slip mass: breakaway time vs Coulomb friction")
    ax.grid(True, alpha=0.3)
    ax.legend()
    for f_coulomb in (force.min(), force.max()):       # two of the runs again, as DataFrames
        v = nc.run(DIAGRAM, params={PARAMETER: float(f_coulomb)}).to_pandas()["stop1.v"]
        v[v.index <= 1.0].plot(ax=speeds, label=f"F_Coulomb = {f_coulomb:g} N")
    speeds.axvline(breakaway_time(force.min()), color="0.6", ls=":")
    speeds.axvline(breakaway_time(force.max()), color="0.6", ls=":")
    speeds.set_xlabel("t [s]")
    speeds.set_ylabel("stop1.v [m/s]")
    speeds.set_title("speed, the first second")
    speeds.grid(True, alpha=0.3)
    speeds.legend()
    fig.tight_layout()
    fig.savefig(image, dpi=100)
    plt.close(fig)
    return float(np.max(np.abs(swept - breakaway_time(force))))


def main(argv) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    frame = pd.read_parquet(argv[0])
    worst = plot(frame, argv[1])
    print(f"{len(frame)} runs; breakaway within {worst * 1e3:.3f} ms of the closed form; wrote {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
