"""Every network element kind of nflow_compat.physical against a closed form.

Each test builds a small network with the Python API, integrates it with the event-locating
driver and compares with a solution derived by hand (given in the test's docstring or
comments) or, for linear systems without a short closed form, with a matrix exponential of
the hand-written state matrix.  The expected numbers never come from the code under test.
"""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.linalg import expm

from nflow_compat.engine.hybrid import HybridGroup, integrate_hybrid, make_grid
from nflow_compat.errors import DiagramError, SimulationError
from nflow_compat.physical import Network
from nflow_compat.physical import elements as elm

TIGHT = dict(rtol=1e-10, atol=1e-12)


def run(isl, dt, duration, method="ode45", probes=(), **kw):
    """Integrate one island; returns (result, {probe label: array})."""
    readers = [(label, isl.probe(*spec)) for label, spec in probes]
    rec = {label: [] for label, _ in readers}

    def sample(t, x):
        for label, p in readers:
            rec[label].append(p(t, x))

    opts = dict(TIGHT)
    opts.update(kw)
    res = integrate_hybrid(isl, isl.x0, make_grid(dt, duration), method=method, sample=sample, **opts)
    return res, {k: np.asarray(v) for k, v in rec.items()}


class Affine(elm.TimeFunction):
    """``a + b*t``, with its exact rate (a speed source's signal must have one)."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __call__(self, t):
        return self.a + self.b * t

    def rate(self, t):
        return self.b


def one(net):
    isl, = net.build()
    return isl


# --------------------------------------------------------------------------------------
# Linear compliant elements and bodies

@pytest.mark.parametrize("method", ["ode45", "dae"])
def test_spring_mass_oscillation_period(method):
    """m s'' = -c s: s = s0 cos(w t), w = sqrt(c/m) = 5 (c 50, m 2)."""
    net = Network("translational")
    net.fixed("g", 0.0)
    net.spring("k", c=50.0)            # nflow Spring's k
    net.mass("m", m=2.0, s0=0.1, v0=0.0)
    net.connect("g.flange", "k.a")
    net.connect("k.b", "m.flange")
    isl = one(net)
    res, rec = run(isl, 0.01, 2.0, method=method, probes=[("f", ("f", "k"))])
    t = res.t
    assert np.allclose(res.x[:, 0], 0.1 * np.cos(5.0 * t), atol=1e-7)
    assert np.allclose(res.x[:, 1], -0.5 * np.sin(5.0 * t), atol=1e-6)
    # spring force (MSL sign: tension c*(s_b - s_a)) and its zero crossings every T/2
    assert np.allclose(rec["f"], 50.0 * 0.1 * np.cos(5.0 * t), atol=1e-5)


def test_spring_rel0_and_rotational_spring():
    """MSL s_rel0 / phi_rel0: equilibrium at s_rel = rel0; a RotSpring + Inertia
    oscillates about phi = rel0 with w = sqrt(c/J)."""
    net = Network("rotational")
    net.fixed("g", 0.0)
    net.spring("k", c=9.0, rel0=0.5)
    net.inertia("J", J=1.0, phi0=0.5, w0=0.3)
    net.connect("g.flange", "k.flange_a")
    net.connect("k.flange_b", "J.flange")
    isl = one(net)
    res, _ = run(isl, 0.05, 2.0)
    assert np.allclose(res.x[:, 0], 0.5 + 0.1 * np.sin(3.0 * res.t), atol=1e-8)


def test_damper_decay():
    """m v' = -d v: v = v0 exp(-d t/m), s = s0 + v0 m/d (1 - exp(-d t/m))."""
    net = Network("translational")
    net.fixed("g")
    net.damper("d", d=3.0)
    net.mass("m", m=1.5, s0=0.2, v0=2.0)
    net.connect("g.flange", "d.b")
    net.connect("d.a", "m.flange")
    res, rec = run(one(net), 0.05, 2.0, probes=[("f", ("f", "d"))])
    e = np.exp(-2.0 * res.t)
    assert np.allclose(res.x[:, 1], 2.0 * e, atol=1e-8)
    assert np.allclose(res.x[:, 0], 0.2 + 1.0 * (1.0 - e), atol=1e-8)
    # damper between m (flange_a) and ground (flange_b): v_rel = 0 - v, f = d*v_rel
    assert np.allclose(rec["f"], -3.0 * 2.0 * e, atol=1e-7)


def test_spring_damper_matches_matrix_exponential():
    """Damped oscillator m s'' = -c s - d s' against expm of [[0,1],[-c/m,-d/m]]."""
    m, c, d = 0.7, 12.0, 0.9
    net = Network("translational")
    net.fixed("g")
    net.spring_damper("kd", c=c, d=d)
    net.mass("m", m=m, s0=0.3, v0=-1.0)
    net.connect("g.flange", "kd.a")
    net.connect("kd.b", "m.flange")
    res, _ = run(one(net), 0.1, 3.0)
    A = np.array([[0.0, 1.0], [-c / m, -d / m]])
    ref = np.array([expm(A * t) @ [0.3, -1.0] for t in res.t])
    assert np.allclose(res.x, ref, atol=1e-8)


def test_floating_island_is_free_motion_not_an_error():
    """Two masses joined by a spring, no Fixed: the centre of mass drifts at constant speed,
    the stretch oscillates with w = sqrt(c/mu), mu = m1 m2/(m1+m2)."""
    m1, m2, c = 1.0, 3.0, 12.0
    net = Network("translational")
    net.mass("a", m=m1, s0=0.0, v0=1.0)
    net.spring("k", c=c, rel0=1.0)
    net.mass("b", m=m2, s0=1.2, v0=0.0)
    net.connect("a.flange", "k.a")
    net.connect("k.b", "b.flange")
    res, _ = run(one(net), 0.05, 3.0)
    xa, xb, va, vb = res.x.T
    vcm = (m1 * 1.0) / (m1 + m2)
    assert np.allclose((m1 * xa + m2 * xb) / (m1 + m2), 0.9 + vcm * res.t, atol=1e-8)
    w = math.sqrt(c * (m1 + m2) / (m1 * m2))
    stretch = xb - xa - 1.0                     # y'' = -w^2 y, y0 = 0.2, y0' = -1
    assert np.allclose(stretch, 0.2 * np.cos(w * res.t) - (1.0 / w) * np.sin(w * res.t), atol=1e-8)


def test_mass_with_weight_falls_freely():
    """m s'' = -m g: s = s0 + v0 t - g t^2/2 (independent of m)."""
    net = Network("translational")
    net.mass_with_weight("m", m=3.0, g=9.81, s0=10.0, v0=2.0)
    res, _ = run(one(net), 0.1, 1.0)
    assert np.allclose(res.x[:, 0], 10.0 + 2.0 * res.t - 0.5 * 9.81 * res.t ** 2, atol=1e-9)


