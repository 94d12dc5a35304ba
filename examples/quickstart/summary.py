"""Print a short summary of a result file written by `nflow-sim` (used by `make demo`)."""
import sys

import orjson

result = orjson.loads(open(sys.argv[1], "rb").read())
if result.get("status") != "ok":
    sys.exit(f"simulation failed: {result.get('error')}")
print(f"status ok: {result['stats']['steps']} samples, t = {result['time'][0]} .. {result['time'][-1]} s, "
      f"solver {result['stats']['solver']}, {result['stats']['wall_s'] * 1000:.2f} ms")
for name, value in result["workspace"].items():
    rows = value["signals"]["values"] if isinstance(value, dict) else value
    columns = list(zip(*rows))
    labels = ["drive", "backlash(drive)", "sat(friction(drive))"]
    print(f"workspace {name!r}: {len(rows)} x {len(columns)}")
    for label, col in zip(labels, columns):
        print(f"  {label:22s} min {min(col):+.4f}  max {max(col):+.4f}  last {col[-1]:+.4f}")
