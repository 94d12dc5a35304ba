"""Fuzzing support: Hypothesis strategies for hostile diagrams and the property they must meet.

Two sources of cases, both encoded as JSON text for ``nflow_compat.simulate_json``:

* ``generated_diagrams()`` builds diagrams from the project's own manifests
  (``manifests.block_types()``): random supported block types (plus unsupported and unknown
  ones), parameters drawn per ``ParamSpec`` kind (valid values, expressions, enum values and
  wrong types), random wiring (valid, dangling, out of range, driven twice, feedback) and
  physical links between pins (including pins of the wrong domain and pins that do not exist);
* ``mutated_fixtures()`` takes a valid diagram from ``fixtures/**/*.json`` (duration shortened)
  and applies a few mutations: wrong types, missing fields, NaN/Inf/huge/denormal numbers,
  strings where numbers go, deep nesting, cycles, dangling connections, wrong-domain pins,
  huge sampleTime ratios, swapped block types, duplicated or removed blocks.

``check_case(text)`` is the property (docs/CONTRACT.md §3-§5): ``simulate_json`` returns strict JSON with
``status`` ok whose time grid is ``t_k = k*sampleTime`` for ``k = 0..N`` (fewer samples only
when a ``stopSimulation`` block can end the run), or raises an ``NFlowError`` with a non-empty
``code`` and ``message``. Anything else fails, and so does a case running longer than
``CASE_BUDGET_S`` (a SIGALRM timer interrupts a hang).
"""
from __future__ import annotations

import copy
import json
import math
import signal
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import orjson
from hypothesis import strategies as st

import nflow_compat as nc
from nflow_compat.api import strip_bom
from nflow_compat.blocks.handlers import supported_types
from nflow_compat.manifests import block_types
from tests.goldens import fixture_paths

FIXTURES_DIR = Path(__file__).resolve().parent.parent / "fixtures"
PACKAGE_DIR = Path(nc.__file__).resolve().parent
CASE_BUDGET_S = 5.0
# Small limits keep every case short: 2000 grid samples, 10k internal solver steps (a physical
# island under ode45 costs ~0.2 ms a step, so the step bound alone answers well within the budget).
LIMITS = nc.Limits(max_steps=2000, max_solver_steps=10_000)
MAX_FIXTURE_SAMPLES = 60        # fixtures are shortened to at most this many grid samples

TYPES = block_types()
SUPPORTED = [row["type"] for row in supported_types()]
UNSUPPORTED = sorted(set(TYPES) - set(SUPPORTED))
PHYSICAL = [t for t in SUPPORTED if TYPES[t].pins]
ALL_PINS = sorted({pin for bt in TYPES.values() for pin in bt.pins})
SOLVERS = ["discrete", "ode1", "ode4", "ode45", "dae"]
VARIABLES = {"k": 1.5, "f": 2.0, "T2": 0.05, "T3": 0.1, "v": [1.0, 2.0, 3.0], "z": 0.0}


# ----------------------------------------------------------------------------- the property

class CaseTimeout(BaseException):
    """A case ran past its wall-clock budget (a BaseException, so no ``except Exception``
    inside the library can swallow it)."""


@contextmanager
def wall_clock_budget(seconds: float):
    def expire(signum, frame):
        raise CaseTimeout(f"case still running after {seconds:g} s (a hang)")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check_case(text, *, budget: float = CASE_BUDGET_S) -> str:
    """Run one case; return ``"ok"`` or the error code. Fails (raises) on a contract breach."""
    started = time.perf_counter()
    with wall_clock_budget(budget):
        try:
            out = nc.simulate_json(text, limits=LIMITS)
        except nc.NFlowError as err:
            outcome = err
        else:
            outcome = None
    elapsed = time.perf_counter() - started
    assert elapsed <= budget, f"case took {elapsed:.2f} s (budget {budget:g} s)"
    if outcome is not None:
        assert isinstance(outcome.code, str) and outcome.code, f"error without a code: {outcome!r}"
        assert isinstance(outcome.message, str) and outcome.message, f"error without a message: {outcome!r}"
        assert len(outcome.message) <= 500, f"{outcome.code}: message of {len(outcome.message)} characters"
        return outcome.code
    result = orjson.loads(out)  # strict JSON: NaN/Infinity tokens would not parse
    assert result["status"] == "ok", result
    check_time_grid(orjson.loads(strip_bom(text)), result)
    return "ok"


def signature(exc: BaseException) -> str:
    """A short key that groups crashes with one cause: the exception type and the innermost
    frame inside the package (or the first line of a contract assertion)."""
    if isinstance(exc, AssertionError):
        return "contract: " + (str(exc).splitlines() or [""])[0][:100]
    hang = isinstance(exc, CaseTimeout)
    where = "?"
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if PACKAGE_DIR in Path(code.co_filename).resolve().parents:
            where = str(Path(code.co_filename).resolve().relative_to(PACKAGE_DIR.parent))
            where += "" if hang else f":{code.co_name}"   # a hang is interrupted anywhere: group by module
        tb = tb.tb_next
    return f"{'hang (CaseTimeout)' if hang else type(exc).__name__} in {where}"


