"""Print a short summary of the DC motor's result and the steady state its parameters
predict: speed w = k·V/(k² + R·d), current i = d·w/k. The result is a file written by
`nflow-sim`, or, without one, the diagram run here with `nc.run`.

    python examples/dc_motor/summary.py [result.json]
"""
import sys
from pathlib import Path

import orjson

import nflow_compat as nc

DIAGRAM = Path(__file__).with_name("diagram.json")


def main(argv) -> int:
    try:
        result = nc.Result.from_json(Path(argv[0]).read_bytes()) if argv else nc.run(DIAGRAM)
    except nc.NFlowError as err:
        sys.exit(f"simulation failed: {err.code}: {err.message}")
    params = {b["id"]: b["params"] for b in orjson.loads(DIAGRAM.read_bytes())["blocks"]}
    V, R, k, d = params["supply"]["Gain"], params["R"]["R"], params["emf"]["k"], params["friction"]["d"]
    frame = result.to_pandas()          # time index; columns i (A) and w (rad/s)
    current, speed = frame["i"], frame["w"]
    w_steady = k * V / (k * k + R * d)
    t_end = frame.index[-1]
    print(f"{len(frame)} samples, t = {frame.index[0]} .. {t_end} s, solver {result.stats['solver']}")
    print(f"units: i [{result.units['i'][0]}], w [{result.units['w'][0]}]")
    print(f"peak current {current.max():.3f} A at t = {current.idxmax():.3f} s")
    print(f"at t = {t_end} s: speed {speed.iloc[-1]:.3f} rad/s, current {current.iloc[-1]:.3f} A")
    print(f"steady state (k V/(k^2 + R d), d w/k): speed {w_steady:.3f} rad/s, current {d * w_steady / k:.3f} A")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
