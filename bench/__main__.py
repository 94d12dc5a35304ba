"""``python -m bench``: every benchmark, or one with ``--only NAME`` (``--help`` lists them and
their options).

Without ``--only`` the benchmarks of ``WHOLE_SET`` run in its order; an option goes to every
benchmark that has it (``--repeats 3`` sets both the causal and the stick-slip repeats), and
one that no benchmark knows is an error. The exit status is nonzero when any of them fails
its checks. The others run only when named: ``ngspice`` needs ngspice installed.
"""
from __future__ import annotations

import argparse
import sys

from . import (batch, causal_chain, circuits, double_pendulum, ngspice_circuits, rerun, serve, startup,
               stick_slip, sweep, validation)

# --only NAME -> (the benchmark's module, the arguments that select it there)
BENCHMARKS = {
    "causal": (causal_chain, []),
    "stickslip": (stick_slip, ["--part", "stickslip"]),
    "clutches": (stick_slip, ["--part", "clutches"]),
    "sweep": (sweep, []),
    "circuits": (circuits, []),
    "planar": (double_pendulum, []),
    "validation": (validation, []),
    "rerun": (rerun, []),
    "ngspice": (ngspice_circuits, []),
    "startup": (startup, []),
    "serve": (serve, []),
    "batch": (batch, []),
}
# what a run without --only runs, in this order (stick_slip's whole run includes CoupledClutches)
WHOLE_SET = (causal_chain, stick_slip, sweep, circuits, double_pendulum, validation, rerun, startup, serve, batch)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pre = argparse.ArgumentParser(prog="python -m bench", add_help=False)
    pre.add_argument("--only", choices=tuple(BENCHMARKS))
    pre.add_argument("-h", "--help", action="store_true")
    ns, rest = pre.parse_known_args(argv)
    if ns.help:
        print(__doc__)
        print(f"usage: python -m bench [--only {{{','.join(BENCHMARKS)}}}] [options]\n")
        shown = [BENCHMARKS[ns.only][0]] if ns.only else list(dict.fromkeys(m for m, _ in BENCHMARKS.values()))
        for module in shown:
            module.parser().print_help()
            print("")
        return 0
    if ns.only:
        module, selecting = BENCHMARKS[ns.only]
        return module.main(rest + selecting)
    parsed = [module.parser().parse_known_args(rest) for module in WHOLE_SET]
    unknown = [a for a in parsed[0][1] if a.startswith("-") and all(a in left for _, left in parsed)]
    if unknown:
        pre.error(f"unrecognized arguments: {' '.join(unknown)}")
    status = 0
    for module, (args, _) in zip(WHOLE_SET, parsed):
        status |= module.main(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
