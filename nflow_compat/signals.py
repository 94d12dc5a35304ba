"""Signal data types: nflow's quantizeToType (round half away from zero, saturate)."""
from __future__ import annotations

import math

import numpy as np

# name -> (low, high) for the integer types; None for the floating types.
INTEGER_RANGES = {
    "int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535),
    "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1),
    "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1),
}
TYPES = ("double", "single", "boolean", *INTEGER_RANGES)


_WHOLE = 2.0 ** 52  # from here on every double is already a whole number


def round_half_away(x):
    """C++ std::round, exactly: nearest whole number, halves away from zero, sign kept
    (-0.3 -> -0.0); NaN and infinities pass through. (floor(|x| + 0.5) is wrong for
    0.49999999999999994 and for odd numbers just above 2**52.)"""
    if isinstance(x, float):
        a = abs(x)
        if not a < _WHOLE:
            return x
        r = float(math.floor(a))
        if a - r >= 0.5:        # exact below 2**52
            r += 1.0
        return math.copysign(r, x)
    a = np.abs(x)
    r = np.floor(a)
    r = np.where(a - r >= 0.5, r + 1.0, r)   # inf - inf is NaN: the comparison leaves inf alone
    return np.copysign(r, x)


def quantize(value, type_name: str):
    """Cast a float (or float array) to ``type_name``'s value set, kept as float: ``cast``
    with nflow's default rounding (nearest) and saturation, int64 / uint64 projected to
    the nearest double."""
    if type_name == "double":
        return value
    out = cast(value, type_name)
    if type_name in EXACT64:
        return float(out) if isinstance(out, int) else out.astype(float)
    return out


# ----------------------------------------------------------------------------- buses

class BusMember:
    """One member of a bus: ``offset`` is its first element in the packed bus, ``width``
    its element count (a nested bus counts its packed width), ``bus`` the nested
    ``BusLayout`` (None for a plain signal)."""

    __slots__ = ("name", "offset", "width", "bus")

    def __init__(self, name: str, offset: int, width: int, bus=None):
        self.name, self.offset, self.width, self.bus = name, offset, width, bus

    def __repr__(self) -> str:
        return f"BusMember({self.name!r}, offset={self.offset}, width={self.width}" + \
            (f", bus={self.bus!r})" if self.bus is not None else ")")


class BusLayout(int):
    """The width of a bus signal, carrying the bus's member table.

    nflow stores a bus as one flat vector: its members packed contiguously in port
    order, a nested bus occupying its own packed width. What makes it a bus is
    compile-time metadata only (nflow's bus-type registry): member names, offsets,
    widths. Here that metadata rides on the width itself: a ``BusLayout`` *is* an int
    (its value is the packed width, at least 1), so every width rule, slot allocation and
    recorder treats it as a plain vector width, and blocks whose width rule hands the
    input width object on unchanged (``elementwise``: signalConversion, gain, switch...;
    ``ic_width``: unitDelay, zoh...) carry the layout downstream.
    Any rule that computes a new int (mux, selector, demux) ends the bus.

    Equality and hashing are int's (by width only); ``signature`` compares layouts.
    ``members`` are the top-level members; ``resolve('a.b')`` walks dotted paths.
    """

    def __new__(cls, members):
        """``members``: iterable of ``(name, width)``; a width that is itself a
        ``BusLayout`` makes a nested bus. Widths below 1 (unconnected) count as 1."""
        table, offset = [], 0
        for name, width in members:
            w = max(1, int(width))
            table.append(BusMember(str(name), offset, w, width if isinstance(width, BusLayout) else None))
            offset += w
        self = super().__new__(cls, max(1, offset))
        self.members = tuple(table)
        return self

    def __reduce__(self):
        return (BusLayout, ([(m.name, m.bus if m.bus is not None else m.width) for m in self.members],))

    def __str__(self) -> str:       # messages print the element count, like a plain width
        return str(int(self))

    def __format__(self, spec: str) -> str:
        return format(int(self), spec)

    def __repr__(self) -> str:
        return f"BusLayout({int(self)}: " + ", ".join(
            f"{m.name}[{m.offset}:{m.offset + m.width}]" + (f"={m.bus!r}" if m.bus is not None else "")
            for m in self.members) + ")"

    @property
    def names(self) -> list:
        return [m.name for m in self.members]

    @property
    def signature(self) -> tuple:
        """A hashable description of the whole layout (names, widths, nesting)."""
        return tuple((m.name, m.width, None if m.bus is None else m.bus.signature) for m in self.members)

    def resolve(self, path: str):
        """The member at dotted ``path`` ('a' or 'a.b.c') as a ``BusMember`` whose offset
        is absolute in this bus, or None. Each step takes the first member of that name
        (nflow splits paths at every dot, so a member name containing a dot cannot be
        addressed)."""
        layout, offset, found = self, 0, None
        for part in path.split("."):
            if layout is None:
                return None
            found = next((m for m in layout.members if m.name == part), None)
            if found is None:
                return None
            offset += found.offset
            layout = found.bus
        return BusMember(path, offset, found.width, found.bus)

    def paths(self, prefix: str = "") -> list:
        """Every addressable dotted path, depth first (members, then their members)."""
        out = []
        for m in self.members:
            out.append(prefix + m.name)
            if m.bus is not None:
                out += m.bus.paths(prefix + m.name + ".")
        return out