def _plain_number(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def check_time_grid(raw: dict, result: dict) -> None:
    """CONTRACT §3: t_k = k*sampleTime (a product), k = 0..N, N = floor(duration/sampleTime + 1e-9)."""
    st_, dur = _plain_number(raw["sampleTime"]), _plain_number(raw["duration"])
    if st_ is None or dur is None:   # given as a string / array: use the parsed values
        parsed = nc.validate(raw, limits=LIMITS)
        st_, dur = parsed.sample_time, parsed.duration
    n = int(math.floor(dur / st_ + 1e-9)) + 1
    times = result["time"]
    can_stop = any(_type_of(b) == "stopSimulation" for b in _blocks_of(raw))
    if can_stop:
        assert 1 <= len(times) <= n, (len(times), n)
    else:
        assert len(times) == n, f"{len(times)} samples, expected {n} (sampleTime {st_!r}, duration {dur!r})"
    assert times == [k * st_ for k in range(len(times))], "time grid is not k*sampleTime"
    assert result["stats"]["steps"] == len(times)
    for name, value in result["workspace"].items():
        structure = isinstance(value, dict) and "signals" in value
        rows = _recorded_rows(name, value["signals"]["values"] if structure else value)
        assert len(rows) <= len(times), name
        assert len({len(r) for r in rows}) <= 1, f"workspace {name!r} is ragged"
        if structure and value["time"]:
            assert len(value["time"]) == len(rows), name
            assert set(value["time"]) <= set(times), f"workspace {name!r} records off the grid"
    for ev in result["events"]:
        assert isinstance(ev["t"], float) and -1e-9 <= ev["t"] <= dur + st_, ev


def _recorded_rows(name: str, values) -> list:
    """The N x W rows of a recording: the matrix itself, or for a complex signal
    ``{"real": N x W, "imag": N x W}`` its real lane, after checking both lanes agree."""
    if isinstance(values, dict):
        assert set(values) == {"real", "imag"}, f"workspace {name!r}: unexpected keys {sorted(values)}"
        re, im = values["real"], values["imag"]
        assert isinstance(re, list) and isinstance(im, list), f"workspace {name!r}: lanes must be matrices"
        assert [len(r) for r in re] == [len(r) for r in im], f"workspace {name!r}: real/imag lanes differ"
        return re
    assert isinstance(values, list), f"workspace {name!r}: not a matrix"
    return values


def _blocks_of(raw: dict) -> list:
    blocks = raw.get("blocks")
    return [blocks] if isinstance(blocks, dict) else blocks if isinstance(blocks, list) else []


# ----------------------------------------------------------------------------- encoding

def _strict(obj):
    """orjson cannot write NaN or ints beyond 64 bits; json can, NaN as a bare token."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _strict(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_strict(v) for v in obj]
    return obj


@contextmanager
def deep_recursion():
    """Deeply nested test values need more than the default recursion limit to copy and
    encode (the library itself runs with the default)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 40_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def to_text(obj, loose: bool = False) -> str:
    """JSON text of ``obj``. ``loose``: NaN/Infinity tokens (not JSON: a bad_json error)."""
    with deep_recursion():
        if loose:
            return json.dumps(obj, allow_nan=True)
        return json.dumps(_strict(obj), allow_nan=False)


@st.composite
def encoded(draw, diagrams):
    """Text of a drawn diagram: mostly strict JSON, sometimes with NaN tokens."""
    obj = draw(diagrams)
    return to_text(obj, loose=draw(st.integers(0, 19)) == 0)


# ----------------------------------------------------------------------------- values

NASTY_FLOATS = [math.nan, math.inf, -math.inf, 1e308, -1e308, 1.7976931348623157e308, 5e-324, -5e-324,
                2.2250738585072014e-308, 1e-310, 0.0, -0.0, 1e-300, 1e300, 0.1, 1e15, 1e-15]
NASTY_INTS = [0, -1, 1, 2 ** 31, -2 ** 31, 2 ** 53 + 1, 2 ** 63, -2 ** 63, 2 ** 64, 10 ** 30, -10 ** 40]
NASTY_STRINGS = ["", " ", "nan", "NaN", "inf", "-inf", "Inf", "1e999", "-1e999", "1e-400", "0x10", "1_000",
                 "1+", "k*", "[1 2", "(((1", "1))", "[1 2; 3]", "[]", "[[1]]", "foo(1)", "sin()", "sin(1, 2)",
                 "undefined_var", "k", "v", "v .* v", "v * v", "2^2^2^2^2^2^2^2", "10^400", "-10^400",
                 "1/0", "0/0", "log(0)", "sqrt(-1)", "mod(1, 0)", "[1e308 -1e308]", "((((((((((1))))))))))",
                 "__import__('os').system('true')", "exec('1')", "lambda: 1", "().__class__", "\\u0000",
                 "\x00", "\ud800", "\u221e", "\U0001F600", "1" * 400, "k" * 70, "(" * 80 + "1" + ")" * 80,
                 "[" + " ".join(["1"] * 2000) + "]"]
FUNCTION_NAMES = ["exp", "log", "10^u", "log10", "magnitude^2", "square", "pow", "conj", "reciprocal", "hypot",
                  "rem", "mod", "transpose", "hermitian", "sqrt", "sin", "atan2", "sincos", "floor", "round",
                  "signedSqrt", "rSqrt", "nonsense", ""]
STRING_POOL = {
    "Inputs": ["+-", "++", "|+-", "+-+-", "-", "", "++++++++++", "x", "|||"],
    "Function": FUNCTION_NAMES,
    "Criteria": ["ge", "gt", "ne", "u2 >= Threshold", "u2 > Threshold", "u2 ~= 0", "bogus"],
    "OutputDimensions": ["[2 1]", "[1 2]", "2", "[]", "-1", "[0 0]", "[1e9 1e9]", "[3]", "x"],
    "VariableName": ["y", "y", "z", "simout", "", "a.b", "y"],
    "DataStoreName": ["A", "B"],
    # the modelica block's source: models that compile (a state, an input, events), a broken one
    "source": ["model D\n  Real x(start = 1, fixed = true);\n  output Real y = x;\nequation\n  der(x) = -x;\nend D;\n",
               "block P\n  input Real u;\n  output Real y;\n  Real x(start = 0, fixed = true);\nequation\n"
               "  der(x) = u;\n  y = 2 * u + x;\nend P;\n",
               "model B\n  Real h(start = 1, fixed = true);\n  Real v(start = 0, fixed = true);\n  output Real y = h;\n"
               "equation\n  der(h) = v;\n  der(v) = -9.81;\n  when h < 0 then\n    reinit(v, -0.5 * pre(v));\n"
               "  end when;\nend B;\n",
               "model E\n  Real x;\nequation\n  der(x) = -x +;\nend E;\n"],
}


def _finite(lo=-10.0, hi=10.0):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def nasty_scalars():
    return st.one_of(st.sampled_from(NASTY_FLOATS), st.sampled_from(NASTY_INTS), st.sampled_from(NASTY_STRINGS),
                     st.booleans(), st.none(), st.floats(), st.integers())


def deep(value, depth: int):
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def deep_values(draw):
    """Deep nesting around a scalar: JSON parsers, normalizers and reprs all recurse."""
    depth = draw(st.sampled_from([2, 8, 64, 300, 600, 900, 990, 1020, 1100, 5000]))
    return deep(draw(st.sampled_from([1, 0.5, "1", "k", None, {}])), depth)


def wrong_values():
    """Values of the wrong kind for almost any slot."""
    json_leaf = st.one_of(st.none(), st.booleans(), _finite(), st.text(max_size=5))
    return st.one_of(
        nasty_scalars(),
        st.dictionaries(st.text(max_size=3), json_leaf, max_size=3),
        st.lists(st.one_of(json_leaf, st.lists(json_leaf, max_size=3)), max_size=5),   # ragged, mixed
        deep_values(),
        st.text(max_size=30),
        st.integers(1000, 200_000).map(lambda n: "x" * n),                              # huge strings
    )


def chance(draw, p: float) -> bool:
    """True with probability ~p; shrinks towards False (towards the clean case)."""
    return p > 0 and draw(st.integers(0, 999)) >= 1000 - p * 1000


def numbers(spec=None):
    """A valid-looking scalar for a number param: floats respecting the range, specials,
    expressions over the diagram variables, one-element arrays. Plain floats first."""
    lo = None if spec is None else (spec.minimum if spec.minimum is not None else spec.exclusive_minimum)
    base = _finite() if lo is None else st.floats(lo, lo + 20.0, exclude_min=spec.exclusive_minimum is not None)
    plain = st.one_of(st.sampled_from([1.0, 0.5, 2.0, 0.0, -1.0, 3.0]) if lo is None else
                      st.sampled_from([lo + 1.0, lo + 0.5, lo + 2.0]), base, st.integers(-5, 40).map(float))
    return st.one_of(
        plain, plain.map(lambda x: [x]), plain.map(lambda x: repr(float(x))),
        st.sampled_from(["k*2", "k", "pi/2", "1e-3", "inf", "-inf", "nan", "T2", "2^-1", "max(1, k)", "[2]"]),
        st.sampled_from(NASTY_FLOATS), st.booleans())


def vectors():
    row = st.lists(_finite(), min_size=1, max_size=5)
    return st.one_of(
        row, numbers(), row.map(lambda r: [[x] for x in r]), row.map(lambda r: [r]),
        row.map(lambda r: "[" + " ".join(repr(x) for x in r) + "]"),
        st.sampled_from(["v", "[1 2 3]", "[1, 2; 3, 4]", "[]", "v .* 2", "[nan inf]", []]))


def matrices():
    return st.one_of(
        st.lists(st.tuples(_finite(0, 10), _finite(0, 2)).map(list), min_size=1, max_size=5),  # mu_pos tables
        st.integers(0, 4).flatmap(lambda w: st.lists(st.lists(_finite(), min_size=w, max_size=w), max_size=5)),
        vectors())


def any_values():
    """Structured params (fromWorkspace Data/times/values, ...)."""
    leaf = st.one_of(_finite(), st.none(), st.sampled_from(NASTY_FLOATS), st.text(max_size=4))
    structured = st.recursive(leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(st.sampled_from(
                                                                ["time", "times", "values", "signals", "x"]),
                                                                inner, max_size=3)), max_leaves=12)
    table = st.integers(1, 3).flatmap(lambda w: st.lists(st.lists(_finite(0, 5), min_size=w, max_size=w),
                                                         min_size=1, max_size=6))
    return st.one_of(table, st.lists(_finite(0, 5), min_size=1, max_size=6),
                     st.sampled_from([[0, 1, 2], [[0, 0], [1, 1], [2, 4]], "simin", "v", {"time": [0, 1],
                                      "signals": {"values": [1, 2]}}]), structured)