def test_sliding_mass_length_sets_flange_positions():
    net = Network("translational")
    net.sliding_mass("m", m=1.0, L=0.4, s0=1.0, v0=0.5)
    isl = one(net)
    x = isl.x0
    assert isl.probe("s", "m.flange_a")(0.0, x) == pytest.approx(0.8)
    assert isl.probe("s", "m.flange_b")(0.0, x) == pytest.approx(1.2)
    assert isl.probe("s", "m.flange")(0.0, x) == pytest.approx(1.0)
    assert isl.probe("v", "m.flange_b")(0.0, x) == pytest.approx(0.5)


# --------------------------------------------------------------------------------------
# Rigid ties

def test_gear_ratio_and_reflected_inertia():
    """phi_a = r phi_b; torque T on side a: (J2 + r^2 J1) phi_b'' = r T."""
    r, J1, J2, T = 4.0, 2.0, 5.0, 3.0
    net = Network("rotational")
    net.constant_torque("T", T)
    net.inertia("J1", J=J1)
    net.ideal_gear("gear", ratio=r)
    net.inertia("J2", J=J2)
    net.connect("T.flange", "J1.flange", "gear.a")
    net.connect("gear.b", "J2.flange")
    isl = one(net)
    assert isl.state_names == ["J1.phi", "J1.w"]          # one degree of freedom
    assert isl.mass[0] == pytest.approx(J1 + J2 / r ** 2)  # J2 reflected to side a
    alpha_b = r * T / (J2 + r ** 2 * J1)
    res, rec = run(isl, 0.1, 1.0, probes=[("pb", ("phi", "J2")), ("wa", ("w", "gear.a")),
                                          ("wb", ("w", "gear.b"))])
    assert np.allclose(rec["pb"], 0.5 * alpha_b * res.t ** 2, atol=1e-10)
    assert np.allclose(rec["wa"], r * rec["wb"], atol=1e-10)
    assert np.allclose(res.x[:, 0], 0.5 * r * alpha_b * res.t ** 2, atol=1e-10)


def test_lever_and_pulley_ratios():
    """Lever s_a = r s_b: a force F at b drives a mass m at a with s_a'' = F/(r m);
    the lever's arm ratio scales the force by 1/r."""
    r, m, F = 2.5, 0.8, 4.0
    for method in ("lever", "pulley"):
        net = Network("translational")
        net.mass("m", m=m)
        getattr(net, method)("lv", ratio=r)
        net.constant_force("F", F)
        net.connect("m.flange", "lv.a")
        net.connect("lv.b", "F.flange")
        res, rec = run(one(net), 0.1, 1.0, probes=[("sb", ("s", "lv.b"))])
        acc = F / (r * m)
        assert np.allclose(res.x[:, 0], 0.5 * acc * res.t ** 2, atol=1e-10)
        assert np.allclose(rec["sb"], res.x[:, 0] / r, atol=1e-10)


def test_rod_offsets_and_rigid_pair():
    """MSL Rod: s_b = s_a + L; two masses joined by a rod move as one (a = F/(m1+m2))."""
    net = Network("translational")
    net.mass("m1", m=1.0, s0=1.0)
    net.rod("rod", L=0.3)
    net.mass("m2", m=3.0, s0=1.3)
    net.constant_force("F", 8.0)
    net.connect("m1.flange", "rod.a")
    net.connect("rod.b", "m2.flange", "F.flange")
    isl = one(net)
    assert isl.state_names == ["m1.s", "m1.v"]
    res, rec = run(isl, 0.1, 1.0, probes=[("s2", ("s", "m2"))])
    assert np.allclose(res.x[:, 0], 1.0 + 0.5 * 2.0 * res.t ** 2, atol=1e-10)
    assert np.allclose(rec["s2"] - res.x[:, 0], 0.3, atol=1e-12)
    # a contradicting initial position is an error
    net = Network("translational")
    net.mass("m1", m=1.0, s0=1.0)
    net.rod("rod", L=0.3)
    net.mass("m2", m=3.0, s0=2.0)
    net.connect("m1.flange", "rod.a")
    net.connect("rod.b", "m2.flange")
    with pytest.raises(SimulationError) as err:
        net.build()
    assert err.value.code == "inconsistent_initial_conditions"


def test_gear_against_fixed_locks_the_other_side():
    net = Network("rotational")
    net.fixed("g", 1.0)
    net.gear("gear", ratio=2.0)
    net.spring("k", c=1.0)
    net.inertia("J", J=1.0, phi0=0.5)
    net.connect("g.flange", "gear.a")
    net.connect("gear.b", "k.a")
    net.connect("k.b", "J.flange")
    isl = one(net)
    assert isl.probe("phi", "gear.b")(0.0, isl.x0) == pytest.approx(0.5)
    assert isl.probe("w", "gear.b")(0.0, isl.x0) == 0.0
    res, _ = run(isl, 0.5, 1.0)
    assert np.allclose(res.x[:, 0], 0.5)                 # spring relaxed: at rest


# --------------------------------------------------------------------------------------
# Prescribed motion

def test_constant_speed_reaction_force():
    """Flange at s = v t drives a mass m through a spring c (both start at rest at 0):
    x = v t - (v/w) sin(w t), w = sqrt(c/m); the source must push with c (v/w) sin(w t)."""
    v, c, m = 2.0, 8.0, 2.0
    w = math.sqrt(c / m)
    net = Network("translational")
    net.constant_speed("src", v=v)
    net.spring("k", c=c)
    net.mass("m", m=m, s0=0.0, v0=0.0)
    net.connect("src.flange", "k.a")
    net.connect("k.b", "m.flange")
    isl = one(net)
    assert isl.state_names == ["m.s", "m.v", "src.s"]
    res, rec = run(isl, 0.05, 3.0, probes=[("R", ("reaction", "src")), ("s", ("s", "src")),
                                          ("vs", ("v", "src.flange"))])
    t = res.t
    assert np.allclose(res.x[:, 0], v * t - v / w * np.sin(w * t), atol=1e-8)
    assert np.allclose(rec["R"], c * v / w * np.sin(w * t), atol=1e-7)
    assert np.allclose(rec["s"], v * t, atol=1e-12)
    assert np.all(rec["vs"] == v)


