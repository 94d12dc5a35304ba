"""fileSource / fileSink diagrams for tests: a fileSource recorded (``played``), a source
into a fileSink (``sink_diagram``), and the typed error a call raises (``error``)."""
import numpy as np
import pytest

import nflow_compat as nc
from tests.util import blk, diagram, record, wire


def source_diagram(params, dt=0.1, duration=0.7, **kw):
    return diagram([blk("src", "fileSource", params), record()], [wire("src", "w")], dt=dt, duration=duration, **kw)


def played(params, base_dir=None, **kw):
    res = nc.simulate(source_diagram(params, **kw), base_dir=base_dir)
    return np.asarray(res["workspace"]["y"], dtype=float), res


def sink_diagram(src, name="out.csv", sink_id="fs", duration=0.3, **params):
    return diagram([dict(src, id="s"), blk(sink_id, "fileSink", FileName=name, **params)],
                   [wire("s", sink_id)], duration=duration)


def error(call):
    with pytest.raises(nc.NFlowError) as info:
        call()
    return info.value