def strings(spec):
    pool = list(spec.enum) if spec.enum else STRING_POOL.get(spec.name, [])
    options = []
    if spec.default is not None:
        options.append(st.just(spec.default))
    if pool:
        options.append(st.sampled_from(pool))
        options.append(st.sampled_from(pool).map(lambda s: [s]))
    options.append(st.text(max_size=8))
    if spec.enum:  # near misses of an enum value (case, blanks)
        options.append(st.sampled_from(pool).map(lambda s: s.upper() if s != s.upper() else s.lower()))
        options.append(st.sampled_from(pool).map(lambda s: " " + s))
    return st.one_of(*options)


def booleans_like():
    return st.sampled_from([True, False, 0, 1, "on", "off", "true", "false", "yes", "no", 2.5, "k", [1], "ON",
                            "maybe", None])


_VALID_CACHE: dict = {}


def valid_param_value(type_name: str, spec):
    """The valid forms of ``spec``'s kind (cached per parameter: building strategies is slow)."""
    key = (type_name, spec.name)
    if key not in _VALID_CACHE:
        kind = spec.kind
        if kind == "number":
            valid = numbers(spec) if not spec.enum else st.one_of(st.sampled_from(list(spec.enum)), numbers(spec))
        elif kind in ("numeric", "vector"):
            valid = vectors()
        elif kind == "matrix":
            valid = matrices()
        elif kind == "string":
            valid = strings(spec)
        elif kind == "boolean":
            valid = booleans_like()
        elif kind == "strings":
            valid = st.one_of(st.lists(st.text(max_size=4), max_size=4), st.text(max_size=4))
        else:
            valid = any_values()
        _VALID_CACHE[key] = valid
    return _VALID_CACHE[key]