def test_speed_source_integrates_its_input_and_reaction_includes_inertia():
    """Speed with v_ref = 0.5 t (a callable) on a node carrying a mass M and a damper d to
    ground: s = s0 + t^2/4, reaction = M*0.5 + d*0.5 t."""
    M, d = 2.0, 3.0
    net = Network("translational")
    net.speed("src", signal=Affine(0.0, 0.5), s0=1.0)
    net.mass("m", m=M)
    net.damper("d", d=d)
    net.fixed("g")
    net.connect("src.flange", "m.flange", "d.a")
    net.connect("d.b", "g.flange")
    isl = one(net)
    res, rec = run(isl, 0.1, 2.0, probes=[("R", ("reaction", "src")), ("s", ("s", "m")),
                                          ("v", ("v", "m"))])
    assert np.allclose(rec["s"], 1.0 + 0.25 * res.t ** 2, atol=1e-10)
    assert np.allclose(rec["v"], 0.5 * res.t, atol=1e-12)
    assert np.allclose(rec["R"], M * 0.5 + d * 0.5 * res.t, atol=1e-6)


def test_speed_source_driven_through_inputs_uses_input_rates():
    """The caller fills island.inputs (and input_rates for the derivative)."""
    net = Network("rotational")
    net.speed("src", s0=0.0)
    net.inertia("J", J=4.0)
    net.connect("src.flange", "J.flange")
    isl = one(net)
    k = isl.input_index("src")
    assert isl.input_names[k] == "src.w"
    isl.inputs[k] = 3.0
    isl.input_rates[k] = 0.25
    x = isl.initialize(0.0, isl.x0)
    assert isl.derivative(0.0, x)[0] == 3.0
    assert isl.probe("reaction", "src")(0.0, x) == pytest.approx(1.0)


def test_accelerate_source():
    """a = 2 from s0 = 1, v0 = -1: s = 1 - t + t^2; a mass on the flange needs m*a."""
    net = Network("translational")
    net.accelerate("acc", signal=2.0, s0=1.0, v0=-1.0)
    net.mass("m", m=1.5)
    net.connect("acc.flange", "m.flange")
    isl = one(net)
    assert isl.state_names == ["acc.s", "acc.v"]
    res, rec = run(isl, 0.1, 2.0, probes=[("s", ("s", "m")), ("R", ("reaction", "acc")),
                                          ("a", ("a", "m"))])
    assert np.allclose(rec["s"], 1.0 - res.t + res.t ** 2, atol=1e-10)
    assert np.allclose(rec["R"], 3.0)
    assert np.allclose(rec["a"], 2.0)


def test_msl_clutch_locks_onto_a_driven_shaft():
    """ConstantSpeed 10 rad/s -> Clutch (mu 0.5, fn 4: tau 2) -> J 2 at rest: slides with
    a = 1 until w = 10 at t = 10, then stays locked; the source's reaction is the clutch
    torque while slipping, 0 once locked."""
    net = Network("rotational")
    net.constant_speed("src", v=10.0)
    net.clutch("c", signal=1.0, fn_max=4.0)
    net.inertia("J", J=2.0)
    net.connect("src.flange", "c.a")
    net.connect("c.b", "J.flange")
    isl = one(net)
    res, rec = run(isl, 0.5, 12.0, probes=[("R", ("reaction", "src"))])
    ev = [(e.element, e.from_, e.to) for e in isl.events]
    assert ev == [("c", "backward", "stuck")]
    assert abs(isl.events[0].t - 10.0) < 1e-9
    slip, lock = res.t < 9.99, res.t > 10.01
    assert np.allclose(res.x[slip, 1], res.t[slip], atol=1e-9)
    assert np.allclose(res.x[lock, 1], 10.0, atol=1e-9)
    assert np.allclose(rec["R"][slip], 2.0) and np.allclose(rec["R"][lock], 0.0, atol=1e-9)


def test_msl_clutch_locked_to_an_accelerating_speed_source():
    """Speed w_ref = 2 + 0.5 t: the load catches up at t = 4 (a = 1) and then follows
    w_ref exactly (the locked constraint uses the reference's derivative); the reaction is
    the clutch torque 2, then J*0.5 = 1."""
    net = Network("rotational")
    net.speed("src", signal=Affine(2.0, 0.5))
    net.clutch("c", signal=1.0, fn_max=4.0)
    net.inertia("J", J=2.0)
    net.connect("src.flange", "c.a")
    net.connect("c.b", "J.flange")
    res, rec = run(one(net), 0.5, 8.0, probes=[("R", ("reaction", "src"))])
    late = res.t > 4.0
    assert np.allclose(res.x[late, 1], 2.0 + 0.5 * res.t[late], atol=1e-8)
    assert np.allclose(rec["R"][late], 1.0, atol=1e-5)
    assert np.allclose(res.x[:, 2], 2.0 * res.t + 0.25 * res.t ** 2, atol=1e-10)


# --------------------------------------------------------------------------------------
# Sources

def test_time_functions():
    A, f, ph, damp = 2.0, 3.0, 0.4, 0.7
    sine = elm.Sine(A, f, ph)
    exps = elm.ExpSine(A, f, damp, ph)
    ramp = elm.Ramp(1.5, 0.5)
    for t in (0.0, 0.13, 0.77, 2.5):
        assert sine(t) == pytest.approx(A * math.sin(2 * math.pi * f * t + ph))
        assert exps(t) == pytest.approx(A * math.exp(-damp * t) * math.sin(2 * math.pi * f * t + ph))
    assert ramp(0.4) == 0.0 and ramp(0.5) == 0.0 and ramp(1.5) == pytest.approx(1.5)
    assert ramp.next_break(0.0) == 0.5 and ramp.next_break(0.5) == math.inf
    trap = elm.Trapezoid(3.0, 0.2, 0.3, 0.1, 1.0)
    expected = {0.0: 0.0, 0.1: 1.5, 0.2: 3.0, 0.45: 3.0, 0.55: 1.5, 0.6: 0.0, 0.9: 0.0, 1.1: 1.5,
                5.25: 3.0, 7.55: 1.5}
    for t, y in expected.items():
        assert trap(t) == pytest.approx(y, abs=1e-9), t
    assert trap.next_break(0.0) == pytest.approx(0.2)
    assert trap.next_break(0.55) == pytest.approx(0.6)
    assert trap.next_break(0.7) == pytest.approx(1.0)
    assert trap.next_break(3.2) == pytest.approx(3.5)
    jump = elm.Trapezoid(1.0, 0.0, 0.5, 0.0, 1.0)          # a square wave
    assert jump(0.0) == 1.0 and jump(0.49) == 1.0 and jump(0.5) == 0.0 and jump(1.0) == 1.0


