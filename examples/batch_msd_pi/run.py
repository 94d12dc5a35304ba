"""Run a batch of controller tunings of the PI-controlled mass-spring-damper with
``run_batch`` (Kp and Ki on a 3 x 3 grid around the diagram's 10 and 8) and print, per
variant, the closed loop's step response: peak, overshoot, 2 % settling time after the step.

    python examples/batch_msd_pi/run.py
"""
import sys
import time
from itertools import product
from pathlib import Path

import numpy as np
import orjson

import nflow_compat as nc
from nflow_compat.engine.batch import run_batch

DIAGRAM = Path(__file__).with_name("diagram.json")
KP_VALUES = (6.0, 10.0, 14.0)
KI_VALUES = (4.0, 8.0, 12.0)
BAND = 0.02                  # settling band, a fraction of the unit reference


def main(argv) -> int:
    raw = orjson.loads(DIAGRAM.read_bytes())
    diagram = nc.validate(raw)
    index = {b.id: b.index for b in diagram.blocks}
    step_time = next(b["params"]["Time"] for b in raw["blocks"] if b["id"] == "reference")
    tunings = list(product(KP_VALUES, KI_VALUES))
    variants = [{(index["Kp"], "Gain"): kp, (index["Ki"], "Gain"): ki} for kp, ki in tunings]
    started = time.perf_counter()
    results = run_batch(diagram, variants)
    wall = time.perf_counter() - started
    batched = sum(1 for r in results if isinstance(r, dict) and r["stats"]["batched"])
    print(f"{len(variants)} variants, {batched} ran batched, {wall * 1000:.0f} ms")
    print(f"{'Kp':>5} {'Ki':>5}  {'peak x':>7}  {'overshoot':>9}  {'settled at':>10}  {'final F':>7}")
    for (kp, ki), result in zip(tunings, results):
        if isinstance(result, nc.NFlowError):
            print(f"{kp:5g} {ki:5g}  failed: {result.code}: {result.message}")
            continue
        t = np.asarray(result["time"], dtype=float)
        x = np.asarray(result["workspace"]["x"], dtype=float)[:, 0]
        force = np.asarray(result["workspace"]["F"], dtype=float)[:, 0]
        outside = np.nonzero(np.abs(x - 1.0) > BAND)[0]
        settled = t[outside[-1] + 1] - step_time if outside.size and outside[-1] + 1 < t.size else float("nan")
        print(f"{kp:5g} {ki:5g}  {x.max():7.4f}  {100 * max(x.max() - 1.0, 0.0):8.2f} %  {settled:8.3f} s  "
              f"{force[-1]:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