# ----------------------------------------------------------------------------- generated diagrams

def type_names():
    """Anything in the ``type`` slot: unsupported manifest types (when there are any), typos,
    non-strings."""
    return st.one_of(
        *([st.sampled_from(UNSUPPORTED)] if UNSUPPORTED else []),
        st.sampled_from(SUPPORTED).map(str.upper),
        st.sampled_from(["gian", "Gain", "", "toworkspace", "__class__", "constructor"]),
        wrong_values())


@st.composite
def params_for(draw, type_name, p_bad: float):
    """Params of a block: each manifest param left to its default or given a valid value;
    with probability ``p_bad`` a wrong one, an alias, a misspelled or unknown name."""
    bt = TYPES.get(type_name) if isinstance(type_name, str) else None
    if bt is None:
        return draw(st.one_of(st.just({}), st.dictionaries(st.text(max_size=6), wrong_values(), max_size=2)))
    params = {}
    for name, spec in bt.params.items():
        if draw(st.booleans()):
            continue                                  # manifest default
        if chance(draw, p_bad):
            params[name] = draw(wrong_values())
        else:
            params[name] = draw(valid_param_value(type_name, spec))
    for alias, name in bt.aliases.items():
        if name in params and chance(draw, 0.2):
            params[alias] = params.pop(name)          # an older inspector name
    if chance(draw, p_bad):                           # misspelled or unknown names
        name = draw(st.sampled_from(list(bt.params) or ["x"]))
        params[draw(st.sampled_from([name.lower(), name.upper(), name + "_", "layoutX", "name"]))] = draw(
            st.one_of(numbers(), wrong_values()))
    if chance(draw, p_bad / 4):
        return draw(st.sampled_from([None, [], [1], "params", 0]))
    return params


INERTIAL = {"Mass", "Inertia", "SlidingMass", "MassWithStopAndFriction", "Fixed", "RotFixed", "PlanarBody",
            "PlanarPointMass", "PlanarWorld", "PlanarFixed", "Ground"}
