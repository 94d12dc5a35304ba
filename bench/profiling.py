"""cProfile of one call, as the rows the benchmarks write (their hook inflates cheap calls:
read the shares, not the absolute times)."""
from __future__ import annotations

import cProfile
import io
import pstats
from pathlib import Path


def profile_rows(run, top: int) -> tuple:
    """``(total tottime in s, the top rows by tottime)`` of one ``run()``."""
    prof = cProfile.Profile()
    prof.enable()
    run()
    prof.disable()
    stats = pstats.Stats(prof, stream=io.StringIO()).stats
    total = sum(v[2] for v in stats.values())
    rows = [{"function": f"{Path(f).parent.name}/{Path(f).name}:{line}({fn})", "calls": calls, "tottime_s": tt,
             "cumtime_s": ct, "share": tt / total if total else 0.0}
            for (f, line, fn), (_, calls, tt, ct, _) in stats.items()]
    rows.sort(key=lambda r: -r["tottime_s"])
    return total, rows[:top]
