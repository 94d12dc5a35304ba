"""nflow's Lookup Tables library: lookup1D, lookup2D, lookupND, directLookup, prelookup,
interpolationPrelookup, lookupDynamic.

Every block follows nflow's C++ handler for it, arithmetic included (the order of the
operations of each interpolation formula is kept, so results agree to the last bit):

* tables and breakpoints are checked when the diagram is compiled (nflow's dimension
  pass): at least 2 strictly increasing breakpoints per dimension and a table of the
  matching size, else a DiagramError (code ``param_value``) with nflow's message;
* multi-dimensional tables are column-major: element (i, j) of a 2-D table sits at
  ``i + j*R`` (R = number of dimension-1 breakpoints). A table given as a matrix (a
  list of rows, what ``jsonencode`` makes of a MATLAB matrix) is read as that matrix,
  ``Table(i, j)`` = row i, column j, and flattened column-major the same way;
* a block writes nothing while a required input is unconnected (the output keeps its
  initial value 0): lookup1D, prelookup, interpolationPrelookup (input 0); lookup2D,
  lookupND, directLookup (any of the first N inputs); lookupDynamic (any of the three).

Interval search: on a breakpoint vector ``bp`` an in-range ``u`` belongs to the largest
``i <= n-2`` with ``bp[i] <= u``. The handlers differ for NaN: lookup1D and prelookup put
it in interval 0, lookup2D / lookupND in interval n-2 (their loop runs down from the top
and never moves), which shows with Flat and Nearest.

lookup2D / lookupND with a spline InterpMethod: nflow interpolates them as a separable
tensor product (a 1-D spline along dimension 1 for every column, then along the next
dimension through those values) with a helper (``lookup_spline.hpp``) whose source is not
on the pages. This port uses lookup1D's spline routine for each 1-D pass, which is an
inference.
"""
from __future__ import annotations

import bisect
import math

import numpy as np

from ..errors import SimulationError
from ..signals import round_half_away
from . import Phases, block, scalar_out

SPLINES = ("Cubic spline", "Akima spline")
_TWO63 = 2.0 ** 63


# ============================================================================= params

def _vector(io, name: str) -> list:
    value = io.params.get(name)
    if value is None:
        return []
    return [float(v) for v in np.atleast_1d(np.asarray(value, dtype=float)).reshape(-1)]


def _table(io, name: str = "Table") -> list:
    """A table param flattened column-major (a nested-list matrix is read as rows)."""
    value = io.params.get(name)
    if value is None:
        return []
    return [float(v) for v in np.atleast_1d(np.asarray(value, dtype=float)).reshape(-1, order="F")]


def _increasing(v: list) -> bool:
    return all(b > a for a, b in zip(v, v[1:]))     # NaN fails, as in nflow


def _breakpoints(io, name: str, what: str, minimum_message: str) -> list:
    bp = _vector(io, name)
    if len(bp) < 2:
        io.fail("param_value", minimum_message, name)
    if not _increasing(bp):
        io.fail("param_value", f"{what} breakpoints must be strictly increasing", name)
    return bp


def _dims(io, what: str) -> int:
    """(int) NumberOfTableDimensions, truncated toward zero; at least 1."""
    raw = float(io.params["NumberOfTableDimensions"])
    n = int(raw) if math.isfinite(raw) else 0
    if n < 1:
        io.fail("param_value", f"{what} requires NumberOfTableDimensions >= 1", "NumberOfTableDimensions")
    return n


def _missing_ports_note(io, count: int, what: str):
    """Warn (each run) when fewer input ports are declared than the table has dimensions:
    nflow then never writes the output."""
    if io.block.inputs >= count:
        return None
    note = (f"block {io.id!r} ({what}): the table has {count} dimension(s) but the block declares "
            f"{io.block.inputs} input port(s); as in nflow its output is never written")
    ctx = io.ctx

    def init():
        ctx.warnings.append(note)
    return init


# ============================================================================= 1-D splines

