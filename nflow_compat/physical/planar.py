"""Planar multibody mechanics: nflow's ``acausal_planar`` blocks as hybrid systems.

The physics is Newton-Euler in the plane with joints as constraints, in the conventions of
DLR's PlanarMechanics 1.6.0 (MSL 4.1.0 has no planar library), restated in
``reference/msl-multidomain/components.md`` section 5; where nflow's catalog says more
(the world axis of a prismatic joint, the linear isotropic damper) it is followed.

How an island is built
----------------------
* **Frames.** Pins joined by connections are one frame (a node). It carries ``x, y, phi``
  (world position, counter-clockwise angle) across and ``fx, fy, t`` through. A frame holding
  a PlanarWorld or a PlanarFixed is fixed. A frame holding bodies moves with them; several
  bodies on one frame are welded (masses and inertias add, their start values must agree). A
  frame holding neither is massless: the joints position it.
* **Coordinates** ``q``: ``x, y`` of every moving frame and its ``phi`` when a PlanarBody turns
  it or an element uses it (a prismatic joint, a rolling wheel, a torque). A point mass has
  no orientation: where nothing uses its angle it is not a coordinate (it reads 0). The
  state is ``(q, v)``; the mass matrix is diagonal (bodies at their centre of mass).
* **Joints** are constraint rows: linear ones in ``q`` (revolute, prismatic, the rolling
  wheel's height), the rod ``(|d|^2 - L^2) / (2 L) = 0`` and the rolling condition
  ``e.v + R w = 0`` (non-holonomic, a velocity row only).
* **Dynamics.** Each derivative solves the KKT system ``[[M, J^T], [J, 0]] [a; lambda] =
  [F; gamma]`` (LU factorization) with the constraints differentiated to the acceleration
  level and Baumgarte-stabilized: ``J a = -J' v - 2 k (J v) - k^2 g`` for the position rows
  and ``-k (J v)`` for the rolling rows (``k = BAUMGARTE_RATE``; see ``accelerations`` for
  the rods), so the drift that integration errors cause decays instead of growing.
* **Projection.** The start state, the state after every event and the state that sensors
  read (every output) are projected onto the position and velocity constraint manifold
  (mass-weighted least change: Newton on the positions, one solve on the velocities), so
  what a run reports meets the joints to ~1e-12.
* **Closed loops and redundancy.** The start configuration is found by a rank-revealing
  least-squares Newton over all rows; rows that the others imply (a redundant joint of a
  closed loop) are then left out of the dynamics (QR with column pivoting). Rows that
  cannot all hold are a ``DiagramError`` naming their joints. A closed loop carries a
  singularity monitor (an event function, ``PlanarIsland._monitor``): a configuration where
  its joints lose rank, or a singular KKT system met anywhere, is a ``SimulationError`` with
  the time and the joints. An open chain's Jacobian has full rank everywhere.
* **Gravity** is PlanarWorld's ``gravity`` along -y for every body of the diagram (PM's world
  is one per model); all PlanarWorld blocks of a diagram must agree.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
from scipy.cluster.hierarchy import DisjointSet

from ..errors import DiagramError, SimulationError
from .nodes import connected_elements, join_pins

DOMAIN = "planar"

BAUMGARTE_RATE = 5.0       # 1/s; fixed-step RK4 stays stable for steps up to ~0.5 s
SINGULAR_PIVOT = 1e-12     # an LU pivot this small relative to the largest: singular
RANK_TOL = 1e-10           # relative singular value below which a row is dependent
SINGULAR_RANK = 1e-6       # ... and where the monitor stops the run (see PlanarIsland._monitor)
PROJECTION_TOL = 1e-12     # constraint residual (m, rad) a projected state meets (x scale)
PROJECTION_ITERATIONS = 50

# block type -> its physical pins (the manifest's, in order)
PINS = {
    "PlanarWorld": ("frame",), "PlanarFixed": ("frame",),
    "PlanarBody": ("com",), "PlanarPointMass": ("com",),
    "PlanarRevolute": ("a", "b"), "PlanarPrismatic": ("a", "b"), "PlanarDistance": ("a", "b"),
    "PlanarRollingWheel": ("a",),
    "PlanarPositionSensor": ("a",), "PlanarVelocitySensor": ("a",), "PlanarAccelerationSensor": ("a",),
    "PlanarRelPositionSensor": ("a", "b"), "PlanarDistanceSensor": ("a", "b"),
    "PlanarSpringDamper": ("a", "b"), "PlanarSpring": ("a", "b"), "PlanarDamper": ("a", "b"),
    "PlanarForce": ("a",), "PlanarTorque": ("a",), "PlanarRelativeTorque": ("a", "b"),
}
TYPES = tuple(PINS)

# sensors: block type -> (quantity, axis names it accepts -> component 0 x, 1 y, 2 phi)
_XY_PHI = {"x": 0, "y": 1, "phi": 2}
SENSORS = {
    "PlanarPositionSensor": ("position", _XY_PHI),
    "PlanarVelocitySensor": ("velocity", dict(_XY_PHI, w=2, omega=2)),
    "PlanarAccelerationSensor": ("acceleration", dict(_XY_PHI, alpha=2)),
    "PlanarRelPositionSensor": ("relative_position", _XY_PHI),
    "PlanarDistanceSensor": ("distance", None),
}

# elements that use the angle of the frames at these pins (it becomes a coordinate)
_TURNS = {"PlanarPrismatic": ("a", "b"), "PlanarRollingWheel": ("a",), "PlanarTorque": ("a",),
          "PlanarRelativeTorque": ("a", "b")}

# parameter checks: block type -> ((param, requirement), ...)
_POSITIVE, _NONNEGATIVE, _FINITE = "a positive", "a non-negative", "a finite"
_CHECKS = {
    "PlanarWorld": (("gravity", _FINITE),),
    "PlanarFixed": (("x", _FINITE), ("y", _FINITE)),
    "PlanarBody": (("m", _POSITIVE), ("I", _POSITIVE), ("x0", _FINITE), ("y0", _FINITE), ("phi0", _FINITE),
                   ("vx0", _FINITE), ("vy0", _FINITE), ("w0", _FINITE)),
    "PlanarPointMass": (("m", _POSITIVE), ("x0", _FINITE), ("y0", _FINITE), ("vx0", _FINITE), ("vy0", _FINITE)),
    "PlanarPrismatic": (("dx", _FINITE), ("dy", _FINITE)),
    "PlanarDistance": (("length", _POSITIVE),),
    "PlanarRollingWheel": (("dx", _FINITE), ("dy", _FINITE), ("px", _FINITE), ("py", _FINITE),
                           ("radius", _POSITIVE)),
    "PlanarSpringDamper": (("c", _NONNEGATIVE), ("d", _NONNEGATIVE)),
    "PlanarSpring": (("c", _NONNEGATIVE),),
    "PlanarDamper": (("d", _NONNEGATIVE),),
    "PlanarForce": (("fx", _FINITE), ("fy", _FINITE)),
    "PlanarTorque": (("tau", _FINITE),),
    "PlanarRelativeTorque": (("tau", _FINITE),),
}
_DIRECTIONS = {"PlanarPrismatic", "PlanarRollingWheel"}   # (dx, dy) must not be zero


def _number(block, key: str, need: str) -> float:
    value = block.params[key]
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise DiagramError("param_type", f"block {block.id!r}: parameter {key} must be a number",
                           **block.where(key)) from None
    bad = not math.isfinite(value) or (need == _POSITIVE and value <= 0) or (need == _NONNEGATIVE and value < 0)
    if bad:
        raise DiagramError("param_range", f"block {block.id!r}: parameter {key} must be {need} number, got "
                           f"{value:g}", **block.where(key))
    return value


def _params(block) -> dict:
    """The block's numeric parameters, checked (``_CHECKS``)."""
    values = {key: _number(block, key, need) for key, need in _CHECKS.get(block.type.type, ())}
    if block.type.type in _DIRECTIONS and values["dx"] == 0 and values["dy"] == 0:
        raise DiagramError("param_range", f"block {block.id!r}: the direction (dx, dy) must not be zero",
                           **block.where("dx"))
    return values


