"""One block type alone in a diagram, for tests that go over every type: constants on its
signal inputs, terminators on its outputs, each physical pin tied down by its domain's
anchor (a Ground, a FixedTemperature, a Fixed, a RotFixed, a PlanarFixed with a
PlanarWorld), so that what the block's own params do decides whether the plan compiles."""
from __future__ import annotations

from nflow_compat.manifests import block_types
from tests.subsystem_bodies import minimal_port_in, minimal_port_out, minimal_sub
from tests.util import blk, diagram, pin, wire

ANCHORS = {"electrical": ("Ground", "p"), "thermal": ("FixedTemperature", "port"),
           "translational": ("Fixed", "flange"), "rotational": ("RotFixed", "flange"),
           "planar": ("PlanarFixed", "frame")}

# what a lone causal block needs beyond its defaults to compile: params, and what feeds input 0
_NEEDS = {
    "fromWorkspace": ({"times": [0, 1], "values": [0, 1]}, None),
    "busSelector": ({"SelectedSignals": ["a"]}, "bus"),
    "busAssignment": ({"AssignedSignals": ["a"]}, "bus"),
}


def lone(block_type: str, params: dict | None = None, solver: str = "discrete") -> dict:
    """A diagram of ``block_type`` (id ``X``) with ``params`` over its defaults."""
    bt = block_types()[block_type]
    if bt.acausal:
        domains = sorted(set(bt.pins.values()))
        blocks = [blk(f"anchor_{d}", ANCHORS[d][0]) for d in domains] + [blk("X", block_type, params)]
        if "planar" in domains:
            blocks.append(blk("world", "PlanarWorld"))
        return diagram(blocks, [pin("X", p, f"anchor_{d}", ANCHORS[d][1]) for p, d in bt.pins.items()],
                       solver=solver)
    needed, feed = _NEEDS.get(block_type, ({}, None))
    params = dict(needed, **(params or {}))
    if block_type == "subsystem":
        body = ([minimal_port_in(), blk("g", "gain"), minimal_port_out()], [wire("in1", "g"), wire("g", "out1")])
        block, n_in, n_out = minimal_sub("X", *body, **params), 1, 1
    else:
        block, n_in, n_out = blk("X", block_type, params), bt.inputs, bt.outputs
    blocks = [blk(f"c{k}", "constant", Value=0.5) for k in range(n_in)]
    conns = [wire(f"c{k}", "X", 0, k) for k in range(n_in)]
    if feed == "bus":
        blocks[0] = blk("c0", "busCreator", inputs=1, MemberNames=["a"])
        blocks.append(blk("a", "constant", Value=0.5))
        conns.append(wire("a", "c0"))
    blocks += [block] + [blk(f"t{k}", "terminator") for k in range(n_out)]
    conns += [wire("X", f"t{k}", k, 0) for k in range(n_out)]
    return diagram(blocks, conns, solver=solver)
