"""What each recorder's columns are: the signals it records, named after the blocks that
write them, with their units; the result carries them under ``columns`` (CONTRACT §4).

A recorder (a handler declaring ``Phases.records``: toWorkspace under ``workspace``, a
scope under ``scopes``) records its declared inputs in port order. Each input is one
signal: the output of the block that drives it, named by the block's id (``id.port`` for a
block with several outputs: the manifest's port name, else its number); a signal a
concatenating block makes (``Phases.parts``: mux, busCreator) is the signals of its
inputs, recursively, a bus member's given name naming its part. An unconnected input is a
column of its own. A signal's unit is its output port's (the manifest's ``outputUnits``;
"" when it has none or comes through a block that changes it). ``attached``: for a signal
of an acausal block (a sensor), the physical blocks it senses, whose events concern it
(``plot`` draws them on its panel).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Signal:
    """``width`` consecutive recorded columns written by one block output."""
    name: str
    width: int
    block: str | None = None     # the id of the block writing it (None: an unconnected input)
    port: int | None = None
    unit: str = ""
    attached: tuple = ()

    def column_names(self) -> list:
        """One name per column: the signal's name, ``name[k]`` (1-based) when it is wider."""
        return [self.name] if self.width == 1 else [f"{self.name}[{k + 1}]" for k in range(self.width)]

    def to_dict(self) -> dict:
        return {"name": self.name, "block": self.block, "port": self.port, "width": self.width, "unit": self.unit,
                "attached": list(self.attached)}


class _Namer:
    def __init__(self, plan):
        self.plan = plan
        self.blocks = plan.diagram.blocks
        self._attached = None

    def width(self, src) -> int:
        return int(getattr(self.plan.initial_signals[self.plan.slot_of[src]], "size", 1))

    def source(self, src, seen: frozenset) -> list:
        """The Signals making up output ``src`` = (block index, port)."""
        index, port = src
        block = self.blocks[index]
        width = self.width(src)
        parts = self.plan.phases[index].parts
        if parts is None or index in seen:
            names = block.type.output_names
            label = block.id if block.outputs <= 1 else f"{block.id}.{(names[port] if port < len(names) else '') or port}"
            return [Signal(label, width, block.id, port, block.type.output_unit(port), self.attached(index))]
        out = []
        for k, inner in enumerate(self.plan.sources[index][:block.inputs]):
            named = parts[k] if k < len(parts) else None
            if inner is None:
                out.append(Signal(named or f"{block.id}[input {k}, unconnected]", 1))
            elif named:
                out.append(Signal(str(named), self.width(inner), self.blocks[inner[0]].id, inner[1],
                                  self.blocks[inner[0]].type.output_unit(inner[1]), self.attached(inner[0])))
            else:
                out += self.source(inner, seen | {index})
        if sum(s.width for s in out) != width:     # the parts do not account for the output: one signal
            return [Signal(block.id, width, block.id, port)]
        return out

    def inputs(self, index: int) -> list:
        """What a recorder's declared inputs carry, in column order."""
        out = []
        block = self.blocks[index]
        for k, src in enumerate(self.plan.sources[index][:max(1, block.inputs)]):
            out += [Signal(f"input {k} (unconnected)", 1)] if src is None else self.source(src, frozenset())
        return out

    def attached(self, index: int) -> tuple:
        """The physical blocks block ``index`` (a sensor) senses: the acausal blocks without
        signal outputs on every node its pins are on (a relative sensor across a clutch: the
        clutch), else on any of them."""
        block = self.blocks[index]
        if not block.type.acausal:
            return ()
        if self._attached is None:
            from ..physical.nodes import join_pins    # scipy's DisjointSet: only for a diagram with physical links
            links = [((k.a, k.a_pin), (k.b, k.b_pin)) for k in self.plan.diagram.links]
            self._attached = {}
            for (i, _), node in join_pins(sorted({p for link in links for p in link}), links).items():
                self._attached.setdefault(i, set()).add(node)
        nodes = self._attached.get(index, set())
        near = [j for j, theirs in self._attached.items() if j != index and theirs & nodes
                and not self.blocks[j].outputs and not self.blocks[j].type.outputs]
        every = [j for j in near if nodes <= self._attached[j]]
        return tuple(sorted(self.blocks[j].id for j in (every or near)))


def recorded_signals(plan) -> dict:
    """``(section, key)`` -> the Signals of each recorder of a compiled plan, in column order."""
    namer = _Namer(plan)
    return {p.records: namer.inputs(i) for i, p in enumerate(plan.phases) if p.records is not None}


def columns(recorded: dict) -> dict:
    """The result's ``columns`` from ``recorded_signals``: section -> key -> the recorder's
    signals as dicts (made anew for each result: writing a result consumes its dicts)."""
    out: dict = {}
    for (section, key), signals in recorded.items():
        out.setdefault(section, {})[key] = [s.to_dict() for s in signals]
    return out