def cubic_spline_m(x: list, y: list) -> list:
    """Second derivatives M of the cubic spline through (x, y): not-a-knot (continuous
    third derivative at x[1] and x[n-2]) for n >= 4, natural (M = 0 at both ends) for
    n == 3, all zeros below. Solved by Gauss-Jordan elimination with partial pivoting,
    step for step as nflow does, so the coefficients match to the last bit."""
    n = len(x)
    if n < 3:
        return [0.0] * n
    h = [x[i + 1] - x[i] for i in range(n - 1)]
    A = [[0.0] * n for _ in range(n)]
    rhs = [0.0] * n
    for i in range(1, n - 1):
        A[i][i - 1] = h[i - 1]
        A[i][i] = 2.0 * (h[i - 1] + h[i])
        A[i][i + 1] = h[i]
        rhs[i] = 6.0 * ((y[i + 1] - y[i]) / h[i] - (y[i] - y[i - 1]) / h[i - 1])
    if n >= 4:
        A[0][0] = h[1]
        A[0][1] = -(h[0] + h[1])
        A[0][2] = h[0]
        A[n - 1][n - 3] = h[n - 2]
        A[n - 1][n - 2] = -(h[n - 3] + h[n - 2])
        A[n - 1][n - 1] = h[n - 3]
    else:
        A[0][0] = 1.0
        A[n - 1][n - 1] = 1.0
    for col in range(n):
        piv = col
        for r in range(col + 1, n):
            if abs(A[r][col]) > abs(A[piv][col]):
                piv = r
        A[col], A[piv] = A[piv], A[col]
        rhs[col], rhs[piv] = rhs[piv], rhs[col]
        d = A[col][col]
        if abs(d) < 1e-300:
            continue
        for r in range(n):
            if r == col:
                continue
            f = A[r][col] / d
            if f != 0.0:
                row, pivot_row = A[r], A[col]
                for c in range(col, n):
                    row[c] -= f * pivot_row[c]
                rhs[r] -= f * rhs[col]
    return [rhs[i] / A[i][i] if abs(A[i][i]) > 1e-300 else 0.0 for i in range(n)]


def akima_derivs(x: list, y: list) -> list:
    """Akima (1970) slopes at the breakpoints: secant slopes extended by two on each side
    linearly; where both weights are 0 the mean of the two neighbouring secants."""
    n = len(x)
    if n < 3:
        return [0.0] * n
    ext = [0.0] * (n + 3)            # ext[k] = secant k - 2
    for i in range(n - 1):
        ext[i + 2] = (y[i + 1] - y[i]) / (x[i + 1] - x[i])
    ext[1] = 2.0 * ext[2] - ext[3]
    ext[0] = 2.0 * ext[1] - ext[2]
    ext[n + 1] = 2.0 * ext[n] - ext[n - 1]
    ext[n + 2] = 2.0 * ext[n + 1] - ext[n]
    t = [0.0] * n
    for i in range(n):
        w1 = abs(ext[i + 3] - ext[i + 2])
        w2 = abs(ext[i + 1] - ext[i])
        t[i] = 0.5 * (ext[i + 1] + ext[i + 2]) if w1 + w2 == 0.0 else \
            (w1 * ext[i + 1] + w2 * ext[i + 2]) / (w1 + w2)
    return t


def _cubic_eval(x, y, m, i, u):
    h = x[i + 1] - x[i]
    if h == 0.0:
        return y[i]
    a = (x[i + 1] - u) / h
    b = (u - x[i]) / h
    return a * y[i] + b * y[i + 1] + ((a * a * a - a) * m[i] + (b * b * b - b) * m[i + 1]) * (h * h) / 6.0


def _akima_eval(x, y, t, i, u):
    h = x[i + 1] - x[i]
    if h == 0.0:
        return y[i]
    p = (y[i + 1] - y[i]) / h
    dx = u - x[i]
    a2 = (3.0 * p - 2.0 * t[i] - t[i + 1]) / h
    a3 = (t[i] + t[i + 1] - 2.0 * p) / (h * h)
    return y[i] + t[i] * dx + a2 * dx * dx + a3 * dx * dx * dx