MASS_OF = {"translational": "Mass", "rotational": "Inertia", "planar": "PlanarBody", "electrical": "Ground"}
VARIABLE_PORTS = {"sum", "mult", "mux", "scope", "concatenate", "and", "or", "xor", "logicalOperator", "min",
                  "max", "demux"}


@st.composite
def block_entries(draw, type_name, block_id, p_bad: float):
    entry = {"id": block_id, "type": type_name}
    bt = TYPES.get(type_name) if isinstance(type_name, str) else None
    for key in ("inputs", "outputs"):
        default = getattr(bt, key) if bt else 1
        if chance(draw, p_bad):
            entry[key] = draw(st.one_of(st.sampled_from([-1, 0.5, "2", 10_001, 1e9, None, [1], True]),
                                        st.integers(0, 6), wrong_values()))
        elif _type_of(entry) in VARIABLE_PORTS and chance(draw, 0.3):
            entry[key] = draw(st.integers(0, 5))
        elif draw(st.booleans()):
            entry[key] = default                      # as jsonencode of a palette block writes it
    entry["params"] = draw(params_for(type_name, p_bad))
    if chance(draw, 0.1):
        entry.update({"x": 10, "y": 20, "name": "layout"})
    return entry


def _type_of(entry) -> str | None:
    """The block's type name when it is a string (fuzzed entries hold anything there)."""
    t = entry.get("type") if isinstance(entry, dict) else None
    return t if isinstance(t, str) else None


def _ports(entry, key):
    bt = TYPES.get(_type_of(entry))
    n = entry.get(key, getattr(bt, key, 1) if bt else 1)
    return n if isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= 10 else 1


def _pins(entry) -> dict:
    bt = TYPES.get(_type_of(entry))
    return bt.pins if bt else {}


@st.composite
def wiring(draw, entries, p_bad: float):
    """Connections: each input port driven at most once (by any output, feedback included),
    each physical pin joined to a pin of the same domain; with ``p_bad`` broken ones too."""
    conns = []
    sources = [e for e in entries if _ports(e, "outputs") > 0]
    for dst in entries:
        for port in range(_ports(dst, "inputs")):
            if sources and draw(st.integers(0, 3)):
                src = draw(st.sampled_from(sources))
                conns.append({"from": src["id"], "to": dst["id"],
                              "fromIndex": draw(st.integers(0, _ports(src, "outputs") - 1)), "toIndex": port})
    physical = [e for e in entries if _pins(e)]
    for a in physical:
        for pin, domain in _pins(a).items():
            others = [(b, q) for b in physical if b is not a for q, dom in _pins(b).items() if dom == domain]
            inertial = [(b, q) for b, q in others if _type_of(b) in INERTIAL]
            if not others or not draw(st.integers(0, 19)):
                continue                              # a pin left open
            # mostly onto a mass, inertia or ground: a node of springs alone is singular
            b, q = draw(st.sampled_from(inertial if inertial and draw(st.integers(0, 6)) else others))
            conns.append({"from": a["id"], "fromPin": pin, "to": b["id"], "toPin": q})
    for _ in range(3):
        if chance(draw, p_bad):
            conns.insert(draw(st.integers(0, len(conns))), draw(broken_connection(entries)))
    if conns and chance(draw, 0.1):
        conns = draw(st.permutations(conns))
    return conns


@st.composite
def broken_connection(draw, entries):
    ids = [e["id"] for e in entries] or ["b0"]
    return draw(st.one_of(
        st.just({"from": "nowhere", "to": ids[0]}),
        st.builds(lambda a: {"from": a, "to": "missing", "fromIndex": 0, "toIndex": 0}, st.sampled_from(ids)),
        st.builds(lambda a: {"to": a}, st.sampled_from(ids)),
        st.builds(lambda a, b, i, j: {"from": a, "to": b, "fromIndex": i, "toIndex": j}, st.sampled_from(ids),
                  st.sampled_from(ids), st.sampled_from([-1, 0, 1, 7, 0.5, "0", None, 2 ** 40, math.nan]),
                  st.sampled_from([-1, 0, 1, 7, 1.5, "1", None, 2 ** 40, math.inf])),
        st.builds(lambda a, b, p, q: {"from": a, "fromPin": p, "to": b, "toPin": q}, st.sampled_from(ids),
                  st.sampled_from(ids), st.sampled_from(ALL_PINS + ["", 0]), st.sampled_from(ALL_PINS + ["x"])),
        st.builds(lambda a, p: {"from": a, "fromPin": p, "to": a}, st.sampled_from(ids), st.sampled_from(ALL_PINS)),
        st.builds(lambda a, w: {"from": a, "to": a, "fromIndex": w, "toIndex": w}, st.sampled_from(ids),
                  wrong_values()),
        st.builds(lambda w: {"from": w, "to": w}, wrong_values()),
        wrong_values()))