def test_sine_and_ramp_forces_drive_a_mass():
    """m s'' = A sin(w t + p): s = A/(m w^2) (sin p - sin(w t + p)) + A cos(p)/(m w) t;
    m s'' = k (t - t0)+: s = k (t - t0)^3 / (6 m)."""
    A, f, p, m = 2.0, 1.5, 0.3, 0.5
    w = 2 * math.pi * f
    net = Network("translational")
    net.sine_force("F", amplitude=A, frequency=f, phase=p)
    net.mass("m", m=m)
    net.connect("F.flange", "m.flange")
    res, rec = run(one(net), 0.05, 2.0, probes=[("F", ("f", "F"))])
    ref = A / (m * w ** 2) * (math.sin(p) - np.sin(w * res.t + p)) + A * math.cos(p) / (m * w) * res.t
    assert np.allclose(res.x[:, 0], ref, atol=1e-8)
    assert np.allclose(rec["F"], A * np.sin(w * res.t + p))
    net = Network("rotational")
    net.ramp_torque("T", slope=3.0, start_time=0.4)
    net.inertia("J", J=2.0)
    net.connect("T.flange", "J.flange")
    isl = one(net)
    assert isl.next_time_event(0.0) == 0.4
    res, _ = run(isl, 0.1, 2.0)
    ref = 3.0 * np.clip(res.t - 0.4, 0, None) ** 3 / 12.0
    assert np.allclose(res.x[:, 0], ref, atol=1e-10)


def test_exp_sine_and_trapezoid_forces_impulse():
    """v(T) = (1/m) * integral of F over [0, T] (the integral by quadrature)."""
    m = 2.0
    for make, fn in (
            (lambda net: net.exp_sine_force("F", amplitude=3.0, frequency=2.0, damping=0.5, phase=0.2),
             lambda t: 3.0 * math.exp(-0.5 * t) * math.sin(4 * math.pi * t + 0.2)),
            (lambda net: net.trapezoid_force("F", amplitude=2.0, rising=0.2, width=0.3, falling=0.1,
                                             period=1.0),
             lambda t: elm.Trapezoid(2.0, 0.2, 0.3, 0.1, 1.0)(t))):
        net = Network("translational")
        make(net)
        net.mass("m", m=m)
        net.connect("F.flange", "m.flange")
        res, _ = run(one(net), 0.25, 2.5)
        for t, v in zip(res.t, res.x[:, 1]):
            pts = [b for b in (0.2, 0.5, 0.6, 1.0, 1.2, 1.5, 1.6, 2.0, 2.2) if b < t]
            ref = quad(fn, 0.0, t, points=pts or None, limit=200, epsabs=1e-13)[0] / m if t > 0 else 0.0
            assert v == pytest.approx(ref, abs=1e-8)
    # trapezoid: the momentum gained per period is A*(rising/2 + width + falling/2)
    assert res.x[4, 1] == pytest.approx(2.0 * (0.1 + 0.3 + 0.05) / m, abs=1e-9)


def test_constant_force_and_force2_signs():
    """Force2 (nflow): +F on a, -F on b."""
    net = Network("translational")
    net.mass("A", m=1.0)
    net.mass("B", m=2.0)
    net.force2("F2", signal=4.0)
    net.connect("A.flange", "F2.a")
    net.connect("F2.b", "B.flange")
    isl = one(net)
    assert isl.input_names == ["F2.f"]
    res, _ = run(isl, 0.1, 1.0)
    assert np.allclose(res.x[:, 0], 0.5 * 4.0 * res.t ** 2, atol=1e-10)
    assert np.allclose(res.x[:, 1], -0.5 * 2.0 * res.t ** 2, atol=1e-10)
    net = Network("rotational")
    net.torque2("T2", signal=lambda t: 1.0)
    net.constant_torque("C", -0.5)
    net.inertia("J", J=0.5)
    net.fixed("g")
    net.connect("T2.a", "J.flange", "C.flange")
    net.connect("T2.b", "g.flange")
    res, _ = run(one(net), 0.1, 1.0)
    assert np.allclose(res.x[:, 1], 1.0 * res.t, atol=1e-10)     # (1 - 0.5)/0.5


# --------------------------------------------------------------------------------------
# Speed-dependent forces and nflow's regularized friction laws

def test_linear_and_quadratic_speed_dependent_forces():
    """m v' = -d v: v0 exp(-d t/m);  m v' = -d v|v|: v = v0/(1 + d v0 t/m)."""
    net = Network("translational")
    net.mass("m", m=2.0, v0=3.0)
    net.linear_speed_force("lin", d=0.5)
    net.connect("m.flange", "lin.flange")
    res, rec = run(one(net), 0.1, 2.0, probes=[("f", ("f", "lin"))])
    assert np.allclose(res.x[:, 1], 3.0 * np.exp(-0.25 * res.t), atol=1e-9)
    assert np.allclose(rec["f"], 0.5 * res.x[:, 1], atol=1e-12)
    for v0 in (3.0, -3.0):
        net = Network("rotational")
        net.inertia("J", J=2.0, w0=v0)
        net.quadratic_speed_torque("q", d=0.4)
        net.connect("J.flange", "q.flange")
        res, _ = run(one(net), 0.1, 2.0)
        assert np.allclose(res.x[:, 1], v0 / (1.0 + 0.4 * abs(v0) * res.t / 2.0), atol=1e-9)


def test_regularized_friction_law():
    """Friction: F = -Fc tanh(v/vEps) on the flange; with v >> vEps a constant
    deceleration Fc/m, then the speed creeps toward 0 without an event."""
    net = Network("translational")
    net.mass("m", m=2.0, v0=1.0)
    net.regularized_friction("fr", Fc=1.0, v_eps=1e-3)
    net.connect("m.flange", "fr.flange")
    isl = one(net)
    for v in (1.0, 5e-4, -2e-4):
        assert isl.derivative(0.0, np.array([0.0, v]))[1] == pytest.approx(-0.5 * math.tanh(v / 1e-3))
    res, rec = run(isl, 0.25, 3.0, probes=[("f", ("f", "fr"))])
    early = res.t < 1.9
    assert np.allclose(res.x[early, 1], 1.0 - 0.5 * res.t[early], atol=1e-9)
    assert abs(res.x[-1, 1]) < 1e-5 and not isl.events
    assert rec["f"][0] == pytest.approx(1.0)


def test_regularized_brake_input_is_the_peak_force():
    net = Network("translational")
    net.mass("m", m=1.0, v0=3.0)
    net.regularized_brake("br", signal=lambda t: 2.0, v_eps=1e-4)
    net.connect("m.flange", "br.flange")
    isl = one(net)
    assert isl.input_names == ["br.f"]
    res, _ = run(isl, 0.25, 1.0)
    assert np.allclose(res.x[:, 1], 3.0 - 2.0 * res.t, atol=1e-9)


