"""Every limit of issue 5 §2: configurable, a typed error with a code, an answer within a
second; and the hardening leftovers (clipped echoes, no numpy warnings for a tiny mass)."""
import io
import subprocess
import sys
import time
import warnings

import orjson
import pytest

import nflow_compat as nc
from nflow_compat import cli
from tests.util import blk, diagram, record, wire

FAST = 1.0   # seconds: every limit answers within this


def answer(call):
    """(the NFlowError raised, seconds taken); fails when ``call`` returns normally."""
    started = time.perf_counter()
    with pytest.raises(nc.NFlowError) as info:
        call()
    return info.value, time.perf_counter() - started


def small():
    return diagram([blk("c", "constant", Value=2), blk("g", "gain", Gain=3), record()],
                   [wire("c", "g"), wire("g", "w")], duration=0.2)


def _phys(a, ap, b, bp):
    return {"from": a, "fromPin": ap, "to": b, "toPin": bp}


@pytest.fixture(autouse=True, scope="module")
def _warm_up():
    """The first solver run imports scipy (~1 s): not part of any answer time below."""
    nc.simulate(diagram([blk("m", "Mass", v0=1)], [], duration=0.2, solver="ode45"))


# ----------------------------------------------------------------------------- grid and solver steps

def test_max_steps_default_answers_at_once():
    d = dict(small(), sampleTime=1e-9, duration=1e3)        # 1e12 samples
    err, took = answer(lambda: nc.simulate(d))
    assert isinstance(err, nc.SimulationError) and err.code == "too_many_steps" and took < FAST


def test_max_steps_is_configurable():
    err, took = answer(lambda: nc.simulate(small(), limits=nc.Limits(max_steps=2)))
    assert err.code == "too_many_steps" and took < FAST
    assert len(nc.simulate(small(), limits=nc.Limits(max_steps=4))["time"]) == 3


def test_max_solver_steps_known_ahead_from_max_step():
    d = diagram([blk("m", "Mass", v0=1)], [], dt=0.1, duration=10.0, solver="ode45", maxStep=1e-6)
    err, took = answer(lambda: nc.simulate(d))                # 1e7 steps > 500,000 (default)
    assert isinstance(err, nc.SimulationError) and err.code == "too_many_steps" and took < FAST
    assert err.path == "/maxStep"


def test_max_solver_steps_known_ahead_for_a_fixed_step_solver():
    # the discrete solver integrates a physical island by RK4, one step per sample at least
    d = diagram([blk("m", "Mass", v0=1), blk("s", "PositionSensor"), record()],
                [_phys("m", "flange", "s", "flange"), wire("s", "w")], dt=1e-3, duration=1000.0)
    err, took = answer(lambda: nc.simulate(d))                # 1e6 samples > 500,000 solver steps
    assert isinstance(err, nc.SimulationError) and err.code == "too_many_steps" and took < FAST
    assert "solver steps" in err.message


def test_max_solver_steps_counts_the_whole_run_across_restarts():
    # discrete state (a counter) restarts the integration at every grid point; each of the
    # 30 intervals takes ~10 steps (maxStep dt/10): 300 in all, over a limit of 100 although
    # no single interval comes near it (grid size x internal steps is what is bounded)
    d = diagram([blk("k", "counterFreeRunning"), blk("m", "Mass", v0=1)], [], dt=0.1, duration=3.0,
                solver="ode45")
    # the automatic step cap is duration/50 = 0.06 s: at least 2 steps in each 0.1 s interval,
    # 60 or more over the 30 intervals, a handful in any one of them
    limits = nc.Limits(max_solver_steps=45)
    err, took = answer(lambda: nc.simulate(d, limits=limits))
    assert err.code == "too_many_steps" and "over the run" in err.message and took < FAST
    assert nc.simulate(d, limits=nc.Limits(max_solver_steps=1000))["status"] == "ok"


def test_max_solver_steps_stops_a_variable_step_solver_when_reached():
    d = diagram([blk("ground", "RotFixed"), blk("spring", "RotSpring", c=1e9), blk("J", "Inertia", phi0=1)],
                [_phys("spring", "a", "ground", "flange"), _phys("spring", "b", "J", "flange")],
                dt=0.1, duration=1.0, solver="ode45")
    err, took = answer(lambda: nc.simulate(d, limits=nc.Limits(max_solver_steps=50)))
    assert err.code == "too_many_steps" and took < FAST


def test_default_solver_step_limit_is_the_documented_one():
    assert nc.Limits().max_solver_steps == 500_000


# ----------------------------------------------------------------------------- size of the diagram

