"""Complex signals: the builders / extractors / conjugate (nflow's complexOps), the complex
paths of gain, sum, mult, divide, abs, switch, selector, reshape, concatenate, and how
toWorkspace records a complex input ({"real", "imag"} in place of the matrix)."""
from __future__ import annotations

import cmath
import math

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nflow_compat as nc

from tests.util import blk, diagram, record, wire

NAN, INF = math.nan, math.inf
finite = st.floats(allow_nan=False, allow_infinity=False, width=64, min_value=-1e150, max_value=1e150)


def const(id, value):
    return blk(id, "constant", Value=value)


def z_source(re, im, id="z"):
    """Blocks making the complex signal ``re + j*im`` as block ``id`` (constants re_/im_)."""
    return [const(f"{id}_re", re), const(f"{id}_im", im), blk(id, "realImagToComplex")], \
        [wire(f"{id}_re", id, 0, 0), wire(f"{id}_im", id, 0, 1)]


def run(blocks, conns, duration=0.1, **kw) -> dict:
    return nc.simulate(diagram(blocks, conns, duration=duration, **kw))


def cvalues(value) -> np.ndarray:
    """A recorded workspace value (Array format) as a complex N x W array."""
    assert isinstance(value, dict) and set(value) == {"real", "imag"}, value
    re = np.asarray(value["real"], dtype=float)
    im = np.asarray(value["imag"], dtype=float)
    assert re.shape == im.shape
    return re + 1j * im if np.all(np.isfinite(re)) and np.all(np.isfinite(im)) else _exact(re, im)


def _exact(re, im):
    out = np.empty(re.shape, dtype=complex)
    out.real, out.imag = re, im
    return out


def complex_out(block, z, *extra, duration=0.1):
    """Output 0 of ``block`` (id 'b') with the complex constant ``z`` (a complex or a list
    of them) on input 0 and constants ``extra`` on inputs 1, 2...; complex N x W."""
    zs = np.atleast_1d(np.asarray(z, dtype=complex))
    re, im = zs.real.tolist(), zs.imag.tolist()
    blocks, conns = z_source(re if len(re) > 1 else re[0], im if len(im) > 1 else im[0])
    blocks += [const(f"e{k}", v) for k, v in enumerate(extra, start=1)] + [block, record()]
    conns += [wire("z", "b", 0, 0)] + [wire(f"e{k}", "b", 0, k) for k in range(1, len(extra) + 1)]
    conns.append(wire("b", "w"))
    return run(blocks, conns, duration=duration)["workspace"]["y"]


# ----------------------------------------------------------------------------- builders

def test_real_imag_to_complex_scalar_and_vector():
    blocks, conns = z_source(1.5, -2.0)
    y = run(blocks + [record()], conns + [wire("z", "w")])["workspace"]["y"]
    assert y == {"real": [[1.5], [1.5]], "imag": [[-2.0], [-2.0]]}
    blocks, conns = z_source([1, 2, 3], [4, 5, 6])
    y = run(blocks + [record()], conns + [wire("z", "w")])["workspace"]["y"]
    assert y == {"real": [[1, 2, 3]] * 2, "imag": [[4, 5, 6]] * 2}


def test_real_imag_to_complex_broadcasts_and_reads_unconnected_as_zero():
    blocks, conns = z_source(2.0, [1, -1])       # a scalar real part, a vector imaginary part
    y = run(blocks + [record()], conns + [wire("z", "w")])["workspace"]["y"]
    assert y == {"real": [[2, 2]] * 2, "imag": [[1, -1]] * 2}
    y = run([const("i", 7.0), blk("z", "realImagToComplex"), record()],
            [wire("i", "z", 0, 1), wire("z", "w")])["workspace"]["y"]
    assert y == {"real": [[0.0]] * 2, "imag": [[7.0]] * 2}
    y = run([blk("z", "realImagToComplex"), record()], [wire("z", "w")])["workspace"]["y"]
    assert y == {"real": [[0.0]] * 2, "imag": [[0.0]] * 2}


def test_real_imag_to_complex_keeps_infinite_parts():
    blocks, conns = z_source(INF, -INF)
    y = run(blocks + [record()], conns + [wire("z", "w")])["workspace"]["y"]
    assert y == {"real": [[INF]] * 2, "imag": [[-INF]] * 2}


