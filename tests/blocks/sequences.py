"""Input sequences for block tests: ``play`` makes a block that outputs given values one per
sample from constants, steps and a sum (exact for integers and halves), ``drive_sequence`` /
``column`` / ``column_array`` record a block fed by one; ``vec_ramp`` / ``vec_wires`` a vector
of ramps through a mux."""
from tests.util import blk, diagram, record, trace, wire

DT = 0.1


def play(values, id="seq", dt=DT):
    """(blocks, connections) whose block ``id`` outputs ``values[k]`` at sample k: a
    constant for the first value plus one scaled step per change, summed. Exact for
    integers and halves."""
    blocks = [blk(f"{id}_0", "constant", Value=values[0])]
    conns, terms = [], [f"{id}_0"]
    for k in range(1, len(values)):
        delta = values[k] - values[k - 1]
        if delta:
            blocks += [blk(f"{id}_s{k}", "step", Time=(k - 0.5) * dt), blk(f"{id}_g{k}", "gain", Gain=delta)]
            conns.append(wire(f"{id}_s{k}", f"{id}_g{k}"))
            terms.append(f"{id}_g{k}")
    blocks.append(blk(id, "sum", inputs=len(terms), Inputs="+" * len(terms)))
    conns += [wire(t, id, 0, j) for j, t in enumerate(terms)]
    return blocks, conns


def drive_sequence(block, values, dt=DT):
    """Record ``block`` (id 'b') fed by a sequence; returns the N x W output."""
    blocks, conns = play(values, dt=dt)
    d = diagram(blocks + [block, record()], conns + [wire("seq", "b"), wire("b", "w")],
                dt=dt, duration=(len(values) - 1) * dt)
    return trace(d)


def column(block, values):
    return drive_sequence(block, values)[:, 0].tolist()


def vec_ramp(slopes):
    """Blocks making 'g' = [s0 t, s1 t, ...] from ramps and a mux (no vector gain needed)."""
    return [blk(f"r{i}", "ramp", slope=s) for i, s in enumerate(slopes)] + [blk("g", "mux", inputs=len(slopes))]


def vec_wires(slopes):
    return [wire(f"r{i}", "g", 0, i) for i in range(len(slopes))]


def column_array(block, values, dt=DT):
    return drive_sequence(block, values, dt=dt)[:, 0]