def _axis(block) -> int | None:
    quantity, axes = SENSORS[block.type.type]
    if axes is None:
        return None
    axis = block.params.get("axis")
    if not isinstance(axis, str) or axis not in axes:
        raise DiagramError("param_value", f"block {block.id!r}: axis must be one of {', '.join(axes)}, got "
                           f"{axis!r}", **block.where("axis"))
    return axes[axis]


@dataclass
class _Element:
    name: str
    block: object            # the diagram block (id, path, params)
    params: dict


class Network:
    """The planar blocks of a diagram and their pin connections; ``build`` gives one
    :class:`PlanarIsland` per connected mechanism."""

    def __init__(self):
        self.elements: dict = {}
        self.connections: list = []

    def add(self, name: str, block) -> dict:
        """Add a planar block as element ``name``; returns its pin map ``pins`` (block pin ->
        'element.pin') and, for a sensor, its ``probes`` (output port -> probe)."""
        kind = block.type.type
        element = _Element(name, block, _params(block))
        self.elements[name] = element
        pins = {pin: f"{name}.{pin}" for pin in PINS[kind]}
        probes = {}
        if kind in SENSORS:
            quantity = SENSORS[kind][0]
            refs = [f"{name}.{pin}" for pin in PINS[kind]]
            probes[0] = ((quantity, _axis(block)), refs[0], refs[1] if len(refs) > 1 else None)
        return {"pins": pins, "probes": probes}

    def connect(self, a: str, b: str):
        self.connections.append((a, b))

    def build(self) -> list:
        element_pins = {name: [f"{name}.{pin}" for pin in PINS[el.block.type.type]]
                        for name, el in self.elements.items()}
        node_of = join_pins(sorted(p for pins in element_pins.values() for p in pins), self.connections)
        gravity = self._gravity()
        # mechanisms: elements sharing a frame
        return [_Mechanism([self.elements[m] for m in members], node_of, gravity).island()
                for members in connected_elements(element_pins, node_of)]

    def _gravity(self) -> float:
        worlds = [el for _, el in sorted(self.elements.items()) if el.block.type.type == "PlanarWorld"]
        values = {el.params["gravity"] for el in worlds}
        if len(values) > 1:
            raise DiagramError("gravity_conflict", "the PlanarWorld blocks " + ", ".join(
                repr(el.block.id) for el in worlds) + " give different gravity values; a diagram has one "
                "world", **worlds[1].block.where("gravity"))
        return values.pop() if values else 0.0


# ----------------------------------------------------------------------------- frames

@dataclass
class _Frame:
    """One node: its coordinate indices (None: not a coordinate) and the constant values of
    the components that are not coordinates."""
    root: str
    members: list                       # 'element.pin'
    index: list = field(default_factory=lambda: [None, None, None])   # x, y, phi
    value: list = field(default_factory=lambda: [0.0, 0.0, 0.0])      # when not a coordinate
    fixed: bool = False
    mass: float = 0.0
    inertia: float = 0.0
    start: tuple | None = None          # (x, y, phi, vx, vy, w) of its bodies
    turns: bool = False                 # its angle is a coordinate

    @property
    def label(self) -> str:
        return "frame {" + ", ".join(self.members[:4]) + (", ..." if len(self.members) > 4 else "") + "}"