def test_max_blocks_default():
    d = dict(small(), blocks=[blk(f"b{i}", "constant") for i in range(100_001)], connections=[])
    err, took = answer(lambda: nc.simulate(d))
    assert isinstance(err, nc.DiagramError) and err.code == "too_many_blocks" and took < FAST


def test_max_blocks_is_configurable():
    err, took = answer(lambda: nc.simulate(small(), limits=nc.Limits(max_blocks=2)))
    assert err.code == "too_many_blocks" and took < FAST


def _mux_cascade(levels: int, value=1.0):
    """Each mux takes the previous signal twice: width 2**levels times the constant's."""
    blocks = [blk("m0", "constant", Value=value)]
    conns = []
    for i in range(1, levels + 1):
        blocks.append(blk(f"m{i}", "mux", inputs=2))
        conns += [wire(f"m{i - 1}", f"m{i}", 0, 0), wire(f"m{i - 1}", f"m{i}", 0, 1)]
    blocks.append(blk("t", "terminator"))
    conns.append(wire(f"m{levels}", "t"))
    return diagram(blocks, conns, duration=0.2)


def test_max_width_refuses_a_huge_signal_before_allocating_it():
    d = _mux_cascade(27)                                      # 2**27 = 1.3e8 elements
    err, took = answer(lambda: nc.simulate(d))
    assert isinstance(err, nc.DiagramError) and err.code == "too_wide" and took < FAST
    assert err.block == "m20" and "1000000" in err.message    # the first mux over 10^6 elements


def test_max_width_is_configurable():
    err, took = answer(lambda: nc.simulate(_mux_cascade(3), limits=nc.Limits(max_width=4)))
    assert err.code == "too_wide" and err.block == "m3" and took < FAST
    assert nc.simulate(_mux_cascade(3), limits=nc.Limits(max_width=8))["status"] == "ok"


def test_a_hundred_million_element_constant_is_refused_fast():
    # the expression route to a huge Value; the JSON route is the input-size limit
    d = dict(small(), variables={"v": [1.0] * 1_000_000})
    d["blocks"][0]["params"]["Value"] = "[" + " ".join(["v"] * 100) + "]"    # 10^8 elements
    err, took = answer(lambda: nc.simulate(d))
    assert isinstance(err, nc.DiagramError) and err.code == "bad_expression" and took < FAST
    assert "larger than 1000000" in err.message


def test_max_element_steps():
    d = dict(_mux_cascade(10), sampleTime=1e-3, duration=1000.0)     # 1e6 samples x 2047 elements
    err, took = answer(lambda: nc.simulate(d))
    assert isinstance(err, nc.SimulationError) and err.code == "too_many_element_steps" and took < FAST
    err, took = answer(lambda: nc.simulate(small(), limits=nc.Limits(max_element_steps=5)))
    assert err.code == "too_many_element_steps" and took < FAST


# ----------------------------------------------------------------------------- expressions

def test_max_expression_length():
    d = small()
    d["blocks"][0]["params"]["Value"] = "+".join(["1"] * 5001)       # 10,001 characters
    err, took = answer(lambda: nc.simulate(d))
    assert isinstance(err, nc.DiagramError) and err.code == "expression_too_long" and took < FAST
    d["blocks"][0]["params"]["Value"] = "1+2+3+4"
    err, took = answer(lambda: nc.simulate(d, limits=nc.Limits(max_expression_length=5)))
    assert err.code == "expression_too_long" and took < FAST
    assert nc.simulate(d, limits=nc.Limits(max_expression_length=7))["workspace"]["y"][0] == [30.0]


def test_max_exponent():
    d = small()
    d["blocks"][0]["params"]["Value"] = "2^1e9"
    err, took = answer(lambda: nc.simulate(d))
    assert isinstance(err, nc.DiagramError) and err.code == "exponent_too_large" and took < FAST
    assert err.block == "c" and err.param == "Value"
    d["blocks"][0]["params"]["Value"] = "pow(2, 3)"
    err, took = answer(lambda: nc.simulate(d, limits=nc.Limits(max_exponent=2)))
    assert err.code == "exponent_too_large" and took < FAST
    d["blocks"][0]["params"]["Value"] = "2^-2"
    assert nc.simulate(d, limits=nc.Limits(max_exponent=2))["workspace"]["y"][0] == [0.75]


def test_max_exponent_in_a_compiled_block_expression():
    d = diagram([blk("c", "constant", Value=2), blk("e", "expression", Expr="u^1e9"), record()],
                [wire("c", "e"), wire("e", "w")], duration=0.2)
    err, took = answer(lambda: nc.simulate(d))
    assert isinstance(err, nc.DiagramError) and err.code == "expression_invalid" and took < FAST
    assert "exponent" in err.message


# ----------------------------------------------------------------------------- the JSON text