def test_builders_refuse_a_complex_input():
    # complexOps.cpp registers setComplexSupport("realImagToComplex", false, 1): the
    # compile-time type pass rejects a complex input before the handler could read it
    blocks, conns = z_source(3.0, 4.0)
    blocks += [const("k", 1.0), blk("b", "realImagToComplex"), record()]
    conns += [wire("z", "b", 0, 0), wire("k", "b", 0, 1), wire("b", "w")]
    with pytest.raises(nc.DiagramError) as err:
        run(blocks, conns)
    assert err.value.code == "complex_not_supported" and err.value.block == "b"


def test_magnitude_angle_to_complex():
    blocks = [const("m", [2.0, 1.0]), const("a", [math.pi / 2, math.pi]), blk("b", "magnitudeAngleToComplex"),
              record()]
    y = cvalues(run(blocks, [wire("m", "b", 0, 0), wire("a", "b", 0, 1), wire("b", "w")])["workspace"]["y"])
    assert y[0].tolist() == [complex(2 * math.cos(math.pi / 2), 2.0), complex(-1.0, math.sin(math.pi))]


def test_magnitude_angle_to_complex_infinite_magnitude_is_computed_per_part():
    # m*cos(a) + j*m*sin(a) as written: inf*sin(0) = inf*0 = NaN in the imaginary part
    blocks = [const("m", INF), blk("b", "magnitudeAngleToComplex"), record()]
    y = run(blocks, [wire("m", "b", 0, 0), wire("b", "w")])["workspace"]["y"]
    assert y["real"] == [[INF]] * 2
    assert all(math.isnan(v[0]) for v in y["imag"])


# ----------------------------------------------------------------------------- extractors

def split(block_type, z, width=None):
    """(output 0, output 1) rows at t = 0 of ``block_type`` fed the complex ``z``."""
    zs = np.atleast_1d(np.asarray(z, dtype=complex))
    blocks, conns = z_source(zs.real.tolist() if zs.size > 1 else zs.real[0],
                             zs.imag.tolist() if zs.size > 1 else zs.imag[0])
    blocks += [blk("b", block_type), record("w0", "p"), record("w1", "q")]
    conns += [wire("z", "b"), wire("b", "w0", 0, 0), wire("b", "w1", 1, 0)]
    ws = run(blocks, conns)["workspace"]
    return ws["p"][0], ws["q"][0]


def test_complex_to_real_imag():
    assert split("complexToRealImag", 3 - 4j) == ([3.0], [-4.0])
    assert split("complexToRealImag", [1 + 2j, -3j, 5]) == ([1.0, 0.0, 5.0], [2.0, -3.0, 0.0])


def test_complex_to_real_imag_of_a_real_signal_and_unconnected():
    ws = run([const("c", [2.0, -1.0]), blk("b", "complexToRealImag"), record("w0", "p"), record("w1", "q")],
             [wire("c", "b"), wire("b", "w0", 0, 0), wire("b", "w1", 1, 0)])["workspace"]
    assert ws["p"][0] == [2.0, -1.0] and ws["q"][0] == [0.0, 0.0]
    ws = run([blk("b", "complexToRealImag"), record("w0", "p"), record("w1", "q")],
             [wire("b", "w0", 0, 0), wire("b", "w1", 1, 0)])["workspace"]
    assert ws["p"] == [[0.0]] * 2 and ws["q"] == [[0.0]] * 2


def test_complex_to_magnitude_angle():
    assert split("complexToMagnitudeAngle", 3 + 4j) == ([5.0], [math.atan2(4, 3)])
    mags, angles = split("complexToMagnitudeAngle", [-2 + 0j, 1j, -1j, 0])
    assert mags == [2.0, 1.0, 1.0, 0.0]
    assert angles == [math.pi, math.pi / 2, -math.pi / 2, 0.0]


def test_complex_to_magnitude_angle_of_real_signals():
    # a real input is x + 0j: angle 0, or pi for a negative (and for -0.0: atan2(0, -0) = pi)
    ws = run([const("c", [-3.0, 2.0, -0.0]), blk("b", "complexToMagnitudeAngle"), record("w0", "p"),
              record("w1", "q")], [wire("c", "b"), wire("b", "w0", 0, 0), wire("b", "w1", 1, 0)])["workspace"]
    assert ws["p"][0] == [3.0, 2.0, 0.0]
    assert ws["q"][0] == [math.pi, 0.0, math.pi]


def test_conjugate():
    assert cvalues(complex_out(blk("b", "conjugate"), 1 + 2j))[0].tolist() == [1 - 2j]
    assert cvalues(complex_out(blk("b", "conjugate"), [1 + 2j, -3j]))[0].tolist() == [1 - 2j, 3j]