class _Rows:
    """Constraint rows while they are assembled: linear position rows ``sum coef q + c``,
    rods, and velocity-only (rolling) rows, each with its owner element; ``joints``: the
    frames each joint ties (None: the ground)."""

    def __init__(self):
        self.linear, self.rods, self.rolling, self.joints = [], [], [], []

    def closed_loop(self) -> bool:
        """Whether the joints form a loop (the fixed frames being one ground). An open chain's
        Jacobian has full rank everywhere (each joint holds its own child frame), so only a
        loop can meet a singular configuration."""
        sets = DisjointSet()
        for a, b in self.joints:
            ends = [None if f is None or f.fixed else f.root for f in (a, b)]
            if ends[0] is None and ends[1] is None:
                continue
            for end in ends:
                if end not in sets:
                    sets.add(end)
            if sets.connected(*ends):
                return True
            sets.merge(*ends)
        return False


class _Mechanism:
    """One connected mechanism while it is compiled into a :class:`PlanarIsland`."""

    def __init__(self, members: list, node_of: dict, gravity: float):
        self.members = members
        self.gravity = gravity
        self.frames: dict = {}
        for el in members:
            for pin in PINS[el.block.type.type]:
                ref = f"{el.name}.{pin}"
                root = node_of[ref]
                self.frames.setdefault(root, _Frame(root, [])).members.append(ref)
        self.frame_of = {ref: self.frames[node_of[ref]] for el in members
                         for ref in (f"{el.name}.{p}" for p in PINS[el.block.type.type])}
        self.element_names = [el.name for el in members]
        self.warnings: list = []

    def frame(self, el, pin) -> _Frame:
        return self.frame_of[f"{el.name}.{pin}"]

    # -- frames and coordinates ---------------------------------------------------------------
    def _place(self):
        for el in self.members:
            kind, p = el.block.type.type, el.params
            if kind in ("PlanarWorld", "PlanarFixed"):
                frame = self.frame(el, "frame")
                where = (p.get("x", 0.0), p.get("y", 0.0))
                if frame.fixed and (frame.value[0], frame.value[1]) != where:
                    raise DiagramError("fixed_conflict", f"{frame.label} is fixed at two different points "
                                       f"({frame.value[0]:g}, {frame.value[1]:g}) and ({where[0]:g}, {where[1]:g})",
                                       block=el.block.id, path=el.block.path)
                frame.fixed, frame.value = True, [where[0], where[1], 0.0]
        for el in self.members:
            kind, p = el.block.type.type, el.params
            if kind not in ("PlanarBody", "PlanarPointMass"):
                continue
            frame = self.frame(el, "com")
            body = kind == "PlanarBody"
            start = (p["x0"], p["y0"], p["phi0"] if body else None, p["vx0"], p["vy0"], p["w0"] if body else None)
            if frame.fixed:
                if (start[0], start[1]) != (frame.value[0], frame.value[1]) or any(start[3:5]) or (body and (
                        start[2] or start[5])):
                    self.warnings.append(f"{el.block.id}: its frame is fixed, so it does not move; its start "
                                         "values are ignored")
                continue
            if frame.start is not None:
                if any(a is not None and b is not None and a != b for a, b in zip(frame.start, start)):
                    raise DiagramError("weld_conflict", f"{el.block.id!r} is joined rigidly to another body at "
                                       f"{frame.label} but its start values differ from that body's",
                                       block=el.block.id, path=el.block.path)
                start = tuple(b if a is None else a for a, b in zip(frame.start, start))
            frame.start = start
            frame.mass += p["m"]
            if body:
                frame.inertia += p["I"]
                frame.turns = True
        for el in self.members:
            for pin in _TURNS.get(el.block.type.type, ()):
                self.frame(el, pin).turns = True

    def _coordinates(self):
        """Coordinate indices, masses and start values (massless frames start where a
        neighbour is, a rod's length away along x for a rod)."""
        n = 0
        mass, q0, v0 = [], [], []
        ordered = [self.frames[r] for r in sorted(self.frames)]
        self._guess_massless(ordered)
        for frame in ordered:
            if frame.fixed:
                continue
            start = frame.start
            for axis in (0, 1, 2):
                if axis == 2 and not frame.turns:
                    continue
                frame.index[axis] = n
                n += 1
                mass.append(frame.mass if axis < 2 else frame.inertia)
                q0.append(start[axis] if start[axis] is not None else 0.0)
                v0.append(start[axis + 3] if start[axis + 3] is not None else 0.0)
        self.ordered = ordered
        return n, np.array(mass), np.array(q0), np.array(v0)

    def _guess_massless(self, ordered):
        known = {f.root for f in ordered if f.fixed or f.start is not None}
        for f in ordered:
            if f.fixed:
                f.start = (f.value[0], f.value[1], 0.0, 0.0, 0.0, 0.0)
        for _ in range(len(ordered)):
            progress = False
            for el in self.members:
                pins = PINS[el.block.type.type]
                if len(pins) != 2:
                    continue
                a, b = self.frame(el, pins[0]), self.frame(el, pins[1])
                offset = el.params["length"] if el.block.type.type == "PlanarDistance" else 0.0
                for src, dst, sign in ((a, b, 1.0), (b, a, -1.0)):
                    if src.root in known and dst.root not in known:
                        s = src.start
                        dst.start = (s[0] + sign * offset, s[1], s[2] if s[2] is not None else 0.0, 0.0, 0.0, 0.0)
                        known.add(dst.root)
                        progress = True
            if not progress:
                break
        for f in ordered:
            if f.start is None:
                f.start = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)

    # -- elements ------------------------------------------------------------------------------
    def island(self) -> "PlanarIsland":
        self._place()
        n, mass, q0, v0 = self._coordinates()
        rows = _Rows()
        forces = _Forces(n)
        for frame in self.ordered:
            if frame.index[1] is not None:
                forces.constant[frame.index[1]] -= frame.mass * self.gravity
        for el in self.members:
            stamp = _STAMPS.get(el.block.type.type)
            if stamp is not None:
                stamp(self, el, rows, forces)
        self._check_sensors()
        return PlanarIsland(self, n, mass, q0, v0, rows, forces)

    def _check_sensors(self):
        sensors = {el.name for el in self.members if el.block.type.type in SENSORS}
        for el in self.members:
            if el.name not in sensors:
                continue
            for pin in PINS[el.block.type.type]:
                if all(ref.split(".")[0] in sensors for ref in self.frame(el, pin).members):
                    raise SimulationError("sensor_unattached", f"sensor {el.block.id!r} is not connected to any "
                                          "planar element", block=el.block.id, path=el.block.path)