def _nested_gain(depth: int) -> str:
    d = small()
    d["blocks"][1]["params"]["Gain"] = "@@"
    return orjson.dumps(d).decode().replace('"@@"', "[" * depth + "3" + "]" * depth)


def test_max_json_depth_default():
    err, took = answer(lambda: nc.simulate_json(_nested_gain(600)))
    assert isinstance(err, nc.DiagramError) and err.code == "too_deep" and took < FAST
    err, took = answer(lambda: nc.simulate_json(_nested_gain(5000)))   # past orjson's own 1024
    assert err.code == "too_deep" and took < FAST


def test_max_json_depth_is_configurable():
    text = _nested_gain(3)                                    # depth 7 in all
    err, took = answer(lambda: nc.simulate_json(text, limits=nc.Limits(max_json_depth=6)))
    assert err.code == "too_deep" and took < FAST
    assert orjson.loads(nc.simulate_json(text, limits=nc.Limits(max_json_depth=7)))["workspace"]["y"][0] == [6.0]


def test_max_json_depth_on_a_python_object_that_contains_itself():
    d = small()
    loop = []
    loop.append(loop)
    d["blocks"][1]["params"]["Gain"] = loop
    err, took = answer(lambda: nc.simulate(d))
    assert err.code == "too_deep" and took < FAST


def test_max_input_bytes_refuses_before_parsing():
    text = b'{"blocks": [], "pad": "' + b"x" * (64 * 1024 * 1024) + b'"}'
    err, took = answer(lambda: nc.simulate_json(text))
    assert isinstance(err, nc.DiagramError) and err.code == "input_too_large" and took < FAST
    small_text = orjson.dumps(small())
    err, took = answer(lambda: nc.simulate_json(small_text, limits=nc.Limits(max_input_bytes=100)))
    assert err.code == "input_too_large" and took < FAST


class _EndlessStdin:
    """A stdin that never ends (a gigabyte stream): how much does the CLI ask for?"""

    def __init__(self):
        self.asked = 0
        self.buffer = self

    def read(self, n=-1):
        assert n > 0, "the CLI must not read an unbounded stdin to the end"
        self.asked += n
        return b" " * n


def test_cli_reads_no_more_than_the_input_limit(monkeypatch, capsys):
    stdin = _EndlessStdin()
    monkeypatch.setattr(sys, "stdin", stdin)
    started = time.perf_counter()
    code = cli.main(["--limit", "max_input_bytes=1000"])
    assert code == 2 and time.perf_counter() - started < FAST
    assert stdin.asked == 1001
    assert orjson.loads(capsys.readouterr().out)["error"]["code"] == "input_too_large"


def test_cli_limit_option(tmp_path):
    f = tmp_path / "d.json"
    f.write_bytes(orjson.dumps(small()))
    out = subprocess.run([sys.executable, "-m", "nflow_compat", "run", str(f), "--limit", "max_steps=2"],
                         capture_output=True, timeout=60)
    assert out.returncode == 1 and orjson.loads(out.stdout)["error"]["code"] == "too_many_steps"
    out = subprocess.run([sys.executable, "-m", "nflow_compat", "--limit", "max_blocks=2", "run", str(f)],
                         capture_output=True, timeout=60)
    assert out.returncode == 2 and orjson.loads(out.stdout)["error"]["code"] == "too_many_blocks"
    out = subprocess.run([sys.executable, "-m", "nflow_compat", "run", str(f), "--limit", "max_stepz=2"],
                         capture_output=True, timeout=60)
    assert out.returncode == 2 and b"max_steps" in out.stderr and out.stdout == b""


def test_cli_limit_before_and_after_the_command_combine():
    args = cli._parse(["--limit", "max_steps=5", "run", "x.json", "--limit", "max_blocks=7",
                       "--limit", "max_exponent=2.5"])
    assert (args.limits.max_steps, args.limits.max_blocks, args.limits.max_exponent) == (5, 7, 2.5)
    assert cli._parse(["validate", "x.json", "--limit", "max-json-depth=9"]).limits.max_json_depth == 9
    for bad in (["--limit", "max_steps=1.5"], ["--limit", "max_steps=-1"], ["--limit", "max_steps"]):
        with pytest.raises(SystemExit):
            cli._parse(bad)


def test_limits_must_be_positive():
    with pytest.raises(ValueError):
        nc.Limits(max_steps=0)
    with pytest.raises(ValueError):
        nc.Limits(max_width=float("nan"))


# ----------------------------------------------------------------------------- echoes are clipped

MEGA = "x" * 1_000_000


def _assert_clipped(err):
    for value in (err.message, err.block, err.path, err.param):
        assert value is None or len(value) <= 500
    for value in (err.block, err.path, err.param):
        assert value is None or len(value) <= 200
    assert len(orjson.dumps(err.to_dict())) < 2000


