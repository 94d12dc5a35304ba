"""Draw the four-bar example: the linkage at a few instants with the coupler curve of E, and
the crank and rocker angles over time.

    nflow-sim run examples/four_bar/diagram.json -o result.json
    python examples/four_bar/plot.py result.json four_bar.png

Needs matplotlib, the ``plot`` extra (from a checkout: ``python -m pip install -e '.[plot]'``).
"""
import sys

import numpy as np
import orjson
from matplotlib.figure import Figure

A, D = (0.0, 0.0), (3.0, 0.0)     # the ground pivots: PlanarWorld's frame and the PlanarFixed D


def main(result_path: str, image_path: str) -> None:
    result = orjson.loads(open(result_path, "rb").read())
    if result.get("status") != "ok":
        sys.exit(f"simulation failed: {result.get('error')}")
    t = np.asarray(result["time"])
    w = {name: np.asarray(values, dtype=float)[:, 0] for name, values in result["workspace"].items()}
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
    if len(sys.argv) != 3:
        sys.exit("usage: python examples/four_bar/plot.py result.json four_bar.png")
    main(sys.argv[1], sys.argv[2])