def interp1d(bp: list, tbl: list, interp: str, extrap: str, use_last: bool = False):
    """nflow's 1-D interpolation as a float -> float function (lookup1D's handler; also
    used for each 1-D pass of the 2-D / n-D splines).

    At or beyond an end breakpoint: exactly on it -> that table value; past the last one
    with ``use_last`` -> the last value (for every InterpMethod); otherwise ExtrapMethod:
    'Linear' extends the end segment, 'Cubic spline' / 'Akima spline' extend the end
    cubic when InterpMethod is that spline, anything else clips. Inside: Flat = left
    value, Nearest = left below f = 0.5 and right from it, Linear Lagrange
    (1-f)*t0 + f*t1, Linear point-slope t0 + f*(t1 - t0), the splines need n >= 3 (below
    that they are point-slope)."""
    n = len(bp)
    if n == 0:
        return lambda u: 0.0
    if n == 1:
        only = tbl[0]
        return lambda u: only
    spline = interp == "Cubic spline" and n >= 3
    akima = interp == "Akima spline" and n >= 3
    coef = cubic_spline_m(bp, tbl) if spline else (akima_derivs(bp, tbl) if akima else None)
    curve = _cubic_eval if spline else (_akima_eval if akima else None)
    first, last, t_first, t_last = bp[0], bp[-1], tbl[0], tbl[-1]
    slope_lo = (tbl[1] - tbl[0]) / (bp[1] - bp[0])
    slope_hi = (tbl[n - 1] - tbl[n - 2]) / (bp[n - 1] - bp[n - 2])
    curve_extrap = curve is not None and extrap == interp
    linear_extrap = not curve_extrap and extrap == "Linear"
    top = n - 2
    bisect_right = bisect.bisect_right

    def below(u):
        if u == first:
            return t_first
        if curve_extrap:
            return curve(bp, tbl, coef, 0, u)
        if linear_extrap:
            return t_first + (u - first) * slope_lo
        return t_first

    def above(u):
        if u == last or use_last:
            return t_last
        if curve_extrap:
            return curve(bp, tbl, coef, top, u)
        if linear_extrap:
            return t_last + (u - last) * slope_hi
        return t_last

    def locate(u):
        """(i, f) of an in-range u, or of NaN (interval 0, f = NaN)."""
        if u != u:
            return 0, math.nan
        i = bisect_right(bp, u) - 1
        if i > top:
            i = top
        return i, (u - bp[i]) / (bp[i + 1] - bp[i])

    if curve is not None:
        def inside(u):
            return curve(bp, tbl, coef, locate(u)[0], u)
    elif interp == "Flat":
        def inside(u):
            return tbl[locate(u)[0]]
    elif interp == "Nearest":
        def inside(u):
            i, f = locate(u)
            return tbl[i] if f < 0.5 else tbl[i + 1]
    elif interp == "Linear Lagrange":
        def inside(u):
            i, f = locate(u)
            return (1.0 - f) * tbl[i] + f * tbl[i + 1]
    else:  # "Linear point-slope" and, as in nflow, any other name
        def inside(u):
            i, f = locate(u)
            return tbl[i] + f * (tbl[i + 1] - tbl[i])

    def f(u):
        if u <= first:
            return below(u)
        if u >= last:
            return above(u)
        return inside(u)
    return f


def _interp1d_vector(bp: list, tbl: list, interp: str, extrap: str, use_last: bool):
    """``interp1d`` over a float array. Linear and flat methods are evaluated with numpy
    (same operations, same order); the splines go element by element."""
    scalar = interp1d(bp, tbl, interp, extrap, use_last)
    if len(bp) < 2 or (interp in SPLINES and len(bp) >= 3):
        def f(u):
            return np.array([scalar(x) for x in u.tolist()])
        return f
    x, y = np.asarray(bp), np.asarray(tbl)
    n = len(bp)
    top = n - 2
    slope_lo = (tbl[1] - tbl[0]) / (bp[1] - bp[0])
    slope_hi = (tbl[n - 1] - tbl[n - 2]) / (bp[n - 1] - bp[n - 2])
    linear = extrap == "Linear"
    where = np.where

    def f(u):
        nan = u != u
        i = np.minimum(np.searchsorted(x, u, side="right") - 1, top)
        i = where(nan | (i < 0), 0, i)
        x0, x1, y0, y1 = x[i], x[i + 1], y[i], y[i + 1]
        frac = (u - x0) / (x1 - x0)
        if interp == "Flat":
            v = y0
        elif interp == "Nearest":
            v = where(frac < 0.5, y0, y1)
        elif interp == "Linear Lagrange":
            v = (1.0 - frac) * y0 + frac * y1
        else:
            v = y0 + frac * (y1 - y0)
        lo = (y[0] + (u - x[0]) * slope_lo) if linear else y[0]
        lo = where(u == x[0], y[0], lo)
        hi = (y[-1] + (u - x[-1]) * slope_hi) if linear and not use_last else y[-1]
        hi = where(u == x[-1], y[-1], hi)
        return where(u <= x[0], lo, where(u >= x[-1], hi, v)).astype(float)
    return f