def test_conjugate_is_the_identity_on_real_signals():
    y = run([const("c", [1.5, -2.0]), blk("b", "conjugate"), record()], [wire("c", "b"), wire("b", "w")])
    assert y["workspace"]["y"] == [[1.5, -2.0]] * 2
    y = run([blk("b", "conjugate"), record()], [wire("b", "w")])
    assert y["workspace"]["y"] == [[0.0]] * 2


# ----------------------------------------------------------------------------- properties

def chain(re, im, types):
    """re + j*im through ``types`` (a list of single-input blocks), then split into
    (re, im) rows at t = 0."""
    blocks, conns = z_source(re, im)
    prev = "z"
    for k, t in enumerate(types):
        blocks.append(blk(f"b{k}", t))
        conns.append(wire(prev, f"b{k}"))
        prev = f"b{k}"
    blocks += [blk("s", "complexToRealImag"), record("w0", "p"), record("w1", "q")]
    conns += [wire(prev, "s"), wire("s", "w0", 0, 0), wire("s", "w1", 1, 0)]
    ws = run(blocks, conns, duration=0.1)["workspace"]
    return ws["p"][0], ws["q"][0]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(finite, finite), min_size=1, max_size=4))
def test_real_imag_round_trip_is_exact(parts):
    re = [a for a, _ in parts]
    im = [b for _, b in parts]
    assert chain(re if len(re) > 1 else re[0], im if len(im) > 1 else im[0], []) == (re, im)


@settings(max_examples=40, deadline=None)
@given(finite, finite)
def test_conjugate_is_an_involution(re, im):
    assert chain(re, im, ["conjugate", "conjugate"]) == ([re], [im])
    assert chain(re, im, ["conjugate"]) == ([re], [-im])


@settings(max_examples=40, deadline=None)
@given(st.floats(min_value=1e-3, max_value=1e6), st.floats(min_value=-3.1, max_value=3.1))
def test_magnitude_angle_round_trip(m, a):
    blocks = [const("m", m), const("a", a), blk("b", "magnitudeAngleToComplex"), blk("s", "complexToMagnitudeAngle"),
              record("w0", "p"), record("w1", "q")]
    conns = [wire("m", "b", 0, 0), wire("a", "b", 0, 1), wire("b", "s"), wire("s", "w0", 0, 0),
             wire("s", "w1", 1, 0)]
    ws = run(blocks, conns)["workspace"]
    assert ws["p"][0][0] == pytest.approx(m, rel=1e-14)
    assert ws["q"][0][0] == pytest.approx(a, rel=1e-13, abs=1e-15)


@settings(max_examples=30, deadline=None)
@given(finite, finite)
def test_complex_magnitude_angle_round_trip(re, im):
    blocks, conns = z_source(re, im)
    blocks += [blk("s", "complexToMagnitudeAngle"), blk("b", "magnitudeAngleToComplex"), record()]
    conns += [wire("z", "s"), wire("s", "b", 0, 0), wire("s", "b", 1, 1), wire("b", "w")]
    y = cvalues(run(blocks, conns)["workspace"]["y"])[0, 0]
    r = abs(complex(re, im))
    assert y.real == pytest.approx(re, abs=1e-15 * r + 1e-300)
    assert y.imag == pytest.approx(im, abs=1e-15 * r + 1e-300)


# ----------------------------------------------------------------------------- math blocks

def test_gain_of_a_complex_signal():
    assert cvalues(complex_out(blk("b", "gain", Gain=-2), 1.5 + 0.5j))[0].tolist() == [-3 - 1j]
    assert cvalues(complex_out(blk("b", "gain", Gain=3), [1j, 2]))[0].tolist() == [3j, 6]


def test_sum_with_complex_and_real_inputs():
    y = complex_out(blk("b", "sum", Inputs="+-", inputs=2), 1 + 2j, 0.5)
    assert cvalues(y)[0].tolist() == [0.5 + 2j]
    y = complex_out(blk("b", "sum", Inputs="-+", inputs=2), [1 + 1j, 2], [1.0, -1.0])
    assert cvalues(y)[0].tolist() == [-1j, -3]


def test_mult_of_complex_signals():
    blocks, conns = z_source(1.0, 2.0, "z1")
    more, more_conns = z_source(3.0, -1.0, "z2")
    blocks += more + [blk("b", "mult", inputs=2), record()]
    conns += more_conns + [wire("z1", "b", 0, 0), wire("z2", "b", 0, 1), wire("b", "w")]
    assert cvalues(run(blocks, conns)["workspace"]["y"])[0].tolist() == [(1 + 2j) * (3 - 1j)]
    assert cvalues(complex_out(blk("b", "mult", inputs=2), 1 + 1j, 2.0))[0].tolist() == [2 + 2j]


