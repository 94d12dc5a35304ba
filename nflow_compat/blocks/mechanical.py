"""nflow's acausal translational and rotational libraries (and MSL's friction components).

These blocks do not compute per step like causal ones: the compiler lowers them onto 1-D
mechanical networks (``physical.islands``), and each island is integrated by the solver
as one continuous part. What remains per block is its interface to the causal diagram:
signal inputs feed the island; sensor outputs are written in OUTPUT from the island's
state (no direct feedthrough).
"""
from __future__ import annotations

from ..physical.islands import LOWERED_TYPES, lower
from ..physical.planar import SENSORS as PLANAR_SENSORS
from . import Phases, block


def _sensor_widths(block, in_widths):
    return [1] * block.outputs


def _build(io):
    member = io.physical   # its island's feeds are wired by physical.islands.lower (the handlers' ``lower``)
    phases = Phases(part=member.part if member.owner else None)
    readers = [(io.outs[port], reader) for port, reader in member.readers.items() if port < len(io.outs)]
    if readers:
        S = io.S
        reads = [(o, reader.read) for o, reader in readers]

        def output():
            for o, read in reads:
                S[o] = read()
        # pure when every reader only reads its island: the engine may then skip this
        # closure where nothing but recorders reads it (engine.stages)
        phases.pure = all(reader.pure for _, reader in readers)
        linear = {o: reader.linear for o, reader in readers}
        if all(term is not None for term in linear.values()):
            # every output is a fixed linear function of the island state: the engine may
            # compute the recorded values in bulk (engine.recording)
            phases.linear = linear
        # outputs that are functions of time and the island's state alone: likewise
        phases.of_state = {o: reader.of_state for o, reader in readers if reader.of_state is not None} or None
        rates = [(io.outs[port], reader.read) for port, reader in member.rates.items() if port < len(io.outs)]
        if rates:
            def rate(R):
                for o, read in rates:
                    R[o] = read()
            phases.rate, phases.rate_reads = rate, member.rate_reads
        extra = tuple(sorted({slot for _, reader in readers for slot in reader.reads}))
        if extra:
            # a value computed from what drives the island right now: after its writers
            phases.algebraic, phases.reads = output, extra
        else:
            phases.output = output
    return phases


for _type in LOWERED_TYPES:
    # a planar sensor only reads its island's state: solver stages may skip it where nothing
    # but recorders reads it (engine.stages)
    block(_type, widths=_sensor_widths, feedthrough=False, pure=_type in PLANAR_SENSORS, lower=lower)(_build)