def test_regularized_clutch_equalizes_speeds():
    """tau = tau_max tanh((w_a - w_b)/w_eps): J1 = 1 at 10 rad/s, J2 = 3 at rest, tau_max 5:
    w1 = 10 - 5t, w2 = 5t/3 while slipping (t < 1.5), then both near 2.5; momentum kept."""
    net = Network("rotational")
    net.inertia("J1", J=1.0, w0=10.0)
    net.regularized_clutch("cl", tau_max=5.0, w_eps=1e-4)
    net.inertia("J2", J=3.0, w0=0.0)
    net.connect("J1.flange", "cl.a")
    net.connect("cl.b", "J2.flange")
    res, rec = run(one(net), 0.25, 3.0, method="dae", probes=[("tau", ("tau", "cl"))], rtol=1e-8,
                   atol=1e-10)
    w1, w2 = res.x[:, 2], res.x[:, 3]
    slip = res.t < 1.4
    assert np.allclose(w1[slip], 10.0 - 5.0 * res.t[slip], atol=1e-6)
    assert np.allclose(w2[slip], 5.0 * res.t[slip] / 3.0, atol=1e-6)
    assert np.allclose(w1 + 3.0 * w2, 10.0, atol=1e-7)
    assert abs(w1[-1] - 2.5) < 1e-4 and abs(w2[-1] - 2.5) < 1e-4
    # MSL sign: tau = tau_max tanh(w_rel/w_eps), w_rel = w_b - w_a < 0 while slipping
    assert rec["tau"][1] == pytest.approx(-5.0)


def test_freewheel_is_one_way():
    """a overrunning b couples them (d = 100); b overrunning a freewheels."""
    net = Network("rotational")
    net.inertia("A", J=1.0, w0=5.0)
    net.freewheel("fw", d=100.0, w_eps=1e-3)
    net.inertia("B", J=1.0, w0=0.0)
    net.connect("A.flange", "fw.a")
    net.connect("fw.b", "B.flange")
    res, _ = run(one(net), 0.25, 1.0, method="dae", rtol=1e-8, atol=1e-10)
    assert np.allclose(res.x[:, 2] + res.x[:, 3], 5.0, atol=1e-7)
    assert abs(res.x[-1, 2] - res.x[-1, 3]) < 0.01
    net = Network("rotational")
    net.inertia("A", J=1.0, w0=0.0)
    net.freewheel("fw", d=100.0, w_eps=1e-3)
    net.inertia("B", J=1.0, w0=5.0)
    net.connect("A.flange", "fw.a")
    net.connect("fw.b", "B.flange")
    res, _ = run(one(net), 0.25, 1.0)
    assert np.allclose(res.x[:, 2], 0.0) and np.allclose(res.x[:, 3], 5.0)


# --------------------------------------------------------------------------------------
# Switched compliant elements

def gap_bounce(c=100.0, d=0.0, n=1.0, v0=-2.0):
    net = Network("translational")
    net.fixed("g")
    net.elasto_gap("gap", c=c, d=d, s_rel0=0.5, n=n)
    net.mass("m", m=1.0, s0=1.0, v0=v0)
    net.connect("g.flange", "gap.a")
    net.connect("gap.b", "m.flange")
    return one(net)


def test_elasto_gap_contact_events_and_elastic_rebound():
    """Free flight to s_rel = s_rel0 = 0.5 (t = 0.25), half an oscillation of w = 10 in
    contact (pi/10 s), rebound at the same speed, free flight after."""
    isl = gap_bounce()
    res, rec = run(isl, 0.01, 1.0, probes=[("f", ("f", "gap")), ("c", ("contact", "gap"))])
    ev = [(e.element, e.kind, e.from_, e.to) for e in isl.events]
    assert ev == [("gap", "contact", "open", "contact"), ("gap", "contact", "contact", "open")]
    assert isl.events[0].t == pytest.approx(0.25, abs=1e-9)
    assert isl.events[1].t == pytest.approx(0.25 + math.pi / 10.0, abs=1e-9)
    tc = 0.25 + math.pi / 10
    assert res.x[-1, 1] == pytest.approx(2.0, abs=1e-7)
    assert res.x[-1, 0] == pytest.approx(0.5 + 2.0 * (1.0 - tc), abs=1e-7)
    inside = (res.t > 0.25) & (res.t < tc)
    assert np.all(rec["c"][inside] == 1.0) and np.all(rec["c"][res.t < 0.25] == 0.0)
    # in contact: f = -c (s_rel0 - s_rel) (pushing), with s_rel - 0.5 = -0.2 sin(10 (t - 0.25))
    assert np.allclose(rec["f"][inside], -100.0 * 0.2 * np.sin(10.0 * (res.t[inside] - 0.25)), atol=1e-6)


def test_elasto_gap_damping_never_pulls_and_dissipates():
    isl = gap_bounce(c=100.0, d=8.0)
    res, rec = run(isl, 0.002, 1.0, probes=[("f", ("f", "gap"))])
    assert np.all(rec["f"] <= 1e-12)                      # only pushing forces
    assert 0.0 < res.x[-1, 1] < 2.0                       # rebound slower than impact
    # the damping force is clamped to |f_c|: the force is continuous at both contact ends
    assert np.max(np.abs(np.diff(rec["f"]))) < 10.0


def test_elasto_gap_nonlinear_exponent_is_elastic():
    isl = gap_bounce(c=1000.0, d=0.0, n=2.0)
    res, _ = run(isl, 0.01, 1.0)
    assert len(isl.events) == 2 and res.x[-1, 1] == pytest.approx(2.0, abs=1e-6)


def backlash_swing(b=0.2, c=400.0, d=0.0):
    net = Network("rotational")
    net.fixed("g")
    net.elasto_backlash("bl", c=c, b=b, d=d)
    net.inertia("J", J=1.0, phi0=0.0, w0=1.0)
    net.connect("g.flange", "bl.a")
    net.connect("bl.b", "J.flange")
    return one(net)