def test_divide_complex():
    assert cvalues(complex_out(blk("b", "divide"), 1 + 2j, 2.0))[0].tolist() == [0.5 + 1j]
    blocks, conns = z_source(0.0, 1.0, "d")
    blocks += [const("n", 2.0), blk("b", "divide"), record()]
    conns += [wire("n", "b", 0, 0), wire("d", "b", 0, 1), wire("b", "w")]
    assert cvalues(run(blocks, conns)["workspace"]["y"])[0].tolist() == [-2j]


def test_divide_complex_tiny_denominator_is_plus_1e_300_whatever_its_sign():
    # the real path keeps the sign (-1e-301 -> -1e-300), the complex path does not
    y = complex_out(blk("b", "divide"), 1 + 1j, -1e-301)
    assert cvalues(y)[0].tolist() == [complex(1 / 1e-300, 1 / 1e-300)]
    y = complex_out(blk("b", "divide"), [1 + 1j, 2], [-1e-301, 4.0])
    assert cvalues(y)[0].tolist() == [complex(1 / 1e-300, 1 / 1e-300), 0.5]
    blocks, conns = z_source(0.0, -1e-301, "d")
    blocks += [const("n", -3.0), blk("b", "divide"), record()]
    conns += [wire("n", "b", 0, 0), wire("d", "b", 0, 1), wire("b", "w")]
    assert cvalues(run(blocks, conns)["workspace"]["y"])[0].tolist() == [complex(-3 / 1e-300, 0.0)]


def test_divide_real_tiny_denominator_still_keeps_its_sign():
    y = run([const("n", 1.0), const("d", -1e-301), blk("b", "divide"), record()],
            [wire("n", "b", 0, 0), wire("d", "b", 0, 1), wire("b", "w")])["workspace"]["y"]
    assert y[0] == [1 / -1e-300]


def test_abs_of_complex_is_the_magnitude():
    assert complex_out(blk("b", "abs"), 3 - 4j) == [[5.0], [5.0]]
    assert complex_out(blk("b", "abs"), [3 - 4j, -2, 1j])[0] == [5.0, 2.0, 1.0]


# ----------------------------------------------------------------------------- routing blocks

def switch_case(top, control, bottom, **params):
    def src(id, v):
        if isinstance(v, complex) or (isinstance(v, list) and any(isinstance(x, complex) for x in v)):
            zs = np.atleast_1d(np.asarray(v, dtype=complex))
            return z_source(zs.real.tolist() if zs.size > 1 else zs.real[0],
                            zs.imag.tolist() if zs.size > 1 else zs.imag[0], id)
        return [const(id, v)], []
    blocks, conns = [], []
    for k, (id, v) in enumerate((("t", top), ("c", control), ("u", bottom))):
        b, c = src(id, v)
        blocks += b
        conns += c + [wire(id, "b", 0, k)]
    blocks += [blk("b", "switch", **params), record()]
    return run(blocks, conns + [wire("b", "w")])["workspace"]["y"]


def test_switch_passes_complex_data():
    assert cvalues(switch_case(1 + 1j, 1.0, 2.0))[0].tolist() == [1 + 1j]
    assert switch_case(1 + 1j, -1.0, 2.0)[0] == [2.0]     # the real branch: a real sample
    y = switch_case([1j, 2j], [1.0, -1.0], [5.0, 6.0])
    assert cvalues(y)[0].tolist() == [1j, 6]


def test_switch_complex_control_compares_its_real_part():
    # 0 - 1j >= 0: by the real part, true (a lexicographic complex order would say false)
    assert switch_case(1.0, -1j, 2.0) == [[1.0], [1.0]]
    assert switch_case(1.0, -0.5 + 9j, 2.0, Criteria="gt") == [[2.0], [2.0]]
    assert switch_case([1.0, 1.0], [-1j, -1 + 1j], [2.0, 2.0]) == [[1.0, 2.0]] * 2


def test_selector_picks_complex_elements():
    y = complex_out(blk("b", "selector", Indices=[3, 1]), [1 + 1j, 2, -3j])
    assert cvalues(y)[0].tolist() == [-3j, 1 + 1j]
    y = complex_out(blk("b", "selector", Indices=2), [1 + 1j, 2 - 2j])
    assert cvalues(y)[0].tolist() == [2 - 2j]


def test_reshape_passes_complex():
    y = complex_out(blk("b", "reshape", OutputDimensions=[2, 1]), [1j, 2])
    assert cvalues(y)[0].tolist() == [1j, 2]
    y = complex_out(blk("b", "reshape", OutputDimensions=[3]), 1 - 1j)   # a scalar broadcast
    assert cvalues(y)[0].tolist() == [1 - 1j] * 3


