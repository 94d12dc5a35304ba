"""Exact time derivatives of the signals that drive speed sources.

A speed source imposes a flange's velocity from a signal; a body rigidly on that flange, or
a clutch locked to it, needs the flange's acceleration, the signal's time derivative. It is
taken structurally, as a Modelica tool differentiates the input equations (Pantelides): each
block on the signal's path declares the derivative of its outputs (``Phases.rate``: a sine's
cosine term, a gain times its input's rate, a speed sensor's acceleration of its island),
and those are evaluated in dependency order after the signals themselves. A block without
that declaration on such a path is a typed error before the run, naming it; nothing is
differentiated numerically.
"""
from __future__ import annotations

import numpy as np

from ..errors import DiagramError


class SignalRates:
    """Fills ``island.input_rates`` of every speed source driven by a signal from the
    derivative of that signal. ``rated``: ``(part, island input)`` pairs."""

    def __init__(self, plan, rated):
        blocks = plan.diagram.blocks
        writer = {slot: index for (index, _), slot in plan.slot_of.items()}
        targets = {}                         # signal slot -> [(part, island input)]
        for part, k in rated:
            targets.setdefault(dict(part.feeds)[k], []).append((part, k))
        self.R = [0.0] * len(plan.S)
        self.steps = []                      # (rate closure, [(part, input, slot)] known after it)
        state = {}

        def visit(index, needed_by):
            if state.get(index) == "done":
                return
            b, phases = blocks[index], plan.phases[index]
            if state.get(index) == "open" or phases.rate is None:
                why = ("its output depends on its own time derivative (a loop)" if state.get(index) == "open"
                       else f"a {b.type.type} block has no exact time derivative")
                raise DiagramError("underivable_speed_input", f"block {b.id!r} drives the speed source "
                                   f"{needed_by!r}, which needs the time derivative of its input (the acceleration "
                                   f"of the flange it drives), but {why}: drive the speed through blocks with "
                                   "known derivatives (sources, gain, sum, mechanical sensors) or use an "
                                   "Accelerate source", block=b.id, path=b.path)
            state[index] = "open"
            for slot in list(plan.input_slots[index]) + list(phases.rate_reads):
                if slot is not None:
                    visit(writer[slot], needed_by)
            state[index] = "done"
            known = [(part, k, slot) for (w, _), slot in plan.slot_of.items() if w == index
                     for part, k in targets.get(slot, ())]
            self.steps.append((phases.rate, known))

        for slot, pairs in targets.items():
            owner = pairs[0][0].names.get(pairs[0][0].island.input_names[pairs[0][1]].split(".")[0], "?")
            visit(writer[slot], owner)

    def __call__(self):
        R = self.R
        for rate, known in self.steps:
            rate(R)
            for part, k, slot in known:
                value = R[slot]
                part.island.input_rates[k] = value if isinstance(value, float) else float(np.ravel(value)[0])