# ============================================================================= lookup1D

@block("lookup1D")
def lookup1d(io):
    """y = the BreakpointsForDimension1 / Table curve at u, element-wise (see interp1d
    for every InterpMethod / ExtrapMethod / UseLastTableValue case).
    DiagnosticForOutOfRangeInput: 'None' (default) says nothing; 'Warning' adds one
    warning per run, at the first step where an input element is below the first or
    above the last breakpoint; 'Error' stops the run there with a SimulationError
    (code lookup_out_of_range)."""
    bp = _breakpoints(io, "BreakpointsForDimension1", "lookup1D", "lookup1D requires at least 2 breakpoints")
    tbl = _vector(io, "Table")
    if len(tbl) != len(bp):
        io.fail("param_value", f"lookup1D breakpoints and table must have the same length "
                f"({len(bp)} breakpoints, {len(tbl)} table values)", "Table")
    p = io.params
    interp, extrap = p["InterpMethod"], p["ExtrapMethod"]
    use_last = bool(p.get("UseLastTableValue", False))
    action = p.get("DiagnosticForOutOfRangeInput", "None")
    i, o, S, ctx = io.ins[0], io.outs[0], io.S, io.ctx
    if i is None:
        return Phases()
    lo, hi = bp[0], bp[-1]
    if io.width == 1 or io.in_widths[0] == 1:
        scalar = interp1d(bp, tbl, interp, extrap, use_last)
        width = io.width
        # a scalar input with a wider output (another declared port is wider): broadcast
        f = scalar if width == 1 else (lambda u: np.full(width, scalar(u)))

        def out_of_range():
            u = S[i]
            return u < lo or u > hi
    else:
        f = _interp1d_vector(bp, tbl, interp, extrap, use_last)

        def out_of_range():
            u = S[i]
            return bool(np.any((u < lo) | (u > hi)))

    if action == "None":
        def algebraic():
            S[o] = f(S[i])
        return Phases(algebraic=algebraic)

    where = f"block {io.id!r} (lookup1D): input is outside the breakpoint range [{lo:g}, {hi:g}]"
    if action == "Error":
        def algebraic():
            if out_of_range():
                raise SimulationError("lookup_out_of_range", f"{where} at t = {ctx.t:g}", block=io.id)
            S[o] = f(S[i])
        return Phases(algebraic=algebraic)

    warned = False

    def init():
        nonlocal warned
        warned = False

    def algebraic():
        # A diagnostic, not simulation state: the flag only keeps the warning to one per
        # run, so re-entering this phase in the same step changes nothing.
        nonlocal warned
        if not warned and out_of_range():
            warned = True
            ctx.warnings.append(f"{where} (first at t = {ctx.t:g}); extrapolating per ExtrapMethod "
                                f"{extrap!r}")
        S[o] = f(S[i])
    return Phases(init=init, algebraic=algebraic)


# ============================================================================= lookup2D / lookupND

def _axis_locate(bp: list, linear: bool):
    """float -> (i, f): the interval and raw fraction on one axis. Below / above the
    breakpoints: the end interval, with f running past [0, 1] under Linear extrapolation
    and held at 0 / 1 otherwise. NaN: interval n-2, f = NaN."""
    n = len(bp)
    top = n - 2
    first, last = bp[0], bp[-1]
    d_lo, d_hi = bp[1] - bp[0], bp[n - 1] - bp[n - 2]
    bisect_right = bisect.bisect_right

    def locate(u):
        if u <= first:
            return 0, ((u - first) / d_lo if linear else 0.0)
        if u >= last:
            return top, ((u - bp[top]) / d_hi if linear else 1.0)
        if u != u:
            return top, math.nan
        i = bisect_right(bp, u) - 1
        if i > top:
            i = top
        return i, (u - bp[i]) / (bp[i + 1] - bp[i])
    return locate