def test_elasto_backlash_free_play():
    """Free rotation through the play (b/2 = 0.1 at 1 rad/s), half a period pi/20 of
    w = sqrt(c/J) = 20 on each contact, 0.2 s across the play between them."""
    isl = backlash_swing()
    res, rec = run(isl, 0.01, 1.0, probes=[("tau", ("tau", "bl")), ("mode", ("mode", "bl"))])
    h = math.pi / 20
    want = [(0.1, "free", "contact+"), (0.1 + h, "contact+", "free"), (0.3 + h, "free", "contact-"),
            (0.3 + 2 * h, "contact-", "free"), (0.5 + 2 * h, "free", "contact+"),
            (0.5 + 3 * h, "contact+", "free")]
    got = [(e.t, e.from_, e.to) for e in isl.events]
    assert [g[1:] for g in got] == [w[1:] for w in want]
    assert max(abs(g[0] - w[0]) for g, w in zip(got, want)) < 1e-8
    free = np.abs(res.x[:, 0]) < 0.1 - 1e-9
    assert np.all(rec["tau"][free] == 0.0)
    assert np.all(rec["tau"][rec["mode"] > 0] >= 0.0) and np.all(rec["tau"][rec["mode"] < 0] <= 0.0)


def test_elasto_backlash_damped_torque_never_pulls():
    isl = backlash_swing(d=5.0)
    res, rec = run(isl, 0.002, 1.0, probes=[("tau", ("tau", "bl")), ("mode", ("mode", "bl"))])
    assert np.all(rec["tau"][rec["mode"] > 0] >= 0.0)
    assert np.all(rec["tau"][rec["mode"] < 0] <= 0.0)
    assert abs(res.x[-1, 1]) < 1.0                       # energy lost in the contacts


def test_elasto_backlash_without_play_is_a_spring():
    isl = backlash_swing(b=0.0, c=25.0)
    res, _ = run(isl, 0.05, 2.0)
    assert not isl.events
    assert np.allclose(res.x[:, 0], 0.2 * np.sin(5.0 * res.t), atol=1e-8)


def test_elasto_backlash_laws():
    law = elm.ElastoBacklash(c=10.0, d=2.0, b=0.2, phi_rel0=0.05)
    # initialisation: monotone c(D - bMax) / c(D - bMin) / c/3 D, plus d*w
    assert law.force(0.05 + 0.2, 0.5, 0.0, 0, initial=True) == pytest.approx(10 * 0.1 + 1.0)
    assert law.force(0.05 - 0.2, 0.0, 0.0, 0, initial=True) == pytest.approx(10 * -0.1)
    assert law.force(0.05 + 0.12, 0.0, 0.0, 0, initial=True) == pytest.approx(10 / 3 * 0.12)
    # afterwards: contact torque, clipped to 0 while it would pull; free play 0
    assert law.force(0.05 + 0.15, 0.1, 0.0, 1) == pytest.approx(0.5 + min(0.5, 0.2))
    assert law.force(0.05 + 0.11, -1.0, 0.0, 1) == 0.0
    assert law.force(0.05 - 0.15, -0.1, 0.0, -1) == pytest.approx(-0.5 + max(-0.5, -0.2))
    assert law.force(0.05, 3.0, 0.0, 0) == 0.0
    assert law.mode_from(0.05 + 0.11) == 1 and law.mode_from(0.05 - 0.11) == -1 and law.mode_from(0.1) == 0


def test_backlash_holding_a_massless_node():
    """A constant torque T on a massless flange held by a backlash to ground: Delta =
    bMax + T/c (solved at initialisation with the monotone law, kept afterwards)."""
    net = Network("rotational")
    net.constant_torque("T", 0.5)
    net.elasto_backlash("bl", c=10.0, b=0.2)
    net.fixed("g")
    net.connect("T.flange", "bl.b")
    net.connect("bl.a", "g.flange")
    isl = one(net)
    assert isl.state_names == []
    res, rec = run(isl, 0.5, 1.0, probes=[("phi", ("phi", "T.flange")), ("mode", ("mode", "bl"))])
    assert np.allclose(rec["phi"], 0.15) and np.all(rec["mode"] == 1.0)


# --------------------------------------------------------------------------------------
# Massless nodes

def test_spring_between_force_and_fixed_without_mass():
    """F = 2t on a massless flange held by a spring c = 4: s = F/c = t/2."""
    net = Network("translational")
    net.force("F", signal=lambda t: 2.0 * t)
    net.spring("k", c=4.0)
    net.fixed("g")
    net.connect("F.flange", "k.b")
    net.connect("k.a", "g.flange")
    isl = one(net)
    res, rec = run(isl, 0.1, 1.0, probes=[("s", ("s", "F.flange")), ("v", ("v", "F.flange")),
                                          ("f", ("f", "k"))])
    assert np.allclose(rec["s"], 0.5 * res.t, atol=1e-14)
    assert np.allclose(rec["v"], 0.5, atol=1e-6)
    assert np.allclose(rec["f"], 2.0 * res.t, atol=1e-12)


def test_damper_in_series_with_spring_without_mass():
    """Force F -> spring k -> node -> damper d -> ground: the damper node creeps at F/d and
    the force node stays F/k ahead of it."""
    F, k, d = 3.0, 6.0, 2.0
    net = Network("translational")
    net.constant_force("F", F)
    net.spring("k", c=k)
    net.damper("d", d=d)
    net.fixed("g")
    net.connect("F.flange", "k.b")
    net.connect("k.a", "d.b")
    net.connect("d.a", "g.flange")
    isl = one(net)
    assert isl.state_names == ["d.flange_b.s"]
    res, rec = run(isl, 0.25, 2.0, probes=[("sF", ("s", "F.flange")), ("sd", ("s", "d.flange_b")),
                                          ("vd", ("v", "d.b"))])
    assert np.allclose(rec["sd"], F / d * res.t, atol=1e-12)
    assert np.allclose(rec["sF"], F / d * res.t + F / k, atol=1e-12)
    assert np.allclose(rec["vd"], F / d)


def test_kelvin_voigt_creep():
    """F on a massless node with a spring-damper to ground: s = F/c (1 - exp(-c t/d)),
    starting from the damper's relative position 0."""
    net = Network("translational")
    net.constant_force("F", 3.0)
    net.spring_damper("kv", c=6.0, d=2.0)
    net.fixed("g")
    net.connect("F.flange", "kv.b")
    net.connect("kv.a", "g.flange")
    res, _ = run(one(net), 0.25, 2.0)
    assert np.allclose(res.x[:, 0], 0.5 * (1.0 - np.exp(-3.0 * res.t)), atol=1e-9)