class _Forces:
    """Applied forces ``F(q, v) = constant - K q - D v`` (world components, torques)."""

    def __init__(self, n: int):
        self.constant = np.zeros(n)
        self.K = np.zeros((n, n))
        self.D = np.zeros((n, n))

    def pair(self, a: _Frame, b: _Frame, stiffness: float, damping: float):
        """The linear law ``force on b = -stiffness (r_b - r_a) - damping (v_b - v_a)``,
        its opposite on a, per world axis (fixed frames: constant positions, no speed)."""
        for axis in (0, 1):
            for this, other in ((b, a), (a, b)):
                i, j = this.index[axis], other.index[axis]
                if i is None:
                    continue
                self.K[i, i] += stiffness
                self.D[i, i] += damping
                if j is None:
                    self.constant[i] += stiffness * other.value[axis]
                else:
                    self.K[i, j] -= stiffness
                    self.D[i, j] -= damping

    def add(self, frame: _Frame, axis: int, value: float):
        i = frame.index[axis]
        if i is not None:
            self.constant[i] += value


def _linear_row(rows, owner, terms, constant=0.0):
    """A position row ``sum(coef * frame component) + constant = 0``; ``terms``:
    ``[(frame, axis, coef)]`` (terms that cancel, a joint's two pins on one frame, drop out)."""
    coefs, c = {}, constant
    for frame, axis, coef in terms:
        i = frame.index[axis]
        if i is None:
            c += coef * frame.value[axis]
        else:
            coefs[i] = coefs.get(i, 0.0) + coef
    rows.linear.append((owner, {i: k for i, k in coefs.items() if k != 0.0}, c))


def _unit_rows(M):
    """``M`` with every non-zero row scaled to length 1."""
    norms = np.sqrt((M * M).sum(axis=1))
    return M / np.where(norms > 0.0, norms, 1.0)[:, None]


def _revolute(mech, el, rows, forces):
    a, b = mech.frame(el, "a"), mech.frame(el, "b")
    rows.joints.append((a, b))
    for axis in (0, 1):
        _linear_row(rows, el, [(b, axis, 1.0), (a, axis, -1.0)])


def _unit(p):
    norm = math.hypot(p["dx"], p["dy"])
    return p["dx"] / norm, p["dy"] / norm


def _prismatic(mech, el, rows, forces):
    # nflow: b slides along the *world* axis (dx, dy) through a; no motion along the normal
    # n = J e, and the relative rotation is locked
    a, b = mech.frame(el, "a"), mech.frame(el, "b")
    rows.joints.append((a, b))
    ex, ey = _unit(el.params)
    nx, ny = -ey, ex
    _linear_row(rows, el, [(b, 0, nx), (b, 1, ny), (a, 0, -nx), (a, 1, -ny)])
    _linear_row(rows, el, [(b, 2, 1.0), (a, 2, -1.0)])


def _distance(mech, el, rows, forces):
    rows.joints.append((mech.frame(el, "a"), mech.frame(el, "b")))
    rows.rods.append((el, mech.frame(el, "a"), mech.frame(el, "b"), el.params["length"]))


def _rolling_wheel(mech, el, rows, forces):
    # PM IdealRolling on the line p + s e: n.(r - p) = R with n = J e (the wheel on the left
    # of e), and rolling without slip e.v = -w R
    a = mech.frame(el, "a")
    rows.joints.append((a, None))
    p = el.params
    ex, ey = _unit(p)
    nx, ny = -ey, ex
    _linear_row(rows, el, [(a, 0, nx), (a, 1, ny)], -(nx * p["px"] + ny * p["py"]) - p["radius"])
    coefs = {}
    for axis, coef in ((0, ex), (1, ey), (2, p["radius"])):
        if a.index[axis] is not None:
            coefs[a.index[axis]] = coef
    rows.rolling.append((el, coefs))


def _spring(mech, el, rows, forces):
    forces.pair(mech.frame(el, "a"), mech.frame(el, "b"), el.params["c"], 0.0)


def _damper(mech, el, rows, forces):
    forces.pair(mech.frame(el, "a"), mech.frame(el, "b"), 0.0, el.params["d"])


def _spring_damper(mech, el, rows, forces):
    forces.pair(mech.frame(el, "a"), mech.frame(el, "b"), el.params["c"], el.params["d"])


def _force(mech, el, rows, forces):
    a = mech.frame(el, "a")
    forces.add(a, 0, el.params["fx"])
    forces.add(a, 1, el.params["fy"])


def _torque(mech, el, rows, forces):
    forces.add(mech.frame(el, "a"), 2, el.params["tau"])


def _relative_torque(mech, el, rows, forces):
    # nflow's help: +tau on the body at a, -tau on the body at b (PM's RelativeForce has
    # the opposite sign)
    forces.add(mech.frame(el, "a"), 2, el.params["tau"])
    forces.add(mech.frame(el, "b"), 2, -el.params["tau"])


_STAMPS = {
    "PlanarRevolute": _revolute, "PlanarPrismatic": _prismatic, "PlanarDistance": _distance,
    "PlanarRollingWheel": _rolling_wheel, "PlanarSpring": _spring, "PlanarDamper": _damper,
    "PlanarSpringDamper": _spring_damper, "PlanarForce": _force, "PlanarTorque": _torque,
    "PlanarRelativeTorque": _relative_torque,
}


