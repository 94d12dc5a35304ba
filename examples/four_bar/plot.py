"""Draw the four-bar example: the linkage at a few instants with the coupler curve of E, and
the crank and rocker angles over time.

    nflow-sim run examples/four_bar/diagram.json -o result.json
    python examples/four_bar/plot.py result.json four_bar.png

or, running the diagram here with ``nc.run``: ``python examples/four_bar/plot.py four_bar.png``.
Needs matplotlib and pandas, the ``notebook`` extra (from a checkout: ``python -m pip install -e '.[notebook]'``).
"""
import sys
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

import nflow_compat as nc

A, D = (0.0, 0.0), (3.0, 0.0)     # the ground pivots: PlanarWorld's frame and the PlanarFixed D


def main(result_path: str | None, image_path: str) -> None:
    try:
        result = (nc.Result.from_json(Path(result_path).read_bytes()) if result_path
                  else nc.run(Path(__file__).with_name("diagram.json")))
    except nc.NFlowError as err:
        sys.exit(f"simulation failed: {err.code}: {err.message}")
    frame = result.to_pandas()        # time index; one column per recorded coordinate (B_x, B_y, ...)
    t = frame.index.to_numpy()
    w = {name: frame[name].to_numpy() for name in frame.columns}
    fig = Figure(figsize=(11, 4.5))
    linkage, angles = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.3, 1]})
    linkage.plot(*zip(A, D), color="0.5", ls="--", lw=1)
    linkage.plot(w["E_x"], w["E_y"], color="tab:orange", lw=1, label="coupler point E")
    turn = np.unwrap(np.arctan2(w["B_y"], w["B_x"]))
    for colour, angle in zip(("tab:blue", "tab:green", "tab:red", "tab:purple"), (0.0, 1.6, 3.2, 4.8)):
        k = int(np.argmax(turn >= angle))          # the linkage at four crank angles of its first turn
        b, c, e = ((w[f"{p}_x"][k], w[f"{p}_y"][k]) for p in "BCE")
        linkage.plot(*zip(A, b, c, D), color=colour, lw=1.5, marker="o", ms=3, label=f"t = {t[k]:.2f} s")
        linkage.fill(*zip(b, c, e), color=colour, alpha=0.15)
    linkage.set_aspect("equal")
    linkage.set_title("crank-rocker four-bar: AB = 1, BC = 3.2, CD = 2, AD = 3")
    linkage.legend(loc="lower right", fontsize="small")
    angles.plot(t, np.unwrap(np.arctan2(w["B_y"], w["B_x"])), label="crank angle (AB)")
    angles.plot(t, np.arctan2(w["C_y"] - D[1], w["C_x"] - D[0]), label="rocker angle (DC)")
    angles.set_xlabel("t [s]")
    angles.set_ylabel("rad")
    angles.legend()
    fig.tight_layout()
    fig.savefig(image_path, dpi=100)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: python examples/four_bar/plot.py [result.json] four_bar.png")
    main(sys.argv[1] if len(sys.argv) == 3 else None, sys.argv[-1])