def test_mass_spring_damper_series_matches_matrix_exponential():
    """m x'' = -k (x - p), 0 = k (x - p) - d p' (p: the massless spring-damper node)."""
    m, k, d = 1.0, 10.0, 2.0
    net = Network("translational")
    net.mass("m", m=m, s0=1.0)
    net.spring("k", c=k)
    net.damper("d", d=d)
    net.fixed("g")
    net.connect("m.flange", "k.a")
    net.connect("k.b", "d.a")
    net.connect("d.b", "g.flange")
    isl = one(net)
    assert isl.x0.tolist() == [1.0, 0.0, 0.0]      # the node starts with the damper at rel 0
    res, _ = run(isl, 0.1, 3.0)
    A = np.array([[0.0, 1.0, 0.0], [-k / m, 0.0, k / m], [k / d, 0.0, -k / d]])
    ref = np.array([expm(A * t) @ [1.0, 0.0, 0.0] for t in res.t])
    assert np.allclose(res.x, ref, atol=1e-8)


def test_springs_in_series_through_a_massless_node():
    """Mass on two springs in series (massless node between): c_eq = c1 c2/(c1 + c2),
    s = s0 cos(sqrt(c_eq/m) t); the middle node sits at s*c1/(c1 + c2)."""
    c1, c2, m = 30.0, 60.0, 0.5
    net = Network("translational")
    net.fixed("g")
    net.spring("k1", c=c2)
    net.spring("k2", c=c1)
    net.mass("m", m=m, s0=0.2)
    net.connect("g.flange", "k1.a")
    net.connect("k1.b", "k2.a")
    net.connect("k2.b", "m.flange")
    isl = one(net)
    assert isl.state_names == ["m.s", "m.v"]
    res, rec = run(isl, 0.02, 1.0, probes=[("mid", ("s", "k1.b"))])
    w = math.sqrt(c1 * c2 / (c1 + c2) / m)
    assert np.allclose(res.x[:, 0], 0.2 * np.cos(w * res.t), atol=1e-8)
    assert np.allclose(rec["mid"], res.x[:, 0] * c1 / (c1 + c2), atol=1e-12)


def test_initial_position_of_a_massless_node():
    net = Network("translational")
    net.constant_force("F", 0.0)
    net.spring_damper("kv", c=6.0, d=2.0)
    net.fixed("g")
    net.connect("F.flange", "kv.b")
    net.connect("kv.a", "g.flange")
    net.initial_position("F.flange", 0.4)
    res, _ = run(one(net), 0.25, 1.0)
    assert np.allclose(res.x[:, 0], 0.4 * np.exp(-3.0 * res.t), atol=1e-9)


def test_nonlinear_velocity_balance_on_a_massless_node():
    """F = 0.5 on a massless flange with Friction Fc = 1, vEps = 0.01 to ground:
    v = vEps atanh(F/Fc) (a Newton solve); a force above Fc has no balance: an error."""
    net = Network("translational")
    net.constant_force("F", 0.5)
    net.regularized_friction("fr", Fc=1.0, v_eps=0.01)
    net.connect("F.flange", "fr.flange")
    isl = one(net)
    res, rec = run(isl, 0.5, 1.0, probes=[("v", ("v", "F.flange"))])
    v = 0.01 * math.atanh(0.5)
    assert np.allclose(rec["v"], v, rtol=1e-9) and np.allclose(res.x[:, 0], v * res.t, rtol=1e-9)
    net = Network("translational")
    net.constant_force("F", 1.5)
    net.regularized_friction("fr", Fc=1.0, v_eps=0.01)
    net.connect("F.flange", "fr.flange")
    isl = one(net)
    with pytest.raises(SimulationError) as err:
        run(isl, 0.5, 1.0)
    assert err.value.code in ("singular_island", "massless_solve_failed")
    assert "F.flange" in err.value.message


def test_gap_holding_a_massless_node_switches_with_the_load():
    """A sine force on a massless flange held by a spring c1 = 5 and a gap c2 = 10 (closing
    for s < 0): s = F/5 while pulling, F/15 while pushing into the gap."""
    net = Network("translational")
    net.sine_force("F", amplitude=2.0, frequency=1.0)
    net.elasto_gap("gap", c=10.0, d=0.0)
    net.spring("k", c=5.0)
    net.fixed("g1")
    net.fixed("g2")
    net.connect("F.flange", "gap.b", "k.b")
    net.connect("gap.a", "g1.flange")
    net.connect("k.a", "g2.flange")
    isl = one(net)
    res, rec = run(isl, 0.05, 2.25, probes=[("s", ("s", "F.flange"))])
    F = 2.0 * np.sin(2 * np.pi * res.t)
    assert np.allclose(rec["s"], np.where(F >= 0, F / 5.0, F / 15.0), atol=1e-12)
    assert [e.to for e in isl.events] == ["contact", "open", "contact", "open"]
    assert [round(e.t, 9) for e in isl.events] == [0.5, 1.0, 1.5, 2.0]


# --------------------------------------------------------------------------------------
# Sensors (probes)

def test_relative_probes_signs():
    """nflow's relative sensors read a - b (pos_rel / vel_rel); MSL's s_rel is b - a."""
    net = Network("translational")
    net.mass("a", m=1.0, s0=1.0, v0=2.0)
    net.spring("k", c=0.0)
    net.mass("b", m=1.0, s0=3.5, v0=-1.0)
    net.connect("a.flange", "k.a")
    net.connect("k.b", "b.flange")
    isl = one(net)
    x = isl.x0
    assert isl.probe("pos_rel", "a.flange", "b.flange")(0.0, x) == pytest.approx(-2.5)   # nflow a - b
    assert isl.probe("vel_rel", "a.flange", "b.flange")(0.0, x) == pytest.approx(3.0)
    assert isl.probe("s_rel", "a.flange", "b.flange")(0.0, x) == pytest.approx(2.5)      # MSL b - a
    assert isl.probe("v_rel", "k")(0.0, x) == pytest.approx(-3.0)
    assert isl.probe("pos", "b")(0.0, x) == 3.5 and isl.probe("vel", "a")(0.0, x) == 2.0


# --------------------------------------------------------------------------------------
# Errors