def test_concatenate_with_complex_inputs():
    blocks, conns = z_source([1.0, 2.0], [3.0, 4.0])
    blocks += [const("r", [5.0, 6.0]), blk("b", "concatenate", inputs=2), record()]
    conns += [wire("z", "b", 0, 0), wire("r", "b", 0, 1), wire("b", "w")]
    assert cvalues(run(blocks, conns)["workspace"]["y"])[0].tolist() == [1 + 3j, 2 + 4j, 5, 6]
    blocks, conns = z_source(1.0, -1.0)
    blocks += [const("r", 7.0), blk("b", "concatenate", inputs=2), record()]
    conns += [wire("r", "b", 0, 0), wire("z", "b", 0, 1), wire("b", "w")]
    assert cvalues(run(blocks, conns)["workspace"]["y"])[0].tolist() == [7, 1 - 1j]
    blocks, conns = z_source(1.0, -1.0)                    # a scalar input next to a vector one
    blocks += [const("r", [7.0, 8.0]), blk("b", "concatenate", inputs=2), record()]
    conns += [wire("r", "b", 0, 0), wire("z", "b", 0, 1), wire("b", "w")]
    assert cvalues(run(blocks, conns)["workspace"]["y"])[0].tolist() == [7, 8, 1 - 1j]


# ----------------------------------------------------------------------------- toWorkspace

def recorded(save_format, **params):
    blocks, conns = z_source([1.0, -2.0], [0.5, 0.0])
    blocks.append(blk("w", "toWorkspace", VariableName="y", SaveFormat=save_format, **params))
    return run(blocks, conns + [wire("z", "w")], duration=0.3)["workspace"]["y"]


def test_to_workspace_array_of_a_complex_signal():
    assert recorded("Array") == {"real": [[1.0, -2.0]] * 4, "imag": [[0.5, 0.0]] * 4}


def test_to_workspace_structures_of_a_complex_signal():
    y = recorded("Structure With Time")
    assert y["time"] == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert y["signals"] == {"values": {"real": [[1.0, -2.0]] * 4, "imag": [[0.5, 0.0]] * 4},
                            "dimensions": 2, "label": ""}
    assert y["blockName"] == "w"
    y = recorded("Structure")
    assert y["time"] == [] and y["signals"]["dimensions"] == 2


def test_to_workspace_complex_decimation_and_window():
    y = recorded("Array", Decimation=2, MaxDataPoints=1)
    assert y == {"real": [[1.0, -2.0]], "imag": [[0.5, 0.0]]}


def test_to_workspace_complex_json_text_and_non_finite_parts():
    blocks, conns = z_source("nan", "inf")     # strings: JSON has no NaN / Infinity literals
    d = diagram(blocks + [record()], conns + [wire("z", "w")], duration=0.1)
    out = orjson.loads(nc.simulate_json(orjson.dumps(d)))
    assert out["workspace"]["y"] == {"real": [[None], [None]], "imag": [[None], [None]]}
    text = nc.simulate_json(orjson.dumps(d), allow_nan=True)
    assert '"imag":[[Infinity],[Infinity]]' in text.replace(" ", "")


def test_to_workspace_real_samples_of_a_sometimes_complex_signal_get_imaginary_zero():
    # the switch passes its complex top input while t < 0.15, then the real bottom one
    blocks, conns = z_source(1.0, 2.0)
    blocks += [blk("c", "ramp", slope=-1.0, start=0.0), const("k", 5.0),
               blk("b", "switch", Threshold=-0.15), record()]
    conns += [wire("z", "b", 0, 0), wire("c", "b", 0, 1), wire("k", "b", 0, 2), wire("b", "w")]
    y = run(blocks, conns, duration=0.3)["workspace"]["y"]
    assert y == {"real": [[1.0], [1.0], [5.0], [5.0]], "imag": [[2.0], [2.0], [0.0], [0.0]]}


def test_real_signals_are_still_plain_matrices():
    y = run([const("c", [1.0, 2.0]), record()], [wire("c", "w")])["workspace"]["y"]
    assert y == [[1.0, 2.0]] * 2


def test_cmath_agrees_on_the_angle_convention():
    # the extractor's angle is std::arg, i.e. cmath.phase: (-pi, pi]
    assert split("complexToMagnitudeAngle", complex(-1.0, -0.0))[1] == [cmath.phase(complex(-1.0, -0.0))]