@st.composite
def header(draw, p_bad: float):
    """sampleTime, duration, solver, tolerances, variables: short sane runs, with ``p_bad``
    hostile values."""
    out = {}
    dt = draw(st.sampled_from([0.1, 0.05, 0.25, 0.01, 1.0, 0.125, 0.3]))
    steps = draw(st.integers(0, 60))
    out["sampleTime"] = dt
    out["duration"] = draw(st.sampled_from([dt * steps or dt, dt * steps + dt / 3, round(dt * steps, 3) or dt]))
    if chance(draw, p_bad):
        out["sampleTime"] = draw(st.one_of(st.sampled_from([0, -0.1, 1e-300, 5e-324, 1e300, "0.1", [0.1], "k/10",
                                                            "1e-5", 1e-5, 1e-4]), wrong_values()))
    if chance(draw, p_bad):
        out["duration"] = draw(st.one_of(st.sampled_from([0, -1, 1e300, 1e-300, "1", [1], "inf", 199.9, 1e-9]),
                                         wrong_values()))
    if chance(draw, p_bad):
        out["solver"] = draw(st.one_of(st.sampled_from(["ode23", "ODE45", "", "euler"]), wrong_values()))
    elif draw(st.integers(0, 5)):
        out["solver"] = draw(st.sampled_from(SOLVERS))
    for key, sane in (("relTol", [1e-6, 1e-3, 1e-9]), ("absTol", [1e-8, 1e-6]), ("maxStep", [0.01, 0.1, 1.0])):
        if chance(draw, p_bad):
            out[key] = draw(st.one_of(st.sampled_from([1e-300, 5e-324, 1e300, 0, -1, None, "1e-6", 1e-14]),
                                      wrong_values()))
        elif chance(draw, 0.1):
            out[key] = draw(st.sampled_from(sane))
    if chance(draw, p_bad):
        out["variables"] = draw(st.one_of(
            st.dictionaries(st.sampled_from(["k", "f", "1bad", "", "x y", "v", "T2", "sin"]),
                            st.one_of(numbers(), vectors(), wrong_values()), max_size=4),
            wrong_values()))
    else:
        out["variables"] = dict(VARIABLES) if draw(st.integers(0, 5)) else {}
    return out


@st.composite
def generated_diagrams(draw):
    """A diagram built from the manifests. Most are clean (valid values, consistent wiring)
    so that they reach the engine; one in ten is "chaotic" (hostile values at every decision
    point); then zero to two fixture-style mutations (see MUTATIONS) are applied."""
    p_bad = 0.12 if chance(draw, 0.1) else 0.0
    n = draw(st.integers(1, 7))
    entries = []
    for i in range(n):
        if chance(draw, p_bad):
            tname = draw(type_names())
        elif chance(draw, 0.3):
            tname = draw(st.sampled_from(PHYSICAL))
        else:
            tname = draw(st.sampled_from(SUPPORTED))
        bid = f"b{i}"
        if chance(draw, p_bad):
            bid = draw(st.one_of(st.sampled_from(["", None, 7, 1.5, [], "a/b~c", "\u00e9", "b0"]), wrong_values()))
        entries.append(draw(block_entries(tname, bid, p_bad)))
    for _ in range(draw(st.integers(0, 2))):           # recorders, so that results carry data
        entries.append({"id": f"rec{len(entries)}", "type": "toWorkspace",
                        "params": {"VariableName": draw(st.sampled_from(["y", "z", "w"])),
                                   "SaveFormat": draw(st.sampled_from(["Array", "Structure With Time",
                                                                       "Structure"]))}})
    for domain in sorted({dom for e in entries for dom in _pins(e).values()}):
        if domain in MASS_OF and not chance(draw, 0.1):   # something inertial for the physical blocks
            entries.append({"id": f"m{len(entries)}", "type": MASS_OF[domain],
                            "params": draw(params_for(MASS_OF[domain], p_bad))})
    usable = [e for e in entries if isinstance(e.get("id"), (str, int, float)) and not isinstance(e["id"], bool)]
    conns = draw(wiring(usable, p_bad))
    d = draw(header(p_bad))
    d["blocks"] = entries[0] if len(entries) == 1 and chance(draw, 0.5) else entries
    d["connections"] = conns[0] if len(conns) == 1 and chance(draw, 0.5) else conns
    if chance(draw, p_bad):
        del d[draw(st.sampled_from(sorted(d)))]
    return draw(mutate(d, st.sampled_from([0, 0, 0, 1, 1, 2])))


# ----------------------------------------------------------------------------- fixture mutations

def _load_fixtures() -> list:
    out = []
    for path in fixture_paths():
        diagram = orjson.loads(path.read_bytes())["diagram"]
        st_, dur = _plain_number(diagram.get("sampleTime")), _plain_number(diagram.get("duration"))
        if st_ and dur and st_ > 0:
            diagram["duration"] = min(dur, st_ * (MAX_FIXTURE_SAMPLES - 1))
        out.append((str(path.relative_to(FIXTURES_DIR)), diagram))
    return out


