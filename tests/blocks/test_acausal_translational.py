"""acausal_translational: laws of the translational blocks (end stops, the brake), the
order independence of an MSL friction diagram, and the parameter ranges of the friction
blocks beside their rotational twins (Clutch, RotBrake), checked through whole diagrams
(simulate)."""
import random

import numpy as np
import pytest
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


# ---- parameter ranges of the friction blocks
# The seed page of the mass with stops documents F_Coulomb and F_Stribeck as zero or positive
# (MSL types them SI.Force, without a bound: negative ones ran, friction that pushes), m as
# MSL's SI.Mass (min 0); the clutch's page fn_max >= 0, peak >= 1. MSL's mu_pos table holds
# sliding speeds (w, or v for the Brake) >= 0 and friction coefficients, bounded like the constant mu.

def _friction_diagram(block_type, **params):
    """The block on a body (Clutch: between two), its normal force 1 from a constant."""
    rotational = block_type in ("Clutch", "RotBrake")
    body = "Inertia" if rotational else "Mass"
    blocks = [blk("x", block_type, **params), blk("J", body)]
    if block_type == "MassWithStopAndFriction":
        return diagram(blocks[:1] + [blk("F", "SineForce", Amplitude=25.0, Frequency=0.25)],
                       [pin("F", "flange", "x", "flange_a")], duration=2.0, solver="ode45")
    conns = [wire("one", "x"), pin("J", "flange", "x", "a" if block_type == "Clutch" else "flange")]
    blocks.append(blk("one", "constant", Value=1.0))
    if block_type == "Clutch":
        blocks.append(blk("J2", "Inertia", w0=1.0))
        conns.append(pin("J2", "flange", "x", "b"))
    return diagram(blocks, conns, duration=1.0, solver="ode45")


BAD_FRICTION = [("MassWithStopAndFriction", "F_Coulomb", -1.0, "pushes the sliding mass"),
                ("MassWithStopAndFriction", "F_Stribeck", -20.0, "friction added at low speed"),
                ("MassWithStopAndFriction", "F_Coulomb", "-2*0.5", "pushes the sliding mass"),   # an expression
                ("MassWithStopAndFriction", "m", 0.0, "no longer determines der(v)"),
                ("MassWithStopAndFriction", "F_prop", -1.0, None), ("MassWithStopAndFriction", "fexp", -1.0, None)]
for _type in ("Clutch", "Brake", "RotBrake"):
    BAD_FRICTION += [(_type, "mu_pos", [[0.0, 0.5], [1.0, -0.2]], "negative coefficient"),
                     (_type, "mu_pos", [[-1.0, 0.5], [1.0, 0.2]],
                      "sliding speeds (v >= 0)" if _type == "Brake" else "sliding speeds (w >= 0)"),
                     (_type, "fn_max", -1.0, None), (_type, "peak", 0.5, None), (_type, "cgeo", -1.0, None),
                     (_type, "mu", -0.5, None)]


@pytest.mark.parametrize("block_type, param, value, why", BAD_FRICTION,
                         ids=[f"{t}.{p}={v}" for t, p, v, _ in BAD_FRICTION])
def test_a_friction_parameter_out_of_its_range_is_refused(block_type, param, value, why):
    extra = {} if block_type == "MassWithStopAndFriction" else {"fn_max": 1.0}
    with pytest.raises(nc.DiagramError) as err:
        nc.simulate(_friction_diagram(block_type, **dict(extra, **{param: value})))
    assert err.value.code == "param_range"
    assert (err.value.block, err.value.param, err.value.path) == ("x", param, f"/blocks/0/params/{param}")
    if why is not None:      # the range says why
        assert why in err.value.message


@pytest.mark.parametrize("block_type, params", [
    ("MassWithStopAndFriction", {"F_Coulomb": 0.0, "F_Stribeck": 0.0}), ("Clutch", {"fn_max": 0.0, "cgeo": 0.0}),
    ("Brake", {"mu_pos": [[0.0, 0.0], [1.0, 0.3]]}), ("RotBrake", {"peak": 1.0, "mu": 0.0})])
def test_friction_parameters_at_the_edge_of_their_range_run(block_type, params):
    extra = {} if block_type == "MassWithStopAndFriction" else {"fn_max": 1.0}
    assert nc.simulate(_friction_diagram(block_type, **dict(extra, **params)))["status"] == "ok"


def test_a_malformed_mu_table_is_named_at_its_pointer():
    with pytest.raises(nc.DiagramError) as err:
        nc.simulate(_friction_diagram("RotBrake", fn_max=1.0, mu_pos=[[0.0, 0.5, 1.0]]))
    assert err.value.code == "param_value"
    assert (err.value.block, err.value.path) == ("x", "/blocks/0/params/mu_pos")
