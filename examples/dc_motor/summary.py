"""Print a short summary of a DC motor result written by `nflow-sim` and the steady state its
parameters predict: speed w = k·V/(k² + R·d), current i = d·w/k."""
import sys
from pathlib import Path

import orjson

result = orjson.loads(Path(sys.argv[1]).read_bytes())
if result.get("status") != "ok":
    sys.exit(f"simulation failed: {result.get('error')}")
diagram = orjson.loads((Path(__file__).parent / "diagram.json").read_bytes())
params = {b["id"]: b["params"] for b in diagram["blocks"]}
V, R, k, d = params["supply"]["Gain"], params["R"]["R"], params["emf"]["k"], params["friction"]["d"]
t = result["time"]
current = [row[0] for row in result["workspace"]["i"]]
speed = [row[0] for row in result["workspace"]["w"]]
peak = max(range(len(current)), key=current.__getitem__)
w_steady = k * V / (k * k + R * d)
print(f"{len(t)} samples, t = {t[0]} .. {t[-1]} s, solver {result['stats']['solver']}")
print(f"peak current {current[peak]:.3f} A at t = {t[peak]:.3f} s")
print(f"at t = {t[-1]} s: speed {speed[-1]:.3f} rad/s, current {current[-1]:.3f} A")
print(f"steady state (k V/(k^2 + R d), d w/k): speed {w_steady:.3f} rad/s, current {d * w_steady / k:.3f} A")
