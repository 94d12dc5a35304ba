"""acausal_translational: laws of the translational blocks (end stops, the brake) and the
order independence of an MSL friction diagram, checked through whole diagrams (simulate)."""
import random

import numpy as np
from hypothesis import assume, given, settings, strategies as st

import nflow_compat as nc
from tests import goldens
from tests.util import blk, diagram, pin, rec, wire


def column(result, name):
    return np.asarray(result["workspace"][name], dtype=float)[:, 0]


def test_results_do_not_depend_on_the_order_of_blocks_or_connections():
    d = goldens.load(goldens.ROOT / "msl" / "translational_friction.json")["diagram"]
    d = dict(d, duration=1.2, sampleTime=0.001)
    base = nc.simulate_json(__import__("orjson").dumps(d))
    rng = random.Random(3)
    for _ in range(3):
        shuffled = dict(d, blocks=rng.sample(d["blocks"], len(d["blocks"])),
                        connections=rng.sample(d["connections"], len(d["connections"])))
        for c in shuffled["connections"]:
            if "fromPin" in c and rng.random() < 0.5:   # physical connections are undirected
                c["from"], c["to"], c["fromPin"], c["toPin"] = c["to"], c["from"], c["toPin"], c["fromPin"]
        a = nc.simulate(shuffled)
        b = __import__("orjson").loads(base)
        assert a["workspace"] == b["workspace"] and a["events"] == b["events"]


def stop_mass(amplitude, frequency, smax, smin, length, solver):
    blocks = [blk("drive", "sine", Amplitude=amplitude, Frequency=frequency), blk("force", "Force"),
              blk("m", "MassWithStopAndFriction", smax=smax, smin=smin, L=length, F_Coulomb=2, F_Stribeck=3),
              blk("pos", "PositionSensor"), blk("vel", "SpeedSensor")]
    conns = [wire("drive", "force"), pin("force", "flange", "m", "flange_a"), pin("pos", "flange", "m", "flange_b"),
             pin("vel", "flange", "m", "flange_a")]
    for s, n in (("pos", "s"), ("vel", "v")):
        b, c = rec(s, n)
        blocks += b
        conns += c
    return diagram(blocks, conns, dt=0.01, duration=2.0, solver=solver)


@settings(max_examples=12, deadline=None)
@given(amplitude=st.floats(0, 80), frequency=st.floats(0.2, 3), smax=st.floats(0.05, 1), width=st.floats(0.1, 1.5),
       length=st.floats(0, 0.04), solver=st.sampled_from(["dae", "ode45", "ode4"]))
def test_a_stop_is_never_exceeded(amplitude, frequency, smax, width, length, solver):
    smin = smax - width
    assume(smin + length / 2 <= 0 <= smax - length / 2)
    res = nc.simulate(stop_mass(amplitude, frequency, smax, smin, length, solver))
    s_right = column(res, "s")                   # flange_b = s + L/2
    assert s_right.max() <= smax + 1e-9 and s_right.min() >= smin + length - 1e-9
    assert all(e["block"] == "m" for e in res["events"])


def test_stops_are_hit_and_held():
    res = nc.simulate(stop_mass(60, 1, 0.3, -0.3, 0.02, "dae"))
    kinds = [(e["kind"], e["from"], e["to"]) for e in res["events"]]
    assert kinds[:3] == [("mode", "stuck", "forward"), ("stop", "forward", "stop"), ("mode", "forward", "stuck")]
    s, v = column(res, "s"), column(res, "v")
    assert s.max() == 0.3 and abs(s.min() + 0.28) < 1e-12
    at_stop = np.isclose(s, 0.3, atol=1e-12)
    assert at_stop.any() and np.all(np.abs(v[at_stop]) < 1e-9)   # inelastic: held at rest


@settings(max_examples=10, deadline=None)
@given(v0=st.floats(-5, 5), fn=st.floats(0, 3), mu=st.floats(0.05, 1), m=st.floats(0.2, 5))
def test_a_brake_never_adds_energy(v0, fn, mu, m):
    blocks = [blk("f", "constant", Value=fn), blk("brake", "Brake", fn_max=4, mu=mu), blk("m", "Mass", m=m, v0=v0),
              blk("vel", "SpeedSensor")]
    conns = [wire("f", "brake"), pin("brake", "flange", "m", "flange"), pin("vel", "flange", "m", "flange")]
    b, c = rec("vel", "v")
    res = nc.simulate(diagram(blocks + b, conns + c, dt=0.05, duration=3.0, solver="dae"))
    energy = 0.5 * m * column(res, "v") ** 2
    assert np.all(np.diff(energy) <= 1e-9)
    # stuck means stuck: once at rest it stays at rest (no other force acts)
    v = column(res, "v")
    rest = np.nonzero(np.abs(v) < 1e-12)[0]
    if rest.size:
        assert np.all(np.abs(v[rest[0]:]) < 1e-9)