def _axis_locate_vector(bp: list, linear: bool):
    x = np.asarray(bp)
    n = len(bp)
    top = n - 2
    where = np.where

    def locate(u):
        i = np.clip(np.searchsorted(x, u, side="right") - 1, 0, top)   # NaN lands on n-2
        f = (u - x[i]) / (x[i + 1] - x[i])
        below, above = u <= x[0], u >= x[-1]
        if linear:
            f = where(below, (u - x[0]) / (x[1] - x[0]), where(above, (u - x[top]) / (x[-1] - x[top]), f))
        else:
            f = where(below, 0.0, where(above, 1.0, f))
        i = where(below, 0, where(above, top, i))
        return i, f
    return locate


def _weight(interp: str):
    """Per-axis weight from the raw fraction: Flat 0, Nearest 0 below 0.5 else 1, the
    linear methods f."""
    if interp == "Flat":
        return lambda f: 0.0
    if interp == "Nearest":
        return lambda f: 0.0 if f < 0.5 else 1.0
    return lambda f: f


def _weight_vector(interp: str):
    if interp == "Flat":
        return lambda f: np.zeros_like(f)
    if interp == "Nearest":
        return lambda f: np.where(f < 0.5, 0.0, 1.0)
    return lambda f: f


def _spline_nd(bps: list, tbl: list, interp: str, extrap: str):
    """Separable tensor-product spline over column-major ``tbl``: a 1-D pass along
    dimension 1 for every combination of the outer indices, then along each outer
    dimension in turn through the values of the previous pass. The first pass only sees
    static table columns, so its splines are built once."""
    dims = [len(bp) for bp in bps]
    inner = dims[0]
    columns = [interp1d(bps[0], tbl[c:c + inner], interp, extrap) for c in range(0, len(tbl), inner)]

    def f(us):
        values = [col(us[0]) for col in columns]
        for k in range(1, len(bps)):
            nk = dims[k]
            values = [interp1d(bps[k], values[c:c + nk], interp, extrap)(us[k])
                      for c in range(0, len(values), nk)]
        return values[0]
    return f


@block("lookup2D")
def lookup2d(io):
    """y = Table at (u0, u1): u0 runs along BreakpointsForDimension1 (rows), u1 along
    BreakpointsForDimension2 (columns); Table is column-major, T(i, j) = Table[i + j*R].
    Flat / Nearest / linear: the four-corner blend
    T(i,j)(1-w1)(1-w2) + T(i+1,j) w1 (1-w2) + T(i,j+1)(1-w1) w2 + T(i+1,j+1) w1 w2 with
    per-axis weights w (Flat 0, Nearest 0/1 at f = 0.5, linear f); ExtrapMethod 'Linear'
    lets f run past the edges, anything else clips. Splines: see the module docstring.
    Element-wise; both inputs are required, else nothing is written."""
    bp1 = _breakpoints(io, "BreakpointsForDimension1", "lookup2D",
                       "lookup2D requires at least 2 breakpoints per dimension")
    bp2 = _breakpoints(io, "BreakpointsForDimension2", "lookup2D",
                       "lookup2D requires at least 2 breakpoints per dimension")
    tbl = _table(io)
    R, C = len(bp1), len(bp2)
    if len(tbl) != R * C:
        io.fail("param_value", f"lookup2D table size must be rows*cols ({R}*{C} = {R * C}, got {len(tbl)})", "Table")
    shape = np.shape(io.params["Table"])
    if len(shape) == 2 and 1 not in shape and shape != (R, C):
        io.fail("param_value", f"lookup2D Table is a {shape[0]}x{shape[1]} matrix; it must be {R}x{C} "
                f"(rows = BreakpointsForDimension1, columns = BreakpointsForDimension2)", "Table")
    interp, extrap = io.params["InterpMethod"], io.params["ExtrapMethod"]
    linear = extrap == "Linear"
    a, b = (io.ins + [None, None])[:2]
    S, o = io.S, io.outs[0]
    if a is None or b is None:
        return Phases()
    width = io.width
    if interp in SPLINES:
        spline = _spline_nd([bp1, bp2], tbl, interp, extrap)
        if width == 1:
            def algebraic():
                S[o] = spline((S[a], S[b]))
        else:
            def algebraic():
                ua = np.broadcast_to(S[a], (width,)).tolist()
                ub = np.broadcast_to(S[b], (width,)).tolist()
                S[o] = np.array([spline(pair) for pair in zip(ua, ub)])
        return Phases(algebraic=algebraic)
    if width == 1:
        loc1, loc2, weight = _axis_locate(bp1, linear), _axis_locate(bp2, linear), _weight(interp)

        def algebraic():
            i, f1 = loc1(S[a])
            j, f2 = loc2(S[b])
            w1, w2 = weight(f1), weight(f2)
            k = i + j * R
            S[o] = (tbl[k] * (1.0 - w1) * (1.0 - w2) + tbl[k + 1] * w1 * (1.0 - w2)
                    + tbl[k + R] * (1.0 - w1) * w2 + tbl[k + R + 1] * w1 * w2)
    else:
        loc1, loc2 = _axis_locate_vector(bp1, linear), _axis_locate_vector(bp2, linear)
        weight = _weight_vector(interp)
        t = np.asarray(tbl)
        shape = (width,)

        def algebraic():
            i, f1 = loc1(np.broadcast_to(S[a], shape))
            j, f2 = loc2(np.broadcast_to(S[b], shape))
            w1, w2 = weight(f1), weight(f2)
            k = i + j * R
            S[o] = (t[k] * (1.0 - w1) * (1.0 - w2) + t[k + 1] * w1 * (1.0 - w2)
                    + t[k + R] * (1.0 - w1) * w2 + t[k + R + 1] * w1 * w2)
    return Phases(algebraic=algebraic)


