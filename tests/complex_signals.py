"""Complex signals for tests: a complex constant made by realImagToComplex from two
constants (``z_source``), a block driven by one (``complex_out``), and recorded complex
values read back as numpy complex arrays (``cvalues``)."""
from __future__ import annotations

import numpy as np

import nflow_compat as nc
from tests.util import blk, constant, diagram, record, wire


def z_source(re, im, id="z"):
    """Blocks making the complex signal ``re + j*im`` as block ``id`` (constants re_/im_)."""
    return [constant(f"{id}_re", re), constant(f"{id}_im", im), blk(id, "realImagToComplex")], \
        [wire(f"{id}_re", id, 0, 0), wire(f"{id}_im", id, 0, 1)]


def run_blocks(blocks, conns, duration=0.1, **kw) -> dict:
    return nc.simulate(diagram(blocks, conns, duration=duration, **kw))


def cvalues(value) -> np.ndarray:
    """A recorded workspace value (Array format) as a complex N x W array."""
    assert isinstance(value, dict) and set(value) == {"real", "imag"}, value
    re = np.asarray(value["real"], dtype=float)
    im = np.asarray(value["imag"], dtype=float)
    assert re.shape == im.shape
    return re + 1j * im if np.all(np.isfinite(re)) and np.all(np.isfinite(im)) else _exact(re, im)


def _exact(re, im):
    out = np.empty(re.shape, dtype=complex)
    out.real, out.imag = re, im
    return out


def complex_out(block, z, *extra, duration=0.1):
    """Output 0 of ``block`` (id 'b') with the complex constant ``z`` (a complex or a list
    of them) on input 0 and constants ``extra`` on inputs 1, 2...; complex N x W."""
    zs = np.atleast_1d(np.asarray(z, dtype=complex))
    re, im = zs.real.tolist(), zs.imag.tolist()
    blocks, conns = z_source(re if len(re) > 1 else re[0], im if len(im) > 1 else im[0])
    blocks += [constant(f"e{k}", v) for k, v in enumerate(extra, start=1)] + [block, record()]
    conns += [wire("z", "b", 0, 0)] + [wire(f"e{k}", "b", 0, k) for k in range(1, len(extra) + 1)]
    conns.append(wire("b", "w"))
    return run_blocks(blocks, conns, duration=duration)["workspace"]["y"]