# ----------------------------------------------------------------------------- the island

# LAPACK's LU called directly: the scipy.linalg wrappers' checks cost more than the
# factorization of these small systems, which runs at every derivative
_GETRF, _GETRS = scipy.linalg.get_lapack_funcs(("getrf", "getrs"), dtype=np.float64)


class _KKT:
    """The system ``[[diag(diagonal), J^T], [J, 0]]`` over a subset ``rows`` of the
    constraint rows: the constant entries are set once; the rods' entries, linear in the
    rod vectors, are ``V q + v0`` per state."""

    def __init__(self, diagonal, island: "PlanarIsland", rows):
        n = diagonal.size
        self.n, self.rows = n, rows
        size = n + rows.size
        J0 = island._J0
        template = np.zeros((size, size))
        template[range(n), range(n)] = diagonal
        template[n:, :n] = J0[rows, :n]
        template[:n, n:] = J0[rows, :n].T
        self.template = template
        # the rods' entries that are here: rod_slots (rod, group b_x/b_y/a_x/a_y) -> column
        position = {int(r): p for p, r in enumerate(rows)}
        slots = island._rod_slots
        pick, lower, upper = [], [], []
        for k in range(slots.shape[0]):
            p = position.get(island.n_linear + k)
            if p is None:
                continue
            for group, column in enumerate(slots[k]):
                if column < n:
                    pick.append(group * slots.shape[0] + k)
                    lower.append((n + p) * size + column)
                    upper.append(column * size + n + p)
        # each entry twice (J and J^T), as V q + v0
        entries = island._rod_entries[pick + pick]
        self.V, self.v0 = entries @ island._S, entries @ island._d0
        self.where = np.array(lower + upper, dtype=int)

    def matrix(self, q):
        kkt = self.template.copy()
        if self.where.size:
            kkt.flat[self.where] = self.V @ q + self.v0
        return kkt

    @staticmethod
    def factor(kkt):
        """LU factors of ``kkt`` (overwritten), or None when a pivot is negligible (singular)."""
        lu, piv, info = _GETRF(kkt, overwrite_a=1)
        pivots = [abs(p) for p in lu.diagonal().tolist()]   # a few numbers: faster in Python
        if pivots and (info != 0 or not max(pivots) < math.inf or min(pivots) <= SINGULAR_PIVOT * max(pivots)):
            return None
        return lu, piv

    def solve(self, factor, top, bottom):
        """The first block of the solution for the right-hand side ``[top; bottom]``."""
        x, _ = _GETRS(factor[0], factor[1], np.concatenate((top, bottom)))
        return x[:self.n]