@block("lookupND")
def lookup_nd(io):
    """N = NumberOfTableDimensions (truncated) inputs, input k on
    BreakpointsForDimension{k+1}; column-major Table of prod(n_k) values. Flat / Nearest
    / linear: the sum over the 2^N corners c of prod_k (bit_k(c) ? w_k : 1-w_k) *
    Table[sum_k (i_k + bit_k(c)) * stride_k], weights as lookup2D. Splines: see the
    module docstring. Element-wise; nothing is written unless the first N inputs are all
    connected."""
    N = _dims(io, "lookupND")
    bps = []
    for k in range(N):
        name = f"BreakpointsForDimension{k + 1}"
        bps.append(_breakpoints(io, name, "lookupND", "lookupND requires at least 2 breakpoints per dimension"))
    tbl = _table(io)
    expected = math.prod(len(bp) for bp in bps)
    if len(tbl) != expected:
        io.fail("param_value", f"lookupND table size must equal the product of the breakpoint counts "
                f"({expected}, got {len(tbl)})", "Table")
    interp, extrap = io.params["InterpMethod"], io.params["ExtrapMethod"]
    linear = extrap == "Linear"
    init = _missing_ports_note(io, N, "lookupND")
    slots = (io.ins + [None] * N)[:N]
    S, o, width = io.S, io.outs[0], io.width
    if any(s is None for s in slots):
        return Phases(init=init)
    stride = [1] * N
    for k in range(1, N):
        stride[k] = stride[k - 1] * len(bps[k - 1])
    corners = []
    for c in range(1 << N):
        bits = [(c >> k) & 1 for k in range(N)]
        corners.append((bits, sum(bit * s for bit, s in zip(bits, stride))))
    size = len(tbl)
    if interp in SPLINES:
        spline = _spline_nd(bps, tbl, interp, extrap)
        if width == 1:
            def algebraic():
                S[o] = spline([S[s] for s in slots])
        else:
            def algebraic():
                columns = [np.broadcast_to(S[s], (width,)).tolist() for s in slots]
                S[o] = np.array([spline(us) for us in zip(*columns)])
        return Phases(algebraic=algebraic)
    if width == 1:
        locs = [_axis_locate(bp, linear) for bp in bps]
        weight = _weight(interp)
        axes = list(zip(slots, locs, stride))

        def algebraic():
            base, w = 0, []
            for s, loc, st in axes:
                i, f = loc(S[s])
                base += i * st
                w.append(weight(f))
            y = 0.0
            for bits, shift in corners:
                cw = 1.0
                for bit, wk in zip(bits, w):
                    cw *= wk if bit else 1.0 - wk
                off = base + shift
                if 0 <= off < size:
                    y += cw * tbl[off]
            S[o] = y
    else:
        locs = [_axis_locate_vector(bp, linear) for bp in bps]
        weight = _weight_vector(interp)
        axes = list(zip(slots, locs, stride))
        t = np.asarray(tbl)
        shape = (width,)

        def algebraic():
            base, w = 0, []
            for s, loc, st in axes:
                i, f = loc(np.broadcast_to(S[s], shape))
                base = base + i * st
                w.append(weight(f))
            y = np.zeros(shape)
            for bits, shift in corners:
                cw = np.ones(shape)
                for bit, wk in zip(bits, w):
                    cw = cw * (wk if bit else 1.0 - wk)
                # i_k <= n_k - 2, so every corner offset is inside the table
                y = y + cw * t[base + shift]
            S[o] = y
    return Phases(init=init, algebraic=algebraic)


# ============================================================================= directLookup

def _lround_int(u: float) -> int:
    """(int) std::lround(u) on x86-64 Linux: the 64-bit result (INT64_MIN for NaN,
    infinities and overflow) truncated to its low 32 bits, signed."""
    r = round_half_away(u)
    v = int(r) if -_TWO63 <= r < _TWO63 else -2 ** 63
    return ((v + 2 ** 31) % 2 ** 32) - 2 ** 31


def _lround_int_array(u) -> np.ndarray:
    r = round_half_away(np.asarray(u, dtype=float))
    v = np.where((r >= -_TWO63) & (r < _TWO63), r, -_TWO63).astype(np.int64)
    return v.astype(np.int32).astype(np.int64)    # keeps the low 32 bits, like the C cast


@block("directLookup")
def direct_lookup(io):
    """N = NumberOfTableDimensions (truncated) index inputs select one element of the
    column-major Table whose sizes are TableDimensions (each truncated, at least 1):
    y = Table[sum_k idx_k * stride_k] with idx_k = (int) lround(u_k) (zero-based, halves
    away from zero) clamped to 0..n_k-1. A NaN index reads as 0. Element-wise; nothing is
    written unless the first N inputs are all connected."""
    N = _dims(io, "directLookup")
    raw = _vector(io, "TableDimensions")
    if len(raw) != N:
        io.fail("param_value", f"directLookup requires TableDimensions with one size per dimension "
                f"(NumberOfTableDimensions {N}, got {len(raw)} size(s))", "TableDimensions")
    if not all(math.isfinite(d) for d in raw):
        io.fail("param_value", "directLookup TableDimensions must be finite", "TableDimensions")
    dims = [max(1, int(d)) for d in raw]
    tbl = _table(io)
    expected = math.prod(dims)
    if len(tbl) != expected:
        io.fail("param_value", f"directLookup table size must equal the product of TableDimensions "
                f"({expected}, got {len(tbl)})", "Table")
    init = _missing_ports_note(io, N, "directLookup")
    slots = (io.ins + [None] * N)[:N]
    S, o, width = io.S, io.outs[0], io.width
    if any(s is None for s in slots):
        return Phases(init=init)
    stride = [1] * N
    for k in range(1, N):
        stride[k] = stride[k - 1] * dims[k - 1]
    axes = [(s, n - 1, st) for s, n, st in zip(slots, dims, stride)]
    if width == 1:
        def algebraic():
            off = 0
            for s, hi, st in axes:
                idx = _lround_int(S[s])
                off += (0 if idx < 0 else (hi if idx > hi else idx)) * st
            S[o] = tbl[off]
    else:
        t = np.asarray(tbl)
        shape = (width,)

        def algebraic():
            off = 0
            for s, hi, st in axes:
                off = off + np.clip(_lround_int_array(np.broadcast_to(S[s], shape)), 0, hi) * st
            S[o] = t[off]
    return Phases(init=init, algebraic=algebraic)


# ============================================================================= prelookup

def _prelookup_widths(block, in_widths):
    return [1] * block.outputs


@block("prelookup", widths=_prelookup_widths)
def prelookup(io):
    """Output 0 = interval index k (zero-based), output 1 = fraction f of input element 0
    on BreakpointsForDimension1: below the first breakpoint (0, 0), at or above the last
    (n-2, 1), else bp[k] <= u < bp[k+1] and f = (u - bp[k]) / (bp[k+1] - bp[k]); NaN
    gives (0, NaN). Both outputs are scalars; with one output port declared only k
    leaves (nflow's older one-port, two-wide form is gone). Unconnected: nothing."""
    bp = _breakpoints(io, "BreakpointsForDimension1", "prelookup", "prelookup requires at least 2 breakpoints")
    i = io.ins[0] if io.ins else None
    S = io.S
    if i is None or not io.outs:
        return Phases()
    ok = io.outs[0]
    of = io.outs[1] if len(io.outs) > 1 else None
    n = len(bp)
    first, last, top = bp[0], bp[-1], float(n - 2)
    scalar_in = io.in_widths[0] == 1

    def locate(u):
        if u <= first:
            return 0.0, 0.0
        if u >= last:
            return top, 1.0
        if u != u:
            return 0.0, math.nan
        k = bisect.bisect_right(bp, u) - 1
        d = bp[k + 1] - bp[k]
        return float(k), ((u - bp[k]) / d if d != 0.0 else 0.0)

    def algebraic():
        u = S[i] if scalar_in else float(S[i][0])
        k, f = locate(u)
        S[ok] = k
        if of is not None:
            S[of] = f
    return Phases(algebraic=algebraic)


@block("interpolationPrelookup", widths=scalar_out)
def interpolation_prelookup(io):
    """y = Table[k] + f*(Table[k+1] - Table[k]) (scalar) with k = floor(index + 0.5)
    clamped to 0..m-2, index = element 0 of input 0 and f = element 0 of input 1 when
    that port is declared and connected, else element 1 of a two-wide input 0 (the older
    one-port prelookup form), else 0. A one-value Table gives that value. Input 0
    unconnected: nothing written."""
    tbl = _vector(io, "Table")
    if not tbl:
        io.fail("param_value", "interpolationPrelookup requires a non-empty Table", "Table")
    m = len(tbl)
    ki = io.ins[0] if io.ins else None
    fi = io.ins[1] if len(io.ins) > 1 else None
    S, o = io.S, io.outs[0]
    if ki is None:
        return Phases()
    k_wide = io.in_widths[0] > 1
    f_wide = fi is not None and io.in_widths[1] > 1
    if m == 1:
        only = tbl[0]

        def algebraic():
            S[o] = only
        return Phases(algebraic=algebraic)
    top = m - 2

    def index():
        kd = float(S[ki][0]) if k_wide else S[ki]
        v = math.floor(kd + 0.5) if math.isfinite(kd) else None
        # (int) of a double outside the int range (or NaN) is INT_MIN on x86-64: index 0
        k = v if v is not None and -2 ** 31 <= v < 2 ** 31 else -2 ** 31
        return 0 if k < 0 else (top if k > top else k)

    if fi is not None:
        def fraction():
            return float(S[fi][0]) if f_wide else S[fi]
    elif k_wide:
        def fraction():
            return float(S[ki][1])
    else:
        def fraction():
            return 0.0

    def algebraic():
        k = index()
        t0 = tbl[k]
        S[o] = t0 + fraction() * (tbl[k + 1] - t0)
    return Phases(algebraic=algebraic)


# ============================================================================= lookupDynamic

@block("lookupDynamic", widths=scalar_out)
def lookup_dynamic(io):
    """Ports: 0 = x (element 0 is used), 1 = breakpoints xdat, 2 = table ydat. y = linear
    interpolation of (xdat, ydat) at x, clipped to the end table values outside
    [xdat[0], xdat[n-1]] (scalar). The search runs down from the top interval like
    nflow's, so a non-increasing xdat gives what nflow gives. A table narrower than xdat
    reads its last element past its end (a scalar table is broadcast); one breakpoint
    gives ydat[0]. All three inputs are required, else nothing is written."""
    xs, bs, ys = (io.ins + [None, None, None])[:3]
    S, o = io.S, io.outs[0]
    if xs is None or bs is None or ys is None:
        return Phases()
    wx, n, wy = io.in_widths[0], io.in_widths[1], io.in_widths[2]

    def value(seq, i):
        # a scalar table is broadcast; a table narrower than xdat repeats its last value
        return seq[i if i < wy else wy - 1]

    def algebraic():
        x = S[xs] if wx == 1 else float(S[xs][0])
        xd = [S[bs]] if n == 1 else S[bs].tolist()
        yd = [S[ys]] if wy == 1 else S[ys].tolist()
        if n == 1 or x <= xd[0]:
            S[o] = value(yd, 0)
        elif x >= xd[n - 1]:
            S[o] = value(yd, n - 1)
        else:
            i = n - 2
            while i > 0 and x < xd[i]:
                i -= 1
            x0, x1 = xd[i], xd[i + 1]
            d = x1 - x0
            f = (x - x0) / d if d != 0.0 else 0.0
            y0, y1 = value(yd, i), value(yd, i + 1)
            S[o] = y0 + f * (y1 - y0)
    return Phases(algebraic=algebraic)