def test_structural_errors():
    def build(fn):
        net = Network("translational")
        fn(net)
        with pytest.raises((SimulationError, DiagramError)) as err:
            net.build()
        return err.value

    def floating_springs(net):
        net.force("F", 1.0)
        net.spring("k", c=1.0)
        net.force("G", 1.0)
        net.connect("F.flange", "k.a")
        net.connect("k.b", "G.flange")
    e = build(floating_springs)
    assert e.code == "singular_island" and "F.flange" in e.message

    def forces_only(net):
        net.force("F", 1.0)
        net.force("G", 1.0)
        net.connect("F.flange", "G.flange")
    e = build(forces_only)
    assert e.code == "singular_island" and "F.flange" in e.message

    def speed_on_fixed(net):
        net.constant_speed("s", 1.0)
        net.fixed("g")
        net.connect("s.flange", "g.flange")
    assert build(speed_on_fixed).code == "conflicting_prescribed_motion"

    def two_speeds(net):
        net.constant_speed("s1", 1.0)
        net.speed("s2", 1.0)
        net.mass("m")
        net.connect("s1.flange", "m.flange", "s2.flange")
    assert build(two_speeds).code == "conflicting_prescribed_motion"

    def gear_loop(net):
        net.mass("m1")
        net.mass("m2")
        net.gear("g1", 2.0)
        net.gear("g2", 3.0)
        net.connect("m1.flange", "g1.a", "g2.a")
        net.connect("m2.flange", "g1.b", "g2.b")
    e = build(gear_loop)
    assert e.code == "inconsistent_rigid_connection" and e.block == "g2"

    def two_fixed(net):
        net.fixed("g1", 0.0)
        net.rod("r", L=1.0)
        net.fixed("g2", 2.0)
        net.connect("g1.flange", "r.a")
        net.connect("r.b", "g2.flange")
    assert build(two_fixed).code == "conflicting_fixed"

    def msl_friction_on_massless(net):
        net.mass("m")
        net.spring("k", c=1.0)
        net.brake("b", 1.0, fn_max=1.0)
        net.connect("m.flange", "k.a")
        net.connect("k.b", "b.flange")
    assert build(msl_friction_on_massless).code == "massless_friction"

    def msl_friction_on_driven_only(net):
        net.constant_speed("s", 1.0)
        net.brake("b", 1.0, fn_max=1.0)
        net.connect("s.flange", "b.flange")
    assert build(msl_friction_on_driven_only).code == "degenerate_friction"

    def dangling(net):
        net.mass("m")
        net.damper("d", d=1.0)
        net.connect("m.flange", "d.a")
    e = build(dangling)
    assert e.code == "massless_node" and "d.flange_b" in e.message

    with pytest.raises(DiagramError):
        Network("rotational").gear("g", ratio=0.0)
    with pytest.raises(DiagramError):
        Network("translational").regularized_friction("f", Fc=1.0, v_eps=0.0)
    with pytest.raises(DiagramError):
        Network("translational").trapezoid_force("t", period=0.0)
    with pytest.raises(DiagramError):
        Network("translational").elasto_gap("g", n=0.5)
    with pytest.raises(DiagramError) as err:
        Network("translational").connect("nothing.a")
    assert err.value.code == "unknown_element"
    net = Network("translational")
    net.spring("k", c=1.0)
    with pytest.raises(DiagramError) as err:
        net.connect("k.flange")
    assert err.value.code == "bad_pin"


def test_runtime_singularity_names_the_node():
    """A pulling force on a massless flange held only by a gap: once the gap opens nothing
    balances it."""
    net = Network("translational")
    net.constant_force("F", 1.0)
    net.elasto_gap("gap", c=10.0, d=0.0)
    net.fixed("g")
    net.connect("F.flange", "gap.b")
    net.connect("gap.a", "g.flange")
    isl = one(net)
    with pytest.raises(SimulationError) as err:
        run(isl, 0.1, 1.0)
    assert err.value.code == "singular_island" and "F.flange" in err.value.message


# --------------------------------------------------------------------------------------
# Properties

PROP = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROP
@given(r=st.floats(0.2, 5.0), J1=st.floats(0.1, 3.0), J2=st.floats(0.1, 3.0), c=st.floats(1.0, 50.0),
       w0=st.floats(-3.0, 3.0))
def test_gear_train_conserves_energy(r, J1, J2, c, w0):
    """Inertia J1 - gear r - inertia J2 - spring c - ground: no loss, so the energy
    J_eff w^2/2 + c phi_b^2/2 is constant."""
    net = Network("rotational")
    net.inertia("J1", J=J1, w0=w0)
    net.gear("gr", ratio=r)
    net.inertia("J2", J=J2)
    net.spring("k", c=c)
    net.fixed("g")
    net.connect("J1.flange", "gr.a")
    net.connect("gr.b", "J2.flange", "k.a")
    net.connect("k.b", "g.flange")
    isl = one(net)
    res, _ = run(isl, 0.02, 1.0, rtol=1e-10, atol=1e-12)
    phi_a, w_a = res.x[:, 0], res.x[:, 1]
    e = 0.5 * (J1 + J2 / r ** 2) * w_a ** 2 + 0.5 * c * (phi_a / r) ** 2
    assert np.allclose(e, e[0], rtol=1e-7, atol=1e-10)


@PROP
@given(c=st.floats(10.0, 500.0), d=st.floats(0.0, 20.0), v0=st.floats(-5.0, -0.5), m=st.floats(0.2, 3.0))
def test_gap_never_pulls_and_never_adds_energy(c, d, v0, m):
    net = Network("translational")
    net.fixed("g")
    net.elasto_gap("gap", c=c, d=d, s_rel0=0.5)
    net.mass("m", m=m, s0=1.0, v0=v0)
    net.connect("g.flange", "gap.a")
    net.connect("gap.b", "m.flange")
    isl = one(net)
    res, rec = run(isl, 0.005, 1.5, probes=[("f", ("f", "gap"))], rtol=1e-9, atol=1e-11)
    assert np.all(rec["f"] <= 1e-9)
    s, v = res.x[:, 0], res.x[:, 1]
    pen = np.clip(0.5 - s, 0.0, None)
    energy = 0.5 * m * v ** 2 + 0.5 * c * pen ** 2
    assert np.all(np.diff(energy) <= 1e-6 * max(1.0, energy[0]))


def test_islands_with_extra_states_run_side_by_side():
    """A driven island and a massless-node island in one HybridGroup give the same states
    as when run alone (the extra states sit after q and v of each island)."""
    def driven():
        net = Network("translational")
        net.constant_speed("src", v=2.0)
        net.spring("k", c=8.0)
        net.mass("m", m=2.0)
        net.connect("src.flange", "k.a")
        net.connect("k.b", "m.flange")
        return one(net)

    def creep():
        net = Network("translational")
        net.constant_force("F", 3.0)
        net.spring_damper("kv", c=6.0, d=2.0)
        net.fixed("g")
        net.connect("F.flange", "kv.b")
        net.connect("kv.a", "g.flange")
        return one(net)

    a, b = driven(), creep()
    group = HybridGroup([a, b])
    res = integrate_hybrid(group, group.x0, make_grid(0.1, 2.0), **TIGHT)
    alone_a, _ = run(driven(), 0.1, 2.0)
    alone_b, _ = run(creep(), 0.1, 2.0)
    assert np.allclose(res.x[:, group.slices[0]], alone_a.x, atol=1e-9)
    assert np.allclose(res.x[:, group.slices[1]], alone_b.x, atol=1e-9)
