"""Exact time derivatives of the signals an island needs differentiated.

A speed source imposes a flange's velocity from a signal; a body rigidly on that flange, or
a clutch locked to it, needs the flange's acceleration, the signal's time derivative. A
signal-driven voltage source across a capacitor needs it too (the capacitor current is
C dv/dt). It is taken structurally, as a Modelica tool differentiates the input equations
(Pantelides): each block on the signal's path declares the derivative of its outputs
(``Phases.rate``: a sine's cosine term, a gain times its input's rate, a speed sensor's
acceleration of its island), and the island evaluates that chain, in dependency order,
whenever it reads its inputs (``IslandPart.fill``). A block without that declaration on
such a path is a typed error before the run, naming it; nothing is differentiated
numerically.
"""
from __future__ import annotations

import numpy as np

from ..errors import DiagramError


class SignalRates:
    """The rates of the inputs ``inputs`` of island part ``part``: calling it writes them
    into ``part.island.input_rates``."""

    def __init__(self, plan, part, inputs):
        blocks = plan.diagram.blocks
        writer = {slot: index for (index, _), slot in plan.slot_of.items()}
        feeds = dict(part.feeds)
        self.targets = [(k, feeds[k]) for k in inputs]
        self.island = part.island
        self.R = [0.0] * len(plan.S)
        self.chain = []                      # rate closures, writers before readers
        state = {}
        needed_by = part.names.get(part.island.input_names[inputs[0]].split(".")[0], "?")

        def visit(index):
            if state.get(index) == "done":
                return
            b, phases = blocks[index], plan.phases[index]
            if state.get(index) == "open" or phases.rate is None:
                why = ("its output depends on its own time derivative (a loop)" if state.get(index) == "open"
                       else f"a {b.type.type} block has no exact time derivative")
                raise DiagramError("underivable_input", f"block {b.id!r} drives {needed_by!r}, which needs the "
                                   f"time derivative of its input (a speed source's flange acceleration, a "
                                   f"source's current into a capacitor), but {why}: drive it through blocks with "
                                   "known derivatives (sources, gain, sum, mechanical sensors), or use an "
                                   "Accelerate source / a series resistance", block=b.id, path=b.path)
            state[index] = "open"
            for slot in list(plan.input_slots[index]) + list(phases.rate_reads):
                if slot is not None:
                    visit(writer[slot])
            state[index] = "done"
            self.chain.append(phases.rate)

        for _, slot in self.targets:
            visit(writer[slot])

    def __call__(self):
        R, rates = self.R, self.island.input_rates
        for rate in self.chain:
            rate(R)
        for k, slot in self.targets:
            value = R[slot]
            rates[k] = value if isinstance(value, float) else float(np.ravel(value)[0])


def attach_rates(plan, parts) -> None:
    """Give every part whose island needs input derivatives its ``SignalRates``."""
    for part in parts:
        needed = [k for k in getattr(part, "rate_inputs", ())]
        if needed:
            part.refresh_rates = SignalRates(plan, part, needed)
