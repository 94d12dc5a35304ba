"""Small builders so tests state diagrams in a line or two."""
from __future__ import annotations

import os
import select
import time

import numpy as np

import nflow_compat as nc


def blk(id, type, params=None, inputs=None, outputs=None, **kw):
    b = {"id": id, "type": type, "params": dict(params or {}, **kw)}
    if inputs is not None:
        b["inputs"] = inputs
    if outputs is not None:
        b["outputs"] = outputs
    return b


def wire(src, dst, from_index=0, to_index=0):
    return {"from": src, "to": dst, "fromIndex": from_index, "toIndex": to_index}


def diagram(blocks, connections, dt=0.1, duration=1.0, solver="discrete", variables=None, **extra):
    return dict({"blocks": blocks, "connections": connections, "sampleTime": dt, "duration": duration,
                 "solver": solver, "variables": variables or {}}, **extra)


def record(id="w", name="y"):
    return blk(id, "toWorkspace", VariableName=name, SaveFormat="Array")


def pin(a, a_pin, b, b_pin):
    """A physical connection: pin ``a_pin`` of block ``a`` to pin ``b_pin`` of block ``b``."""
    return {"from": a, "fromPin": a_pin, "to": b, "toPin": b_pin}


def links(*pairs):
    """Physical connections written ``'block.pin block.pin'``."""
    return [pin(*a.split("."), *b.split(".")) for a, b in (pair.split() for pair in pairs)]


def rec(src, name):
    """A recorder of output 0 of ``src`` under ``name``: ([block], [connection])."""
    return [record(f"rec_{name}", name)], [wire(src, f"rec_{name}")]


def run(d) -> dict:
    return nc.simulate(d)


def trace(d, name="y") -> np.ndarray:
    """The recorded N x W array of ``name``."""
    return np.asarray(nc.simulate(d)["workspace"][name], dtype=float)


def through(block, *sources, dt=0.1, duration=1.0, solver="discrete"):
    """Drive ``block`` (a blk dict with id 'b') from source blocks (ids s0, s1, ...) on its
    inputs in order, record output 0; returns (time, N x W values)."""
    blocks = [dict(s, id=f"s{k}") for k, s in enumerate(sources)] + [block, record()]
    conns = [wire(f"s{k}", block["id"], 0, k) for k in range(len(sources))] + [wire(block["id"], "w")]
    res = nc.simulate(diagram(blocks, conns, dt=dt, duration=duration, solver=solver))
    return np.asarray(res["time"]), np.asarray(res["workspace"]["y"], dtype=float)


def series(values, name="seq"):
    """A source block that plays ``values`` one per sample (repeatingSequenceStair)."""
    return blk(name, "repeatingSequenceStair", OutValues=list(values))


def constant(id, value):
    """A constant block ``id`` outputting ``value``."""
    return blk(id, "constant", Value=value)


def const(value):
    return constant("c", value)


def ramp(slope, start=0.0):
    return blk("r", "ramp", slope=slope, start=start)


def drive(block, sources: dict, duration=0.2, **kw):
    """``block`` (id 'b') with source blocks on the given input ports (others unconnected);
    returns the recorded N x W output."""
    blocks = [dict(src, id=f"s{port}") for port, src in sources.items()] + [block, record()]
    conns = [wire(f"s{port}", "b", 0, port) for port in sources] + [wire("b", "w")]
    return trace(diagram(blocks, conns, duration=duration, **kw))


def one(block, *values):
    """Output at t = 0 of ``block`` fed by constants ``values`` on ports 0, 1, ..."""
    return drive(block, {k: const(v) for k, v in enumerate(values)}, duration=0.1)[0]


def read_until(master, marker, timeout: float) -> bytes:
    """What a pseudo-terminal (its master fd) shows until ``marker`` (bytes, or a
    predicate of what was shown) or the end of its output or ``timeout`` s."""
    done = marker if callable(marker) else (lambda seen: marker in seen)
    seen, deadline = b"", time.monotonic() + timeout
    while not done(seen) and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen
