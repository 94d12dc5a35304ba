"""Lookup Tables library handlers: lookup1D, lookup2D, lookupND, directLookup, prelookup,
interpolationPrelookup, lookupDynamic.

Expected values are worked out by hand on small tables, or with numpy / scipy (np.interp,
scipy's CubicSpline and RegularGridInterpolator), never with the package."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.interpolate import CubicSpline, RegularGridInterpolator

import nflow_compat as nc
from nflow_compat.blocks.lookup import akima_derivs, cubic_spline_m
from tests.util import blk, const, diagram, drive, one, ramp, record, run, trace, wire

NAN, INF = math.nan, math.inf
FAST = settings(max_examples=40, deadline=None)

BP = [0.0, 1.0, 2.0, 3.0, 4.0]
TBL = [0.0, 1.0, 4.0, 9.0, 16.0]      # the manifest defaults: u^2 at the breakpoints


def lut(**params):
    return blk("b", "lookup1D", **params)


def both_paths(block, values):
    """Vector output and the element-by-element scalar outputs; they must agree exactly
    (NaN with NaN)."""
    vector = one(block, values)
    scalar = np.array([one(block, v)[0] for v in values])
    np.testing.assert_array_equal(vector, scalar)
    return vector


def rejects(block, *values, param, text):
    with pytest.raises(nc.DiagramError) as err:
        one(block, *values)
    assert err.value.code == "param_value" and err.value.param == param and text in err.value.message


# ----------------------------------------------------------------------------- lookup1D: linear & flat

U = [-1.0, 0.0, 0.25, 1.5, 2.0, 3.75, 4.0, 5.0, NAN]


def test_lookup1d_default_linear_point_slope_with_linear_extrapolation():
    # in range: np.interp; below: 0 + (u - 0)*1; above: 16 + (u - 4)*7
    got = both_paths(lut(), U)
    expected = [-1.0, 0.0, 0.25, 2.5, 4.0, 14.25, 16.0, 23.0, NAN]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got[1:7], np.interp(U[1:7], BP, TBL))


def test_lookup1d_methods_in_range_and_nan():
    # NaN finds interval 0 (f = NaN): Flat gives T[0], Nearest T[1], the linear forms NaN
    assert both_paths(lut(InterpMethod="Flat", ExtrapMethod="Clip"), U).tolist() == \
        [0.0, 0.0, 0.0, 1.0, 4.0, 9.0, 16.0, 16.0, 0.0]
    assert both_paths(lut(InterpMethod="Nearest", ExtrapMethod="Clip"), U).tolist() == \
        [0.0, 0.0, 0.0, 4.0, 4.0, 16.0, 16.0, 16.0, 1.0]        # f = 0.5 rounds up
    np.testing.assert_array_equal(both_paths(lut(InterpMethod="Linear Lagrange"), U),
                                  [-1.0, 0.0, 0.25, 2.5, 4.0, 14.25, 16.0, 23.0, NAN])


def test_lookup1d_clip_and_use_last_table_value():
    assert both_paths(lut(ExtrapMethod="Clip"), [-3.0, 9.0]).tolist() == [0.0, 16.0]
    # UseLastTableValue holds the last value past the end even with Linear extrapolation,
    # for every InterpMethod; below the range it changes nothing
    assert both_paths(lut(UseLastTableValue="on"), [-1.0, 5.0, 3.5]).tolist() == [-1.0, 16.0, 12.5]
    assert both_paths(lut(UseLastTableValue=True, InterpMethod="Nearest"), [5.0]).tolist() == [16.0]


def test_lookup1d_vector_table_expression_and_time_varying():
    d = diagram([ramp(20.0), lut(BreakpointsForDimension1="[0 10]", Table="[0 k]"), record()],
                [wire("r", "b"), wire("b", "w")], duration=0.3, variables={"k": 5.0})
    np.testing.assert_allclose(trace(d)[:, 0], [0.0, 1.0, 2.0, 3.0], rtol=1e-15)


def test_lookup1d_unconnected_writes_nothing():
    assert drive(lut(inputs=1), {}).tolist() == [[0.0]] * 3


@pytest.mark.parametrize("params,param,text", [
    ({"BreakpointsForDimension1": [1.0], "Table": [2.0]}, "BreakpointsForDimension1", "at least 2"),
    ({"BreakpointsForDimension1": [0, 1, 1], "Table": [0, 1, 2]}, "BreakpointsForDimension1", "strictly increasing"),
    ({"BreakpointsForDimension1": [0, 2, 1], "Table": [0, 1, 2]}, "BreakpointsForDimension1", "strictly increasing"),
    ({"BreakpointsForDimension1": [0, 1, 2], "Table": [0, 1]}, "Table", "same length"),
])
def test_lookup1d_bad_tables_are_diagram_errors(params, param, text):
    rejects(lut(**params), 1.0, param=param, text=text)


def test_lookup1d_unknown_method_is_rejected():
    with pytest.raises(nc.DiagramError) as err:
        one(lut(InterpMethod="Linear"), 1.0)
    assert err.value.param == "InterpMethod"


@FAST
@given(st.lists(st.integers(-100, 100), min_size=2, max_size=6, unique=True),
       st.lists(st.floats(-100, 100), min_size=6, max_size=6), st.floats(-150, 150))
def test_lookup1d_linear_matches_np_interp_in_range_and_clips(bp, tbl, u):
    bp = sorted(float(b) for b in bp)
    tbl = tbl[:len(bp)]
    got = one(lut(BreakpointsForDimension1=bp, Table=tbl, ExtrapMethod="Clip"), u)[0]
    assert got == pytest.approx(float(np.interp(u, bp, tbl)), rel=1e-12, abs=1e-9)


# ----------------------------------------------------------------------------- lookup1D: splines

XS = [0.0, 1.0, 2.5, 3.0, 4.5, 6.0]
YS = [1.0, -2.0, 0.5, 3.0, 2.0, -1.0]


def test_cubic_spline_coefficients_match_scipy_not_a_knot_and_natural():
    m = cubic_spline_m(XS, YS)
    np.testing.assert_allclose(m, CubicSpline(XS, YS, bc_type="not-a-knot")(XS, 2), rtol=1e-12, atol=1e-12)
    m3 = cubic_spline_m(XS[:3], YS[:3])
    np.testing.assert_allclose(m3, CubicSpline(XS[:3], YS[:3], bc_type="natural")(XS[:3], 2), atol=1e-12)
    assert m3[0] == 0.0 and m3[2] == 0.0
    assert cubic_spline_m([0.0, 1.0], [3.0, 4.0]) == [0.0, 0.0]


def test_lookup1d_cubic_spline_values_and_cubic_extrapolation():
    block = lut(BreakpointsForDimension1=XS, Table=YS, InterpMethod="Cubic spline", ExtrapMethod="Cubic spline")
    u = [-1.0, 0.0, 0.3, 1.7, 2.5, 4.0, 5.9, 6.0, 7.5]
    np.testing.assert_allclose(both_paths(block, u), CubicSpline(XS, YS, bc_type="not-a-knot")(u), rtol=1e-12, atol=1e-12)
    # three points: the natural spline
    u3 = [-0.5, 0.4, 1.9, 2.5, 3.0]
    block3 = lut(BreakpointsForDimension1=XS[:3], Table=YS[:3], InterpMethod="Cubic spline",
                 ExtrapMethod="Cubic spline")
    np.testing.assert_allclose(both_paths(block3, u3), CubicSpline(XS[:3], YS[:3], bc_type="natural")(u3),
                               rtol=1e-12, atol=1e-12)


def test_lookup1d_spline_with_linear_or_clip_extrapolation_and_two_points():
    block = lut(BreakpointsForDimension1=XS, Table=YS, InterpMethod="Cubic spline", ExtrapMethod="Linear")
    # outside: the end secant, not the spline's slope
    assert both_paths(block, [-1.0, 7.5]).tolist() == [1.0 + (-1.0) * (-3.0), -1.0 + 1.5 * (-2.0)]
    block = lut(BreakpointsForDimension1=XS, Table=YS, InterpMethod="Akima spline", ExtrapMethod="Cubic spline")
    assert both_paths(block, [-1.0, 7.5]).tolist() == [1.0, -1.0]     # spline extrapolation of another spline: Clip
    # two points have no spline: point-slope
    block = lut(BreakpointsForDimension1=[0, 2], Table=[0, 4], InterpMethod="Cubic spline")
    assert both_paths(block, [0.5, 3.0]).tolist() == [1.0, 6.0]


def akima_reference(x, y, u):
    """Akima (1970) written from its definition: slopes t_i from the weighted secants, then
    the Hermite cubic on the interval holding u (the end cubics extended outside)."""
    x, y = np.asarray(x), np.asarray(y)
    m = np.diff(y) / np.diff(x)
    m = np.concatenate([[3 * m[0] - 2 * m[1], 2 * m[0] - m[1]], m, [2 * m[-1] - m[-2], 3 * m[-1] - 2 * m[-2]]])
    t = []
    for i in range(len(x)):
        w1, w2 = abs(m[i + 3] - m[i + 2]), abs(m[i + 1] - m[i])
        t.append((m[i + 1] + m[i + 2]) / 2 if w1 + w2 == 0 else (w1 * m[i + 1] + w2 * m[i + 2]) / (w1 + w2))
    i = int(np.clip(np.searchsorted(x, u, side="right") - 1, 0, len(x) - 2))
    h, s = x[i + 1] - x[i], u - x[i]
    p = (y[i + 1] - y[i]) / h
    return y[i] + t[i] * s + (3 * p - 2 * t[i] - t[i + 1]) / h * s ** 2 + (t[i] + t[i + 1] - 2 * p) / h ** 2 * s ** 3


def test_lookup1d_akima_against_the_definition():
    u = [-0.5, 0.0, 0.7, 2.0, 2.9, 4.0, 6.0, 6.5]
    block = lut(BreakpointsForDimension1=XS, Table=YS, InterpMethod="Akima spline", ExtrapMethod="Akima spline")
    np.testing.assert_allclose(both_paths(block, u), [akima_reference(XS, YS, v) for v in u], rtol=1e-12, atol=1e-12)
    # flat neighbourhoods (both weights 0) take the mean of the secants
    assert akima_derivs([0.0, 1.0, 2.0, 3.0], [0.0, 0.0, 0.0, 0.0]) == [0.0] * 4


def test_lookup1d_splines_reproduce_a_parabola():
    for method in ("Cubic spline", "Akima spline"):
        got = one(lut(InterpMethod=method), [0.5, 1.5, 2.7, 3.9])
        np.testing.assert_allclose(got, [0.25, 2.25, 7.29, 15.21], rtol=1e-13)


# ----------------------------------------------------------------------------- lookup1D: diagnostics

def out_of_range_run(action, duration=0.3):
    d = diagram([ramp(20.0), lut(DiagnosticForOutOfRangeInput=action), record()],
                [wire("r", "b"), wire("b", "w")], duration=duration)
    return run(d)


def test_lookup1d_out_of_range_none_is_silent():
    res = out_of_range_run("None")
    assert res["warnings"] == [] and res["workspace"]["y"][-1] == [pytest.approx(16.0 + 2.0 * 7.0, rel=1e-15)]


def test_lookup1d_out_of_range_warning_once_with_the_first_time():
    res = out_of_range_run("Warning")
    warnings = [w for w in res["warnings"] if "lookup1D" in w]
    assert len(warnings) == 1 and "t = 0.3" in warnings[0] and "'b'" in warnings[0]
    np.testing.assert_allclose(np.asarray(res["workspace"]["y"])[:, 0], [0.0, 4.0, 16.0, 30.0])
    assert [w for w in out_of_range_run("Warning", duration=0.2)["warnings"] if "lookup1D" in w] == []


def test_lookup1d_out_of_range_error_stops_the_run():
    with pytest.raises(nc.SimulationError) as err:
        out_of_range_run("Error")
    assert err.value.code == "lookup_out_of_range" and err.value.block == "b" and "t = 0.3" in err.value.message
    assert out_of_range_run("Error", duration=0.2)["workspace"]["y"][-1] == [16.0]   # at the last breakpoint: fine


def test_lookup1d_out_of_range_vector_and_nan():
    d = diagram([const([1.0, NAN]), lut(DiagnosticForOutOfRangeInput="Error"), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.1)
    assert run(d)["workspace"]["y"][0][0] == 1.0            # NaN is not out of range
    d = diagram([const([1.0, -0.5]), lut(DiagnosticForOutOfRangeInput="Error"), record()],
                [wire("c", "b"), wire("b", "w")], duration=0.1)
    with pytest.raises(nc.SimulationError):
        run(d)


# ----------------------------------------------------------------------------- lookup2D

BP1, BP2 = [1.0, 2.0, 3.0], [10.0, 20.0, 40.0, 50.0]
T2 = np.array([[1.0, 2.0, 4.0, 8.0], [3.0, 5.0, 7.0, 11.0], [0.0, -2.0, 6.0, 9.0]])   # T2[i, j]
TFLAT = T2.reshape(-1, order="F").tolist()                                            # column-major


def lut2(**params):
    return blk("b", "lookup2D", **dict({"BreakpointsForDimension1": BP1, "BreakpointsForDimension2": BP2,
                                        "Table": TFLAT}, **params))


def test_lookup2d_bilinear_matches_regular_grid_interpolator():
    rgi = RegularGridInterpolator((BP1, BP2), T2)
    pts = [(1.5, 15.0), (2.0, 20.0), (2.75, 45.0), (1.0, 50.0), (3.0, 10.0)]
    u1, u2 = [p[0] for p in pts], [p[1] for p in pts]
    np.testing.assert_allclose(one(lut2(), u1, u2), rgi(pts), rtol=1e-14)
    for p, e in zip(pts, rgi(pts)):
        assert one(lut2(), *p)[0] == pytest.approx(e, rel=1e-14)


def test_lookup2d_default_table_and_broadcast():
    # defaults: T = [4 5 6; 5 7 8; 6 8 10] over [1 2 3] x [1 2 3]
    assert one(blk("b", "lookup2D"), 1.5, 2.5).tolist() == [6.5]              # (5 + 7 + 6 + 8) / 4
    assert one(blk("b", "lookup2D"), [1.0, 3.0], 1.0).tolist() == [4.0, 6.0]


def test_lookup2d_matrix_table_is_read_as_rows():
    assert one(lut2(Table=T2.tolist()), 2.0, 40.0).tolist() == [7.0]
    rejects(lut2(Table=T2.T.tolist()), 2.0, 40.0, param="Table", text="3x4")


def test_lookup2d_extrapolation_flat_and_nearest():
    # Linear: f runs past the edge; (0.5, 10): T(0,0) + (-0.5)*(T(1,0) - T(0,0)) = 1 - 1 = 0
    assert one(lut2(), 0.5, 10.0).tolist() == [0.0]
    assert one(lut2(), 3.0, 60.0).tolist() == [9.0 + 1.0 * (9.0 - 6.0)]
    assert one(lut2(ExtrapMethod="Clip"), [0.5, 9.0], [10.0, 60.0]).tolist() == [1.0, 9.0]
    # Flat: lower corner; Nearest: round each fraction (0.5 goes up)
    assert one(lut2(InterpMethod="Flat"), [1.9, 2.5], [19.0, 45.0]).tolist() == [1.0, 7.0]
    assert one(lut2(InterpMethod="Nearest"), [1.4, 2.5], [15.0, 44.0]).tolist() == [2.0, 6.0]


def test_lookup2d_nan_takes_the_top_interval():
    # lookup2D's search leaves NaN in interval n-2: Flat gives T(1, j), Nearest T(2, j)
    assert one(lut2(InterpMethod="Flat"), NAN, 10.0).tolist() == [3.0]
    assert one(lut2(InterpMethod="Nearest"), NAN, 10.0).tolist() == [0.0]
    assert math.isnan(one(lut2(), NAN, 10.0)[0])


def test_lookup2d_both_inputs_required_and_bad_tables():
    for port in (0, 1):
        assert drive(lut2(), {port: const(2.0)}).tolist() == [[0.0]] * 3
    rejects(lut2(Table=[1, 2, 3]), 1.0, 10.0, param="Table", text="rows*cols")
    rejects(lut2(BreakpointsForDimension2=[5.0]), 1.0, 10.0, param="BreakpointsForDimension2", text="at least 2")
    rejects(lut2(BreakpointsForDimension1=[1, 3, 2]), 1.0, 10.0, param="BreakpointsForDimension1",
            text="strictly increasing")


def test_lookup2d_natural_spline_tensor_product():
    # 3 points per axis: a natural cubic spline along dimension 1 for every column, then
    # along dimension 2 through those values
    u1, u2 = 1.5, 25.0
    inner = [float(CubicSpline(BP1, T2[:, j], bc_type="natural")(u1)) for j in range(len(BP2))]
    expected = float(CubicSpline(BP2, inner, bc_type="not-a-knot")(u2))
    got = one(lut2(InterpMethod="Cubic spline"), u1, u2)[0]
    assert got == pytest.approx(expected, rel=1e-12)
    # a table that is linear in both breakpoints is reproduced exactly by the spline
    lin = [[a + 0.1 * b for b in BP2] for a in BP1]
    got = one(lut2(Table=lin, InterpMethod="Cubic spline"), [1.25, 2.5], [12.0, 44.0])
    np.testing.assert_allclose(got, [1.25 + 1.2, 2.5 + 4.4], rtol=1e-12)


@FAST
@given(st.floats(1.0, 3.0), st.floats(10.0, 50.0))
def test_lookup2d_linear_stays_within_the_cell(u1, u2):
    y = one(lut2(), u1, u2)[0]
    i = min(int(np.searchsorted(BP1, u1, side="right")) - 1, 1)
    j = min(int(np.searchsorted(BP2, u2, side="right")) - 1, 2)
    corners = T2[i:i + 2, j:j + 2]
    assert corners.min() - 1e-12 <= y <= corners.max() + 1e-12


# ----------------------------------------------------------------------------- lookupND

def test_lookup_nd_two_dims_matches_lookup2d_and_one_dim_matches_lookup1d():
    nd = blk("b", "lookupND", BreakpointsForDimension1=BP1, BreakpointsForDimension2=BP2, Table=TFLAT)
    pts1, pts2 = [1.5, 2.75, 0.5, 3.5], [15.0, 45.0, 5.0, 60.0]
    np.testing.assert_allclose(one(nd, pts1, pts2), one(lut2(), pts1, pts2), rtol=1e-14)
    nd1 = blk("b", "lookupND", NumberOfTableDimensions=1, BreakpointsForDimension1=BP, Table=TBL, inputs=1)
    assert both_paths(nd1, [-1.0, 2.5, 5.0]).tolist() == [-1.0, 6.5, 23.0]


def test_lookup_nd_three_dims_is_trilinear():
    b1, b2, b3 = [0.0, 1.0], [0.0, 2.0, 4.0], [0.0, 10.0]
    grid = np.array([[[i + 10 * j + 100 * k for k in b3] for j in b2] for i in b1])   # linear in each axis
    block = blk("b", "lookupND", NumberOfTableDimensions=3, BreakpointsForDimension1=b1,
                BreakpointsForDimension2=b2, BreakpointsForDimension3=b3,
                Table=grid.reshape(-1, order="F").tolist(), inputs=3)
    got = one(block, [0.25, 1.0, 2.0], [3.0, 0.5, 5.0], [7.5, 10.0, -1.0])
    np.testing.assert_allclose(got, [0.25 + 30.0 + 750.0, 1.0 + 5.0 + 1000.0, 2.0 + 50.0 - 100.0], rtol=1e-14)
    np.testing.assert_allclose(got, [one(block, a, b, c)[0] for a, b, c in
                                     zip([0.25, 1.0, 2.0], [3.0, 0.5, 5.0], [7.5, 10.0, -1.0])], rtol=0)


def test_lookup_nd_missing_inputs_and_bad_params():
    nd3 = blk("b", "lookupND", NumberOfTableDimensions=3, BreakpointsForDimension1=[0, 1],
              BreakpointsForDimension2=[0, 1], BreakpointsForDimension3=[0, 1], Table=list(range(8)))
    # declared with the manifest's 2 ports: nflow never writes the output; say so
    res = run(diagram([const(0.5), blk("k", "constant", Value=0.5), nd3, record()],
                      [wire("c", "b", 0, 0), wire("k", "b", 0, 1), wire("b", "w")], duration=0.1))
    assert res["workspace"]["y"] == [[0.0], [0.0]] and any("3 dimension" in w for w in res["warnings"])
    assert drive(blk("b", "lookupND"), {0: const(2.0)}).tolist() == [[0.0]] * 3
    rejects(blk("b", "lookupND", NumberOfTableDimensions=0), 1.0, 1.0, param="NumberOfTableDimensions", text=">= 1")
    rejects(blk("b", "lookupND", NumberOfTableDimensions=3), 1.0, 1.0, param="BreakpointsForDimension3",
            text="at least 2")
    rejects(blk("b", "lookupND", Table=[1, 2, 3]), 1.0, 1.0, param="Table", text="product")


# ----------------------------------------------------------------------------- directLookup

def test_direct_lookup_default_table_indices_rounded_and_clamped():
    # TableDimensions [2 3], Table column-major [0 1 10 11 20 21]: T(i, j) = i + 10 j
    assert one(blk("b", "directLookup"), 1.0, 2.0).tolist() == [21.0]
    assert both_paths(blk("b", "directLookup", NumberOfTableDimensions=1, TableDimensions=[6], inputs=1),
                      [0.0, 1.5, 2.5, -0.5, -7.0, 99.0, NAN]).tolist() == [0.0, 10.0, 11.0, 0.0, 0.0, 21.0, 0.0]
    assert one(blk("b", "directLookup"), [0.0, 1.0, 0.4], [0.0, 1.0, 1.6]).tolist() == [0.0, 11.0, 20.0]
    assert one(blk("b", "directLookup"), [0.0, 1.0], 2.0).tolist() == [20.0, 21.0]


def test_direct_lookup_index_wraps_like_a_32_bit_int():
    # (int) lround(2^32 + 1) keeps the low 32 bits: index 1; lround(1e300) is INT64_MIN,
    # whose low 32 bits are 0
    block = blk("b", "directLookup", NumberOfTableDimensions=1, TableDimensions=[6], inputs=1)
    assert both_paths(block, [2.0 ** 32 + 1.0, 1e300, 2.0 ** 32 + 3.0]).tolist() == [1.0, 0.0, 11.0]


def test_direct_lookup_unconnected_and_bad_params():
    assert drive(blk("b", "directLookup"), {0: const(1.0)}).tolist() == [[0.0]] * 3
    rejects(blk("b", "directLookup", TableDimensions=[6]), 1.0, 1.0, param="TableDimensions", text="one size")
    rejects(blk("b", "directLookup", TableDimensions=[2, 2]), 1.0, 1.0, param="Table", text="product")
    assert one(blk("b", "directLookup", TableDimensions=[0.5, 6.9], Table=[1, 2, 3, 4, 5, 6]), 0.0, 5.0).tolist() == [6.0]


# ----------------------------------------------------------------------------- prelookup + interpolation

def prelookup_pair(u, outputs=2):
    blocks = [const(u), blk("p", "prelookup", outputs=outputs), record("wk", "k"), record("wf", "f")]
    conns = [wire("c", "p"), wire("p", "wk", 0)] + ([wire("p", "wf", 1)] if outputs == 2 else [])
    ws = run(diagram(blocks, conns, duration=0.1))["workspace"]
    return ws["k"][0][0], ws["f"][0][0]


@pytest.mark.parametrize("u,k,f", [(2.5, 2.0, 0.5), (0.0, 0.0, 0.0), (-3.0, 0.0, 0.0), (4.0, 3.0, 1.0),
                                   (9.0, 3.0, 1.0), (1.0, 1.0, 0.0), (3.75, 3.0, 0.75)])
def test_prelookup_index_and_fraction(u, k, f):
    assert prelookup_pair(u) == (k, f)


def test_prelookup_nan_vector_input_and_one_output():
    k, f = prelookup_pair(NAN)
    assert k == 0.0 and (f is None or math.isnan(f))
    assert prelookup_pair([1.5, 99.0]) == (1.0, 0.5)   # element 0 only
    assert prelookup_pair(2.5, outputs=1)[0] == 2.0


def test_prelookup_unconnected_and_bad_breakpoints():
    assert drive(blk("b", "prelookup", inputs=1, outputs=1), {}).tolist() == [[0.0]] * 3
    rejects(blk("b", "prelookup", BreakpointsForDimension1=[1.0], outputs=1), 1.0,
            param="BreakpointsForDimension1", text="at least 2")


def test_prelookup_feeds_interpolation_over_time():
    blocks = [ramp(10.0), blk("p", "prelookup"), blk("b", "interpolationPrelookup"), record()]
    conns = [wire("r", "p"), wire("p", "b", 0, 0), wire("p", "b", 1, 1), wire("b", "w")]
    y = trace(diagram(blocks, conns, duration=0.5))[:, 0]
    np.testing.assert_allclose(y, [0.0, 1.0, 4.0, 9.0, 16.0, 16.0], rtol=1e-15)   # clipped past 4
    d = diagram([const(2.5), blk("p", "prelookup"), blk("b", "interpolationPrelookup"), record()], conns[1:] +
                [wire("c", "p")], duration=0.1)
    assert trace(d)[:, 0].tolist() == [6.5, 6.5]


def test_interpolation_prelookup_inputs():
    ip = blk("b", "interpolationPrelookup")
    assert one(ip, 2.0, 0.5).tolist() == [6.5]
    assert one(ip, 1.6, 0.25).tolist() == [4.0 + 0.25 * 5.0]          # k rounds to 2
    assert one(ip, -4.0, 0.5).tolist() == [0.5]                       # k clamped to 0
    assert one(ip, 9.0, 2.0).tolist() == [9.0 + 2.0 * 7.0]             # k clamped to m-2 = 3, f free
    assert one(ip, NAN, 0.5).tolist() == [0.5]                         # (int) NaN -> INT_MIN -> 0
    assert one(ip, 1e12, 0.0).tolist() == [0.0]                        # beyond int: INT_MIN -> 0
    # one two-wide input [k, f] (the older prelookup form); a scalar alone means f = 0
    assert one(blk("b", "interpolationPrelookup", inputs=1), [2.0, 0.5]).tolist() == [6.5]
    assert one(blk("b", "interpolationPrelookup", inputs=1), 3.0).tolist() == [9.0]
    assert one(blk("b", "interpolationPrelookup", Table=[7.0]), 3.0, 0.5).tolist() == [7.0]


def test_interpolation_prelookup_unconnected_and_empty_table():
    assert drive(blk("b", "interpolationPrelookup"), {1: const(0.5)}).tolist() == [[0.0]] * 3
    assert drive(blk("b", "interpolationPrelookup"), {0: const(2.0)}).tolist() == [[4.0]] * 3   # f = 0
    rejects(blk("b", "interpolationPrelookup", Table=[]), 1.0, 0.5, param="Table", text="non-empty")


@FAST
@given(st.floats(-2.0, 6.0))
def test_prelookup_then_interpolation_equals_lookup1d_with_clip(u):
    blocks = [const(u), blk("p", "prelookup"), blk("b", "interpolationPrelookup"), record(),
              dict(lut(ExtrapMethod="Clip"), id="l"), record("w2", "z")]
    conns = [wire("c", "p"), wire("p", "b", 0, 0), wire("p", "b", 1, 1), wire("b", "w"),
             wire("c", "l"), wire("l", "w2")]
    ws = run(diagram(blocks, conns, duration=0.1))["workspace"]
    assert ws["y"][0][0] == pytest.approx(ws["z"][0][0], rel=1e-15, abs=1e-15)


# ----------------------------------------------------------------------------- lookupDynamic

def dyn(x, xd, yd):
    return one(blk("b", "lookupDynamic"), x, xd, yd)[0]


def test_lookup_dynamic_interpolates_and_clips():
    assert dyn(2.5, BP, TBL) == 6.5
    assert dyn(-1.0, BP, TBL) == 0.0 and dyn(7.0, BP, TBL) == 16.0
    assert dyn(4.0, BP, TBL) == 16.0 and dyn(0.0, BP, TBL) == 0.0
    assert math.isnan(dyn(NAN, BP, TBL))
    assert dyn([2.5, 99.0], BP, TBL) == 6.5                     # element 0 of x


def test_lookup_dynamic_degenerate_tables():
    assert dyn(1.5, 3.0, [7.0, 8.0]) == 7.0                     # one breakpoint: ydat[0]
    assert dyn(1.5, BP, 5.0) == 5.0                             # scalar table broadcast
    assert dyn(3.5, BP, [0.0, 1.0, 4.0]) == 4.0                 # short table repeats its last value
    assert dyn(1.5, [0.0, 1.0, 1.0, 3.0], [0.0, 10.0, 20.0, 30.0]) == 22.5   # search from the top: [1, 3]
    assert dyn(0.5, [0.0, 0.0, 2.0], [1.0, 3.0, 5.0]) == 3.5


def test_lookup_dynamic_table_changes_over_time_and_unconnected():
    blocks = [const(1.0), blk("xd", "constant", Value=[0.0, 2.0]), ramp(10.0),
              blk("m", "mux", Inputs=2), blk("z", "constant", Value=0.0), blk("b", "lookupDynamic"), record()]
    conns = [wire("z", "m", 0, 0), wire("r", "m", 0, 1), wire("c", "b", 0, 0), wire("xd", "b", 0, 1),
             wire("m", "b", 0, 2), wire("b", "w")]
    y = trace(diagram(blocks, conns, duration=0.2))[:, 0]
    assert y.tolist() == [0.0, 0.5, 1.0]                        # table [0, 10 t] at x = 1 (half way)
    for missing in range(3):
        sources = {p: const([0.0, 1.0] if p else 0.5) for p in range(3) if p != missing}
        assert drive(blk("b", "lookupDynamic"), sources).tolist() == [[0.0]] * 3


@FAST
@given(st.floats(-1.0, 5.0))
def test_lookup_dynamic_equals_lookup1d_with_clip(x):
    assert dyn(x, BP, TBL) == one(lut(ExtrapMethod="Clip"), x)[0]


# ----------------------------------------------------------------------------- declared port counts

@pytest.mark.parametrize("kind", ["lookup1D", "lookup2D", "lookupND", "directLookup", "prelookup",
                                  "interpolationPrelookup", "lookupDynamic"])
def test_blocks_declared_without_ports(kind):
    outputs = {"prelookup": 2}.get(kind, 1)
    blocks = [blk("b", kind, inputs=0), record("w0", "y0")] + ([record("w1", "y1")] if outputs == 2 else [])
    conns = [wire("b", f"w{p}", p) for p in range(outputs)]
    ws = run(diagram(blocks, conns, duration=0.1))["workspace"]
    assert all(v == [[0.0], [0.0]] for v in ws.values())
    assert run(diagram([const(2.0), blk("b", kind, outputs=0)], [wire("c", "b")], duration=0.1))["status"] == "ok"


def test_lookup1d_scalar_input_broadcast_to_a_wider_declared_port():
    assert one(lut(inputs=2), 2.5, [1.0, 2.0]).tolist() == [6.5, 6.5]