def width_key(width) -> tuple:
    """What distinguishes two port widths: the element count, a bus's layout and a
    shaped signal's dims (plain ``==`` on widths compares element counts only)."""
    return (int(width), width.signature if isinstance(width, BusLayout) else None, getattr(width, "dims", None))


# ----------------------------------------------------------------------------- casts

# nflow's SigRounding names (convert's Rounding param); anything else is 'nearest'.
ROUNDINGS = {"nearest": "nearest", "floor": "floor", "ceiling": "ceiling", "ceil": "ceiling",
             "zero": "zero", "fix": "zero"}
EXACT64 = ("int64", "uint64")
_ROUND_SCALAR = {"nearest": round_half_away, "floor": math.floor, "ceiling": math.ceil, "zero": math.trunc}
_ROUND_VECTOR = {"nearest": round_half_away, "floor": np.floor, "ceiling": np.ceil, "zero": np.trunc}


def _whole(x: float, rounding: str) -> int:
    """A finite double rounded to a whole number (an exact Python int)."""
    return int(_ROUND_SCALAR[rounding](x))


def _into_range(v: int, lo: int, hi: int, saturate: bool) -> int:
    """An exact integer brought into [lo, hi]: clamped, or wrapped modulo 2**bits."""
    if lo <= v <= hi:
        return v
    if saturate:
        return lo if v < lo else hi
    return (v - lo) % (hi - lo + 1) + lo


def _cast64(u, type_name: str, rounding: str, saturate: bool) -> int:
    """One element cast to int64 / uint64, exactly: an integer source keeps its value
    (no rounding), a double is rounded by ``rounding``. NaN gives 0; an infinity gives
    the bound on its side whether or not the cast saturates (modular wrap has no value
    for it)."""
    lo, hi = INTEGER_RANGES[type_name]
    if isinstance(u, (int, np.integer)):
        return _into_range(int(u), lo, hi, saturate)
    x = float(u)
    if x != x:
        return 0
    if x in (math.inf, -math.inf):
        return hi if x > 0.0 else lo
    return _into_range(_whole(x, rounding), lo, hi, saturate)