def test_megabyte_block_id_is_clipped():
    d = small()
    d["blocks"][1]["id"] = MEGA
    d["blocks"][1]["type"] = "gian"
    err, took = answer(lambda: nc.simulate(d))
    assert err.code == "unknown_block_type" and took < FAST
    _assert_clipped(err)
    assert err.block.endswith("...") and "did you mean 'gain'" in err.message   # the tail survives


def test_megabyte_param_name_is_clipped():
    d = small()
    d["blocks"][1]["params"] = {"Gain": 3, "Gain" + MEGA: 1}
    result = nc.simulate(d)          # an unknown key with no close match: ignored with a warning
    assert result["warnings"] and all(len(w) <= 500 for w in result["warnings"])
    d["blocks"][1]["params"] = {MEGA: "1+"}
    d["blocks"][1]["type"] = "unknownType" + MEGA
    err, took = answer(lambda: nc.simulate(d))
    _assert_clipped(err)


def test_megabyte_names_in_a_param_error():
    d = small()
    d["blocks"][1]["id"] = MEGA
    d["blocks"][1]["params"] = {"Gain": "undefined_var"}
    err, took = answer(lambda: nc.simulate(d))
    assert err.code == "undefined_variable" and took < FAST
    _assert_clipped(err)
    d["blocks"][1]["params"] = {"Gain": 2}
    d["blocks"][0]["id"] = MEGA                      # used twice
    err, took = answer(lambda: nc.simulate(d))
    assert err.code == "duplicate_id" and took < FAST
    _assert_clipped(err)
    assert err.message.endswith("is used twice")     # the clipped id keeps the message whole


def test_megabyte_connection_target_is_clipped():
    d = small()
    d["connections"][0]["to"] = MEGA
    err, took = answer(lambda: nc.simulate(d))
    assert err.code == "unknown_block" and took < FAST
    _assert_clipped(err)


def test_cli_stderr_stays_short_for_a_megabyte_id():
    d = small()
    d["blocks"][1]["id"] = MEGA
    d["blocks"][1]["type"] = "gian"
    out = subprocess.run([sys.executable, "-m", "nflow_compat"], input=orjson.dumps(d), capture_output=True,
                         timeout=60)
    assert out.returncode == 2 and len(out.stderr) < 1000 and len(out.stdout) < 2000


# ----------------------------------------------------------------------------- a mass too small for 1/m

@pytest.mark.parametrize("solver", ["discrete", "ode45", "dae"])
@pytest.mark.parametrize("block, param", [("Mass", "m"), ("Inertia", "J")])
def test_tiny_mass_is_a_typed_error_without_numpy_warnings(block, param, solver):
    sensor = "PositionSensor" if block == "Mass" else "AngleSensor"
    d = diagram([blk("m", block, **{param: 5e-324}), blk("s", sensor), record()],
                [_phys("m", "flange", "s", "flange"), wire("s", "w")], duration=0.2, solver=solver)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a RuntimeWarning would raise here
        err, took = answer(lambda: nc.simulate(d))
    assert err.code == "non_finite_state" and err.block == "m" and err.param == param and took < FAST


def test_the_smallest_mass_with_a_finite_inverse_still_runs():
    d = diagram([blk("m", "Mass", m=1e-300), blk("s", "PositionSensor"), record()],
                [_phys("m", "flange", "s", "flange"), wire("s", "w")], duration=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert nc.simulate(d)["workspace"]["y"] == [[0.0]] * 3


def test_progress_keyword_does_not_change_the_result():
    assert nc.simulate(small(), progress=lambda done, total: None)["workspace"] == nc.simulate(small())["workspace"]


def test_error_to_dict_of_a_long_list_extra_is_bounded():
    err = nc.SimulationError("algebraic_loop", "loop", blocks=[MEGA] * 1000)
    listed = err.to_dict()["blocks"]
    assert len(listed) == 101 and all(len(b) <= 200 for b in listed)
    assert io is not None


# ----------------------------------------------------------------------------- the depth pre-scan

from hypothesis import given, settings, strategies as st  # noqa: E402

from nflow_compat.api import check_depth, text_depth  # noqa: E402

_JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet='[]{}"\\,:ab \n\u00e9\U0001f600', max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet='[]{}"\\a', max_size=4), inner,
                                                                 max_size=4),
    max_leaves=30)


def _depth(value) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(value=_JSON)
def test_text_depth_is_the_nesting_depth(value):
    text = orjson.dumps(value)
    assert text_depth(text) == _depth(value) == text_depth(text.decode())
    if _depth(value):
        check_depth(value, _depth(value))
        with pytest.raises(nc.DiagramError):
            check_depth(value, _depth(value) - 1)
