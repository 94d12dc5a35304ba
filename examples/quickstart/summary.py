"""Print a short summary of the quickstart's result: a result file written by `nflow-sim`
(`make demo`), or, without one, the diagram run here with `nc.run`.

    python examples/quickstart/summary.py [result.json]
"""
import sys
from pathlib import Path

import nflow_compat as nc


def main(argv) -> int:
    try:
        result = (nc.Result.from_json(Path(argv[0]).read_bytes()) if argv
                  else nc.run(Path(__file__).with_name("diagram.json")))
    except nc.NFlowError as err:
        sys.exit(f"simulation failed: {err.code}: {err.message}")
    stats = result.stats
    print(f"status ok: {stats['steps']} samples, t = {result.time[0]} .. {result.time[-1]} s, "
          f"solver {stats['solver']}, {stats['wall_s'] * 1000:.2f} ms")
    frame = result.to_pandas("y")       # time index; a column per signal, named after its block
    print(f"workspace 'y': {frame.shape[0]} x {frame.shape[1]}")
    for name, column in frame.items():
        print(f"  {name:8s} min {column.min():+.4f}  max {column.max():+.4f}  last {column.iloc[-1]:+.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