def cast(value, type_name: str, rounding: str = "nearest", saturate: bool = True):
    """nflow's quantizeToType / quantizeDoubleToI64: ``value`` (a real number or an array
    of them) cast to ``type_name``'s value set.

    * double: the double value (an integer source is projected to the nearest double);
    * single: rounded to float32 (overflow gives an infinity); boolean: 1 where != 0
      (NaN included), else 0;
    * int8 ... uint32: rounded by ``rounding`` ('nearest' = half away from zero, 'floor',
      'ceiling', 'zero'), then clamped into the type's range (``saturate``) or wrapped
      modulo 2**bits; NaN gives 0 and an infinity its bound in both modes. The result is
      a float (nflow keeps these types in the double lane);
    * int64 / uint64: the same rules on exact integers. Many of these values have no
      double (2**63 - 1, a wrapped -1 as uint64 = 2**64 - 1), so the result is a Python
      int for a scalar and an int64 / uint64 array for a vector (nflow's exact lane).
    """
    if type_name in EXACT64:
        if isinstance(value, np.ndarray):
            dtype = np.int64 if type_name == "int64" else np.uint64
            return np.array([_cast64(u, type_name, rounding, saturate) for u in value.tolist()], dtype=dtype)
        return _cast64(value, type_name, rounding, saturate)
    if isinstance(value, np.ndarray):
        x = value.astype(float)
    else:
        x = float(value)
    if type_name == "double":
        return x
    if type_name == "single":
        return float(np.float32(x)) if isinstance(x, float) else x.astype(np.float32).astype(float)
    if type_name == "boolean":
        return float(x != 0.0) if isinstance(x, float) else (x != 0.0).astype(float)
    lo, hi = INTEGER_RANGES[type_name]
    if isinstance(x, float):
        if x != x:
            return 0.0
        if x in (math.inf, -math.inf):
            return float(hi if x > 0.0 else lo)
        r = float(_ROUND_VECTOR[rounding](x))   # a double, as in C (-0.3 rounds to -0.0)
        if lo <= r <= hi:
            return r
        return float(_into_range(int(r), lo, hi, saturate))
    r = np.nan_to_num(_ROUND_VECTOR[rounding](x), nan=0.0, posinf=float(hi), neginf=float(lo))
    if not saturate:
        # the floored modulo of a whole double is exact (fmod is), and so is the shift
        # into [lo, hi] (|values| < 2**33); values already in range stay as they are
        span = float(hi - lo + 1)
        wrapped = np.mod(r, span)
        wrapped = np.where(wrapped > hi, wrapped - span, wrapped)
        r = np.where((r >= lo) & (r <= hi), r, wrapped)
    return np.clip(r, float(lo), float(hi))


# ----------------------------------------------------------------------------- matrix shapes

class Shaped(int):
    """A port width that also carries the signal's dimensions (column-major data).

    Signals are flat: a 2x3 matrix is a width-6 signal whose element (r, c) sits at
    ``c*rows + r`` (nflow's layout). Which dims a flat signal has is compile-time
    metadata; like ``BusLayout`` it rides on the width: a ``Shaped`` *is* its element
    count for every width rule, and rules that hand an input width on unchanged
    (``elementwise``) keep the dims. ``dims_of`` reads them back; a plain width ``n``
    is a 1-D ``[n]`` signal (n rows, 1 column), a scalar ``[]``.
    """

    def __new__(cls, dims):
        dims = tuple(int(d) for d in dims)
        self = super().__new__(cls, math.prod(dims) if dims else 1)
        self.dims = dims
        return self

    def __reduce__(self):
        return (Shaped, (self.dims,))

    def __str__(self) -> str:       # messages print the element count, like a plain width
        return str(int(self))

    def __format__(self, spec: str) -> str:
        return format(int(self), spec)

    def __repr__(self) -> str:
        return f"Shaped({'x'.join(map(str, self.dims)) or 'scalar'})"


def dims_of(width) -> tuple:
    """The dimensions of a port of ``width``: its ``Shaped`` dims, else ``(width,)``
    (``()`` for a scalar or unconnected port)."""
    dims = getattr(width, "dims", None)
    if dims is not None:
        return dims
    return (int(width),) if width > 1 else ()
