"""Subsystems with only the keys they need (no names, no declared port counts), and two
bodies for function-call and iterator subsystems: a call counter and a running sum of the
iteration number."""
from tests.util import blk, wire


def minimal_port_in(id="in1"):
    return blk(id, "labelSource", isExternalPort=True)


def minimal_port_out(id="out1"):
    return blk(id, "labelSink", isExternalPort=True)


def minimal_sub(id, blocks, conns, ins=("in1",), outs=("out1",), **params):
    """A subsystem with only the keys it needs (no names, no declared port counts)."""
    return blk(id, "subsystem", dict(params, externalInputs=[{"id": i, "name": i} for i in ins],
                                     externalOutputs=[{"id": o, "name": o} for o in outs],
                                     subsystem={"blocks": blocks, "connections": conns}))


def counter_body():
    """out = number of calls so far (the sum of a delay and 1, per call)."""
    return ([blk("one", "constant", Value=1), blk("s", "sum", inputs=2), blk("d", "unitDelay"), minimal_port_out()],
            [wire("one", "s", 0, 0), wire("d", "s", 0, 1), wire("s", "d"), wire("s", "out1")])


def running_sum_body():
    """acc = delay(acc) + iteratorNumber; out = acc."""
    return ([blk("n", "iteratorNumber"), blk("acc", "sum", inputs=2), blk("d", "unitDelay"), minimal_port_out()],
            [wire("n", "acc", 0, 0), wire("d", "acc", 0, 1), wire("acc", "d"), wire("acc", "out1")])
