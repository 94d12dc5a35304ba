"""Writes the analytic planar goldens (``fixtures/acausal_planar/*.json``) from their closed forms.

Every expected value here comes from a formula (stated in the fixture's ``derivation``);
nothing runs the simulator. ``python -m tests.blocks.planar_fixtures`` rewrites the files;
``tests/blocks/test_acausal_planar.py`` checks that the committed files are what this module gives.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import orjson
from scipy.special import ellipj, ellipk

from tests.util import blk, pin, wire

FOLDER = Path(__file__).resolve().parents[2] / "fixtures" / "acausal_planar"
G = 9.81
TIGHT = {"relTol": 1e-10, "absTol": 1e-12}


def sensed(blocks, wires, name, sensor, attach, **params):
    """A sensor ``sensor`` on ``attach`` (pin -> (block, pin)) recorded as ``name``."""
    blocks += [blk(f"s_{name}", sensor, **params), blk(f"rec_{name}", "toWorkspace", VariableName=name,
                                                           SaveFormat="Array")]
    wires += [pin(f"s_{name}", own, target, target_pin) for own, (target, target_pin) in attach.items()]
    wires.append(wire(f"s_{name}", f"rec_{name}"))


def fixture(title, derivation, blocks, wires, dt, duration, solver, expect, tolerance=1e-7):
    return {"title": title, "provenance": "analytic", "derivation": derivation,
            "diagram": {"blocks": blocks, "connections": wires, "sampleTime": dt, "duration": duration,
                        "solver": solver, "variables": {}, **TIGHT},
            "expect": {"workspace": {name: [[float(v)] for v in values] for name, values in expect.items()}},
            "tolerance": {"abs": tolerance, "rel": 0}}


def grid(dt, duration):
    return np.arange(int(math.floor(duration / dt + 1e-9)) + 1) * dt


def pendulum():
    length, theta0, mass = 1.5, 2.0, 2.0
    t = grid(0.05, 3.0)
    k = math.sin(theta0 / 2)
    omega0 = math.sqrt(G / length)
    sn = ellipj(ellipk(k * k) - omega0 * t, k * k)[0]
    theta = 2.0 * np.arcsin(k * sn)
    blocks = [blk("world", "PlanarWorld"), blk("rod", "PlanarDistance", length=length),
              blk("bob", "PlanarPointMass", m=mass, x0=length * math.sin(theta0), y0=-length * math.cos(theta0))]
    wires = [pin("world", "frame", "rod", "a"), pin("rod", "b", "bob", "com")]
    sensed(blocks, wires, "x", "PlanarPositionSensor", {"a": ("bob", "com")}, axis="x")
    sensed(blocks, wires, "y", "PlanarPositionSensor", {"a": ("bob", "com")}, axis="y")
    sensed(blocks, wires, "d", "PlanarDistanceSensor", {"a": ("world", "frame"), "b": ("bob", "com")})
    return fixture(
        "Simple pendulum released at 2 rad (large amplitude)",
        "theta'' = -(g/L) sin theta, theta(0) = theta0, theta'(0) = 0: sin(theta/2) = k sn(K(k) - w0 t; k), "
        "k = sin(theta0/2), w0 = sqrt(g/L), K the complete elliptic integral (period 4 K / w0 = 3.26501 s); "
        "x = L sin theta, y = -L cos theta, the distance sensor reads L. L = 1.5, theta0 = 2, g = 9.81",
        blocks, wires, 0.05, 3.0, "dae",
        {"x": length * np.sin(theta), "y": -length * np.cos(theta), "d": np.full(t.size, length)})


def free_fall():
    t = grid(0.1, 2.0)
    x0, y0, vx0, vy0 = 1.0, 2.0, 0.5, 3.0
    blocks = [blk("world", "PlanarWorld"), blk("m", "PlanarPointMass", m=3.0, x0=x0, y0=y0, vx0=vx0, vy0=vy0)]
    wires = []
    sensed(blocks, wires, "x", "PlanarPositionSensor", {"a": ("m", "com")}, axis="x")
    sensed(blocks, wires, "y", "PlanarPositionSensor", {"a": ("m", "com")}, axis="y")
    sensed(blocks, wires, "vy", "PlanarVelocitySensor", {"a": ("m", "com")}, axis="y")
    sensed(blocks, wires, "ay", "PlanarAccelerationSensor", {"a": ("m", "com")}, axis="y")
    return fixture(
        "Point mass in free fall (PlanarWorld's gravity, no joint)",
        "m a = m g with g = (0, -9.81): x = x0 + vx0 t, y = y0 + vy0 t - g t^2/2, vy = vy0 - g t, ay = -g; "
        "x0 = 1, y0 = 2, vx0 = 0.5, vy0 = 3",
        blocks, wires, 0.1, 2.0, "ode45",
        {"x": x0 + vx0 * t, "y": y0 + vy0 * t - G * t * t / 2, "vy": vy0 - G * t, "ay": np.full(t.size, -G)})


def inclined_prismatic():
    t = grid(0.1, 2.0)
    angle = 0.4
    e = (math.cos(angle), -math.sin(angle))
    s = G * math.sin(angle) * t * t / 2
    blocks = [blk("world", "PlanarWorld"), blk("slide", "PlanarPrismatic", dx=e[0], dy=e[1]),
              blk("b", "PlanarBody", m=2.0, I=0.3)]
    wires = [pin("world", "frame", "slide", "a"), pin("slide", "b", "b", "com")]
    sensed(blocks, wires, "x", "PlanarPositionSensor", {"a": ("b", "com")}, axis="x")
    sensed(blocks, wires, "y", "PlanarPositionSensor", {"a": ("b", "com")}, axis="y")
    sensed(blocks, wires, "phi", "PlanarPositionSensor", {"a": ("b", "com")}, axis="phi")
    sensed(blocks, wires, "ax", "PlanarAccelerationSensor", {"a": ("b", "com")}, axis="x")
    return fixture(
        "Body sliding down a frictionless incline (PlanarPrismatic along the world axis (cos 0.4, -sin 0.4))",
        "along the axis e: s'' = g.e = g sin(0.4), s = g sin(0.4) t^2/2; position s e, so x = s cos 0.4, "
        "y = -s sin 0.4, ax = g sin 0.4 cos 0.4; the joint locks the rotation: phi = 0",
        blocks, wires, 0.1, 2.0, "dae",
        {"x": s * e[0], "y": s * e[1], "phi": np.zeros(t.size),
         "ax": np.full(t.size, G * math.sin(angle) * e[0])})


def spring_mass():
    t = grid(0.05, 3.0)
    c, m, x0 = 40.0, 2.5, 0.3
    omega = math.sqrt(c / m)
    blocks = [blk("world", "PlanarWorld"), blk("ground", "PlanarFixed"), blk("slide", "PlanarPrismatic"),
              blk("spring", "PlanarSpring", c=c), blk("m", "PlanarPointMass", m=m, x0=x0)]
    wires = [pin("ground", "frame", "slide", "a"), pin("slide", "b", "m", "com"),
             pin("ground", "frame", "spring", "a"), pin("spring", "b", "m", "com")]
    sensed(blocks, wires, "rel", "PlanarRelPositionSensor", {"a": ("m", "com"), "b": ("ground", "frame")}, axis="x")
    sensed(blocks, wires, "y", "PlanarPositionSensor", {"a": ("m", "com")}, axis="y")
    return fixture(
        "Mass on a horizontal PlanarPrismatic held by a PlanarSpring to the fixed frame",
        "the spring pulls with -c (r - 0); along x: m x'' = -c x, x = x0 cos(sqrt(c/m) t); the joint takes the "
        "spring's and gravity's y components: y = 0. The relative sensor reads a - b = x. c = 40, m = 2.5, x0 = 0.3",
        blocks, wires, 0.05, 3.0, "ode45",
        {"rel": x0 * np.cos(omega * t), "y": np.zeros(t.size)})


def damper():
    t = grid(0.1, 3.0)
    d, m, x0, v0 = 2.0, 4.0, 1.0, 1.5
    blocks = [blk("ground", "PlanarFixed"), blk("slide", "PlanarPrismatic"), blk("damper", "PlanarDamper", d=d),
              blk("m", "PlanarPointMass", m=m, x0=x0, vx0=v0)]
    wires = [pin("ground", "frame", "slide", "a"), pin("slide", "b", "m", "com"),
             pin("ground", "frame", "damper", "a"), pin("damper", "b", "m", "com")]
    sensed(blocks, wires, "x", "PlanarPositionSensor", {"a": ("m", "com")}, axis="x")
    sensed(blocks, wires, "vx", "PlanarVelocitySensor", {"a": ("m", "com")}, axis="x")
    decay = np.exp(-d * t / m)
    return fixture(
        "Mass coasting on a PlanarPrismatic against a PlanarDamper to the fixed frame",
        "F = -d (v_b - v_a) (nflow: F = -d dv): m v' = -d v, v = v0 exp(-d t/m), x = x0 + v0 m/d (1 - "
        "exp(-d t/m)); d = 2, m = 4, x0 = 1, v0 = 1.5",
        blocks, wires, 0.1, 3.0, "dae",
        {"x": x0 + v0 * m / d * (1.0 - decay), "vx": v0 * decay})


def spring_damper():
    t = grid(0.05, 4.0)
    c, d, m = 25.0, 2.0, 1.0
    x0, y0, vy0 = 0.4, -0.2, 1.0
    sigma, omega = d / (2 * m), math.sqrt(c / m - (d / (2 * m)) ** 2)

    def decay(p0, v0):   # p'' + (d/m) p' + (c/m) p = 0 from p0, v0 (underdamped)
        return np.exp(-sigma * t) * (p0 * np.cos(omega * t) + (v0 + sigma * p0) / omega * np.sin(omega * t))
    blocks = [blk("ground", "PlanarFixed"), blk("sd", "PlanarSpringDamper", c=c, d=d),
              blk("m", "PlanarPointMass", m=m, x0=x0, y0=y0, vy0=vy0)]
    wires = [pin("ground", "frame", "sd", "a"), pin("sd", "b", "m", "com")]
    sensed(blocks, wires, "x", "PlanarPositionSensor", {"a": ("m", "com")}, axis="x")
    sensed(blocks, wires, "y", "PlanarPositionSensor", {"a": ("m", "com")}, axis="y")
    return fixture(
        "Free point mass on a PlanarSpringDamper to a fixed frame (no gravity: no PlanarWorld)",
        "F = -(c dr + d dv) per world axis: p'' + (d/m) p' + (c/m) p = 0 for p = x, y; underdamped, "
        "p = exp(-s t) (p0 cos(w t) + (v0 + s p0)/w sin(w t)), s = d/2m, w = sqrt(c/m - s^2); c = 25, d = 2, "
        "m = 1, (x0, y0) = (0.4, -0.2), (vx0, vy0) = (0, 1)",
        blocks, wires, 0.05, 4.0, "ode45",
        {"x": decay(x0, 0.0), "y": decay(y0, vy0)})


def rolling_slope():
    t = grid(0.1, 2.0)
    angle, radius, m, inertia = 0.3, 0.25, 2.0, 0.05
    e = (math.cos(angle), -math.sin(angle))
    normal = (-e[1], e[0])
    a = G * math.sin(angle) / (1 + inertia / (m * radius ** 2))
    s = a * t * t / 2
    centre = (radius * normal[0], radius * normal[1])
    blocks = [blk("world", "PlanarWorld"), blk("wheel", "PlanarRollingWheel", dx=e[0], dy=e[1], radius=radius),
              blk("b", "PlanarBody", m=m, I=inertia, x0=centre[0], y0=centre[1])]
    wires = [pin("wheel", "a", "b", "com")]
    sensed(blocks, wires, "x", "PlanarPositionSensor", {"a": ("b", "com")}, axis="x")
    sensed(blocks, wires, "w", "PlanarVelocitySensor", {"a": ("b", "com")}, axis="phi")
    return fixture(
        "Wheel rolling without slip down a slope of 0.3 rad (PlanarRollingWheel on the line through the origin)",
        "a = g sin(theta) / (1 + I/(m R^2)) along the line, s = a t^2/2; centre at R n (n = J e, the wheel "
        "on the left of e), x = R n_x + s cos(theta); rolling e.v = -w R: w = -a t / R. theta = 0.3, R = 0.25, "
        "m = 2, I = 0.05",
        blocks, wires, 0.1, 2.0, "dae",
        {"x": centre[0] + s * e[0], "w": -a * t / radius})


def rolling_pushed():
    t = grid(0.1, 2.0)
    radius, m, inertia, force = 0.5, 3.0, 0.2, 6.0
    a = force / (m + inertia / radius ** 2)
    blocks = [blk("world", "PlanarWorld"), blk("wheel", "PlanarRollingWheel", radius=radius),
              blk("b", "PlanarBody", m=m, I=inertia, y0=radius), blk("push", "PlanarForce", fx=force)]
    wires = [pin("wheel", "a", "b", "com"), pin("push", "a", "b", "com")]
    sensed(blocks, wires, "x", "PlanarPositionSensor", {"a": ("b", "com")}, axis="x")
    sensed(blocks, wires, "phi", "PlanarPositionSensor", {"a": ("b", "com")}, axis="phi")
    return fixture(
        "Wheel on level ground pushed by a constant PlanarForce at its centre",
        "a = F/(m + I/R^2) (components.md 5.6), x = a t^2/2, phi = -x/R (rolling without slip to the right turns "
        "the wheel clockwise); F = 6, m = 3, I = 0.2, R = 0.5",
        blocks, wires, 0.1, 2.0, "ode45",
        {"x": a * t * t / 2, "phi": -a * t * t / (2 * radius)})


def revolute_torque():
    t = grid(0.1, 2.0)
    tau, inertia = 1.5, 0.6
    blocks = [blk("world", "PlanarWorld"), blk("pin", "PlanarRevolute"), blk("b", "PlanarBody", m=2.0, I=inertia),
              blk("motor", "PlanarTorque", tau=tau)]
    wires = [pin("world", "frame", "pin", "a"), pin("pin", "b", "b", "com"), pin("motor", "a", "b", "com")]
    sensed(blocks, wires, "phi", "PlanarPositionSensor", {"a": ("b", "com")}, axis="phi")
    sensed(blocks, wires, "w", "PlanarVelocitySensor", {"a": ("b", "com")}, axis="phi")
    sensed(blocks, wires, "alpha", "PlanarAccelerationSensor", {"a": ("b", "com")}, axis="phi")
    sensed(blocks, wires, "y", "PlanarPositionSensor", {"a": ("b", "com")}, axis="y")
    return fixture(
        "Body pinned at the world origin (PlanarRevolute) spun by a PlanarTorque",
        "I alpha = tau: alpha = tau/I, w = tau t/I, phi = tau t^2/(2I); the pin holds the centre against gravity: "
        "y = 0. tau = 1.5, I = 0.6",
        blocks, wires, 0.1, 2.0, "dae",
        {"phi": tau * t * t / (2 * inertia), "w": tau * t / inertia, "alpha": np.full(t.size, tau / inertia),
         "y": np.zeros(t.size)})


def relative_torque():
    t = grid(0.1, 2.0)
    tau, ia, ib = 0.8, 0.4, 1.6
    blocks = [blk("a", "PlanarBody", I=ia), blk("b", "PlanarBody", I=ib, x0=2.0),
              blk("actuator", "PlanarRelativeTorque", tau=tau)]
    wires = [pin("actuator", "a", "a", "com"), pin("actuator", "b", "b", "com")]
    sensed(blocks, wires, "phi_a", "PlanarPositionSensor", {"a": ("a", "com")}, axis="phi")
    sensed(blocks, wires, "phi_b", "PlanarPositionSensor", {"a": ("b", "com")}, axis="phi")
    return fixture(
        "Two free bodies driven apart by a PlanarRelativeTorque (nflow: +tau on a, -tau on b)",
        "I_a phi_a'' = tau, I_b phi_b'' = -tau: phi_a = tau t^2/(2 I_a), phi_b = -tau t^2/(2 I_b); tau = 0.8, "
        "I_a = 0.4, I_b = 1.6",
        blocks, wires, 0.1, 2.0, "ode45",
        {"phi_a": tau * t * t / (2 * ia), "phi_b": -tau * t * t / (2 * ib)})


FIXTURES = {"pendulum_large_amplitude": pendulum, "free_fall": free_fall, "inclined_prismatic": inclined_prismatic,
            "spring_mass_prismatic": spring_mass, "damper_prismatic": damper, "spring_damper_free": spring_damper,
            "rolling_wheel_slope": rolling_slope, "rolling_wheel_pushed": rolling_pushed,
            "revolute_torque": revolute_torque, "relative_torque": relative_torque}


def encode(doc: dict) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY) + b"\n"


def write() -> int:
    FOLDER.mkdir(parents=True, exist_ok=True)
    for name, make in FIXTURES.items():
        (FOLDER / f"{name}.json").write_bytes(encode(make()))
    return len(FIXTURES)


if __name__ == "__main__":
    if sys.argv[1:]:
        sys.exit("usage: python -m tests.blocks.planar_fixtures")
    print(f"wrote {write()} planar fixtures to {FOLDER}")