class PlanarIsland:
    """One mechanism as a hybrid system (``engine.hybrid``): state ``(q, v)``, the KKT
    derivative, projection at the start, at events and for the sensors."""

    def __init__(self, mech: _Mechanism, n: int, mass, q0, v0, rows: _Rows, forces: _Forces):
        self.element_names = mech.element_names
        self.label = "mechanism {" + ", ".join(self.element_names[:4]) + (
            ", ..." if len(self.element_names) > 4 else "") + "}"
        self._blocks = {el.name: el.block for el in mech.members}
        self._frame_of = mech.frame_of
        self._frames = mech.ordered
        self.n = n
        self.mass = mass
        self._F, self._K, self._D = forces.constant, forces.K, forces.D
        self._springs = bool(np.any(forces.K)) or bool(np.any(forces.D))
        self._compile_rows(rows)
        self._monitored = rows.closed_loop()
        self.inputs = np.zeros(0)
        self.input_names: list = []
        self.rate_inputs = frozenset()
        self.events: list = []
        self._warnings = list(mech.warnings)
        self._cache = (None, None)
        q, v = self._consistent_start(q0, v0)
        self._systems()
        self.x0 = np.concatenate((q, v))
        self._check_determined(q)

    # -- rows ----------------------------------------------------------------------------------
    def _compile_rows(self, rows: _Rows):
        """``J0``: every row's constant Jacobian entries over ``(q, fixed values)`` (the
        rods' rows are filled per state); ``c``: the linear rows' constants."""
        n = self.n
        fixed_values = []

        def slot(frame, axis):   # a rod end component: a coordinate, or a fixed value after q
            if frame.index[axis] is not None:
                return frame.index[axis]
            fixed_values.append(frame.value[axis])
            return n + len(fixed_values) - 1
        linear, rods = [], []
        for el, coefs, c in rows.linear:
            if coefs:
                linear.append((el.name, coefs, c))
            elif abs(c) > PROJECTION_TOL * (1.0 + abs(c)):
                self._inconsistent([el.name], "its frames are fixed where it cannot hold")
        for el, a, b, length in rows.rods:
            if a is b:
                self._inconsistent([el.name], "both its ends are on the same frame")
            if not (a.fixed and b.fixed):
                rods.append((el.name, [slot(b, 0), slot(b, 1), slot(a, 0), slot(a, 1)], length))
            elif abs(math.hypot(b.value[0] - a.value[0], b.value[1] - a.value[1]) - length) > PROJECTION_TOL * (
                    1.0 + length):
                self._inconsistent([el.name], "its ends are fixed at another distance")
        rolling = [(el.name, coefs) for el, coefs in rows.rolling if coefs]
        self._owners = [name for name, *_ in linear + rods + rolling]
        self.n_rows = len(self._owners)
        self.n_linear, self._holonomic = len(linear), len(linear) + len(rods)
        self._fixed_values = np.array(fixed_values)
        self._J0 = np.zeros((self.n_rows, n + len(fixed_values)))
        for row, (_, coefs) in enumerate([(name, coefs) for name, coefs, _ in linear]):
            for i, coef in coefs.items():
                self._J0[row, i] = coef
        for row, (_, coefs) in enumerate(rolling, start=self._holonomic):
            for i, coef in coefs.items():
                self._J0[row, i] = coef
        self._c = np.array([c for *_, c in linear])
        self._rod_slots = np.array([s for _, s, _ in rods], dtype=int).reshape(len(rods), 4)
        r = len(rods)
        length = np.array([length for *_, length in rods])
        width = self._J0.shape[1]
        self._rod_flat = ((self.n_linear + np.arange(r))[None, :] * width + self._rod_slots.T).ravel()
        # everything about the rods is linear in d = r_b - r_a, kept as S q + d0 (x components,
        # then y; fixed ends are constants) and evaluated with these matrices:
        extended = np.vstack((np.eye(n), np.zeros((len(fixed_values), n))))
        values = np.concatenate((np.zeros(n), self._fixed_values))
        b_x, b_y, a_x, a_y = self._rod_slots.T
        self._S = np.vstack((extended[b_x] - extended[a_x], extended[b_y] - extended[a_y])).reshape(2 * r, n)
        self._d0 = np.concatenate((values[b_x] - values[a_x], values[b_y] - values[a_y]))
        inverse = np.diag(1.0 / length) if r else np.zeros((0, 0))
        zero = np.zeros((r, r))
        # Jacobian entries d/L at b, -d/L at a, grouped b_x, b_y, a_x, a_y
        self._rod_entries = np.block([[inverse, zero], [zero, inverse], [-inverse, zero], [zero, -inverse]])
        # (d*d) @ sums: per rod |d|^2 / (2L) (residual (|d|^2 - L^2) / 2L), and |w|^2 / L
        self._half_length = 0.5 * length
        self._squares_half = np.vstack((0.5 * inverse, 0.5 * inverse))
        self._squares = np.vstack((inverse, inverse))
        self._active = np.arange(self.n_rows)

    def _systems(self):
        """The KKT systems of the run over the independent rows: dynamics (masses), and the
        projections (weights) on the position rows and on all rows."""
        active = self._active
        self._dynamics = _KKT(self.mass, self, active)
        positions = active[active < self._holonomic]
        self._positions = _KKT(self._metric(positions), self, positions)
        self._velocities = _KKT(self._metric(active), self, active)
        self._all_active = active.size == self.n_rows
        # gamma over the state x = (q, v) (see accelerations): the linear and rolling rows'
        # -(k^2 A q + 2k A v) - k^2 c and -k N v, then the rods' k^2 L - |S (k q + v) + k d0|^2 / L
        n, k = self.n, BAUMGARTE_RATE
        A = self._J0[:, :n]
        rolling = np.arange(self.n_rows) >= self._holonomic
        self._gamma_state = -np.hstack((np.where(rolling[:, None], 0.0, k * k * A),
                                        np.where(rolling[:, None], k, 2.0 * k) * A))
        self._gamma_constant = np.zeros(self.n_rows)
        self._gamma_constant[:self.n_linear] = -k * k * self._c
        self._rod_state = np.hstack((k * self._S, self._S))
        self._rod_constant = k * self._d0
        self._rod_rows = slice(self.n_linear, self._holonomic)
        self._rod_level = k * k * 2.0 * self._half_length

    def _jacobian(self, q):
        """All rows' Jacobian at ``q`` (for the rare paths: start, errors)."""
        J = self._J0.copy()
        if self._rod_flat.size:
            J.flat[self._rod_flat] = self._rod_entries @ (self._S @ q + self._d0)
        return J[:, :self.n]

    def _residual(self, q):
        """The position rows' residuals: linear rows, then rods ``(|d|^2 - L^2) / 2L``."""
        linear = self._J0[:self.n_linear, :self.n] @ q + self._c if self.n_linear else None
        if not self._half_length.size:
            return np.zeros(0) if linear is None else linear
        d = self._S @ q + self._d0
        rods = (d * d) @ self._squares_half - self._half_length
        return rods if linear is None else np.concatenate((linear, rods))

    # -- dynamics ------------------------------------------------------------------------------
    def accelerations(self, t, x):
        """``a`` from the KKT system at the state ``x = (q, v)``, the constraints at the
        acceleration level Baumgarte-stabilized: ``J a = gamma = -J' v - 2k J v - k^2 g``
        (``-k J v`` for the rolling rows). For a rod, with ``d = r_b - r_a``, ``w = v_b - v_a``,
        ``-J' v = -|w|^2 / L`` and, taking ``g = (|d|^2 - L^2) / L``, gamma is
        ``k^2 L - |k d + w|^2 / L``."""
        n = self.n
        if not n:   # only fixed frames
            return np.zeros(0)
        q = x[:n]
        system = self._dynamics
        gamma = self._gamma_constant + self._gamma_state @ x
        if self._rod_level.size:
            z = self._rod_state @ x + self._rod_constant
            gamma[self._rod_rows] = self._rod_level - (z * z) @ self._squares
        if not self._all_active:
            gamma = gamma[system.rows]
        factor = system.factor(system.matrix(q))
        if factor is None:
            self._singular(t, q)
        force = self._F - self._K @ q - self._D @ x[n:] if self._springs else self._F
        return system.solve(factor, force, gamma)

    def derivative(self, t, x):
        return np.concatenate((x[self.n:], self.accelerations(t, x)))

    # -- projection ----------------------------------------------------------------------------
    @staticmethod
    def _largest(values) -> float:
        """max |values| (0 when empty), in Python: these arrays hold a few numbers."""
        return max(map(abs, values.tolist()), default=0.0)

    def _tolerance(self, q) -> float:
        return PROJECTION_TOL * max(1.0, self._largest(q))

    def project(self, t, x):
        """``x`` moved onto the position and velocity manifold (mass-weighted least change)."""
        q = self._project_positions(t, x[:self.n])
        return np.concatenate((q, self._project_velocities(t, q, x[self.n:])))

    def _project_positions(self, t, q):
        """Newton on the position rows, each step the least mass-weighted change."""
        system = self._positions
        tol = self._tolerance(q)
        for _ in range(PROJECTION_ITERATIONS):
            g = self._residual(q)
            if not self._all_active:
                g = g[system.rows]
            if self._largest(g) <= tol:
                return q
            factor = system.factor(system.matrix(q))
            if factor is None:
                self._singular(t, q)
            q = q + system.solve(factor, np.zeros(self.n), -g)
        raise SimulationError("planar_projection", f"{self.label}: the joints cannot be satisfied near the state "
                              f"at t = {t:.9g} (the projection onto them does not converge)",
                              block=self._block_ids(self.element_names[:1])[0])

    def _project_velocities(self, t, q, v):
        """``v`` with the least mass-weighted change that meets every velocity row at ``q``."""
        system = self._velocities
        if not system.rows.size:
            return v
        kkt = system.matrix(q)
        Jv = kkt[self.n:, :self.n] @ v
        factor = system.factor(kkt)
        if factor is None:
            self._singular(t, q)
        return v + system.solve(factor, np.zeros(self.n), -Jv)

    def _metric(self, rows):
        """The projections' metric: the masses (least kinetic change). A coordinate without
        mass is free to move (weight 0: the rows determine it) unless no row of ``rows``
        holds it, when it does not move anyway (weight 1 keeps the system regular)."""
        held = np.any(self._jacobian(np.zeros(self.n))[rows] != 0, axis=0) | (self._S != 0).any(axis=0)
        return np.where((self.mass > 0) | held, self.mass, 1.0)

    def _least_change(self, J, residual):
        """The change ``d`` of least mass-weighted norm with ``J d = -residual`` (least
        squares when that has no solution), rank-revealing: redundant rows and coordinates
        without mass (weight 0, free) are fine."""
        U, s, Vt = np.linalg.svd(J)
        rank = int(np.sum(s > RANK_TOL * s[0])) if s.size and s[0] > 0 else 0
        d = -(Vt[:rank].T @ ((U[:, :rank].T @ residual) / s[:rank]))
        free = Vt[rank:].T             # moves that keep J d: the one of least weight is taken
        if free.shape[1]:
            root = np.sqrt(self.mass)
            d = d + free @ np.linalg.lstsq(root[:, None] * free, -(root * d), rcond=None)[0]
        return d

    def _consistent_start(self, q, v):
        """The start state on all rows (Gauss-Newton, each step the least mass-weighted
        change); then the independent rows, kept for the run."""
        tol = self._tolerance(q)
        q_start, v_start = q.copy(), v.copy()
        for _ in range(PROJECTION_ITERATIONS):
            g = self._residual(q)
            if self._largest(g) <= tol:
                break
            step = self._least_change(self._jacobian(q)[:self._holonomic], g)
            q = q + step
            if self._largest(step) <= tol:
                break
        violated = np.abs(self._residual(q)) > 1e3 * tol
        if np.any(violated):
            self._inconsistent(self._dependent(q, violated), "they cannot all hold")
        if self.n_rows:
            J = self._jacobian(q)
            v = v + self._least_change(J, J @ v)
            _, R, order = scipy.linalg.qr(_unit_rows(J).T, mode="economic", pivoting=True)
            diag = np.abs(np.diagonal(R))
            rank = int(np.sum(diag > RANK_TOL * diag[0])) if diag.size and diag[0] > 0 else 0
            self._active = np.sort(order[:rank])
        moved = np.abs(q - q_start) + np.abs(v - v_start) > 1e-9 * (1.0 + np.abs(q_start) + np.abs(v_start))
        bodies = sorted({self._bodies_at(k) for k in np.nonzero(moved & (self.mass > 0))[0]})
        if bodies:
            self._warnings.append("the start values of " + ", ".join(bodies) + " did not satisfy the joints: "
                                  "they start at the nearest state that does")
        return q, v

    def _dependent(self, q, violated) -> list:
        """Owners of the violated rows and of the rows linearly dependent with them."""
        J = self._jacobian(q)[:self._holonomic]
        U, s, _ = np.linalg.svd(J)
        rank = int(np.sum(s > RANK_TOL * s[0])) if s.size and s[0] > 0 else 0
        involved = set(np.nonzero(violated)[0])
        if rank < J.shape[0]:
            involved |= set(np.nonzero(np.abs(U[:, rank:]).max(axis=1) > 1e-8)[0])
        return [self._owners[k] for k in sorted(involved)]

    def _check_determined(self, q):
        """The KKT system is regular at the start: every coordinate has a mass or a joint
        holding it."""
        if not self.n:
            return
        kkt = self._dynamics.matrix(q)
        if self._dynamics.factor(kkt.copy()) is not None:
            return
        null = np.abs(np.linalg.svd(kkt)[2][-1][:self.n])
        loose = [k for k in range(self.n) if null[k] > 1e-6 * null.max()]
        frames = sorted({self._frame_label(k) for k in loose})
        first = self._blocks[self._frame_at(loose[0]).members[0].split(".")[0]]
        raise DiagramError("planar_undetermined", f"{self.label}: the motion of " + ", ".join(frames) + " is not "
                           "determined (a frame without mass, or a point mass's angle, which has no inertia, that "
                           "no joint holds or that takes a force or torque)", block=first.id, path=first.path)

    # -- errors --------------------------------------------------------------------------------
    def _block_ids(self, names) -> list:
        return [self._blocks[name].id for name in names]

    def _frame_at(self, k) -> _Frame:
        return next(f for f in self._frames if k in f.index)

    def _frame_label(self, k) -> str:
        ids = sorted({self._blocks[ref.split(".")[0]].id for ref in self._frame_at(k).members})
        return "the frame of " + ", ".join(ids)

    def _bodies_at(self, k) -> str:
        frame = self._frame_at(k)
        return ", ".join(sorted({self._blocks[name].id for name in (ref.split(".")[0] for ref in frame.members)
                                 if self._blocks[name].type.type in ("PlanarBody", "PlanarPointMass")}))

    def _inconsistent(self, names, why):
        ids = self._block_ids(names)
        raise DiagramError("planar_overconstrained", f"{self.label}: the joints " + ", ".join(ids) + f" are "
                           f"inconsistent ({why}): remove one of them or fix the geometry", block=ids[0],
                           path=self._blocks[names[0]].path)

    def _singular(self, t, q):
        """A singular KKT system during the run: name the joints whose rows became dependent."""
        J = self._jacobian(q)[self._active]
        names = []
        if J.shape[0]:
            U, s, _ = np.linalg.svd(_unit_rows(J))
            if s[-1] <= SINGULAR_RANK * s[0]:
                names = [self._owners[k] for k, w in zip(self._active, np.abs(U[:, -1])) if w > 1e-3]
        names = names or [self._owners[k] for k in self._active] or self.element_names[:1]
        ids = self._block_ids(names)
        raise SimulationError("planar_singular", f"{self.label}: singular configuration at t = {t:.9g} (joints "
                              + ", ".join(ids) + "): the joints no longer determine the motion", block=ids[0],
                              path=self._blocks[names[0]].path)

    # -- hybrid-system interface ---------------------------------------------------------------
    # The singularity monitor (closed loops only): g = det([J(q); P^T]) with its rows
    # normalized, P a basis of the motion directions (the null space of J) at the last
    # restart. It is +-1 there and 0 where J loses rank, and it changes sign when the
    # mechanism passes a singular configuration, so the solver locates that instant. It also
    # vanishes, harmlessly, when the motion directions have turned by 90 degrees from P: the
    # event then takes a new P.
    def _monitor(self, q):
        J = self._dynamics.matrix(q)[self.n:, :self.n]
        return np.linalg.det(_unit_rows(np.vstack((J, self._tangent.T))))

    def _rebase(self, q):
        J = self._jacobian(q)[self._active]
        self._tangent = np.linalg.svd(J)[2][J.shape[0]:].T

    def event_functions(self, t, x):
        if not self._monitored:
            return np.zeros(0)
        return np.array([self._monitor(x[:self.n])])

    def relation_values(self, t, x):
        return np.full(1 if self._monitored else 0, np.nan)   # the side it starts on

    def initialize(self, t0, x0):
        self.events = []
        self._cache = (None, None)
        x = self.project(t0, np.asarray(x0, dtype=float))
        if self._monitored:
            self._rebase(x[:self.n])
        return x

    def handle_events(self, t, x, fired=()):
        x = self.project(t, np.asarray(x, dtype=float))
        if fired:   # the monitor: a singular configuration, or a new basis of the motion
            q = x[:self.n]
            s = np.linalg.svd(_unit_rows(self._jacobian(q)[self._active]), compute_uv=False)
            if s[-1] <= SINGULAR_RANK * s[0]:
                self._singular(t, q)
            self._rebase(q)
        return x

    def next_time_event(self, t):
        return math.inf

    def input_index(self, element: str) -> int:
        raise KeyError(f"{element}: planar blocks take no signal inputs")

    def start_warnings(self) -> list:
        return list(self._warnings)

    # -- reading -------------------------------------------------------------------------------
    def _observed(self, t, x, level):
        """Position (level 0), velocity (1) or acceleration (2) coordinates of the state
        projected onto the joints: what every sensor reads. Cached per state, each level
        computed when first asked for."""
        key = (t, x.tobytes())
        if self._cache[0] != key:
            self._cache = (key, [None, None, None])
        levels = self._cache[1]
        if levels[level] is None:
            if levels[0] is None:
                levels[0] = self._project_positions(t, x[:self.n])
            if level > 0 and levels[1] is None:
                levels[1] = self._project_velocities(t, levels[0], x[self.n:])
            if level == 2:
                levels[2] = self.accelerations(t, np.concatenate((levels[0], levels[1])))
        return levels[level]

    def _component(self, ref, values, axis, level):
        """A frame's component ``axis`` (x, y, phi) among ``values`` of ``level``; a component
        that is not a coordinate is its constant value (position), or 0 (its rates)."""
        frame = self._frame_of[ref]
        i = frame.index[axis]
        if i is not None:
            return float(values[i])
        return frame.value[axis] if level == 0 else 0.0

    def probe(self, kind, target: str, other: str | None = None):
        """A reader ``(t, x) -> value`` of a sensor quantity (``SENSORS``) at frame ``target``
        (minus ``other``'s for the relative position, the distance to ``other``)."""
        quantity, axis = kind
        component, observed = self._component, self._observed
        if quantity == "distance":
            def read(t, x):
                q = observed(t, np.asarray(x, dtype=float), 0)
                return math.hypot(component(other, q, 0, 0) - component(target, q, 0, 0),
                                  component(other, q, 1, 0) - component(target, q, 1, 0))
        elif quantity == "relative_position":
            def read(t, x):
                q = observed(t, np.asarray(x, dtype=float), 0)
                return component(target, q, axis, 0) - component(other, q, axis, 0)
        else:
            level = _LEVELS[quantity]

            def read(t, x):
                return component(target, observed(t, np.asarray(x, dtype=float), level), axis, level)
        return read

    def probe_linear(self, kind, target):
        return None

    def probe_inputs(self, kind, target, other=None) -> set:
        return set()

    probes_pure = False     # planar sensors are declared pure by their handler (blocks.mechanical)

    def probe_pick(self, kind, target, other=None):
        return None


_LEVELS = {"position": 0, "velocity": 1, "acceleration": 2}