FIXTURES = _load_fixtures()
OTHER_DOMAIN = {"Mass": "Inertia", "Inertia": "Mass", "Spring": "RotSpring", "RotSpring": "Spring",
                "Damper": "RotDamper", "RotDamper": "Damper", "Fixed": "RotFixed", "RotFixed": "Fixed",
                "Brake": "RotBrake", "RotBrake": "Brake", "Force": "Torque", "Torque": "Force",
                "PositionSensor": "AngleSensor", "AngleSensor": "PositionSensor", "SpeedSensor": "RotSpeedSensor",
                "RotSpeedSensor": "SpeedSensor", "SpringDamper": "RotSpringDamper",
                "RotSpringDamper": "SpringDamper", "MassWithStopAndFriction": "Inertia", "Clutch": "Damper"}


def _paths(root, max_depth: int = 40) -> list:
    """Every (path, value) in a JSON tree, the root included (iterative: trees may be deep;
    nodes below ``max_depth`` are not listed)."""
    out, stack = [], [((), root)]
    while stack:
        path, node = stack.pop()
        out.append((path, node))
        if len(path) >= max_depth:
            continue
        if isinstance(node, dict):
            stack.extend((path + (k,), v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((path + (i,), v) for i, v in enumerate(node))
    return out


def _set(root, path, value):
    node = root
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def _delete(root, path):
    node = root
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]


def _blocks(d) -> list:
    b = d.get("blocks")
    return b if isinstance(b, list) else [b] if isinstance(b, dict) else []


def _conns(d) -> list:
    c = d.get("connections")
    if isinstance(c, dict):
        d["connections"] = c = [c]
    if not isinstance(c, list):
        d["connections"] = c = []
    return c


def _ids(d) -> list:
    return [b.get("id") for b in _blocks(d) if isinstance(b, dict)] or ["none"]


@st.composite
def _m_replace(draw, d):
    """Some node (a param, an id, a port index, a header field) becomes a hostile value."""
    path, _ = draw(st.sampled_from([p for p in _paths(d) if p[0]]))
    _set(d, path, draw(st.one_of(nasty_scalars(), wrong_values())))


@st.composite
def _m_numbers(draw, d):
    """A number somewhere becomes NaN/Inf/huge/denormal, or a string of it."""
    nums = [p for p, v in _paths(d) if p and isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not nums:
        return
    path = draw(st.sampled_from(nums))
    value = draw(st.sampled_from(NASTY_FLOATS + NASTY_INTS))
    if draw(st.booleans()):
        value = draw(st.sampled_from([repr(value), str(value), "[" + repr(value) + "]", "k*" + repr(value)]))
    _set(d, path, value)


@st.composite
def _m_delete(draw, d):
    """A field goes missing (params, id, type, from, fromIndex, sampleTime, a whole block, ...)."""
    path, _ = draw(st.sampled_from([p for p in _paths(d) if p[0]]))
    _delete(d, path)


@st.composite
def _m_deep(draw, d):
    """Deep nesting, mostly around a parameter value (normalizers and reprs recurse), at
    depths on both sides of the JSON parser's limit (1024)."""
    nodes = [p for p in _paths(d) if p[0]]
    params = [(path, v) for path, v in nodes if len(path) == 4 and path[0] == "blocks" and path[2] == "params"]
    path, value = draw(st.sampled_from(params if params and draw(st.booleans()) else nodes))
    _set(d, path, deep(value, draw(st.sampled_from([3, 50, 300, 600, 900, 990, 1010, 1030, 2000]))))


@st.composite
def _m_cycle(draw, d):
    """A feedback wire from some output back to some input (self loops included)."""
    blocks = [b for b in _blocks(d) if isinstance(b, dict)]
    outs = [b for b in blocks if _ports(b, "outputs") > 0]
    ins = [b for b in blocks if _ports(b, "inputs") > 0]
    if not outs or not ins:
        return
    src, dst = draw(st.sampled_from(outs)), draw(st.sampled_from(ins))
    conns = _conns(d)
    # replace whatever drives that input, else the new wire makes a "driven twice" error
    port = draw(st.integers(0, _ports(dst, "inputs") - 1))
    conns[:] = [c for c in conns if not (isinstance(c, dict) and c.get("to") == dst.get("id")
                                         and c.get("toIndex", 0) == port and "toPin" not in c)]
    conns.append({"from": src.get("id"), "to": dst.get("id"),
                  "fromIndex": draw(st.integers(0, _ports(src, "outputs") - 1)), "toIndex": port})


@st.composite
def _m_dangling(draw, d):
    conns = _conns(d)
    ids = _ids(d)
    conns.append(draw(st.one_of(
        st.builds(lambda a: {"from": a, "to": "ghost", "fromIndex": 0, "toIndex": 0}, st.sampled_from(ids)),
        st.builds(lambda a: {"from": "ghost", "to": a}, st.sampled_from(ids)),
        st.builds(lambda a, i: {"from": a, "to": a, "fromIndex": i, "toIndex": i}, st.sampled_from(ids),
                  st.sampled_from([-1, 99, 10_001, 2 ** 63, 0.5, "x", None])),
        st.builds(lambda a: {"from": a, "fromPin": "flange", "to": "ghost", "toPin": "flange"},
                  st.sampled_from(ids)))))


@st.composite
def _m_driven_twice(draw, d):
    conns = [c for c in _conns(d) if isinstance(c, dict)]
    if conns:
        _conns(d).append(dict(draw(st.sampled_from(conns))))


@st.composite
def _m_wrong_domain(draw, d):
    """A physical block switches domain, or a physical link names another block's pin."""
    blocks = [b for b in _blocks(d) if _type_of(b) in OTHER_DOMAIN]
    links = [c for c in _conns(d) if isinstance(c, dict) and ("fromPin" in c or "toPin" in c)]
    if blocks and draw(st.booleans()):
        b = draw(st.sampled_from(blocks))
        b["type"] = OTHER_DOMAIN[b["type"]]
    elif links:
        c = draw(st.sampled_from(links))
        c[draw(st.sampled_from(["fromPin", "toPin"]))] = draw(st.sampled_from(ALL_PINS + ["nope"]))
    else:
        ids = _ids(d)
        _conns(d).append({"from": draw(st.sampled_from(ids)), "fromPin": draw(st.sampled_from(ALL_PINS)),
                          "to": draw(st.sampled_from(ids)), "toPin": draw(st.sampled_from(ALL_PINS))})


@st.composite
def _m_ratio(draw, d):
    """Huge (or just under the limit) duration/sampleTime ratios."""
    st_ = draw(st.sampled_from([1e-300, 5e-324, 1e-9, 1e-6, 1e-3, 0.1, 1.0, 1e300]))
    d["sampleTime"] = st_
    d["duration"] = draw(st.sampled_from([st_ * 1999, st_ * 2000, st_ * 2001, st_ * 1e12, 1e300, st_ / 2, st_,
                                          1.0]))


@st.composite
def _m_swap_type(draw, d):
    blocks = [b for b in _blocks(d) if isinstance(b, dict)]
    if blocks:
        draw(st.sampled_from(blocks))["type"] = draw(st.one_of(st.sampled_from(SUPPORTED), type_names()))


@st.composite
def _m_duplicate_block(draw, d):
    blocks = d.get("blocks")
    if isinstance(blocks, list) and blocks:
        blocks.append(copy.deepcopy(draw(st.sampled_from(blocks))))


@st.composite
def _m_remove_block(draw, d):
    blocks = d.get("blocks")
    if isinstance(blocks, list) and blocks:
        blocks.pop(draw(st.integers(0, len(blocks) - 1)))


@st.composite
def _m_shape(draw, d):
    """One-element arrays as bare objects, containers of the wrong type, shuffled order."""
    key = draw(st.sampled_from(["blocks", "connections", "variables", "params"]))
    if key == "params":
        blocks = [b for b in _blocks(d) if isinstance(b, dict)]
        if blocks:
            draw(st.sampled_from(blocks))["params"] = draw(st.sampled_from([[], None, [{}], "x", 1]))
        return
    value = d.get(key)
    if isinstance(value, list) and value:
        d[key] = draw(st.one_of(st.just(value[0]), st.permutations(value), st.just({"0": value[0]})))
    else:
        d[key] = draw(st.sampled_from([[], {}, None, "x", [[]]]))


MUTATIONS = [_m_replace, _m_numbers, _m_delete, _m_deep, _m_cycle, _m_dangling, _m_driven_twice, _m_wrong_domain,
             _m_ratio, _m_swap_type, _m_duplicate_block, _m_remove_block, _m_shape]


@st.composite
def mutate(draw, d, counts):
    """``d`` after a drawn number of MUTATIONS. Each works on a fresh deep copy: mutations
    change values in place, and values may be shared with strategy constants, manifest
    defaults or fixtures (changing those would make the strategies nondeterministic)."""
    for _ in range(draw(counts)):
        with deep_recursion():
            d = copy.deepcopy(d)
            draw(draw(st.sampled_from(MUTATIONS))(d))
    return d


@st.composite
def mutated_fixtures(draw):
    """A fixture diagram (shortened) with one to four mutations applied."""
    _, d = draw(st.sampled_from(FIXTURES))
    return draw(mutate(d, st.integers(1, 4)))


@st.composite
def mangled_texts(draw):
    """Text-level damage to a valid fixture: truncation, stray bytes, wrong encodings."""
    _, base = draw(st.sampled_from(FIXTURES))
    text = to_text(base).encode()
    how = draw(st.integers(0, 4))
    if how == 0:
        return text[: draw(st.integers(0, len(text)))]
    if how == 1:
        i = draw(st.integers(0, len(text)))
        return text[:i] + draw(st.binary(min_size=1, max_size=4)) + text[i:]
    if how == 2:
        return text.decode().encode("utf-16")
    if how == 3:
        return b"\xef\xbb\xbf" + text   # a byte-order mark
    return text + draw(st.sampled_from([b" ", b"\n", b"x", b"{}", b"\x00"]))
