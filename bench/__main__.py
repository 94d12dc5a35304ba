"""``python -m bench``: every benchmark (``--only causal|stickslip|clutches|sweep|circuits|planar|validation|startup|serve``
for one; ``--help``).

Without ``--only`` the causal-chain benchmark runs first, then the stick-slip benchmark and
CoupledClutches, then the sweep benchmark, the circuits (RC ladder, bridge rectifier), the
planar double pendulum, the cost of the schema check, the cold start and serve; an option goes to every benchmark
that has it (``--repeats 3`` sets both), and one that no benchmark knows is an error. The
exit status is nonzero when any of them fails its trace checks.
"""
from __future__ import annotations

import argparse
import sys

from . import causal_chain, circuits, double_pendulum, serve, startup, stick_slip, sweep, validation

ONLY = ("causal", "stickslip", "clutches", "sweep", "circuits", "planar", "validation", "startup", "serve")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pre = argparse.ArgumentParser(prog="python -m bench", add_help=False)
    pre.add_argument("--only", choices=ONLY)
    pre.add_argument("-h", "--help", action="store_true")
    ns, rest = pre.parse_known_args(argv)
    if ns.help:
        print(__doc__)
        print("usage: python -m bench [--only {causal,stickslip,clutches,sweep,circuits,planar,validation,startup,serve}] "
              "[options]\n")
        if ns.only in (None, "causal"):
            causal_chain.parser().print_help()
            print("")
        if ns.only in (None, "stickslip", "clutches"):
            stick_slip.parser().print_help()
            print("")
        if ns.only in (None, "sweep"):
            sweep.parser().print_help()
            print("")
        if ns.only in (None, "circuits"):
            circuits.parser().print_help()
        if ns.only in (None, "planar"):
            double_pendulum.parser().print_help()
        if ns.only in (None, "validation"):
            validation.parser().print_help()
        if ns.only in (None, "startup"):
            startup.parser().print_help()
        if ns.only in (None, "serve"):
            serve.parser().print_help()
        return 0
    if ns.only == "causal":
        return causal_chain.main(rest)
    if ns.only in ("stickslip", "clutches"):
        return stick_slip.main(rest + ["--part", ns.only])
    if ns.only == "sweep":
        return sweep.main(rest)
    if ns.only == "circuits":
        return circuits.main(rest)
    if ns.only == "planar":
        return double_pendulum.main(rest)
    if ns.only == "validation":
        return validation.main(rest)
    if ns.only == "startup":
        return startup.main(rest)
    if ns.only == "serve":
        return serve.main(rest)
    causal_args, causal_left = causal_chain.parser().parse_known_args(rest)
    ss_args, ss_left = stick_slip.parser().parse_known_args(rest)
    sweep_args, sweep_left = sweep.parser().parse_known_args(rest)
    circuit_args, circuit_left = circuits.parser().parse_known_args(rest)
    planar_args, planar_left = double_pendulum.parser().parse_known_args(rest)
    validation_args, validation_left = validation.parser().parse_known_args(rest)
    startup_args, startup_left = startup.parser().parse_known_args(rest)
    serve_args, serve_left = serve.parser().parse_known_args(rest)
    unknown = [a for a in causal_left if a.startswith("-") and a in ss_left and a in sweep_left and a in circuit_left
               and a in planar_left and a in validation_left and a in startup_left and a in serve_left]
    if unknown:
        pre.error(f"unrecognized arguments: {' '.join(unknown)}")
    status = causal_chain.main(causal_args)
    status |= stick_slip.main(ss_args)
    status |= sweep.main(sweep_args)
    status |= circuits.main(circuit_args)
    status |= double_pendulum.main(planar_args)
    status |= validation.main(validation_args)
    status |= startup.main(startup_args)
    status |= serve.main(serve_args)
    return status


if __name__ == "__main__":
    sys.exit(main())
